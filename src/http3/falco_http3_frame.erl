%% @doc Pure HTTP/3 frame codec (RFC 9114 §7): DATA, HEADERS, CANCEL_PUSH,
%% SETTINGS, PUSH_PROMISE, GOAWAY and MAX_PUSH_ID; reserved and unknown
%% frame types; the type that starts a unidirectional stream (§6.2).
%%
%% A frame is a type and a length, both QUIC variable-length integers
%% (falco_quic_varint), then the payload. A QUIC stream delivers its bytes
%% in pieces cut anywhere, so a stream is read through a reader
%% ({@link reader/1}, {@link read/2}): it keeps the start of a frame not
%% yet complete and gives back what each piece completes, in order:
%% <ul>
%% <li>`{data, Bin}': DATA content as it comes, never held: a DATA frame
%%     gives one item when its header is read (with what content follows
%%     it in the piece, maybe none) and one for each later piece that
%%     brings more of it;</li>
%% <li>the other frames whole, `{headers, Block}', `{settings, Map}', ...,
%%     held until their last byte is in, and never longer than the
%%     reader's bound: a longer one gives `{too_large, Name, Length}' at
%%     its header and is skipped without being held (for HEADERS the
%%     caller may answer 431, for a control frame close the connection);</li>
%% <li>`{unknown, Type}' at the header of a frame of a type we do not
%%     know, reserved ones (`0x1f * N + 0x21', §7.2.8) and PRIORITY_UPDATE
%%     (RFC 9218) among them: its payload is skipped, never held (§9).</li>
%% </ul>
%% A stream ending cleanly inside a frame is H3_FRAME_ERROR (§7.1):
%% {@link reader_done/1} says so. {@link parse/2} reads one whole frame
%% from a binary, for callers that hold whole frames (tests, a client).
%%
%% Checks that need only the frame are made here, as errors of the
%% connection, `{error, {Code, Why}}': a payload longer or shorter than
%% its fields (H3_FRAME_ERROR, §7.1, §10.8), the frame types of HTTP/2
%% that HTTP/3 reserved (0x02, 0x06, 0x08, 0x09: H3_FRAME_UNEXPECTED,
%% §7.2.8), SETTINGS with an identifier twice or one of HTTP/2's that
%% HTTP/3 reserved (0x02 to 0x05), or a boolean setting other than 0 or 1
%% (H3_SETTINGS_ERROR, §7.2.4, §7.2.4.1, RFC 9220 §3, RFC 9297 §2.1.1).
%% Unknown settings are ignored (§7.2.4). Which frames a stream may carry,
%% and in what order, is falco_http3_machine's business.
%%
%% The builders return iodata.
%%
%% @private internal to falco
-module(falco_http3_frame).

-export([reader/1, read/2, reader_done/1, parse/2, stream_type/1]).
-export([reader/2]).
-export([data/1, headers/1, cancel_push/1, settings/1, settings/2, push_promise/2,
         goaway/1, max_push_id/1, frame/2, stream_header/1]).
-export([is_reserved/1, reserved/1]).

-export_type([frame/0, item/0, name/0, settings/0, error/0, reader/0, stream_kind/0]).

-define(DATA, 16#00).
-define(HEADERS, 16#01).
-define(CANCEL_PUSH, 16#03).
-define(SETTINGS, 16#04).
-define(PUSH_PROMISE, 16#05).
-define(GOAWAY, 16#07).
-define(MAX_PUSH_ID, 16#0d).

%% settings (§7.2.4.1, RFC 9204 §5, RFC 9220 §3, RFC 9297 §2.1.1)
-define(S_QPACK_MAX_TABLE_CAPACITY, 16#01).
-define(S_MAX_FIELD_SECTION_SIZE, 16#06).
-define(S_QPACK_BLOCKED_STREAMS, 16#07).
-define(S_ENABLE_CONNECT_PROTOCOL, 16#08).
-define(S_H3_DATAGRAM, 16#33).

-type varint() :: falco_quic_varint:varint().
-type settings() :: #{qpack_max_table_capacity => varint(),
                      max_field_section_size => varint(),
                      qpack_blocked_streams => varint(),
                      enable_connect_protocol => boolean(),
                      h3_datagram => boolean()}.
-type frame() :: {data, binary()}
               | {headers, binary()}
               | {cancel_push, varint()}
               | {settings, settings()}
               | {push_promise, varint(), binary()}
               | {goaway, varint()}
               | {max_push_id, varint()}
               | {unknown, varint()}.
-type item() :: frame() | {too_large, name(), varint()} | {small_data, non_neg_integer()}.
-type name() :: headers | cancel_push | settings | push_promise | goaway | max_push_id.
-type error() :: {falco_http3_error:code(), atom()}.
-type stream_kind() :: control | push | encoder | decoder | {unknown, varint()}.

-record(reader, {buf = <<>> :: binary(),          % the start of a frame, incomplete
                 max :: non_neg_integer(),        % the longest frame held whole
                 data = 0 :: non_neg_integer(),   % DATA content still to come
                 skip = 0 :: non_neg_integer(),   % bytes of a skipped frame to come
                 %% DATA frames shorter than this are announced
                 small = 0 :: non_neg_integer()}).
-opaque reader() :: #reader{}.

%% -- reading a stream ---------------------------------------------------------

%% @doc A reader for a new stream's frames, holding no frame but DATA's
%% longer than `Max' bytes of payload.
-spec reader(non_neg_integer()) -> reader().
reader(Max) when is_integer(Max), Max >= 0 ->
    #reader{max = Max}.

