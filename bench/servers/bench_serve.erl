%% bench_serve: the entry point of a server BEAM (one BEAM per server).
%%
%% The driver starts `erl -noshell ... -eval "bench_serve:main()" -extra
%% Server Scenario Port', pinned to its own core. This module loads the
%% fixture's applications as a release would (bench_app), starts the
%% fixture `bench_<Server>' for the scenario on 127.0.0.1:Port, prints
%% `BENCH ready <os pid> <version>' and then obeys one command per stdin line:
%%
%%   reset                 forget the peak BEAM memory seen so far
%%   stats                 print `BENCH stats total=B peak=B procs=N'
%%   gc                    garbage-collect every process (ws_idle, before
%%                         reading the memory)
%%   profile_start         start eprof on every process (and those they spawn)
%%   profile_stop FILE     stop eprof and write its analysis to FILE
%%   stop (or end of input) halt
%%
%% Anything else the BEAM prints (log lines) the driver keeps in a log file.
-module(bench_serve).

-export([main/0]).

-spec main() -> no_return().
main() ->
    [Server, Scenario, PortS] = init:get_plain_arguments(),
    Mod = list_to_atom("bench_" ++ Server),
    Port = list_to_integer(PortS),
    Sampler = spawn_link(fun() -> sampler(0) end),
    ok = bench_app:load(apps(Server) ++ [ssl || bench_tls:scenario(Scenario)]),
    try Mod:start(Port, list_to_atom(Scenario)) of
        ok ->
            say("ready ~s ~s", [os:getpid(), version(Mod)]),
            loop(Sampler);
        Other ->
            say("failed ~0p", [Other]),
            erlang:halt(2)
    catch
        Class:Reason:Stack ->
            say("failed ~0p", [{Class, Reason, Stack}]),
            erlang:halt(2)
    end.

%% The applications each server's fixture starts or loads (bench_app).
apps("falco" ++ _) -> [falco];
apps("floor") -> [];
apps(Server) -> [list_to_atom(Server)].

version(Mod) ->
    try Mod:version() of
        V -> V
    catch _:_ -> "?"
    end.

say(Fmt, Args) ->
    io:format("BENCH " ++ Fmt ++ "~n", Args).

loop(Sampler) ->
    case io:get_line(standard_io, "") of
        eof -> erlang:halt(0);
        {error, _} -> erlang:halt(0);
        Line -> command(words(Line), Sampler), loop(Sampler)
    end.

%% The words of a command line. Not string:trim/1 and string:lexemes/2:
%% their first call loaded `string' and `unicode_util' into the server's
%% node, 601 KB of code and about 25 ms of its one scheduler, and that
%% first call was the `reset' that opens each measured window, so every
%% Erlang server's peak memory had them and its first requests waited for
%% them (2026-11-29).
words(Line) ->
    words(Line, [], []).

words([C | Rest], Word, Acc) when C =:= $\s; C =:= $\t; C =:= $\r; C =:= $\n ->
    words(Rest, [], word(Word, Acc));
words([C | Rest], Word, Acc) ->
    words(Rest, [C | Word], Acc);
words([], Word, Acc) ->
    lists:reverse(word(Word, Acc)).

word([], Acc) -> Acc;
word(Word, Acc) -> [lists:reverse(Word) | Acc].

command(["reset"], Sampler) ->
    Sampler ! reset,
    say("ok", []);
command(["stats"], Sampler) ->
    Sampler ! {peak, self()},
    Peak = receive {peak, P} -> P after 5000 -> 0 end,
    Total = erlang:memory(total),
    say("stats total=~b peak=~b procs=~b", [Total, max(Peak, Total), erlang:system_info(process_count)]);
command(["gc"], _) ->
    _ = [erlang:garbage_collect(P) || P <- processes()],
    say("ok", []);
command(["profile_start"], _) ->
    {ok, _} = eprof:start(),
    Procs = processes() -- [self()],
    case eprof:start_profiling(Procs, {'_', '_', '_'}, [set_on_spawn]) of
        profiling -> say("ok", []);
        Error -> say("error ~0p", [Error])
    end;
command(["profile_stop", File], _) ->
    profiling_stopped = eprof:stop_profiling(),
    %% eprof prints the table to FILE and to stdout (the driver's log file).
    ok = eprof:log(File),
    _ = eprof:analyze(total, [{sort, time}]),
    _ = eprof:stop(),
    say("ok", []);
command(["stop"], _) ->
    erlang:halt(0);
command(Other, _) ->
    say("error unknown_command ~0p", [Other]).

%% Samples the BEAM's memory every 100 ms and keeps the peak.
sampler(Peak) ->
    receive
        reset -> sampler(erlang:memory(total));
        {peak, From} -> From ! {peak, Peak}, sampler(Peak)
    after 100 ->
        sampler(max(Peak, erlang:memory(total)))
    end.
