%% bench_opts: the command line of bench/run (hand-written: OTP 25 has no
%% argparse), its defaults, and the usage text.
-module(bench_opts).

-export([parse/1, usage/0]).

-define(DEFAULT_SERVERS, [falco, elli, cowboy, inets, mochiweb, yaws, nginx]).

-spec usage() -> string().
usage() ->
    "usage: bench/run [options]\n"
    "  --servers a,b,...     servers to compare (default falco,elli,cowboy,inets,\n"
    "                        mochiweb,yaws,nginx; unavailable ones are skipped with a note;\n"
    "                        also falco_socket, and floor: the runtime's floor, no server)\n"
    "  --scenarios a,b,...   scenarios (default: every scenario of the protocol; `list' lists them)\n"
    "  --protocol h1|h2|h3   protocol (default h1); h3: falco's HTTP/3 (bench/h3load) against\n"
    "                        its HTTP/2 over TLS (h2load) in one run -> results-h3.md\n"
    "  --h3                  the same as --protocol h3\n"
    "  --runs N              runs per cell; the report shows the median and min-max (default 3)\n"
    "  --duration S          measured seconds per run (default 5)\n"
    "  --warmup S            warm-up seconds before each run (default 2)\n"
    "  --clients C           concurrent connections (default 50; some scenarios set their own)\n"
    "  --peer-libs DIR       DIR/*/ebin holds compiled peers (cowboy, cowlib, ranch, elli, ...)\n"
    "  --erl-flags \"...\"     emulator flags of every server BEAM (default: see bench/README.md)\n"
    "  --out DIR             where results.md and the charts go (default bench)\n"
    "  --open-loop           also drive 50/75/90/95 % of each peak, and common rates, at\n"
    "                        fixed rates (needs oha)\n"
    "  --open-loop-runs N    runs per open-loop rate, servers interleaved; the report shows\n"
    "                        the medians (default: --runs)\n"
    "  --survey              also ramp the seed survey's workload (100 ms handler, 1 KB,\n"
    "                        about 1 request/s per connection) past saturation (needs oha)\n"
    "  --profile             profile falco with eprof on the first scenario, write the hotspots\n"
    "  --smoke               falco, inets and the floor, hello, echo and ws_echo, 1 s each, 1 run,\n"
    "                        into _build/bench/smoke\n"
    "  --retries N           repeat a run disturbed by other programs (>= 15 % of a core)\n"
    "                        up to N times, keeping the least disturbed (default 2; 0 in --smoke)\n"
    "  --strict              fail on any socket error or error status (implied by --smoke)\n"
    "  -h, --help            this text\n".

%% @doc Parses the arguments into a map, or `{error, Message}'.
-spec parse([string()]) -> {ok, map()} | {error, string()} | help.
parse(Args) ->
    Defaults = #{servers => ?DEFAULT_SERVERS, servers_given => false,
                 scenarios => default, protocol => h1, runs => 3,
                 duration => 5, warmup => 2, clients => 50, peer_libs => undefined,
                 erl_flags => default, out => "bench", profile => false,
                 smoke => false, strict => false, open_loop => false, survey => false,
                 open_loop_runs => undefined, retries => 2},
    case parse(Args, Defaults) of
        {ok, #{open_loop_runs := undefined, runs := Runs} = O} ->
            finish({ok, O#{open_loop_runs := Runs}});
        Other ->
            finish(Other)
    end.

finish(Parsed) ->
    case Parsed of
        {ok, #{smoke := true} = O} ->
            {ok, O#{servers := smoke_servers(O), scenarios := [hello, echo, ws_echo],
                    runs := 1, open_loop_runs := 1, duration := 1, warmup := 1, strict := true,
                    retries := 0,
                    out := "_build/bench/smoke"}};
        Other ->
            Other
    end.

smoke_servers(#{servers_given := true, servers := S}) -> S;
smoke_servers(_) -> [falco, inets, floor].

parse([], O) -> {ok, O};
parse([H | _], _) when H =:= "-h"; H =:= "--help" -> help;
parse(["--servers", V | T], O) -> parse(T, O#{servers := atoms(V), servers_given := true});
parse(["--scenarios", V | T], O) -> parse(T, O#{scenarios := atoms(V)});
parse(["--h3" | T], O) -> parse(T, O#{protocol := h3});
parse(["--protocol", V | T], O) when V =:= "h1"; V =:= "h2"; V =:= "h3" ->
    parse(T, O#{protocol := list_to_atom(V)});
parse(["--runs", V | T], O) -> int(runs, V, 1, T, O);
parse(["--duration", V | T], O) -> int(duration, V, 1, T, O);
parse(["--warmup", V | T], O) -> int(warmup, V, 0, T, O);
parse(["--clients", V | T], O) -> int(clients, V, 1, T, O);
parse(["--retries", V | T], O) -> int(retries, V, 0, T, O);
parse(["--open-loop-runs", V | T], O) -> int(open_loop_runs, V, 1, T, O);
parse(["--peer-libs", V | T], O) -> parse(T, O#{peer_libs := V});
parse(["--erl-flags", V | T], O) -> parse(T, O#{erl_flags := V});
parse(["--out", V | T], O) -> parse(T, O#{out := V});
parse(["--profile" | T], O) -> parse(T, O#{profile := true});
parse(["--open-loop" | T], O) -> parse(T, O#{open_loop := true});
parse(["--survey" | T], O) -> parse(T, O#{survey := true});
parse(["--smoke" | T], O) -> parse(T, O#{smoke := true});
parse(["--strict" | T], O) -> parse(T, O#{strict := true});
parse([Opt | _], _) -> {error, "unknown or incomplete option: " ++ Opt}.

int(Key, V, Min, T, O) ->
    case string:to_integer(V) of
        {N, ""} when N >= Min -> parse(T, O#{Key := N});
        _ -> {error, io_lib:format("--~s wants an integer >= ~b, not ~s", [Key, Min, V])}
    end.

atoms(V) -> [list_to_atom(S) || S <- string:lexemes(V, ",")].
