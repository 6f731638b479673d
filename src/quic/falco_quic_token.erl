%% @doc A QUIC listener's address validation tokens and stateless reset
%% tokens (RFC 9000 §8.1.1-§8.1.4, §10.3, §19.7), pure.
%%
%% A listener has one {@type secrets()} (made by {@link new/0} when it
%% starts, shared by its socket holders and given to its connections): 32
%% random bytes from which everything else is derived by HMAC-SHA256, so
%% holders agree without sharing state that changes:
%% <ul>
%% <li>the token key of each hour (epoch `SystemSeconds div 3600'): AES-128-GCM
%% under HMAC(secret, "token key" ++ Epoch). A token names the parity of
%% its epoch, and is opened with that epoch's key or the previous one's:
%% the key rotates every hour and the previous key still validates;</li>
%% <li>the stateless reset token of a connection ID: the first 16 bytes of
%% HMAC(secret, "reset" ++ Cid), the same whichever holder computes it
%% (§10.3.2: an attacker that does not know the secret cannot forge one).</li>
%% </ul>
%%
%% A token is `<<Kind:7, Parity:1, Nonce:12/binary, Sealed/binary>>':
%% Kind 1 for a Retry token (sealed: the time it was made, ms, and the
%% client's original Destination Connection ID; the associated data binds
%% the client's address and port), Kind 2 for a NEW_TOKEN token (the time
%% only; bound to the client's address without its port, which changes
%% between connections). Retry tokens live 10 s, NEW_TOKEN tokens an hour
%% (§8.1.3: they are for a later connection). {@link check/4} tells the
%% kinds apart, checks the tag, the address and the age, and never raises.
%%
%% @private internal to falco
-module(falco_quic_token).

-export([new/0, retry/4, new_token/3, check/4, reset_token/2]).
-export_type([secrets/0, checked/0]).

-define(RETRY, 1).
-define(NEW_TOKEN, 2).
-define(EPOCH_S, 3600).
-define(RETRY_LIFE_MS, 10000).
-define(NEW_TOKEN_LIFE_MS, 3600000).
-define(TAG, 16).

-opaque secrets() :: {falco_quic_token, binary()}.
-type peer() :: {inet:ip_address(), inet:port_number()}.
-type checked() :: {retry, Odcid :: binary()} | new_token
                 | {invalid, retry | new_token | unknown}.

%% @doc A listener's secrets: 32 random bytes.
-spec new() -> secrets().
new() ->
    {falco_quic_token, crypto:strong_rand_bytes(32)}.

%% @doc The token of a Retry to `Peer' for its original DCID, made at
%% `NowMs' (system time, ms).
-spec retry(secrets(), peer(), binary(), integer()) -> binary().
retry(Secrets, Peer, Odcid, NowMs) when byte_size(Odcid) =< 20 ->
    seal(Secrets, ?RETRY, aad(?RETRY, Peer), <<NowMs:64, (byte_size(Odcid)), Odcid/binary>>,
         NowMs).

%% @doc A NEW_TOKEN token for the client address `Ip', made at `NowMs'.
-spec new_token(secrets(), inet:ip_address(), integer()) -> binary().
new_token(Secrets, Ip, NowMs) ->
    seal(Secrets, ?NEW_TOKEN, aad(?NEW_TOKEN, {Ip, 0}), <<NowMs:64>>, NowMs).

%% @doc What the token of an Initial from `Peer' is worth at `NowMs': a
%% valid Retry token and the original DCID it carries, a valid NEW_TOKEN
%% token, or invalid (forged, for another address, expired, of a key
%% rotated out) with the kind it claims.
-spec check(secrets(), binary(), peer(), integer()) -> checked().
check(Secrets, <<Kind:7, Parity:1, Nonce:12/binary, Sealed/binary>>, Peer, NowMs)
  when (Kind =:= ?RETRY orelse Kind =:= ?NEW_TOKEN), byte_size(Sealed) > ?TAG ->
    Epoch = epoch(NowMs),
    %% the epoch of the token's parity: this one or the one before
    TokenEpoch = case Epoch band 1 of
                     Parity -> Epoch;
                     _ -> Epoch - 1
                 end,
    Size = byte_size(Sealed) - ?TAG,
    <<Cipher:Size/binary, Tag:?TAG/binary>> = Sealed,
    AAD = [<<Kind:7, Parity:1>> | aad(Kind, Peer)],
    case crypto:crypto_one_time_aead(aes_128_gcm, key(Secrets, TokenEpoch), Nonce, Cipher, AAD,
                                     Tag, false) of
        Plain when is_binary(Plain) -> valid(Kind, Plain, NowMs);
        error -> {invalid, kind(Kind)}
    end;
check(_, _, _, _) ->
    {invalid, unknown}.

%% @doc The stateless reset token of one of our connection IDs (§10.3.2).
-spec reset_token(secrets(), binary()) -> <<_:128>>.
reset_token({falco_quic_token, Secret}, Cid) ->
    <<Token:16/binary, _/binary>> = crypto:mac(hmac, sha256, Secret, [<<"reset">>, Cid]),
    Token.

%% -- internals ----------------------------------------------------------------

seal(Secrets, Kind, AAD, Plain, NowMs) ->
    Epoch = epoch(NowMs),
    Head = <<Kind:7, (Epoch band 1):1>>,
    Nonce = crypto:strong_rand_bytes(12),
    {Cipher, Tag} = crypto:crypto_one_time_aead(aes_128_gcm, key(Secrets, Epoch), Nonce, Plain,
                                                [Head | AAD], ?TAG, true),
    <<Head/binary, Nonce/binary, Cipher/binary, Tag/binary>>.

valid(?RETRY, <<At:64, Len, Odcid:Len/binary>>, NowMs) when NowMs - At =< ?RETRY_LIFE_MS,
                                                           NowMs >= At - 1000 ->
    {retry, Odcid};
valid(?NEW_TOKEN, <<At:64>>, NowMs) when NowMs - At =< ?NEW_TOKEN_LIFE_MS,
                                         NowMs >= At - 1000 ->
    new_token;
valid(Kind, _, _) ->
    {invalid, kind(Kind)}.

kind(?RETRY) -> retry;
kind(?NEW_TOKEN) -> new_token.

%% A Retry token is bound to the address and port, a NEW_TOKEN token to
%% the address.
aad(?RETRY, {Ip, Port}) -> [ip(Ip), <<Port:16>>];
aad(?NEW_TOKEN, {Ip, _}) -> [ip(Ip)].

ip({A, B, C, D}) -> <<4, A, B, C, D>>;
ip(Ip6) when tuple_size(Ip6) =:= 8 -> [6 | [<<W:16>> || W <- tuple_to_list(Ip6)]].

epoch(NowMs) -> NowMs div (1000 * ?EPOCH_S).

key({falco_quic_token, Secret}, Epoch) ->
    <<Key:16/binary, _/binary>> = crypto:mac(hmac, sha256, Secret, [<<"token key">>, <<Epoch:64>>]),
    Key.
