%% @doc The connection slots of one listener (`max_connections').
%%
%% A slot is taken by an acceptor before it starts a process waiting in
%% accept, and given back by the same acceptor when that process ends,
%% whatever way it ends (even `kill'): the acceptor is the process's
%% supervisor and sees its exit. A waiting process thus holds a slot too,
%% so at most `max_connections' processes exist; {@link connections/1}
%% reports only those that have a connection.
%%
%% One `counters' array per listener: the totals (slots, waiting,
%% connections) and each acceptor's own share. The connections have a
%% counter of their own so that {@link connections/1} is one read: a
%% difference of two reads could catch an acceptor between the two and
%% come out one short. Should an acceptor die, its connections go with
%% it, and its successor gives back the share it left ({@link reset/2}), so
%% no slot is ever lost.
%%
%% Beside the counts, an `atomics' array says whether the listener is at
%% its limit (an acceptor or a QUIC socket holder found no slot, and none
%% has found one since): {@link full/1} and {@link room/1} report the
%% edges, so that exactly one caller sees each, and {@link saturation/1}
%% reads the state for `falco:info/1' ({@link falco_saturation} tells of
%% the edges).
%%
%% @private internal to falco
-module(falco_slots).

-export([new/1, reset/2, claim/3, claim_connection/3, accepted/2, release/3, connections/1,
         waiting/1]).
-export([full/1, room/1, saturation/1, log_due/3]).

-opaque slots() :: {counters:counters_ref(), atomics:atomics_ref()}.
-export_type([slots/0]).

-define(TOTAL, 1).
-define(WAITING, 2).
-define(CONNS, 3).
-define(OWN(I), (2 + 2 * (I))).
-define(OWN_WAITING(I), (3 + 2 * (I))).

%% the atomics: at the limit (0 or 1), since when (native monotonic), how
%% many times the limit was reached, when a line was last logged, whether
%% this time's was
-define(AT_LIMIT, 1).
-define(SINCE, 2).
-define(TIMES, 3).
-define(LAST_LOG, 4).
-define(LOGGED, 5).

%% @doc Slots for a listener with `N' acceptors.
-spec new(pos_integer()) -> slots().
new(N) ->
    A = atomics:new(5, [{signed, true}]),
    ok = atomics:put(A, ?LAST_LOG, erlang:monotonic_time() - erlang:convert_time_unit(3600, second, native)),
    {counters:new(3 + 2 * N, [atomics]), A}.

%% @doc Gives back what a previous acceptor `I' held (it died with its
%% connections); called when acceptor `I' starts.
-spec reset(slots(), pos_integer()) -> ok.
reset({C, _}, I) ->
    Own = counters:get(C, ?OWN(I)),
    Waiting = counters:get(C, ?OWN_WAITING(I)),
    ok = counters:sub(C, ?TOTAL, Own),
    ok = counters:sub(C, ?WAITING, Waiting),
    ok = counters:sub(C, ?CONNS, Own - Waiting),
    ok = counters:put(C, ?OWN(I), 0),
    counters:put(C, ?OWN_WAITING(I), 0).

%% @doc Takes a slot for a waiting process of acceptor `I' if fewer than
%% `Max' are taken. Add first, then look: two acceptors can never both
%% take the last slot (at worst both back off and try again).
-spec claim(slots(), pos_integer(), pos_integer() | infinity) -> boolean().
claim({C, _}, I, Max) ->
    ok = counters:add(C, ?TOTAL, 1),
    case counters:get(C, ?TOTAL) > Max of
        true ->
            counters:sub(C, ?TOTAL, 1),
            false;
        false ->
            ok = counters:add(C, ?WAITING, 1),
            ok = counters:add(C, ?OWN(I), 1),
            ok = counters:add(C, ?OWN_WAITING(I), 1),
            true
    end.

%% @doc Takes a slot for a connection that is there already (a QUIC
%% connection, whose first datagram came: {@link falco_quic_socket} is its
%% `I'), if fewer than `Max' connections are open. The processes waiting
%% in accept are not counted: a TCP acceptor always waits with a slot
%% taken, and a QUIC client would otherwise never get the one a closed TCP
%% connection gave back. So the connections may be over `Max' by those of
%% the waiting processes that accept meanwhile (at most one per acceptor);
%% no acceptor takes a new slot while they are.
-spec claim_connection(slots(), pos_integer(), pos_integer() | infinity) -> boolean().
claim_connection({C, _}, I, Max) ->
    ok = counters:add(C, ?TOTAL, 1),
    case counters:get(C, ?TOTAL) - counters:get(C, ?WAITING) > Max of
        true ->
            ok = counters:sub(C, ?TOTAL, 1),
            false;
        false ->
            ok = counters:add(C, ?CONNS, 1),
            ok = counters:add(C, ?OWN(I), 1),
            true
    end.

%% @doc The waiting process of acceptor `I' has a connection.
-spec accepted(slots(), pos_integer()) -> ok.
accepted({C, _}, I) ->
    ok = counters:add(C, ?CONNS, 1),
    not_waiting(C, I).

