%% @doc The connection entry point: one process per connection, from
%% `accept' to close.
%%
%% Started by an acceptor ({@link falco_acceptor}, its supervisor), it
%% waits in `accept' on the listen socket itself, tells the acceptor when
%% it has a connection, reads the PROXY protocol header when the listener
%% asks for one (`proxy_protocol'; before anything else, TLS included, as
%% the header comes first on the wire), runs the TLS handshake (within
%% `handshake_timeout' and the first request's deadline, whichever ends
%% first; never in the acceptor), and then picks the protocol
%% from the one
%% decision table ({@link falco_protocol:select/3}): after the handshake
%% (ALPN), on the first bytes of a cleartext connection (the HTTP/2
%% preface, read within `h2_preface_timeout' and the first request's
%% deadline, `request_timeout' from the accept, which this module sets in
%% the context for the protocol loops) or on an HTTP/1.1 request
%% asking to upgrade. It then hands the socket to that protocol's loop,
%% {@link falco_http1_conn} or {@link falco_http2_conn}, which run in this
%% same process; a loop that ends with an upgrade returns here and the next
%% loop takes over. The process is an OTP special process from its start:
%% while it waits in `accept' it answers `sys' messages (system callbacks
%% below; `sys:get_state/2' gives `#{listener, phase => accepting,
%% transport}'), and then each loop answers them and obeys its parent's
%% exit while it waits.
%%
%% @private internal to falco
-module(falco_conn).

-export([init/5]).
-export([system_continue/3, system_terminate/4, system_code_change/4, system_get_state/1]).

-include_lib("kernel/include/logger.hrl").

%% How long a process waiting in rounds (see accept/2) waits in accept
%% before it looks at the drain flag and its mailbox again: at most this
%% long between a drain and its listen socket's close, and for an answer
%% to `sys'.
-define(ACCEPT_ROUND, 100).

%% The process while it waits in accept: what it needs to go on once it
%% has a connection, and the accept under way (see accept/2).
-record(wait, {parent :: pid(),
               name :: atom(),
               lsock :: falco_transport:socket(),
               conf :: map(),
               cell :: falco_stats:cell(),
               %% the accept started by falco_transport:async_accept/1 and
               %% not yet answered; `undefined' between rounds
               pending :: {non_neg_integer(), falco_transport:pending()} | undefined}).

-type ctx() :: #{parent := pid(),
                 listener := atom(),
                 handler := falco_handler:handler(),
                 conf := map(),
                 socket := falco_transport:socket(),
                 transport := falco_transport:transport(),
                 scheme := http | https,
                 peer := {inet:ip_address(), inet:port_number()} | undefined,
                 deadline := integer() | infinity,
                 cell := falco_stats:cell(),
                 proxy => falco_proxy_protocol:info()}.
-export_type([ctx/0]).

