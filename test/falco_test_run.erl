%% Test helper: the one runner for external programs the suites drive
%% (curl, h2spec, Python clients, git, rebar3, mix, a release, haproxy).
%% To its end: a program run without a shell, or a command line run by
%% /bin/sh, to its end or to a deadline, its output collected up to a
%% bound, its exit status returned; past the deadline or the bound the
%% program is killed and the case fails with what it had written. Beside
%% a case: a program started under a keeper process of its own (so that
%% it outlives the init function that started it), its output kept up to
%% a bound, waited for until it writes something, and stopped (SIGTERM,
%% then SIGKILL past a deadline). Whether a program is there at all is
%% falco_test_tools' question (skip or, with FALCO_REQUIRE_TOOLS=1, fail),
%% asked before running it.
-module(falco_test_run).

-export([run/3, cmd/2, deadline/1, left/1, checkout/0]).
-export([start/3, output/1, await/3, wait_exit/2, stop/2]).

%% Output kept from one program, at most (more fails the case).
-define(MAX_OUTPUT, 16 * 1024 * 1024).

%% Runs `Exe' (a path) with `Args' to its end: {ExitStatus, Output}.
%% `Opts':
%%   timeout     ms to its end (required): past it the program is killed
%%               and the case fails with {timeout, Exe, Args, Output};
%%   cd, env     as open_port/2's;
%%   stderr      stdout (the default: both in Output) or inherit (left to
%%               the test node's own standard error);
%%   max_output  bytes (default 16 MB): more is killed and fails with
%%               {output_over, Max, Exe, Args, FirstBytes}.
run(Exe, Args, Opts = #{timeout := Timeout}) ->
    PortOpts = [{args, Args}, binary, exit_status, use_stdio, hide]
        ++ [stderr_to_stdout || maps:get(stderr, Opts, stdout) =:= stdout]
        ++ [{cd, D} || D <- [maps:get(cd, Opts, undefined)], D =/= undefined]
        ++ [{env, E} || E <- [maps:get(env, Opts, undefined)], E =/= undefined],
    P = open_port({spawn_executable, Exe}, PortOpts),
    {os_pid, OsPid} = erlang:port_info(P, os_pid),
    Run = #{port => P, os_pid => OsPid, exe => Exe, args => Args,
            max => maps:get(max_output, Opts, ?MAX_OUTPUT)},
    collect(Run, deadline(Timeout), 0, []).

collect(Run = #{port := P}, Deadline, Size, Acc) ->
    receive
        {P, {data, D}} when Size + byte_size(D) =< map_get(max, Run) ->
            collect(Run, Deadline, Size + byte_size(D), [Acc, D]);
        {P, {data, D}} ->
            kill(Run),
            #{max := Max, exe := Exe, args := Args} = Run,
            First = binary:part(iolist_to_binary([Acc, D]), 0, min(4096, Size)),
            ct:fail({output_over, Max, Exe, Args, First});
        {P, {exit_status, S}} ->
            {S, iolist_to_binary(Acc)}
    after left(Deadline) ->
            kill(Run),
            #{exe := Exe, args := Args} = Run,
            ct:fail({timeout, Exe, Args, iolist_to_binary(Acc)})
    end.

%% SIGKILL to the program, and its port closed (its last messages flushed).
kill(#{port := P, os_pid := OsPid}) ->
    _ = os:cmd("kill -9 " ++ integer_to_list(OsPid)),
    catch port_close(P),
    receive {P, {exit_status, _}} -> ok after 0 -> ok end,
    flush(P).

flush(P) ->
    receive {P, _} -> flush(P) after 0 -> ok end.

%% os:cmd/1 with a deadline: `Command' run by /bin/sh, its output (stderr
%% with stdout) as a string whatever its exit status; killed, and the case
%% failed, past `Timeout' ms.
cmd(Command, Timeout) ->
    {_Status, Out} = run("/bin/sh", ["-c", Command], #{timeout => Timeout}),
    binary_to_list(Out).

%% -- programs beside a case ----------------------------------------------------

%% Starts `Exe' with `Args' (options cd and env as for run/3; stderr with
%% stdout) under a keeper process; returns the program, for output/1,
%% await/3, wait_exit/2 and stop/2. Output past 16 MB is dropped (the
%% first 16 MB kept).
start(Exe, Args, Opts) ->
    Self = self(),
    Ref = make_ref(),
    Keeper = spawn(fun() -> keeper(Self, Ref, Exe, Args, Opts) end),
    Mon = monitor(process, Keeper),
    receive
        {Ref, started, OsPid} ->
            demonitor(Mon, [flush]),
            #{keeper => Keeper, os_pid => OsPid, exe => Exe, args => Args};
        {'DOWN', Mon, process, Keeper, Reason} ->
            error({not_started, Exe, Args, Reason})
    after 10000 ->
            exit(Keeper, kill),
            error({not_started, Exe, Args, timeout})
    end.

