%% EUnit: the opening handshake (falco_ws_handshake), RFC 6455 §4.2 over
%% HTTP/1.1 and RFC 8441 over HTTP/2, with the §1.3 example key.
-module(falco_ws_handshake_tests).

-include_lib("eunit/include/eunit.hrl").

-define(KEY, <<"dGhlIHNhbXBsZSBub25jZQ==">>).

req(Headers) -> req(<<"GET">>, {1, 1}, Headers).
req(Method, Version, Headers) ->
    #{method => Method, version => Version, headers => Headers}.

ok_headers() ->
    [{<<"host">>, <<"example.com">>}, {<<"upgrade">>, <<"websocket">>},
     {<<"connection">>, <<"Upgrade">>}, {<<"sec-websocket-key">>, ?KEY},
     {<<"sec-websocket-version">>, <<"13">>}].

accept(Req) -> falco_ws_handshake:accept(Req, #{}).

%% RFC 6455 §1.3
accept_key_test() ->
    ?assertEqual(<<"s3pPLMBiTxaQ9kYGzzhZRbK+xOo=">>, falco_ws_handshake:accept_key(?KEY)).

ok_test_() ->
    [?_assertEqual({ok, 101, [{<<"upgrade">>, <<"websocket">>}, {<<"connection">>, <<"Upgrade">>},
                              {<<"sec-websocket-accept">>, <<"s3pPLMBiTxaQ9kYGzzhZRbK+xOo=">>}],
                    #{protocol => undefined, deflate => undefined}},
                   accept(req(ok_headers()))),
     %% tokens are case-insensitive and may share the field with others
     ?_assertMatch({ok, 101, _, _},
                   accept(req(lists:keyreplace(<<"connection">>, 1, ok_headers(),
                                               {<<"connection">>, <<"keep-alive, UPGRADE">>})))),
     ?_assertMatch({ok, 101, _, _},
                   accept(req(lists:keyreplace(<<"upgrade">>, 1, ok_headers(),
                                               {<<"upgrade">>, <<"WebSocket">>})))),
     %% RFC 8441: extended CONNECT (a GET with `protocol', as
     %% falco_http2_request presents it), no key, 200
     ?_assertEqual({ok, 200, [], #{protocol => undefined, deflate => undefined}},
                   accept((req(<<"GET">>, {2, 0}, [{<<"sec-websocket-version">>, <<"13">>}]))
                          #{protocol => <<"websocket">>}))].

error_test_() ->
    Without = fun(Name) -> lists:keydelete(Name, 1, ok_headers()) end,
    With = fun(Name, Value) -> lists:keyreplace(Name, 1, ok_headers(), {Name, Value}) end,
    Refused = fun(Why) -> {error, {websocket_handshake, Why}} end,
    [?_assertEqual(Refused(not_a_websocket_request), accept(req(Without(<<"upgrade">>)))),
     ?_assertEqual(Refused(not_a_websocket_request), accept(req(Without(<<"connection">>)))),
     ?_assertEqual(Refused(not_a_websocket_request), accept(req(With(<<"upgrade">>, <<"h2c">>)))),
     ?_assertEqual(Refused(unsupported_version),
                   accept(req(With(<<"sec-websocket-version">>, <<"8">>)))),
     ?_assertEqual(Refused(unsupported_version), accept(req(Without(<<"sec-websocket-version">>)))),
     ?_assertEqual(Refused(unsupported_version),
                   accept(req(ok_headers() ++ [{<<"sec-websocket-version">>, <<"13">>}]))),
     ?_assertEqual(Refused(bad_key), accept(req(Without(<<"sec-websocket-key">>)))),
     ?_assertEqual(Refused(bad_key), accept(req(With(<<"sec-websocket-key">>, <<"abc">>)))),
     ?_assertEqual(Refused(bad_key),
                   accept(req(With(<<"sec-websocket-key">>, <<"dGhlIHNhbXBsZSBub25jZQ=!">>)))),
     %% base64 of 17 bytes is 28 characters; of 15, 20: neither is a key
     ?_assertEqual(Refused(bad_key),
                   accept(req(With(<<"sec-websocket-key">>, base64:encode(<<0:120>>))))),
     ?_assertEqual(Refused(bad_key), accept(req(ok_headers() ++ [{<<"sec-websocket-key">>, ?KEY}]))),
     ?_assertEqual(Refused(method_not_get), accept(req(<<"POST">>, {1, 1}, ok_headers()))),
     ?_assertEqual(Refused(http_1_0), accept(req(<<"GET">>, {1, 0}, ok_headers()))),
     %% an HTTP/2 GET that is no extended CONNECT
     ?_assertEqual(Refused(not_a_websocket_request),
                   accept(req(<<"GET">>, {2, 0}, [{<<"sec-websocket-version">>, <<"13">>}]))),
     ?_assertEqual(Refused(unsupported_version),
                   accept((req(<<"GET">>, {2, 0}, []))#{protocol => <<"websocket">>}))].

negotiation_test_() ->
    Req = fun(Extra) -> req(ok_headers() ++ Extra) end,
    Opts = #{protocols => [<<"v2.chat">>, <<"chat">>], compress => true},
    [?_assertMatch({ok, 101, _, #{protocol := <<"v2.chat">>}},
                   falco_ws_handshake:accept(
                     Req([{<<"sec-websocket-protocol">>, <<"chat, v2.chat">>}]), Opts)),
     ?_assertMatch({ok, 101, _, #{protocol := <<"chat">>}},
                   falco_ws_handshake:accept(
                     Req([{<<"sec-websocket-protocol">>, <<"x">>},
                          {<<"sec-websocket-protocol">>, <<"chat">>}]), Opts)),
     ?_assertMatch({ok, 101, _, #{protocol := undefined}},
                   falco_ws_handshake:accept(Req([{<<"sec-websocket-protocol">>, <<"x">>}]), Opts)),
     fun() ->
             {ok, 101, Fields, #{deflate := P}} =
                 falco_ws_handshake:accept(
                   Req([{<<"sec-websocket-extensions">>,
                         <<"permessage-deflate; client_max_window_bits">>}]), Opts),
             ?assertEqual(<<"permessage-deflate; client_max_window_bits=15">>,
                          proplists:get_value(<<"sec-websocket-extensions">>, Fields)),
             ?assertMatch(#{client_bits := 15}, P)
     end,
     %% compression off: the offer is ignored
     ?_assertMatch({ok, 101, [_, _, _], #{deflate := undefined}},
                   falco_ws_handshake:accept(
                     Req([{<<"sec-websocket-extensions">>, <<"permessage-deflate">>}]), #{}))].
