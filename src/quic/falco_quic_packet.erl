%% @doc QUIC v1 packets (RFC 9000 §17, RFC 8999, RFC 9001 §5): the
%% headers read and written, packet protection applied and removed. Pure:
%% binaries in, results out; nothing read from the wire raises.
%%
%% Reading a datagram:
%%
%% - {@link invariant/2} reads only what RFC 8999 fixes for every version
%%   (form, version, connection IDs; a short header's DCID has the length
%%   the caller gives, falco's own CIDs are 8 bytes): enough to route.
%% - {@link parse/2} reads one packet's header and returns it with the
%%   bytes after it; {@link split/2} takes a datagram's coalesced packets
%%   (RFC 9000 §12.2: long headers carry their Length, a short header runs
%%   to the end; a later packet with another DCID is ignored). Types:
%%   Initial (with its token), 0-RTT, Handshake, Retry, 1-RTT, Version
%%   Negotiation, and `unknown_version' (only the invariant fields, for a
%%   Version Negotiation reply). A packet too short to hold the header
%%   protection sample is dropped here (RFC 9001 §5.4.2), as is a fixed
%%   bit of 0 or a v1 CID over 20 bytes (§17.2).
%% - {@link unmask/3} removes header protection and decodes the packet
%%   number against the largest received in its space (App. A.3);
%%   {@link open/2} then removes packet protection. A 1-RTT packet's key
%%   phase is known after unmask/3, so the caller picks the keys for
%%   open/2; {@link unprotect/3} is the two with one set of keys.
%%   Reserved bits are checked only after the AEAD accepted the packet
%%   (§17.2, §17.3.1), so forged packets are dropped, never fatal.
%%
%% Errors are `{error, {drop, Why}}' (discard the packet, RFC 9000 §5.2,
%% RFC 9001 §5.5) or `{error, {protocol_violation, Why}}' (a connection
%% error of type PROTOCOL_VIOLATION: reserved bits set, no frames, §12.4).
%%
%% Writing: {@link protect/6} builds a protected Initial, 0-RTT,
%% Handshake or 1-RTT packet (spin bit 0), the packet number length chosen
%% from the largest acknowledged (App. A.2), the payload padded with
%% PADDING frames so the sample exists and, if asked, so the packet fills
%% a size (1200 bytes for a datagram with an Initial, §14.1). Long headers
%% write Length in two bytes (four past 16383), so padding is exact.
%% {@link retry/5} and {@link retry_valid/2} build and check Retry
%% packets with their integrity tag (RFC 9001 §5.8);
%% {@link version_negotiation/3} builds one (§17.2.1) with a grease
%% version (§15).
%%
%% @private internal to falco
-module(falco_quic_packet).

-export([invariant/2, parse/2, split/2]).
-export([unmask/3, open/2, unprotect/3]).
-export([protect/5, protect/6, overhead/3]).
-export([retry/5, retry_valid/2, version_negotiation/3]).
-export([pn_length/2, decode_pn/3]).

-export_type([cid/0, packet/0, header/0, unmasked/0, reason/0, pn/0, largest/0]).

-define(V1, 1).
-define(MAX_CID, 20).
-define(TAG, 16).
-define(SAMPLE, 16).
%% A packet's bytes from its packet number on: at least the 4 bytes the
%% sample skips and the sample (RFC 9001 §5.4.2).
-define(MIN_PN_AND_PAYLOAD, 20).
-define(MAX_PN, 16#3fffffffffffffff).

-define(INITIAL, 0).
-define(ZERO_RTT, 1).
-define(HANDSHAKE, 2).
-define(RETRY, 3).

-type cid() :: binary().
-type pn() :: 0..?MAX_PN.
%% The largest packet number received (or acknowledged) so far, or none.
-type largest() :: pn() | none.
-type protected_type() :: initial | zero_rtt | handshake | one_rtt.
-type packet() :: #{type := initial | zero_rtt | handshake, version := ?V1, dcid := cid(),
                    scid := cid(), token => binary(), pn_offset := pos_integer(),
                    bytes := binary()}
                | #{type := one_rtt, dcid := cid(), pn_offset := pos_integer(), bytes := binary()}
                | #{type := retry, version := ?V1, dcid := cid(), scid := cid(),
                    token := binary(), tag := <<_:128>>, bytes := binary()}
                | #{type := version_negotiation, dcid := cid(), scid := cid(),
                    versions := [0..16#ffffffff, ...]}
                | #{type := unknown_version, version := 0..16#ffffffff, dcid := cid(),
                    scid := cid()}.
%% What protect/6 writes. version defaults to 1, token to empty, key_phase
%% to 0; pn_length (bytes) to what pn_length/2 chooses.
-type header() :: #{type := protected_type(), dcid := cid(), scid => cid(),
                    version => 0..16#ffffffff, token => binary(), key_phase => 0 | 1,
                    pn_length => 1..4}.
-type unmasked() :: #{type := protected_type(), pn := pn(), key_phase := 0 | 1,
                      reserved := 0..3, aad := binary(), sealed := binary()}.
-type reason() :: {drop, atom()} | {protocol_violation, reserved_bits | no_frames}.

%% -- reading ------------------------------------------------------------------

%% @doc The version-independent fields of a datagram's first packet (RFC
%% 8999 §5): `{long, Version, DCID, SCID}', CIDs of 0-255 bytes, or
%% `{short, DCID}', DCID of DcidLen bytes.
-spec invariant(binary(), 0..?MAX_CID) ->
          {ok, {long, 0..16#ffffffff, cid(), cid()} | {short, cid()}} | {error, {drop, truncated}}.
invariant(<<1:1, _:7, Version:32, DL, DCID:DL/binary, SL, SCID:SL/binary, _/binary>>, _) ->
    {ok, {long, Version, DCID, SCID}};
invariant(<<0:1, _:7, Rest/binary>>, DcidLen)
  when is_integer(DcidLen), DcidLen >= 0, byte_size(Rest) >= DcidLen ->
    {ok, {short, binary:part(Rest, 0, DcidLen)}};
invariant(_, _) ->
    {error, {drop, truncated}}.

%% @doc One packet from the start of Bin and the bytes after it (the next
%% coalesced packet, or `<<>>'); a short header's DCID has DcidLen bytes.
-spec parse(binary(), 0..?MAX_CID) -> {ok, packet(), binary()} | {error, {drop, atom()}}.
parse(<<1:1, _:7, 0:32, Rest/binary>>, _) ->
    version_negotiation(Rest);
