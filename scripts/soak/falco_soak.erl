%% `make soak': mixed load against a falco listener for SOAK_MINUTES
%% (default 30), then a check that the server holds no more than it did
%% before the load.
%%
%% The server runs on a peer node of its own (started with the `peer'
%% module over stdio, no distribution), so its figures are the server's
%% alone: a listener on 127.0.0.1, port 0, with this module as handler and
%% falco's default options. The load runs here, from a fixed number of
%% client processes (so connections and rates stay bounded), each repeating
%% one kind of cycle with a short random pause, every cycle in a fresh
%% process with a 60 s limit:
%%
%%   keepalive  x4  50 requests on one connection (small, 64 KB, streamed
%%                  and 4 KB upload responses)
%%   pipelined  x2  5 batches of 10 requests written at once, then read
%%   upload     x2  1 MB Content-Length and 256 KB chunked uploads read by
%%                  the handler, a 64 KB body it ignores
%%   h2         x3  h2c (prior knowledge): 10 rounds of 8 concurrent streams
%%                  and a 100 KB upload
%%   slow_head  x2  a head trickled one field a second  } for at most 15 s
%%   silent     x1  a connection that sends nothing     } or until the
%%   slow_body  x1  a body trickled one byte a second   } server closes
%%   abrupt     x2  a close or an RST in the middle of a head, of a body or
%%                  of a response; an h2 connection dropped with streams open
%%
%% Phases: SOAK_WARMUP_SECONDS (default 20) of the same load, so every code
%% path is loaded and every pool has its size; the load stops, every
%% connection ends, every server process is garbage collected: the START
%% sample. The load runs SOAK_MINUTES, sampled five times on the way; it
%% stops, connections end, garbage collection: the END sample. Each sample
%% is erlang:memory() total, processes and binary, the process and port
%% counts, the open file descriptors (/proc/self/fd) and the open
%% connections. Exit status 1 if END exceeds START by more than the noise
%% bounds below, if a well-behaved request failed more than once in a
%% thousand, or if the connections did not all end.
-module(falco_soak).

-export([main/0]).
%% run on the server node
-export([server_start/0, server_sample/0, server_log/0, handle/2, log/2]).

-define(CLIENTS, [{keepalive, 4}, {pipelined, 2}, {upload, 2}, {h2, 3}, {slow_head, 2},
                  {silent, 1}, {slow_body, 1}, {abrupt, 2}]).
-define(GOOD, [keepalive, pipelined, upload, h2]).
-define(CYCLE_LIMIT, 60000).
-define(TIMEOUT, 10000).
-define(C, falco_test_client).
-define(H2, falco_test_h2_client).

%% Growth from START to END taken as noise: absolute bytes or counts.
-define(BOUNDS, [{total, 8 * 1024 * 1024}, {processes, 4 * 1024 * 1024},
                 {binary, 4 * 1024 * 1024}, {process_count, 5}, {port_count, 2}, {fds, 2},
                 {connections, 0}]).

%% -- the driver ---------------------------------------------------------------

main() ->
    Minutes = env_number("SOAK_MINUTES", 30),
    Warmup = env_number("SOAK_WARMUP_SECONDS", 20),
    Paths = [filename:absname(filename:dirname(code:which(M))) || M <- [falco, ?MODULE]],
    {ok, Peer, _} = peer:start_link(#{connection => standard_io,
                                      args => lists:append([["-pa", P] || P <- Paths])}),
    Status = try run(Peer, Minutes, Warmup)
             catch Class:Reason:Stack ->
                     io:format("soak: ~p:~p~n~p~n", [Class, Reason, Stack]),
                     1
             after
                 catch peer:stop(Peer)
             end,
    halt(Status).

run(Peer, Minutes, Warmup) ->
    Port = peer:call(Peer, ?MODULE, server_start, []),
    io:format("soak: falco on 127.0.0.1:~b (peer node), ~p min of load after ~p s of warm-up~n",
              [Port, Minutes, Warmup]),
    _ = load(Peer, Port, Warmup * 1000, []),
    Start = settle(Peer),
    print("start", Start),
    Duration = round(Minutes * 60000),
    Counts = load(Peer, Port, Duration, [Duration * I div 6 || I <- lists:seq(1, 5)]),
    End = settle(Peer),
    print("end", End),
    print_counts(Counts),
    {Errors, Warnings} = peer:call(Peer, ?MODULE, server_log, [], 30000),
    io:format("soak: server log: ~p~n", [Errors]),
    [io:format("  ~ts~n", [W]) || W <- Warnings],
    verdict(Start, End, Counts).

