%% @doc Pure HTTP/2 connection state machine, server side (RFC 9113 §5
%% streams, §6.5 SETTINGS, §6.7 PING, §6.8 GOAWAY, §6.9 flow control,
%% §6.10 CONTINUATION, §8 request checks; RFC 7541 through falco_hpack).
%%
%% It owns everything that must be serialised on one connection: stream
%% states, both HPACK contexts, both directions of flow control and the
%% settings. It never touches a socket or a process: each event (a parsed
%% frame, a codec error, a local send request, a stream's body consumption,
%% a timer) returns `{NewState, [Action]}' and the connection process
%% ({@link falco_http2_conn}) carries the actions out, in order:
%% <ul>
%% <li>`{send, iodata()}': bytes for the socket;</li>
%% <li>`{request, StreamId, Req | {error, Reason, Method}}': a new request (the map
%%     from {@link falco_http2_request:request/2}), or one falco answers with
%%     an error status;</li>
%% <li>`{data, StreamId, binary(), fin | nofin}', `{trailers, StreamId, Fields}':
%%     request body and trailers, for the stream's process, one action per
%%     {@link read/3} (the body is held here until the process asks);</li>
%% <li>`{reset, StreamId, Reason}': the stream is gone (reset by either side;
%%     for `send_timeout' its pending sends have failed and its process is
%%     left to end);</li>
%% <li>`{reply, Tag, ok | {error, Reason}}': a queued send finished or failed;</li>
%% <li>`{timer, Name, Ms}', `{cancel_timer, Name}': (re)arm or stop a timer
%%     whose expiry comes back as {@link timeout/2};</li>
%% <li>`{close, Reason}': close the connection once the sends are written.</li>
%% </ul>
%%
%% Stream states (§5.1): a stream is in the map while it is open or
%% half-closed; `remote' is the client's side, `local' ours (`idle' until
%% the response head is sent). It leaves the map when both sides are done
%% (if the client is still sending when our response is complete, it is
%% reset with NO_ERROR, §8.1). The last closed streams are remembered so
%% late frames get the answer §5.1 asks for (ignored after our RST_STREAM,
%% STREAM_CLOSED otherwise).
%%
%% Request bodies (§6.9, {@link falco_http2_recv}, the receiving half):
%% DATA is appended to its stream's buffer and handed over when the
%% stream's process asks ({@link read/3}), so a client's frame sizes do
%% not decide how many messages and binaries the server keeps. A read
%% gives the delivered bytes back to the stream window and grows that
%% window towards what the handler asked for, and for a request body to
%% at least 1 MB ahead of the handler, within
%% `max_receive_buffer': the most request body the connection's streams may
%% hold or be promised, all together (windows beyond the initial ones are
%% granted only within it). The connection window grows with them.
%%
%% Flood defences ({@link falco_http2_budget}): budgets per 10 s for
%% frames that do not carry the connection forward, PING, SETTINGS,
%% PRIORITY, WINDOW_UPDATE, resets both ways, empty and small tunnel DATA;
%% going over one is a GOAWAY ENHANCE_YOUR_CALM. A field block is
%% bounded in bytes and in CONTINUATION frames (CVE-2024-27316), and its
%% decoded size by SETTINGS_MAX_HEADER_LIST_SIZE (HPACK bombs: 431).
%% Response data is sent in DATA frames of at least 16 KB when a window is
%% short (smaller only when that ends what is queued, or when the client's
%% own initial window is small), and a stream whose data waits on the
%% client's window must get `send_min_rate' bytes per second through,
%% measured over each `send_timeout': window dribbling (a byte of window
%% now and then) resets the stream instead of holding it and its handler.
%%
%% @private internal to falco
-module(falco_http2_machine).

-export([new/1, frame/2, frame_error/2, upgrade/2,
         send_response/5, send_headers/5, send_inform/3, send_data/5, send_trailers/4,
         read/3, deliver_ready/1, prefetch/3, stream_exited/2, reset_stream/3, timeout/2,
         goaway/1, drain/1, max_frame_size/1, active_streams/1, send_queued/1, default_opts/0]).

-export_type([state/0, action/0, opts/0]).

-include("falco_http2_machine.hrl").

%% How long a stream whose response is complete waits for the rest of a
%% request body nobody will read before it is reset with NO_ERROR.
-define(LINGER, 1000).

-type opts() :: #{max_concurrent_streams => non_neg_integer(),
                  initial_window_size => 0..16#7fffffff,
                  connection_window_size => 65535..16#7fffffff,
                  max_receive_buffer => pos_integer(),
                  max_frame_size => 16384..16777215,
                  max_header_list_size => pos_integer(),
                  max_header_block => pos_integer(),
                  max_continuations => non_neg_integer(),
                  max_header_count => non_neg_integer(),
                  settings_timeout => timeout(),
                  send_timeout => timeout(),
                  send_min_rate => non_neg_integer(),
                  idle_timeout => timeout(),
                  enable_connect_protocol => boolean(),
                  flood_window => pos_integer(),
                  flood_limits => #{atom() => non_neg_integer()}}.

-opaque state() :: #m{}.

%% @doc The machine's options and their defaults: those of a listener
%% ({@link falco_opts:defaults/0} and falco_opts:http2_machine/1, the one source).
-spec default_opts() -> opts().
default_opts() ->
    falco_opts:http2_machine(falco_opts:defaults()).

%% @doc A new server connection: our SETTINGS (and a connection window
%% larger than the default, if configured) go out at once (§3.4).
-spec new(opts()) -> {state(), [action()]}.
new(Opts0) ->
    Defaults = default_opts(),
    Opts1 = maps:merge(Defaults, Opts0),
    Opts = Opts1#{flood_limits => maps:merge(maps:get(flood_limits, Defaults),
                                             maps:get(flood_limits, Opts1))},
    #{max_concurrent_streams := MaxStreams, initial_window_size := Window,
      max_frame_size := MaxFrame, max_header_list_size := MaxList,
      connection_window_size := ConnWindow} = Opts,
    Initial = falco_http2_frame:default_settings(),
    Settings0 = maps:filter(fun(K, V) -> V =/= maps:get(K, Initial) end,
                            #{max_concurrent_streams => MaxStreams, initial_window_size => Window,
                              max_frame_size => MaxFrame, max_header_list_size => MaxList}),
    %% RFC 8441 §3: extended CONNECT (WebSocket over HTTP/2) is accepted
    %% once this is sent, and it is in our first frame.
    Settings = case maps:get(enable_connect_protocol, Opts) of
                   true -> Settings0#{enable_connect_protocol => true};
                   false -> Settings0
               end,
    M0 = #m{rare = #rare{opts = Opts, pending_local = [Settings]},
            conn_recv = ConnWindow, conn_target = ConnWindow,
            decoder = falco_hpack:new(), encoder = falco_hpack:new()},
    M1 = send(falco_http2_frame:settings(Settings), M0),
    M2 = case ConnWindow > ?DEFAULT_WINDOW of
             true -> send(falco_http2_frame:window_update(0, ConnWindow - ?DEFAULT_WINDOW), M1);
             false -> M1
         end,
    M3 = act({timer, settings, maps:get(settings_timeout, Opts)}, M2),
    M4 = act({timer, flood, maps:get(flood_window, Opts)}, M3),
    finish(M4).

%% @doc The largest frame we accept (for {@link falco_http2_frame:parse/2}).
-spec max_frame_size(state()) -> 16384..16777215.
max_frame_size(#m{rare = #rare{opts = #{max_frame_size := Max}}}) -> Max.

%% @doc The number of streams open or half-closed.
-spec active_streams(state()) -> non_neg_integer().
active_streams(#m{streams = S}) -> map_size(S).

%% @doc The response bytes queued for the client's windows, over every
%% stream (each stream process queues at most `h2_send_buffer' of them).
-spec send_queued(state()) -> non_neg_integer().
send_queued(M) ->
    falco_http2_flow:queued(M).

