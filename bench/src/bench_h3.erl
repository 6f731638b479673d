%% bench_h3: `bench/run --h3' (`--protocol h3'): falco's HTTP/3 against
%% falco's own HTTP/2 over TLS, in one run, on the same server. Each cell
%% (run x scenario x protocol, interleaved in that order so that drift of
%% the host hits both protocols alike) starts a fresh falco BEAM pinned to
%% the server core with one TLS listener and `http3 => true' (bench_falco:
%% HTTP/3 on UDP and HTTP/2 over TLS on TCP, same port, same handler), then
%% drives it from the load core with
%%
%%   h3   bench/h3load (quic-go, GOMAXPROCS=1): every body read, counted
%%        and its SHA-256 compared with the expected one (-expect-sha256);
%%        a failed request, a short body, a mismatch or a non-2xx status
%%        voids the run;
%%   h2   h2load over TLS (ALPN h2, one thread), the tool the bench uses for
%%        HTTP/2, exact percentiles from its per-request log; its parity
%%        check is curl over TLS 1.3 (the answer must come over HTTP/2).
%%
%% and measures as the HTTP matrix does (bench_main): server CPU (utime +
%% stime of the server process over the window) per request, peak BEAM
%% memory (sampled every 100 ms), peak RSS (VmHWM reset after the warm-up),
%% the disturbance of both cores. Writes results-h3.md and results-h3.csv.
%% `--profile --h3' runs falco under eprof for each scenario over HTTP/3
%% and writes profile-h3.md.
-module(bench_h3).

-export([run/2, scenarios/0, find/1]).

-define(SERVER_CORE, 1).
-define(LOAD_CORE, 0).
-define(DISTURBED, 15).
-define(MB, 1048576).
-define(TOP, 30).
%% Idle connections of the idle scenario: each is a UDP socket (h3) or a
%% TCP connection (h2) of the generator, and falco's handshakes per client
%% address are limited (h3_max_handshakes_per_address, 100): they open 64
%% at a time.
-define(IDLE_CONNS, 1000).
-define(SETTLE_MS, 2000).

%% @doc The HTTP/3 run's scenarios, in report order.
-spec scenarios() -> [atom()].
scenarios() -> [hello, echo, multi_stream, download_10mb, idle].

%% @doc One scenario: the request, the shape (connections x streams per
%% connection), the expected body.
-spec find(atom()) -> map() | undefined.
find(hello) ->
    sc(hello, "GET /hello, 13-byte text/plain body; 16 connections x 1 stream", get, "/hello",
       <<>>, 16, 1, bench_fx:hello(), <<"text/plain">>);
find(echo) ->
    %% h3load's request body: "0123456789" repeated (h3load -body-size).
    Body = binary:part(binary:copy(<<"0123456789">>, 26), 0, 256),
    sc(echo, "POST /echo with a 256-byte body, echoed; 16 connections x 1 stream", post,
       "/echo", Body, 16, 1, Body, <<"application/octet-stream">>);
find(multi_stream) ->
    sc(multi_stream, "GET /hello, 4 connections x 16 concurrent streams", get, "/hello", <<>>, 4,
       16, bench_fx:hello(), <<"text/plain">>);
find(download_10mb) ->
    (sc(download_10mb, "GET /download_10mb, a 10 MB (10,485,760-byte) body; 2 connections x "
        "1 stream", get, "/download_10mb", <<>>, 2, 1, bench_fx:download_10mb(),
        <<"application/octet-stream">>))#{mbps => true};
find(idle) ->
    (sc(idle, "1,000 connections idle after one GET /hello each (fewer if the fd limit is "
        "lower); memory per connection", get, "/hello", <<>>, ?IDLE_CONNS, 1, bench_fx:hello(),
        <<"text/plain">>))#{idle => true};
find(_) ->
    undefined.

sc(Name, What, Method, Path, Body, Conns, Streams, Expect, Type) ->
    #{name => Name, what => What, method => Method, path => Path, body => Body, headers => [],
      clients => Conns, streams => Streams, fixture => list_to_atom("h3_" ++ atom_to_list(Name)),
      expect => #{status => 200, type => Type, body => Expect}, idle => false,
      sha256 => hex(crypto:hash(sha256, Expect))}.

hex(B) -> lists:flatten([io_lib:format("~2.16.0b", [X]) || <<X>> <= B]).

