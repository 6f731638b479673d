%% TLS listeners: protocol versions (TLS 1.3 only, TLS 1.2 only, both),
%% the check of `tls_opts' when the listener starts (ssl:listen/2 processes
%% them once, so a bad option is a start error rather than a failure of
%% every handshake), max_connections and the listen socket's life over TLS,
%% and the deadlines of a connection's start: the handshake ends within
%% `handshake_timeout' and the first request's `request_timeout' from the
%% accept, whichever comes first (a ClientHello trickled a byte at a time
%% included), and a connection silent after its handshake is closed at
%% the first request's deadline.
%% Clients: OTP's ssl, and curl where installed (skipped without it unless
%% FALCO_REQUIRE_TOOLS=1, see falco_test_tools).
-module(tls_SUITE).

-include_lib("common_test/include/ct.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1, init_per_testcase/2, end_per_testcase/2]).
-export([tls13_only/1, tls13_only_curl/1, tls12_only/1, both_versions/1, bad_options/1,
         max_connections/1, stop_closes_listen_socket/1, ssl_started_by_tls_listener/1,
         trickled_hello_request_timeout/1, trickled_hello_handshake_timeout/1,
         silent_after_handshake/1]).
%% the handler, also of the peer node of ssl_started_by_tls_listener
-export([handle/1]).

all() ->
    [tls13_only, tls13_only_curl, tls12_only, both_versions, bad_options, max_connections,
     stop_closes_listen_socket, ssl_started_by_tls_listener,
     trickled_hello_request_timeout, trickled_hello_handshake_timeout, silent_after_handshake].

init_per_suite(Config) ->
    ok = falco_test_listener:start_tls_app(),
    TlsOpts = falco_test_tls:server_opts(),
    [{tls_opts, TlsOpts} | Config].

end_per_suite(Config) ->
    Config.

init_per_testcase(tls13_only_curl, Config) ->
    falco_test_tools:require(["curl"], Config);
init_per_testcase(_, Config) ->
    Config.

end_per_testcase(_, Config) ->
    ok = falco_test_listener:ensure_stopped(tls_l),
    Config.

handle(Req) ->
    {200, [{<<"content-type">>, <<"text/plain">>}],
     iolist_to_binary(["hello ", falco_req:scheme(Req) =:= https andalso "https",
                       " ", integer_to_list(element(1, falco_req:version(Req)))])}.

start(Extra, Config) ->
    start(Extra, [], Config).

start(Extra, TlsExtra, Config) ->
    Tls = falco_test_listener:tls(#{tls_opts => ?config(tls_opts, Config) ++ TlsExtra}),
    {_, Port} = falco_test_listener:start(tls_l, fun handle/1, maps:merge(Tls, Extra)),
    Port.

connect(Port, Versions) ->
    ssl:connect({127, 0, 0, 1}, Port, [binary, {active, false}, {verify, verify_none},
                                       {versions, Versions},
                                       {alpn_advertised_protocols, [<<"http/1.1">>]}], 5000).

%% One HTTP/1.1 request over an established TLS connection (read with the
%% raw client, which takes TLS sockets too); the server then closes.
get_hello(S) ->
    falco_test_client:send(S, <<"GET /hello HTTP/1.1\r\nhost: a\r\nconnection: close\r\n\r\n">>),
    {ok, #{version := <<"HTTP/1.1">>, status := 200, body := Body}} =
        falco_test_client:recv_response(S),
    ok = falco_test_client:expect_closed(S, 5000),
    Body.

protocol(S) ->
    {ok, [{protocol, P}]} = ssl:connection_information(S, [protocol]),
    P.

%% `versions => ['tlsv1.3']' alone: falco adds none of its TLS-1.2-only
%% defaults (OTP's ssl refuses them with TLS 1.3 only, which used to fail
%% every handshake), serves TLS 1.3 clients and refuses TLS 1.2 ones.
tls13_only(Config) ->
    Port = start(#{}, [{versions, ['tlsv1.3']}], Config),
    {ok, S} = connect(Port, ['tlsv1.3']),
    'tlsv1.3' = protocol(S),
    {ok, <<"http/1.1">>} = ssl:negotiated_protocol(S),
    <<"hello https 1">> = get_hello(S),
    ok = ssl:close(S),
    {error, _} = connect(Port, ['tlsv1.2']),
    %% and h2 by ALPN over TLS 1.3
    C = falco_test_h2_client:connect(Port, #{transport => tls}),
    {Id, C1} = falco_test_h2_client:request(C, <<"GET">>, <<"/hello">>),
    {ok, #{status := 200, body := Body}, C2} = falco_test_h2_client:response(C1, Id),
    <<"hello https 2">> = iolist_to_binary(Body),
    ok = falco_test_h2_client:close(C2).

%% The same with a real client: curl, forced to TLS 1.3.
tls13_only_curl(Config) ->
    Port = start(#{}, [{versions, ['tlsv1.3']}], Config),
    Url = "https://127.0.0.1:" ++ integer_to_list(Port) ++ "/hello",
    "hello https 2|2" = cmd("curl -sk --tlsv1.3 --http2 -w '|%{http_version}' " ++ Url),
    "hello https 1|1.1" = cmd("curl -sk --tlsv1.3 --http1.1 -w '|%{http_version}' " ++ Url),
    %% a client that stops at TLS 1.2 gets no answer
    Refused = cmd("curl -sk --tlsv1.2 --tls-max 1.2 -o /dev/null -w '%{http_code}' " ++ Url),
    "000" = Refused.

cmd(Args) ->
    Out = falco_test_run:cmd(Args, 60000),
    ct:log("~ts~n~ts", [Args, Out]),
    Out.

%% `versions => ['tlsv1.2']': TLS 1.2 with falco's TLS 1.2 defaults (no
%% client-initiated renegotiation, AEAD suites with ECDHE only).
tls12_only(Config) ->
    Port = start(#{}, [{versions, ['tlsv1.2']}], Config),
    {ok, S} = connect(Port, ['tlsv1.2']),
    'tlsv1.2' = protocol(S),
    {ok, [{selected_cipher_suite, #{mac := aead, key_exchange := KE}}]} =
        ssl:connection_information(S, [selected_cipher_suite]),
    true = lists:member(KE, [ecdhe_ecdsa, ecdhe_rsa]),
    {error, _} = ssl:renegotiate(S),
    ok = ssl:close(S),
    {ok, S2} = connect(Port, ['tlsv1.2']),
    <<"hello https 1">> = get_hello(S2),
    ok = ssl:close(S2),
    {error, _} = connect(Port, ['tlsv1.3']).

%% The default: both versions, the client's highest wins.
both_versions(Config) ->
    Port = start(#{}, Config),
    {ok, S} = connect(Port, ['tlsv1.3', 'tlsv1.2']),
    'tlsv1.3' = protocol(S),
    <<"hello https 1">> = get_hello(S),
    {ok, S2} = connect(Port, ['tlsv1.2']),
    'tlsv1.2' = protocol(S2),
    <<"hello https 1">> = get_hello(S2).

%% A bad `tls_opts' fails falco:start_listener/2 with a reason naming it,
%% and leaves no listener behind.
bad_options(Config) ->
    Bad = fun(Extra) ->
                  {error, {invalid_option, tls_opts, Reason}} =
                      falco:start_listener(tls_l, #{port => 0, ip => {127, 0, 0, 1},
                                                    handler => fun handle/1, transport => tls,
                                                    tls_opts => ?config(tls_opts, Config) ++ Extra}),
                  {error, not_found} = falco:port(tls_l),
                  Reason
          end,
    %% an option ssl does not know
    {unknown_options, [no_such_option]} = Bad([{no_such_option, 1}]),
    %% a bad value
    {verify, maybe} = Bad([{verify, maybe}]),
    {'tlsv1.9', _} = Bad([{versions, ['tlsv1.9']}]),
    %% options that do not fit the versions
    {dependency, {reuse_sessions, _}} = Bad([{versions, ['tlsv1.3']}, {reuse_sessions, true}]),
    {dependency, {secure_renegotiate, _}} =
        Bad([{versions, ['tlsv1.3']}, {secure_renegotiate, true}]),
    {dependency, {session_tickets, _}} = Bad([{versions, ['tlsv1.2']}, {session_tickets, stateless}]),
    %% what falco refuses itself
    {versions, []} = Bad([{versions, []}]),
    {socket_option, active} = Bad([{active, true}]),
    {socket_option, packet} = Bad([{packet, 4}]),
    {handshake, hello} = Bad([{handshake, hello}]),
    %% files that hold no certificate, or no key (ssl would read them only
    %% per connection)
    Junk = filename:join(?config(priv_dir, Config), "junk.pem"),
    ok = file:write_file(Junk, <<"not a PEM file\n">>),
    {CertPem, KeyPem} = pem_files(Config),
    Files = fun(Cert, Key) ->
                    {error, {invalid_option, tls_opts, R}} =
                        falco:start_listener(tls_l, #{port => 0, ip => {127, 0, 0, 1},
                                                      handler => fun handle/1, transport => tls,
                                                      tls_opts => [{certfile, Cert}, {keyfile, Key}]}),
                    R
            end,
    {no_certificate, {certfile, Junk}} = Files(Junk, KeyPem),
    {no_certificate, {certfile, KeyPem}} = Files(KeyPem, KeyPem),
    {no_private_key, {keyfile, CertPem}} = Files(CertPem, CertPem),
    {_, FilePort} = falco_test_listener:start(
                      tls_l, fun handle/1,
                      falco_test_listener:tls(#{tls_opts => [{certfile, CertPem}, {keyfile, KeyPem}]})),
    {ok, S} = connect(FilePort, ['tlsv1.3']),
    <<"hello https 1">> = get_hello(S),
    ok = falco_test_listener:stop(tls_l),
    %% a good list still starts
    _ = start(#{}, [{versions, ['tlsv1.3']}, {session_tickets, disabled}], Config).

%% max_connections holds over TLS: with one slot taken, the next client's
%% handshake waits (its TCP connection sits unserved) until the slot frees.
max_connections(Config) ->
    Port = start(#{max_connections => 1, num_acceptors => 1}, Config),
    {ok, S1} = connect(Port, ['tlsv1.3']),
    %% counted once the acceptor has heard of it, maybe a moment after
    ok = falco_test_client:wait_until(fun() -> falco:connections(tls_l) =:= {ok, 1} end, 3000),
    Self = self(),
    Pid = spawn_link(fun() ->
                             R = connect(Port, ['tlsv1.3']),
                             _ = [ok = ssl:controlling_process(S, Self) || {ok, S} <- [R]],
                             Self ! {second, R}
                     end),
    receive {second, Early} -> ct:fail({served_over_the_limit, Early})
    after 500 -> ok
    end,
    ok = ssl:close(S1),
    receive
        {second, {ok, S2}} ->
            <<"hello https 1">> = get_hello(S2)
    after 5000 ->
        ct:fail({second_not_served, Pid})
    end.

%% Stopping the listener closes the ssl listen socket at once: the port
%% refuses connections and a new listener can bind it again.
stop_closes_listen_socket(Config) ->
    Port = start(#{}, Config),
    {ok, S} = connect(Port, ['tlsv1.3']),
    ok = ssl:close(S),
    ok = falco:stop_listener(tls_l),
    {error, econnrefused} = gen_tcp:connect({127, 0, 0, 1}, Port, [], 1000),
    Port = start(#{port => Port}, Config),
    {ok, S2} = connect(Port, ['tlsv1.3']),
    <<"hello https 1">> = get_hello(S2).

%% falco does not start ssl (nor crypto and public_key) with itself: the
%% first TLS listener does, so a node serving plain HTTP never holds it. A
%% node that cannot start ssl (its code path lacks it, as a release built
%% without it) gets {error, {tls_unavailable, Reason, Fix}} from
%% start_listener, and no listener; once ssl can be found, the same call
%% starts it and serves TLS. In a node of its own, where nothing else has
%% started ssl.
ssl_started_by_tls_listener(Config) ->
    Paths = [code:lib_dir(falco, ebin), filename:dirname(code:which(?MODULE))],
    {ok, Peer, _} = peer:start_link(#{connection => standard_io,
                                      args => lists:append([["-pa", P] || P <- Paths])}),
    try
        Call = fun(M, F, A) -> peer:call(Peer, M, F, A, 15000) end,
        Running = fun() -> [A || {A, _, _} <- Call(application, which_applications, [])] end,
        {ok, Started} = Call(application, ensure_all_started, [falco]),
        ct:log("started with falco: ~p", [Started]),
        [] = [A || A <- Running(), lists:member(A, [ssl, crypto, public_key])],
        Opts = #{port => 0, ip => {127, 0, 0, 1}, handler => fun ?MODULE:handle/1,
                 transport => tls, tls_opts => ?config(tls_opts, Config)},
        Dirs = [Call(code, lib_dir, [App, ebin]) || App <- [ssl, public_key]],
        [true = Call(code, del_path, [Dir]) || Dir <- Dirs],
        {error, {tls_unavailable, Why, Fix}} = Call(falco, start_listener, [tls_peer, Opts]),
        true = is_list(Fix) andalso string:find(Fix, "ssl") =/= nomatch,
        ct:log("without ssl in the code path: ~p", [Why]),
        %% certificate files, which falco reads before ssl would: the same
        %% error, not a file "without a certificate"
        {CertPem, KeyPem} = pem_files(Config),
        {error, {tls_unavailable, _, _}} =
            Call(falco, start_listener,
                 [tls_peer, Opts#{tls_opts => [{certfile, CertPem}, {keyfile, KeyPem}]}]),
        {error, not_found} = Call(falco, port, [tls_peer]),
        false = lists:member(ssl, Running()),
        [true = Call(code, add_patha, [Dir]) || Dir <- Dirs],
        {ok, _} = Call(falco, start_listener, [tls_peer, Opts]),
        true = lists:member(ssl, Running()),
        {ok, Port} = Call(falco, port, [tls_peer]),
        {ok, S} = connect(Port, ['tlsv1.3']),
        <<"hello https 1">> = get_hello(S),
        ok = ssl:close(S)
    after
        peer:stop(Peer)
    end.

%% The test certificate and key as PEM files in the case's priv_dir.
pem_files(Config) ->
    CertPem = filename:join(?config(priv_dir, Config), "cert.pem"),
    KeyPem = filename:join(?config(priv_dir, Config), "key.pem"),
    {_, CertDer} = lists:keyfind(cert, 1, ?config(tls_opts, Config)),
    {_, {KeyType, KeyDer}} = lists:keyfind(key, 1, ?config(tls_opts, Config)),
    ok = file:write_file(CertPem, public_key:pem_encode([{'Certificate', CertDer, not_encrypted}])),
    ok = file:write_file(KeyPem, public_key:pem_encode([{KeyType, KeyDer, not_encrypted}])),
    {CertPem, KeyPem}.

%% -- the deadlines of a connection's start ----------------------------------------------

%% A real ClientHello (OTP's ssl client's first record), caught by a plain
%% TCP listener.
client_hello() ->
    {ok, L} = gen_tcp:listen(0, [binary, {active, false}, {ip, {127, 0, 0, 1}}]),
    {ok, Port} = inet:port(L),
    Client = spawn(fun() -> ssl:connect({127, 0, 0, 1}, Port, [{verify, verify_none}], 5000) end),
    {ok, S} = gen_tcp:accept(L, 5000),
    {ok, <<22, 3, _, Len:16>> = Head} = gen_tcp:recv(S, 5, 5000),
    {ok, Body} = gen_tcp:recv(S, Len, 5000),
    exit(Client, kill),
    _ = gen_tcp:close(S),
    _ = gen_tcp:close(L),
    <<Head/binary, Body/binary>>.

%% Sends `Hello' a byte every 100 ms on a new connection; returns the ms
%% from the connect until the server closed it.
trickle_until_closed(Port, Hello) ->
    T0 = erlang:monotonic_time(millisecond),
    {ok, S} = gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {active, false}], 5000),
    Trickler = spawn_link(fun() -> trickle(S, Hello) end),
    closed = wait_closed(fun() -> gen_tcp:recv(S, 0, 20000) end),
    Elapsed = erlang:monotonic_time(millisecond) - T0,
    unlink(Trickler),
    exit(Trickler, kill),
    _ = gen_tcp:close(S),
    Elapsed.

trickle(S, <<B, Rest/binary>>) ->
    case gen_tcp:send(S, <<B>>) of
        ok -> timer:sleep(100), trickle(S, Rest);
        {error, _} -> ok
    end;
trickle(_, <<>>) ->
    ok.

%% Reads (and drops: an alert, if the server sends one) until the close.
wait_closed(Recv) ->
    case Recv() of
        {ok, _} -> wait_closed(Recv);
        {error, closed} -> closed;
        {error, Other} -> Other
    end.

%% request_timeout 1.5 s, handshake_timeout 10 s (its default): a
%% ClientHello of a few hundred bytes trickled a byte every 100 ms (tens
%% of seconds in all) is cut at the first request's deadline, 1.5 s from
%% the accept (before: at handshake_timeout, 10 s).
trickled_hello_request_timeout(Config) ->
    Port = start(#{request_timeout => 1500}, Config),
    Hello = client_hello(),
    Elapsed = trickle_until_closed(Port, Hello),
    ct:log("a ~p-byte ClientHello trickled, request_timeout 1500: closed after ~p ms",
           [byte_size(Hello), Elapsed]),
    true = Elapsed >= 1400,
    true = Elapsed < 5000.

%% handshake_timeout 1 s under a request_timeout of 10 s: the handshake's
%% own deadline comes first.
trickled_hello_handshake_timeout(Config) ->
    Port = start(#{request_timeout => 10000, handshake_timeout => 1000}, Config),
    Elapsed = trickle_until_closed(Port, client_hello()),
    ct:log("trickled ClientHello, handshake_timeout 1000: closed after ~p ms", [Elapsed]),
    true = Elapsed >= 900,
    true = Elapsed < 5000.

%% A connection silent after its handshake, over HTTP/1.1 and h2 (ALPN),
%% is closed at the first request's deadline, request_timeout from the
%% accept (the handshake's time included), without a reply.
silent_after_handshake(Config) ->
    Port = start(#{request_timeout => 1500, idle_timeout => 60000,
                   protocols => [http1, h2]}, Config),
    lists:foreach(
      fun(Alpn) ->
              T0 = erlang:monotonic_time(millisecond),
              {ok, S} = ssl:connect({127, 0, 0, 1}, Port,
                                    [binary, {active, false}, {verify, verify_none},
                                     {alpn_advertised_protocols, [Alpn]}], 5000),
              {ok, Alpn} = ssl:negotiated_protocol(S),
              Result = wait_closed(fun() -> ssl:recv(S, 0, 20000) end),
              Elapsed = erlang:monotonic_time(millisecond) - T0,
              ct:log("~s, silent after the handshake: ~p after ~p ms", [Alpn, Result, Elapsed]),
              closed = Result,
              true = Elapsed >= 1400,
              true = Elapsed < 5000,
              ssl:close(S)
      end, [<<"http/1.1">>, <<"h2">>]).
