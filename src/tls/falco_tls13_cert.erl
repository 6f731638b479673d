%% @doc The server's certificates for falco's TLS 1.3: chains and keys
%% loaded from the options OTP's ssl takes for a listener (`certfile',
%% `keyfile', `password', `cert', `key', `cacertfile', `cacerts',
%% `certs_keys'), the signature scheme chosen from the client's
%% signature_algorithms (RFC 8446 §4.2.3), the CertificateVerify
%% signature made (§4.4.3) or checked, and a client's chain validated up
%% to the trusted CA certificates (public_key's path validation).
%%
%% Keys: RSA (RSASSA-PSS with an rsaEncryption key, `rsa_pss_rsae_*',
%% salt as long as the hash), ECDSA on P-256, P-384 and P-521 (each bound
%% to its hash, §4.2.3), Ed25519 and Ed448. A chain whose file holds only
%% the end-entity certificate is completed from the CA certificates,
%% without the self-signed root, as OTP's ssl does. Loading reads files
%% and checks that each key matches its certificate (a test signature);
%% it is done once per listener, never per handshake. Pure apart from
%% reading the files.
%%
%% @private internal to falco
-module(falco_tls13_cert).


-export([load/1, trusted/1, validate/2, select/2, sign/3, verify/4, public_key/1,
         scheme_code/1, scheme_from_code/1, content/2]).
-export_type([credential/0, scheme/0]).

-type scheme() :: ecdsa_secp256r1_sha256 | ecdsa_secp384r1_sha384 | ecdsa_secp521r1_sha512
                | rsa_pss_rsae_sha256 | rsa_pss_rsae_sha384 | rsa_pss_rsae_sha512
                | ed25519 | ed448.
-type credential() :: #{chain := [binary(), ...], key := public_key:private_key(),
                        schemes := [scheme(), ...]}.
-type opts() :: [{atom(), term()}] | #{atom() => term()}.

%% The OIDs and record shapes of public_key.hrl, whose records have untyped
%% fields (warn_untyped_record).
-define(SECP256R1, {1, 2, 840, 10045, 3, 1, 7}).
-define(SECP384R1, {1, 3, 132, 0, 34}).
-define(SECP521R1, {1, 3, 132, 0, 35}).
-define(ED25519, {1, 3, 101, 112}).
-define(ED448, {1, 3, 101, 113}).
-define(EC_PUBLIC_KEY, {1, 2, 840, 10045, 2, 1}).

%% @doc The credentials of ssl-style options: `certs_keys' (a list of
%% maps of the other keys) or one `certfile'/`cert' with its
%% `keyfile'/`key'.
-spec load(opts()) -> {ok, [credential(), ...]} | {error, term()}.
load(Opts) when is_list(Opts) ->
    load(maps:from_list([{K, V} || {K, V} <- Opts]));
