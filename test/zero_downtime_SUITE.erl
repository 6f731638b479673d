%% Zero-downtime restarts (issue 15, point 2), the way docs/guide/deploying.md
%% describes them.
%%
%% rolling_restart: haproxy (HTTP mode) in front of two falco nodes, each
%% a BEAM of its own (`peer'); steady load through haproxy from wrk
%% (HTTP/1.1 to haproxy and on to falco) and h2load (h2 to haproxy and
%% h2c to falco, `proto h2' on both sides) while each node in turn is
%% drained (falco:drain/2, after a drain_notice during which its health
%% check, falco:ready/1, answers 503), its BEAM stopped, and a new BEAM
%% started on the same port, the next node waiting until haproxy sends
%% the new one traffic. Passes only with every request answered 200: wrk reports no
%% non-2xx/3xx response and no socket error, h2load no failed, errored or
%% timed-out request and only 2xx.
%%
%% reuseport_takeover: one BEAM, the single-node path: listener A on a
%% port with `reuseport', listener B on the same port, A drained under
%% load from a few Erlang clients (a new connection per request, so that
%% the kernel spreads them over both sockets); every request answered
%% (with net.ipv4.tcp_migrate_req on: see the case).
-module(zero_downtime_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1, init_per_testcase/2, end_per_testcase/2]).
-export([rolling_restart/1, reuseport_takeover/1]).
-export([node_start/1, handle/1, hits/0]).

%% Seconds of load in rolling_restart: long enough for two drains and two
%% BEAM starts on a busy machine (about 2 s each here).
-define(LOAD_S, 20).

%% The nodes' drain_notice: haproxy checks every 200 ms, gives a check
%% up to 1 s (the machine may be busy), and takes a node out at its
%% first failed check (fall 1).
-define(NOTICE_MS, 1500).

all() ->
    [rolling_restart, reuseport_takeover].

init_per_suite(Config) ->
    ok = falco_test_listener:start_app(),
    Config.

end_per_suite(_Config) ->
    ok.

%% -- the nodes ------------------------------------------------------------------

%% In a node: falco, and listener `zd' on Port answering GET /health with
%% 200 (503 once it leaves: falco:ready/1) and anything else with 200
%% after a few ms, counting those.
node_start(Port) ->
    ok = falco_test_listener:start_app(),
    persistent_term:put(zd_hits, counters:new(2, [])),
    {_, Port} = falco_test_listener:start(zd, fun ?MODULE:handle/1,
                                          #{port => Port, drain_notice => ?NOTICE_MS}),
    ok.

handle(Req) ->
    case falco_req:path(Req) of
        <<"/health">> ->
            case falco:ready(zd) of
                true -> falco_resp:text(200, <<"up">>);
                false -> falco_resp:text(503, <<"draining">>)
            end;
        _ ->
            timer:sleep(2),
            Ix = case falco_req:version(Req) of
                     {2, 0} -> 2;
                     _ -> 1
                 end,
            counters:add(persistent_term:get(zd_hits), Ix, 1),
            falco_resp:text(200, <<"hello from falco\n">>)
    end.

%% In a node: the requests it answered (health checks aside), over
%% HTTP/1.1 and over h2.
hits() ->
    Hits = persistent_term:get(zd_hits),
    {counters:get(Hits, 1), counters:get(Hits, 2)}.

%% A new BEAM (standard_io connection: no distribution needed) serving on Port.
start_node(Port) ->
    Paths = [code:lib_dir(falco, ebin), filename:dirname(code:which(?MODULE))],
    {ok, Peer, _} = peer:start_link(#{connection => standard_io,
                                      args => lists:append([["-pa", P] || P <- Paths])}),
    ok = peer:call(Peer, ?MODULE, node_start, [Port], 15000),
    Peer.

node_hits(Peer) ->
    peer:call(Peer, ?MODULE, hits, [], 5000).

%% The deploy of one node: drain it, stop its BEAM, start a new one on the
%% same port, and wait until haproxy sends it requests again.
restart(Peer, Port) ->
    T0 = erlang:monotonic_time(millisecond),
    {ok, Drained} = peer:call(Peer, falco, drain, [zd, 10000], 20000),
    T1 = erlang:monotonic_time(millisecond),
    {Served1, Served2} = node_hits(Peer),
    ok = peer:stop(Peer),
    New = start_node(Port),
    T2 = erlang:monotonic_time(millisecond),
    %% haproxy's two backends check it each on its own: both send to it
    ok = falco_test_client:wait_until(fun() -> {H1, H2} = node_hits(New), H1 > 0 andalso H2 > 0 end,
                                      10000, 50),
    T3 = erlang:monotonic_time(millisecond),
    Figures = #{drained => Drained, drain_ms => T1 - T0, served_before => {Served1, Served2},
                restart_ms => T2 - T1, back_in_ms => T3 - T2},
    ct:pal("node on ~b: ~p", [Port, Figures]),
    %% it served both protocols before its drain: the load went through both nodes
    ?assert(Served1 > 0 andalso Served2 > 0),
    {New, Figures}.

