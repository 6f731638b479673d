%% @doc Reassembly of a QUIC byte stream from pieces at offsets: CRYPTO
%% data of one encryption level, or one STREAM's data (RFC 9000 §2.2,
%% §19.6, §19.8). Pieces come in any order, overlapping or repeated; the
%% bytes that become contiguous at the read point are handed back at
%% once, and only what lies beyond a hole is held. Pure.
%%
%% Bounds (§7.5, §21.7): `limit' caps how far beyond the read point a
%% piece may reach (for CRYPTO, 16 KB is usual, and going past it is
%% CRYPTO_BUFFER_EXCEEDED; for a stream the flow-control window bounds it
%% already, so the default is none), and `max_pieces' caps the binaries
%% held beyond holes (a peer sending one byte here and one there, or bytes
%% in descending order, gets `too_fragmented' rather than costing a list
%% cell per byte). Overlapping bytes are taken from what is already held.
%%
%% Held pieces keep little memory alive: a piece that is less than half
%% of the binary it was cut from (100 bytes of a 64 KB datagram; pieces
%% of 64 bytes or less are heap copies already) is copied, and small pieces that extend a held run are appended into its
%% last binary, up to 64 KB, as falco_http2_buffer does. The bytes handed
%% back are the caller's pieces themselves (sub-binaries of its packets):
%% what keeps them should copy as falco_http2_buffer:add_cut/2 does.
%%
%% The common case, a piece at the read point with nothing held, is one
%% comparison; held runs are a list ordered highest first (pieces after a
%% hole usually extend the highest run) with the lowest offset kept apart,
%% so an in-order piece that does not reach it never walks the list.
%%
%% @private internal to falco
-module(falco_quic_reasm).

-export([new/0, new/1, add/3, offset/1, buffered/1, pieces/1]).

-define(KEEP, 4096).
-define(PIECE, 65536).
-define(MAX_PIECES, 256).

%% a held run: its first offset, its end, its binaries highest first
-type run() :: {non_neg_integer(), pos_integer(), [binary(), ...]}.

-record(reasm, {offset = 0 :: non_neg_integer(),
                runs = [] :: [run()],
                low = infinity :: non_neg_integer() | infinity,
                buffered = 0 :: non_neg_integer(),
                pieces = 0 :: non_neg_integer(),
                limit :: pos_integer() | infinity,
                max_pieces :: pos_integer()}).
-opaque reasm() :: #reasm{}.
-export_type([reasm/0]).

-type opts() :: #{limit => pos_integer() | infinity, max_pieces => pos_integer()}.
-type error() :: buffer_exceeded | too_fragmented.

%% @doc A stream at offset 0, with no limit beyond the read point.
-spec new() -> reasm().
new() ->
    new(#{}).

%% @doc A stream at offset 0: `limit' (bytes beyond the read point a piece
%% may end, default `infinity'), `max_pieces' (binaries held, 256).
-spec new(opts()) -> reasm().
new(Opts) ->
    #reasm{limit = maps:get(limit, Opts, infinity),
           max_pieces = maps:get(max_pieces, Opts, ?MAX_PIECES)}.

