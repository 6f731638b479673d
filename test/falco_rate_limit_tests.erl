%% EUnit tests for falco_rate_limit: the bucket arithmetic (burst, refill,
%% no more than a burst after a long pause, Retry-After rounded up), the
%% table (no two requests take the last token, the bound on keys and the
%% shared overflow bucket, idle buckets evicted, a restart of the tables'
%% owner) and the middleware's 429.
-module(falco_rate_limit_tests).
-include_lib("eunit/include/eunit.hrl").

-define(RL, falco_rate_limit).

second() ->
    erlang:convert_time_unit(1, second, native).

%% -- the bucket ------------------------------------------------------------------

params_test() ->
    S = second(),
    ?assertEqual({S div 10, 5 * (S div 10)}, ?RL:params(10, 5)),
    ?assertEqual({2 * S, 2 * S}, ?RL:params(0.5, 1)),
    %% never a zero interval, whatever the rate
    ?assertMatch({1, 3}, ?RL:params(S * 10, 3)).

%% Takes from a bucket N times at Now; the results and the last Tat.
takes(N, Now, Tat, I, C) ->
    lists:mapfoldl(fun(_, T) ->
                           case ?RL:bucket(Now, T, I, C) of
                               {ok, T1} -> {ok, T1};
                               {wait, W} -> {{wait, W}, T}
                           end
                   end, Tat, lists:seq(1, N)).

burst_test() ->
    {I, C} = {100, 500},
    {Results, Tat} = takes(7, 1000, undefined, I, C),
    ?assertEqual([ok, ok, ok, ok, ok, {wait, 100}, {wait, 100}], Results),
    ?assertEqual(1000 + 5 * I, Tat).

refill_test() ->
    {I, C} = {100, 500},
    {_, Tat} = takes(5, 0, undefined, I, C),
    %% one token back after one interval, not before
    ?assertEqual({wait, 1}, ?RL:bucket(99, Tat, I, C)),
    ?assertEqual({ok, Tat + I}, ?RL:bucket(100, Tat, I, C)),
    %% the wait shrinks as time passes
    ?assertEqual({wait, 60}, ?RL:bucket(40, Tat, I, C)),
    %% three intervals later, three tokens
    {R3, _} = takes(4, 300, Tat, I, C),
    ?assertEqual([ok, ok, ok, {wait, 100}], R3).

full_after_a_pause_test() ->
    %% a bucket idle for ages holds its burst, no more
    {I, C} = {100, 300},
    {_, Tat} = takes(3, 0, undefined, I, C),
    {R, _} = takes(5, 1000000, Tat, I, C),
    ?assertEqual([ok, ok, ok, {wait, 100}, {wait, 100}], R).

%% Over any run of requests at nondecreasing times, what passes between
%% the first and the last is at most the burst plus the refill.
never_more_than_rate_test() ->
    rand:seed(exsss, {1, 2, 3}),
    {I, C} = {7, 21},
    Times = lists:sort([rand:uniform(2000) || _ <- lists:seq(1, 3000)]),
    {Passed, _} = lists:foldl(fun(Now, {Acc, T}) ->
                                      case ?RL:bucket(Now, T, I, C) of
                                          {ok, T1} -> {[Now | Acc], T1};
                                          {wait, W} when W > 0 -> {Acc, T}
                                      end
                              end, {[], undefined}, Times),
    First = lists:last(Passed),
    Last = hd(Passed),
    ?assert(length(Passed) =< C div I + (Last - First) div I + 1),
    %% and it is not starved either: the bucket was always busy
    ?assert(length(Passed) >= (Last - First) div I).

%% The table's one-step update is advance/3: max(Tat, Now) + Interval.
ops_are_advance_test() ->
    rand:seed(exsss, {4, 5, 6}),
    T = ets:new(t, [set]),
    [begin
         Now = rand:uniform(2000) - 1000,
         Tat = Now + rand:uniform(200) - 100,
         I = rand:uniform(50),
         true = ets:insert(T, {k, Tat}),
         ?assertEqual([max(Tat, Now) - 1, ?RL:advance(Now, Tat, I)],
                      ets:update_counter(T, k, ?RL:ops(Now, I)))
     end || _ <- lists:seq(1, 2000)],
    ets:delete(T).

