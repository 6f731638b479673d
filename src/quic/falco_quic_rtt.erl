%% @doc A QUIC connection's round-trip time estimate (RFC 9002 §5): the
%% latest sample, the minimum, the smoothed RTT and its variation, all in
%% microseconds. Pure; {@link falco_quic_loss} feeds it one sample per ACK
%% that newly acknowledges its largest packet number, and reads the PTO
%% period and the persistent-congestion duration from it.
%%
%% Before the first sample the estimate is the initial RTT (333 ms, §6.2.2)
%% with half of it as variation; the first sample replaces both (§5.3).
%% The peer's reported ACK delay is subtracted only when what remains is
%% at least min_rtt (§5.3), so a peer that inflates its delay cannot pull
%% the estimate below what our own clock saw; the caller caps the delay at
%% the peer's max_ack_delay once the handshake is confirmed.
%%
%% @private internal to falco
-module(falco_quic_rtt).

-export([new/0, new/1, sample/4, has_sample/1, first_sample_at/1, latest/1, min/1,
         smoothed/1, variation/1, pto_period/1, persistent_duration/2,
         persistent_congestion/1]).

%% kInitialRtt (§6.2.2) and kGranularity (§6.1.2), in microseconds
-define(INITIAL_RTT, 333000).
-define(GRANULARITY, 1000).
%% kPersistentCongestionThreshold (§7.6.1)
-define(PC_THRESHOLD, 3).

-record(rtt, {latest = 0 :: non_neg_integer(),
              min = 0 :: non_neg_integer(),
              smoothed :: non_neg_integer(),
              var :: non_neg_integer(),
              first = undefined :: undefined | integer()}).
-opaque rtt() :: #rtt{}.
-export_type([rtt/0]).

%% @doc The estimate before any sample, from the 333 ms initial RTT.
-spec new() -> rtt().
new() ->
    new(?INITIAL_RTT).

%% @doc The estimate before any sample, from an initial RTT in µs (a
%% resumed connection's last smoothed RTT, §6.2.2).
-spec new(pos_integer()) -> rtt().
new(Initial) when is_integer(Initial), Initial > 0 ->
    #rtt{smoothed = Initial, var = Initial div 2}.

%% @doc Adds a sample taken at `Now': `Latest' is the time from sending the
%% largest newly acknowledged packet to its ACK, `AckDelay' the delay the
%% peer reported (already capped by the caller as §5.3 asks), both in µs.
-spec sample(non_neg_integer(), non_neg_integer(), integer(), rtt()) -> rtt().
sample(Latest, _AckDelay, Now, R = #rtt{first = undefined}) ->
    R#rtt{latest = Latest, min = Latest, smoothed = Latest, var = Latest div 2, first = Now};
sample(Latest, AckDelay, _Now, R = #rtt{min = Min0, smoothed = S0, var = V0}) ->
    Min = erlang:min(Min0, Latest),
    Adjusted = case Latest >= Min + AckDelay of
                   true -> Latest - AckDelay;
                   false -> Latest
               end,
    V = (3 * V0 + abs(S0 - Adjusted)) div 4,
    S = (7 * S0 + Adjusted) div 8,
    R#rtt{latest = Latest, min = Min, smoothed = S, var = V}.

%% @doc Whether a sample was taken yet.
-spec has_sample(rtt()) -> boolean().
has_sample(#rtt{first = First}) ->
    First =/= undefined.

%% @doc When the first sample was taken (persistent congestion counts only
%% packets sent after it, §7.6.2).
-spec first_sample_at(rtt()) -> undefined | integer().
first_sample_at(#rtt{first = First}) ->
    First.

%% @doc The latest sample, µs (0 before any).
-spec latest(rtt()) -> non_neg_integer().
latest(#rtt{latest = Latest}) ->
    Latest.

%% @doc The smallest sample, µs (0 before any).
-spec min(rtt()) -> non_neg_integer().
min(#rtt{min = Min}) ->
    Min.

%% @doc smoothed_rtt, µs.
-spec smoothed(rtt()) -> non_neg_integer().
smoothed(#rtt{smoothed = S}) ->
    S.

%% @doc rttvar, µs.
-spec variation(rtt()) -> non_neg_integer().
variation(#rtt{var = V}) ->
    V.

%% @doc The PTO period before backoff and without max_ack_delay (§6.2.1):
%% smoothed_rtt + max(4 × rttvar, kGranularity).
-spec pto_period(rtt()) -> pos_integer().
pto_period(#rtt{smoothed = S, var = V}) ->
    S + erlang:max(4 * V, ?GRANULARITY).

%% @doc The persistent congestion duration (§7.6.1) for the peer's
%% max_ack_delay in µs: (PTO period + max_ack_delay) × 3.
-spec persistent_duration(non_neg_integer(), rtt()) -> pos_integer().
persistent_duration(MaxAckDelay, R) when is_integer(MaxAckDelay) ->
    (pto_period(R) + MaxAckDelay) * ?PC_THRESHOLD.

%% @doc After persistent congestion, min_rtt restarts from the latest
%% sample (§5.2).
-spec persistent_congestion(rtt()) -> rtt().
persistent_congestion(R = #rtt{latest = Latest}) ->
    R#rtt{min = Latest}.
