%% PropEr properties for the pure WebSocket modules:
%%
%% - falco_ws_frame (RFC 6455 §5): what the encoders write parses back to
%%   the same frames, masked and unmasked, in every length class (7-bit,
%%   16-bit, 64-bit); arbitrary and mutated frame sequences never make the
%%   parser raise or return anything outside its contract, for both roles,
%%   with and without RSV1 and a frame size limit, and give the same frames
%%   and the same end fed whole, in random pieces or a byte at a time
%%   (`make fuzz' runs this one 100,000 times, see falco_fuzz_prop);
%%   `{more, N}' is never pessimistic (no frame completes sooner) and
%%   `peek/1' on a frame in progress is a prefix of the payload it ends
%%   with; any header gives one of the errors §5.2 and §5.5 call for, from
%%   a model of those rules written here, or the frame when it breaks none.
%% - falco_ws_utf8: validation over any split of the bytes fails at the
%%   first piece after which no continuation could be valid UTF-8 (the
%%   oracle is `unicode', tried with every completion), and otherwise ends
%%   complete exactly when `unicode' takes the whole.
%% - falco_ws_session: a message cut into any fragments (empty ones
%%   included, pings between them) comes out whole and the same, text or
%%   binary; with `max_fragments' and `max_empty_fragments' it is refused
%%   with 1009 or 1008 exactly when its count of fragments, or of empty
%%   ones, is over the bound, and otherwise comes out the same.
%% - falco_ws_deflate (RFC 7692): what the server compresses, a client's
%%   zlib inflates back, and what a client's zlib compresses, cut into any
%%   fragments, the server inflates back, for every window size and
%%   context-takeover choice, over several messages, some of them ended by
%%   a final block (§7.2.3.4); inflating against a
%%   message limit gives `too_big' exactly when the message is larger, and
%%   never more output than the limit.
%%
%% Run from EUnit, 300 cases each (the fuzz property 1000).
-module(falco_ws_prop).
-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-export([prop_frame_round_trip/0, prop_parse_fuzz/0, prop_incremental/0, prop_header_rules/0,
         prop_utf8_split/0, prop_deflate_round_trip/0, prop_inflate_limit/0,
         prop_session_fragments/0]).

-define(NUMTESTS, 300).
-define(F, falco_ws_frame).

properties_test_() ->
    [{atom_to_list(P),
      {timeout, 120,
       ?_assert(proper:quickcheck(?MODULE:P(), [{numtests, falco_fuzz_prop:numtests(?MODULE, P, ?NUMTESTS)},
                                                {to_file, user}]))}}
     || P <- [prop_frame_round_trip, prop_parse_fuzz, prop_incremental, prop_header_rules,
              prop_utf8_split, prop_deflate_round_trip, prop_inflate_limit,
              prop_session_fragments]].

%% -- generators ---------------------------------------------------------------

role() -> elements([server, client]).
key() -> binary(4).
fin() -> elements([fin, nofin]).

%% N bytes: a random pattern repeated (random bytes of 64 KB are slow to
%% generate and add nothing the pattern does not).
bytes(N) ->
    ?LET(Pattern, non_empty(binary()), binary:part(binary:copy(Pattern, N div byte_size(Pattern) + 1), 0, N)).

%% A payload in a length class: 7-bit (0..125), 16-bit (126..65535, its
%% ends most often), 64-bit (65536 and a little over, rarely: they are big).
payload() ->
    frequency([{12, binary()},
               {2, ?LET(N, around([128, 300, 1000]), bytes(N))},
               {1, ?LET(N, around([4000, 20000, 65532]), bytes(N))},
               {1, ?LET(N, around([65539, 70000]), bytes(N))}]).

%% A number near one of Points (PropEr's `range/2' keeps to its low end
%% at the sizes a short run reaches: the large classes need this).
around(Points) ->
    ?LET({P, D}, {elements(Points), range(-3, 3)}, P + D).

%% A frame the codec accepts: {Op, Fin, Rsv1, Payload}. Control frames are
%% final, carry at most 125 bytes and never RSV1 (§5.5).
frame() ->
    oneof([?LET({Op, Fin, Rsv1, P}, {elements([continuation, text, binary]), fin(), boolean(),
                                     payload()},
                {Op, Fin, Rsv1, P}),
           ?LET({Op, N}, {elements([close, ping, pong]), oneof([range(0, 125), exactly(125)])},
                ?LET(P, bytes(N), {Op, fin, false, P}))]).

