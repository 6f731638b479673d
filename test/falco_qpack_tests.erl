%% EUnit tests for QPACK at capacity 0 (falco_qpack, falco_qpack_static):
%% the static table entry by entry against RFC 9204 Appendix A; the
%% examples of Appendix B where they apply at capacity 0 (B.1 decodes, the
%% sections of B.2 and B.4 refer to the dynamic table and fail, the
%% instructions of B.2 to B.5 parse, and on our encoder stream are
%% errors); h3spec's QPACK checks with their codes (the study's §7); the
%% decoded-size bound (RFC 9114 §4.2.2); the encoder's choices.
-module(falco_qpack_tests).
-include_lib("eunit/include/eunit.hrl").

-define(Q, falco_qpack).

hex(Text) ->
    binary:decode_hex(<< <<C>> || <<C>> <= iolist_to_binary(Text), C =/= $\s, C =/= $\n >>).

%% -- Appendix A ---------------------------------------------------------------------

%% RFC 9204 Appendix A as printed (index, name, value), one line each.
appendix_a() ->
    <<"0 :authority\n1 :path /\n2 age 0\n3 content-disposition\n4 content-length 0\n"
      "5 cookie\n6 date\n7 etag\n8 if-modified-since\n9 if-none-match\n10 last-modified\n"
      "11 link\n12 location\n13 referer\n14 set-cookie\n15 :method CONNECT\n"
      "16 :method DELETE\n17 :method GET\n18 :method HEAD\n19 :method OPTIONS\n"
      "20 :method POST\n21 :method PUT\n22 :scheme http\n23 :scheme https\n"
      "24 :status 103\n25 :status 200\n26 :status 304\n27 :status 404\n28 :status 503\n"
      "29 accept */*\n30 accept application/dns-message\n31 accept-encoding gzip, deflate, br\n"
      "32 accept-ranges bytes\n33 access-control-allow-headers cache-control\n"
      "34 access-control-allow-headers content-type\n35 access-control-allow-origin *\n"
      "36 cache-control max-age=0\n37 cache-control max-age=2592000\n"
      "38 cache-control max-age=604800\n39 cache-control no-cache\n"
      "40 cache-control no-store\n41 cache-control public, max-age=31536000\n"
      "42 content-encoding br\n43 content-encoding gzip\n"
      "44 content-type application/dns-message\n45 content-type application/javascript\n"
      "46 content-type application/json\n47 content-type application/x-www-form-urlencoded\n"
      "48 content-type image/gif\n49 content-type image/jpeg\n50 content-type image/png\n"
      "51 content-type text/css\n52 content-type text/html; charset=utf-8\n"
      "53 content-type text/plain\n54 content-type text/plain;charset=utf-8\n"
      "55 range bytes=0-\n56 strict-transport-security max-age=31536000\n"
      "57 strict-transport-security max-age=31536000; includesubdomains\n"
      "58 strict-transport-security max-age=31536000; includesubdomains; preload\n"
      "59 vary accept-encoding\n60 vary origin\n61 x-content-type-options nosniff\n"
      "62 x-xss-protection 1; mode=block\n63 :status 100\n64 :status 204\n65 :status 206\n"
      "66 :status 302\n67 :status 400\n68 :status 403\n69 :status 421\n70 :status 425\n"
      "71 :status 500\n72 accept-language\n73 access-control-allow-credentials FALSE\n"
      "74 access-control-allow-credentials TRUE\n75 access-control-allow-headers *\n"
      "76 access-control-allow-methods get\n"
      "77 access-control-allow-methods get, post, options\n"
      "78 access-control-allow-methods options\n"
      "79 access-control-expose-headers content-length\n"
      "80 access-control-request-headers content-type\n"
      "81 access-control-request-method get\n82 access-control-request-method post\n"
      "83 alt-svc clear\n84 authorization\n"
      "85 content-security-policy script-src 'none'; object-src 'none'; base-uri 'none'\n"
      "86 early-data 1\n87 expect-ct\n88 forwarded\n89 if-range\n90 origin\n"
      "91 purpose prefetch\n92 server\n93 timing-allow-origin *\n"
      "94 upgrade-insecure-requests 1\n95 user-agent\n96 x-forwarded-for\n"
      "97 x-frame-options deny\n98 x-frame-options sameorigin">>.

