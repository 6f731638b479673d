%% Overload (issue 15, point 7): what a listener does at max_connections
%% (the kernel backlog holds the next connections, served as slots free;
%% beyond the backlog the kernel drops them; never a crash or a restart)
%% and the rate limit middleware end to end (a burst passes, then 429 with
%% Retry-After and a rejected event, its stop event says 429; another
%% client is not affected; after the refill the client passes again).
-module(overload_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1, end_per_testcase/2]).
-export([backlog_then_served/1, beyond_backlog/1, rate_limited/1]).

-define(C, falco_test_client).
-define(GET, <<"GET / HTTP/1.1\r\nhost: x\r\n\r\n">>).

all() ->
    [backlog_then_served, beyond_backlog, rate_limited].

init_per_suite(Config) ->
    ok = falco_test_listener:start_app(),
    Config.

end_per_suite(_Config) ->
    ok.

end_per_testcase(Case, _Config) ->
    _ = logger:remove_handler(Case),
    ok = falco_test_listener:ensure_stopped(Case, immediate),
    ok.

handler() ->
    fun(_Req) -> {200, [], <<"ok">>} end.

%% A listener at max_connections 5 with a small backlog, and the log's
%% warnings and errors sent to the test process.
full_listener(Name) ->
    {Sup, Port} = falco_test_listener:start(Name, handler(),
                                            #{max_connections => 5, backlog => 4,
                                              num_acceptors => 2}),
    ok = falco_test_tree:capture_log(Name, warning),
    {Sup, Port}.