parse(<<1:1, 0:1, _:6, ?V1:32, _/binary>>, _) ->
    {error, {drop, fixed_bit}};
parse(<<1:1, 1:1, Type:2, _:4, ?V1:32, DL, DCID:DL/binary, SL, SCID:SL/binary, Rest/binary>> = Bin,
      _) when DL =< ?MAX_CID, SL =< ?MAX_CID ->
    long(Type, Bin, #{version => ?V1, dcid => DCID, scid => SCID}, Rest);
parse(<<1:1, _:7, ?V1:32, DL, _:DL/binary, SL, _/binary>>, _) when DL > ?MAX_CID; SL > ?MAX_CID ->
    {error, {drop, cid_too_long}};
parse(<<1:1, _:7, Version:32, DL, DCID:DL/binary, SL, SCID:SL/binary, _/binary>>, _)
  when Version =/= ?V1 ->
    {ok, #{type => unknown_version, version => Version, dcid => DCID, scid => SCID}, <<>>};
parse(<<0:1, 0:1, _/bits>>, _) ->
    {error, {drop, fixed_bit}};
parse(<<0:1, 1:1, _:6, Rest/binary>> = Bin, DcidLen)
  when is_integer(DcidLen), DcidLen >= 0, byte_size(Rest) >= DcidLen + ?MIN_PN_AND_PAYLOAD ->
    {ok, #{type => one_rtt, dcid => binary:part(Rest, 0, DcidLen), pn_offset => 1 + DcidLen,
           bytes => Bin}, <<>>};
parse(_, _) ->
    {error, {drop, truncated}}.

%% @doc The packets coalesced in a datagram, in order, and how reading
%% ended: `ok', or the error of the packet that could not be read (its
%% length unknown, nothing after it can be). Packets whose DCID differs
%% from the first one's are left out (RFC 9000 §12.2).
-spec split(binary(), 0..?MAX_CID) -> {[packet()], ok | {error, {drop, atom()}}}.
split(Datagram, DcidLen) ->
    split(Datagram, DcidLen, first, []).

split(<<>>, _, _, Acc) ->
    {lists:reverse(Acc), ok};
split(Bin, DcidLen, First, Acc) ->
    case parse(Bin, DcidLen) of
        {ok, #{dcid := DCID} = P, Rest} when First =:= first; First =:= DCID ->
            split(Rest, DcidLen, DCID, [P | Acc]);
        {ok, _OtherDcid, Rest} ->
            split(Rest, DcidLen, First, Acc);
        {error, _} = Error ->
            {lists:reverse(Acc), Error}
    end.

version_negotiation(<<DL, DCID:DL/binary, SL, SCID:SL/binary, Versions/binary>>)
  when Versions =/= <<>>, byte_size(Versions) rem 4 =:= 0 ->
    {ok, #{type => version_negotiation, dcid => DCID, scid => SCID,
           versions => [V || <<V:32>> <= Versions]}, <<>>};
version_negotiation(_) ->
    {error, {drop, bad_version_negotiation}}.

long(?INITIAL, Bin, Header, Rest0) ->
    case falco_quic_varint:decode(Rest0) of
        {TokenLen, Rest1} when byte_size(Rest1) >= TokenLen ->
            <<Token:TokenLen/binary, Rest/binary>> = Rest1,
            with_length(Bin, Header#{type => initial, token => Token}, Rest);
        _ ->
            {error, {drop, truncated}}
    end;
long(?ZERO_RTT, Bin, Header, Rest) ->
    with_length(Bin, Header#{type => zero_rtt}, Rest);
long(?HANDSHAKE, Bin, Header, Rest) ->
    with_length(Bin, Header#{type => handshake}, Rest);
long(?RETRY, Bin, Header, Rest) ->
    retry_packet(Bin, Header, Rest).

%% Length counts the packet number and the payload (§17.2).
with_length(Bin, Header, Rest) ->
    case falco_quic_varint:decode(Rest) of
        {Len, _} when Len < ?MIN_PN_AND_PAYLOAD ->
            {error, {drop, too_short}};
        {Len, After} when Len =< byte_size(After) ->
            PnOffset = byte_size(Bin) - byte_size(After),
            Size = PnOffset + Len,
            <<Packet:Size/binary, Next/binary>> = Bin,
            {ok, Header#{pn_offset => PnOffset, bytes => Packet}, Next};
        _ ->
            {error, {drop, truncated}}
    end.

%% A Retry runs to the end of the datagram: token, then the 16-byte tag. A
%% client discards one with an empty token (§17.2.5.2).
retry_packet(Bin, Header, Rest) when byte_size(Rest) > ?TAG ->
    TokenLen = byte_size(Rest) - ?TAG,
    <<Token:TokenLen/binary, Tag:?TAG/binary>> = Rest,
    {ok, Header#{type => retry, token => Token, tag => Tag, bytes => Bin}, <<>>};
retry_packet(_, _, _) ->
    {error, {drop, bad_retry}}.

%% -- removing protection ------------------------------------------------------

%% @doc Removes header protection from a packet parse/2 returned, and
%% decodes its packet number against Largest, the largest received in its
%% packet number space.
-spec unmask(packet(), falco_quic_keys:keys(), largest()) -> {ok, unmasked()} | {error, reason()}.
unmask(#{type := Type, pn_offset := Off, bytes := Bin}, Keys, Largest)
  when Type =/= retry, byte_size(Bin) >= Off + ?MIN_PN_AND_PAYLOAD ->
    <<Masked, _/binary>> = Bin,
    <<M0, MaskPn:32>> = falco_quic_aead:mask(Keys, binary:part(Bin, Off + 4, ?SAMPLE)),
    First = Masked bxor (M0 band first_bits(Type)),
    PnLen = (First band 3) + 1,
    <<_, Mid:(Off - 1)/binary, PnMasked:PnLen/unit:8, Sealed/binary>> = Bin,
    Truncated = PnMasked bxor (MaskPn bsr (32 - 8 * PnLen)),
    case decode_pn(Truncated, 8 * PnLen, Largest) of
        PN when PN =< ?MAX_PN ->
            {ok, #{type => Type, pn => PN, key_phase => key_phase(Type, First),
                   reserved => reserved(Type, First),
                   aad => <<First, Mid/binary, Truncated:PnLen/unit:8>>, sealed => Sealed}};
        _ ->
            {error, {drop, pn_exhausted}}
    end;
unmask(_, _, _) ->
    {error, {drop, not_protected}}.

%% @doc Removes packet protection from an unmasked packet: its payload (its
%% frames), or the error. A payload that fails to open is `{drop,
%% bad_tag}'; reserved bits set or no frames are checked only after.
-spec open(unmasked(), falco_quic_keys:keys()) -> {ok, binary()} | {error, reason()}.
open(#{pn := PN, aad := AAD, sealed := Sealed, reserved := Reserved}, Keys) ->
    case falco_quic_aead:open(Keys, PN, AAD, Sealed) of
        {ok, _} when Reserved =/= 0 -> {error, {protocol_violation, reserved_bits}};
        {ok, <<>>} -> {error, {protocol_violation, no_frames}};
        {ok, Payload} -> {ok, Payload};
        {error, bad_tag} -> {error, {drop, bad_tag}}
    end.

%% @doc unmask/3 then open/2 with the same keys: the packet number and
%% the payload.
-spec unprotect(packet(), falco_quic_keys:keys(), largest()) ->
          {ok, pn(), binary()} | {error, reason()}.
unprotect(Packet, Keys, Largest) ->
    case unmask(Packet, Keys, Largest) of
        {ok, #{pn := PN} = Unmasked} ->
            case open(Unmasked, Keys) of
                {ok, Payload} -> {ok, PN, Payload};
                Error -> Error
            end;
        Error ->
            Error
    end.

%% -- writing ------------------------------------------------------------------

%% @doc protect/6 with no size to fill.
-spec protect(header(), pn(), largest(), iodata(), falco_quic_keys:keys()) -> iodata().
protect(Header, PN, LargestAcked, Payload, Keys) ->
    protect(Header, PN, LargestAcked, Payload, Keys, 0).

%% @doc A protected packet of Header's type carrying Payload (frames) as
%% packet number PN, its encoded length chosen from LargestAcked, the
%% largest of this space the peer acknowledged. PADDING frames are added
%% so the header protection sample exists, and so the packet is at least
%% MinSize bytes. iodata: the header, the ciphertext and the tag.
-spec protect(header(), pn(), largest(), iodata(), falco_quic_keys:keys(), non_neg_integer()) ->
          iodata().
protect(#{type := Type} = Header, PN, LargestAcked, Payload, Keys, MinSize) when PN =< ?MAX_PN ->
    PnLen = pn_len(Header, PN, LargestAcked),
    Fields = fields(Header),
    PayLen = iolist_size(Payload),
    {Pad, Length} = padding(Type, byte_size(Fields), PnLen, PayLen, MinSize),
    First = first_byte(Header, PnLen),
    Truncated = PN band ((1 bsl (8 * PnLen)) - 1),
    AAD = <<First, Fields/binary, Length/binary, Truncated:PnLen/unit:8>>,
    {Cipher, Tag} = falco_quic_aead:seal(Keys, PN, AAD, padded(Payload, Pad)),
    <<M0, MaskPn:32>> = falco_quic_aead:mask(Keys, sample(Cipher, Tag, 4 - PnLen)),
    [<<(First bxor (M0 band first_bits(Type))), Fields/binary, Length/binary,
       (Truncated bxor (MaskPn bsr (32 - 8 * PnLen))):PnLen/unit:8>>, Cipher, Tag].

%% @doc The bytes protect/6 adds to a payload of up to 16383 bytes: header,
%% packet number and tag (padding aside), to fit frames in a datagram.
-spec overhead(header(), pn(), largest()) -> pos_integer().
overhead(#{type := Type} = Header, PN, LargestAcked) ->
    1 + byte_size(fields(Header)) + length_size(Type)
        + pn_len(Header, PN, LargestAcked) + ?TAG.

pn_len(#{pn_length := PnLen}, _, _) when is_integer(PnLen), PnLen >= 1, PnLen =< 4 -> PnLen;
pn_len(_, PN, LargestAcked) -> pn_length(PN, LargestAcked).

%% Between the first byte and Length (or the packet number): version,
%% CIDs, an Initial's token; a short header's DCID.
fields(#{type := one_rtt, dcid := DCID}) when byte_size(DCID) =< ?MAX_CID ->
    DCID;
fields(#{type := Type, dcid := DCID, scid := SCID} = Header)
  when byte_size(DCID) =< ?MAX_CID, byte_size(SCID) =< ?MAX_CID ->
    Long = <<(maps:get(version, Header, ?V1)):32, (byte_size(DCID)), DCID/binary,
             (byte_size(SCID)), SCID/binary>>,
    case Type of
        initial ->
            Token = maps:get(token, Header, <<>>),
            <<Long/binary, (falco_quic_varint:encode(byte_size(Token)))/binary, Token/binary>>;
        _ ->
            Long
    end.

first_byte(#{type := one_rtt} = Header, PnLen) ->
    16#40 bor (maps:get(key_phase, Header, 0) bsl 2) bor (PnLen - 1);
first_byte(#{type := Type}, PnLen) ->
    16#c0 bor (long_type(Type) bsl 4) bor (PnLen - 1).

long_type(initial) -> ?INITIAL;
long_type(zero_rtt) -> ?ZERO_RTT;
long_type(handshake) -> ?HANDSHAKE.

%% PADDING so that the packet number and the payload give a sample
%% (§5.4.2), then up to MinSize bytes in all; and the Length field that
%% counts them, two bytes while it fits, else four (a longer encoding
%% than needed is allowed, §16), so the size is exact.
padding(Type, FieldsLen, PnLen, PayLen, MinSize) ->
    Len0 = PnLen + PayLen + max(0, 4 - PnLen - PayLen) + ?TAG,
    {Len, Length} = length_field(Type, Len0, 1 + FieldsLen, MinSize),
    {Len - PnLen - PayLen - ?TAG, Length}.

length_field(one_rtt, Len0, Before, MinSize) ->
    {max(Len0, MinSize - Before), <<>>};
length_field(_, Len0, Before, MinSize) ->
    case max(Len0, MinSize - Before - 2) of
        Len when Len < 16#4000 -> {Len, <<1:2, Len:14>>};
        _ -> Len = max(Len0, MinSize - Before - 4), {Len, <<2:2, Len:30>>}
    end.

length_size(one_rtt) -> 0;
length_size(_) -> 2.

padded(Payload, 0) -> Payload;
padded(Payload, Pad) -> [Payload, <<0:Pad/unit:8>>].

sample(Cipher, _Tag, Offset) when byte_size(Cipher) >= Offset + ?SAMPLE ->
    binary:part(Cipher, Offset, ?SAMPLE);
sample(Cipher, Tag, Offset) ->
    binary:part(<<Cipher/binary, Tag/binary>>, Offset, ?SAMPLE).

%% The first byte's bits under header protection (RFC 9001 §5.4.1).
first_bits(one_rtt) -> 16#1f;
first_bits(_) -> 16#0f.

key_phase(one_rtt, First) -> (First bsr 2) band 1;
key_phase(_, _) -> 0.

reserved(one_rtt, First) -> (First bsr 3) band 3;
reserved(_, First) -> (First bsr 2) band 3.

%% -- Retry and Version Negotiation --------------------------------------------

%% @doc A Retry packet (RFC 9000 §17.2.5) to the client's SCID (DCID here)
%% from our new SCID, carrying Token, its integrity tag computed over
%% ODCID, the DCID of the client's Initial (RFC 9001 §5.8).
-spec retry(0..16#ffffffff, cid(), cid(), binary(), cid()) -> binary().
retry(Version, DCID, SCID, Token, ODCID) when byte_size(DCID) =< ?MAX_CID,
                                              byte_size(SCID) =< ?MAX_CID,
                                              byte_size(ODCID) =< ?MAX_CID ->
    Packet = <<16#ff, Version:32, (byte_size(DCID)), DCID/binary, (byte_size(SCID)), SCID/binary,
               Token/binary>>,
    Tag = falco_quic_aead:retry_tag([byte_size(ODCID), ODCID, Packet]),
    <<Packet/binary, Tag/binary>>.

%% @doc Whether a Retry packet from parse/2 carries the integrity tag
%% made over ODCID, the DCID the client first sent.
-spec retry_valid(packet(), cid()) -> boolean().
retry_valid(#{type := retry, bytes := Bin, tag := Tag}, ODCID) when byte_size(ODCID) =< 255 ->
    Pseudo = [byte_size(ODCID), ODCID, binary:part(Bin, 0, byte_size(Bin) - ?TAG)],
    falco_quic_aead:retry_valid(Pseudo, Tag);
retry_valid(_, _) ->
    false.

%% @doc A Version Negotiation packet (RFC 9000 §17.2.1) answering a
%% packet that came with these CIDs: DCID is its SCID, SCID its DCID
%% (any length up to 255, as RFC 8999 allows). It lists Versions and a
%% grease version (0x?a?a?a?a, §15) that varies with the CIDs; the 0x40 bit
%% of the first byte is set (§17.2.1), the others vary with it.
-spec version_negotiation(binary(), binary(), [0..16#ffffffff]) -> binary().
version_negotiation(DCID, SCID, Versions) when byte_size(DCID) =< 255, byte_size(SCID) =< 255 ->
    Grease = (erlang:phash2({DCID, SCID}, 1 bsl 32) band 16#f0f0f0f0) bor 16#0a0a0a0a,
    <<(16#c0 bor (Grease bsr 26)), 0:32, (byte_size(DCID)), DCID/binary, (byte_size(SCID)),
      SCID/binary, << <<V:32>> || V <- Versions ++ [Grease] >>/binary>>.

%% -- packet numbers (RFC 9000 §17.1, App. A) ----------------------------------

%% @doc The bytes to encode PN in (App. A.2): enough for more than twice
%% the range between it and the largest acknowledged (all since 0 when
%% none is).
-spec pn_length(pn(), largest()) -> 1..4.
pn_length(PN, none) -> pn_bytes(PN + 1);
pn_length(PN, LargestAcked) -> pn_bytes(PN - LargestAcked).

pn_bytes(N) when N < 16#80 -> 1;
pn_bytes(N) when N < 16#8000 -> 2;
pn_bytes(N) when N < 16#800000 -> 3;
pn_bytes(_) -> 4.

%% @doc The full packet number of Truncated, its low Bits bits, given the
%% largest received in the space (App. A.3).
-spec decode_pn(non_neg_integer(), 8 | 16 | 24 | 32, largest()) -> non_neg_integer().
decode_pn(Truncated, Bits, none) ->
    decode(Truncated, Bits, 0);
decode_pn(Truncated, Bits, Largest) ->
    decode(Truncated, Bits, Largest + 1).

decode(Truncated, Bits, Expected) ->
    Win = 1 bsl Bits,
    HalfWin = Win bsr 1,
    Candidate = (Expected band bnot (Win - 1)) bor Truncated,
    if
        Candidate =< Expected - HalfWin, Candidate < (1 bsl 62) - Win -> Candidate + Win;
        Candidate > Expected + HalfWin, Candidate >= Win -> Candidate - Win;
        true -> Candidate
    end.