%% @doc reader/1 that also announces each DATA frame of fewer than `Small'
%% bytes of payload by a `{small_data, Length}' item before its content
%% (for flood budgets: a frame's pieces come as `{data, _}' items that do
%% not say where frames begin).
-spec reader(non_neg_integer(), non_neg_integer()) -> reader().
reader(Max, Small) when is_integer(Max), Max >= 0, is_integer(Small), Small >= 0 ->
    #reader{max = Max, small = Small}.

%% @doc The items the next bytes of the stream complete, in order.
-spec read(binary(), reader()) -> {ok, [item()], reader()} | {error, error()}.
read(Bin, R) ->
    read(Bin, R, []).

read(<<>>, R, Acc) ->
    {ok, lists:reverse(Acc), R};
read(Bin, R = #reader{data = N}, Acc) when N > 0 ->
    {Piece, Rest} = split(Bin, N),
    read(Rest, R#reader{data = N - byte_size(Piece)}, [{data, Piece} | Acc]);
read(Bin, R = #reader{skip = N}, Acc) when N > 0 ->
    {Skipped, Rest} = split(Bin, N),
    read(Rest, R#reader{skip = N - byte_size(Skipped)}, Acc);
read(Bin0, R = #reader{buf = Buf}, Acc) ->
    Bin = case Buf of
              <<>> -> Bin0;
              _ -> <<Buf/binary, Bin0/binary>>
          end,
    case header(Bin) of
        more ->
            {ok, lists:reverse(Acc), R#reader{buf = Bin}};
        {Type, Len, Payload} ->
            frame_start(Type, Len, Payload, Bin, R#reader{buf = <<>>}, Acc)
    end.

frame_start(?DATA, Len, Payload, _, R = #reader{small = Small}, Acc) ->
    {Piece, Rest} = split(Payload, Len),
    Acc1 = case Len < Small of
               true -> [{small_data, Len} | Acc];
               false -> Acc
           end,
    read(Rest, R#reader{data = Len - byte_size(Piece)}, [{data, Piece} | Acc1]);
frame_start(Type, Len, Payload, Bin, R = #reader{max = Max}, Acc) ->
    case kind(Type) of
        http2 ->
            {error, {h3_frame_unexpected, http2_frame}};
        unknown ->
            read(Payload, R#reader{skip = Len}, [{unknown, Type} | Acc]);
        known when Len > Max ->
            read(Payload, R#reader{skip = Len}, [{too_large, name(Type), Len} | Acc]);
        known ->
            case Payload of
                <<P:Len/binary, Rest/binary>> ->
                    case payload(Type, P) of
                        {ok, Frame} -> read(Rest, R, [Frame | Acc]);
                        Error -> Error
                    end;
                _ ->
                    {ok, lists:reverse(Acc), R#reader{buf = Bin}}
            end
    end.

%% @doc `ok' if the stream may end here, cleanly: not inside a frame (§7.1).
-spec reader_done(reader()) -> ok | {error, error()}.
reader_done(#reader{buf = <<>>, data = 0, skip = 0}) -> ok;
reader_done(_) -> {error, {h3_frame_error, truncated_frame}}.

split(Bin, N) when byte_size(Bin) =< N -> {Bin, <<>>};
split(Bin, N) -> <<Piece:N/binary, Rest/binary>> = Bin, {Piece, Rest}.

header(Bin) ->
    case falco_quic_varint:decode(Bin) of
        {Type, Rest0} ->
            case falco_quic_varint:decode(Rest0) of
                {Len, Rest} -> {Type, Len, Rest};
                more -> more
            end;
        more ->
            more
    end.

name(?HEADERS) -> headers;
name(?CANCEL_PUSH) -> cancel_push;
name(?SETTINGS) -> settings;
name(?PUSH_PROMISE) -> push_promise;
name(?GOAWAY) -> goaway;
name(?MAX_PUSH_ID) -> max_push_id.

%% §7.2.8: HTTP/2's PRIORITY, PING, WINDOW_UPDATE and CONTINUATION.
kind(T) when T =:= 16#02; T =:= 16#06; T =:= 16#08; T =:= 16#09 -> http2;
kind(T) when T =:= ?HEADERS; T =:= ?CANCEL_PUSH; T =:= ?SETTINGS; T =:= ?PUSH_PROMISE;
             T =:= ?GOAWAY; T =:= ?MAX_PUSH_ID -> known;
kind(_) -> unknown.

%% -- whole frames ---------------------------------------------------------------

%% @doc One whole frame from the start of `Bin', of at most `Max' bytes of
%% payload (DATA included), and the bytes after it; `more' if `Bin' ends
%% inside it.
-spec parse(binary(), non_neg_integer()) -> {ok, frame(), binary()} | more | {error, error()}.
parse(Bin, Max) ->
    case header(Bin) of
        more ->
            more;
        {Type, Len, Payload} ->
            case {kind(Type), Payload} of
                {http2, _} -> {error, {h3_frame_unexpected, http2_frame}};
                _ when Len > Max -> {error, {h3_excessive_load, frame_too_large}};
                {_, <<P:Len/binary, Rest/binary>>} -> whole(Type, P, Rest);
                _ -> more
            end
    end.

whole(Type, P, Rest) ->
    case kind(Type) of
        unknown when Type =/= ?DATA ->
            {ok, {unknown, Type}, Rest};
        _ ->
            case payload(Type, P) of
                {ok, Frame} -> {ok, Frame, Rest};
                Error -> Error
            end
    end.

payload(?DATA, P) -> {ok, {data, P}};
payload(?HEADERS, P) -> {ok, {headers, P}};
payload(?CANCEL_PUSH, P) -> one_varint(cancel_push, bad_cancel_push, P);
payload(?GOAWAY, P) -> one_varint(goaway, bad_goaway, P);
payload(?MAX_PUSH_ID, P) -> one_varint(max_push_id, bad_max_push_id, P);
payload(?SETTINGS, P) -> settings_payload(P, #{}, #{});
payload(?PUSH_PROMISE, P) ->
    case falco_quic_varint:decode(P) of
        {PushId, Block} -> {ok, {push_promise, PushId, Block}};
        more -> {error, {h3_frame_error, bad_push_promise}}
    end.

%% §7.1: the payload is exactly its fields.
one_varint(Tag, Why, P) ->
    case falco_quic_varint:decode(P) of
        {V, <<>>} -> {ok, {Tag, V}};
        _ -> {error, {h3_frame_error, Why}}
    end.

%% `Seen' holds every identifier read, unknown ones too (§7.2.4: none may
%% come twice).
settings_payload(<<>>, _, Acc) ->
    {ok, {settings, Acc}};
settings_payload(P, Seen, Acc) ->
    case falco_quic_varint:decode(P) of
        {Id, Rest0} ->
            case falco_quic_varint:decode(Rest0) of
                {_, _} when is_map_key(Id, Seen) ->
                    {error, {h3_settings_error, duplicate_setting}};
                {Value, Rest} ->
                    case setting(Id, Value, Acc) of
                        {ok, Acc1} -> settings_payload(Rest, Seen#{Id => true}, Acc1);
                        Error -> Error
                    end;
                more ->
                    {error, {h3_frame_error, bad_settings}}
            end;
        more ->
            {error, {h3_frame_error, bad_settings}}
    end.

setting(Id, _, _) when Id >= 16#02, Id =< 16#05 ->
    %% §7.2.4.1: HTTP/2's settings with no HTTP/3 counterpart
    {error, {h3_settings_error, http2_setting}};
setting(?S_QPACK_MAX_TABLE_CAPACITY, V, Acc) -> {ok, Acc#{qpack_max_table_capacity => V}};
setting(?S_MAX_FIELD_SECTION_SIZE, V, Acc) -> {ok, Acc#{max_field_section_size => V}};
setting(?S_QPACK_BLOCKED_STREAMS, V, Acc) -> {ok, Acc#{qpack_blocked_streams => V}};
setting(?S_ENABLE_CONNECT_PROTOCOL, V, Acc) -> flag(enable_connect_protocol, V, Acc);
setting(?S_H3_DATAGRAM, V, Acc) -> flag(h3_datagram, V, Acc);
setting(_, _, Acc) -> {ok, Acc}.

flag(Key, 0, Acc) -> {ok, Acc#{Key => false}};
flag(Key, 1, Acc) -> {ok, Acc#{Key => true}};
flag(_, _, _) -> {error, {h3_settings_error, bad_boolean_setting}}.

%% @doc The type at the start of a unidirectional stream (§6.2) and the
%% bytes after it, or `more'.
-spec stream_type(binary()) -> {stream_kind(), binary()} | more.
stream_type(Bin) ->
    case falco_quic_varint:decode(Bin) of
        {16#00, Rest} -> {control, Rest};
        {16#01, Rest} -> {push, Rest};
        {16#02, Rest} -> {encoder, Rest};
        {16#03, Rest} -> {decoder, Rest};
        {Type, Rest} -> {{unknown, Type}, Rest};
        more -> more
    end.

%% -- builders -------------------------------------------------------------------

%% @doc A frame of any type with the payload given.
-spec frame(varint(), iodata()) -> iodata().
frame(Type, Payload) ->
    [falco_quic_varint:encode(Type), falco_quic_varint:encode(iolist_size(Payload)) | Payload].

%% @doc A DATA frame.
-spec data(iodata()) -> iodata().
data(Data) -> frame(?DATA, Data).

%% @doc A HEADERS frame carrying an encoded field section.
-spec headers(iodata()) -> iodata().
headers(Block) -> frame(?HEADERS, Block).

%% @doc A CANCEL_PUSH frame.
-spec cancel_push(varint()) -> iodata().
cancel_push(PushId) -> frame(?CANCEL_PUSH, falco_quic_varint:encode(PushId)).

%% @doc A GOAWAY frame: from a server, the first request stream it will
%% not take (§5.2).
-spec goaway(varint()) -> iodata().
goaway(Id) -> frame(?GOAWAY, falco_quic_varint:encode(Id)).

%% @doc A MAX_PUSH_ID frame.
-spec max_push_id(varint()) -> iodata().
max_push_id(PushId) -> frame(?MAX_PUSH_ID, falco_quic_varint:encode(PushId)).

%% @doc A PUSH_PROMISE frame.
-spec push_promise(varint(), iodata()) -> iodata().
push_promise(PushId, Block) -> frame(?PUSH_PROMISE, [falco_quic_varint:encode(PushId) | Block]).

%% @doc A SETTINGS frame.
-spec settings(settings()) -> iodata().
settings(Settings) -> settings(Settings, []).

%% @doc A SETTINGS frame with more settings after the known ones, as
%% `{Id, Value}' pairs (a reserved identifier, to exercise the peer's
%% duty to ignore unknown ones, §7.2.4.1).
-spec settings(settings(), [{varint(), varint()}]) -> iodata().
settings(Settings, Extra) ->
    Known = [{setting_id(K), setting_value(V)} || {K, V} <- lists:sort(maps:to_list(Settings))],
    frame(?SETTINGS, [[falco_quic_varint:encode(I), falco_quic_varint:encode(V)]
                      || {I, V} <- Known ++ Extra]).

setting_id(qpack_max_table_capacity) -> ?S_QPACK_MAX_TABLE_CAPACITY;
setting_id(max_field_section_size) -> ?S_MAX_FIELD_SECTION_SIZE;
setting_id(qpack_blocked_streams) -> ?S_QPACK_BLOCKED_STREAMS;
setting_id(enable_connect_protocol) -> ?S_ENABLE_CONNECT_PROTOCOL;
setting_id(h3_datagram) -> ?S_H3_DATAGRAM.

setting_value(true) -> 1;
setting_value(false) -> 0;
setting_value(N) -> N.

%% @doc The type that starts a unidirectional stream (§6.2, RFC 9204 §4.2).
-spec stream_header(control | push | encoder | decoder) -> binary().
stream_header(control) -> <<16#00>>;
stream_header(push) -> <<16#01>>;
stream_header(encoder) -> <<16#02>>;
stream_header(decoder) -> <<16#03>>.

%% @doc Whether a frame type, stream type, setting or error code is one of
%% the reserved `0x1f * N + 0x21' (RFC 9114 §6.2.3, §7.2.4.1, §7.2.8, §8.1).
-spec is_reserved(non_neg_integer()) -> boolean().
is_reserved(V) -> V >= 16#21 andalso (V - 16#21) rem 16#1f =:= 0.

%% @doc The N-th reserved value, `0x1f * N + 0x21'.
-spec reserved(non_neg_integer()) -> varint().
reserved(N) when is_integer(N), N >= 0 -> 16#1f * N + 16#21.
