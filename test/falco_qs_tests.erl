%% EUnit tests for the urlencoded codec (falco_qs). The parser vectors are
%% those of the WHATWG URL Standard's web-platform-tests
%% (url/urlencoded-parser.any.js), the serializer cases follow WHATWG URL
%% §5.2.
-module(falco_qs_tests).
-include_lib("eunit/include/eunit.hrl").

ok(Bin) ->
    {ok, Pairs} = falco_qs:parse(Bin),
    Pairs.

replaced(Bin) ->
    {ok, Pairs} = falco_qs:parse(Bin, #{utf8 => replace}),
    Pairs.

-define(FFFD, (<<16#FFFD/utf8>>)/binary).

%% WHATWG URL §5.1: splitting, empty sequences, missing `=', `+'.
whatwg_structure_test_() ->
    [?_assertEqual(Out, ok(In)) || {In, Out} <- [
        {<<>>, []},
        {<<"a">>, [{<<"a">>, <<>>}]},
        {<<"test">>, [{<<"test">>, <<>>}]},
        {<<"a=b">>, [{<<"a">>, <<"b">>}]},
        {<<"a=">>, [{<<"a">>, <<>>}]},
        {<<"=b">>, [{<<>>, <<"b">>}]},
        {<<"&">>, []},
        {<<"&a">>, [{<<"a">>, <<>>}]},
        {<<"a&">>, [{<<"a">>, <<>>}]},
        {<<"a&a">>, [{<<"a">>, <<>>}, {<<"a">>, <<>>}]},
        {<<"a&b&c">>, [{<<"a">>, <<>>}, {<<"b">>, <<>>}, {<<"c">>, <<>>}]},
        {<<"a=b&c=d">>, [{<<"a">>, <<"b">>}, {<<"c">>, <<"d">>}]},
        {<<"a=b&c=d&">>, [{<<"a">>, <<"b">>}, {<<"c">>, <<"d">>}]},
        {<<"&&&a=b&&&&c=d&">>, [{<<"a">>, <<"b">>}, {<<"c">>, <<"d">>}]},
        {<<"a=a&a=b&a=c">>, [{<<"a">>, <<"a">>}, {<<"a">>, <<"b">>}, {<<"a">>, <<"c">>}]},
        {<<"a==a">>, [{<<"a">>, <<"=a">>}]},
        {<<"a=a+b+c+d">>, [{<<"a">>, <<"a b c d">>}]},
        {<<"%61+%4d%4D=">>, [{<<"a MM">>, <<>>}]},
        {<<"%61=a">>, [{<<"a">>, <<"a">>}]},
        {<<"a%2Bb=c%26d%3De">>, [{<<"a+b">>, <<"c&d=e">>}]},
        {<<"a;b=c">>, [{<<"a;b">>, <<"c">>}]}]].

%% WHATWG URL §1.3 percent-decode: a bad escape stays as it is.
whatwg_lenient_percent_test_() ->
    [?_assertEqual(Out, ok(In)) || {In, Out} <- [
        {<<"%=a">>, [{<<"%">>, <<"a">>}]},
        {<<"%a=a">>, [{<<"%a">>, <<"a">>}]},
        {<<"%a_=a">>, [{<<"%a_">>, <<"a">>}]},
        {<<"id=0&value=%">>, [{<<"id">>, <<"0">>}, {<<"value">>, <<"%">>}]},
        {<<"b=%2sf%2a">>, [{<<"b">>, <<"%2sf*">>}]},
        {<<"b=%2%2af%2a">>, [{<<"b">>, <<"%2*f*">>}]},
        {<<"b=%%2a">>, [{<<"b">>, <<"%*">>}]},
        {<<"b=%+">>, [{<<"b">>, <<"% ">>}]}]].

%% The `strict' option refuses what the lenient parser lets through.
strict_percent_test_() ->
    Strict = fun(In) -> falco_qs:parse(In, #{percent => strict}) end,
    [?_assertEqual({error, bad_percent}, Strict(<<"value=%">>)),
     ?_assertEqual({error, bad_percent}, Strict(<<"a=1&b=%2sf">>)),
     ?_assertEqual({error, bad_percent}, Strict(<<"%zz=1">>)),
     ?_assertEqual({ok, [{<<"a b">>, <<"*">>}]}, Strict(<<"a+b=%2a">>))].

%% Bytes are kept by default, even when they are not UTF-8.
utf8_keep_test() ->
    ?assertEqual([{<<16#FE, 16#FF>>, <<>>}], ok(<<"%FE%FF">>)),
    ?assertEqual([{<<"a">>, <<16#C2, $x>>}], ok(<<"a=%C2x">>)).

%% WHATWG: UTF-8 decode without BOM, U+FFFD per maximal ill-formed subpart.
utf8_replace_test_() ->
    U = fun(S) -> unicode:characters_to_binary(S) end,
    [?_assertEqual([{U([16#FEFF]) , U([16#FEFF])}], replaced(<<"%EF%BB%BF=%EF%BB%BF">>)),
     ?_assertEqual([{U([16#FEFF, $t]), U([16#FEFF])}],
                   replaced(<<16#EF, 16#BB, 16#BF, "t=", 16#EF, 16#BB, 16#BF>>)),
     ?_assertEqual([{U([16#FFFF]), U([16#FFFF])}], replaced(<<"%EF%BF%BF=%EF%BF%BF">>)),
     ?_assertEqual([{<<?FFFD, ?FFFD>>, <<>>}], replaced(<<"%FE%FF">>)),
     ?_assertEqual([{<<?FFFD, ?FFFD>>, <<>>}], replaced(<<"%FF%FE">>)),
     ?_assertEqual([{U([16#2020]), <<>>}, {U([16#2020]), <<"x">>}],
                   replaced(U([16#2020, $&, 16#2020, $=, $x]))),
     ?_assertEqual([{<<?FFFD>>, <<>>}], replaced(<<"%C2">>)),
     ?_assertEqual([{<<?FFFD, "x">>, <<>>}], replaced(<<"%C2x">>)),
     ?_assertEqual([{<<"_charset_">>, <<"windows-1252">>}, {<<"test">>, <<?FFFD, "x">>}],
                   replaced(<<"_charset_=windows-1252&test=%C2x">>)),
     %% Unicode §3.9 (Table 3-8 style): a truncated 3-byte sequence is one
     %% U+FFFD, an overlong or surrogate lead is replaced byte by byte.
     ?_assertEqual([{<<?FFFD, "a">>, <<>>}], replaced(<<"%E2%82a">>)),
     ?_assertEqual([{<<?FFFD, ?FFFD>>, <<>>}], replaced(<<"%C0%AF">>)),
     ?_assertEqual([{<<?FFFD, ?FFFD, ?FFFD>>, <<>>}], replaced(<<"%ED%A0%80">>)),
     ?_assertEqual([{<<?FFFD, ?FFFD, ?FFFD, ?FFFD>>, <<>>}], replaced(<<"%F4%90%80%80">>)),
     ?_assertEqual([{<<?FFFD, "b">>, <<>>}], replaced(<<"%F0%9F%98b">>))].

utf8_reject_test() ->
    ?assertEqual({error, bad_utf8}, falco_qs:parse(<<"a=%C2x">>, #{utf8 => reject})),
    ?assertEqual({ok, [{<<"a">>, <<"é"/utf8>>}]},
                 falco_qs:parse(<<"a=%C3%A9">>, #{utf8 => reject})).

%% The pair bound: empty sequences are free, pairs are counted.
max_pairs_test_() ->
    Many = binary:copy(<<"a=1&">>, 1001),
    [?_assertEqual({error, too_many_pairs}, falco_qs:parse(Many)),
     ?_assertMatch({ok, [_, _, _]}, falco_qs:parse(<<"a&b&c">>, #{max_pairs => 3})),
     ?_assertEqual({error, too_many_pairs}, falco_qs:parse(<<"a&b&c&d">>, #{max_pairs => 3})),
     ?_assertEqual({ok, [{<<"a">>, <<>>}]},
                   falco_qs:parse(<<"&&&&&&&&a&&&&&&">>, #{max_pairs => 1})),
     ?_assertEqual({ok, []}, falco_qs:parse(<<>>, #{max_pairs => 0})),
     ?_assertEqual({error, too_many_pairs}, falco_qs:parse(<<"a">>, #{max_pairs => 0}))].

%% WHATWG URL §5.2: the serializer.
encode_test_() ->
    [?_assertEqual(<<>>, falco_qs:encode([])),
     ?_assertEqual(<<"a=b">>, falco_qs:encode([{<<"a">>, <<"b">>}])),
     ?_assertEqual(<<"a+b=x%26y&c=">>, falco_qs:encode([{<<"a b">>, <<"x&y">>}, {<<"c">>, <<>>}])),
     ?_assertEqual(<<"*-._=%7E%2B%3D%25%2F">>, falco_qs:encode([{<<"*-._">>, <<"~+=%/">>}])),
     ?_assertEqual(<<"a=%00%0A%F0%9F%92%A9">>,
                   falco_qs:encode([{<<"a">>, <<0, $\n, "💩"/utf8>>}])),
     ?_assertEqual(<<"AZaz09=1&a=2&a=3">>,
                   falco_qs:encode([{<<"AZaz09">>, <<"1">>}, {<<"a">>, <<"2">>}, {<<"a">>, <<"3">>}]))].

round_trip_test() ->
    Pairs = [{<<"q">>, <<"erlang & otp = 100%">>}, {<<>>, <<>>}, {<<"q">>, <<"é+"/utf8>>}],
    ?assertEqual({ok, Pairs}, falco_qs:parse(falco_qs:encode(Pairs))).
