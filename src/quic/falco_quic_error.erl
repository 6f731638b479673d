%% @doc QUIC's transport error codes (RFC 9000 §20.1, and RFC 9368 §10.2's
%% VERSION_NEGOTIATION_ERROR), both ways: the atom falco's QUIC modules
%% use and the integer a CONNECTION_CLOSE frame of type 0x1c carries. The
%% range 0x0100-0x01ff is CRYPTO_ERROR, a TLS alert carried as
%% `0x0100 + Alert' (RFC 9001 §4.8); it is `{crypto_error, Alert}' here,
%% with the alert's RFC 8446 §6 name when it has one. {@link text/1} gives
%% the RFC's upper-case name for logs.
%%
%% Application error codes (CONNECTION_CLOSE 0x1d, RESET_STREAM,
%% STOP_SENDING) belong to the application protocol: HTTP/3's have their
%% own helper, and this module leaves them alone.
%%
%% Pure; a code nobody registered is kept as `{unknown, N}' (§20.1: an
%% unknown code means no more than a generic error).
%%
%% @private internal to falco
-module(falco_quic_error).

-export([code/1, name/1, crypto_error/1, text/1]).
-export_type([error/0, alert/0]).

%% a TLS alert: its name (falco_tls13_alert, the one table of them) or,
%% for a code RFC 8446 does not name, its number
-type alert() :: falco_tls13_alert:alert() | 0..255.
-type error() :: no_error | internal_error | connection_refused | flow_control_error
               | stream_limit_error | stream_state_error | final_size_error
               | frame_encoding_error | transport_parameter_error
               | connection_id_limit_error | protocol_violation | invalid_token
               | application_error | crypto_buffer_exceeded | key_update_error
               | aead_limit_reached | no_viable_path | version_negotiation_error
               | {crypto_error, alert()} | {unknown, non_neg_integer()}.

%% @doc The wire value of a transport error (for CONNECTION_CLOSE 0x1c).
-spec code(error()) -> non_neg_integer().
code({crypto_error, Alert}) -> crypto_error(Alert);
code({unknown, N}) when is_integer(N), N >= 0 -> N;
code(Name) -> transport(Name).

transport(no_error) -> 16#00;
transport(internal_error) -> 16#01;
transport(connection_refused) -> 16#02;
transport(flow_control_error) -> 16#03;
transport(stream_limit_error) -> 16#04;
transport(stream_state_error) -> 16#05;
transport(final_size_error) -> 16#06;
transport(frame_encoding_error) -> 16#07;
transport(transport_parameter_error) -> 16#08;
transport(connection_id_limit_error) -> 16#09;
transport(protocol_violation) -> 16#0a;
transport(invalid_token) -> 16#0b;
transport(application_error) -> 16#0c;
transport(crypto_buffer_exceeded) -> 16#0d;
transport(key_update_error) -> 16#0e;
transport(aead_limit_reached) -> 16#0f;
transport(no_viable_path) -> 16#10;
transport(version_negotiation_error) -> 16#11.

%% @doc The name of a wire transport error: a registered code, a
%% CRYPTO_ERROR with its alert, or `{unknown, N}'.
-spec name(non_neg_integer()) -> error().
name(N) when N >= 16#0100, N =< 16#01ff -> {crypto_error, alert_name(N - 16#0100)};
name(N) when is_integer(N), N >= 0, N =< 16#11 -> element(N + 1, names());
name(N) when is_integer(N), N >= 0 -> {unknown, N}.

names() ->
    {no_error, internal_error, connection_refused, flow_control_error, stream_limit_error,
     stream_state_error, final_size_error, frame_encoding_error, transport_parameter_error,
     connection_id_limit_error, protocol_violation, invalid_token, application_error,
     crypto_buffer_exceeded, key_update_error, aead_limit_reached, no_viable_path,
     version_negotiation_error}.

%% @doc The CRYPTO_ERROR code that carries a TLS alert (RFC 9001 §4.8),
%% from the alert's number or its RFC 8446 §6 name.
-spec crypto_error(alert()) -> 16#0100..16#01ff.
crypto_error(Alert) when is_integer(Alert), Alert >= 0, Alert =< 255 -> 16#0100 + Alert;
crypto_error(Alert) when is_atom(Alert) -> 16#0100 + alert_code(Alert).

alert_code(Name) ->
    falco_tls13_alert:code(Name).

alert_name(Code) ->
    case falco_tls13_alert:from_code(Code) of
        unknown -> Code;
        Name -> Name
    end.

%% @doc The RFC's name of an error, for logs: `<<"FRAME_ENCODING_ERROR">>',
%% `<<"CRYPTO_ERROR(no_application_protocol)">>', `<<"0x4242">>'.
-spec text(error() | non_neg_integer()) -> binary().
text(N) when is_integer(N) -> text(name(N));
text({unknown, N}) -> iolist_to_binary(io_lib:format("0x~.16b", [N]));
text({crypto_error, Alert}) when is_atom(Alert) ->
    <<"CRYPTO_ERROR(", (atom_to_binary(Alert))/binary, ")">>;
text({crypto_error, Alert}) ->
    <<"CRYPTO_ERROR(", (integer_to_binary(Alert))/binary, ")">>;
text(Name) when is_atom(Name) ->
    _ = transport(Name),
    list_to_binary(string:to_upper(atom_to_list(Name))).
