%% EUnit tests for falco_tls13_cert: credentials from the options OTP's
%% ssl takes (PEM certfile/keyfile, an encrypted key with its password, a
%% key in the certfile, DER cert/key, certs_keys), chain completion from
%% cacertfile, keys that do not match, scheme selection from the client's
%% list, and the CertificateVerify signature for every key kind.
-module(falco_tls13_cert_tests).
-include_lib("eunit/include/eunit.hrl").

-define(C, falco_tls13_cert).
-define(T, falco_test_tls13).
-define(DIR, "_build/test/tls13_cert_tests").

%% The test certificates are made first, RSA keys included, which can
%% take seconds on a busy machine.
cert_test_() ->
    {timeout, 120,
     {setup, fun() -> [?T:creds(K) || K <- [ecdsa, ecdsa384, rsa, ed25519]] end, fun(_) -> ok end,
      [fun pem_files/0, fun encrypted_key/0, fun errors/0, fun certs_keys/0, fun content/0, fun scheme_fits/0,
       sign_verify()]}}.

write(Name, Entries) ->
    ok = filelib:ensure_dir(filename:join(?DIR, "x")),
    File = filename:join(?DIR, Name),
    ok = file:write_file(File, public_key:pem_encode(Entries)),
    File.

parts(Kind) ->
    Opts = ?T:ssl_server_opts(Kind),
    {proplists:get_value(cert, Opts), proplists:get_value(key, Opts),
     proplists:get_value(cacerts, Opts)}.

