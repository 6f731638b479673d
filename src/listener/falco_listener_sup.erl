%% @doc One listener: the supervisor owns the listen socket (opened in
%% init, so it lives exactly as long as this tree; for TLS an `ssl' listen
%% socket, so the server options are checked and processed once, here, and
%% a bad one fails the start with `{invalid_option, tls_opts, Reason}').
%%
%% Its children, `one_for_one': the socket's holder ({@link
%% falco_listen_socket}, first, so it is stopped last and closes the socket),
%% the acceptors' supervisor ({@link falco_acceptor_sup}), under which
%% each acceptor supervises the connections it accepted ({@link
%% falco_acceptor}, {@link falco_conn}), and the guard ({@link
%% falco_listener_guard}, last, so it is stopped first and tells the
%% acceptors that the listener stops). The acceptors' supervisor giving up
%% (more than 10 acceptor restarts in 10 s: a code purge kills every
%% process waiting in accept) is started again on the same open socket,
%% with the drain flag untouched: the listener goes on serving. The socket is owned by this
%% process and closed only by the holder's `terminate', which runs when
%% this listener stops; a holder killed outright leaves it open, so it is
%% restarted alone and the acceptors and their connections go on. More
%% than 10 restarts in 10 s (of the holder, or of the acceptors' supervisor
%% giving up) and the listener stops, alone: falco's supervisor does not
%% restart it ({@link falco:start_listener/2}).
%%
%% With `http3 => true' (a TLS listener) the UDP branch comes along
%% (docs/guide/http3.md): the route table of its QUIC connections is made
%% and owned here (public, so every UDP socket holder reads and the
%% connections write it; owned here, so a holder restarted keeps it), and
%% `h3_sockets' holders ({@link falco_quic_socket}), after the acceptors and before
%% the guard, bind the listener's ip and the port the TCP socket got. The
%% TLS credentials of the QUIC handshake are loaded once, here, from
%% `tls_opts' (a bad one fails the start with `{invalid_option, tls_opts,
%% Reason}'). QUIC connections take the listener's connection slots as its
%% TCP ones do, and the responses of HTTP/1.1 and HTTP/2 advertise HTTP/3
%% with an Alt-Svc field, made here once ({@link falco_pipeline:alt_svc/2}).
%%
%% The listener's handler is settled here, once: with `routes' the compiled
%% router is installed under the listener's name
%% ({@link falco_router:install_start/2}) and the handler dispatches with
%% whatever is installed there, so routes can be swapped at run time, and a
%% restart of this supervisor by its own keeps the swapped routes; the
%% `middleware' chain is composed around
%% it, and the request events ({@link falco_request_events}) around that when
%% they go somewhere. Connections receive that one handler, never the routes themselves.
%%
%% @private internal to falco
-module(falco_listener_sup).
-behaviour(supervisor).

-export([start_link/2, info/1, acceptors/1, drain_targets/1, drain_flag/1, http3_sockets/1]).
-export([init/1, socket_options/1]).

-define(TABLE, falco_listeners).

%% @doc Starts listener `Name' with validated options. The falco
%% application must be running (its registry and clock): without it this
%% is `{error, {falco_not_started, Fix}}', `Fix' a sentence saying what to
%% do. A listen failure is the socket's own reason with the address
%% (`{error, {eaddrinuse, #{ip => Ip, port => Port}}}', `eacces'...),
%% without a crash report: the supervisor's `init'
%% leaves with `{shutdown, _}', which proc_lib does not report.
-spec start_link(atom(), map()) -> {ok, pid()} | ignore | {error, term()}.
start_link(Name, Opts) ->
    case {falco_running(), falco_config:validate(Opts)} of
        {false, _} ->
            {error, {falco_not_started,
                     "start the falco application first: list falco in your application's "
                     "`applications' (or call application:ensure_all_started(falco))"}};
        {true, {ok, Conf}} ->
            case supervisor:start_link({local, reg_name(Name)}, ?MODULE, {Name, Conf}) of
                {error, {shutdown, {falco_listener, Reason}}} -> {error, Reason};
                Other -> Other
            end;
        {true, {error, _} = Error} ->
            Error
    end.

%% The registered name of listener `Name''s supervisor,
%% `falco_listener_Name': every supervisor report of the listener names it
%% (its acceptors' supervisor is `falco_acceptors_Name'). A second
%% listener of the same name, in any supervisor, is `{error,
%% {already_started, Pid}}'.
reg_name(Name) ->
    list_to_atom("falco_listener_" ++ atom_to_list(Name)).

%% falco_sup owns the registry table and supervises the clock.
falco_running() ->
    ets:info(?TABLE, owner) =:= whereis(falco_sup) andalso is_pid(whereis(falco_clock)).

%% @doc The listen port and connection slots of a running listener.
%% A listener in a user's supervision tree is stopped without falco being
%% told, so a row whose supervisor is gone is stale: it is dropped here
%% rather than reporting a port the listener no longer holds.
-spec info(atom()) -> {ok, inet:port_number(), falco_slots:slots()} | {error, not_found}.
info(Name) ->
    case row(Name) of
        {ok, {_, Port, Slots, _, _}} -> {ok, Port, Slots};
        Error -> Error
    end.

%% @doc The drain flag of a running listener (cheap: for health checks).
-spec drain_flag(atom()) -> {ok, falco_drain:flag()} | {error, not_found}.
drain_flag(Name) ->
    case row(Name) of
        {ok, {_, _, _, _, Drain}} -> {ok, Drain};
        Error -> Error
    end.

%% @doc What a drain tells of a running listener: its acceptors and its
%% UDP socket holders (each drains the connections it started and answers
%% `falco:drain/2' the same way).
-spec drain_targets(atom()) -> {ok, falco_drain:flag(), [pid()]} | {error, not_found}.
drain_targets(Name) ->
    case {acceptors(Name), http3_sockets(Name)} of
        {{ok, Drain, Acceptors}, {ok, Holders}} -> {ok, Drain, Acceptors ++ Holders};
        {{ok, Drain, Acceptors}, _} -> {ok, Drain, Acceptors};
        {Error, _} -> Error
    end.

%% @doc What a drain needs of a running listener: its drain flag and its
%% acceptors.
-spec acceptors(atom()) -> {ok, falco_drain:flag(), [pid()]} | {error, not_found}.
acceptors(Name) ->
    case row(Name) of
        {ok, {_, _, _, Sup, Drain}} ->
            try
                AccSup = [Pid || {acceptors, Pid, _, _} <- supervisor:which_children(Sup),
                                 is_pid(Pid)],
                {ok, Drain, [Pid || S <- AccSup, {_, Pid, _, _} <- supervisor:which_children(S),
                                    is_pid(Pid)]}
            catch
                %% it stops meanwhile
                exit:_ -> {error, not_found}
            end;
        Error ->
            Error
    end.

%% @doc The UDP socket holders of a running listener with `http3 => true'
%% (none without).
-spec http3_sockets(atom()) -> {ok, [pid()]} | {error, not_found}.
http3_sockets(Name) ->
    case row(Name) of
        {ok, {_, _, _, Sup, _}} ->
            try
                {ok, [Pid || {{quic_socket, _}, Pid, _, _} <- supervisor:which_children(Sup),
                             is_pid(Pid)]}
            catch
                exit:_ -> {error, not_found}
            end;
        Error ->
            Error
    end.

row(Name) ->
    try ets:lookup(?TABLE, Name) of
        [{_, _, _, Sup, _} = Row] ->
            case is_process_alive(Sup) of
                true -> {ok, Row};
                false ->
                    _ = ets:delete_object(?TABLE, Row),
                    {error, not_found}
            end;
        [] -> {error, not_found}
    catch
        error:badarg -> {error, not_found}
    end.

%% @private The options of a listener's listen socket, from its
%% configuration. Every option of an accepted socket comes from these
%% (falco_transport:accept/3): nothing is set on a connection's socket
%% when it is accepted.
-spec socket_options(map()) -> [gen_tcp:listen_option()].
socket_options(Conf = #{ip := Ip, backlog := Backlog, nodelay := NoDelay,
                        send_timeout := SendTimeout, inet_backend := Backend}) ->
    Family = case tuple_size(Ip) of
                 4 -> inet;
                 8 -> inet6
             end,
    %% gen_tcp's backend, `inet' (the port driver) unless the listener
    %% says `socket': with the yield before the keep-alive read it costs
    %% less CPU per request and memory per idle connection than the NIF
    %% (docs/internals/http1.md, "Socket backend").
    [{inet_backend, Backend}, binary, Family, {ip, Ip}, {active, false}, {packet, raw},
     {reuseaddr, true}, {backlog, Backlog}, {nodelay, NoDelay}, {send_timeout, SendTimeout},
     {send_timeout_close, true}, {keepalive, true},
     %% The read buffer (falco_transport:read_buffer/2); large
     %% bodies widen it (falco_http1_stream, falco_http2_conn).
     {buffer, falco_transport:accept_buffer(maps:get(transport, Conf), Backend)}]
        ++ [falco_transport:reuseport() || maps:get(reuseport, Conf)].

%% @private
-spec init({atom(), map()}) -> {ok, {supervisor:sup_flags(), [supervisor:child_spec()]}}.
init({Name, Conf0}) ->
    Conf = tls_conf(maps:without([routes, router, router_opts, middleware], Conf0)),
    #{port := Port, num_acceptors := N} = Conf,
    SockOpts = socket_options(Conf),
    Kind = maps:get(transport, Conf),
    Tls3 = http3_tls(Conf),
    case falco_transport:listen(Kind, Port, SockOpts, maps:get(tls_server_opts, Conf, [])) of
        {ok, LSock} ->
            {ok, Actual} = sockport(Kind, LSock),
            %% the UDP socket holders' shares follow the acceptors'
            Slots = falco_slots:new(N + http3_sockets_count(Conf)),
            Drain = falco_drain:new(maps:get(drain_notice, Conf)),
            true = ets:insert(?TABLE, {Name, Actual, Slots, self(), Drain}),
            Events = falco_telemetry:emitter(Name, Conf),
            Stats = falco_stats:new(),
            ok = falco_stats:register(Name, Stats),
            Conf1 = Conf#{handler => falco_request_events:wrap(Events, handler(Name, Conf0)),
                          drain => Drain, telemetry => Events, stats => Stats, lsock => LSock,
                          %% how many times the acceptors' supervisor started
                          acceptor_starts => atomics:new(1, [])},
            ok = falco_acceptor:share_conf(Name, Conf1),
            ok = falco_pipeline:alt_svc(Name, alt_svc(Conf, Actual)),
            %% First child: on shutdown it goes last and closes the socket.
            Holder = #{id => listen_socket,
                       start => {falco_listen_socket, start_link, [Kind, LSock]},
                       shutdown => 5000},
            Acceptors = #{id => acceptors,
                          start => {falco_acceptor_sup, start_link, [Name, Slots]},
                          type => supervisor,
                          shutdown => infinity},
            %% Last child: on shutdown it goes first and marks the listener
            %% as stopping, so that the acceptors drain and close the socket.
            Guard = #{id => guard, start => {falco_listener_guard, start_link, [Drain]},
                      shutdown => 5000},
            Quic = quic_sockets(Name, Conf1, Actual, Slots, Tls3),
            {ok, {#{strategy => one_for_one, intensity => 10, period => 10},
                  [Holder, Acceptors] ++ Quic ++ [Guard]}};
        {error, {tls_opts, Reason}} ->
            %% ssl refused the options: the listener cannot serve anyone.
            %% ({shutdown, _}: an error for the caller, not a crash report)
            exit({shutdown, {falco_listener, {invalid_option, tls_opts, Reason}}});
        {error, Reason} ->
            %% start_link returns {error, {Reason, Address}}: eaddrinuse,
            %% eacces..., with the address it could not listen on
            exit({shutdown, {falco_listener, {Reason, #{ip => maps:get(ip, Conf), port => Port}}}})
    end.

%% -- HTTP/3 ---------------------------------------------------------------------

http3_sockets_count(#{http3 := true, h3_sockets := H}) -> H;
http3_sockets_count(_) -> 0.

%% The TLS options of falco_tls13_server:new/1 (without the transport
%% parameters, a connection's own), from the listener's `tls_opts': its
%% certificates and keys loaded once, and the client certificates it asks
%% for, if it does.
http3_tls(#{http3 := true, tls_opts := TlsOpts, h3_conn_module := Mod}) ->
    ok = conn_module(Mod),
    case falco_tls13_cert:load(TlsOpts) of
        {ok, Credentials} ->
            Verify = proplists:get_value(verify, TlsOpts, verify_none),
            Client = case Verify of
                         verify_peer ->
                             #{verify => verify_peer,
                               fail_if_no_peer_cert =>
                                   proplists:get_value(fail_if_no_peer_cert, TlsOpts, false),
                               trusted => falco_tls13_cert:trusted(TlsOpts)};
                         _ -> #{}
                     end,
            Client#{credentials => Credentials, alpn => [<<"h3">>]};
        {error, Reason} ->
            exit({shutdown, {falco_listener, {invalid_option, tls_opts, {http3, Reason}}}})
    end;
http3_tls(_Conf) ->
    undefined.

%% The QUIC connection process must be there: without it every Initial
%% would be admitted for nothing (`falco_http3_conn' lands after the
%% listener side).
conn_module(Mod) ->
    case code:ensure_loaded(Mod) =:= {module, Mod}
        andalso erlang:function_exported(Mod, start_link, 2) of
        true ->
            ok;
        false ->
            exit({shutdown, {falco_listener,
                             {invalid_option, http3,
                              {unavailable, Mod, "this falco has no QUIC connection process yet: "
                               "leave http3 off"}}}})
    end.

%% The `alt-svc' field of the listener's HTTP/1.1 and HTTP/2 responses
%% (RFC 7838 §3): HTTP/3 on the same port, for `h3_alt_svc_max_age' s.
alt_svc(#{http3 := true, h3_alt_svc_max_age := MaxAge}, Port) ->
    iolist_to_binary(["h3=\":", integer_to_list(Port), "\"; ma=", integer_to_list(MaxAge)]);
alt_svc(_Conf, _Port) ->
    undefined.

%% The UDP socket holders, with the route table they share (made and
%% owned here: it outlives a holder).
quic_sockets(Name, Conf = #{http3 := true, h3_sockets := H, num_acceptors := N, ip := Ip,
                            max_connections := Max, drain := Drain, telemetry := Events,
                            stats := Stats, handler := Handler},
             Port, Slots, Tls) ->
    Routes = ets:new(falco_quic_routes, [set, public, {read_concurrency, true},
                                          {write_concurrency, true}]),
    Args = #{listener => Name, handler => Handler, conf => Conf, tls => Tls},
    Quic = falco_opts:quic(Conf),
    Draining = fun() -> falco_drain:draining(Drain) orelse falco_drain:stopping(Drain) end,
    %% one set of token and stateless reset secrets for all the holders
    Secrets = falco_quic_token:new(),
    [#{id => {quic_socket, I},
       start => {falco_quic_socket, start_link,
                 [#{ip => Ip, port => Port, routes => Routes,
                    conn => {maps:get(h3_conn_module, Conf), Args},
                    max_handshakes => maps:get(max_handshakes, Quic),
                    max_handshakes_per_address => maps:get(max_handshakes_per_address, Quic),
                    draining => Draining, listener => Name, slots => {Slots, N + I, Max},
                    retry => maps:get(h3_retry, Conf), secrets => Secrets,
                    stats => Stats, events => Events}]},
       shutdown => 5000}
     || I <- lists:seq(1, H)];
quic_sockets(_Name, _Conf, _Port, _Slots, _Tls) ->
    [].

sockport(tcp, LSock) -> inet:port(LSock);
sockport(tls, LSock) ->
    {ok, {_, Port}} = ssl:sockname(LSock),
    {ok, Port}.

%% TLS listeners: the ssl application, and the server options computed once
%% (ssl processes them once more, once, in ssl:listen/2). ssl is started
%% by the first TLS listener, not with falco (falco.app.src): a node that
%% serves plain HTTP does not hold it (0.36 MB, and crypto's library). A
%% node that cannot start it (a release built without ssl) gets
%% `{error, {tls_unavailable, Reason, Fix}}', `Fix' a sentence.
tls_conf(Conf = #{transport := tls, tls_opts := TlsOpts, protocols := Protocols,
                  hibernate_after := Hibernate}) ->
    case application:ensure_all_started(ssl) of
        {ok, _} ->
            Conf#{tls_server_opts => falco_transport:tls_options(TlsOpts, Protocols, Hibernate)};
        {error, Reason} ->
            exit({shutdown, {falco_listener,
                             {tls_unavailable, Reason,
                              "the ssl application does not start on this node: list ssl (and "
                              "crypto, public_key) in your application's `applications' so "
                              "that a release includes and starts it"}}})
    end;
tls_conf(Conf) ->
    Conf.

handler(Name, Conf) ->
    Base = case Conf of
               #{router := Router} ->
                   ok = falco_router:install_start(Name, Router),
                   falco_router:installed(Name);
               #{handler := Handler} ->
                   Handler
           end,
    case maps:get(middleware, Conf, []) of
        [] -> Base;
        Middleware -> falco_middleware:compose(Middleware, Base)
    end.

