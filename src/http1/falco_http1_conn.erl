%% @doc One HTTP/1.1 connection: read a request head, run the pipeline in
%% this very process, answer, repeat (RFC 9112 §9: persistence and
%% pipelining; responses leave in request order because requests are
%% handled one after another).
%%
%% The socket is passive: a `recv' per read, no mailbox traffic. Time
%% limits: `idle_timeout' while waiting for the first byte of a request
%% (keep-alive), `request_timeout' for the whole head counted from its first
%% byte (so a slowloris client that trickles bytes still gets 408 and is
%% closed), and `body_timeout' for each body read. A parse error is answered
%% with its status and the connection is closed: once framing is in doubt
%% no further byte can be trusted (RFC 9112 §11.2).
-module(falco_http1_conn).

-export([start/4, init/5]).

-record(conn, {socket :: inet:socket() | ssl:sslsocket(),
               transport :: gen_tcp | ssl,
               scheme :: http | https,
               parent :: pid(),
               peer :: {inet:ip_address(), inet:port_number()} | undefined,
               listener :: atom(),
               handler :: falco_handler:handler(),
               conf :: map(),
               limits :: falco_http1:limits(),
               served = 0 :: non_neg_integer(),
               max_requests :: pos_integer() | infinity,
               idle_timeout :: timeout(),
               request_timeout :: timeout()}).

