%% Unit tests for falco_grammar, the HTTP and URI grammar rules shared by
%% HTTP/1.1, HTTP/2 and the helpers (RFC 9110 §5.6, §7.2, §10.1.1;
%% RFC 3986 §3.2.2, §3.3; RFC 9112 §3.2.1).
-module(falco_grammar_tests).
-include_lib("eunit/include/eunit.hrl").
-include_lib("falco/src/core/falco_grammar.hrl").

-define(G, falco_grammar).

%% -- character classes (falco_grammar.hrl) ----------------------------------

tchar(C) when ?IS_TCHAR(C) -> true;
tchar(_) -> false.

pchar(C) when ?IS_PCHAR(C) -> true;
pchar(_) -> false.

%% RFC 9110 §5.6.2: tchar is VCHAR but the delimiters.
tchar_class_test() ->
    Delimiters = "\"(),/:;<=>?@[\\]{}",
    [?assertEqual(C >= 16#21 andalso C =< 16#7E andalso not lists:member(C, Delimiters),
                  tchar(C)) || C <- lists:seq(0, 255)].

%% RFC 3986 §3.3: pchar = unreserved / sub-delims / ":" / "@" (pct-encoded
%% is matched apart).
pchar_class_test() ->
    Allowed = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
              "-._~!$&'()*+,;=:@",
    [?assertEqual(lists:member(C, Allowed), pchar(C)) || C <- lists:seq(0, 255)].

hex_value_test() ->
    [?assertEqual(list_to_integer([C], 16), ?G:hex_value(C)) || C <- "0123456789abcdefABCDEF"],
    [?assertEqual(error, ?G:hex_value(C)) || C <- "gG/:@`\s" ++ [0, 255]].

%% -- tokens and case ----------------------------------------------------------

is_token_test() ->
    ?assert(?G:is_token(<<"GET">>)),
    ?assert(?G:is_token(<<"x-Custom_1.2~">>)),
    ?assertNot(?G:is_token(<<>>)),
    ?assertNot(?G:is_token(<<"a b">>)),
    ?assertNot(?G:is_token(<<"a:b">>)),
    ?assertNot(?G:is_token(<<"é">>)).

%% token_case/1 knows common field names by literal clauses, without a
%% scan: every such literal must be what the scan would call a lowercase
%% token (read from the module's own abstract code, so the list is not
%% copied here), and a name that is not listed still goes through the scan.
known_names_are_lower_tokens_test() ->
    {ok, {_, [{abstract_code, {raw_abstract_v1, Forms}}]}} =
        beam_lib:chunks(filename:join(code:lib_dir(falco, ebin), "falco_grammar.beam"),
                        [abstract_code]),
    [Clauses] = [Cs || {function, _, token_case, 1, Cs} <- Forms],
    Known = [iolist_to_binary([C || {bin_element, _, {string, _, C}, _, _} <- Elems])
             || {clause, _, [{bin, _, Elems = [_ | _]}], [], [{atom, _, lower}]} <- Clauses],
    ?assert(length(Known) >= 10),
    Tchar = fun(C) -> (C >= $a andalso C =< $z) orelse (C >= $0 andalso C =< $9)
                          orelse lists:member(C, "!#$%&'*+-.^_`|~") end,
    [?assert(Name =/= <<>> andalso lists:all(Tchar, binary_to_list(Name))) || Name <- Known],
    [?assertEqual({ok, Name}, ?G:lower_token(Name)) || Name <- Known],
    ?assertEqual({ok, <<"content-type">>}, ?G:lower_token(<<"Content-Type">>)),
    ?assertEqual(error, ?G:lower_token(<<"content type">>)),
    ?assertNot(?G:is_lower_token(<<"Content-type">>)).

is_lower_token_test() ->
    ?assert(?G:is_lower_token(<<"content-type">>)),
    ?assertNot(?G:is_lower_token(<<"Content-Type">>)),
    ?assertNot(?G:is_lower_token(<<>>)),
    ?assertNot(?G:is_lower_token(<<"a;b">>)).

