%% @doc The server side of a TLS 1.3 full handshake (RFC 8446 §2, §4) as
%% a pure machine, for QUIC (RFC 9001 §4) now and a TCP record layer
%% later: handshake bytes in, at the level they came at, and
%% `{ok, State, Actions}' or `{error, Alert, Reason}' out. It never
%% touches a socket, a timer or a process.
%%
%% Levels are QUIC's encryption levels, and the same three stages of a
%% TLS connection over TCP: `initial' (plaintext: ClientHello), `handshake'
%% (the handshake traffic keys: the client's Finished) and `application'.
%% Each phase takes bytes at one level; bytes at another, or left over
%% when the level changes (§5.1), are unexpected_message. A message may
%% come in pieces or several to a piece; one longer than
%% `max_handshake_size' is refused before it is buffered.
%%
%% Actions, to be carried out in order:
%% <ul>
%% <li>`{server_name, Host}', `{alpn, Protocol}', `{transport_params, Bin}':
%%     what the accepted ClientHello said (each only when present; the
%%     transport parameters are the peer's, still encoded);</li>
%% <li>`{send, Level, Bytes}': handshake messages to send at the level;</li>
%% <li>`change_cipher_spec': TCP only (not with `quic'), once, after the
%%     first server message when the client asked for middlebox
%%     compatibility (a legacy_session_id, §D.4);</li>
%% <li>`{write_secret, Level, Suite, Secret}', `{read_secret, Level, Suite,
%%     Secret}': a traffic secret now known, in the order QUIC installs
%%     them: both handshake secrets after the ServerHello, the server's
%%     application secret after its Finished, the client's after the
%%     client's Finished is verified;</li>
%% <li>`{peer_certificates, Chain}': the client's certificate chain
%%     (DER, end-entity first), validated, with `verify_peer';</li>
%% <li>`handshake_complete': the client's Finished was right.</li>
%% </ul>
%%
%% Negotiation picks, among what the client offers, the server's first
%% choice: cipher suite, group (one the client sent a share for; if none,
%% a HelloRetryRequest for the first the client supports, and the second
%% ClientHello must be the first one changed only as §4.1.2 allows), ALPN
%% protocol, and the first credential with a signature scheme the client
%% takes. A ClientHello without TLS 1.3 in supported_versions is
%% `{error, protocol_version, tls12_only}': a TCP caller hands those to
%% OTP's ssl. With `quic', a non-empty legacy_session_id is
%% `{error, illegal_parameter, legacy_session_id}' (RFC 9001 §8.4 makes it
%% a PROTOCOL_VIOLATION), the client's quic_transport_parameters are
%% required when the server has its own (missing_extension, §8.2) and ALPN
%% is required by default (no_application_protocol, §8.1).
%%
%% With `verify => verify_peer' the server sends a CertificateRequest
%% (§4.3.2); a client's chain is validated up to one of the `trusted' CA
%% certificates and its CertificateVerify checked, then reported as
%% `{peer_certificates, Chain}' (before handshake_complete); an empty one
%% is accepted unless `fail_if_no_peer_cert' (certificate_required). No
%% PSK or 0-RTT (offers are ignored: a full handshake), and no
%% post-handshake messages yet.
%%
%% @private internal to falco
-module(falco_tls13_server).

-export([new/1, handshake_data/3, info/1, default_opts/0]).
-export_type([state/0, opts/0, action/0, level/0, result/0]).

-type level() :: initial | handshake | application.
-type suite() :: falco_tls13_keys:suite().
-type group() :: falco_tls13_ext:group().
-type alert() :: falco_tls13_alert:alert().
-type opts() :: #{credentials := [falco_tls13_cert:credential(), ...],
                  alpn => [binary()],
                  alpn_required => boolean(),
                  transport_params => binary(),
                  cipher_suites => [suite(), ...],
                  groups => [group(), ...],
                  quic => boolean(),
                  max_handshake_size => pos_integer(),
                  verify => verify_none | verify_peer,
                  fail_if_no_peer_cert => boolean(),
                  trusted => [binary()],
                  random => fun((pos_integer()) -> binary()),
                  keygen => fun((group()) -> {binary(), binary()})}.
