%% @doc falco's public API: start, stop and inspect listeners.
%%
%% ```
%% {ok, _} = falco:start_listener(my_http, #{port => 8080, handler => my_handler}).
%% '''
%% A listener is a supervision tree under falco's application supervisor
%% (or under yours, through {@link child_spec/2}). Its own supervisors
%% restart what fails in it; one that gives up (more than 10 restarts in
%% 10 s at one level) stops that listener alone: under falco's supervisor
%% it is not restarted, so its storm can never use up the restarts of
%% falco's supervisor and stop the application with every other listener
%% (docs/internals/architecture.md, "Restart intensity"). Options are validated
%% when the listener starts; see {@link falco_opts:defaults/0} for every
%% option and its default, and docs/guide for the handler API.
-module(falco).

-export([start_listener/2, stop_listener/1, stop_listener/2, drain/2, ready/1, child_spec/2, port/1,
         connections/1, info/1, connection_list/1, set_routes/2]).

-type drained() :: #{connections := non_neg_integer(), completed := non_neg_integer(),
                     stopped := non_neg_integer()}.
-export_type([drained/0]).

%% @doc Starts a listener named `Name' under falco's supervisor (starting
%% the falco application if needed). falco's supervisor never restarts it:
%% should it give up, {@link port/1} says `{error, not_found}' and the
%% listener can be started again.
%%
%% Errors, none of them logged as a crash: `{error, {already_started,
%% Pid}}' for a name in use, the listen socket's own reason with the
%% address for a port it cannot bind (`{error, {eaddrinuse, #{ip => Ip,
%% port => Port}}}', `eacces'...), `{error,
%% {unknown_option, Key}}' and `{error, {invalid_option, Key, Value}}' for
%% options, `{error, {invalid_name, Name}}'.
%%
%% ```
%% {ok, _} = falco:start_listener(hello, #{port => 8080,
%%     handler => fun(_Req) -> {200, [], <<"Hello!">>} end}).
%% '''
-spec start_listener(atom(), map()) -> {ok, pid()} | {error, term()}.
start_listener(Name, Opts) when is_atom(Name) ->
    case application:ensure_all_started(falco) of
        {ok, _} ->
            case falco_config:validate(Opts) of
                {ok, _} ->
                    Spec = (child_spec(Name, Opts))#{restart => temporary},
                    case supervisor:start_child(falco_sup, Spec) of
                        {ok, Pid} -> {ok, Pid};
                        {error, {already_started, Pid}} -> {error, {already_started, Pid}};
                        %% The supervisor wraps a failed start with its child
                        %% record (a `#child{}' tuple); users get the reason alone.
                        {error, {Reason, Child}} when element(1, Child) =:= child ->
                            {error, Reason};
                        {error, Reason} -> {error, Reason}
                    end;
                {error, _} = Error ->
                    Error
            end;
        {error, _} = Error ->
            Error
    end;
start_listener(Name, _Opts) ->
    {error, {invalid_name, Name}}.

%% @doc Stops a listener started with {@link start_listener/2}, draining
%% it first (see {@link drain/2}) for at most its `shutdown_timeout'
%% (5 s by default); what is still open then is closed.
-spec stop_listener(atom()) -> ok | {error, not_found}.
stop_listener(Name) ->
    stop_listener(Name, drain).

%% @doc Stops a listener: `drain' as {@link stop_listener/1}, or
%% `immediate': every connection is stopped at once, requests in flight
%% cut (HTTP/2 clients get a GOAWAY, WebSocket peers a 1001).
-spec stop_listener(atom(), drain | immediate) -> ok | {error, not_found}.
stop_listener(Name, How) when How =:= drain; How =:= immediate ->
    case whereis(falco_sup) of
        undefined -> {error, not_found};
        _ -> stop_ours(Name, How)
    end.

stop_ours(Name, How) ->
    Id = {falco_listener, Name},
    %% only a listener of falco's supervisor is stopped here: one in the
    %% user's tree must not be left flagged (it would stop accepting)
    Ours = lists:keymember(Id, 1, supervisor:which_children(falco_sup)),
    case falco_listener_sup:acceptors(Name) of
        {ok, Flag, _} when How =:= immediate, Ours -> ok = falco_drain:set(Flag, immediate);
        _ -> ok
    end,
    case supervisor:terminate_child(falco_sup, Id) of
        ok ->
            _ = supervisor:delete_child(falco_sup, {falco_listener, Name}),
            _ = ets:delete(falco_listeners, Name),
            ok = falco_router:uninstall(Name),
            ok = falco_telemetry:forget(Name),
            ok = falco_stats:forget(Name),
            ok = falco_pipeline:alt_svc(Name, undefined),
            ok;
        {error, _} ->
            {error, not_found}
    end.

%% @doc Drains listener `Name' and stops it. With the listener option
%% `drain_notice' (ms, 0 by default) it first goes on serving as usual for
%% that long while {@link ready/1} says false, for a load balancer's
%% health check to take the node out of rotation before its port closes
%% (docs/guide/deploying.md); `Timeout' counts from the end of the notice.
%% Then new connections are refused
%% (the listen socket is closed, within about 100 ms); each HTTP/1.1 connection
%% finishes the request in flight, whose response says `Connection: close',
%% and closes (an idle one closes at once; a new connection's first request
%% is still served); each HTTP/2 connection sends GOAWAY with the largest
%% stream id, then, a round trip later, with the last stream it took, and
%% closes when those streams have finished; each WebSocket session closes
%% with 1001. Whatever is still open after `Timeout' ms is stopped. Returns
%% how many connections there were, how many ended by themselves
%% (`completed') and how many were `stopped' at the deadline. A listener
%% in your own supervision tree ({@link child_spec/2}) is drained but not
%% stopped: stop it with your supervisor.
-spec drain(atom(), timeout()) -> {ok, drained()} | {error, not_found}.
drain(Name, Timeout) ->
    case falco_listener_sup:acceptors(Name) of
        {ok, Flag, _} ->
            case falco_drain:notice(Flag) of
                0 -> ok;
                Notice ->
                    ok = falco_drain:set(Flag, leaving),
                    timer:sleep(Notice)
            end,
            drain_now(Name, Timeout);
        Error ->
            Error
    end.

drain_now(Name, Timeout) ->
    case falco_listener_sup:drain_targets(Name) of
        {ok, Flag, Acceptors} ->
            ok = falco_drain:set(Flag, draining),
            Deadline = falco_transport:deadline(Timeout),
            Ref = make_ref(),
            Mons = [{monitor(process, A), A} || A <- Acceptors],
            _ = [A ! {falco_drain, self(), Ref, Deadline} || A <- Acceptors],
            {Total, Left} = drained(Ref, Mons, 0, 0),
            _ = stop_listener(Name, drain),
            {ok, #{connections => Total, completed => Total - Left, stopped => Left}};
        Error ->
            Error
    end.

%% @doc Whether listener `Name' runs and is not leaving: false from the
%% moment {@link drain/2} begins (its `drain_notice' included), and for a
%% listener that is not there. For a health-check route:
%% ```
%% {<<"/health">>, fun(_) -> case falco:ready(web) of
%%                                true -> falco_resp:text(200, <<"ok">>);
%%                                false -> falco_resp:text(503, <<"draining">>)
%%                            end end}
%% '''
-spec ready(atom()) -> boolean().
ready(Name) ->
    case falco_listener_sup:drain_flag(Name) of
        {ok, Flag} -> falco_drain:mode(Flag) =:= running;
        {error, not_found} -> false
    end.

