%% falco_stats: the listener's counters, connection cells and the
%% request-in-progress mark.
-module(falco_stats_tests).

-include_lib("eunit/include/eunit.hrl").

in_flight(S) -> maps:get(requests_in_flight, falco_stats:info(S)).

new_is_zero_test() ->
    S = falco_stats:new(),
    ?assertEqual(#{accepted => 0, requests_in_flight => 0,
                   connections_by_protocol => #{http1 => 0, h2 => 0, h3 => 0, websocket => 0},
                   rejected => #{shed => 0, rate_limit => 0, limits => 0, flood => 0}},
                 falco_stats:info(S)).

start_end_test() ->
    S = falco_stats:new(),
    C = falco_stats:cell(),
    ok = falco_stats:request_start(S, C, infinity, 1),
    ok = falco_stats:request_start(S, C, infinity, 1),
    ?assertEqual(2, in_flight(S)),
    ok = falco_stats:request_end(S, C),
    ?assertEqual(1, in_flight(S)),
    ok = falco_stats:request_end(S, C),
    ?assertEqual(0, in_flight(S)).

shed_over_max_test() ->
    S = falco_stats:new(),
    C = falco_stats:cell(),
    ok = falco_stats:request_start(S, C, 2, 5),
    ok = falco_stats:request_start(S, C, 2, 5),
    ?assertEqual({shed, {max_requests_in_flight, 5}}, falco_stats:request_start(S, C, 2, 5)),
    %% a refused request is not counted in flight
    ?assertEqual(2, in_flight(S)),
    ok = falco_stats:request_end(S, C),
    ?assertEqual(ok, falco_stats:request_start(S, C, 2, 5)).

%% What a dead connection held is given back, once, by its acceptor.
settle_test() ->
    S = falco_stats:new(),
    A = falco_stats:cell(),
    B = falco_stats:cell(),
    ok = falco_stats:protocol(S, A, http1),
    ok = falco_stats:protocol(S, B, h2),
    ok = falco_stats:request_start(S, A, infinity, 1),
    ok = falco_stats:request_start(S, B, infinity, 1),
    ok = falco_stats:request_start(S, B, infinity, 1),
    ?assertEqual(3, in_flight(S)),
    ok = falco_stats:settle(S, B),
    ?assertEqual(1, in_flight(S)),
    ?assertEqual(#{http1 => 1, h2 => 0, h3 => 0, websocket => 0},
                 maps:get(connections_by_protocol, falco_stats:info(S))),
    %% settling twice gives nothing back twice
    ok = falco_stats:settle(S, B),
    ?assertEqual(1, in_flight(S)),
    ok = falco_stats:request_end(S, A),
    ok = falco_stats:settle(S, A),
    ?assertEqual(#{accepted => 0, requests_in_flight => 0,
                   connections_by_protocol => #{http1 => 0, h2 => 0, h3 => 0, websocket => 0},
                   rejected => #{shed => 0, rate_limit => 0, limits => 0, flood => 0}},
                 falco_stats:info(S)).

%% A connection that switches (h1 -> WebSocket) counts under one protocol.
protocol_switch_test() ->
    S = falco_stats:new(),
    C = falco_stats:cell(),
    ok = falco_stats:protocol(S, C, http1),
    ok = falco_stats:protocol(S, C, websocket),
    ?assertEqual(#{http1 => 0, h2 => 0, h3 => 0, websocket => 1},
                 maps:get(connections_by_protocol, falco_stats:info(S))),
    ok = falco_stats:settle(S, C),
    ?assertEqual(#{http1 => 0, h2 => 0, h3 => 0, websocket => 0},
                 maps:get(connections_by_protocol, falco_stats:info(S))).

accepted_rejected_test() ->
    S = falco_stats:new(),
    ok = falco_stats:accepted(S),
    ok = falco_stats:accepted(S),
    ok = falco_stats:rejected(S, shed),
    ok = falco_stats:rejected(S, limits),
    ok = falco_stats:rejected(S, limits),
    ok = falco_stats:rejected(S, flood),
    [ok = falco_stats:rejected(S, rate_limit) || _ <- [1, 2, 3]],
    ok = falco_stats:rejected(undefined, shed),
    ?assertMatch(#{accepted := 2, rejected := #{shed := 1, rate_limit := 3, limits := 2, flood := 1}},
                 falco_stats:info(S)).

register_test() ->
    S = falco_stats:new(),
    ok = falco_stats:register(falco_stats_tests_l, S),
    ?assertEqual(S, falco_stats:for(falco_stats_tests_l)),
    ok = falco_stats:forget(falco_stats_tests_l),
    ?assertEqual(undefined, falco_stats:for(falco_stats_tests_l)).

mark_test() ->
    Test = self(),
    Pid = spawn(fun() ->
                        ok = falco_stats:mark(#{method => <<"GET">>, path => <<"/a">>}),
                        Test ! marked,
                        receive unmark -> ok = falco_stats:unmark() end,
                        Test ! unmarked,
                        receive stop -> ok end
                end),
    receive marked -> ok end,
    ?assertMatch({#{method := <<"GET">>, path := <<"/a">>, duration_ms := D}, _}
                   when D >= 0, falco_stats:in_progress(Pid)),
    Pid ! unmark,
    receive unmarked -> ok end,
    ?assertMatch({undefined, _}, falco_stats:in_progress(Pid)),
    Pid ! stop,
    Ref = monitor(process, Pid),
    receive {'DOWN', Ref, _, _, _} -> ok end,
    ?assertEqual({undefined, []}, falco_stats:in_progress(Pid)).
