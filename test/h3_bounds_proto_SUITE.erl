%% The protocol bounds of falco's HTTP/3 (issue 43, point 7), each with a
%% test driven by the raw client's session API (falco_test_quic_client):
%% CRYPTO and out-of-order stream data beyond their buffers, streams past
%% MAX_STREAMS, rapid stream open-and-reset, an ACK of a packet never sent,
%% 10,000 tiny STREAM frames, a control-stream flood of unknown frames and a
%% QPACK insertion at capacity 0. Figures (the connection process's memory,
%% times) are printed with ct:pal.
-module(h3_bounds_proto_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1]).
-export([handle/1]).
-export([crypto_buffer/1, stream_buffer/1, stream_fragments/1, max_streams/1,
         rapid_reset/1, ack_of_unsent/1, tiny_frames_in_order/1, tiny_frames_reversed/1,
         control_flood/1, qpack_insert_capacity_0/1]).

-define(C, falco_test_quic_client).

-define(INTERNAL_ERROR, 16#01).
-define(FLOW_CONTROL_ERROR, 16#03).
-define(STREAM_LIMIT_ERROR, 16#04).
-define(PROTOCOL_VIOLATION, 16#0a).
-define(CRYPTO_BUFFER_EXCEEDED, 16#0d).
-define(H3_EXCESSIVE_LOAD, 16#107).
-define(QPACK_ENCODER_STREAM_ERROR, 16#201).

%% the small listener's limits
-define(SMALL_STREAMS, 4).
-define(SMALL_WINDOW, 4096).

all() ->
    [crypto_buffer, stream_buffer, stream_fragments, max_streams, rapid_reset, ack_of_unsent,
     tiny_frames_in_order, tiny_frames_reversed, control_flood, qpack_insert_capacity_0].

init_per_suite(Config) ->
    {ok, _} = application:ensure_all_started(falco),
    Base = #{ip => {127, 0, 0, 1}, port => 0, transport => tls,
             tls_opts => falco_test_tls:server_opts(), http3 => true, h3_idle_timeout => 3000,
             handler => fun ?MODULE:handle/1},
    {ok, _} = falco:start_listener(h3_bounds, Base),
    {ok, _} = falco:start_listener(h3_bounds_small,
                                   Base#{h3_max_streams_bidi => ?SMALL_STREAMS,
                                         h3_initial_max_stream_data => ?SMALL_WINDOW,
                                         h3_initial_max_data => 4 * ?SMALL_WINDOW}),
    {ok, Port} = falco:port(h3_bounds),
    {ok, Small} = falco:port(h3_bounds_small),
    [{port, Port}, {small, Small} | Config].

end_per_suite(_Config) ->
    ok = falco:stop_listener(h3_bounds),
    ok = falco:stop_listener(h3_bounds_small),
    ok.

handle(Req = #{path := <<"/echo">>}) ->
    {ok, Body, _} = falco_req:read_body(Req),
    {200, [], integer_to_binary(byte_size(Body))};
handle(#{path := Path}) ->
    {200, [], Path}.

%% -- helpers ----------------------------------------------------------------------

connect(Config, Key, Opts) ->
    {ok, S} = ?C:connect(?config(Key, Config), Opts),
    S.

closed(S, Timeout) ->
    Close = ?C:await_close(S, Timeout),
    ?C:close(S),
    ct:pal("server's close: ~p", [Close]),
    case Close of
        {closed, Code, _, _} -> Code;
        timeout -> timeout
    end.

fields(Method, Path) ->
    [{<<":method">>, Method}, {<<":scheme">>, <<"https">>},
     {<<":authority">>, <<"localhost">>}, {<<":path">>, Path}].

get_ok(S, Id, Path) ->
    ok = ?C:request(S, Id, fields(<<"GET">>, Path), <<>>, fin),
    {ok, #{responses := #{Id := R}}} =
        ?C:recv_until(S, fun(#{responses := Rs}) -> is_map_key(Id, Rs) end, 3000),
    ?assertMatch({ok, #{status := 200, body := Path}}, R).

v(N) -> falco_quic_varint:encode(N).

%% The falco_http3_conn processes, found by their initial call.
conns() ->
    [P || P <- processes(),
          {dictionary, D} <- [erlang:process_info(P, dictionary)],
          {'$initial_call', {falco_http3_conn, init, 3}} <- [lists:keyfind('$initial_call', 1, D)]].

%% The connection process of a session just opened (Before: conns() before).
conn_of(Before) ->
    [Pid] = conns() -- Before,
    Pid.

memory(Pid) ->
    case erlang:process_info(Pid, memory) of
        {memory, M} -> M;
        undefined -> 0
    end.

ms_since(T0) ->
    erlang:monotonic_time(millisecond) - T0.

%% -- the bounds ---------------------------------------------------------------------

%% RFC 9000 §7.5: CRYPTO data beyond what the server buffers (16 KB past
%% its read point, falco_quic_handshake) is CRYPTO_BUFFER_EXCEEDED; a piece
%% within it is held and the handshake goes on.
crypto_buffer(Config) ->
    Within = connect(Config, port, #{initial_frames => [falco_quic_frame:crypto(8000, <<1>>)]}),
    get_ok(Within, 0, <<"/within">>),
    ?C:close(Within),
    Beyond = ?C:connect(?config(port, Config),
                        #{initial_frames => [falco_quic_frame:crypto(100000, <<1>>)]}),
    ct:pal("CRYPTO at 8,000: held, GET fine; at 100,000: ~p", [Beyond]),
    ?assertMatch({error, {closed, {transport, ?CRYPTO_BUFFER_EXCEEDED}, 16#06, _}}, Beyond).

%% RFC 9000 §4.1: out-of-order stream data is held within the stream's
%% window (4 KB on the small listener); beyond it, FLOW_CONTROL_ERROR.
stream_buffer(Config) ->
    S = connect(Config, small, #{}),
    ok = ?C:send_frames(S, one_rtt, [falco_quic_frame:stream(0, ?SMALL_WINDOW - 1, nofin, <<1>>)]),
    timer:sleep(100),
    ?assertEqual(undefined, maps:get(close, ?C:view(S))),
    ok = ?C:send_frames(S, one_rtt, [falco_quic_frame:stream(4, ?SMALL_WINDOW, nofin, <<1>>)]),
    ?assertEqual({transport, ?FLOW_CONTROL_ERROR}, closed(S, 3000)),
    ct:pal("a byte at ~b (the window's last) held; one at ~b: FLOW_CONTROL_ERROR",
           [?SMALL_WINDOW - 1, ?SMALL_WINDOW]).

%% RFC 9000 §21.7: out-of-order pieces held beyond holes are bounded
%% (falco_quic_reasm's 256 per stream): 300 one-byte pieces with a hole
%% before each close the connection with INTERNAL_ERROR (too_fragmented),
%% the memory of the connection process bounded meanwhile.
stream_fragments(Config) ->
    Before = conns(),
    S = connect(Config, port, #{}),
    Conn = conn_of(Before),
    M0 = memory(Conn),
    Frames = [falco_quic_frame:stream(0, 2 * I + 1, nofin, <<I:8>>) || I <- lists:seq(0, 299)],
    ok = ?C:send_frames(S, one_rtt, lists:sublist(Frames, 250)),
    timer:sleep(100),
    M1 = memory(Conn),
    ?assertEqual(undefined, maps:get(close, ?C:view(S))),
    ok = ?C:send_frames(S, one_rtt, lists:nthtail(250, Frames)),
    ?assertEqual({transport, ?INTERNAL_ERROR}, closed(S, 3000)),
    ct:pal("connection process: ~b bytes idle, ~b with 250 pieces held; 300: INTERNAL_ERROR",
           [M0, M1]),
    ?assert(M1 - M0 < 1024 * 1024).

%% RFC 9000 §4.6: a stream past the MAX_STREAMS we gave (4 on the small
%% listener: ids 0..12) is STREAM_LIMIT_ERROR; streams that finish give
%% their credit back (MAX_STREAMS), so 12 requests in a row on one
%% connection all work.
max_streams(Config) ->
    S = connect(Config, small, #{}),
    T0 = erlang:monotonic_time(millisecond),
    [get_ok(S, 4 * I, <<"/n">>) || I <- lists:seq(0, 11)],
    #{max_streams := Granted} = ?C:view(S),
    ct:pal("12 requests with 4 streams allowed at a time: ~b ms, MAX_STREAMS ~p",
           [ms_since(T0), Granted]),
    ?C:close(S),
    S2 = connect(Config, small, #{}),
    ok = ?C:send_frames(S2, one_rtt, [falco_quic_frame:stream(4 * ?SMALL_STREAMS, 0, nofin, <<0>>)]),
    ?assertEqual({transport, ?STREAM_LIMIT_ERROR}, closed(S2, 3000)).

%% Rapid reset (CVE-2023-44487's class, study section 11): a client that
%% opens request streams and resets them at once, within MAX_STREAMS.
%% HTTP/2 closes with ENHANCE_YOUR_CALM past 500 client cancels per 10 s
%% (h2_flood_limits' rst_stream); a well-built HTTP/3 server closes with
%% H3_EXCESSIVE_LOAD past the same budget, as falco_http3_machine does
%% (max_resets, from h2_flood_limits): the 501st reset in the window ends
%% the connection, its memory bounded until then.
rapid_reset(Config) ->
    Before = conns(),
    S = connect(Config, port, #{}),
    Conn = conn_of(Before),
    M0 = memory(Conn),
    Headers = iolist_to_binary(falco_http3_frame:headers(
                                 falco_qpack:encode(fields(<<"GET">>, <<"/reset">>)))),
    T0 = erlang:monotonic_time(millisecond),
    {Sent, Close, Peak} = resets(S, Conn, Headers, 0, 1000, 100, M0),
    Ms = ms_since(T0),
    Answered = length([Id || {Id, reset_stream, _} <- ?C:stream_resets(S)]),
    ct:pal("~b streams opened and reset in ~b ms (~b reset back by the server); close: ~p; "
           "connection process ~b bytes before, ~b at most during",
           [Sent, Ms, Answered, Close, M0, Peak]),
    ?assert(Peak < 4 * 1024 * 1024),
    ?assertMatch({closed, {application, ?H3_EXCESSIVE_LOAD}, _, _}, Close),
    %% past 500, and not long after (streams on their way when it closed)
    ?assert(Sent > 500 andalso Sent =< 700),
    ?C:close(S).

%% Open and reset streams up to the server's MAX_STREAMS, wait for more
%% credit, until N or a close.
resets(S, _Conn, _Headers, I, N, _Limit, Peak) when I >= N ->
    {I, maps:get(close, ?C:view(S)), Peak};
resets(S, Conn, Headers, I, N, Limit, Peak) ->
    Batch = lists:seq(I, min(N, Limit) - 1),
    Frames = lists:append([[falco_quic_frame:stream(4 * K, 0, nofin, Headers),
                            falco_quic_frame:reset_stream(4 * K, 16#10c, byte_size(Headers))]
                           || K <- Batch]),
    ok = ?C:send_frames(S, one_rtt, Frames),
    Next = I + length(Batch),
    Peak1 = max(Peak, memory(Conn)),
    case ?C:recv_until(S, fun(#{close := C, max_streams := M}) ->
                                  C =/= undefined orelse maps:get(bidi, M, 0) > Next
                          end, 3000) of
        {ok, #{close := undefined, max_streams := #{bidi := More}}} when Next < N ->
            resets(S, Conn, Headers, Next, N, More, Peak1);
        {ok, #{close := Close}} ->
            {Next, Close, Peak1};
        timeout ->
            {Next, maps:get(close, ?C:view(S)), Peak1}
    end.

%% RFC 9000 §13.1: an ACK of a packet never sent is PROTOCOL_VIOLATION.
ack_of_unsent(Config) ->
    S = connect(Config, port, #{}),
    ok = ?C:send_frames(S, one_rtt, [falco_quic_frame:ack(0, [{0, 100000}], undefined)]),
    ?assertEqual({transport, ?PROTOCOL_VIOLATION}, closed(S, 3000)).

%% 10,000 STREAM frames of one byte each, in order: a 10,000-byte body the
%% handler reads whole; the connection process's memory stays bounded.
tiny_frames_in_order(Config) ->
    tiny_frames(Config, in_order).

%% The same frames last first: every piece but the first held out of
%% order; falco_quic_reasm's bound (256 pieces) closes the connection with
%% INTERNAL_ERROR, cleanly, its memory bounded.
tiny_frames_reversed(Config) ->
    tiny_frames(Config, reversed).

tiny_frames(Config, Order) ->
    N = 10000,
    Before = conns(),
    S = connect(Config, port, #{}),
    Conn = conn_of(Before),
    M0 = memory(Conn),
    Head = iolist_to_binary([falco_http3_frame:headers(
                               falco_qpack:encode(fields(<<"POST">>, <<"/echo">>))),
                             v(0), v(N)]),
    HL = byte_size(Head),
    Body = [falco_quic_frame:stream(0, HL + I, case I of 9999 -> fin; _ -> nofin end,
                                    <<($a + I rem 26)>>) || I <- lists:seq(0, N - 1)],
    Frames = case Order of
                 in_order -> Body;
                 reversed -> lists:reverse(Body)
             end,
    T0 = erlang:monotonic_time(millisecond),
    ok = ?C:send_frames(S, one_rtt, [falco_quic_frame:stream(0, 0, nofin, Head)]),
    Peak = send_chunks(S, Conn, Frames, 500, M0),
    Result = ?C:recv_until(S, fun(#{responses := R, close := C}) ->
                                      is_map_key(0, R) orelse C =/= undefined
                              end, 5000),
    Ms = ms_since(T0),
    Peak1 = max(Peak, memory(Conn)),
    Outcome = case Result of
                  {ok, #{close := undefined, responses := #{0 := {ok, #{status := St, body := B}}}}} ->
                      {response, St, B};
                  {ok, #{close := Close}} -> Close;
                  timeout -> timeout
              end,
    ct:pal("~p: ~b one-byte STREAM frames in ~b ms; connection process ~b bytes before, "
           "~b at most; outcome ~p", [Order, N, Ms, M0, Peak1, Outcome]),
    ?assert(Peak1 < 4 * 1024 * 1024),
    case Order of
        in_order ->
            ?assertMatch({ok, #{responses := #{0 := {ok, #{status := 200, body := <<"10000">>}}}}},
                         Result),
            get_ok(S, 4, <<"/after">>);
        reversed ->
            %% survives (a response) or closes cleanly (INTERNAL_ERROR)
            case Result of
                {ok, #{close := undefined, responses := #{0 := {ok, #{status := 200}}}}} -> ok;
                {ok, #{close := {closed, {transport, ?INTERNAL_ERROR}, _, _}}} -> ok
            end
    end,
    ?C:close(S).

%% Frames in chunks, sampling the connection's memory after each.
send_chunks(_S, _Conn, [], _Size, Peak) ->
    Peak;
send_chunks(S, Conn, Frames, Size, Peak) ->
    {Chunk, Rest} = lists:split(min(Size, length(Frames)), Frames),
    ok = ?C:send_frames(S, one_rtt, Chunk),
    timer:sleep(2),
    send_chunks(S, Conn, Rest, Size, max(Peak, memory(Conn))).

%% RFC 9114 §7.2.8, §9, falco_http3_machine's max_ignored_frames (1000,
%% plus 16 per request stream opened): 1000 unknown frames on the control
%% stream are skipped, the 1001st is H3_EXCESSIVE_LOAD.
control_flood(Config) ->
    Before = conns(),
    S = connect(Config, port, #{control => false}),
    Conn = conn_of(Before),
    M0 = memory(Conn),
    Unknown = [v(falco_http3_frame:reserved(7)), v(0)],
    Control = [falco_http3_frame:stream_header(control), falco_http3_frame:settings(#{})],
    T0 = erlang:monotonic_time(millisecond),
    ok = ?C:send_stream(S, 2, [Control | [Unknown || _ <- lists:seq(1, 1000)]], nofin),
    timer:sleep(200),
    M1 = memory(Conn),
    ?assertEqual(undefined, maps:get(close, ?C:view(S))),
    ok = ?C:send_stream(S, 2, Unknown, nofin),
    ?assertEqual({application, ?H3_EXCESSIVE_LOAD}, closed(S, 3000)),
    ct:pal("1000 unknown control frames skipped (~b ms; connection process ~b bytes before, "
           "~b after), the 1001st: H3_EXCESSIVE_LOAD", [ms_since(T0), M0, M1]).

%% RFC 9204 §3.2.3, §4.3: at dynamic table capacity 0, any insertion on
%% the encoder stream is QPACK_ENCODER_STREAM_ERROR (Insert with Literal
%% Name, 0b01: name "abc", value "xyz").
qpack_insert_capacity_0(Config) ->
    S = connect(Config, port, #{}),
    ok = ?C:send_stream(S, 6, <<16#02, 16#43, "abc", 3, "xyz">>, nofin),
    ?assertEqual({application, ?QPACK_ENCODER_STREAM_ERROR}, closed(S, 3000)).