%% @doc The connection process (started by its acceptor, {@link
%% falco_acceptor:conn/6}): accepts one connection on `LSock' and serves it.
-spec init(pid(), atom(), falco_transport:socket(), map(), falco_stats:cell()) -> ok.
init(Parent, Name, LSock, Conf, Cell) ->
    accept(#wait{parent = Parent, name = Name, lsock = LSock, conf = Conf, cell = Cell}, []).

accepted(draining, _W) ->
    ok;
accepted({ok, Socket}, #wait{parent = Parent, name = Name, conf = Conf = #{transport := Kind},
                             cell = Cell}) ->
    Parent ! {falco_accepted, self()},
    %% request_timeout runs from here: the PROXY header, the TLS
    %% handshake, protocol detection and the first request's head all
    %% count toward it.
    Ctx = #{parent => Parent, listener => Name, handler => maps:get(handler, Conf),
            conf => Conf, socket => Socket, cell => Cell,
            deadline => falco_transport:deadline(maps:get(request_timeout, Conf))},
    proxy_header(Kind, Ctx);
accepted({error, Reason}, #wait{parent = Parent}) ->
    Parent ! {falco_accept_failed, self(), Reason},
    ok.

%% Where the listen socket may be closed under a waiting process
%% (falco_transport:own_accept/2: TCP on the inet driver, on Linux), the
%% process starts an accept with no timeout (prim_inet:async_accept/2,
%% through falco_transport:async_accept/1) and waits for its reply in
%% `receive' (wait_accept/2), where it also takes `sys' messages; a drain
%% ends the wait by closing the socket (the reply is then `{error,
%% closed}'): an idle listener runs nothing at all, and every process of
%% it answers `sys'. Suspended there (`sys:suspend/1'), it leaves the
%% reply of a connection that comes meanwhile in its mailbox and takes it
%% once resumed. Elsewhere (TLS, the socket backend, other systems) it
%% waits in rounds of ?ACCEPT_ROUND ms, takes `sys' messages and looks at
%% the drain flag before each (a `sys' request waits at most one round):
%% once the listener drains, it stops waiting, and the draining acceptor
%% closes the listen socket only when no process of the listener waits in
%% accept any more (falco_acceptor:drain/2), because closing it under
%% such a wait can lose a connection: gen_tcp:accept/2 copies options
%% from the listen socket onto the connection it has just taken, and
%% closes that connection if the listen socket has just closed (ssl's
%% accept likewise asks the listen socket's own process); neither accept
%% can be waited for in `receive'. A round that ends without a connection
%% is followed by a collection: the rounds' few words of garbage would
%% otherwise be promoted to an old heap of 376 words, and a process
%% waiting in accept for 1.5 s held 5.8 KB instead of 2.8 KB
%% (2026-11-29); one collection per 100 ms of waiting keeps it at its
%% first heap.
accept(W = #wait{lsock = LSock, conf = Conf = #{transport := Kind}}, Debug) ->
    case falco_drain:draining(maps:get(drain, Conf, undefined)) of
        true ->
            accepted(draining, W);
        false ->
            case falco_transport:own_accept(Kind, LSock) of
                true ->
                    case falco_transport:async_accept(LSock) of
                        {ok, Ref, Pending} -> wait_accept(W#wait{pending = {Ref, Pending}}, Debug);
                        {error, _} = Error -> accepted(Error, W)
                    end;
                false ->
                    accept_round(W, Debug)
            end
    end.

%% No timeout: the reply, or a `sys' message, ends the wait. Other
%% messages stay in the mailbox for the protocol loops, as they did
%% while this process waited in falco_transport:accept/3.
wait_accept(W = #wait{parent = Parent, lsock = LSock, pending = {Ref, Pending}}, Debug) ->
    receive
        {inet_async, LSock, Ref, Result} ->
            accepted(falco_transport:async_accepted(Pending, Result), W#wait{pending = undefined});
        {system, From, Request} ->
            sys:handle_system_msg(Request, From, Parent, ?MODULE, Debug, W)
    end.

accept_round(W = #wait{parent = Parent, lsock = LSock, conf = #{transport := Kind}}, Debug) ->
    receive
        {system, From, Request} ->
            sys:handle_system_msg(Request, From, Parent, ?MODULE, Debug, W)
    after 0 ->
        case falco_transport:accept(Kind, LSock, ?ACCEPT_ROUND) of
            {error, timeout} ->
                _ = erlang:garbage_collect(),
                accept(W, Debug);
            Result ->
                accepted(Result, W)
        end
    end.

%% `proxy_protocol => off' (the default) costs this one match.
proxy_header(Kind, Ctx = #{conf := #{proxy_protocol := off}}) ->
    start(Kind, Ctx, <<>>);
proxy_header(Kind, Ctx = #{socket := Sock, listener := Name, conf := Conf, deadline := First}) ->
    %% The header's own deadline, within the first request's.
    Deadline = min(First, falco_transport:deadline(maps:get(proxy_header_timeout, Conf))),
    Read = #{socket => falco_transport:tcp_socket(Sock), kind => Kind,
             mode => maps:get(proxy_protocol, Conf),
             max => maps:get(proxy_header_max_size, Conf), deadline => Deadline},
    case read_proxy_header(Read, <<>>) of
        {ok, Info, Buf} ->
            start(Kind, Ctx#{proxy => Info}, Buf);
        {none, Buf} ->
            start(Kind, Ctx, Buf);
        {error, Why} ->
            %% Not worth more than debug: a port scan or a misconfigured
            %% proxy; no response (the client does not speak our protocol).
            ?LOG_DEBUG("falco: listener ~p: connection from ~s closed: PROXY header ~p",
                       [Name, peer_text(Sock), Why], #{falco_listener => Name}),
            _ = falco_transport:close(Kind, Sock),
            ok
    end.

%% Reads until falco_proxy_protocol:parse/2 decides. Over TCP whatever
%% came with the header is handed on to the protocol as its first bytes;
%% over TLS those bytes belong to ssl, which has no way to take them back,
%% so only as many bytes as the header certainly still has are read
%% (`{more, N}'), never one past its end.
read_proxy_header(Read = #{socket := Sock, kind := Kind, mode := Mode, max := Max,
                           deadline := Deadline}, Buf) ->
    case falco_proxy_protocol:parse(Buf, Max) of
        {ok, Info, Rest} ->
            {ok, Info, Rest};
        {error, no_header} when Mode =:= optional ->
            {none, Buf};
        {error, _} = Error ->
            Error;
        {more, N} ->
            Want = case Kind of
                       tls -> N;
                       tcp -> 0
                   end,
            case gen_tcp:recv(Sock, Want, falco_transport:remaining(Deadline)) of
                {ok, Data} -> read_proxy_header(Read, <<Buf/binary, Data/binary>>);
                {error, Reason} -> {error, {recv, Reason}}
            end
    end.

peer_text(Sock) ->
    case falco_transport:peername(gen_tcp, falco_transport:tcp_socket(Sock)) of
        {Ip, Port} -> [inet:ntoa(Ip), ":", integer_to_list(Port)];
        undefined -> "unknown"
    end.

start(tcp, Ctx = #{socket := Socket, conf := #{protocols := Protocols}}, Buf) ->
    protocol(falco_protocol:select(tcp, connect, Protocols),
             Ctx#{transport => gen_tcp, scheme => http,
                  peer => peer(Ctx, gen_tcp, Socket)}, Buf);
start(tls, Ctx = #{socket := Socket, conf := Conf = #{protocols := Protocols},
                   deadline := First}, <<>>) ->
    %% The handshake ends within `handshake_timeout' and within the first
    %% request's deadline (`request_timeout' from the accept), whichever
    %% comes first: a ClientHello trickled a byte at a time is cut at the
    %% earlier of the two, as the guides say.
    Timeout = min(maps:get(handshake_timeout, Conf), falco_transport:remaining(First)),
    case falco_transport:handshake(Socket, Timeout) of
        {ok, TlsSocket, Alpn} ->
            protocol(falco_protocol:select(tls, {alpn, Alpn}, Protocols),
                     Ctx#{socket => TlsSocket, transport => ssl, scheme => https,
                          peer => peer(Ctx, ssl, TlsSocket)}, <<>>);
        {error, Reason} ->
            ok = handshake_failed(Reason, Ctx),
            _ = ssl:close(Socket),
            ok
    end.

%% `[falco, tls, handshake_failed]' (falco_telemetry), when events go
%% somewhere: a failed handshake is otherwise silent (a scanner, a client
%% that gave up, a protocol or certificate mismatch).
handshake_failed(Reason, #{conf := Conf, listener := Name}) ->
    falco_telemetry:emit(falco_telemetry:for(Conf), [falco, tls, handshake_failed],
                         fun() -> {#{monotonic_time => erlang:monotonic_time()},
                                   #{listener => Name, reason => Reason}}
                         end).

%% The address handlers see: the original client's from a PROXY header
%% (its PROXY command, over IPv4 or IPv6), else the socket's peer (no
%% header, LOCAL, UNKNOWN or UNSPEC, or a UNIX socket's path).
peer(#{proxy := #{command := proxy, source := {Ip, Port}}}, _, _) ->
    {Ip, Port};
peer(_, T, Socket) ->
    falco_transport:peername(T, Socket).

protocol(http1, Ctx, Buf) ->
    after_http1(falco_http1_conn:enter(Ctx, Buf), Ctx);
protocol(h2, Ctx, Buf) ->
    falco_http2_conn:enter(Ctx, {preface, Buf});
protocol(detect, Ctx = #{conf := Conf, deadline := First}, Buf) ->
    Preface = falco_transport:deadline(maps:get(h2_preface_timeout, Conf)),
    detect(Ctx, Buf, min(First, Preface));
protocol(close, #{socket := Sock, transport := T}, _) ->
    falco_transport:linger_close(T, Sock).

%% The HTTP/1.1 loop ends, or asks for another protocol on this socket.
after_http1(closed, _Ctx) ->
    ok;
after_http1({upgrade, h2c, Settings, Req, Rest}, Ctx) ->
    falco_http2_conn:enter(Ctx, {upgrade, Settings, Req, Rest});
after_http1({upgrade, websocket, Upgrade, Rest}, Ctx) ->
    _ = falco_ws_conn:enter(Ctx, Rest, Upgrade),
    ok.

%% Cleartext with both protocols: the first bytes tell (RFC 9113 §3.3).
%% One deadline for them all, the first request's (request_timeout from
%% accept) or the preface's, whichever ends first, so a client trickling
%% bytes of something that still looks like the preface cannot hold the
%% connection longer.
detect(Ctx = #{socket := Sock, transport := T, conf := #{protocols := Protocols}}, Buf,
       Deadline) ->
    case falco_protocol:preface(Buf) of
        more ->
            case T:recv(Sock, 0, falco_transport:remaining(Deadline)) of
                {ok, Data} -> detect(Ctx, <<Buf/binary, Data/binary>>, Deadline);
                {error, _} -> falco_transport:linger_close(T, Sock)
            end;
        Seen ->
            protocol(falco_protocol:select(tcp, Seen, Protocols), Ctx, Buf)
    end.

%% -- sys, while waiting in accept ---------------------------------------------------
%% (the protocol loops have their own callbacks, with their own states)

%% @private Back to the wait: to the reply of the accept under way, which
%% a connection that came while the process was suspended left in its
%% mailbox, or to the next round.
-spec system_continue(pid(), [sys:dbg_opt()], #wait{}) -> ok.
system_continue(_Parent, Debug, W = #wait{pending = undefined}) ->
    accept(W, Debug);
system_continue(_Parent, Debug, W) ->
    wait_accept(W, Debug).

%% @private No socket is open yet: nothing to close. An accept under way
%% ends with the process (the driver cancels the accept of a process
%% that is gone).
-spec system_terminate(term(), pid(), [sys:dbg_opt()], #wait{}) -> no_return().
system_terminate(Reason, _Parent, _Debug, _W) ->
    exit(Reason).

%% @private
-spec system_code_change(#wait{}, module(), term(), term()) -> {ok, #wait{}}.
system_code_change(W, _Module, _OldVsn, _Extra) ->
    {ok, W}.

%% @private
-spec system_get_state(#wait{}) -> {ok, map()}.
system_get_state(#wait{name = Name, conf = #{transport := Kind}}) ->
    {ok, #{listener => Name, phase => accepting, transport => Kind}}.
