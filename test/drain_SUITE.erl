%% Graceful drain (falco:drain/2, falco:stop_listener/1,2) over every
%% protocol: requests in flight at drain time complete, idle connections
%% close at once, new connections are refused, HTTP/2 gets the two-step
%% GOAWAY (RFC 9113 §6.8), WebSocket gets 1001 (RFC 6455 §7.4.1), what is
%% left at the deadline is stopped, and nothing is logged as a crash.
-module(drain_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([init/1, all/0, init_per_suite/1, end_per_suite/1, init_per_testcase/2, end_per_testcase/2]).
-export([h1_in_flight_completes/1, h1_idle_closes_at_once/1, h1_new_connection_first_request/1,
         h2_two_step_goaway/1, h2_stream_after_first_goaway/1, ws_close_1001/1,
         deadline_stops_the_rest/1, stop_listener_drains/1, stop_listener_immediate/1,
         app_stop_drains/1, notice_keeps_serving/1]).

-define(C, falco_test_client).
-define(H2, falco_test_h2_client).
-define(WS, falco_test_ws_client).
-define(LOG, drain_suite_log).

all() ->
    [h1_in_flight_completes, h1_idle_closes_at_once, h1_new_connection_first_request,
     h2_two_step_goaway, h2_stream_after_first_goaway, ws_close_1001,
     deadline_stops_the_rest, stop_listener_drains, stop_listener_immediate, app_stop_drains,
     notice_keeps_serving].

init_per_suite(Config) ->
    ok = falco_test_listener:start_app(),
    Config.

end_per_suite(_Config) ->
    ok.

init_per_testcase(Case, Config) ->
    falco_test_tree:capture_log(?LOG, error),
    [{name, Case} | Config].

end_per_testcase(Case, _Config) ->
    _ = logger:remove_handler(?LOG),
    ok = falco_test_listener:ensure_stopped(Case, immediate),
    ok.

%% @private the user's supervisor of app_stop_drains
init({user_sup, Spec}) ->
    {ok, {#{strategy => one_for_one, intensity => 1, period => 5}, [Spec]}}.

%% -- the listener ------------------------------------------------------------------

%% /slow/Ms answers after Ms ms and tells the test when it starts; /ws
%% upgrades to the test's echo handler; anything else answers at once.
start(Config) ->
    start(Config, #{}).

start(Config, Opts) ->
    Test = self(),
    Handler = fun(Req) -> handle(Req, Test) end,
    {_Sup, Port} = falco_test_listener:start(?config(name, Config), Handler, Opts),
    Port.

handle(Req, Test) ->
    case falco_req:path(Req) of
        <<"/slow/", Ms/binary>> ->
            Test ! {in_handler, self()},
            timer:sleep(binary_to_integer(Ms)),
            {200, [{<<"content-type">>, <<"text/plain">>}], <<"slow done">>};
        <<"/ws">> ->
            {websocket, falco_test_ws_handler, #{test => Test}, #{}};
        _ ->
            {200, [], <<"fast">>}
    end.

in_handler() ->
    receive {in_handler, Pid} -> Pid after 5000 -> ct:fail(no_request_in_handler) end.

%% falco:drain/2 in another process: returns the caller's reference.
drain_async(Name, Timeout) ->
    Test = self(),
    Ref = make_ref(),
    spawn_link(fun() ->
                       T0 = erlang:monotonic_time(millisecond),
                       R = falco:drain(Name, Timeout),
                       Test ! {Ref, R, erlang:monotonic_time(millisecond) - T0}
               end),
    Ref.

drained(Ref) ->
    receive {Ref, R, Ms} -> {R, Ms} after 20000 -> ct:fail(drain_never_returned) end.

%% No error-level event was logged during the case (no crash report, no
%% connection reported as ended abnormally).
no_crash_logged() ->
    timer:sleep(100),
    ?assertEqual([], [maps:get(msg, E) || E <- falco_test_tree:logged()]).

is(Type) ->
    fun(F) -> is_tuple(F) andalso element(1, F) =:= Type end.

refused(Port) ->
    case gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {active, false}], 2000) of
        {error, econnrefused} -> true;
        {ok, S} -> gen_tcp:close(S), false;
        {error, _} -> true
    end.

wait_refused(Port) ->
    ok = ?C:wait_until(fun() -> refused(Port) end, 5000).

%% -- HTTP/1.1 ----------------------------------------------------------------------------

%% A request whose handler runs when the drain starts completes, says
%% `Connection: close' (RFC 9112 §9.6), and the connection closes; new
%% connections are refused meanwhile; drain returns once it is done.
h1_in_flight_completes(Config) ->
    Port = start(Config),
    Sock = ?C:connect(Port),
    ?C:send(Sock, <<"GET /slow/1500 HTTP/1.1\r\nhost: x\r\n\r\n">>),
    _ = in_handler(),
    Ref = drain_async(?config(name, Config), 10000),
    wait_refused(Port),
    {ok, Resp} = ?C:recv_response(Sock),
    ?assertMatch(#{status := 200, body := <<"slow done">>}, Resp),
    ?assert(?C:has_token(<<"connection">>, <<"close">>, Resp)),
    ?assertEqual(true, ?WS:closed(Sock, 2000)),
    {R, Ms} = drained(Ref),
    %% (wait_refused/1's probes may count: see h1_new_connection_first_request)
    {ok, #{connections := N, completed := N, stopped := 0}} = R,
    ?assert(N >= 1),
    ?assert(Ms < 5000),
    ?assertEqual({error, not_found}, falco:port(?config(name, Config))),
    no_crash_logged().

%% Idle keep-alive connections close at once: the drain takes well under
%% its deadline.
h1_idle_closes_at_once(Config) ->
    Port = start(Config),
    Socks = [?C:connect(Port) || _ <- lists:seq(1, 5)],
    _ = [begin
             ?C:send(S, <<"GET / HTTP/1.1\r\nhost: x\r\n\r\n">>),
             {ok, #{status := 200}} = ?C:recv_response(S)
         end || S <- Socks],
    {R, Ms} = drained(drain_async(?config(name, Config), 10000)),
    ?assertEqual({ok, #{connections => 5, completed => 5, stopped => 0}}, R),
    ct:log("5 idle keep-alive connections drained in ~b ms", [Ms]),
    ?assert(Ms < 2000),
    _ = [?assertEqual(true, ?WS:closed(S, 1000)) || S <- Socks],
    no_crash_logged().

%% A connection accepted before the drain whose first request comes after
%% it started is still served (it may have been on its way), then closed.
h1_new_connection_first_request(Config) ->
    Port = start(Config),
    Sock = ?C:connect(Port),
    Name = ?config(name, Config),
    ok = ?C:wait_until(fun() -> falco:connections(Name) =:= {ok, 1} end, 5000),
    Ref = drain_async(Name, 10000),
    wait_refused(Port),
    ?C:send(Sock, <<"GET / HTTP/1.1\r\nhost: x\r\n\r\n">>),
    {ok, Resp} = ?C:recv_response(Sock),
    ?assertMatch(#{status := 200, body := <<"fast">>}, Resp),
    ?assert(?C:has_token(<<"connection">>, <<"close">>, Resp)),
    %% (the probes of wait_refused/1 may have been accepted before the
    %% listen socket closed: they drained too)
    {{ok, #{connections := N, completed := N, stopped := 0}}, _} = drained(Ref),
    ?assert(N >= 1),
    no_crash_logged().

%% -- HTTP/2 ------------------------------------------------------------------------------

%% §6.8: GOAWAY with 2^31-1 first, then (after the PING round trip) with
%% the last stream taken; the stream in flight completes, then the
%% connection closes.
h2_two_step_goaway(Config) ->
    Port = start(Config),
    C0 = ?H2:connect(Port, #{}),
    {Id, C1} = ?H2:request(C0, <<"GET">>, <<"/slow/1500">>),
    _ = in_handler(),
    Ref = drain_async(?config(name, Config), 10000),
    {ok, {goaway, First, no_error, _}, C2} =
        ?H2:until(C1, is(goaway), 5000),
    ?assertEqual(16#7fffffff, First),
    {ok, {ping, Opaque}, C3} = ?H2:until(C2, is(ping), 5000),
    C4 = ?H2:send_frame(C3, falco_http2_frame:ping_ack(Opaque)),
    {ok, {goaway, Last, no_error, _}, C5} =
        ?H2:until(C4, is(goaway), 5000),
    ?assertEqual(Id, Last),
    {ok, Resp, C6} = ?H2:response(C5, Id),
    ?assertMatch(#{status := 200, body := <<"slow done">>}, Resp),
    ok = ?H2:wait_closed(C6, 5000),
    ?assertMatch({{ok, #{connections := 1, completed := 1, stopped := 0}}, _}, drained(Ref)),
    no_crash_logged().

%% A request the client sent before it saw the final GOAWAY (here: after
%% the first, before answering its PING) is still served.
h2_stream_after_first_goaway(Config) ->
    Port = start(Config),
    C0 = ?H2:connect(Port, #{}),
    {Id1, C1} = ?H2:request(C0, <<"GET">>, <<"/slow/2500">>),
    _ = in_handler(),
    Ref = drain_async(?config(name, Config), 10000),
    {ok, {goaway, 16#7fffffff, no_error, _}, C2} =
        ?H2:until(C1, is(goaway), 5000),
    {Id2, C3} = ?H2:request(C2, <<"GET">>, <<"/">>),
    %% response/2 keeps the frames of other streams and the PING for later
    {ok, R2, C4} = ?H2:response(C3, Id2),
    ?assertMatch(#{status := 200, body := <<"fast">>}, R2),
    {ok, {ping, Opaque}, C5} = ?H2:until(C4, is(ping), 5000),
    C6 = ?H2:send_frame(C5, falco_http2_frame:ping_ack(Opaque)),
    {ok, {goaway, Last, no_error, _}, C7} =
        ?H2:until(C6, is(goaway), 5000),
    ?assertEqual(Id2, Last),
    {ok, R1, C8} = ?H2:response(C7, Id1),
    ?assertMatch(#{status := 200, body := <<"slow done">>}, R1),
    ok = ?H2:wait_closed(C8, 5000),
    ?assertMatch({{ok, #{completed := 1, stopped := 0}}, _}, drained(Ref)),
    no_crash_logged().

%% -- WebSocket ---------------------------------------------------------------------------

%% RFC 6455 §7.4.1: 1001 going away; the peer answers the close and the
%% session ends; the handler's terminate runs.
ws_close_1001(Config) ->
    Port = start(Config),
    {Sock, #{status := 101}} = ?WS:connect(Port, <<"/ws">>),
    Pid = receive {ws_init, P, _} -> P after 5000 -> ct:fail(no_init) end,
    ok = ?WS:send(Sock, text, <<"before">>),
    ?assertEqual({text, <<"before">>}, ?WS:recv(Sock)),
    Ref = drain_async(?config(name, Config), 10000),
    ?assertMatch({close, <<1001:16, _/binary>>}, ?WS:recv(Sock)),
    ok = ?WS:send(Sock, close, <<1001:16>>),
    ?assertEqual(true, ?WS:closed(Sock, 5000)),
    receive {ws_terminate, Pid, Reason} -> ?assertEqual(shutdown, Reason)
    after 5000 -> ct:fail(no_terminate)
    end,
    ?assertMatch({{ok, #{connections := 1, completed := 1, stopped := 0}}, _}, drained(Ref)),
    no_crash_logged().

%% -- deadlines and stops -----------------------------------------------------------------

%% What is still running at the deadline is stopped, and counted so.
deadline_stops_the_rest(Config) ->
    Port = start(Config),
    Slow = ?C:connect(Port),
    ?C:send(Slow, <<"GET /slow/20000 HTTP/1.1\r\nhost: x\r\n\r\n">>),
    _ = in_handler(),
    Idle = ?C:connect(Port),
    ?C:send(Idle, <<"GET / HTTP/1.1\r\nhost: x\r\n\r\n">>),
    {ok, #{status := 200}} = ?C:recv_response(Idle),
    {R, Ms} = drained(drain_async(?config(name, Config), 500)),
    ?assertEqual({ok, #{connections => 2, completed => 1, stopped => 1}}, R),
    ct:log("drain with a 500 ms deadline returned in ~b ms", [Ms]),
    ?assert(Ms >= 450 andalso Ms < 5000),
    ?assertEqual(true, ?WS:closed(Slow, 2000)),
    no_crash_logged().

%% stop_listener/1 drains: the request in flight completes.
stop_listener_drains(Config) ->
    Port = start(Config),
    Sock = ?C:connect(Port),
    ?C:send(Sock, <<"GET /slow/1000 HTTP/1.1\r\nhost: x\r\n\r\n">>),
    _ = in_handler(),
    Name = ?config(name, Config),
    Test = self(),
    spawn_link(fun() -> Test ! {stopped, falco:stop_listener(Name)} end),
    {ok, Resp} = ?C:recv_response(Sock),
    ?assertMatch(#{status := 200, body := <<"slow done">>}, Resp),
    ?assert(?C:has_token(<<"connection">>, <<"close">>, Resp)),
    receive {stopped, ok} -> ok after 10000 -> ct:fail(stop_never_returned) end,
    no_crash_logged().

%% drain_notice: for that long the listener serves as usual (keep-alive,
%% new connections) while falco:ready/1 is false and info/1 says
%% `leaving'; then the drain proper.
notice_keeps_serving(Config) ->
    Port = start(Config, #{drain_notice => 1500}),
    Name = ?config(name, Config),
    ?assert(falco:ready(Name)),
    Ref = drain_async(Name, 5000),
    ok = ?C:wait_until(fun() -> not falco:ready(Name) end, 1000),
    ?assertMatch({ok, #{state := leaving}}, falco:info(Name)),
    Sock = ?C:connect(Port),
    _ = [begin
             ?C:send(Sock, <<"GET / HTTP/1.1\r\nhost: x\r\n\r\n">>),
             {ok, Resp} = ?C:recv_response(Sock),
             ?assertMatch(#{status := 200, body := <<"fast">>}, Resp),
             ?assertNot(?C:has_token(<<"connection">>, <<"close">>, Resp))
         end || _ <- [1, 2]],
    %% the drain proper: the idle connection closes, the port is refused
    wait_refused(Port),
    ?assertMatch({error, _}, ?C:recv_response(Sock)),
    %% ours, and any of wait_refused's probes accepted before the close
    {{ok, #{connections := N, completed := N, stopped := 0}}, Ms} = drained(Ref),
    ?assert(N >= 1),
    ?assert(Ms >= 1500),
    ?assertNot(falco:ready(Name)),
    no_crash_logged().

%% stop_listener(Name, immediate): the old stop, the request is cut.
stop_listener_immediate(Config) ->
    Port = start(Config),
    Sock = ?C:connect(Port),
    ?C:send(Sock, <<"GET /slow/3000 HTTP/1.1\r\nhost: x\r\n\r\n">>),
    _ = in_handler(),
    T0 = erlang:monotonic_time(millisecond),
    ok = falco:stop_listener(?config(name, Config), immediate),
    ?assert(erlang:monotonic_time(millisecond) - T0 < 2000),
    ?assertMatch({error, _}, ?C:recv_response(Sock)),
    no_crash_logged().

%% The listener stopped by its supervisor (the application stopping, or a
%% user's tree) drains too, within shutdown_timeout.
app_stop_drains(Config) ->
    Name = ?config(name, Config),
    Test = self(),
    Opts = #{port => 0, ip => {127, 0, 0, 1}, handler => fun(Req) -> handle(Req, Test) end,
             shutdown_timeout => 5000},
    {ok, Sup} = supervisor:start_link(?MODULE, {user_sup, falco:child_spec(Name, Opts)}),
    unlink(Sup),
    Port = falco_test_listener:port(Name),
    %% falco:stop_listener/2 does not stop (or flag) a listener of the
    %% user's tree: it goes on accepting
    ?assertEqual({error, not_found}, falco:stop_listener(Name, immediate)),
    ?assertMatch(#{status := 200, body := <<"fast">>},
                 falco_test_http:fetch(http, Port, <<"GET">>, <<"/">>, [], <<>>)),
    Sock = ?C:connect(Port),
    ?C:send(Sock, <<"GET /slow/1000 HTTP/1.1\r\nhost: x\r\n\r\n">>),
    _ = in_handler(),
    spawn(fun() -> supervisor:terminate_child(Sup, {falco_listener, Name}) end),
    {ok, Resp} = ?C:recv_response(Sock),
    ?assertMatch(#{status := 200, body := <<"slow done">>}, Resp),
    ?assert(?C:has_token(<<"connection">>, <<"close">>, Resp)),
    exit(Sup, kill),
    no_crash_logged().
