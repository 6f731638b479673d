%% @doc QUIC flow control of stream data, both ways (RFC 9000 §4.1-4.5):
%% the connection's and each stream's credit. Pure; the caller keeps one
%% connection state and one stream state per stream, and every function
%% that concerns a stream takes and returns both.
%%
%% Receiving: the peer may send up to what we granted (initially our
%% transport parameters). Data past a stream's or the connection's limit
%% is FLOW_CONTROL_ERROR (§4.1), a final size that changes or data past
%% it FINAL_SIZE_ERROR (§4.5); a RESET_STREAM's final size counts against
%% the connection as its data would have, and the bytes it abandons are
%% given back at once. As the application consumes data, more credit is
%% granted once half of a window is used (§4.2: a MAX_DATA or
%% MAX_STREAM_DATA per half window, not one per packet), up to the read
%% point plus the window; a stream whose final size is known gets no more
%% (§13.3). With a maximum window given, {@link max_data/3} and
%% {@link max_stream_data/3} double the window when a grant was used up
%% within two round trips (the window, not the peer, was the limit).
%%
%% Sending: the peer's MAX_DATA and MAX_STREAM_DATA only ever raise its
%% limits (a smaller one is ignored, §4.1); {@link allowance/2} is what
%% may be sent on a stream now, and when it is nothing while data waits,
%% {@link data_blocked/1} and {@link stream_data_blocked/1} say DATA_BLOCKED
%% or STREAM_DATA_BLOCKED once per limit (§4.1, §19.12-19.13).
%%
%% Stream counts (MAX_STREAMS) are {@link falco_quic_stream_limit}'s.
%%
%% @private internal to falco
-module(falco_quic_flow).

-export([new_conn/2, new_conn/3, new_stream/2, new_stream/3, recv/5, reset/3, consumed/3,
         max_data/1, max_data/3, max_stream_data/1, max_stream_data/3, allowance/2, sent/3, peer_max_data/2, peer_max_stream_data/2,
         data_blocked/1, stream_data_blocked/1, received/1, final_size/1, sent_bytes/1,
         recv_max/1, send_max/1]).

-record(half, {recv_max :: non_neg_integer(),
               window :: non_neg_integer(),
               received = 0 :: non_neg_integer(),
               consumed = 0 :: non_neg_integer(),
               final = undefined :: non_neg_integer() | undefined,
               send_max :: non_neg_integer(),
               sent = 0 :: non_neg_integer(),
               blocked_at = undefined :: non_neg_integer() | undefined,
               max_window :: non_neg_integer(),
               granted_at = undefined :: integer() | undefined}).
%% the connection's and a stream's state have the same shape
-opaque conn() :: #half{}.
-opaque stream() :: #half{}.
-export_type([conn/0, stream/0]).

-type error() :: flow_control_error | final_size_error.

%% @doc The connection's state: `Window' is our initial_max_data, `SendMax'
%% the peer's.
-spec new_conn(non_neg_integer(), non_neg_integer()) -> conn().
new_conn(Window, SendMax) ->
    new_conn(Window, SendMax, Window).

%% @doc The connection's state with a window that may grow up to
%% `MaxWindow' (see {@link max_data/3}).
-spec new_conn(non_neg_integer(), non_neg_integer(), non_neg_integer()) -> conn().
new_conn(Window, SendMax, MaxWindow) ->
    #half{recv_max = Window, window = Window, send_max = SendMax,
          max_window = erlang:max(MaxWindow, Window)}.

%% @doc A stream's state: `Window' is our initial_max_stream_data for its
%% kind (bidi_local, bidi_remote or uni), `SendMax' the peer's for it (0
%% for a stream we only receive on).
-spec new_stream(non_neg_integer(), non_neg_integer()) -> stream().
new_stream(Window, SendMax) ->
    new_stream(Window, SendMax, Window).

%% @doc A stream's state with a window that may grow up to `MaxWindow'.
-spec new_stream(non_neg_integer(), non_neg_integer(), non_neg_integer()) -> stream().
new_stream(Window, SendMax, MaxWindow) ->
    #half{recv_max = Window, window = Window, send_max = SendMax,
          max_window = erlang:max(MaxWindow, Window)}.

