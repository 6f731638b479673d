%% EUnit tests of falco_quic_machine and falco_quic_send without a socket:
%% a client's first Initial (falco_test_tls13's ClientHello) in, the
%% server's datagrams read back with the Initial keys of the client's DCID.
-module(falco_quic_machine_tests).

-include_lib("eunit/include/eunit.hrl").

-define(M, falco_quic_machine).
-define(PEER, {{127, 0, 0, 1}, 40000}).

setup() ->
    Creds = falco_test_tls13:creds(ecdsa),
    Dcid = crypto:strong_rand_bytes(8),
    {Creds, Dcid}.

machine(Creds, Dcid, Quic) ->
    ?M:new(#{peer => ?PEER, dcid => Dcid, scid => <<"client01">>},
           #{tls => #{credentials => Creds, alpn => [<<"h3">>]}, scid => <<"server01">>,
             now => 0, quic => Quic}).

client_params() ->
    iolist_to_binary(falco_quic_tparams:encode(
                       #{initial_source_connection_id => <<"client01">>,
                         initial_max_data => 1 bsl 20, initial_max_stream_data_uni => 1 bsl 16,
                         initial_max_stream_data_bidi_local => 1 bsl 16,
                         initial_max_streams_uni => 3, max_idle_timeout => 5000})).

hello(Alpn) ->
    {Pub, _} = crypto:generate_key(ecdh, x25519),
    falco_test_tls13:client_hello(#{shares => [{29, Pub}], groups => [29],
                                    transport_params => client_params(), alpn => Alpn,
                                    random => crypto:strong_rand_bytes(32)}).

initial(Dcid, Payload) ->
    {Client, _} = falco_quic_keys:initial(Dcid),
    iolist_to_binary(falco_quic_packet:protect(#{type => initial, dcid => Dcid,
                                                 scid => <<"client01">>, token => <<>>},
                                               0, none, Payload, Client, 1200)).

datagrams(Acts) ->
    [iolist_to_binary(D) || {send, ?PEER, D} <- Acts].

