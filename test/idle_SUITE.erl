%% Idle connections and hibernation (the listener's `hibernate_after'):
%% an idle HTTP/1.1 keep-alive connection, an HTTP/2 connection with no
%% stream open and a WebSocket session hibernate once nothing has come
%% for `hibernate_after', serve the next request (message) when it comes,
%% and are still closed by their idle timeout on time, the hibernation
%% moving no deadline. Over TLS, ssl's own processes for the connection
%% (its receiver and its sender) hibernate too, after the same time. With
%% `hibernate_after => infinity' they do not hibernate.
-module(idle_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1, end_per_testcase/2]).
-export([http1_hibernates/1, h2_hibernates/1, websocket_hibernates/1, h2_websocket_hibernates/1,
         h2_idle_timer_spans_a_slow_stream/1, never_with_infinity/1, option_validated/1,
         tls_hibernates/1]).

-define(C, falco_test_client).
-define(H2, falco_test_h2_client).
-define(WS, falco_test_ws_client).
%% Short enough for a fast suite, long enough for a loaded machine.
-define(HIBERNATE_AFTER, 200).
-define(IDLE, 2500).

all() ->
    [http1_hibernates, h2_hibernates, websocket_hibernates, h2_websocket_hibernates,
     h2_idle_timer_spans_a_slow_stream, never_with_infinity, option_validated, tls_hibernates].

init_per_suite(Config) ->
    ok = falco_test_listener:start_app(),
    Config.

end_per_suite(_Config) ->
    ok.

end_per_testcase(Case, _Config) ->
    ok = falco_test_listener:ensure_stopped(Case, immediate),
    ok.

handler(Test) ->
    fun(Req) ->
            case falco_req:path(Req) of
                <<"/ws">> ->
                    {websocket, falco_test_ws_handler, #{test => Test},
                     #{idle_timeout => ?IDLE}};
                <<"/slow">> ->
                    timer:sleep(?IDLE + 500),
                    {200, [], <<"slow">>};
                _ ->
                    {200, [], <<"ok">>}
            end
    end.

listener(Name, Opts) ->
    falco_test_listener:start(Name, handler(self()),
                              maps:merge(#{hibernate_after => ?HIBERNATE_AFTER,
                                           idle_timeout => ?IDLE}, Opts)).

hibernated(Pid) ->
    process_info(Pid, current_function) =:= {current_function, {erlang, hibernate, 3}}.

%% Waits for `Pid' to hibernate; fails if it does not within 3 s.
await_hibernated(Pid) ->
    case ?C:wait_until(fun() -> hibernated(Pid) end, 3000) of
        ok -> ok;
        _ -> ct:fail({not_hibernated, Pid, process_info(Pid, [current_function, memory])})
    end.

%% How long after `Since' the server closed `Sock' (a raw TCP socket),
%% data before the close (a GOAWAY, a close frame) read and dropped.
closed_after(Sock, Since) ->
    closed_after(Sock, Since, ?IDLE + 5000).

closed_after(Sock, Since, Timeout) ->
    case gen_tcp:recv(Sock, 0, Timeout) of
        {ok, _} -> closed_after(Sock, Since, Timeout);
        {error, closed} -> erlang:monotonic_time(millisecond) - Since;
        {error, Other} -> ct:fail({not_closed, Other})
    end.

