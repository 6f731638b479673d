%% EUnit tests for falco_quic_packet: RFC 9001 Appendix A (A.2 client
%% Initial, A.3 server Initial, A.4 Retry, A.5 ChaCha20 short header),
%% each built byte for byte and read back; RFC 9000 App. A.2 and A.3's
%% packet number examples; the header checks (fixed bit, CID lengths,
%% truncation, the sample's minimum, reserved bits after the AEAD),
%% coalesced packets, Version Negotiation and a round trip of every
%% protected type with every cipher suite.
-module(falco_quic_packet_tests).
-include_lib("eunit/include/eunit.hrl").

-define(P, falco_quic_packet).
-define(K, falco_quic_keys).

h(Hex) -> binary:decode_hex(iolist_to_binary(string:replace(Hex, " ", "", all))).

dcid() -> h(<<"8394c8f03e515708">>).
scid() -> h(<<"f067a5502a4262b5">>).

%% -- RFC 9001 A.2: the client's Initial ---------------------------------------

a2_crypto() ->
    h(<<"060040f1010000ed0303ebf8fa56f12939b9584a3896472ec40bb863cfd3e868"
        "04fe3a47f06a2b69484c00000413011302010000c000000010000e00000b6578"
        "616d706c652e636f6dff01000100000a00080006001d00170018001000070005"
        "04616c706e0005000501000000000033002600 24001d00209370b2c9caa47fba"
        "baf4559fedba753de171fa71f50f1ce15d43e994ec74d748002b000302030400"
        "0d0010000e0403050306030203080408050806002d00020101001c0002400100"
        "3900320408ffffffffffffffff05048000ffff07048000ffff08011001048000"
        "75300901100f088394c8f03e51570806048000ffff">>).

a2_packet() ->
    h(<<"c000000001088394c8f03e5157080000449e7b9aec34d1b1c98dd7689fb8ec11"
        "d242b123dc9bd8bab936b47d92ec356c0bab7df5976d27cd449f63300099f399"
        "1c260ec4c60d17b31f8429157bb35a1282a643a8d2262cad67500cadb8e7378c"
        "8eb7539ec4d4905fed1bee1fc8aafba17c750e2c7ace01e6005f80fcb7df6212"
        "30c83711b39343fa028cea7f7fb5ff89eac2308249a02252155e2347b63d58c5"
        "457afd84d05dfffdb20392844ae812154682e9cf012f9021a6f0be17ddd0c208"
        "4dce25ff9b06cde535d0f920a2db1bf362c23e596d11a4f5a6cf3948838a3aec"
        "4e15daf8500a6ef69ec4e3feb6b1d98e610ac8b7ec3faf6ad760b7bad1db4ba3"
        "485e8a94dc250ae3fdb41ed15fb6a8e5eba0fc3dd60bc8e30c5c4287e53805db"
        "059ae0648db2f64264ed5e39be2e20d82df566da8dd5998ccabdae053060ae6c"
        "7b4378e846d29f37ed7b4ea9ec5d82e7961b7f25a9323851f681d582363aa5f8"
        "9937f5a67258bf63ad6f1a0b1d96dbd4faddfcefc5266ba6611722395c906556"
        "be52afe3f565636ad1b17d508b73d8743eeb524be22b3dcbc2c7468d54119c74"
        "68449a13d8e3b95811a198f3491de3e7fe942b330407abf82a4ed7c1b311663a"
        "c69890f4157015853d91e923037c227a33cdd5ec281ca3f79c44546b9d90ca00"
        "f064c99e3dd97911d39fe9c5d0b23a229a234cb36186c4819e8b9c5927726632"
        "291d6a418211cc2962e20fe47feb3edf330f2c603a9d48c0fcb5699dbfe58964"
        "25c5bac4aee82e57a85aaf4e2513e4f05796b07ba2ee47d80506f8d2c25e50fd"
        "14de71e6c418559302f939b0e1abd576f279c4b2e0feb85c1f28ff18f58891ff"
        "ef132eef2fa09346aee33c28eb130ff28f5b766953334113211996d20011a198"
        "e3fc433f9f2541010ae17c1bf202580f6047472fb36857fe843b19f5984009dd"
        "c324044e847a4f4a0ab34f719595de37252d6235365e9b84392b061085349d73"
        "203a4a13e96f5432ec0fd4a1ee65accdd5e3904df54c1da510b0ff20dcc0c77f"
        "cb2c0e0eb605cb0504db87632cf3d8b4dae6e705769d1de354270123cb11450e"
        "fc60ac47683d7b8d0f811365565fd98c4c8eb936bcab8d069fc33bd801b03ade"
        "a2e1fbc5aa463d08ca19896d2bf59a071b851e6c239052172f296bfb5e724047"
        "90a2181014f3b94a4e97d117b438130368cc39dbb2d198065ae3986547926cd2"
        "162f40a29f0c3c8745c0f50fba3852e566d44575c29d39a03f0cda721984b6f4"
        "40591f355e12d439ff150aab7613499dbd49adabc8676eef023b15b65bfc5ca0"
        "6948109f23f350db82123535eb8a7433bdabcb909271a6ecbcb58b936a88cd4e"
        "8f2e6ff5800175f113253d8fa9ca8885c2f552e657dc603f252e1a8e308f76f0"
        "be79e2fb8f5d5fbbe2e30ecadd220723c8c0aea8078cdfcb3868263ff8f09400"
        "54da48781893a7e49ad5aff4af300cd804a6b6279ab3ff3afb64491c85194aab"
        "760d58a606654f9f4400e8b38591356fbf6425aca26dc85244259ff2b19c41b9"
        "f96f3ca9ec1dde434da7d2d392b905ddf3d1f9af93d1af5950bd493f5aa731b4"
        "056df31bd267b6b90a079831aaf579be0a39013137aac6d404f518cfd4684064"
        "7e78bfe706ca4cf5e9c5453e9f7cfd2b8b4c8d169a44e55c88d4a9a7f9474241"
        "e221af44860018ab0856972e194cd934">>).

a2_header() -> #{type => initial, dcid => dcid(), scid => <<>>, pn_length => 4}.

%% The 1162-byte payload padded, PN 2 in 4 bytes: the RFC's 1200 bytes.
a2_client_initial_build_test() ->
    {Client, _} = ?K:initial(dcid()),
    Payload = <<(a2_crypto())/binary, 0:((1162 - byte_size(a2_crypto())) * 8)>>,
    ?assertEqual(a2_packet(), iolist_to_binary(?P:protect(a2_header(), 2, none, Payload, Client))),
    %% the same bytes when protect/6 pads the CRYPTO frame to 1200 itself
    ?assertEqual(a2_packet(),
                 iolist_to_binary(?P:protect(a2_header(), 2, none, a2_crypto(), Client, 1200))).

a2_client_initial_read_test() ->
    Packet = a2_packet(),
    ?assertEqual({ok, {long, 1, dcid(), <<>>}}, ?P:invariant(Packet, 8)),
    {ok, #{type := initial, version := 1, dcid := DCID, scid := <<>>, token := <<>>,
           pn_offset := 18} = P, <<>>} = ?P:parse(Packet, 8),
    ?assertEqual(dcid(), DCID),
    %% the server reads with the keys it derives from the DCID it received
    {Client, _} = ?K:initial(DCID),
    {ok, #{pn := 2, aad := AAD}} = ?P:unmask(P, Client, none),
    ?assertEqual(h(<<"c300000001088394c8f03e5157080000449e00000002">>), AAD),
    {ok, 2, Payload} = ?P:unprotect(P, Client, none),
    ?assertEqual(1162, byte_size(Payload)),
    ?assertEqual(<<(a2_crypto())/binary, 0:((1162 - byte_size(a2_crypto())) * 8)>>, Payload),
    %% the server's keys do not open it
    {_, Server} = ?K:initial(DCID),
    ?assertMatch({error, {drop, bad_tag}}, ?P:unprotect(P, Server, none)).

%% -- RFC 9001 A.3: the server's Initial ---------------------------------------

a3_payload() ->
    h(<<"02000000000600405a020000560303eefce7f7b37ba1d1632e96677825ddf739"
        "88cfc79825df566dc5430b9a045a1200130100002e00330024001d00209d3c94"
        "0d89690b84d08a60993c144eca684d1081287c834d5311bcf32bb9da1a002b00020304">>).

a3_packet() ->
    h(<<"cf000000010008f067a5502a4262b5004075c0d95a482cd0991cd25b0aac406a"
        "5816b6394100f37a1c69797554780bb38cc5a99f5ede4cf73c3ec2493a1839b3"
        "dbcba3f6ea46c5b7684df3548e7ddeb9c3bf9c73cc3f3bded74b562bfb19fb84"
        "022f8ef4cdd93795d77d06edbb7aaf2f58891850abbdca3d20398c276456cbc4"
        "2158407dd074ee">>).

a3_server_initial_test() ->
    {_, Server} = ?K:initial(dcid()),
    Header = #{type => initial, dcid => <<>>, scid => scid(), pn_length => 2},
    ?assertEqual(a3_packet(), iolist_to_binary(?P:protect(Header, 1, none, a3_payload(), Server))),
    %% PN 1 with nothing acknowledged takes 1 byte, not the RFC's 2
    ?assertNotEqual(a3_packet(),
                    iolist_to_binary(?P:protect(maps:remove(pn_length, Header), 1, none,
                                                a3_payload(), Server))),
    {ok, P, <<>>} = ?P:parse(a3_packet(), 0),
    ?assertMatch(#{type := initial, dcid := <<>>, token := <<>>}, P),
    ?assertEqual(scid(), maps:get(scid, P)),
    ?assertEqual({ok, 1, a3_payload()}, ?P:unprotect(P, Server, 0)).

%% -- RFC 9001 A.4: Retry -------------------------------------------------------

a4_retry_test() ->
    Retry = h(<<"ff000000010008f067a5502a4262b5746f6b656e04a265ba2eff4d829058fb3f0f2496ba">>),
    ?assertEqual(Retry, ?P:retry(1, <<>>, scid(), <<"token">>, dcid())),
    {ok, P, <<>>} = ?P:parse(Retry, 8),
    ?assertMatch(#{type := retry, version := 1, dcid := <<>>, token := <<"token">>}, P),
    ?assertEqual(scid(), maps:get(scid, P)),
    ?assert(?P:retry_valid(P, dcid())),
    ?assertNot(?P:retry_valid(P, scid())),
    <<Head:30/binary, B, Tail/binary>> = Retry,
    {ok, Bad, <<>>} = ?P:parse(<<Head/binary, (B bxor 16#80), Tail/binary>>, 8),
    ?assertNot(?P:retry_valid(Bad, dcid())),
    ?assertNot(?P:retry_valid(#{type => one_rtt}, dcid())),
    %% an empty token or a cut tag is no Retry (RFC 9000 §17.2.5.2)
    ?assertEqual({error, {drop, bad_retry}}, ?P:parse(?P:retry(1, <<>>, scid(), <<>>, dcid()), 8)),
    ?assertEqual({error, {drop, bad_retry}}, ?P:parse(binary:part(Retry, 0, 20), 8)).

%% -- RFC 9001 A.5: ChaCha20-Poly1305 short header -------------------------------

a5_keys() ->
    ?K:from_secret(chacha20_poly1305_sha256,
                   h(<<"9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b">>)).

a5_packet() -> h(<<"4cfe4189655e5cd55c41f69080575d7999c25a5bfb">>).

a5_chacha20_short_header_test() ->
    K = a5_keys(),
    Header = #{type => one_rtt, dcid => <<>>, pn_length => 3},
    ?assertEqual(a5_packet(), iolist_to_binary(?P:protect(Header, 654360564, none, <<1>>, K))),
    %% 3 bytes is also what the largest acknowledged 654360564 - 40000 gives
    ?assertEqual(a5_packet(), iolist_to_binary(?P:protect(#{type => one_rtt, dcid => <<>>},
                                                          654360564, 654320564, <<1>>, K))),
    {ok, P, <<>>} = ?P:parse(a5_packet(), 0),
    ?assertMatch(#{type := one_rtt, dcid := <<>>, pn_offset := 1}, P),
    {ok, #{pn := 654360564, key_phase := 0, aad := AAD} = U} = ?P:unmask(P, K, 654360563),
    ?assertEqual(h(<<"4200bff4">>), AAD),
    ?assertEqual({ok, <<1>>}, ?P:open(U, K)),
    ?assertEqual({error, {drop, bad_tag}}, ?P:open(U, ?K:update(K))),
    %% one byte short of the sample: dropped before any crypto
    ?assertEqual({error, {drop, truncated}}, ?P:parse(binary:part(a5_packet(), 0, 20), 0)).

%% -- RFC 9000 App. A: packet numbers -------------------------------------------

pn_length_test() ->
    %% A.2: 0xac5c02 with 0xabe8b3 acknowledged needs 16 bits, 0xace8fe 18 bits
    ?assertEqual(2, ?P:pn_length(16#ac5c02, 16#abe8b3)),
    ?assertEqual(3, ?P:pn_length(16#ace8fe, 16#abe8b3)),
    ?assertEqual(1, ?P:pn_length(0, none)),
    ?assertEqual(1, ?P:pn_length(126, none)),
    ?assertEqual(2, ?P:pn_length(127, none)),
    %% more than twice the range: 128 unacknowledged do not fit 1 byte
    ?assertEqual(1, ?P:pn_length(127, 0)),
    ?assertEqual(2, ?P:pn_length(128, 0)),
    ?assertEqual(4, ?P:pn_length(1 bsl 40, 0)).

decode_pn_test() ->
    %% A.3
    ?assertEqual(16#a82f9b32, ?P:decode_pn(16#9b32, 16, 16#a82f30ea)),
    ?assertEqual(0, ?P:decode_pn(0, 8, none)),
    ?assertEqual(255, ?P:decode_pn(255, 8, 200)),
    ?assertEqual(256, ?P:decode_pn(0, 8, 255)),
    ?assertEqual(255, ?P:decode_pn(255, 8, 300)),
    ?assertEqual(16#3fffffffffffffff, ?P:decode_pn(16#ff, 8, 16#3ffffffffffffffe)).

%% Every packet number within the window the sender kept decodes back.
pn_round_trip_test() ->
    [begin
         Len = ?P:pn_length(PN, Acked),
         Mask = (1 bsl (8 * Len)) - 1,
         %% the receiver's largest: anything from the acknowledged one to PN - 1
         [?assertEqual(PN, ?P:decode_pn(PN band Mask, 8 * Len, Largest))
          || Largest <- lists:usort([Acked, (Acked + PN) div 2, PN - 1])]
     end || {PN, Acked} <- [{1, 0}, {200, 100}, {1000, 10}, {16#ac5c02, 16#abe8b3},
                            {16#ace8fe, 16#abe8b3}, {1 bsl 30, (1 bsl 30) - 5000000}]].

%% -- header checks ------------------------------------------------------------

invariant_test() ->
    ?assertEqual({ok, {short, <<1, 2, 3, 4, 5, 6, 7, 8>>}},
                 ?P:invariant(<<16#40, 1, 2, 3, 4, 5, 6, 7, 8, 9>>, 8)),
    ?assertEqual({error, {drop, truncated}}, ?P:invariant(<<16#40, 1, 2>>, 8)),
    ?assertEqual({error, {drop, truncated}}, ?P:invariant(<<>>, 8)),
    %% any version, CIDs past 20 bytes (RFC 8999 §5.1)
    Long = <<16#80, 16#1a2a3a4a:32, 30, 0:240, 0>>,
    ?assertEqual({ok, {long, 16#1a2a3a4a, <<0:240>>, <<>>}}, ?P:invariant(Long, 8)),
    ?assertEqual({ok, #{type => unknown_version, version => 16#1a2a3a4a, dcid => <<0:240>>,
                        scid => <<>>}, <<>>}, ?P:parse(Long, 8)),
    ?assertEqual({error, {drop, truncated}}, ?P:invariant(binary:part(Long, 0, 20), 8)).

bad_headers_test() ->
    {Client, _} = ?K:initial(dcid()),
    Initial = iolist_to_binary(?P:protect(#{type => initial, dcid => dcid(), scid => scid()}, 0,
                                          none, <<1>>, Client)),
    <<First, Rest/binary>> = Initial,
    ?assertEqual({error, {drop, fixed_bit}}, ?P:parse(<<(First band 16#bf), Rest/binary>>, 8)),
    ?assertEqual({error, {drop, fixed_bit}}, ?P:parse(<<16#00, 0:(30 * 8)>>, 8)),
    ?assertEqual({error, {drop, cid_too_long}}, ?P:parse(<<16#c0, 1:32, 21, 0:(21 * 8), 0, 0>>, 8)),
    ?assertEqual({error, {drop, cid_too_long}}, ?P:parse(<<16#c0, 1:32, 0, 21, 0:(21 * 8)>>, 8)),
    %% Length below the sample's 20 bytes, or past the datagram
    ?assertEqual({error, {drop, too_short}}, ?P:parse(<<16#e0, 1:32, 0, 0, 19, 0:(19 * 8)>>, 8)),
    ?assertEqual({error, {drop, truncated}}, ?P:parse(<<16#e0, 1:32, 0, 0, 30, 0:(29 * 8)>>, 8)),
    ?assertEqual({error, {drop, truncated}}, ?P:parse(<<16#c0, 1:32, 0, 0, 16#40>>, 8)),
    ?assertEqual({error, {drop, truncated}}, ?P:parse(<<16#c0, 1:32, 0, 0, 5, 1, 2>>, 8)),
    [?assertMatch({error, {drop, _}}, ?P:parse(binary:part(Initial, 0, N), 8))
     || N <- lists:seq(0, byte_size(Initial) - 1)],
    ?assertEqual({error, {drop, not_protected}}, ?P:unmask(#{type => retry}, Client, none)).

%% Reserved bits are checked after the AEAD, so only an authentic packet
%% with them set is a PROTOCOL_VIOLATION (RFC 9000 §17.2, §17.3.1); an empty
%% payload is one too (§12.4).
reserved_bits_test() ->
    K = a5_keys(),
    Header = #{type => one_rtt, dcid => <<"cid">>},
    Packet = iolist_to_binary(?P:protect(Header, 7, 6, <<1, 1, 1, 1>>, K)),
    {ok, P, <<>>} = ?P:parse(Packet, 3),
    {ok, U} = ?P:unmask(P, K, 6),
    ?assertEqual({ok, <<1, 1, 1, 1>>}, ?P:open(U, K)),
    ?assertEqual({error, {protocol_violation, reserved_bits}}, ?P:open(U#{reserved => 2}, K)),
    Forged = U#{reserved => 2, sealed => <<0:(20 * 8)>>},
    ?assertEqual({error, {drop, bad_tag}}, ?P:open(Forged, K)),
    {Client, _} = ?K:initial(dcid()),
    Empty = iolist_to_binary(?P:protect(#{type => handshake, dcid => <<>>, scid => <<>>}, 0, none,
                                        <<>>, Client, 40)),
    {ok, E, <<>>} = ?P:parse(Empty, 0),
    ?assertEqual({ok, 0, <<0:(40 - 26)/unit:8>>}, ?P:unprotect(E, Client, none)),
    Truly = iolist_to_binary(?P:protect(#{type => handshake, dcid => <<>>, scid => <<>>}, 0,
                                        none, <<>>, Client)),
    {ok, T, <<>>} = ?P:parse(Truly, 0),
    %% 1-byte packet number: three bytes of PADDING make the sample
    ?assertEqual({ok, 0, <<0, 0, 0>>}, ?P:unprotect(T, Client, none)),
    %% a 4-byte packet number needs none: an authentic packet with no frames
    NoFrames = iolist_to_binary(?P:protect(#{type => handshake, dcid => <<>>, scid => <<>>,
                                             pn_length => 4}, 0, none, <<>>, Client)),
    {ok, N, <<>>} = ?P:parse(NoFrames, 0),
    ?assertEqual({error, {protocol_violation, no_frames}}, ?P:unprotect(N, Client, none)),
    ?assertEqual({error, {drop, not_protected}}, ?P:unprotect(#{type => retry}, Client, none)).

%% Past the largest packet number there is none to decode to (§12.3).
pn_exhausted_test() ->
    K = a5_keys(),
    Max = 16#3fffffffffffffff,
    {ok, P, <<>>} = ?P:parse(iolist_to_binary(?P:protect(#{type => one_rtt, dcid => <<>>}, 5, 0,
                                                         <<1, 1, 1>>, K)), 0),
    ?assertEqual({error, {drop, pn_exhausted}}, ?P:unmask(P, K, Max)),
    ?assertMatch({ok, #{pn := 5}}, ?P:unmask(P, K, 4)).

%% -- coalescing and padding ---------------------------------------------------

coalesced_test() ->
    {Client, _} = ?K:initial(dcid()),
    HS = ?K:from_secret(aes_256_gcm_sha384, binary:copy(<<3>>, 48)),
    App = ?K:from_secret(chacha20_poly1305_sha256, binary:copy(<<4>>, 32)),
    Ours = <<"8bytecid">>,
    Initial = ?P:protect(#{type => initial, dcid => Ours, scid => scid(), token => <<"tok">>}, 0,
                         none, <<"crypto">>, Client),
    Handshake = ?P:protect(#{type => handshake, dcid => Ours, scid => scid()}, 1, none,
                           <<"hs">>, HS),
    Other = ?P:protect(#{type => handshake, dcid => <<"othercid">>, scid => scid()}, 2, none,
                       <<"x">>, HS),
    Short = ?P:protect(#{type => one_rtt, dcid => Ours, key_phase => 1}, 3, none, <<"app">>, App),
    Datagram = iolist_to_binary([Initial, Handshake, Other, Short]),
    {[I, H, S], ok} = ?P:split(Datagram, 8),
    ?assertMatch(#{type := initial, token := <<"tok">>}, I),
    ?assertEqual({ok, 0, <<"crypto">>}, ?P:unprotect(I, Client, none)),
    %% PN 1 in one byte: a byte of PADDING for the sample
    ?assertEqual({ok, 1, <<"hs", 0>>}, ?P:unprotect(H, HS, none)),
    {ok, #{key_phase := 1, pn := 3} = U} = ?P:unmask(S, App, none),
    ?assertEqual({ok, <<"app">>}, ?P:open(U, App)),
    %% zeros after the packets end the reading
    ?assertMatch({[_, _], {error, {drop, fixed_bit}}},
                 ?P:split(iolist_to_binary([Initial, Handshake, <<0:80>>]), 8)),
    ?assertEqual({[], ok}, ?P:split(<<>>, 8)).

pad_to_size_test() ->
    [begin
         Packet = iolist_to_binary(?P:protect(Header, 9, 3, <<"ping">>, Keys, Min)),
         ?assertEqual(max(Min, ?P:overhead(Header, 9, 3) + 4), byte_size(Packet)),
         {ok, P, <<>>} = ?P:parse(Packet, 8),
         {ok, 9, Payload} = ?P:unprotect(P, Keys, 8),
         ?assertEqual(<<"ping">>, binary:part(Payload, 0, 4)),
         ?assertEqual(<<>>, binary:replace(binary:part(Payload, 4, byte_size(Payload) - 4),
                                           <<0>>, <<>>, [global]))
     end || Keys <- [element(2, ?K:initial(dcid()))],
            Header <- [#{type => initial, dcid => dcid(), scid => scid()},
                       #{type => one_rtt, dcid => dcid()}],
            Min <- [0, 1200, 1350, 20000]].

%% -- Version Negotiation ------------------------------------------------------

version_negotiation_test() ->
    VN = ?P:version_negotiation(scid(), dcid(), [1]),
    <<First, 0:32, 8, _:8/binary, 8, _:8/binary, 1:32, Grease:32>> = VN,
    ?assertEqual(16#c0, First band 16#c0),
    ?assertEqual(16#0a0a0a0a, Grease band 16#0f0f0f0f),
    ?assertEqual({ok, {long, 0, scid(), dcid()}}, ?P:invariant(VN, 8)),
    ?assertEqual({ok, #{type => version_negotiation, dcid => scid(), scid => dcid(),
                        versions => [1, Grease]}, <<>>}, ?P:parse(VN, 8)),
    %% CIDs of any length the invariants allow are echoed
    Long = ?P:version_negotiation(<<0:(255 * 8)>>, <<>>, [1]),
    ?assertMatch({ok, #{type := version_negotiation, versions := [1, _]}, <<>>}, ?P:parse(Long, 8)),
    ?assertEqual({error, {drop, bad_version_negotiation}}, ?P:parse(<<16#c0, 0:32, 0, 0>>, 8)),
    ?assertEqual({error, {drop, bad_version_negotiation}},
                 ?P:parse(<<16#c0, 0:32, 0, 0, 1, 2, 3>>, 8)).

%% -- round trips --------------------------------------------------------------

round_trip_test() ->
    Suites = [{aes_128_gcm_sha256, 32}, {aes_256_gcm_sha384, 48}, {chacha20_poly1305_sha256, 32}],
    [begin
         Keys = ?K:from_secret(Suite, crypto:strong_rand_bytes(HashLen)),
         Packet = iolist_to_binary(?P:protect(Header, PN, Acked, Payload, Keys)),
         {ok, P, <<>>} = ?P:parse(Packet, byte_size(maps:get(dcid, Header))),
         ?assertEqual(maps:get(type, Header), maps:get(type, P)),
         {ok, PN, Plain} = ?P:unprotect(P, Keys, Acked),
         ?assertEqual(Payload, binary:part(Plain, 0, byte_size(Payload)))
     end || {Suite, HashLen} <- Suites,
            Header <- [#{type => initial, dcid => dcid(), scid => <<>>, token => <<"t">>},
                       #{type => zero_rtt, dcid => <<1>>, scid => <<0:160>>},
                       #{type => handshake, dcid => <<0:160>>, scid => <<1>>},
                       #{type => one_rtt, dcid => <<>>},
                       #{type => one_rtt, dcid => <<0:160>>, key_phase => 1}],
            {PN, Acked} <- [{0, none}, {1, 0}, {300, 10}, {70000, 100}, {1 bsl 40, (1 bsl 40) - 9}],
            Payload <- [<<1>>, <<"frames">>, crypto:strong_rand_bytes(1100)]].
