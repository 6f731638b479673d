%% @doc Pure HPACK (RFC 7541): the header compression of HTTP/2. One context
%% holds one direction's dynamic table; an HTTP/2 connection keeps a decoder
%% context for the header blocks it receives and an encoder context for those
%% it sends.
%%
%% The dynamic table (§2.3.2, §4) is a map from an insertion sequence number
%% to the entry, with the number of the next insertion and of the oldest
%% entry: an entry's index is `61 + (Next - Seq)', so lookup, insertion and
%% eviction of the oldest are each one map operation (O(log n), n being at
%% most max size / 32). The static table (Appendix A) is a tuple literal. An
%% encoder context also maps each name in the table to its entries' values
%% and sequence numbers, to find matches.
%%
%% The decoder ({@link decode/3}) is strict and bounded: integers longer than
%% four continuation octets are `integer_overflow' (§5.1 leaves the limit to
%% us; this caps them below 2^28 + 2^N), string lengths are checked against
%% the bytes left before anything is taken, index 0 or past the table is
%% `bad_index' (§2.3.3, §6.1), a dynamic table size update above our setting
%% or after the first field is an error (§4.2, §6.3), a lowered setting must
%% be followed by an update at the start of the next block (§4.2), and Huffman
%% strings are checked as §5.2 says. With `max_header_list_size' the decoded
%% size (name + value + 32 per field, RFC 9113 §6.5.2) is counted field by
%% field; once it is exceeded no more fields are kept, but the rest of the
%% block is still decoded into the dynamic table, so the error
%% `{header_list_too_large, Ctx}' carries a context still in step with the
%% peer (the connection may answer 431 and go on). Strings that go into the
%% dynamic table are copied, so the table never pins the frame they came in.
%%
%% The encoder ({@link encode/3}) uses a full static or dynamic match when
%% there is one, else a literal with the name's index if any. Literals are
%% added to the dynamic table unless the name's values are mostly unique
%% (`content-length', `content-range', `age', `etag', `:path') or the entry
%% would take more than three quarters of the table. Sensitive fields are sent
%% "never indexed" (§6.2.3, §7.1.3): `authorization', `proxy-authorization',
%% `set-cookie', `cookie' values shorter than 20 octets (low entropy, easy to
%% guess), and any name in the `sensitive' option. Strings are Huffman-coded
%% unless that is longer (equal lengths are coded, as in Appendix C.6). When
%% the peer's SETTINGS_HEADER_TABLE_SIZE changes
%% ({@link encoder_set_max_table_size/2}) the table is resized at once and the
%% next block starts with the update(s) §4.2 asks for.
%%
%% @private internal to falco
-module(falco_hpack).

-export([new/0, new/1, decode/2, decode/3, set_max_table_size/2,
         encode/2, encode/3, encoder_set_max_table_size/2,
         table/1, table_size/1, max_table_size/1,
         encode_integer/2, decode_integer/2, decode_integer/3]).

-export_type([ctx/0, header/0, reason/0, decode_opts/0, encode_opts/0]).

-type header() :: {Name :: binary(), Value :: binary()}.
-type reason() :: {compression_error, bad_index | huffman | size_update_too_large
                                     | size_update_not_at_start | size_update_missing
                                     | integer_overflow | truncated}
                | {header_list_too_large, ctx()}.
-type decode_opts() :: #{max_header_list_size => non_neg_integer() | infinity}.
-type encode_opts() :: #{huffman => boolean(), sensitive => [binary()]}.

-record(hpack, {
          tab = #{} :: #{non_neg_integer() => header()},
          next = 0 :: non_neg_integer(),       % sequence number of the next entry
          oldest = 0 :: non_neg_integer(),     % of the oldest entry (= next if empty)
          size = 0 :: non_neg_integer(),       % sum of entry sizes (§4.1)
          max :: non_neg_integer(),            % the table's maximum size now
          limit :: non_neg_integer(),          % decoder: our setting; encoder: our cap
          update_required = false :: boolean(),            % decoder (§4.2)
          pending = none :: none | {non_neg_integer(), non_neg_integer()},  % encoder
          names = #{} :: #{binary() => [{binary(), non_neg_integer()}]}  % encoder
         }).
-opaque ctx() :: #hpack{}.

-define(DEFAULT_TABLE_SIZE, 4096).
-define(STATIC_COUNT, 61).
-define(ENTRY_OVERHEAD, 32).
-define(SHORT_COOKIE, 20).

%% RFC 7541 Appendix A.
-define(STATIC, {
    {<<":authority">>, <<>>}, {<<":method">>, <<"GET">>}, {<<":method">>, <<"POST">>},
    {<<":path">>, <<"/">>}, {<<":path">>, <<"/index.html">>}, {<<":scheme">>, <<"http">>},
    {<<":scheme">>, <<"https">>}, {<<":status">>, <<"200">>}, {<<":status">>, <<"204">>},
    {<<":status">>, <<"206">>}, {<<":status">>, <<"304">>}, {<<":status">>, <<"400">>},
    {<<":status">>, <<"404">>}, {<<":status">>, <<"500">>}, {<<"accept-charset">>, <<>>},
    {<<"accept-encoding">>, <<"gzip, deflate">>}, {<<"accept-language">>, <<>>},
    {<<"accept-ranges">>, <<>>}, {<<"accept">>, <<>>},
    {<<"access-control-allow-origin">>, <<>>}, {<<"age">>, <<>>}, {<<"allow">>, <<>>},
    {<<"authorization">>, <<>>}, {<<"cache-control">>, <<>>},
    {<<"content-disposition">>, <<>>}, {<<"content-encoding">>, <<>>},
    {<<"content-language">>, <<>>}, {<<"content-length">>, <<>>},
    {<<"content-location">>, <<>>}, {<<"content-range">>, <<>>},
    {<<"content-type">>, <<>>}, {<<"cookie">>, <<>>}, {<<"date">>, <<>>},
    {<<"etag">>, <<>>}, {<<"expect">>, <<>>}, {<<"expires">>, <<>>}, {<<"from">>, <<>>},
    {<<"host">>, <<>>}, {<<"if-match">>, <<>>}, {<<"if-modified-since">>, <<>>},
    {<<"if-none-match">>, <<>>}, {<<"if-range">>, <<>>},
    {<<"if-unmodified-since">>, <<>>}, {<<"last-modified">>, <<>>}, {<<"link">>, <<>>},
    {<<"location">>, <<>>}, {<<"max-forwards">>, <<>>},
    {<<"proxy-authenticate">>, <<>>}, {<<"proxy-authorization">>, <<>>},
    {<<"range">>, <<>>}, {<<"referer">>, <<>>}, {<<"refresh">>, <<>>},
    {<<"retry-after">>, <<>>}, {<<"server">>, <<>>}, {<<"set-cookie">>, <<>>},
    {<<"strict-transport-security">>, <<>>}, {<<"transfer-encoding">>, <<>>},
    {<<"user-agent">>, <<>>}, {<<"vary">>, <<>>}, {<<"via">>, <<>>},
    {<<"www-authenticate">>, <<>>}}).

%% -- contexts ----------------------------------------------------------------

%% @doc A context with the protocol's initial table size, 4096 octets.
-spec new() -> ctx().
new() ->
    new(?DEFAULT_TABLE_SIZE).

%% @doc A context whose table's maximum size is `MaxTableSize' octets from
%% the start, both ends agreeing on it. A connection starts with {@link new/0}
%% for both directions (the protocol's initial size), then calls
%% {@link set_max_table_size/2} when the peer acknowledges our
%% SETTINGS_HEADER_TABLE_SIZE and {@link encoder_set_max_table_size/2} when
%% the peer's SETTINGS carry one. For an encoder, `MaxTableSize' is also the
%% most it will use whatever the peer allows.
-spec new(non_neg_integer()) -> ctx().
new(MaxTableSize) when is_integer(MaxTableSize), MaxTableSize >= 0 ->
    #hpack{max = MaxTableSize, limit = MaxTableSize}.

%% @doc Decoder: our SETTINGS_HEADER_TABLE_SIZE is now `Size' (call this when
%% the peer acknowledges it). Size updates above it are errors from now on;
%% if it is below the table's current maximum, the next block must start with
%% a size update (RFC 7541 §4.2).
-spec set_max_table_size(non_neg_integer(), ctx()) -> ctx().
set_max_table_size(Size, Ctx = #hpack{max = Max}) when is_integer(Size), Size >= 0 ->
    Ctx#hpack{limit = Size, update_required = Size < Max}.

%% @doc Encoder: the peer's SETTINGS_HEADER_TABLE_SIZE is now `PeerSize'. The
%% table's size becomes the smaller of it and our cap (the size given to
%% {@link new/1}); a change is signalled at the start of the next block.
-spec encoder_set_max_table_size(non_neg_integer(), ctx()) -> ctx().
encoder_set_max_table_size(PeerSize, Ctx = #hpack{max = Max, limit = Cap, pending = Pending})
  when is_integer(PeerSize), PeerSize >= 0 ->
    case min(PeerSize, Cap) of
        Max ->
            Ctx;
        New ->
            Pending1 = case Pending of
                           none -> {New, New};
                           {Min, _} -> {min(Min, New), New}
                       end,
            enc_evict(Ctx#hpack{max = New, pending = Pending1})
    end.

%% @doc The dynamic table, newest entry first.
-spec table(ctx()) -> [header()].
table(#hpack{tab = Tab, next = Next, oldest = Oldest}) ->
    [maps:get(Seq, Tab) || Seq <- lists:seq(Next - 1, Oldest, -1)].

%% @doc The dynamic table's size in octets (RFC 7541 §4.1).
-spec table_size(ctx()) -> non_neg_integer().
table_size(#hpack{size = Size}) ->
    Size.

%% @doc The dynamic table's maximum size in octets.
-spec max_table_size(ctx()) -> non_neg_integer().
max_table_size(#hpack{max = Max}) ->
    Max.

%% @doc The integer representation of RFC 7541 §5.1 with an N-bit prefix
%% (1..8), the bits above the prefix zero.
-spec encode_integer(non_neg_integer(), 1..8) -> binary().
encode_integer(Value, N) when is_integer(Value), Value >= 0 ->
    iolist_to_binary([enc_int(Value, N, 0)]).

%% @doc Reads an integer with an N-bit prefix (RFC 7541 §5.1) from the start
%% of `Bin', ignoring the bits above the prefix, with the decoder's bounds.
-spec decode_integer(binary(), 1..8) ->
          {ok, non_neg_integer(), binary()}
        | {error, {compression_error, integer_overflow | truncated}}.
decode_integer(Bin, N) ->
    Pad = 8 - N,
    case Bin of
        <<_:Pad, I:N, Rest0/binary>> ->
            case prefix_int(I, (1 bsl N) - 1, Rest0) of
                {Value, Rest} when is_integer(Value) -> {ok, Value, Rest};
                Error -> Error
            end;
        _ ->
            {error, {compression_error, truncated}}
    end.

%% @doc As {@link decode_integer/2}, with the bound given: values up to
%% `Max' are read, a larger one is `integer_overflow'. For QPACK, whose
%% decoders must read integers of up to 62 bits (RFC 9204 §4.1.1), where
%% the HPACK decoder stops below 2^28 + 2^N; at most nine continuation
%% octets are read, whatever `Max' is.
-spec decode_integer(binary(), 1..8, non_neg_integer()) ->
          {ok, non_neg_integer(), binary()}
        | {error, {compression_error, integer_overflow | truncated}}.
decode_integer(Bin, N, Max) ->
    Pad = 8 - N,
    Mask = (1 bsl N) - 1,
    case Bin of
        <<_:Pad, I:N, Rest/binary>> when I < Mask, I =< Max -> {ok, I, Rest};
        <<_:Pad, I:N, _/binary>> when I < Mask -> {error, {compression_error, integer_overflow}};
        <<_:Pad, _:N, Rest/binary>> -> long_int(Rest, Mask, 0, Max);
        _ -> {error, {compression_error, truncated}}
    end.

long_int(_, Acc, Shift, Max) when Acc > Max; Shift > 56 ->
    {error, {compression_error, integer_overflow}};
long_int(<<0:1, B:7, Rest/binary>>, Acc, Shift, Max) ->
    case Acc + (B bsl Shift) of
        V when V =< Max -> {ok, V, Rest};
        _ -> {error, {compression_error, integer_overflow}}
    end;
long_int(<<1:1, B:7, Rest/binary>>, Acc, Shift, Max) ->
    long_int(Rest, Acc + (B bsl Shift), Shift + 7, Max);
long_int(<<>>, _, _, _) ->
    {error, {compression_error, truncated}}.

%% -- decoding ----------------------------------------------------------------

%% @doc Decodes one complete header block, with no limit on its decoded size.
-spec decode(binary(), ctx()) -> {ok, [header()], ctx()} | {error, reason()}.
decode(Block, Ctx) ->
    decode(Block, Ctx, #{}).

%% @doc Decodes one complete header block (after CONTINUATION frames are put
%% together). `max_header_list_size' bounds the decoded size as RFC 9113
%% §6.5.2 counts it (default `infinity').
-spec decode(binary(), ctx(), decode_opts()) -> {ok, [header()], ctx()} | {error, reason()}.
decode(Block, Ctx0, Opts) ->
    MaxList = maps:get(max_header_list_size, Opts, infinity),
    case size_updates(Block, Ctx0, false) of
        {ok, Rest, Ctx} -> fields(Rest, Ctx, MaxList, 0, []);
        Error -> Error
    end.

%% Dynamic table size updates, allowed only before the first field (§4.2).
size_updates(<<2#001:3, I:5, Rest0/binary>>, Ctx = #hpack{limit = Limit}, _) ->
    case prefix_int(I, 2#11111, Rest0) of
        {Size, Rest} when is_integer(Size), Size =< Limit ->
            size_updates(Rest, dec_evict(Ctx#hpack{max = Size}), true);
        {Size, _} when is_integer(Size) ->
            {error, {compression_error, size_update_too_large}};
        Error ->
            Error
    end;
size_updates(Rest, Ctx = #hpack{update_required = false}, _) ->
    {ok, Rest, Ctx};
size_updates(_, #hpack{update_required = true}, false) ->
    {error, {compression_error, size_update_missing}};
size_updates(Rest, Ctx, true) ->
    {ok, Rest, Ctx#hpack{update_required = false}}.

%% Acc is the fields so far, newest first, or `discard' once their size
%% went over MaxList. Rest goes straight back into fields/5, so the match
%% context is reused and no sub-binary is made per field.
fields(<<1:1, I:7, Rest/binary>>, Ctx, MaxList, Total, Acc) when I < 2#1111111 ->
    %% §6.1 indexed header field, index in one octet: the common case
    case lookup(I, Ctx) of
        {Name, Value} = Field ->
            Total1 = Total + byte_size(Name) + byte_size(Value) + ?ENTRY_OVERHEAD,
            fields(Rest, Ctx, MaxList, Total1, add(Field, Total1, MaxList, Acc));
        error ->
            {error, {compression_error, bad_index}}
    end;
%% The same lines as the clause above, deliberately: with both calling one
%% helper that passes Rest back to fields/5, the match context is lost and
%% a sub-binary made per field; a block of 14 one-octet indexed fields
%% decoded in 950-1290 ns inline against 1490-1630 ns with the helper
%% (three runs of 7 x 200,000 decodes, medians, one pinned core,
%% 2026-12-01).
fields(<<1:1, I:7, Rest0/binary>>, Ctx, MaxList, Total, Acc) ->
    case prefix_int(I, 2#1111111, Rest0) of
        {Index, Rest} when is_integer(Index) ->
            case lookup(Index, Ctx) of
                {Name, Value} = Field ->
                    Total1 = Total + byte_size(Name) + byte_size(Value) + ?ENTRY_OVERHEAD,
                    fields(Rest, Ctx, MaxList, Total1, add(Field, Total1, MaxList, Acc));
                error ->
                    {error, {compression_error, bad_index}}
            end;
        Error ->
            Error
    end;
fields(<<2#01:2, I:6, Rest0/binary>>, Ctx, MaxList, Total, Acc) ->
    %% §6.2.1 literal with incremental indexing
    case literal(I, 2#111111, Rest0, Ctx, copy) of
        {Name, Value, Rest} ->
            Total1 = Total + byte_size(Name) + byte_size(Value) + ?ENTRY_OVERHEAD,
            fields(Rest, dec_insert(Name, Value, Ctx), MaxList, Total1,
                   add({Name, Value}, Total1, MaxList, Acc));
        Error ->
            Error
    end;
fields(<<2#001:3, _:5, _/binary>>, _, _, _, _) ->
    {error, {compression_error, size_update_not_at_start}};
fields(<<2#000:3, _:1, I:4, Rest0/binary>>, Ctx, MaxList, Total, Acc) ->
    %% §6.2.2 without indexing, §6.2.3 never indexed: the same to a decoder
    %% (the h2 layer does not re-encode fields it forwards)
    case literal(I, 2#1111, Rest0, Ctx, share) of
        {Name, Value, Rest} ->
            Total1 = Total + byte_size(Name) + byte_size(Value) + ?ENTRY_OVERHEAD,
            fields(Rest, Ctx, MaxList, Total1, add({Name, Value}, Total1, MaxList, Acc));
        Error ->
            Error
    end;
fields(<<>>, Ctx, _, _, discard) ->
    {error, {header_list_too_large, Ctx}};
fields(<<>>, Ctx, _, _, Acc) ->
    {ok, lists:reverse(Acc), Ctx}.

%% The total only grows, so once over MaxList every later call discards.
add(_, Total, MaxList, _) when Total > MaxList -> discard;
add(Field, _, _, Acc) -> [Field | Acc].

%% A literal's name (indexed, or a string when the index is 0) and value.
literal(0, _, Rest0, _, Mode) ->
    case string(Rest0, Mode) of
        {Name, Rest1} when is_binary(Name) ->
            case string(Rest1, Mode) of
                {Value, Rest} when is_binary(Value) -> {Name, Value, Rest};
                Error -> Error
            end;
        Error ->
            Error
    end;
literal(I, Mask, Rest0, Ctx, Mode) ->
    case prefix_int(I, Mask, Rest0) of
        {Index, Rest1} when is_integer(Index) ->
            case lookup(Index, Ctx) of
                {Name, _} ->
                    case string(Rest1, Mode) of
                        {Value, Rest} when is_binary(Value) -> {Name, Value, Rest};
                        Error -> Error
                    end;
                error ->
                    {error, {compression_error, bad_index}}
            end;
        Error ->
            Error
    end.

%% §5.2 string literal. The length is checked against what is left before
%% anything is taken. `copy' copies a raw string out of the block (it goes
%% into the dynamic table); a Huffman-decoded string is new anyway.
string(<<H:1, L:7, Rest0/binary>>, Mode) ->
    case prefix_int(L, 2#1111111, Rest0) of
        {Len, Rest1} when is_integer(Len) ->
            case Rest1 of
                <<Str:Len/binary, Rest/binary>> when H =:= 1 ->
                    case falco_hpack_huffman:decode(Str) of
                        {ok, Decoded} -> {Decoded, Rest};
                        {error, huffman} -> {error, {compression_error, huffman}}
                    end;
                <<Str:Len/binary, Rest/binary>> when Mode =:= copy ->
                    {binary:copy(Str), Rest};
                <<Str:Len/binary, Rest/binary>> ->
                    {Str, Rest};
                _ ->
                    {error, {compression_error, truncated}}
            end;
        Error ->
            Error
    end;
string(<<>>, _) ->
    {error, {compression_error, truncated}}.

%% §5.1 integer: I is the value of the N-bit prefix, Mask is 2^N - 1. At most
%% four continuation octets are read (values below 2^28 + 2^N). Like string/2
%% it returns {Value, Rest} or {error, Reason}: callers tell them apart with
%% a type guard on the first element.
prefix_int(I, Mask, Rest) when I < Mask ->
    {I, Rest};
prefix_int(_, Mask, <<0:1, B0:7, Rest/binary>>) ->
    {Mask + B0, Rest};
prefix_int(_, Mask, <<1:1, B0:7, 0:1, B1:7, Rest/binary>>) ->
    {Mask + B0 + (B1 bsl 7), Rest};
prefix_int(_, Mask, <<1:1, B0:7, 1:1, B1:7, 0:1, B2:7, Rest/binary>>) ->
    {Mask + B0 + (B1 bsl 7) + (B2 bsl 14), Rest};
prefix_int(_, Mask, <<1:1, B0:7, 1:1, B1:7, 1:1, B2:7, 0:1, B3:7, Rest/binary>>) ->
    {Mask + B0 + (B1 bsl 7) + (B2 bsl 14) + (B3 bsl 21), Rest};
prefix_int(_, _, <<1:1, _:7, 1:1, _:7, 1:1, _:7, 1:1, _:7, _/binary>>) ->
    {error, {compression_error, integer_overflow}};
prefix_int(_, _, _) ->
    {error, {compression_error, truncated}}.

%% §2.3.3 index address space: 1..61 static, then dynamic, newest first.
lookup(Index, _) when Index > 0, Index =< ?STATIC_COUNT ->
    element(Index, ?STATIC);
lookup(Index, #hpack{tab = Tab, next = Next, oldest = Oldest}) when Index > ?STATIC_COUNT ->
    Seq = Next - (Index - ?STATIC_COUNT),
    case Seq >= Oldest of
        true -> maps:get(Seq, Tab);
        false -> error
    end;
lookup(_, _) ->
    error.

%% §4.4: an entry larger than the table empties it and is not added.
dec_insert(Name, Value, Ctx = #hpack{tab = Tab, next = Next, size = Size, max = Max}) ->
    ESize = byte_size(Name) + byte_size(Value) + ?ENTRY_OVERHEAD,
    case ESize =< Max of
        true ->
            dec_evict(Ctx#hpack{tab = Tab#{Next => {Name, Value}}, next = Next + 1,
                                size = Size + ESize});
        false ->
            Ctx#hpack{tab = #{}, oldest = Next, size = 0}
    end.

dec_evict(Ctx = #hpack{size = Size, max = Max}) when Size =< Max ->
    Ctx;
dec_evict(Ctx = #hpack{tab = Tab0, oldest = Oldest, size = Size}) ->
    {{Name, Value}, Tab} = maps:take(Oldest, Tab0),
    dec_evict(Ctx#hpack{tab = Tab, oldest = Oldest + 1,
                        size = Size - byte_size(Name) - byte_size(Value) - ?ENTRY_OVERHEAD}).

%% -- encoding ----------------------------------------------------------------

%% @doc Encodes a header list into one header block, Huffman-coding strings
%% when that is shorter.
-spec encode([header()], ctx()) -> {iodata(), ctx()}.
encode(Headers, Ctx) ->
    encode(Headers, Ctx, #{}).

%% @doc Encodes a header list into one header block. Options: `huffman'
%% (default true: use Huffman coding when shorter), `sensitive' (more names
%% whose fields are sent never indexed).
-spec encode([header()], ctx(), encode_opts()) -> {iodata(), ctx()}.
encode(Headers, Ctx0 = #hpack{pending = Pending}, Opts) ->
    Huffman = maps:get(huffman, Opts, true),
    Sensitive = maps:get(sensitive, Opts, []),
    Updates = case Pending of
                  none -> [];
                  {Min, Final} when Min < Final -> [enc_int(Min, 5, 2#00100000),
                                                    enc_int(Final, 5, 2#00100000)];
                  {_, Final} -> [enc_int(Final, 5, 2#00100000)]
              end,
    enc_fields(Headers, Ctx0#hpack{pending = none}, Huffman, Sensitive, lists:reverse(Updates)).

enc_fields([{Name, Value} | Headers], Ctx0, Huffman, Sensitive, Acc) ->
    {Field, Ctx} = enc_field(Name, Value, Ctx0, Huffman, Sensitive),
    enc_fields(Headers, Ctx, Huffman, Sensitive, [Field | Acc]);
enc_fields([], Ctx, _, _, Acc) ->
    {lists:reverse(Acc), Ctx}.

enc_field(Name, Value, Ctx = #hpack{names = Names, next = Next}, Huffman, Sensitive) ->
    case sensitive(Name, Value) orelse lists:member(Name, Sensitive) of
        true ->
            %% §6.2.3 never indexed
            {literal(2#00010000, 4, name_index(Name, Ctx), Name, Value, Huffman), Ctx};
        false ->
            case static_index(Name, Value) of
                {field, Index} ->
                    {enc_int(Index, 7, 2#10000000), Ctx};
                {name, Index} ->
                    case Names of
                        #{Name := Entries} -> dynamic_field(Name, Value, Entries, Index, Ctx, Huffman);
                        #{} -> enc_literal(Name, Value, Index, Ctx, Huffman)
                    end;
                none ->
                    case Names of
                        #{Name := [{_, Newest} | _] = Entries} ->
                            dynamic_field(Name, Value, Entries, ?STATIC_COUNT + Next - Newest,
                                          Ctx, Huffman);
                        #{} ->
                            enc_literal(Name, Value, 0, Ctx, Huffman)
                    end
            end
    end.

%% The name is in the dynamic table: the field may be too.
dynamic_field(Name, Value, Entries, NameIndex, Ctx = #hpack{next = Next}, Huffman) ->
    case lists:keyfind(Value, 1, Entries) of
        {_, Seq} -> {enc_int(?STATIC_COUNT + Next - Seq, 7, 2#10000000), Ctx};
        false -> enc_literal(Name, Value, NameIndex, Ctx, Huffman)
    end.

enc_literal(Name, Value, NameIndex, Ctx = #hpack{max = Max}, Huffman) ->
    ESize = byte_size(Name) + byte_size(Value) + ?ENTRY_OVERHEAD,
    case ESize * 4 =< Max * 3 andalso not unique_values(Name) of
        true ->
            %% §6.2.1 with incremental indexing
            {literal(2#01000000, 6, NameIndex, Name, Value, Huffman),
             enc_insert(Name, Value, ESize, Ctx)};
        false ->
            %% §6.2.2 without indexing
            {literal(2#00000000, 4, NameIndex, Name, Value, Huffman), Ctx}
    end.

literal(Flags, _, 0, Name, Value, Huffman) ->
    [Flags, enc_string(Name, Huffman) | enc_string(Value, Huffman)];
literal(Flags, N, NameIndex, _, Value, Huffman) ->
    [enc_int(NameIndex, N, Flags) | enc_string(Value, Huffman)].

%% Coding first and comparing costs less than sizing first: the coded form
%% is the shorter one for almost all header text.
enc_string(Str, true) ->
    Coded = falco_hpack_huffman:encode(Str),
    case byte_size(Coded) of
        HLen when HLen =< byte_size(Str) -> [enc_int(HLen, 7, 2#10000000), Coded];
        _ -> [enc_int(byte_size(Str), 7, 0), Str]
    end;
enc_string(Str, false) ->
    [enc_int(byte_size(Str), 7, 0), Str].

%% §5.1: Value with an N-bit prefix, Flags holding the bits above it. One
%% octet (the common case) is returned as an integer, an iolist element that
%% costs no binary.
enc_int(Value, N, Flags) ->
    Mask = (1 bsl N) - 1,
    case Value < Mask of
        true -> Flags bor Value;
        false -> enc_cont(Value - Mask, <<(Flags bor Mask)>>)
    end.

enc_cont(Value, Acc) when Value < 128 ->
    <<Acc/binary, Value>>;
enc_cont(Value, Acc) ->
    enc_cont(Value bsr 7, <<Acc/binary, 1:1, Value:7>>).

name_index(Name, Ctx) ->
    case static_index(Name, <<>>) of
        {_, Index} -> Index;
        none -> dynamic_name_index(Name, Ctx)
    end.

dynamic_name_index(Name, #hpack{names = Names, next = Next}) ->
    case Names of
        #{Name := [{_, Seq} | _]} -> ?STATIC_COUNT + Next - Seq;
        #{} -> 0
    end.

%% `names' maps each name in the table to its entries' values and sequence
%% numbers, newest first: finding a field hashes only the (short) name, and a
%% field is never in the table twice (it would have been indexed instead).
enc_insert(Name, Value, ESize, Ctx = #hpack{tab = Tab, next = Next, size = Size,
                                            names = Names}) ->
    Entries = case Names of
                  #{Name := L} -> [{Value, Next} | L];
                  #{} -> [{Value, Next}]
              end,
    enc_evict(Ctx#hpack{tab = Tab#{Next => {Name, Value}}, next = Next + 1,
                        size = Size + ESize, names = Names#{Name => Entries}}).

enc_evict(Ctx = #hpack{size = Size, max = Max}) when Size =< Max ->
    Ctx;
enc_evict(Ctx = #hpack{tab = Tab0, oldest = Oldest, size = Size, names = Names}) ->
    {{Name, Value}, Tab} = maps:take(Oldest, Tab0),
    Names1 = case lists:keydelete(Oldest, 2, maps:get(Name, Names)) of
                 [] -> maps:remove(Name, Names);
                 Entries -> Names#{Name := Entries}
             end,
    enc_evict(Ctx#hpack{tab = Tab, oldest = Oldest + 1, names = Names1,
                        size = Size - byte_size(Name) - byte_size(Value) - ?ENTRY_OVERHEAD}).

%% §7.1.3: fields an attacker could learn by guessing (CRIME-style probing of
%% the compressed size) must never enter a compression context.
sensitive(<<"authorization">>, _) -> true;
sensitive(<<"proxy-authorization">>, _) -> true;
sensitive(<<"set-cookie">>, _) -> true;
sensitive(<<"cookie">>, Value) -> byte_size(Value) < ?SHORT_COOKIE;
sensitive(_, _) -> false.

%% Names whose values rarely repeat: indexing them would only evict entries
%% that do.
unique_values(<<"content-length">>) -> true;
unique_values(<<"content-range">>) -> true;
unique_values(<<"age">>) -> true;
unique_values(<<"etag">>) -> true;
unique_values(<<":path">>) -> true;
unique_values(_) -> false.

%% {field, Index} for a full match in the static table, else {name, Index}
%% for the first entry with that name, else none.
static_index(<<":authority">>, V) -> empty_value(V, 1);
static_index(<<":method">>, <<"GET">>) -> {field, 2};
static_index(<<":method">>, <<"POST">>) -> {field, 3};
static_index(<<":method">>, _) -> {name, 2};
static_index(<<":path">>, <<"/">>) -> {field, 4};
static_index(<<":path">>, <<"/index.html">>) -> {field, 5};
static_index(<<":path">>, _) -> {name, 4};
static_index(<<":scheme">>, <<"http">>) -> {field, 6};
static_index(<<":scheme">>, <<"https">>) -> {field, 7};
static_index(<<":scheme">>, _) -> {name, 6};
static_index(<<":status">>, <<"200">>) -> {field, 8};
static_index(<<":status">>, <<"204">>) -> {field, 9};
static_index(<<":status">>, <<"206">>) -> {field, 10};
static_index(<<":status">>, <<"304">>) -> {field, 11};
static_index(<<":status">>, <<"400">>) -> {field, 12};
static_index(<<":status">>, <<"404">>) -> {field, 13};
static_index(<<":status">>, <<"500">>) -> {field, 14};
static_index(<<":status">>, _) -> {name, 8};
static_index(<<"accept-charset">>, V) -> empty_value(V, 15);
static_index(<<"accept-encoding">>, <<"gzip, deflate">>) -> {field, 16};
static_index(<<"accept-encoding">>, _) -> {name, 16};
static_index(<<"accept-language">>, V) -> empty_value(V, 17);
static_index(<<"accept-ranges">>, V) -> empty_value(V, 18);
static_index(<<"accept">>, V) -> empty_value(V, 19);
static_index(<<"access-control-allow-origin">>, V) -> empty_value(V, 20);
static_index(<<"age">>, V) -> empty_value(V, 21);
static_index(<<"allow">>, V) -> empty_value(V, 22);
static_index(<<"authorization">>, V) -> empty_value(V, 23);
static_index(<<"cache-control">>, V) -> empty_value(V, 24);
static_index(<<"content-disposition">>, V) -> empty_value(V, 25);
static_index(<<"content-encoding">>, V) -> empty_value(V, 26);
static_index(<<"content-language">>, V) -> empty_value(V, 27);
static_index(<<"content-length">>, V) -> empty_value(V, 28);
static_index(<<"content-location">>, V) -> empty_value(V, 29);
static_index(<<"content-range">>, V) -> empty_value(V, 30);
static_index(<<"content-type">>, V) -> empty_value(V, 31);
static_index(<<"cookie">>, V) -> empty_value(V, 32);
static_index(<<"date">>, V) -> empty_value(V, 33);
static_index(<<"etag">>, V) -> empty_value(V, 34);
static_index(<<"expect">>, V) -> empty_value(V, 35);
static_index(<<"expires">>, V) -> empty_value(V, 36);
static_index(<<"from">>, V) -> empty_value(V, 37);
static_index(<<"host">>, V) -> empty_value(V, 38);
static_index(<<"if-match">>, V) -> empty_value(V, 39);
static_index(<<"if-modified-since">>, V) -> empty_value(V, 40);
static_index(<<"if-none-match">>, V) -> empty_value(V, 41);
static_index(<<"if-range">>, V) -> empty_value(V, 42);
static_index(<<"if-unmodified-since">>, V) -> empty_value(V, 43);
static_index(<<"last-modified">>, V) -> empty_value(V, 44);
static_index(<<"link">>, V) -> empty_value(V, 45);
static_index(<<"location">>, V) -> empty_value(V, 46);
static_index(<<"max-forwards">>, V) -> empty_value(V, 47);
static_index(<<"proxy-authenticate">>, V) -> empty_value(V, 48);
static_index(<<"proxy-authorization">>, V) -> empty_value(V, 49);
static_index(<<"range">>, V) -> empty_value(V, 50);
static_index(<<"referer">>, V) -> empty_value(V, 51);
static_index(<<"refresh">>, V) -> empty_value(V, 52);
static_index(<<"retry-after">>, V) -> empty_value(V, 53);
static_index(<<"server">>, V) -> empty_value(V, 54);
static_index(<<"set-cookie">>, V) -> empty_value(V, 55);
static_index(<<"strict-transport-security">>, V) -> empty_value(V, 56);
static_index(<<"transfer-encoding">>, V) -> empty_value(V, 57);
static_index(<<"user-agent">>, V) -> empty_value(V, 58);
static_index(<<"vary">>, V) -> empty_value(V, 59);
static_index(<<"via">>, V) -> empty_value(V, 60);
static_index(<<"www-authenticate">>, V) -> empty_value(V, 61);
static_index(_, _) -> none.

empty_value(<<>>, Index) -> {field, Index};
empty_value(_, Index) -> {name, Index}.
