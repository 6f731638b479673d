%% @doc A request body being gathered, piece by piece, with a bounded cost
%% per byte whatever the pieces' sizes: pure, used by
%% {@link falco_http2_machine} (the body a stream's process has not asked
%% for yet) and {@link falco_http2_stream} (`read_body(all)').
%%
%% Small pieces (under ?KEEP bytes) are appended into one binary until it
%% holds `?PIECE' bytes, so 1-byte DATA frames cost about a byte each, not
%% a list cell and a binary (62-168 bytes each, 2026-11-24). Larger pieces
%% are kept as they are. One growing binary is never used for the whole
%% body: when a garbage collection ends its in-place appends, each append
%% copies it, and a body of megabytes would cost quadratic time.
%%
%% Body bytes cut from a socket read ({@link add_cut/2}) must not keep the
%% whole read alive: they are kept as they are only when they make up at
%% least half of it (a run of DATA frames on one stream, as an upload
%% sends), and copied otherwise. Copying every 16 KB frame into 64 KB
%% pieces took 16 % of an h2c 1 MB upload's time (2026-11-25).
%%
%% @private internal to falco
-module(falco_http2_buffer).

-export([new/0, add/2, add_cut/2, size/1, take/2, to_binary/1]).

-type pieces() :: binary() | [binary()].
-export_type([pieces/0]).

-define(PIECE, 65536).
-define(KEEP, 4096).

-record(buf, {size = 0 :: non_neg_integer(),
              done = [] :: [binary()],
              tail = <<>> :: binary()}).
-opaque buffer() :: #buf{}.
-export_type([buffer/0]).

%% @doc An empty buffer.
-spec new() -> buffer().
new() ->
    #buf{}.

%% @doc Appends `Bin' (or each binary of a list, as {@link take/2} gives),
%% keeping pieces of ?KEEP bytes or more as they are.
-spec add(pieces(), buffer()) -> buffer().
add(Pieces, B) when is_list(Pieces) ->
    lists:foldl(fun add/2, B, Pieces);
add(<<>>, B) ->
    B;
add(Bin, B = #buf{size = Size, done = Done, tail = Tail}) when byte_size(Bin) >= ?KEEP ->
    B#buf{size = Size + byte_size(Bin), done = [Bin | push(Tail, Done)], tail = <<>>};
add(Bin, B = #buf{size = Size, done = Done, tail = Tail0}) ->
    case <<Tail0/binary, Bin/binary>> of
        Tail when byte_size(Tail) >= ?PIECE ->
            B#buf{size = Size + byte_size(Bin), done = [Tail | Done], tail = <<>>};
        Tail ->
            B#buf{size = Size + byte_size(Bin), tail = Tail}
    end.

%% @doc Appends body bytes cut from one binary (a socket read): one piece,
%% or a run of them (falco_http2_frame:parse_run/2). They are kept as they
%% are if together they are at least half of that binary, else copied (one
%% binary for the lot), so that what the buffer holds keeps at most twice
%% its size alive.
-spec add_cut(pieces(), buffer()) -> buffer().
add_cut(Cut, B) ->
    Size = iolist_size(Cut),
    case Size >= ?KEEP andalso 2 * Size < binary:referenced_byte_size(first(Cut)) of
        true when is_binary(Cut) -> add(binary:copy(Cut), B);
        true -> add(iolist_to_binary(Cut), B);
        false -> add(Cut, B)
    end.

first([Bin | _]) -> Bin;
first(Bin) -> Bin.

%% @doc The number of bytes held.
-spec size(buffer()) -> non_neg_integer().
size(#buf{size = Size}) ->
    Size.

%% @doc At most `N' bytes from the front, and the rest: one binary, or the
%% binaries they are held in (a body of megabytes is not copied into one
%% binary on its way to the reader, which gathers it anyway).
-spec take(non_neg_integer(), buffer()) -> {pieces(), buffer()}.
take(N, B = #buf{size = Size}) when N >= Size ->
    {pieces(B), #buf{}};
take(N, #buf{size = Size, done = Done, tail = Tail}) ->
    {Taken, Rest} = split(N, lists:reverse(push(Tail, Done)), []),
    {one(Taken), #buf{size = Size - N, done = lists:reverse(Rest)}}.

%% @doc Everything held, as one binary.
-spec to_binary(buffer()) -> binary().
to_binary(#buf{done = [], tail = Tail}) ->
    Tail;
to_binary(#buf{done = [Only], tail = <<>>}) ->
    Only;
to_binary(#buf{done = Done, tail = Tail}) ->
    iolist_to_binary(lists:reverse(push(Tail, Done))).

pieces(#buf{done = [], tail = Tail}) -> Tail;
pieces(#buf{done = Done, tail = Tail}) -> one(lists:reverse(push(Tail, Done))).

one([Only]) -> Only;
one(Pieces) -> Pieces.

push(<<>>, Done) -> Done;
push(Tail, Done) -> [Tail | Done].

split(0, Rest, Acc) ->
    {lists:reverse(Acc), Rest};
split(N, [Piece | Rest], Acc) when byte_size(Piece) =< N ->
    split(N - byte_size(Piece), Rest, [Piece | Acc]);
split(N, [Piece | Rest], Acc) ->
    <<Head:N/binary, Tail/binary>> = Piece,
    {lists:reverse(Acc, [Head]), [Tail | Rest]}.
