%% @doc QUIC loss detection (RFC 9002 §5-6, Appendix A): the packets we
%% sent in each packet number space, what an ACK of them acknowledges and
%% shows lost, the RTT estimate ({@link falco_quic_rtt}) and the congestion
%% controller ({@link falco_quic_cc}), and the one loss-detection deadline
%% (a time-threshold loss or the probe timeout). Pure and without timers:
%% times are integers of microseconds from the caller's
%% `erlang:monotonic_time(microsecond)', and the caller arms its own timer
%% at {@link deadline/1} and calls {@link timeout/2} when it passes.
%%
%% Each sent packet is kept with its size, kind and an opaque term the
%% caller gets back when it is acknowledged or lost (the frames to
%% retransmit, or to forget). Losses are found by packet threshold (3) and
%% by time threshold (9/8 × max(smoothed, latest RTT)), on an ACK and on
%% the timer alike, and every loss of an in-flight packet goes to the
%% congestion controller whichever found it, with persistent congestion
%% (§7.6.2) checked over each batch. A PTO that fires says which space
%% must send probes and how many (§6.2.4) and backs off; it never marks
%% anything lost. The reference server's PTO only re-armed itself, its
%% timer-found losses bypassed congestion control and it had no persistent
%% congestion: this module is shaped so that none of these can happen.
%%
%% Safety against a hostile peer (RFC 9000 §13.1, §21.4): an ACK of a
%% packet number we never sent, beyond the largest sent or one the caller
%% skipped on purpose ({@link skipped/3}, the optimistic-ACK defence), is
%% `{error, protocol_violation}'. The ACK Delay is ignored in the Initial
%% space and capped at the peer's max_ack_delay once the handshake is
%% confirmed (§5.3).
%%
%% Persistent congestion needs two lost ack-eliciting packets with nothing
%% acknowledged sent between them. Each packet remembers the number sent
%% just before it in its space, so "nothing between them acknowledged"
%% is checked exactly within one batch of losses in one space (§7.6.2
%% allows one space); a run split over two batches is not joined, which
%% can only miss a collapse, never invent one.
%%
%% @private internal to falco
-module(falco_quic_loss).

-export([new/0, new/1, sent/7, skipped/3, ack/5, deadline/1, timeout/2, discard/2,
         handshake_confirmed/1, peer_validated/1, handshake_keys/1,
         amplification_limited/2, peer_max_ack_delay/2, app_limited/2,
         rtt/1, cc/1, pto_count/1, can_send/2, in_flight/1, ack_eliciting_in_flight/1,
         largest_acked/2]).

-type space() :: initial | handshake | application.
-type kind() :: ack_eliciting | in_flight | ack_only.
-type pn() :: non_neg_integer().
-type time() :: integer().
-type range() :: {pn(), pn()}.
-type probe() :: {space(), 1 | 2}.
-type event() :: none | {lost, [term()]} | {probe, [probe(), ...]}.
-export_type([space/0, kind/0, event/0, probe/0]).

%% kPacketThreshold, kTimeThreshold (9/8) and kGranularity (§6.1, µs)
-define(PACKET_THRESHOLD, 3).
-define(GRANULARITY, 1000).
%% the peer's max_ack_delay until its transport parameters say (RFC 9000 §18.2)
-define(MAX_ACK_DELAY, 25000).
%% skipped packet numbers remembered per space
-define(SKIPPED, 8).
%% the PTO backoff stops doubling here (2^16 × a 1 s PTO is 18 hours: the
%% idle timeout ends such a connection long before)
-define(MAX_BACKOFF, 16).

-record(pkt, {time :: time(),
              size :: non_neg_integer(),
              kind :: kind(),
              prev :: pn() | undefined,
              info :: term()}).

