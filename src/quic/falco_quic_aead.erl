%% @doc QUIC's packet payload protection and header protection masks
%% (RFC 9001 §5.3, §5.4.3, §5.4.4) and the Retry Integrity Tag (§5.8),
%% on OTP's crypto with the keys of {@link falco_quic_keys}.
%%
%% The nonce is the IV xor the packet number, left-padded to 12 bytes;
%% the associated data is the unprotected header; the tag is 16 bytes for
%% every suite QUIC v1 defines. {@link open/4} returns `{error, bad_tag}'
%% on any failure to authenticate, never raises. The header protection
%% mask is the first 5 bytes of AES-ECB of the 16-byte sample, or of
%% ChaCha20 over 5 zero bytes with the sample as its counter (4 bytes,
%% little-endian) and nonce (12 bytes), which is how crypto takes
%% ChaCha20's 16-byte IV.
%%
%% @private internal to falco
-module(falco_quic_aead).

-export([seal/4, open/4, mask/2, retry_tag/1, retry_valid/2]).

-define(TAG, 16).

%% RFC 9001 §5.8: the fixed key and nonce of Retry's AES-128-GCM.
-define(RETRY_KEY, <<16#be0c690b9f66575a1d766b54e368c84e:128>>).
-define(RETRY_NONCE, <<16#461599d35d632bf2239825bb:96>>).

%% @doc Seals Plain as packet PN with the unprotected header AAD:
%% `{Ciphertext, Tag}', whose concatenation is the packet's payload.
-spec seal(falco_quic_keys:keys(), 0..16#3fffffffffffffff, iodata(), iodata()) ->
          {binary(), <<_:128>>}.
seal(#{aead := Aead, key := Key, iv := IV}, PN, AAD, Plain) ->
    {_, <<_:128>>} = Sealed =
        crypto:crypto_one_time_aead(Aead, Key, nonce(IV, PN), Plain, AAD, ?TAG, true),
    Sealed.

%% @doc Opens Sealed (ciphertext then tag) of packet PN with the
%% unprotected header AAD.
-spec open(falco_quic_keys:keys(), 0..16#3fffffffffffffff, iodata(), binary()) ->
          {ok, binary()} | {error, bad_tag}.
open(#{aead := Aead, key := Key, iv := IV}, PN, AAD, Sealed) when byte_size(Sealed) >= ?TAG ->
    Size = byte_size(Sealed) - ?TAG,
    <<Cipher:Size/binary, Tag:?TAG/binary>> = Sealed,
    case crypto:crypto_one_time_aead(Aead, Key, nonce(IV, PN), Cipher, AAD, Tag, false) of
        Plain when is_binary(Plain) -> {ok, Plain};
        error -> {error, bad_tag}
    end;
open(_, _, _, _) ->
    {error, bad_tag}.

%% @doc The 5-byte header protection mask of a 16-byte sample (§5.4).
-spec mask(falco_quic_keys:keys(), <<_:128>>) -> <<_:40>>.
mask(#{hp := {aes_ecb, State}}, Sample) ->
    <<Mask:5/binary, _/binary>> = crypto:crypto_update(State, Sample),
    Mask;
mask(#{hp := {chacha20, Key}}, Sample) ->
    crypto:crypto_one_time(chacha20, Key, Sample, <<0:40>>, true).

%% @doc The Retry Integrity Tag (§5.8) of a Retry Pseudo-Packet: the
%% original Destination Connection ID, length first, then the Retry
%% packet without its tag.
-spec retry_tag(iodata()) -> <<_:128>>.
retry_tag(Pseudo) ->
    {<<>>, Tag} = crypto:crypto_one_time_aead(aes_128_gcm, ?RETRY_KEY, ?RETRY_NONCE, <<>>,
                                              Pseudo, ?TAG, true),
    Tag.

%% @doc Whether Tag is the Retry Integrity Tag of Pseudo (checked by
%% crypto's AEAD open, not by comparing bytes).
-spec retry_valid(iodata(), binary()) -> boolean().
retry_valid(Pseudo, Tag) when byte_size(Tag) =:= ?TAG ->
    crypto:crypto_one_time_aead(aes_128_gcm, ?RETRY_KEY, ?RETRY_NONCE, <<>>, Pseudo, Tag,
                                false) =:= <<>>;
retry_valid(_, _) ->
    false.

nonce(<<IV:96>>, PN) -> <<(IV bxor PN):96>>.
