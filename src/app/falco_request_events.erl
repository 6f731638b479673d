%% @doc The request events, `[falco, request, start | stop | exception]':
%% a wrapper around a listener's handler chain, installed by the listener
%% ({@link falco_listener_sup}) only when its events go somewhere
%% ({@link falco_telemetry}). `start' when the request reaches the chain;
%% `stop' when its response is complete as the client sees it, or
%% `exception' when the chain raised: the rule of {@link falco_outcome},
%% shared with the access log.
%%
%% @private internal to falco
-module(falco_request_events).

-export([wrap/2]).

%% @doc The listener's handler chain with the request events around it
%% when `E' sends them somewhere, `Handler' itself otherwise:
%% `[falco, request, start]' when the request reaches the chain, then
%% `[falco, request, stop]' when its response is complete (see {@link
%% falco_outcome}) or `[falco, request, exception]' when the chain raised.
-spec wrap(falco_telemetry:emitter(), falco_handler:handler()) -> falco_handler:handler().
wrap(none, Handler) ->
    Handler;
wrap(E, Handler) ->
    Next = falco_middleware:compose([], Handler),
    fun(Req) -> request(E, Req, Next) end.

request(E, Req, Next) ->
    Meta = request_meta(Req),
    falco_telemetry:execute(E, [falco, request, start],
            #{monotonic_time => erlang:monotonic_time(), system_time => erlang:system_time()},
            Meta),
    falco_outcome:watch(Req, Next, fun(_, Outcome) -> request_end(E, Meta, Outcome) end).

request_end(E, Meta, #{status := Status, bytes := Bytes, start := Start, stop := Stop,
                       exception := Exception}) ->
    Measurements = #{duration => Stop - Start, monotonic_time => Stop, resp_body_bytes => Bytes},
    case Exception of
        undefined ->
            falco_telemetry:execute(E, [falco, request, stop], Measurements, Meta#{status => Status});
        {Class, Reason, Stack} ->
            falco_telemetry:execute(E, [falco, request, exception], Measurements,
                    Meta#{status => Status, kind => Class, reason => Reason,
                          stacktrace => Stack})
    end.

request_meta(Req) ->
    #{listener => maps:get(listener, Req, undefined),
      protocol => protocol(maps:get(version, Req, undefined)),
      method => maps:get(method, Req, undefined),
      path => maps:get(path, Req, undefined),
      peer => maps:get(peer, Req, undefined),
      req_body_bytes => declared_length(Req)}.

protocol({2, 0}) -> h2;
protocol({3, 0}) -> h3;
protocol(_) -> http1.

declared_length(#{body := {length, N}}) -> N;
declared_length(#{body := none}) -> 0;
declared_length(_) -> undefined.
