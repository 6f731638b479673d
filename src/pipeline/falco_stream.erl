%% @doc The stream interface: what the shared request pipeline
%% ({@link falco_pipeline}) needs from a protocol to answer one request.
%%
%% HTTP/1.1 implements it in {@link falco_http1_stream}; an HTTP/2 stream
%% implements the same callbacks, so handlers, HEAD handling, Content-Length
%% and error replies are written once. A callback module receives its own
%% opaque state. Response fields arrive already checked and lowercased, with
%% Date and (for full replies) Content-Length set; framing (chunked, DATA
%% frames, connection management) is the protocol's business.
-module(falco_stream).

-type state() :: term().
-type headers() :: [{binary(), iodata()}].
-type body_result() :: {ok, binary()} | {more, binary()}.
-export_type([state/0, headers/0, body_result/0]).

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
%% N bytes. `{more, Data}' means more remains. Raises
%% `throw({falco_error, Reason})' on a limit, a timeout or a framing error.
-callback read_body(all | pos_integer(), state()) -> body_result().
%% Trailer fields of a request body, once it has been read in full.
-callback trailers(state()) -> [{binary(), binary()}].
