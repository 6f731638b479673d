%% @doc An acceptor, and the supervisor of the connections it accepted.
%%
%% It keeps one connection process ({@link falco_conn}) waiting in `accept'
%% on the shared listen socket and starts the next one as soon as that one
%% has a connection. The connection process accepts for itself, so the
%% socket is born owned by the process that serves it: no ownership
%% transfer and no hand-off message (on gen_tcp's socket backend each of
%% those is a call through the socket's own server process).
%%
%% It is an OTP special process (proc_lib, `sys', answered while it waits
%% for messages and while it drains): it traps exits, is the
%% parent of every connection process it started, and answers
%% `supervisor:which_children/1' and `supervisor:count_children/1' with
%% them. A connection that ends is forgotten at once (its exit message is
%% the next one handled, never scanned past). When its own supervisor stops
%% it, it asks each connection to stop (`shutdown') and waits for them, at
%% most `shutdown_timeout', before killing what is left; no crash report
%% is written for a listener that stops.
%%
%% A connection that ends abnormally (killed, a linked process's crash,
%% `max_heap_size', an exception in falco's own code) is reported here,
%% once, as one line of at most 4096 characters naming the listener, the
%% process and the reason; a connection process does not write a crash
%% report of its own: {@link conn/6} starts it without proc_lib's and turns
%% an exception into an exit with the stack's arguments dropped. `normal',
%% `shutdown', `{shutdown, _}' and `closed' are silent, and so is a
%% handler's crash: the pipeline answered it with a 500 and reported it,
%% and the connection went on.
%%
%% `max_connections': a slot ({@link falco_slots}) is taken before a
%% process starts waiting in accept and given back when that process ends
%% (seen here, whatever way it ends). At the limit no process waits, the
%% kernel backlog holds the queue, and the acceptor looks again every
%% 10 ms; {@link falco_saturation} tells of it. On `emfile' or `enfile' it backs off 100 ms instead of spinning.
%%
%% @private internal to falco
-module(falco_acceptor).

-export([start_link/3, init/4, conn/6, share_conf/2, conf/1]).
-export([system_continue/3, system_terminate/4, system_code_change/4, system_get_state/1]).

-define(CONF_KEY(Name), {?MODULE, conf, Name}).

-record(acc, {parent :: pid(),
              name :: atom(),
              lsock :: falco_transport:socket(),
              conf :: map(),
              slots :: falco_slots:slots(),
              index :: pos_integer(),
              max :: pos_integer() | infinity,
              waiting :: pid() | undefined,
              retry :: reference() | undefined,
              %% each connection's accept time (native monotonic)
              conns = #{} :: #{pid() => integer()},
              %% each process's cell of counts (falco_stats), the waiting
              %% one's included: given back when the process ends
              cells = #{} :: #{pid() => falco_stats:cell()},
              stats :: falco_stats:stats(),
              %% connections killed by their handler_timeout (already
              %% logged, by falco_handler_deadline): their `killed' is quiet
              quiet = #{} :: #{pid() => true},
              events :: falco_telemetry:emitter(),
              drain :: falco_drain:flag()}).

%% A drain in progress (drain/3): kept apart from #acc{} so that the
%% acceptor's `sys' callbacks can continue it where a system message
%% found it.
-record(drain, {deadline :: integer() | infinity,
                %% connections drained so far, those accepted meanwhile
                %% included
                total :: non_neg_integer(),
                %% the listen socket: `open' until close_listen/2 closes it
                socket :: open | closed,
                start :: integer(),
                %% what comes after: the answer to falco:drain/2, then the
                %% loop; or the acceptor's end (terminate/2)
                then :: {reply, pid(), reference()} | {stop, term()},
                debug :: [sys:dbg_opt()]}).

-define(FULL_RETRY, 10).
%% How long an acceptor waits without a message before it collects its
%% heap, ms (loop/2).
-define(IDLE_GC, 100).
-define(EMFILE_RETRY, 100).
%% How often a draining acceptor looks whether it may close the listen
%% socket (drain/2), ms.
-define(CLOSE_POLL, 5).
%% The most characters of the line reporting a connection's abnormal end.
-define(REPORT_CHARS, 4096).

%% @doc Starts acceptor `Index' of listener `Name', whose configuration
%% (its listen socket `lsock' included) the listener's supervisor shared
%% ({@link share_conf/2}). The start arguments are kept this small because
%% a supervisor's report of a restart prints them: the configuration holds
%% the TLS options, and a TLS listen socket every ssl option.
-spec start_link(atom(), falco_slots:slots(), pos_integer()) -> {ok, pid()}.
start_link(Name, Slots, Index) ->
    proc_lib:start_link(?MODULE, init, [self(), Name, Slots, Index]).

%% @private
-spec init(pid(), atom(), falco_slots:slots(), pos_integer()) -> no_return().
init(Parent, Name, Slots, Index) ->
    process_flag(trap_exit, true),
    ok = falco_slots:reset(Slots, Index),
    Conf = #{lsock := LSock} = conf(Name),
    proc_lib:init_ack(Parent, {ok, self()}),
    S = #acc{parent = Parent, name = Name, lsock = LSock, conf = Conf, slots = Slots,
             index = Index, max = maps:get(max_connections, Conf),
             drain = maps:get(drain, Conf), stats = maps:get(stats, Conf),
             events = falco_telemetry:for(Conf)},
    loop(next(S), []).

%% Starts a waiting process if none waits, a slot is free and no retry is
%% pending; otherwise a timer brings us back.
next(S = #acc{waiting = undefined, retry = undefined, slots = Slots, index = I, max = Max,
              drain = Drain, name = Name, events = E}) ->
    case falco_drain:draining(Drain) of
        true ->
            retry(?FULL_RETRY, S);
        false ->
            case falco_slots:claim(Slots, I, Max) of
                true ->
                    ok = falco_saturation:room(Slots, Name, E),
                    Cell = falco_stats:cell(),
                    Pid = start_conn(S, Cell),
                    S#acc{waiting = Pid, cells = (S#acc.cells)#{Pid => Cell}};
                false ->
                    ok = falco_saturation:full(Slots, Name, E, Max),
                    retry(?FULL_RETRY, S)
            end
    end;
next(S) ->
    S.

%% A connection process, linked to us (its parent). Not proc_lib:
%% proc_lib's crash report of an exception is not bounded, and the exit
%% comes here anyway; the process gets proc_lib's `$ancestors' and
%% `$initial_call' so tools see it as they would.
start_conn(#acc{name = Name, lsock = LSock}, Cell) ->
    Ancestors = [self() | case get('$ancestors') of
                              L when is_list(L) -> L;
                              undefined -> []
                          end],
    spawn_opt(?MODULE, conn, [Ancestors, self(), Name, LSock, ?CONF_KEY(Name), Cell], [link]).

%% @doc Shares the configuration of listener `Name' (its supervisor does,
%% before it starts the acceptors) with the acceptors and the connection
%% processes, in `persistent_term': a term read from there is a literal, never copied into the
%% reader's heap, so thousands of connections share one copy instead of
%% holding about 2 KB each (the validated options; most of a hibernated
%% HTTP/1.1 connection, 2026-11-25). Putting a term equal to the one
%% stored is free, so the acceptors of a listener (and its restarts with
%% the same options) share one entry; a listener started again under the
%% same name with other options replaces it, at the cost of one scan of
%% every process (persistent_term's rule), as falco_router's swaps do.
-spec share_conf(atom(), map()) -> ok.
share_conf(Name, Conf) ->
    case persistent_term:get(?CONF_KEY(Name), undefined) of
        Conf -> ok;
        _ -> persistent_term:put(?CONF_KEY(Name), Conf)
    end.

%% @doc The configuration shared for listener `Name' ({@link share_conf/2}).
-spec conf(atom()) -> map().
conf(Name) ->
    persistent_term:get(?CONF_KEY(Name)).

%% @private The entry of a connection process: {@link falco_conn:init/5},
%% with an error or throw turned into the exit it would have been, the
%% arguments of its stack dropped (they can hold a whole request), so that
%% neither the runtime nor proc_lib writes a report: we do, once.
-spec conn([pid()], pid(), atom(), falco_transport:socket(), {?MODULE, conf, atom()},
           falco_stats:cell()) -> ok.
conn(Ancestors, Parent, Name, LSock, ConfKey, Cell) ->
    put('$ancestors', Ancestors),
    put('$initial_call', {falco_conn, init, 5}),
    try
        falco_conn:init(Parent, Name, LSock, persistent_term:get(ConfKey), Cell)
    catch
        error:Reason:Stack -> exit({Reason, falco_report:without_args(Stack)});
        throw:Value:Stack -> exit({{nocatch, Value}, falco_report:without_args(Stack)})
    end.

retry(Ms, S) ->
    S#acc{retry = erlang:start_timer(Ms, self(), retry)}.

%% Between bursts of connections the acceptor is idle, often for the life
%% of a keep-alive workload: after ?IDLE_GC ms without a message its heap
%% is collected, so that what the last burst left (the heap it grew to and
%% an old heap of promoted garbage: 10.6-10.8 KB per acceptor after 50
%% accepts, 2.8 KB collected; 2026-11-29) is not kept until the next one.
%% The wait after that has no timeout: an idle acceptor is collected once.
loop(S, Debug) ->
    receive
        Msg -> handle(Msg, S, Debug)
    after ?IDLE_GC ->
        _ = erlang:garbage_collect(),
        receive
            Msg -> handle(Msg, S, Debug)
        end
    end.

handle(Msg, S = #acc{parent = Parent, retry = Retry}, Debug) ->
    case Msg of
        {falco_accepted, Pid} when Pid =:= S#acc.waiting ->
            loop(next(accepted(Pid, S)), Debug);
        {falco_accept_failed, Pid, Reason} when Pid =:= S#acc.waiting ->
            %% It ends by itself; its exit gives the slot back.
            loop(accept_failed(Reason, S), Debug);
        {'EXIT', Parent, Reason} ->
            terminate(Reason, S);
        {'EXIT', Pid, Reason} ->
            loop(next(exited(Pid, Reason, S)), Debug);
        {falco_deadline_killed, Pid} when is_map_key(Pid, S#acc.conns) ->
            loop(S#acc{quiet = (S#acc.quiet)#{Pid => true}}, Debug);
        {timeout, Retry, retry} ->
            loop(next(S#acc{retry = undefined}), Debug);
        {falco_drain, From, Ref, Deadline} ->
            drain(Deadline, S, {reply, From, Ref}, Debug);
        {system, From, Request} ->
            sys:handle_system_msg(Request, From, Parent, ?MODULE, Debug, S);
        {'$gen_call', From, Request} ->
            _ = gen:reply(From, supervisor_call(Request, S)),
            loop(S, Debug);
        _ ->
            loop(S, Debug)
    end.

%% The waiting process has a connection: it holds a slot as a connection now.
accepted(Pid, S = #acc{slots = Slots, index = I, conns = Conns, name = Name, events = E}) ->
    ok = falco_slots:accepted(Slots, I),
    ok = falco_stats:accepted(S#acc.stats),
    Now = erlang:monotonic_time(),
    ok = accepted_event(E, Now, Name, Pid),
    S#acc{waiting = undefined, conns = Conns#{Pid => Now}}.

accepted_event(E, Now, Name, Pid) ->
    falco_telemetry:emit(E, [falco, connection, accepted],
                         fun() -> {#{monotonic_time => Now, system_time => erlang:system_time()},
                                   #{listener => Name, pid => Pid}}
                         end).

accept_failed(Reason, S) when Reason =:= emfile; Reason =:= enfile ->
    logger:warning("falco: listener ~p out of file descriptors (~p); backing off ~b ms",
                   [S#acc.name, Reason, ?EMFILE_RETRY]),
    retry(?EMFILE_RETRY, S);
accept_failed(closed, S = #acc{drain = Drain}) ->
    case falco_drain:draining(Drain) of
        %% we closed it
        true -> S;
        false -> accept_failed_closed(S)
    end;
accept_failed(_Reason, S) ->
    S.

-spec accept_failed_closed(#acc{}) -> no_return().
accept_failed_closed(S) ->
    %% The listen socket is gone: this listener cannot serve anyone; our
    %% supervisors decide what comes next.
    terminate({shutdown, listen_socket_closed}, S).

exited(Pid, Reason, S = #acc{waiting = Pid, slots = Slots, index = I}) ->
    ok = falco_slots:release(Slots, I, waiting),
    ok = report_exit(Pid, Reason, S),
    settle(Pid, S#acc{waiting = undefined});
exited(Pid, Reason, S = #acc{conns = Conns, slots = Slots, index = I, quiet = Quiet}) ->
    case maps:take(Pid, Conns) of
        {Since, Rest} ->
            ok = falco_slots:release(Slots, I, connection),
            ok = case maps:is_key(Pid, Quiet) andalso Reason =:= killed of
                     true -> ok;
                     false -> report_exit(Pid, Reason, S)
                 end,
            ok = closed(Pid, Since, Reason, S),
            settle(Pid, S#acc{conns = Rest, quiet = maps:remove(Pid, Quiet)});
        error ->
            S
    end.

%% The process is gone, killed or not: the requests in flight and the
%% protocol it was counted under are given back (falco_stats).
settle(Pid, S = #acc{cells = Cells, stats = Stats}) ->
    case maps:take(Pid, Cells) of
        {Cell, Rest} ->
            ok = falco_stats:settle(Stats, Cell),
            S#acc{cells = Rest};
        error ->
            S
    end.

closed(Pid, Since, Reason, #acc{name = Name, events = E}) ->
    falco_telemetry:emit(E, [falco, connection, closed],
                         fun() ->
                                 Now = erlang:monotonic_time(),
                                 {#{duration => Now - Since, monotonic_time => Now},
                                  #{listener => Name, pid => Pid, reason => Reason}}
                         end).

%% One bounded line for a connection that did not end the way connections
%% end (formatted with a bound, so a reason holding a request body costs
%% milliseconds, not a multi-megabyte line).
report_exit(_Pid, Reason, _S)
  when Reason =:= normal; Reason =:= shutdown; Reason =:= closed ->
    ok;
report_exit(_Pid, {shutdown, _}, _S) ->
    ok;
report_exit(Pid, Reason, #acc{name = Name}) ->
    Line = falco_report:format("falco: listener ~0p: connection ~0p ended: ~0p",
                               [Name, Pid, Reason], ?REPORT_CHARS),
    logger:error("~ts", [Line], #{falco_listener => Name}).

%% The calls of `supervisor' that make sense for a pool of identical
%% temporary workers: which_children and count_children.
supervisor_call(which_children, #acc{conns = Conns}) ->
    [{undefined, Pid, worker, [falco_conn]} || Pid <- maps:keys(Conns)];
supervisor_call(count_children, #acc{conns = Conns}) ->
    N = map_size(Conns),
    [{specs, 1}, {active, N}, {supervisors, 0}, {workers, N}];
supervisor_call(falco_connections, #acc{conns = Conns}) ->
    %% falco:connection_list/1: each connection and its accept time
    maps:to_list(Conns);
supervisor_call(_, _) ->
    {error, not_supported}.

%% -- draining and stopping ----------------------------------------------------

%% The listener drains (falco:drain/2, or it stops: see terminate/2): new
%% connections are refused once the listen socket is closed, and every
%% connection is told (`{falco_drain, self()}': HTTP/1.1 closes when idle
%% or after the response in progress, which says `Connection: close';
%% HTTP/2 sends the two-step GOAWAY and ends when its open streams have; a
%% WebSocket session closes with 1001). Over TCP on Linux's inet driver
%% the listen socket is closed at once, which ends the waits in accept
%% (falco_conn); elsewhere only once no process of the listener waits in
%% accept (each looks at the drain flag at least every 100 ms), since
%% closing it under one can lose the connection it is taking. What they
%% accept until then is served and drained like the rest. Every acceptor
%% closes it (the first close counts).
%% Ends at `Deadline' at the latest (what is left then is stopped as
%% terminate/2 does), and goes on as `Then' says: for falco:drain/2 the
%% answer, with how many connections there were and how many were left
%% to stop, then the loop; for terminate/2 the acceptor's end. The drain
%% answers `sys' too (its own state, #drain{}, kept with the acceptor's).
drain(Deadline, S = #acc{conns = Conns, drain = Drain, name = Name, index = I, events = E},
      Then, Debug) ->
    ok = falco_drain:set(Drain, draining),
    _ = [P ! {falco_drain, self()} || P <- maps:keys(Conns)],
    Start = erlang:monotonic_time(),
    ok = falco_telemetry:execute(E, [falco, drain, start],
                                 #{monotonic_time => Start, connections => map_size(Conns)},
                                 #{listener => Name, acceptor => I}),
    drain_loop(#drain{deadline = Deadline, total = map_size(Conns), socket = open,
                      start = Start, then = Then, debug = Debug}, S).

drain_loop(D = #drain{socket = Socket}, S) ->
    case {Socket, S} of
        {closed, #acc{waiting = undefined, conns = Conns}} when map_size(Conns) =:= 0 ->
            drained(D, S, 0);
        {open, _} ->
            case close_listen(S, false) of
                closed -> drain_loop(D#drain{socket = closed}, S);
                open -> drain_wait(D, S)
            end;
        {closed, _} ->
            drain_wait(D, S)
    end.

drain_wait(D = #drain{deadline = Deadline, total = Total, debug = Debug},
           S = #acc{parent = Parent, conns = Conns}) ->
    Wait = case D#drain.socket of
               open -> min(?CLOSE_POLL, falco_transport:remaining(Deadline));
               closed -> falco_transport:remaining(Deadline)
           end,
    receive
        {falco_accepted, Pid} when Pid =:= S#acc.waiting ->
            %% accepted before it saw the flag: it drains too
            Pid ! {falco_drain, self()},
            drain_loop(D#drain{total = Total + 1}, accepted(Pid, S));
        {'EXIT', Parent, Reason} ->
            drain_stop(Reason, S);
        {'EXIT', Pid, Reason} ->
            drain_loop(D, exited(Pid, Reason, S));
        {'$gen_call', From, Request} ->
            _ = gen:reply(From, supervisor_call(Request, S)),
            drain_loop(D, S);
        {system, From, Request} ->
            sys:handle_system_msg(Request, From, Parent, ?MODULE, Debug, {D, S})
    after Wait ->
        case falco_transport:remaining(Deadline) of
            0 ->
                _ = close_listen(S, true),
                stop_all(S),
                drained(D, release_all(S), map_size(Conns));
            _ ->
                drain_loop(D, S)
        end
    end.

-spec drain_stop(term(), #acc{}) -> no_return().
drain_stop(Reason, S) ->
    _ = close_listen(S, true),
    stop_all(S),
    exit(Reason).

drained(#drain{total = Total, start = Start, then = Then, debug = Debug}, S = #acc{events = E},
        Left) ->
    Stop = erlang:monotonic_time(),
    ok = falco_telemetry:execute(E, [falco, drain, stop],
                                 #{duration => Stop - Start, monotonic_time => Stop,
                                   connections => Total, completed => Total - Left,
                                   stopped => Left},
                                 #{listener => S#acc.name, acceptor => S#acc.index}),
    case Then of
        {reply, From, Ref} ->
            From ! {Ref, self(), Total, Left},
            loop(S, Debug);
        {stop, Reason} ->
            stop_all(S),
            exit(quiet(Reason))
    end.

%% Closes the listen socket when no process of the listener waits in
%% accept any more, or at once when `Now' or when a wait there cannot lose
%% a connection to the close (falco_transport:own_accept/2: the waiting
%% processes then end with `{error, closed}'); returns whether it is
%% closed.
close_listen(#acc{slots = Slots, lsock = LSock, conf = Conf}, Now) ->
    Kind = maps:get(transport, Conf),
    case Now orelse falco_transport:own_accept(Kind, LSock)
        orelse falco_slots:waiting(Slots) =:= 0 of
        true ->
            _ = falco_transport:close(Kind, LSock),
            closed;
        false ->
            open
    end.

%% The slots of processes stopped by stop_all/1 (whose exits are then not
%% looked at).
release_all(S = #acc{waiting = Waiting, conns = Conns, slots = Slots, index = I}) ->
    _ = [falco_slots:release(Slots, I, waiting) || is_pid(Waiting)],
    _ = [falco_slots:release(Slots, I, connection) || _ <- maps:keys(Conns)],
    _ = [falco_stats:settle(S#acc.stats, Cell) || Cell <- maps:values(S#acc.cells)],
    S#acc{waiting = undefined, conns = #{}, cells = #{}}.

%% Stops the listener's part held here. When the listener stops
%% (falco_listener_guard marked it), its connections drain first, for at
%% most shutdown_timeout, unless the stop is `immediate'
%% (falco:stop_listener/2), and the listen socket is closed. When only the
%% acceptors stop (their supervisor gave up and is started again) the
%% socket and the drain flag are left to the acceptors that follow, and
%% only this acceptor's connections are stopped.
-spec terminate(term(), #acc{}) -> no_return().
terminate(Reason, S = #acc{drain = Drain, conf = Conf}) ->
    case falco_drain:stopping(Drain) andalso falco_drain:mode(Drain) of
        Mode when Mode =:= false; Mode =:= immediate ->
            stop_all(S),
            exit(quiet(Reason));
        _ ->
            Deadline = falco_transport:deadline(maps:get(shutdown_timeout, Conf)),
            drain(Deadline, S, {stop, Reason}, [])
    end.

%% The acceptor's own exit: its supervisor's reason when that is a quiet
%% one, else `{shutdown, Reason}' (a supervisor killed in a storm took its
%% acceptors with it: each would write a crash report of `killed', four
%% lines a time, under the supervisor's own report of the same death).
quiet(Reason) when Reason =:= normal; Reason =:= shutdown -> Reason;
quiet(Reason = {shutdown, _}) -> Reason;
quiet(Reason) -> {shutdown, Reason}.

%% Stops the waiting process and every connection: `shutdown' first, then
%% `kill' for what is still there after shutdown_timeout. Their exits are
%% expected: none is reported.
stop_all(#acc{waiting = Waiting, conns = Conns, conf = Conf}) ->
    Pids = [P || P <- [Waiting], is_pid(P)] ++ maps:keys(Conns),
    Mons = maps:from_list([{monitor(process, P), P} || P <- Pids]),
    _ = [exit(P, shutdown) || P <- Pids],
    Deadline = falco_transport:deadline(maps:get(shutdown_timeout, Conf)),
    await_down(Mons, Deadline).

await_down(Mons, _Deadline) when map_size(Mons) =:= 0 ->
    ok;
await_down(Mons, Deadline) ->
    Wait = falco_transport:remaining(Deadline),
    receive
        {'DOWN', Ref, process, _, _} -> await_down(maps:remove(Ref, Mons), Deadline)
    after Wait ->
        _ = [exit(P, kill) || P <- maps:values(Mons)],
        await_killed(Mons)
    end.

await_killed(Mons) when map_size(Mons) =:= 0 ->
    ok;
await_killed(Mons) ->
    receive
        {'DOWN', Ref, process, _, _} -> await_killed(maps:remove(Ref, Mons))
    end.

%% -- sys ------------------------------------------------------------------------
%% The state is the acceptor's, or with a drain in progress the drain's
%% and the acceptor's (drain_wait/2): each continues where it was.

-type sys_state() :: #acc{} | {#drain{}, #acc{}}.

%% @private
-spec system_continue(pid(), [sys:dbg_opt()], sys_state()) -> no_return().
system_continue(_Parent, Debug, {D = #drain{}, S}) ->
    drain_loop(D#drain{debug = Debug}, S);
system_continue(_Parent, Debug, S) ->
    loop(S, Debug).

%% @private While it drains, as its parent's exit then does: the listen
%% socket closed, the connections stopped.
-spec system_terminate(term(), pid(), [sys:dbg_opt()], sys_state()) -> no_return().
system_terminate(Reason, _Parent, _Debug, {#drain{}, S}) ->
    drain_stop(Reason, S);
system_terminate(Reason, _Parent, _Debug, S) ->
    terminate(Reason, S).

%% @private
-spec system_code_change(sys_state(), module(), term(), term()) -> {ok, sys_state()}.
system_code_change(State, _Module, _OldVsn, _Extra) ->
    {ok, State}.

%% @private
-spec system_get_state(sys_state()) -> {ok, map()}.
system_get_state({#drain{}, S}) ->
    {ok, State} = system_get_state(S),
    {ok, State#{draining => true}};
system_get_state(#acc{name = Name, index = I, waiting = Waiting, conns = Conns, max = Max,
                      retry = Retry, conf = Conf}) ->
    {ok, #{listener => Name, acceptor => I, waiting => Waiting,
           connections => map_size(Conns), max_connections => Max,
           max_requests_in_flight => maps:get(max_requests_in_flight, Conf),
           backing_off => Retry =/= undefined, draining => false}}.
