%% @doc The one place where error reasons become HTTP statuses and error
%% responses.
%%
%% Codecs, connection loops, the pipeline and the handlers falco ships
%% (router, static files, compression, conditional requests, ranges) report
%% errors as data (`{bad_request, Why}', `uri_too_long', `not_found',
%% `{method_not_allowed, Allow}', ...). This module maps each to the status
%% the RFC asks for (RFC 9112 §3, §5, §6; RFC 9110 §15.5, §15.6), adds the
%% fields that status needs (Allow for 405, Accept-Encoding for a 415 about
%% a content coding, Content-Range for 416, Vary for a 406 about codings,
%% Upgrade and Sec-WebSocket-Version for a refused WebSocket handshake)
%% and builds the short text/plain body naming the status (for a refused
%% handshake, what was wrong and what a client must send, in words).
%%
%% A WebSocket handshake falco_ws_handshake refuses is
%% `{websocket_handshake, Why}', the same reason over HTTP/1.1 (RFC 6455
%% §4.2) and over HTTP/2 (RFC 8441 §4, where the Upgrade and Connection
%% fields of the 426, connection-specific, are dropped).
%%
%% {@link response/1} is the reply as a handler returns it; the pipeline
%% sends the same for the errors falco answers itself, with the fields of a
%% reply that ends the exchange ({@link falco_pipeline:error_reply/4}).
%%
%% @private internal to falco
-module(falco_errors).

-export([status/1, fields/1, body/1, response/1, reason_phrase/1]).

-type reason() :: falco_http1:reason() | content_too_large | request_timeout | body_timeout
                | internal_error
                | handler_timeout
                | {max_requests_in_flight, RetryAfter :: pos_integer()}
                | not_found
                | {method_not_allowed, Allowed :: [binary()]}
                | {coding_not_acceptable, Available :: [binary()]}
                | precondition_failed
                | {unsupported_content_coding, Accepted :: [binary()]}
                | {range_not_satisfiable, Size :: non_neg_integer()}
                | {too_many_requests, RetryAfter :: pos_integer()}
                | {multipart, Why :: term()}
                | {websocket_handshake, websocket_refusal()}.
%% Why a WebSocket opening handshake is refused (falco_ws_handshake).
-type websocket_refusal() :: not_a_websocket_request | unsupported_version | method_not_get
                           | http_1_0 | bad_key.
-export_type([reason/0, websocket_refusal/0]).

%% @doc The status code for an error reason.
-spec status(reason()) -> 400..599.
status({bad_request, _}) -> 400;
status(not_found) -> 404;
status({method_not_allowed, _}) -> 405;
status({coding_not_acceptable, _}) -> 406;
status(request_timeout) -> 408;
status(body_timeout) -> 408;
status(precondition_failed) -> 412;
status(content_too_large) -> 413;
status(uri_too_long) -> 414;
status({unsupported_content_coding, _}) -> 415;
status({range_not_satisfiable, _}) -> 416;
status(expectation_failed) -> 417;
status({too_many_requests, _}) -> 429;
status({header_too_large, _}) -> 431;
%% RFC 9110 §15.5.22: a plain request to a WebSocket endpoint, or a version
%% other than 13 (RFC 6455 §4.4), is told to upgrade; a handshake that is
%% wrong in itself (§4.2.1: not a GET, HTTP/1.0, a bad key) is a 400
%% (§4.2.2 item 1 asks for "an appropriate error code (such as 400)").
status({websocket_handshake, not_a_websocket_request}) -> 426;
status({websocket_handshake, unsupported_version}) -> 426;
status({websocket_handshake, _}) -> 400;
status(internal_error) -> 500;
status({not_implemented, _}) -> 501;
status(handler_timeout) -> 503;
status({max_requests_in_flight, _}) -> 503;
status(version_not_supported) -> 505;
%% falco_multipart's parse errors: a body that is not multipart is the
%% wrong media type (RFC 9110 §15.5.16), a limit is a body too large.
status({multipart, not_multipart}) -> 415;
status({multipart, Limit}) when Limit =:= too_many_parts; Limit =:= header_too_large;
                                Limit =:= part_too_large -> 413;
