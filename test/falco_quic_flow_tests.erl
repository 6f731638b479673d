%% EUnit tests for falco_quic_flow and falco_quic_stream_limit: RFC 9000
%% §4's errors (FLOW_CONTROL_ERROR, FINAL_SIZE_ERROR, STREAM_LIMIT_ERROR),
%% credit granted per half window and per closed stream, blocked signals.
-module(falco_quic_flow_tests).
-include_lib("eunit/include/eunit.hrl").

-define(F, falco_quic_flow).
-define(S, falco_quic_stream_limit).

%% §4.1: past the stream's limit, or the connection's
flow_control_error_test() ->
    C = ?F:new_conn(1000, 0),
    S = ?F:new_stream(600, 0),
    ?assertMatch({ok, _, _}, ?F:recv(0, 600, nofin, S, C)),
    ?assertEqual({error, flow_control_error}, ?F:recv(0, 601, nofin, S, C)),
    ?assertEqual({error, flow_control_error}, ?F:recv(600, 1, nofin, S, C)),
    %% two streams of 600 pass each stream's limit but not the connection's
    {ok, S1, C1} = ?F:recv(0, 600, nofin, S, C),
    ?assertEqual({error, flow_control_error}, ?F:recv(0, 401, nofin, ?F:new_stream(600, 0), C1)),
    {ok, _, C2} = ?F:recv(0, 400, nofin, ?F:new_stream(600, 0), C1),
    ?assertEqual(1000, ?F:received(C2)),
    %% repeated or old data counts once
    {ok, S1, C1} = ?F:recv(100, 300, nofin, S1, C1),
    ?assertEqual(600, ?F:received(S1)).

%% §4.5: the final size
final_size_test() ->
    C = ?F:new_conn(10000, 0),
    S = ?F:new_stream(10000, 0),
    {ok, S1, C1} = ?F:recv(0, 100, fin, S, C),
    ?assertEqual(100, ?F:final_size(S1)),
    %% the same final size again is fine; data within it too
    ?assertMatch({ok, _, _}, ?F:recv(50, 50, fin, S1, C1)),
    ?assertMatch({ok, _, _}, ?F:recv(10, 20, nofin, S1, C1)),
    %% a changed final size, or data past it
    ?assertEqual({error, final_size_error}, ?F:recv(0, 101, fin, S1, C1)),
    ?assertEqual({error, final_size_error}, ?F:recv(0, 99, fin, S1, C1)),
    ?assertEqual({error, final_size_error}, ?F:recv(100, 1, nofin, S1, C1)),
    %% a FIN below data already received
    {ok, S2, C2} = ?F:recv(0, 200, nofin, S, C),
    ?assertEqual({error, final_size_error}, ?F:recv(0, 150, fin, S2, C2)),
    ?assertMatch({ok, _, _}, ?F:recv(200, 0, fin, S2, C2)).

%% §4.5, §3.2: RESET_STREAM's final size
reset_test() ->
    C = ?F:new_conn(1000, 0),
    {ok, S1, C1} = ?F:recv(0, 100, nofin, ?F:new_stream(500, 0), C),
    ?assertEqual({error, final_size_error}, ?F:reset(99, S1, C1)),
    ?assertEqual({error, flow_control_error}, ?F:reset(501, S1, C1)),
    {ok, S2, C2} = ?F:reset(300, S1, C1),
    %% counted toward the connection, and given back as never to be read
    ?assertEqual(300, ?F:received(C2)),
    ?assertEqual(300, ?F:final_size(S2)),
    ?assertEqual({error, final_size_error}, ?F:reset(301, S2, C2)),
    ?assertEqual({error, final_size_error}, ?F:recv(300, 1, nofin, S2, C2)),
    {ok, _, C3} = ?F:reset(300, S2, C2),
    ?assertEqual(300, ?F:received(C3)),
    %% 300 of the 1000 used and consumed: more than half left, no MAX_DATA;
    %% the bytes were given back, so one more reset of 300 triggers it
    ?assertEqual(none, ?F:max_data(C3)),
    {ok, _, C4} = ?F:reset(300, ?F:new_stream(500, 0), C3),
    ?assertMatch({1600, _}, ?F:max_data(C4)).

