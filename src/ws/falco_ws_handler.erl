%% @doc The WebSocket handler behaviour.
%%
%% A WebSocket starts as an ordinary request: routing, middleware, auth,
%% cookies and origin checks run first, then the route's handler decides
%% to upgrade by returning
%% ```
%% {websocket, Module, State, Opts}
%% '''
%% (or any HTTP response to refuse). falco checks the handshake (a request
%% that is not one gets 400 or 426, see `falco_ws_handshake'),
%% answers 101 (HTTP/1.1) or 200 (HTTP/2, RFC 8441), and from then on the
%% connection (or the HTTP/2 stream) runs `Module''s callbacks, in one
%% process:
%% <ul>
%% <li>`init(State)' (optional): called once the handshake is answered;</li>
%% <li>`handle_in({text | binary, Data}, State)': one whole message
%%     (fragments are joined, compressed ones inflated, text is valid
%%     UTF-8);</li>
%% <li>`handle_info(Msg, State)' (optional): any other Erlang message sent
%%     to the process;</li>
%% <li>`terminate(Reason, State)' (optional): the session is over; the
%%     return value is ignored.</li>
%% </ul>
%% Each of `init', `handle_in' and `handle_info' returns
%% <ul>
%% <li>`{ok, State}', or `{ok, State, hibernate}';</li>
%% <li>`{reply, Frames, State}' (or `..., hibernate}'): sends `Frames', one
%%     frame or a list: `{text, iodata()}', `{binary, iodata()}',
%%     `{ping, iodata()}', `{close, Code, Reason}' (Code 1000-1003,
%%     1007-1011 or 3000-4999), or `close' (1000);</li>
%% <li>`{stop, State}': closes with 1000.</li>
%% </ul>
%% Pings are answered by falco; pongs and pings are not passed on.
%% `Reason' in `terminate' is `normal' (closed by us), `{remote, Code,
%% Text}' or `{remote, none}' (closed by the peer), `{error, closed}' (the
%% connection dropped without a close frame; over HTTP/2 also the client's
%% END_STREAM), `{error, {peer_reset, Code}}' or `{error, {stream_error,
%% Code}}' (over HTTP/2, the stream was reset by the client or by us), `timeout' (idle), `shutdown'
%% (the listener is stopping: the peer got 1001), `{protocol_error, Code,
%% Why}' (the peer broke RFC 6455: it got `Code') or `{crash, Class,
%% Reason}' (a callback raised: the peer got 1011 and the crash is logged,
%% bounded like a handler's).
%%
%% `Opts' (all optional; defaults in `falco_ws_handshake:default_opts/0'):
%% `max_frame_size' and `max_message_size' (bytes; past them, 1009),
%% `max_fragments' (data frames in one message; past it, 1009) and
%% `max_empty_fragments' (those of them with no payload; past it, 1008),
%% `idle_timeout' (ms without a byte from the peer before closing with
%% 1000), `ping_interval' (ms of peer silence before falco sends a ping;
%% `infinity' for none), `close_timeout' (ms to wait for the peer's close
%% frame after ours), `compress' (`true', `false' or a
%% `falco_ws_deflate:config()': accept permessage-deflate),
%% `protocols' (the subprotocols spoken, in order of preference: the first
%% the client offers is selected; a route handler that needs to know which
%% calls `falco_ws_handshake:protocol/2' with the same list and keeps
%% the answer in its state).
-module(falco_ws_handler).

-type frame() :: {text | binary | ping, iodata()} | {close, 1000..4999, iodata()} | close.
-type result(State) :: {ok, State} | {ok, State, hibernate}
                     | {reply, frame() | [frame()], State}
                     | {reply, frame() | [frame()], State, hibernate}
                     | {stop, State}.
-type terminate_reason() :: normal | {remote, 1000..4999, binary()} | {remote, none}
                          | {error, term()} | timeout | shutdown
                          | {protocol_error, 1002 | 1007 | 1008 | 1009, atom()}
                          | {crash, error | exit | throw, term()}.
-type opts() :: #{max_frame_size => non_neg_integer() | infinity,
                  max_message_size => non_neg_integer() | infinity,
                  max_fragments => pos_integer() | infinity,
                  max_empty_fragments => non_neg_integer() | infinity,
                  idle_timeout => timeout(),
                  ping_interval => timeout(),
                  close_timeout => timeout(),
                  compress => boolean() | falco_ws_deflate:config(),
                  protocols => [binary()]}.
-export_type([frame/0, result/1, terminate_reason/0, opts/0]).

-callback init(State) -> result(State).
-callback handle_in({text | binary, binary()}, State) -> result(State).
-callback handle_info(term(), State) -> result(State).
-callback terminate(terminate_reason(), term()) -> term().
-optional_callbacks([init/1, handle_info/2, terminate/2]).