pem_files() ->
    {Leaf, {KeyType, KeyDer}, CaCerts} = parts(ecdsa),
    CertFile = write("leaf.pem", [{'Certificate', Leaf, not_encrypted}]),
    KeyFile = write("key.pem", [{KeyType, KeyDer, not_encrypted}]),
    CaFile = write("ca.pem", [{'Certificate', D, not_encrypted} || D <- CaCerts]),
    %% the leaf alone, completed from the CA file without the root
    {ok, [#{chain := Chain, schemes := [ecdsa_secp256r1_sha256]}]} =
        ?C:load([{certfile, CertFile}, {keyfile, KeyFile}, {cacertfile, CaFile}]),
    ?assertEqual(2, length(Chain)),
    ?assertEqual(Leaf, hd(Chain)),
    ?assert(lists:member(lists:last(Chain), CaCerts)),
    %% without CA certificates, the leaf alone
    ?assertMatch({ok, [#{chain := [Leaf]}]}, ?C:load(#{certfile => CertFile, keyfile => KeyFile})),
    %% the key in the certfile, as ssl allows
    Both = write("both.pem", [{'Certificate', Leaf, not_encrypted}, {KeyType, KeyDer, not_encrypted}]),
    ?assertMatch({ok, [#{chain := [Leaf]}]}, ?C:load([{certfile, Both}])),
    %% a chain file is sent as it is
    Full = write("full.pem", [{'Certificate', D, not_encrypted} || D <- [Leaf | CaCerts]]),
    ?assertMatch({ok, [#{chain := [Leaf | _]}]}, ?C:load([{certfile, Full}, {keyfile, KeyFile}])).

encrypted_key() ->
    {Leaf, {KeyType, KeyDer}, _} = parts(ecdsa),
    CertFile = write("leaf2.pem", [{'Certificate', Leaf, not_encrypted}]),
    Key = public_key:der_decode(KeyType, KeyDer),
    Entry = public_key:pem_entry_encode(KeyType, Key, {{"AES-128-CBC", crypto:strong_rand_bytes(16)},
                                                      "secret"}),
    KeyFile = write("enc.pem", [Entry]),
    ?assertMatch({ok, [_]}, ?C:load([{certfile, CertFile}, {keyfile, KeyFile}, {password, "secret"}])),
    ?assertMatch({ok, [_]}, ?C:load([{certfile, CertFile}, {keyfile, KeyFile},
                                     {password, fun() -> "secret" end}])),
    ?assertEqual({error, bad_private_key},
                 ?C:load([{certfile, CertFile}, {keyfile, KeyFile}, {password, "wrong"}])).

errors() ->
    {Leaf, _, _} = parts(ecdsa),
    {_, OtherKey, _} = parts(ecdsa384),
    {_, RsaKey, _} = parts(rsa),
    ?assertEqual({error, key_does_not_match_certificate}, ?C:load([{cert, Leaf}, {key, OtherKey}])),
    ?assertEqual({error, key_does_not_match_certificate}, ?C:load([{cert, Leaf}, {key, RsaKey}])),
    ?assertEqual({error, missing_certificate}, ?C:load([{key, OtherKey}])),
    ?assertEqual({error, missing_key}, ?C:load([{cert, Leaf}])),
    ?assertEqual({error, {"no/such/file.pem", enoent}}, ?C:load([{certfile, "no/such/file.pem"}])),
    NoCert = write("nocert.pem", []),
    ?assertEqual({error, {no_certificate, NoCert}}, ?C:load([{certfile, NoCert}])),
    ?assertEqual({error, {no_private_key, NoCert}}, ?C:load([{cert, Leaf}, {keyfile, NoCert}])),
    ?assertEqual({error, bad_private_key}, ?C:load([{cert, Leaf}, {key, {'ECPrivateKey', <<1, 2>>}}])).

certs_keys() ->
    Ec = maps:from_list(?T:ssl_server_opts(ecdsa)),
    Rsa = maps:from_list(?T:ssl_server_opts(rsa)),
    {ok, Creds = [_, _]} = ?C:load([{certs_keys, [maps:with([cert, key], Ec), maps:with([cert, key], Rsa)]}]),
    ?assertMatch({ok, #{schemes := [ecdsa_secp256r1_sha256]}, ecdsa_secp256r1_sha256},
                 ?C:select(Creds, [16#0804, 16#0403])),
    ?assertMatch({ok, _, rsa_pss_rsae_sha384}, ?C:select(Creds, [16#0805])),
    ?assertEqual(error, ?C:select(Creds, [16#0807, 16#0401])).

sign_verify() ->
    [{atom_to_list(Kind),
      fun() ->
              [#{chain := [Leaf | _], key := Key, schemes := Schemes}] = ?T:creds(Kind),
              {ok, Public} = ?C:public_key(Leaf),
              Msg = ?C:content(server, crypto:hash(sha256, <<"transcript">>)),
              [begin
                   {ok, Sig} = ?C:sign(Key, S, Msg),
                   ?assert(?C:verify(Public, S, Msg, Sig)),
                   ?assertNot(?C:verify(Public, S, <<Msg/binary, 0>>, Sig)),
                   ?assertEqual(S, ?C:scheme_from_code(?C:scheme_code(S)))
               end || S <- Schemes]
      end} || Kind <- [ecdsa, ecdsa384, rsa, ed25519]].

%% §4.2.3: an ECDSA scheme is bound to its curve, RSA-PSS to RSA keys.
scheme_fits() ->
    [#{chain := [Leaf | _], key := Key}] = ?T:creds(ecdsa),
    {ok, Public} = ?C:public_key(Leaf),
    {ok, Sig} = ?C:sign(Key, ecdsa_secp384r1_sha384, <<"m">>),
    ?assertNot(?C:verify(Public, ecdsa_secp384r1_sha384, <<"m">>, Sig)),
    [#{chain := [RsaLeaf | _], key := RsaKey}] = ?T:creds(rsa),
    {ok, RsaPublic} = ?C:public_key(RsaLeaf),
    {ok, RsaSig} = ?C:sign(RsaKey, rsa_pss_rsae_sha256, <<"m">>),
    ?assert(?C:verify(RsaPublic, rsa_pss_rsae_sha256, <<"m">>, RsaSig)),
    ?assertNot(?C:verify(RsaPublic, ecdsa_secp256r1_sha256, <<"m">>, RsaSig)).

%% §4.4.3: 64 spaces, the context string, a zero byte, the hash.
content() ->
    C = ?C:content(server, <<1, 2>>),
    ?assertEqual(<<(binary:copy(<<" ">>, 64))/binary, "TLS 1.3, server CertificateVerify", 0, 1, 2>>, C),
    ?assertEqual(64 + 33 + 1 + 2, byte_size(?C:content(client, <<1, 2>>))).
