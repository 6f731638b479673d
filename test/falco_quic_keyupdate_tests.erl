%% EUnit tests of the 1-RTT key updates of falco_quic_machine (RFC 9001 §6)
%% without a socket or a handshake: a machine put in the established phase
%% with 1-RTT keys of the test's choosing, and a client made of those keys
%% here (falco_quic_packet), which answers the server's updates as RFC
%% 9001 §6.2 says a peer does.
-module(falco_quic_keyupdate_tests).

-include_lib("eunit/include/eunit.hrl").
-include_lib("falco/src/quic/falco_quic_machine.hrl").

-define(M, falco_quic_machine).
-define(PEER, {{127, 0, 0, 1}, 40000}).
-define(SUITE, aes_128_gcm_sha256).

%% The client: its write keys and phase, its read keys (and their next
%% generation) and phase, its next packet number, the server's packet
%% numbers it received (for its ACKs), and the key phases they came in.
-record(cl, {write :: term(), wphase = 0 :: 0 | 1, read :: term(), rphase = 0 :: 0 | 1,
             pn = 0 :: non_neg_integer(), got = [] :: [non_neg_integer()],
             phases = [] :: [0 | 1]}).

established(Quic) ->
    {Q0, _} = ?M:new(#{peer => ?PEER, dcid => crypto:strong_rand_bytes(8),
                       scid => <<"client01">>},
                     #{tls => #{credentials => falco_test_tls13:creds(ecdsa),
                                alpn => [<<"h3">>]},
                       scid => <<"server01">>, now => 0, quic => Quic}),
    C2S = falco_quic_keys:from_secret(?SUITE, crypto:strong_rand_bytes(32)),
    S2C = falco_quic_keys:from_secret(?SUITE, crypto:strong_rand_bytes(32)),
    App = #{phase => 0, read => C2S, write => S2C, next => falco_quic_keys:update(C2S),
            prev => undefined, prev_until => infinity, since => 0, write_phase => 0,
            sealed => 0, write_since => 0, forged => 0, updates => 0},
    {Q0#q{phase = established, app = App, validated = true, handshake_at = infinity},
     #cl{write = C2S, read = S2C}}.

%% A 1-RTT packet of the client's (its keys, or others), the datagram.
packet(Frames, C = #cl{write = Keys, wphase = P}) ->
    packet(Frames, Keys, P, C).

packet(Frames, Keys, Phase, C = #cl{pn = Pn}) ->
    Bin = iolist_to_binary(falco_quic_packet:protect(#{type => one_rtt, dcid => <<"server01">>,
                                                       key_phase => Phase},
                                                     Pn, none, Frames, Keys)),
    {Bin, C#cl{pn = Pn + 1}}.

%% Sends Frames in one packet at Now: the server's state, the client's
%% after reading the answer.
send(Frames, Now, Q, C0) ->
    {Bin, C1} = packet(Frames, C0),
    deliver(Bin, Now, Q, C1).

deliver(Bin, Now, Q0, C) ->
    {Q, Acts} = ?M:datagram(Now, ?PEER, Bin, Q0),
    {Q, lists:foldl(fun receive_datagram/2, C, [iolist_to_binary(D) || {send, _, D} <- Acts])}.

%% The client reads a server datagram: a packet of the other phase is the
%% server's key update, answered by updating the client's write keys too.
receive_datagram(D, C) ->
    {Packets, _} = falco_quic_packet:split(D, 8),
    lists:foldl(fun receive_packet/2, C, Packets).

receive_packet(P, C = #cl{read = Read, rphase = RP, write = W, wphase = WP, got = Got,
                          phases = Ps}) ->
    {ok, U = #{key_phase := Phase, pn := Pn}} = falco_quic_packet:unmask(P, Read, none),
    case Phase of
        RP ->
            {ok, _} = falco_quic_packet:open(U, Read),
            C#cl{got = [Pn | Got], phases = [Phase | Ps]};
        _ ->
            Next = falco_quic_keys:update(Read),
            {ok, _} = falco_quic_packet:open(U, Next),
            C1 = C#cl{read = Next, rphase = Phase, got = [Pn | Got], phases = [Phase | Ps]},
            case WP of
                Phase -> C1;
                _ -> C1#cl{write = falco_quic_keys:update(W), wphase = Phase}
            end
    end.

%% An ACK of every server packet the client has.
ack(#cl{got = []}) ->
    [];
ack(#cl{got = Got}) ->
    Sorted = lists:usort(Got),
    [falco_quic_frame:ack(0, ranges(lists:reverse(Sorted)), undefined)].

ranges([Hi | Rest]) -> ranges(Rest, Hi, Hi, []).
ranges([N | Rest], Lo, Hi, Acc) when N =:= Lo - 1 -> ranges(Rest, N, Hi, Acc);
ranges([N | Rest], Lo, Hi, Acc) -> ranges(Rest, N, N, [{Lo, Hi} | Acc]);
ranges([], Lo, Hi, Acc) -> lists:reverse([{Lo, Hi} | Acc]).

info(Q, Key) -> maps:get(Key, ?M:info(Q)).

%% Two PINGs make the server's ACK due at once (RFC 9000 §13.2.1).
pings(Now, Q0, C0) ->
    {Q1, C1} = send([falco_quic_frame:ping() | ack(C0)], Now, Q0, C0),
    send([falco_quic_frame:ping()], Now, Q1, C1).

%% RFC 9001 §6.2: the client's update (a packet of the other phase that
%% opens with the next keys) moves both directions to the next keys.
client_update_test() ->
    {Q0, C0} = established(#{}),
    {Q1, C1} = pings(1000, Q0, C0),
    ?assertEqual([0], lists:usort(C1#cl.phases)),
    Next = falco_quic_keys:update(C1#cl.write),
    C2 = C1#cl{write = Next, wphase = 1},
    {Q2, C3} = pings(2000, Q1, C2),
    ?assertEqual(1, info(Q2, key_phase)),
    ?assertEqual(1, info(Q2, key_updates)),
    %% the server's packets after it are in phase 1, opened with the next keys
    ?assertEqual(1, hd(C3#cl.phases)),
    ?assertEqual(0, info(Q2, forged_packets)).

%% A forged packet with the key phase flipped (or any that does not open
%% with the next keys) changes nothing: no update, the old keys still
%% work; it is only counted.
forged_flip_test() ->
    {Q0, C0} = established(#{}),
    {Q1, C1} = pings(1000, Q0, C0),
    Bogus = falco_quic_keys:from_secret(?SUITE, crypto:strong_rand_bytes(32)),
    {Bin, C2} = packet([falco_quic_frame:ping()], Bogus, 1, C1),
    {Q2, C3} = deliver(Bin, 2000, Q1, C2),
    ?assertEqual(1, info(Q2, forged_packets)),
    ?assertEqual(0, info(Q2, key_phase)),
    ?assertEqual(0, info(Q2, key_updates)),
    ?assertEqual(established, ?M:phase(Q2)),
    Before = length(C3#cl.got),
    {Q3, C4} = pings(3000, Q2, C3),
    ?assert(length(C4#cl.got) > Before),
    %% and a real update still goes through after it
    {Q4, _} = pings(4000, Q3, C4#cl{write = falco_quic_keys:update(C4#cl.write), wphase = 1}),
    ?assertEqual(1, info(Q4, key_updates)),
    ?assertEqual(established, ?M:phase(Q4)).

%% RFC 9001 §6.6: past the integrity limit (2 here) the connection closes
%% with AEAD_LIMIT_REACHED.
integrity_limit_test() ->
    {Q0, C0} = established(#{aead_integrity_limit => 2}),
    Bogus = falco_quic_keys:from_secret(?SUITE, crypto:strong_rand_bytes(32)),
    {Q, Acts} = lists:foldl(fun(Phase, {Qa, _}) ->
                                    {Bin, _} = packet([falco_quic_frame:ping()], Bogus, Phase, C0),
                                    ?M:datagram(1000, ?PEER, Bin, Qa)
                            end, {Q0, []}, [0, 1]),
    ?assertEqual(established, ?M:phase(Q)),
    ?assertEqual([], [D || {send, _, D} <- Acts]),
    {Bin3, _} = packet([falco_quic_frame:ping()], Bogus, 0, C0),
    {Q3, Acts3} = ?M:datagram(2000, ?PEER, Bin3, Q),
    ?assertEqual(closing, ?M:phase(Q3)),
    [Close] = [iolist_to_binary(D) || {send, _, D} <- Acts3],
    {[P], _} = falco_quic_packet:split(Close, 8),
    {ok, _, Payload} = falco_quic_packet:unprotect(P, C0#cl.read, none),
    {ok, Frames} = falco_quic_frame:parse(Payload, #{peer => server}),
    ?assertMatch([{connection_close, aead_limit_reached, _, _}],
                 [F || F <- Frames, element(1, F) =:= connection_close]).

%% RFC 9001 §6.1, §6.5: with key_update_packets at 4 the server updates
%% its keys by itself, again and again, but each time only after the
%% client answered the last update and acknowledged a packet of the
%% current keys; the client sees every phase in order.
server_updates_test() ->
    {Q0, C0} = established(#{key_update_packets => 4}),
    {Q, C} = lists:foldl(fun(I, {Qa, Ca}) -> pings(1000 * I, Qa, Ca) end, {Q0, C0},
                         lists:seq(1, 60)),
    Updates = info(Q, key_updates),
    ?assert(Updates >= 5),
    %% the phases the client saw alternate, one run per update
    Runs = length(runs(lists:reverse(C#cl.phases))),
    ?assertEqual(Updates + 1, Runs),
    ?assertEqual(0, info(Q, forged_packets)).

runs([]) -> [];
runs([P | Ps]) -> runs(Ps, P, [P]).
runs([P | Ps], P, Acc) -> runs(Ps, P, Acc);
runs([P | Ps], _, Acc) -> runs(Ps, P, [P | Acc]);
runs([], _, Acc) -> lists:reverse(Acc).

%% RFC 9001 §6.5: no update before a packet of the current keys is
%% acknowledged: a client that never acknowledges sees none, however many
%% packets the server seals.
no_update_without_ack_test() ->
    {Q0, C0} = established(#{key_update_packets => 2}),
    {Q, C} = lists:foldl(fun(I, {Qa, Ca}) ->
                                 {Q1, C1} = send([falco_quic_frame:ping()], 1000 * I, Qa, Ca),
                                 send([falco_quic_frame:ping()], 1000 * I, Q1, C1)
                         end, {Q0, C0}, lists:seq(1, 20)),
    ?assert(length(C#cl.got) > 4),
    ?assertEqual(0, info(Q, key_updates)),
    ?assertEqual([0], lists:usort(C#cl.phases)).

%% ... and one that acknowledges but never answers an update (keeps
%% writing in the old phase) sees exactly one.
one_update_until_answered_test() ->
    {Q0, C0} = established(#{key_update_packets => 2}),
    {Q, _} = lists:foldl(fun(I, {Qa, Ca}) ->
                                 %% the client keeps its first write keys
                                 {Q1, C1} = pings(1000 * I, Qa, Ca),
                                 {Q1, C1#cl{write = C0#cl.write, wphase = 0}}
                         end, {Q0, C0}, lists:seq(1, 20)),
    ?assertEqual(1, info(Q, key_updates)),
    ?assertEqual(1, info(Q, key_phase)).

%% RFC 9001 §6.1: the old read keys open reordered packets of the old
%% phase for three PTOs after the update, and are dropped then.
old_keys_expire_test() ->
    {Q0, C0} = established(#{}),
    {Q1, C1} = pings(1000, Q0, C0),
    %% a packet of phase 0 held back (sent later, out of order)
    {Late, C2} = packet([falco_quic_frame:ping()], C1),
    {Late2, C3} = packet([falco_quic_frame:ping()], C2),
    C4 = C3#cl{write = falco_quic_keys:update(C3#cl.write), wphase = 1},
    {Q2, C5} = pings(2000, Q1, C4),
    ?assertEqual(1, info(Q2, key_updates)),
    #q{app = #{prev := Prev, prev_until := Until}} = Q2,
    ?assertNotEqual(undefined, Prev),
    ?assert(is_integer(Until) andalso Until > 2000),
    %% within 3 PTOs the late packet opens (counted as received, not forged)
    {Q3, _} = deliver(Late, 3000, Q2, C5),
    ?assertEqual(0, info(Q3, forged_packets)),
    ?assertNotEqual(Q2#q.acks, Q3#q.acks),
    %% the timer drops the old keys; the other late packet is dropped unopened
    {Q4, _} = ?M:timeout(Until, Q3),
    ?assertMatch(#q{app = #{prev := undefined, prev_until := infinity}}, Q4),
    {Q5, _} = deliver(Late2, Until + 1, Q4, C5),
    ?assertEqual(Q4#q.acks, Q5#q.acks),
    ?assertEqual(0, info(Q5, forged_packets)).

%% The next deadline of a machine with old keys held includes their end.
deadline_includes_old_keys_test() ->
    {Q0, C0} = established(#{}),
    {Q1, C1} = pings(1000, Q0, C0),
    {Q2, _} = pings(2000, Q1, C1#cl{write = falco_quic_keys:update(C1#cl.write), wphase = 1}),
    #q{app = #{prev_until := Until}} = Q2,
    {_, Acts} = ?M:flush(2000, Q2),
    [{timer, At}] = [T || T = {timer, _} <- Acts],
    ?assert(At =< Until).