lower_token_test() ->
    Lower = <<"x-already">>,
    ?assertEqual({ok, Lower}, ?G:lower_token(Lower)),
    ?assertEqual({ok, <<"x-mixed-case">>}, ?G:lower_token(<<"X-Mixed-CASE">>)),
    ?assertEqual(error, ?G:lower_token(<<>>)),
    ?assertEqual(error, ?G:lower_token(<<"Bad Name">>)),
    ?assertEqual(error, ?G:lower_token(<<"Bad\r\nName">>)).

is_digits_test() ->
    ?assert(?G:is_digits(<<"0">>)),
    ?assert(?G:is_digits(<<"0123456789">>)),
    ?assertNot(?G:is_digits(<<>>)),
    ?assertNot(?G:is_digits(<<"1 ">>)),
    ?assertNot(?G:is_digits(<<"+1">>)),
    ?assertNot(?G:is_digits(<<"1a">>)).

lower_test() ->
    ?assertEqual(<<"gzip">>, ?G:lower(<<"GZip">>)),
    ?assertEqual(<<"abc">>, ?G:lower(<<"abc">>)),
    %% Not UTF-8: bytes above 127 are kept as they are (string:lowercase raises).
    ?assertEqual(<<16#C0, "x", 16#FF>>, ?G:lower(<<16#C0, "X", 16#FF>>)),
    ?assertEqual(<<"[@]^">>, ?G:lower(<<"[@]^">>)).

%% lower/1 works on words of 7 bytes (see lower_bytes/1): every byte value,
%% at every position of binaries of 1 to 30 bytes (one word, two, the
%% appending loop), against a byte-by-byte reference; a byte above 127 or
%% next to "A"/"Z" must not disturb its neighbours.
lower_every_byte_test() ->
    Ref = fun(B) -> << <<(case C >= $A andalso C =< $Z of true -> C + 32; false -> C end)>>
                       || <<C>> <= B >> end,
    Fillers = [$Z, $A, $@, $[, 16#FF, 16#80, 16#C0, 16#DA, $a, $z, 0],
    Bad = [{B, Len, Pos, F}
           || B <- lists:seq(0, 255), Len <- lists:seq(1, 30), Pos <- [0, Len div 2, Len - 1],
              F <- Fillers,
              Bin <- [<< <<(case I of Pos -> B; _ -> F end)>> || I <- lists:seq(0, Len - 1) >>],
              ?G:lower(Bin) =/= Ref(Bin)],
    ?assertEqual([], Bad),
    Mixed = << <<(I rem 256)>> || I <- lists:seq(0, 511) >>,
    ?assertEqual(Ref(Mixed), ?G:lower(Mixed)),
    ?assertEqual({ok, <<"x-bench-20">>}, ?G:lower_token(<<"X-Bench-20">>)).

%% -- whitespace and lists -----------------------------------------------------

trim_test() ->
    ?assertEqual(<<"a b">>, ?G:trim(<<" \t a b\t ">>)),
    ?assertEqual(<<>>, ?G:trim(<<"  ">>)),
    ?assertEqual(<<>>, ?G:trim(<<>>)),
    ?assertEqual(<<16#FF>>, ?G:trim(<<" ", 16#FF, " ">>)),
    %% Only SP and HTAB are optional whitespace.
    ?assertEqual(<<"\r\nx\n">>, ?G:trim(<<"\r\nx\n">>)),
    ?assertEqual(<<"a ">>, ?G:trim_leading(<<" \ta ">>)),
    ?assertEqual(<<" a">>, ?G:trim_trailing(<<" a \t">>)).

%% RFC 9110 §5.6.1: empty elements are ignored, OWS around each is not
%% part of it.
elements_test() ->
    ?assertEqual([<<"a">>, <<"B c">>], ?G:elements(<<" a ,, \tB c\t,">>)),
    ?assertEqual([], ?G:elements(<<" , ">>)),
    ?assertEqual([], ?G:elements(<<>>)),
    ?assertEqual([<<"gzip">>, <<"br">>], ?G:lower_elements(<<" Gzip , ,BR,">>)),
    ?assertEqual([<<"a">>, <<"b">>], ?G:lower_elements([<<"a,">>, "b"])),
    ?assertEqual([<<"keep-alive">>, <<"upgrade">>],
                 ?G:lower_elements(<<" Keep-Alive ,, \tUPGRADE\t,">>)).

has_element_test() ->
    ?assert(?G:has_element(<<"foo, Close">>, <<"close">>)),
    ?assertNot(?G:has_element(<<"closed, x-close">>, <<"close">>)),
    %% Space is not a list separator: "a close" is one (odd) element.
    ?assertNot(?G:has_element(<<"a close">>, <<"close">>)),
    ?assert(?G:has_element([<<"a, ">>, <<"CLOSE">>], <<"close">>)).

%% -- quoted-string (RFC 9110 §5.6.4) ------------------------------------------

quoted_string_test() ->
    ?assertEqual({ok, <<"a b">>, <<";x">>}, ?G:quoted_string(<<"\"a b\";x">>)),
    ?assertEqual({ok, <<>>, <<>>}, ?G:quoted_string(<<"\"\"">>)),
    %% a quoted-pair is the character it escapes
    ?assertEqual({ok, <<"say \"hi\" \\o/">>, <<>>},
                 ?G:quoted_string(<<"\"say \\\"hi\\\" \\\\o/\"">>)),
    ?assertEqual({ok, <<"tab\there", 16#E9>>, <<>>},
                 ?G:quoted_string(<<"\"tab\\\there", 16#E9, "\"">>)),
    ?assertEqual(error, ?G:quoted_string(<<"\"open">>)),
    ?assertEqual(error, ?G:quoted_string(<<"bare">>)),
    ?assertEqual(error, ?G:quoted_string(<<"\"nul", 0, "\"">>)),
    ?assertEqual(error, ?G:quoted_string(<<"\"del", 127, "\"">>)),
    ?assertEqual(error, ?G:quoted_string(<<"\"esc \\", 10, "\"">>)).

%% A string without escapes is a part of the input.
quoted_string_no_copy_test() ->
    Bin = <<"\"", (binary:copy(<<"v">>, 100))/binary, "\"">>,
    {ok, V, <<>>} = ?G:quoted_string(Bin),
    ?assertEqual(binary:referenced_byte_size(Bin), binary:referenced_byte_size(V)).

%% -- authority (RFC 9110 §7.2, RFC 3986 §3.2.2) -------------------------------

authority_test() ->
    ?assertEqual({ok, <<"example.com">>, undefined}, ?G:authority(<<"Example.COM">>)),
    ?assertEqual({ok, <<"example.com">>, 8080}, ?G:authority(<<"example.com:8080">>)),
    ?assertEqual({ok, <<"example.com">>, undefined}, ?G:authority(<<"example.com:">>)),
    ?assertEqual({ok, <<"127.0.0.1">>, 0}, ?G:authority(<<"127.0.0.1:0">>)),
    ?assertEqual({ok, <<"a%2fb!$&'()*+,;=_~">>, 1}, ?G:authority(<<"a%2fb!$&'()*+,;=_~:00001">>)),
    ?assertEqual({ok, <<"[::1]">>, 65535}, ?G:authority(<<"[::1]:65535">>)),
    ?assertEqual({ok, <<"[fe80::abcd]">>, undefined}, ?G:authority(<<"[FE80::ABCD]">>)),
    ?assertEqual({ok, <<"[::ffff:1.2.3.4]">>, undefined}, ?G:authority(<<"[::ffff:1.2.3.4]:">>)).

authority_invalid_test() ->
    [?assertEqual(error, ?G:authority(A))
     || A <- [<<>>, <<":80">>, <<"a b">>, <<"a/b">>, <<"user@host">>, <<"a:b:c">>,
              <<"host:65536">>, <<"host:123456">>, <<"host:-1">>, <<"host:8a">>,
              <<"ho%zzst">>, <<"ho%2">>, <<"[]">>, <<"[::1">>, <<"[::1]x">>, <<"[::1]:x">>,
              <<"[g::1]">>, <<"[::1]:99999">>, <<"exa\tmple">>, <<"é.com">>]].

%% -- origin-form (RFC 9112 §3.2.1) ----------------------------------------------

origin_form_test() ->
    ?assertEqual({ok, <<"/">>, <<>>}, ?G:origin_form(<<"/">>)),
    ?assertEqual({ok, <<"/a/b">>, <<"x=1&y=/?">>}, ?G:origin_form(<<"/a/b?x=1&y=/?">>)),
    ?assertEqual({ok, <<"/a%20b">>, <<>>}, ?G:origin_form(<<"/a%20b">>)),
    ?assertEqual({ok, <<"/">>, <<>>}, ?G:origin_form(<<"/?">>)),
    [?assertEqual(error, ?G:origin_form(T))
     || T <- [<<>>, <<"a">>, <<"*">>, <<"//a b">>, <<"/a#f">>, <<"/%zz">>, <<"/%2">>,
              <<"/a\"b">>, <<"http://a/">>, <<"/", 0>>]].

origin_form_prefix_test() ->
    ?assertEqual({<<"/a?b">>, <<"/a">>, <<"b">>, <<" HTTP/1.1">>},
                 ?G:origin_form_prefix(<<"/a?b HTTP/1.1">>)),
    ?assertEqual({<<"/">>, <<"/">>, <<>>, <<"#x">>}, ?G:origin_form_prefix(<<"/#x">>)),
    ?assertEqual(error, ?G:origin_form_prefix(<<"a/">>)).

%% -- Expect (RFC 9110 §10.1.1) ------------------------------------------------------

expect_test() ->
    ?assertEqual(none, ?G:expect([])),
    ?assertEqual(none, ?G:expect([<<>>])),
    ?assertEqual(none, ?G:expect([<<" , ">>])),
    ?assertEqual(continue, ?G:expect([<<"100-continue">>])),
    ?assertEqual(continue, ?G:expect([<<"100-Continue">>])),
    %% a list that repeats it, and several field lines, ask for one 100
    ?assertEqual(continue, ?G:expect([<<"100-continue, 100-continue">>])),
    ?assertEqual(continue, ?G:expect([<<"100-continue">>, <<"100-CONTINUE">>])),
    %% lines are list elements of their own, never glued together
    ?assertEqual(continue, ?G:expect([<<"100-continue">>, <<"100-continue">>])),
    ?assertEqual({error, expectation_failed}, ?G:expect([<<"200-ok">>])),
    ?assertEqual({error, expectation_failed}, ?G:expect([<<"100-continue, tea">>])),
    ?assertEqual({error, expectation_failed}, ?G:expect([<<"100-continue">>, <<"tea">>])),
    ?assertEqual({error, expectation_failed}, ?G:expect([<<"100-continue; x=1">>])).

%% RFC 9110 §8.6: one Content-Length value, the same rule for both protocols.
length_value_test_() ->
    [?_assertEqual({ok, 0}, falco_grammar:length_value(<<"0">>)),
     ?_assertEqual({ok, 5}, falco_grammar:length_value(<<"0000000000000000000000000005">>)),
     ?_assertEqual({ok, 999999999999999}, falco_grammar:length_value(binary:copy(<<"9">>, 15))),
     ?_assertEqual({error, overflow}, falco_grammar:length_value(<<"1", (binary:copy(<<"0">>, 15))/binary>>)),
     ?_assertEqual({error, invalid}, falco_grammar:length_value(<<>>)),
     ?_assertEqual({error, invalid}, falco_grammar:length_value(<<"+5">>)),
     ?_assertEqual({error, invalid}, falco_grammar:length_value(<<"5 ">>))].

%% -- field values (RFC 9110 §5.5) -----------------------------------------------

%% Every byte, in the middle of a value, against the classes written out
%% here rather than taken from the macro: HTAB, SP, VCHAR 0x21-0x7E and
%% obs-text 0x80-0xFF are in; NUL, the other controls (LF 0x0A and CR
%% 0x0D among them) and DEL 0x7F are out.
field_value_bytes_test() ->
    In = fun(C) -> C =:= 16#09 orelse C =:= 16#20 orelse (C >= 16#21 andalso C =< 16#7E)
                       orelse (C >= 16#80 andalso C =< 16#FF) end,
    [?assertEqual({C, In(C)}, {C, ?G:is_field_value(<<"a", C, "b">>)}) || C <- lists:seq(0, 255)],
    %% the same answer alone, at the start, at the end and after a long
    %% run of valid bytes (binary:match, not a loop over the first bytes)
    Long = binary:copy(<<"x">>, 1000),
    [?assertEqual({C, In(C)}, {C, ?G:is_field_value(<<Long/binary, C, "b">>)})
     || C <- lists:seq(0, 255)],
    [?assertEqual({C, In(C) andalso C =/= $\s andalso C =/= $\t},
                  {C, ?G:is_field_value(<<C>>)}) || C <- lists:seq(0, 255)].

%% The edges of the classes named one by one.
field_value_edges_test_() ->
    [?_assert(?G:is_field_value(<<>>)),
     ?_assertNot(?G:is_field_value(<<"a", 16#00, "b">>)),
     ?_assert(?G:is_field_value(<<"a", 16#09, "b">>)),
     ?_assertNot(?G:is_field_value(<<"a", 16#0A, "b">>)),
     ?_assertNot(?G:is_field_value(<<"a", 16#0D, "b">>)),
     ?_assertNot(?G:is_field_value(<<"a\r\nb">>)),
     ?_assertNot(?G:is_field_value(<<"a", 16#1F, "b">>)),
     ?_assert(?G:is_field_value(<<"a", 16#20, "b">>)),
     ?_assert(?G:is_field_value(<<"a", 16#7E, "b">>)),
     ?_assertNot(?G:is_field_value(<<"a", 16#7F, "b">>)),
     ?_assert(?G:is_field_value(<<16#80>>)),
     ?_assert(?G:is_field_value(<<16#FF, "x", 16#C3, 16#A9>>)),
     %% field-content starts and ends with a field-vchar
     ?_assertNot(?G:is_field_value(<<" a">>)),
     ?_assertNot(?G:is_field_value(<<"\ta">>)),
     ?_assertNot(?G:is_field_value(<<"a ">>)),
     ?_assertNot(?G:is_field_value(<<"a\t">>)),
     ?_assertNot(?G:is_field_value(<<" ">>)),
     ?_assert(?G:is_field_value(<<"a \t b">>))].

%% The pattern is built from the same rule: it finds exactly the bytes
%% is_field_value/1 refuses, CR and LF among them; stored or not, the same.
field_value_stops_test() ->
    Stops = [C || C <- lists:seq(0, 255),
                  binary:match(<<C>>, ?G:field_value_stops()) =/= nomatch],
    ?assertEqual(lists:seq(0, 8) ++ lists:seq(10, 31) ++ [127], Stops),
    [{falco_grammar_field_stops, Stored}] = ?G:tables(),
    ?assertEqual(Stops, [C || C <- lists:seq(0, 255), binary:match(<<C>>, Stored) =/= nomatch]).

%% -- connection-specific fields (RFC 9110 §7.6.1, RFC 9113 §8.2.2) ------------------

connection_specific_test_() ->
    [[?_assert(?G:is_connection_specific(N, <<"x">>))
      || N <- [<<"connection">>, <<"keep-alive">>, <<"proxy-connection">>,
               <<"transfer-encoding">>, <<"upgrade">>]],
     %% TE: "trailers" only, in any case (RFC 9113 §8.2.2, RFC 9114 §4.2)
     ?_assertNot(?G:is_connection_specific(<<"te">>, <<"trailers">>)),
     ?_assertNot(?G:is_connection_specific(<<"te">>, <<"Trailers">>)),
     ?_assert(?G:is_connection_specific(<<"te">>, <<"gzip">>)),
     ?_assert(?G:is_connection_specific(<<"te">>, <<"trailers, gzip">>)),
     ?_assert(?G:is_connection_specific(<<"te">>, <<>>)),
     [?_assertNot(?G:is_connection_specific(N, <<"x">>))
      || N <- [<<"host">>, <<"content-length">>, <<"cookie">>, <<"trailer">>,
               <<"http2-settings">>, <<"connections">>, <<"x-upgrade">>]]].
