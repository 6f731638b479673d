%% PropEr properties for HPACK (falco_hpack, falco_hpack_huffman). Round
%% trips over sequences of header blocks sharing an encoder and a decoder
%% context (the two dynamic tables must stay identical, through table size
%% changes), the header-list limit, fuzzing (arbitrary, HPACK-like and
%% mutated blocks never make the decoder raise; `make fuzz' runs it 100,000
%% times, see falco_fuzz_prop), and the Huffman code. Run from EUnit.
-module(falco_hpack_prop).
-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-define(NUMTESTS, 300).

properties_test_() ->
    [{atom_to_list(P),
      {timeout, 120,
       ?_assert(proper:quickcheck(?MODULE:P(), [{numtests, falco_fuzz_prop:numtests(?MODULE, P, ?NUMTESTS)},
                                                {to_file, user}]))}}
     || P <- [prop_round_trip_sequence, prop_header_list_limit, prop_decode_fuzz,
              prop_huffman_round_trip,
              prop_huffman_decode_total]].

%% -- generators --------------------------------------------------------------

name() ->
    frequency([{6, elements([<<":method">>, <<":path">>, <<":status">>, <<":authority">>,
                             <<":scheme">>, <<"content-type">>, <<"content-length">>,
                             <<"accept-encoding">>, <<"cache-control">>, <<"date">>,
                             <<"server">>, <<"etag">>, <<"age">>, <<"user-agent">>,
                             <<"www-authenticate">>])},
               {2, elements([<<"authorization">>, <<"cookie">>, <<"set-cookie">>,
                             <<"proxy-authorization">>, <<"x-secret">>])},
               {3, elements([<<"x-a">>, <<"x-b">>, <<"x-request-id">>, <<"x-long-header-name">>])},
               {1, ?LET(Cs, non_empty(list(elements("abcdefghijklmnopqrstuvwxyz0123456789-_"))),
                        list_to_binary(Cs))},
               {1, binary()}]).

value() ->
    frequency([{5, elements([<<>>, <<"GET">>, <<"POST">>, <<"/">>, <<"/index.html">>,
                             <<"200">>, <<"404">>, <<"http">>, <<"https">>,
                             <<"gzip, deflate">>, <<"text/html">>, <<"1">>, <<"2">>,
                             <<"session=0123456789abcdefghij">>])},
               {3, binary()},
               {1, ?LET(N, range(100, 400), binary(N))},
               {1, ?LET({C, N}, {range(0, 255), range(120, 300)}, binary:copy(<<C>>, N))}]).

header() ->
    {name(), value()}.

table_size() ->
    frequency([{3, elements([0, 32, 64, 100, 256, 4096])}, {1, range(0, 8192)}]).

step() ->
    frequency([{6, {block, list(header()), boolean()}},
               {1, {peer_size, table_size()}},
               {1, {peer_sizes, table_size(), table_size()}}]).

%% Bytes that look like HPACK: each representation's first octet, with
%% integers, strings (raw and Huffman, sometimes truncated) and junk.
hpackish() ->
    ?LET(Parts, list(oneof([binary(),
                            ?LET(I, range(0, 255), <<I>>),
                            ?LET({F, I}, {elements([16#80, 16#40, 16#20, 16#10, 16#00]),
                                          range(0, 200)},
                                 int_bytes(F, I)),
                            ?LET(S, binary(), <<(byte_size(S) band 16#7f), S/binary>>),
                            ?LET(S, binary(), huff_string(S)),
                            ?LET(S, binary(), truncated(huff_string(S))),
                            elements([<<16#ff, 16#ff, 16#ff, 16#ff, 16#7f>>,
                                      <<16#3f, 16#e1, 16#1f>>, <<16#20>>, <<16#be>>,
                                      <<16#80>>, <<16#7f, 16#80, 16#80, 16#80, 16#80, 1>>])])),
         iolist_to_binary(Parts)).

int_bytes(16#80, I) -> flags(falco_hpack:encode_integer(I + 1, 7), 16#80);
int_bytes(16#40, I) -> flags(falco_hpack:encode_integer(I, 6), 16#40);
int_bytes(16#20, I) -> flags(falco_hpack:encode_integer(I * 40, 5), 16#20);
int_bytes(F, I) -> flags(falco_hpack:encode_integer(I, 4), F).

flags(<<B, Rest/binary>>, F) ->
    <<(B bor F), Rest/binary>>.

huff_string(S) ->
    H = falco_hpack_huffman:encode(S),
    <<(iolist_to_binary([flags(falco_hpack:encode_integer(byte_size(H), 7), 16#80), H]))/binary>>.

truncated(<<>>) -> <<>>;
truncated(B) -> binary:part(B, 0, byte_size(B) - 1).

%% -- round trips -------------------------------------------------------------

%% Blocks encoded with one context decode with another to the same fields,
%% and the two tables are equal after each block, through changes of the
%% peer's setting (one or two between blocks) and of Huffman use.
prop_round_trip_sequence() ->
    ?FORALL({Size0, Steps}, {table_size(), list(step())},
            begin
                E0 = falco_hpack:new(Size0),
                D0 = falco_hpack:new(Size0),
                run_steps(Steps, E0, D0)
            end).

run_steps([], _, _) ->
    true;
run_steps([{peer_size, S} | Steps], E, D) ->
    run_steps(Steps, falco_hpack:encoder_set_max_table_size(S, E),
              falco_hpack:set_max_table_size(S, D));
run_steps([{peer_sizes, S1, S2} | Steps], E, D) ->
    run_steps([{peer_size, S1}, {peer_size, S2} | Steps], E, D);
run_steps([{block, Headers, Huffman} | Steps], E0, D0) ->
    {Block, E} = falco_hpack:encode(Headers, E0, #{huffman => Huffman,
                                                   sensitive => [<<"x-secret">>]}),
    Bin = iolist_to_binary(Block),
    case falco_hpack:decode(Bin, D0) of
        {ok, Headers, D} ->
            Same = falco_hpack:table(E) =:= falco_hpack:table(D)
                andalso falco_hpack:table_size(E) =:= falco_hpack:table_size(D)
                andalso falco_hpack:table_size(E) =< falco_hpack:max_table_size(E),
            ?WHENFAIL(io:format("tables differ:~n~p~n~p~n",
                                [falco_hpack:table(E), falco_hpack:table(D)]),
                      Same andalso run_steps(Steps, E, D));
        Other ->
            ?WHENFAIL(io:format("~p~n~p~n", [Headers, Other]), false)
    end.

%% With max_header_list_size the decoder returns the fields if their size
%% (RFC 9113 §6.5.2) is within it, else header_list_too_large with the same
%% table as an unlimited decode.
prop_header_list_limit() ->
    ?FORALL({Pre, Headers, Max}, {list(header()), list(header()), range(0, 2000)},
            begin
                {B0, E0} = falco_hpack:encode(Pre, falco_hpack:new()),
                {ok, _, D0} = falco_hpack:decode(iolist_to_binary(B0), falco_hpack:new()),
                {B1, _} = falco_hpack:encode(Headers, E0),
                Bin = iolist_to_binary(B1),
                {ok, Headers, Full} = falco_hpack:decode(Bin, D0),
                Size = lists:sum([byte_size(N) + byte_size(V) + 32 || {N, V} <- Headers]),
                case falco_hpack:decode(Bin, D0, #{max_header_list_size => Max}) of
                    {ok, Headers, D} ->
                        Size =< Max andalso falco_hpack:table(D) =:= falco_hpack:table(Full);
                    {error, {header_list_too_large, D}} ->
                        Size > Max andalso falco_hpack:table(D) =:= falco_hpack:table(Full)
                end
            end).

%% -- robustness --------------------------------------------------------------

decoded_ok({ok, Fields, _}) ->
    is_list(Fields) andalso lists:all(fun({N, V}) -> is_binary(N) andalso is_binary(V) end,
                                      Fields);
decoded_ok({error, {compression_error, R}}) ->
    lists:member(R, [bad_index, huffman, size_update_too_large, size_update_not_at_start,
                     size_update_missing, integer_overflow, truncated]);
decoded_ok({error, {header_list_too_large, _}}) ->
    true;
decoded_ok(_) ->
    false.

%% Random, HPACK-like or mutated blocks (a valid block encoded against a
%% dynamic table the decoder shares) decode to fields or to an error tuple,
%% never an exception: with or without a table, with a lowered setting
%% pending, under a header-list limit or none.
prop_decode_fuzz() ->
    ?FORALL({{D, Bin}, Max},
            {?LET({Pre, Headers, Huffman, Size, Lower},
                  {list(header()), list(header()), boolean(), table_size(),
                   frequency([{3, none}, {1, table_size()}])},
                  begin
                      {B0, E0} = falco_hpack:encode(Pre, falco_hpack:new(Size)),
                      {ok, _, D0} = falco_hpack:decode(iolist_to_binary(B0), falco_hpack:new(Size)),
                      {B1, _} = falco_hpack:encode(Headers, E0, #{huffman => Huffman}),
                      D1 = case Lower of
                               none -> D0;
                               _ -> falco_hpack:set_max_table_size(Lower, D0)
                           end,
                      {D1, falco_fuzz_prop:input(exactly(iolist_to_binary(B1)), hpackish())}
                  end),
             oneof([infinity, range(0, 500)])},
            falco_fuzz_prop:safe(
              fun() -> decoded_ok(falco_hpack:decode(Bin, D, #{max_header_list_size => Max})) end)).

%% -- Huffman -----------------------------------------------------------------

prop_huffman_round_trip() ->
    ?FORALL(B, oneof([binary(), utf8(), ?LET(N, range(0, 2000), binary(N))]),
            begin
                H = falco_hpack_huffman:encode(B),
                falco_hpack_huffman:decode(H) =:= {ok, B}
                    andalso byte_size(H) =:= falco_hpack_huffman:encoded_size(B)
            end).

%% Decoding any bytes gives {ok, _} or {error, huffman}; what decodes
%% encodes back to the same bytes (the padding of valid input is exactly the
%% encoder's: fewer than 8 one bits).
prop_huffman_decode_total() ->
    ?FORALL(B, oneof([binary(), ?LET(S, binary(), truncated(falco_hpack_huffman:encode(S))),
                      ?LET({S, T}, {binary(), binary()},
                           <<(falco_hpack_huffman:encode(S))/binary, T/binary>>)]),
            case falco_hpack_huffman:decode(B) of
                {ok, D} -> falco_hpack_huffman:encode(D) =:= B;
                {error, huffman} -> true
            end).
