%% @doc Listener options: defaults, and validation at start so a typo or a
%% bad value is a clear `{error, {invalid_option, Key, Value}}' or
%% `{error, {unknown_option, Key}}' instead of a crash later.
%%
%% Defaults follow common practice for public-facing servers: 8 KB request
%% and header lines, 100 fields, 16 KB header block, 10 MB bodies, 10 s for
%% a head (for the first request, counted from the accept; cowboy: 5 s),
%% 60 s idle keep-alive, 1000 requests per connection.
%%
%% Transport and protocols: `transport => tcp | tls' (TLS needs `tls_opts'
%% with a certificate and key, see `falco_transport'), `protocols'
%% (a non-empty list of `http1' and `h2'; over TLS, ALPN prefers h2), the
%% TLS `handshake_timeout', and the `h2_*' options of HTTP/2 (RFC 9113
%% §6.5.2 settings we advertise, and the limits of
%% `falco_http2_machine').
%%
%% HTTP/3 (docs/guide/http3.md): `http3 => true' on a TLS listener opens
%% UDP on the TCP listener's port too (falco_listener_sup); the `h3_*'
%% options are QUIC's transport parameters and limits ({@link quic/1})
%% and `h3_alt_svc_max_age' the lifetime of the Alt-Svc advertisement.
%%
%% A listener needs either a `handler' or `routes'; this module checks
%% that one is there and its shape, and `falco_config:validate/1'
%% (above it, where the router and middleware are) checks the rest.
-module(falco_opts).

-export([validate/1, defaults/0, http1_limits/1, http2_machine/1, http3_machine/1, quic/1,
         websocket_defaults/0]).

-type opts() :: #{handler => falco_handler:handler(),
                  routes => falco_router:routes(),
                  atom() => term()}.
-export_type([opts/0]).

%% @doc Every option with its default (`handler' and `routes' have none:
%% one of them is required).
-spec defaults() -> map().
defaults() ->
    #{port => 8080,
      ip => {0, 0, 0, 0},
      num_acceptors => 10,
      max_connections => 16384,
      backlog => 1024,
      nodelay => true,
      %% SO_REUSEPORT on the listen socket, so that a second listener
      %% (in this BEAM or another) may bind the same port and take over
      %% while this one drains (falco_transport:reuseport/0).
      reuseport => false,
      inet_backend => inet,
      send_timeout => 30000,
      idle_timeout => 60000,
      %% An idle keep-alive connection (HTTP/1.1 between requests, HTTP/2
      %% or HTTP/3 with no stream open, a WebSocket session waiting)
      %% hibernates after this long with nothing received: a second is
      %% past any gap of a busy client, so the hot path never pays for a
      %% wake-up.
      hibernate_after => 1000,
      request_timeout => 10000,
      body_timeout => 30000,
      handler_timeout => infinity,
      %% Apache httpd's default (mod_reqtimeout body=20,MinRate=500):
      %% falco_body_deadline.
      min_body_rate => #{grace => 20000, bytes_per_second => 500},
      max_keep_alive_requests => 1000,
      max_request_line => 8192,
      max_header_line => 8192,
      max_header_block => 16384,
      max_header_count => 100,
      max_body => 10485760,
      transport => tcp,
      tls_opts => [],
      handshake_timeout => 10000,
      shutdown_timeout => 5000,
      %% ms that falco:drain/2 keeps serving, falco:ready/1 false, before
      %% it closes the listen socket (falco_drain): a load balancer's
      %% health check interval times its fall count, and a margin.
      drain_notice => 0,
      %% PROXY protocol header (falco_proxy_protocol) before anything else:
      %% off | optional | required. Its deadline: the spec asks for at
      %% least 3 s, to cover a TCP retransmit; its size: version 1 is at
      %% most 107 bytes by the spec, version 2 at most this (the format
      %% allows 16 + 65535; haproxy's with every TLV is well under 1 KB).
      proxy_protocol => off,
      proxy_header_timeout => 5000,
      proxy_header_max_size => 4096,
      protocols => [http1, h2],
      h2_max_concurrent_streams => 100,
      h2_initial_window_size => 65535,
      h2_connection_window_size => 1048576,
      %% Request body a connection's streams may hold or be promised by
      %% flow control, all together, beyond their initial windows
      %% (falco_http2_machine grows stream windows within it).
      h2_max_receive_buffer => 8388608,
      h2_max_frame_size => 16384,
      h2_max_header_list_size => 32768,
      h2_max_header_block => 65536,
      h2_max_continuations => 32,
      h2_settings_timeout => 10000,
      h2_preface_timeout => 10000,
      %% SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 8441 §3): WebSocket over
      %% HTTP/2 with an extended CONNECT
      h2_enable_connect_protocol => true,
      %% bytes/s a response waiting on the client's window must get through,
      %% over each send_timeout (falco_http2_flow)
      h2_send_min_rate => 512,
      %% response bytes one stream may have queued in the connection
      h2_send_buffer => 65536,
      %% Per 10 s window; over a limit is a GOAWAY ENHANCE_YOUR_CALM
      %% (falco_http2_machine, which merges a listener's own map over this one).
      %% `frames': every received frame but those that carry requests forward;
      %% `tunnel_data': a WebSocket tunnel's DATA frames under 1 KB;
      %% `rst_stream': client cancels of live streams; `stream_errors': the
      %% RST_STREAMs we are made to send (cowboy: 10,000 frames, 500 cancels
      %% and 10 resets per 10 s).
      h2_flood_limits => #{frames => 10000, rst_stream => 500, ping => 1000, settings => 100,
                           priority => 10000, window_update => 10000, empty_data => 1000,
                           tunnel_data => 100000, stream_errors => 10},
      %% Load shedding (falco_stats): above this many requests in flight on
      %% the listener (HTTP/1.1 requests and HTTP/2 streams), a new request
      %% is answered 503 with Retry-After: shed_retry_after (seconds).
      max_requests_in_flight => infinity,
      shed_retry_after => 1,
      %% HTTP/3 over QUIC on the same port, UDP (TLS listeners only)
      http3 => false,
      %% ms without a packet before a QUIC connection is closed (RFC 9000
      %% §10.1, the max_idle_timeout we advertise), and for its handshake
      h3_idle_timeout => 30000,
      h3_handshake_timeout => 10000,
      %% QUIC connections in their handshake at once, per UDP socket and
      %% per client address: what a spoofed Initial flood can cost
      h3_max_handshakes => 1000,
      h3_max_handshakes_per_address => 100,
      %% address validation (RFC 9000 §8.1): a Retry to an Initial without
      %% a valid token while this many handshakes are in progress on a
      %% UDP socket (`{threshold, N}'), to every one (`always'), or never
      h3_retry => {threshold, 100},
      %% UDP sockets on the port (SO_REUSEPORT: the kernel spreads clients)
      h3_sockets => 1,
      %% flow control windows (initial_max_data, initial_max_stream_data_*)
      h3_initial_max_data => 1048576,
      h3_initial_max_stream_data => 262144,
      %% streams a client may open: requests, and unidirectional (its
      %% control and QPACK streams are 3 of those, RFC 9114 §6.2)
      h3_max_streams_bidi => 100,
      h3_max_streams_uni => 8,
      %% the `ma' of the Alt-Svc field advertising HTTP/3, seconds
      h3_alt_svc_max_age => 86400,
      %% Internal, for falco's tests: how many 1-RTT packets one key
      %% seals before we update it (RFC 9001 §6; `auto': half the AEAD's
      %% confidentiality limit, 2^22 packets for AES-GCM, none for
      %% ChaCha20), and how many packets that fail to open close the
      %% connection (§6.6; `auto': the AEAD's integrity limit)
      h3_key_update_packets => auto,
      h3_aead_integrity_limit => auto,
      %% Internal, for falco's tests: the module of a QUIC connection
      %% process (`Module:start_link(Args, Info)', falco_quic_socket).
      h3_conn_module => falco_http3_conn,
      middleware => [],
      router_opts => #{},
      %% falco_telemetry: a fun/3 or {Module, Function} given every event
      event_handler => undefined}.

