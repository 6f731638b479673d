%% Test helper: the one way the Common Test suites start falco and its
%% listeners. The application (with ssl for TLS suites), a listener on
%% 127.0.0.1 and a free port (port 0, the port read back), the same over
%% TLS with a fresh test certificate chain, a strict stop and a clean-up
%% stop for end_per_* functions, and a listener in a BEAM of its own.
%% Every failure is an error naming the listener and falco's reason;
%% nothing is retried or ignored except a listener already gone in the
%% clean-up stop.
-module(falco_test_listener).

-export([start_app/0, start_tls_app/0]).
-export([start/2, start/3, tls/1, port/1, stop/1, stop/2, ensure_stopped/1, ensure_stopped/2]).
-export([peer/3, peer_start/3]).

-define(LOOPBACK, {127, 0, 0, 1}).

%% The falco application and what it needs; ok.
start_app() ->
    started(application:ensure_all_started(falco)).

%% start_app/0 and ssl, for suites with TLS listeners or clients.
start_tls_app() ->
    ok = start_app(),
    started(application:ensure_all_started(ssl)).

started({ok, _}) -> ok;
started({error, Reason}) -> error({application_not_started, Reason}).

%% Listener `Name' with `Opts' on 127.0.0.1 and a free port, unless
%% `Opts' says `ip' or `port'; returns its supervisor and its port.
start(Name, Opts) ->
    case falco:start_listener(Name, maps:merge(#{port => 0, ip => ?LOOPBACK}, Opts)) of
        {ok, Sup} -> {Sup, port(Name)};
        Other -> error({start_listener, Name, Other})
    end.

%% start/2 with `Handler' (which `Opts' may override with routes).
start(Name, Handler, Opts) ->
    start(Name, maps:merge(#{handler => Handler}, Opts)).

%% `Opts' for a TLS listener: transport tls and, unless `Opts' has
%% tls_opts, a fresh test certificate chain (falco_test_tls).
tls(Opts = #{tls_opts := _}) ->
    Opts#{transport => tls};
tls(Opts) ->
    Opts#{transport => tls, tls_opts => falco_test_tls:server_opts()}.

%% The port listener `Name' is bound to.
port(Name) ->
    case falco:port(Name) of
        {ok, Port} -> Port;
        Other -> error({port, Name, Other})
    end.

%% Stops listener `Name' (or each of a list), which must be running.
stop(Names) when is_list(Names) ->
    lists:foreach(fun stop/1, Names);
stop(Name) ->
    stopped(Name, falco:stop_listener(Name), false).

%% stop/1 with falco:stop_listener/2's `How' (immediate).
stop(Names, How) when is_list(Names) ->
    lists:foreach(fun(N) -> stop(N, How) end, Names);
stop(Name, How) ->
    stopped(Name, falco:stop_listener(Name, How), false).

%% For end_per_* functions: stops listener `Name' (or each of a list) if
%% it runs; one that is not there is fine, any other answer an error.
ensure_stopped(Names) when is_list(Names) ->
    lists:foreach(fun ensure_stopped/1, Names);
ensure_stopped(Name) ->
    stopped(Name, falco:stop_listener(Name), true).

ensure_stopped(Names, How) when is_list(Names) ->
    lists:foreach(fun(N) -> ensure_stopped(N, How) end, Names);
ensure_stopped(Name, How) ->
    stopped(Name, falco:stop_listener(Name, How), true).

stopped(_, ok, _) -> ok;
stopped(_, {error, not_found}, true) -> ok;
stopped(Name, Other, _) -> error({stop_listener, Name, Other}).

%% A listener in a BEAM of its own (`peer', over standard_io), for cases
%% that read the server's memory: nothing else in that node allocates or
%% frees, where in the suite's node other cases' garbage can come and go
%% between two readings. `Handler' must be an external fun (fun M:F/1).
%% Returns the peer and the port; stop it with peer:stop/1.
peer(Name, Handler, Opts) ->
    Paths = [code:lib_dir(falco, ebin), filename:dirname(code:which(?MODULE))],
    {ok, Peer, _} = peer:start_link(#{connection => standard_io,
                                      args => lists:append([["-pa", P] || P <- Paths])}),
    {ok, Port} = peer:call(Peer, ?MODULE, peer_start, [Name, Handler, Opts], 15000),
    {Peer, Port}.

%% @private run in the peer of peer/3
peer_start(Name, Handler, Opts) ->
    ok = case maps:get(transport, Opts, tcp) of
             tls -> start_tls_app();
             _ -> start_app()
         end,
    {_Sup, Port} = start(Name, Handler, Opts),
    {ok, Port}.