%% Runs the clients for Ms milliseconds, printing a sample at each of the
%% given times (ms from the start). Returns the counts of every kind.
load(Peer, Port, Ms, SampleAt) ->
    Tab = ets:new(soak_counts, [public, set, {write_concurrency, true}]),
    T0 = now_ms(),
    Deadline = T0 + Ms,
    Workers = [spawn_monitor(fun() -> worker(Kind, Port, Deadline, Tab) end)
               || {Kind, N} <- ?CLIENTS, _ <- lists:seq(1, N)],
    ok = sample_during(Peer, T0, SampleAt),
    %% A worker ends after its current cycle (at most CYCLE_LIMIT).
    [receive {'DOWN', Ref, process, Pid, _} -> ok
     after max(0, Deadline - now_ms()) + ?CYCLE_LIMIT + 5000 -> exit(Pid, kill)
     end || {Pid, Ref} <- Workers],
    Counts = lists:sort(ets:tab2list(Tab)),
    ets:delete(Tab),
    Counts.

sample_during(_Peer, _T0, []) ->
    ok;
sample_during(Peer, T0, [At | More]) ->
    timer:sleep(max(0, T0 + At - now_ms())),
    print(io_lib:format("~bs", [At div 1000]), peer:call(Peer, ?MODULE, server_sample, [], 60000)),
    sample_during(Peer, T0, More).

%% Waits until the server has no connection left, then samples it after
%% garbage collecting every process.
settle(Peer) ->
    Wait = fun Loop(N) ->
                   case peer:call(Peer, falco, connections, [soak]) of
                       {ok, 0} -> ok;
                       {ok, _} when N > 0 -> timer:sleep(500), Loop(N - 1);
                       {ok, C} -> io:format("soak: ~b connections still open~n", [C])
                   end
           end,
    ok = Wait(120),
    timer:sleep(1000),
    peer:call(Peer, ?MODULE, server_sample, [], 60000).

verdict(Start, End, Counts) ->
    Growth = [{K, maps:get(K, End) - maps:get(K, Start), Bound} || {K, Bound} <- ?BOUNDS],
    [io:format("soak: growth ~-13s ~10s  (noise bound ~s) ~s~n",
               [K, amount(K, G), amount(K, B), case G > B of true -> "EXCEEDED"; false -> "ok" end])
     || {K, G, B} <- Growth],
    Good = [{K, ok_count(K, Counts), err_count(K, Counts)} || K <- ?GOOD],
    Failing = [G || {_, Ok, Err} = G <- Good, Err * 1000 > Ok + Err orelse Ok =:= 0],
    [io:format("soak: FAILURES ~p: ~b ok, ~b failed~n", [K, Ok, Err]) || {K, Ok, Err} <- Failing],
    case [K || {K, G, B} <- Growth, G > B] =:= [] andalso Failing =:= [] of
        true -> io:format("soak: passed~n"), 0;
        false -> io:format("soak: FAILED~n"), 1
    end.

amount(K, N) when K =:= total; K =:= processes; K =:= binary ->
    [sign(N), io_lib:format("~.2f MB", [abs(N) / 1048576])];
amount(_, N) ->
    [sign(N), integer_to_list(abs(N))].

sign(N) when N < 0 -> "-";
sign(_) -> "+".

ok_count(K, Counts) -> proplists:get_value({K, ok}, Counts, 0).
err_count(K, Counts) -> proplists:get_value({K, error}, Counts, 0).

print(Label, S) ->
    io:format("soak: ~-6s total ~7.1f MB  processes ~6.1f MB  binary ~6.1f MB  "
              "procs ~5b  ports ~4b  fds ~4b  conns ~4b~n",
              [Label, mb(maps:get(total, S)), mb(maps:get(processes, S)), mb(maps:get(binary, S)),
               maps:get(process_count, S), maps:get(port_count, S), maps:get(fds, S),
               maps:get(connections, S)]).