%% A frame as a peer of `Role' sends it: a client masks, a server does not.
encode(server, {Op, Fin, Rsv1, P}, Key) ->
    iolist_to_binary(?F:encode_masked(Op, P, Fin, Rsv1, Key));
encode(client, {Op, Fin, Rsv1, P}, _Key) ->
    iolist_to_binary(?F:encode(Op, P, Fin, Rsv1)).

%% Small frames only, for the inputs read a byte at a time.
small_frame() ->
    ?SUCHTHAT({_, _, _, P}, frame(), byte_size(P) =< 300).

parse_opts(Role) ->
    ?LET({Max, Rsv1}, {frequency([{4, infinity}, {1, elements([0, 10, 125, 126, 300, 65535])}]),
                       boolean()},
         #{max_frame_size => Max, rsv1 => Rsv1, role => Role}).

%% Bytes a parser may see: valid frames of either role (each side's frames
%% are the other's errors), mutated, or headers breaking the rules and
%% other tricky bytes, or any bytes.
fuzz_input() ->
    falco_fuzz_prop:input(
      ?LET({Frames, Role}, {?LET(N, range(1, 3), vector(N, {small_frame(), key()})), role()},
           iolist_to_binary([encode(Role, F, K) || {F, K} <- Frames])),
      ?LET(Parts, list(oneof([binary(4), elements([<<16#81>>, <<16#88>>, <<16#FE>>, <<16#FF>>,
                                                   <<16#7E>>, <<16#7F>>, <<16#C1>>, <<0>>]),
                              ?LET({H, K}, {?LET(R, role(), header(R)), key()},
                                   element(1, header_bytes(H, K)))])),
           iolist_to_binary(Parts))).

%% -- falco_ws_frame: round trip ---------------------------------------------------

%% Frames encoded as a peer of each role sends them parse back, one after
%% the other, to the same frames; the length field has the class the
%% payload's length calls for (§5.2).
prop_frame_round_trip() ->
    ?FORALL({Role, Frames}, {role(), ?LET(N, range(1, 3), vector(N, {frame(), key()}))},
            falco_fuzz_prop:safe(
              fun() ->
                      Bins = [encode(Role, F, K) || {F, K} <- Frames],
                      Opts = #{max_frame_size => infinity, rsv1 => true, role => Role},
                      %% and the first byte of the next frame
                      lists:all(fun length_class/1, lists:zip([F || {F, _} <- Frames], Bins))
                          andalso parse_all(iolist_to_binary([Bins, 16#81]), Opts)
                                  =:= {[{frame, Op, Fin, Rsv1, P} || {{Op, Fin, Rsv1, P}, _} <- Frames],
                                       <<16#81>>}
              end)).

length_class({{_, _, _, P}, <<_:9, Len7:7, _/binary>>}) ->
    case byte_size(P) of
        N when N =< 125 -> Len7 =:= N;
        N when N =< 65535 -> Len7 =:= 126;
        _ -> Len7 =:= 127
    end.

parse_all(Bin, Opts) ->
    case ?F:parse(Bin, Opts) of
        {ok, Frame, Rest} ->
            {Frames, End} = parse_all(Rest, Opts),
            {[Frame | Frames], End};
        {more, _} ->
            {[], Bin}
    end.

%% -- falco_ws_frame: fuzzing --------------------------------------------------------

%% Any bytes, for either role, with or without RSV1, under any frame size
%% limit: read as a connection reads them (buffer the pieces, take frames
%% while there are), every result is in the contract and the frames keep
%% the per-frame rules; and the frames and the end are the same whole, in
%% random pieces and a byte at a time.
prop_parse_fuzz() ->
    ?FORALL({Bin, Opts, Points}, {fuzz_input(), ?LET(R, role(), parse_opts(R)), list(nat())},
            falco_fuzz_prop:safe(
              fun() ->
                      Whole = read([Bin], Opts),
                      Split = read(falco_fuzz_prop:split(Bin, Points), Opts),
                      Bytes = read(falco_fuzz_prop:bytes_of(Bin), Opts),
                      (Whole =:= Split andalso Whole =:= Bytes)
                          orelse begin
                                     io:format(user, "whole ~p~nsplit ~p~nbytes ~p~n",
                                               [Whole, Split, Bytes]),
                                     false
                                 end
              end)).

%% The frames read from Pieces, then how reading ended: `{more, N}' or the
%% error. Raises (a badmatch the property reports) on a result outside
%% the contract.
read(Pieces, Opts) ->
    read(<<>>, Pieces, Opts, []).

