%% RFC 9112 (HTTP/1.1 message syntax and routing) over a raw socket.
%%
%% Every case names the section it checks. One listener serves the whole
%% suite on an ephemeral port with short timeouts; its handler records what
%% it saw (falco_test_client's recorder) and `/inspect' sends it back as an
%% Erlang term, so a case can check both the wire and what reached the
%% handler, and that nothing from a rejected request ever did.
-module(rfc9112_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, init_per_suite/1, end_per_suite/1,
         init_per_testcase/2, end_per_testcase/2]).
-export([
         %% §2 message format and version
         leading_empty_lines_ignored/1, too_many_leading_empty_lines/1,
         crlf_after_body_is_not_a_request/1,
         bare_lf_request_line/1, bare_lf_field_line/1, bare_cr_in_field/1,
         whitespace_before_first_field/1, http10_answered_as_http11/1,
         unsupported_version_505/1, higher_minor_version_served_as_http11/1,
         malformed_version_400/1,
         %% §3 request line
         request_line_extra_space/1, method_is_token/1, method_case_sensitive/1,
         origin_form_path_and_query/1, origin_form_invalid_char/1,
         absolute_form_overrides_host/1, absolute_form_bad_scheme/1,
         authority_form_connect_501/1, asterisk_form_options/1, asterisk_form_not_options/1,
         host_missing_http11/1, host_duplicate/1, host_invalid/1, host_optional_http10/1,
         host_forms/1, absolute_form_invalid_host_field/1, host_empty/1,
         absolute_form_empty_path/1,
         request_line_too_long_414/1, method_too_long_501/1,
         %% §4 status line
         status_line_format/1,
         %% §5 field syntax
         field_whitespace_before_colon/1, field_obs_fold/1, field_value_ows_trimmed/1,
         field_name_not_token/1, field_line_without_colon/1, field_value_nul/1,
         field_line_too_long_431/1, too_many_fields_431/1, field_order_kept/1,
         %% §6 message body
         content_length_body/1, content_length_invalid/1, content_length_overflow_400/1,
         content_length_conflict/1,
         content_length_repeated_same/1, transfer_encoding_with_content_length/1,
         transfer_encoding_chunked_not_last/1, transfer_encoding_unknown_coding_501/1,
         transfer_encoding_in_http10/1, no_framing_means_no_body/1,
         transfer_encoding_empty_elements/1,
         %% §7 chunked transfer coding
         chunked_body_decoded/1, chunked_extensions_ignored/1, chunked_trailers/1,
         chunked_invalid_size/1, chunked_size_overflow/1, chunked_size_leading_zeros/1,
         chunked_missing_data_crlf/1,
         chunked_trailer_obs_fold/1, chunked_read_incrementally/1,
         chunked_bare_lf_rejected_at_once/1, chunked_size_line_unterminated/1,
         body_cut_by_client/1, chunk_size_over_max_body_413/1,
         content_length_over_max_body_413/1,
         chunked_response_http11/1, close_delimited_response_http10/1,
         %% §9 connection management
         keep_alive_default_http11/1, connection_close_request/1,
         connection_close_in_list/1, http10_closes_by_default/1, http10_keep_alive/1,
         pipelined_in_order/1, pipelined_with_bodies/1, pipelined_unread_body_discarded/1,
         pipelined_partial_body_read/1, pipelined_after_rejection_not_served/1,
         pipelined_answered_before_next_read/1, pipelined_answered_before_continue/1,
         pipelined_mixed_replies_in_order/1,
         unread_large_body_closes/1, close_without_draining_unread_body/1,
         head_split_byte_by_byte/1, idle_connection_closed/1, incomplete_head_408/1,
         incomplete_body_408/1, client_half_close/1
        ]).

-define(C, falco_test_client).
-define(LISTENER, rfc9112_listener).
-define(TIMEOUTS, rfc9112_timeouts).
-define(HOST, "Host: example.com\r\n").

all() ->
    [{group, message_format}, {group, request_line}, {group, status_line},
     {group, fields}, {group, body}, {group, chunked}, {group, connection}].

groups() ->
    [{message_format, [], [leading_empty_lines_ignored, too_many_leading_empty_lines,
                           crlf_after_body_is_not_a_request,
                           bare_lf_request_line, bare_lf_field_line, bare_cr_in_field,
                           whitespace_before_first_field, http10_answered_as_http11,
                           unsupported_version_505, higher_minor_version_served_as_http11,
                           malformed_version_400]},
     {request_line, [], [request_line_extra_space, method_is_token, method_case_sensitive,
                         origin_form_path_and_query, origin_form_invalid_char,
                         absolute_form_overrides_host, absolute_form_bad_scheme,
                         authority_form_connect_501, asterisk_form_options,
                         asterisk_form_not_options, host_missing_http11, host_duplicate,
                         host_invalid, host_optional_http10, host_forms,
                         absolute_form_invalid_host_field, host_empty,
                         absolute_form_empty_path, request_line_too_long_414,
                         method_too_long_501]},
     {status_line, [], [status_line_format]},
     {fields, [], [field_whitespace_before_colon, field_obs_fold, field_value_ows_trimmed,
                   field_name_not_token, field_line_without_colon, field_value_nul,
                   field_line_too_long_431, too_many_fields_431, field_order_kept]},
     {body, [], [content_length_body, content_length_invalid, content_length_overflow_400,
                 content_length_conflict,
                 content_length_repeated_same, transfer_encoding_with_content_length,
                 transfer_encoding_chunked_not_last, transfer_encoding_unknown_coding_501,
                 transfer_encoding_in_http10, no_framing_means_no_body,
                 transfer_encoding_empty_elements]},
     {chunked, [], [chunked_body_decoded, chunked_extensions_ignored, chunked_trailers,
                    chunked_invalid_size, chunked_size_overflow, chunked_size_leading_zeros,
                    chunked_missing_data_crlf,
                    chunked_trailer_obs_fold, chunked_read_incrementally,
                    chunked_bare_lf_rejected_at_once, chunked_size_line_unterminated,
                    body_cut_by_client, chunk_size_over_max_body_413,
                    content_length_over_max_body_413,
                    chunked_response_http11, close_delimited_response_http10]},
     {connection, [], [keep_alive_default_http11, connection_close_request,
                       connection_close_in_list, http10_closes_by_default, http10_keep_alive,
                       pipelined_in_order, pipelined_with_bodies,
                       pipelined_unread_body_discarded, pipelined_partial_body_read,
                       unread_large_body_closes, close_without_draining_unread_body,
                       pipelined_after_rejection_not_served,
                       pipelined_answered_before_next_read, pipelined_answered_before_continue,
                       pipelined_mixed_replies_in_order, head_split_byte_by_byte,
                       idle_connection_closed, incomplete_head_408, incomplete_body_408,
                       client_half_close]}].

init_per_suite(Config) ->
    Rec = ?C:recorder_start(),
    %% Generous timeouts for every case (a loaded 2-core machine must not
    %% turn a slow test client into a 408); the cases about the timeouts
    %% themselves use a second listener whose timeouts are 1 s, and wait
    %% for them with several seconds of margin.
    ok = falco_test_listener:start_app(),
    {_, Port} = falco_test_listener:start(?LISTENER, handler(Rec),
                                          #{idle_timeout => 10000, request_timeout => 10000,
                                            body_timeout => 10000}),
    {_, TPort} = falco_test_listener:start(?TIMEOUTS, handler(Rec),
                                           #{idle_timeout => 1000, request_timeout => 1000,
                                             body_timeout => 1000}),
    [{port, Port}, {timeouts_port, TPort}, {recorder, Rec} | Config].

end_per_suite(Config) ->
    ok = falco_test_listener:stop([?LISTENER, ?TIMEOUTS]),
    ?C:recorder_stop(?config(recorder, Config)),
    Config.

