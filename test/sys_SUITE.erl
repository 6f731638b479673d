%% Every falco process answers `sys' (issue 42): on a listener with
%% processes waiting in accept, an idle keep-alive HTTP/1.1 connection,
%% an idle HTTP/2 connection, a WebSocket session over HTTP/1.1 and one
%% over HTTP/2 (RFC 8441, a stream process), each process of the tree
%% (falco's supervisor, the clock, the rate tables, the listener's
%% supervisor, its socket holder and guard, the acceptors' supervisor,
%% the acceptors, the waiting processes, the connections and the stream
%% process) answers `sys:get_state/2', `sys:suspend/2' and
%% `sys:resume/2' within a second, and afterwards the listener serves a
%% new connection and every kept one. Over TCP on the inet driver (the
%% wait in accept without a timeout), on the socket backend and over TLS
%% (the waits in rounds). A process suspended while it waits in accept
%% loses no connection that comes meanwhile, and one that goes through a
%% code change there goes on accepting. An acceptor answers while it
%% drains its connections too.
-module(sys_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, init_per_suite/1, end_per_suite/1, init_per_group/2,
         end_per_group/2, init_per_testcase/2, end_per_testcase/2]).
-export([every_process_answers/1, suspended_in_accept_loses_nothing/1,
         code_change_in_accept/1, terminate_in_accept/1, acceptor_answers_while_draining/1]).

-define(C, falco_test_client).
-define(H2, falco_test_h2_client).
-define(WS, falco_test_ws_client).
-define(HOST, "Host: example.com\r\n").
-define(ACCEPTORS, 4).
%% what each sys call may take
-define(SYS, 1000).

all() ->
    [{group, tcp}, {group, tcp_socket}, {group, tls}].

groups() ->
    Cases = [every_process_answers, suspended_in_accept_loses_nothing, code_change_in_accept,
             terminate_in_accept, acceptor_answers_while_draining],
    [{tcp, [], Cases}, {tcp_socket, [], Cases}, {tls, [], Cases}].

init_per_suite(Config) ->
    ok = falco_test_listener:start_tls_app(),
    Config.

end_per_suite(_Config) ->
    ok.

init_per_group(tcp, Config) ->
    [{transport, tcp}, {extra, #{}} | Config];
init_per_group(tcp_socket, Config) ->
    [{transport, tcp}, {extra, #{inet_backend => socket}} | Config];
init_per_group(tls, Config) ->
    [{transport, tls}, {extra, #{transport => tls, tls_opts => falco_test_tls:server_opts()}}
     | Config].

end_per_group(_Group, _Config) ->
    ok.

init_per_testcase(Case, Config) ->
    ok = falco_test_listener:ensure_stopped(Case),
    Config.

end_per_testcase(Case, _Config) ->
    falco_test_listener:ensure_stopped(Case).

%% -- helpers ---------------------------------------------------------------

%% A listener whose /ws upgrades (falco_test_ws_handler) and whose other
%% paths answer 200; returns its supervisor and port.
start(Name, Config) ->
    start(Name, Config, #{}).

start(Name, Config, Opts) ->
    Port = falco_test_ws_handler:listen(Name, #{},
                                        maps:merge(maps:merge(#{num_acceptors => ?ACCEPTORS},
                                                              ?config(extra, Config)), Opts)),
    [Sup] = [P || {{falco_listener, N}, P, _, _} <- supervisor:which_children(falco_sup),
                  N =:= Name],
    {Sup, Port}.

%% An HTTP/1.1 connection (ALPN http/1.1 over TLS) that got one response.
keep_alive(Port, Config) ->
    Sock = case ?config(transport, Config) of
               tcp -> ?C:connect(Port);
               tls -> ?C:connect_tls(Port, [<<"http/1.1">>])
           end,
    ok = served(Sock),
    Sock.

%% One more request on an HTTP/1.1 connection: ok when it is served.
served(Sock) ->
    ?C:send(Sock, <<"GET /plain HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, #{status := 200, body := <<"plain">>}} = ?C:recv_response(Sock),
    ok.

h2_connect(Port, Config) ->
    ?H2:connect(Port, #{transport => ?config(transport, Config)}).

%% An HTTP/2 connection that got one response.
h2_idle(Port, Config) ->
    h2_served(h2_connect(Port, Config)).

h2_served(H0) ->
    {Id, H1} = ?H2:request(H0, <<"GET">>, <<"/plain">>),
    {ok, #{status := 200, body := <<"plain">>}, H2} = ?H2:response(H1, Id),
    H2.

%% An HTTP/2 connection with a WebSocket session open on stream 1.
h2_ws(Port, Config) ->
    Scheme = case ?config(transport, Config) of
                 tcp -> <<"http">>;
                 tls -> <<"https">>
             end,
    Fields = [{<<":method">>, <<"CONNECT">>}, {<<":protocol">>, <<"websocket">>},
              {<<":scheme">>, Scheme}, {<<":path">>, <<"/ws">>},
              {<<":authority">>, <<"localhost">>}, {<<"sec-websocket-version">>, <<"13">>}],
    H1 = ?H2:headers_frame(h2_connect(Port, Config), 1, Fields, nofin),
    {ok, {fields, 1, nofin, Resp}, H2} =
        ?H2:until(H1, fun({fields, 1, _, _}) -> true; (_) -> false end, 5000),
    ?assertEqual(<<"200">>, proplists:get_value(<<":status">>, Resp)),
    H2.

%% An echo on the session of stream 1 (a masked text frame in, the same
%% text back unmasked).
h2_ws_echo(H0, Text) ->
    Key = <<1, 2, 3, 4>>,
    Len = byte_size(Text),
    Frame = <<1:1, 0:3, 1:4, 1:1, Len:7, Key/binary, (falco_ws_frame:mask(Text, Key))/binary>>,
    H1 = ?H2:send_frame(H0, falco_http2_frame:data(1, nofin, Frame)),
    {ok, {data, 1, nofin, Echo, _}, H2} =
        ?H2:until(H1, fun({data, 1, _, _, _}) -> true; (_) -> false end, 5000),
    ?assertEqual(<<1:1, 0:3, 1:4, 0:1, Len:7, Text/binary>>, iolist_to_binary(Echo)),
    H2.

ws(Port, Config) ->
    {Ws, #{status := 101}} = case ?config(transport, Config) of
                                 tcp -> ?WS:connect(Port, <<"/ws">>);
                                 tls -> ?WS:connect_tls(Port, <<"/ws">>, [])
                             end,
    Ws.

ws_echo(Ws, Text) ->
    ok = ?WS:send(Ws, text, Text),
    ?assertEqual({text, Text}, ?WS:recv(Ws)).

%% The processes waiting in accept: each acceptor's `waiting' one.
waiting(Sup) ->
    [W || A <- falco_test_tree:acceptors(Sup),
          #{waiting := W} <- [sys:get_state(A, ?SYS)], is_pid(W)].

%% Every falco process of listener `Sup' and of falco's own tree, named by
%% what it is: {What, Pid}.
processes_of(Sup) ->
    Top = [{falco_sup, whereis(falco_sup)}, {clock, whereis(falco_clock)},
           {rate_tables, whereis(falco_rate_tables)}, {listener_sup, Sup}],
    Children = [{Id, P} || {Id, P, _, _} <- supervisor:which_children(Sup), is_pid(P)],
    Acceptors = [{acceptor, A} || A <- falco_test_tree:acceptors(Sup)],
    Waiting = [{in_accept, W} || W <- waiting(Sup)],
    Conns = [{connection, P} || P <- falco_test_tree:conns(Sup)],
    %% the stream processes, as their HTTP/2 connections list them
    Streams = [{stream, S} || {_, P} <- Conns,
                              #{stream_processes := Ss} <- [catch sys:get_state(P, ?SYS)],
                              S <- Ss],
    Top ++ Children ++ Acceptors ++ Waiting ++ Conns ++ Streams.

%% `{What, Pid, Error}' for each process whose `Call' did not return `ok'
%% (or a state) within ?SYS ms.
failing(Procs, Call) ->
    [{What, P, Error} || {What, P} <- Procs,
                         Error <- [try Call(P) of
                                       _ -> ok
                                   catch
                                       exit:{timeout, _} -> timeout;
                                       exit:Reason -> Reason
                                   end],
                         Error =/= ok].

%% -- cases -----------------------------------------------------------------

%% The whole tree answers get_state, then suspend (all suspended at
%% once, as a release upgrade does), then resume; then the listener
%% serves a new connection and the kept ones.
every_process_answers(Config) ->
    Name = every_process_answers,
    {Sup, Port} = start(Name, Config),
    Keep = keep_alive(Port, Config),
    H2 = h2_idle(Port, Config),
    Ws = ws(Port, Config),
    _ = falco_test_ws_handler:await_init(),
    H2Ws = h2_ws(Port, Config),
    _ = falco_test_ws_handler:await_init(),
    ok = ?C:wait_until(fun() -> length(falco_test_tree:conns(Sup)) =:= 4 end, 5000),
    ok = ?C:wait_until(fun() -> length(waiting(Sup)) =:= ?ACCEPTORS end, 5000),
    Procs = processes_of(Sup),
    Kinds = lists:usort([W || {W, _} <- Procs]),
    ct:log("~p processes: ~p", [length(Procs), Procs]),
    ?assertEqual([acceptor, acceptors, clock, connection, falco_sup, guard, in_accept,
                  listen_socket, listener_sup, rate_tables, stream], Kinds),
    NoState = failing(Procs, fun(P) -> sys:get_state(P, ?SYS) end),
    ct:log("~p of ~p processes did not answer sys:get_state/2: ~p",
           [length(NoState), length(Procs), NoState]),
    ?assertEqual([], NoState),
    [ct:log("~p ~p: ~p", [W, P, sys:get_state(P, ?SYS)]) || {W, P} <- Procs],
    %% what a process waiting in accept says of itself
    [{in_accept, W1} | _] = [X || X = {in_accept, _} <- Procs],
    ?assertEqual(#{listener => Name, phase => accepting,
                   transport => ?config(transport, Config)},
                 sys:get_state(W1, ?SYS)),
    ?assertEqual([], failing(Procs, fun(P) -> sys:suspend(P, ?SYS) end)),
    %% suspended, each still answers sys
    ?assertEqual([], failing(Procs, fun(P) -> sys:get_status(P, ?SYS) end)),
    ?assertEqual([], failing(lists:reverse(Procs), fun(P) -> sys:resume(P, ?SYS) end)),
    ?assert(lists:all(fun({_, P}) -> is_process_alive(P) end, Procs)),
    %% and everything serves: a new connection, each kept one
    New = keep_alive(Port, Config),
    ok = served(Keep),
    _ = h2_served(H2),
    ok = ws_echo(Ws, <<"still here">>),
    _ = h2_ws_echo(H2Ws, <<"still here">>),
    [?C:close(S) || S <- [Keep, New]],
    _ = (?WS:send(Ws, close, <<>>)),
    ?H2:close(H2),
    ?H2:close(H2Ws).

%% Every process waiting in accept suspended; a client connects and sends
%% a request, which waits (no process takes it, or the one that took it
%% is suspended with the accept's reply in its mailbox); once they are
%% resumed the request is served, and each process that was waiting
%% answers sys again.
suspended_in_accept_loses_nothing(Config) ->
    Name = suspended_in_accept_loses_nothing,
    {Sup, Port} = start(Name, Config),
    ok = ?C:wait_until(fun() -> length(waiting(Sup)) =:= ?ACCEPTORS end, 5000),
    Waiting = waiting(Sup),
    [ok = sys:suspend(W, ?SYS) || W <- Waiting],
    Sock = connect_while_suspended(?config(transport, Config), Port, Waiting),
    {ok, #{status := 200, body := <<"plain">>}} = ?C:recv_response(Sock),
    %% one of them took it; the others still wait, and answer
    ok = ?C:wait_until(fun() -> length(waiting(Sup)) =:= ?ACCEPTORS end, 5000),
    [#{phase := accepting} = sys:get_state(W, ?SYS) || W <- waiting(Sup)],
    ok = served(Sock),
    ?C:close(Sock).

%% A connection and its request while `Waiting' are suspended: nothing is
%% answered (over TLS not even the handshake, run in a process of its
%% own meanwhile) until they are resumed. Returns the socket, its request
%% sent.
connect_while_suspended(tcp, Port, Waiting) ->
    Sock = ?C:connect(Port),
    ?C:send(Sock, <<"GET /plain HTTP/1.1\r\n" ?HOST "\r\n">>),
    ok = ?C:expect_silence(Sock, 300),
    [ok = sys:resume(W, ?SYS) || W <- Waiting],
    Sock;
connect_while_suspended(tls, Port, Waiting) ->
    Self = self(),
    Pid = spawn_link(fun() ->
                             S = ?C:connect_tls(Port, [<<"http/1.1">>]),
                             ok = ssl:controlling_process(S, Self),
                             Self ! {tls, self(), S}
                     end),
    receive {tls, Pid, _} -> ct:fail(handshake_while_suspended) after 300 -> ok end,
    [ok = sys:resume(W, ?SYS) || W <- Waiting],
    receive
        {tls, Pid, Sock} ->
            ?C:send(Sock, <<"GET /plain HTTP/1.1\r\n" ?HOST "\r\n">>),
            Sock
    after 5000 ->
        ct:fail(no_handshake)
    end.

%% A code change (release_handler's suspend, change_code, resume) while
%% waiting in accept: each process goes on waiting and the listener
%% serves.
code_change_in_accept(Config) ->
    Name = code_change_in_accept,
    {Sup, Port} = start(Name, Config),
    ok = ?C:wait_until(fun() -> length(waiting(Sup)) =:= ?ACCEPTORS end, 5000),
    Waiting = waiting(Sup),
    [ok = sys:suspend(W, ?SYS) || W <- Waiting],
    [ok = sys:change_code(W, falco_conn, undefined, [], ?SYS) || W <- Waiting],
    [ok = sys:resume(W, ?SYS) || W <- Waiting],
    [#{phase := accepting} = sys:get_state(W, ?SYS) || W <- Waiting],
    Socks = [keep_alive(Port, Config) || _ <- Waiting],
    ok = ?C:wait_until(fun() -> length(falco_test_tree:conns(Sup)) =:= length(Waiting) end, 5000),
    %% the first connection at least was taken by a process that waited
    %% through the change (the first in the listen socket's queue)
    ?assertNotEqual([], [W || W <- Waiting, lists:member(W, falco_test_tree:conns(Sup))]),
    [ok = served(S) || S <- Socks],
    [?C:close(S) || S <- Socks].

%% sys:terminate/3 on a process waiting in accept ends it quietly (no
%% error logged); its acceptor starts another, and the listener serves.
terminate_in_accept(Config) ->
    Name = terminate_in_accept,
    {Sup, Port} = start(Name, Config),
    ok = ?C:wait_until(fun() -> length(waiting(Sup)) =:= ?ACCEPTORS end, 5000),
    [W | _] = waiting(Sup),
    ok = falco_test_tree:capture_log(Name, error),
    try
        Mon = monitor(process, W),
        ok = sys:terminate(W, shutdown, ?SYS),
        receive {'DOWN', Mon, process, W, shutdown} -> ok after 5000 -> ct:fail(alive) end,
        ok = ?C:wait_until(fun() -> length(waiting(Sup)) =:= ?ACCEPTORS end, 5000),
        ?assertNot(lists:member(W, waiting(Sup))),
        Sock = keep_alive(Port, Config),
        ?C:close(Sock),
        timer:sleep(100),
        ?assertEqual([], falco_test_tree:logged())
    after
        logger:remove_handler(Name)
    end.

%% An acceptor draining a connection that does not close yet (a
%% WebSocket session whose handler is busy) answers sys, suspended and
%% resumed goes on draining, and the drain ends with the session.
acceptor_answers_while_draining(Config) ->
    Name = acceptor_answers_while_draining,
    {Sup, Port} = start(Name, Config, #{num_acceptors => 1}),
    Ws = ws(Port, Config),
    Session = falco_test_ws_handler:await_init(),
    ok = ?WS:send(Ws, text, <<"block">>),
    receive {ws_blocked, Session} -> ok after 5000 -> ct:fail(not_blocked) end,
    [A] = falco_test_tree:acceptors(Sup),
    Self = self(),
    Drainer = spawn_link(fun() -> Self ! {drained, falco:drain(Name, 10000)} end),
    Draining = fun() ->
                       try sys:get_state(A, ?SYS) of
                           #{draining := D} -> D
                       catch
                           exit:{timeout, _} -> timeout
                       end
               end,
    ok = ?C:wait_until(fun() -> Draining() =/= false end, 5000),
    ?assertEqual(true, Draining()),
    ok = sys:suspend(A, ?SYS),
    {status, A, _, _} = sys:get_status(A, ?SYS),
    ok = sys:resume(A, ?SYS),
    ?assertEqual(true, Draining()),
    Session ! release,
    receive
        {drained, Result} ->
            ?assertEqual({ok, #{connections => 1, completed => 1, stopped => 0}}, Result)
    after 10000 ->
        ct:fail({not_drained, Drainer})
    end,
    ?assertMatch({_, {close, 1001}}, ?WS:recv_until_close(Ws, 5000)).
