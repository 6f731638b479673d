%% PropEr properties for the pure HTTP/3 modules: falco_http3_frame (what
%% the builders write parses back to the same frame, whole and through a
%% reader fed in pieces; arbitrary and mutated bytes, cut anywhere, never
%% make the reader raise and give the same items as whole), falco_qpack
%% (a field list encoded decodes back equal; arbitrary and mutated sections
%% and instruction streams never make the decoder raise) and
%% falco_http3_machine (random stream events and sends never make the
%% machine raise, and the bytes it writes parse). Run from EUnit, 500
%% cases each (the fuzz properties 1000, 100,000 in `make fuzz', see
%% falco_fuzz_prop).
-module(falco_http3_prop).
-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-define(NUMTESTS, 500).
-define(F, falco_http3_frame).
-define(Q, falco_qpack).

properties_test_() ->
    [{atom_to_list(P),
      {timeout, 120,
       ?_assert(proper:quickcheck(?MODULE:P(), [{numtests, falco_fuzz_prop:numtests(?MODULE, P, ?NUMTESTS)},
                                                {to_file, user}]))}}
     || P <- [prop_frame_round_trip, prop_reader_in_pieces, prop_frame_fuzz,
              prop_qpack_round_trip, prop_qpack_fuzz, prop_machine_total]].

%% -- generators ------------------------------------------------------------------

varint() -> oneof([range(0, 63), range(0, 16383), range(0, 16#3fffffff), range(0, 16#3fffffffffffffff)]).

settings() ->
    ?LET(L, list(oneof([{qpack_max_table_capacity, varint()},
                        {max_field_section_size, varint()},
                        {qpack_blocked_streams, varint()},
                        {enable_connect_protocol, boolean()},
                        {h3_datagram, boolean()}])),
         maps:from_list(L)).

%% {Frame as parse/2 gives it, its bytes}
frame() ->
    oneof([?LET(D, binary(), {{data, D}, ?F:data(D)}),
           ?LET(B, binary(), {{headers, B}, ?F:headers(B)}),
           ?LET(I, varint(), {{cancel_push, I}, ?F:cancel_push(I)}),
           ?LET(S, settings(), {{settings, S}, ?F:settings(S)}),
           ?LET({S, N}, {settings(), range(0, 1000)},
                {{settings, S}, ?F:settings(S, [{?F:reserved(N), N}])}),
           ?LET({I, B}, {varint(), binary()}, {{push_promise, I, B}, ?F:push_promise(I, B)}),
           ?LET(I, varint(), {{goaway, I}, ?F:goaway(I)}),
           ?LET(I, varint(), {{max_push_id, I}, ?F:max_push_id(I)}),
           ?LET({N, B}, {range(0, 100000), binary()},
                {{unknown, ?F:reserved(N)}, ?F:frame(?F:reserved(N), B)})]).

frames_bin() ->
    ?LET(Fs, ?LET(N, range(1, 4), vector(N, frame())), iolist_to_binary([B || {_, B} <- Fs])).

%% Field names: static-table names (so the encoder's references are used)
%% or lowercase tokens; values any bytes, or the static table's.
field() ->
    oneof([?LET(I, range(0, 98), falco_qpack_static:entry(I)),
           ?LET({I, V}, {range(0, 98), binary()}, {element(1, falco_qpack_static:entry(I)), V}),
           {name(), binary()}]).

name() ->
    ?LET(Cs, non_empty(list(elements(lists:seq($a, $z) ++ "-0123456789!#$%&'*+.^_`|~"))),
         list_to_binary(Cs)).

%% -- frames --------------------------------------------------------------------------

prop_frame_round_trip() ->
    ?FORALL({Frame, Bytes}, frame(),
            begin
                Bin = iolist_to_binary(Bytes),
                {ok, Items, R} = ?F:read(Bin, ?F:reader(byte_size(Bin))),
                ?F:parse(Bin, byte_size(Bin)) =:= {ok, Frame, <<>>}
                    andalso ?F:parse(<<Bin/binary, "next">>, byte_size(Bin)) =:= {ok, Frame, <<"next">>}
                    andalso Items =:= [Frame] andalso ?F:reader_done(R) =:= ok
            end).

%% Frames cut at any points read as they do whole (DATA in more pieces).
prop_reader_in_pieces() ->
    ?FORALL({Bin, Points}, {frames_bin(), list(nat())},
            begin
                Whole = items([Bin], 1 bsl 20),
                Split = items(falco_fuzz_prop:split(Bin, Points), 1 bsl 20),
                ?WHENFAIL(io:format("whole ~p~nsplit ~p~n", [Whole, Split]),
                          Whole =:= Split andalso element(2, Whole) =:= ok)
            end).

%% Any bytes, cut anywhere, with a small or a large bound: never an
%% exception, only the documented results, and the same as whole.
prop_frame_fuzz() ->
    ?FORALL({Bin, Max, Points},
            {falco_fuzz_prop:input(frames_bin(), binary()), oneof([0, 16, 16384]), list(nat())},
            falco_fuzz_prop:safe(
              fun() ->
                      Whole = items([Bin], Max),
                      Split = items(falco_fuzz_prop:split(Bin, Points), Max),
                      Bytes = items(falco_fuzz_prop:bytes_of(Bin), Max),
                      Whole =:= Split andalso Whole =:= Bytes
                          andalso parse_total(Bin, Max)
                          orelse begin
                                     io:format(user, "whole ~p~nsplit ~p~n", [Whole, Split]),
                                     false
                                 end
              end)).

