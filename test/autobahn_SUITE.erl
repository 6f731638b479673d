%% Autobahn's WebSocket test cases (all 517, through kosoku, a native
%% runner of Autobahn's own case files) against the example application's
%% echo endpoint, /ws, as `make run' serves it: all 517 over ws://, and
%% over wss:// all but the 216 permessage-deflate cases (12.x, 13.x),
%% whose code does not depend on the transport and which take minutes
%% through the relay (set FALCO_AUTOBAHN_WSS=all to run them too).
%%
%% Over RFC 8441 the cases go through a relay of this suite too, one that
%% changes the carrier: it takes kosoku's HTTP/1.1 handshake, opens an
%% extended CONNECT to the same route on falco over h2c (prior knowledge)
%% or h2 (TLS, ALPN h2) with the client's Sec-WebSocket-Extensions and
%% Sec-WebSocket-Protocol, answers kosoku with a 101 (the accept key
%% computed from its key, the extensions and protocol falco's 200 chose),
%% then copies bytes both ways: kosoku's masked frames go into DATA frames
%% unchanged (falco_test_ws_tunnel, within the flow-control windows),
%% the stream's DATA goes back to kosoku, its TCP close is END_STREAM and
%% the stream's end (END_STREAM, RST_STREAM) closes kosoku's connection.
%% Over h2c and h2 `make test' runs the 301 cases without
%% permessage-deflate and 25 with it (h2_selection/0), all 517 with
%% FALCO_AUTOBAHN_H2C=all or FALCO_AUTOBAHN_H2=all (each about 10
%% minutes, as over ws://: the 216 permessage-deflate cases are most of
%% it).
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
-export([ws_all_cases/1, wss_all_cases/1, h2c_all_cases/1, h2_cases/1, h3_cases/1]).

-define(CASES, 517).
-define(DEFLATE_CASES, 216).
%% kosoku's deadline for one carrier's run (ms): 517 cases took at most
%% 635 s on a 2-core host kept at a load of 7 (2026-12-02); CT's own
%% timetrap (30 min) stays above it.
-define(KOSOKU_TIMEOUT, 1500000).

all() ->
    [ws_all_cases, wss_all_cases, h2c_all_cases, h2_cases, h3_cases].

init_per_suite(Config) ->
    Kosoku = find_kosoku(),
    case falco_test_tools:check([{found, "kosoku", Kosoku}]) of
        ok ->
            ok = falco_test_listener:start_tls_app(),
            {ok, _} = falco_example:start(#{port => 0}),
            {ok, _} = falco_example:start_tls(?config(priv_dir, Config), #{port => 0}),
            [{kosoku, Kosoku} | Config];
        NotThere ->
            NotThere
    end.

end_per_suite(Config) ->
    ok = falco_test_listener:ensure_stopped([falco_example, falco_example_tls]),
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

%% RFC 8441 over h2c: the same selection as h2 (below), all 517 with
%% FALCO_AUTOBAHN_H2C=all.
h2c_all_cases(Config) ->
    tunnel_cases(Config, h2c, falco_example, "FALCO_AUTOBAHN_H2C").

%% RFC 8441 over h2 (TLS): the 301 cases without permessage-deflate and,
%% of the 216 with it, cases 2 and 3 of each of the 12 groups 12.1-12.5
%% and 13.1-13.7 (every parameter set the cases negotiate: window bits,
%% no context takeover; 1,000 small messages each) and 12.2.10 (1,000
%% messages of 128 KB each way, about 15 s: the relay gives back the
%% window of every DATA frame, which falco's flood budget once took for a
%% flood), 326 in all; all 517 with FALCO_AUTOBAHN_H2=all. The rest of
%% 12.x and 13.x repeat those sets with larger messages (up to 128 KB):
%% over h2c the 216 deflate cases were about 97 % of kosoku's 635 s
%% (2026-12-02, a loaded 2-core host). (kosoku's -i takes a case id or a
%% glob: 12.2.1* is 12.2.1 and 12.2.10 to 12.2.18.)
h2_cases(Config) ->
    tunnel_cases(Config, h2, falco_example_tls, "FALCO_AUTOBAHN_H2").

%% RFC 9220 over HTTP/3: the relay's tunnels are aioquic's
%% (falco_test_ws_tunnel_h3, a QUIC connection per session), to a listener
%% of the example's routes with an RSA certificate (aioquic refuses the
%% ECDSA certificates OTP makes); the same selection as h2, all 517 with
%% FALCO_AUTOBAHN_H3=all.
h3_cases(Config) ->
    ok = falco_test_tools:require(falco_test_ws_tunnel_h3:tools()),
    Tls = [O || O = {K, _} <- falco_test_tls13:ssl_server_opts(rsa), K =/= cacerts],
    {ok, _} = falco:start_listener(autobahn_h3, #{ip => {127, 0, 0, 1}, port => 0,
                                                  routes => falco_example:routes(),
                                                  middleware => falco_example:middleware(),
                                                  transport => tls, tls_opts => Tls,
                                                  http3 => true}),
    try tunnel_cases(Config, h3, autobahn_h3, "FALCO_AUTOBAHN_H3")
    after falco:stop_listener(autobahn_h3)
    end.

