%% bench_ws: the WebSocket scenarios' side of the driver. Runs the load
%% generator bench/wsload (Go, standard library only, so falco's WebSocket
%% code is not used to measure itself; bench/run builds it into
%% _build/bench/tools) pinned to the load core with GOMAXPROCS=1, and reads
%% the JSON object it prints last:
%%
%%   check/3  one connection, a 64-byte text and one scenario message
%%            must come back equal (the parity check of ws scenarios);
%%   run/4    the closed-loop echo for ws_echo and ws_large, as a map with
%%            the keys of a wrk result (requests = messages) plus bytes;
%%   idle/5   ws_idle, idle_h1, idle_h2, idle_tls (the one place that
%%            measures idle connections): the server's memory (forced GC,
%%            then erlang:memory total and VmRSS) before and after N idle
%%            connections are open and settled, per connection, and the
%%            total once more as the connections left it, read before that
%%            forced GC; then every connection must still echo (WebSocket)
%%            or answer one more GET (HTTP/1.1 keep-alive, over TLS for
%%            idle_tls, h2c: the scenario's `proto').
-module(bench_ws).

-export([tool/0, check/3, run/4, idle/5, idle_conns/1]).

%% How long the server settles after the idle connections are open, before
%% its memory is read (its sessions hibernate from their first callback).
-define(SETTLE_MS, 2000).
%% Seconds any single wait of the generator may take.
-define(WAIT_S, "10").
%% File descriptors kept free for everything but the idle connections.
-define(FD_SPARE, 200).

%% @doc The generator's path (BENCH_WSLOAD, set by bench/run after `go
%% build'), or `undefined' when it was not built (go is missing).
-spec tool() -> file:filename() | undefined.
tool() ->
    case os:getenv("BENCH_WSLOAD", "") of
        "" -> undefined;
        P -> case filelib:is_regular(P) of
                 true -> P;
                 false -> undefined
             end
    end.

