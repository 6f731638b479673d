%% EUnit tests for falco_http2_request: RFC 9113 §8.2, §8.3 request rules,
%% the request map's shape (the same as HTTP/1.1's), trailers, and the
%% response fields HTTP/2 never sends.
-module(falco_http2_request_tests).

-include_lib("eunit/include/eunit.hrl").

-define(R, falco_http2_request).

base() ->
    [{<<":method">>, <<"GET">>}, {<<":scheme">>, <<"https">>}, {<<":path">>, <<"/a/b?x=1&y">>},
     {<<":authority">>, <<"Example.COM:8443">>}].

req(Fields) -> req(Fields, true).

req(Fields, EndStream) ->
    ?R:request(Fields, #{max_header_count => 100, end_stream => EndStream}).

malformed(Fields) ->
    {error, {malformed, Why}} = req(Fields),
    Why.

request_map_test() ->
    {ok, Req} = req(base() ++ [{<<"accept">>, <<"*/*">>}, {<<"x-a">>, <<"1">>}]),
    ?assertEqual(#{method => <<"GET">>, target => <<"/a/b?x=1&y">>, path => <<"/a/b">>,
                   qs => <<"x=1&y">>, version => {2, 0},
                   headers => [{<<"host">>, <<"Example.COM:8443">>}, {<<"accept">>, <<"*/*">>},
                               {<<"x-a">>, <<"1">>}],
                   host => <<"example.com">>, port => 8443, body => none, keep_alive => true,
                   expect_continue => false}, Req).

