%% Hostile clients and handlers on the HTTP/2 send side (issue 13, point
%% 6), with raw frames (falco_test_h2_client) and the numbers asserted as
%% bounds: window dribbling (a byte of window per stream now and then, to
%% hold streams and their handlers), a reader slower than h2_send_min_rate,
%% response bytes queued in the connection for a client that does not
%% read, a streamed reply that breaks its declared content-length (over
%% HTTP/1.1 too: the rule is the pipeline's), and `:authority' against
%% Host after normalisation (RFC 9113 §8.3.1).
-module(hostile_h2_send_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, init_per_suite/1, end_per_suite/1,
         init_per_testcase/2, end_per_testcase/2]).
-export([window_dribble_reset/1, row_dribble_reset/1, slow_reader_reset/1,
         small_window_client_completes/1,
         queued_bytes_bounded/1, streamed_length_short_reset/1,
         streamed_length_long_refused/1, streamed_length_http1/1,
         authority_host_normalised/1]).

-define(C, falco_test_h2_client).
%% the name the test process takes to hear from the handlers
-define(TESTER, hostile_h2_send_test).
-define(PIECE, 65536).

all() ->
    [{group, send}].

groups() ->
    [{send, [], [window_dribble_reset, row_dribble_reset, slow_reader_reset,
                 small_window_client_completes,
                 queued_bytes_bounded, streamed_length_short_reset,
                 streamed_length_long_refused, streamed_length_http1,
                 authority_host_normalised]}].

init_per_suite(Config) ->
    ok = falco_test_listener:start_app(),
    Config.

end_per_suite(_Config) ->
    ok.

init_per_testcase(Case, Config) ->
    ok = falco_test_listener:ensure_stopped(Case),
    true = register(?TESTER, self()),
    Config.

end_per_testcase(Case, _Config) ->
    ok = falco_test_listener:ensure_stopped(Case),
    catch unregister(?TESTER),
    ok.

