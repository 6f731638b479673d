%% Records and state helpers shared by falco_http2_machine (frames in,
%% connection state), falco_http2_flow (frames out: send queues and
%% windows), falco_http2_recv (request bodies held until read, receive
%% windows), falco_http2_goaway (GOAWAY, drain, idle) and
%% falco_http2_budget (flood budgets). Private to those modules. The
%% machine calls the others, never the reverse: flow
%% notes the streams whose sends are done in `settled', and the machine
%% decides whether they close.

-define(MAX_WINDOW, 16#7fffffff).
-define(DEFAULT_WINDOW, 65535).
%% The PING of a drain, whose answer sends the final GOAWAY
%% (falco_http2_goaway).
-define(DRAIN_PING, <<"falcodrn">>).

-type stream_id() :: pos_integer().
-type fin() :: fin | nofin.
-type headers() :: [{binary(), binary()}].
-type tag() :: term().

-type action() :: {send, iodata()}
                | {request, stream_id(), map() | {error, falco_errors:reason(), binary() | undefined}}
                | {data, stream_id(), falco_http2_buffer:pieces(), fin()}
                | {trailers, stream_id(), headers()}
                | {reset, stream_id(), term()}
                | {reply, tag(), ok | {error, term()}}
                | {timer, term(), timeout()}
                | {cancel_timer, term()}
                | {close, term()}.

-record(stream, {id :: stream_id(),
                 remote = open :: open | fin,
                 local = idle :: idle | open | fin,
                 send_window :: integer(),
                 recv_window :: integer(),
                 unacked = 0 :: non_neg_integer(),
                 expected :: undefined | non_neg_integer(),
                 received = 0 :: non_neg_integer(),
                 lingering = false :: boolean(),
                 %% an extended CONNECT (RFC 8441): its DATA is a
                 %% WebSocket's bytes, not a request body
                 tunnel = false :: boolean(),
                 %% request body received and not yet handed to the stream's
                 %% process (a few bytes of memory per body byte, whatever
                 %% the frame sizes), the read it asked for (0: none
                 %% pending), trailers not yet handed over, and whether
                 %% anybody will read (a stream whose process ended drops
                 %% its body)
                 buf = falco_http2_buffer:new() :: falco_http2_buffer:buffer(),
                 want = 0 :: non_neg_integer(),
                 %% the reader takes DATA as it comes, up to `want', without
                 %% asking again (a tunnel's credit, falco_http2_tunnel)
                 standing = false :: boolean(),
                 trailers :: undefined | headers(),
                 reader = true :: boolean(),
                 queue = [] :: [out()],
                 %% response DATA bytes sent, whether the stall timer runs,
                 %% and how many bytes were sent when it last started
                 %% (falco_http2_flow)
                 sent = 0 :: non_neg_integer(),
                 stall = false :: boolean(),
                 sent_mark = 0 :: non_neg_integer()}).

-type out() :: {data, iodata(), non_neg_integer(), fin(), tag()}
             | {trailers, headers(), tag()}.

%% The fields of the machine that change rarely (settings, how the
%% connection ends, a field block spread over CONTINUATION frames, the
%% flood counters) or never (the options): kept apart from those that
%% change with every request, so that each copy of #m{} (about 17 per
%% h2c request) is 15 words instead of 31.
-record(rare, {opts :: map(),
               preface = false :: boolean(),
               closing = false :: boolean(),
               peer_goaway = false :: boolean(),
               goaway_sent = false :: boolean(),
               %% a graceful drain (falco_http2_machine:drain/1): `first' once
               %% the GOAWAY with the largest id is out, `final' once the one
               %% with the last stream we took is
               draining = false :: false | first | final,
               %% settings
               pending_local = [] :: [map()],
               local_window = ?DEFAULT_WINDOW :: non_neg_integer(),
               remote_window = ?DEFAULT_WINDOW :: non_neg_integer(),
               remote_max_frame = 16384 :: 16384..16777215,
               %% the largest the connection's send window has been: a
               %% WINDOW_UPDATE that refills it towards this gives back
               %% credit for data we sent (falco_http2_budget)
               conn_send_high = ?DEFAULT_WINDOW :: integer(),
               block :: undefined | {stream_id(), fin(), term(), [binary()], non_neg_integer(),
                                     non_neg_integer()},
               %% flood counters for the current window
               counts = #{} :: #{atom() => non_neg_integer()}}).

-record(m, {rare :: #rare{},
            %% connection flow control
            conn_send = ?DEFAULT_WINDOW :: integer(),
            conn_recv :: integer(),
            %% what the connection window is topped up to: the configured
            %% size, grown with the stream windows handlers ask for
            conn_target :: integer(),
            %% streams
            streams = #{} :: #{stream_id() => #stream{}},
            last_id = 0 :: non_neg_integer(),
            %% how the streams no longer open closed, as far as remembered
            closed = falco_http2_closed:new() :: falco_http2_closed:closed(),
            blocked = [] :: [stream_id()],
            %% HPACK
            decoder :: falco_hpack:ctx(),
            encoder :: falco_hpack:ctx(),
            idle = false :: boolean(),
            %% streams whose queued sends flow has finished, newest first
            settled = [] :: [stream_id()],
            %% streams with a read pending and something new for it, newest
            %% first: answered by deliver_ready/1, once per socket read
            ready = [] :: [stream_id()],
            out = [] :: [action()]}).

%% -- state helpers, one definition for every module --------------------------

%% The action that writes `Data' (send/2, and the updates that fold it in
%% with others to copy the record once).
-define(SEND(Data), {send, Data}).

%% (a module that needs no helper defines FALCO_H2_NO_PUT_STREAM or
%% FALCO_H2_NO_REPLY before it includes this file, or FALCO_H2_RECORDS_ONLY
%% for none of them)
-ifndef(FALCO_H2_RECORDS_ONLY).
-ifndef(FALCO_H2_NO_PUT_STREAM).
put_stream(S = #stream{id = Id}, M = #m{streams = Streams}) ->
    M#m{streams = Streams#{Id => S}}.
-endif.

send(Data, M = #m{out = Out}) ->
    M#m{out = [?SEND(Data) | Out]}.

act(Action, M = #m{out = Out}) ->
    M#m{out = [Action | Out]}.

-ifndef(FALCO_H2_NO_REPLY).
reply(none, _, M) -> M;
reply(Tag, Result, M) -> act({reply, Tag, Result}, M).
-endif.
-endif.
