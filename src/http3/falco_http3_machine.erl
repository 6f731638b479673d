%% @doc Pure HTTP/3 connection state machine, server side (RFC 9114 §4
%% messages, §5.2 GOAWAY, §6 streams, §7 frames, §8 errors; RFC 9204 §4.2
%% QPACK's streams, at a dynamic table capacity of 0): the HTTP/3 rules of
%% one connection above its QUIC streams, knowing nothing of QUIC's
%% packets, flow control or stream states.
%%
%% Each event returns `{NewState, [Action]}', as falco_http2_machine does,
%% and the connection process carries the actions out in order. Events,
%% from QUIC: {@link event/2} with `{stream_open, Id, bidi | uni}' (a
%% stream the client opened, and with it the lower ones of its type, RFC
%% 9000 §3.2; data for a stream never announced opens it too),
%% `{stream_data, Id, Bin, fin | nofin}', `{stream_reset, Id, Code}'
%% (the client's RESET_STREAM) and `{stop_sending, Id, Code}' (its
%% STOP_SENDING); from the application: {@link send_response/5},
%% {@link send_data/4}, {@link send_trailers/3}, {@link reset_stream/3},
%% {@link drain/1} and {@link goaway/1}. Actions:
%% <ul>
%% <li>`{send, Id, iodata(), fin | nofin}': bytes for stream Id, and
%%     whether they end it (our control stream's come first, from
%%     {@link new/1});</li>
%% <li>`{request, Id, Req | {error, Reason, Method}}': a new request, the
%%     map of falco_http2_request:request/2 (version `{3, 0}'), or one
%%     falco answers with an error status (431 for a field section over
%%     `max_field_section_size'), as falco_http2_machine reports them;</li>
%% <li>`{data, Id, binary() | [binary()], fin | nofin}' and
%%     `{trailers, Id, Fields}': request body and trailers as they come
%%     (QUIC's stream windows bound what a client can make us hold), at
%%     most one data action per stream and event; the body ends with `fin'
%%     or with the trailers;</li>
%% <li>`{reset, Id, Reason}': for the stream's process, the stream is
%%     gone (`{peer_reset, Code}', `{peer_stop, Code}', or our error's
%%     code);</li>
%% <li>`{reset_stream, Id, Code}', `{stop_sending, Id, Code}': QUIC's
%%     RESET_STREAM and STOP_SENDING, Code a falco_http3_error:code();</li>
%% <li>`{timer, reset_window, Ms}': call {@link reset_window/1} in Ms
%%     (the client's first stream reset of a window);</li>
%% <li>`{close, {Code, Why}}': close the connection with Code (H3_NO_ERROR
%%     at the end of a graceful shutdown).</li>
%% </ul>
%%
%% Rules. Our control stream (`control_stream', default 3, the server's
%% first unidirectional stream) starts with SETTINGS: QPACK capacity 0, no
%% blocked streams, `max_field_section_size', one reserved setting (§6.2.1,
%% §7.2.4.1). We open no QPACK streams (RFC 9204 §4.2 allows it at capacity
%% 0). The client's control stream must start with SETTINGS
%% (H3_MISSING_SETTINGS); a second SETTINGS, DATA, HEADERS or PUSH_PROMISE
%% there is H3_FRAME_UNEXPECTED, CANCEL_PUSH H3_ID_ERROR (we promise
%% nothing, §7.2.3), GOAWAY or MAX_PUSH_ID going backwards H3_ID_ERROR
%% (§5.2, §7.2.7). A second control, encoder or decoder stream, or a push
%% stream from the client, is H3_STREAM_CREATION_ERROR (§6.2.1, §6.2.2,
%% RFC 9204 §4.2); ending or resetting one of them, or asking us to stop
%% our control stream, H3_CLOSED_CRITICAL_STREAM. A unidirectional stream
%% of an unknown type is stopped with H3_STREAM_CREATION_ERROR and its
%% bytes dropped (§6.2). The client's QPACK streams are read with
%% falco_qpack's rules of capacity 0.
%%
%% On a request stream (§4.1): HEADERS, then DATA, then optionally a
%% trailer HEADERS; DATA first, or anything after the trailers, is the
%% connection error H3_FRAME_UNEXPECTED, as are the frames of the control
%% stream. A malformed request (§4.1.2: falco_http2_request's rules, RFC
%% 9114 §4.3 being RFC 9113's; a body longer or shorter than its
%% Content-Length; bad trailers) is the stream error H3_MESSAGE_ERROR: the
%% stream is reset and stopped. A stream that ends before its HEADERS is
%% reset with H3_REQUEST_INCOMPLETE (§4.1). A stream the client resets is
%% reset back with H3_REQUEST_CANCELLED, or H3_REQUEST_REJECTED if no
%% request was handed over (§4.1.1). When our response is complete and the
%% client is still sending, the stream is stopped with H3_NO_ERROR (§4.1).
%% A field section that cannot be decoded is QPACK_DECOMPRESSION_FAILED
%% for the connection.
%%
%% Bounds (§10.5, study §11): a HEADERS frame longer than
%% `max_field_section_size' is skipped unread and answered 431, as is a
%% decoded section over it; control-stream frames are held up to
%% `max_control_frame' bytes (longer: H3_EXCESSIVE_LOAD); frames of unknown
%% type (PRIORITY_UPDATE, GREASE) are never held, and more of them than
%% `max_ignored_frames' plus 16 per request stream opened is
%% H3_EXCESSIVE_LOAD, as are more than `max_resets' resets of request
%% streams by the client in `reset_window' ms (rapid reset: HTTP/2's
%% `rst_stream' budget of `h2_flood_limits', 500 per 10 s).
%%
%% GOAWAY (§5.2): {@link drain/1} sends the largest stream id (2^62 - 4)
%% so the client opens no more requests; {@link goaway/1} the id of the
%% next request stream we would take; requests on that id or above are
%% then rejected (H3_REQUEST_REJECTED), and once the last stream is done
%% the connection closes with H3_NO_ERROR.
%%
%% @private internal to falco
-module(falco_http3_machine).

-export([new/1, event/2, send_response/5, send_data/4, send_trailers/3, reset_stream/3,
         drain/1, goaway/1, default_opts/0, peer_settings/1, active_streams/1, reset_window/1]).

-export_type([state/0, event/0, action/0, opts/0]).

-define(MAX_CLIENT_GOAWAY, 16#3ffffffffffffffc).
-define(IGNORED_PER_STREAM, 16).
%% DATA frames with less content than this count in a flood budget: an
%% empty one in `max_empty_data', a tunnel's in `max_tunnel_data' (larger
%% ones are bounded by flow control, as HTTP/2's falco_http2_budget has it)
-define(SMALL_DATA, 1024).

-type stream_id() :: falco_quic_varint:varint().
-type fin() :: fin | nofin.
-type code() :: falco_http3_error:code().
-type headers() :: [{binary(), binary()}].
-type event() :: {stream_open, stream_id(), bidi | uni}
               | {stream_data, stream_id(), binary(), fin()}
               | {stream_reset, stream_id(), non_neg_integer()}
               | {stop_sending, stream_id(), non_neg_integer()}.
-type action() :: {send, stream_id(), iodata(), fin()}
                | {request, stream_id(), map() | {error, falco_errors:reason(), binary() | undefined}}
                | {data, stream_id(), binary() | [binary()], fin()}
                | {trailers, stream_id(), headers()}
                | {reset, stream_id(), term()}
                | {reset_stream, stream_id(), code()}
                | {stop_sending, stream_id(), code()}
                | {timer, reset_window, pos_integer()}
                | {close, {code(), term()}}.
-type opts() :: #{max_field_section_size => pos_integer(),
                  max_header_count => non_neg_integer(),
                  max_control_frame => pos_integer(),
                  max_ignored_frames => non_neg_integer(),
                  max_resets => non_neg_integer(),
                  max_empty_data => non_neg_integer(),
                  max_tunnel_data => non_neg_integer(),
                  reset_window => pos_integer(),
                  control_stream => stream_id(),
                  enable_connect_protocol => boolean(),
                  grease => non_neg_integer()}.

%% A request stream. `phase': what the client may send next (§4.1).
-record(req, {id :: stream_id(),
              reader :: falco_http3_frame:reader(),
              phase = headers :: headers | body | trailers | done,
              delivered = false :: boolean(),
              expected :: undefined | non_neg_integer(),
              received = 0 :: non_neg_integer(),
              %% a WebSocket tunnel's stream (an extended CONNECT, RFC 9220)
              tunnel = false :: boolean()}).
%% A request stream is in the machine's map while our side is open: it
%% leaves when our response is complete, or when the stream is reset.

-record(h3, {opts :: map(),
             control :: stream_id(),
             %% the client's critical streams, and what is read of them
             peer_control :: undefined | stream_id(),
             control_reader :: undefined | falco_http3_frame:reader(),
             settings_seen = false :: boolean(),
             peer_settings = #{} :: falco_http3_frame:settings(),
             peer_encoder :: undefined | stream_id(),
             encoder_buf = <<>> :: binary(),
             peer_decoder :: undefined | stream_id(),
             decoder_buf = <<>> :: binary(),
             peer_goaway :: undefined | non_neg_integer(),
             max_push_id :: undefined | non_neg_integer(),
             %% unidirectional streams whose type is not read yet, or dropped
             uni = #{} :: #{stream_id() => binary() | ignored},
             streams = #{} :: #{stream_id() => #req{}},
             next_bidi = 0 :: non_neg_integer(),
             next_uni = 2 :: non_neg_integer(),
             ignored = 0 :: non_neg_integer(),
             ignored_budget :: non_neg_integer(),
             %% the client's resets of request streams in this window
             %% (rapid reset, CVE-2023-44487: HTTP/2's rst_stream budget)
             resets = 0 :: non_neg_integer(),
             %% this window's empty DATA frames, and tunnels' DATA frames
             %% under ?SMALL_DATA bytes (HTTP/2's `empty_data' and
             %% `tunnel_data' budgets); whether a window's timer runs
             empty_data = 0 :: non_neg_integer(),
             tunnel_data = 0 :: non_neg_integer(),
             window = false :: boolean(),
             goaway :: undefined | stream_id(),
             closing = false :: boolean(),
             out = [] :: [action()]}).
-opaque state() :: #h3{}.

%% @doc The machine's options and their defaults: those of a listener
%% with falco's default options ({@link falco_opts:http3_machine/1}, the
%% one place of them).
-spec default_opts() -> opts().
default_opts() ->
    falco_opts:http3_machine(falco_opts:defaults()).

%% @doc A new connection: our control stream and its SETTINGS go out at once
%% (§6.2.1, §7.2.4.2: nothing received is waited for). `grease' is the N of
%% the reserved setting `0x1f * N + 0x21' sent with them (a connection
%% process picks it at random).
-spec new(opts()) -> {state(), [action()]}.
new(Opts0) ->
    Opts = maps:merge(default_opts(), Opts0),
    #{max_field_section_size := MaxSection, control_stream := Control, grease := Grease,
      max_ignored_frames := Ignored, enable_connect_protocol := Connect} = Opts,
    Settings = falco_http3_frame:settings(
                 maps:merge(#{qpack_max_table_capacity => 0, qpack_blocked_streams => 0,
                              max_field_section_size => MaxSection},
                            maps:from_list([{enable_connect_protocol, true} || Connect])),
                 [{falco_http3_frame:reserved(Grease), 0}]),
    M = #h3{opts = Opts, control = Control, ignored_budget = Ignored},
    done(act({send, Control, [falco_http3_frame:stream_header(control) | Settings], nofin}, M)).

%% @doc The client's SETTINGS, as far as known (empty before they come).
-spec peer_settings(state()) -> falco_http3_frame:settings().
peer_settings(#h3{peer_settings = S}) -> S.

%% @doc The number of request streams open.
-spec active_streams(state()) -> non_neg_integer().
active_streams(#h3{streams = S}) -> map_size(S).

%% -- events from QUIC ------------------------------------------------------------

%% @doc Handles one event of the connection's QUIC streams.
-spec event(event(), state()) -> {state(), [action()]}.
event(_, M = #h3{closing = true}) ->
    {M, []};
event({stream_open, Id, Kind}, M) ->
    finish(open(Id, Kind, M));
event({stream_data, Id, Bin, Fin}, M) ->
    finish(stream_data(Id, Bin, Fin, M));
event({stream_reset, Id, Code}, M) ->
    finish(stream_reset(Id, Code, M));
event({stop_sending, Id, Code}, M) ->
    finish(stop_sending(Id, Code, M)).

%% RFC 9000 §3.2: a stream opens those of its type with lower ids, and
%% their bytes may come later (QUIC's stream limit bounds how many).
open(Id, bidi, M = #h3{next_bidi = Next}) when Id rem 4 =:= 0, Id >= Next ->
    lists:foldl(fun open_request/2, M#h3{next_bidi = Id + 4}, lists:seq(Next, Id, 4));
open(Id, uni, M = #h3{next_uni = Next, uni = Uni}) when Id rem 4 =:= 2, Id >= Next ->
    M#h3{next_uni = Id + 4, uni = maps:merge(Uni, maps:from_keys(lists:seq(Next, Id, 4), <<>>))};
open(Id, _, M) when Id rem 2 =:= 1 ->
    %% §6.1: a server-initiated bidirectional stream, or one of ours,
    %% cannot come from the client
    conn_error(h3_stream_creation_error, server_stream_id, M);
open(_, _, M) ->
    M.

open_request(Id, M = #h3{goaway = Goaway}) when Goaway =/= undefined, Id >= Goaway ->
    %% §5.2: after our GOAWAY, requests from its id on are not processed
    act({stop_sending, Id, h3_request_rejected}, act({reset_stream, Id, h3_request_rejected}, M));
open_request(Id, M = #h3{streams = Streams, opts = #{max_field_section_size := Max},
                          ignored_budget = Budget}) ->
    S = #req{id = Id, reader = falco_http3_frame:reader(Max, ?SMALL_DATA)},
    M#h3{streams = Streams#{Id => S}, ignored_budget = Budget + ?IGNORED_PER_STREAM}.

stream_data(Id, Bin, Fin, M = #h3{streams = Streams}) when is_map_key(Id, Streams) ->
    request_data(maps:get(Id, Streams), Bin, Fin, M);
stream_data(Id, Bin, Fin, M = #h3{peer_control = Id}) ->
    control_data(Bin, Fin, M);
stream_data(Id, Bin, Fin, M = #h3{peer_encoder = Id, encoder_buf = Buf}) ->
    critical_end(Fin, case falco_qpack:encoder_stream(Bin, Buf) of
                          {ok, Buf1} -> M#h3{encoder_buf = Buf1};
                          {error, {Code, Why}} -> conn_error(Code, Why, M)
                      end);
stream_data(Id, Bin, Fin, M = #h3{peer_decoder = Id, decoder_buf = Buf}) ->
    critical_end(Fin, case falco_qpack:decoder_stream(Bin, Buf) of
                          {ok, Buf1} -> M#h3{decoder_buf = Buf1};
                          {error, {Code, Why}} -> conn_error(Code, Why, M)
                      end);
stream_data(Id, Bin, Fin, M = #h3{uni = Uni}) when is_map_key(Id, Uni) ->
    uni_data(Id, maps:get(Id, Uni), Bin, Fin, M);
stream_data(Id, Bin, Fin, M = #h3{next_bidi = NextBidi, next_uni = NextUni}) ->
    %% a stream not announced: opened by its first bytes, if it is new
    case Id rem 4 of
        0 when Id >= NextBidi -> stream_data_opened(Id, Bin, Fin, open(Id, bidi, M));
        2 when Id >= NextUni -> stream_data_opened(Id, Bin, Fin, open(Id, uni, M));
        R when R =:= 1; R =:= 3 -> open(Id, bidi, M);
        _ -> M
    end.

stream_data_opened(Id, Bin, Fin, M = #h3{streams = S, uni = U})
  when is_map_key(Id, S); is_map_key(Id, U) ->
    stream_data(Id, Bin, Fin, M);
stream_data_opened(_, _, _, M) ->
    M.

stream_reset(Id, Code, M0 = #h3{streams = Streams}) when is_map_key(Id, Streams) ->
    S = #req{delivered = Delivered} = maps:get(Id, Streams),
    M = count_reset(M0),
    M1 = case Delivered of
             true -> act({reset_stream, Id, h3_request_cancelled},
                         act({reset, Id, {peer_reset, Code}}, M));
             false -> act({reset_stream, Id, h3_request_rejected}, M)
         end,
    forget(S, M1);
stream_reset(Id, _, M) ->
    case critical(Id, M) of
        true -> conn_error(h3_closed_critical_stream, critical_stream_reset, M);
        false -> M#h3{uni = maps:remove(Id, M#h3.uni)}
    end.

%% Past `max_resets' resets in a `reset_window' the connection ends with
%% H3_EXCESSIVE_LOAD; the first of a window asks for the timer that ends
%% it ({@link reset_window/1}).
count_reset(M = #h3{resets = N, opts = #{max_resets := Max}}) when N >= Max ->
    conn_error(h3_excessive_load, rapid_reset, M);
count_reset(M = #h3{resets = N}) ->
    window(M#h3{resets = N + 1}).

%% The small DATA frames of a request stream (a `{small_data, Len}' of the
%% stream's reader): past `max_empty_data' empty ones, or
%% `max_tunnel_data' a tunnel's, in a window, H3_EXCESSIVE_LOAD.
count_data(0, _, M = #h3{empty_data = N, opts = #{max_empty_data := Max}}) when N >= Max ->
    conn_error(h3_excessive_load, {flood, empty_data}, M);
count_data(0, S, M = #h3{empty_data = N}) ->
    count_data(1, S, window(M#h3{empty_data = N + 1}));
count_data(_, #req{tunnel = false}, M) ->
    M;
count_data(_, _, M = #h3{tunnel_data = N, opts = #{max_tunnel_data := Max}}) when N >= Max ->
    conn_error(h3_excessive_load, {flood, tunnel_data}, M);
count_data(_, _, M = #h3{tunnel_data = N}) ->
    window(M#h3{tunnel_data = N + 1}).

%% The first count of a window asks for the timer that ends it
%% ({@link reset_window/1}).
window(M = #h3{window = true}) ->
    M;
window(M = #h3{opts = #{reset_window := Ms}}) ->
    act({timer, reset_window, Ms}, M#h3{window = true}).

%% @doc The `{timer, reset_window, Ms}' the machine asked for passed: a
%% new window of resets and small DATA frames begins.
-spec reset_window(state()) -> state().
reset_window(M) ->
    M#h3{resets = 0, empty_data = 0, tunnel_data = 0, window = false}.

stop_sending(Id, _, M = #h3{control = Id}) ->
    conn_error(h3_closed_critical_stream, control_stream_stopped, M);
stop_sending(Id, Code, M = #h3{streams = Streams}) when is_map_key(Id, Streams) ->
    %% the client does not want the response: the request is cancelled
    S = #req{delivered = Delivered} = maps:get(Id, Streams),
    M1 = case Delivered of
             true -> act({reset, Id, {peer_stop, Code}}, M);
             false -> M
         end,
    M2 = act({stop_sending, Id, h3_request_cancelled},
             act({reset_stream, Id, h3_request_cancelled}, M1)),
    forget(S, M2);
stop_sending(_, _, M) ->
    M.

critical(Id, #h3{peer_control = C, peer_encoder = E, peer_decoder = D}) ->
    Id =:= C orelse Id =:= E orelse Id =:= D.

%% §6.2.1, RFC 9204 §4.2: the critical streams never end.
critical_end(fin, M) -> conn_error(h3_closed_critical_stream, critical_stream_closed, M);
critical_end(nofin, M) -> M.

%% -- unidirectional streams (§6.2) -------------------------------------------------

uni_data(Id, ignored, _, fin, M = #h3{uni = Uni}) ->
    M#h3{uni = maps:remove(Id, Uni)};
uni_data(_, ignored, _, nofin, M) ->
    M;
uni_data(Id, Buf, Bin, Fin, M0 = #h3{uni = Uni}) ->
    Bytes = <<Buf/binary, Bin/binary>>,
    M = M0#h3{uni = maps:remove(Id, Uni)},
    case falco_http3_frame:stream_type(Bytes) of
        more when Fin =:= fin -> M;
        more -> M#h3{uni = Uni#{Id => Bytes}};
        {Kind, Rest} -> uni_stream(Kind, Id, Rest, Fin, M)
    end.

uni_stream(control, Id, Rest, Fin, M = #h3{peer_control = undefined,
                                           opts = #{max_control_frame := Max}}) ->
    control_data(Rest, Fin, M#h3{peer_control = Id,
                                 control_reader = falco_http3_frame:reader(Max)});
uni_stream(encoder, Id, Rest, Fin, M = #h3{peer_encoder = undefined}) ->
    stream_data(Id, Rest, Fin, M#h3{peer_encoder = Id});
uni_stream(decoder, Id, Rest, Fin, M = #h3{peer_decoder = undefined}) ->
    stream_data(Id, Rest, Fin, M#h3{peer_decoder = Id});
uni_stream(push, _, _, _, M) ->
    %% §6.2.2: only servers push
    conn_error(h3_stream_creation_error, push_stream_from_client, M);
uni_stream({unknown, _}, Id, _, Fin, M = #h3{uni = Uni}) ->
    %% §6.2: not a connection error; reading is aborted
    M1 = act({stop_sending, Id, h3_stream_creation_error}, M),
    case Fin of
        fin -> M1;
        nofin -> M1#h3{uni = Uni#{Id => ignored}}
    end;
uni_stream(Kind, _, _, _, M) ->
    %% §6.2.1, RFC 9204 §4.2: one of each
    conn_error(h3_stream_creation_error, second_stream(Kind), M).

second_stream(control) -> second_control_stream;
second_stream(encoder) -> second_encoder_stream;
second_stream(decoder) -> second_decoder_stream.

%% -- the control stream (§6.2.1) ------------------------------------------------

control_data(Bin, Fin, M = #h3{control_reader = R}) ->
    case falco_http3_frame:read(Bin, R) of
        {ok, Items, R1} -> critical_end(Fin, control_items(Items, M#h3{control_reader = R1}));
        {error, {Code, Why}} -> conn_error(Code, Why, M)
    end.

control_items(_, M = #h3{closing = true}) ->
    M;
control_items([Item | Items], M) ->
    control_items(Items, control_item(Item, M));
control_items([], M) ->
    M.

control_item({settings, Settings}, M = #h3{settings_seen = false}) ->
    M#h3{settings_seen = true, peer_settings = Settings};
control_item({too_large, settings, _}, M = #h3{settings_seen = false}) ->
    conn_error(h3_excessive_load, control_frame_too_large, M);
control_item(_, M = #h3{settings_seen = false}) ->
    conn_error(h3_missing_settings, settings_expected, M);
control_item({goaway, Id}, M = #h3{peer_goaway = Prev}) when Prev =/= undefined, Id > Prev ->
    conn_error(h3_id_error, goaway_id_increased, M);
control_item({goaway, Id}, M) ->
    M#h3{peer_goaway = Id};
control_item({max_push_id, Id}, M = #h3{max_push_id = Prev}) when Prev =/= undefined, Id < Prev ->
    conn_error(h3_id_error, max_push_id_decreased, M);
control_item({max_push_id, Id}, M) ->
    M#h3{max_push_id = Id};
control_item({cancel_push, _}, M) ->
    %% §7.2.3: a push id we never promised
    conn_error(h3_id_error, cancel_push_not_promised, M);
control_item({unknown, _}, M) ->
    ignored_frame(M);
control_item({too_large, Name, _}, M) when Name =:= goaway; Name =:= max_push_id;
                                           Name =:= cancel_push ->
    conn_error(h3_excessive_load, control_frame_too_large, M);
control_item(Frame, M) ->
    %% §7.2.1, §7.2.2, §7.2.4, §7.2.5: DATA, HEADERS, a second SETTINGS,
    %% PUSH_PROMISE
    conn_error(h3_frame_unexpected, {control_stream, element(1, Frame)}, M).

ignored_frame(M = #h3{ignored = N, ignored_budget = Budget}) when N >= Budget ->
    conn_error(h3_excessive_load, too_many_ignored_frames, M);
ignored_frame(M = #h3{ignored = N}) ->
    M#h3{ignored = N + 1}.

%% -- request streams (§4.1) -------------------------------------------------------

request_data(S = #req{reader = R}, Bin, Fin, M) ->
    case falco_http3_frame:read(Bin, R) of
        {ok, Items, R1} -> req_items(Items, Fin, [], S#req{reader = R1}, M);
        {error, {Code, Why}} -> conn_error(Code, Why, M)
    end.

%% `Pieces': the body read in this event, newest first, handed over as one
%% action before trailers or at the end.
req_items([Item | Items], Fin, Pieces, S, M) ->
    %% a request's HEADERS that ends the stream (nothing but unknown
    %% frames after it, then the end) has no content
    EndStream = message_frame(Item) andalso Fin =:= fin
        andalso not lists:any(fun message_frame/1, Items),
    case req_item(Item, EndStream, Pieces, S, M) of
        {ok, Pieces1, S1, M1} -> req_items(Items, Fin, Pieces1, S1, M1);
        {stop, M1} -> M1
    end;
req_items([], nofin, Pieces, S, M) ->
    put_stream(S, flush(S, Pieces, nofin, M));
req_items([], fin, Pieces, S = #req{reader = R}, M) ->
    case falco_http3_frame:reader_done(R) of
        ok -> req_end(Pieces, S, M);
        {error, {Code, Why}} -> conn_error(Code, Why, M)
    end.

message_frame({data, _}) -> true;
message_frame({headers, _}) -> true;
message_frame({too_large, headers, _}) -> true;
message_frame(_) -> false.

req_item({small_data, Len}, _, Pieces, S, M) ->
    case count_data(Len, S, M) of
        M1 = #h3{closing = false} -> {ok, Pieces, S, M1};
        M1 -> {stop, M1}
    end;
req_item({unknown, _}, _, Pieces, S, M) ->
    case ignored_frame(M) of
        M1 = #h3{closing = false} -> {ok, Pieces, S, M1};
        M1 -> {stop, M1}
    end;
req_item({data, _}, _, _, #req{phase = headers}, M) ->
    {stop, conn_error(h3_frame_unexpected, data_before_headers, M)};
req_item({data, Piece}, _, Pieces, S = #req{phase = body, received = R0, expected = E}, M) ->
    case R0 + byte_size(Piece) of
        R when E =/= undefined, R > E ->
            {stop, stream_error(S, h3_message_error, M)};
        R when Piece =:= <<>> ->
            {ok, Pieces, S#req{received = R}, M};
        R ->
            {ok, [Piece | Pieces], S#req{received = R}, M}
    end;
req_item({headers, Block}, EndStream, _, S = #req{phase = headers}, M) ->
    request(decode(Block, M), EndStream, S, M);
req_item({too_large, headers, _}, EndStream, _, S = #req{phase = headers}, M) ->
    request(field_section_too_large, EndStream, S, M);
req_item({headers, Block}, _, Pieces, S = #req{phase = body}, M) ->
    trailers(decode(Block, M), Pieces, S, M);
req_item({too_large, headers, _}, _, _, S = #req{phase = body}, M) ->
    {stop, stream_error(S, h3_message_error, M)};
req_item(Frame, _, _, _, M) ->
    %% §4.1: DATA or HEADERS after the trailers; §7.2: the control
    %% stream's frames, and PUSH_PROMISE from a client
    {stop, conn_error(h3_frame_unexpected, {request_stream, element(1, Frame)}, M)}.

decode(Block, #h3{opts = #{max_field_section_size := Max}}) ->
    case falco_qpack:decode(Block, #{max_field_section_size => Max}) of
        {ok, Fields} -> Fields;
        {error, field_section_too_large} -> field_section_too_large;
        {error, {Code, Why}} -> {error, Code, Why}
    end.

%% The request's HEADERS (§4.1, §4.3), decoded.
request({error, Code, Why}, _, _, M) ->
    {stop, conn_error(Code, Why, M)};
request(field_section_too_large, EndStream, S, M) ->
    deliver({error, {header_too_large, block}, undefined}, EndStream, undefined, S, M);
request(Fields, EndStream, S, M = #h3{opts = #{max_header_count := MaxCount,
                                                enable_connect_protocol := Connect}}) ->
    %% RFC 9220 §3: an extended CONNECT (`:protocol') only once we sent
    %% SETTINGS_ENABLE_CONNECT_PROTOCOL, as over HTTP/2 (RFC 8441 §4)
    case falco_http2_request:request(Fields, #{max_header_count => MaxCount,
                                               end_stream => EndStream,
                                               connect_protocol => Connect,
                                               version => {3, 0}}) of
        {ok, Req = #{body := {length, N}}} -> deliver(Req, EndStream, N, S, M);
        {ok, Req} -> deliver(Req, EndStream, undefined, S, M);
        {error, {reply, Reason}} ->
            deliver({error, Reason, falco_http2_request:method(Fields)}, EndStream, undefined, S, M);
        {error, {malformed, _}} ->
            %% §4.1.2
            {stop, stream_error(S, h3_message_error, M)}
    end.

deliver(Req, EndStream, Expected, S = #req{id = Id}, M) ->
    Phase = case EndStream of
                true -> done;
                false -> body
            end,
    {ok, [], S#req{phase = Phase, delivered = true, expected = Expected,
                   tunnel = is_map(Req) andalso is_map_key(protocol, Req)},
     act({request, Id, Req}, M)}.

%% The trailer section (§4.1): it ends the body, whose length must then be
%% the one declared (§4.1.2).
trailers({error, Code, Why}, _, _, M) ->
    {stop, conn_error(Code, Why, M)};
trailers(field_section_too_large, _, S, M) ->
    {stop, stream_error(S, h3_message_error, M)};
trailers(Fields, Pieces, S = #req{id = Id, expected = E, received = R}, M)
  when E =:= undefined; E =:= R ->
    case falco_http2_request:trailers(Fields) of
        ok -> {ok, [], S#req{phase = trailers},
               act({trailers, Id, Fields}, flush(S, Pieces, nofin, M))};
        {error, _} -> {stop, stream_error(S, h3_message_error, M)}
    end;
trailers(_, _, S, M) ->
    {stop, stream_error(S, h3_message_error, M)}.

%% The client's side of the stream ended cleanly.
req_end(_, S = #req{phase = headers, id = Id}, M) ->
    %% §4.1: no request came
    forget(S, act({reset_stream, Id, h3_request_incomplete}, M));
req_end(_, S = #req{phase = body, expected = E, received = R}, M) when E =/= undefined, E =/= R ->
    stream_error(S, h3_message_error, M);
req_end(Pieces, S = #req{phase = body}, M) ->
    closed_remote(S, flush_end(S, Pieces, M));
req_end(_, S, M) ->
    closed_remote(S, M).

flush(_, [], nofin, M) -> M;
flush(#req{id = Id}, [Piece], Fin, M) -> act({data, Id, Piece, Fin}, M);
flush(#req{id = Id}, Pieces, Fin, M) -> act({data, Id, lists:reverse(Pieces), Fin}, M).

flush_end(S, [], M) -> act({data, S#req.id, <<>>, fin}, M);
flush_end(S, Pieces, M) -> flush(S, Pieces, fin, M).

%% The client has sent all: the stream is done once our response is.
closed_remote(S, M) -> put_stream(S#req{phase = done}, M).

%% §4.1.2, §8: reset and stop the stream; its process, if any, is told.
stream_error(S = #req{id = Id, delivered = Delivered}, Code, M) ->
    M1 = act({stop_sending, Id, Code}, act({reset_stream, Id, Code}, M)),
    forget(S, case Delivered of
                  true -> act({reset, Id, Code}, M1);
                  false -> M1
              end).

%% -- sending ---------------------------------------------------------------------------

%% @doc Sends a response head on stream `Id' (`fin': no content follows);
%% a 1xx is an interim response (§4.1), `fin' left out.
-spec send_response(stream_id(), 100..999, [{binary(), iodata()}], fin(), state()) ->
          {state(), [action()]}.
send_response(Id, Status, Headers, Fin, M) ->
    Fields = [{<<":status">>, integer_to_binary(Status)}
              | falco_http2_request:response_fields(Headers)],
    send_section(Id, Fields, Fin, M).

%% @doc Sends response content on stream `Id' (`fin' ends it).
-spec send_data(stream_id(), iodata(), fin(), state()) -> {state(), [action()]}.
send_data(Id, Data, Fin, M) ->
    case iolist_size(Data) of
        0 -> send(Id, <<>>, Fin, M);
        _ -> send(Id, falco_http3_frame:data(Data), Fin, M)
    end.

%% @doc Ends stream `Id' with a trailer section.
-spec send_trailers(stream_id(), [{binary(), iodata()}], state()) -> {state(), [action()]}.
send_trailers(Id, Fields, M) ->
    send_section(Id, falco_http2_request:response_fields(Fields), fin, M).

%% §4.2.2: a field section larger than the client's
%% SETTINGS_MAX_FIELD_SECTION_SIZE (each field's name and value plus 32
%% bytes) is not sent; the stream is reset (H3_INTERNAL_ERROR) instead,
%% as the client would refuse it.
send_section(Id, Fields, Fin, M = #h3{peer_settings = #{max_field_section_size := Max}}) ->
    Size = lists:sum([byte_size(N) + iolist_size(V) + 32 || {N, V} <- Fields]),
    case Size > Max of
        true -> reset_stream(Id, h3_internal_error, M);
        false -> send(Id, falco_http3_frame:headers(falco_qpack:encode(Fields)), Fin, M)
    end;
send_section(Id, Fields, Fin, M) ->
    send(Id, falco_http3_frame:headers(falco_qpack:encode(Fields)), Fin, M).

send(_, <<>>, nofin, M) ->
    {M, []};
send(Id, Bytes, Fin, M = #h3{streams = Streams, closing = false}) ->
    case Streams of
        #{Id := S} ->
            M1 = act({send, Id, Bytes, Fin}, M),
            finish(case Fin of
                       fin -> local_fin(S, M1);
                       nofin -> M1
                   end);
        #{} ->
            {M, []}
    end;
send(_, _, _, M) ->
    {M, []}.

%% Our response is complete: if the client is still sending, its request
%% is not needed any more (§4.1: stopped with H3_NO_ERROR).
local_fin(S = #req{phase = done}, M) ->
    forget(S, M);
local_fin(S = #req{id = Id}, M) ->
    forget(S, act({stop_sending, Id, h3_no_error}, M)).

%% @doc Cancels stream `Id' from our side (its process failed, or gave up)
%% with `Code', H3_REQUEST_CANCELLED or H3_INTERNAL_ERROR as a rule.
-spec reset_stream(stream_id(), code(), state()) -> {state(), [action()]}.
reset_stream(Id, Code, M = #h3{streams = Streams, closing = false}) ->
    case Streams of
        #{Id := S = #req{phase = Phase}} ->
            M1 = act({reset_stream, Id, Code}, M),
            M2 = case Phase of
                     done -> M1;
                     _ -> act({stop_sending, Id, Code}, M1)
                 end,
            finish(forget(S, M2));
        #{} ->
            {M, []}
    end;
reset_stream(_, _, M) ->
    {M, []}.

%% @doc The first step of a graceful shutdown (§5.2): a GOAWAY with the
%% largest request stream id, so the client opens no more; requests on the
%% way are still taken. {@link goaway/1} follows, after a round trip.
-spec drain(state()) -> {state(), [action()]}.
drain(M = #h3{closing = false, goaway = undefined, control = Control}) ->
    done(act({send, Control, falco_http3_frame:goaway(?MAX_CLIENT_GOAWAY), nofin}, M));
drain(M) ->
    {M, []}.

%% @doc Graceful shutdown (§5.2): a GOAWAY with the id of the next request
%% stream we would take; the requests open finish, later ones are
%% rejected, and the connection closes with H3_NO_ERROR when none is left.
-spec goaway(state()) -> {state(), [action()]}.
goaway(M = #h3{closing = false, next_bidi = Next, goaway = Prev, control = Control}) ->
    %% an id never above one sent before (§5.2)
    Id = case Prev of
             undefined -> Next;
             _ -> min(Prev, Next)
         end,
    finish(act({send, Control, falco_http3_frame:goaway(Id), nofin}, M#h3{goaway = Id}));
goaway(M) ->
    {M, []}.

%% -- state helpers ---------------------------------------------------------------------

put_stream(S = #req{id = Id}, M = #h3{streams = Streams}) ->
    M#h3{streams = Streams#{Id => S}}.

forget(#req{id = Id}, M = #h3{streams = Streams}) ->
    M#h3{streams = maps:remove(Id, Streams)}.

%% §8: the connection ends with Code; nothing more is read.
conn_error(_, _, M = #h3{closing = true}) ->
    M;
conn_error(Code, Why, M) ->
    act({close, {Code, Why}}, M#h3{closing = true}).

act(Action, M = #h3{out = Out}) ->
    M#h3{out = [Action | Out]}.

%% After our final GOAWAY, the connection ends with its last stream.
finish(M = #h3{goaway = Id, streams = Streams, closing = false})
  when Id =/= undefined, map_size(Streams) =:= 0 ->
    done(act({close, {h3_no_error, goaway}}, M#h3{closing = true}));
finish(M) ->
    done(M).

done(M = #h3{out = []}) ->
    {M, []};
done(M = #h3{out = Out}) ->
    {M#h3{out = []}, lists:reverse(Out)}.
