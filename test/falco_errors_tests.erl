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
