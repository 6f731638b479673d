%% @doc QUIC stream counts of one type, bidirectional or unidirectional
%% (RFC 9000 §4.6): how many streams the peer may open, granted again as
%% its streams close, and how many we may open. Pure; the caller keeps one
%% state per type.
%%
%% The peer may open streams up to the limit we advertised (our
%% initial_max_streams transport parameter, then our MAX_STREAMS); a
%% stream past it is STREAM_LIMIT_ERROR. Opening a stream opens every
%% lower one of its type (§3.2), so the count is the highest index plus
%% one. Credit comes back only as the peer's streams close, never all at
%% once at the start (§4.6, and the study's §11: stream exhaustion): the
%% new limit is the closed streams plus the initial limit, so no more than
%% that many are ever open, and it is sent once half of that has come
%% back, to spare a MAX_STREAMS per closed stream.
%%
%% Our own streams are limited by the peer's MAX_STREAMS (a smaller value
%% is ignored; one over 2^60 is FRAME_ENCODING_ERROR, §19.11), with
%% STREAMS_BLOCKED once per limit when we want one more.
%%
%% @private internal to falco
-module(falco_quic_stream_limit).

-export([new/2, peer_open/2, peer_closed/1, max_streams/1, open/1, peer_max_streams/2,
         streams_blocked/1, peer_opened/1, limit/1, local_opened/1]).

-define(MAX, 1 bsl 60).

-record(lim, {max :: non_neg_integer(),
              window :: non_neg_integer(),
              opened = 0 :: non_neg_integer(),
              closed = 0 :: non_neg_integer(),
              local_max :: non_neg_integer(),
              local_opened = 0 :: non_neg_integer(),
              blocked_at = undefined :: non_neg_integer() | undefined}).
-opaque limit() :: #lim{}.
-export_type([limit/0]).

%% @doc The state of one stream type: `Ours' is the limit we advertised
%% (initial_max_streams_bidi or _uni), `Peers' the peer's.
-spec new(non_neg_integer(), non_neg_integer()) -> limit().
new(Ours, Peers) ->
    #lim{max = Ours, window = Ours, local_max = erlang:min(Peers, ?MAX)}.

%% -- the peer's streams -------------------------------------------------------

%% @doc A frame for the peer's stream `StreamId' of this type arrived:
%% `{ok, New, L}' with the number of streams it opened (0 if it was open
%% already or closed), or STREAM_LIMIT_ERROR past our limit.
-spec peer_open(non_neg_integer(), limit()) ->
          {ok, non_neg_integer(), limit()} | {error, stream_limit_error}.
peer_open(StreamId, #lim{max = Max}) when StreamId bsr 2 >= Max ->
    {error, stream_limit_error};
peer_open(StreamId, L = #lim{opened = Opened}) ->
    case (StreamId bsr 2) + 1 of
        N when N > Opened -> {ok, N - Opened, L#lim{opened = N}};
        _ -> {ok, 0, L}
    end.

%% @doc One of the peer's streams of this type closed and its state was
%% released: its credit can be granted again.
-spec peer_closed(limit()) -> limit().
peer_closed(L = #lim{closed = C, opened = O}) when C < O ->
    L#lim{closed = C + 1};
peer_closed(L) ->
    L.

%% @doc A MAX_STREAMS to send, once half the initial limit has come back
%% from closed streams: the new limit, or `none'.
-spec max_streams(limit()) -> {non_neg_integer(), limit()} | none.
max_streams(L = #lim{max = Max, window = W, closed = C}) ->
    case erlang:min(C + W, ?MAX) of
        New when New > Max, 2 * (New - Max) >= W -> {New, L#lim{max = New}};
        _ -> none
    end.

%% -- our streams --------------------------------------------------------------

%% @doc Opens one of our streams of this type: its index (the stream ID is
%% `Index bsl 2' plus the type bits), or `blocked' at the peer's limit.
-spec open(limit()) -> {ok, non_neg_integer(), limit()} | blocked.
open(L = #lim{local_opened = N, local_max = Max}) when N < Max ->
    {ok, N, L#lim{local_opened = N + 1}};
open(_) ->
    blocked.

%% @doc The peer's MAX_STREAMS for this type.
-spec peer_max_streams(non_neg_integer(), limit()) -> {ok, limit()} | {error, frame_encoding_error}.
peer_max_streams(N, _) when N > ?MAX ->
    {error, frame_encoding_error};
peer_max_streams(N, L = #lim{local_max = Max}) when N > Max ->
    {ok, L#lim{local_max = N}};
peer_max_streams(_, L) ->
    {ok, L}.

%% @doc A STREAMS_BLOCKED to send when we want a stream the peer's limit
%% does not allow: the limit, once per limit, or `none'.
-spec streams_blocked(limit()) -> {non_neg_integer(), limit()} | none.
streams_blocked(L = #lim{local_opened = N, local_max = Max, blocked_at = At})
  when N >= Max, At =/= Max ->
    {Max, L#lim{blocked_at = Max}};
streams_blocked(_) ->
    none.

%% -- reading ------------------------------------------------------------------

%% @doc The peer's streams opened so far.
-spec peer_opened(limit()) -> non_neg_integer().
peer_opened(#lim{opened = O}) ->
    O.

%% @doc The limit we advertised last.
-spec limit(limit()) -> non_neg_integer().
limit(#lim{max = Max}) ->
    Max.

%% @doc Our streams opened so far.
-spec local_opened(limit()) -> non_neg_integer().
local_opened(#lim{local_opened = N}) ->
    N.
