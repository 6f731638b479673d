%% Test helpers for the suites that put haproxy (Debian's, installed by
%% scripts/bootstrap) in front of falco: haproxy in the foreground with a
%% configuration the suite wrote, run beside the cases by falco_test_run
%% (whose keeper process outlives the init function that started it), and
%% stopped with a check that none of ours is left; free loopback ports
%% for its frontends; a check that something listens on a port.
-module(falco_test_haproxy).

-export([start/1, stop/2, listening/1, free_ports/1]).

%% haproxy -db -f Cfg, beside the cases (falco_test_run:start/3). Its
%% output (warnings, and the log when the configuration sends it to
%% stderr) is printed at stop/2.
-spec start(file:filename()) -> map().
start(Cfg) ->
    falco_test_run:start(os:find_executable("haproxy"), ["-db", "-f", Cfg], #{}).

%% Stops the haproxy of start/1 (run with configuration Cfg) and checks
%% that no haproxy runs with that configuration any more. One that
%% exited early, or did not stop within 5 s of SIGTERM, fails the case.
-spec stop(map(), file:filename()) -> ok.
stop(Haproxy, Cfg) ->
    case falco_test_run:output(Haproxy) of
        {running, _} -> ok;
        {Early, Said} -> ct:fail({haproxy_exited_early, Early, Said})
    end,
    case falco_test_run:stop(Haproxy, 5000) of
        {killed, Out} ->
            ct:fail({haproxy_did_not_stop, Out});
        {_Status, Out} ->
            _ = [ct:pal("haproxy said: ~s", [Out]) || Out =/= <<>>],
            ok
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
