%% Black-box tests with real clients: curl and Python's http.client talk to
%% a listener on an ephemeral port, and the suite checks what they got
%% (RFC 9112 framing and persistence, RFC 9110 semantics) byte for byte.
%% Nothing here knows falco's internals; the handler only serves fixed
%% routes. A case is skipped only when its client program is missing, and
%% fails then under FALCO_REQUIRE_TOOLS=1 (falco_test_tools).
-module(blackbox_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, init_per_suite/1, end_per_suite/1,
         init_per_group/2, end_per_group/2]).
-export([curl_keep_alive_reuse/1, curl_post_echo_binary/1, curl_chunked_upload/1,
         curl_expect_100_continue/1, curl_head/1, curl_http10/1, curl_stream_chunked/1,
         curl_trailers/1, curl_sendfile/1, curl_not_found_and_close/1,
         python_keep_alive/1, python_chunked_upload/1, python_chunked_response/1,
         python_limits/1, python_connection_close/1]).

-define(LISTENER, blackbox_listener).
-define(STREAM_PIECES, [<<"chunk-", (integer_to_binary(I))/binary, "\n">> || I <- lists:seq(1, 5)]).

all() ->
    [{group, curl}, {group, python}].

groups() ->
    [{curl, [], [curl_keep_alive_reuse, curl_post_echo_binary, curl_chunked_upload,
                 curl_expect_100_continue, curl_head, curl_http10, curl_stream_chunked,
                 curl_trailers, curl_sendfile, curl_not_found_and_close]},
     {python, [], [python_keep_alive, python_chunked_upload, python_chunked_response,
                   python_limits, python_connection_close]}].

init_per_suite(Config) ->
    Priv = ?config(priv_dir, Config),
    %% Every byte value, then random bytes: 300 KB, so sendfile and the
    %% echo both cross many TCP segments.
    File = filename:join(Priv, "payload.bin"),
    Payload = <<(list_to_binary(lists:seq(0, 255)))/binary, (crypto:strong_rand_bytes(300000))/binary>>,
    ok = file:write_file(File, Payload),
    ok = falco_test_listener:start_app(),
    {_, Port} = falco_test_listener:start(?LISTENER, handler(File),
                                          #{max_body => 2 * 1024 * 1024, max_request_line => 2048,
                                            max_header_line => 4096, idle_timeout => 10000}),
    [{port, Port}, {payload_file, File}, {payload, Payload} | Config].

end_per_suite(Config) ->
    ok = falco_test_listener:stop(?LISTENER),
    Config.

init_per_group(curl, Config) ->
    falco_test_tools:require(["curl"], [{curl, os:find_executable("curl")} | Config]);
init_per_group(python, Config) ->
    falco_test_tools:require([{file, "/usr/bin/python3"}], Config).

end_per_group(_, Config) ->
    Config.

%% -- the handler -------------------------------------------------------------

handler(File) ->
    fun(Req) -> route(falco_req:method(Req), falco_req:path(Req), Req, File) end.

route(_, <<"/hello">>, _Req, _) ->
    {200, [{<<"content-type">>, <<"text/plain">>}], <<"hello">>};
route(_, <<"/peer">>, Req, _) ->
    %% The client's port tells the test which connection carried a request.
    {_, Port} = falco_req:peer(Req),
    {200, [{<<"content-type">>, <<"text/plain">>}], [integer_to_binary(Port), $\n]};
route(_, <<"/echo">>, Req, _) ->
    {ok, Body, _} = falco_req:read_body(Req),
    Framing = case falco_req:header(<<"transfer-encoding">>, Req) of
                  undefined -> <<"length">>;
                  TE -> TE
              end,
    {200, [{<<"content-type">>, falco_req:header(<<"content-type">>, Req, <<"application/octet-stream">>)},
           {<<"x-request-framing">>, Framing},
           {<<"x-request-expect">>, falco_req:header(<<"expect">>, Req, <<"none">>)}],
     Body};
route(_, <<"/stream">>, _Req, _) ->
    {stream, 200, [{<<"content-type">>, <<"text/plain">>}],
     fun(Send) -> lists:foreach(fun(P) -> ok = Send(P) end, ?STREAM_PIECES) end};
