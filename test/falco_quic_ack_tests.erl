%% EUnit tests for falco_quic_ack: RFC 9000 §13.2's ACK generation rules
%% (when an ACK is due, its ranges and delay, forgetting acknowledged
%% ranges), duplicates, the range bound and §19.3.1's wire fields.
-module(falco_quic_ack_tests).
-include_lib("eunit/include/eunit.hrl").

-define(A, falco_quic_ack).

recv(Pns, Eliciting, Now, A) ->
    lists:foldl(fun(Pn, Acc) -> {ok, Acc1} = ?A:received(Pn, Eliciting, Now, Acc), Acc1 end,
                A, Pns).

ranges_test() ->
    A = recv([0, 1, 2, 5, 7, 6, 9], true, 0, ?A:new(application)),
    ?assertEqual([{9, 9}, {5, 7}, {0, 2}], ?A:ranges(A)),
    %% filling the gaps merges the ranges
    A1 = recv([3, 8, 4], false, 0, A),
    ?assertEqual([{0, 9}], ?A:ranges(A1)),
    ?assertEqual(9, ?A:largest(A1)).

duplicate_test() ->
    A = recv([0, 1, 5], true, 0, ?A:new(application)),
    [?assertEqual(duplicate, ?A:received(Pn, true, 1, A)) || Pn <- [0, 1, 5]],
    ?assertMatch({ok, _}, ?A:received(3, true, 1, A)).

%% §13.2.1: Initial and Handshake ack-eliciting packets at once
immediate_spaces_test() ->
    [begin
         A = recv([0], true, 100, ?A:new(Space)),
         ?assertEqual(100, ?A:deadline(A)),
         ?assert(?A:due(100, A))
     end || Space <- [initial, handshake]],
    %% not for a packet that is not ack-eliciting
    ?assertEqual(infinity, ?A:deadline(recv([0], false, 100, ?A:new(initial)))).

