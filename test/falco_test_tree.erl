%% Test helpers for a listener's process tree and the log: the acceptors
%% of a listener (listener_sup > acceptor_sup > acceptor), the connection
%% processes they supervise, a node's binary memory after a collection,
%% and a logger handler that forwards every event to a test process.
%% Listeners themselves are started by falco_test_listener.
-module(falco_test_tree).

-export([acceptors/1, conns/1, one_conn/1]).
-export([binary_after_gc/0]).
-export([capture_log/1, capture_log/2, log/2, logged/0]).

%% The acceptors of the listener whose supervisor is `Sup'.
acceptors(Sup) ->
    {acceptors, AccSup, supervisor, _} = lists:keyfind(acceptors, 1, supervisor:which_children(Sup)),
    [Pid || {{acceptor, _}, Pid, supervisor, _} <- supervisor:which_children(AccSup)].

%% Its connection processes, as their acceptors report them.
conns(Sup) ->
    lists:append([[Pid || {_, Pid, worker, [falco_conn]} <- supervisor:which_children(A)]
                  || A <- acceptors(Sup)]).

%% Its only connection process, once there is exactly one.
one_conn(Sup) ->
    ok = falco_test_client:wait_until(fun() -> length(conns(Sup)) =:= 1 end, 5000),
    [Pid] = conns(Sup),
    Pid.

%% The node's binary memory after a moment and a collection of every
%% process (call it in a peer with peer:call/5).
binary_after_gc() ->
    timer:sleep(300),
    _ = [erlang:garbage_collect(P) || P <- processes()],
    erlang:memory(binary).

%% A logger handler `Id' that sends `{log, Event}' to the calling process
%% for every event at `Level' or above (all by default). Remove it with
%% logger:remove_handler(Id).
capture_log(Id) ->
    capture_log(Id, all).

capture_log(Id, Level) ->
    ok = logger:add_handler(Id, ?MODULE, #{config => #{pid => self()}, level => Level}).

%% @private the logger handler callback
log(Event, #{config := #{pid := Pid}}) ->
    Pid ! {log, Event}.

%% The events received so far.
logged() ->
    receive
        {log, Event} -> [Event | logged()]
    after 0 ->
        []
    end.
