%% @doc The one place where error reasons become HTTP statuses.
%%
%% Codecs and connection loops report errors as data (`{bad_request, Why}',
%% `uri_too_long', ...); this module maps each to the status the RFC asks for
%% (RFC 9112 §3, §5, §6; RFC 9110 §15.5, §15.6) and builds the small plain
%% text body sent with it.
-module(falco_errors).

-export([status/1, body/1]).

-type reason() :: falco_http1:reason() | content_too_large | request_timeout | body_timeout
                | internal_error.
-export_type([reason/0]).

%% @doc The status code for an error reason.
-spec status(reason()) -> 400..599.
status({bad_request, _}) -> 400;
status(request_timeout) -> 408;
status(body_timeout) -> 408;
status(content_too_large) -> 413;
status(uri_too_long) -> 414;
status(expectation_failed) -> 417;
status({header_too_large, _}) -> 431;
status(internal_error) -> 500;
status({not_implemented, _}) -> 501;
status(version_not_supported) -> 505.

%% @doc A short text/plain body naming the status.
-spec body(reason()) -> nonempty_binary().
body(Reason) ->
    Status = status(Reason),
    <<(falco_http1_encode:reason_phrase(Status))/binary, "\n">>.
