%% PropEr properties for the request/response helper codecs: falco_qs,
%% falco_uri, falco_cookie and falco_json. Round trips (what we encode we
%% parse back to the same thing) and fuzzing (arbitrary, tricky and mutated
%% input never makes a parser raise, and never yields what its contract
%% excludes; `make fuzz' runs these 100,000 times, see falco_fuzz_prop).
%% Run from EUnit, 500 cases each (the fuzz properties 1000).
-module(falco_codecs_prop).
-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-define(NUMTESTS, 500).

properties_test_() ->
    [{atom_to_list(P),
      {timeout, 120,
       ?_assert(proper:quickcheck(?MODULE:P(), [{numtests, falco_fuzz_prop:numtests(?MODULE, P, ?NUMTESTS)},
                                                {to_file, user}]))}}
     || P <- [prop_qs_round_trip, prop_qs_fuzz, prop_qs_replace_is_utf8,
              prop_uri_round_trip, prop_uri_query_through_qs, prop_split_path_round_trip,
              prop_uri_fuzz, prop_split_path_safe, prop_remove_dot_segments,
              prop_cookie_round_trip, prop_cookie_encoded_value, prop_cookie_fuzz,
              prop_json_round_trip, prop_json_fuzz]].

%% -- generators --------------------------------------------------------------

bytes() ->
    binary().

%% Binaries biased towards the bytes the codecs treat specially.
tricky() ->
    ?LET(Parts, list(oneof([binary(), utf8(),
                            elements([<<"%">>, <<"%2">>, <<"%zz">>, <<"%41">>, <<"+">>,
                                      <<"&">>, <<"=">>, <<";">>, <<"/">>, <<"\\">>,
                                      <<".">>, <<"..">>, <<"%2e">>, <<"%2F">>, <<"%5c">>,
                                      <<"%00">>, <<0>>, <<"\"">>, <<" ">>, <<"\t">>,
                                      <<"%C2">>, <<16#C2>>, <<16#ED, 16#A0, 16#80>>])])),
         iolist_to_binary(Parts)).

token() ->
    ?LET(Cs, non_empty(list(elements(
                "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"))),
         list_to_binary(Cs)).

cookie_octets() ->
    ?LET(Cs, list(oneof([range(16#23, 16#2B), range(16#2D, 16#3A), range(16#3C, 16#5B),
                         range(16#5D, 16#7E), exactly(16#21)])),
         list_to_binary(Cs)).

%% A path segment that split_path must return unchanged.
safe_segment() ->
    ?SUCHTHAT(S, non_empty(bytes()),
              S =/= <<".">> andalso S =/= <<"..">>
                  andalso binary:match(S, [<<"/">>, <<"\\">>, <<0>>]) =:= nomatch).

%% Depth and width are bounded so a case stays small (at most 4^4 nodes).
json() ->
    json(4).

json(0) ->
    json_scalar();
json(Depth) ->
    frequency([{4, json_scalar()},
               {1, ?LAZY(?LET(N, range(0, 4), vector(N, json(Depth - 1))))},
               {1, ?LAZY(?LET(N, range(0, 4),
                              ?LET(Pairs, vector(N, {json_string(), json(Depth - 1)}),
                                   maps:from_list(Pairs))))}]).

json_scalar() ->
    oneof([null, true, false, int(), integer(), float(), json_string(),
           ?LET(I, integer(), I * 1000000000000000000000000),
           elements([0.0, -0.0, 0.1, 5.0e-324, 1.7976931348623157e308, -1.0e-300])]).

%% UTF-8 text with the characters JSON must escape mixed in.
json_string() ->
    ?LET(Parts, list(oneof([utf8(), elements([<<"\"">>, <<"\\">>, <<0>>, <<"\n">>, <<31>>,
                                              <<"/">>, <<127>>, <<"\\u0041">>])])),
         iolist_to_binary(Parts)).

%% -- falco_qs ----------------------------------------------------------------

prop_qs_round_trip() ->
    ?FORALL(Pairs, list({bytes(), bytes()}),
            falco_qs:parse(falco_qs:encode(Pairs)) =:= {ok, Pairs}).

%% Valid query strings: what encode/1 writes, with pairs, bare keys and
%% empty pieces.
qs_valid() ->
    ?LET(Pairs, list(oneof([{bytes(), bytes()}, {token(), token()}])),
         ?LET(Sep, elements([<<"&">>, <<"&&">>, <<";">>]),
              binary:replace(falco_qs:encode(Pairs), <<"&">>, Sep, [global]))).

%% Any input: a result within the bound, or one of the documented errors.
prop_qs_fuzz() ->
    ?FORALL({In, Max, Strict}, {falco_fuzz_prop:input(qs_valid(), tricky()), range(0, 20), boolean()},
            begin
                Opts = #{max_pairs => Max, percent => if Strict -> strict; true -> lenient end},
                case falco_qs:parse(In, Opts) of
                    {ok, Pairs} -> length(Pairs) =< Max;
                    {error, too_many_pairs} -> true;
                    {error, bad_percent} -> Strict
                end
            end).

prop_qs_replace_is_utf8() ->
    ?FORALL(In, tricky(),
            begin
                {ok, Pairs} = falco_qs:parse(In, #{utf8 => replace}),
                {ok, Kept} = falco_qs:parse(In),
                lists:all(fun({K, V}) -> is_utf8(K) andalso is_utf8(V) end, Pairs)
                    andalso length(Pairs) =:= length(Kept)
                    andalso (falco_qs:parse(In, #{utf8 => reject}) =:= {error, bad_utf8}
                             orelse Pairs =:= Kept)
            end).

is_utf8(B) ->
    unicode:characters_to_binary(B) =:= B.

%% -- falco_uri ---------------------------------------------------------------

prop_uri_round_trip() ->
    ?FORALL(B, bytes(),
            falco_uri:decode(falco_uri:encode_path_segment(B)) =:= {ok, B}
                andalso falco_uri:decode(falco_uri:encode_query(B)) =:= {ok, B}).

prop_uri_query_through_qs() ->
    ?FORALL({K, V}, {bytes(), bytes()},
            begin
                Q = <<(falco_uri:encode_query(K))/binary, $=, (falco_uri:encode_query(V))/binary>>,
                falco_qs:parse(Q) =:= {ok, [{K, V}]}
            end).

prop_split_path_round_trip() ->
    ?FORALL(Segs, list(safe_segment()),
            falco_uri:split_path(falco_uri:encode_path(Segs)) =:= {ok, Segs}).

%% A path and query as a client sends them.
uri_valid() ->
    ?LET({Segs, Q}, {list(oneof([bytes(), elements([<<".">>, <<"..">>, <<>>])])), bytes()},
         <<(falco_uri:encode_path(Segs))/binary, "?", (falco_uri:encode_query(Q))/binary>>).

uri_input() ->
    falco_fuzz_prop:input(uri_valid(), tricky()).

%% Percent-decoding and normalisation of anything: a binary or bad_percent,
%% and a normalised path is a fixed point.
prop_uri_fuzz() ->
    ?FORALL(In, uri_input(),
            falco_fuzz_prop:safe(
              fun() ->
                      case {falco_uri:decode(In), falco_uri:normalize(In)} of
                          {{ok, D}, {ok, N}} ->
                              is_binary(D) andalso falco_uri:normalize(N) =:= {ok, N};
                          {{error, bad_percent}, {error, bad_percent}} -> true;
                          _ -> false
                      end
              end)).

%% Whatever comes in, no returned segment can climb or carry a separator.
prop_split_path_safe() ->
    ?FORALL(Path, ?LET(T, uri_input(), <<$/, T/binary>>),
            case falco_uri:split_path(Path) of
                {ok, Segs} ->
                    lists:all(fun(S) ->
                                      S =/= <<>> andalso S =/= <<".">> andalso S =/= <<"..">>
                                          andalso binary:match(S, [<<"/">>, <<"\\">>, <<0>>])
                                                  =:= nomatch
                              end, Segs);
                {error, Why} ->
                    lists:member(Why, [bad_percent, dot_dot, encoded_slash, backslash, nul])
            end).

%% §5.2.4 on an absolute path: no dot segment survives, the path stays
%% absolute, and a second pass changes nothing.
prop_remove_dot_segments() ->
    ?FORALL(Path, ?LET(T, uri_input(), <<$/, T/binary>>),
            begin
                Out = falco_uri:remove_dot_segments(Path),
                Segs = binary:split(Out, <<"/">>, [global]),
                binary:first(Out) =:= $/
                    andalso not lists:member(<<".">>, Segs)
                    andalso not lists:member(<<"..">>, Segs)
                    andalso falco_uri:remove_dot_segments(Out) =:= Out
            end).

%% -- falco_cookie ------------------------------------------------------------

%% Cookies we build read back as set, several at once, quotes removed.
prop_cookie_round_trip() ->
    ?FORALL(Cookies, list({token(), cookie_octets(), boolean()}),
            begin
                Built = [begin
                             Wire = if Quote -> <<$", V/binary, $">>; true -> V end,
                             {ok, SetCookie} = falco_cookie:set_cookie(N, Wire, #{path => <<"/">>}),
                             [Pair | _] = binary:split(SetCookie, <<";">>),
                             Pair
                         end || {N, V, Quote} <- Cookies],
                Header = iolist_to_binary(lists:join(<<"; ">>, Built)),
                falco_cookie:parse(Header) =:= [{N, V} || {N, V, _} <- Cookies]
            end).

%% Any bytes, percent-encoded, make a valid cookie value.
prop_cookie_encoded_value() ->
    ?FORALL({N, V}, {token(), bytes()},
            begin
                {ok, SetCookie} = falco_cookie:set_cookie(N, falco_uri:encode_query(V), #{}),
                [{N, Enc}] = falco_cookie:parse(SetCookie),
                falco_uri:decode(Enc) =:= {ok, V}
            end).

%% A Cookie field as agents send it.
cookie_valid() ->
    ?LET(Pairs, list({token(), oneof([cookie_octets(), ?LET(V, cookie_octets(), <<$", V/binary, $">>)])}),
         iolist_to_binary(lists:join(<<"; ">>, [[N, $=, V] || {N, V} <- Pairs]))).

prop_cookie_fuzz() ->
    ?FORALL(In, falco_fuzz_prop:input(cookie_valid(), tricky()),
            falco_fuzz_prop:safe(
              fun() ->
                      lists:all(fun({N, V}) ->
                                        is_binary(N) andalso is_binary(V)
                                            andalso binary:match(<<N/binary, V/binary>>, <<";">>)
                                                    =:= nomatch
                                end, falco_cookie:parse(In))
              end)).

%% -- falco_json --------------------------------------------------------------

prop_json_round_trip() ->
    ?FORALL(T, json(),
            begin
                {ok, Json} = falco_json:encode(T),
                falco_json:decode(iolist_to_binary(Json)) =:= {ok, T}
            end).

%% Random, tricky or mutated JSON: a value or a documented error, under the
%% default limits or tiny ones.
prop_json_fuzz() ->
    ?FORALL({In, Opts},
            {falco_fuzz_prop:input(?LET(T, json(), falco_json:encode_to_binary(T)), tricky()),
             oneof([#{}, ?LET({S, D}, {range(0, 64), range(0, 4)}, #{max_size => S, max_depth => D})])},
            falco_fuzz_prop:safe(fun() -> json_result(falco_json:decode(In, Opts)) end)).

json_result({ok, _}) -> true;
json_result({error, {syntax, N}}) -> is_integer(N);
json_result({error, {duplicate_key, K}}) -> is_binary(K);
json_result({error, {number_out_of_range, N}}) -> is_integer(N);
json_result({error, {too_deep, N}}) -> is_integer(N);
json_result({error, too_large}) -> true;
json_result(_) -> false.
