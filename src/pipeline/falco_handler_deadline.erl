%% @doc The optional per-request handler deadline (`handler_timeout'), the
%% same for every protocol: {@link falco_pipeline:run/5} wraps the
%% protocol's stream in this one when the option is set (infinity, the
%% default, costs nothing).
%%
%% A handler runs in the connection process over HTTP/1.1 (DESIGN
%% principle 3) and in its stream's process over HTTP/2; it may block
%% anywhere, in a `receive' too, so no timer message to itself could stop
%% it. A watchdog process per request (only with the option set) waits
%% `handler_timeout' ms; if the handler has not returned by then:
%% <ul>
%% <li>no response head has gone out: the watchdog sends the 503 itself on
%%     the request's stream (503 Service Unavailable, RFC 9110 §15.6.4, as
%%     Go's http.TimeoutHandler does; 504 is a gateway's answer about an
%%     upstream) and kills the process that runs the handler;</li>
%% <li>a head has gone out (a streamed or file reply): the process is
%%     killed, which cuts the response (HTTP/1.1: the connection closes
%%     without the end of the body; HTTP/2: the connection resets the
%%     stream, RST_STREAM);</li>
%% </ul>
%% and the timeout is logged once (a warning naming the request). The kill
%% leaves nothing behind: the connection slot and the stream are given
%% back as for any death, the process's files and sockets close with it.
%%
%% Who sends first is decided by one atomic: idle, then `started' (this
%% stream sent a head), `done' (the pipeline returned) or `timed_out' (the
%% watchdog won); each side moves it with a compare-and-exchange, so a
%% handler returning at the deadline gets either its own response or the
%% 503, never both.
%%
%% @private internal to falco
-module(falco_handler_deadline).
-behaviour(falco_stream).

-export([start/4, finish/2]).
-export([send_response/4, send_headers/3, send_data/2, send_end/2, send_file/6,
         read_body/2, trailers/1, switch_protocols/4]).

-define(IDLE, 0).
-define(STARTED, 1).
-define(DONE, 2).
-define(TIMED_OUT, 3).

-record(guard, {watchdog :: pid(),
                phase :: atomics:atomics_ref(),
                mod :: module(),
                state :: falco_stream:state()}).
-opaque state() :: #guard{}.
-export_type([state/0]).

