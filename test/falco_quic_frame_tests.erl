%% EUnit tests for falco_quic_frame: RFC 9001 Appendix A's payloads, a
%% round trip of every frame type (RFC 9000 §19), the §19 bounds with the
%% exact error codes, the §12.4 table of frames per packet type, the h3spec
%% cases of the HTTP/3 study's §7 that a frame alone decides, and the
%% budget builders.
-module(falco_quic_frame_tests).
-include_lib("eunit/include/eunit.hrl").

-define(F, falco_quic_frame).

%% Options under which every sample below parses: sent by a server (so
%% NEW_TOKEN and HANDSHAKE_DONE are allowed), DATAGRAM negotiated.
-define(ANY, #{peer => server, max_datagram_frame_size => 65535}).

hex(H) -> binary:decode_hex(iolist_to_binary(H)).

bin(IoData) -> iolist_to_binary(IoData).

%% -- RFC 9001 Appendix A -------------------------------------------------------

%% RFC 9001 A.2: the client's Initial payload, a CRYPTO frame of the 241-byte
%% ClientHello padded to 1162 bytes.
rfc9001_client_initial_test() ->
    Crypto = hex(["060040f1010000ed0303ebf8fa56f12939b9584a3896472ec40bb863cfd3e868",
                  "04fe3a47f06a2b69484c00000413011302010000c000000010000e00000b6578",
                  "616d706c652e636f6dff01000100000a00080006001d00170018001000070005",
                  "04616c706e000500050100000000003300260024001d00209370b2c9caa47fba",
                  "baf4559fedba753de171fa71f50f1ce15d43e994ec74d748002b000302030400",
                  "0d0010000e0403050306030203080408050806002d00020101001c0002400100",
                  "3900320408ffffffffffffffff05048000ffff07048000ffff08011001048000",
                  "75300901100f088394c8f03e51570806048000ffff"]),
    Payload = <<Crypto/binary, 0:((1162 - byte_size(Crypto)) * 8)>>,
    {ok, [{crypto, 0, Hello}, {padding, 917}]} = ?F:parse(Payload, #{packet => initial}),
    ?assertEqual(241, byte_size(Hello)),
    ?assertMatch(<<1, 0, 0, 16#ed, 3, 3, _/binary>>, Hello),
    %% a sub-binary of the payload, not a copy
    ?assertEqual(1162, binary:referenced_byte_size(Hello)),
    ?assert(?F:ack_eliciting([{crypto, 0, Hello}, {padding, 917}])).

%% RFC 9001 A.3: the server's Initial payload, ACK of packet 0 then CRYPTO.
rfc9001_server_initial_test() ->
    Payload = hex(["02000000000600405a020000560303eefce7f7b37ba1d1632e96677825ddf739",
                   "88cfc79825df566dc5430b9a045a1200130100002e00330024001d00209d3c94",
                   "0d89690b84d08a60993c144eca684d1081287c834d5311bcf32bb9da1a002b00",
                   "020304"]),
    {ok, [Ack, {crypto, 0, Hello}]} = ?F:parse(Payload, #{packet => initial, peer => server}),
    ?assertEqual({ack, 0, [{0, 0}], undefined}, Ack),
    ?assertEqual(90, byte_size(Hello)),
    %% the builders write the same bytes
    ?assertEqual(Payload, bin([?F:build(Ack), ?F:crypto(0, Hello)])).

%% RFC 9001 A.5: the ChaCha20 example's short packet carries one PING.
rfc9001_chacha20_ping_test() ->
    ?assertEqual({ok, [ping]}, ?F:parse(<<1>>, #{packet => one_rtt})).

%% -- round trips -----------------------------------------------------------------

samples() ->
    [{padding, 1}, {padding, 40}, ping,
     {ack, 25, [{7, 10}], undefined},
     {ack, 3, [{100, 200}, {50, 97}, {0, 0}], undefined},
     {ack, 0, [{5, 5}], {1, 0, 16#3fffffffffffffff}},
     {reset_stream, 4, 16#10c, 1000},
     {stop_sending, 16#3fffffffffffffff, 0},
     {crypto, 0, <<"hello">>}, {crypto, 70000, <<>>},
     {new_token, <<"token">>},
     {stream, 0, 0, nofin, <<"GET /">>}, {stream, 8, 1 bsl 40, fin, <<>>},
     {stream, 3, 64, fin, <<1, 2, 3>>},
     {max_data, 1 bsl 50}, {max_stream_data, 4, 65536},
     {max_streams, bidi, 100}, {max_streams, uni, 1 bsl 60},
     {data_blocked, 0}, {stream_data_blocked, 12, 99},
     {streams_blocked, bidi, 0}, {streams_blocked, uni, 1 bsl 60},
     {new_connection_id, 3, 1, <<1, 2, 3, 4, 5, 6, 7, 8>>, <<0:128>>},
     {new_connection_id, 0, 0, <<9>>, <<-1:128>>},
     {new_connection_id, 7, 7, binary:copy(<<7>>, 20), <<1:128>>},
     {retire_connection_id, 2},
     {path_challenge, <<"01234567">>}, {path_response, <<"abcdefgh">>},
     {connection_close, frame_encoding_error, 16#20, <<"unknown frame">>},
     {connection_close, {crypto_error, no_application_protocol}, 6, <<>>},
     {connection_close, {unknown, 16#4242}, 0, <<>>},
     {application_close, 16#100, <<"H3_NO_ERROR">>},
     handshake_done,
     {datagram, <<"dgram">>}, {datagram, <<>>}].

round_trip_test_() ->
    [?_assertEqual({ok, [F]}, ?F:parse(bin(?F:build(F)), ?ANY)) || F <- samples()].

all_samples_in_one_payload_test() ->
    %% PADDING between frames so two paddings never touch
    Frames = samples() -- [{padding, 1}, {padding, 40}],
    {ok, Parsed} = ?F:parse(bin([?F:build(F) || F <- Frames]), ?ANY),
    ?assertEqual(Frames, Parsed).

frame_type_is_the_first_byte_test_() ->
    [?_assertEqual(binary:first(bin(?F:build(F))), ?F:frame_type(F)) || F <- samples()].

%% §19.1: a run of PADDING bytes is one frame.
padding_runs_collapse_test() ->
    ?assertEqual({ok, [{padding, 3}, ping, {padding, 2}]}, ?F:parse(<<0, 0, 0, 1, 0, 0>>)),
    ?assertEqual({ok, [{padding, 1200}]}, ?F:parse(<<0:9600>>)),
    ?assertEqual(<<0, 0, 0>>, ?F:padding(3)).

%% §19.8: every combination of OFF (0x04), LEN (0x02) and FIN (0x01).
stream_type_bits_test_() ->
    Data = <<"abc">>,
    Cases = [{16#08, <<4, "abc">>, {stream, 4, 0, nofin, Data}},
             {16#09, <<4, "abc">>, {stream, 4, 0, fin, Data}},
             {16#0a, <<4, 3, "abc">>, {stream, 4, 0, nofin, Data}},
             {16#0b, <<4, 3, "abc">>, {stream, 4, 0, fin, Data}},
             {16#0c, <<4, 16#40, 100, "abc">>, {stream, 4, 100, nofin, Data}},
             {16#0d, <<4, 16#40, 100, "abc">>, {stream, 4, 100, fin, Data}},
             {16#0e, <<4, 16#40, 100, 3, "abc">>, {stream, 4, 100, nofin, Data}},
             {16#0f, <<4, 16#40, 100, 3, "abc">>, {stream, 4, 100, fin, Data}}],
    [?_assertEqual({ok, [Frame]}, ?F:parse(<<Type, Body/binary>>)) || {Type, Body, Frame} <- Cases].

%% §19.8: with LEN, more frames may follow; without, the data runs to the end.
stream_length_bounds_test() ->
    ?assertEqual({ok, [{stream, 0, 0, nofin, <<"ab">>}, ping]}, ?F:parse(<<16#0a, 0, 2, "ab", 1>>)),
    ?assertEqual({ok, [{stream, 0, 0, nofin, <<"ab", 1>>}]}, ?F:parse(<<16#08, 0, "ab", 1>>)),
    ?assertEqual({error, frame_encoding_error, 16#0a, truncated_frame},
                 ?F:parse(<<16#0a, 0, 3, "ab">>)),
    %% an Offset or Length cut short
    ?assertEqual({error, frame_encoding_error, 16#0c, truncated_frame}, ?F:parse(<<16#0c, 4>>)),
    ?assertEqual({error, frame_encoding_error, 16#0f, truncated_frame},
                 ?F:parse(<<16#0f, 4, 16#80, 0>>)),
    ?assertEqual({error, frame_encoding_error, 16#0b, truncated_frame}, ?F:parse(<<16#0b, 4>>)),
    {ok, [{stream, 0, 0, nofin, Data}]} = ?F:parse(<<16#08, 0, 0:800>>),
    ?assertEqual(102, binary:referenced_byte_size(Data)).

%% §19.6, §19.8: offset plus length past 2^62 - 1.
offset_limits_test() ->
    Max = 16#3fffffffffffffff,
    ?assertEqual({ok, [{stream, 0, Max, fin, <<>>}]}, ?F:parse(bin(?F:stream(0, Max, fin, <<>>)))),
    ?assertEqual({error, frame_encoding_error, 16#0e, stream_offset_too_large},
                 ?F:parse(bin(?F:stream(0, Max, nofin, <<"x">>)))),
    ?assertEqual({ok, [{crypto, Max - 1, <<"x">>}]}, ?F:parse(bin(?F:crypto(Max - 1, <<"x">>)))),
    ?assertEqual({error, frame_encoding_error, 16#06, crypto_offset_too_large},
                 ?F:parse(bin(?F:crypto(Max, <<"x">>)))).

%% Every frame cut short is a FRAME_ENCODING_ERROR naming its type.
truncated_frames_test_() ->
    Cut = [F || F <- samples(), not lists:member(element(1, tuple(F)), [padding, datagram]),
                byte_size(bin(?F:build(F))) > 1,
                not (element(1, tuple(F)) =:= stream andalso element(5, F) =:= <<>>)],
    [begin
         B = bin(?F:build(F)),
         Short = binary:part(B, 0, byte_size(B) - 1),
         ?_assertMatch({error, frame_encoding_error, _, _}, ?F:parse(Short, ?ANY))
     end || F <- Cut].

%% Frames that end right after their type.
type_only_test_() ->
    [?_assertMatch({error, frame_encoding_error, T, truncated_frame}, ?F:parse(<<T>>, ?ANY))
     || T <- [2, 3, 4, 5, 6, 7, 8, 16#0c, 16#0e, 16#10, 16#11, 16#12, 16#14, 16#15, 16#16,
              16#18, 16#19, 16#1a, 16#1b, 16#1c, 16#1d, 16#31]].

tuple(F) when is_tuple(F) -> F;
tuple(F) -> {F}.

%% -- ACK (§19.3) ---------------------------------------------------------------

ack_ranges_test() ->
    %% Largest 100, First ACK Range 10: 90..100; Gap 5: next largest is
    %% 90 - 5 - 2 = 83; Range Length 3: 80..83; Gap 0: 78; Length 78: 0..78
    Bin = <<2, 16#40, 100, 7, 2, 10, 5, 3, 0, 16#40, 78>>,
    ?assertEqual({ok, [{ack, 7, [{90, 100}, {80, 83}, {0, 78}], undefined}]}, ?F:parse(Bin)),
    ?assertEqual(Bin, bin(?F:ack(7, [{90, 100}, {80, 83}, {0, 78}], undefined))).

%% §19.3.1: a range whose smallest packet number would be below 0.
ack_below_zero_test() ->
    ?assertEqual({error, frame_encoding_error, 2, ack_range_below_zero},
                 ?F:parse(<<2, 5, 0, 0, 6>>)),
    %% 5..10, then Gap 4: the next largest would be 5 - 4 - 2 = -1
    ?assertEqual({error, frame_encoding_error, 2, ack_range_below_zero},
                 ?F:parse(<<2, 10, 0, 1, 5, 4, 0>>)),
    ?assertEqual({ok, [{ack, 0, [{5, 10}, {0, 0}], undefined}]},
                 ?F:parse(<<2, 10, 0, 1, 5, 3, 0>>)),
    %% 5..10, Gap 1 (next largest 2), Length 3 reaching -1
    ?assertEqual({error, frame_encoding_error, 3, ack_range_below_zero},
                 ?F:parse(<<3, 10, 0, 1, 5, 1, 3, 0, 0, 0>>)),
    ?assertEqual({ok, [{ack, 0, [{5, 10}, {0, 2}], undefined}]},
                 ?F:parse(<<2, 10, 0, 1, 5, 1, 2>>)).

%% §20.1's example: more ranges than the rest of the packet could carry.
ack_range_count_test() ->
    ?assertEqual({error, frame_encoding_error, 2, ack_range_count},
                 ?F:parse(<<2, 10, 0, 16#80, 0, 1, 0, 0, 0, 0>>)),
    ?assertEqual({error, frame_encoding_error, 2, truncated_frame},
                 ?F:parse(<<2, 10, 0, 1, 0, 1, 16#40>>)).

%% The bound on intervals per frame: the newest are kept, the rest checked
%% (a bad one still fails) and dropped.
ack_range_bound_test() ->
    Ranges = [{N * 4, N * 4 + 1} || N <- lists:seq(99, 0, -1)],
    Bin = bin(?F:ack(0, Ranges, {1, 2, 3})),
    ?assertEqual({ok, [{ack, 0, lists:sublist(Ranges, 64), {1, 2, 3}}]}, ?F:parse(Bin)),
    ?assertEqual({ok, [{ack, 0, lists:sublist(Ranges, 3), {1, 2, 3}}]},
                 ?F:parse(Bin, #{max_ack_ranges => 3})),
    ?assertEqual({ok, [{ack, 0, Ranges, {1, 2, 3}}]}, ?F:parse(Bin, #{max_ack_ranges => 100})),
    %% 4..5 then 0..1 kept as one; a further range below 0 still refused
    Bad = <<2, 5, 0, 2, 1, 0, 0, 0, 1>>,
    ?assertEqual({error, frame_encoding_error, 2, ack_range_below_zero},
                 ?F:parse(Bad, #{max_ack_ranges => 1})).

%% -- the other §19 bounds, with h3spec's cases ----------------------------------

%% h3spec "MUST send FRAME_ENCODING_ERROR if invalid MAX_STREAMS is received"
%% (RFC 9000 §19.11: at most 2^60).
max_streams_limit_test() ->
    Over = falco_quic_varint:encode((1 bsl 60) + 1),
    ?assertEqual({error, frame_encoding_error, 16#12, stream_count_too_large},
                 ?F:parse(<<16#12, Over/binary>>)),
    ?assertEqual({error, frame_encoding_error, 16#13, stream_count_too_large},
                 ?F:parse(<<16#13, Over/binary>>)).

%% h3spec "MUST send STREAM_LIMIT_ERROR or FRAME_ENCODING_ERROR if invalid
%% STREAMS_BLOCKED is received" (RFC 9000 §19.14).
streams_blocked_limit_test() ->
    Over = falco_quic_varint:encode((1 bsl 60) + 1),
    ?assertEqual({error, frame_encoding_error, 16#16, stream_count_too_large},
                 ?F:parse(<<16#16, Over/binary>>)),
    ?assertEqual({error, frame_encoding_error, 16#17, stream_count_too_large},
                 ?F:parse(<<16#17, Over/binary>>)).

%% h3spec "MUST send FRAME_ENCODING_ERROR if NEW_CONNECTION_ID with 0-byte
%% CID is received" and "... with invalid Retire_Prior_To" (RFC 9000 §19.15).
new_connection_id_bounds_test() ->
    Token = <<0:128>>,
    ?assertEqual({error, frame_encoding_error, 16#18, bad_connection_id_length},
                 ?F:parse(<<16#18, 1, 0, 0, Token/binary>>)),
    ?assertEqual({error, frame_encoding_error, 16#18, bad_connection_id_length},
                 ?F:parse(<<16#18, 1, 0, 21, 0:168, Token/binary>>)),
    ?assertEqual({error, frame_encoding_error, 16#18, retire_prior_to_above_sequence},
                 ?F:parse(<<16#18, 1, 11, 8, 0:64, Token/binary>>)),
    ?assertEqual({error, frame_encoding_error, 16#18, truncated_frame},
                 ?F:parse(<<16#18, 1, 0, 8, 0:64, 0:120>>)).

%% RFC 9000 §19.7: an empty token is a FRAME_ENCODING_ERROR.
new_token_empty_test() ->
    ?assertEqual({error, frame_encoding_error, 7, empty_token},
                 ?F:parse(<<7, 0>>, #{peer => server})).

%% h3spec "MUST send FRAME_ENCODING_ERROR if a frame of unknown type is
%% received" (RFC 9000 §12.4): h3spec sends type 0x20.
unknown_frame_type_test_() ->
    [?_assertEqual({error, frame_encoding_error, 16#20, unknown_frame_type}, ?F:parse(<<16#20>>)),
     ?_assertEqual({error, frame_encoding_error, 16#1f, unknown_frame_type},
                   ?F:parse(<<1, 16#1f, 0>>)),
     ?_assertEqual({error, frame_encoding_error, 16#af, unknown_frame_type},
                   ?F:parse(<<16#40, 16#af, 0>>)),
     ?_assertEqual({error, frame_encoding_error, 0, truncated_frame_type}, ?F:parse(<<16#40>>))].

%% RFC 9000 §12.4: the frame type in its shortest encoding (PING as 0x4001).
frame_type_shortest_test() ->
    ?assertEqual({error, protocol_violation, 1, frame_type_not_shortest},
                 ?F:parse(<<16#40, 1>>)),
    ?assertEqual({error, protocol_violation, 16#20, frame_type_not_shortest},
                 ?F:parse(<<16#80, 0, 0, 16#20>>)).

%% h3spec "MUST send PROTOCOL_VIOLATION on no frames" (RFC 9000 §12.4).
no_frames_test() ->
    ?assertEqual({error, protocol_violation, 0, no_frames}, ?F:parse(<<>>, #{packet => one_rtt})).

%% h3spec "MUST send PROTOCOL_VIOLATION if NEW_TOKEN is received" (RFC 9000
%% §19.7) and "... if HANDSHAKE_DONE is received" (§19.20): from a client.
server_only_frames_test() ->
    Opts = #{packet => one_rtt},
    ?assertEqual({error, protocol_violation, 7, new_token_from_client},
                 ?F:parse(bin(?F:new_token(<<"DUMMY">>)), Opts)),
    ?assertEqual({error, protocol_violation, 16#1e, handshake_done_from_client},
                 ?F:parse(<<1, 16#1e>>, Opts)),
    ?assertEqual({ok, [handshake_done]}, ?F:parse(<<16#1e>>, Opts#{peer => server})).

%% h3spec "MUST send PROTOCOL_VIOLATION if PATH_CHALLENGE in Handshake is
%% received" (RFC 9000 §12.4, §17.2.4).
path_challenge_in_handshake_test() ->
    ?assertEqual({error, protocol_violation, 16#1a, frame_not_allowed_in_handshake},
                 ?F:parse(bin([?F:ping(), ?F:path_challenge(<<"01234567">>)]),
                          #{packet => handshake})).

%% h3spec "MUST send PROTOCOL_VIOLATION if CRYPTO in 0-RTT is received"
%% (RFC 9000 §12.4; RFC 9001 §8.3 sends the same case there).
crypto_in_0rtt_test() ->
    ?assertEqual({error, protocol_violation, 6, frame_not_allowed_in_0rtt},
                 ?F:parse(bin(?F:crypto(0, <<8, 0, 0, 2, 0, 0>>)), #{packet => zero_rtt})).

%% RFC 9000 §12.4 Table 3, "Pkts" column (I, H, 0, 1; ih: only 0x1c in
%% Initial and Handshake), and RFC 9221 §4 for DATAGRAM: from a server, so
%% only the table speaks.
packet_types_test_() ->
    Table = [{padding, "IH01"}, {ping, "IH01"}, {ack, "IH_1"}, {reset_stream, "__01"},
             {stop_sending, "__01"}, {crypto, "IH_1"}, {new_token, "___1"}, {stream, "__01"},
             {max_data, "__01"}, {max_stream_data, "__01"}, {max_streams, "__01"},
             {data_blocked, "__01"}, {stream_data_blocked, "__01"}, {streams_blocked, "__01"},
             {new_connection_id, "__01"}, {retire_connection_id, "__01"},
             {path_challenge, "__01"}, {path_response, "___1"}, {connection_close, "IH01"},
             {application_close, "__01"}, {handshake_done, "___1"}, {datagram, "__01"}],
    Packets = [initial, handshake, zero_rtt, one_rtt],
    [begin
         {Name, Pkts} = lists:keyfind(element(1, tuple(F)), 1, Table),
         Allowed = lists:nth(I, Pkts) =/= $_,
         Result = ?F:parse(bin(?F:build(F)), ?ANY#{packet => P}),
         Check = ?F:check(P, server, [F]),
         ?_test(case Allowed of
                    true ->
                        ?assertEqual({ok, [F]}, Result),
                        ?assertEqual(ok, Check);
                    false ->
                        ?assertMatch({_, _, {error, protocol_violation, _, _}}, {Name, P, Result}),
                        ?assertMatch({_, _, {error, protocol_violation, _, _}}, {Name, P, Check})
                end)
     end || F <- samples(), {I, P} <- lists:zip(lists:seq(1, 4), Packets)].

check_from_client_test() ->
    ?assertEqual(ok, ?F:check(one_rtt, client, [ping, {stream, 0, 0, fin, <<>>}])),
    ?assertEqual({error, protocol_violation, 16#1e, handshake_done_from_client},
                 ?F:check(one_rtt, client, [ping, handshake_done])).

%% RFC 9221 §3: DATAGRAM only when we advertised max_datagram_frame_size,
%% and no larger than it (type, length and data).
datagram_test() ->
    Frame = bin(?F:datagram(<<0:80>>)),
    ?assertEqual(12, byte_size(Frame)),
    ?assertEqual({error, protocol_violation, 16#31, datagram_not_negotiated}, ?F:parse(Frame)),
    ?assertEqual({ok, [{datagram, <<0:80>>}]}, ?F:parse(Frame, #{max_datagram_frame_size => 12})),
    ?assertEqual({error, protocol_violation, 16#31, datagram_too_large},
                 ?F:parse(Frame, #{max_datagram_frame_size => 11})),
    ?assertEqual({ok, [ping, {datagram, <<"rest">>}]},
                 ?F:parse(<<1, 16#30, "rest">>, #{max_datagram_frame_size => 5})),
    ?assertEqual({error, protocol_violation, 16#30, datagram_too_large},
                 ?F:parse(<<16#30, "rest">>, #{max_datagram_frame_size => 4})).

connection_close_codes_test() ->
    %% RFC 9001 §4.8: no_application_protocol (120) is 0x178
    Bin = bin(?F:connection_close({crypto_error, no_application_protocol}, 0, <<>>)),
    ?assertEqual(<<16#1c, 16#41, 16#78, 0, 0>>, Bin),
    ?assertEqual({ok, [{connection_close, {crypto_error, no_application_protocol}, 0, <<>>}]},
                 ?F:parse(Bin)),
    ?assertEqual(<<16#1c, 7, 16#20, 2, "xy">>,
                 bin(?F:connection_close(frame_encoding_error, 16#20, [<<"x">>, "y"]))).

%% -- recovery's view (RFC 9002 §2) ------------------------------------------------

ack_eliciting_test() ->
    Ack = {ack, 0, [{0, 0}], undefined},
    ?assertNot(?F:ack_eliciting([Ack, {padding, 10}])),
    ?assertNot(?F:ack_eliciting([{connection_close, no_error, 0, <<>>}])),
    ?assertNot(?F:ack_eliciting([{application_close, 0, <<>>}, Ack])),
    ?assert(?F:ack_eliciting([Ack, ping])),
    ?assert(?F:ack_eliciting([{datagram, <<>>}])),
    ?assertNot(?F:in_flight([Ack])),
    ?assertNot(?F:in_flight([Ack, {connection_close, no_error, 0, <<>>}])),
    ?assert(?F:in_flight([Ack, {padding, 3}])),
    ?assert(?F:in_flight([{max_data, 10}])).

%% -- budget builders ---------------------------------------------------------------

stream_fit_test() ->
    Data = binary:copy(<<"x">>, 1000),
    %% type + id (1) + offset 100 (2) + length (2) + 64 bytes = 70
    {Frame, 70, Rest, nofin} = ?F:stream_fit(4, 100, fin, Data, 70),
    ?assertEqual(70, iolist_size(Frame)),
    ?assertEqual(936, byte_size(Rest)),
    ?assertEqual({ok, [{stream, 4, 100, nofin, binary:part(Data, 0, 64)}]}, ?F:parse(bin(Frame))),
    %% 69: 64 bytes would need a 2-byte length (70), so 63 with a 1-byte one
    {_, 68, _, nofin} = ?F:stream_fit(4, 100, fin, Data, 69),
    %% all of it fits: FIN goes, and the frame is no larger than it must be
    {F2, 1006, <<>>, fin} = ?F:stream_fit(4, 100, fin, Data, 1500),
    ?assertEqual({ok, [{stream, 4, 100, fin, Data}]}, ?F:parse(bin(F2))),
    {_, _, <<>>, nofin} = ?F:stream_fit(4, 100, nofin, Data, 1500),
    %% offset 0 has no Offset field
    {_, 4, <<"xx">>, nofin} = ?F:stream_fit(0, 0, fin, <<"xxx">>, 4),
    %% not a byte of data fits
    ?assertEqual(none, ?F:stream_fit(4, 100, fin, Data, 5)),
    ?assertEqual(none, ?F:stream_fit(4, 100, nofin, <<>>, 100)),
    %% an empty FIN frame
    {F3, 5, <<>>, fin} = ?F:stream_fit(4, 100, fin, <<>>, 5),
    ?assertEqual({ok, [{stream, 4, 100, fin, <<>>}]}, ?F:parse(bin(F3))),
    ?assertEqual(none, ?F:stream_fit(4, 100, fin, <<>>, 4)).

stream_fit_sizes_test_() ->
    Data = binary:copy(<<"y">>, 20000),
    [?_test(case ?F:stream_fit(1, 0, fin, Data, Budget) of
                none ->
                    ?assert(Budget < 4);
                {Frame, Size, Rest, _} ->
                    ?assertEqual(Size, iolist_size(Frame)),
                    ?assert(Size =< Budget),
                    %% at most the bytes a longer length field costs are left over
                    ?assert(Budget - Size =< 3 orelse Rest =:= <<>>)
            end)
     || Budget <- lists:seq(0, 70) ++ lists:seq(16380, 16400) ++ [25000]].

crypto_fit_test() ->
    Data = binary:copy(<<"z">>, 300),
    {Frame, 100, Rest} = ?F:crypto_fit(0, Data, 100),
    ?assertEqual(100, iolist_size(Frame)),
    ?assertEqual({ok, [{crypto, 0, binary:part(Data, 0, 96)}]}, ?F:parse(bin(Frame))),
    ?assertEqual(204, byte_size(Rest)),
    {_, 305, <<>>} = ?F:crypto_fit(1000, Data, 2000),
    ?assertEqual(none, ?F:crypto_fit(0, Data, 3)),
    ?assertEqual(none, ?F:crypto_fit(0, <<>>, 100)).
