%% EUnit tests for falco_quic_handshake: a client written here (the
%% ClientHello from falco_test_tls13, its key schedule from falco_tls13_keys)
%% runs whole handshakes through CRYPTO data, in order and as Chromium
%% sends it (about two dozen pieces out of order, RFC 9001 §4.1.3); the
%% keys of every level are those the client derives; the refusals are
%% QUIC's errors.
-module(falco_quic_handshake_tests).
-include_lib("eunit/include/eunit.hrl").

-define(H, falco_quic_handshake).
-define(K, falco_tls13_keys).
-define(DCID, <<16#83, 16#94, 16#c8, 16#f0, 16#3e, 16#51, 16#57, 16#08>>).

server(Opts) ->
    ?H:new(maps:merge(#{credentials => falco_test_tls13:creds(ecdsa), alpn => [<<"h3">>],
                        transport_params => <<1, 2, 3, 4>>}, Opts), ?DCID).

%% A ClientHello with an x25519 share: {Bytes, PrivateKey}.
hello(Opts) ->
    {Pub, Priv} = crypto:generate_key(ecdh, x25519),
    CH = falco_test_tls13:client_hello(maps:merge(#{shares => [{29, Pub}], groups => [29],
                                                    transport_params => <<9, 9>>}, Opts)),
    {CH, Priv}.

%% Feeds Bytes at Level as CRYPTO pieces (offset order given by Order),
%% collecting events.
feed(Level, Bytes, Pieces, H0) ->
    lists:foldl(fun(_, {error, _, _} = E) -> E;
                   ({Off, Piece}, {ok, H, Es}) ->
                        case ?H:crypto(Level, Off, Piece, H) of
                            {ok, H1, Es1} -> {ok, H1, Es ++ Es1};
                            Error -> Error
                        end
                end, {ok, H0, []}, Pieces(Bytes)).

whole(Bytes) -> [{0, Bytes}].

%% Chromium's shape: pieces of 20 to 100 bytes, shuffled.
shuffled(Bytes) ->
    Cuts = cut(Bytes, 0, []),
    [P || {_, P} <- lists:sort([{rand:uniform(), P} || P <- Cuts])].

cut(<<>>, _, Acc) -> Acc;
cut(Bytes, Off, Acc) ->
    N = min(byte_size(Bytes), 20 + rand:uniform(80)),
    <<P:N/binary, Rest/binary>> = Bytes,
    cut(Rest, Off + N, [{Off, P} | Acc]).

%% All CRYPTO data of Level, taken in frames of at most Room bytes.
drain(Level, Room, H) ->
    drain(Level, Room, H, []).

drain(Level, Room, H, Acc) ->
    case ?H:take(Level, Room, H) of
        {[], 0, H1} -> {frames_data(lists:reverse(Acc)), H1};
        {Frames, Size, H1} ->
            ?assert(Size =< Room),
            ?assertEqual(Size, iolist_size([falco_quic_frame:build(F) || F <- Frames])),
            drain(Level, Room, H1, lists:reverse(Frames, Acc))
    end.

frames_data(Frames) ->
    %% offsets are contiguous from 0
    {Data, _} = lists:foldl(fun({crypto, Off, B}, {Acc, Off}) -> {<<Acc/binary, B/binary>>, Off + byte_size(B)} end,
                            {<<>>, 0}, Frames),
    Data.

th(Hash, Msgs) -> crypto:hash(Hash, Msgs).

%% Keys hold a crypto state: compared by their suite and secret.
sk(Keys) -> {falco_quic_keys:suite(Keys), falco_quic_keys:secret(Keys)}.

