%% A raw WebSocket client for the Common Test suites: the handshake over
%% falco_test_client (so a test sees the exact 101 or error response), then
%% frames in and out with falco_ws_frame (masked out, unmasked in: the
%% `client' role), including frames no real client would send. Bytes
%% received past a frame are kept per socket in the process dictionary.
-module(falco_test_ws_client).

-export([key/0, handshake_headers/0, connect/2, connect/3, connect_tls/3,
         send/3, send/4, send_raw/2, recv/1, recv/2, recv_until_close/2, closed/2]).

-define(C, falco_test_client).
-define(TIMEOUT, 5000).
-define(MASK, <<1, 2, 3, 4>>).

key() -> <<"dGhlIHNhbXBsZSBub25jZQ==">>.

handshake_headers() ->
    [<<"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ">>, key(),
     <<"\r\nSec-WebSocket-Version: 13\r\n">>].

%% Connects and sends the handshake for `Path' with `Extra' fields
%% (iodata, each line ending in CRLF); returns the socket and the response.
connect(Port, Path) ->
    connect(Port, Path, []).

connect(Port, Path, Extra) ->
    handshake(?C:connect(Port), Path, Extra).

connect_tls(Port, Path, Extra) ->
    handshake(?C:connect_tls(Port, [<<"http/1.1">>]), Path, Extra).

handshake(Sock, Path, Extra) ->
    ?C:send(Sock, [<<"GET ">>, Path, <<" HTTP/1.1\r\nHost: localhost\r\n">>,
                   handshake_headers(), Extra, <<"\r\n">>]),
    {ok, Resp} = ?C:recv_response(Sock, #{head => true}),
    put({?MODULE, Sock}, ?C:take_buffer(Sock)),
    {Sock, Resp}.

%% A masked frame from the client.
send(Sock, Op, Payload) ->
    send(Sock, Op, Payload, fin).

send(Sock, Op, Payload, Fin) ->
    send_raw(Sock, falco_ws_frame:encode_masked(Op, Payload, Fin, false, ?MASK)).

send_raw(Sock, Bytes) ->
    ?C:try_send(Sock, Bytes).

%% The next frame from the server: {Op, Payload} (`{Op, Payload, nofin}'
%% for a fragment, `{Op, Payload, rsv1}' for a compressed frame), or
%% {error, closed | timeout | Reason}.
recv(Sock) ->
    recv(Sock, ?TIMEOUT).

recv(Sock, Timeout) ->
    Deadline = erlang:monotonic_time(millisecond) + Timeout,
    recv_frame(Sock, get_buf(Sock), Deadline).

recv_frame(Sock, Buf, Deadline) ->
    case falco_ws_frame:parse(Buf, #{max_frame_size => infinity, rsv1 => true, role => client}) of
        {ok, {frame, Op, Fin, Rsv1, Payload}, Rest} ->
            put({?MODULE, Sock}, Rest),
            case {Fin, Rsv1} of
                {fin, false} -> {Op, Payload};
                {nofin, false} -> {Op, Payload, nofin};
                {_, true} -> {Op, Payload, rsv1}
            end;
        {more, _} ->
            Left = max(0, Deadline - erlang:monotonic_time(millisecond)),
            case (transport(Sock)):recv(Sock, 0, Left) of
                {ok, Data} -> recv_frame(Sock, <<Buf/binary, Data/binary>>, Deadline);
                {error, Reason} -> put({?MODULE, Sock}, Buf), {error, Reason}
            end;
        {error, Why} ->
            {error, {bad_frame, Why}}
    end.

%% Frames until the server's close frame: {Frames, {close, Code}} (Code
%% `none' for an empty close payload), or {Frames, {error, Reason}}.
recv_until_close(Sock, Timeout) ->
    recv_until_close(Sock, Timeout, []).

recv_until_close(Sock, Timeout, Acc) ->
    case recv(Sock, Timeout) of
        {close, <<Code:16, _/binary>>} -> {lists:reverse(Acc), {close, Code}};
        {close, <<>>} -> {lists:reverse(Acc), {close, none}};
        {error, _} = E -> {lists:reverse(Acc), E};
        Frame -> recv_until_close(Sock, Timeout, [Frame | Acc])
    end.

%% Whether the server closes the TCP connection within Timeout ms.
closed(Sock, Timeout) ->
    case (transport(Sock)):recv(Sock, 0, Timeout) of
        {error, closed} -> true;
        {error, econnreset} -> true;
        {ok, _} -> closed(Sock, Timeout);
        {error, timeout} -> false
    end.

get_buf(Sock) ->
    case get({?MODULE, Sock}) of
        undefined -> <<>>;
        B -> B
    end.

transport(Sock) when is_tuple(Sock), element(1, Sock) =:= sslsocket -> ssl;
transport(_) -> gen_tcp.
