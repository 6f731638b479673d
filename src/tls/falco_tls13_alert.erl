%% @doc TLS alerts (RFC 8446 §6): the names falco's TLS 1.3 modules
%% return when they refuse a peer, their one-byte codes (the one table of
%% them: QUIC's CRYPTO_ERROR, RFC 9001 §4.8, is made from it by
%% falco_quic_error) and the two-byte alert a TCP record layer sends.
%% Pure.
%%
%% @private internal to falco
-module(falco_tls13_alert).

-export([code/1, from_code/1, encode/1]).
-export_type([alert/0]).

-type alert() :: close_notify | unexpected_message | bad_record_mac | record_overflow
               | handshake_failure | bad_certificate | unsupported_certificate
               | certificate_revoked | certificate_expired | certificate_unknown
               | illegal_parameter | unknown_ca | access_denied | decode_error
               | decrypt_error | protocol_version | insufficient_security | internal_error
               | inappropriate_fallback | user_canceled | missing_extension
               | unsupported_extension | unrecognized_name | bad_certificate_status_response
               | unknown_psk_identity | certificate_required | no_application_protocol.

%% @doc The alert's AlertDescription value (RFC 8446 §6).
-spec code(alert()) -> 0..255.
code(close_notify) -> 0;
code(unexpected_message) -> 10;
code(bad_record_mac) -> 20;
code(record_overflow) -> 22;
code(handshake_failure) -> 40;
code(bad_certificate) -> 42;
code(unsupported_certificate) -> 43;
code(certificate_revoked) -> 44;
code(certificate_expired) -> 45;
code(certificate_unknown) -> 46;
code(illegal_parameter) -> 47;
code(unknown_ca) -> 48;
code(access_denied) -> 49;
code(decode_error) -> 50;
code(decrypt_error) -> 51;
code(protocol_version) -> 70;
code(insufficient_security) -> 71;
code(internal_error) -> 80;
code(inappropriate_fallback) -> 86;
code(user_canceled) -> 90;
code(missing_extension) -> 109;
code(unsupported_extension) -> 110;
code(unrecognized_name) -> 112;
code(bad_certificate_status_response) -> 113;
code(unknown_psk_identity) -> 115;
code(certificate_required) -> 116;
code(no_application_protocol) -> 120.

%% @doc The alert of a code a peer sent, `unknown' for a code RFC 8446
%% does not name.
-spec from_code(0..255) -> alert() | unknown.
from_code(Code) ->
    case lists:keyfind(Code, 1, [{code(A), A} || A <- all()]) of
        {_, A} -> A;
        false -> unknown
    end.

%% @doc The alert as a record layer sends it: level and description.
%% TLS 1.3 ignores the level, but close_notify and user_canceled are the
%% only ones that are not errors (§6), so only they say warning (1).
-spec encode(alert()) -> <<_:16>>.
encode(Alert) when Alert =:= close_notify; Alert =:= user_canceled ->
    <<1, (code(Alert))>>;
encode(Alert) ->
    <<2, (code(Alert))>>.

all() ->
    [close_notify, unexpected_message, bad_record_mac, record_overflow, handshake_failure,
     bad_certificate, unsupported_certificate, certificate_revoked, certificate_expired,
     certificate_unknown, illegal_parameter, unknown_ca, access_denied, decode_error,
     decrypt_error, protocol_version, insufficient_security, internal_error,
     inappropriate_fallback, user_canceled, missing_extension, unsupported_extension,
     unrecognized_name, bad_certificate_status_response, unknown_psk_identity,
     certificate_required, no_application_protocol].
