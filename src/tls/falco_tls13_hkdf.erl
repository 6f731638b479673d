%% @doc HKDF (RFC 5869) and TLS 1.3's labelled expansion (RFC 8446 §7.1),
%% on crypto:mac/4: the one key-derivation function of falco's TLS 1.3,
%% used by its key schedule and by QUIC's packet protection (RFC 9001
%% §5: initial secrets, packet keys, key update). Pure; the hash is `sha256'
%% or `sha384' (the cipher suite's).
%%
%% @private internal to falco
-module(falco_tls13_hkdf).

-export([extract/3, expand/4, expand_label/5, derive_secret/4, hash_size/1]).
-export_type([hash/0]).

-type hash() :: sha256 | sha384.

%% @doc HKDF-Extract: a pseudorandom key from Salt and input keying
%% material IKM (an empty salt is HashLen zero bytes, RFC 5869 §2.2).
-spec extract(hash(), binary(), binary()) -> binary().
extract(Hash, <<>>, IKM) ->
    extract(Hash, <<0:(hash_size(Hash) * 8)>>, IKM);
extract(Hash, Salt, IKM) ->
    crypto:mac(hmac, Hash, Salt, IKM).

%% @doc HKDF-Expand: Length bytes of output keying material from the
%% pseudorandom key PRK and Info (at most 255 hash lengths).
-spec expand(hash(), binary(), iodata(), 0..16320) -> binary().
expand(Hash, PRK, Info, Length) when Length =< 255 * 48 ->
    expand(Hash, PRK, iolist_to_binary(Info), Length, 1, <<>>, []).

expand(_, _, _, Length, _, _, Acc) when Length =< 0 ->
    Out = iolist_to_binary(lists:reverse(Acc)),
    binary:part(Out, 0, byte_size(Out) + Length);
expand(Hash, PRK, Info, Length, I, Prev, Acc) ->
    T = crypto:mac(hmac, Hash, PRK, [Prev, Info, I]),
    expand(Hash, PRK, Info, Length - byte_size(T), I + 1, T, [T | Acc]).

%% @doc HKDF-Expand-Label (RFC 8446 §7.1): the label gets its "tls13 "
%% prefix here; Context is a transcript hash or empty.
-spec expand_label(hash(), binary(), binary(), binary(), 0..65535) -> binary().
expand_label(Hash, Secret, Label, Context, Length) ->
    Full = <<"tls13 ", Label/binary>>,
    Info = <<Length:16, (byte_size(Full)):8, Full/binary, (byte_size(Context)):8,
             Context/binary>>,
    expand(Hash, Secret, Info, Length).

%% @doc Derive-Secret (RFC 8446 §7.1): Messages is the transcript's hash
%% already taken (a binary of hash_size/1 bytes).
-spec derive_secret(hash(), binary(), binary(), binary()) -> binary().
derive_secret(Hash, Secret, Label, TranscriptHash) ->
    expand_label(Hash, Secret, Label, TranscriptHash, hash_size(Hash)).

%% @doc The hash's output length in bytes.
-spec hash_size(hash()) -> 32 | 48.
hash_size(sha256) -> 32;
hash_size(sha384) -> 48.
