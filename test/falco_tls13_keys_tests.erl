%% EUnit tests for falco_tls13_keys: RFC 8448 §3 (Simple 1-RTT
%% Handshake), every secret, key, IV and both Finished messages from the
%% trace's own handshake messages; the message_hash rule of RFC 8446
%% §4.4.1; and the suites' parameters.
-module(falco_tls13_keys_tests).
-include_lib("eunit/include/eunit.hrl").

-define(K, falco_tls13_keys).

-export([trace/1]).

h(Hex) -> binary:decode_hex(<< <<C>> || <<C>> <= iolist_to_binary(Hex), C =/= $\s, C =/= $\n >>).

%% RFC 8448 §3, the values the tests compare with.
trace(client_hello) ->
    h(<<"010000c00303cb34ecb1e78163ba1c38c6dacb196a6dffa21a8d9912ec18a2ef6283024dece7000006130113"
        "031302010000910000000b0009000006736572766572ff01000100000a00140012001d001700180019010001"
        "0101020103010400230000003300260024001d002099381de560e4bd43d23d8e435a7dbafeb3c06e51c13cae"
        "4d5413691e529aaf2c002b0003020304000d0020001e040305030603020308040805080604010501060102010"
        "402050206020202002d00020101001c00024001">>);
trace(server_hello) ->
    h(<<"020000560303a6af06a4121860dc5e6e60249cd34c95930c8ac5cb1434dac155772ed3e2692800130100002e"
        "00330024001d0020c9828876112095fe66762bdbf7c672e156d6cc253b833df1dd69b1b04e751f0f002b0002"
        "0304">>);
trace(server_random) ->
    h(<<"a6af06a4121860dc5e6e60249cd34c95930c8ac5cb1434dac155772ed3e26928">>);
trace(server_private) ->
    h(<<"b1580eeadf6dd589b8ef4f2d5652578cc810e9980191ec8d058308cea216a21e">>);
trace(server_public) ->
    h(<<"c9828876112095fe66762bdbf7c672e156d6cc253b833df1dd69b1b04e751f0f">>);
trace(shared) ->
    h(<<"8bd4054fb55b9d63fdfbacf9f04b9f0d35e6d63f537563efd46272900f89492d">>);
trace(handshake_secret) ->
    h(<<"1dc826e93606aa6fdc0aadc12f741b01046aa6b99f691ed221a9f0ca043fbeac">>);
trace(c_hs) ->
    h(<<"b3eddb126e067f35a780b3abf45e2d8f3b1a950738f52e9600746a0e27a55a21">>);
trace(s_hs) ->
    h(<<"b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38">>);
trace(s_hs_keys) ->
    {h(<<"3fce516009c21727d0f2e4e86ee403bc">>), h(<<"5d313eb2671276ee13000b30">>)};
trace(c_hs_keys) ->
    {h(<<"dbfaa693d1762c5b666af5d950258d01">>), h(<<"5bd3c71b836e0b76bb73265f">>)};
trace(encrypted_extensions) ->
    h(<<"080000240022000a00140012001d00170018001901000101010201030104001c0002400100000000">>);
trace(certificate) ->
    h(<<"0b0001b9000001b50001b0308201ac30820115a003020102020102300d06092a864886f70d01010b0500300e"
        "310c300a06035504031303727361301e170d3136303733303031323335395a170d3236303733303031323335"
        "395a300e310c300a0603550403130372736130819f300d06092a864886f70d010101050003818d0030818902"
        "818100b4bb498f8279303d980836399b36c6988c0c68de55e1bdb826d3901a2461eafd2de49a91d015abbc9a"
        "95137ace6c1af19eaa6af98c7ced43120998e187a80ee0ccb0524b1b018c3e0b63264d449a6d38e22a5fda43"
        "0846748030530ef0461c8ca9d9efbfae8ea6d1d03e2bd193eff0ab9a8002c47428a6d35a8d88d79f7f1e3f02"
        "03010001a31a301830090603551d1304023000300b0603551d0f0404030205a0300d06092a864886f70d0101"
        "0b05000381810085aad2a0e5b9276b908c65f73a7267170618a54c5f8a7b337d2df7a594365417f2eae8f8a5"
        "8c8f8172f9319cf36b7fd6c55b80f21a03015156726096fd335e5e67f2dbf102702e608ccae6bec1fc63a42a"
        "99be5c3eb7107c3c54e9b9eb2bd5203b1c3b84e0a8b2f759409ba3eac9d91d402dcc0cc8f8961229ac9187b4"
        "2b4de10000">>);
trace(certificate_verify) ->
    h(<<"0f000084080400805a747c5d88fa9bd2e55ab085a61015b7211f824cd484145ab3ff52f1fda8477b0b7abc90"
        "db78e2d33a5c141a078653fa6bef780c5ea248eeaaa785c4f394cab6d30bbe8d4859ee511f602957b15411ac"
        "027671459e46445c9ea58c181e818e95b8c3fb0bf3278409d3be152a3da5043e063dda65cdf5aea20d53dfac"
        "d42f74f3">>);
