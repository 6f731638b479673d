%% A listener is alive or gone, never a zombie (issue 41): acceptors that
%% die past their supervisor's restart intensity are started again on the
%% same open listen socket, with the drain flag untouched, and the
%% listener serves; a storm past the listener's own intensity stops it, so
%% that falco:port/1 says `{error, not_found}' and a listener under a
%% user's supervisor is started again by it. Code loading (every falco
%% purged and loaded three times, as two `r3:compile()' do, or a release's
%% `load_module' with its brutal purge) kills every process waiting in
%% accept and every connection in falco's code: the listener serves a new
%% connection at once. A release upgrade's `update' (suspend, code change,
%% resume through `sys') loses no connection.
-module(listener_life_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1, init_per_testcase/2, end_per_testcase/2]).
-export([acceptor_storm_recovers/1, acceptor_storm_recovers_user_sup/1,
         listener_storm_stops/1, listener_storm_user_sup_restarts/1,
         code_reload_keeps_serving/1, sys_update_loses_nothing/1, storm_reports_bounded/1]).
%% the user's supervisor of the *_user_sup cases, and the handler, also in
%% the peer node of code_reload_keeps_serving
-export([init/1, handler/1, reload_all/0, ws_upgrade/1, handle_in/2]).

-define(C, falco_test_client).
-define(H2, falco_test_h2_client).
-define(WS, falco_test_ws_client).
-define(HOST, "Host: example.com\r\n").

all() ->
    [acceptor_storm_recovers, acceptor_storm_recovers_user_sup, listener_storm_stops,
     listener_storm_user_sup_restarts, code_reload_keeps_serving, sys_update_loses_nothing,
     storm_reports_bounded].

init_per_suite(Config) ->
    ok = falco_test_listener:start_tls_app(),
    Config.

end_per_suite(_Config) ->
    ok.

init_per_testcase(Case, Config) ->
    ok = falco_test_listener:ensure_stopped(Case),
    Config.

end_per_testcase(Case, _Config) ->
    ok = falco_test_listener:ensure_stopped(Case),
    ok.

%% -- helpers ---------------------------------------------------------------

handler(Req) ->
    case falco_req:path(Req) of
        <<"/ws">> -> ws_upgrade(Req);
        _ -> {200, [], <<"hello">>}
    end.

ws_upgrade(_Req) ->
    {websocket, ?MODULE, undefined, #{}}.

handle_in(Msg, State) ->
    {reply, Msg, State}.

opts() ->
    #{port => 0, ip => {127, 0, 0, 1}, handler => fun ?MODULE:handler/1, num_acceptors => 4}.

%% The WebSocket session's init (this module is its handler too), and the
%% user's supervisor's: one listener, from falco:child_spec/2.
init(undefined) ->
    {ok, undefined};
init({Name, Opts}) ->
    {ok, {#{strategy => one_for_one, intensity => 5, period => 10},
          [falco:child_spec(Name, Opts)]}}.

user_sup(Name) ->
    user_sup(Name, opts()).

user_sup(Name, Opts) ->
    {ok, Sup} = supervisor:start_link(?MODULE, {Name, Opts}),
    unlink(Sup),
    Sup.

listener_sup(Name) ->
    [{_, _, _, Sup, _}] = ets:lookup(falco_listeners, Name),
    Sup.

acceptor_sup(ListenerSup) ->
    {acceptors, AccSup, supervisor, _} =
        lists:keyfind(acceptors, 1, supervisor:which_children(ListenerSup)),
    AccSup.

%% A GET on a new connection: its status, or the error.
get_status(Port) ->
    case gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {active, false}], 2000) of
        {ok, Sock} ->
            ok = gen_tcp:send(Sock, <<"GET / HTTP/1.1\r\n" ?HOST "Connection: close\r\n\r\n">>),
            R = case ?C:recv_response(Sock, #{timeout => 5000}) of
                    {ok, #{status := Status}} -> Status;
                    Error -> Error
                end,
            gen_tcp:close(Sock),
            R;
        Error ->
            Error
    end.

kill_and_wait(Pid) ->
    Mon = monitor(process, Pid),
    exit(Pid, kill),
    receive {'DOWN', Mon, process, _, _} -> ok after 5000 -> ct:fail({alive, Pid}) end.

%% 11 acceptor deaths within a second: falco_acceptor_sup (10 in 10 s)
%% gives up and falco_listener_sup starts it again.
acceptor_storm(Name) ->
    LSup = listener_sup(Name),
    AccSup0 = acceptor_sup(LSup),
    lists:foreach(fun(_) ->
                          ok = ?C:wait_until(fun() -> live_acceptors(Name) >= 1 end, 5000),
                          [A | _] = falco_test_tree:acceptors(listener_sup(Name)),
                          kill_and_wait(A)
                  end, lists:seq(1, 11)),
    ok = ?C:wait_until(fun() -> acceptor_sup(listener_sup(Name)) =/= AccSup0 end, 5000),
    ok = ?C:wait_until(fun() -> live_acceptors(Name) =:= 4 end, 5000).

live_acceptors(Name) ->
    try length(falco_test_tree:acceptors(listener_sup(Name)))
    catch _:_ -> 0
    end.

%% Alive: the same port, `running', a request served.
assert_serving(Name, Port) ->
    ?assertEqual({ok, Port}, falco:port(Name)),
    {ok, Info} = falco:info(Name),
    ?assertEqual(running, maps:get(state, Info)),
    ?assertEqual(200, get_status(Port)).

