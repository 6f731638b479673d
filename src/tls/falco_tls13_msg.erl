%% @doc TLS 1.3 handshake messages (RFC 8446 §4): the framing every
%% message shares (a type byte and a 24-bit length, §4), the ClientHello
%% parsed (§4.1.2, its extensions through {@link falco_tls13_ext}) and the
%% server's messages built: ServerHello and HelloRetryRequest (§4.1.3,
%% §4.1.4), EncryptedExtensions (§4.3.1), Certificate (§4.4.2),
%% CertificateVerify (§4.4.3) and Finished (§4.4.4); the client's
%% Finished parsed.
%%
%% Every message is returned whole, header included, because that is what
%% the transcript hashes. The same bytes go over QUIC's CRYPTO frames (RFC
%% 9001 §4) and, later, TLS records. Pure: `{error, Alert, Reason}' for
%% bad input, never an exception.
%%
%% @private internal to falco
-module(falco_tls13_msg).

-export([next/2, client_hello/1, server_hello/5, hello_retry_request/3,
         encrypted_extensions/1, certificate_request/2, certificate/1, certificate_verify/2,
         finished/1, parse_certificate/1, parse_certificate_verify/1, parse_finished/2,
         hrr_random/0, type/1]).
-export_type([client_hello/0, msg_type/0]).

-type msg_type() :: client_hello | server_hello | new_session_ticket | end_of_early_data
                  | encrypted_extensions | certificate | certificate_request
                  | certificate_verify | finished | key_update | message_hash | unknown.
-type client_hello() :: #{legacy_version := 0..65535,
                          random := <<_:256>>,
                          session_id := binary(),
                          cipher_suites := [0..65535],
                          compression := binary(),
                          extensions := falco_tls13_ext:extensions(),
                          extension_types := [0..65535]}.
-type error() :: {error, falco_tls13_alert:alert(), term()}.

%% @doc The next whole message of a buffer of handshake bytes:
%% `{ok, Type, Body, Message, Rest}' (Message is header and body), `more'
%% when the buffer holds only part of one, or an error for a message
%% longer than Max bytes (it could never be buffered).
-spec next(binary(), non_neg_integer()) ->
          {ok, msg_type(), binary(), binary(), binary()} | more | error().
next(<<_, Len:24, _/binary>>, Max) when Len > Max ->
    {error, unexpected_message, {message_too_long, Len}};
next(<<T, Len:24, Body:Len/binary, Rest/binary>> = Buf, _) ->
    {ok, type(T), Body, binary:part(Buf, 0, Len + 4), Rest};
next(_, _) ->
    more.

%% @doc The name of a HandshakeType code (§4).
-spec type(0..255) -> msg_type().
type(1) -> client_hello;
type(2) -> server_hello;
type(4) -> new_session_ticket;
type(5) -> end_of_early_data;
type(8) -> encrypted_extensions;
type(11) -> certificate;
type(13) -> certificate_request;
type(15) -> certificate_verify;
type(20) -> finished;
type(24) -> key_update;
type(254) -> message_hash;
type(_) -> unknown.

