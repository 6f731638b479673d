%% PropEr properties for falco_router: bindings round-trip through
%% percent-encoding (RFC 3986 §2.1), the trie picks exactly the route a
%% naive reference picks (literal over `:name' over `*name', segment by
%% segment), and no path makes matching raise. Run from EUnit, 500 cases
%% each.
-module(falco_router_prop).
-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-define(NUMTESTS, 500).

properties_test_() ->
    [{atom_to_list(P),
      {timeout, 120,
       ?_assert(proper:quickcheck(?MODULE:P(), [{numtests, ?NUMTESTS}, {to_file, user}]))}}
     || P <- [prop_binding_round_trip, prop_wildcard_round_trip, prop_matches_reference,
              prop_match_total]].

handler() ->
    fun(_) -> {200, [], <<>>} end.

%% Whatever bytes a segment holds, encoded and matched, they come back.
prop_binding_round_trip() ->
    {ok, R} = falco_router:compile([{<<"/x/:v">>, handler()}, {<<"/x/:v/end">>, handler()}]),
    ?FORALL(V, non_empty(binary()),
            begin
                Enc = falco_uri:encode_path_segment(V),
                {ok, <<"/x/:v">>, #{v => V}} =:=
                    falco_router:match(R, <<"GET">>, <<>>, <<"/x/", Enc/binary>>)
                    andalso {ok, <<"/x/:v/end">>, #{v => V}} =:=
                    falco_router:match(R, <<"GET">>, <<>>, <<"/x/", Enc/binary, "/end">>)
            end).

prop_wildcard_round_trip() ->
    {ok, R} = falco_router:compile([{<<"/f/*rest">>, handler()}]),
    ?FORALL(Segs, non_empty(list(binary())),
            begin
                Path = iolist_to_binary(["/f" | [["/", falco_uri:encode_path_segment(S)]
                                                 || S <- Segs]]),
                {ok, <<"/f/*rest">>, #{rest => Segs}} =:=
                    falco_router:match(R, <<"GET">>, <<>>, Path)
            end).

%% -- trie vs reference --------------------------------------------------------------

kind() ->
    frequency([{3, {lit, <<"a">>}}, {2, {lit, <<"b">>}}, {1, {lit, <<>>}}, {3, param}]).

pattern() ->
    ?LET({Kinds, Wild}, {list(kind()), boolean()},
         case Kinds of
             [] -> [wild];
             _ when Wild -> Kinds ++ [wild];
             _ -> Kinds
         end).

%% Distinct shapes only: two routes of the same shape are a compile error.
patterns() ->
    ?LET(Ps, non_empty(list(pattern())), lists:usort(Ps)).

request_path() ->
    ?LET(Segs, non_empty(list(elements([<<"a">>, <<"b">>, <<"c">>, <<>>]))), Segs).

route_path(Pattern) ->
    {Parts, _} = lists:mapfoldl(fun({lit, L}, I) -> {[$/, L], I + 1};
                                   (param, I) -> {["/:p", integer_to_list(I)], I + 1};
                                   (wild, I) -> {["/*w", integer_to_list(I)], I + 1}
                                end, 1, Pattern),
    iolist_to_binary(Parts).

%% The reference: every pattern that matches, ranked segment by segment
%% (literal 0, `:name' 1, `*name' 2); the smallest rank list wins.
reference(Patterns, Segs) ->
    case lists:sort([{ranks(P), P} || P <- Patterns, matches(P, Segs)]) of
        [{_, P} | _] -> {ok, route_path(P)};
        [] -> not_found
    end.

matches([], []) -> true;
matches([wild], [_ | _]) -> true;
matches([{lit, L} | P], [L | S]) -> matches(P, S);
matches([param | P], [Seg | S]) when Seg =/= <<>> -> matches(P, S);
matches(_, _) -> false.

ranks(P) -> [case K of {lit, _} -> 0; param -> 1; wild -> 2 end || K <- P].

prop_matches_reference() ->
    ?FORALL({Patterns, Segs}, {patterns(), request_path()},
            begin
                {ok, R} = falco_router:compile([{route_path(P), handler()} || P <- Patterns]),
                Path = iolist_to_binary([["/", S] || S <- Segs]),
                Got = case falco_router:match(R, <<"GET">>, <<>>, Path) of
                          {ok, Route, _} -> {ok, Route};
                          {error, not_found} -> not_found
                      end,
                ?WHENFAIL(io:format("routes ~p~npath ~p~ngot ~p~n",
                                    [[route_path(P) || P <- Patterns], Path, Got]),
                          Got =:= reference(Patterns, Segs))
            end).

%% Any bytes as a path: an answer, never an exception.
prop_match_total() ->
    {ok, R} = falco_router:compile([{<<"/">>, handler()}, {<<"/a/:b">>, handler()},
                                    {<<"/c/*d">>, handler(), #{methods => [<<"GET">>]}},
                                    {<<"h.example">>, [{<<"/a">>, handler()}]}]),
    ?FORALL({Method, Path}, {elements([<<"GET">>, <<"HEAD">>, <<"POST">>, <<"OPTIONS">>]),
                             oneof([binary(), ?LET(B, binary(), <<"/", B/binary>>)])},
            begin
                Result = falco_router:match(R, Method, <<"h.example">>, Path),
                Reply = falco_router:dispatch(#{method => Method, path => Path, qs => <<>>,
                                                host => <<"x">>}, R),
                is_tuple(Result) andalso is_integer(element(1, Reply))
            end).
