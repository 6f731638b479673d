%% EUnit tests for the HTTP/1.1 stream (falco_http1_stream) over a fake
%% transport: this module exports send/2 and recv/3, so each test controls
%% exactly which bytes arrive and sees exactly which bytes leave. Covers
%% response framing and persistence (RFC 9112 §6, §7.1, §9.3, §9.6), the
%% file path used when sendfile is unavailable (TLS), and request-body
%% reading with 100-continue (RFC 9110 §10.1.1), limits and timeouts.
-module(falco_http1_stream_tests).
-include_lib("eunit/include/eunit.hrl").

%% the fake transport
-export([send/2, recv/3, setopts/2]).

-define(S, falco_http1_stream).

%% -- the fake transport -----------------------------------------------------------

%% Incoming bytes are a queue of packets; at its end recv reports `EndWith'
%% (timeout or closed). Outgoing bytes are collected.
setup(Packets) -> setup(Packets, timeout).

setup(Packets, EndWith) ->
    put(fake_in, Packets),
    put(fake_end, EndWith),
    put(fake_out, []),
    erase(fake_send_error),
    ok.

sent() ->
    Out = iolist_to_binary(lists:reverse(get(fake_out))),
    put(fake_out, []),
    Out.

send(fake, Data) ->
    case get(fake_send_error) of
        undefined ->
            put(fake_out, [iolist_to_binary(Data) | get(fake_out)]),
            ok;
        {after_sends, 0} ->
            {error, closed};
        {after_sends, N} ->
            put(fake_send_error, {after_sends, N - 1}),
            put(fake_out, [iolist_to_binary(Data) | get(fake_out)]),
            ok;
        Error ->
            Error
    end.

%% The stream widens the socket buffer for large bodies.
setopts(fake, _Opts) ->
    ok.

recv(fake, 0, _Timeout) ->
    case get(fake_in) of
        [P | More] -> put(fake_in, More), {ok, P};
        [] -> {error, get(fake_end)}
    end;
recv(fake, Len, _Timeout) ->
    All = iolist_to_binary(get(fake_in)),
    case All of
        <<Data:Len/binary, Rest/binary>> ->
            put(fake_in, [Rest || Rest =/= <<>>]),
            {ok, Data};
        _ ->
            put(fake_in, []),
            {error, get(fake_end)}
    end.

%% -- helpers ------------------------------------------------------------------------

conf() -> conf(#{}).

conf(Extra) ->
    maps:merge(#{max_body => 1000, body_timeout => 100, limits => falco_http1:default_limits()},
               Extra).

new(Version, KeepAlive) -> new(Version, KeepAlive, conf()).

new(Version, KeepAlive, Conf) -> ?S:new(fake, ?MODULE, Version, KeepAlive, Conf).

%% A stream with a body set up: Framing, bytes already buffered, 100-continue.
body(Framing, Buf, Continue) -> body(Framing, Buf, Continue, conf()).

body(Framing, Buf, Continue, Conf) ->
    S = new({1, 1}, true, Conf),
    ok = ?S:body_init(Framing, Buf, Continue, S),
    S.

head_fields(Bin) ->
    [Head | _] = binary:split(Bin, <<"\r\n\r\n">>),
    [_ | Lines] = binary:split(Head, <<"\r\n">>, [global]),
    [list_to_tuple(binary:split(L, <<": ">>)) || L <- Lines].

%% -- responses and persistence (RFC 9112 §9.3) ------------------------------------------------

%% 1.1 keep-alive: the fields as given, the connection stays.
keep_alive_11_test() ->
    setup([]),
    {ok, S} = ?S:send_response(200, [{<<"content-length">>, <<"2">>}], <<"hi">>, new({1, 1}, true)),
    ?assertEqual(<<"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nhi">>, sent()),
    ?assertNot(?S:closing(S)).

%% A persistent 1.0 connection is told so (RFC 9112 §9.3, Appendix C.2.2).
keep_alive_10_test() ->
    setup([]),
    {ok, S} = ?S:send_response(200, [], <<>>, new({1, 0}, true)),
    ?assertEqual([{<<"connection">>, <<"keep-alive">>}], head_fields(sent())),
    ?assertNot(?S:closing(S)).

%% RFC 9112 §9.6: a server that will close says "close".
closing_test() ->
    setup([]),
    {ok, S1} = ?S:send_response(200, [], <<>>, new({1, 1}, false)),
    ?assertEqual([{<<"connection">>, <<"close">>}], head_fields(sent())),
    ?assert(?S:closing(S1)),
    %% The handler asked for close: it is kept as written, and we close.
    {ok, S2} = ?S:send_response(200, [{<<"connection">>, <<"Close">>}], <<>>, new({1, 1}, true)),
    ?assertEqual([{<<"connection">>, <<"Close">>}], head_fields(sent())),
    ?assert(?S:closing(S2)),
    {ok, S3} = ?S:send_response(200, [{<<"connection">>, <<"close">>}], <<>>, new({1, 1}, false)),
    ?assertEqual([{<<"connection">>, <<"close">>}], head_fields(sent())),
    ?assert(?S:closing(S3)),
    %% A handler's keep-alive cannot keep a connection we close.
    {ok, S4} = ?S:send_response(200, [{<<"connection">>, <<"keep-alive">>}, {<<"x">>, <<"1">>}],
                                <<>>, new({1, 1}, false)),
    ?assertEqual([{<<"connection">>, <<"close">>}, {<<"x">>, <<"1">>}], head_fields(sent())),
    ?assert(?S:closing(S4)),
    %% A handler's keep-alive on a persistent connection changes nothing.
    {ok, S5} = ?S:send_response(200, [{<<"connection">>, <<"keep-alive, x-y">>}], <<>>, new({1, 1}, true)),
    ?assertNot(?S:closing(S5)),
    _ = sent(),
    {ok, S6} = ?S:send_response(200, [{<<"connection">>, [<<"x-y,">>, <<"\tclose">>]}], <<>>,
                                new({1, 1}, true)),
    ?assert(?S:closing(S6)).

send_error_test() ->
    setup([]),
    put(fake_send_error, {error, closed}),
    S = new({1, 1}, true),
    ?assertEqual({error, closed}, ?S:send_response(200, [], <<"x">>, S)),
    ?assertEqual({error, closed}, ?S:send_headers(200, [], S)),
    ?assertEqual({error, closed}, ?S:send_data(<<"x">>, S)).

%% -- streamed responses (RFC 9112 §7.1, §6.3) ------------------------------------------------

chunked_stream_test() ->
    setup([]),
    {ok, S} = ?S:send_headers(200, [{<<"x">>, <<"1">>}], new({1, 1}, true)),
    ok = ?S:send_data(<<"hello">>, S),
    ok = ?S:send_data(<<>>, S),
    ok = ?S:send_data([<<"a">>, "b"], S),
    {ok, S} = ?S:send_end([{<<"x-t">>, <<"v">>}], S),
    ?assertEqual(<<"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nx: 1\r\n\r\n"
                   "5\r\nhello\r\n2\r\nab\r\n0\r\nx-t: v\r\n\r\n">>, sent()),
    ?assertNot(?S:closing(S)).

%% With a Content-Length the body goes out as is, and trailers cannot.
length_stream_test() ->
    setup([]),
    {ok, S} = ?S:send_headers(200, [{<<"content-length">>, <<"3">>}], new({1, 1}, true)),
    ok = ?S:send_data(<<"abc">>, S),
    {ok, _} = ?S:send_end([{<<"x-t">>, <<"v">>}], S),
    ?assertEqual(<<"HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nabc">>, sent()).

%% A 1.0 peer cannot read chunked: the body ends when the connection does.
http10_stream_test() ->
    setup([]),
    {ok, S} = ?S:send_headers(200, [], new({1, 0}, true)),
    ok = ?S:send_data(<<"abc">>, S),
    {ok, S1} = ?S:send_end([], S),
    ?assertEqual(<<"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nabc">>, sent()),
    ?assert(?S:closing(S1)).

%% -- files without sendfile (TLS) ---------------------------------------------------------------

with_file(Bin, Fun) ->
    %% Scratch files live in the build tree (removed by `make clean').
    Path = filename:join([code:lib_dir(falco), "tmp", "falco_http1_stream_tests_" ++ os:getpid()]),
    ok = filelib:ensure_dir(Path),
    ok = file:write_file(Path, Bin),
    {ok, Fd} = file:open(Path, [read, raw, binary]),
    try Fun(Fd) after file:close(Fd), file:delete(Path) end.

