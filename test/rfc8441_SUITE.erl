%% RFC 8441, Bootstrapping WebSockets with HTTP/2, over a real listener:
%% SETTINGS_ENABLE_CONNECT_PROTOCOL (§3), the extended CONNECT (§4), the
%% session on the stream (§5) with the handler API of falco_ws_handler,
%% flow control (RFC 9113 §5.2) and the stream's and connection's ends.
%% The client is Python's h2 library (test/rfc8441_SUITE_data/h2ws_client.py,
%% one scenario per case, sending masked frames, RFC 6455 §5.3); the
%% memory figure uses falco_test_h2_client. Each case cites its section.
-module(rfc8441_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, init_per_suite/1, end_per_suite/1,
         init_per_testcase/2, end_per_testcase/2]).
-export([settings_enable_connect_protocol/1, echo_text_binary_fragmented/1,
         echo_compressed/1, server_close_ends_stream/1, client_end_stream_is_close/1,
         client_reset_ends_session/1, listener_stop_1001/1, drain_1001/1, protocol_on_get_malformed/1,
         protocol_without_setting_malformed/1, connect_without_path_malformed/1,
         refused_requests/1, send_blocked_by_window_resets/1, not_reading_bounds_client/1,
         many_streams_and_requests/1, idle_stream_memory/1, chromium_over_h2/1,
         idle_timeout_and_ping/1, quiet_stream_outlives_body_deadlines/1,
         oversize_message_1009/1, connection_error_ends_sessions/1]).

-define(PY, "/usr/bin/python3").

all() ->
    [{group, handshake}, {group, session}, {group, flow}].

groups() ->
    [{handshake, [parallel], [settings_enable_connect_protocol, protocol_on_get_malformed,
                              protocol_without_setting_malformed,
                              connect_without_path_malformed, refused_requests]},
     {session, [parallel], [echo_text_binary_fragmented, echo_compressed,
                            server_close_ends_stream, client_end_stream_is_close,
                            client_reset_ends_session, many_streams_and_requests,
                            idle_stream_memory, idle_timeout_and_ping,
                            quiet_stream_outlives_body_deadlines, oversize_message_1009]},
     {flow, [], [listener_stop_1001, drain_1001, connection_error_ends_sessions,
                 send_blocked_by_window_resets,
                 not_reading_bounds_client, chromium_over_h2]}].

init_per_suite(Config) ->
    case falco_test_tools:check([{python3_module, "h2"}]) of
        ok ->
            ok = falco_test_listener:start_app(),
            Config;
        NotThere ->
            NotThere
    end.

end_per_suite(_Config) ->
    ok.

init_per_testcase(Case, Config) ->
    ok = falco_test_listener:ensure_stopped(Case),
    [{listener, Case} | Config].

end_per_testcase(Case, _Config) ->
    falco_test_listener:ensure_stopped(Case).

%% -- helpers ---------------------------------------------------------------

