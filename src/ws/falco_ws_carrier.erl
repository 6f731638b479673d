%% @doc What carries a WebSocket session's bytes (RFC 6455 §5 frames, both
%% ways): the behaviour through which {@link falco_ws_conn} reads, writes
%% and ends its transport without knowing which one it is. A carrier is a
%% module and its state, `{Module, State}', threaded through the session:
%% <ul>
%% <li>{@link falco_ws_socket}: the connection's socket after the
%%     HTTP/1.1 101 (RFC 6455 §4);</li>
%% <li>`falco_http2_tunnel': an HTTP/2 stream after the 200 of an
%%     extended CONNECT (RFC 8441 §5), in the layer of HTTP/2, which this
%%     layer never calls by name; and an HTTP/3 stream after the same 200
%%     (RFC 9220), whose connection process (falco_http3_conn) speaks
%%     HTTP/2's stream messages to the stream's process.</li>
%% </ul>
%%
%% The session's loop is the same over every carrier: it waits in
%% `receive' for the carrier's input, the handler's messages and `sys'
%% messages at once, so a carrier's input is messages to the session's
%% process (a port's, or a connection process's). The callbacks, in the
%% order the loop uses them:
%% <ul>
%% <li>`poll/1': bytes already there, taken without waiting (the socket's
%%     passive `recv' with no wait), or `none': then the loop arms;</li>
%% <li>`arm/1': asks for the next input once (a socket in
%%     `{active, once}'; a tunnel's read credit topped up); arming an armed
%%     carrier does nothing;</li>
%% <li>`input/2': what a message in the mailbox means for the carrier:
%%     bytes (`fin' when the peer ended its side: no more input after
%%     them), the carrier's end, or `none' (not the carrier's message);</li>
%% <li>`gather/2': a frame large enough to be gathered read by read
%%     begins (`true') or is whole (`false'): a socket widens its read
%%     buffer meanwhile;</li>
%% <li>`send/2': writes bytes, returning once the carrier's backpressure
%%     allows (a peer that does not read blocks the session and then ends
%%     it: `{error, Reason}');</li>
%% <li>`close/3': ends the carrier after the last bytes, `close' (the
%%     peer is done) or `linger' (it may still send: its bytes are read and
%%     dropped for a while, so that our close frame is not lost to a reset,
%%     RFC 6455 §7.1.1);</li>
%% <li>`parent_exit/2': what the exit of the session's parent means: the
%%     listener stops (`shutdown': the peer gets 1001) or the carrier is
%%     gone (`closed').</li>
%% </ul>
%%
%% @private internal to falco
-module(falco_ws_carrier).

-export_type([carrier/0, input/0]).

%% A carrier: its module and that module's state.
-type carrier() :: {module(), term()}.

%% What a message means for a carrier.
-type input() :: {data, binary(), fin | nofin, term()} | {closed, term()} | none.

-callback poll(State :: term()) -> {data, binary(), term()} | none | {error, term()}.
-callback arm(State :: term()) -> {ok, term()} | {error, term()}.
-callback input(Msg :: term(), State :: term()) -> input().
-callback gather(boolean(), State :: term()) -> term().
-callback send(iodata(), State :: term()) -> {ok, term()} | {error, term()}.
-callback close(close | linger, Last :: iodata(), State :: term()) -> ok.
-callback parent_exit(Reason :: term(), State :: term()) -> shutdown | closed.
