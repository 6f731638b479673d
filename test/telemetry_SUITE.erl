%% falco's events (docs/guide/telemetry.md) through a listener's
%% `event_handler' and through `telemetry' (a stand-in with its signatures,
%% loaded only for this suite: test/telemetry_SUITE_data/telemetry.erl.txt),
%% over HTTP/1.1 and HTTP/2: request start/stop/exception/rejected,
%% connection accepted/closed, drain start/stop; a failing handler does not
%% fail the request; without either, no wrapper is installed at all.
-module(telemetry_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1, init_per_testcase/2, end_per_testcase/2]).
-export([request_events_http1/1, request_events_h2/1, exception_event/1, rejected_events/1,
         connection_events/1, drain_events/1, tls_handshake_failed/1, flood_event/1, failing_handler/1, through_telemetry/1,
         nothing_without_handlers/1]).
-export([handle_event/4]).

-define(C, falco_test_client).
-define(H2, falco_test_h2_client).

all() ->
    [request_events_http1, request_events_h2, exception_event, rejected_events,
     connection_events, drain_events, tls_handshake_failed, flood_event, failing_handler, nothing_without_handlers,
     through_telemetry].

init_per_suite(Config) ->
    ok = falco_test_listener:start_app(),
    Config.

end_per_suite(_Config) ->
    ok.

init_per_testcase(Case, Config) ->
    [{name, Case} | Config].

end_per_testcase(Case, _Config) ->
    ok = falco_test_listener:ensure_stopped(Case, immediate),
    unload_telemetry(),
    ok.

%% -- helpers ---------------------------------------------------------------------------