file_test() ->
    Big = crypto:strong_rand_bytes(200000),
    with_file(Big, fun(Fd) ->
        setup([]),
        S = new({1, 1}, true),
        {ok, _} = ?S:send_file(200, [{<<"content-length">>, <<"150000">>}], Fd, 1000, 150000, S),
        <<"HTTP/1.1 200 OK\r\ncontent-length: 150000\r\n\r\n", Body/binary>> = sent(),
        ?assertEqual(binary:part(Big, 1000, 150000), Body),
        %% Several sends of at most 64 KB: the file is never read whole.
        {ok, _} = ?S:send_file(200, [], Fd, 0, 0, S),
        ?assertEqual(<<"HTTP/1.1 200 OK\r\n\r\n">>, sent()),
        %% The file shrank under us: the response cannot be completed.
        ?assertEqual({error, file_truncated}, ?S:send_file(200, [], Fd, 199990, 100, S)),
        put(fake_send_error, {error, closed}),
        ?assertEqual({error, closed}, ?S:send_file(200, [], Fd, 0, 10, S))
    end).

%% The head and the first 64 KB go out, then the peer is gone.
file_send_fails_midway_test() ->
    with_file(binary:copy(<<"x">>, 100000), fun(Fd) ->
        setup([]),
        put(fake_send_error, {after_sends, 2}),
        ?assertEqual({error, closed}, ?S:send_file(200, [], Fd, 0, 100000, new({1, 1}, true))),
        <<"HTTP/1.1 200 OK\r\n\r\n", Body/binary>> = sent(),
        ?assertEqual(65536, byte_size(Body))
    end).