%% -- acceptors past their intensity ---------------------------------------------

acceptor_storm_recovers(_Config) ->
    Name = acceptor_storm_recovers,
    {_, Port} = falco_test_listener:start(Name, opts()),
    ?assertEqual(200, get_status(Port)),
    acceptor_storm(Name),
    assert_serving(Name, Port).

acceptor_storm_recovers_user_sup(_Config) ->
    Name = acceptor_storm_recovers_user_sup,
    Sup = user_sup(Name),
    try
        {ok, Port} = falco:port(Name),
        LSup = listener_sup(Name),
        acceptor_storm(Name),
        %% the listener itself was not restarted: the same supervisor
        ?assertEqual(LSup, listener_sup(Name)),
        assert_serving(Name, Port)
    after
        exit(Sup, shutdown)
    end.

%% -- the listener past its own intensity -----------------------------------------

%% Deaths of the acceptors' supervisor until the listener (10 restarts in
%% 10 s) stops: 11 at most.
listener_storm(Name) ->
    LSup = listener_sup(Name),
    Mon = monitor(process, LSup),
    listener_storm(LSup, Mon, 11).

listener_storm(_LSup, _Mon, 0) ->
    ct:fail(listener_alive);
listener_storm(LSup, Mon, N) ->
    receive
        {'DOWN', Mon, process, _, Why} -> ct:log("the listener stopped: ~p", [Why])
    after 0 ->
        case ?C:wait_until(fun() ->
                                   try is_pid(acceptor_sup(LSup)) catch _:_ -> false end
                           end, 1000) of
            ok -> kill_and_wait(acceptor_sup(LSup));
            _ -> ok
        end,
        receive
            {'DOWN', Mon, process, _, Why} -> ct:log("the listener stopped: ~p", [Why])
        after 100 ->
            listener_storm(LSup, Mon, N - 1)
        end
    end.

%% Gone: port/1 and info/1 say so, the port is closed, and the name can be
%% started again.
listener_storm_stops(_Config) ->
    Name = listener_storm_stops,
    {_, Port} = falco_test_listener:start(Name, opts()),
    listener_storm(Name),
    ?assertEqual({error, not_found}, falco:port(Name)),
    ?assertEqual({error, not_found}, falco:info(Name)),
    ?assertEqual({error, econnrefused}, get_status(Port)),
    {_, Port2} = falco_test_listener:start(Name, opts()),
    ?assertEqual(200, get_status(Port2)).

%% Under the user's supervisor the listener is started again by it.
listener_storm_user_sup_restarts(_Config) ->
    Name = listener_storm_user_sup_restarts,
    Sup = user_sup(Name),
    try
        LSup = listener_sup(Name),
        listener_storm(Name),
        ok = ?C:wait_until(fun() ->
                                   case ets:lookup(falco_listeners, Name) of
                                       [{_, _, _, New, _}] -> New =/= LSup
                                                                  andalso is_process_alive(New);
                                       [] -> false
                                   end
                           end, 5000),
        {ok, Port} = falco:port(Name),
        assert_serving(Name, Port)
    after
        exit(Sup, shutdown)
    end.

