%% EUnit and PropEr tests for falco_quic_varint: RFC 9000 §16 and A.1's
%% examples, every length's bounds, a round trip of any value.
-module(falco_quic_varint_tests).
-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-define(V, falco_quic_varint).

rfc9000_examples_test() ->
    Examples = [{<<"c2197c5eff14e88c">>, 151288809941952652}, {<<"9d7f3e7d">>, 494878333},
                {<<"7bbd">>, 15293}, {<<"25">>, 37}],
    [begin
         Bin = binary:decode_hex(Hex),
         ?assertEqual({N, <<"rest">>}, ?V:decode(<<Bin/binary, "rest">>)),
         ?assertEqual(Bin, ?V:encode(N)),
         ?assertEqual(byte_size(Bin), ?V:size(N))
     end || {Hex, N} <- Examples],
    %% a longer encoding than needed is still the value (§16)
    ?assertEqual({37, <<>>}, ?V:decode(binary:decode_hex(<<"4025">>))).

bounds_test() ->
    [?assertEqual({Size, Size}, {byte_size(?V:encode(N)), ?V:size(N)})
     || {N, Size} <- [{0, 1}, {63, 1}, {64, 2}, {16383, 2}, {16384, 4}, {1073741823, 4},
                      {1073741824, 8}, {16#3fffffffffffffff, 8}]],
    ?assertError(function_clause, ?V:encode(16#4000000000000000)),
    ?assertError(function_clause, ?V:encode(-1)).

short_input_test() ->
    [?assertEqual(more, ?V:decode(B))
     || B <- [<<>>, <<16#40>>, <<16#80, 0, 0>>, <<16#c0, 0, 0, 0, 0, 0, 0>>]].

prop_round_trip() ->
    ?FORALL({N, Rest}, {range(0, 16#3fffffffffffffff), binary()},
            ?V:decode(<<(?V:encode(N))/binary, Rest/binary>>) =:= {N, Rest}).

prop_decode_never_crashes() ->
    ?FORALL(Bin, binary(), case ?V:decode(Bin) of
                               more -> byte_size(Bin) < 8;
                               {N, Rest} -> is_integer(N) andalso byte_size(Rest) < byte_size(Bin)
                           end).

proper_test_() ->
    {timeout, 60, [?_assert(proper:quickcheck(P, [{numtests, 2000}, quiet]))
                   || P <- [prop_round_trip(), prop_decode_never_crashes()]]}.
