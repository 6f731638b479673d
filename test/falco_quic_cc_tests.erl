%% EUnit tests for falco_quic_cc: RFC 9002 §7 and Appendix B's NewReno,
%% rule by rule.
-module(falco_quic_cc_tests).
-include_lib("eunit/include/eunit.hrl").

-define(C, falco_quic_cc).

%% §7.2: min(10 × mds, max(14720, 2 × mds))
initial_window_test() ->
    ?assertEqual(12000, ?C:window(?C:new(1200))),
    ?assertEqual(14720, ?C:window(?C:new(1500))),
    ?assertEqual(18000, ?C:window(?C:new(9000))),
    ?assertEqual(infinity, ?C:ssthresh(?C:new(1200))),
    ?assertEqual(0, ?C:in_flight(?C:new(1200))).

in_flight_test() ->
    C = lists:foldl(fun(_, A) -> ?C:sent(1200, A) end, ?C:new(1200), lists:seq(1, 9)),
    ?assertEqual(10800, ?C:in_flight(C)),
    ?assertEqual(1200, ?C:available(C)),
    ?assert(?C:can_send(1200, C)),
    ?assertNot(?C:can_send(1201, C)),
    ?assertEqual(0, ?C:available(?C:sent(5000, C))),
    ?assertEqual(9600, ?C:in_flight(?C:discarded(1200, C))).

%% §7.3.1: slow start grows the window by the bytes acknowledged
slow_start_test() ->
    C = ?C:acked(1200, 0, ?C:sent(1200, ?C:new(1200))),
    ?assertEqual(13200, ?C:window(C)),
    ?assertEqual(0, ?C:in_flight(C)).

%% §7.3.2, B.6: a loss halves the window once per recovery period
recovery_period_test() ->
    C0 = lists:foldl(fun(_, A) -> ?C:sent(1200, A) end, ?C:new(1200), lists:seq(1, 10)),
    C1 = ?C:lost(1200, 10, 100, C0),
    ?assertEqual(6000, ?C:window(C1)),
    ?assertEqual(6000, ?C:ssthresh(C1)),
    ?assertEqual(10800, ?C:in_flight(C1)),
    ?assert(?C:in_recovery(100, C1)),
    ?assertNot(?C:in_recovery(101, C1)),
    %% a packet sent before the period began: no second reduction
    C2 = ?C:lost(1200, 50, 120, C1),
    ?assertEqual(6000, ?C:window(C2)),
    %% and acknowledging one of them does not grow the window
    C3 = ?C:acked(1200, 60, C2),
    ?assertEqual(6000, ?C:window(C3)),
    %% a packet sent after the period began reduces again
    C4 = ?C:lost(1200, 130, 200, ?C:sent(1200, C3)),
    ?assertEqual(3000, ?C:window(C4)),
    %% never below the minimum window
    C5 = ?C:lost(0, 300, 400, ?C:lost(0, 250, 260, C4)),
    ?assertEqual(2400, ?C:window(C5)).

%% §7.3.3: congestion avoidance, one datagram per window acknowledged
congestion_avoidance_test() ->
    C0 = ?C:lost(0, 0, 0, ?C:new(1200)),
    ?assertEqual(6000, ?C:window(C0)),
    Ack = fun(_, A) -> ?C:acked(1200, 1, ?C:sent(1200, A)) end,
    C1 = lists:foldl(Ack, C0, lists:seq(1, 4)),
    ?assertEqual(6000, ?C:window(C1)),
    C2 = Ack(5, C1),
    ?assertEqual(7200, ?C:window(C2)),
    C3 = lists:foldl(Ack, C2, lists:seq(1, 6)),
    ?assertEqual(8400, ?C:window(C3)).

%% §7.6.2: persistent congestion collapses the window to the minimum
persistent_congestion_test() ->
    C = ?C:persistent_congestion(?C:lost(1200, 5, 10, ?C:sent(1200, ?C:new(1200)))),
    ?assertEqual(2400, ?C:window(C)),
    ?assertNot(?C:in_recovery(5, C)),
    %% back in slow start below ssthresh (6000)
    ?assertEqual(3600, ?C:window(?C:acked(1200, 20, ?C:sent(1200, C)))).

%% §7.8: no growth while application limited
app_limited_test() ->
    C = ?C:app_limited(true, ?C:sent(1200, ?C:new(1200))),
    ?assertEqual(12000, ?C:window(?C:acked(1200, 0, C))),
    ?assertEqual(13200, ?C:window(?C:acked(1200, 0, ?C:app_limited(false, C)))).

%% §7.7: 1.25 × window per smoothed RTT
pacing_test() ->
    C = ?C:new(1200),
    %% 12000 bytes per 100 ms at 1.25: 1200 bytes every 8 ms
    ?assertEqual(8000, ?C:pacing_interval(1200, 100000, C)).

%% The window stops growing at 2 MB, in slow start and in congestion
%% avoidance: what a connection holds in flight stays bounded.
window_cap_test() ->
    C0 = ?C:new(1200),
    Sent = lists:foldl(fun(_, C) -> ?C:sent(1200, C) end, C0, lists:seq(1, 3000)),
    Acked = lists:foldl(fun(_, C) -> ?C:acked(1200, 0, C) end, Sent, lists:seq(1, 3000)),
    ?assertEqual(2097152, ?C:window(Acked)),
    %% after a loss, congestion avoidance grows it back to the cap, no more
    Lost = ?C:lost(1200, 1, 2, ?C:sent(1200, Acked)),
    ?assertEqual(1048576, ?C:window(Lost)),
    More = lists:foldl(fun(_, C) -> ?C:acked(1200, 10, ?C:sent(1200, C)) end, Lost,
                       lists:seq(1, 2000000)),
    ?assertEqual(2097152, ?C:window(More)).
