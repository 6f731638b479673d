%% PropEr properties for the pure HTTP/1.1 codecs: the request-head parser
%% (falco_http1) and the chunked coding (falco_http1_chunked).
%%
%% - Fuzzing (`prop_parse_fuzz', `prop_chunked_fuzz', run 100,000 times by
%%   `make fuzz', see falco_fuzz_prop): arbitrary bytes, bytes biased to
%%   what the codec treats specially, and valid input mutated always give a
%%   documented result (never an exception), and the same one whether fed
%%   whole, cut at random points or byte by byte.
%% - Incrementality (RFC 9112 §2.2 puts no bound on how a message is split
%%   into packets): feeding the bytes one at a time, or cut at random points,
%%   gives the same request and the same leftover bytes as feeding them whole,
%%   for generated valid requests (methods, the three target forms, fields,
%%   Content-Length and chunked bodies) and for invalid ones (the same error).
%% - The chunked decoder likewise, and encode/decode round trips.
%% Run from EUnit, 400 cases each (the fuzz properties 1000).
-module(falco_http1_prop).
-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-define(NUMTESTS, 400).

properties_test_() ->
    [{atom_to_list(P),
      {timeout, 120,
       ?_assert(proper:quickcheck(?MODULE:P(), [{numtests, falco_fuzz_prop:numtests(?MODULE, P, ?NUMTESTS)},
                                                {to_file, user}]))}}
     || P <- [prop_parse_fuzz, prop_valid_request_parses, prop_valid_byte_by_byte,
              prop_valid_random_splits, prop_small_limits_splits_agree,
              prop_chunked_fuzz, prop_chunked_round_trip, prop_chunked_byte_by_byte,
              prop_chunked_random_splits]].

%% -- helpers -----------------------------------------------------------------

limits() -> falco_http1:default_limits().

%% Feeds Pieces to the parser. Returns {ok, Req, Rest} (Rest includes the
%% pieces that were not needed), {more, cont} or {error, Reason}.
feed([First | More], Limits) ->
    fed(falco_http1:parse(First, Limits), More).

fed({more, Cont}, [P | More]) -> fed(falco_http1:parse_more(P, Cont), More);
fed({more, _}, []) -> {more, cont};
fed({ok, Req, Rest}, More) -> {ok, Req, iolist_to_binary([Rest | More])};
fed({error, _} = Error, _) -> Error.

whole(Bin, Limits) -> feed([Bin], Limits).

bytes_of(Bin) -> falco_fuzz_prop:bytes_of(Bin).

split(Bin, Points) -> falco_fuzz_prop:split(Bin, Points).

%% The parser decides the 431 kind from what it has seen: a long line in a
%% nearly full block may be reported as `block' when it arrives in pieces
%% and as `line' when it arrives whole (both 431, RFC 6585 §5). Everything
%% else must agree exactly.
same(Whole, Split) -> norm(Whole) =:= norm(Split).

norm({error, {header_too_large, _}}) -> {error, header_too_large};
norm(Other) -> Other.

is_result({ok, Req, Rest}) -> is_map(Req) andalso is_binary(Rest);
is_result({more, _}) -> true;
is_result({error, Reason}) -> is_integer(falco_errors:status(Reason));
is_result(_) -> false.

%% -- generators: requests ----------------------------------------------------

tchar() -> elements("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ").

token() -> ?LET(Cs, non_empty(list(tchar())), list_to_binary(Cs)).

method() ->
    frequency([{4, elements([<<"GET">>, <<"POST">>, <<"HEAD">>, <<"PUT">>, <<"DELETE">>,
                             <<"PATCH">>, <<"OPTIONS">>])},
               {1, ?SUCHTHAT(M, token(), M =/= <<"CONNECT">>)}]).

pchar() ->
    frequency([{10, elements("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                             "-._~!$&'()*+,;=:@")},
               {1, ?LET({A, B}, {hexdig(), hexdig()}, [$%, A, B])}]).

hexdig() -> elements("0123456789abcdefABCDEF").

segment() -> ?LET(Cs, list(pchar()), iolist_to_binary(Cs)).

path() -> ?LET(Segs, non_empty(list(segment())), iolist_to_binary([[$/, S] || S <- Segs])).

query() ->
    oneof([<<>>, ?LET(Cs, list(oneof([pchar(), elements("/?")])), iolist_to_binary(Cs))]).

reg_name() ->
    ?LET(Cs, non_empty(list(elements("abcdefghijklmnopqrstuvwxyz0123456789-."))), list_to_binary(Cs)).

port() -> oneof([undefined, range(0, 65535)]).

%% {Target bytes, expected path, expected qs, absolute authority or none}
target(Method) ->
    frequency([{6, ?LET({P, Q, HasQ}, {path(), query(), boolean()},
                        case HasQ of
                            true -> {<<P/binary, "?", Q/binary>>, P, Q, none};
                            false -> {P, P, <<>>, none}
                        end)},
               {2, ?LET({Scheme, Host, Port, P, Q, HasQ},
                        {elements([<<"http">>, <<"https">>, <<"HTTP">>]), reg_name(), port(),
                         oneof([<<>>, path()]), query(), boolean()},
                        begin
                            Auth = case Port of
                                       undefined -> Host;
                                       _ -> <<Host/binary, ":", (integer_to_binary(Port))/binary>>
                                   end,
                            ExpPath = case P of <<>> -> <<"/">>; _ -> P end,
                            {Tail, ExpQs} = case HasQ of
                                                true -> {<<P/binary, "?", Q/binary>>, Q};
                                                false -> {P, <<>>}
                                            end,
                            {<<Scheme/binary, "://", Auth/binary, Tail/binary>>, ExpPath, ExpQs,
                             {Host, Port}}
                        end)}]
              ++ [{1, {<<"*">>, <<"*">>, <<>>, none}} || Method =:= <<"OPTIONS">>]).

field_value() ->
    ?LET(Cs, list(frequency([{20, range(16#21, 16#7E)}, {2, elements(" \t")},
                             {1, range(16#80, 16#FF)}])),
         trim(list_to_binary(Cs))).

%% Field values carry no leading or trailing whitespace (RFC 9110 §5.5).
trim(Bin) -> list_to_binary(string:trim(binary_to_list(Bin), both, " \t")).

%% Fields that do not change framing or routing; names in any case.
field() ->
    ?LET({Name, Value}, {?SUCHTHAT(N, token(), not lists:member(string:lowercase(N), special())),
                         field_value()},
         {Name, Value}).

special() ->
    [<<"host">>, <<"content-length">>, <<"transfer-encoding">>, <<"connection">>, <<"expect">>].

body() ->
    frequency([{2, none},
               {2, {length, binary()}},
               {2, {chunked, list(non_empty(binary())), list({lower_token(), field_value()})}}]).

lower_token() -> ?LET(T, token(), string:lowercase(T)).

ows() -> elements([<<>>, <<" ">>, <<"\t">>, <<"  ">>]).

%% A valid request: {Bytes, expectations}.
request() ->
    ?LET(Method, method(),
    ?LET({{Target, Path, Qs, Abs}, Version, Fields, Body, {O1, O2}, Empty, Host, Trailing},
         {target(Method), elements([{1, 0}, {1, 1}]), list(field()), body(), {ows(), ows()},
          range(0, 2), reg_name(), binary()},
         begin
             V = case Version of {1, 1} -> <<"HTTP/1.1">>; {1, 0} -> <<"HTTP/1.0">> end,
             HostFields = case Version of
                              {1, 1} -> [{<<"Host">>, Host}];
                              {1, 0} -> []
                          end,
             %% Chunked is 1.1 only (RFC 9112 §6.1).
             Body1 = case {Body, Version} of
                         {{chunked, _, _}, {1, 0}} -> none;
                         _ -> Body
                     end,
             {BodyFields, BodyBytes} = body_bytes(Body1),
             AllFields = HostFields ++ Fields ++ BodyFields,
             Head = [binary:copy(<<"\r\n">>, Empty), Method, " ", Target, " ", V, "\r\n",
                     [[N, ":", O1, Val, O2, "\r\n"] || {N, Val} <- AllFields], "\r\n"],
             Bytes = iolist_to_binary([Head, BodyBytes, Trailing]),
             Expect = #{method => Method, path => Path, qs => Qs, version => Version,
                        abs => Abs, host => Host,
                        headers => [{string:lowercase(N), Val} || {N, Val} <- AllFields],
                        body => Body1, rest => iolist_to_binary([BodyBytes, Trailing])},
             {Bytes, Expect}
         end)).

body_bytes(none) ->
    {[], <<>>};
body_bytes({length, Bin}) ->
    {[{<<"Content-Length">>, integer_to_binary(byte_size(Bin))}], Bin};
body_bytes({chunked, Chunks, Trailers}) ->
    {[{<<"Transfer-Encoding">>, <<"chunked">>}],
     [[falco_http1_chunked:encode(C) || C <- Chunks], falco_http1_chunked:last(Trailers)]}.

request_bytes() -> ?LET({Bytes, _}, request(), Bytes).

%% Bytes biased towards what the parser treats specially.
tricky() ->
    ?LET(Parts, list(oneof([binary(),
                            elements([<<"\r\n">>, <<"\r">>, <<"\n">>, <<" ">>, <<"\t">>, <<":">>,
                                      <<"GET ">>, <<"POST ">>, <<"OPTIONS * ">>, <<"/">>,
                                      <<"http://">>, <<"?">>, <<"%">>, <<"%4">>, <<"[">>,
                                      <<"]">>, <<" HTTP/1.1\r\n">>, <<" HTTP/1.0\r\n">>,
                                      <<"HTTP/2.0">>, <<"Host: a\r\n">>, <<"Host:">>,
                                      <<"Content-Length: ">>, <<"Transfer-Encoding: ">>,
                                      <<"chunked">>, <<",">>, <<"Expect: 100-continue\r\n">>,
                                      <<"Connection: close\r\n">>, <<0>>, <<127>>,
                                      <<"\r\n\r\n">>, <<"12345678901234567">>])])),
         iolist_to_binary(Parts)).

small_limits() ->
    ?LET({RL, HL, HB, HC, E}, {range(1, 64), range(1, 64), range(1, 256), range(0, 6), range(0, 3)},
         #{max_request_line => RL, max_header_line => HL, max_header_block => HB,
           max_header_count => HC, max_empty_lines => E}).

%% -- properties: the request parser -------------------------------------------

%% Random, tricky or mutated requests, under the default or tiny limits:
%% a documented result, never an exception, and the same one fed whole, cut
%% at random points and byte by byte.
prop_parse_fuzz() ->
    ?FORALL({Bytes, Limits, Points},
            {falco_fuzz_prop:input(request_bytes(), tricky()),
             frequency([{3, limits()}, {1, small_limits()}]), list(nat())},
            falco_fuzz_prop:safe(
              fun() ->
                      is_result(whole(Bytes, Limits))
                          andalso agree(Bytes, split(Bytes, Points), Limits)
                          andalso agree(Bytes, [<<>> | bytes_of(Bytes)], Limits)
              end)).

%% A generated request parses to what was generated, and what follows its
%% head (body and anything after) is left untouched.
prop_valid_request_parses() ->
    ?FORALL({Bytes, E}, request(),
            case whole(Bytes, limits()) of
                {ok, R, Rest} ->
                    #{method := M, path := P, qs := Q, version := V, headers := Hs, body := B,
                      host := Host} = R,
                    Ok = M =:= maps:get(method, E) andalso P =:= maps:get(path, E)
                        andalso Q =:= maps:get(qs, E) andalso V =:= maps:get(version, E)
                        andalso Hs =:= maps:get(headers, E)
                        andalso Rest =:= maps:get(rest, E)
                        andalso B =:= framing(maps:get(body, E))
                        andalso host_ok(Host, maps:get(port, R), E)
                        andalso body_ok(B, Rest, maps:get(body, E)),
                    Ok orelse io:format("parsed ~p~nexpected ~p~n", [R, E]),
                    Ok;
                Other ->
                    io:format("~p~n~p~n", [Bytes, Other]),
                    false
            end).

framing(none) -> none;
framing({length, Bin}) -> {length, byte_size(Bin)};
framing({chunked, _, _}) -> chunked.

host_ok(Host, Port, #{abs := {AbsHost, AbsPort}}) ->
    Host =:= string:lowercase(AbsHost) andalso Port =:= AbsPort;
host_ok(Host, undefined, #{version := {1, 1}, host := H}) -> Host =:= H;
host_ok(Host, undefined, #{version := {1, 0}}) -> Host =:= <<>>;
host_ok(_, _, _) -> false.

%% The body that follows the head decodes back to what was generated.
body_ok(none, _, _) -> true;
body_ok({length, N}, Rest, {length, Bin}) -> binary:part(Rest, 0, N) =:= Bin;
body_ok(chunked, Rest, {chunked, Chunks, Trailers}) ->
    case falco_http1_chunked:decode(Rest, falco_http1_chunked:init(limits())) of
        {done, Data, T, _} -> iolist_to_binary(Data) =:= iolist_to_binary(Chunks) andalso T =:= Trailers;
        _ -> false
    end.

prop_valid_byte_by_byte() ->
    ?FORALL({Bytes, _}, request(), agree(Bytes, [<<>> | bytes_of(Bytes)], limits())).

prop_valid_random_splits() ->
    ?FORALL({{Bytes, _}, Points}, {request(), list(nat())},
            agree(Bytes, split(Bytes, Points), limits())).

%% Tiny limits make every limit error reachable while the input is split.
prop_small_limits_splits_agree() ->
    ?FORALL({Bytes, Limits, Points},
            {oneof([request_bytes(), falco_fuzz_prop:mutated(request_bytes())]), small_limits(),
             list(nat())},
            agree(Bytes, split(Bytes, Points), Limits)
                andalso agree(Bytes, [<<>> | bytes_of(Bytes)], Limits)).

agree(_Bytes, [], _Limits) ->
    true;
agree(Bytes, Pieces, Limits) ->
    Whole = whole(Bytes, Limits),
    Split = feed(Pieces, Limits),
    same(Whole, Split) orelse begin
                                 io:format("bytes ~p~npieces ~p~nwhole ~p~nsplit ~p~n",
                                           [Bytes, Pieces, Whole, Split]),
                                 false
                             end.

%% -- properties: chunked ------------------------------------------------------

dec() -> falco_http1_chunked:init(limits()).

%% Feeds Pieces to the decoder; returns {done, Data, Trailers, Rest},
%% {more, Data} or {error, Reason}, Data being everything decoded.
cfeed(Pieces) -> cfeed(Pieces, dec(), []).

cfeed([P | More], St, Acc) ->
    case falco_http1_chunked:decode(P, St) of
        {more, Data, St1} -> cfeed(More, St1, [Acc, Data]);
        {done, Data, Trailers, Rest} ->
            {done, iolist_to_binary([Acc, Data]), Trailers, iolist_to_binary([Rest | More])};
        {error, _} = Error -> Error
    end;
cfeed([], _St, Acc) ->
    {more, iolist_to_binary(Acc)}.

is_cresult({done, D, T, R}) -> is_binary(D) andalso is_list(T) andalso is_binary(R);
is_cresult({more, D}) -> is_binary(D);
is_cresult({error, {bad_request, A}}) -> is_atom(A);
is_cresult({error, {header_too_large, K}}) -> lists:member(K, [line, block, count]);
is_cresult(_) -> false.

chunk_data() -> oneof([non_empty(binary()), ?LET(L, non_empty(list(binary())), L)]).

%% Encoded bodies, sometimes with extensions on the size lines.
encoded() ->
    ?LET({Chunks, Trailers, Ext, Trailing},
         {list(chunk_data()), list({lower_token(), field_value()}),
          elements([<<>>, <<";a">>, <<" ; a=b">>, <<";a=\"x y\"">>]), binary()},
         begin
             Enc = [[integer_to_binary(iolist_size(C), 16), Ext, "\r\n", C, "\r\n"]
                    || C <- Chunks, iolist_size(C) > 0],
             {iolist_to_binary([Enc, falco_http1_chunked:last(Trailers), Trailing]),
              iolist_to_binary(Chunks), Trailers, Trailing}
         end).

%% Random, tricky or mutated chunked bodies: a documented result, never an
%% exception, and the same one fed whole, cut at random points and byte by
%% byte.
prop_chunked_fuzz() ->
    ?FORALL({Bin, Points},
            {falco_fuzz_prop:input(?LET({B, _, _, _}, encoded(), B), tricky()), list(nat())},
            falco_fuzz_prop:safe(
              fun() ->
                      is_cresult(cfeed([Bin]))
                          andalso cagree(Bin, split(Bin, Points))
                          andalso cagree(Bin, bytes_of(Bin))
              end)).

%% encode/1 + last/1 decode back to the same data and trailers, and the
%% bytes after the body are left over.
prop_chunked_round_trip() ->
    ?FORALL({Chunks, Trailers, Trailing},
            {list(chunk_data()), list({lower_token(), field_value()}), binary()},
            begin
                Bin = iolist_to_binary([[falco_http1_chunked:encode(C) || C <- Chunks],
                                        falco_http1_chunked:last(Trailers), Trailing]),
                cfeed([Bin]) =:= {done, iolist_to_binary(Chunks), Trailers, Trailing}
            end).

prop_chunked_byte_by_byte() ->
    ?FORALL({Bin, Data, Trailers, Trailing}, encoded(),
            cagree(Bin, bytes_of(Bin)) andalso
                cfeed(bytes_of(Bin)) =:= {done, Data, Trailers, Trailing}).

prop_chunked_random_splits() ->
    ?FORALL({{Bin, Data, Trailers, Trailing}, Points}, {encoded(), list(nat())},
            cagree(Bin, split(Bin, Points)) andalso
                cfeed(split(Bin, Points)) =:= {done, Data, Trailers, Trailing}).

%% Same outcome fed whole or in pieces. Fed in pieces, an error may come
%% before data that the whole input would have decoded first; the error
%% must be the same.
cagree(_Bin, []) ->
    true;
cagree(Bin, Pieces) ->
    Whole = cfeed([Bin]),
    Split = cfeed(Pieces),
    Same = case {Whole, Split} of
               {{error, E}, {error, E}} -> true;
               {{more, D1}, {more, D2}} -> D1 =:= D2;
               _ -> Whole =:= Split
           end,
    Same orelse io:format("bytes ~p~npieces ~p~nwhole ~p~nsplit ~p~n", [Bin, Pieces, Whole, Split]),
    Same.
