%% Unit tests for falco_cond: entity tags and HTTP-dates (RFC 9110 §8.8,
%% §5.6.7) and the precondition precedence of §13.2.2.
-module(falco_cond_tests).
-include_lib("eunit/include/eunit.hrl").

-define(C, falco_cond).
-define(R, falco_test_req).

-define(LM, 784111777).                       % Sun, 06 Nov 1994 08:49:37 GMT
-define(LM_DATE, <<"Sun, 06 Nov 1994 08:49:37 GMT">>).
-define(BEFORE, <<"Sat, 05 Nov 1994 08:49:37 GMT">>).
-define(AFTER, <<"Mon, 07 Nov 1994 08:49:37 GMT">>).

req(Headers) -> req(<<"GET">>, Headers).
req(Method, Headers) -> ?R:new(Method, <<"/r">>, Headers).

v() -> #{etag => <<"\"v1\"">>, last_modified => ?LM}.

%% -- dates -----------------------------------------------------------------------

dates_test() ->
    ?assertEqual({ok, ?LM}, ?C:parse_date(?LM_DATE)),
    ?assertEqual({ok, ?LM}, ?C:parse_date(<<"Sunday, 06-Nov-94 08:49:37 GMT">>)),
    ?assertEqual({ok, ?LM}, ?C:parse_date(<<"Sun Nov  6 08:49:37 1994">>)),
    ?assertEqual({ok, ?LM}, ?C:parse_date(<<"Sun Nov 06 08:49:37 1994">>)),
    ?assertEqual(?LM_DATE, ?C:http_date(?LM)),
    ?assertEqual(?LM_DATE, ?C:http_date({{1994, 11, 6}, {8, 49, 37}})),
    %% RFC 850 two-digit years: not more than 50 years ahead.
    {{Year, _, _}, _} = calendar:universal_time(),
    {ok, S} = ?C:parse_date(<<"Monday, 01-Jan-", (pad2((Year + 60) rem 100))/binary, " 00:00:00 GMT">>),
    {{Y, 1, 1}, _} = calendar:gregorian_seconds_to_datetime(S + 62167219200),
    ?assert(Y =< Year + 50),
    [?assertEqual(error, ?C:parse_date(Bad))
     || Bad <- [<<>>, <<"yesterday">>, <<"Sun, 06 Nov 1994 08:49:37 UTC">>,
                <<"Sun, 31 Feb 1994 08:49:37 GMT">>, <<"Sun, 06 Nov 1994 25:49:37 GMT">>,
                <<"Sun, 06 Xyz 1994 08:49:37 GMT">>, <<"Xyz, 06 Nov 1994 08:49:37 GMT">>,
                <<"Sun, 0x Nov 1994 08:49:37 GMT">>, <<"Sunday, 06-Nov-94 08:49:37 UTC">>,
                <<"Funday, 06-Nov-94 08:49:37 GMT">>, <<"Sun Nov  6 08:49:37 199x">>,
                <<"Sun, 06 Nov 1994 08:49:37 GMT, Sun, 06 Nov 1994 08:49:37 GMT">>]].

pad2(N) when N < 10 -> <<$0, ($0 + N)>>;
pad2(N) -> integer_to_binary(N).

to_seconds_test() ->
    ?assertEqual({ok, ?LM}, ?C:to_seconds(?LM)),
    ?assertEqual({ok, ?LM}, ?C:to_seconds(?LM_DATE)),
    ?assertEqual({ok, ?LM}, ?C:to_seconds({{1994, 11, 6}, {8, 49, 37}})),
    ?assertEqual(error, ?C:to_seconds({{1994, 13, 6}, {8, 49, 37}})),
    ?assertEqual(error, ?C:to_seconds(now)).

%% -- entity tags -------------------------------------------------------------------

