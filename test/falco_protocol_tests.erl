%% EUnit tests for falco_protocol (the protocol decision table, preface
%% detection, the h2c upgrade request) and falco_transport's TLS options.
-module(falco_protocol_tests).

-include_lib("eunit/include/eunit.hrl").

-define(P, falco_protocol).

%% Every row of the table in falco_protocol's documentation.
select_test_() ->
    Both = [http1, h2],
    [?_assertEqual(h2, ?P:select(tls, {alpn, <<"h2">>}, Both)),
     ?_assertEqual(close, ?P:select(tls, {alpn, <<"h2">>}, [http1])),
     ?_assertEqual(http1, ?P:select(tls, {alpn, <<"http/1.1">>}, Both)),
     ?_assertEqual(close, ?P:select(tls, {alpn, <<"http/1.1">>}, [h2])),
     ?_assertEqual(http1, ?P:select(tls, {alpn, undefined}, Both)),
     ?_assertEqual(close, ?P:select(tls, {alpn, undefined}, [h2])),
     ?_assertEqual(close, ?P:select(tls, {alpn, <<"spdy/3">>}, Both)),
     ?_assertEqual(detect, ?P:select(tcp, connect, Both)),
     ?_assertEqual(http1, ?P:select(tcp, connect, [http1])),
     ?_assertEqual(h2, ?P:select(tcp, connect, [h2])),
     ?_assertEqual(h2, ?P:select(tcp, preface, Both)),
     ?_assertEqual(http1, ?P:select(tcp, preface, [http1])),
     ?_assertEqual(http1, ?P:select(tcp, no_preface, Both)),
     ?_assertEqual(close, ?P:select(tcp, no_preface, [h2])),
     ?_assertEqual(h2c_upgrade, ?P:select(tcp, h2c_upgrade, Both)),
     ?_assertEqual(http1, ?P:select(tcp, h2c_upgrade, [http1]))].

client_preface_test() ->
    ?assertEqual(<<"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n">>, ?P:client_preface()).

preface_test_() ->
    P = falco_protocol:client_preface(),
    [?_assertEqual(more, ?P:preface(<<>>)),
     ?_assertEqual(more, ?P:preface(<<"PRI * HT">>)),
     ?_assertEqual(preface, ?P:preface(P)),
     ?_assertEqual(preface, ?P:preface(<<P/binary, "more">>)),
     ?_assertEqual(no_preface, ?P:preface(<<"POST / HTTP/1.1\r\n">>)),
     ?_assertEqual(no_preface, ?P:preface(<<"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n">>)),
     ?_assertEqual(no_preface, ?P:preface(<<"G">>))].

upgrade_req(Headers) ->
    #{version => {1, 1}, body => none, headers => Headers}.

