%% @doc falco's events: through the `telemetry' library when it is there,
%% and through a listener's own `event_handler' option, with no cost
%% beyond a check when neither is (docs/guide/telemetry.md lists every
%% event).
%%
%% falco does not depend on `telemetry': when a listener starts, it looks
%% whether the module `telemetry' can be loaded; if so, every event goes
%% to `telemetry:execute/3' (attach handlers as usual). The listener
%% option `event_handler' (a fun of arity 3, or `{Module, Function}' of
%% arity 3) gets the same `(Event, Measurements, Metadata)' calls, in the
%% process where the event happens, so it must be quick; a handler that
%% raises is logged once per process and the event dropped, the request
%% goes on. Which of them are used is settled at the listener's start
%% ({@link emitter/2}): the request events are a wrapper around the
%% listener's handler chain that exists only when events go somewhere
%% ({@link falco_request_events}), and every other event site goes
%% through {@link emit/3}, which builds nothing for an event that goes
%% nowhere, with the emitter found by {@link for/1} (one term of the
%% listener's configuration, or one `persistent_term' per listener).
%%
%% @private internal to falco
-module(falco_telemetry).

-export([emitter/2, forget/1, for/1, execute/4, emit/3]).
-export_type([emitter/0]).

-type handler() :: fun((list(atom()), map(), map()) -> term()) | {module(), atom()}.
-type emitter() :: none | {telemetry | handler() | {both, handler()}}.

-define(KEY(Listener), {?MODULE, Listener}).

%% @doc The emitter of listener `Name' with configuration `Conf' (its
%% `event_handler', and whether `telemetry' is loadable now), also kept for
%% {@link for/1}.
-spec emitter(atom(), map()) -> emitter().
emitter(Name, Conf) ->
    Telemetry = code:ensure_loaded(telemetry) =:= {module, telemetry}
        andalso erlang:function_exported(telemetry, execute, 3),
    E = case {Telemetry, maps:get(event_handler, Conf, undefined)} of
            {false, undefined} -> none;
            {true, undefined} -> {telemetry};
            {false, H} -> {H};
            {true, H} -> {{both, H}}
        end,
    case persistent_term:get(?KEY(Name), undefined) of
        E -> ok;
        _ -> persistent_term:put(?KEY(Name), E)
    end,
    E.

%% @doc Forgets the emitter of a listener that stopped.
-spec forget(atom()) -> ok.
forget(Name) ->
    _ = persistent_term:erase(?KEY(Name)),
    ok.

%% @doc The emitter of a listener, the one lookup: from its configuration
%% (where the listener's supervisor put it), or from its name where only
%% that is at hand (`none' for an unknown one).
-spec for(map() | atom() | undefined) -> emitter().
for(#{telemetry := E}) ->
    E;
for(Conf) when is_map(Conf) ->
    none;
for(Name) ->
    persistent_term:get(?KEY(Name), none).

%% @doc Emits one event whose measurements and metadata `Build' makes,
%% only when it goes somewhere: the one guard of every event site.
-spec emit(emitter(), [atom(), ...], fun(() -> {map(), map()})) -> ok.
emit(none, _Event, _Build) ->
    ok;
emit(E, Event, Build) ->
    {Measurements, Metadata} = Build(),
    execute(E, Event, Measurements, Metadata).

%% @doc Emits one event.
-spec execute(emitter(), [atom(), ...], map(), map()) -> ok.
execute(none, _Event, _Measurements, _Metadata) ->
    ok;
execute({telemetry}, Event, Measurements, Metadata) ->
    telemetry(Event, Measurements, Metadata);
execute({{both, H}}, Event, Measurements, Metadata) ->
    telemetry(Event, Measurements, Metadata),
    handler(H, Event, Measurements, Metadata);
execute({H}, Event, Measurements, Metadata) ->
    handler(H, Event, Measurements, Metadata).

%% A module in a variable: falco has no compile-time dependency on it.
telemetry(Event, Measurements, Metadata) ->
    Mod = telemetry,
    _ = Mod:execute(Event, Measurements, Metadata),
    ok.

handler(H, Event, Measurements, Metadata) ->
    try
        _ = case H of
                {M, F} -> M:F(Event, Measurements, Metadata);
                Fun -> Fun(Event, Measurements, Metadata)
            end,
        ok
    catch
        Class:Reason:Stack ->
            case get({?MODULE, failed}) of
                true ->
                    ok;
                _ ->
                    put({?MODULE, failed}, true),
                    logger:warning("~ts", [falco_report:format(
                                             "falco: event_handler failed on ~0p: ~0p:~0p~n~0p",
                                             [Event, Class, Reason,
                                              falco_report:without_args(Stack)])])
            end
    end.
