%% @doc The transport layer under every protocol: plain TCP (`gen_tcp') or
%% TLS (`ssl'), chosen per listener with `transport => tcp | tls'.
%%
%% A connection's transport is the module itself (`gen_tcp' or `ssl'):
%% both export `send/2', `recv/3', `close/1' and `shutdown/2' with the same
%% meaning, so the HTTP/1.1 loop calls `T:send(Sock, Data)' whatever it
%% runs over. The few calls that differ (`setopts', `peername', the active
%% mode messages) go through this module.
%%
%% TLS: the listen socket and the accept are plain TCP; the handshake runs
%% in the connection process ({@link handshake/3}, with a timeout), never in
%% an acceptor, so a slow or silent client cannot hold an acceptor. Defaults
%% are modern (RFC 9325, RFC 9113 §9.2): TLS 1.3 and 1.2 only, AEAD cipher
%% suites with forward secrecy (no CBC, no static RSA, no truncated CCM_8
%% tags), the server's cipher order, no client-initiated renegotiation, and
%% ALPN advertising the listener's protocols in order (h2, http/1.1). Any of
%% these can be overridden through `tls_opts', whose entries win.
-module(falco_transport).

-export([handshake/3, tls_options/2, alpn_ids/1, setopts/3, peername/2, messages/1,
         default_ciphers/0, default_ciphers/1]).

-define(DEFAULT_VERSIONS, ['tlsv1.3', 'tlsv1.2']).

-type transport() :: gen_tcp | ssl.
-type socket() :: inet:socket() | ssl:sslsocket().
-export_type([transport/0, socket/0]).

%% @doc Runs the TLS handshake on an accepted TCP socket. Returns the TLS
%% socket and the ALPN protocol the client chose (`undefined' if none).
-spec handshake(inet:socket(), [ssl:tls_server_option()], timeout()) ->
          {ok, ssl:sslsocket(), binary() | undefined} | {error, term()}.
handshake(Socket, TlsOpts, Timeout) ->
    case ssl:handshake(Socket, TlsOpts, Timeout) of
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
-spec tls_options([ssl:tls_server_option()], [http1 | h2]) -> [ssl:tls_server_option()].
tls_options(UserOpts, Protocols) ->
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
        ++ [{alpn_preferred_protocols, alpn_ids(Protocols)}],
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