%% The frames of the server's Initial packets in a datagram.
server_initial_frames(Dcid, Datagram) ->
    {_, Server} = falco_quic_keys:initial(Dcid),
    {Packets, _} = falco_quic_packet:split(Datagram, 8),
    lists:append([begin
                      {ok, _Pn, Payload} = falco_quic_packet:unprotect(P, Server, none),
                      {ok, Frames} = falco_quic_frame:parse(Payload, #{peer => server}),
                      Frames
                  end || P = #{type := initial} <- Packets]).

%% RFC 9000 §7, §14.1, §8.1: the answer to a ClientHello is the
%% ServerHello in an Initial and the rest of the flight in Handshake
%% packets, datagrams with an Initial padded to 1200 bytes, no more than
%% three times the 1200 bytes received before the address is validated.
first_flight_test() ->
    {Creds, Dcid} = setup(),
    {Q0, [{route, <<"server01">>}]} = machine(Creds, Dcid, #{}),
    In = initial(Dcid, falco_quic_frame:crypto(0, hello([<<"h3">>]))),
    {Q1, Acts} = ?M:datagram(1000, ?PEER, In, Q0),
    Out = datagrams(Acts),
    ?assert(length(Out) >= 1),
    ?assert(lists:sum([byte_size(D) || D <- Out]) =< 3 * byte_size(In)),
    [First | _] = Out,
    ?assertEqual(1200, byte_size(First)),
    Frames = server_initial_frames(Dcid, First),
    ?assertMatch([_ | _], [F || F = {ack, _, [{0, 0}], _} <- Frames]),
    [{crypto, 0, <<2, _/binary>>} | _] = [F || F = {crypto, _, _} <- Frames],
    ?assertEqual(handshake, ?M:phase(Q1)),
    ?assertMatch([{timer, T}] when is_integer(T), [A || A = {timer, _} <- Acts]).

%% RFC 9001 §8.1: no ALPN in common is CRYPTO_ERROR 0x178 (alert 120),
%% in an Initial CONNECTION_CLOSE, and the connection is closing.
no_h3_alpn_test() ->
    {Creds, Dcid} = setup(),
    {Q0, _} = machine(Creds, Dcid, #{}),
    In = initial(Dcid, falco_quic_frame:crypto(0, hello([<<"h2">>]))),
    {Q1, Acts} = ?M:datagram(1000, ?PEER, In, Q0),
    [Close] = datagrams(Acts),
    [{connection_close, Err, 16#06, _}] =
        [F || F = {connection_close, _, _, _} <- server_initial_frames(Dcid, Close)],
    ?assertEqual({crypto_error, no_application_protocol}, Err),
    ?assertEqual(16#178, falco_quic_error:code(Err)),
    ?assertEqual(closing, ?M:phase(Q1)),
    %% the close again for a packet that comes after (§10.2.1), then the end
    {Q2, Again} = ?M:datagram(2000, ?PEER, In, Q1),
    ?assertMatch([_], datagrams(Again)),
    {Q3, [{closed, _}]} = ?M:timeout(100000000, Q2),
    ?assertEqual(closed, ?M:phase(Q3)).

%% A handshake that does not finish within handshake_timeout ends.
handshake_deadline_test() ->
    {Creds, Dcid} = setup(),
    {Q0, _} = machine(Creds, Dcid, #{handshake_timeout => 50}),
    In = initial(Dcid, falco_quic_frame:crypto(0, hello([<<"h3">>]))),
    {Q1, _} = ?M:datagram(0, ?PEER, In, Q0),
    {_, Acts} = ?M:timeout(60000, Q1),
    ?assertEqual([{closed, handshake_timeout}], [A || A = {closed, _} <- Acts]).

%% Bytes that are no QUIC packet, or a packet that fails authentication,
%% change nothing and are not answered (RFC 9000 §12.2, RFC 9001 §5.5).
garbage_dropped_test() ->
    {Creds, Dcid} = setup(),
    {Q0, _} = machine(Creds, Dcid, #{}),
    {Q1, Acts1} = ?M:datagram(0, ?PEER, <<"not quic at all">>, Q0),
    ?assertEqual([], datagrams(Acts1)),
    In = initial(Dcid, falco_quic_frame:crypto(0, hello([<<"h3">>]))),
    Size = byte_size(In),
    Forged = <<(binary:part(In, 0, Size - 1))/binary, (binary:last(In) bxor 1)>>,
    {Q2, Acts2} = ?M:datagram(0, ?PEER, Forged, Q1),
    ?assertEqual([], datagrams(Acts2)),
    ?assertEqual(handshake, ?M:phase(Q2)),
    %% the genuine one is still taken
    {_, Acts3} = ?M:datagram(0, ?PEER, In, Q2),
    ?assertMatch([_ | _], datagrams(Acts3)).

%% The PTO (RFC 9002 §6.2.4): the flight unacknowledged is probed, within
%% the address limit.
probe_test() ->
    {Creds, Dcid} = setup(),
    {Q0, _} = machine(Creds, Dcid, #{}),
    In = initial(Dcid, falco_quic_frame:crypto(0, hello([<<"h3">>]))),
    {Q1, Acts1} = ?M:datagram(0, ?PEER, In, Q0),
    Sent1 = lists:sum([byte_size(D) || D <- datagrams(Acts1)]),
    [{timer, At}] = [A || A = {timer, _} <- Acts1],
    {_, Acts2} = ?M:timeout(At, Q1),
    Sent2 = lists:sum([byte_size(D) || D <- datagrams(Acts2)]),
    ?assert(Sent1 + Sent2 =< 3 * byte_size(In)).

%% RFC 8446 §4.1.4 over QUIC: a client offering P-256 without a share
%% gets a HelloRetryRequest in an Initial, and its second ClientHello
%% (at the next CRYPTO offset) with a P-256 share a ServerHello.
p256_through_hello_retry_test() ->
    {Creds, Dcid} = setup(),
    {Q0, _} = machine(Creds, Dcid, #{}),
    Opts = #{groups => [23], transport_params => client_params(), alpn => [<<"h3">>],
             random => crypto:strong_rand_bytes(32)},
    CH1 = falco_test_tls13:client_hello(Opts#{shares => []}),
    {Q1, Acts1} = ?M:datagram(0, ?PEER, initial(Dcid, falco_quic_frame:crypto(0, CH1)), Q0),
    [<<2, _:24, 3, 3, HrrRandom:32/binary, _/binary>>] =
        [B || D <- datagrams(Acts1), {crypto, 0, B} <- server_initial_frames(Dcid, D)],
    ?assertEqual(crypto:hash(sha256, <<"HelloRetryRequest">>), HrrRandom),
    {Pub, _} = crypto:generate_key(ecdh, secp256r1),
    CH2 = falco_test_tls13:client_hello(Opts#{shares => [{23, Pub}]}),
    {Client, _} = falco_quic_keys:initial(Dcid),
    In2 = iolist_to_binary(falco_quic_packet:protect(
                             #{type => initial, dcid => Dcid, scid => <<"client01">>, token => <<>>},
                             1, none, falco_quic_frame:crypto(byte_size(CH1), CH2), Client, 1200)),
    {_, Acts2} = ?M:datagram(1000, ?PEER, In2, Q1),
    [<<2, _:24, 3, 3, Random:32/binary, _/binary>>] =
        [B || D <- datagrams(Acts2), {crypto, _, B = <<2, _/binary>>} <- server_initial_frames(Dcid, D)],
    ?assertNotEqual(HrrRandom, Random).
