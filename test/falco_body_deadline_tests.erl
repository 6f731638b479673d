%% falco_body_deadline: the minimum body rate rule, with the clock given.
-module(falco_body_deadline_tests).

-include_lib("eunit/include/eunit.hrl").

-define(RULE, #{grace => 20000, bytes_per_second => 500}).

none_is_body_timeout_test() ->
    C = falco_body_deadline:start(none, 0),
    ?assertEqual(30000, falco_body_deadline:timeout(C, 0, 30000, 1000000)),
    ?assertEqual(infinity, falco_body_deadline:timeout(C, 0, infinity, 1000000)).

grace_then_rate_test() ->
    C = falco_body_deadline:start(?RULE, 1000),
    %% at the start: body_timeout, the grace is longer
    ?assertEqual(5000, falco_body_deadline:timeout(C, 0, 5000, 1000)),
    %% nothing received: the grace is all there is
    ?assertEqual(2000, falco_body_deadline:timeout(C, 0, 30000, 19000)),
    ?assertEqual(0, falco_body_deadline:timeout(C, 0, 30000, 21000)),
    ?assertEqual(0, falco_body_deadline:timeout(C, 0, infinity, 99000)),
    %% every 500 bytes earn a second
    ?assertEqual(1000, falco_body_deadline:timeout(C, 500, 30000, 21000)),
    ?assertEqual(30000, falco_body_deadline:timeout(C, 1000000, 30000, 21000)).

%% 1 byte every 5 s is cut at about 20 s, as Apache's default does.
slow_post_test() ->
    C = falco_body_deadline:start(?RULE, 0),
    Cut = hd([T || T <- lists:seq(0, 60000, 5000),
                   falco_body_deadline:timeout(C, T div 5000, 30000, T) < 5000]),
    ?assert(Cut >= 15000 andalso Cut =< 20000).