read(Buf, Pieces, Opts, Acc) ->
    case ?F:parse(Buf, Opts) of
        {ok, Frame, Rest} ->
            true = valid_frame(Frame, Opts),
            true = is_binary(Rest) andalso byte_size(Rest) < byte_size(Buf),
            read(Rest, Pieces, Opts, [Frame | Acc]);
        {more, N} when is_integer(N), N > 0 ->
            case Pieces of
                [P | More] -> read(<<Buf/binary, P/binary>>, More, Opts, Acc);
                [] -> {lists:reverse(Acc), {more, N}}
            end;
        {error, Why} ->
            true = lists:member(Why, errors()),
            true = lists:member(?F:close_code(Why), [1002, 1009]),
            {lists:reverse(Acc), {error, Why}}
    end.

errors() ->
    [unmasked_frame, masked_frame, reserved_bits, reserved_opcode, fragmented_control,
     control_too_long, non_minimal_length, bad_length, frame_too_big].

%% What parse/2 may return for a frame (§5.2, §5.5).
valid_frame({frame, Op, Fin, Rsv1, P}, #{max_frame_size := Max, rsv1 := Rsv1Ok}) ->
    Control = lists:member(Op, [close, ping, pong]),
    lists:member(Op, [continuation, text, binary, close, ping, pong])
        andalso lists:member(Fin, [fin, nofin]) andalso is_boolean(Rsv1) andalso is_binary(P)
        andalso (Max =:= infinity orelse byte_size(P) =< Max)
        andalso not (Rsv1 andalso (Control orelse not Rsv1Ok))
        andalso not (Control andalso (Fin =:= nofin orelse byte_size(P) > 125));
valid_frame(_, _) ->
    false.

%% -- falco_ws_frame: incremental reading ---------------------------------------------

%% Valid frames fed a byte at a time: whenever parse/2 says `{more, N}', no
%% frame completes before N more bytes; and for a server, peek/1 on a
%% data frame in progress gives its opcode, FIN, RSV1, key and a prefix of its
%% masked payload (none for a control frame or before the key).
prop_incremental() ->
    ?FORALL({Role, Frames}, {role(), ?LET(N, range(1, 3), vector(N, {small_frame(), key()}))},
            falco_fuzz_prop:safe(
              fun() ->
                      Opts = #{max_frame_size => infinity, rsv1 => true, role => Role},
                      lists:all(fun({F, K}) -> incremental(encode(Role, F, K), F, K, Role, Opts) end,
                                Frames)
              end)).

incremental(Bin, {Op, Fin, Rsv1, P} = F, Key, Role, Opts) ->
    Size = byte_size(Bin),
    Results = [{I, ?F:parse(binary:part(Bin, 0, I), Opts)} || I <- lists:seq(0, Size)],
    {Size, {ok, {frame, Op, Fin, Rsv1, P}, <<>>}} = lists:last(Results),
    lists:all(fun({I, {more, N}}) -> N >= 1 andalso I + N =< Size andalso
                                         peek_ok(binary:part(Bin, 0, I), F, Key, Role);
                 ({I, _}) -> I =:= Size
              end, Results).

peek_ok(Prefix, {Op, Fin, Rsv1, P}, Key, server) ->
    case ?F:peek(Prefix) of
        none ->
            true;
        {Op, Fin, Rsv1, Key, Part} ->
            lists:member(Op, [continuation, text, binary])
                andalso byte_size(Part) < byte_size(P)
                andalso ?F:mask(Part, Key) =:= binary:part(P, 0, byte_size(Part));
        _ ->
            false
    end;
peek_ok(Prefix, _, _, client) ->
    %% a client reads unmasked frames: nothing to peek
    ?F:peek(Prefix) =:= none.

%% -- falco_ws_frame: the rules of §5.2 and §5.5 ----------------------------------------

%% Any first byte (FIN, RSV1-3, opcode), mask bit and length encoding,
%% including non-minimal ones and the 64-bit length's reserved top bit,
%% under any options: when the header breaks one of the rules, parse/2
%% gives one of the errors for the rules it breaks (which one when it
%% breaks several is the codec's choice; all are 1002 but the size); when
%% it breaks none, the frame (its payload given whole) or, for a payload
%% too large to give, exactly how many bytes it still needs.
prop_header_rules() ->
    ?FORALL({{Fin, Rsv, Op, Mask, Len} = Header, Opts, Key}, ?LET(R, role(), {header(R), parse_opts(R), key()}),
            falco_fuzz_prop:safe(
              fun() ->
                      {Bin, Payload, Given} = header_bytes(Header, Key),
                      {_, N} = Len,
                      Broken = broken(Fin, Rsv, Op, Mask, Len, Opts),
                      Result = ?F:parse(Bin, Opts),
                      Ok = case {Broken, Result} of
                               {[_ | _], {error, Why}} -> lists:member(Why, Broken);
                               {[], {ok, {frame, _, Fin1, Rsv1, Got}, <<>>}} when Given =:= N ->
                                   Fin1 =:= element(Fin + 1, {nofin, fin})
                                       andalso Rsv1 =:= (element(1, Rsv) =:= 1)
                                       andalso Got =:= case Mask of
                                                           1 -> ?F:mask(Payload, Key);
                                                           0 -> Payload
                                                       end;
                               {[], {more, More}} -> Given < N andalso More =:= N - Given;
                               _ -> false
                           end,
                      Ok orelse begin
                                    io:format(user, "broken ~p, got ~p~n", [Broken, Result]),
                                    false
                                end
              end)).

%% A frame header for a parser in `Role', {FIN, {RSV1, RSV2, RSV3},
%% opcode, mask bit, length field}, each field mostly right, so that a
%% header breaks one rule or none more often than many.
header(Role) ->
    {frequency([{3, 1}, {1, 0}]),
     {frequency([{2, 0}, {1, 1}]), frequency([{5, 0}, {1, 1}]), frequency([{5, 0}, {1, 1}])},
     frequency([{3, elements([0, 1, 2, 8, 9, 10])}, {1, range(0, 15)}]),
     frequency([{3, case Role of server -> 1; client -> 0 end}, {1, range(0, 1)}]),
     length_field()}.

