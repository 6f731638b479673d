%% @doc A listener at `max_connections' says so.
%%
%% At the limit a TCP listener's new connections wait in the kernel's
%% backlog and a QUIC listener refuses new connections: nothing else would
%% show it. The first acceptor (or UDP socket holder) to find no slot
%% emits `[falco, listener, saturated]' and the first to find one again
%% `[falco, listener, unsaturated]' (with how long it lasted), so each
%% time the limit is reached is one pair of events whatever the number of
%% acceptors ({@link falco_slots:full/1} and {@link falco_slots:room/1}
%% give each edge to one caller). Reaching it is logged as a warning at
%% most once per ?LOG_INTERVAL s per listener, with how many times it has
%% been reached; leaving it is logged only after a reach that was.
%% `falco:info/1' reports `saturated' and `saturations'.
%%
%% @private internal to falco
-module(falco_saturation).

-export([full/4, room/3]).

-define(LOG_INTERVAL, 10).

%% @doc A claim for a slot of listener `Name' failed at `Max'.
-spec full(falco_slots:slots(), atom(), falco_telemetry:emitter(), pos_integer() | infinity) ->
          ok.
full(Slots, Name, E, Max) ->
    case falco_slots:full(Slots) of
        already ->
            ok;
        entered ->
            Now = erlang:monotonic_time(),
            Open = falco_slots:connections(Slots),
            ok = case falco_slots:log_due(Slots, Now, erlang:convert_time_unit(?LOG_INTERVAL,
                                                                                second, native)) of
                     {true, Times} ->
                         logger:warning("falco: listener ~p reached max_connections (~p; ~b "
                                        "connections open): new connections wait (TCP: in the "
                                        "kernel's backlog; QUIC: refused); reached ~b times "
                                        "since it started", [Name, Max, Open, Times]);
                     false ->
                         ok
                 end,
            falco_telemetry:emit(E, [falco, listener, saturated],
                                 fun() -> {#{monotonic_time => Now,
                                             system_time => erlang:system_time(),
                                             connections => Open},
                                           #{listener => Name, max_connections => Max}}
                                 end)
    end.

%% @doc A claim for a slot of listener `Name' succeeded.
-spec room(falco_slots:slots(), atom(), falco_telemetry:emitter()) -> ok.
room(Slots, Name, E) ->
    case falco_slots:room(Slots) of
        still_room ->
            ok;
        {left, Duration, Logged} ->
            ok = case Logged of
                     true ->
                         logger:notice("falco: listener ~p below max_connections again after ~b ms",
                                       [Name, erlang:convert_time_unit(Duration, native,
                                                                       millisecond)]);
                     false ->
                         ok
                 end,
            falco_telemetry:emit(E, [falco, listener, unsaturated],
                                 fun() -> {#{duration => Duration,
                                             monotonic_time => erlang:monotonic_time()},
                                           #{listener => Name}}
                                 end)
    end.