init_per_testcase(_Case, Config) ->
    ok = ?C:recorder_reset(?config(recorder, Config)),
    Config.

end_per_testcase(_Case, Config) ->
    Config.

%% -- the handler -------------------------------------------------------------

handler(Rec) ->
    fun(Req) -> handle(falco_req:path(Req), Req, Rec) end.

handle(<<"/stream">>, Req, Rec) ->
    ?C:record(Rec, {falco_req:method(Req), <<"/stream">>}),
    {stream, 200, [{<<"content-type">>, <<"text/plain">>}],
     fun(Send) ->
             ok = Send(<<"one,">>),
             ok = Send(<<"two,">>),
             ok = Send(<<"three">>)
     end};
handle(<<"/big">>, Req, Rec) ->
    ?C:record(Rec, {falco_req:method(Req), <<"/big">>}),
    {200, [], binary:copy(<<"b">>, 10000)};
handle(<<"/noread">>, Req, Rec) ->
    ?C:record(Rec, {falco_req:method(Req), <<"/noread">>}),
    {200, [], <<"not read">>};
handle(<<"/partial">>, Req, Rec) ->
    {_, Data, _} = falco_req:read_body(Req, #{length => 3}),
    ?C:record(Rec, {falco_req:method(Req), <<"/partial">>}),
    {200, [], Data};
handle(<<"/pieces">>, Req, Rec) ->
    Pieces = pieces(Req, []),
    ?C:record(Rec, {falco_req:method(Req), <<"/pieces">>}),
    {200, [], term_to_binary(Pieces)};
handle(Path, Req, Rec) ->
    {ok, Body, Req1} = falco_req:read_body(Req),
    Seen = #{method => falco_req:method(Req1), path => Path, qs => falco_req:qs(Req1),
             version => falco_req:version(Req1), host => falco_req:host(Req1),
             port => falco_req:port(Req1), headers => falco_req:headers(Req1),
             body => Body, trailers => falco_req:trailers(Req1)},
    ?C:record(Rec, {falco_req:method(Req1), Path}),
    {200, [{<<"content-type">>, <<"application/x-erlang-term">>}], term_to_binary(Seen)}.

