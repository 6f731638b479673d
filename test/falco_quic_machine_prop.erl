%% PropEr properties for falco_quic_machine (and falco_quic_send): a
%% connection that took a genuine first Initial is fed datagrams a
%% hostile client could send (arbitrary bytes; Initial packets protected
%% with the real Initial keys whose payload is arbitrary bytes or frames
%% of every kind with arbitrary fields: CRYPTO at any offset, ACK ranges,
%% stream and close frames, pieces of the real ClientHello again; short
%% headers with our connection ID) and timers at arbitrary times: the
%% machine never raises, every action has a documented shape, every
%% datagram it sends is at most 1350 bytes and, until the client's
%% address is validated, everything it sent is at most three times what
%% it received. Run from EUnit, 300 cases (falco_fuzz_prop:numtests/3
%% gives more under make fuzz).
-module(falco_quic_machine_prop).
-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-export([prop_datagram_fuzz/0]).

-define(NUMTESTS, 300).
-define(M, falco_quic_machine).
-define(PEER, {{127, 0, 0, 1}, 40000}).
-define(DCID, <<"fuzzdcid">>).

properties_test_() ->
    [{atom_to_list(P),
      {timeout, 300,
       ?_assert(proper:quickcheck(?MODULE:P(), [{numtests, falco_fuzz_prop:numtests(?MODULE, P, ?NUMTESTS)},
                                                {to_file, user}]))}}
     || P <- [prop_datagram_fuzz]].

%% -- the connection ---------------------------------------------------------------

hello() ->
    case persistent_term:get({?MODULE, hello}, undefined) of
        undefined ->
            {Pub, _} = crypto:generate_key(ecdh, x25519),
            Params = iolist_to_binary(falco_quic_tparams:encode(
                                        #{initial_source_connection_id => <<"client01">>,
                                          initial_max_data => 1 bsl 20,
                                          initial_max_stream_data_bidi_local => 1 bsl 16,
                                          initial_max_stream_data_uni => 1 bsl 16,
                                          initial_max_streams_uni => 3})),
            CH = falco_test_tls13:client_hello(#{shares => [{29, Pub}], groups => [29],
                                                 transport_params => Params, alpn => [<<"h3">>],
                                                 random => crypto:strong_rand_bytes(32)}),
            persistent_term:put({?MODULE, hello}, CH),
            CH;
        CH ->
            CH
    end.

initial(Payload) ->
    {Client, _} = falco_quic_keys:initial(?DCID),
    iolist_to_binary(falco_quic_packet:protect(#{type => initial, dcid => ?DCID,
                                                 scid => <<"client01">>, token => <<>>},
                                               0, none, Payload, Client, 1200)).

initial(Pn, Payload) ->
    {Client, _} = falco_quic_keys:initial(?DCID),
    iolist_to_binary(falco_quic_packet:protect(#{type => initial, dcid => ?DCID,
                                                 scid => <<"client01">>, token => <<>>},
                                               Pn, none, Payload, Client, 1200)).

started() ->
    {Q0, _} = ?M:new(#{peer => ?PEER, dcid => ?DCID, scid => <<"client01">>},
                     #{tls => #{credentials => falco_test_tls13:creds(ecdsa), alpn => [<<"h3">>]},
                       scid => <<"server01">>, now => 0, quic => #{}}),
    First = initial(falco_quic_frame:crypto(0, hello())),
    {Q, Acts} = ?M:datagram(0, ?PEER, First, Q0),
    {Q, Acts, byte_size(First)}.

%% -- generators ---------------------------------------------------------------------

varint() -> oneof([range(0, 63), range(0, 16383), range(0, 1 bsl 30), range(0, 1 bsl 62 - 1)]).

frame() ->
    oneof([{padding, range(1, 40)},
           ping,
           ?LET({Lo, Len, Delay}, {range(0, 50), range(0, 10), varint()},
                {ack, Delay, [{Lo, Lo + Len}], undefined}),
           ?LET({Off, Len}, {range(0, 3000), range(0, 300)}, hello_piece(Off, Len)),
           ?LET({Off, B}, {varint(), binary()}, {crypto, Off, B}),
           ?LET({Id, Off, Fin, B}, {varint(), varint(), oneof([fin, nofin]), binary()},
                {stream, Id, Off, Fin, B}),
           ?LET({Code, Type}, {varint(), varint()}, {connection_close, {unknown, Code}, Type, <<>>}),
           ?LET({Id, Code, Final}, {varint(), varint(), varint()}, {reset_stream, Id, Code, Final}),
           ?LET(N, varint(), {max_data, N}),
           ?LET(D, binary(8), {path_challenge, D})]).

%% A piece of the real ClientHello at its offset (or past its end).
hello_piece(Off, Len) ->
    H = hello(),
    At = min(Off, byte_size(H)),
    {crypto, Off, binary:part(H, At, min(Len, byte_size(H) - At))}.

datagram() ->
    oneof([binary(),
           ?LET(B, binary(), initial(B)),
           ?LET({Pn, Fs}, {range(1, 40), non_empty(list(frame()))},
                initial(Pn, [falco_quic_frame:build(F) || F <- Fs])),
           ?LET(B, binary(), <<16#40, "server01", B/binary>>),
           ?LET(B, binary(), <<16#e0, 1:32, 8, "server01", 8, "client01", B/binary>>)]).

event() ->
    frequency([{6, {datagram, range(0, 100000), datagram()}},
               {1, {timeout, range(0, 20000000)}}]).

%% -- the property ---------------------------------------------------------------------

prop_datagram_fuzz() ->
    ?FORALL(Events, list(event()),
            begin
                {Q0, Acts0, In0} = started(),
                ok = check(Acts0),
                Sent0 = sent(Acts0),
                {_, _, In, Sent} =
                    lists:foldl(
                      fun({datagram, Dt, D}, {Q, T, I, S}) ->
                              {Q1, A} = ?M:datagram(T + Dt, ?PEER, D, Q),
                              ok = check(A),
                              {Q1, T + Dt, I + byte_size(D), S + sent(A)};
                         ({timeout, At}, {Q, T, I, S}) ->
                              {Q1, A} = ?M:timeout(T + At, Q),
                              ok = check(A),
                              {Q1, T + At, I, S + sent(A)}
                      end, {Q0, 0, In0, Sent0}, Events),
                %% nothing here validates the address (no Handshake packet
                %% can be made without the handshake keys)
                Sent =< 3 * In
            end).

sent(Acts) ->
    lists:sum([iolist_size(D) || {send, _, D} <- Acts]).

check([]) ->
    ok;
check([{send, ?PEER, D} | Rest]) ->
    true = iolist_size(D) =< 1350,
    check(Rest);
check([{timer, At} | Rest]) when is_integer(At); At =:= infinity ->
    check(Rest);
check([{route, <<_:64>>} | Rest]) ->
    check(Rest);
check([{closed, _} | Rest]) ->
    check(Rest);
check([established | Rest]) ->
    check(Rest);
check([{stream_open, Id, Dir} | Rest]) when is_integer(Id), (Dir =:= bidi orelse Dir =:= uni) ->
    check(Rest);
check([{stream_data, Id, B, Fin} | Rest]) when is_integer(Id), is_binary(B), (Fin =:= fin orelse Fin =:= nofin) ->
    check(Rest);
check([{E, Id, Code} | Rest]) when (E =:= stream_reset orelse E =:= stop_sending), is_integer(Id),
                                   is_integer(Code) ->
    check(Rest);
check([Other | _]) ->
    error({unexpected_action, Other}).
