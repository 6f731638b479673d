%% falco's QUIC and HTTP/3 codecs against another stack: the raw client
%% of the tests (falco_test_quic_client: falco_quic_packet, falco_quic_frame,
%% falco_quic_tparams, falco_http3_frame, falco_qpack, and a TLS 1.3 client
%% on falco_tls13_keys) completes handshakes with aioquic's example HTTP/3
%% server (from the sdist scripts/bootstrap unpacks, with
%% quic_interop_SUITE_data/h3app.py as its application) and makes GETs,
%% with each TLS 1.3 cipher suite. A codec bug that falco's own client and
%% server would share shows here. aioquic listens on 127.0.0.1 only.
-module(quic_interop_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1]).
-export([get_each_suite/1, get_sizes/1, connections_in_a_row/1, not_found/1]).

all() ->
    [get_each_suite, get_sizes, connections_in_a_row, not_found].

python() ->
    case falco_test_tools:find("h3py/bin/python") of
        false -> "_build/tools/h3py/bin/python";
        P -> P
    end.

server_script() ->
    filename:join([falco_test_run:checkout(), "_build", "tools", "aioquic-1.7.2", "examples",
                   "http3_server.py"]).

init_per_suite(Config) ->
    case falco_test_tools:check([{python_module, python(), "aioquic"},
                                 {file, server_script()}]) of
        ok -> start_server(Config);
        NotThere -> NotThere
    end.

start_server(Config) ->
    Priv = ?config(priv_dir, Config),
    Cert = filename:join(Priv, "cert.pem"),
    Key = filename:join(Priv, "key.pem"),
    {0, _} = falco_test_run:run(python(), [filename:join(?config(data_dir, Config), "make_cert.py"),
                                           Cert, Key], #{timeout => 30000}),
    Port = free_udp_port(),
    Server = falco_test_run:start(python(), [server_script(), "--certificate", Cert,
                                             "--private-key", Key, "--host", "127.0.0.1",
                                             "--port", integer_to_list(Port), "h3app:app"],
                                  #{env => [{"PYTHONPATH", ?config(data_dir, Config)}]}),
    ok = ready(Port, falco_test_run:deadline(15000)),
    [{server, Server}, {port, Port} | Config].

end_per_suite(Config) ->
    _ = falco_test_run:stop(?config(server, Config), 5000),
    Config.

free_udp_port() ->
    {ok, S} = gen_udp:open(0, [{ip, {127, 0, 0, 1}}]),
    {ok, Port} = inet:port(S),
    ok = gen_udp:close(S),
    Port.

%% The server is up once a request gets through.
ready(Port, Deadline) ->
    case falco_test_quic_client:get(Port, <<"/echo-path">>, #{timeout => 1000}) of
        {ok, #{status := 200}} -> ok;
        Other ->
            case falco_test_run:left(Deadline) of
                0 -> {error, {not_ready, Other}};
                _ -> timer:sleep(200), ready(Port, Deadline)
            end
    end.

get(Config, Path, Opts) ->
    falco_test_quic_client:get(?config(port, Config), Path, Opts).

%% TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384 and
%% TLS_CHACHA20_POLY1305_SHA256 offered alone, each: the packet keys,
%% header protection and AEAD of that suite both ways.
get_each_suite(Config) ->
    [begin
         {ok, R} = get(Config, <<"/echo-path">>, #{suites => [Code]}),
         ?assertMatch(#{status := 200, body := <<"/echo-path">>, alpn := <<"h3">>, suite := Suite}, R)
     end || {Code, Suite} <- [{16#1301, aes_128_gcm_sha256}, {16#1302, aes_256_gcm_sha384},
                              {16#1303, chacha20_poly1305_sha256}]].

%% Bodies from empty to 200 KB: STREAM frames over many packets, the
%% HTTP/3 DATA frames read in pieces.
get_sizes(Config) ->
    [begin
         {ok, #{status := 200, body := Body}} = get(Config, <<"/size/", (integer_to_binary(N))/binary>>,
                                                   #{timeout => 10000}),
         ?assertEqual(N, byte_size(Body)),
         ?assertEqual(binary:part(binary:copy(<<"0123456789">>, N div 10 + 1), 0, N), Body)
     end || N <- [0, 1, 1199, 5000, 65536, 200000]].

%% Ten connections one after the other, each with fresh connection IDs.
connections_in_a_row(Config) ->
    [{ok, #{status := 200}} = get(Config, <<"/echo-path">>, #{}) || _ <- lists:seq(1, 10)].

%% A response status other than 200, and its fields through QPACK.
not_found(Config) ->
    {ok, #{status := 404, headers := Fields, body := <<"not found">>}} = get(Config, <<"/nope">>, #{}),
    ?assertEqual(<<"9">>, proplists:get_value(<<"content-length">>, Fields)).
