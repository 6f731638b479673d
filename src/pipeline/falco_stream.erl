%% @doc The stream interface: what the shared request pipeline
%% ({@link falco_pipeline}) needs from a protocol to answer one request.
%%
%% HTTP/1.1 implements it in {@link falco_http1_stream}; an HTTP/2 stream
%% implements the same callbacks, so handlers, HEAD handling, Content-Length
%% and error replies are written once. A callback module receives its own
%% opaque state. Response fields arrive already checked and lowercased, with
%% Date and (for full replies) Content-Length set; framing (chunked, DATA
%% frames, connection management) is the protocol's business.
%%
%% The request-body state is part of the stream state, which the request
%% carries (`stream => {Module, State}'): a read returns the new state, and
%% {@link falco_req:read_body/1} the new request, which must be used for
%% the next read. No body state lives anywhere else (no process
%% dictionary), so nothing of one request outlives it.
%%
%% @private internal to falco
-module(falco_stream).

-type state() :: term().
-type headers() :: [{binary(), iodata()}].
-type body_result() :: {ok | more, binary(), state()}.
-export_type([state/0, headers/0, body_result/0]).

-export([reads/0, read_count/1, next_read/2, body_fits/2, check_body/2]).

%% The reads of one request body, counted, shared by every state of it.
-opaque reads() :: counters:counters_ref().
-export_type([reads/0]).

%% A complete response with its body (empty for HEAD, 204 and 304).
-callback send_response(Status :: 100..999, headers(), Body :: iodata(), state()) ->
    {ok, state()} | {error, term()}.
%% The head of a response whose body follows in send_data/2 calls.
-callback send_headers(Status :: 100..999, headers(), state()) ->
    {ok, state()} | {error, term()}.
%% A piece of a streamed body (empty pieces are allowed and send nothing).
-callback send_data(iodata(), state()) -> ok | {error, term()}.
%% The end of a streamed body, with trailer fields (may be []).
-callback send_end(headers(), state()) -> {ok, state()} | {error, term()}.
%% A response whose body is Length bytes of an open file from Offset.
-callback send_file(Status :: 100..999, headers(), file:fd(), Offset :: non_neg_integer(),
                    Length :: non_neg_integer(), state()) ->
    {ok, state()} | {error, term()}.
%% Reads request body: `all' (bounded by the listener's max_body) or up to
%% N bytes, with the state after the read. `{more, Data, S}' means more
%% remains. Raises `throw({falco_error, Reason})' on a limit, a timeout, a
%% framing error, or a read from a state a later read has replaced.
-callback read_body(all | pos_integer(), state()) -> body_result().
%% Hands the connection (HTTP/1.1: 101) or the stream (HTTP/2, RFC 8441:
%% 200) over to a WebSocket session: the response head is sent with these
%% fields, and the session runs once the pipeline returns.
-callback switch_protocols(101 | 200, headers(), Upgrade :: map(), state()) ->
    {ok, state()} | {error, term()}.
%% Trailer fields of a request body, once it has been read in full (from
%% the state the last read returned).
-callback trailers(state()) -> [{binary(), binary()}].

%% @doc The one `max_body' rule (RFC 9110 §15.5.14), wherever a body's
%% size becomes known: announced (Content-Length, before any handler; a
%% chunk's size, before its data is waited for), received (every read of
%% every protocol) or made (a request body's decoded size, falco_compress).
%% `Bytes' is what the body would then hold.
-spec body_fits(non_neg_integer(), non_neg_integer()) -> boolean().
body_fits(Bytes, Max) ->
    Bytes =< Max.

%% @doc {@link body_fits/2}, raised as the 413 of a body read when false.
-spec check_body(non_neg_integer(), non_neg_integer()) -> ok.
check_body(Bytes, Max) ->
    case body_fits(Bytes, Max) of
        true -> ok;
        false -> throw({falco_error, content_too_large})
    end.

%% @doc A new read counter, for a stream module's states to share.
-spec reads() -> reads().
reads() ->
    counters:new(1, []).

%% @doc The number of reads so far.
-spec read_count(reads()) -> non_neg_integer().
read_count(Reads) ->
    counters:get(Reads, 1).

%% @doc The one rule for every stream module: a body read is allowed only
%% from the state that the last read returned (`No' is the number of reads
%% there were when that state was made); returns the number the new state
%% gets. Otherwise it raises, the same on every protocol (the handler gets
%% a 500): a stale state would hand out bytes twice or, on HTTP/1.1, read
%% the socket from the wrong place.
-spec next_read(reads(), non_neg_integer()) -> pos_integer().
next_read(Reads, No) ->
    case counters:get(Reads, 1) of
        No ->
            ok = counters:add(Reads, 1, 1),
            No + 1;
        _ ->
            stale()
    end.

-spec stale() -> no_return().
stale() ->
    error({stale_request, "the request body was read from a request that a later read "
                          "replaced; use the request read_body returns"}).