appendix_a_entries() ->
    [begin
         [I, Name | Value] = binary:split(Line, <<" ">>, [global]),
         {binary_to_integer(I), Name, iolist_to_binary(lists:join(<<" ">>, Value))}
     end || Line <- binary:split(appendix_a(), <<"\n">>, [global])].

static_table_test_() ->
    Entries = appendix_a_entries(),
    [?_assertEqual(99, length(Entries)), ?_assertEqual(99, falco_qpack_static:size()),
     ?_assertEqual(lists:seq(0, 98), [I || {I, _, _} <- Entries]),
     ?_assertEqual(error, falco_qpack_static:entry(99))] ++
    [?_assertEqual({I, {Name, Value}}, {I, falco_qpack_static:entry(I)})
     || {I, Name, Value} <- Entries].

%% The encoder's lookup: every entry is found as a field (at the first
%% index holding that field), and a name with another value at the first
%% index holding the name.
static_index_test_() ->
    Entries = appendix_a_entries(),
    First = fun(Pred) -> hd([I || {I, N, V} <- Entries, Pred(N, V)]) end,
    [?_assertEqual({I, {field, First(fun(N, V) -> {N, V} =:= {Name, Value} end)}},
                   {I, falco_qpack_static:index(Name, Value)})
     || {I, Name, Value} <- Entries] ++
    [?_assertEqual({Name, {name, First(fun(N, _) -> N =:= Name end)}},
                   {Name, falco_qpack_static:index(Name, <<"not in the table">>)})
     || Name <- lists:usort([N || {_, N, _} <- Entries])] ++
    [?_assertEqual(none, falco_qpack_static:index(<<"x-custom">>, <<>>))].

%% -- Appendix B -------------------------------------------------------------------------

