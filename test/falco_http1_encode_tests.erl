%% EUnit tests for the HTTP/1.1 response-head encoder (falco_http1_encode):
%% status lines (RFC 9112 §4), reason phrases (RFC 9110 §15), field lines
%% (RFC 9112 §5) and the 100 Continue interim response (RFC 9110 §15.2.1).
-module(falco_http1_encode_tests).
-include_lib("eunit/include/eunit.hrl").

-import(falco_http1_encode, [head/2, status_line/1]).
-import(falco_errors, [reason_phrase/1]).

bin(IoData) -> iolist_to_binary(IoData).

%% RFC 9110 §15: every status falco names, with the RFC's phrase (typed
%% here from the RFC, not from the module).
rfc9110_phrases() ->
    [{100, "Continue"}, {101, "Switching Protocols"},
     {200, "OK"}, {201, "Created"}, {202, "Accepted"}, {203, "Non-Authoritative Information"},
     {204, "No Content"}, {205, "Reset Content"}, {206, "Partial Content"},
     {300, "Multiple Choices"}, {301, "Moved Permanently"}, {302, "Found"}, {303, "See Other"},
     {304, "Not Modified"}, {307, "Temporary Redirect"}, {308, "Permanent Redirect"},
     {400, "Bad Request"}, {401, "Unauthorized"}, {403, "Forbidden"}, {404, "Not Found"},
     {405, "Method Not Allowed"}, {406, "Not Acceptable"}, {408, "Request Timeout"},
     {409, "Conflict"}, {410, "Gone"}, {411, "Length Required"}, {412, "Precondition Failed"},
     {413, "Content Too Large"}, {414, "URI Too Long"}, {415, "Unsupported Media Type"},
     {416, "Range Not Satisfiable"}, {417, "Expectation Failed"}, {421, "Misdirected Request"},
     {422, "Unprocessable Content"}, {426, "Upgrade Required"},
     %% RFC 6585 §3, §4, §5
     {428, "Precondition Required"}, {429, "Too Many Requests"},
     {431, "Request Header Fields Too Large"},
     {500, "Internal Server Error"}, {501, "Not Implemented"}, {502, "Bad Gateway"},
     {503, "Service Unavailable"}, {504, "Gateway Timeout"}, {505, "HTTP Version Not Supported"}].

reason_phrases_test_() ->
    [?_assertEqual(list_to_binary(Phrase), reason_phrase(Code)) || {Code, Phrase} <- rfc9110_phrases()].

%% RFC 9112 §4: status-line = HTTP-version SP status-code SP [ reason-phrase ]
%% CRLF, whether the line is prebuilt or assembled.
status_lines_test_() ->
    [?_assertEqual(<<"HTTP/1.1 ", (integer_to_binary(Code))/binary, " ", (list_to_binary(P))/binary,
                     "\r\n">>,
                   bin(status_line(Code)))
     || {Code, P} <- rfc9110_phrases()].

%% RFC 9112 §4: the reason phrase may be empty, the SP before it may not.
unknown_status_test() ->
    ?assertEqual(<<>>, reason_phrase(299)),
    ?assertEqual(<<>>, reason_phrase(999)),
    ?assertEqual(<<"HTTP/1.1 299 \r\n">>, bin(status_line(299))),
    ?assertEqual(<<"HTTP/1.1 599 \r\n">>, bin(status_line(599))).

%% RFC 9112 §5: one "name: value" line per field, in the given order, then
%% the empty line; repeated names stay separate lines; iodata is accepted.
head_test() ->
    ?assertEqual(<<"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nx-a: 1\r\nx-a: 2\r\n"
                   "x-io: ab\r\n\r\n">>,
                 bin(head(200, [{<<"content-type">>, <<"text/plain">>}, {<<"x-a">>, <<"1">>},
                                {<<"x-a">>, <<"2">>}, {[<<"x-">>, "io"], [$a, <<"b">>]}]))),
    ?assertEqual(<<"HTTP/1.1 204 No Content\r\n\r\n">>, bin(head(204, []))),
    ?assertEqual(<<"HTTP/1.1 418 \r\nx: y\r\n\r\n">>, bin(head(418, [{<<"x">>, <<"y">>}]))).

%% The head parses back with falco's own strict response reader rules:
%% exactly one CRLF CRLF, at the end.
head_ends_once_test() ->
    H = bin(head(404, [{<<"a">>, <<"b">>}])),
    ?assertMatch([_, <<>>], binary:split(H, <<"\r\n\r\n">>)).

%% RFC 9110 §15.2.1: the interim response, a complete head without fields.
continue_test() ->
    ?assertEqual(<<"HTTP/1.1 100 Continue\r\n\r\n">>, bin(falco_http1_encode:continue())),
    ?assertEqual(bin(head(100, [])), bin(falco_http1_encode:continue())).