status({multipart, _}) -> 400.

%% @doc The fields a reason's reply carries besides Content-Type.
-spec fields(reason()) -> [{binary(), binary()}].
fields({method_not_allowed, Allowed}) ->
    %% RFC 9110 §15.5.6: a 405 MUST list the methods the target supports.
    [{<<"allow">>, join(Allowed)}];
fields({coding_not_acceptable, _}) ->
    %% RFC 9110 §12.5.5: the answer depended on Accept-Encoding.
    [{<<"vary">>, <<"accept-encoding">>}];
fields({unsupported_content_coding, Accepted}) ->
    %% RFC 9110 §15.5.16, §12.5.3: say which content codings would do.
    [{<<"accept-encoding">>, join(Accepted)}];
fields({max_requests_in_flight, RetryAfter}) ->
    %% Load shedding (falco_stats): RFC 9110 §10.2.3, when to try again.
    [{<<"retry-after">>, integer_to_binary(RetryAfter)}];
fields({range_not_satisfiable, Size}) ->
    %% RFC 9110 §15.5.17, §14.4: the current length of the representation.
    [{<<"content-range">>, <<"bytes */", (integer_to_binary(Size))/binary>>}];
fields({too_many_requests, Seconds}) ->
    %% RFC 6585 §4, RFC 9110 §10.2.3: how long to wait, in seconds.
    [{<<"retry-after">>, integer_to_binary(Seconds)}];
fields({websocket_handshake, Why}) ->
    %% RFC 6455 §4.4: a refusal names the versions the server speaks, so
    %% every refusal does (the client's next try needs it whatever was
    %% wrong); RFC 9110 §15.5.22: a 426 names the protocol to upgrade to,
    %% with the "upgrade" connection option (§7.8).
    Upgrade = case Why of
                  not_a_websocket_request -> [{<<"upgrade">>, <<"websocket">>},
                                              {<<"connection">>, <<"upgrade">>}];
                  _ -> []
              end,
    Upgrade ++ [{<<"sec-websocket-version">>, <<"13">>}];
fields(_) ->
    [].

%% @doc A short text/plain body naming the status; a 406 about content
%% codings also lists the ones the resource is available in (RFC 9110
%% §15.5.7).
-spec body(reason()) -> nonempty_binary().
body({coding_not_acceptable, Available}) ->
    <<(reason_phrase(406))/binary, ": this resource is available as ", (join(Available))/binary, "\n">>;
body({websocket_handshake, Why}) ->
    %% the reason atom alone told a developer little
    refusal(Why);
body(Reason) ->
    <<(reason_phrase(status(Reason)))/binary, "\n">>.

refusal(not_a_websocket_request) ->
    <<"This resource is a WebSocket endpoint: open it with a WebSocket client "
      "(GET with Upgrade: websocket and Connection: Upgrade, or an HTTP/2 "
      "extended CONNECT with :protocol websocket).\n">>;
refusal(unsupported_version) ->
    <<"WebSocket handshake refused: only Sec-WebSocket-Version 13 (RFC 6455) "
      "is supported.\n">>;
refusal(method_not_get) ->
    <<"WebSocket handshake refused: the opening handshake must be a GET.\n">>;
refusal(http_1_0) ->
    <<"WebSocket handshake refused: the opening handshake needs HTTP/1.1.\n">>;
refusal(bad_key) ->
    <<"WebSocket handshake refused: Sec-WebSocket-Key must be one base64-encoded "
      "16-byte value.\n">>.

%% @doc The reply to an error as a handler returns it:
%% `{Status, Fields, Body}', with the reason's fields and Content-Type.
-spec response(reason()) -> {400..599, [{binary(), binary()}], nonempty_binary()}.
response(Reason) ->
    {status(Reason), fields(Reason) ++ [{<<"content-type">>, <<"text/plain">>}], body(Reason)}.

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

join(Items) ->
    iolist_to_binary(lists:join(<<", ">>, Items)).
