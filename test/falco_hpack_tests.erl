%% EUnit tests for HPACK (falco_hpack, falco_hpack_huffman): every example
%% of RFC 7541 Appendix C, checking the decoded fields and the dynamic table
%% (entries and size) after each block, and the encoder's output against the
%% same bytes where our encoder makes the same choices; then the decoder's
%% error cases and the encoder's policy.
-module(falco_hpack_tests).
-include_lib("eunit/include/eunit.hrl").

hex(Text) ->
    binary:decode_hex(<< <<C>> || <<C>> <= iolist_to_binary(Text), C =/= $\s, C =/= $\n >>).

%% Decodes each block in turn with one context, checking fields, table and
%% table size after each step. Returns the final context.
decode_series(Ctx0, Steps) ->
    lists:foldl(fun({Block, Fields, Table, Size}, Ctx) ->
                        {ok, Got, Ctx1} = falco_hpack:decode(hex(Block), Ctx),
                        ?assertEqual(Fields, Got),
                        ?assertEqual(Table, falco_hpack:table(Ctx1)),
                        ?assertEqual(Size, falco_hpack:table_size(Ctx1)),
                        Ctx1
                end, Ctx0, Steps).

%% Encodes each field list in turn and compares with the RFC's bytes.
encode_series(Ctx0, Opts, Steps) ->
    lists:foldl(fun({Block, Fields, Table, Size}, Ctx) ->
                        {Out, Ctx1} = falco_hpack:encode(Fields, Ctx, Opts),
                        ?assertEqual(hex(Block), iolist_to_binary(Out)),
                        ?assertEqual(Table, falco_hpack:table(Ctx1)),
                        ?assertEqual(Size, falco_hpack:table_size(Ctx1)),
                        Ctx1
                end, Ctx0, Steps).

%% -- C.1 integer representation ------------------------------------------------