%% @doc How many idle connections ws_idle can open: the scenario's count,
%% or fewer when the file descriptor limit (the server's and the
%% generator's, inherited from this BEAM) would not hold them.
-spec idle_conns(pos_integer()) -> pos_integer().
idle_conns(Wanted) ->
    case string:to_integer(string:trim(os:cmd("ulimit -n"))) of
        {Limit, _} when is_integer(Limit) -> max(1, min(Wanted, Limit - ?FD_SPARE));
        _ -> Wanted
    end.

%% @doc The parity check of a WebSocket scenario.
-spec check(map(), inet:port_number(), map()) -> ok | {error, string()}.
check(Sc, Port, Ctx) ->
    Args = args(Sc, Port, check, 1) ++ ["-duration", "0"],
    case exec(Args, 60000, Ctx) of
        {ok, _, _} -> ok;
        {error, Why} -> {error, Why}
    end.

%% @doc One closed-loop echo run of Seconds with Clients connections.
-spec run(map(), inet:port_number(), map(), map()) -> {ok, map()} | {error, string()}.
run(Sc, Port, #{seconds := Secs, clients := Clients}, Ctx) ->
    Args = args(Sc, Port, echo, Clients) ++ ["-duration", integer_to_list(Secs)],
    case exec(Args, (Secs + 90) * 1000, Ctx) of
        {ok, R, Ticks} ->
            Lat = [P || K <- [<<"p50">>, <<"p90">>, <<"p99">>, <<"p999">>, <<"max">>],
                        P <- [maps:get(K, R)]],
            [P50, P90, P99, P999, Max] = Lat,
            {ok, #{requests => maps:get(<<"messages">>, R),
                   duration_us => maps:get(<<"duration_us">>, R),
                   bytes => maps:get(<<"bytes">>, R),
                   p50 => P50, p90 => P90, p99 => P99, p999 => P999, max => Max,
                   status => 0, connect => 0, write => 0, timeout => 0,
                   %% Connections that broke during the run, or whose close
                   %% handshake did not complete.
                   read => maps:get(<<"errors">>, R) + maps:get(<<"close_errors">>, R),
                   load_ticks => Ticks}};
        {error, Why} ->
            {error, Why}
    end.

%% @doc ws_idle on a running server (handle H): memory before, N idle
%% connections opened, settled, forced GC, memory after; the generator
%% then checks every connection with one echo. Returns the cell's map.
-spec idle(map(), map(), inet:port_number(), pos_integer(), map()) -> map().
idle(Sc, H = #{os_pid := Pid}, Port, N, Ctx) ->
    Before = settled(H, Pid, 500),
    Ticks0 = bench_proc:cpu_ticks(Pid),
    Args = pinned(args(Sc, Port, idle, N) ++ ["-hold", "300", "-parallel", "64"], Ctx),
    P = open_port({spawn_executable, hd(Args)},
                  [{args, tl(Args)}, {line, 65536}, binary, exit_status, stderr_to_stdout,
                   use_stdio]),
    try await_open(P, 300000) of
        {ok, Open} ->
            Ticks1 = bench_proc:cpu_ticks(Pid),
            After = settled(H, Pid, ?SETTLE_MS),
            true = port_command(P, "done\n"),
            case finish(P, 300000) of
                {ok, R} ->
                    Opened = maps:get(<<"opened">>, Open),
                    OpenUs = maps:get(<<"open_us">>, Open),
                    #{status => ok, clients => N, idle_conns => Opened,
                      alive => maps:get(<<"alive">>, R),
                      idle_beam_b => (maps:get(beam, After) - maps:get(beam, Before)) / Opened,
                      idle_nogc_b => (maps:get(beam_nogc, After) - maps:get(beam, Before)) / Opened,
                      idle_rss_b => (maps:get(rss_kb, After) - maps:get(rss_kb, Before)) * 1024 / Opened,
                      beam_total => maps:get(beam, After), peak_rss_kb => maps:get(rss_kb, After),
                      open_s => OpenUs / 1.0e6,
                      cpu_us => (Ticks1 - Ticks0) / maps:get(clk_tck, Ctx) * 1.0e6 / Opened};
                {error, Why} ->
                    #{status => {error, Why}}
            end;
        {error, Why} ->
            #{status => {error, Why}}
    after
        stop(P)
    end.

%% The generator ends by itself; one still running after a deadline here
%% (its port still open) is killed.
stop(P) ->
    case erlang:port_info(P, os_pid) of
        {os_pid, OsPid} ->
            catch port_close(P),
            _ = os:cmd("kill -9 " ++ integer_to_list(OsPid) ++ " 2>/dev/null"),
            ok;
        undefined ->
            ok
    end.

%% The server's memory after a forced GC of every process and a wait;
%% beam_nogc: its total before that GC, what the processes kept by
%% themselves (hibernated or not).
settled(H, Pid, WaitMs) ->
    timer:sleep(WaitMs),
    NoGc = beam_total(H),
    {ok, <<"ok">>} = bench_servers:command(H, "gc"),
    timer:sleep(200),
    #{beam => beam_total(H), beam_nogc => NoGc, rss_kb => bench_proc:rss_kb(Pid)}.

beam_total(H) ->
    {ok, <<"stats ", Rest/binary>>} = bench_servers:command(H, "stats"),
    [<<"total=", Total/binary>> | _] = string:lexemes(Rest, " "),
    binary_to_integer(Total).

await_open(P, Timeout) ->
    receive
        {P, {data, {eol, Line}}} ->
            case decode(Line) of
                #{<<"event">> := <<"open">>} = M -> {ok, M};
                #{<<"ok">> := false} = M -> {error, failure(M)};
                _ -> await_open(P, Timeout)
            end;
        {P, {data, {noeol, _}}} -> await_open(P, Timeout);
        {P, {exit_status, S}} -> {error, io_lib:format("wsload exited (~b) before opening", [S])}
    after Timeout ->
        {error, "wsload: the idle connections did not open in time"}
    end.

finish(P, Timeout) ->
    receive
        {P, {data, {eol, Line}}} ->
            case decode(Line) of
                #{<<"ok">> := true} = M -> finish_exit(P, M, Timeout);
                #{<<"ok">> := false} = M -> {error, failure(M)};
                _ -> finish(P, Timeout)
            end;
        {P, {data, {noeol, _}}} -> finish(P, Timeout);
        {P, {exit_status, S}} -> {error, io_lib:format("wsload exited (~b) without a result", [S])}
    after Timeout ->
        {error, "wsload: no result in time"}
    end.

finish_exit(P, M, Timeout) ->
    receive
        {P, {exit_status, 0}} -> {ok, M};
        {P, {exit_status, S}} -> {error, io_lib:format("wsload exited with ~b", [S])};
        {P, _} -> finish_exit(P, M, Timeout)
    after Timeout ->
        {error, "wsload did not exit"}
    end.

args(#{path := Path, ws := Ws = #{size := Size, kind := Kind}}, Port, Mode, Conns) ->
    [tool(), "-addr", "127.0.0.1:" ++ integer_to_list(Port), "-path", Path,
            "-proto", atom_to_list(maps:get(proto, Ws, ws)),
            "-mode", atom_to_list(Mode), "-conns", integer_to_list(Conns),
            "-size", integer_to_list(Size), "-kind", atom_to_list(Kind), "-timeout", ?WAIT_S].

%% The command line that runs the generator on the load core, with
%% GOMAXPROCS=1 (one OS thread runs Go code, as wrk runs one thread).
pinned(Args, Ctx) ->
    maps:get(load_pin, Ctx) ++ [os:find_executable("env"), "GOMAXPROCS=1" | Args].

%% Runs the generator; its JSON result, or why not.
exec(Args, TimeoutMs, Ctx) ->
    case bench_proc:exec_cpu(pinned(Args, Ctx), TimeoutMs) of
        {Status, Out, Ticks} ->
            case last_json(Out) of
                #{<<"ok">> := true} = R when Status =:= 0 -> {ok, R, Ticks};
                #{<<"ok">> := false} = R -> {error, failure(R)};
                _ -> {error, lists:flatten(io_lib:format("wsload (exit ~p): ~s",
                                                        [Status, lists:sublist(Out, 400)]))}
            end
    end.

failure(R) ->
    lists:flatten(["wsload: ", binary_to_list(maps:get(<<"error">>, R, <<"failed">>))]).

last_json(Out) ->
    Lines = [L || L <- string:split(Out, "\n", all), string:prefix(string:trim(L), "{") =/= nomatch],
    case Lines of
        [] -> undefined;
        _ -> decode(unicode:characters_to_binary(lists:last(Lines)))
    end.

decode(Line) ->
    try bench_json:decode(string:trim(Line)) of
        M when is_map(M) -> M;
        _ -> undefined
    catch _:_ -> undefined
    end.
