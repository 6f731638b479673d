%% Black-box HTTP/2 tests with real clients: curl (prior knowledge, the
%% h2c upgrade, ALPN over TLS), nghttp, h2load and Python's h2 library
%% (the Debian python3-h2 package, which only /usr/bin/python3 sees).
%% A client that is not installed skips its case, unless
%% FALCO_REQUIRE_TOOLS=1 (as `make test' sets after scripts/bootstrap)
%% makes that a failure (falco_test_tools).
-module(h2_clients_SUITE).

-include_lib("common_test/include/ct.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1, init_per_testcase/2, end_per_testcase/2]).
-export([curl_prior_knowledge/1, curl_prior_knowledge_post/1, curl_upgrade/1, curl_tls_alpn/1,
         curl_tls_http11/1, nghttp_h2c/1, nghttp_tls/1, h2load_h2c/1, python_h2/1,
         tls13_only_listener/1]).

all() ->
    [curl_prior_knowledge, curl_prior_knowledge_post, curl_upgrade, curl_tls_alpn,
     curl_tls_http11, nghttp_h2c, nghttp_tls, h2load_h2c, python_h2, tls13_only_listener].

init_per_suite(Config) ->
    ok = falco_test_listener:start_tls_app(),
    TlsOpts = falco_test_tls:server_opts(),
    {_, Tcp} = falco_test_listener:start(clients_tcp, fun handle/1, #{}),
    {_, Tls} = falco_test_listener:start(clients_tls, fun handle/1,
                                         falco_test_listener:tls(#{tls_opts => TlsOpts})),
    [{tcp_port, Tcp}, {tls_port, Tls}, {tls_opts, TlsOpts} | Config].

end_per_suite(Config) ->
    ok = falco_test_listener:stop([clients_tcp, clients_tls]),
    Config.

tools(tls13_only_listener) -> [];
tools(python_h2) -> [{python3_module, "h2"}];
tools(Case) ->
    case atom_to_list(Case) of
        "curl" ++ _ -> ["curl"];
        "nghttp" ++ _ -> ["nghttp"];
        "h2load" ++ _ -> ["h2load"]
    end.

init_per_testcase(Case, Config) ->
    falco_test_tools:require(tools(Case), Config).

end_per_testcase(_, Config) ->
    Config.

handle(Req) ->
    Version = case falco_req:version(Req) of
                  {2, 0} -> <<"2">>;
                  {1, 1} -> <<"1.1">>;
                  {1, 0} -> <<"1.0">>
              end,
    case falco_req:path(Req) of
        <<"/hello">> ->
            {200, [{<<"x-version">>, Version}], <<"hello world">>};
        <<"/echo">> ->
            {ok, Body, _} = falco_req:read_body(Req),
            {200, [{<<"x-version">>, Version}], Body};
        <<"/echo-trailers">> ->
            {ok, Body, Req1} = falco_req:read_body(Req),
            T = iolist_to_binary([[N, "=", V] || {N, V} <- falco_req:trailers(Req1)]),
            {200, [], [Body, "|", T]};
        <<"/stream">> ->
            {stream, 200, [],
             fun(Send) ->
                     ok = Send(<<"alpha ">>), ok = Send(<<"beta">>),
                     {trailers, [{<<"x-checksum">>, <<"abc">>}]}
             end};
        <<"/big">> ->
            {200, [], binary:copy(<<"0123456789">>, 100000)};
        _ ->
            {404, [], <<"not found">>}
    end.

cmd(Args) ->
    Out = falco_test_run:cmd(Args, 60000),
    ct:log("~ts~n~ts", [Args, Out]),
    Out.

url(Config, Scheme, Path) ->
    Port = case Scheme of "http" -> ?config(tcp_port, Config); "https" -> ?config(tls_port, Config) end,
    Scheme ++ "://127.0.0.1:" ++ integer_to_list(Port) ++ Path.

curl_prior_knowledge(Config) ->
    "hello world|2" =
        cmd("curl -s --http2-prior-knowledge -w '|%{http_version}' " ++ url(Config, "http", "/hello")),
    %% a 1 MB body through flow control
    "1000000" = cmd("curl -s --http2-prior-knowledge " ++ url(Config, "http", "/big")
                    ++ " | wc -c | tr -d ' \\n'").

curl_prior_knowledge_post(Config) ->
    "posted body|2" =
        cmd("curl -s --http2-prior-knowledge -d 'posted body' -w '|%{http_version}' "
            ++ url(Config, "http", "/echo")).

%% curl --http2 on http:// uses the HTTP/1.1 Upgrade: h2c path.
curl_upgrade(Config) ->
    Out = cmd("curl -sv --http2 " ++ url(Config, "http", "/hello") ++ " 2>&1"),
    {match, _} = re:run(Out, "HTTP/1.1 101 Switching Protocols"),
    {match, _} = re:run(Out, "< HTTP/2 200"),
    %% stream 1 answers the upgraded HTTP/1.1 request
    {match, _} = re:run(Out, "x-version: 1.1"),
    {match, _} = re:run(Out, "hello world").

curl_tls_alpn(Config) ->
    Out = cmd("curl -skv --http2 " ++ url(Config, "https", "/hello") ++ " 2>&1"),
    {match, _} = re:run(Out, "ALPN: server accepted h2|ALPN, server accepted to use h2"),
    {match, _} = re:run(Out, "x-version: 2"),
    {match, _} = re:run(Out, "hello world").

curl_tls_http11(Config) ->
    "hello world|1.1" =
        cmd("curl -sk --http1.1 -w '|%{http_version}' " ++ url(Config, "https", "/hello")).

nghttp_h2c(Config) ->
    Out = cmd("nghttp -v " ++ url(Config, "http", "/stream")),
    {match, _} = re:run(Out, ":status: 200"),
    {match, _} = re:run(Out, "x-checksum: abc"),
    "alpha beta" = cmd("nghttp " ++ url(Config, "http", "/stream")),
    %% and a POST whose data nghttp reads from a file
    File = filename:join(?config(priv_dir, Config), "post.txt"),
    ok = file:write_file(File, <<"from nghttp">>),
    Out2 = cmd("nghttp -d " ++ File ++ " " ++ url(Config, "http", "/echo")),
    "from nghttp" = string:trim(Out2).

nghttp_tls(Config) ->
    Out = cmd("nghttp -v " ++ url(Config, "https", "/hello")),
    {match, _} = re:run(Out, "The negotiated protocol: h2"),
    {match, _} = re:run(Out, "hello world").

h2load_h2c(Config) ->
    Out = cmd("h2load -n 2000 -c 4 -m 10 " ++ url(Config, "http", "/hello")),
    {match, _} = re:run(Out, "requests: 2000 total, 2000 started, 2000 done, 2000 succeeded"),
    {match, _} = re:run(Out, "status codes: 2000 2xx").

python_h2(Config) ->
    Script = filename:join(?config(data_dir, Config), "h2_client.py"),
    Out = cmd("/usr/bin/python3 " ++ Script ++ " " ++ integer_to_list(?config(tcp_port, Config))
              ++ " 2>&1; echo exit=$?"),
    {match, _} = re:run(Out, "ok concurrent gets\nok post with trailers\n"
                             "ok streamed response with trailers\nexit=0").

%% A TLS-1.3-only listener serves (falco once added TLS-1.2-only defaults
%% that OTP's ssl refused on every handshake), and refuses a 1.2 client.
tls13_only_listener(Config) ->
    TlsOpts = [{versions, ['tlsv1.3']} | ?config(tls_opts, Config)],
    {_, Port} = falco_test_listener:start(clients_tls13, fun handle/1,
                                          falco_test_listener:tls(#{tls_opts => TlsOpts})),
    try
        {ok, S} = ssl:connect({127, 0, 0, 1}, Port, [binary, {active, false},
                                                     {versions, ['tlsv1.3']},
                                                     {verify, verify_none},
                                                     {alpn_advertised_protocols, [<<"http/1.1">>]}],
                              5000),
        {ok, [{protocol, 'tlsv1.3'}]} = ssl:connection_information(S, [protocol]),
        ok = ssl:send(S, <<"GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n">>),
        {ok, <<"HTTP/1.1 200", _/binary>>} = ssl:recv(S, 0, 5000),
        _ = ssl:close(S),
        {error, _} = ssl:connect({127, 0, 0, 1}, Port, [binary, {active, false},
                                                        {versions, ['tlsv1.2']},
                                                        {verify, verify_none}], 5000)
    after
        ok = falco_test_listener:stop(clients_tls13)
    end.