%% The acceptors' answers (one that dies instead took its connections
%% with it: nothing to count).
drained(_Ref, [], Total, Left) ->
    {Total, Left};
drained(Ref, [{Mon, A} | Rest], Total, Left) ->
    receive
        {Ref, A, T, L} ->
            demonitor(Mon, [flush]),
            drained(Ref, Rest, Total + T, Left + L);
        {'DOWN', Mon, process, A, _} ->
            drained(Ref, Rest, Total, Left)
    end.

%% @doc A child spec to run listener `Name' in your own supervision tree.
%% The falco application must be running (list `falco' in your `.app'
%% file's `applications'): if it is not, the child fails to start with
%% `{falco_not_started, Fix}', `Fix' a sentence naming the fix. It is
%% `permanent': should the listener give up (its supervisor exits with
%% `shutdown'), your supervisor starts it again, opening its port anew, and
%% counts that restart against its own intensity; set `restart =>
%% transient' on the spec to let it stay down instead.
-spec child_spec(atom(), map()) -> supervisor:child_spec().
child_spec(Name, Opts) ->
    #{id => {falco_listener, Name},
      start => {falco_listener_sup, start_link, [Name, Opts]},
      type => supervisor,
      shutdown => infinity}.

%% @doc The port a listener is bound to (useful with `port => 0').
-spec port(atom()) -> {ok, inet:port_number()} | {error, not_found}.
port(Name) ->
    case falco_listener_sup:info(Name) of
        {ok, Port, _} -> {ok, Port};
        Error -> Error
    end.

