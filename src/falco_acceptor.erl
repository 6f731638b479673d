%% @doc An acceptor: accepts on the shared listen socket and hands each
%% connection to a new process running {@link falco_http1_conn}.
%%
%% `max_connections' is enforced with a shared counter the connections
%% decrement when they end: at the limit the acceptor stops accepting (the
%% kernel backlog holds the queue) and looks again every 10 ms. On `emfile'
%% or `enfile' it backs off 100 ms instead of spinning. It traps exits so
%% a connection that dies abnormally never takes the acceptor (and its
%% siblings) down; those exit messages are dropped on every turn.
-module(falco_acceptor).

-export([start_link/4, init/4]).

%% @doc Starts an acceptor for listener `Name'.
-spec start_link(atom(), inet:socket(), map(), counters:counters_ref()) -> {ok, pid()}.
start_link(Name, LSock, Conf, Counter) ->
    {ok, proc_lib:spawn_link(?MODULE, init, [self(), Name, LSock, Conf#{falco_counter => Counter}])}.

%% @private
-spec init(pid(), atom(), inet:socket(), map()) -> no_return().
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
            accept(Name, LSock, Conf, Counter)
    end,
    loop(Name, LSock, Conf, Counter, Max).

accept(Name, LSock, Conf, Counter) ->
    case gen_tcp:accept(LSock) of
        {ok, Sock} ->
            ok = claim_slot(Counter, maps:get(max_connections, Conf)),
            Pid = falco_http1_conn:start(Name, Sock, Conf, Counter),
            case gen_tcp:controlling_process(Sock, Pid) of
                ok ->
                    Pid ! {falco_socket, self()},
                    ok;
                {error, _} ->
                    exit(Pid, kill),
                    counters:sub(Counter, 1, 1),
                    _ = gen_tcp:close(Sock),
                    ok
            end,
            ok;
        {error, Reason} when Reason =:= emfile; Reason =:= enfile ->
            logger:warning("falco: listener ~p out of file descriptors (~p); "
                           "backing off 100 ms", [Name, Reason]),
            receive after 100 -> ok end;
        {error, closed} ->
            %% The listener is gone; take our connections with us.
            exit(shutdown);
        {error, _} ->
            ok
    end.

%% The other acceptors were blocked in accept too, so the limit checked
%% before accepting may have been reached meanwhile: take a slot only if one
%% is free (add, then check, so two acceptors can never both take the last
%% one), else hold the accepted socket unserved and look again every 10 ms.
claim_slot(Counter, Max) ->
    counters:add(Counter, 1, 1),
    case counters:get(Counter, 1) > Max of
        true ->
            counters:sub(Counter, 1, 1),
            flush_exits(get(falco_parent)),
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
