%% @doc The packets we received in one QUIC packet number space and the
%% ACK frames that report them (RFC 9000 §13.2, §19.3): duplicate
%% detection, when an ACK must go, and its contents. Pure; times are
%% integers of microseconds from the caller's clock, and the caller sends
%% the ACK by {@link deadline/1}.
%%
%% Received packet numbers are kept as ranges, highest first, so the
%% common in-order packet touches only the head of the list. Their number
%% is bounded (`max_ranges', 64): past it the oldest range is dropped and
%% everything up to it counts as a duplicate from then on, the "minimum
%% packet number" of §12.3 and §13.2.3, since a receiver must not accept
%% a packet it can no longer tell apart. When an ACK of ours is itself
%% acknowledged, everything up to its Largest Acknowledged is forgotten
%% the same way (§13.2.4, {@link acked/2}). The largest packet number
%% received is kept even then, for packet number decoding (§17.1).
%%
%% An ACK is due at once for an ack-eliciting Initial or Handshake packet
%% (§13.2.1), for the second ack-eliciting packet since the last ACK
%% (§13.2.2), and for an ack-eliciting packet that arrives out of order:
%% below the largest ack-eliciting one seen, or above it with a gap in
%% between (§13.2.1). Otherwise an ack-eliciting packet must be
%% acknowledged within our max_ack_delay; packets that are not
%% ack-eliciting never make one due. The ACK Delay is the time since the
%% largest packet arrived, in the exponent we advertised (§13.2.5, §18.2).
%%
%% {@link to_wire/1} and {@link from_wire/3} convert ranges to and from
%% the frame's First ACK Range and Gap/Length pairs (§19.3.1).
%%
%% @private internal to falco
-module(falco_quic_ack).

-export([new/1, new/2, received/4, deadline/1, due/2, pending/1, largest/1, ranges/1,
         frame/4, sent/1, acked/2, to_wire/1, from_wire/3, delay/2]).

-type pn() :: non_neg_integer().
-type time() :: integer().
-type range() :: {pn(), pn()}.
-type frame() :: {Largest :: pn(), AckDelay :: non_neg_integer(), [range(), ...]}.
-export_type([range/0, frame/0]).

-define(MAX_RANGES, 64).
%% our max_ack_delay (RFC 9000 §18.2's default) and the §13.2.2 threshold
-define(MAX_ACK_DELAY, 25000).
-define(THRESHOLD, 2).

-record(ack, {ranges = [] :: [range()],
              count = 0 :: non_neg_integer(),
              floor = 0 :: pn(),
              largest = undefined :: pn() | undefined,
              largest_at = 0 :: time(),
              largest_eliciting = undefined :: pn() | undefined,
              unacked = 0 :: non_neg_integer(),
              pending = false :: boolean(),
              deadline = infinity :: time() | infinity,
              immediate :: boolean(),
              max_delay :: non_neg_integer(),
              threshold :: pos_integer(),
              max_ranges :: pos_integer()}).
-opaque ack() :: #ack{}.
-export_type([ack/0]).

-type opts() :: #{max_ack_delay => non_neg_integer(), threshold => pos_integer(),
                  max_ranges => pos_integer()}.

%% @doc The state of a space with the defaults.
-spec new(initial | handshake | application) -> ack().
new(Space) ->
    new(Space, #{}).

%% @doc The state of a space: `max_ack_delay' is ours in µs (25 ms; what
%% the transport parameter says), `threshold' the ack-eliciting packets
%% that make an ACK due (2), `max_ranges' the ranges remembered (64).
-spec new(initial | handshake | application, opts()) -> ack().
new(Space, Opts) ->
    #ack{immediate = Space =/= application,
         max_delay = maps:get(max_ack_delay, Opts, ?MAX_ACK_DELAY),
         threshold = maps:get(threshold, Opts, ?THRESHOLD),
         max_ranges = maps:get(max_ranges, Opts, ?MAX_RANGES)}.

%% -- receiving ----------------------------------------------------------------