%% @doc The number of open connections of a listener.
-spec connections(atom()) -> {ok, non_neg_integer()} | {error, not_found}.
connections(Name) ->
    case falco_listener_sup:info(Name) of
        {ok, _, Slots} -> {ok, falco_slots:connections(Slots)};
        Error -> Error
    end.

%% @doc What a running listener is doing: its port, `state' (`running',
%% `leaving' during a drain's notice, `draining', or `stopping' once an
%% immediate stop began), open
%% connections and `max_connections', its acceptors, and how many
%% connections each acceptor holds; and its counters since it started
%% (`falco_stats'): `accepted' connections, `requests_in_flight'
%% (HTTP/1.1 requests and HTTP/2 streams), `max_requests_in_flight',
%% `connections_by_protocol' (`http1', `h2', `websocket'; a WebSocket over
%% HTTP/2 is a stream of an `h2' connection) and `rejected' (`shed': 503
%% over max_requests_in_flight; `limits': requests refused over a limit
%% or as malformed; `flood': HTTP/2 connections closed for a flood).
%% A listener with `http3 => true' adds `http3': its UDP `sockets' and,
%% summed over them, what their `falco_quic_socket:info/1' counts
%% (`started' connections, `connections' open, `handshakes' in progress,
%% datagrams `routed', `refused', `dropped', `version_negotiation').
%% `saturated' says whether the listener is at `max_connections' now (new
%% connections waiting in the backlog, or refused over QUIC) and
%% `saturations' how many times it has reached it since it started
%% (docs/guide/operations.md).
-spec info(atom()) -> {ok, map()} | {error, not_found}.
info(Name) ->
    case {falco_listener_sup:info(Name), falco_listener_sup:acceptors(Name)} of
        {{ok, Port, Slots}, {ok, Flag, Acceptors}} ->
            States = [S || A <- Acceptors, {ok, S} <- [acceptor_state(A)]],
            {Max, MaxInFlight} = case States of
                                     [#{max_connections := M, max_requests_in_flight := MF} | _] ->
                                         {M, MF};
                                     [] -> {undefined, undefined}
                                 end,
            Counters = case falco_stats:for(Name) of
                           undefined -> #{};
                           Stats -> falco_stats:info(Stats)
                       end,
            Http3 = http3_info(Name, Counters),
            {Saturated, Saturations} = falco_slots:saturation(Slots),
            {ok, Http3#{port => Port,
                           saturated => Saturated,
                           saturations => Saturations,
                           state => case falco_drain:mode(Flag) of
                                        immediate -> stopping;
                                        Mode -> Mode
                                    end,
                           connections => falco_slots:connections(Slots),
                           max_connections => Max,
                           max_requests_in_flight => MaxInFlight,
                           acceptors => length(Acceptors),
                           per_acceptor => [maps:get(connections, S) || S <- States]}};
        _ ->
            {error, not_found}
    end.

%% The listener's counters, and its UDP sockets' under `http3' if any.
http3_info(Name, Counters) ->
    case falco_listener_sup:http3_sockets(Name) of
        {ok, [_ | _] = Holders} ->
            Infos = [I || H <- Holders, I <- [quic_socket_info(H)], I =/= none],
            Keys = [started, connections, handshakes, routed, refused, dropped,
                    version_negotiation],
            Sum = maps:from_list([{K, lists:sum([maps:get(K, I, 0) || I <- Infos])} || K <- Keys]),
            Counters#{http3 => Sum#{sockets => length(Holders)}};
        _ ->
            Counters
    end.

quic_socket_info(H) ->
    try falco_quic_socket:info(H)
    catch exit:_ -> none
    end.

acceptor_state(A) ->
    try {ok, sys:get_state(A, 1000)}
    catch exit:_ -> error
    end.

%% @doc The open connections of a listener, one map each: `pid', `age_ms'
%% (since the accept), and what the connection says of itself through
%% `sys:get_state/2' within `100' ms (`protocol', `peer', `scheme',
%% HTTP/1.1 `requests' served, HTTP/2 `streams' open, a WebSocket's
%% `path'...). An HTTP/1.1 connection inside a request cannot answer
%% `sys': it is read from its process dictionary instead (no wait), and
%% listed with `busy => true' and the `request' in progress (`method',
%% `path', `duration_ms'); an HTTP/2 connection lists its streams'
%% requests under `requests_in_progress' (read the same way from the
%% stream processes). Anything else that does not answer within 100 ms is
%% listed with `busy => true'. For observer, each connection is a
%% process under its acceptor (`supervisor:which_children/1').
-spec connection_list(atom()) -> {ok, [map()]} | {error, not_found}.
connection_list(Name) ->
    case falco_listener_sup:acceptors(Name) of
        {ok, _, Acceptors} ->
            Now = erlang:monotonic_time(),
            Conns = lists:append([accepted(A) || A <- Acceptors]),
            {ok, [connection(Pid, Now, Since) || {Pid, Since} <- lists:keysort(2, Conns)]};
        Error ->
            Error
    end.

accepted(A) ->
    try gen:call(A, '$gen_call', falco_connections, 1000) of
        {ok, L} when is_list(L) -> L;
        _ -> []
    catch exit:_ -> []
    end.

connection(Pid, Now, Since) ->
    Base = #{pid => Pid, age_ms => erlang:convert_time_unit(Now - Since, native, millisecond)},
    case falco_stats:in_progress(Pid) of
        {Req = #{}, Dict} ->
            case falco_http1_conn:busy_state(Dict) of
                undefined -> Base#{busy => true, request => Req};
                State -> maps:merge(State, Base#{busy => true, request => Req})
            end;
        {undefined, _} ->
            try sys:get_state(Pid, 100) of
                State when is_map(State) -> streams(maps:merge(State, Base));
                _ -> Base#{busy => true}
            catch
                exit:_ -> Base#{busy => true}
            end
    end.

%% An HTTP/2 connection's streams: the request each process runs.
streams(Conn = #{stream_processes := Pids}) ->
    Conn#{requests_in_progress => [R || P <- Pids, {R = #{}, _} <- [falco_stats:in_progress(P)]]};
streams(Conn) ->
    Conn.

%% @doc Replaces the routes of a listener started with `routes', without
%% closing any connection: each connection uses the new routes from its
%% next request on (see {@link falco_router}). The listener's router
%% options are kept, and so are the new routes when the listener's
%% supervisor restarts it (a listener from {@link child_spec/2} in your
%% tree); {@link stop_listener/1} forgets them. `{error, not_found}' if the
%% listener has no routes.
-spec set_routes(atom(), falco_router:routes()) -> ok | {error, term()}.
set_routes(Name, Routes) ->
    falco_router:set_routes(Name, Routes).
