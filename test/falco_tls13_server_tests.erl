%% EUnit tests for falco_tls13_server: RFC 8448 §3 through the machine
%% (the trace's ClientHello, server random and x25519 key injected: the
%% ServerHello and every secret equal the trace's), full handshakes with
%% the test client of falco_test_tls13 (each suite, x25519, P-256, P-384,
%% HelloRetryRequest, bytes in pieces), and the alert of each malformed or
%% refused ClientHello.
-module(falco_tls13_server_tests).
-include_lib("eunit/include/eunit.hrl").

-define(S, falco_tls13_server).
-define(T, falco_test_tls13).
-define(KT, falco_tls13_keys_tests).

opts() ->
    #{credentials => ?T:creds(ecdsa)}.

quic_opts() ->
    (opts())#{quic => true, alpn => [<<"h3">>], transport_params => <<9, 9>>}.

%% -- RFC 8448 §3 ----------------------------------------------------------------

rfc8448_opts() ->
    (opts())#{random => fun(32) -> ?KT:trace(server_random) end,
              keygen => fun(x25519) -> {?KT:trace(server_public), ?KT:trace(server_private)} end}.

rfc8448_machine_test() ->
    CH = ?KT:trace(client_hello),
    {ok, S1, Actions} = ?S:handshake_data(initial, CH, ?S:new(rfc8448_opts())),
    SH = ?KT:trace(server_hello),
    CHs = ?KT:trace(c_hs),
    SHs = ?KT:trace(s_hs),
    ?assertMatch([{server_name, <<"server">>},
                  {send, initial, SH},
                  {read_secret, handshake, aes_128_gcm_sha256, CHs},
                  {write_secret, handshake, aes_128_gcm_sha256, SHs},
                  {send, handshake, _},
                  {write_secret, application, aes_128_gcm_sha256, _}], Actions),
    ?assertEqual(?KT:trace(s_hs_keys), falco_tls13_keys:traffic_keys(aes_128_gcm_sha256, SHs)),
    ?assertEqual(?KT:trace(c_hs_keys), falco_tls13_keys:traffic_keys(aes_128_gcm_sha256, CHs)),
    %% The trace signs with RSA-PSS, whose salt is random, so the
    %% server's Finished is checked over our own flight with the trace's
    %% secret (falco_tls13_keys_tests checks the trace's own Finished).
    [Flight] = [B || {send, handshake, B} <- Actions],
    Size = byte_size(Flight) - 36,
    <<Before:Size/binary, 20, 0, 0, 32, VD/binary>> = Flight,
    TH = crypto:hash(sha256, [CH, SH, Before]),
    ?assertEqual(falco_tls13_keys:verify_data(sha256, SHs, TH), VD),
    TH2 = crypto:hash(sha256, [CH, SH, Flight]),
    ClientFin = falco_tls13_msg:finished(falco_tls13_keys:verify_data(sha256, CHs, TH2)),
    {ok, S2, Done} = ?S:handshake_data(handshake, ClientFin, S1),
    Master = ?KT:trace(master_secret),
    {CAp, _} = falco_tls13_keys:application_traffic(sha256, Master, TH2),
    ?assertEqual([{read_secret, application, aes_128_gcm_sha256, CAp}, handshake_complete], Done),
    ?assertMatch(#{phase := connected, suite := aes_128_gcm_sha256, group := x25519,
                   scheme := ecdsa_secp256r1_sha256, server_name := <<"server">>}, ?S:info(S2)),
    %% once connected the state no longer holds the options (the
    %% credentials and their private key): a QUIC connection keeps its
    %% machine for its life
    #{credentials := [#{key := Key} | _]} = rfc8448_opts(),
    ?assert(holds(Key, S1)),
    ?assertNot(holds(Key, S2)),
    ?assert(erts_debug:flat_size(S2) < erts_debug:flat_size(S1) div 2),
    %% and a message after the handshake is still refused by its rule
    ?assertMatch({error, unexpected_message, _},
                 ?S:handshake_data(application, falco_tls13_msg:finished(<<0:256>>), S2)).

%% Whether term `Part' occurs within `Term'.
holds(Part, Part) -> true;
holds(Part, Term) when is_tuple(Term) -> holds(Part, tuple_to_list(Term));
holds(Part, Term) when is_map(Term) -> holds(Part, maps:to_list(Term));
holds(Part, [H | T]) -> holds(Part, H) orelse holds(Part, T);
holds(_, _) -> false.

