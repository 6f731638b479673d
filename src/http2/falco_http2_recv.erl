%% @doc The receiving half of {@link falco_http2_machine} (RFC 9113 §6.9):
%% request bodies held until their stream's process asks for them, and the
%% receive windows: given back as bodies are handed over, grown with what
%% handlers ask to read. Pure, on the machine's state; the machine calls it,
%% never the reverse (as {@link falco_http2_flow}, the sending half).
%%
%% Each stream's body waits in a {@link falco_http2_buffer} until the
%% stream's process sends `{read, Want}'; the answer is one action of at
%% most `Want' bytes, at once if anything is held, else once the frames of
%% the current socket read are all in (`deliver_ready/1'), so a client's
%% frame sizes never decide how many messages and binaries the server keeps
%% (1-byte DATA frames cost 168 bytes each as messages, 2026-11-24).
%%
%% Windows: the connection window is given back as soon as data arrives,
%% since the stream windows bound what a client can make us hold; a stream
%% window is given back as its body is handed over. A read grows it, to
%% what the handler asked for and for a request body to at least
%% ?READ_AHEAD (or what is left of a declared length), as long as the sum
%% over the connection's streams of what is held, what their windows let
%% the client send and what is about to be given back stays within
%% `max_receive_buffer'; the
%% connection window grows with them. A read grows the window before it is
%% answered, and nothing is given back while the window already covers
%% what is left of a declared length.
%%
%% @private internal to falco
-module(falco_http2_recv).

-export([conn_received/2, received/3, ready/2, deliver_ready/1, read/3, give_back/3,
         prefetch/3]).

-define(FALCO_H2_NO_REPLY, true).
-include("falco_http2_machine.hrl").

%% How far ahead of a reader the client may send, at least: a handler
%% reading a body in pieces would otherwise hold the client to one piece
%% per round trip (a WINDOW_UPDATE for each, the client waiting between
%% them), where HTTP/1.1 has the kernel's socket buffer. 20 MB uploads
%% read in 64 KB pieces, h2load -c8 (2026-11-29, server CPU per upload,
%% 2 rounds): the piece alone 30.7-31.8 ms (30-32 uploads/s), 256 KB
%% 26.3-27.4, 512 KB 22.1-22.4, 1 MB 18.6-24.3 (41-53/s), 2 MB 20.1-20.9;
%% HTTP/1.1 with the same client 15.1-19.6 ms (48-65/s). Within
%% max_receive_buffer, as every window beyond the initial one.
-define(READ_AHEAD, 1048576).

%% @doc `Size' bytes of DATA (padding included) arrived on the connection.
-spec conn_received(non_neg_integer(), #m{}) -> #m{}.
conn_received(Size, M = #m{conn_recv = Window, conn_target = Target}) ->
    case Window - Size of
        W when W < Target div 2 ->
            send(falco_http2_frame:window_update(0, Target - W), M#m{conn_recv = Target});
        W ->
            M#m{conn_recv = W}
    end.

%% @doc Body bytes for stream `S' (already counted against its window), a
%% frame's or a run's: they are held unless nobody will read them (copied
%% out of the socket read they came in unless they are most of it, see
%% falco_http2_buffer:add_cut/2).
-spec received(falco_http2_buffer:pieces(), #stream{}, #m{}) -> {#stream{}, #m{}}.
received(_, S = #stream{reader = false}, M) ->
    {S, M};
received(Data, S = #stream{buf = Buf}, M) ->
    S1 = S#stream{buf = falco_http2_buffer:add_cut(Data, Buf)},
    {S1, ready(S1, M)}.

%% @doc Stream `S' has something new (body, trailers or its end): if its
%% process waits, it is answered by the next deliver_ready/1.
-spec ready(#stream{}, #m{}) -> #m{}.
ready(#stream{want = 0}, M) -> M;
ready(#stream{id = Id}, M = #m{ready = [Id | _]}) -> M;
ready(#stream{id = Id}, M = #m{ready = Ready}) -> M#m{ready = [Id | Ready]}.

%% @doc Answers the reads of the streams made ready since the last call.
-spec deliver_ready(#m{}) -> #m{}.
deliver_ready(M = #m{ready = []}) ->
    M;
deliver_ready(M0 = #m{ready = Ready}) ->
    lists:foldr(fun(Id, M1 = #m{streams = Streams}) ->
                        case Streams of
                            #{Id := S0} ->
                                {S, M2} = deliver(S0, M1),
                                put_stream(S, M2);
                            #{} ->
                                M1
                        end
                end, M0#m{ready = []}, Ready).

%% @doc Just before the process of stream `Id' starts (the connection
%% starts the streams whose HEADERS came in a socket read once all of its
%% frames are in): `gone' if the stream was reset meanwhile (a rapid reset
%% in the same read: no process is started for it); else `{Body, M}',
%% where `Body' is the whole request body, taken out of the machine, when
%% the client has sent all of it (END_STREAM, no trailers) and it is 1 to
%% `Max' bytes, so the process starts with it and asks for nothing; or
%% `none'.
-spec prefetch(stream_id(), non_neg_integer(), #m{}) -> gone | {binary() | none, #m{}}.
prefetch(Id, Max, M = #m{streams = Streams}) ->
    case Streams of
        #{Id := S = #stream{remote = fin, trailers = undefined, want = 0, reader = true,
                            buf = Buf}} ->
            case falco_http2_buffer:size(Buf) of
                Size when Size > 0, Size =< Max ->
                    {falco_http2_buffer:to_binary(Buf),
                     put_stream(S#stream{buf = falco_http2_buffer:new()}, M)};
                _ ->
                    {none, M}
            end;
        #{Id := _} ->
            {none, M};
        #{} ->
            gone
    end.

%% @doc The process of stream `Id' asks for up to `Want' bytes, or grants
%% `N' more to be handed over as they come (`{grant, N}', a tunnel's
%% credit): answered now if anything is held; the stream window grows
%% towards what is wanted.
-spec read(stream_id(), pos_integer() | {grant, pos_integer()}, #m{}) -> #m{}.
read(Id, Read, M = #m{streams = Streams}) ->
    case Streams of
        #{Id := S0} ->
            S = #stream{want = Want} = wants(Read, S0),
            {S1, M1} = grow(S, Want, M),
            {S2, M2} = deliver(S1, M1),
            put_stream(S2, M2);
        #{} ->
            act({data, Id, <<>>, fin}, M)
    end.

%% A read replaces what was asked (it is answered once); a grant adds to
%% the credit, which stands until spent (see deliver/2).
wants({grant, N}, S = #stream{want = Want}) -> S#stream{want = Want + N, standing = true};
wants(Want, S) -> S#stream{want = Want}.

%% Hands the stream's process what it asked for, if there is anything:
%% body bytes (at most the read's size), then the trailers, or the end.
%% The bytes handed over are given back to the stream window.
deliver(S = #stream{want = 0}, M) ->
    {S, M};
deliver(S = #stream{id = Id, buf = Buf, want = Want, remote = Remote, trailers = Fields}, M) ->
    case falco_http2_buffer:size(Buf) of
        0 when Remote =:= open ->
            {S, M};
        0 when Fields =/= undefined ->
            {S#stream{want = 0, trailers = undefined}, act({trailers, Id, Fields}, M)};
        0 ->
            {S#stream{want = 0}, act({data, Id, <<>>, fin}, M)};
        _ ->
            {Give, Keep} = falco_http2_buffer:take(Want, Buf),
            Fin = case falco_http2_buffer:size(Keep) =:= 0 andalso Remote =:= fin
                      andalso Fields =:= undefined of
                      true -> fin;
                      false -> nofin
                  end,
            Size = iolist_size(Give),
            {S1, M1} = handed_over(S#stream{buf = Keep, want = left(S, Size)}, Size, M),
            {S1, act({data, Id, Give, Fin}, M1)}
    end.

%% What a reader still wants once `N' bytes are handed over: nothing after
%% a read, the rest of a standing credit.
left(#stream{standing = true, want = Want}, N) -> Want - N;
left(_, _) -> 0.

%% Body bytes handed over go back to the stream window, unless the client
%% has sent all of it, or the window already covers what is left of a
%% declared length: an update then would only be one more frame and one
%% more write (a 1 MB upload took four updates, 2026-11-28).
handed_over(S = #stream{remote = open, expected = Expected, received = Received,
                        recv_window = Window}, N, M)
  when Expected =:= undefined; Expected - Received > Window ->
    give_back(S, N, M);
handed_over(S, _, M) ->
    {S, M}.

%% Before the read is answered, the stream window grows to what the reader
%% wants beyond what is held, and for a request body at least ?READ_AHEAD
%% (or to what is left of a declared length), if the connection can hold
%% it. The connection window follows.
grow(S = #stream{remote = open, reader = true, id = Id, recv_window = Window, buf = Buf,
                 unacked = Unacked, expected = Expected, received = Received, tunnel = Tunnel},
     Want, M = #m{rare = #rare{opts = #{max_receive_buffer := Cap}}}) ->
    Buffered = falco_http2_buffer:size(Buf),
    Ahead = case Tunnel of
                %% a WebSocket session reads as its handler takes messages:
                %% one that stops holds the client to the window it asked
                false -> max(Want, ?READ_AHEAD) - Buffered;
                true -> Want - Buffered
            end,
    Target = case Expected of
                 undefined -> Ahead;
                 _ -> min(Ahead, Expected - Received)
             end,
    Coming = max(Window, 0) + Unacked,
    Committed = committed(maps:remove(Id, M#m.streams)) + Coming + Buffered,
    case min(Target - Coming, min(Cap - Committed, ?MAX_WINDOW - Window)) of
        Inc when Inc > 0 ->
            M1 = send(falco_http2_frame:window_update(Id, Inc), M),
            {S#stream{recv_window = Window + Inc}, grow_connection(Committed + Inc, M1)};
        _ ->
            {S, M}
    end;
grow(S, _, M) ->
    {S, M}.

%% What the streams hold, may be sent and are about to give back.
committed(Streams) ->
    maps:fold(fun(_, #stream{remote = open, recv_window = W, buf = B, unacked = U}, Sum) ->
                      Sum + max(W, 0) + falco_http2_buffer:size(B) + U;
                 (_, #stream{buf = B}, Sum) ->
                      Sum + falco_http2_buffer:size(B)
              end, 0, Streams).

%% The connection window is raised to cover what the streams may send, up
%% to max_receive_buffer; it never goes below its configured size.
grow_connection(Committed, M = #m{conn_target = Target, conn_recv = Window,
                                  rare = #rare{opts = #{max_receive_buffer := Cap}}}) ->
    case min(Committed, Cap) - Target of
        Inc when Inc > 0, Window + Inc =< ?MAX_WINDOW ->
            send(falco_http2_frame:window_update(0, Inc),
                 M#m{conn_target = Target + Inc, conn_recv = Window + Inc});
        _ ->
            M
    end.

%% @doc `N' bytes of stream `S' were handed over (or were padding): they are
%% given back in updates of at least half the initial window, or a quarter
%% of the stream's whole window once it has grown (a 10 MB upload through
%% an 8 MB window took 300 updates, and as many writes, at 32 KB each,
%% 2026-11-24); at once when the client's window is spent.
-spec give_back(#stream{}, non_neg_integer(), #m{}) -> {#stream{}, #m{}}.
give_back(S = #stream{unacked = Unacked0, recv_window = Window, id = Id, buf = Buf}, N,
          M = #m{rare = #rare{opts = #{initial_window_size := Target}}}) ->
    Threshold = max(Target div 2, (Window + falco_http2_buffer:size(Buf) + Unacked0 + N) div 4),
    case Unacked0 + N of
        Unacked when Unacked > 0, Unacked >= Threshold; Unacked > 0, Window =< 0 ->
            {S#stream{unacked = 0, recv_window = Window + Unacked},
             send(falco_http2_frame:window_update(Id, Unacked), M)};
        Unacked ->
            {S#stream{unacked = Unacked}, M}
    end.
