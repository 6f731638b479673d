%% @doc The socket carrier of a WebSocket session ({@link falco_ws_carrier}):
%% the connection's TCP or TLS socket after the HTTP/1.1 101 (RFC 6455
%% §4), through {@link falco_transport}.
%%
%% Reading: after a message is handled the session looks at its mailbox,
%% then `poll/1' yields (the other sessions run first, so the peer's next
%% frame has mostly arrived) and reads with a passive `recv' that does not
%% wait; only when that finds nothing does `arm/1' set `{active, once}'
%% and the session wait in `receive' (ws_echo on the inet backend 51 ->
%% 97 k messages/s, cowboy 51 k in the same run, 2026-11-25; `{active, 8}'
%% had cost more on the socket backend: an extra failed recv per read).
%% Writing: the listener's `send_timeout' bounds each send, so a peer that
%% does not read ends the session rather than making it buffer. Closing:
%% the server closes TCP first (RFC 6455 §7.1.1), with a lingering close
%% when the peer may still be sending.
%%
%% @private internal to falco
-module(falco_ws_socket).
-behaviour(falco_ws_carrier).

-export([new/2]).
-export([poll/1, arm/1, input/2, gather/2, send/2, close/3, parent_exit/2]).

%% The socket's read buffer: narrow while frames are small (the inet
%% driver keeps an empty buffer of this size in every idle connection:
%% 1460 bytes cost ws_idle about 950 bytes per connection more than 512),
%% wide while a large frame is gathered (fewer reads).
-define(NARROW_BUFFER, 512).
-define(WIDE_BUFFER, 65536).

-record(sock, {transport :: falco_transport:transport(),
               socket :: falco_transport:socket(),
               tags :: {atom(), atom(), atom(), atom()},
               %% `{active, once}' is set and its message not received yet
               armed = false :: boolean()}).
-opaque state() :: #sock{}.
-export_type([state/0]).

%% @doc The carrier of socket `Sock', its read buffer made narrow (a socket
%% already closed is found out by the first read).
-spec new(falco_transport:transport(), falco_transport:socket()) -> state().
new(T, Sock) ->
    _ = falco_transport:setopts(T, Sock, [{buffer, ?NARROW_BUFFER}]),
    #sock{transport = T, socket = Sock, tags = falco_transport:messages(T)}.

%% @private
-spec poll(state()) -> {data, binary(), state()} | none | {error, term()}.
poll(#sock{armed = true}) ->
    none;
poll(S = #sock{transport = T, socket = Sock}) ->
    erlang:yield(),
    case T:recv(Sock, 0, 0) of
        {ok, Data} -> {data, Data, S};
        {error, timeout} -> none;
        {error, _} = Error -> Error
    end.

%% @private
-spec arm(state()) -> {ok, state()} | {error, term()}.
arm(S = #sock{armed = true}) ->
    {ok, S};
arm(S = #sock{transport = T, socket = Sock}) ->
    case falco_transport:setopts(T, Sock, [{active, once}]) of
        ok -> {ok, S#sock{armed = true}};
        {error, _} = Error -> Error
    end.

%% @private
-spec input(term(), state()) -> falco_ws_carrier:input().
input({Tag, Sock, Data}, S = #sock{socket = Sock, tags = {Tag, _, _, _}}) ->
    {data, Data, nofin, S#sock{armed = false}};
input({Tag, Sock}, #sock{socket = Sock, tags = {_, Tag, _, _}}) ->
    {closed, closed};
input({Tag, Sock, Reason}, #sock{socket = Sock, tags = {_, _, Tag, _}}) ->
    {closed, Reason};
input(_, _) ->
    none.

%% @private
-spec gather(boolean(), state()) -> state().
gather(Large, S = #sock{transport = T, socket = Sock}) ->
    Size = case Large of
               true -> ?WIDE_BUFFER;
               false -> ?NARROW_BUFFER
           end,
    _ = falco_transport:setopts(T, Sock, [{buffer, Size}]),
    S.

%% @private
-spec send(iodata(), state()) -> {ok, state()} | {error, term()}.
send(Data, S = #sock{transport = T, socket = Sock}) ->
    case falco_transport:send(T, Sock, Data) of
        ok -> {ok, S};
        {error, _} = Error -> Error
    end.

%% @private
-spec close(close | linger, iodata(), state()) -> ok.
close(How, Last, S = #sock{transport = T, socket = Sock, armed = Armed}) ->
    _ = case iolist_size(Last) of
            0 -> ok;
            _ -> send(Last, S)
        end,
    case How of
        close -> falco_transport:close_socket(T, Sock);
        %% an armed socket is in {active, once} mode: read through messages
        linger when Armed -> falco_transport:linger_close_active(T, Sock);
        linger -> falco_transport:linger_close(T, Sock)
    end.

%% @private The parent is the listener's: its exit is the listener
%% stopping.
-spec parent_exit(term(), state()) -> shutdown.
parent_exit(_Reason, _S) ->
    shutdown.