%% Five keep-alive connections, each served once and left open (idle).
hold_five(Port) ->
    [begin
         S = ?C:connect(Port),
         ?C:send(S, ?GET),
         {ok, #{status := 200}} = ?C:recv_response(S),
         S
     end || _ <- lists:seq(1, 5)].

%% Nothing crashed: the same acceptors, and nothing logged at warning or
%% above since the last look but `Lines' lines saying the listener reached
%% max_connections (falco_saturation: once per 10 s).
no_crash(Sup, Acceptors, Lines) ->
    ?assertEqual(Acceptors, falco_test_tree:acceptors(Sup)),
    [?assert(is_process_alive(A)) || A <- Acceptors],
    Logged = falco_test_tree:logged(),
    ?assertEqual(Lines, length(Logged)),
    [?assertMatch(#{level := warning, msg := {"falco: listener ~p reached max_connections" ++ _,
                                              _}}, L) || L <- Logged].

%% The 6th connection is taken by the kernel (connect succeeds) and waits:
%% its request is not answered while 5 are open; one of them closes, and
%% it is served.
backlog_then_served(_Config) ->
    Name = backlog_then_served,
    {Sup, Port} = full_listener(Name),
    Acceptors = falco_test_tree:acceptors(Sup),
    Held = hold_five(Port),
    ?assertMatch({ok, #{connections := 5, max_connections := 5}}, falco:info(Name)),
    Sixth = ?C:connect(Port),
    ?C:send(Sixth, ?GET),
    ok = ?C:expect_silence(Sixth, 1000),
    ?assertMatch({ok, #{connections := 5}}, falco:info(Name)),
    %% the held ones are still served meanwhile
    ?C:send(hd(Held), ?GET),
    {ok, #{status := 200}} = ?C:recv_response(hd(Held)),
    ok = ?C:close(lists:last(Held)),
    {ok, #{status := 200}} = ?C:recv_response(Sixth, #{timeout => 5000}),
    ?assertMatch({ok, #{connections := 5}}, falco:info(Name)),
    [?C:close(S) || S <- [Sixth | lists:droplast(Held)]],
    ok = ?C:wait_until(fun() -> maps:get(connections, element(2, falco:info(Name))) =:= 0 end,
                       5000),
    no_crash(Sup, Acceptors, 1).

%% Far more clients than the backlog while the listener is full: the
%% kernel queues a few and drops the others' SYNs (their connect times out
%% or is retried by the kernel); nothing crashes, no acceptor restarts;
%% once the 5 close, the queued ones are served, and every new client is.
beyond_backlog(_Config) ->
    Name = beyond_backlog,
    {Sup, Port} = full_listener(Name),
    Acceptors = falco_test_tree:acceptors(Sup),
    Held = hold_five(Port),
    Test = self(),
    N = 60,
    Clients = [spawn_link(fun() -> Test ! {self(), client(Port)} end) || _ <- lists:seq(1, N)],
    timer:sleep(1500),
    %% none served while the listener is full
    Early = drain_results(),
    ?assertEqual([], [R || {_, {served, _}} = R <- Early]),
    ?assertMatch({ok, #{connections := 5}}, falco:info(Name)),
    no_crash(Sup, Acceptors, 1),
    [?C:close(S) || S <- Held],
    Results = [case lists:keyfind(C, 1, Early) of
                   {C, R} -> R;
                   false -> receive {C, R} -> R after 30000 -> ct:fail({client_stuck, C}) end
               end || C <- Clients],
    Counts = lists:foldl(fun(R, Acc) -> maps:update_with(element(1, R), fun(X) -> X + 1 end, 1, Acc)
                         end, #{}, Results),
    ct:log("~p clients: ~p", [N, Counts]),
    %% at least what the backlog held is served once slots free (the
    %% kernel's SYN retries may bring in the others too)
    ?assert(maps:get(served, Counts, 0) >= 4),
    %% each one either served or never connected (its SYN dropped): none
    %% connected and then cut or left without an answer
    [?assert(R =:= {served, 200} orelse element(1, R) =:= connect_error) || R <- Results],
    %% and everything is served again once the load is gone
    [begin
         S = ?C:connect(Port),
         ?C:send(S, ?GET),
         {ok, #{status := 200}} = ?C:recv_response(S),
         ?C:close(S)
     end || _ <- lists:seq(1, 10)],
    ok = ?C:wait_until(fun() -> maps:get(connections, element(2, falco:info(Name))) =:= 0 end,
                       5000),
    no_crash(Sup, Acceptors, 0).

%% One client: connect (1 s), send a request, wait for the answer.
client(Port) ->
    case gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {active, false}], 1000) of
        {ok, S} ->
            ok = gen_tcp:send(S, ?GET),
            R = case gen_tcp:recv(S, 0, 20000) of
                    {ok, <<"HTTP/1.1 ", Status:3/binary, _/binary>>} ->
                        {served, binary_to_integer(Status)};
                    {ok, Other} -> {garbage, Other};
                    {error, Why} -> {recv_error, Why}
                end,
            gen_tcp:close(S),
            R;
        {error, Why} ->
            {connect_error, Why}
    end.

drain_results() ->
    receive {Pid, R} when is_pid(Pid) -> [{Pid, R} | drain_results()] after 0 -> [] end.

%% rate 10/s, burst 5, keyed on the peer address: 20 pipelined requests
%% from 127.0.0.1, the first 5 pass and then 429 with Retry-After: 1
%% (plus at most what refilled meanwhile); a client from 127.0.0.2 still
%% passes; after a second 127.0.0.1 passes again.
rate_limited(_Config) ->
    Name = rate_limited,
    Test = self(),
    Events = fun([falco, request, rejected] = E, _M, Meta) -> Test ! {event, E, Meta};
                ([falco, request, stop], _M, #{status := St}) -> Test ! {stop, St};
                (_, _, _) -> ok
             end,
    {_Sup, Port} = falco_test_listener:start(
                     Name, handler(),
                     #{middleware => [{falco_rate_limit, #{rate => 10, burst => 5}}],
                       event_handler => Events}),
    S = ?C:connect(Port),
    T0 = erlang:monotonic_time(millisecond),
    ?C:send(S, binary:copy(?GET, 20)),
    Resps = [begin {ok, R} = ?C:recv_response(S), R end || _ <- lists:seq(1, 20)],
    Elapsed = erlang:monotonic_time(millisecond) - T0,
    Statuses = [St || #{status := St} <- Resps],
    ct:log("~p ms: ~p", [Elapsed, Statuses]),
    ?assertEqual([200, 200, 200, 200, 200], lists:sublist(Statuses, 5)),
    Passed = length([200 || 200 <- Statuses]),
    ?assert(Passed =< 5 + Elapsed div 100 + 1),
    [First429 | _] = [R || R = #{status := 429} <- Resps],
    ?assertEqual(<<"1">>, ?C:header(<<"retry-after">>, First429)),
    ?assertEqual(20, Passed + length([429 || 429 <- Statuses])),
    %% one rejected event per 429
    Rejected = [receive {event, _, Meta} -> Meta after 5000 -> ct:fail(no_event) end
                || 429 <- Statuses],
    [?assertMatch(#{reason := rate_limit, status := 429, listener := Name,
                    peer := {{127, 0, 0, 1}, _}}, M) || M <- Rejected],
    %% and the request events saw the 429s as any other response
    Stops = [receive {stop, St} -> St after 5000 -> ct:fail(no_stop) end || _ <- Statuses],
    ?assertEqual(lists:sort(Statuses), lists:sort(Stops)),
    %% and falco:info/1 counts them apart from the other rejections
    {ok, #{rejected := #{rate_limit := NLimited, limits := 0, shed := 0}}} = falco:info(Name),
    ?assertEqual(length([429 || 429 <- Statuses]), NLimited),
    %% another client (another source address) has its own bucket
    Other = ?C:connect(Port, [{ip, {127, 0, 0, 2}}]),
    ?C:send(Other, ?GET),
    {ok, #{status := 200}} = ?C:recv_response(Other),
    %% the first one, after the Retry-After it was given
    timer:sleep(1000),
    ?C:send(S, ?GET),
    {ok, #{status := 200}} = ?C:recv_response(S),
    ?C:close(S),
    ?C:close(Other).
