%% bench_profile: `bench/run --profile'. Runs falco alone under eprof
%% (every process of its BEAM and every process they spawn) for each chosen
%% scenario (default: hello), with wrk (h2load with `--protocol h2'; bench/wsload
%% for ws_echo and ws_large; ws_idle has no load to profile) driving the usual
%% load, and writes
%% the hotspot table (functions by share of profiled time) to profile.md.
%% eprof slows the server many times over: read the shares, not the req/s.
-module(bench_profile).

-export([run/2, parse/1]).

-define(TOP, 30).

-spec run([map()], map()) -> 0 | 1.
run(Scenarios0, Ctx = #{paths := Paths}) ->
    Scenarios = case maps:get(scenarios, Ctx) of
                    default -> [bench_scenarios:find(hello)];
                    _ -> Scenarios0
                end,
    case maps:is_key(falco, Paths) of
        false ->
            io:format(standard_error, "bench: --profile needs falco (is it compiled?)~n", []),
            1;
        true ->
            Sections = [profile(Sc, Ctx) || Sc <- Scenarios],
            Out = filename:join(maps:get(out, Ctx), "profile.md"),
            ok = filelib:ensure_dir(Out),
            ok = file:write_file(Out, unicode:characters_to_binary(
                                        ["# falco hotspots (eprof)\n\n",
                                         "Written by `bench/run --profile`; commit ",
                                         bench_report:commit(maps:get(root, Ctx)), ". ",
                                         "Time is the share of profiled time spent in each "
                                         "function itself (not its callees), over every "
                                         "process of the server BEAM.\n",
                                         [case S of {error, T} -> T; _ -> S end
                                          || S <- Sections]])),
            io:format("bench: wrote ~s~n", [Out]),
            case [x || {error, _} <- Sections] of
                [] -> 0;
                _ -> 1
            end
    end.

profile(#{name := Name, ws := #{mode := idle}}, _Ctx) ->
    io_lib:format("\n## ~s\n\nNot profiled: idle connections do no work.\n", [Name]);
profile(Sc = #{name := Name, path := Path}, Ctx) ->
    Port = 20000 + erlang:unique_integer([positive]) rem 20000,
    io:format("bench: profiling falco on ~s~n", [Name]),
    case bench_servers:start(falco, Name, Port, Ctx) of
        {error, Why} ->
            {error, io_lib:format("\n## ~s\n\nfalco did not start: ~0p\n", [Name, Why])};
        {ok, H} ->
            try
                Clients = case maps:get(clients, Sc) of
                              undefined -> maps:get(clients, Ctx);
                              C -> C
                          end,
                Run = load(Sc, Port, Path, Ctx),
                _ = Run(#{seconds => max(1, maps:get(warmup, Ctx)), clients => Clients}),
                File = filename:join([maps:get(work, Ctx), "profile", atom_to_list(Name) ++ ".eprof"]),
                ok = filelib:ensure_dir(File),
                _ = file:delete(File),
                {ok, <<"ok">>} = bench_servers:command(H, "profile_start"),
                {ok, W} = Run(#{seconds => maps:get(duration, Ctx), clients => Clients}),
                {ok, <<"ok">>} = bench_servers:command(H, ["profile_stop ", File]),
                Rows = parse(File),
                #{requests := N, duration_us := D} = W,
                ["\n## ", atom_to_list(Name), case maps:get(protocol, Ctx, h1) of
                                                   h2 -> " (HTTP/2)";
                                                   h1 -> ""
                                               end, "\n\n",
                 io_lib:format("~b ~s in ~.1f s under eprof (~s ~s/s); ~b functions; "
                               "top ~b by time:\n\n",
                               [N, unit(Sc), D / 1.0e6, bench_report:fmt_rps(N / (D / 1.0e6)),
                                unit(Sc), length(Rows), ?TOP]),
                 "| function | calls | % time | µs | µs/call | calls/", unit1(Sc), " |\n"
                 "|---|---:|---:|---:|---:|---:|\n",
                 [io_lib:format("| `~s` | ~b | ~.2f | ~b | ~.2f | ~.2f |\n",
                                [F, Calls, Pct, Us, PerCall, Calls / max(N, 1)])
                  || {F, Calls, Pct, Us, PerCall} <- lists:sublist(Rows, ?TOP)]]
            after
                bench_servers:stop(H)
            end
    end.

%% The parity check, then a function running one load of the scenario:
%% h2load with `--protocol h2', as the matrix drives it.
load(Sc = #{driver := wsload}, Port, _Path, Ctx) ->
    ok = bench_ws:check(Sc, Port, Ctx),
    fun(Opts) -> bench_ws:run(Sc, Port, Opts, Ctx) end;
load(Sc, Port, Path, Ctx = #{protocol := h2}) ->
    ok = bench_h2load:check(Sc, Port),
    Url = bench_h2load:url(Sc, Port, Path),
    fun(Opts) ->
            bench_h2load:run(Sc, Url, Opts, maps:get(load_pin, Ctx),
                             filename:join(maps:get(work, Ctx), "h2"))
    end;
load(Sc, Port, Path, Ctx) ->
    ok = bench_check:check(Sc, Port),
    Script = bench_wrk:script(Sc, filename:join(maps:get(bench_dir, Ctx), "lua"),
                              filename:join(maps:get(work, Ctx), "lua")),
    Url = "http://127.0.0.1:" ++ integer_to_list(Port) ++ Path,
    fun(Opts) -> bench_wrk:run(Script, Url, Opts, maps:get(load_pin, Ctx)) end.

unit(#{driver := wsload}) -> "messages";
unit(_) -> "requests".

unit1(#{driver := wsload}) -> "message";
unit1(_) -> "request".

%% @doc eprof's total analysis: "FUNCTION CALLS % TIME [uS / CALLS]" rows,
%% most time first (bench_h3's profile reads it too).
-spec parse(file:filename()) -> [{string(), integer(), float(), integer(), float()}].
parse(File) ->
    {ok, B} = file:read_file(File),
    Rows = [Row || L <- string:split(B, "\n", all), Row <- [row(L)], Row =/= skip],
    lists:reverse(lists:keysort(4, Rows)).

row(L) ->
    case re:run(L, "^(\\S+)\\s+(\\d+)\\s+([0-9.]+)\\s+(\\d+)\\s+\\[\\s*([0-9.]+)\\]",
                [{capture, all_but_first, list}]) of
        {match, [F, C, P, T, U]} when F =/= "Total:" ->
            {F, list_to_integer(C), num(P), list_to_integer(T), num(U)};
        _ ->
            skip
    end.

num(S) ->
    case string:to_float(S) of
        {F, ""} -> F;
        _ -> float(list_to_integer(S))
    end.
