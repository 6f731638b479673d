%% EUnit tests for falco_json: the RFC 8259 examples (§13), escaping (§7),
%% numbers (§6), refusal of what cannot be JSON, and the decoder's limits.
-module(falco_json_tests).
-include_lib("eunit/include/eunit.hrl").

enc(T) ->
    falco_json:encode_to_binary(T).

dec(B) ->
    {ok, T} = falco_json:decode(B),
    T.

%% RFC 8259 §13, first example.
rfc_object_example_test() ->
    Text = <<"{\n  \"Image\": {\n      \"Width\":  800,\n      \"Height\": 600,\n"
             "      \"Title\":  \"View from 15th Floor\",\n      \"Thumbnail\": {\n"
             "          \"Url\":    \"http://www.example.com/image/481989943\",\n"
             "          \"Height\": 125,\n          \"Width\":  100\n      },\n"
             "      \"Animated\" : false,\n      \"IDs\": [116, 943, 234, 38793]\n    }\n}">>,
    Term = #{<<"Image">> => #{<<"Width">> => 800, <<"Height">> => 600,
                              <<"Title">> => <<"View from 15th Floor">>,
                              <<"Thumbnail">> => #{<<"Url">> => <<"http://www.example.com/image/481989943">>,
                                                   <<"Height">> => 125, <<"Width">> => 100},
                              <<"Animated">> => false,
                              <<"IDs">> => [116, 943, 234, 38793]}},
    ?assertEqual(Term, dec(Text)),
    ?assertEqual(Term, dec(enc(Term))).

%% RFC 8259 §13, second example.
rfc_array_example_test() ->
    Text = <<"[\n  {\n     \"precision\": \"zip\",\n     \"Latitude\":  37.7668,\n"
             "     \"Longitude\": -122.3959,\n     \"Address\":   \"\",\n"
             "     \"City\":      \"SAN FRANCISCO\",\n     \"State\":     \"CA\",\n"
             "     \"Zip\":       \"94107\",\n     \"Country\":   \"US\"\n  },\n  {\n"
             "     \"precision\": \"zip\",\n     \"Latitude\":  37.371991,\n"
             "     \"Longitude\": -122.026020,\n     \"Address\":   \"\",\n"
             "     \"City\":      \"SUNNYVALE\",\n     \"State\":     \"CA\",\n"
             "     \"Zip\":       \"94085\",\n     \"Country\":   \"US\"\n  }\n]">>,
    [A, B] = dec(Text),
    ?assertEqual(37.7668, maps:get(<<"Latitude">>, A)),
    ?assertEqual(-122.02602, maps:get(<<"Longitude">>, B)),
    ?assertEqual(<<"SUNNYVALE">>, maps:get(<<"City">>, B)),
    ?assertEqual([A, B], dec(enc([A, B]))).

