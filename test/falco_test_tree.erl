%% Test helpers for listeners and the log: a listener on a free port (in
%% this BEAM or in one of its own), the acceptors of a listener
%% (listener_sup > acceptor_sup > acceptor), the connection processes they
%% supervise, and a logger handler that forwards every event to a test
%% process.
-module(falco_test_tree).

-export([acceptors/1, conns/1, one_conn/1, listener/3]).
-export([peer_listener/3, peer_start/3, binary_after_gc/0]).
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

%% A listener `Name' on a free loopback port with `Handler' and `Opts';
%% returns its supervisor and port.
listener(Name, Handler, Opts) ->
    {ok, Sup} = falco:start_listener(Name, maps:merge(#{port => 0, ip => {127, 0, 0, 1},
                                                        handler => Handler}, Opts)),
    {ok, Port} = falco:port(Name),
    {Sup, Port}.

%% A listener in a BEAM of its own (`peer', over standard_io), for cases
%% that read the server's memory: nothing else in that node allocates or
%% frees, where in the suite's node other cases' garbage can come and go
%% between two readings. `Handler' must be an external fun (fun M:F/1).
%% Returns the peer and the port; stop it with peer:stop/1.
peer_listener(Name, Handler, Opts) ->
    Paths = [code:lib_dir(falco, ebin), filename:dirname(code:which(?MODULE))],
    {ok, Peer, _} = peer:start_link(#{connection => standard_io,
                                      args => lists:append([["-pa", P] || P <- Paths])}),
    {ok, Port} = peer:call(Peer, ?MODULE, peer_start, [Name, Handler, Opts], 15000),
    {Peer, Port}.

%% @private run in the peer of peer_listener/3
peer_start(Name, Handler, Opts) ->
    {ok, _} = application:ensure_all_started(falco),
    {_Sup, Port} = listener(Name, Handler, Opts),
    {ok, Port}.

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
