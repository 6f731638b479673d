%% @doc Pure HTTP/1.1 response-head encoder (RFC 9112 §4, RFC 9110 §15).
%%
%% Produces iodata for one `send': status line, fields, blank line. Status
%% lines for the common codes are literals, so a hot response allocates only
%% its field list. Field names and values are checked elsewhere
%% ({@link falco_pipeline:check_fields/1}); this module trusts its input.
%%
%% @private internal to falco
-module(falco_http1_encode).

-export([head/2, status_line/1, continue/0]).

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
                        falco_errors:reason_phrase(Status), <<"\r\n">>].