etags_test() ->
    ?assertEqual(<<"\"x\"">>, ?C:etag(<<"x">>)),
    ?assertEqual(<<"W/\"x\"">>, ?C:etag(weak, <<"x">>)),
    ?assertEqual({ok, {strong, <<"xyzzy">>}}, ?C:parse_etag(<<"\"xyzzy\"">>)),
    ?assertEqual({ok, {weak, <<"xyzzy">>}}, ?C:parse_etag(<<" W/\"xyzzy\" ">>)),
    ?assertEqual({ok, {strong, <<>>}}, ?C:parse_etag(<<"\"\"">>)),
    [?assertEqual({error, bad_etag}, ?C:parse_etag(B))
     || B <- [<<"xyzzy">>, <<"\"open">>, <<"w/\"x\"">>, <<"\"a\" \"b\"">>, <<"\"a b\"">>,
              <<"\"a", 127, "\"">>]],
    ?assertEqual({ok, any}, ?C:parse_etags(<<" * ">>)),
    ?assertEqual({ok, [{strong, <<"a">>}, {weak, <<"b">>}, {strong, <<"c,d">>}]},
                 ?C:parse_etags(<<"\"a\", W/\"b\",,\"c,d\" ,">>)),
    [?assertEqual({error, bad_etag}, ?C:parse_etags(B))
     || B <- [<<>>, <<",">>, <<"*, \"a\"">>, <<"\"a\" x">>, <<"a">>]].

comparison_test() ->
    %% The table of RFC 9110 §8.8.3.2.
    W1 = {weak, <<"1">>}, W2 = {weak, <<"2">>}, S1 = {strong, <<"1">>},
    ?assertNot(?C:strong_match(W1, W1)), ?assert(?C:weak_match(W1, W1)),
    ?assertNot(?C:strong_match(W1, W2)), ?assertNot(?C:weak_match(W1, W2)),
    ?assertNot(?C:strong_match(W1, S1)), ?assert(?C:weak_match(W1, S1)),
    ?assert(?C:strong_match(S1, S1)), ?assert(?C:weak_match(S1, S1)).

etag_of_test() ->
    A = ?C:etag_of(<<"hello">>),
    ?assertEqual(A, ?C:etag_of([<<"hel">>, "lo"])),
    ?assertNotEqual(A, ?C:etag_of(<<"hellO">>)),
    ?assertMatch({ok, {strong, _}}, ?C:parse_etag(A)).

%% -- evaluation (RFC 9110 §13.2.2) ------------------------------------------------------

