%% @doc One QUIC v1 connection, server side (RFC 9000, RFC 9001, RFC
%% 9002): the pure machine that ties falco's QUIC modules together. It
%% knows no socket, timer or process: events go in, `{State, Actions}'
%% comes out, and the connection process ({@link falco_http3_conn})
%% carries the actions out.
%%
%% Events: {@link new/2} (the client's first Initial was admitted),
%% {@link datagram/4} (a datagram routed to the connection),
%% {@link timeout/2} (the deadline of the last `{timer, At}' passed), and
%% the application's {@link send/4}, {@link open_uni/1}, {@link reset/3},
%% {@link stop/3}, {@link consumed/4} and {@link close/4}; after a batch of
%% them, {@link flush/2} assembles what is due into datagrams
%% ({@link falco_quic_send}). Actions:
%% <ul>
%% <li>`{send, Peer, iodata()}': one datagram;</li>
%% <li>`{timer, At}': the one deadline (µs of
%% `erlang:monotonic_time(microsecond)', or `infinity'), replacing the
%% previous one: loss detection and PTO, the ACK delay, the idle timeout,
%% the handshake deadline, the closing period;</li>
%% <li>`{route, Cid}': datagrams to this connection ID are ours;</li>
%% <li>`established': the handshake completed (the client's Finished was
%% verified);</li>
%% <li>`{stream_open, Id, bidi | uni}', `{stream_data, Id, Bin, Fin}',
%% `{stream_reset, Id, Code}', `{stop_sending, Id, Code}': the client's
%% streams, in the shape falco_http3_machine:event/2 takes;</li>
%% <li>`{closed, Reason}': the connection is over (after the closing or
%% draining period, an idle timeout, or a handshake that did not finish
%% in time); nothing more will come.</li>
%% </ul>
%%
%% Receiving (RFC 9000 §12.2, §13.1, RFC 9001 §5): a datagram's coalesced
%% packets are unprotected with the keys of their level, those without
%% keys dropped (the 1-RTT packets that come before the handshake is
%% complete are held, at most ?EARLY of them, and read once it is, RFC
%% 9001 §5.7), duplicates dropped after authentication, and the frames
%% parsed ({@link falco_quic_frame:parse/2}, which checks what one frame
%% and its packet type allow) and dispatched: ACK to loss detection, CRYPTO
%% to the TLS handshake ({@link falco_quic_handshake}), stream frames to
%% {@link falco_quic_streams}. A frame the connection cannot accept closes
%% it with the error's code and the frame's type; a packet that fails
%% authentication is dropped and never closes anything.
%%
%% The server's address rules (RFC 9000 §8.1): until a Handshake packet
%% from the client is read, at most three times the bytes received are
%% sent. The first Handshake packet also discards the Initial keys (RFC
%% 9001 §4.9.1); the handshake's completion confirms it on the server and
%% discards the Handshake keys (§4.9.2) and sends HANDSHAKE_DONE. A 1-RTT
%% packet from a new address (NAT rebinding) moves the path there and
%% validates it with PATH_CHALLENGE (§9.3); the client may not migrate on
%% purpose (we send disable_active_migration).
%%
%% Closing (§10.2): our CONNECTION_CLOSE is sent once and again for
%% packets that keep coming (on the 1st, 2nd, 4th, 8th...), for three PTOs;
%% the client's puts the connection in the draining state, sending
%% nothing, for three PTOs. The idle timeout is the smaller of both
%% sides' (§10.1), restarted by every packet read and by our first
%% ack-eliciting packet after one.
%%
%% @private internal to falco
-module(falco_quic_machine).

-include("falco_quic_machine.hrl").

-export([new/2, datagram/4, timeout/2, flush/2]).
-export([send/4, open_uni/1, reset/3, stop/3, consumed/4, close/4, unsent/2]).
-export([info/1, phase/1, pto/1, idle_restart/2, quiescent/1]).

-export_type([state/0, action/0]).

-define(CID_LEN, 8).
%% 1-RTT packets held before the handshake completes
-define(EARLY, 16).
%% connection IDs of the client's we keep (active_connection_id_limit)
-define(PEER_CIDS, 4).

-opaque state() :: #q{}.
-type peer() :: {inet:ip_address(), inet:port_number()}.
-type action() :: {send, peer(), iodata()}
                | {timer, time() | infinity}
                | {route, binary()}
                | established
                | {stream_open, non_neg_integer(), bidi | uni}
                | {stream_data, non_neg_integer(), binary(), fin | nofin}
                | {stream_reset, non_neg_integer(), non_neg_integer()}
                | {stop_sending, non_neg_integer(), non_neg_integer()}
                | {closed, term()}.

%% -- starting -----------------------------------------------------------------

%% @doc A connection for the client's first Initial. `Info': `peer', and
%% `dcid' and `scid' of that Initial; after a Retry (falco_quic_retry),
%% `odcid' (the client's first DCID, from the token), `retry_scid' (the
%% Retry's SCID, the DCID of this Initial) and `validated' (RFC 9000
%% §8.1.2, §7.3); `validated' alone for a NEW_TOKEN token; `token_secrets'
%% (the listener's, falco_quic_token: our stateless_reset_token, §10.3) and
%% `new_token' (a NEW_TOKEN token for the client's address, sent once the
%% handshake is complete, §8.1.3). `Opts': `tls'
%% (falco_tls13_server's options, without transport_params), `scid' (our
%% connection ID, 8 bytes), `now' (µs), and the `quic' limits:
%% `idle_timeout' and `handshake_timeout' (ms), `initial_max_data',
%% `initial_max_stream_data', `max_streams_bidi', `max_streams_uni',
%% `max_datagram' (the largest datagram we send once the path is
%% validated, default 1350), `key_update_packets' and
%% `aead_integrity_limit' (RFC 9001 §6.6; `auto': the AEAD's).
-spec new(#{peer := peer(), dcid := binary(), scid := binary(), atom() => term()}, map()) ->
          {state(), [action()]}.
new(Info = #{peer := Peer, dcid := Dcid, scid := ClientCid},
    Opts = #{tls := Tls, scid := Scid, now := Now}) ->
    Q = maps:merge(default_quic(), maps:get(quic, Opts, #{})),
    Odcid = maps:get(odcid, Info, Dcid),
    Ours0 = #{original_destination_connection_id => Odcid,
              initial_source_connection_id => Scid,
              max_idle_timeout => maps:get(idle_timeout, Q),
              initial_max_data => maps:get(initial_max_data, Q),
              initial_max_stream_data_bidi_local => 0,
              initial_max_stream_data_bidi_remote => maps:get(initial_max_stream_data, Q),
              initial_max_stream_data_uni => maps:get(initial_max_stream_data, Q),
              initial_max_streams_bidi => maps:get(max_streams_bidi, Q),
              initial_max_streams_uni => maps:get(max_streams_uni, Q),
              active_connection_id_limit => ?PEER_CIDS,
              disable_active_migration => true},
    Ours1 = case Info of
                #{retry_scid := RetryScid} -> Ours0#{retry_source_connection_id => RetryScid};
                #{} -> Ours0
            end,
    Ours = case Info of
               #{token_secrets := Secrets} ->
                   Ours1#{stateless_reset_token => falco_quic_token:reset_token(Secrets, Scid)};
               #{} -> Ours1
           end,
    TP = iolist_to_binary(falco_quic_tparams:server(Ours)),
    %% the Initial keys are those of this Initial's DCID (after a Retry,
    %% the Retry's SCID: RFC 9001 §5.2)
    Hs = falco_quic_handshake:new(Tls#{transport_params => TP}, Dcid),
    State = #q{odcid = Odcid, scid = Scid, opts = Q, ours = Ours, peer = Peer,
               dcid = ClientCid, hs = Hs,
               acks = maps:from_list([{L, falco_quic_ack:new(L)} || L <- [initial, handshake, application]]),
               loss = falco_quic_loss:new(),
               idle_at = Now + 1000 * maps:get(idle_timeout, Q),
               handshake_at = Now + 1000 * maps:get(handshake_timeout, Q),
               validated = maps:get(validated, Info, false),
               new_token = case Info of
                               #{new_token := Token} -> {pending, Token};
                               #{} -> none
                           end,
               peer_cids = #{0 => ClientCid}},
    {State, [{route, Scid}]}.

default_quic() ->
    #{idle_timeout => 30000, handshake_timeout => 10000, initial_max_data => 1048576,
      initial_max_stream_data => 262144, max_streams_bidi => 100, max_streams_uni => 8,
      max_datagram => 1350, key_update_packets => auto, aead_integrity_limit => auto}.

%% -- datagrams ------------------------------------------------------------------

%% @doc A datagram from `Peer' routed to this connection, then what is due
%% to send.
-spec datagram(time(), peer(), binary(), state()) -> {state(), [action()]}.
datagram(_Now, _Peer, _Bin, Q = #q{phase = Phase}) when Phase =:= closed; Phase =:= draining ->
    {Q, []};
datagram(_Now, Peer, Bin, Q = #q{phase = closing, close_packet = Pkt, close_count = N,
                                  received_bytes = R, sent_bytes = S}) ->
    %% §10.2.1: the close again, ever more rarely, and within the address
    %% limit (§8.1) while the address is not validated
    Q1 = Q#q{close_count = N + 1, received_bytes = R + byte_size(Bin)},
    case (N + 1) band N of
        0 when Pkt =/= undefined ->
            Size = iolist_size(Pkt),
            case Q#q.validated orelse S + Size =< 3 * (R + byte_size(Bin)) of
                true -> {Q1#q{sent_bytes = S + Size}, [{send, Peer, Pkt}]};
                false -> {Q1, []}
            end;
        _ ->
            {Q1, []}
    end;
datagram(Now, Peer, Bin, Q0 = #q{received_bytes = R}) ->
    Q = Q0#q{received_bytes = R + byte_size(Bin)},
    {Packets, _End} = falco_quic_packet:split(Bin, ?CID_LEN),
    {Q1, Acts} = packets(Packets, Now, Peer, Q, []),
    finish(Now, Q1, Acts).

packets([], _Now, _Peer, Q, Acts) ->
    {Q, lists:reverse(Acts)};
packets([P | Ps], Now, Peer, Q, Acts) ->
    case packet(P, Now, Peer, Q) of
        {ok, Q1, New} -> packets(Ps, Now, Peer, Q1, lists:reverse(New, Acts));
        {error, Err, FrameType, Why} ->
            Q1 = close_with(Err, FrameType, Why, Now, Q),
            {Q1, lists:reverse(Acts, close_sent(Q1))}
    end.

%% The CONNECTION_CLOSE just made, to send (actions are kept newest first
%% until packets/5 returns).
close_sent(#q{close_packet = Pkt, close_now = true, peer = Peer}) -> [{send, Peer, Pkt}];
close_sent(_) -> [].

packet(P = #{type := Type}, Now, Peer, Q) ->
    case level(Type) of
        none -> {ok, Q, []};
        application when Q#q.phase =:= handshake -> hold(P, Now, Peer, Q);
        Level -> open(Level, P, Now, Peer, Q)
    end.

level(initial) -> initial;
level(handshake) -> handshake;
level(one_rtt) -> application;
level(_) -> none.

%% RFC 9001 §5.7: 1-RTT packets before the handshake is complete wait.
hold(P, Now, Peer, Q = #q{early = Early}) when length(Early) < ?EARLY ->
    {ok, Q#q{early = [{Now, Peer, P} | Early]}, []};
hold(_, _, _, Q) ->
    {ok, Q, []}.

open(application, P, Now, Peer, Q = #q{app = App, acks = Acks}) when App =/= undefined ->
    Ack = maps:get(application, Acks),
    case falco_quic_packet:unmask(P, maps:get(read, App), largest(Ack)) of
        {ok, Unmasked} ->
            case open_1rtt(Unmasked, Now, App, Q) of
                {ok, Pn, Payload, App1} ->
                    opened(application, P, Pn, Payload, Now, Peer, Ack, Q#q{app = App1});
                drop ->
                    {ok, Q, []};
                forged ->
                    forged(Q);
                {error, {protocol_violation, Why}} ->
                    {error, protocol_violation, 0, Why}
            end;
        {error, _} ->
            {ok, Q, []}
    end;
open(Level, P, Now, Peer, Q = #q{hs = Hs, acks = Acks}) ->
    case falco_quic_handshake:keys(Level, read, Hs) of
        undefined ->
            {ok, Q, []};
        Keys ->
            Ack = maps:get(Level, Acks),
            case falco_quic_packet:unprotect(P, Keys, largest(Ack)) of
                {ok, Pn, Payload} ->
                    opened(Level, P, Pn, Payload, Now, Peer, Ack, Q);
                {error, {drop, _}} ->
                    {ok, Q, []};
                {error, {protocol_violation, Why}} ->
                    {error, protocol_violation, 0, Why}
            end
    end.

%% RFC 9001 §6: a packet of the current key phase opens with the read
%% keys; one of the other phase is either older than the update (the
%% previous keys, while they are kept: a packet for keys already dropped
%% is dropped unopened) or the client's key update (or its answer to
%% ours), tried with the next keys and committed only if the packet
%% opens: then the old read keys are kept for three PTOs, and our write
%% keys move to the next generation too unless they did already (§6.2).
%% A packet that opens with none is dropped and changes nothing but the
%% count of packets that failed (§6.6).
open_1rtt(U = #{key_phase := Phase, pn := Pn}, _Now, App = #{phase := Phase, read := Keys}, _Q) ->
    opened_with(falco_quic_packet:open(U, Keys), Pn, App);
open_1rtt(U = #{pn := Pn}, _Now, App = #{prev := Prev, since := Since}, _Q) when Pn < Since ->
    case Prev of
        undefined -> drop;
        _ -> opened_with(falco_quic_packet:open(U, Prev), Pn, App)
    end;
open_1rtt(U = #{pn := Pn}, Now, App = #{phase := Phase, read := Read, next := Next,
                                          write := Write, write_phase := WPhase}, Q) ->
    case falco_quic_packet:open(U, Next) of
        {ok, Payload} ->
            New = 1 - Phase,
            App1 = App#{phase := New, read := Next, prev := Read,
                        prev_until := Now + 3 * pto(Q),
                        next := falco_quic_keys:update(Next), since := Pn},
            App2 = case WPhase of
                       New -> App1;
                       _ -> new_write(falco_quic_keys:update(Write), New, Q, App1)
                   end,
            {ok, Pn, Payload, App2};
        Other ->
            opened_with(Other, Pn, App)
    end.

opened_with({ok, Payload}, Pn, App) -> {ok, Pn, Payload, App};
opened_with({error, {drop, bad_tag}}, _, _) -> forged;
opened_with({error, _} = Error, _, _) -> Error.

%% The write keys of a new key phase: counted from the next packet.
new_write(Keys, Phase, #q{next_pn = #{application := Pn}}, App = #{updates := N}) ->
    App#{write := Keys, write_phase := Phase, sealed := 0, write_since := Pn,
         updates := N + 1}.

%% RFC 9001 §6.6: past the integrity limit, packets that failed to open
%% with 1-RTT keys close the connection.
forged(Q = #q{app = App = #{forged := N}}) ->
    App1 = App#{forged := N + 1},
    case N + 1 > integrity_limit(Q) of
        true -> {error, aead_limit_reached, 0, integrity_limit};
        false -> {ok, Q#q{app = App1}, []}
    end.

integrity_limit(#q{opts = #{aead_integrity_limit := auto}, app = #{read := Keys}}) ->
    element(2, falco_quic_keys:limits(falco_quic_keys:suite(Keys)));
integrity_limit(#q{opts = #{aead_integrity_limit := N}}) ->
    N.

%% RFC 9001 §6.1, §6.5, §6.6: our own key update, before the write keys
%% seal `key_update_packets' packets (by default half of the suite's
%% confidentiality limit), once the client answered the last update (a
%% packet of the phase read) and acknowledged a packet of the current
%% keys. A connection that reaches the limit itself closes.
key_update(Q = #q{phase = established, app = App = #{sealed := N}}) when N > 0 ->
    {Update, Limit} = update_limits(Q),
    case N >= Update andalso may_update(Q) of
        true ->
            #{write := Write, write_phase := W} = App,
            {ok, Q#q{app = new_write(falco_quic_keys:update(Write), 1 - W, Q, App)}};
        false when N >= Limit ->
            {error, aead_limit_reached, 0, confidentiality_limit};
        false ->
            {ok, Q}
    end;
key_update(Q) ->
    {ok, Q}.

may_update(#q{app = #{phase := Phase, write_phase := Phase, write_since := Since}, loss = L}) ->
    case falco_quic_loss:largest_acked(application, L) of
        Largest when is_integer(Largest) -> Largest >= Since;
        _ -> false
    end;
may_update(_) ->
    false.

update_limits(#q{opts = Opts, app = #{write := Keys}}) ->
    Limit = case maps:get(aead_confidentiality_limit, Opts, auto) of
                auto -> element(1, falco_quic_keys:limits(falco_quic_keys:suite(Keys)));
                L -> L
            end,
    Update = case maps:get(key_update_packets, Opts) of
                 auto when Limit =:= infinity -> infinity;
                 auto -> Limit div 2;
                 U -> U
             end,
    {Update, Limit}.

%% Old read keys are dropped three PTOs after the first packet of the new
%% phase (§6.1).
expire_keys(Now, Q = #q{app = App = #{prev_until := At}}) when Now >= At ->
    Q#q{app = App#{prev := undefined, prev_until := infinity}};
expire_keys(_, Q) ->
    Q.

largest(Ack) ->
    case falco_quic_ack:largest(Ack) of
        undefined -> none;
        Pn -> Pn
    end.

opened(Level, #{type := Type}, Pn, Payload, Now, Peer, Ack0, Q0) ->
    case falco_quic_frame:parse(Payload, #{packet => Type, peer => client}) of
        {ok, Frames} ->
            case falco_quic_ack:received(Pn, falco_quic_frame:ack_eliciting(Frames), Now, Ack0) of
                duplicate ->
                    {ok, Q0, []};
                {ok, Ack} ->
                    Q1 = Q0#q{acks = (Q0#q.acks)#{Level := Ack},
                              idle_at = Now + 1000 * idle_timeout(Q0)},
                    Q2 = path(Level, Pn, Peer, Ack0, validate(Level, Q1)),
                    frames(Frames, Level, Now, Q2, [])
            end;
        {error, Err, FrameType, Why} ->
            {error, Err, FrameType, Why}
    end.

%% A Handshake packet proves the client's address (RFC 9000 §8.1) and
%% ends the Initial space (RFC 9001 §4.9.1).
validate(handshake, Q = #q{validated = false}) ->
    discard(initial, Q#q{validated = true});
validate(_, Q) ->
    Q.

discard(Level, Q = #q{hs = Hs, loss = L, acks = Acks, probes = Probes}) ->
    Q#q{hs = falco_quic_handshake:discard(Level, Hs),
        loss = falco_quic_loss:discard(Level, L),
        acks = maps:remove(Level, Acks), probes = maps:remove(Level, Probes)}.

%% RFC 9000 §9.3: the largest 1-RTT packet so far from a new address moves
%% the path there (a NAT rebinding: the client may not migrate on
%% purpose); the new address is validated with a PATH_CHALLENGE.
path(application, Pn, Peer, Ack0, Q = #q{peer = Old}) when Peer =/= Old ->
    case falco_quic_ack:largest(Ack0) of
        Largest when Largest =:= undefined; Pn > Largest ->
            Q#q{peer = Peer, challenge = {crypto:strong_rand_bytes(8), false}};
        _ ->
            Q
    end;
path(_, _, _, _, Q) ->
    Q.

%% -- frames -------------------------------------------------------------------------

frames([], _Level, _Now, Q, Acts) ->
    {ok, Q, lists:reverse(Acts)};
frames([F | Fs], Level, Now, Q, Acts) ->
    case frame(F, Level, Now, Q) of
        {ok, Q1} -> frames(Fs, Level, Now, Q1, Acts);
        {ok, Q1, New} -> frames(Fs, Level, Now, Q1, lists:reverse(New, Acts));
        {error, _, _, _} = Error -> Error
    end.

frame({padding, _}, _, _, Q) ->
    {ok, Q};
frame(ping, _, _, Q) ->
    {ok, Q};
frame({ack, Delay, Ranges, _Ecn}, Level, Now, Q = #q{loss = L0}) ->
    case falco_quic_loss:ack(Level, Ranges, ack_delay(Level, Delay, Q), Now, L0) of
        {ok, Acked, Lost, L} ->
            {ok, lost(Lost, acked(Acked, Level, Q#q{loss = L}))};
        {error, protocol_violation} ->
            {error, protocol_violation, 16#02, ack_of_unsent_packet}
    end;
frame({crypto, Offset, Data}, Level, Now, Q = #q{hs = Hs0}) ->
    case falco_quic_handshake:crypto(Level, Offset, Data, Hs0) of
        {ok, Hs, Events} -> tls_events(Events, Now, Q#q{hs = Hs}, []);
        {error, Err, Why} -> {error, Err, 16#06, Why}
    end;
frame({stream, Id, Offset, Fin, Data}, _, Now, Q = #q{streams = S0}) ->
    streams(falco_quic_streams:stream_frame(Id, Offset, Fin, Data, Now, S0), 16#08, Q);
frame({reset_stream, Id, Code, Final}, _, _, Q = #q{streams = S0}) ->
    streams(falco_quic_streams:reset_stream(Id, Code, Final, S0), 16#04, Q);
frame({stop_sending, Id, Code}, _, _, Q = #q{streams = S0}) ->
    streams(falco_quic_streams:stop_sending(Id, Code, S0), 16#05, Q);
frame({max_data, N}, _, _, Q = #q{streams = S}) ->
    {ok, Q#q{streams = falco_quic_streams:max_data(N, S)}};
frame({max_stream_data, Id, N}, _, _, Q = #q{streams = S0}) ->
    case falco_quic_streams:max_stream_data(Id, N, S0) of
        {ok, S} -> {ok, Q#q{streams = S}};
        {error, Err, Why} -> {error, Err, 16#11, Why}
    end;
frame({max_streams, Dir, N}, _, _, Q = #q{streams = S0}) ->
    case falco_quic_streams:max_streams(Dir, N, S0) of
        {ok, S} -> {ok, Q#q{streams = S}};
        {error, Err, Why} -> {error, Err, 16#12, Why}
    end;
frame({data_blocked, _}, _, _, Q) ->
    {ok, Q};
frame({stream_data_blocked, _, _}, _, _, Q) ->
    {ok, Q};
frame({streams_blocked, _, _}, _, _, Q) ->
    {ok, Q};
frame({new_connection_id, Seq, RetirePriorTo, Cid, _Token}, _, _, Q = #q{peer_cids = Cids0}) ->
    %% Kept for the next issue's migration; retired ones are forgotten.
    Cids = maps:filter(fun(S, _) -> S >= RetirePriorTo end, Cids0#{Seq => Cid}),
    case map_size(Cids) > ?PEER_CIDS of
        true -> {error, connection_id_limit_error, 16#18, too_many_connection_ids};
        false -> {ok, Q#q{peer_cids = Cids}}
    end;
frame({retire_connection_id, _}, _, _, _Q) ->
    %% we issue no connection ID beyond the first, which the packet that
    %% carries this frame uses (§19.16)
    {error, protocol_violation, 16#19, retire_of_unissued_connection_id};
frame({path_challenge, Data}, _, _, Q = #q{path_responses = Rs}) ->
    {ok, Q#q{path_responses = lists:sublist([Data | Rs], 4)}};
frame({path_response, Data}, _, _, Q = #q{challenge = {Data, _}}) ->
    {ok, Q#q{challenge = undefined}};
frame({path_response, _}, _, _, Q) ->
    {ok, Q};
frame({connection_close, Err, _, Why}, _, Now, Q) ->
    {ok, drain({peer_closed, Err, Why}, Now, Q)};
frame({application_close, Code, Why}, _, Now, Q) ->
    {ok, drain({peer_closed, {application, Code}, Why}, Now, Q)};
frame(F, _, _, _) ->
    %% falco_quic_frame:parse/2 refuses the rest from a client
    {error, protocol_violation, falco_quic_frame:frame_type(F), unexpected_frame}.

streams({ok, Events, S}, _, Q) -> {ok, Q#q{streams = S}, Events};
streams({error, Err, Why}, FrameType, _) -> {error, Err, FrameType, Why}.

ack_delay(initial, _, _) -> 0;
ack_delay(_, Delay, #q{peer_params = P}) ->
    falco_quic_ack:delay(Delay, peer_param(ack_delay_exponent, P, 3)).

peer_param(_, undefined, Default) -> Default;
peer_param(Key, P, Default) -> maps:get(Key, P, Default).

%% What the packets an ACK acknowledged carried: an ACK of theirs ends
%% what we must acknowledge; stream frames free their data.
acked([], _, Q) ->
    Q;
acked([Items | More], Level, Q) ->
    acked(More, Level, lists:foldl(fun(I, Acc) -> acked_item(I, Level, Acc) end, Q, Items)).

acked_item({ack, Largest}, Level, Q = #q{acks = Acks}) ->
    case Acks of
        #{Level := A} -> Q#q{acks = Acks#{Level := falco_quic_ack:acked(Largest, A)}};
        #{} -> Q
    end;
acked_item({streams, Info}, _, Q = #q{streams = S0}) ->
    {_, S} = falco_quic_streams:acked(Info, S0),
    Q#q{streams = S};
acked_item(_, _, Q) ->
    Q.

%% What lost packets carried goes out again (RFC 9000 §13.3): CRYPTO
%% data at its offsets, stream data and control frames as the streams
%% say, HANDSHAKE_DONE.
lost([], Q) ->
    Q;
lost([Items | More], Q) ->
    lost(More, lists:foldl(fun lost_item/2, Q, Items)).

lost_item({crypto, Level, Offset, Bin}, Q = #q{hs = Hs}) ->
    Q#q{hs = falco_quic_handshake:requeue(Level, Offset, Bin, Hs)};
lost_item({streams, Info}, Q = #q{streams = S}) ->
    Q#q{streams = falco_quic_streams:lost(Info, S)};
lost_item(handshake_done, Q) ->
    Q#q{handshake_done = pending};
lost_item({new_token, Token}, Q) ->
    Q#q{new_token = {pending, Token}};
lost_item(_, Q) ->
    Q.

%% -- the handshake's events -----------------------------------------------------

tls_events([], _Now, Q, Acts) ->
    {ok, Q, lists:reverse(Acts)};
tls_events([{transport_params, Bin} | Es], Now, Q = #q{dcid = ClientCid}, Acts) ->
    case falco_quic_tparams:from_client(Bin, ClientCid) of
        {ok, Params} -> tls_events(Es, Now, peer_params(Params, Q), Acts);
        {error, Err, Why} -> {error, Err, 16#06, Why}
    end;
tls_events([handshake_complete | Es], Now, Q = #q{hs = Hs}, Acts) ->
    Read = falco_quic_handshake:keys(application, read, Hs),
    App = #{phase => 0, read => Read, write => falco_quic_handshake:keys(application, write, Hs),
            next => falco_quic_keys:update(Read), prev => undefined, prev_until => infinity,
            since => 0, write_phase => 0, sealed => 0, write_since => 0, forged => 0,
            updates => 0},
    Q1 = confirmed(discard(handshake, Q#q{phase = established, handshake_done = pending,
                                          handshake_at = infinity, app = App})),
    {Q2, Early} = early(Now, Q1),
    tls_events(Es, Now, Q2, lists:reverse(Early, [established | Acts]));
tls_events([{Key, Value} | Es], Now, Q = #q{info = I}, Acts)
  when Key =:= alpn; Key =:= server_name ->
    tls_events(Es, Now, Q#q{info = I#{Key => Value}}, Acts);
tls_events([_ | Es], Now, Q, Acts) ->
    tls_events(Es, Now, Q, Acts).

confirmed(Q = #q{loss = L}) ->
    Q#q{loss = falco_quic_loss:handshake_confirmed(L)}.

peer_params(Params, Q = #q{ours = Ours, loss = L}) ->
    Streams = falco_quic_streams:new(Ours, Params, #{}),
    Q#q{peer_params = Params, streams = Streams,
        loss = falco_quic_loss:peer_max_ack_delay(1000 * maps:get(max_ack_delay, Params, 25), L)}.

%% The 1-RTT packets that waited for the handshake, in the order they came.
early(Now, Q = #q{early = Early}) ->
    lists:foldl(fun({_At, Peer, P}, {Acc, Acts}) ->
                        case Acc#q.phase of
                            established ->
                                case open(application, P, Now, Peer, Acc) of
                                    {ok, Acc1, New} -> {Acc1, Acts ++ New};
                                    {error, Err, FT, Why} ->
                                        Acc1 = close_with(Err, FT, Why, Now, Acc),
                                        {Acc1, Acts ++ close_sent(Acc1)}
                                end;
                            _ ->
                                {Acc, Acts}
                        end
                end, {Q#q{early = []}, []}, lists:reverse(Early)).

%% The idle timeout (§10.1): the smaller of both sides' that are not 0.
idle_timeout(#q{opts = #{idle_timeout := Ours}, peer_params = P}) ->
    case peer_param(max_idle_timeout, P, 0) of
        0 -> Ours;
        Theirs -> erlang:min(Ours, Theirs)
    end.

%% @doc The idle timeout restarted at `Now' (our first ack-eliciting packet
%% after a packet was read does it too, §10.1).
-spec idle_restart(time(), state()) -> state().
idle_restart(Now, Q) ->
    Q#q{idle_at = Now + 1000 * idle_timeout(Q)}.

%% -- timers -------------------------------------------------------------------------

%% @doc The deadline of the last `{timer, At}' passed.
-spec timeout(time(), state()) -> {state(), [action()]}.
timeout(Now, Q = #q{phase = Phase, close_at = At, close_reason = Why})
  when Phase =:= closing; Phase =:= draining ->
    case Now >= At of
        true -> {Q#q{phase = closed}, [{closed, Why}]};
        false -> {Q, [{timer, At}]}
    end;
timeout(_Now, Q = #q{phase = closed}) ->
    {Q, []};
timeout(Now, Q = #q{idle_at = Idle}) when Now >= Idle ->
    {Q#q{phase = closed}, [{closed, idle_timeout}]};
timeout(Now, Q = #q{handshake_at = At}) when Now >= At ->
    {Q#q{phase = closed}, [{closed, handshake_timeout}]};
timeout(Now, Q0) ->
    Q = #q{loss = L0, probes = Probes} = expire_keys(Now, Q0),
    case falco_quic_loss:timeout(Now, L0) of
        {none, L} ->
            finish(Now, Q#q{loss = L}, []);
        {{lost, Infos}, L} ->
            finish(Now, lost(Infos, Q#q{loss = L}), []);
        {{probe, Wanted}, L} ->
            finish(Now, Q#q{loss = L, probes = maps:merge(Probes, maps:from_list(Wanted))}, [])
    end.

%% After events: what is due to send, and the next deadline.
finish(_Now, Q = #q{phase = Phase}, Acts) when Phase =:= closing; Phase =:= draining ->
    {Q, Acts ++ [{timer, Q#q.close_at}]};
finish(Now, Q0, Acts) ->
    {Q, Sends} = flush(Now, Q0),
    {Q, Acts ++ Sends}.

%% @doc The datagrams due at `Now' and the next deadline.
-spec flush(time(), state()) -> {state(), [action()]}.
flush(_Now, Q = #q{phase = Phase}) when Phase =/= handshake, Phase =/= established ->
    {Q, []};
flush(Now, Q0) ->
    case key_update(Q0) of
        {ok, Q1} ->
            {Q, Sends} = falco_quic_send:flush(Now, Q1),
            {Q, Sends ++ [{timer, deadline(Q)}]};
        {error, Err, FrameType, Why} ->
            Q = close_with(Err, FrameType, Why, Now, Q0),
            {Q, close_sent(Q) ++ [{timer, Q#q.close_at}]}
    end.

deadline(#q{idle_at = Idle, handshake_at = Hs, loss = L, acks = Acks, app = App}) ->
    Prev = case App of
               #{prev_until := At} -> At;
               undefined -> infinity
           end,
    lists:min([Idle, Hs, Prev, falco_quic_loss:deadline(L)
               | [falco_quic_ack:deadline(A) || A <- maps:values(Acks)]]).

%% @doc The probe timeout now (RFC 9002 §6.2.1), µs.
-spec pto(state()) -> pos_integer().
pto(#q{loss = L, peer_params = P}) ->
    round(falco_quic_rtt:pto_period(falco_quic_loss:rtt(L)) + 1000 * peer_param(max_ack_delay, P, 25)).

%% -- closing -----------------------------------------------------------------------

%% The client closed: nothing more is sent (§10.2.2).
drain(Why, Now, Q) ->
    Q#q{phase = draining, close_at = Now + 3 * pto(Q), close_reason = Why}.

%% We close with a transport error (§10.2.1, §10.2.3): CONNECTION_CLOSE
%% in every level the client may be reading.
close_with(Err, FrameType, Why, Now, Q) ->
    Frame = falco_quic_frame:connection_close(Err, FrameType, reason(Why)),
    closing(Frame, Frame, {Err, Why}, Now, Q).

%% @doc The application closes the connection with `Code' (an HTTP/3
%% error code) and a reason: CONNECTION_CLOSE of type 0x1d in 1-RTT, and
%% before the handshake is complete an APPLICATION_ERROR in the levels
%% the client reads then (§10.2.3). Then the closing period.
-spec close(time(), non_neg_integer(), iodata(), state()) -> {state(), [action()]}.
close(_Now, _Code, _Why, Q = #q{phase = Phase}) when Phase =/= handshake, Phase =/= established ->
    {Q, []};
close(Now, Code, Why, Q0) ->
    App = falco_quic_frame:application_close(Code, Why),
    Early = falco_quic_frame:connection_close(application_error, 0, <<>>),
    Q = closing(App, Early, {application, Code}, Now, Q0),
    {Q, close_sent(Q) ++ [{timer, Q#q.close_at}]}.

closing(AppFrame, EarlyFrame, Why, Now, Q0) ->
    {Pkt, Q = #q{sent_bytes = S, received_bytes = R}} =
        falco_quic_send:close_packet(AppFrame, EarlyFrame, Q0),
    Size = case Pkt of undefined -> 0; _ -> iolist_size(Pkt) end,
    Now1 = Pkt =/= undefined andalso (Q#q.validated orelse S + Size =< 3 * R),
    Q#q{phase = closing, close_packet = Pkt, close_count = 0, close_reason = Why,
        close_now = Now1, sent_bytes = case Now1 of true -> S + Size; false -> S end,
        close_at = Now + 3 * pto(Q)}.

reason(Why) when is_atom(Why) -> atom_to_binary(Why);
reason(_) -> <<>>.

%% -- the application's side ------------------------------------------------------

%% @doc Bytes for stream `Id' (a client's bidirectional stream or one of
%% our unidirectional ones), sent at the next {@link flush/2}.
-spec send(non_neg_integer(), iodata(), fin | nofin, state()) -> {ok, state()} | {error, closed}.
send(Id, Data, Fin, Q = #q{streams = S0}) when S0 =/= undefined ->
    case falco_quic_streams:send(Id, Data, Fin, S0) of
        {ok, S} -> {ok, Q#q{streams = S}};
        {error, _} = Error -> Error
    end;
send(_, _, _, _) ->
    {error, closed}.

%% @doc Opens one of our unidirectional streams.
-spec open_uni(state()) -> {ok, non_neg_integer(), state()} | blocked.
open_uni(Q = #q{streams = S0}) when S0 =/= undefined ->
    case falco_quic_streams:open_uni(S0) of
        {ok, Id, S} -> {ok, Id, Q#q{streams = S}};
        blocked -> blocked
    end;
open_uni(_) ->
    blocked.

%% @doc Our RESET_STREAM for stream `Id'.
-spec reset(non_neg_integer(), non_neg_integer(), state()) -> state().
reset(Id, Code, Q = #q{streams = S}) when S =/= undefined ->
    Q#q{streams = falco_quic_streams:reset(Id, Code, S)};
reset(_, _, Q) ->
    Q.

%% @doc Our STOP_SENDING for stream `Id'.
-spec stop(non_neg_integer(), non_neg_integer(), state()) -> state().
stop(Id, Code, Q = #q{streams = S}) when S =/= undefined ->
    Q#q{streams = falco_quic_streams:stop(Id, Code, S)};
stop(_, _, Q) ->
    Q.

%% @doc The application consumed `N' bytes of stream `Id': flow credit.
-spec consumed(non_neg_integer(), non_neg_integer(), time(), state()) -> state().
consumed(Id, N, Now, Q = #q{streams = S}) when S =/= undefined ->
    Q#q{streams = falco_quic_streams:consumed(Id, N, Now, S)};
consumed(_, _, _, Q) ->
    Q.

%% @doc The bytes of stream `Id' queued and not yet sent once.
-spec unsent(non_neg_integer(), state()) -> non_neg_integer() | closed.
unsent(Id, #q{streams = S}) when S =/= undefined ->
    falco_quic_streams:unsent(Id, S);
unsent(_, _) ->
    closed.

%% @doc Whether everything sent was acknowledged and nothing waits to be
%% sent: a graceful close may go now without cutting a response short.
-spec quiescent(state()) -> boolean().
quiescent(#q{loss = L, streams = S, handshake_done = Done}) ->
    falco_quic_loss:ack_eliciting_in_flight(L) =:= 0 andalso Done =/= pending
        andalso (S =:= undefined orelse not falco_quic_streams:pending(S)).

%% @doc The connection's phase.
-spec phase(state()) -> handshake | established | closing | draining | closed.
phase(#q{phase = Phase}) ->
    Phase.

%% @doc What the connection knows, for introspection: phase, peer, ALPN,
%% SNI, RTT, congestion window and bytes in flight, streams; once the
%% handshake is complete, the key phase we write, our key updates and
%% the client's, and the 1-RTT packets that failed to open.
-spec info(state()) -> map().
info(Q = #q{info = I, loss = L, streams = S}) ->
    Rtt = falco_quic_loss:rtt(L),
    Keys = case Q#q.app of
               #{updates := U, forged := F, write_phase := W} ->
                   #{key_updates => U, forged_packets => F, key_phase => W};
               undefined ->
                   #{}
           end,
    (maps:merge(I, Keys))#{phase => Q#q.phase, peer => Q#q.peer, validated => Q#q.validated,
       smoothed_rtt => falco_quic_rtt:smoothed(Rtt),
       cwnd => falco_quic_cc:window(falco_quic_loss:cc(L)),
       in_flight => falco_quic_loss:in_flight(L),
       streams => case S of
                      undefined -> #{};
                      _ -> falco_quic_streams:info(S)
                  end}.