trace(server_finished) ->
    h(<<"140000209b9b141d906337fbd2cbdce71df4deda4ab42c309572cb7fffee5454b78f0718">>);
trace(master_secret) ->
    h(<<"18df06843d13a08bf2a449844c5f8a478001bc4d4c627984d5a41da8d0402919">>);
trace(c_ap) ->
    h(<<"9e40646ce79a7f9dc05af8889bce6552875afa0b06df0087f792ebb7c17504a5">>);
trace(s_ap) ->
    h(<<"a11af9f05531f856ad47116b45a950328204b4f44bfb6b3a4b4f1f3fcb631643">>);
trace(s_ap_keys) ->
    {h(<<"9f02283b6c9c07efc26bb9f2ac92e356">>), h(<<"cf782b88dd83549aadf1e984">>)};
trace(c_ap_keys) ->
    {h(<<"17422dda596ed5d9acd890e3c63f5051">>), h(<<"5b78923dee08579033e523d9">>)};
trace(client_finished) ->
    h(<<"14000020a8ec436d677634ae525ac1fcebe11a039ec17694fac6e98527b642f2edd5ce61">>).

th(Names) ->
    crypto:hash(sha256, [trace(N) || N <- Names]).

rfc8448_secrets_test() ->
    Shared = crypto:compute_key(ecdh, h(<<"99381de560e4bd43d23d8e435a7dbafeb3c06e51c13cae4d5413691e529aaf2c">>),
                                trace(server_private), x25519),
    ?assertEqual(trace(shared), Shared),
    HS = ?K:handshake_secret(sha256, ?K:early_secret(sha256), Shared),
    ?assertEqual(trace(handshake_secret), HS),
    ?assertEqual({trace(c_hs), trace(s_hs)},
                 ?K:handshake_traffic(sha256, HS, th([client_hello, server_hello]))),
    ?assertEqual(trace(s_hs_keys), ?K:traffic_keys(aes_128_gcm_sha256, trace(s_hs))),
    ?assertEqual(trace(c_hs_keys), ?K:traffic_keys(aes_128_gcm_sha256, trace(c_hs))),
    Master = ?K:master_secret(sha256, HS),
    ?assertEqual(trace(master_secret), Master),
    Upto = [client_hello, server_hello, encrypted_extensions, certificate, certificate_verify],
    <<20, 0, 0, 32, ServerVD/binary>> = trace(server_finished),
    ?assertEqual(ServerVD, ?K:verify_data(sha256, trace(s_hs), th(Upto))),
    TH = th(Upto ++ [server_finished]),
    ?assertEqual({trace(c_ap), trace(s_ap)}, ?K:application_traffic(sha256, Master, TH)),
    ?assertEqual(trace(s_ap_keys), ?K:traffic_keys(aes_128_gcm_sha256, trace(s_ap))),
    ?assertEqual(trace(c_ap_keys), ?K:traffic_keys(aes_128_gcm_sha256, trace(c_ap))),
    <<20, 0, 0, 32, ClientVD/binary>> = trace(client_finished),
    ?assertEqual(ClientVD, ?K:verify_data(sha256, trace(c_hs), TH)).

%% §4.4.1: message_hash is handshake type 254, a 24-bit length and the
%% hash of the first ClientHello, in the suite's hash.
message_hash_test() ->
    CH = trace(client_hello),
    ?assertEqual(<<254, 0, 0, 32, (crypto:hash(sha256, CH))/binary>>, ?K:message_hash(sha256, CH)),
    ?assertEqual(<<254, 0, 0, 48, (crypto:hash(sha384, CH))/binary>>, ?K:message_hash(sha384, CH)).

%% SHA-384 has 48-byte secrets throughout and 32-byte AES-256 keys.
sha384_sizes_test() ->
    HS = ?K:handshake_secret(sha384, ?K:early_secret(sha384), <<1:256>>),
    {C, S} = ?K:handshake_traffic(sha384, HS, crypto:hash(sha384, <<>>)),
    ?assertEqual({48, 48, 48}, {byte_size(HS), byte_size(C), byte_size(S)}),
    ?assertEqual(48, byte_size(?K:verify_data(sha384, C, crypto:hash(sha384, <<>>)))),
    {Key, IV} = ?K:traffic_keys(aes_256_gcm_sha384, S),
    ?assertEqual({32, 12}, {byte_size(Key), byte_size(IV)}),
    {Key2, _} = ?K:traffic_keys(chacha20_poly1305_sha256, C),
    ?assertEqual(32, byte_size(Key2)).

suites_test() ->
    [?assertEqual(S, ?K:suite_from_code(?K:suite_code(S))) || S <- ?K:suites()],
    ?assertEqual(unknown, ?K:suite_from_code(16#1304)),
    ?assertEqual([aes_128_gcm, aes_256_gcm, chacha20_poly1305], [?K:suite_aead(S) || S <- ?K:suites()]),
    ?assertEqual([sha256, sha384, sha256], [?K:suite_hash(S) || S <- ?K:suites()]).
