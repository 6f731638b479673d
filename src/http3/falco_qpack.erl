%% @doc Pure QPACK (RFC 9204), the field compression of HTTP/3, with a
%% dynamic table of capacity 0: falco sends SETTINGS_QPACK_MAX_TABLE_CAPACITY
%% 0 and SETTINGS_QPACK_BLOCKED_STREAMS 0, and its encoder never inserts,
%% so a field section refers to the static table
%% ({@link falco_qpack_static}) or carries literals, and nothing blocks.
%%
%% {@link decode/2} reads one encoded field section (§4.5): the prefix
%% must say Required Insert Count 0 (§4.5.1.1: at capacity 0 anything else
%% "could not have been produced by a conformant encoder") with a Base of
%% sign 0 (§4.5.1.2: a sign of 1 with a Required Insert Count of 0 is a
%% negative Base; a positive one is allowed, "any value" when nothing
%% refers to the table); then indexed static lines, literals with a static
%% name and literals with a literal name, Huffman-coded or not
%% (falco_hpack_huffman, the code of RFC 7541 Appendix B). A reference to
%% the dynamic table (relative or post-Base), an index past the static
%% table, a truncated line, a bad Huffman string or an integer past its
%% bound is `{error, {qpack_decompression_failed, Why}}', a connection
%% error (§2.2.3, §6). The decoded size, name + value + 32 per line (RFC
%% 9114 §4.2.2), is counted line by line against `max_field_section_size':
%% past it the decode stops with `{error, field_section_too_large}', which
%% the caller answers 431 (there is no table to keep in step, so nothing
%% more needs reading). Integers are read with falco_hpack's prefix-integer
%% decoder: those of the field lines up to its bound (2^28 and more: an
%% index or a length longer than that cannot be valid in a frame we hold),
%% those of the prefix and the instructions up to 2^62 - 1 (§4.1.1).
%%
%% {@link encode/1} writes a field list with the static table where a
%% field or its name is there, literals otherwise, each string
%% Huffman-coded when that is shorter.
%%
%% The peer's encoder and decoder streams carry instructions (§4.3, §4.4):
%% {@link encoder_instruction/1} and {@link decoder_instruction/1} read
%% them; {@link encoder_stream/2} and {@link decoder_stream/2} apply the
%% rules of capacity 0 to a stream's bytes as they come. On the encoder
%% stream only Set Dynamic Table Capacity 0 is allowed: a larger capacity
%% (§4.3.1) or any insertion or duplication (§3.2.2, §2.2.3: no entry fits,
%% none can be referred to) is QPACK_ENCODER_STREAM_ERROR, decided from the
%% instruction's first byte, so no insertion is ever held. On the decoder
%% stream, Stream Cancellation is taken and ignored; an Insert Count
%% Increment of 0, or of anything (our encoder inserted nothing, §4.4.3),
%% and a Section Acknowledgment (we never sent a section with a Required
%% Insert Count other than 0, §4.4.1) are QPACK_DECODER_STREAM_ERROR.
%%
%% @private internal to falco
-module(falco_qpack).

-export([decode/2, encode/1]).
-export([encoder_instruction/1, decoder_instruction/1, encoder_stream/2, decoder_stream/2]).

-export_type([field/0, decode_opts/0, encoder_instruction/0, decoder_instruction/0]).

-define(ENTRY_OVERHEAD, 32).
-define(MAX_VARINT, 16#3fffffffffffffff).

-type field() :: {binary(), binary()}.
-type decode_opts() :: #{max_field_section_size => non_neg_integer() | infinity}.
-type encoder_instruction() :: {set_capacity, non_neg_integer()}
                             | {insert_with_name_ref, static | dynamic, non_neg_integer(), binary()}
                             | {insert_with_literal_name, binary(), binary()}
                             | {duplicate, non_neg_integer()}.
-type decoder_instruction() :: {section_ack, non_neg_integer()}
                             | {stream_cancellation, non_neg_integer()}
                             | {insert_count_increment, pos_integer()}.

%% -- field sections ------------------------------------------------------------

%% @doc Decodes one encoded field section (the payload of a HEADERS frame).
-spec decode(binary(), decode_opts()) ->
          {ok, [field()]} | {error, field_section_too_large | {qpack_decompression_failed, atom()}}.
decode(Block, Opts) ->
    case section_prefix(Block) of
        {ok, Lines} -> lines(Lines, maps:get(max_field_section_size, Opts, infinity), 0, []);
        Error -> Error
    end.

%% §4.5.1: Required Insert Count (8+), then the sign and Delta Base (7+).
section_prefix(Block) ->
    case falco_hpack:decode_integer(Block, 8, ?MAX_VARINT) of
        {ok, 0, <<0:1, _:7, _/binary>> = Rest0} ->
            case falco_hpack:decode_integer(Rest0, 7, ?MAX_VARINT) of
                {ok, _, Rest} -> {ok, Rest};
                {error, _} -> failed(bad_prefix)
            end;
        {ok, 0, <<1:1, _:7, _/binary>>} -> failed(negative_base);
        {ok, 0, <<>>} -> failed(bad_prefix);
        {ok, _, _} -> failed(dynamic_table_reference);
        {error, _} -> failed(bad_prefix)
    end.

lines(<<>>, _, _, Acc) ->
    {ok, lists:reverse(Acc)};
lines(<<2#11:2, _:6, _/binary>> = Bin, Max, Total, Acc) ->
    %% §4.5.2 indexed field line, static (T = 1)
    case falco_hpack:decode_integer(Bin, 6) of
        {ok, Index, Rest} ->
            case falco_qpack_static:entry(Index) of
                {_, _} = Field -> line(Field, Rest, Max, Total, Acc);
                error -> failed(bad_static_index)
            end;
        {error, _} ->
            failed(bad_integer)
    end;
lines(<<2#01:2, _:1, 1:1, _:4, _/binary>> = Bin, Max, Total, Acc) ->
    %% §4.5.4 literal with a static name reference; the N bit is for
    %% intermediaries that re-encode, which falco does not
    case falco_hpack:decode_integer(Bin, 4) of
        {ok, Index, Rest0} ->
            case falco_qpack_static:entry(Index) of
                {Name, _} ->
                    case string(Rest0) of
                        {ok, Value, Rest} -> line({Name, Value}, Rest, Max, Total, Acc);
                        Error -> Error
                    end;
                error ->
                    failed(bad_static_index)
            end;
        {error, _} ->
            failed(bad_integer)
    end;
lines(<<2#001:3, _:1, H:1, _:3, _/binary>> = Bin, Max, Total, Acc) ->
    %% §4.5.6 literal with a literal name (a 4-bit prefix string)
    case prefixed_string(Bin, 3, H) of
        {ok, Name, Rest0} ->
            case string(Rest0) of
                {ok, Value, Rest} -> line({Name, Value}, Rest, Max, Total, Acc);
                Error -> Error
            end;
        Error ->
            Error
    end;
lines(_, _, _, _) ->
    %% §4.5.2 and §4.5.4 with T = 0, §4.5.3, §4.5.5: the dynamic table,
    %% which is empty
    failed(dynamic_table_reference).

line({Name, Value} = Field, Rest, Max, Total0, Acc) ->
    case Total0 + byte_size(Name) + byte_size(Value) + ?ENTRY_OVERHEAD of
        Total when Total > Max -> {error, field_section_too_large};
        Total -> lines(Rest, Max, Total, [Field | Acc])
    end.

%% An 8-bit prefix string literal (RFC 7541 §5.2).
string(<<H:1, _:7, _/binary>> = Bin) ->
    prefixed_string(Bin, 7, H);
string(<<>>) ->
    failed(truncated).

%% A string whose length has an N-bit prefix, the Huffman flag H read by
%% the caller (§4.1.2). The length is checked against what is left before
%% anything is taken.
prefixed_string(Bin, N, H) ->
    case falco_hpack:decode_integer(Bin, N) of
        {ok, Len, Rest0} ->
            case Rest0 of
                <<Str:Len/binary, Rest/binary>> when H =:= 0 ->
                    {ok, Str, Rest};
                <<Str:Len/binary, Rest/binary>> ->
                    case falco_hpack_huffman:decode(Str) of
                        {ok, Decoded} -> {ok, Decoded, Rest};
                        {error, huffman} -> failed(huffman)
                    end;
                _ ->
                    failed(truncated)
            end;
        {error, _} ->
            failed(bad_integer)
    end.

failed(Why) ->
    {error, {qpack_decompression_failed, Why}}.

%% @doc Encodes a field list (values already binaries) as a field section
%% that refers to no dynamic table: a prefix of two zero octets (Required
%% Insert Count 0, Base 0), then one line per field.
-spec encode([field()]) -> iodata().
encode(Fields) ->
    [0, 0 | [encode_field(Name, Value) || {Name, Value} <- Fields]].

encode_field(Name, Value) ->
    case falco_qpack_static:index(Name, Value) of
        {field, Index} -> int(Index, 6, 2#11000000);
        {name, Index} -> [int(Index, 4, 2#01010000) | encode_string(Value, 7, 0)];
        none -> [encode_string(Name, 3, 2#00100000) | encode_string(Value, 7, 0)]
    end.

%% A string with an N-bit length prefix, the Huffman flag the bit above
%% it, Flags the bits above that: Huffman-coded when shorter.
encode_string(Str, N, Flags) ->
    Coded = falco_hpack_huffman:encode(Str),
    case byte_size(Coded) < byte_size(Str) of
        true -> [int(byte_size(Coded), N, Flags bor (1 bsl N)), Coded];
        false -> [int(byte_size(Str), N, Flags), Str]
    end.

%% V with an N-bit prefix under Flags: one octet, an integer, in the
%% common case; falco_hpack's encoder otherwise.
int(V, N, Flags) when V < (1 bsl N) - 1 ->
    Flags bor V;
int(V, N, Flags) ->
    <<First, Rest/binary>> = falco_hpack:encode_integer(V, N),
    [Flags bor First, Rest].

%% -- encoder and decoder streams -------------------------------------------

%% @doc One encoder instruction (§4.3) from the start of `Bin' and the
%% bytes after it, or `more' when `Bin' ends inside it.
-spec encoder_instruction(binary()) ->
          {ok, encoder_instruction(), binary()} | more
        | {error, {qpack_encoder_stream_error, atom()}}.
