%% Hostile WebSocket clients against the bounds of falco_ws_session and of
%% the HTTP/2 machine's tunnel budget: messages of a million one-byte or
%% empty fragments (what a list of fragments made cost about 100 bytes
%% each, +100-120 MB at the peak for 1 MB of payload), over HTTP/1.1 and
%% inside an RFC 8441 tunnel, and a tunnel flooded with tiny messages.
%% The server runs in a BEAM of its own (falco_test_listener:peer/3),
%% whose memory is sampled every 2 ms while the flood runs; the client is
%% this node, which builds its frames before the first sample.
-module(hostile_ws_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, init_per_suite/1, end_per_suite/1, init_per_group/2,
         end_per_group/2]).
-export([h1_one_byte_fragments/1, h1_empty_fragments/1, h1_fragment_bounds/1,
         h2_one_byte_fragments/1, h2_empty_fragments/1, h2_fragment_bound/1,
         h2_tunnel_budget/1,
         h3_one_byte_fragments/1, h3_empty_fragments/1, h3_one_byte_fragment_frames/1,
         h3_fragment_bounds/1, h3_tunnel_budget/1]).
%% run in the server's node
-export([upgrade/1, handle_in/2, sampler_start/0, sampler_stop/0]).

-define(WS, falco_test_ws_client).
-define(H2, falco_test_h2_client).
-define(MB, (1024 * 1024)).
%% a masked frame with the zero key: its payload goes as it is
-define(KEY, <<0:32>>).

all() ->
    [h1_one_byte_fragments, h1_empty_fragments, h1_fragment_bounds,
     h2_one_byte_fragments, h2_empty_fragments, h2_fragment_bound, h2_tunnel_budget,
     {group, h3}].

groups() ->
    [{h3, [], [h3_one_byte_fragments, h3_empty_fragments, h3_one_byte_fragment_frames,
               h3_fragment_bounds, h3_tunnel_budget]}].

init_per_suite(Config) ->
    ok = falco_test_listener:start_tls_app(),
    Config.

%% The HTTP/3 cases need the aioquic carrier (falco_test_ws_tunnel_h3).
init_per_group(h3, Config) ->
    falco_test_tools:require(falco_test_ws_tunnel_h3:tools(), Config).

end_per_group(_, _Config) ->
    ok.

end_per_suite(_Config) ->
    ok.

%% -- the server's side ---------------------------------------------------------------