keeper(Parent, Ref, Exe, Args, Opts) ->
    PortOpts = [{args, Args}, binary, exit_status, use_stdio, hide, stderr_to_stdout]
        ++ [{cd, D} || D <- [maps:get(cd, Opts, undefined)], D =/= undefined]
        ++ [{env, E} || E <- [maps:get(env, Opts, undefined)], E =/= undefined],
    P = open_port({spawn_executable, Exe}, PortOpts),
    {os_pid, OsPid} = erlang:port_info(P, os_pid),
    Parent ! {Ref, started, OsPid},
    keep(#{port => P, os_pid => OsPid, status => running, size => 0, out => [],
           max => maps:get(max_output, Opts, ?MAX_OUTPUT)}).

keep(K = #{port := P}) ->
    receive
        {P, {data, D}} ->
            keep(kept(K, D));
        {P, {exit_status, S}} ->
            keep(K#{status := S});
        {output, From, Ref} ->
            From ! {Ref, reply(K)},
            keep(K);
        {wait_exit, From, Ref, Deadline} ->
            From ! {Ref, exited(K, Deadline)};
        {stop, From, Ref, Deadline} ->
            _ = [os:cmd("kill -TERM " ++ integer_to_list(map_get(os_pid, K)))
                 || map_get(status, K) =:= running],
            From ! {Ref, exited(K, Deadline)}
    end.

kept(K = #{size := Size, max := Max, out := Out}, D) when Size >= Max ->
    K#{size := Size + byte_size(D), out := Out};
kept(K = #{size := Size, max := Max, out := Out}, D) ->
    K#{size := Size + byte_size(D), out := [Out, binary:part(D, 0, min(byte_size(D), Max - Size))]}.

reply(#{status := Status, out := Out}) ->
    {Status, iolist_to_binary(Out)}.

%% The keeper's last reply: the exit status and the output, or `killed'
%% (SIGKILL) past the deadline.
exited(K = #{status := running, port := P}, Deadline) ->
    receive
        {P, {data, D}} -> exited(kept(K, D), Deadline);
        {P, {exit_status, S}} -> reply(K#{status := S})
    after left(Deadline) ->
            kill(K),
            {killed, iolist_to_binary(map_get(out, K))}
    end;
exited(K, _Deadline) ->
    reply(K).

%% {running | ExitStatus, Output so far} of a program of start/3.
output(#{keeper := Keeper}) ->
    call(Keeper, output, 5000).

%% Waits until `Test' (fun(Output) -> false | {true, Value}) holds for the
%% program's output, and returns Value; fails the case if the program
%% exits first or `Timeout' ms pass, with its output.
await(Program, Test, Timeout) ->
    await(Program, Test, deadline(Timeout), Timeout).

await(Program = #{exe := Exe}, Test, Deadline, Timeout) ->
    {Status, Out} = output(Program),
    case Test(Out) of
        {true, Value} ->
            Value;
        false when Status =/= running ->
            ct:fail({exited, Exe, Status, Out});
        false ->
            case left(Deadline) of
                0 -> ct:fail({timeout, Exe, Timeout, Out});
                _ -> timer:sleep(50), await(Program, Test, Deadline, Timeout)
            end
    end.

%% Waits `Timeout' ms for the program to exit by itself: {ExitStatus,
%% Output}, or {killed, Output} once it had to be killed. The program is
%% gone either way.
wait_exit(#{keeper := Keeper}, Timeout) ->
    call(Keeper, {wait_exit, deadline(Timeout)}, Timeout + 5000).

%% SIGTERM, then wait_exit/2 with `Timeout'.
stop(#{keeper := Keeper}, Timeout) ->
    call(Keeper, {stop, deadline(Timeout)}, Timeout + 5000).

call(Keeper, Request, Timeout) ->
    Ref = make_ref(),
    Mon = monitor(process, Keeper),
    Keeper ! case Request of
                 output -> {output, self(), Ref};
                 {What, Deadline} -> {What, self(), Ref, Deadline}
             end,
    receive
        {Ref, Reply} -> demonitor(Mon, [flush]), Reply;
        {'DOWN', Mon, process, Keeper, Reason} -> error({program_keeper_gone, Reason})
    after Timeout ->
            demonitor(Mon, [flush]),
            error({program_keeper_silent, Request})
    end.

%% A deadline `Ms' from now, and what is left of one (ms, at least 0).
deadline(Ms) ->
    erlang:monotonic_time(millisecond) + Ms.

left(Deadline) ->
    max(Deadline - erlang:monotonic_time(millisecond), 0).

%% The checkout the tests run from: the directory whose src/ rebar3 linked
%% into _build/test/lib/falco.
checkout() ->
    {ok, Src} = file:read_link_all(filename:join(code:lib_dir(falco), "src")),
    filename:dirname(filename:absname(Src, code:lib_dir(falco))).