%% @doc Validates `Opts' and returns the full configuration, its handler,
%% routes and middleware as given (falco_config checks those).
-spec validate(term()) -> {ok, map()} | {error, term()}.
validate(Opts) when is_map(Opts) ->
    Defaults = defaults(),
    case [K || K <- maps:keys(Opts), not maps:is_key(K, Defaults), K =/= handler,
               K =/= routes] of
        [Unknown | _] ->
            {error, {unknown_option, Unknown}};
        [] ->
            case {maps:is_key(handler, Opts), maps:is_key(routes, Opts)} of
                {false, false} ->
                    {error, {missing_option, handler}};
                {true, true} ->
                    {error, {conflicting_options, handler, routes}};
                _ ->
                    Conf = maps:merge(Defaults, Opts),
                    case [{K, V} || {K, V} <- lists:sort(maps:to_list(Conf)), not valid(K, V)] of
                        [] -> case check_proxy(Conf) =:= ok andalso check_http3(Conf) of
                                  false ->
                                      {error, {conflicting_options, proxy_protocol, transport}};
                                  Result -> Result
                              end;
                        [{K, V} | _] -> {error, {invalid_option, K, V}}
                    end
            end
    end;
validate(Opts) ->
    %% a proplist (cowboy's and ranch's style) or anything else: the error
    %% says what is expected
    {error, {options_not_a_map, Opts}}.

%% `proxy_protocol => optional' guesses from the first bytes whether a
%% header is there, which over TLS would take bytes of the handshake from
%% ssl (it cannot be given them back); the spec says a receiver must not
%% guess anyway (proxy-protocol.txt §2). So a TLS listener takes the
%% header as `required' or not at all.
check_proxy(#{proxy_protocol := optional, transport := tls}) -> error;
check_proxy(_) -> ok.

%% HTTP/3 is QUIC, TLS 1.3 inside: a clear-text listener has no
%% certificate for it. Several UDP sockets share the port by SO_REUSEPORT.
check_http3(#{http3 := true, transport := tcp}) ->
    {error, {invalid_option, http3, needs_transport_tls}};
check_http3(Conf = #{http3 := true, h3_sockets := N}) when N > 1 ->
    case falco_transport:reuseport() of
        unsupported -> {error, {invalid_option, h3_sockets, {N, reuseport_unsupported}}};
        _ -> check_tls(Conf)
    end;
check_http3(Conf) ->
    check_tls(Conf).

%% A TLS listener needs a certificate and its key. The rest of `tls_opts'
%% is checked by ssl itself when the listen socket opens (ssl:listen/2 in
%% falco_listener_sup); what ssl would not catch, or would catch only per
%% connection, is checked here: an empty `versions' (ssl:listen/2 does not
%% return on it), PEM files without a certificate or a key, socket options
%% (falco sets those from its own listener options; in `tls_opts' they
%% would reach the socket behind falco's back) and `{handshake, hello}'
%% (falco runs full handshakes).
check_tls(Conf = #{transport := tls, tls_opts := TlsOpts}) ->
    HasCert = lists:any(fun({K, _}) -> lists:member(K, [certfile, cert, certs_keys]) end, TlsOpts),
    HasKey = lists:any(fun({K, _}) -> lists:member(K, [keyfile, key, certs_keys]) end, TlsOpts),
    Missing = [{K, F} || {K, F} <- TlsOpts, K =:= certfile orelse K =:= keyfile
                                                orelse K =:= cacertfile,
                         not filelib:is_regular(F)],
    Bad = [{versions, V} || {versions, V} <- TlsOpts, not (is_list(V) andalso V =/= [])]
        ++ [Problem || Missing =:= [], pem_readable(), {K, F} <- TlsOpts,
                       K =:= certfile orelse K =:= keyfile, Problem <- pem_problem(K, F)]
        ++ [{socket_option, K} || {K, _} <- TlsOpts, lists:member(K, socket_options())]
        ++ [{handshake, V} || {handshake, V} <- TlsOpts, V =/= full],
    case HasCert andalso HasKey of
        true when Missing =:= [], Bad =:= [] -> {ok, finish(Conf)};
        true when Missing =:= [] -> {error, {invalid_option, tls_opts, hd(Bad)}};
        true -> {error, {invalid_option, tls_opts, {file_not_found, hd(Missing)}}};
        false -> {error, {invalid_option, tls_opts, missing_certificate_or_key}}
    end;
check_tls(Conf) ->
    {ok, finish(Conf)}.

%% OTP 25's ssl reads certfile and keyfile only when a connection needs
%% them, so a file that holds no certificate, or no private key, would fail
%% every handshake: it is looked at here. (Whether the key matches the
%% certificate is still found out by the first handshake.)
pem_problem(Kind, File) ->
    Types = [Type || {Type, _, _} <- pem_entries(File)],
    Wanted = case Kind of
                 certfile -> ['Certificate'];
                 keyfile -> ['RSAPrivateKey', 'DSAPrivateKey', 'ECPrivateKey', 'PrivateKeyInfo']
             end,
    case [T || T <- Types, lists:member(T, Wanted)] of
        [] when Kind =:= certfile -> [{no_certificate, {certfile, File}}];
        [] -> [{no_private_key, {keyfile, File}}];
        _ -> []
    end.

%% public_key reads PEM files; a node without it (a release built without
%% ssl) cannot serve TLS at all, which the listener's start then says
%% (`tls_unavailable', falco_listener_sup), rather than calling every
%% file one without a certificate.
pem_readable() ->
    code:ensure_loaded(public_key) =:= {module, public_key}.

pem_entries(File) ->
    try
        {ok, Pem} = file:read_file(File),
        public_key:pem_decode(Pem)
    catch
        _:_ -> []
    end.

%% gen_tcp/inet options: the listener's own options set them.
socket_options() ->
    [active, mode, packet, packet_size, header, deliver, line_delimiter, exit_on_close,
     show_econnreset, ip, ifaddr, port, fd, backlog, reuseaddr, reuseport, reuseport_lb,
     nodelay, send_timeout, send_timeout_close, inet_backend, inet, inet6, local, buffer,
     recbuf, sndbuf, keepalive, linger, tos, tclass, priority, high_watermark,
     low_watermark, high_msgq_watermark, low_msgq_watermark, delay_send, dontroute,
     ipv6_v6only, netns, bind_to_device, raw, debug, tcp_module].

finish(Conf) ->
    Conf#{limits => http1_limits(Conf)}.

%% @doc The limits of falco_http1's parser from a listener's configuration,
%% with the empty lines it skips before a request line (RFC 9112 §2.2 lets
%% a server ignore "at least one"; 8 is past any client's stray CRLFs).
-spec http1_limits(map()) -> falco_http1:limits().
http1_limits(Conf) ->
    Limits = maps:with([max_request_line, max_header_line, max_header_block, max_header_count],
                       Conf),
    Limits#{max_empty_lines => 8}.

%% @doc The options of `falco_http2_machine' from a listener's
%% configuration (every default is in {@link defaults/0}, nowhere else).
-spec http2_machine(map()) -> falco_http2_machine:opts().
http2_machine(Conf) ->
    #{max_concurrent_streams => maps:get(h2_max_concurrent_streams, Conf),
      initial_window_size => maps:get(h2_initial_window_size, Conf),
      connection_window_size => maps:get(h2_connection_window_size, Conf),
      max_receive_buffer => maps:get(h2_max_receive_buffer, Conf),
      max_frame_size => maps:get(h2_max_frame_size, Conf),
      max_header_list_size => maps:get(h2_max_header_list_size, Conf),
      max_header_block => maps:get(h2_max_header_block, Conf),
      max_continuations => maps:get(h2_max_continuations, Conf),
      max_header_count => maps:get(max_header_count, Conf),
      settings_timeout => maps:get(h2_settings_timeout, Conf),
      send_timeout => maps:get(send_timeout, Conf),
      send_min_rate => maps:get(h2_send_min_rate, Conf),
      idle_timeout => maps:get(idle_timeout, Conf),
      enable_connect_protocol => maps:get(h2_enable_connect_protocol, Conf),
      flood_limits => maps:get(h2_flood_limits, Conf),
      %% the window of h2_flood_limits' counters, ms (not an option: the
      %% limits are per 10 s, as cowboy's are)
      flood_window => 10000}.

%% @doc The options of `falco_http3_machine' from a listener's
%% configuration: its field section limits are the listener's
%% (`max_header_block', `max_header_count'), the rest fixed here, the one
%% place of their defaults. `control_stream' (our control stream's ID) and
%% `grease' (the N of the reserved setting sent) are a connection's own.
-spec http3_machine(map()) -> #{atom() => term()}.
http3_machine(Conf) ->
    %% a listener's h2_flood_limits may name only some budgets (HTTP/2's
    %% machine merges it over the defaults too)
    Limits = maps:merge(maps:get(h2_flood_limits, defaults()), maps:get(h2_flood_limits, Conf)),
    #{max_field_section_size => maps:get(max_header_block, Conf),
      max_header_count => maps:get(max_header_count, Conf),
      %% a control frame (SETTINGS, GOAWAY...) larger than this is an error
      max_control_frame => 16384,
      %% frames of unknown or reserved types a connection may be sent
      max_ignored_frames => 1000,
      %% rapid reset: the client's stream resets per window, HTTP/2's budget
      max_resets => maps:get(rst_stream, Limits),
      %% empty DATA frames, and a WebSocket tunnel's DATA frames under
      %% 1 KB, per window: HTTP/2's budgets of them
      max_empty_data => maps:get(empty_data, Limits),
      max_tunnel_data => maps:get(tunnel_data, Limits),
      reset_window => 10000,
      control_stream => 3,
      grease => 0,
      %% RFC 9220: WebSocket over HTTP/3, with HTTP/2's option (RFC 8441)
      enable_connect_protocol => maps:get(h2_enable_connect_protocol, Conf)}.