route(_, <<"/trailers">>, _Req, _) ->
    {stream, 200, [{<<"content-type">>, <<"text/plain">>}, {<<"trailer">>, <<"x-checksum">>}],
     fun(Send) ->
             ok = Send(<<"body with trailers\n">>),
             {trailers, [{<<"x-checksum">>, <<"abc123">>}]}
     end};
route(_, <<"/file">>, _Req, File) ->
    {200, [{<<"content-type">>, <<"application/octet-stream">>}], {file, File}};
route(_, <<"/close">>, _Req, _) ->
    {200, [{<<"connection">>, <<"close">>}], <<"bye">>};
route(_, _, _Req, _) ->
    {404, [{<<"content-type">>, <<"text/plain">>}], <<"not found\n">>}.

%% -- running clients -----------------------------------------------------------

url(Config, Path) ->
    "http://127.0.0.1:" ++ integer_to_list(?config(port, Config)) ++ Path.

%% Clients are given their own time limits; the runner's is a backstop.
-define(CLIENT_BACKSTOP, 60000).

%% curl with a time limit. Returns {Headers, Body, Verbose}: every
%% response head (-D), what curl wrote to stdout (the bodies of all URLs,
%% in order) and its -v trace (written to a file, so stdout is only body).
curl(Config, Args) ->
    Priv = ?config(priv_dir, Config),
    N = integer_to_list(erlang:unique_integer([positive])),
    Hdrs = filename:join(Priv, "headers" ++ N),
    Err = filename:join(Priv, "stderr" ++ N),
    {Exit, Body} = falco_test_run:run(?config(curl, Config),
                                      ["--silent", "--show-error", "--max-time", "30", "-v",
                                       "--stderr", Err, "-D", Hdrs | Args],
                                      #{timeout => ?CLIENT_BACKSTOP}),
    Read = fun(F) -> case file:read_file(F) of {ok, B} -> B; {error, enoent} -> <<>> end end,
    Verbose = Read(Err),
    ct:log("curl ~p~nexit ~p~n~ts", [Args, Exit, Verbose]),
    ?assertEqual(0, Exit),
    {Read(Hdrs), Body, Verbose}.

%% The status line and fields of each response in a -D dump, in order
%% (interim 1xx responses and trailer sections included).
dumped(Hdrs) ->
    Blocks = [B || B <- binary:split(Hdrs, <<"\r\n\r\n">>, [global]), B =/= <<>>],
    [begin
         [Status | Lines] = binary:split(B, <<"\r\n">>, [global]),
         {Status, [{string:lowercase(N), V} || L <- Lines, [N, V] <- [binary:split(L, <<": ">>)]]}
     end || B <- Blocks].

final(Hdrs) ->
    [{Status, Fields} | _] = lists:reverse([R || R = {<<"HTTP/", _/binary>>, _} <- dumped(Hdrs),
                                                 not is_interim(R)]),
    {Status, Fields}.

is_interim({<<"HTTP/1.1 1", _/binary>>, _}) -> true;
is_interim(_) -> false.

field(Name, Fields) -> proplists:get_value(Name, Fields).

python(Config, Scenario) ->
    Script = filename:join(?config(data_dir, Config), "http_client.py"),
    {Exit, Output} = falco_test_run:run("/usr/bin/python3",
                                        [Script, integer_to_list(?config(port, Config)), Scenario],
                                        #{timeout => ?CLIENT_BACKSTOP}),
    ct:log("python ~s: exit ~p~n~ts", [Scenario, Exit, Output]),
    ?assertEqual(0, Exit),
    Lines = binary:split(string:trim(Output), <<"\n">>, [global]),
    {ok, Result} = falco_json:decode(lists:last(Lines)),
    Result.

%% -- curl ----------------------------------------------------------------------

%% RFC 9112 §9.3: curl reuses one persistent connection for several URLs:
%% the server saw the same client port each time, and curl says so.
curl_keep_alive_reuse(Config) ->
    {Hdrs, Body, Verbose} = curl(Config, [url(Config, "/peer"), url(Config, "/hello"),
                                          url(Config, "/peer"), url(Config, "/peer")]),
    [P, _] = binary:split(Body, <<"\n">>),
    ?assertEqual(<<P/binary, "\nhello", P/binary, "\n", P/binary, "\n">>, Body),
    ?assertMatch({match, _}, re:run(Verbose, "Re-using existing connection")),
    ?assertEqual(4, length([S || {<<"HTTP/1.1 200 OK">> = S, _} <- dumped(Hdrs)])).

%% A binary file POSTed with --data-binary comes back byte for byte.
curl_post_echo_binary(Config) ->
    Payload = ?config(payload, Config),
    {Hdrs, Body, _} = curl(Config, ["--data-binary", "@" ++ ?config(payload_file, Config),
                                    "-H", "Content-Type: application/x-test",
                                    "-H", "Expect:", url(Config, "/echo")]),
    {<<"HTTP/1.1 200 OK">>, F} = final(Hdrs),
    ?assertEqual(<<"length">>, field(<<"x-request-framing">>, F)),
    ?assertEqual(<<"application/x-test">>, field(<<"content-type">>, F)),
    ?assertEqual(integer_to_binary(byte_size(Payload)), field(<<"content-length">>, F)),
    ?assert(Body =:= Payload).

%% RFC 9112 §7.1: a chunked upload (curl frames the file in chunks) is
%% decoded and echoed byte for byte.
curl_chunked_upload(Config) ->
    Payload = ?config(payload, Config),
    {Hdrs, Body, Verbose} = curl(Config, ["--data-binary", "@" ++ ?config(payload_file, Config),
                                          "-H", "Transfer-Encoding: chunked", "-H", "Expect:",
                                          url(Config, "/echo")]),
    ?assertMatch({match, _}, re:run(Verbose, "> Transfer-Encoding: chunked", [caseless])),
    {<<"HTTP/1.1 200 OK">>, F} = final(Hdrs),
    ?assertEqual(<<"chunked">>, field(<<"x-request-framing">>, F)),
    ?assert(Body =:= Payload).

%% RFC 9110 §10.1.1: with Expect: 100-continue curl waits for our 100
%% before sending a 1.5 MB body; the body arrives intact.
curl_expect_100_continue(Config) ->
    Big = binary:copy(?config(payload, Config), 5),
    File = filename:join(?config(priv_dir, Config), "big.bin"),
    ok = file:write_file(File, Big),
    T0 = erlang:monotonic_time(millisecond),
    {Hdrs, Body, _} = curl(Config, ["--data-binary", "@" ++ File, "-H", "Expect: 100-continue",
                                    "--expect100-timeout", "10", url(Config, "/echo")]),
    %% With a 10 s expect timeout, a fast answer means the 100 came from us.
    ?assert(erlang:monotonic_time(millisecond) - T0 < 5000),
    [{<<"HTTP/1.1 100 Continue">>, []} | _] = dumped(Hdrs),
    {<<"HTTP/1.1 200 OK">>, F} = final(Hdrs),
    ?assertEqual(<<"100-continue">>, field(<<"x-request-expect">>, F)),
    ?assertEqual(byte_size(Big), byte_size(Body)),
    ?assert(Body =:= Big).

%% RFC 9110 §9.3.2: curl -I: the GET fields, Content-Length included, no body.
curl_head(Config) ->
    {GetHdrs, <<"hello">>, _} = curl(Config, [url(Config, "/hello")]),
    %% -I prints the head where the body would go: nothing else came.
    {HeadHdrs, Body, _} = curl(Config, ["-I", url(Config, "/hello")]),
    ?assertEqual(HeadHdrs, Body),
    {<<"HTTP/1.1 200 OK">>, HF} = final(HeadHdrs),
    {<<"HTTP/1.1 200 OK">>, GF} = final(GetHdrs),
    ?assertEqual(<<"5">>, field(<<"content-length">>, HF)),
    ?assertEqual(lists:keydelete(<<"date">>, 1, GF), lists:keydelete(<<"date">>, 1, HF)),
    %% A streamed reply to HEAD: the fields, and no chunk at all.
    {SHdrs, SHdrs, _} = curl(Config, ["-I", url(Config, "/stream")]),
    {<<"HTTP/1.1 200 OK">>, _} = final(SHdrs).

%% RFC 9112 §9.3, §6.3: an HTTP/1.0 client gets a response it can read:
%% a length for full replies, close-delimited for a stream; we close.
curl_http10(Config) ->
    {Hdrs, Body, Verbose} = curl(Config, ["--http1.0", url(Config, "/hello")]),
    ?assertMatch({match, _}, re:run(Verbose, "> GET /hello HTTP/1.0")),
    {<<"HTTP/1.1 200 OK">>, F} = final(Hdrs),
    ?assertEqual(<<"hello">>, Body),
    ?assertEqual(<<"close">>, field(<<"connection">>, F)),
    {SHdrs, SBody, _} = curl(Config, ["--http1.0", url(Config, "/stream")]),
    {<<"HTTP/1.1 200 OK">>, SF} = final(SHdrs),
    ?assertEqual(undefined, field(<<"transfer-encoding">>, SF)),
    ?assertEqual(iolist_to_binary(?STREAM_PIECES), SBody),
    %% And with keep-alive asked for, two URLs share one connection.
    {_, KBody, KVerbose} = curl(Config, ["--http1.0", "-H", "Connection: keep-alive",
                                         url(Config, "/peer"), url(Config, "/peer")]),
    [P, P, <<>>] = binary:split(KBody, <<"\n">>, [global]),
    ?assertMatch({match, _}, re:run(KVerbose, "Re-using existing connection")).

%% RFC 9112 §7.1: a streamed reply is chunked, one chunk per piece; --raw
%% shows the framing, without it curl reassembles the body.
curl_stream_chunked(Config) ->
    {Hdrs, Body, _} = curl(Config, [url(Config, "/stream")]),
    {<<"HTTP/1.1 200 OK">>, F} = final(Hdrs),
    ?assertEqual(<<"chunked">>, field(<<"transfer-encoding">>, F)),
    ?assertEqual(undefined, field(<<"content-length">>, F)),
    ?assertEqual(iolist_to_binary(?STREAM_PIECES), Body),
    {_, Raw, _} = curl(Config, ["--raw", url(Config, "/stream")]),
    ?assertEqual(iolist_to_binary([[integer_to_binary(byte_size(P), 16), "\r\n", P, "\r\n"]
                                   || P <- ?STREAM_PIECES] ++ ["0\r\n\r\n"]), Raw).

%% RFC 9112 §7.1.2: trailer fields after the last chunk; curl (7.88) passes
%% them to its header output after the body.
curl_trailers(Config) ->
    {Hdrs, Body, _} = curl(Config, [url(Config, "/trailers")]),
    ?assertEqual(<<"body with trailers\n">>, Body),
    ?assertMatch({match, _}, re:run(Hdrs, "\r\nx-checksum: abc123\r\n")),
    {_, Raw, _} = curl(Config, ["--raw", url(Config, "/trailers")]),
    ?assertEqual(<<"13\r\nbody with trailers\n\r\n0\r\nx-checksum: abc123\r\n\r\n">>, Raw).

%% A file sent with sendfile arrives byte for byte, with its length.
curl_sendfile(Config) ->
    Payload = ?config(payload, Config),
    {Hdrs, Body, _} = curl(Config, [url(Config, "/file")]),
    {<<"HTTP/1.1 200 OK">>, F} = final(Hdrs),
    ?assertEqual(integer_to_binary(byte_size(Payload)), field(<<"content-length">>, F)),
    ?assert(Body =:= Payload),
    %% Twice on one connection: the length framed the first one exactly.
    {_, Body2, V2} = curl(Config, [url(Config, "/file"), url(Config, "/hello")]),
    ?assert(Body2 =:= <<Payload/binary, "hello">>),
    ?assertMatch({match, _}, re:run(V2, "Re-using existing connection")).

%% A handler's Connection: close makes curl open a new connection for the
%% next URL; a 404 keeps it.
curl_not_found_and_close(Config) ->
    {Hdrs, Body, Verbose} = curl(Config, [url(Config, "/nope"), url(Config, "/close"),
                                          url(Config, "/hello")]),
    ?assertEqual(<<"not found\nbyehello">>, Body),
    [{<<"HTTP/1.1 404 Not Found">>, _}, {<<"HTTP/1.1 200 OK">>, CF}, {<<"HTTP/1.1 200 OK">>, _}] =
        dumped(Hdrs),
    ?assertEqual(<<"close">>, field(<<"connection">>, CF)),
    {match, Reused} = re:run(Verbose, "Re-using existing connection", [global]),
    ?assertEqual(1, length(Reused)).

%% -- Python http.client ------------------------------------------------------------

%% RFC 9112 §9.3: one HTTPConnection carries GET, POST, HEAD, a chunked
%% stream and an empty PUT, one after another, on the same socket.
python_keep_alive(Config) ->
    #{<<"responses">> := Rs} = python(Config, "keep_alive"),
    [Peer1, Echo, Head, Stream, Put, Peer2] = Rs,
    [?assertMatch(#{<<"status">> := 200, <<"same_socket">> := true, <<"will_close">> := false}, R)
     || R <- Rs],
    ?assertEqual(maps:get(<<"body">>, Peer1), maps:get(<<"body">>, Peer2)),
    ?assertEqual(5000, maps:get(<<"body_len">>, Echo)),
    #{<<"body_len">> := 0, <<"headers">> := #{<<"content-length">> := <<"5">>}} = Head,
    #{<<"headers">> := #{<<"transfer-encoding">> := <<"chunked">>}} = Stream,
    ?assertEqual(iolist_to_binary(?STREAM_PIECES), maps:get(<<"body">>, Stream)),
    #{<<"body_len">> := 0, <<"headers">> := #{<<"content-length">> := <<"0">>}} = Put.

%% RFC 9112 §7.1: encode_chunked=True (an empty piece is skipped by the
%% client, so no early last-chunk); the echo matches, the connection lives on.
python_chunked_upload(Config) ->
    R = python(Config, "chunked_upload"),
    #{<<"status">> := 200, <<"echo_ok">> := true, <<"sent_len">> := 10256,
      <<"headers">> := #{<<"x-request-framing">> := <<"chunked">>},
      <<"after">> := #{<<"status">> := 200, <<"body">> := <<"hello">>}} = R.

%% A chunked reply read whole and in 7-byte reads gives the same bytes.
python_chunked_response(Config) ->
    Expected = iolist_to_binary(?STREAM_PIECES),
    #{<<"whole">> := #{<<"status">> := 200, <<"body">> := Expected,
                       <<"headers">> := #{<<"transfer-encoding">> := <<"chunked">>}},
      <<"pieces">> := Expected, <<"piece_count">> := N} = python(Config, "chunked_response"),
    ?assert(N >= byte_size(Expected) div 7).

%% RFC 9110 §15.5.14, §15.5.15, RFC 6585 §5: the client sees 413, 414 and
%% 431 with Connection: close (and will_close), and can go on with a new
%% connection.
python_limits(Config) ->
    R = python(Config, "limits"),
    [?assertMatch(#{<<"status">> := S, <<"will_close">> := true,
                    <<"headers">> := #{<<"connection">> := <<"close">>}},
                  maps:get(integer_to_binary(S), R))
     || S <- [413, 414, 431]],
    #{<<"413">> := #{<<"body">> := <<"Content Too Large\n">>},
      <<"414">> := #{<<"body">> := <<"URI Too Long\n">>},
      <<"431">> := #{<<"body">> := <<"Request Header Fields Too Large\n">>},
      <<"after">> := #{<<"status">> := 200}} = R.

%% RFC 9112 §9.6: Connection: close from the client or the handler, and
%% HTTP/1.0: the reply says close and the server closes after it; a plain
%% 1.1 exchange leaves the connection open.
python_connection_close(Config) ->
    R = python(Config, "connection_close"),
    #{<<"client_close">> := #{<<"status">> := 200, <<"will_close">> := true,
                              <<"headers">> := #{<<"connection">> := <<"close">>}},
      <<"handler_close">> := #{<<"status">> := 200, <<"will_close">> := true, <<"body">> := <<"bye">>},
      <<"http10_stream">> := #{<<"status">> := 200, <<"will_close">> := true},
      <<"keep">> := #{<<"status">> := 200, <<"will_close">> := false},
      <<"keep_closed_by_server">> := false,
      <<"raw_closed_after">> := Raw} = R,
    ?assertEqual(iolist_to_binary(?STREAM_PIECES), maps:get(<<"body">>, maps:get(<<"http10_stream">>, R))),
    %% The raw exchange read to EOF: exactly one response, then the close.
    [Head, <<"hello">>] = binary:split(Raw, <<"\r\n\r\n">>),
    ?assertMatch({match, _}, re:run(Head, "(?i)\r\nconnection: close")).
