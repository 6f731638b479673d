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
         stray_messages_dropped/1, idle_connection_releases_garbage/1]).

-define(C, falco_test_client).
-define(H2, falco_test_h2_client).
-define(HOST, "Host: example.com\r\n").
-define(BIG, (9 * 1024 * 1024)).

all() ->
    [{group, hostile}].

groups() ->
    [{hostile, [], [crash_report_bounded_http, crash_report_bounded_h2c,
                    killed_connections_keep_slots, acceptor_death_under_load,
                    stray_messages_dropped, idle_connection_releases_garbage]}].

init_per_suite(Config) ->
    {ok, _} = application:ensure_all_started(falco),
    Config.

end_per_suite(_Config) ->
    ok.

init_per_testcase(Case, Config) ->
    _ = falco:stop_listener(Case),
    Config.

end_per_testcase(Case, _Config) ->
    _ = logger:remove_handler(Case),
    _ = falco:stop_listener(Case),
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
    {ok, Sup} = falco:start_listener(Name, maps:merge(#{port => 0, ip => {127, 0, 0, 1},
                                                        handler => fun handler/1}, Opts)),
    {ok, Port} = falco:port(Name),
    {Sup, Port}.

acceptors(Sup) -> falco_test_tree:acceptors(Sup).

conns(Sup) -> falco_test_tree:conns(Sup).

%% The error reports received so far, as the text a handler would write.
reports() ->
    [report_text(Msg) || #{level := error, msg := Msg} <- falco_test_tree:logged()].

report_text({string, S}) -> iolist_to_binary(S);
report_text({report, R}) -> iolist_to_binary(io_lib:format("~0p", [R]));
report_text({Format, Args}) -> iolist_to_binary(io_lib:format(Format, Args)).

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
