%% RFC 7692 (permessage-deflate) over a real listener: the negotiation of
%% each parameter (§5, §7.1), compressed and fragmented messages (§6,
%% §6.1), context takeover (§7.1.1), the examples of §7.2.3, the RSV1 rules
%% and the decompression limit. Each case cites its section. The client
%% side compresses and inflates with OTP's zlib directly, independently of
%% falco_ws_deflate; frames go through falco_test_ws_client.
%%
%% Every case runs over each carrier (groups ws, wss, h2c, h2, as in
%% rfc6455_SUITE): the offer and its answer are fields of the HTTP/1.1
%% GET and its 101, or of the extended CONNECT and its 200 over HTTP/2
%% (RFC 8441 §5 keeps Sec-WebSocket-Extensions); none of this suite's
%% cases depends on the HTTP/1.1 handshake's own fields.
-module(rfc7692_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, init_per_suite/1, end_per_suite/1,
         init_per_group/2, end_per_group/2, init_per_testcase/2, end_per_testcase/2]).
-export([offer_accepted/1, server_no_context_takeover/1, client_no_context_takeover/1,
         server_max_window_bits/1, client_max_window_bits/1, declined_offers/1,
         first_acceptable_offer/1, rsv1_without_negotiation_1002/1,
         compressed_echo/1, fragmented_compressed_message/1, context_takeover/1,
         uncompressed_message/1, rsv1_control_frame_1002/1, empty_messages/1,
         rfc_examples/1, bfinal_example/1, zip_bomb_1009/1]).

-define(C, falco_test_client).
-define(WS, falco_test_ws_client).
-define(H, falco_test_ws_handler).
-define(KEY, <<1, 2, 3, 4>>).
-define(TAIL, <<0, 0, 255, 255>>).

all() ->
    [{group, Carrier} || Carrier <- ?WS:carriers()].

groups() ->
    [{Carrier, [], [{group, negotiation}, {group, messages}, {group, hostile}]}
     || Carrier <- ?WS:carriers()] ++
    [{negotiation, [parallel], [offer_accepted, server_no_context_takeover,
                                client_no_context_takeover, server_max_window_bits,
                                client_max_window_bits, declined_offers, first_acceptable_offer,
                                rsv1_without_negotiation_1002]},
     {messages, [parallel], [compressed_echo, fragmented_compressed_message, context_takeover,
                             uncompressed_message, rsv1_control_frame_1002, empty_messages,
                             rfc_examples, bfinal_example]},
     {hostile, [], [zip_bomb_1009]}].

init_per_suite(Config) ->
    ok = falco_test_listener:start_tls_app(),
    Config.

init_per_group(Group, Config) ->
    case lists:member(Group, ?WS:carriers()) of
        true -> ?WS:carrier_config(Group, Config);
        false -> Config
    end.

end_per_group(_Group, _Config) ->
    ok.

end_per_suite(_Config) ->
    ok.

init_per_testcase(Case, Config) ->
    ok = falco_test_listener:ensure_stopped(Case),
    [{listener, Case} | Config].

end_per_testcase(Case, _Config) ->
    ok = ?WS:close_all(),
    falco_test_listener:ensure_stopped(Case).

%% -- helpers ---------------------------------------------------------------

%% A listener whose /ws upgrades with `WsOpts' (falco_test_ws_handler),
%% serving the group's carrier: `{Carrier, Port}', what connect/2 takes.
start(Config, WsOpts) ->
    listen(Config, ?config(listener, Config), WsOpts).

%% Another listener of the case, named `Name'.
listen(Config, Name, WsOpts) ->
    Carrier = ?config(carrier, Config),
    {Carrier, ?H:listen(Name, WsOpts, ?WS:listener_opts(Carrier))}.

%% A handshake offering `Offer' (a Sec-WebSocket-Extensions value, or
%% none): the socket, the response's Sec-WebSocket-Extensions (undefined
%% when the extension was declined) and the session.
connect(At, Offer) ->
    Extra = case Offer of
                none -> [];
                _ -> [<<"Sec-WebSocket-Extensions: ">>, Offer, <<"\r\n">>]
            end,
    {Sock, Resp} = ws_connect(At, Extra),
    {Sock, ?C:header(<<"sec-websocket-extensions">>, Resp), ?H:await_init()}.

