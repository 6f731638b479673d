%% PropEr properties for the application helpers: falco_multipart (split
%% invariance at every point, round trip, fuzzing), falco_sse and
%% falco_ndjson (encode/parse round trips, split invariance),
%% falco_range (resolved spans are exactly the bytes asked for),
%% falco_compress (streamed coding and request-body decoding give back the
%% bytes; negotiation never fails), falco_cond (dates round trip, parsers
%% total). Run from EUnit.
-module(falco_app_prop).
-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

%% PropEr 1.2 (the Debian package) cannot report an exception a property
%% raises (see falco_fuzz_prop:safe/1).
-define(SAFE(Expr), falco_fuzz_prop:safe(fun() -> Expr end)).

properties_test_() ->
    [{atom_to_list(P),
      {timeout, 120,
       ?_assert(proper:quickcheck(?MODULE:P(), [{numtests, falco_fuzz_prop:numtests(?MODULE, P, N)},
                                                {to_file, user}]))}}
     || {P, N} <- [{prop_multipart_round_trip, 300}, {prop_multipart_split_everywhere, 150},
                   {prop_multipart_fuzz, fuzz}, {prop_multipart_request, 200},
                   {prop_sse_round_trip, 300}, {prop_sse_split_everywhere, 200},
                   {prop_ndjson_split, 300},
                   {prop_range_exact, 500}, {prop_range_fuzz, fuzz},
                   {prop_compress_stream, 100}, {prop_decode_request, 100},
                   {prop_negotiate_total, 500},
                   {prop_date_round_trip, 500}, {prop_cond_total, 500}]].

%% -- generators -------------------------------------------------------------------

bchar() ->
    elements("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'()+_,-./:=?").

boundary() ->
    ?LET({Cs, Last}, {list(bchar()), bchar()}, list_to_binary(Cs ++ [Last])).

%% Bytes rich in what the parser looks for: CR, LF, dashes.
body_bytes() ->
    ?LET(Parts, list(oneof([binary(), elements([<<"\r">>, <<"\n">>, <<"\r\n">>, <<"-">>,
                                                <<"--">>, <<"\r\n-">>, <<"\r\n--">>])])),
         iolist_to_binary(Parts)).

header() ->
    ?LET({Name, Value}, {non_empty(list(elements("abcdefghijklmnopqrstuvwxyz-"))),
                         list(elements("abc xyz=;\"/"))},
         {list_to_binary(Name), string:trim(list_to_binary(Value), both, " ")}).

part() ->
    {list(header()), body_bytes()}.

%% A multipart body and the parts it holds (none of which may contain the
%% delimiter, as RFC 2046 requires of the sender).
message() ->
    message(100, 100000).

%% At most MaxParts parts, bodies and headers cut to MaxBody bytes (PropEr's
%% size grows with the run; the split properties are quadratic).
message(MaxParts, MaxBody) ->
    ?SUCHTHAT({B, Parts, _Bin},
              ?LET({B, Parts0, Preamble, Epilogue},
                   {boundary(), list(part()), list(elements("preamble text ")), binary()},
                   begin
                       Parts = [{lists:sublist(Hs, 3), cut(Body, MaxBody)}
                                || {Hs, Body} <- lists:sublist(Parts0, MaxParts)],
                       {B, Parts, build(B, Parts, cut(list_to_binary(Preamble), MaxBody),
                                        cut(Epilogue, MaxBody))}
                   end),
              lists:all(fun({_, Body}) -> binary:match(Body, <<"\r\n--", B/binary>>) =:= nomatch end,
                        Parts)).

cut(Bin, Max) -> binary:part(Bin, 0, min(Max, byte_size(Bin))).

build(B, Parts, Preamble, Epilogue) ->
    Pre = case Preamble of
              <<>> -> <<>>;
              _ -> <<Preamble/binary, "\r\n">>
          end,
    iolist_to_binary([Pre, [[<<"--">>, B, <<"\r\n">>, [[N, <<": ">>, V, <<"\r\n">>] || {N, V} <- Hs],
                             <<"\r\n">>, Body, <<"\r\n">>] || {Hs, Body} <- Parts],
                      <<"--">>, B, <<"--">>, Epilogue]).