%% RFC 8259 §13: small texts are JSON texts too.
scalars_test_() ->
    [?_assertEqual(<<"\"Hello world!\"">>, enc(<<"Hello world!">>)),
     ?_assertEqual(<<"42">>, enc(42)),
     ?_assertEqual(<<"true">>, enc(true)),
     ?_assertEqual(<<"false">>, enc(false)),
     ?_assertEqual(<<"null">>, enc(null)),
     ?_assertEqual(<<"-12345678901234567890123">>, enc(-12345678901234567890123)),
     ?_assertEqual(<<"[]">>, enc([])),
     ?_assertEqual(<<"{}">>, enc(#{})),
     ?_assertEqual(<<"[1,[2,[]],{}]">>, enc([1, [2, []], #{}])),
     ?_assertEqual(<<"{\"a\":1}">>, enc(#{a => 1})),
     ?_assertEqual(<<"{\"a\":{\"b\":[null]}}">>, enc(#{<<"a">> => #{b => [null]}})),
     ?_assertEqual(<<"Hello world!">>, dec(<<"\"Hello world!\"">>)),
     ?_assertEqual(42, dec(<<"42">>)),
     ?_assertEqual(null, dec(<<" \t\r\nnull\n">>))].

%% Elixir's nil encodes as null (a map built in Elixir with nil values);
%% decoding gives null unless the option asks for nil.
nil_test_() ->
    [?_assertEqual(<<"null">>, enc(nil)),
     ?_assertEqual(<<"{\"a\":null,\"b\":[null,1]}">>, enc(#{<<"a">> => nil, <<"b">> => [nil, 1]})),
     ?_assertEqual({ok, null}, falco_json:decode(<<"null">>)),
     ?_assertEqual({ok, null}, falco_json:decode(<<"null">>, #{null => null})),
     ?_assertEqual({ok, #{<<"a">> => nil, <<"b">> => [nil, true]}},
                   falco_json:decode(<<"{\"a\":null,\"b\":[null,true]}">>, #{null => nil})),
     ?_assertError({invalid_option, null, undefined},
                   falco_json:decode(<<"null">>, #{null => undefined}))].

map_members_test() ->
    {ok, Json} = falco_json:encode(#{a => 1, b => <<"two">>, <<"c">> => [3]}),
    ?assertEqual(#{<<"a">> => 1, <<"b">> => <<"two">>, <<"c">> => [3]},
                 dec(iolist_to_binary(Json))).

%% §6: shortest round-trip floats.
float_test_() ->
    [?_assertEqual(<<"0.1">>, enc(0.1)),
     ?_assertEqual(<<"1.0">>, enc(1.0)),
     ?_assertEqual(<<"-0.0">>, enc(-0.0)),
     ?_assertEqual(<<"1.0e300">>, enc(1.0e300)),
     ?_assertEqual(<<"5.0e-324">>, enc(5.0e-324)),
     ?_assertEqual(<<"1.2345678901234568e17">>, enc(123456789012345678.0))] ++
    [?_assertEqual(F, dec(enc(F)))
     || F <- [0.1, 1/3, -2.5e-8, 1.7976931348623157e308, 5.0e-324, 2.2250738585072014e-308]].

%% §7: what must be escaped is, UTF-8 passes through untouched.
escape_test_() ->
    [?_assertEqual(<<"\"a\\\"b\\\\c\"">>, enc(<<"a\"b\\c">>)),
     ?_assertEqual(<<"\"\\b\\f\\n\\r\\t\\u0000\\u001f\"">>, enc(<<8, 12, 10, 13, 9, 0, 31>>)),
     ?_assertEqual(<<"\"/\x7f\"">>, enc(<<"/", 127>>)),
     ?_assertEqual(<<"\"é€😀\""/utf8>>, enc(<<"é€😀"/utf8>>)),
     ?_assertEqual(<<"{\"ключ\":\"x\\ny\"}"/utf8>>, enc(#{<<"ключ"/utf8>> => <<"x\ny">>})),
     ?_assertEqual(<<"{\"k\\\"\":1}">>, enc(#{<<"k\"">> => 1}))].

%% The whole string comes back as the same binary when nothing needs escaping.
no_copy_test() ->
    Bin = <<"plain ascii and ütf-8"/utf8>>,
    {ok, [$", Same, $"]} = falco_json:encode(Bin),
    ?assertEqual(Bin, Same).

invalid_test_() ->
    Pid = self(),
    [?_assertEqual({error, {invalid, T}}, falco_json:encode(T)) || T <- [
        undefined, ok, {1, 2}, Pid, make_ref(), fun() -> ok end, <<1:1>>]] ++
    [?_assertEqual({error, {invalid, <<255>>}}, falco_json:encode([1, <<255>>])),
     ?_assertEqual({error, {invalid, <<"a", 16#C0, 16#80>>}}, falco_json:encode(<<"a", 16#C0, 16#80>>)),
     ?_assertEqual({error, {invalid, <<16#ED, 16#A0, 16#80>>}},
                   falco_json:encode(<<16#ED, 16#A0, 16#80>>)),
     ?_assertEqual({error, {invalid, [1 | 2]}}, falco_json:encode([1 | 2])),
     ?_assertEqual({error, {invalid, [1, 2 | 3]}}, falco_json:encode([1, 2 | 3])),
     ?_assertEqual({error, {invalid, {k}}}, falco_json:encode(#{{k} => 1})),
     ?_assertEqual({error, {invalid, 1}}, falco_json:encode(#{1 => 1})),
     ?_assertEqual({error, {invalid, <<255>>}}, falco_json:encode(#{<<255>> => 1})),
     ?_assertEqual({error, {invalid, x}}, falco_json:encode(#{a => [#{b => x}]})),
     ?_assertEqual({error, {invalid, #{a => 1, <<"a">> => 2}}},
                   falco_json:encode(#{a => 1, <<"a">> => 2})),
     ?_assertMatch({ok, _}, falco_json:encode(#{a => 1, <<"b">> => 2})),
     ?_assertError(badarg, falco_json:encode_to_binary({tuple})),
     ?_assertError(badarg, falco_json:encode_to_binary(<<128>>))].

decode_values_test_() ->
    [?_assertEqual(Out, dec(In)) || {In, Out} <- [
        {<<"0">>, 0}, {<<"-0">>, 0}, {<<"-12">>, -12}, {<<"1e2">>, 100.0},
        {<<"1E+2">>, 100.0}, {<<"2.5e-1">>, 0.25}, {<<"-0.0">>, -0.0}, {<<"10.50">>, 10.5},
        {<<"123456789012345678901234567890">>, 123456789012345678901234567890},
        {<<"1.0e-400">>, 0.0},
        {<<"\"\"">>, <<>>},
        {<<"\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"">>, <<"\"\\/\b\f\n\r\t">>},
        {<<"\"\\u0041\\u00e9\\u20AC\"">>, <<"Aé€"/utf8>>},
        {<<"\"\\ud83d\\ude00\"">>, <<"😀"/utf8>>},
        {<<"\"a\\u0000b\"">>, <<"a", 0, "b">>},
        {<<"\"é€😀\""/utf8>>, <<"é€😀"/utf8>>},
        {<<"[ 1 , [ ] , { } , \"x\" ]">>, [1, [], #{}, <<"x">>]},
        {<<"{\"a\":{\"a\":[true,false,null]}}">>, #{<<"a">> => #{<<"a">> => [true, false, null]}}},
        {<<"{\"\":0}">>, #{<<>> => 0}}]].

%% RFC 8259 grammar violations, with the byte offset where they are seen.
decode_syntax_errors_test_() ->
    [?_assertEqual({error, {syntax, Off}}, falco_json:decode(In)) || {In, Off} <- [
        {<<>>, 0}, {<<"   ">>, 3}, {<<"nul">>, 0}, {<<"True">>, 0}, {<<"[1,]">>, 3},
        {<<"[1 2]">>, 3}, {<<"{\"a\" 1}">>, 5}, {<<"{\"a\":1,}">>, 7}, {<<"{a:1}">>, 1},
        {<<"{'a':1}">>, 1}, {<<"[">>, 1}, {<<"{">>, 1}, {<<"[1">>, 2}, {<<"\"abc">>, 4},
        {<<"01">>, 1}, {<<"-">>, 1}, {<<"-a">>, 1}, {<<"1.">>, 2}, {<<".5">>, 0},
        {<<"1e">>, 2}, {<<"1e+">>, 3}, {<<"+1">>, 0}, {<<"0x10">>, 1}, {<<"NaN">>, 0},
        {<<"Infinity">>, 0}, {<<"1 2">>, 2}, {<<"[]]">>, 2}, {<<"// c\n1">>, 0},
        {<<"\"\\x\"">>, 1}, {<<"\"\\u12\"">>, 1}, {<<"\"\\u12g4\"">>, 1},
        {<<"\"\\ud800\"">>, 1}, {<<"\"\\ud800\\u0041\"">>, 1}, {<<"\"\\udc00\"">>, 1},
        {<<"\"a\nb\"">>, 2}, {<<"\"\t\"">>, 1}, {<<"\"", 0, "\"">>, 1},
        {<<"\"", 255, "\"">>, 1}, {<<"\"a", 16#C0, 16#80, "\"">>, 2},
        {<<"\"", 16#ED, 16#A0, 16#80, "\"">>, 1},
        {<<16#EF, 16#BB, 16#BF, "1">>, 0},
        {<<"[1]\x00">>, 3}]].

decode_duplicate_key_test() ->
    ?assertEqual({error, {duplicate_key, <<"a">>}}, falco_json:decode(<<"{\"a\":1,\"a\":2}">>)),
    ?assertEqual({error, {duplicate_key, <<"é"/utf8>>}},
                 falco_json:decode(<<"{\"\\u00e9\":1,\"é\":2}"/utf8>>)).

decode_limits_test_() ->
    Deep = fun(N) -> <<(binary:copy(<<"[">>, N))/binary, (binary:copy(<<"]">>, N))/binary>> end,
    [?_assertMatch({ok, _}, falco_json:decode(Deep(128))),
     ?_assertEqual({error, {too_deep, 128}}, falco_json:decode(Deep(129))),
     ?_assertEqual({error, {too_deep, 7}}, falco_json:decode(<<"[{\"a\":[[1]]}]">>, #{max_depth => 3})),
     ?_assertMatch({ok, _}, falco_json:decode(<<"[{\"a\":[1]}]">>, #{max_depth => 3})),
     ?_assertEqual({error, {too_deep, 0}}, falco_json:decode(<<"[]">>, #{max_depth => 0})),
     ?_assertEqual({ok, 1}, falco_json:decode(<<"1">>, #{max_depth => 0})),
     %% A hostile depth is refused before it costs stack.
     ?_assertEqual({error, {too_deep, 128}}, falco_json:decode(binary:copy(<<"[">>, 100000))),
     ?_assertEqual({error, too_large}, falco_json:decode(<<"[1, 2]">>, #{max_size => 5})),
     ?_assertEqual({ok, [1, 2]}, falco_json:decode(<<"[1,2]">>, #{max_size => 5})),
     ?_assertEqual({ok, binary_to_integer(binary:copy(<<"9">>, 1024))},
                   falco_json:decode(binary:copy(<<"9">>, 1024))),
     ?_assertEqual({error, {number_out_of_range, 1}},
                   falco_json:decode(<<"[", (binary:copy(<<"9">>, 1025))/binary, "]">>)),
     ?_assertEqual({error, {number_out_of_range, 0}}, falco_json:decode(<<"1e400">>)),
     ?_assertEqual({error, {number_out_of_range, 0}}, falco_json:decode(<<"-1.5e99999">>))].
