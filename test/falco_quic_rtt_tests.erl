%% EUnit tests for falco_quic_rtt: RFC 9002 §5's estimator, sample by
%% sample.
-module(falco_quic_rtt_tests).
-include_lib("eunit/include/eunit.hrl").

-define(R, falco_quic_rtt).

initial_test() ->
    R = ?R:new(),
    ?assertNot(?R:has_sample(R)),
    ?assertEqual(333000, ?R:smoothed(R)),
    ?assertEqual(166500, ?R:variation(R)),
    %% §6.2.2: a first PTO of about 1 s
    ?assertEqual(333000 + 4 * 166500, ?R:pto_period(R)),
    ?assertEqual(100000, ?R:smoothed(?R:new(100000))).

%% §5.3: the first sample replaces the initial values, ack delay ignored
first_sample_test() ->
    R = ?R:sample(100000, 50000, 7, ?R:new()),
    ?assert(?R:has_sample(R)),
    ?assertEqual(7, ?R:first_sample_at(R)),
    ?assertEqual({100000, 100000, 100000, 50000},
                 {?R:latest(R), ?R:min(R), ?R:smoothed(R), ?R:variation(R)}).

%% §5.3: later samples subtract the ack delay, then smooth
subsequent_sample_test() ->
    R0 = ?R:sample(100000, 0, 0, ?R:new()),
    R = ?R:sample(140000, 20000, 1, R0),
    %% adjusted 120000: smoothed 7/8 × 100000 + 1/8 × 120000, rttvar 3/4 × 50000 + 1/4 × 20000
    ?assertEqual(102500, ?R:smoothed(R)),
    ?assertEqual(42500, ?R:variation(R)),
    ?assertEqual(100000, ?R:min(R)),
    ?assertEqual(140000, ?R:latest(R)),
    ?assertEqual(0, ?R:first_sample_at(R)).

%% §5.3: the delay is not subtracted if that would go below min_rtt
not_below_min_rtt_test() ->
    R0 = ?R:sample(100000, 0, 0, ?R:new()),
    R = ?R:sample(110000, 30000, 1, R0),
    %% 110000 - 30000 < 100000: the sample is used as it is
    ?assertEqual((7 * 100000 + 110000) div 8, ?R:smoothed(R)).

%% §5.2: min_rtt is the smallest sample, never adjusted for delay
min_rtt_test() ->
    R = lists:foldl(fun(S, A) -> ?R:sample(S, 5000, 0, A) end, ?R:new(), [50000, 30000, 80000]),
    ?assertEqual(30000, ?R:min(R)),
    ?assertEqual(80000, ?R:min(?R:persistent_congestion(?R:sample(80000, 0, 0, R)))).

periods_test() ->
    R = ?R:sample(100000, 0, 0, ?R:new()),
    ?assertEqual(300000, ?R:pto_period(R)),
    ?assertEqual((300000 + 25000) * 3, ?R:persistent_duration(25000, R)),
    %% kGranularity floors the variation term
    R1 = lists:foldl(fun(_, A) -> ?R:sample(100, 0, 0, A) end, ?R:new(), lists:seq(1, 40)),
    ?assertEqual(?R:smoothed(R1) + 1000, ?R:pto_period(R1)).
