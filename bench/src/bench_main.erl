%% bench_main: the driver of bench/run. Parses the options, finds which
%% servers can run, then for each run, scenario and server (interleaved, so
%% slow drift hits every server alike): starts the server in its own BEAM
%% on the server core, checks parity, warms up, measures with wrk (h2load,
%% the in-tree generator for HEAD, bench/wsload for WebSocket: bench_ws) on
%% the load core while reading the server's CPU time and memory, stops it, and
%% prints a progress line. At the end it writes results.md and the charts.
%% Exit status: 0, or 1 when a server failed to start or a run failed.
-module(bench_main).

-export([main/1]).

-define(SERVER_CORE, 1).
-define(LOAD_CORE, 0).
-define(NO_GO, "the WebSocket load generator (bench/wsload) was not built: go is not "
        "installed (scripts/bootstrap installs it) or its build failed (bench/run printed why)").

-spec main([string()]) -> no_return().
main(Args) ->
    ok = io:setopts(standard_io, [{encoding, unicode}]),
    case bench_opts:parse(Args) of
        help -> io:put_chars(bench_opts:usage()), halt(0);
        {error, Msg} -> io:format(standard_error, "bench: ~s~n~s", [Msg, bench_opts:usage()]), halt(2);
        {ok, Opts} -> halt(run(Opts#{argv => Args}))
    end.

run(Opts = #{protocol := h3}) ->
    %% falco's HTTP/3 against its HTTP/2 over TLS: a matrix of its own.
    bench_h3:run(Opts, context(Opts));
run(Opts) ->
    Ctx0 = context(Opts),
    case scenarios(Opts) of
        {error, Msg} ->
            io:format(standard_error, "bench: ~s~n", [Msg]),
            2;
        Scenarios ->
            %% The TLS scenarios' test certificate, made once (bench_tls).
            _ = [ok = bench_tls:ensure(maps:get(tls_dir, Ctx0)) || lists:any(fun tls/1, Scenarios)],
            {Servers, Skipped, Ctx} = resolve(maps:get(servers, Opts), Ctx0),
            [io:format("bench: skipping ~s: ~s~n", [S, Why]) || {S, Why} <- Skipped],
            NoWsload = lists:any(fun(#{name := N}) -> bench_scenarios:ws(N) end, Scenarios)
                andalso maps:get(wsload, Ctx) =:= undefined,
            [io:format("bench: ~s; the WebSocket scenarios will show a dash~n", [?NO_GO])
             || NoWsload, not map_get(strict, Ctx)],
            [io:format("bench: ~s has no cleartext HTTP/2: its cells will show a dash~n", [S])
             || maps:get(protocol, Opts) =:= h2, S <- Servers,
                not bench_servers:h2_capable(S, Ctx)],
            case {Servers, maps:get(profile, Opts)} of
                {[], _} ->
                    io:format(standard_error, "bench: no server can run~n", []),
                    1;
                {_, _} when NoWsload, map_get(strict, Ctx) ->
                    io:format(standard_error, "bench: failing (--strict/--smoke): ~s~n", [?NO_GO]),
                    1;
                {_, true} ->
                    bench_profile:run(Scenarios, Ctx);
                {_, false} ->
                    matrix(Servers, Skipped, Scenarios, Ctx)
            end
    end.

tls(Sc) -> maps:get(tls, Sc, false).

scenarios(#{scenarios := [list], protocol := P}) ->
    [io:format("~-20s ~s~n", [N, maps:get(what, bench_scenarios:find(N))])
     || N <- bench_scenarios:names(P)],
    halt(0);
scenarios(#{scenarios := default, protocol := P}) ->
    bench_scenarios:all(P);
scenarios(#{scenarios := Names}) ->
    case [N || N <- Names, bench_scenarios:find(N) =:= undefined] of
        [] -> [bench_scenarios:find(N) || N <- Names];
        Bad -> {error, io_lib:format("unknown scenario(s): ~p (see --scenarios list)", [Bad])}
    end.

context(Opts) ->
    Root = filename:absname(os:getenv("BENCH_ROOT", ".")),
    Work = filename:join(Root, "_build/bench"),
    Flags = case maps:get(erl_flags, Opts) of
                default -> bench_servers:default_erl_flags();
                F -> F
            end,
    Out = filename:absname(maps:get(out, Opts), Root),
    Opts#{root => Root, work => Work, out => Out,
          bench_dir => filename:join(Root, "bench"),
          bench_ebin => filename:join(Work, "ebin"),
          falco_ebin => case os:getenv("BENCH_FALCO_EBIN", "") of
                            %% bench/run sets it (a fresh build of the
                            %% working tree); this is for a driver started
                            %% some other way
                            "" -> filename:join(Work, "falco/ebin");
                            E -> filename:absname(E)
                        end,
          tls_dir => filename:join(Work, "tls"),
          wsload => bench_ws:tool(),
          erl_flags => Flags, pin => bench_proc:pin(?SERVER_CORE),
          load_pin => bench_proc:pin(?LOAD_CORE), clk_tck => bench_proc:clk_tck()}.

resolve(Servers, Ctx) ->
    {Ok, Skipped, Paths, Versions} =
        lists:foldl(fun(S, {Ok, Sk, P, V}) ->
                            case bench_servers:available(S, Ctx) of
                                {ok, Vsn, Dirs} -> {[S | Ok], Sk, P#{S => Dirs}, V#{S => Vsn}};
                                {skip, Why} -> {Ok, [{S, lists:flatten(Why)} | Sk], P, V}
                            end
                    end, {[], [], #{}, #{}}, Servers),
    {lists:reverse(Ok), lists:reverse(Skipped), Ctx#{paths => Paths, versions => Versions}}.

matrix(Servers, Skipped, Scenarios, Ctx = #{runs := Runs}) ->
    Cells = [{R, Sc, Sv} || R <- lists:seq(1, Runs), Sc <- Scenarios, Sv <- Servers],
    Total = length(Cells),
    io:format("bench: ~b runs x ~b scenarios x ~b servers (~s), ~bs warm-up + ~bs each~n",
              [Runs, length(Scenarios), length(Servers),
               lists:join(",", [atom_to_list(S) || S <- Servers]),
               maps:get(warmup, Ctx), maps:get(duration, Ctx)]),
    T0 = erlang:monotonic_time(second),
    Before = host_speed("before", Ctx),
    {Results, _} = lists:mapfoldl(
                     fun({R, Sc, Sv}, I) ->
                             Res = cell(R, Sc, Sv, Ctx),
                             progress(I, Total, Res, T0),
                             {Res, I + 1}
                     end, 1, Cells),
    After = host_speed("after", Ctx),
    Report0 = #{servers => Servers, skipped => Skipped, scenarios => Scenarios,
                results => Results, ctx => Ctx, machine => bench_proc:machine(),
                host => #{first => Before, last => After},
                loadgen => case maps:get(protocol, Ctx) of
                               h1 -> bench_wrk:version();
                               h2 -> bench_h2load:version()
                           end},
    Report1 = case maps:get(open_loop, Ctx) of
                  true -> Report0#{open_loop => bench_openloop:run(Report0, Ctx)};
                  false -> Report0
              end,
    Report = case maps:get(survey, Ctx) of
                 true -> Report1#{survey => bench_survey:run(Report0, Ctx)};
                 false -> Report1
             end,
    Files = bench_report:write(Report),
    [io:format("bench: wrote ~s~n", [F]) || F <- Files],
    Failed = [R || R = #{status := {error, _}} <- Results],
    case Failed of
        [] when Skipped =/= [] andalso map_get(strict, Ctx) ->
            io:format("bench: failing (--strict/--smoke): ~b server(s) could not run~n",
                      [length(Skipped)]),
            1;
        [] -> 0;
        _ ->
            io:format("bench: ~b of ~b runs failed:~n", [length(Failed), Total]),
            [io:format("  ~s ~s run ~b: ~s~n", [Sv, Sc, R, Why])
             || #{server := Sv, scenario := Sc, run := R, status := {error, Why}} <- Failed],
            1
    end.

%% The host's speed, before the matrix and after it: the runtime's floor
%% (bench_floor) under the run's own hello load, one run each way (a
%% disturbed one repeated as a cell's would be). The same machine runs a
%% floor at very different speeds from one hour to the next (its
%% neighbours are not ours to see), and a slower host moves the servers'
%% ratios too, so a publication says where its host stood; the report
%% puts it in its header. --smoke has the floor among its servers
%% already.
host_speed(_, #{smoke := true}) ->
    none;
host_speed(When, Ctx) ->
    {ok, Vsn, _} = bench_servers:available(floor, Ctx),
    C = Ctx#{versions => (maps:get(versions, Ctx))#{floor => Vsn}},
    Res = attempt(#{server => floor, scenario => hello, run => 0}, bench_scenarios:find(hello),
                  floor, C, maps:get(retries, Ctx), none),
    io:format("bench: host speed ~s the matrix: ~ts~n", [When, host_line(Res)]),
    Res.

host_line(#{status := ok, rps := Rps} = M) ->
    io_lib:format("floor ~ts req/s, cpu ~ts/req", [bench_report:fmt_rps(Rps), cpu(M)]);
host_line(#{status := {error, Why}}) ->
    "floor FAILED: " ++ Why.

cell(R, Sc = #{name := Name}, Sv, Ctx) ->
    Base = #{server => Sv, scenario => Name, run => R},
    case unsupported(Sv, Name, Ctx) of
        false -> attempt(Base, Sc, Sv, Ctx, maps:get(retries, Ctx), none);
        Why -> Base#{status => {unsupported, Why}}
    end.

%% A run that other programs disturbed (more than ?DISTURBED % of either
%% core went elsewhere) is repeated up to --retries times; the least
%% disturbed attempt is kept, and the report counts the repeats.
-define(DISTURBED, 15).

attempt(Base, Sc, Sv, Ctx, Left, Best0) ->
    M = one(Base, Sc, Sv, Ctx),
    Best = least_disturbed(M, Best0),
    case disturbance(M) >= ?DISTURBED andalso Left > 0 of
        true ->
            io:format("      run disturbed (~b % other load), repeating~n", [round(disturbance(M))]),
            attempt(Base, Sc, Sv, Ctx, Left - 1, Best#{repeats => maps:get(repeats, Best, 0) + 1});
        false ->
            Best
    end.

least_disturbed(M, none) -> M;
least_disturbed(M = #{status := ok}, Best = #{status := ok}) ->
    case disturbance(M) < disturbance(Best) of
        true -> M#{repeats => maps:get(repeats, Best, 0)};
        false -> Best
    end;
least_disturbed(M = #{status := ok}, Best) -> M#{repeats => maps:get(repeats, Best, 0)};
least_disturbed(_, Best) -> Best.

disturbance(#{status := ok} = M) ->
    lists:max([0 | [V || K <- [noise, load_noise], V <- [maps:get(K, M, undefined)], is_number(V)]]);
disturbance(_) ->
    0.

one(Base, Sc, Sv, Ctx) ->
    try measure(Sc, Sv, Ctx) of
        M = #{status := {error, Why}} -> maps:merge(Base, M#{status := {error, short(Why)}});
        M -> maps:merge(Base, M)
    catch
        C:E:St ->
            Base#{status => {error, lists:flatten(io_lib:format("~p:~0p ~0p", [C, E, hd(St)]))}}
    end.

short(Why) ->
    Flat = lists:flatten(Why),
    case length(Flat) > 400 of
        true -> lists:sublist(Flat, 400) ++ "...";
        false -> Flat
    end.

unsupported(Sv, Name, Ctx) ->
    Sc = bench_scenarios:find(Name),
    case {maps:get(only, Sc, any), maps:get(protocol, Ctx)} of
        {h1, h2} -> "a WebSocket scenario over HTTP/1.1 (RFC 8441 is not in the bench)";
        {h2, h1} -> "an HTTP/2 scenario (--protocol h2)";
        _ when map_get(driver, Sc) =:= wsload, map_get(wsload, Ctx) =:= undefined ->
            "bench/wsload not built (is go installed?)";
        {_, h1} -> bench_scenarios:unsupported(Sv, Name);
        {_, h2} -> unsupported_h2(Sv, Name, Ctx)
    end.

unsupported_h2(Sv, Name, Ctx) ->
    case {bench_servers:h2_capable(Sv, Ctx), tls(bench_scenarios:find(Name))} of
        {true, _} -> bench_scenarios:unsupported(Sv, Name);
        {false, false} -> "no cleartext HTTP/2";
        {false, true} -> bench_servers:no_h2_tls(Sv)
    end.

progress(I, Total, #{server := Sv, scenario := Sc, run := R} = Res, T0) ->
    Elapsed = erlang:monotonic_time(second) - T0,
    Line = case Res of
               #{status := ok, idle_conns := N, idle_beam_b := B, idle_rss_b := Rss} ->
                   io_lib:format("~b idle connections: ~b B BEAM, ~b B RSS per connection",
                                 [N, round(B), round(Rss)]);
               #{status := ok, rps := Rps, p50 := P50, p99 := P99} = M ->
                   {Unit, Per} = case bench_scenarios:ws(Sc) of
                                     true -> {"msg/s", "msg"};
                                     false -> {"req/s", "req"}
                                 end,
                   io_lib:format("~ts ~s  p50 ~ts  p99 ~ts  cpu ~ts/~s~ts~ts",
                                 [bench_report:fmt_rps(Rps), Unit, bench_report:fmt_us(P50),
                                  bench_report:fmt_us(P99), cpu(M), Per, mbps(M), errs(M)]);
               #{status := {unsupported, Why}} -> "skipped: " ++ Why;
               #{status := {error, Why}} -> "FAILED: " ++ Why
           end,
    io:format("[~3b/~b ~4bs] run ~b ~-20s ~-8s ~ts~n", [I, Total, Elapsed, R, Sc, Sv, Line]).

mbps(#{mbps := B}) when B >= 1 -> io_lib:format("  ~.1f MB/s", [B * 1.0]);
mbps(_) -> "".

cpu(#{cpu_us := C}) when is_number(C) -> bench_report:fmt_us(C);
cpu(_) -> "?".

errs(M = #{noise := N, load_noise := L}) when is_number(N), is_number(L), (N >= 10 orelse L >= 10) ->
    [errs(maps:without([noise, load_noise], M)),
     io_lib:format("  (other load: server core ~b %, load core ~b %)", [round(N), round(L)])];
errs(#{errors := 0, bad_status := 0}) -> "";
errs(#{errors := E, bad_status := B}) -> io_lib:format("  errors ~b, status>=400 ~b", [E, B]).

measure(Sc = #{name := Name, path := Path}, Sv, Ctx) ->
    Port = free_port(),
    case bench_servers:start(Sv, Name, Port, Ctx#{version => maps:get(Sv, maps:get(versions, Ctx))}) of
        {error, Why} ->
            #{status => {error, lists:flatten(io_lib:format("server did not start: ~0p", [Why]))}};
        {ok, H} ->
            try
                measure_running(Sc, H, Port, Path, Ctx)
            after
                bench_servers:stop(H)
            end
    end.

measure_running(Sc = #{ws := #{mode := idle}}, H, Port, _Path, Ctx) ->
    case bench_ws:check(Sc, Port, Ctx) of
        {error, Why} -> #{status => {error, "parity check failed: " ++ Why}};
        ok -> bench_ws:idle(Sc, H, Port, bench_ws:idle_conns(clients(Sc, Ctx)), Ctx)
    end;
measure_running(Sc = #{name := Name}, H = #{os_pid := Pid}, Port, Path, Ctx) ->
    Check = case {maps:get(driver, Sc), maps:get(protocol, Ctx)} of
                {wsload, _} -> bench_ws:check(Sc, Port, Ctx);
                {_, h1} -> bench_check:check(Sc, Port);
                {_, h2} when map_get(h1, Sc) -> bench_check:check(Sc, Port);
                {_, h2} -> bench_h2load:check(Sc, Port)
            end,
    case Check of
        {error, Why} ->
            #{status => {error, "parity check failed: " ++ lists:flatten(Why)}};
        ok ->
            Script = bench_wrk:script(Sc, filename:join(maps:get(bench_dir, Ctx), "lua"),
                                      filename:join(maps:get(work, Ctx), "lua")),
            Url = bench_h2load:url(Sc, Port, Path),
            Clients = clients(Sc, Ctx),
            Load = fun(Secs) -> load(Sc, Script, Url, Port, #{seconds => Secs, clients => Clients},
                                     Ctx)
                   end,
            case maps:get(warmup, Ctx) of
                0 -> ok;
                W -> _ = Load(W)
            end,
            _ = beam(H, "reset"),
            _ = bench_proc:reset_peak(Pid),
            Ticks0 = bench_proc:cpu_ticks(Pid),
            Opens0 = bench_proc:passive_opens(),
            Core0 = bench_proc:core_ticks(?SERVER_CORE),
            LoadCore0 = bench_proc:core_ticks(?LOAD_CORE),
            Res = Load(maps:get(duration, Ctx)),
            Ticks1 = bench_proc:cpu_ticks(Pid),
            Opens1 = bench_proc:passive_opens(),
            Noise = noise(Core0, bench_proc:core_ticks(?SERVER_CORE), Ticks1 - Ticks0, Ctx),
            LoadCore1 = bench_proc:core_ticks(?LOAD_CORE),
            LoadTicks = case Res of
                            {ok, #{load_ticks := LT}} -> LT;
                            _ -> 0
                        end,
            LoadNoise = noise(LoadCore0, LoadCore1, LoadTicks, Ctx),
            LoadBusy = busy(LoadCore0, LoadCore1, LoadTicks, Ctx),
            Mem = bench_servers:beam_stats(H),
            Rss = bench_proc:peak_rss_kb(Pid),
            case Res of
                {ok, W0} ->
                    M = summarize(Name, W0, Ticks1 - Ticks0, Opens1 - Opens0, Mem, Rss, Clients, Ctx),
                    M#{noise => Noise, load_noise => LoadNoise, load_busy => LoadBusy};
                {error, Why} when is_list(Why) ->
                    #{status => {error, Why}};
                {error, Why} ->
                    #{status => {error, lists:flatten(io_lib:format("wrk: ~0p", [Why]))}}
            end
    end.

clients(Sc, Ctx) ->
    case maps:get(clients, Sc) of
        undefined -> maps:get(clients, Ctx);
        C -> C
    end.

%% The share of the server core's time that went to anything but the
%% server process (other programs, and kernel work not charged to it):
%% a run with much of it was disturbed.
noise({B0, T0}, {B1, T1}, ServerTicks, #{pin := [_ | _]}) when T1 > T0 ->
    max(0.0, (B1 - B0 - ServerTicks) / (T1 - T0) * 100);
noise(_, _, _, _) ->
    undefined.

%% The share of the load core's time the load generator itself used: near
%% 100 % the generator, not the server, set the pace of the run.
busy({_, T0}, {_, T1}, LoadTicks, #{pin := [_ | _]}) when T1 > T0, LoadTicks > 0 ->
    min(100.0, LoadTicks / (T1 - T0) * 100);
busy(_, _, _, _) ->
    undefined.

%% h2load for HTTP/2; wrk, or the in-tree generator for what wrk cannot
%% drive (HEAD), for HTTP/1.1.
load(Sc = #{driver := wsload}, _Script, _Url, Port, Opts, Ctx) ->
    bench_ws:run(Sc, Port, Opts, Ctx);
load(Sc, _Script, Url, _Port, Opts, Ctx = #{protocol := h2}) ->
    bench_h2load:run(Sc, Url, Opts, maps:get(load_pin, Ctx), filename:join(maps:get(work, Ctx), "h2"));
load(#{driver := erlang, method := Method, path := Path}, _Script, _Url, Port,
     #{seconds := Secs, clients := Clients}, Ctx) ->
    Args = maps:get(load_pin, Ctx) ++
        [os:find_executable("erl"), "+S", "1:1", "-noshell", "-pa", maps:get(bench_ebin, Ctx),
         "-eval", "bench_load:main()", "-extra", integer_to_list(Port), integer_to_list(Clients),
         integer_to_list(Secs), string:uppercase(atom_to_list(Method)), Path],
    case bench_proc:exec_cpu(Args, (Secs + 60) * 1000) of
        {0, Out, Ticks} -> bench_wrk:with_ticks(bench_wrk:parse(Out), Ticks);
        {Status, Out, _} -> {error, {bench_load_exit, Status, lists:sublist(Out, 600)}}
    end;
load(_Sc, Script, Url, _Port, Opts, Ctx) ->
    bench_wrk:run(Script, Url, Opts, maps:get(load_pin, Ctx)).

summarize(Name, W, Ticks, Opens, Mem, Rss, Clients, Ctx) ->
    #{requests := N, duration_us := Dur, status := Bad,
      connect := E1, read := E2, write := E3, timeout := E4} = W,
    Errors = E1 + E2 + E3 + E4,
    CpuUs = case N of
                0 -> undefined;
                _ -> Ticks / maps:get(clk_tck, Ctx) * 1.0e6 / N
            end,
    Status = if
                 N =:= 0 -> {error, "no request completed"};
                 (Errors > 0 orelse Bad > 0) andalso map_get(strict, Ctx) ->
                     {error, lists:flatten(io_lib:format("~b socket errors, ~b error statuses",
                                                         [Errors, Bad]))};
                 true -> ok
             end,
    %% MB/s of echoed payload, for the WebSocket rows (bench_ws gives bytes).
    Base = case {bench_scenarios:ws(Name), W} of
               {true, #{bytes := B}} -> Mem#{mbps => B / 1048576 / (Dur / 1.0e6)};
               _ -> Mem
           end,
    Base#{status => Status, requests => N, rps => N / (Dur / 1.0e6),
         p50 => known(maps:get(p50, W)), p90 => known(maps:get(p90, W)),
         p99 => known(maps:get(p99, W)), p999 => known(maps:get(p999, W)),
         max => maps:get(max, W),
         errors => Errors, bad_status => Bad, cpu_us => CpuUs, peak_rss_kb => Rss,
         conns => Opens, clients => Clients}.

%% -1: the load generator could not tell (see bench/lua/report.lua).
known(V) when is_number(V), V >= 0 -> V;
known(_) -> undefined.

beam(#{server := nginx}, _) -> {error, not_a_beam};
beam(H, Cmd) -> bench_servers:command(H, Cmd).

free_port() ->
    {ok, S} = gen_tcp:listen(0, [{ip, {127, 0, 0, 1}}, {reuseaddr, true}]),
    {ok, P} = inet:port(S),
    ok = gen_tcp:close(S),
    P.
