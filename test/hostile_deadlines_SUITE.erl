%% Every phase of a connection has a deadline (issue 13, acceptance 4):
%% clients that are slow or silent on purpose, each case asserting the
%% bound it meets (time, connections). The first request's head runs
%% under request_timeout from the accept; a request body under a minimum
%% rate (falco_body_deadline); the discard of an ignored body under a
%% fixed time; a file download under send_timeout; a response that falco
%% will follow with a close says so; a handler under
%% handler_timeout. Over HTTP/1.1 and HTTP/2 (h2c) where both apply.
%% Timeouts are short here (hundreds of ms) and the bounds generous (the
%% machine running the suite may be busy).
-module(hostile_deadlines_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, init_per_suite/1, end_per_suite/1,
         init_per_testcase/2, end_per_testcase/2]).
-export([silent_connection_closes/1, crlf_counts_toward_request_timeout/1,
         idle_timeout_between_requests/1,
         slow_post_ends_http/1, slow_post_ends_h2c/1, steady_upload_passes/1,
         large_steady_upload_passes/1, large_upload_silence_ends/1,
         announced_body_reserves_little/1, whole_body_reads/1,
         unread_body_close_announced/1, unread_body_discard_time_capped/1,
         send_timeout_covers_files/1, send_timeout_covers_one_large_reply/1,
         handler_timeout_http/1, handler_timeout_h2c/1]).

%% the handler, also of the peer node of announced_body_reserves_little
-export([handler/1]).

-define(C, falco_test_client).
-define(H2, falco_test_h2_client).
-define(HOST, "Host: example.com\r\n").

all() ->
    [{group, deadlines}].

groups() ->
    [{deadlines, [], [silent_connection_closes, crlf_counts_toward_request_timeout,
                      idle_timeout_between_requests,
                      slow_post_ends_http, slow_post_ends_h2c, steady_upload_passes,
                      large_steady_upload_passes, large_upload_silence_ends,
                      announced_body_reserves_little, whole_body_reads,
                      unread_body_close_announced, unread_body_discard_time_capped,
                      send_timeout_covers_files, send_timeout_covers_one_large_reply,
                      handler_timeout_http, handler_timeout_h2c]}].

init_per_suite(Config) ->
    ok = falco_test_listener:start_app(),
    Config.

end_per_suite(_Config) ->
    ok.

init_per_testcase(Case, Config) ->
    ok = falco_test_listener:ensure_stopped(Case),
    Config.

end_per_testcase(Case, _Config) ->
    _ = logger:remove_handler(Case),
    ok = falco_test_listener:ensure_stopped(Case),
    ok.

%% -- helpers ---------------------------------------------------------------

handler(Req) ->
    case falco_req:path(Req) of
        <<"/block">> ->
            receive after 30000 -> ok end,
            {200, [], <<"late">>};
        <<"/stream_block">> ->
            {stream, 200, [], fun(Send) ->
                                      ok = Send(<<"first">>),
                                      receive after 30000 -> ok end
                              end};
        <<"/upload">> ->
            {ok, Body, _} = falco_req:read_body(Req),
            {200, [], integer_to_binary(byte_size(Body))};
        <<"/upload_md5">> ->
            {ok, Body, _} = falco_req:read_body(Req),
            {200, [], binary:encode_hex(crypto:hash(md5, Body))};
        _ ->
            {200, [], <<"hello">>}
    end.

start(Name, Opts) ->
    falco_test_listener:start(Name, fun handler/1, Opts).

now_ms() ->
    erlang:monotonic_time(millisecond).

%% -- request_timeout from the accept ------------------------------------------

%% A connection that never sends a byte is closed, without a reply, at
%% request_timeout (1 s) from the accept, not idle_timeout (60 s): with
%% HTTP/1.1 only and with protocol detection (http1 and h2).
silent_connection_closes(_Config) ->
    [begin
         Name = list_to_atom("silent_connection_closes_" ++ integer_to_list(length(Protocols))),
         {_Sup, Port} = start(Name, #{request_timeout => 1000, idle_timeout => 60000,
                                      protocols => Protocols}),
         Sock = ?C:connect(Port),
         T0 = now_ms(),
         {ok, <<>>} = ?C:recv_until_closed(Sock, 10000),
         Elapsed = now_ms() - T0,
         ct:log("~p: silent connection closed after ~p ms", [Protocols, Elapsed]),
         ?assert(Elapsed >= 900),
         ?assert(Elapsed < 5000),
         ?C:close(Sock),
         ok = falco_test_listener:stop(Name)
     end || Protocols <- [[http1], [http1, h2]]],
    ok.

