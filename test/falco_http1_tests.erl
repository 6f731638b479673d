%% EUnit tests for the pure HTTP/1.1 request-head parser (falco_http1).
%% Each case names the RFC 9112 / RFC 9110 section it checks.
-module(falco_http1_tests).
-include_lib("eunit/include/eunit.hrl").

parse(Bin) -> falco_http1:parse(Bin, falco_http1:default_limits()).

err(Bin) ->
    {error, Reason} = parse(Bin),
    Reason.

simple_get_test() ->
    {ok, R, <<"rest">>} = parse(<<"GET /a/b?x=1&y HTTP/1.1\r\nHost: Example.COM:8080\r\n"
                                  "Accept: */*\r\n\r\nrest">>),
    ?assertMatch(#{method := <<"GET">>, path := <<"/a/b">>, qs := <<"x=1&y">>,
                   version := {1, 1}, host := <<"example.com">>, port := 8080,
                   body := none, keep_alive := true, expect_continue := false}, R),
    ?assertEqual([{<<"host">>, <<"Example.COM:8080">>}, {<<"accept">>, <<"*/*">>}],
                 maps:get(headers, R)).

%% RFC 9112 §2.2: leading empty lines are ignored, up to a bound.
leading_empty_lines_test() ->
    ?assertMatch({ok, #{path := <<"/">>}, <<>>},
                 parse(<<"\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n">>)),
    ?assertEqual({bad_request, too_many_empty_lines},
                 err(binary:copy(<<"\r\n">>, 20))).

%% RFC 9112 §2.2: bare LF is not a line terminator here.
bare_lf_test() ->
    ?assertEqual({bad_request, bare_lf}, err(<<"GET / HTTP/1.1\nHost: a\r\n\r\n">>)),
    ?assertEqual({bad_request, bare_lf}, err(<<"GET / HTTP/1.1\r\nHost: a\n\r\n">>)).

%% RFC 9112 §2.2: bare CR in a field value.
bare_cr_test() ->
    ?assertEqual({bad_request, invalid_header_value},
                 err(<<"GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n">>)).

%% RFC 9112 §2.3: versions. RFC 9110 §6.2: a higher minor version of a
%% major version falco implements is processed as 1.1; only other major
%% versions are refused.
version_test() ->
    ?assertEqual(version_not_supported, err(<<"GET / HTTP/2.0\r\n\r\n">>)),
    ?assertEqual(version_not_supported, err(<<"GET / HTTP/0.9\r\n\r\n">>)),
    ?assertEqual(version_not_supported, err(<<"GET / HTTP/3.1\r\n\r\n">>)),
    [?assertMatch({ok, #{version := {1, 1}, keep_alive := true}, _},
                  parse(<<"GET / HTTP/1.", D, "\r\nHost: a\r\n\r\n">>))
     || D <- "23456789"],
    ?assertEqual({bad_request, missing_host}, err(<<"GET / HTTP/1.2\r\n\r\n">>)),
    ?assertEqual({bad_request, invalid_version}, err(<<"GET / HTTP/1.10\r\n\r\n">>)),
    ?assertEqual({bad_request, invalid_version}, err(<<"GET / http/1.1\r\n\r\n">>)),
    ?assertMatch({ok, #{version := {1, 0}, keep_alive := false}, _},
                 parse(<<"GET / HTTP/1.0\r\n\r\n">>)).

%% RFC 9112 §3: single spaces, token methods.
request_line_test() ->
    ?assertEqual({bad_request, invalid_target}, err(<<"GET  / HTTP/1.1\r\nHost: a\r\n\r\n">>)),
    ?assertEqual({bad_request, invalid_version}, err(<<"GET / b HTTP/1.1\r\nHost: a\r\n\r\n">>)),
    ?assertEqual({bad_request, invalid_method}, err(<<"G(T / HTTP/1.1\r\nHost: a\r\n\r\n">>)),
    ?assertMatch({ok, #{method := <<"PATCH">>}, _}, parse(<<"PATCH / HTTP/1.1\r\nHost: a\r\n\r\n">>)).

%% RFC 9112 §3.2: target forms.
target_forms_test() ->
    ?assertMatch({ok, #{path := <<"*">>}, _}, parse(<<"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n">>)),
    ?assertEqual({bad_request, asterisk_form_not_options}, err(<<"GET * HTTP/1.1\r\nHost: a\r\n\r\n">>)),
    ?assertMatch({ok, #{host := <<"example.org">>, port := 81, path := <<"/x">>, qs := <<"q">>}, _},
                 parse(<<"GET http://Example.org:81/x?q HTTP/1.1\r\nHost: other\r\n\r\n">>)),
    ?assertEqual({not_implemented, connect}, err(<<"CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n">>)),
    ?assertEqual({bad_request, invalid_target}, err(<<"GET /a<b HTTP/1.1\r\nHost: a\r\n\r\n">>)),
    ?assertEqual({bad_request, invalid_target}, err(<<"GET /%zz HTTP/1.1\r\nHost: a\r\n\r\n">>)),
    ?assertEqual({bad_request, invalid_target},
                 err(<<"GET http://u@a/ HTTP/1.1\r\nHost: a\r\n\r\n">>)).

%% RFC 9112 §5.1, §5.2: field syntax.
field_syntax_test() ->
    ?assertEqual({bad_request, header_whitespace_before_colon},
                 err(<<"GET / HTTP/1.1\r\nHost : a\r\n\r\n">>)),
    ?assertEqual({bad_request, obs_fold},
                 err(<<"GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n 2\r\n\r\n">>)),
    ?assertEqual({bad_request, invalid_header_value},
                 err(<<"GET / HTTP/1.1\r\nHost: a\r\nX: a", 0, "b\r\n\r\n">>)),
    ?assertEqual({bad_request, invalid_header_name},
                 err(<<"GET / HTTP/1.1\r\nHost: a\r\nX\"Y: 1\r\n\r\n">>)),
    {ok, R, _} = parse(<<"GET / HTTP/1.1\r\nHost: a\r\nX-Thing: \t v  a \t\r\n\r\n">>),
    ?assertEqual(<<"v  a">>, proplists:get_value(<<"x-thing">>, maps:get(headers, R))).

%% RFC 9112 §3.2: Host rules.
host_test() ->
    ?assertEqual({bad_request, missing_host}, err(<<"GET / HTTP/1.1\r\n\r\n">>)),
    %% §3.2: "any HTTP/1.1 request message that lacks a Host header field",
    %% absolute-form included (§3.2.2 only says which authority wins).
    ?assertEqual({bad_request, missing_host}, err(<<"GET http://a.example/ HTTP/1.1\r\n\r\n">>)),
    ?assertMatch({ok, #{host := <<"a.example">>, version := {1, 0}}, _},
                 parse(<<"GET http://a.example/ HTTP/1.0\r\n\r\n">>)),
    ?assertEqual({bad_request, duplicate_host}, err(<<"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n">>)),
    ?assertEqual({bad_request, invalid_host}, err(<<"GET / HTTP/1.1\r\nHost: a b\r\n\r\n">>)),
    ?assertEqual({bad_request, invalid_host}, err(<<"GET / HTTP/1.1\r\nHost: a:99999\r\n\r\n">>)),
    ?assertMatch({ok, #{host := <<"[::1]">>, port := 8080}, _},
                 parse(<<"GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n">>)).

%% RFC 9112 §6.1, §6.3: body framing.
framing_test() ->
    H = <<"POST / HTTP/1.1\r\nHost: a\r\n">>,
    ?assertMatch({ok, #{body := {length, 5}}, _}, parse(<<H/binary, "Content-Length: 5\r\n\r\n">>)),
    ?assertMatch({ok, #{body := {length, 5}}, _},
                 parse(<<H/binary, "Content-Length: 5\r\nContent-Length: 5\r\n\r\n">>)),
    ?assertEqual({bad_request, conflicting_content_length},
                 err(<<H/binary, "Content-Length: 5, 6\r\n\r\n">>)),
    ?assertEqual({bad_request, invalid_content_length}, err(<<H/binary, "Content-Length: +5\r\n\r\n">>)),
    ?assertEqual({bad_request, invalid_content_length}, err(<<H/binary, "Content-Length: -5\r\n\r\n">>)),
    ?assertEqual({bad_request, invalid_content_length}, err(<<H/binary, "Content-Length: 0x5\r\n\r\n">>)),
    %% A length too large to represent (over 15 significant digits) is a
    %% framing fault, 400 like an overlong chunk size (falco_http1_chunked),
    %% not 413; leading zeros count for nothing, however many.
    ?assertEqual({bad_request, length_overflow},
                 err(<<H/binary, "Content-Length: 1000000000000000\r\n\r\n">>)),
    ?assertEqual({bad_request, length_overflow},
                 err(<<H/binary, "Content-Length: 18446744073709551621\r\n\r\n">>)),
    ?assertMatch({ok, #{body := {length, 999999999999999}}, _},
                 parse(<<H/binary, "Content-Length: 000999999999999999\r\n\r\n">>)),
    ?assertMatch({ok, #{body := {length, 5}}, _},
                 parse(<<H/binary, "Content-Length: 00000000000000000000000005\r\n\r\n">>)),
    ?assertMatch({ok, #{body := chunked}, _}, parse(<<H/binary, "Transfer-Encoding: Chunked\r\n\r\n">>)),
    ?assertEqual({bad_request, transfer_encoding_with_content_length},
                 err(<<H/binary, "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n">>)),
    ?assertEqual({bad_request, chunked_not_last},
                 err(<<H/binary, "Transfer-Encoding: chunked, gzip\r\n\r\n">>)),
    ?assertEqual({bad_request, chunked_not_last}, err(<<H/binary, "Transfer-Encoding: xchunked\r\n\r\n">>)),
    ?assertEqual({not_implemented, transfer_coding},
                 err(<<H/binary, "Transfer-Encoding: gzip, chunked\r\n\r\n">>)),
    ?assertEqual({bad_request, transfer_encoding_in_http10},
                 err(<<"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n">>)).

%% RFC 9112 §11.2 (request smuggling): a name that a proxy reading "_" as
%% "-" would take for Content-Length or Transfer-Encoding is 400, whatever
%% its case; other names with "_" are ordinary fields.
underscore_framing_field_test() ->
    H = <<"POST / HTTP/1.1\r\nHost: a\r\n">>,
    [?assertEqual({bad_request, underscore_framing_field},
                  err(<<H/binary, N/binary, ": 5\r\n\r\n">>))
     || N <- [<<"Content_Length">>, <<"content_length">>, <<"CONTENT_LENGTH">>,
              <<"cOnTeNt_lEnGtH">>, <<"Transfer_Encoding">>, <<"transfer_encoding">>,
              <<"TRANSFER_encoding">>]],
    %% Also next to the real field, and on a request without a body.
    ?assertEqual({bad_request, underscore_framing_field},
                 err(<<H/binary, "Content-Length: 5\r\nContent_Length: 50\r\n\r\n">>)),
    ?assertEqual({bad_request, underscore_framing_field},
                 err(<<"GET / HTTP/1.1\r\nHost: a\r\nTransfer_Encoding: chunked\r\n\r\n">>)),
    {ok, R, _} = parse(<<"GET / HTTP/1.1\r\nHost: a\r\nX_Forwarded_For: b\r\n"
                         "Content_Type: c\r\nContent_Length_X: 1\r\n\r\n">>),
    ?assertEqual([{<<"host">>, <<"a">>}, {<<"x_forwarded_for">>, <<"b">>},
                  {<<"content_type">>, <<"c">>}, {<<"content_length_x">>, <<"1">>}],
                 maps:get(headers, R)).

%% RFC 9110 §10.1.1: Expect.
expect_test() ->
    H = <<"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n">>,
    ?assertMatch({ok, #{expect_continue := true}, _}, parse(<<H/binary, "Expect: 100-Continue\r\n\r\n">>)),
    ?assertEqual(expectation_failed, err(<<H/binary, "Expect: tea\r\n\r\n">>)).

%% RFC 9112 §9.3: persistence.
keep_alive_test() ->
    ?assertMatch({ok, #{keep_alive := false}, _},
                 parse(<<"GET / HTTP/1.1\r\nHost: a\r\nConnection: Close\r\n\r\n">>)),
    ?assertMatch({ok, #{keep_alive := true}, _},
                 parse(<<"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n">>)).

%% RFC 9110 §5.6.1: #list elements, as Connection and Upgrade use them
%% (the rule itself is tested in falco_grammar_tests).
list_tokens_test() ->
    ?assertEqual([<<"keep-alive">>, <<"upgrade">>],
                 falco_grammar:lower_elements(<<" Keep-Alive ,, \tUPGRADE\t,">>)),
    ?assertEqual([], falco_grammar:lower_elements(<<" , ">>)).

limits_test() ->
    L = (falco_http1:default_limits())#{max_request_line => 20, max_header_line => 30,
                                         max_header_count => 2, max_header_block => 60},
    ?assertEqual({error, uri_too_long}, falco_http1:parse(<<"GET /", (binary:copy(<<"a">>, 30))/binary>>, L)),
    %% RFC 9112 §3: a method longer than any implemented is 501, not 414,
    %% whether or not the line is complete.
    ?assertEqual({error, {not_implemented, method_too_long}},
                 falco_http1:parse(binary:copy(<<"A">>, 30), L)),
    ?assertEqual({error, {not_implemented, method_too_long}},
                 falco_http1:parse(<<(binary:copy(<<"A">>, 25))/binary, " / HTTP/1.1\r\n">>, L)),
    ?assertEqual({error, uri_too_long},
                 falco_http1:parse(<<(binary:copy(<<"A">>, 19))/binary, " / HTTP/1.1\r\n">>, L)),
    ?assertEqual({error, {header_too_large, line}},
                 falco_http1:parse(<<"GET / HTTP/1.1\r\nX: ", (binary:copy(<<"a">>, 40))/binary>>, L)),
    ?assertEqual({error, {header_too_large, count}},
                 falco_http1:parse(<<"GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n">>, L)),
    ?assertEqual({error, {header_too_large, block}},
                 falco_http1:parse(<<"GET / HTTP/1.1\r\nA: 1234567890123456789\r\n"
                                     "B: 1234567890123456789\r\nC: 1234567890123456789\r\n">>,
                                   L#{max_header_count => 10})).

%% A field line ends where its first control byte is, when that is the CR
%% of a CRLF (one scan for both, falco_http1:lines/5); the limits hold to
%% the byte there as on the general path, and every other control byte
%% gets the answer it got before.
field_line_scan_test() ->
    L = (falco_http1:default_limits())#{max_header_line => 30, max_header_block => 64,
                                         max_header_count => 3},
    Req = fun(Lines) -> iolist_to_binary(["GET / HTTP/1.1\r\nHost: a\r\n", Lines, "\r\n"]) end,
    Line = fun(N) -> <<"X: ", (binary:copy(<<"v">>, N - 3))/binary, "\r\n">> end,
    %% a line of 29 bytes (30 with its CR) is the longest under 30
    ?assertMatch({ok, #{headers := [_, {<<"x">>, _}]}, <<>>}, falco_http1:parse(Req(Line(29)), L)),
    ?assertEqual({error, {header_too_large, line}}, falco_http1:parse(Req(Line(30)), L)),
    %% the block: "Host: a" (7 + 2) and 53 + 2 make 64, which fits; 54 does not
    ?assertMatch({ok, _, <<>>}, falco_http1:parse(Req(Line(53)), L#{max_header_line => 100})),
    ?assertEqual({error, {header_too_large, block}},
                 falco_http1:parse(Req(Line(54)), L#{max_header_line => 100})),
    ?assertEqual({error, {header_too_large, count}},
                 falco_http1:parse(Req([Line(5), Line(5), Line(5)]), L)),
    ?assertMatch({ok, _, <<>>}, falco_http1:parse(Req([Line(5), Line(5)]), L)),
    [?assertEqual({error, {bad_request, Reason}}, falco_http1:parse(Req(Bad), L))
     || {Bad, Reason} <- [{<<"X: a", 1, "b\r\n">>, invalid_header_value},
                          {<<"X: a", 127, "\r\n">>, invalid_header_value},
                          {<<"X: a\rb\r\n">>, invalid_header_value},
                          {<<"X", 1, ": a\r\n">>, invalid_header_name},
                          {<<"X: a\nb: c\r\n">>, bare_lf}]],
    %% HTAB is no control byte here: it is OWS, trimmed
    ?assertMatch({ok, #{headers := [_, {<<"x">>, <<"a\tb">>}]}, <<>>},
                 falco_http1:parse(Req(<<"X:\ta\tb\t\r\n">>), L)),
    %% a CR at the end of what has arrived: more, then the line
    {more, C} = falco_http1:parse(<<"GET / HTTP/1.1\r\nHost: a\r\nX: 1\r">>, L),
    ?assertMatch({ok, #{headers := [_, {<<"x">>, <<"1">>}]}, <<>>},
                 falco_http1:parse_more(<<"\n\r\n">>, C)).

incremental_test() ->
    Req = <<"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi">>,
    Whole = parse(Req),
    <<First, Rest/binary>> = Req,
    {more, C0} = parse(<<First>>),
    Fed = lists:foldl(fun(B, {more, C}) -> falco_http1:parse_more(<<B>>, C);
                         (_, Done) -> Done
                      end, {more, C0}, binary_to_list(Rest)),
    %% The head completes before the body bytes, so the body byte that
    %% completed it is left over; feeding it whole leaves the whole body.
    {ok, R1, _} = Whole,
    {ok, R2, _} = Fed,
    ?assertEqual(R1, R2).

%% RFC 9110 §5.6.1: a recipient accepts and ignores empty list elements, so
%% ",chunked" and "chunked, " both mean chunked (they were 501 and 400).
transfer_encoding_empty_list_elements_test() ->
    H = <<"POST / HTTP/1.1\r\nHost: a\r\n">>,
    [?assertMatch({ok, #{body := chunked}, _}, parse(<<H/binary, "Transfer-Encoding: ", TE/binary, "\r\n\r\n">>))
     || TE <- [<<",chunked">>, <<"chunked, ">>, <<" , chunked ,, ">>, <<"chunked,">>]],
    %% Two lines, one of them only commas, still combine to chunked.
    ?assertMatch({ok, #{body := chunked}, _},
                 parse(<<H/binary, "Transfer-Encoding: ,\r\nTransfer-Encoding: chunked\r\n\r\n">>)),
    %% Nothing but empty elements names no coding at all: chunked is not last.
    ?assertEqual({bad_request, chunked_not_last}, err(<<H/binary, "Transfer-Encoding: , ,\r\n\r\n">>)),
    ?assertEqual({bad_request, chunked_not_last}, err(<<H/binary, "Transfer-Encoding: \r\n\r\n">>)),
    %% The other rules still apply with empty elements around.
    ?assertEqual({bad_request, chunked_twice},
                 err(<<H/binary, "Transfer-Encoding: chunked,,chunked\r\n\r\n">>)),
    ?assertEqual({not_implemented, transfer_coding},
                 err(<<H/binary, "Transfer-Encoding: gzip, ,chunked\r\n\r\n">>)).

%% RFC 9110 §10.1.1, §5.6.1: Expect is a list; 100-continue repeated (or with
%% empty elements) is still 100-continue, anything else in it is 417.
expect_list_test() ->
    H = <<"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n">>,
    [?assertMatch({ok, #{expect_continue := true}, _}, parse(<<H/binary, E/binary, "\r\n\r\n">>))
     || E <- [<<"Expect: 100-continue, 100-continue">>, <<"Expect: 100-continue,">>,
              <<"Expect: , 100-Continue">>,
              <<"Expect: 100-continue\r\nExpect: 100-continue">>]],
    ?assertEqual(expectation_failed, err(<<H/binary, "Expect: 100-continue, tea\r\n\r\n">>)),
    ?assertEqual(expectation_failed, err(<<H/binary, "Expect: 100-continue; x=1\r\n\r\n">>)),
    %% An empty list expects nothing.
    ?assertMatch({ok, #{expect_continue := false}, _}, parse(<<H/binary, "Expect: \r\n\r\n">>)).

%% RFC 9112 §3.2.2 (RFC 9110 §4.2.3): an absolute-form target with an empty
%% path means "/"; the query is kept.
absolute_form_empty_path_test() ->
    ?assertMatch({ok, #{host := <<"host">>, path := <<"/">>, qs := <<"q">>, target := <<"/?q">>}, _},
                 parse(<<"GET http://host?q HTTP/1.1\r\nHost: host\r\n\r\n">>)),
    ?assertMatch({ok, #{host := <<"host">>, port := 8080, path := <<"/">>, qs := <<"a=1&b">>}, _},
                 parse(<<"GET http://Host:8080?a=1&b HTTP/1.1\r\nHost: host\r\n\r\n">>)),
    ?assertMatch({ok, #{path := <<"/">>, qs := <<>>}, _},
                 parse(<<"GET http://host? HTTP/1.1\r\nHost: host\r\n\r\n">>)),
    ?assertEqual({bad_request, invalid_target},
                 err(<<"GET http://host?a<b HTTP/1.1\r\nHost: host\r\n\r\n">>)),
    ?assertEqual({bad_request, invalid_target},
                 err(<<"GET http://?q HTTP/1.1\r\nHost: host\r\n\r\n">>)).

%% RFC 9112 §3.3, RFC 9110 §4.2.1: an empty Host with an origin- or
%% asterisk-form target leaves the target URI without an authority, which
%% an http(s) URI must have; falco has no default host to use, so it is
%% 400. An absolute-form target brings its own authority (§3.2.2).
empty_host_test() ->
    [?assertEqual({bad_request, empty_host}, err(Req))
     || Req <- [<<"GET / HTTP/1.1\r\nHost: \r\n\r\n">>,
                <<"GET / HTTP/1.1\r\nHost:\r\n\r\n">>,
                <<"GET / HTTP/1.1\r\nHost: \t \r\n\r\n">>,
                <<"OPTIONS * HTTP/1.1\r\nHost: \r\n\r\n">>,
                <<"GET / HTTP/1.0\r\nHost: \r\n\r\n">>]],
    ?assertMatch({ok, #{host := <<"a.example">>}, _},
                 parse(<<"GET http://a.example/ HTTP/1.1\r\nHost: \r\n\r\n">>)),
    ?assertEqual({bad_request, invalid_host}, err(<<"GET / HTTP/1.1\r\nHost: :80\r\n\r\n">>)),
    ?assertEqual({bad_request, duplicate_host},
                 err(<<"GET / HTTP/1.1\r\nHost: \r\nHost: a\r\n\r\n">>)).