%% The whole handshake, the client's side checked at each step.
handshake(Pieces) ->
    {CH, Priv} = hello(#{}),
    {ok, H1, Es1} = feed(initial, CH, Pieces, server(#{})),
    ?assertEqual([{server_name, <<"localhost">>}, {alpn, <<"h3">>}, {transport_params, <<9, 9>>},
                  {keys, handshake, read}, {keys, handshake, write}, {keys, application, write}],
                 Es1),
    %% the Initial level's CRYPTO: the ServerHello
    {SH, H2} = drain(initial, 1000, H1),
    #{suite := Suite, hash := Hash, secret := HS, client := CHs, server := SHs} =
        falco_test_tls13:handshake_keys([CH, SH], SH, fun(x25519) -> Priv end),
    ?assertEqual({Suite, CHs}, sk(?H:keys(handshake, read, H2))),
    ?assertEqual({Suite, SHs}, sk(?H:keys(handshake, write, H2))),
    %% the Handshake level's: EncryptedExtensions to Finished, in frames
    %% that fit 300 bytes
    {Flight, H3} = drain(handshake, 300, H2),
    ?assertNot(?H:pending(handshake, H3)),
    <<8, _/binary>> = Flight,
    {CAp, SAp} = ?K:application_traffic(Hash, ?K:master_secret(Hash, HS), th(Hash, [CH, SH, Flight])),
    ?assertEqual({Suite, SAp}, sk(?H:keys(application, write, H3))),
    ?assertEqual(undefined, ?H:keys(application, read, H3)),
    ?assertNot(?H:complete(H3)),
    Fin = falco_tls13_msg:finished(?K:verify_data(Hash, CHs, th(Hash, [CH, SH, Flight]))),
    {ok, H4, Es4} = feed(handshake, Fin, Pieces, H3),
    ?assertEqual([{keys, application, read}, handshake_complete], Es4),
    ?assertEqual({Suite, CAp}, sk(?H:keys(application, read, H4))),
    ?assert(?H:complete(H4)),
    ?assertMatch(#{alpn := <<"h3">>, transport_params := <<9, 9>>}, ?H:info(H4)),
    H4.

in_order_test() ->
    handshake(fun whole/1).

chromium_pieces_test_() ->
    [?_test(handshake(fun shuffled/1)) || _ <- lists:seq(1, 5)].

%% Initial keys come from the original DCID (RFC 9001 §5.2).
initial_keys_test() ->
    {C, S} = falco_quic_keys:initial(?DCID),
    H = server(#{}),
    ?assertEqual(sk(C), sk(?H:keys(initial, read, H))),
    ?assertEqual(sk(S), sk(?H:keys(initial, write, H))),
    ?assertEqual(undefined, ?H:keys(handshake, read, H)).

%% A lost piece of our CRYPTO data goes back in offset order.
requeue_test() ->
    {CH, _} = hello(#{}),
    {ok, H1, _} = feed(initial, CH, fun whole/1, server(#{})),
    {SH, H2} = drain(initial, 1000, H1),
    {[{crypto, 0, First}], _, H3} = ?H:take(handshake, 200, H2),
    H4 = ?H:requeue(initial, 10, binary:part(SH, 10, 20), H3),
    ?assert(?H:pending(initial, H4)),
    {[{crypto, 10, Again}], _, _} = ?H:take(initial, 1000, H4),
    ?assertEqual(binary:part(SH, 10, 20), Again),
    H5 = ?H:requeue(handshake, 0, First, H4),
    {[{crypto, 0, First} | _], _, _} = ?H:take(handshake, 5000, H5).

%% Refusals, as CONNECTION_CLOSE will carry them.
refusals_test() ->
    Refused = fun(Opts, ServerOpts) ->
                      {CH, _} = hello(Opts),
                      feed(initial, CH, fun whole/1, server(ServerOpts))
              end,
    %% no ALPN in common: CRYPTO_ERROR 0x178 (RFC 9001 §8.1)
    ?assertMatch({error, {crypto_error, no_application_protocol}, _},
                 Refused(#{alpn => [<<"h2">>]}, #{})),
    ?assertEqual(16#178, falco_quic_error:crypto_error(no_application_protocol)),
    %% no quic_transport_parameters (§8.2)
    ?assertMatch({error, {crypto_error, missing_extension}, _},
                 Refused(#{transport_params => none}, #{})),
    %% a legacy_session_id (§8.4)
    ?assertMatch({error, protocol_violation, legacy_session_id},
                 Refused(#{session_id => <<1:256>>}, #{})),
    %% CRYPTO beyond what may be held past a hole (RFC 9000 §7.5)
    ?assertMatch({error, crypto_buffer_exceeded, _},
                 ?H:crypto(initial, 20000, <<"x">>, server(#{}))),
    %% Handshake CRYPTO before its keys, and after the level is discarded
    ?assertMatch({error, protocol_violation, {crypto_without_keys, handshake}},
                 ?H:crypto(handshake, 0, <<"x">>, server(#{}))),
    H = ?H:discard(initial, server(#{})),
    ?assertMatch({error, protocol_violation, {crypto_after_discard, initial}},
                 ?H:crypto(initial, 0, <<"x">>, H)),
    ?assertEqual(undefined, ?H:keys(initial, read, H)),
    ?assertNot(?H:pending(initial, H)),
    ?assertEqual({[], 0, H}, ?H:take(initial, 1000, H)).

%% Repeated and overlapping CRYPTO data changes nothing (RFC 9000 §19.6).
duplicates_test() ->
    {CH, _} = hello(#{}),
    Half = byte_size(CH) div 2,
    {ok, H1, []} = ?H:crypto(initial, 0, binary:part(CH, 0, Half), server(#{})),
    {ok, H2, []} = ?H:crypto(initial, 0, binary:part(CH, 0, 10), H1),
    {ok, _, Es} = ?H:crypto(initial, 5, binary:part(CH, 5, byte_size(CH) - 5), H2),
    ?assertMatch([{server_name, _}, {alpn, <<"h3">>} | _], Es).