%% Empty lines before a request (RFC 9112 §2.2 lets a server ignore them)
%% count toward request_timeout: a client sending a CRLF every 200 ms is
%% closed at about 1 s, and one that then starts a head gets 408.
crlf_counts_toward_request_timeout(_Config) ->
    {_Sup, Port} = start(crlf_counts_toward_request_timeout,
                         #{request_timeout => 1000, idle_timeout => 60000}),
    Sock = ?C:connect(Port),
    T0 = now_ms(),
    Trickler = spawn_link(fun() -> crlfs(Sock) end),
    {ok, <<>>} = ?C:recv_until_closed(Sock, 10000),
    Elapsed = now_ms() - T0,
    unlink(Trickler),
    exit(Trickler, kill),
    ct:log("CRLF every 200 ms: closed after ~p ms", [Elapsed]),
    ?assert(Elapsed >= 900),
    ?assert(Elapsed < 5000),
    ?C:close(Sock),
    %% CRLFs, then a head begun late: 408 at the first request's deadline
    Late = ?C:connect(Port),
    ok = ?C:send(Late, <<"\r\n">>),
    timer:sleep(500),
    T1 = now_ms(),
    ok = ?C:send(Late, <<"GET / HTTP/1.1\r\n">>),
    {ok, #{status := 408}} = ?C:recv_response(Late, #{timeout => 10000}),
    ?assert(now_ms() - T1 < 4000),
    ?C:close(Late).

crlfs(Sock) ->
    case gen_tcp:send(Sock, <<"\r\n">>) of
        ok -> timer:sleep(200), crlfs(Sock);
        {error, _} -> ok
    end.

%% Between keep-alive requests idle_timeout, not request_timeout, bounds
%% the wait for the next request: the connection is still usable 2 s after
%% its first request though request_timeout is 500 ms.
idle_timeout_between_requests(_Config) ->
    {_Sup, Port} = start(idle_timeout_between_requests,
                         #{request_timeout => 500, idle_timeout => 60000}),
    Sock = ?C:connect(Port),
    ok = ?C:send(Sock, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, #{status := 200}} = ?C:recv_response(Sock),
    ok = ?C:expect_silence(Sock, 2000),
    ok = ?C:send(Sock, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, #{status := 200}} = ?C:recv_response(Sock),
    ?C:close(Sock).

%% -- request bodies: a minimum rate ---------------------------------------------

%% The rule of these cases: 1 s of grace, then 1000 bytes a second.
-define(RATE, #{grace => 1000, bytes_per_second => 1000}).

%% A slow POST, 1 byte every 300 ms (each within body_timeout, 5 s), ends
%% with 408 once the body is behind min_body_rate (1 s + 1 ms a byte),
%% long before the 100 bytes it announced would have arrived (30 s).
slow_post_ends_http(_Config) ->
    {_Sup, Port} = start(slow_post_ends_http, #{body_timeout => 5000, min_body_rate => ?RATE}),
    Sock = ?C:connect(Port),
    ok = ?C:send(Sock, <<"POST /upload HTTP/1.1\r\n" ?HOST "Content-Length: 100\r\n\r\n">>),
    T0 = now_ms(),
    Trickler = spawn_link(fun() -> trickle(fun(B) -> gen_tcp:send(Sock, B) end, 100) end),
    {ok, R} = ?C:recv_response(Sock, #{timeout => 15000}),
    Elapsed = now_ms() - T0,
    ct:log("HTTP/1.1 slow POST ended after ~p ms: ~p", [Elapsed, maps:get(status, R)]),
    #{status := 408} = R,
    ?assert(Elapsed >= 900),
    ?assert(Elapsed < 5000),
    ok = ?C:expect_closed(Sock, 5000),
    unlink(Trickler),
    exit(Trickler, kill),
    ?C:close(Sock).

slow_post_ends_h2c(_Config) ->
    {_Sup, Port} = start(slow_post_ends_h2c, #{body_timeout => 5000, min_body_rate => ?RATE}),
    C0 = ?H2:connect(Port, #{}),
    #{next_id := Id} = C0,
    C1 = ?H2:headers_frame(C0, Id, [{<<":method">>, <<"POST">>}, {<<":scheme">>, <<"http">>},
                                    {<<":path">>, <<"/upload">>},
                                    {<<":authority">>, <<"localhost">>}], nofin),
    T0 = now_ms(),
    Trickler = spawn_link(fun() ->
                                  trickle(fun(B) ->
                                                  ?H2:send(C1, falco_http2_frame:data(Id, nofin, B))
                                          end, 100)
                          end),
    {ok, R, C2} = ?H2:response(C1#{next_id => Id + 2}, Id, 15000),
    Elapsed = now_ms() - T0,
    ct:log("HTTP/2 slow POST ended after ~p ms: ~p", [Elapsed, maps:get(status, R)]),
    #{status := 408} = R,
    ?assert(Elapsed >= 900),
    ?assert(Elapsed < 5000),
    unlink(Trickler),
    exit(Trickler, kill),
    ?H2:close(C2).

trickle(_Send, 0) ->
    ok;
trickle(Send, N) ->
    case Send(<<"x">>) of
        ok -> timer:sleep(300), trickle(Send, N - 1);
        {error, _} -> ok
    end.

%% An upload at twice the minimum rate (200 bytes every 100 ms, 4 KB in
%% about 2 s, past the grace) is read whole.
steady_upload_passes(_Config) ->
    {_Sup, Port} = start(steady_upload_passes, #{body_timeout => 5000, min_body_rate => ?RATE}),
    Sock = ?C:connect(Port),
    ok = ?C:send(Sock, <<"POST /upload HTTP/1.1\r\n" ?HOST "Content-Length: 4000\r\n\r\n">>),
    [begin ok = ?C:send(Sock, binary:copy(<<"x">>, 200)), timer:sleep(100) end
     || _ <- lists:seq(1, 20)],
    {ok, #{status := 200, body := <<"4000">>}} = ?C:recv_response(Sock, #{timeout => 10000}),
    ?C:close(Sock).

%% -- large bodies: exact-length reads keep the same deadlines ------------------

%% 600 KB, the first 150 KB at once, then 50 KB every 300 ms: 2.7 s in all,
%% each piece well within body_timeout (1 s). read_body(all) reads what is
%% missing with exact-length reads once they are at most four times what
%% came (falco_http1_stream); one that is not done within body_timeout
%% takes what came and goes on, so the upload is read whole, byte for byte.
large_steady_upload_passes(_Config) ->
    {_Sup, Port} = start(large_steady_upload_passes, #{body_timeout => 1000}),
    Body = pattern(600 * 1024),
    Sock = ?C:connect(Port),
    ok = ?C:send(Sock, [<<"POST /upload_md5 HTTP/1.1\r\n" ?HOST "Content-Length: ">>,
                        integer_to_binary(byte_size(Body)), <<"\r\n\r\n">>]),
    <<First:(150 * 1024)/binary, Rest/binary>> = Body,
    ok = ?C:send(Sock, First),
    T0 = now_ms(),
    ok = send_paced(Sock, Rest, 50 * 1024, 300),
    {ok, R} = ?C:recv_response(Sock, #{timeout => 10000}),
    ct:log("600 KB over ~p ms: ~p", [now_ms() - T0, maps:get(status, R)]),
    #{status := 200} = R,
    ?assertEqual(binary:encode_hex(crypto:hash(md5, Body)), maps:get(body, R)),
    ?C:close(Sock).

%% 200 KB of an announced 600 KB, then silence: 408 at body_timeout
%% (800 ms) after the last byte, at most twice that (the exact read that
%% waited gives way to one more wait of its own), never the 600 KB's time.
large_upload_silence_ends(_Config) ->
    {_Sup, Port} = start(large_upload_silence_ends, #{body_timeout => 800}),
    Sock = ?C:connect(Port),
    ok = ?C:send(Sock, [<<"POST /upload HTTP/1.1\r\n" ?HOST "Content-Length: ">>,
                        integer_to_binary(600 * 1024), <<"\r\n\r\n">>]),
    ok = ?C:send(Sock, pattern(200 * 1024)),
    T0 = now_ms(),
    {ok, R} = ?C:recv_response(Sock, #{timeout => 10000}),
    Elapsed = now_ms() - T0,
    ct:log("silent after 200 KB of 600 KB: ~p after ~p ms", [maps:get(status, R), Elapsed]),
    #{status := 408} = R,
    ?assert(Elapsed >= 700),
    ?assert(Elapsed < 3000),
    ?C:close(Sock).

%% 20 clients announce 1 MB bodies to a handler that reads them whole, and
%% send nothing more: what falco reserves for them stays near one wide read
%% buffer (256 KB) each, not the 1 MB announced (an exact-length read
%% allocates its length before any byte comes, so it waits until the client
%% has sent a quarter of what it would reserve).
announced_body_reserves_little(_Config) ->
    {Peer, Port} = falco_test_listener:peer(reserves, fun ?MODULE:handler/1,
                                            #{body_timeout => 5000}),
    try
        Before = peer:call(Peer, falco_test_tree, binary_after_gc, [], 5000),
        Socks = [begin
                     S = ?C:connect(Port),
                     ok = ?C:send(S, <<"POST /upload HTTP/1.1\r\n" ?HOST
                                       "Content-Length: 1048576\r\n\r\n">>),
                     S
                 end || _ <- lists:seq(1, 20)],
        timer:sleep(500),
        Grown = peer:call(Peer, erlang, memory, [binary], 5000) - Before,
        ct:log("20 announced 1 MB bodies, nothing sent: binary memory +~p KB", [Grown div 1024]),
        [?C:close(S) || S <- Socks],
        ?assert(Grown < 20 * 512 * 1024)
    after
        peer:stop(Peer)
    end.

%% read_body(all) on the inet driver puts the body bytes it holds back in
%% front of the socket's before each exact read, so that a body comes out
%% of the driver as one binary and nothing joins pieces (a copy of the
%% whole body). The socket backend cannot put bytes back and joins. On
%% both, bodies that end in the head's read, fit one exact read, need two,
%% or need three are read byte for byte, and the request sent behind each
%% body in the same write is answered. The joins are traced: on inet none
%% has pieces to copy.
whole_body_reads(_Config) ->
    Sizes = [300, 100 * 1024, 1024 * 1024, 1300 * 1024],
    Joins = [{Backend, joined_pieces(Backend, Sizes)} || Backend <- [inet, socket]],
    ct:log("pieces each join copied (bodies of ~p bytes): ~p", [Sizes, Joins]),
    ?assertEqual([], [N || N <- proplists:get_value(inet, Joins), N > 0]),
    ?assertNotEqual([], [N || N <- proplists:get_value(socket, Joins), N > 0]).

joined_pieces(Backend, Sizes) ->
    Name = list_to_atom("whole_body_reads_" ++ atom_to_list(Backend)),
    {_Sup, Port} = start(Name, #{inet_backend => Backend}),
    Self = self(),
    1 = erlang:trace_pattern({falco_http1_stream, join, 2}, true, [local]),
    _ = erlang:trace(all, true, [call, {tracer, Self}]),
    try
        Sock = ?C:connect(Port),
        [begin
             Body = pattern(Size),
             ok = ?C:send(Sock, [<<"POST /upload_md5 HTTP/1.1\r\n" ?HOST "Content-Length: ">>,
                                 integer_to_binary(Size), <<"\r\n\r\n">>, Body,
                                 <<"GET /after HTTP/1.1\r\n" ?HOST "\r\n">>]),
             {ok, R} = ?C:recv_response(Sock, #{timeout => 10000}),
             ?assertEqual(binary:encode_hex(crypto:hash(md5, Body)), maps:get(body, R)),
             {ok, #{status := 200, body := <<"hello">>}} = ?C:recv_response(Sock)
         end || Size <- Sizes],
        ?C:close(Sock)
    after
        _ = erlang:trace(all, false, [call]),
        erlang:trace_pattern({falco_http1_stream, join, 2}, false, [local]),
        ok = falco_test_listener:ensure_stopped(Name)
    end,
    Pieces = traced_joins([]),
    ?assertEqual(length(Sizes), length(Pieces)),
    Pieces.

%% The number of pieces (besides the last) each traced join/2 was given.
traced_joins(Acc) ->
    receive
        {trace, _, call, {falco_http1_stream, join, [Pieces, _Last]}} ->
            traced_joins([length(Pieces) | Acc])
    after 500 ->
        lists:reverse(Acc)
    end.

pattern(N) ->
    binary:part(binary:copy(<<"0123456789abcdefghijklmnopqrstuvwxyz">>, N div 36 + 1), 0, N).

send_paced(_Sock, <<>>, _Piece, _Ms) ->
    ok;
send_paced(Sock, Bin, Piece, Ms) ->
    timer:sleep(Ms),
    case Bin of
        <<P:Piece/binary, Rest/binary>> ->
            ok = ?C:send(Sock, P),
            send_paced(Sock, Rest, Piece, Ms);
        _ ->
            ?C:send(Sock, Bin)
    end.

%% -- an unread body, and the close that follows --------------------------------

%% A handler that ignores a body too large to discard (2 MB announced, the
%% cap is 1 MB), or one the client holds back for 100 Continue: falco
%% closes after the response, and the response says so (RFC 9112 §9.6).
%% A small ignored body is discarded and the connection kept.
unread_body_close_announced(_Config) ->
    {_Sup, Port} = start(unread_body_close_announced, #{}),
    Big = ?C:connect(Port),
    ok = ?C:send(Big, [<<"POST /ignore HTTP/1.1\r\n" ?HOST "Content-Length: 2097152\r\n\r\n">>,
                       binary:copy(<<"x">>, 1000)]),
    {ok, R1} = ?C:recv_response(Big),
    #{status := 200} = R1,
    ?assert(?C:has_token(<<"connection">>, <<"close">>, R1)),
    {ok, _} = ?C:recv_until_closed(Big, 5000),
    ?C:close(Big),
    Held = ?C:connect(Port),
    ok = ?C:send(Held, <<"POST /ignore HTTP/1.1\r\n" ?HOST "Content-Length: 10\r\n"
                         "Expect: 100-continue\r\n\r\n">>),
    {ok, R2} = ?C:recv_response(Held),
    #{status := 200} = R2,
    ?assert(?C:has_token(<<"connection">>, <<"close">>, R2)),
    ok = ?C:expect_closed(Held, 5000),
    ?C:close(Held),
    Small = ?C:connect(Port),
    ok = ?C:send(Small, [<<"POST /ignore HTTP/1.1\r\n" ?HOST "Content-Length: 1000\r\n\r\n">>,
                         binary:copy(<<"x">>, 1000)]),
    {ok, R3} = ?C:recv_response(Small),
    #{status := 200} = R3,
    ?assertNot(?C:has_token(<<"connection">>, <<"close">>, R3)),
    ok = ?C:send(Small, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, #{status := 200}} = ?C:recv_response(Small),
    ?C:close(Small).

%% A chunked body the handler ignored, trickled 10 bytes every 200 ms (each
%% piece well within body_timeout, 5 s; min_body_rate off): the discard
%% gives up after its 2 s and the connection closes, instead of reading
%% up to 1 MB at 50 bytes a second (about 6 hours).
unread_body_discard_time_capped(_Config) ->
    {_Sup, Port} = start(unread_body_discard_time_capped,
                         #{body_timeout => 5000, min_body_rate => none}),
    Sock = ?C:connect(Port),
    ok = ?C:send(Sock, <<"POST /ignore HTTP/1.1\r\n" ?HOST "Transfer-Encoding: chunked\r\n\r\n">>),
    Trickler = spawn_link(fun() -> chunks(Sock) end),
    {ok, #{status := 200}} = ?C:recv_response(Sock),
    T0 = now_ms(),
    {ok, _} = ?C:recv_until_closed(Sock, 15000),
    Elapsed = now_ms() - T0,
    ct:log("ignored chunked trickle: closed ~p ms after the response", [Elapsed]),
    ?assert(Elapsed < 6000),
    unlink(Trickler),
    exit(Trickler, kill),
    ?C:close(Sock).

chunks(Sock) ->
    case gen_tcp:send(Sock, <<"a\r\n0123456789\r\n">>) of
        ok -> timer:sleep(200), chunks(Sock);
        {error, _} -> ok
    end.

%% -- send_timeout and file bodies -------------------------------------------------

%% Five clients ask for a 32 MB file and never read: each connection is
%% closed within send_timeout (1 s) of the send that stalls, and the
%% listener is back to 0 connections (with sendfile they were held for
%% ever).
send_timeout_covers_files(Config) ->
    Path = filename:join(?config(priv_dir, Config), "big.bin"),
    ok = file:write_file(Path, binary:copy(<<"0123456789abcdef">>, 2 * 1024 * 1024)),
    Name = send_timeout_covers_files,
    {_Sup, Port} = start(Name, #{send_timeout => 1000,
                                 handler => fun(_) -> {200, [], {file, Path}} end}),
    Socks = [?C:connect(Port, [{recbuf, 4096}]) || _ <- lists:seq(1, 5)],
    [ok = ?C:send(S, <<"GET /file HTTP/1.1\r\n" ?HOST "\r\n">>) || S <- Socks],
    T0 = now_ms(),
    ok = ?C:wait_until(fun() -> falco:connections(Name) =:= {ok, 0} end, 20000),
    ct:log("5 stalled file downloads closed after ~p ms", [now_ms() - T0]),
    [?C:close(S) || S <- Socks],
    %% a reading client still gets the whole file
    Reader = ?C:connect(Port),
    ok = ?C:send(Reader, <<"GET /file HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, #{status := 200, body := Body}} = ?C:recv_response(Reader, #{timeout => 20000}),
    ?assertEqual(32 * 1024 * 1024, byte_size(Body)),
    ?C:close(Reader).

%% One 32 MB reply, sent with one send, to five clients that never read,
%% on both socket backends: each connection is closed within
%% send_timeout (1 s) of the stall, well before idle_timeout (60 s). The
%% inet driver takes a whole send into its queue and answers `ok' at once;
%% without the wait for its queue (falco_transport:send/3) nothing timed
%% out and the 32 MB stayed queued until idle_timeout.
send_timeout_covers_one_large_reply(_Config) ->
    Body = binary:copy(<<"0123456789abcdef">>, 2 * 1024 * 1024),
    Name = send_timeout_covers_one_large_reply,
    lists:foreach(
      fun(Backend) ->
              ok = falco_test_listener:ensure_stopped(Name),
              {_Sup, Port} = start(Name, #{send_timeout => 1000, inet_backend => Backend,
                                           handler => fun(_) -> {200, [], Body} end}),
              Socks = [?C:connect(Port, [{recbuf, 4096}]) || _ <- lists:seq(1, 5)],
              [ok = ?C:send(S, <<"GET /big HTTP/1.1\r\n" ?HOST "\r\n">>) || S <- Socks],
              T0 = now_ms(),
              ok = ?C:wait_until(fun() -> falco:connections(Name) =:= {ok, 0} end, 10000),
              ct:log("~p: 5 stalled 32 MB replies closed after ~p ms", [Backend, now_ms() - T0]),
              [?C:close(S) || S <- Socks],
              Reader = ?C:connect(Port),
              ok = ?C:send(Reader, <<"GET /big HTTP/1.1\r\n" ?HOST "\r\n">>),
              {ok, #{status := 200, body := Got}} = ?C:recv_response(Reader, #{timeout => 20000}),
              ?assertEqual(Body, Got),
              ?C:close(Reader)
      end, [inet, socket]).

%% -- handler_timeout ---------------------------------------------------------------

%% The log lines about handler_timeout so far.
timeout_logs() ->
    [M || #{level := warning, msg := {"~ts", [M]}} <- falco_test_tree:logged(),
          binary:match(iolist_to_binary(M), <<"handler_timeout">>) =/= nomatch].

%% handler_timeout 500 ms over HTTP/1.1: a handler blocked in receive gets
%% its client a 503 at the deadline and the connection closes; a streamed
%% reply blocked after its first piece is cut (the connection closes
%% without the last chunk); each logged once; every connection and its
%% slot are given back; a handler that returns in time keeps its
%% connection.
handler_timeout_http(_Config) ->
    Name = handler_timeout_http,
    {_Sup, Port} = start(Name, #{handler_timeout => 500}),
    ok = falco_test_tree:capture_log(Name, warning),
    Sock = ?C:connect(Port),
    T0 = now_ms(),
    ok = ?C:send(Sock, <<"GET /block HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, R} = ?C:recv_response(Sock, #{timeout => 10000}),
    Elapsed = now_ms() - T0,
    ct:log("blocked handler: ~p after ~p ms", [maps:get(status, R), Elapsed]),
    #{status := 503} = R,
    ?assert(?C:has_token(<<"connection">>, <<"close">>, R)),
    ?assert(Elapsed >= 400),
    ?assert(Elapsed < 4000),
    ok = ?C:expect_closed(Sock, 5000),
    ?C:close(Sock),
    Streamed = ?C:connect(Port),
    ok = ?C:send(Streamed, <<"GET /stream_block HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, Raw} = ?C:recv_until_closed(Streamed, 10000),
    ct:log("blocked stream: ~p", [Raw]),
    <<"HTTP/1.1 200 OK\r\n", _/binary>> = Raw,
    ?assertNotEqual(nomatch, binary:match(Raw, <<"first">>)),
    ?assertEqual(nomatch, binary:match(Raw, <<"\r\n0\r\n\r\n">>)),
    ?C:close(Streamed),
    Fast = ?C:connect(Port),
    ok = ?C:send(Fast, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, #{status := 200}} = ?C:recv_response(Fast),
    ok = ?C:expect_silence(Fast, 1000),
    ok = ?C:send(Fast, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, #{status := 200}} = ?C:recv_response(Fast),
    ?C:close(Fast),
    ok = ?C:wait_until(fun() -> falco:connections(Name) =:= {ok, 0} end, 5000),
    timer:sleep(100),
    Logged = falco_test_tree:logged(),
    ct:log("logged: ~p", [Logged]),
    %% one warning each, and nothing else: the acceptor does not report
    %% the kill as a connection that died
    ?assertEqual(2, length(Logged)),
    ?assertEqual(2, length([M || #{level := warning, msg := {"~ts", [M]}} <- Logged,
                                 binary:match(iolist_to_binary(M), <<"handler_timeout">>) =/= nomatch])).

%% The same over h2c: the blocked handler's stream gets a 503, the blocked
%% stream is reset, each logged once, and the connection keeps serving
%% with no stream process left.
handler_timeout_h2c(_Config) ->
    Name = handler_timeout_h2c,
    {Sup, Port} = start(Name, #{handler_timeout => 500}),
    ok = falco_test_tree:capture_log(Name, warning),
    C0 = ?H2:connect(Port, #{}),
    Conn = falco_test_tree:one_conn(Sup),
    {Id1, C1} = ?H2:request(C0, <<"GET">>, <<"/block">>),
    T0 = now_ms(),
    {ok, R, C2} = ?H2:response(C1, Id1, 10000),
    Elapsed = now_ms() - T0,
    ct:log("blocked handler over h2c: ~p after ~p ms", [maps:get(status, R), Elapsed]),
    #{status := 503} = R,
    ?assert(Elapsed >= 400),
    ?assert(Elapsed < 4000),
    {Id2, C3} = ?H2:request(C2, <<"GET">>, <<"/stream_block">>),
    {error, {reset, Code}, C4} = ?H2:response(C3, Id2, 10000),
    ct:log("blocked stream over h2c: reset ~p", [Code]),
    {Id3, C5} = ?H2:request(C4, <<"GET">>, <<"/">>),
    {ok, #{status := 200}, C6} = ?H2:response(C5, Id3, 5000),
    ok = ?C:wait_until(fun() ->
                               {links, L} = process_info(Conn, links),
                               [P || P <- L, is_pid(P), P =/= Conn] -- acceptors(Sup) =:= []
                       end, 5000),
    ?H2:close(C6),
    timer:sleep(100),
    ?assertEqual(2, length(timeout_logs())).

acceptors(Sup) -> falco_test_tree:acceptors(Sup).