%% A listener whose /ws upgrades with `WsOpts' (the test process gets the
%% handler's init and terminate), /deny refuses with 403 and /plain is an
%% ordinary route that does not upgrade. The routes are declared for GET:
%% the extended CONNECT is routed as one.
start(Config, WsOpts) ->
    start(Config, WsOpts, #{}).

start(Config, WsOpts, ListenerOpts) ->
    Name = ?config(listener, Config),
    Test = self(),
    Get = #{methods => [<<"GET">>]},
    Routes = [{<<"/ws">>, fun(_Req) -> {websocket, falco_test_ws_handler, #{test => Test},
                                         WsOpts} end, Get},
              {<<"/deny">>, fun(_) -> {403, [], <<"no">>} end, Get},
              {<<"/plain">>, fun(_) -> {200, [], <<"plain">>} end, Get}],
    {_, Port} = falco_test_listener:start(Name, maps:merge(#{routes => Routes, protocols => [h2]},
                                                           ListenerOpts)),
    Port.

script(Config) ->
    filename:join(?config(data_dir, Config), "h2ws_client.py").

%% Runs a scenario to its end: the JSON object of its last line.
py(Config, Port, Scenario) ->
    P = open(Config, Port, Scenario),
    Lines = lines(P, []),
    ct:log("~s: ~p", [Scenario, Lines]),
    {ok, Result} = falco_json:decode(lists:last(Lines)),
    Result.

open(Config, Port, Scenario) ->
    open_port({spawn_executable, ?PY},
              [{args, [script(Config), integer_to_list(Port), Scenario]}, {line, 1048576},
               binary, exit_status, use_stdio, stderr_to_stdout]).

lines(P, Acc) ->
    receive
        {P, {data, {eol, Line}}} -> lines(P, [Line | Acc]);
        {P, {exit_status, 0}} -> lists:reverse(Acc);
        {P, {exit_status, N}} -> ct:fail({python_exit, N, lists:reverse(Acc)})
    after 60000 ->
        ct:fail({python_timeout, lists:reverse(Acc)})
    end.

line(P) ->
    receive
        {P, {data, {eol, Line}}} -> Line;
        {P, {exit_status, N}} -> ct:fail({python_exit, N})
    after 30000 ->
        ct:fail(python_timeout)
    end.

init() ->
    receive {ws_init, P, _} -> P after 10000 -> ct:fail(no_init) end.

terminated() ->
    receive {ws_terminate, _, Reason} -> Reason after 10000 -> ct:fail(no_terminate) end.

%% Runs Fun with error events captured; returns {Result, [Text]}.
with_log(Fun) ->
    ok = falco_test_tree:capture_log(?MODULE, error),
    try
        Result = Fun(),
        timer:sleep(200),
        {Result, [lists:flatten(io_lib:format("~0p", [Msg]))
                  || #{msg := Msg} <- falco_test_tree:logged()]}
    after
        logger:remove_handler(?MODULE)
    end.

%% -- §3, §4 the setting and the extended CONNECT ----------------------------

%% §3: falco's SETTINGS carry SETTINGS_ENABLE_CONNECT_PROTOCOL (0x8) = 1.
settings_enable_connect_protocol(Config) ->
    Port = start(Config, #{}),
    #{<<"settings">> := S} = py(Config, Port, "settings"),
    ?assertEqual(1, maps:get(<<"8">>, S)).

%% §4: `:protocol' on a method other than CONNECT is malformed: the stream
%% is reset with PROTOCOL_ERROR (0x1), the connection goes on.
protocol_on_get_malformed(Config) ->
    Port = start(Config, #{}),
    R = py(Config, Port, "protocol_on_get"),
    ?assertMatch(#{<<"reset">> := 1, <<"status">> := null, <<"plain">> := 200}, R).

%% §3, §4: with the setting off (h2_enable_connect_protocol => false) it is
%% not sent, and a `:protocol' is malformed as before RFC 8441.
protocol_without_setting_malformed(Config) ->
    Port = start(Config, #{}, #{h2_enable_connect_protocol => false}),
    R = py(Config, Port, "protocol_unannounced"),
    ?assertMatch(#{<<"reset">> := 1, <<"plain">> := 200, <<"setting">> := null}, R).

%% §4: an extended CONNECT carries `:scheme' and `:path'.
connect_without_path_malformed(Config) ->
    Port = start(Config, #{}),
    ?assertMatch(#{<<"reset">> := 1, <<"status">> := null},
                 py(Config, Port, "connect_without_path")).

%% What is not a session gets an HTTP answer, never a 2xx (which the client
%% would take for an open tunnel, RFC 9113 §8.5): another `:protocol' is
%% not served (501); no Sec-WebSocket-Version is RFC 6455 §4.4's 426; the
%% handler refuses with its own 403; a handler that does not upgrade
%% answers 200, sent as 501; an unknown path is 404.
refused_requests(Config) ->
    Port = start(Config, #{}),
    #{<<"refused">> := R} = py(Config, Port, "refused"),
    ?assertEqual([[<<"/ws">>, <<"connect-udp">>, 501, null],
                  [<<"/ws">>, <<"websocket">>, 426, null],
                  [<<"/deny">>, <<"websocket">>, 403, null],
                  [<<"/plain">>, <<"websocket">>, 501, null],
                  [<<"/missing">>, <<"websocket">>, 404, null]], R).

%% -- §5 the session on the stream ---------------------------------------------

%% §5: after the 200, DATA carries the frames: a text and a binary message
%% and a text message in two fragments with a ping between (RFC 6455 §5.4)
%% come back; the client's close (1000) is answered and the stream ended.
echo_text_binary_fragmented(Config) ->
    Port = start(Config, #{}),
    R = py(Config, Port, "echo"),
    ?assertMatch(#{<<"status">> := 200, <<"close">> := 1000, <<"ended">> := true,
                   <<"reset">> := null}, R),
    ?assertEqual([[<<"text">>, <<"hello">>], [<<"binary">>, <<"0001feff">>],
                  [<<"text">>, <<"fragmented ", 16#c3, 16#a9>>]],
                 maps:get(<<"messages">>, R)),
    _ = init(),
    ?assertEqual({remote, 1000, <<>>}, terminated()).

%% RFC 7692 over §5: permessage-deflate is negotiated on the extended
%% CONNECT as on the GET, with context takeover across messages.
echo_compressed(Config) ->
    Port = start(Config, #{compress => true}),
    R = py(Config, Port, "echo_deflate"),
    ?assertMatch(#{<<"status">> := 200, <<"close">> := 1000, <<"ended">> := true}, R),
    ?assertMatch(<<"permessage-deflate", _/binary>>, maps:get(<<"extensions">>, R)),
    ?assertEqual([[<<"text">>, <<"compressed hello">>], [<<"text">>, <<"compressed hello">>],
                  [<<"text">>, binary:copy(<<"x">>, 5000)]], maps:get(<<"messages">>, R)).

%% §5: the handler closes (1000); the client answers and ends its side;
%% ours ends with END_STREAM and the handler is told `normal'.
server_close_ends_stream(Config) ->
    Port = start(Config, #{}),
    R = py(Config, Port, "server_close"),
    ?assertMatch(#{<<"server_close">> := 1000, <<"ended">> := true, <<"reset">> := null}, R),
    _ = init(),
    ?assertEqual(normal, terminated()).

%% §5: the client's END_STREAM without a close frame is the TCP close of
%% HTTP/1.1: `{error, closed}', and our side ends too.
client_end_stream_is_close(Config) ->
    Port = start(Config, #{}),
    R = py(Config, Port, "peer_end"),
    ?assertMatch(#{<<"messages">> := [[<<"text">>, <<"hi">>]], <<"ended">> := true}, R),
    _ = init(),
    ?assertEqual({error, closed}, terminated()).

%% §5, RFC 9113 §6.4: RST_STREAM from the client ends the session: the
%% handler's terminate says so, nothing is logged as a crash, and the
%% connection serves the next request.
client_reset_ends_session(Config) ->
    Port = start(Config, #{}),
    {R, Logged} = with_log(fun() ->
                                   R0 = py(Config, Port, "reset"),
                                   _ = init(),
                                   ?assertEqual({error, {peer_reset, cancel}}, terminated()),
                                   R0
                           end),
    ?assertMatch(#{<<"messages">> := [[<<"text">>, <<"before reset">>]], <<"plain">> := 200},
                 R),
    ?assertEqual([], Logged).

%% Five sessions and three ordinary requests on one connection at once.
many_streams_and_requests(Config) ->
    Port = start(Config, #{}),
    #{<<"ws">> := Ws, <<"plain">> := Plain} = py(Config, Port, "many"),
    ?assertEqual([200, 200, 200, 200, 200], Plain),
    ?assertEqual([[200, [[<<"text">>, <<"stream ", (integer_to_binary(I))/binary>>]], 1000]
                  || I <- lists:seq(0, 4)], Ws).

%% The session's options behave as over HTTP/1.1: a silent client gets a
%% ping after `ping_interval', then a close (1000) after `idle_timeout',
%% with END_STREAM; the handler is told `timeout'.
idle_timeout_and_ping(Config) ->
    Port = start(Config, #{idle_timeout => 1000, ping_interval => 300}),
    R = py(Config, Port, "idle"),
    ?assertMatch(#{<<"close">> := 1000, <<"ended">> := true, <<"reset">> := null}, R),
    ?assert(maps:get(<<"pings">>, R) >= 1),
    _ = init(),
    ?assertEqual(timeout, terminated()).

%% The stream's body deadlines (body_timeout, min_body_rate,
%% handler_timeout) are the request's, not the session's: a stream quiet
%% for 2.5 s on a listener whose deadlines are 300 ms still echoes.
quiet_stream_outlives_body_deadlines(Config) ->
    Port = start(Config, #{}, #{body_timeout => 300, handler_timeout => 300,
                                min_body_rate => #{grace => 0, bytes_per_second => 1000}}),
    R = py(Config, Port, "quiet"),
    ?assertMatch(#{<<"messages">> := [[<<"text">>, <<"still here">>]], <<"close">> := 1000,
                   <<"ended">> := true, <<"reset">> := null}, R),
    _ = init(),
    ?assertEqual({remote, 1000, <<>>}, terminated()).

%% max_message_size as over HTTP/1.1 (RFC 6455 §7.4.1): 1009, the
%% stream ended.
oversize_message_1009(Config) ->
    Port = start(Config, #{max_message_size => 1000}),
    R = py(Config, Port, "oversize"),
    ?assertMatch(#{<<"messages">> := [[<<"text">>, <<"small">>]], <<"close">> := 1009,
                   <<"ended">> := true}, R),
    _ = init(),
    ?assertMatch({protocol_error, 1009, _}, terminated()).

%% The memory of an idle session on an HTTP/2 stream (its process, after
%% hibernation), reported; bounded like one over HTTP/1.1.
idle_stream_memory(Config) ->
    Port = start(Config, #{}),
    C0 = falco_test_h2_client:connect(Port, #{}),
    ?assertEqual(true, maps:get(enable_connect_protocol,
                                maps:get(server_settings, C0), false)),
    Fields = [{<<":method">>, <<"CONNECT">>}, {<<":protocol">>, <<"websocket">>},
              {<<":scheme">>, <<"http">>}, {<<":path">>, <<"/ws">>},
              {<<":authority">>, <<"localhost">>}, {<<"sec-websocket-version">>, <<"13">>}],
    C1 = falco_test_h2_client:headers_frame(C0, 1, Fields, nofin),
    {ok, {fields, 1, nofin, Resp}, C2} =
        falco_test_h2_client:until(C1, fun({fields, 1, _, _}) -> true; (_) -> false end, 5000),
    ?assertEqual(<<"200">>, proplists:get_value(<<":status">>, Resp)),
    Pid = init(),
    timer:sleep(100),
    {memory, Awake} = process_info(Pid, memory),
    %% a masked "hibernate" text frame: the handler hibernates
    Key = <<1, 2, 3, 4>>,
    Frame = <<1:1, 0:3, 1:4, 1:1, 9:7, Key/binary,
              (falco_ws_frame:mask(<<"hibernate">>, Key))/binary>>,
    C3 = falco_test_h2_client:send_frame(C2, falco_http2_frame:data(1, nofin, Frame)),
    {ok, {data, 1, nofin, _, _}, C4} =
        falco_test_h2_client:until(C3, fun({data, 1, _, _, _}) -> true; (_) -> false end, 5000),
    timer:sleep(200),
    {memory, Hibernated} = process_info(Pid, memory),
    ct:comment("idle h2 WebSocket session: ~b bytes, ~b hibernated", [Awake, Hibernated]),
    ct:log("idle h2 WebSocket session process: ~b bytes awake, ~b hibernated",
           [Awake, Hibernated]),
    ?assert(Hibernated < Awake),
    ?assert(Hibernated < 4096),
    falco_test_h2_client:close(C4).

%% -- the ends of the session and flow control -----------------------------------

%% As over HTTP/1.1, the listener's stop sends 1001 on every session
%% (ending the stream), then GOAWAY; the handler is told `shutdown'.
listener_stop_1001(Config) ->
    Port = start(Config, #{}),
    P = open(Config, Port, "listener_stop"),
    ?assertEqual(<<"ready">>, line(P)),
    _ = init(),
    %% the immediate stop: the session says 1001 on its stream at once
    %% (a drain closes it with a close handshake the blocked client would
    %% not answer until the drain's deadline)
    ok = falco:stop_listener(?config(listener, Config), immediate),
    true = port_command(P, <<"\n">>),
    {ok, R} = falco_json:decode(lists:last(lines(P, []))),
    ct:log("~p", [R]),
    ?assertMatch(#{<<"close">> := 1001, <<"ended">> := true, <<"goaway">> := 0}, R),
    ?assertEqual(shutdown, terminated()).

%% A drain (issue 15) over HTTP/2: the session on the stream closes with
%% 1001 and a close handshake, the stream ends, the connection sends its
%% GOAWAY (NO_ERROR) and the drain counts the connection as completed,
%% none stopped at its deadline.
drain_1001(Config) ->
    Name = ?config(listener, Config),
    Port = start(Config, #{}),
    P = open(Config, Port, "drain"),
    ?assertEqual(<<"ready">>, line(P)),
    _ = init(),
    Test = self(),
    _ = spawn_link(fun() -> Test ! {drained, falco:drain(Name, 10000)} end),
    {ok, R} = falco_json:decode(lists:last(lines(P, []))),
    ct:log("~p", [R]),
    ?assertMatch(#{<<"server_close">> := 1001, <<"ended">> := true, <<"reset">> := null,
                   <<"goaway">> := 0, <<"goaways">> := [16#7fffffff, 1]}, R),
    ?assertEqual(shutdown, terminated()),
    receive
        {drained, Drained} ->
            ?assertMatch({ok, #{connections := 1, completed := 1, stopped := 0}}, Drained)
    after 15000 ->
        ct:fail(drain_did_not_return)
    end.

%% RFC 9113 §5.4.1, §6.8: a connection error ends the connection with
%% GOAWAY, and with it the sessions on its streams: `{error, closed}',
%% nothing logged as a crash.
connection_error_ends_sessions(Config) ->
    Port = start(Config, #{}),
    {R, Logged} = with_log(fun() ->
                                   R0 = py(Config, Port, "conn_error"),
                                   _ = init(),
                                   ?assertEqual({error, closed}, terminated()),
                                   R0
                           end),
    %% PROTOCOL_ERROR
    ?assertMatch(#{<<"goaway">> := 1, <<"messages">> := [[<<"text">>, <<"up">>]]}, R),
    ?assertEqual([], Logged).

%% RFC 9113 §5.2: a client that gives no window back blocks the session's
%% sends (it queues at most h2_send_buffer); past h2_send_min_rate over
%% send_timeout the stream is reset (CANCEL) and the handler told
%% `{error, send_timeout}'.
send_blocked_by_window_resets(Config) ->
    Port = start(Config, #{}, #{send_timeout => 1000, h2_send_min_rate => 1000000}),
    T0 = erlang:monotonic_time(millisecond),
    R = py(Config, Port, "no_ack"),
    Took = erlang:monotonic_time(millisecond) - T0,
    ?assertMatch(#{<<"reset">> := 8}, R),
    %% the 65,535-byte window, no more (the handler asked for 8 x 64 KB)
    ?assert(maps:get(<<"received">>, R) =< 65535),
    _ = init(),
    ?assertEqual({error, send_timeout}, terminated()),
    ?assert(Took < 15000).

%% RFC 9113 §5.2, §6.9: a session whose handler does not return reads
%% nothing, so the client is stopped by the stream window instead of the
%% server buffering what it sends; released, it echoes every message.
not_reading_bounds_client(Config) ->
    Port = start(Config, #{}),
    P = open(Config, Port, "not_reading"),
    ?assertEqual(<<"ready">>, line(P)),
    Pid = init(),
    receive {ws_blocked, Pid} -> ok after 10000 -> ct:fail(not_blocked) end,
    true = port_command(P, <<"\n">>),
    {ok, #{<<"sent">> := Sent}} = falco_json:decode(line(P)),
    {memory, Mem} = process_info(Pid, memory),
    ct:log("sent ~b bytes before the window closed; session process ~b bytes", [Sent, Mem]),
    ?assert(Sent > 0),
    %% 8,008-byte frames (8,000 bytes masked)
    ?assert(Sent =< 2 * 65536 + 8008),
    Pid ! release,
    true = port_command(P, <<"\n">>),
    {ok, R} = falco_json:decode(lists:last(lines(P, []))),
    ?assertEqual(Sent div 8008, maps:get(<<"echoed">>, R)).

%% -- a browser ------------------------------------------------------------------------

%% Headless Chromium, on a page served over TLS + HTTP/2, opens its
%% WebSocket on the same connection with an extended CONNECT (§3-§5: it
%% does when the server's SETTINGS allow it): the request reaches the
%% route as a GET of version {2, 0}, and a message round-trips.
chromium_over_h2(Config) ->
    Exe = falco_test_browser:find(),
    ok = falco_test_tools:require(["chromium"]),
    Name = ?config(listener, Config),
    Test = self(),
    Page = <<"<!doctype html><pre id=log>waiting</pre>">>,
    Routes = [{<<"/">>, fun(_) -> {200, [{<<"content-type">>, <<"text/html">>}], Page} end},
              {<<"/ws">>, fun(Req) ->
                                  Test ! {ws_version, maps:get(version, Req)},
                                  {websocket, falco_test_ws_handler, #{test => Test}, #{}}
                          end, #{methods => [<<"GET">>]}}],
    {_, Port} = falco_test_listener:start(Name, falco_test_listener:tls(#{routes => Routes})),
    %% DevTools (falco_test_browser): the page is loaded, then the script
    %% runs and its promise is awaited, every step with a deadline
    Browser = falco_test_browser:start(Exe, ?config(priv_dir, Config)),
    try
        Sock = falco_test_browser:connect(Browser),
        Url = list_to_binary("https://127.0.0.1:" ++ integer_to_list(Port) ++ "/"),
        {Target, Session} = falco_test_browser:open(Sock, Url, 20000),
        Js = <<"new Promise((resolve, reject) => {"
               " const ws = new WebSocket('wss://' + location.host + '/ws');"
               " const t = setTimeout(() => reject(new Error('no echo in 15 s')), 15000);"
               " ws.onopen = () => ws.send('hello over h2');"
               " ws.onerror = () => reject(new Error('websocket error'));"
               " let got = null;"
               " ws.onmessage = (e) => { got = e.data; ws.close(1000); };"
               %% resolved once the server's close frame is back, so the
               %% server has read the client's before the page goes away
               %% (closing the page first resets the stream: CANCEL)
               " ws.onclose = (e) => { clearTimeout(t);"
               "   if (got === null) reject(new Error('closed ' + e.code));"
               "   else resolve('received: ' + got + ', closed ' + e.code); }; })">>,
        Result = falco_test_browser:eval(Sock, Session, Js),
        ct:log("~p", [Result]),
        ok = falco_test_browser:close_page(Sock, Target),
        ?assertEqual({ok, <<"received: hello over h2, closed 1000">>}, Result),
        ?assertEqual({2, 0}, receive {ws_version, V} -> V after 1000 -> none end),
        _ = init(),
        ?assertMatch({remote, 1000, _}, terminated())
    after
        ct:log("browser: ~p", [falco_test_browser:stop(Browser)])
    end.
