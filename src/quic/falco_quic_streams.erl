%% @doc The QUIC streams of one server-side connection (RFC 9000 §2-4,
%% §19.4-19.15), pure, for the connection machine: STREAM, RESET_STREAM,
%% STOP_SENDING and MAX_* frames received become events for the HTTP/3
%% layer; the application's data and resets become control frames
%% ({@link control/3}) and STREAM frames ({@link take/2}). Flow control is
%% {@link falco_quic_flow}'s, stream counts {@link falco_quic_stream_limit}'s,
%% reassembly {@link falco_quic_reasm}'s.
%%
%% A client stream opens the lower ones of its type (§3.2): `stream_open'
%% events in increasing ID order, before the data (we open only
%% unidirectional streams). A frame for a stream once open and now forgotten (a
%% client stream below the next unopened ID of its type, one of ours below
%% our next) is ignored. STREAM_STATE_ERROR: STREAM or RESET_STREAM on a
%% stream of ours or a server bidirectional one (we open none),
%% STOP_SENDING or MAX_STREAM_DATA on a client unidirectional stream or
%% one of ours not opened. A MAX_STREAM_DATA that opens client streams
%% returns no events: their `stream_open' come with the next call that does.
%%
%% Reassembly: a stream holds out-of-order bytes up to `max_buffered'
%% beyond its read point, by default the most its window grows to. Flow
%% control is checked first and never credits past the read point plus
%% the window, so then a peer within its credit cannot exceed it; with a
%% smaller `max_buffered', going past it is FLOW_CONTROL_ERROR. More than
%% falco_quic_reasm's max_pieces binaries held beyond holes breaks no rule
%% but costs memory (§21.7): INTERNAL_ERROR, reason `too_fragmented'.
%%
%% Receive half: in-order bytes, each once, one `stream_data' event per
%% call at most (the FIN with it, or alone with an empty binary).
%% {@link consumed/4} credits what the application read. A RESET_STREAM
%% drops the buffer and gives the unread bytes back to the connection; our
%% {@link stop/3} sends STOP_SENDING, drops the buffer and credits what
%% arrives at once until the final size is known.
%%
%% Send half: a queue of binaries cut to frames by {@link take/2}: lost
%% ranges first (same offsets and bytes), then new data round-robin (to
%% the back of the line after each frame) within the peer's credit; a
%% stream out of credit waits off the line (STREAM_DATA_BLOCKED or
%% DATA_BLOCKED once per limit). The peer's STOP_SENDING resets it (§3.5).
%%
%% A stream is forgotten (a client stream's credit given back for
%% MAX_STREAMS) once its receive half has its FIN delivered and consumed,
%% or is reset, or stopped with the final size known, and its send half
%% has its FIN and all data acknowledged, or its RESET_STREAM, or is none
%% (client unidirectional). Not sent: STREAMS_BLOCKED ({@link open_uni/1}
%% answers `blocked' without a state to keep that we wanted a stream).
%%
%% @private internal to falco
-module(falco_quic_streams).

-export([new/3, stream_frame/6, reset_stream/4, stop_sending/3, max_data/2, max_stream_data/3,
         max_streams/3, consumed/4, open_uni/1, send/4, reset/3, stop/3, unsent/2, pending/1,
         control/3, take/2, acked/2, lost/2, active/1, info/1]).
-export_type([streams/0, event/0, info/0, opts/0, id/0]).

%% the most the connection's and a stream's receive windows grow to
-define(CONN_WINDOW, 16#1000000).
-define(STREAM_WINDOW, 16#400000).
%% the smallest room worth trying a STREAM frame in
-define(MIN_ROOM, 3).

-type id() :: non_neg_integer().
-type dir() :: bidi | uni.
-type fin() :: fin | nofin.
-type code() :: non_neg_integer().
-type event() :: {stream_open, id(), dir()} | {stream_data, id(), binary(), fin()}
               | {stream_reset, id(), code()} | {stop_sending, id(), code()}.
%% what a frame sent was, for acked/2 and lost/2 (opaque to the caller)
-type info() :: {stream, id(), non_neg_integer(), binary(), fin()}
              | {reset_stream, id(), code(), non_neg_integer()} | {stop_sending, id(), code()}
              | max_data | {max_stream_data, id()} | {max_streams, dir()} | blocked.
-type opts() :: #{max_window => pos_integer(), max_buffered => pos_integer()}.
-type error() :: {error, falco_quic_error:error(), term()}.
-type frame() :: falco_quic_frame:frame().

-record(st, {id :: id(),
             flow :: falco_quic_flow:stream(),
             %% receive half: none for a stream of ours
             rx :: open | stopped | done | none,
             reasm :: falco_quic_reasm:reasm() | undefined,
             consumed = 0 :: non_neg_integer(),
             fin_delivered = false :: boolean(),
             %% send half: none for a client unidirectional stream;
             %% closing: FIN asked, not sent yet
             tx :: open | closing | fin_sent | reset | done | none,
             queue = queue:new() :: queue:queue(binary()),
             unsent = 0 :: non_neg_integer(),
             lost = gb_trees:empty() :: gb_trees:tree(non_neg_integer(), {binary(), fin()}),
             in_flight = 0 :: non_neg_integer(),
             fin_acked = false :: boolean(),
             %% where the stream waits to send: the line (ready), blocked
             %% by its own credit or the connection's, or nowhere
             where = none :: none | ready | sblocked | cblocked,
             in_retx = false :: boolean()}).

-record(streams, {conn :: falco_quic_flow:conn(),
                  bidi :: falco_quic_stream_limit:limit(),
                  uni :: falco_quic_stream_limit:limit(),
                  map = #{} :: #{id() => #st{}},
                  %% our windows for client streams, the peer's limits
                  bidi_recv :: non_neg_integer(),
                  uni_recv :: non_neg_integer(),
                  bidi_send :: non_neg_integer(),
                  uni_send :: non_neg_integer(),
                  max_window :: pos_integer(),
                  max_buffered :: pos_integer() | undefined,
                  ready = queue:new() :: queue:queue(id()),
                  retx = queue:new() :: queue:queue(id()),
                  cblocked = [] :: [id()],
                  sdb = [] :: [id()],
                  %% streams whose MAX_STREAM_DATA may be due (grant) or
                  %% must be sent again (lost)
                  credit = #{} :: #{id() => grant | lost},
                  %% RESET_STREAM and STOP_SENDING to send, newest first
                  ctl = [] :: [frame()],
                  max_data_lost = false :: boolean(),
                  max_streams_lost = [] :: [dir()],
                  %% stream_open events not reported yet, newest first
                  opened = [] :: [event()]}).
-opaque streams() :: #streams{}.

%% -- creating -----------------------------------------------------------------

%% @doc The streams of a connection: `Ours' our transport parameters,
%% `Peers' the client's (absent keys are 0). `max_window': the most the
%% connection's and each stream's receive window grow to (default 16 MB
%% and 4 MB); `max_buffered': the out-of-order bytes a stream may hold.
-spec new(falco_quic_tparams:params(), falco_quic_tparams:params(), opts()) -> streams().
new(Ours, Peers, Opts) ->
    {ConnMax, StreamMax} = case Opts of
                               #{max_window := W} -> {W, W};
                               #{} -> {?CONN_WINDOW, ?STREAM_WINDOW}
                           end,
    #streams{conn = falco_quic_flow:new_conn(p(initial_max_data, Ours),
                                             p(initial_max_data, Peers), ConnMax),
             bidi = falco_quic_stream_limit:new(p(initial_max_streams_bidi, Ours),
                                                p(initial_max_streams_bidi, Peers)),
             uni = falco_quic_stream_limit:new(p(initial_max_streams_uni, Ours),
                                               p(initial_max_streams_uni, Peers)),
             bidi_recv = p(initial_max_stream_data_bidi_remote, Ours),
             uni_recv = p(initial_max_stream_data_uni, Ours),
             bidi_send = p(initial_max_stream_data_bidi_local, Peers),
             uni_send = p(initial_max_stream_data_uni, Peers),
             max_window = StreamMax,
             max_buffered = maps:get(max_buffered, Opts, undefined)}.

p(Key, Params) ->
    maps:get(Key, Params, 0).

client_stream(Id, S = #streams{max_window = Max}) ->
    {Recv, Send, Tx} = case dir(Id) of
                           bidi -> {S#streams.bidi_recv, S#streams.bidi_send, open};
                           uni -> {S#streams.uni_recv, 0, none}
                       end,
    Limit = case S#streams.max_buffered of undefined -> max(1, max(Max, Recv)); B -> B end,
    #st{id = Id, flow = falco_quic_flow:new_stream(Recv, Send, Max), rx = open,
        reasm = falco_quic_reasm:new(#{limit => Limit}), tx = Tx}.

dir(Id) when Id band 2 =:= 0 -> bidi;
dir(_) -> uni.

limit(bidi, #streams{bidi = L}) -> L;
limit(uni, #streams{uni = L}) -> L.

set_limit(bidi, L, S) -> S#streams{bidi = L};
set_limit(uni, L, S) -> S#streams{uni = L}.

%% -- finding a stream ---------------------------------------------------------

%% The stream a frame is for: `recv' frames (STREAM, RESET_STREAM) concern
%% its receive half, `send' frames (STOP_SENDING, MAX_STREAM_DATA) its
%% send half.
locate(Id, Kind, S) ->
    case check(Id band 3, Kind) of
        ok -> find(Id, S);
        {error, Why} -> {error, stream_state_error, {Why, Id}}
    end.

check(0, _) -> ok;
check(1, _) -> {error, server_bidi_stream};
check(2, recv) -> ok;
check(2, send) -> {error, receive_only_stream};
check(3, recv) -> {error, send_only_stream};
check(3, send) -> ok.

find(Id, S = #streams{map = M}) ->
    case M of
        #{Id := St} ->
            {held, St, S};
        #{} when Id band 3 =:= 3 ->
            case Id bsr 2 < falco_quic_stream_limit:local_opened(S#streams.uni) of
                true -> closed;
                false -> {error, stream_state_error, {unopened_stream, Id}}
            end;
        #{} ->
            open_client(Id, S)
    end.

%% A client stream not held: closed, or opened now with the lower ones.
open_client(Id, S0) ->
    Dir = dir(Id),
    case falco_quic_stream_limit:peer_open(Id, limit(Dir, S0)) of
        {error, stream_limit_error} ->
            {error, stream_limit_error, {stream_limit, Id}};
        {ok, 0, _} ->
            closed;
        {ok, N, L} ->
            Index = Id bsr 2,
            Ids = [(I bsl 2) bor (Id band 3) || I <- lists:seq(Index - N + 1, Index)],
            S = lists:foldl(fun(I, Acc = #streams{map = M, opened = O}) ->
                                    Acc#streams{map = M#{I => client_stream(I, Acc)},
                                                opened = [{stream_open, I, Dir} | O]}
                            end, set_limit(Dir, L, S0), Ids),
            {held, maps:get(Id, S#streams.map), S}
    end.

%% The events of a call: the streams opened first.
events(Events, S = #streams{opened = []}) ->
    {ok, Events, S};
events(Events, S = #streams{opened = Opened}) ->
    {ok, lists:reverse(Opened, Events), S#streams{opened = []}}.

%% A stream put back, or forgotten once both halves are done.
store(St = #st{id = Id}, S = #streams{map = M}) ->
    case done(St) of
        true -> forget(Id, S#streams{map = maps:remove(Id, M)});
        false -> S#streams{map = M#{Id => St}}
    end.

done(#st{rx = Rx, tx = Tx}) ->
    (Rx =:= done orelse Rx =:= none) andalso (Tx =:= done orelse Tx =:= none).

forget(Id, S) when Id band 1 =:= 1 ->
    S;
forget(Id, S) ->
    Dir = dir(Id),
    set_limit(Dir, falco_quic_stream_limit:peer_closed(limit(Dir, S)), S).

%% -- receiving ----------------------------------------------------------------

%% @doc A STREAM frame: `Data' at `Offset' on stream `Id'.
-spec stream_frame(id(), non_neg_integer(), fin(), binary(), integer(), streams()) ->
          {ok, [event()], streams()} | error().
stream_frame(Id, Offset, Fin, Data, _Now, S0) ->
    case locate(Id, recv, S0) of
        {held, St = #st{flow = F0}, S = #streams{conn = C0}} ->
            case falco_quic_flow:recv(Offset, byte_size(Data), Fin, F0, C0) of
                {ok, F, C} -> deliver(St#st{flow = F}, Offset, Data, S#streams{conn = C});
                {error, Error} -> {error, Error, {stream, Id}}
            end;
        closed ->
            events([], S0);
        Error ->
            Error
    end.

deliver(St = #st{rx = open, reasm = R0, id = Id}, Offset, Data, S) ->
    case falco_quic_reasm:add(Offset, Data, R0) of
        {ok, Ready, R} -> ready(Ready, St#st{reasm = R}, S);
        {error, buffer_exceeded} -> {error, flow_control_error, {buffer_exceeded, Id}};
        {error, too_fragmented} -> {error, internal_error, {too_fragmented, Id}}
    end;
deliver(St0 = #st{rx = stopped}, _, _, S0) ->
    {St, S} = credit_all(St0, S0),
    events([], store(discard(St), S));
deliver(St, _, _, S) ->
    events([], store(St, S)).

%% The bytes now in order, and the FIN once all before it is delivered.
ready(Ready, St = #st{id = Id, flow = F, reasm = R, fin_delivered = Done}, S) ->
    FinNow = not Done andalso falco_quic_flow:final_size(F) =:= falco_quic_reasm:offset(R),
    St1 = rx_done(St#st{fin_delivered = Done orelse FinNow}),
    Events = [{stream_data, Id, bin(Ready), case FinNow of true -> fin; false -> nofin end}
              || Ready =/= [] orelse FinNow],
    events(Events, store(St1, S)).

bin([Bin]) -> Bin;
bin(Bins) -> iolist_to_binary(Bins).

%% The receive half is done once the FIN is delivered and all consumed.
rx_done(St = #st{rx = open, fin_delivered = true, consumed = Used, flow = F}) ->
    case Used >= falco_quic_flow:final_size(F) of
        true -> St#st{rx = done, reasm = undefined};
        false -> St
    end;
rx_done(St) ->
    St.

%% A stopped stream: what arrived is credited at once; done at the final size.
discard(St = #st{flow = F}) ->
    case falco_quic_flow:final_size(F) of undefined -> St; _ -> St#st{rx = done} end.

credit_all(St = #st{flow = F0, consumed = Used}, S = #streams{conn = C0}) ->
    Received = falco_quic_flow:received(F0),
    {F, C} = falco_quic_flow:consumed(Received - Used, F0, C0),
    {St#st{flow = F, consumed = Received}, S#streams{conn = C}}.

%% @doc A RESET_STREAM: the receive half ends, its buffer is dropped and
%% the bytes never read are given back to the connection.
-spec reset_stream(id(), code(), non_neg_integer(), streams()) ->
          {ok, [event()], streams()} | error().
reset_stream(Id, Code, Final, S0) ->
    case locate(Id, recv, S0) of
        {held, St = #st{flow = F0, rx = Rx}, S = #streams{conn = C0}} ->
            case falco_quic_flow:reset(Final, F0, C0) of
                {ok, F, C} ->
                    Events = [{stream_reset, Id, Code} || Rx =:= open, not St#st.fin_delivered],
                    St1 = St#st{flow = F, rx = done, reasm = undefined,
                                consumed = erlang:max(Final, St#st.consumed)},
                    events(Events, store(St1, S#streams{conn = C}));
                {error, Error} ->
                    {error, Error, {reset_stream, Id}}
            end;
        closed ->
            events([], S0);
        Error ->
            Error
    end.

%% @doc A STOP_SENDING: our send half is reset with the same code (§3.5).
-spec stop_sending(id(), code(), streams()) -> {ok, [event()], streams()} | error().
stop_sending(Id, Code, S0) ->
    case locate(Id, send, S0) of
        {held, St = #st{tx = Tx}, S} when Tx =:= open; Tx =:= closing; Tx =:= fin_sent ->
            events([{stop_sending, Id, Code}], store_reset(St, Code, S));
        {held, _, S} ->
            events([], S);
        closed ->
            events([], S0);
        Error ->
            Error
    end.

%% @doc The peer's MAX_DATA.
-spec max_data(non_neg_integer(), streams()) -> streams().
max_data(N, S = #streams{conn = C0, cblocked = Blocked}) ->
    C = falco_quic_flow:peer_max_data(N, C0),
    case conn_room(C) > 0 of
        true -> reschedule(lists:reverse(Blocked), cblocked, S#streams{conn = C, cblocked = []});
        false -> S#streams{conn = C}
    end.

%% The streams of Ids that wait in Where, their place found again.
reschedule(Ids, Where, S0) ->
    lists:foldl(fun(Id, S = #streams{map = M}) ->
                        case M of
                            #{Id := St = #st{where = Where}} -> schedule(St#st{where = none}, S);
                            #{} -> S
                        end
                end, S0, Ids).

%% @doc The peer's MAX_STREAM_DATA.
-spec max_stream_data(id(), non_neg_integer(), streams()) -> {ok, streams()} | error().
max_stream_data(Id, N, S0) ->
    case locate(Id, send, S0) of
        {held, St = #st{flow = F, where = Where}, S} ->
            St1 = St#st{flow = falco_quic_flow:peer_max_stream_data(N, F)},
            case Where of
                sblocked -> {ok, schedule(St1#st{where = none}, S)};
                _ -> {ok, store(St1, S)}
            end;
        closed ->
            {ok, S0};
        Error ->
            Error
    end.

%% @doc The peer's MAX_STREAMS: how many streams of a type we may open.
-spec max_streams(dir(), non_neg_integer(), streams()) -> {ok, streams()} | error().
max_streams(Dir, N, S) ->
    case falco_quic_stream_limit:peer_max_streams(N, limit(Dir, S)) of
        {ok, L} -> {ok, set_limit(Dir, L, S)};
        {error, Error} -> {error, Error, {max_streams, Dir, N}}
    end.

%% @doc The application consumed `N' more bytes of the data delivered on
%% stream `Id': credit to grant again.
-spec consumed(id(), non_neg_integer(), integer(), streams()) -> streams().
consumed(Id, N, _Now, S = #streams{map = M, conn = C0, credit = Credit}) ->
    case M of
        #{Id := St = #st{rx = open, reasm = R, consumed = Used, flow = F0}} ->
            case erlang:min(N, falco_quic_reasm:offset(R) - Used) of
                K when K > 0 ->
                    {F, C} = falco_quic_flow:consumed(K, F0, C0),
                    St1 = rx_done(St#st{flow = F, consumed = Used + K}),
                    store(St1, S#streams{conn = C, credit = maps:merge(#{Id => grant}, Credit)});
                _ ->
                    S
            end;
        #{} ->
            S
    end.

%% -- sending ------------------------------------------------------------------

%% @doc Opens a unidirectional stream of ours, or `blocked' at the peer's
%% limit.
-spec open_uni(streams()) -> {ok, id(), streams()} | blocked.
open_uni(S = #streams{uni = L0, map = M}) ->
    case falco_quic_stream_limit:open(L0) of
        {ok, Index, L} ->
            Id = (Index bsl 2) bor 3,
            F = falco_quic_flow:new_stream(0, S#streams.uni_send, S#streams.max_window),
            St = #st{id = Id, rx = none, tx = open, flow = F},
            {ok, Id, S#streams{uni = L, map = M#{Id => St}}};
        blocked ->
            blocked
    end.

%% @doc Queues data on a stream's send half (one of ours, or a client
%% bidirectional stream), with `fin' the last of it.
-spec send(id(), iodata(), fin(), streams()) -> {ok, streams()} | {error, closed}.
send(Id, Data, Fin, S = #streams{map = M}) ->
    case M of
        #{Id := St0 = #st{tx = open, queue = Q, unsent = U}} ->
            Tx = case Fin of fin -> closing; nofin -> open end,
            St = case iolist_to_binary(Data) of
                     <<>> -> St0#st{tx = Tx};
                     Bin -> St0#st{queue = queue:in(Bin, Q), unsent = U + byte_size(Bin), tx = Tx}
                 end,
            {ok, schedule(St, S)};
        #{} ->
            {error, closed}
    end.

%% @doc Our RESET_STREAM: unsent data dropped, the final size the bytes sent.
-spec reset(id(), code(), streams()) -> streams().
reset(Id, Code, S = #streams{map = M}) ->
    case M of
        #{Id := St = #st{tx = Tx}} when Tx =:= open; Tx =:= closing; Tx =:= fin_sent ->
            store_reset(St, Code, S);
        #{} ->
            S
    end.

store_reset(St = #st{id = Id, flow = F}, Code, S0) ->
    S = unschedule(St, S0),
    Frame = {reset_stream, Id, Code, falco_quic_flow:sent_bytes(F)},
    store(St#st{tx = reset, queue = queue:new(), unsent = 0, lost = gb_trees:empty(),
                where = none, in_retx = false},
          S#streams{ctl = [Frame | S#streams.ctl]}).

unschedule(#st{id = Id, where = Where, in_retx = Retx}, S0) ->
    Drop = fun(I) -> I =/= Id end,
    S1 = case Where of
             ready -> S0#streams{ready = queue:filter(Drop, S0#streams.ready)};
             cblocked -> S0#streams{cblocked = lists:delete(Id, S0#streams.cblocked)};
             _ -> S0
         end,
    case Retx of
        true -> S1#streams{retx = queue:filter(Drop, S1#streams.retx)};
        false -> S1
    end.

%% @doc Our STOP_SENDING: the receive half is no longer wanted; its buffer
%% is dropped and credited.
-spec stop(id(), code(), streams()) -> streams().
stop(Id, Code, S0 = #streams{map = M, ctl = Ctl}) ->
    case M of
        #{Id := St0 = #st{rx = open}} ->
            {St = #st{flow = F}, S} = credit_all(St0#st{reasm = undefined}, S0),
            case falco_quic_flow:final_size(F) of
                undefined -> store(St#st{rx = stopped},
                                   S#streams{ctl = [{stop_sending, Id, Code} | Ctl]});
                _ -> store(St#st{rx = done}, S)
            end;
        #{} ->
            S0
    end.

%% @doc The bytes queued on a stream and not sent once yet.
-spec unsent(id(), streams()) -> non_neg_integer() | closed.
unsent(Id, #streams{map = M}) ->
    case M of
        #{Id := #st{tx = Tx, unsent = U}} when Tx =:= open; Tx =:= closing; Tx =:= fin_sent -> U;
        #{} -> closed
    end.

%% Where a stream waits to send, and the stream stored.
schedule(St = #st{where = ready}, S) ->
    store(St, S);
schedule(St = #st{id = Id, where = Where}, S) ->
    case sendable(St, S#streams.conn) of
        Where ->
            store(St, S);
        ready ->
            store(St#st{where = ready}, S#streams{ready = queue:in(Id, S#streams.ready)});
        sblocked ->
            store(St#st{where = sblocked}, S#streams{sdb = [Id | S#streams.sdb]});
        cblocked ->
            store(St#st{where = cblocked}, S#streams{cblocked = [Id | S#streams.cblocked]});
        none ->
            store(St#st{where = none}, S)
    end.

sendable(#st{tx = closing, unsent = 0}, _) ->
    ready;
sendable(#st{tx = Tx, unsent = U, flow = F}, C) when U > 0, Tx =:= open orelse Tx =:= closing ->
    case falco_quic_flow:send_max(F) - falco_quic_flow:sent_bytes(F) > 0 of
        false -> sblocked;
        true ->
            case conn_room(C) > 0 of true -> ready; false -> cblocked end
    end;
sendable(_, _) ->
    none.

conn_room(C) ->
    erlang:max(falco_quic_flow:send_max(C) - falco_quic_flow:sent_bytes(C), 0).

%% @doc Whether there is anything to send: control frames, or stream data
%% within the peer's credit.
-spec pending(streams()) -> boolean().
pending(S = #streams{retx = Retx, ready = Ready}) ->
    %% control/3 is pure: the frames it would give now (at time 0 with no
    %% RTT a window does not grow, but whether a grant is due is the same)
    not queue:is_empty(Retx) orelse not queue:is_empty(Ready)
        orelse element(1, control(0, 0, S)) =/= [].

%% @doc The control frames due now, at `Now' with the smoothed RTT (µs),
%% each with its info() for acked/2 and lost/2: MAX_DATA, MAX_STREAM_DATA,
%% MAX_STREAMS, RESET_STREAM, STOP_SENDING, DATA_BLOCKED and
%% STREAM_DATA_BLOCKED.
-spec control(integer(), non_neg_integer(), streams()) -> {[{frame(), info()}], streams()}.
control(Now, Srtt, S0 = #streams{credit = Credit, sdb = Sdb, ctl = Ctl, max_streams_lost = Lost}) ->
    {A1, S1} = control_max_data(Now, Srtt, S0#streams{credit = #{}, sdb = [], ctl = [],
                                                      max_streams_lost = []}),
    {A2, S2} = lists:foldl(fun(Item, Acc) -> control_msd(Now, Srtt, Item, Acc) end,
                           {A1, S1}, lists:sort(maps:to_list(Credit))),
    {A3, S3} = lists:foldl(fun control_max_streams/2, {A2, S2},
                           [{Dir, lists:member(Dir, Lost)} || Dir <- [bidi, uni]]),
    A4 = [{Frame, Frame} || Frame <- Ctl] ++ A3,
    Blocked = S3#streams.cblocked =/= [] andalso falco_quic_flow:data_blocked(S3#streams.conn),
    {A5, S5} = case Blocked of
                   {N, C} -> {[{{data_blocked, N}, blocked} | A4], S3#streams{conn = C}};
                   _ -> {A4, S3}
               end,
    {A6, S6} = lists:foldl(fun control_sdb/2, {A5, S5}, lists:reverse(Sdb)),
    {lists:reverse(A6), S6}.

control_max_data(Now, Srtt, S = #streams{conn = C0, max_data_lost = Lost}) ->
    case falco_quic_flow:max_data(Now, Srtt, C0) of
        {N, C} -> {[{{max_data, N}, max_data}], S#streams{conn = C, max_data_lost = false}};
        none when Lost -> {[{{max_data, falco_quic_flow:recv_max(C0)}, max_data}],
                           S#streams{max_data_lost = false}};
        none -> {[], S}
    end.

%% A MAX_STREAM_DATA due, or lost and still of use (at the current limit).
control_msd(Now, Srtt, {Id, Why}, {Acc, S = #streams{map = M}}) ->
    case M of
        #{Id := St = #st{rx = open, flow = F0}} ->
            Final = falco_quic_flow:final_size(F0),
            case falco_quic_flow:max_stream_data(Now, Srtt, F0) of
                {N, F} ->
                    {[{{max_stream_data, Id, N}, {max_stream_data, Id}} | Acc],
                     S#streams{map = M#{Id => St#st{flow = F}}}};
                none when Why =:= lost, Final =:= undefined ->
                    {[{{max_stream_data, Id, falco_quic_flow:recv_max(F0)}, {max_stream_data, Id}}
                      | Acc], S};
                none ->
                    {Acc, S}
            end;
        #{} ->
            {Acc, S}
    end.

control_max_streams({Dir, Lost}, {Acc, S}) ->
    L0 = limit(Dir, S),
    case falco_quic_stream_limit:max_streams(L0) of
        {N, L} -> {[{{max_streams, Dir, N}, {max_streams, Dir}} | Acc], set_limit(Dir, L, S)};
        none when Lost -> {[{{max_streams, Dir, falco_quic_stream_limit:limit(L0)},
                             {max_streams, Dir}} | Acc], S};
        none -> {Acc, S}
    end.

control_sdb(Id, {Acc, S = #streams{map = M}}) ->
    case M of
        #{Id := St = #st{where = sblocked, flow = F0}} ->
            case falco_quic_flow:stream_data_blocked(F0) of
                {N, F} -> {[{{stream_data_blocked, Id, N}, blocked} | Acc],
                           S#streams{map = M#{Id => St#st{flow = F}}}};
                none -> {Acc, S}
            end;
        #{} ->
            {Acc, S}
    end.

%% @doc STREAM frames that fit in `Room' bytes in all, each built and with
%% its info(): lost data first, then new data round-robin over the
%% streams, within the peer's credit. `Used' is their size.
-spec take(non_neg_integer(), streams()) ->
          {[{iodata(), info()}], non_neg_integer(), streams()}.
take(Room, S0) ->
    {Acc1, Room1, S1} = take_retx(Room, [], S0),
    {Acc2, Room2, S2} = take_new(Room1, Acc1, S1),
    {lists:reverse(Acc2), Room - Room2, sweep(S2)}.

take_retx(Room, Acc, S = #streams{retx = Q0, map = M}) when Room >= ?MIN_ROOM ->
    case queue:out(Q0) of
        {{value, Id}, Q} when is_map_key(Id, M) ->
            retx_frame(maps:get(Id, M), Room, Acc, S#streams{retx = Q});
        {{value, _}, Q} -> take_retx(Room, Acc, S#streams{retx = Q});
        {empty, _} -> {Acc, Room, S}
    end;
take_retx(Room, Acc, S) ->
    {Acc, Room, S}.

retx_frame(St = #st{id = Id, lost = Lost0, in_flight = N0}, Room, Acc, S = #streams{retx = Q}) ->
    {Off, {Bin, Fin}, Lost1} = gb_trees:take_smallest(Lost0),
    case falco_quic_frame:stream_fit(Id, Off, Fin, Bin, Room) of
        none ->
            {Acc, Room, S#streams{retx = queue:in_r(Id, Q)}};
        {Frame, Size, Rest, Sent} ->
            N = byte_size(Bin) - byte_size(Rest),
            Lost = case Rest of <<>> -> Lost1; _ -> gb_trees:enter(Off + N, {Rest, Fin}, Lost1) end,
            Info = {stream, Id, Off, binary:part(Bin, 0, N), Sent},
            Empty = gb_trees:is_empty(Lost),
            St1 = St#st{lost = Lost, in_flight = N0 + 1, in_retx = not Empty},
            S1 = S#streams{map = (S#streams.map)#{Id => St1},
                           retx = case Empty of true -> Q; false -> queue:in_r(Id, Q) end},
            take_retx(Room - Size, [{Frame, Info} | Acc], S1)
    end.

take_new(Room, Acc, S = #streams{ready = Q0, map = M}) when Room >= ?MIN_ROOM ->
    case queue:out(Q0) of
        {{value, Id}, Q} when is_map_key(Id, M) ->
            new_frame((maps:get(Id, M))#st{where = none}, Room, Acc, S#streams{ready = Q});
        {{value, _}, Q} -> take_new(Room, Acc, S#streams{ready = Q});
        {empty, _} -> {Acc, Room, S}
    end;
take_new(Room, Acc, S) ->
    {Acc, Room, S}.

new_frame(St = #st{id = Id}, Room, Acc, S = #streams{conn = C}) ->
    case sendable(St, C) =:= ready andalso cut(St, Room, C) of
        false ->
            take_new(Room, Acc, schedule(St, S));
        none ->
            {Acc, Room, S#streams{ready = queue:in_r(Id, S#streams.ready)}};
        {Frame, Size, Info, St1, C1} ->
            take_new(Room - Size, [{Frame, Info} | Acc], schedule(St1, S#streams{conn = C1}))
    end.

%% The next frame of new data (or the FIN alone) of a stream, in Room.
cut(St = #st{id = Id, flow = F, tx = closing, unsent = 0, in_flight = N}, Room, C) ->
    Off = falco_quic_flow:sent_bytes(F),
    case falco_quic_frame:stream_fit(Id, Off, fin, <<>>, Room) of
        none -> none;
        {Frame, Size, _, fin} -> {Frame, Size, {stream, Id, Off, <<>>, fin},
                                  St#st{tx = fin_sent, in_flight = N + 1}, C}
    end;
cut(St = #st{id = Id, flow = F0, queue = Q0, unsent = U, tx = Tx, in_flight = N0}, Room, C0) ->
    Off = falco_quic_flow:sent_bytes(F0),
    %% the most data after the frame's type, ID, offset and length
    Max = Room - 1 - falco_quic_varint:size(Id)
        - case Off of 0 -> 0; _ -> falco_quic_varint:size(Off) end,
    case min(falco_quic_flow:allowance(F0, C0), Max - falco_quic_varint:size(max(Max, 0))) of
        Want when Want > 0 ->
            {Data, Q1} = gather(Want, Q0),
            Fin = case Tx =:= closing andalso queue:is_empty(Q1) of true -> fin; false -> nofin end,
            case falco_quic_frame:stream_fit(Id, Off, Fin, Data, Room) of
                none ->
                    none;
                {Frame, Size, Rest, Sent} ->
                    N = byte_size(Data) - byte_size(Rest),
                    Q = case Rest of <<>> -> Q1; _ -> queue:in_r(Rest, Q1) end,
                    {F, C} = falco_quic_flow:sent(N, F0, C0),
                    St1 = St#st{flow = F, queue = Q, unsent = U - N, in_flight = N0 + 1,
                                tx = case Sent of fin -> fin_sent; nofin -> Tx end},
                    {Frame, Size, {stream, Id, Off, binary:part(Data, 0, N), Sent}, St1, C}
            end;
        _ ->
            none
    end.

%% Up to Want bytes off the front of the queue: a sub-binary of its first
%% binary, or a copy of the small binaries it takes.
gather(Want, Q0) ->
    {{value, Bin}, Q} = queue:out(Q0),
    case byte_size(Bin) of
        Size when Size > Want ->
            <<Part:Want/binary, Rest/binary>> = Bin,
            {Part, queue:in_r(Rest, Q)};
        Size ->
            gather(Want - Size, Q, [Bin])
    end.

gather(0, Q, Acc) ->
    {iolist_to_binary(lists:reverse(Acc)), Q};
gather(Want, Q0, Acc) ->
    case queue:out(Q0) of
        {empty, Q} ->
            {iolist_to_binary(lists:reverse(Acc)), Q};
        {{value, Bin}, Q} when byte_size(Bin) > Want ->
            <<Part:Want/binary, Rest/binary>> = Bin,
            {iolist_to_binary(lists:reverse(Acc, [Part])), queue:in_r(Rest, Q)};
        {{value, Bin}, Q} ->
            gather(Want - byte_size(Bin), Q, [Bin | Acc])
    end.

%% With the connection's credit used up, the streams still in line that
%% can only send data wait off it (only a FIN alone can go).
sweep(S = #streams{conn = C, ready = Q}) ->
    case queue:is_empty(Q) orelse conn_room(C) > 0 of
        true -> S;
        false -> reschedule(queue:to_list(Q), ready, S#streams{ready = queue:new()})
    end.

%% -- acknowledgements and losses ----------------------------------------------

%% @doc The packet that carried `Info' was acknowledged.
-spec acked(info(), streams()) -> {[event()], streams()}.
acked({stream, Id, _, _, Fin}, S = #streams{map = M}) ->
    case M of
        #{Id := St = #st{in_flight = N, fin_acked = Acked}} ->
            St1 = St#st{in_flight = erlang:max(N - 1, 0), fin_acked = Acked orelse Fin =:= fin},
            {[], store(tx_done(St1), S)};
        #{} ->
            {[], S}
    end;
acked({reset_stream, Id, _, _}, S = #streams{map = M}) ->
    case M of
        #{Id := St = #st{tx = reset}} -> {[], store(St#st{tx = done}, S)};
        #{} -> {[], S}
    end;
acked(_, S) ->
    {[], S}.

tx_done(St = #st{tx = fin_sent, fin_acked = true, in_flight = 0, lost = Lost}) ->
    case gb_trees:is_empty(Lost) of true -> St#st{tx = done}; false -> St end;
tx_done(St) ->
    St.

%% @doc The packet that carried `Info' was declared lost: its data is sent
%% again, its RESET_STREAM or STOP_SENDING queued again, its MAX_* frame
%% sent again with the current value; BLOCKED frames are not.
-spec lost(info(), streams()) -> streams().
lost({stream, Id, Off, Bin, Fin}, S = #streams{map = M}) ->
    case M of
        #{Id := St = #st{tx = Tx, in_flight = N, in_retx = In}}
          when Tx =:= open; Tx =:= closing; Tx =:= fin_sent ->
            St1 = St#st{lost = requeue(Off, Bin, Fin, St#st.lost), in_flight = max(N - 1, 0),
                        in_retx = true},
            store(St1, case In of
                           true -> S;
                           false -> S#streams{retx = queue:in(Id, S#streams.retx)}
                       end);
        #{Id := St = #st{in_flight = N}} ->
            store(St#st{in_flight = erlang:max(N - 1, 0)}, S);
        #{} ->
            S
    end;
lost(Frame = {reset_stream, Id, _, _}, S) ->
    again(Frame, case S#streams.map of #{Id := #st{tx = reset}} -> true; #{} -> false end, S);
lost(Frame = {stop_sending, Id, _}, S) ->
    again(Frame, case S#streams.map of #{Id := #st{rx = stopped}} -> true; #{} -> false end, S);
lost(max_data, S) ->
    S#streams{max_data_lost = true};
lost({max_stream_data, Id}, S = #streams{credit = Credit}) ->
    S#streams{credit = Credit#{Id => lost}};
lost({max_streams, Dir}, S = #streams{max_streams_lost = Lost}) ->
    S#streams{max_streams_lost = [Dir | lists:delete(Dir, Lost)]};
lost(blocked, S) ->
    S.

%% A lost RESET_STREAM or STOP_SENDING queued again while still of use.
again(Frame, true, S = #streams{ctl = Ctl}) -> S#streams{ctl = [Frame | Ctl]};
again(_, false, S) -> S.

%% A lost range back in line, by offset (the longer one if two start there).
requeue(Off, Bin, Fin, Lost) ->
    case gb_trees:lookup(Off, Lost) of
        {value, {Held, _}} when byte_size(Held) >= byte_size(Bin) -> Lost;
        _ -> gb_trees:enter(Off, {Bin, Fin}, Lost)
    end.

%% -- reading ------------------------------------------------------------------

%% @doc The streams held.
-spec active(streams()) -> non_neg_integer().
active(#streams{map = M}) ->
    map_size(M).

%% @doc Counts and buffered bytes, for introspection.
-spec info(streams()) -> map().
info(#streams{map = M, conn = C, bidi = B, uni = U, ready = Ready, retx = Retx}) ->
    Sum = fun(F) -> lists:sum([F(St) || St <- maps:values(M)]) end,
    #{streams => map_size(M), ready => queue:len(Ready), retransmitting => queue:len(Retx),
      client_bidi_opened => falco_quic_stream_limit:peer_opened(B),
      client_uni_opened => falco_quic_stream_limit:peer_opened(U),
      server_uni_opened => falco_quic_stream_limit:local_opened(U),
      recv_buffered => Sum(fun(#st{reasm = undefined}) -> 0;
                              (#st{reasm = R}) -> falco_quic_reasm:buffered(R)
                           end),
      send_queued => Sum(fun(#st{unsent = Q}) -> Q end),
      retransmit_queued => Sum(fun(#st{lost = L}) ->
                                       lists:sum([byte_size(P) || {P, _} <- gb_trees:values(L)])
                               end),
      data_received => falco_quic_flow:received(C), data_sent => falco_quic_flow:sent_bytes(C)}.