%% @doc Adds the piece `Bin' at `Offset': the bytes now contiguous at the
%% read point, in order (empty if none), and the new state.
%% `buffer_exceeded': the piece ends more than `limit' bytes beyond the
%% read point; `too_fragmented': holding it would pass `max_pieces'.
-spec add(non_neg_integer(), binary(), reasm()) -> {ok, [binary()], reasm()} | {error, error()}.
add(Offset, Bin, R = #reasm{offset = Read}) when Offset + byte_size(Bin) =< Read ->
    {ok, [], R};
add(Offset, Bin, #reasm{offset = Read, limit = Limit})
  when Limit =/= infinity, Offset + byte_size(Bin) - Read > Limit ->
    {error, buffer_exceeded};
add(Offset, Bin, R = #reasm{offset = Read}) when Offset =< Read ->
    Skip = Read - Offset,
    <<_:Skip/binary, New/binary>> = Bin,
    deliver([New], R#reasm{offset = Read + byte_size(New)});
add(Offset, Bin, R) ->
    hold(Offset, Bin, R).

%% -- delivering ---------------------------------------------------------------

%% Ready holds the bytes up to the new read point; the held runs it now
%% reaches follow them, lowest first.
deliver(Ready, R = #reasm{offset = Read, low = Low}) when Low =:= infinity; Low > Read ->
    {ok, Ready, R};
deliver(Ready, R = #reasm{runs = Runs}) ->
    {More, Above, R1} = pull(lists:reverse(Runs), R, []),
    {ok, Ready ++ More, R1#reasm{runs = lists:reverse(Above), low = low(Above)}}.

%% The runs (lowest first) the read point reaches, taken off in order.
pull([{Start, End, Bins} | Rest], R = #reasm{offset = Read, buffered = B, pieces = P}, Acc)
  when Start =< Read ->
    R1 = R#reasm{buffered = B - (End - Start), pieces = P - length(Bins)},
    case End > Read of
        true ->
            Bytes = drop(Read - Start, lists:reverse(Bins)),
            pull(Rest, R1#reasm{offset = End}, [Bytes | Acc]);
        false ->
            pull(Rest, R1, Acc)
    end;
pull(Above, R, Acc) ->
    {lists:append(lists:reverse(Acc)), Above, R}.

%% Pieces without their first N bytes.
drop(0, Pieces) ->
    Pieces;
drop(N, [Piece | Rest]) when byte_size(Piece) =< N ->
    drop(N - byte_size(Piece), Rest);
drop(N, [Piece | Rest]) ->
    <<_:N/binary, Tail/binary>> = Piece,
    [Tail | Rest].

low([]) -> infinity;
low([{Start, _, _} | _]) -> Start.

%% -- holding ------------------------------------------------------------------

hold(Offset, Bin, R = #reasm{runs = Runs0, low = Low, buffered = B0, pieces = P0}) ->
    {Runs, {B, P}} = insert(Offset, Bin, Runs0, {B0, P0}),
    case P > R#reasm.max_pieces of
        true -> {error, too_fragmented};
        false -> {ok, [], R#reasm{runs = Runs, low = erlang:min(Low, Offset), buffered = B,
                                  pieces = P}}
    end.

%% The bytes of Bin not yet held, into the runs (highest first, disjoint),
%% counting the bytes and binaries added.
insert(_, <<>>, Runs, Count) ->
    {Runs, Count};
insert(Start, Bin, Runs, {B, P}) when Runs =:= []; Start > element(2, hd(Runs)) ->
    {[{Start, Start + byte_size(Bin), [keep(Bin)]} | Runs], {B + byte_size(Bin), P + 1}};
insert(Start, Bin, [{S, E, Bins0} | Rest], {B, P}) when Start =:= E ->
    {Bins, Added} = push(Bin, Bins0),
    {[{S, E + byte_size(Bin), Bins} | Rest], {B + byte_size(Bin), P + Added}};
insert(Start, Bin, [{S, E, Bins0} | Rest], Count0 = {B, P}) ->
    End = Start + byte_size(Bin),
    {Run, Count1} = case End > E of
                        true ->
                            Skip = E - Start,
                            <<_:Skip/binary, Above/binary>> = Bin,
                            {Bins, Added} = push(Above, Bins0),
                            {{S, End, Bins}, {B + byte_size(Above), P + Added}};
                        false ->
                            {{S, E, Bins0}, Count0}
                    end,
    case Start < S of
        true ->
            Len = erlang:min(S, End) - Start,
            <<Below:Len/binary, _/binary>> = Bin,
            {Runs, Count} = insert(Start, Below, Rest, Count1),
            {join(Run, Runs), Count};
        false ->
            {[Run | Rest], Count1}
    end.

%% A run and the runs below it, merged with the highest of them if it
%% ends where the run starts.
join({S, E, Bins}, [{S2, S, Bins2} | Rest]) -> [{S2, E, Bins ++ Bins2} | Rest];
join(Run, Runs) -> [Run | Runs].

%% Bin on top of a run's binaries (highest first), appended into the top
%% one if both are small, and the binaries added (0 or 1).
push(Bin, [Top | Rest]) when byte_size(Bin) < ?KEEP, byte_size(Top) < ?PIECE ->
    {[<<Top/binary, Bin/binary>> | Rest], 0};
push(Bin, Bins) ->
    {[keep(Bin) | Bins], 1}.

%% A copy of Bin if it would keep a binary more than twice its size alive.
keep(Bin) ->
    case 2 * byte_size(Bin) < binary:referenced_byte_size(Bin) of
        true -> binary:copy(Bin);
        false -> Bin
    end.

%% -- reading ------------------------------------------------------------------

%% @doc The read point: the bytes delivered so far.
-spec offset(reasm()) -> non_neg_integer().
offset(#reasm{offset = O}) ->
    O.

%% @doc The bytes held beyond holes.
-spec buffered(reasm()) -> non_neg_integer().
buffered(#reasm{buffered = B}) ->
    B.

%% @doc The binaries held beyond holes.
-spec pieces(reasm()) -> non_neg_integer().
pieces(#reasm{pieces = P}) ->
    P.