%% @doc A ClientHello's body parsed (§4.1.2). A hello without extensions
%% (TLS 1.2 and older may send one) parses with none.
-spec client_hello(binary()) -> {ok, client_hello()} | error().
client_hello(<<Version:16, Random:32/binary, SidLen, Sid:SidLen/binary,
               CsLen:16, Cs:CsLen/binary, CmLen, Cm:CmLen/binary, Rest/binary>>)
  when SidLen =< 32, CsLen >= 2, CsLen rem 2 =:= 0, CmLen >= 1 ->
    Hello = #{legacy_version => Version, random => Random, session_id => Sid,
              cipher_suites => [C || <<C:16>> <= Cs], compression => Cm},
    case extensions(Rest) of
        {ok, Exts, Types} -> psk_last(Hello#{extensions => Exts, extension_types => Types});
        Error -> Error
    end;
client_hello(_) ->
    {error, decode_error, client_hello}.

extensions(<<>>) ->
    {ok, #{}, []};
extensions(<<Len:16, Exts:Len/binary>>) ->
    falco_tls13_ext:parse_list(Exts);
extensions(_) ->
    {error, decode_error, extensions_length}.

%% §4.2.11: pre_shared_key is the last extension of a ClientHello.
psk_last(Hello = #{extension_types := Types}) ->
    case lists:member(41, Types) andalso lists:last(Types) =/= 41 of
        true -> {error, illegal_parameter, pre_shared_key_not_last};
        false -> {ok, Hello}
    end.

%% @doc A ServerHello (§4.1.3): the random, the client's legacy_session_id
%% echoed, the cipher suite and the server's key share.
-spec server_hello(<<_:256>>, binary(), falco_tls13_keys:suite(), falco_tls13_ext:group(),
                   binary()) -> binary().
server_hello(Random, SessionId, Suite, Group, Public) ->
    hello(Random, SessionId, Suite, [falco_tls13_ext:key_share(Group, Public),
                                     falco_tls13_ext:supported_versions()]).

%% @doc A HelloRetryRequest (§4.1.4): a ServerHello with the special
%% random, naming the group the client's second ClientHello must share.
-spec hello_retry_request(binary(), falco_tls13_keys:suite(), falco_tls13_ext:group()) ->
          binary().
hello_retry_request(SessionId, Suite, Group) ->
    hello(hrr_random(), SessionId, Suite, [falco_tls13_ext:selected_group(Group),
                                           falco_tls13_ext:supported_versions()]).

hello(Random, SessionId, Suite, Exts) ->
    message(2, [<<16#0303:16, Random/binary, (byte_size(SessionId)), SessionId/binary,
                  (falco_tls13_keys:suite_code(Suite)):16, 0>>,
                falco_tls13_ext:build(Exts)]).

%% @doc The random of a HelloRetryRequest: SHA-256 of
%% "HelloRetryRequest" (§4.1.3).
-spec hrr_random() -> <<_:256>>.
hrr_random() ->
    <<16#CF21AD74E59A6111BE1D8C021E65B891C2A211167ABB8C5E079E09E2C8A8339C:256>>.

%% @doc EncryptedExtensions (§4.3.1) with the chosen ALPN protocol and
%% the QUIC transport parameters, each when given.
-spec encrypted_extensions(#{alpn => binary(), transport_params => binary()}) -> binary().
encrypted_extensions(Opts) ->
    Exts = [falco_tls13_ext:alpn(P) || P <- [maps:get(alpn, Opts, undefined)], P =/= undefined]
        ++ [falco_tls13_ext:transport_params(P)
            || P <- [maps:get(transport_params, Opts, undefined)], P =/= undefined],
    message(8, falco_tls13_ext:build(Exts)).

%% @doc CertificateRequest (§4.3.2): an empty request context, the
%% signature_algorithms (codes) the client may sign its CertificateVerify
%% with and the signature_algorithms_cert its certificates may be signed
%% with (§4.2.3).
-spec certificate_request([0..65535, ...], [0..65535, ...]) -> binary().
certificate_request(Schemes, CertSchemes) ->
    Exts = [codes(13, Schemes), codes(50, CertSchemes)],
    message(13, [<<0>> | falco_tls13_ext:build(Exts)]).

codes(Type, Codes) ->
    List = << <<C:16>> || C <- Codes >>,
    [<<Type:16, (byte_size(List) + 2):16, (byte_size(List)):16>>, List].

%% @doc Certificate (§4.4.2) of a server: no request context, the chain
%% (DER, end-entity first), no per-certificate extensions.
-spec certificate([binary()]) -> binary().
certificate(Chain) ->
    Entries = [[<<(byte_size(Der)):24>>, Der, <<0:16>>] || Der <- Chain],
    message(11, [<<0, (iolist_size(Entries)):24>> | Entries]).

%% @doc CertificateVerify (§4.4.3): the SignatureScheme code and the
%% signature.
-spec certificate_verify(0..65535, binary()) -> binary().
certificate_verify(Scheme, Signature) ->
    message(15, <<Scheme:16, (byte_size(Signature)):16, Signature/binary>>).

%% @doc Finished (§4.4.4).
-spec finished(binary()) -> binary().
finished(VerifyData) ->
    message(20, VerifyData).

%% @doc A client's Certificate body: the request context and the chain
%% (DER, end-entity first; empty when the client has none). Per-entry
%% extensions are skipped.
-spec parse_certificate(binary()) -> {ok, binary(), [binary()]} | error().
parse_certificate(<<CtxLen, Ctx:CtxLen/binary, Len:24, List:Len/binary>>) ->
    case entries(List, []) of
        {ok, Chain} -> {ok, Ctx, Chain};
        error -> {error, decode_error, certificate_entry}
    end;
parse_certificate(_) ->
    {error, decode_error, certificate}.

entries(<<>>, Acc) ->
    {ok, lists:reverse(Acc)};
entries(<<L:24, Der:L/binary, E:16, _:E/binary, Rest/binary>>, Acc) when L > 0 ->
    entries(Rest, [Der | Acc]);
entries(_, _) ->
    error.

%% @doc A CertificateVerify body: the SignatureScheme code and the
%% signature.
-spec parse_certificate_verify(binary()) -> {ok, 0..65535, binary()} | error().
parse_certificate_verify(<<Scheme:16, L:16, Sig:L/binary>>) when L > 0 ->
    {ok, Scheme, Sig};
parse_certificate_verify(_) ->
    {error, decode_error, certificate_verify}.

%% @doc A Finished body's verify_data, which is exactly the hash's length.
-spec parse_finished(binary(), 32 | 48) -> {ok, binary()} | error().
parse_finished(Body, HashLen) when byte_size(Body) =:= HashLen ->
    {ok, Body};
parse_finished(_, _) ->
    {error, decode_error, finished_length}.

message(Type, Body) ->
    iolist_to_binary([<<Type, (iolist_size(Body)):24>> | Body]).