%% -- receiving ----------------------------------------------------------------

%% @doc A STREAM frame of `Len' bytes at `Offset', `fin' if it carries the
%% FIN bit, arrived on stream `S' (§4.1, §4.5).
-spec recv(non_neg_integer(), non_neg_integer(), fin | nofin, stream(), conn()) ->
          {ok, stream(), conn()} | {error, error()}.
recv(Offset, Len, Fin, S, C) ->
    End = Offset + Len,
    case final_ok(End, Fin, S) of
        true -> credit(End, final(Fin, End, S), C);
        false -> {error, final_size_error}
    end.

%% §4.5: no data past a known final size, no other final size, and no
%% final size below the data already received
final_ok(End, fin, #half{final = undefined, received = R}) -> End >= R;
final_ok(End, fin, #half{final = F}) -> End =:= F;
final_ok(_, nofin, #half{final = undefined}) -> true;
final_ok(End, nofin, #half{final = F}) -> End =< F.

final(fin, End, S) -> S#half{final = End};
final(nofin, _, S) -> S.

%% Data up to End counts against the stream's and the connection's limits.
credit(End, #half{recv_max = Max}, _) when End > Max ->
    {error, flow_control_error};
credit(End, S = #half{received = R}, C = #half{received = CR, recv_max = CMax}) ->
    case CR + erlang:max(End - R, 0) of
        Total when Total > CMax -> {error, flow_control_error};
        Total -> {ok, S#half{received = erlang:max(End, R)}, C#half{received = Total}}
    end.

%% @doc A RESET_STREAM with `Final' as the final size arrived on stream
%% `S': checked as a FIN at that size would be, and the bytes the
%% application will now never read are given back to the connection.
-spec reset(non_neg_integer(), stream(), conn()) -> {ok, stream(), conn()} | {error, error()}.
reset(Final, S0, C0) ->
    case final_ok(Final, fin, S0) of
        false ->
            {error, final_size_error};
        true ->
            case credit(Final, S0#half{final = Final}, C0) of
                {ok, S, C = #half{consumed = CC}} ->
                    {ok, S#half{consumed = Final}, C#half{consumed = CC + Final - S#half.consumed}};
                Error ->
                    Error
            end
    end.

%% @doc The application consumed `N' more bytes of stream `S' (read them,
%% or they were discarded): credit to give back.
-spec consumed(non_neg_integer(), stream(), conn()) -> {stream(), conn()}.
consumed(N0, S = #half{consumed = SC, received = R}, C = #half{consumed = CC}) ->
    N = erlang:min(N0, R - SC),
    {S#half{consumed = SC + N}, C#half{consumed = CC + N}}.

%% @doc A MAX_DATA to send, once half the connection's window is used: the
%% new limit, or `none'.
-spec max_data(conn()) -> {non_neg_integer(), conn()} | none.
max_data(C) ->
    grant(C).

%% @doc A MAX_STREAM_DATA to send for stream `S', as {@link max_data/1};
%% `none' once its final size is known.
-spec max_stream_data(stream()) -> {non_neg_integer(), stream()} | none.
max_stream_data(#half{final = F}) when F =/= undefined ->
    none;
max_stream_data(S) ->
    grant(S).

%% @doc {@link max_data/1} at `Now' with the smoothed RTT in µs: when
%% the previous grant was used up within two round trips, the window is
%% what limits the peer, and it doubles (up to the maximum given at
%% creation) before this grant.
-spec max_data(integer(), non_neg_integer(), conn()) -> {non_neg_integer(), conn()} | none.
max_data(Now, Srtt, C) ->
    grant(Now, Srtt, C).

%% @doc {@link max_stream_data/1} with the window growth of
%% {@link max_data/3}.
-spec max_stream_data(integer(), non_neg_integer(), stream()) ->
          {non_neg_integer(), stream()} | none.
max_stream_data(_, _, #half{final = F}) when F =/= undefined ->
    none;
max_stream_data(Now, Srtt, S) ->
    grant(Now, Srtt, S).

grant(H) ->
    case due(H) of
        true -> issue(H);
        false -> none
    end.

grant(Now, Srtt, H0) ->
    case due(H0) of
        true ->
            H = grow(Now, Srtt, H0),
            issue(H#half{granted_at = Now});
        false ->
            none
    end.

%% §4.2: once half the window is consumed
due(#half{recv_max = Max, consumed = Used, window = W}) ->
    W > 0 andalso 2 * (Max - Used) =< W.

issue(H = #half{consumed = Used, window = W}) ->
    New = Used + W,
    {New, H#half{recv_max = New}}.

grow(Now, Srtt, H = #half{granted_at = At, window = W, max_window = Max})
  when is_integer(At), Now - At < 2 * Srtt, W < Max ->
    H#half{window = erlang:min(2 * W, Max)};
grow(_, _, H) ->
    H.

%% -- sending ------------------------------------------------------------------

%% @doc The bytes that may be sent on stream `S' now.
-spec allowance(stream(), conn()) -> non_neg_integer().
allowance(#half{send_max = SMax, sent = SSent}, #half{send_max = CMax, sent = CSent}) ->
    erlang:max(erlang:min(SMax - SSent, CMax - CSent), 0).

%% @doc `N' new bytes (beyond the stream's highest offset sent) went out on
%% stream `S'; retransmissions do not count.
-spec sent(non_neg_integer(), stream(), conn()) -> {stream(), conn()}.
sent(N, S = #half{sent = SSent}, C = #half{sent = CSent}) ->
    {S#half{sent = SSent + N}, C#half{sent = CSent + N}}.

%% @doc The peer's MAX_DATA: the connection's send limit, if higher.
-spec peer_max_data(non_neg_integer(), conn()) -> conn().
peer_max_data(Max, C) ->
    raise(Max, C).

%% @doc The peer's MAX_STREAM_DATA for stream `S', if higher.
-spec peer_max_stream_data(non_neg_integer(), stream()) -> stream().
peer_max_stream_data(Max, S) ->
    raise(Max, S).

raise(Max, H = #half{send_max = Old}) when Max > Old -> H#half{send_max = Max};
raise(_, H) -> H.

%% @doc A DATA_BLOCKED to send: the connection's send limit when all of it
%% is used and it was not reported yet, else `none'. Ask only with data
%% waiting.
-spec data_blocked(conn()) -> {non_neg_integer(), conn()} | none.
data_blocked(C) ->
    blocked(C).

%% @doc A STREAM_DATA_BLOCKED to send for stream `S', as
%% {@link data_blocked/1}.
-spec stream_data_blocked(stream()) -> {non_neg_integer(), stream()} | none.
stream_data_blocked(S) ->
    blocked(S).

blocked(H = #half{send_max = Max, sent = Sent, blocked_at = At}) when Sent >= Max, At =/= Max ->
    {Max, H#half{blocked_at = Max}};
blocked(_) ->
    none.

%% -- reading ------------------------------------------------------------------

%% @doc The highest offset received (a stream), or the sum of them (the
%% connection).
-spec received(stream() | conn()) -> non_neg_integer().
received(#half{received = R}) ->
    R.

%% @doc The stream's final size, once known.
-spec final_size(stream()) -> non_neg_integer() | undefined.
final_size(#half{final = F}) ->
    F.

%% @doc The bytes sent (new data only).
-spec sent_bytes(stream() | conn()) -> non_neg_integer().
sent_bytes(#half{sent = S}) ->
    S.

%% @doc The limit we granted the peer.
-spec recv_max(stream() | conn()) -> non_neg_integer().
recv_max(#half{recv_max = M}) ->
    M.

%% @doc The peer's limit on our sending.
-spec send_max(stream() | conn()) -> non_neg_integer().
send_max(#half{send_max = M}) ->
    M.
