%% @doc What a QUIC listener's socket holder answers without a connection
%% process (RFC 9000 §8.1.2-§8.1.4, §10.3, §17.2.5), pure: whether an
%% admissible Initial is let in, sent a Retry, or closed with
%% INVALID_TOKEN; and the stateless reset of a short header packet to a
%% connection ID no route knows.
%%
%% The listener's `h3_retry' mode: `always', `never', or `{threshold, N}':
%% a Retry while N or more handshakes are in progress on the holder. An
%% Initial is looked at by {@link initial/6}:
%% <ul>
%% <li>no token, or a token that is not a valid one of ours but does not
%%     claim to be a Retry token (garbage, another server's, an expired or
%%     foreign NEW_TOKEN token: §8.1.3 says to go on as if there was none):
%%     a Retry when the mode asks for it, else admitted unvalidated;</li>
%% <li>a valid Retry token: admitted with the original DCID it carries,
%%     the Retry's SCID (the Initial's DCID) and the address validated
%%     (§8.1.2; the transport parameters of §7.3 follow from them);</li>
%% <li>a valid NEW_TOKEN token: admitted, the address validated, no Retry
%%     whatever the mode;</li>
%% <li>a Retry token that does not check out (forged, another address or
%%     port, expired): an Initial with CONNECTION_CLOSE INVALID_TOKEN
%%     (§8.1.3: the client would take no second Retry), smaller than the
%%     datagram that asked.</li>
%% </ul>
%% A Retry is smaller than the 1200-byte Initial that asked for it, so
%% neither answer amplifies.
%%
%% {@link stateless_reset/3} (§10.3): the 16-byte token of the connection
%% ID (falco_quic_token:reset_token/2) after random bytes that look like a
%% short header, one byte shorter than the datagram that asked, at most 43
%% bytes; none for a datagram under 22 bytes (a reset has at least 21, and
%% is always shorter than what it answers, so two endpoints cannot
%% ping-pong resets) or one that ends with that very token (our own reset
%% coming back). The holder rate-limits them.
%%
%% @private internal to falco
-module(falco_quic_retry).

-export([initial/6, stateless_reset/3]).
-export_type([mode/0]).

-type mode() :: always | never | {threshold, non_neg_integer()}.
-type peer() :: {inet:ip_address(), inet:port_number()}.

-define(V1, 1).
-define(CID_LEN, 8).
-define(MIN_RESET, 21).
-define(MAX_RESET, 43).

%% (the mode is `h3_retry', validated by falco_opts)

%% @doc The answer to an admissible Initial (falco_quic_admit's `{new,
%% Info}') from `Peer', with `InProgress' handshakes on the holder, at
%% `NowMs' (system time): `{admit, Extra}' (Extra for the connection's
%% Info: `odcid', `retry_scid' and `validated' after a Retry; `validated'
%% for a NEW_TOKEN token), `{retry, Datagram}' or `{invalid_token,
%% Datagram}'.
-spec initial(mode(), non_neg_integer(), falco_quic_token:secrets(), peer(),
              #{dcid := binary(), scid := binary(), token := binary(), atom() => term()},
              integer()) ->
          {admit, map()} | {retry, binary()} | {invalid_token, binary()}.
initial(Mode, InProgress, Secrets, Peer, Info = #{token := Token, dcid := Dcid}, NowMs) ->
    case Token of
        <<>> -> untokened(Mode, InProgress, Secrets, Peer, Info, NowMs);
        _ ->
            case falco_quic_token:check(Secrets, Token, Peer, NowMs) of
                {retry, Odcid} ->
                    {admit, #{odcid => Odcid, retry_scid => Dcid, validated => true}};
                new_token ->
                    {admit, #{validated => true}};
                {invalid, retry} ->
                    {invalid_token, invalid_token(Info)};
                {invalid, _} ->
                    untokened(Mode, InProgress, Secrets, Peer, Info, NowMs)
            end
    end.

untokened(Mode, InProgress, Secrets, Peer, #{dcid := Dcid, scid := Scid}, NowMs) ->
    case retry_wanted(Mode, InProgress) of
        true ->
            Token = falco_quic_token:retry(Secrets, Peer, Dcid, NowMs),
            {retry, falco_quic_packet:retry(?V1, Scid, crypto:strong_rand_bytes(?CID_LEN), Token,
                                            Dcid)};
        false ->
            {admit, #{}}
    end.

retry_wanted(always, _) -> true;
retry_wanted(never, _) -> false;
retry_wanted({threshold, N}, InProgress) -> InProgress >= N.

%% An Initial of ours with CONNECTION_CLOSE INVALID_TOKEN, under the
%% Initial keys of the client's DCID (not ack-eliciting: no padding,
%% §14.1).
invalid_token(#{dcid := Dcid, scid := Scid}) ->
    {_, Server} = falco_quic_keys:initial(Dcid),
    Frame = falco_quic_frame:connection_close(invalid_token, 0, <<>>),
    iolist_to_binary(falco_quic_packet:protect(#{type => initial, dcid => Scid, scid => Dcid,
                                                 token => <<>>},
                                               0, none, Frame, Server)).

%% @doc The stateless reset for a short header datagram to the unknown
%% connection ID `Cid', or `{drop, Why}'.
-spec stateless_reset(binary(), binary(), falco_quic_token:secrets()) ->
          {reset, binary()} | {drop, too_small | reset_loop}.
stateless_reset(Datagram, _Cid, _Secrets) when byte_size(Datagram) =< ?MIN_RESET ->
    {drop, too_small};
stateless_reset(Datagram, Cid, Secrets) ->
    Token = falco_quic_token:reset_token(Secrets, Cid),
    case binary:part(Datagram, byte_size(Datagram), -16) of
        Token ->
            {drop, reset_loop};
        _ ->
            Size = erlang:min(byte_size(Datagram) - 1, ?MAX_RESET),
            <<Bits:6, _:2, Random/binary>> = crypto:strong_rand_bytes(Size - 16),
            {reset, <<0:1, 1:1, Bits:6, Random/binary, Token/binary>>}
    end.