%% §13.2.1-13.2.2: max_ack_delay for one packet, at once for the second
delayed_and_second_test() ->
    A1 = recv([0], true, 100, ?A:new(application)),
    ?assertEqual(100 + 25000, ?A:deadline(A1)),
    ?assertNot(?A:due(25099, A1)),
    ?assert(?A:due(25100, A1)),
    %% a later packet does not push the deadline back; the second makes it now
    A2 = recv([1], true, 5000, A1),
    ?assertEqual(5000, ?A:deadline(A2)),
    %% non-eliciting packets do not count
    A3 = recv([1, 2, 3], false, 100, ?A:new(application, #{max_ack_delay => 10000})),
    ?assertEqual(infinity, ?A:deadline(A3)),
    ?assertEqual(10100, ?A:deadline(recv([4], true, 100, A3))),
    %% a threshold of 10
    A4 = recv(lists:seq(0, 8), true, 0, ?A:new(application, #{threshold => 10})),
    ?assertEqual(25000, ?A:deadline(A4)),
    ?assertEqual(0, ?A:deadline(recv([9], true, 0, A4))).

%% §13.2.1: out of order, at once
out_of_order_test() ->
    A0 = ?A:sent(recv([0, 1], true, 0, ?A:new(application))),
    ?assertEqual(infinity, ?A:deadline(A0)),
    %% a gap before it
    ?assertEqual(7, ?A:deadline(recv([3], true, 7, A0))),
    %% below the largest ack-eliciting
    A1 = ?A:sent(recv([3], true, 7, A0)),
    ?assertEqual(9, ?A:deadline(recv([2], true, 9, A1))),
    %% a gap filled by a non-eliciting packet is no gap
    A2 = ?A:sent(recv([4], false, 10, A1)),
    ?assertEqual(11 + 25000, ?A:deadline(recv([5], true, 11, A2))),
    %% a gap below, under a larger packet that is not ack-eliciting
    A3 = ?A:sent(recv([9], false, 12, recv([5], true, 11, A2))),
    ?assertEqual(13, ?A:deadline(recv([7], true, 13, A3))).

frame_test() ->
    A = recv([0, 1, 2, 5, 6, 9], true, 1000, ?A:new(application)),
    %% the delay since the largest arrived, scaled by 2^3
    ?assertEqual({9, 800, [{9, 9}, {5, 6}, {0, 2}]}, ?A:frame(7400, 3, 32, A)),
    ?assertEqual({9, 6400, [{9, 9}, {5, 6}, {0, 2}]}, ?A:frame(7400, 0, 32, A)),
    %% at most N ranges, the newest
    ?assertEqual({9, 0, [{9, 9}, {5, 6}]}, ?A:frame(1000, 3, 2, A)),
    ?assertEqual(none, ?A:frame(0, 3, 2, ?A:new(application))),
    %% a clock that went back gives no negative delay
    ?assertEqual({9, 0, [{9, 9}]}, ?A:frame(0, 3, 1, A)).

sent_test() ->
    A0 = recv([0, 1], true, 0, ?A:new(application)),
    ?assert(?A:pending(A0)),
    A1 = ?A:sent(A0),
    ?assertNot(?A:pending(A1)),
    ?assertEqual(infinity, ?A:deadline(A1)),
    %% the ranges stay until an ACK of ours is acknowledged
    ?assertEqual([{0, 1}], ?A:ranges(A1)),
    ?assert(?A:pending(recv([2], false, 0, A1))).

%% §13.2.4: forgetting what an acknowledged ACK carried
acked_test() ->
    A0 = recv([0, 1, 2, 5, 6, 7, 9], true, 0, ?A:new(application)),
    A1 = ?A:acked(6, A0),
    ?assertEqual([{9, 9}, {7, 7}], ?A:ranges(A1)),
    ?assertEqual(9, ?A:largest(A1)),
    %% what was forgotten counts as a duplicate
    ?assertEqual(duplicate, ?A:received(3, true, 1, A1)),
    ?assertMatch({ok, _}, ?A:received(8, true, 1, A1)),
    %% an older acknowledged ACK changes nothing
    ?assertEqual(A1, ?A:acked(4, A1)),
    A2 = ?A:acked(9, A1),
    ?assertEqual([], ?A:ranges(A2)),
    ?assertEqual(none, ?A:frame(0, 3, 8, A2)),
    ?assertEqual(9, ?A:largest(A2)).

%% §13.2.3: the oldest ranges go past the bound, and below them is a duplicate
bound_test() ->
    A = recv([0, 2, 4, 6, 8], true, 0, ?A:new(application, #{max_ranges => 3})),
    ?assertEqual([{8, 8}, {6, 6}, {4, 4}], ?A:ranges(A)),
    ?assertEqual(duplicate, ?A:received(1, true, 0, A)),
    ?assertEqual(duplicate, ?A:received(2, true, 0, A)),
    %% above the dropped ranges, a gap can still be filled
    ?assertMatch({ok, _}, ?A:received(3, true, 0, A)),
    ?assertMatch({ok, _}, ?A:received(5, true, 0, A)),
    %% merging keeps the count right
    A1 = recv([5, 7], true, 0, A),
    ?assertEqual([{4, 8}], ?A:ranges(A1)),
    A2 = recv([10, 12, 14], true, 0, A1),
    ?assertEqual([{14, 14}, {12, 12}, {10, 10}], ?A:ranges(A2)).

%% §19.3.1
wire_test() ->
    Ranges = [{9, 9}, {5, 7}, {0, 2}],
    %% 9; first range 0; gap: 8 missing (5 below 9 - 0 - 2 = 7), length 2; gap 3-4: 1, length 2
    ?assertEqual({9, 0, [{0, 2}, {1, 2}]}, ?A:to_wire(Ranges)),
    ?assertEqual({ok, Ranges}, ?A:from_wire(9, 0, [{0, 2}, {1, 2}])),
    ?assertEqual({ok, [{0, 100}]}, ?A:from_wire(100, 100, [])),
    ?assertEqual({error, frame_encoding_error}, ?A:from_wire(5, 6, [])),
    ?assertEqual({error, frame_encoding_error}, ?A:from_wire(9, 0, [{0, 2}, {1, 3}])),
    ?assertEqual({error, frame_encoding_error}, ?A:from_wire(9, 0, [{8, 0}])),
    ?assertEqual({ok, [{9, 9}, {7, 7}]}, ?A:from_wire(9, 0, [{0, 0}])),
    ?assertEqual(800, ?A:delay(100, 3)).
