%% EUnit: the WebSocket frame codec (falco_ws_frame), the RFC 6455 §5.7
%% examples first, then each rule a single frame can break, and the
%% incremental contract ({more, N} is always enough to progress).
-module(falco_ws_frame_tests).

-include_lib("eunit/include/eunit.hrl").

-define(OPTS, #{max_frame_size => infinity, rsv1 => false}).
-define(KEY, <<16#37, 16#fa, 16#21, 16#3d>>).

parse(Bin) -> falco_ws_frame:parse(Bin, ?OPTS).

%% RFC 6455 §5.7
rfc_examples_test_() ->
    Hello = <<"Hello">>,
    MaskedHello = <<16#81, 16#85, 16#37, 16#fa, 16#21, 16#3d, 16#7f, 16#9f, 16#4d, 16#51, 16#58>>,
    [?_assertEqual({ok, {frame, text, fin, false, Hello}, <<>>}, parse(MaskedHello)),
     ?_assertEqual(<<16#81, 16#05, "Hello">>, iolist_to_binary(falco_ws_frame:encode(text, Hello))),
     ?_assertEqual(MaskedHello,
                   iolist_to_binary(falco_ws_frame:encode_masked(text, Hello, fin, false, ?KEY))),
     ?_assertEqual(<<16#01, 16#03, "Hel">>,
                   iolist_to_binary(falco_ws_frame:encode(text, <<"Hel">>, nofin, false))),
     ?_assertEqual(<<16#80, 16#02, "lo">>,
                   iolist_to_binary(falco_ws_frame:encode(continuation, <<"lo">>, fin, false))),
     ?_assertEqual(<<16#89, 16#05, "Hello">>, iolist_to_binary(falco_ws_frame:encode(ping, Hello))),
     ?_assertEqual({ok, {frame, pong, fin, false, Hello}, <<>>},
                   parse(<<16#8a, 16#85, 16#37, 16#fa, 16#21, 16#3d,
                           16#7f, 16#9f, 16#4d, 16#51, 16#58>>)),
     ?_assertMatch(<<16#82, 16#7E, 16#0100:16, _:256/binary>>,
                   iolist_to_binary(falco_ws_frame:encode(binary, <<0:2048>>))),
     ?_assertMatch(<<16#82, 16#7F, 16#10000:64, _:65536/binary>>,
                   iolist_to_binary(falco_ws_frame:encode(binary, <<0:524288>>)))].

masked(Op, Payload) -> masked(Op, Payload, fin).
masked(Op, Payload, Fin) ->
    iolist_to_binary(falco_ws_frame:encode_masked(Op, Payload, Fin, false, ?KEY)).

every_length_class_round_trips_test_() ->
    [?_assertEqual({ok, {frame, binary, fin, false, P}, <<"next">>},
                   parse(<<(masked(binary, P))/binary, "next">>))
     || N <- [0, 1, 125, 126, 127, 65535, 65536, 70000],
        P <- [binary:part(binary:copy(<<"abcdefg">>, N div 7 + 1), 0, N)]].

%% Every prefix of a frame asks for more, and never for more than is missing.
incremental_test() ->
    Frame = masked(binary, binary:copy(<<"x">>, 300)),
    [begin
         {more, N} = parse(binary:part(Frame, 0, I)),
         ?assert(N >= 1 andalso I + N =< byte_size(Frame))
     end || I <- lists:seq(0, byte_size(Frame) - 1)],
    ?assertMatch({ok, _, <<>>}, parse(Frame)).

errors_test_() ->
    [?_assertEqual({error, unmasked_frame}, parse(<<16#81, 16#05, "Hello">>)),
     ?_assertEqual({error, reserved_bits}, parse(<<16#A1, 16#80, 0:32>>)),
     ?_assertEqual({error, reserved_bits}, parse(<<16#91, 16#80, 0:32>>)),
     %% RSV1 is permessage-deflate's: refused unless negotiated, and never on control frames
     ?_assertEqual({error, reserved_bits}, parse(<<16#C1, 16#80, 0:32>>)),
     ?_assertMatch({ok, {frame, text, fin, true, <<>>}, <<>>},
                   falco_ws_frame:parse(<<16#C1, 16#80, 0:32>>, ?OPTS#{rsv1 => true})),
     ?_assertEqual({error, reserved_bits},
                   falco_ws_frame:parse(<<16#C9, 16#80, 0:32>>, ?OPTS#{rsv1 => true})),
     [?_assertEqual({error, reserved_opcode}, parse(<<(16#80 bor Op), 16#80, 0:32>>))
      || Op <- [3, 4, 5, 6, 7, 11, 12, 13, 14, 15]],
     ?_assertEqual({error, fragmented_control}, parse(<<16#09, 16#80, 0:32>>)),
     ?_assertEqual({error, control_too_long}, parse(<<16#89, 16#FE, 126:16, 0:32>>)),
     ?_assertEqual({error, non_minimal_length}, parse(<<16#82, 16#FE, 125:16>>)),
     ?_assertEqual({error, non_minimal_length}, parse(<<16#82, 16#FF, 65535:64>>)),
     ?_assertEqual({error, bad_length}, parse(<<16#82, 16#FF, 1:1, 0:63>>)),
     %% refused from the header, before the payload is there
     ?_assertEqual({error, frame_too_big},
                   falco_ws_frame:parse(<<16#82, 16#FF, 16#7fffffffffffffff:64>>,
                                        ?OPTS#{max_frame_size => 1024})),
     ?_assertMatch({ok, _, <<>>},
                   falco_ws_frame:parse(masked(binary, <<0:8192>>), ?OPTS#{max_frame_size => 1024})),
     %% a client reads unmasked frames only
     ?_assertEqual({ok, {frame, text, fin, false, <<"Hello">>}, <<>>},
                   falco_ws_frame:parse(<<16#81, 16#05, "Hello">>, ?OPTS#{role => client})),
     ?_assertEqual({error, masked_frame},
                   falco_ws_frame:parse(masked(text, <<"Hello">>), ?OPTS#{role => client})),
     ?_assertEqual({more, 3},
                   falco_ws_frame:parse(<<16#82, 16#7E, 16#0100:16, 0:2024>>, ?OPTS#{role => client})),
     ?_assertEqual(1009, falco_ws_frame:close_code(frame_too_big)),
     ?_assertEqual(1002, falco_ws_frame:close_code(unmasked_frame))].

close_payload_test_() ->
    [?_assertEqual({ok, none}, falco_ws_frame:close_payload(<<>>)),
     ?_assertEqual({ok, 1000, <<"bye">>}, falco_ws_frame:close_payload(<<1000:16, "bye">>)),
     ?_assertEqual({ok, 4999, <<>>}, falco_ws_frame:close_payload(<<4999:16>>)),
     ?_assertEqual({error, bad_close_payload}, falco_ws_frame:close_payload(<<3>>)),
     [?_assertEqual({error, bad_close_code}, falco_ws_frame:close_payload(<<C:16>>))
      || C <- [0, 999, 1004, 1005, 1006, 1012, 1016, 2000, 2999, 5000, 65535]],
     ?_assertEqual({error, invalid_utf8}, falco_ws_frame:close_payload(<<1000:16, 16#ff>>)),
     ?_assertEqual({error, invalid_utf8}, falco_ws_frame:close_payload(<<1000:16, 16#e2, 16#82>>)),
     ?_assertEqual(<<1001:16, "going away">>, falco_ws_frame:close_payload(1001, "going away")),
     ?_assertEqual(125, byte_size(falco_ws_frame:close_payload(1000, binary:copy(<<"x">>, 200))))].

mask_is_an_involution_test_() ->
    [?_assertEqual(D, falco_ws_frame:mask(falco_ws_frame:mask(D, ?KEY), ?KEY))
     || N <- [0, 1, 2, 3, 4, 5, 255, 256, 257, 1000], D <- [crypto:strong_rand_bytes(N)]].

%% mask/3, a part of a payload from its offset with the frame's key
%% stream, gives the bytes of mask/2 on the whole at that offset; a stream
%% shorter than the part is made anew.
mask_from_an_offset_test_() ->
    D = crypto:strong_rand_bytes(1000),
    Whole = falco_ws_frame:mask(D, ?KEY),
    Stream = falco_ws_frame:key_stream(?KEY, 300),
    [?_assertEqual(binary:part(Whole, Off, Len),
                   falco_ws_frame:mask(binary:part(D, Off, Len), Stream, Off))
     || {Off, Len} <- [{0, 0}, {0, 1}, {1, 3}, {2, 300}, {3, 297}, {5, 299}, {7, 301},
                       {100, 900}, {999, 1}]].

%% peek/1: the payload so far of a frame that is not complete, still masked.
peek_test_() ->
    Frame = masked(text, <<"Hello, world">>),
    [?_assertEqual(none, falco_ws_frame:peek(binary:part(Frame, 0, 5))),
     ?_assertEqual({text, fin, false, <<16#37, 16#fa, 16#21, 16#3d>>, binary:part(Frame, 6, 3)},
                   falco_ws_frame:peek(binary:part(Frame, 0, 9))),
     %% control frames are never peeked (they are short and checked whole)
     ?_assertEqual(none, falco_ws_frame:peek(binary:part(masked(ping, <<"abc">>), 0, 7)))].