%% @doc The QUIC transport parameters and limits of a listener's
%% configuration (the `h3_' options, without their prefix).
-spec quic(map()) -> #{idle_timeout := pos_integer(), handshake_timeout := pos_integer(),
                       max_handshakes := pos_integer(),
                       max_handshakes_per_address := pos_integer(),
                       initial_max_data := pos_integer(),
                       initial_max_stream_data := pos_integer(),
                       max_streams_bidi := non_neg_integer(),
                       max_streams_uni := pos_integer(),
                       key_update_packets := auto | pos_integer(),
                       aead_integrity_limit := auto | pos_integer()}.
quic(Conf) ->
    maps:from_list([{K, maps:get(list_to_atom("h3_" ++ atom_to_list(K)), Conf)}
                    || K <- [idle_timeout, handshake_timeout, max_handshakes,
                             max_handshakes_per_address, initial_max_data,
                             initial_max_stream_data, max_streams_bidi, max_streams_uni,
                             key_update_packets, aead_integrity_limit]]).

%% @doc The options of a WebSocket handler that it may leave out
%% (falco_ws_handler; checked by falco_ws_handshake:check_opts/1).
-spec websocket_defaults() -> #{atom() => term()}.
websocket_defaults() ->
    #{max_frame_size => 16 * 1024 * 1024, max_message_size => 16 * 1024 * 1024,
      %% data frames of one message, and those of them with no payload
      %% (falco_ws_session): Autobahn's largest case is 4 MB in 64-byte
      %% fragments, 65,536 frames
      max_fragments => 65536, max_empty_fragments => 64,
      idle_timeout => 60000, ping_interval => infinity, close_timeout => 5000,
      compress => false, protocols => []}.

valid(routes, Routes) -> is_list(Routes);
valid(router_opts, RouterOpts) -> is_map(RouterOpts);
valid(middleware, Ms) -> is_list(Ms);
valid(handler, H) when is_atom(H) -> true;
valid(handler, {M, _}) when is_atom(M) -> true;
valid(handler, F) -> is_function(F, 1);
valid(port, P) -> is_integer(P) andalso P >= 0 andalso P =< 65535;
valid(ip, Ip) -> is_tuple(Ip) andalso (tuple_size(Ip) =:= 4 orelse tuple_size(Ip) =:= 8)
                     andalso inet:ntoa(Ip) =/= {error, einval};
valid(K, B) when K =:= nodelay; K =:= h2_enable_connect_protocol; K =:= http3 -> is_boolean(B);
%% RFC 9000 §18.2: a varint (2^62 - 1) for windows, 2^60 for stream counts;
%% RFC 9114 §6.2: a client needs 3 unidirectional streams.
valid(K, V) when K =:= h3_initial_max_data; K =:= h3_initial_max_stream_data ->
    is_integer(V) andalso V > 0 andalso V < 1 bsl 62;
valid(h3_max_streams_bidi, V) -> is_integer(V) andalso V >= 0 andalso V =< 1 bsl 60;
valid(h3_max_streams_uni, V) -> is_integer(V) andalso V >= 3 andalso V =< 1 bsl 60;
valid(h3_alt_svc_max_age, V) -> is_integer(V) andalso V >= 0;
valid(h3_sockets, V) -> is_integer(V) andalso V >= 1 andalso V =< 1024;
valid(h3_conn_module, V) -> is_atom(V);
valid(h3_retry, always) -> true;
valid(h3_retry, never) -> true;
valid(h3_retry, {threshold, N}) -> is_integer(N) andalso N >= 0;
valid(h3_retry, _) -> false;
valid(K, V) when K =:= h3_key_update_packets; K =:= h3_aead_integrity_limit ->
    V =:= auto orelse (is_integer(V) andalso V > 0);
valid(inet_backend, B) -> B =:= socket orelse B =:= inet;
valid(reuseport, V) -> V =:= false orelse (V =:= true andalso falco_transport:reuseport() =/= unsupported);
valid(K, V) when K =:= max_connections; K =:= max_keep_alive_requests ->
    V =:= infinity orelse (is_integer(V) andalso V > 0);
valid(handler_timeout, V) -> V =:= infinity orelse (is_integer(V) andalso V > 0);
valid(max_requests_in_flight, V) -> V =:= infinity orelse (is_integer(V) andalso V > 0);
valid(K, V) when K =:= send_timeout; K =:= idle_timeout; K =:= request_timeout;
                 K =:= body_timeout; K =:= hibernate_after ->
    V =:= infinity orelse (is_integer(V) andalso V >= 0);
valid(max_header_count, V) -> is_integer(V) andalso V >= 0;
valid(transport, V) -> V =:= tcp orelse V =:= tls;
valid(tls_opts, V) -> is_list(V) andalso lists:all(fun(O) -> is_tuple(O) andalso tuple_size(O) =:= 2
                                                             andalso is_atom(element(1, O)) end, V);
valid(drain_notice, V) -> is_integer(V) andalso V >= 0;
valid(K, V) when K =:= handshake_timeout; K =:= shutdown_timeout ->
    V =:= infinity orelse (is_integer(V) andalso V >= 0);
valid(protocols, V) -> valid_protocols(V);
valid(proxy_protocol, V) -> V =:= off orelse V =:= optional orelse V =:= required;
valid(proxy_header_timeout, V) -> is_integer(V) andalso V > 0;
%% The longest version 1 line (107 bytes) must fit, and the format's own
%% bound (16 + 65535).
valid(proxy_header_max_size, V) -> is_integer(V) andalso V >= 107 andalso V =< 65551;
valid(h2_max_concurrent_streams, V) -> is_integer(V) andalso V >= 0 andalso V =< 16#7fffffff;
valid(h2_initial_window_size, V) -> is_integer(V) andalso V >= 1 andalso V =< 16#7fffffff;
valid(h2_connection_window_size, V) -> is_integer(V) andalso V >= 65535 andalso V =< 16#7fffffff;
valid(h2_max_frame_size, V) -> is_integer(V) andalso V >= 16384 andalso V =< 16777215;
valid(h2_max_continuations, V) -> is_integer(V) andalso V >= 0;
valid(h2_send_min_rate, V) -> is_integer(V) andalso V >= 0;
valid(h2_send_buffer, V) -> is_integer(V) andalso V >= 1024;
valid(K, V) when K =:= h2_settings_timeout; K =:= h2_preface_timeout ->
    V =:= infinity orelse (is_integer(V) andalso V > 0);
valid(h2_flood_limits, V) ->
    Keys = maps:keys(maps:get(h2_flood_limits, defaults())),
    is_map(V) andalso lists:all(fun({K, N}) -> lists:member(K, Keys) andalso is_integer(N)
                                                   andalso N >= 0 end, maps:to_list(V));
valid(event_handler, undefined) -> true;
valid(event_handler, F) when is_function(F, 3) -> true;
valid(event_handler, {M, F}) -> is_atom(M) andalso is_atom(F);
valid(event_handler, _) -> false;
valid(max_body, V) -> is_integer(V) andalso V >= 0;
valid(min_body_rate, none) -> true;
valid(min_body_rate, #{grace := G, bytes_per_second := R} = V) ->
    map_size(V) =:= 2 andalso is_integer(G) andalso G >= 0 andalso is_integer(R) andalso R > 0;
valid(min_body_rate, _) -> false;
valid(_, V) -> is_integer(V) andalso V > 0.

%% A non-empty list of http1 and h2, each at most once.
valid_protocols(V) ->
    is_list(V) andalso V =/= [] andalso length(lists:usort(V)) =:= length(V)
        andalso lists:all(fun(P) -> P =:= http1 orelse P =:= h2 end, V).
