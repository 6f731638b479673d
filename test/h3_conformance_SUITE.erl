%% Conformance of our own (issue 43, point 6): falco's HTTP/3 listener
%% driven by the raw test client's session API (falco_test_quic_client)
%% sending what real clients never do. h3spec's check list (the study's
%% section 7), each case citing its RFC section and asserting the exact
%% code of the server's CONNECTION_CLOSE (0x1c: a transport error; 0x1d:
%% an HTTP/3 or QPACK code) or of its RESET_STREAM for a stream error;
%% then what real clients do that is unusual: Chromium's shuffled CRYPTO,
%% 0- and 20-byte connection IDs; and what the network does: truncated
%% and corrupted packets, short datagrams, a Version Negotiation from the
%% client.
-module(h3_conformance_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, init_per_suite/1, end_per_suite/1]).
-export([handle/1]).
-export([tp_max_udp_payload_size_kept/1, tp_missing_initial_scid/1, tp_original_dcid/1, tp_preferred_address/1,
         tp_retry_scid/1, tp_stateless_reset_token/1, tp_max_udp_payload_size/1,
         tp_ack_delay_exponent/1, tp_max_ack_delay/1, tls_missing_tparams/1, tls_no_alpn_h3/1,
         tls_key_update/1, tls_key_update_handshake/1, tls_end_of_early_data/1,
         stream_unopened_local/1,
         unknown_frame/1, bad_max_streams/1, new_connection_id_empty/1,
         new_connection_id_bad_retire/1, new_token_from_client/1, handshake_done_from_client/1,
         stream_in_initial/1, path_challenge_in_handshake/1, reserved_bits_short/1, no_frames/1,
         reset_stream_send_only/1, stream_send_only/1, stop_sending_unopened/1,
         max_stream_data_receive_only/1, max_stream_data_unopened/1, stream_limit/1,
         streams_blocked_bad/1, flow_control_large_offset/1, final_size_changed/1,
         final_size_reset_below/1,
         h3_missing_settings/1, h3_second_control_stream/1, h3_data_on_control/1,
         h3_headers_on_control/1, h3_second_settings/1, h3_h2_frame_on_control/1,
         h3_closed_control/1, h3_duplicate_setting/1, h3_h2_setting/1,
         h3_data_before_headers/1, h3_cancel_push_on_request/1, h3_push_stream_from_client/1,
         h3_malformed_requests/1, qpack_bad_static_index/1, qpack_encoder_capacity/1,
         qpack_decoder_zero_increment/1,
         shuffled_crypto/1, scid_0/1, cids_20/1, truncated_and_corrupted/1,
         initial_1199/1, version_negotiation_ignored/1, forged_key_phase/1,
         aead_integrity_limit/1]).

-define(C, falco_test_quic_client).

