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
