%% RFC 9110 (HTTP semantics) over a raw socket: what falco's shared
%% request pipeline adds around a handler. HEAD, Date, Content-Length,
%% Expect: 100-continue, statuses without content, response field checks,
%% handler crashes, streamed and file replies, closing replies. Every case
%% names the section it checks.
-module(rfc9110_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, init_per_suite/1, end_per_suite/1,
         init_per_testcase/2, end_per_testcase/2]).
%% logger handler callback, used to see the crash log line
-export([log/2]).
-export([
         %% §9.3.2 HEAD
         head_same_fields_no_body/1, head_stream_reply/1, head_file_reply/1,
         head_error_replies/1,
         %% §6.6.1 Date
         date_on_every_response/1, date_from_handler_kept/1, date_on_error_responses/1,
         %% §8.6 Content-Length
         content_length_automatic/1, content_length_from_handler_replaced/1,
         content_length_large_body/1,
         %% §10.1.1 Expect
         expect_continue_when_body_read/1, expect_continue_not_read/1,
         expect_continue_without_body/1, expect_unknown_417/1, expect_ignored_http10/1,
         expect_continue_too_large_413/1, expect_continue_repeated/1,
         %% §15 statuses without content
         status_204_no_body/1, status_304_no_body/1, status_205_has_length/1,
         stream_204_no_body/1, file_304_no_body/1,
         %% §5 response fields
         response_field_crlf_injection/1, response_field_bad_name/1,
         response_field_nul/1, response_fields_lowercased/1, bad_handler_return/1,
         handler_transfer_encoding_dropped/1, handler_keep_alive_when_closing/1,
         %% §15.6.1 errors
         handler_crash_500_and_keeps_serving/1, stream_crash_cuts_connection/1,
         %% streamed, file and closing replies
         stream_chunked/1, stream_with_trailers/1, stream_empty_pieces/1,
         stream_with_content_length/1, sendfile_reply/1, sendfile_range/1,
         sendfile_missing_404/1, sendfile_empty_file/1, connection_close_reply/1,
         %% request semantics seen by the handler
         request_accessors/1, body_read_in_pieces/1
        ]).

-define(C, falco_test_client).
-define(LISTENER, rfc9110_listener).
-define(HOST, "Host: example.com\r\n").
-define(FIXED_DATE, <<"Tue, 01 Jan 2030 00:00:00 GMT">>).

all() ->
    [{group, head}, {group, date}, {group, content_length}, {group, expect},
     {group, no_content}, {group, response_fields}, {group, errors},
     {group, replies}, {group, request}].

groups() ->
    [{head, [], [head_same_fields_no_body, head_stream_reply, head_file_reply,
                 head_error_replies]},
     {date, [], [date_on_every_response, date_from_handler_kept, date_on_error_responses]},
     {content_length, [], [content_length_automatic, content_length_from_handler_replaced,
                           content_length_large_body]},
     {expect, [], [expect_continue_when_body_read, expect_continue_not_read,
                   expect_continue_without_body, expect_unknown_417, expect_ignored_http10,
                   expect_continue_too_large_413, expect_continue_repeated]},
     {no_content, [], [status_204_no_body, status_304_no_body, status_205_has_length,
                       stream_204_no_body, file_304_no_body]},
     {response_fields, [], [response_field_crlf_injection, response_field_bad_name,
                            response_field_nul, response_fields_lowercased,
                            bad_handler_return, handler_transfer_encoding_dropped,
                            handler_keep_alive_when_closing]},
     {errors, [], [handler_crash_500_and_keeps_serving, stream_crash_cuts_connection]},
     {replies, [], [stream_chunked, stream_with_trailers, stream_empty_pieces,
                    stream_with_content_length, sendfile_reply, sendfile_range,
                    sendfile_missing_404, sendfile_empty_file, connection_close_reply]},
     {request, [], [request_accessors, body_read_in_pieces]}].

init_per_suite(Config) ->
    File = filename:join(?config(priv_dir, Config), "payload.bin"),
    Payload = crypto:strong_rand_bytes(200000),
    ok = file:write_file(File, Payload),
    ok = file:write_file(File ++ ".empty", <<>>),
    Rec = ?C:recorder_start(),
    {ok, _} = falco:start_listener(?LISTENER,
                                   #{port => 0, ip => {127, 0, 0, 1},
                                     handler => handler(Rec, File),
                                     idle_timeout => 500, request_timeout => 500,
                                     body_timeout => 500, max_body => 2000000}),
    {ok, Port} = falco:port(?LISTENER),
    %% (the payload itself stays out of Config, which CT prints in every log)
    [{port, Port}, {recorder, Rec}, {file, File} | Config].