%% B.1: a literal with a static name reference, at capacity 0.
b1_test() ->
    Section = hex("0000 510b 2f69 6e64 6578 2e68 746d 6c"),
    ?assertEqual({ok, [{<<":path">>, <<"/index.html">>}]}, ?Q:decode(Section, #{})),
    %% our encoder writes the same bytes, but for Huffman (shorter here)
    ?assertEqual({ok, [{<<":path">>, <<"/index.html">>}]},
                 ?Q:decode(iolist_to_binary(?Q:encode([{<<":path">>, <<"/index.html">>}])), #{})),
    H = falco_hpack_huffman:encode(<<"/index.html">>),
    ?assert(byte_size(H) < 11),
    ?assertEqual(<<0, 0, 16#51, (16#80 bor byte_size(H)), H/binary>>,
                 iolist_to_binary(?Q:encode([{<<":path">>, <<"/index.html">>}]))).

%% B.2 and B.4: sections that need the dynamic table (Required Insert
%% Count 2 and 4) fail at capacity 0 (RFC 9204 §4.5.1.1).
b2_b4_sections_test_() ->
    [?_assertEqual({error, {qpack_decompression_failed, dynamic_table_reference}},
                   ?Q:decode(hex(S), #{}))
     || S <- ["0381 10 11", "0500 80 c1 81"]].

b_encoder_instructions_test_() ->
    [?_assertEqual({ok, {set_capacity, 220}, <<>>}, ?Q:encoder_instruction(hex("3fbd01"))),
     ?_assertEqual({ok, {insert_with_name_ref, static, 0, <<"www.example.com">>}, <<>>},
                   ?Q:encoder_instruction(hex("c00f 7777 772e 6578 616d 706c 652e 636f 6d"))),
     ?_assertEqual({ok, {insert_with_name_ref, static, 1, <<"/sample/path">>}, <<>>},
                   ?Q:encoder_instruction(hex("c10c 2f73 616d 706c 652f 7061 7468"))),
     ?_assertEqual({ok, {insert_with_literal_name, <<"custom-key">>, <<"custom-value">>}, <<>>},
                   ?Q:encoder_instruction(hex("4a63 7573 746f 6d2d 6b65 790c 6375 7374"
                                              "6f6d 2d76 616c 7565"))),
     ?_assertEqual({ok, {duplicate, 2}, <<>>}, ?Q:encoder_instruction(hex("02"))),
     ?_assertEqual({ok, {insert_with_name_ref, dynamic, 1, <<"custom-value2">>}, <<>>},
                   ?Q:encoder_instruction(hex("810d 6375 7374 6f6d 2d76 616c 7565 32"))),
     ?_assertEqual(more, ?Q:encoder_instruction(hex("3fbd"))),
     ?_assertEqual(more, ?Q:encoder_instruction(hex("c00f 7777"))),
     ?_assertEqual(more, ?Q:encoder_instruction(<<>>))].

b_decoder_instructions_test_() ->
    [?_assertEqual({ok, {section_ack, 4}, <<>>}, ?Q:decoder_instruction(hex("84"))),
     ?_assertEqual({ok, {insert_count_increment, 1}, <<>>}, ?Q:decoder_instruction(hex("01"))),
     ?_assertEqual({ok, {stream_cancellation, 8}, <<>>}, ?Q:decoder_instruction(hex("48"))),
     %% §4.1.1: integers of up to 62 bits (a stream id of 2^62 - 1)
     ?_assertEqual({ok, {stream_cancellation, 16#3fffffffffffffff}, <<>>},
                   ?Q:decoder_instruction(<<16#7f, 16#c0, 16#ff, 16#ff, 16#ff, 16#ff, 16#ff,
                                            16#ff, 16#ff, 16#3f>>)),
     ?_assertEqual({error, {qpack_decoder_stream_error, bad_integer}},
                   ?Q:decoder_instruction(<<16#7f, 16#ff, 16#ff, 16#ff, 16#ff, 16#ff, 16#ff,
                                            16#ff, 16#ff, 16#ff, 16#01>>)),
     ?_assertEqual(more, ?Q:decoder_instruction(<<16#7f>>))].

%% The encoder stream at capacity 0, with B.2's instructions: RFC 9204
%% §4.3.1 (h3spec: QPACK_ENCODER_STREAM_ERROR for a capacity over the limit)
%% and §3.2.2 (no entry fits).
encoder_stream_test_() ->
    [?_assertEqual({error, {qpack_encoder_stream_error, capacity_exceeded}},
                   ?Q:encoder_stream(hex("3fbd01"), <<>>)),
     ?_assertEqual({error, {qpack_encoder_stream_error, capacity_exceeded}},
                   ?Q:encoder_stream(<<16#21>>, <<>>)),
     ?_assertEqual({error, {qpack_encoder_stream_error, no_dynamic_table}},
                   ?Q:encoder_stream(hex("c00f"), <<>>)),
     ?_assertEqual({error, {qpack_encoder_stream_error, no_dynamic_table}},
                   ?Q:encoder_stream(hex("4a63"), <<>>)),
     ?_assertEqual({error, {qpack_encoder_stream_error, no_dynamic_table}},
                   ?Q:encoder_stream(hex("02"), <<>>)),
     %% capacity 0 is allowed, as often as it comes, in any pieces
     ?_assertEqual({ok, <<>>}, ?Q:encoder_stream(<<16#20, 16#20>>, <<>>)),
     ?_assertEqual({ok, <<16#3f>>}, ?Q:encoder_stream(<<16#20, 16#3f>>, <<>>)),
     ?_assertEqual({error, {qpack_encoder_stream_error, capacity_exceeded}},
                   ?Q:encoder_stream(<<16#bd, 16#01>>, <<16#3f>>))].

%% The decoder stream of a peer whose encoder saw no insertion: RFC 9204
%% §4.4.3 (h3spec: QPACK_DECODER_STREAM_ERROR for an Insert Count Increment
%% of 0), §4.4.1.
decoder_stream_test_() ->
    [?_assertEqual({error, {qpack_decoder_stream_error, zero_increment}},
                   ?Q:decoder_stream(<<0>>, <<>>)),
     ?_assertEqual({error, {qpack_decoder_stream_error, increment_past_inserts}},
                   ?Q:decoder_stream(hex("01"), <<>>)),
     ?_assertEqual({error, {qpack_decoder_stream_error, unexpected_section_ack}},
                   ?Q:decoder_stream(hex("84"), <<>>)),
     ?_assertEqual({ok, <<>>}, ?Q:decoder_stream(hex("48 44"), <<>>)),
     ?_assertEqual({ok, <<16#7f>>}, ?Q:decoder_stream(hex("48 7f"), <<>>)),
     ?_assertEqual({ok, <<>>}, ?Q:decoder_stream(<<1>>, <<16#7f>>))].

%% -- decoding rules ---------------------------------------------------------------------

decode_test_() ->
    [%% indexed static (T = 1): 0xd1 is index 17, :method GET
     ?_assertEqual({ok, [{<<":method">>, <<"GET">>}]}, ?Q:decode(<<0, 0, 16#d1>>, #{})),
     %% index 98 needs a second octet (6-bit prefix)
     ?_assertEqual({ok, [{<<"x-frame-options">>, <<"sameorigin">>}]},
                   ?Q:decode(<<0, 0, 16#ff, (98 - 63)>>, #{})),
     %% a literal name, raw and Huffman-coded (4-bit prefix string)
     ?_assertEqual({ok, [{<<"x-a">>, <<"b">>}]}, ?Q:decode(<<0, 0, 16#23, "x-a", 1, "b">>, #{})),
     ?_assertEqual({ok, [{<<"x-a">>, <<"b">>}]},
                   ?Q:decode(iolist_to_binary([<<0, 0>>, 16#20 bor 16#08 bor 3,
                                               falco_hpack_huffman:encode(<<"x-a">>),
                                               1, "b"]), #{})),
     %% the N bit changes nothing for us
     ?_assertEqual({ok, [{<<":path">>, <<"/a">>}]}, ?Q:decode(<<0, 0, 16#71, 2, "/a">>, #{})),
     ?_assertEqual({ok, [{<<"x-a">>, <<>>}]}, ?Q:decode(<<0, 0, 16#33, "x-a", 0>>, #{})),
     %% an empty section
     ?_assertEqual({ok, []}, ?Q:decode(<<0, 0>>, #{})),
     %% §4.5.1.2: a positive Base is allowed when nothing refers to the table
     ?_assertEqual({ok, [{<<":method">>, <<"GET">>}]}, ?Q:decode(<<0, 5, 16#d1>>, #{}))].

%% h3spec: QPACK_DECOMPRESSION_FAILED for a bad static index; and the
%% other ways a section at capacity 0 is undecodable (RFC 9204 §2.2.3,
%% §4.5, §6).
decompression_failed_test_() ->
    F = fun(Why) -> {error, {qpack_decompression_failed, Why}} end,
    [?_assertEqual(F(bad_static_index), ?Q:decode(<<0, 0, 16#ff, (99 - 63)>>, #{})),
     ?_assertEqual(F(bad_static_index), ?Q:decode(<<0, 0, 16#5f, (99 - 15), 0>>, #{})),
     %% dynamic references: indexed T = 0, name reference T = 0, post-Base
     ?_assertEqual(F(dynamic_table_reference), ?Q:decode(<<0, 0, 16#80>>, #{})),
     ?_assertEqual(F(dynamic_table_reference), ?Q:decode(<<0, 0, 16#40, 0>>, #{})),
     ?_assertEqual(F(dynamic_table_reference), ?Q:decode(<<0, 0, 16#10>>, #{})),
     ?_assertEqual(F(dynamic_table_reference), ?Q:decode(<<0, 0, 16#00, 0>>, #{})),
     %% §4.5.1: Required Insert Count other than 0, a negative Base
     ?_assertEqual(F(dynamic_table_reference), ?Q:decode(<<1, 0>>, #{})),
     ?_assertEqual(F(negative_base), ?Q:decode(<<0, 16#80>>, #{})),
     ?_assertEqual(F(bad_prefix), ?Q:decode(<<>>, #{})),
     ?_assertEqual(F(bad_prefix), ?Q:decode(<<0>>, #{})),
     ?_assertEqual(F(bad_prefix), ?Q:decode(<<0, 16#7f>>, #{})),
     %% truncated lines and strings
     ?_assertEqual(F(bad_integer), ?Q:decode(<<0, 0, 16#ff>>, #{})),
     ?_assertEqual(F(truncated), ?Q:decode(<<0, 0, 16#51>>, #{})),
     ?_assertEqual(F(truncated), ?Q:decode(<<0, 0, 16#51, 5, "/a">>, #{})),
     ?_assertEqual(F(truncated), ?Q:decode(<<0, 0, 16#25, "x-">>, #{})),
     %% §5.2 of RFC 7541: EOS, or padding that is not ones
     ?_assertEqual(F(huffman), ?Q:decode(<<0, 0, 16#51, 16#81, 16#00>>, #{}))].

%% RFC 9114 §4.2.2: name + value + 32 per line.
field_section_size_test_() ->
    Section = iolist_to_binary(?Q:encode([{<<"x-a">>, <<"bcd">>}, {<<":path">>, <<"/">>}])),
    Size = (3 + 3 + 32) + (5 + 1 + 32),
    [?_assertMatch({ok, [_, _]}, ?Q:decode(Section, #{max_field_section_size => Size})),
     ?_assertEqual({error, field_section_too_large},
                   ?Q:decode(Section, #{max_field_section_size => Size - 1})),
     ?_assertEqual({error, field_section_too_large},
                   ?Q:decode(Section, #{max_field_section_size => 37}))].

%% -- encoding -------------------------------------------------------------------------------

encode_test_() ->
    E = fun(Fields) -> iolist_to_binary(?Q:encode(Fields)) end,
    [%% §4.5.2: a static field in one octet
     ?_assertEqual(<<0, 0, 16#d9>>, E([{<<":status">>, <<"200">>}])),
     ?_assertEqual(<<0, 0, 16#ff, (71 - 63)>>, E([{<<":status">>, <<"500">>}])),
     %% §4.5.4: a static name, the value raw when Huffman is not shorter
     ?_assertEqual(<<0, 0, 16#5f, (24 - 15), 1, "7">>, E([{<<":status">>, <<"7">>}])),
     %% §4.5.6: a literal name
     ?_assertEqual(<<0, 0, 16#21, "x", 1, "y">>, E([{<<"x">>, <<"y">>}])),
     %% order and repeats kept
     ?_assertEqual({ok, [{<<"a">>, <<"1">>}, {<<"b">>, <<"2">>}, {<<"a">>, <<"1">>}]},
                   ?Q:decode(E([{<<"a">>, <<"1">>}, {<<"b">>, <<"2">>}, {<<"a">>, <<"1">>}]),
                             #{})),
     %% long strings and names: multi-octet lengths
     ?_assertEqual({ok, [{binary:copy(<<"n">>, 300), binary:copy(<<"\x01">>, 1000)}]},
                   ?Q:decode(E([{binary:copy(<<"n">>, 300), binary:copy(<<"\x01">>, 1000)}]),
                             #{}))].
