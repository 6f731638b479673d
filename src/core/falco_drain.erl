%% @doc A listener's drain flag: `atomics' cells per listener, in its
%% configuration (`drain'), read by the connections and written by the
%% acceptors and {@link falco:drain/2}; the flag also carries the
%% listener's `drain_notice' (ms).
%%
%% `running' until the listener starts to drain; `leaving' first when it
%% has a notice: for that long {@link falco:drain/2} leaves everything
%% serving as usual but {@link falco:ready/1} says false, so that a load
%% balancer's health check takes the node out before its port closes; then
%% `draining': every
%% HTTP/1.1 response from then on says `Connection: close' and the
%% connection closes after it, and an idle one closes at once. `immediate'
%% asks the acceptors to stop their connections at once rather than drain
%% them (the old stop: {@link falco:stop_listener/2}). The acceptors tell
%% each connection with a `{falco_drain, Acceptor}' message (the HTTP/1.1
%% loop reads the flag instead when it is busy); see falco_acceptor for
%% what each protocol does with it.
%%
%% A third cell says whether the listener itself is stopping
%% ({@link stop/1}, set by {@link falco_listener_guard} as its supervisor
%% stops): only then do the acceptors' `terminate' drain the listener and
%% close its listen socket. Acceptors stopped for another reason (their
%% supervisor gave up and is started again) leave the flag and the socket
%% to the acceptors that follow them.
%%
%% @private internal to falco
-module(falco_drain).

-export([new/0, new/1, draining/1, mode/1, set/2, notice/1, stop/1, stopping/1]).

-opaque flag() :: atomics:atomics_ref().
-type mode() :: running | leaving | draining | immediate.

%% The mode's cell: 0 running, 1 draining, 2 immediate, 3 leaving.
-define(MODE, 1).
-define(NOTICE, 2).
%% 1 once the listener stops
-define(STOPPING, 3).
-export_type([flag/0, mode/0]).

%% @doc A flag for a new listener: `running', no notice.
-spec new() -> flag().
new() ->
    new(0).

%% @doc A flag for a new listener with a drain notice of `Notice' ms.
-spec new(non_neg_integer()) -> flag().
new(Notice) ->
    Flag = atomics:new(3, []),
    ok = atomics:put(Flag, ?NOTICE, Notice),
    Flag.

%% @doc The listener's drain notice, ms.
-spec notice(flag()) -> non_neg_integer().
notice(Flag) ->
    atomics:get(Flag, ?NOTICE).

%% @doc Whether the listener drains or stops (`undefined': a configuration
%% without a flag, as in some tests).
-spec draining(flag() | undefined) -> boolean().
draining(undefined) -> false;
draining(Flag) ->
    Mode = atomics:get(Flag, ?MODE),
    Mode =:= 1 orelse Mode =:= 2.

%% @doc The listener's mode.
-spec mode(flag()) -> mode().
mode(Flag) ->
    case atomics:get(Flag, ?MODE) of
        0 -> running;
        1 -> draining;
        2 -> immediate;
        3 -> leaving
    end.

%% @doc Sets the mode; `running' is never set again once left, and
%% `leaving' is set only from `running'.
-spec set(flag(), leaving | draining | immediate) -> ok.
set(Flag, leaving) ->
    _ = atomics:compare_exchange(Flag, ?MODE, 0, 3),
    ok;
set(Flag, draining) -> atomics:put(Flag, ?MODE, 1);
set(Flag, immediate) -> atomics:put(Flag, ?MODE, 2).

%% @doc Marks the listener as stopping (its supervisor is shutting down).
-spec stop(flag()) -> ok.
stop(Flag) ->
    atomics:put(Flag, ?STOPPING, 1).

%% @doc Whether the listener is stopping (`undefined': never).
-spec stopping(flag() | undefined) -> boolean().
stopping(undefined) -> false;
stopping(Flag) ->
    atomics:get(Flag, ?STOPPING) =:= 1.
