%% EUnit tests for falco_quic_error: RFC 9000 §20.1's codes both ways,
%% RFC 9001 §4.8's CRYPTO_ERROR from TLS alerts, unknown codes, log names.
-module(falco_quic_error_tests).
-include_lib("eunit/include/eunit.hrl").

-define(E, falco_quic_error).

%% RFC 9000 §20.1 (and RFC 9368 §10.2 for 0x11).
codes() ->
    [{no_error, 16#00}, {internal_error, 16#01}, {connection_refused, 16#02},
     {flow_control_error, 16#03}, {stream_limit_error, 16#04}, {stream_state_error, 16#05},
     {final_size_error, 16#06}, {frame_encoding_error, 16#07},
     {transport_parameter_error, 16#08}, {connection_id_limit_error, 16#09},
     {protocol_violation, 16#0a}, {invalid_token, 16#0b}, {application_error, 16#0c},
     {crypto_buffer_exceeded, 16#0d}, {key_update_error, 16#0e}, {aead_limit_reached, 16#0f},
     {no_viable_path, 16#10}, {version_negotiation_error, 16#11}].

both_ways_test_() ->
    [?_assertEqual({Code, Name}, {?E:code(Name), ?E:name(Code)}) || {Name, Code} <- codes()].

%% RFC 9001 §4.8: 0x0100 + the alert; the study's §8 names two of them:
%% no_application_protocol (120) is 0x178, missing_extension (109) 0x16d.
crypto_error_test() ->
    ?assertEqual(16#178, ?E:crypto_error(no_application_protocol)),
    ?assertEqual(16#178, ?E:crypto_error(120)),
    ?assertEqual(16#16d, ?E:crypto_error(missing_extension)),
    ?assertEqual(16#10a, ?E:code({crypto_error, unexpected_message})),
    ?assertEqual(16#128, ?E:code({crypto_error, handshake_failure})),
    ?assertEqual({crypto_error, no_application_protocol}, ?E:name(16#178)),
    ?assertEqual({crypto_error, 255}, ?E:name(16#1ff)),
    ?assertEqual(16#1ff, ?E:code({crypto_error, 255})),
    ?assertEqual({crypto_error, close_notify}, ?E:name(16#100)).

unknown_test() ->
    ?assertEqual({unknown, 16#12}, ?E:name(16#12)),
    ?assertEqual({unknown, 16#200}, ?E:name(16#200)),
    ?assertEqual({unknown, 16#3fffffffffffffff}, ?E:name(16#3fffffffffffffff)),
    ?assertEqual(16#4242, ?E:code({unknown, 16#4242})).

text_test() ->
    ?assertEqual(<<"FRAME_ENCODING_ERROR">>, ?E:text(frame_encoding_error)),
    ?assertEqual(<<"NO_ERROR">>, ?E:text(0)),
    ?assertEqual(<<"CRYPTO_ERROR(no_application_protocol)">>, ?E:text(16#178)),
    ?assertEqual(<<"CRYPTO_ERROR(200)">>, ?E:text(16#1c8)),
    ?assertEqual(<<"0x4242">>, ?E:text(16#4242)),
    [?assert(is_binary(?E:text(N))) || {_, N} <- codes()].
