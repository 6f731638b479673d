%% @doc A listener's drain flag: one `atomics' cell per listener, in its
%% configuration (`drain'), read by the connections and written by the
%% acceptors and {@link falco:drain/2}.
%%
%% `running' until the listener starts to drain; then `draining': every
%% HTTP/1.1 response from then on says `Connection: close' and the
%% connection closes after it, and an idle one closes at once. `immediate'
%% asks the acceptors to stop their connections at once rather than drain
%% them (the old stop: {@link falco:stop_listener/2}). The acceptors tell
%% each connection with a `{falco_drain, Acceptor}' message (the HTTP/1.1
%% loop reads the flag instead when it is busy); see falco_acceptor for
%% what each protocol does with it.
%%
%% @private internal to falco
-module(falco_drain).

-export([new/0, draining/1, mode/1, set/2]).

-opaque flag() :: atomics:atomics_ref().
-type mode() :: running | draining | immediate.
-export_type([flag/0, mode/0]).

%% @doc A flag for a new listener: `running'.
-spec new() -> flag().
new() ->
    atomics:new(1, []).

%% @doc Whether the listener drains or stops (`undefined': a configuration
%% without a flag, as in some tests).
-spec draining(flag() | undefined) -> boolean().
draining(undefined) -> false;
draining(Flag) -> atomics:get(Flag, 1) =/= 0.

%% @doc The listener's mode.
-spec mode(flag()) -> mode().
mode(Flag) ->
    case atomics:get(Flag, 1) of
        0 -> running;
        1 -> draining;
        _ -> immediate
    end.

%% @doc Sets the mode; `running' is never set again once left.
-spec set(flag(), draining | immediate) -> ok.
set(Flag, draining) -> atomics:put(Flag, 1, 1);
set(Flag, immediate) -> atomics:put(Flag, 1, 2).
