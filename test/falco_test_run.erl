%% Test helper: the one runner for external programs the suites drive
%% (curl, h2spec, Python clients, git, rebar3, mix, a release's script):
%% a program run without a shell, or a command line run by /bin/sh, to its
%% end or to a deadline, its output collected up to a bound, its exit
%% status returned. Past the deadline or the bound the program is killed
%% and the case fails with what it had written. Whether a program is
%% there at all is falco_test_tools' question (skip or, with
%% FALCO_REQUIRE_TOOLS=1, fail), asked before running it.
-module(falco_test_run).

-export([run/3, cmd/2, deadline/1, left/1, checkout/0]).

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