%% HTTP/3 (RFC 9114 §4.3) shares these rules; its requests say {3, 0}.
version_test() ->
    {ok, Req} = ?R:request(base(), #{max_header_count => 100, end_stream => true,
                                      version => {3, 0}}),
    {ok, Req2} = req(base()),
    ?assertEqual(Req2#{version := {3, 0}}, Req).

body_framing_test_() ->
    Post = [{<<":method">>, <<"POST">>}, {<<":scheme">>, <<"http">>}, {<<":path">>, <<"/">>},
            {<<":authority">>, <<"h">>}],
    [?_assertMatch({ok, #{body := chunked}}, req(Post, false)),
     ?_assertMatch({ok, #{body := {length, 5}}}, req(Post ++ [{<<"content-length">>, <<"5">>}], false)),
     ?_assertMatch({ok, #{body := {length, 0}}}, req(Post ++ [{<<"content-length">>, <<"0">>}], true)),
     ?_assertMatch({ok, #{body := {length, 5}}},
                   req(Post ++ [{<<"content-length">>, <<"5">>}, {<<"content-length">>, <<"5">>}], false)),
     ?_assertEqual({error, {malformed, content_length_mismatch}},
                   req(Post ++ [{<<"content-length">>, <<"5">>}], true)),
     ?_assertEqual({error, {malformed, conflicting_content_length}},
                   req(Post ++ [{<<"content-length">>, <<"5">>}, {<<"content-length">>, <<"6">>}], false)),
     ?_assertEqual({error, {malformed, bad_content_length}},
                   req(Post ++ [{<<"content-length">>, <<"5x">>}], false)),
     ?_assertEqual({error, {malformed, bad_content_length}},
                   req(Post ++ [{<<"content-length">>, <<>>}], false)),
     ?_assertEqual({error, {malformed, bad_content_length}},
                   req(Post ++ [{<<"content-length">>, binary:copy(<<"x">>, 16)}], false)),
     %% One fault, one status on both protocols (falco_grammar:length_value/1):
     %% too large to represent is 400, leading zeros are taken however many.
     ?_assertEqual({error, {reply, {bad_request, length_overflow}}},
                   req(Post ++ [{<<"content-length">>, binary:copy(<<"9">>, 16)}], false)),
     ?_assertMatch({ok, #{body := {length, 5}}},
                   req(Post ++ [{<<"content-length">>, <<(binary:copy(<<"0">>, 30))/binary, "5">>}],
                       false))].

%% RFC 9110 §10.1.1, the same rule as over HTTP/1.1 (falco_grammar:expect/1):
%% 100-continue, in any case, repeated in a list or over several fields,
%% asks for a 100 when content is to come; any other expectation is 417.
expect_test_() ->
    Post = [{<<":method">>, <<"POST">>}, {<<":scheme">>, <<"http">>}, {<<":path">>, <<"/">>},
            {<<":authority">>, <<"h">>}],
    E = fun(V) -> {<<"expect">>, V} end,
    [?_assertMatch({ok, #{expect_continue := true}}, req(Post ++ [E(<<"100-continue">>)], false)),
     ?_assertMatch({ok, #{expect_continue := true}},
                   req(Post ++ [E(<<"100-continue, 100-continue">>), E(<<"100-Continue">>)], false)),
     ?_assertMatch({ok, #{expect_continue := false}}, req(Post, false)),
     ?_assertMatch({ok, #{expect_continue := false}}, req(Post ++ [E(<<",,">>)], false)),
     %% no content to come: no 100
     ?_assertMatch({ok, #{expect_continue := false}}, req(Post ++ [E(<<"100-continue">>)], true)),
     ?_assertMatch({ok, #{expect_continue := false}},
                   req(Post ++ [E(<<"100-continue">>), {<<"content-length">>, <<"0">>}], false)),
     ?_assertEqual({error, {reply, expectation_failed}}, req(Post ++ [E(<<"200-ok">>)], false)),
     ?_assertEqual({error, {reply, expectation_failed}},
                   req(Post ++ [E(<<"100-continue">>), E(<<"tea">>)], false)),
     %% the field still reaches the handler
     ?_assertMatch({ok, #{headers := [{<<"host">>, _}, {<<"expect">>, <<"100-continue">>}]}},
                   req(Post ++ [E(<<"100-continue">>)], false))].

%% §8.2.3: cookie crumbs are joined with "; " where the first one was.
cookies_test() ->
    {ok, #{headers := H}} = req(base() ++ [{<<"cookie">>, <<"a=1">>}, {<<"x">>, <<"y">>},
                                           {<<"cookie">>, <<"b=2">>}, {<<"cookie">>, <<"c=3">>}]),
    ?assertEqual([{<<"host">>, <<"Example.COM:8443">>}, {<<"cookie">>, <<"a=1; b=2; c=3">>},
                  {<<"x">>, <<"y">>}], H),
    {ok, #{headers := H1}} = req(base() ++ [{<<"cookie">>, <<"only=1">>}]),
    ?assertEqual([{<<"host">>, <<"Example.COM:8443">>}, {<<"cookie">>, <<"only=1">>}], H1).

host_test_() ->
    NoAuth = [{<<":method">>, <<"GET">>}, {<<":scheme">>, <<"http">>}, {<<":path">>, <<"/">>}],
    [?_assertMatch({ok, #{host := <<"h.example">>, port := undefined,
                          headers := [{<<"host">>, <<"h.example">>}]}},
                   req(NoAuth ++ [{<<"host">>, <<"h.example">>}])),
     ?_assertMatch({ok, #{host := <<>>, port := undefined, headers := []}}, req(NoAuth)),
     ?_assertMatch({ok, #{host := <<"[::1]">>, port := 80}},
                   req(NoAuth ++ [{<<":authority">>, <<"[::1]:80">>}])),
     ?_assertMatch({ok, #{host := <<"a">>, port := undefined}},
                   req(NoAuth ++ [{<<":authority">>, <<"a:">>}])),
     ?_assertMatch({ok, #{headers := [{<<"host">>, <<"a">>}]}},
                   req(NoAuth ++ [{<<":authority">>, <<"a">>}, {<<"host">>, <<"a">>}])),
     ?_assertEqual({error, {malformed, authority_host_mismatch}},
                   req(NoAuth ++ [{<<":authority">>, <<"a">>}, {<<"host">>, <<"b">>}])),
     ?_assertEqual({error, {malformed, authority_userinfo}},
                   req(NoAuth ++ [{<<":authority">>, <<"u@a">>}])),
     %% RFC 9113 §8.3.1, RFC 9110 §4.2.3: compared after normalisation.
     ?_assertMatch({ok, #{host := <<"a.example">>, port := undefined}},
                   req(NoAuth ++ [{<<":authority">>, <<"A.Example">>},
                                  {<<"host">>, <<"a.EXAMPLE">>}])),
     ?_assertMatch({ok, #{host := <<"a">>, port := 80}},
                   req(NoAuth ++ [{<<":authority">>, <<"a:80">>}, {<<"host">>, <<"A">>}])),
     ?_assertMatch({ok, #{host := <<"a">>, port := undefined}},
                   req(NoAuth ++ [{<<":authority">>, <<"a:">>}, {<<"host">>, <<"a:80">>}])),
     ?_assertMatch({ok, #{host := <<"[::1]">>, port := 8080}},
                   req(NoAuth ++ [{<<":authority">>, <<"[::1]:8080">>},
                                  {<<"host">>, <<"[::1]:8080">>}])),
     ?_assertEqual({error, {malformed, authority_host_mismatch}},
                   req(NoAuth ++ [{<<":authority">>, <<"a:443">>}, {<<"host">>, <<"a">>}])),
     ?_assertEqual({error, {malformed, authority_host_mismatch}},
                   req(NoAuth ++ [{<<":authority">>, <<"a:8080">>}, {<<"host">>, <<"a:80">>}])),
     ?_assertMatch({ok, #{host := <<"a">>, port := 443}},
                   req([{<<":method">>, <<"GET">>}, {<<":scheme">>, <<"https">>},
                        {<<":path">>, <<"/">>}, {<<":authority">>, <<"a:443">>},
                        {<<"host">>, <<"a">>}])),
     ?_assertEqual({error, {reply, {bad_request, invalid_host}}},
                   req(NoAuth ++ [{<<":authority">>, <<"a">>}, {<<"host">>, <<"a b">>}])),
     ?_assertEqual({error, {malformed, duplicate_host}},
                   req(NoAuth ++ [{<<"host">>, <<"a">>}, {<<"host">>, <<"a">>}]))] ++
    [?_assertEqual({error, {reply, {bad_request, invalid_host}}},
                   req(NoAuth ++ [{<<":authority">>, A}]))
     || A <- [<<"a b">>, <<"a:99999">>, <<"a:x">>, <<":80">>, <<"[::1">>, <<"[]">>, <<"[z]">>,
              <<"[::1]x">>, <<"a:123456">>]].

%% §8.3.1
pseudo_fields_test_() ->
    B = base(),
    [?_assertEqual(missing_method, malformed(tl(B))),
     ?_assertEqual(missing_scheme, malformed(lists:keydelete(<<":scheme">>, 1, B))),
     ?_assertEqual(missing_path, malformed(lists:keydelete(<<":path">>, 1, B))),
     ?_assertEqual(bad_path, malformed(lists:keystore(<<":path">>, 1, B, {<<":path">>, <<>>}))),
     ?_assertEqual(bad_path, malformed(lists:keystore(<<":path">>, 1, B, {<<":path">>, <<"a">>}))),
     ?_assertEqual(bad_path, malformed(lists:keystore(<<":path">>, 1, B, {<<":path">>, <<"*">>}))),
     ?_assertEqual(bad_path, malformed(lists:keystore(<<":path">>, 1, B, {<<":path">>, <<"/a b">>}))),
     ?_assertEqual(bad_path, malformed(lists:keystore(<<":path">>, 1, B, {<<":path">>, <<"/%zz">>}))),
     ?_assertMatch({ok, #{path := <<"/a%20b">>, qs := <<"q?r">>}},
                   req(lists:keystore(<<":path">>, 1, B, {<<":path">>, <<"/a%20b?q?r">>}))),
     ?_assertMatch({ok, #{path := <<"*">>, target := <<"*">>}},
                   req([{<<":method">>, <<"OPTIONS">>}, {<<":scheme">>, <<"http">>},
                        {<<":path">>, <<"*">>}])),
     ?_assertEqual(bad_method, malformed([{<<":method">>, <<"G T">>} | tl(B)])),
     ?_assertEqual(bad_method, malformed([{<<":method">>, <<>>} | tl(B)])),
     ?_assertEqual(bad_scheme, malformed(lists:keystore(<<":scheme">>, 1, B, {<<":scheme">>, <<"1x">>}))),
     ?_assertEqual(bad_scheme, malformed(lists:keystore(<<":scheme">>, 1, B, {<<":scheme">>, <<"h t">>}))),
     ?_assertMatch({ok, _}, req(lists:keystore(<<":scheme">>, 1, B, {<<":scheme">>, <<"x-y.z+1">>}))),
     ?_assertEqual(duplicate_pseudo_header, malformed(B ++ [{<<":method">>, <<"GET">>}])),
     ?_assertEqual(duplicate_pseudo_header, malformed(B ++ [{<<":path">>, <<"/">>}])),
     ?_assertEqual(duplicate_pseudo_header, malformed(B ++ [{<<":scheme">>, <<"http">>}])),
     ?_assertEqual(duplicate_pseudo_header, malformed(B ++ [{<<":authority">>, <<"a">>}])),
     ?_assertEqual(response_pseudo_header, malformed(B ++ [{<<":status">>, <<"200">>}])),
     ?_assertEqual(unknown_pseudo_header, malformed(B ++ [{<<":foo">>, <<"x">>}])),
     ?_assertEqual(pseudo_header_after_regular,
                   malformed([{<<"x">>, <<"y">>} | B])),
     ?_assertEqual(pseudo_header_after_regular,
                   malformed(tl(B) ++ [{<<"x">>, <<"y">>}, hd(B)])),
     ?_assertEqual(unexpected_protocol, malformed(B ++ [{<<":protocol">>, <<"websocket">>}])),
     ?_assertEqual({error, {reply, {not_implemented, connect}}},
                   req([{<<":method">>, <<"CONNECT">>}, {<<":authority">>, <<"a:443">>}])),
     ?_assertEqual(bad_connect, malformed([{<<":method">>, <<"CONNECT">>}])),
     ?_assertEqual(bad_connect, malformed([{<<":method">>, <<"CONNECT">>},
                                           {<<":authority">>, <<"a:443">>}, {<<":path">>, <<"/">>}]))].

%% RFC 8441 §4: the extended CONNECT, once we sent
%% SETTINGS_ENABLE_CONNECT_PROTOCOL (`connect_protocol').
extended_connect_test_() ->
    Ext = fun(Fields) -> ?R:request(Fields, #{max_header_count => 100, end_stream => false,
                                              connect_protocol => true}) end,
    Connect = [{<<":method">>, <<"CONNECT">>}, {<<":protocol">>, <<"websocket">>},
               {<<":scheme">>, <<"https">>}, {<<":path">>, <<"/chat?room=1">>},
               {<<":authority">>, <<"example.com">>}, {<<"sec-websocket-version">>, <<"13">>}],
    [%% routed and handled as the GET of an HTTP/1.1 handshake, the protocol recorded
     ?_assertMatch({ok, #{method := <<"GET">>, protocol := <<"websocket">>, path := <<"/chat">>,
                          qs := <<"room=1">>, version := {2, 0}, host := <<"example.com">>,
                          body := chunked}},
                   Ext(Connect)),
     %% another protocol is not served
     ?_assertEqual({error, {reply, {not_implemented, connect_protocol}}},
                   Ext(lists:keyreplace(<<":protocol">>, 1, Connect,
                                        {<<":protocol">>, <<"connect-udp">>}))),
     %% :protocol only on CONNECT
     ?_assertEqual({error, {malformed, unexpected_protocol}},
                   Ext(lists:keyreplace(<<":method">>, 1, Connect, {<<":method">>, <<"GET">>}))),
     %% :scheme and :path are required
     ?_assertEqual({error, {malformed, bad_connect}},
                   Ext(lists:keydelete(<<":path">>, 1, Connect))),
     ?_assertEqual({error, {malformed, bad_connect}},
                   Ext(lists:keydelete(<<":scheme">>, 1, Connect))),
     %% the usual rules still hold
     ?_assertEqual({error, {malformed, bad_path}},
                   Ext(lists:keyreplace(<<":path">>, 1, Connect, {<<":path">>, <<"chat">>}))),
     %% without our setting, as before RFC 8441
     ?_assertEqual({error, {malformed, unexpected_protocol}},
                   ?R:request(Connect, #{max_header_count => 100, end_stream => false,
                                         connect_protocol => false})),
     %% a plain CONNECT is still 501
     ?_assertEqual({error, {reply, {not_implemented, connect}}},
                   Ext([{<<":method">>, <<"CONNECT">>}, {<<":authority">>, <<"a:443">>}]))].

%% §8.2.1, §8.2.2
fields_test_() ->
    B = base(),
    [?_assertEqual(bad_header_name, malformed(B ++ [{<<"X-Upper">>, <<"v">>}])),
     ?_assertEqual(bad_header_name, malformed(B ++ [{<<"a b">>, <<"v">>}])),
     ?_assertEqual(bad_header_name, malformed(B ++ [{<<"a:b">>, <<"v">>}])),
     ?_assertEqual(bad_header_name, malformed(B ++ [{<<>>, <<"v">>}])),
     ?_assertEqual(bad_header_value, malformed(B ++ [{<<"x">>, <<"a\r\nb">>}])),
     ?_assertEqual(bad_header_value, malformed(B ++ [{<<"x">>, <<"a", 0, "b">>}])),
     ?_assertEqual(bad_header_value, malformed(B ++ [{<<"x">>, <<"a", 127>>}])),
     ?_assertEqual(bad_header_value, malformed(B ++ [{<<"x">>, <<" a">>}])),
     ?_assertEqual(bad_header_value, malformed(B ++ [{<<"x">>, <<"a\t">>}])),
     ?_assertMatch({ok, _}, req(B ++ [{<<"x">>, <<"a\tb \xff">>}, {<<"y">>, <<>>}])),
     ?_assertEqual(bad_te, malformed(B ++ [{<<"te">>, <<"gzip">>}])),
     ?_assertMatch({ok, #{headers := [_, {<<"te">>, <<"Trailers">>}]}},
                   req(B ++ [{<<"te">>, <<"Trailers">>}]))] ++
    [?_assertEqual(connection_specific_header, malformed(B ++ [{N, <<"x">>}]))
     || N <- [<<"connection">>, <<"keep-alive">>, <<"proxy-connection">>,
              <<"transfer-encoding">>, <<"upgrade">>]].

header_count_test() ->
    Many = [{<<"x-", (integer_to_binary(I))/binary>>, <<"v">>} || I <- lists:seq(1, 5)],
    Opts = #{max_header_count => 4, end_stream => true},
    ?assertEqual({error, {reply, {header_too_large, count}}}, ?R:request(base() ++ Many, Opts)),
    ?assertMatch({ok, _}, ?R:request(base() ++ tl(Many), Opts)).

trailers_test_() ->
    [?_assertEqual(ok, ?R:trailers([{<<"x-sum">>, <<"1">>}, {<<"y">>, <<>>}])),
     ?_assertEqual(ok, ?R:trailers([])),
     ?_assertEqual({error, {malformed, pseudo_header_in_trailers}},
                   ?R:trailers([{<<":path">>, <<"/">>}])),
     ?_assertEqual({error, {malformed, bad_header_name}}, ?R:trailers([{<<"X">>, <<"1">>}])),
     ?_assertEqual({error, {malformed, bad_header_value}}, ?R:trailers([{<<"x">>, <<"\n">>}])),
     ?_assertEqual({error, {malformed, connection_specific_header}},
                   ?R:trailers([{<<"transfer-encoding">>, <<"chunked">>}])),
     %% the one rule of requests (falco_grammar): TE is "trailers" or malformed
     ?_assertEqual({error, {malformed, bad_te}}, ?R:trailers([{<<"te">>, <<"gzip">>}])),
     ?_assertEqual(ok, ?R:trailers([{<<"te">>, <<"trailers">>}])),
     ?_assertEqual({error, {malformed, bad_header_value}}, ?R:trailers([{<<"x">>, <<"a ">>}]))].

%% §8.2.2: connection-specific fields never go out on HTTP/2.
response_fields_test() ->
    ?assertEqual([{<<"content-type">>, <<"text/plain">>}, {<<"x-a">>, <<"bc">>}],
                 ?R:response_fields([{<<"connection">>, <<"close">>},
                                     {<<"content-type">>, <<"text/plain">>},
                                     {<<"keep-alive">>, <<"timeout=5">>},
                                     {<<"proxy-connection">>, <<"x">>},
                                     {<<"transfer-encoding">>, <<"chunked">>},
                                     {<<"upgrade">>, <<"h2c">>},
                                     {<<"te">>, [<<"gz">>, "ip"]},
                                     {<<"x-a">>, [<<"b">>, "c"]}])),
    ?assertEqual([{<<"te">>, <<"trailers">>}], ?R:response_fields([{<<"te">>, [<<"trailers">>]}])).
