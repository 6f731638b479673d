%% Hostile input and misbehaving handlers, with the numbers asserted as
%% bounds (time, memory, connections): a crash whose reason holds a
%% request body, connections killed outright, an acceptor killed under
%% load, handlers that leave messages behind, and the garbage of a large
%% upload on an idle keep-alive connection. Over HTTP/1.1 and HTTP/2 (h2c)
%% where both apply.
-module(hostile_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, init_per_suite/1, end_per_suite/1,
         init_per_testcase/2, end_per_testcase/2]).
-export([crash_report_bounded_http/1, crash_report_bounded_h2c/1,
         killed_connections_keep_slots/1, acceptor_death_under_load/1,
         stray_messages_dropped/1, idle_connection_releases_garbage/1,
         idle_after_upload_holds_no_buffer/1, large_body_released_at_once/1,
         connection_deaths_logged_once/1, connection_crash_logged_once/1,
         listener_storm_contained/1, listener_storm_in_user_supervisor/1,
         holder_death_keeps_connections/1, small_fixes_http/1, small_fixes_h2c/1]).
%% the supervisor of listener_storm_in_user_supervisor
-export([init/1]).
%% the handler, also of the peer node of idle_after_upload_holds_no_buffer
-export([handler/1]).

-define(C, falco_test_client).
-define(H2, falco_test_h2_client).
-define(HOST, "Host: example.com\r\n").
-define(BIG, (9 * 1024 * 1024)).

all() ->
    [{group, hostile}].

groups() ->
    [{hostile, [], [crash_report_bounded_http, crash_report_bounded_h2c,
                    killed_connections_keep_slots, acceptor_death_under_load,
                    stray_messages_dropped, idle_connection_releases_garbage,
                    idle_after_upload_holds_no_buffer, large_body_released_at_once,
                    connection_deaths_logged_once, connection_crash_logged_once,
                    listener_storm_contained, listener_storm_in_user_supervisor,
                    holder_death_keeps_connections, small_fixes_http, small_fixes_h2c]}].

init_per_suite(Config) ->
    ok = falco_test_listener:start_app(),
    Config.

end_per_suite(_Config) ->
    ok.

init_per_testcase(Case, Config) ->
    ok = falco_test_listener:ensure_stopped(Case),
    Config.

end_per_testcase(Case, _Config) ->
    _ = logger:remove_handler(Case),
    %% a storm that stopped the application must not fail the cases after
    ok = falco_test_listener:start_app(),
    ok = falco_test_listener:ensure_stopped(Case),
    ok = falco_test_listener:ensure_stopped(bystander),
    ok.

%% -- helpers ---------------------------------------------------------------