%% @doc The whole HTTP/3 run (or its profile); the exit status.
-spec run(map(), map()) -> 0 | 1 | 2.
run(Opts, Ctx0) ->
    Names = case maps:get(scenarios, Opts) of
                default -> scenarios();
                [list] ->
                    [io:format("~-20s ~s~n", [N, maps:get(what, find(N))]) || N <- scenarios()],
                    halt(0);
                L -> L
            end,
    case [N || N <- Names, find(N) =:= undefined] of
        [_ | _] = Bad ->
            io:format(standard_error, "bench: unknown HTTP/3 scenario(s): ~p (~p)~n",
                      [Bad, scenarios()]),
            2;
        [] ->
            Scs = [find(N) || N <- Names],
            case {tool(), bench_servers:available(falco, Ctx0)} of
                {undefined, _} ->
                    io:format(standard_error, "bench: h3load is not built (scripts/bootstrap "
                              "builds it into _build/tools)~n", []),
                    1;
                {_, {skip, Why}} ->
                    io:format(standard_error, "bench: ~s~n", [Why]),
                    1;
                {H3load, {ok, Vsn, Dirs}} ->
                    ok = bench_tls:ensure(maps:get(tls_dir, Ctx0)),
                    Ctx = Ctx0#{paths => #{falco => Dirs}, versions => #{falco => Vsn},
                                version => Vsn, h3load => H3load},
                    case maps:get(profile, Opts) of
                        true -> profile(Scs, Ctx);
                        false -> matrix(Scs, Ctx)
                    end
            end
    end.

tool() ->
    case os:getenv("BENCH_H3LOAD", "") of
        "" -> undefined;
        P -> case filelib:is_regular(P) of
                 true -> P;
                 false -> undefined
             end
    end.

%% ---------------------------------------------------------------- matrix