%% RFC 8448 §5 through the machine: the first ClientHello shares x25519
%% only, the server takes P-256 only. Our HelloRetryRequest is the trace's
%% without its cookie (falco keeps the first ClientHello instead), and the
%% ServerHello after the trace's second ClientHello (which echoes that
%% cookie) is the trace's byte for byte; the secrets follow our transcript.
rfc8448_hello_retry_machine_test() ->
    T = fun ?KT:hrr_trace/1,
    Opts = (opts())#{groups => [secp256r1],
                     random => fun(32) -> T(server_random) end,
                     keygen => fun(secp256r1) -> {T(server_p256_public), T(server_p256_private)} end},
    CH1 = T(client_hello1),
    {ok, S1, [{send, initial, Hrr}]} = ?S:handshake_data(initial, CH1, ?S:new(Opts)),
    <<Head:42/binary, _ExtLen:16, KeyShare:6/binary, _Cookie:120/binary, Versions/binary>> =
        T(hello_retry_request),
    Exts = <<KeyShare/binary, Versions/binary>>,
    Body = <<(binary:part(Head, 4, 38))/binary, (byte_size(Exts)):16, Exts/binary>>,
    ?assertEqual(<<2, (byte_size(Body)):24, Body/binary>>, Hrr),
    CH2 = T(client_hello2),
    {ok, _, Actions} = ?S:handshake_data(initial, CH2, S1),
    SH = T(server_hello),
    ?assertMatch([{server_name, <<"server">>}, {send, initial, SH} | _], Actions),
    Shared = crypto:compute_key(ecdh, T(client_p256_public), T(server_p256_private), secp256r1),
    HS = falco_tls13_keys:handshake_secret(sha256, falco_tls13_keys:early_secret(sha256), Shared),
    ?assertEqual(T(handshake_secret), HS),
    TH = crypto:hash(sha256, [falco_tls13_keys:message_hash(sha256, CH1), Hrr, CH2, SH]),
    {C, S} = falco_tls13_keys:handshake_traffic(sha256, HS, TH),
    ?assertMatch([_, _, {read_secret, handshake, aes_128_gcm_sha256, C},
                  {write_secret, handshake, aes_128_gcm_sha256, S} | _], Actions).

%% -- whole handshakes with the test client ------------------------------------