print_counts(Counts) ->
    Kinds = lists:usort([K || {{K, _}, _} <- Counts]),
    [begin
         Closed = proplists:get_value({K, closed}, Counts, 0),
         io:format("soak: ~-10s cycles ~6b  requests ok ~7b  failed ~5b  server closed ~5b~s~n",
                   [K, proplists:get_value({K, cycles}, Counts, 0), ok_count(K, Counts),
                    err_count(K, Counts), Closed,
                    case Closed of
                        0 -> "";
                        _ -> io_lib:format(" (after ~.1f s on average)",
                                           [proplists:get_value({K, closed_ms}, Counts, 0)
                                            / Closed / 1000])
                    end])
     end || K <- Kinds],
    [io:format("soak:   first failure of ~p: ~ts~n", [K, R]) || {{K, first_error}, R} <- Counts],
    ok.

mb(Bytes) -> Bytes / 1048576.

env_number(Name, Default) ->
    case os:getenv(Name) of
        false -> Default;
        "" -> Default;
        S ->
            try list_to_integer(S) catch error:badarg -> list_to_float(S) end
    end.

now_ms() -> erlang:monotonic_time(millisecond).

%% -- the clients ---------------------------------------------------------------

worker(Kind, Port, Deadline, Tab) ->
    case now_ms() < Deadline of
        true ->
            {Pid, Ref} = spawn_monitor(fun() -> exit({cycle, cycle(Kind, Port, Deadline)}) end),
            Result = receive {'DOWN', Ref, process, Pid, R} -> R
                     after ?CYCLE_LIMIT -> exit(Pid, kill), {cycle_timeout, Kind}
                     end,
            count(Tab, Kind, cycles, 1),
            case Result of
                {cycle, #{ok := Ok, closed := Closed} = Cycle} ->
                    count(Tab, Kind, ok, Ok),
                    count(Tab, Kind, closed, Closed),
                    count(Tab, Kind, closed_ms, maps:get(closed_ms, Cycle, 0));
                Other ->
                    count(Tab, Kind, error, 1),
                    ets:insert_new(Tab, {{Kind, first_error},
                                         lists:flatten(io_lib:format("~0P", [Other, 30]))})
            end,
            timer:sleep(rand:uniform(20)),
            worker(Kind, Port, Deadline, Tab);
        false ->
            ok
    end.

count(Tab, Kind, What, N) ->
    ets:update_counter(Tab, {Kind, What}, N, {{Kind, What}, 0}).

%% One cycle: #{ok => requests answered as expected, closed => connections
%% the server ended}. Anything unexpected raises (a failed cycle).
cycle(keepalive, Port, _) ->
    S = ?C:connect(Port),
    lists:foreach(fun(_) ->
                          {Req, Check} = good_request(),
                          ok = ?C:send(S, Req),
                          expect(recv(S), Check)
                  end, lists:seq(1, 50)),
    ?C:close(S),
    #{ok => 50, closed => 0};
cycle(pipelined, Port, _) ->
    S = ?C:connect(Port),
    lists:foreach(fun(_) ->
                          Batch = [good_request() || _ <- lists:seq(1, 10)],
                          ok = ?C:send(S, [Req || {Req, _} <- Batch]),
                          [expect(recv(S), Check) || {_, Check} <- Batch]
                  end, lists:seq(1, 5)),
    ?C:close(S),
    #{ok => 50, closed => 0};
cycle(upload, Port, _) ->
    S = ?C:connect(Port),
    Big = rand:bytes(1048576),
    ok = ?C:send(S, [post(<<"/upload">>, Big)]),
    expect(recv(S), {200, <<"1048576">>}),
    Chunks = [rand:bytes(16384) || _ <- lists:seq(1, 16)],
    ok = ?C:send(S, ["POST /upload HTTP/1.1\r\nhost: soak\r\ntransfer-encoding: chunked\r\n\r\n",
                     [falco_http1_chunked:encode(C) || C <- Chunks], falco_http1_chunked:last([])]),
    expect(recv(S), {200, <<"262144">>}),
    ok = ?C:send(S, post(<<"/ignore">>, rand:bytes(65536))),
    expect(recv(S), {200, <<"ignored">>}),
    ?C:close(S),
    #{ok => 3, closed => 0};