%% The header's bytes, its masking key if the mask bit is set, and its
%% payload, whole if the length is at most 300, else the first 300 bytes:
%% {Bytes, the payload given, its size}.
header_bytes({Fin, {Rsv1, Rsv2, Rsv3}, Op, Mask, {LenBits, N}}, Key) ->
    KeyBytes = case Mask of 1 -> Key; 0 -> <<>> end,
    Given = min(N, 300),
    Payload = binary:copy(<<"p">>, Given),
    {<<Fin:1, Rsv1:1, Rsv2:1, Rsv3:1, Op:4, Mask:1, LenBits/bitstring, KeyBytes/binary,
       Payload/binary>>, Payload, Given}.

%% {The 7-bit length and what follows it, the length it declares}: any
%% encoding, minimal or not, and 64-bit lengths with the top bit set.
length_field() ->
    oneof([?LET(N, range(0, 125), {<<N:7>>, N}),
           ?LET(N, oneof([range(0, 200), around([125, 1000, 65532])]), {<<126:7, N:16>>, N}),
           ?LET(N, oneof([range(0, 300), around([125, 65535, 70000]), around([1 bsl 40, 1 bsl 63]),
                          ?LET(B, binary(8), binary:decode_unsigned(B)),
                          exactly(16#7fffffffffffffff), exactly(16#8000000000000000)]),
                {<<127:7, N:64>>, N})]).

%% The rules of RFC 6455 a frame header breaks, as the codec's error names.
broken(Fin, {Rsv1, Rsv2, Rsv3}, Op, Mask, {<<Len7:7, _/bitstring>>, N},
       #{max_frame_size := Max, rsv1 := Rsv1Ok, role := Role}) ->
    Control = Op >= 8,
    [reserved_bits || Rsv2 =:= 1 orelse Rsv3 =:= 1]                      % §5.2
        ++ [reserved_bits || Rsv1 =:= 1, Control orelse not Rsv1Ok]      % §5.2, RFC 7692 §6
        ++ [reserved_opcode || not lists:member(Op, [0, 1, 2, 8, 9, 10])] % §5.2
        ++ [fragmented_control || Control, Fin =:= 0]                    % §5.5
        ++ [control_too_long || Control, N > 125 orelse Len7 > 125]      % §5.5
        ++ [unmasked_frame || Role =:= server, Mask =:= 0]               % §5.1
        ++ [masked_frame || Role =:= client, Mask =:= 1]                 % §5.1
        ++ [non_minimal_length || Len7 =:= 126, N < 126]                 % §5.2
        ++ [non_minimal_length || Len7 =:= 127, N < 65536]
        ++ [bad_length || Len7 =:= 127, N >= 16#8000000000000000]       % §5.2: MSB 0
        ++ [frame_too_big || Max =/= infinity, N > Max].

%% -- falco_ws_utf8 ---------------------------------------------------------------------

%% Text that is mostly valid UTF-8 with the classic invalid forms mixed in.
text_bytes() ->
    ?LET(Parts, list(frequency([{6, utf8()},
                                {1, elements([<<16#ED, 16#A0, 16#80>>,          % surrogate
                                              <<16#C0, 16#80>>, <<16#C1, 16#BF>>, % overlong
                                              <<16#E0, 16#80, 16#80>>, <<16#F0, 16#80, 16#80, 16#80>>,
                                              <<16#F4, 16#90, 16#80, 16#80>>,    % > U+10FFFF
                                              <<16#F5>>, <<16#FF>>, <<16#80>>,
                                              <<16#E2, 16#82>>, <<16#F0, 16#9F, 16#98>>,
                                              <<16#F0, 16#9F, 16#98, 16#80>>, <<16#EF, 16#BF, 16#BF>>,
                                              <<16#F4, 16#8F, 16#BF, 16#BF>>, <<16#ED, 16#9F, 16#BF>>])},
                                {1, binary(1)}])),
         iolist_to_binary(Parts)).

%% The bytes cut anywhere: each piece is accepted exactly while what came
%% so far can still be the start of valid UTF-8 (§8.1's fail fast), and
%% at the end the state is complete exactly when the whole is valid.
prop_utf8_split() ->
    ?FORALL({Bin, Points}, {text_bytes(), list(nat())},
            falco_fuzz_prop:safe(
              fun() ->
                      Pieces = falco_fuzz_prop:split(Bin, Points),
                      utf8_pieces(Pieces, <<>>, falco_ws_utf8:new())
                          =:= utf8_oracle(Pieces, <<>>)
              end)).

utf8_pieces([], _, State) ->
    {ended, falco_ws_utf8:complete(State)};
utf8_pieces([P | More], Seen, State) ->
    case falco_ws_utf8:validate(P, State) of
        {ok, State1} -> utf8_pieces(More, <<Seen/binary, P/binary>>, State1);
        {error, invalid_utf8} -> {failed_at, byte_size(Seen) + byte_size(P)}
    end.

utf8_oracle([], Seen) ->
    {ended, is_binary(unicode:characters_to_binary(Seen, utf8, utf8))};
utf8_oracle([P | More], Seen0) ->
    Seen = <<Seen0/binary, P/binary>>,
    case valid_start(Seen) of
        true -> utf8_oracle(More, Seen);
        false -> {failed_at, byte_size(Seen)}
    end.

%% Some completion (none, or one to three continuation bytes, the first
%% any of 80..BF, the others 80) makes Bin valid UTF-8 for `unicode'.
valid_start(Bin) ->
    lists:any(fun(C) -> is_binary(unicode:characters_to_binary(<<Bin/binary, C/binary>>, utf8, utf8)) end,
              [<<>> | [<<B, (binary:copy(<<16#80>>, K))/binary>> || K <- [0, 1, 2],
                                                                  B <- lists:seq(16#80, 16#BF)]]).

%% -- falco_ws_session --------------------------------------------------------------------

prop_session_fragments() ->
    ?FORALL({{Type, Bin}, Points, EmptyAt, Pings, MaxFrags, MaxEmpties},
            {oneof([{text, utf8()}, {binary, binary()}]), list(nat()), list(nat()),
             list(nat()), oneof([infinity, range(1, 12)]), oneof([infinity, range(0, 6)])},
            falco_fuzz_prop:safe(
              fun() ->
                      Pieces = with_empties(case falco_fuzz_prop:split(Bin, Points) of
                                                [] -> [<<>>];
                                                Cut -> Cut
                                            end, EmptyAt),
                      Frames = session_frames(Type, Pieces, Pings),
                      Got = session_run(Frames, falco_ws_session:new(
                                                  #{max_message_size => infinity,
                                                    max_fragments => MaxFrags,
                                                    max_empty_fragments => MaxEmpties,
                                                    deflate => undefined})),
                      Empties = length([P || P <- Pieces, P =:= <<>>]),
                      Expected = if
                                     length(Pieces) > MaxFrags -> {error, 1009, too_many_fragments};
                                     Empties > MaxEmpties -> {error, 1008, too_many_empty_fragments};
                                     true -> [{ping, <<>>} || _ <- Pings, length(Pieces) > 1]
                                                 ++ [{Type, Bin}]
                                 end,
                      session_same(Expected, Got, Pieces, MaxFrags, MaxEmpties)
              end)).

%% Empty pieces put in at the given positions (modulo the count).
with_empties(Pieces, []) ->
    Pieces;
with_empties(Pieces, [At | More]) ->
    {Before, After} = lists:split(At rem (length(Pieces) + 1), Pieces),
    with_empties(Before ++ [<<>> | After], More).

%% The first piece is the message's frame, the others continuations, the
%% last one FIN; a ping after the first (when there are at least two).
session_frames(Type, [Only], _) ->
    [{frame, Type, fin, false, Only}];
session_frames(Type, [First | Rest], Pings) ->
    Cont = [{frame, continuation, nofin, false, P} || P <- lists:droplast(Rest)]
        ++ [{frame, continuation, fin, false, lists:last(Rest)}],
    [{frame, Type, nofin, false, First}] ++ [{frame, ping, fin, false, <<>>} || _ <- Pings]
        ++ Cont.

session_run(Frames, S0) ->
    lists:foldl(fun(_, {error, _, _} = E) -> E;
                   (F, {Evs, S}) ->
                        case falco_ws_session:frame(F, S) of
                            {ok, New, S1} -> {Evs ++ New, S1};
                            Error -> Error
                        end
                end, {[], S0}, Frames).

%% Which bound comes first when both are broken depends on the order of
%% the pieces: either error is right then.
session_same(Expected, Got, Pieces, MaxFrags, MaxEmpties) ->
    Empties = length([P || P <- Pieces, P =:= <<>>]),
    case Got of
        {Evs, _} when is_list(Evs) -> Evs =:= Expected;
        {error, _, _} = E when length(Pieces) > MaxFrags, Empties > MaxEmpties ->
            lists:member(E, [{error, 1009, too_many_fragments},
                             {error, 1008, too_many_empty_fragments}]);
        E -> E =:= Expected
    end.

%% -- falco_ws_deflate --------------------------------------------------------------------

%% Agreed parameters: windows 9..15 (8 is declined for the server, and a
%% client's zlib cannot deflate with it either), either takeover choice.
params() ->
    ?LET({SBits, CBits, SNo, CNo}, {range(9, 15), range(9, 15), boolean(), boolean()},
         #{server_bits => SBits, client_bits => CBits,
           server_no_context_takeover => SNo, client_no_context_takeover => CNo}).

message() ->
    frequency([{3, binary()}, {3, ?LET(N, around([10, 300, 3000, 40000]), bytes(N))},
               {1, ?LET(Parts, list(oneof([utf8(), bytes(40)])), iolist_to_binary(Parts))}]).

%% Several messages each way: the server's deflate/2 output inflates back
%% in a client's zlib (raw, the server's window, reset when the server
%% takes no context over); a client's compressed messages, cut into random
%% fragments (§6.1: the boundaries carry no meaning), inflate back on the
%% server. §7.2.1: the four bytes 00 00 FF FF are removed and put back.
prop_deflate_round_trip() ->
    ?FORALL({Params, Level, Msgs},
            {params(), range(0, 9), non_empty(list({message(), list(nat()), flush()}))},
            falco_fuzz_prop:safe(
              fun() ->
                      #{server_bits := SBits, client_bits := CBits,
                        server_no_context_takeover := SNo, client_no_context_takeover := CNo} = Params,
                      St = falco_ws_deflate:init(Params, #{level => Level}),
                      {CDeflate, CInflate} = client_zlib(CBits, SBits),
                      try
                          lists:all(
                            fun({Msg, Points, Flush}) ->
                                    Out = falco_ws_deflate:deflate(Msg, St),
                                    Back = client_inflate(CInflate, Out, SNo),
                                    In = client_deflate(CDeflate, Msg, CNo orelse Flush =:= finish, Flush),
                                    Frags = falco_fuzz_prop:split(In, Points),
                                    Got = server_inflate(Frags, infinity, St),
                                    Back =:= Msg andalso Got =:= {ok, Msg}
                            end, Msgs)
                      after
                          falco_ws_deflate:close(St),
                          zlib:close(CDeflate),
                          zlib:close(CInflate)
                      end
              end)).

%% A message inflated against a limit, fragment by fragment with what is
%% left of it (as falco_ws_session does): too_big exactly when the message
%% is larger than the limit, and never more output than the limit. The
%% messages include zeros that compress a thousandfold (the zip bomb).
prop_inflate_limit() ->
    ?FORALL({Params, Msg, Limit, Points},
            {params(), frequency([{3, message()}, {1, ?LET(N, around([3000, 300000]), <<0:N/unit:8>>)}]),
             oneof([range(0, 100), around([10, 3000, 40000, 300000])]), list(nat())},
            falco_fuzz_prop:safe(
              fun() ->
                      #{client_bits := CBits, client_no_context_takeover := CNo} = Params,
                      St = falco_ws_deflate:init(Params, #{}),
                      {CDeflate, CInflate} = client_zlib(CBits, 15),
                      try
                          Frags = falco_fuzz_prop:split(client_deflate(CDeflate, Msg, CNo, sync), Points),
                          Expect = case byte_size(Msg) > Limit of
                                       true -> {error, too_big};
                                       false -> {ok, Msg}
                                   end,
                          server_inflate(Frags, Limit, St) =:= Expect
                      after
                          falco_ws_deflate:close(St),
                          zlib:close(CDeflate),
                          zlib:close(CInflate)
                      end
              end)).

client_zlib(CBits, SBits) ->
    D = zlib:open(),
    ok = zlib:deflateInit(D, default, deflated, -CBits, 8, default),
    I = zlib:open(),
    ok = zlib:inflateInit(I, -SBits),
    {D, I}.

%% A client's compressed message (§7.2.1): a sync flush with its tail
%% removed (zlib writes nothing for an empty message on a flushed stream:
%% 0x00 then, §7.2.3.6), or a final block ending the stream, then the
%% header byte of the empty stored block that the tail completes, the
%% next message starting another stream (§7.2.3.4).
client_deflate(Z, Msg, Reset, Flush) ->
    Out = iolist_to_binary(zlib:deflate(Z, Msg, Flush)),
    [ok = zlib:deflateReset(Z) || Reset],
    case {Flush, Out} of
        {finish, _} -> <<Out/binary, 0>>;
        {sync, <<>>} -> <<0>>;
        {sync, <<Data:(byte_size(Out) - 4)/binary, 0, 0, 255, 255>>} -> Data
    end.

flush() ->
    frequency([{4, sync}, {1, finish}]).

client_inflate(Z, Data, Reset) ->
    Out = iolist_to_binary(zlib:inflate(Z, [Data, <<0, 0, 255, 255>>])),
    [ok = zlib:inflateReset(Z) || Reset],
    Out.

%% The fragments of one compressed message through inflate/4, each with
%% the room left under Limit; an empty message is still one frame.
server_inflate(Frags, Limit, St) ->
    server_inflate(case Frags of [] -> [<<>>]; _ -> Frags end, Limit, St, []).

server_inflate([Frag | More], Limit, St, Acc) ->
    Fin = case More of [] -> fin; _ -> nofin end,
    case falco_ws_deflate:inflate(Frag, Fin, Limit, St) of
        {ok, Out} ->
            Size = iolist_size(Out),
            true = Limit =:= infinity orelse Size =< Limit,
            Left = case Limit of infinity -> infinity; _ -> Limit - Size end,
            case Fin of
                fin -> {ok, iolist_to_binary(lists:reverse(Acc, [Out]))};
                nofin -> server_inflate(More, Left, St, [Out | Acc])
            end;
        {error, _} = Error ->
            Error
    end.