%% @doc Packet `Pn' was received (and authenticated) at `Now'; whether it
%% held an ack-eliciting frame. `duplicate': it, or one we can no longer
%% tell from it, was received before, and the caller must drop it unread
%% (RFC 9000 §12.3).
-spec received(pn(), boolean(), time(), ack()) -> {ok, ack()} | duplicate.
received(Pn, _, _, #ack{floor = Floor}) when Pn < Floor ->
    duplicate;
received(Pn, Eliciting, Now, A = #ack{ranges = Ranges0, count = Count}) ->
    case insert(Pn, Ranges0) of
        duplicate ->
            duplicate;
        {Ranges, Delta} ->
            A1 = bound(A#ack{ranges = Ranges, count = Count + Delta, pending = true}),
            {ok, elicited(Pn, Eliciting, Now, largest(Pn, Now, A1))}
    end.

%% Pn into the ranges, highest first: the ranges and the change in their
%% number, or duplicate.
insert(Pn, []) ->
    {[{Pn, Pn}], 1};
insert(Pn, [{Lo, Hi} | Rest]) when Pn > Hi + 1 ->
    {[{Pn, Pn}, {Lo, Hi} | Rest], 1};
insert(Pn, [{Lo, Hi} | Rest]) when Pn =:= Hi + 1 ->
    {[{Lo, Pn} | Rest], 0};
insert(Pn, [{Lo, _} | _]) when Pn >= Lo ->
    duplicate;
insert(Pn, [{Lo, Hi} | Rest]) when Pn =:= Lo - 1 ->
    case Rest of
        [{Lo2, Hi2} | Rest2] when Hi2 =:= Pn - 1 -> {[{Lo2, Hi} | Rest2], -1};
        _ -> {[{Pn, Hi} | Rest], 0}
    end;
insert(Pn, [Range | Rest]) ->
    case insert(Pn, Rest) of
        duplicate -> duplicate;
        {Ranges, Delta} -> {[Range | Ranges], Delta}
    end.

%% Past max_ranges the oldest range goes, and the floor rises above it.
bound(A = #ack{count = Count, max_ranges = Max, ranges = Ranges}) when Count > Max ->
    {Kept, [{_, Hi}]} = lists:split(Count - 1, Ranges),
    A#ack{ranges = Kept, count = Count - 1, floor = Hi + 1};
bound(A) ->
    A.

largest(Pn, Now, A = #ack{largest = L}) when L =:= undefined; Pn > L ->
    A#ack{largest = Pn, largest_at = Now};
largest(_, _, A) ->
    A.

elicited(_, false, _, A) ->
    A;
elicited(Pn, true, Now, A = #ack{unacked = U0, largest_eliciting = LE}) ->
    U = U0 + 1,
    A1 = A#ack{unacked = U, largest_eliciting = max_pn(Pn, LE)},
    case A#ack.immediate orelse U >= A#ack.threshold orelse out_of_order(Pn, LE, A) of
        true -> A1#ack{deadline = Now};
        false -> A1#ack{deadline = erlang:min(A#ack.deadline, Now + A#ack.max_delay)}
    end.

max_pn(Pn, undefined) -> Pn;
max_pn(Pn, LE) -> erlang:max(Pn, LE).

%% §13.2.1: below the largest ack-eliciting packet, or above it with
%% packets missing in between (the range now holding Pn starts above it)
out_of_order(_, undefined, _) ->
    false;
out_of_order(Pn, LE, _) when Pn < LE ->
    true;
out_of_order(Pn, LE, #ack{ranges = Ranges}) ->
    range_low(Pn, Ranges) > LE + 1.

range_low(Pn, [{Lo, Hi} | _]) when Pn >= Lo, Pn =< Hi -> Lo;
range_low(Pn, [_ | Rest]) -> range_low(Pn, Rest).

%% -- sending ------------------------------------------------------------------

%% @doc When an ACK must be sent at the latest, or `infinity'; a time not
%% after the packet's arrival means at once (after the rest of the
%% datagrams at hand, §13.2.2 allows that).
-spec deadline(ack()) -> time() | infinity.
deadline(#ack{deadline = D}) ->
    D.

%% @doc Whether an ACK must be sent at `Now'.
-spec due(time(), ack()) -> boolean().
due(Now, #ack{deadline = D}) ->
    D =/= infinity andalso D =< Now.

%% @doc Whether a packet arrived since the last ACK sent: a packet going
%% out anyway should carry an ACK (§13.2.1).
-spec pending(ack()) -> boolean().
pending(#ack{pending = P}) ->
    P.

%% @doc The largest packet number received, for decoding packet numbers
%% (RFC 9000 §17.1, Appendix A.3), or `undefined'.
-spec largest(ack()) -> pn() | undefined.
largest(#ack{largest = L}) ->
    L.

%% @doc The ranges remembered, highest first.
-spec ranges(ack()) -> [range()].
ranges(#ack{ranges = Ranges}) ->
    Ranges.

%% @doc The ACK frame to send at `Now': the largest received, the ACK
%% Delay scaled by our `Exponent' (ack_delay_exponent, 3 by default), and
%% at most `MaxRanges' ranges, the newest (§13.2.3); `none' if nothing is
%% remembered.
-spec frame(time(), 0..20, pos_integer(), ack()) -> frame() | none.
frame(_, _, _, #ack{ranges = []}) ->
    none;
frame(Now, Exponent, MaxRanges, #ack{ranges = Ranges = [{_, Hi} | _], largest_at = At}) ->
    {Hi, erlang:max(Now - At, 0) bsr Exponent, lists:sublist(Ranges, MaxRanges)}.

%% @doc An ACK frame from {@link frame/4} was sent: nothing is due until
%% the next ack-eliciting packet. Keep its Largest with the packet, to
%% give to {@link acked/2} when that packet is acknowledged.
-spec sent(ack()) -> ack().
sent(A) ->
    A#ack{unacked = 0, pending = false, deadline = infinity}.

%% @doc A packet of ours that carried an ACK frame with Largest
%% Acknowledged `Largest' was acknowledged: packets up to it need not be
%% acknowledged again and are duplicates from now on (§13.2.4).
-spec acked(pn(), ack()) -> ack().
acked(Largest, A = #ack{floor = Floor}) when Largest < Floor ->
    A;
acked(Largest, A = #ack{ranges = Ranges0}) ->
    Ranges = forget(Largest, Ranges0),
    A#ack{ranges = Ranges, count = length(Ranges), floor = Largest + 1}.

forget(_, []) -> [];
forget(Largest, [{_, Hi} | _]) when Hi =< Largest -> [];
forget(Largest, [{Lo, Hi} | _]) when Lo =< Largest -> [{Largest + 1, Hi}];
forget(Largest, [Range | Rest]) -> [Range | forget(Largest, Rest)].

%% -- the wire -----------------------------------------------------------------

%% @doc Ranges (highest first) as an ACK frame's fields (§19.3.1): Largest
%% Acknowledged, First ACK Range, and a Gap and ACK Range Length for each
%% further range.
-spec to_wire([range(), ...]) -> {pn(), non_neg_integer(), [{non_neg_integer(), non_neg_integer()}]}.
to_wire([{Lo, Hi} | Rest]) ->
    {Hi, Hi - Lo, gaps(Lo, Rest)}.

gaps(_, []) -> [];
gaps(Below, [{Lo, Hi} | Rest]) -> [{Below - Hi - 2, Hi - Lo} | gaps(Lo, Rest)].

%% @doc An ACK frame's fields as ranges, highest first;
%% `frame_encoding_error' if one would go below packet number 0
%% (§19.3.1).
-spec from_wire(non_neg_integer(), non_neg_integer(), [{non_neg_integer(), non_neg_integer()}]) ->
          {ok, [range(), ...]} | {error, frame_encoding_error}.
from_wire(Largest, First, Gaps) when First =< Largest ->
    ranges(Largest - First, Gaps, [{Largest - First, Largest}]);
from_wire(_, _, _) ->
    {error, frame_encoding_error}.

ranges(_, [], Acc) ->
    {ok, lists:reverse(Acc)};
ranges(Below, [{Gap, Len} | Rest], Acc) ->
    Hi = Below - Gap - 2,
    case Hi - Len of
        Lo when Lo >= 0 -> ranges(Lo, Rest, [{Lo, Hi} | Acc]);
        _ -> {error, frame_encoding_error}
    end.

%% @doc An ACK Delay field in µs, for the exponent its sender advertised.
-spec delay(non_neg_integer(), 0..20) -> non_neg_integer().
delay(Field, Exponent) ->
    Field bsl Exponent.
