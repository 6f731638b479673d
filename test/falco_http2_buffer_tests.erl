%% EUnit tests for falco_http2_buffer: what goes in comes out, in order,
%% whatever the pieces' sizes; small pieces cost about a byte each; pieces
%% cut from a larger binary do not keep it alive, unless they are most of
%% it.
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
    [Kept] = element(3, cut([Large])),
    ?assertEqual(70000, binary:referenced_byte_size(Kept)),
    Whole = binary:copy(<<"w">>, 70000),
    [Same] = element(3, cut([Whole])),
    ?assertEqual(70000, binary:referenced_byte_size(Same)),
    Small = binary:part(Read, 10, 100),
    ?assert(binary:referenced_byte_size(?B:to_binary(cut([Small]))) < 1000),
    Medium = binary:part(Read, 10, 16384),
    [Copied] = element(3, cut([Medium])),
    ?assertEqual(16384, binary:referenced_byte_size(Copied)).

%% A run of frames that is most of its read is kept as it is, frame by
%% frame (no copy); one that is a small part of it becomes one copy.
run_test() ->
    Read = binary:copy(<<"q">>, 300000),
    Run = [binary:part(Read, 9 + N * 16393, 16384) || N <- lists:seq(0, 15)],
    B = cut([Run]),
    ?assertEqual(16 * 16384, ?B:size(B)),
    Held = element(3, B),
    ?assertEqual(16, length(Held)),
    ?assert(lists:all(fun(P) -> binary:referenced_byte_size(P) =:= 300000 end, Held)),
    ?assertEqual(iolist_to_binary(Run), ?B:to_binary(B)),
    Short = lists:sublist(Run, 4),
    [One] = element(3, cut([Short])),
    ?assertEqual(4 * 16384, binary:referenced_byte_size(One)),
    ?assertEqual(iolist_to_binary(Short), One),
    %% the small last frame of a run is appended, not kept alone
    Ends = [binary:part(Read, 9, 250000), binary:part(Read, 260000, 10)],
    B2 = cut([Ends]),
    ?assertEqual(250010, ?B:size(B2)),
    ?assertEqual(iolist_to_binary(Ends), ?B:to_binary(B2)).

cut(Cuts) ->
    lists:foldl(fun ?B:add_cut/2, ?B:new(), Cuts).