%% A handshake with `Extra' fields (HTTP/1.1 lines), accepted.
ws_connect({Carrier, Port}, Extra) ->
    Status = ?WS:open_status(Carrier),
    {Sock, Resp = #{status := Status}} = ?WS:connect(Carrier, Port, <<"/ws">>, Extra),
    {Sock, Resp}.

%% Just the answer to `Offer'.
answer(At, Offer) ->
    {Sock, Answer, _} = connect(At, Offer),
    ?WS:close(Sock),
    Answer.

%% The client's zlib streams: it deflates with a window of `CBits' and
%% inflates the server's messages with `SBits'.
client_zlib(CBits, SBits) ->
    D = zlib:open(),
    ok = zlib:deflateInit(D, default, deflated, -CBits, 8, default),
    I = zlib:open(),
    ok = zlib:inflateInit(I, -SBits),
    {D, I}.

client_zlib() ->
    client_zlib(15, 15).

%% §7.2.1: the sync flush's trailing 00 00 FF FF removed.
deflate(Z, Data) ->
    Out = iolist_to_binary(zlib:deflate(Z, Data, sync)),
    binary:part(Out, 0, byte_size(Out) - 4).

%% §7.2.2: the tail appended again.
inflate(Z, Data) ->
    iolist_to_binary(zlib:inflate(Z, [Data, ?TAIL])).

%% A masked frame with RSV1 set (the first frame of a compressed message).
send_compressed(Sock, Op, Payload, Fin) ->
    ok = ?WS:send_raw(Sock, falco_ws_frame:encode_masked(Op, Payload, Fin, true, ?KEY)).

%% The payload of the next frame, which must be a compressed text message.
recv_compressed(Sock) ->
    {text, Payload, rsv1} = ?WS:recv(Sock),
    Payload.

%% A compressed text message there and its echo back, inflated.
echo(Sock, {D, I}, Msg) ->
    send_compressed(Sock, text, deflate(D, Msg), fin),
    inflate(I, recv_compressed(Sock)).

%% -- §7.1 negotiation ----------------------------------------------------------

