%% @doc One HTTP/2 connection (RFC 9113): a thin process around the pure
%% {@link falco_http2_machine}.
%%
%% It reads the socket in `{active, N}' mode, because it must also receive
%% messages from its stream processes, cuts the bytes into frames with
%% {@link falco_http2_frame} (a run of large DATA frames on one stream as
%% one, falco_http2_frame:parse_run/2), feeds them to the machine and
%% carries out the actions the machine returns: writing bytes, starting a
%% stream process ({@link falco_http2_stream}, one per request, running
%% the shared pipeline) once the socket read that brought its HEADERS is
%% handled (with the whole body when it came in that read, and not at all
%% when the stream was reset in it), handing it request body data when it
%% asks (one message per read, however the client cut the body into
%% frames), killing it when its stream is reset (not when the reset is for
%% a client too slow to read: then its send fails and it ends by itself),
%% answering its sends, arming timers. Writes are gathered: the
%% bytes of every action are sent in one call once the mailbox is empty (or
%% after 64 actions), so a burst of requests gets a burst of frames in few
%% writes.
%%
%% The process traps exits: a stream process that ends tells the machine
%% (an unfinished response is reset with INTERNAL_ERROR), and the exit of
%% its parent, the acceptor that supervises it (the listener stopping),
%% ends it: a GOAWAY goes out, the streams are killed, and the process
%% exits with its parent's reason (no crash report for `shutdown').
%% WebSocket sessions on the connection (RFC 8441, streams the stream
%% process marked with `{tunnel, ...}') first get the parent's exit
%% signal, send their close frame (1001) and end their stream, for at most
%% ?TUNNEL_GRACE ms; a reset of a tunnel's stream is a message
%% (`{h2_reset, Reason}') so its handler's terminate runs, and when the
%% connection ends they get the exit signal `closed'.
%% When the listener drains (`{falco_drain, _}', see falco_acceptor) the
%% machine sends the two-step GOAWAY, the WebSocket sessions are told to
%% close (1001), and the connection ends once its open streams have
%% finished.
%% The loop answers `sys' messages (it is entered from {@link falco_conn},
%% an OTP special process).
%%
%% @private internal to falco
-module(falco_http2_conn).

-export([enter/2]).
-export([loop/1]).
-export([system_continue/3, system_terminate/4, system_code_change/4, system_get_state/1]).

-define(FLUSH_AFTER, 64).
%% How long the WebSocket sessions have to send their close frame when
%% the listener stops.
-define(TUNNEL_GRACE, 1000).
%% The socket's read buffer: the listener's (falco_transport:read_buffer/2:
%% 8 KB on the socket backend, the figures below), and
%% 256 KB while the client sends more than fits, as falco_http1_stream
%% widens it for large bodies: on the socket backend each read allocates
%% a whole buffer, so a narrow one suits requests and a wide one a body
%% (10 MB h2c upload with curl: 1220 reads of 8 KB, 11 -> 8.5 ms of CPU,
%% 2026-11-24). The reads that may wait in the mailbox are fewer when they
%% are wide, so that a connection busy with what it has holds at most
%% about 1 MB of reads it has not handled (100 wide reads took 26 MB under
%% a 1-byte DATA flood, 2026-11-24).
-define(ACTIVE_N, 100).
-define(WIDE_BUFFER, 262144).
-define(WIDE_ACTIVE_N, 4).

%% What a connection fixes when it starts: kept apart from the fields
%% that change with every request, so that each update of #c{} (about 15
%% per h2c request) copies 18 words instead of 36.
-record(k, {socket :: falco_transport:socket(),
            transport :: falco_transport:transport(),
            tags :: {atom(), atom(), atom(), atom()},
            ctx :: map(),
            stream_ctx :: map(),
            parent :: pid(),
            max_frame :: 16384..16777215,
            %% the listener's read buffer, the narrow one
            buffer :: pos_integer(),
            stats :: falco_stats:stats(),
            cell :: falco_stats:cell(),
            max_in_flight :: pos_integer() | infinity,
            retry_after :: pos_integer(),
            %% how long the connection waits with no request in progress
            %% before it hibernates
            hibernate_after :: timeout()}).

-record(c, {k :: #k{},
            machine :: falco_http2_machine:state(),
            buf = <<>> :: binary(),
            active = false :: boolean(),
            wide = false :: boolean(),
            pids = #{} :: #{pid() => pos_integer()},
            ids = #{} :: #{pos_integer() => pid()},
            %% the stream processes running a WebSocket session (RFC 8441),
            %% until they exit: told of a reset instead of killed
            tunnels = #{} :: #{pid() => pos_integer()},
            %% the stream processes counted in flight (falco_stats): from
            %% their start to their exit, or until they become a tunnel
            counted = #{} :: #{pid() => true},
            %% the parent's exit reason while the tunnels send their 1001
            stopping = false :: false | {true, term()},
            timers = #{} :: #{term() => reference()},
            %% when the machine's idle_timeout runs out (monotonic ms), or
            %% undefined while a stream is open (see exec/2)
            idle_at :: integer() | undefined,
            out = [] :: [iodata()],
            out_n = 0 :: non_neg_integer(),
            %% the requests of the socket read being handled, newest first:
            %% their processes start once its frames are all in (starts/1)
            starts = [] :: [{pos_integer(), map() | tuple()}],
            closing = false :: false | {true, term()},
            debug = [] :: [sys:dbg_opt()]}).

%% @doc Runs HTTP/2 on the connection of `Ctx' ({@link falco_conn}) until
%% it ends. `Start' is `{preface, Buf}' (the client preface is expected at
%% the start of `Buf' and the bytes that follow) or
%% `{upgrade, Settings, Req, Buf}' after a 101 to an `Upgrade: h2c' request.
-spec enter(falco_conn:ctx(),
            {preface, binary()} | {upgrade, falco_http2_frame:settings(), map(), binary()}) -> ok.
enter(Ctx = #{socket := Socket, transport := Transport, parent := Parent, conf := Conf,
              cell := Cell}, Start) ->
    process_flag(trap_exit, true),
    Stats = maps:get(stats, Conf),
    ok = falco_stats:protocol(Stats, Cell, h2),
    {M0, Acts0} = falco_http2_machine:new(falco_opts:http2_machine(Conf)),
    %% What each stream process needs, and no more: it is copied at every spawn.
    StreamCtx = (maps:merge(maps:with([listener, handler, peer, scheme, proxy], Ctx),
                            maps:with([max_body, body_timeout, min_body_rate, handler_timeout,
                                       hibernate_after], Conf)))#{send_buffer => maps:get(h2_send_buffer, Conf)},
    K = #k{socket = Socket, transport = Transport, tags = falco_transport:messages(Transport),
           ctx = Ctx, stream_ctx = StreamCtx, parent = Parent,
           hibernate_after = maps:get(hibernate_after, Conf),
           buffer = falco_transport:read_buffer(Transport, maps:get(inet_backend, Conf, inet)),
           stats = Stats, cell = Cell,
           max_in_flight = maps:get(max_requests_in_flight, Conf),
           retry_after = maps:get(shed_retry_after, Conf),
           max_frame = falco_http2_machine:max_frame_size(M0)},
    C0 = #c{k = K, machine = M0},
    C1 = exec(Acts0, C0),
    Preface = falco_transport:deadline(maps:get(h2_preface_timeout, Conf)),
    {C2, Buf, Deadline} =
        case Start of
            {preface, B} ->
                %% the preface is the first request's start: within its
                %% deadline too (request_timeout from the accept), as over
                %% HTTP/1.1 (after ALPN h2, a silent client is closed then)
                {C1, B, min(Preface, maps:get(deadline, Ctx, infinity))};
            {upgrade, Settings, Req, B} ->
                {M1, Acts1} = falco_http2_machine:upgrade(Settings, C1#c.machine),
                C3 = exec(Acts1, C1#c{machine = M1}),
                {spawn_stream(1, Req, none, C3#c.machine, C3), B, Preface}
        end,
    case flush(C2) of
        {ok, C} ->
            preface(C, Buf, Deadline);
        {error, C} ->
            terminate(C)
    end.

%% §3.4: the client preface, read passively within h2_preface_timeout
%% (and the first request's deadline, unless after an h2c upgrade);
%% the one preface check is falco_protocol's.
preface(C = #c{k = #k{socket = Sock, transport = T}}, Buf, Deadline) ->
    case falco_protocol:preface(Buf) of
        preface ->
            <<_:24/binary, Rest/binary>> = Buf,
            ok = falco_transport:setopts(T, Sock, narrow(C) ++ [{active, ?ACTIVE_N}]),
            next(frames(C#c{buf = Rest, active = true}));
        more ->
            case T:recv(Sock, 0, falco_transport:remaining(Deadline)) of
                {ok, Data} -> preface(C, <<Buf/binary, Data/binary>>, Deadline);
                {error, _} -> terminate(C)
            end;
        no_preface ->
            bad_preface(C)
    end.

bad_preface(C = #c{machine = M0}) ->
    {M, Acts} = falco_http2_machine:frame_error({connection_error, protocol_error, bad_preface},
                                                M0),
    finish(exec(Acts, C#c{machine = M})).

%% -- the loop --------------------------------------------------------------------

%% @private The loop, also the entry after hibernation. With nothing to
%% write and no request in progress (no stream process, or only WebSocket
%% sessions, which wait on their own), the connection hibernates after
%% `hibernate_after' with nothing received; its timers (idle_timeout,
%% SETTINGS) are the machine's, messages that wake it.
-spec loop(#c{}) -> ok.
loop(C = #c{out = [], pids = Pids, tunnels = T, k = #k{hibernate_after = Hib}})
  when map_size(Pids) =< map_size(T) ->
    case map_size(Pids) =:= 0 orelse lists:all(fun(P) -> is_map_key(P, T) end, maps:keys(Pids)) of
        true ->
            receive
                Msg -> message(Msg, C)
            after Hib ->
                %% a partial frame left by the last read is copied out of it
                falco_hibernate:sleep(?MODULE, loop, [C#c{buf = binary:copy(C#c.buf)}], infinity)
            end;
        false ->
            receive Msg -> message(Msg, C) end
    end;
loop(C = #c{out = []}) ->
    receive Msg -> message(Msg, C) end;
loop(C) ->
    receive
        Msg -> message(Msg, C)
    after 0 ->
        case flush(C) of
            {ok, C1} -> loop(C1);
            {error, C1} -> terminate(C1)
        end
    end.

message({system, From, Request}, C = #c{k = #k{parent = Parent}, debug = Debug}) ->
    sys:handle_system_msg(Request, From, Parent, ?MODULE, Debug, C);
message({'EXIT', Parent, Reason}, C = #c{k = #k{parent = Parent}, tunnels = Tunnels}) ->
    case maps:size(Tunnels) of
        0 ->
            stop(Reason, C);
        _ ->
            %% The WebSocket sessions say 1001 on their streams first.
            _ = [exit(Pid, Reason) || Pid <- maps:keys(Tunnels)],
            _ = erlang:start_timer(?TUNNEL_GRACE, self(), tunnel_grace),
            loop(C#c{stopping = {true, Reason}})
    end;
message({timeout, _, tunnel_grace}, C = #c{stopping = {true, Reason}}) ->
    stop(Reason, C);
message({falco_drain, _}, C = #c{machine = M0, tunnels = Tunnels}) ->
    %% The listener drains: the two-step GOAWAY; the WebSocket sessions
    %% close with 1001; the streams open finish.
    _ = [Pid ! {falco_drain, self()} || Pid <- maps:keys(Tunnels)],
    {M, Acts} = falco_http2_machine:drain(M0),
    next(exec(Acts, C#c{machine = M}));
message(Msg, C) ->
    case handle(Msg, C) of
        C1 = #c{stopping = {true, Reason}, tunnels = T} when map_size(T) =:= 0 -> stop(Reason, C1);
        C1 -> next(C1)
    end.

%% The listener is stopping: tell the client, which may retry the streams
%% we did not process (RFC 9113 §6.8).
-spec stop(term(), #c{}) -> no_return().
stop(Reason, C) ->
    {M, Acts} = falco_http2_machine:goaway(C#c.machine),
    _ = finish(exec(Acts, C#c{machine = M})),
    exit(Reason).

next(C = #c{closing = {true, _}}) ->
    finish(C);
next(C = #c{out_n = N}) when N >= ?FLUSH_AFTER ->
    case flush(C) of
        {ok, C1} -> loop(C1);
        {error, C1} -> terminate(C1)
    end;
next(C) ->
    loop(C).

handle({DataTag, Sock, Data}, C = #c{k = #k{socket = Sock, tags = {DataTag, _, _, _}}}) ->
    starts(received(Data, width(byte_size(Data), C)));
handle({PassiveTag, Sock}, C = #c{k = #k{socket = Sock, tags = {_, _, _, PassiveTag},
                                          transport = T},
                                   wide = Wide}) ->
    N = case Wide of
            true -> ?WIDE_ACTIVE_N;
            false -> ?ACTIVE_N
        end,
    _ = falco_transport:setopts(T, Sock, [{active, N}]),
    C;
handle({ClosedTag, Sock}, C = #c{k = #k{socket = Sock, tags = {_, ClosedTag, _, _}}}) ->
    C#c{closing = {true, closed}};
handle({ErrorTag, Sock, Why}, C = #c{k = #k{socket = Sock, tags = {_, _, ErrorTag, _}}}) ->
    C#c{closing = {true, Why}};
handle({h2_stream, Id, Cmd}, C) ->
    stream_command(Id, Cmd, C);
handle({timeout, TRef, idle}, C = #c{timers = Timers = #{idle := TRef}, idle_at = At}) ->
    %% The idle timer runs across requests (see exec/2): it may have been
    %% armed for an earlier idle spell.
    case At of
        undefined ->
            C#c{timers = maps:remove(idle, Timers)};
        _ ->
            case At - erlang:monotonic_time(millisecond) of
                Left when Left > 0 ->
                    C#c{timers = Timers#{idle := erlang:start_timer(Left, self(), idle)}};
                _ ->
                    {M, Acts} = falco_http2_machine:timeout(idle, C#c.machine),
                    exec(Acts, C#c{machine = M, timers = maps:remove(idle, Timers),
                                   idle_at = undefined})
            end
    end;
handle({timeout, TRef, Name}, C = #c{timers = Timers, machine = M0}) ->
    case Timers of
        #{Name := TRef} ->
            {M, Acts} = falco_http2_machine:timeout(Name, M0),
            exec(Acts, C#c{machine = M, timers = maps:remove(Name, Timers)});
        #{} ->
            C
    end;
handle({'EXIT', Pid, _}, C = #c{pids = Pids, ids = Ids, machine = M0, tunnels = T})
  when is_map_key(Pid, Pids) ->
    Id = maps:get(Pid, Pids),
    {M, Acts} = falco_http2_machine:stream_exited(Id, M0),
    exec(Acts, C#c{machine = M, pids = maps:remove(Pid, Pids), ids = maps:remove(Id, Ids),
                   tunnels = maps:remove(Pid, T), counted = uncounted(Pid, C)});
handle({'EXIT', Pid, _}, C = #c{tunnels = T}) when is_map_key(Pid, T) ->
    %% a session whose stream was reset
    C#c{tunnels = maps:remove(Pid, T)};
handle(_, C) ->
    C.

%% New bytes after the part of a frame that the last read ended with: only
%% that frame is joined (copied), the rest of the read is parsed where it
%% lies; appending whole reads to the leftover copied every byte once more
%% (10 MB h2c upload in 256 KB reads, 2026-11-24).
received(Data, C = #c{buf = <<>>}) ->
    parse(C#c{buf = Data});
received(Data, C = #c{buf = Buf = <<Len:24, _/binary>>})
  when 9 + Len > byte_size(Buf), 9 + Len - byte_size(Buf) < byte_size(Data) ->
    Need = 9 + Len - byte_size(Buf),
    <<Head:Need/binary, Rest/binary>> = Data,
    case parse(C#c{buf = <<Buf/binary, Head/binary>>}) of
        C1 = #c{closing = false, buf = <<>>} -> parse(C1#c{buf = Rest});
        C1 = #c{closing = false, buf = Left} -> parse(C1#c{buf = <<Left/binary, Rest/binary>>});
        C1 -> C1
    end;
received(Data, C = #c{buf = Buf}) ->
    parse(C#c{buf = <<Buf/binary, Data/binary>>}).

frames(C) ->
    starts(parse(C)).

parse(C = #c{buf = Buf, k = #k{max_frame = Max}, machine = M0}) ->
    case falco_http2_frame:parse_run(Buf, Max) of
        {ok, Frame, Rest} ->
            {M, Acts} = falco_http2_machine:frame(Frame, M0),
            continue_frames(exec(Acts, C#c{buf = Rest, machine = M}));
        {more, _} ->
            %% every complete frame of the read is in: the streams waiting
            %% for body get what came, in one message each
            case falco_http2_machine:deliver_ready(M0) of
                none -> C;
                {M, Acts} -> exec(Acts, C#c{machine = M})
            end;
        {error, {connection_error, _, _} = Error} ->
            {M, Acts} = falco_http2_machine:frame_error(Error, M0),
            exec(Acts, C#c{buf = <<>>, machine = M});
        {error, Error, Rest} ->
            {M, Acts} = falco_http2_machine:frame_error(Error, M0),
            continue_frames(exec(Acts, C#c{buf = Rest, machine = M}))
    end.

continue_frames(C = #c{closing = false}) -> parse(C);
continue_frames(C) -> C.

%% The processes of the requests whose HEADERS came in the read just
%% handled start now, in the order of their streams, not at their HEADERS:
%% a request whose whole body came in the same read (a small POST) starts
%% with it (falco_http2_machine:prefetch/3) instead of asking the
%% connection for it and waiting for the answer, and a stream reset within
%% the read (rapid reset) gets no process at all. A connection that is
%% closing starts none: it kills its streams anyway.
starts(C = #c{starts = []}) ->
    C;
starts(C = #c{closing = {true, _}}) ->
    C#c{starts = []};
starts(C = #c{starts = Starts}) ->
    lists:foldr(fun start/2, C#c{starts = []}, Starts).

start({Id, Req}, C = #c{machine = M0, k = #k{stream_ctx = #{max_body := Max}}}) ->
    case falco_http2_machine:prefetch(Id, Max, M0) of
        gone ->
            C;
        {Body, M} when is_binary(Body), is_map(Req) ->
            spawn_stream(Id, Req, Body, M, C);
        {_, M} ->
            spawn_stream(Id, Req, none, M, C)
    end.

%% The narrow buffer from the start: over TCP a new connection reads with
%% a narrower one still (falco_transport:accept_buffer/2), and reads that
%% never fill the narrow buffer would never widen it (a 10 MB h2c upload
%% in 512-byte reads: 0.2 s instead of 0.01).
narrow(#c{k = #k{transport = gen_tcp, buffer = Buffer}}) -> [{buffer, Buffer}];
narrow(_) -> [].

%% A read that filled the buffer means more is waiting: widen it; one that
%% did not fill the narrow buffer means the burst is over.
%% Widening also restarts the count of reads the socket may deliver
%% unasked (`{active, false}' drops what was left of it).
width(Size, C = #c{wide = false, k = #k{socket = Sock, transport = T, buffer = Buffer}})
  when Size >= Buffer ->
    _ = falco_transport:setopts(T, Sock, [{active, false}, {buffer, ?WIDE_BUFFER}]),
    _ = falco_transport:setopts(T, Sock, [{active, ?WIDE_ACTIVE_N}]),
    C#c{wide = true};
width(Size, C = #c{wide = true, k = #k{socket = Sock, transport = T, buffer = Buffer}})
  when Size < Buffer ->
    _ = falco_transport:setopts(T, Sock, [{buffer, Buffer}, {active, ?ACTIVE_N}]),
    C#c{wide = false};
width(_, C) ->
    C.

%% Commands from stream processes (falco_http2_stream).
stream_command(Id, Cmd, C = #c{machine = M0}) ->
    {M, Acts} = case Cmd of
                    {response, Status, Headers, Body} ->
                        falco_http2_machine:send_response(Id, Status, Headers, Body, M0);
                    {headers, Status, Headers} ->
                        falco_http2_machine:send_headers(Id, Status, Headers, nofin, M0);
                    {tunnel, Status, Headers} ->
                        falco_http2_machine:send_headers(Id, Status, Headers, nofin, M0);
                    {data, Data, Fin, Tag} ->
                        falco_http2_machine:send_data(Id, Data, Fin, Tag, M0);
                    {trailers, Fields, Tag} ->
                        falco_http2_machine:send_trailers(Id, Fields, Tag, M0);
                    {read, Want} ->
                        falco_http2_machine:read(Id, Want, M0);
                    {inform, Status} ->
                        falco_http2_machine:send_inform(Id, Status, M0)
                end,
    C1 = case Cmd of
             {tunnel, _, _} -> tunnel(Id, C);
             _ -> C
         end,
    exec(Acts, C1#c{machine = M}).

tunnel(Id, C = #c{ids = Ids, tunnels = T}) ->
    case Ids of
        #{Id := Pid} -> C#c{tunnels = T#{Pid => Id}, counted = uncounted(Pid, C)};
        #{} -> C
    end.

%% -- actions ------------------------------------------------------------------------

%% The actions of every request (its bytes, its start, the idle deadline)
%% are gathered and written into the record once (gather/6); the others
%% each update it as they come (act/2).
exec([], C) ->
    C;
exec(Acts, C = #c{out = Out, out_n = N, starts = Starts, idle_at = At}) ->
    gather(Acts, C, Out, N, Starts, At).

gather([{send, Data} | Rest], C, Out, N, Starts, At) ->
    gather(Rest, C, [Data | Out], N + 1, Starts, At);
gather([{request, Id, Req} | Rest], C, Out, N, Starts, At) ->
    gather(Rest, C, Out, N, [{Id, Req} | Starts], At);
gather([{cancel_timer, idle} | Rest], C, Out, N, Starts, _) ->
    gather(Rest, C, Out, N, Starts, undefined);
gather([{timer, idle, Ms} | Rest], C = #c{timers = #{idle := _}}, Out, N, Starts, _)
  when is_integer(Ms) ->
    %% see act/2's idle timer
    gather(Rest, C, Out, N, Starts, erlang:monotonic_time(millisecond) + Ms);
gather(Acts, C, Out, N, Starts, At) ->
    act(Acts, C#c{out = Out, out_n = N, starts = Starts, idle_at = At}).

act([], C) ->
    C;
act([{data, Id, Data, Fin} | Rest], C = #c{ids = Ids}) ->
    _ = case Ids of
            #{Id := Pid} -> Pid ! {h2_data, Data, Fin};
            #{} -> ok
        end,
    exec(Rest, C);
act([{trailers, Id, Fields} | Rest], C = #c{ids = Ids}) ->
    _ = case Ids of
            #{Id := Pid} -> Pid ! {h2_trailers, Fields};
            #{} -> ok
        end,
    exec(Rest, C);
act([{reset, Id, send_timeout} | Rest], C = #c{ids = Ids, tunnels = T}) ->
    %% The client read too slowly: the handler's send returns
    %% {error, send_timeout} and its process ends on its own (its exit is
    %% still awaited, and it is killed if the connection ends first). A
    %% WebSocket session may have no send waiting (its sends within
    %% h2_send_buffer get no answer, falco_http2_tunnel): it is told.
    _ = case Ids of
            #{Id := Pid} when is_map_key(Pid, T) -> Pid ! {h2_reset, send_timeout};
            #{} -> ok
        end,
    exec(Rest, C);
act([{reset, Id, Reason} | Rest], C = #c{ids = Ids, pids = Pids, tunnels = T}) ->
    case Ids of
        #{Id := Pid} when is_map_key(Pid, T) ->
            %% A WebSocket session ends through its handler's terminate.
            Pid ! {h2_reset, Reason},
            exec(Rest, C#c{ids = maps:remove(Id, Ids), pids = maps:remove(Pid, Pids)});
        #{Id := Pid} ->
            %% The stream is gone: so is the work done for it (this is what
            %% makes a rapid reset cost the client as much as it costs us).
            exit(Pid, kill),
            exec(Rest, C#c{ids = maps:remove(Id, Ids), pids = maps:remove(Pid, Pids),
                           counted = uncounted(Pid, C)});
        #{} ->
            exec(Rest, C)
    end;
act([{reply, {Pid, Ref}, Result} | Rest], C) ->
    Pid ! {h2_reply, Ref, Result},
    exec(Rest, C);
act([{timer, idle, Ms} | Rest], C = #c{timers = Timers}) when is_integer(Ms) ->
    %% The machine arms idle_timeout whenever its last stream closes and
    %% cancels it when the next one opens: a start_timer and a cancel_timer
    %% per request on a connection with one stream at a time. Instead the
    %% deadline is noted and a timer already running is kept (gather/6);
    %% only when none runs is one started, here. When it fires early it is
    %% armed again for what is left (handle/2). idle_timeout is
    %% fixed for the connection, so a running timer never fires after the
    %% new deadline and never needs cancelling. With done/1's
    %% shortcut, 9 interleaved rounds of h2c hello: 32.3 k -> 33.8 k req/s
    %% (medians); echo 24.9 k -> 26.9 k, 40.1 -> 37.2 us (4 rounds),
    %% 2026-11-25 (docs/internals/http2.md).
    At = erlang:monotonic_time(millisecond) + Ms,
    TRef = erlang:start_timer(Ms, self(), idle),
    exec(Rest, C#c{idle_at = At, timers = Timers#{idle => TRef}});
act([{timer, Name, Ms} | Rest], C = #c{timers = Timers}) ->
    cancel(Name, Timers),
    case Ms of
        infinity -> exec(Rest, C#c{timers = maps:remove(Name, Timers)});
        _ -> exec(Rest, C#c{timers = Timers#{Name => erlang:start_timer(Ms, self(), Name)}})
    end;
act([{cancel_timer, Name} | Rest], C = #c{timers = Timers}) ->
    cancel(Name, Timers),
    exec(Rest, C#c{timers = maps:remove(Name, Timers)});
act([{close, Reason} | _], C) ->
    ok = flood_event(Reason, C),
    C#c{closing = {true, Reason}}.

%% A stream process that ran a request (spawn_stream/5) ended or became a
%% tunnel: its request is no longer in flight. The counted map without it,
%% for the caller's own update of the record.
uncounted(Pid, #c{counted = Counted, k = #k{stats = Stats, cell = Cell}}) ->
    falco_stats:request_done(Pid, Counted, Stats, Cell).

%% `[falco, connection, flood]' (falco_telemetry) when a flood budget ended
%% the connection, with the budget's name.
flood_event({_, {flood, Key}}, #c{k = #k{ctx = #{conf := Conf, listener := Name, peer := Peer},
                                         stats = Stats}}) ->
    ok = falco_stats:rejected(Stats, flood),
    falco_telemetry:emit(falco_telemetry:for(Conf), [falco, connection, flood],
                         fun() -> {#{monotonic_time => erlang:monotonic_time()},
                                   #{listener => Name, limit => Key, peer => Peer}}
                         end);
flood_event(_, _) ->
    ok.

cancel(Name, Timers) ->
    case Timers of
        #{Name := TRef} -> _ = erlang:cancel_timer(TRef, [{async, true}, {info, false}]), ok;
        #{} -> ok
    end.

%% A request is counted in flight here, by the connection, which sees its
%% process's exit however it ends (falco_stats); over
%% max_requests_in_flight the stream's process answers 503 instead. `M' is
%% the machine that started the stream: the record is copied once, for it
%% and the three maps.
spawn_stream(Id, Req, Body, M, C = #c{k = #k{stats = Stats, cell = Cell, max_in_flight = Max,
                                             retry_after = RA, stream_ctx = Ctx0},
                                      counted = Counted}) ->
    Ctx = case Body of
              none -> Ctx0;
              _ -> Ctx0#{body => Body}
          end,
    {Pid, Counted1} = falco_http2_worker:start_counted(self(), Id, Req, Ctx,
                                                       {Stats, Cell, Max, RA}, Counted),
    started(Id, Pid, M, Counted1, C).

started(Id, Pid, M, Counted, C = #c{pids = Pids, ids = Ids}) ->
    C#c{machine = M, pids = Pids#{Pid => Id}, ids = Ids#{Id => Pid}, counted = Counted}.

flush(C = #c{out = []}) ->
    {ok, C};
flush(C = #c{out = Out, k = #k{socket = Sock, transport = T}}) ->
    case falco_transport:send(T, Sock, lists:reverse(Out)) of
        ok -> {ok, C#c{out = [], out_n = 0}};
        {error, _} -> {error, C#c{out = [], out_n = 0}}
    end.

%% The machine asked to close (a GOAWAY is in the output) or the socket
%% is gone: write what is left, stop the streams, close with the lingering
%% close of falco_transport, which keeps a reset from destroying the GOAWAY
%% before the client reads it.
finish(C = #c{k = #k{socket = Sock, transport = T}, active = Active}) ->
    _ = flush(C),
    kill_streams(C),
    case Active of
        false -> falco_transport:linger_close(T, Sock);
        true -> falco_transport:linger_close_active(T, Sock)
    end.

terminate(C = #c{k = #k{socket = Sock, transport = T}}) ->
    kill_streams(C),
    falco_transport:close_socket(T, Sock).

kill_streams(#c{pids = Pids, tunnels = T}) ->
    _ = [case is_map_key(Pid, T) of
             true -> exit(Pid, closed);
             false -> exit(Pid, kill)
         end || Pid <- maps:keys(Pids)],
    ok.

%% -- sys ------------------------------------------------------------------------------

%% @private
-spec system_continue(pid(), [sys:dbg_opt()], #c{}) -> ok.
system_continue(_Parent, Debug, C) ->
    loop(C#c{debug = Debug}).

%% @private
-spec system_terminate(term(), pid(), [sys:dbg_opt()], #c{}) -> no_return().
system_terminate(Reason, _Parent, _Debug, C) ->
    _ = terminate(C),
    exit(Reason).

%% @private
-spec system_code_change(#c{}, module(), term(), term()) -> {ok, #c{}}.
system_code_change(C, _Module, _OldVsn, _Extra) ->
    {ok, C}.

%% @private
-spec system_get_state(#c{}) -> {ok, map()}.
system_get_state(#c{k = #k{ctx = Ctx}, machine = M, pids = Pids}) ->
    {ok, (maps:with([listener, peer, scheme, proxy], Ctx))#{
           protocol => h2, streams => falco_http2_machine:active_streams(M),
           send_queued => falco_http2_machine:send_queued(M),
           stream_processes => maps:keys(Pids)}}.