retry_after_test() ->
    S = second(),
    ?assertEqual(1, ?RL:retry_after(1)),
    ?assertEqual(1, ?RL:retry_after(S div 10)),
    ?assertEqual(1, ?RL:retry_after(S)),
    ?assertEqual(2, ?RL:retry_after(S + 1)),
    ?assertEqual(10, ?RL:retry_after(10 * S)),
    %% rate 10/s, burst 5: the 6th request waits 0.1 s, told 1 s
    {I, C} = ?RL:params(10, 5),
    {R, _} = takes(6, 0, undefined, I, C),
    {wait, W} = lists:last(R),
    ?assertEqual(I, W),
    ?assertEqual(1, ?RL:retry_after(W)),
    %% rate 0.1/s, burst 1: the 2nd waits 10 s
    {I2, C2} = ?RL:params(0.1, 1),
    {[ok, {wait, W2}], _} = takes(2, 0, undefined, I2, C2),
    ?assertEqual(10, ?RL:retry_after(W2)).

%% -- options ---------------------------------------------------------------------

options_test_() ->
    {setup, fun start/0, fun stop/1,
     fun() ->
             Bad = fun(Opts) -> ?assertError({invalid_option, ?RL, _}, ?RL:prepare(Opts)) end,
             Bad(#{}),
             Bad(#{rate => 0}),
             Bad(#{rate => -1}),
             Bad(#{rate => ten}),
             Bad(#{rate => 1, burst => 0}),
             Bad(#{rate => 1, burst => 1.5}),
             Bad(#{rate => 1, key => header}),
             Bad(#{rate => 1, max_keys => 0}),
             Bad(#{rate => 1, other => 1}),
             Bad(not_a_map),
             _ = ?RL:prepare(#{rate => 0.5}),
             _ = ?RL:prepare(#{rate => 1, burst => 3, key => fun(_) -> a end, max_keys => 5,
                               name => n})
     end}.

start() ->
    {ok, Apps} = application:ensure_all_started(falco),
    Apps.

stop(Apps) ->
    lists:foreach(fun application:stop/1, lists:reverse(Apps)).

%% -- the table -------------------------------------------------------------------

table_test_() ->
    {setup, fun start/0, fun stop/1,
     [fun last_token_once/0, fun keys_bounded/0, fun idle_evicted/0, fun odd_keys/0,
      fun answers_429/0, fun shared_by_name/0, fun owner_restarts/0]}.

%% 40 processes take 10 times each at the same instant from a bucket of
%% 100: exactly 100 pass.
last_token_once() ->
    L = ?RL:prepare(#{rate => 0.001, burst => 100, name => make_ref()}),
    Now = erlang:monotonic_time(),
    Self = self(),
    Pids = [spawn_link(fun() ->
                               Ok = length([ok || _ <- lists:seq(1, 10),
                                                  ?RL:take(L, k, Now) =:= ok]),
                               Self ! {self(), Ok}
                       end) || _ <- lists:seq(1, 40)],
    Total = lists:sum([receive {P, N} -> N after 10000 -> error(timeout) end || P <- Pids]),
    ?assertEqual(100, Total).

%% max_keys 10: the 11th key and later share one bucket; the tracked keys
%% keep theirs; the table holds at most max_keys + 1 rows.
keys_bounded() ->
    Name = make_ref(),
    L = ?RL:prepare(#{rate => 0.001, burst => 1, max_keys => 10, name => Name}),
    Now = erlang:monotonic_time(),
    [?assertEqual(ok, ?RL:take(L, K, Now)) || K <- lists:seq(1, 10)],
    ?assertEqual(ok, ?RL:take(L, 11, Now)),
    [?assertMatch({wait, _}, ?RL:take(L, K, Now)) || K <- lists:seq(12, 1000)],
    [?assertMatch({wait, _}, ?RL:take(L, K, Now)) || K <- lists:seq(1, 10)],
    {Tid, _} = falco_rate_tables:lookup(Name),
    ?assertEqual(11, ets:info(Tid, size)).

%% Buckets that have refilled are evicted (here: taken long ago), at once
%% when the table is full; a key evicted starts again with a full bucket.
idle_evicted() ->
    Name = make_ref(),
    L = ?RL:prepare(#{rate => 1000, burst => 1, max_keys => 100, name => Name}),
    {Tid, _} = falco_rate_tables:lookup(Name),
    Past = erlang:monotonic_time() - 10 * second(),
    [ok = ?RL:take(L, K, Past) || K <- lists:seq(1, 100)],
    ?assertEqual(100, ets:info(Tid, size)),
    %% full: this one goes to the overflow bucket and asks for an eviction
    ?assertEqual(ok, ?RL:take(L, 101, erlang:monotonic_time() + second())),
    ok = falco_test_client:wait_until(fun() -> ets:info(Tid, size) =:= 1 end, 5000),
    ?assertEqual(ok, ?RL:take(L, 1, erlang:monotonic_time())),
    ?assertEqual(2, ets:info(Tid, size)).

%% Odd keys (pattern variables, the overflow key's atom, long ones) are
%% keys like any other.
odd_keys() ->
    L = ?RL:prepare(#{rate => 0.001, burst => 1, name => make_ref()}),
    Now = erlang:monotonic_time(),
    [begin
         ?assertEqual(ok, ?RL:take(L, K, Now)),
         ?assertMatch({wait, _}, ?RL:take(L, K, Now))
     end || K <- ['_', '$1', {'_', '$2'}, overflow, [x], {1, 2, 3, 4}, <<"k">>, 7, 1.5,
                  binary:copy(<<"a">>, 32), binary:copy(<<"a">>, 33), binary:copy(<<"b">>, 8000),
                  lists:seq(1, 1000)]],
    %% long keys are hashed, distinct ones kept apart
    ?assertEqual(ok, ?RL:take(L, binary:copy(<<"b">>, 7999), Now)),
    ?assertEqual(ok, ?RL:take(L, lists:seq(1, 999), Now)).

answers_429() ->
    Mw = {?RL, #{rate => 0.5, burst => 2, name => make_ref(),
                 key => fun(Req) -> falco_req:header(<<"x-key">>, Req) end}},
    Chain = falco_middleware:compose([Mw], fun(_) -> {200, [], <<"ok">>} end),
    Req = fun(K) -> #{method => <<"GET">>, path => <<"/">>, headers => [{<<"x-key">>, K}],
                      peer => {{127, 0, 0, 1}, 1}} end,
    ?assertMatch({200, _, _}, Chain(Req(<<"a">>))),
    ?assertMatch({200, _, _}, Chain(Req(<<"a">>))),
    {429, Fields, Body} = Chain(Req(<<"a">>)),
    ?assertEqual(<<"2">>, proplists:get_value(<<"retry-after">>, Fields)),
    ?assertEqual(<<"Too Many Requests\n">>, Body),
    ?assertMatch({200, _, _}, Chain(Req(<<"b">>))).

%% Two limiters of one name share buckets; another name has its own.
shared_by_name() ->
    Name = make_ref(),
    L1 = ?RL:prepare(#{rate => 0.001, burst => 1, name => Name}),
    L2 = ?RL:prepare(#{rate => 0.001, burst => 1, name => Name}),
    L3 = ?RL:prepare(#{rate => 0.001, burst => 1, name => make_ref()}),
    Now = erlang:monotonic_time(),
    ?assertEqual(ok, ?RL:take(L1, k, Now)),
    ?assertMatch({wait, _}, ?RL:take(L2, k, Now)),
    ?assertEqual(ok, ?RL:take(L3, k, Now)).

%% The tables' owner dies: its successor gives the limiters new tables
%% (empty: every key starts with a full bucket) and they go on.
owner_restarts() ->
    Name = make_ref(),
    L = ?RL:prepare(#{rate => 0.001, burst => 1, name => Name}),
    Now = erlang:monotonic_time(),
    ok = ?RL:take(L, k, Now),
    {wait, _} = ?RL:take(L, k, Now),
    Old = whereis(falco_rate_tables),
    exit(Old, kill),
    ok = falco_test_client:wait_until(fun() ->
                                              case whereis(falco_rate_tables) of
                                                  undefined -> false;
                                                  Old -> false;
                                                  _ -> true
                                              end
                                      end, 5000),
    _ = sys:get_state(falco_rate_tables),
    ?assertEqual(ok, ?RL:take(L, k, Now)),
    ?assertMatch({wait, _}, ?RL:take(L, k, Now)).
