%% Black-box HTTP/3 tests with real clients, one group each: aioquic and
%% curl (curl_cffi's libcurl with ngtcp2) through the Python scripts of
%% h3_clients_SUITE_data, quic-go through h3client (a Go program there),
%% ngtcp2's gtlsclient (downloads under loss, migration, NAT rebinding and
%% key updates, each file checked whole, as gtlsclient exits 0 on a
%% download cut short), headless Chromium with QUIC forced on the origin
%% (the page's navigation entry must say h3), and bench/h3load for a few
%% seconds. Groups with a listener of their own (RFC 9001 §6, RFC 9000
%% §8.1, §10.3): keys (the server updating its keys every 1,000 packets),
%% retry, retry_raw and retry_chromium (h3_retry => always: the clients
%% through a Retry, NEW_TOKEN, an Initial flood, hostile tokens, stateless
%% resets). The scripts print a JSON summary (statuses, bytes and SHA-256
%% of every body, trailers, the ALPN and HTTP version) that the cases
%% assert on. scripts/bootstrap installs all of them (_build/tools).
%%
%% The target: a falco TLS listener with http3 => true serving handle/1
%% (falco_h3_target/1). With FALCO_H3_TEST_URL=https://127.0.0.1:PORT the
%% clients are driven against that server instead, which must serve
%% handle/1's routes on that loopback port (GET /hello, GET /bytes/N with
%% "0123456789" repeated and cut at N, /echo with the request's trailers
%% sent back as trailers, GET /trailers, GET /page);
%% FALCO_H3_TEST_CERT=cert.pem gives its certificate, whose key Chromium
%% is told to accept (without it the Chromium case skips).
%%
%% Tools: a missing client skips its group, unless FALCO_REQUIRE_TOOLS=1
%% (as `make test' sets after scripts/bootstrap) makes it a failure; then
%% every tool is checked in init_per_suite/1, before the target, so a
%% broken install fails `make test' before any listener starts.
-module(h3_clients_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, init_per_suite/1, end_per_suite/1, init_per_group/2,
         end_per_group/2, init_per_testcase/2, end_per_testcase/2]).
-export([handle/1, handle_in/2]).
-export([aioquic_get/1, aioquic_download/1, aioquic_post_10mb/1, aioquic_concurrent_100/1,
         aioquic_trailers/1, aioquic_rsa/1, aioquic_cipher_suites/1, aioquic_websocket/1, aioquic_example/1,
         curl_get/1, curl_post_10mb/1, curl_concurrent_100/1,
         quicgo_get/1, quicgo_post_10mb/1, quicgo_concurrent_100/1, quicgo_trailers/1,
         gtls_download/1, gtls_loss/1, gtls_loss_2/1, gtls_ciphers_groups/1, gtls_migration/1, gtls_nat_rebinding/1,
         gtls_key_update/1,
         aioquic_key_update/1, aioquic_server_key_updates/1, gtls_server_key_updates/1,
         gtls_both_key_updates/1,
         aioquic_retry/1, aioquic_new_token/1, quicgo_retry/1, gtls_retry/1,
         retry_flood/1, retry_bad_tokens/1, stateless_reset/1, chromium_retry/1,
         chromium_h3/1, chromium_h3_form/1,
         h3load_hello/1, h3load_download/1]).

-define(RUN_TIMEOUT, 180000).
-define(TEN_MB, 10000000).

all() ->
    [{group, G} || G <- [aioquic, curl, quicgo, gtlsclient, chromium, h3load, keys, retry,
                         retry_raw, retry_chromium]].

groups() ->
    [{aioquic, [], [aioquic_get, aioquic_download, aioquic_post_10mb, aioquic_concurrent_100,
                    aioquic_trailers, aioquic_rsa, aioquic_cipher_suites, aioquic_websocket,
                    aioquic_example]},
     {curl, [], [curl_get, curl_post_10mb, curl_concurrent_100]},
     {quicgo, [], [quicgo_get, quicgo_post_10mb, quicgo_concurrent_100, quicgo_trailers]},
     {gtlsclient, [], [gtls_download, gtls_loss, gtls_loss_2, gtls_ciphers_groups, gtls_migration, gtls_nat_rebinding,
                       gtls_key_update]},
     {chromium, [], [chromium_h3, chromium_h3_form]},
     {h3load, [], [h3load_hello, h3load_download]},
     {keys, [], [aioquic_key_update, aioquic_server_key_updates, gtls_server_key_updates,
                 gtls_both_key_updates]},
     {retry, [], [aioquic_retry, aioquic_new_token, quicgo_retry, gtls_retry]},
     {retry_raw, [], [retry_flood, retry_bad_tokens, stateless_reset]},
     {retry_chromium, [], [chromium_retry]}].

%% -- tools and target -------------------------------------------------------

%% The Python of the venv scripts/bootstrap makes (aioquic, curl_cffi).
python() ->
    case falco_test_tools:find("h3py/bin/python") of
        false -> "_build/tools/h3py/bin/python";
        Py -> Py
    end.

tools(aioquic) -> [{python_module, python(), "aioquic"}, {file, aioquic_example()}];
tools(curl) -> [{python_module, python(), "curl_cffi"}];
tools(quicgo) -> [{found, "h3client", falco_test_tools:find("h3client")}];
tools(gtlsclient) -> ["gtlsclient"];
tools(chromium) -> [{found, "chromium", falco_test_browser:find()}];
tools(h3load) -> [{found, "h3load", falco_test_tools:find("h3load")}];
tools(keys) -> tools(aioquic) ++ tools(gtlsclient);
tools(retry) -> tools(aioquic) ++ tools(quicgo) ++ tools(gtlsclient);
tools(retry_raw) -> [];
tools(retry_chromium) -> tools(chromium).

init_per_suite(Config) ->
    All = lists:append([tools(G) || {G, _, _} <- groups()]),
    Checked = case falco_test_tools:required() of
                  true -> falco_test_tools:check(All);
                  false -> ok
              end,
    case Checked of
        ok -> target(Config);
        NotThere -> NotThere
    end.

end_per_suite(Config) ->
    _ = case ?config(falco_listener, Config) of
            undefined -> ok;
            Name -> falco:stop_listener(Name)
        end,
    Config.

