%% One WebSocket session over each carrier of falco_ws_carrier (the
%% socket after the HTTP/1.1 101, RFC 6455; the HTTP/2 stream tunnel after
%% the 200 of an extended CONNECT, RFC 8441), driven by raw test clients:
%% echoes, a ping, and the close handshake, with the handler's terminate
%% reason. And what an echo costs between the processes of an HTTP/2
%% connection: the connection and the stream's process are traced while
%% small messages are echoed one at a time, and the messages between them
%% are counted per echo (4 before the carrier interface: the DATA handed
%% over, the next read asked for, the send and its acknowledgement).
-module(ws_carrier_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1, init_per_testcase/2, end_per_testcase/2]).
-export([socket_session/1, tunnel_session/1, tunnel_messages_per_echo/1,
         tunnel_large_messages/1]).

-define(WS, falco_test_ws_client).
-define(H2, falco_test_h2_client).
%% a masked frame with the zero key: its payload goes as it is
-define(KEY, <<0:32>>).
%% echoes counted in tunnel_messages_per_echo
-define(ECHOES, 500).

all() ->
    [socket_session, tunnel_session, tunnel_messages_per_echo, tunnel_large_messages].

init_per_suite(Config) ->
    ok = falco_test_listener:start_app(),
    Config.

end_per_suite(_Config) ->
    ok.

init_per_testcase(Case, Config) ->
    ok = falco_test_listener:ensure_stopped(Case),
    [{listener, Case} | Config].

end_per_testcase(Case, _Config) ->
    falco_test_listener:ensure_stopped(Case).