%% Kosoku through the RFC 8441 relay in front of `Listener': the
%% selection below, or all 517 when `Env' says `all'.
tunnel_cases(Config, Carrier, Listener, Env) ->
    {ok, Port} = falco:port(Listener),
    {Relay, RelayPort} = relay_h2(Carrier, Port),
    {Args, Cases} = case os:getenv(Env) of
                        "all" -> {[], ?CASES};
                        _ -> h2_selection()
                    end,
    try run(Config, RelayPort, atom_to_list(Carrier), Args, Cases)
    after exit(Relay, kill)
    end.

h2_selection() ->
    Plain = ["1.*", "2.*", "3.*", "4.*", "5.*", "6.*", "7.*", "9.*", "10.*"],
    Deflate = [lists:concat([G, ".", N, ".", C]) || {G, Ns} <- [{12, 5}, {13, 7}],
                                                   N <- lists:seq(1, Ns), C <- [2, 3]],
    {lists:append([["-i", C] || C <- Plain ++ Deflate ++ ["12.2.10"]]),
     ?CASES - ?DEFLATE_CASES + 25}.

run(Config, Port, Name, Extra, Cases) ->
    {Exe, PythonPath} = ?config(kosoku, Config),
    Out = filename:join(?config(priv_dir, Config), Name),
    Url = "ws://127.0.0.1:" ++ integer_to_list(Port) ++ "/ws",
    T0 = erlang:monotonic_time(millisecond),
    {Status, Output} = falco_test_run:run(Exe, [Url, "-p", "2", "-o", Out | Extra],
                                          #{timeout => ?KOSOKU_TIMEOUT,
                                            env => [{"PYTHONPATH", PythonPath}]}),
    Took = (erlang:monotonic_time(millisecond) - T0) / 1000,
    ct:comment("~s: ~b cases in ~.1f s", [Name, Cases, Took]),
    ct:log("~s: kosoku ran ~.1f s", [Name, Took]),
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

%% -- the RFC 8441 relay -----------------------------------------------------------

%% A relay: accepts kosoku's HTTP/1.1 WebSocket connections on a fresh
%% port and carries each session in an RFC 8441 tunnel to `Port' over
%% `Carrier' (h2c or h2; h3: RFC 9220).
relay_h2(Carrier, Port) ->
    Test = self(),
    Pid = spawn(fun() ->
                        {ok, L} = gen_tcp:listen(0, [binary, {ip, {127, 0, 0, 1}},
                                                     {active, false}, {reuseaddr, true},
                                                     {nodelay, true}]),
                        {ok, RelayPort} = inet:port(L),
                        Test ! {relay_port, self(), RelayPort},
                        accept_h2(L, Carrier, Port)
                end),
    receive {relay_port, Pid, RelayPort} -> {Pid, RelayPort} after 5000 -> error(no_relay) end.

accept_h2(L, Carrier, Port) ->
    {ok, Plain} = gen_tcp:accept(L),
    Pipe = spawn(fun() -> tunnel_start(Carrier, Port) end),
    ok = gen_tcp:controlling_process(Plain, Pipe),
    Pipe ! {plain, Plain},
    accept_h2(L, Carrier, Port).