-record(space, {sent = gb_trees:empty() :: gb_trees:tree(pn(), #pkt{}),
                largest_acked = undefined :: pn() | undefined,
                loss_time = undefined :: time() | undefined,
                last_eliciting = undefined :: time() | undefined,
                eliciting = 0 :: non_neg_integer(),
                last_pn = undefined :: pn() | undefined,
                skipped = [] :: [pn()]}).

-record(loss, {initial = #space{} :: #space{} | discarded,
               handshake = #space{} :: #space{} | discarded,
               application = #space{} :: #space{} | discarded,
               rtt :: falco_quic_rtt:rtt(),
               cc :: falco_quic_cc:cc(),
               pto_count = 0 :: non_neg_integer(),
               confirmed = false :: boolean(),
               peer_validated = true :: boolean(),
               handshake_keys = false :: boolean(),
               amp_limited = false :: boolean(),
               max_ack_delay = ?MAX_ACK_DELAY :: non_neg_integer(),
               now = 0 :: time()}).
-opaque loss() :: #loss{}.
-export_type([loss/0]).

-type opts() :: #{role => server | client, max_datagram_size => pos_integer(),
                  initial_rtt => pos_integer()}.

%% @doc A server's state for 1200-byte datagrams.
-spec new() -> loss().
new() ->
    new(#{}).

%% @doc A new state. `role' (default `server'): a client does not know
%% that the server has validated its address until {@link peer_validated/1}
%% and arms the anti-deadlock PTO until then (§6.2.2.1); a server always
%% knows. `max_datagram_size' (1200) sizes the congestion window,
%% `initial_rtt' (333 ms) the first PTO.
-spec new(opts()) -> loss().
new(Opts) ->
    Rtt = case Opts of
              #{initial_rtt := I} -> falco_quic_rtt:new(I);
              #{} -> falco_quic_rtt:new()
          end,
    #loss{rtt = Rtt, cc = falco_quic_cc:new(maps:get(max_datagram_size, Opts, 1200)),
          peer_validated = maps:get(role, Opts, server) =:= server}.

%% -- sending ------------------------------------------------------------------

