%% Autobahn's WebSocket test cases (all 517, through kosoku, a native
%% runner of Autobahn's own case files) against the example application's
%% echo endpoint, /ws, as `make run' serves it: all 517 over ws://, and
%% over wss:// all but the 216 permessage-deflate cases (12.x, 13.x),
%% whose code does not depend on the transport and which take minutes
%% through the relay (set FALCO_AUTOBAHN_WSS=all to run them too).
%%
%% A case passes when kosoku exits 0 having passed all 517; the cases
%% whose behaviour is NON-STRICT or INFORMATIONAL are listed in the log.
%% kosoku speaks ws:// only, so the wss:// run goes through a relay in
%% this suite (plain TCP in, TLS to the example's TLS listener out): the
%% TLS side of falco is what is tested. scripts/bootstrap installs kosoku
%% into _build/tools/py; without it these cases are skipped, unless
%% FALCO_REQUIRE_TOOLS=1 (as `make test' sets).
-module(autobahn_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1]).
-export([ws_all_cases/1, wss_all_cases/1]).

-define(CASES, 517).
-define(DEFLATE_CASES, 216).

all() ->
    [ws_all_cases, wss_all_cases].

init_per_suite(Config) ->
    Kosoku = find_kosoku(),
    case falco_test_tools:check([{found, "kosoku", Kosoku}]) of
        ok ->
            {ok, _} = application:ensure_all_started(falco),
            {ok, _} = application:ensure_all_started(ssl),
            {ok, _} = falco_example:start(#{port => 0}),
            {ok, _} = falco_example:start_tls(?config(priv_dir, Config), #{port => 0}),
            [{kosoku, Kosoku} | Config];
        NotThere ->
            NotThere
    end.

end_per_suite(Config) ->
    _ = falco:stop_listener(falco_example),
    _ = falco:stop_listener(falco_example_tls),
    Config.

%% {Executable, PYTHONPATH}: the bootstrap's copy, or one on the PATH.
find_kosoku() ->
    Root = filename:absname(filename:join([code:lib_dir(falco), "..", "..", "..", ".."])),
    Py = filename:join([Root, "_build", "tools", "py"]),
    Bin = filename:join([Py, "bin", "kosoku"]),
    case filelib:is_regular(Bin) of
        true -> {Bin, Py};
        false ->
            case os:find_executable("kosoku") of
                false -> false;
                F -> {F, ""}
            end
    end.

ws_all_cases(Config) ->
    {ok, Port} = falco:port(falco_example),
    run(Config, Port, "ws", [], ?CASES).

wss_all_cases(Config) ->
    {ok, TlsPort} = falco:port(falco_example_tls),
    {Relay, Port} = relay(TlsPort),
    {Args, Cases} = case os:getenv("FALCO_AUTOBAHN_WSS") of
                        "all" -> {[], ?CASES};
                        _ -> {["-x", "12.*", "-x", "13.*"], ?CASES - ?DEFLATE_CASES}
                    end,
    try run(Config, Port, "wss", Args, Cases)
    after exit(Relay, kill)
    end.

run(Config, Port, Name, Extra, Cases) ->
    {Exe, PythonPath} = ?config(kosoku, Config),
    Out = filename:join(?config(priv_dir, Config), Name),
    Url = "ws://127.0.0.1:" ++ integer_to_list(Port) ++ "/ws",
    P = open_port({spawn_executable, Exe},
                  [{args, [Url, "-p", "2", "-o", Out | Extra]}, {env, [{"PYTHONPATH", PythonPath}]},
                   exit_status, stderr_to_stdout, binary]),
    {Status, Output} = collect(P, []),
    ct:log("~ts", [Output]),
    Notes = [{Id, B, C} || #{<<"id">> := Id, <<"behavior">> := B, <<"behaviorClose">> := C}
                               <- reports(Out), B =/= <<"OK">> orelse C =/= <<"OK">>],
    ct:log("not OK (NON-STRICT and INFORMATIONAL are passes): ~ts",
           [[[Id, " ", B, "/", C, "; "] || {Id, B, C} <- Notes]]),
    Expected = integer_to_binary(Cases),
    ?assertEqual(0, Status),
    ?assertMatch({match, [Expected]}, re:run(Output, "([0-9]+) cases passed",
                                              [{capture, all_but_first, binary}])),
    ?assertEqual([], [N || N = {_, B, _} <- Notes,
                           B =/= <<"NON-STRICT">>, B =/= <<"INFORMATIONAL">>]).

collect(P, Acc) ->
    receive
        {P, {data, D}} -> collect(P, [D | Acc]);
        {P, {exit_status, S}} -> {S, iolist_to_binary(lists:reverse(Acc))}
    after 900000 ->
        port_close(P),
        {timeout, iolist_to_binary(lists:reverse(Acc))}
    end.

%% The per-case JSON reports kosoku writes (Autobahn's format).
reports(Dir) ->
    [Report || F <- filelib:wildcard(filename:join(Dir, "*_case_*.json")),
               {ok, Bin} <- [file:read_file(F)],
               Report <- [json_fields(Bin)]].

json_fields(Bin) ->
    {ok, Map} = falco_json:decode(Bin),
    maps:with([<<"id">>, <<"behavior">>, <<"behaviorClose">>], Map).

%% A relay: accepts plain TCP on a fresh port and pipes each connection to
%% a TLS connection to `TlsPort'.
relay(TlsPort) ->
    Test = self(),
    Pid = spawn(fun() ->
                        %% nodelay both ways: Nagle's algorithm against delayed
                        %% acknowledgements stalls every small message ~200 ms
                        {ok, L} = gen_tcp:listen(0, [binary, {ip, {127, 0, 0, 1}},
                                                     {active, false}, {reuseaddr, true},
                                                     {nodelay, true}]),
                        {ok, Port} = inet:port(L),
                        Test ! {relay_port, self(), Port},
                        accept_loop(L, TlsPort)
                end),
    receive {relay_port, Pid, Port} -> {Pid, Port} after 5000 -> error(no_relay) end.

accept_loop(L, TlsPort) ->
    {ok, Plain} = gen_tcp:accept(L),
    Pipe = spawn(fun() -> pipe_start(TlsPort) end),
    ok = gen_tcp:controlling_process(Plain, Pipe),
    Pipe ! {plain, Plain},
    accept_loop(L, TlsPort).

pipe_start(TlsPort) ->
    Plain = receive {plain, S} -> S end,
    {ok, Tls} = ssl:connect({127, 0, 0, 1}, TlsPort,
                            [binary, {active, true}, {verify, verify_none}, {nodelay, true},
                             {alpn_advertised_protocols, [<<"http/1.1">>]}], 5000),
    %% a client that half-closes still gets what the server sends after
    ok = inet:setopts(Plain, [{active, true}, {exit_on_close, false}]),
    pipe(Plain, Tls).

%% Bytes both ways; the client's close is passed on as a half-close, and
%% the server's close ends the relay.
pipe(Plain, Tls) ->
    receive
        {tcp, Plain, Data} -> _ = ssl:send(Tls, Data), pipe(Plain, Tls);
        {ssl, Tls, Data} -> _ = gen_tcp:send(Plain, Data), pipe(Plain, Tls);
        {tcp_closed, Plain} -> _ = ssl:shutdown(Tls, write), pipe(Plain, Tls);
        {tcp_error, Plain, _} -> ssl:close(Tls), gen_tcp:close(Plain);
        {ssl_closed, Tls} -> gen_tcp:close(Plain);
        {ssl_error, Tls, _} -> ssl:close(Tls), gen_tcp:close(Plain)
    after 60000 ->
        ssl:close(Tls),
        gen_tcp:close(Plain)
    end.
