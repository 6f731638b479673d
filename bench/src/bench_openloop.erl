%% bench_openloop: `bench/run --open-loop'. After the closed-loop matrix,
%% drives each server at fixed request rates with oha, whose
%% --latency-correction counts the time a request should have been sent
%% rather than when it could be (coordinated omission), and records the
%% corrected p50/p99/p99.9 and the rate achieved. Two sets of rates: 50,
%% 75, 90 and 95 % of the server's own closed-loop peak (how it behaves
%% near its own limit), and the common rates, 50 and 90 % of the lowest
%% peak among the servers of the run, the same for every server (the same
%% load for all). Each rate is run `--open-loop-runs' times (default: --runs),
%% the servers interleaved (run 1 of every server, then run 2, ...; each run
%% starts the server afresh), and the report gives the median of each
%% figure with the min-max of p99: one run per rate made the ranking of the
%% tails a coin toss (falco against elli at json's common 90 % rate, three
%% back-to-back runs each, 2026-11-28: p99 1.53/1.37/2.08 ms against
%% 1.71/2.76/1.71 ms). oha comes from the PATH or is built once with cargo
%% into _build/bench/tools (minutes, the first time only).
-module(bench_openloop).

-export([run/2, scenarios/0, label/2, oha/1, parse/1, request_args/1, combine/1]).

-define(FRACTIONS, [0.5, 0.75, 0.9, 0.95]).
%% of the lowest peak of the run's servers, for every server
-define(COMMON, [0.5, 0.9]).
-define(LOAD_CORE, 0).

%% @doc The scenarios the open loop covers (single static requests).
-spec scenarios() -> [atom()].
scenarios() -> [hello, json, echo, headers_heavy, qs_xml, large_response].

