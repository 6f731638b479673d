%% @doc NewReno congestion control for QUIC (RFC 9002 §7, Appendix B):
%% the congestion window and bytes in flight, in bytes. Pure; driven by
%% {@link falco_quic_loss}, which tells it of every in-flight packet sent,
%% acknowledged, lost or discarded, so no loss can bypass it (the
%% reference server's timer-found losses never reached its controller).
%%
%% The window starts at min(10 × max_datagram_size, max(14720, 2 ×
%% max_datagram_size)) (§7.2) and never goes below 2 × max_datagram_size.
%% Slow start grows it by the bytes acknowledged; congestion avoidance by
%% one datagram per window acknowledged (§7.3.3), counted exactly with
%% `acked' rather than by rounding per ACK. A loss starts a recovery
%% period (§7.3.2): the window halves once, and packets sent before the
%% period began neither grow nor shrink it again, so one reduction is made
%% per round trip. Persistent congestion (§7.6) collapses the window to
%% the minimum. The window does not grow while the sender is application
%% or flow-control limited (§7.8), which the caller says with
%% {@link app_limited/2}. ECN is not handled. The window never grows
%% past 2 MB (`?MAX_WINDOW'): what a connection has in flight, and holds
%% for retransmission, is bounded whatever a client acknowledges (a
%% client that acknowledged quickly and then went silent would otherwise
%% leave its connection holding as much as its window had grown to).
%%
%% Pacing (§7.7) is only arithmetic here: {@link pacing_interval/3} is the
%% gap between two packets of a size at 1.25 × window per smoothed RTT.
%%
%% @private internal to falco
-module(falco_quic_cc).

-export([new/1, sent/2, acked/3, lost/4, persistent_congestion/1, discarded/2,
         app_limited/2, window/1, in_flight/1, ssthresh/1, available/1, can_send/2,
         in_recovery/2, pacing_interval/3]).

-define(MAX_WINDOW, 2097152).

-record(cc, {mds :: pos_integer(),
             window :: pos_integer(),
             ssthresh = infinity :: pos_integer() | infinity,
             in_flight = 0 :: non_neg_integer(),
             recovery = undefined :: undefined | integer(),
             acked = 0 :: non_neg_integer(),
             app_limited = false :: boolean()}).
-opaque cc() :: #cc{}.
-export_type([cc/0]).

%% @doc A controller for datagrams of at most `MaxDatagramSize' bytes.
-spec new(pos_integer()) -> cc().
new(Mds) when is_integer(Mds), Mds > 0 ->
    #cc{mds = Mds, window = erlang:min(10 * Mds, erlang:max(14720, 2 * Mds))}.

%% @doc An in-flight packet of `Size' bytes was sent.
-spec sent(non_neg_integer(), cc()) -> cc().
sent(Size, C = #cc{in_flight = F}) ->
    C#cc{in_flight = F + Size}.

%% @doc An in-flight packet of `Size' bytes sent at `SentAt' was
%% acknowledged (Appendix B.5).
-spec acked(non_neg_integer(), integer(), cc()) -> cc().
acked(Size, SentAt, C0 = #cc{in_flight = F}) ->
    C = C0#cc{in_flight = erlang:max(F - Size, 0)},
    case in_recovery(SentAt, C) orelse C#cc.app_limited of
        true -> C;
        false -> grow(Size, C)
    end.

grow(Size, C = #cc{window = W, ssthresh = T}) when T =:= infinity; W < T ->
    C#cc{window = erlang:max(W, erlang:min(W + Size, ?MAX_WINDOW))};
grow(Size, C = #cc{window = W, acked = A0, mds = Mds}) ->
    case A0 + Size of
        A when A >= W -> C#cc{window = erlang:max(W, erlang:min(W + Mds, ?MAX_WINDOW)),
                              acked = A - W};
        A -> C#cc{acked = A}
    end.

%% @doc In-flight packets of `Bytes' bytes in all were lost, the last of
%% them sent at `LastSentAt'; `Now' starts a recovery period unless that
%% packet was sent within the current one (Appendix B.6, B.8).
-spec lost(non_neg_integer(), integer(), integer(), cc()) -> cc().
lost(Bytes, LastSentAt, Now, C0 = #cc{in_flight = F}) ->
    C = C0#cc{in_flight = erlang:max(F - Bytes, 0)},
    case in_recovery(LastSentAt, C) of
        true -> C;
        false -> reduce(Now, C)
    end.

reduce(Now, C = #cc{window = W, mds = Mds}) ->
    T = W div 2,
    C#cc{recovery = Now, ssthresh = T, window = erlang:max(T, 2 * Mds), acked = 0}.

%% @doc Persistent congestion was established (§7.6.2): the window drops
%% to the minimum and the recovery period ends.
-spec persistent_congestion(cc()) -> cc().
persistent_congestion(C = #cc{mds = Mds}) ->
    C#cc{window = 2 * Mds, recovery = undefined, acked = 0}.

%% @doc In-flight packets of `Bytes' bytes were discarded with their keys
%% (§6.4): out of bytes in flight, neither lost nor acknowledged.
-spec discarded(non_neg_integer(), cc()) -> cc().
discarded(Bytes, C = #cc{in_flight = F}) ->
    C#cc{in_flight = erlang:max(F - Bytes, 0)}.

%% @doc Whether the sender is application or flow-control limited, so that
%% acknowledgments do not grow the window (§7.8).
-spec app_limited(boolean(), cc()) -> cc().
app_limited(Limited, C) when is_boolean(Limited) ->
    C#cc{app_limited = Limited}.

%% @doc The congestion window, bytes.
-spec window(cc()) -> pos_integer().
window(#cc{window = W}) ->
    W.

%% @doc The bytes in flight.
-spec in_flight(cc()) -> non_neg_integer().
in_flight(#cc{in_flight = F}) ->
    F.

%% @doc The slow start threshold.
-spec ssthresh(cc()) -> pos_integer() | infinity.
ssthresh(#cc{ssthresh = T}) ->
    T.

%% @doc The bytes the window leaves for new in-flight packets.
-spec available(cc()) -> non_neg_integer().
available(#cc{window = W, in_flight = F}) ->
    erlang:max(W - F, 0).

%% @doc Whether an in-flight packet of `Size' bytes fits the window.
%% Packets of ACK frames only and PTO probes are not subject to it (§7).
-spec can_send(non_neg_integer(), cc()) -> boolean().
can_send(Size, #cc{window = W, in_flight = F}) ->
    F + Size =< W.

%% @doc Whether a packet sent at `SentAt' was sent within the current
%% recovery period (Appendix B.4).
-spec in_recovery(integer(), cc()) -> boolean().
in_recovery(_, #cc{recovery = undefined}) -> false;
in_recovery(SentAt, #cc{recovery = Start}) -> SentAt =< Start.

%% @doc The µs between packets of `Size' bytes when pacing at 1.25 ×
%% window per `SmoothedRtt' µs (§7.7).
-spec pacing_interval(non_neg_integer(), non_neg_integer(), cc()) -> non_neg_integer().
pacing_interval(Size, SmoothedRtt, #cc{window = W}) ->
    SmoothedRtt * Size * 4 div (5 * W).
