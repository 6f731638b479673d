%% The request-smuggling corpus (RFC 9112 §11.2, §6.3; RFC 9110 §5.5, §8.6).
%%
%% Each case sends one raw request that some server or proxy somewhere has
%% read differently from the next: CL.TE, TE.CL, obfuscated
%% Transfer-Encoding, duplicate, signed, hex and padded Content-Length, bare
%% LF / CR / NUL, chunk-size tricks, userinfo, HTTP/0.9. falco must either
%% reject it (one 4xx/5xx response with Connection: close, then the
%% connection closed, the handler never reached, a request pipelined behind
%% it never served) or answer it exactly once (one response, the handler
%% called once for "/" with the body the case names). In no case may a
%% handler see a second, smuggled request: every hidden request in the
%% corpus targets "/smuggled", and the recorder must never show that path.
-module(smuggling_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, init_per_suite/1, end_per_suite/1,
         init_per_testcase/2, end_per_testcase/2]).
-export([cl_te_basic/1, te_cl_basic/1, cl_zero_te/1, cl_te_http10/1, te_http10/1,
         te_xchunked/1, te_xchunked_with_cl/1, te_value_leading_space_with_cl/1,
         te_line_leading_space/1, te_chunked_identity/1, te_identity_chunked/1,
         te_space_before_colon/1, te_tab_before_colon/1, te_name_with_space/1,
         te_vtab_before_value/1, te_vtab_after_value/1, te_formfeed/1,
         te_tab_value_with_cl/1, te_duplicate_lines/1, te_duplicate_second_bogus/1,
         te_duplicate_first_bogus/1, te_obs_fold_value/1, te_quoted/1, te_nul/1,
         te_bare_cr/1, te_empty_value/1, te_with_parameter/1,
         te_mixed_case_name_with_cl/1, te_uppercase_value/1,
         te_underscore_name_with_cl/1, te_underscore_name_any_case/1, cl_underscore_name/1,
         cl_underscore_name_alone/1, cl_conflicting_lines/1, cl_conflicting_list/1,
         cl_duplicate_same/1, cl_list_same/1, cl_duplicate_one_empty/1,
         cl_trailing_comma/1, cl_plus_sign/1, cl_negative/1, cl_hex/1, cl_inner_space/1,
         cl_decimal_point/1, cl_empty/1, cl_space_padded/1, cl_leading_zeros_decimal/1,
         cl_overflow/1, cl_many_leading_zeros/1, cl_space_before_colon/1, cl_nul/1,
         cl_vtab/1,
         cl_covers_request/1, bare_lf_request_line/1, bare_lf_field_line/1,
         bare_lf_end_of_head/1, bare_lf_only/1, bare_cr_request_line/1,
         bare_cr_field_value/1, nul_in_target/1, nul_in_field_name/1,
         nul_in_field_value/1, chunk_bare_lf_size/1, chunk_bare_lf_last/1,
         chunk_size_0x/1, chunk_size_space_ext/1, chunk_size_trailing_space/1,
         chunk_size_negative/1, chunk_size_plus/1, chunk_size_empty/1,
         chunk_size_17_digits/1, chunk_size_many_leading_zeros/1,
         chunk_size_zeros_then_16_digits/1, chunk_size_overflow/1, chunk_size_huge/1,
         chunk_missing_data_crlf/1, chunk_data_longer_than_size/1,
         chunk_data_shorter_than_size/1, chunk_ext_too_long/1, chunk_ext_bad_char/1,
         chunk_ext_unterminated_quote/1, chunk_ext_bare_cr/1,
         chunk_ext_quoted_semicolon/1, chunk_uppercase_hex/1,
         chunk_trailer_framing_fields/1, chunk_trailer_obs_fold/1,
         chunk_trailer_bare_lf/1, absolute_form_userinfo/1, absolute_form_user_only/1,
         absolute_form_other_host/1, http09_request/1, http2_version/1,
         method_with_slash/1, duplicate_host/1, expect_unknown/1]).

