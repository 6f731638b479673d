%% EUnit tests for falco_quic_keys and falco_quic_aead: RFC 9001 A.1's
%% Initial keys of both directions, A.5's ChaCha20 keys and "quic ku"
%% secret, key update keeping the header protection key, the masks of
%% A.2, A.3 and A.5, the nonce of A.5, the Retry tag of A.4, and open
%% refusing every tampered input without raising.
-module(falco_quic_keys_tests).
-include_lib("eunit/include/eunit.hrl").

-define(K, falco_quic_keys).
-define(A, falco_quic_aead).

h(Hex) -> binary:decode_hex(Hex).

dcid() -> h(<<"8394c8f03e515708">>).

%% RFC 9001 A.1
initial_keys_test() ->
    {Client, Server} = ?K:initial(dcid()),
    ?assertEqual(h(<<"c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea">>),
                 ?K:secret(Client)),
    ?assertEqual(h(<<"1f369613dd76d5467730efcbe3b1a22d">>), ?K:key(Client)),
    ?assertEqual(h(<<"fa044b2f42a3fd3b46fb255c">>), ?K:iv(Client)),
    ?assertEqual(h(<<"9f50449e04a0e810283a1e9933adedd2">>), ?K:hp_key(Client)),
    ?assertEqual(h(<<"3c199828fd139efd216c155ad844cc81fb82fa8d7446fa7d78be803acdda951b">>),
                 ?K:secret(Server)),
    ?assertEqual(h(<<"cf3a5331653c364c88f0f379b6067e37">>), ?K:key(Server)),
    ?assertEqual(h(<<"0ac1493ca1905853b0bba03e">>), ?K:iv(Server)),
    ?assertEqual(h(<<"c206b8d9b9f0f37644430b490eeaa314">>), ?K:hp_key(Server)),
    ?assertEqual(aes_128_gcm_sha256, ?K:suite(Client)).

chacha_secret() -> h(<<"9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b">>).

%% RFC 9001 A.5: key, iv, hp, and ku as the secret of the next generation
chacha20_keys_and_update_test() ->
    K = ?K:from_secret(chacha20_poly1305_sha256, chacha_secret()),
    ?assertEqual(h(<<"c6d98ff3441c3fe1b2182094f69caa2ed4b716b65488960a7a984979fb23e1c8">>),
                 ?K:key(K)),
    ?assertEqual(h(<<"e0459b3474bdd0e44a41c144">>), ?K:iv(K)),
    HP = h(<<"25a282b9e82f06f21f488917a4fc8f1b73573685608597d0efcb076b0ab7a7a4">>),
    ?assertEqual(HP, ?K:hp_key(K)),
    Next = ?K:update(K),
    Ku = h(<<"1223504755036d556342ee9361d253421a826c9ecdf3c7148684b36b714881f9">>),
    ?assertEqual(Ku, ?K:secret(Next)),
    %% the next generation is from_secret of ku, but with the old hp
    Fresh = ?K:from_secret(chacha20_poly1305_sha256, Ku),
    ?assertEqual({?K:key(Fresh), ?K:iv(Fresh)}, {?K:key(Next), ?K:iv(Next)}),
    ?assertEqual(HP, ?K:hp_key(Next)),
    ?assertNotEqual(HP, ?K:hp_key(Fresh)),
    ?assertNotEqual(?K:key(K), ?K:key(Next)).

aes_update_keeps_hp_state_test() ->
    {Client, _} = ?K:initial(dcid()),
    Next = ?K:update(Client),
    Sample = h(<<"d1b1c98dd7689fb8ec11d242b123dc9b">>),
    ?assertEqual(?A:mask(Client, Sample), ?A:mask(Next, Sample)),
    ?assertEqual(32, byte_size(?K:secret(Next))),
    ?assertNotEqual(?K:key(Client), ?K:key(Next)).

