%% EUnit tests for falco_cookie: Cookie parsing (RFC 6265 §4.2, §5.4, lenient
%% like §5.2) and the Set-Cookie builder (§4.1, rfc6265bis §4.1.2.7 SameSite
%% and §4.1.3 prefixes, CHIPS Partitioned).
-module(falco_cookie_tests).
-include_lib("eunit/include/eunit.hrl").

set(N, V, O) ->
    falco_cookie:set_cookie(N, V, O).

%% RFC 6265 §4.2.2 and §3.1 examples.
parse_rfc_test_() ->
    [?_assertEqual([{<<"SID">>, <<"31d4d96e407aad42">>}, {<<"lang">>, <<"en-US">>}],
                   falco_cookie:parse(<<"SID=31d4d96e407aad42; lang=en-US">>)),
     ?_assertEqual([{<<"SID">>, <<"31d4d96e407aad42">>}],
                   falco_cookie:parse(<<"SID=31d4d96e407aad42">>))].

parse_lenient_test_() ->
    [?_assertEqual(Out, falco_cookie:parse(In)) || {In, Out} <- [
        {<<>>, []},
        {<<";;; ;">>, []},
        {<<"  a = 1 ;\tb=2\t;">>, [{<<"a">>, <<"1">>}, {<<"b">>, <<"2">>}]},
        %% §4.1.1: quotes around a value are not part of it.
        {<<"a=\"quoted\"; b=\"\"">>, [{<<"a">>, <<"quoted">>}, {<<"b">>, <<>>}]},
        %% An unbalanced quote is kept as sent.
        {<<"a=\"open; b=close\"">>, [{<<"a">>, <<"\"open">>}, {<<"b">>, <<"close\"">>}]},
        {<<"a=\"">>, [{<<"a">>, <<"\"">>}]},
        %% Only the first `=' splits.
        {<<"a=b=c">>, [{<<"a">>, <<"b=c">>}]},
        {<<"a=">>, [{<<"a">>, <<>>}]},
        {<<"=v">>, [{<<>>, <<"v">>}]},
        %% rfc6265bis §5.6: no `=' means an empty name.
        {<<"flag; a=1">>, [{<<>>, <<"flag">>}, {<<"a">>, <<"1">>}]},
        %% Duplicates in order (§5.4: longer paths first).
        {<<"a=1; a=2">>, [{<<"a">>, <<"1">>}, {<<"a">>, <<"2">>}]},
        %% Commas are not separators (RFC 6265 §5.4 uses "; " only).
        {<<"a=1, b=2">>, [{<<"a">>, <<"1, b=2">>}]},
        %% Bytes outside cookie-octet are kept, never crash.
        {<<"n=\x00\xff\x7f">>, [{<<"n">>, <<0, 255, 127>>}]},
        {<<"é=ü"/utf8>>, [{<<"é"/utf8>>, <<"ü"/utf8>>}]}]].

%% RFC 9113 §8.2.3: cookies may be split over several fields.
from_headers_test() ->
    Headers = [{<<"cookie">>, <<"a=1">>}, {<<"host">>, <<"x">>},
               {<<"cookie">>, [<<"b=2; ">>, <<"c=3">>]}],
    ?assertEqual([{<<"a">>, <<"1">>}, {<<"b">>, <<"2">>}, {<<"c">>, <<"3">>}],
                 falco_cookie:from_headers(Headers)),
    ?assertEqual([], falco_cookie:from_headers([])).

