%% @doc The application error codes of HTTP/3 (RFC 9114 §8.1, 0x0100 to
%% 0x0110) and of QPACK (RFC 9204 §6, 0x0200 to 0x0202), both ways: the
%% atoms falco's HTTP/3 modules use, and the integers a QUIC RESET_STREAM,
%% STOP_SENDING or CONNECTION_CLOSE carries.
%%
%% A code we do not know, the reserved ones of `0x1f * N + 0x21' among
%% them, reads as `{unknown, Code}': RFC 9114 §8 says an unknown code is
%% to be treated as H3_NO_ERROR, which the caller does by not acting on it.
%%
%% @private internal to falco
-module(falco_http3_error).

-export([code/1, name/1]).

-export_type([code/0]).

-type code() :: h3_no_error | h3_general_protocol_error | h3_internal_error
              | h3_stream_creation_error | h3_closed_critical_stream | h3_frame_unexpected
              | h3_frame_error | h3_excessive_load | h3_id_error | h3_settings_error
              | h3_missing_settings | h3_request_rejected | h3_request_cancelled
              | h3_request_incomplete | h3_message_error | h3_connect_error
              | h3_version_fallback
              | qpack_decompression_failed | qpack_encoder_stream_error
              | qpack_decoder_stream_error.

%% @doc The integer of a code.
-spec code(code()) -> 16#0100..16#0110 | 16#0200..16#0202.
code(h3_no_error) -> 16#0100;
code(h3_general_protocol_error) -> 16#0101;
code(h3_internal_error) -> 16#0102;
code(h3_stream_creation_error) -> 16#0103;
code(h3_closed_critical_stream) -> 16#0104;
code(h3_frame_unexpected) -> 16#0105;
code(h3_frame_error) -> 16#0106;
code(h3_excessive_load) -> 16#0107;
code(h3_id_error) -> 16#0108;
code(h3_settings_error) -> 16#0109;
code(h3_missing_settings) -> 16#010a;
code(h3_request_rejected) -> 16#010b;
code(h3_request_cancelled) -> 16#010c;
code(h3_request_incomplete) -> 16#010d;
code(h3_message_error) -> 16#010e;
code(h3_connect_error) -> 16#010f;
code(h3_version_fallback) -> 16#0110;
code(qpack_decompression_failed) -> 16#0200;
code(qpack_encoder_stream_error) -> 16#0201;
code(qpack_decoder_stream_error) -> 16#0202.

%% @doc The code of an integer received, `{unknown, N}' for any other.
-spec name(non_neg_integer()) -> code() | {unknown, non_neg_integer()}.
name(16#0100) -> h3_no_error;
name(16#0101) -> h3_general_protocol_error;
name(16#0102) -> h3_internal_error;
name(16#0103) -> h3_stream_creation_error;
name(16#0104) -> h3_closed_critical_stream;
name(16#0105) -> h3_frame_unexpected;
name(16#0106) -> h3_frame_error;
name(16#0107) -> h3_excessive_load;
name(16#0108) -> h3_id_error;
name(16#0109) -> h3_settings_error;
name(16#010a) -> h3_missing_settings;
name(16#010b) -> h3_request_rejected;
name(16#010c) -> h3_request_cancelled;
name(16#010d) -> h3_request_incomplete;
name(16#010e) -> h3_message_error;
name(16#010f) -> h3_connect_error;
name(16#0110) -> h3_version_fallback;
name(16#0200) -> qpack_decompression_failed;
name(16#0201) -> qpack_encoder_stream_error;
name(16#0202) -> qpack_decoder_stream_error;
name(N) when is_integer(N), N >= 0 -> {unknown, N}.
