%% Test helper: runs an external program (mix, rebar3, erl) in a directory
%% with an environment, to its end or to a deadline, for the suites that
%% build projects the way a user would (elixir_SUITE, readme_deps_SUITE).
-module(falco_test_run).

-export([run_to_end/5, deadline/1, left/1, checkout/0]).

%% Runs `Exe' with `Args' in `Dir' to its end: {ExitStatus, Output}
%% (stderr with stdout). Killed, and the case failed, past `Timeout' ms.
run_to_end(Exe, Args, Dir, Env, Timeout) ->
    P = open_port({spawn_executable, Exe}, [{args, Args}, {cd, Dir}, {env, Env}, binary,
                                            exit_status, stderr_to_stdout]),
    collect(P, deadline(Timeout), []).

collect(P, Deadline, Acc) ->
    receive
        {P, {data, D}} -> collect(P, Deadline, [Acc, D]);
        {P, {exit_status, S}} -> {S, iolist_to_binary(Acc)}
    after left(Deadline) ->
            {os_pid, OsPid} = erlang:port_info(P, os_pid),
            _ = os:cmd("kill -9 " ++ integer_to_list(OsPid)),
            ct:fail({timeout, iolist_to_binary(Acc)})
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
