%% EUnit tests for the WebSocket carriers' pure parts (falco_ws_carrier):
%% the socket carrier's reading of its messages and of a socket, the HTTP/2
%% tunnel's read credit as the machine keeps it (falco_http2_recv: DATA
%% handed over unasked up to the credit, a read still answered once), and
%% what the tunnel makes of resets and of its parent's exit.
-module(falco_ws_carrier_tests).

-include_lib("eunit/include/eunit.hrl").

-define(M, falco_http2_machine).

%% -- the socket carrier ---------------------------------------------------------------

%% A connected pair on the loopback: the server's side as a carrier.
with_pair(Fun) ->
    {ok, L} = gen_tcp:listen(0, [binary, {active, false}, {ip, {127, 0, 0, 1}}]),
    {ok, Port} = inet:port(L),
    {ok, Client} = gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {active, false}]),
    {ok, Server} = gen_tcp:accept(L, 5000),
    try Fun(Client, Server, falco_ws_socket:new(gen_tcp, Server))
    after [gen_tcp:close(S) || S <- [Client, Server, L]]
    end.

socket_poll_arm_input_test() ->
    with_pair(fun(Client, Server, S0) ->
        %% nothing there: poll finds nothing, without waiting
        ?assertEqual(none, falco_ws_socket:poll(S0)),
        ok = gen_tcp:send(Client, <<"abc">>),
        {data, <<"abc">>, S1} = poll_until(S0, 50),
        {ok, S2} = falco_ws_socket:arm(S1),
        %% armed: a poll would compete with the active message
        ?assertEqual(none, falco_ws_socket:poll(S2)),
        ?assertEqual({ok, S2}, falco_ws_socket:arm(S2)),
        ok = gen_tcp:send(Client, <<"de">>),
        Msg = receive {tcp, Server, _} = M -> M after 5000 -> error(no_data) end,
        {data, <<"de">>, nofin, S3} = falco_ws_socket:input(Msg, S2),
        %% the message consumed the arming: polling reads again
        ?assertEqual(none, falco_ws_socket:poll(S3)),
        ?assertEqual(none, falco_ws_socket:input({tcp, other_socket, <<"x">>}, S3)),
        ?assertEqual(none, falco_ws_socket:input(hello, S3)),
        ?assertEqual({closed, closed}, falco_ws_socket:input({tcp_closed, Server}, S3)),
        ?assertEqual({closed, etimedout},
                     falco_ws_socket:input({tcp_error, Server, etimedout}, S3)),
        ?assertEqual(shutdown, falco_ws_socket:parent_exit(kill, S3))
    end).

poll_until(S, 0) ->
    error({no_data, S});
poll_until(S, N) ->
    case falco_ws_socket:poll(S) of
        none -> timer:sleep(10), poll_until(S, N - 1);
        Other -> Other
    end.

%% The last bytes go before the close; the peer then sees the end.
socket_close_sends_last_test() ->
    with_pair(fun(Client, _Server, S) ->
        ok = falco_ws_socket:close(close, <<"bye">>, S),
        ?assertEqual({ok, <<"bye">>}, gen_tcp:recv(Client, 3, 5000)),
        ?assertEqual({error, closed}, gen_tcp:recv(Client, 0, 5000))
    end).

socket_gather_widens_and_narrows_test() ->
    with_pair(fun(_Client, Server, S) ->
        _ = falco_ws_socket:gather(true, S),
        ?assertEqual({ok, [{buffer, 65536}]}, inet:getopts(Server, [buffer])),
        _ = falco_ws_socket:gather(false, S),
        ?assertEqual({ok, [{buffer, 512}]}, inet:getopts(Server, [buffer]))
    end).

%% -- the tunnel -----------------------------------------------------------------------