end_per_suite(Config) ->
    ok = falco:stop_listener(?LISTENER),
    ?C:recorder_stop(?config(recorder, Config)),
    Config.

init_per_testcase(_Case, Config) ->
    ok = ?C:recorder_reset(?config(recorder, Config)),
    Config.

end_per_testcase(_Case, Config) ->
    _ = logger:remove_handler(?MODULE),
    Config.

%% -- the handler -------------------------------------------------------------

handler(Rec, File) ->
    fun(Req) ->
            ?C:record(Rec, {falco_req:method(Req), falco_req:path(Req)}),
            route(falco_req:path(Req), Req, File)
    end.

route(<<"/hello">>, _Req, _) ->
    {200, [{<<"content-type">>, <<"text/plain">>}, {<<"x-extra">>, <<"1">>}],
     [<<"hello">>, " ", [<<"wor">>, $l, $d]]};
route(<<"/echo">>, Req, _) ->
    {ok, Body, _} = falco_req:read_body(Req),
    {200, [{<<"content-type">>, <<"application/octet-stream">>}], Body};
route(<<"/noread">>, _Req, _) ->
    {200, [], <<"not read">>};
route(<<"/status/", Code/binary>>, _Req, _) ->
    {binary_to_integer(Code), [{<<"x-status">>, Code}], <<"content that must not be sent">>};
route(<<"/stream-status/", Code/binary>>, _Req, _) ->
    {stream, binary_to_integer(Code), [{<<"x-status">>, Code}],
     fun(Send) -> _ = Send(<<"content that must not be sent">>), ok end};
route(<<"/file-status/", Code/binary>>, _Req, File) ->
    {binary_to_integer(Code), [{<<"x-status">>, Code}], {file, File}};
route(<<"/te">>, _Req, _) ->
    {200, [{<<"Transfer-Encoding">>, <<"chunked">>}], <<"abc">>};
route(<<"/stream-te">>, _Req, _) ->
    {stream, 200, [{<<"transfer-encoding">>, <<"gzip, chunked">>}],
     fun(Send) -> Send(<<"abc">>) end};
route(<<"/keep-alive">>, _Req, _) ->
    {200, [{<<"connection">>, <<"keep-alive">>}], <<"abc">>};
route(<<"/date">>, _Req, _) ->
    {200, [{<<"Date">>, ?FIXED_DATE}], <<"dated">>};
route(<<"/wrong-length">>, _Req, _) ->
    {200, [{<<"content-length">>, <<"999">>}, {<<"Content-Length">>, <<"1">>}], <<"abc">>};
route(<<"/big">>, _Req, _) ->
    {200, [], binary:copy(<<"0123456789abcdef">>, 65536)};
route(<<"/inject">>, _Req, _) ->
    {200, [{<<"x-a">>, <<"a\r\nX-Injected: 1">>}], <<"injected">>};
route(<<"/inject-lf">>, _Req, _) ->
    {200, [{<<"x-a">>, [<<"a">>, "\nX-Injected: 1"]}], <<"injected">>};
route(<<"/bad-name">>, _Req, _) ->
    {200, [{<<"bad name">>, <<"v">>}], <<"bad">>};
route(<<"/bad-name-colon">>, _Req, _) ->
    {200, [{<<"x-a: b\r\nx-b">>, <<"v">>}], <<"bad">>};
route(<<"/nul">>, _Req, _) ->
    {200, [{<<"x-a">>, <<"a", 0, "b">>}], <<"nul">>};
route(<<"/mixed-case">>, _Req, _) ->
    {200, [{<<"X-Mixed-CASE">>, <<"Value-Kept">>}, {<<"x-num">>, 42}], <<"ok">>};
route(<<"/bad-return">>, _Req, _) ->
    not_a_response;
route(<<"/bad-body-atom">>, _Req, _) ->
    {200, [], [<<"ok">>, not_iodata]};
route(<<"/bad-body-int">>, _Req, _) ->
    {200, [], 42};
route(<<"/bad-headers">>, _Req, _) ->
    {200, not_a_list, <<"x">>};
route(<<"/bad-status">>, _Req, _) ->
    {100, [], <<"interim is not a final response">>};
route(<<"/crash">>, _Req, _) ->
    error(deliberate_crash);
