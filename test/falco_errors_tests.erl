%% Unit tests for falco_errors' handler-level replies: the reasons the
%% router, static files, compression, conditional requests and ranges
%% answer with, their statuses (RFC 9110 §15.5), the fields each status
%% needs and the body. (The statuses of the protocol errors are tested in
%% falco_opts_tests.)
-module(falco_errors_tests).
-include_lib("eunit/include/eunit.hrl").

-define(E, falco_errors).
-define(TEXT, {<<"content-type">>, <<"text/plain">>}).

statuses_test_() ->
    [?_assertEqual(S, ?E:status(R))
     || {R, S} <- [{not_found, 404}, {{method_not_allowed, [<<"GET">>]}, 405},
                   {{coding_not_acceptable, [<<"identity">>]}, 406},
                   {precondition_failed, 412}, {{unsupported_content_coding, []}, 415},
                   {{range_not_satisfiable, 10}, 416}]].

%% Every reply is text/plain, its body the status phrase; the extra fields
%% come first.
response_test_() ->
    [?_assertEqual({404, [?TEXT], <<"Not Found\n">>}, ?E:response(not_found)),
     ?_assertEqual({400, [?TEXT], <<"Bad Request\n">>}, ?E:response({bad_request, bad_path})),
     ?_assertEqual({412, [?TEXT], <<"Precondition Failed\n">>}, ?E:response(precondition_failed)),
     ?_assertEqual({500, [?TEXT], <<"Internal Server Error\n">>}, ?E:response(internal_error))].

%% RFC 9110 §15.5.6: a 405 lists the methods the target supports.
method_not_allowed_test() ->
    ?assertEqual({405, [{<<"allow">>, <<"GET, HEAD">>}, ?TEXT], <<"Method Not Allowed\n">>},
                 ?E:response({method_not_allowed, [<<"GET">>, <<"HEAD">>]})).

%% RFC 9110 §15.5.7: a 406 should list what is available; the answer
%% varies with Accept-Encoding (§12.5.5).
coding_not_acceptable_test() ->
    ?assertEqual({406, [{<<"vary">>, <<"accept-encoding">>}, ?TEXT],
                  <<"Not Acceptable: this resource is available as identity, gzip\n">>},
                 ?E:response({coding_not_acceptable, [<<"identity">>, <<"gzip">>]})).

%% RFC 9110 §15.5.16: a 415 caused by a content coding says which codings
%% would have been accepted.
unsupported_content_coding_test() ->
    ?assertEqual({415, [{<<"accept-encoding">>, <<"gzip, deflate">>}, ?TEXT],
                  <<"Unsupported Media Type\n">>},
                 ?E:response({unsupported_content_coding, [<<"gzip">>, <<"deflate">>]})).

%% RFC 9110 §15.5.17: a 416 gives the representation's current length.
range_not_satisfiable_test() ->
    ?assertEqual({416, [{<<"content-range">>, <<"bytes */1234">>}, ?TEXT],
                  <<"Range Not Satisfiable\n">>},
                 ?E:response({range_not_satisfiable, 1234})).

%% A refused WebSocket handshake (falco_ws_handshake), the same reason over
%% HTTP/1.1 and HTTP/2: RFC 9110 §15.5.22's 426 with Upgrade for a request
%% that does not ask for WebSocket, RFC 6455 §4.4's 426 for another
%% version, 400 for a malformed handshake (§4.2.1); each names version 13
%% (§4.4) and says in words what was wrong.
websocket_handshake_test_() ->
    V13 = {<<"sec-websocket-version">>, <<"13">>},
    R = fun(Why) -> ?E:response({websocket_handshake, Why}) end,
    [?_assertMatch({426, [{<<"upgrade">>, <<"websocket">>}, {<<"connection">>, <<"upgrade">>},
                          V13, ?TEXT],
                    <<"This resource is a WebSocket endpoint", _/binary>>},
                   R(not_a_websocket_request)),
     ?_assertMatch({426, [V13, ?TEXT], <<"WebSocket handshake refused: only Sec-WebSocket-Version 13",
                                         _/binary>>},
                   R(unsupported_version)),
     ?_assertMatch({400, [V13, ?TEXT], <<"WebSocket handshake refused: Sec-WebSocket-Key", _/binary>>},
                   R(bad_key)),
     ?_assertMatch({400, [V13, ?TEXT], <<"WebSocket handshake refused: the opening handshake must be a GET",
                                         _/binary>>},
                   R(method_not_get)),
     ?_assertMatch({400, [V13, ?TEXT], <<"WebSocket handshake refused: the opening handshake needs HTTP/1.1",
                                         _/binary>>},
                   R(http_1_0))].