pieces(Req, Acc) ->
    case falco_req:read_body(Req, #{length => 4}) of
        {more, Data, Req1} -> pieces(Req1, [Data | Acc]);
        {ok, Data, _} -> lists:reverse([Data | Acc])
    end.

%% -- helpers -----------------------------------------------------------------

port(Config) -> ?config(port, Config).

%% The listener whose timeouts are 1 s.
timeouts_port(Config) -> ?config(timeouts_port, Config).

calls(Config) -> ?C:recorded(?config(recorder, Config)).

%% One request on a fresh connection; returns the final response.
get_response(Config, Raw) ->
    get_response(Config, Raw, #{}).

get_response(Config, Raw, Opts) ->
    {Sock, Result} = ?C:request(port(Config), Raw, Opts),
    ?C:close(Sock),
    {ok, Resp} = Result,
    Resp.

%% What the handler saw, as sent back by the catch-all route.
seen(Config, Raw) ->
    Resp = get_response(Config, Raw),
    ?assertMatch(#{status := 200}, Resp),
    binary_to_term(maps:get(body, Resp)).

%% RFC 9112 §11.2 / DESIGN: a rejected request gets exactly one error
%% response with Connection: close, the connection is then closed, nothing
%% reached the handler, and a request pipelined behind it is never served.
rejected(Config, Raw, Status) ->
    Pipelined = <<"GET /after-reject HTTP/1.1\r\n" ?HOST "\r\n">>,
    Before = calls(Config),
    #{responses := Responses, closed := Closed, rest := Rest} =
        ?C:exchange(port(Config), [Raw, Pipelined]),
    ?assertMatch([#{status := Status}], Responses),
    [Resp] = Responses,
    ?assert(?C:has_token(<<"connection">>, <<"close">>, Resp)),
    ?assertEqual(closed, Closed),
    ?assertEqual(<<>>, Rest),
    ?assertEqual(Before, calls(Config)),
    Resp.

%% -- §2 message format -------------------------------------------------------

%% RFC 9112 §2.2: a server SHOULD ignore at least one empty line (CRLF)
%% received prior to the request-line.
leading_empty_lines_ignored(Config) ->
    #{path := <<"/x">>} = seen(Config, <<"\r\n\r\nGET /x HTTP/1.1\r\n" ?HOST "\r\n">>).

%% RFC 9112 §2.2: the leniency is bounded; an endless stream of empty
%% lines is not a request.
too_many_leading_empty_lines(Config) ->
    rejected(Config, [binary:copy(<<"\r\n">>, 50), <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>], 400).

%% RFC 9112 §2.2, §9.5: the extra CRLF some clients send after a body is
%% not the start of a request: the connection stays idle and is closed
%% silently at idle_timeout (never an unsolicited 408), whether the CRLF
%% arrives with the body or on its own later.
crlf_after_body_is_not_a_request(Config) ->
    Sock = ?C:connect(timeouts_port(Config)),
    ?C:send(Sock, <<"POST /a HTTP/1.1\r\n" ?HOST "Content-Length: 2\r\n\r\nhi\r\n">>),
    {ok, #{status := 200}} = ?C:recv_response(Sock),
    ?C:send(Sock, <<"\r\n">>),
    ?C:send(Sock, <<"GET /b HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, R} = ?C:recv_response(Sock),
    #{path := <<"/b">>} = binary_to_term(maps:get(body, R)),
    ?C:send(Sock, <<"\r\n">>),
    ok = ?C:expect_closed(Sock, 6000),
    ?C:close(Sock).

%% RFC 9112 §2.2: falco accepts only CRLF as a line terminator (a bare LF is
%% a smuggling vector when a proxy disagrees).
bare_lf_request_line(Config) ->
    rejected(Config, <<"GET / HTTP/1.1\n" ?HOST "\r\n">>, 400).

%% RFC 9112 §2.2: a bare LF ending a field line.
bare_lf_field_line(Config) ->
    rejected(Config, <<"GET / HTTP/1.1\r\nHost: example.com\nX-A: b\r\n\r\n">>, 400).

%% RFC 9112 §2.2: a bare CR not followed by LF is rejected.
bare_cr_in_field(Config) ->
    rejected(Config, <<"GET / HTTP/1.1\r\n" ?HOST "X-A: b\rc\r\n\r\n">>, 400).

%% RFC 9112 §2.2: whitespace between the start-line and the first field
%% MUST be rejected (or the line ignored); falco rejects.
whitespace_before_first_field(Config) ->
    rejected(Config, <<"GET / HTTP/1.1\r\n " ?HOST "\r\n">>, 400).

%% RFC 9112 §2.3 (and RFC 9110 §6.2): a 1.0 request is served and answered
%% with the highest version the server supports, HTTP/1.1.
http10_answered_as_http11(Config) ->
    Resp = get_response(Config, <<"GET /v HTTP/1.0\r\n\r\n">>),
    #{status := 200, version := <<"HTTP/1.1">>} = Resp,
    #{version := {1, 0}} = binary_to_term(maps:get(body, Resp)).

%% RFC 9112 §2.3, RFC 9110 §15.6.6: a well-formed version of another major
%% version than 1 is 505.
unsupported_version_505(Config) ->
    rejected(Config, <<"GET / HTTP/2.0\r\n" ?HOST "\r\n">>, 505),
    rejected(Config, <<"GET / HTTP/0.9\r\n" ?HOST "\r\n">>, 505).

%% RFC 9110 §6.2 (RFC 9112 §2.3): a message of a higher minor version of
%% major version 1 is processed as if it were 1.1, the highest minor
%% version falco conforms to, and answered as HTTP/1.1; the connection
%% persists as for 1.1.
higher_minor_version_served_as_http11(Config) ->
    Sock = ?C:connect(port(Config)),
    [begin
         ?C:send(Sock, <<"GET /v HTTP/1.", D, "\r\n" ?HOST "\r\n">>),
         {ok, R = #{status := 200, version := <<"HTTP/1.1">>}} = ?C:recv_response(Sock),
         ?assertNot(?C:has_token(<<"connection">>, <<"close">>, R)),
         #{version := {1, 1}} = binary_to_term(maps:get(body, R))
     end || D <- "29"],
    ?C:close(Sock).

%% RFC 9112 §2.3: HTTP-version is case-sensitive "HTTP/" DIGIT "." DIGIT;
%% anything else is a malformed request line.
malformed_version_400(Config) ->
    [rejected(Config, <<"GET / ", V/binary, "\r\n" ?HOST "\r\n">>, 400)
     || V <- [<<"http/1.1">>, <<"HTTP/1.10">>, <<"HTTP/1">>, <<"HTTP/1.1 ">>, <<"HTTP/A.1">>]].

%% -- §3 request line ---------------------------------------------------------

%% RFC 9112 §3: request-line = method SP request-target SP HTTP-version,
%% single spaces; falco does not accept the lenient whitespace of §3.
request_line_extra_space(Config) ->
    rejected(Config, <<"GET  / HTTP/1.1\r\n" ?HOST "\r\n">>, 400),
    rejected(Config, <<"GET /  HTTP/1.1\r\n" ?HOST "\r\n">>, 400),
    rejected(Config, <<"GET\t/ HTTP/1.1\r\n" ?HOST "\r\n">>, 400).

%% RFC 9112 §3.1, RFC 9110 §9.1: the method is a token; any token reaches
%% the handler, a non-token is 400.
method_is_token(Config) ->
    #{method := <<"PURGE">>} = seen(Config, <<"PURGE /m HTTP/1.1\r\n" ?HOST "\r\n">>),
    #{method := <<"X-MY.M~1">>} = seen(Config, <<"X-MY.M~1 /m HTTP/1.1\r\n" ?HOST "\r\n">>),
    rejected(Config, <<"GE(T / HTTP/1.1\r\n" ?HOST "\r\n">>, 400),
    rejected(Config, <<"G\"T / HTTP/1.1\r\n" ?HOST "\r\n">>, 400).

%% RFC 9112 §3.1: the method token is case-sensitive.
method_case_sensitive(Config) ->
    #{method := <<"get">>} = seen(Config, <<"get /m HTTP/1.1\r\n" ?HOST "\r\n">>).

%% RFC 9112 §3.2.1: origin-form = absolute-path [ "?" query ].
origin_form_path_and_query(Config) ->
    #{path := <<"/a/b%20c">>, qs := <<"x=1&y=/?z">>} =
        seen(Config, <<"GET /a/b%20c?x=1&y=/?z HTTP/1.1\r\n" ?HOST "\r\n">>),
    #{path := <<"/">>, qs := <<>>} = seen(Config, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>).

%% RFC 9112 §3.2: a target that is not valid URI syntax is 400.
origin_form_invalid_char(Config) ->
    rejected(Config, <<"GET /a<b HTTP/1.1\r\n" ?HOST "\r\n">>, 400),
    rejected(Config, <<"GET /a%zz HTTP/1.1\r\n" ?HOST "\r\n">>, 400),
    rejected(Config, <<"GET /a\x7fb HTTP/1.1\r\n" ?HOST "\r\n">>, 400).

%% RFC 9112 §3.2.2: with an absolute-form target the server MUST ignore
%% Host and use the target's authority.
absolute_form_overrides_host(Config) ->
    #{host := <<"example.org">>, port := 8080, path := <<"/p">>, qs := <<"q=1">>} =
        seen(Config, <<"GET http://Example.ORG:8080/p?q=1 HTTP/1.1\r\nHost: other.net\r\n\r\n">>),
    #{host := <<"example.org">>, path := <<"/">>} =
        seen(Config, <<"GET http://example.org HTTP/1.1\r\nHost: example.org\r\n\r\n">>).

%% RFC 9112 §3.2.2: only http and https absolute URIs are targets here.
absolute_form_bad_scheme(Config) ->
    rejected(Config, <<"GET ftp://example.org/ HTTP/1.1\r\n" ?HOST "\r\n">>, 400).

%% RFC 9112 §3.2.3: authority-form is only for CONNECT, which falco does
%% not implement: 501.
authority_form_connect_501(Config) ->
    rejected(Config, <<"CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n">>, 501).

%% RFC 9112 §3.2.4: asterisk-form "*" for a server-wide OPTIONS.
asterisk_form_options(Config) ->
    #{method := <<"OPTIONS">>, path := <<"*">>} =
        seen(Config, <<"OPTIONS * HTTP/1.1\r\n" ?HOST "\r\n">>).

%% RFC 9112 §3.2.4: asterisk-form is only used with OPTIONS.
asterisk_form_not_options(Config) ->
    rejected(Config, <<"GET * HTTP/1.1\r\n" ?HOST "\r\n">>, 400).

%% RFC 9112 §3.2: a 1.1 request without Host MUST get 400, also when its
%% target is in absolute-form (§3.2.2 only says which authority is used).
host_missing_http11(Config) ->
    rejected(Config, <<"GET / HTTP/1.1\r\nX-A: b\r\n\r\n">>, 400),
    rejected(Config, <<"GET http://example.org/ HTTP/1.1\r\nX-A: b\r\n\r\n">>, 400).

%% RFC 9112 §3.2: more than one Host field MUST get 400.
host_duplicate(Config) ->
    rejected(Config, <<"GET / HTTP/1.1\r\n" ?HOST "Host: example.com\r\n\r\n">>, 400),
    rejected(Config, <<"GET / HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n">>, 400).

%% RFC 9112 §3.2: an invalid Host field value MUST get 400.
host_invalid(Config) ->
    [rejected(Config, <<"GET / HTTP/1.1\r\nHost: ", H/binary, "\r\n\r\n">>, 400)
     || H <- [<<"exa mple.com">>, <<"example.com:99999">>, <<"user@example.com">>,
              <<"example.com:8x">>, <<"[::1">>, <<"a/b">>]].

%% RFC 9112 §3.2: Host is only required of 1.1 requests.
host_optional_http10(Config) ->
    #{host := <<>>, version := {1, 0}} = seen(Config, <<"GET / HTTP/1.0\r\n\r\n">>).

%% RFC 9112 §3.2, RFC 9110 §7.2: Host = uri-host [ ":" port ]: IP literals,
%% IPv4 addresses, an empty port; the host is lowercased.
host_forms(Config) ->
    #{host := <<"[::1]">>, port := 8080} = seen(Config, <<"GET / HTTP/1.1\r\nHost: [::1]:8080\r\n"
                                                          "\r\n">>),
    #{host := <<"[fe80::a]">>, port := undefined} = seen(Config, <<"GET / HTTP/1.1\r\n"
                                                                   "Host: [FE80::A]\r\n\r\n">>),
    #{host := <<"127.0.0.1">>, port := undefined} = seen(Config, <<"GET / HTTP/1.1\r\n"
                                                                   "Host: 127.0.0.1\r\n\r\n">>),
    #{host := <<"example.com">>, port := undefined} = seen(Config, <<"GET / HTTP/1.1\r\n"
                                                                     "Host: Example.com:\r\n"
                                                                     "\r\n">>),
    #{host := <<"example.org">>} =
        seen(Config, <<"GET https://EXAMPLE.org/x HTTP/1.1\r\n" ?HOST "\r\n">>).

%% RFC 9112 §3.3, RFC 9110 §4.2.1: an empty Host with an origin- or
%% asterisk-form target leaves the target URI with no authority, which an
%% http(s) URI must have; falco has no configured default host, so 400.
%% With an absolute-form target its authority is used (§3.2.2).
host_empty(Config) ->
    rejected(Config, <<"GET /e HTTP/1.1\r\nHost:\r\n\r\n">>, 400),
    rejected(Config, <<"GET /e HTTP/1.1\r\nHost:  \r\n\r\n">>, 400),
    rejected(Config, <<"OPTIONS * HTTP/1.1\r\nHost:\r\n\r\n">>, 400),
    rejected(Config, <<"GET / HTTP/1.1\r\nHost: :8080\r\n\r\n">>, 400),
    #{host := <<"example.org">>, path := <<"/e">>} =
        seen(Config, <<"GET http://example.org/e HTTP/1.1\r\nHost:\r\n\r\n">>).

%% RFC 9112 §3.2.2: absolute-form with an empty path ("http://host?q")
%% stands for path "/" with the query kept.
absolute_form_empty_path(Config) ->
    #{host := <<"example.org">>, path := <<"/">>, qs := <<"q=1">>} =
        seen(Config, <<"GET http://example.org?q=1 HTTP/1.1\r\n" ?HOST "\r\n">>).

%% RFC 9112 §3.2: an invalid Host is 400 even when an absolute-form target
%% names the authority (§3.2.2 only says which one is used).
absolute_form_invalid_host_field(Config) ->
    rejected(Config, <<"GET http://example.org/ HTTP/1.1\r\nHost: bad host\r\n\r\n">>, 400).

%% RFC 9112 §3 (and RFC 9110 §15.5.15): a request-target longer than the
%% server accepts gets 414 (default limit 8192 bytes).
request_line_too_long_414(Config) ->
    Long = binary:copy(<<"a">>, 9000),
    rejected(Config, <<"GET /", Long/binary, " HTTP/1.1\r\n" ?HOST "\r\n">>, 414).

%% RFC 9112 §3 (and RFC 9110 §9.1, §15.6.2): a method longer than any the
%% server implements SHOULD get 501; it is the method, not the target,
%% that is over the request-line limit, so 414 would be wrong.
method_too_long_501(Config) ->
    Long = binary:copy(<<"M">>, 9000),
    rejected(Config, <<Long/binary, " / HTTP/1.1\r\n" ?HOST "\r\n">>, 501),
    %% Also while the line is still arriving (no CRLF yet).
    Sock = ?C:connect(port(Config)),
    ?C:send(Sock, Long),
    {ok, #{status := 501}} = ?C:recv_response(Sock, #{timeout => 3000}),
    ok = ?C:expect_closed(Sock, 2000),
    ?C:close(Sock).

%% -- §4 status line ----------------------------------------------------------

%% RFC 9112 §4: status-line = HTTP-version SP status-code SP [reason-phrase].
status_line_format(Config) ->
    Sock = ?C:connect(port(Config)),
    ?C:send(Sock, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, <<"HTTP/1.1 200 OK\r\n">>} = gen_tcp:recv(Sock, 17, 2000),
    ?C:close(Sock).

%% -- §5 field syntax ---------------------------------------------------------

%% RFC 9112 §5.1: whitespace between field name and colon MUST be 400.
field_whitespace_before_colon(Config) ->
    rejected(Config, <<"GET / HTTP/1.1\r\n" ?HOST "X-A : b\r\n\r\n">>, 400),
    rejected(Config, <<"GET / HTTP/1.1\r\n" ?HOST "X-A\t: b\r\n\r\n">>, 400).

%% RFC 9112 §5.2: obs-fold outside message/http; falco rejects it (400).
field_obs_fold(Config) ->
    rejected(Config, <<"GET / HTTP/1.1\r\n" ?HOST "X-A: b\r\n c\r\n\r\n">>, 400),
    rejected(Config, <<"GET / HTTP/1.1\r\n" ?HOST "X-A: b\r\n\tc\r\n\r\n">>, 400).

%% RFC 9112 §5.1: leading and trailing OWS is not part of the field value.
field_value_ows_trimmed(Config) ->
    #{headers := Hs} = seen(Config, <<"GET / HTTP/1.1\r\n" ?HOST "X-A: \t v  w \t \r\nX-E:\r\n"
                                                                 "\r\n">>),
    {_, <<"v  w">>} = lists:keyfind(<<"x-a">>, 1, Hs),
    {_, <<>>} = lists:keyfind(<<"x-e">>, 1, Hs).

%% RFC 9112 §5, RFC 9110 §5.1: field-name is a token.
field_name_not_token(Config) ->
    rejected(Config, <<"GET / HTTP/1.1\r\n" ?HOST "X@A: b\r\n\r\n">>, 400),
    rejected(Config, <<"GET / HTTP/1.1\r\n" ?HOST ": b\r\n\r\n">>, 400),
    rejected(Config, <<"GET / HTTP/1.1\r\n" ?HOST "X\x80A: b\r\n\r\n">>, 400).

%% RFC 9112 §5: a field line must have a colon.
field_line_without_colon(Config) ->
    rejected(Config, <<"GET / HTTP/1.1\r\n" ?HOST "X-A b\r\n\r\n">>, 400).

%% RFC 9112 §5, RFC 9110 §5.5: NUL and other controls in a value are 400.
field_value_nul(Config) ->
    rejected(Config, <<"GET / HTTP/1.1\r\n" ?HOST "X-A: b\0c\r\n\r\n">>, 400),
    rejected(Config, <<"GET / HTTP/1.1\r\n" ?HOST "X-A: b\x01c\r\n\r\n">>, 400).

%% RFC 9112 §5 (RFC 6585 §5): a field line over the limit (8192) is 431.
field_line_too_long_431(Config) ->
    Long = binary:copy(<<"v">>, 9000),
    rejected(Config, <<"GET / HTTP/1.1\r\n" ?HOST "X-A: ", Long/binary, "\r\n\r\n">>, 431).

%% RFC 9112 §5 (RFC 6585 §5): more fields than the limit (100) is 431.
too_many_fields_431(Config) ->
    Fields = [[<<"X-F">>, integer_to_binary(I), <<": v\r\n">>] || I <- lists:seq(1, 120)],
    rejected(Config, [<<"GET / HTTP/1.1\r\n" ?HOST>>, Fields, <<"\r\n">>], 431).

%% RFC 9110 §5.3: the order of field lines with the same name is kept.
field_order_kept(Config) ->
    #{headers := Hs} = seen(Config, <<"GET / HTTP/1.1\r\n" ?HOST "X-L: 1\r\nx-l: 2\r\n"
                                                                 "X-Other: o\r\nX-L: 3\r\n\r\n">>),
    [<<"1">>, <<"2">>, <<"3">>] = [V || {<<"x-l">>, V} <- Hs].

%% -- §6 message body ---------------------------------------------------------

%% RFC 9112 §6.2, §6.3 item 6: Content-Length gives the body length.
content_length_body(Config) ->
    #{body := <<"hello world">>} =
        seen(Config, <<"POST /cl HTTP/1.1\r\n" ?HOST "Content-Length: 11\r\n\r\nhello world">>),
    #{body := <<>>} = seen(Config, <<"POST /cl HTTP/1.1\r\n" ?HOST "Content-Length: 0\r\n\r\n">>).

%% RFC 9112 §6.3 item 5: an invalid Content-Length is unrecoverable: 400
%% and close.
content_length_invalid(Config) ->
    [rejected(Config, <<"POST / HTTP/1.1\r\n" ?HOST "Content-Length: ", V/binary, "\r\n\r\n"
                                                                                  "abc">>, 400)
     || V <- [<<"+3">>, <<"-3">>, <<"0x3">>, <<"3a">>, <<"3 3">>, <<>>, <<"3.0">>]].

%% RFC 9112 §6.3 item 5, RFC 9110 §8.6: a Content-Length too large to
%% represent is an invalid length (400, as an overlong chunk size), not a
%% body over max_body (413); leading zeros do not make a length large.
content_length_overflow_400(Config) ->
    rejected(Config, <<"POST / HTTP/1.1\r\n" ?HOST "Content-Length: 99999999999999999999\r\n\r\n"
                                                   "abc">>, 400),
    #{body := <<"abc">>} =
        seen(Config, <<"POST / HTTP/1.1\r\n" ?HOST "Content-Length: 000000000000000000003\r\n\r\n"
                                                   "abc">>).

%% RFC 9112 §6.3 item 5: differing Content-Length values: 400.
content_length_conflict(Config) ->
    rejected(Config, <<"POST / HTTP/1.1\r\n" ?HOST "Content-Length: 3\r\nContent-Length: 4\r\n\r\n"
                                                   "abcd">>, 400),
    rejected(Config, <<"POST / HTTP/1.1\r\n" ?HOST "Content-Length: 3, 4\r\n\r\nabcd">>, 400).

%% RFC 9110 §8.6: identical repeated values may be taken as one.
content_length_repeated_same(Config) ->
    #{body := <<"abc">>} =
        seen(Config, <<"POST / HTTP/1.1\r\n" ?HOST "Content-Length: 3\r\nContent-Length: 3\r\n\r\n"
                                                   "abc">>),
    #{body := <<"abc">>} = seen(Config, <<"POST / HTTP/1.1\r\n" ?HOST "Content-Length: 3, 3\r\n"
                                                                      "\r\nabc">>).

%% RFC 9112 §6.3 item 3: Transfer-Encoding with Content-Length is a
%% smuggling attempt; falco rejects it (400) and closes (§6.1).
transfer_encoding_with_content_length(Config) ->
    rejected(Config, <<"POST / HTTP/1.1\r\n" ?HOST "Content-Length: 5\r\n"
                                                   "Transfer-Encoding: chunked\r\n\r\n"
                       "0\r\n\r\n">>, 400).

%% RFC 9112 §6.3 item 4: chunked not the final coding of a request: 400.
transfer_encoding_chunked_not_last(Config) ->
    rejected(Config, <<"POST / HTTP/1.1\r\n" ?HOST "Transfer-Encoding: chunked, gzip\r\n\r\n0\r\n"
                                                   "\r\n">>, 400),
    rejected(Config, <<"POST / HTTP/1.1\r\n" ?HOST "Transfer-Encoding: gzip\r\n\r\n">>, 400).

%% RFC 9112 §6.1: a transfer coding the server does not understand: 501.
transfer_encoding_unknown_coding_501(Config) ->
    rejected(Config, <<"POST / HTTP/1.1\r\n" ?HOST "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n"
                                                   "\r\n">>, 501).

%% RFC 9112 §6.1: Transfer-Encoding in an HTTP/1.0 request means the framing
%% is faulty: 400 and close.
transfer_encoding_in_http10(Config) ->
    rejected(Config, <<"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n">>, 400).

%% RFC 9112 §6.3 item 7: a request with neither Content-Length nor
%% Transfer-Encoding has no body; what follows is the next request.
no_framing_means_no_body(Config) ->
    Sock = ?C:connect(port(Config)),
    ?C:send(Sock, <<"POST /first HTTP/1.1\r\n" ?HOST "\r\nGET /second HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, R1} = ?C:recv_response(Sock),
    {ok, R2} = ?C:recv_response(Sock),
    #{path := <<"/first">>, body := <<>>} = binary_to_term(maps:get(body, R1)),
    #{path := <<"/second">>} = binary_to_term(maps:get(body, R2)),
    ?C:close(Sock).

%% RFC 9112 §6.1 with RFC 9110 §5.6.1: Transfer-Encoding is a list, and a
%% recipient ignores its empty elements: ",chunked" and "chunked, " are
%% chunked (not 501 or 400); two lines combine as one list.
transfer_encoding_empty_elements(Config) ->
    Chunked = <<"5\r\nhello\r\n0\r\n\r\n">>,
    [#{body := <<"hello">>} =
         seen(Config, [<<"POST /te HTTP/1.1\r\n" ?HOST "Transfer-Encoding: ">>, TE,
                       <<"\r\n\r\n">>, Chunked])
     || TE <- [<<",chunked">>, <<"chunked, ">>, <<" ,, Chunked ,">>,
               <<",\r\nTransfer-Encoding: chunked">>]],
    %% Empty elements do not hide a coding before chunked, nor an empty list.
    rejected(Config, [<<"POST /te HTTP/1.1\r\n" ?HOST "Transfer-Encoding: gzip,,chunked\r\n\r\n">>,
                      Chunked], 501),
    rejected(Config, [<<"POST /te HTTP/1.1\r\n" ?HOST "Transfer-Encoding: ,\r\n\r\n">>,
                      Chunked], 400).

%% -- §7 chunked transfer coding -----------------------------------------------

%% RFC 9112 §7.1: chunks are decoded and concatenated (hex sizes, either case).
chunked_body_decoded(Config) ->
    Body = binary:copy(<<"x">>, 26),
    #{body := Got} =
        seen(Config, [<<"POST /c HTTP/1.1\r\n" ?HOST "Transfer-Encoding: chunked\r\n\r\n">>,
                      <<"5\r\nhello\r\n1\r\n \r\n1A\r\n">>, Body, <<"\r\na\r\n0123456789\r\n0\r\n"
                                                                    "\r\n">>]),
    ?assertEqual(<<"hello ", Body/binary, "0123456789">>, Got).

%% RFC 9112 §7.1.1: unrecognised chunk extensions are ignored.
chunked_extensions_ignored(Config) ->
    #{body := <<"hello!">>} =
        seen(Config, <<"POST /c HTTP/1.1\r\n" ?HOST "Transfer-Encoding: chunked\r\n\r\n"
                       "5;a=b;c\r\nhello\r\n1 ; q=\"x;y\\\"z\"\r\n!\r\n0;last\r\n\r\n">>).

%% RFC 9112 §7.1.2: trailer fields follow the last chunk; the handler can
%% read them once the body is read.
chunked_trailers(Config) ->
    #{body := <<"abc">>, trailers := T} =
        seen(Config, <<"POST /c HTTP/1.1\r\n" ?HOST "Transfer-Encoding: chunked\r\n\r\n"
                       "3\r\nabc\r\n0\r\nX-Checksum: 123\r\nX-More:  v \r\n\r\n">>),
    ?assertEqual([{<<"x-checksum">>, <<"123">>}, {<<"x-more">>, <<"v">>}], T).

%% RFC 9112 §7.1: chunk-size is 1*HEXDIG; anything else is a framing error
%% (400 from the body read, then close; the handler never completes).
chunked_invalid_size(Config) ->
    [rejected(Config, [<<"POST / HTTP/1.1\r\n" ?HOST "Transfer-Encoding: chunked\r\n\r\n">>, Size,
                       <<"\r\nhello\r\n0\r\n\r\n">>], 400)
     || Size <- [<<"zz">>, <<"-5">>, <<"+5">>, <<"0x5">>, <<" 5">>, <<>>]].

%% RFC 9112 §7.1: a server must not let a chunk size overflow; falco takes
%% at most 15 hex digits.
chunked_size_overflow(Config) ->
    rejected(Config, <<"POST / HTTP/1.1\r\n" ?HOST "Transfer-Encoding: chunked\r\n\r\n"
                       "10000000000000005\r\nhello\r\n0\r\n\r\n">>, 400).

%% RFC 9112 §7.1: chunk-size = 1*HEXDIG; leading zeros carry no value and
%% are accepted however many there are (only significant digits are
%% bounded).
chunked_size_leading_zeros(Config) ->
    #{body := <<"hello">>} =
        seen(Config, <<"POST /c HTTP/1.1\r\n" ?HOST "Transfer-Encoding: chunked\r\n\r\n"
                       "000000000000000000000000005\r\nhello\r\n0\r\n\r\n">>).

%% RFC 9112 §7.1, RFC 9110 §15.5.14: a chunk whose announced size alone is
%% over max_body gets 413 at once, before any of its data arrives (not a
%% wait for data that would end in 408).
chunk_size_over_max_body_413(Config) ->
    rejected(Config, <<"POST / HTTP/1.1\r\n" ?HOST "Transfer-Encoding: chunked\r\n\r\n"
                       "FFFFFFFF\r\nabc">>, 413),
    %% Also when earlier chunks were within the limit (10 MB by default).
    rejected(Config, <<"POST / HTTP/1.1\r\n" ?HOST "Transfer-Encoding: chunked\r\n\r\n"
                       "3\r\nabc\r\nA00000\r\n">>, 413).

%% RFC 9110 §15.5.14: a Content-Length over max_body (10 MB by default)
%% gets 413 before any handler runs and before a byte of the body is read,
%% whether the body follows or the client waits for 100 Continue; like
%% every error reply it closes the connection.
content_length_over_max_body_413(Config) ->
    rejected(Config, <<"POST / HTTP/1.1\r\n" ?HOST "Content-Length: 10485761\r\n\r\nabc">>, 413),
    rejected(Config, <<"POST / HTTP/1.1\r\n" ?HOST "Content-Length: 10485761\r\n"
                       "Expect: 100-continue\r\n\r\n">>, 413),
    %% at the limit: served
    #{body := <<"abc">>} =
        seen(Config, <<"POST / HTTP/1.1\r\n" ?HOST "Content-Length: 3\r\n\r\nabc">>).

%% RFC 9112 §7.1: chunk = chunk-size [ext] CRLF chunk-data CRLF; the CRLF
%% after the data is required.
chunked_missing_data_crlf(Config) ->
    rejected(Config, <<"POST / HTTP/1.1\r\n" ?HOST "Transfer-Encoding: chunked\r\n\r\n"
                       "5\r\nhelloXX0\r\n\r\n">>, 400).

%% RFC 9112 §7.1.2, §5.2: trailer fields follow the field rules; obs-fold is 400.
chunked_trailer_obs_fold(Config) ->
    rejected(Config, <<"POST / HTTP/1.1\r\n" ?HOST "Transfer-Encoding: chunked\r\n\r\n"
                       "3\r\nabc\r\n0\r\nX-T: a\r\n b\r\n\r\n">>, 400).

%% RFC 9112 §7.1: a chunk-size line ended by a bare LF is refused as soon
%% as it arrives (400), not after waiting for a CRLF that never comes (408).
chunked_bare_lf_rejected_at_once(Config) ->
    Sock = ?C:connect(port(Config)),
    ?C:send(Sock, <<"POST / HTTP/1.1\r\n" ?HOST "Transfer-Encoding: chunked\r\n\r\n5\nhello">>),
    {ok, #{status := 400}} = ?C:recv_response(Sock, #{timeout => 3000}),
    ok = ?C:expect_closed(Sock, 2000),
    ?C:close(Sock).

%% RFC 9112 §7.1.1: a chunk line that grows past falco's bound without a
%% CRLF is refused without waiting for the rest.
chunked_size_line_unterminated(Config) ->
    Sock = ?C:connect(port(Config)),
    ?C:send(Sock, [<<"POST / HTTP/1.1\r\n" ?HOST "Transfer-Encoding: chunked\r\n\r\n5;x=">>,
                   binary:copy(<<"y">>, 5000)]),
    {ok, #{status := 400}} = ?C:recv_response(Sock, #{timeout => 3000}),
    ok = ?C:expect_closed(Sock, 2000),
    ?C:close(Sock).

%% RFC 9112 §8: a body the client stops sending (it closes its side) is an
%% incomplete message: the connection is closed and the handler never
%% completes. The server MAY answer first; falco's sockets close when they
%% see the client's FIN (gen_tcp exit_on_close), so usually it cannot.
body_cut_by_client(Config) ->
    Sock = ?C:connect(port(Config)),
    ?C:send(Sock, <<"POST / HTTP/1.1\r\n" ?HOST "Content-Length: 100\r\n\r\nonly part">>),
    ok = gen_tcp:shutdown(Sock, write),
    {ok, Bin} = ?C:recv_until_closed(Sock, 3000),
    case ?C:parse_responses(Bin) of
        {[], <<>>} -> ok;
        {[#{status := 400}], <<>>} -> ok
    end,
    ?assertEqual([], calls(Config)),
    ?C:close(Sock).

%% RFC 9112 §7.1: a handler reading the body in pieces gets the decoded
%% bytes, never more than it asked for at once.
chunked_read_incrementally(Config) ->
    Resp = get_response(Config, <<"POST /pieces HTTP/1.1\r\n" ?HOST
                                  "Transfer-Encoding: chunked\r\n\r\n"
                                  "3\r\nabc\r\n7\r\ndefghij\r\n0\r\n\r\n">>),
    Pieces = binary_to_term(maps:get(body, Resp)),
    ?assertEqual(<<"abcdefghij">>, iolist_to_binary(Pieces)),
    ?assert(lists:all(fun(P) -> byte_size(P) =< 4 end, Pieces)),
    ?assert(length(Pieces) >= 3).

%% RFC 9112 §7.1, §6.1: a streamed reply to a 1.1 request is chunked.
chunked_response_http11(Config) ->
    #{status := 200, framing := chunked, chunks := [4, 4, 5], body := <<"one,two,three">>} = R =
        get_response(Config, <<"GET /stream HTTP/1.1\r\n" ?HOST "\r\n">>),
    ?assertEqual(undefined, ?C:header(<<"content-length">>, R)).

%% RFC 9112 §6.1: chunked MUST NOT be sent to a 1.0 client; the reply is
%% delimited by closing the connection (§6.3 item 8).
close_delimited_response_http10(Config) ->
    #{responses := [R], closed := closed} =
        ?C:exchange(port(Config), <<"GET /stream HTTP/1.0\r\n\r\n">>),
    #{status := 200, framing := close, body := <<"one,two,three">>} = R,
    ?assertEqual(undefined, ?C:header(<<"transfer-encoding">>, R)),
    ?assert(?C:has_token(<<"connection">>, <<"close">>, R)).

%% -- §9 connection management --------------------------------------------------

%% RFC 9112 §9.3: 1.1 connections persist by default.
keep_alive_default_http11(Config) ->
    Sock = ?C:connect(port(Config)),
    lists:foreach(
      fun(I) ->
              P = <<"/k", (integer_to_binary(I))/binary>>,
              ?C:send(Sock, <<"GET ", P/binary, " HTTP/1.1\r\n" ?HOST "\r\n">>),
              {ok, R} = ?C:recv_response(Sock),
              ?assertNot(?C:has_token(<<"connection">>, <<"close">>, R)),
              #{path := P} = binary_to_term(maps:get(body, R))
      end, lists:seq(1, 5)),
    ?C:close(Sock).

%% RFC 9112 §9.3, §9.6: "Connection: close" from the client: the response
%% says close and the server closes after it.
connection_close_request(Config) ->
    Sock = ?C:connect(port(Config)),
    ?C:send(Sock, <<"GET / HTTP/1.1\r\n" ?HOST "Connection: close\r\n\r\n">>),
    {ok, R} = ?C:recv_response(Sock),
    ?assert(?C:has_token(<<"connection">>, <<"close">>, R)),
    ok = ?C:expect_closed(Sock, 2000),
    ?C:close(Sock).

%% RFC 9112 §9.3, RFC 9110 §7.6.1: the close option among other options.
connection_close_in_list(Config) ->
    Sock = ?C:connect(port(Config)),
    ?C:send(Sock, <<"GET / HTTP/1.1\r\n" ?HOST "Connection: x-foo, Close\r\n\r\n">>),
    {ok, R} = ?C:recv_response(Sock),
    ?assert(?C:has_token(<<"connection">>, <<"close">>, R)),
    ok = ?C:expect_closed(Sock, 2000),
    ?C:close(Sock).

%% RFC 9112 §9.3: a 1.0 connection does not persist unless keep-alive is
%% asked for.
http10_closes_by_default(Config) ->
    Sock = ?C:connect(port(Config)),
    ?C:send(Sock, <<"GET / HTTP/1.0\r\n\r\n">>),
    {ok, R = #{status := 200}} = ?C:recv_response(Sock),
    ?assert(?C:has_token(<<"connection">>, <<"close">>, R)),
    ok = ?C:expect_closed(Sock, 2000),
    ?C:close(Sock).

%% RFC 9112 §9.3 (and Appendix C.2.2): a 1.0 client that sends keep-alive
%% gets it, and is told so.
http10_keep_alive(Config) ->
    Sock = ?C:connect(port(Config)),
    ?C:send(Sock, <<"GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n">>),
    {ok, R1} = ?C:recv_response(Sock),
    ?assert(?C:has_token(<<"connection">>, <<"keep-alive">>, R1)),
    ?C:send(Sock, <<"GET /b HTTP/1.0\r\nConnection: keep-alive\r\n\r\n">>),
    {ok, R2} = ?C:recv_response(Sock),
    #{path := <<"/b">>} = binary_to_term(maps:get(body, R2)),
    ?C:close(Sock).

%% RFC 9112 §9.3.2: pipelined requests are answered in the order received.
pipelined_in_order(Config) ->
    Sock = ?C:connect(port(Config)),
    Paths = [<<"/p", (integer_to_binary(I))/binary>> || I <- lists:seq(1, 10)],
    ?C:send(Sock, [<<"GET ", P/binary, " HTTP/1.1\r\n" ?HOST "\r\n">> || P <- Paths]),
    Got = [begin
               {ok, R} = ?C:recv_response(Sock),
               maps:get(path, binary_to_term(maps:get(body, R)))
           end || _ <- Paths],
    ?assertEqual(Paths, Got),
    ?assertEqual([{<<"GET">>, P} || P <- Paths], calls(Config)),
    ?C:close(Sock).

%% RFC 9112 §9.3.2, §6.3: pipelined requests with bodies of each framing.
pipelined_with_bodies(Config) ->
    Sock = ?C:connect(port(Config)),
    ?C:send(Sock, [<<"POST /1 HTTP/1.1\r\n" ?HOST "Content-Length: 5\r\n\r\nfirst">>,
                   <<"POST /2 HTTP/1.1\r\n" ?HOST "Transfer-Encoding: chunked\r\n\r\n6\r\n"
                                                  "second\r\n0\r\n\r\n">>,
                   <<"GET /3 HTTP/1.1\r\n" ?HOST "\r\n">>,
                   <<"POST /4 HTTP/1.1\r\n" ?HOST "Content-Length: 6\r\n\r\nfourth">>]),
    Got = [begin
               {ok, R} = ?C:recv_response(Sock),
               #{path := P, body := B} = binary_to_term(maps:get(body, R)),
               {P, B}
           end || _ <- lists:seq(1, 4)],
    ?assertEqual([{<<"/1">>, <<"first">>}, {<<"/2">>, <<"second">>}, {<<"/3">>, <<>>},
                  {<<"/4">>, <<"fourth">>}], Got),
    ?C:close(Sock).

%% RFC 9112 §6.3, §9.3: a body the handler did not read is skipped, so the
%% next pipelined request is framed correctly (bytes of the body that look
%% like a request never become one).
pipelined_unread_body_discarded(Config) ->
    Sock = ?C:connect(port(Config)),
    Hidden = <<"GET /hidden HTTP/1.1\r\n" ?HOST "\r\n">>,
    ?C:send(Sock, [<<"POST /noread HTTP/1.1\r\n" ?HOST "Content-Length: ">>,
                   integer_to_binary(byte_size(Hidden)), <<"\r\n\r\n">>, Hidden,
                   <<"POST /noread HTTP/1.1\r\n" ?HOST "Transfer-Encoding: chunked\r\n\r\n">>,
                   integer_to_binary(byte_size(Hidden), 16), <<"\r\n">>, Hidden, <<"\r\n0\r\n"
                                                                                   "\r\n">>,
                   <<"GET /next HTTP/1.1\r\n" ?HOST "\r\n">>]),
    {ok, #{body := <<"not read">>}} = ?C:recv_response(Sock),
    {ok, #{body := <<"not read">>}} = ?C:recv_response(Sock),
    {ok, R3} = ?C:recv_response(Sock),
    #{path := <<"/next">>} = binary_to_term(maps:get(body, R3)),
    ?assertEqual([{<<"POST">>, <<"/noread">>}, {<<"POST">>, <<"/noread">>},
                  {<<"GET">>, <<"/next">>}], calls(Config)),
    ?C:close(Sock).

%% RFC 9112 §6.3, §9.3: the same when the handler read part of the body.
pipelined_partial_body_read(Config) ->
    Sock = ?C:connect(port(Config)),
    ?C:send(Sock, [<<"POST /partial HTTP/1.1\r\n" ?HOST "Content-Length: 10\r\n\r\n0123456789">>,
                   <<"POST /partial HTTP/1.1\r\n" ?HOST "Transfer-Encoding: chunked\r\n\r\n"
                     "5\r\nabcde\r\n5\r\nfghij\r\n0\r\nX-T: 1\r\n\r\n">>,
                   <<"GET /next HTTP/1.1\r\n" ?HOST "\r\n">>]),
    {ok, #{body := <<"012">>}} = ?C:recv_response(Sock),
    {ok, #{body := <<"abc">>}} = ?C:recv_response(Sock),
    {ok, R3} = ?C:recv_response(Sock),
    #{path := <<"/next">>} = binary_to_term(maps:get(body, R3)),
    ?C:close(Sock).

%% RFC 9112 §9.6 (RFC 9110 §9.3: a server may close instead of reading
%% content it does not want): an unread body over falco's 1 MB discard bound
%% is not read; the response is sent, then the connection is closed.
unread_large_body_closes(Config) ->
    Sock = ?C:connect(port(Config)),
    ?C:send(Sock, <<"POST /noread HTTP/1.1\r\n" ?HOST "Content-Length: 2000000\r\n\r\nsome">>),
    {ok, #{status := 200, body := <<"not read">>}} = ?C:recv_response(Sock),
    ok = ?C:expect_closed(Sock, 3000),
    ?C:close(Sock).

%% RFC 9112 §9.6: when the connection closes after this response (the
%% client asked, with Connection: close or as a 1.0 client without
%% keep-alive, or the server decided, for the last request
%% max_keep_alive_requests allows), a body the handler left unread frames
%% no further request: the server closes right after the response instead
%% of first waiting up to body_timeout (10 s here) to read and drop it.
close_without_draining_unread_body(_Config) ->
    Name = rfc9112_no_drain,
    {_, Port} = falco_test_listener:start(Name, fun(_) -> {200, [], <<"not read">>} end,
                                          #{body_timeout => 10000,
                                            max_keep_alive_requests => 2}),
    try
        Partial = <<"Content-Length: 100\r\n\r\nabc">>,
        Cases = [{[], <<"POST / HTTP/1.1\r\n" ?HOST "Connection: close\r\n", Partial/binary>>},
                 {[], <<"POST / HTTP/1.1\r\n" ?HOST "Connection: close\r\n"
                        "Transfer-Encoding: chunked\r\n\r\n64\r\nabc">>},
                 {[], <<"POST / HTTP/1.0\r\n", Partial/binary>>},
                 %% The second request is the last of max_keep_alive_requests.
                 {[<<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>],
                  <<"POST / HTTP/1.1\r\n" ?HOST, Partial/binary>>}],
        [closed_without_draining(Port, Before, Raw) || {Before, Raw} <- Cases]
    after
        ok = falco_test_listener:stop(Name)
    end.

closed_without_draining(Port, Before, Raw) ->
    Sock = ?C:connect(Port),
    [begin
         ?C:send(Sock, B),
         {ok, #{status := 200}} = ?C:recv_response(Sock)
     end || B <- Before],
    ?C:send(Sock, Raw),
    {ok, R = #{status := 200, body := <<"not read">>}} = ?C:recv_response(Sock),
    ?assert(?C:has_token(<<"connection">>, <<"close">>, R)),
    ?assertEqual(ok, ?C:expect_closed(Sock, 2000)),
    ?C:close(Sock).

%% RFC 9112 §9.3.2, §11.2: after a rejected request the connection is
%% closed; requests pipelined behind it are not served.
pipelined_after_rejection_not_served(Config) ->
    #{responses := Rs, closed := closed} =
        ?C:exchange(port(Config), [<<"GET /ok HTTP/1.1\r\n" ?HOST "\r\n">>,
                                   <<"GET /bad HTTP/1.1\r\n" ?HOST "Bad Name: x\r\n\r\n">>,
                                   <<"GET /never HTTP/1.1\r\n" ?HOST "\r\n">>]),
    ?assertMatch([#{status := 200}, #{status := 400}], Rs),
    ?assertEqual([{<<"GET">>, <<"/ok">>}], calls(Config)).

%% Responses to pipelined requests may be held back to leave in one write
%% (falco_http1_stream), but never past a wait for the client: with the
%% next head only partly sent, the first response comes at once.
pipelined_answered_before_next_read(Config) ->
    Sock = ?C:connect(port(Config)),
    ?C:send(Sock, <<"GET /a HTTP/1.1\r\n" ?HOST "\r\nGET /b HTTP/1.1\r\n" ?HOST>>),
    {ok, R1} = ?C:recv_response(Sock, #{timeout => 3000}),
    #{path := <<"/a">>} = binary_to_term(maps:get(body, R1)),
    ?C:send(Sock, <<"\r\n">>),
    {ok, R2} = ?C:recv_response(Sock),
    #{path := <<"/b">>} = binary_to_term(maps:get(body, R2)),
    ?C:close(Sock).

%% RFC 9110 §10.1.1: the client waits for 100 Continue before it sends the
%% body; the response to the request before it comes first, then the 100.
pipelined_answered_before_continue(Config) ->
    Sock = ?C:connect(port(Config)),
    ?C:send(Sock, [<<"GET /a HTTP/1.1\r\n" ?HOST "\r\n">>,
                   <<"POST /b HTTP/1.1\r\n" ?HOST "Expect: 100-continue\r\n"
                     "Content-Length: 5\r\n\r\n">>]),
    {ok, R1} = ?C:recv_response(Sock, #{timeout => 3000}),
    #{path := <<"/a">>} = binary_to_term(maps:get(body, R1)),
    {ok, #{status := 100}} = ?C:recv_response(Sock, #{timeout => 3000}),
    ?C:send(Sock, <<"hello">>),
    {ok, R2} = ?C:recv_response(Sock),
    #{path := <<"/b">>, body := <<"hello">>} = binary_to_term(maps:get(body, R2)),
    ?C:close(Sock).

%% Full, streamed and large replies to one pipelined batch leave in request
%% order (large ones pass the 16 KB that may be held), the last one closes.
pipelined_mixed_replies_in_order(Config) ->
    Sock = ?C:connect(port(Config)),
    Get = fun(P) -> <<"GET ", P/binary, " HTTP/1.1\r\n" ?HOST "\r\n">> end,
    ?C:send(Sock, [Get(<<"/a">>), Get(<<"/stream">>), Get(<<"/big">>), Get(<<"/big">>),
                   Get(<<"/b">>), Get(<<"/big">>), Get(<<"/big">>),
                   <<"GET /c HTTP/1.1\r\n" ?HOST "Connection: close\r\n\r\n">>]),
    Bodies = [begin {ok, #{status := 200, body := B}} = ?C:recv_response(Sock), B end
              || _ <- lists:seq(1, 8)],
    Big = binary:copy(<<"b">>, 10000),
    [A, <<"one,two,three">>, Big, Big, B, Big, Big, C] = Bodies,
    ?assertEqual([<<"/a">>, <<"/b">>, <<"/c">>],
                 [maps:get(path, binary_to_term(X)) || X <- [A, B, C]]),
    ok = ?C:expect_closed(Sock, 3000),
    ?assertEqual(8, length(calls(Config))),
    ?C:close(Sock).

%% RFC 9112 §2.2: the head may arrive in pieces of any size; the parse does
%% not depend on how bytes are split across reads.
head_split_byte_by_byte(Config) ->
    Sock = ?C:connect(port(Config)),
    Raw = <<"POST /bytes?x=y HTTP/1.1\r\n" ?HOST "X-A: b\r\nContent-Length: 3\r\n\r\nabc">>,
    [begin ?C:send(Sock, <<B>>), timer:sleep(1) end || <<B>> <= Raw],
    {ok, R} = ?C:recv_response(Sock),
    #{path := <<"/bytes">>, qs := <<"x=y">>, body := <<"abc">>} = binary_to_term(maps:get(body, R)),
    ?C:close(Sock).

%% RFC 9112 §9.5: a server may close an idle persistent connection (after
%% idle_timeout, here 1 s), sending nothing.
idle_connection_closed(Config) ->
    Sock = ?C:connect(timeouts_port(Config)),
    ?C:send(Sock, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, #{status := 200}} = ?C:recv_response(Sock),
    T0 = erlang:monotonic_time(millisecond),
    ok = ?C:expect_closed(Sock, 6000),
    Elapsed = erlang:monotonic_time(millisecond) - T0,
    ?assert(Elapsed >= 900),
    ?C:close(Sock).

%% RFC 9112 §9.5, RFC 9110 §15.5.9: a head not complete in time gets 408
%% and the connection is closed.
incomplete_head_408(Config) ->
    Sock = ?C:connect(timeouts_port(Config)),
    ?C:send(Sock, <<"GET / HTTP/1.1\r\n" ?HOST>>),
    {ok, R = #{status := 408}} = ?C:recv_response(Sock, #{timeout => 6000}),
    ?assert(?C:has_token(<<"connection">>, <<"close">>, R)),
    ok = ?C:expect_closed(Sock, 2000),
    ?assertEqual([], calls(Config)),
    ?C:close(Sock).

%% RFC 9112 §8, RFC 9110 §15.5.9: a body that stops arriving: 408 and close.
incomplete_body_408(Config) ->
    Sock = ?C:connect(timeouts_port(Config)),
    ?C:send(Sock, <<"POST / HTTP/1.1\r\n" ?HOST "Content-Length: 10\r\n\r\nabc">>),
    {ok, R = #{status := 408}} = ?C:recv_response(Sock, #{timeout => 6000}),
    ?assert(?C:has_token(<<"connection">>, <<"close">>, R)),
    ok = ?C:expect_closed(Sock, 3000),
    ?assertEqual([], calls(Config)),
    ?C:close(Sock).

%% RFC 9112 §9.6: a client that half-closes after its request still gets
%% the response, then the server closes.
client_half_close(Config) ->
    Sock = ?C:connect(port(Config)),
    ?C:send(Sock, <<"POST /hc HTTP/1.1\r\n" ?HOST "Content-Length: 2\r\n\r\nhi">>),
    ok = gen_tcp:shutdown(Sock, write),
    {ok, R} = ?C:recv_response(Sock),
    #{path := <<"/hc">>, body := <<"hi">>} = binary_to_term(maps:get(body, R)),
    ok = ?C:expect_closed(Sock, 2000),
    ?C:close(Sock).
