%% @doc Pure QUIC v1 frame codec (RFC 9000 §12.4 frames and packet types,
%% §19 frame formats; RFC 9221 DATAGRAM; RFC 9002 §2 for what counts in
%% flight).
%%
%% {@link parse/2} reads a whole decrypted packet payload into its frames:
%% `{ok, [Frame]}' or `{error, Code, FrameType, Reason}', Code the
%% transport error ({@link falco_quic_error}) and FrameType the wire type to
%% put in the CONNECTION_CLOSE. Every check that needs one frame and the
%% packet it came in is made here: the shortest encoding of the frame
%% type, truncation, the bounds of §19 (ACK ranges above 0, MAX_STREAMS
%% and STREAMS_BLOCKED at most 2^60, NEW_CONNECTION_ID's length and
%% Retire Prior To, a non-empty NEW_TOKEN, offsets under 2^62), the §12.4
%% table of frames per packet type, and the frames only a server sends
%% (NEW_TOKEN, HANDSHAKE_DONE). Checks that need the connection's state
%% (stream direction and existence, flow control, CID limits) belong to
%% the connection machine.
%%
%% STREAM, CRYPTO and DATAGRAM data (and tokens, connection IDs, reason
%% phrases) are sub-binaries of the payload, not copies: no bytes move,
%% but while any of them lives the whole payload binary (a packet, about
%% 1.2-1.5 KB) stays in memory. Buffering out-of-order pieces therefore
%% costs up to a packet each, whatever their length; a receive buffer that
%% keeps pieces for long should binary:copy/1 them or count the packet.
%%
%% A run of PADDING bytes is one `{padding, N}'. An ACK's ranges come out
%% as explicit inclusive intervals `{Smallest, Largest}', newest first; at
%% most `max_ack_ranges' of them are kept (the rest are still checked,
%% then dropped: the peer only learns of those packets later, as lost),
%% and the ACK Delay stays unscaled (the peer's ack_delay_exponent is the
%% machine's to apply).
%%
%% Builders return iodata. {@link stream_fit/5} and {@link crypto_fit/3}
%% build the largest frame of a piece of data that fits a byte budget,
%% for the machine to fill packets to a size.
%%
%% @private internal to falco
-module(falco_quic_frame).

-export([parse/1, parse/2, check/3, ack_eliciting/1, in_flight/1, frame_type/1]).
-export([build/1, padding/1, ping/0, ack/3, reset_stream/3, stop_sending/2, crypto/2,
         crypto_fit/3, new_token/1, stream/4, stream_fit/5, max_data/1, max_stream_data/2,
         max_streams/2, data_blocked/1, stream_data_blocked/2, streams_blocked/2,
         new_connection_id/4, retire_connection_id/1, path_challenge/1, path_response/1,
         connection_close/3, application_close/2, handshake_done/0, datagram/1]).

-export_type([frame/0, packet_type/0, opts/0, parse_result/0, ack_range/0, fin/0]).

-define(PADDING, 16#00).
-define(PING, 16#01).
-define(ACK, 16#02).
-define(ACK_ECN, 16#03).
-define(RESET_STREAM, 16#04).
-define(STOP_SENDING, 16#05).
-define(CRYPTO, 16#06).
-define(NEW_TOKEN, 16#07).
-define(STREAM, 16#08).
-define(MAX_DATA, 16#10).
-define(MAX_STREAM_DATA, 16#11).
-define(MAX_STREAMS_BIDI, 16#12).
-define(MAX_STREAMS_UNI, 16#13).
-define(DATA_BLOCKED, 16#14).
-define(STREAM_DATA_BLOCKED, 16#15).
-define(STREAMS_BLOCKED_BIDI, 16#16).
-define(STREAMS_BLOCKED_UNI, 16#17).
-define(NEW_CONNECTION_ID, 16#18).
-define(RETIRE_CONNECTION_ID, 16#19).
-define(PATH_CHALLENGE, 16#1a).
-define(PATH_RESPONSE, 16#1b).
-define(CONNECTION_CLOSE, 16#1c).
-define(APPLICATION_CLOSE, 16#1d).
-define(HANDSHAKE_DONE, 16#1e).
-define(DATAGRAM, 16#30).
-define(DATAGRAM_LEN, 16#31).

%% STREAM's type bits (§19.8)
-define(OFF, 16#04).
-define(LEN, 16#02).
-define(FIN, 16#01).

-define(MAX_VARINT, 16#3fffffffffffffff).
-define(MAX_STREAMS_LIMIT, 16#1000000000000000).  % 2^60 (§4.6, §19.11, §19.14)
-define(DEFAULT_ACK_RANGES, 64).

-type varint() :: falco_quic_varint:varint().
-type fin() :: fin | nofin.
-type dir() :: bidi | uni.
%% An inclusive interval of acknowledged packet numbers.
-type ack_range() :: {Smallest :: varint(), Largest :: varint()}.
-type ecn() :: {Ect0 :: varint(), Ect1 :: varint(), Ce :: varint()}.
-type frame() :: {padding, pos_integer()}
               | ping
               | {ack, AckDelay :: varint(), [ack_range(), ...], ecn() | undefined}
               | {reset_stream, StreamId :: varint(), AppError :: varint(), FinalSize :: varint()}
               | {stop_sending, StreamId :: varint(), AppError :: varint()}
               | {crypto, Offset :: varint(), binary()}
               | {new_token, <<_:8, _:_*8>>}
               | {stream, StreamId :: varint(), Offset :: varint(), fin(), binary()}
               | {max_data, varint()}
               | {max_stream_data, StreamId :: varint(), varint()}
               | {max_streams, dir(), 0..?MAX_STREAMS_LIMIT}
               | {data_blocked, varint()}
               | {stream_data_blocked, StreamId :: varint(), varint()}
               | {streams_blocked, dir(), 0..?MAX_STREAMS_LIMIT}
               | {new_connection_id, Seq :: varint(), RetirePriorTo :: varint(),
                  ConnectionId :: <<_:8, _:_*8>>, StatelessResetToken :: <<_:128>>}
               | {retire_connection_id, Seq :: varint()}
               | {path_challenge, <<_:64>>}
               | {path_response, <<_:64>>}
               | {connection_close, falco_quic_error:error(), FrameType :: varint(), binary()}
               | {application_close, AppError :: varint(), binary()}
               | handshake_done
               | {datagram, binary()}.
-type packet_type() :: initial | zero_rtt | handshake | one_rtt.
%% packet: the packet type the payload came in (any: no §12.4 check);
%% peer: who sent it (the frames only a server sends are refused from a
%% client); max_ack_ranges: ACK intervals kept per frame;
%% max_datagram_frame_size: the transport parameter we sent (0, the
%% default, refuses DATAGRAM: RFC 9221 §3).
-type opts() :: #{packet => packet_type() | any,
                  peer => client | server,
                  max_ack_ranges => pos_integer(),
                  max_datagram_frame_size => non_neg_integer()}.
-type parse_result() :: {ok, [frame(), ...]}
                      | {error, falco_quic_error:error(), FrameType :: varint(), Reason :: atom()}.

-record(ctx, {packet = any :: packet_type() | any,
              peer = client :: client | server,
              max_ack_ranges = ?DEFAULT_ACK_RANGES :: pos_integer(),
              max_datagram = 0 :: non_neg_integer()}).

%% -- parsing -------------------------------------------------------------------

%% @doc The frames of a packet payload, with the default options (any
%% packet type, sent by a client, 64 ACK ranges, no DATAGRAM).
-spec parse(binary()) -> parse_result().
parse(Payload) ->
    parse(Payload, #{}).

%% @doc The frames of a packet payload; see {@link opts()}.
-spec parse(binary(), opts()) -> parse_result().
parse(<<>>, _Opts) ->
    %% §12.4: a packet with no frames is a PROTOCOL_VIOLATION.
    {error, protocol_violation, ?PADDING, no_frames};
parse(Payload, Opts) when is_binary(Payload) ->
    Ctx = #ctx{packet = maps:get(packet, Opts, any),
               peer = maps:get(peer, Opts, client),
               max_ack_ranges = maps:get(max_ack_ranges, Opts, ?DEFAULT_ACK_RANGES),
               max_datagram = maps:get(max_datagram_frame_size, Opts, 0)},
    frames(Payload, Ctx, []).

frames(<<>>, _Ctx, Acc) ->
    {ok, lists:reverse(Acc)};
frames(Bin, Ctx, Acc) ->
    case frame_type_of(Bin) of
        {ok, Type, Rest} ->
            case permitted(Ctx, Type) of
                ok -> body(Type, Rest, Ctx, Acc);
                {error, Why} -> {error, protocol_violation, Type, Why}
            end;
        {error, Code, Type, Why} ->
            {error, Code, Type, Why}
    end.

body(Type, Bin, Ctx, Acc) ->
    case frame(Type, Bin, Ctx) of
        {ok, Frame, Rest} -> frames(Rest, Ctx, [Frame | Acc]);
        {error, Code, Why} -> {error, Code, Type, Why}
    end.

%% §12.4: the type is a varint in its shortest encoding (a longer one MAY
%% be a PROTOCOL_VIOLATION, and is here); an unknown type is a
%% FRAME_ENCODING_ERROR.
frame_type_of(<<0:2, Type:6, Rest/binary>>) ->
    case known(Type) of
        true -> {ok, Type, Rest};
        false -> {error, frame_encoding_error, Type, unknown_frame_type}
    end;
frame_type_of(Bin) ->
    case falco_quic_varint:decode(Bin) of
        {Type, Rest} ->
            case falco_quic_varint:size(Type) < byte_size(Bin) - byte_size(Rest) of
                true -> {error, protocol_violation, Type, frame_type_not_shortest};
                false -> {error, frame_encoding_error, Type, unknown_frame_type}
            end;
        more ->
            {error, frame_encoding_error, 0, truncated_frame_type}
    end.

known(Type) -> Type =< ?HANDSHAKE_DONE orelse Type =:= ?DATAGRAM orelse Type =:= ?DATAGRAM_LEN.

%% §12.4 Table 3 (and RFC 9221 §4 for DATAGRAM), then §19.7 and §19.20:
%% NEW_TOKEN and HANDSHAKE_DONE come from servers only.
permitted(#ctx{peer = client}, ?NEW_TOKEN) -> {error, new_token_from_client};
permitted(#ctx{peer = client}, ?HANDSHAKE_DONE) -> {error, handshake_done_from_client};
permitted(#ctx{packet = any}, _) -> ok;
permitted(#ctx{packet = one_rtt}, _) -> ok;
permitted(#ctx{packet = zero_rtt}, Type) ->
    case lists:member(Type, [?ACK, ?ACK_ECN, ?CRYPTO, ?NEW_TOKEN, ?PATH_RESPONSE,
                             ?HANDSHAKE_DONE]) of
        true -> {error, frame_not_allowed_in_0rtt};
        false -> ok
    end;
permitted(#ctx{packet = P}, Type) when P =:= initial; P =:= handshake ->
    case lists:member(Type, [?PADDING, ?PING, ?ACK, ?ACK_ECN, ?CRYPTO, ?CONNECTION_CLOSE]) of
        true -> ok;
        false when P =:= initial -> {error, frame_not_allowed_in_initial};
        false -> {error, frame_not_allowed_in_handshake}
    end.

%% @doc The §12.4 check of frames already parsed (by {@link parse/1}) for
%% a packet type and sender: `ok' or the PROTOCOL_VIOLATION to close with.
-spec check(packet_type() | any, client | server, [frame()]) ->
          ok | {error, protocol_violation, varint(), atom()}.
