%% @doc Pure HTTP/2 frame codec (RFC 9113 §4 frame format, §6 frame
%% definitions, §11.2 error codes, §6.5.2 settings).
%%
%% {@link parse/2} takes the bytes received so far and the largest frame we
%% accept (our SETTINGS_MAX_FRAME_SIZE) and returns one frame and the bytes
%% after it, `{more, N}' when at least N more bytes are needed, or an error
%% as data. Every check the RFC puts on a single frame is done here: frame
%% size against the limit (checked from the 9-byte header alone, so an
%% oversized frame is refused before its payload arrives), stream 0 versus
%% non-zero per type, fixed payload lengths, padding (length and, as §6.1
%% allows, non-zero padding bytes), setting values (§6.5.2). Checks that
%% need the connection's state (stream states, CONTINUATION sequencing,
%% flow control) belong to {@link falco_http2_machine}.
%%
%% {@link parse_run/2} is parse/2 for the connection's receive loop: a run
%% of large DATA frames on one stream comes out as one frame whose data is
%% the list of their payloads, so a 1 MB upload in 16 KB frames costs the
%% state machine a few calls per socket read instead of one per frame.
%%
%% Connection errors end the parse: `{error, {connection_error, Code, Why}}'.
%% A stream error leaves the connection usable, so it comes with the rest of
%% the buffer: `{error, {stream_error, StreamId, Code, Why}, Rest}'.
%% Frames of unknown types are returned as `{unknown, Type, StreamId}' so the
%% machine can ignore them (§5.5) except inside a field block (§6.10).
%%
%% The builders return iodata ready for the socket; {@link header_block/4}
%% splits a field block into HEADERS and CONTINUATION frames.
%%
%% @private internal to falco
-module(falco_http2_frame).

-export([parse/2, parse_run/2]).
-export([data/3, headers/4, header_block/4, priority/4, rst_stream/2, settings/1, settings_ack/0,
         push_promise/4, ping/1, ping_ack/1, goaway/3, window_update/2, continuation/3]).
-export([error_code/1, error_name/1, default_settings/0]).

-export_type([frame/0, error_code/0, settings/0, parse_result/0, fin/0]).

-define(DATA, 0).
-define(HEADERS, 1).
-define(PRIORITY, 2).
-define(RST_STREAM, 3).
-define(SETTINGS, 4).
-define(PUSH_PROMISE, 5).
-define(PING, 6).
-define(GOAWAY, 7).
-define(WINDOW_UPDATE, 8).
-define(CONTINUATION, 9).