encoder_instruction(<<1:1, T:1, _:6, _/binary>> = Bin) ->
    %% §4.3.2 Insert with Name Reference
    case enc_int(Bin, 6) of
        {ok, Index, Rest0} ->
            case enc_string(Rest0, 7) of
                {ok, Value, Rest} -> {ok, {insert_with_name_ref, table(T), Index, Value}, Rest};
                Other -> Other
            end;
        Other ->
            Other
    end;
encoder_instruction(<<2#01:2, _:6, _/binary>> = Bin) ->
    %% §4.3.3 Insert with Literal Name
    case enc_string(Bin, 5) of
        {ok, Name, Rest0} ->
            case enc_string(Rest0, 7) of
                {ok, Value, Rest} -> {ok, {insert_with_literal_name, Name, Value}, Rest};
                Other -> Other
            end;
        Other ->
            Other
    end;
encoder_instruction(<<2#001:3, _:5, _/binary>> = Bin) ->
    %% §4.3.1 Set Dynamic Table Capacity
    case enc_int(Bin, 5) of
        {ok, Capacity, Rest} -> {ok, {set_capacity, Capacity}, Rest};
        Other -> Other
    end;
encoder_instruction(<<2#000:3, _:5, _/binary>> = Bin) ->
    %% §4.3.4 Duplicate
    case enc_int(Bin, 5) of
        {ok, Index, Rest} -> {ok, {duplicate, Index}, Rest};
        Other -> Other
    end;
encoder_instruction(<<>>) ->
    more.

table(1) -> static;
table(0) -> dynamic.

enc_int(Bin, N) ->
    case falco_hpack:decode_integer(Bin, N, ?MAX_VARINT) of
        {ok, V, Rest} -> {ok, V, Rest};
        {error, {compression_error, truncated}} -> more;
        {error, _} -> {error, {qpack_encoder_stream_error, bad_integer}}
    end.

%% A string whose length has an N-bit prefix, the Huffman flag just above.
enc_string(<<>>, _) ->
    more;
enc_string(<<First, _/binary>> = Bin, N) ->
    Huffman = First band (1 bsl N) =/= 0,
    case enc_int(Bin, N) of
        {ok, Len, Rest0} ->
            case Rest0 of
                <<Str:Len/binary, Rest/binary>> when not Huffman ->
                    {ok, Str, Rest};
                <<Str:Len/binary, Rest/binary>> ->
                    case falco_hpack_huffman:decode(Str) of
                        {ok, Decoded} -> {ok, Decoded, Rest};
                        {error, huffman} -> {error, {qpack_encoder_stream_error, huffman}}
                    end;
                _ ->
                    more
            end;
        Other ->
            Other
    end.

%% @doc One decoder instruction (§4.4) from the start of `Bin' and the
%% bytes after it, or `more'. An Insert Count Increment of 0 is an error
%% whatever the state (§4.4.3).
-spec decoder_instruction(binary()) ->
          {ok, decoder_instruction(), binary()} | more
        | {error, {qpack_decoder_stream_error, atom()}}.
decoder_instruction(<<1:1, _:7, _/binary>> = Bin) ->
    dec_int(Bin, 7, section_ack);
decoder_instruction(<<2#01:2, _:6, _/binary>> = Bin) ->
    dec_int(Bin, 6, stream_cancellation);
decoder_instruction(<<2#00:2, _:6, _/binary>> = Bin) ->
    case dec_int(Bin, 6, insert_count_increment) of
        {ok, {insert_count_increment, 0}, _} ->
            {error, {qpack_decoder_stream_error, zero_increment}};
        Other ->
            Other
    end;
decoder_instruction(<<>>) ->
    more.

dec_int(Bin, N, Tag) ->
    case falco_hpack:decode_integer(Bin, N, ?MAX_VARINT) of
        {ok, V, Rest} -> {ok, {Tag, V}, Rest};
        {error, {compression_error, truncated}} -> more;
        {error, _} -> {error, {qpack_decoder_stream_error, bad_integer}}
    end.

%% @doc The next bytes of the peer's encoder stream, after `Buf' (what the
%% last call left, an instruction not yet complete, `<<>>' at first), with
%% our capacity of 0: the new `Buf', or the error.
-spec encoder_stream(binary(), binary()) ->
          {ok, binary()} | {error, {qpack_encoder_stream_error, atom()}}.
encoder_stream(Bin, Buf) ->
    encoder_stream(<<Buf/binary, Bin/binary>>).

encoder_stream(<<>>) ->
    {ok, <<>>};
encoder_stream(<<2#001:3, _:5, _/binary>> = Bin) ->
    case encoder_instruction(Bin) of
        {ok, {set_capacity, 0}, Rest} -> encoder_stream(Rest);
        {ok, {set_capacity, _}, _} -> {error, {qpack_encoder_stream_error, capacity_exceeded}};
        more -> {ok, Bin};
        {error, _} = Error -> Error
    end;
encoder_stream(_) ->
    {error, {qpack_encoder_stream_error, no_dynamic_table}}.

%% @doc The next bytes of the peer's decoder stream, after `Buf', with an
%% encoder that never used the dynamic table: the new `Buf', or the error.
-spec decoder_stream(binary(), binary()) ->
          {ok, binary()} | {error, {qpack_decoder_stream_error, atom()}}.
decoder_stream(Bin, Buf) ->
    decoder_stream(<<Buf/binary, Bin/binary>>).

decoder_stream(Bin) ->
    case decoder_instruction(Bin) of
        {ok, {stream_cancellation, _}, Rest} -> decoder_stream(Rest);
        {ok, {section_ack, _}, _} -> {error, {qpack_decoder_stream_error, unexpected_section_ack}};
        {ok, {insert_count_increment, _}, _} ->
            {error, {qpack_decoder_stream_error, increment_past_inserts}};
        more -> {ok, Bin};
        Error -> Error
    end.