route(<<"/stream">>, _Req, _) ->
    {stream, 200, [{<<"content-type">>, <<"text/plain">>}],
     fun(Send) -> [ok = Send(P) || P <- [<<"alpha ">>, "beta ", [<<"gam">>, "ma"]]], ok end};
route(<<"/stream-trailers">>, _Req, _) ->
    {stream, 200, [],
     fun(Send) ->
             ok = Send(<<"data">>),
             {trailers, [{<<"X-Checksum">>, <<"abc123">>}, {<<"x-count">>, <<"1">>}]}
     end};
route(<<"/stream-empty">>, _Req, _) ->
    {stream, 200, [],
     fun(Send) ->
             ok = Send(<<>>), ok = Send([]), ok = Send(<<"x">>), ok = Send([[], <<>>]),
             ok = Send("y"), ok
     end};
route(<<"/stream-length">>, _Req, _) ->
    {stream, 200, [{<<"content-length">>, <<"10">>}],
     fun(Send) -> ok = Send(<<"01234">>), ok = Send(<<"56789">>) end};
route(<<"/stream-crash">>, _Req, _) ->
    {stream, 200, [],
     fun(Send) -> ok = Send(<<"part">>), error(deliberate_stream_crash) end};
route(<<"/file">>, _Req, File) ->
    {200, [{<<"content-type">>, <<"application/octet-stream">>}], {file, File}};
route(<<"/file-range">>, _Req, File) ->
    {200, [], {file, File, 1000, 5000}};
route(<<"/file-empty">>, _Req, File) ->
    {200, [], {file, File ++ ".empty"}};
route(<<"/file-missing">>, _Req, File) ->
    {200, [], {file, File ++ ".does-not-exist"}};
route(<<"/close">>, _Req, _) ->
    {200, [{<<"connection">>, <<"close">>}], <<"bye">>};
route(<<"/info">>, Req, _) ->
    Info = #{method => falco_req:method(Req), version => falco_req:version(Req),
             peer => falco_req:peer(Req), scheme => falco_req:scheme(Req),
             host => falco_req:host(Req), port => falco_req:port(Req),
             listener => falco_req:listener(Req), has_body => falco_req:has_body(Req),
             header => falco_req:header(<<"x-a">>, Req),
             missing => falco_req:header(<<"x-missing">>, Req, default)},
    {200, [], term_to_binary(Info)};
route(<<"/pieces">>, Req, _) ->
    {200, [], term_to_binary(pieces(Req, []))}.