start(Config, Opts) ->
    Test = self(),
    Handler = fun(Req) ->
                      case falco_req:path(Req) of
                          <<"/crash">> -> error(boom);
                          <<"/slow">> -> timer:sleep(300), {200, [], <<"slow">>};
                          _ -> {200, [{<<"content-type">>, <<"text/plain">>}], <<"hello">>}
                      end
              end,
    Events = fun(Event, M, Md) -> Test ! {event, Event, M, Md} end,
    {_Sup, Port} = falco_test_listener:start(?config(name, Config), Handler,
                                             maps:merge(#{event_handler => Events}, Opts)),
    Port.

event(Name) ->
    receive {event, Name, M, Md} -> {M, Md}
    after 5000 -> ct:fail({no_event, Name})
    end.

no_event(Name) ->
    receive {event, Name, M, Md} -> ct:fail({unexpected_event, Name, M, Md})
    after 300 -> ok
    end.

get(Port, Path) ->
    falco_test_http:fetch(http, Port, <<"GET">>, Path, [], <<>>).

%% -- cases -----------------------------------------------------------------------------

request_events_http1(Config) ->
    Port = start(Config, #{}),
    #{status := 200} = get(Port, <<"/hello">>),
    {StartM, StartMd} = event([falco, request, start]),
    ?assertMatch(#{monotonic_time := _, system_time := _}, StartM),
    ?assertMatch(#{listener := request_events_http1, protocol := http1, method := <<"GET">>,
                   path := <<"/hello">>, peer := {{127, 0, 0, 1}, _}}, StartMd),
    {StopM, StopMd} = event([falco, request, stop]),
    ?assertMatch(#{duration := D, resp_body_bytes := 5} when is_integer(D) andalso D >= 0, StopM),
    ?assertMatch(#{status := 200, protocol := http1, path := <<"/hello">>}, StopMd).

request_events_h2(Config) ->
    Port = start(Config, #{}),
    C0 = ?H2:connect(Port, #{}),
    {Id, C1} = ?H2:request(C0, <<"GET">>, <<"/h2">>),
    {ok, #{status := 200}, C2} = ?H2:response(C1, Id),
    {_, StartMd} = event([falco, request, start]),
    ?assertMatch(#{protocol := h2, path := <<"/h2">>}, StartMd),
    {StopM, StopMd} = event([falco, request, stop]),
    ?assertMatch(#{resp_body_bytes := 5}, StopM),
    ?assertMatch(#{status := 200, protocol := h2}, StopMd),
    ?H2:close(C2).

exception_event(Config) ->
    Port = start(Config, #{}),
    #{status := 500} = get(Port, <<"/crash">>),
    _ = event([falco, request, start]),
    {M, Md} = event([falco, request, exception]),
    ?assertMatch(#{duration := _}, M),
    ?assertMatch(#{kind := error, reason := boom, status := 500, stacktrace := [_ | _]}, Md),
    no_event([falco, request, stop]),
    %% the 500 that follows a crash is not a rejection
    no_event([falco, request, rejected]).

%% Limits, with their names, over both protocols; the handler never runs
%% (no request events).
rejected_events(Config) ->
    Port = start(Config, #{max_body => 10, max_header_line => 200}),
    {S1, {ok, #{status := 413}}} =
        ?C:request(Port, [<<"POST /up HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n">>,
                          binary:copy(<<"x">>, 100)]),
    ?C:close(S1),
    {_, Md} = event([falco, request, rejected]),
    ?assertMatch(#{reason := content_too_large, status := 413, listener := rejected_events,
                   method := <<"POST">>, path := <<"/up">>}, Md),
    #{status := 431} = falco_test_http:fetch(http, Port, <<"GET">>, <<"/">>,
                                             [{<<"x-long">>, binary:copy(<<"a">>, 300)}], <<>>),
    {_, Md2} = event([falco, request, rejected]),
    ?assertMatch(#{status := 431, listener := rejected_events}, Md2),
    C0 = ?H2:connect(Port, #{}),
    {Id, C1} = ?H2:request(C0, <<"POST">>, <<"/up">>,
                           [{<<"content-length">>, <<"100">>}], binary:copy(<<"x">>, 100)),
    {ok, #{status := 413}, C2} = ?H2:response(C1, Id),
    {_, Md3} = event([falco, request, rejected]),
    ?assertMatch(#{reason := content_too_large, status := 413}, Md3),
    ?H2:close(C2),
    no_event([falco, request, start]).

connection_events(Config) ->
    Port = start(Config, #{}),
    Sock = ?C:connect(Port),
    {_, Md} = event([falco, connection, accepted]),
    ?assertMatch(#{listener := connection_events, pid := P} when is_pid(P), Md),
    ?C:close(Sock),
    {M, Md2} = event([falco, connection, closed]),
    ?assertMatch(#{duration := D} when is_integer(D) andalso D > 0, M),
    ?assertEqual(maps:get(pid, Md), maps:get(pid, Md2)),
    ?assertMatch(#{reason := normal}, Md2).

drain_events(Config) ->
    Port = start(Config, #{num_acceptors => 1}),
    Sock = ?C:connect(Port),
    ?C:send(Sock, <<"GET /slow HTTP/1.1\r\nhost: x\r\n\r\n">>),
    _ = event([falco, request, start]),
    {ok, #{connections := 1}} = falco:drain(?config(name, Config), 5000),
    {M, Md} = event([falco, drain, start]),
    ?assertMatch(#{connections := 1}, M),
    ?assertMatch(#{listener := drain_events, acceptor := 1}, Md),
    {M2, _} = event([falco, drain, stop]),
    ?assertMatch(#{connections := 1, completed := 1, stopped := 0, duration := _}, M2),
    ?C:close(Sock).

%% A client that sends no TLS ClientHello but bytes of something else.
tls_handshake_failed(Config) ->
    Test = self(),
    Events = fun(Event, M, Md) -> Test ! {event, Event, M, Md} end,
    {_, Port} = falco_test_listener:start(?config(name, Config), fun(_) -> {200, [], <<>>} end,
                                           falco_test_listener:tls(#{event_handler => Events})),
    Sock = ?C:connect(Port),
    ?C:send(Sock, <<"GET / HTTP/1.1\r\nhost: x\r\n\r\n">>),
    {_, Md} = event([falco, tls, handshake_failed]),
    ?assertMatch(#{listener := tls_handshake_failed, reason := _}, Md),
    ct:log("handshake_failed reason: ~p", [maps:get(reason, Md)]),
    ?C:close(Sock).

%% An HTTP/2 client over a flood budget (here PINGs): GOAWAY, and the
%% event names the budget.
flood_event(Config) ->
    Port = start(Config, #{h2_flood_limits => #{ping => 5}}),
    C0 = ?H2:connect(Port, #{}),
    C1 = lists:foldl(fun(N, C) -> ?H2:send_frame(C, falco_http2_frame:ping(<<N:64>>)) end,
                     C0, lists:seq(1, 10)),
    {ok, enhance_your_calm, C2} = ?H2:goaway(C1, 5000),
    {_, Md} = event([falco, connection, flood]),
    ?assertMatch(#{listener := flood_event, limit := ping, peer := {{127, 0, 0, 1}, _}}, Md),
    ?H2:close(C2).

%% A handler that raises: the request is served, one warning is logged.
failing_handler(Config) ->
    falco_test_tree:capture_log(failing_handler, warning),
    try
        {_, Port} = falco_test_listener:start(?config(name, Config),
                                              fun(_) -> {200, [], <<"ok">>} end,
                                              #{event_handler => fun(_, _, _) -> error(nope) end}),
        Sock = ?C:connect(Port),
        _ = [begin
                 ?C:send(Sock, <<"GET / HTTP/1.1\r\nhost: x\r\n\r\n">>),
                 {ok, #{status := 200, body := <<"ok">>}} = ?C:recv_response(Sock)
             end || _ <- lists:seq(1, 3)],
        ?C:close(Sock),
        timer:sleep(200),
        Pids = [Pid || E = #{level := warning, meta := #{pid := Pid}} <- falco_test_tree:logged(),
                       is_request_process_log(E)],
        %% once per process (the acceptor's connection events, the
        %% connection's 6 request events), whatever the number of events
        ct:log("warnings from ~p", [Pids]),
        ?assertEqual(lists:usort(Pids), lists:sort(Pids)),
        ?assert(length(Pids) =< 2 andalso length(Pids) >= 1)
    after
        logger:remove_handler(failing_handler)
    end.

is_request_process_log(#{msg := {"~ts", [Text]}}) ->
    string:find(Text, "event_handler failed") =/= nomatch;
is_request_process_log(_) ->
    false.

%% Neither telemetry nor event_handler: no wrapper around the handler
%% (wrap/2 gives the handler itself) and `none' for the listener, which the
%% other event sites test first.
nothing_without_handlers(Config) ->
    Name = ?config(name, Config),
    H = fun(_) -> {200, [], <<"plain">>} end,
    {_Sup, Port} = falco_test_listener:start(Name, H, #{}),
    ?assertEqual(none, falco_telemetry:for(Name)),
    ?assertEqual(none, falco_telemetry:emitter(Name, #{})),
    ?assert(falco_request_events:wrap(none, H) =:= H),
    #{status := 200} = get(Port, <<"/">>),
    no_event([falco, request, start]).

%% The telemetry library when it is loaded: events go through execute/3
%% to handlers attached the usual way.
through_telemetry(Config) ->
    load_telemetry(Config),
    Test = self(),
    ok = telemetry:attach(falco_test, [falco, request, stop], fun ?MODULE:handle_event/4, Test),
    {_, Port} = falco_test_listener:start(?config(name, Config),
                                          fun(_) -> {200, [], <<"t">>} end, #{}),
    #{status := 200} = get(Port, <<"/t">>),
    receive {telemetry, [falco, request, stop], #{duration := _}, #{status := 200, path := <<"/t">>}} -> ok
    after 5000 -> ct:fail(no_telemetry_event)
    end.

handle_event(Event, M, Md, Test) ->
    Test ! {telemetry, Event, M, Md}.

load_telemetry(Config) ->
    %% kept as .txt so that no build of the test directory picks it up
    Src = filename:join(?config(priv_dir, Config), "telemetry.erl"),
    {ok, _} = file:copy(filename:join(?config(data_dir, Config), "telemetry.erl.txt"), Src),
    {ok, telemetry, Bin} = compile:file(Src, [binary, report]),
    {module, telemetry} = code:load_binary(telemetry, "telemetry.erl", Bin),
    ok.

unload_telemetry() ->
    _ = code:purge(telemetry),
    _ = code:delete(telemetry),
    _ = code:purge(telemetry),
    ok.