matrix(Scs, Ctx = #{runs := Runs}) ->
    Protos = [h3, h2],
    Cells = [{R, Sc, P} || R <- lists:seq(1, Runs), Sc <- Scs, P <- Protos],
    Total = length(Cells),
    Load0 = loadavg(),
    io:format("bench: HTTP/3 run: ~b runs x ~b scenarios x {h3, h2 over TLS}, ~bs warm-up + ~bs "
              "each; load average ~s~n",
              [Runs, length(Scs), maps:get(warmup, Ctx), maps:get(duration, Ctx), Load0]),
    T0 = erlang:monotonic_time(second),
    {Results, _} = lists:mapfoldl(
                     fun({R, Sc, P}, I) ->
                             Res = attempt(#{run => R, scenario => maps:get(name, Sc), proto => P},
                                           Sc, P, Ctx, maps:get(retries, Ctx), none),
                             progress(I, Total, Res, T0),
                             {Res, I + 1}
                     end, 1, Cells),
    Load1 = loadavg(),
    Files = write(#{results => Results, scenarios => Scs, ctx => Ctx,
                    load => {Load0, Load1}, machine => bench_proc:machine()}),
    [io:format("bench: wrote ~s~n", [F]) || F <- Files],
    case [R || R = #{status := {error, _}} <- Results] of
        [] -> 0;
        Failed ->
            io:format("bench: ~b of ~b runs failed:~n", [length(Failed), Total]),
            [io:format("  ~s ~s run ~b: ~s~n", [P, Sc, R, Why])
             || #{proto := P, scenario := Sc, run := R, status := {error, Why}} <- Failed],
            1
    end.

loadavg() ->
    case file:read_file("/proc/loadavg") of
        {ok, B} -> lists:join(" ", lists:sublist(string:lexemes(binary_to_list(B), " "), 3));
        _ -> "?"
    end.

attempt(Base, Sc, P, Ctx, Left, Best0) ->
    M = one(Base, Sc, P, Ctx),
    Best = case {M, Best0} of
               {_, none} -> M;
               {#{status := ok}, #{status := ok}} ->
                   case disturbance(M) < disturbance(Best0) of
                       true -> M#{repeats => maps:get(repeats, Best0, 0)};
                       false -> Best0
                   end;
               {#{status := ok}, _} -> M#{repeats => maps:get(repeats, Best0, 0)};
               _ -> Best0
           end,
    case disturbance(M) >= ?DISTURBED andalso Left > 0 of
        true ->
            io:format("      run disturbed (~b % other load), repeating~n", [round(disturbance(M))]),
            attempt(Base, Sc, P, Ctx, Left - 1, Best#{repeats => maps:get(repeats, Best, 0) + 1});
        false ->
            Best
    end.

disturbance(#{status := ok} = M) ->
    lists:max([0 | [V || K <- [noise, load_noise], V <- [maps:get(K, M, undefined)], is_number(V)]]);
disturbance(_) -> 0.

one(Base, Sc, P, Ctx) ->
    try measure(Sc, P, Ctx) of
        M -> maps:merge(Base, M)
    catch
        C:E:St ->
            Base#{status => {error, lists:flatten(io_lib:format("~p:~0p ~0p", [C, E, hd(St)]))}}
    end.

measure(Sc = #{fixture := Fx}, P, Ctx) ->
    Port = free_port(),
    case bench_servers:start(falco, Fx, Port, Ctx) of
        {error, Why} ->
            #{status => {error, lists:flatten(io_lib:format("server did not start: ~0p", [Why]))}};
        {ok, H} ->
            try
                running(Sc, P, H, Port, Ctx)
            after
                bench_servers:stop(H)
            end
    end.

running(Sc = #{idle := true}, P, H, Port, Ctx) ->
    case check(Sc#{idle := false}, P, Port, Ctx) of
        {error, Why} -> #{status => {error, "parity check failed: " ++ lists:flatten(Why)}};
        ok -> idle(Sc, P, H, Port, Ctx)
    end;
running(Sc, P, H = #{os_pid := Pid}, Port, Ctx) ->
    case check(Sc, P, Port, Ctx) of
        {error, Why} ->
            #{status => {error, "parity check failed: " ++ lists:flatten(Why)}};
        ok ->
            Load = fun(Secs) -> load(Sc, P, Port, Secs, Ctx) end,
            _ = case maps:get(warmup, Ctx) of
                    0 -> ok;
                    W -> Load(W)
                end,
            {ok, _} = bench_servers:command(H, "reset"),
            _ = bench_proc:reset_peak(Pid),
            Ticks0 = bench_proc:cpu_ticks(Pid),
            Core0 = bench_proc:core_ticks(?SERVER_CORE),
            LoadCore0 = bench_proc:core_ticks(?LOAD_CORE),
            Res = Load(maps:get(duration, Ctx)),
            Ticks1 = bench_proc:cpu_ticks(Pid),
            Core1 = bench_proc:core_ticks(?SERVER_CORE),
            LoadCore1 = bench_proc:core_ticks(?LOAD_CORE),
            Mem = bench_servers:beam_stats(H),
            Rss = bench_proc:peak_rss_kb(Pid),
            case Res of
                {ok, W0 = #{requests := N, duration_us := Dur}} when N > 0 ->
                    LoadTicks = maps:get(load_ticks, W0, 0),
                    Secs = Dur / 1.0e6,
                    Bytes = case maps:get(mbps, Sc, false) of
                                true -> N * byte_size(maps:get(body, maps:get(expect, Sc)));
                                false -> 0
                            end,
                    Mem#{status => ok, requests => N, rps => N / Secs,
                         p50 => maps:get(p50, W0), p99 => maps:get(p99, W0),
                         max => maps:get(max, W0),
                         cpu_us => (Ticks1 - Ticks0) / maps:get(clk_tck, Ctx) * 1.0e6 / N,
                         mbps => Bytes / Secs / 1.0e6,
                         peak_rss_kb => Rss,
                         noise => noise(Core0, Core1, Ticks1 - Ticks0),
                         load_noise => noise(LoadCore0, LoadCore1, LoadTicks),
                         load_busy => busy(LoadCore0, LoadCore1, LoadTicks)};
                {ok, _} ->
                    #{status => {error, "no request completed"}};
                {error, Why} ->
                    #{status => {error, lists:flatten(io_lib:format("~0p", [Why]))}}
            end
    end.

%% The idle measurement (bench_ws:idle/5's, for QUIC and HTTP/2 over TLS):
%% the server's memory after a forced GC of every process, before N
%% connections are opened (each after one GET /hello) and after they are
%% open and the server has rested ?SETTLE_MS; the difference per
%% connection. Then every connection must answer one more GET.
idle(Sc = #{path := Path}, P, H = #{os_pid := Pid}, Port, Ctx) ->
    N = bench_ws:idle_conns(maps:get(clients, Sc)),
    Before = settled(H, Pid, 500),
    Ticks0 = bench_proc:cpu_ticks(Pid),
    Args = maps:get(load_pin, Ctx) ++
        [os:find_executable("env"), "GOMAXPROCS=1", maps:get(h3load, Ctx), "-idle",
         "-proto", atom_to_list(P), "-conns", integer_to_list(N), "-hold", "300s",
         "-insecure", "-expect-sha256", maps:get(sha256, Sc),
         "https://127.0.0.1:" ++ integer_to_list(Port) ++ Path],
    G = open_port({spawn_executable, hd(Args)},
                  [{args, tl(Args)}, {line, 65536}, binary, exit_status, stderr_to_stdout,
                   use_stdio]),
    try line(G, <<"event">>, 120000) of
        {ok, #{<<"opened">> := Opened, <<"open_us">> := OpenUs}} when Opened > 0 ->
            Ticks1 = bench_proc:cpu_ticks(Pid),
            After = settled(H, Pid, ?SETTLE_MS),
            true = port_command(G, "go\n"),
            case line(G, <<"ok">>, 120000) of
                {ok, #{<<"ok">> := true, <<"alive">> := Alive}} ->
                    #{status => ok, idle_conns => Opened, alive => Alive,
                      idle_beam_b => (maps:get(beam, After) - maps:get(beam, Before)) / Opened,
                      idle_rss_b => (maps:get(rss_kb, After) - maps:get(rss_kb, Before)) * 1024
                          / Opened,
                      beam_peak => maps:get(beam, After), peak_rss_kb => maps:get(rss_kb, After),
                      open_s => OpenUs / 1.0e6,
                      cpu_us => (Ticks1 - Ticks0) / maps:get(clk_tck, Ctx) * 1.0e6 / Opened};
                {ok, M} -> #{status => {error, lists:flatten(io_lib:format("h3load: ~0p", [M]))}};
                {error, Why} -> #{status => {error, Why}}
            end;
        {ok, M} -> #{status => {error, lists:flatten(io_lib:format("h3load: ~0p", [M]))}};
        {error, Why} -> #{status => {error, Why}}
    after
        case erlang:port_info(G, os_pid) of
            {os_pid, OsPid} ->
                catch port_close(G),
                _ = os:cmd("kill -9 " ++ integer_to_list(OsPid) ++ " 2>/dev/null");
            undefined -> ok
        end
    end.

%% The next JSON line of the generator that has Key.
line(G, Key, Timeout) ->
    receive
        {G, {data, {eol, L = <<"{", _/binary>>}}} ->
            case catch bench_json:decode(L) of
                M = #{Key := _} -> {ok, M};
                M = #{<<"ok">> := false} -> {ok, M};
                _ -> line(G, Key, Timeout)
            end;
        {G, {data, _}} -> line(G, Key, Timeout);
        {G, {exit_status, S}} -> {error, lists:flatten(io_lib:format("h3load exited (~b)", [S]))}
    after Timeout ->
        {error, "h3load: no answer in time"}
    end.

settled(H, Pid, WaitMs) ->
    timer:sleep(WaitMs),
    {ok, <<"ok">>} = bench_servers:command(H, "gc"),
    timer:sleep(200),
    {ok, <<"stats ", Rest/binary>>} = bench_servers:command(H, "stats"),
    [<<"total=", Total/binary>> | _] = binary:split(Rest, <<" ">>, [global]),
    #{beam => binary_to_integer(Total), rss_kb => bench_proc:rss_kb(Pid)}.

noise({B0, T0}, {B1, T1}, Own) when T1 > T0 -> max(0.0, (B1 - B0 - Own) / (T1 - T0) * 100);
noise(_, _, _) -> undefined.

busy({_, T0}, {_, T1}, Own) when T1 > T0, Own > 0 -> min(100.0, Own / (T1 - T0) * 100);
busy(_, _, _) -> undefined.

%% The parity check: one connection for a second through h3load (status,
%% length and SHA-256 of every body), or curl over TLS with ALPN h2.
check(Sc, h3, Port, Ctx) ->
    case h3load(Sc#{clients := 1, streams := 1}, Port, 1, Ctx) of
        {ok, _} -> ok;
        {error, Why} -> {error, Why}
    end;
check(Sc, h2, Port, _Ctx) ->
    bench_h2load:check(Sc#{tls => true}, Port).

load(Sc, h3, Port, Secs, Ctx) ->
    h3load(Sc, Port, Secs, Ctx);
load(Sc = #{clients := C, path := Path}, h2, Port, Secs, Ctx) ->
    Url = "https://127.0.0.1:" ++ integer_to_list(Port) ++ Path,
    bench_h2load:run(maps:remove(tls, Sc), Url, #{seconds => Secs, clients => C},
                     maps:get(load_pin, Ctx), filename:join(maps:get(work, Ctx), "h3-h2"));
load(_, _, _, _, _) ->
    {error, unknown_protocol}.

%% h3load pinned to the load core with GOMAXPROCS=1 (one OS thread runs Go
%% code, as h2load runs one thread); its last line is a JSON object.
h3load(Sc = #{clients := C, streams := S, path := Path, body := Body}, Port, Secs, Ctx) ->
    Args = maps:get(load_pin, Ctx) ++
        [os:find_executable("env"), "GOMAXPROCS=1", maps:get(h3load, Ctx),
         "-conns", integer_to_list(C), "-streams", integer_to_list(S),
         "-duration", integer_to_list(Secs) ++ "s", "-insecure",
         "-expect-sha256", maps:get(sha256, Sc)]
        ++ case Body of
               <<>> -> [];
               _ -> ["-body-size", integer_to_list(byte_size(Body))]
           end
        ++ ["https://127.0.0.1:" ++ integer_to_list(Port) ++ Path],
    case bench_proc:exec_cpu(Args, (Secs + 60) * 1000) of
        {Status, Out, Ticks} when Status =:= 0; Status =:= 2 ->
            Lines = [L || L <- string:split(Out, "\n", all), string:prefix(L, "{") =/= nomatch],
            case Lines of
                [] -> {error, {h3load_exit, Status, lists:sublist(Out, 600)}};
                _ ->
                    R = bench_json:decode(unicode:characters_to_binary(lists:last(Lines))),
                    case maps:get(<<"ok">>, R) of
                        true ->
                            Ms = fun(K) -> maps:get(K, R) * 1000 end,
                            {ok, #{requests => maps:get(<<"requests">>, R),
                                   duration_us => round(maps:get(<<"duration_s">>, R) * 1.0e6),
                                   p50 => Ms(<<"p50_ms">>), p99 => Ms(<<"p99_ms">>),
                                   max => Ms(<<"max_ms">>), bytes => maps:get(<<"bytes">>, R),
                                   load_ticks => Ticks}};
                        false ->
                            {error, io_lib:format("h3load: ~b requests, ~b errors, ~b short, ~b "
                                                  "mismatches, statuses ~0p, first error ~s",
                                                  [maps:get(<<"requests">>, R),
                                                   maps:get(<<"errors">>, R),
                                                   maps:get(<<"short_bodies">>, R),
                                                   maps:get(<<"hash_mismatches">>, R),
                                                   maps:get(<<"statuses">>, R),
                                                   maps:get(<<"first_error">>, R)])}
                    end
            end;
        {Status, Out, _} ->
            {error, {h3load_exit, Status, lists:sublist(Out, 600)}}
    end.

progress(I, Total, Res = #{proto := P, scenario := Sc, run := R}, T0) ->
    Line = case Res of
               #{status := ok, idle_conns := N} = M ->
                   io_lib:format("~b idle connections: ~b B BEAM, ~b B RSS per connection; "
                                 "opened in ~.1f s, ~ts CPU per connection",
                                 [N, round(maps:get(idle_beam_b, M)), round(maps:get(idle_rss_b, M)),
                                  maps:get(open_s, M), bench_report:fmt_us(maps:get(cpu_us, M))]);
               #{status := ok} = M ->
                   io_lib:format("~ts req/s  p50 ~ts  p99 ~ts  cpu ~ts/req~ts  peak BEAM ~.1f MB~ts",
                                 [bench_report:fmt_rps(maps:get(rps, M)),
                                  bench_report:fmt_us(maps:get(p50, M)),
                                  bench_report:fmt_us(maps:get(p99, M)),
                                  bench_report:fmt_us(maps:get(cpu_us, M)),
                                  case maps:get(mbps, M) of
                                      B when B > 0 -> io_lib:format("  ~.1f MB/s", [B]);
                                      _ -> ""
                                  end,
                                  mb(maps:get(beam_peak, M)),
                                  case disturbance(M) of
                                      D when D >= 10 ->
                                          io_lib:format("  (other load: server core ~ts, load core ~ts)",
                                                        [pct(maps:get(noise, M)),
                                                         pct(maps:get(load_noise, M))]);
                                      _ -> ""
                                  end]);
               #{status := {error, Why}} -> "FAILED: " ++ Why
           end,
    io:format("[~3b/~b ~4bs] run ~b ~-14s ~s ~ts~n",
              [I, Total, erlang:monotonic_time(second) - T0, R, Sc, P, Line]).

mb(undefined) -> 0.0;
mb(B) -> B / 1.0e6.

free_port() ->
    {ok, S} = gen_tcp:listen(0, [{ip, {127, 0, 0, 1}}, {reuseaddr, true}]),
    {ok, P} = inet:port(S),
    ok = gen_tcp:close(S),
    case gen_udp:open(P, [{ip, {127, 0, 0, 1}}]) of
        {ok, U} -> ok = gen_udp:close(U), P;
        {error, _} -> free_port()
    end.

%% ---------------------------------------------------------------- report

-define(KEYS, [rps, cpu_us, p50, p99, max, mbps, beam_peak, peak_rss_kb, load_busy, noise]).

summaries(Results, Name, P) ->
    Ok = [R || R = #{scenario := S, proto := Q, status := ok} <- Results, S =:= Name, Q =:= P],
    case Ok of
        [] -> none;
        _ -> maps:from_list([{K, bench_stats:summary([V || R <- Ok, V <- [maps:get(K, R, undefined)],
                                                         is_number(V)])}
                             || K <- ?KEYS])
    end.

med(#{median := M}) -> M;
med(_) -> undefined.

write(Rep = #{results := Results, ctx := Ctx}) ->
    Out = maps:get(out, Ctx),
    Md = filename:join(Out, "results-h3.md"),
    Csv = filename:join(Out, "results-h3.csv"),
    ok = filelib:ensure_dir(Md),
    ok = file:write_file(Md, unicode:characters_to_binary(markdown(Rep))),
    ok = file:write_file(Csv, unicode:characters_to_binary(csv(Results))),
    [Md, Csv].

markdown(#{results := Results, scenarios := Scs, ctx := Ctx, load := {L0, L1}, machine := M}) ->
    Repeats = lists:sum([maps:get(repeats, R, 0) || R <- Results]),
    ["# falco: HTTP/3 against HTTP/2 over TLS\n\n",
     "Written by `bench/run --h3` (bench/src/bench_h3.erl; bench/README.md, \"HTTP/3\"). "
     "One falco BEAM per cell with one TLS listener and `http3 => true`: the same server, "
     "port and handler answer HTTP/3 (UDP, driven by bench/h3load on quic-go, every body's "
     "length and SHA-256 checked) and HTTP/2 over TLS (TCP, driven by h2load over TLS). "
     "Cells are interleaved run → scenario → protocol; each is the median of the runs with "
     "min–max.\n\n",
     "| | |\n|---|---|\n",
     [io_lib:format("| ~s | ~ts |\n", [K, V]) || {K, V} <- [
        {"date", date_time()},
        {"commit", bench_report:commit(maps:get(root, Ctx))},
        {"falco", maps:get(version, Ctx)},
        {"machine", io_lib:format("~s, ~b cores, ~s, ~s", [maps:get(cpu, M), maps:get(cores, M),
                                                           maps:get(memory, M), maps:get(kernel, M)])},
        {"OTP", io_lib:format("~s (erts ~s)", [maps:get(otp, M), maps:get(erts, M)])},
        {"load generators", ["h3load (quic-go v0.65.0, GOMAXPROCS=1); ", bench_h2load:version(),
                             " (-t1, over TLS)"]},
        {"pinning", case maps:get(pin, Ctx) of
                        [] -> "none (fewer than 2 cores)";
                        _ -> "server on core 1, load generator on core 0"
                    end},
        {"server BEAM flags", ["`", maps:get(erl_flags, Ctx), "`"]},
        {"rounds", io_lib:format("~b runs, ~b s warm-up + ~b s measured per cell; ~b disturbed "
                                 "run(s) repeated", [maps:get(runs, Ctx), maps:get(warmup, Ctx),
                                                      maps:get(duration, Ctx), Repeats])},
        {"load average", ["before ", L0, ", after ", L1, " (other jobs share the machine)"]}]],
     "\n## Results\n\n",
     "| scenario | protocol | req/s | MB/s | CPU/req | p50 | p99 | peak BEAM | peak RSS | "
     "load gen core | other load |\n"
     "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
     [[row(Sc, P, summaries(Results, N, P)) || P <- [h3, h2]]
      || Sc = #{name := N, idle := false} <- Scs],
     "\nCPU/req: utime + stime of the server process over the measured window / requests. "
     "peak BEAM: `erlang:memory(total)` sampled every 100 ms; peak RSS: VmHWM, reset after "
     "the warm-up. load gen core: the share of the load core the generator used (at 90 % or "
     "more it may have set the pace). other load: the larger share of either core not "
     "charged to the server or the generator.\n",
     "\n## HTTP/3 / HTTP/2 over TLS\n\n",
     "| scenario | CPU/req h3 / h2 | req/s h3 / h2 |\n|---|---:|---:|\n",
     [ratio_row(N, summaries(Results, N, h3), summaries(Results, N, h2))
      || #{name := N, idle := false} <- Scs],
     case [Sc || Sc = #{idle := true} <- Scs] of
         [] -> [];
         _ -> ["\n## Idle connections\n\n",
               "| protocol | connections | BEAM bytes per connection | RSS bytes per connection | "
               "opened in | server CPU per connection |\n|---|---:|---:|---:|---:|---:|\n",
               [idle_row(P, [R || R = #{scenario := idle, proto := Q, status := ok} <- Results,
                                  Q =:= P]) || P <- [h3, h2]],
               "\nAfter a forced GC of every process of the server and 2 s of rest, against the "
               "same reading before the connections were opened; each connection had sent one "
               "GET /hello, and had to answer one more after the reading. h2: HTTP/2 over TLS "
               "(TLS 1.3, ALPN h2) from the same generator (Go's net/http). CPU per connection: "
               "the server's, while the connections were opened (handshake and one request).\n"]
     end,
     "\n## Scenarios\n\n| scenario | what |\n|---|---|\n",
     [io_lib:format("| ~s | ~s |\n", [N, W]) || #{name := N, what := W} <- Scs],
     case [R || R = #{status := {error, _}} <- Results] of
         [] -> [];
         F -> ["\n## Failed runs\n\n",
               [io_lib:format("- ~s ~s run ~b: ~ts\n", [P, S, R, W])
                || #{proto := P, scenario := S, run := R, status := {error, W}} <- F]]
     end].

row(#{name := N}, P, none) ->
    io_lib:format("| ~s | ~s | — | | | | | | | | |\n", [N, pname(P)]);
row(#{name := N} = Sc, P, S) ->
    io_lib:format("| ~s | ~s | ~ts | ~ts | ~ts | ~ts | ~ts | ~.1f MB | ~.1f MB | ~ts | ~ts |\n",
                  [N, pname(P), range(maps:get(rps, S), fun bench_report:fmt_rps/1),
                   case maps:get(mbps, Sc, false) of
                       true -> range(maps:get(mbps, S), fun(V) -> io_lib:format("~.1f", [V * 1.0]) end);
                       false -> ""
                   end,
                   range(maps:get(cpu_us, S), fun bench_report:fmt_us/1),
                   bench_report:fmt_us(med(maps:get(p50, S))),
                   bench_report:fmt_us(med(maps:get(p99, S))),
                   mb(med(maps:get(beam_peak, S))), kb_mb(med(maps:get(peak_rss_kb, S))),
                   pct(med(maps:get(load_busy, S))), pct(med(maps:get(noise, S)))]).

pname(h3) -> "HTTP/3";
pname(h2) -> "HTTP/2 TLS".

range(#{median := M, min := Lo, max := Hi}, F) -> [F(M), " (", F(Lo), "–", F(Hi), ")"];
range(_, _) -> "?".

kb_mb(undefined) -> 0.0;
kb_mb(Kb) -> Kb / 1024.

pct(undefined) -> "?";
pct(V) -> io_lib:format("~b %", [round(V)]).

idle_row(P, []) ->
    io_lib:format("| ~s | — | | | | |\n", [pname(P)]);
idle_row(P, Rs) ->
    S = fun(K) -> bench_stats:summary([maps:get(K, R) || R <- Rs]) end,
    Int = fun(V) -> integer_to_list(round(V)) end,
    io_lib:format("| ~s | ~b | ~ts | ~ts | ~.1f s | ~ts |\n",
                  [pname(P), maps:get(idle_conns, hd(Rs)), range(S(idle_beam_b), Int),
                   range(S(idle_rss_b), Int), med(S(open_s)),
                   range(S(cpu_us), fun bench_report:fmt_us/1)]).

ratio_row(N, #{cpu_us := C3, rps := R3}, #{cpu_us := C2, rps := R2}) ->
    io_lib:format("| ~s | ~.2f× | ~.2f× |\n", [N, med(C3) / med(C2), med(R3) / med(R2)]);
ratio_row(N, _, _) ->
    io_lib:format("| ~s | ? | ? |\n", [N]).

csv(Results) ->
    ["run,scenario,protocol,status,requests,rps,mb_per_s,cpu_us_per_req,p50_us,p99_us,max_us,"
     "beam_peak_bytes,peak_rss_kb,load_busy_pct,other_load_pct,repeats,idle_conns,"
     "idle_beam_bytes_per_conn,idle_rss_bytes_per_conn\n",
     [[io_lib:format("~b,~s,~s,", [R, S, P]),
       case Res of
           #{status := ok} ->
               [<<"ok,">>, lists:join(",", [num(maps:get(K, Res, undefined))
                                            || K <- [requests, rps, mbps, cpu_us, p50, p99, max,
                                                     beam_peak, peak_rss_kb, load_busy, noise]]),
                ",", integer_to_list(maps:get(repeats, Res, 0)), ",",
                lists:join(",", [num(maps:get(K, Res, undefined))
                                 || K <- [idle_conns, idle_beam_b, idle_rss_b]])];
           #{status := {error, _}} -> "failed,,,,,,,,,,,,,,,"
       end, "\n"]
      || Res = #{run := R, scenario := S, proto := P} <- Results]].

num(undefined) -> "";
num(I) when is_integer(I) -> integer_to_list(I);
num(F) -> io_lib:format("~.2f", [F * 1.0]).

date_time() ->
    {{Y, Mo, D}, {H, Mi, _}} = calendar:universal_time(),
    io_lib:format("~4..0b-~2..0b-~2..0b ~2..0b:~2..0b UTC", [Y, Mo, D, H, Mi]).

%% ---------------------------------------------------------------- profile

%% eprof on every process of the server BEAM (bench_serve's profile_start,
%% set_on_spawn: the QUIC connection and stream processes are spawned
%% after it starts) while h3load drives the scenario over HTTP/3.
profile(Scs, Ctx) ->
    Sections = [profile_one(Sc, Ctx) || Sc <- Scs],
    Out = filename:join(maps:get(out, Ctx), "profile-h3.md"),
    ok = filelib:ensure_dir(Out),
    ok = file:write_file(Out, unicode:characters_to_binary(
                                ["# falco HTTP/3 hotspots (eprof)\n\n",
                                 "Written by `bench/run --h3 --profile`; commit ",
                                 bench_report:commit(maps:get(root, Ctx)), ", ", date_time(),
                                 ", load average ", loadavg(), ". Time is the share of profiled "
                                 "time spent in each function itself (not its callees), over "
                                 "every process of the server BEAM. eprof slows the server "
                                 "several times over: read the shares, not the rates.\n",
                                 Sections])),
    io:format("bench: wrote ~s~n", [Out]),
    0.

profile_one(Sc = #{name := Name, fixture := Fx}, Ctx) ->
    Port = free_port(),
    io:format("bench: profiling falco's HTTP/3 on ~s~n", [Name]),
    {ok, H} = bench_servers:start(falco, Fx, Port, Ctx),
    try
        ok = check(Sc, h3, Port, Ctx),
        _ = h3load(Sc, Port, max(1, maps:get(warmup, Ctx)), Ctx),
        File = filename:join([maps:get(work, Ctx), "profile", "h3_" ++ atom_to_list(Name) ++ ".eprof"]),
        ok = filelib:ensure_dir(File),
        _ = file:delete(File),
        {ok, <<"ok">>} = bench_servers:command(H, "profile_start"),
        {ok, #{requests := N, duration_us := D}} = h3load(Sc, Port, maps:get(duration, Ctx), Ctx),
        {ok, <<"ok">>} = bench_servers:command(H, ["profile_stop ", File]),
        Rows = bench_profile:parse(File),
        TotalUs = lists:sum([Us || {_, _, _, Us, _} <- Rows]),
        ByMod = lists:reverse(lists:keysort(2, maps:to_list(
                  lists:foldl(fun({F, _, _, Us, _}, Acc) ->
                                      [Mod | _] = string:split(F, ":"),
                                      maps:update_with(Mod, fun(V) -> V + Us end, Us, Acc)
                              end, #{}, Rows)))),
        ["\n## ", atom_to_list(Name), " (HTTP/3)\n\n",
         io_lib:format("~b requests in ~.1f s under eprof (~ts req/s); ~b functions, ~b µs "
                       "profiled (~.1f µs per request); top ~b by time:\n\n",
                       [N, D / 1.0e6, bench_report:fmt_rps(N / (D / 1.0e6)), length(Rows),
                        TotalUs, TotalUs / max(N, 1), ?TOP]),
         "| function | calls | % time | µs | µs/call | calls/request | µs/request |\n"
         "|---|---:|---:|---:|---:|---:|---:|\n",
         [io_lib:format("| `~s` | ~b | ~.2f | ~b | ~.2f | ~.2f | ~.2f |\n",
                        [F, Calls, Pct, Us, PerCall, Calls / max(N, 1), Us / max(N, 1)])
          || {F, Calls, Pct, Us, PerCall} <- lists:sublist(Rows, ?TOP)],
         "\nBy module (the functions' own time summed; BIFs count under `erlang`, "
         "`erts_internal`, `crypto`, whoever calls them):\n\n"
         "| module | % time | µs/request |\n|---|---:|---:|\n",
         [io_lib:format("| `~s` | ~.2f | ~.2f |\n", [Mod, 100 * Us / max(TotalUs, 1), Us / max(N, 1)])
          || {Mod, Us} <- lists:sublist(ByMod, 20)]]
    after
        bench_servers:stop(H)
    end.
