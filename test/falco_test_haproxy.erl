%% Test helpers for the suites that put haproxy (Debian's, installed by
%% scripts/bootstrap) in front of falco: haproxy in the foreground with a
%% configuration the suite wrote, under a port owned by a process of its
%% own (so that it outlives the init function that started it), and
%% stopped with a check that none of ours is left; free loopback ports
%% for its frontends; a check that something listens on a port.
-module(falco_test_haproxy).

-export([start/1, stop/2, listening/1, free_ports/1]).

%% haproxy -db -f Cfg: the keeper process. Its output (warnings, and
%% the log when the configuration sends it to stderr) is printed when it
%% exits, early or at stop/2.
-spec start(file:filename()) -> pid().
start(Cfg) ->
    Exe = os:find_executable("haproxy"),
    spawn(fun() ->
                  Port = open_port({spawn_executable, Exe}, [{args, ["-db", "-f", Cfg]}, exit_status,
                                                             stderr_to_stdout, binary]),
                  {os_pid, OsPid} = erlang:port_info(Port, os_pid),
                  keep(Port, OsPid, [])
          end).

keep(Port, OsPid, Out) ->
    receive
        {Port, {data, D}} ->
            keep(Port, OsPid, [D | Out]);
        {Port, {exit_status, Status}} ->
            ct:pal("haproxy exited early (~p): ~s", [Status, lists:reverse(Out)]);
        {stop, From} ->
            _ = os:cmd("kill " ++ integer_to_list(OsPid)),
            receive
                {Port, {exit_status, _}} ->
                    _ = [ct:pal("haproxy said: ~s", [lists:reverse(Out)]) || Out =/= []],
                    From ! {stopped, self()}
            after 5000 ->
                _ = os:cmd("kill -9 " ++ integer_to_list(OsPid)),
                From ! {not_stopped, self()}
            end
    end.

%% Stops the haproxy of start/1 (run with configuration Cfg) and checks
%% that no haproxy runs with that configuration any more.
-spec stop(pid(), file:filename()) -> ok.
stop(Keeper, Cfg) ->
    Keeper ! {stop, self()},
    receive
        {stopped, Keeper} -> ok;
        {not_stopped, Keeper} -> ct:fail(haproxy_did_not_stop)
    after 10000 -> ct:fail(haproxy_did_not_stop)
    end,
    "" = os:cmd("pgrep -f " ++ Cfg),
    ok.

%% Whether a connection to the loopback port succeeds.
-spec listening(inet:port_number()) -> boolean().
listening(Port) ->
    case gen_tcp:connect({127, 0, 0, 1}, Port, [], 200) of
        {ok, S} -> gen_tcp:close(S), true;
        {error, _} -> false
    end.

%% N loopback ports free a moment ago.
-spec free_ports(pos_integer()) -> [inet:port_number()].
free_ports(N) ->
    Ls = [element(2, gen_tcp:listen(0, [{ip, {127, 0, 0, 1}}])) || _ <- lists:seq(1, N)],
    Ports = [element(2, inet:port(L)) || L <- Ls],
    _ = [gen_tcp:close(L) || L <- Ls],
    Ports.
