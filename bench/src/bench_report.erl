%% bench_report: writes results.md (header with machine, versions, commit
%% and method; tables of req/s, latency, CPU per request, memory, errors
%% and connections; where falco does not lead) plus results.csv with every
%% run, and asks bench_svg for the charts.
-module(bench_report).

-export([write/1, fmt_rps/1, fmt_us/1, commit/1, cells/3]).

%% The share of the load core the load generator must use for a cell to be
%% marked as possibly paced by it rather than by the server.
-define(BOUND, 90).

-spec write(map()) -> [file:filename()].
write(Report = #{ctx := Ctx}) ->
    Out = maps:get(out, Ctx),
    ok = filelib:ensure_dir(filename:join(Out, "x")),
    Sfx = suffix(Report),
    Md = filename:join(Out, "results" ++ Sfx ++ ".md"),
    Csv = filename:join(Out, "results" ++ Sfx ++ ".csv"),
    Clean = redactor(Ctx),
    ok = file:write_file(Md, Clean(unicode:characters_to_binary(markdown(Report)))),
    ok = file:write_file(Csv, Clean(iolist_to_binary(csv(Report)))),
    %% The charts are of the HTTP scenarios (req/s and request latency).
    {_, Http} = split(maps:get(scenarios, Report)),
    [Md, Csv | bench_svg:write(Report#{scenarios := Http}, Out, Sfx, Clean)]
        ++ bench_svg:open_loop(Report, Out, Sfx, Clean).

idle(#{ws := #{mode := idle}}) -> true;
idle(_) -> false.

%% The WebSocket scenarios and the others.
split(Scs) ->
    lists:partition(fun(#{name := N}) -> bench_scenarios:ws(N) end, Scs).

%% Results get committed: no path of this machine goes into them. The
%% repository becomes ".", the --peer-libs directory "PEER_LIBS", the home
%% directory "~".
redactor(Ctx) ->
    Pairs = [{P, R} || {P, R} <- [{maps:get(peer_libs, Ctx), "PEER_LIBS"},
                                  {maps:get(root, Ctx), "."},
                                  {os:getenv("HOME"), "~"}],
                       is_list(P), length(P) > 1],
    fun(Bin) ->
            lists:foldl(fun({P, R}, B) -> binary:replace(B, list_to_binary(P), list_to_binary(R),
                                                          [global])
                        end, Bin, Pairs)
    end.

%% Output names: results.md etc. for HTTP/1.1, results-h2.md etc. for HTTP/2.
%% Where the latency figures come from, per protocol.
latency_source(#{ctx := #{protocol := h1}}) ->
    "wrk's latency histogram (the in-tree generator's for head)";
latency_source(#{ctx := #{protocol := h2}}) ->
    "h2load's per-request latencies".

suffix(#{ctx := #{protocol := h1}}) -> "";
suffix(#{ctx := #{protocol := P}}) -> "-" ++ atom_to_list(P).

%% ---------------------------------------------------------------- markdown

markdown(R = #{servers := Servers, scenarios := All}) ->
    {Ws, Scs} = split(All),
    [header(R),
     case Scs of
         [] -> [];
         _ -> http_tables(R#{scenarios := Scs}, Servers, Scs)
     end,
     ws_tables(R, Servers, Ws),
     open_loop(R),
     survey(R),
     not_leading(R),
     over_h1(R),
     scenario_table(R),
     failures(R)].

http_tables(R, Servers, Scs) ->
    ["\n![req/s per scenario and server](throughput", suffix(R), ".svg)\n\n",
     "![latency p50 and p99 per scenario and server](latency", suffix(R), ".svg)\n\n",
     "## Throughput, req/s (higher is better)\n\n",
     "Median of the runs, min–max in brackets. **Bold**: the row's winner, named only when "
     "its margin over the runner-up exceeds the larger run-to-run spread ((max − min) / "
     "median) of the two, and 3 %.\n\n",
     table(R, Servers, Scs, rps, high, fun rps_cell/1),
     "\n## Latency p50 / p99 / max (lower is better)\n\n",
     "From ", latency_source(R), ", medians over the runs (closed loop: coordinated "
     "omission hides part of the tail, see bench/README.md). Bold on p99 by the same rule.\n\n",
     table(R, Servers, Scs, p99, low, fun lat_cell/1),
     "\n## Server CPU time per request (lower is better)\n\n",
     "utime + stime of the server process (/proc/PID/stat) over the measured window, "
     "divided by the requests completed.\n\n",
     table(R, Servers, Scs, cpu_us, low, fun cpu_cell/1),
     "\n## Memory: peak RSS / peak BEAM memory (MB)\n\n",
     "Peak RSS is VmHWM, reset after the warm-up; BEAM memory is erlang:memory(total) "
     "sampled every 100 ms (nginx has none).\n\n",
     table(R, Servers, Scs, none, none, fun mem_cell/1),
     "\n## Errors, connections, disturbance: socket errors / status ≥ 400 / connections accepted / other load on the server core / on the load core / load generator busy\n\n",
     "Connections accepted by the kernel (Tcp PassiveOpens) during the measured window; "
     "keep-alive scenarios open about as many as there are clients (the counter is "
     "system-wide: other programs' connections count too). Other load: the share "
     "of the server core's time not charged to the server process, and of the load "
     "core's time not charged to the load generator (other programs, and kernel network "
     "work); a high value means the run was disturbed. Load generator busy: the share of "
     "the load core's time the load generator itself used; at ", integer_to_list(?BOUND), " % or more "
     "(marked ⚠) it, not the server, may have set the pace, and the row compares "
     "servers by what they leave the generator to do as much as by their own speed "
     "(the CPU time per request above still compares the servers).\n\n",
     table(R, Servers, Scs, none, none, fun err_cell/1)].

ws_tables(_, _, []) ->
    [];
ws_tables(R, Servers, Ws) ->
    {Idle, Echo} = lists:partition(fun idle/1, Ws),
    ["\n## WebSocket\n\n",
     "Driven by bench/wsload (Go's standard library only: its own handshake, masking and "
     "framing), pinned to the load core with GOMAXPROCS=1; it checks every echo byte for "
     "byte, so a server that answers wrong is not measured. Compression off, the same "
     "frame limit and no idle timeout on every server; see bench/README.md.\n",
     case Echo of
         [] -> [];
         _ ->
             ["\n### Messages per second (higher is better)\n\n",
              "Echoes completed / measured seconds; each connection sends its next message "
              "when the echo of the last one is back (closed loop). Bold: the winner by the "
              "rule of the HTTP tables (its margin over the runner-up exceeds the larger "
              "run-to-run spread of the two, and 3 %).\n\n",
              table(R, Servers, Echo, rps, high, fun rps_cell/1),
              "\n### Throughput, MB/s of echoed payload (higher is better)\n\n",
              "Payload bytes echoed per second, one direction (MB = 1,048,576 bytes).\n\n",
              table(R, Servers, Echo, mbps, high, fun mbps_cell/1),
              "\n### Latency per message p50 / p99 / p99.9 / max (lower is better)\n\n",
              "The round trip of each message, from the generator's write to the whole echo "
              "read; medians over the runs. Bold on p99.\n\n",
              table(R, Servers, Echo, p99, low, fun ws_lat_cell/1),
              "\n### Server CPU time per message (lower is better)\n\n",
              table(R, Servers, Echo, cpu_us, low, fun cpu_cell/1),
              "\n### Memory: peak RSS / peak BEAM memory (MB)\n\n",
              table(R, Servers, Echo, none, none, fun mem_cell/1),
              "\n### Errors, connections, disturbance\n\n",
              "Broken connections or incomplete close handshakes / — / connections accepted / "
              "other load on the server core / on the load core / load generator busy, as in the "
              "HTTP table.\n\n",
              table(R, Servers, Echo, none, none, fun err_cell/1)]
     end,
     case Idle of
         [] -> [];
         _ ->
             ["\n### Idle connections: bytes per connection, BEAM / RSS (lower is better)\n\n",
              "The server's erlang:memory(total) and VmRSS, each after a forced GC of every "
              "process, read before the connections are opened and again once they are open "
              "and the server has rested 2 s; the difference divided by the connections. Then "
              "every connection must still echo one message. Also: the connections, the time "
              "the generator took to open them (64 handshakes in flight) and the server's "
              "CPU time per handshake, and the BEAM bytes as the connections left them "
              "(read before that last forced GC: what an idle server really holds). "
              "idle_h1 and idle_h2 are HTTP/1.1 keep-alive and h2c connections idle after "
              "one GET /hello each, idle_tls the HTTP/1.1 ones over TLS 1.3 (bench_tls's "
              "options), measured the same way, each checked with one more GET. Bold on "
              "BEAM bytes.\n\n",
              table(R, Servers, Idle, idle_beam_b, low, fun idle_cell/1)]
     end].

header(R = #{ctx := Ctx, machine := M, loadgen := Wrk, skipped := Skipped, servers := Servers}) ->
    Date = calendar:system_time_to_rfc3339(erlang:system_time(second), [{offset, "Z"}]),
    Rows = [{"date", Date},
            {"command", ["`bench/run ", lists:join(" ", maps:get(argv, Ctx, [])), "`"]},
            {"machine", io_lib:format("~s, ~b cores, ~s", [maps:get(cpu, M), maps:get(cores, M),
                                                         maps:get(memory, M)])},
            {"kernel", maps:get(kernel, M)},
            {"OTP", io_lib:format("~s (erts ~s)", [maps:get(otp, M), maps:get(erts, M)])},
            {"commit", commit(maps:get(root, Ctx))},
            {"servers", [lists:join(", ", [[atom_to_list(S), " ", versions(S, Ctx)] || S <- Servers])]},
            {"server process", ["one per server and run, ", pin_text(maps:get(pin, Ctx)),
                                "; BEAM flags `", maps:get(erl_flags, Ctx), "`"]},
            {"load generator", [Wrk, ", 1 thread, ", pin_text(maps:get(load_pin, Ctx)),
                                [["; WebSocket: bench/wsload (", os:getenv("BENCH_GO_VERSION", "go"),
                                  ", GOMAXPROCS=1), same core"]
                                 || lists:any(fun(#{name := N}) -> bench_scenarios:ws(N) end,
                                              maps:get(scenarios, R))]]},
            {"method", io_lib:format("closed loop; ~b run(s) per cell, servers interleaved; "
                                     "~bs warm-up + ~bs measured; ~b connections unless "
                                     "the scenario sets its own",
                                     [maps:get(runs, Ctx), maps:get(warmup, Ctx),
                                      maps:get(duration, Ctx), maps:get(clients, Ctx)])}]
           ++ [{"host speed", host_speed(H)} || H = #{first := B} <- [maps:get(host, R, #{})],
                                                 B =/= none]
           ++ [{"skipped", [lists:join("; ", [[atom_to_list(S), ": ", W] || {S, W} <- Skipped])]}
               || Skipped =/= []],
    ["# falco benchmark results, ", case maps:get(protocol, Ctx) of
                                         h1 -> "HTTP/1.1";
                                         h2 -> "HTTP/2 (cleartext with prior knowledge; "
                                                   "TLS 1.3 with ALPN h2 in tls_handshake)"
                                     end, "\n\n",
     "Written by bench/run; every number below was measured in the run described here.\n\n",
     "| | |\n|---|---|\n",
     [["| ", K, " | ", V, " |\n"] || {K, V} <- Rows]].

%% The runtime's floor (bench_main:host_speed/2) before and after the
%% matrix: where the host stood, to compare publications through.
host_speed(#{first := B, last := A}) ->
    ["the runtime's floor (bench_floor, no HTTP work) under this run's hello load, "
     "measured like a cell: ", floor_text(B), " before the matrix, ", floor_text(A),
     " after it. The host's speed varies from hour to hour and moves the servers' "
     "ratios too; compare publications through these figures"].

floor_text(#{status := ok, rps := Rps, cpu_us := Cpu} = M) when is_number(Cpu) ->
    [fmt_rps(Rps), " req/s at ", fmt_us(Cpu), " of CPU per request",
     case maps:get(noise, M, undefined) of
         N when is_number(N), N >= 1 -> io_lib:format(" (~b % other load on the server core)",
                                                       [round(N)]);
         _ -> ""
     end];
floor_text(#{status := {error, Why}}) ->
    ["failed (", Why, ")"];
floor_text(_) ->
    "unknown".

pin_text([]) -> "not pinned (fewer than 2 cores or no taskset)";
pin_text([_, "-c", Core]) -> ["pinned to core ", Core, " (taskset)"].

versions(S, Ctx) ->
    Dirs = maps:get(S, maps:get(paths, Ctx), []),
    Main = maps:get(S, maps:get(versions, Ctx), "?"),
    Deps = [io_lib:format("~s ~s", [A, V]) || D <- Dirs, {A, V} <- apps_in(D), A =/= S],
    case Deps of
        [] -> Main;
        _ -> [Main, " (", lists:join(", ", Deps), ")"]
    end.

apps_in(Dir) ->
    [{App, proplists:get_value(vsn, Props, "?")}
     || F <- filelib:wildcard(filename:join(Dir, "*.app")),
        {ok, [{application, App, Props}]} <- [file:consult(F)]].

%% @doc The commit of the repository at Root, with "(modified)" when the
%% work tree has changes.
-spec commit(file:filename()) -> iolist().
commit(Root) ->
    Git = fun(Args) -> string:trim(os:cmd("git -C '" ++ Root ++ "' " ++ Args ++ " 2>/dev/null")) end,
    case Git("rev-parse --short HEAD") of
        "" -> "unknown";
        C -> [C, case Git("status --porcelain --untracked-files=no") of
                     "" -> "";
                     _ -> " (modified work tree)"
                 end]
    end.

%% @doc The ok runs of one server and scenario, as a summary per metric.
-spec cells([map()], atom(), atom()) -> map() | {unsupported, string()} | none.
cells(Results, Server, Scenario) ->
    Runs = [R || R = #{server := S, scenario := Sc} <- Results, S =:= Server, Sc =:= Scenario],
    case [R || R = #{status := ok} <- Runs] of
        [] ->
            case [W || #{status := {unsupported, W}} <- Runs] of
                [W | _] -> {unsupported, W};
                [] -> none
            end;
        Ok ->
            Keys = [rps, p50, p90, p99, p999, max, cpu_us, peak_rss_kb, beam_peak,
                    errors, bad_status, conns, noise, load_noise, load_busy,
                    mbps, idle_conns, idle_beam_b, idle_rss_b, open_s, idle_nogc_b],
            M = maps:from_list([{K, bench_stats:summary([V || #{K := V} <- Ok, is_number(V)])}
                                || K <- Keys]),
            M#{ok_runs => length(Ok), runs => length(Runs),
               repeats => lists:sum([maps:get(repeats, R, 0) || R <- Runs])}
    end.

table(#{results := Results}, Servers, Scs, Metric, Dir, CellFun) ->
    Head = ["| scenario | ", lists:join(" | ", [atom_to_list(S) || S <- Servers]), " |\n",
            "|---|", [["---|"] || _ <- Servers], "\n"],
    Rows = [begin
                Cells = [{S, cells(Results, S, Name)} || S <- Servers],
                Win = case Metric of
                          none -> none;
                          _ -> bench_stats:winner([{S, maps:get(Metric, C)} || {S, C} <- Cells,
                                                                            is_map(C),
                                                                            is_map(maps:get(Metric, C))],
                                                  Dir)
                      end,
                ["| ", atom_to_list(Name), " | ",
                 lists:join(" | ", [cell_text(S, C, Win, CellFun) || {S, C} <- Cells]), " |\n"]
            end || #{name := Name} <- Scs],
    [Head, Rows].

cell_text(_, {unsupported, Why}, _, _) -> ["— (", Why, ")"];
cell_text(_, none, _, _) -> "failed";
cell_text(S, C, Win, Fun) ->
    Text = Fun(C),
    Partial = case C of
                  #{ok_runs := N, runs := N} -> "";
                  #{ok_runs := K, runs := N} -> io_lib:format(" [~b/~b runs ok]", [K, N])
              end,
    case Win of
        {S, _} -> ["**", Text, "**", Partial];
        _ -> [Text, Partial]
    end.

rps_cell(#{rps := #{median := M, min := Lo, max := Hi}}) ->
    [fmt_rps(M), " (", fmt_rps(Lo), "–", fmt_rps(Hi), ")"].

lat_cell(#{p50 := P50, p99 := P99, max := Max}) ->
    [fmt_us(med(P50)), " / ", fmt_us(med(P99)), " / ", fmt_us(med(Max))].

ws_lat_cell(#{p50 := P50, p99 := P99, p999 := P999, max := Max}) ->
    [fmt_us(med(P50)), " / ", fmt_us(med(P99)), " / ", fmt_us(med(P999)), " / ", fmt_us(med(Max))].

mbps_cell(#{mbps := #{median := M, min := Lo, max := Hi}}) ->
    io_lib:format("~.1f (~.1f–~.1f)", [M * 1.0, Lo * 1.0, Hi * 1.0]);
mbps_cell(_) -> "?".

idle_cell(#{idle_beam_b := #{median := B}, idle_rss_b := #{median := Rss},
            idle_conns := #{median := N}, open_s := #{median := Open}} = C) ->
    io_lib:format("~b B / ~b B (~b connections, opened in ~.1f s, ~ts CPU each; "
                  "~ts B before the last GC)",
                  [round(B), round(Rss), round(N), Open * 1.0,
                   case C of
                       #{cpu_us := #{median := Cpu}} -> fmt_us(Cpu);
                       _ -> "?"
                   end,
                   case C of
                       #{idle_nogc_b := #{median := NoGc}} -> integer_to_list(round(NoGc));
                       _ -> "?"
                   end]);
idle_cell(_) -> "?".

cpu_cell(#{cpu_us := undefined}) -> "?";
cpu_cell(#{cpu_us := #{median := M, min := Lo, max := Hi}}) ->
    [fmt_us(M), " (", fmt_us(Lo), "–", fmt_us(Hi), ")"].

mem_cell(#{peak_rss_kb := Rss, beam_peak := Beam}) ->
    [mb(Rss, 1024), " / ", mb(Beam, 1048576)].

mb(undefined, _) -> "—";
mb(#{median := M}, Div) -> io_lib:format("~.1f", [M / Div]).

err_cell(#{errors := E, bad_status := B, conns := C, noise := N, load_noise := L} = Cell) ->
    [int(E), " / ", int(B), " / ", int(C), " / ", pct(N), " / ", pct(L), " / ",
     pct(maps:get(load_busy, Cell, undefined)),
     case generator_bound(Cell) of
         true -> " ⚠";
         false -> ""
     end,
     case maps:get(repeats, Cell, 0) of
         0 -> "";
         K -> io_lib:format(" (~b disturbed run(s) repeated)", [K])
     end].

pct(#{median := M}) when is_number(M) -> [integer_to_list(round(M)), " %"];
pct(_) -> "?".

%% Whether the load generator kept its core at least ?BOUND % busy in the
%% median run of a cell.
generator_bound(#{load_busy := #{median := M}}) when is_number(M) -> M >= ?BOUND;
generator_bound(_) -> false.

int(undefined) -> "?";
int(#{median := M}) -> integer_to_list(round(M)).

med(#{median := M}) -> M;
med(_) -> undefined.

not_leading(#{results := Results, servers := Servers, scenarios := Scs}) ->
    Erlang = Servers -- [nginx],
    case lists:member(falco, Erlang) andalso length(Erlang) > 1 of
        false -> [];
        true ->
            Lines = lists:append([behind(Sc, Erlang, Results) || Sc <- Scs]),
            ["\n## Where falco does not lead on req/s, msg/s or bytes per idle connection "
             "(among the Erlang servers)\n\n",
             case lists:member(nginx, Servers) of
                 true -> "nginx, the native ceiling, is left out here; its numbers are in the tables.\n\n";
                 false -> ""
             end,
             case Lines of
                 [] -> "falco has the highest median in every scenario it ran (see the bold "
                       "rule above for which leads are outside the noise).\n";
                 _ -> Lines
             end]
    end.

%% For each h2 upload scenario whose HTTP/1.1 baseline ran too (the same
%% request from the same client, h2load --h1; bench_scenarios), how much
%% slower the upload was over h2, per server: the ratio of the medians of
%% req/s and of server CPU per request.
over_h1(#{results := Results, servers := Servers, scenarios := Scs}) ->
    Names = [N || #{name := N} <- Scs],
    Pairs = [{N, H1} || #{name := H1, baseline_of := N} <- Scs, lists:member(N, Names)],
    Lines = [over_h1_line(N, S, cells(Results, S, N), cells(Results, S, H1))
             || {N, H1} <- Pairs, S <- Servers],
    case [L || L <- Lines, L =/= []] of
        [] -> [];
        Some -> ["\n## Uploads over h2 against HTTP/1.1, one client for both\n\n",
                 "Each `_h1` row sends the request of the scenario it names over HTTP/1.1 "
                 "through h2load (`--h1`), so the two differ only by the protocol. The "
                 "HTTP/1.1 table (results.md) drives uploads with wrk, which costs the server "
                 "less per byte than h2load does over either protocol.\n\n",
                 "| scenario | server | h2 req/s | HTTP/1.1 req/s | h2 slower by | h2 CPU per request | "
                 "HTTP/1.1 CPU per request | ratio |\n|---|---|---:|---:|---:|---:|---:|---:|\n",
                 Some]
    end.

over_h1_line(N, S, #{rps := #{median := R2}, cpu_us := C2}, #{rps := #{median := R1}, cpu_us := C1})
  when R2 > 0 ->
    {Cpu2, Cpu1, CpuRatio} = case {C2, C1} of
                                 {#{median := A}, #{median := B}} when B > 0 ->
                                     {fmt_us(A), fmt_us(B), io_lib:format("~.2fx", [A / B])};
                                 _ -> {"?", "?", "?"}
                             end,
    io_lib:format("| ~s | ~s | ~ts | ~ts | ~.2fx | ~ts | ~ts | ~ts |~n",
                  [N, S, fmt_rps(R2), fmt_rps(R1), R1 / R2, Cpu2, Cpu1, CpuRatio]);
over_h1_line(_, _, _, _) ->
    [].

%% The line of a scenario where another server beats falco's median.
behind(Sc = #{name := Name}, Erlang, Results) ->
    Metric = case idle(Sc) of
                 true -> idle_beam_b;
                 false -> rps
             end,
    Meds = [{S, med(maps:get(Metric, C))} || S <- Erlang, C <- [cells(Results, S, Name)],
                                             is_map(C), is_number(med(maps:get(Metric, C)))],
    Sorted = case Metric of
                 rps -> lists:reverse(lists:keysort(2, Meds));
                 idle_beam_b -> lists:keysort(2, Meds)
             end,
    case {lists:keyfind(falco, 1, Meds), Sorted, Metric} of
        {{falco, F}, [{Best, B} | _], rps} when Best =/= falco ->
            [io_lib:format("- ~s: ~s leads with ~s ~s; falco has ~s (~b %)~s~n",
                           [Name, Best, fmt_rps(B), unit(Name), fmt_rps(F), round(100 * F / B),
                            bound_note(Name, [falco, Best], Results)])];
        {{falco, F}, [{Best, B} | _], idle_beam_b} when Best =/= falco, B > 0 ->
            [io_lib:format("- ~s: ~s holds an idle connection in ~b B of BEAM memory; falco in "
                           "~b B (~b %)~n", [Name, Best, round(B), round(F), round(100 * F / B)])];
        _ -> []
    end.

%% Said of a row where falco trails: the load generator was the limit of
%% both servers' runs.
bound_note(Name, Servers, Results) ->
    case lists:all(fun(S) -> generator_bound(cells(Results, S, Name)) end, Servers) of
        true -> io_lib:format("; the load generator was at least ~b % busy in both, "
                              "so the row measures it as much as the servers", [?BOUND]);
        false -> ""
    end.

unit(Name) ->
    case bench_scenarios:ws(Name) of
        true -> "msg/s";
        false -> "req/s"
    end.

open_loop(#{open_loop := {skipped, Why}}) ->
    ["\n## Open loop\n\nSkipped: ", Why, "\n"];
open_loop(#{open_loop := {ok, Rows}, servers := Servers}) ->
    Runs = lists:max([1 | [maps:get(runs, R, 1) + maps:get(failed, R, 0) || R <- Rows]]),
    ["\n## Open loop: fixed rates, latency corrected for coordinated omission (oha)\n\n",
     "Each server at 50/75/90/95 % of its own closed-loop peak (the median above), and at "
     "the common rates, 50 and 90 % of the lowest peak among the servers (the same load for "
     "every server); ", runs_text(Runs), "latency percentiles as oha reports them with "
     "--latency-correction; openloop.svg plots p99 against the rate achieved. "
     "*Achieved* in italics: less than 99 % of the target was reached, so requests queued "
     "and the corrected latencies grow with that backlog; when the load core was nearly "
     "fully busy (last column) the limit may be oha's rather than the server's.\n\n",
     "| scenario | server | rate | target req/s | achieved | p50 | p99 | p99.9 | errors / non-2xx | load core busy |\n",
     "|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n",
     [open_loop_row(Row) || Row <- lists:sort(fun open_loop_order/2, Rows)],
     tails_behind(Rows, Servers -- [nginx])];
open_loop(_) ->
    [].

%% By scenario, the common rates first (server by server at the same
%% rate), then each server's own.
open_loop_order(A, B) ->
    Key = fun(#{scenario := Sc, server := Sv, kind := K, target := T}) ->
                  case K of
                      common -> {Sc, 0, T, Sv};
                      own -> {Sc, 1, Sv, T}
                  end
          end,
    Key(A) =< Key(B).

open_loop_row(Row = #{scenario := Sc, server := Sv, status := ok, kind := K, fraction := F,
                      target := T}) ->
    A = maps:get(achieved, Row),
    AText = case A < 0.99 * T of
                true -> ["*", fmt_rps(A), "*"];
                false -> fmt_rps(A)
            end,
    P99 = case Row of
              #{runs := N, p99_min := Min, p99_max := Max} when N > 1, is_number(Min) ->
                  [fmt_us(maps:get(p99, Row)), " (", fmt_us(Min), "–", fmt_us(Max), ")"];
              _ ->
                  fmt_us(maps:get(p99, Row))
          end,
    Failed = case maps:get(failed, Row, 0) of
                 0 -> "";
                 NF -> io_lib:format(" (~b of ~b runs failed)", [NF, NF + maps:get(runs, Row)])
             end,
    io_lib:format("| ~s | ~s | ~ts | ~ts | ~ts | ~ts | ~ts | ~ts | ~b / ~b~ts | ~ts |~n",
                  [Sc, Sv, bench_openloop:label(K, F), fmt_rps(T), AText,
                   fmt_us(maps:get(p50, Row)), P99,
                   fmt_us(maps:get(p999, Row)), maps:get(errors, Row),
                   maps:get(non2xx, Row), Failed, pct(#{median => maps:get(load_busy, Row)})]);
open_loop_row(Row = #{scenario := Sc, server := Sv, status := {error, Why}}) ->
    F = case Row of
            #{kind := K, fraction := F0} -> bench_openloop:label(K, F0);
            _ -> ""
        end,
    io_lib:format("| ~s | ~s | ~ts | failed: ~ts | | | | | | |~n", [Sc, Sv, F, Why]).

runs_text(1) -> "one run per rate; ";
runs_text(N) ->
    io_lib:format("~b runs per rate, the servers interleaved (run 1 of each server, then run 2, "
                  "...; each run starts the server afresh); the figures are the medians of the "
                  "runs, with p99's min–max in brackets; errors are summed; ", [N]).

%% The rates where falco's median p99 or p99.9 is not the lowest of the
%% Erlang servers that ran it (same scenario, same kind and fraction of
%% rate: the common rates are the same load for all, the own ones the same
%% share of each server's peak).
tails_behind(Rows, Erlang) ->
    Ok = [R || R = #{status := ok, runs := N} <- Rows, N > 0, lists:member(maps:get(server, R), Erlang)],
    Groups = lists:usort([{Sc, K, F} || #{scenario := Sc, kind := K, fraction := F} <- Ok]),
    Lines = lists:append([tail_line(G, [R || R = #{scenario := Sc, kind := K, fraction := F} <- Ok,
                                             {Sc, K, F} =:= G]) || G <- Groups]),
    case {lists:member(falco, Erlang), Lines} of
        {false, _} -> [];
        {true, []} -> ["\nfalco has the lowest median p99 and p99.9 of the Erlang servers at "
                       "every rate above.\n"];
        {true, _} -> ["\nWhere falco's median p99 or p99.9 is not the lowest of the Erlang "
                      "servers at the same rate:\n\n" | Lines]
    end.

tail_line({Sc, K, F}, Rows) ->
    case [R || R = #{server := falco} <- Rows] of
        [Falco] ->
            Behind = [io_lib:format("~ts ~s ~ts (falco ~ts)",
                                    [Name, Best, fmt_us(maps:get(Metric, Best0)),
                                     fmt_us(maps:get(Metric, Falco))])
                      || {Metric, Name} <- [{p99, "p99"}, {p999, "p99.9"}],
                         is_number(maps:get(Metric, Falco)),
                         Best0 = #{server := Best} <- [lowest(Metric, Rows)],
                         Best =/= falco],
            case Behind of
                [] -> [];
                _ -> [io_lib:format("- ~s, ~ts: ", [Sc, bench_openloop:label(K, F)]),
                      lists:join("; ", Behind), "\n"]
            end;
        [] ->
            []
    end.

lowest(Metric, Rows) ->
    hd(lists:sort(fun(A, B) -> key(Metric, A) =< key(Metric, B) end, Rows)).

key(Metric, Row) ->
    case maps:get(Metric, Row) of
        V when is_number(V) -> {0, V};
        _ -> {1, 0}
    end.

survey(#{survey := {skipped, Why}}) ->
    ["\n## Survey workload\n\nSkipped: ", Why, "\n"];
survey(#{survey := {ok, Rows}}) ->
    ["\n## Survey workload (seeds 001 and 002): the rate held with p99 under 1 s\n\n",
     "GET /survey: the handler sleeps 100 ms and answers 1 KB. Each step is one oha run "
     "of 8 s at a fixed rate over as many connections as requests per second (about one "
     "request per second each; at most 8,000 connections, client and server sharing one "
     "machine's file descriptors), latency corrected for coordinated omission; the rate "
     "is ramped until two steps in a row are not held. Held: the rate reached (95 %: the "
     "requests still in flight when a step ends are not counted), "
     "p99 under 1 s, no failed request and no non-2xx answer. Memory: the server's peak "
     "BEAM memory and RSS during the highest step it held.\n\n",
     "| server | highest rate held | its p99 | connections | first step past it: errors / non-2xx (p99) | BEAM / RSS peak there | BEAM / RSS peak at the highest rate all held |\n",
     "|---|---:|---:|---:|---|---:|---:|\n",
     [survey_summary(S) || S <- bench_survey:summary(Rows)],
     "\nEvery step:\n\n",
     "| server | rate | connections | achieved | p50 | p99 | p99.9 | errors / non-2xx | held |\n",
     "|---|---:|---:|---:|---:|---:|---:|---:|---|\n",
     [survey_row(Row) || Row <- Rows]];
survey(_) ->
    [].

survey_summary(#{server := Sv, best := undefined, past := Past}) ->
    io_lib:format("| ~s | none | | | ~ts | | |~n", [Sv, survey_past(Past)]);
survey_summary(#{server := Sv, best := B, past := Past, common := C}) ->
    io_lib:format("| ~s | ~ts req/s | ~ts | ~b | ~ts | ~ts | ~ts |~n",
                  [Sv, fmt_rps(maps:get(rate, B)), fmt_us(maps:get(p99, B)), maps:get(conns, B),
                   survey_past(Past), survey_mem(B), survey_mem(C)]).

survey_mem(undefined) ->
    "";
survey_mem(Row = #{rate := R}) ->
    io_lib:format("~ts / ~ts MB (~ts req/s)",
                  [survey_mb(maps:get(beam_peak, Row, undefined), 1.0e6),
                   survey_mb(maps:get(rss_peak_kb, Row, undefined), 1024), fmt_rps(R)]).

survey_past(undefined) -> "none tried (the ramp's last rate was held)";
survey_past(#{status := ok, rate := R, errors := E, non2xx := N, p99 := P}) ->
    io_lib:format("~ts req/s: ~b / ~b (~ts)", [fmt_rps(R), E, N, fmt_us(P)]);
survey_past(#{rate := R, status := {error, Why}}) ->
    io_lib:format("~ts req/s: failed, ~ts", [fmt_rps(R), Why]);
survey_past(#{status := {error, Why}}) ->
    ["failed: ", Why].

survey_mb(undefined, _) -> "?";
survey_mb(V, Div) -> io_lib:format("~.1f", [V / Div]).

survey_row(#{server := Sv, rate := R, conns := C, status := ok, held := H} = Row) ->
    io_lib:format("| ~s | ~ts | ~b | ~ts | ~ts | ~ts | ~ts | ~b / ~b | ~s |~n",
                  [Sv, fmt_rps(R), C, fmt_rps(maps:get(achieved, Row)),
                   fmt_us(maps:get(p50, Row)), fmt_us(maps:get(p99, Row)),
                   fmt_us(maps:get(p999, Row)), maps:get(errors, Row), maps:get(non2xx, Row),
                   case H of true -> "yes"; false -> "no" end]);
survey_row(#{server := Sv, status := {error, Why}} = Row) ->
    io_lib:format("| ~s | ~ts | | | | | | failed: ~ts | no |~n",
                  [Sv, case Row of #{rate := R} -> fmt_rps(R); _ -> "" end, Why]).

scenario_table(#{scenarios := Scs}) ->
    ["\n## Scenarios\n\n| scenario | what it does | note |\n|---|---|---|\n",
     [["| ", atom_to_list(N), " | ", W, " | ", Note, " |\n"]
      || #{name := N, what := W, note := Note} <- Scs]].

failures(#{results := Results}) ->
    case [R || R = #{status := {error, _}} <- Results] of
        [] -> [];
        F ->
            ["\n## Failed runs\n\n",
             [io_lib:format("- ~s / ~s / run ~b: ~s~n", [Sv, Sc, R, Why])
              || #{server := Sv, scenario := Sc, run := R, status := {error, Why}} <- F]]
    end.

%% ---------------------------------------------------------------- csv

csv(#{results := Results}) ->
    Cols = [rps, p50, p90, p99, p999, max, cpu_us, peak_rss_kb, beam_peak, beam_total,
            errors, bad_status, conns, noise, load_noise, requests, clients,
            mbps, idle_conns, idle_beam_b, idle_rss_b, open_s, load_busy, idle_nogc_b],
    ["server,scenario,run,status,", lists:join(",", [atom_to_list(C) || C <- Cols]), "\n",
     [[atom_to_list(Sv), ",", atom_to_list(Sc), ",", integer_to_list(R), ",", status(St), ",",
       lists:join(",", [num(maps:get(C, Row, undefined)) || C <- Cols]), "\n"]
      || Row = #{server := Sv, scenario := Sc, run := R, status := St} <- Results]].

status(ok) -> "ok";
status({unsupported, _}) -> "unsupported";
status({error, _}) -> "error".

num(undefined) -> "";
num(I) when is_integer(I) -> integer_to_list(I);
num(F) when is_float(F) -> float_to_list(F, [{decimals, 2}]).

%% ---------------------------------------------------------------- formats

%% @doc 123456.7 -> "123.5 k".
-spec fmt_rps(number()) -> iolist().
fmt_rps(R) when R >= 1000 -> io_lib:format("~.1f k", [R / 1000]);
fmt_rps(R) -> integer_to_list(round(R)).

%% @doc Microseconds in a readable unit.
-spec fmt_us(number() | undefined) -> iolist().
fmt_us(undefined) -> "?";
fmt_us(U) when U < 10 -> io_lib:format("~.2f µs", [U * 1.0]);
fmt_us(U) when U < 1000 -> [integer_to_list(round(U)), " µs"];
fmt_us(U) when U < 1000000 -> io_lib:format("~.2f ms", [U / 1000]);
fmt_us(U) -> io_lib:format("~.2f s", [U / 1000000]).