%% -- falco_multipart ------------------------------------------------------------------

parse_whole(Bin, B) ->
    feed([Bin], falco_multipart:init(B, #{max_parts => 1000}), []).

feed([P | T], S, Acc) ->
    case falco_multipart:parse(P, S) of
        {more, Es, S1} -> feed(T, S1, [Acc | Es]);
        {done, Es, Rest} -> {ok, join(lists:flatten([Acc | Es])), iolist_to_binary([Rest | T])};
        {error, _} = E -> E
    end;
feed([], _, _) ->
    {error, truncated}.

join(Events) -> join(Events, []).
join([{headers, H} | T], Acc) -> join(T, [{H, []} | Acc]);
join([{data, D} | T], [{H, Ds} | Acc]) -> join(T, [{H, [Ds | D]} | Acc]);
join([part_end | T], [{H, Ds} | Acc]) -> join(T, [{H, iolist_to_binary(Ds)} | Acc]);
join([], Acc) -> lists:reverse(Acc).

prop_multipart_round_trip() ->
    ?FORALL({B, Parts, Bin}, message(),
            ?SAFE(begin
                {ok, Got, _} = parse_whole(Bin, B),
                Got =:= [{[{string:lowercase(N), V} || {N, V} <- Hs], Body} || {Hs, Body} <- Parts]
            end)).

%% Cut the input in two at every position: same parts, same epilogue.
prop_multipart_split_everywhere() ->
    ?FORALL({B, _Parts, Bin}, message(4, 60),
            ?SAFE(begin
                Whole = parse_whole(Bin, B),
                lists:all(fun(I) ->
                                  <<X:I/binary, Y/binary>> = Bin,
                                  feed([X, Y], falco_multipart:init(B, #{max_parts => 1000}), []) =:= Whole
                          end, lists:seq(0, byte_size(Bin)))
                    %% and byte by byte
                    andalso feed([<<C>> || <<C>> <= Bin], falco_multipart:init(B, #{max_parts => 1000}), [])
                            =:= Whole
            end)).

%% Random, tricky or mutated bodies, under the default or tiny limits: a
%% documented result, never an exception, and the same events and outcome
%% fed whole or cut at random points.
prop_multipart_fuzz() ->
    ?FORALL({{B, Bin}, Limits, Points},
            {?LET({B, _, Valid}, message(4, 200),
                  {B, falco_fuzz_prop:input(exactly(Valid), mp_tricky(B))}),
             oneof([#{max_parts => 1000},
                    ?LET({P, H, S}, {range(1, 3), range(1, 40), range(1, 60)},
                         #{max_parts => P, max_header_size => H, max_part_size => S})]),
             list(nat())},
            ?SAFE(begin
                Whole = mp_feed([Bin], falco_multipart:init(B, Limits), []),
                Split = mp_feed(falco_fuzz_prop:split(Bin, Points), falco_multipart:init(B, Limits), []),
                mp_result(Whole) andalso
                    (Whole =:= Split
                     orelse begin
                                io:format(user, "whole ~p~nsplit ~p~n", [Whole, Split]),
                                false
                            end)
            end)).

mp_tricky(B) ->
    ?LET(Pieces, list(oneof([body_bytes(), elements([<<"--", B/binary>>, <<"--", B/binary, "--">>,
                                                     <<"--", B/binary, "\r\n">>, <<"\r\n\r\n">>,
                                                     <<"a: b\r\n">>, <<"\r\n--", B/binary, " \t\r\n">>])])),
         iolist_to_binary(Pieces)).

%% Events with consecutive data joined, and how the input ended.
mp_feed([P | T], S, Acc) ->
    case falco_multipart:parse(P, S) of
        {more, Es, S1} -> mp_feed(T, S1, [Acc | Es]);
        {done, Es, Rest} -> {done, mp_events(lists:flatten([Acc | Es])), iolist_to_binary([Rest | T])};
        {error, _} = E -> E;
        Other -> {bad_result, Other}
    end;
mp_feed([], _, Acc) ->
    {more, mp_events(lists:flatten(Acc))}.

mp_events([{data, A}, {data, B} | T]) -> mp_events([{data, <<A/binary, B/binary>>} | T]);
mp_events([E | T]) -> [E | mp_events(T)];
mp_events([]) -> [].

mp_result({done, Es, Rest}) -> is_list(Es) andalso is_binary(Rest);
mp_result({more, Es}) -> is_list(Es);
mp_result({error, R}) -> is_atom(R) orelse element(1, R) =:= bad_header;
mp_result(_) -> false.

%% Through a request read in pieces of any size: same parts.
prop_multipart_request() ->
    ?FORALL({{B, Parts, Bin}, Piece, ReadLen}, {message(), range(1, 64), range(1, 64)},
            ?SAFE(begin
                Req = falco_test_req:body(
                        falco_test_req:new(<<"POST">>, <<"/">>,
                                           [{<<"content-type">>, <<"multipart/form-data; boundary=\"", B/binary, "\"">>}]),
                        Bin, Piece),
                {ok, Got, _} = falco_multipart:read_all(Req, #{read_length => ReadLen, max_parts => 1000}),
                [Body || {_, Body} <- Got] =:= [Body || {_, Body} <- Parts]
            end)).

%% -- falco_sse / falco_ndjson --------------------------------------------------------------

sse_text() ->
    ?LET(Parts, list(oneof([utf8(), elements([<<"\n">>, <<"\r">>, <<"\r\n">>, <<":">>, <<" ">>])])),
         iolist_to_binary(Parts)).

sse_name() ->
    ?LET(T, utf8(), binary:replace(T, [<<"\r">>, <<"\n">>, <<0>>], <<>>, [global])).

sse_event() ->
    ?LET({Data, Event, Id, Comment}, {sse_text(), oneof([undefined, sse_name()]),
                                      oneof([undefined, sse_name()]), oneof([undefined, sse_text()])},
         maps:from_list([{K, V} || {K, V} <- [{data, Data}, {event, Event}, {id, Id}, {comment, Comment}],
                                   V =/= undefined])).

%% What a client must see for a list of events (the standard's rules: data
%% lines joined by LF, no dispatch for empty data, the last id persists,
%% an empty event name means the default).
expected([], _Id) -> [];
expected([E | T], Id0) ->
    Id = maps:get(id, E, Id0),
    Data = binary:replace(binary:replace(maps:get(data, E), <<"\r\n">>, <<"\n">>, [global]),
                          <<"\r">>, <<"\n">>, [global]),
    case Data of
        <<>> -> expected(T, Id);
        _ ->
            M0 = #{data => Data},
            M1 = case maps:get(event, E, <<>>) of <<>> -> M0; Ev -> M0#{event => Ev} end,
            M = case Id of undefined -> M1; _ -> M1#{id => Id} end,
            [M | expected(T, Id)]
    end.

prop_sse_round_trip() ->
    ?FORALL(Events, list(sse_event()),
            ?SAFE(begin
                Bin = iolist_to_binary([falco_sse:encode(E) || E <- Events]),
                {ok, Got, _} = falco_sse:parse(Bin, falco_sse:init_parser()),
                Got =:= expected(Events, undefined)
            end)).

prop_sse_split_everywhere() ->
    ?FORALL(Events, ?LET(Es, list(sse_event()),
                         [maps:map(fun(_, V) -> cut(V, 50) end, E) || E <- lists:sublist(Es, 4)]),
            ?SAFE(begin
                Bin = iolist_to_binary([falco_sse:encode(E) || E <- Events]),
                {ok, Whole, _} = falco_sse:parse(Bin, falco_sse:init_parser()),
                lists:all(fun(I) ->
                                  <<X:I/binary, Y/binary>> = Bin,
                                  {ok, A, P1} = falco_sse:parse(X, falco_sse:init_parser()),
                                  {ok, C, _} = falco_sse:parse(Y, P1),
                                  A ++ C =:= Whole
                          end, lists:seq(0, byte_size(Bin)))
            end)).

json() ->
    ?LET(T, oneof([null, true, false, integer(), utf8(), list(integer()),
                   ?LET(Kvs, list({utf8(), oneof([integer(), utf8(), null])}), maps:from_list(Kvs))]),
         T).

prop_ndjson_split() ->
    ?FORALL({Values, Cuts}, {list(json()), list(range(1, 30))},
            ?SAFE(begin
                Bin = iolist_to_binary([begin {ok, L} = falco_ndjson:encode(V), L end || V <- Values]),
                {Out, PEnd} = cut_feed(Bin, Cuts, falco_ndjson:init_parser(), []),
                {ok, Last} = falco_ndjson:finish(PEnd),
                Out ++ Last =:= Values
            end)).

cut_feed(Bin, [C | Cs], P, Acc) when byte_size(Bin) > C ->
    <<X:C/binary, Rest/binary>> = Bin,
    {ok, Vs, P1} = falco_ndjson:parse(X, P),
    cut_feed(Rest, Cs, P1, Acc ++ Vs);
cut_feed(Bin, _, P, Acc) ->
    {ok, Vs, P1} = falco_ndjson:parse(Bin, P),
    {Acc ++ Vs, P1}.

%% -- falco_range -------------------------------------------------------------------------

spec() ->
    oneof([?LET({A, B}, {range(0, 60), range(0, 60)}, {min(A, B), max(A, B)}),
           ?LET(A, range(0, 60), {A, infinity}),
           ?LET(N, range(0, 60), {suffix, N})]).

bytes_of({suffix, N}, Size) -> seq(max(Size - N, 0), Size - 1);
bytes_of({F, infinity}, Size) -> seq(F, Size - 1);
bytes_of({F, L}, Size) -> seq(F, min(L, Size - 1)).

seq(A, B) when A > B -> [];
seq(A, B) -> lists:seq(A, B).

%% The spans cover exactly the bytes the satisfiable specs name, sorted,
%% disjoint and not adjacent.
prop_range_exact() ->
    ?FORALL({Specs, Size}, {non_empty(list(spec())), range(1, 50)},
            ?SAFE(begin
                Wanted = lists:usort(lists:append([bytes_of(S, Size) || S <- Specs])),
                case falco_range:resolve(Specs, Size, #{max_ranges => 1000}) of
                    {ok, Spans} ->
                        Covered = lists:append([lists:seq(O, O + L - 1) || {O, L} <- Spans]),
                        Covered =:= Wanted andalso gaps(Spans);
                    unsatisfiable ->
                        Wanted =:= []
                end
            end)).

gaps([{O1, L1}, {O2, _} = S | T]) -> O1 + L1 < O2 andalso gaps([S | T]);
gaps(_) -> true.

%% Random, tricky or mutated Range values: parse gives specs that resolve,
%% or one of its two errors.
prop_range_fuzz() ->
    ?FORALL(Bin, falco_fuzz_prop:input(range_value(),
                                       ?LET(Parts, list(oneof([binary(),
                                                               elements([<<"bytes=">>, <<"-">>, <<",">>,
                                                                         <<"1">>, <<"99">>, <<" ">>])])),
                                            iolist_to_binary(Parts))),
            ?SAFE(case falco_range:parse(Bin) of
                {ok, Specs} ->
                    Specs =/= [] andalso
                        case falco_range:resolve(Specs, 100, #{}) of
                            {ok, [_ | _]} -> true;
                            unsatisfiable -> true;
                            ignore -> length(Specs) > 16
                        end;
                {error, R} -> lists:member(R, [bad_range, unsupported_unit])
            end)).

%% A valid Range field value.
range_value() ->
    ?LET(Specs, non_empty(list(spec())),
         iolist_to_binary(["bytes=", lists:join(", ", [spec_bytes(S) || S <- Specs])])).

spec_bytes({suffix, N}) -> ["-", integer_to_binary(N)];
spec_bytes({F, infinity}) -> [integer_to_binary(F), "-"];
spec_bytes({F, L}) -> [integer_to_binary(F), "-", integer_to_binary(L)].

%% -- falco_compress --------------------------------------------------------------------------

prop_compress_stream() ->
    ?FORALL({Pieces, Coding}, {list(binary()), elements([<<"gzip">>, <<"deflate">>])},
            ?SAFE(begin
                Req = falco_test_req:new(<<"GET">>, <<"/">>, [{<<"accept-encoding">>, Coding}]),
                {stream, 200, _, Fun} =
                    falco_compress:call(Req, fun(_) ->
                                                     {stream, 200, [{<<"content-type">>, <<"text/plain">>}],
                                                      fun(Send) -> [ok = Send(P) || P <- Pieces], ok end}
                                             end, #{}),
                put(out, []),
                ok = Fun(fun(D) -> put(out, [get(out), D]), ok end),
                Out = iolist_to_binary(erase(out)),
                Plain = case Coding of
                            <<"gzip">> -> zlib:gunzip(Out);
                            <<"deflate">> -> zlib:uncompress(Out)
                        end,
                Plain =:= iolist_to_binary(Pieces)
            end)).

prop_decode_request() ->
    ?FORALL({Data, Piece, Want}, {binary(), range(1, 40), range(1, 40)},
            ?SAFE(begin
                Gz = zlib:gzip(Data),
                Req = falco_test_req:body(
                        falco_test_req:new(<<"POST">>, <<"/">>, [{<<"content-encoding">>, <<"gzip">>}]),
                        Gz, Piece),
                Handler = fun(R) -> {200, [], read_in(R, Want, [])} end,
                {200, [], Got} = falco_compress:call(Req, Handler, #{decode_request => true}),
                iolist_to_binary(Got) =:= Data
            end)).

read_in(Req, Want, Acc) ->
    case falco_req:read_body(Req, #{length => Want}) of
        {more, D, R} when byte_size(D) =< Want -> read_in(R, Want, [Acc, D]);
        {ok, D, _} when byte_size(D) =< Want -> [Acc, D]
    end.

prop_negotiate_total() ->
    ?FORALL(AE, ?LET(Parts, list(oneof([binary(), elements([<<"gzip">>, <<"deflate">>, <<"identity">>,
                                                            <<"*">>, <<";q=">>, <<"0">>, <<"1">>,
                                                            <<".5">>, <<",">>, <<" ">>])])),
                     iolist_to_binary(Parts)),
            ?SAFE(begin
                Got = falco_compress:negotiate(AE, [<<"gzip">>, <<"deflate">>]),
                lists:all(fun(C) -> lists:member(C, [<<"gzip">>, <<"deflate">>, identity]) end, Got)
                    andalso length(lists:usort(Got)) =:= length(Got)
            end)).

%% -- falco_cond ------------------------------------------------------------------------------

prop_date_round_trip() ->
    ?FORALL(S, range(0, 253402300799),
            falco_cond:parse_date(falco_cond:http_date(S)) =:= {ok, S}).

prop_cond_total() ->
    ?FORALL({Method, Headers}, {elements([<<"GET">>, <<"HEAD">>, <<"PUT">>, <<"POST">>]),
                                list({elements([<<"if-match">>, <<"if-none-match">>,
                                                <<"if-modified-since">>, <<"if-unmodified-since">>]),
                                      oneof([binary(), elements([<<"*">>, <<"\"v\"">>, <<"W/\"v\"">>,
                                                                 <<"Sun, 06 Nov 1994 08:49:37 GMT">>])])})},
            ?SAFE(begin
                Req = falco_test_req:new(Method, <<"/">>, Headers),
                lists:member(falco_cond:evaluate(Req, #{etag => <<"\"v\"">>, last_modified => 784111777}),
                             [ok, not_modified, precondition_failed])
            end)).