tunnel_start(Carrier, Port) ->
    Plain = receive {plain, S} -> S after 5000 -> exit(no_socket) end,
    case read_head(Plain, <<>>, erlang:monotonic_time(millisecond) + 10000) of
        {ok, Head, Early} ->
            {Path, Fields} = parse_head(Head),
            Key = proplists:get_value(<<"sec-websocket-key">>, Fields),
            Ask = [F || F = {N, _} <- Fields, N =:= <<"sec-websocket-extensions">> orelse
                                              N =:= <<"sec-websocket-protocol">>],
            {T, Resp} = falco_test_ws_tunnel:open(Carrier, Port, Path, Ask, #{}),
            case Resp of
                #{status := 200, headers := Hs} ->
                    Chosen = [[N, <<": ">>, V, <<"\r\n">>]
                              || {N, V} <- Hs, N =:= <<"sec-websocket-extensions">> orelse
                                                N =:= <<"sec-websocket-protocol">>],
                    ok = gen_tcp:send(Plain, [<<"HTTP/1.1 101 Switching Protocols\r\n"
                                                "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                                                "Sec-WebSocket-Accept: ">>, accept_key(Key),
                                              <<"\r\n">>, Chosen, <<"\r\n">>]),
                    _ = Early =:= <<>> orelse falco_test_ws_tunnel:send_async(T, Early),
                    ok = inet:setopts(Plain, [{active, true}, {exit_on_close, false}]),
                    tunnel_pipe(Plain, T);
                #{status := Status} ->
                    _ = gen_tcp:send(Plain, [<<"HTTP/1.1 ">>, integer_to_binary(Status),
                                             <<" Refused\r\nContent-Length: 0\r\n"
                                               "Connection: close\r\n\r\n">>]),
                    gen_tcp:close(Plain)
            end;
        {error, _} ->
            gen_tcp:close(Plain)
    end.

read_head(Plain, Buf, Deadline) ->
    case binary:split(Buf, <<"\r\n\r\n">>) of
        [Head, Rest] ->
            {ok, Head, Rest};
        [_] ->
            Left = max(0, Deadline - erlang:monotonic_time(millisecond)),
            case gen_tcp:recv(Plain, 0, Left) of
                {ok, Data} -> read_head(Plain, <<Buf/binary, Data/binary>>, Deadline);
                Error -> Error
            end
    end.

%% The request target and the fields, names lowercase.
parse_head(Head) ->
    [RequestLine | Lines] = binary:split(Head, <<"\r\n">>, [global]),
    [_Method, Path | _] = binary:split(RequestLine, <<" ">>, [global]),
    {Path, [begin
                [N, V] = binary:split(Line, <<":">>),
                {string:lowercase(string:trim(N)), string:trim(V)}
            end || Line <- Lines, Line =/= <<>>]}.

%% RFC 6455 §4.2.2 item 5.4.
accept_key(Key) ->
    base64:encode(crypto:hash(sha, <<Key/binary, "258EAFA5-E914-47DA-95CA-C5AB0DC85B11">>)).

%% Bytes both ways: kosoku's go into DATA frames, the stream's come back;
%% kosoku's close is END_STREAM (what falco's answer then still sends is
%% passed on), the stream's end closes kosoku's connection.
tunnel_pipe(Plain, T) ->
    receive
        {tcp, Plain, Data} ->
            ok = falco_test_ws_tunnel:send_async(T, Data),
            tunnel_pipe(Plain, T);
        {tunnel_data, T, Data} ->
            _ = gen_tcp:send(Plain, Data),
            ok = falco_test_ws_tunnel:consumed(T, byte_size(Data)),
            tunnel_pipe(Plain, T);
        {tunnel_closed, T, _} ->
            gen_tcp:close(Plain),
            falco_test_ws_tunnel:close(T);
        {tcp_closed, Plain} ->
            ok = falco_test_ws_tunnel:end_stream(T),
            tunnel_pipe(Plain, T);
        {tcp_error, Plain, _} ->
            gen_tcp:close(Plain),
            falco_test_ws_tunnel:close(T)
    after 60000 ->
        gen_tcp:close(Plain),
        falco_test_ws_tunnel:close(T)
    end.
