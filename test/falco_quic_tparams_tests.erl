%% EUnit tests for falco_quic_tparams: RFC 9001 A.2's client parameters,
%% the h3spec cases of the HTTP/3 study's §7 (each a
%% TRANSPORT_PARAMETER_ERROR), RFC 9000 §18.2's other bounds, lengths and
%% duplicates, §7.3's connection ID authentication both ways, defaults,
%% unknown and GREASE parameters, and the server's own parameters.
-module(falco_quic_tparams_tests).
-include_lib("eunit/include/eunit.hrl").

-define(T, falco_quic_tparams).
-define(SCID, <<16#c1, 16#1e, 16#47>>).

bin(IoData) -> iolist_to_binary(IoData).

%% One parameter, its value given as bytes.
p(Id, Value) ->
    [falco_quic_varint:encode(Id), falco_quic_varint:encode(byte_size(Value)), Value].

%% One integer parameter.
i(Id, N) -> p(Id, falco_quic_varint:encode(N)).

%% A valid client blob with Extra parameters after it.
client(Extra) ->
    bin([i(16#04, 1000000), p(16#0f, ?SCID), Extra]).

%% RFC 9001 A.2: the quic_transport_parameters extension of the example
%% ClientHello (its initial_source_connection_id is the 8-byte
%% 8394c8f03e515708).
rfc9001_client_parameters_test() ->
    Blob = binary:decode_hex(<<"0408ffffffffffffffff05048000ffff07048000ffff080110010480007530"
                               "0901100f088394c8f03e51570806048000ffff">>),
    Cid = binary:decode_hex(<<"8394c8f03e515708">>),
    Expected = #{initial_max_data => 16#3fffffffffffffff,
                 initial_max_stream_data_bidi_local => 65535,
                 initial_max_stream_data_uni => 65535, initial_max_streams_bidi => 16,
                 max_idle_timeout => 30000, initial_max_streams_uni => 16,
                 initial_source_connection_id => Cid,
                 initial_max_stream_data_bidi_remote => 65535},
    ?assertEqual({ok, Expected}, ?T:decode(Blob)),
    {ok, Full} = ?T:from_client(Blob, Cid),
    ?assertEqual(maps:merge(?T:defaults(), Expected), Full),
    ?assertEqual(25, maps:get(max_ack_delay, Full)),
    %% written back in id order: the same parameters
    ?assertEqual({ok, Expected}, ?T:decode(bin(?T:encode(Expected)))).

%% RFC 9000 §18.2's defaults.
defaults_test() ->
    {ok, P} = ?T:from_client(bin(p(16#0f, ?SCID)), ?SCID),
    ?assertEqual(#{initial_source_connection_id => ?SCID, max_idle_timeout => 0,
                   max_udp_payload_size => 65527, initial_max_data => 0,
                   initial_max_stream_data_bidi_local => 0,
                   initial_max_stream_data_bidi_remote => 0, initial_max_stream_data_uni => 0,
                   initial_max_streams_bidi => 0, initial_max_streams_uni => 0,
                   ack_delay_exponent => 3, max_ack_delay => 25,
                   disable_active_migration => false, active_connection_id_limit => 2,
                   max_datagram_frame_size => 0}, P).

%% h3spec's TRANSPORT_PARAMETER_ERROR cases, as it builds them.
h3spec_test_() ->
    Err = fun(Blob) -> ?T:from_client(Blob, ?SCID) end,
    [%% "MUST send TRANSPORT_PARAMETER_ERROR if initial_source_connection_id is
     %% missing [Transport 7.3]"
     ?_assertEqual({error, transport_parameter_error, {missing, initial_source_connection_id}},
                   Err(bin(i(16#04, 100)))),
     %% "... if original_destination_connection_id is received [Transport 18.2]"
     ?_assertEqual({error, transport_parameter_error,
                    {server_only, original_destination_connection_id}},
                   Err(client(p(16#00, <<"DUMMY">>)))),
     %% "... if preferred_address, is received [Transport 18.2]"
     ?_assertEqual({error, transport_parameter_error, {server_only, preferred_address}},
                   Err(client(p(16#0d, <<127, 0, 0, 1, 1, 187, 0:128, 0, 0, 8, 0, 1, 2, 3, 4, 5,
                                         6, 7, 0:128>>)))),
     %% "... if retry_source_connection_id is received [Transport 18.2]"
     ?_assertEqual({error, transport_parameter_error, {server_only, retry_source_connection_id}},
                   Err(client(p(16#10, <<"DUMMY">>)))),
     %% "... if stateless_reset_token is received [Transport 18.2]": h3spec's
     %% is 5 bytes, so its length fails first; a 16-byte one is refused too
     ?_assertEqual({error, transport_parameter_error, {bad_length, stateless_reset_token}},
                   Err(client(p(16#02, <<"DUMMY">>)))),
     ?_assertEqual({error, transport_parameter_error, {server_only, stateless_reset_token}},
                   Err(client(p(16#02, <<0:128>>)))),
     %% "... if max_udp_payload_size < 1200 [Transport 7.4 and 18.2]" (1090)
     ?_assertEqual({error, transport_parameter_error, {bad_value, max_udp_payload_size}},
                   Err(client(i(16#03, 1090)))),
     %% "... if ack_delay_exponen > 20 [Transport 7.4 and 18.2]" (30)
     ?_assertEqual({error, transport_parameter_error, {bad_value, ack_delay_exponent}},
                   Err(client(i(16#0a, 30)))),
     %% "... if max_ack_delay >= 2^14 [Transport 7.4 and 18.2]" (2^15)
     ?_assertEqual({error, transport_parameter_error, {bad_value, max_ack_delay}},
                   Err(client(i(16#0b, 1 bsl 15))))].

%% RFC 9000 §18.2: the bounds at their edges.
bounds_test_() ->
    Ok = fun(Blob) -> element(1, ?T:from_client(client(Blob), ?SCID)) end,
    Bad = fun(Blob) -> element(3, ?T:from_client(client(Blob), ?SCID)) end,
    [?_assertEqual(ok, Ok(i(16#03, 1200))),
     ?_assertEqual({bad_value, max_udp_payload_size}, Bad(i(16#03, 1199))),
     ?_assertEqual(ok, Ok(i(16#0a, 20))),
     ?_assertEqual({bad_value, ack_delay_exponent}, Bad(i(16#0a, 21))),
     ?_assertEqual(ok, Ok(i(16#0b, 16383))),
     ?_assertEqual({bad_value, max_ack_delay}, Bad(i(16#0b, 16384))),
     ?_assertEqual(ok, Ok(i(16#0e, 2))),
     ?_assertEqual({bad_value, active_connection_id_limit}, Bad(i(16#0e, 1))),
     ?_assertEqual({bad_value, active_connection_id_limit}, Bad(i(16#0e, 0))),
     %% §4.6: stream counts above 2^60
     ?_assertEqual(ok, Ok(i(16#08, 1 bsl 60))),
     ?_assertEqual({bad_value, initial_max_streams_bidi}, Bad(i(16#08, (1 bsl 60) + 1))),
     ?_assertEqual({bad_value, initial_max_streams_uni}, Bad(i(16#09, (1 bsl 60) + 1))),
     %% a connection ID of more than 20 bytes
     ?_assertEqual({bad_value, initial_source_connection_id},
                   element(3, ?T:from_client(bin(p(16#0f, <<0:168>>)), <<0:168>>))),
     ?_assertEqual(ok, Ok(p(16#0c, <<>>))),
     ?_assertEqual(ok, Ok(i(16#20, 65535)))].

%% RFC 9000 §18: a value must fill its length exactly.
lengths_test_() ->
    Bad = fun(Blob) -> ?T:from_client(client(Blob), ?SCID) end,
    [%% a varint with a byte after it
     ?_assertEqual({error, transport_parameter_error, {bad_length, initial_max_stream_data_bidi_local}},
                   Bad(p(16#05, <<5, 0>>))),
     %% a varint longer than the length
     ?_assertEqual({error, transport_parameter_error, {bad_length, max_idle_timeout}},
                   Bad(p(16#01, <<16#80, 0>>))),
     ?_assertEqual({error, transport_parameter_error, {bad_length, max_idle_timeout}},
                   Bad(p(16#01, <<>>))),
     ?_assertEqual({error, transport_parameter_error, {bad_length, disable_active_migration}},
                   Bad(p(16#0c, <<1>>))),
     %% a length past the end of the blob
     ?_assertEqual({error, transport_parameter_error, truncated_parameter},
                   Bad(<<16#04, 8, 0, 0>>)),
     ?_assertEqual({error, transport_parameter_error, truncated_parameter}, Bad(<<16#40>>)),
     %% a longer encoding than needed is still the value (§16)
     ?_assertMatch({ok, #{initial_max_data := 37}},
                   ?T:from_client(bin([p(16#0f, ?SCID), p(16#04, <<16#40, 37>>)]), ?SCID))].

%% RFC 9000 §18.2: duplicates, known or not.
duplicates_test_() ->
    Dup = {error, transport_parameter_error, duplicate_parameter},
    [?_assertEqual(Dup, ?T:from_client(client(i(16#04, 5)), ?SCID)),
     ?_assertEqual(Dup, ?T:from_client(client([p(16#1234, <<1>>), p(16#1234, <<2>>)]), ?SCID)),
     ?_assertEqual(Dup, ?T:from_client(client(p(16#0f, ?SCID)), ?SCID))].

%% RFC 9000 §18.1: unknown and reserved (31 * N + 27) parameters are ignored.
unknown_and_grease_test() ->
    Grease = [p(31 * N + 27, crypto:strong_rand_bytes(N)) || N <- [0, 1, 7, 1000]],
    Blob = client([Grease, p(16#ff73db, <<"version info">>), p(16#11, <<0, 0, 0, 1>>)]),
    ?assertEqual({ok, #{initial_max_data => 1000000, initial_source_connection_id => ?SCID}},
                 ?T:decode(Blob)).

%% RFC 9000 §7.3: initial_source_connection_id equal to the client's SCID,
%% including a zero-length one.
client_authentication_test() ->
    ?assertEqual({error, transport_parameter_error, {mismatch, initial_source_connection_id}},
                 ?T:from_client(client([]), <<1, 2, 3>>)),
    ?assertMatch({ok, #{initial_source_connection_id := <<>>}},
                 ?T:from_client(bin(p(16#0f, <<>>)), <<>>)),
    ?assertEqual({error, transport_parameter_error, {mismatch, initial_source_connection_id}},
                 ?T:from_client(bin(p(16#0f, <<>>)), <<0>>)).

server_params() ->
    #{original_destination_connection_id => <<1, 2, 3, 4, 5, 6, 7, 8>>,
      initial_source_connection_id => <<9, 9, 9, 9, 9, 9, 9, 9>>,
      stateless_reset_token => <<7:128>>,
      max_idle_timeout => 30000, max_udp_payload_size => 1472, initial_max_data => 1 bsl 24,
      initial_max_stream_data_bidi_local => 1 bsl 20,
      initial_max_stream_data_bidi_remote => 1 bsl 20,
      initial_max_stream_data_uni => 1 bsl 20, initial_max_streams_bidi => 100,
      initial_max_streams_uni => 3, ack_delay_exponent => 3, max_ack_delay => 25,
      active_connection_id_limit => 4, disable_active_migration => true}.

%% The server's own parameters: what from_server/2 reads back, with
%% §7.3's checks from the client's side.
server_round_trip_test() ->
    P = server_params(),
    Blob = bin(?T:server(P)),
    Expect = maps:with([original_destination_connection_id, initial_source_connection_id], P),
    ?assertEqual({ok, maps:merge(?T:defaults(), P)}, ?T:from_server(Blob, Expect)),
    ?assertEqual({error, transport_parameter_error, {mismatch, original_destination_connection_id}},
                 ?T:from_server(Blob, Expect#{original_destination_connection_id => <<0>>})),
    %% a Retry was sent, so retry_source_connection_id must be there
    ?assertEqual({error, transport_parameter_error, {missing, retry_source_connection_id}},
                 ?T:from_server(Blob, Expect#{retry_source_connection_id => <<5, 5>>})),
    Retried = bin(?T:server(P#{retry_source_connection_id => <<5, 5>>})),
    ?assertMatch({ok, #{retry_source_connection_id := <<5, 5>>}},
                 ?T:from_server(Retried, Expect#{retry_source_connection_id => <<5, 5>>})),
    ?assertEqual({error, transport_parameter_error, {unexpected, retry_source_connection_id}},
                 ?T:from_server(Retried, Expect)),
    %% a client's server-only check refuses the server's blob
    ?assertMatch({error, transport_parameter_error, {server_only, _}},
                 ?T:from_client(Blob, <<9, 9, 9, 9, 9, 9, 9, 9>>)),
    ?assertEqual({error, transport_parameter_error, truncated_parameter},
                 ?T:from_server(<<Blob/binary, 16#40>>, Expect)),
    %% false is the default, so it is not written
    ?assertEqual(bin(?T:server(maps:remove(disable_active_migration, P))),
                 bin(?T:server(P#{disable_active_migration => false}))).

%% RFC 9000 §18.2 Figure 22.
preferred_address_test() ->
    Address = #{ipv4 => {{192, 0, 2, 1}, 443}, ipv6 => {{16#2001, 16#db8, 0, 0, 0, 0, 0, 1}, 4433},
                connection_id => <<1, 2, 3, 4>>, stateless_reset_token => <<42:128>>},
    Blob = bin(?T:encode(#{preferred_address => Address})),
    ?assertEqual({ok, #{preferred_address => Address}}, ?T:decode(Blob)),
    Zero = bin(p(16#0d, <<192, 0, 2, 1, 1, 187, 0:128, 0, 0, 0, 42:128>>)),
    ?assertEqual({error, transport_parameter_error, {bad_value, preferred_address}},
                 ?T:decode(Zero)),
    Short = bin(p(16#0d, <<192, 0, 2, 1, 1, 187, 0:128, 0, 0, 4, 1, 2, 3, 4, 42:120>>)),
    ?assertEqual({error, transport_parameter_error, {bad_value, preferred_address}},
                 ?T:decode(Short)).

empty_blob_test() ->
    ?assertEqual({ok, #{}}, ?T:decode(<<>>)),
    ?assertEqual({error, transport_parameter_error, {missing, initial_source_connection_id}},
                 ?T:from_client(<<>>, <<>>)).