%% @doc Spawns a connection process, linked to the caller (the acceptor),
%% that accepts a connection on `LSock' itself ({@link
%% falco_acceptor:accept/4}) and serves it.
-spec start(atom(), falco_transport:socket(), map(), counters:counters_ref()) -> pid().
start(Name, LSock, Conf, Counter) ->
    proc_lib:spawn_link(?MODULE, init, [self(), Name, LSock, Conf, Counter]).

%% @private
-spec init(pid(), atom(), falco_transport:socket(), map(), counters:counters_ref()) -> ok.
init(Acceptor, Name, LSock, Conf, Counter) ->
    case falco_acceptor:accept(Acceptor, LSock, Conf, Counter) of
        {ok, Socket} ->
            try
                C = #conn{socket = Socket, transport = gen_tcp, scheme = http, peer = undefined,
                          parent = Acceptor,
                          listener = Name, handler = maps:get(handler, Conf), conf = Conf,
                          limits = maps:get(limits, Conf),
                          max_requests = maps:get(max_keep_alive_requests, Conf),
                          idle_timeout = maps:get(idle_timeout, Conf),
                          request_timeout = maps:get(request_timeout, Conf)},
                start(C)
            after
                counters:sub(Counter, 1, 1)
            end;
        stop ->
            ok
    end.

%% TLS handshake (here, never in the acceptor: the acceptor only took the
%% TCP connection with ssl:transport_accept/1), then the protocol from the
%% one decision table, falco_protocol:select/3.
start(C = #conn{socket = Socket, conf = #{transport := tcp, protocols := Protocols}}) ->
    protocol(falco_protocol:select(tcp, connect, Protocols),
             C#conn{peer = falco_transport:peername(gen_tcp, Socket)}, <<>>);
start(C = #conn{socket = Socket, conf = Conf = #{transport := tls, protocols := Protocols}}) ->
    case falco_transport:handshake(Socket, maps:get(handshake_timeout, Conf)) of
        {ok, TlsSocket, Alpn} ->
            protocol(falco_protocol:select(tls, {alpn, Alpn}, Protocols),
                     C#conn{socket = TlsSocket, transport = ssl, scheme = https,
                            peer = falco_transport:peername(ssl, TlsSocket)}, <<>>);
        {error, _} ->
            _ = ssl:close(Socket),
            ok
    end.

protocol(http1, C, Buf) -> wait(C, Buf);
protocol(h2, C, Buf) -> http2(C, {preface, Buf});
protocol(detect, C, Buf) -> detect(C, Buf);
protocol(close, C, _) -> close(C).

%% Cleartext with both protocols: the first bytes tell (RFC 9113 §3.3).
detect(C = #conn{socket = Sock, transport = T, idle_timeout = Idle, conf = Conf}, Buf) ->
    case falco_protocol:preface(Buf) of
        more ->
            case T:recv(Sock, 0, Idle) of
                {ok, Data} -> detect(C, <<Buf/binary, Data/binary>>);
                {error, _} -> close(C)
            end;
        Seen ->
            protocol(falco_protocol:select(tcp, Seen, maps:get(protocols, Conf)), C, Buf)
    end.

http2(C = #conn{socket = Sock, transport = T, parent = Parent}, Start) ->
    Ctx = #{listener => C#conn.listener, handler => C#conn.handler, conf => C#conn.conf,
            peer => C#conn.peer, scheme => C#conn.scheme},
    falco_http2_conn:enter(Sock, T, Ctx, Start, Parent).

%% Between requests: the next head may already be buffered (pipelining).
%% Bytes that are only empty lines (RFC 9112 §2.2: some clients send a CRLF
%% after a body) do not start a request: the connection stays idle, so it
%% gets idle_timeout and a silent close, never an unsolicited 408.
wait(C = #conn{socket = Sock, transport = T, idle_timeout = Idle}, <<>>) ->
    case T:recv(Sock, 0, Idle) of
        {ok, Data} -> wait(C, Data);
        {error, _} -> close(C)
    end;
wait(C, Buf) ->
    case only_crlf(Buf) of
        true -> wait(C, <<>>);
        false -> head(C, falco_http1:parse(Buf, C#conn.limits), deadline(C))
    end.

only_crlf(<<"\r\n", Rest/binary>>) -> only_crlf(Rest);
only_crlf(Bin) -> Bin =:= <<>>.

deadline(#conn{request_timeout = infinity}) -> infinity;
deadline(#conn{request_timeout = T}) -> erlang:monotonic_time(millisecond) + T.

head(C, {ok, Request, Rest}, _Deadline) ->
    request(C, Request, Rest);
head(C = #conn{socket = Sock, transport = T}, {more, Cont}, Deadline) ->
    case T:recv(Sock, 0, remaining(Deadline)) of
        {ok, Data} -> head(C, falco_http1:parse_more(Data, Cont), Deadline);
        {error, timeout} -> reject(C, request_timeout);
        {error, _} -> close(C)
    end;
head(C, {error, Reason}, _Deadline) ->
    reject(C, Reason).

remaining(infinity) -> infinity;
remaining(Deadline) -> max(0, Deadline - erlang:monotonic_time(millisecond)).

request(C, #{body := {length, N}}, _Rest) when N > map_get(max_body, C#conn.conf) ->
    reject(C, content_too_large);
request(C = #conn{transport = gen_tcp, conf = #{protocols := Protocols}}, Request, Rest) ->
    %% RFC 7540 §3.2: HTTP/1.1 Upgrade to h2c, answered on stream 1.
    case falco_protocol:h2c_settings(Request) of
        {ok, Settings} ->
            case falco_protocol:select(tcp, h2c_upgrade, Protocols) of
                h2c_upgrade -> upgrade_h2c(C, Request, Settings, Rest);
                _ -> serve(C, Request, Rest)
            end;
        no ->
            serve(C, Request, Rest)
    end;
request(C, Request, Rest) ->
    serve(C, Request, Rest).

upgrade_h2c(C = #conn{socket = Sock, transport = T}, Request, Settings, Rest) ->
    case T:send(Sock, <<"HTTP/1.1 101 Switching Protocols\r\nconnection: Upgrade\r\n"
                        "upgrade: h2c\r\n\r\n">>) of
        ok ->
            Req = Request#{peer => C#conn.peer, scheme => C#conn.scheme,
                           listener => C#conn.listener},
            http2(C, {upgrade, Settings, Req, Rest});
        {error, _} ->
            close(C)
    end.

serve(C = #conn{socket = Sock, transport = T, conf = Conf, served = Served,
                  max_requests = Max}, Request, Rest) ->
    #{version := Version, keep_alive := KeepAlive0, body := Framing,
      expect_continue := Continue} = Request,
    KeepAlive = KeepAlive0 andalso Served + 1 < Max,
    S0 = falco_http1_stream:new(Sock, T, Version, KeepAlive, Conf),
    ok = falco_http1_stream:body_init(Framing, Rest, Continue, S0),
    Req = Request#{peer => C#conn.peer, scheme => C#conn.scheme, listener => C#conn.listener,
                   stream => {falco_http1_stream, S0}},
    case falco_pipeline:run(Req, C#conn.handler, falco_http1_stream, S0) of
        {ok, S} ->
            case falco_http1_stream:body_finish(S) of
                {ok, Buf} ->
                    case falco_http1_stream:closing(S) of
                        false -> wait(C#conn{served = Served + 1}, Buf);
                        true when not KeepAlive0, Buf =:= <<>> -> quick_close(C);
                        true -> close(C)
                    end;
                close ->
                    close(C)
            end;
        {error, _} ->
            close(C)
    end.

%% An error status, then close: framing is in doubt (RFC 9112 §11.2).
reject(C = #conn{socket = Sock, transport = T}, Reason) ->
    Body = falco_errors:body(Reason),
    Head = falco_http1_encode:head(falco_errors:status(Reason),
                                   [{<<"content-type">>, <<"text/plain">>},
                                    {<<"content-length">>, integer_to_binary(byte_size(Body))},
                                    {<<"date">>, falco_clock:date()},
                                    {<<"connection">>, <<"close">>}]),
    _ = T:send(Sock, [Head, Body]),
    close(C).

%% Lingering close (RFC 9112 §9.6): stop sending, read what the client
%% still had in flight for a moment, then close. Closing with unread bytes
%% would make the kernel send a reset that can destroy our last response
%% before the client reads it. The second is the real bound; the byte budget
%% is only a backstop, large enough to drain a fast upload (a 413 for a big
%% body is exactly when the client is still sending: with a 64 KB budget the
%% reset destroyed the 413 in two runs of six on loopback, 2026-11-22).
close(#conn{socket = Sock, transport = T}) ->
    _ = T:shutdown(Sock, write),
    linger(T, Sock, erlang:monotonic_time(millisecond) + 1000, 64 * 1024 * 1024),
    _ = T:close(Sock),
    ok.

%% The client asked to close (`Connection: close', or 1.0 without
%% keep-alive), its request was read to the end and nothing follows it: it
%% sends nothing more (RFC 9112 §9.6), so there is nothing to drain and a
%% plain close is safe. This halves the work of a connection-per-request
%% client.
quick_close(#conn{socket = Sock, transport = T}) ->
    _ = T:close(Sock),
    ok.

linger(T, Sock, Deadline, Budget) when Budget > 0 ->
    case T:recv(Sock, 0, remaining(Deadline)) of
        {ok, Data} -> linger(T, Sock, Deadline, Budget - byte_size(Data));
        {error, _} -> ok
    end;
linger(_, _, _, _) ->
    ok.
