%% RFC 9110 (HTTP semantics): what falco's shared request pipeline adds
%% around a handler, checked over every protocol falco serves. The groups
%% http (HTTP/1.1), https (HTTP/1.1 over TLS, ALPN http/1.1), h2c (HTTP/2
%% prior knowledge) and h2 (HTTP/2 over TLS, ALPN h2) run the same cases
%% with one client (falco_test_http): HEAD, Date, Content-Length,
%% Expect: 100-continue, statuses without content, response field checks,
%% handler crashes and bad returns, streamed and file replies, request
%% content and trailers, limits. Where the same semantics take a
%% protocol's own shape (an HTTP/1.1 error reply closes the connection, an
%% HTTP/2 one ends only its stream), a case checks that shape too. The
%% group http1_only holds what only HTTP/1.1 has (Connection, HTTP/1.0,
%% chunk framing, a malformed request line). The routes the cases call
%% are in rfc9110_handler. Every case names the section it checks.
-module(rfc9110_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, init_per_suite/1, end_per_suite/1,
         init_per_group/2, end_per_group/2, init_per_testcase/2, end_per_testcase/2]).
%% logger handler callback, used to see the crash log line
-export([log/2]).
-export([
         %% §9.3.2 HEAD
         head_same_fields_no_body/1, head_stream_reply/1, head_file_reply/1,
         head_error_replies/1, head_431_no_content/1,
         %% §6.6.1 Date
         date_on_every_response/1, date_from_handler_kept/1, date_on_error_responses/1,
         %% §8.6 Content-Length
         content_length_automatic/1, content_length_from_handler_replaced/1,
         content_length_large_body/1,
         %% §10.1.1 Expect
         expect_continue_when_body_read/1, expect_continue_not_read/1,
         expect_continue_without_body/1, expect_unknown_417/1,
         expect_continue_too_large_413/1, expect_continue_repeated/1,
         %% §15 statuses without content
         status_204_no_body/1, status_304_no_body/1, status_205_has_length/1,
         stream_204_no_body/1, file_304_no_body/1,
         %% §5 response fields
         response_field_crlf_injection/1, response_field_bad_name/1,
         response_field_nul/1, response_fields_lowercased/1, bad_handler_return/1,
         handler_transfer_encoding_dropped/1,
         %% §15.6.1 errors
         handler_crash_500_and_keeps_serving/1, stream_crash_incomplete/1,
         %% streamed and file replies
         stream_with_trailers/1, stream_empty_pieces/1, stream_with_content_length/1,
         stream_large_body/1, sendfile_reply/1, sendfile_range/1, sendfile_missing_404/1,
         sendfile_empty_file/1,
         %% request semantics seen by the handler
         request_accessors/1, host_ip_literal/1, bad_host_400/1, body_read_in_pieces/1,
         body_without_length/1, request_trailers_seen/1,
         %% limits and methods falco refuses
         content_too_large_413/1, too_many_fields_431/1, connect_501/1,
         %% HTTP/1.1 only
         date_on_bad_request_400/1, expect_ignored_http10/1, handler_keep_alive_when_closing/1,
         stream_chunked/1, stream_crash_cuts_connection/1, connection_close_reply/1
        ]).

-define(H, falco_test_http).
-define(C, falco_test_client).
-define(HOST, "Host: example.com\r\n").
-define(MAX_BODY, 2000000).
-define(MAX_FIELDS, 50).

all() ->
    [{group, P} || P <- ?H:protocols()] ++ [{group, http1_only}].

%% Every protocol group runs the same semantic groups.
groups() ->
    Semantics = semantic_groups(),
    [{P, [], [{group, G} || {G, _, _} <- Semantics]} || P <- ?H:protocols()]
        ++ Semantics
        ++ [{http1_only, [], [date_on_bad_request_400, expect_ignored_http10,
                              handler_keep_alive_when_closing, stream_chunked,
                              stream_crash_cuts_connection, connection_close_reply]}].

semantic_groups() ->
    [{head, [], [head_same_fields_no_body, head_stream_reply, head_file_reply,
                 head_error_replies, head_431_no_content]},
     {date, [], [date_on_every_response, date_from_handler_kept, date_on_error_responses]},
     {content_length, [], [content_length_automatic, content_length_from_handler_replaced,
                           content_length_large_body]},
     {expect, [], [expect_continue_when_body_read, expect_continue_not_read,
                   expect_continue_without_body, expect_unknown_417,
                   expect_continue_too_large_413, expect_continue_repeated]},
     {no_content, [], [status_204_no_body, status_304_no_body, status_205_has_length,
                       stream_204_no_body, file_304_no_body]},
     {response_fields, [], [response_field_crlf_injection, response_field_bad_name,
                            response_field_nul, response_fields_lowercased,
                            bad_handler_return, handler_transfer_encoding_dropped]},
     {errors, [], [handler_crash_500_and_keeps_serving, stream_crash_incomplete]},
     {replies, [], [stream_with_trailers, stream_empty_pieces, stream_with_content_length,
                    stream_large_body, sendfile_reply, sendfile_range, sendfile_missing_404,
                    sendfile_empty_file]},
     {request, [], [request_accessors, host_ip_literal, bad_host_400, body_read_in_pieces,
                    body_without_length, request_trailers_seen]},
     {limits, [], [content_too_large_413, too_many_fields_431, connect_501]}].

%% Where falco's HTTP/2 side does not yet do what its HTTP/1.1 side does
%% (a known divergence), or a protocol's side has a known bug, the case is
%% skipped for those groups only, and says why; the case itself states the
%% one expected behaviour, and runs again once the server is fixed.
divergence(_, _) ->
    none.

