%% @doc The HTTP/2 stream tunnel, a carrier of WebSocket sessions
%% ({@link falco_ws_carrier}): the DATA of a stream after the 200 of an
%% extended CONNECT (RFC 8441 §5) carries the session's bytes both ways.
%% Over HTTP/3 (RFC 9220) too: falco_http3_conn answers the same commands
%% with the same messages (grants, unanswered sends within
%% `h2_send_buffer', resets as `{h2_reset, _}'), so this module is the
%% carrier of both.
%% The session runs in the stream's process; the connection process
%% ({@link falco_http2_conn}) owns the socket and the stream's flow
%% control (RFC 9113 §5.2), so every read and write is a message.
%%
%% Reading with credit given in advance: the session grants the
%% connection up to ?CREDIT bytes (`{read, {grant, N}}'), and the
%% connection hands over DATA as it arrives, in one `{h2_data, Data, Fin}'
%% per socket read, without being asked again, until the credit is spent;
%% the session tops it up when it waits with less than half of it left.
%% What the connection hands over goes back to the stream window, so a
%% session that stops reading (a handler busy in a callback) stops the
%% client after its credit and a window, as when it asked read by read
%% (`{read, 65536}' before each wait, a message more per message).
%%
%% Writing without an answer per message: a send is a `{data, Data,
%% nofin, none}' command the connection answers with nothing, as long as
%% the bytes so sent since the last answered send stay within
%% `h2_send_buffer'; past that the send goes as a streamed response's does
%% ({@link falco_http2_stream:send_data/2}: pieces of `h2_send_buffer',
%% each waiting until written, which also means every piece before it was:
%% the stream's queue is in order). So a tunnel queues at most twice
%% `h2_send_buffer' in the connection, and a client that gives no window
%% back still blocks the session and, below `h2_send_min_rate', gets the
%% stream reset and the session `{error, send_timeout}'. An echo costs two
%% messages between the processes, where asking for each read and
%% waiting for each send cost four (docs/internals/websocket.md).
%%
%% Ends: the client's END_STREAM is the session's TCP close; ours goes on
%% the last DATA frame (`close/3'); a reset of the stream is
%% `{h2_reset, Reason}' from the connection (`{peer_reset, Code}' from the
%% client, `{stream_error, Code}' from us, `send_timeout'); the
%% connection's own end is its exit signal (the session traps exits).
%%
%% @private internal to falco
-module(falco_http2_tunnel).
-behaviour(falco_ws_carrier).

-export([new/1]).
-export([poll/1, arm/1, input/2, gather/2, send/2, close/3, parent_exit/2]).

%% The read credit the session keeps granted: the stream window grows to
%% it (falco_http2_recv), and a top-up is asked for only when less than
%% half of it is left.
-define(CREDIT, 65536).

-record(tunnel, {conn :: pid(),
                 id :: non_neg_integer(),
                 %% the most bytes sent without an answer
                 send_buffer :: pos_integer(),
                 %% the stream's state, for the sends that wait
                 stream :: falco_http2_stream:state(),
                 %% bytes the connection may still hand over unasked
                 credit = 0 :: non_neg_integer(),
                 %% bytes sent without an answer since the last answered send
                 unacked = 0 :: non_neg_integer()}).
-opaque state() :: #tunnel{}.
%% how a tunnel's stream was reset: by the client, or by us (a stream error)
-type reset() :: {peer_reset | stream_error, falco_http2_frame:error_code()}.
-export_type([state/0, reset/0]).

%% @doc The tunnel of the stream whose 200 was sent (the state
%% falco_http2_stream:init/4 ended with).
-spec new(falco_http2_stream:state()) -> state().
new(Stream) ->
    {Conn, Id, SendBuffer} = falco_http2_stream:endpoint(Stream),
    #tunnel{conn = Conn, id = Id, send_buffer = SendBuffer, stream = Stream}.

%% @private Input is only ever a message from the connection.
-spec poll(state()) -> none.
poll(_) ->
    none.

%% @private Tops the credit up when less than half of it is left.
-spec arm(state()) -> {ok, state()}.
arm(T = #tunnel{credit = Credit}) when Credit >= ?CREDIT div 2 ->
    {ok, T};
arm(T = #tunnel{conn = Conn, id = Id, credit = Credit}) ->
    Conn ! {h2_stream, Id, {read, {grant, ?CREDIT - Credit}}},
    {ok, T#tunnel{credit = ?CREDIT}}.

%% @private Bytes (with `fin' when the client ended the stream: the
%% tunnel's TCP close, RFC 8441 §5), the tunnel's end by a reset, or
%% `none' (not the tunnel's).
-spec input(term(), state()) -> falco_ws_carrier:input().
input({h2_data, Data, Fin}, T = #tunnel{credit = Credit}) ->
    Bin = iolist_to_binary(Data),
    {data, Bin, Fin, T#tunnel{credit = max(0, Credit - byte_size(Bin))}};
input({h2_trailers, _}, T) ->
    {data, <<>>, fin, T};
input({h2_reset, Reason}, _) ->
    {closed, reset(Reason)};
input(_, _) ->
    none.

reset({peer_reset, Code}) -> {peer_reset, Code};
reset(send_timeout) -> send_timeout;
reset(Code) -> {stream_error, Code}.

%% @private The connection hands over what came, whatever the frame.
-spec gather(boolean(), state()) -> state().
gather(_, T) ->
    T.

%% @private Sends without an answer within `h2_send_buffer' since the last
%% answered send; otherwise as a streamed response, waiting. A send that
%% fails because the stream was reset says how (the connection tells the
%% reset before it fails the send).
-spec send(iodata(), state()) -> {ok, state()} | {error, term()}.
send(Data, T = #tunnel{conn = Conn, id = Id, send_buffer = Max, unacked = Unacked}) ->
    case iolist_size(Data) of
        0 ->
            {ok, T};
        Size when Unacked + Size =< Max ->
            Conn ! {h2_stream, Id, {data, Data, nofin, none}},
            {ok, T#tunnel{unacked = Unacked + Size}};
        _ ->
            waited(falco_http2_stream:send_data(Data, T#tunnel.stream), T)
    end.

waited(ok, T) ->
    {ok, T#tunnel{unacked = 0}};
waited({error, closed}, _) ->
    receive {h2_reset, Reason} -> {error, reset(Reason)}
    after 0 -> {error, closed}
    end;
waited({error, _} = Error, _) ->
    Error.

%% @private The last bytes with END_STREAM, without waiting (RFC 8441 §5:
%% the stream's end is the tunnel's TCP close, in both cases).
-spec close(close | linger, iodata(), state()) -> ok.
close(_How, Last, #tunnel{conn = Conn, id = Id}) ->
    Conn ! {h2_stream, Id, {data, Last, fin, none}},
    ok.

%% @private The parent is the connection: it passes on the listener's
%% stop (`shutdown'); any other exit is the connection's own end.
-spec parent_exit(term(), state()) -> shutdown | closed.
parent_exit(shutdown, _) -> shutdown;
parent_exit({shutdown, _}, _) -> shutdown;
parent_exit(_, _) -> closed.