-define(END_STREAM, 16#1).
-define(ACK, 16#1).
-define(END_HEADERS, 16#4).
-define(PADDED, 16#8).
-define(PRIO, 16#20).

-define(MAX_WINDOW, 16#7fffffff).

%% The least data a DATA frame carries to join a run (parse_run/2): small
%% frames stay one by one, so the machine's flood budget still sees each.
-define(RUN_DATA, 4096).

-type stream_id() :: non_neg_integer().
-type fin() :: fin | nofin.
-type error_code() :: no_error | protocol_error | internal_error | flow_control_error
                    | settings_timeout | stream_closed | frame_size_error | refused_stream
                    | cancel | compression_error | connect_error | enhance_your_calm
                    | inadequate_security | http_1_1_required | {unknown, non_neg_integer()}.
-type priority() :: {Exclusive :: boolean(), DependsOn :: stream_id(), Weight :: 1..256}.
-type settings() :: #{header_table_size => non_neg_integer(),
                      enable_push => boolean(),
                      max_concurrent_streams => non_neg_integer(),
                      initial_window_size => non_neg_integer(),
                      max_frame_size => 16384..16777215,
                      max_header_list_size => non_neg_integer(),
                      enable_connect_protocol => boolean(),
                      no_rfc7540_priorities => boolean()}.
%% DATA's payload is a list only from parse_run/2: the payloads of a run.
-type frame() :: {data, stream_id(), fin(), binary() | [binary(), ...],
                  FlowSize :: non_neg_integer()}
               | {headers, stream_id(), fin(), fin(), priority() | undefined, binary()}
               | {priority, stream_id(), boolean(), stream_id(), 1..256}
               | {rst_stream, stream_id(), error_code()}
               | {settings, settings()}
               | settings_ack
               | {push_promise, stream_id(), fin(), stream_id(), binary()}
               | {ping, <<_:64>>}
               | {ping_ack, <<_:64>>}
               | {goaway, stream_id(), error_code(), binary()}
               | {window_update, stream_id(), 1..16#7fffffff}
               | {continuation, stream_id(), fin(), binary()}
               | {unknown, byte(), stream_id()}.
-type parse_result() :: {ok, frame(), binary()}
                      | {more, pos_integer()}
                      | {error, {connection_error, error_code(), atom()}}
                      | {error, {stream_error, stream_id(), error_code(), atom()}, binary()}.

%% @doc The settings every endpoint starts from (RFC 9113 §6.5.2).
-spec default_settings() -> #{header_table_size := 4096, enable_push := true,
                              max_concurrent_streams := infinity,
                              initial_window_size := 65535, max_frame_size := 16384,
                              max_header_list_size := infinity}.
default_settings() ->
    #{header_table_size => 4096, enable_push => true, max_concurrent_streams => infinity,
      initial_window_size => 65535, max_frame_size => 16384, max_header_list_size => infinity}.

%% @doc Parses one frame from `Bin', refusing frames longer than `MaxSize'.
-spec parse(binary(), 16384..16777215) -> parse_result().
parse(<<Len:24, _:8, _:8, _:1, _:31, _/binary>>, MaxSize) when Len > MaxSize ->
    {error, {connection_error, frame_size_error, frame_too_large}};
parse(<<Len:24, Type:8, Flags:8, _:1, Id:31, Payload:Len/binary, Rest/binary>>, _MaxSize) ->
    frame(Type, Flags, Id, Payload, Rest);
parse(<<Len:24, _/binary>> = Bin, _MaxSize) ->
    {more, Len + 9 - byte_size(Bin)};
parse(Bin, _MaxSize) ->
    {more, 9 - byte_size(Bin)}.

%% @doc As {@link parse/2}, but a DATA frame with at least ?RUN_DATA bytes
%% of data that does not end its stream takes with it the DATA frames of
%% the same stream that directly follow it in `Bin', each with as much
%% data (the last one may end the stream with any): one
%% `{data, Id, Fin, [Data], FlowSize}', FlowSize the sum of theirs. The run
%% stops before any other frame, an incomplete one or an error, which the
%% next call returns. The payloads stay parts of `Bin'.
-spec parse_run(binary(), 16384..16777215) -> parse_result().
parse_run(Bin, MaxSize) ->
    case parse(Bin, MaxSize) of
        {ok, {data, Id, nofin, Data, Flow}, Rest} when byte_size(Data) >= ?RUN_DATA ->
            run(Rest, MaxSize, Id, [Data], Flow);
        Result ->
            Result
    end.

%% The common case first: an unpadded DATA frame of the run's stream, read
%% here without parse/2's general steps.
run(<<Len:24, ?DATA:8, Flags:8, _:1, Id:31, Data:Len/binary, Rest/binary>>, MaxSize, Id, Acc, Flow)
  when Len =< MaxSize, Len >= ?RUN_DATA, Flags band ?PADDED =:= 0 ->
    case Flags band ?END_STREAM of
        0 -> run(Rest, MaxSize, Id, [Data | Acc], Flow + Len);
        _ -> {ok, {data, Id, fin, lists:reverse(Acc, [Data]), Flow + Len}, Rest}
    end;
run(Bin, MaxSize, Id, Acc, Flow) ->
    case parse(Bin, MaxSize) of
        {ok, {data, Id, nofin, Data, F}, Rest} when byte_size(Data) >= ?RUN_DATA ->
            run(Rest, MaxSize, Id, [Data | Acc], Flow + F);
        {ok, {data, Id, fin, Data, F}, Rest} ->
            {ok, {data, Id, fin, lists:reverse(Acc, [Data]), Flow + F}, Rest};
        _ when tl(Acc) =:= [] ->
            {ok, {data, Id, nofin, hd(Acc), Flow}, Bin};
        _ ->
            {ok, {data, Id, nofin, lists:reverse(Acc), Flow}, Bin}
    end.

%% -- parsing, one clause group per type (§6) ---------------------------------

%% §6.1 DATA
frame(?DATA, _, 0, _, _) ->
    conn_error(protocol_error, data_on_stream_0);
frame(?DATA, Flags, Id, Payload, Rest) ->
    case unpad(Flags, Payload) of
        {ok, Data} -> {ok, {data, Id, fin(Flags), Data, byte_size(Payload)}, Rest};
        Error -> Error
    end;
%% §6.2 HEADERS
frame(?HEADERS, _, 0, _, _) ->
    conn_error(protocol_error, headers_on_stream_0);
frame(?HEADERS, Flags, Id, Payload, Rest) ->
    case unpad(Flags, Payload) of
        {ok, Block0} when Flags band ?PRIO =/= 0 ->
            case Block0 of
                <<E:1, Dep:31, Weight:8, Block/binary>> ->
                    {ok, {headers, Id, fin(Flags), end_headers(Flags),
                          {E =:= 1, Dep, Weight + 1}, Block}, Rest};
                _ ->
                    conn_error(frame_size_error, headers_priority_truncated)
            end;
        {ok, Block} ->
            {ok, {headers, Id, fin(Flags), end_headers(Flags), undefined, Block}, Rest};
        Error ->
            Error
    end;
%% §6.3 PRIORITY
frame(?PRIORITY, _, 0, _, _) ->
    conn_error(protocol_error, priority_on_stream_0);
frame(?PRIORITY, _, Id, <<E:1, Dep:31, Weight:8>>, Rest) ->
    {ok, {priority, Id, E =:= 1, Dep, Weight + 1}, Rest};
frame(?PRIORITY, _, Id, _, Rest) ->
    {error, {stream_error, Id, frame_size_error, bad_priority_length}, Rest};
%% §6.4 RST_STREAM
frame(?RST_STREAM, _, 0, _, _) ->
    conn_error(protocol_error, rst_stream_on_stream_0);
frame(?RST_STREAM, _, Id, <<Code:32>>, Rest) ->
    {ok, {rst_stream, Id, error_name(Code)}, Rest};
frame(?RST_STREAM, _, _, _, _) ->
    conn_error(frame_size_error, bad_rst_stream_length);
%% §6.5 SETTINGS
frame(?SETTINGS, _, Id, _, _) when Id =/= 0 ->
    conn_error(protocol_error, settings_on_stream);
frame(?SETTINGS, Flags, 0, <<>>, Rest) when Flags band ?ACK =/= 0 ->
    {ok, settings_ack, Rest};
frame(?SETTINGS, Flags, 0, _, _) when Flags band ?ACK =/= 0 ->
    conn_error(frame_size_error, settings_ack_with_payload);
frame(?SETTINGS, _, 0, Payload, Rest) when byte_size(Payload) rem 6 =:= 0 ->
    case settings_params(Payload, #{}) of
        {ok, Settings} -> {ok, {settings, Settings}, Rest};
        Error -> Error
    end;
frame(?SETTINGS, _, 0, _, _) ->
    conn_error(frame_size_error, bad_settings_length);
%% §6.6 PUSH_PROMISE (parsed so the machine can refuse it: clients never push)
frame(?PUSH_PROMISE, _, 0, _, _) ->
    conn_error(protocol_error, push_promise_on_stream_0);
frame(?PUSH_PROMISE, Flags, Id, Payload, Rest) ->
    case unpad(Flags, Payload) of
        {ok, <<_:1, Promised:31, Block/binary>>} ->
            {ok, {push_promise, Id, end_headers(Flags), Promised, Block}, Rest};
        {ok, _} ->
            conn_error(frame_size_error, push_promise_truncated);
        Error ->
            Error
    end;
%% §6.7 PING
frame(?PING, _, Id, _, _) when Id =/= 0 ->
    conn_error(protocol_error, ping_on_stream);
frame(?PING, Flags, 0, <<Opaque:8/binary>>, Rest) ->
    case Flags band ?ACK of
        0 -> {ok, {ping, Opaque}, Rest};
        _ -> {ok, {ping_ack, Opaque}, Rest}
    end;
frame(?PING, _, 0, _, _) ->
    conn_error(frame_size_error, bad_ping_length);
%% §6.8 GOAWAY
frame(?GOAWAY, _, Id, _, _) when Id =/= 0 ->
    conn_error(protocol_error, goaway_on_stream);
frame(?GOAWAY, _, 0, <<_:1, Last:31, Code:32, Debug/binary>>, Rest) ->
    {ok, {goaway, Last, error_name(Code), Debug}, Rest};
frame(?GOAWAY, _, 0, _, _) ->
    conn_error(frame_size_error, bad_goaway_length);
%% §6.9 WINDOW_UPDATE
frame(?WINDOW_UPDATE, _, Id, <<_:1, 0:31>>, Rest) ->
    case Id of
        0 -> conn_error(protocol_error, zero_window_increment);
        _ -> {error, {stream_error, Id, protocol_error, zero_window_increment}, Rest}
    end;
frame(?WINDOW_UPDATE, _, Id, <<_:1, Inc:31>>, Rest) ->
    {ok, {window_update, Id, Inc}, Rest};
frame(?WINDOW_UPDATE, _, _, _, _) ->
    conn_error(frame_size_error, bad_window_update_length);
%% §6.10 CONTINUATION
frame(?CONTINUATION, _, 0, _, _) ->
    conn_error(protocol_error, continuation_on_stream_0);
frame(?CONTINUATION, Flags, Id, Payload, Rest) ->
    {ok, {continuation, Id, end_headers(Flags), Payload}, Rest};
%% §5.5: unknown types are ignored (the machine checks field-block sequencing).
frame(Type, _, Id, _, Rest) ->
    {ok, {unknown, Type, Id}, Rest}.

conn_error(Code, Why) ->
    {error, {connection_error, Code, Why}}.

fin(Flags) when Flags band ?END_STREAM =/= 0 -> fin;
fin(_) -> nofin.

end_headers(Flags) when Flags band ?END_HEADERS =/= 0 -> fin;
end_headers(_) -> nofin.

%% §6.1: padding at least as long as the payload is a connection error;
%% padding must be zero, and a receiver may check it.
unpad(Flags, Payload) when Flags band ?PADDED =:= 0 ->
    {ok, Payload};
unpad(_, <<PadLen:8, Rest/binary>>) when PadLen =< byte_size(Rest) ->
    Len = byte_size(Rest) - PadLen,
    <<Data:Len/binary, Padding/binary>> = Rest,
    case all_zero(Padding) of
        true -> {ok, Data};
        false -> conn_error(protocol_error, nonzero_padding)
    end;
unpad(_, _) ->
    conn_error(protocol_error, bad_padding).

all_zero(<<0:64, R/binary>>) -> all_zero(R);
all_zero(<<0, R/binary>>) -> all_zero(R);
all_zero(<<>>) -> true;
all_zero(_) -> false.

%% §6.5.2: the defined parameters and their bounds; unknown ones are ignored.
settings_params(<<Key:16, Value:32, Rest/binary>>, Acc) ->
    case setting(Key, Value) of
        {ok, Name, V} -> settings_params(Rest, Acc#{Name => V});
        ignore -> settings_params(Rest, Acc);
        Error -> Error
    end;
settings_params(<<>>, Acc) ->
    {ok, Acc}.

setting(1, V) -> {ok, header_table_size, V};
setting(2, 0) -> {ok, enable_push, false};
setting(2, 1) -> {ok, enable_push, true};
setting(2, _) -> conn_error(protocol_error, bad_enable_push);
setting(3, V) -> {ok, max_concurrent_streams, V};
setting(4, V) when V > ?MAX_WINDOW -> conn_error(flow_control_error, bad_initial_window_size);
setting(4, V) -> {ok, initial_window_size, V};
setting(5, V) when V < 16384; V > 16777215 -> conn_error(protocol_error, bad_max_frame_size);
setting(5, V) -> {ok, max_frame_size, V};
setting(6, V) -> {ok, max_header_list_size, V};
setting(8, 0) -> {ok, enable_connect_protocol, false};
setting(8, 1) -> {ok, enable_connect_protocol, true};
setting(8, _) -> conn_error(protocol_error, bad_enable_connect_protocol);
setting(9, 0) -> {ok, no_rfc7540_priorities, false};
setting(9, 1) -> {ok, no_rfc7540_priorities, true};
setting(9, _) -> conn_error(protocol_error, bad_no_rfc7540_priorities);
setting(_, _) -> ignore.

%% -- building ---------------------------------------------------------------

header(Len, Type, Flags, Id) ->
    <<Len:24, Type:8, Flags:8, 0:1, Id:31>>.

%% @doc A DATA frame (the caller keeps it within the peer's max frame size).
-spec data(stream_id(), fin(), iodata()) -> iodata().
data(Id, Fin, Data) ->
    [header(iolist_size(Data), ?DATA, flag(Fin, ?END_STREAM), Id), Data].

%% @doc One HEADERS frame carrying the whole field block (END_HEADERS set).
-spec headers(stream_id(), fin(), fin(), iodata()) -> iodata().
headers(Id, Fin, EndHeaders, Block) ->
    [header(iolist_size(Block), ?HEADERS,
            flag(Fin, ?END_STREAM) bor flag(EndHeaders, ?END_HEADERS), Id), Block].

%% @doc A field block as HEADERS followed by as many CONTINUATION frames as
%% `MaxSize' (the peer's SETTINGS_MAX_FRAME_SIZE) requires (§4.3).
-spec header_block(stream_id(), fin(), iodata(), 16384..16777215) -> iodata().
header_block(Id, Fin, Block0, MaxSize) ->
    case iolist_to_binary(Block0) of
        Block when byte_size(Block) =< MaxSize ->
            headers(Id, Fin, fin, Block);
        <<First:MaxSize/binary, Rest/binary>> ->
            [headers(Id, Fin, nofin, First) | continuations(Id, Rest, MaxSize)]
    end.

continuations(Id, Block, MaxSize) when byte_size(Block) =< MaxSize ->
    [continuation(Id, fin, Block)];
continuations(Id, Block, MaxSize) ->
    <<Part:MaxSize/binary, Rest/binary>> = Block,
    [continuation(Id, nofin, Part) | continuations(Id, Rest, MaxSize)].

%% @doc A PRIORITY frame (weight 1..256).
-spec priority(stream_id(), boolean(), stream_id(), 1..256) -> iodata().
priority(Id, Exclusive, Dep, Weight) ->
    E = case Exclusive of true -> 1; false -> 0 end,
    [header(5, ?PRIORITY, 0, Id), <<E:1, Dep:31, (Weight - 1):8>>].

%% @doc A RST_STREAM frame.
-spec rst_stream(stream_id(), error_code()) -> iodata().
rst_stream(Id, Code) ->
    [header(4, ?RST_STREAM, 0, Id), <<(error_code(Code)):32>>].

%% @doc A SETTINGS frame with the given parameters.
-spec settings(settings()) -> iodata().
settings(Settings) ->
    Params = [param(K, V) || {K, V} <- lists:sort(maps:to_list(Settings))],
    [header(6 * length(Params), ?SETTINGS, 0, 0), Params].

param(header_table_size, V) -> <<1:16, V:32>>;
param(enable_push, V) -> <<2:16, (bool(V)):32>>;
param(max_concurrent_streams, V) -> <<3:16, V:32>>;
param(initial_window_size, V) -> <<4:16, V:32>>;
param(max_frame_size, V) -> <<5:16, V:32>>;
param(max_header_list_size, V) -> <<6:16, V:32>>;
param(enable_connect_protocol, V) -> <<8:16, (bool(V)):32>>;
param(no_rfc7540_priorities, V) -> <<9:16, (bool(V)):32>>.

bool(true) -> 1;
bool(false) -> 0.

%% @doc The acknowledgement of a SETTINGS frame.
-spec settings_ack() -> binary().
settings_ack() ->
    header(0, ?SETTINGS, ?ACK, 0).

%% @doc A PUSH_PROMISE frame (falco never pushes; used by tests).
-spec push_promise(stream_id(), fin(), stream_id(), iodata()) -> iodata().
push_promise(Id, EndHeaders, Promised, Block) ->
    [header(4 + iolist_size(Block), ?PUSH_PROMISE, flag(EndHeaders, ?END_HEADERS), Id),
     <<0:1, Promised:31>>, Block].

%% @doc A PING frame.
-spec ping(<<_:64>>) -> iodata().
ping(Opaque) ->
    [header(8, ?PING, 0, 0), Opaque].

%% @doc The answer to a PING (§6.7: same opaque data, ACK set).
-spec ping_ack(<<_:64>>) -> iodata().
ping_ack(Opaque) ->
    [header(8, ?PING, ?ACK, 0), Opaque].

%% @doc A GOAWAY frame.
-spec goaway(stream_id(), error_code(), iodata()) -> iodata().
goaway(Last, Code, Debug) ->
    [header(8 + iolist_size(Debug), ?GOAWAY, 0, 0), <<0:1, Last:31, (error_code(Code)):32>>,
     Debug].

%% @doc A WINDOW_UPDATE frame (stream 0 for the connection).
-spec window_update(stream_id(), 1..16#7fffffff) -> binary().
window_update(Id, Inc) ->
    <<(header(4, ?WINDOW_UPDATE, 0, Id))/binary, 0:1, Inc:31>>.

%% @doc A CONTINUATION frame.
-spec continuation(stream_id(), fin(), iodata()) -> iodata().
continuation(Id, EndHeaders, Block) ->
    [header(iolist_size(Block), ?CONTINUATION, flag(EndHeaders, ?END_HEADERS), Id), Block].

flag(fin, Bit) -> Bit;
flag(nofin, _) -> 0.

%% -- error codes (§7) ---------------------------------------------------------

%% @doc The wire value of an error code.
-spec error_code(error_code()) -> non_neg_integer().
error_code(no_error) -> 0;
error_code(protocol_error) -> 1;
error_code(internal_error) -> 2;
error_code(flow_control_error) -> 3;
error_code(settings_timeout) -> 4;
error_code(stream_closed) -> 5;
error_code(frame_size_error) -> 6;
error_code(refused_stream) -> 7;
error_code(cancel) -> 8;
error_code(compression_error) -> 9;
error_code(connect_error) -> 10;
error_code(enhance_your_calm) -> 11;
error_code(inadequate_security) -> 12;
error_code(http_1_1_required) -> 13;
error_code({unknown, N}) -> N.

%% @doc The name of a wire error code (§7: unknown codes are kept, and
%% must not trigger special behaviour).
-spec error_name(non_neg_integer()) -> error_code().
error_name(0) -> no_error;
error_name(1) -> protocol_error;
error_name(2) -> internal_error;
error_name(3) -> flow_control_error;
error_name(4) -> settings_timeout;
error_name(5) -> stream_closed;
error_name(6) -> frame_size_error;
error_name(7) -> refused_stream;
error_name(8) -> cancel;
error_name(9) -> compression_error;
error_name(10) -> connect_error;
error_name(11) -> enhance_your_calm;
error_name(12) -> inadequate_security;
error_name(13) -> http_1_1_required;
error_name(N) -> {unknown, N}.
