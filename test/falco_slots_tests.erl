%% EUnit tests for falco_slots: a listener's connection slots. The count
%% of connections follows claim/accepted/release, an acceptor's share is
%% given back by its successor, and a reader never sees a count that was
%% never true while acceptors claim and release around it.
-module(falco_slots_tests).
-include_lib("eunit/include/eunit.hrl").

counts_test() ->
    S = falco_slots:new(2),
    ?assertEqual(0, falco_slots:connections(S)),
    ?assert(falco_slots:claim(S, 1, 3)),
    ?assert(falco_slots:claim(S, 2, 3)),
    ?assertEqual({0, 2}, {falco_slots:connections(S), falco_slots:waiting(S)}),
    ok = falco_slots:accepted(S, 1),
    ?assertEqual({1, 1}, {falco_slots:connections(S), falco_slots:waiting(S)}),
    ?assert(falco_slots:claim(S, 1, 3)),
    %% all three slots are taken: a waiting process holds one too
    ?assertNot(falco_slots:claim(S, 2, 3)),
    ok = falco_slots:release(S, 2, waiting),
    ?assertEqual({1, 1}, {falco_slots:connections(S), falco_slots:waiting(S)}),
    ok = falco_slots:release(S, 1, connection),
    ?assertEqual({0, 1}, {falco_slots:connections(S), falco_slots:waiting(S)}),
    ?assert(falco_slots:claim(S, 2, 3)),
    ?assert(falco_slots:claim(S, 2, 3)),
    ?assertNot(falco_slots:claim(S, 2, 3)).

%% An acceptor that died took its connections and its waiting process
%% with it; its successor gives back exactly its share.
reset_test() ->
    S = falco_slots:new(2),
    [true = falco_slots:claim(S, 1, infinity) || _ <- lists:seq(1, 3)],
    ok = falco_slots:accepted(S, 1),
    ok = falco_slots:accepted(S, 1),
    true = falco_slots:claim(S, 2, infinity),
    ok = falco_slots:accepted(S, 2),
    true = falco_slots:claim(S, 2, infinity),
    ?assertEqual({3, 2}, {falco_slots:connections(S), falco_slots:waiting(S)}),
    ok = falco_slots:reset(S, 1),
    ?assertEqual({1, 1}, {falco_slots:connections(S), falco_slots:waiting(S)}),
    %% acceptor 2 still holds two slots of a limit of three
    ?assert(falco_slots:claim(S, 1, 3)),
    ?assertNot(falco_slots:claim(S, 1, 3)),
    ok = falco_slots:reset(S, 2),
    ok = falco_slots:reset(S, 1),
    ?assertEqual({0, 0}, {falco_slots:connections(S), falco_slots:waiting(S)}).

%% Three connections stay open while an acceptor's waiting process comes
%% and goes (claim, then accept failed, or took a connection that then
%% closed): every read says 3, or 4 while the fourth is open. A count
%% made of two reads (slots taken minus waiting) caught a claim between
%% them and said 2.
count_is_one_read_test() ->
    S = falco_slots:new(2),
    [begin true = falco_slots:claim(S, 1, infinity), ok = falco_slots:accepted(S, 1) end
     || _ <- lists:seq(1, 3)],
    Parent = self(),
    Churn = spawn_link(fun() -> churn(S, Parent, 0) end),
    Seen = read(S, 300000, #{}),
    Churn ! stop,
    Rounds = receive {churned, N} -> N after 5000 -> error(churn_stuck) end,
    ?assert(Rounds > 0),
    ?assert(maps:is_key(3, Seen)),
    ?assertEqual([], maps:keys(Seen) -- [3, 4]),
    ?assertEqual({3, 0}, {falco_slots:connections(S), falco_slots:waiting(S)}).

churn(S, Parent, N) ->
    receive
        stop -> Parent ! {churned, N}
    after 0 ->
        true = falco_slots:claim(S, 2, infinity),
        case N rem 2 of
            0 ->
                ok = falco_slots:release(S, 2, waiting);
            1 ->
                ok = falco_slots:accepted(S, 2),
                ok = falco_slots:release(S, 2, connection)
        end,
        churn(S, Parent, N + 1)
    end.

read(_S, 0, Seen) ->
    Seen;
read(S, K, Seen) ->
    read(S, K - 1, Seen#{falco_slots:connections(S) => true}).

%% The limit's edges: the first full/1 enters, later ones do not; the
%% first room/1 after it leaves (with the time it lasted), later ones and
%% room/1 without a limit reached see nothing; saturation/1 counts the
%% times the limit was reached.
saturation_edges_test() ->
    S = falco_slots:new(1),
    ?assertEqual({false, 0}, falco_slots:saturation(S)),
    ?assertEqual(still_room, falco_slots:room(S)),
    ?assertEqual(entered, falco_slots:full(S)),
    ?assertEqual(already, falco_slots:full(S)),
    ?assertEqual({true, 1}, falco_slots:saturation(S)),
    timer:sleep(20),
    {left, D, false} = falco_slots:room(S),
    ?assert(erlang:convert_time_unit(D, native, millisecond) >= 19),
    ?assertEqual(still_room, falco_slots:room(S)),
    ?assertEqual({false, 1}, falco_slots:saturation(S)),
    ?assertEqual(entered, falco_slots:full(S)),
    ?assertEqual({true, 2}, falco_slots:saturation(S)).

%% Many processes racing on the edges: each time the limit is reached is
%% entered by exactly one of them, and left by exactly one.
saturation_edges_race_test() ->
    S = falco_slots:new(1),
    Parent = self(),
    Pids = [spawn_link(fun() ->
                               Parent ! {ready, self()},
                               receive go -> ok end,
                               Parent ! {done, edges(S, 2000, 0, 0)}
                       end) || _ <- lists:seq(1, 8)],
    [receive {ready, P} -> ok end || P <- Pids],
    [P ! go || P <- Pids],
    Edges = [receive {done, E} -> E after 30000 -> error(stuck) end || _ <- Pids],
    Entered = lists:sum([En || {En, _} <- Edges]),
    Left = lists:sum([L || {_, L} <- Edges]),
    {AtLimit, Times} = falco_slots:saturation(S),
    ?assertEqual(Times, Entered),
    ?assertEqual(Entered - Left, case AtLimit of true -> 1; false -> 0 end),
    ?assert(Entered > 0).

edges(_S, 0, En, L) ->
    {En, L};
edges(S, K, En, L) ->
    case rand:uniform(2) of
        1 -> edges(S, K - 1, En + case falco_slots:full(S) of entered -> 1; already -> 0 end, L);
        2 -> edges(S, K - 1, En, L + case falco_slots:room(S) of {left, _, _} -> 1;
                                                                    still_room -> 0 end)
    end.

%% One log line per interval, whoever asks; a reach that was logged is
%% said to be by the room/1 that ends it.
saturation_log_rate_test() ->
    S = falco_slots:new(1),
    Interval = erlang:convert_time_unit(10, second, native),
    Now = erlang:monotonic_time(),
    entered = falco_slots:full(S),
    ?assertEqual({true, 1}, falco_slots:log_due(S, Now, Interval)),
    ?assertEqual(false, falco_slots:log_due(S, Now, Interval)),
    {left, _, true} = falco_slots:room(S),
    entered = falco_slots:full(S),
    ?assertEqual(false, falco_slots:log_due(S, Now + Interval - 1, Interval)),
    {left, _, false} = falco_slots:room(S),
    entered = falco_slots:full(S),
    ?assertEqual({true, 3}, falco_slots:log_due(S, Now + Interval, Interval)).
