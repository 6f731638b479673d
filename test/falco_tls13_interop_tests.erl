%% falco_tls13_server against an independent client: OTP's ssl
%% (`ssl:connect/4' with versions ['tlsv1.3'], verify_peer against the
%% test CA) over gen_tcp on 127.0.0.1, the server side run by the test
%% with falco_test_tls13_records as its record layer. Each case completes
%% the handshake and sends application data both ways: each cipher
%% suite, x25519, P-256 (shared at once, and reached through a
%% HelloRetryRequest), and ECDSA P-256, P-384, RSA-2048 and Ed25519
%% certificates; falco's alerts as ssl reads them; and ssl's client
%% certificates validated (verify_peer) or refused when missing.
-module(falco_tls13_interop_tests).
-include_lib("eunit/include/eunit.hrl").

-define(R, falco_test_tls13_records).
-define(T, falco_test_tls13).

suite_spec(aes_128_gcm_sha256) -> #{cipher => aes_128_gcm, prf => sha256};
suite_spec(aes_256_gcm_sha384) -> #{cipher => aes_256_gcm, prf => sha384};
suite_spec(chacha20_poly1305_sha256) -> #{cipher => chacha20_poly1305, prf => sha256}.

ssl_suite(Suite) ->
    maps:merge(#{key_exchange => any, mac => aead}, suite_spec(Suite)).

setup() ->
    {ok, Apps} = application:ensure_all_started(ssl),
    Apps.

cleanup(Apps) ->
    [application:stop(A) || A <- lists:reverse(Apps)].

interop_test_() ->
    Cases = [{Suite, [x25519], [x25519, secp256r1], ecdsa, false} || Suite <- falco_tls13_keys:suites()]
        ++ [{aes_128_gcm_sha256, [secp256r1], [x25519, secp256r1], ecdsa, false},
            {aes_128_gcm_sha256, [x25519, secp256r1], [secp256r1], ecdsa, true},
            {aes_256_gcm_sha384, [secp384r1], [secp384r1], ecdsa384, false},
            {aes_128_gcm_sha256, [x25519], [x25519], rsa, false},
            {chacha20_poly1305_sha256, [secp256r1], [x25519, secp256r1], rsa, false},
            {aes_128_gcm_sha256, [x25519, secp256r1], [secp256r1], rsa, true},
            {aes_128_gcm_sha256, [x25519], [x25519], ed25519, false}],
    {setup, fun setup/0, fun cleanup/1,
     [{lists:flatten(io_lib:format("~p client groups ~p server groups ~p ~p", [S, CG, SG, K])),
       {timeout, 60, fun() -> interop(S, CG, SG, K, Hrr) end}}
      || {S, CG, SG, K, Hrr} <- Cases]}.

interop(Suite, ClientGroups, ServerGroups, Kind, ExpectHrr) ->
    ServerOpts = #{credentials => ?T:creds(Kind), groups => ServerGroups,
                   alpn => [<<"h2">>, <<"http/1.1">>]},
    ClientOpts = [{versions, ['tlsv1.3']}, {verify, verify_peer},
                  {cacerts, ?T:ssl_client_cacerts(Kind)},
                  {server_name_indication, "localhost"},
                  {customize_hostname_check, [{match_fun, fun(_, _) -> true end}]},
                  {ciphers, [ssl_suite(Suite)]}, {supported_groups, ClientGroups},
                  {alpn_advertised_protocols, [<<"http/1.1">>, <<"h2">>]},
                  {active, false}, binary],
    #{client := Client, server := Server} = run(ServerOpts, ClientOpts),
    ?assertMatch({ok, _}, Client),
    {ok, #{protocol := P, alpn := A, reply := Reply, cipher := C}} = Client,
    ?assertEqual({'tlsv1.3', <<"h2">>, <<"pong">>}, {P, A, Reply}),
    ?assertEqual(suite_spec(Suite), maps:with([cipher, prf], C)),
    ?assertMatch(#{received := <<"ping">>, hrr := ExpectHrr}, Server),
    Info = maps:get(info, Server),
    ?assertMatch(#{suite := Suite, server_name := <<"localhost">>, alpn := <<"h2">>}, Info),
    ?assert(lists:member(maps:get(group, Info), ServerGroups)).

%% ssl reads falco's alerts: no common ALPN protocol, no common group.
refused_test_() ->
    Base = [{versions, ['tlsv1.3']}, {verify, verify_none}, {log_level, none}, {active, false},
            binary],
    Cases = [{no_application_protocol, #{alpn => [<<"h2">>]},
              [{alpn_advertised_protocols, [<<"h3">>]}]},
             {handshake_failure, #{groups => [secp384r1]}, [{supported_groups, [x25519]}]}],
    {setup, fun setup/0, fun cleanup/1,
     [{atom_to_list(Alert),
       {timeout, 60,
        fun() ->
                #{client := Client, server := Server} =
                    run(maps:merge(#{credentials => ?T:creds(ecdsa)}, SOpts), COpts ++ Base),
                ?assertMatch({error, {tls_alert, {Alert, _}}}, Client),
                ?assertMatch(#{error := {Alert, _}}, Server)
        end}} || {Alert, SOpts, COpts} <- Cases]}.

%% Client certificates: ssl's client sends its chain (ECDSA or RSA) when
%% asked; falco validates it against the test CA and checks its
%% CertificateVerify; a client without one is refused only with
%% fail_if_no_peer_cert.
client_cert_test_() ->
    {setup, fun setup/0, fun cleanup/1,
     [{atom_to_list(Kind) ++ " client certificate",
       {timeout, 60, fun() -> client_cert(Kind) end}} || Kind <- [ecdsa, rsa]]
     ++ [{"no client certificate", {timeout, 60, fun no_client_cert/0}}]}.

client_cert(Kind) ->
    Server = maps:from_list(?T:ssl_server_opts(Kind)),
    ClientConf = ?T:ssl_client_opts(Kind),
    ServerOpts = #{credentials => ?T:creds(Kind), verify => verify_peer,
                   fail_if_no_peer_cert => true,
                   trusted => falco_tls13_cert:trusted(maps:with([cacerts], Server))},
    ClientOpts = [{versions, ['tlsv1.3']}, {verify, verify_none}, {log_level, none},
                  {active, false}, binary | ClientConf],
    #{client := Client, server := S} = run(ServerOpts, ClientOpts),
    ?assertMatch({{ok, #{reply := <<"pong">>}}, none}, {Client, maps:get(error, S, none)}),
    ?assertMatch(#{received := <<"ping">>}, S),
    [{peer_certificates, Chain}] = [R || R = {peer_certificates, _} <- maps:get(reported, S)],
    ?assertEqual(proplists:get_value(cert, ClientConf), hd(Chain)).

no_client_cert() ->
    Base = [{versions, ['tlsv1.3']}, {verify, verify_none}, {log_level, none}, {active, false},
            binary],
    Opts = #{credentials => ?T:creds(ecdsa), verify => verify_peer,
             trusted => ?T:ssl_client_cacerts(ecdsa)},
    #{client := Client1} = run(Opts, Base),
    ?assertMatch({ok, #{reply := <<"pong">>}}, Client1),
    #{client := Client2, server := S2} = run(Opts#{fail_if_no_peer_cert => true}, Base),
    %% In TLS 1.3 the client is done before the alert comes: its send or
    %% read fails, with the alert or as closed (ssl's race).
    ?assert(lists:member(Client2, [{recv, {error, closed}}])
            orelse element(1, element(2, element(2, Client2))) =:= tls_alert),
    ?assertMatch(#{error := {certificate_required, _}}, S2).

%% -- the two sides ------------------------------------------------------------

run(ServerOpts, ClientOpts) ->
    {ok, L} = gen_tcp:listen(0, [binary, {active, false}, {ip, {127, 0, 0, 1}}]),
    {ok, Port} = inet:port(L),
    Parent = self(),
    Pid = spawn_link(fun() -> Parent ! {client, self(), client(Port, ClientOpts)} end),
    {ok, Sock} = gen_tcp:accept(L, 10000),
    Server = serve(Sock, #{machine => falco_tls13_server:new(ServerOpts), buf => <<>>,
                           read => plain, write => plain, hrr => false}),
    Client = receive {client, Pid, R} -> R after 10000 -> client_timeout end,
    gen_tcp:close(Sock),
    gen_tcp:close(L),
    #{client => Client, server => Server}.

client(Port, Opts) ->
    case ssl:connect({127, 0, 0, 1}, Port, Opts, 10000) of
        {ok, S} ->
            {P, C} = case ssl:connection_information(S, [protocol, selected_cipher_suite]) of
                         {ok, [{protocol, P0}, {selected_cipher_suite, C0}]} -> {P0, C0};
                         Closed -> {Closed, none}
                     end,
            A = case ssl:negotiated_protocol(S) of
                    {ok, Proto} -> Proto;
                    {error, _} -> none
                end,
            Reply = case ssl:send(S, <<"ping">>) of
                        ok -> ssl:recv(S, 0, 10000);
                        SendError -> SendError
                    end,
            _ = ssl:close(S),
            case Reply of
                {ok, Data} -> {ok, #{protocol => P, cipher => C, alpn => A, reply => Data}};
                Error -> {recv, Error}
            end;
        Error ->
            Error
    end.

%% The server: records in, the machine's actions out, until the client's
%% "ping", answered with "pong".
serve(Sock, St = #{buf := Buf}) ->
    case ?R:next(Buf) of
        more ->
            case gen_tcp:recv(Sock, 0, 10000) of
                {ok, Data} -> serve(Sock, St#{buf := <<Buf/binary, Data/binary>>});
                Error -> St#{error => Error}
            end;
        {ok, Type, Header, Body, Rest} ->
            case record(Sock, Type, Header, Body, St#{buf := Rest}) of
                {done, St1} -> St1;
                {continue, St1} -> serve(Sock, St1)
            end
    end.

%% The client's change_cipher_spec (middlebox compatibility) is skipped.
record(_, 20, _, <<1>>, St) ->
    {continue, St};
record(Sock, 22, _, Body, St = #{read := plain}) ->
    feed(Sock, initial, Body, St);
record(Sock, 23, Header, Body, St = #{read := {Level, Keys}}) ->
    case ?R:open(Keys, Header, Body) of
        {ok, 22, Payload, Keys1} -> feed(Sock, Level, Payload, St#{read := {Level, Keys1}});
        {ok, 23, Data, Keys1} -> reply(Sock, Data, St#{read := {Level, Keys1}});
        {ok, 21, Alert, _} -> {done, St#{error => {alert, Alert}}};
        error -> {done, St#{error => bad_record_mac}}
    end;
record(_, Type, _, Body, St) ->
    {done, St#{error => {record, Type, Body}}}.

feed(Sock, Level, Bytes, St = #{machine := M}) ->
    case falco_tls13_server:handshake_data(Level, Bytes, M) of
        {ok, M1, Actions} ->
            {continue, lists:foldl(fun(A, S) -> act(Sock, A, S) end, St#{machine := M1}, Actions)};
        {error, Alert, Why} ->
            send_alert(Sock, Alert, St),
            {done, St#{error => {Alert, Why}}}
    end.

send_alert(Sock, Alert, #{write := plain}) ->
    ok = gen_tcp:send(Sock, ?R:plain(21, falco_tls13_alert:encode(Alert)));
send_alert(Sock, Alert, #{write := {_, Keys}}) ->
    {Record, _} = ?R:seal(Keys, 21, falco_tls13_alert:encode(Alert)),
    ok = gen_tcp:send(Sock, Record).

act(Sock, {send, initial, Bytes}, St) ->
    Hrr = binary:part(Bytes, 6, 32) =:= falco_tls13_msg:hrr_random(),
    ok = gen_tcp:send(Sock, ?R:plain(22, Bytes)),
    St#{hrr := Hrr orelse maps:get(hrr, St)};
act(Sock, {send, _, Bytes}, St = #{write := {Level, Keys}}) ->
    {Record, Keys1} = ?R:seal(Keys, 22, Bytes),
    ok = gen_tcp:send(Sock, Record),
    St#{write := {Level, Keys1}};
act(Sock, change_cipher_spec, St) ->
    ok = gen_tcp:send(Sock, ?R:plain(20, <<1>>)),
    St;
act(_, {write_secret, Level, Suite, Secret}, St) ->
    St#{write := {Level, ?R:new_keys(Suite, Secret)}};
act(_, {read_secret, Level, Suite, Secret}, St) ->
    St#{read := {Level, ?R:new_keys(Suite, Secret)}};
act(_, handshake_complete, St = #{machine := M}) ->
    St#{complete => true, info => falco_tls13_server:info(M)};
act(_, Info, St) ->
    St#{reported => [Info | maps:get(reported, St, [])]}.

reply(Sock, Data, St = #{write := {application, Keys}, complete := true}) ->
    {Record, _} = ?R:seal(Keys, 23, <<"pong">>),
    ok = gen_tcp:send(Sock, Record),
    {done, St#{received => Data}};
reply(_, Data, St) ->
    {done, St#{error => {early_data, Data}}}.