cycle(h2, Port, _) ->
    C0 = ?H2:connect(Port, #{}),
    C = lists:foldl(fun(_, Ca) ->
                            {Ids, Cb} = lists:mapfoldl(
                                          fun(Path, Cx) -> ?H2:request(Cx, <<"GET">>, Path) end,
                                          Ca, [<<"/hello">>, <<"/big">>, <<"/stream">>, <<"/hello">>,
                                               <<"/big">>, <<"/stream">>, <<"/hello">>, <<"/hello">>]),
                            Cc = lists:foldl(fun(Id, Cy) ->
                                                     {ok, #{status := 200}, Cz} = ?H2:response(Cy, Id, ?TIMEOUT),
                                                     Cz
                                             end, Cb, Ids),
                            {Id, Cd} = ?H2:request(Cc, <<"POST">>, <<"/upload">>, [],
                                                   rand:bytes(102400)),
                            {ok, #{status := 200, body := <<"102400">>}, Ce} =
                                ?H2:response(Cd, Id, ?TIMEOUT),
                            Ce
                    end, C0, lists:seq(1, 10)),
    ?H2:close(C),
    #{ok => 90, closed => 0};
cycle(slow_head, Port, Deadline) ->
    slow(Port, Deadline, "GET /hello HTTP/1.1\r\nhost: soak\r\n",
         fun(I) -> io_lib:format("x-slow-~b: ~b\r\n", [I, I]) end);
cycle(silent, Port, Deadline) ->
    slow(Port, Deadline, [], fun(_) -> [] end);
cycle(slow_body, Port, Deadline) ->
    slow(Port, Deadline, "POST /upload HTTP/1.1\r\nhost: soak\r\ncontent-length: 1000\r\n\r\n",
         fun(_) -> "x" end);
cycle(abrupt, Port, _) ->
    case rand:uniform(5) of
        1 ->
            S = ?C:connect(Port),
            ok = ?C:send(S, "GET /hello HTTP/1.1\r\nhost: so"),
            ?C:close(S);
        2 ->
            S = ?C:connect(Port),
            ok = ?C:send(S, ["POST /upload HTTP/1.1\r\nhost: soak\r\ncontent-length: 100000\r\n\r\n",
                             rand:bytes(30000)]),
            rst(S);
        3 ->
            S = ?C:connect(Port),
            ok = ?C:send(S, "GET /big HTTP/1.1\r\nhost: soak\r\n\r\nGET /stream HTTP/1.1\r\nhost: soak\r\n\r\n"),
            timer:sleep(rand:uniform(5)),
            rst(S);
        4 ->
            S = ?C:connect(Port),
            ok = ?C:send(S, "GET /slow HTTP/1.1\r\nhost: soak\r\n\r\n"),
            ok = gen_tcp:shutdown(S, write),
            ?C:close(S);
        5 ->
            C0 = ?H2:connect(Port, #{}),
            {_, C1} = ?H2:request(C0, <<"GET">>, <<"/big">>),
            C2 = ?H2:headers_frame(C1, 3, [{<<":method">>, <<"POST">>}, {<<":scheme">>, <<"http">>},
                                            {<<":path">>, <<"/upload">>},
                                            {<<":authority">>, <<"soak">>}], nofin),
            C3 = ?H2:send_frame(C2, falco_http2_frame:data(3, nofin, rand:bytes(1000))),
            rst(maps:get(sock, C3))
    end,
    #{ok => 0, closed => 0}.

%% Sends First, then More(I) every second for 15 s (less if the load ends
%% sooner) or until the server closes: closed => 1 if it did, and when.
slow(Port, Deadline, First, More) ->
    T0 = now_ms(),
    S = ?C:connect(Port),
    ok = ?C:send(S, First),
    Closed = trickle(S, More, min(T0 + 15000, Deadline), 0),
    ?C:close(S),
    #{ok => 0, closed => Closed, closed_ms => Closed * (now_ms() - T0)}.

%% Sends More(I) every second until Until or until the server closes
%% (then 1: the server ended the connection).
trickle(S, More, Until, I) ->
    case now_ms() >= Until of
        true -> 0;
        false ->
            case gen_tcp:recv(S, 0, 1000) of
                {error, timeout} ->
                    case ?C:try_send(S, More(I)) of
                        ok -> trickle(S, More, Until, I + 1);
                        {error, _} -> 1
                    end;
                {error, _} -> 1;
                {ok, _Answer} -> trickle(S, More, Until, I)
            end
    end.

rst(S) ->
    ok = inet:setopts(S, [{linger, {true, 0}}]),
    ?C:close(S).

good_request() ->
    case rand:uniform(4) of
        1 -> {"GET /hello HTTP/1.1\r\nhost: soak\r\n\r\n", {200, <<"hello">>}};
        2 -> {"GET /big HTTP/1.1\r\nhost: soak\r\n\r\n", {200, 65536}};
        3 -> {"GET /stream HTTP/1.1\r\nhost: soak\r\n\r\n", {200, 32768}};
        4 -> {post(<<"/upload">>, rand:bytes(4096)), {200, <<"4096">>}}
    end.

post(Path, Body) ->
    ["POST ", Path, " HTTP/1.1\r\nhost: soak\r\ncontent-length: ", integer_to_list(byte_size(Body)),
     "\r\n\r\n", Body].

recv(S) ->
    {ok, Resp} = ?C:recv_response(S, #{timeout => ?TIMEOUT}),
    Resp.

expect(#{status := Status, body := Body}, {Status, Size}) when byte_size(Body) =:= Size -> ok;
expect(#{status := Status, body := Body}, {Status, Body}) -> ok;
expect(Resp, Check) -> exit({unexpected, Check, maps:with([status, body], Resp)}).

%% -- the server node ---------------------------------------------------------

server_start() ->
    {ok, _} = application:ensure_all_started(falco),
    %% The peer's stdio is the control channel: the log goes to a counter.
    ok = logger:remove_handler(default),
    Log = spawn(fun() -> log_loop(#{}, []) end),
    true = register(soak_log, Log),
    ok = logger:add_handler(soak_log, ?MODULE, #{config => #{pid => Log}}),
    {ok, _} = falco:start_listener(soak, #{port => 0, ip => {127, 0, 0, 1}, handler => ?MODULE}),
    {ok, Port} = falco:port(soak),
    Port.

%% After a garbage collection of every process.
server_sample() ->
    _ = [erlang:garbage_collect(P) || P <- processes()],
    {ok, Fds} = file:list_dir("/proc/self/fd"),
    {ok, Conns} = falco:connections(soak),
    #{total => erlang:memory(total), processes => erlang:memory(processes),
      binary => erlang:memory(binary), process_count => erlang:system_info(process_count),
      port_count => erlang:system_info(port_count), fds => length(Fds), connections => Conns}.

server_log() ->
    soak_log ! {get, self()},
    receive {log, Counts, First} -> {Counts, lists:reverse(First)} after 10000 -> timeout end.

%% logger handler: counts events per level, keeps the first ten warnings
%% and errors (cut to 500 characters).
log(Event, #{config := #{pid := Pid}}) ->
    Pid ! {event, Event},
    ok.

log_loop(Counts, First) ->
    receive
        {event, #{level := Level} = E} ->
            Keep = case length(First) < 10 andalso logger:compare_levels(Level, warning) =/= lt of
                       true -> [string:slice(format(E), 0, 500) | First];
                       false -> First
                   end,
            log_loop(maps:update_with(Level, fun(N) -> N + 1 end, 1, Counts), Keep);
        {get, From} ->
            From ! {log, Counts, First},
            log_loop(Counts, First)
    end.

format(#{msg := {string, S}}) -> unicode:characters_to_list(S);
format(#{msg := {report, R}}) -> io_lib:format("~0P", [R, 20]);
format(#{msg := {F, A}}) -> io_lib:format(F, A).

%% -- the handler --------------------------------------------------------------

handle(Req, _) ->
    case {falco_req:method(Req), falco_req:path(Req)} of
        {<<"GET">>, <<"/hello">>} ->
            {200, [{<<"content-type">>, <<"text/plain">>}], <<"hello">>};
        {<<"GET">>, <<"/big">>} ->
            {200, [], binary:copy(<<"b">>, 65536)};
        {<<"GET">>, <<"/stream">>} ->
            {stream, 200, [], fun(Send) -> stream(Send, 8) end};
        {<<"GET">>, <<"/slow">>} ->
            timer:sleep(200),
            {200, [], <<"slow">>};
        {<<"POST">>, <<"/upload">>} ->
            {Size, _} = read_all(Req, 0),
            {200, [], integer_to_binary(Size)};
        {<<"POST">>, <<"/ignore">>} ->
            {200, [], <<"ignored">>};
        _ ->
            {404, [], <<>>}
    end.

stream(_Send, 0) ->
    ok;
stream(Send, N) ->
    case Send(binary:copy(<<"s">>, 4096)) of
        ok -> stream(Send, N - 1);
        {error, _} -> ok
    end.

read_all(Req, Size) ->
    case falco_req:read_body(Req, #{length => 65536}) of
        {more, Data, Req1} -> read_all(Req1, Size + byte_size(Data));
        {ok, Data, Req1} -> {Size + byte_size(Data), Req1}
    end.