pieces(Req, Acc) ->
    case falco_req:read_body(Req, #{length => 7}) of
        {more, Data, Req1} -> pieces(Req1, [Data | Acc]);
        {ok, Data, _} -> lists:reverse([Data | Acc])
    end.

%% -- helpers -----------------------------------------------------------------

port(Config) -> ?config(port, Config).

calls(Config) -> ?C:recorded(?config(recorder, Config)).

payload(Config) ->
    {ok, Payload} = file:read_file(?config(file, Config)),
    Payload.

get_path(Config, Path) ->
    get_path(Config, Path, #{}).

get_path(Config, Path, Opts) ->
    Method = maps:get(method, Opts, <<"GET">>),
    {Sock, {ok, R}} = ?C:request(port(Config),
                                 <<Method/binary, " ", Path/binary, " HTTP/1.1\r\n" ?HOST "\r\n">>,
                                 #{head => Method =:= <<"HEAD">>}),
    ?C:close(Sock),
    R.

%% Sends a request on Sock and reads the response (HEAD aware).
ask(Sock, Method, Path) ->
    ?C:send(Sock, <<Method/binary, " ", Path/binary, " HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, R} = ?C:recv_response(Sock, #{head => Method =:= <<"HEAD">>}),
    R.

without(Names, Headers) ->
    [H || H = {N, _} <- Headers, not lists:member(N, Names)].

%% A request on a fresh connection that must get a 500 with close.
expect_500(Config, Path) ->
    #{responses := [R], closed := closed, raw := Raw} =
        ?C:exchange(port(Config), <<"GET ", Path/binary, " HTTP/1.1\r\n" ?HOST "\r\n">>),
    ?assertMatch(#{status := 500}, R),
    ?assert(?C:has_token(<<"connection">>, <<"close">>, R)),
    R#{raw => Raw}.

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
    Sock = ?C:connect(port(Config)),
    G = ask(Sock, <<"GET">>, <<"/hello">>),
    H = ask(Sock, <<"HEAD">>, <<"/hello">>),
    ok = ?C:expect_silence(Sock, 100),
    #{status := 200, body := <<"hello world">>} = G,
    #{status := 200, body := <<>>} = H,
    ?assertEqual(lists:sort(without([<<"date">>], maps:get(headers, G))),
                 lists:sort(without([<<"date">>], maps:get(headers, H)))),
    ?assertEqual(<<"11">>, ?C:header(<<"content-length">>, H)),
    #{status := 200, body := <<"hello world">>} = ask(Sock, <<"GET">>, <<"/hello">>),
    ?C:close(Sock).

%% RFC 9110 §9.3.2: HEAD of a streamed reply: its fields, no body, and the
%% stream function is never run.
head_stream_reply(Config) ->
    Sock = ?C:connect(port(Config)),
    H = ask(Sock, <<"HEAD">>, <<"/stream">>),
    ok = ?C:expect_silence(Sock, 100),
    #{status := 200, body := <<>>} = H,
    ?assertEqual(<<"text/plain">>, ?C:header(<<"content-type">>, H)),
    #{status := 200, body := <<"alpha beta gamma">>} = ask(Sock, <<"GET">>, <<"/stream">>),
    ?C:close(Sock).

%% RFC 9110 §9.3.2: HEAD of a file reply: the file's Content-Length, no body.
head_file_reply(Config) ->
    Sock = ?C:connect(port(Config)),
    H = ask(Sock, <<"HEAD">>, <<"/file">>),
    ok = ?C:expect_silence(Sock, 100),
    #{status := 200, body := <<>>} = H,
    ?assertEqual(integer_to_binary(byte_size(payload(Config))),
                 ?C:header(<<"content-length">>, H)),
    #{status := 200, body := <<"hello world">>} = ask(Sock, <<"GET">>, <<"/hello">>),
    ?C:close(Sock).

%% RFC 9110 §9.3.2: replies falco makes itself (404 for a missing file, 500
%% for a crash) carry no content for HEAD either; after the 404 the
%% connection is still in step.
head_error_replies(Config) ->
    Sock = ?C:connect(port(Config)),
    H = ask(Sock, <<"HEAD">>, <<"/file-missing">>),
    #{status := 404, body := <<>>} = H,
    ?assertEqual(<<"10">>, ?C:header(<<"content-length">>, H)),
    ok = ?C:expect_silence(Sock, 100),
    #{status := 200, body := <<"hello world">>} = ask(Sock, <<"GET">>, <<"/hello">>),
    ?C:close(Sock),
    #{responses := [], raw := Raw, closed := closed} =
        ?C:exchange(port(Config), <<"HEAD /crash HTTP/1.1\r\n" ?HOST "\r\n">>),
    ?assertMatch(<<"HTTP/1.1 500 ", _/binary>>, Raw),
    ?assertMatch({_, 4}, binary:match(Raw, <<"\r\n\r\n">>)),
    ?assertEqual(byte_size(Raw), element(1, binary:match(Raw, <<"\r\n\r\n">>)) + 4).

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
    ?assertEqual([?FIXED_DATE], ?C:header_values(<<"date">>, R)).

%% RFC 9110 §6.6.1: error responses falco generates carry Date too.
date_on_error_responses(Config) ->
    #{responses := [R400]} =
        ?C:exchange(port(Config), <<"GET / HTTP/1.1\r\nBad Field: x\r\n\r\n">>),
    #{status := 400} = R400,
    _ = imf_fixdate(?C:header(<<"date">>, R400)),
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
    Sock = ?C:connect(port(Config)),
    R = ask(Sock, <<"GET">>, <<"/wrong-length">>),
    ?assertEqual([<<"3">>], ?C:header_values(<<"content-length">>, R)),
    ?assertEqual(<<"abc">>, maps:get(body, R)),
    ok = ?C:expect_silence(Sock, 100),
    ?C:close(Sock).

%% RFC 9110 §8.6: a 1 MB body arrives whole and exact.
content_length_large_body(Config) ->
    R = get_path(Config, <<"/big">>),
    Expected = binary:copy(<<"0123456789abcdef">>, 65536),
    ?assertEqual(integer_to_binary(byte_size(Expected)), ?C:header(<<"content-length">>, R)),
    ?assert(maps:get(body, R) =:= Expected),
    %% and a 1 MB request body is read whole too
    Sock = ?C:connect(port(Config)),
    ?C:send(Sock, [<<"POST /echo HTTP/1.1\r\n" ?HOST "Content-Length: ">>,
                   integer_to_binary(byte_size(Expected)), <<"\r\n\r\n">>, Expected]),
    {ok, Echo} = ?C:recv_response(Sock),
    ?assert(maps:get(body, Echo) =:= Expected),
    ?C:close(Sock).

%% -- §10.1.1 Expect --------------------------------------------------------------

%% RFC 9110 §10.1.1, §15.2.1: a handler that reads the body makes falco
%% send 100 Continue first; the client sends the body only then.
expect_continue_when_body_read(Config) ->
    Sock = ?C:connect(port(Config)),
    ?C:send(Sock, <<"POST /echo HTTP/1.1\r\n" ?HOST "Expect: 100-continue\r\nContent-Length: 5\r\n"
                                                    "\r\n">>),
    {ok, #{status := 100, body := <<>>}} = ?C:recv_response(Sock),
    ?C:send(Sock, <<"hello">>),
    {ok, #{status := 200, body := <<"hello">>}} = ?C:recv_response(Sock),
    %% the connection persists
    #{status := 200} = ask(Sock, <<"GET">>, <<"/hello">>),
    ?C:close(Sock).

%% RFC 9110 §10.1.1: a server that answers without reading the body MUST
%% NOT send 100 first. falco then closes, since the client may still be
%% waiting to send a body it will never read (a deliberate choice; the RFC
%% allows either closing or reading and discarding).
expect_continue_not_read(Config) ->
    Sock = ?C:connect(port(Config)),
    ?C:send(Sock, <<"POST /noread HTTP/1.1\r\n" ?HOST "Expect: 100-continue\r\n"
                                                      "Content-Length: 5\r\n\r\n">>),
    {ok, R} = ?C:recv_response(Sock),
    #{status := 200, body := <<"not read">>} = R,
    ok = ?C:expect_closed(Sock, 3000),
    ?C:close(Sock).

%% RFC 9110 §10.1.1: 100-continue on a request without content: no 100.
expect_continue_without_body(Config) ->
    Sock = ?C:connect(port(Config)),
    ?C:send(Sock, <<"GET /hello HTTP/1.1\r\n" ?HOST "Expect: 100-continue\r\n\r\n">>),
    {ok, #{status := 200}} = ?C:recv_response(Sock),
    #{status := 200} = ask(Sock, <<"GET">>, <<"/hello">>),
    ?C:close(Sock).

%% RFC 9110 §10.1.1: an expectation other than 100-continue MAY get 417;
%% falco sends it, closes, and never runs the handler.
expect_unknown_417(Config) ->
    #{responses := [R], closed := closed} =
        ?C:exchange(port(Config), <<"POST /echo HTTP/1.1\r\n" ?HOST "Expect: 200-ok\r\n"
                                                                    "Content-Length: 5\r\n\r\n"
                                                                    "hello">>),
    #{status := 417} = R,
    ?assertEqual([], calls(Config)).

%% RFC 9110 §10.1.1: a server MUST ignore 100-continue in an HTTP/1.0 request.
expect_ignored_http10(Config) ->
    Sock = ?C:connect(port(Config)),
    ?C:send(Sock, <<"POST /echo HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"
                    "hello">>),
    {ok, R} = ?C:recv_response(Sock),
    #{status := 200, body := <<"hello">>} = R,
    ?C:close(Sock).

%% RFC 9110 §10.1.1, §15.5.14: a body already known to be too large is
%% refused with 413 instead of a 100 (here over max_body = 2 MB).
expect_continue_too_large_413(Config) ->
    #{responses := [R], closed := closed} =
        ?C:exchange(port(Config), <<"POST /echo HTTP/1.1\r\n" ?HOST "Expect: 100-continue\r\n"
                                    "Content-Length: 5000000\r\n\r\n">>),
    #{status := 413} = R,
    ?assertEqual([], calls(Config)).

%% RFC 9110 §10.1.1, §5.6.1: Expect is a list; "100-continue, 100-continue"
%% (or the field twice) still expects 100-continue, not 417.
expect_continue_repeated(Config) ->
    Sock = ?C:connect(port(Config)),
    ?C:send(Sock, <<"POST /echo HTTP/1.1\r\n" ?HOST "Expect: 100-continue, 100-continue\r\n"
                    "Expect: 100-Continue\r\nContent-Length: 5\r\n\r\n">>),
    {ok, #{status := 100}} = ?C:recv_response(Sock),
    ?C:send(Sock, <<"hello">>),
    {ok, #{status := 200, body := <<"hello">>}} = ?C:recv_response(Sock),
    ?C:close(Sock).

%% -- statuses without content ------------------------------------------------

%% RFC 9110 §15.3.5, §8.6: a 204 has no content and no Content-Length, even
%% if the handler gave a body; the next response on the connection parses.
status_204_no_body(Config) ->
    no_content(Config, <<"204">>).

%% RFC 9110 §15.4.5: a 304 has no content.
status_304_no_body(Config) ->
    no_content(Config, <<"304">>).

%% RFC 9110 §15.3.5, RFC 9112 §6.1: a streamed 204 is sent without
%% Transfer-Encoding and without the stream's content (which would
%% otherwise be read as the start of the next response).
stream_204_no_body(Config) ->
    no_content(Config, <<"204">>, <<"/stream-status/">>).

%% RFC 9110 §15.4.5: a 304 whose handler named a file sends no content.
file_304_no_body(Config) ->
    no_content(Config, <<"304">>, <<"/file-status/">>).

no_content(Config, Code) ->
    no_content(Config, Code, <<"/status/">>).

no_content(Config, Code, Prefix) ->
    Sock = ?C:connect(port(Config)),
    R = ask(Sock, <<"GET">>, <<Prefix/binary, Code/binary>>),
    ?assertEqual(binary_to_integer(Code), maps:get(status, R)),
    ?assertEqual(Code, ?C:header(<<"x-status">>, R)),
    ?assertEqual(undefined, ?C:header(<<"content-length">>, R)),
    ?assertEqual(undefined, ?C:header(<<"transfer-encoding">>, R)),
    ok = ?C:expect_silence(Sock, 100),
    #{status := 200, body := <<"hello world">>} = ask(Sock, <<"GET">>, <<"/hello">>),
    ?C:close(Sock).

%% RFC 9110 §15.3.6: other 2xx statuses keep their content and length
%% (falco only strips content where the RFC forbids it).
status_205_has_length(Config) ->
    R = get_path(Config, <<"/status/205">>),
    #{status := 205, body := <<"content that must not be sent">>} = R.

%% -- §5 response fields --------------------------------------------------------

%% RFC 9110 §5.5: CR and LF are never allowed in a field value; a handler
%% trying to inject a field gets a 500 and nothing of its header is sent.
response_field_crlf_injection(Config) ->
    [begin
         #{raw := Raw} = R = expect_500(Config, P),
         ?assertEqual(undefined, ?C:header(<<"x-injected">>, R)),
         ?assertEqual(nomatch, binary:match(Raw, <<"X-Injected">>))
     end || P <- [<<"/inject">>, <<"/inject-lf">>]].

%% RFC 9110 §5.1: a field name must be a token.
response_field_bad_name(Config) ->
    expect_500(Config, <<"/bad-name">>),
    #{raw := Raw} = expect_500(Config, <<"/bad-name-colon">>),
    ?assertEqual(nomatch, binary:match(Raw, <<"x-b">>)).

%% RFC 9110 §5.5: NUL is never allowed in a field value.
response_field_nul(Config) ->
    #{raw := Raw} = expect_500(Config, <<"/nul">>),
    ?assertEqual(nomatch, binary:match(Raw, <<0>>)).

%% RFC 9110 §5.1: field names are case-insensitive; falco sends them in
%% lowercase (as HTTP/2 requires) and keeps values as given.
response_fields_lowercased(Config) ->
    Sock = ?C:connect(port(Config)),
    ?C:send(Sock, <<"GET /mixed-case HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, Raw} = gen_tcp:recv(Sock, 0, 2000),
    ?assertNotEqual(nomatch, binary:match(Raw, <<"\r\nx-mixed-case: Value-Kept\r\n">>)),
    ?assertNotEqual(nomatch, binary:match(Raw, <<"\r\nx-num: 42\r\n">>)),
    ?C:close(Sock).

%% RFC 9110 §15.6.1: a handler returning something that is not a response
%% (an interim 1xx status as final, a body that is not iodata, fields that
%% are not a list) is a server error: a 500, not a dropped connection.
bad_handler_return(Config) ->
    [expect_500(Config, P) || P <- [<<"/bad-return">>, <<"/bad-status">>, <<"/bad-body-atom">>,
                                    <<"/bad-body-int">>, <<"/bad-headers">>]],
    #{status := 200} = get_path(Config, <<"/hello">>).

%% RFC 9112 §6.1 (and RFC 9113 §8.2.2): framing belongs to the protocol; a
%% Transfer-Encoding field from the handler is dropped, so a full reply
%% never carries both Content-Length and Transfer-Encoding and a stream is
%% chunked exactly once.
handler_transfer_encoding_dropped(Config) ->
    Sock = ?C:connect(port(Config)),
    R1 = ask(Sock, <<"GET">>, <<"/te">>),
    ?assertEqual([], ?C:header_values(<<"transfer-encoding">>, R1)),
    #{framing := length, body := <<"abc">>} = R1,
    R2 = ask(Sock, <<"GET">>, <<"/stream-te">>),
    ?assertEqual([<<"chunked">>], ?C:header_values(<<"transfer-encoding">>, R2)),
    #{framing := chunked, body := <<"abc">>} = R2,
    ok = ?C:expect_silence(Sock, 100),
    #{status := 200} = ask(Sock, <<"GET">>, <<"/hello">>),
    ?C:close(Sock).

%% RFC 9112 §9.6: when the server is going to close (here the client asked
%% for it) it says "close", even if the handler wrote "keep-alive".
handler_keep_alive_when_closing(Config) ->
    Sock = ?C:connect(port(Config)),
    ?C:send(Sock, <<"GET /keep-alive HTTP/1.1\r\n" ?HOST "Connection: close\r\n\r\n">>),
    {ok, R} = ?C:recv_response(Sock),
    ?assertEqual([<<"close">>], ?C:header_values(<<"connection">>, R)),
    ok = ?C:expect_closed(Sock, 2000),
    ?C:close(Sock),
    %% and keeps the handler's field when it is not closing
    #{status := 200} = R2 = get_path(Config, <<"/keep-alive">>),
    ?assertEqual([<<"keep-alive">>], ?C:header_values(<<"connection">>, R2)).

%% -- errors --------------------------------------------------------------------

%% RFC 9110 §15.6.1: a crashing handler gets 500 (with close) and a log line
%% naming the request; the listener and its acceptors keep serving (more
%% crashes than acceptors).
handler_crash_500_and_keeps_serving(Config) ->
    ok = logger:add_handler(?MODULE, ?MODULE, #{level => error, config => #{pid => self()}}),
    [expect_500(Config, <<"/crash">>) || _ <- lists:seq(1, 15)],
    receive
        {log, error, Text} ->
            ?assertNotEqual(nomatch, binary:match(Text, <<"/crash">>)),
            ?assertNotEqual(nomatch, binary:match(Text, <<"deliberate_crash">>))
    after 2000 ->
        ct:fail(no_crash_log)
    end,
    #{status := 200, body := <<"hello world">>} = get_path(Config, <<"/hello">>),
    {ok, _} = falco:port(?LISTENER).

%% RFC 9112 §8 / RFC 9110 §15.6.1: once a streamed head is out no status can
%% be sent; a stream that crashes is cut by closing the connection without
%% the last chunk, so the client sees an incomplete message, never a
%% complete wrong one.
stream_crash_cuts_connection(Config) ->
    #{responses := Rs, closed := closed, raw := Raw} =
        ?C:exchange(port(Config), <<"GET /stream-crash HTTP/1.1\r\n" ?HOST "\r\n">>),
    ?assertEqual([], Rs),
    ?assertMatch(<<"HTTP/1.1 200 OK\r\n", _/binary>>, Raw),
    ?assertNotEqual(nomatch, binary:match(Raw, <<"\r\n\r\n4\r\npart\r\n">>)),
    ?assertEqual(nomatch, binary:match(Raw, <<"\r\n0\r\n">>)),
    #{status := 200} = get_path(Config, <<"/hello">>).

%% -- streamed, file and closing replies ------------------------------------------

%% RFC 9112 §7.1 (RFC 9110 §6.4): a streamed reply is chunked, one chunk
%% per piece, and the connection persists after it.
stream_chunked(Config) ->
    Sock = ?C:connect(port(Config)),
    R = ask(Sock, <<"GET">>, <<"/stream">>),
    #{status := 200, framing := chunked, chunks := [6, 5, 5], body := <<"alpha beta gamma">>} = R,
    #{status := 200} = ask(Sock, <<"GET">>, <<"/hello">>),
    ?C:close(Sock).

%% RFC 9110 §6.5, RFC 9112 §7.1.2: trailer fields after the last chunk.
stream_with_trailers(Config) ->
    R = get_path(Config, <<"/stream-trailers">>),
    #{status := 200, body := <<"data">>, trailers := T} = R,
    ?assertEqual([{<<"x-checksum">>, <<"abc123">>}, {<<"x-count">>, <<"1">>}], T).

%% RFC 9112 §7.1: an empty piece must not be sent as a chunk (a zero-size
%% chunk would end the body early).
stream_empty_pieces(Config) ->
    #{status := 200, chunks := [1, 1], body := <<"xy">>} = get_path(Config, <<"/stream-empty">>).

%% RFC 9110 §8.6: a stream with a known length is sent with it, unchunked.
stream_with_content_length(Config) ->
    Sock = ?C:connect(port(Config)),
    R = ask(Sock, <<"GET">>, <<"/stream-length">>),
    #{status := 200, framing := length, body := <<"0123456789">>} = R,
    ?assertEqual(undefined, ?C:header(<<"transfer-encoding">>, R)),
    #{status := 200} = ask(Sock, <<"GET">>, <<"/hello">>),
    ?C:close(Sock).

%% RFC 9110 §8.6: a file reply (sendfile) carries the file, byte for byte,
%% with its length; the connection persists.
sendfile_reply(Config) ->
    Sock = ?C:connect(port(Config)),
    R = ask(Sock, <<"GET">>, <<"/file">>),
    Payload = payload(Config),
    #{status := 200, framing := length} = R,
    ?assert(maps:get(body, R) =:= Payload),
    ?assertEqual(<<"application/octet-stream">>, ?C:header(<<"content-type">>, R)),
    #{status := 200} = ask(Sock, <<"GET">>, <<"/hello">>),
    ?C:close(Sock).

%% RFC 9110 §8.6: part of a file, {file, Path, Offset, Length}.
sendfile_range(Config) ->
    R = get_path(Config, <<"/file-range">>),
    <<_:1000/binary, Part:5000/binary, _/binary>> = payload(Config),
    ?assertEqual(<<"5000">>, ?C:header(<<"content-length">>, R)),
    ?assert(maps:get(body, R) =:= Part).

%% RFC 9110 §15.5.5: a file reply whose file does not exist is a 404.
sendfile_missing_404(Config) ->
    #{status := 404} = get_path(Config, <<"/file-missing">>).

%% RFC 9110 §8.6: an empty file is a zero-length reply, and the connection
%% stays in step.
sendfile_empty_file(Config) ->
    Sock = ?C:connect(port(Config)),
    R = ask(Sock, <<"GET">>, <<"/file-empty">>),
    #{status := 200, body := <<>>} = R,
    ?assertEqual(<<"0">>, ?C:header(<<"content-length">>, R)),
    ok = ?C:expect_silence(Sock, 100),
    #{status := 200, body := <<"hello world">>} = ask(Sock, <<"GET">>, <<"/hello">>),
    ?C:close(Sock).

%% RFC 9110 §7.6.1, RFC 9112 §9.6: a handler's "connection: close" closes
%% the connection after the response.
connection_close_reply(Config) ->
    Sock = ?C:connect(port(Config)),
    R = ask(Sock, <<"GET">>, <<"/close">>),
    #{status := 200, body := <<"bye">>} = R,
    ?assert(?C:has_token(<<"connection">>, <<"close">>, R)),
    ok = ?C:expect_closed(Sock, 2000),
    ?C:close(Sock).

%% -- request semantics ---------------------------------------------------------

%% RFC 9110 §7.2, §4.2.1: the handler sees host, port, scheme, peer and
%% fields of the request.
request_accessors(Config) ->
    {Sock, {ok, R}} = ?C:request(port(Config), <<"GET /info HTTP/1.1\r\nHost: Example.COM:8081\r\n"
                                                 "X-A: b\r\n\r\n">>),
    {ok, {_, LocalPort}} = inet:sockname(Sock),
    ?C:close(Sock),
    Info = binary_to_term(maps:get(body, R)),
    ?assertEqual(#{method => <<"GET">>, version => {1, 1}, peer => {{127, 0, 0, 1}, LocalPort},
                   scheme => http, host => <<"example.com">>, port => 8081,
                   listener => ?LISTENER, has_body => false, header => <<"b">>,
                   missing => default}, Info).

%% RFC 9110 §6.4: content may be consumed incrementally; each piece is at
%% most the length asked for and together they are the content.
body_read_in_pieces(Config) ->
    Body = <<"abcdefghijklmnopqrstuvwxyz">>,
    {Sock, {ok, R}} = ?C:request(port(Config), [<<"POST /pieces HTTP/1.1\r\n" ?HOST
                                                  "Content-Length: 26\r\n\r\n">>,
                                                Body]),
    ?C:close(Sock),
    Pieces = binary_to_term(maps:get(body, R)),
    ?assertEqual(Body, iolist_to_binary(Pieces)),
    ?assert(lists:all(fun(P) -> byte_size(P) =< 7 end, Pieces)),
    ?assert(length(Pieces) >= 4).