%% The items of Pieces read in order (DATA pieces joined), and the end.
items(Pieces, Max) ->
    items(Pieces, ?F:reader(Max), []).

items([], R, Acc) ->
    {join(lists:reverse(Acc)), ?F:reader_done(R)};
items([P | Ps], R0, Acc) ->
    case ?F:read(P, R0) of
        {ok, Items, R} ->
            true = lists:all(fun valid_item/1, Items),
            items(Ps, R, lists:reverse(Items, Acc));
        {error, {Code, Why}} when is_atom(Code), is_atom(Why) ->
            %% a connection error: what came before it does not matter
            {error, {Code, Why}}
    end.

valid_item({data, B}) -> is_binary(B);
valid_item({headers, B}) -> is_binary(B);
valid_item({settings, S}) -> is_map(S);
valid_item({push_promise, I, B}) -> is_integer(I) andalso is_binary(B);
valid_item({too_large, N, L}) -> is_atom(N) andalso is_integer(L);
valid_item({T, I}) -> lists:member(T, [cancel_push, goaway, max_push_id, unknown]) andalso is_integer(I).

join([{data, A}, {data, B} | T]) -> join([{data, <<A/binary, B/binary>>} | T]);
join([I | T]) -> [I | join(T)];
join([]) -> [].

parse_total(Bin, Max) ->
    case ?F:parse(Bin, Max) of
        {ok, _, Rest} -> byte_size(Rest) < byte_size(Bin) andalso parse_total(Rest, Max);
        more -> true;
        {error, {C, W}} -> is_atom(C) andalso is_atom(W)
    end.

%% -- QPACK ---------------------------------------------------------------------------

