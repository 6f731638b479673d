%% @doc One HTTP/3 connection (RFC 9114 over RFC 9000): a thin process
%% around two pure machines, {@link falco_quic_machine} (packets, TLS,
%% recovery, streams) and {@link falco_http3_machine} (HTTP/3's frames,
%% QPACK, the request rules), started by the listener's UDP socket holder
%% ({@link falco_quic_socket}) for an admitted Initial and linked to it.
%%
%% Datagrams come as `{quic_datagram, Holder, Peer, Bin}' and go out on the
%% holder's socket; the QUIC machine's one deadline is one timer. Requests
%% run as they do over HTTP/2: one process per request stream
%% ({@link falco_http2_worker}, {@link falco_http2_stream}, the shared
%% pipeline), speaking the same messages to this process, so a handler
%% cannot tell HTTP/3 from HTTP/2 but by the request's `version' ({3, 0}).
%%
%% The request body: the HTTP/3 machine gives this process a request's DATA
%% as it comes; it is held here until the stream's process asks (`{read,
%% Want}'), handed over one message per read, and only then given back to
%% the client as QUIC flow credit, so a handler that does not read stops
%% the client at the stream's window (initial_max_stream_data) and holds
%% no more than it. Responses: a full reply is queued at once; larger
%% pieces (`{data, ..., {Pid, Ref}}') are answered once the stream has less
%% than `h2_send_buffer' bytes not yet sent, so a stream queues at most
%% about twice that, and a client that grants no credit (or acknowledges
%% nothing) for `send_timeout' gets the stream reset at that deadline and
%% the handler's send returns `{error, send_timeout}'.
%%
%% With no stream process, the connection hibernates after
%% `hibernate_after' with nothing received, as falco_http2_conn does; the
%% machine's deadline is a timer message, which wakes it.
%%
%% WebSocket over HTTP/3 (RFC 9220): a stream whose process sent `{tunnel,
%% 200, Fields}' carries a session (falco_http2_tunnel is its carrier, as
%% over HTTP/2): its read credit is a standing grant (`{read, {grant,
%% N}}'), handed over as DATA comes; a reset of its stream is told to it
%% (`{h2_reset, Reason}') rather than killing it, so its handler's
%% terminate runs; it no longer counts as a request in flight.
%%
%% The process traps exits: a stream process that ends before its
%% response did gets its stream reset (H3_INTERNAL_ERROR). The listener
%% stopping: the holder sends `{falco_stop, Holder}' and waits for its
%% connections before closing its socket; the sessions get the exit
%% `shutdown' (their 1001) and ?TUNNEL_GRACE ms, then CONNECTION_CLOSE
%% with H3_NO_ERROR goes out and the process ends. The holder's own exit
%% closes the connection at once. `{falco_drain, _}' starts HTTP/3's
%% graceful shutdown (GOAWAY, falco_http3_machine:drain/1 then goaway/1;
%% the sessions close with 1001).
%%
%% @private internal to falco
-module(falco_http3_conn).

-export([start_link/2, init/3, loop/2]).
-export([system_continue/3, system_terminate/4, system_code_change/4, system_get_state/1]).

-define(CID_LEN, 8).
%% the least time between a drain's two GOAWAY frames, ms
-define(GOAWAY_MIN, 50).
%% the most a stopping listener's WebSocket sessions get to send 1001, ms
-define(TUNNEL_GRACE, 1000).

-record(b, {buf = [] :: [iodata()],
            size = 0 :: non_neg_integer(),
            fin = false :: boolean(),
            trailers = undefined :: undefined | [{binary(), binary()}],
            want = 0 :: non_neg_integer(),
            %% a tunnel's standing grant: data handed over as it comes
            %% while `want' lasts (falco_http2_tunnel)
            grant = false :: boolean()}).

