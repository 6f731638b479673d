%% PropEr properties for falco_quic_streams: a byte string sent as STREAM
%% frames of random splits, overlapping, repeated and in any order is
%% delivered whole, in order, each byte once, with one FIN at its end;
%% and sent through take/2 with random losses and rooms, every byte
%% reaches the peer at its offset. Run from EUnit.
-module(falco_quic_streams_prop).
-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-define(NUMTESTS, 300).
-define(M, falco_quic_streams).

properties_test_() ->
    [{atom_to_list(P),
      {timeout, 120,
       ?_assert(proper:quickcheck(?MODULE:P(), [{numtests, falco_fuzz_prop:numtests(?MODULE, P, ?NUMTESTS)},
                                                {to_file, user}]))}}
     || P <- [prop_delivered_in_order, prop_sent_with_losses]].

big() ->
    #{initial_max_data => 1 bsl 30, initial_max_stream_data_bidi_remote => 1 bsl 30,
      initial_max_stream_data_bidi_local => 1 bsl 30, initial_max_stream_data_uni => 1 bsl 30,
      initial_max_streams_bidi => 10, initial_max_streams_uni => 10}.

%% -- receiving ----------------------------------------------------------------

bytes() ->
    oneof([binary(), ?LET(N, range(0, 5000), binary(N))]).

%% A string and the frames that carry it: a partition of it (the last
%% piece with the FIN), random extra pieces, some repeated, shuffled.
frames() ->
    ?LET({Bin, Cuts, Extra, FinAlone},
         {bytes(), list(nat()), list({nat(), range(0, 300)}), boolean()},
         begin
             Size = byte_size(Bin),
             Bounds = lists:usort([0, Size | [C * 37 rem (Size + 1) || C <- Cuts]]),
             Parts = [{S, binary:part(Bin, S, E - S), nofin}
                      || {S, E} <- lists:zip(lists:droplast(Bounds), tl(Bounds))],
             Last = case FinAlone orelse Parts =:= [] of
                        true -> Parts ++ [{Size, <<>>, fin}];
                        false -> lists:droplast(Parts) ++ [setelement(3, lists:last(Parts), fin)]
                    end,
             More = [{S, binary:part(Bin, S, min(L, Size - S)), nofin}
                     || {S0, L} <- Extra, S <- [S0 * 37 rem (Size + 1)]],
             ?LET(Keyed, [{nat(), F} || F <- Last ++ More ++ More],
                  {Bin, [F || {_, F} <- lists:sort(Keyed)]})
         end).

prop_delivered_in_order() ->
    ?FORALL({Bin, Frames}, frames(),
            begin
                {Events, _} = lists:foldl(fun({Off, Data, Fin}, {Acc, S0}) ->
                                                  {ok, Evs, S} = ?M:stream_frame(0, Off, Fin, Data, 0, S0),
                                                  {Acc ++ Evs, S}
                                          end, {[], ?M:new(big(), big(), #{})}, Frames),
                [{stream_open, 0, bidi} | Data] = Events,
                Fins = [F || {stream_data, 0, _, F} <- Data, F =:= fin],
                Delivered = iolist_to_binary([D || {stream_data, 0, D, _} <- Data]),
                Empty = [x || {stream_data, 0, <<>>, nofin} <- Data],
                ?WHENFAIL(io:format("~p~n", [Events]),
                          Delivered =:= Bin andalso Fins =:= [fin] andalso Empty =:= []
                              andalso element(4, lists:last(Data)) =:= fin)
            end).

%% -- sending ------------------------------------------------------------------

%% A string sent on a stream of ours, taken in rooms of random sizes, each
%% frame lost or acknowledged at random: what arrives covers the string.
prop_sent_with_losses() ->
    ?FORALL({Bin, Rooms, Losses}, {bytes(), non_empty(list(range(3, 400))), list(boolean())},
            begin
                {ok, Id, S0} = ?M:open_uni(?M:new(big(), big(), #{})),
                {ok, S1} = ?M:send(Id, Bin, fin, S0),
                Got = send_all(S1, Rooms, Losses, [], 0),
                Got =:= {ok, Bin}
            end).

send_all(S0, [Room | Rooms], Losses0, Got0, Round) when Round < 100000 ->
    case ?M:take(Room, S0) of
        {[], 0, S} when Rooms =:= [], Room =:= 1200 ->
            case ?M:active(S) of
                0 -> {ok, assemble(Got0)};
                _ -> stuck
            end;
        {Taken, Used, S1} ->
            true = Used =< Room,
            {S, Losses, Got} =
                lists:foldl(fun({_, Info}, {Sa, [true | L], G}) ->
                                    {?M:lost(Info, Sa), L, G};
                               ({_, Info = {stream, _, Off, Data, _}}, {Sa, L, G}) ->
                                    {element(2, ?M:acked(Info, Sa)), tl_or_nil(L), [{Off, Data} | G]}
                            end, {S1, Losses0, Got0}, Taken),
            send_all(S, case Rooms of [] -> [1200]; _ -> Rooms end, Losses, Got, Round + 1)
    end;
send_all(_, _, _, _, _) ->
    stuck.

tl_or_nil([]) -> [];
tl_or_nil([_ | T]) -> T.

%% The bytes from offset 0, from the pieces that arrived (each byte once).
assemble(Got) ->
    lists:foldl(fun({Off, Data}, Acc) when Off =< byte_size(Acc),
                                           Off + byte_size(Data) > byte_size(Acc) ->
                        Skip = byte_size(Acc) - Off,
                        <<_:Skip/binary, New/binary>> = Data,
                        <<Acc/binary, New/binary>>;
                   (_, Acc) ->
                        Acc
                end, <<>>, lists:sort(Got)).
