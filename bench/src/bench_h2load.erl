%% bench_h2load: drives h2load (nghttp2) for `--protocol h2': cleartext
%% HTTP/2 with prior knowledge, one thread pinned to the load core. Every
%% request's latency comes from h2load's --log-file, so the percentiles are
%% exact; the result has the same keys as bench/lua/report.lua's line. Also
%% the h2 parity check, through curl --http2-prior-knowledge.
-module(bench_h2load).

-export([run/5, check/2, version/0]).

%% @doc Runs h2load for Seconds against Url with the scenario's request.
-spec run(map(), string(), map(), [string()], file:filename()) -> {ok, map()} | {error, term()}.
run(Sc, Url, #{seconds := Seconds, clients := Clients}, Pin, WorkDir) ->
    Log = filename:join(WorkDir, "h2load.log"),
    ok = filelib:ensure_dir(Log),
    _ = file:delete(Log),
    Streams = maps:get(streams, Sc, 1),
    Args = ["-t1", "-c" ++ integer_to_list(Clients), "-m" ++ integer_to_list(Streams),
            "-D", integer_to_list(Seconds), "--log-file", Log]
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

dot(T) ->
    case lists:member($., T) of
        true -> T;
        false -> T ++ ".0"
    end.

%% @doc The h2 parity check: status and body through curl with prior knowledge.
-spec check(map(), inet:port_number()) -> ok | {error, string()}.
check(#{method := Method, path := Path, headers := Hs, body := Body, expect := E}, Port) ->
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
            Args = ["-s", "--http2-prior-knowledge", "-o", Tmp, "-w", "%{http_code}",
                    "-X", string:uppercase(atom_to_list(Method))]
                ++ lists:append([["-H", binary_to_list(<<K/binary, ": ", V/binary>>)] || {K, V} <- Hs])
                ++ Data ++ ["http://127.0.0.1:" ++ integer_to_list(Port) ++ Path],
            case bench_proc:exec([Curl | Args], 30000) of
                {0, Code} ->
                    {ok, Got} = file:read_file(Tmp),
                    Want = maps:get(body, E),
                    Status = list_to_integer(string:trim(Code)),
                    if
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

%% @doc h2load's version, or "absent".
-spec version() -> string().
version() ->
    case os:find_executable("h2load") of
        false -> "absent";
        H ->
            {_, Out} = bench_proc:exec([H, "--version"], 5000),
            string:trim(hd(string:split(Out, "\n")))
    end.
