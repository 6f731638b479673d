%% @doc The sending half of {@link falco_http2_machine}: response heads,
%% DATA and trailers on their way out, within the client's flow-control
%% windows (RFC 9113 §5.2, §6.9) and frame size (§4.2).
%%
%% Pure, and private to the machine: it works on the machine's state (the
%% records in falco_http2_machine.hrl) and adds actions to it; it never
%% calls the machine (a stream whose queue it empties is noted in
%% `settled' for the machine to close if both sides are done). DATA waits
%% for both the stream's and the connection's send window and is cut to the
%% client's SETTINGS_MAX_FRAME_SIZE; what does not fit stays in the stream's
%% queue, the stream joins the blocked list (in order) with a stall timer,
%% and a window update flushes the blocked streams. Field blocks are HPACK
%% encoded when their frame is queued, never earlier, so trailers waiting
%% behind data keep the encoder in the order the client decodes.
%%
%% Window dribbling (a client giving a byte of window now and then, to
%% hold streams and their handlers) is bounded twice. A queued piece is
%% not cut into DATA frames smaller than 16 KB because the window is
%% short: the rest of a piece goes out once it fits (a small piece, an SSE
%% event, at once), a cut only once 16 KB fit, or half the client's
%% SETTINGS_INITIAL_WINDOW_SIZE if that is smaller (a client that reads
%% always gives back at least that much, so it is never deadlocked; h2spec
%% §6.9 uses windows of 1 to 3 bytes). And the stall timer is not restarted
%% by progress, nor stopped by a moment with nothing queued: at each
%% `send_timeout' a stream with data queued must have sent `send_min_rate'
%% bytes per second since the last one, or it is reset (see stalled/2).
%%
%% @private internal to falco
-module(falco_http2_flow).

-export([headers/5, inform/3, data/5, trailers/4, flush_stream/2, flush_blocked/1, stalled/2,
         queued/1]).

-include("falco_http2_machine.hrl").

%% The smallest DATA frame a queued piece is cut into when the window is
%% short (the smallest SETTINGS_MAX_FRAME_SIZE, §4.2): see flush_stream/2.
-define(MIN_SEND, 16384).

%% @doc Queues the response head of stream `Id' (`fin': no body follows).
-spec headers(stream_id(), 100..999, headers(), fin(), #m{}) -> #m{}.
headers(Id, Status, Headers, Fin, M = #m{streams = Streams, rare = #rare{closing = false}}) ->
    case Streams of
        #{Id := S = #stream{local = idle}} ->
            M1 = encode(Id, [{<<":status">>, status(Status)} | Headers], Fin, M),
            after_send(S#stream{local = local_state(Fin)}, M1);
        #{} ->
            M
    end;
headers(_, _, _, _, M) ->
    M.

%% @doc Queues an interim (1xx) response head.
-spec inform(stream_id(), 100..199, #m{}) -> #m{}.
inform(Id, Status, M = #m{streams = Streams, rare = #rare{closing = false}}) ->
    case Streams of
        #{Id := #stream{local = idle}} -> encode(Id, [{<<":status">>, status(Status)}], nofin, M);
        #{} -> M
    end;
inform(_, _, M) ->
    M.

status(200) -> <<"200">>;
status(Status) -> integer_to_binary(Status).

local_state(fin) -> fin;
local_state(nofin) -> open.

encode(Id, Fields, Fin, M = #m{encoder = Enc0, rare = #rare{remote_max_frame = Max}, out = Out}) ->
    {Block, Enc} = falco_hpack:encode(Fields, Enc0),
    %% send/2 inlined by hand: one copy of the record per head, not two
    M#m{encoder = Enc, out = [?SEND(falco_http2_frame:header_block(Id, Fin, Block, Max)) | Out]}.

%% @doc Queues body data; `{reply, Tag, ok}' once all of it is out.
-spec data(stream_id(), iodata(), fin(), tag(), #m{}) -> #m{}.
data(Id, Data, Fin, Tag, M = #m{streams = Streams, rare = #rare{closing = false}}) ->
    case Streams of
        #{Id := S = #stream{local = open, queue = Q}} ->
            Item = {data, Data, iolist_size(Data), Fin, Tag},
            flush_stream(S#stream{queue = Q ++ [Item], local = local_state(Fin)}, M);
        #{} ->
            reply(Tag, {error, closed}, M)
    end;
data(_, _, _, Tag, M) ->
    reply(Tag, {error, closed}, M).

%% @doc Queues trailer fields, ending the stream after any queued data.
-spec trailers(stream_id(), headers(), tag(), #m{}) -> #m{}.
trailers(Id, Fields, Tag, M = #m{streams = Streams, rare = #rare{closing = false}}) ->
    case Streams of
        #{Id := S = #stream{local = open, queue = Q}} ->
            flush_stream(S#stream{queue = Q ++ [{trailers, Fields, Tag}], local = fin}, M);
        #{} ->
            reply(Tag, {error, closed}, M)
    end;
trailers(_, _, Tag, M) ->
    reply(Tag, {error, closed}, M).

%% @doc The response bytes queued for the client's windows, over every
%% stream.
-spec queued(#m{}) -> non_neg_integer().
queued(#m{streams = Streams}) ->
    maps:fold(fun(_, #stream{queue = Q}, Acc) ->
                      lists:foldl(fun({data, _, Size, _, _}, N) -> N + Size;
                                     ({trailers, _, _}, N) -> N
                                  end, Acc, Q)
              end, 0, Streams).

%% @doc Writes what the windows allow from the stream's queue.
-spec flush_stream(#stream{}, #m{}) -> #m{}.
flush_stream(S = #stream{queue = []}, M) ->
    after_send(S, M);
flush_stream(S = #stream{id = Id, queue = [{trailers, Fields, Tag} | Q]}, M0) ->
    M = reply(Tag, ok, encode(Id, Fields, fin, M0)),
    flush_stream(S#stream{queue = Q}, M);
flush_stream(S = #stream{id = Id, queue = [{data, _, 0, Fin, Tag} | Q]}, M0) ->
    M1 = case Fin of
             fin -> send(falco_http2_frame:data(Id, fin, <<>>), M0);
             nofin -> M0
         end,
    flush_stream(S#stream{queue = Q}, reply(Tag, ok, M1));
flush_stream(S = #stream{id = Id, send_window = SW, sent = Sent,
                         queue = [{data, Data, Size, Fin, Tag} | Q]},
             M0 = #m{conn_send = CW, out = Out,
                     rare = #rare{remote_max_frame = MaxFrame, remote_window = RW}}) ->
    N = min(min(SW, CW), MaxFrame),
    if
        Size =< N ->
            %% send/2 inlined by hand: one copy of the record per frame
            M1 = M0#m{conn_send = CW - Size,
                      out = [?SEND(falco_http2_frame:data(Id, Fin, Data)) | Out]},
            flush_stream(S#stream{send_window = SW - Size, sent = Sent + Size, queue = Q},
                         reply(Tag, ok, M1));
        N > 0, N >= ?MIN_SEND; N > 0, N >= RW div 2 ->
            <<Part:N/binary, Rest/binary>> = iolist_to_binary(Data),
            M1 = send(falco_http2_frame:data(Id, nofin, Part), M0#m{conn_send = CW - N}),
            flush_stream(S#stream{send_window = SW - N, sent = Sent + N,
                                  queue = [{data, Rest, Size - N, Fin, Tag} | Q]}, M1);
        true ->
            block(S, M0)
    end.

%% A stream waiting for window: remembered in order, with a stall timer
%% that progress does not restart, nor a moment with nothing queued (the
%% end of a small piece let through just before the handler queues the
%% next): see stalled/2.
block(S = #stream{id = Id, sent = Sent, stall = Stall}, M0 = #m{blocked = Blocked}) ->
    M = case lists:member(Id, Blocked) of
            true -> M0;
            false -> M0#m{blocked = Blocked ++ [Id]}
        end,
    case Stall of
        true -> put_stream(S, M);
        false -> put_stream(S#stream{stall = true, sent_mark = Sent},
                            act({timer, {stall, Id}, send_timeout(M)}, M))
    end.

send_timeout(#m{rare = #rare{opts = #{send_timeout := T}}}) -> T.

%% @doc The stall timer of a stream expired. With nothing queued the
%% stream waits for its handler, not for the client: `continue', the timer
%% stopped. Otherwise `continue' (the timer armed again) if the client let
%% at least `send_min_rate' bytes per second through since it started, and
%% at least one byte; `reset' if not.
-spec stalled(#stream{}, #m{}) -> {continue, #m{}} | reset.
stalled(S = #stream{queue = []}, M) ->
    {continue, put_stream(S#stream{stall = false}, M)};
stalled(S = #stream{id = Id, sent = Sent, sent_mark = Mark},
        M = #m{rare = #rare{opts = #{send_timeout := Timeout, send_min_rate := Rate}}}) ->
    case Sent - Mark >= max(1, Rate * Timeout div 1000) of
        true -> {continue, put_stream(S#stream{sent_mark = Sent},
                                      act({timer, {stall, Id}, Timeout}, M))};
        false -> reset
    end.

after_send(S = #stream{id = Id, queue = []},
           M0 = #m{blocked = Blocked, settled = Settled, streams = Streams}) ->
    %% The stall timer, if it runs, runs on (see block/2). put_stream/2
    %% inlined by hand: one copy of the record, not two.
    M0#m{settled = [Id | Settled], blocked = lists:delete(Id, Blocked),
         streams = Streams#{Id => S}};
after_send(S, M) ->
    put_stream(S, M).

%% @doc After a window grew: flushes the blocked streams, oldest first,
%% while the connection window lasts.
-spec flush_blocked(#m{}) -> #m{}.
flush_blocked(M = #m{blocked = []}) ->
    M;
flush_blocked(M = #m{blocked = Blocked}) ->
    lists:foldl(fun(Id, Acc = #m{streams = Streams, conn_send = CW}) when CW > 0 ->
                        case Streams of
                            #{Id := S} -> flush_stream(S, Acc);
                            #{} -> Acc
                        end;
                   (_, Acc) ->
                        Acc
                end, M, Blocked).