%% -- haproxy --------------------------------------------------------------------

%% The configuration of docs/guide/deploying.md, on loopback ports: a
%% frontend per protocol, a backend per protocol over the same two nodes.
haproxy_cfg(H1, H2, [A, B]) ->
    Servers = fun(Proto) ->
                      [io_lib:format("  server ~s 127.0.0.1:~b check~s\n", [N, P, Proto])
                       || {N, P} <- [{"a", A}, {"b", B}]]
              end,
    Backend = ["  balance roundrobin\n"
               "  option httpchk GET /health\n"
               "  default-server inter 200ms fall 1 rise 1\n"],
    ["global\n  maxconn 1000\n  log stderr format raw local0\n"
     "defaults\n  mode http\n  log global\n  option httplog\n  option dontlog-normal\n"
     "  timeout connect 2s\n  timeout client 30s\n  timeout server 30s\n  timeout check 1s\n"
     "  retries 3\n  option redispatch 1\n"
     "  retry-on conn-failure empty-response response-timeout\n",
     io_lib:format("frontend h1\n  bind 127.0.0.1:~b\n  default_backend falco_h1\n", [H1]),
     io_lib:format("frontend h2\n  bind 127.0.0.1:~b proto h2\n  default_backend falco_h2\n", [H2]),
     "backend falco_h1\n", Backend, Servers(""),
     "backend falco_h2\n", Backend, Servers(" proto h2")].

%% -- the load -------------------------------------------------------------------

load(Tag, Cmd) ->
    Self = self(),
    spawn_link(fun() -> Self ! {Tag, falco_test_run:cmd(Cmd, (?LOAD_S + 20) * 1000)} end).

load_result(Tag) ->
    receive {Tag, Out} -> Out
    after (?LOAD_S + 30) * 1000 -> ct:fail({no_output, Tag})
    end.

%% wrk's summary: the request count; no line about errors.
wrk_ok(Out) ->
    {match, [N]} = re:run(Out, "(\\d+) requests in", [{capture, all_but_first, list}]),
    Errors = [L || L <- string:split(Out, "\n", all),
                   string:find(L, "Non-2xx") =/= nomatch orelse
                       string:find(L, "Socket errors") =/= nomatch],
    ?assertEqual([], Errors, Out),
    list_to_integer(N).

%% h2load's summary: every request succeeded with a 2xx.
h2load_ok(Out) ->
    {match, [Total, Ok, Failed, Errored, Timeout]} =
        re:run(Out, "requests: (\\d+) total, \\d+ started, \\d+ done, (\\d+) succeeded, "
               "(\\d+) failed, (\\d+) errored, (\\d+) timeout", [{capture, all_but_first, list}]),
    {match, [S2xx, S3xx, S4xx, S5xx]} =
        re:run(Out, "status codes: (\\d+) 2xx, (\\d+) 3xx, (\\d+) 4xx, (\\d+) 5xx",
               [{capture, all_but_first, list}]),
    ?assertEqual({"0", "0", "0", "0", "0", "0"}, {Failed, Errored, Timeout, S3xx, S4xx, S5xx}, Out),
    ?assertEqual(Ok, S2xx, Out),
    ?assert(list_to_integer(Ok) > 0),
    {list_to_integer(Total), list_to_integer(Ok)}.

%% -- cases ----------------------------------------------------------------------

rolling_restart(Config) ->
    falco_test_tools:require(["haproxy", "wrk", "h2load"]),
    [H1, H2 | Nodes] = falco_test_haproxy:free_ports(4),
    Peers = [start_node(P) || P <- Nodes],
    Cfg = filename:join(?config(priv_dir, Config), "haproxy.cfg"),
    ok = file:write_file(Cfg, haproxy_cfg(H1, H2, Nodes)),
    Keeper = falco_test_haproxy:start(Cfg),
    try
        ok = falco_test_client:wait_until(fun() -> falco_test_haproxy:listening(H1) andalso
                                                       falco_test_haproxy:listening(H2) end, 5000),
        D = integer_to_list(?LOAD_S),
        load(wrk, "wrk -t1 -c8 --latency -d" ++ D ++ "s http://127.0.0.1:" ++ integer_to_list(H1) ++ "/ 2>&1"),
        load(h2load, "h2load -t1 -c4 -m4 -D " ++ D ++ " http://127.0.0.1:" ++ integer_to_list(H2)
             ++ "/ 2>&1"),
        timer:sleep(1500),
        {Restarted, Figures} = lists:unzip([restart(Peer, Port) || {Peer, Port} <- lists:zip(Peers, Nodes)]),
        %% both deploys happened under load
        receive {Tag, _} -> ct:fail({load_ended_before_the_restarts, Tag}) after 0 -> ok end,
        Wrk = load_result(wrk),
        H2load = load_result(h2load),
        ct:pal("wrk:~n~s~nh2load:~n~s", [Wrk, H2load]),
        Http1 = wrk_ok(Wrk),
        {_, H2ok} = h2load_ok(H2load),
        ct:pal("served through haproxy: HTTP/1.1 ~b, h2 ~b, 0 failed; drains (ms): ~p",
               [Http1, H2ok, [maps:get(drain_ms, F) || F <- Figures]]),
        _ = [peer:stop(P) || P <- Restarted],
        ok
    after
        falco_test_haproxy:stop(Keeper, Cfg)
    end.