%% -- request bodies -----------------------------------------------------------------------------

%% No body at all: reads give nothing, finishing keeps the buffer (the next
%% pipelined request).
no_body_test() ->
    setup([]),
    S = body(none, <<"GET /next">>, false),
    ?assertEqual({ok, <<>>}, ?S:read_body(all, S)),
    ?assertEqual({ok, <<>>}, ?S:read_body(10, S)),
    ?assertEqual([], ?S:trailers(S)),
    ?assertEqual({ok, <<"GET /next">>}, ?S:body_finish(S)),
    %% Once finished, there are no trailers to read.
    ?assertEqual([], ?S:trailers(S)).

%% Content-Length: the missing part is read in one exact recv.
length_all_test() ->
    setup([<<"lo wor">>, <<"ldGET">>]),
    S = body({length, 11}, <<"hel">>, false),
    ?assertEqual({ok, <<"hello world">>}, ?S:read_body(all, S)),
    %% Not a byte more was taken from the socket.
    ?assertEqual({ok, <<>>}, ?S:body_finish(S)),
    ?assertEqual([<<"GET">>], get(fake_in)),
    ?assertEqual(<<>>, sent()).

%% RFC 9110 §10.1.1: 100 Continue goes out on the first read that has to
%% wait for the body, and only once.
continue_test() ->
    setup([<<"abc">>, <<"def">>]),
    S = body({length, 6}, <<>>, true),
    ?assertEqual(<<>>, sent()),
    ?assertEqual({more, <<"ab">>}, ?S:read_body(2, S)),
    ?assertEqual(<<"HTTP/1.1 100 Continue\r\n\r\n">>, sent()),
    ?assertEqual({more, <<"c">>}, ?S:read_body(2, S)),
    ?assertEqual({ok, <<"def">>}, ?S:read_body(5, S)),
    ?assertEqual({ok, <<>>}, ?S:read_body(5, S)),
    ?assertEqual(<<>>, sent()),
    ?assertEqual({ok, <<>>}, ?S:body_finish(S)).

%% A body already buffered whole needs no 100 Continue.
continue_not_needed_test() ->
    setup([]),
    S = body({length, 3}, <<"abc">>, true),
    ?assertEqual({ok, <<"abc">>}, ?S:read_body(all, S)),
    ?assertEqual(<<>>, sent()).

%% A handler that never read a 100-continue body: the client may still be
%% waiting for our 100, so the connection closes.
continue_unread_closes_test() ->
    setup([]),
    S = body({length, 3}, <<>>, true),
    ?assertEqual(close, ?S:body_finish(S)),
    ?assertEqual(<<>>, sent()).

