%% EUnit tests for falco_quic_admit: what may start a connection (a v1
%% Initial of at least 1200 bytes with an 8-byte DCID, RFC 9000 §7.2,
%% §14.1), what gets Version Negotiation (§6.1) and what is dropped
%% (§5.2.2), and that no datagram makes it raise.
-module(falco_quic_admit_tests).
-include_lib("eunit/include/eunit.hrl").

-define(A, falco_quic_admit).
-define(DCID, <<16#83, 16#94, 16#c8, 16#f0, 16#3e, 16#51, 16#57, 16#08>>).

packet(Type, Dcid, Min) ->
    {Client, _} = falco_quic_keys:initial(Dcid),
    iolist_to_binary(falco_quic_packet:protect(#{type => Type, dcid => Dcid, scid => <<"abc">>,
                                                 token => <<"tok">>},
                                               0, none, falco_quic_frame:crypto(0, <<1, 0, 0, 0>>),
                                               Client, Min)).

initial_test() ->
    D = packet(initial, ?DCID, 1200),
    ?assertEqual(1200, byte_size(D)),
    ?assertEqual({new, #{dcid => ?DCID, scid => <<"abc">>, token => <<"tok">>}}, ?A:unknown(D)),
    ?assertEqual({ok, ?DCID}, ?A:route(D, 8)),
    %% 20-byte DCIDs too (curl's)
    D20 = packet(initial, binary:copy(<<7>>, 20), 1300),
    ?assertMatch({new, #{dcid := <<7, _:19/binary>>}}, ?A:unknown(D20)).

%% §14.1: an Initial in a datagram under 1200 bytes is dropped
short_datagram_test() ->
    ?assertEqual({drop, short_datagram}, ?A:unknown(packet(initial, ?DCID, 1199))),
    ?assertEqual({drop, short_datagram}, ?A:unknown(<<>>)).

%% §7.2: the client's first DCID has at least 8 bytes
short_dcid_test() ->
    ?assertEqual({drop, short_dcid}, ?A:unknown(packet(initial, <<1, 2, 3, 4, 5, 6, 7>>, 1200))),
    ?assertEqual({drop, short_dcid}, ?A:unknown(packet(initial, <<>>, 1200))).

%% Only an Initial starts a connection (§5.2.2)
other_types_test() ->
    ?assertEqual({drop, handshake}, ?A:unknown(packet(handshake, ?DCID, 1200))),
    ?assertEqual({drop, zero_rtt}, ?A:unknown(packet(zero_rtt, ?DCID, 1200))),
    Short = iolist_to_binary([<<16#40>>, ?DCID, binary:copy(<<0>>, 1200)]),
    ?assertEqual({drop, unknown_connection}, ?A:unknown(Short)),
    ?assertEqual({ok, ?DCID}, ?A:route(Short, 8)),
    %% a Version Negotiation from a client: never answered
    VN = falco_quic_packet:version_negotiation(<<"a">>, <<"b">>, [1]),
    ?assertEqual({drop, version_negotiation},
                 ?A:unknown(<<VN/binary, (binary:copy(<<0>>, 1200))/binary>>)).

%% §6.1: another version gets Version Negotiation, CIDs swapped, v1 listed
version_negotiation_test() ->
    D = iolist_to_binary([<<16#c0, 16#1a2a3a4a:32, 8>>, ?DCID, <<3, "xyz">>,
                          binary:copy(<<0>>, 1200)]),
    {version_negotiation, VN} = ?A:unknown(D),
    {ok, #{type := version_negotiation, dcid := <<"xyz">>, scid := ?DCID,
           versions := [1, Grease]}, <<>>} = falco_quic_packet:parse(VN, 0),
    ?assertEqual(16#0a0a0a0a, Grease band 16#0f0f0f0f),
    %% not for a datagram under 1200 bytes (§5.2.2: amplification)
    ?assertEqual({drop, short_datagram}, ?A:unknown(binary:part(D, 0, 1199))).

%% Bytes that are not QUIC, and cut packets
garbage_test() ->
    ?assertEqual({drop, truncated}, ?A:route(<<16#40, 1, 2>>, 8)),
    ?assertEqual({drop, truncated}, ?A:route(<<>>, 8)),
    %% all ones reads as a long header of version 0xffffffff with 255-byte
    %% CIDs: another version, so it is answered (§6.1)
    ?assertMatch({version_negotiation, _}, ?A:unknown(binary:copy(<<16#ff>>, 1200))),
    ?assertMatch({drop, _}, ?A:unknown(binary:copy(<<0>>, 1200))),
    %% a v1 DCID over 20 bytes (§17.2)
    ?assertEqual({drop, cid_too_long},
                 ?A:unknown(<<16#c0, 1:32, 21, (binary:copy(<<0>>, 1194))/binary>>)).

never_raises_test() ->
    Initial = packet(initial, ?DCID, 1200),
    [begin
         D = case rand:uniform(2) of
                 1 -> crypto:strong_rand_bytes(rand:uniform(1500) - 1);
                 2 -> mutate(Initial)
             end,
         R = ?A:unknown(D),
         ?assert(element(1, R) =:= new orelse element(1, R) =:= drop
                 orelse element(1, R) =:= version_negotiation),
         ?assertMatch({_, _}, ?A:route(D, 8))
     end || _ <- lists:seq(1, 3000)].

mutate(Bin) ->
    N = rand:uniform(byte_size(Bin)) - 1,
    <<H:N/binary, B, T/binary>> = Bin,
    <<H/binary, (B bxor (1 bsl (rand:uniform(8) - 1))), T/binary>>.
