%% EUnit tests for falco_tls13_keys: RFC 8448 §3 (Simple 1-RTT
%% Handshake), every secret, key, IV and both Finished messages from the
%% trace's own handshake messages; RFC 8448 §5 (HelloRetryRequest), the
%% handshake secrets over a transcript that starts with the first
%% ClientHello's message_hash (RFC 8446 §4.4.1); and the suites'
%% parameters.
-module(falco_tls13_keys_tests).
-include_lib("eunit/include/eunit.hrl").

-define(K, falco_tls13_keys).

-export([trace/1, hrr_trace/1]).

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

%% RFC 8448 §5, the handshake messages (record headers removed) and values.
hrr_trace(client_hello1) ->
    h(<<"010000b00303b0b1c5a5aa37c5919f2ed1d5c6fff7fcb78497169"
        "45a2b8cee9258a346677b6f000006130113031302010000810000000b0009000006736572766572ff01000100"
        "000a00080006001d00170018003300260024001d0020e8e8e3f3b93a25ed97a14a7dcacb8a272c6288e585c6"
        "484d05262fcad062ad1f002b0003020304000d0020001e040305030603020308040805080604010501060102"
        "010402050206020202002d00020101001c00024001">>);
hrr_trace(hello_retry_request) ->
    h(<<"020000ac0303cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c001301000084"
        "00330002001700 2c00740072 71dcd04bb88bc3189119398a00000000eefafc76c146b823b096f8aacad365dd"
        "00 30953f4edf625636e5f21bb2e23fcc654b1b5b40318d10d137abcbb87574e36e8a1f025f7dfa5d6e50781b"
        "5eda4aa15b0c8be778257d16aa3030e9e7841dd9e4c0342267e8ca0caf571fb2b7cff0f934b0002b00020304">>);
hrr_trace(client_hello2) ->
    h([<<"010001fc0303b0b1c5a5aa37c5919f2ed1d5c6fff7fcb7849716945a2b8cee9258a346677b6f0000061301"
         "13031302010001cd0000000b0009000006736572766572ff01000100000a00080006001d0017001800330047"
         "0045001700410 4a6da7392ec591e17abfd535964b99894d13befb221b3def2ebe3830eac8f0151812677c4d6"
         "d2237e85cf01d6910cfb83954e76ba7352830534159897e8065780002b0003020304000d0020001e04030503"
         "0603020308040805080604010501060102010402050206020202002c0074007271dcd04bb88bc31891193 98a"
         "00000000eefafc76c146b823b096f8aacad365dd0030953f4edf625636e5f21bb2e23fcc654b1b5b40318d10"
         "d137abcbb87574e36e8a1f025f7dfa5d6e50781b5eda4aa15b0c8be778257d16aa3030e9e7841dd9e4c03422"
         "67e8ca0caf571fb2b7cff0f934b0002d00020101001c0002400100150 0af">>,
       binary:copy(<<"00">>, 16#af)]);
hrr_trace(server_hello) ->
    h(<<"020000770303bb341d847fd789c47c387172dc0c9bf147fccacb5043d86ca4c598d3ff571b98001301 00004f"
        "003300450017004104583e054b7a66672ae020ad9d2686fcc85b5ad41a134a0f03ee72b893052bd85b4c8de6"
        "776f5b04ac07d83540eab3e3d9c547bc6528c4317d294686093a6cad7d002b00020304">>);
hrr_trace(server_random) ->
    h(<<"bb341d847fd789c47c387172dc0c9bf147fccacb5043d86ca4c598d3ff571b98">>);
hrr_trace(client_p256_public) ->
    h(<<"04a6da7392ec591e17abfd535964b99894d13befb221b3def2ebe3830eac8f0151812677c4d6d2237e85cf01"
        "d6910cfb83954e76ba7352830534159897e8065780">>);
hrr_trace(server_p256_private) ->
    h(<<"8c510601f9765bfb8ed693449a48989859b5cfa879cb9f5443c41c5ff10634ed">>);
hrr_trace(server_p256_public) ->
    h(<<"04583e054b7a66672ae020ad9d2686fcc85b5ad41a134a0f03ee72b893052bd85b4c8de6776f5b04ac07d835"
        "40eab3e3d9c547bc6528c4317d294686093a6cad7d">>);
hrr_trace(handshake_secret) ->
    h(<<"ce022e5e6e81e50736d773f2d3adfce8220d049bf510f0dbfac927ef4243b148">>);
hrr_trace(transcript_hash) ->
    h(<<"8aa8e828ec2f8a884fec95a3139de01c15a3daa7ff5bfc3f4bfcc21b438d7bf8">>);
hrr_trace(c_hs) ->
    h(<<"158aa7ab8855073582b41d674b4055cabcc534728f659314861b4e08e2011566">>);
hrr_trace(s_hs) ->
    h(<<"3403e781e2af7b6508da28574f6e95a1abf162de83a97927c37672a4a0cef8a1">>);
hrr_trace(s_hs_keys) ->
    {h(<<"4646bfac1712c426cd78d8a24a8a6f6b">>), h(<<"c7d395c08d62f297d13768ea">>)};
hrr_trace(c_hs_keys) ->
    {h(<<"2f1f918663d590e7421149a29d94b0b6">>), h(<<"414d5485235e1a688793bd74">>)};
hrr_trace(master_secret) ->
    h(<<"1131545d0baf79ddce9b87f06945781a57dd18ef378dcd2060f8f9a569027ed8">>).

rfc8448_hello_retry_test() ->
    T = fun hrr_trace/1,
    ?assertEqual(16#b4, byte_size(T(client_hello1))),
    ?assertEqual(16#b0, byte_size(T(hello_retry_request))),
    ?assertEqual(16#200, byte_size(T(client_hello2))),
    ?assertEqual(16#7b, byte_size(T(server_hello))),
    Shared = crypto:compute_key(ecdh, T(client_p256_public), T(server_p256_private), secp256r1),
    HS = ?K:handshake_secret(sha256, ?K:early_secret(sha256), Shared),
    ?assertEqual(T(handshake_secret), HS),
    Transcript = [?K:message_hash(sha256, T(client_hello1)), T(hello_retry_request),
                  T(client_hello2), T(server_hello)],
    TH = ?K:transcript_hash(sha256, Transcript),
    ?assertEqual(T(transcript_hash), TH),
    {C, S} = ?K:handshake_traffic(sha256, HS, TH),
    ?assertEqual({T(c_hs), T(s_hs)}, {C, S}),
    ?assertEqual(T(s_hs_keys), ?K:traffic_keys(aes_128_gcm_sha256, S)),
    ?assertEqual(T(c_hs_keys), ?K:traffic_keys(aes_128_gcm_sha256, C)),
    ?assertEqual(T(master_secret), ?K:master_secret(sha256, HS)).

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