%% RFC 6265 §3.1 examples (attributes come out in falco's fixed order).
set_cookie_rfc_test_() ->
    [?_assertEqual({ok, <<"SID=31d4d96e407aad42; Domain=example.com; Path=/">>},
                   set(<<"SID">>, <<"31d4d96e407aad42">>,
                       #{path => <<"/">>, domain => <<"example.com">>})),
     ?_assertEqual({ok, <<"SID=31d4d96e407aad42; Path=/; Secure; HttpOnly">>},
                   set(<<"SID">>, <<"31d4d96e407aad42">>,
                       #{path => <<"/">>, secure => true, http_only => true})),
     ?_assertEqual({ok, <<"lang=en-US; Expires=Wed, 09 Jun 2021 10:18:14 GMT">>},
                   set(<<"lang">>, <<"en-US">>, #{expires => {{2021, 6, 9}, {10, 18, 14}}})),
     ?_assertEqual({ok, <<"lang=; Expires=Sun, 06 Nov 1994 08:49:37 GMT">>},
                   set(<<"lang">>, <<>>, #{expires => {{1994, 11, 6}, {8, 49, 37}}}))].

set_cookie_all_attributes_test() ->
    Opts = #{max_age => 3600, expires => {{2030, 1, 2}, {3, 4, 5}}, domain => <<"a.example">>,
             path => <<"/app">>, secure => true, http_only => true, same_site => none,
             partitioned => true},
    ?assertEqual({ok, <<"id=\"v1\"; Max-Age=3600; Expires=Wed, 02 Jan 2030 03:04:05 GMT; "
                        "Domain=a.example; Path=/app; Secure; HttpOnly; SameSite=None; "
                        "Partitioned">>},
                 set(<<"id">>, <<"\"v1\"">>, Opts)).

set_cookie_flags_test_() ->
    [?_assertEqual({ok, <<"a=b">>}, set(<<"a">>, <<"b">>, #{})),
     ?_assertEqual({ok, <<"a=b">>}, set(<<"a">>, <<"b">>, #{secure => false, http_only => false,
                                                             partitioned => false})),
     ?_assertEqual({ok, <<"a=b; SameSite=Strict">>}, set(<<"a">>, <<"b">>, #{same_site => strict})),
     ?_assertEqual({ok, <<"a=b; SameSite=Lax">>}, set(<<"a">>, <<"b">>, #{same_site => lax})),
     ?_assertEqual({ok, <<"a=b; Max-Age=0">>}, set(<<"a">>, <<"b">>, #{max_age => 0})),
     ?_assertEqual({ok, <<"a=; Path=">>}, set(<<"a">>, <<>>, #{path => <<>>})),
     ?_assertEqual({ok, <<"a=\"\"">>}, set(<<"a">>, <<"\"\"">>, #{})),
     ?_assertEqual({ok, <<"!#$%&'*+-.^_`|~09AZaz=!#$%&'()*+-./09:<=>?@AZ[]^_`az{|}~">>},
                   set(<<"!#$%&'*+-.^_`|~09AZaz">>, <<"!#$%&'()*+-./09:<=>?@AZ[]^_`az{|}~">>,
                       #{}))].

%% Name: token (RFC 9110 §5.6.2); value: cookie-octets (RFC 6265 §4.1.1).
set_cookie_invalid_name_value_test_() ->
    [?_assertEqual({error, invalid_name}, set(N, <<"v">>, #{}))
     || N <- [<<>>, <<"a b">>, <<"a=b">>, <<"a;b">>, <<"a,b">>, <<"(a)">>, <<"a\"">>,
              <<"a\r\nSet-Cookie: x">>, <<"é"/utf8>>, <<"a\tb">>, <<0>>, <<"a/b">>]] ++
    [?_assertEqual({error, invalid_value}, set(<<"n">>, V, #{}))
     || V <- [<<"a b">>, <<"a;b">>, <<"a,b">>, <<"a\\b">>, <<"a\"b">>, <<"\"">>, <<"\"ab">>,
              <<"ab\"">>, <<"\"a b\"">>, <<"\"a\"b\"">>, <<"a\r\nX: y">>, <<0>>, <<127>>,
              <<"é"/utf8>>]].

set_cookie_invalid_attributes_test_() ->
    [?_assertEqual({error, {invalid_attribute, K}}, set(<<"a">>, <<"b">>, #{K => V}))
     || {K, V} <- [{max_age, -1}, {max_age, 1.5}, {max_age, <<"10">>},
                   {expires, {{2021, 2, 29}, {0, 0, 0}}}, {expires, {{1600, 1, 1}, {0, 0, 0}}},
                   {expires, {{10000, 1, 1}, {0, 0, 0}}}, {expires, {{2021, 1, 1}, {24, 0, 0}}},
                   {expires, {{2021, 1, 1}, {0, 60, 0}}}, {expires, {{2021, 1, 1}, {0, 0, 60}}},
                   {expires, {{2021, 13, 1}, {0, 0, 0}}}, {expires, 1700000000},
                   {domain, <<>>}, {domain, <<".example.com">>}, {domain, <<"example.com.">>},
                   {domain, <<"a..b">>}, {domain, <<"ex ample.com">>}, {domain, <<"a.com;x=y">>},
                   {domain, <<"-a.com">>}, {domain, <<"a-.com">>}, {domain, <<"a_b.com">>},
                   {domain, <<(binary:copy(<<"a">>, 64))/binary, ".com">>},
                   {domain, binary:copy(<<"abc.">>, 64)}, {domain, "example.com"},
                   {path, <<"/a;b">>}, {path, <<"/a\r\nX: y">>}, {path, <<"/\x00">>},
                   {path, <<"/é"/utf8>>}, {path, <<"/\x7f">>}, {path, '/'},
                   {secure, yes}, {http_only, 1}, {partitioned, undefined},
                   {same_site, <<"Lax">>}, {same_site, default}]].

set_cookie_valid_domains_test_() ->
    [?_assertMatch({ok, _}, set(<<"a">>, <<"b">>, #{domain => D}))
     || D <- [<<"example.com">>, <<"a">>, <<"xn--bcher-kva.example">>, <<"192.0.2.1">>,
              <<"A-1.EXAMPLE.org">>, <<(binary:copy(<<"a">>, 63))/binary, ".com">>]].

set_cookie_unknown_option_test() ->
    ?assertEqual({error, {unknown_option, httponly}},
                 set(<<"a">>, <<"b">>, #{httponly => true})).

%% rfc6265bis §4.1.2.7 and browsers: SameSite=None only with Secure;
%% CHIPS: Partitioned only with Secure.
set_cookie_secure_rules_test_() ->
    [?_assertEqual({error, same_site_none_requires_secure},
                   set(<<"a">>, <<"b">>, #{same_site => none})),
     ?_assertEqual({error, same_site_none_requires_secure},
                   set(<<"a">>, <<"b">>, #{same_site => none, secure => false})),
     ?_assertEqual({error, partitioned_requires_secure},
                   set(<<"a">>, <<"b">>, #{partitioned => true})),
     ?_assertMatch({ok, _}, set(<<"a">>, <<"b">>, #{same_site => none, secure => true}))].

%% rfc6265bis §4.1.3: cookie name prefixes.
set_cookie_prefix_test_() ->
    Host = #{secure => true, path => <<"/">>},
    [?_assertEqual({error, secure_prefix_requires_secure}, set(<<"__Secure-id">>, <<"1">>, #{})),
     ?_assertEqual({ok, <<"__Secure-id=1; Domain=example.com; Secure">>},
                   set(<<"__Secure-id">>, <<"1">>, #{secure => true, domain => <<"example.com">>})),
     ?_assertEqual({ok, <<"__Host-id=1; Path=/; Secure">>}, set(<<"__Host-id">>, <<"1">>, Host)),
     ?_assertEqual({error, host_prefix_requirements},
                   set(<<"__Host-id">>, <<"1">>, Host#{secure => false})),
     ?_assertEqual({error, host_prefix_requirements},
                   set(<<"__Host-id">>, <<"1">>, Host#{path => <<"/app">>})),
     ?_assertEqual({error, host_prefix_requirements},
                   set(<<"__Host-id">>, <<"1">>, maps:remove(path, Host))),
     ?_assertEqual({error, host_prefix_requirements},
                   set(<<"__Host-id">>, <<"1">>, Host#{domain => <<"example.com">>})),
     %% Agents compare the prefixes case-insensitively.
     ?_assertEqual({error, secure_prefix_requires_secure}, set(<<"__SECURE-id">>, <<"1">>, #{})),
     ?_assertEqual({error, host_prefix_requirements}, set(<<"__host-id">>, <<"1">>, #{})),
     ?_assertMatch({ok, _}, set(<<"__Hostile">>, <<"1">>, #{})),
     ?_assertMatch({ok, _}, set(<<"__">>, <<"1">>, #{}))].

%% rfc6265bis §5.6, §5.7: the sizes agents would silently ignore.
set_cookie_size_test_() ->
    [?_assertMatch({ok, _}, set(<<"n">>, binary:copy(<<"v">>, 4095), #{})),
     ?_assertEqual({error, too_large}, set(<<"n">>, binary:copy(<<"v">>, 4096), #{})),
     ?_assertEqual({error, too_large}, set(binary:copy(<<"n">>, 4000), binary:copy(<<"v">>, 97), #{})),
     ?_assertMatch({ok, _}, set(<<"n">>, <<"v">>, #{path => binary:copy(<<"/">>, 1024)})),
     ?_assertEqual({error, {invalid_attribute, path}},
                   set(<<"n">>, <<"v">>, #{path => binary:copy(<<"/">>, 1025)}))].

delete_test_() ->
    [?_assertEqual({ok, <<"sid=; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Path=/">>},
                   falco_cookie:delete(<<"sid">>, #{path => <<"/">>})),
     ?_assertEqual({error, invalid_name}, falco_cookie:delete(<<"s d">>, #{}))].

%% What the builder emits, the parser reads back.
round_trip_test() ->
    {ok, A} = set(<<"a">>, <<"\"xy\"">>, #{path => <<"/">>}),
    {ok, B} = set(<<"b">>, falco_uri:encode_query(<<"x; y, \"z\"">>), #{}),
    [PairA | _] = binary:split(A, <<";">>),
    [PairB | _] = binary:split(B, <<";">>),
    [{<<"a">>, <<"xy">>}, {<<"b">>, Encoded}] =
        falco_cookie:parse(<<PairA/binary, "; ", PairB/binary>>),
    ?assertEqual({ok, <<"x; y, \"z\"">>}, falco_uri:decode(Encoded)).