-define(C, falco_test_client).
-define(LISTENER, smuggling_listener).
-define(H, "Host: example.com\r\n").
-define(SMUGGLED, <<"GET /smuggled HTTP/1.1\r\nHost: example.com\r\n\r\n">>).

all() ->
    [{group, cl_te}, {group, te_te}, {group, content_length},
     {group, line_endings_and_controls}, {group, chunk_tricks},
     {group, request_line_and_routing}].

groups() ->
    [{cl_te, [], [cl_te_basic, te_cl_basic, cl_zero_te, cl_te_http10]},
     {te_te, [], [te_http10, te_xchunked, te_xchunked_with_cl,
                  te_value_leading_space_with_cl, te_line_leading_space,
                  te_chunked_identity, te_identity_chunked, te_space_before_colon,
                  te_tab_before_colon, te_name_with_space, te_vtab_before_value,
                  te_vtab_after_value, te_formfeed, te_tab_value_with_cl,
                  te_duplicate_lines, te_duplicate_second_bogus,
                  te_duplicate_first_bogus, te_obs_fold_value, te_quoted, te_nul,
                  te_bare_cr, te_empty_value, te_with_parameter,
                  te_mixed_case_name_with_cl, te_uppercase_value,
                  te_underscore_name_with_cl, te_underscore_name_any_case]},
     {content_length, [], [cl_conflicting_lines, cl_conflicting_list, cl_duplicate_same,
                           cl_list_same, cl_duplicate_one_empty, cl_trailing_comma,
                           cl_plus_sign, cl_negative, cl_hex, cl_inner_space,
                           cl_decimal_point, cl_empty, cl_space_padded,
                           cl_leading_zeros_decimal, cl_overflow, cl_many_leading_zeros,
                           cl_space_before_colon,
                           cl_nul, cl_vtab, cl_covers_request, cl_underscore_name,
                           cl_underscore_name_alone]},
     {line_endings_and_controls, [], [bare_lf_request_line, bare_lf_field_line,
                                      bare_lf_end_of_head, bare_lf_only,
                                      bare_cr_request_line, bare_cr_field_value,
                                      nul_in_target, nul_in_field_name,
                                      nul_in_field_value]},
     {chunk_tricks, [], [chunk_bare_lf_size, chunk_bare_lf_last, chunk_size_0x,
                         chunk_size_space_ext, chunk_size_trailing_space,
                         chunk_size_negative, chunk_size_plus, chunk_size_empty,
                         chunk_size_17_digits, chunk_size_many_leading_zeros,
                         chunk_size_zeros_then_16_digits,
                         chunk_size_overflow, chunk_size_huge,
                         chunk_missing_data_crlf, chunk_data_longer_than_size,
                         chunk_data_shorter_than_size, chunk_ext_too_long,
                         chunk_ext_bad_char, chunk_ext_unterminated_quote,
                         chunk_ext_bare_cr, chunk_ext_quoted_semicolon,
                         chunk_uppercase_hex, chunk_trailer_framing_fields,
                         chunk_trailer_obs_fold, chunk_trailer_bare_lf]},
     {request_line_and_routing, [], [absolute_form_userinfo, absolute_form_user_only,
                                     absolute_form_other_host, http09_request,
                                     http2_version, method_with_slash, duplicate_host,
                                     expect_unknown]}].

init_per_suite(Config) ->
    Rec = ?C:recorder_start(),
    Handler = fun(Req) ->
                      {ok, Body, _} = falco_req:read_body(Req),
                      ?C:record(Rec, {falco_req:method(Req), falco_req:path(Req), Body}),
                      {200, [{<<"content-type">>, <<"application/octet-stream">>}], Body}
              end,
    ok = falco_test_listener:start_app(),
    {_, Port} = falco_test_listener:start(?LISTENER, Handler,
                                          #{idle_timeout => 10000, request_timeout => 10000,
                                            body_timeout => 10000, max_body => 100000}),
    [{port, Port}, {recorder, Rec} | Config].

end_per_suite(Config) ->
    ok = falco_test_listener:stop(?LISTENER),
    ?C:recorder_stop(?config(recorder, Config)),
    Config.

init_per_testcase(_Case, Config) ->
    ok = ?C:recorder_reset(?config(recorder, Config)),
    Config.

