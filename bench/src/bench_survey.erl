%% bench_survey: `bench/run --survey', the workload of the seed survey
%% (seeds 001 and 002): many connections, each sending about one request
%% per second to a handler that sleeps 100 ms and answers 1 KB (GET
%% /survey), the total rate ramped step by step past saturation. Each
%% step is one oha run at a fixed rate over as many connections as
%% requests per second (at most ?MAX_CONNS: client and server share the
%% file descriptor limit of one machine), latency corrected for
%% coordinated omission. A step is held when the rate was reached (95 %),
%% p99 stayed under 1 s and no request failed; a server's ramp stops
%% after two steps in a row that were not held. Reported per server: the
%% highest rate held, the errors of the first step past it, and the
%% server's peak BEAM memory and RSS at its highest held step.
-module(bench_survey).

-export([run/2, summary/1]).

-define(RATES, [1000, 2000, 4000, 6000, 8000, 10000, 12000, 15000, 18000, 21000, 25000,
                30000, 35000, 40000, 50000]).
-define(MAX_CONNS, 8000).
-define(STEP_S, 8).
-define(HELD_P99_US, 1.0e6).
%% Of the rate asked: every request takes 100 ms, so the last tenth of a
%% second of a step is still in flight when oha stops (not counted), and
%% thousands of connections take a moment to open: a server that keeps up
%% achieves 98-99 % of it.
-define(HELD_RATE, 0.95).

%% @doc Returns `{ok, Rows}' (one per server and step) or `{skipped, Why}'.
-spec run(map(), map()) -> {ok, [map()]} | {skipped, string()}.
run(#{servers := Servers}, Ctx) ->
    case bench_openloop:oha(Ctx) of
        {skip, Why} ->
            io:format("bench: survey skipped: ~s~n", [Why]),
            {skipped, Why};
        {ok, Oha} ->
            Sc = bench_scenarios:find(survey),
            {ok, lists:append([server(Sc, Sv, Oha, Ctx) || Sv <- Servers,
                                                    bench_scenarios:unsupported(Sv, survey) =:= false])}
    end.

server(Sc, Sv, Oha, Ctx) ->
    Port = 20000 + erlang:unique_integer([positive]) rem 30000,
    %% slow_handler's fixture: the same handler process model and limits
    case bench_servers:start(Sv, slow_handler, Port, Ctx) of
        {error, Why} ->
            [#{server => Sv, status => {error, io_lib:format("~0p", [Why])}}];
        {ok, H} ->
            try bench_check:check(Sc, Port) of
                ok ->
                    Url = "http://127.0.0.1:" ++ integer_to_list(Port) ++ maps:get(path, Sc),
                    ramp(?RATES, 0, Sc, Sv, H, Oha, Url, Ctx);
                {error, Why} ->
                    [#{server => Sv, status => {error, "parity check failed: " ++
                                                    lists:flatten(Why)}}]
            after
                bench_servers:stop(H)
            end
    end.

%% Two steps in a row not held end the ramp.
ramp([], _Missed, _Sc, _Sv, _H, _Oha, _Url, _Ctx) ->
    [];
ramp(_Rates, 2, _Sc, _Sv, _H, _Oha, _Url, _Ctx) ->
    [];
ramp([Rate | Rates], Missed, Sc, Sv, H, Oha, Url, Ctx) ->
    Row = step(Rate, Sc, Sv, H, Oha, Url, Ctx),
    Next = case Row of
               #{held := true} -> 0;
               _ -> Missed + 1
           end,
    [Row | ramp(Rates, Next, Sc, Sv, H, Oha, Url, Ctx)].

step(Rate, Sc, Sv, H = #{os_pid := Pid}, Oha, Url, Ctx) ->
    Conns = min(Rate, ?MAX_CONNS),
    _ = bench_servers:command(H, "reset"),
    _ = bench_proc:reset_peak(Pid),
    Args = maps:get(load_pin, Ctx) ++
        [Oha, "-z", integer_to_list(?STEP_S) ++ "s", "-q", integer_to_list(Rate),
         "-c", integer_to_list(Conns), "--latency-correction", "--no-tui",
         "--output-format", "json" | bench_openloop:request_args(Sc)] ++ [Url],
    Row0 = #{server => Sv, rate => Rate, conns => Conns},
    Row = case bench_proc:exec(Args, (?STEP_S + 120) * 1000) of
              {0, Out} ->
                  try bench_openloop:parse(Out) of
                      M -> maps:merge(Row0#{status => ok}, M)
                  catch _:_ -> Row0#{status => {error, "unreadable oha output"}}
                  end;
              {S, Out} ->
                  Row0#{status => {error, io_lib:format("oha exit ~p: ~s",
                                                        [S, lists:sublist(Out, 300)])}}
          end,
    Mem = memory(H),
    Full = maps:merge(Row#{rss_peak_kb => bench_proc:peak_rss_kb(Pid)}, Mem),
    Held = held(Full),
    io:format("[survey] ~-8s ~6b req/s over ~5b connections: ~ts~n",
              [Sv, Rate, Conns, describe(Full, Held)]),
    Full#{held => Held}.

held(#{status := ok, rate := Rate, achieved := A, p99 := P99, errors := E, non2xx := N})
  when is_number(P99) ->
    A >= ?HELD_RATE * Rate andalso P99 < ?HELD_P99_US andalso E + N =:= 0;
held(_) ->
    false.

describe(#{status := ok, achieved := A, p99 := P99, errors := E, non2xx := N}, Held) ->
    io_lib:format("achieved ~ts, corrected p99 ~ts, ~b errors / ~b non-2xx~ts",
                  [bench_report:fmt_rps(A), bench_report:fmt_us(P99), E, N,
                   case Held of
                       true -> "";
                       false -> " (not held)"
                   end]);
describe(#{status := {error, Why}}, _) ->
    ["FAILED ", Why].

memory(H) ->
    maps:with([beam_peak], bench_servers:beam_stats(H)).

%% @doc Per server: the highest rate held (`best'), the first step past it
%% (`past': its failed requests and non-2xx answers), and the step at the
%% highest rate every server held (`common': memory at one load);
%% `undefined' where there is none.
-spec summary([map()]) -> [map()].
summary(Rows) ->
    Servers = lists:usort([Sv || #{server := Sv} <- Rows]),
    S = summary(Rows, Servers),
    %% the highest rate every server held: memory compared at one load
    Common = case [R || #{best := #{rate := R}} <- S] of
                 Rates when length(Rates) =:= length(S) -> lists:min(Rates);
                 _ -> undefined
             end,
    [X#{common => case [R || R = #{server := Sv, rate := Rt, held := true} <- Rows,
                             Sv =:= maps:get(server, X), Rt =:= Common] of
                      [At | _] -> At;
                      [] -> undefined
                  end} || X <- S].

summary(Rows, Servers) ->
    [begin
         Mine = lists:sort(fun(A, B) -> maps:get(rate, A, 0) =< maps:get(rate, B, 0) end,
                           [R || R = #{server := S} <- Rows, S =:= Sv]),
         Held = [R || R = #{held := true} <- Mine],
         Best = case Held of
                    [] -> undefined;
                    _ -> lists:last(Held)
                end,
         Past = case Best of
                    undefined -> Mine;
                    #{rate := BR} -> [R || R = #{rate := Rt} <- Mine, Rt > BR]
                end,
         #{server => Sv, best => Best,
           past => case Past of
                       [] -> undefined;
                       [P | _] -> P
                   end}
     end || Sv <- Servers].
