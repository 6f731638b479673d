%% The application helpers over real HTTP/1.1 connections: static files
%% (ranges, conditional requests, precompressed siblings, traversal
%% attempts), multipart uploads (from curl -F and from the raw client),
%% Server-Sent Events and NDJSON streams, response compression negotiated
%% per Accept-Encoding (curl --compressed and raw variants, 406) and
%% compressed request bodies; then the example application's /static/,
%% /upload and /events. Each case names the RFC section it checks.
-module(app_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, init_per_suite/1, end_per_suite/1,
         init_per_group/2, end_per_group/2]).
-export([static_file/1, static_head/1, static_index_redirect/1, static_range/1,
         static_multi_range/1, static_range_416/1, static_if_range/1,
         static_conditional/1, static_precompressed/1, static_precompressed_curl/1,
         static_curl_range/1, static_traversal/1, static_symlink_out/1, static_method/1,
         upload_curl/1, upload_raw_chunked/1, upload_raw_slow_pieces/1, upload_errors/1,
         upload_gzip_body/1,
         sse_raw/1, sse_curl/1, sse_gzip_flushed/1, sse_client_gone/1, ndjson_stream/1,
         gzip_curl/1, accept_encoding_variants/1, not_acceptable_406/1, head_compressed/1,
         stream_compressed/1, small_not_compressed/1, request_decoding/1, zip_bomb_413/1,
         example_static/1, example_upload/1, example_events/1, example_compression/1]).

-define(C, falco_test_client).
-define(LISTENER, app_suite_listener).
-define(HOST, "Host: localhost\r\n").

all() ->
    [{group, static}, {group, upload}, {group, streams}, {group, compression}, {group, example},
     {group, h2c}].

groups() ->
    [{static, [], [static_file, static_head, static_index_redirect, static_range,
                   static_multi_range, static_range_416, static_if_range, static_conditional,
                   static_precompressed, static_precompressed_curl, static_curl_range,
                   static_traversal, static_symlink_out, static_method]},
     {upload, [], [upload_curl, upload_raw_chunked, upload_raw_slow_pieces, upload_errors,
                   upload_gzip_body]},
     {streams, [], [sse_raw, sse_curl, sse_gzip_flushed, sse_client_gone, ndjson_stream]},
     {compression, [], [gzip_curl, accept_encoding_variants, not_acceptable_406, head_compressed,
                        stream_compressed, small_not_compressed, request_decoding, zip_bomb_413]},
     {example, [], [example_static, example_upload, example_events, example_compression]},
     %% The same helpers over HTTP/2 (prior-knowledge h2c): the cases that
     %% drive curl, run again with --http2-prior-knowledge.
     {h2c, [], [static_precompressed_curl, static_curl_range, upload_curl, sse_curl, gzip_curl]}].

%% -- setup -------------------------------------------------------------------------