end_per_testcase(_Case, Config) ->
    Config.

%% -- the runner --------------------------------------------------------------

hex(Bin) ->
    integer_to_binary(iolist_size(Bin), 16).

%% Sends Raw (plus, for a case that must be rejected, a request pipelined
%% behind it) and half-closes, reads until the server closes, and checks
%% the outcome. The half-close makes a server that has answered everything
%% close at once, so no case depends on a short timeout: the listener's are
%% 10 s, and a loaded machine cannot turn a slow read into a 408.
run(Config, Raw, Expect) ->
    After = <<"GET /smuggled-after-reject HTTP/1.1\r\n" ?H "\r\n">>,
    Bytes = case Expect of
                {reject, _} -> [Raw, After];
                {accept, _} -> Raw
            end,
    #{responses := Responses, rest := Rest, closed := Closed, raw := Wire} =
        ?C:exchange(?config(port, Config), Bytes, 8000, #{half_close => true}),
    Calls = ?C:recorded(?config(recorder, Config)),
    ct:log("sent:~n~p~nreceived:~n~p~nhandler calls: ~p", [iolist_to_binary(Bytes), Wire, Calls]),
    %% Answered exactly once, nothing else on the wire, connection closed
    %% (at once for a rejection, at the client's half-close otherwise).
    ?assertMatch([_], Responses),
    ?assertEqual(<<>>, Rest),
    ?assertEqual(closed, Closed),
    %% No handler ever saw a smuggled request.
    ?assertEqual([], [C || C = {_, Path, _} <- Calls,
                           binary:match(Path, <<"smuggled">>) =/= nomatch]),
    ?assert(length(Calls) =< 1),
    [Resp] = Responses,
    case Expect of
        {reject, Status} ->
            ?assertEqual(Status, maps:get(status, Resp)),
            ?assert(?C:has_token(<<"connection">>, <<"close">>, Resp)),
            ?assertEqual([], Calls);
        {accept, Body} ->
            ?assertEqual(200, maps:get(status, Resp)),
            ?assertEqual(Body, maps:get(body, Resp)),
            ?assertMatch([{_, <<"/">>, Body}], Calls)
    end.

%% -- the corpus --------------------------------------------------------------

%% RFC 9112 §6.3 item 3: Content-Length then Transfer-Encoding (CL.TE); the front end
%% would send 6 bytes, a TE back end would leave "G" as the start of the next request.
cl_te_basic(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n"
                                   "\r\nG">>,
        {reject, 400}).

%% RFC 9112 §6.3 item 3: Transfer-Encoding then Content-Length (TE.CL) with a whole
%% request hidden in the chunk.
te_cl_basic(Config) ->
    run(Config,
        [<<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n">>,
         hex(?SMUGGLED),
         <<"\r\n">>,
         ?SMUGGLED,
         <<"\r\n0\r\n\r\n">>],
        {reject, 400}).

%% RFC 9112 §6.3 item 3: Content-Length: 0 with a chunked body carrying a request.
cl_zero_te(Config) ->
    run(Config,
        [<<"POST / HTTP/1.1\r\n" ?H "Content-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n">>,
         hex(?SMUGGLED),
         <<"\r\n">>,
         ?SMUGGLED,
         <<"\r\n0\r\n\r\n">>],
        {reject, 400}).

%% RFC 9112 §6.1: Transfer-Encoding in HTTP/1.0 means faulty framing, even with
%% Content-Length.
cl_te_http10(Config) ->
    run(Config,
        <<"POST / HTTP/1.0\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §6.1: Transfer-Encoding in an HTTP/1.0 request.
te_http10(Config) ->
    run(Config,
        <<"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §6.3 item 4: "xchunked" is not chunked; chunked is not the final coding.
te_xchunked(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: xchunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §6.3 item 3: TE.TE where one side ignores "xchunked" and falls back to
%% Content-Length.
te_xchunked_with_cl(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Content-Length: 4\r\nTransfer-Encoding: xchunked\r\n\r\n5\r\n"
                                   "hello\r\n0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §6.3 item 3: extra OWS before "chunked" is still Transfer-Encoding, so it
%% conflicts with Content-Length.
te_value_leading_space_with_cl(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Content-Length: 4\r\nTransfer-Encoding:   chunked\r\n\r\n5\r\n"
                                   "hello\r\n0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §5.2: " Transfer-Encoding: chunked" is obs-fold (a continuation of the
%% previous line), rejected.
te_line_leading_space(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H " Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n5\r\n"
                                   "hello\r\n0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §6.3 item 4: "chunked, identity": chunked not last.
te_chunked_identity(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked, identity\r\n\r\n5\r\nhello\r\n"
                                   "0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §6.1: "identity, chunked": an unknown coding before chunked is 501
%% (identity is no longer a coding).
te_identity_chunked(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: identity, chunked\r\n\r\n5\r\nhello\r\n"
                                   "0\r\n\r\n">>,
        {reject, 501}).

%% RFC 9112 §5.1: "Transfer-Encoding : chunked" (whitespace before the colon) MUST be
%% rejected.
te_space_before_colon(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding : chunked\r\nContent-Length: 4\r\n\r\n5\r\n"
                                   "hello\r\n0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §5.1: a tab between name and colon.
te_tab_before_colon(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding\t: chunked\r\nContent-Length: 4\r\n\r\n5\r\n"
                                   "hello\r\n0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9110 §5.1: "Transfer Encoding" is not a token.
te_name_with_space(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer Encoding: chunked\r\nContent-Length: 4\r\n\r\n5\r\n"
                                   "hello\r\n0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9110 §5.5: a vertical tab (\x0b) is a control, not whitespace.
te_vtab_before_value(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding:\x0bchunked\r\nContent-Length: 4\r\n\r\n"
                                   "5\r\nhello\r\n0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9110 §5.5: a trailing vertical tab.
te_vtab_after_value(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked\x0b\r\nContent-Length: 4\r\n\r\n"
                                   "5\r\nhello\r\n0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9110 §5.5: a form feed in the value.
te_formfeed(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: \x0cchunked\r\nContent-Length: 4\r\n\r\n"
                                   "5\r\nhello\r\n0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §6.3 item 3: a tab is OWS, so this is TE, conflicting with Content-Length.
te_tab_value_with_cl(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding:\tchunked\r\nContent-Length: 4\r\n\r\n5\r\n"
                                   "hello\r\n0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §6.1: two Transfer-Encoding lines combine to "chunked, chunked"; chunked
%% MUST NOT be applied twice.
te_duplicate_lines(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"
                                   "\r\n5\r\nhello\r\n0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §6.3 item 4: "chunked" then "x" lines: chunked not last.
te_duplicate_second_bogus(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked\r\nTransfer-Encoding: x\r\n\r\n"
                                   "5\r\nhello\r\n0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §6.1: "x" then "chunked" lines: an unknown coding is 501.
te_duplicate_first_bogus(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                                   "5\r\nhello\r\n0\r\n\r\n">>,
        {reject, 501}).

%% RFC 9112 §5.2: the value folded onto the next line.
te_obs_fold_value(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding:\r\n chunked\r\n\r\n5\r\nhello\r\n0\r\n"
                                   "\r\n">>,
        {reject, 400}).

%% RFC 9112 §6.3 item 4: a quoted "chunked" is not the chunked coding.
te_quoted(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: \"chunked\"\r\n\r\n5\r\nhello\r\n0\r\n"
                                   "\r\n">>,
        {reject, 400}).

%% RFC 9110 §5.5: NUL in the Transfer-Encoding value.
te_nul(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked\0\r\n\r\n5\r\nhello\r\n0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §2.2: a bare CR splitting the TE line in two for a lenient parser.
te_bare_cr(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "X-A: b\rTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n"
                                   "\r\n">>,
        {reject, 400}).

%% RFC 9112 §6.3 item 4: an empty Transfer-Encoding has no final chunked.
te_empty_value(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding:\r\n\r\n5\r\nhello\r\n0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §7: chunked takes no parameters; "chunked;q=1" is not it.
te_with_parameter(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked;q=1\r\n\r\n5\r\nhello\r\n0\r\n"
                                   "\r\n">>,
        {reject, 400}).

%% RFC 9110 §5.1: field names are case-insensitive, so this is TE plus Content-Length.
te_mixed_case_name_with_cl(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "tRaNsFeR-eNcOdInG: chunked\r\nContent-Length: 4\r\n\r\n5\r\n"
                                   "hello\r\n0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §7: coding names are case-insensitive: "CHUNKED" is chunked.
te_uppercase_value(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: CHUNKED\r\n\r\n5\r\nhello\r\n0\r\n\r\n">>,
        {accept, <<"hello">>}).

%% RFC 9112 §11.2: "Transfer_Encoding" is its own field to RFC 9110 §5.1, but a proxy
%% that reads "_" as "-" sees chunked framing where falco sees Content-Length: refused.
te_underscore_name_with_cl(Config) ->
    run(Config,
        [<<"POST / HTTP/1.1\r\n" ?H "Transfer_Encoding: chunked\r\nContent-Length: ">>,
         integer_to_binary(byte_size(?SMUGGLED)),
         <<"\r\n\r\n">>,
         ?SMUGGLED],
        {reject, 400}).

%% RFC 9112 §11.2: the same name in another case, and without Content-Length.
te_underscore_name_any_case(Config) ->
    run(Config,
        [<<"POST / HTTP/1.1\r\n" ?H "tRANSFER_eNCODING: chunked\r\n\r\n">>, hex(?SMUGGLED),
         <<"\r\n">>, ?SMUGGLED, <<"\r\n0\r\n\r\n">>],
        {reject, 400}).

%% RFC 9112 §11.2: "Content_Length" would be a second, differing Content-Length to a
%% proxy that reads "_" as "-" (and the only one to a proxy that drops the other).
cl_underscore_name(Config) ->
    run(Config,
        [<<"POST / HTTP/1.1\r\n" ?H "Content-Length: 5\r\nCONTENT_length: ">>,
         integer_to_binary(5 + byte_size(?SMUGGLED)), <<"\r\n\r\nhello">>, ?SMUGGLED],
        {reject, 400}).

%% RFC 9112 §11.2: "Content_Length" alone on a request falco reads as bodiless.
cl_underscore_name_alone(Config) ->
    run(Config,
        [<<"GET / HTTP/1.1\r\n" ?H "Content_Length: ">>, integer_to_binary(byte_size(?SMUGGLED)),
         <<"\r\n\r\n">>, ?SMUGGLED],
        {reject, 400}).

%% RFC 9112 §6.3 item 5: two Content-Length lines that differ.
cl_conflicting_lines(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!">>,
        {reject, 400}).

%% RFC 9112 §6.3 item 5: a list of differing lengths.
cl_conflicting_list(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Content-Length: 5, 6\r\n\r\nhello!">>,
        {reject, 400}).

%% RFC 9110 §8.6: identical repeated values are one length.
cl_duplicate_same(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello">>,
        {accept, <<"hello">>}).

%% RFC 9110 §8.6: "5, 5" is one length.
cl_list_same(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Content-Length: 5, 5\r\n\r\nhello">>,
        {accept, <<"hello">>}).

%% RFC 9112 §6.3 item 5: a second, empty Content-Length line.
cl_duplicate_one_empty(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Content-Length: 5\r\nContent-Length:\r\n\r\nhello">>,
        {reject, 400}).

%% RFC 9110 §8.6: Content-Length = 1*DIGIT; "5," is invalid.
cl_trailing_comma(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Content-Length: 5,\r\n\r\nhello">>,
        {reject, 400}).

%% RFC 9110 §8.6: a signed length ("+5").
cl_plus_sign(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Content-Length: +5\r\n\r\nhello">>,
        {reject, 400}).

%% RFC 9110 §8.6: a negative length.
cl_negative(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Content-Length: -5\r\n\r\nhello">>,
        {reject, 400}).

%% RFC 9110 §8.6: a hex length ("0x5").
cl_hex(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Content-Length: 0x5\r\n\r\nhello">>,
        {reject, 400}).

%% RFC 9110 §8.6: "1 0" is not a number (a lenient parser may read 1 or 10).
cl_inner_space(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Content-Length: 1 0\r\n\r\n0123456789">>,
        {reject, 400}).

%% RFC 9110 §8.6: "5.0" is not 1*DIGIT.
cl_decimal_point(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Content-Length: 5.0\r\n\r\nhello">>,
        {reject, 400}).

%% RFC 9110 §8.6: an empty Content-Length.
cl_empty(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Content-Length:\r\n\r\nhello">>,
        {reject, 400}).

%% RFC 9112 §5.1: OWS around the value is not part of it.
cl_space_padded(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Content-Length:   5 \t\r\n\r\nhello">>,
        {accept, <<"hello">>}).

%% RFC 9110 §8.6: "010" is decimal ten, not octal eight.
cl_leading_zeros_decimal(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Content-Length: 010\r\n\r\n0123456789">>,
        {accept, <<"0123456789">>}).

%% RFC 9110 §8.6, RFC 9112 §6.3 item 5: a length that would overflow a 64-bit integer
%% is an invalid length (400, as for an overlong chunk size), never wrapped.
cl_overflow(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Content-Length: 18446744073709551621\r\n\r\nhello">>,
        {reject, 400}).

%% RFC 9110 §8.6: leading zeros carry no value, however many there are: the length
%% covers the hidden request, which stays body.
cl_many_leading_zeros(Config) ->
    run(Config,
        [<<"POST / HTTP/1.1\r\n" ?H "Content-Length: 00000000000000000000000">>,
         integer_to_binary(byte_size(?SMUGGLED)), <<"\r\n\r\n">>, ?SMUGGLED],
        {accept, ?SMUGGLED}).

%% RFC 9112 §5.1: "Content-Length : 5".
cl_space_before_colon(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Content-Length : 5\r\n\r\nhello">>,
        {reject, 400}).

%% RFC 9110 §5.5: NUL after the digits.
cl_nul(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Content-Length: 5\0\r\n\r\nhello">>,
        {reject, 400}).

%% RFC 9110 §5.5: a vertical tab before the digits.
cl_vtab(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Content-Length:\x0b5\r\n\r\nhello">>,
        {reject, 400}).

%% RFC 9112 §6.2: bytes counted by Content-Length are body even when they look like a
%% request.
cl_covers_request(Config) ->
    run(Config,
        [<<"POST / HTTP/1.1\r\n" ?H "Content-Length: ">>,
         integer_to_binary(byte_size(?SMUGGLED)),
         <<"\r\n\r\n">>,
         ?SMUGGLED],
        {accept, ?SMUGGLED}).

%% RFC 9112 §2.2: a request line ended by a bare LF.
bare_lf_request_line(Config) ->
    run(Config,
        <<"GET / HTTP/1.1\n" ?H "\r\n">>,
        {reject, 400}).

%% RFC 9112 §2.2: a bare LF ending a field line hides the next field from a CRLF-only
%% parser.
bare_lf_field_line(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "X-A: b\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n"
                                   "\r\n5\r\nhello\r\n0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §2.2: the head ended by CRLF LF.
bare_lf_end_of_head(Config) ->
    run(Config,
        <<"GET / HTTP/1.1\r\n" ?H "\n">>,
        {reject, 400}).

%% RFC 9112 §2.2: a head written with LF only.
bare_lf_only(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\nHost: example.com\nContent-Length: 5\n\nhello">>,
        {reject, 400}).

%% RFC 9112 §2.2: a bare CR as a line terminator.
bare_cr_request_line(Config) ->
    run(Config,
        <<"GET / HTTP/1.1\r" ?H "\r\n">>,
        {reject, 400}).

%% RFC 9112 §2.2: a bare CR inside a value.
bare_cr_field_value(Config) ->
    run(Config,
        <<"GET / HTTP/1.1\r\n" ?H "X-A: b\rc\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §3.2: NUL in the request-target.
nul_in_target(Config) ->
    run(Config,
        <<"GET /a\0b HTTP/1.1\r\n" ?H "\r\n">>,
        {reject, 400}).

%% RFC 9110 §5.1: NUL in a field name.
nul_in_field_name(Config) ->
    run(Config,
        <<"GET / HTTP/1.1\r\n" ?H "X-\0A: b\r\n\r\n">>,
        {reject, 400}).

%% RFC 9110 §5.5: NUL in a field value.
nul_in_field_value(Config) ->
    run(Config,
        <<"GET / HTTP/1.1\r\n" ?H "X-A: b\0c\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §7.1: a chunk-size line ended by a bare LF.
chunk_bare_lf_size(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §7.1: the last chunk and trailer end written with bare LFs.
chunk_bare_lf_last(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\n\n">>,
        {reject, 400}).

%% RFC 9112 §7.1: chunk-size is bare HEXDIG; "0x5" is not a size.
chunk_size_0x(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §7.1.1: BWS before ";" in a chunk extension is allowed ("5 ;ext").
chunk_size_space_ext(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked\r\n\r\n5 ;ext\r\nhello\r\n0\r\n"
                                   "\r\n">>,
        {accept, <<"hello">>}).

%% RFC 9112 §7.1: "5 " without an extension is not a chunk-size line.
chunk_size_trailing_space(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked\r\n\r\n5 \r\nhello\r\n0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §7.1: a negative chunk size.
chunk_size_negative(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §7.1: a signed chunk size.
chunk_size_plus(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked\r\n\r\n+5\r\nhello\r\n0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §7.1: an empty chunk-size line.
chunk_size_empty(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked\r\n\r\n\r\nhello\r\n0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §7.1: chunk-size = 1*HEXDIG; 17 digits of which only the last is
%% significant are the size 5 (falco bounds significant digits, not zeros).
chunk_size_17_digits(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked\r\n\r\n00000000000000005\r\n"
                                   "hello\r\n0\r\n\r\n">>,
        {accept, <<"hello">>}).

%% RFC 9112 §7.1: a long run of leading zeros before a size is still that size:
%% the hidden request in the chunk stays data.
chunk_size_many_leading_zeros(Config) ->
    run(Config,
        [<<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked\r\n\r\n00000000000000000000000">>,
         hex(?SMUGGLED), <<"\r\n">>, ?SMUGGLED, <<"\r\n000000000000000000000000000\r\n\r\n">>],
        {accept, ?SMUGGLED}).

%% RFC 9112 §7.1: leading zeros do not hide 16 significant digits, still too many (400).
chunk_size_zeros_then_16_digits(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked\r\n\r\n"
          "0001000000000000005\r\nhello\r\n0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §7.1: a size that wraps a 64-bit integer to 1 ("10000000000000001").
chunk_size_overflow(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked\r\n\r\n10000000000000001\r\nh\r\n"
                                   "0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §7.1: a 15-digit size is taken at its word: the hidden request is chunk
%% data. The size alone is over max_body, so the answer is 413 at once (RFC 9110
%% §15.5.14), not a wait for data that never comes.
chunk_size_huge(Config) ->
    run(Config,
        [<<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked\r\n\r\nfffffffffffffff\r\n"
                                    "hello\r\n0\r\n\r\n">>,
         ?SMUGGLED],
        {reject, 413}).

%% RFC 9112 §7.1: no CRLF after the chunk data.
chunk_missing_data_crlf(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §7.1: more data than the size says.
chunk_data_longer_than_size(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §7.1: less data than the size says: the size swallows the last chunk and
%% the next size line is empty.
chunk_data_shorter_than_size(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked\r\n\r\n8\r\nhello\r\n0\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §7.1.1: chunk extensions are bounded (a 5000-byte extension).
chunk_ext_too_long(Config) ->
    run(Config,
        [<<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked\r\n\r\n5;a=">>,
         binary:copy(<<"b">>, 5000),
         <<"\r\nhello\r\n0\r\n\r\n">>],
        {reject, 400}).

%% RFC 9112 §7.1.1: an extension that is not token [= token / quoted-string].
chunk_ext_bad_char(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked\r\n\r\n5;a\"b\r\nhello\r\n0\r\n"
                                   "\r\n">>,
        {reject, 400}).

%% RFC 9112 §7.1.1: an unterminated quoted-string.
chunk_ext_unterminated_quote(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked\r\n\r\n5;a=\"b\r\nhello\r\n0\r\n"
                                   "\r\n">>,
        {reject, 400}).

%% RFC 9112 §7.1.1: a bare CR inside a chunk extension.
chunk_ext_bare_cr(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked\r\n\r\n5;a\r=b\r\nhello\r\n0\r\n"
                                   "\r\n">>,
        {reject, 400}).

%% RFC 9112 §7.1.1: a quoted extension value may hold ";" and CRLF-free text.
chunk_ext_quoted_semicolon(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked\r\n\r\n5;a=\"x;y\"\r\nhello\r\n"
                                   "0\r\n\r\n">>,
        {accept, <<"hello">>}).

%% RFC 9112 §7.1: HEXDIG includes upper case.
chunk_uppercase_hex(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked\r\n\r\nA\r\n0123456789\r\n0\r\n"
                                   "\r\n">>,
        {accept, <<"0123456789">>}).

%% RFC 9112 §7.1.2: framing fields in the trailer section do not change the framing.
chunk_trailer_framing_fields(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n"
                                   "Content-Length: 50\r\nTransfer-Encoding: chunked\r\n\r\n">>,
        {accept, <<"hello">>}).

%% RFC 9112 §7.1.2, §5.2: obs-fold in the trailer section.
chunk_trailer_obs_fold(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n"
                                   "X-T: a\r\n b\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §7.1.2, §2.2: a trailer line ended by a bare LF.
chunk_trailer_bare_lf(Config) ->
    run(Config,
        <<"POST / HTTP/1.1\r\n" ?H "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n"
                                   "X-T: a\n\r\n">>,
        {reject, 400}).

%% RFC 9110 §4.2.4: userinfo in an http URI is invalid ("user:pass@").
absolute_form_userinfo(Config) ->
    run(Config,
        <<"GET http://user:pass@example.com/ HTTP/1.1\r\n" ?H "\r\n">>,
        {reject, 400}).

%% RFC 9110 §4.2.4: userinfo without a password.
absolute_form_user_only(Config) ->
    run(Config,
        <<"GET http://evil.example@example.com/ HTTP/1.1\r\n" ?H "\r\n">>,
        {reject, 400}).

%% RFC 9112 §3.2.2: the target's authority wins over Host, and the request is answered
%% once.
absolute_form_other_host(Config) ->
    run(Config,
        <<"GET http://example.org/ HTTP/1.1\r\nHost: example.com\r\n\r\n">>,
        {accept, <<>>}).

%% RFC 9112 §2.3 (Appendix C.1): HTTP/0.9 simple requests are not served.
http09_request(Config) ->
    run(Config,
        <<"GET /\r\n\r\n">>,
        {reject, 400}).

%% RFC 9112 §2.3: an HTTP/2.0 request line over HTTP/1.x is 505.
http2_version(Config) ->
    run(Config,
        <<"GET / HTTP/2.0\r\n" ?H "\r\n">>,
        {reject, 505}).

%% RFC 9110 §9.1: "/" is not a tchar.
method_with_slash(Config) ->
    run(Config,
        <<"GET/ / HTTP/1.1\r\n" ?H "\r\n">>,
        {reject, 400}).

%% RFC 9112 §3.2: two Host fields (routing confusion between proxy and origin).
duplicate_host(Config) ->
    run(Config,
        <<"GET / HTTP/1.1\r\nHost: example.com\r\nHost: evil.example\r\n\r\n">>,
        {reject, 400}).

%% RFC 9110 §10.1.1: an unknown expectation is 417 and the body is never read.
expect_unknown(Config) ->
    run(Config,
        [<<"POST / HTTP/1.1\r\n" ?H "Expect: 101-smuggle\r\nContent-Length: ">>,
         integer_to_binary(byte_size(?SMUGGLED)),
         <<"\r\n\r\n">>,
         ?SMUGGLED],
        {reject, 417}).