not_waiting(C, I) ->
    ok = counters:sub(C, ?WAITING, 1),
    counters:sub(C, ?OWN_WAITING(I), 1).

%% @doc A process of acceptor `I' ended: a waiting one or a connection.
-spec release(slots(), pos_integer(), waiting | connection) -> ok.
release({C, _}, I, waiting) ->
    ok = not_waiting(C, I),
    free(C, I);
release({C, _}, I, connection) ->
    ok = counters:sub(C, ?CONNS, 1),
    free(C, I).

free(C, I) ->
    ok = counters:sub(C, ?TOTAL, 1),
    counters:sub(C, ?OWN(I), 1).

%% @doc The number of open connections (those their acceptor has heard
%% of: a connection just accepted counts as waiting until then).
-spec connections(slots()) -> non_neg_integer().
connections({C, _}) ->
    max(0, counters:get(C, ?CONNS)).

%% @doc The number of processes waiting in accept (or that have just
%% accepted, until their acceptor has heard of it).
-spec waiting(slots()) -> non_neg_integer().
waiting({C, _}) ->
    max(0, counters:get(C, ?WAITING)).

%% @doc A claim found no slot: `entered' if the listener was not at its
%% limit before (this caller is the one to tell of it), else `already'.
-spec full(slots()) -> entered | already.
full({_, A}) ->
    case atomics:compare_exchange(A, ?AT_LIMIT, 0, 1) of
        ok ->
            ok = atomics:put(A, ?SINCE, erlang:monotonic_time()),
            ok = atomics:put(A, ?LOGGED, 0),
            atomics:add(A, ?TIMES, 1),
            entered;
        _ ->
            already
    end.

%% @doc A claim found a slot: `{left, Duration, Logged}' if the listener
%% was at its limit (for `Duration' native time units; `Logged': whether
%% its reaching it was logged), else `still_room'. One read when it was
%% not.
-spec room(slots()) -> {left, non_neg_integer(), boolean()} | still_room.
room({_, A}) ->
    case atomics:get(A, ?AT_LIMIT) =:= 1 andalso atomics:compare_exchange(A, ?AT_LIMIT, 1, 0) of
        ok ->
            {left, max(0, erlang:monotonic_time() - atomics:get(A, ?SINCE)),
             atomics:get(A, ?LOGGED) =:= 1};
        _ ->
            still_room
    end.

%% @doc Whether the listener is at its limit now, and how many times it
%% has reached it since it started.
-spec saturation(slots()) -> {boolean(), non_neg_integer()}.
saturation({_, A}) ->
    {atomics:get(A, ?AT_LIMIT) =:= 1, atomics:get(A, ?TIMES)}.

%% @doc Whether reaching the limit now is to be logged: no line in the
%% last `Interval' native time units (only one caller gets `{true,
%% Times}', `Times' the count so far); `false' otherwise.
-spec log_due(slots(), integer(), pos_integer()) -> {true, non_neg_integer()} | false.
log_due({_, A}, Now, Interval) ->
    Last = atomics:get(A, ?LAST_LOG),
    case Now - Last >= Interval andalso atomics:compare_exchange(A, ?LAST_LOG, Last, Now) of
        ok ->
            ok = atomics:put(A, ?LOGGED, 1),
            {true, atomics:get(A, ?TIMES)};
        _ ->
            false
    end.
