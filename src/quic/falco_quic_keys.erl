%% @doc QUIC packet protection keys (RFC 9001 §5.1, §5.2, §6.1, §6.6):
%% from a TLS traffic secret and its cipher suite, the AEAD key, the IV
%% and the header protection key ("quic key", "quic iv", "quic hp"); the
%% Initial secrets of both directions from the client's original
%% Destination Connection ID and the version 1 salt; the next key
%% generation for a key update ("quic ku", the header protection key
%% unchanged); the AEAD usage limits.
%%
%% A {@type keys()} holds what {@link falco_quic_aead} needs per packet,
%% computed once: for AES, an AES-ECB `crypto_init' state for header
%% protection (0.47-0.61 µs a mask against 1.4-1.9 µs for
%% `crypto_one_time', measured on OTP 25 in the HTTP/3 study). That state
%% is a NIF resource: it works in any process of the node, but is not data
%% (term_to_binary/1 does not carry it), and two processes must not use one
%% at the same time. Pure otherwise; HKDF is {@link falco_tls13_hkdf}'s.
%%
%% @private internal to falco
-module(falco_quic_keys).

-export([from_secret/2, initial/1, update/1, limits/1]).
-export([suite/1, secret/1, key/1, iv/1, hp_key/1, hash/1, aead/1]).
-export_type([suite/0, keys/0, aead/0]).

%% RFC 9001 §5.2: the version 1 salt of the Initial secrets.
-define(INITIAL_SALT_V1, <<16#38762cf7f55934b34d179ae6a4c80cadccbb7f0a:160>>).

-type suite() :: aes_128_gcm_sha256 | aes_256_gcm_sha384 | chacha20_poly1305_sha256.
-type aead() :: aes_128_gcm | aes_256_gcm | chacha20_poly1305.
%% hp: the ready AES-ECB state, or ChaCha20's key (its IV is the sample,
%% new for every packet, so nothing can be initialised ahead).
-type hp() :: {aes_ecb, crypto:crypto_state()} | {chacha20, binary()}.
-type keys() :: #{suite := suite(), aead := aead(), secret := binary(), key := binary(),
                  iv := binary(), hp_key := binary(), hp := hp()}.

%% @doc The packet protection keys of a TLS traffic secret (§5.1).
-spec from_secret(suite(), binary()) -> keys().
from_secret(Suite, Secret) ->
    HpKey = label(Suite, Secret, <<"quic hp">>, key_size(Suite)),
    with_secret(#{suite => Suite, aead => aead(Suite), hp_key => HpKey, hp => hp(Suite, HpKey)},
                Secret).

%% @doc The Initial keys (§5.2) from the Destination Connection ID of the
%% client's first Initial: `{ClientKeys, ServerKeys}'. A server opens
%% with the first and seals with the second.
-spec initial(binary()) -> {keys(), keys()}.
initial(DCID) when is_binary(DCID) ->
    Initial = falco_tls13_hkdf:extract(sha256, ?INITIAL_SALT_V1, DCID),
    Client = falco_tls13_hkdf:expand_label(sha256, Initial, <<"client in">>, <<>>, 32),
    Server = falco_tls13_hkdf:expand_label(sha256, Initial, <<"server in">>, <<>>, 32),
    {from_secret(aes_128_gcm_sha256, Client), from_secret(aes_128_gcm_sha256, Server)}.

%% @doc The next generation of 1-RTT keys (§6.1): a new secret by "quic
%% ku", a new key and IV from it; the header protection key stays.
-spec update(keys()) -> keys().
update(#{suite := Suite, secret := Secret} = Keys) ->
    with_secret(Keys, label(Suite, Secret, <<"quic ku">>, hash_size(Suite))).

%% @doc The AEAD limits of §6.6 for a suite: how many packets one key may
%% seal (confidentiality) and how many failed opens an endpoint may see
%% before it must update or close (integrity); `infinity' where the RFC
%% sets none below 2^62 packets.
-spec limits(suite()) -> {Seal :: pos_integer() | infinity, Forged :: pos_integer()}.
limits(chacha20_poly1305_sha256) -> {infinity, 1 bsl 36};
limits(_Aes) -> {1 bsl 23, 1 bsl 52}.

%% @doc The keys' cipher suite.
-spec suite(keys()) -> suite().
suite(#{suite := S}) -> S.

%% @doc The traffic secret the keys come from.
-spec secret(keys()) -> binary().
secret(#{secret := S}) -> S.

%% @doc The AEAD key.
-spec key(keys()) -> binary().
key(#{key := K}) -> K.

%% @doc The 12-byte IV.
-spec iv(keys()) -> <<_:96>>.
iv(#{iv := IV}) -> IV.

%% @doc The header protection key.
-spec hp_key(keys()) -> binary().
hp_key(#{hp_key := K}) -> K.

%% @doc The hash of a suite (HKDF's).
-spec hash(suite()) -> falco_tls13_hkdf:hash().
hash(aes_256_gcm_sha384) -> sha384;
hash(_) -> sha256.

%% @doc The AEAD of a suite, as crypto names it.
-spec aead(suite()) -> aead().
aead(aes_128_gcm_sha256) -> aes_128_gcm;
aead(aes_256_gcm_sha384) -> aes_256_gcm;
aead(chacha20_poly1305_sha256) -> chacha20_poly1305.

%% -- internals ----------------------------------------------------------------

with_secret(#{suite := Suite} = Keys, Secret) ->
    Keys#{secret => Secret,
          key => label(Suite, Secret, <<"quic key">>, key_size(Suite)),
          iv => label(Suite, Secret, <<"quic iv">>, 12)}.

label(Suite, Secret, Label, Size) ->
    falco_tls13_hkdf:expand_label(hash(Suite), Secret, Label, <<>>, Size).

hp(chacha20_poly1305_sha256, Key) ->
    {chacha20, Key};
hp(Suite, Key) ->
    Cipher = case Suite of
                 aes_128_gcm_sha256 -> aes_128_ecb;
                 aes_256_gcm_sha384 -> aes_256_ecb
             end,
    {aes_ecb, crypto:crypto_init(Cipher, Key, [{encrypt, true}, {padding, none}])}.

key_size(aes_128_gcm_sha256) -> 16;
key_size(_) -> 32.

hash_size(Suite) -> falco_tls13_hkdf:hash_size(hash(Suite)).