tunnel_resets_and_parent_exit_test() ->
    T = undefined,
    ?assertEqual({closed, {peer_reset, cancel}},
                 falco_http2_tunnel:input({h2_reset, {peer_reset, cancel}}, T)),
    ?assertEqual({closed, {stream_error, protocol_error}},
                 falco_http2_tunnel:input({h2_reset, protocol_error}, T)),
    ?assertEqual({closed, send_timeout}, falco_http2_tunnel:input({h2_reset, send_timeout}, T)),
    ?assertEqual({data, <<>>, fin, T}, falco_http2_tunnel:input({h2_trailers, []}, T)),
    ?assertEqual(none, falco_http2_tunnel:input({tcp, x, <<>>}, T)),
    ?assertEqual(none, falco_http2_tunnel:poll(T)),
    ?assertEqual(shutdown, falco_http2_tunnel:parent_exit(shutdown, T)),
    ?assertEqual(shutdown, falco_http2_tunnel:parent_exit({shutdown, drained}, T)),
    ?assertEqual(closed, falco_http2_tunnel:parent_exit(closed, T)),
    ?assertEqual(closed, falco_http2_tunnel:parent_exit(kill, T)).

%% A machine with stream 1 open as a tunnel, its 200 sent.
tunnel_machine() ->
    {M0, _} = ?M:new(#{}),
    {M1, _} = ?M:frame({settings, #{}}, M0),
    {M2, _} = ?M:frame(settings_ack, M1),
    Connect = [{<<":method">>, <<"CONNECT">>}, {<<":protocol">>, <<"websocket">>},
               {<<":scheme">>, <<"http">>}, {<<":path">>, <<"/ws">>},
               {<<":authority">>, <<"example.com">>}],
    {Block, _} = falco_hpack:encode(Connect, falco_hpack:new()),
    {M3, _} = ?M:frame({headers, 1, nofin, fin, undefined, iolist_to_binary(Block)}, M2),
    {M4, _} = ?M:send_headers(1, 200, [], nofin, M3),
    M4.

%% DATA of `Size' bytes on stream 1, then the end of the socket read.
data(Size, M0) ->
    {M1, []} = ?M:frame({data, 1, nofin, binary:copy(<<"d">>, Size), Size}, M0),
    case ?M:deliver_ready(M1) of
        none -> {M1, []};
        {M2, Acts} -> {M2, handed(Acts)}
    end.

%% The sizes handed to the stream's process.
handed(Acts) ->
    [iolist_size(D) || {data, 1, D, nofin} <- Acts].

%% A grant stands: DATA is handed over as it comes, without another ask,
%% until the credit is spent; what comes past it waits for the next grant.
tunnel_credit_stands_test() ->
    {M1, Acts1} = ?M:read(1, {grant, 100}, tunnel_machine()),
    ?assertEqual([], handed(Acts1)),
    {M2, [30]} = data(30, M1),
    {M3, [50]} = data(50, M2),
    %% 20 left of the credit: the rest of 40 is held
    {M4, [20]} = data(40, M3),
    {M5, []} = data(10, M4),
    %% a grant hands over what is held at once, and stands again
    {M6, Acts6} = ?M:read(1, {grant, 100}, M5),
    ?assertEqual([30], handed(Acts6)),
    {_, [70]} = data(70, M6).

%% A read is answered once: the next DATA is held until the next read.
tunnel_read_answered_once_test() ->
    {M1, []} = ?M:read(1, 100, tunnel_machine()),
    {M2, [30]} = data(30, M1),
    {M3, []} = data(30, M2),
    {_, Acts} = ?M:read(1, 100, M3),
    ?assertEqual([30], handed(Acts)).

%% The stream window grows to the credit, no further: a session that does
%% not take its messages stops the client after about one credit.
tunnel_window_follows_credit_test() ->
    {_, Acts} = ?M:read(1, {grant, 65536}, tunnel_machine()),
    Updates = [{Id, Inc} || {window_update, Id, Inc} <- frames(Acts)],
    %% 65,535 initially: one byte more for the stream (and the connection's
    %% configured window needs nothing)
    ?assertEqual([{1, 1}], [U || U = {1, _} <- Updates]).

frames(Acts) ->
    parse(iolist_to_binary([D || {send, D} <- Acts])).

parse(<<>>) -> [];
parse(Bin) ->
    {ok, F, Rest} = falco_http2_frame:parse(Bin, 16777215),
    [F | parse(Rest)].