init_per_group(keys, Config) ->
    %% a listener of its own, whose 1-RTT keys are updated every 1,000
    %% packets (RFC 9001 §6; a 10 MB download is ~7,500 packets)
    own_listener(keys, #{h3_key_update_packets => 1000}, Config);
init_per_group(G, Config) when G =:= retry; G =:= retry_raw; G =:= retry_chromium ->
    %% every Initial without a valid token gets a Retry (RFC 9000 §8.1.2)
    own_listener(G, #{h3_retry => always}, Config);
init_per_group(Group, Config) ->
    falco_test_tools:require(tools(Group), Config).

%% The group's own falco listener (the case's `port'), with `Opts' on top
%% of the suite's target's; it is stopped at the group's end.
own_listener(Group, Opts, Config) ->
    case {falco_test_tools:require(tools(Group), Config), ?config(cert, Config)} of
        {Skip = {skip, _}, _} ->
            Skip;
        {_, undefined} ->
            {skip, "the group needs falco's own listener (FALCO_H3_TEST_URL is set)"};
        {Config1, {Cert, Key}} ->
            Name = list_to_atom("h3_clients_" ++ atom_to_list(Group)),
            {ok, _} = falco:start_listener(Name, Opts#{ip => {127, 0, 0, 1}, port => 0,
                                                       transport => tls,
                                                       tls_opts => [{certfile, Cert},
                                                                    {keyfile, Key}],
                                                       http3 => true,
                                                       handler => fun ?MODULE:handle/1}),
            {ok, Port} = falco:port(Name),
            [{port, Port}, {group_listener, Name} | Config1]
    end.

end_per_group(_, Config) ->
    _ = case ?config(group_listener, Config) of
            undefined -> ok;
            Name -> falco:stop_listener(Name)
        end,
    Config.

init_per_testcase(Case, Config) when Case =:= chromium_h3; Case =:= chromium_h3_form ->
    case ?config(spki, Config) of
        undefined -> {skip, "no certificate for Chromium's --ignore-certificate-errors-spki-list: "
                            "set FALCO_H3_TEST_CERT to the target's PEM certificate"};
        _ -> Config
    end;
init_per_testcase(_, Config) ->
    Config.

end_per_testcase(_, Config) ->
    Config.

target(Config) ->
    case os:getenv("FALCO_H3_TEST_URL") of
        Url when is_list(Url), Url =/= "" -> external_target(Url, Config);
        _ -> falco_h3_target(Config)
    end.

%% falco's own HTTP/3 listener, serving handle/1 on 127.0.0.1 with a
%% certificate every client parses: made by make_cert.py with the
%% cryptography package of the venv (aioquic refuses the ECDSA
%% certificates OTP's public_key makes: NULL parameters in their
%% signature algorithm), the script quic_interop_SUITE uses.
falco_h3_target(Config) ->
    Priv = ?config(priv_dir, Config),
    Cert = filename:join(Priv, "cert.pem"),
    Key = filename:join(Priv, "key.pem"),
    Script = filename:join([?config(data_dir, Config), "..", "quic_interop_SUITE_data",
                            "make_cert.py"]),
    {0, _} = falco_test_run:run(python(), [Script, Cert, Key], #{timeout => 30000}),
    {ok, _} = application:ensure_all_started(falco),
    {ok, _} = falco:start_listener(h3_clients, #{ip => {127, 0, 0, 1}, port => 0, transport => tls,
                                                tls_opts => [{certfile, Cert}, {keyfile, Key}],
                                                http3 => true,
                                                handler => fun ?MODULE:handle/1}),
    {ok, Port} = falco:port(h3_clients),
    [{port, Port}, {spki, spki_of_pem(Cert)}, {falco_listener, h3_clients},
     {cert, {Cert, Key}} | Config].

external_target(Url, Config) ->
    case uri_string:parse(Url) of
        #{scheme := "https", host := Host, port := Port} when Host =:= "127.0.0.1";
                                                              Host =:= "localhost" ->
            Spki = case os:getenv("FALCO_H3_TEST_CERT") of
                       File when is_list(File), File =/= "" -> spki_of_pem(File);
                       _ -> undefined
                   end,
            [{port, Port}, {spki, Spki} | Config];
        _ ->
            {fail, {"FALCO_H3_TEST_URL must be https://127.0.0.1:PORT or https://localhost:PORT",
                    Url}}
    end.

%% The base64 SHA-256 of a certificate's SubjectPublicKeyInfo, as
%% Chromium's --ignore-certificate-errors-spki-list takes it.
-spec spki(public_key:der_encoded()) -> string().
spki(CertDer) ->
    %% public_key.hrl's records, by position (its untyped records would
    %% warn here): #'Certificate'.tbsCertificate and, the seventh field
    %% of #'TBSCertificate', subjectPublicKeyInfo.
    {'Certificate', Tbs, _, _} = public_key:pkix_decode_cert(CertDer, plain),
    Spki = element(8, Tbs),
    'SubjectPublicKeyInfo' = element(1, Spki),
    Der = public_key:der_encode('SubjectPublicKeyInfo', Spki),
    base64:encode_to_string(crypto:hash(sha256, Der)).

spki_of_pem(File) ->
    {ok, Pem} = file:read_file(File),
    [{'Certificate', Der, not_encrypted} | _] = public_key:pem_decode(Pem),
    spki(Der).

url(Config, Path) ->
    "https://127.0.0.1:" ++ integer_to_list(?config(port, Config)) ++ Path.

%% -- the routes every target serves ------------------------------------------

