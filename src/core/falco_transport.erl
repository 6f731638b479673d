%% @doc The transport layer under every protocol: plain TCP (`gen_tcp') or
%% TLS (`ssl'), chosen per listener with `transport => tcp | tls'.
%%
%% A connection's transport is the module itself (`gen_tcp' or `ssl'):
%% both export `send/2', `recv/3', `close/1' and `shutdown/2' with the same
%% meaning, so the HTTP/1.1 loop calls `T:recv(Sock, 0, Timeout)' whatever
%% it runs over (writes go through {@link send/3}, for the inet driver).
%% The few calls that differ (listen, accept, `setopts', `peername', the
%% active mode messages) go through this module, keyed by the listener's
%% `tcp | tls'.
%%
%% TLS: the listen socket is an `ssl' one ({@link listen/4}), so ssl
%% checks and processes the server options once per listener, when it
%% starts: a bad option fails the start, not every connection, and no
%% connection pays for parsing them again. An acceptor only takes the TCP
%% connection ({@link accept/3}: `ssl:transport_accept/2', no handshake);
%% the handshake runs in the connection process ({@link handshake/2}, with a
%% timeout), never in an acceptor, so a slow or silent client cannot hold
%% an acceptor. Defaults are modern (RFC 9325, RFC 9113 §9.2): TLS 1.3 and
%% 1.2 only, AEAD cipher suites with forward secrecy (no CBC, no static RSA,
%% no truncated CCM_8 tags), the server's cipher order, no client-initiated
%% renegotiation, and ALPN advertising the listener's protocols in order
%% (h2, http/1.1). Any of these can be overridden through `tls_opts', whose
%% entries win; only defaults that fit the configured `versions' are added.
%%
%% @private internal to falco
-module(falco_transport).

-export([listen/4, accept/3, close/2, handshake/2, tcp_socket/1]).
-export([own_accept/2, async_accept/1, async_accepted/2, tls_options/3, alpn_ids/1, setopts/3, peername/2, messages/1,
         default_ciphers/0, default_ciphers/1]).
-export([reuseport/0]).
-export([linger_close/2, linger_close_active/2, close_socket/2, deadline/1, remaining/1]).
-export([read_buffer/2, accept_buffer/2, send/3, unrecv/3]).

-define(DEFAULT_VERSIONS, ['tlsv1.3', 'tlsv1.2']).
%% Lingering close: how long, and how many bytes at most, are read and
%% dropped after our last byte (see linger_close/2).
-define(LINGER_MS, 1000).
-define(LINGER_BYTES, 64 * 1024 * 1024).

%% A TLS send larger than this waits until ssl's port has sent all but a
%% watermark of it (send/3).
-define(TLS_WAIT, 65536).

-type transport() :: gen_tcp | ssl.
-type socket() :: inet:socket() | ssl:sslsocket().
-type kind() :: tcp | tls.
%% An accept started by async_accept/1: the listen socket's module
%% (inet_tcp, inet6_tcp), to register the new socket with.
-opaque pending() :: {pending, module()}.
-export_type([transport/0, socket/0, kind/0, pending/0]).

%% @doc The raw socket option that sets SO_REUSEPORT, for the listener
%% option `reuseport'. OTP 25's gen_tcp has no option of its own for it
%% (OTP 26 adds `reuseport'), and a raw option works on both backends
%% (`inet' and `socket'); its numbers are the OS's: SOL_SOCKET 1 and
%% SO_REUSEPORT 15 on Linux, 16#ffff and 16#200 on the BSDs and macOS.
%% `unsupported' elsewhere.
-spec reuseport() -> {raw, non_neg_integer(), non_neg_integer(), binary()} | unsupported.
reuseport() ->
    case os:type() of
        {unix, linux} -> {raw, 1, 15, <<1:32/native>>};
        {unix, Bsd} when Bsd =:= darwin; Bsd =:= freebsd; Bsd =:= openbsd; Bsd =:= netbsd ->
            {raw, 16#ffff, 16#200, <<1:32/native>>};
        _ -> unsupported
    end.

%% @doc Opens a listener's listen socket. TLS: `ssl:listen/2' with the
%% socket options and the full server options ({@link tls_options/2}), so
%% ssl validates them here; a rejected option comes back as
%% `{error, {tls_opts, Reason}}', an error of the socket itself (a port in
%% use) as it is.
-spec listen(kind(), inet:port_number(), [gen_tcp:listen_option()], [ssl:tls_server_option()]) ->
          {ok, socket()} | {error, term()}.
listen(tcp, Port, SockOpts, _TlsOpts) ->
    gen_tcp:listen(Port, SockOpts);
listen(tls, Port, SockOpts0, TlsOpts) ->
    %% gen_tcp honours `{inet_backend, _}' only as its first option, and
    %% OTP 25's ssl:listen/2 hands the socket options on to gen_tcp in
    %% reverse order: the backend goes last here to come first there. Should
    %% an ssl keep the order, the second try has it first.
    {Backend, SockOpts} = lists:partition(fun(O) -> element(1, O) =:= inet_backend end,
                                          [O || O <- SockOpts0, is_tuple(O)]),
    Atoms = [O || O <- SockOpts0, is_atom(O)],
    Tries = case Backend of
                [] -> [Atoms ++ SockOpts];
                _ -> [Atoms ++ SockOpts ++ Backend, Backend ++ Atoms ++ SockOpts]
            end,
    ssl_listen(Port, Tries, TlsOpts).

ssl_listen(Port, [Opts | Tries], TlsOpts) ->
    try ssl:listen(Port, Opts ++ TlsOpts) of
        {ok, LSock} -> {ok, LSock};
        {error, {options, dependency, Why}} -> {error, {tls_opts, {dependency, Why}}};
        {error, {options, Why}} -> {error, {tls_opts, Why}};
        {error, Reason} when is_atom(Reason) -> {error, Reason};
        {error, Reason} -> {error, {tls_opts, Reason}}
    catch
        %% ssl hands options it does not know to gen_tcp, which exits.
        _:badarg when Tries =/= [] ->
            ssl_listen(Port, Tries, TlsOpts);
        _:badarg ->
            {error, {tls_opts, {unknown_options, unknown_tls_options(TlsOpts)}}}
    end.

%% The server options of OTP 25's ssl (the option names of ssl(3)); used
%% only to name the culprits once ssl has refused an option list, so an
%% option that a newer ssl adds is never refused by falco itself.
unknown_tls_options(TlsOpts) ->
    Known = [alpn_advertised_protocols, alpn_preferred_protocols, anti_replay,
             beast_mitigation, cacertfile, cacerts, cb_info, cert, certfile, certs_keys,
             certificate_authorities, ciphers, client_preferred_next_protocols,
             client_renegotiation, cookie, crl_cache, crl_check, customize_hostname_check, depth,
             dh, dhfile, early_data, eccs, erl_dist, fail_if_no_peer_cert, fallback, handshake,
             hibernate_after, honor_cipher_order, honor_ecc_order, keep_secrets, key,
             key_update_at, keyfile, log_level, max_fragment_length, max_handshake_size,
             middlebox_comp_mode, next_protocols_advertised, ocsp_nonce, ocsp_responder_certs,
             ocsp_stapling, padding_check, partial_chain, password, protocol, psk_identity,
             receiver_spawn_opts, renegotiate_at, reuse_session, reuse_sessions,
             secure_renegotiate, sender_spawn_opts, server_name_indication, session_tickets,
             signature_algs, signature_algs_cert, sni_fun, sni_hosts, srp_identity,
             supported_groups, use_ticket, user_lookup_fun, verify, verify_fun, versions],
    [K || {K, _} <- TlsOpts, not lists:member(K, Known)].

%% @doc Takes the next connection from a listen socket. TLS: the TCP
%% accept only (`ssl:transport_accept/2'); the handshake is the
%% connection's ({@link handshake/2}). `{error, timeout}' when none came
%% within `Timeout' ms.
-spec accept(kind(), socket(), timeout()) -> {ok, socket()} | {error, term()}.
accept(Kind, LSock, Timeout) ->
    case own_accept(Kind, LSock) of
        true -> accept_port(LSock, Timeout);
        false when Kind =:= tcp -> gen_tcp:accept(LSock, Timeout);
        false -> ssl:transport_accept(LSock, Timeout)
    end.

%% @doc Whether {@link accept/3} takes connections from `LSock' with
%% falco's own accept (accept_port/2 below, or {@link async_accept/1} and
%% {@link async_accepted/2} for a caller that waits for the reply itself),
%% which never touches the listen socket once the connection is taken: a listen socket closed under such a wait ends it
%% with `{error, closed}' and cannot lose a connection it had already
%% taken, so a process may wait there without a timeout and the listener
%% may close the socket at once when it drains (falco_conn,
%% falco_acceptor). gen_tcp:accept/2 (other systems, the socket backend)
%% and ssl:transport_accept/2 read options from the listen socket after
%% the accept, and close the new socket if it has just closed.
-spec own_accept(kind(), socket()) -> boolean().
own_accept(tcp, LSock) when is_port(LSock) ->
    os:type() =:= {unix, linux};
own_accept(_Kind, _LSock) ->
    false.

%% gen_tcp:accept/2 on the port driver (the `inet' backend) copies ten
%% options from the listen socket to the new one, each read and written
%% with its own system calls: 36 of them per connection, against one
%% accept, one read, one write and one close (strace, 2026-11-25). Linux
%% gives an accepted socket its listening socket's options already, and
%% the driver copies its own (active, mode, packet, buffer, send_timeout,
%% ...); only `delay_send' and `priority' are not carried over, and a
%% falco listen socket sets neither (falco_listener_sup:socket_options/1;
%% falco_opts refuses them). Other systems, whose inheritance of socket
%% options was not checked, keep gen_tcp:accept/2. So the accept is taken as inet_tcp's own is,
%% without the copy: prim_inet:async_accept/2, then the new socket is
%% registered as inet_tcp:accept/2 registers it. listener_SUITE:
%% accepted_socket_options compares every option with gen_tcp:accept's,
%% so an OTP that changes either fails there. connection_storm: see
%% docs/internals/http1.md.
accept_port(LSock, Timeout) ->
    case start_accept(LSock, accept_time(Timeout)) of
        {ok, Ref, Pending} ->
            receive
                {inet_async, LSock, Ref, Result} -> async_accepted(Pending, Result)
            end;
        Error ->
            Error
    end.

%% @doc The accept of {@link accept/3} where {@link own_accept/2} holds,
%% without a timeout and without its wait: the connection (or the error)
%% comes as a message, `{inet_async, LSock, Ref, Result}', which the
%% caller receives itself, among its own messages (falco_conn answers
%% `sys' while it waits), and hands to {@link async_accepted/2}. The
%% listen socket's module (inet_tcp, inet6_tcp) is looked up here, before
%% the wait, so that nothing is asked of the listen socket afterwards.
-spec async_accept(inet:socket()) -> {ok, non_neg_integer(), pending()} | {error, term()}.
async_accept(LSock) ->
    start_accept(LSock, -1).

start_accept(LSock, Time) ->
    case inet_db:lookup_socket(LSock) of
        {ok, Mod} ->
            case prim_inet:async_accept(LSock, Time) of
                {ok, Ref} -> {ok, Ref, {pending, Mod}};
                Error -> Error
            end;
        {error, _} = Error ->
            Error
    end.

%% @doc What {@link accept/3} returns, from the `Result' of the message
%% of an accept started by {@link async_accept/1}: a new socket is
%% registered as inet_tcp:accept/2 registers it.
-spec async_accepted(pending(), {ok, inet:socket()} | {error, term()}) ->
          {ok, inet:socket()} | {error, term()}.
async_accepted({pending, Mod}, {ok, Sock}) ->
    true = inet_db:register_socket(Sock, Mod),
    {ok, Sock};
async_accepted({pending, _}, {error, _} = Error) ->
    Error.

accept_time(infinity) -> -1;
accept_time(Ms) -> Ms.

%% @doc The TCP socket of a connection from {@link accept/3}: itself over
%% TCP; over TLS, before the handshake, the TCP socket under the `ssl'
%% one, to read what precedes TLS on the wire (a PROXY protocol header,
%% {@link falco_conn}). ssl has no documented call for this: the socket is
%% the second field of OTP 25's `#sslsocket{}' record, `{gen_tcp, Socket,
%% _, _}' (ranch reads the PROXY header the same way).
%% `proxy_protocol_SUITE' runs it over TLS with both socket backends, so
%% an ssl that moves it fails there. Any process may `recv' on it; the
%% ssl connection process owns it and reads it only once the handshake
%% starts.
-spec tcp_socket(socket()) -> inet:socket().
tcp_socket(Socket) when is_tuple(Socket), element(1, Socket) =:= sslsocket ->
    {gen_tcp, TcpSocket, _, _} = element(2, Socket),
    TcpSocket;
tcp_socket(Socket) ->
    Socket.

%% @doc Closes a socket, listening or accepted.
-spec close(kind(), socket()) -> ok | {error, term()}.
close(tcp, Sock) -> gen_tcp:close(Sock);
close(tls, Sock) -> ssl:close(Sock).

%% @doc Runs the TLS handshake on a socket from {@link accept/3}, with the
%% options given to the listen socket. Returns the socket and the ALPN
%% protocol the client chose (`undefined' if none).
-spec handshake(ssl:sslsocket(), timeout()) ->
          {ok, ssl:sslsocket(), binary() | undefined} | {error, term()}.
handshake(Socket, Timeout) ->
    case ssl:handshake(Socket, Timeout) of
        {ok, TlsSocket} ->
            case ssl:negotiated_protocol(TlsSocket) of
                {ok, Proto} -> {ok, TlsSocket, Proto};
                {error, _} -> {ok, TlsSocket, undefined}
            end;
        {error, _} = Error ->
            Error
    end.

%% @doc The server options for a listener: falco's defaults under the
%% user's `tls_opts' (which win), ALPN from `Protocols'. Only defaults that
%% fit the configured `versions' are added: renegotiation and session-id
%% reuse exist up to TLS 1.2 only, and OTP's ssl refuses them in a
%% TLS-1.3-only configuration; the default cipher list holds only suites of
%% the configured versions.
%%
%% `Hibernate' is the listener's `hibernate_after', given to ssl as its own
%% `hibernate_after' unless `tls_opts' has one: OTP's ssl runs two
%% processes per connection (the connection process, which receives and
%% decrypts, and its sender), and without the option neither hibernates
%% nor is collected while the client is silent; an idle TLS connection
%% then held 115-122 KB, against 40-46 KB with it (docs/internals/
%% idle-memory.md). ssl arms the timeout in its connection state only, so
%% it never cuts into a handshake.
-spec tls_options([ssl:tls_server_option()], [http1 | h2], timeout()) ->
          [ssl:tls_server_option()].
tls_options(UserOpts, Protocols, Hibernate) ->
    Versions = proplists:get_value(versions, UserOpts, ?DEFAULT_VERSIONS),
    Ciphers = case default_ciphers(Versions) of
                  [] -> [];
                  Suites -> [{ciphers, Suites}]
              end,
    Pre13 = case lists:any(fun(V) -> V =/= 'tlsv1.3' end, Versions) of
                true -> [{secure_renegotiate, true},
                         {client_renegotiation, false},
                         {reuse_sessions, true}];
                false -> []
            end,
    Defaults = [{versions, ?DEFAULT_VERSIONS} | Ciphers]
        ++ [{honor_cipher_order, true} | Pre13]
        ++ [{alpn_preferred_protocols, alpn_ids(Protocols)}, {hibernate_after, Hibernate}],
    UserKeys = [K || {K, _} <- UserOpts],
    UserOpts ++ [O || O = {K, _} <- Defaults, not lists:member(K, UserKeys)].

%% @doc ALPN protocol IDs for the allowed protocols, in the server's order
%% of preference: h2 first (RFC 7301; "h2" is RFC 9113 §3.2).
-spec alpn_ids([http1 | h2]) -> [binary()].
alpn_ids(Protocols) ->
    [<<"h2">> || lists:member(h2, Protocols)] ++ [<<"http/1.1">> || lists:member(http1, Protocols)].

%% @doc The default suites for falco's default versions (TLS 1.3 and 1.2).
-spec default_ciphers() -> [ssl:erl_cipher_suite()].
default_ciphers() ->
    default_ciphers(?DEFAULT_VERSIONS).

%% @doc AEAD suites with an ephemeral key exchange (TLS 1.3 suites all are)
%% of the given versions; none for versions before TLS 1.2, which have no
%% AEAD suites.
-spec default_ciphers([atom()]) -> [ssl:erl_cipher_suite()].
default_ciphers(Versions) ->
    %% ssl:cipher_suites(default, 'tlsv1.3') lists the TLS 1.2 suites too.
    All = lists:usort([S || V <- ['tlsv1.3', 'tlsv1.2'], lists:member(V, Versions),
                            S <- ssl:cipher_suites(default, V),
                            (V =:= 'tlsv1.3') =:= (maps:get(key_exchange, S) =:= any)]),
    Suites = ssl:filter_cipher_suites(
               All, [{mac, fun(aead) -> true; (_) -> false end},
                     {key_exchange, fun(K) -> lists:member(K, [any, ecdhe_ecdsa, ecdhe_rsa]) end},
                     {cipher, fun(C) -> not lists:member(C, [aes_128_ccm_8, aes_256_ccm_8]) end}]),
    %% Strongest first; TLS 1.3 suites (key exchange `any') lead.
    lists:sort(fun(A, B) -> rank(A) =< rank(B) end, Suites).

rank(#{key_exchange := KE, cipher := C}) ->
    {case KE of any -> 0; ecdhe_ecdsa -> 1; ecdhe_rsa -> 2 end,
     case C of aes_256_gcm -> 0; chacha20_poly1305 -> 1; aes_128_gcm -> 2; _ -> 3 end}.

%% @doc `inet:setopts/2' or `ssl:setopts/2'.
-spec setopts(transport(), socket(), list()) -> ok | {error, term()}.
setopts(gen_tcp, Socket, Opts) -> inet:setopts(Socket, Opts);
setopts(ssl, Socket, Opts) -> ssl:setopts(Socket, Opts).

%% @doc The peer's address, or `undefined'.
-spec peername(transport(), socket()) -> {inet:ip_address(), inet:port_number()} | undefined.
peername(T, Socket) ->
    Result = case T of
                 gen_tcp -> inet:peername(Socket);
                 ssl -> ssl:peername(Socket)
             end,
    case Result of
        {ok, Peer} -> Peer;
        {error, _} -> undefined
    end.

%% @doc The tags of active-mode messages: data, closed, error, passive.
-spec messages(transport()) -> {atom(), atom(), atom(), atom()}.
messages(gen_tcp) -> {tcp, tcp_closed, tcp_error, tcp_passive};
messages(ssl) -> {ssl, ssl_closed, ssl_error, ssl_passive}.

%% @doc Sends `Data' on a connection, the one rule of every protocol: it
%% returns once the bytes are written or all but a few KB of them are,
%% and a peer that does not read makes it fail (`{error, timeout}') after
%% the listener's `send_timeout', the socket then closed
%% (`send_timeout_close'). On the socket backend that is `send' itself.
%% The inet driver instead takes a whole send into its queue at once and
%% blocks only the next one while the queue is over its high watermark: a
%% 64 MB reply to a peer that never reads returned `ok' in 1 ms and stayed
%% queued, with no timeout ever (2026-11-25). So when the queue is not
%% empty after a send, an empty send waits for it to go under the low
%% watermark, with the same timeout. A send that went out whole (every
%% small reply) pays one look at the queue. TLS has the same hole one
%% level down: ssl's sender process hands a send's records to the inet
%% driver in one call, so a 65 MB WebSocket reply to a peer that never
%% read was queued whole and the session never ended (2026-12-02,
%% rfc6455_SUITE slow_reader_bounded over wss). ssl does not show its
%% port's queue, so after a send of more than ?TLS_WAIT bytes an empty
%% ssl send waits as the empty gen_tcp send does (ssl hands the driver
%% an empty list, which blocks while the queue is over the watermark);
%% smaller sends queue at most that much before the next one blocks.
-spec send(transport(), socket(), iodata()) -> ok | {error, term()}.
send(gen_tcp, Sock, Data) when is_port(Sock) ->
    case gen_tcp:send(Sock, Data) of
        ok ->
            case erlang:port_info(Sock, queue_size) of
                {queue_size, 0} -> ok;
                {queue_size, _} -> gen_tcp:send(Sock, <<>>);
                undefined -> {error, closed}
            end;
        Error ->
            Error
    end;
send(ssl, Sock, Data) ->
    case ssl:send(Sock, Data) of
        ok when is_binary(Data), byte_size(Data) =< ?TLS_WAIT -> ok;
        ok ->
            case iolist_size(Data) > ?TLS_WAIT of
                true -> ssl:send(Sock, <<>>);
                false -> ok
            end;
        Error ->
            Error
    end;
send(T, Sock, Data) ->
    T:send(Sock, Data).

%% @doc Puts bytes read from a connection back in front of what it has
%% not read yet, so that the next exact-length read returns them and the
%% bytes after them as one binary, filled by the driver. Only gen_tcp on
%% the inet driver can (gen_tcp:unrecv/2, exported by gen_tcp though not
%% documented); the socket backend and TLS answer `{error, enotsup}', and
%% the caller keeps the bytes itself.
-spec unrecv(transport(), socket(), binary()) -> ok | {error, term()}.
unrecv(gen_tcp, Sock, Data) when is_port(Sock) ->
    gen_tcp:unrecv(Sock, Data);
unrecv(_T, _Sock, _Data) ->
    {error, enotsup}.

%% @doc Closes a connection's socket. gen_tcp:close/1 on the inet driver
%% asks the driver twice before it closes: for the linger option, then
%% for the size of its output queue, to wait until that is sent. A falco
%% socket never lingers (its listen socket does not set the option, and
%% falco_opts refuses it), and after {@link send/3} the queue is empty
%% unless the peer stopped reading: so one look at the queue (no call into
%% the driver) decides. Empty, the port is closed at once, as
%% gen_tcp:close/1 then does; else gen_tcp:close/1 waits for it.
%% connection_storm: docs/internals/http1.md, "Accepting a connection".
-spec close_socket(transport(), socket()) -> ok.
close_socket(gen_tcp, Sock) when is_port(Sock) ->
    case erlang:port_info(Sock, queue_size) of
        {queue_size, 0} ->
            _ = (catch erlang:port_close(Sock)),
            receive {'EXIT', Sock, _} -> ok after 0 -> ok end,
            receive {tcp_closed, Sock} -> ok after 0 -> ok end;
        _ ->
            _ = gen_tcp:close(Sock),
            ok
    end;
close_socket(T, Sock) ->
    _ = T:close(Sock),
    ok.

%% @doc Lingering close (RFC 9112 §9.6; RFC 9113 §6.8 for a GOAWAY): stop
%% sending, read and drop what the client still had in flight for a moment,
%% then close. Closing with unread bytes makes the kernel send a reset that
%% can destroy our last response (or GOAWAY) before the client reads it.
%% The second is the real bound; the byte budget is only a backstop, large
%% enough to drain a fast upload (a 413 for a big body is exactly when the
%% client is still sending: with a 64 KB budget the reset destroyed the 413
%% in two runs of six on loopback, 2026-11-22). Both protocols use this one
%% rule. The socket must be passive.
-spec linger_close(transport(), socket()) -> ok.
linger_close(T, Sock) ->
    _ = T:shutdown(Sock, write),
    linger(T, Sock, deadline(?LINGER_MS), ?LINGER_BYTES),
    close_socket(T, Sock).

%% @doc {@link linger_close/2} for a socket in `{active, N}' mode (HTTP/2),
%% reading through its messages. It is not switched back to passive: on
%% OTP 25's socket backend a `recv' with a timeout after `{active, N}' then
%% `{active, false}' never returns (seen 2026-11-24: a GOAWAY to a client
%% that stays silent held the connection forever).
-spec linger_close_active(transport(), socket()) -> ok.
linger_close_active(T, Sock) ->
    _ = T:shutdown(Sock, write),
    linger_active(T, Sock, messages(T), deadline(?LINGER_MS), ?LINGER_BYTES),
    close_socket(T, Sock).

linger_active(T, Sock, Tags = {DataTag, ClosedTag, ErrorTag, PassiveTag}, Deadline, Budget)
  when Budget > 0 ->
    receive
        {DataTag, Sock, Data} ->
            linger_active(T, Sock, Tags, Deadline, Budget - byte_size(Data));
        {PassiveTag, Sock} ->
            _ = setopts(T, Sock, [{active, 100}]),
            linger_active(T, Sock, Tags, Deadline, Budget);
        {ClosedTag, Sock} ->
            ok;
        {ErrorTag, Sock, _} ->
            ok
    after remaining(Deadline) ->
        ok
    end;
linger_active(_, _, _, _, _) ->
    ok.

linger(T, Sock, Deadline, Budget) when Budget > 0 ->
    case T:recv(Sock, 0, remaining(Deadline)) of
        {ok, Data} -> linger(T, Sock, Deadline, Budget - byte_size(Data));
        {error, _} -> ok
    end;
linger(_, _, _, _) ->
    ok.

%% @doc The monotonic time (ms) `Ms' from now, or `infinity'.
-spec deadline(timeout()) -> integer() | infinity.
deadline(infinity) -> infinity;
deadline(Ms) when is_integer(Ms) -> erlang:monotonic_time(millisecond) + Ms.

%% @doc What is left of a wait until `Deadline' (0 once it has passed).
-spec remaining(integer() | infinity) -> timeout().
remaining(infinity) -> infinity;
remaining(Deadline) when is_integer(Deadline) ->
    max(0, Deadline - erlang:monotonic_time(millisecond)).

%% @doc The socket's read buffer (`{buffer, N}') while no large body is
%% read, by transport and gen_tcp backend. On the socket backend every
%% `recv(Sock, 0)' allocates the whole buffer however few bytes arrived:
%% 8 KB holds a request head in one read. The inet driver allocates its
%% buffer once and keeps it between reads (it is freed only by a delivery
%% in `{active, N}' mode that empties it), so an idle HTTP/1.1 or
%% WebSocket connection holds one: with 8 KB, 8 KB of the 13 KB of an
%% idle keep-alive connection (bench idle_h1, 2026-11-25). 1460 bytes is
%% the driver's own default (and so the peers' on it): with 512, hello
%% and echo cost 8 % more CPU per request (more buffers allocated, 3 runs,
%% 2026-11-25). A new connection starts narrower ({@link accept_buffer/2}).
%% TLS keeps 8 KB on both: a TLS record is up
%% to 16 KB, and an idle TLS connection's ssl processes dwarf the buffer.
-spec read_buffer(kind() | transport(), socket | inet) -> pos_integer().
read_buffer(Kind, inet) when Kind =:= tcp; Kind =:= gen_tcp -> 1460;
read_buffer(_, _) -> 8192.

%% @doc The read buffer of a new connection (the listen socket's, which
%% accepted sockets inherit): on inet over TCP 512 bytes, because the
%% buffer of the first read is the one a WebSocket session upgraded by
%% that request keeps for good (about 950 bytes less per idle session than
%% 1460: ws_idle 5.4 against cowboy's 4.6 KB before). An HTTP/1.1
%% connection that stays after its first response widens to
%% {@link read_buffer/2}; a head that does not fit widens too
%% (falco_http1_conn).
-spec accept_buffer(kind(), socket | inet) -> pos_integer().
accept_buffer(tcp, inet) -> 512;
accept_buffer(Kind, Backend) -> read_buffer(Kind, Backend).