%% "AAMAAABkAAQAAP__": max_concurrent_streams 100, initial_window_size 65535
h2c_settings_test_() ->
    Good = [{<<"host">>, <<"a">>}, {<<"connection">>, <<"Upgrade, HTTP2-Settings">>},
            {<<"upgrade">>, <<"h2c">>}, {<<"http2-settings">>, <<"AAMAAABkAAQAAP__">>}],
    [?_assertEqual({ok, #{max_concurrent_streams => 100, initial_window_size => 65535}},
                   ?P:h2c_settings(upgrade_req(Good))),
     ?_assertEqual({ok, #{}},
                   ?P:h2c_settings(upgrade_req(lists:keystore(<<"http2-settings">>, 1, Good,
                                                              {<<"http2-settings">>, <<>>})))),
     ?_assertEqual({ok, #{enable_push => false}},
                   ?P:h2c_settings(upgrade_req(lists:keystore(<<"http2-settings">>, 1, Good,
                                                              {<<"http2-settings">>, <<"AAIAAAAA">>})))),
     ?_assertMatch({ok, _}, ?P:h2c_settings((upgrade_req(Good))#{body => {length, 0}})),
     ?_assertEqual(no, ?P:h2c_settings((upgrade_req(Good))#{body => {length, 3}})),
     ?_assertEqual(no, ?P:h2c_settings((upgrade_req(Good))#{body => chunked})),
     ?_assertEqual(no, ?P:h2c_settings((upgrade_req(Good))#{version => {1, 0}})),
     ?_assertEqual(no, ?P:h2c_settings(upgrade_req(lists:keydelete(<<"upgrade">>, 1, Good)))),
     ?_assertEqual(no, ?P:h2c_settings(upgrade_req(lists:keystore(<<"connection">>, 1, Good,
                                                                  {<<"connection">>, <<"upgrade">>})))),
     ?_assertEqual(no, ?P:h2c_settings(upgrade_req(lists:keydelete(<<"http2-settings">>, 1, Good)))),
     ?_assertEqual(no, ?P:h2c_settings(upgrade_req(Good ++ [{<<"http2-settings">>, <<>>}]))),
     ?_assertEqual(no, ?P:h2c_settings(upgrade_req(lists:keystore(<<"http2-settings">>, 1, Good,
                                                                  {<<"http2-settings">>, <<"!!">>})))),
     ?_assertEqual(no, ?P:h2c_settings(upgrade_req(lists:keystore(<<"http2-settings">>, 1, Good,
                                                                  {<<"http2-settings">>, <<"AAMAAA">>})))),
     ?_assertEqual(no, ?P:h2c_settings(upgrade_req(lists:keystore(<<"http2-settings">>, 1, Good,
                                                                  {<<"http2-settings">>, <<"AAMAA">>})))),
     ?_assertEqual(no, ?P:h2c_settings(#{}))].

%% falco_transport: modern TLS defaults, ALPN from the protocols.
tls_options_test() ->
    {ok, _} = application:ensure_all_started(ssl),
    Opts = falco_transport:tls_options([{certfile, "c"}, {keyfile, "k"}, {honor_cipher_order, false}],
                                       [http1, h2], 1000),
    ?assertEqual(['tlsv1.3', 'tlsv1.2'], proplists:get_value(versions, Opts)),
    ?assertEqual(false, proplists:get_value(honor_cipher_order, Opts)),
    ?assertEqual(false, proplists:get_value(client_renegotiation, Opts)),
    ?assertEqual([<<"h2">>, <<"http/1.1">>], proplists:get_value(alpn_preferred_protocols, Opts)),
    ?assertEqual([<<"http/1.1">>], falco_transport:alpn_ids([http1])),
    Ciphers = falco_transport:default_ciphers(),
    ?assert(Ciphers =/= []),
    ?assert(lists:all(fun(#{mac := Mac, key_exchange := KE, cipher := C}) ->
                              Mac =:= aead andalso lists:member(KE, [any, ecdhe_ecdsa, ecdhe_rsa])
                                  andalso C =/= aes_128_ccm_8 andalso C =/= aes_256_ccm_8
                      end, Ciphers)),
    ?assertMatch(#{key_exchange := any}, hd(Ciphers)),
    %% TLS 1.3 only: no TLS-1.2-only defaults (OTP's ssl refuses them) and
    %% only TLS 1.3 suites; TLS 1.2 only: no TLS 1.3 suites.
    Only13 = falco_transport:tls_options([{certfile, "c"}, {keyfile, "k"},
                                          {versions, ['tlsv1.3']}], [h2], infinity),
    ?assertEqual([], [K || {K, _} <- Only13, lists:member(K, [secure_renegotiate,
                                                                client_renegotiation,
                                                                reuse_sessions])]),
    ?assert(lists:all(fun(#{key_exchange := KE}) -> KE =:= any end,
                      proplists:get_value(ciphers, Only13))),
    ?assertEqual([<<"h2">>], proplists:get_value(alpn_preferred_protocols, Only13)),
    Only12 = falco_transport:tls_options([{versions, ['tlsv1.2']}], [http1], 1000),
    ?assertEqual(true, proplists:get_value(secure_renegotiate, Only12)),
    ?assert(lists:all(fun(#{key_exchange := KE}) -> KE =/= any end,
                      proplists:get_value(ciphers, Only12))),
    ?assertEqual(false, lists:keymember(ciphers, 1,
                                        falco_transport:tls_options([{versions, ['tlsv1.1']}], [http1], 1000))),
    %% ssl's own processes hibernate as the listener's do, unless tls_opts
    %% says otherwise.
    ?assertEqual(1000, proplists:get_value(hibernate_after, Opts)),
    ?assertEqual(infinity, proplists:get_value(hibernate_after, Only13)),
    ?assertEqual([{hibernate_after, 50}],
                 [O || O = {hibernate_after, _} <- falco_transport:tls_options(
                                                     [{hibernate_after, 50}], [http1], 1000)]),
    ?assertEqual({tcp, tcp_closed, tcp_error, tcp_passive}, falco_transport:messages(gen_tcp)),
    ?assertEqual({ssl, ssl_closed, ssl_error, ssl_passive}, falco_transport:messages(ssl)).

peername_test() ->
    {ok, L} = gen_tcp:listen(0, [binary, {active, false}, {ip, {127, 0, 0, 1}}]),
    {ok, Port} = inet:port(L),
    {ok, S} = gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {active, false}]),
    ?assertEqual({{127, 0, 0, 1}, Port}, falco_transport:peername(gen_tcp, S)),
    ok = falco_transport:setopts(gen_tcp, S, [{active, once}]),
    ok = gen_tcp:close(S),
    ?assertEqual(undefined, falco_transport:peername(gen_tcp, S)),
    ok = gen_tcp:close(L).
