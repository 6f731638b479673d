%% Test helper: server TLS options with a fresh ECDSA P-256 test
%% certificate chain (public_key:pkix_test_data/1), for the suites that
%% start TLS listeners. Clients in the tests connect with verify_none.
-module(falco_test_tls).

-export([server_opts/0]).

%% @doc Certificate and key options for a TLS listener's `tls_opts'.
-spec server_opts() -> [ssl:tls_server_option()].
server_opts() ->
    Key = [{key, {namedCurve, secp256r1}}, {digest, sha256}],
    Chain = #{root => Key, intermediates => [], peer => Key},
    Data = public_key:pkix_test_data(#{server_chain => Chain, client_chain => Chain}),
    [{K, V} || {K, V} <- maps:get(server_config, Data), K =/= cacerts].