load(Opts = #{certs_keys := List}) when is_list(List), List =/= [] ->
    load_all(List, ca_certs(Opts), []);
load(Opts) ->
    case load_one(Opts#{cacerts_der => ca_certs(Opts)}) of
        {ok, Cred} -> {ok, [Cred]};
        Error -> Error
    end.

load_all([], _, Acc) ->
    {ok, lists:reverse(Acc)};
load_all([Opts | More], CaCerts, Acc) when is_map(Opts) ->
    case load_one(maps:merge(#{cacerts_der => CaCerts}, Opts)) of
        {ok, Cred} -> load_all(More, CaCerts, [Cred | Acc]);
        Error -> Error
    end;
load_all(_, _, _) ->
    {error, {bad_option, certs_keys}}.

load_one(Opts) ->
    case {certs(Opts), key(Opts)} of
        {{ok, Certs}, {ok, Key}} -> credential(Certs, Key, Opts);
        {{error, _} = E, _} -> E;
        {_, {error, _} = E} -> E
    end.

credential(Certs = [Leaf | _], Key, Opts) ->
    case schemes(Key) of
        [] ->
            {error, unsupported_key};
        Schemes = [First | _] ->
            Cred = #{chain => complete(Certs, maps:get(cacerts_der, Opts, [])),
                     key => Key, schemes => Schemes},
            case key_matches(Leaf, Key, First) of
                true -> {ok, Cred};
                false -> {error, key_does_not_match_certificate}
            end
    end.

certs(#{cert := Der}) when is_binary(Der) -> {ok, [Der]};
certs(#{cert := [_ | _] = Ders}) -> {ok, Ders};
certs(#{certfile := File}) ->
    case pem(File) of
        {ok, Entries} ->
            case [Der || {'Certificate', Der, not_encrypted} <- Entries] of
                [] -> {error, {no_certificate, File}};
                Ders -> {ok, Ders}
            end;
        Error -> Error
    end;
certs(_) -> {error, missing_certificate}.

key(#{key := {Type, Der}}) when is_atom(Type), is_binary(Der) ->
    decode(fun() -> public_key:der_decode(Type, Der) end);
key(Opts = #{keyfile := File}) ->
    key_file(File, password(Opts));
key(#{certfile := File}) ->
    key_file(File, "");
key(_) -> {error, missing_key}.

key_file(File, Password) ->
    case pem(File) of
        {ok, Entries} ->
            case [E || E = {T, _, _} <- Entries, lists:member(T, key_types())] of
                [Entry | _] -> decode(fun() -> public_key:pem_entry_decode(Entry, Password) end);
                [] -> {error, {no_private_key, File}}
            end;
        Error -> Error
    end.

key_types() ->
    ['RSAPrivateKey', 'ECPrivateKey', 'PrivateKeyInfo', 'EncryptedPrivateKeyInfo'].

password(#{password := Fun}) when is_function(Fun, 0) -> Fun();
password(#{password := P}) -> P;
password(_) -> "".

decode(Fun) ->
    try Fun() of
        Key when element(1, Key) =:= 'RSAPrivateKey' -> {ok, Key};
        Key when element(1, Key) =:= 'ECPrivateKey' -> {ok, Key};
        _ -> {error, unsupported_key}
    catch
        _:_ -> {error, bad_private_key}
    end.

%% @doc The CA certificates (DER) of ssl-style options, `cacerts' or
%% `cacertfile': the trust anchors for client certificates.
-spec trusted(opts()) -> [binary()].
trusted(Opts) when is_list(Opts) ->
    trusted(maps:from_list([{K, V} || {K, V} <- Opts]));
trusted(Opts) ->
    ca_certs(Opts).

%% @doc Checks a peer's chain (end-entity first) up to one of the trusted
%% certificates with public_key's path validation (signatures, validity
%% dates, basic constraints): the alert for a chain that does not pass.
-spec validate([binary(), ...], [binary()]) -> ok | {error, falco_tls13_alert:alert(), term()}.
validate(Chain, Trusted) ->
    try
        Path = lists:reverse(Chain),
        case anchor(Path, Trusted) of
            {ok, _, []} -> ok;
            {ok, Anchor, Rest} -> path(public_key:pkix_path_validation(Anchor, Rest, []));
            error -> {error, unknown_ca, no_trusted_issuer}
        end
    catch
        _:Why -> {error, bad_certificate, Why}
    end.

%% The trusted certificate the chain ends at, or the one that issued its
%% last certificate.
anchor(Path = [Top | Rest], Trusted) ->
    case lists:member(Top, Trusted) of
        true -> {ok, Top, Rest};
        false ->
            Decoded = public_key:pkix_decode_cert(Top, otp),
            case [T || T <- Trusted,
                       public_key:pkix_is_issuer(Decoded, public_key:pkix_decode_cert(T, otp))] of
                [T | _] -> {ok, T, Path};
                [] -> error
            end
    end.

path({ok, _}) -> ok;
path({error, {bad_cert, cert_expired}}) -> {error, certificate_expired, cert_expired};
path({error, {bad_cert, unknown_ca}}) -> {error, unknown_ca, unknown_ca};
path({error, {bad_cert, Why}}) -> {error, bad_certificate, Why}.

ca_certs(#{cacerts := Ders}) when is_list(Ders) -> [D || D <- Ders, is_binary(D)];
ca_certs(#{cacertfile := File}) ->
    case pem(File) of
        {ok, Entries} -> [Der || {'Certificate', Der, not_encrypted} <- Entries];
        _ -> []
    end;
ca_certs(_) -> [].

pem(File) ->
    case file:read_file(File) of
        {ok, Bin} -> try {ok, public_key:pem_decode(Bin)}
                     catch _:_ -> {error, {bad_pem, File}} end;
        {error, Why} -> {error, {File, Why}}
    end.

%% A lone end-entity certificate gets its issuers from the CA
%% certificates, up to (not including) a self-signed root; a file with a
%% chain is sent as it is.
complete([Leaf], CaCerts) ->
    [Leaf | issuers(Leaf, CaCerts, 8)];
complete(Chain, _) ->
    Chain.

issuers(_, _, 0) ->
    [];
issuers(Cert, CaCerts, Depth) ->
    Decoded = public_key:pkix_decode_cert(Cert, otp),
    case public_key:pkix_is_self_signed(Decoded) of
        true -> [];
        false ->
            case [Ca || Ca <- CaCerts, Ca =/= Cert,
                        public_key:pkix_is_issuer(Decoded, public_key:pkix_decode_cert(Ca, otp))] of
                [Issuer | _] -> issuer(Issuer, CaCerts, Depth);
                [] -> []
            end
    end.

issuer(Issuer, CaCerts, Depth) ->
    case public_key:pkix_is_self_signed(public_key:pkix_decode_cert(Issuer, otp)) of
        true -> [];
        false -> [Issuer | issuers(Issuer, CaCerts, Depth - 1)]
    end.

key_matches(Leaf, Key, Scheme) ->
    Msg = <<"falco key check">>,
    case {public_key(Leaf), sign(Key, Scheme, Msg)} of
        {{ok, Public}, {ok, Sig}} -> verify(Public, Scheme, Msg, Sig);
        _ -> false
    end.

%% The schemes a key can sign with, in falco's order of preference.
schemes(Key) when element(1, Key) =:= 'RSAPrivateKey' ->
    [rsa_pss_rsae_sha256, rsa_pss_rsae_sha384, rsa_pss_rsae_sha512];
schemes({'ECPrivateKey', _Version, _Private, {namedCurve, Curve}, _Public, _Attrs}) ->
    case Curve of
        ?SECP256R1 -> [ecdsa_secp256r1_sha256];
        ?SECP384R1 -> [ecdsa_secp384r1_sha384];
        ?SECP521R1 -> [ecdsa_secp521r1_sha512];
        ?ED25519 -> [ed25519];
        ?ED448 -> [ed448];
        _ -> []
    end;
schemes(_) ->
    [].

%% @doc The first credential (in the order loaded) with a scheme the
%% client offers, and that scheme (the credential's preference first).
-spec select([credential()], [0..65535]) -> {ok, credential(), scheme()} | error.
select([], _) ->
    error;
select([Cred = #{schemes := Schemes} | More], Offered) ->
    case [S || S <- Schemes, lists:member(scheme_code(S), Offered)] of
        [Scheme | _] -> {ok, Cred, Scheme};
        [] -> select(More, Offered)
    end.

%% @doc The content a CertificateVerify signs (§4.4.3): 64 spaces, the
%% context string, a zero byte and the transcript hash.
-spec content(server | client, binary()) -> binary().
content(Side, TranscriptHash) ->
    Context = case Side of
                  server -> <<"TLS 1.3, server CertificateVerify">>;
                  client -> <<"TLS 1.3, client CertificateVerify">>
              end,
    <<(binary:copy(<<32>>, 64))/binary, Context/binary, 0, TranscriptHash/binary>>.

%% @doc Signs Msg with the key under the scheme.
-spec sign(public_key:private_key(), scheme(), binary()) -> {ok, binary()} | {error, term()}.
sign(Key, Scheme, Msg) ->
    try {ok, public_key:sign(Msg, digest(Scheme), Key, sign_opts(Scheme))}
    catch _:Why -> {error, {sign_failed, Why}}
    end.

%% @doc Whether Sig is the scheme's signature of Msg under the public key.
%% The key must be of the scheme's kind, and an ECDSA key on the scheme's
%% curve (§4.2.3).
-spec verify(term(), scheme(), binary(), binary()) -> boolean().
verify(Public, Scheme, Msg, Sig) ->
    try
        fits(Public, Scheme)
            andalso public_key:verify(Msg, digest(Scheme), Sig, Public, sign_opts(Scheme))
    catch _:_ -> false
    end.

fits({'RSAPublicKey', _, _}, Scheme) ->
    lists:member(Scheme, [rsa_pss_rsae_sha256, rsa_pss_rsae_sha384, rsa_pss_rsae_sha512]);
fits({{'ECPoint', _}, {namedCurve, Curve}}, Scheme) ->
    lists:member(Scheme, schemes({'ECPrivateKey', 1, <<>>, {namedCurve, Curve}, <<>>, asn1_NOVALUE}));
fits(_, _) ->
    false.

%% @doc The public key of a DER certificate, as public_key:verify/5 takes it.
-spec public_key(binary()) -> {ok, term()} | error.
public_key(Der) ->
    try
        {'OTPCertificate', Tbs, _, _} = public_key:pkix_decode_cert(Der, otp),
        %% #'OTPTBSCertificate'.subjectPublicKeyInfo
        {'OTPSubjectPublicKeyInfo', {'PublicKeyAlgorithm', Oid, Params}, Key} = element(8, Tbs),
        case Key of
            {'RSAPublicKey', _, _} -> {ok, Key};
            {'ECPoint', _} when Oid =:= ?EC_PUBLIC_KEY -> {ok, {Key, Params}};
            {'ECPoint', _} -> {ok, {Key, {namedCurve, Oid}}};
            _ -> error
        end
    catch
        _:_ -> error
    end.

digest(ecdsa_secp256r1_sha256) -> sha256;
digest(ecdsa_secp384r1_sha384) -> sha384;
digest(ecdsa_secp521r1_sha512) -> sha512;
digest(rsa_pss_rsae_sha256) -> sha256;
digest(rsa_pss_rsae_sha384) -> sha384;
digest(rsa_pss_rsae_sha512) -> sha512;
digest(ed25519) -> none;
digest(ed448) -> none.

sign_opts(Scheme) when Scheme =:= rsa_pss_rsae_sha256; Scheme =:= rsa_pss_rsae_sha384;
                       Scheme =:= rsa_pss_rsae_sha512 ->
    [{rsa_padding, rsa_pkcs1_pss_padding}, {rsa_pss_saltlen, -1},
     {rsa_mgf1_md, digest(Scheme)}];
sign_opts(_) ->
    [].

%% @doc The scheme's SignatureScheme code (§4.2.3).
-spec scheme_code(scheme()) -> 0..65535.
scheme_code(ecdsa_secp256r1_sha256) -> 16#0403;
scheme_code(ecdsa_secp384r1_sha384) -> 16#0503;
scheme_code(ecdsa_secp521r1_sha512) -> 16#0603;
scheme_code(rsa_pss_rsae_sha256) -> 16#0804;
scheme_code(rsa_pss_rsae_sha384) -> 16#0805;
scheme_code(rsa_pss_rsae_sha512) -> 16#0806;
scheme_code(ed25519) -> 16#0807;
scheme_code(ed448) -> 16#0808.

%% @doc The scheme of a code, `unknown' for those falco does not sign with.
-spec scheme_from_code(0..65535) -> scheme() | unknown.
scheme_from_code(Code) ->
    All = [ecdsa_secp256r1_sha256, ecdsa_secp384r1_sha384, ecdsa_secp521r1_sha512,
           rsa_pss_rsae_sha256, rsa_pss_rsae_sha384, rsa_pss_rsae_sha512, ed25519, ed448],
    case [S || S <- All, scheme_code(S) =:= Code] of
        [S] -> S;
        [] -> unknown
    end.
