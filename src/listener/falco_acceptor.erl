%% @doc An acceptor: keeps one connection process waiting in `accept' on
%% the shared listen socket, and starts the next one as soon as that one
%% has a connection.
%%
%% The connection process accepts for itself ({@link accept/4}), so the
%% socket is born owned by the process that serves it: no ownership
%% transfer and no hand-off message. On gen_tcp's socket backend each of
%% those is a call through the socket's own server process, and under load
%% every such hop waits its turn behind the busy connections. For TLS the
%% accept is `ssl:transport_accept/1' (TCP only, in the same waiting
%% process); the handshake follows in that process, never in the acceptor.
%%
%% `max_connections' is enforced with a shared counter the connections
%% decrement when they end: at the limit the acceptor starts no waiting
%% process (the kernel backlog holds the queue) and looks again every
%% 10 ms. On `emfile' or `enfile' it backs off 100 ms instead of spinning.
%% It traps exits so a connection that dies abnormally never takes the
%% acceptor (and its siblings) down; those exit messages are dropped on
%% every turn.
-module(falco_acceptor).

-export([start_link/4, init/4, accept/4]).

%% @doc Starts an acceptor for listener `Name'.
-spec start_link(atom(), falco_transport:socket(), map(), counters:counters_ref()) -> {ok, pid()}.
start_link(Name, LSock, Conf, Counter) ->
    {ok, proc_lib:spawn_link(?MODULE, init, [self(), Name, LSock, Conf#{falco_counter => Counter}])}.

%% @private
-spec init(pid(), atom(), falco_transport:socket(), map()) -> no_return().
init(Parent, Name, LSock, Conf) ->
    process_flag(trap_exit, true),
    put(falco_parent, Parent),
    loop(Name, LSock, Conf, maps:get(falco_counter, Conf), maps:get(max_connections, Conf)).

loop(Name, LSock, Conf, Counter, Max) ->
    flush_exits(get(falco_parent)),
    case counters:get(Counter, 1) >= Max of
        true ->
            receive after 10 -> ok end;
        false ->
            wait_accepted(Name, falco_http1_conn:start(Name, LSock, Conf, Counter))
    end,
    loop(Name, LSock, Conf, Counter, Max).

%% The connection process is in accept; it reports how that went.
wait_accepted(Name, Pid) ->
    Parent = get(falco_parent),
    receive
        {falco_accepted, Pid} ->
            ok;
        {falco_accept_failed, Pid, Reason} ->
            failed(Name, Reason);
        {'EXIT', Parent, Reason} ->
            exit(Reason);
        {'EXIT', Pid, _} ->
            ok
    end.

failed(Name, Reason) when Reason =:= emfile; Reason =:= enfile ->
    logger:warning("falco: listener ~p out of file descriptors (~p); "
                   "backing off 100 ms", [Name, Reason]),
    receive after 100 -> ok end;
failed(_Name, closed) ->
    %% The listener is gone; take our connections with us.
    exit(shutdown);
failed(_Name, _Reason) ->
    ok.

%% @doc Runs in a new connection process: accepts one connection on
%% `LSock' (`tcp' or `tls', as the listener's `transport' says), takes a
%% connection slot and tells `Acceptor', which then starts the next waiting
%% process. `stop' when accepting failed (the acceptor is told why). The
%% caller gives the slot back when the connection ends.
-spec accept(pid(), falco_transport:socket(), map(), counters:counters_ref()) ->
          {ok, falco_transport:socket()} | stop.
accept(Acceptor, LSock, #{transport := Kind, max_connections := Max}, Counter) ->
    case falco_transport:accept(Kind, LSock) of
        {ok, Sock} ->
            ok = claim_slot(Counter, Max),
            Acceptor ! {falco_accepted, self()},
            {ok, Sock};
        {error, Reason} ->
            Acceptor ! {falco_accept_failed, self(), Reason},
            stop
    end.

%% The other acceptors' processes were waiting in accept too, so the limit
%% checked before this one started may have been reached meanwhile: take a
%% slot only if one is free (add, then check, so two can never both take
%% the last one), else hold the accepted socket unserved and look again
%% every 10 ms.
claim_slot(Counter, Max) ->
    counters:add(Counter, 1, 1),
    case counters:get(Counter, 1) > Max of
        true ->
            counters:sub(Counter, 1, 1),
            receive after 10 -> ok end,
            claim_slot(Counter, Max);
        false ->
            ok
    end.

%% Exits of connections are dropped; the exit of our supervisor is obeyed.
flush_exits(Parent) ->
    receive
        {'EXIT', Parent, Reason} -> exit(Reason);
        {'EXIT', _, _} -> flush_exits(Parent)
    after 0 ->
        ok
    end.
