%% @doc Pure HTTP/1.1 response-head encoder (RFC 9112 §4, RFC 9110 §15).
%%
%% Produces iodata for one `send': status line, fields, blank line. Status
%% lines for the common codes are literals, so a hot response allocates only
%% its field list. Field names and values are checked elsewhere
%% ({@link falco_pipeline:check_fields/1}); this module trusts its input.
%%
%% @private internal to falco
-module(falco_http1_encode).

-export([head/2, status_line/1, reason_phrase/1, continue/0]).

%% @doc The response head for `Status' and `Headers'.
-spec head(100..999, [{iodata(), iodata()}]) -> iodata().
head(Status, Headers) ->
    [status_line(Status), fields(Headers)].

fields([{N, V} | T]) -> [N, <<": ">>, V, <<"\r\n">> | fields(T)];
fields([]) -> [<<"\r\n">>].

%% @doc The interim response that invites the body (RFC 9110 §15.2.1).
-spec continue() -> binary().
continue() -> <<"HTTP/1.1 100 Continue\r\n\r\n">>.

%% @doc The status line. 1.0 requests are answered as HTTP/1.1 too: a server
%% sends the highest minor version it conforms to (RFC 9110 §6.2), and the
%% connection code keeps 1.0 framing rules (no chunked, close by default).
-spec status_line(100..999) -> iodata().
status_line(200) -> <<"HTTP/1.1 200 OK\r\n">>;
status_line(204) -> <<"HTTP/1.1 204 No Content\r\n">>;
status_line(304) -> <<"HTTP/1.1 304 Not Modified\r\n">>;
status_line(404) -> <<"HTTP/1.1 404 Not Found\r\n">>;
status_line(Status) -> [<<"HTTP/1.1 ">>, integer_to_binary(Status), <<" ">>,
                        reason_phrase(Status), <<"\r\n">>].

%% @doc The reason phrase of a status code (RFC 9110 §15); empty if unknown.
-spec reason_phrase(100..999) -> binary().
reason_phrase(100) -> <<"Continue">>;
reason_phrase(101) -> <<"Switching Protocols">>;
reason_phrase(200) -> <<"OK">>;
reason_phrase(201) -> <<"Created">>;
reason_phrase(202) -> <<"Accepted">>;
reason_phrase(203) -> <<"Non-Authoritative Information">>;
reason_phrase(204) -> <<"No Content">>;
reason_phrase(205) -> <<"Reset Content">>;
reason_phrase(206) -> <<"Partial Content">>;
reason_phrase(300) -> <<"Multiple Choices">>;
reason_phrase(301) -> <<"Moved Permanently">>;
reason_phrase(302) -> <<"Found">>;
reason_phrase(303) -> <<"See Other">>;
reason_phrase(304) -> <<"Not Modified">>;
reason_phrase(307) -> <<"Temporary Redirect">>;
reason_phrase(308) -> <<"Permanent Redirect">>;
reason_phrase(400) -> <<"Bad Request">>;
reason_phrase(401) -> <<"Unauthorized">>;
reason_phrase(403) -> <<"Forbidden">>;
reason_phrase(404) -> <<"Not Found">>;
reason_phrase(405) -> <<"Method Not Allowed">>;
reason_phrase(406) -> <<"Not Acceptable">>;
reason_phrase(408) -> <<"Request Timeout">>;
reason_phrase(409) -> <<"Conflict">>;
reason_phrase(410) -> <<"Gone">>;
reason_phrase(411) -> <<"Length Required">>;
reason_phrase(412) -> <<"Precondition Failed">>;
reason_phrase(413) -> <<"Content Too Large">>;
reason_phrase(414) -> <<"URI Too Long">>;
reason_phrase(415) -> <<"Unsupported Media Type">>;
reason_phrase(416) -> <<"Range Not Satisfiable">>;
reason_phrase(417) -> <<"Expectation Failed">>;
reason_phrase(421) -> <<"Misdirected Request">>;
reason_phrase(422) -> <<"Unprocessable Content">>;
reason_phrase(426) -> <<"Upgrade Required">>;
reason_phrase(428) -> <<"Precondition Required">>;
reason_phrase(429) -> <<"Too Many Requests">>;
reason_phrase(431) -> <<"Request Header Fields Too Large">>;
reason_phrase(500) -> <<"Internal Server Error">>;
reason_phrase(501) -> <<"Not Implemented">>;
reason_phrase(502) -> <<"Bad Gateway">>;
reason_phrase(503) -> <<"Service Unavailable">>;
reason_phrase(504) -> <<"Gateway Timeout">>;
reason_phrase(505) -> <<"HTTP Version Not Supported">>;
reason_phrase(_) -> <<>>.
