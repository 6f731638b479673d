%% bench_tls: what every server gets in the TLS scenarios (tls_handshake,
%% idle_tls, the h3_* scenarios of bench_h3; scenario/1),
%% so that all do the same cryptographic work per connection: one test
%% certificate (self-signed ECDSA P-256, generated with public_key at bench
%% time into _build/bench/tls, never committed), TLS 1.3 only, one cipher
%% suite (TLS_AES_128_GCM_SHA256), one key-exchange group (x25519) and no
%% session tickets, so every connection is a full handshake. The driver
%% calls ensure/1 and tells the server BEAMs the directory in the
%% environment variable BENCH_TLS_DIR; fixtures call server_opts/0. The
%% load generator pins the same suite (client_suite/0).
-module(bench_tls).

-export([ensure/1, server_opts/0, client_suite/0, env/0, scenario/1, h3/1]).

-define(ENV, "BENCH_TLS_DIR").
-define(SUITE, "TLS_AES_128_GCM_SHA256").

%% @doc Whether a fixture serves the scenario over TLS (with
%% server_opts/0).
-spec scenario(atom() | string()) -> boolean().
scenario(S) when is_list(S) -> scenario(list_to_atom(S));
scenario(S) -> lists:member(S, [tls_handshake, idle_tls]) orelse h3(S).

%% @doc Whether a scenario is one of the HTTP/3 run's (`bench/run --h3',
%% bench_h3): served over TLS with `http3 => true' on the same listener,
%% so that one server answers both HTTP/3 (UDP) and HTTP/2 over TLS (TCP).
-spec h3(atom() | string()) -> boolean().
h3(S) when is_list(S) -> lists:prefix("h3_", S);
h3(S) -> h3(atom_to_list(S)).

%% @doc The environment variable that carries the certificate directory.
-spec env() -> string().
env() -> ?ENV.

%% @doc Writes cert.pem and key.pem into Dir unless both are there.
-spec ensure(file:filename()) -> ok.
ensure(Dir) ->
    Cert = filename:join(Dir, "cert.pem"),
    Key = filename:join(Dir, "key.pem"),
    case filelib:is_regular(Cert) andalso filelib:is_regular(Key) of
        true ->
            ok;
        false ->
            {ok, _} = application:ensure_all_started(crypto),
            _ = application:load(public_key),
            Today = calendar:universal_time(),
            Days = calendar:date_to_gregorian_days(element(1, Today)),
            Date = fun calendar:gregorian_days_to_date/1,
            #{cert := Der, key := PrivKey} =
                public_key:pkix_test_root_cert("falco bench",
                                               [{key, {namedCurve, secp256r1}}, {digest, sha256},
                                                {validity, {Date(Days - 1), Date(Days + 3650)}}]),
            ok = filelib:ensure_dir(Cert),
            ok = file:write_file(Key, public_key:pem_encode([public_key:pem_entry_encode(
                                                                 'ECPrivateKey', PrivKey)])),
            ok = file:write_file(Cert, public_key:pem_encode([{'Certificate', Der, not_encrypted}])),
            ok
    end.

%% @doc The ssl server options every fixture uses (OTP's ssl: falco,
%% cowboy through ranch_ssl).
-spec server_opts() -> [ssl:tls_server_option()].
server_opts() ->
    Dir = os:getenv(?ENV, "_build/bench/tls"),
    [{certfile, filename:join(Dir, "cert.pem")}, {keyfile, filename:join(Dir, "key.pem")},
     {versions, ['tlsv1.3']}, {ciphers, [ssl:str_to_suite(?SUITE)]},
     {supported_groups, [x25519]}, {session_tickets, disabled}].

%% @doc The suite the load generator offers (OpenSSL's name).
-spec client_suite() -> string().
client_suite() -> ?SUITE.