suites_test() ->
    [begin
         K = ?K:from_secret(S, binary:copy(<<7>>, HashLen)),
         ?assertEqual({KeyLen, 12, KeyLen}, {byte_size(?K:key(K)), byte_size(?K:iv(K)),
                                             byte_size(?K:hp_key(K))}),
         ?assertEqual(Aead, ?K:aead(S)),
         ?assertEqual(HashLen, byte_size(?K:secret(?K:update(K))))
     end || {S, Aead, KeyLen, HashLen} <- [{aes_128_gcm_sha256, aes_128_gcm, 16, 32},
                                           {aes_256_gcm_sha384, aes_256_gcm, 32, 48},
                                           {chacha20_poly1305_sha256, chacha20_poly1305, 32, 32}]],
    ?assertEqual({1 bsl 23, 1 bsl 52}, ?K:limits(aes_128_gcm_sha256)),
    ?assertEqual({infinity, 1 bsl 36}, ?K:limits(chacha20_poly1305_sha256)).

%% RFC 9001 A.2, A.3 (AES-128-ECB) and A.5 (ChaCha20) masks
masks_test() ->
    {Client, Server} = ?K:initial(dcid()),
    ?assertEqual(h(<<"437b9aec36">>), ?A:mask(Client, h(<<"d1b1c98dd7689fb8ec11d242b123dc9b">>))),
    ?assertEqual(h(<<"2ec0d8356a">>), ?A:mask(Server, h(<<"2cd0991cd25b0aac406a5816b6394100">>))),
    K = ?K:from_secret(chacha20_poly1305_sha256, chacha_secret()),
    ?assertEqual(h(<<"aefefe7d03">>), ?A:mask(K, h(<<"5e5cd55c41f69080575d7999c25a5bfb">>))).

%% RFC 9001 A.5: the payload 01 of packet 654360564 under header 4200bff4
%% (the nonce e0459b3474bdd0e46d417eb0 is the IV xor the packet number)
chacha20_seal_test() ->
    K = ?K:from_secret(chacha20_poly1305_sha256, chacha_secret()),
    {Cipher, Tag} = ?A:seal(K, 654360564, h(<<"4200bff4">>), <<1>>),
    ?assertEqual(h(<<"655e5cd55c41f69080575d7999c25a5bfb">>), <<Cipher/binary, Tag/binary>>),
    ?assertEqual({ok, <<1>>}, ?A:open(K, 654360564, h(<<"4200bff4">>), <<Cipher/binary, Tag/binary>>)).

open_refuses_tampering_test() ->
    [begin
         K = ?K:from_secret(S, binary:copy(<<9>>, 48)),
         {C, T} = ?A:seal(K, 5, <<"header">>, <<"payload">>),
         Sealed = <<C/binary, T/binary>>,
         ?assertEqual({ok, <<"payload">>}, ?A:open(K, 5, <<"header">>, Sealed)),
         ?assertEqual({error, bad_tag}, ?A:open(K, 6, <<"header">>, Sealed)),
         ?assertEqual({error, bad_tag}, ?A:open(K, 5, <<"headeR">>, Sealed)),
         ?assertEqual({error, bad_tag}, ?A:open(?K:update(K), 5, <<"header">>, Sealed)),
         <<B, Rest/binary>> = Sealed,
         ?assertEqual({error, bad_tag}, ?A:open(K, 5, <<"header">>, <<(B bxor 1), Rest/binary>>)),
         ?assertEqual({error, bad_tag}, ?A:open(K, 5, <<"header">>, binary:part(Sealed, 0, 15))),
         ?assertEqual({error, bad_tag}, ?A:open(K, 5, <<"header">>, <<>>))
     end || S <- [aes_128_gcm_sha256, aes_256_gcm_sha384, chacha20_poly1305_sha256]].

%% RFC 9001 A.4: the tag of the Retry answering A.2's Initial
retry_tag_test() ->
    Packet = h(<<"ff000000010008f067a5502a4262b5746f6b656e">>),
    Tag = h(<<"04a265ba2eff4d829058fb3f0f2496ba">>),
    Pseudo = [8, dcid(), Packet],
    ?assertEqual(Tag, ?A:retry_tag(Pseudo)),
    ?assert(?A:retry_valid(Pseudo, Tag)),
    ?assertNot(?A:retry_valid([8, h(<<"8394c8f03e515709">>), Packet], Tag)),
    ?assertNot(?A:retry_valid(Pseudo, binary:part(Tag, 0, 15))).