prop_qpack_round_trip() ->
    ?FORALL(Fields, list(field()),
            begin
                Bin = iolist_to_binary(?Q:encode(Fields)),
                Size = lists:sum([byte_size(N) + byte_size(V) + 32 || {N, V} <- Fields]),
                ?Q:decode(Bin, #{}) =:= {ok, Fields}
                    andalso ?Q:decode(Bin, #{max_field_section_size => Size}) =:= {ok, Fields}
                    andalso (Fields =:= []
                             orelse ?Q:decode(Bin, #{max_field_section_size => Size - 1})
                                    =:= {error, field_section_too_large})
            end).

%% Sections and instruction streams of any bytes: never an exception.
prop_qpack_fuzz() ->
    Valid = ?LET(Fields, list(field()), iolist_to_binary(?Q:encode(Fields))),
    ?FORALL({Bin, Max, Points}, {falco_fuzz_prop:input(Valid, binary()), oneof([100, infinity]),
                                 list(nat())},
            falco_fuzz_prop:safe(
              fun() ->
                      Pieces = falco_fuzz_prop:split(Bin, Points),
                      valid_decode(?Q:decode(Bin, #{max_field_section_size => Max}))
                          andalso instructions(fun ?Q:encoder_stream/2, Pieces)
                          andalso instructions(fun ?Q:decoder_stream/2, Pieces)
                          andalso one_instruction(fun ?Q:encoder_instruction/1, Bin)
                          andalso one_instruction(fun ?Q:decoder_instruction/1, Bin)
              end)).

valid_decode({ok, Fields}) -> lists:all(fun({N, V}) -> is_binary(N) andalso is_binary(V) end, Fields);
valid_decode({error, field_section_too_large}) -> true;
valid_decode({error, {qpack_decompression_failed, W}}) -> is_atom(W).

%% What is held between pieces stays an instruction's few bytes.
instructions(Fun, Pieces) ->
    _ = lists:foldl(fun(_, stopped) -> stopped;
                       (P, {ok, Buf}) ->
                            case Fun(P, Buf) of
                                {ok, B} when is_binary(B), byte_size(B) =< 16 -> {ok, B};
                                {error, {C, W}} when is_atom(C), is_atom(W) -> stopped
                            end
                    end, {ok, <<>>}, Pieces),
    true.

one_instruction(Fun, Bin) ->
    case Fun(Bin) of
        {ok, I, Rest} -> is_tuple(I) andalso is_binary(Rest);
        more -> true;
        {error, {C, W}} -> is_atom(C) andalso is_atom(W)
    end.

%% -- the machine ------------------------------------------------------------------------

%% Random events on a few streams, valid frames and bytes mixed, and the
%% application's sends: never an exception; every action is of a
%% documented shape and the bytes written on request streams parse.
prop_machine_total() ->
    ?FORALL({Control, Opened, Steps}, {boolean(), list(elements([0, 4, 8])), list(step())},
            falco_fuzz_prop:safe(
              fun() ->
                      {M0, A0} = falco_http3_machine:new(#{max_field_section_size => 200}),
                      Head = iolist_to_binary(?F:headers(?Q:encode(request_fields()))),
                      First = [{event, {stream_data, 2, control_bytes(), nofin}} || Control]
                          ++ [{event, {stream_data, Id, Head, nofin}} || Id <- lists:usort(Opened)],
                      {_, Acts} = lists:foldl(fun(S, {M, Acc}) ->
                                                      {M1, A} = run(S, M),
                                                      {M1, lists:reverse(A, Acc)}
                                              end, {M0, lists:reverse(A0)}, First ++ Steps),
                      lists:all(fun valid_action/1, Acts)
                          andalso length([C || {close, C} <- Acts]) =< 1
              end)).

control_bytes() ->
    iolist_to_binary([?F:stream_header(control), ?F:settings(#{})]).

%% Mostly request streams (0, 4, 8) carrying mostly valid frames, so
%% requests are made, answered, cut and reset; some bytes on the
%% unidirectional streams (2, 6, 10).
step() ->
    Request = elements([0, 4, 8]),
    Fin = elements([fin, nofin]),
    frequency([{8, {event, ?LET({Id, B, F}, {Request, request_bytes(), Fin},
                                {stream_data, Id, B, F})}},
               {2, {event, ?LET({Id, B, F}, {elements([2, 6, 10]), stream_bytes(), Fin},
                                {stream_data, Id, B, F})}},
               {1, {event, ?LET({Id, K}, {elements([0, 2, 4, 6]), elements([bidi, uni])},
                                {stream_open, Id, K})}},
               {1, {event, ?LET({Id, C}, {elements([0, 2, 4, 6, 8]), range(0, 16#300)},
                                {stream_reset, Id, C})}},
               {1, {event, ?LET({Id, C}, {elements([0, 3, 4]), range(0, 16#300)},
                                {stop_sending, Id, C})}},
               {4, {respond, Request, elements([103, 200, 404]), Fin}},
               {3, {data, Request, binary(), Fin}},
               {1, {trailers, Request}},
               {1, {reset, Request}},
               {1, goaway}, {1, drain}]).

request_fields() ->
    [{<<":method">>, <<"POST">>}, {<<":scheme">>, <<"https">>},
     {<<":authority">>, <<"a">>}, {<<":path">>, <<"/">>}].

request_bytes() ->
    frequency([{4, iolist_to_binary(?F:headers(?Q:encode(request_fields())))},
               {2, ?LET(L, range(0, 6), iolist_to_binary(
                                          ?F:headers(?Q:encode(request_fields() ++
                                                                   [{<<"content-length">>,
                                                                     integer_to_binary(L)}]))))},
               {4, ?LET(D, binary(3), iolist_to_binary(?F:data(D)))},
               {1, iolist_to_binary(?F:headers(?Q:encode([{<<"x-t">>, <<"1">>}])))},
               {1, ?LET(F, frame(), iolist_to_binary(element(2, F)))},
               {1, binary()}]).

stream_bytes() ->
    oneof([binary(),
           <<0>>, <<2>>, <<3>>, <<16#21>>,
           iolist_to_binary(?F:settings(#{})),
           ?LET(F, frame(), iolist_to_binary(element(2, F)))]).

run({event, E}, M) -> falco_http3_machine:event(E, M);
run({respond, Id, Status, Fin}, M) ->
    falco_http3_machine:send_response(Id, Status, [{<<"x-a">>, <<"b">>}], Fin, M);
run({data, Id, D, Fin}, M) -> falco_http3_machine:send_data(Id, D, Fin, M);
run({trailers, Id}, M) -> falco_http3_machine:send_trailers(Id, [{<<"x-t">>, <<"1">>}], M);
run({reset, Id}, M) -> falco_http3_machine:reset_stream(Id, h3_request_cancelled, M);
run(goaway, M) -> falco_http3_machine:goaway(M);
run(drain, M) -> falco_http3_machine:drain(M).

valid_action({send, 3, Bytes, nofin}) -> is_binary(iolist_to_binary(Bytes));
valid_action({send, Id, Bytes, Fin}) when Fin =:= fin; Fin =:= nofin ->
    Id rem 4 =:= 0 andalso parse_total(iolist_to_binary(Bytes), 1 bsl 20);
valid_action({request, Id, Req}) -> is_integer(Id) andalso (is_map(Req) orelse element(1, Req) =:= error);
valid_action({data, Id, D, Fin}) -> is_integer(Id) andalso is_binary(iolist_to_binary(D))
                                        andalso (Fin =:= fin orelse Fin =:= nofin);
valid_action({trailers, Id, Fields}) -> is_integer(Id) andalso is_list(Fields);
valid_action({reset, Id, _}) -> is_integer(Id);
valid_action({reset_stream, Id, Code}) -> is_integer(Id) andalso is_integer(falco_http3_error:code(Code));
valid_action({stop_sending, Id, Code}) -> is_integer(Id) andalso is_integer(falco_http3_error:code(Code));
valid_action({close, {Code, _}}) -> is_integer(falco_http3_error:code(Code));
valid_action({timer, reset_window, Ms}) -> is_integer(Ms) andalso Ms > 0;
valid_action(_) -> false.
