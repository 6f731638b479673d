%% @doc One listener: the supervisor owns the listen socket (opened in
%% init, so it lives exactly as long as this tree) and supervises the pool
%% of acceptors sharing it. Connections are linked to the acceptor that
%% accepted them, so stopping the listener stops its connections too.
-module(falco_listener_sup).
-behaviour(supervisor).

-export([start_link/2, info/1]).
-export([init/1]).

-define(TABLE, falco_listeners).

%% @doc Starts listener `Name' with validated options.
-spec start_link(atom(), map()) -> {ok, pid()} | ignore | {error, term()}.
start_link(Name, Opts) ->
    case falco_opts:validate(Opts) of
        {ok, Conf} -> supervisor:start_link(?MODULE, {Name, Conf});
        {error, _} = Error -> Error
    end.

%% @doc The listen port and connection counter of a running listener.
%% A listener in a user's supervision tree is stopped without falco being
%% told, so a row whose supervisor is gone is stale: it is dropped here
%% rather than reporting a port the listener no longer holds.
-spec info(atom()) -> {ok, inet:port_number(), counters:counters_ref()} | {error, not_found}.
info(Name) ->
    try ets:lookup(?TABLE, Name) of
        [{_, Port, Counter, Sup} = Row] ->
            case is_process_alive(Sup) of
                true -> {ok, Port, Counter};
                false ->
                    _ = ets:delete_object(?TABLE, Row),
                    {error, not_found}
            end;
        [] -> {error, not_found}
    catch
        error:badarg -> {error, not_found}
    end.

%% @private
-spec init({atom(), map()}) -> {ok, {supervisor:sup_flags(), [supervisor:child_spec()]}}.
init({Name, Conf}) ->
    #{ip := Ip, port := Port, backlog := Backlog, nodelay := NoDelay,
      send_timeout := SendTimeout, num_acceptors := N} = Conf,
    Family = case tuple_size(Ip) of
                 4 -> inet;
                 8 -> inet6
             end,
    SockOpts = [binary, Family, {ip, Ip}, {active, false}, {packet, raw}, {reuseaddr, true},
                {backlog, Backlog}, {nodelay, NoDelay}, {send_timeout, SendTimeout},
                {send_timeout_close, true}, {keepalive, true}],
    case gen_tcp:listen(Port, SockOpts) of
        {ok, LSock} ->
            {ok, Actual} = inet:port(LSock),
            Counter = counters:new(1, [atomics]),
            true = ets:insert(?TABLE, {Name, Actual, Counter, self()}),
            Acceptors = [#{id => {acceptor, I},
                           start => {falco_acceptor, start_link, [Name, LSock, Conf, Counter]},
                           shutdown => brutal_kill}
                         || I <- lists:seq(1, N)],
            {ok, {#{strategy => one_for_all, intensity => 10, period => 10}, Acceptors}};
        {error, Reason} ->
            %% Makes start_link return {error, {listen_failed, Port, Reason}}.
            exit({listen_failed, Port, Reason})
    end.