%% @doc Packet `Pn' of `Size' bytes was sent at `Now' in `Space'; `Info'
%% comes back when it is acknowledged or lost. `Kind': `ack_eliciting'
%% (any frame but ACK, PADDING and CONNECTION_CLOSE; in flight),
%% `in_flight' (PADDING but nothing ack-eliciting) or `ack_only' (counted
%% neither in flight nor by the PTO). Packet numbers must increase.
-spec sent(space(), pn(), non_neg_integer(), kind(), term(), time(), loss()) -> loss().
sent(Space, Pn, Size, Kind, Info, Now, L0) ->
    L = L0#loss{now = Now},
    case sp(Space, L) of
        discarded ->
            L;
        S = #space{sent = Sent, last_pn = Prev} ->
            P = #pkt{time = Now, size = Size, kind = Kind, prev = Prev, info = Info},
            S1 = count_sent(Kind, Now, S#space{sent = gb_trees:insert(Pn, P, Sent),
                                               last_pn = Pn}),
            store(Space, S1, L#loss{cc = cc_sent(Kind, Size, L#loss.cc)})
    end.

count_sent(ack_eliciting, Now, S = #space{eliciting = E}) ->
    S#space{eliciting = E + 1, last_eliciting = Now};
count_sent(_, _, S) ->
    S.

cc_sent(ack_only, _, Cc) -> Cc;
cc_sent(_, Size, Cc) -> falco_quic_cc:sent(Size, Cc).

%% @doc Packet number `Pn' was skipped on purpose (RFC 9000 §21.4): an ACK
%% of it is a protocol violation. The last 8 per space are remembered; the
%% caller must still not send `Pn' afterwards.
-spec skipped(space(), pn(), loss()) -> loss().
skipped(Space, Pn, L) ->
    case sp(Space, L) of
        discarded ->
            L;
        S = #space{skipped = Skipped} ->
            store(Space, S#space{skipped = lists:sublist([Pn | Skipped], ?SKIPPED)}, L)
    end.

last_pn(#space{last_pn = undefined}) -> -1;
last_pn(#space{last_pn = Pn}) -> Pn.

%% -- acknowledgments ----------------------------------------------------------

%% @doc An ACK frame arrived at `Now' in `Space': `Ranges' of packet
%% numbers, highest first, each `{Smallest, Largest}' (as
%% falco_quic_ack:from_wire/3 gives them), and the ACK Delay in µs. Gives
%% the terms of the packets it newly acknowledges and of those it shows
%% lost, each in packet number order.
-spec ack(space(), [range(), ...], non_neg_integer(), time(), loss()) ->
          {ok, [term()], [term()], loss()} | {error, protocol_violation}.
ack(Space, Ranges, AckDelay, Now, L0) ->
    L = L0#loss{now = Now},
    case sp(Space, L) of
        discarded -> {ok, [], [], L};
        S -> ack_valid(Space, Ranges, AckDelay, Now, S, L)
    end.

ack_valid(Space, Ranges = [{_, Largest} | _], AckDelay, Now, S, L) ->
    case Largest > last_pn(S) orelse lists:any(fun(Pn) -> in(Pn, Ranges) end, S#space.skipped) of
        true -> {error, protocol_violation};
        false -> ack_newly(Space, Ranges, AckDelay, Now, S, L)
    end.

in(Pn, Ranges) ->
    lists:any(fun({Lo, Hi}) -> Pn >= Lo andalso Pn =< Hi end, Ranges).

ack_newly(Space, Ranges = [{_, Largest} | _], AckDelay, Now, S0, L0) ->
    S1 = S0#space{largest_acked = erlang:max(Largest, largest_or(S0#space.largest_acked))},
    case take_acked(Ranges, S1#space.sent) of
        {[], _} ->
            {ok, [], [], store(Space, S1, L0)};
        {Acked, Sent} ->
            L1 = sample(Space, gb_trees:lookup(Largest, S1#space.sent), Acked, AckDelay, Now, L0),
            S2 = uncount(Acked, S1#space{sent = Sent}),
            {Lost, S} = detect(Now, L1#loss.rtt, S2),
            L2 = on_lost(Lost, Now, store(Space, S, L1)),
            L = L2#loss{cc = cc_acked(Acked, L2#loss.cc)},
            {ok, infos(Acked), infos(Lost), reset_backoff(L)}
    end.

largest_or(undefined) -> -1;
largest_or(Pn) -> Pn.

%% The packets in Ranges still held, in packet number order, and the tree
%% without them.
take_acked(Ranges, Sent) ->
    Acked = lists:foldl(fun({Lo, Hi}, Acc) ->
                                collect(gb_trees:next(gb_trees:iterator_from(Lo, Sent)), Hi, Acc)
                        end, [], lists:reverse(Ranges)),
    {lists:reverse(Acked), lists:foldl(fun({Pn, _}, T) -> gb_trees:delete(Pn, T) end, Sent, Acked)}.

collect({Pn, P, Iter}, Hi, Acc) when Pn =< Hi -> collect(gb_trees:next(Iter), Hi, [{Pn, P} | Acc]);
collect(_, _, Acc) -> Acc.

%% An RTT sample when the largest acknowledged is newly acknowledged and
%% something ack-eliciting is (§5.1).
sample(Space, {value, #pkt{time = Sent}}, Acked, AckDelay, Now, L = #loss{rtt = Rtt}) ->
    case lists:any(fun({_, #pkt{kind = K}}) -> K =:= ack_eliciting end, Acked) of
        true ->
            Delay = ack_delay(Space, AckDelay, L),
            L#loss{rtt = falco_quic_rtt:sample(erlang:max(Now - Sent, 0), Delay, Now, Rtt)};
        false ->
            L
    end;
sample(_, none, _, _, _, L) ->
    L.

%% §5.3: ignored for Initial (never delayed), capped only once confirmed
ack_delay(initial, _, _) -> 0;
ack_delay(_, Delay, #loss{confirmed = true, max_ack_delay = Max}) -> erlang:min(Delay, Max);
ack_delay(_, Delay, _) -> Delay.

uncount(Pkts, S = #space{eliciting = E}) ->
    S#space{eliciting = E - length([x || {_, #pkt{kind = ack_eliciting}} <- Pkts])}.

cc_acked(Acked, Cc) ->
    lists:foldl(fun({_, #pkt{kind = ack_only}}, C) -> C;
                   ({_, #pkt{size = Size, time = T}}, C) -> falco_quic_cc:acked(Size, T, C)
                end, Cc, Acked).

infos(Pkts) ->
    [Info || {_, #pkt{info = Info}} <- Pkts].

%% A client resets its backoff only once it knows the server validated its
%% address (§6.2.1); a server always.
reset_backoff(L = #loss{peer_validated = true}) -> L#loss{pto_count = 0};
reset_backoff(L) -> L.

%% -- losses -------------------------------------------------------------------

%% The packets of S lost at Now (§6.1), in packet number order, and S
%% without them, with its loss_time for the earliest packet not yet lost.
%% Packets are sent in packet number order, so the first one not lost
%% ends the search: every later one is newer and closer to the largest
%% acknowledged.
detect(_Now, _Rtt, S = #space{largest_acked = undefined}) ->
    {[], S};
detect(Now, Rtt, S = #space{sent = Sent, largest_acked = Largest}) ->
    Delay = loss_delay(Rtt),
    {Lost, LossTime} = scan(gb_trees:next(gb_trees:iterator(Sent)), Largest, Now - Delay, Delay, []),
    S1 = uncount(Lost, S#space{sent = lists:foldl(fun({Pn, _}, T) -> gb_trees:delete(Pn, T) end,
                                                  Sent, Lost),
                               loss_time = LossTime}),
    {Lost, S1}.

loss_delay(Rtt) ->
    erlang:max(9 * erlang:max(falco_quic_rtt:latest(Rtt), falco_quic_rtt:smoothed(Rtt)) div 8,
               ?GRANULARITY).

scan({Pn, P = #pkt{time = T}, Iter}, Largest, LostBefore, Delay, Acc) when Pn =< Largest ->
    case T =< LostBefore orelse Largest >= Pn + ?PACKET_THRESHOLD of
        true -> scan(gb_trees:next(Iter), Largest, LostBefore, Delay, [{Pn, P} | Acc]);
        false -> {lists:reverse(Acc), T + Delay}
    end;
scan(_, _, _, _, Acc) ->
    {lists:reverse(Acc), undefined}.

%% Every loss reaches congestion control (Appendix B.8), then persistent
%% congestion is checked over the batch.
on_lost([], _, L) ->
    L;
on_lost(Lost, Now, L = #loss{cc = Cc0}) ->
    InFlight = [P || {_, P = #pkt{kind = K}} <- Lost, K =/= ack_only],
    Bytes = bytes(InFlight),
    Cc = case InFlight of
             [] -> Cc0;
             _ -> falco_quic_cc:lost(Bytes, lists:max([T || #pkt{time = T} <- InFlight]), Now, Cc0)
         end,
    persistent(Lost, L#loss{cc = Cc}).

bytes(Pkts) ->
    lists:foldl(fun(#pkt{size = Size}, N) -> Size + N end, 0, Pkts).

persistent(Lost, L = #loss{rtt = Rtt, max_ack_delay = Mad, cc = Cc}) ->
    case falco_quic_rtt:first_sample_at(Rtt) of
        undefined ->
            L;
        First ->
            case run(Lost, First, falco_quic_rtt:persistent_duration(Mad, Rtt), undefined, undefined) of
                true -> L#loss{cc = falco_quic_cc:persistent_congestion(Cc),
                               rtt = falco_quic_rtt:persistent_congestion(Rtt)};
                false -> L
            end
    end.

%% Whether Lost holds two ack-eliciting packets sent after the first RTT
%% sample, further apart than Duration, with every packet sent between
%% them lost too (each one's `prev' is the one before it in the batch).
run([], _, _, _, _) ->
    false;
run([{Pn, #pkt{prev = Prev, kind = K, time = T}} | Rest], First, Duration, PrevPn, Start0) ->
    Start1 = case Prev =:= PrevPn of
                 true -> Start0;
                 false -> undefined
             end,
    case K =:= ack_eliciting andalso T > First of
        true when Start1 =:= undefined -> run(Rest, First, Duration, Pn, T);
        true when T - Start1 > Duration -> true;
        _ -> run(Rest, First, Duration, Pn, Start1)
    end.

%% -- the timer ----------------------------------------------------------------

%% @doc When {@link timeout/2} has work, or `infinity': the earliest
%% time-threshold loss, else the PTO (§6.2.1), none while the server is
%% blocked by the anti-amplification limit (§6.2.2.1) or when nothing
%% ack-eliciting is in flight and the peer has validated our address.
-spec deadline(loss()) -> time() | infinity.
deadline(L) ->
    case loss_time(L) of
        {T, _} -> T;
        none -> pto_deadline(L)
    end.

pto_deadline(#loss{amp_limited = true}) ->
    infinity;
pto_deadline(L) ->
    case {ack_eliciting_in_flight(L), L#loss.peer_validated} of
        {0, true} -> infinity;
        {0, false} -> L#loss.now + backoff(falco_quic_rtt:pto_period(L#loss.rtt), L);
        _ -> case pto_space(L) of
                 {T, _} -> T;
                 none -> infinity
             end
    end.

%% The earliest loss_time of all spaces, with its space.
loss_time(L) ->
    earliest([{T, Sp} || Sp <- [initial, handshake, application],
                         #space{loss_time = T} <- [sp(Sp, L)], is_integer(T)]).

%% The earliest PTO of the spaces with ack-eliciting packets in flight,
%% with its space; Application only once the handshake is confirmed, with
%% the peer's max_ack_delay (§6.2.1).
pto_space(L = #loss{rtt = Rtt}) ->
    Period = falco_quic_rtt:pto_period(Rtt),
    earliest([{Last + backoff(Period + mad(Sp, L), L), Sp}
              || Sp <- pto_spaces(L), #space{last_eliciting = Last} <- [sp(Sp, L)],
                 is_integer(Last)]).

pto_spaces(L) ->
    [Sp || Sp <- spaces(L), #space{eliciting = E} <- [sp(Sp, L)], E > 0].

spaces(#loss{confirmed = true}) -> [initial, handshake, application];
spaces(_) -> [initial, handshake].

mad(application, #loss{max_ack_delay = Mad}) -> Mad;
mad(_, _) -> 0.

backoff(Period, #loss{pto_count = N}) ->
    Period bsl erlang:min(N, ?MAX_BACKOFF).

earliest([]) -> none;
earliest(Ts) -> lists:min(Ts).

%% @doc The timer passed at `Now': `{lost, Terms}' for packets found lost
%% by time threshold (already counted by congestion control), `{probe,
%% [{Space, N} | Others]}' for a PTO: N (2) ack-eliciting probe packets
%% must be sent in Space, new data or the oldest unacknowledged, else a
%% PING, and one in each other space listed (coalesced, §6.2.4); probes
%% are not blocked by the congestion window (§7.5). `none' if nothing was
%% due.
-spec timeout(time(), loss()) -> {event(), loss()}.
timeout(Now, L0) ->
    L = L0#loss{now = Now},
    case deadline(L0) of
        T when is_integer(T), T =< Now -> fire(Now, L);
        _ -> {none, L}
    end.

fire(Now, L) ->
    case loss_time(L) of
        {_, Space} ->
            {Lost, S} = detect(Now, L#loss.rtt, sp(Space, L)),
            {{lost, infos(Lost)}, on_lost(Lost, Now, store(Space, S, L))};
        none ->
            {{probe, probes(L)}, L#loss{pto_count = L#loss.pto_count + 1}}
    end.

probes(L) ->
    case pto_space(L) of
        {_, Space} -> [{Space, 2} | [{Sp, 1} || Sp <- pto_spaces(L), Sp =/= Space]];
        none when L#loss.handshake_keys -> [{handshake, 1}];
        none -> [{initial, 1}]
    end.

%% -- handshake progress -------------------------------------------------------

%% @doc The keys of `Space' were discarded (§6.4, RFC 9001 §4.9): its
%% packets leave bytes in flight, neither acknowledged nor lost, and the
%% PTO backoff restarts.
-spec discard(space(), loss()) -> loss().
discard(Space, L = #loss{cc = Cc}) ->
    case sp(Space, L) of
        discarded ->
            L;
        #space{sent = Sent} ->
            Bytes = bytes([P || P = #pkt{kind = K} <- gb_trees:values(Sent), K =/= ack_only]),
            store(Space, discarded, L#loss{cc = falco_quic_cc:discarded(Bytes, Cc), pto_count = 0})
    end.

%% @doc The handshake is confirmed (RFC 9001 §4.1.2): the Application space
%% gets a PTO and the ACK Delay is capped at max_ack_delay.
-spec handshake_confirmed(loss()) -> loss().
handshake_confirmed(L) ->
    L#loss{confirmed = true}.

%% @doc (Client) the server has validated our address (§6.2.2.1): a
%% Handshake packet was acknowledged or the handshake is confirmed.
-spec peer_validated(loss()) -> loss().
peer_validated(L) ->
    L#loss{peer_validated = true}.

%% @doc (Client) Handshake keys are available: an anti-deadlock probe
%% goes in a Handshake packet, not an Initial.
-spec handshake_keys(loss()) -> loss().
handshake_keys(L) ->
    L#loss{handshake_keys = true}.

%% @doc (Server) whether the anti-amplification limit (RFC 9000 §8.1)
%% stops us sending: no PTO is armed then. When a datagram lifts it, the
%% PTO is back, possibly already due (§6.2.2.1).
-spec amplification_limited(boolean(), loss()) -> loss().
amplification_limited(Limited, L) when is_boolean(Limited) ->
    L#loss{amp_limited = Limited}.

%% @doc The peer's max_ack_delay transport parameter, µs (default 25 ms).
-spec peer_max_ack_delay(non_neg_integer(), loss()) -> loss().
peer_max_ack_delay(Us, L) when is_integer(Us), Us >= 0 ->
    L#loss{max_ack_delay = Us}.

%% @doc Whether sending is limited by the application or flow control, so
%% acknowledgments do not grow the window (RFC 9002 §7.8).
-spec app_limited(boolean(), loss()) -> loss().
app_limited(Limited, L = #loss{cc = Cc}) ->
    L#loss{cc = falco_quic_cc:app_limited(Limited, Cc)}.

%% -- reading ------------------------------------------------------------------

%% @doc The RTT estimate.
-spec rtt(loss()) -> falco_quic_rtt:rtt().
rtt(#loss{rtt = Rtt}) ->
    Rtt.

%% @doc The congestion controller.
-spec cc(loss()) -> falco_quic_cc:cc().
cc(#loss{cc = Cc}) ->
    Cc.

%% @doc The number of PTOs since the last acknowledgment.
-spec pto_count(loss()) -> non_neg_integer().
pto_count(#loss{pto_count = N}) ->
    N.

%% @doc Whether an in-flight packet of `Size' bytes fits the congestion
%% window (probes and ACK-only packets need not ask).
-spec can_send(non_neg_integer(), loss()) -> boolean().
can_send(Size, #loss{cc = Cc}) ->
    falco_quic_cc:can_send(Size, Cc).

%% @doc The bytes in flight.
-spec in_flight(loss()) -> non_neg_integer().
in_flight(#loss{cc = Cc}) ->
    falco_quic_cc:in_flight(Cc).

%% @doc The ack-eliciting packets in flight, all spaces.
-spec ack_eliciting_in_flight(loss()) -> non_neg_integer().
ack_eliciting_in_flight(L) ->
    eliciting(L#loss.initial) + eliciting(L#loss.handshake) + eliciting(L#loss.application).

eliciting(#space{eliciting = E}) -> E;
eliciting(discarded) -> 0.

%% @doc The largest packet number the peer acknowledged in `Space' (for
%% packet number encoding, RFC 9000 §17.1), or `undefined'.
-spec largest_acked(space(), loss()) -> pn() | undefined.
largest_acked(Space, L) ->
    case sp(Space, L) of
        #space{largest_acked = Pn} -> Pn;
        discarded -> undefined
    end.

%% -- spaces -------------------------------------------------------------------

sp(initial, #loss{initial = S}) -> S;
sp(handshake, #loss{handshake = S}) -> S;
sp(application, #loss{application = S}) -> S.

store(initial, S, L) -> L#loss{initial = S};
store(handshake, S, L) -> L#loss{handshake = S};
store(application, S, L) -> L#loss{application = S}.