%% @doc The handler of the suite's routes, for falco's HTTP/3 listener (and
%% the contract an external target of FALCO_H3_TEST_URL meets).
-spec handle(falco_req:req()) -> term().
handle(Req) ->
    case {falco_req:method(Req), falco_req:path(Req)} of
        {<<"GET">>, <<"/hello">>} ->
            {200, [{<<"content-type">>, <<"text/plain">>}], <<"hello world">>};
        {<<"GET">>, <<"/bytes/", N/binary>>} ->
            {200, [{<<"content-type">>, <<"application/octet-stream">>}],
             pattern(binary_to_integer(N))};
        {_, <<"/echo">>} ->
            %% any method: gtlsclient sends its --data with GET
            {ok, Body, Req1} = falco_req:read_body(Req),
            case falco_req:trailers(Req1) of
                [] -> {200, [], Body};
                T -> {stream, 200, [], fun(Send) -> ok = Send(Body), {trailers, T} end}
            end;
        {<<"GET">>, <<"/trailers">>} ->
            {stream, 200, [],
             fun(Send) ->
                     ok = Send(<<"alpha beta">>),
                     {trailers, [{<<"x-checksum">>, <<"abc">>}]}
             end};
        {<<"GET">>, <<"/ws">>} ->
            %% WebSocket over HTTP/3 (RFC 9220): an echo
            {websocket, ?MODULE, echo, #{}};
        {<<"GET">>, <<"/page">>} ->
            {200, [{<<"content-type">>, <<"text/html">>}], page()};
        {<<"GET">>, <<"/form">>} ->
            {200, [{<<"content-type">>, <<"text/html">>}], form()};
        {<<"POST">>, <<"/form">>} ->
            %% the form's POST: what came, and over which HTTP
            {ok, Body, _} = falco_req:read_body(Req),
            {Major, _} = falco_req:version(Req),
            {200, [{<<"content-type">>, <<"text/html">>}],
             iolist_to_binary(["<!doctype html><title>posted</title><body>posted ",
                               integer_to_list(byte_size(Body)), " bytes over HTTP/",
                               integer_to_list(Major), "</body>"])};
        _ ->
            {404, [], <<"not found">>}
    end.

%% The page whose script writes the protocol its document came over.
page() ->
    <<"<!doctype html><title>h3</title><body><script>document.body.textContent = 'proto=' + "
      "performance.getEntriesByType('navigation')[0].nextHopProtocol</script></body>">>.

%% An upload form (multipart, a 100 KB field) that submits itself once
%% loaded: the browser's POST of it is the next navigation.
form() ->
    iolist_to_binary(["<!doctype html><title>form</title><body>"
                      "<form method=post enctype=multipart/form-data action=/form>"
                      "<textarea name=t>", pattern(100000), "</textarea></form>"
                      "<script>document.forms[0].submit()</script></body>"]).

%% "0123456789" repeated, cut at N bytes (the clients' request bodies too).
pattern(N) ->
    binary:part(binary:copy(<<"0123456789">>, N div 10 + 1), 0, N).

sha(Bin) ->
    string:lowercase(binary:encode_hex(crypto:hash(sha256, Bin))).

%% -- running the clients -----------------------------------------------------

%% Runs a client that prints a JSON summary as its last line: {ExitStatus,
%% Summary}. The whole output is logged.
json_client(Exe, Args) ->
    {Status, Out} = falco_test_run:run(Exe, Args, #{timeout => ?RUN_TIMEOUT}),
    ct:log("~ts ~p~nexit status ~p~n~ts", [Exe, Args, Status, Out]),
    Lines = [L || L = <<"{", _/binary>> <- binary:split(Out, <<"\n">>, [global, trim_all])],
    ?assertNotEqual([], Lines, {no_json_summary, Exe, Args}),
    {ok, Summary} = falco_json:decode(lists:last(Lines)),
    {Status, Summary}.

script(Config, Name) ->
    filename:join(?config(data_dir, Config), Name).

aioquic(Config, Args) ->
    json_client(python(), [script(Config, "h3_aioquic_client.py"), "--insecure" | Args]).

curl(Config, Args) ->
    json_client(python(), [script(Config, "h3_curl_client.py") | Args]).

quicgo(Args) ->
    json_client(falco_test_tools:find("h3client"), ["-insecure" | Args]).

%% Exit status 0, ALPN h3, HTTP/3, no error, and these statuses.
h3_ok({0, S = #{<<"alpn">> := <<"h3">>, <<"http_version">> := <<"3">>, <<"error">> := null}},
      Statuses) ->
    ?assertEqual(Statuses, maps:get(<<"statuses">>, S)),
    S;
h3_ok(Other, _) ->
    ct:fail({not_an_h3_success, Other}).

%% Every response has `Bytes' bytes with the SHA-256 of `Body'.
bodies(#{<<"responses">> := Rs}, Body) ->
    Want = {byte_size(Body), sha(Body)},
    [?assertEqual(Want, {B, H}) || #{<<"bytes">> := B, <<"sha256">> := H} <- Rs],
    ok.

%% -- aioquic -------------------------------------------------------------------

%% aioquic's own example client (examples/http3_client.py of its source
%% distribution, which bootstrap unpacks) with a wss:// URL: an extended
%% CONNECT with `:protocol websocket' (RFC 9220 §3; it sends
%% Sec-WebSocket-Protocol chat, superchat, which the echo ignores), two
%% text messages each echoed, then its close.
aioquic_websocket(Config) ->
    Url = "wss://127.0.0.1:" ++ integer_to_list(?config(port, Config)) ++ "/ws",
    {Status, Out} = falco_test_run:run(python(), [aioquic_example(), "--insecure", Url],
                                       #{timeout => ?RUN_TIMEOUT,
                                         cd => filename:dirname(aioquic_example())}),
    ct:log("http3_client.py ~s: exit status ~p~n~ts", [Url, Status, Out]),
    ?assertEqual(0, Status),
    [?assertNotEqual(nomatch, binary:match(Out, Line))
     || Line <- [<<"> Hello 0, WebSocket!">>, <<"< Hello 0, WebSocket!">>,
                 <<"> Hello 1, WebSocket!">>, <<"< Hello 1, WebSocket!">>]].

aioquic_example() ->
    filename:join([falco_test_run:checkout(), "_build", "tools", "aioquic-1.7.2", "examples",
                   "http3_client.py"]).

%% @private The echo of aioquic_websocket/1.
-spec handle_in({text | binary, binary()}, echo) -> {reply, {text | binary, binary()}, echo}.
handle_in({Type, Msg}, echo) ->
    {reply, {Type, Msg}, echo}.

aioquic_get(Config) ->
    S = h3_ok(aioquic(Config, [url(Config, "/hello")]), #{<<"200">> => 1}),
    bodies(S, <<"hello world">>).

%% RFC 8446 §4.4.3 over QUIC with an RSA certificate (the same certfile and
%% keyfile options a TLS listener takes): aioquic checks our RSA-PSS
%% CertificateVerify even with --insecure. A listener of its own; skipped
%% against an external target.
aioquic_rsa(Config) ->
    case ?config(falco_listener, Config) of
        undefined ->
            {skip, "an external target: the RSA listener is falco's own"};
        _ ->
            Opts = falco_test_tls13:ssl_server_opts(rsa),
            {ok, _} = falco:start_listener(h3_clients_rsa,
                                           #{ip => {127, 0, 0, 1}, port => 0, transport => tls,
                                             tls_opts => [O || O = {K, _} <- Opts, K =/= cacerts],
                                             http3 => true, handler => fun ?MODULE:handle/1}),
            {ok, Port} = falco:port(h3_clients_rsa),
            try
                S = h3_ok(aioquic(Config, ["https://127.0.0.1:" ++ integer_to_list(Port) ++ "/hello"]),
                          #{<<"200">> => 1}),
                bodies(S, <<"hello world">>)
            after
                falco:stop_listener(h3_clients_rsa)
            end
    end.

%% `make run''s TLS listener over HTTP/3 with the certificate it makes:
%% until 2026-12-02 that was one of OTP's test chains, whose ECDSA
%% signature algorithm has NULL parameters (RFC 5758 §3.2: absent), and
%% aioquic refused it ("Certificate could not be parsed"); it was valid for
%% a week, too. Such a certificate left in the directory is made again.
aioquic_example(Config) ->
    case ?config(falco_listener, Config) of
        undefined ->
            {skip, "an external target: the example's listener is falco's own"};
        _ ->
            Dir = filename:join(?config(priv_dir, Config), "example"),
            ok = filelib:ensure_path(Dir),
            Cert = filename:join(Dir, "example-cert.pem"),
            Key = filename:join(Dir, "example-key.pem"),
            %% an OTP test chain's certificate, as the example used to make
            Opts = [{key, {namedCurve, secp256r1}}, {digest, sha256}],
            #{server_config := Conf} =
                public_key:pkix_test_data(#{server_chain => #{root => Opts, intermediates => [],
                                                              peer => Opts},
                                            client_chain => #{root => Opts, intermediates => [],
                                                              peer => Opts}}),
            {_, {Type, KeyDer}} = lists:keyfind(key, 1, Conf),
            {_, OldDer} = lists:keyfind(cert, 1, Conf),
            ok = file:write_file(Cert, public_key:pem_encode([{'Certificate', OldDer,
                                                               not_encrypted}])),
            ok = file:write_file(Key, public_key:pem_encode([{Type, KeyDer, not_encrypted}])),
            {ok, _} = falco_example:start_tls(Dir, #{port => 0}),
            try
                {ok, Port} = falco:port(falco_example_tls),
                {ok, Pem} = file:read_file(Cert),
                [{'Certificate', NewDer, not_encrypted}] = public_key:pem_decode(Pem),
                ?assertNotEqual(OldDer, NewDer),
                S = h3_ok(aioquic(Config, ["https://127.0.0.1:" ++ integer_to_list(Port) ++ "/"]),
                          #{<<"200">> => 1}),
                [#{<<"headers">> := #{<<"content-type">> := <<"text/html", _/binary>>}}] =
                    maps:get(<<"responses">>, S),
                %% kept when usable: a second start reuses it
                ok = falco:stop_listener(falco_example_tls),
                {ok, _} = falco_example:start_tls(Dir, #{port => 0}),
                ?assertEqual({ok, Pem}, file:read_file(Cert))
            after
                falco:stop_listener(falco_example_tls)
            end
    end.

%% Each cipher suite offered alone (RFC 9001 §5.3; ChaCha20's header
%% protection, §5.4.4).
aioquic_cipher_suites(Config) ->
    [begin
         ct:log("~s", [Suite]),
         S = h3_ok(aioquic(Config, ["--cipher-suite", Suite, url(Config, "/hello")]),
                   #{<<"200">> => 1}),
         ?assertEqual(list_to_binary(Suite), maps:get(<<"cipher_suite">>, S)),
         bodies(S, <<"hello world">>)
     end || Suite <- ["AES_128_GCM_SHA256", "AES_256_GCM_SHA384", "CHACHA20_POLY1305_SHA256"]].

aioquic_download(Config) ->
    S = h3_ok(aioquic(Config, [url(Config, "/bytes/1000000")]), #{<<"200">> => 1}),
    bodies(S, pattern(1000000)).

%% 10 MB streamed from a generator, echoed whole.
aioquic_post_10mb(Config) ->
    S = h3_ok(aioquic(Config, ["--body-size", integer_to_list(?TEN_MB), url(Config, "/echo")]),
              #{<<"200">> => 1}),
    ?assertEqual(#{<<"bytes">> => ?TEN_MB, <<"sha256">> => sha(pattern(?TEN_MB))},
                 maps:get(<<"sent">>, S)),
    bodies(S, pattern(?TEN_MB)).

%% 100 requests at once on one connection, 100 client streams.
aioquic_concurrent_100(Config) ->
    S = h3_ok(aioquic(Config, ["--requests", "100", url(Config, "/bytes/1000")]),
              #{<<"200">> => 100}),
    bodies(S, pattern(1000)),
    Ids = [Id || #{<<"stream_id">> := Id} <- maps:get(<<"responses">>, S)],
    ?assertEqual(100, length(lists:usort(Ids))),
    ?assertEqual(1, maps:get(<<"connections">>, S)).

%% Request trailers come back as response trailers (/echo), and a
%% streamed response's trailers arrive (/trailers).
aioquic_trailers(Config) ->
    S1 = h3_ok(aioquic(Config, ["--body-size", "1000", "--trailer", "x-req-trailer: one",
                                url(Config, "/echo")]), #{<<"200">> => 1}),
    bodies(S1, pattern(1000)),
    [#{<<"trailers">> := T1}] = maps:get(<<"responses">>, S1),
    ?assertEqual(#{<<"x-req-trailer">> => <<"one">>}, T1),
    S2 = h3_ok(aioquic(Config, [url(Config, "/trailers")]), #{<<"200">> => 1}),
    bodies(S2, <<"alpha beta">>),
    [#{<<"trailers">> := T2}] = maps:get(<<"responses">>, S2),
    ?assertEqual(#{<<"x-checksum">> => <<"abc">>}, T2).

%% -- curl ----------------------------------------------------------------------

curl_get(Config) ->
    S = h3_ok(curl(Config, [url(Config, "/hello")]), #{<<"200">> => 1}),
    bodies(S, <<"hello world">>).

curl_post_10mb(Config) ->
    S = h3_ok(curl(Config, ["--body-size", integer_to_list(?TEN_MB), url(Config, "/echo")]),
              #{<<"200">> => 1}),
    bodies(S, pattern(?TEN_MB)).

%% libcurl multiplexes the 100 on one connection (PIPEWAIT).
curl_concurrent_100(Config) ->
    S = h3_ok(curl(Config, ["--requests", "100", url(Config, "/bytes/1000")]),
              #{<<"200">> => 100}),
    bodies(S, pattern(1000)),
    ?assertEqual(1, maps:get(<<"connections">>, S)).

%% -- quic-go -------------------------------------------------------------------

quicgo_get(Config) ->
    S = h3_ok(quicgo([url(Config, "/hello")]), #{<<"200">> => 1}),
    bodies(S, <<"hello world">>).

quicgo_post_10mb(Config) ->
    S = h3_ok(quicgo(["-body-size", integer_to_list(?TEN_MB), url(Config, "/echo")]),
              #{<<"200">> => 1}),
    bodies(S, pattern(?TEN_MB)).

quicgo_concurrent_100(Config) ->
    S = h3_ok(quicgo(["-requests", "100", url(Config, "/bytes/1000")]), #{<<"200">> => 100}),
    bodies(S, pattern(1000)),
    ?assertEqual(1, maps:get(<<"connections">>, S)).

quicgo_trailers(Config) ->
    S1 = h3_ok(quicgo(["-body-size", "1000", "-trailer", "x-req-trailer: one",
                       url(Config, "/echo")]), #{<<"200">> => 1}),
    bodies(S1, pattern(1000)),
    [#{<<"trailers">> := T1}] = maps:get(<<"responses">>, S1),
    ?assertEqual(#{<<"x-req-trailer">> => <<"one">>}, T1),
    S2 = h3_ok(quicgo([url(Config, "/trailers")]), #{<<"200">> => 1}),
    [#{<<"trailers">> := T2}] = maps:get(<<"responses">>, S2),
    ?assertEqual(#{<<"x-checksum">> => <<"abc">>}, T2).

%% -- gtlsclient ----------------------------------------------------------------

%% gtlsclient downloads /bytes/N into a directory of its own with `Opts';
%% the file must be whole: gtlsclient 0.12.1 exits 0 also when its
%% connection ended (idle timeout) before the body did.
gtls_dir(Config) ->
    Dir = filename:join(?config(priv_dir, Config),
                        "gtls-" ++ integer_to_list(erlang:unique_integer([positive]))),
    ok = filelib:ensure_dir(filename:join(Dir, "x")),
    Dir.

gtls(Config, Opts, N) ->
    Dir = gtls_dir(Config),
    Args = ["--quiet", "--timeout=10s", "--exit-on-all-streams-close", "--download=" ++ Dir]
        ++ Opts ++ ["127.0.0.1", integer_to_list(?config(port, Config)),
                    url(Config, "/bytes/" ++ integer_to_list(N))],
    {Status, Out} = falco_test_run:run(os:find_executable("gtlsclient"), Args,
                                       #{timeout => ?RUN_TIMEOUT}),
    ct:log("gtlsclient ~p~nexit status ~p~n~ts", [Args, Status, Out]),
    ?assertEqual(0, Status),
    Got = case file:read_file(filename:join(Dir, integer_to_list(N))) of
              {ok, Bin} -> Bin;
              {error, enoent} -> <<>>
          end,
    ?assertEqual({N, sha(pattern(N))}, {byte_size(Got), sha(Got)}).

gtls_download(Config) ->
    gtls(Config, [], 1000000).

%% 10 % of the datagrams lost each way.
gtls_loss(Config) ->
    gtls(Config, ["-t", "0.1", "-r", "0.1"], 1000000).

%% 2 % each way, a 1 MB download whole.
gtls_loss_2(Config) ->
    gtls(Config, ["-t", "0.02", "-r", "0.02"], 1000000).

%% Every TLS 1.3 cipher suite with every group, a client offering only
%% that one of each (RFC 9001 §5.3: ChaCha20's header protection too;
%% RFC 8446 §4.2.7), a 100 KB download whole each time.
gtls_ciphers_groups(Config) ->
    [begin
         ct:log("~s with ~s", [Cipher, Group]),
         gtls(Config, ["--ciphers=NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+" ++ Cipher,
                       "--groups=-GROUP-ALL:+GROUP-" ++ Group], 100000)
     end || Cipher <- ["AES-128-GCM", "AES-256-GCM", "CHACHA20-POLY1305"],
            Group <- ["X25519", "SECP256R1", "SECP384R1"]].

%% The client moves to a new local address after 50 ms (a new connection
%% ID, path validation).
gtls_migration(Config) ->
    gtls(Config, ["--change-local-addr=50ms"], 10000000).

%% The same move without a new connection ID, as a NAT would make it, in
%% the middle of a 10 MB upload echoed back. (As a download, against the
%% reference servers aioquic 1.7.2 and quic-go 0.65.0, the file was whole
%% in 2 to 4 of 5 tries for 1 MB, 3 and 0 of 5 for 10 MB, 2026-12-02, and
%% as often against falco: see below.)
gtls_nat_rebinding(Config) ->
    %% gtlsclient ignores what reaches its old address, and sends from the
    %% new one only what it has to send: during a download it may have
    %% nothing (so the case depends on timing, and failed against quic-go
    %% and aioquic as against any server), during an upload it always has.
    %% The server must see the new address, move there and validate it.
    Dir = gtls_dir(Config),
    Up = filename:join(Dir, "up"),
    ok = file:write_file(Up, pattern(?TEN_MB)),
    Args = ["--quiet", "--timeout=10s", "--exit-on-all-streams-close", "--download=" ++ Dir,
            "--change-local-addr=50ms", "--nat-rebinding", "--data=" ++ Up,
            "127.0.0.1", integer_to_list(?config(port, Config)), url(Config, "/echo")],
    {Status, Out} = falco_test_run:run(os:find_executable("gtlsclient"), Args,
                                       #{timeout => ?RUN_TIMEOUT}),
    ct:log("gtlsclient ~p~nexit status ~p~n~ts", [Args, Status, Out]),
    ?assertEqual(0, Status),
    {ok, Got} = file:read_file(filename:join(Dir, "echo")),
    ?assertEqual({?TEN_MB, sha(pattern(?TEN_MB))}, {byte_size(Got), sha(Got)}).

%% The client updates its keys 1 ms after the handshake, while 10 MB
%% arrive. (At 100 ms gtlsclient 0.12.1 sometimes finds it may not yet,
%% ERR_INVALID_STATE, and stops: 2 of 5 downloads whole against quic-go;
%% at 1 ms 10 of 10 against both reference servers, 2026-12-02.)
gtls_key_update(Config) ->
    gtls(Config, ["--key-update=1ms"], 10000000).

%% -- key updates (group keys: a listener updating every 1,000 packets) --------

%% aioquic updates its keys once the handshake is confirmed, then 1 MB
%% arrives whole: the server followed (RFC 9001 §6.2).
aioquic_key_update(Config) ->
    {S, Updates} = watch_key_updates(
                     fun() -> h3_ok(aioquic(Config, ["--key-update", url(Config, "/bytes/1000000")]),
                                    #{<<"200">> => 1})
                     end),
    bodies(S, pattern(1000000)),
    ?assertMatch(#{<<"local">> := 1}, maps:get(<<"key_updates">>, S)),
    ct:log("server-side key updates ~p (the client's answered, and the server's own)", [Updates]),
    ?assert(Updates >= 1).

%% The server updates its own keys, again and again during a 10 MB
%% download (every 1,000 packets, each after the last was acknowledged and
%% answered, §6.5): aioquic sees them as remote updates, the body whole.
aioquic_server_key_updates(Config) ->
    {S, Updates} = watch_key_updates(
                     fun() -> h3_ok(aioquic(Config, [url(Config, "/bytes/" ++ integer_to_list(?TEN_MB))]),
                                    #{<<"200">> => 1})
                     end),
    bodies(S, pattern(?TEN_MB)),
    #{<<"remote">> := Remote} = maps:get(<<"key_updates">>, S),
    ct:log("aioquic saw ~p server key updates; the server counted ~p", [Remote, Updates]),
    ?assert(Remote >= 5),
    ?assert(Updates >= Remote).

%% The same 10 MB with gtlsclient (ngtcp2), whose own update too (1 ms
%% after the handshake) is mixed with the server's.
gtls_server_key_updates(Config) ->
    {ok, Updates} = watch_key_updates(fun() -> gtls(Config, [], ?TEN_MB) end),
    ct:log("server-side key updates ~p", [Updates]),
    ?assert(Updates >= 5).

gtls_both_key_updates(Config) ->
    {ok, Updates} = watch_key_updates(fun() -> gtls(Config, ["--key-update=1ms"], ?TEN_MB) end),
    ct:log("server-side key updates ~p", [Updates]),
    ?assert(Updates >= 5).

%% Runs Fun while sampling the key_updates of every falco HTTP/3
%% connection process (sys:get_state/1, every 20 ms): {Fun's result, the
%% most any connection counted}.
watch_key_updates(Fun) ->
    Self = self(),
    Watcher = spawn_link(fun() -> sample_key_updates(Self, 0) end),
    Result = Fun(),
    Watcher ! {stop, Self},
    receive {key_updates, Watcher, N} -> {Result, N}
    after 5000 -> ct:fail(key_update_watcher_silent)
    end.

sample_key_updates(Owner, Max) ->
    Seen = [maps:get(key_updates, maps:get(quic, State), 0)
            || P <- processes(), is_h3_conn(P),
               {ok, State} <- [catch_state(P)], is_map(maps:get(quic, State, undefined))],
    Max1 = lists:max([Max | Seen]),
    receive {stop, Owner} -> Owner ! {key_updates, self(), Max1}
    after 20 -> sample_key_updates(Owner, Max1)
    end.

is_h3_conn(P) ->
    case erlang:process_info(P, dictionary) of
        {dictionary, D} -> proplists:get_value('$initial_call', D) =:= {falco_http3_conn, init, 3};
        undefined -> false
    end.

catch_state(P) ->
    try {ok, sys:get_state(P, 1000)}
    catch exit:_ -> error
    end.

%% -- Retry, NEW_TOKEN, stateless reset (groups retry and retry_raw: a
%% listener with h3_retry => always) ---------------------------------------------

%% aioquic follows the Retry (one), checks its integrity tag and the
%% transport parameters of RFC 9000 §7.3 (original_destination_connection_id,
%% retry_source_connection_id: it closes if they are wrong), and 1 MB
%% arrives whole.
aioquic_retry(Config) ->
    S = h3_ok(aioquic(Config, [url(Config, "/bytes/1000000")]), #{<<"200">> => 1}),
    bodies(S, pattern(1000000)),
    ?assertEqual(1, maps:get(<<"retries">>, S)).

%% RFC 9000 §8.1.3: the first connection gets a NEW_TOKEN token, the second
%% brings it in its first Initial and is let in without a Retry.
aioquic_new_token(Config) ->
    File = filename:join(gtls_dir(Config), "token"),
    S1 = h3_ok(aioquic(Config, ["--token-file", File, url(Config, "/hello")]), #{<<"200">> => 1}),
    ?assertEqual(1, maps:get(<<"retries">>, S1)),
    ?assert(maps:get(<<"new_tokens">>, S1) >= 1),
    {ok, Token} = file:read_file(File),
    ct:log("NEW_TOKEN token of ~p bytes", [byte_size(Token)]),
    S2 = h3_ok(aioquic(Config, ["--token-file", File, url(Config, "/hello")]), #{<<"200">> => 1}),
    bodies(S2, <<"hello world">>),
    ?assertEqual(0, maps:get(<<"retries">>, S2)).

quicgo_retry(Config) ->
    S = h3_ok(quicgo([url(Config, "/bytes/1000000")]), #{<<"200">> => 1}),
    bodies(S, pattern(1000000)).

gtls_retry(Config) ->
    Before = socket_counts(Config),
    gtls(Config, [], 1000000),
    After = socket_counts(Config),
    ?assert(maps:get(retry, After) > maps:get(retry, Before)).

%% A flood of Initials (300, each with its own DCID, from one socket) is
%% answered by as many Retries from the holder, whose integrity tags check
%% against each DCID; no connection process is started for any.
retry_flood(Config) ->
    {ok, Sock} = gen_udp:open(0, [binary, {active, false}, {ip, {127, 0, 0, 1}},
                                  {recbuf, 4194304}]),
    Port = ?config(port, Config),
    Before = socket_counts(Config),
    Dcids = [crypto:strong_rand_bytes(8) || _ <- lists:seq(1, 300)],
    Initial = falco_test_quic_client:first_initial(#{dcid => hd(Dcids)}, 1200),
    ?assert(byte_size(Initial) >= 1200),
    [ok = gen_udp:send(Sock, {127, 0, 0, 1}, Port,
                       falco_test_quic_client:first_initial(#{dcid => D}, 1200)) || D <- Dcids],
    Retries = recv_all(Sock, 2000, []),
    ok = gen_udp:close(Sock),
    Valid = [D || D <- Dcids, R <- Retries, retry_for(R, D)],
    ct:log("holders' counts: ~p", [socket_counts(Config)]),
    ct:log("~p Initials, ~p datagrams back, ~p valid Retries", [length(Dcids), length(Retries),
                                                               length(Valid)]),
    ?assertEqual(length(Dcids), length(lists:usort(Valid))),
    [?assert(byte_size(R) < 1200) || R <- Retries],
    ?assertEqual([], [P || P <- processes(), is_h3_conn(P)]),
    After = socket_counts(Config),
    ?assertEqual(maps:get(started, Before), maps:get(started, After)),
    ?assertEqual(300, maps:get(retry, After) - maps:get(retry, Before)).

retry_for(Datagram, Dcid) ->
    case falco_quic_packet:parse(Datagram, 0) of
        {ok, P = #{type := retry}, _} -> falco_quic_packet:retry_valid(P, Dcid);
        _ -> false
    end.

%% Hostile tokens (RFC 9000 §8.1.3): a forged Retry token, a real one from
%% another port, and one past its 10 s: each an INVALID_TOKEN close from
%% the holder, no process; garbage tokens: a Retry as for no token.
retry_bad_tokens(Config) ->
    Port = ?config(port, Config),
    {ok, Sock} = gen_udp:open(0, [binary, {active, false}, {ip, {127, 0, 0, 1}}]),
    {ok, Other} = gen_udp:open(0, [binary, {active, false}, {ip, {127, 0, 0, 1}}]),
    Dcid = crypto:strong_rand_bytes(8),
    ok = gen_udp:send(Other, {127, 0, 0, 1}, Port,
                      falco_test_quic_client:first_initial(#{dcid => Dcid}, 1200)),
    {ok, {_, _, Retry}} = gen_udp:recv(Other, 0, 2000),
    {ok, #{type := retry, scid := RetryScid, token := Token}, _} =
        falco_quic_packet:parse(Retry, 0),
    %% the token of the Retry to Other, sent from Sock (another port)
    Send = fun(T) ->
                   ok = gen_udp:send(Sock, {127, 0, 0, 1}, Port,
                                     falco_test_quic_client:first_initial(
                                       #{dcid => RetryScid, token => T}, 1200)),
                   case gen_udp:recv(Sock, 0, 2000) of
                       {ok, {_, _, Reply}} -> Reply;
                       {error, timeout} -> timeout
                   end
           end,
    <<K, Rest/binary>> = Token,
    Forged = <<K, (crypto:strong_rand_bytes(byte_size(Rest)))/binary>>,
    [begin
         Reply = Send(T),
         ?assertMatch({ok, #{type := initial}, _}, falco_quic_packet:parse(Reply, 0)),
         {_, Server} = falco_quic_keys:initial(RetryScid),
         {[P | _], _} = falco_quic_packet:split(Reply, 8),
         {ok, _, Payload} = falco_quic_packet:unprotect(P, Server, none),
         ?assertMatch({ok, [{connection_close, invalid_token, _, _} | _]},
                      falco_quic_frame:parse(Payload, #{peer => server}))
     end || T <- [Token, Forged]],
    [?assert(retry_for(Send(T), RetryScid)) || T <- [<<"garbage">>, <<0:800>>]],
    %% the real token from its own port, once it is older than 10 s
    timer:sleep(10500),
    ok = gen_udp:send(Other, {127, 0, 0, 1}, Port,
                      falco_test_quic_client:first_initial(#{dcid => RetryScid, token => Token},
                                                           1200)),
    {ok, {_, _, Expired}} = gen_udp:recv(Other, 0, 2000),
    {_, Server2} = falco_quic_keys:initial(RetryScid),
    {[E | _], _} = falco_quic_packet:split(Expired, 8),
    {ok, _, EPayload} = falco_quic_packet:unprotect(E, Server2, none),
    ?assertMatch({ok, [{connection_close, invalid_token, _, _} | _]},
                 falco_quic_frame:parse(EPayload, #{peer => server})),
    ok = gen_udp:close(Sock),
    ok = gen_udp:close(Other),
    ?assertEqual([], [P || P <- processes(), is_h3_conn(P)]),
    ?assert(maps:get(invalid_token, socket_counts(Config)) >= 2).

%% RFC 9000 §10.3: a short header to a connection ID no route knows gets a
%% stateless reset, shorter than it, if it has more than 21 bytes; tiny
%% ones get nothing.
stateless_reset(Config) ->
    Port = ?config(port, Config),
    {ok, Sock} = gen_udp:open(0, [binary, {active, false}, {ip, {127, 0, 0, 1}},
                                  {recbuf, 4194304}]),
    Short = fun(N) -> <<16#40, (crypto:strong_rand_bytes(N - 1))/binary>> end,
    [begin
         ok = gen_udp:send(Sock, {127, 0, 0, 1}, Port, Short(N)),
         ?assertEqual({error, timeout}, gen_udp:recv(Sock, 0, 300))
     end || N <- [9, 15, 21]],
    [begin
         ok = gen_udp:send(Sock, {127, 0, 0, 1}, Port, Short(N)),
         {ok, {_, _, Reset}} = gen_udp:recv(Sock, 0, 2000),
         ?assertEqual(erlang:min(N - 1, 43), byte_size(Reset)),
         ?assertMatch(<<0:1, 1:1, _/bits>>, Reset)
     end || N <- [22, 40, 100, 1200]],
    %% at most 100 a second: 300 at once get between 100 and 200 (the
    %% burst may straddle two seconds)
    timer:sleep(1000),
    [ok = gen_udp:send(Sock, {127, 0, 0, 1}, Port, Short(100)) || _ <- lists:seq(1, 300)],
    Resets = length(recv_all(Sock, 1000, [])),
    ct:log("300 short headers at once: ~p stateless resets", [Resets]),
    ?assert(Resets >= 100 andalso Resets =< 200),
    ok = gen_udp:close(Sock).

%% Chromium follows the Retry too: the page comes over h3, and the holder
%% sent a Retry for it.
chromium_retry(Config) ->
    Before = socket_counts(Config),
    ?assertMatch({match, _}, re:run(chromium(Config, "/page"), "<body>proto=h3</body>")),
    After = socket_counts(Config),
    ?assert(maps:get(retry, After) > maps:get(retry, Before)),
    ?assert(maps:get(started, After) > maps:get(started, Before)).

recv_all(Sock, Timeout, Acc) ->
    case gen_udp:recv(Sock, 0, Timeout) of
        {ok, {_, _, D}} -> recv_all(Sock, 200, [D | Acc]);
        {error, timeout} -> lists:reverse(Acc)
    end.

%% The counts of the group listener's UDP socket holders, summed.
socket_counts(Config) ->
    Name = ?config(group_listener, Config),
    Holders = [P || P <- processes(), is_quic_socket(P, Name)],
    ?assertNotEqual([], Holders),
    lists:foldl(fun(P, Acc) ->
                        I = maps:with([started, retry, invalid_token, stateless_reset],
                                      falco_quic_socket:info(P)),
                        maps:merge_with(fun(_, A, B) -> A + B end, Acc, I)
                end, #{}, Holders).

is_quic_socket(P, _Name) ->
    case erlang:process_info(P, dictionary) of
        {dictionary, D} -> proplists:get_value('$initial_call', D) =:= {falco_quic_socket, init, 1};
        undefined -> false
    end.

%% -- Chromium ------------------------------------------------------------------

%% QUIC forced on localhost:PORT (resolved to 127.0.0.1: without the rule
%% Chromium tries ::1 first), the certificate accepted by its key; the
%% page's script writes its navigation entry's nextHopProtocol into the
%% DOM that --dump-dom prints. No Chromium process is left behind.
chromium_h3(Config) ->
    ?assertMatch({match, _}, re:run(chromium(Config, "/page"), "<body>proto=h3</body>")).

%% The upload form posted by the browser (multipart, 100 KB) over HTTP/3:
%% the page it gets back says what the handler received, and over which
%% HTTP.
chromium_h3_form(Config) ->
    ?assertMatch({match, _}, re:run(chromium(Config, "/form"),
                                    "<body>posted 1001[0-9][0-9] bytes over HTTP/3</body>")).

%% The DOM headless Chromium ends with at Path, QUIC forced on the origin.
chromium(Config, Path) ->
    Port = integer_to_list(?config(port, Config)),
    Profile = filename:join(?config(priv_dir, Config),
                            "chromium-h3-profile-" ++ integer_to_list(erlang:unique_integer([positive]))),
    Args = ["--headless", "--disable-gpu", "--no-first-run", "--user-data-dir=" ++ Profile,
            "--enable-quic", "--origin-to-force-quic-on=localhost:" ++ Port,
            "--host-resolver-rules=MAP localhost 127.0.0.1",
            "--ignore-certificate-errors-spki-list=" ++ ?config(spki, Config)]
        ++ ["--no-sandbox" || string:trim(os:cmd("id -u")) =:= "0"]
        ++ ["--dump-dom", "https://localhost:" ++ Port ++ Path],
    {Status, Out} = falco_test_run:run(falco_test_browser:find(), Args, #{timeout => 60000}),
    ct:log("chromium ~p~nexit status ~p~n~ts", [Args, Status, Out]),
    Left = falco_test_browser:processes(#{profile => Profile}),
    [os:cmd("kill -KILL " ++ integer_to_list(P)) || P <- Left],
    ?assertEqual({0, []}, {Status, Left}),
    Out.

%% -- h3load --------------------------------------------------------------------

h3load(Args) ->
    json_client(falco_test_tools:find("h3load"), ["-insecure" | Args]).

%% 2 connections x 4 requests in flight for 3 s: no error, every body
%% whole.
h3load_hello(Config) ->
    {Status, S} = h3load(["-conns", "2", "-streams", "4", "-duration", "3s",
                          url(Config, "/hello")]),
    #{<<"ok">> := Ok, <<"requests">> := N, <<"bytes">> := Bytes, <<"errors">> := Errors} = S,
    ?assertEqual({0, true, 0}, {Status, Ok, Errors}),
    ?assert(N > 0),
    ?assertEqual(N * 11, Bytes).

%% 64 KB downloads, each hashed against the pattern's SHA-256.
h3load_download(Config) ->
    Body = pattern(65536),
    {Status, S} = h3load(["-conns", "2", "-streams", "2", "-duration", "3s",
                          "-expect-sha256", binary_to_list(sha(Body)),
                          url(Config, "/bytes/65536")]),
    #{<<"ok">> := Ok, <<"requests">> := N, <<"bytes">> := Bytes,
      <<"hash_mismatches">> := Bad, <<"short_bodies">> := Short} = S,
    ?assertEqual({0, true, 0, 0}, {Status, Ok, Bad, Short}),
    ?assert(N > 0),
    ?assertEqual(N * 65536, Bytes).