%% §4.2: credit per half window as the data is consumed
grant_test() ->
    C = ?F:new_conn(1000, 0),
    {ok, S1, C1} = ?F:recv(0, 500, nofin, ?F:new_stream(2000, 0), C),
    %% received is not consumed: nothing yet
    ?assertEqual(none, ?F:max_data(C1)),
    {S2, C2} = ?F:consumed(499, S1, C1),
    ?assertEqual(none, ?F:max_data(C2)),
    {_, C3} = ?F:consumed(1, S2, C2),
    {1500, C4} = ?F:max_data(C3),
    ?assertEqual(1500, ?F:recv_max(C4)),
    ?assertEqual(none, ?F:max_data(C4)),
    %% a stream: 800, half used and consumed
    Big = ?F:new_conn(100000, 0),
    {ok, T1, B1} = ?F:recv(0, 399, nofin, ?F:new_stream(800, 0), Big),
    {T2, B2} = ?F:consumed(399, T1, B1),
    ?assertEqual(none, ?F:max_stream_data(T2)),
    {ok, T3, B3} = ?F:recv(399, 1, nofin, T2, B2),
    {T4, _} = ?F:consumed(1, T3, B3),
    {1200, T5} = ?F:max_stream_data(T4),
    ?assertEqual(1200, ?F:recv_max(T5)),
    ?assertEqual(none, ?F:max_stream_data(T5)),
    %% consuming more than was received is clamped
    {T6, _} = ?F:consumed(5000, T5, B3),
    ?assertEqual(none, ?F:max_stream_data(T6)),
    %% no MAX_STREAM_DATA once the final size is known
    {ok, S7, C7} = ?F:recv(0, 800, fin, ?F:new_stream(800, 0), ?F:new_conn(5000, 0)),
    {S8, _} = ?F:consumed(800, S7, C7),
    ?assertEqual(none, ?F:max_stream_data(S8)).

%% the window doubles, up to its maximum, when a grant lasts under 2 RTTs
growth_test() ->
    Use = fun(N, {S0, C0}) ->
                  {ok, S1, C1} = ?F:recv(?F:received(S0), N, nofin, S0, C0),
                  ?F:consumed(N, S1, C1)
          end,
    {S1, C1} = Use(500, {?F:new_stream(1000, 0, 4000), ?F:new_conn(100000, 0)}),
    %% the first grant: no earlier one to compare
    {1500, S2} = ?F:max_stream_data(0, 10000, S1),
    {S3, C3} = Use(500, {S2, C1}),
    %% used within 2 RTTs (15 ms < 20 ms): 2000 from the read point
    {3000, S4} = ?F:max_stream_data(15000, 10000, S3),
    {S5, C5} = Use(1000, {S4, C3}),
    {6000, S6} = ?F:max_stream_data(20000, 10000, S5),
    %% the maximum holds
    {S7, C7} = Use(2000, {S6, C5}),
    {8000, S8} = ?F:max_stream_data(25000, 10000, S7),
    %% slower than 2 RTTs: no growth
    {S9, _} = Use(2000, {S8, C7}),
    ?assertMatch({10000, _}, ?F:max_stream_data(100000, 10000, S9)),
    %% without a maximum the window stays
    {T1, B1} = Use(500, {?F:new_stream(1000, 0), ?F:new_conn(100000, 0)}),
    {1500, T2} = ?F:max_stream_data(0, 10000, T1),
    {T3, _} = Use(500, {T2, B1}),
    ?assertMatch({2000, _}, ?F:max_stream_data(1, 10000, T3)),
    %% not due, or the final size known: none
    ?assertEqual(none, ?F:max_stream_data(0, 10000, ?F:new_stream(1000, 0, 4000))),
    {ok, F1, _} = ?F:recv(0, 1000, fin, ?F:new_stream(1000, 0, 4000), ?F:new_conn(5000, 0)),
    ?assertEqual(none, ?F:max_stream_data(0, 10000, F1)),
    %% the connection's grows the same way
    {_, D1} = Use(600, {?F:new_stream(5000, 0), ?F:new_conn(1000, 0, 2000)}),
    {1600, D2} = ?F:max_data(0, 10000, D1),
    {_, D3} = Use(600, {?F:new_stream(5000, 0), D2}),
    ?assertMatch({3200, _}, ?F:max_data(1, 10000, D3)).