check(Packet, Peer, Frames) ->
    Ctx = #ctx{packet = Packet, peer = Peer},
    check_each(Ctx, Frames).

check_each(_Ctx, []) ->
    ok;
check_each(Ctx, [F | Fs]) ->
    Type = frame_type(F),
    case permitted(Ctx, Type) of
        ok -> check_each(Ctx, Fs);
        {error, Why} -> {error, protocol_violation, Type, Why}
    end.

%% One frame's body (after its type), one clause per type (§19).
frame(?PADDING, Bin, _) ->
    zeros(Bin, 1);
frame(?PING, Bin, _) ->
    {ok, ping, Bin};
frame(Type, Bin, Ctx) when Type =:= ?ACK; Type =:= ?ACK_ECN ->
    ack_frame(Type, Bin, Ctx#ctx.max_ack_ranges);
frame(?RESET_STREAM, Bin, _) ->
    fields(3, Bin, fun([Id, Code, Final]) -> {reset_stream, Id, Code, Final} end);
frame(?STOP_SENDING, Bin, _) ->
    fields(2, Bin, fun([Id, Code]) -> {stop_sending, Id, Code} end);
frame(?CRYPTO, Bin, _) ->
    crypto_frame(Bin);
frame(?NEW_TOKEN, Bin, _) ->
    case length_prefixed(Bin) of
        {ok, <<>>, _} -> {error, frame_encoding_error, empty_token};  % §19.7
        {ok, Token, Rest} -> {ok, {new_token, Token}, Rest};
        Error -> Error
    end;
frame(Type, Bin, _) when Type >= ?STREAM, Type =< ?STREAM + 7 ->
    stream_frame(Type, Bin);
frame(?MAX_DATA, Bin, _) ->
    fields(1, Bin, fun([Max]) -> {max_data, Max} end);
frame(?MAX_STREAM_DATA, Bin, _) ->
    fields(2, Bin, fun([Id, Max]) -> {max_stream_data, Id, Max} end);
frame(Type, Bin, _) when Type =:= ?MAX_STREAMS_BIDI; Type =:= ?MAX_STREAMS_UNI ->
    streams_count(max_streams, dir(Type - ?MAX_STREAMS_BIDI), Bin);
frame(?DATA_BLOCKED, Bin, _) ->
    fields(1, Bin, fun([Max]) -> {data_blocked, Max} end);
frame(?STREAM_DATA_BLOCKED, Bin, _) ->
    fields(2, Bin, fun([Id, Max]) -> {stream_data_blocked, Id, Max} end);
frame(Type, Bin, _) when Type =:= ?STREAMS_BLOCKED_BIDI; Type =:= ?STREAMS_BLOCKED_UNI ->
    streams_count(streams_blocked, dir(Type - ?STREAMS_BLOCKED_BIDI), Bin);
frame(?NEW_CONNECTION_ID, Bin, _) ->
    new_connection_id_frame(Bin);
frame(?RETIRE_CONNECTION_ID, Bin, _) ->
    fields(1, Bin, fun([Seq]) -> {retire_connection_id, Seq} end);
frame(?PATH_CHALLENGE, <<Data:8/binary, Rest/binary>>, _) ->
    {ok, {path_challenge, Data}, Rest};
frame(?PATH_RESPONSE, <<Data:8/binary, Rest/binary>>, _) ->
    {ok, {path_response, Data}, Rest};
frame(?CONNECTION_CLOSE, Bin, _) ->
    close_frame(Bin);
frame(?APPLICATION_CLOSE, Bin, _) ->
    case fields(1, Bin, fun([Code]) -> Code end) of
        {ok, Code, Rest0} ->
            case length_prefixed(Rest0) of
                {ok, Reason, Rest} -> {ok, {application_close, Code, Reason}, Rest};
                Error -> Error
            end;
        Error ->
            Error
    end;
frame(?HANDSHAKE_DONE, Bin, _) ->
    {ok, handshake_done, Bin};
frame(Type, Bin, Ctx) when Type =:= ?DATAGRAM; Type =:= ?DATAGRAM_LEN ->
    datagram_frame(Type, Bin, Ctx#ctx.max_datagram);
frame(_, _, _) ->
    truncated().

truncated() ->
    {error, frame_encoding_error, truncated_frame}.

dir(0) -> bidi;
dir(1) -> uni.

%% PADDING is one 0x00 byte; a run of them is one frame.
zeros(<<0:64, Rest/binary>>, N) -> zeros(Rest, N + 8);
zeros(<<0, Rest/binary>>, N) -> zeros(Rest, N + 1);
zeros(Rest, N) -> {ok, {padding, N}, Rest}.

%% N varints, handed to Make.
fields(N, Bin, Make) ->
    case varints(N, Bin, []) of
        {ok, Values, Rest} -> {ok, Make(Values), Rest};
        more -> truncated()
    end.

varints(0, Bin, Acc) ->
    {ok, lists:reverse(Acc), Bin};
varints(N, Bin, Acc) ->
    case falco_quic_varint:decode(Bin) of
        {V, Rest} -> varints(N - 1, Rest, [V | Acc]);
        more -> more
    end.

%% A varint length, then that many bytes.
length_prefixed(Bin) ->
    case falco_quic_varint:decode(Bin) of
        {Len, Rest0} when Len =< byte_size(Rest0) ->
            <<Data:Len/binary, Rest/binary>> = Rest0,
            {ok, Data, Rest};
        _ ->
            truncated()
    end.

%% §19.3: Largest, Delay, Range Count, First Range, then Count gaps and
%% ranges; ACK_ECN adds three counts (§19.3.2).
ack_frame(Type, Bin, MaxRanges) ->
    case varints(4, Bin, []) of
        {ok, [Largest, Delay, Count, First], Rest0} ->
            %% each further range takes at least 2 bytes (§20.1's example
            %% of a FRAME_ENCODING_ERROR: more ranges than the packet holds)
            if
                Count > byte_size(Rest0) div 2 -> {error, frame_encoding_error, ack_range_count};
                First > Largest -> {error, frame_encoding_error, ack_range_below_zero};
                true ->
                    Low = Largest - First,
                    case ack_ranges(Count, Low, Rest0, MaxRanges - 1, [{Low, Largest}]) of
                        {ok, Ranges, Rest} -> ack_ecn(Type, Delay, Ranges, Rest);
                        Error -> Error
                    end
            end;
        more ->
            truncated()
    end.

%% Each Gap and Range Length is read against the previous range's
%% smallest packet number (§19.3.1); past Keep ranges they are checked only.
ack_ranges(0, _Low, Bin, _Keep, Acc) ->
    {ok, lists:reverse(Acc), Bin};
ack_ranges(Count, Low, Bin, Keep, Acc) ->
    case varints(2, Bin, []) of
        {ok, [Gap, Len], Rest} when Gap + 2 + Len =< Low ->
            High = Low - Gap - 2,
            Low1 = High - Len,
            case Keep of
                0 -> ack_ranges(Count - 1, Low1, Rest, 0, Acc);
                _ -> ack_ranges(Count - 1, Low1, Rest, Keep - 1, [{Low1, High} | Acc])
            end;
        {ok, _, _} ->
            {error, frame_encoding_error, ack_range_below_zero};
        more ->
            truncated()
    end.

ack_ecn(?ACK, Delay, Ranges, Bin) ->
    {ok, {ack, Delay, Ranges, undefined}, Bin};
ack_ecn(?ACK_ECN, Delay, Ranges, Bin) ->
    fields(3, Bin, fun([Ect0, Ect1, Ce]) -> {ack, Delay, Ranges, {Ect0, Ect1, Ce}} end).

%% §19.6: the offset and length; their sum cannot pass 2^62 - 1.
crypto_frame(Bin) ->
    case falco_quic_varint:decode(Bin) of
        {Offset, Rest0} ->
            case length_prefixed(Rest0) of
                {ok, Data, _} when Offset + byte_size(Data) > ?MAX_VARINT ->
                    {error, frame_encoding_error, crypto_offset_too_large};
                {ok, Data, Rest} ->
                    {ok, {crypto, Offset, Data}, Rest};
                Error ->
                    Error
            end;
        more ->
            truncated()
    end.

%% §19.8: OFF, LEN and FIN in the type's low bits; without LEN the data is
%% the rest of the packet. Offset plus length cannot pass 2^62 - 1
%% (FRAME_ENCODING_ERROR or FLOW_CONTROL_ERROR: the first, as the frame
%% alone shows it).
stream_frame(Type, Bin) ->
    case falco_quic_varint:decode(Bin) of
        {Id, Rest0} ->
            case stream_offset(Type band ?OFF, Rest0) of
                {ok, Offset, Rest1} -> stream_data(Type, Id, Offset, Rest1);
                more -> truncated()
            end;
        more ->
            truncated()
    end.

stream_offset(0, Bin) -> {ok, 0, Bin};
stream_offset(_, Bin) ->
    case falco_quic_varint:decode(Bin) of
        {Offset, Rest} -> {ok, Offset, Rest};
        more -> more
    end.

stream_data(Type, Id, Offset, Bin) ->
    Split = case Type band ?LEN of
                0 -> {ok, Bin, <<>>};
                _ -> length_prefixed(Bin)
            end,
    case Split of
        {ok, Data, _} when Offset + byte_size(Data) > ?MAX_VARINT ->
            {error, frame_encoding_error, stream_offset_too_large};
        {ok, Data, Rest} ->
            {ok, {stream, Id, Offset, stream_fin(Type), Data}, Rest};
        Error ->
            Error
    end.

stream_fin(Type) when Type band ?FIN =/= 0 -> fin;
stream_fin(_) -> nofin.

%% §19.11, §19.14: a count over 2^60 would allow stream IDs past 2^62 - 1.
%% For STREAMS_BLOCKED §19.14 allows STREAM_LIMIT_ERROR too.
streams_count(Tag, Dir, Bin) ->
    case falco_quic_varint:decode(Bin) of
        {N, _} when N > ?MAX_STREAMS_LIMIT -> {error, frame_encoding_error, stream_count_too_large};
        {N, Rest} -> {ok, {Tag, Dir, N}, Rest};
        more -> truncated()
    end.

%% §19.15: Length 1..20 and Retire Prior To at most Sequence Number, each a
%% FRAME_ENCODING_ERROR otherwise.
new_connection_id_frame(Bin) ->
    case varints(2, Bin, []) of
        {ok, [Seq, Retire], <<Len, Rest0/binary>>} ->
            if
                Len < 1; Len > 20 -> {error, frame_encoding_error, bad_connection_id_length};
                Retire > Seq -> {error, frame_encoding_error, retire_prior_to_above_sequence};
                true ->
                    case Rest0 of
                        <<Cid:Len/binary, Token:16/binary, Rest/binary>> ->
                            {ok, {new_connection_id, Seq, Retire, Cid, Token}, Rest};
                        _ ->
                            truncated()
                    end
            end;
        _ ->
            truncated()
    end.

%% §19.19, type 0x1c: the error is a transport error code.
close_frame(Bin) ->
    case varints(2, Bin, []) of
        {ok, [Code, FrameType], Rest0} ->
            case length_prefixed(Rest0) of
                {ok, Reason, Rest} ->
                    {ok, {connection_close, falco_quic_error:name(Code), FrameType, Reason}, Rest};
                Error ->
                    Error
            end;
        more ->
            truncated()
    end.

%% RFC 9221 §4: 0x30 runs to the end of the packet, 0x31 has a length.
%% §3: DATAGRAM without our max_datagram_frame_size, or larger than it
%% (type, length and data), is a PROTOCOL_VIOLATION.
datagram_frame(_, _, 0) ->
    {error, protocol_violation, datagram_not_negotiated};
datagram_frame(Type, Bin, Max) ->
    Split = case Type of
                ?DATAGRAM -> {ok, Bin, <<>>};
                ?DATAGRAM_LEN -> length_prefixed(Bin)
            end,
    case Split of
        {ok, _, Rest} when 1 + byte_size(Bin) - byte_size(Rest) > Max ->
            {error, protocol_violation, datagram_too_large};
        {ok, Data, Rest} ->
            {ok, {datagram, Data}, Rest};
        Error ->
            Error
    end.

%% -- what a packet's frames mean for recovery ----------------------------------

%% @doc Whether a packet of these frames is ack-eliciting: it has a frame
%% other than ACK, PADDING and CONNECTION_CLOSE (RFC 9002 §2; RFC 9000
%% §13.2.1).
-spec ack_eliciting([frame()]) -> boolean().
ack_eliciting(Frames) ->
    lists:any(fun eliciting/1, Frames).

eliciting({padding, _}) -> false;
eliciting({ack, _, _, _}) -> false;
eliciting({connection_close, _, _, _}) -> false;
eliciting({application_close, _, _}) -> false;
eliciting(_) -> true.

%% @doc Whether a packet of these frames counts in bytes in flight once
%% sent: it is ack-eliciting or has PADDING (RFC 9002 §2).
-spec in_flight([frame()]) -> boolean().
in_flight(Frames) ->
    lists:any(fun({padding, _}) -> true; (F) -> eliciting(F) end, Frames).

%% @doc The wire type of a frame, for the Frame Type of a CONNECTION_CLOSE
%% the frame caused. A STREAM frame's is the one {@link build/1} writes.
-spec frame_type(frame()) -> varint().
frame_type({padding, _}) -> ?PADDING;
frame_type(ping) -> ?PING;
frame_type({ack, _, _, undefined}) -> ?ACK;
frame_type({ack, _, _, _}) -> ?ACK_ECN;
frame_type({reset_stream, _, _, _}) -> ?RESET_STREAM;
frame_type({stop_sending, _, _}) -> ?STOP_SENDING;
frame_type({crypto, _, _}) -> ?CRYPTO;
frame_type({new_token, _}) -> ?NEW_TOKEN;
frame_type({stream, _, Offset, Fin, _}) -> stream_type(Offset, Fin);
frame_type({max_data, _}) -> ?MAX_DATA;
frame_type({max_stream_data, _, _}) -> ?MAX_STREAM_DATA;
frame_type({max_streams, bidi, _}) -> ?MAX_STREAMS_BIDI;
frame_type({max_streams, uni, _}) -> ?MAX_STREAMS_UNI;
frame_type({data_blocked, _}) -> ?DATA_BLOCKED;
frame_type({stream_data_blocked, _, _}) -> ?STREAM_DATA_BLOCKED;
frame_type({streams_blocked, bidi, _}) -> ?STREAMS_BLOCKED_BIDI;
frame_type({streams_blocked, uni, _}) -> ?STREAMS_BLOCKED_UNI;
frame_type({new_connection_id, _, _, _, _}) -> ?NEW_CONNECTION_ID;
frame_type({retire_connection_id, _}) -> ?RETIRE_CONNECTION_ID;
frame_type({path_challenge, _}) -> ?PATH_CHALLENGE;
frame_type({path_response, _}) -> ?PATH_RESPONSE;
frame_type({connection_close, _, _, _}) -> ?CONNECTION_CLOSE;
frame_type({application_close, _, _}) -> ?APPLICATION_CLOSE;
frame_type(handshake_done) -> ?HANDSHAKE_DONE;
frame_type({datagram, _}) -> ?DATAGRAM_LEN.

%% -- building ------------------------------------------------------------------

v(N) -> falco_quic_varint:encode(N).

%% @doc Any frame, as the builder of its type writes it.
-spec build(frame()) -> iodata().
build({padding, N}) -> padding(N);
build(ping) -> ping();
build({ack, Delay, Ranges, Ecn}) -> ack(Delay, Ranges, Ecn);
build({reset_stream, Id, Code, Final}) -> reset_stream(Id, Code, Final);
build({stop_sending, Id, Code}) -> stop_sending(Id, Code);
build({crypto, Offset, Data}) -> crypto(Offset, Data);
build({new_token, Token}) -> new_token(Token);
build({stream, Id, Offset, Fin, Data}) -> stream(Id, Offset, Fin, Data);
build({max_data, Max}) -> max_data(Max);
build({max_stream_data, Id, Max}) -> max_stream_data(Id, Max);
build({max_streams, Dir, Max}) -> max_streams(Dir, Max);
build({data_blocked, Max}) -> data_blocked(Max);
build({stream_data_blocked, Id, Max}) -> stream_data_blocked(Id, Max);
build({streams_blocked, Dir, Max}) -> streams_blocked(Dir, Max);
build({new_connection_id, Seq, Retire, Cid, Token}) -> new_connection_id(Seq, Retire, Cid, Token);
build({retire_connection_id, Seq}) -> retire_connection_id(Seq);
build({path_challenge, Data}) -> path_challenge(Data);
build({path_response, Data}) -> path_response(Data);
build({connection_close, Error, Type, Reason}) -> connection_close(Error, Type, Reason);
build({application_close, Code, Reason}) -> application_close(Code, Reason);
build(handshake_done) -> handshake_done();
build({datagram, Data}) -> datagram(Data).

%% @doc N bytes of PADDING (§19.1).
-spec padding(pos_integer()) -> binary().
padding(N) when is_integer(N), N > 0 ->
    <<0:(N * 8)>>.

%% @doc A PING frame (§19.2).
-spec ping() -> binary().
ping() ->
    <<?PING>>.

%% @doc An ACK frame (§19.3) of intervals newest first, separated by at
%% least one unacknowledged packet, and an unscaled ACK Delay; with ECN
%% counts it is ACK_ECN. The caller bounds the number of ranges.
-spec ack(varint(), [ack_range(), ...], ecn() | undefined) -> iodata().
ack(Delay, [{Low, Largest} | More], Ecn) when Low =< Largest ->
    [<<(ack_type(Ecn))>>, v(Largest), v(Delay), v(length(More)), v(Largest - Low),
     ack_gaps(Low, More), ack_counts(Ecn)].

ack_type(undefined) -> ?ACK;
ack_type({_, _, _}) -> ?ACK_ECN.

ack_gaps(_, []) ->
    [];
ack_gaps(PrevLow, [{Low, High} | More]) when High + 2 =< PrevLow, Low =< High ->
    [v(PrevLow - High - 2), v(High - Low) | ack_gaps(Low, More)].

ack_counts(undefined) -> [];
ack_counts({Ect0, Ect1, Ce}) -> [v(Ect0), v(Ect1), v(Ce)].

%% @doc A RESET_STREAM frame (§19.4).
-spec reset_stream(varint(), varint(), varint()) -> iodata().
reset_stream(Id, Code, Final) ->
    [<<?RESET_STREAM>>, v(Id), v(Code), v(Final)].

%% @doc A STOP_SENDING frame (§19.5).
-spec stop_sending(varint(), varint()) -> iodata().
stop_sending(Id, Code) ->
    [<<?STOP_SENDING>>, v(Id), v(Code)].

%% @doc A CRYPTO frame (§19.6).
-spec crypto(varint(), iodata()) -> iodata().
crypto(Offset, Data) ->
    [<<?CRYPTO>>, v(Offset), v(iolist_size(Data)), Data].

%% @doc The largest CRYPTO frame of the start of Data at Offset that fits
%% in Budget bytes: `{Frame, FrameSize, Rest}', Rest the data left for a
%% later frame, or `none' when not one byte fits.
-spec crypto_fit(varint(), binary(), non_neg_integer()) ->
          {iodata(), pos_integer(), binary()} | none.
crypto_fit(_Offset, <<>>, _Budget) ->
    none;
crypto_fit(Offset, Data, Budget) ->
    Head = 1 + falco_quic_varint:size(Offset),
    case fit(byte_size(Data), Budget - Head) of
        0 ->
            none;
        N ->
            <<Part:N/binary, Rest/binary>> = Data,
            Frame = crypto(Offset, Part),
            {Frame, Head + falco_quic_varint:size(N) + N, Rest}
    end.

%% @doc A NEW_TOKEN frame (§19.7; a server's only).
-spec new_token(<<_:8, _:_*8>>) -> iodata().
new_token(Token) when byte_size(Token) > 0 ->
    [<<?NEW_TOKEN>>, v(byte_size(Token)), Token].

%% @doc A STREAM frame (§19.8) with its Length (so other frames may
%% follow), and its Offset when not 0.
-spec stream(varint(), varint(), fin(), iodata()) -> iodata().
stream(Id, Offset, Fin, Data) ->
    [<<(stream_type(Offset, Fin))>>, v(Id), stream_offset_field(Offset),
     v(iolist_size(Data)), Data].

stream_type(Offset, Fin) ->
    ?STREAM bor ?LEN bor (case Offset of 0 -> 0; _ -> ?OFF end)
        bor (case Fin of fin -> ?FIN; nofin -> 0 end).

stream_offset_field(0) -> <<>>;
stream_offset_field(Offset) -> v(Offset).

%% @doc The largest STREAM frame of the start of Data (the stream's bytes
%% from Offset) that fits in Budget bytes: `{Frame, FrameSize, Rest, Fin}',
%% Rest the data left for a later frame and Fin `fin' only when Fin was
%% asked and all of Data went. The frame has its Length, so it need not
%% end the packet. Empty Data with `fin' gives the empty frame that ends
%% the stream. `none' when nothing fits (or there is nothing to send).
-spec stream_fit(varint(), varint(), fin(), binary(), non_neg_integer()) ->
          {iodata(), pos_integer(), binary(), fin()} | none.
stream_fit(_Id, _Offset, nofin, <<>>, _Budget) ->
    none;
stream_fit(Id, Offset, Fin, Data, Budget) ->
    Head = 1 + falco_quic_varint:size(Id)
        + case Offset of 0 -> 0; _ -> falco_quic_varint:size(Offset) end,
    case fit(byte_size(Data), Budget - Head) of
        0 when Data =:= <<>>, Budget >= Head + 1 ->
            {stream(Id, Offset, fin, <<>>), Head + 1, <<>>, fin};
        0 ->
            none;
        N ->
            <<Part:N/binary, Rest/binary>> = Data,
            Sent = case Rest of <<>> -> Fin; _ -> nofin end,
            {stream(Id, Offset, Sent, Part), Head + falco_quic_varint:size(N) + N, Rest, Sent}
    end.

%% The most of Size bytes that fit in Room bytes after their varint
%% length: the best over the four length sizes of as many bytes as each
%% can count.
fit(Size, Room) ->
    lists:max([0 | [min(min(Size, Room - L), Cap)
                    || {L, Cap} <- [{1, 63}, {2, 16383}, {4, 16#3fffffff}, {8, ?MAX_VARINT}],
                       Room >= L]]).

%% @doc A MAX_DATA frame (§19.9).
-spec max_data(varint()) -> iodata().
max_data(Max) ->
    [<<?MAX_DATA>>, v(Max)].

%% @doc A MAX_STREAM_DATA frame (§19.10).
-spec max_stream_data(varint(), varint()) -> iodata().
max_stream_data(Id, Max) ->
    [<<?MAX_STREAM_DATA>>, v(Id), v(Max)].

%% @doc A MAX_STREAMS frame (§19.11).
-spec max_streams(dir(), 0..?MAX_STREAMS_LIMIT) -> iodata().
max_streams(Dir, Max) when Max =< ?MAX_STREAMS_LIMIT ->
    [<<(?MAX_STREAMS_BIDI + dir_bit(Dir))>>, v(Max)].

dir_bit(bidi) -> 0;
dir_bit(uni) -> 1.

%% @doc A DATA_BLOCKED frame (§19.12).
-spec data_blocked(varint()) -> iodata().
data_blocked(Max) ->
    [<<?DATA_BLOCKED>>, v(Max)].

%% @doc A STREAM_DATA_BLOCKED frame (§19.13).
-spec stream_data_blocked(varint(), varint()) -> iodata().
stream_data_blocked(Id, Max) ->
    [<<?STREAM_DATA_BLOCKED>>, v(Id), v(Max)].

%% @doc A STREAMS_BLOCKED frame (§19.14).
-spec streams_blocked(dir(), 0..?MAX_STREAMS_LIMIT) -> iodata().
streams_blocked(Dir, Max) when Max =< ?MAX_STREAMS_LIMIT ->
    [<<(?STREAMS_BLOCKED_BIDI + dir_bit(Dir))>>, v(Max)].

%% @doc A NEW_CONNECTION_ID frame (§19.15).
-spec new_connection_id(varint(), varint(), <<_:8, _:_*8>>, <<_:128>>) -> iodata().
new_connection_id(Seq, Retire, Cid, <<_:16/binary>> = Token)
  when Retire =< Seq, byte_size(Cid) >= 1, byte_size(Cid) =< 20 ->
    [<<?NEW_CONNECTION_ID>>, v(Seq), v(Retire), <<(byte_size(Cid))>>, Cid, Token].

%% @doc A RETIRE_CONNECTION_ID frame (§19.16).
-spec retire_connection_id(varint()) -> iodata().
retire_connection_id(Seq) ->
    [<<?RETIRE_CONNECTION_ID>>, v(Seq)].

%% @doc A PATH_CHALLENGE frame (§19.17).
-spec path_challenge(<<_:64>>) -> iodata().
path_challenge(<<_:8/binary>> = Data) ->
    [<<?PATH_CHALLENGE>>, Data].

%% @doc A PATH_RESPONSE frame (§19.18), echoing a challenge's data.
-spec path_response(<<_:64>>) -> iodata().
path_response(<<_:8/binary>> = Data) ->
    [<<?PATH_RESPONSE>>, Data].

%% @doc A CONNECTION_CLOSE frame of type 0x1c (§19.19): a transport error,
%% the type of the frame that caused it (0 when none did) and a reason.
-spec connection_close(falco_quic_error:error(), varint(), iodata()) -> iodata().
connection_close(Error, FrameType, Reason) ->
    [<<?CONNECTION_CLOSE>>, v(falco_quic_error:code(Error)), v(FrameType),
     v(iolist_size(Reason)), Reason].

%% @doc A CONNECTION_CLOSE frame of type 0x1d (§19.19): an application
%% error code and a reason. Only in 0-RTT and 1-RTT packets (§12.4); before
%% then §10.2.3 has a 0x1c with APPLICATION_ERROR sent instead.
-spec application_close(varint(), iodata()) -> iodata().
application_close(Code, Reason) ->
    [<<?APPLICATION_CLOSE>>, v(Code), v(iolist_size(Reason)), Reason].

%% @doc A HANDSHAKE_DONE frame (§19.20).
-spec handshake_done() -> binary().
handshake_done() ->
    <<?HANDSHAKE_DONE>>.

%% @doc A DATAGRAM frame with its length (RFC 9221 §4, type 0x31).
-spec datagram(iodata()) -> iodata().
datagram(Data) ->
    [<<?DATAGRAM_LEN>>, v(iolist_size(Data)), Data].
