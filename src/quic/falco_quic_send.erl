%% @doc Packets out of a QUIC connection (RFC 9000 §12.2, §13, §14.1, §8.1;
%% RFC 9002 §6.2.4, §7): what {@link falco_quic_machine} has due is cut
%% into protected packets, coalesced into datagrams. Private to the
%% machine, which owns the state (falco_quic_machine.hrl).
%%
%% Each datagram takes a packet of each level that has write keys and
%% something to send, Initial first: an ACK when one is pending (always
%% first in its packet), then the level's frames: CRYPTO data
%% ({@link falco_quic_handshake:take/3}) in Initial and Handshake;
%% HANDSHAKE_DONE, PATH_RESPONSE and PATH_CHALLENGE, the streams' control
%% frames and their data ({@link falco_quic_streams}) in 1-RTT; a PING when
%% a probe is owed and nothing else elicits an ACK. An ACK goes alone only
%% when it is due ({@link falco_quic_ack:due/2}).
%%
%% Limits: a datagram carrying an Initial is padded to 1200 bytes, inside
%% its last packet (§14.1); until the client's address is validated at
%% most three times the bytes received are sent (§8.1), and the loss
%% detector is told when that is what stops us; ack-eliciting packets wait
%% for room in the congestion window, probes excepted (RFC 9002 §7.5);
%% datagrams are 1200 bytes until the handshake is complete, then the
%% smaller of `max_datagram' and the client's max_udp_payload_size; at
%% most ?BURST datagrams per flush.
%%
%% Each packet is given to {@link falco_quic_loss:sent/7} with the list
%% of what it carried, which comes back to the machine when it is
%% acknowledged or lost: `{ack, Largest}', `{crypto, Level, Offset, Bin}',
%% `{streams, Info}', `handshake_done', `{new_token, Token}', `ping'.
%%
%% @private internal to falco
-module(falco_quic_send).

-include("falco_quic_machine.hrl").

-export([flush/2, close_packet/3]).

-define(MIN_INITIAL, 1200).
-define(BURST, 64).
-define(ACK_RANGES, 32).
-define(ACK_EXPONENT, 3).
%% the least room worth a packet
-define(MIN_ROOM, 24).

-record(pkt, {level :: level(), header :: map(), pn :: non_neg_integer(),
              largest :: non_neg_integer() | none, frames :: [iodata()], items :: [term()],
              eliciting :: boolean()}).

%% @doc The datagrams due at `Now'.
-spec flush(time(), #q{}) -> {#q{}, [{send, term(), iodata()}]}.
flush(Now, Q0) ->
    {Q, Sends} = datagrams(Now, Q0#q{control_at = undefined}, [], 0),
    {limited(Q), Sends}.

datagrams(_Now, Q, Acc, ?BURST) ->
    {Q, lists:reverse(Acc)};
datagrams(Now, Q, Acc, N) ->
    case datagram(Now, Q) of
        none ->
            {Q, lists:reverse(Acc)};
        {Bytes, Size, Q1 = #q{sent_bytes = Sent}} ->
            datagrams(Now, Q1#q{sent_bytes = Sent + Size}, [{send, Q1#q.peer, Bytes} | Acc], N + 1)
    end.

%% RFC 9002 §6.2.2.1: no PTO while only the address limit holds us back.
limited(Q = #q{loss = L}) ->
    Q#q{loss = falco_quic_loss:amplification_limited(budget(Q) < ?MIN_INITIAL, L)}.

budget(Q = #q{validated = false, received_bytes = R, sent_bytes = S}) ->
    erlang:max(0, erlang:min(max_size(Q), 3 * R - S));
budget(Q) ->
    max_size(Q).

max_size(#q{phase = established, validated = true, opts = #{max_datagram := Max},
            peer_params = P}) when is_map(P) ->
    erlang:min(Max, maps:get(max_udp_payload_size, P, 65527));
max_size(_) ->
    ?MIN_INITIAL.

datagram(Now, Q0) ->
    Budget = budget(Q0),
    case Budget < ?MIN_ROOM of
        true ->
            none;
        false ->
            {Pkts, Q} = packets([initial, handshake, application], Now, Budget, Q0, []),
            case Pkts of
                [] -> none;
                _ -> protect(Pkts, Now, Q)
            end
    end.

packets([], _Now, _Room, Q, Acc) ->
    {lists:reverse(Acc), Q};
packets([initial | Ls], Now, Room, Q, Acc) when Room < ?MIN_INITIAL ->
    %% an Initial's datagram is 1200 bytes: no room for one
    packets(Ls, Now, Room, Q, Acc);
packets([L | Ls], Now, Room, Q, Acc) ->
    case write_keys(L, Q) of
        undefined ->
            packets(Ls, Now, Room, Q, Acc);
        _ ->
            case packet(L, Now, Room, Q) of
                none -> packets(Ls, Now, Room, Q, Acc);
                {P, Size, Q1} -> packets(Ls, Now, Room - Size, Q1, [P | Acc])
            end
    end.

%% One packet of level L in at most Room bytes: {Packet, Size it will
%% take (padding aside), State}, or none.
packet(L, Now, Room0, Q0 = #q{next_pn = Pns, loss = Loss}) ->
    Header = header(L, Q0),
    Pn = maps:get(L, Pns),
    Largest = case falco_quic_loss:largest_acked(L, Loss) of
                  undefined -> none;
                  LA -> LA
              end,
    Room = Room0 - falco_quic_packet:overhead(Header, Pn, Largest),
    case Room < ?MIN_ROOM of
        true ->
            none;
        false ->
            {AckFrames, AckItems, AckSize, Due} = ack(L, Now, Room, Q0),
            Probe = maps:get(L, Q0#q.probes, 0) > 0,
            Allowed = Probe orelse falco_quic_loss:can_send(max_size(Q0), Loss),
            {Frames, Items, Used, Q1} =
                case Allowed of
                    true -> eliciting(L, Now, Room - AckSize, Q0);
                    false -> {[], [], 0, Q0}
                end,
            {Frames1, Items1, Used1} =
                case Frames =:= [] andalso Probe of
                    true -> {[falco_quic_frame:ping()], [ping], 1};
                    false -> {Frames, Items, Used}
                end,
            Eliciting = Frames1 =/= [],
            case Eliciting orelse (AckFrames =/= [] andalso Due) of
                false ->
                    none;
                true ->
                    Q2 = sent_ack(L, AckFrames, Q1),
                    Q3 = Q2#q{next_pn = Pns#{L := Pn + 1},
                              probes = spend_probe(L, Eliciting, Q2#q.probes)},
                    P = #pkt{level = L, header = Header, pn = Pn, largest = Largest,
                             frames = AckFrames ++ Frames1, items = AckItems ++ Items1,
                             eliciting = Eliciting},
                    {P, Room0 - Room + AckSize + Used1, Q3}
            end
    end.

header(initial, #q{dcid = D, scid = S}) -> #{type => initial, dcid => D, scid => S, token => <<>>};
header(handshake, #q{dcid = D, scid = S}) -> #{type => handshake, dcid => D, scid => S};
header(application, #q{dcid = D, app = App}) ->
    #{type => one_rtt, dcid => D, key_phase => case App of
                                                    #{write_phase := Phase} -> Phase;
                                                    undefined -> 0
                                                end}.

%% Level's write keys: the 1-RTT ones of the current key phase once the
%% handshake is complete (falco_quic_machine keeps them).
write_keys(application, #q{app = #{write := Keys}}) -> Keys;
write_keys(L, #q{hs = Hs}) -> falco_quic_handshake:keys(L, write, Hs).

%% The ACK frame of level L, if one is pending and fits: frames, items,
%% size, and whether it is due alone.
ack(L, Now, Room, #q{acks = Acks}) ->
    case Acks of
        #{L := A} ->
            case wanted(L, Now, A) andalso falco_quic_ack:frame(Now, ?ACK_EXPONENT, ?ACK_RANGES, A) of
                {Largest, Delay, Ranges} ->
                    Bin = iolist_to_binary(falco_quic_frame:ack(Delay, Ranges, undefined)),
                    case byte_size(Bin) =< Room of
                        true -> {[Bin], [{ack, Largest}], byte_size(Bin), falco_quic_ack:due(Now, A)};
                        false -> {[], [], 0, false}
                    end;
                _ ->
                    {[], [], 0, false}
            end;
        #{} ->
            {[], [], 0, false}
    end.

%% Initial and Handshake packets carry an ACK whenever one is pending; a
%% 1-RTT packet only once it is due (RFC 9000 §13.2.1: within our
%% max_ack_delay, at once after the second ack-eliciting packet), so a
%% stream of data does not carry an ACK in every packet. (The client then
%% sees its ack-eliciting packets unacknowledged for up to max_ack_delay,
%% as from other servers; a client that rebinds its address in that time
%% probes from the new one, which is how we learn it moved.)
wanted(application, Now, A) -> falco_quic_ack:due(Now, A);
wanted(_, _, A) -> falco_quic_ack:pending(A).

sent_ack(_, [], Q) ->
    Q;
sent_ack(L, _, Q = #q{acks = Acks}) ->
    Q#q{acks = Acks#{L := falco_quic_ack:sent(maps:get(L, Acks))}}.

spend_probe(L, true, Probes) ->
    case Probes of
        #{L := 1} -> maps:remove(L, Probes);
        #{L := N} -> Probes#{L := N - 1};
        #{} -> Probes
    end;
spend_probe(_, false, Probes) ->
    Probes.

%% The ack-eliciting frames of level L that fit in Room.
eliciting(L, _Now, Room, Q = #q{hs = Hs0}) when L =:= initial; L =:= handshake ->
    {Crypto, Size, Hs} = falco_quic_handshake:take(L, Room, Hs0),
    {[falco_quic_frame:crypto(Off, Bin) || {crypto, Off, Bin} <- Crypto],
     [{crypto, L, Off, Bin} || {crypto, Off, Bin} <- Crypto], Size, Q#q{hs = Hs}};
eliciting(application, Now, Room, Q0) ->
    {F1, I1, U1, Q1} = fixed(Room, Q0),
    {F2, I2, U2, Q2} = control(Now, Room - U1, Q1),
    {F3, I3, U3, Q3} = stream_data(Room - U1 - U2, Q2),
    {F1 ++ F2 ++ F3, I1 ++ I2 ++ I3, U1 + U2 + U3, Q3}.

%% HANDSHAKE_DONE, PATH_RESPONSE, PATH_CHALLENGE, NEW_TOKEN: a few bytes
%% each (and most packets have none: the state is not touched then).
fixed(_Room, Q = #q{handshake_done = Done, path_responses = [], challenge = Ch, new_token = T})
  when Done =/= pending, not (is_tuple(Ch) andalso element(2, Ch) =:= false),
       not is_tuple(T) ->
    {[], [], 0, Q};
fixed(Room, Q = #q{handshake_done = Done, path_responses = Rs, challenge = Ch, new_token = T})
  when Room >= 32 ->
    {F0, I0} = case Done of
                   pending -> {[falco_quic_frame:handshake_done()], [handshake_done]};
                   _ -> {[], []}
               end,
    F1 = [falco_quic_frame:path_response(R) || R <- lists:reverse(Rs)],
    {F2, Ch1} = case Ch of
                    {Data, false} -> {[falco_quic_frame:path_challenge(Data)], {Data, true}};
                    _ -> {[], Ch}
                end,
    Frames0 = F0 ++ F1 ++ F2,
    %% NEW_TOKEN (about 60 bytes) when it fits beside the others
    {F3, I3, T1} = case T of
                       {pending, Token} ->
                           Frame = iolist_to_binary(falco_quic_frame:new_token(Token)),
                           case iolist_size(Frames0) + byte_size(Frame) =< Room of
                               true -> {[Frame], [{new_token, Token}], sent};
                               false -> {[], [], T}
                           end;
                       _ ->
                           {[], [], T}
                   end,
    Frames = Frames0 ++ F3,
    %% 9 bytes per path frame, 1 for HANDSHAKE_DONE
    case iolist_size(Frames) =< Room of
        true ->
            {Frames, I0 ++ I3, iolist_size(Frames),
             Q#q{handshake_done = case Done of pending -> sent; _ -> Done end,
                 path_responses = [], challenge = Ch1, new_token = T1}};
        false ->
            {[], [], 0, Q}
    end;
fixed(_, Q) ->
    {[], [], 0, Q}.

control(_Now, _Room, Q = #q{streams = undefined}) ->
    {[], [], 0, Q};
control(Now, _Room, Q = #q{control_at = Now}) ->
    %% asked already in this flush (what did not fit waits for the next)
    {[], [], 0, Q};
control(Now, Room, Q = #q{streams = S0, loss = L}) ->
    Rtt = falco_quic_rtt:smoothed(falco_quic_loss:rtt(L)),
    {Due, S1} = falco_quic_streams:control(Now, Rtt, S0),
    {Frames, Items, Used, S} = fit_control(Due, Room, [], [], 0, S1),
    {Frames, Items, Used, Q#q{streams = S, control_at = Now}}.

fit_control([], _Room, Fs, Is, Used, S) ->
    {lists:reverse(Fs), lists:reverse(Is), Used, S};
fit_control([{Frame, Info} | More], Room, Fs, Is, Used, S) ->
    Bin = iolist_to_binary(falco_quic_frame:build(Frame)),
    case byte_size(Bin) =< Room - Used of
        true ->
            fit_control(More, Room, [Bin | Fs], [{streams, Info} | Is], Used + byte_size(Bin), S);
        false ->
            %% no room in this packet: due again at the next
            fit_control(More, Room, Fs, Is, Used, falco_quic_streams:lost(Info, S))
    end.

stream_data(_Room, Q = #q{streams = undefined}) ->
    {[], [], 0, Q};
stream_data(Room, Q) when Room < ?MIN_ROOM ->
    {[], [], 0, Q};
stream_data(Room, Q = #q{streams = S0}) ->
    {Taken, Used, S} = falco_quic_streams:take(Room, S0),
    {[F || {F, _} <- Taken], [{streams, I} || {_, I} <- Taken], Used, Q#q{streams = S}}.

%% The packets of one datagram protected, the last padded when the
%% datagram carries an Initial; each given to loss detection.
protect(Pkts, Now, Q) ->
    Pad = lists:any(fun(#pkt{level = L}) -> L =:= initial end, Pkts),
    protect(Pkts, Pad, Now, Q, [], 0).

protect([], _Pad, _Now, Q, Acc, Size) ->
    {lists:reverse(Acc), Size, Q};
protect([P = #pkt{level = L, header = H, pn = Pn, largest = Largest, frames = Frames} | More],
        Pad, Now, Q = #q{loss = Loss}, Acc, Size) ->
    MinSize = min_size(More, Pad, Size),
    Bin = iolist_to_binary(falco_quic_packet:protect(H, Pn, Largest, Frames, write_keys(L, Q),
                                                     MinSize)),
    Kind = case P#pkt.eliciting of
               true -> ack_eliciting;
               false when MinSize > 0 -> in_flight;
               false -> ack_only
           end,
    Loss1 = falco_quic_loss:sent(L, Pn, byte_size(Bin), Kind, P#pkt.items, Now, Loss),
    protect(More, Pad, Now, sealed(L, Q#q{loss = Loss1}), [Bin | Acc], Size + byte_size(Bin)).

%% The 1-RTT packets the write keys sealed, for the machine's key update
%% (RFC 9001 §6.6).
sealed(application, Q = #q{app = App = #{sealed := N}}) -> Q#q{app = App#{sealed := N + 1}};
sealed(_, Q) -> Q.

%% The size the next packet must fill: the rest of 1200 bytes for the
%% last packet of a datagram carrying an Initial (§14.1), else nothing.
min_size([], true, Sent) -> ?MIN_INITIAL - Sent;
min_size(_, _, _) -> 0.

%% @doc The datagram of our CONNECTION_CLOSE (§10.2.3): `AppFrame' in a
%% 1-RTT packet once the handshake is complete, `EarlyFrame' in the
%% Initial and Handshake packets the client can read before; `undefined'
%% when there are no keys to send it with.
-spec close_packet(iodata(), iodata(), #q{}) -> {iodata() | undefined, #q{}}.
close_packet(AppFrame, EarlyFrame, Q0 = #q{phase = Phase}) ->
    Levels = case Phase of
                 established -> [{application, AppFrame}];
                 _ -> [{initial, EarlyFrame}, {handshake, EarlyFrame}]
             end,
    {Pkts, Q} = lists:foldl(
                  fun({L, Frame}, {Acc, Qa = #q{next_pn = Pns}}) ->
                          case write_keys(L, Qa) of
                              undefined ->
                                  {Acc, Qa};
                              Keys ->
                                  Pn = maps:get(L, Pns),
                                  {[{L, Pn, Frame, Keys} | Acc], Qa#q{next_pn = Pns#{L := Pn + 1}}}
                          end
                  end, {[], Q0}, Levels),
    case lists:reverse(Pkts) of
        [] ->
            {undefined, Q};
        Ordered ->
            Pad = lists:keymember(initial, 1, Ordered),
            {close_bytes(Ordered, Pad, Q, [], 0), Q}
    end.

close_bytes([], _, _, Acc, _) ->
    lists:reverse(Acc);
close_bytes([{L, Pn, Frame, Keys} | More], Pad, Q, Acc, Size) ->
    MinSize = min_size(More, Pad, Size),
    Bin = iolist_to_binary(falco_quic_packet:protect(header(L, Q), Pn, none, Frame, Keys, MinSize)),
    close_bytes(More, Pad, Q, [Bin | Acc], Size + byte_size(Bin)).