suites_test_() ->
    [{atom_to_list(Suite),
      fun() ->
              {ok, R} = ?T:handshake((quic_opts())#{cipher_suites => [Suite]}, #{}),
              ?assertEqual(Suite, maps:get(suite, R))
      end} || Suite <- falco_tls13_keys:suites()].

groups_test_() ->
    [{atom_to_list(G),
      fun() ->
              {ok, R} = ?T:handshake(quic_opts(), #{client_groups => [G]}),
              ?assertMatch(#{group := G, hrr := false}, R)
      end} || G <- [x25519, secp256r1, secp384r1]].

credentials_test_() ->
    [{atom_to_list(Kind),
      {timeout, 60,
       fun() ->
               Creds = ?T:creds(Kind),
               {ok, R} = ?T:handshake(#{credentials => Creds},
                                      #{sig_algs => [16#0403, 16#0503, 16#0804, 16#0807]}),
               ?assertEqual(maps:get(chain, hd(Creds)), maps:get(chain, R)),
               ?assertEqual(2, length(maps:get(chain, R)))
       end}} || Kind <- [ecdsa, ecdsa384, rsa, ed25519]].

%% The QUIC actions: SNI, ALPN and the peer's transport parameters first,
%% the EncryptedExtensions carry ALPN and ours.
quic_actions_test() ->
    {ok, #{actions := Actions}} =
        ?T:handshake(quic_opts(), #{alpn => [<<"h2">>, <<"h3">>], transport_params => <<1, 2, 3>>}),
    ?assertMatch([{server_name, <<"localhost">>}, {alpn, <<"h3">>}, {transport_params, <<1, 2, 3>>},
                  {send, initial, _} | _], Actions),
    [Flight] = [B || {send, handshake, B} <- Actions],
    <<8, EeLen:24, Ee:EeLen/binary, _/binary>> = Flight,
    ?assertEqual(<<(9 + 6):16, 16:16, 5:16, 3:16, 2, "h3", 57:16, 2:16, 9, 9>>, Ee),
    ?assertNot(lists:member(change_cipher_spec, Actions)).

%% Server preference among what the client offers.
preference_test() ->
    Opts = (quic_opts())#{alpn => [<<"h3">>, <<"h3-29">>],
                          cipher_suites => [chacha20_poly1305_sha256, aes_128_gcm_sha256],
                          groups => [secp256r1, x25519]},
    {ok, R} = ?T:handshake(Opts, #{alpn => [<<"h3-29">>, <<"h3">>],
                                   client_groups => [x25519, secp256r1],
                                   first_groups => [x25519, secp256r1]}),
    ?assertMatch(#{suite := chacha20_poly1305_sha256, group := x25519}, R),
    ?assertEqual(<<"h3">>, maps:get(alpn, ?S:info(maps:get(server, R)))).

%% HelloRetryRequest: the client shares x25519 only, the server takes
%% P-256 only.
hello_retry_test() ->
    {ok, R} = ?T:handshake((quic_opts())#{groups => [secp256r1]},
                           #{client_groups => [x25519, secp256r1]}),
    ?assertMatch(#{hrr := true, group := secp256r1}, R),
    First = maps:get(first_actions, R),
    ?assertMatch([{send, initial, _}], First).

hello_retry_ccs_test() ->
    Sid = <<5:256>>,
    {ok, R} = ?T:handshake((opts())#{groups => [secp256r1]},
                           #{client_groups => [x25519, secp256r1], session_id => Sid}),
    ?assertMatch([{send, initial, _}, change_cipher_spec], maps:get(first_actions, R)),
    ?assertNot(lists:member(change_cipher_spec, maps:get(actions, R))).

tcp_ccs_test() ->
    {ok, #{actions := Actions}} = ?T:handshake(opts(), #{session_id => <<5:256>>}),
    {Before, [change_cipher_spec | _]} = lists:splitwith(fun(A) -> A =/= change_cipher_spec end,
                                                          Actions),
    ?assertMatch({send, initial, _}, lists:last(Before)),
    {send, initial, SH} = lists:last(Before),
    ?assertEqual(<<5:256>>, maps:get(session_id, ?T:server_hello(SH))).

%% The second ClientHello must be the first one, but for the key share.
hello_retry_changed_test_() ->
    Server = (quic_opts())#{groups => [secp256r1]},
    Start = fun() ->
                    {Pub, _} = crypto:generate_key(ecdh, x25519),
                    CH1 = ?T:client_hello(#{shares => [{16#1d, Pub}], groups => [16#1d, 16#17]}),
                    {ok, S, _} = ?S:handshake_data(initial, CH1, ?S:new(Server)),
                    S
            end,
    {P256, _} = crypto:generate_key(ecdh, secp256r1),
    {X, _} = crypto:generate_key(ecdh, x25519),
    Second = fun(Opts) ->
                     ?S:handshake_data(initial, ?T:client_hello(maps:merge(#{groups => [16#1d, 16#17]}, Opts)),
                                       Start())
             end,
    [?_assertMatch({error, illegal_parameter, second_hello_changed},
                   Second(#{shares => [{16#17, P256}], suites => [16#1301]})),
     ?_assertMatch({error, illegal_parameter, second_hello_changed},
                   Second(#{shares => [{16#17, P256}], random => <<8:256>>})),
     ?_assertMatch({error, illegal_parameter, second_hello_key_share},
                   Second(#{shares => [{16#1d, X}]})),
     ?_assertMatch({error, illegal_parameter, second_hello_early_data},
                   Second(#{shares => [{16#17, P256}], extra => [?T:ext(42, <<>>)]})),
     ?_assertMatch({ok, _, [{server_name, _}, {alpn, _}, {transport_params, _} | _]},
                   Second(#{shares => [{16#17, P256}]}))].

%% A ClientHello in pieces of every size gives what it gives whole.
pieces_test() ->
    Opts = (quic_opts())#{random => fun(N) -> <<0:(N * 8)>> end,
                          keygen => fun(G) -> crypto:generate_key(ecdh, G, <<1:256>>) end},
    {Pub, _} = crypto:generate_key(ecdh, x25519),
    CH = ?T:client_hello(#{shares => [{16#1d, Pub}], groups => [16#1d]}),
    %% ECDSA signatures are randomised: compare up to the handshake flight.
    Strip = fun(As) -> lists:takewhile(fun(A) -> not is_tuple(A) orelse element(2, A) =/= handshake
                                       orelse element(1, A) =/= send end, As) end,
    {ok, _, Whole} = ?S:handshake_data(initial, CH, ?S:new(Opts)),
    [begin
         {ok, _, Acts} = feed(CH, Size, ?S:new(Opts), []),
         ?assertEqual(Strip(Whole), Strip(Acts))
     end || Size <- [1, 2, 3, 5, 64, 1000]].

feed(<<>>, _, S, Acc) ->
    {ok, S, Acc};
feed(Bin, Size, S, Acc) ->
    N = min(Size, byte_size(Bin)),
    <<Piece:N/binary, Rest/binary>> = Bin,
    {ok, S1, A} = ?S:handshake_data(initial, Piece, S),
    feed(Rest, Size, S1, Acc ++ A).

%% A Chromium-like hello: GREASE extensions, groups and shares, an
%% X25519MLKEM768 share falco cannot use, ALPS, compress_certificate, ECH
%% GREASE: x25519 is chosen without a retry.
chromium_like_test() ->
    {Pub, _} = crypto:generate_key(ecdh, x25519),
    Mlkem = crypto:strong_rand_bytes(1216),
    Extra = [?T:ext(16#0a0a, <<>>), ?T:ext(17613, <<0, 3, 2, "h3">>), ?T:ext(27, <<2, 0, 2>>),
             ?T:ext(16#fe0d, crypto:strong_rand_bytes(200)), ?T:ext(16#ff01, <<0>>),
             ?T:ext(23, <<>>), ?T:ext(35, <<>>), ?T:ext(5, <<1, 0, 0, 0, 0>>), ?T:ext(18, <<>>),
             ?T:ext(16#4a4a, <<0>>), ?T:ext(21, <<0:512>>)],
    CH = ?T:client_hello(#{shares => [{16#2a2a, <<0>>}, {16#11ec, Mlkem}, {16#1d, Pub}],
                           groups => [16#2a2a, 16#11ec, 16#1d, 16#17, 16#18],
                           suites => [16#3a3a, 16#1301, 16#1302, 16#1303, 16#c02b],
                           extra => Extra}),
    ?assert(byte_size(CH) > 1500),
    {ok, S, _} = ?S:handshake_data(initial, CH, ?S:new(quic_opts())),
    ?assertMatch(#{group := x25519, suite := aes_128_gcm_sha256, phase := finished}, ?S:info(S)).

%% -- refusals -------------------------------------------------------------------

x25519() -> element(1, crypto:generate_key(ecdh, x25519)).

refuse(Opts, CHOpts) ->
    ?S:handshake_data(initial, ?T:client_hello(CHOpts), ?S:new(Opts)).

with_share(Opts) ->
    maps:merge(#{shares => [{16#1d, x25519()}], groups => [16#1d]}, Opts).

refusals_test_() ->
    Q = quic_opts(),
    T = opts(),
    X = x25519(),
    {P256, _} = crypto:generate_key(ecdh, secp256r1),
    Cases =
        [{protocol_version, tls12_only, T, #{versions => [16#0303]}},
         {protocol_version, tls12_only, T, #{extensions => [?T:sig_algs([16#0403])]}},
         {protocol_version, tls12_only, T, #{extensions => []}},
         {illegal_parameter, compression_methods, T, #{compression => <<1, 0>>}},
         {illegal_parameter, legacy_session_id, Q, #{session_id => <<1:256>>}},
         {missing_extension, quic_transport_parameters, Q, #{transport_params => none}},
         {no_application_protocol, no_alpn_offered, Q, #{alpn => none}},
         {no_application_protocol, no_common_protocol, Q, #{alpn => [<<"h2">>]}},
         {handshake_failure, no_common_cipher_suite, T, #{suites => [16#1304, 16#c02f]}},
         {missing_extension, signature_algorithms, T,
          #{extensions => [?T:versions([16#0304]), ?T:groups([16#1d]), ?T:shares([{16#1d, X}])]}},
         {handshake_failure, no_common_signature_scheme, T, #{sig_algs => [16#0401, 16#0503]}},
         {missing_extension, key_share_or_supported_groups, T,
          #{extensions => [?T:versions([16#0304]), ?T:groups([16#1d]), ?T:sig_algs([16#0403])]}},
         {missing_extension, key_share_or_supported_groups, T,
          #{extensions => [?T:versions([16#0304]), ?T:shares([{16#1d, X}]),
                           ?T:sig_algs([16#0403])]}},
         {illegal_parameter, key_share_not_in_supported_groups, T, #{groups => [16#17]}},
         {handshake_failure, no_common_group, T#{groups => [x25519]},
          #{groups => [16#17, 16#100], shares => [{16#17, P256}]}},
         {illegal_parameter, {bad_key_share, x25519}, T, #{shares => [{16#1d, <<X/binary, 0>>}]}},
         {illegal_parameter, {bad_key_share, x25519}, T, #{shares => [{16#1d, <<0:256>>}]}},
         {illegal_parameter, {bad_key_share, secp256r1}, T,
          #{groups => [16#17], shares => [{16#17, <<4, 0:512>>}]}},
         {illegal_parameter, {bad_key_share, secp256r1}, T,
          #{groups => [16#17], shares => [{16#17, binary:part(P256, 0, 33)}]}},
         {illegal_parameter, {duplicate_extension, 16#0a0a}, T,
          #{extra => [?T:ext(16#0a0a, <<>>), ?T:ext(16#0a0a, <<>>)]}},
         {illegal_parameter, {duplicate_extension, 0}, T, #{extra => [?T:sni(<<"other">>)]}},
         {illegal_parameter, {bad_extension, key_share}, T,
          #{shares => [{16#1d, X}, {16#1d, X}]}},
         {illegal_parameter, pre_shared_key_not_last, T,
          #{extra => [?T:ext(41, [{vec, 2, [{vec, 2, <<"id">>}, <<0:32>>]},
                                  {vec, 2, [{vec, 1, <<0:256>>}]}]),
                      ?T:ext(42, <<>>)]}},
         {illegal_parameter, {bad_extension, record_size_limit}, T,
          #{extra => [?T:ext(28, <<63:16>>)]}},
         {decode_error, {bad_extension, early_data}, T, #{extra => [?T:ext(42, <<0>>)]}},
         {decode_error, {bad_extension, server_name}, T, #{sni => <<>>}},
         {decode_error, {bad_extension, alpn}, T, #{alpn => [<<>>]}}],
    [{lists:flatten(io_lib:format("~p ~p", [Alert, Reason])),
      ?_assertEqual({error, Alert, Reason}, refuse(Opts, with_share(CH)))}
     || {Alert, Reason, Opts, CH} <- Cases].

%% Every length field of a ClientHello, one byte short or long, is a
%% decode_error (the message's own length, one long, waits for more).
lengths_test() ->
    Tree = ?T:ch_tree(with_share(#{extra => [?T:ext(41, [{vec, 2, [{vec, 2, <<"id">>}, <<0:32>>]},
                                                         {vec, 2, [{vec, 1, <<0:256>>}]}])]})),
    N = ?T:vec_count(Tree),
    ?assert(N > 25),
    Whole = ?T:serialize(Tree, none),
    %% (an empty vector cannot be one byte shorter: those are left out)
    Results = [{I, D, ?S:handshake_data(initial, Bin, ?S:new(opts()))}
               || I <- lists:seq(1, N), D <- [-1, 1], Bin <- [?T:serialize(Tree, {I, D})],
                  Bin =/= Whole],
    ?assertMatch([{1, 1, {ok, _, []}}], [R || R = {_, _, {ok, _, _}} <- Results]),
    ?assertEqual([], [{I, D, E} || {I, D, E} <- Results, {I, D} =/= {1, 1},
                                   element(2, E) =/= decode_error]).

%% A ClientHello cut anywhere (its length saying so) is a decode_error,
%% but where its extensions would start: a hello without extensions is
%% an old version's (§4.1.2).
truncated_test() ->
    <<1, _:24, Body/binary>> = ?T:client_hello(with_share(#{})),
    NoExts = 2 + 32 + 1 + 2 + 6 + 2,
    Bad = [{L, R} || L <- lists:seq(0, byte_size(Body) - 1), L =/= NoExts,
                     R <- [?S:handshake_data(initial, <<1, L:24, (binary:part(Body, 0, L))/binary>>,
                                             ?S:new(opts()))],
                     element(2, R) =/= decode_error],
    ?assertEqual([], Bad),
    ?assertEqual({error, protocol_version, tls12_only},
                 ?S:handshake_data(initial, <<1, NoExts:24, (binary:part(Body, 0, NoExts))/binary>>,
                                   ?S:new(opts()))).

unexpected_test_() ->
    CH = ?T:client_hello(with_share(#{})),
    {ok, S1, _} = ?S:handshake_data(initial, CH, ?S:new(opts())),
    [?_assertMatch({error, unexpected_message, {finished, hello}},
                   ?S:handshake_data(initial, <<20, 0, 0, 32, 0:256>>, ?S:new(opts()))),
     ?_assertMatch({error, unexpected_message, {data_at, handshake, hello}},
                   ?S:handshake_data(handshake, <<1>>, ?S:new(opts()))),
     ?_assertMatch({ok, _, []}, ?S:handshake_data(handshake, <<>>, ?S:new(opts()))),
     ?_assertMatch({error, unexpected_message, {data_before_key_change, hello}},
                   ?S:handshake_data(initial, <<CH/binary, 20>>, ?S:new(opts()))),
     ?_assertMatch({error, unexpected_message, {message_too_long, 16#ffffff}},
                   ?S:handshake_data(initial, <<1, 16#ffffff:24>>, ?S:new(opts()))),
     ?_assertMatch({error, unexpected_message, {client_hello, finished}},
                   ?S:handshake_data(handshake, CH, S1)),
     ?_assertMatch({error, unexpected_message, {data_at, initial, finished}},
                   ?S:handshake_data(initial, CH, S1)),
     ?_assertMatch({error, decrypt_error, bad_finished},
                   ?S:handshake_data(handshake, <<20, 0, 0, 32, 0:256>>, S1)),
     ?_assertMatch({error, decode_error, finished_length},
                   ?S:handshake_data(handshake, <<20, 0, 0, 31, 0:248>>, S1))].

after_handshake_test() ->
    {ok, #{server := S}} = ?T:handshake(quic_opts(), #{}),
    ?assertMatch({error, unexpected_message, {key_update, connected}},
                 ?S:handshake_data(application, <<24, 0, 0, 1, 0>>, S)),
    ?assertMatch({error, unexpected_message, {data_at, handshake, connected}},
                 ?S:handshake_data(handshake, <<20>>, S)).

%% Client certificates (verify_peer), with the test client's chain.
client_auth_test_() ->
    [#{chain := Chain, key := Key}] = ?T:creds(ecdsa),
    Trusted = proplists:get_value(cacerts, ?T:ssl_server_opts(ecdsa)),
    Good = {Chain, Key, ecdsa_secp256r1_sha256},
    Opts = (opts())#{verify => verify_peer, trusted => Trusted},
    Run = fun(O, Cert) -> ?T:handshake(maps:merge(Opts, O), #{client_cert => Cert}) end,
    [?_assertMatch({ok, #{actions := [_ | _]}}, Run(#{}, Good)),
     ?_test(begin
                {ok, #{actions := As}} = Run(#{}, Good),
                ?assertMatch([{peer_certificates, Chain}, {read_secret, application, _, _},
                              handshake_complete], lists:nthtail(length(As) - 3, As))
            end),
     ?_assertMatch({ok, _}, Run(#{}, none)),
     ?_assertEqual({error, certificate_required, no_client_certificate},
                   Run(#{fail_if_no_peer_cert => true}, none)),
     ?_assertMatch({error, unknown_ca, _}, Run(#{trusted => []}, Good)),
     ?_assertEqual({error, decrypt_error, bad_client_certificate_verify},
                   Run(#{}, {bad_signature, Good})),
     ?_assertEqual({error, decrypt_error, bad_client_certificate_verify},
                   Run(#{}, {Chain, Key, ecdsa_secp384r1_sha384})),
     ?_assertEqual({error, illegal_parameter, certificate_request_context},
                   Run(#{}, {context, Good}))].

alert_codes_test() ->
    ?assertEqual(16#178, falco_quic_error:crypto_error(no_application_protocol)),
    ?assertEqual(16#16d, falco_quic_error:crypto_error(missing_extension)),
    ?assertEqual(<<2, 70>>, falco_tls13_alert:encode(protocol_version)),
    ?assertEqual(<<1, 0>>, falco_tls13_alert:encode(close_notify)),
    ?assertEqual(decrypt_error, falco_tls13_alert:from_code(51)),
    ?assertEqual(unknown, falco_tls13_alert:from_code(255)).