%% /ws upgrades with the handler state and options in the path's query
%% (an Erlang term, so that one listener serves every case): the session
%% answers each message with its size, or (`quiet') not at all.
upgrade(Req) ->
    {State, Opts} = case falco_req:qs(Req) of
                        <<>> -> {answer, #{}};
                        Qs -> binary_to_term(base64:decode(uri_string:unquote(Qs)))
                    end,
    {websocket, ?MODULE, State, Opts}.

handle_in(_, quiet) ->
    {ok, quiet};
handle_in({_, Msg}, State) ->
    {reply, {text, integer_to_binary(byte_size(Msg))}, State}.

path(Opts) ->
    path(answer, Opts).

path(State, Opts) ->
    Q = uri_string:quote(base64:encode(term_to_binary({State, Opts}))),
    <<"/ws?", Q/binary>>.

%% The largest erlang:memory(total) of the node from now to sampler_stop/0.
sampler_start() ->
    Pid = spawn(fun() -> sample(erlang:memory(total)) end),
    register(hostile_ws_sampler, Pid),
    erlang:memory(total).

sampler_stop() ->
    Ref = make_ref(),
    hostile_ws_sampler ! {stop, self(), Ref},
    receive {Ref, Peak} -> Peak after 5000 -> error(no_sampler) end.

sample(Peak) ->
    receive
        {stop, From, Ref} -> From ! {Ref, max(Peak, erlang:memory(total))}
    after 2 ->
        sample(max(Peak, erlang:memory(total)))
    end.

%% A listener in a node of its own; `Fun(Peer, Port)', then the peer stops.
with_server(ListenerOpts, Fun) ->
    {Peer, Port} = falco_test_listener:peer(hostile_ws, fun ?MODULE:upgrade/1, ListenerOpts),
    try Fun(Peer, Port) after peer:stop(Peer) end.

%% `Fun()' with the server's memory sampled: its peak growth in bytes.
peak_growth(Peer, Fun) ->
    Base = peer:call(Peer, ?MODULE, sampler_start, []),
    Result = Fun(),
    Peak = peer:call(Peer, ?MODULE, sampler_stop, []),
    {Result, Peak - Base}.

%% One message of a first frame and `N' continuations of `Piece' (the
%% last one FIN), as masked frames, in blocks of about 64 KB.
fragments(Piece, N) ->
    One = iolist_to_binary(falco_ws_frame:encode_masked(continuation, Piece, nofin, false, ?KEY)),
    Block = binary:copy(One, 65536 div byte_size(One)),
    PerBlock = byte_size(Block) div byte_size(One),
    First = iolist_to_binary(falco_ws_frame:encode_masked(text, Piece, nofin, false, ?KEY)),
    Last = iolist_to_binary(falco_ws_frame:encode_masked(continuation, Piece, fin, false, ?KEY)),
    Full = (N - 1) div PerBlock,
    Rest = binary:copy(One, (N - 1) rem PerBlock),
    {[First | lists:duplicate(Full, Block)] ++ [Rest, Last], byte_size(Piece) * (N + 1)}.

%% -- over HTTP/1.1 ------------------------------------------------------------------

h1_flood(Piece, N, MaxMB) ->
    Opts = #{max_fragments => infinity, max_empty_fragments => infinity},
    with_server(#{}, fun(Peer, Port) ->
        {Blocks, Size} = fragments(Piece, N),
        {Sock, #{status := 101}} = ?WS:connect(Port, path(Opts)),
        {Reply, Growth} = peak_growth(Peer, fun() ->
            [ok = ?WS:send_raw(Sock, B) || B <- Blocks],
            ok = ?WS:send(Sock, ping, <<"after">>),
            R1 = ?WS:recv(Sock, 60000),
            R2 = ?WS:recv(Sock, 10000),
            {R1, R2}
        end),
        ct:log("~p fragments of ~p bytes over HTTP/1.1: peak +~.1f MB", [N + 1, byte_size(Piece),
                                                                      Growth / ?MB]),
        ?assertEqual({{text, integer_to_binary(Size)}, {pong, <<"after">>}}, Reply),
        ?assert(Growth < MaxMB * ?MB)
    end).

%% 1,000,000 one-byte fragments (1 MB of payload), then a ping: the
%% message comes whole, the ping is answered, the peak stays under 16 MB.
h1_one_byte_fragments(_Config) ->
    h1_flood(<<"a">>, 1000000, 16).

%% 1,000,000 empty fragments: nothing to hold, under 8 MB.
h1_empty_fragments(_Config) ->
    h1_flood(<<>>, 1000000, 8).

%% With the defaults, the same floods end at the bounds: 1009 past
%% 65,536 fragments, 1008 past 64 empty ones.
h1_fragment_bounds(_Config) ->
    with_server(#{}, fun(_Peer, Port) ->
        lists:foreach(fun({Piece, Code}) ->
                              {Blocks, _} = fragments(Piece, 1000000),
                              {Sock, #{status := 101}} = ?WS:connect(Port, <<"/ws">>),
                              [?WS:send_raw(Sock, B) || B <- Blocks],
                              ?assertMatch({_, {close, Code}}, ?WS:recv_until_close(Sock, 30000))
                      end, [{<<"a">>, 1009}, {<<>>, 1008}])
    end).

%% -- inside an RFC 8441 tunnel ----------------------------------------------------------

%% An h2c connection with a WebSocket open on stream 1 at `Path', and
%% the connection's and the stream's send windows.
tunnel(Port, Path) ->
    C0 = ?H2:connect(Port, #{}),
    Fields = [{<<":method">>, <<"CONNECT">>}, {<<":protocol">>, <<"websocket">>},
              {<<":scheme">>, <<"http">>}, {<<":path">>, Path},
              {<<":authority">>, <<"localhost">>}, {<<"sec-websocket-version">>, <<"13">>}],
    C1 = ?H2:headers_frame(C0, 1, Fields, nofin),
    Stream = maps:get(initial_window_size, maps:get(server_settings, C1), 65535),
    tunnel_open(C1, {65535, Stream}).

%% The connection and its windows once the 200 came: the window updates
%% the server sent before it (the connection window's growth) counted.
tunnel_open(C, {Conn, Stream}) ->
    case ?H2:recv_frame(C, 5000) of
        {ok, {fields, 1, nofin, Resp}, C1} ->
            ?assertEqual(<<"200">>, proplists:get_value(<<":status">>, Resp)),
            {C1, {Conn, Stream}};
        {ok, {window_update, 0, Inc}, C1} -> tunnel_open(C1, {Conn + Inc, Stream});
        {ok, {window_update, 1, Inc}, C1} -> tunnel_open(C1, {Conn, Stream + Inc});
        {ok, _, C1} -> tunnel_open(C1, {Conn, Stream})
    end.

%% Sends the WebSocket frames of `Plan' ([{Frame, Count}], each frame in
%% a DATA frame of its own) within the connection's and the stream's
%% windows, reading what the server sends while a window is shut. Stops
%% early when the server closes the session (a close frame), resets the
%% stream or ends the connection. Returns `{Status, C, Frames}': Status
%% `ok', `{goaway, Code, Debug}', `{reset, Code}' or `{error, Why}', and
%% the WebSocket frames received, in order.
send_each({C, Windows}, Plan) ->
    send_each(C, Plan, Windows, []).

send_each(C, [], _, Got) ->
    {ok, C, lists:reverse(Got)};
send_each(C, [{_, 0} | Plan], Windows, Got) ->
    send_each(C, Plan, Windows, Got);
send_each(C, [{One, N} | Plan], {Conn, Stream}, Got)
  when Conn >= byte_size(One), Stream >= byte_size(One) ->
    K = lists:min([N, min(Conn, Stream) div byte_size(One), 4096]),
    Frame = iolist_to_binary(falco_http2_frame:data(1, nofin, One)),
    C1 = ?H2:send_frame(C, binary:copy(Frame, K)),
    Used = K * byte_size(One),
    send_each(C1, [{One, N - K} | Plan], {Conn - Used, Stream - Used}, Got);
send_each(C, Plan, {Conn, Stream}, Got) ->
    case ?H2:until(C, fun(_) -> true end, 10000) of
        {ok, {window_update, 0, Inc}, C1} -> send_each(C1, Plan, {Conn + Inc, Stream}, Got);
        {ok, {window_update, 1, Inc}, C1} -> send_each(C1, Plan, {Conn, Stream + Inc}, Got);
        {ok, {goaway, _, Code, Debug}, C1} -> {{goaway, Code, Debug}, C1, lists:reverse(Got)};
        {ok, {rst_stream, 1, Code}, C1} -> {{reset, Code}, C1, lists:reverse(Got)};
        {ok, {data, 1, _, Bytes, _}, C1} ->
            case ws_frames(Bytes) of
                [{frame, close, _, _, _} | _] = Ws -> {ok, C1, lists:reverse(Got, Ws)};
                Ws -> send_each(C1, Plan, {Conn, Stream}, lists:reverse(Ws, Got))
            end;
        {ok, _, C1} -> send_each(C1, Plan, {Conn, Stream}, Got);
        {error, Why, C1} -> {{error, Why}, C1, lists:reverse(Got)}
    end.

ws_frames(<<>>) ->
    [];
ws_frames(Bytes) ->
    {ok, Frame, Rest} = falco_ws_frame:parse(Bytes, #{max_frame_size => infinity,
                                                      rsv1 => false, role => client}),
    [Frame | ws_frames(Rest)].

%% The tunnel's next WebSocket frames from the server.
tunnel_recv(C) ->
    case ?H2:until(C, fun({data, 1, _, _, _}) -> true; (_) -> false end, 60000) of
        {ok, {data, 1, _, Bytes, _}, _} -> ws_frames(Bytes);
        Other -> Other
    end.

mask(Op, Piece, Fin) ->
    iolist_to_binary(falco_ws_frame:encode_masked(Op, Piece, Fin, false, ?KEY)).

h2_flood(Piece, N, MaxMB) ->
    Opts = #{max_fragments => infinity, max_empty_fragments => infinity},
    %% the tunnel budget lifted: this case measures the session's memory
    Listener = #{protocols => [h2], h2_flood_limits => #{tunnel_data => 10000000}},
    with_server(Listener, fun(Peer, Port) ->
        C0 = tunnel(Port, path(Opts)),
        {Reply, Growth} = peak_growth(Peer, fun() ->
            Plan = [{mask(text, Piece, nofin), 1}, {mask(continuation, Piece, nofin), N - 1},
                    {mask(continuation, Piece, fin), 1}],
            {ok, C1, Got} = send_each(C0, Plan),
            case Got of
                [] -> tunnel_recv(C1);
                _ -> Got
            end
        end),
        ct:log("~p fragments of ~p bytes in an RFC 8441 tunnel: peak +~.1f MB",
               [N + 1, byte_size(Piece), Growth / ?MB]),
        ?assertEqual([{frame, text, fin, false, integer_to_binary(byte_size(Piece) * (N + 1))}],
                     Reply),
        ?assert(Growth < MaxMB * ?MB)
    end).

%% 300,000 one-byte fragments in the tunnel, each in a DATA frame: under
%% 16 MB at the peak.
h2_one_byte_fragments(_Config) ->
    h2_flood(<<"a">>, 300000, 16).

%% 500,000 empty fragments: under 8 MB.
h2_empty_fragments(_Config) ->
    h2_flood(<<>>, 500000, 8).

%% With the defaults, the session's fragment bound closes the tunnel's
%% session with 1009 (65,536 fragments come before the tunnel budget's
%% 100,000 frames).
h2_fragment_bound(_Config) ->
    with_server(#{protocols => [h2]}, fun(_Peer, Port) ->
        C0 = tunnel(Port, <<"/ws">>),
        Plan = [{mask(text, <<"a">>, nofin), 1}, {mask(continuation, <<"a">>, nofin), 70000},
                {mask(continuation, <<"a">>, fin), 1}],
        {Status, C1, Got} = case send_each(C0, Plan) of
                                {ok, C, []} -> {ok, C, tunnel_recv(C)};
                                Sent -> Sent
                            end,
        ct:log("70,002 fragments in a tunnel, defaults: ~p, ~p", [Status, Got]),
        _ = ?H2:close(C1),
        ?assertMatch([{frame, close, fin, false, <<1009:16, _/binary>>}], Got)
    end).

%% A tunnel flooded with tiny whole messages (each a one-byte binary
%% frame in a DATA frame of its own) meets the connection's `tunnel_data'
%% budget (100,000 per 10 s): GOAWAY ENHANCE_YOUR_CALM naming it. Before
%% the budget, nothing counted them.
h2_tunnel_budget(_Config) ->
    with_server(#{protocols => [h2]}, fun(_Peer, Port) ->
        C0 = tunnel(Port, path(quiet, #{})),
        One = mask(binary, <<"x">>, fin),
        {Result, _, Got} = send_each(C0, [{One, 150000}]),
        ct:log("150,000 one-byte messages in a tunnel: ~p", [Result]),
        ?assertEqual([], Got),
        ?assertMatch({goaway, enhance_your_calm, <<"flood: tunnel_data">>}, Result)
    end).

%% -- inside an RFC 9220 tunnel (HTTP/3) -----------------------------------------------

%% The floods of HTTP/1.1 inside an HTTP/3 tunnel opened by aioquic: the
%% frames in DATA frames of about 64 KB (`blocks'), or each WebSocket
%% frame in a DATA frame of its own (`each').
h3_flood(Piece, N, MaxMB, How) ->
    Opts = #{max_fragments => infinity, max_empty_fragments => infinity},
    %% the tunnel budget lifted: this case measures the session's memory
    Listener = maps:merge(?WS:listener_opts(h3), #{h2_flood_limits => #{tunnel_data => 10000000}}),
    with_server(Listener, fun(Peer, Port) ->
        {T, #{status := 200}} = ?WS:connect(h3, Port, path(Opts), []),
        Size = byte_size(Piece) * (N + 1),
        {Reply, Growth} = peak_growth(Peer, fun() ->
            ok = case How of
                     blocks ->
                         {Blocks, Size} = fragments(Piece, N),
                         lists:foreach(fun(B) -> ok = ?WS:send_raw(T, B) end, Blocks);
                     each ->
                         ok = ?WS:send_raw(T, mask(text, Piece, nofin)),
                         ok = falco_test_ws_tunnel_h3:send_each(
                                T, N - 1, mask(continuation, Piece, nofin)),
                         ?WS:send_raw(T, mask(continuation, Piece, fin))
                 end,
            ok = ?WS:send(T, ping, <<"after">>),
            R1 = ?WS:recv(T, 60000),
            R2 = ?WS:recv(T, 10000),
            {R1, R2}
        end),
        ct:log("~p fragments of ~p bytes in an RFC 9220 tunnel (~p): peak +~.1f MB",
               [N + 1, byte_size(Piece), How, Growth / ?MB]),
        ?WS:close(T),
        ?assertEqual({{text, integer_to_binary(Size)}, {pong, <<"after">>}}, Reply),
        ?assert(Growth < MaxMB * ?MB)
    end).

%% 1,000,000 one-byte fragments over HTTP/3: under 16 MB at the peak.
h3_one_byte_fragments(_Config) ->
    h3_flood(<<"a">>, 1000000, 16, blocks).

%% 1,000,000 empty fragments over HTTP/3: under 8 MB.
h3_empty_fragments(_Config) ->
    h3_flood(<<>>, 1000000, 8, blocks).

%% 300,000 one-byte fragments, each in an HTTP/3 DATA frame of its own:
%% under 16 MB.
h3_one_byte_fragment_frames(_Config) ->
    h3_flood(<<"a">>, 300000, 16, each).

%% With the defaults, the floods end at the session's bounds over HTTP/3
%% too: 1009 past 65,536 fragments, 1008 past 64 empty ones.
h3_fragment_bounds(_Config) ->
    with_server(?WS:listener_opts(h3), fun(_Peer, Port) ->
        lists:foreach(fun({Piece, Code}) ->
                              {Blocks, _} = fragments(Piece, 1000000),
                              {T, #{status := 200}} = ?WS:connect(h3, Port, <<"/ws">>, []),
                              send_until_closed(T, Blocks),
                              ?assertMatch({_, {close, Code}}, ?WS:recv_until_close(T, 30000)),
                              ?WS:close(T)
                      end, [{<<"a">>, 1009}, {<<>>, 1008}])
    end).

%% Blocks until one is refused (the session closed its stream).
send_until_closed(_, []) ->
    ok;
send_until_closed(T, [B | Rest]) ->
    case ?WS:send_raw(T, B) of
        ok -> send_until_closed(T, Rest);
        {error, _} -> ok
    end.

%% A tunnel flooded with tiny whole messages, each a one-byte binary frame
%% in an HTTP/3 DATA frame of its own, meets the connection's
%% `tunnel_data' budget (HTTP/2's: 100,000 per 10 s): CONNECTION_CLOSE
%% H3_EXCESSIVE_LOAD (0x107).
h3_tunnel_budget(_Config) ->
    with_server(?WS:listener_opts(h3), fun(_Peer, Port) ->
        {T, #{status := 200}} = ?WS:connect(h3, Port, path(quiet, #{}), []),
        Sent = falco_test_ws_tunnel_h3:send_each(T, 150000, mask(binary, <<"x">>, fin)),
        Closed = receive {tunnel_closed, T, Why} -> Why after 30000 -> timeout end,
        ct:log("150,000 one-byte messages in an RFC 9220 tunnel: ~p, ~p", [Sent, Closed]),
        ?WS:close(T),
        ?assertEqual({connection_closed, 16#107}, Closed)
    end).