%% @doc The HTTP/1.1 `Upgrade: h2c' path (RFC 7540 §3.2): the client's
%% HTTP2-Settings are applied as its first SETTINGS (the 101 acknowledges
%% them) and stream 1, the upgrade request, starts half-closed (remote).
-spec upgrade(falco_http2_frame:settings(), state()) -> {state(), [action()]}.
upgrade(Settings, M0) ->
    M1 = apply_remote_settings(Settings, M0),
    S = new_stream(1, fin, undefined, M1),
    finish(M1#m{last_id = 1, streams = #{1 => S}}).

%% -- incoming frames ----------------------------------------------------------

%% @doc Handles one frame from the client.
-spec frame(falco_http2_frame:frame(), state()) -> {state(), [action()]}.
frame(_, M = #m{rare = #rare{closing = true}}) ->
    {M, []};
frame(Frame, M) ->
    case falco_http2_budget:budget(Frame, M) of
        none ->
            finish(in(Frame, M));
        Key ->
            case count(Key, M) of
                {ok, M1} -> finish(in(Frame, M1));
                {calm, Calm} -> done(Calm)
            end
    end.

%% @doc Handles an error the frame codec reported.
-spec frame_error({connection_error, falco_http2_frame:error_code(), atom()}
                  | {stream_error, stream_id(), falco_http2_frame:error_code(), atom()},
                  state()) -> {state(), [action()]}.
frame_error(_, M = #m{rare = #rare{closing = true}}) ->
    {M, []};
frame_error({connection_error, Code, Why}, M) ->
    done(conn_error(Code, Why, M));
frame_error({stream_error, _, Code, Why}, M = #m{rare = #rare{preface = false}}) ->
    done(conn_error(Code, Why, M));
frame_error({stream_error, _, Code, Why}, M = #m{rare = #rare{block = B}}) when B =/= undefined ->
    _ = Code,
    done(conn_error(protocol_error, {frame_inside_field_block, Why}, M));
frame_error({stream_error, Id, Code, Why}, M = #m{last_id = Last}) when Id > Last ->
    %% Resetting an idle stream is not allowed (§5.1): end the connection.
    done(conn_error(Code, Why, M));
frame_error({stream_error, Id, Code, _}, M) ->
    finish(stream_error(Id, Code, M)).

%% §3.4: the preface is followed by a SETTINGS frame.
in({settings, Settings}, M = #m{rare = R = #rare{preface = false}}) ->
    in({settings, Settings}, M#m{rare = R#rare{preface = true}});
in(_, M = #m{rare = #rare{preface = false}}) ->
    conn_error(protocol_error, settings_expected, M);
%% §6.10: nothing may come between HEADERS and its last CONTINUATION.
in({continuation, Id, EndHeaders, Frag}, M = #m{rare = #rare{block = {Id, _, _, _, _, _}}}) ->
    continuation(EndHeaders, Frag, M);
in(_, M = #m{rare = #rare{block = {_, _, _, _, _, _}}}) ->
    conn_error(protocol_error, field_block_interrupted, M);
in({continuation, _, _, _}, M) ->
    conn_error(protocol_error, unexpected_continuation, M);
in({headers, Id, Fin, EndHeaders, Prio, Frag}, M) ->
    headers(Id, Fin, EndHeaders, Prio, Frag, M);
in({data, Id, Fin, Data, FlowSize}, M) ->
    data(Id, Fin, Data, FlowSize, M);
in({settings, Settings}, M) ->
    case count(settings, M) of
        %% The ACK goes before any frame the new values let out (§6.5.3).
        {ok, M1} -> apply_remote_settings(Settings, send(falco_http2_frame:settings_ack(), M1));
        {calm, Calm} -> Calm
    end;
in(settings_ack, M) ->
    settings_ack(M);
in({ping, Opaque}, M) ->
    case count(ping, M) of
        {ok, M1} -> send(falco_http2_frame:ping_ack(Opaque), M1);
        {calm, Calm} -> Calm
    end;
in({ping_ack, ?DRAIN_PING}, M = #m{rare = #rare{draining = first}}) ->
    falco_http2_goaway:final(M);
in({ping_ack, _}, M) ->
    M;
in({window_update, Id, Inc}, M) ->
    case falco_http2_budget:credit(Id, Inc, M) of
        true ->
            window_update(Id, Inc, M);
        false ->
            case count(window_update, M) of
                {ok, M1} -> window_update(Id, Inc, M1);
                {calm, Calm} -> Calm
            end
    end;
in({rst_stream, Id, Code}, M) ->
    rst_stream(Id, Code, M);
in({priority, Id, _, Dep, _}, M) ->
    case count(priority, M) of
        {ok, M1} when Dep =:= Id ->
            %% §5.3.1: a stream cannot depend on itself.
            case Id > M1#m.last_id of
                true -> conn_error(protocol_error, self_dependency, M1);
                false -> stream_error(Id, protocol_error, M1)
            end;
        {ok, M1} ->
            M1;
        {calm, Calm} ->
            Calm
    end;
in({goaway, _, _, _}, M = #m{rare = R}) ->
    M#m{rare = R#rare{peer_goaway = true}};
in({push_promise, _, _, _, _}, M) ->
    %% §8.4: clients cannot push.
    conn_error(protocol_error, push_promise_from_client, M);
in({unknown, _, _}, M) ->
    %% §5.5: unknown frame types are ignored.
    M.

%% -- field blocks (§4.3, §6.2, §6.10) ------------------------------------------

headers(Id, _, _, _, _, M) when Id rem 2 =:= 0 ->
    conn_error(protocol_error, even_stream_id, M);
headers(Id, Fin, fin, Prio, Frag, M) ->
    field_block(Id, Fin, Prio, Frag, M);
headers(Id, Fin, nofin, Prio, Frag, M = #m{rare = R = #rare{opts = #{max_header_block := Max}}}) ->
    case byte_size(Frag) > Max of
        true -> conn_error(enhance_your_calm, field_block_too_large, M);
        false -> M#m{rare = R#rare{block = {Id, Fin, Prio, [Frag], byte_size(Frag), 0}}}
    end.

continuation(EndHeaders, Frag,
             M = #m{rare = R = #rare{block = {Id, Fin, Prio, Acc, Size0, Count0},
                                     opts = #{max_header_block := Max,
                                              max_continuations := MaxCount}}}) ->
    Size = Size0 + byte_size(Frag),
    Count = Count0 + 1,
    if
        Size > Max ->
            conn_error(enhance_your_calm, field_block_too_large, M);
        Count > MaxCount ->
            conn_error(enhance_your_calm, too_many_continuations, M);
        EndHeaders =:= fin ->
            field_block(Id, Fin, Prio, iolist_to_binary(lists:reverse(Acc, [Frag])),
                        M#m{rare = R#rare{block = undefined}});
        true ->
            M#m{rare = R#rare{block = {Id, Fin, Prio, [Frag | Acc], Size, Count}}}
    end.

%% The block is decoded first, whatever happens to the stream: the HPACK
%% context must stay in step with the client's (§4.3).
field_block(Id, Fin, Prio, Block,
            M = #m{decoder = Dec0, rare = #rare{opts = #{max_header_list_size := Max}}}) ->
    case falco_hpack:decode(Block, Dec0, #{max_header_list_size => Max}) of
        {ok, Fields, Dec} ->
            stream_headers(Id, Fin, Prio, Fields, Dec, M);
        {error, {header_list_too_large, Dec}} ->
            stream_headers(Id, Fin, Prio, too_large, Dec, M);
        {error, {compression_error, Why}} ->
            conn_error(compression_error, Why, M)
    end.

%% `Dec': the decoder after the block, written with the new stream's id.
stream_headers(Id, Fin, Prio, Fields, Dec, M = #m{last_id = Last}) when Id > Last ->
    open_stream(Id, Fin, Prio, Fields, M#m{last_id = Id, decoder = Dec});
stream_headers(Id, Fin, Prio, Fields, Dec, M0 = #m{streams = Streams}) ->
    M = M0#m{decoder = Dec},
    case Streams of
        #{Id := S} -> request_trailers(S, Fin, Prio, Fields, M);
        #{} ->
            case closed_how(Id, M) of
                reset_sent -> M;
                %% §5.1.1: a stream number lower than one already used.
                undefined -> conn_error(protocol_error, stream_id_not_increasing, M);
                _ -> conn_error(stream_closed, headers_on_closed_stream, M)
            end
    end.

open_stream(Id, _, _, _, M = #m{rare = #rare{goaway_sent = true}}) ->
    %% §6.8: streams after our GOAWAY are ignored.
    _ = Id,
    M;
open_stream(Id, _, {_, Id, _}, _, M) ->
    stream_error(Id, protocol_error, M);
open_stream(Id, _, _, _,
            M = #m{streams = Streams, rare = #rare{opts = #{max_concurrent_streams := Max}}})
  when map_size(Streams) >= Max ->
    %% §5.1.2: over the limit we advertised.
    stream_error(Id, refused_stream, M);
open_stream(Id, Fin, _, too_large, M) ->
    start_stream(Id, Fin, undefined, {error, {header_too_large, block}, undefined}, M);
open_stream(Id, Fin, _, Fields,
            M = #m{rare = #rare{opts = #{max_header_count := MaxCount,
                                         enable_connect_protocol := Connect}}}) ->
    case falco_http2_request:request(Fields, #{max_header_count => MaxCount,
                                               end_stream => Fin =:= fin,
                                               connect_protocol => Connect}) of
        {ok, Req = #{body := {length, N}}} -> start_stream(Id, Fin, N, Req, M);
        {ok, Req} -> start_stream(Id, Fin, undefined, Req, M);
        {error, {reply, Reason}} ->
            start_stream(Id, Fin, undefined, {error, Reason, falco_http2_request:method(Fields)},
                         M);
        {error, {malformed, _}} -> stream_error(Id, protocol_error, M)
    end.

start_stream(Id, Fin, Expected, Req, M = #m{streams = Streams, out = Out}) ->
    S = (new_stream(Id, Fin, Expected, M))#stream{tunnel = is_map(Req) andalso is_map_key(protocol, Req)},
    %% act/2 folded in: one copy of the record
    M#m{streams = Streams#{Id => S}, out = [{request, Id, Req} | Out]}.

new_stream(Id, Fin, Expected, #m{rare = #rare{local_window = LW, remote_window = RW}}) ->
    Remote = case Fin of fin -> fin; nofin -> open end,
    #stream{id = Id, remote = Remote, send_window = RW, recv_window = LW, expected = Expected}.

%% §8.1: a second field block is trailers: it ends the stream and has no
%% pseudo-fields; the body seen so far must match Content-Length.
request_trailers(#stream{id = Id}, _, {_, Id, _}, _, M) ->
    stream_error(Id, protocol_error, M);
request_trailers(#stream{id = Id, remote = fin}, _, _, _, M) ->
    stream_error(Id, stream_closed, M);
request_trailers(#stream{id = Id}, nofin, _, _, M) ->
    stream_error(Id, protocol_error, M);
request_trailers(#stream{id = Id}, fin, _, too_large, M) ->
    stream_error(Id, protocol_error, M);
request_trailers(S = #stream{id = Id, expected = Expected, received = Received}, fin, _,
                 Fields, M) ->
    case falco_http2_request:trailers(Fields) of
        ok when Expected =:= undefined; Expected =:= Received ->
            maybe_close(S#stream{remote = fin, trailers = Fields}, falco_http2_recv:ready(S, M));
        _ ->
            stream_error(Id, protocol_error, M)
    end.

%% -- DATA and flow control, receiving (§6.1, §6.9) -------------------------------

data(Id, _, _, _, M = #m{last_id = Last}) when Id > Last ->
    conn_error(protocol_error, data_on_idle_stream, M);
data(_, _, _, FlowSize, M = #m{conn_recv = Window}) when FlowSize > Window ->
    conn_error(flow_control_error, connection_window_exceeded, M);
data(Id, Fin, Data, FlowSize, M0) ->
    M1 = falco_http2_recv:conn_received(FlowSize, M0),
    Counted = case Data =:= <<>> andalso Fin =:= nofin of
                  true -> count(empty_data, M1);
                  false -> {ok, M1}
              end,
    case Counted of
        {ok, M} ->
            case M#m.streams of
                #{Id := S} -> stream_data(S, Fin, Data, FlowSize, M);
                #{} ->
                    case closed_how(Id, M) of
                        reset_sent -> M;
                        _ -> stream_error(Id, stream_closed, M)
                    end
            end;
        {calm, Calm} ->
            Calm
    end.

stream_data(#stream{id = Id, remote = fin}, _, _, _, M) ->
    stream_error(Id, stream_closed, M);
stream_data(#stream{id = Id, recv_window = Window}, _, _, FlowSize, M) when FlowSize > Window ->
    stream_error(Id, flow_control_error, M);
stream_data(S0 = #stream{id = Id, recv_window = Window, received = Received0, expected = Expected},
            Fin, Data, FlowSize, M) ->
    Size = iolist_size(Data),
    Received = Received0 + Size,
    if
        Expected =/= undefined, Received > Expected ->
            stream_error(Id, protocol_error, M);
        Expected =/= undefined, Fin =:= fin, Received =/= Expected ->
            stream_error(Id, protocol_error, M);
        true ->
            S1 = S0#stream{recv_window = Window - FlowSize, received = Received},
            %% Padding is never read by the handler: give it back now.
            {S2, M1} = falco_http2_recv:give_back(S1, FlowSize - Size, M),
            {S3, M2} = falco_http2_recv:received(Data, S2, M1),
            case Fin of
                fin -> maybe_close(S3#stream{remote = fin}, M2);
                nofin -> put_stream(S3, M2)
            end
    end.

%% @doc Answers the reads pending on the streams that received body or
%% trailers since the last call: the connection process calls it when it
%% has handled every complete frame of a socket read, so a waiting stream
%% gets all of them in one message, not one per frame. `none' when no
%% stream is waiting (most reads): the caller keeps its state as it is.
-spec deliver_ready(state()) -> none | {state(), [action()]}.
deliver_ready(#m{ready = []}) ->
    none;
deliver_ready(M) ->
    done(falco_http2_recv:deliver_ready(M)).

%% @doc Before stream `Id''s process starts: falco_http2_recv:prefetch/3.
-spec prefetch(stream_id(), non_neg_integer(), state()) -> gone | {binary() | none, state()}.
prefetch(Id, Max, M) ->
    falco_http2_recv:prefetch(Id, Max, M).

%% @doc Stream `Id''s process asks for up to `Want' bytes of body: one
%% `{data, Id, Bin | [Bin], Fin}' (or `{trailers, Id, Fields}') action
%% answers, at once if anything is held, else after the next socket read
%% bringing some; `{grant, N}' (a tunnel's credit): N bytes more, handed
%% over as they come. What is handed over goes back to the stream window,
%% which grows towards what is asked (for a request body at least 1 MB
%% ahead) within `max_receive_buffer'. A stream no longer open gets its end.
-spec read(stream_id(), pos_integer() | {grant, pos_integer()}, state()) ->
          {state(), [action()]}.
read(Id, Want, M = #m{rare = #rare{closing = false}}) ->
    done(falco_http2_recv:read(Id, Want, M));
read(_, _, M) ->
    {M, []}.

%% -- RST_STREAM, WINDOW_UPDATE ----------------------------------------------------

rst_stream(Id, _, M = #m{last_id = Last}) when Id > Last ->
    conn_error(protocol_error, rst_stream_on_idle_stream, M);
%% Only the cancels of live streams count as rapid reset (they cost a
%% started handler); an RST_STREAM for a stream already closed costs
%% nothing more than any frame, and the `frames' budget counts it.
rst_stream(Id, Code, M0 = #m{streams = Streams}) ->
    case Streams of
        #{Id := S} ->
            case count(rst_stream, M0) of
                {ok, M} -> forget(S, reset_received, act({reset, Id, {peer_reset, Code}}, M));
                {calm, Calm} -> Calm
            end;
        #{} ->
            case closed_how(Id, M0) of
                undefined ->
                    M0;
                _ ->
                    %% The client has seen the stream end: from now on its
                    %% frames on it are errors, not late arrivals (§5.1,
                    %% "closed").
                    remember_closed(Id, reset_received, M0)
            end
    end.

window_update(0, Inc, M = #m{conn_send = Window, rare = R}) ->
    case Window + Inc of
        W when W > ?MAX_WINDOW ->
            conn_error(flow_control_error, window_overflow, M);
        W when W > R#rare.conn_send_high ->
            settle(falco_http2_flow:flush_blocked(M#m{conn_send = W,
                                                      rare = R#rare{conn_send_high = W}}));
        W ->
            settle(falco_http2_flow:flush_blocked(M#m{conn_send = W}))
    end;
window_update(Id, _, M = #m{last_id = Last}) when Id > Last ->
    conn_error(protocol_error, window_update_on_idle_stream, M);
window_update(Id, Inc, M = #m{streams = Streams}) ->
    case Streams of
        #{Id := S = #stream{send_window = Window}} ->
            case Window + Inc of
                W when W > ?MAX_WINDOW -> stream_error(Id, flow_control_error, M);
                W -> settle(falco_http2_flow:flush_stream(S#stream{send_window = W}, M))
            end;
        #{} ->
            M
    end.

%% -- SETTINGS (§6.5) --------------------------------------------------------------

apply_remote_settings(Settings, M0) ->
    M1 = case Settings of
             #{header_table_size := Size} ->
                 M0#m{encoder = falco_hpack:encoder_set_max_table_size(Size, M0#m.encoder)};
             #{} -> M0
         end,
    M2 = case Settings of
             #{max_frame_size := Max} -> M1#m{rare = (M1#m.rare)#rare{remote_max_frame = Max}};
             #{} -> M1
         end,
    case Settings of
        #{initial_window_size := New} ->
            %% §6.9.2: the change applies to every stream's send window.
            R = M2#m.rare,
            Delta = New - R#rare.remote_window,
            Streams = maps:map(fun(_, S = #stream{send_window = W}) ->
                                       S#stream{send_window = W + Delta}
                               end, M2#m.streams),
            Over = [Id || {Id, #stream{send_window = W}} <- maps:to_list(Streams), W > ?MAX_WINDOW],
            case Over of
                [] -> settle(falco_http2_flow:flush_blocked(
                                M2#m{rare = R#rare{remote_window = New}, streams = Streams}));
                _ -> conn_error(flow_control_error, window_overflow, M2)
            end;
        #{} ->
            M2
    end.

settings_ack(M = #m{rare = #rare{pending_local = []}}) ->
    M;
settings_ack(M = #m{rare = R = #rare{pending_local = [Settings | Rest], local_window = Old}}) ->
    M1 = act({cancel_timer, settings}, M#m{rare = R#rare{pending_local = Rest}}),
    case Settings of
        #{initial_window_size := New} ->
            Delta = New - Old,
            Streams = maps:map(fun(_, S = #stream{recv_window = W}) ->
                                       S#stream{recv_window = W + Delta}
                               end, M1#m.streams),
            M1#m{rare = R#rare{pending_local = Rest, local_window = New}, streams = Streams};
        #{} ->
            M1
    end.

%% -- sending (falco_http2_flow) ---------------------------------------------------------

%% @doc Sends the response head of stream `Id' (`fin': no body follows).
-spec send_headers(stream_id(), 100..999, headers(), fin(), state()) -> {state(), [action()]}.
send_headers(Id, Status, Headers, Fin, M) ->
    finish(settle(falco_http2_flow:headers(Id, Status, Headers, Fin, M))).

%% @doc Sends a whole response on stream `Id': its head, and its body in
%% DATA frames that end the stream (the head ends it when the body is
%% empty).
-spec send_response(stream_id(), 100..999, headers(), iodata(), state()) ->
          {state(), [action()]}.
send_response(Id, Status, Headers, Body, M) ->
    M1 = case iolist_size(Body) of
             0 -> falco_http2_flow:headers(Id, Status, Headers, fin, M);
             _ -> falco_http2_flow:data(Id, Body, fin, none,
                                        falco_http2_flow:headers(Id, Status, Headers, nofin, M))
         end,
    finish(settle(M1)).

%% @doc Sends an interim (1xx) response on stream `Id'.
-spec send_inform(stream_id(), 100..199, state()) -> {state(), [action()]}.
send_inform(Id, Status, M) ->
    done(falco_http2_flow:inform(Id, Status, M)).

%% @doc Sends body data on stream `Id'. `{reply, Tag, ok}' comes back once
%% all of it is written (at once if the windows allow); with `Tag' =
%% `none' nothing comes back.
-spec send_data(stream_id(), iodata(), fin(), tag(), state()) -> {state(), [action()]}.
send_data(Id, Data, Fin, Tag, M) ->
    finish(settle(falco_http2_flow:data(Id, Data, Fin, Tag, M))).

%% @doc Ends stream `Id' with trailer fields (after any queued data).
-spec send_trailers(stream_id(), headers(), tag(), state()) -> {state(), [action()]}.
send_trailers(Id, Fields, Tag, M) ->
    finish(settle(falco_http2_flow:trailers(Id, Fields, Tag, M))).

%% The streams whose sends flow finished (oldest first) may now close.
settle(M = #m{settled = []}) ->
    M;
settle(M0 = #m{settled = Ids}) ->
    lists:foldr(fun(Id, M = #m{streams = Streams}) ->
                        case Streams of
                            #{Id := S} -> maybe_close(S, M);
                            #{} -> M
                        end
                end, M0#m{settled = []}, Ids).

%% Both sides done: the stream leaves. Our side done while the client
%% still sends: §8.1 lets us stop it with RST_STREAM NO_ERROR, which we do
%% after a short linger. Meanwhile the stream's frames are still checked
%% (a client that ends it in time closes it normally) and its DATA counts
%% against a window that is no longer given back.
maybe_close(S = #stream{local = fin, queue = [], remote = fin}, M) ->
    forget(S, closed, M);
maybe_close(S = #stream{id = Id, local = fin, queue = [], remote = open, lingering = false}, M) ->
    put_stream(S#stream{lingering = true}, act({timer, {linger, Id}, ?LINGER}, M));
maybe_close(S, M) ->
    put_stream(S, M).

stop_lingering(S = #stream{id = Id}, M) ->
    forget(S, reset_sent, send(falco_http2_frame:rst_stream(Id, no_error), M)).

%% Removes a stream, failing its queued sends, and remembers how it closed: one record copy.
forget(#stream{id = Id, queue = Q, lingering = Lingering, stall = Stall}, How,
       M0 = #m{streams = Streams, blocked = Blocked, closed = Closed}) ->
    M1 = lists:foldl(fun({data, _, _, _, Tag}, Acc) -> reply(Tag, {error, closed}, Acc);
                        ({trailers, _, Tag}, Acc) -> reply(Tag, {error, closed}, Acc)
                     end, M0, Q),
    M2 = case Stall of
             true -> act({cancel_timer, {stall, Id}}, M1);
             false -> M1
         end,
    M3 = case Lingering of
             true -> act({cancel_timer, {linger, Id}}, M2);
             false -> M2
         end,
    M3#m{blocked = lists:delete(Id, Blocked), streams = maps:remove(Id, Streams),
         closed = falco_http2_closed:note(Id, How, Closed)}.

remember_closed(Id, How, M = #m{closed = Closed}) ->
    M#m{closed = falco_http2_closed:note(Id, How, Closed)}.

closed_how(Id, #m{closed = Closed}) ->
    falco_http2_closed:how(Id, Closed).

%% -- local events -------------------------------------------------------------------------

%% @doc The process of stream `Id' ended. If its response was not complete
%% the stream is reset with INTERNAL_ERROR (the client must not take a cut
%% response for a whole one).
-spec stream_exited(stream_id(), state()) -> {state(), [action()]}.
stream_exited(Id, M = #m{streams = Streams, rare = #rare{closing = false}}) ->
    case Streams of
        #{Id := S = #stream{local = fin}} ->
            %% Nobody will read what is left of the body.
            {put_stream(S#stream{reader = false, buf = falco_http2_buffer:new(), want = 0}, M),
             []};
        #{Id := _} -> reset_stream(Id, internal_error, M);
        #{} -> {M, []}
    end;
stream_exited(_, M) ->
    {M, []}.

%% @doc Resets stream `Id' from our side.
-spec reset_stream(stream_id(), falco_http2_frame:error_code(), state()) -> {state(), [action()]}.
reset_stream(Id, Code, M = #m{streams = Streams, rare = #rare{closing = false}}) ->
    case Streams of
        #{Id := S} ->
            finish(forget(S, reset_sent, send(falco_http2_frame:rst_stream(Id, Code), M)));
        #{} ->
            {M, []}
    end;
reset_stream(_, _, M) ->
    {M, []}.

%% @doc A timer set by an earlier `{timer, Name, Ms}' action expired.
-spec timeout(term(), state()) -> {state(), [action()]}.
timeout(_, M = #m{rare = #rare{closing = true}}) ->
    {M, []};
timeout(settings, M) ->
    %% §6.5.3: the client never acknowledged our SETTINGS.
    done(conn_error(settings_timeout, settings_not_acknowledged, M));
timeout(flood, M = #m{rare = R = #rare{opts = #{flood_window := Window}}}) ->
    done(act({timer, flood, Window}, M#m{rare = R#rare{counts = #{}}}));
timeout(idle, M = #m{streams = Streams}) when map_size(Streams) =:= 0 ->
    done(falco_http2_goaway:close(no_error, idle_timeout, M));
timeout({stall, Id}, M = #m{streams = Streams}) ->
    case Streams of
        #{Id := S = #stream{queue = Q}} ->
            case falco_http2_flow:stalled(S, M) of
                {continue, M1} ->
                    done(M1);
                reset ->
                    %% The client stopped reading, or reads too slowly: the
                    %% handler's pending send fails with send_timeout (its
                    %% process is left to end), the stream is reset.
                    M1 = lists:foldl(fun({data, _, _, _, Tag}, Acc) ->
                                             reply(Tag, {error, send_timeout}, Acc);
                                        ({trailers, _, Tag}, Acc) ->
                                             reply(Tag, {error, send_timeout}, Acc)
                                     end, M, Q),
                    M2 = send(falco_http2_frame:rst_stream(Id, cancel), M1),
                    finish(forget(S#stream{queue = []}, reset_sent,
                                  act({reset, Id, send_timeout}, M2)))
            end;
        #{} ->
            {M, []}
    end;
timeout(drain, M = #m{rare = #rare{draining = first}}) ->
    finish(falco_http2_goaway:final(M));
timeout({linger, Id}, M = #m{streams = Streams}) ->
    case Streams of
        #{Id := S = #stream{lingering = true}} -> finish(stop_lingering(S, M));
        #{} -> {M, []}
    end;
timeout(_, M) ->
    {M, []}.

%% @doc Graceful shutdown: GOAWAY NO_ERROR, then close.
-spec goaway(state()) -> {state(), [action()]}.
goaway(M = #m{rare = #rare{closing = true}}) ->
    {M, []};
goaway(M) ->
    done(falco_http2_goaway:close(no_error, shutdown, M)).

%% @doc Graceful drain (§6.8): a GOAWAY with the largest stream id and a
%% PING, so that requests already on their way are still taken; at the
%% PING's answer (or after a second) a second GOAWAY with the last stream
%% taken (falco_http2_goaway). The streams open then finish; the
%% connection closes when the last one has.
-spec drain(state()) -> {state(), [action()]}.
drain(M = #m{rare = #rare{closing = false, draining = false}}) ->
    done(falco_http2_goaway:drain(M));
drain(M) ->
    {M, []}.

%% -- errors and floods ------------------------------------------------------------------

%% §5.4.1: GOAWAY with the last stream we handled, then close.
conn_error(_, _, M = #m{rare = #rare{closing = true}}) ->
    M;
conn_error(Code, Why, M = #m{last_id = Last, rare = R}) ->
    %% The debug data names the fault, and for a flood the budget that
    %% tripped, so a client's operator can tell which limit it hit.
    Debug = case Why of
                W when is_atom(W) -> atom_to_binary(W);
                {flood, Key} -> <<"flood: ", (atom_to_binary(Key))/binary>>;
                _ -> <<>>
            end,
    act({close, {Code, Why}}, send(falco_http2_frame:goaway(Last, Code, Debug),
                                   M#m{rare = R#rare{closing = true, goaway_sent = true}})).

%% §5.4.2: RST_STREAM; the stream is closed and its late frames ignored.
stream_error(Id, Code, M0) ->
    case count(stream_errors, M0) of
        {ok, M1} ->
            M2 = send(falco_http2_frame:rst_stream(Id, Code), M1),
            case M2#m.streams of
                #{Id := S} -> forget(S, reset_sent, act({reset, Id, Code}, M2));
                #{} -> remember_closed(Id, reset_sent, M2)
            end;
        {calm, Calm} ->
            Calm
    end.

count(Key, M) ->
    case falco_http2_budget:count(Key, M) of
        {ok, M1} -> {ok, M1};
        over -> {calm, conn_error(enhance_your_calm, {flood, Key}, M)}
    end.

%% The end of every event: the idle check (falco_http2_goaway:idle/1) and
%% the actions handed over (done/1), with one copy of the record for both
%% when the connection goes idle or busy (every request, one stream at a
%% time).
finish(M = #m{out = Out}) ->
    case falco_http2_goaway:idle(M) of
        keep -> done(M);
        {closed, M1} -> done(M1);
        {Idle, Action} -> {M#m{idle = Idle, out = []}, lists:reverse(Out, [Action])}
    end.

%% -- action list ----------------------------------------------------------------------------

done(M = #m{out = []}) ->
    %% no copy of the record when nothing was done
    {M, []};
done(M = #m{out = Out}) ->
    {M#m{out = []}, lists:reverse(Out)}.