%% §4.1: the peer's limits on our sending, and the blocked signals
send_test() ->
    C = ?F:new_conn(0, 1000),
    S = ?F:new_stream(0, 300),
    ?assertEqual(300, ?F:allowance(S, C)),
    ?assertEqual(none, ?F:stream_data_blocked(S)),
    {S1, C1} = ?F:sent(300, S, C),
    ?assertEqual(0, ?F:allowance(S1, C1)),
    {300, S2} = ?F:stream_data_blocked(S1),
    ?assertEqual(none, ?F:stream_data_blocked(S2)),
    %% a lower MAX_STREAM_DATA is ignored, a higher one raises
    ?assertEqual(S2, ?F:peer_max_stream_data(200, S2)),
    S3 = ?F:peer_max_stream_data(5000, S2),
    ?assertEqual(700, ?F:allowance(S3, C1)),
    {S4, C2} = ?F:sent(700, S3, C1),
    ?assertEqual(0, ?F:allowance(S4, C2)),
    {1000, C3} = ?F:data_blocked(C2),
    ?assertEqual(none, ?F:data_blocked(C3)),
    C4 = ?F:peer_max_data(2000, C3),
    ?assertEqual(none, ?F:data_blocked(C4)),
    ?assertEqual(1000, ?F:allowance(S4, C4)),
    ?assertEqual(C4, ?F:peer_max_data(10, C4)),
    {_, C5} = ?F:sent(1000, S4, C4),
    ?assertMatch({2000, _}, ?F:data_blocked(C5)),
    ?assertEqual(2000, ?F:sent_bytes(C5)),
    ?assertEqual(2000, ?F:send_max(C5)).

%% §4.6: STREAM_LIMIT_ERROR past our limit
stream_limit_error_test() ->
    L = ?S:new(3, 0),
    %% client-initiated bidirectional streams 0, 4, 8 are indexes 0-2
    {ok, 3, L1} = ?S:peer_open(8, L),
    {ok, 0, L1} = ?S:peer_open(4, L1),
    ?assertEqual(3, ?S:peer_opened(L1)),
    ?assertEqual({error, stream_limit_error}, ?S:peer_open(12, L1)),
    %% unidirectional ids 2, 6, 10, 14: index 3 is the fourth
    ?assertEqual({error, stream_limit_error}, ?S:peer_open(14, ?S:new(3, 0))),
    ?assertMatch({ok, 3, _}, ?S:peer_open(10, ?S:new(3, 0))).

%% §4.6: MAX_STREAMS as streams close, per half of the initial limit
max_streams_test() ->
    {ok, _, L0} = ?S:peer_open(4 * 9, ?S:new(10, 0)),
    ?assertEqual(none, ?S:max_streams(L0)),
    L4 = lists:foldl(fun(_, A) -> ?S:peer_closed(A) end, L0, lists:seq(1, 4)),
    ?assertEqual(none, ?S:max_streams(L4)),
    {15, L5} = ?S:max_streams(?S:peer_closed(L4)),
    ?assertEqual(15, ?S:limit(L5)),
    ?assertEqual(none, ?S:max_streams(L5)),
    {ok, 5, L6} = ?S:peer_open(4 * 14, L5),
    ?assertEqual({error, stream_limit_error}, ?S:peer_open(4 * 15, L6)),
    %% closes beyond the opened are not counted
    Lx = lists:foldl(fun(_, A) -> ?S:peer_closed(A) end, ?S:new(2, 0), lists:seq(1, 5)),
    ?assertEqual(none, ?S:max_streams(Lx)),
    %% a limit of 1 is granted again at each close
    {ok, 1, L1} = ?S:peer_open(0, ?S:new(1, 0)),
    ?assertMatch({2, _}, ?S:max_streams(?S:peer_closed(L1))).

our_streams_test() ->
    L = ?S:new(0, 2),
    {ok, 0, L1} = ?S:open(L),
    {ok, 1, L2} = ?S:open(L1),
    ?assertEqual(blocked, ?S:open(L2)),
    {2, L3} = ?S:streams_blocked(L2),
    ?assertEqual(none, ?S:streams_blocked(L3)),
    ?assertEqual(none, ?S:streams_blocked(L1)),
    {ok, L4} = ?S:peer_max_streams(1, L3),
    ?assertEqual(blocked, ?S:open(L4)),
    {ok, L5} = ?S:peer_max_streams(3, L4),
    ?assertMatch({ok, 2, _}, ?S:open(L5)),
    ?assertEqual({error, frame_encoding_error}, ?S:peer_max_streams((1 bsl 60) + 1, L5)),
    ?assertMatch({ok, _}, ?S:peer_max_streams(1 bsl 60, L5)),
    ?assertEqual(2, ?S:local_opened(L2)).