init_per_suite(Config) ->
    Priv = ?config(priv_dir, Config),
    Root = filename:join(Priv, "static"),
    W = fun(Name, Data) ->
                P = filename:join(Root, Name),
                ok = filelib:ensure_dir(P),
                ok = file:write_file(P, Data)
        end,
    Text = iolist_to_binary([io_lib:format("line ~b of a compressible text file\n", [I])
                             || I <- lists:seq(1, 600)]),
    W("index.html", <<"<!DOCTYPE html><title>app</title>">>),
    W("big.txt", Text),
    W("big.txt.gz", zlib:gzip(Text)),
    W("data.bin", crypto:strong_rand_bytes(100000)),
    W("sub/index.html", <<"sub index">>),
    ok = file:write_file(filename:join(Priv, "secret.txt"), <<"TOP SECRET">>),
    ok = file:make_symlink("../secret.txt", filename:join(Root, "escape")),
    ok = file:make_symlink(Priv, filename:join(Root, "privdir")),
    ok = falco_test_listener:start_app(),
    {_, Port} = falco_test_listener:start(?LISTENER, handler(Root),
                                          #{max_body => 2000000, body_timeout => 2000}),
    [{port, Port}, {root, Root}, {priv, Priv} | Config].

end_per_suite(Config) ->
    ok = falco_test_listener:stop(?LISTENER),
    Config.

init_per_group(example, Config) ->
    {ok, _} = falco_example:start(#{port => 0}),
    [{example_port, falco_test_listener:port(falco_example)} | Config];
init_per_group(h2c, Config) ->
    [{curl_extra, ["--http2-prior-knowledge"]} | Config];
init_per_group(_, Config) ->
    Config.

end_per_group(example, Config) ->
    ok = falco_test_listener:stop(falco_example),
    Config;
end_per_group(_, Config) ->
    Config.

handler(Root) ->
    Static = #{root => Root, prefix => <<"/static">>, cache_control => <<"max-age=60">>},
    fun(Req) ->
            falco_compress:call(Req, fun(R) -> route(falco_req:path(R), R, Static) end,
                                #{decode_request => true, max_inflated => 1000000})
    end.

route(<<"/static", _/binary>>, Req, Static) ->
    falco_static:handle(Req, Static);
route(<<"/upload">>, Req, _) ->
    case falco_multipart:read_all(Req, #{max_parts => 5, read_length => 4096}) of
        {ok, Parts, _} ->
            Summary = [begin
                           {ok, FD} = falco_multipart:form_data(H),
                           #{<<"name">> => maps:get(name, FD),
                             <<"filename">> => maps:get(filename, FD, null),
                             <<"type">> => maps:get(content_type, FD),
                             <<"size">> => byte_size(Body),
                             <<"md5">> => binary:encode_hex(erlang:md5(Body))}
                       end || {H, Body} <- Parts],
            {200, [{<<"content-type">>, <<"application/json">>}], falco_json:encode_to_binary(Summary)};
        {error, Reason} ->
            {falco_multipart:status(Reason), [{<<"content-type">>, <<"text/plain">>}],
             io_lib:format("~p~n", [Reason])}
    end;
route(<<"/events">>, Req, _) ->
    falco_example_files:events(Req);
route(<<"/ndjson">>, _Req, _) ->
    falco_ndjson:stream(fun(Emit) ->
                                [ok = Emit(#{<<"n">> => I}) || I <- lists:seq(1, 3)],
                                ok = Emit({many, [<<"a">>, null]})
                        end, #{});
route(<<"/text">>, _Req, _) ->
    {200, [{<<"content-type">>, <<"text/plain">>}, {<<"etag">>, <<"\"text-v1\"">>}], text()};
route(<<"/small">>, _Req, _) ->
    {200, [{<<"content-type">>, <<"text/plain">>}], <<"small">>};
route(<<"/png">>, _Req, _) ->
    {200, [{<<"content-type">>, <<"image/png">>}], text()};
route(<<"/stream">>, _Req, _) ->
    {stream, 200, [{<<"content-type">>, <<"text/plain">>}],
     fun(Send) -> [ok = Send(text()) || _ <- lists:seq(1, 3)], ok end};
route(<<"/echo">>, Req, _) ->
    {ok, Body, _} = falco_req:read_body(Req),
    {200, [{<<"content-type">>, <<"application/octet-stream">>},
           {<<"x-md5">>, binary:encode_hex(erlang:md5(Body))}], Body};
route(_, _, _) ->
    {404, [{<<"content-type">>, <<"text/plain">>}], <<"Not Found\n">>}.

text() ->
    binary:copy(<<"falco sends compressible text. ">>, 200).

%% -- helpers -------------------------------------------------------------------------

get(Config, Path) -> get(Config, Path, []).
get(Config, Path, Headers) -> request(Config, "GET", Path, Headers).

%% One request on a new HTTP/1.1 connection (host: localhost); the whole
%% response.
request(Config, Method, Path, Headers) ->
    falco_test_http:fetch(http, ?config(port, Config), iolist_to_binary(Method),
                          iolist_to_binary(Path), Headers, <<>>).

h(Name, Resp) -> ?C:header(Name, Resp).

file(Config, Name) ->
    {ok, Data} = file:read_file(filename:join(?config(root, Config), Name)),
    Data.

url(Config, Path) -> url_port(?config(port, Config), Path).
url_port(Port, Path) -> "http://127.0.0.1:" ++ integer_to_list(Port) ++ Path.

%% Runs curl; returns {Status, Headers, Body} (headers of the final response).
curl(Config, Args) ->
    Out = filename:join(?config(priv_dir, Config), "curl.out." ++ integer_to_list(erlang:unique_integer([positive]))),
    ok = falco_test_tools:require(["curl"]),
    Curl = os:find_executable("curl"),
    {0, Head} = falco_test_run:run(Curl, ["-s", "-S", "--max-time", "20", "-D", "-", "-o", Out
                                          | proplists:get_value(curl_extra, Config, []) ++ Args],
                                   #{timeout => 30000, stderr => inherit}),
    {ok, Body} = file:read_file(Out),
    ok = file:delete(Out),
    Blocks = [B || B <- binary:split(Head, <<"\r\n\r\n">>, [global]), B =/= <<>>],
    [StatusLine | Lines] = binary:split(lists:last(Blocks), <<"\r\n">>, [global]),
    [Version, Code | _] = binary:split(StatusLine, <<" ">>, [global]),
    %% The h2c group must really have spoken HTTP/2.
    case proplists:get_value(curl_extra, Config, []) of
        ["--http2-prior-knowledge"] -> ?assertEqual(<<"HTTP/2">>, Version);
        [] -> ?assertEqual(<<"HTTP/1.1">>, Version)
    end,
    Headers = [begin
                   [N, V] = binary:split(L, <<":">>),
                   {string:lowercase(N), string:trim(V)}
               end || L <- Lines],
    {binary_to_integer(Code), Headers, Body}.

multipart(Boundary, Parts) ->
    iolist_to_binary([[[<<"--">>, Boundary, <<"\r\n">>,
                        <<"Content-Disposition: form-data; name=\"">>, Name, <<"\"">>,
                        case File of undefined -> []; _ -> [<<"; filename=\"">>, File, <<"\"">>] end,
                        <<"\r\n\r\n">>, Body, <<"\r\n">>] || {Name, File, Body} <- Parts],
                      <<"--">>, Boundary, <<"--\r\n">>]).

chunked(Pieces) ->
    [[integer_to_list(iolist_size(P), 16), "\r\n", P, "\r\n"] || P <- Pieces, iolist_size(P) > 0]
        ++ ["0\r\n\r\n"].

pieces(Bin, N) when byte_size(Bin) =< N -> [Bin];
pieces(Bin, N) -> <<P:N/binary, R/binary>> = Bin, [P | pieces(R, N)].

%% -- static files ------------------------------------------------------------------------

%% RFC 9110 §8.3, §8.8.2, §8.8.3: type, validators; sendfile body.
static_file(Config) ->
    R = get(Config, "/static/data.bin"),
    ?assertEqual(200, maps:get(status, R)),
    ?assertEqual(file(Config, "data.bin"), maps:get(body, R)),
    ?assertEqual(<<"application/octet-stream">>, h(<<"content-type">>, R)),
    ?assertEqual(<<"100000">>, h(<<"content-length">>, R)),
    ?assertEqual(<<"bytes">>, h(<<"accept-ranges">>, R)),
    ?assertEqual(<<"max-age=60">>, h(<<"cache-control">>, R)),
    ?assertMatch(<<$", _/binary>>, h(<<"etag">>, R)),
    ?assertMatch({ok, _}, falco_cond:parse_date(h(<<"last-modified">>, R))).

%% RFC 9110 §9.3.2: HEAD has GET's fields, no content.
static_head(Config) ->
    G = get(Config, "/static/data.bin"),
    H = request(Config, "HEAD", "/static/data.bin", []),
    ?assertEqual(<<>>, maps:get(body, H)),
    ?assertEqual(lists:sort(maps:get(headers, G)) -- [{<<"date">>, h(<<"date">>, G)}],
                 lists:sort(maps:get(headers, H)) -- [{<<"date">>, h(<<"date">>, H)}]).

static_index_redirect(Config) ->
    R = get(Config, "/static/"),
    ?assertEqual(<<"<!DOCTYPE html><title>app</title>">>, maps:get(body, R)),
    ?assertEqual(<<"text/html; charset=utf-8">>, h(<<"content-type">>, R)),
    ?assertEqual(<<"sub index">>, maps:get(body, get(Config, "/static/sub/"))),
    R2 = get(Config, "/static/sub"),
    ?assertEqual(301, maps:get(status, R2)),
    ?assertEqual(<<"/static/sub/">>, h(<<"location">>, R2)).

%% RFC 9110 §14.2, §15.3.7: one range is a 206 with Content-Range.
static_range(Config) ->
    R = get(Config, "/static/data.bin", [{"Range", "bytes=1000-1999"}]),
    ?assertEqual(206, maps:get(status, R)),
    ?assertEqual(<<"bytes 1000-1999/100000">>, h(<<"content-range">>, R)),
    ?assertEqual(binary:part(file(Config, "data.bin"), 1000, 1000), maps:get(body, R)),
    R2 = get(Config, "/static/data.bin", [{"Range", "bytes=-10"}]),
    ?assertEqual(binary:part(file(Config, "data.bin"), 99990, 10), maps:get(body, R2)).

%% RFC 9110 §14.6: several ranges are a multipart/byteranges 206.
static_multi_range(Config) ->
    R = get(Config, "/static/data.bin", [{"Range", "bytes=0-9, 50000-50009, -5"}]),
    ?assertEqual(206, maps:get(status, R)),
    <<"multipart/byteranges; boundary=", B/binary>> = h(<<"content-type">>, R),
    {done, Events, _} = falco_multipart:parse(maps:get(body, R), falco_multipart:init(B)),
    Data = file(Config, "data.bin"),
    ?assertEqual([binary:part(Data, 0, 10), binary:part(Data, 50000, 10), binary:part(Data, 99995, 5)],
                 [D || {data, D} <- Events]),
    ?assertEqual([<<"bytes 0-9/100000">>, <<"bytes 50000-50009/100000">>, <<"bytes 99995-99999/100000">>],
                 [proplists:get_value(<<"content-range">>, H) || {headers, H} <- Events]),
    %% Too many ranges: the field is ignored, a 200 with everything.
    Many = string:join(["bytes=0-0" | [integer_to_list(I * 10) ++ "-" ++ integer_to_list(I * 10)
                                        || I <- lists:seq(1, 20)]], ","),
    ?assertEqual(200, maps:get(status, get(Config, "/static/data.bin", [{"Range", Many}]))).

%% RFC 9110 §15.5.17
static_range_416(Config) ->
    R = get(Config, "/static/data.bin", [{"Range", "bytes=200000-"}]),
    ?assertEqual(416, maps:get(status, R)),
    ?assertEqual(<<"bytes */100000">>, h(<<"content-range">>, R)).

%% RFC 9110 §13.1.5
static_if_range(Config) ->
    ETag = h(<<"etag">>, get(Config, "/static/data.bin")),
    ?assertEqual(206, maps:get(status, get(Config, "/static/data.bin",
                                           [{"Range", "bytes=0-0"}, {"If-Range", ETag}]))),
    ?assertEqual(200, maps:get(status, get(Config, "/static/data.bin",
                                           [{"Range", "bytes=0-0"}, {"If-Range", "\"stale\""}]))).

%% RFC 9110 §13.2.2, §15.4.5
static_conditional(Config) ->
    G = get(Config, "/static/data.bin"),
    R = get(Config, "/static/data.bin", [{"If-None-Match", h(<<"etag">>, G)}]),
    ?assertEqual(304, maps:get(status, R)),
    ?assertEqual(<<>>, maps:get(body, R)),
    ?assertEqual(h(<<"etag">>, G), h(<<"etag">>, R)),
    ?assertEqual(<<"max-age=60">>, h(<<"cache-control">>, R)),
    ?assertEqual(304, maps:get(status, get(Config, "/static/data.bin",
                                           [{"If-Modified-Since", h(<<"last-modified">>, G)}]))),
    ?assertEqual(412, maps:get(status, get(Config, "/static/data.bin", [{"If-Match", "\"nope\""}]))),
    ?assertEqual(200, maps:get(status, get(Config, "/static/data.bin", [{"If-Match", h(<<"etag">>, G)}]))).

%% Precompressed sibling, RFC 9110 §8.4, §12.5.3, §12.5.5.
static_precompressed(Config) ->
    R = get(Config, "/static/big.txt", [{"Accept-Encoding", "gzip"}]),
    ?assertEqual(<<"gzip">>, h(<<"content-encoding">>, R)),
    ?assertEqual(file(Config, "big.txt.gz"), maps:get(body, R)),
    ?assertEqual(file(Config, "big.txt"), zlib:gunzip(maps:get(body, R))),
    ?assert(?C:has_token(<<"vary">>, <<"accept-encoding">>, R)),
    R2 = get(Config, "/static/big.txt"),
    ?assertEqual(undefined, h(<<"content-encoding">>, R2)),
    ?assertEqual(file(Config, "big.txt"), maps:get(body, R2)),
    ?assert(?C:has_token(<<"vary">>, <<"accept-encoding">>, R2)),
    ?assertNotEqual(h(<<"etag">>, R), h(<<"etag">>, R2)).

static_precompressed_curl(Config) ->
    {200, H, Body} = curl(Config, ["--compressed", url(Config, "/static/big.txt")]),
    ?assertEqual(<<"gzip">>, proplists:get_value(<<"content-encoding">>, H)),
    ?assertEqual(file(Config, "big.txt"), Body).

static_curl_range(Config) ->
    {206, H, Body} = curl(Config, ["-r", "10-19", url(Config, "/static/data.bin")]),
    ?assertEqual(<<"bytes 10-19/100000">>, proplists:get_value(<<"content-range">>, H)),
    ?assertEqual(binary:part(file(Config, "data.bin"), 10, 10), Body).

%% No request path reaches a file outside the root. Some are refused by the
%% request parser already (400); the rest by falco_static (400 or 404).
static_traversal(Config) ->
    Attempts = ["/static/../secret.txt", "/static/%2e%2e/secret.txt", "/static/%2E%2e/secret.txt",
                "/static/.%2e/secret.txt", "/static/sub/%2e%2e/%2e%2e/secret.txt",
                "/static/%2e%2e%2fsecret.txt", "/static/..%2fsecret.txt", "/static/..%5csecret.txt",
                "/static/%5c..%5csecret.txt", "/static/..\\secret.txt", "/static/secret.txt%00",
                "/static/%00/../secret.txt", "/static/%252e%252e/secret.txt",
                "/static/%c0%ae%c0%ae/secret.txt", "/static//../secret.txt",
                "/static/privdir/secret.txt", "/static/" ++ ?config(priv, Config) ++ "/secret.txt",
                "/static/./../secret.txt"],
    [begin
         Raw = ["GET ", P, " HTTP/1.1\r\n", ?HOST, "Connection: close\r\n\r\n"],
         #{responses := Rs, raw := Bin} = ?C:exchange(?config(port, Config), Raw),
         ?assertEqual(nomatch, binary:match(Bin, <<"TOP SECRET">>)),
         [#{status := S}] = Rs,
         ct:log("~s -> ~b", [P, S]),
         ?assert(S =:= 400 orelse S =:= 404)
     end || P <- Attempts].

static_symlink_out(Config) ->
    R = get(Config, "/static/escape"),
    ?assertEqual(404, maps:get(status, R)),
    ?assertEqual(nomatch, binary:match(maps:get(body, R), <<"TOP SECRET">>)).

static_method(Config) ->
    R = request(Config, "DELETE", "/static/data.bin", []),
    ?assertEqual(405, maps:get(status, R)),
    ?assertEqual(<<"GET, HEAD">>, h(<<"allow">>, R)).

%% -- uploads (RFC 7578) ----------------------------------------------------------------------

upload_curl(Config) ->
    File = filename:join(?config(root, Config), "data.bin"),
    {200, _, Body} = curl(Config, ["-F", "title=hello world", "-F", "file=@" ++ File,
                                   "-F", "note=<" ++ filename:join(?config(root, Config), "index.html"),
                                   url(Config, "/upload")]),
    {ok, [T, F, N]} = falco_json:decode(Body),
    ?assertMatch(#{<<"name">> := <<"title">>, <<"size">> := 11, <<"filename">> := null}, T),
    ?assertMatch(#{<<"name">> := <<"file">>, <<"filename">> := <<"data.bin">>, <<"size">> := 100000,
                   <<"type">> := <<"application/octet-stream">>}, F),
    ?assertEqual(binary:encode_hex(erlang:md5(file(Config, "data.bin"))), maps:get(<<"md5">>, F)),
    ?assertMatch(#{<<"name">> := <<"note">>, <<"size">> := 33}, N).

%% A chunked multipart body (RFC 9112 §7.1), delimiters split across chunks.
upload_raw_chunked(Config) ->
    Payload = crypto:strong_rand_bytes(30000),
    Body = multipart(<<"XbOuNdArY">>, [{<<"a">>, undefined, <<"first">>},
                                       {<<"b">>, <<"b.bin">>, Payload}]),
    Raw = ["POST /upload HTTP/1.1\r\n", ?HOST,
           "Content-Type: multipart/form-data; boundary=XbOuNdArY\r\n",
           "Transfer-Encoding: chunked\r\n\r\n", chunked(pieces(Body, 977))],
    {Sock, {ok, R}} = ?C:request(?config(port, Config), Raw),
    ?C:close(Sock),
    ?assertEqual(200, maps:get(status, R)),
    {ok, [A, B]} = falco_json:decode(maps:get(body, R)),
    ?assertEqual(5, maps:get(<<"size">>, A)),
    ?assertEqual(30000, maps:get(<<"size">>, B)),
    ?assertEqual(binary:encode_hex(erlang:md5(Payload)), maps:get(<<"md5">>, B)).

%% Content-Length body written in small pieces with pauses: read incrementally.
upload_raw_slow_pieces(Config) ->
    Body = multipart(<<"b0und">>, [{<<"x">>, <<"x.txt">>, binary:copy(<<"\r\n--b0un">>, 500)}]),
    Sock = ?C:connect(?config(port, Config)),
    ?C:send(Sock, ["POST /upload HTTP/1.1\r\n", ?HOST,
                   "Content-Type: multipart/form-data; boundary=b0und\r\n",
                   "Content-Length: ", integer_to_list(byte_size(Body)), "\r\n\r\n"]),
    [begin ?C:send(Sock, P), timer:sleep(5) end || P <- pieces(Body, 333)],
    {ok, R} = ?C:recv_final(Sock),
    ?C:close(Sock),
    ?assertEqual(200, maps:get(status, R)),
    {ok, [X]} = falco_json:decode(maps:get(body, R)),
    ?assertEqual(4000, maps:get(<<"size">>, X)).

upload_errors(Config) ->
    Post = fun(Type, Body) ->
                   Raw = ["POST /upload HTTP/1.1\r\n", ?HOST, "Content-Type: ", Type, "\r\n",
                          "Content-Length: ", integer_to_list(iolist_size(Body)), "\r\n\r\n", Body],
                   {Sock, {ok, R}} = ?C:request(?config(port, Config), Raw),
                   ?C:close(Sock),
                   maps:get(status, R)
           end,
    Six = multipart(<<"b">>, [{integer_to_binary(I), undefined, <<"v">>} || I <- lists:seq(1, 6)]),
    ?assertEqual(413, Post("multipart/form-data; boundary=b", Six)),
    ?assertEqual(415, Post("application/json", <<"{}">>)),
    ?assertEqual(400, Post("multipart/form-data", <<"x">>)),
    ?assertEqual(400, Post("multipart/form-data; boundary=b", <<"--b\r\n\r\ncut off">>)),
    ?assertEqual(400, Post("multipart/form-data; boundary=b", <<"--b\r\nbad header\r\n\r\n\r\n--b--">>)).

%% A gzip-coded multipart body, inflated as it is read (decode_request).
upload_gzip_body(Config) ->
    Body = multipart(<<"gz">>, [{<<"t">>, undefined, binary:copy(<<"z">>, 5000)}]),
    Gz = zlib:gzip(Body),
    Raw = ["POST /upload HTTP/1.1\r\n", ?HOST, "Content-Type: multipart/form-data; boundary=gz\r\n",
           "Content-Encoding: gzip\r\nContent-Length: ", integer_to_list(byte_size(Gz)), "\r\n\r\n", Gz],
    {Sock, {ok, R}} = ?C:request(?config(port, Config), Raw),
    ?C:close(Sock),
    ?assertEqual(200, maps:get(status, R)),
    ?assertMatch({ok, [#{<<"size">> := 5000}]}, falco_json:decode(maps:get(body, R))).

%% -- streams ---------------------------------------------------------------------------------

sse_events(Body) ->
    {ok, Events, _} = falco_sse:parse(Body, falco_sse:init_parser()),
    Events.

sse_raw(Config) ->
    R = get(Config, "/events?count=3&interval=150&keepalive=40"),
    ?assertEqual(200, maps:get(status, R)),
    ?assertEqual(chunked, maps:get(framing, R)),
    ?assertEqual(<<"text/event-stream">>, h(<<"content-type">>, R)),
    ?assertEqual(<<"no-cache">>, h(<<"cache-control">>, R)),
    Body = maps:get(body, R),
    Events = sse_events(Body),
    ?assertMatch([#{event := <<"tick">>, id := <<"1">>}, #{event := <<"tick">>, id := <<"2">>},
                  #{event := <<"tick">>, id := <<"3">>}, #{event := <<"bye">>}], Events),
    %% Keep-alive comments went out while the producer was idle.
    ?assert(length(binary:matches(Body, <<":\n\n">>)) >= 2),
    %% One chunk per event or ping: each is sent as it happens.
    ?assert(length(maps:get(chunks, R)) >= 5),
    %% A reconnecting client resumes after its Last-Event-ID.
    R2 = get(Config, "/events?count=1&interval=10", [{"Last-Event-ID", "41"}]),
    ?assertMatch([#{id := <<"42">>} | _], sse_events(maps:get(body, R2))).

sse_curl(Config) ->
    {200, H, Body} = curl(Config, ["-N", url(Config, "/events?count=2&interval=50&keepalive=1000")]),
    ?assertEqual(<<"text/event-stream">>, proplists:get_value(<<"content-type">>, H)),
    ?assertMatch([#{id := <<"1">>}, #{id := <<"2">>}, #{event := <<"bye">>}], sse_events(Body)).

%% Compressed SSE: each event is flushed, so each chunk inflates on its own
%% to whole events, as they are produced (not at the end of the stream).
sse_gzip_flushed(Config) ->
    Sock = ?C:connect(?config(port, Config)),
    %% the first event is 20 s away: the stream is far from over while
    %% the test reads
    ?C:send(Sock, ["GET /events?count=2&interval=20000&keepalive=100000 HTTP/1.1\r\n", ?HOST,
                   "Accept-Encoding: gzip\r\n\r\n"]),
    {ok, Head} = gen_tcp:recv(Sock, 0, 5000),
    ?assertMatch({match, _}, re:run(Head, <<"content-encoding: gzip">>)),
    %% What arrives first is the opening comment and retry, whole, although
    %% the stream is not over.
    Z = zlib:open(),
    ok = zlib:inflateInit(Z, 31),
    [_, Rest] = binary:split(Head, <<"\r\n\r\n">>),
    First = case Rest of
                <<>> -> {ok, D} = gen_tcp:recv(Sock, 0, 10000), D;
                _ -> Rest
            end,
    [SizeHex, Chunk0] = binary:split(First, <<"\r\n">>),
    Size = binary_to_integer(SizeHex, 16),
    <<Chunk:Size/binary, _/binary>> = Chunk0,
    Text = iolist_to_binary(zlib:inflate(Z, Chunk)),
    ?assertMatch({match, _}, re:run(Text, <<"^: falco example event stream\nretry: 3000\n\n">>)),
    zlib:close(Z),
    ?C:close(Sock).

%% A client that goes away is noticed at the next keep-alive ping and the
%% connection process ends.
sse_client_gone(Config) ->
    {ok, Before} = falco:connections(?LISTENER),
    Sock = ?C:connect(?config(port, Config)),
    ?C:send(Sock, ["GET /events?count=1000&interval=100000&keepalive=50 HTTP/1.1\r\n", ?HOST, "\r\n"]),
    {ok, _} = gen_tcp:recv(Sock, 0, 5000),
    ?assertEqual(ok, ?C:wait_until(fun() -> falco:connections(?LISTENER) =:= {ok, Before + 1} end, 2000)),
    ?C:close(Sock),
    ?assertEqual(ok, ?C:wait_until(fun() -> falco:connections(?LISTENER) =:= {ok, Before} end, 3000)).

ndjson_stream(Config) ->
    R = get(Config, "/ndjson"),
    ?assertEqual(<<"application/x-ndjson">>, h(<<"content-type">>, R)),
    P = falco_ndjson:init_parser(),
    {ok, Values, _} = falco_ndjson:parse(maps:get(body, R), P),
    ?assertEqual([#{<<"n">> => 1}, #{<<"n">> => 2}, #{<<"n">> => 3}, <<"a">>, null], Values),
    ?assertEqual(4, length(maps:get(chunks, R))).

%% -- compression (RFC 9110 §8.4, §12.5.3) ------------------------------------------------------

gzip_curl(Config) ->
    {200, H, Body} = curl(Config, ["--compressed", url(Config, "/text")]),
    ?assertEqual(<<"gzip">>, proplists:get_value(<<"content-encoding">>, H)),
    ?assertEqual(<<"W/\"text-v1\"">>, proplists:get_value(<<"etag">>, H)),
    ?assertEqual(text(), Body),
    ?assert(binary_to_integer(proplists:get_value(<<"content-length">>, H)) < byte_size(text())).

accept_encoding_variants(Config) ->
    Get = fun(AE) -> get(Config, "/text", [{"Accept-Encoding", AE}]) end,
    Coding = fun(R) -> h(<<"content-encoding">>, R) end,
    G = Get("gzip"),
    ?assertEqual(<<"gzip">>, Coding(G)),
    ?assertEqual(text(), zlib:gunzip(maps:get(body, G))),
    ?assertEqual(integer_to_binary(byte_size(maps:get(body, G))), h(<<"content-length">>, G)),
    ?assert(?C:has_token(<<"vary">>, <<"accept-encoding">>, G)),
    D = Get("deflate"),
    ?assertEqual(<<"deflate">>, Coding(D)),
    ?assertEqual(text(), zlib:uncompress(maps:get(body, D))),
    ?assertEqual(<<"deflate">>, Coding(Get("gzip;q=0.5, deflate"))),
    ?assertEqual(<<"gzip">>, Coding(Get("x-gzip"))),
    ?assertEqual(<<"gzip">>, Coding(Get("*"))),
    ?assertEqual(<<"deflate">>, Coding(Get("gzip;q=0, *"))),
    ?assertEqual(undefined, Coding(Get("br, zstd"))),
    ?assertEqual(undefined, Coding(Get("gzip;q=0.4, identity;q=0.5"))),
    ?assertEqual(undefined, Coding(Get(""))),
    None = get(Config, "/text"),
    ?assertEqual(undefined, Coding(None)),
    ?assertEqual(<<"\"text-v1\"">>, h(<<"etag">>, None)),
    ?assert(?C:has_token(<<"vary">>, <<"accept-encoding">>, None)),
    %% Not compressible: no coding, no Vary.
    Png = get(Config, "/png", [{"Accept-Encoding", "gzip"}]),
    ?assertEqual(undefined, Coding(Png)),
    ?assertEqual(undefined, h(<<"vary">>, Png)).

%% RFC 9110 §12.5.3, §15.5.7
not_acceptable_406(Config) ->
    [?assertEqual(406, maps:get(status, get(Config, "/text", [{"Accept-Encoding", AE}])))
     || AE <- ["identity;q=0", "*;q=0", "br, identity;q=0", "gzip;q=0, deflate;q=0, identity;q=0"]],
    %% identity refused but gzip fine: compressed even when small.
    R = get(Config, "/small", [{"Accept-Encoding", "gzip, identity;q=0"}]),
    ?assertEqual(<<"gzip">>, h(<<"content-encoding">>, R)),
    ?assertEqual(<<"small">>, zlib:gunzip(maps:get(body, R))).

%% RFC 9110 §9.3.2: HEAD gets the fields of the compressed GET.
head_compressed(Config) ->
    G = get(Config, "/text", [{"Accept-Encoding", "gzip"}]),
    H = request(Config, "HEAD", "/text", [{"Accept-Encoding", "gzip"}]),
    ?assertEqual(<<>>, maps:get(body, H)),
    ?assertEqual(h(<<"content-length">>, G), h(<<"content-length">>, H)),
    ?assertEqual(<<"gzip">>, h(<<"content-encoding">>, H)).

stream_compressed(Config) ->
    R = get(Config, "/stream", [{"Accept-Encoding", "gzip"}]),
    ?assertEqual(chunked, maps:get(framing, R)),
    ?assertEqual(<<"gzip">>, h(<<"content-encoding">>, R)),
    ?assertEqual(binary:copy(text(), 3), zlib:gunzip(maps:get(body, R))),
    {200, _, Body} = curl(Config, ["--compressed", url(Config, "/stream")]),
    ?assertEqual(binary:copy(text(), 3), Body).

small_not_compressed(Config) ->
    R = get(Config, "/small", [{"Accept-Encoding", "gzip"}]),
    ?assertEqual(undefined, h(<<"content-encoding">>, R)),
    ?assertEqual(<<"small">>, maps:get(body, R)).

request_decoding(Config) ->
    Post = fun(Coding, Body) ->
                   Raw = ["POST /echo HTTP/1.1\r\n", ?HOST, "Content-Encoding: ", Coding, "\r\n",
                          "Content-Length: ", integer_to_list(iolist_size(Body)), "\r\n\r\n", Body],
                   {Sock, {ok, R}} = ?C:request(?config(port, Config), Raw),
                   ?C:close(Sock),
                   R
           end,
    Text = text(),
    R1 = Post("gzip", zlib:gzip(Text)),
    ?assertEqual(200, maps:get(status, R1)),
    ?assertEqual(Text, maps:get(body, R1)),
    ?assertEqual(Text, maps:get(body, Post("deflate", zlib:compress(Text)))),
    ?assertEqual(400, maps:get(status, Post("gzip", <<"not gzip">>))),
    R415 = Post("br", <<"x">>),
    ?assertEqual(415, maps:get(status, R415)),
    ?assertEqual(<<"gzip, deflate">>, h(<<"accept-encoding">>, R415)),
    %% curl's own gzip-coded upload, as a client would send it.
    GzFile = filename:join(?config(priv_dir, Config), "up.gz"),
    ok = file:write_file(GzFile, zlib:gzip(Text)),
    {200, H, Echo} = curl(Config, ["-H", "Content-Encoding: gzip", "--data-binary", "@" ++ GzFile,
                                   url(Config, "/echo")]),
    ?assertEqual(Text, Echo),
    ?assertEqual(binary:encode_hex(erlang:md5(Text)), proplists:get_value(<<"x-md5">>, H)).

%% A small gzip body that inflates past the cap is a 413, without inflating it all.
zip_bomb_413(Config) ->
    Bomb = zlib:gzip(binary:copy(<<0>>, 50000000)),
    ?assert(byte_size(Bomb) < 100000),
    Raw = ["POST /echo HTTP/1.1\r\n", ?HOST, "Content-Encoding: gzip\r\n",
           "Content-Length: ", integer_to_list(byte_size(Bomb)), "\r\n\r\n", Bomb],
    {Sock, {ok, R}} = ?C:request(?config(port, Config), Raw),
    ?C:close(Sock),
    ?assertEqual(413, maps:get(status, R)).

%% -- the example application -----------------------------------------------------------------

example_static(Config) ->
    Port = ?config(example_port, Config),
    {200, H, Body} = curl(Config, ["--compressed", url_port(Port, "/static/style.css")]),
    ?assertEqual(<<"gzip">>, proplists:get_value(<<"content-encoding">>, H)),
    ?assertMatch({match, _}, re:run(Body, <<"falco example stylesheet">>)),
    {200, H2, Index} = curl(Config, [url_port(Port, "/static/")]),
    ?assertEqual(<<"text/html; charset=utf-8">>, proplists:get_value(<<"content-type">>, H2)),
    ?assertMatch({match, _}, re:run(Index, <<"EventSource">>)),
    {404, _, _} = curl(Config, [url_port(Port, "/static/../rebar.config")]),
    {206, _, <<"A plain">>} = curl(Config, ["-r", "0-6", url_port(Port, "/static/hello.txt")]).

example_upload(Config) ->
    Port = ?config(example_port, Config),
    File = filename:join(?config(root, Config), "data.bin"),
    {200, _, Body} = curl(Config, ["-F", "title=hi", "-F", "file=@" ++ File, url_port(Port, "/upload")]),
    ?assertEqual({ok, #{<<"parts">> => [#{<<"name">> => <<"title">>, <<"size">> => 2},
                                        #{<<"name">> => <<"file">>, <<"filename">> => <<"data.bin">>,
                                          <<"size">> => 100000}]}},
                 falco_json:decode(Body)),
    {415, _, _} = curl(Config, ["-d", "x=1", url_port(Port, "/upload")]).

example_events(Config) ->
    Port = ?config(example_port, Config),
    {200, _, Body} = curl(Config, ["-N", url_port(Port, "/events?count=2&interval=60&keepalive=25")]),
    ?assertMatch([#{event := <<"tick">>, id := <<"1">>}, #{event := <<"tick">>, id := <<"2">>},
                  #{event := <<"bye">>}], sse_events(Body)),
    ?assertMatch({match, _}, re:run(Body, <<"\n:\n\n">>)).

example_compression(Config) ->
    Port = ?config(example_port, Config),
    {200, H, Body} = curl(Config, ["--compressed", url_port(Port, "/stream")]),
    ?assertEqual(<<"gzip">>, proplists:get_value(<<"content-encoding">>, H)),
    ?assertEqual(<<"chunk 1\nchunk 2\nchunk 3\nchunk 4\nchunk 5\n">>, Body).