%% -- code loading --------------------------------------------------------------

%% Every falco module purged (brutally: processes in its old code are
%% killed) and loaded, three times: what two `r3:compile()' in a shell
%% within ten seconds do. The first load only makes the running code old;
%% the second and third purges kill the processes in it (the 10 acceptors
%% each time, and every connection process in falco's code).
reload_all() ->
    Mods = [M || {M, _} <- code:all_loaded(), lists:prefix("falco", atom_to_list(M))],
    lists:foreach(fun(_) ->
                          [begin _ = code:purge(M), {module, M} = code:load_file(M) end
                           || M <- Mods],
                          %% the acceptors killed are started again meanwhile
                          timer:sleep(100)
                  end, [1, 2, 3]),
    length(Mods).

%% In a node of its own (this one's falco modules are cover-compiled): a
%% listener with an idle keep-alive, an h2c and a WebSocket connection and
%% processes waiting in accept. After the reloads a new connection is
%% served at once (the acceptors killed by the purge are started again on
%% the open socket); the connections running falco's old code ended with
%% it (the WebSocket, if idle long enough to hibernate, with a close
%% frame).
code_reload_keeps_serving(_Config) ->
    %% the default 10 acceptors: a purge kills them all, two make 20
    %% deaths, past falco_acceptor_sup's intensity (10 in 10 s)
    {Peer, Port} = falco_test_listener:peer(reload, fun ?MODULE:handler/1, #{}),
    try
        {Keep, {ok, #{status := 200}}} = ?C:request(Port, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
        H2 = ?H2:connect(Port, #{}),
        {Id, H2a} = ?H2:request(H2, <<"GET">>, <<"/">>),
        {ok, #{status := 200}, _} = ?H2:response(H2a, Id),
        {Ws, #{status := 101}} = ?WS:connect(Port, <<"/ws">>),
        N = peer:call(Peer, ?MODULE, reload_all, [], 30000),
        ct:log("~p falco modules purged and loaded three times", [N]),
        T0 = erlang:monotonic_time(millisecond),
        ?assertEqual(200, get_status(Port)),
        ct:log("a new connection served ~p ms after the reloads",
               [erlang:monotonic_time(millisecond) - T0]),
        {ok, Info} = peer:call(Peer, falco, info, [reload]),
        ?assertEqual(running, maps:get(state, Info)),
        ?assertEqual(10, maps:get(acceptors, Info)),
        %% what became of the connections open across the reloads
        _ = gen_tcp:send(Keep, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
        KeepAfter = ?C:recv_response(Keep, #{timeout => 2000}),
        WsAfter = case ?WS:send(Ws, text, <<"after">>) of
                      ok -> ?WS:recv(Ws, 2000);
                      Err -> Err
                  end,
        ct:log("after the reloads: keep-alive ~p, WebSocket ~p", [KeepAfter, WsAfter]),
        %% ended with the code they ran (hot-upgrade.md says so)
        ?assertMatch({error, _}, KeepAfter),
        ?assert(element(1, WsAfter) =:= error orelse element(1, WsAfter) =:= close),
        [?C:close(S) || S <- [Keep, Ws]],
        ?H2:close(H2)
    after
        peer:stop(Peer)
    end.

%% A release upgrade's `update' instruction for falco's processes:
%% suspend, code_change and resume through sys, on the acceptors and the
%% connections (what release_handler does for a module of theirs). The
%% idle keep-alive, h2c and WebSocket connections all go on, and so do
%% the processes waiting in accept.
sys_update_loses_nothing(_Config) ->
    Name = sys_update_loses_nothing,
    {LSup, Port} = falco_test_listener:start(Name, opts()),
    {Keep, {ok, #{status := 200}}} = ?C:request(Port, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
    H2 = ?H2:connect(Port, #{}),
    {Id, H2a} = ?H2:request(H2, <<"GET">>, <<"/">>),
    {ok, #{status := 200}, H2b} = ?H2:response(H2a, Id),
    {Ws, #{status := 101}} = ?WS:connect(Port, <<"/ws">>),
    ok = ?C:wait_until(fun() -> length(falco_test_tree:conns(LSup)) =:= 3 end, 5000),
    Procs = falco_test_tree:acceptors(LSup) ++ falco_test_tree:conns(LSup),
    [ok = sys:suspend(P, 5000) || P <- Procs],
    [ok = sys:change_code(P, falco_conn, undefined, [], 5000) || P <- Procs],
    [ok = sys:resume(P, 5000) || P <- Procs],
    ?assert(lists:all(fun erlang:is_process_alive/1, Procs)),
    _ = gen_tcp:send(Keep, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
    ?assertMatch({ok, #{status := 200}}, ?C:recv_response(Keep)),
    {Id2, H2c} = ?H2:request(H2b, <<"GET">>, <<"/">>),
    ?assertMatch({ok, #{status := 200}, _}, ?H2:response(H2c, Id2)),
    ok = ?WS:send(Ws, text, <<"still here">>),
    ?assertEqual({text, <<"still here">>}, ?WS:recv(Ws)),
    ?assertEqual(200, get_status(Port)),
    [?C:close(S) || S <- [Keep, Ws]],
    ?H2:close(H2).

%% -- reports --------------------------------------------------------------------

%% Both storms on a TLS listener under the user's supervisor: every report
%% printed (as the default handler formats it, multi-line, no limits) is under
%% 4 KB, none carries the listener's options or TLS options, the count is
%% bounded by the restart intensities, and the reports that say a
%% supervisor gave up name the listener. (Before: 57 reports, 7,600 lines,
%% each with the whole configuration; 245 lines for the TLS options.)
storm_reports_bounded(_Config) ->
    Name = storm_reports_bounded,
    Opts = falco_test_listener:tls(opts()),
    ok = falco_test_tree:capture_log(Name),
    Sup = user_sup(Name, Opts),
    try
        acceptor_storm(Name),
        listener_storm(Name),
        ok = ?C:wait_until(fun() -> live_acceptors(Name) =:= 4 end, 5000),
        timer:sleep(200),
        %% what the default logger configuration prints: notice and above
        Events = [E || E = #{level := L} <- falco_test_tree:logged(),
                       logger:compare_levels(L, notice) =/= lt],
        %% as the default handler prints them (kernel's default formatter)
        Format = #{legacy_header => true, single_line => false},
        Texts = [iolist_to_binary(logger_formatter:format(E, Format)) || E <- Events],
        Sizes = [byte_size(T) || T <- Texts],
        Lines = lists:sum([length(binary:split(T, <<"\n">>, [global])) || T <- Texts]),
        ct:log("~p reports, ~p lines, the largest ~p bytes:~n~s",
               [length(Texts), Lines, lists:max(Sizes), Texts]),
        ?assert(length(Texts) =< 50),
        ?assert(lists:max(Sizes) < 4096),
        %% no certificate, key or option map in any of them
        ?assertEqual([], [T || T <- Texts, binary:match(T, [<<"certs_keys">>, <<"tls_opts">>,
                                                            <<"handler">>, <<"cert">>]) =/= nomatch]),
        GaveUp = fun(Who) -> [T || T <- Texts, binary:match(T, Who) =/= nomatch,
                                   binary:match(T, <<"reached_max_restart_intensity">>) =/= nomatch]
                 end,
        ?assertMatch([_ | _], GaveUp(<<"falco_acceptors_storm_reports_bounded">>)),
        ?assertMatch([_ | _], GaveUp(<<"falco_listener_storm_reports_bounded">>)),
        %% and a line of falco's own says which listener and what became of it
        Said = [T || T <- Texts, binary:match(T, <<"falco: listener storm_reports_bounded: its "
                                                   "acceptors' supervisor gave up">>) =/= nomatch],
        ct:log("falco's lines: ~p", [Said]),
        ?assertMatch([_ | _], Said)
    after
        logger:remove_handler(Name),
        exit(Sup, shutdown)
    end.
