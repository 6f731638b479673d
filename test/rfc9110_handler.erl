%% The handler rfc9110_SUITE's listeners run, one route per behaviour a
%% case checks: plain, streamed and file replies (with statuses, fields
%% and trailers a case needs), replies a handler must not be able to send
%% (bad fields, bad returns, crashes), request content read whole, in
%% pieces or with its trailers, and the request as the handler sees it.
%% Every call is recorded ({Method, Path}) so a case can show a request
%% never reached the handler.
-module(rfc9110_handler).

-export([new/2, fixed_date/0]).

-define(FIXED_DATE, <<"Tue, 01 Jan 2030 00:00:00 GMT">>).

%% @doc The Date the /date route sets.
-spec fixed_date() -> binary().
fixed_date() ->
    ?FIXED_DATE.

%% @doc The handler fun: calls recorded with Rec (falco_test_client's
%% recorder); File is the payload the file routes send (File ++ ".empty"
%% must be an empty file).
-spec new(term(), file:filename()) -> fun((falco_req:req()) -> term()).
new(Rec, File) ->
    fun(Req) ->
            falco_test_client:record(Rec, {falco_req:method(Req), falco_req:path(Req)}),
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
             host => falco_req:host(Req), port => falco_req:port(Req), qs => falco_req:qs(Req),
             listener => falco_req:listener(Req), has_body => falco_req:has_body(Req),
             header => falco_req:header(<<"x-a">>, Req),
             missing => falco_req:header(<<"x-missing">>, Req, default)},
    {200, [], term_to_binary(Info)};
route(<<"/stream-large">>, _Req, _) ->
    {stream, 200, [],
     fun(Send) -> [ok = Send(binary:copy(<<I>>, 50000)) || I <- lists:seq(1, 10)], ok end};
route(<<"/trailers">>, Req, _) ->
    {ok, Body, Req1} = falco_req:read_body(Req),
    {200, [], term_to_binary({Body, falco_req:trailers(Req1)})};
route(<<"/pieces">>, Req, _) ->
    {200, [], term_to_binary(pieces(Req, []))}.

pieces(Req, Acc) ->
    case falco_req:read_body(Req, #{length => 7}) of
        {more, Data, Req1} -> pieces(Req1, [Data | Acc]);
        {ok, Data, _} -> lists:reverse([Data | Acc])
    end.

