%% PropEr properties for falco_quic_packet (with falco_quic_keys and
%% falco_quic_aead): arbitrary or mutated datagrams never make reading
%% raise, through invariant/2, split/2, unmask/3, open/2 and retry_valid/2,
%% and every result has a documented shape; protect then parse and
%% unprotect gives back the packet number and the payload for random
%% suites, types, CIDs of 0-20 bytes, packet numbers, key phases and
%% sizes to fill; one flipped bit anywhere in a protected packet makes it
%% fail to open. Run from EUnit, 300 cases each (falco_fuzz_prop:numtests/3
%% gives more to the properties its codecs/0 lists).
-module(falco_quic_packet_prop).
-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-define(NUMTESTS, 300).
-define(P, falco_quic_packet).
-define(K, falco_quic_keys).
-define(MAX_PN, 16#3fffffffffffffff).

properties_test_() ->
    [{atom_to_list(P),
      {timeout, 120,
       ?_assert(proper:quickcheck(?MODULE:P(), [{numtests, falco_fuzz_prop:numtests(?MODULE, P, ?NUMTESTS)},
                                                {to_file, user}]))}}
     || P <- [prop_parse_fuzz, prop_round_trip, prop_bit_flip_fails]].

%% -- generators ---------------------------------------------------------------

suite() -> elements([aes_128_gcm_sha256, aes_256_gcm_sha384, chacha20_poly1305_sha256]).

keys() ->
    ?LET({Suite, Secret}, {suite(), binary(48)},
         ?K:from_secret(Suite, binary:part(Secret, 0, falco_tls13_hkdf:hash_size(?K:hash(Suite))))).

cid() -> ?LET(N, range(0, 20), binary(N)).

%% falco's own CIDs are 8 bytes: the short headers the properties write
%% have the DCID length the reader is told.
header() ->
    oneof([?LET({D, S, T}, {cid(), cid(), binary()},
                #{type => initial, dcid => D, scid => S, token => T}),
           ?LET({Type, D, S}, {elements([zero_rtt, handshake]), cid(), cid()},
                #{type => Type, dcid => D, scid => S}),
           ?LET({D, KP}, {cid(), range(0, 1)}, #{type => one_rtt, dcid => D, key_phase => KP})]).

%% {PN, LargestAcked}: the sender's, with the receiver's largest between.
numbers() ->
    oneof([{range(0, 300), none},
           ?LET({Acked, Gap}, {range(0, ?MAX_PN - 1), range(1, 1 bsl 20)},
                {min(?MAX_PN, Acked + Gap), Acked})]).

packet() ->
    ?LET({Header, {PN, Acked}, Payload, Keys, Min},
         {header(), numbers(), binary(), keys(), oneof([0, range(0, 1500)])},
         {Header, PN, Acked, Payload, Keys, Min}).

protected({Header, PN, Acked, Payload, Keys, Min}) ->
    iolist_to_binary(?P:protect(Header, PN, Acked, Payload, Keys, Min)).

%% Bytes a QUIC reader treats specially: first bytes of each form and
%% type, version 1 and 0, CID lengths about 20, varint prefixes.
tricky() ->
    ?LET(Parts, list(oneof([elements([<<16#c0>>, <<16#c3>>, <<16#d1>>, <<16#e2>>, <<16#f0>>,
                                      <<16#ff>>, <<16#40>>, <<16#5f>>, <<16#80>>, <<0, 0, 0, 1>>,
                                      <<0, 0, 0, 0>>, <<20>>, <<21>>, <<255>>, <<0>>, <<8>>,
                                      <<16#40, 16#14>>, <<16#80, 0, 0, 20>>, <<16#c0>>]),
                            binary()])),
         iolist_to_binary(Parts)).

datagram() ->
    ?LET(Ps, ?LET(N, range(1, 3), vector(N, packet())),
         {iolist_to_binary([protected(P) || P <- Ps]), [element(5, P) || P <- Ps]}).

%% -- properties ---------------------------------------------------------------

%% Whatever the bytes, reading them returns one of the documented results;
%% with any of the keys the packets were sealed with (or others),
%% unmasking and opening do too.
prop_parse_fuzz() ->
    ?FORALL({{Datagram, Keys}, DcidLen, Largest},
            {oneof([?LET({B, Ks}, datagram(), {falco_fuzz_prop:mutated(B), Ks}),
                    ?LET({B, K}, {falco_fuzz_prop:input(?LET({B, _}, datagram(), B), tricky()),
                                  keys()},
                         {B, [K, element(1, ?K:initial(<<>>))]})]),
             elements([0, 8, 20]), oneof([none, range(0, 1 bsl 40)])},
            falco_fuzz_prop:safe(
              fun() ->
                      invariant_ok(?P:invariant(Datagram, DcidLen))
                          andalso split_ok(?P:split(Datagram, DcidLen), Keys, Largest)
              end)).

invariant_ok({ok, {long, V, D, S}}) -> is_integer(V) andalso is_binary(D) andalso is_binary(S);
invariant_ok({ok, {short, D}}) -> is_binary(D);
invariant_ok({error, {drop, truncated}}) -> true;
invariant_ok(_) -> false.

split_ok({Packets, End}, Keys, Largest) when is_list(Packets) ->
    (End =:= ok orelse drop(End))
        andalso lists:all(fun(P) -> packet_ok(P, Keys, Largest) end, Packets).

packet_ok(#{type := retry} = P, _, _) ->
    is_boolean(?P:retry_valid(P, <<1, 2, 3>>));
packet_ok(#{type := T}, _, _) when T =:= version_negotiation; T =:= unknown_version ->
    true;
packet_ok(#{type := _} = P, Keys, Largest) ->
    lists:all(fun(K) -> opened_ok(?P:unmask(P, K, Largest), K) end, Keys).

opened_ok({ok, #{pn := PN, key_phase := KP} = U}, K) when is_integer(PN), KP =:= 0 orelse KP =:= 1 ->
    case ?P:open(U, K) of
        {ok, Payload} -> is_binary(Payload);
        {error, {protocol_violation, W}} -> W =:= reserved_bits orelse W =:= no_frames;
        Error -> drop(Error)
    end;
opened_ok(Error, _) ->
    drop(Error).

drop({error, {drop, Why}}) -> is_atom(Why);
drop(_) -> false.

%% What protect writes reads back: the same type, CIDs and token, the
%% packet number, the payload then only PADDING, at least the size asked.
prop_round_trip() ->
    ?FORALL({Header, PN, Acked, Payload, Keys, Min} = Spec, packet(),
            falco_quic_packet_safe(
              fun() ->
                      Bin = protected(Spec),
                      DcidLen = byte_size(maps:get(dcid, Header)),
                      {ok, P, <<>>} = ?P:parse(Bin, DcidLen),
                      Same = maps:with([type, dcid, scid, token], P)
                          =:= maps:with([type, dcid, scid, token], Header),
                      {ok, #{pn := PN, key_phase := KP} = U} = ?P:unmask(P, Keys, Acked),
                      {ok, Plain} = ?P:open(U, Keys),
                      PayLen = byte_size(Payload),
                      <<Payload:PayLen/binary, Padding/binary>> = Plain,
                      Same andalso KP =:= maps:get(key_phase, Header, 0)
                          andalso Padding =:= <<0:(byte_size(Padding) * 8)>>
                          andalso byte_size(Bin) >= Min
                          andalso (Min =< ?P:overhead(Header, PN, Acked) + max(PayLen, 3)
                                   orelse byte_size(Bin) =:= Min)
              end)).

%% One bit flipped anywhere, header or payload: the packet is dropped or
%% fails to open, never read as valid.
prop_bit_flip_fails() ->
    ?FORALL({{Header, _, Acked, _, Keys, _} = Spec, Pos, Bit}, {packet(), nat(), range(0, 7)},
            falco_quic_packet_safe(
              fun() ->
                      Bin = protected(Spec),
                      N = Pos rem byte_size(Bin),
                      <<H:N/binary, B, T/binary>> = Bin,
                      Flipped = <<H/binary, (B bxor (1 bsl Bit)), T/binary>>,
                      case ?P:parse(Flipped, byte_size(maps:get(dcid, Header))) of
                          {ok, #{type := Type} = P, _} when Type =/= retry,
                                                            Type =/= version_negotiation,
                                                            Type =/= unknown_version ->
                              element(1, ?P:unprotect(P, Keys, Acked)) =:= error;
                          {ok, _, _} -> true;
                          {error, {drop, _}} -> true
                      end
              end)).

falco_quic_packet_safe(Fun) ->
    falco_fuzz_prop:safe(Fun).
