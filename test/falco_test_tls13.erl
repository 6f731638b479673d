%% Test helpers for falco's TLS 1.3: test certificates (public_key's
%% pkix_test_data, made once per node), ClientHellos built from a tree
%% whose every length field a test can make one too short or too long, and
%% a small client written in the test that runs a whole handshake against
%% falco_tls13_server (parses ServerHello, checks CertificateVerify and the
%% server's Finished, sends its own Finished).
-module(falco_test_tls13).

-export([creds/1, ssl_server_opts/1, ssl_client_cacerts/1, ssl_client_opts/1,
         client_hello/1, serialize/2, vec_count/1, ch_tree/1,
         ext/2, sni/1, versions/1, groups/1, shares/1, sig_algs/1, alpn/1, psk_modes/1,
         handshake/2, server_hello/1, handshake_keys/3, run/3]).

-define(S, falco_tls13_server).
-define(K, falco_tls13_keys).

%% -- certificates -------------------------------------------------------------

key_spec(rsa) -> {rsa, 2048, 65537};
key_spec(ecdsa) -> {namedCurve, secp256r1};
key_spec(ecdsa384) -> {namedCurve, secp384r1};
key_spec(ed25519) -> {namedCurve, ed25519}.

%% pkix_test_data's server and client configurations of a key kind.
test_data(Kind) ->
    Key = {?MODULE, Kind},
    case persistent_term:get(Key, undefined) of
        undefined ->
            K = key_spec(Kind),
            %% SHA-256 signatures: pkix_test_data signs with SHA-1 by default,
            %% which TLS 1.3 clients refuse for their own chains.
            C = [{key, K}, {digest, sha256}],
            Chain = #{root => C, intermediates => [C], peer => C},
            D = public_key:pkix_test_data(#{server_chain => Chain, client_chain => Chain}),
            persistent_term:put(Key, D),
            D;
        D ->
            D
    end.

%% The server's ssl options: cert, key and cacerts.
ssl_server_opts(Kind) ->
    maps:get(server_config, test_data(Kind)).

%% The client's ssl options: its cert, key and cacerts.
ssl_client_opts(Kind) ->
    maps:get(client_config, test_data(Kind)).

%% The CA certificates a client trusts for this server.
ssl_client_cacerts(Kind) ->
    proplists:get_value(cacerts, maps:get(client_config, test_data(Kind))).

creds(Kind) ->
    {ok, Creds} = falco_tls13_cert:load(ssl_server_opts(Kind)),
    Creds.

%% -- ClientHello trees --------------------------------------------------------

%% A tree: binaries, lists, and {vec, LengthBytes, Tree}.
ext(Type, Body) -> [<<Type:16>>, {vec, 2, Body}].
sni(Host) -> ext(0, {vec, 2, [<<0>>, {vec, 2, Host}]}).
versions(Vs) -> ext(43, {vec, 1, [<<V:16>> || V <- Vs]}).
groups(Gs) -> ext(10, {vec, 2, [<<G:16>> || G <- Gs]}).
shares(Ss) -> ext(51, {vec, 2, [[<<G:16>>, {vec, 2, P}] || {G, P} <- Ss]}).
sig_algs(As) -> ext(13, {vec, 2, [<<A:16>> || A <- As]}).
alpn(Ps) -> ext(16, {vec, 2, [{vec, 1, P} || P <- Ps]}).
psk_modes(Ms) -> ext(45, {vec, 1, [<<M>> || M <- Ms]}).

%% Options: random, session_id, suites, extensions (a list of trees),
%% or the parts of the default extensions: sni, alpn, groups, shares,
%% sig_algs, versions, transport_params, extra (appended).
ch_tree(Opts) ->
    Exts = maps:get(extensions, Opts, default_exts(Opts)),
    {vec, 3, [<<16#0303:16>>, maps:get(random, Opts, <<7:256>>),
              {vec, 1, maps:get(session_id, Opts, <<>>)},
              {vec, 2, [<<S:16>> || S <- maps:get(suites, Opts, [16#1301, 16#1302, 16#1303])]},
              {vec, 1, maps:get(compression, Opts, <<0>>)},
              {vec, 2, Exts}]}.

default_exts(Opts) ->
    Shares = maps:get(shares, Opts, []),
    [sni(H) || H <- [maps:get(sni, Opts, <<"localhost">>)], H =/= none]
        ++ [versions(maps:get(versions, Opts, [16#0304]))]
        ++ [groups(maps:get(groups, Opts, [G || {G, _} <- Shares]))]
        ++ [shares(Shares)]
        ++ [sig_algs(maps:get(sig_algs, Opts, [16#0403, 16#0804, 16#0807]))]
        ++ [alpn(Ps) || Ps <- [maps:get(alpn, Opts, [<<"h3">>])], Ps =/= none]
        ++ [psk_modes([1])]
        ++ [ext(57, P) || P <- [maps:get(transport_params, Opts, <<1, 2, 3>>)], P =/= none]
        ++ maps:get(extra, Opts, []).

client_hello(Opts) ->
    serialize(ch_tree(Opts), none).

%% The tree's bytes, the Nth vec (pre-order, from 1) given a length Delta
%% off its true one when Mutation is {N, Delta}.
serialize(Tree, Mutation) ->
    {Bin, _} = ser(Tree, Mutation, 0),
    iolist_to_binary([<<1>>, Bin]).

ser(B, _, N) when is_binary(B) -> {B, N};
ser(L, M, N) when is_list(L) ->
    lists:foldl(fun(T, {Acc, N0}) -> {B, N1} = ser(T, M, N0), {<<Acc/binary, B/binary>>, N1} end,
                {<<>>, N}, L);
ser({vec, Width, T}, M, N0) ->
    N = N0 + 1,
    {Body, N1} = ser(T, M, N),
    Len = case M of
              {N, Delta} -> max(0, byte_size(Body) + Delta);
              _ -> byte_size(Body)
          end,
    {<<(Len rem (1 bsl (Width * 8))):(Width * 8), Body/binary>>, N1}.

vec_count(B) when is_binary(B) -> 0;
vec_count(L) when is_list(L) -> lists:sum([vec_count(T) || T <- L]);
vec_count({vec, _, T}) -> 1 + vec_count(T).

%% -- a test client ------------------------------------------------------------

%% A ServerHello or HelloRetryRequest parsed: #{random, session_id, suite,
%% extensions => [{Type, Body}]}.
server_hello(<<2, Len:24, Body:Len/binary>>) ->
    <<16#0303:16, Random:32/binary, SidLen, Sid:SidLen/binary, Suite:16, 0, ExtLen:16,
      Exts:ExtLen/binary>> = Body,
    #{random => Random, session_id => Sid, suite => ?K:suite_from_code(Suite),
      extensions => [{T, B} || <<T:16, L:16, B:L/binary>> <= Exts]}.

%% A client's handshake secrets once the ServerHello SH has come: Messages
%% is the transcript through SH, in order; PrivFor gives the client's
%% private key for the group SH chose. #{suite, hash, group, secret (the
%% handshake secret), client, server (the handshake traffic secrets)}.
handshake_keys(Messages, SH, PrivFor) ->
    #{suite := Suite, extensions := Exts} = server_hello(SH),
    Hash = ?K:suite_hash(Suite),
    {51, <<Code:16, L:16, ServerPub:L/binary>>} = lists:keyfind(51, 1, Exts),
    G = falco_tls13_ext:group_from_code(Code),
    Shared = crypto:compute_key(ecdh, ServerPub, PrivFor(G), G),
    HS = ?K:handshake_secret(Hash, ?K:early_secret(Hash), Shared),
    {CHs, SHs} = ?K:handshake_traffic(Hash, HS, crypto:hash(Hash, Messages)),
    #{suite => Suite, hash => Hash, group => G, secret => HS, client => CHs, server => SHs}.

%% Runs a handshake of a client with ClientOpts (client_hello/1's options
%% plus `client_groups', the groups it can make shares for, the first used
%% first) against a new server: {ok, #{server := State, actions := All,
%% ...}} or the server's error.
handshake(ServerOpts, ClientOpts) ->
    Groups = maps:get(client_groups, ClientOpts, [x25519]),
    run(?S:new(ServerOpts), ClientOpts#{first_groups => [hd(Groups)]}, Groups).

run(Server, ClientOpts, Groups) ->
    Keys = [{G, crypto:generate_key(ecdh, G)} || G <- maps:get(first_groups, ClientOpts)],
    Shares = [{falco_tls13_ext:group_code(G), Pub} || {G, {Pub, _}} <- Keys],
    Tree = ch_tree(maps:merge(#{shares => Shares,
                                groups => [falco_tls13_ext:group_code(G) || G <- Groups]},
                              ClientOpts)),
    CH = serialize(Tree, none),
    case ?S:handshake_data(initial, CH, Server) of
        {ok, S1, Actions} -> after_hello(S1, Actions, CH, Keys, ClientOpts, Groups);
        Error -> Error
    end.

after_hello(S1, Actions, CH, Keys, ClientOpts, Groups) ->
    [SH] = [B || {send, initial, B} <- Actions],
    Hello = server_hello(SH),
    case maps:get(random, Hello) =:= falco_tls13_msg:hrr_random() of
        true ->
            {51, <<Code:16>>} = lists:keyfind(51, 1, maps:get(extensions, Hello)),
            G = falco_tls13_ext:group_from_code(Code),
            Hash = ?K:suite_hash(maps:get(suite, Hello)),
            case run2(S1, ClientOpts#{first_groups => [G]}, Groups,
                      [SH, ?K:message_hash(Hash, CH)]) of
                {ok, R} -> {ok, R#{hrr => true, first_actions => Actions}};
                Error -> Error
            end;
        false ->
            finish(S1, Actions, [SH, CH], Keys, Hello, ClientOpts)
    end.

run2(Server, ClientOpts, Groups, Transcript) ->
    [G] = maps:get(first_groups, ClientOpts),
    {Pub, Priv} = crypto:generate_key(ecdh, G),
    Tree = ch_tree(maps:merge(#{shares => [{falco_tls13_ext:group_code(G), Pub}],
                                groups => [falco_tls13_ext:group_code(X) || X <- Groups]},
                              ClientOpts)),
    CH2 = serialize(Tree, none),
    case ?S:handshake_data(initial, CH2, Server) of
        {ok, S1, Actions} ->
            [SH] = [B || {send, initial, B} <- Actions],
            finish(S1, Actions, [SH, CH2 | Transcript], [{G, {Pub, Priv}}], server_hello(SH),
                   ClientOpts);
        Error ->
            Error
    end.

%% Checks the server's flight as a client would and sends the Finished.
finish(S1, Actions, Transcript = [SH | _], Keys, #{suite := Suite}, ClientOpts) ->
    PrivFor = fun(Group) -> {Group, {_, Priv}} = lists:keyfind(Group, 1, Keys), Priv end,
    #{hash := Hash, group := G, secret := HS, client := CHs, server := SHs} =
        handshake_keys(lists:reverse(Transcript), SH, PrivFor),
    {read_secret, handshake, Suite, CHs} = lists:keyfind(read_secret, 1, Actions),
    [Flight] = [B || {send, handshake, B} <- Actions],
    {T, Chain, Requested} = server_flight(Flight, Transcript, Hash, SHs),
    Master = ?K:master_secret(Hash, HS),
    {CAp, SAp} = ?K:application_traffic(Hash, Master, th(Hash, T)),
    {write_secret, application, Suite, SAp} = lists:last(Actions),
    {Auth, T1} = client_auth(Requested, maps:get(client_cert, ClientOpts, none), T, Hash),
    Fin = falco_tls13_msg:finished(?K:verify_data(Hash, CHs, th(Hash, T1))),
    case ?S:handshake_data(handshake, <<Auth/binary, Fin/binary>>, S1) of
        {ok, S2, Done0} ->
            Done = [A || A <- Done0, not is_tuple(A) orelse element(1, A) =/= peer_certificates],
            [{read_secret, application, Suite, CAp}, handshake_complete] = Done,
            {ok, #{server => S2, actions => Actions ++ Done0, suite => Suite, group => G,
                   chain => Chain, hrr => false}};
        Error ->
            Error
    end.

server_flight(Flight, Transcript, Hash, SHs) ->
    {Ee0, R0} = take(Flight, 8),
    {Ee, R1, Requested} = case R0 of
                              <<13, _/binary>> ->
                                  {Cr, R} = take(R0, 13),
                                  {<<Ee0/binary, Cr/binary>>, R, true};
                              _ -> {Ee0, R0, false}
                          end,
    {Cert, R2} = take(R1, 11),
    {Cv, R3} = take(R2, 15),
    {Fin, <<>>} = take(R3, 20),
    Chain = chain(Cert),
    <<15, _:24, Scheme:16, SigLen:16, Sig:SigLen/binary>> = Cv,
    {ok, Public} = falco_tls13_cert:public_key(hd(Chain)),
    Content = falco_tls13_cert:content(server, th(Hash, [Cert, Ee | Transcript])),
    true = falco_tls13_cert:verify(Public, falco_tls13_cert:scheme_from_code(Scheme), Content, Sig),
    <<20, _:24, VD/binary>> = Fin,
    VD = ?K:verify_data(Hash, SHs, th(Hash, [Cv, Cert, Ee | Transcript])),
    {[Fin, Cv, Cert, Ee | Transcript], Chain, Requested}.

%% The client's Certificate and CertificateVerify when asked: ClientCert
%% is none (an empty Certificate), {Chain, Key, Scheme}, or one of those
%% with a bad signature ({bad_signature, ...}) or a request context
%% ({context, ...}).
client_auth(false, _, T, _) ->
    {<<>>, T};
client_auth(true, none, T, _) ->
    Cert = falco_tls13_msg:certificate([]),
    {Cert, [Cert | T]};
client_auth(true, {context, Spec}, T, Hash) ->
    {<<11, L:24, 0, Rest/binary>>, _} = client_auth(true, Spec, T, Hash),
    <<Body:(L - 1)/binary, More/binary>> = Rest,
    Cert = <<11, (L + 1):24, 1, 7, Body/binary>>,
    {<<Cert/binary, More/binary>>, [Cert | T]};
client_auth(true, {bad_signature, {Chain, Key, Scheme}}, T, Hash) ->
    {Auth, T1} = client_auth(true, {Chain, Key, Scheme}, T, Hash),
    Size = byte_size(Auth) - 1,
    <<Head:Size/binary, Last>> = Auth,
    {<<Head/binary, (Last bxor 1)>>, T1};
client_auth(true, {Chain, Key, Scheme}, T, Hash) ->
    Cert = falco_tls13_msg:certificate(Chain),
    Content = falco_tls13_cert:content(client, th(Hash, [Cert | T])),
    {ok, Sig} = falco_tls13_cert:sign(Key, Scheme, Content),
    Cv = falco_tls13_msg:certificate_verify(falco_tls13_cert:scheme_code(Scheme), Sig),
    {<<Cert/binary, Cv/binary>>, [Cv, Cert | T]}.

take(<<Type, Len:24, Body:Len/binary, Rest/binary>>, Type) ->
    {<<Type, Len:24, Body/binary>>, Rest}.

chain(<<11, _:24, 0, L:24, List:L/binary>>) ->
    entries(List).

entries(<<>>) -> [];
entries(<<L:24, Der:L/binary, E:16, _:E/binary, Rest/binary>>) -> [Der | entries(Rest)].

th(Hash, Reversed) ->
    crypto:hash(Hash, lists:reverse(Reversed)).