-record(c, {holder :: pid(),
            socket :: gen_udp:socket(),
            routes :: ets:tid() | atom(),
            listener :: atom(),
            %% falco_http3_machine's options, made once (the listener's
            %% whole configuration is not kept: it would be copied into
            %% every connection's state, about 12 KB)
            h3_opts :: map(),
            stream_ctx :: map(),
            stats :: falco_stats:stats() | undefined,
            cell :: falco_stats:cell(),
            send_buffer :: pos_integer(),
            send_timeout :: pos_integer(),
            max_in_flight :: pos_integer() | infinity,
            retry_after :: pos_integer(),
            %% how long an idle connection waits before it hibernates
            hibernate_after :: timeout(),
            quic :: falco_quic_machine:state(),
            h3 = undefined :: undefined | falco_http3_machine:state(),
            timer = undefined :: undefined | {reference(), integer()},
            pids = #{} :: #{pid() => non_neg_integer()},
            ids = #{} :: #{non_neg_integer() => pid()},
            counted = #{} :: #{pid() => true},
            %% WebSocket sessions (RFC 9220), whose stream process sent
            %% `{tunnel, ...}'; one stays here until its process exits
            tunnels = #{} :: #{pid() => non_neg_integer()},
            bodies = #{} :: #{non_neg_integer() => #b{}},
            %% streams whose process waits for its data to go out
            waiting = #{} :: #{non_neg_integer() => {{pid(), reference()}, integer()}},
            %% HTTP/3 is done (H3_NO_ERROR): the connection closes once what
            %% it sent is acknowledged (and at the latest by its idle timeout)
            ending = false :: boolean(),
            %% the listener stops: the connection closes once its
            %% WebSocket sessions are gone
            stopping = false :: boolean(),
            debug = [] :: [sys:dbg_opt()]}).

%% @doc Starts the connection for an admitted Initial: `Args' from the
%% listener (`listener', `handler', `conf', `tls'), `Info' from the
%% holder (`holder', `socket', `peer', `routes', `dcid', `scid', `token',
%% `datagram', `cell').
-spec start_link(map(), map()) -> {ok, pid()}.
start_link(Args, Info) ->
    {ok, proc_lib:spawn_link(?MODULE, init, [self(), Args, Info])}.

%% @private
-spec init(pid(), map(), map()) -> no_return().
init(Parent, Args = #{conf := Conf, tls := Tls},
     Info = #{holder := Holder, socket := Sock, routes := Routes, peer := Peer,
              datagram := First}) ->
    process_flag(trap_exit, true),
    Now = now_us(),
    Scid = crypto:strong_rand_bytes(?CID_LEN),
    {Q0, Acts0} = falco_quic_machine:new(Info, #{tls => Tls, scid => Scid, now => Now,
                                                 quic => falco_opts:quic(Conf)}),
    StreamCtx = (maps:with([max_body, body_timeout, min_body_rate, handler_timeout,
                            hibernate_after], Conf))#{
                  listener => maps:get(listener, Args), handler => maps:get(handler, Args),
                  scheme => https, peer => Peer,
                  send_buffer => maps:get(h2_send_buffer, Conf)},
    C0 = #c{holder = Holder, socket = Sock, routes = Routes,
            listener = maps:get(listener, Args), h3_opts = falco_opts:http3_machine(Conf),
            stream_ctx = StreamCtx, stats = maps:get(stats, Conf, undefined),
            %% the holder's cell for this connection (it settles it)
            cell = maps:get(cell, Info, falco_stats:cell()),
            send_buffer = maps:get(h2_send_buffer, Conf),
            send_timeout = maps:get(send_timeout, Conf),
            max_in_flight = maps:get(max_requests_in_flight, Conf),
            retry_after = maps:get(shed_retry_after, Conf),
            hibernate_after = maps:get(hibernate_after, Conf),
            quic = Q0},
    C1 = quic_actions(Acts0, C0),
    {Q1, Acts1} = falco_quic_machine:datagram(Now, Peer, First, C1#c.quic),
    loop(quic_actions(Acts1, C1#c{quic = Q1}), Parent).

%% -- the loop ---------------------------------------------------------------------

%% @private The loop, also the entry after hibernation. With no stream
%% process but WebSocket sessions, the connection hibernates after `hibernate_after' with nothing
%% received (its heap collected and shrunk to its live data, as
%% falco_http2_conn does); the machine's deadline is a timer, a message
%% that wakes it, and so are datagrams and `sys'.
-spec loop(#c{}, pid()) -> no_return().
loop(C = #c{waiting = W}, Parent) when map_size(W) > 0 ->
    %% a send waiting for room fails at its send_timeout even if nothing
    %% comes meanwhile (a silent client's PTOs back off past it)
    First = lists:min([Deadline || {_, Deadline} <- maps:values(W)]),
    receive
        Msg -> message(Msg, C, Parent)
    after max(0, First - erlang:monotonic_time(millisecond)) ->
        next(flush(C), Parent)
    end;
loop(C = #c{pids = Pids, tunnels = T, hibernate_after = Hib}, Parent)
  when map_size(Pids) =< map_size(T) ->
    %% no request in progress (no stream process, or only WebSocket
    %% sessions, which wait on their own): hibernation after Hib
    case map_size(maps:without(maps:keys(T), Pids)) of
        0 ->
            receive
                Msg -> message(Msg, C, Parent)
            after Hib ->
                falco_hibernate:sleep(?MODULE, loop, [C, Parent], infinity)
            end;
        _ ->
            receive Msg -> message(Msg, C, Parent) end
    end;
loop(C, Parent) ->
    receive
        Msg -> message(Msg, C, Parent)
    end.

message({quic_datagram, _Holder, Peer, Bin}, C = #c{quic = Q0}, Parent) ->
    {Q, Acts} = falco_quic_machine:datagram(now_us(), Peer, Bin, Q0),
    next(send_deadlines(quic_actions(Acts, C#c{quic = Q})), Parent);
message({timeout, TRef, quic}, C = #c{timer = {TRef, _}, quic = Q0}, Parent) ->
    {Q, Acts} = falco_quic_machine:timeout(now_us(), Q0),
    next(send_deadlines(quic_actions(Acts, C#c{quic = Q, timer = undefined})), Parent);
message({h2_stream, Id, Cmd}, C, Parent) ->
    next(flush(stream_command(Id, Cmd, C)), Parent);
message({'EXIT', Pid, _}, C = #c{pids = Pids}, Parent) when is_map_key(Pid, Pids) ->
    next(flush(stream_exit(Pid, C)), Parent);
message({'EXIT', Pid, _}, C = #c{tunnels = T}, Parent) when is_map_key(Pid, T) ->
    %% a session whose stream was reset
    next(C#c{tunnels = maps:remove(Pid, T)}, Parent);
message({falco_stop, Holder}, C = #c{holder = Holder, tunnels = T}, Parent) ->
    %% the listener stops: the WebSocket sessions say 1001 first (within
    %% ?TUNNEL_GRACE ms), then CONNECTION_CLOSE with H3_NO_ERROR
    _ = [exit(Pid, shutdown) || Pid <- maps:keys(T)],
    _ = erlang:start_timer(?TUNNEL_GRACE, self(), tunnel_grace),
    next(C#c{stopping = true}, Parent);
message({timeout, _, tunnel_grace}, C, _Parent) ->
    stop(shutdown, close(C));
message({'EXIT', Holder, Reason}, C = #c{holder = Holder}, _Parent) ->
    stop(Reason, close(C));
message({falco_drain, _}, C = #c{h3 = H0, quic = Q}, Parent) when H0 =/= undefined ->
    %% RFC 9114 §5.2: a GOAWAY with the largest id first, so requests on
    %% their way are still taken; the one with the next id after a couple
    %% of PTOs; the connection closes once its requests are done
    %% the WebSocket sessions close with 1001 (falco_ws_conn)
    _ = [Pid ! {falco_drain, self()} || Pid <- maps:keys(C#c.tunnels)],
    {H, Acts} = falco_http3_machine:drain(H0),
    Ms = erlang:max(?GOAWAY_MIN, 2 * falco_quic_machine:pto(Q) div 1000),
    _ = erlang:start_timer(Ms, self(), goaway),
    next(flush(h3_actions(Acts, C#c{h3 = H})), Parent);
message({falco_drain, _}, C, _Parent) ->
    %% still in its handshake: nothing to finish
    stop(normal, close(C));
message({timeout, _, reset_window}, C = #c{h3 = H}, Parent) when H =/= undefined ->
    next(C#c{h3 = falco_http3_machine:reset_window(H)}, Parent);
message({timeout, _, goaway}, C = #c{h3 = H0}, Parent) ->
    {H, Acts} = falco_http3_machine:goaway(H0),
    next(flush(h3_actions(Acts, C#c{h3 = H})), Parent);
message({system, From, Request}, C = #c{debug = Debug}, Parent) ->
    sys:handle_system_msg(Request, From, Parent, ?MODULE, Debug, C);
message(_, C, Parent) ->
    next(C, Parent).

next(C = #c{stopping = true, tunnels = T}, _Parent) when map_size(T) =:= 0 ->
    stop(shutdown, close(C));
next(C = #c{ending = true, quic = Q}, Parent) ->
    case falco_quic_machine:phase(Q) =:= established andalso falco_quic_machine:quiescent(Q) of
        true -> next(close(C#c{ending = false}), Parent);
        false -> next_phase(C, Parent)
    end;
next(C, Parent) ->
    next_phase(C, Parent).

next_phase(C, Parent) ->
    case falco_quic_machine:phase(C#c.quic) of
        closed -> stop(normal, C);
        _ -> loop(C, Parent)
    end.

-spec stop(term(), #c{}) -> no_return().
stop(Reason, C) ->
    kill_streams(C),
    exit(case Reason of
             normal -> normal;
             shutdown -> shutdown;
             {shutdown, _} -> Reason;
             _ -> {shutdown, Reason}
         end).

%% The listener stops: CONNECTION_CLOSE with H3_NO_ERROR.
close(C = #c{quic = Q0}) ->
    {Q, Acts} = falco_quic_machine:close(now_us(), falco_http3_error:code(h3_no_error),
                                         <<>>, Q0),
    quic_actions(Acts, C#c{quic = Q}).

now_us() ->
    erlang:monotonic_time(microsecond).

%% -- QUIC's actions ---------------------------------------------------------------

quic_actions([], C) ->
    C;
quic_actions([{send, {Ip, Port}, Bytes} | Rest], C = #c{socket = Sock}) ->
    _ = gen_udp:send(Sock, Ip, Port, Bytes),
    quic_actions(Rest, C);
quic_actions([{timer, At} | Rest], C) ->
    quic_actions(Rest, arm(At, C));
quic_actions([{route, Cid} | Rest], C = #c{routes = Routes}) ->
    true = ets:insert(Routes, {Cid, self()}),
    quic_actions(Rest, C);
quic_actions([established | Rest], C = #c{holder = Holder}) ->
    Holder ! {quic_established, self()},
    quic_actions(Rest, start_http3(C));
quic_actions([{closed, _Why} | Rest], C) ->
    quic_actions(Rest, C);
quic_actions([Event | Rest], C = #c{h3 = H0}) when H0 =/= undefined ->
    {H, Acts} = falco_http3_machine:event(Event, H0),
    C1 = h3_actions(Acts, C#c{h3 = H}),
    quic_actions(Rest, credit(Event, Acts, C1));
quic_actions([_ | Rest], C) ->
    quic_actions(Rest, C).

%% One timer for the machine's deadline, armed again only when it moves.
arm(At, C = #c{timer = {_, At}}) ->
    C;
arm(At, C = #c{timer = Old}) ->
    _ = case Old of
            {TRef, _} -> erlang:cancel_timer(TRef, [{async, true}, {info, false}]);
            undefined -> ok
        end,
    case At of
        infinity ->
            C#c{timer = undefined};
        _ ->
            Ms = erlang:max(erlang:monotonic_time(millisecond), (At + 999) div 1000),
            C#c{timer = {erlang:start_timer(Ms, self(), quic, [{abs, true}]), At}}
    end.

%% HTTP/3 starts with the handshake: our control stream (the first
%% unidirectional one) and its SETTINGS.
start_http3(C = #c{quic = Q0, h3_opts = Opts}) ->
    case falco_quic_machine:open_uni(Q0) of
        {ok, Control, Q} ->
            {H, Acts} = falco_http3_machine:new(Opts#{control_stream => Control}),
            flush(h3_actions(Acts, C#c{quic = Q, h3 = H}));
        blocked ->
            %% the client allows us no unidirectional stream (RFC 9114
            %% §6.2.1 needs three)
            {Q, Acts} = falco_quic_machine:close(now_us(),
                                                 falco_http3_error:code(h3_stream_creation_error),
                                                 <<"no unidirectional stream">>, Q0),
            quic_actions(Acts, C#c{quic = Q})
    end.

%% What the client sent on a stream is credited back at once, but for the
%% request body the HTTP/3 machine handed over: that is credited when the
%% stream's process takes it (take/3).
credit({stream_data, Id, Bin, _}, Acts, C = #c{quic = Q}) ->
    Held = lists:sum([iolist_size(D) || {data, I, D, _} <- Acts, I =:= Id]),
    case byte_size(Bin) - Held of
        0 -> C;
        N -> C#c{quic = falco_quic_machine:consumed(Id, N, now_us(), Q)}
    end;
credit(_, _, C) ->
    C.

%% -- HTTP/3's actions --------------------------------------------------------------

h3_actions([], C) ->
    C;
h3_actions([{send, Id, Bytes, Fin} | Rest], C = #c{quic = Q0}) ->
    C1 = case falco_quic_machine:send(Id, Bytes, Fin, Q0) of
             {ok, Q} -> C#c{quic = Q};
             {error, closed} -> C
         end,
    h3_actions(Rest, C1);
h3_actions([{request, Id, Req} | Rest], C) ->
    h3_actions(Rest, spawn_stream(Id, Req, C));
h3_actions([{data, Id, Data, Fin} | Rest], C = #c{bodies = Bodies, quic = Q})
  when not is_map_key(Id, Bodies) ->
    %% the stream's process is gone (its response was complete): nobody
    %% reads what the client still sends, which is its credit again
    _ = Fin,
    h3_actions(Rest, C#c{quic = falco_quic_machine:consumed(Id, iolist_size(Data), now_us(), Q)});
h3_actions([{data, Id, Data, Fin} | Rest], C) ->
    %% the pieces of a datagram's DATA frames held as one binary: a flood
    %% of tiny frames (a WebSocket tunnel's one-byte fragments, each in a
    %% DATA frame) would otherwise hold a list cell and a sub-binary, ~60
    %% bytes, per byte of the window
    Bin = case Data of
              _ when is_binary(Data) -> Data;
              _ -> iolist_to_binary(Data)
          end,
    h3_actions(Rest, body(Id, fun(B = #b{buf = Buf, size = Size}) ->
                                      B#b{buf = [Bin | Buf], size = Size + byte_size(Bin),
                                          fin = Fin =:= fin}
                              end, C));
h3_actions([{trailers, Id, Fields} | Rest], C) ->
    h3_actions(Rest, body(Id, fun(B) -> B#b{trailers = Fields, fin = true} end, C));
h3_actions([{reset, Id, Reason} | Rest], C = #c{ids = Ids, pids = Pids, tunnels = T}) ->
    C1 = case Ids of
             #{Id := Pid} when is_map_key(Pid, T) ->
                 %% a WebSocket session ends through its handler's terminate
                 Pid ! {h2_reset, Reason},
                 forget(Id, C#c{ids = maps:remove(Id, Ids), pids = maps:remove(Pid, Pids)});
             #{Id := Pid} ->
                 exit(Pid, kill),
                 forget(Id, C#c{ids = maps:remove(Id, Ids), pids = maps:remove(Pid, Pids),
                                counted = uncounted(Pid, C)});
             #{} ->
                 forget(Id, C)
         end,
    h3_actions(Rest, C1);
h3_actions([{reset_stream, Id, Code} | Rest], C = #c{quic = Q}) ->
    h3_actions(Rest, C#c{quic = falco_quic_machine:reset(Id, falco_http3_error:code(Code), Q)});
h3_actions([{stop_sending, Id, Code} | Rest], C = #c{quic = Q}) ->
    h3_actions(Rest, C#c{quic = falco_quic_machine:stop(Id, falco_http3_error:code(Code), Q)});
h3_actions([{timer, reset_window, Ms} | Rest], C) ->
    _ = erlang:start_timer(Ms, self(), reset_window),
    h3_actions(Rest, C);
h3_actions([{close, {h3_no_error, _}} | _], C) ->
    %% the end of a graceful shutdown: the last responses go out first
    C#c{ending = true};
h3_actions([{close, {Code, _Why}} | _], C = #c{quic = Q0}) ->
    {Q, Acts} = falco_quic_machine:close(now_us(), falco_http3_error:code(Code), <<>>, Q0),
    quic_actions(Acts, C#c{quic = Q}).

%% A stream's state goes; request body it held and nobody will read is
%% the client's credit again (else the connection's window would shrink
%% with every request that ended unread).
forget(Id, C = #c{bodies = Bodies, waiting = Waiting, quic = Q}) ->
    Q1 = case Bodies of
             #{Id := #b{size = Size}} when Size > 0 ->
                 falco_quic_machine:consumed(Id, Size, now_us(), Q);
             #{} ->
                 Q
         end,
    C#c{bodies = maps:remove(Id, Bodies), waiting = maps:remove(Id, Waiting), quic = Q1}.

%% -- streams ------------------------------------------------------------------------

%% As falco_http2_conn: counted in flight by the connection, 503 over
%% max_requests_in_flight.
spawn_stream(Id, Req, C = #c{stats = Stats, cell = Cell, max_in_flight = Max,
                             retry_after = RA, counted = Counted}) when Stats =/= undefined ->
    {Pid, Counted1} = falco_http2_worker:start_counted(self(), Id, Req, C#c.stream_ctx,
                                                       {Stats, Cell, Max, RA}, Counted),
    started(Id, Pid, C#c{counted = Counted1});
spawn_stream(Id, Req, C) ->
    started(Id, falco_http2_worker:start(self(), Id, Req, C#c.stream_ctx), C).

started(Id, Pid, C = #c{pids = Pids, ids = Ids, bodies = Bodies}) ->
    C#c{pids = Pids#{Pid => Id}, ids = Ids#{Id => Pid}, bodies = Bodies#{Id => #b{}}}.

uncounted(Pid, #c{counted = Counted, stats = Stats, cell = Cell}) ->
    falco_stats:request_done(Pid, Counted, Stats, Cell).

stream_exit(Pid, C = #c{pids = Pids, ids = Ids, h3 = H0, tunnels = T}) ->
    Id = maps:get(Pid, Pids),
    C1 = forget(Id, C#c{pids = maps:remove(Pid, Pids), ids = maps:remove(Id, Ids),
                        tunnels = maps:remove(Pid, T), counted = uncounted(Pid, C)}),
    %% a response left unfinished is reset (nothing if it was complete)
    {H, Acts} = falco_http3_machine:reset_stream(Id, h3_internal_error, H0),
    h3_actions(Acts, C1#c{h3 = H}).

%% Commands from the stream processes (falco_http2_stream).
stream_command(Id, Cmd, C = #c{h3 = H0}) when H0 =/= undefined ->
    case Cmd of
        {response, Status, Headers, Body} ->
            Fin = case iolist_size(Body) of 0 -> fin; _ -> nofin end,
            {H1, A1} = falco_http3_machine:send_response(Id, Status, Headers, Fin, H0),
            {H2, A2} = case Fin of
                           fin -> {H1, []};
                           nofin -> falco_http3_machine:send_data(Id, Body, fin, H1)
                       end,
            h3_actions(A1 ++ A2, C#c{h3 = H2});
        {headers, Status, Headers} ->
            {H, A} = falco_http3_machine:send_response(Id, Status, Headers, nofin, H0),
            h3_actions(A, C#c{h3 = H});
        {inform, Status} ->
            {H, A} = falco_http3_machine:send_response(Id, Status, [], nofin, H0),
            h3_actions(A, C#c{h3 = H});
        {data, Data, Fin, Tag} ->
            {H, A} = falco_http3_machine:send_data(Id, Data, Fin, H0),
            wait(Id, Tag, h3_actions(A, C#c{h3 = H}));
        {trailers, Fields, Tag} ->
            {H, A} = falco_http3_machine:send_trailers(Id, Fields, H0),
            wait(Id, Tag, h3_actions(A, C#c{h3 = H}));
        {read, {grant, N}} ->
            take(Id, body(Id, fun(B = #b{want = Want}) -> B#b{want = Want + N, grant = true} end,
                          C));
        {read, Want} ->
            take(Id, body(Id, fun(B) -> B#b{want = Want} end, C));
        {tunnel, Status, Headers} ->
            %% the 200 of an extended CONNECT (RFC 9220 §3): the stream's
            %% DATA is the WebSocket session's bytes from now on, and its
            %% request no longer counts as one in flight
            {H, A} = falco_http3_machine:send_response(Id, Status, Headers, nofin, H0),
            h3_actions(A, tunnel(Id, C#c{h3 = H}))
    end;
stream_command(_, _, C) ->
    C.

tunnel(Id, C = #c{ids = Ids, tunnels = T}) ->
    case Ids of
        #{Id := Pid} -> C#c{tunnels = T#{Pid => Id}, counted = uncounted(Pid, C)};
        #{} -> C
    end.

body(Id, Fun, C = #c{bodies = Bodies}) ->
    case Bodies of
        #{Id := B} -> take(Id, C#c{bodies = Bodies#{Id := Fun(B)}});
        #{} -> C
    end.

%% The stream's process asked for up to `want' bytes: one message with
%% what is held (or the trailers once the data is out), and the bytes
%% handed over are the client's credit again.
take(Id, C = #c{bodies = Bodies, ids = Ids, quic = Q}) ->
    case {Bodies, Ids} of
        {#{Id := B = #b{want = Want, size = Size, buf = Buf, fin = Fin}}, #{Id := Pid}}
          when Want > 0, (Size > 0 orelse Fin) ->
            case Size of
                0 when B#b.trailers =/= undefined ->
                    Pid ! {h2_trailers, B#b.trailers},
                    C#c{bodies = Bodies#{Id := B#b{want = 0, trailers = undefined}}};
                0 ->
                    Pid ! {h2_data, <<>>, fin},
                    C#c{bodies = Bodies#{Id := B#b{want = 0}}};
                _ ->
                    Data = iolist_to_binary(lists:reverse(Buf)),
                    {Give, Keep} = case Size > Want of
                                       true -> split_binary(Data, Want);
                                       false -> {Data, <<>>}
                                   end,
                    Last = Keep =:= <<>> andalso Fin andalso B#b.trailers =:= undefined,
                    Pid ! {h2_data, Give, case Last of true -> fin; false -> nofin end},
                    %% a read is answered once; a grant lasts for what is left of it
                    Left = case B#b.grant of
                               true -> Want - byte_size(Give);
                               false -> 0
                           end,
                    C#c{bodies = Bodies#{Id := B#b{want = Left, buf = [Keep || Keep =/= <<>>],
                                                   size = byte_size(Keep)}},
                        quic = falco_quic_machine:consumed(Id, byte_size(Give), now_us(), Q)}
            end;
        _ ->
            C
    end.

%% A send that waits for its bytes to be on their way.
wait(_Id, none, C) ->
    C;
wait(Id, Tag, C = #c{waiting = W, send_timeout = Timeout}) ->
    C#c{waiting = W#{Id => {Tag, erlang:monotonic_time(millisecond) + Timeout}}}.

%% After a flush: the waiting sends whose stream has room again are
%% answered; those past send_timeout fail and their stream is reset.
send_deadlines(C = #c{waiting = W}) when map_size(W) =:= 0 ->
    C;
send_deadlines(C = #c{waiting = W, quic = Q, send_buffer = Max}) ->
    Now = erlang:monotonic_time(millisecond),
    maps:fold(fun(Id, {{Pid, Ref}, Deadline}, Acc = #c{waiting = W1}) ->
                      case falco_quic_machine:unsent(Id, Q) of
                          N when is_integer(N), N < Max ->
                              Pid ! {h2_reply, Ref, ok},
                              Acc#c{waiting = maps:remove(Id, W1)};
                          closed ->
                              Pid ! {h2_reply, Ref, {error, closed}},
                              Acc#c{waiting = maps:remove(Id, W1)};
                          _ when Now >= Deadline ->
                              Pid ! {h2_reply, Ref, {error, send_timeout}},
                              {H, A} = falco_http3_machine:reset_stream(Id, h3_request_cancelled,
                                                                       Acc#c.h3),
                              h3_actions(A, Acc#c{h3 = H, waiting = maps:remove(Id, W1)});
                          _ ->
                              Acc
                      end
              end, C, W).

%% What the commands queued goes out now.
flush(C = #c{quic = Q0}) ->
    {Q, Acts} = falco_quic_machine:flush(now_us(), Q0),
    send_deadlines(quic_actions(Acts, C#c{quic = Q})).

%% A WebSocket session learns of the connection's end through its
%% handler's terminate (falco_http2_tunnel:parent_exit/2); the work of a
%% request is killed.
kill_streams(#c{pids = Pids, tunnels = T}) ->
    _ = [case is_map_key(Pid, T) of
             true -> exit(Pid, closed);
             false -> exit(Pid, kill)
         end || Pid <- maps:keys(maps:merge(Pids, T))],
    ok.

%% -- sys -------------------------------------------------------------------------------

%% @private
-spec system_continue(pid(), [sys:dbg_opt()], #c{}) -> no_return().
system_continue(Parent, Debug, C) ->
    loop(C#c{debug = Debug}, Parent).

%% @private
-spec system_terminate(term(), pid(), [sys:dbg_opt()], #c{}) -> no_return().
system_terminate(Reason, _Parent, _Debug, C) ->
    stop(Reason, C).

%% @private
-spec system_code_change(#c{}, module(), term(), term()) -> {ok, #c{}}.
system_code_change(C, _Module, _OldVsn, _Extra) ->
    {ok, C}.

%% @private
-spec system_get_state(#c{}) -> {ok, map()}.
system_get_state(#c{listener = Listener, quic = Q, h3 = H, pids = Pids}) ->
    {ok, #{listener => Listener, protocol => h3,
           quic => falco_quic_machine:info(Q),
           streams => case H of
                          undefined -> 0;
                          _ -> falco_http3_machine:active_streams(H)
                      end,
           stream_processes => maps:keys(Pids)}}.