-type action() :: {send, level(), binary()}
                | change_cipher_spec
                | {write_secret | read_secret, handshake | application, suite(), binary()}
                | {server_name, binary()}
                | {alpn, binary()}
                | {transport_params, binary()}
                | {peer_certificates, [binary(), ...]}
                | handshake_complete.
-type result() :: {ok, state(), [action()]} | {error, alert(), term()}.

-define(K, falco_tls13_keys).
-define(M, falco_tls13_msg).
-define(TLS13, 16#0304).

-record(tls13, {phase = hello :: phase(),
                opts :: map(),
                buffer = <<>> :: binary(),
                transcript = [] :: [binary()],
                first :: undefined | {falco_tls13_msg:client_hello(), group()},
                ccs_sent = false :: boolean(),
                client_hs :: undefined | binary(),
                client_secret :: undefined | binary(),
                peer :: undefined | {[binary(), ...], term()},
                master :: undefined | binary(),
                info = #{} :: map()}).
-opaque state() :: #tls13{}.
-type phase() :: hello | retry | client_certificate | client_certificate_verify | finished
               | connected.

%% @doc The defaults of every option but `credentials'. `alpn_required'
%% defaults to the `quic' flag.
-spec default_opts() -> map().
default_opts() ->
    #{alpn => [], cipher_suites => ?K:suites(), groups => [x25519, secp256r1, secp384r1],
      quic => false, max_handshake_size => 65536,
      verify => verify_none, fail_if_no_peer_cert => false, trusted => [],
      random => fun crypto:strong_rand_bytes/1, keygen => fun keygen/1}.

%% @doc A machine waiting for a ClientHello.
-spec new(opts()) -> state().
new(Opts = #{credentials := [_ | _]}) ->
    Full = maps:merge(default_opts(), Opts),
    #tls13{opts = maps:merge(#{alpn_required => maps:get(quic, Full)}, Full)}.

%% @doc Handshake bytes from the client at a level.
-spec handshake_data(level(), binary(), state()) -> result().
handshake_data(Level, Data, St = #tls13{phase = Phase, buffer = Buf}) ->
    case level(Phase) of
        Level -> messages(St#tls13{buffer = <<Buf/binary, Data/binary>>}, []);
        _ when Data =:= <<>> -> {ok, St, []};
        _ -> {error, unexpected_message, {data_at, Level, Phase}}
    end.

%% @doc What the handshake has decided so far: `phase', and once known
%% `suite', `group', `scheme', `alpn', `server_name', `transport_params'.
-spec info(state()) -> map().
info(#tls13{phase = Phase, info = Info}) ->
    Info#{phase => Phase}.

level(hello) -> initial;
level(retry) -> initial;
level(client_certificate) -> handshake;
level(client_certificate_verify) -> handshake;
level(finished) -> handshake;
level(connected) -> application.

messages(St = #tls13{buffer = Buf, opts = #{max_handshake_size := Max}}, Acc) ->
    case ?M:next(Buf, Max) of
        more ->
            {ok, St, lists:append(lists:reverse(Acc))};
        {ok, Type, Body, Msg, Rest} ->
            Phase = St#tls13.phase,
            case message(Phase, Type, Body, Msg, St#tls13{buffer = Rest}) of
                {ok, St1 = #tls13{phase = Next}, Actions} ->
                    case Rest =/= <<>> andalso moves_on(Phase, Next) of
                        true -> {error, unexpected_message, {data_before_key_change, Phase}};
                        false -> messages(St1, [Actions | Acc])
                    end;
                Error ->
                    Error
            end;
        Error ->
            Error
    end.

%% Whether bytes after a message can no longer follow it: the level
%% changes, or a HelloRetryRequest was sent, which the client must wait for.
moves_on(Phase, Next) ->
    level(Phase) =/= level(Next) orelse Next =:= retry.

message(hello, client_hello, Body, Msg, St) ->
    first_hello(Body, Msg, St);
message(retry, client_hello, Body, Msg, St) ->
    second_hello(Body, Msg, St);
message(client_certificate, certificate, Body, Msg, St) ->
    client_certificate(Body, Msg, St);
message(client_certificate_verify, certificate_verify, Body, Msg, St) ->
    client_certificate_verify(Body, Msg, St);
message(finished, finished, Body, _, St) ->
    client_finished(Body, St);
message(Phase, Type, _, _, _) ->
    {error, unexpected_message, {Type, Phase}}.

%% -- ClientHello --------------------------------------------------------------

first_hello(Body, Msg, St) ->
    case hello(Body, St) of
        {ok, Hello, Neg = #{share := none, group := Group}} ->
            retry(Hello, Msg, Neg, St#tls13{first = {Hello, Group}});
        {ok, Hello, Neg} ->
            flight(Hello, Msg, Neg, St);
        Error ->
            Error
    end.

second_hello(Body, Msg, St = #tls13{first = {First, Group}}) ->
    case hello(Body, St) of
        {ok, Hello, Neg = #{group := Group, share := {_, _}}} ->
            case same_hello(First, Hello) of
                ok -> flight(Hello, Msg, Neg, St);
                Error -> Error
            end;
        {ok, _, _} ->
            {error, illegal_parameter, second_hello_key_share};
        Error ->
            Error
    end.

hello(Body, St) ->
    case ?M:client_hello(Body) of
        {ok, Hello} ->
            case check(Hello, St) of
                ok -> negotiate(Hello, St#tls13.opts);
                Error -> Error
            end;
        Error ->
            Error
    end.

%% The checks that come before any choice.
check(Hello, #tls13{opts = Opts}) ->
    first_error([fun() -> version(Hello) end,
                 fun() -> compression(Hello) end,
                 fun() -> quic(Hello, Opts) end]).

first_error([]) ->
    ok;
first_error([Check | More]) ->
    case Check() of
        ok -> first_error(More);
        {error, _, _} = Error -> Error
    end.

version(#{extensions := #{supported_versions := Versions}}) ->
    case lists:member(?TLS13, Versions) of
        true -> ok;
        false -> {error, protocol_version, tls12_only}
    end;
version(_) ->
    {error, protocol_version, tls12_only}.

%% §4.1.2: a TLS 1.3 ClientHello offers the null compression only.
compression(#{compression := <<0>>}) -> ok;
compression(_) -> {error, illegal_parameter, compression_methods}.

quic(_, #{quic := false}) ->
    ok;
quic(#{session_id := Sid}, _) when Sid =/= <<>> ->
    {error, illegal_parameter, legacy_session_id};
quic(#{extensions := Exts}, #{transport_params := _}) when not is_map_key(transport_params, Exts) ->
    {error, missing_extension, quic_transport_parameters};
quic(_, _) ->
    ok.

%% The choices, each the server's first among what the client offers.
negotiate(Hello = #{extensions := Exts}, Opts) ->
    Steps = [fun(N) -> suite(Hello, Opts, N) end,
             fun(N) -> credential(Exts, Opts, N) end,
             fun(N) -> group(Exts, Opts, N) end,
             fun(N) -> alpn(Exts, Opts, N) end],
    case fold(Steps, #{}) of
        {ok, Neg} -> {ok, Hello, Neg};
        Error -> Error
    end.

fold([], Neg) ->
    {ok, Neg};
fold([Step | More], Neg) ->
    case Step(Neg) of
        {ok, Neg1} -> fold(More, Neg1);
        {error, _, _} = Error -> Error
    end.

suite(#{cipher_suites := Offered}, #{cipher_suites := Ours}, Neg) ->
    case [S || S <- Ours, lists:member(?K:suite_code(S), Offered)] of
        [Suite | _] -> {ok, Neg#{suite => Suite}};
        [] -> {error, handshake_failure, no_common_cipher_suite}
    end.

credential(#{signature_algorithms := Offered}, #{credentials := Creds}, Neg) ->
    case falco_tls13_cert:select(Creds, Offered) of
        {ok, Cred, Scheme} -> {ok, Neg#{credential => Cred, scheme => Scheme}};
        error -> {error, handshake_failure, no_common_signature_scheme}
    end;
credential(_, _, _) ->
    {error, missing_extension, signature_algorithms}.

%% §4.2.8, §9.2: supported_groups and key_share come together, and every
%% share is of a group the client lists.
group(#{supported_groups := Groups, key_share := Shares}, #{groups := Ours}, Neg) ->
    case [G || {G, _} <- Shares, not lists:member(G, Groups)] of
        [] -> choose_group(Groups, Shares, Ours, Neg);
        _ -> {error, illegal_parameter, key_share_not_in_supported_groups}
    end;
group(_, _, _) ->
    {error, missing_extension, key_share_or_supported_groups}.

choose_group(Groups, Shares, Ours, Neg) ->
    Shared = [{G, Pub} || G <- Ours, {C, Pub} <- Shares, C =:= falco_tls13_ext:group_code(G)],
    Supported = [G || G <- Ours, lists:member(falco_tls13_ext:group_code(G), Groups)],
    case {Shared, Supported} of
        {[{G, Pub} | _], _} -> {ok, Neg#{group => G, share => {G, Pub}}};
        {[], [G | _]} -> {ok, Neg#{group => G, share => none}};
        {[], []} -> {error, handshake_failure, no_common_group}
    end.

alpn(_, #{alpn := []}, Neg) ->
    {ok, Neg};
alpn(#{alpn := Offered}, #{alpn := Ours}, Neg) ->
    case [P || P <- Ours, lists:member(P, Offered)] of
        [P | _] -> {ok, Neg#{alpn => P}};
        [] -> {error, no_application_protocol, no_common_protocol}
    end;
alpn(_, #{alpn_required := true}, _) ->
    {error, no_application_protocol, no_alpn_offered};
alpn(_, _, Neg) ->
    {ok, Neg}.

%% §4.1.2: the second ClientHello is the first with only key_share,
%% early_data (removed), cookie and pre_shared_key changed; unknown
%% extensions (padding among them) are not compared.
same_hello(First, Second = #{extensions := Exts}) ->
    Changeable = [key_share, early_data, cookie, pre_shared_key],
    Strip = fun(H = #{extensions := E}) ->
                    maps:without([extension_types], H#{extensions := maps:without(Changeable, E)})
            end,
    case Strip(First) =:= Strip(Second) of
        _ when is_map_key(early_data, Exts) -> {error, illegal_parameter, second_hello_early_data};
        _ when length(map_get(key_share, Exts)) =/= 1 ->
            {error, illegal_parameter, second_hello_key_share};
        true -> ok;
        false -> {error, illegal_parameter, second_hello_changed}
    end.

%% -- the server's flights -----------------------------------------------------

%% HelloRetryRequest (§4.1.4): the first ClientHello becomes its
%% message_hash in the transcript.
retry(#{session_id := Sid}, Msg, #{suite := Suite, group := Group}, St) ->
    Hrr = ?M:hello_retry_request(Sid, Suite, Group),
    Transcript = [Hrr, ?K:message_hash(?K:suite_hash(Suite), Msg)],
    {Ccs, St1} = ccs(Sid, St),
    {ok, St1#tls13{phase = retry, transcript = Transcript},
     [{send, initial, Hrr} | Ccs]}.

flight(Hello, Msg, Neg = #{suite := Suite, share := {Group, ClientPub}}, St) ->
    #tls13{opts = #{random := Random, keygen := Keygen}} = St,
    {Pub, Priv} = Keygen(Group),
    case shared_secret(Group, ClientPub, Priv) of
        {ok, Shared} ->
            ServerHello = ?M:server_hello(Random(32), maps:get(session_id, Hello), Suite,
                                          Group, Pub),
            server_flight(Hello, Neg, Shared,
                          St#tls13{transcript = [ServerHello, Msg | St#tls13.transcript]});
        error ->
            {error, illegal_parameter, {bad_key_share, Group}}
    end.

server_flight(Hello, Neg = #{suite := Suite}, Shared, St) ->
    Hash = ?K:suite_hash(Suite),
    HsSecret = ?K:handshake_secret(Hash, ?K:early_secret(Hash), Shared),
    [ServerHello | _] = St#tls13.transcript,
    {ClientHs, ServerHs} = ?K:handshake_traffic(Hash, HsSecret, th(Hash, St#tls13.transcript)),
    case encrypted_flight(Neg, Hash, ServerHs, St) of
        {ok, Flight, Transcript} ->
            Master = ?K:master_secret(Hash, HsSecret),
            {ClientAp, ServerAp} = ?K:application_traffic(Hash, Master, th(Hash, Transcript)),
            {Ccs, St1} = ccs(maps:get(session_id, Hello), St),
            St2 = St1#tls13{phase = after_flight(St#tls13.opts), transcript = Transcript,
                            master = Master, client_hs = ClientHs, client_secret = ClientAp,
                            info = info(Hello, Neg)},
            {ok, St2, reported(Hello, Neg)
                 ++ [{send, initial, ServerHello} | Ccs]
                 ++ [{read_secret, handshake, Suite, ClientHs},
                     {write_secret, handshake, Suite, ServerHs},
                     {send, handshake, Flight},
                     {write_secret, application, Suite, ServerAp}]};
        {error, Why} ->
            {error, internal_error, Why}
    end.

%% EncryptedExtensions, CertificateRequest (with verify_peer),
%% Certificate, CertificateVerify and Finished, and the transcript through
%% them.
encrypted_flight(Neg, Hash, ServerHs, St = #tls13{opts = Opts}) ->
    Ee = ?M:encrypted_extensions(ee_opts(Neg, Opts)),
    Cr = certificate_request(Opts),
    Cert = ?M:certificate(maps:get(chain, maps:get(credential, Neg))),
    T1 = [Cert, Cr, Ee | St#tls13.transcript],
    case certificate_verify(Neg, th(Hash, T1)) of
        {ok, Cv} ->
            Fin = ?M:finished(?K:verify_data(Hash, ServerHs, th(Hash, [Cv | T1]))),
            {ok, <<Ee/binary, Cr/binary, Cert/binary, Cv/binary, Fin/binary>>, [Fin, Cv | T1]};
        Error ->
            Error
    end.

after_flight(#{verify := verify_peer}) -> client_certificate;
after_flight(_) -> finished.

certificate_verify(#{credential := #{key := Key}, scheme := Scheme}, TH) ->
    case falco_tls13_cert:sign(Key, Scheme, falco_tls13_cert:content(server, TH)) of
        {ok, Sig} -> {ok, ?M:certificate_verify(falco_tls13_cert:scheme_code(Scheme), Sig)};
        Error -> Error
    end.

ee_opts(Neg, Opts) ->
    maps:merge(maps:with([alpn], Neg), maps:with([transport_params], Opts)).

reported(#{extensions := Exts}, Neg) ->
    [{server_name, H} || #{server_name := H} <- [Exts]]
        ++ [{alpn, P} || #{alpn := P} <- [Neg]]
        ++ [{transport_params, P} || #{transport_params := P} <- [Exts]].

info(#{extensions := Exts}, Neg) ->
    maps:merge(maps:with([server_name, transport_params], Exts),
               maps:with([suite, group, scheme, alpn], Neg)).

%% Middlebox compatibility (§D.4): one change_cipher_spec after the first
%% server message, over TCP, when the client sent a session id.
ccs(<<>>, St) ->
    {[], St};
ccs(_, St = #tls13{ccs_sent = true}) ->
    {[], St};
ccs(_, St = #tls13{opts = #{quic := true}}) ->
    {[], St};
ccs(_, St) ->
    {[change_cipher_spec], St#tls13{ccs_sent = true}}.

%% -- client certificates (§4.3.2, §4.4.2, §4.4.3) ---------------------------

%% The schemes a client may sign its CertificateVerify with.
client_schemes() ->
    [ecdsa_secp256r1_sha256, ecdsa_secp384r1_sha384, ecdsa_secp521r1_sha512,
     rsa_pss_rsae_sha256, rsa_pss_rsae_sha384, rsa_pss_rsae_sha512, ed25519, ed448].

%% Certificates may also be signed with PKCS#1 v1.5 (rsa_pkcs1_sha256,
%% _sha384, _sha512), as most RSA CAs sign them; public_key checks those.
certificate_request(#{verify := verify_peer}) ->
    Codes = [falco_tls13_cert:scheme_code(S) || S <- client_schemes()],
    ?M:certificate_request(Codes, Codes ++ [16#0401, 16#0501, 16#0601]);
certificate_request(_) ->
    <<>>.

client_certificate(Body, Msg, St = #tls13{opts = Opts}) ->
    case ?M:parse_certificate(Body) of
        {ok, <<>>, []} when map_get(fail_if_no_peer_cert, Opts) ->
            {error, certificate_required, no_client_certificate};
        {ok, <<>>, []} ->
            {ok, St#tls13{phase = finished, transcript = [Msg | St#tls13.transcript]}, []};
        {ok, <<>>, Chain} ->
            peer_chain(Chain, Msg, St);
        {ok, _, _} ->
            {error, illegal_parameter, certificate_request_context};
        Error ->
            Error
    end.

peer_chain(Chain = [Leaf | _], Msg, St = #tls13{opts = #{trusted := Trusted}}) ->
    case {falco_tls13_cert:validate(Chain, Trusted), falco_tls13_cert:public_key(Leaf)} of
        {ok, {ok, Public}} ->
            {ok, St#tls13{phase = client_certificate_verify, peer = {Chain, Public},
                          transcript = [Msg | St#tls13.transcript]}, []};
        {ok, error} ->
            {error, unsupported_certificate, client_public_key};
        {{error, _, _} = Error, _} ->
            Error
    end.

client_certificate_verify(Body, Msg, St = #tls13{peer = {Chain, Public}, info = #{suite := Suite}}) ->
    case ?M:parse_certificate_verify(Body) of
        {ok, Code, Sig} ->
            Scheme = falco_tls13_cert:scheme_from_code(Code),
            Hash = ?K:suite_hash(Suite),
            Content = falco_tls13_cert:content(client, th(Hash, St#tls13.transcript)),
            case lists:member(Scheme, client_schemes())
                andalso falco_tls13_cert:verify(Public, Scheme, Content, Sig) of
                true ->
                    {ok, St#tls13{phase = finished, transcript = [Msg | St#tls13.transcript]},
                     [{peer_certificates, Chain}]};
                false when Scheme =:= unknown ->
                    {error, illegal_parameter, {client_scheme, Code}};
                false ->
                    {error, decrypt_error, bad_client_certificate_verify}
            end;
        Error ->
            Error
    end.

%% -- the client's Finished ----------------------------------------------------

client_finished(Body, St = #tls13{client_hs = ClientHs, info = #{suite := Suite}}) ->
    Hash = ?K:suite_hash(Suite),
    Expected = ?K:verify_data(Hash, ClientHs, th(Hash, St#tls13.transcript)),
    case ?M:parse_finished(Body, byte_size(Expected)) of
        {ok, VerifyData} ->
            case crypto:hash_equals(VerifyData, Expected) of
                true ->
                    %% connected: only what a message at the application
                    %% level needs to be refused, and the decisions, are
                    %% kept (every connection held its copy of the
                    %% options, credentials included, for its life)
                    #{max_handshake_size := Max} = St#tls13.opts,
                    {ok, St#tls13{phase = connected, transcript = [], client_hs = undefined,
                                  client_secret = undefined, first = undefined,
                                  opts = #{max_handshake_size => Max}},
                     [{read_secret, application, Suite, St#tls13.client_secret},
                      handshake_complete]};
                false ->
                    {error, decrypt_error, bad_finished}
            end;
        Error ->
            Error
    end.

%% -- key exchange -------------------------------------------------------------

th(Hash, Reversed) ->
    ?K:transcript_hash(Hash, lists:reverse(Reversed)).

-spec keygen(group()) -> {binary(), binary()}.
keygen(Group) ->
    {Pub, Priv} = crypto:generate_key(ecdh, Group),
    {Pub, Priv}.

%% The client's share is checked for its group's size and form (§4.2.8.2:
%% uncompressed points), and an X25519/X448 result of zeros refused (§7.4.2).
shared_secret(Group, Pub, Priv) ->
    case share_ok(Group, Pub) of
        true ->
            try crypto:compute_key(ecdh, Pub, Priv, Group) of
                Shared -> nonzero(Shared)
            catch
                _:_ -> error
            end;
        false ->
            error
    end.

share_ok(x25519, Pub) -> byte_size(Pub) =:= 32;
share_ok(x448, Pub) -> byte_size(Pub) =:= 56;
share_ok(secp256r1, <<4, _:64/binary>>) -> true;
share_ok(secp384r1, <<4, _:96/binary>>) -> true;
share_ok(_, _) -> false.

nonzero(Shared) ->
    case binary:copy(<<0>>, byte_size(Shared)) of
        Shared -> error;
        _ -> {ok, Shared}
    end.