listen(Config, Protocols) ->
    falco_test_ws_handler:listen(?config(listener, Config), #{},
                                 #{protocols => Protocols}).

%% -- the socket carrier ------------------------------------------------------------

%% RFC 6455 over the socket: echoes of both kinds, a ping answered, and
%% the close handshake started by the client (its code echoed, §5.5.1).
socket_session(Config) ->
    Port = listen(Config, [http1]),
    {Sock, #{status := 101}} = ?WS:connect(Port, <<"/ws">>),
    Pid = falco_test_ws_handler:await_init(),
    [begin
         ok = ?WS:send(Sock, Op, Payload),
         ?assertEqual({Op, Payload}, ?WS:recv(Sock))
     end || {Op, Payload} <- [{text, <<"one">>}, {binary, <<1, 2, 3>>},
                              {text, binary:copy(<<"x">>, 70000)}]],
    ok = ?WS:send(Sock, ping, <<"p">>),
    ?assertEqual({pong, <<"p">>}, ?WS:recv(Sock)),
    ok = ?WS:send(Sock, close, <<1000:16>>),
    ?assertMatch({_, {close, 1000}}, ?WS:recv_until_close(Sock, 5000)),
    ?assertMatch({remote, 1000, _}, falco_test_ws_handler:terminated(Pid)).

%% -- the HTTP/2 tunnel carrier ------------------------------------------------------

%% RFC 8441 over an h2c stream: the same session as socket_session; the
%% server's close frame ends the stream (END_STREAM).
tunnel_session(Config) ->
    Port = listen(Config, [h2]),
    C0 = tunnel(Port),
    Pid = falco_test_ws_handler:await_init(),
    C1 = lists:foldl(fun({Op, Payload}, C) ->
                             {Got, C2} = echo(C, Op, Payload),
                             ?assertEqual({Op, Payload}, Got),
                             C2
                     end, C0, [{text, <<"one">>}, {binary, <<1, 2, 3>>},
                               {text, binary:copy(<<"x">>, 70000)}]),
    {Pong, C2} = echo(C1, ping, <<"p">>),
    ?assertEqual({pong, <<"p">>}, Pong),
    C3 = ?H2:send_data(C2, 1, mask(close, <<1000:16>>), nofin),
    {Close, Fin, _} = ws_recv(C3),
    ?assertEqual({close, <<1000:16>>}, Close),
    ?assertEqual(fin, Fin),
    ?assertMatch({remote, 1000, _}, falco_test_ws_handler:terminated(Pid)).

%% Messages larger than a stream window, both ways, echoed whole: the
%% tunnel's credit and its sends past h2_send_buffer (which wait to be
%% written) keep the stream flowing.
tunnel_large_messages(Config) ->
    Port = listen(Config, [h2]),
    C0 = tunnel(Port),
    Pid = falco_test_ws_handler:await_init(),
    Big = << <<(I rem 251)>> || I <- lists:seq(1, 300000) >>,
    {Got, C1} = echo(C0, binary, Big),
    ?assertEqual({binary, Big}, Got),
    {Got2, _} = echo(C1, text, <<"after">>),
    ?assertEqual({text, <<"after">>}, Got2),
    ?assert(is_process_alive(Pid)).

%% The messages between the connection and the stream's process per
%% echo of a 64-byte text message, one echo at a time.
tunnel_messages_per_echo(Config) ->
    Port = listen(Config, [h2]),
    C0 = tunnel(Port),
    Stream = falco_test_ws_handler:await_init(),
    {links, Links} = process_info(Stream, links),
    [Conn] = [P || P <- Links, is_pid(P)],
    Msg = binary:copy(<<"m">>, 64),
    %% warmed up: the windows grown, the first read asked for
    C1 = echoes(C0, Msg, 20),
    %% the work the two processes do per echo, untraced: reductions
    Reds0 = [reductions([P]) || P <- [Conn, Stream]],
    C2 = echoes(C1, Msg, ?ECHOES),
    [ConnReds, StreamReds] = [(reductions([P]) - R) / ?ECHOES
                              || {P, R} <- lists:zip([Conn, Stream], Reds0)],
    ct:log("reductions per echo: connection ~.1f, stream process ~.1f, both ~.1f",
           [ConnReds, StreamReds, ConnReds + StreamReds]),
    Tracer = spawn_link(fun() -> count(#{}) end),
    Flags = [send, {tracer, Tracer}],
    1 = erlang:trace(Conn, true, Flags),
    1 = erlang:trace(Stream, true, Flags),
    _ = echoes(C2, Msg, ?ECHOES),
    1 = erlang:trace(Conn, false, [send]),
    1 = erlang:trace(Stream, false, [send]),
    Ref = erlang:trace_delivered(all),
    receive {trace_delivered, all, Ref} -> ok after 5000 -> ct:fail(no_trace_delivered) end,
    Tracer ! {counts, self()},
    Counts = receive {counts, Tracer, Cs} -> Cs after 5000 -> ct:fail(no_counts) end,
    Between = maps:get({Conn, Stream}, Counts, 0) + maps:get({Stream, Conn}, Counts, 0),
    PerEcho = Between / ?ECHOES,
    ct:log("~b echoes: connection -> stream ~b, stream -> connection ~b: ~.2f per echo; "
           "all sends ~p", [?ECHOES, maps:get({Conn, Stream}, Counts, 0),
                            maps:get({Stream, Conn}, Counts, 0), PerEcho, Counts]),
    ?assert(PerEcho >= 2.0),
    ?assert(PerEcho < 2.1).

%% -- helpers ---------------------------------------------------------------------------

%% An h2c connection with a WebSocket open on stream 1 at /ws, and our
%% send windows (the connection's, the stream's) as the server set them.
tunnel(Port) ->
    C0 = ?H2:connect(Port, #{}),
    Fields = [{<<":method">>, <<"CONNECT">>}, {<<":protocol">>, <<"websocket">>},
              {<<":scheme">>, <<"http">>}, {<<":path">>, <<"/ws">>},
              {<<":authority">>, <<"localhost">>}, {<<"sec-websocket-version">>, <<"13">>}],
    C1 = ?H2:headers_frame(C0, 1, Fields, nofin),
    Stream = maps:get(initial_window_size, maps:get(server_settings, C1), 65535),
    opened(C1#{win => {65535, Stream}}).

opened(C0) ->
    case frame(C0) of
        {{fields, 1, nofin, Resp}, C} ->
            ?assertEqual(<<"200">>, proplists:get_value(<<":status">>, Resp)),
            C;
        {_, C} ->
            opened(C)
    end.

%% The next frame, our windows counted and the server's DATA given back.
frame(C0) ->
    case ?H2:recv_frame(C0, 10000) of
        {ok, F = {window_update, 0, Inc}, C = #{win := {Conn, Stream}}} ->
            {F, C#{win => {Conn + Inc, Stream}}};
        {ok, F = {window_update, 1, Inc}, C = #{win := {Conn, Stream}}} ->
            {F, C#{win => {Conn, Stream + Inc}}};
        {ok, F = {data, Id, _, _, Size}, C} when Size > 0 ->
            ok = ?H2:send(C, [falco_http2_frame:window_update(0, Size),
                              falco_http2_frame:window_update(Id, Size)]),
            {F, C};
        {ok, F, C} ->
            {F, C};
        Other ->
            ct:fail({no_frame, Other})
    end.

%% Sends one message and reads its answer.
echo(C0, Op, Payload) ->
    C1 = send_window(C0, mask(Op, Payload)),
    {Got, _, C2} = ws_recv(C1),
    {Got, C2}.

echoes(C, _, 0) ->
    C;
echoes(C0, Msg, N) ->
    {{text, Msg}, C1} = echo(C0, text, Msg),
    echoes(C1, Msg, N - 1).

%% DATA frames of at most 16 KB within our send windows, waiting for the
%% server's updates when they are spent.
send_window(C, <<>>) ->
    C;
send_window(C = #{win := {Conn, Stream}}, Bytes) when Conn > 0, Stream > 0 ->
    N = lists:min([byte_size(Bytes), Conn, Stream, 16384]),
    <<Part:N/binary, Rest/binary>> = Bytes,
    C1 = ?H2:send_data(C, 1, Part, nofin),
    send_window(C1#{win => {Conn - N, Stream - N}}, Rest);
send_window(C0, Bytes) ->
    {_, C} = frame(C0),
    send_window(C, Bytes).

mask(Op, Payload) ->
    iolist_to_binary(falco_ws_frame:encode_masked(Op, Payload, fin, false, ?KEY)).

%% The next whole WebSocket frame from the tunnel, and whether its DATA
%% ended the stream.
ws_recv(C) ->
    ws_recv(C, <<>>).

ws_recv(C0, Buf) ->
    case frame(C0) of
        {{data, 1, Fin, Bytes, _}, C} ->
            All = <<Buf/binary, Bytes/binary>>,
            case falco_ws_frame:parse(All, #{max_frame_size => infinity, rsv1 => false,
                                             role => client}) of
                {ok, {frame, Op, fin, false, Payload}, <<>>} -> {{Op, Payload}, Fin, C};
                {more, _} -> ws_recv(C, All)
            end;
        {{rst_stream, 1, Code}, _} ->
            ct:fail({reset, Code});
        {_, C} ->
            ws_recv(C, Buf)
    end.

reductions(Pids) ->
    lists:sum([R || P <- Pids, {reductions, R} <- [process_info(P, reductions)]]).

%% The tracer: sends counted by sender and receiver.
count(Counts) ->
    receive
        {trace, From, send, _Msg, To} ->
            count(maps:update_with({From, To}, fun(N) -> N + 1 end, 1, Counts));
        {counts, Test} ->
            Test ! {counts, self(), Counts};
        _ ->
            count(Counts)
    end.
