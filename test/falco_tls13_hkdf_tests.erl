%% EUnit tests for falco_tls13_hkdf: RFC 5869's test vectors, RFC 8448's
%% early secret and RFC 9001 Appendix A.1's initial secrets and keys.
-module(falco_tls13_hkdf_tests).
-include_lib("eunit/include/eunit.hrl").

-define(H, falco_tls13_hkdf).

h(Hex) -> binary:decode_hex(Hex).

%% RFC 5869 A.1 (SHA-256, basic) and A.3 (no salt, no info)
rfc5869_test() ->
    IKM = binary:copy(<<16#0b>>, 22),
    PRK = ?H:extract(sha256, h(<<"000102030405060708090a0b0c">>), IKM),
    ?assertEqual(h(<<"077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5">>), PRK),
    ?assertEqual(h(<<"3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf"
                     "34007208d5b887185865">>),
                 ?H:expand(sha256, PRK, h(<<"f0f1f2f3f4f5f6f7f8f9">>), 42)),
    PRK3 = ?H:extract(sha256, <<>>, IKM),
    ?assertEqual(h(<<"19ef24a32c717b167f33a91d6f648bdf96596776afdb6377ac434c1c293ccb04">>), PRK3),
    ?assertEqual(h(<<"8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d"
                     "9d201395faa4b61a96c8">>),
                 ?H:expand(sha256, PRK3, <<>>, 42)).

%% RFC 8448 §3: the early secret without a PSK, and its "derived" secret
rfc8448_early_secret_test() ->
    Early = ?H:extract(sha256, <<>>, <<0:256>>),
    ?assertEqual(h(<<"33ad0a1c607ec03b09e6cd9893680ce210adf300aa1f2660e1b22e10f170f92a">>), Early),
    ?assertEqual(h(<<"6f2615a108c702c5678f54fc9dbab69716c076189c48250cebeac3576c3611ba">>),
                 ?H:derive_secret(sha256, Early, <<"derived">>, crypto:hash(sha256, <<>>))).

%% RFC 9001 A.1: keys of the client's and the server's first Initial
rfc9001_initial_test() ->
    Salt = h(<<"38762cf7f55934b34d179ae6a4c80cadccbb7f0a">>),
    Initial = ?H:extract(sha256, Salt, h(<<"8394c8f03e515708">>)),
    ?assertEqual(h(<<"7db5df06e7a69e432496adedb00851923595221596ae2ae9fb8115c1e9ed0a44">>), Initial),
    Client = ?H:expand_label(sha256, Initial, <<"client in">>, <<>>, 32),
    ?assertEqual(h(<<"c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea">>), Client),
    ?assertEqual(h(<<"1f369613dd76d5467730efcbe3b1a22d">>),
                 ?H:expand_label(sha256, Client, <<"quic key">>, <<>>, 16)),
    ?assertEqual(h(<<"fa044b2f42a3fd3b46fb255c">>),
                 ?H:expand_label(sha256, Client, <<"quic iv">>, <<>>, 12)),
    ?assertEqual(h(<<"9f50449e04a0e810283a1e9933adedd2">>),
                 ?H:expand_label(sha256, Client, <<"quic hp">>, <<>>, 16)),
    ?assertEqual(h(<<"3c199828fd139efd216c155ad844cc81fb82fa8d7446fa7d78be803acdda951b">>),
                 ?H:expand_label(sha256, Initial, <<"server in">>, <<>>, 32)).

%% Output lengths that are not a multiple of the hash length, and SHA-384
lengths_test() ->
    PRK = ?H:extract(sha384, <<"salt">>, <<"ikm">>),
    ?assertEqual(48, byte_size(PRK)),
    ?assertEqual(48, ?H:hash_size(sha384)),
    Long = ?H:expand(sha384, PRK, <<"info">>, 100),
    ?assertEqual(100, byte_size(Long)),
    ?assertEqual(binary:part(Long, 0, 7), ?H:expand(sha384, PRK, <<"info">>, 7)),
    ?assertEqual(<<>>, ?H:expand(sha256, PRK, <<>>, 0)).
