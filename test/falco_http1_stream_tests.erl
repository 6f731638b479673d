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
%% Each has a tracker of its own, as each connection does.
body(Framing, Buf, Continue) -> body(Framing, Buf, Continue, conf()).

body(Framing, Buf, Continue, Conf) ->
    ?S:with_body(Framing, Buf, Continue, ?S:tracker(), new({1, 1}, true, Conf)).

%% Reads, checks the result, and returns the new state.
read(Want, S0, Expected) ->
    {Tag, Data, S} = ?S:read_body(Want, S0),
    ?assertEqual(Expected, {Tag, Data}),
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

%% RFC 9110 §6.5.1, §7.6.1: no connection-specific field in a trailer
%% section (falco_grammar's rule, as over HTTP/2); `te: trailers' is not one.
chunked_trailers_connection_specific_test() ->
    setup([]),
    {ok, S} = ?S:send_headers(200, [], new({1, 1}, true)),
    {ok, S} = ?S:send_end([{<<"connection">>, <<"close">>}, {<<"x-t">>, [<<"v">>]},
                           {<<"transfer-encoding">>, <<"gzip">>}, {<<"upgrade">>, <<"h2c">>},
                           {<<"keep-alive">>, <<"1">>}, {<<"proxy-connection">>, <<"x">>},
                           {<<"te">>, <<"gzip">>}, {<<"te">>, <<"trailers">>}], S),
    ?assertEqual(<<"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
                   "0\r\nx-t: v\r\nte: trailers\r\n\r\n">>, sent()).

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

%% The head and the first 256 KB piece go out, then the peer is gone.
file_send_fails_midway_test() ->
    with_file(binary:copy(<<"x">>, 400000), fun(Fd) ->
        setup([]),
        put(fake_send_error, {after_sends, 2}),
        ?assertEqual({error, closed}, ?S:send_file(200, [], Fd, 0, 400000, new({1, 1}, true))),
        <<"HTTP/1.1 200 OK\r\n\r\n", Body/binary>> = sent(),
        ?assertEqual(262144, byte_size(Body))
    end).

%% -- responses held back for pipelined requests ---------------------------------------------

-define(NEXT, <<"GET /next HTTP/1.1\r\nHost: x\r\n\r\n">>).

%% A request without a body followed by more bytes: its full response is
%% held, and goes out first, in the same write, with the next response.
held_while_more_follows_test() ->
    setup([]),
    {ok, S1} = ?S:send_response(200, [{<<"content-length">>, <<"1">>}], <<"a">>,
                                body(none, ?NEXT, false)),
    ?assertEqual(<<>>, sent()),
    Held = ?S:held(S1),
    ?assertNotEqual(none, Held),
    S2 = ?S:hold_over(Held, body(none, <<>>, false)),
    {ok, S3} = ?S:send_response(200, [{<<"content-length">>, <<"1">>}], <<"b">>, S2),
    ?assertEqual([<<"HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\na"
                   "HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\nb">>], get(fake_out)),
    ?assertEqual(none, ?S:held(S3)).

%% Nothing follows, the response closes, or it is too big to hold: sent at once.
not_held_test() ->
    setup([]),
    {ok, S1} = ?S:send_response(200, [], <<"a">>, body(none, <<>>, false)),
    ?assertEqual(<<"HTTP/1.1 200 OK\r\n\r\na">>, sent()),
    ?assertEqual(none, ?S:held(S1)),
    {ok, S2} = ?S:send_response(200, [{<<"connection">>, <<"close">>}], <<"a">>,
                                body(none, ?NEXT, false)),
    ?assertEqual(<<"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\na">>, sent()),
    ?assertEqual(none, ?S:held(S2)),
    Big = binary:copy(<<"x">>, 20000),
    {ok, S3} = ?S:send_response(200, [], Big, body(none, ?NEXT, false)),
    ?assertEqual(<<"HTTP/1.1 200 OK\r\n\r\n", Big/binary>>, sent()),
    ?assertEqual(none, ?S:held(S3)).

%% Held responses add up to at most 16 KB: the one that would pass the
%% bound goes out with all held before it.
held_bound_test() ->
    setup([]),
    Body = binary:copy(<<"y">>, 6000),
    {ok, S1} = ?S:send_response(200, [], Body, body(none, ?NEXT, false)),
    {ok, S2} = ?S:send_response(200, [], Body,
                                ?S:hold_over(?S:held(S1), body(none, ?NEXT, false))),
    ?assertEqual(<<>>, sent()),
    {ok, S3} = ?S:send_response(200, [], Body,
                                ?S:hold_over(?S:held(S2), body(none, ?NEXT, false))),
    ?assertEqual(binary:copy(<<"HTTP/1.1 200 OK\r\n\r\n", Body/binary>>, 3), sent()),
    ?assertEqual([], get(fake_out)),
    ?assertEqual(none, ?S:held(S3)).

%% A streamed reply, a file reply or a 101 sends what is held before its head.
held_goes_before_other_replies_test() ->
    Held = fun() ->
                   {ok, S} = ?S:send_response(200, [], <<"first">>, body(none, ?NEXT, false)),
                   ?S:hold_over(?S:held(S), body(none, <<>>, false))
           end,
    First = <<"HTTP/1.1 200 OK\r\n\r\nfirst">>,
    setup([]),
    {ok, S1} = ?S:send_headers(200, [], Held()),
    ok = ?S:send_data(<<"x">>, S1),
    {ok, _} = ?S:send_end([], S1),
    ?assertEqual(<<First/binary, "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
                   "1\r\nx\r\n0\r\n\r\n">>, sent()),
    with_file(<<"file body">>, fun(Fd) ->
        {ok, S2} = ?S:send_file(200, [{<<"content-length">>, <<"9">>}], Fd, 0, 9, Held()),
        ?assertEqual(<<First/binary, "HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n"
                       "file body">>, sent()),
        ?assertEqual(none, ?S:held(S2))
    end),
    {ok, _} = ?S:switch_protocols(101, [], #{}, Held()),
    ?assertEqual(<<First/binary, "HTTP/1.1 101 Switching Protocols\r\n\r\n">>, sent()),
    %% and the connection's own sends, before a read or a close
    ?assertEqual(ok, ?S:send_held(?MODULE, fake, ?S:held(element(2, ?S:send_response(
                                                   200, [], <<"first">>,
                                                   body(none, ?NEXT, false)))))),
    ?assertEqual(First, sent()),
    ?assertEqual(ok, ?S:send_held(?MODULE, fake, none)),
    ?assertEqual(<<>>, sent()).

%% -- request bodies -----------------------------------------------------------------------------

%% No body at all: reads give nothing, finishing keeps the buffer (the next
%% pipelined request).
no_body_test() ->
    setup([]),
    S0 = body(none, <<"GET /next">>, false),
    S1 = read(all, S0, {ok, <<>>}),
    S2 = read(10, S1, {ok, <<>>}),
    ?assertEqual([], ?S:trailers(S2)),
    ?assertEqual({ok, <<"GET /next">>}, ?S:body_finish(S0)).

%% Content-Length: the missing part is read in one exact recv.
length_all_test() ->
    setup([<<"lo wor">>, <<"ldGET">>]),
    S = body({length, 11}, <<"hel">>, false),
    _ = read(all, S, {ok, <<"hello world">>}),
    %% Not a byte more was taken from the socket; the connection learns
    %% where the body ended from the read's report, not from S.
    ?assertEqual({ok, <<>>}, ?S:body_finish(S)),
    ?assertEqual([<<"GET">>], get(fake_in)),
    ?assertEqual(<<>>, sent()).

%% RFC 9110 §10.1.1: 100 Continue goes out on the first read that has to
%% wait for the body, and only once.
continue_test() ->
    setup([<<"abc">>, <<"def">>]),
    S0 = body({length, 6}, <<>>, true),
    ?assertEqual(<<>>, sent()),
    S1 = read(2, S0, {more, <<"ab">>}),
    ?assertEqual(<<"HTTP/1.1 100 Continue\r\n\r\n">>, sent()),
    S2 = read(2, S1, {more, <<"c">>}),
    S3 = read(5, S2, {ok, <<"def">>}),
    _ = read(5, S3, {ok, <<>>}),
    ?assertEqual(<<>>, sent()),
    ?assertEqual({ok, <<>>}, ?S:body_finish(S0)).

%% A body already buffered whole needs no 100 Continue.
continue_not_needed_test() ->
    setup([]),
    S = body({length, 3}, <<"abc">>, true),
    _ = read(all, S, {ok, <<"abc">>}),
    ?assertEqual(<<>>, sent()).

%% A handler that never read a 100-continue body: the client may still be
%% waiting for our 100, so the connection closes.
continue_unread_closes_test() ->
    setup([]),
    S = body({length, 3}, <<>>, true),
    ?assertEqual({close, false}, ?S:body_finish(S)),
    ?assertEqual(<<>>, sent()).

%% Unread bodies are read and dropped up to 1 MB, beyond that we close.
discard_test() ->
    setup([<<"67">>, <<"89GET /">>]),
    S = body({length, 10}, <<"012345">>, false),
    ?assertEqual({ok, <<"GET /">>}, ?S:body_finish(S)),
    setup([]),
    S2 = body({length, 2000000}, <<>>, false),
    ?assertEqual({close, false}, ?S:body_finish(S2)),
    %% The client stops sending: we close rather than wait forever.
    setup([<<"ab">>], closed),
    S3 = body({length, 10}, <<>>, false),
    ?assertEqual({close, false}, ?S:body_finish(S3)),
    %% A partly read body: the rest is dropped.
    setup([<<"cdefgh">>, <<"ij">>]),
    S4 = body({length, 10}, <<"ab">>, false, conf(#{max_body => 5})),
    _ = read(1, S4, {more, <<"a">>}),
    ?assertEqual({ok, <<>>}, ?S:body_finish(S4)).

%% The 1 MB of a discard is counted from where the handler stopped, once:
%% it does not slide forward with each piece dropped.
discard_cap_fixed_test() ->
    %% ten chunks of 200,000 bytes, one per packet
    Chunk = <<"30D40\r\n", (binary:copy(<<"x">>, 200000))/binary, "\r\n">>,
    setup(lists:duplicate(10, Chunk)),
    S = body(chunked, <<>>, false, conf(#{max_body => 10000000})),
    ?assertEqual({close, false}, ?S:body_finish(S)),
    %% given up after about 1 MB: the rest was never read
    ?assert(length(get(fake_in)) >= 4).

%% A connection that closes after the response does not drain an unread
%% body first (RFC 9112 §9.6); it says whether the request was read to its
%% end with nothing after it.
closing_does_not_drain_test() ->
    setup([<<"rest of the body">>]),
    S = body({length, 20}, <<"abcd">>, false),
    {ok, Closing} = ?S:send_response(200, [{<<"connection">>, <<"close">>}], <<>>, S),
    ?assertEqual({close, false}, ?S:body_finish(Closing)),
    ?assertEqual([<<"rest of the body">>], get(fake_in)),
    setup([]),
    S2 = body({length, 4}, <<"abcd">>, false),
    _ = read(all, S2, {ok, <<"abcd">>}),
    {ok, Closing2} = ?S:send_response(200, [{<<"connection">>, <<"close">>}], <<>>, S2),
    ?assertEqual({close, true}, ?S:body_finish(Closing2)),
    %% the same with a chunked body received whole, in two chunks
    setup([]),
    S3 = body(chunked, <<"2\r\nab\r\n2\r\ncd\r\n0\r\n\r\n">>, false),
    _ = read(all, S3, {ok, <<"abcd">>}),
    {ok, Closing3} = ?S:send_response(200, [{<<"connection">>, <<"close">>}], <<>>, S3),
    ?assertEqual({close, true}, ?S:body_finish(Closing3)).

%% Chunked (RFC 9112 §7.1): pieces as they come, trailers at the end, and
%% the bytes after the body kept.
chunked_test() ->
    setup([<<"3\r\ndef\r\n">>, <<"0\r\nX-T: 1\r\n\r\nNEXT">>]),
    S0 = body(chunked, <<"3\r\nabc\r\n">>, false),
    S1 = read(2, S0, {more, <<"ab">>}),
    S2 = read(2, S1, {more, <<"c">>}),
    S3 = read(10, S2, {more, <<"def">>}),
    S4 = read(10, S3, {ok, <<>>}),
    ?assertEqual([{<<"x-t">>, <<"1">>}], ?S:trailers(S4)),
    ?assertEqual({ok, <<"NEXT">>}, ?S:body_finish(S0)).

chunked_all_test() ->
    setup([<<"3\r\nabc">>, <<"\r\n0\r">>, <<"\n\r\n">>]),
    S = body(chunked, <<>>, true),
    _ = read(all, S, {ok, <<"abc">>}),
    ?assertEqual(<<"HTTP/1.1 100 Continue\r\n\r\n">>, sent()),
    ?assertEqual({ok, <<>>}, ?S:body_finish(S)).

%% A read from a state that a later read replaced raises, whether the later
%% read touched the socket or not; so does one from a previous request.
stale_state_test() ->
    setup([<<"def">>]),
    S0 = body({length, 6}, <<"abc">>, false),
    S1 = read(2, S0, {more, <<"ab">>}),
    ?assertError({stale_request, _}, ?S:read_body(2, S0)),
    S2 = read(all, S1, {ok, <<"cdef">>}),
    ?assertError({stale_request, _}, ?S:read_body(all, S1)),
    _ = read(all, S2, {ok, <<>>}),
    ?assertEqual({ok, <<>>}, ?S:body_finish(S0)).

%% A report the connection cannot find (here: taken out of the mailbox by
%% someone else) closes the connection rather than guess the framing.
lost_report_closes_test() ->
    setup([<<"defGET /">>]),
    S0 = body({length, 6}, <<"abc">>, false),
    _ = read(all, S0, {ok, <<"abcdef">>}),
    receive {falco_http1_body, _, _, _} -> ok after 0 -> error(no_report) end,
    ?assertEqual({close, false}, ?S:body_finish(S0)).

%% RFC 9110 §15.5.14: max_body is enforced on what is read, whatever the
%% framing, and on what a chunk size announces before its data arrives.
max_body_test() ->
    setup([]),
    S1 = body({length, 2000}, <<>>, false),
    ?assertThrow({falco_error, content_too_large}, ?S:read_body(all, S1)),
    setup([<<"xxxxxxxxxx">>]),
    S2 = body({length, 1010}, binary:copy(<<"x">>, 995), false),
    S2a = read(2000, S2, {more, binary:copy(<<"x">>, 995)}),
    ?assertThrow({falco_error, content_too_large}, ?S:read_body(2000, S2a)),
    setup([<<"3e8\r\n">>]),
    S3 = body(chunked, <<"a\r\n0123456789\r\n">>, false),
    S3a = read(100, S3, {more, <<"0123456789">>}),
    %% 10 read + 1000 announced > 1000: refused before the data comes.
    ?assertThrow({falco_error, content_too_large}, ?S:read_body(100, S3a)),
    setup([]),
    S4 = body(chunked, <<"FFFFFFFFFF\r\n">>, false),
    ?assertThrow({falco_error, _}, ?S:read_body(all, S4)),
    %% Exactly max_body is fine.
    setup([]),
    S5 = body(chunked, <<"3E8\r\n", (binary:copy(<<"y">>, 1000))/binary, "\r\n0\r\n\r\n">>, false),
    _ = read(all, S5, {ok, binary:copy(<<"y">>, 1000)}).

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
    S4a = read(10, S4, {more, <<"ab">>}),
    ?assertThrow({falco_error, {bad_request, body_incomplete}}, ?S:read_body(10, S4a)).