if_none_match_test() ->
    ?assertEqual(not_modified, ?C:evaluate(req([{<<"if-none-match">>, <<"\"v1\"">>}]), v())),
    ?assertEqual(not_modified, ?C:evaluate(req([{<<"if-none-match">>, <<"W/\"v1\"">>}]), v())),
    ?assertEqual(not_modified, ?C:evaluate(req([{<<"if-none-match">>, <<"\"x\", \"v1\"">>}]), v())),
    ?assertEqual(not_modified, ?C:evaluate(req([{<<"if-none-match">>, <<"*">>}]), v())),
    ?assertEqual(ok, ?C:evaluate(req([{<<"if-none-match">>, <<"\"v2\"">>}]), v())),
    ?assertEqual(ok, ?C:evaluate(req([{<<"if-none-match">>, <<"garbage">>}]), v())),
    ?assertEqual(ok, ?C:evaluate(req([{<<"if-none-match">>, <<"\"v1\"">>}]), #{})),
    %% HEAD like GET; other methods get 412.
    ?assertEqual(not_modified, ?C:evaluate(req(<<"HEAD">>, [{<<"if-none-match">>, <<"\"v1\"">>}]), v())),
    ?assertEqual(precondition_failed,
                 ?C:evaluate(req(<<"PUT">>, [{<<"if-none-match">>, <<"*">>}]), v())),
    ?assertEqual(ok, ?C:evaluate(req(<<"PUT">>, [{<<"if-none-match">>, <<"\"v2\"">>}]), v())).

if_modified_since_test() ->
    IMS = fun(D) -> req([{<<"if-modified-since">>, D}]) end,
    ?assertEqual(not_modified, ?C:evaluate(IMS(?LM_DATE), v())),
    ?assertEqual(not_modified, ?C:evaluate(IMS(?AFTER), v())),
    ?assertEqual(ok, ?C:evaluate(IMS(?BEFORE), v())),
    ?assertEqual(ok, ?C:evaluate(IMS(<<"not a date">>), v())),
    ?assertEqual(ok, ?C:evaluate(IMS(?LM_DATE), #{etag => <<"\"v1\"">>})),
    %% A date in the future is invalid (§13.1.3).
    Future = ?C:http_date(erlang:system_time(second) + 86400),
    ?assertEqual(ok, ?C:evaluate(IMS(Future), v())),
    %% Only for GET and HEAD.
    ?assertEqual(ok, ?C:evaluate(req(<<"POST">>, [{<<"if-modified-since">>, ?AFTER}]), v())),
    %% Two dates (a list) are ignored.
    ?assertEqual(ok, ?C:evaluate(req([{<<"if-modified-since">>, ?AFTER},
                                      {<<"if-modified-since">>, ?AFTER}]), v())),
    %% Last-Modified may be given as a date or a datetime.
    ?assertEqual(not_modified, ?C:evaluate(IMS(?AFTER), #{last_modified => ?LM_DATE})),
    ?assertEqual(not_modified, ?C:evaluate(IMS(?AFTER), #{last_modified => {{1994, 11, 6}, {8, 49, 37}}})),
    ?assertEqual(ok, ?C:evaluate(IMS(?AFTER), #{last_modified => <<"bad">>})).

if_none_match_wins_over_if_modified_since_test() ->
    %% §13.2.2 step 4 only runs without If-None-Match.
    ?assertEqual(ok, ?C:evaluate(req([{<<"if-none-match">>, <<"\"v2\"">>},
                                      {<<"if-modified-since">>, ?AFTER}]), v())),
    ?assertEqual(not_modified, ?C:evaluate(req([{<<"if-none-match">>, <<"\"v1\"">>},
                                                {<<"if-modified-since">>, ?BEFORE}]), v())).

if_match_test() ->
    IM = fun(M, V) -> req(M, [{<<"if-match">>, V}]) end,
    ?assertEqual(ok, ?C:evaluate(IM(<<"PUT">>, <<"\"v1\"">>), v())),
    ?assertEqual(ok, ?C:evaluate(IM(<<"PUT">>, <<"\"v0\", \"v1\"">>), v())),
    ?assertEqual(ok, ?C:evaluate(IM(<<"PUT">>, <<"*">>), v())),
    ?assertEqual(ok, ?C:evaluate(IM(<<"PUT">>, <<"*">>), #{})),
    ?assertEqual(precondition_failed, ?C:evaluate(IM(<<"PUT">>, <<"\"v2\"">>), v())),
    %% Strong comparison: a weak tag never matches.
    ?assertEqual(precondition_failed, ?C:evaluate(IM(<<"PUT">>, <<"W/\"v1\"">>), v())),
    ?assertEqual(precondition_failed,
                 ?C:evaluate(IM(<<"PUT">>, <<"\"v1\"">>), #{etag => <<"W/\"v1\"">>})),
    ?assertEqual(precondition_failed, ?C:evaluate(IM(<<"PUT">>, <<"\"v1\"">>), #{})),
    %% Unparsable: fails rather than being ignored.
    ?assertEqual(precondition_failed, ?C:evaluate(IM(<<"PUT">>, <<"v1">>), v())),
    ?assertEqual(precondition_failed, ?C:evaluate(IM(<<"GET">>, <<"\"v2\"">>), v())).

if_unmodified_since_test() ->
    IUS = fun(D) -> req(<<"DELETE">>, [{<<"if-unmodified-since">>, D}]) end,
    ?assertEqual(ok, ?C:evaluate(IUS(?LM_DATE), v())),
    ?assertEqual(ok, ?C:evaluate(IUS(?AFTER), v())),
    ?assertEqual(precondition_failed, ?C:evaluate(IUS(?BEFORE), v())),
    ?assertEqual(ok, ?C:evaluate(IUS(<<"garbage">>), v())),
    ?assertEqual(ok, ?C:evaluate(IUS(?BEFORE), #{etag => <<"\"v1\"">>})),
    %% If-Match present: If-Unmodified-Since is not evaluated (step 2).
    ?assertEqual(ok, ?C:evaluate(req(<<"DELETE">>, [{<<"if-match">>, <<"\"v1\"">>},
                                                   {<<"if-unmodified-since">>, ?BEFORE}]), v())).

precedence_test() ->
    %% Step 1 before step 3: If-Match failing is 412 even if If-None-Match would 304.
    ?assertEqual(precondition_failed,
                 ?C:evaluate(req([{<<"if-match">>, <<"\"v2\"">>},
                                  {<<"if-none-match">>, <<"\"v1\"">>}]), v())),
    ?assertEqual(not_modified,
                 ?C:evaluate(req([{<<"if-match">>, <<"\"v1\"">>},
                                  {<<"if-none-match">>, <<"\"v1\"">>}]), v())).

ignored_methods_test() ->
    [?assertEqual(ok, ?C:evaluate(req(M, [{<<"if-match">>, <<"\"nope\"">>}]), v()))
     || M <- [<<"OPTIONS">>, <<"TRACE">>, <<"CONNECT">>]].

check_test() ->
    ?assertEqual(ok, ?C:check(req([]), v())),
    {304, H, <<>>} = ?C:check(req([{<<"if-none-match">>, <<"\"v1\"">>}]), v(),
                              [{<<"Cache-Control">>, <<"max-age=60">>},
                               {<<"content-type">>, <<"text/plain">>},
                               {<<"vary">>, <<"accept-encoding">>}]),
    %% §15.4.5: validators and caching fields; not Last-Modified when an
    %% ETag is there; not representation metadata like Content-Type.
    ?assertEqual([{<<"etag">>, <<"\"v1\"">>}, {<<"cache-control">>, <<"max-age=60">>},
                  {<<"vary">>, <<"accept-encoding">>}], H),
    {304, H2, _} = ?C:check(req([{<<"if-modified-since">>, ?LM_DATE}]), #{last_modified => ?LM}),
    ?assertEqual([{<<"last-modified">>, ?LM_DATE}], H2),
    ?assertMatch({412, _, _}, ?C:check(req(<<"PUT">>, [{<<"if-match">>, <<"\"x\"">>}]), v())).

headers_test() ->
    ?assertEqual([{<<"etag">>, <<"\"v1\"">>}, {<<"last-modified">>, ?LM_DATE}], ?C:headers(v())),
    ?assertEqual([], ?C:headers(#{})).

%% -- middleware ----------------------------------------------------------------------------

call(Req, Resp) -> call(Req, Resp, #{}).
call(Req, Resp, Opts) -> ?C:call(Req, fun(_) -> Resp end, Opts).

middleware_test() ->
    Body = <<"hello">>,
    Tag = ?C:etag_of(Body),
    {200, H, Body} = call(req([]), {200, [{<<"Content-Type">>, <<"text/plain">>}], Body}),
    ?assertEqual(Tag, proplists:get_value(<<"etag">>, H)),
    ?assertMatch({304, [{<<"etag">>, Tag}], _},
                 call(req([{<<"if-none-match">>, Tag}]), {200, [], [<<"hel">>, <<"lo">>]})),
    %% A handler's own validators are used as they are.
    ?assertMatch({304, _, _}, call(req([{<<"if-none-match">>, <<"\"mine\"">>}]),
                                   {200, [{<<"ETag">>, <<"\"mine\"">>}], Body})),
    ?assertMatch({304, _, _}, call(req([{<<"if-modified-since">>, ?AFTER}]),
                                   {200, [{<<"last-modified">>, ?LM_DATE}], Body}, #{etag => false})),
    ?assertMatch({200, [], _}, call(req([{<<"if-none-match">>, Tag}]), {200, [], Body}, #{etag => false})),
    ?assertMatch({412, _, _}, call(req([{<<"if-match">>, <<"\"other\"">>}]), {200, [], Body})),
    %% Untouched: other methods, statuses and bodies.
    R1 = {200, [], Body},
    ?assertEqual(R1, call(req(<<"POST">>, [{<<"if-none-match">>, Tag}]), R1)),
    R2 = {404, [], Body},
    ?assertEqual(R2, call(req([]), R2)),
    R3 = {200, [], {file, "x"}},
    ?assertEqual(R3, call(req([]), R3)),
    R4 = {200, [], [bad]},
    ?assertEqual(R4, call(req([]), R4)),
    R5 = {stream, 200, [], fun(_) -> ok end},
    ?assertEqual(R5, call(req([]), R5)).
