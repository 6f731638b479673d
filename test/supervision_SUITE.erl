%% The process tree of a listener: acceptors that supervise the
%% connections they accepted, connections that are OTP special processes
%% answering `sys' (HTTP/1.1 between requests, HTTP/2 at any time), a stop
%% that writes no crash report, connection slots that come back whatever
%% way a connection ends, and an acceptor's death that stays its own.
-module(supervision_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1, init_per_testcase/2, end_per_testcase/2]).
-export([tree_shape/1, sys_on_acceptors/1, sys_on_http1_connection/1,
         sys_on_h2_connection/1, sys_on_tls_connections/1, stop_writes_no_crash_report/1,
         stop_sends_goaway/1, slot_returns_after_kill/1, acceptor_death_is_contained/1,
         upgrade_h2c_keeps_sys/1, goaway_closes_on_silent_client/1,
         sys_right_after_response/1]).

-define(C, falco_test_client).
-define(H2, falco_test_h2_client).
-define(HOST, "Host: example.com\r\n").

all() ->
    [tree_shape, sys_on_acceptors, sys_on_http1_connection, sys_on_h2_connection,
     sys_on_tls_connections, stop_writes_no_crash_report, stop_sends_goaway,
     slot_returns_after_kill, acceptor_death_is_contained, upgrade_h2c_keeps_sys,
     goaway_closes_on_silent_client, sys_right_after_response].

init_per_suite(Config) ->
    ok = falco_test_listener:start_tls_app(),
    Config.

end_per_suite(_Config) ->
    ok.

init_per_testcase(Case, Config) ->
    ok = falco_test_listener:ensure_stopped(Case),
    Config.

end_per_testcase(Case, _Config) ->
    _ = logger:remove_handler(Case),
    ok = falco_test_listener:ensure_stopped(Case),
    ok.

%% -- helpers ---------------------------------------------------------------

handler(Req) ->
    case falco_req:path(Req) of
        <<"/slow">> -> timer:sleep(300), {200, [], <<"slow">>};
        <<"/die">> -> exit(self(), kill);
        _ -> {200, [], <<"hello">>}
    end.

start(Name, Opts) ->
    falco_test_listener:start(Name, fun handler/1, Opts).

acceptors(Sup) -> falco_test_tree:acceptors(Sup).

conns(Sup) -> falco_test_tree:conns(Sup).

one_conn(Sup) -> falco_test_tree:one_conn(Sup).

hello(Port) ->
    {Sock, {ok, #{status := 200}}} = ?C:request(Port, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
    ?C:close(Sock).

%% One more request on an open connection: `ok' if served, `closed' if the
%% server had closed it.
request_on(Sock) ->
    _ = gen_tcp:send(Sock, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
    case ?C:recv_response(Sock, #{timeout => 5000}) of
        {ok, #{status := 200}} -> ok;
        {error, _} -> closed
    end.

capture_log(Name) -> falco_test_tree:capture_log(Name).

%% Error-level events (crash reports included) received so far.
errors() ->
    [E || E = #{level := Level} <- falco_test_tree:logged(),
          lists:member(Level, [error, critical, alert, emergency])].

%% -- cases -----------------------------------------------------------------

%% listener_sup > [listen_socket, acceptor_sup > acceptor x N > falco_conn x M];
%% supervisor:which_children/count_children work at every level.
tree_shape(_Config) ->
    {Sup, Port} = start(tree_shape, #{num_acceptors => 3}),
    Children = supervisor:which_children(Sup),
    ?assertMatch({listen_socket, _, worker, _}, lists:keyfind(listen_socket, 1, Children)),
    ?assertMatch({acceptors, _, supervisor, _}, lists:keyfind(acceptors, 1, Children)),
    ?assertEqual(3, length(acceptors(Sup))),
    ?assertEqual([], conns(Sup)),
    Socks = [?C:connect(Port) || _ <- lists:seq(1, 4)],
    [?C:send(S, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>) || S <- Socks],
    [{ok, #{status := 200}} = ?C:recv_response(S) || S <- Socks],
    ok = ?C:wait_until(fun() -> length(conns(Sup)) =:= 4 end, 5000),
    Counts = [supervisor:count_children(A) || A <- acceptors(Sup)],
    ?assertEqual(4, lists:sum([proplists:get_value(active, C) || C <- Counts])),
    ?assertEqual({ok, 4}, falco:connections(tree_shape)),
    [?C:close(S) || S <- Socks],
    ok = ?C:wait_until(fun() -> conns(Sup) =:= [] end, 5000),
    ?assertEqual({ok, 0}, falco:connections(tree_shape)).

%% sys:get_state/get_status answer on acceptors (OTP special processes).
sys_on_acceptors(_Config) ->
    {Sup, _Port} = start(sys_on_acceptors, #{num_acceptors => 2}),
    [A1, A2] = acceptors(Sup),
    #{listener := sys_on_acceptors, connections := 0} = sys:get_state(A1, 2000),
    {status, A2, {module, _}, _} = sys:get_status(A2, 2000),
    ok = sys:suspend(A1, 2000),
    ok = sys:resume(A1, 2000).

%% An idle keep-alive HTTP/1.1 connection answers sys, then serves the
%% next request on the same socket.
sys_on_http1_connection(_Config) ->
    {Sup, Port} = start(sys_on_http1_connection, #{}),
    Sock = ?C:connect(Port),
    ?C:send(Sock, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, #{status := 200}} = ?C:recv_response(Sock),
    Conn = one_conn(Sup),
    #{protocol := http1, phase := idle, requests := 1, scheme := http} =
        sys:get_state(Conn, 2000),
    {status, Conn, {module, _}, _} = sys:get_status(Conn, 2000),
    ?C:send(Sock, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, #{status := 200}} = ?C:recv_response(Sock),
    #{requests := 2} = sys:get_state(Conn, 2000),
    %% Suspended between requests: the next request waits, then is served.
    ok = sys:suspend(Conn, 2000),
    ?C:send(Sock, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
    ok = ?C:expect_silence(Sock, 300),
    ok = sys:resume(Conn, 2000),
    {ok, #{status := 200}} = ?C:recv_response(Sock),
    ?C:close(Sock).

%% An HTTP/2 connection answers sys while it has a stream in flight.
sys_on_h2_connection(_Config) ->
    {Sup, Port} = start(sys_on_h2_connection, #{}),
    H0 = ?H2:connect(Port, #{}),
    {Id, H1} = ?H2:request(H0, <<"GET">>, <<"/slow">>),
    Conn = one_conn(Sup),
    State = sys:get_state(Conn, 2000),
    #{protocol := h2, scheme := http} = State,
    {status, Conn, {module, _}, _} = sys:get_status(Conn, 2000),
    {ok, #{status := 200, body := <<"slow">>}, H2} = ?H2:response(H1, Id),
    #{streams := 0} = sys:get_state(Conn, 2000),
    ?H2:close(H2).

%% The same over TLS: HTTP/1.1 (ALPN http/1.1) and h2.
sys_on_tls_connections(_Config) ->
    {Sup, Port} = start(sys_on_tls_connections, falco_test_listener:tls(#{})),
    {ok, S} = ssl:connect({127, 0, 0, 1}, Port, [binary, {active, false}, {verify, verify_none},
                                                 {alpn_advertised_protocols, [<<"http/1.1">>]}],
                          5000),
    ok = ssl:send(S, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, <<"HTTP/1.1 200 OK", _/binary>>} = ssl:recv(S, 0, 5000),
    Conn1 = one_conn(Sup),
    #{protocol := http1, scheme := https, phase := idle} = sys:get_state(Conn1, 2000),
    ok = ssl:close(S),
    ok = ?C:wait_until(fun() -> conns(Sup) =:= [] end, 5000),
    H0 = ?H2:connect(Port, #{transport => tls}),
    Conn2 = one_conn(Sup),
    #{protocol := h2, scheme := https} = sys:get_state(Conn2, 2000),
    ?H2:close(H0).

%% Stopping a listener with open HTTP/1.1 and HTTP/2 connections (one
%% with a stream in flight) logs no error and no crash report.
stop_writes_no_crash_report(_Config) ->
    Name = stop_writes_no_crash_report,
    {Sup, Port} = start(Name, #{}),
    Sock = ?C:connect(Port),
    ?C:send(Sock, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, #{status := 200}} = ?C:recv_response(Sock),
    H0 = ?H2:connect(Port, #{}),
    {Id, H1} = ?H2:request(H0, <<"GET">>, <<"/">>),
    {ok, #{status := 200}, H2} = ?H2:response(H1, Id),
    {_, H3} = ?H2:request(H2, <<"GET">>, <<"/slow">>),
    ok = ?C:wait_until(fun() -> length(conns(Sup)) =:= 2 end, 5000),
    Pids = conns(Sup),
    Mons = [monitor(process, P) || P <- Pids],
    capture_log(Name),
    ok = falco:stop_listener(Name),
    Reasons = [receive {'DOWN', M, process, _, R} -> R after 5000 -> ct:fail(still_alive) end
               || M <- Mons],
    ct:log("connection exit reasons: ~p", [Reasons]),
    %% drained (normal), or stopped at the drain's deadline (shutdown)
    ?assert(lists:all(fun(R) -> R =:= normal orelse R =:= shutdown end, Reasons)),
    timer:sleep(200),
    ?assertEqual([], errors()),
    ok = ?C:expect_closed(Sock, 2000),
    ?C:close(Sock),
    ?H2:close(H3).

%% An HTTP/2 connection of a stopping listener says GOAWAY (RFC 9113 §6.8):
%% it drains, so first with the largest id, then (here at the PING's
%% deadline, the client not answering) with the last stream it took.
stop_sends_goaway(_Config) ->
    Name = stop_sends_goaway,
    {_Sup, Port} = start(Name, #{}),
    H0 = ?H2:connect(Port, #{}),
    {Id, H1} = ?H2:request(H0, <<"GET">>, <<"/">>),
    {ok, #{status := 200}, H2} = ?H2:response(H1, Id),
    ok = falco:stop_listener(Name),
    IsGoaway = fun({goaway, _, _, _}) -> true; (_) -> false end,
    {ok, {goaway, First, no_error, _}, H3} = ?H2:until(H2, IsGoaway, 5000),
    ?assertEqual(16#7fffffff, First),
    {ok, {goaway, Last, no_error, _}, H4} = ?H2:until(H3, IsGoaway, 5000),
    ?assertEqual(Id, Last),
    ?H2:close(H4).

%% A connection process killed outright (here by its own handler) gives
%% its max_connections slot back: the acceptor, its supervisor, sees it
%% end. With max_connections => 2, five such deaths in a row still leave
%% the listener serving.
slot_returns_after_kill(_Config) ->
    Name = slot_returns_after_kill,
    {_Sup, Port} = start(Name, #{max_connections => 2, num_acceptors => 2}),
    [begin
         Sock = ?C:connect(Port),
         ?C:send(Sock, <<"GET /die HTTP/1.1\r\n" ?HOST "\r\n">>),
         ok = ?C:expect_closed(Sock, 5000),
         ?C:close(Sock)
     end || _ <- lists:seq(1, 5)],
    ok = ?C:wait_until(fun() -> falco:connections(Name) =:= {ok, 0} end, 5000),
    hello(Port),
    hello(Port).

%% Killing one acceptor ends only its own connections; the others keep
%% theirs, the acceptor is replaced, and the listener serves on.
acceptor_death_is_contained(_Config) ->
    Name = acceptor_death_is_contained,
    {Sup, Port} = start(Name, #{num_acceptors => 2}),
    Socks = [?C:connect(Port) || _ <- lists:seq(1, 6)],
    [?C:send(S, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>) || S <- Socks],
    [{ok, #{status := 200}} = ?C:recv_response(S) || S <- Socks],
    ok = ?C:wait_until(fun() -> length(conns(Sup)) =:= 6 end, 5000),
    %% The acceptor with at least one connection, and its siblings'.
    ByAcceptor = [{A, [P || {_, P, _, _} <- supervisor:which_children(A)]} || A <- acceptors(Sup)],
    {Victim, _} = hd([X || X = {_, [_ | _]} <- ByAcceptor]),
    Survivors = lists:append([Ps || {A, Ps} <- ByAcceptor, A =/= Victim]),
    Mon = monitor(process, Victim),
    exit(Victim, kill),
    receive {'DOWN', Mon, process, _, killed} -> ok after 5000 -> ct:fail(acceptor_alive) end,
    ok = ?C:wait_until(fun() -> length(acceptors(Sup)) =:= 2 end, 5000),
    ?assert(lists:all(fun erlang:is_process_alive/1, Survivors)),
    %% The survivors still serve on their sockets; the others were closed.
    Served = [case request_on(S) of ok -> 1; closed -> 0 end || S <- Socks],
    ?assertEqual(length(Survivors), lists:sum(Served)),
    hello(Port),
    ok = ?C:wait_until(fun() -> falco:connections(Name) =:= {ok, length(Survivors)} end, 5000),
    [?C:close(S) || S <- Socks].

%% After `Upgrade: h2c' the same process runs HTTP/2 and answers sys.
upgrade_h2c_keeps_sys(_Config) ->
    {Sup, Port} = start(upgrade_h2c_keeps_sys, #{}),
    Settings = base64:encode(<<>>),
    Sock = ?C:connect(Port),
    ?C:send(Sock, [<<"GET / HTTP/1.1\r\n" ?HOST "Connection: Upgrade, HTTP2-Settings\r\n"
                     "Upgrade: h2c\r\nHTTP2-Settings: ">>, Settings, <<"\r\n\r\n">>]),
    {ok, <<"HTTP/1.1 101 ", _/binary>>} = gen_tcp:recv(Sock, 0, 5000),
    ok = gen_tcp:send(Sock, [falco_protocol:client_preface(), falco_http2_frame:settings(#{})]),
    Conn = one_conn(Sup),
    #{protocol := h2} = sys:get_state(Conn, 2000),
    ?C:close(Sock).

%% A connection error ends with GOAWAY and a lingering close that lasts
%% about a second even if the client, silent, never closes its side
%% (RFC 9113 §5.4.1). On OTP 25's socket backend a passive read after
%% active mode never returned, so such a connection lived forever.
goaway_closes_on_silent_client(_Config) ->
    {Sup, Port} = start(goaway_closes_on_silent_client, #{}),
    H0 = ?H2:connect(Port, #{}),
    Conn = one_conn(Sup),
    Mon = monitor(process, Conn),
    %% A PING on stream 1 is a connection error (RFC 9113 §6.7).
    H1 = ?H2:send_frame(H0, <<8:24, 6:8, 0:8, 1:32, 0:64>>),
    {ok, {goaway, _, protocol_error, _}, H2} =
        ?H2:until(H1, fun({goaway, _, _, _}) -> true; (_) -> false end, 5000),
    T0 = erlang:monotonic_time(millisecond),
    receive {'DOWN', Mon, process, _, normal} -> ok after 5000 -> ct:fail(connection_alive) end,
    ct:log("closed ~p ms after the GOAWAY", [erlang:monotonic_time(millisecond) - T0]),
    ?H2:close(H2).

%% A sys request that arrives while a request is being served is answered
%% right after the response (it is seen before the passive read for the
%% next request), and the next request is then served at once, not at the
%% end of idle_timeout.
sys_right_after_response(_Config) ->
    {Sup, Port} = start(sys_right_after_response, #{}),
    Sock = ?C:connect(Port),
    ?C:send(Sock, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, #{status := 200}} = ?C:recv_response(Sock),
    Conn = one_conn(Sup),
    [begin
         ?C:send(Sock, <<"GET /slow HTTP/1.1\r\n" ?HOST "\r\n">>),
         Self = self(),
         %% asked while the handler sleeps
         timer:sleep(50),
         _ = spawn_link(fun() -> Self ! {state, sys:get_state(Conn, 5000)} end),
         {ok, #{status := 200, body := <<"slow">>}} = ?C:recv_response(Sock),
         receive {state, #{phase := idle}} -> ok after 5000 -> ct:fail(no_sys_answer) end,
         ?C:send(Sock, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
         {ok, #{status := 200}} = ?C:recv_response(Sock, #{timeout => 3000})
     end || _ <- lists:seq(1, 3)],
    ?C:close(Sock).
