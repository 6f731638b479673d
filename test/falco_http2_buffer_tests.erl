%% EUnit tests for falco_http2_buffer: what goes in comes out, in order,
%% whatever the pieces' sizes; small pieces cost about a byte each; pieces
%% cut from a larger binary do not keep it alive.
-module(falco_http2_buffer_tests).

-include_lib("eunit/include/eunit.hrl").

-define(B, falco_http2_buffer).

fill(Pieces) ->
    lists:foldl(fun ?B:add/2, ?B:new(), Pieces).

order_test() ->
    Pieces = [<<"a">>, <<>>, binary:copy(<<"b">>, 70000), <<"cd">>, binary:copy(<<"e">>, 65535),
              <<"f">>],
    B = fill(Pieces),
    ?assertEqual(iolist_size(Pieces), ?B:size(B)),
    ?assertEqual(iolist_to_binary(Pieces), ?B:to_binary(B)),
    ?assertEqual(<<>>, ?B:to_binary(?B:new())).

take_test() ->
    Pieces = [binary:copy(<<"x">>, 70000), <<"yz">>, binary:copy(<<"w">>, 100000)],
    All = iolist_to_binary(Pieces),
    B = fill(Pieces),
    {T1, B1} = ?B:take(69999, B),
    ?assertEqual(binary:part(All, 0, 69999), iolist_to_binary(T1)),
    {T2, B2} = ?B:take(3, B1),
    ?assertEqual(binary:part(All, 69999, 3), iolist_to_binary(T2)),
    ?assertEqual(byte_size(All) - 70002, ?B:size(B2)),
    {T3, B3} = ?B:take(1000000, B2),
    ?assertEqual(binary:part(All, 70002, byte_size(All) - 70002), iolist_to_binary(T3)),
    ?assertEqual(0, ?B:size(B3)),
    %% a list of pieces from take/2 goes back in as it came
    ?assertEqual(All, ?B:to_binary(?B:add([T1, T2, T3], ?B:new()))).

%% 100,000 1-byte pieces: one binary of about 100 KB, not 100,000 of them.
small_pieces_test() ->
    B = fill([<<"a">> || _ <- lists:seq(1, 100000)]),
    ?assert(erts_debug:flat_size(B) < 100),
    ?assertEqual(binary:copy(<<"a">>, 100000), ?B:to_binary(B)).

%% A piece cut from a much larger binary (a frame from a socket read) is
%% copied; one that is most of its binary is kept as it is.
no_pinning_test() ->
    Read = binary:copy(<<"r">>, 1000000),
    Large = binary:part(Read, 10, 70000),
    [Kept] = element(3, fill([Large])),
    ?assertEqual(70000, binary:referenced_byte_size(Kept)),
    Whole = binary:copy(<<"w">>, 70000),
    [Same] = element(3, fill([Whole])),
    ?assertEqual(70000, binary:referenced_byte_size(Same)),
    Small = binary:part(Read, 10, 100),
    ?assert(binary:referenced_byte_size(?B:to_binary(fill([Small]))) < 1000).
