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

-export([start_listener/2, stop_listener/1, child_spec/2, port/1, connections/1,
         set_routes/2]).

%% @doc Starts a listener named `Name' under falco's supervisor (starting
%% the falco application if needed). falco's supervisor never restarts it:
%% should it give up, {@link port/1} says `{error, not_found}' and the
%% listener can be started again.
-spec start_listener(atom(), map()) -> {ok, pid()} | {error, term()}.
start_listener(Name, Opts) when is_atom(Name) ->
    case application:ensure_all_started(falco) of
        {ok, _} ->
            case falco_opts:validate(Opts) of
                {ok, _} ->
                    Spec = (child_spec(Name, Opts))#{restart => temporary},
                    case supervisor:start_child(falco_sup, Spec) of
                        {ok, Pid} -> {ok, Pid};
                        {error, {already_started, _}} -> {error, already_started};
                        {error, already_present} -> {error, already_started};
                        %% The supervisor wraps a failed start with its child
                        %% record; users get the reason alone.
                        {error, {{listen_failed, _, _} = Reason, _Child}} -> {error, Reason};
                        {error, {{invalid_option, _, _} = Reason, _Child}} -> {error, Reason};
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

%% @doc Stops a listener started with {@link start_listener/2}, closing its
%% socket and its connections.
-spec stop_listener(atom()) -> ok | {error, not_found}.
stop_listener(Name) ->
    case supervisor:terminate_child(falco_sup, {falco_listener, Name}) of
        ok ->
            _ = supervisor:delete_child(falco_sup, {falco_listener, Name}),
            _ = ets:delete(falco_listeners, Name),
            ok = falco_router:uninstall(Name),
            ok;
        {error, _} ->
            {error, not_found}
    end.

%% @doc A child spec to run listener `Name' in your own supervision tree
%% (the falco application must be started for its clock). It is
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