%% decode_integer/3 (for QPACK, RFC 9204 §4.1.1): a bound the caller
%% gives, up to 62 bits and more, where decode_integer/2 stops below 2^28.
decode_integer_bound_test_() ->
    Max62 = 16#3fffffffffffffff,
    Big = <<16#7f, 16#c0, 16#ff, 16#ff, 16#ff, 16#ff, 16#ff, 16#ff, 16#ff, 16#3f>>,
    [?_assertEqual({ok, Max62, <<"r">>}, falco_hpack:decode_integer(<<Big/binary, "r">>, 6, Max62)),
     ?_assertEqual({error, {compression_error, integer_overflow}},
                   falco_hpack:decode_integer(Big, 6, Max62 - 1)),
     ?_assertEqual({error, {compression_error, integer_overflow}}, falco_hpack:decode_integer(Big, 6)),
     ?_assertEqual({ok, 10, <<>>}, falco_hpack:decode_integer(<<2#111:3, 2#01010:5>>, 5, 10)),
     ?_assertEqual({error, {compression_error, integer_overflow}},
                   falco_hpack:decode_integer(<<2#01010:8>>, 5, 9)),
     ?_assertEqual({ok, 1337, <<>>},
                   falco_hpack:decode_integer(<<2#11111, 2#10011010, 2#00001010>>, 5, 1 bsl 62)),
     %% ten continuation octets are too many, even of zeros
     ?_assertEqual({error, {compression_error, integer_overflow}},
                   falco_hpack:decode_integer(<<31, 16#80:8, 16#80, 16#80, 16#80, 16#80, 16#80,
                                                16#80, 16#80, 16#80, 0>>, 5, 1 bsl 70)),
     ?_assertEqual({error, {compression_error, truncated}},
                   falco_hpack:decode_integer(<<31, 16#80>>, 5, Max62)),
     ?_assertEqual({error, {compression_error, truncated}}, falco_hpack:decode_integer(<<>>, 5, 1))].

c1_integers_test_() ->
    [%% C.1.1: 10 with a 5-bit prefix
     ?_assertEqual(<<2#01010>>, falco_hpack:encode_integer(10, 5)),
     ?_assertEqual({ok, 10, <<>>}, falco_hpack:decode_integer(<<2#111:3, 2#01010:5>>, 5)),
     %% C.1.2: 1337 with a 5-bit prefix
     ?_assertEqual(<<2#11111, 2#10011010, 2#00001010>>, falco_hpack:encode_integer(1337, 5)),
     ?_assertEqual({ok, 1337, <<"x">>},
                   falco_hpack:decode_integer(<<2#01011111, 2#10011010, 2#00001010, "x">>, 5)),
     %% C.1.3: 42 starting at an octet boundary
     ?_assertEqual(<<42>>, falco_hpack:encode_integer(42, 8)),
     ?_assertEqual({ok, 42, <<>>}, falco_hpack:decode_integer(<<42>>, 8)),
     %% boundaries of the prefix and of the bounds
     ?_assertEqual(<<30>>, falco_hpack:encode_integer(30, 5)),
     ?_assertEqual(<<31, 0>>, falco_hpack:encode_integer(31, 5)),
     ?_assertEqual({ok, 31, <<>>}, falco_hpack:decode_integer(<<31, 0>>, 5)),
     ?_assertEqual({ok, 31 + (1 bsl 28) - 1, <<>>},
                   falco_hpack:decode_integer(<<31, 255, 255, 255, 127>>, 5)),
     ?_assertEqual({error, {compression_error, integer_overflow}},
                   falco_hpack:decode_integer(<<31, 255, 255, 255, 255, 1>>, 5)),
     ?_assertEqual({error, {compression_error, integer_overflow}},
                   falco_hpack:decode_integer(<<31, 128, 128, 128, 128, 0>>, 5)),
     ?_assertEqual({error, {compression_error, truncated}},
                   falco_hpack:decode_integer(<<31, 154>>, 5)),
     ?_assertEqual({error, {compression_error, truncated}}, falco_hpack:decode_integer(<<>>, 5))
     | [?_assertEqual({ok, V, <<>>},
                      falco_hpack:decode_integer(falco_hpack:encode_integer(V, N), N))
        || N <- [1, 4, 5, 6, 7, 8], V <- [0, 1, 126, 127, 128, 255, 256, 16383, 16384,
                                         1 bsl 21, (1 bsl 28) - 1]]].

%% -- C.2 header field representation -------------------------------------------

c2_1_literal_with_indexing_test() ->
    decode_series(falco_hpack:new(),
                  [{"400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572",
                    [{<<"custom-key">>, <<"custom-header">>}],
                    [{<<"custom-key">>, <<"custom-header">>}], 55}]).

c2_2_literal_without_indexing_test() ->
    decode_series(falco_hpack:new(),
                  [{"040c 2f73 616d 706c 652f 7061 7468",
                    [{<<":path">>, <<"/sample/path">>}], [], 0}]).

c2_3_literal_never_indexed_test() ->
    decode_series(falco_hpack:new(),
                  [{"1008 7061 7373 776f 7264 0673 6563 7265 74",
                    [{<<"password">>, <<"secret">>}], [], 0}]).

c2_4_indexed_test() ->
    decode_series(falco_hpack:new(), [{"82", [{<<":method">>, <<"GET">>}], [], 0}]).

%% The encoder makes the same choices as C.2.1, C.2.2 (":path" is never
%% indexed by our policy) and C.2.4.
c2_encode_test() ->
    E = falco_hpack:new(),
    {B1, _} = falco_hpack:encode([{<<"custom-key">>, <<"custom-header">>}], E, #{huffman => false}),
    ?assertEqual(hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572"),
                 iolist_to_binary(B1)),
    {B2, E2} = falco_hpack:encode([{<<":path">>, <<"/sample/path">>}], E, #{huffman => false}),
    ?assertEqual(hex("040c 2f73 616d 706c 652f 7061 7468"), iolist_to_binary(B2)),
    ?assertEqual([], falco_hpack:table(E2)),
    {B4, _} = falco_hpack:encode([{<<":method">>, <<"GET">>}], E),
    ?assertEqual(<<16#82>>, iolist_to_binary(B4)).

%% -- C.3 / C.4 requests --------------------------------------------------------

-define(AUTH, {<<":authority">>, <<"www.example.com">>}).
-define(NOCACHE, {<<"cache-control">>, <<"no-cache">>}).
-define(CUSTOM, {<<"custom-key">>, <<"custom-value">>}).

requests(Blocks) ->
    [B1, B2, B3] = Blocks,
    Get = [{<<":method">>, <<"GET">>}, {<<":scheme">>, <<"http">>}, {<<":path">>, <<"/">>}],
    [{B1, Get ++ [?AUTH], [?AUTH], 57},
     {B2, Get ++ [?AUTH, ?NOCACHE], [?NOCACHE, ?AUTH], 110},
     {B3, [{<<":method">>, <<"GET">>}, {<<":scheme">>, <<"https">>},
           {<<":path">>, <<"/index.html">>}, ?AUTH, ?CUSTOM],
      [?CUSTOM, ?NOCACHE, ?AUTH], 164}].

c3_requests() ->
    requests(["8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
              "8286 84be 5808 6e6f 2d63 6163 6865",
              "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65"]).

c4_requests() ->
    requests(["8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
              "8286 84be 5886 a8eb 1064 9cbf",
              "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf"]).

c3_requests_decode_test() ->
    decode_series(falco_hpack:new(), c3_requests()).

c3_requests_encode_test() ->
    encode_series(falco_hpack:new(), #{huffman => false}, c3_requests()).

c4_requests_decode_test() ->
    decode_series(falco_hpack:new(), c4_requests()).

c4_requests_encode_test() ->
    encode_series(falco_hpack:new(), #{}, c4_requests()).

%% -- C.5 / C.6 responses, table size 256 ---------------------------------------

-define(S302, {<<":status">>, <<"302">>}).
-define(S307, {<<":status">>, <<"307">>}).
-define(PRIVATE, {<<"cache-control">>, <<"private">>}).
-define(DATE1, {<<"date">>, <<"Mon, 21 Oct 2013 20:13:21 GMT">>}).
-define(DATE2, {<<"date">>, <<"Mon, 21 Oct 2013 20:13:22 GMT">>}).
-define(LOCATION, {<<"location">>, <<"https://www.example.com">>}).
-define(GZIP, {<<"content-encoding">>, <<"gzip">>}).
-define(COOKIE, {<<"set-cookie">>, <<"foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1">>}).

responses(Blocks) ->
    [B1, B2, B3] = Blocks,
    [{B1, [?S302, ?PRIVATE, ?DATE1, ?LOCATION], [?LOCATION, ?DATE1, ?PRIVATE, ?S302], 222},
     {B2, [?S307, ?PRIVATE, ?DATE1, ?LOCATION], [?S307, ?LOCATION, ?DATE1, ?PRIVATE], 222},
     {B3, [{<<":status">>, <<"200">>}, ?PRIVATE, ?DATE2, ?LOCATION, ?GZIP, ?COOKIE],
      [?COOKIE, ?GZIP, ?DATE2], 215}].

c5_responses() ->
    responses(["4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133
                2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70
                6c65 2e63 6f6d",
               "4803 3330 37c1 c0bf",
               "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d
                54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049
                5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e
                3d31"]).

c6_responses() ->
    responses(["4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
                2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
               "4883 640e ffc1 c0bf",
               "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab
                77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
                9587 3160 65c0 03ed 4ee5 b106 3d50 07"]).

c5_responses_decode_test() ->
    decode_series(falco_hpack:new(256), c5_responses()).

c6_responses_decode_test() ->
    decode_series(falco_hpack:new(256), c6_responses()).

%% Our encoder matches the first two responses byte for byte; in the third
%% it sends set-cookie never indexed (§7.1.3) where the RFC indexes it, so
%% the table ends without it.
c5_c6_responses_encode_test_() ->
    [fun() -> responses_encode(Opts, Steps, Tail) end
     || {Opts, Steps, Tail} <- [{#{huffman => false}, c5_responses(),
                                 "1f28 38 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049
                                  5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b
                                  2076 6572 7369 6f6e 3d31"},
                                {#{}, c6_responses(),
                                 "1f28 ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36
                                  72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07"}]].

responses_encode(Opts, [S1, S2, {B3, Fields3, _, _}], CookieTail) ->
    E2 = encode_series(falco_hpack:new(256), Opts, [S1, S2]),
    {Out, E3} = falco_hpack:encode(Fields3, E2, Opts),
    Bin = iolist_to_binary(Out),
    Cookie = hex(CookieTail),
    Head = binary:part(hex(B3), 0, byte_size(Bin) - byte_size(Cookie)),
    ?assertEqual(<<Head/binary, Cookie/binary>>, Bin),
    ?assertEqual([?GZIP, ?DATE2, ?S307, ?LOCATION], falco_hpack:table(E3)),
    {ok, Fields3, D3} = falco_hpack:decode(Bin, decode_series(falco_hpack:new(256), [S1, S2])),
    ?assertEqual(falco_hpack:table(E3), falco_hpack:table(D3)).

%% -- Huffman -------------------------------------------------------------------

huffman_vectors() ->
    [{"f1e3 c2e5 f23a 6ba0 ab90 f4ff", <<"www.example.com">>},
     {"a8eb 1064 9cbf", <<"no-cache">>},
     {"25a8 49e9 5ba9 7d7f", <<"custom-key">>},
     {"25a8 49e9 5bb8 e8b4 bf", <<"custom-value">>},
     {"6402", <<"302">>},
     {"aec3 771a 4b", <<"private">>},
     {"d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff",
      <<"Mon, 21 Oct 2013 20:13:21 GMT">>},
     {"9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3", <<"https://www.example.com">>},
     {"9bd9 ab", <<"gzip">>},
     {"94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160
       65c0 03ed 4ee5 b106 3d50 07", element(2, ?COOKIE)}].

huffman_vectors_test_() ->
    lists:append([[?_assertEqual({ok, Text}, falco_hpack_huffman:decode(hex(Hex))),
                   ?_assertEqual(hex(Hex), falco_hpack_huffman:encode(Text)),
                   ?_assertEqual(byte_size(hex(Hex)), falco_hpack_huffman:encoded_size(Text))]
                  || {Hex, Text} <- huffman_vectors()]).

huffman_all_octets_test() ->
    All = list_to_binary(lists:seq(0, 255) ++ lists:seq(255, 0, -1)),
    ?assertEqual({ok, All}, falco_hpack_huffman:decode(falco_hpack_huffman:encode(All))),
    ?assertEqual({ok, <<>>}, falco_hpack_huffman:decode(<<>>)),
    ?assertEqual(<<>>, falco_hpack_huffman:encode(<<>>)).

%% The code is complete (Kraft sum exactly 1): every bit string is a code
%% word or a prefix of one, so only EOS and padding can make input invalid.
%% Eight copies of a symbol take exactly 8 times its code length, unpadded.
huffman_lengths_test() ->
    Lens = [bit_size(falco_hpack_huffman:encode(binary:copy(<<B>>, 8))) div 8
            || B <- lists:seq(0, 255)],
    ?assertEqual(5, lists:min(Lens)),
    ?assertEqual(30, lists:max(Lens)),
    ?assertEqual(1 bsl 30, lists:sum([1 bsl (30 - L) || L <- Lens]) + 1).

huffman_errors_test_() ->
    Err = {error, huffman},
    [%% EOS (30 ones) inside the string
     ?_assertEqual(Err, falco_hpack_huffman:decode(<<16#ff, 16#ff, 16#ff, 16#ff>>)),
     ?_assertEqual(Err, falco_hpack_huffman:decode(<<16#1f, 16#ff, 16#ff, 16#ff, 16#ff>>)),
     %% "a" is 00011; padding must be ones and at most 7 bits
     ?_assertEqual({ok, <<"a">>}, falco_hpack_huffman:decode(<<2#00011111>>)),
     ?_assertEqual(Err, falco_hpack_huffman:decode(<<2#00011110>>)),
     ?_assertEqual(Err, falco_hpack_huffman:decode(<<2#00011011>>)),
     ?_assertEqual(Err, falco_hpack_huffman:decode(<<2#00011111, 16#ff>>)),
     %% 8 bits of padding and nothing else
     ?_assertEqual(Err, falco_hpack_huffman:decode(<<16#ff>>)),
     %% "0" is 00000: the last three zero bits are not padding
     ?_assertEqual(Err, falco_hpack_huffman:decode(<<0>>)),
     %% a code cut short: '\\' is 19 bits, 11111111 11111110 000
     ?_assertEqual(Err, falco_hpack_huffman:decode(<<16#ff, 16#fe>>)),
     %% a string seen by a fuzzer elsewhere
     ?_assertEqual(Err, falco_hpack_huffman:decode(<<"00", 16#91, 16#ff, 16#ff, 16#ff, 16#ff,
                                                    16#c8>>))].

%% -- decoder errors and limits -------------------------------------------------

err(Reason) ->
    {error, {compression_error, Reason}}.

decode_errors_test_() ->
    New = falco_hpack:new(),
    D = fun(Bin) -> falco_hpack:decode(Bin, New) end,
    [%% index 0 (§6.1), past the static table with an empty dynamic table
     ?_assertEqual(err(bad_index), D(<<16#80>>)),
     ?_assertEqual(err(bad_index), D(<<16#be>>)),
     ?_assertEqual(err(bad_index), D(<<16#ff, 16#ff, 16#ff, 16#ff, 16#7f>>)),
     %% literal with a name index past the table, in each representation
     ?_assertEqual(err(bad_index), D(<<16#7e, 1, $a>>)),
     ?_assertEqual(err(bad_index), D(<<16#0f, 16#2f, 1, $a>>)),
     ?_assertEqual(err(bad_index), D(<<16#1f, 16#2f, 1, $a>>)),
     %% integers
     ?_assertEqual(err(truncated), D(<<16#ff>>)),
     ?_assertEqual(err(truncated), D(<<16#ff, 16#80>>)),
     ?_assertEqual(err(integer_overflow), D(<<16#ff, 16#80, 16#80, 16#80, 16#80, 16#01>>)),
     ?_assertEqual(err(integer_overflow), D(<<16#7f, 16#80, 16#80, 16#80, 16#80>>)),
     %% strings
     ?_assertEqual(err(truncated), D(<<16#40>>)),
     ?_assertEqual(err(truncated), D(<<16#40, 1, $a>>)),
     ?_assertEqual(err(truncated), D(<<16#40, 5, "ab">>)),
     ?_assertEqual(err(truncated), D(<<16#41, 5, "ab">>)),
     ?_assertEqual(err(truncated), D(<<16#00, 16#7f>>)),
     ?_assertEqual(err(truncated), D(<<16#00, 16#7f, 16#ff, 16#ff, 16#ff, 16#7f, "abc">>)),
     ?_assertEqual(err(integer_overflow), D(<<16#00, 16#7f, 16#ff, 16#ff, 16#ff, 16#ff, 1>>)),
     ?_assertEqual(err(truncated), D(<<16#82, 16#10, 3, "ab">>)),
     %% Huffman: EOS in a name, bad padding in a value
     ?_assertEqual(err(huffman), D(<<16#00, 16#84, 16#ff, 16#ff, 16#ff, 16#ff, 0>>)),
     ?_assertEqual(err(huffman), D(<<16#40, 1, $a, 16#81, 2#00011110>>)),
     ?_assertEqual(err(huffman), D(<<16#10, 16#81, 16#ff, 0>>)),
     %% size updates: above the setting, after a field (§4.2, §6.3)
     ?_assertEqual(err(size_update_too_large), D(<<16#3f, 16#e2, 16#1f>>)),
     ?_assertEqual(err(size_update_not_at_start), D(<<16#82, 16#20>>)),
     ?_assertEqual(err(size_update_not_at_start), D(<<16#20, 16#82, 16#3f, 16#e1, 16#1f>>)),
     ?_assertEqual(err(truncated), D(<<16#3f>>)),
     %% an error after valid fields is still an error
     ?_assertEqual(err(bad_index), D(<<16#82, 16#86, 16#c0>>))].

size_update_test() ->
    New = falco_hpack:new(),
    %% 4096 exactly is allowed, two updates in a row too
    {ok, [], C1} = falco_hpack:decode(<<16#3f, 16#e1, 16#1f>>, New),
    ?assertEqual(4096, falco_hpack:max_table_size(C1)),
    {ok, [{<<":method">>, <<"GET">>}], C2} = falco_hpack:decode(<<16#20, 16#3f, 16#11, 16#82>>, C1),
    ?assertEqual(48, falco_hpack:max_table_size(C2)),
    %% an update evicts: fill with one 42-octet entry then shrink to 41
    {ok, _, C3} = falco_hpack:decode(<<16#40, 1, $a, 9, "123456789">>, C2),
    ?assertEqual([{<<"a">>, <<"123456789">>}], falco_hpack:table(C3)),
    ?assertEqual(42, falco_hpack:table_size(C3)),
    {ok, [], C4} = falco_hpack:decode(<<16#3f, 16#0a>>, C3),
    ?assertEqual([], falco_hpack:table(C4)),
    ?assertEqual(0, falco_hpack:table_size(C4)),
    ?assertEqual(err(bad_index), falco_hpack:decode(<<16#be>>, C4)).

%% §4.2: once our lowered setting is acknowledged, the next block must start
%% with an update at or below it.
lowered_setting_test() ->
    {ok, _, C0} = falco_hpack:decode(hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d
                                          6865 6164 6572"), falco_hpack:new()),
    C1 = falco_hpack:set_max_table_size(100, C0),
    ?assertEqual(err(size_update_missing), falco_hpack:decode(<<16#82>>, C1)),
    ?assertEqual(err(size_update_missing), falco_hpack:decode(<<>>, C1)),
    ?assertEqual(err(size_update_too_large), falco_hpack:decode(<<16#3f, 16#46, 16#82>>, C1)),
    {ok, [{<<"custom-key">>, <<"custom-header">>}], C2} =
        falco_hpack:decode(<<16#3f, 16#45, 16#be>>, C1),
    ?assertEqual(100, falco_hpack:max_table_size(C2)),
    %% the requirement is met; later blocks need no update
    ?assertMatch({ok, [_], _}, falco_hpack:decode(<<16#be>>, C2)),
    %% raising the setting requires nothing, and allows a larger update
    C3 = falco_hpack:set_max_table_size(8192, C2),
    ?assertMatch({ok, [_], _}, falco_hpack:decode(<<16#be>>, C3)),
    {ok, [], C4} = falco_hpack:decode(<<16#3f, 16#e1, 16#3f>>, C3),
    ?assertEqual(8192, falco_hpack:max_table_size(C4)).

%% §4.4: an entry larger than the table empties it and is not added.
oversized_entry_test() ->
    {ok, _, C1} = falco_hpack:decode(<<16#40, 1, $a, 1, $b>>, falco_hpack:new(64)),
    ?assertEqual(34, falco_hpack:table_size(C1)),
    Big = binary:copy(<<"x">>, 40),
    {ok, [{<<"a">>, Big}], C2} = falco_hpack:decode(<<16#40, 1, $a, 40, Big/binary>>, C1),
    ?assertEqual([], falco_hpack:table(C2)),
    ?assertEqual(0, falco_hpack:table_size(C2)),
    ?assertEqual(err(bad_index), falco_hpack:decode(<<16#be>>, C2)),
    %% and insertion goes on normally afterwards
    {ok, _, C3} = falco_hpack:decode(<<16#40, 1, $c, 1, $d>>, C2),
    ?assertEqual({ok, [{<<"c">>, <<"d">>}], C3}, falco_hpack:decode(<<16#be>>, C3)).

%% Entries in the table do not keep the block they came in alive.
table_copies_strings_test() ->
    Block = <<16#40, 3, "abc", 3, "def", 16#00, 3, "ghi", 3, "jkl">>,
    {ok, [{N1, V1}, {N2, V2}], C} = falco_hpack:decode(Block, falco_hpack:new()),
    [{TN, TV}] = falco_hpack:table(C),
    ?assertEqual({<<"abc">>, <<"def">>}, {N1, V1}),
    ?assertEqual(3, binary:referenced_byte_size(TN)),
    ?assertEqual(3, binary:referenced_byte_size(TV)),
    %% fields not indexed may share the block
    ?assertEqual({<<"ghi">>, <<"jkl">>}, {N2, V2}).

%% RFC 9113 §6.5.2: name + value + 32 per field.
header_list_size_test() ->
    Block = hex("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d"),
    %% 42 + 43 + 38 + 57 = 180
    ?assertMatch({ok, [_, _, _, _], _},
                 falco_hpack:decode(Block, falco_hpack:new(), #{max_header_list_size => 180})),
    {error, {header_list_too_large, C}} =
        falco_hpack:decode(Block, falco_hpack:new(), #{max_header_list_size => 179}),
    %% the context is still in step with the peer: the literal after the
    %% limit was reached went into the table
    ?assertEqual([?AUTH], falco_hpack:table(C)),
    {error, {header_list_too_large, C2}} =
        falco_hpack:decode(Block, falco_hpack:new(), #{max_header_list_size => 50}),
    ?assertEqual([?AUTH], falco_hpack:table(C2)),
    %% a compression error after the limit still wins (the connection dies)
    ?assertEqual(err(bad_index),
                 falco_hpack:decode(<<Block/binary, 16#80>>, falco_hpack:new(),
                                    #{max_header_list_size => 50})),
    ?assertMatch({ok, [], _}, falco_hpack:decode(<<>>, falco_hpack:new(),
                                                 #{max_header_list_size => 0})).

%% An HPACK bomb: one large entry referenced many times. With the limit the
%% decoder stops keeping fields at the first one over it.
hpack_bomb_test() ->
    Big = binary:copy(<<"x">>, 4000),
    {ok, _, C} = falco_hpack:decode(<<16#40, 1, $a, 16#7f, 16#a1, 16#1e, Big/binary>>,
                                    falco_hpack:new()),
    ?assertEqual([{<<"a">>, Big}], falco_hpack:table(C)),
    Refs = binary:copy(<<16#be>>, 10000),
    ?assertMatch({error, {header_list_too_large, _}},
                 falco_hpack:decode(Refs, C, #{max_header_list_size => 65536})),
    {ok, L, _} = falco_hpack:decode(binary:copy(<<16#be>>, 16), C),
    ?assertEqual(16, length(L)).

%% Indexes of 127 and up take a continuation octet, both ways.
large_index_test() ->
    Fields = [{<<"k", (integer_to_binary(I))/binary>>, <<"v">>} || I <- lists:seq(0, 69)],
    {Block, E} = falco_hpack:encode(Fields, falco_hpack:new()),
    {ok, Fields, D} = falco_hpack:decode(iolist_to_binary(Block), falco_hpack:new()),
    %% index 127 = dynamic entry 66 = the 66th newest = k4
    ?assertEqual({ok, [{<<"k4">>, <<"v">>}], D}, falco_hpack:decode(<<16#ff, 0>>, D)),
    ?assertEqual({ok, [{<<"k0">>, <<"v">>}], D}, falco_hpack:decode(<<16#ff, 4>>, D)),
    ?assertEqual(err(bad_index), falco_hpack:decode(<<16#ff, 5>>, D)),
    {Again, E} = falco_hpack:encode([{<<"k4">>, <<"v">>}, {<<"k0">>, <<"v">>}], E),
    ?assertEqual(<<16#ff, 0, 16#ff, 4>>, iolist_to_binary(Again)).

%% Names come back as sent: the h2 layer rejects uppercase.
uppercase_names_kept_test() ->
    ?assertMatch({ok, [{<<"Foo">>, <<"bar">>}], _},
                 falco_hpack:decode(<<16#00, 3, "Foo", 3, "bar">>, falco_hpack:new())).

%% -- encoder policy ------------------------------------------------------------

enc(Fields, Ctx) ->
    enc(Fields, Ctx, #{huffman => false}).

enc(Fields, Ctx, Opts) ->
    {Out, Ctx1} = falco_hpack:encode(Fields, Ctx, Opts),
    {iolist_to_binary(Out), Ctx1}.

repeat_is_indexed_test() ->
    F = [{<<"x-custom">>, <<"value">>}],
    {B1, E1} = enc(F, falco_hpack:new()),
    ?assertEqual(<<16#40, 8, "x-custom", 5, "value">>, B1),
    {B2, E2} = enc(F, E1),
    ?assertEqual(<<16#be>>, B2),
    %% same name, new value: the dynamic entry's name is used
    {B3, E3} = enc([{<<"x-custom">>, <<"other">>}], E2),
    ?assertEqual(<<16#7e, 5, "other">>, B3),
    ?assertEqual([{<<"x-custom">>, <<"other">>}, {<<"x-custom">>, <<"value">>}],
                 falco_hpack:table(E3)),
    %% the older entry is now index 63
    {B4, _} = enc(F, E3),
    ?assertEqual(<<16#bf>>, B4).

static_matches_test_() ->
    New = falco_hpack:new(),
    [?_assertEqual({<<16#88>>, New}, enc([{<<":status">>, <<"200">>}], New)),
     ?_assertEqual({<<16#90>>, New}, enc([{<<"accept-encoding">>, <<"gzip, deflate">>}], New)),
     ?_assertEqual({<<16#81>>, New}, enc([{<<":authority">>, <<>>}], New)),
     ?_assertEqual({<<16#bd>>, New}, enc([{<<"www-authenticate">>, <<>>}], New)),
     ?_assertEqual(<<16#48, 3, "302">>, element(1, enc([{<<":status">>, <<"302">>}], New))),
     ?_assertEqual(<<16#42, 5, "PATCH">>, element(1, enc([{<<":method">>, <<"PATCH">>}], New))),
     ?_assertEqual(<<16#46, 3, "ftp">>, element(1, enc([{<<":scheme">>, <<"ftp">>}], New))),
     ?_assertEqual(<<16#50, 2, "br">>, element(1, enc([{<<"accept-encoding">>, <<"br">>}], New)))].

%% Every static entry is found by full match, and its name by name.
static_table_test() ->
    New = falco_hpack:new(),
    lists:foreach(
      fun(I) ->
              {ok, [{N, V}], _} = falco_hpack:decode(<<1:1, I:7>>, New),
              case lists:member(N, [<<"authorization">>, <<"proxy-authorization">>,
                                    <<"set-cookie">>, <<"cookie">>]) of
                  false -> ?assertEqual({<<1:1, I:7>>, New}, enc([{N, V}], New));
                  true -> ?assertEqual({<<16#1f, (I - 15), 0>>, New}, enc([{N, V}], New))
              end,
              {Lit, _} = enc([{N, <<"zz-not-static">>}], New),
              {ok, [{N, <<"zz-not-static">>}], _} = falco_hpack:decode(Lit, New),
              %% a name match uses the first entry with that name
              First = hd([J || J <- lists:seq(1, 61),
                               element(1, hd(element(2, falco_hpack:decode(<<1:1, J:7>>, New))))
                                   =:= N]),
              ?assert(binary:match(Lit, <<"zz-not-static">>) =/= nomatch),
              ?assertEqual(First, name_index_of(Lit))
      end, lists:seq(1, 61)).

name_index_of(<<2#01:2, I:6, _/binary>>) -> I;
name_index_of(<<2#0000:4, 15:4, I, _/binary>>) -> 15 + I;
name_index_of(<<2#0000:4, I:4, _/binary>>) -> I;
name_index_of(<<2#0001:4, 15:4, I, _/binary>>) -> 15 + I;
name_index_of(<<2#0001:4, I:4, _/binary>>) -> I.

sensitive_fields_test_() ->
    New = falco_hpack:new(),
    Never = fun(Fields, Opts) ->
                    {Bin, E} = enc(Fields, New, Opts),
                    {ok, Fields, _} = falco_hpack:decode(Bin, New),
                    {Bin, falco_hpack:table(E)}
            end,
    [%% authorization: static name 23 = 15 + 8, never indexed
     ?_assertEqual({<<16#1f, 8, 6, "Basic ">>, []},
                   Never([{<<"authorization">>, <<"Basic ">>}], #{huffman => false})),
     ?_assertEqual({<<16#1f, 34, 3, "abc">>, []},
                   Never([{<<"proxy-authorization">>, <<"abc">>}], #{huffman => false})),
     ?_assertEqual({<<16#1f, 40, 3, "a=b">>, []},
                   Never([{<<"set-cookie">>, <<"a=b">>}], #{huffman => false})),
     %% a short cookie is never indexed, a long one is
     ?_assertEqual({<<16#1f, 17, 3, "a=b">>, []},
                   Never([{<<"cookie">>, <<"a=b">>}], #{huffman => false})),
     ?_assertMatch({<<16#60, _/binary>>, [{<<"cookie">>, _}]},
                   Never([{<<"cookie">>, <<"session=0123456789abcdef">>}], #{huffman => false})),
     %% names given in the option, with a literal name
     ?_assertEqual({<<16#10, 5, "x-key", 1, "1">>, []},
                   Never([{<<"x-key">>, <<"1">>}], #{huffman => false, sensitive => [<<"x-key">>]})),
     %% never indexed even when the field is in the table
     fun() ->
             F = [{<<"x-key">>, <<"1">>}],
             {_, E1} = enc(F, New),
             {Bin, E2} = enc(F, E1, #{huffman => false, sensitive => [<<"x-key">>]}),
             ?assertEqual(<<16#1f, 16#2f, 1, "1">>, Bin),
             ?assertEqual(falco_hpack:table(E1), falco_hpack:table(E2))
     end].

not_indexed_test_() ->
    New = falco_hpack:new(),
    [%% content-length: static name 28 = 15 + 13, without indexing
     ?_assertEqual({<<16#0f, 13, 2, "42">>, New}, enc([{<<"content-length">>, <<"42">>}], New)),
     ?_assertEqual({<<16#04, 4, "/a/b">>, New}, enc([{<<":path">>, <<"/a/b">>}], New)),
     ?_assertEqual({<<16#0f, 19, 3, "\"x\"">>, New}, enc([{<<"etag">>, <<"\"x\"">>}], New)),
     %% an entry over three quarters of the table is not indexed
     fun() ->
             Small = falco_hpack:new(100),
             {<<16#00, _/binary>>, S1} = enc([{<<"x-big">>, binary:copy(<<"v">>, 39)}], Small),
             ?assertEqual([], falco_hpack:table(S1)),
             {<<16#40, _/binary>>, S2} = enc([{<<"x-big">>, binary:copy(<<"v">>, 38)}], Small),
             ?assertEqual(75, falco_hpack:table_size(S2))
     end,
     %% a zero-size table indexes nothing
     ?_assertMatch({<<16#00, _/binary>>, _}, enc([{<<"a">>, <<"b">>}], falco_hpack:new(0)))].

huffman_when_shorter_test() ->
    New = falco_hpack:new(),
    %% "www.example.com" is 12 octets coded, 15 raw
    %% "x-h" is 19 bits: 3 octets coded, as many as raw, so coded
    {B1, _} = enc([{<<"x-h">>, <<"www.example.com">>}], New, #{}),
    <<16#40, 1:1, 3:7, Name:3/binary, 1:1, 12:7, Coded:12/binary>> = B1,
    ?assertEqual({ok, <<"x-h">>}, falco_hpack_huffman:decode(Name)),
    ?assertEqual({ok, <<"www.example.com">>}, falco_hpack_huffman:decode(Coded)),
    %% control octets are longer coded, so they go raw
    {B2, _} = enc([{<<"x-h">>, <<1, 2, 3>>}], New, #{}),
    ?assertMatch(<<16#40, 1:1, 3:7, _:3/binary, 0:1, 3:7, 1, 2, 3>>, B2),
    %% so does a name with uppercase or digits that code longer
    {B4, _} = enc([{<<"X{">>, <<"1">>}], New, #{}),
    ?assertMatch(<<16#40, 0:1, 2:7, "X{", 1:1, 1:7, _>>, B4),
    %% huffman => false never codes
    {B3, _} = enc([{<<"x-h">>, <<"www.example.com">>}], New, #{huffman => false}),
    ?assertEqual(<<16#40, 3, "x-h", 15, "www.example.com">>, B3).

%% Long strings need a multi-octet length.
long_value_test() ->
    V = binary:copy(<<1>>, 300),
    {B, E} = enc([{<<"x-long">>, V}], falco_hpack:new(), #{}),
    ?assertMatch(<<16#40, 1:1, 5:7, _:5/binary, 16#7f, 173, 1, 1, _/binary>>, B),
    ?assertEqual(1 + 6 + 3 + 300, byte_size(B)),
    {ok, [{<<"x-long">>, V}], D} = falco_hpack:decode(B, falco_hpack:new()),
    ?assertEqual(falco_hpack:table(E), falco_hpack:table(D)).

%% §4.2 / §6.3: the encoder signals a new size at the start of the next
%% block; several changes between blocks give the smallest, then the last.
encoder_size_update_test() ->
    F = [{<<"x-a">>, <<"1">>}],
    {_, E1} = enc(F, falco_hpack:new()),
    ?assertEqual(36, falco_hpack:table_size(E1)),
    %% same size: nothing to say
    E1 = falco_hpack:encoder_set_max_table_size(4096, E1),
    %% more than our cap (4096): nothing either
    E1 = falco_hpack:encoder_set_max_table_size(65536, E1),
    %% C.1.1: 10 with a 5-bit prefix; the table is emptied at once
    E2 = falco_hpack:encoder_set_max_table_size(10, E1),
    ?assertEqual([], falco_hpack:table(E2)),
    {B2, E3} = enc([], E2),
    ?assertEqual(<<16#2a>>, B2),
    %% only once
    ?assertEqual({<<>>, E3}, enc([], E3)),
    %% C.1.2: 1337, after a drop to 0
    E4 = falco_hpack:encoder_set_max_table_size(1337,
                                                falco_hpack:encoder_set_max_table_size(0, E3)),
    {B4, E5} = enc(F, E4),
    ?assertEqual(<<16#20, 16#3f, 16#9a, 16#0a, 16#40, 3, "x-a", 1, "1">>, B4),
    ?assertEqual(1337, falco_hpack:max_table_size(E5)),
    %% the decoder follows
    D0 = falco_hpack:set_max_table_size(4096, falco_hpack:new()),
    {ok, [], D1} = falco_hpack:decode(B2, D0),
    {ok, F, D2} = falco_hpack:decode(B4, D1),
    ?assertEqual(falco_hpack:table(E5), falco_hpack:table(D2)),
    ?assertEqual(1337, falco_hpack:max_table_size(D2)),
    %% a smaller then larger change: min first, then final
    E6 = falco_hpack:encoder_set_max_table_size(
           2000, falco_hpack:encoder_set_max_table_size(100, E5)),
    {B6, _} = enc([], E6),
    ?assertEqual(<<16#3f, 16#45, 16#3f, 16#b1, 16#0f>>, B6),
    %% a larger then smaller change: only the final
    E7 = falco_hpack:encoder_set_max_table_size(
           100, falco_hpack:encoder_set_max_table_size(2000, E5)),
    {B7, _} = enc([], E7),
    ?assertEqual(<<16#3f, 16#45>>, B7).

%% Eviction in the encoder keeps its lookup maps right: an evicted field is
%% sent as a literal again, a duplicate newer entry is still found.
encoder_eviction_test() ->
    E0 = falco_hpack:new(80),
    A = {<<"x-a">>, <<"1">>},
    B = {<<"x-b">>, <<"2">>},
    {_, E1} = enc([A, B], E0),
    ?assertEqual([B, A], falco_hpack:table(E1)),
    {_, E2} = enc([{<<"x-c">>, <<"3">>}], E1),
    ?assertEqual([{<<"x-c">>, <<"3">>}, B], falco_hpack:table(E2)),
    {BinA, E3} = enc([A], E2),
    ?assertEqual(<<16#40, 3, "x-a", 1, "1">>, BinA),
    ?assertEqual([A, {<<"x-c">>, <<"3">>}], falco_hpack:table(E3)),
    %% B was evicted: its name is no longer in the table either
    {BinB, _} = enc([B], E3),
    ?assertEqual(<<16#40, 3, "x-b", 1, "2">>, BinB),
    ?assertEqual({<<16#bf>>, E3}, enc([{<<"x-c">>, <<"3">>}], E3)).

new_test_() ->
    [?_assertEqual(4096, falco_hpack:max_table_size(falco_hpack:new())),
     ?_assertEqual(0, falco_hpack:table_size(falco_hpack:new())),
     ?_assertEqual(256, falco_hpack:max_table_size(falco_hpack:new(256))),
     ?_assertError(function_clause, falco_hpack:new(-1))].

%% -- the Huffman decoding table, built on first use ---------------------------

-define(HUFF_KEY, {falco_hpack_huffman, decode_table}).

%% The first decode builds the table in a process of its own and stores
%% it: the decoding process's heap does not grow by the build's 2.7 MB,
%% and twenty processes decoding at once all get the right answer and one
%% stored table.
huffman_table_built_apart_test() ->
    _ = persistent_term:erase(?HUFF_KEY),
    Coded = falco_hpack_huffman:encode(<<"www.example.com">>),
    Self = self(),
    Pids = [spawn_link(fun() ->
                               R = falco_hpack_huffman:decode(Coded),
                               {memory, M} = process_info(self(), memory),
                               Self ! {self(), R, M}
                       end) || _ <- lists:seq(1, 20)],
    Results = [receive {P, R, M} -> {R, M} after 10000 -> timeout end || P <- Pids],
    ?assertEqual(lists:duplicate(20, {ok, <<"www.example.com">>}), [R || {R, _} <- Results]),
    ?assert(lists:all(fun({_, M}) -> M < 200000 end, Results)),
    ?assertMatch({_, _}, persistent_term:get(?HUFF_KEY, undefined)),
    ?assertEqual(undefined, whereis(falco_hpack_huffman_builder)).

%% A builder that never ends (here a process squatting on the builder's
%% name) costs a decode its deadline, not forever: after 5 s the caller
%% builds the table itself.
huffman_table_builder_deadline_test_() ->
    {timeout, 30,
     fun() ->
             _ = persistent_term:erase(?HUFF_KEY),
             Squat = spawn(fun() -> receive stop -> ok end end),
             true = register(falco_hpack_huffman_builder, Squat),
             T0 = erlang:monotonic_time(millisecond),
             R = falco_hpack_huffman:decode(falco_hpack_huffman:encode(<<"no-cache">>)),
             Took = erlang:monotonic_time(millisecond) - T0,
             Squat ! stop,
             ?assertEqual({ok, <<"no-cache">>}, R),
             ?assert(Took >= 5000 andalso Took < 15000),
             ?assertMatch({_, _}, persistent_term:get(?HUFF_KEY, undefined))
     end}.
