%% @doc Pure chunked transfer coding (RFC 9112 §7.1): an incremental decoder
%% for request bodies and the encoder for streamed responses.
%%
%% The decoder is strict: chunk sizes are hex digits only, with at most 15
%% significant ones after any leading zeros (so a size can never overflow or
%% exceed 2^60), extensions must follow the chunk-ext grammar (§7.1.1) and
%% are otherwise ignored, the CRLF after the data is required, and the
%% trailer section (§7.1.2) is parsed with the same field rules and limits
%% as the header section (a trailer line is bounded by `max_header_line').
%% A size line, extensions included, longer than a fixed 4096 bytes
%% (?MAX_SIZE_LINE) is an error, so a peer cannot make us buffer without end.
%%
%% @private internal to falco
-module(falco_http1_chunked).

-export([init/1, decode/2, data_left/1, encode/1, last/1]).
-export_type([state/0]).

-record(chunked, {stage = size :: size | {data, non_neg_integer()} | data_crlf | trailers,
                  buf = <<>> :: binary(),
                  trailers = [] :: [{binary(), binary()}],
                  count = 0 :: non_neg_integer(),
                  bytes = 0 :: non_neg_integer(),
                  max_line :: pos_integer(),
                  max_count :: non_neg_integer(),
                  max_block :: pos_integer()}).
-opaque state() :: #chunked{}.

-include("../core/falco_grammar.hrl").

-define(MAX_SIZE_LINE, 4096).

%% @doc A decoder; trailer limits come from the header limits.
-spec init(falco_http1:limits()) -> state().
init(#{max_header_line := MaxLine, max_header_count := MaxCount, max_header_block := MaxBlock}) ->
    #chunked{max_line = MaxLine, max_count = MaxCount, max_block = MaxBlock}.

%% @doc Decodes as much of `Bin' as it can. `more' gives the data decoded so
%% far (possibly empty) and a state for the next bytes; `done' gives the last
%% data, the trailer fields and the bytes after the body (a pipelined request).
-spec decode(binary(), state()) ->
          {more, iodata(), state()}
        | {done, iodata(), [{binary(), binary()}], binary()}
        | {error, {bad_request, atom()} | {header_too_large, line | block | count}}.
decode(More, St = #chunked{buf = Buf}) ->
    Bin = case Buf of
              <<>> -> More;
              _ -> <<Buf/binary, More/binary>>
          end,
    step(Bin, St#chunked{buf = <<>>}, []).

step(Bin, St = #chunked{stage = size}, Acc) ->
    case line(Bin, ?MAX_SIZE_LINE) of
        {ok, Line, Rest, _} ->
            case size_line(Line) of
                {ok, 0} -> step(Rest, St#chunked{stage = trailers}, Acc);
                {ok, Size} -> step(Rest, St#chunked{stage = {data, Size}}, Acc);
                Error -> Error
            end;
        more -> {more, lists:reverse(Acc), St#chunked{buf = Bin}};
        too_long -> {error, {bad_request, chunk_line_too_long}};
        bare_lf -> {error, {bad_request, bare_lf}}
    end;
step(Bin, St = #chunked{stage = {data, Left}}, Acc) ->
    case Bin of
        <<Data:Left/binary, Rest/binary>> ->
            step(Rest, St#chunked{stage = data_crlf}, [Data | Acc]);
        _ ->
            Stage = {data, Left - byte_size(Bin)},
            {more, lists:reverse([Bin | Acc]), St#chunked{stage = Stage}}
    end;
step(<<"\r\n", Rest/binary>>, St = #chunked{stage = data_crlf}, Acc) ->
    step(Rest, St#chunked{stage = size}, Acc);
step(Bin, St = #chunked{stage = data_crlf}, Acc) when Bin =:= <<>>; Bin =:= <<"\r">> ->
    {more, lists:reverse(Acc), St#chunked{buf = Bin}};
step(_, #chunked{stage = data_crlf}, _) ->
    {error, {bad_request, missing_chunk_crlf}};
step(<<"\r\n", Rest/binary>>, #chunked{stage = trailers, trailers = T}, Acc) ->
    {done, lists:reverse(Acc), lists:reverse(T), Rest};
step(Bin, St = #chunked{stage = trailers}, Acc) ->
    trailer(Bin, St, Acc).

trailer(Bin, St = #chunked{max_line = MaxLine, max_count = MaxCount, max_block = MaxBlock,
                           count = Count, bytes = Bytes, trailers = T}, Acc) ->
    case line(Bin, MaxLine) of
        more -> {more, lists:reverse(Acc), St#chunked{buf = Bin}};
        too_long -> {error, {header_too_large, line}};
        bare_lf -> {error, {bad_request, bare_lf}};
        {ok, _, _, Len} when Bytes + Len > MaxBlock -> {error, {header_too_large, block}};
        {ok, _, _, _} when Count >= MaxCount -> {error, {header_too_large, count}};
        {ok, Line, Rest, Len} ->
            case Line of
                <<C, _/binary>> when C =:= $\s; C =:= $\t ->
                    {error, {bad_request, obs_fold}};
                _ ->
                    case falco_http1:field_line(Line) of
                        {ok, Name, Value} ->
                            St1 = St#chunked{count = Count + 1, bytes = Bytes + Len,
                                             trailers = [{Name, binary:copy(Value)} | T]},
                            step(Rest, St1, Acc);
                        {error, _} = Error -> Error
                    end
            end
    end.

%% @doc The bytes of the current chunk still to come: its size line has
%% announced them, so a reader can enforce a body limit before they arrive.
-spec data_left(state()) -> non_neg_integer().
data_left(#chunked{stage = {data, Left}}) -> Left;
data_left(#chunked{}) -> 0.

%% The next line and its length with the CRLF. Searching for the LF (not
%% for CRLF) makes a bare LF an error wherever it is, and a line is too long
%% once its bytes up to the LF exceed Max: both verdicts are then the same
%% however the bytes were split into packets.
line(Bin, Max) ->
    case binary:match(Bin, <<"\n">>) of
        nomatch when byte_size(Bin) > Max -> too_long;
        nomatch -> more;
        {Pos, 1} when Pos > Max -> too_long;
        {0, 1} -> bare_lf;
        {Pos, 1} ->
            Len = Pos - 1,
            case Bin of
                <<Line:Len/binary, "\r\n", Rest/binary>> -> {ok, Line, Rest, Pos + 1};
                _ -> bare_lf
            end
    end.

%% chunk-size = 1*HEXDIG; then chunk-ext. Leading zeros add nothing to the
%% value, so any number of them is taken (the line itself is bounded by
%% ?MAX_SIZE_LINE); at most 15 significant digits, so the value stays below
%% 2^60. A longer one is the fault a too long Content-Length is, with the
%% same reason (falco_http1).
size_line(Line) ->
    size_line(Line, 0, 0, false).

size_line(<<"0", R/binary>>, 0, 0, _) ->
    size_line(R, 0, 0, true);
size_line(<<C, R/binary>>, N, Digits, Zeros) when ?IS_HEX(C), Digits < 15 ->
    size_line(R, N * 16 + ?HEX_VALUE(C), Digits + 1, Zeros);
size_line(<<C, _/binary>>, _, 15, _) when ?IS_HEX(C) ->
    {error, {bad_request, length_overflow}};
size_line(_, _, 0, false) ->
    {error, {bad_request, invalid_chunk_size}};
size_line(Ext, N, _, _) ->
    case chunk_ext(Ext) of
        ok -> {ok, N};
        error -> {error, {bad_request, invalid_chunk_extension}}
    end.

%% chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
chunk_ext(<<>>) -> ok;
chunk_ext(Bin) ->
    case bws(Bin) of
        <<";", R0/binary>> ->
            case token(bws(R0), 0) of
                {ok, R1} ->
                    %% BWS before "=" only: whitespace that ends the
                    %% line after a name is as invalid as after a value.
                    case bws(R1) of
                        <<"=", R2/binary>> -> ext_value(bws(R2));
                        _ -> chunk_ext(R1)
                    end;
                error -> error
            end;
        _ -> error
    end.

%% chunk-ext-val = token / quoted-string (RFC 9110 §5.6.4)
ext_value(<<"\"", _/binary>> = Bin) ->
    case falco_grammar:quoted_string(Bin) of
        {ok, _Value, R} -> chunk_ext(R);
        error -> error
    end;
ext_value(Bin) ->
    case token(Bin, 0) of
        {ok, R} -> chunk_ext(R);
        error -> error
    end.

token(Bin, N) ->
    case Bin of
        <<_:N/binary, C, _/binary>> when ?IS_TCHAR(C) -> token(Bin, N + 1);
        <<_:N/binary, R/binary>> when N > 0 -> {ok, R};
        _ -> error
    end.

bws(Bin) -> falco_grammar:trim_leading(Bin).

%% @doc One chunk. Empty data encodes to nothing: an empty chunk would end the body.
-spec encode(iodata()) -> iodata().
encode(Data) ->
    case iolist_size(Data) of
        0 -> [];
        Size -> [integer_to_binary(Size, 16), <<"\r\n">>, Data, <<"\r\n">>]
    end.

%% @doc The last chunk and the trailer section.
-spec last([{iodata(), iodata()}]) -> iodata().
last([]) ->
    <<"0\r\n\r\n">>;
last(Trailers) ->
    [<<"0\r\n">>, [[N, <<": ">>, V, <<"\r\n">>] || {N, V} <- Trailers], <<"\r\n">>].