%% Closed at the idle timeout counted from `Since' (the last exchange),
%% not later: a hibernation that reset or lost the timer would make it
%% late (or never).
on_time(Elapsed) ->
    ct:log("closed ~b ms after the last exchange (idle_timeout ~b)", [Elapsed, ?IDLE]),
    ?assert(Elapsed >= ?IDLE - 100),
    ?assert(Elapsed =< ?IDLE + 1500).

get_ok(Sock) ->
    ?C:send(Sock, <<"GET / HTTP/1.1\r\nhost: x\r\n\r\n">>),
    {ok, #{status := 200}} = ?C:recv_response(Sock).

http1_hibernates(_Config) ->
    {Sup, Port} = listener(http1_hibernates, #{}),
    Sock = ?C:connect(Port),
    get_ok(Sock),
    Pid = falco_test_tree:one_conn(Sup),
    await_hibernated(Pid),
    %% it wakes for the next request, and hibernates again after it
    get_ok(Sock),
    Last = erlang:monotonic_time(millisecond),
    ?assertNot(hibernated(Pid)),
    await_hibernated(Pid),
    {memory, Mem} = process_info(Pid, memory),
    ct:log("hibernated HTTP/1.1 connection: ~b bytes", [Mem]),
    ?assertEqual(<<>>, ?C:take_buffer(Sock)),
    on_time(closed_after(Sock, Last)).

h2_hibernates(_Config) ->
    {Sup, Port} = listener(h2_hibernates, #{}),
    C0 = ?H2:connect(Port, #{}),
    {Id, C1} = ?H2:request(C0, <<"GET">>, <<"/">>),
    {ok, #{status := 200}, C2} = ?H2:response(C1, Id),
    Pid = falco_test_tree:one_conn(Sup),
    await_hibernated(Pid),
    {Id2, C3} = ?H2:request(C2, <<"GET">>, <<"/">>),
    {ok, #{status := 200}, #{sock := Sock}} = ?H2:response(C3, Id2),
    Last = erlang:monotonic_time(millisecond),
    await_hibernated(Pid),
    on_time(closed_after(Sock, Last)).

%% The HTTP/2 connection keeps its idle timer running across requests
%% (falco_http2_conn): armed after the first response, it fires while a
%% slow second stream is open, which must not close the connection; the
%% idle timeout then counts from that stream's response.
h2_idle_timer_spans_a_slow_stream(_Config) ->
    {_Sup, Port} = listener(h2_idle_timer_spans_a_slow_stream, #{hibernate_after => infinity}),
    C0 = ?H2:connect(Port, #{}),
    {Id, C1} = ?H2:request(C0, <<"GET">>, <<"/">>),
    {ok, #{status := 200}, C2} = ?H2:response(C1, Id),
    timer:sleep(500),
    {Id2, C3} = ?H2:request(C2, <<"GET">>, <<"/slow">>),
    {ok, #{status := 200, body := <<"slow">>}, #{sock := Sock}} = ?H2:response(C3, Id2),
    on_time(closed_after(Sock, erlang:monotonic_time(millisecond))).

websocket_hibernates(_Config) ->
    {_, Port} = listener(websocket_hibernates, #{}),
    {Sock, #{status := 101}} = ?WS:connect(Port, <<"/ws">>),
    Pid = falco_test_ws_handler:await_init(),
    await_hibernated(Pid),
    ok = ?WS:send(Sock, text, <<"after hibernation">>),
    ?assertEqual({text, <<"after hibernation">>}, ?WS:recv(Sock)),
    Last = erlang:monotonic_time(millisecond),
    await_hibernated(Pid),
    %% a message from another process wakes it too, and it sleeps again
    Pid ! {send, [{text, <<"pushed">>}]},
    ?assertEqual({text, <<"pushed">>}, ?WS:recv(Sock)),
    await_hibernated(Pid),
    %% the idle timeout (from the last byte received) closes it: 1000
    ?assertMatch({close, <<1000:16, _/binary>>}, ?WS:recv(Sock, ?IDLE + 5000)),
    on_time(erlang:monotonic_time(millisecond) - Last).

%% RFC 8441: the session on an HTTP/2 stream hibernates, and so does the
%% connection that holds only sessions.
h2_websocket_hibernates(_Config) ->
    {Sup, Port} = listener(h2_websocket_hibernates, #{}),
    C0 = ?H2:connect(Port, #{}),
    Fields = [{<<":method">>, <<"CONNECT">>}, {<<":protocol">>, <<"websocket">>},
              {<<":scheme">>, <<"http">>}, {<<":path">>, <<"/ws">>},
              {<<":authority">>, <<"localhost">>}, {<<"sec-websocket-version">>, <<"13">>}],
    C1 = ?H2:headers_frame(C0, 1, Fields, nofin),
    {ok, {fields, 1, nofin, Resp}, C2} =
        ?H2:until(C1, fun({fields, 1, _, _}) -> true; (_) -> false end, 5000),
    ?assertEqual(<<"200">>, proplists:get_value(<<":status">>, Resp)),
    Session = falco_test_ws_handler:await_init(),
    Conn = falco_test_tree:one_conn(Sup),
    await_hibernated(Session),
    await_hibernated(Conn),
    %% a masked text frame wakes both; the echo comes back
    Key = <<1, 2, 3, 4>>,
    Frame = <<1:1, 0:3, 1:4, 1:1, 5:7, Key/binary, (falco_ws_frame:mask(<<"hello">>, Key))/binary>>,
    C3 = ?H2:send_frame(C2, falco_http2_frame:data(1, nofin, Frame)),
    {ok, {data, 1, nofin, Echo, _}, C4} =
        ?H2:until(C3, fun({data, 1, _, _, _}) -> true; (_) -> false end, 5000),
    ?assertEqual(<<1:1, 0:3, 1:4, 0:1, 5:7, "hello">>, iolist_to_binary(Echo)),
    await_hibernated(Session),
    await_hibernated(Conn),
    ?H2:close(C4).

%% An idle TLS connection: falco's process and ssl's two (the connection
%% process, which receives, and its sender) all hibernate after the
%% listener's hibernate_after (falco_transport:tls_options/3), and the
%% connection serves the next request. ssl's processes are found as the
%% ones monitoring falco's (the ssl connection process monitors its owner)
%% and the children of their supervisor.
tls_hibernates(_Config) ->
    ok = falco_test_listener:start_tls_app(),
    {Sup, Port} = listener(tls_hibernates, falco_test_listener:tls(#{})),
    {ok, S} = ssl:connect({127, 0, 0, 1}, Port, [binary, {active, false}, {verify, verify_none},
                                                 {alpn_advertised_protocols, [<<"http/1.1">>]}]),
    TlsGet = fun() ->
                     ok = ssl:send(S, <<"GET / HTTP/1.1\r\nhost: x\r\n\r\n">>),
                     tls_response(S, <<>>)
             end,
    TlsGet(),
    Conn = falco_test_tree:one_conn(Sup),
    {monitored_by, Watchers} = process_info(Conn, monitored_by),
    [Receiver] = [P || P <- Watchers, is_pid(P),
                       element(1, proc_lib:initial_call(P)) =:= ssl_gen_statem],
    {dictionary, Dict} = process_info(Receiver, dictionary),
    [ConnSup | _] = proplists:get_value('$ancestors', Dict),
    SslPids = [P || {_, P, _, _} <- supervisor:which_children(ConnSup), is_pid(P)],
    ?assertEqual(2, length(SslPids)),
    ?assert(lists:member(Receiver, SslPids)),
    [await_hibernated(P) || P <- [Conn | SslPids]],
    %% they wake for the next request, and sleep again after it
    TlsGet(),
    [await_hibernated(P) || P <- [Conn | SslPids]],
    ct:log("hibernated TLS connection: ~p bytes (falco's, then ssl's)",
           [[element(2, process_info(P, memory)) || P <- [Conn | SslPids]]]),
    ok = ssl:close(S).

tls_response(S, Buf) ->
    case binary:split(Buf, <<"\r\n\r\n">>) of
        [<<"HTTP/1.1 200", _/binary>>, <<"ok">>] -> ok;
        _ ->
            {ok, Data} = ssl:recv(S, 0, 5000),
            tls_response(S, <<Buf/binary, Data/binary>>)
    end.

never_with_infinity(_Config) ->
    {Sup, Port} = listener(never_with_infinity, #{hibernate_after => infinity}),
    Sock = ?C:connect(Port),
    get_ok(Sock),
    Pid = falco_test_tree:one_conn(Sup),
    timer:sleep(5 * ?HIBERNATE_AFTER),
    ?assertNot(hibernated(Pid)),
    get_ok(Sock),
    ?C:close(Sock).

option_validated(_Config) ->
    H = fun(_) -> {200, [], <<>>} end,
    ?assertEqual({error, {invalid_option, hibernate_after, -1}},
                 falco_opts:validate(#{handler => H, hibernate_after => -1})),
    ?assertEqual({error, {invalid_option, hibernate_after, soon}},
                 falco_opts:validate(#{handler => H, hibernate_after => soon})),
    {ok, #{hibernate_after := 1000}} = falco_opts:validate(#{handler => H}).
