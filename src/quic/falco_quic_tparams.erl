%% @doc QUIC transport parameters (RFC 9000 §18; §7.3 connection ID
%% authentication; §7.4 for what a server checks of a client's; RFC 9221
%% §3's max_datagram_frame_size), the value of TLS's
%% quic_transport_parameters extension (RFC 9001 §8.2).
%%
%% {@link decode/1} reads a blob into a map of the parameters it holds,
%% checking each (its length matches its value, §18.2's bounds, no
%% parameter twice); unknown and GREASE parameters (§18.1) are skipped.
%% {@link from_client/2} is what a server does with a client's: decode,
%% refuse the server-only parameters, check initial_source_connection_id
%% against the Source Connection ID of the client's Initial, and fill in
%% §18.2's defaults. {@link from_server/2} is the client's side, for
%% falco's own test client. Every failure is
%% `{error, transport_parameter_error, Reason}', the connection error
%% §7.3, §7.4 and §18.2 ask for (the parameters arrive in CRYPTO frames,
%% so the CONNECTION_CLOSE's frame type is 0x06).
%%
%% {@link server/1} and {@link encode/1} write a map of parameters.
%%
%% Pure: binaries in, results out, never an exception for bad input.
%%
%% @private internal to falco
-module(falco_quic_tparams).

-export([decode/1, from_client/2, from_server/2, encode/1, server/1, defaults/0]).
-export_type([params/0, preferred_address/0, error/0]).

-define(MAX_STREAMS_LIMIT, 16#1000000000000000).  % 2^60 (§4.6)

-type cid() :: <<_:_*8>>.
-type preferred_address() :: #{ipv4 := {inet:ip4_address(), inet:port_number()},
                               ipv6 := {inet:ip6_address(), inet:port_number()},
                               connection_id := <<_:8, _:_*8>>,
                               stateless_reset_token := <<_:128>>}.
-type params() :: #{original_destination_connection_id => cid(),
                    max_idle_timeout => non_neg_integer(),
                    stateless_reset_token => <<_:128>>,
                    max_udp_payload_size => 1200..16#3fffffffffffffff,
                    initial_max_data => non_neg_integer(),
                    initial_max_stream_data_bidi_local => non_neg_integer(),
                    initial_max_stream_data_bidi_remote => non_neg_integer(),
                    initial_max_stream_data_uni => non_neg_integer(),
                    initial_max_streams_bidi => 0..?MAX_STREAMS_LIMIT,
                    initial_max_streams_uni => 0..?MAX_STREAMS_LIMIT,
                    ack_delay_exponent => 0..20,
                    max_ack_delay => 0..16383,
                    disable_active_migration => boolean(),
                    preferred_address => preferred_address(),
                    active_connection_id_limit => 2..16#3fffffffffffffff,
                    initial_source_connection_id => cid(),
                    retry_source_connection_id => cid(),
                    max_datagram_frame_size => non_neg_integer()}.
%% Reason: truncated_parameter, duplicate_parameter, or {What, Parameter}.
-type error() :: {error, transport_parameter_error,
                  truncated_parameter | duplicate_parameter
                  | {bad_value | bad_length | server_only | missing | mismatch | unexpected,
                     atom()}}.

%% §18.2's defaults for the parameters that have one.
-spec defaults() -> params().
defaults() ->
    #{max_idle_timeout => 0, max_udp_payload_size => 65527, initial_max_data => 0,
      initial_max_stream_data_bidi_local => 0, initial_max_stream_data_bidi_remote => 0,
      initial_max_stream_data_uni => 0, initial_max_streams_bidi => 0,
      initial_max_streams_uni => 0, ack_delay_exponent => 3, max_ack_delay => 25,
      disable_active_migration => false, active_connection_id_limit => 2,
      max_datagram_frame_size => 0}.

%% -- decoding ------------------------------------------------------------------

%% @doc The parameters a blob holds (no defaults), each checked alone.
-spec decode(binary()) -> {ok, params()} | error().
decode(Bin) when is_binary(Bin) ->
    decode(Bin, #{}, #{}).

decode(<<>>, _Seen, Acc) ->
    {ok, Acc};
decode(Bin, Seen, Acc) ->
    case id_and_value(Bin) of
        {ok, _, _, _} = Entry -> entry(Entry, Seen, Acc);
        more -> fail(truncated_parameter)
    end.

id_and_value(Bin) ->
    case falco_quic_varint:decode(Bin) of
        {Id, Rest0} ->
            case falco_quic_varint:decode(Rest0) of
                {Len, Rest1} when Len =< byte_size(Rest1) ->
                    <<Value:Len/binary, Rest/binary>> = Rest1,
                    {ok, Id, Value, Rest};
                _ ->
                    more
            end;
        more ->
            more
    end.

%% §18.2: "An endpoint SHOULD treat receipt of duplicate transport
%% parameters as a connection error of type TRANSPORT_PARAMETER_ERROR":
%% every id, known or not, counts.
entry({ok, Id, _, _}, Seen, _) when is_map_key(Id, Seen) ->
    fail(duplicate_parameter);
entry({ok, Id, Value, Rest}, Seen, Acc) ->
    case param(Id, Value) of
        {ok, Name, V} -> decode(Rest, Seen#{Id => true}, Acc#{Name => V});
        ignore -> decode(Rest, Seen#{Id => true}, Acc);
        {error, _, _} = Error -> Error
    end.

fail(Why) ->
    {error, transport_parameter_error, Why}.

%% One parameter's value by id (§18.2), or ignore for an unknown one.
param(16#00, V) -> cid(original_destination_connection_id, V);
param(16#01, V) -> int(max_idle_timeout, V, 0);
param(16#02, <<Token:16/binary>>) -> {ok, stateless_reset_token, Token};
param(16#02, _) -> fail({bad_length, stateless_reset_token});
param(16#03, V) -> int(max_udp_payload_size, V, 1200);
param(16#04, V) -> int(initial_max_data, V, 0);
param(16#05, V) -> int(initial_max_stream_data_bidi_local, V, 0);
param(16#06, V) -> int(initial_max_stream_data_bidi_remote, V, 0);
param(16#07, V) -> int(initial_max_stream_data_uni, V, 0);
param(16#08, V) -> int(initial_max_streams_bidi, V, 0, ?MAX_STREAMS_LIMIT);
param(16#09, V) -> int(initial_max_streams_uni, V, 0, ?MAX_STREAMS_LIMIT);
param(16#0a, V) -> int(ack_delay_exponent, V, 0, 20);
param(16#0b, V) -> int(max_ack_delay, V, 0, 16383);
param(16#0c, <<>>) -> {ok, disable_active_migration, true};
param(16#0c, _) -> fail({bad_length, disable_active_migration});
param(16#0d, V) -> preferred_address(V);
param(16#0e, V) -> int(active_connection_id_limit, V, 2);
param(16#0f, V) -> cid(initial_source_connection_id, V);
param(16#10, V) -> cid(retry_source_connection_id, V);
param(16#20, V) -> int(max_datagram_frame_size, V, 0);
param(_, _) -> ignore.

int(Name, V, Min) ->
    int(Name, V, Min, 16#3fffffffffffffff).

%% A varint that fills the value exactly, within [Min, Max] (§18.2:
%% ack_delay_exponent above 20, max_ack_delay of 2^14 or more,
%% max_udp_payload_size below 1200, active_connection_id_limit below 2;
%% §4.6: a stream count above 2^60).
int(Name, V, Min, Max) ->
    case falco_quic_varint:decode(V) of
        {N, <<>>} when N >= Min, N =< Max -> {ok, Name, N};
        {_, <<>>} -> fail({bad_value, Name});
        _ -> fail({bad_length, Name})
    end.

%% §17.2: a v1 connection ID is at most 20 bytes.
cid(Name, V) when byte_size(V) =< 20 -> {ok, Name, V};
cid(Name, _) -> fail({bad_value, Name}).

%% §18.2 Figure 22; a server with a zero-length connection ID must not
%% send one, so a Connection ID of 0 bytes is refused with the rest.
preferred_address(<<A:8, B:8, C:8, D:8, Port4:16, Ip6:16/binary, Port6:16, Len:8,
                    Rest/binary>>) when Len >= 1, Len =< 20, byte_size(Rest) =:= Len + 16 ->
    <<Cid:Len/binary, Token:16/binary>> = Rest,
    <<W1:16, W2:16, W3:16, W4:16, W5:16, W6:16, W7:16, W8:16>> = Ip6,
    {ok, preferred_address, #{ipv4 => {{A, B, C, D}, Port4},
                              ipv6 => {{W1, W2, W3, W4, W5, W6, W7, W8}, Port6},
                              connection_id => Cid, stateless_reset_token => Token}};
preferred_address(_) ->
    fail({bad_value, preferred_address}).

%% @doc A client's parameters as the server takes them: decoded, no
%% server-only parameter (§18.2), initial_source_connection_id present and
%% equal to the Source Connection ID of the client's first Initial (§7.3),
%% then §18.2's defaults for what is absent.
-spec from_client(binary(), cid()) -> {ok, params()} | error().
from_client(Bin, ClientScid) ->
    case decode(Bin) of
        {ok, Params} -> client_checks(Params, ClientScid);
        Error -> Error
    end.

client_checks(Params, ClientScid) ->
    ServerOnly = [original_destination_connection_id, preferred_address,
                  retry_source_connection_id, stateless_reset_token],
    case [K || K <- ServerOnly, is_map_key(K, Params)] of
        [K | _] ->
            fail({server_only, K});
        [] ->
            case authenticate(Params, initial_source_connection_id, ClientScid) of
                ok -> {ok, maps:merge(defaults(), Params)};
                Error -> Error
            end
    end.

%% §7.3: a parameter must be there, with the value the packets showed.
authenticate(Params, Name, Expected) ->
    case Params of
        #{Name := Expected} -> ok;
        #{Name := _} -> fail({mismatch, Name});
        #{} -> fail({missing, Name})
    end.

%% @doc A server's parameters as a client takes them (§7.3): the Destination
%% Connection ID of the client's first Initial, the server's Source
%% Connection ID, and the Retry's when one came (its absence then, or its
%% presence when none did, fails), then the defaults.
-spec from_server(binary(), #{original_destination_connection_id := cid(),
                               initial_source_connection_id := cid(),
                               retry_source_connection_id => cid()}) ->
          {ok, params()} | error().
from_server(Bin, Expected) ->
    case decode(Bin) of
        {ok, Params} -> server_checks(Params, Expected);
        Error -> Error
    end.

server_checks(Params, Expected) ->
    Names = [original_destination_connection_id, initial_source_connection_id
             | [retry_source_connection_id || is_map_key(retry_source_connection_id, Expected)]],
    case authenticate_all(Params, Names, Expected) of
        ok when not is_map_key(retry_source_connection_id, Expected),
                is_map_key(retry_source_connection_id, Params) ->
            fail({unexpected, retry_source_connection_id});
        ok ->
            {ok, maps:merge(defaults(), Params)};
        Error ->
            Error
    end.

authenticate_all(_Params, [], _Expected) ->
    ok;
authenticate_all(Params, [Name | Names], Expected) ->
    case authenticate(Params, Name, maps:get(Name, Expected)) of
        ok -> authenticate_all(Params, Names, Expected);
        Error -> Error
    end.

%% -- encoding ------------------------------------------------------------------

%% @doc The server's own parameters: the two connection IDs §7.3 requires
%% (original_destination_connection_id, the Destination Connection ID of
%% the client's first Initial; initial_source_connection_id, ours),
%% retry_source_connection_id when a Retry was sent, and whatever limits,
%% stateless_reset_token or disable_active_migration the map holds.
-spec server(params()) -> iodata().
server(#{original_destination_connection_id := _, initial_source_connection_id := _} = Params) ->
    encode(Params).

%% @doc Any parameters, in the order of their ids (a parameter equal to
%% its default is still written; disable_active_migration only when true).
-spec encode(params()) -> iodata().
encode(Params) ->
    [encode_param(Id, Name, maps:get(Name, Params))
     || {Id, Name} <- ids(), is_map_key(Name, Params)].

ids() ->
    [{16#00, original_destination_connection_id}, {16#01, max_idle_timeout},
     {16#02, stateless_reset_token}, {16#03, max_udp_payload_size},
     {16#04, initial_max_data}, {16#05, initial_max_stream_data_bidi_local},
     {16#06, initial_max_stream_data_bidi_remote}, {16#07, initial_max_stream_data_uni},
     {16#08, initial_max_streams_bidi}, {16#09, initial_max_streams_uni},
     {16#0a, ack_delay_exponent}, {16#0b, max_ack_delay},
     {16#0c, disable_active_migration}, {16#0d, preferred_address},
     {16#0e, active_connection_id_limit}, {16#0f, initial_source_connection_id},
     {16#10, retry_source_connection_id}, {16#20, max_datagram_frame_size}].

encode_param(_, disable_active_migration, false) ->
    [];
encode_param(Id, disable_active_migration, true) ->
    tlv(Id, <<>>);
encode_param(Id, preferred_address, Address) ->
    tlv(Id, preferred_address_value(Address));
encode_param(Id, _, V) when is_binary(V) ->
    tlv(Id, V);
encode_param(Id, _, V) when is_integer(V) ->
    tlv(Id, falco_quic_varint:encode(V)).

tlv(Id, Value) ->
    [falco_quic_varint:encode(Id), falco_quic_varint:encode(byte_size(Value)), Value].

preferred_address_value(#{ipv4 := {{A, B, C, D}, Port4},
                          ipv6 := {{W1, W2, W3, W4, W5, W6, W7, W8}, Port6},
                          connection_id := Cid, stateless_reset_token := <<_:16/binary>> = T}) ->
    <<A, B, C, D, Port4:16, W1:16, W2:16, W3:16, W4:16, W5:16, W6:16, W7:16, W8:16,
      Port6:16, (byte_size(Cid)), Cid/binary, T/binary>>.