init_per_suite(Config) ->
    ok = falco_test_listener:start_tls_app(),
    File = filename:join(?config(priv_dir, Config), "payload.bin"),
    Payload = crypto:strong_rand_bytes(200000),
    ok = file:write_file(File, Payload),
    ok = file:write_file(File ++ ".empty", <<>>),
    Rec = ?C:recorder_start(),
    %% (the payload itself stays out of Config, which CT prints in every log)
    [{recorder, Rec}, {file, File} | Config].

end_per_suite(Config) ->
    ?C:recorder_stop(?config(recorder, Config)),
    Config.

%% A listener of its own for each protocol group (and one for
%% http1_only), named after it; the nested semantic groups inherit it.
init_per_group(Group, Config) ->
    case lists:member(Group, [http1_only | ?H:protocols()]) of
        true ->
            Proto = case Group of http1_only -> http; P -> P end,
            Name = list_to_atom("rfc9110_" ++ atom_to_list(Group)),
            Opts = #{handler => rfc9110_handler:new(?config(recorder, Config),
                                                    ?config(file, Config)),
                     %% generous: a loaded machine must not time a case out
                     idle_timeout => 10000, request_timeout => 10000, body_timeout => 10000,
                     max_body => ?MAX_BODY, max_header_count => ?MAX_FIELDS},
            {_, Port} = falco_test_listener:start(Name, maps:merge(Opts, ?H:listener_opts(Proto))),
            [{proto, Proto}, {port, Port}, {listener, Name} | Config];
        false ->
            Config
    end.

end_per_group(Group, Config) ->
    case lists:member(Group, [http1_only | ?H:protocols()]) of
        true -> ok = falco_test_listener:stop(?config(listener, Config));
        false -> ok
    end,
    Config.

init_per_testcase(Case, Config) ->
    case divergence(Case, ?config(proto, Config)) of
        none ->
            ok = ?C:recorder_reset(?config(recorder, Config)),
            Config;
        Skip ->
            Skip
    end.

end_per_testcase(_Case, Config) ->
    _ = logger:remove_handler(?MODULE),
    Config.

%% -- helpers -----------------------------------------------------------------

proto(Config) -> ?config(proto, Config).

port(Config) -> ?config(port, Config).

calls(Config) -> ?C:recorded(?config(recorder, Config)).

payload(Config) ->
    {ok, Payload} = file:read_file(?config(file, Config)),
    Payload.

connect(Config) ->
    ?H:connect(proto(Config), port(Config)).

%% One request on a new connection; the whole response.
fetch(Config, Method, Path, Headers, Body) ->
    ?H:fetch(proto(Config), port(Config), Method, Path, Headers, Body).

get_path(Config, Path) ->
    fetch(Config, <<"GET">>, Path, [], <<>>).

%% A request on an open connection: {Response, Conn}.
ask(Conn0, Method, Path) ->
    {ok, R, Conn} = ?H:request(Conn0, Method, Path, [], <<>>),
    {R, Conn}.