%% @doc Returns `{ok, Rows}' or `{skipped, Why}'.
-spec run(map(), map()) -> {ok, [map()]} | {skipped, string()}.
run(#{results := Results, servers := Servers, scenarios := Scs}, Ctx) ->
    case oha(Ctx) of
        {skip, Why} ->
            io:format("bench: open loop skipped: ~s~n", [Why]),
            {skipped, Why};
        {ok, Oha} ->
            Chosen = [Sc || Sc = #{name := N} <- Scs, lists:member(N, scenarios())],
            Rows = lists:append([scenario(Sc, Results, Servers, Oha, Ctx) || Sc <- Chosen]),
            {ok, Rows}
    end.

scenario(Sc = #{name := N}, Results, Servers, Oha, Ctx) ->
    Peaks = [{Sv, Peak} || Sv <- Servers,
                           #{rps := #{median := Peak}} <- [bench_report:cells(Results, Sv, N)]],
    Lowest = lists:min([infinity | [P || {_, P} <- Peaks]]),
    Targets = fun(Peak) -> [{own, F, max(1, round(F * Peak))} || F <- ?FRACTIONS]
                               ++ [{common, F, max(1, round(F * Lowest))} || F <- ?COMMON]
              end,
    Runs = maps:get(open_loop_runs, Ctx, 1),
    combine(lists:append([rates(Sc, Sv, Targets(Peak), Oha, Ctx)
                          || _ <- lists:seq(1, Runs), {Sv, Peak} <- Peaks])).

%% @doc One row per scenario, server and rate from the rows of its runs:
%% the medians of the rate achieved, p50, p99, p99.9 and the load core's
%% share, p99's min and max (`p99_min', `p99_max'), the errors and non-2xx
%% answers summed, `runs' (those that ran) and `failed' (those that did
%% not: oha failed, or the server did not start). A rate none of whose
%% runs ran keeps the first failure.
-spec combine([map()]) -> [map()].
combine(Rows) ->
    Key = fun(R) -> {maps:get(scenario, R), maps:get(server, R), maps:get(kind, R, none),
                     maps:get(fraction, R, none)}
          end,
    [merge([R || R <- Rows, Key(R) =:= K]) || K <- lists:usort([Key(R) || R <- Rows])].

merge(Group = [First | _]) ->
    case [R || R = #{status := ok} <- Group] of
        [] ->
            First#{runs => 0, failed => length(Group)};
        Ok = [Row | _] ->
            Sum = fun(K) -> lists:sum([maps:get(K, R) || R <- Ok]) end,
            Median = fun(K) -> case bench_stats:summary([V || #{K := V} <- Ok, is_number(V)]) of
                                   undefined -> undefined;
                                   #{median := M} -> M
                               end
                     end,
            {P99Min, P99Max} = case bench_stats:summary([V || #{p99 := V} <- Ok, is_number(V)]) of
                                   undefined -> {undefined, undefined};
                                   #{min := Min, max := Max} -> {Min, Max}
                               end,
            Row#{achieved => Median(achieved), p50 => Median(p50), p99 => Median(p99),
                 p999 => Median(p999), load_busy => Median(load_busy),
                 p99_min => P99Min, p99_max => P99Max,
                 errors => Sum(errors), non2xx => Sum(non2xx),
                 runs => length(Ok), failed => length(Group) - length(Ok)}
    end.

rates(Sc = #{name := Name, path := Path}, Sv, Targets, Oha, Ctx) ->
    Port = 20000 + erlang:unique_integer([positive]) rem 30000,
    case bench_servers:start(Sv, Name, Port, Ctx) of
        {error, Why} ->
            [#{scenario => Name, server => Sv, status => {error, io_lib:format("~0p", [Why])}}];
        {ok, H} ->
            try
                ok = bench_check:check(Sc, Port),
                Url = "http://127.0.0.1:" ++ integer_to_list(Port) ++ Path,
                ok = warm_up(Sc, Targets, Oha, Url, Ctx),
                [rate(Sc, Sv, T, Oha, Url, Ctx) || T <- Targets]
            after
                bench_servers:stop(H)
            end
    end.

%% A server just started answers its first second slowly (connections
%% opened, code loaded): without a warm-up the first rate measured, 50 %
%% of the server's own peak, had a worse p99 than 75 % (falco's echo
%% 12.10 against 6.10 ms, elli's hello 12.5 ms at 50 % in a 1 s run,
%% 2026-11-28). So each fresh server first gets --warmup seconds at the
%% lowest rate, not measured.
warm_up(_, _, _, _, #{warmup := 0}) ->
    ok;
warm_up(Sc, Targets, Oha, Url, Ctx = #{warmup := Secs}) ->
    Lowest = lists:min([T || {_, _, T} <- Targets]),
    _ = bench_proc:exec(oha_args(Sc, Secs, Lowest, Oha, Url, Ctx), (Secs + 60) * 1000),
    ok.

oha_args(Sc, Secs, Target, Oha, Url, Ctx) ->
    Clients = case maps:get(clients, Sc) of
                  undefined -> maps:get(clients, Ctx);
                  C -> C
              end,
    maps:get(load_pin, Ctx) ++
        [Oha, "-z", integer_to_list(Secs) ++ "s", "-q", integer_to_list(Target),
         "-c", integer_to_list(Clients), "--latency-correction", "--no-tui",
         "--output-format", "json" | request_args(Sc)] ++ [Url].

rate(Sc = #{name := Name}, Sv, {Kind, F, Target}, Oha, Url, Ctx) ->
    Secs = maps:get(duration, Ctx),
    Args = oha_args(Sc, Secs, Target, Oha, Url, Ctx),
    Row = #{scenario => Name, server => Sv, kind => Kind, fraction => F, target => Target},
    Core0 = bench_proc:core_ticks(?LOAD_CORE),
    Exec = bench_proc:exec(Args, (Secs + 60) * 1000),
    LoadBusy = busy(Core0, bench_proc:core_ticks(?LOAD_CORE)),
    R = case Exec of
            {0, Out} ->
                try parse(Out) of
                    M -> maps:merge(Row#{status => ok, load_busy => LoadBusy}, M)
                catch _:_ -> Row#{status => {error, "unreadable oha output"}}
                end;
            {S, Out} ->
                Row#{status => {error, io_lib:format("oha exit ~p: ~s", [S, lists:sublist(Out, 300)])}}
        end,
    case R of
        #{status := ok, achieved := A, p99 := P99} ->
            io:format("[open loop] ~-14s ~-8s ~ts = ~s req/s: achieved ~s, "
                      "corrected p99 ~ts, load core ~s busy~n",
                      [Name, Sv, label(Kind, F), bench_report:fmt_rps(Target),
                       bench_report:fmt_rps(A), bench_report:fmt_us(P99),
                       case maps:get(load_busy, R) of
                           undefined -> "?";
                           LB -> integer_to_list(round(LB)) ++ " %"
                       end]);
        #{status := {error, Why}} ->
            io:format("[open loop] ~-14s ~-8s ~ts: FAILED ~s~n", [Name, Sv, label(Kind, F), Why])
    end,
    R.

%% @doc How a rate was chosen, for the report: "90 % of own peak" or
%% "common: 50 % of lowest peak".
-spec label(own | common, float()) -> string().
label(own, F) -> io_lib:format("~b % of own peak", [round(F * 100)]);
label(common, F) -> io_lib:format("common: ~b % of lowest peak", [round(F * 100)]).

busy({B0, T0}, {B1, T1}) when T1 > T0 -> (B1 - B0) / (T1 - T0) * 100;
busy(_, _) -> undefined.

%% @doc oha's arguments for a scenario's request.
-spec request_args(map()) -> [string()].
request_args(#{method := M, headers := Hs, body := Body}) ->
    ["-m", string:uppercase(atom_to_list(M))] ++
        lists:append([["-H", binary_to_list(<<K/binary, ": ", V/binary>>)] || {K, V} <- Hs]) ++
        case Body of
            <<>> -> [];
            B when is_binary(B) -> ["-d", binary_to_list(B)];
            _ -> []
        end.

%% @doc oha's JSON summary: seconds -> microseconds (bench_survey too).
-spec parse(string()) -> map().
parse(Out) ->
    Start = string:find(Out, "{"),
    J = bench_json:decode(unicode:characters_to_binary(string:trim(Start))),
    Summary = maps:get(<<"summary">>, J),
    Pct = maps:get(<<"latencyPercentiles">>, J),
    Us = fun(K) -> case maps:get(K, Pct, null) of
                       null -> undefined;
                       V -> V * 1.0e6
                   end
         end,
    Codes = maps:get(<<"statusCodeDistribution">>, J, #{}),
    %% Requests still in flight when -z runs out are "aborted due to
    %% deadline": an artefact of stopping, not an error of the server.
    Errors = lists:sum([N || {K, N} <- maps:to_list(maps:get(<<"errorDistribution">>, J, #{})),
                             is_integer(N), K =/= <<"aborted due to deadline">>]),
    Non2xx = lists:sum([N || {C, N} <- maps:to_list(Codes), binary:first(C) =/= $2]),
    #{achieved => maps:get(<<"requestsPerSec">>, Summary),
      p50 => Us(<<"p50">>), p99 => Us(<<"p99">>), p999 => Us(<<"p99.9">>),
      errors => Errors, non2xx => Non2xx}.

%% @doc oha on the PATH, in _build/bench/tools, or built there with cargo.
-spec oha(map()) -> {ok, string()} | {skip, string()}.
oha(Ctx) ->
    Tools = filename:join(maps:get(work, Ctx), "tools"),
    Local = filename:join([Tools, "bin", "oha"]),
    case {os:find_executable("oha"), filelib:is_regular(Local)} of
        {Exe, _} when Exe =/= false -> {ok, Exe};
        {false, true} -> {ok, Local};
        {false, false} ->
            Cargo = os:find_executable("cargo", os:getenv("PATH", "") ++ ":" ++
                                           filename:join(os:getenv("HOME", "/"), ".cargo/bin")),
            case Cargo of
                false ->
                    {skip, "oha is not installed and there is no cargo to build it"};
                _ ->
                    io:format("bench: building oha with cargo into ~s (several minutes, once)~n",
                              [Tools]),
                    case bench_proc:exec([Cargo, "install", "oha", "--locked", "--root", Tools],
                                         3600 * 1000) of
                        {0, _} -> {ok, Local};
                        {_, Out} -> {skip, "cargo install oha failed: " ++
                                           string:slice(Out, max(0, string:length(Out) - 300))}
                    end
            end
    end.
