%% bench_h2load: drives h2load (nghttp2) for `--protocol h2': cleartext
%% HTTP/2 with prior knowledge, one thread pinned to the load core. Every
%% request's latency comes from h2load's --log-file, so the percentiles are
%% exact; the result has the same keys as bench/lua/report.lua's line. Also
%% the h2 parity check, through curl (--http2-prior-knowledge, or ALPN h2
%% over TLS).
%%
%% TLS scenarios (tls_handshake) need a new connection per request, which
%% one h2load run cannot do (its clients keep their connection for all
%% their requests). So h2load runs back to back, each run C clients with
%% one request each (`-c C -n C': C full handshakes, then the C requests),
%% in one bash loop on the load core until the time is up. The measured
%% time is the sum of h2load's own "finished in" times, so the start of
%% each h2load process is not charged to the server; each run ends when its
%% slowest handshake does. h2load reports only min/max/mean of its "time to
%% 1st byte" (connect + handshake + request), so the percentiles are
%% unknown (?) and max is the largest of the runs.
-module(bench_h2load).

-export([run/5, check/2, url/3, version/0]).

%% @doc Runs h2load for Seconds against Url with the scenario's request.
-spec run(map(), string(), map(), [string()], file:filename()) -> {ok, map()} | {error, term()}.
run(#{tls := true}, Url, #{seconds := Seconds, clients := Clients}, Pin, WorkDir) ->
    %% Quiet while it runs (bench_proc samples its CPU time when no output
    %% arrives); the runs' reports are printed at the end.
    RunsOut = filename:join(WorkDir, "h2load-runs.out"),
    ok = filelib:ensure_dir(RunsOut),
    Loop = "end=$(( ${EPOCHREALTIME//[!0-9]/} / 1000 + $3 ))\n"
        ": > \"$6\"\n"
        "while [ $(( ${EPOCHREALTIME//[!0-9]/} / 1000 )) -lt $end ]; do\n"
        "  \"$1\" -t1 -c\"$2\" -n\"$2\" --tls13-ciphers=\"$4\" \"$5\" >> \"$6\" 2>&1 || "
        "{ s=$?; cat \"$6\"; exit $s; }\n"
        "done\n"
        "cat \"$6\"\n",
    Args = [os:find_executable("bash"), "-c", Loop, "h2load-loop", os:find_executable("h2load"),
            integer_to_list(Clients), integer_to_list(Seconds * 1000), bench_tls:client_suite(), Url,
            RunsOut],
    case bench_proc:exec_cpu(Pin ++ Args, (Seconds + 60) * 1000) of
        {0, Out, Ticks} -> bench_wrk:with_ticks(summarize_runs(Out), Ticks);
        {S, Out, _} -> {error, {h2load_exit, S, lists:sublist(Out, 600)}}
    end;
run(Sc, Url, #{seconds := Seconds, clients := Clients}, Pin, WorkDir) ->
    Log = filename:join(WorkDir, "h2load.log"),
    ok = filelib:ensure_dir(Log),
    _ = file:delete(Log),
    Streams = maps:get(streams, Sc, 1),
    Args = ["-t1", "-c" ++ integer_to_list(Clients), "-m" ++ integer_to_list(Streams),
            "-D", integer_to_list(Seconds), "--log-file", Log]
        ++ case maps:get(h1, Sc, false) of
               true -> ["--h1"];
               false -> []
           end
        ++ lists:append([["-H", binary_to_list(<<K/binary, ": ", V/binary>>)]
                         || {K, V} <- maps:get(headers, Sc)])
        ++ body_args(Sc, WorkDir) ++ [Url],
    case bench_proc:exec_cpu(Pin ++ [os:find_executable("h2load") | Args], (Seconds + 60) * 1000) of
        {0, Out, Ticks} -> bench_wrk:with_ticks(summarize(Out, Log, Seconds), Ticks);
        {S, Out, _} -> {error, {h2load_exit, S, lists:sublist(Out, 600)}}
    end.

body_args(#{body := <<>>}, _) -> [];
body_args(#{body := Body}, WorkDir) ->
    F = filename:join(WorkDir, "h2load.body"),
    ok = file:write_file(F, case Body of
                                {rep, Line, N} -> binary:copy(Line, N);
                                B -> B
                            end),
    ["-d", F].

summarize(Out, Log, Seconds) ->
    Dur = case re:run(Out, "finished in ([0-9.]+)(m?s)", [{capture, all_but_first, list}]) of
              {match, [T, "s"]} -> round(list_to_float(dot(T)) * 1.0e6);
              {match, [T, "ms"]} -> round(list_to_float(dot(T)) * 1.0e3);
              _ -> Seconds * 1000000
          end,
    Count = fun(Re) -> case re:run(Out, Re, [{capture, all_but_first, list}]) of
                           {match, [N]} -> list_to_integer(N);
                           _ -> 0
                       end
            end,
    {ok, B} = file:read_file(Log),
    Rows = [binary:split(L, <<"\t">>, [global]) || L <- binary:split(B, <<"\n">>, [global]), L =/= <<>>],
    Lat = lists:sort([binary_to_integer(D) || [_, _, D | _] <- Rows]),
    Bad = length([x || [_, S | _] <- Rows, binary_to_integer(S) >= 400]),
    N = length(Lat),
    Pct = fun(_) when N =:= 0 -> 0;
             (Q) -> lists:nth(max(1, min(N, round(Q * N))), Lat)
          end,
    {ok, #{requests => N, duration_us => Dur, bytes => 0,
           connect => 0, read => Count("([0-9]+) failed"), write => Count("([0-9]+) errored"),
           timeout => Count("([0-9]+) timeout"), status => Bad,
           p50 => Pct(0.5), p90 => Pct(0.9), p99 => Pct(0.99), p999 => Pct(0.999),
           max => case Lat of [] -> 0; _ -> lists:last(Lat) end,
           mean => case N of 0 -> 0.0; _ -> lists:sum(Lat) / N end}}.

%% The sum of the runs of a TLS loop (see the header).
summarize_runs(Out) ->
    All = fun(Re) -> case re:run(Out, Re, [global, {capture, all_but_first, list}]) of
                         {match, Ms} -> Ms;
                         nomatch -> []
                     end
          end,
    Dur = lists:sum([us(T, U) || [T, U] <- All("finished in ([0-9.]+)(us|ms|s),")]),
    Reqs = All("requests: ([0-9]+) total, ([0-9]+) started, ([0-9]+) done, ([0-9]+) succeeded, "
               "([0-9]+) failed, ([0-9]+) errored, ([0-9]+) timeout"),
    Sum = fun(I) -> lists:sum([list_to_integer(lists:nth(I, R)) || R <- Reqs]) end,
    Bad = lists:sum([list_to_integer(A) + list_to_integer(B)
                     || [A, B] <- All("status codes: [0-9]+ 2xx, [0-9]+ 3xx, ([0-9]+) 4xx, ([0-9]+) 5xx")]),
    Ttfb = [{us(Max, U2), us(Mean, U3)}
            || [_, _, Max, U2, Mean, U3] <- All("time to 1st byte: +([0-9.]+)(us|ms|s) +([0-9.]+)(us|ms|s) "
                                                 "+([0-9.]+)(us|ms|s)")],
    N = Sum(4),
    case Reqs of
        [] -> {error, {no_h2load_result, lists:sublist(Out, 600)}};
        _ -> {ok, #{requests => N, duration_us => max(1, round(Dur)), bytes => 0,
                    connect => 0, read => Sum(5), write => Sum(6), timeout => Sum(7),
                    status => Bad, p50 => -1, p90 => -1, p99 => -1, p999 => -1,
                    max => round(lists:max([0 | [M || {M, _} <- Ttfb]])),
                    mean => case Ttfb of
                                [] -> 0.0;
                                _ -> lists:sum([Mn || {_, Mn} <- Ttfb]) / length(Ttfb)
                            end,
                    runs => length(Reqs)}}
    end.

us(T, "us") -> list_to_float(dot(T));
us(T, "ms") -> list_to_float(dot(T)) * 1.0e3;
us(T, "s") -> list_to_float(dot(T)) * 1.0e6.

dot(T) ->
    case lists:member($., T) of
        true -> T;
        false -> T ++ ".0"
    end.

%% @doc The h2 parity check: status and body through curl, with prior
%% knowledge, or over TLS 1.3 with ALPN h2 for the TLS scenarios (the
%% answer must come over HTTP/2).
-spec check(map(), inet:port_number()) -> ok | {error, string()}.
check(Sc = #{method := Method, path := Path, headers := Hs, body := Body, expect := E}, Port) ->
    case os:find_executable("curl") of
        false ->
            {error, "curl is needed for the HTTP/2 parity check"};
        Curl ->
            Tmp = filename:join(filename:basedir(user_cache, "falco-bench"), "h2check"),
            ok = filelib:ensure_dir(Tmp),
            Data = case Body of
                       <<>> -> [];
                       _ -> ok = file:write_file(Tmp ++ ".in", case Body of
                                                                   {rep, L, N} -> binary:copy(L, N);
                                                                   Bin -> Bin
                                                               end),
                            ["--data-binary", "@" ++ Tmp ++ ".in"]
                   end,
            Mode = case maps:get(tls, Sc, false) of
                       true -> ["-k", "--http2", "--tlsv1.3", "--tls13-ciphers", bench_tls:client_suite()];
                       false -> ["--http2-prior-knowledge"]
                   end,
            Args = ["-s" | Mode] ++ ["-o", Tmp, "-w", "%{http_code} %{http_version}",
                                     "-X", string:uppercase(atom_to_list(Method))]
                ++ lists:append([["-H", binary_to_list(<<K/binary, ": ", V/binary>>)] || {K, V} <- Hs])
                ++ Data ++ [url(Sc, Port, Path)],
            case bench_proc:exec([Curl | Args], 30000) of
                {0, Code} ->
                    {ok, Got} = file:read_file(Tmp),
                    Want = maps:get(body, E),
                    [StatusS, Version] = string:lexemes(string:trim(Code), " "),
                    Status = list_to_integer(StatusS),
                    if
                        Version =/= "2" ->
                            {error, io_lib:format("answered over HTTP/~s, not HTTP/2", [Version])};
                        Status =/= map_get(status, E) ->
                            {error, io_lib:format("h2 status ~b, expected ~b", [Status, map_get(status, E)])};
                        Got =/= Want, not is_map_key(encoding, E) ->
                            {error, "h2 body differs"};
                        true ->
                            ok
                    end;
                {S, Out} ->
                    {error, io_lib:format("curl exit ~p: ~s", [S, Out])}
            end
    end.

%% @doc The URL of a scenario on Port: https for the TLS scenarios.
-spec url(map(), inet:port_number(), string()) -> string().
url(Sc, Port, Path) ->
    Scheme = case maps:get(tls, Sc, false) of
                 true -> "https";
                 false -> "http"
             end,
    Scheme ++ "://127.0.0.1:" ++ integer_to_list(Port) ++ Path.

%% @doc h2load's version, or "absent".
-spec version() -> string().
version() ->
    case os:find_executable("h2load") of
        false -> "absent";
        H ->
            {_, Out} = bench_proc:exec([H, "--version"], 5000),
            string:trim(hd(string:split(Out, "\n")))
    end.