handler(Req) ->
    case falco_req:path(Req) of
        <<"/crash">> ->
            {ok, Body, _} = falco_req:read_body(Req),
            %% the reason holds the whole body, as binary_to_integer(Body) would
            error({cannot_parse, Body});
        <<"/die">> ->
            exit(self(), kill);
        <<"/linked">> ->
            %% a linked process dies with a 1 MB reason, taking the
            %% connection (which does not trap exits) with it
            _ = spawn_link(fun() -> exit({linked_crash, binary:copy(<<"x">>, 1024 * 1024)}) end),
            timer:sleep(5000);
        <<"/heap">> ->
            _ = process_flag(max_heap_size, #{size => 1000000, kill => true, error_logger => false}),
            {200, [], integer_to_binary(length(lists:seq(1, 10000000)))};
        <<"/litter">> ->
            [self() ! {litter, I} || I <- lists:seq(1, 1000)],
            {200, [], <<"littered">>};
        <<"/mailbox">> ->
            {message_queue_len, N} = process_info(self(), message_queue_len),
            {200, [], integer_to_binary(N)};
        <<"/upload">> ->
            {ok, Body, _} = falco_req:read_body(Req),
            {200, [], integer_to_binary(byte_size(Body))};
        _ ->
            {200, [], <<"hello">>}
    end.

start(Name, Opts) ->
    falco_test_listener:start(Name, fun handler/1, Opts).

acceptors(Sup) -> falco_test_tree:acceptors(Sup).

conns(Sup) -> falco_test_tree:conns(Sup).

%% The error reports received so far, as the text a handler would write.
reports() ->
    error_texts(falco_test_tree:logged()).

error_texts(Events) ->
    [report_text(Msg) || #{level := error, msg := Msg} <- Events].

report_text({string, S}) -> iolist_to_binary(S);
report_text({report, R}) -> iolist_to_binary(io_lib:format("~0p", [R]));
report_text({Format, Args}) -> iolist_to_binary(io_lib:format(Format, Args)).

%% The error reports logged from now on: once the first is in, what else
%% comes within 300 ms (a second report of the same event would). A
%% receive, not a look at process_info(self(), messages): under load on
%% OTP 25 that look missed a message already sent (CI saw it time out with
%% the report logged 5 s before).
await_reports() ->
    receive
        {log, First} ->
            timer:sleep(300),
            error_texts([First | falco_test_tree:logged()])
    after 5000 ->
        error(no_report_within_5s)
    end.

%% The largest erlang:memory(total) seen while Fun runs.
peak_memory(Fun) ->
    Self = self(),
    Sampler = spawn_link(fun() -> sample(Self, erlang:memory(total)) end),
    Result = Fun(),
    Sampler ! stop,
    receive {peak, Peak} -> {Result, Peak} end.

sample(Parent, Peak) ->
    receive
        stop -> Parent ! {peak, Peak}
    after 5 ->
        sample(Parent, max(Peak, erlang:memory(total)))
    end.

%% -- cases -----------------------------------------------------------------

%% A handler crashing with a 9 MB body in its reason: the 500 comes as soon
%% as the crash, the report line stays under 64 KB, and memory grows by
%% less than 50 MB beyond the body itself.
crash_report_bounded_http(_Config) ->
    crash_report_bounded(crash_report_bounded_http,
                         fun(Port, Body) ->
                                 Sock = ?C:connect(Port),
                                 ?C:send(Sock, [<<"POST /crash HTTP/1.1\r\n" ?HOST "Content-Length: ">>,
                                                integer_to_binary(?BIG), <<"\r\n\r\n">>, Body]),
                                 T0 = erlang:monotonic_time(millisecond),
                                 {ok, #{status := 500}} = ?C:recv_response(Sock, #{timeout => 10000}),
                                 ?C:close(Sock),
                                 T0
                         end).

crash_report_bounded_h2c(_Config) ->
    crash_report_bounded(crash_report_bounded_h2c,
                         fun(Port, Body) ->
                                 C0 = ?H2:connect(Port, #{}),
                                 {Id, C1} = ?H2:request(C0, <<"POST">>, <<"/crash">>, [], Body),
                                 T0 = erlang:monotonic_time(millisecond),
                                 {ok, #{status := 500}, C2} = ?H2:response(C1, Id, 10000),
                                 ?H2:close(C2),
                                 T0
                         end).

%% Exchange(Port, Body) sends the body and reads the 500; it returns when
%% the upload was done.
crash_report_bounded(Name, Exchange) ->
    {_Sup, Port} = start(Name, #{}),
    ok = falco_test_tree:capture_log(Name, error),
    Body = binary:copy(<<"7">>, ?BIG),
    Base = erlang:memory(total),
    {Elapsed, Peak} = peak_memory(fun() ->
                                          T0 = Exchange(Port, Body),
                                          erlang:monotonic_time(millisecond) - T0
                                  end),
    check_report(Elapsed, Peak - Base).

check_report(Elapsed, Growth) ->
    timer:sleep(200),
    Reports = reports(),
    Sizes = [byte_size(R) || R <- Reports],
    ct:log("500 after ~p ms (after the body was sent); peak memory growth ~p MB; "
           "report sizes ~p", [Elapsed, Growth div (1024 * 1024), Sizes]),
    ?assertMatch([_ | _], Reports),
    ?assert(lists:all(fun(S) -> S < 64 * 1024 end, Sizes)),
    ?assert(Elapsed < 2000),
    %% the body is held a few times on its way (socket, request, client)
    ?assert(Growth < 50 * 1024 * 1024 + 4 * ?BIG).

%% With max_connections => 20, 100 connections killed outright while
%% serving: every slot comes back, and the listener still serves.
killed_connections_keep_slots(_Config) ->
    Name = killed_connections_keep_slots,
    {_Sup, Port} = start(Name, #{max_connections => 20}),
    [begin
         Sock = ?C:connect(Port),
         ?C:send(Sock, <<"GET /die HTTP/1.1\r\n" ?HOST "\r\n">>),
         ok = ?C:expect_closed(Sock, 5000),
         ?C:close(Sock)
     end || _ <- lists:seq(1, 100)],
    ok = ?C:wait_until(fun() -> falco:connections(Name) =:= {ok, 0} end, 5000),
    Socks = [?C:connect(Port) || _ <- lists:seq(1, 20)],
    [?C:send(S, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>) || S <- Socks],
    [{ok, #{status := 200}} = ?C:recv_response(S, #{timeout => 5000}) || S <- Socks],
    [?C:close(S) || S <- Socks].

%% 50 connections held open; one acceptor is killed: the connections of
%% the others keep working, and every connection of the killed one is
%% closed, not left half-served.
acceptor_death_under_load(_Config) ->
    Name = acceptor_death_under_load,
    {Sup, Port} = start(Name, #{num_acceptors => 4}),
    Socks = [?C:connect(Port) || _ <- lists:seq(1, 50)],
    [?C:send(S, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>) || S <- Socks],
    [{ok, #{status := 200}} = ?C:recv_response(S) || S <- Socks],
    ok = ?C:wait_until(fun() -> length(conns(Sup)) =:= 50 end, 5000),
    [Victim | _] = [A || A <- acceptors(Sup),
                         [_ | _] <- [[P || {_, P, _, _} <- supervisor:which_children(A)]]],
    Lost = length(supervisor:which_children(Victim)),
    exit(Victim, kill),
    ok = ?C:wait_until(fun() -> length(acceptors(Sup)) =:= 4 andalso
                                    lists:all(fun erlang:is_process_alive/1, acceptors(Sup))
                       end, 5000),
    Served = lists:sum([case (begin
                                  _ = ?C:try_send(S, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
                                  ?C:recv_response(S, #{timeout => 5000})
                              end) of
                            {ok, #{status := 200}} -> 1;
                            {error, _} -> 0
                        end || S <- Socks]),
    ct:log("~p connections were the killed acceptor's; ~p of 50 still served", [Lost, Served]),
    ?assertEqual(50 - Lost, Served),
    ok = ?C:wait_until(fun() -> falco:connections(Name) =:= {ok, 50 - Lost} end, 5000),
    [?C:close(S) || S <- Socks].

%% Messages a handler leaves in the connection process are gone before the
%% next request on the same connection is read.
stray_messages_dropped(_Config) ->
    {_Sup, Port} = start(stray_messages_dropped, #{}),
    Sock = ?C:connect(Port),
    ?C:send(Sock, <<"GET /litter HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, #{status := 200}} = ?C:recv_response(Sock),
    ?C:send(Sock, <<"GET /mailbox HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, #{status := 200, body := <<"0">>}} = ?C:recv_response(Sock),
    %% pipelined right behind the littering request too
    ?C:send(Sock, <<"GET /litter HTTP/1.1\r\n" ?HOST "\r\nGET /mailbox HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, #{status := 200}} = ?C:recv_response(Sock),
    {ok, #{status := 200, body := <<"0">>}} = ?C:recv_response(Sock),
    ?C:close(Sock).

%% After a 9 MB upload, a keep-alive connection that goes idle holds less
%% than 100 KB (process_info memory), and no reference to the body.
idle_connection_releases_garbage(_Config) ->
    {Sup, Port} = start(idle_connection_releases_garbage, #{}),
    Sock = ?C:connect(Port),
    ?C:send(Sock, [<<"POST /upload HTTP/1.1\r\n" ?HOST "Content-Length: ">>,
                   integer_to_binary(?BIG), <<"\r\n\r\n">>, binary:copy(<<"x">>, ?BIG)]),
    {ok, #{status := 200}} = ?C:recv_response(Sock, #{timeout => 10000}),
    [Conn] = conns(Sup),
    ok = ?C:wait_until(fun() ->
                               {memory, M} = process_info(Conn, memory),
                               {binary, Bins} = process_info(Conn, binary),
                               M < 100 * 1024 andalso
                                   lists:sum([S || {_, S, _} <- Bins]) < 1024 * 1024
                       end, 3000),
    ?C:send(Sock, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, #{status := 200}} = ?C:recv_response(Sock),
    ?C:close(Sock).

%% A request whose body was read whole and was large (1 MB, the last of
%% eight) has its binaries freed as soon as its response is out: not at the connection's
%% next collection, nor when it goes idle (a collection after 100 ms of
%% passive reading, falco_http1_conn's BUSY_WAIT). Checked within 60 ms of
%% the response; a check that comes later than 100 ms (a busy machine)
%% cannot tell the two apart, so it is logged.
large_body_released_at_once(_Config) ->
    {Sup, Port} = start(large_body_released_at_once, #{}),
    Sock = ?C:connect(Port),
    Big = 1024 * 1024,
    Upload = [<<"POST /upload HTTP/1.1\r\n" ?HOST "Content-Length: ">>, integer_to_binary(Big),
              <<"\r\n\r\n">>, binary:copy(<<"x">>, Big)],
    %% several, one after the other: the process's binary heap limit grows
    %% with the binaries it holds, and collections come rarer
    [begin
         ?C:send(Sock, Upload),
         {ok, #{status := 200, body := <<"1048576">>}} = ?C:recv_response(Sock, #{timeout => 10000})
     end || _ <- lists:seq(1, 8)],
    T0 = erlang:monotonic_time(millisecond),
    [Conn] = conns(Sup),
    Held = fun() ->
                   {binary, Bins} = process_info(Conn, binary),
                   lists:sum([S || {_, S, _} <- Bins])
           end,
    ok = ?C:wait_until(fun() -> Held() < 64 * 1024 end, 60),
    ct:log("binaries referenced by the connection ~p ms after the response: ~p bytes",
           [erlang:monotonic_time(millisecond) - T0, Held()]),
    ?C:send(Sock, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, #{status := 200}} = ?C:recv_response(Sock),
    ?C:close(Sock).

%% 20 keep-alive connections upload 1 MB each (read_body(all)) and go
%% idle: the socket driver keeps no wide read buffer for them. With a
%% widened 256 KB buffer and piecewise reads each held about 110-176 KB
%% until its next request (docs/internals/idle-memory.md); exact-length
%% reads leave under 1 KB. The server runs in a BEAM of its own
%% (falco_test_listener:peer/3): in the suite's node, other cases'
%% garbage freed between the two readings once counted as 53 KB a
%% connection.
idle_after_upload_holds_no_buffer(_Config) ->
    {Peer, Port} = falco_test_listener:peer(upload_node, fun ?MODULE:handler/1, #{}),
    try
        Body = binary:copy(<<"x">>, 1024 * 1024),
        Socks = [begin
                     S = ?C:connect(Port),
                     ?C:send(S, [<<"POST /upload HTTP/1.1\r\n" ?HOST
                                   "Content-Length: 1048576\r\n\r\n">>, Body]),
                     {ok, #{status := 200, body := <<"1048576">>}} =
                         ?C:recv_response(S, #{timeout => 10000}),
                     S
                 end || _ <- lists:seq(1, 20)],
        Idle = peer:call(Peer, falco_test_tree, binary_after_gc, [], 5000),
        [?C:close(S) || S <- Socks],
        ok = ?C:wait_until(fun() ->
                                   peer:call(Peer, falco, connections, [upload_node], 5000) =:= {ok, 0}
                           end, 5000),
        PerConn = (Idle - peer:call(Peer, falco_test_tree, binary_after_gc, [], 5000)) div 20,
        ct:log("binary memory held per idle connection after a 1 MB upload: ~p bytes", [PerConn]),
        ?assert(PerConn < 32 * 1024)
    after
        peer:stop(Peer)
    end.

%% A connection that dies abnormally (killed, a linked crash, max_heap_size)
%% is reported once, by its acceptor, in one bounded line naming the
%% listener and the reason; a handler crash only by the pipeline (its 500
%% went out); a plain close not at all. Every slot comes back.
connection_deaths_logged_once(_Config) ->
    Name = connection_deaths_logged_once,
    {_Sup, Port} = start(Name, #{}),
    ok = falco_test_tree:capture_log(Name, error),
    Died = fun(Path) ->
                   Sock = ?C:connect(Port),
                   ?C:send(Sock, [<<"GET ">>, Path, <<" HTTP/1.1\r\n" ?HOST "\r\n">>]),
                   ok = ?C:expect_closed(Sock, 10000),
                   ?C:close(Sock),
                   ok = ?C:wait_until(fun() -> falco:connections(Name) =:= {ok, 0} end, 5000),
                   await_reports()
           end,
    [Killed] = Died(<<"/die">>),
    [Linked] = Died(<<"/linked">>),
    [Heap] = Died(<<"/heap">>),
    ct:log("~ts~n~ts~n~ts", [Killed, Linked, Heap]),
    Name1 = atom_to_binary(Name),
    [?assertMatch({match, _}, re:run(R, <<"^falco: listener ", Name1/binary, ": connection ">>))
     || R <- [Killed, Linked, Heap]],
    ?assertMatch({match, _}, re:run(Killed, <<"ended: killed$">>)),
    ?assertMatch({match, _}, re:run(Heap, <<"ended: killed$">>)),
    ?assertMatch({match, _}, re:run(Linked, <<"ended: \\{linked_crash,">>)),
    ?assert(byte_size(Linked) < 8192),
    %% a handler crash: the pipeline's report, nothing more
    Sock = ?C:connect(Port),
    ?C:send(Sock, <<"POST /crash HTTP/1.1\r\n" ?HOST "Content-Length: 2\r\n\r\n42">>),
    {ok, #{status := 500}} = ?C:recv_response(Sock),
    ?C:close(Sock),
    ok = ?C:wait_until(fun() -> falco:connections(Name) =:= {ok, 0} end, 5000),
    [Crash] = await_reports(),
    ?assertMatch({match, _}, re:run(Crash, <<"^falco: handler crashed">>)),
    %% served and closed by the client: silent
    {Sock2, {ok, #{status := 200}}} = ?C:request(Port, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
    ?C:close(Sock2),
    ok = ?C:wait_until(fun() -> falco:connections(Name) =:= {ok, 0} end, 5000),
    timer:sleep(100),
    ?assertEqual([], reports()).

%% An exception in falco's own connection code (here: an acceptor given a
%% configuration without `protocols', so falco_conn fails right after
%% accept) is reported once, by the acceptor, in a bounded line: no
%% crash report of the connection process besides.
connection_crash_logged_once(_Config) ->
    Name = connection_crash_logged_once,
    {ok, LSock} = gen_tcp:listen(0, [binary, {active, false}, {ip, {127, 0, 0, 1}}]),
    {ok, Port} = inet:port(LSock),
    Conf = #{transport => tcp, max_connections => infinity, shutdown_timeout => 1000,
             handler => fun handler/1, drain => falco_drain:new(), stats => falco_stats:new(),
             padding => binary:copy(<<"p">>, 1024 * 1024)},
    ok = falco_test_tree:capture_log(Name, error),
    ok = falco_acceptor:share_conf(Name, Conf#{lsock => LSock}),
    {ok, Acc} = falco_acceptor:start_link(Name, falco_slots:new(1), 1),
    try
        {ok, Sock} = gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {active, false}]),
        ok = ?C:expect_closed(Sock, 5000),
        ok = gen_tcp:close(Sock),
        Reports = await_reports(),
        ct:log("~p reports, sizes ~p", [length(Reports), [byte_size(R) || R <- Reports]]),
        [Line] = Reports,
        ?assertMatch({match, _}, re:run(Line, <<"^falco: listener connection_crash_logged_once: ">>)),
        ?assert(byte_size(Line) < 8192)
    after
        unlink(Acc),
        exit(Acc, shutdown),
        gen_tcp:close(LSock)
    end.

%% -- restart storms --------------------------------------------------------

%% The supervisor of a listener, as the registry knows it (undefined once
%% it is gone).
listener_sup(Name) ->
    case ets:lookup(falco_listeners, Name) of
        [{_, _, _, Sup, _}] ->
            case is_process_alive(Sup) of
                true -> Sup;
                false -> undefined
            end;
        [] -> undefined
    end.

%% Kills every acceptor of listener Name, round after round, until Stop()
%% says enough (or 5000 rounds). Returns the rounds.
storm(Name, Stop) -> storm(Name, Stop, 0).

storm(_Name, _Stop, 5000) ->
    5000;
storm(Name, Stop, N) ->
    case Stop() of
        true -> N;
        false ->
            _ = try acceptors(listener_sup(Name)) of
                    Accs -> [exit(A, kill) || A <- Accs]
                catch
                    _:_ -> []
                end,
            timer:sleep(1),
            storm(Name, Stop, N + 1)
    end.

%% A client process asking listener Port for "/" every 10 ms until told to
%% stop; it reports {Served, Failed}.
keep_asking(Port) ->
    Self = self(),
    spawn_link(fun() -> ask(Self, Port, 0, 0) end).

ask(Parent, Port, Ok, Failed) ->
    receive
        stop -> Parent ! {asked, Ok, Failed}
    after 10 ->
        case catch ?C:request(Port, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>) of
            {Sock, {ok, #{status := 200}}} -> ?C:close(Sock), ask(Parent, Port, Ok + 1, Failed);
            _ -> ask(Parent, Port, Ok, Failed + 1)
        end
    end.

stop_asking(Pid) ->
    Pid ! stop,
    receive {asked, Ok, Failed} -> {Ok, Failed} after 10000 -> error(asker_lost) end.

%% One listener's acceptors killed round after round until the listener
%% gives up: another listener serves throughout (a held connection and new
%% ones), falco_sup and the application stay up, and the stormed listener
%% stops alone and can be started again. (Before, falco_sup restarted it,
%% ran out of restarts, and the application stopped with every listener.)
listener_storm_contained(_Config) ->
    Name = listener_storm_contained,
    {_, _} = start(Name, #{num_acceptors => 2}),
    {_, Port} = start(bystander, #{}),
    TopSup = whereis(falco_sup),
    Held = ?C:connect(Port),
    ?C:send(Held, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, #{status := 200}} = ?C:recv_response(Held),
    Asker = keep_asking(Port),
    T0 = erlang:monotonic_time(millisecond),
    Rounds = storm(Name, fun() ->
                                 falco:port(Name) =:= {error, not_found}
                                     orelse whereis(falco_sup) =/= TopSup
                         end),
    Ms = erlang:monotonic_time(millisecond) - T0,
    timer:sleep(200),
    {Ok, Failed} = stop_asking(Asker),
    ct:log("~p rounds in ~p ms; falco_sup ~p -> ~p; bystander served ~p, failed ~p",
           [Rounds, Ms, TopSup, whereis(falco_sup), Ok, Failed]),
    ?assertEqual(TopSup, whereis(falco_sup)),
    ?assertMatch({falco, _, _}, lists:keyfind(falco, 1, application:which_applications())),
    ?assertEqual({error, not_found}, falco:port(Name)),
    ?assertEqual(0, Failed),
    ?assert(Ok > 0),
    ?C:send(Held, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, #{status := 200}} = ?C:recv_response(Held),
    ?C:close(Held),
    %% the stormed listener can be started again
    {_, Port2} = start(Name, #{}),
    {Sock, {ok, #{status := 200}}} = ?C:request(Port2, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
    ?C:close(Sock).

%% A listener in a user's supervisor (falco:child_spec/2, permanent): when
%% it gives up, that supervisor starts it again on a fresh listen socket,
%% and falco's supervisor is not involved.
listener_storm_in_user_supervisor(_Config) ->
    Name = listener_storm_in_user_supervisor,
    TopSup = whereis(falco_sup),
    Spec = falco:child_spec(Name, #{port => 0, ip => {127, 0, 0, 1}, num_acceptors => 2,
                                    handler => fun handler/1}),
    Self = self(),
    Owner = spawn(fun() ->
                          {ok, Sup} = supervisor:start_link(?MODULE, {user_sup, Spec}),
                          Self ! {user_sup, Sup},
                          receive stop -> ok end
                  end),
    UserSup = receive {user_sup, S} -> S after 5000 -> error(no_user_sup) end,
    try
        First = listener_sup(Name),
        Rounds = storm(Name, fun() ->
                                     Now = listener_sup(Name),
                                     Now =/= First andalso Now =/= undefined
                             end),
        ct:log("~p rounds until the listener was restarted by the user's supervisor", [Rounds]),
        ?assert(Rounds < 5000),
        ?assert(is_process_alive(UserSup)),
        ?assertEqual(TopSup, whereis(falco_sup)),
        Port = falco_test_listener:port(Name),
        {Sock, {ok, #{status := 200}}} = ?C:request(Port, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
        ?C:close(Sock),
        ok = supervisor:terminate_child(UserSup, {falco_listener, Name}),
        ?assertEqual({error, not_found}, falco:port(Name))
    after
        Owner ! stop
    end.

%% @private the user's supervisor of listener_storm_in_user_supervisor
init({user_sup, Spec}) ->
    {ok, {#{strategy => one_for_one, intensity => 5, period => 10}, [Spec]}}.

%% The holder of the listen socket killed while 20 connections are open:
%% it alone is restarted (the socket is the listener supervisor's and stays
%% open), every connection keeps working and new ones are accepted. Before,
%% the listener was rest_for_one and every connection was closed.
holder_death_keeps_connections(_Config) ->
    Name = holder_death_keeps_connections,
    {Sup, Port} = start(Name, #{}),
    Socks = [?C:connect(Port) || _ <- lists:seq(1, 20)],
    [?C:send(S, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>) || S <- Socks],
    [{ok, #{status := 200}} = ?C:recv_response(S) || S <- Socks],
    Accs = acceptors(Sup),
    {listen_socket, Holder, worker, _} = lists:keyfind(listen_socket, 1, supervisor:which_children(Sup)),
    exit(Holder, kill),
    ok = ?C:wait_until(fun() ->
                               case lists:keyfind(listen_socket, 1, supervisor:which_children(Sup)) of
                                   {_, New, _, _} -> is_pid(New) andalso New =/= Holder;
                                   false -> false
                               end
                       end, 5000),
    ?assertEqual(Accs, acceptors(Sup)),
    [?C:send(S, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>) || S <- Socks],
    [{ok, #{status := 200}} = ?C:recv_response(S, #{timeout => 5000}) || S <- Socks],
    {Sock, {ok, #{status := 200}}} = ?C:request(Port, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
    ?C:close(Sock),
    [?C:close(S) || S <- Socks].

%% -- point 7, over the wire -------------------------------------------------

%% A handler that inflates gzip uploads (falco_compress, decode_request)
%% at /upload, and serves the files under Root at every other path.
fixes_handler(Root) ->
    {ok, Static} = falco_static:init(#{root => Root}),
    fun(Req) ->
            case falco_req:path(Req) of
                <<"/upload">> ->
                    falco_compress:call(Req, fun(R) ->
                                                     {ok, Body, _} = falco_req:read_body(R),
                                                     {200, [], Body}
                                             end, #{decode_request => true});
                _ ->
                    falco_static:handle(Req, Static)
            end
    end.

%% Before: a body of two gzip members reached the handler as its first
%% member ("hello "), trailing garbage was dropped (200), `GET //sub'
%% answered `Location: //sub/', a file was served at `a.txt/', and of two
%% Range fields the first was used (206).
small_fixes_http(Config) ->
    small_fixes(small_fixes_http, Config,
                fun(Port, Method, Path, Headers, Body) ->
                        Raw = [Method, " ", Path, " HTTP/1.1\r\n", ?HOST,
                               [[N, ": ", V, "\r\n"] || {N, V} <- Headers],
                               "Content-Length: ", integer_to_binary(byte_size(Body)), "\r\n\r\n",
                               Body],
                        {Sock, {ok, R}} = ?C:request(Port, Raw),
                        ?C:close(Sock),
                        R
                end).

small_fixes_h2c(Config) ->
    small_fixes(small_fixes_h2c, Config,
                fun(Port, Method, Path, Headers, Body) ->
                        C0 = ?H2:connect(Port, #{}),
                        {Id, C1} = ?H2:request(C0, Method, Path, Headers, Body),
                        {ok, R, C2} = ?H2:response(C1, Id, 5000),
                        ?H2:close(C2),
                        R
                end).

small_fixes(Name, Config, Ask) ->
    Root = filename:join(?config(priv_dir, Config), atom_to_list(Name)),
    ok = filelib:ensure_dir(filename:join([Root, "sub", "x"])),
    ok = file:write_file(filename:join([Root, "sub", "index.html"]), <<"index">>),
    ok = file:write_file(filename:join(Root, "a.txt"), <<"0123456789">>),
    {_, Port} = start(Name, #{handler => fixes_handler(Root)}),
    Gz = fun(Data) -> zlib:gzip(Data) end,
    Two = <<(Gz(<<"hello ">>))/binary, (Gz(<<"world">>))/binary>>,
    Upload = fun(Body) -> Ask(Port, <<"POST">>, <<"/upload">>,
                              [{<<"content-encoding">>, <<"gzip">>}], Body) end,
    ?assertMatch(#{status := 200, body := <<"hello world">>}, Upload(Two)),
    ?assertMatch(#{status := 400}, Upload(<<(Gz(<<"hello">>))/binary, "garbage">>)),
    Get = fun(Path, Headers) -> Ask(Port, <<"GET">>, Path, Headers, <<>>) end,
    #{status := 301, headers := H1} = Get(<<"//sub">>, []),
    ?assertEqual(<<"/sub/">>, proplists:get_value(<<"location">>, H1)),
    ?assertMatch(#{status := 200, body := <<"index">>}, Get(<<"/sub/">>, [])),
    ?assertMatch(#{status := 200}, Get(<<"/a.txt">>, [])),
    ?assertMatch(#{status := 404}, Get(<<"/a.txt/">>, [])),
    ?assertMatch(#{status := 206, body := <<"01">>}, Get(<<"/a.txt">>, [{<<"range">>, <<"bytes=0-1">>}])),
    ?assertMatch(#{status := 200, body := <<"0123456789">>},
                 Get(<<"/a.txt">>, [{<<"range">>, <<"bytes=0-1">>}, {<<"range">>, <<"bytes=5-6">>}])).