%% Unread bodies are read and dropped up to 1 MB, beyond that we close.
discard_test() ->
    setup([<<"67">>, <<"89GET /">>]),
    S = body({length, 10}, <<"012345">>, false),
    ?assertEqual({ok, <<"GET /">>}, ?S:body_finish(S)),
    setup([]),
    S2 = body({length, 2000000}, <<>>, false),
    ?assertEqual(close, ?S:body_finish(S2)),
    %% The client stops sending: we close rather than wait forever.
    setup([<<"ab">>], closed),
    S3 = body({length, 10}, <<>>, false),
    ?assertEqual(close, ?S:body_finish(S3)),
    %% A partly read body: the rest is dropped.
    setup([<<"cdefgh">>, <<"ij">>]),
    S4 = body({length, 10}, <<"ab">>, false, conf(#{max_body => 5})),
    ?assertEqual({more, <<"a">>}, ?S:read_body(1, S4)),
    ?assertEqual({ok, <<>>}, ?S:body_finish(S4)).

%% Chunked (RFC 9112 §7.1): pieces as they come, trailers at the end, and
%% the bytes after the body kept.
chunked_test() ->
    setup([<<"3\r\ndef\r\n">>, <<"0\r\nX-T: 1\r\n\r\nNEXT">>]),
    S = body(chunked, <<"3\r\nabc\r\n">>, false),
    ?assertEqual({more, <<"ab">>}, ?S:read_body(2, S)),
    ?assertEqual({more, <<"c">>}, ?S:read_body(2, S)),
    ?assertEqual({more, <<"def">>}, ?S:read_body(10, S)),
    ?assertEqual({ok, <<>>}, ?S:read_body(10, S)),
    ?assertEqual([{<<"x-t">>, <<"1">>}], ?S:trailers(S)),
    ?assertEqual({ok, <<"NEXT">>}, ?S:body_finish(S)).

chunked_all_test() ->
    setup([<<"3\r\nabc">>, <<"\r\n0\r">>, <<"\n\r\n">>]),
    S = body(chunked, <<>>, true),
    ?assertEqual({ok, <<"abc">>}, ?S:read_body(all, S)),
    ?assertEqual(<<"HTTP/1.1 100 Continue\r\n\r\n">>, sent()),
    ?assertEqual({ok, <<>>}, ?S:body_finish(S)).

%% RFC 9110 §15.5.14: max_body is enforced on what is read, whatever the
%% framing, and on what a chunk size announces before its data arrives.
max_body_test() ->
    setup([]),
    S1 = body({length, 2000}, <<>>, false),
    ?assertThrow({falco_error, content_too_large}, ?S:read_body(all, S1)),
    setup([<<"xxxxxxxxxx">>]),
    S2 = body({length, 1010}, binary:copy(<<"x">>, 995), false),
    ?assertEqual({more, binary:copy(<<"x">>, 995)}, ?S:read_body(2000, S2)),
    ?assertThrow({falco_error, content_too_large}, ?S:read_body(2000, S2)),
    setup([<<"3e8\r\n">>]),
    S3 = body(chunked, <<"a\r\n0123456789\r\n">>, false),
    ?assertEqual({more, <<"0123456789">>}, ?S:read_body(100, S3)),
    %% 10 read + 1000 announced > 1000: refused before the data comes.
    ?assertThrow({falco_error, content_too_large}, ?S:read_body(100, S3)),
    setup([]),
    S4 = body(chunked, <<"FFFFFFFFFF\r\n">>, false),
    ?assertThrow({falco_error, content_too_large}, ?S:read_body(all, S4)),
    %% Exactly max_body is fine.
    setup([]),
    S5 = body(chunked, <<"3E8\r\n", (binary:copy(<<"y">>, 1000))/binary, "\r\n0\r\n\r\n">>, false),
    ?assertEqual({ok, binary:copy(<<"y">>, 1000)}, ?S:read_body(all, S5)).

%% A slow client is body_timeout (408); one that goes away mid-body is a
%% 400 (the request is incomplete); a bad chunk is its own 400.
body_errors_test() ->
    setup([<<"ab">>], timeout),
    S1 = body({length, 5}, <<>>, false),
    ?assertThrow({falco_error, body_timeout}, ?S:read_body(all, S1)),
    setup([<<"ab">>], closed),
    S2 = body({length, 100000}, <<>>, false, conf(#{max_body => 200000})),
    ?assertThrow({falco_error, {bad_request, body_incomplete}}, ?S:read_body(all, S2)),
    setup([]),
    S3 = body(chunked, <<"zz\r\n">>, false),
    ?assertThrow({falco_error, {bad_request, invalid_chunk_size}}, ?S:read_body(all, S3)),
    setup([], closed),
    S4 = body(chunked, <<"5\r\nab">>, false),
    ?assertEqual({more, <<"ab">>}, ?S:read_body(10, S4)),
    ?assertThrow({falco_error, {bad_request, body_incomplete}}, ?S:read_body(10, S4)).
