%% EUnit tests for falco_quic_reasm: pieces in and out of order,
%% overlapping and repeated; the limit beyond the read point
%% (CRYPTO_BUFFER_EXCEEDED's test) and on pieces held; small pieces not
%% pinning the binaries they were cut from.
-module(falco_quic_reasm_tests).
-include_lib("eunit/include/eunit.hrl").

-define(R, falco_quic_reasm).

add(Offset, Bin, R) ->
    {ok, Ready, R1} = ?R:add(Offset, Bin, R),
    {iolist_to_binary(Ready), R1}.

in_order_test() ->
    {<<"abc">>, R1} = add(0, <<"abc">>, ?R:new()),
    {<<"def">>, R2} = add(3, <<"def">>, R1),
    ?assertEqual(6, ?R:offset(R2)),
    ?assertEqual(0, ?R:buffered(R2)),
    %% the piece itself comes back, not a copy
    Big = binary:copy(<<0:80000>>),
    {ok, [Same], _} = ?R:add(6, Big, R2),
    ?assert(Same =:= Big),
    ?assertEqual(byte_size(Big), binary:referenced_byte_size(Same)).

out_of_order_test() ->
    {<<>>, R1} = add(6, <<"ghi">>, ?R:new()),
    {<<>>, R2} = add(3, <<"def">>, R1),
    ?assertEqual(6, ?R:buffered(R2)),
    ?assertEqual(0, ?R:offset(R2)),
    {<<"abcdefghi">>, R3} = add(0, <<"abc">>, R2),
    ?assertEqual({9, 0, 0}, {?R:offset(R3), ?R:buffered(R3), ?R:pieces(R3)}).

overlap_test() ->
    %% held: 4-7 and 10-13; a piece 2-11 fills 2-3 and 8-9 only
    {<<>>, R1} = add(4, <<"4567">>, ?R:new()),
    {<<>>, R2} = add(10, <<"abcd">>, R1),
    {<<>>, R3} = add(2, <<"23XXXX89ZZ">>, R2),
    ?assertEqual(12, ?R:buffered(R3)),
    {<<"0123456789abcd">>, R4} = add(0, <<"01">>, R3),
    %% repeats and old bytes give nothing
    {<<>>, R4} = add(0, <<"0123">>, R4),
    {<<"ef">>, _} = add(12, <<"cdef">>, R4).

%% a piece reaching past the read point, over held runs
in_order_over_held_test() ->
    {<<>>, R1} = add(5, <<"56">>, ?R:new()),
    {<<>>, R2} = add(9, <<"9">>, R1),
    {<<"0123456">>, R3} = add(0, <<"0123456">>, R2),
    ?assertEqual({7, 1}, {?R:offset(R3), ?R:buffered(R3)}),
    %% 8 joins the run of 9 from below
    {<<>>, R4} = add(8, <<"8">>, R3),
    ?assertEqual(2, ?R:buffered(R4)),
    {<<"789">>, R5} = add(7, <<"7">>, R4),
    ?assertEqual({10, 0, 0}, {?R:offset(R5), ?R:buffered(R5), ?R:pieces(R5)}),
    %% a piece half over a held run delivers the run's rest
    {<<>>, R6} = add(12, <<"23456">>, R5),
    {<<"0123456">>, _} = add(10, <<"0123">>, R6).

duplicate_piece_test() ->
    {<<>>, R1} = add(5, <<"56789">>, ?R:new()),
    {<<>>, R1} = add(5, <<"56789">>, R1),
    {<<>>, R1} = add(6, <<"67">>, R1),
    ?assertEqual(5, ?R:buffered(R1)).

%% §7.5: no more than the limit beyond the read point
limit_test() ->
    R = ?R:new(#{limit => 16384}),
    ?assertMatch({ok, [], _}, ?R:add(16000, <<0:384/unit:8>>, R)),
    ?assertEqual({error, buffer_exceeded}, ?R:add(16000, <<0:385/unit:8>>, R)),
    {_, R1} = add(0, <<0:1000/unit:8>>, R),
    ?assertMatch({ok, [], _}, ?R:add(17000, <<0:384/unit:8>>, R1)),
    %% no limit by default
    ?assertMatch({ok, [], _}, ?R:add(1 bsl 40, <<1>>, ?R:new())).

%% §21.7: scattered bytes are bounded in number
fragmented_test() ->
    R0 = ?R:new(#{max_pieces => 4}),
    R4 = lists:foldl(fun(O, A) -> {<<>>, A1} = add(O, <<1>>, A), A1 end, R0, [2, 4, 6, 8]),
    ?assertEqual(4, ?R:pieces(R4)),
    ?assertEqual({error, too_fragmented}, ?R:add(10, <<1>>, R4)),
    %% bytes extending a run do not count as new pieces
    {<<>>, R5} = add(9, <<1, 1, 1>>, R4),
    ?assertEqual(4, ?R:pieces(R5)),
    %% and descending 1-byte pieces are appended below: each a piece
    D = lists:foldl(fun(O, A) -> {<<>>, A1} = add(O, <<O>>, A), A1 end,
                    ?R:new(#{max_pieces => 3}), [12, 11, 10]),
    ?assertEqual({error, too_fragmented}, ?R:add(9, <<9>>, D)),
    {<<0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12>>, _} =
        add(0, <<0, 1, 2, 3, 4, 5, 6, 7, 8, 9>>, D).

%% small pieces held are copied out of their datagram, runs of small
%% pieces share one binary, and large pieces are kept as they are
memory_test() ->
    Datagram = binary:copy(<<0:65536/unit:8>>),
    Cut = fun(O, L) -> binary:part(Datagram, O, L) end,
    %% (pieces of 64 bytes or less are heap copies already)
    ?assertEqual(65536, binary:referenced_byte_size(Cut(0, 100))),
    {<<>>, R1} = add(100, Cut(0, 100), ?R:new()),
    [{_, _, [Held]}] = element(3, R1),
    ?assertEqual(100, binary:referenced_byte_size(Held)),
    R2 = lists:foldl(fun(O, A) -> {<<>>, A1} = add(O, Cut(O, 100), A), A1 end, R1,
                     lists:seq(200, 5000, 100)),
    ?assertEqual(1, ?R:pieces(R2)),
    ?assertEqual(5000, ?R:buffered(R2)),
    {ok, Ready, R3} = ?R:add(0, Cut(0, 100), R2),
    ?assert(lists:all(fun(B) -> binary:referenced_byte_size(B) < 65536 end, tl(Ready))),
    ?assertEqual(5100, iolist_size(Ready)),
    %% a large piece, most of its binary, is held as it is, as its own piece
    Big = binary:copy(<<1:6000/unit:8>>),
    Part = binary:part(Big, 0, 5000),
    {<<>>, R4} = add(6000, Part, R3),
    {<<>>, R5} = add(11000, Cut(0, 4096), R4),
    ?assertEqual(2, ?R:pieces(R5)),
    [{_, _, [Copied, Kept]}] = element(3, R5),
    ?assertEqual(6000, binary:referenced_byte_size(Kept)),
    ?assertEqual(4096, binary:referenced_byte_size(Copied)).