%% transport error codes (RFC 9000 §20.1)
-define(FLOW_CONTROL_ERROR, 16#03).
-define(STREAM_LIMIT_ERROR, 16#04).
-define(STREAM_STATE_ERROR, 16#05).
-define(FINAL_SIZE_ERROR, 16#06).
-define(FRAME_ENCODING_ERROR, 16#07).
-define(TRANSPORT_PARAMETER_ERROR, 16#08).
-define(PROTOCOL_VIOLATION, 16#0a).
-define(AEAD_LIMIT_REACHED, 16#0f).
%% RFC 9001 §4.8: CRYPTO_ERROR, 0x100 + the TLS alert
-define(UNEXPECTED_MESSAGE, 16#10a).
-define(MISSING_EXTENSION, 16#16d).
-define(NO_APPLICATION_PROTOCOL, 16#178).
%% RFC 9114 §8.1, RFC 9204 §6
-define(H3_STREAM_CREATION_ERROR, 16#103).
-define(H3_CLOSED_CRITICAL_STREAM, 16#104).
-define(H3_FRAME_UNEXPECTED, 16#105).
-define(H3_SETTINGS_ERROR, 16#109).
-define(H3_MISSING_SETTINGS, 16#10a).
-define(H3_MESSAGE_ERROR, 16#10e).
-define(QPACK_DECOMPRESSION_FAILED, 16#200).
-define(QPACK_ENCODER_STREAM_ERROR, 16#201).
-define(QPACK_DECODER_STREAM_ERROR, 16#202).

all() ->
    [{group, transport_parameters}, {group, frames}, {group, http3}, {group, clients}].

groups() ->
    [{transport_parameters, [],
      [tp_missing_initial_scid, tp_original_dcid, tp_preferred_address, tp_retry_scid,
       tp_stateless_reset_token, tp_max_udp_payload_size, tp_max_udp_payload_size_kept,
       tp_ack_delay_exponent,
       tp_max_ack_delay, tls_missing_tparams, tls_no_alpn_h3, tls_key_update,
       tls_key_update_handshake, tls_end_of_early_data]},
     {frames, [],
      [unknown_frame, bad_max_streams, new_connection_id_empty, new_connection_id_bad_retire,
       new_token_from_client, handshake_done_from_client, stream_in_initial,
       path_challenge_in_handshake, reserved_bits_short, no_frames, reset_stream_send_only,
       stream_send_only, stream_unopened_local, stop_sending_unopened, max_stream_data_receive_only,
       max_stream_data_unopened, stream_limit, streams_blocked_bad, flow_control_large_offset,
       final_size_changed, final_size_reset_below]},
     {http3, [],
      [h3_missing_settings, h3_second_control_stream, h3_data_on_control,
       h3_headers_on_control, h3_second_settings, h3_h2_frame_on_control, h3_closed_control,
       h3_duplicate_setting, h3_h2_setting, h3_data_before_headers, h3_cancel_push_on_request,
       h3_push_stream_from_client, h3_malformed_requests, qpack_bad_static_index,
       qpack_encoder_capacity, qpack_decoder_zero_increment]},
     {clients, [],
      [shuffled_crypto, scid_0, cids_20, truncated_and_corrupted, initial_1199,
       version_negotiation_ignored, forged_key_phase, aead_integrity_limit]}].

init_per_suite(Config) ->
    {ok, _} = application:ensure_all_started(falco),
    {ok, _} = falco:start_listener(h3_conform, #{ip => {127, 0, 0, 1}, port => 0,
                                                 transport => tls,
                                                 tls_opts => falco_test_tls:server_opts(),
                                                 http3 => true, h3_idle_timeout => 3000,
                                                 handler => fun ?MODULE:handle/1}),
    {ok, Port} = falco:port(h3_conform),
    [{port, Port} | Config].

end_per_suite(_Config) ->
    ok = falco:stop_listener(h3_conform),
    ok.

handle(#{path := Path}) ->
    {200, [], Path}.

%% -- helpers ----------------------------------------------------------------------

connect(Config) ->
    connect(Config, #{}).

connect(Config, Opts) ->
    {ok, S} = ?C:connect(?config(port, Config), Opts),
    S.

%% A handshake the server refuses: the code of its CONNECTION_CLOSE.
refused(Config, Opts) ->
    case ?C:connect(?config(port, Config), Opts) of
        {error, {closed, Code, FrameType, Why}} ->
            ct:pal("closed ~p, frame type ~p, reason ~p", [Code, FrameType, Why]),
            Code;
        {ok, S} ->
            Close = ?C:await_close(S, 2000),
            ?C:close(S),
            ct:pal("closed after the handshake: ~p", [Close]),
            case Close of
                {closed, Code, _, _} -> Code;
                timeout -> timeout
            end
    end.

%% Frames in one 1-RTT packet after the handshake: the close's code.
after_handshake(Config, Frames) ->
    after_handshake(Config, #{}, Frames).

after_handshake(Config, Opts, Frames) ->
    S = connect(Config, Opts),
    ok = ?C:send_frames(S, one_rtt, Frames),
    closed(S).

closed(S) ->
    Close = ?C:await_close(S, 3000),
    ?C:close(S),
    ct:pal("server's close: ~p", [Close]),
    case Close of
        {closed, Code, _, _} -> Code;
        timeout -> timeout
    end.

fields(Path) ->
    [{<<":method">>, <<"GET">>}, {<<":scheme">>, <<"https">>},
     {<<":authority">>, <<"localhost">>}, {<<":path">>, Path}].

%% A GET on stream Id of a session: its response.
get(S, Id, Path) ->
    ok = ?C:request(S, Id, fields(Path), <<>>, fin),
    {ok, #{responses := #{Id := Response}}} =
        ?C:recv_until(S, fun(#{responses := R}) -> is_map_key(Id, R) end, 3000),
    Response.

get_ok(S, Id, Path) ->
    ?assertMatch({ok, #{status := 200, body := Path}}, get(S, Id, Path)).

v(N) -> falco_quic_varint:encode(N).

%% -- transport parameters (RFC 9000 §7.4, §18.2) ---------------------------------

%% §18.2: no datagram larger than the client's max_udp_payload_size; and
%% without it, the 1350 bytes falco sends once the handshake is complete,
%% so the case can tell.
tp_max_udp_payload_size_kept(Config) ->
    Path = <<"/", (binary:copy(<<"p">>, 5000))/binary>>,
    Largest = fun(Opts) ->
                      S = connect(Config, Opts),
                      get_ok(S, 0, Path),
                      #{largest_datagram := L} = ?C:view(S),
                      ?C:close(S),
                      L
              end,
    Limited = Largest(#{tparams => #{max_udp_payload_size => 1200}}),
    Default = Largest(#{}),
    ct:pal("largest datagram: ~b with max_udp_payload_size 1200, ~b without", [Limited, Default]),
    ?assert(Limited =< 1200),
    ?assert(Default > 1200).

%% §7.3: a client's initial_source_connection_id is required.
tp_missing_initial_scid(Config) ->
    ?assertEqual({transport, ?TRANSPORT_PARAMETER_ERROR},
                 refused(Config, #{tparams => #{initial_source_connection_id => delete}})).

%% §18.2: original_destination_connection_id is the server's only.
tp_original_dcid(Config) ->
    ?assertEqual({transport, ?TRANSPORT_PARAMETER_ERROR},
                 refused(Config, #{tparams => #{original_destination_connection_id =>
                                                    <<1:64>>}})).

%% §18.2: preferred_address is the server's only.
tp_preferred_address(Config) ->
    Address = #{ipv4 => {{127, 0, 0, 1}, 4433}, ipv6 => {{0, 0, 0, 0, 0, 0, 0, 1}, 4433},
                connection_id => <<1:64>>, stateless_reset_token => <<0:128>>},
    ?assertEqual({transport, ?TRANSPORT_PARAMETER_ERROR},
                 refused(Config, #{tparams => #{preferred_address => Address}})).

%% §18.2: retry_source_connection_id is the server's only.
tp_retry_scid(Config) ->
    ?assertEqual({transport, ?TRANSPORT_PARAMETER_ERROR},
                 refused(Config, #{tparams => #{retry_source_connection_id => <<1:64>>}})).

%% §18.2: stateless_reset_token is the server's only.
tp_stateless_reset_token(Config) ->
    ?assertEqual({transport, ?TRANSPORT_PARAMETER_ERROR},
                 refused(Config, #{tparams => #{stateless_reset_token => <<0:128>>}})).

%% §18.2: max_udp_payload_size below 1200 is invalid.
tp_max_udp_payload_size(Config) ->
    ?assertEqual({transport, ?TRANSPORT_PARAMETER_ERROR},
                 refused(Config, #{tparams => #{max_udp_payload_size => 1199}})).

%% §18.2: ack_delay_exponent above 20 is invalid.
tp_ack_delay_exponent(Config) ->
    ?assertEqual({transport, ?TRANSPORT_PARAMETER_ERROR},
                 refused(Config, #{tparams => #{ack_delay_exponent => 21}})).

%% §18.2: max_ack_delay of 2^14 or more is invalid.
tp_max_ack_delay(Config) ->
    ?assertEqual({transport, ?TRANSPORT_PARAMETER_ERROR},
                 refused(Config, #{tparams => #{max_ack_delay => 16384}})).

%% RFC 9001 §8.2: no quic_transport_parameters extension is the TLS alert
%% missing_extension (109), CRYPTO_ERROR 0x16d.
tls_missing_tparams(Config) ->
    ?assertEqual({transport, ?MISSING_EXTENSION}, refused(Config, #{tparams => none})).

%% RFC 9001 §8.1, RFC 9114 §3.1: no ALPN in common is the alert
%% no_application_protocol (120), CRYPTO_ERROR 0x178.
tls_no_alpn_h3(Config) ->
    ?assertEqual({transport, ?NO_APPLICATION_PROTOCOL},
                 refused(Config, #{alpn => [<<"h2">>, <<"http/1.1">>]})).

%% RFC 9001 §6: a TLS KeyUpdate message is forbidden in QUIC
%% (unexpected_message, 10: CRYPTO_ERROR 0x10a).
tls_key_update(Config) ->
    KeyUpdate = <<24, 1:24, 0>>,
    ?assertEqual({transport, ?UNEXPECTED_MESSAGE},
                 after_handshake(Config, [falco_quic_frame:crypto(0, KeyUpdate)])).

%% RFC 9001 §6: KeyUpdate in a Handshake packet, after the client's
%% Finished (offset 36 with TLS_AES_128_GCM_SHA256): unexpected_message.
tls_key_update_handshake(Config) ->
    KeyUpdate = falco_quic_frame:crypto(36, <<24, 1:24, 0>>),
    ?assertEqual({transport, ?UNEXPECTED_MESSAGE},
                 refused(Config, #{suites => [16#1301], hs_frames => [KeyUpdate]})).

%% RFC 9001 §8.3: a client must not send EndOfEarlyData (unexpected_message).
tls_end_of_early_data(Config) ->
    EndOfEarlyData = falco_quic_frame:crypto(36, <<5, 0:24>>),
    ?assertEqual({transport, ?UNEXPECTED_MESSAGE},
                 refused(Config, #{suites => [16#1301], hs_frames => [EndOfEarlyData]})).

%% -- frames (RFC 9000 §12.4, §19) ------------------------------------------------

%% §12.4: an unknown frame type (0x20) is FRAME_ENCODING_ERROR.
unknown_frame(Config) ->
    ?assertEqual({transport, ?FRAME_ENCODING_ERROR}, after_handshake(Config, [<<16#20>>])).

%% §19.11: MAX_STREAMS above 2^60 is FRAME_ENCODING_ERROR.
bad_max_streams(Config) ->
    ?assertEqual({transport, ?FRAME_ENCODING_ERROR},
                 after_handshake(Config, [[<<16#12>>, v((1 bsl 60) + 1)]])).

%% §19.15: a NEW_CONNECTION_ID of length 0 is FRAME_ENCODING_ERROR.
new_connection_id_empty(Config) ->
    ?assertEqual({transport, ?FRAME_ENCODING_ERROR},
                 after_handshake(Config, [[<<16#18>>, v(1), v(0), <<0>>, <<0:128>>]])).

%% §19.15: Retire Prior To above the Sequence Number is FRAME_ENCODING_ERROR.
new_connection_id_bad_retire(Config) ->
    ?assertEqual({transport, ?FRAME_ENCODING_ERROR},
                 after_handshake(Config, [[<<16#18>>, v(1), v(2), <<8, 1:64>>, <<0:128>>]])).

%% §19.7: a client must not send NEW_TOKEN (PROTOCOL_VIOLATION).
new_token_from_client(Config) ->
    ?assertEqual({transport, ?PROTOCOL_VIOLATION},
                 after_handshake(Config, [falco_quic_frame:new_token(<<"token">>)])).

%% §19.20: a client must not send HANDSHAKE_DONE (PROTOCOL_VIOLATION).
handshake_done_from_client(Config) ->
    ?assertEqual({transport, ?PROTOCOL_VIOLATION},
                 after_handshake(Config, [falco_quic_frame:handshake_done()])).

%% §12.4 Table 3: STREAM is not allowed in an Initial packet
%% (PROTOCOL_VIOLATION, §12.4).
stream_in_initial(Config) ->
    Stream = falco_quic_frame:stream(0, 0, fin, <<"x">>),
    ?assertEqual({transport, ?PROTOCOL_VIOLATION},
                 refused(Config, #{initial_frames => [Stream]})).

%% §12.4 Table 3: PATH_CHALLENGE is not allowed in a Handshake packet.
path_challenge_in_handshake(Config) ->
    Challenge = falco_quic_frame:path_challenge(<<1:64>>),
    ?assertEqual({transport, ?PROTOCOL_VIOLATION},
                 refused(Config, #{hs_frames => [Challenge]})).

%% RFC 9001 §6.3, §9.5: packets with the key phase flipped that do not
%% open with the next keys (sealed with the current ones, or corrupted)
%% change nothing: no update is committed, nothing is closed, and the
%% connection goes on with the keys it had, both ways.
forged_key_phase(Config) ->
    S = connect(Config),
    get_ok(S, 0, <<"/before">>),
    Forged = [begin
                  {ok, P} = ?C:packet(S, one_rtt, [falco_quic_frame:ping()], #{key_phase => 1}),
                  P
              end || _ <- lists:seq(1, 5)],
    {ok, Good} = ?C:packet(S, one_rtt, [falco_quic_frame:ping()], #{key_phase => 1}),
    Size = byte_size(Good),
    Corrupted = <<(binary:part(Good, 0, Size - 1))/binary, (binary:last(Good) bxor 1)>>,
    [ok = ?C:send_datagram(S, P) || P <- Forged ++ [Corrupted]],
    get_ok(S, 4, <<"/after">>),
    get_ok(S, 8, <<"/again">>),
    ?assertEqual(undefined, maps:get(close, ?C:view(S))),
    ?C:close(S).

%% RFC 9001 §6.6: past the integrity limit (3 here, on a listener of the
%% case's own: h3_aead_integrity_limit) packets that fail to open close
%% the connection with AEAD_LIMIT_REACHED; up to it, nothing happens.
aead_integrity_limit(_Config) ->
    {ok, _} = falco:start_listener(h3_conform_aead, #{ip => {127, 0, 0, 1}, port => 0,
                                                      transport => tls,
                                                      tls_opts => falco_test_tls:server_opts(),
                                                      http3 => true, h3_aead_integrity_limit => 3,
                                                      handler => fun ?MODULE:handle/1}),
    try
        {ok, Port} = falco:port(h3_conform_aead),
        S = connect([{port, Port}]),
        Forged = fun() ->
                         {ok, P} = ?C:packet(S, one_rtt, [falco_quic_frame:ping()],
                                             #{key_phase => 1}),
                         ok = ?C:send_datagram(S, P)
                 end,
        [Forged() || _ <- lists:seq(1, 3)],
        get_ok(S, 0, <<"/still">>),
        Forged(),
        ?assertEqual({transport, ?AEAD_LIMIT_REACHED}, closed(S))
    after
        falco:stop_listener(h3_conform_aead)
    end.

%% §17.3.1: the reserved bits of a short header, set in a packet that
%% authenticates, are PROTOCOL_VIOLATION.
reserved_bits_short(Config) ->
    S = connect(Config),
    %% the key phase field shifted in covers the two reserved bits (0x18)
    {ok, Packet} = ?C:packet(S, one_rtt, [falco_quic_frame:ping()], #{key_phase => 6}),
    ok = ?C:send_datagram(S, Packet),
    ?assertEqual({transport, ?PROTOCOL_VIOLATION}, closed(S)).

%% §12.4: a packet with no frames (an empty payload: a 4-byte packet
%% number leaves the header protection sample in the tag) is
%% PROTOCOL_VIOLATION.
no_frames(Config) ->
    S = connect(Config),
    {ok, Packet} = ?C:packet(S, one_rtt, [], #{pn_length => 4}),
    #{dcid := Dcid} = ?C:info(S),
    %% first byte, DCID, packet number, the tag alone
    ?assertEqual(1 + byte_size(Dcid) + 4 + 16, byte_size(Packet)),
    ok = ?C:send_datagram(S, Packet),
    ?assertEqual({transport, ?PROTOCOL_VIOLATION}, closed(S)).

%% §19.4: RESET_STREAM for a send-only stream (our control stream, 3)
%% is STREAM_STATE_ERROR.
reset_stream_send_only(Config) ->
    ?assertEqual({transport, ?STREAM_STATE_ERROR},
                 after_handshake(Config, [falco_quic_frame:reset_stream(3, 0, 0)])).

%% §19.8: STREAM on a send-only stream (3) is STREAM_STATE_ERROR.
stream_send_only(Config) ->
    ?assertEqual({transport, ?STREAM_STATE_ERROR},
                 after_handshake(Config, [falco_quic_frame:stream(3, 0, nofin, <<"x">>)])).

%% §19.8: STREAM on a server stream not yet created (our unidirectional 15,
%% send-only for the client) is STREAM_STATE_ERROR.
stream_unopened_local(Config) ->
    ?assertEqual({transport, ?STREAM_STATE_ERROR},
                 after_handshake(Config, [falco_quic_frame:stream(15, 0, nofin, <<"x">>)])).

%% §19.5: STOP_SENDING for a locally initiated stream not yet created
%% (our unidirectional 15) is STREAM_STATE_ERROR.
stop_sending_unopened(Config) ->
    ?assertEqual({transport, ?STREAM_STATE_ERROR},
                 after_handshake(Config, [falco_quic_frame:stop_sending(15, 0)])).

%% §19.10: MAX_STREAM_DATA for a receive-only stream (the client's
%% unidirectional 2) is STREAM_STATE_ERROR.
max_stream_data_receive_only(Config) ->
    ?assertEqual({transport, ?STREAM_STATE_ERROR},
                 after_handshake(Config, [falco_quic_frame:max_stream_data(2, 1000)])).

%% §19.10: MAX_STREAM_DATA for a locally initiated stream not yet created
%% is STREAM_STATE_ERROR.
max_stream_data_unopened(Config) ->
    ?assertEqual({transport, ?STREAM_STATE_ERROR},
                 after_handshake(Config, [falco_quic_frame:max_stream_data(15, 1000)])).

%% §4.6, §19.8: a stream beyond the MAX_STREAMS we gave (100 bidirectional:
%% ids 0..396) is STREAM_LIMIT_ERROR.
stream_limit(Config) ->
    ?assertEqual({transport, ?STREAM_LIMIT_ERROR},
                 after_handshake(Config, [falco_quic_frame:stream(400, 0, nofin, <<"x">>)])).

%% §19.14: STREAMS_BLOCKED above 2^60 is FRAME_ENCODING_ERROR (the section
%% allows STREAM_LIMIT_ERROR too; falco's parser says the former).
streams_blocked_bad(Config) ->
    ?assertEqual({transport, ?FRAME_ENCODING_ERROR},
                 after_handshake(Config, [[<<16#16>>, v((1 bsl 60) + 1)]])).

%% §4.1, §19.8: data beyond the stream's window (256 KB by default) is
%% FLOW_CONTROL_ERROR.
flow_control_large_offset(Config) ->
    ?assertEqual({transport, ?FLOW_CONTROL_ERROR},
                 after_handshake(Config, [falco_quic_frame:stream(0, 1 bsl 20, nofin, <<"x">>)])).

%% §4.5: a final size that changes is FINAL_SIZE_ERROR.
final_size_changed(Config) ->
    ?assertEqual({transport, ?FINAL_SIZE_ERROR},
                 after_handshake(Config, [falco_quic_frame:stream(0, 100, fin, <<"abc">>),
                                          falco_quic_frame:stream(0, 0, fin, <<"x">>)])).

%% §4.5: a RESET_STREAM whose final size is below the data received is
%% FINAL_SIZE_ERROR.
final_size_reset_below(Config) ->
    ?assertEqual({transport, ?FINAL_SIZE_ERROR},
                 after_handshake(Config, [falco_quic_frame:stream(0, 100, nofin, <<"abc">>),
                                          falco_quic_frame:reset_stream(0, 16#10c, 50)])).

%% -- HTTP/3 (RFC 9114) and QPACK (RFC 9204) ------------------------------------

control(Frames) ->
    [falco_http3_frame:stream_header(control) | Frames].

%% Our own control stream (no automatic one), then the close.
on_control(Config, Bytes) ->
    S = connect(Config, #{control => false}),
    ok = ?C:send_stream(S, 2, Bytes, nofin),
    closed(S).

%% §6.2.1: the first frame of the control stream must be SETTINGS
%% (H3_MISSING_SETTINGS).
h3_missing_settings(Config) ->
    ?assertEqual({application, ?H3_MISSING_SETTINGS},
                 on_control(Config, control([falco_http3_frame:goaway(0)]))).

%% §6.2.1: a second control stream is H3_STREAM_CREATION_ERROR.
h3_second_control_stream(Config) ->
    S = connect(Config),
    ok = ?C:send_stream(S, 6, control([falco_http3_frame:settings(#{})]), nofin),
    ?assertEqual({application, ?H3_STREAM_CREATION_ERROR}, closed(S)).

%% §7.2.1: DATA on the control stream is H3_FRAME_UNEXPECTED.
h3_data_on_control(Config) ->
    ?assertEqual({application, ?H3_FRAME_UNEXPECTED},
                 on_control(Config, control([falco_http3_frame:settings(#{}),
                                             falco_http3_frame:data(<<"x">>)]))).

%% §7.2.2: HEADERS on the control stream is H3_FRAME_UNEXPECTED.
h3_headers_on_control(Config) ->
    Block = falco_qpack:encode(fields(<<"/">>)),
    ?assertEqual({application, ?H3_FRAME_UNEXPECTED},
                 on_control(Config, control([falco_http3_frame:settings(#{}),
                                             falco_http3_frame:headers(Block)]))).

%% §7.2.4: a second SETTINGS is H3_FRAME_UNEXPECTED.
h3_second_settings(Config) ->
    ?assertEqual({application, ?H3_FRAME_UNEXPECTED},
                 on_control(Config, control([falco_http3_frame:settings(#{}),
                                             falco_http3_frame:settings(#{})]))).

%% §7.2.8: HTTP/2's frame types (here 0x08, WINDOW_UPDATE) are
%% H3_FRAME_UNEXPECTED.
h3_h2_frame_on_control(Config) ->
    ?assertEqual({application, ?H3_FRAME_UNEXPECTED},
                 on_control(Config, control([falco_http3_frame:settings(#{}),
                                             <<16#08, 4, 0:32>>]))).

%% §6.2.1: the end of the control stream is H3_CLOSED_CRITICAL_STREAM.
h3_closed_control(Config) ->
    S = connect(Config),
    ok = ?C:send_stream(S, 2, <<>>, fin),
    ?assertEqual({application, ?H3_CLOSED_CRITICAL_STREAM}, closed(S)).

%% §7.2.4: the same setting twice is H3_SETTINGS_ERROR
%% (SETTINGS_MAX_FIELD_SECTION_SIZE, 0x06, written raw).
h3_duplicate_setting(Config) ->
    Payload = <<16#06, 16#40, 16#64, 16#06, 16#40, 16#64>>,
    ?assertEqual({application, ?H3_SETTINGS_ERROR},
                 on_control(Config, control([<<16#04, (byte_size(Payload))>>, Payload]))).

%% §7.2.4.1: HTTP/2's setting identifiers (0x02, ENABLE_PUSH) are
%% H3_SETTINGS_ERROR.
h3_h2_setting(Config) ->
    Payload = <<16#02, 0>>,
    ?assertEqual({application, ?H3_SETTINGS_ERROR},
                 on_control(Config, control([<<16#04, (byte_size(Payload))>>, Payload]))).

%% §4.1: DATA before HEADERS on a request stream is H3_FRAME_UNEXPECTED.
h3_data_before_headers(Config) ->
    S = connect(Config),
    ok = ?C:send_stream(S, 0, falco_http3_frame:data(<<"x">>), fin),
    ?assertEqual({application, ?H3_FRAME_UNEXPECTED}, closed(S)).

%% §7.2.3: CANCEL_PUSH on a request stream is H3_FRAME_UNEXPECTED.
h3_cancel_push_on_request(Config) ->
    S = connect(Config),
    ok = ?C:send_stream(S, 0, falco_http3_frame:cancel_push(0), fin),
    ?assertEqual({application, ?H3_FRAME_UNEXPECTED}, closed(S)).

%% §6.2.2: a push stream from the client is H3_STREAM_CREATION_ERROR.
h3_push_stream_from_client(Config) ->
    S = connect(Config),
    ok = ?C:send_stream(S, 6, <<16#01, 0>>, nofin),
    ?assertEqual({application, ?H3_STREAM_CREATION_ERROR}, closed(S)).

%% §4.1.2, §4.3: malformed requests are stream errors H3_MESSAGE_ERROR:
%% the server resets the stream (and stops it), the connection goes on,
%% and a GET after them works.
h3_malformed_requests(Config) ->
    Get = fields(<<"/">>),
    Cases = [{uppercase_name, Get ++ [{<<"X-Upper">>, <<"1">>}]},
             {missing_path, lists:keydelete(<<":path">>, 1, Get)},
             {missing_method, lists:keydelete(<<":method">>, 1, Get)},
             {connection_specific, Get ++ [{<<"connection">>, <<"keep-alive">>}]},
             {transfer_encoding, Get ++ [{<<"transfer-encoding">>, <<"chunked">>}]},
             {te_not_trailers, Get ++ [{<<"te">>, <<"gzip">>}]},
             {duplicate_pseudo, Get ++ [{<<":path">>, <<"/again">>}]},
             {pseudo_after_regular, [{<<"accept">>, <<"*/*">>} | Get]},
             {unknown_pseudo, Get ++ [{<<":protocol">>, <<"websocket">>}]},
             {response_pseudo, Get ++ [{<<":status">>, <<"200">>}]}],
    S = connect(Config),
    Ids = [Id || {Id, _} <- lists:zip(lists:seq(0, 4 * (length(Cases) - 1), 4), Cases)],
    [ok = ?C:request(S, Id, Fields, <<>>, fin) || {Id, {_, Fields}} <- lists:zip(Ids, Cases)],
    Result = ?C:recv_until(S, fun(#{resets := R}) ->
                                      lists:all(fun(Id) ->
                                                        lists:member({Id, reset_stream, ?H3_MESSAGE_ERROR}, R)
                                                end, Ids)
                              end, 3000),
    Resets = ?C:stream_resets(S),
    ct:pal("resets: ~p", [Resets]),
    [?assert(lists:member({Id, reset_stream, ?H3_MESSAGE_ERROR}, Resets), {Name, Id})
     || {Id, {Name, _}} <- lists:zip(Ids, Cases)],
    ?assertMatch({ok, _}, Result),
    get_ok(S, 4 * length(Cases), <<"/after">>),
    ?assertEqual(undefined, maps:get(close, ?C:view(S))),
    ?C:close(S).

%% RFC 9204 §4.5.2: a static index past the table (99 entries) is
%% QPACK_DECOMPRESSION_FAILED.
qpack_bad_static_index(Config) ->
    %% prefix 00 00; an indexed static field line, index 63 + 40
    Block = <<0, 0, 16#ff, 40>>,
    S = connect(Config),
    ok = ?C:send_stream(S, 0, falco_http3_frame:headers(Block), fin),
    ?assertEqual({application, ?QPACK_DECOMPRESSION_FAILED}, closed(S)).

%% RFC 9204 §4.3.1, §3.2.3: Set Dynamic Table Capacity above the maximum
%% we sent (0) is QPACK_ENCODER_STREAM_ERROR.
qpack_encoder_capacity(Config) ->
    S = connect(Config),
    ok = ?C:send_stream(S, 6, <<16#02, 16#21>>, nofin),
    ?assertEqual({application, ?QPACK_ENCODER_STREAM_ERROR}, closed(S)).

%% RFC 9204 §4.4.3: an Insert Count Increment of 0 is
%% QPACK_DECODER_STREAM_ERROR.
qpack_decoder_zero_increment(Config) ->
    S = connect(Config),
    ok = ?C:send_stream(S, 6, <<16#03, 16#00>>, nofin),
    ?assertEqual({application, ?QPACK_DECODER_STREAM_ERROR}, closed(S)).

%% -- what clients and networks do ---------------------------------------------

%% RFC 9000 §7.5, study section 6: Chromium's ClientHello, 24 CRYPTO pieces
%% out of order among PINGs over two Initial datagrams.
shuffled_crypto(Config) ->
    [begin
         S = connect(Config, #{shuffle => 24}),
         get_ok(S, 0, <<"/shuffled">>),
         ?C:close(S)
     end || _ <- lists:seq(1, 3)].

%% RFC 9000 §5.1, §7.2: a 0-byte client SCID (Chromium's): the server's
%% short headers carry an empty DCID.
scid_0(Config) ->
    S = connect(Config, #{scid_len => 0}),
    get_ok(S, 0, <<"/scid0">>),
    get_ok(S, 4, <<"/again">>),
    ?C:close(S).

%% RFC 9000 §17.2: 20-byte CIDs both ways (curl's).
cids_20(Config) ->
    S = connect(Config, #{scid_len => 20, dcid_len => 20}),
    get_ok(S, 0, <<"/cid20">>),
    ?C:close(S).

%% RFC 9000 §12.2, RFC 9001 §5.3, §9.5: a packet that fails authentication
%% is dropped and changes nothing. A request's packet sent truncated, and
%% with one bit flipped in each part (first byte, DCID, packet number,
%% payload, tag), and garbage: no close, no answer; then the same request
%% intact, and a later GET on the connection.
truncated_and_corrupted(Config) ->
    S = connect(Config),
    Headers = falco_http3_frame:headers(falco_qpack:encode(fields(<<"/intact">>))),
    {ok, Packet} = ?C:packet(S, one_rtt, [falco_quic_frame:stream(0, 0, fin, Headers)]),
    #{dcid := Dcid} = ?C:info(S),
    Size = byte_size(Packet),
    DcidEnd = 1 + byte_size(Dcid),
    Truncated = [binary:part(Packet, 0, N) || N <- [1, 5, DcidEnd, DcidEnd + 2, Size - 17, Size - 1]],
    Flips = [{first_byte, 0 * 8 + 7}, {fixed_bit, 1}, {dcid, 8 * 3 + 2},
             {packet_number, 8 * DcidEnd + 5}, {payload, 8 * (DcidEnd + 10) + 3},
             {tag, 8 * (Size - 3) + 6}],
    Corrupted = [flip(Packet, Bit) || {_, Bit} <- Flips],
    [ok = ?C:send_datagram(S, D) || D <- Truncated ++ Corrupted],
    %% empty, garbage and a long header cut short, to the same port
    [ok = ?C:send_datagram(S, D) || D <- [<<>>, crypto:strong_rand_bytes(1300), <<16#c0, 0, 0>>]],
    timer:sleep(300),
    View = ?C:view(S),
    ?assertEqual(undefined, maps:get(close, View)),
    ?assertEqual(#{}, maps:get(responses, View)),
    %% the same request in a packet of a later number (the server may
    %% forget packet numbers below those its acknowledged ACKs covered,
    %% RFC 9000 §12.3, so the old one could be taken for a duplicate)
    get_ok(S, 0, <<"/intact">>),
    get_ok(S, 4, <<"/later">>),
    ct:pal("~b truncated and ~b corrupted datagrams dropped (~p)",
           [length(Truncated), length(Corrupted), [N || {N, _} <- Flips]]),
    ?C:close(S).

flip(Bin, Bit) ->
    <<Before:Bit/bitstring, B:1, After/bitstring>> = Bin,
    <<Before/bitstring, (1 - B):1, After/bitstring>>.

%% RFC 9000 §14.1: a datagram of 1199 bytes carrying a client's first
%% Initial is dropped (no answer); the same at 1200 bytes is answered.
initial_1199(Config) ->
    Port = ?config(port, Config),
    Short = ?C:first_initial(#{}, 1199),
    ?assertEqual(1199, byte_size(Short)),
    ?assertEqual(timeout, answer(Port, Short)),
    Full = ?C:first_initial(#{}, 1200),
    ?assertEqual(1200, byte_size(Full)),
    ?assertMatch({ok, _}, answer(Port, Full)).

answer(Port, Datagram) ->
    {ok, Sock} = gen_udp:open(0, [binary, {active, false}, {ip, {127, 0, 0, 1}}]),
    try
        ok = gen_udp:send(Sock, {127, 0, 0, 1}, Port, Datagram),
        case gen_udp:recv(Sock, 65536, 700) of
            {ok, {_, _, Answer}} -> {ok, byte_size(Answer)};
            {error, timeout} -> timeout
        end
    after
        gen_udp:close(Sock)
    end.

%% RFC 9000 §6.1, §17.2.1: a server never acts on a Version Negotiation
%% packet; one from the client, to the connection's CID, is ignored.
version_negotiation_ignored(Config) ->
    S = connect(Config),
    #{dcid := Dcid, scid := Scid} = ?C:info(S),
    Vn = falco_quic_packet:version_negotiation(Dcid, Scid, [16#1a2a3a4a, 16#ff00001d]),
    ok = ?C:send_datagram(S, Vn),
    ok = ?C:send_datagram(S, iolist_to_binary([Vn, binary:copy(<<0>>, 1200)])),
    timer:sleep(100),
    get_ok(S, 0, <<"/after-vn">>),
    ?assertEqual(undefined, maps:get(close, ?C:view(S))),
    ?C:close(S).
