%% @doc The TLS 1.3 key schedule (RFC 8446 §7.1, without a PSK) and the
%% transcript hash (§4.4.1), for the SHA-256 and SHA-384 cipher suites:
%% the early, handshake and master secrets, both directions' handshake and
%% application traffic secrets, the Finished keys and verify_data (§4.4.4),
%% and a record layer's key and IV from a traffic secret (§7.3). The
%% cipher-suite atoms are the ones QUIC's packet protection takes too.
%%
%% The transcript is kept as the list of handshake messages (each with its
%% 4-byte header) and hashed when a secret needs it: a handshake has a few
%% kilobytes of them and needs three hashes, and the list keeps the
%% machine's state a plain term. After a HelloRetryRequest the first
%% ClientHello is replaced by its message_hash (§4.4.1). Pure; every
%% function goes through {@link falco_tls13_hkdf}.
%%
%% @private internal to falco
-module(falco_tls13_keys).

-export([suites/0, suite_code/1, suite_from_code/1, suite_hash/1, suite_aead/1,
         early_secret/1, handshake_secret/3, master_secret/2,
         handshake_traffic/3, application_traffic/3,
         finished_key/2, verify_data/3, traffic_keys/2,
         transcript_hash/2, message_hash/2]).
-export_type([suite/0, aead/0]).

-type suite() :: aes_128_gcm_sha256 | aes_256_gcm_sha384 | chacha20_poly1305_sha256.
-type aead() :: aes_128_gcm | aes_256_gcm | chacha20_poly1305.
-type hash() :: falco_tls13_hkdf:hash().

-define(H, falco_tls13_hkdf).

%% @doc The cipher suites falco implements, in its default preference.
-spec suites() -> [suite()].
suites() ->
    [aes_128_gcm_sha256, aes_256_gcm_sha384, chacha20_poly1305_sha256].

%% @doc The suite's two-byte code (RFC 8446 §B.4).
-spec suite_code(suite()) -> 16#1301..16#1303.
suite_code(aes_128_gcm_sha256) -> 16#1301;
suite_code(aes_256_gcm_sha384) -> 16#1302;
suite_code(chacha20_poly1305_sha256) -> 16#1303.

%% @doc The suite of a code, `unknown' for one falco does not implement
%% (TLS_AES_128_CCM_SHA256 among them).
-spec suite_from_code(0..65535) -> suite() | unknown.
suite_from_code(16#1301) -> aes_128_gcm_sha256;
suite_from_code(16#1302) -> aes_256_gcm_sha384;
suite_from_code(16#1303) -> chacha20_poly1305_sha256;
suite_from_code(_) -> unknown.

%% @doc The suite's hash, the one of HKDF and of the transcript.
-spec suite_hash(suite()) -> hash().
suite_hash(aes_256_gcm_sha384) -> sha384;
suite_hash(_) -> sha256.

%% @doc The suite's AEAD, as crypto names it.
-spec suite_aead(suite()) -> aead().
suite_aead(aes_128_gcm_sha256) -> aes_128_gcm;
suite_aead(aes_256_gcm_sha384) -> aes_256_gcm;
suite_aead(chacha20_poly1305_sha256) -> chacha20_poly1305.

%% @doc The early secret of a handshake without a PSK: HKDF-Extract of
%% HashLen zeros under an empty salt.
-spec early_secret(hash()) -> binary().
early_secret(Hash) ->
    ?H:extract(Hash, <<>>, zeros(Hash)).

%% @doc The handshake secret from the early secret and the (EC)DHE
%% shared secret.
-spec handshake_secret(hash(), binary(), binary()) -> binary().
handshake_secret(Hash, Early, Shared) ->
    ?H:extract(Hash, derived(Hash, Early), Shared).

%% @doc The master secret from the handshake secret.
-spec master_secret(hash(), binary()) -> binary().
master_secret(Hash, HandshakeSecret) ->
    ?H:extract(Hash, derived(Hash, HandshakeSecret), zeros(Hash)).

%% @doc `{ClientSecret, ServerSecret}' of the handshake traffic, from the
%% hash of ClientHello..ServerHello.
-spec handshake_traffic(hash(), binary(), binary()) -> {binary(), binary()}.
handshake_traffic(Hash, HandshakeSecret, TranscriptHash) ->
    {?H:derive_secret(Hash, HandshakeSecret, <<"c hs traffic">>, TranscriptHash),
     ?H:derive_secret(Hash, HandshakeSecret, <<"s hs traffic">>, TranscriptHash)}.

%% @doc `{ClientSecret, ServerSecret}' of the first application traffic,
%% from the hash of ClientHello..server Finished.
-spec application_traffic(hash(), binary(), binary()) -> {binary(), binary()}.
application_traffic(Hash, MasterSecret, TranscriptHash) ->
    {?H:derive_secret(Hash, MasterSecret, <<"c ap traffic">>, TranscriptHash),
     ?H:derive_secret(Hash, MasterSecret, <<"s ap traffic">>, TranscriptHash)}.

%% @doc The finished_key of a handshake traffic secret (§4.4.4).
-spec finished_key(hash(), binary()) -> binary().
finished_key(Hash, TrafficSecret) ->
    ?H:expand_label(Hash, TrafficSecret, <<"finished">>, <<>>, ?H:hash_size(Hash)).

%% @doc A Finished message's verify_data: the HMAC, under the sender's
%% finished_key, of the transcript hash up to the message before it.
-spec verify_data(hash(), binary(), binary()) -> binary().
verify_data(Hash, TrafficSecret, TranscriptHash) ->
    crypto:mac(hmac, Hash, finished_key(Hash, TrafficSecret), TranscriptHash).

%% @doc A TLS record layer's `{Key, IV}' from a traffic secret (§7.3);
%% QUIC derives its own with the "quic key" labels (RFC 9001 §5.1).
-spec traffic_keys(suite(), binary()) -> {binary(), <<_:96>>}.
traffic_keys(Suite, Secret) ->
    Hash = suite_hash(Suite),
    KeyLen = case Suite of
                 aes_128_gcm_sha256 -> 16;
                 _ -> 32
             end,
    {?H:expand_label(Hash, Secret, <<"key">>, <<>>, KeyLen),
     ?H:expand_label(Hash, Secret, <<"iv">>, <<>>, 12)}.

%% @doc The hash of the transcript: handshake messages, headers
%% included, oldest first.
-spec transcript_hash(hash(), iodata()) -> binary().
transcript_hash(Hash, Messages) ->
    crypto:hash(Hash, Messages).

%% @doc The synthetic message_hash message that stands for the first
%% ClientHello in the transcript once a HelloRetryRequest was sent
%% (§4.4.1).
-spec message_hash(hash(), iodata()) -> binary().
message_hash(Hash, ClientHello1) ->
    Digest = crypto:hash(Hash, ClientHello1),
    <<254, 0, 0, (byte_size(Digest)), Digest/binary>>.

derived(Hash, Secret) ->
    ?H:derive_secret(Hash, Secret, <<"derived">>, crypto:hash(Hash, <<>>)).

zeros(Hash) ->
    <<0:(?H:hash_size(Hash) * 8)>>.
