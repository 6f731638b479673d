%% A raw WebSocket client for the Common Test suites: the handshake over
%% falco_test_client (so a test sees the exact 101 or error response), then
%% frames in and out with falco_ws_frame (masked out, unmasked in: the
%% `client' role), including frames no real client would send. Bytes
%% received past a frame are kept per socket in the process dictionary.
%%
%% A session runs on one of five carriers: `ws' (HTTP/1.1 over TCP),
%% `wss' (HTTP/1.1 over TLS, ALPN http/1.1), `h2c' and `h2' (an RFC 8441
%% tunnel, the extended CONNECT on HTTP/2 with prior knowledge or over TLS
%% with ALPN h2, falco_test_ws_tunnel) and `h3' (an RFC 9220 tunnel on
%% HTTP/3, opened by aioquic: falco_test_ws_tunnel_h3). connect/4 opens one
%% on any of them and returns a handle every other function takes, so a
%% case body written once runs on all five: over HTTP/2 the frames' bytes travel in
%% DATA frames (a send_raw/2 of up to 16 KB is one DATA frame), the
%% response is the 200 (or the refusal) of the extended CONNECT with
%% its fields as HTTP/1.1 responses have them, and the end of the stream
%% (END_STREAM, RST_STREAM or the connection's close) is what closed/2
%% and `{error, closed}' see.
-module(falco_test_ws_client).

-export([key/0, handshake_headers/0, connect/2, connect/3, connect_tls/3, connect/4,
         carriers/0, carrier_config/2, is_h2/1, listener_opts/1, open_status/1, close/1, close_all/0,
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

%% The five carriers, in the order suites run them.
carriers() ->
    [ws, wss, h2c, h2, h3].

%% A group's config for Carrier: `{carrier, Carrier}' added once the
%% carrier's tools are there (aioquic for h3; a skip, or a failure under
%% FALCO_REQUIRE_TOOLS=1, otherwise).
carrier_config(h3, Config) ->
    falco_test_tools:require(falco_test_ws_tunnel_h3:tools(), [{carrier, h3} | Config]);
carrier_config(Carrier, Config) ->
    [{carrier, Carrier} | Config].

%% Whether Carrier is an extended CONNECT's stream (RFC 8441, RFC 9220).
is_h2(Carrier) ->
    Carrier =:= h2c orelse Carrier =:= h2 orelse Carrier =:= h3.

%% Listener options that make a listener serve Carrier (merged over the
%% suite's own): TLS with the test certificate for wss and h2 (falco's TLS
%% listeners offer h2 and http/1.1 by ALPN; a cleartext one serves
%% HTTP/1.1 and h2c prior knowledge, both with RFC 8441 on by default).
listener_opts(Carrier) when Carrier =:= wss; Carrier =:= h2 ->
    #{transport => tls, tls_opts => falco_test_tls:server_opts()};
listener_opts(h3) ->
    %% an RSA certificate: aioquic refuses the ECDSA ones of
    %% falco_test_tls (NULL parameters in their signature algorithm)
    #{transport => tls, http3 => true,
      tls_opts => [O || O = {K, _} <- falco_test_tls13:ssl_server_opts(rsa), K =/= cacerts]};
listener_opts(_) ->
    #{}.

%% The status of an accepted handshake: 101 over HTTP/1.1 (RFC 6455
%% §4.2.2), 200 over HTTP/2 (RFC 8441 §5).
open_status(Carrier) ->
    case is_h2(Carrier) of
        true -> 200;
        false -> 101
    end.

%% A session on Carrier to `Path', with `Extra' request fields written as
%% HTTP/1.1 lines (iodata, each ending in CRLF; over HTTP/2 they become
%% fields, names lowercased, one per line, a Sec-WebSocket-Version among
%% them replacing the default 13). Returns the handle and the response.
connect(ws, Port, Path, Extra) ->
    connect(Port, Path, Extra);
connect(wss, Port, Path, Extra) ->
    Sock = ?C:connect_tls(Port, [<<"http/1.1">>]),
    {ok, <<"http/1.1">>} = ssl:negotiated_protocol(Sock),
    handshake(Sock, Path, Extra);
connect(Carrier, Port, Path, Extra) when Carrier =:= h2c; Carrier =:= h2; Carrier =:= h3 ->
    {T, Resp} = falco_test_ws_tunnel:open(Carrier, Port, Path, fields(Extra), #{}),
    put({?MODULE, T}, <<>>),
    opened(T),
    {T, Resp}.

%% What this process opened and has not closed, for close_all/0.
opened(Sock) ->
    put({?MODULE, opened}, [Sock | get_opened()]).

get_opened() ->
    case get({?MODULE, opened}) of
        undefined -> [];
        L -> L
    end.

%% Closes every session this process opened (an end_per_testcase's
%% first step: a listener then stops without waiting for them).
close_all() ->
    [close(Sock) || Sock <- get_opened()],
    erase({?MODULE, opened}),
    ok.

fields(Extra) ->
    Lines = binary:split(iolist_to_binary(Extra), <<"\r\n">>, [global, trim_all]),
    [begin
         [Name, Value] = binary:split(Line, <<":">>),
         {string:lowercase(string:trim(Name)), string:trim(Value)}
     end || Line <- Lines].

%% Ends the session's connection (over HTTP/2, the tunnel's connection).
close(Sock) ->
    put({?MODULE, opened}, lists:delete(Sock, get_opened())),
    erase({?MODULE, Sock}),
    erase({?MODULE, closed, Sock}),
    case Sock of
        {falco_test_ws_tunnel, _} -> falco_test_ws_tunnel:close(Sock);
        _ -> ?C:close(Sock)
    end.

handshake(Sock, Path, Extra) ->
    ?C:send(Sock, [<<"GET ">>, Path, <<" HTTP/1.1\r\nHost: localhost\r\n">>,
                   handshake_headers(), Extra, <<"\r\n">>]),
    {ok, Resp} = ?C:recv_response(Sock, #{head => true}),
    put({?MODULE, Sock}, ?C:take_buffer(Sock)),
    opened(Sock),
    {Sock, Resp}.

%% A masked frame from the client.
send(Sock, Op, Payload) ->
    send(Sock, Op, Payload, fin).

send(Sock, Op, Payload, Fin) ->
    send_raw(Sock, falco_ws_frame:encode_masked(Op, Payload, Fin, false, ?MASK)).

send_raw(T = {falco_test_ws_tunnel, _}, Bytes) ->
    falco_test_ws_tunnel:send(T, Bytes);
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
        {more, N} ->
            %% the pieces until at least N more bytes are here, joined once
            %% (a 16 MB frame comes in thousands of pieces over a tunnel)
            case more(Sock, N, [], Deadline) of
                {ok, Data} -> recv_frame(Sock, iolist_to_binary([Buf | Data]), Deadline);
                {error, Reason, Data} ->
                    put({?MODULE, Sock}, iolist_to_binary([Buf | Data])),
                    {error, Reason}
            end;
        {error, Why} ->
            {error, {bad_frame, Why}}
    end.

more(_Sock, N, Acc, _Deadline) when N =< 0 ->
    {ok, lists:reverse(Acc)};
more(Sock, N, Acc, Deadline) ->
    Left = max(0, Deadline - erlang:monotonic_time(millisecond)),
    case io_recv(Sock, Left) of
        {ok, Data} -> more(Sock, N - byte_size(Data), [Data | Acc], Deadline);
        {error, Reason} -> {error, Reason, lists:reverse(Acc)}
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
    case io_recv(Sock, Timeout) of
        {error, closed} -> true;
        {error, econnreset} -> true;
        {error, {reset, _}} -> true;
        {ok, _} -> closed(Sock, Timeout);
        {error, timeout} -> false
    end.

get_buf(Sock) ->
    case get({?MODULE, Sock}) of
        undefined -> <<>>;
        B -> B
    end.

%% The next bytes from the server: over a tunnel, a `tunnel_data' message
%% (taken out of the tunnel's window), `{error, closed}' once the stream
%% has ended (`{error, {reset, Code}}' for a RST_STREAM).
io_recv(T = {falco_test_ws_tunnel, _}, Timeout) ->
    case get({?MODULE, closed, T}) of
        undefined ->
            receive
                {tunnel_data, T, Data} ->
                    ok = falco_test_ws_tunnel:consumed(T, byte_size(Data)),
                    {ok, Data};
                {tunnel_closed, T, Why} ->
                    put({?MODULE, closed, T}, Why),
                    io_recv(T, 0)
            after Timeout ->
                {error, timeout}
            end;
        {reset, Code} ->
            {error, {reset, Code}};
        _ ->
            {error, closed}
    end;
io_recv(Sock, Timeout) ->
    (transport(Sock)):recv(Sock, 0, Timeout).

transport(Sock) when is_tuple(Sock), element(1, Sock) =:= sslsocket -> ssl;
transport(_) -> gen_tcp.