%% The connection still serves: one more request on it.
still_serves(Conn0) ->
    {#{status := 200, body := <<"hello world">>}, Conn} = ask(Conn0, <<"GET">>, <<"/hello">>),
    Conn.

without(Names, Headers) ->
    [H || H = {N, _} <- Headers, not lists:member(N, Names)].

%% RFC 9110 §9.3.2, §15.3.5, §15.4.5: no content at all: no body bytes and,
%% over HTTP/2, no DATA frame (END_STREAM on the HEADERS frame).
assert_no_content(R) ->
    ?assertEqual(<<>>, maps:get(body, R)),
    ?assertEqual(0, maps:get(data_frames, R, 0)).

%% After an error reply falco made itself, the rest of the request is not
%% read: over HTTP/1.1 the reply says "close" and the connection closes
%% (RFC 9112 §9.6); over HTTP/2 only the stream ends, and the connection
%% serves on (RFC 9113 §5.4.2).
after_error_reply(Conn, R) ->
    case ?H:is_http1(Conn) of
        true ->
            ?assert(?C:has_token(<<"connection">>, <<"close">>, R)),
            ?assertEqual(ok, ?H:expect_closed(Conn, 5000)),
            ?H:close(Conn);
        false ->
            ?H:close(still_serves(Conn))
    end.

%% A request on a new connection that must get a 500 (then as
%% after_error_reply/2 says).
expect_500(Config, Path) ->
    Conn0 = connect(Config),
    {R, Conn} = ask(Conn0, <<"GET">>, Path),
    ?assertMatch(#{status := 500}, R),
    after_error_reply(Conn, R),
    R.

%% No field of R has a value with a CR, LF or NUL, or a name with any of
%% them (RFC 9110 §5.5), and none is named Name.
assert_clean_fields(R, Name) ->
    #{wire_headers := Wire} = R,
    ?assertEqual([], [F || F = {N, _} <- Wire, string:lowercase(N) =:= Name]),
    ?assertEqual([], [F || F = {N, V} <- Wire,
                           binary:match(<<N/binary, V/binary>>, [<<"\r">>, <<"\n">>, <<0>>])
                               =/= nomatch]).

%% IMF-fixdate (RFC 9110 §5.6.7) to seconds since 1970.
imf_fixdate(Bin) ->
    {match, [Day, D, Mon, Y, H, Mi, S]} =
        re:run(Bin, "^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), ([0-9]{2}) "
                    "(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) ([0-9]{4}) "
                    "([0-9]{2}):([0-9]{2}):([0-9]{2}) GMT$",
               [{capture, all_but_first, binary}]),
    Months = [<<"Jan">>, <<"Feb">>, <<"Mar">>, <<"Apr">>, <<"May">>, <<"Jun">>, <<"Jul">>,
              <<"Aug">>, <<"Sep">>, <<"Oct">>, <<"Nov">>, <<"Dec">>],
    Month = length(lists:takewhile(fun(M) -> M =/= Mon end, Months)) + 1,
    Date = {binary_to_integer(Y), Month, binary_to_integer(D)},
    Days = [<<"Mon">>, <<"Tue">>, <<"Wed">>, <<"Thu">>, <<"Fri">>, <<"Sat">>, <<"Sun">>],
    ?assertEqual(Day, lists:nth(calendar:day_of_the_week(Date), Days)),
    calendar:datetime_to_gregorian_seconds(
      {Date, {binary_to_integer(H), binary_to_integer(Mi), binary_to_integer(S)}})
        - calendar:datetime_to_gregorian_seconds({{1970, 1, 1}, {0, 0, 0}}).

%% logger handler: forward formatted events to the test process.
log(#{msg := Msg, level := Level}, #{config := #{pid := Pid}}) ->
    Text = case Msg of
               {string, S} -> S;
               {report, R} -> io_lib:format("~0p", [R]);
               {Format, Args} -> io_lib:format(Format, Args)
           end,
    Pid ! {log, Level, unicode:characters_to_binary(Text)},
    ok.

%% -- §9.3.2 HEAD -------------------------------------------------------------

%% RFC 9110 §9.3.2: HEAD is GET without content: the same fields
%% (Content-Length included), no body bytes; the connection stays usable.
head_same_fields_no_body(Config) ->
    Conn0 = connect(Config),
    {G, Conn1} = ask(Conn0, <<"GET">>, <<"/hello">>),
    {H, Conn2} = ask(Conn1, <<"HEAD">>, <<"/hello">>),
    ok = ?H:expect_silence(Conn2, 200),
    #{status := 200, body := <<"hello world">>} = G,
    #{status := 200} = H,
    assert_no_content(H),
    ?assertEqual(lists:sort(without([<<"date">>], maps:get(headers, G))),
                 lists:sort(without([<<"date">>], maps:get(headers, H)))),
    ?assertEqual(<<"11">>, ?C:header(<<"content-length">>, H)),
    ?H:close(still_serves(Conn2)).

%% RFC 9110 §9.3.2: HEAD of a streamed reply: its fields, no content.
head_stream_reply(Config) ->
    Conn0 = connect(Config),
    {H, Conn1} = ask(Conn0, <<"HEAD">>, <<"/stream">>),
    ok = ?H:expect_silence(Conn1, 200),
    #{status := 200} = H,
    assert_no_content(H),
    ?assertEqual(<<"text/plain">>, ?C:header(<<"content-type">>, H)),
    {G, Conn2} = ask(Conn1, <<"GET">>, <<"/stream">>),
    #{status := 200, body := <<"alpha beta gamma">>} = G,
    ?H:close(Conn2).

%% RFC 9110 §9.3.2: HEAD of a file reply: the file's Content-Length, no
%% content.
head_file_reply(Config) ->
    Conn0 = connect(Config),
    {H, Conn1} = ask(Conn0, <<"HEAD">>, <<"/file">>),
    ok = ?H:expect_silence(Conn1, 200),
    #{status := 200} = H,
    assert_no_content(H),
    ?assertEqual(integer_to_binary(byte_size(payload(Config))),
                 ?C:header(<<"content-length">>, H)),
    ?H:close(still_serves(Conn1)).

%% RFC 9110 §9.3.2: replies falco makes itself (404 for a missing file, 500
%% for a crash) carry no content for HEAD either; after the 404 the
%% connection is still in step, and after the 500 nothing follows its
%% header section.
head_error_replies(Config) ->
    Conn0 = connect(Config),
    {H, Conn1} = ask(Conn0, <<"HEAD">>, <<"/file-missing">>),
    #{status := 404} = H,
    assert_no_content(H),
    ?assertEqual(<<"10">>, ?C:header(<<"content-length">>, H)),
    ok = ?H:expect_silence(Conn1, 200),
    ?H:close(still_serves(Conn1)),
    Conn2 = connect(Config),
    {H500, Conn3} = ask(Conn2, <<"HEAD">>, <<"/crash">>),
    #{status := 500} = H500,
    assert_no_content(H500),
    after_error_reply(Conn3, H500).

%% RFC 9110 §9.3.2: an error reply falco makes before any handler runs
%% (431 for more fields than max_header_count, RFC 6585 §5) has the
%% fields of the GET reply and no content for HEAD.
head_431_no_content(Config) ->
    Conn0 = connect(Config),
    {ok, H, Conn1} = ?H:request(Conn0, <<"HEAD">>, <<"/hello">>, too_many_fields(), <<>>),
    #{status := 431} = H,
    assert_no_content(H),
    ?assert(binary_to_integer(?C:header(<<"content-length">>, H)) > 0),
    ?assertEqual([], calls(Config)),
    after_error_reply(Conn1, H).

%% -- §6.6.1 Date ---------------------------------------------------------------

%% RFC 9110 §6.6.1: an origin server with a clock MUST send Date (IMF-fixdate,
%% §5.6.7) on 2xx-4xx; falco's is cached but at most about a second old.
date_on_every_response(Config) ->
    Now = erlang:system_time(second),
    [begin
         R = get_path(Config, P),
         [Date] = ?C:header_values(<<"date">>, R),
         T = imf_fixdate(Date),
         ?assert(abs(T - Now) =< 3)
     end || P <- [<<"/hello">>, <<"/stream">>, <<"/file">>, <<"/status/204">>,
                  <<"/file-missing">>]].

%% RFC 9110 §6.6.1: a Date the handler set (in any case) is sent as is,
%% once.
date_from_handler_kept(Config) ->
    R = get_path(Config, <<"/date">>),
    ?assertEqual([rfc9110_handler:fixed_date()], ?C:header_values(<<"date">>, R)).

%% RFC 9110 §6.6.1: error responses falco generates carry Date too (413
%% for content over max_body, 431 for too many fields, 500).
date_on_error_responses(Config) ->
    Conn0 = connect(Config),
    Conn1 = ?H:send_request(Conn0, <<"POST">>, <<"/echo">>,
                            [{<<"content-length">>, integer_to_binary(?MAX_BODY + 1)}]),
    {ok, R413, Conn2} = ?H:response(Conn1),
    #{status := 413} = R413,
    _ = imf_fixdate(?C:header(<<"date">>, R413)),
    ?H:close(Conn2),
    #{status := 431} = R431 = fetch(Config, <<"GET">>, <<"/hello">>, too_many_fields(), <<>>),
    _ = imf_fixdate(?C:header(<<"date">>, R431)),
    R500 = expect_500(Config, <<"/bad-return">>),
    _ = imf_fixdate(?C:header(<<"date">>, R500)).

%% -- §8.6 Content-Length -------------------------------------------------------

%% RFC 9110 §8.6: full replies carry a Content-Length equal to the octets of
%% the (iodata) body; no chunking.
content_length_automatic(Config) ->
    R = get_path(Config, <<"/hello">>),
    ?assertEqual([<<"11">>], ?C:header_values(<<"content-length">>, R)),
    ?assertEqual(undefined, ?C:header(<<"transfer-encoding">>, R)),
    ?assertEqual(<<"hello world">>, maps:get(body, R)).

%% RFC 9110 §8.6: a sender MUST NOT send a Content-Length that differs from
%% the content; falco computes it and drops any the handler gave.
content_length_from_handler_replaced(Config) ->
    Conn0 = connect(Config),
    {R, Conn1} = ask(Conn0, <<"GET">>, <<"/wrong-length">>),
    ?assertEqual([<<"3">>], ?C:header_values(<<"content-length">>, R)),
    ?assertEqual(<<"abc">>, maps:get(body, R)),
    ok = ?H:expect_silence(Conn1, 200),
    ?H:close(still_serves(Conn1)).

%% RFC 9110 §8.6: a 1 MB body arrives whole and exact, and a 1 MB request
%% body is read whole too.
content_length_large_body(Config) ->
    R = get_path(Config, <<"/big">>),
    Expected = binary:copy(<<"0123456789abcdef">>, 65536),
    ?assertEqual(integer_to_binary(byte_size(Expected)), ?C:header(<<"content-length">>, R)),
    ?assert(maps:get(body, R) =:= Expected),
    Echo = fetch(Config, <<"POST">>, <<"/echo">>, [], Expected),
    #{status := 200} = Echo,
    ?assert(maps:get(body, Echo) =:= Expected).

%% -- §10.1.1 Expect --------------------------------------------------------------

%% RFC 9110 §10.1.1, §15.2.1: a handler that reads the body makes falco
%% send 100 Continue first; the client sends the body only then.
expect_continue_when_body_read(Config) ->
    Conn0 = connect(Config),
    Conn1 = ?H:send_request(Conn0, <<"POST">>, <<"/echo">>,
                            [{<<"expect">>, <<"100-continue">>}, {<<"content-length">>, <<"5">>}]),
    {ok, 100, Conn2} = ?H:informational(Conn1, 5000),
    Conn3 = ?H:send_body(Conn2, <<"hello">>, fin),
    {ok, #{status := 200, body := <<"hello">>}, Conn4} = ?H:response(Conn3),
    %% the connection persists
    ?H:close(still_serves(Conn4)).

%% RFC 9110 §10.1.1: a server that answers without reading the body MUST
%% NOT send 100 first. Over HTTP/1.1 falco then closes, since the client
%% may still be waiting to send a body it will never read (a deliberate
%% choice; the RFC allows either closing or reading and discarding); over
%% HTTP/2 the stream ends and the connection serves on.
expect_continue_not_read(Config) ->
    Conn0 = connect(Config),
    Conn1 = ?H:send_request(Conn0, <<"POST">>, <<"/noread">>,
                            [{<<"expect">>, <<"100-continue">>}, {<<"content-length">>, <<"5">>}]),
    {ok, R, Conn2} = ?H:response(Conn1),
    #{status := 200, body := <<"not read">>, informational := []} = R,
    case ?H:is_http1(Conn2) of
        true -> ?assertEqual(ok, ?H:expect_closed(Conn2, 5000)), ?H:close(Conn2);
        false -> ?H:close(still_serves(Conn2))
    end.

%% RFC 9110 §10.1.1: 100-continue on a request without content: no 100.
expect_continue_without_body(Config) ->
    Conn0 = connect(Config),
    {ok, R, Conn1} = ?H:request(Conn0, <<"GET">>, <<"/hello">>,
                                [{<<"expect">>, <<"100-continue">>}], <<>>),
    #{status := 200, informational := []} = R,
    ?H:close(still_serves(Conn1)).

%% RFC 9110 §10.1.1: an expectation other than 100-continue MAY get 417;
%% falco sends it and never runs the handler.
expect_unknown_417(Config) ->
    Conn0 = connect(Config),
    {ok, R, Conn1} = ?H:request(Conn0, <<"POST">>, <<"/echo">>,
                                [{<<"expect">>, <<"200-ok">>}], <<"hello">>),
    #{status := 417} = R,
    ?assertEqual([], calls(Config)),
    after_error_reply(Conn1, R).

%% RFC 9110 §10.1.1, §15.5.14: a body already known to be too large is
%% refused with 413 instead of a 100 (here over max_body = 2 MB).
expect_continue_too_large_413(Config) ->
    Conn0 = connect(Config),
    Conn1 = ?H:send_request(Conn0, <<"POST">>, <<"/echo">>,
                            [{<<"expect">>, <<"100-continue">>},
                             {<<"content-length">>, <<"5000000">>}]),
    {ok, R, Conn2} = ?H:response(Conn1),
    #{status := 413, informational := []} = R,
    ?assertEqual([], calls(Config)),
    after_error_reply(Conn2, R).

%% RFC 9110 §10.1.1, §5.6.1, §5.3: Expect is a list, and a field line
%% repeated is one list; "100-continue, 100-continue" and a second
%% "100-Continue" (case-insensitive) still expect 100-continue, not 417.
expect_continue_repeated(Config) ->
    Conn0 = connect(Config),
    Conn1 = ?H:send_request(Conn0, <<"POST">>, <<"/echo">>,
                            [{<<"expect">>, <<"100-continue, 100-continue">>},
                             {<<"expect">>, <<"100-Continue">>},
                             {<<"content-length">>, <<"5">>}]),
    {ok, 100, Conn2} = ?H:informational(Conn1, 5000),
    Conn3 = ?H:send_body(Conn2, <<"hello">>, fin),
    {ok, #{status := 200, body := <<"hello">>}, Conn4} = ?H:response(Conn3),
    ?H:close(Conn4).

%% -- statuses without content ------------------------------------------------

%% RFC 9110 §15.3.5, §8.6: a 204 has no content and no Content-Length, even
%% if the handler gave a body; the next response on the connection parses.
status_204_no_body(Config) ->
    no_content(Config, <<"204">>).

%% RFC 9110 §15.4.5: a 304 has no content.
status_304_no_body(Config) ->
    no_content(Config, <<"304">>).

%% RFC 9110 §15.3.5: a streamed 204 is sent without the stream's content
%% (over HTTP/1.1 also without Transfer-Encoding, RFC 9112 §6.1: its
%% content would be read as the start of the next response).
stream_204_no_body(Config) ->
    no_content(Config, <<"204">>, <<"/stream-status/">>).

%% RFC 9110 §15.4.5: a 304 whose handler named a file sends no content.
file_304_no_body(Config) ->
    no_content(Config, <<"304">>, <<"/file-status/">>).

no_content(Config, Code) ->
    no_content(Config, Code, <<"/status/">>).

no_content(Config, Code, Prefix) ->
    Conn0 = connect(Config),
    {R, Conn1} = ask(Conn0, <<"GET">>, <<Prefix/binary, Code/binary>>),
    ?assertEqual(binary_to_integer(Code), maps:get(status, R)),
    ?assertEqual(Code, ?C:header(<<"x-status">>, R)),
    ?assertEqual(undefined, ?C:header(<<"content-length">>, R)),
    ?assertEqual(undefined, ?C:header(<<"transfer-encoding">>, R)),
    assert_no_content(R),
    ok = ?H:expect_silence(Conn1, 200),
    ?H:close(still_serves(Conn1)).

%% RFC 9110 §15.3.6: other 2xx statuses keep their content and length
%% (falco only strips content where the RFC forbids it).
status_205_has_length(Config) ->
    R = get_path(Config, <<"/status/205">>),
    #{status := 205, body := <<"content that must not be sent">>} = R,
    ?assertEqual(<<"29">>, ?C:header(<<"content-length">>, R)).

%% -- §5 response fields --------------------------------------------------------

%% RFC 9110 §5.5: CR and LF are never allowed in a field value; a handler
%% trying to inject a field gets a 500 and nothing of its header is sent.
response_field_crlf_injection(Config) ->
    [begin
         R = expect_500(Config, P),
         assert_clean_fields(R, <<"x-injected">>),
         ?assertEqual(undefined, ?C:header(<<"x-a">>, R))
     end || P <- [<<"/inject">>, <<"/inject-lf">>]].

%% RFC 9110 §5.1: a field name must be a token.
response_field_bad_name(Config) ->
    R1 = expect_500(Config, <<"/bad-name">>),
    assert_clean_fields(R1, <<"bad name">>),
    R2 = expect_500(Config, <<"/bad-name-colon">>),
    assert_clean_fields(R2, <<"x-b">>).

%% RFC 9110 §5.5: NUL is never allowed in a field value.
response_field_nul(Config) ->
    R = expect_500(Config, <<"/nul">>),
    assert_clean_fields(R, <<"x-a">>).

%% RFC 9110 §5.1: field names are case-insensitive; falco sends them in
%% lowercase (as HTTP/2 requires, RFC 9113 §8.2.1) and keeps values as
%% given.
response_fields_lowercased(Config) ->
    #{status := 200, wire_headers := Wire} = get_path(Config, <<"/mixed-case">>),
    ?assert(lists:member({<<"x-mixed-case">>, <<"Value-Kept">>}, Wire)),
    ?assert(lists:member({<<"x-num">>, <<"42">>}, Wire)),
    ?assertEqual([], [N || {N, _} <- Wire, string:lowercase(N) =/= N]).

%% RFC 9110 §15.6.1: a handler returning something that is not a response
%% (an interim 1xx status as final, a body that is not iodata, fields that
%% are not a list) is a server error: a 500, not a dropped connection.
bad_handler_return(Config) ->
    [expect_500(Config, P) || P <- [<<"/bad-return">>, <<"/bad-status">>, <<"/bad-body-atom">>,
                                    <<"/bad-body-int">>, <<"/bad-headers">>]],
    #{status := 200} = get_path(Config, <<"/hello">>).

%% RFC 9110 §6.1 (framing belongs to the protocol: RFC 9112 §6.1, RFC 9113
%% §8.2.2): a Transfer-Encoding field from the handler is dropped, so a
%% full reply never carries it (nor both it and Content-Length), and a
%% stream is framed once, by the protocol (chunked over HTTP/1.1, DATA
%% frames over HTTP/2, which has no Transfer-Encoding at all).
handler_transfer_encoding_dropped(Config) ->
    Conn0 = connect(Config),
    {R1, Conn1} = ask(Conn0, <<"GET">>, <<"/te">>),
    #{status := 200, body := <<"abc">>} = R1,
    ?assertEqual([], ?C:header_values(<<"transfer-encoding">>, R1)),
    ?assertEqual([<<"3">>], ?C:header_values(<<"content-length">>, R1)),
    {R2, Conn2} = ask(Conn1, <<"GET">>, <<"/stream-te">>),
    #{status := 200, body := <<"abc">>} = R2,
    Framing = case ?H:is_http1(Conn2) of
                  true -> [<<"chunked">>];
                  false -> []
              end,
    ?assertEqual(Framing, ?C:header_values(<<"transfer-encoding">>, R2)),
    ok = ?H:expect_silence(Conn2, 200),
    ?H:close(still_serves(Conn2)).

%% -- errors --------------------------------------------------------------------

%% RFC 9110 §15.6.1: a crashing handler gets 500 and a log line naming the
%% request; the listener and its acceptors keep serving (more crashes than
%% acceptors).
handler_crash_500_and_keeps_serving(Config) ->
    ok = logger:add_handler(?MODULE, ?MODULE, #{level => error, config => #{pid => self()}}),
    [expect_500(Config, <<"/crash">>) || _ <- lists:seq(1, 15)],
    receive
        {log, error, Text} ->
            ?assertNotEqual(nomatch, binary:match(Text, <<"/crash">>)),
            ?assertNotEqual(nomatch, binary:match(Text, <<"deliberate_crash">>))
    after 5000 ->
        ct:fail(no_crash_log)
    end,
    #{status := 200, body := <<"hello world">>} = get_path(Config, <<"/hello">>),
    {ok, _} = falco:port(?config(listener, Config)).

%% RFC 9110 §15.6.1, §6.1: once a streamed head is out no status can be
%% sent; a stream that crashes is cut, so the client sees an incomplete
%% message, never a complete wrong one: over HTTP/1.1 the connection closes
%% before the last chunk (RFC 9112 §8), over HTTP/2 the stream is reset
%% with INTERNAL_ERROR (RFC 9113 §8.1).
stream_crash_incomplete(Config) ->
    Conn0 = connect(Config),
    {error, Why, Conn1} = ?H:request(Conn0, <<"GET">>, <<"/stream-crash">>, [], <<>>),
    case ?H:is_http1(Conn1) of
        true -> ?assertEqual(closed, Why);
        false -> ?assertEqual({reset, internal_error}, Why)
    end,
    ?H:close(Conn1),
    #{status := 200} = get_path(Config, <<"/hello">>).

%% -- streamed and file replies -----------------------------------------------------

%% RFC 9110 §6.5: trailer fields after the content of a streamed reply, in
%% lowercase; a streamed reply without a known length has no
%% Content-Length.
stream_with_trailers(Config) ->
    R = get_path(Config, <<"/stream-trailers">>),
    #{status := 200, body := <<"data">>, trailers := T} = R,
    ?assertEqual([{<<"x-checksum">>, <<"abc123">>}, {<<"x-count">>, <<"1">>}], T),
    ?assertEqual(undefined, ?C:header(<<"content-length">>, R)).

%% RFC 9110 §6.4: empty pieces of a stream are not content and must not end
%% it early (over HTTP/1.1 a zero-size chunk would be the last chunk, RFC
%% 9112 §7.1).
stream_empty_pieces(Config) ->
    R = get_path(Config, <<"/stream-empty">>),
    #{status := 200, body := <<"xy">>} = R,
    case R of
        #{protocol := http1} -> ?assertEqual([1, 1], maps:get(chunks, R));
        #{protocol := http2} -> ok
    end.

%% RFC 9110 §8.6: a stream with a known length is sent with it (over
%% HTTP/1.1 unchunked).
stream_with_content_length(Config) ->
    Conn0 = connect(Config),
    {R, Conn1} = ask(Conn0, <<"GET">>, <<"/stream-length">>),
    #{status := 200, body := <<"0123456789">>} = R,
    ?assertEqual([<<"10">>], ?C:header_values(<<"content-length">>, R)),
    ?assertEqual(undefined, ?C:header(<<"transfer-encoding">>, R)),
    ?H:close(still_serves(Conn1)).

%% RFC 9110 §6.4: a streamed reply larger than any buffer (500 KB) arrives
%% whole and in order (over HTTP/2 the handler waits while the client's
%% flow-control window is closed, RFC 9113 §5.2).
stream_large_body(Config) ->
    #{status := 200, body := Body} = get_path(Config, <<"/stream-large">>),
    ?assertEqual(500000, byte_size(Body)),
    ?assert(Body =:= iolist_to_binary([binary:copy(<<I>>, 50000) || I <- lists:seq(1, 10)])).

%% RFC 9110 §8.6: a file reply (sendfile over HTTP/1.1, DATA frames over
%% HTTP/2) carries the file, byte for byte, with its length; the
%% connection persists.
sendfile_reply(Config) ->
    Conn0 = connect(Config),
    {R, Conn1} = ask(Conn0, <<"GET">>, <<"/file">>),
    Payload = payload(Config),
    #{status := 200} = R,
    ?assert(maps:get(body, R) =:= Payload),
    ?assertEqual(integer_to_binary(byte_size(Payload)), ?C:header(<<"content-length">>, R)),
    ?assertEqual(<<"application/octet-stream">>, ?C:header(<<"content-type">>, R)),
    ?H:close(still_serves(Conn1)).

%% RFC 9110 §8.6: part of a file, {file, Path, Offset, Length}.
sendfile_range(Config) ->
    R = get_path(Config, <<"/file-range">>),
    <<_:1000/binary, Part:5000/binary, _/binary>> = payload(Config),
    ?assertEqual(<<"5000">>, ?C:header(<<"content-length">>, R)),
    ?assert(maps:get(body, R) =:= Part).

%% RFC 9110 §15.5.5: a file reply whose file does not exist is a 404.
sendfile_missing_404(Config) ->
    {404, _, Body} = ?H:request(proto(Config), port(Config), <<"GET">>, <<"/file-missing">>,
                                [], <<>>),
    ?assertEqual(<<"Not Found\n">>, Body).

%% RFC 9110 §8.6: an empty file is a zero-length reply, and the connection
%% stays in step.
sendfile_empty_file(Config) ->
    Conn0 = connect(Config),
    {R, Conn1} = ask(Conn0, <<"GET">>, <<"/file-empty">>),
    #{status := 200} = R,
    assert_no_content(R),
    ?assertEqual(<<"0">>, ?C:header(<<"content-length">>, R)),
    ok = ?H:expect_silence(Conn1, 200),
    ?H:close(still_serves(Conn1)).

%% -- request semantics ---------------------------------------------------------

%% RFC 9110 §7.2, §4.2.1, §7.1: the handler sees the method, the version,
%% host (lowercase) and port from Host (from :authority over HTTP/2,
%% RFC 9113 §8.3.1), scheme, peer, query and the request's fields.
request_accessors(Config) ->
    Proto = proto(Config),
    Conn0 = connect(Config),
    {ok, R, Conn} = ?H:request(Conn0, <<"GET">>, <<"/info?a=1">>,
                               [{<<"host">>, <<"Example.COM:8081">>}, {<<"x-a">>, <<"b">>}],
                               <<>>),
    {_, LocalPort} = ?H:sockname(Conn),
    ?H:close(Conn),
    Info = binary_to_term(maps:get(body, R)),
    Version = case ?H:is_http1(Proto) of true -> {1, 1}; false -> {2, 0} end,
    Scheme = case ?H:is_tls(Proto) of true -> https; false -> http end,
    ?assertEqual(#{method => <<"GET">>, version => Version, peer => {{127, 0, 0, 1}, LocalPort},
                   scheme => Scheme, host => <<"example.com">>, port => 8081, qs => <<"a=1">>,
                   listener => ?config(listener, Config), has_body => false, header => <<"b">>,
                   missing => default}, Info).

%% RFC 9110 §7.2, RFC 3986 §3.2.2: an IP-literal host keeps its brackets,
%% in lowercase, and its port is read after them.
host_ip_literal(Config) ->
    R = fetch(Config, <<"GET">>, <<"/info">>, [{<<"host">>, <<"[::FFFF:7F00:1]:8082">>}], <<>>),
    #{status := 200} = R,
    ?assertMatch(#{host := <<"[::ffff:7f00:1]">>, port := 8082}, binary_to_term(maps:get(body, R))).

%% RFC 9110 §7.2, RFC 3986 §3.2.2, §3.2.3 (RFC 9112 §3.2 over HTTP/1.1;
%% RFC 9113 §8.3.1 over HTTP/2, where Host is sent as :authority): a Host
%% that is not `host [":" port]' is 400 and never reaches the handler.
%% Both protocols read it with the same rule (falco_grammar:authority/1).
bad_host_400(Config) ->
    [begin
         Conn0 = connect(Config),
         {ok, R, Conn1} = ?H:request(Conn0, <<"GET">>, <<"/hello">>, [{<<"host">>, Host}], <<>>),
         ?assertMatch({_, #{status := 400}}, {Host, R}),
         ?assertEqual([], calls(Config)),
         after_error_reply(Conn1, R),
         ok = ?C:recorder_reset(?config(recorder, Config))
     end || Host <- [<<"exa mple.com">>, <<"example.com:65536">>, <<"example.com:8o">>,
                     <<"[::1">>, <<"[::1]x">>, <<"ex%zzample.com">>, <<":80">>, <<"a:b:c">>]].

%% RFC 9110 §6.4: content may be consumed incrementally; each piece is at
%% most the length asked for and together they are the content.
body_read_in_pieces(Config) ->
    Body = <<"abcdefghijklmnopqrstuvwxyz">>,
    R = fetch(Config, <<"POST">>, <<"/pieces">>, [], Body),
    Pieces = binary_to_term(maps:get(body, R)),
    ?assertEqual(Body, iolist_to_binary(Pieces)),
    ?assert(lists:all(fun(P) -> byte_size(P) =< 7 end, Pieces)),
    ?assert(length(Pieces) >= 4).

%% RFC 9110 §8.6, §6.4: content whose length is not given in advance
%% (chunked over HTTP/1.1, DATA frames up to END_STREAM over HTTP/2) is
%% read whole.
body_without_length(Config) ->
    Conn0 = connect(Config),
    Conn1 = ?H:send_request(Conn0, <<"POST">>, <<"/echo">>, []),
    Conn2 = ?H:send_body(Conn1, <<"no length ">>, nofin),
    Conn3 = ?H:send_body(Conn2, <<"given">>, fin),
    {ok, #{status := 200, body := <<"no length given">>}, Conn4} = ?H:response(Conn3),
    ?H:close(Conn4).

%% RFC 9110 §6.5: trailer fields after the request content reach the
%% handler (the last chunk's fields over HTTP/1.1, a trailing HEADERS frame
%% over HTTP/2).
request_trailers_seen(Config) ->
    Conn0 = connect(Config),
    Conn1 = ?H:send_request(Conn0, <<"POST">>, <<"/trailers">>, []),
    Conn2 = ?H:send_body(Conn1, <<"body">>, nofin),
    Conn3 = ?H:send_trailers(Conn2, [{<<"x-sum">>, <<"42">>}]),
    {ok, #{status := 200, body := B}, Conn4} = ?H:response(Conn3),
    ?assertEqual({<<"body">>, [{<<"x-sum">>, <<"42">>}]}, binary_to_term(B)),
    ?H:close(Conn4).

%% -- limits and refused methods -------------------------------------------------------

%% RFC 9110 §15.5.14: content over max_body (2 MB here) is 413, whether its
%% length is given in advance (the handler never runs) or found while the
%% handler reads it.
content_too_large_413(Config) ->
    Conn0 = connect(Config),
    Conn1 = ?H:send_request(Conn0, <<"POST">>, <<"/echo">>,
                            [{<<"content-length">>, integer_to_binary(?MAX_BODY + 1)}]),
    {ok, R1, Conn2} = ?H:response(Conn1),
    #{status := 413} = R1,
    ?assertEqual([], calls(Config)),
    after_error_reply(Conn2, R1),
    Conn3 = connect(Config),
    Conn4 = ?H:send_request(Conn3, <<"POST">>, <<"/echo">>, []),
    Conn5 = ?H:send_body(Conn4, binary:copy(<<"z">>, ?MAX_BODY + 1), fin),
    {ok, R2, Conn6} = ?H:response(Conn5, 10000),
    #{status := 413} = R2,
    after_error_reply(Conn6, R2).

%% RFC 6585 §5 (RFC 9110 §15.5): more fields than max_header_count (50
%% here) is 431 before the handler runs.
too_many_fields_431(Config) ->
    Conn0 = connect(Config),
    {ok, R, Conn1} = ?H:request(Conn0, <<"GET">>, <<"/hello">>, too_many_fields(), <<>>),
    #{status := 431} = R,
    ?assertNotEqual(<<>>, maps:get(body, R)),
    ?assertEqual([], calls(Config)),
    after_error_reply(Conn1, R).

too_many_fields() ->
    [{<<"x-", (integer_to_binary(I))/binary>>, <<"v">>} || I <- lists:seq(1, ?MAX_FIELDS + 1)].

%% RFC 9110 §9.3.6, §15.6.2: falco is no proxy: CONNECT gets 501 Not
%% Implemented and never reaches the handler.
connect_501(Config) ->
    Conn0 = connect(Config),
    {ok, R, Conn1} = ?H:request(Conn0, <<"CONNECT">>, <<"example.com:443">>,
                                [{<<"host">>, <<"example.com:443">>}], <<>>),
    #{status := 501} = R,
    ?assertEqual([], calls(Config)),
    after_error_reply(Conn1, R).

%% -- HTTP/1.1 only ----------------------------------------------------------------

%% RFC 9110 §6.6.1, RFC 9112 §5: the 400 falco sends for a malformed
%% HTTP/1.1 request (a field name with a space) carries Date too. (HTTP/2
%% has no such reply: a malformed request is a stream error, RFC 9113
%% §8.1.1.)
date_on_bad_request_400(Config) ->
    #{responses := [R400], closed := closed} =
        ?C:exchange(port(Config), <<"GET / HTTP/1.1\r\nBad Field: x\r\n\r\n">>),
    #{status := 400} = R400,
    _ = imf_fixdate(?C:header(<<"date">>, R400)),
    ?assertEqual([], calls(Config)).

%% RFC 9110 §10.1.1: a server MUST ignore 100-continue in an HTTP/1.0 request.
expect_ignored_http10(Config) ->
    Sock = ?C:connect(port(Config)),
    ?C:send(Sock, <<"POST /echo HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"
                    "hello">>),
    {ok, R} = ?C:recv_response(Sock),
    #{status := 200, body := <<"hello">>} = R,
    ?C:close(Sock).

%% RFC 9112 §9.6: when the server is going to close (here the client asked
%% for it) it says "close", even if the handler wrote "keep-alive".
handler_keep_alive_when_closing(Config) ->
    Sock = ?C:connect(port(Config)),
    ?C:send(Sock, <<"GET /keep-alive HTTP/1.1\r\n" ?HOST "Connection: close\r\n\r\n">>),
    {ok, R} = ?C:recv_response(Sock),
    ?assertEqual([<<"close">>], ?C:header_values(<<"connection">>, R)),
    ok = ?C:expect_closed(Sock, 5000),
    ?C:close(Sock),
    %% and keeps the handler's field when it is not closing
    #{status := 200} = R2 = get_path(Config, <<"/keep-alive">>),
    ?assertEqual([<<"keep-alive">>], ?C:header_values(<<"connection">>, R2)).

%% RFC 9112 §7.1 (RFC 9110 §6.4): a streamed reply is chunked, one chunk
%% per piece, and the connection persists after it.
stream_chunked(Config) ->
    Sock = ?C:connect(port(Config)),
    ?C:send(Sock, <<"GET /stream HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, R} = ?C:recv_response(Sock),
    #{status := 200, framing := chunked, chunks := [6, 5, 5], body := <<"alpha beta gamma">>} = R,
    ?C:send(Sock, <<"GET /hello HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, #{status := 200}} = ?C:recv_response(Sock),
    ?C:close(Sock).

%% RFC 9112 §8, §7.1: the bytes of a streamed reply that crashes: its head
%% and the chunk sent before the crash, then the close, without the last
%% chunk.
stream_crash_cuts_connection(Config) ->
    #{responses := Rs, closed := closed, raw := Raw} =
        ?C:exchange(port(Config), <<"GET /stream-crash HTTP/1.1\r\n" ?HOST "\r\n">>),
    ?assertEqual([], Rs),
    ?assertMatch(<<"HTTP/1.1 200 OK\r\n", _/binary>>, Raw),
    ?assertNotEqual(nomatch, binary:match(Raw, <<"\r\n\r\n4\r\npart\r\n">>)),
    ?assertEqual(nomatch, binary:match(Raw, <<"\r\n0\r\n">>)).

%% RFC 9110 §7.6.1, RFC 9112 §9.6: a handler's "connection: close" closes
%% the connection after the response.
connection_close_reply(Config) ->
    Sock = ?C:connect(port(Config)),
    ?C:send(Sock, <<"GET /close HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, R} = ?C:recv_response(Sock),
    #{status := 200, body := <<"bye">>} = R,
    ?assert(?C:has_token(<<"connection">>, <<"close">>, R)),
    ok = ?C:expect_closed(Sock, 5000),
    ?C:close(Sock).