%% §5, §7: a bare offer is accepted as it is; messages are compressed both
%% ways (§6).
offer_accepted(Config) ->
    At = start(Config, #{compress => true}),
    {Sock, Answer, _} = connect(At, <<"permessage-deflate">>),
    ?assertEqual(<<"permessage-deflate">>, Answer),
    Msg = binary:copy(<<"abc ">>, 500),
    ?assertEqual(Msg, echo(Sock, client_zlib(), Msg)).

%% §7.1.1.1: the client asks the server not to take its context over, or
%% the server's configuration says so; the answer includes it either way.
server_no_context_takeover(Config) ->
    At = start(Config, #{compress => true}),
    ?assertEqual(<<"permessage-deflate; server_no_context_takeover">>,
                 answer(At, <<"permessage-deflate; server_no_context_takeover">>)),
    At2 = listen(Config, server_no_context_takeover_2,
                 #{compress => #{server_no_context_takeover => true}}),
    try
        ?assertEqual(<<"permessage-deflate; server_no_context_takeover">>,
                     answer(At2, <<"permessage-deflate">>))
    after
        falco_test_listener:ensure_stopped(server_no_context_takeover_2)
    end.

%% §7.1.1.2: client_no_context_takeover is answered; a client that resets
%% its context after every message is understood.
client_no_context_takeover(Config) ->
    At = start(Config, #{compress => true}),
    {Sock, Answer, _} = connect(At, <<"permessage-deflate; client_no_context_takeover">>),
    ?assertEqual(<<"permessage-deflate; client_no_context_takeover">>, Answer),
    {D, I} = client_zlib(),
    Msg = binary:copy(<<"same again ">>, 100),
    [begin
         ?assertEqual(Msg, echo(Sock, {D, I}, Msg)),
         ok = zlib:deflateReset(D)
     end || _ <- [1, 2, 3]].

%% §7.1.2.1: server_max_window_bits 9..15 is answered with the same value
%% (a server may not leave it out of the answer once offered) and the
%% server keeps to it: a message that repeats a block of 2^B random bytes
%% (too far back for a window of B bits) inflates in a client whose window
%% is B bits. An offer of 8 is declined (zlib cannot deflate with a 256-byte
%% window, §7.1.2.1 lets a server decline): no extension.
server_max_window_bits(Config) ->
    At = start(Config, #{compress => true}),
    [begin
         B = integer_to_binary(Bits),
         {Sock, Answer, _} = connect(At, <<"permessage-deflate; server_max_window_bits=", B/binary>>),
         ?assertEqual(<<"permessage-deflate; server_max_window_bits=", B/binary>>, Answer),
         Block = crypto:strong_rand_bytes(1 bsl Bits),
         Msg = base64:encode(<<Block/binary, Block/binary>>),
         {D, I} = client_zlib(15, Bits),
         ?assertEqual(Msg, echo(Sock, {D, I}, Msg)),
         ?WS:close(Sock)
     end || Bits <- lists:seq(9, 15)],
    ?assertEqual(undefined, answer(At, <<"permessage-deflate; server_max_window_bits=8">>)).

%% §7.1.2.2: a bare client_max_window_bits lets the server choose (its
%% configured largest, 15 by default); a value is answered with it or the
%% server's smaller limit; without the parameter the answer must not
%% carry it, whatever the server's configuration. 8 is accepted (the
%% server inflates with a larger window). A client deflating with the
%% agreed window is understood.
client_max_window_bits(Config) ->
    At = start(Config, #{compress => true}),
    ?assertEqual(<<"permessage-deflate; client_max_window_bits=15">>,
                 answer(At, <<"permessage-deflate; client_max_window_bits">>)),
    [begin
         B = integer_to_binary(Bits),
         {Sock, Answer, _} = connect(At, <<"permessage-deflate; client_max_window_bits=", B/binary>>),
         ?assertEqual(<<"permessage-deflate; client_max_window_bits=", B/binary>>, Answer),
         Msg = base64:encode(crypto:strong_rand_bytes(3000)),
         [?assertEqual(Msg, echo(Sock, client_zlib(max(Bits, 9), 15), Msg)) || Bits >= 9],
         ?WS:close(Sock)
     end || Bits <- lists:seq(8, 15)],
    At2 = listen(Config, client_max_window_bits_2, #{compress => #{client_max_window_bits => 10}}),
    try
        ?assertEqual(<<"permessage-deflate; client_max_window_bits=10">>,
                     answer(At2, <<"permessage-deflate; client_max_window_bits">>)),
        ?assertEqual(<<"permessage-deflate; client_max_window_bits=10">>,
                     answer(At2, <<"permessage-deflate; client_max_window_bits=12">>)),
        ?assertEqual(<<"permessage-deflate; client_max_window_bits=9">>,
                     answer(At2, <<"permessage-deflate; client_max_window_bits=9">>)),
        ?assertEqual(<<"permessage-deflate">>, answer(At2, <<"permessage-deflate">>))
    after
        falco_test_listener:ensure_stopped(client_max_window_bits_2)
    end.

%% §7.1: an offer with a parameter this extension does not define, one
%% given twice, a value out of range or a value where none is allowed is
%% declined: no extension, and the session is uncompressed.
declined_offers(Config) ->
    At = start(Config, #{compress => true}),
    [?assertEqual(undefined, answer(At, Offer))
     || Offer <- [<<"permessage-deflate; foo">>,
                  <<"permessage-deflate; foo=1">>,
                  <<"permessage-deflate; server_no_context_takeover; server_no_context_takeover">>,
                  <<"permessage-deflate; client_max_window_bits=10; client_max_window_bits=11">>,
                  <<"permessage-deflate; server_max_window_bits">>,
                  <<"permessage-deflate; server_max_window_bits=16">>,
                  <<"permessage-deflate; client_max_window_bits=7">>,
                  <<"permessage-deflate; server_no_context_takeover=1">>,
                  <<"x-webkit-deflate-frame">>]],
    {Sock, undefined, _} = connect(At, <<"permessage-deflate; foo">>),
    ok = ?WS:send(Sock, text, <<"plain">>),
    ?assertEqual({text, <<"plain">>}, ?WS:recv(Sock)).

%% §5.1, §7.1: of several offers (in one field or several), the first
%% acceptable one is answered.
first_acceptable_offer(Config) ->
    At = start(Config, #{compress => true}),
    ?assertEqual(<<"permessage-deflate; server_max_window_bits=10">>,
                 answer(At, <<"x-foo, permessage-deflate; foo, permessage-deflate; "
                                "server_max_window_bits=10, permessage-deflate">>)),
    ?assertEqual(<<"permessage-deflate">>,
                 answer(At, <<"permessage-deflate; server_max_window_bits=8, permessage-deflate">>)),
    {Sock, Resp} =
        ws_connect(At, <<"Sec-WebSocket-Extensions: permessage-deflate; bar\r\n"
                                       "Sec-WebSocket-Extensions: permessage-deflate; "
                                       "client_no_context_takeover\r\n">>),
    ?assertEqual(<<"permessage-deflate; client_no_context_takeover">>,
                 ?C:header(<<"sec-websocket-extensions">>, Resp)),
    ?WS:close(Sock).

%% §6 and RFC 6455 §5.2: RSV1 means nothing without the extension. A route
%% with compression off answers no offer, and a frame with RSV1 is then
%% 1002; the same when the route compresses but the client offered nothing.
rsv1_without_negotiation_1002(Config) ->
    At = start(Config, #{compress => false}),
    {Sock, Answer, Pid} = connect(At, <<"permessage-deflate">>),
    ?assertEqual(undefined, Answer),
    {D, _} = client_zlib(),
    send_compressed(Sock, text, deflate(D, <<"compressed">>), fin),
    ?assertEqual({[], {close, 1002}}, ?WS:recv_until_close(Sock, 5000)),
    ?assertEqual({protocol_error, 1002, reserved_bits}, ?H:terminated(Pid)),
    At2 = listen(Config, rsv1_without_negotiation_2, #{compress => true}),
    try
        {Sock2, undefined, Pid2} = connect(At2, none),
        send_compressed(Sock2, text, deflate(D, <<"compressed">>), fin),
        ?assertEqual({[], {close, 1002}}, ?WS:recv_until_close(Sock2, 5000)),
        ?assertEqual({protocol_error, 1002, reserved_bits}, ?H:terminated(Pid2))
    after
        falco_test_listener:ensure_stopped(rsv1_without_negotiation_2)
    end.

%% -- §6 compressed messages --------------------------------------------------------

%% §6, §6.2: a compressed message is inflated; the echo comes back
%% compressed (RSV1), smaller than the text.
compressed_echo(Config) ->
    At = start(Config, #{compress => true}),
    {Sock, Answer, _} = connect(At, <<"permessage-deflate; client_max_window_bits">>),
    ?assertEqual(<<"permessage-deflate; client_max_window_bits=15">>, Answer),
    {D, I} = client_zlib(),
    Msg = binary:copy(<<"compress me ">>, 1000),
    send_compressed(Sock, text, deflate(D, Msg), fin),
    Compressed = recv_compressed(Sock),
    ?assert(byte_size(Compressed) < byte_size(Msg) div 10),
    ?assertEqual(Msg, inflate(I, Compressed)).

%% §6.1: a compressed message in fragments has RSV1 on its first frame
%% only, and the fragment boundaries fall anywhere in the compressed data;
%% RSV1 on a continuation frame is 1002.
fragmented_compressed_message(Config) ->
    At = start(Config, #{compress => true}),
    {Sock, _, _} = connect(At, <<"permessage-deflate">>),
    {D, I} = client_zlib(),
    Msg = iolist_to_binary([[integer_to_binary(N), <<" fragments, ">>] || N <- lists:seq(1, 2000)]),
    <<A:10/binary, B:5/binary, Rest/binary>> = deflate(D, Msg),
    send_compressed(Sock, text, A, nofin),
    ok = ?WS:send(Sock, ping, <<"between">>),
    ok = ?WS:send(Sock, continuation, B, nofin),
    ok = ?WS:send(Sock, continuation, Rest, fin),
    ?assertEqual({pong, <<"between">>}, ?WS:recv(Sock)),
    ?assertEqual(Msg, inflate(I, recv_compressed(Sock))),
    {Sock2, _, Pid2} = connect(At, <<"permessage-deflate">>),
    {D2, _} = client_zlib(),
    <<A2:10/binary, B2/binary>> = deflate(D2, Msg),
    send_compressed(Sock2, text, A2, nofin),
    send_compressed(Sock2, continuation, B2, fin),
    ?assertEqual({[], {close, 1002}}, ?WS:recv_until_close(Sock2, 5000)),
    ?assertEqual({protocol_error, 1002, rsv1_on_continuation}, ?H:terminated(Pid2)).

%% §7.1.1: with context takeover (the default) the server's second copy of
%% a message refers back to the first: other bytes, fewer of them; the
%% client's second copy does the same and is understood. With
%% server_no_context_takeover both copies compress to the same bytes.
context_takeover(Config) ->
    At = start(Config, #{compress => true}),
    Msg = base64:encode(crypto:strong_rand_bytes(2000)),
    {Sock, <<"permessage-deflate">>, _} = connect(At, <<"permessage-deflate">>),
    {D, I} = client_zlib(),
    First = deflate(D, Msg),
    Second = deflate(D, Msg),
    ?assert(byte_size(Second) < byte_size(First) div 10),
    send_compressed(Sock, text, First, fin),
    Out1 = recv_compressed(Sock),
    send_compressed(Sock, text, Second, fin),
    Out2 = recv_compressed(Sock),
    ct:pal("takeover: ~p then ~p bytes", [byte_size(Out1), byte_size(Out2)]),
    ?assert(byte_size(Out2) < byte_size(Out1) div 10),
    ?assertEqual(Msg, inflate(I, Out1)),
    ?assertEqual(Msg, inflate(I, Out2)),
    {Sock2, <<"permessage-deflate; server_no_context_takeover">>, _} =
        connect(At, <<"permessage-deflate; server_no_context_takeover">>),
    {D2, I2} = client_zlib(),
    send_compressed(Sock2, text, deflate(D2, Msg), fin),
    Out3 = recv_compressed(Sock2),
    send_compressed(Sock2, text, deflate(D2, Msg), fin),
    Out4 = recv_compressed(Sock2),
    ct:pal("no takeover: ~p then ~p bytes", [byte_size(Out3), byte_size(Out4)]),
    ?assertEqual(Out3, Out4),
    ?assertEqual(Msg, inflate(I2, Out3)),
    ok = zlib:inflateReset(I2),
    ?assertEqual(Msg, inflate(I2, Out4)).

%% §6: compression is per message: an uncompressed message (RSV1 clear) on
%% a deflate connection is delivered as it is, between compressed ones.
uncompressed_message(Config) ->
    At = start(Config, #{compress => true}),
    {Sock, _, _} = connect(At, <<"permessage-deflate">>),
    {D, I} = client_zlib(),
    ?assertEqual(<<"one">>, echo(Sock, {D, I}, <<"one">>)),
    ok = ?WS:send(Sock, text, <<"two, plain">>),
    ?assertEqual(<<"two, plain">>, inflate(I, recv_compressed(Sock))),
    ?assertEqual(<<"three">>, echo(Sock, {D, I}, <<"three">>)).

%% §6 (RSV1 is for data messages) and RFC 6455 §5.2, §5.5: a ping with
%% RSV1 is 1002.
rsv1_control_frame_1002(Config) ->
    At = start(Config, #{compress => true}),
    {Sock, _, Pid} = connect(At, <<"permessage-deflate">>),
    ok = ?WS:send_raw(Sock, falco_ws_frame:encode_masked(ping, <<"x">>, fin, true, ?KEY)),
    ?assertEqual({[], {close, 1002}}, ?WS:recv_until_close(Sock, 5000)),
    ?assertEqual({protocol_error, 1002, reserved_bits}, ?H:terminated(Pid)).

%% §7.2.3.6: empty messages, compressed as 0x00, both ways, after other
%% messages (the server's answer to the second one used to crash the
%% session: zlib writes nothing for it).
empty_messages(Config) ->
    At = start(Config, #{compress => true}),
    {Sock, _, _} = connect(At, <<"permessage-deflate">>),
    {D, I} = client_zlib(),
    ?assertEqual(<<"before">>, echo(Sock, {D, I}, <<"before">>)),
    [begin
         send_compressed(Sock, text, <<0>>, fin),
         ?assertEqual(<<>>, inflate(I, recv_compressed(Sock)))
     end || _ <- [1, 2]],
    ok = ?WS:send(Sock, binary, <<>>),
    {binary, Empty, rsv1} = ?WS:recv(Sock),
    ?assertEqual(<<>>, inflate(I, Empty)),
    ?assertEqual(<<"after">>, echo(Sock, {D, I}, <<"after">>)).

%% §7.2.3.1 to §7.2.3.5, the payloads of the RFC's examples (sent masked,
%% as a client), on one connection: each is "Hello".
rfc_examples(Config) ->
    At = start(Config, #{compress => true}),
    {Sock, _, _} = connect(At, <<"permessage-deflate">>),
    {_, I} = client_zlib(),
    Hello = fun() -> ?assertEqual(<<"Hello">>, inflate(I, recv_compressed(Sock))) end,
    %% §7.2.3.1, one frame, then fragmented: 41 03 f2 48 cd, 80 04 c9 c9 07 00
    send_compressed(Sock, text, <<16#f2, 16#48, 16#cd, 16#c9, 16#c9, 16#07, 16#00>>, fin),
    Hello(),
    send_compressed(Sock, text, <<16#f2, 16#48, 16#cd>>, nofin),
    ok = ?WS:send(Sock, continuation, <<16#c9, 16#c9, 16#07, 16#00>>, fin),
    Hello(),
    %% §7.2.3.2, the sliding window shared with the message before
    send_compressed(Sock, text, <<16#f2, 16#00, 16#11, 16#00, 16#00>>, fin),
    Hello(),
    %% §7.2.3.3, a DEFLATE block with no compression
    send_compressed(Sock, text, <<16#00, 16#05, 16#00, 16#fa, 16#ff, "Hello", 16#00>>, fin),
    Hello(),
    %% §7.2.3.5, two DEFLATE blocks in one message
    send_compressed(Sock, text, <<16#f2, 16#48, 16#05, 16#00, 16#00, 16#00, 16#ff, 16#ff,
                                  16#ca, 16#c9, 16#c9, 16#07, 16#00>>, fin),
    Hello().

%% §7.2.3.4: a DEFLATE block with BFINAL set (a client whose zlib cannot
%% sync-flush) inflates to "Hello", and so do the messages after it, each
%% a new stream (they used to inflate to nothing).
bfinal_example(Config) ->
    At = start(Config, #{compress => true}),
    {Sock, _, _} = connect(At, <<"permessage-deflate">>),
    {_, I} = client_zlib(),
    [begin
         send_compressed(Sock, text, <<16#f3, 16#48, 16#cd, 16#c9, 16#c9, 16#07, 16#00, 16#00>>, fin),
         ?assertEqual(<<"Hello">>, inflate(I, recv_compressed(Sock)))
     end || _ <- [1, 2]],
    send_compressed(Sock, text, <<16#f2, 16#48, 16#cd, 16#c9, 16#c9, 16#07, 16#00>>, fin),
    ?assertEqual(<<"Hello">>, inflate(I, recv_compressed(Sock))).

%% -- limits ------------------------------------------------------------------

%% RFC 7692 §8 and RFC 6455 §10.4: 100 MB of zeros in one 100 KB frame is
%% refused at the message limit (1 MB here) with 1009; the node's memory
%% (sampled every millisecond while the frame is read) grows by a few
%% megabytes at most, not by the 100 MB the frame inflates to.
zip_bomb_1009(Config) ->
    At = start(Config, #{compress => true, max_message_size => 1000000}),
    {Sock, _, Pid} = connect(At, <<"permessage-deflate">>),
    Bomb = bomb(100),
    ct:pal("bomb: ~p bytes inflating to 100 MB", [byte_size(Bomb)]),
    true = erlang:garbage_collect(),
    Base = erlang:memory(total),
    Sampler = spawn_link(fun() -> sample(Base, 0) end),
    send_compressed(Sock, binary, Bomb, fin),
    ?assertEqual({[], {close, 1009}}, ?WS:recv_until_close(Sock, 10000)),
    ?assertEqual({protocol_error, 1009, message_too_big}, ?H:terminated(Pid)),
    Sampler ! {stop, self()},
    Peak = receive {peak, P} -> P after 5000 -> error(no_peak) end,
    ct:pal("node memory while the bomb was read: at most ~.1f MB over the ~.1f MB before",
           [Peak / 1048576, Base / 1048576]),
    ?assert(Peak < 20000000).

%% `MB' megabytes of zeros, compressed a megabyte at a time (the test
%% never holds them).
bomb(MB) ->
    Z = zlib:open(),
    ok = zlib:deflateInit(Z, default, deflated, -15, 8, default),
    Chunk = <<0:8388608>>,
    Out = iolist_to_binary([[zlib:deflate(Z, Chunk, none) || _ <- lists:seq(1, MB)],
                            zlib:deflate(Z, <<>>, sync)]),
    ok = zlib:close(Z),
    binary:part(Out, 0, byte_size(Out) - 4).

sample(Base, Peak) ->
    receive
        {stop, From} -> From ! {peak, Peak}
    after 1 ->
        sample(Base, max(Peak, erlang:memory(total) - Base))
    end.