%% A listener named after the case, h2c only unless Opts say otherwise.
listener(Case, Opts) ->
    falco_test_listener:start(Case, fun handle/1, maps:merge(#{protocols => [h2]}, Opts)).

tell(Msg) ->
    case whereis(?TESTER) of
        undefined -> ok;
        Pid -> Pid ! Msg, ok
    end.

%% -- the handler ------------------------------------------------------------------

handle(Req) ->
    route(falco_req:path(Req), Req).

%% 1 MB in 64 KB sends; the first send that fails is reported.
route(<<"/megabyte">>, _Req) ->
    {stream, 200, [],
     fun(Send) ->
             tell({result, self(), send_all(Send, 16)})
     end};
%% Up to 1000 rows of 100 bytes, one Send each.
route(<<"/rows">>, _Req) ->
    {stream, 200, [],
     fun(Send) ->
             tell({result, self(), rows(Send, 1000)})
     end};
%% A 1 MB full reply made of small binaries (copied with every message).
route(<<"/full">>, _Req) ->
    Body = lists:duplicate(16384, <<"0123456789abcdef0123456789abcdef"
                                    "0123456789abcdef0123456789abcdef">>),
    tell({replying, self()}),
    {200, [], Body};
route(<<"/short">>, _Req) ->
    {stream, 200, [{<<"content-length">>, <<"10">>}],
     fun(Send) -> tell({result, self(), Send(<<"01234">>)}) end};
route(<<"/long">>, _Req) ->
    {stream, 200, [{<<"content-length">>, <<"5">>}],
     fun(Send) ->
             ok = Send(<<"012">>),
             tell({result, self(), Send(<<"3456789">>)}),
             %% a handler that ignores the error and ends normally
             ok
     end};
route(<<"/host">>, Req) ->
    {200, [], term_to_binary({falco_req:host(Req), falco_req:port(Req)})}.

send_all(_Send, 0) ->
    ok;
send_all(Send, N) ->
    case Send(binary:copy(<<N>>, ?PIECE)) of
        ok -> send_all(Send, N - 1);
        Error -> Error
    end.

rows(_Send, 0) ->
    ok;
rows(Send, N) ->
    case Send(binary:copy(<<"r">>, 100)) of
        ok -> rows(Send, N - 1);
        Error -> Error
    end.

%% -- window dribbling ---------------------------------------------------------------

%% Issue 13: a client that gives 1 byte of window per stream now and then
%% used to hold 100 streams and their handlers for good (every byte went
%% out as a 1-byte DATA frame and restarted the stall timer). Now no DATA
%% frame is cut under 16 KB because the window is short, the stall timer is
%% not restarted by progress, and every stream is reset (CANCEL) one or
%% two send_timeouts after it blocks, its handler's send returning
%% {error, send_timeout}; the connection still serves.
window_dribble_reset(_Config) ->
    {_, Port} = listener(window_dribble_reset, #{send_timeout => 1000}),
    C0 = ?C:connect(Port, #{auto_window => false}),
    %% the connection window is never the limit: the stream windows are
    C1 = ?C:send_frame(C0, falco_http2_frame:window_update(0, 100000000)),
    {Ids, C2} = lists:foldl(fun(_, {Acc, C}) ->
                                    {Id, C3} = ?C:request(C, <<"GET">>, <<"/megabyte">>),
                                    {[Id | Acc], C3}
                            end, {[], C1}, lists:seq(1, 100)),
    Start = erlang:monotonic_time(millisecond),
    {Resets, Sizes, C4} = dribble(C2, Ids, #{}, [], Start + 6000, Start),
    Elapsed = erlang:monotonic_time(millisecond) - Start,
    ct:pal("~b streams reset in ~b ms; ~b DATA frames, smallest ~p bytes",
           [map_size(Resets), Elapsed, length(Sizes), lists:min([infinity | Sizes])]),
    ?assertEqual(100, map_size(Resets)),
    ?assertEqual([cancel], lists:usort(maps:values(Resets))),
    %% within two send_timeouts of blocking (the first byte of dribble can
    %% complete a 16 KB frame, which counts as progress), with a margin
    ?assert(Elapsed < 5000),
    ?assertEqual([], [S || S <- Sizes, S < 16384]),
    Results = [receive {result, _, R} -> R after 5000 -> no_result end || _ <- Ids],
    ?assertEqual([{error, send_timeout}], lists:usort(Results)),
    {Id, C5} = ?C:request(C4, <<"GET">>, <<"/host">>),
    C6 = ?C:send_frame(C5, falco_http2_frame:window_update(Id, 1000000)),
    {ok, #{status := 200}, _} = ?C:response(C6, Id).

%% Reads frames until every stream is reset or Deadline, giving each live
%% stream 1 byte of window every 100 ms.
dribble(C, Ids, Resets, Sizes, Deadline, _Next) when map_size(Resets) =:= length(Ids) ->
    _ = Deadline,
    {Resets, Sizes, C};
dribble(C0, Ids, Resets, Sizes, Deadline, Next) ->
    Now = erlang:monotonic_time(millisecond),
    if
        Now >= Deadline ->
            {Resets, Sizes, C0};
        Now >= Next ->
            ok = ?C:send(C0, [falco_http2_frame:window_update(Id, 1)
                              || Id <- Ids, not is_map_key(Id, Resets)]),
            dribble(C0, Ids, Resets, Sizes, Deadline, Now + 100);
        true ->
            case ?C:recv_frame(C0, min(Next, Deadline) - Now) of
                {ok, {data, _, _, Data, _}, C} ->
                    dribble(C, Ids, Resets, [byte_size(Data) | Sizes], Deadline, Next);
                {ok, {rst_stream, Id, Code}, C} ->
                    dribble(C, Ids, Resets#{Id => Code}, Sizes, Deadline, Next);
                {ok, _, C} ->
                    dribble(C, Ids, Resets, Sizes, Deadline, Next);
                {error, timeout, C} ->
                    dribble(C, Ids, Resets, Sizes, Deadline, Next)
            end
    end.

%% The same with a handler that sends 100-byte rows: the client lets one
%% row through every 300 ms (333 B/s, under the default h2_send_min_rate of
%% 512), so the stream's queue empties for a moment before the handler
%% queues the next row. The stall timer runs on through those moments (a
%% drained queue used to cancel it, and every row restarted the clock), so
%% the stream is reset about one send_timeout after it first blocks.
row_dribble_reset(_Config) ->
    {_, Port} = listener(row_dribble_reset, #{send_timeout => 1000}),
    C0 = ?C:connect(Port, #{auto_window => false, settings => #{initial_window_size => 0}}),
    C1 = ?C:send_frame(C0, falco_http2_frame:window_update(0, 100000000)),
    {Id, C2} = ?C:request(C1, <<"GET">>, <<"/rows">>),
    Start = erlang:monotonic_time(millisecond),
    {Resets, Sizes, _} = paced_read(C2, Id, {100, 300}, Start + 300, Start + 6000, []),
    Elapsed = erlang:monotonic_time(millisecond) - Start,
    ct:pal("reset ~p after ~b ms, ~b rows received", [Resets, Elapsed, length(Sizes)]),
    ?assertEqual(#{Id => cancel}, Resets),
    ?assert(Elapsed < 4000),
    receive {result, _, R} -> ?assertEqual({error, send_timeout}, R)
    after 5000 -> ct:fail(no_result)
    end.

%% A reader that gives 16 KB of window every 400 ms (40 KB/s) is slower
%% than this listener's h2_send_min_rate of 100 KB/s: its stream is reset
%% within a few send_timeouts, though it always makes progress (which used
%% to restart the stall timer for ever).
slow_reader_reset(_Config) ->
    {_, Port} = listener(slow_reader_reset, #{send_timeout => 1000,
                                              h2_send_min_rate => 100000}),
    C0 = ?C:connect(Port, #{auto_window => false}),
    C1 = ?C:send_frame(C0, falco_http2_frame:window_update(0, 100000000)),
    {Id, C2} = ?C:request(C1, <<"GET">>, <<"/megabyte">>),
    Start = erlang:monotonic_time(millisecond),
    {Resets, Sizes, _} = paced_read(C2, Id, {16384, 400}, Start + 400, Start + 6000, []),
    Elapsed = erlang:monotonic_time(millisecond) - Start,
    Got = lists:sum(Sizes),
    ct:pal("reset ~p after ~b ms, ~b bytes received", [Resets, Elapsed, Got]),
    ?assertEqual(#{Id => cancel}, Resets),
    ?assert(Elapsed < 4000),
    ?assert(Got < 1048576),
    receive {result, _, R} -> ?assertEqual({error, send_timeout}, R)
    after 5000 -> ct:fail(no_result)
    end.

%% Reads stream Id until it is reset or Deadline, giving it Inc bytes of
%% window every Every ms: {Resets, DataFrameSizes, C}.
paced_read(C0, Id, Pace = {Inc, Every}, Next, Deadline, Sizes) ->
    Now = erlang:monotonic_time(millisecond),
    if
        Now >= Deadline ->
            {#{}, Sizes, C0};
        Now >= Next ->
            C = ?C:send_frame(C0, falco_http2_frame:window_update(Id, Inc)),
            paced_read(C, Id, Pace, Now + Every, Deadline, Sizes);
        true ->
            case ?C:recv_frame(C0, Next - Now) of
                {ok, {data, Id, _, Data, _}, C} ->
                    paced_read(C, Id, Pace, Next, Deadline, [byte_size(Data) | Sizes]);
                {ok, {rst_stream, Id, Code}, C} ->
                    {#{Id => Code}, Sizes, C};
                {ok, _, C} ->
                    paced_read(C, Id, Pace, Next, Deadline, Sizes);
                {error, timeout, C} ->
                    paced_read(C, Id, Pace, Next, Deadline, Sizes)
            end
    end.

%% The minimum send size never starves a client whose own window is
%% small: with SETTINGS_INITIAL_WINDOW_SIZE 5000 the whole megabyte
%% arrives, in frames of at least half that window but for the last.
small_window_client_completes(_Config) ->
    {_, Port} = listener(small_window_client_completes, #{send_timeout => 2000}),
    C0 = ?C:connect(Port, #{settings => #{initial_window_size => 5000}}),
    {Id, C1} = ?C:request(C0, <<"GET">>, <<"/megabyte">>),
    {ok, #{status := 200, body := Body, frames := Frames}, _} = ?C:response(C1, Id, 20000),
    ?assertEqual(16 * ?PIECE, byte_size(Body)),
    ?assert(Frames =< 16 * ?PIECE div 2500 + 1),
    receive {result, _, R} -> ?assertEqual(ok, R)
    after 5000 -> ct:fail(no_result)
    end.

%% -- queued bytes ---------------------------------------------------------------------

%% 20 streams whose handlers answer 1 MB (in 64-byte binaries) to a client
%% whose windows are shut: the connection used to hold every body whole
%% (about 1.7 MB of heap per stream); now each stream queues at most
%% h2_send_buffer (64 KB) in it and the handler waits, so the connection
%% process stays small. The bodies still all arrive once the client reads.
queued_bytes_bounded(_Config) ->
    {Sup, Port} = listener(queued_bytes_bounded, #{}),
    C0 = ?C:connect(Port, #{settings => #{initial_window_size => 0}}),
    Conn = falco_test_tree:one_conn(Sup),
    {Ids, C1} = lists:foldl(fun(_, {Acc, C}) ->
                                    {Id, C2} = ?C:request(C, <<"GET">>, <<"/full">>),
                                    {[Id | Acc], C2}
                            end, {[], C0}, lists:seq(1, 20)),
    [receive {replying, _} -> ok after 5000 -> ct:fail(no_reply) end || _ <- Ids],
    %% time for the replies to reach the connection
    ok = falco_test_client:wait_until(
           fun() ->
                   #{send_queued := Q} = sys:get_state(Conn),
                   Q =:= 20 * ?PIECE
           end, 5000),
    _ = erlang:garbage_collect(Conn),
    {memory, Mem} = erlang:process_info(Conn, memory),
    #{send_queued := Queued} = sys:get_state(Conn),
    ct:pal("connection process: ~b bytes, ~b response bytes queued", [Mem, Queued]),
    ?assert(Mem < 4 * 1024 * 1024),
    %% the client opens its windows: every body arrives whole
    C2 = ?C:send_frame(C1, [falco_http2_frame:settings(#{initial_window_size => 1048576}),
                            falco_http2_frame:window_update(0, 100000000)]),
    lists:foldl(fun(Id, C) ->
                        {ok, #{status := 200, body := Body}, C3} = ?C:response(C, Id, 20000),
                        ?assertEqual(1048576, byte_size(Body)),
                        C3
                end, C2, lists:reverse(Ids)).

%% -- declared content-length ---------------------------------------------------------

%% RFC 9113 §8.1.1: a streamed reply that ends short of its declared
%% content-length is malformed; the client must not take it for whole:
%% the stream is reset with INTERNAL_ERROR after the bytes sent.
streamed_length_short_reset(_Config) ->
    {_, Port} = listener(streamed_length_short_reset, #{}),
    C0 = ?C:connect(Port, #{}),
    {Id, C1} = ?C:request(C0, <<"GET">>, <<"/short">>),
    ?assertMatch({error, {reset, internal_error}, _}, ?C:response(C1, Id)),
    receive {result, _, R} -> ?assertEqual(ok, R)
    after 5000 -> ct:fail(no_result)
    end.

%% Sending more than declared is refused: the send returns an error,
%% nothing beyond the length goes out, and the stream is reset.
streamed_length_long_refused(_Config) ->
    {_, Port} = listener(streamed_length_long_refused, #{}),
    C0 = ?C:connect(Port, #{}),
    {Id, C1} = ?C:request(C0, <<"GET">>, <<"/long">>),
    {Data, Reset, _} = stream_frames(C1, Id, []),
    ?assertEqual(<<"012">>, Data),
    ?assertEqual(internal_error, Reset),
    receive {result, _, R} -> ?assertEqual({error, content_length_exceeded}, R)
    after 5000 -> ct:fail(no_result)
    end.

%% The rule is the pipeline's, so HTTP/1.1 keeps it too: a short body is
%% cut by closing the connection (it used to stay open, the client waiting
%% for the rest), and bytes beyond the length never go out (they used to,
%% where a keep-alive client would read them as the next response).
streamed_length_http1(_Config) ->
    {_, Port} = listener(streamed_length_http1, #{protocols => [http1]}),
    [begin
         {ok, S} = gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {active, false}]),
         ok = gen_tcp:send(S, ["GET ", Path, " HTTP/1.1\r\nHost: a\r\n\r\n"]),
         {Bytes, End} = recv_all(S, <<>>),
         [_Head, Body] = binary:split(Bytes, <<"\r\n\r\n">>),
         ?assertEqual({Expected, closed}, {Body, End}),
         _ = gen_tcp:close(S),
         receive {result, _, _} -> ok after 5000 -> ct:fail(no_result) end
     end || {Path, Expected} <- [{"/short", <<"01234">>}, {"/long", <<"012">>}]].

recv_all(S, Acc) ->
    case gen_tcp:recv(S, 0, 2000) of
        {ok, Data} -> recv_all(S, <<Acc/binary, Data/binary>>);
        {error, Why} -> {Acc, Why}
    end.

%% The DATA of stream Id until its end: {Bytes, ResetCode | fin, C}.
stream_frames(C0, Id, Acc) ->
    case ?C:recv_frame(C0, 5000) of
        {ok, {data, Id, fin, Data, _}, C} ->
            {iolist_to_binary(lists:reverse(Acc, [Data])), fin, C};
        {ok, {data, Id, nofin, Data, _}, C} ->
            stream_frames(C, Id, [Data | Acc]);
        {ok, {rst_stream, Id, Code}, C} ->
            {iolist_to_binary(lists:reverse(Acc)), Code, C};
        {ok, _, C} ->
            stream_frames(C, Id, Acc)
    end.

%% -- :authority and Host -------------------------------------------------------------

%% RFC 9113 §8.3.1, RFC 9110 §4.2.3: `:authority' and Host are compared
%% after normalisation (the host is case-insensitive, a missing port is
%% the scheme's default); they used to be compared byte for byte, which
%% reset these streams with PROTOCOL_ERROR. A real difference still does.
authority_host_normalised(_Config) ->
    {_, Port} = listener(authority_host_normalised, #{}),
    C0 = ?C:connect(Port, #{}),
    Same = [{<<"Example.COM">>, <<"example.com">>},
            {<<"example.com:80">>, <<"EXAMPLE.com">>},
            {<<"example.com">>, <<"example.com:80">>},
            {<<"[::1]:8080">>, <<"[::1]:8080">>}],
    C1 = lists:foldl(
           fun({A, H}, C) ->
                   {Id, C2} = ?C:request(C, <<"GET">>, <<"/host">>,
                                         [{<<":authority">>, A}, {<<"host">>, H}], <<>>),
                   {ok, #{status := 200, body := B}, C3} = ?C:response(C2, Id),
                   {ok, Expected, Port0} = falco_grammar:authority(A),
                   ?assertEqual({Expected, Port0}, binary_to_term(B)),
                   C3
           end, C0, Same),
    Different = [{<<"example.com">>, <<"example.org">>},
                 {<<"example.com:8080">>, <<"example.com">>},
                 {<<"example.com:443">>, <<"example.com">>}],
    lists:foldl(fun({A, H}, C) ->
                        {Id, C2} = ?C:request(C, <<"GET">>, <<"/host">>,
                                              [{<<":authority">>, A}, {<<"host">>, H}], <<>>),
                        {error, {reset, protocol_error}, C3} = ?C:response(C2, Id),
                        C3
                end, C1, Different).