%% @doc Starts the watchdog for a request answered on `Mod'/`S' by the
%% calling process; returns the stream state that wraps `S'. At the
%% deadline the watchdog calls `Reply()' to send the 503 (if no head went
%% out), kills the caller, and calls `Log(replied | cut)'. (The pipeline
%% gives these, so this module does not call it back.)
-spec start(pos_integer(), module(), falco_stream:state(),
            #{reply := fun(() -> term()), log := fun((replied | cut) -> term())}) -> state().
start(Timeout, Mod, S, Hooks) ->
    Phase = atomics:new(1, []),
    Owner = self(),
    Watchdog = spawn(fun() -> watch(Owner, Timeout, Phase, Hooks) end),
    #guard{watchdog = Watchdog, phase = Phase, mod = Mod, state = S}.

%% @doc After the pipeline: the watchdog is stopped and the protocol's own
%% state returned. If the watchdog has just won, this process is being
%% killed: it waits for that.
-spec finish(state(), {ok, state()} | {error, term()}) ->
          {ok, falco_stream:state()} | {error, term()}.
finish(G, Result) ->
    ok = done(G),
    case Result of
        {ok, #guard{state = S}} -> {ok, S};
        {error, _} = Error -> Error
    end.

done(#guard{watchdog = W, phase = Phase}) ->
    case atomics:compare_exchange(Phase, 1, ?IDLE, ?DONE) of
        ok -> W ! stop, ok;
        ?STARTED ->
            case atomics:compare_exchange(Phase, 1, ?STARTED, ?DONE) of
                ok -> W ! stop, ok;
                ?TIMED_OUT -> killed()
            end;
        ?TIMED_OUT -> killed()
    end.

-spec killed() -> no_return().
killed() ->
    receive after infinity -> ok end.

%% A head is about to go out: only if the watchdog has not answered.
head(#guard{phase = Phase}) ->
    case atomics:compare_exchange(Phase, 1, ?IDLE, ?STARTED) of
        ok -> ok;
        ?STARTED -> ok;
        ?TIMED_OUT -> killed()
    end.

wrap({ok, S}, G) -> {ok, G#guard{state = S}};
wrap(Error, _G) -> Error.

%% -- the watchdog ---------------------------------------------------------------

watch(Owner, Timeout, Phase, Hooks = #{reply := Reply}) ->
    Ref = monitor(process, Owner),
    receive
        stop -> ok;
        {'DOWN', Ref, process, Owner, _} -> ok
    after Timeout ->
        case atomics:compare_exchange(Phase, 1, ?IDLE, ?TIMED_OUT) of
            ok ->
                _ = catch Reply(),
                cut(Owner, Hooks, replied);
            ?STARTED ->
                case atomics:compare_exchange(Phase, 1, ?STARTED, ?TIMED_OUT) of
                    ok -> cut(Owner, Hooks, cut);
                    ?DONE -> ok
                end;
            ?DONE ->
                ok
        end
    end.

cut(Owner, #{log := Log}, What) ->
    %% A connection process's acceptor (an HTTP/1.1 handler runs in the
    %% connection) is told first, so that it does not report the kill as a
    %% connection that died: the warning below is the one line logged.
    %% Nothing is sent to any other process (falco_testing's caller).
    _ = case erlang:process_info(Owner, [dictionary, parent]) of
            [{dictionary, Dict}, {parent, Acceptor}] when is_pid(Acceptor) ->
                case lists:keyfind('$initial_call', 1, Dict) of
                    {_, {falco_conn, init, 5}} -> Acceptor ! {falco_deadline_killed, Owner};
                    _ -> ok
                end;
            _ ->
                ok
        end,
    exit(Owner, kill),
    _ = Log(What),
    ok.

%% -- the stream interface, passed on --------------------------------------------

%% @private
-spec send_response(100..999, falco_stream:headers(), iodata(), state()) ->
          {ok, state()} | {error, term()}.
send_response(Status, Fields, Body, G = #guard{mod = Mod, state = S}) ->
    ok = head(G),
    wrap(Mod:send_response(Status, Fields, Body, S), G).

%% @private
-spec send_headers(100..999, falco_stream:headers(), state()) -> {ok, state()} | {error, term()}.
send_headers(Status, Fields, G = #guard{mod = Mod, state = S}) ->
    ok = head(G),
    wrap(Mod:send_headers(Status, Fields, S), G).

%% @private
-spec send_file(100..999, falco_stream:headers(), file:fd(), non_neg_integer(),
                non_neg_integer(), state()) -> {ok, state()} | {error, term()}.
send_file(Status, Fields, Fd, Offset, Length, G = #guard{mod = Mod, state = S}) ->
    ok = head(G),
    wrap(Mod:send_file(Status, Fields, Fd, Offset, Length, S), G).

%% @private The WebSocket session that follows runs after the pipeline
%% returns, outside this deadline (it is not the request's handler).
-spec switch_protocols(101 | 200, falco_stream:headers(), map(), state()) ->
          {ok, state()} | {error, term()}.
switch_protocols(Status, Fields, Upgrade, G = #guard{mod = Mod, state = S}) ->
    ok = head(G),
    wrap(Mod:switch_protocols(Status, Fields, Upgrade, S), G).

%% @private
-spec send_data(iodata(), state()) -> ok | {error, term()}.
send_data(Data, #guard{mod = Mod, state = S}) ->
    Mod:send_data(Data, S).

%% @private
-spec send_end(falco_stream:headers(), state()) -> {ok, state()} | {error, term()}.
send_end(Trailers, G = #guard{mod = Mod, state = S}) ->
    wrap(Mod:send_end(Trailers, S), G).

%% @private
-spec read_body(all | pos_integer(), state()) -> falco_stream:body_result().
read_body(Want, G = #guard{mod = Mod, state = S0}) ->
    {Tag, Data, S} = Mod:read_body(Want, S0),
    {Tag, Data, G#guard{state = S}}.

%% @private
-spec trailers(state()) -> [{binary(), binary()}].
trailers(#guard{mod = Mod, state = S}) ->
    Mod:trailers(S).