%% Linux resets the connections waiting in a closed SO_REUSEPORT socket's
%% accept queue, unless net.ipv4.tcp_migrate_req (Linux 5.14) is 1: then
%% it moves them to another socket of the group. The case turns it on for
%% its run when it may (root in its network namespace) and
%% end_per_testcase puts it back; otherwise it runs with the reset window
%% and lets only resets through, saying how many in its comment.
-define(MIGRATE, "/proc/sys/net/ipv4/tcp_migrate_req").

init_per_testcase(reuseport_takeover, Config) ->
    case file:read_file(?MIGRATE) of
        {ok, <<"1\n">>} ->
            [{migrate, true} | Config];
        {ok, <<"0\n">>} ->
            case file:write_file(?MIGRATE, <<"1\n">>) of
                ok -> [{migrate, true}, {migrate_restore, <<"0\n">>} | Config];
                {error, _} -> [{migrate, false} | Config]
            end;
        _ ->
            [{migrate, false} | Config]
    end;
init_per_testcase(_, Config) ->
    Config.

end_per_testcase(_, Config) ->
    case ?config(migrate_restore, Config) of
        undefined -> ok;
        Old -> ok = file:write_file(?MIGRATE, Old)
    end.

reuseport_takeover(Config) ->
    takeover(?config(migrate, Config)).

takeover(Migrate) ->
    %% each listener counts what it answers
    Counts = counters:new(2, []),
    Handler = fun(I) -> fun(_) ->
                                timer:sleep(1),
                                counters:add(Counts, I, 1),
                                falco_resp:text(200, <<"ok">>)
                        end
              end,
    {_, Port} = falco_test_listener:start(zd_a, Handler(1), #{reuseport => true}),
    %% without the option the port is taken
    {error, {eaddrinuse, _}} =
        falco:start_listener(zd_x, #{port => Port, ip => {127, 0, 0, 1}, handler => Handler(2)}),
    {_, Port} = falco_test_listener:start(zd_b, Handler(2), #{port => Port, reuseport => true}),
    Self = self(),
    Stop = atomics:new(1, []),
    Clients = [spawn_link(fun() -> Self ! {done, self(), client(Port, Stop, 0, [])} end)
               || _ <- lists:seq(1, 4)],
    timer:sleep(500),
    T0 = erlang:monotonic_time(millisecond),
    {ok, Drained} = falco:drain(zd_a, 5000),
    DrainMs = erlang:monotonic_time(millisecond) - T0,
    ByA = counters:get(Counts, 1),
    {error, not_found} = falco:port(zd_a),
    timer:sleep(1000),
    ok = atomics:put(Stop, 1, 1),
    Results = [receive {done, C, R} -> R after 10000 -> ct:fail(client_stuck) end || C <- Clients],
    ok = falco_test_listener:stop(zd_b),
    Served = lists:sum([N || {N, _} <- Results]),
    Failed = lists:append([F || {_, F} <- Results]),
    ct:pal("take-over (tcp_migrate_req ~p): ~b requests (A ~b, B ~b), ~b failed ~p; "
           "drain of A took ~b ms: ~p",
           [Migrate, Served, ByA, counters:get(Counts, 2), length(Failed), lists:sublist(Failed, 3),
            DrainMs, Drained]),
    case Migrate of
        true ->
            ?assertEqual([], Failed);
        false ->
            %% only connections reset in A's accept queue
            ?assertEqual([], [F || F <- Failed, not reset(F)]),
            ct:comment("net.ipv4.tcp_migrate_req is 0: ~b connection(s) reset", [length(Failed)])
    end,
    ?assertEqual(Served, counters:get(Counts, 1) + counters:get(Counts, 2)),
    %% both served (the kernel spread the connections), A none after its drain
    ?assert(ByA > 0),
    ?assertEqual(ByA, counters:get(Counts, 1)),
    ?assert(counters:get(Counts, 2) > ByA div 4).

reset({'EXIT', {{badmatch, {error, econnreset}}, _}}) -> true;
reset({_, {error, closed}}) -> true;
reset({_, {error, econnreset}}) -> true;
reset(_) -> false.

%% A client: a new connection per request until told to stop; the count
%% answered 200, and what went wrong otherwise.
client(Port, Stop, N, Failed) ->
    case atomics:get(Stop, 1) of
        1 -> {N, Failed};
        0 ->
            case catch falco_test_client:request(Port, <<"GET / HTTP/1.1\r\nhost: x\r\n\r\n">>) of
                {S, {ok, #{status := 200}}} ->
                    falco_test_client:close(S),
                    client(Port, Stop, N + 1, Failed);
                Other ->
                    client(Port, Stop, N, [Other | Failed])
            end
    end.
