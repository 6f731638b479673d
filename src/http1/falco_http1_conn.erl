%% @doc One HTTP/1.1 connection: read a request head, run the pipeline in
%% this very process, answer, repeat (RFC 9112 §9: persistence and
%% pipelining; responses leave in request order because requests are
%% handled one after another).
%%
%% Entered from {@link falco_conn} once the protocol is known. While a
%% request is read and answered the socket is passive (a `recv' per read,
%% no mailbox traffic); between requests it reads passively for at most
%% 100 ms, then waits in `{active, once}' mode in a `receive', where it
%% answers `sys' messages (see idle/1). Time limits: the first request
%% must arrive whole, head and all, within `request_timeout' of the accept
%% (a silent connection, or one that sends only empty lines, is closed at
%% it, or at `idle_timeout' if that is shorter; one that has begun a head
%% gets 408); a later request gets
%% `idle_timeout' for its first byte (keep-alive) and then
%% `request_timeout' for the whole head counted from that byte (so a
%% slowloris client that trickles bytes still gets 408 and is closed); the
%% body is read under {@link falco_body_deadline}. A parse error is answered
%% with its status and the connection is closed: once framing is in doubt
%% no further byte can be trusted (RFC 9112 §11.2).
%%
%% @private internal to falco
-module(falco_http1_conn).

-export([enter/2, busy_state/1]).
-export([idle/2]).
-export([system_continue/3, system_terminate/4, system_code_change/4, system_get_state/1]).

%% How long a connection between requests reads passively before it waits
%% in `receive' (see idle/1).
-define(BUSY_WAIT, 100).
%% The read buffer of a connection whose heads do not fit the listener's
%% (wide_head/1).
-define(WIDE_HEAD_BUFFER, 2048).
%% What falco:connection_list/1 reads from the process dictionary of a
%% connection busy with a request: the connection's listener and peer,
%% and how many requests it served before this one.
-define(BUSY_KEY, '$falco_connection').
-define(SERVED_KEY, '$falco_served').

-record(conn, {socket :: falco_transport:socket(),
               transport :: falco_transport:transport(),
               tags :: {atom(), atom(), atom(), atom()},
               parent :: pid(),
               ctx :: falco_conn:ctx(),
               handler :: falco_handler:handler(),
               conf :: map(),
               limits :: falco_http1:limits(),
               served = 0 :: non_neg_integer(),
               max_requests :: pos_integer() | infinity,
               idle_timeout :: timeout(),
               request_timeout :: timeout(),
               %% how long an idle connection waits before it hibernates
               hibernate_after :: timeout(),
               %% the first request's deadline (request_timeout from the
               %% accept); `undefined' once it has been read
               first :: integer() | infinity | undefined,
               tracker :: falco_http1_stream:tracker(),
               %% falco_stats: the listener's counters, this connection's cell,
               %% max_requests_in_flight and its Retry-After
               stats :: falco_stats:stats(),
               cell :: falco_stats:cell(),
               max_in_flight :: pos_integer() | infinity,
               retry_after :: pos_integer(),
               %% the socket's read buffer was widened for a long head
               wide_head = false :: boolean(),
               %% responses to pipelined requests not sent yet
               %% (falco_http1_stream:held/1): sent before any read or close
               held = none :: falco_http1_stream:held() | none,
               %% read from the listener's configuration once (its map is
               %% large enough that every read is a hash lookup): what each
               %% request's stream state starts from, and the drain flag
               stream :: falco_http1_stream:state(),
               drain :: falco_drain:flag() | undefined,
               debug = [] :: [sys:dbg_opt()]}).

%% @doc Serves HTTP/1.1 on the connection of `Ctx' ({@link falco_conn}),
%% `Buf' being bytes already read, until it closes (`closed') or a request
%% asks to switch protocols (`{upgrade, h2c, Settings, Req, Rest}': the 101
%% is sent, the caller continues with HTTP/2).
-spec enter(falco_conn:ctx(), binary()) ->
          closed | {upgrade, h2c, falco_http2_frame:settings(), map(), binary()}
        | {upgrade, websocket, map(), binary()}.
enter(Ctx = #{socket := Socket, transport := T, parent := Parent, handler := Handler,
              conf := Conf = #{stats := Stats}, deadline := First, cell := Cell}, Buf) ->
    C = #conn{socket = Socket, transport = T, tags = falco_transport:messages(T),
              parent = Parent, ctx = Ctx, handler = Handler, conf = Conf,
              limits = maps:get(limits, Conf),
              max_requests = maps:get(max_keep_alive_requests, Conf),
              idle_timeout = maps:get(idle_timeout, Conf),
              request_timeout = maps:get(request_timeout, Conf),
              hibernate_after = maps:get(hibernate_after, Conf),
              first = First,
              tracker = falco_http1_stream:tracker(),
              stats = Stats, cell = Cell,
              max_in_flight = maps:get(max_requests_in_flight, Conf),
              retry_after = maps:get(shed_retry_after, Conf),
              stream = falco_http1_stream:template(Socket, T, Conf),
              drain = maps:get(drain, Conf, undefined)},
    ok = falco_stats:protocol(Stats, Cell, http1),
    %% For falco:connection_list/1 while a request keeps this process from
    %% answering sys (the request in progress is the pipeline's mark).
    put(?BUSY_KEY, maps:with([listener, peer, scheme, proxy], Ctx)),
    wait(C, Buf).

%% Between requests: the next head may already be buffered (pipelining).
%% Bytes that are only empty lines (RFC 9112 §2.2: some clients send a CRLF
%% after a body) do not start a request: the connection stays idle, so it
%% gets the wait for a first byte and a silent close, never an unsolicited 408.
wait(C = #conn{held = none}, <<>>) ->
    idle(C);
wait(C0, <<>>) ->
    case flush(C0) of
        {ok, C} -> idle(C);
        closed -> closed
    end;
wait(C, Buf) ->
    case only_crlf(Buf) of
        true -> wait(C, <<>>);
        false -> head(C, falco_http1:parse(Buf, C#conn.limits), deadline(C), Buf)
    end.

only_crlf(<<"\r\n", Rest/binary>>) -> only_crlf(Rest);
only_crlf(Bin) -> Bin =:= <<>>.

%% The deadline of the head: the first request's, counted from the accept,
%% or request_timeout from the first byte of a later one.
deadline(#conn{first = undefined, request_timeout = T}) -> falco_transport:deadline(T);
deadline(#conn{first = First}) -> First.

%% How long to wait for the first byte of a request: idle_timeout, and for
%% the first request no later than its deadline either.
idle_deadline(#conn{first = undefined, idle_timeout = Idle}) -> falco_transport:deadline(Idle);
idle_deadline(#conn{first = First, idle_timeout = Idle}) -> min(First, falco_transport:deadline(Idle)).

%% `Start' is the start of the request as received, kept only for a reply
%% to a request rejected before its head was parsed: if it is a HEAD
%% request, that reply has no content either (RFC 9110 §9.3.2).
head(C, {ok, Request, Rest}, _Deadline, _Start) ->
    upgrade(C, Request, Rest);
head(C0 = #conn{held = Held}, More = {more, _}, Deadline, Start) when Held =/= none ->
    case flush(C0) of
        {ok, C} -> head(C, More, Deadline, Start);
        closed -> closed
    end;
head(C0 = #conn{socket = Sock, transport = T}, {more, Cont}, Deadline, Start) ->
    C = wide_head(C0),
    case T:recv(Sock, 0, falco_transport:remaining(Deadline)) of
        {ok, Data} ->
            head(C, falco_http1:parse_more(Data, Cont), Deadline, start(Start, Data));
        {error, timeout} ->
            reject(C, request_timeout, method(Start));
        {error, _} ->
            close(C)
    end;
head(C, {error, Reason}, _Deadline, Start) ->
    reject(C, Reason, method(Start)).

%% A new connection reads with a narrow buffer
%% (falco_transport:accept_buffer/2: what a WebSocket session upgraded by
%% the first request keeps). A head that one read did not bring whole is
%% read on with a wider one, and so are the connection's next heads (a
%% client that sends long heads keeps sending them); a connection that
%% stays after its first response gets the keep-alive buffer
%% (falco_transport:read_buffer/2) if it has not widened already.
wide_head(C = #conn{wide_head = false}) ->
    ok = set_buffer(?WIDE_HEAD_BUFFER, C),
    C#conn{wide_head = true};
wide_head(C) ->
    C.

keep_alive_buffer(C = #conn{served = 0, wide_head = false, transport = T}) ->
    set_buffer(falco_transport:read_buffer(T, inet), C);
keep_alive_buffer(_) ->
    ok.

set_buffer(Size, #conn{transport = gen_tcp, socket = Sock, conf = Conf}) ->
    case maps:get(inet_backend, Conf, inet) of
        inet -> _ = falco_transport:setopts(gen_tcp, Sock, [{buffer, Size}]), ok;
        socket -> ok
    end;
set_buffer(_, _) ->
    ok.

start(Start, Data) when byte_size(Start) < 5 -> <<Start/binary, Data/binary>>;
start(Start, _Data) -> Start.

method(<<"HEAD ", _/binary>>) -> #{method => <<"HEAD">>};
method(_) -> #{}.

upgrade(C = #conn{transport = gen_tcp, conf = #{protocols := Protocols}}, Request, Rest) ->
    %% RFC 7540 §3.2: HTTP/1.1 Upgrade to h2c, answered on stream 1.
    case falco_protocol:h2c_settings(Request) of
        {ok, Settings} ->
            case falco_protocol:select(tcp, h2c_upgrade, Protocols) of
                h2c_upgrade -> upgrade_h2c(C, Request, Settings, Rest);
                _ -> serve(C, Request, Rest)
            end;
        no ->
            serve(C, Request, Rest)
    end;
upgrade(C, Request, Rest) ->
    serve(C, Request, Rest).

upgrade_h2c(C0 = #conn{held = Held}, Request, Settings, Rest) when Held =/= none ->
    case flush(C0) of
        {ok, C} -> upgrade_h2c(C, Request, Settings, Rest);
        closed -> closed
    end;
upgrade_h2c(C = #conn{socket = Sock, transport = T}, Request, Settings, Rest) ->
    case T:send(Sock, <<"HTTP/1.1 101 Switching Protocols\r\nconnection: Upgrade\r\n"
                        "upgrade: h2c\r\n\r\n">>) of
        ok ->
            ok = forget_busy(),
            {upgrade, h2c, Settings, with_connection(Request, C), Rest};
        {error, _} ->
            close(C)
    end.

serve(C0 = #conn{held = Held}, Request = #{body := Framing}, Rest)
  when Held =/= none, Framing =/= none ->
    %% Responses held back go before anything is read of a body (or a
    %% 100 Continue sent for it).
    case flush(C0) of
        {ok, C} -> serve(C, Request, Rest);
        closed -> closed
    end;
serve(C0 = #conn{stats = Stats, cell = Cell, max_in_flight = MaxInFlight,
                 retry_after = RetryAfter, held = Held}, Request, Rest) ->
    %% What is held is the request's stream's to send now.
    C = forget_held(C0),
    %% Counted in flight around the pipeline (falco_stats): a process killed
    %% in its middle has its count given back by its acceptor.
    case falco_stats:request_start(Stats, Cell, MaxInFlight, RetryAfter) of
        ok ->
            Result = serve(C, Held, Request, Rest, handler),
            ok = falco_stats:request_end(Stats, Cell),
            after_serve(C, Result);
        {shed, Reason} ->
            %% answered like any response, so a keep-alive connection stays
            %% (an unread body is discarded or closes it, as after a handler)
            after_serve(C, serve(C, Held, Request, Rest, {shed, Reason}))
    end.

serve(C = #conn{served = Served, max_requests = Max, tracker = Tracker, stream = Template},
      Held, Request, Rest, Run) ->
    #{version := Version, keep_alive := KeepAlive0, body := Framing,
      expect_continue := Continue} = Request,
    put(?SERVED_KEY, Served),
    KeepAlive = KeepAlive0 andalso Served + 1 < Max,
    S0 = falco_http1_stream:with_body(
           Framing, Rest, Continue, Tracker,
           falco_http1_stream:hold_over(Held, falco_http1_stream:new(Template, Version, KeepAlive))),
    Req = (with_connection(Request, C))#{stream => {falco_http1_stream, S0}},
    Result = case Run of
                 handler ->
                     falco_pipeline:serve(Req, C#conn.handler, falco_http1_stream, S0, C#conn.conf);
                 {shed, Reason} ->
                     falco_pipeline:shed(Reason, Req, falco_http1_stream, S0)
             end,
    {Result, KeepAlive0}.

after_serve(C, {{ok, S}, KeepAlive0}) ->
    case falco_http1_stream:switched(S) of
        undefined -> next(C, S, KeepAlive0);
        Upgrade -> switch(C, S, Upgrade)
    end;
after_serve(C, {{error, _}, _}) ->
    close(C).

%% The response is out: on to the next request, or close.
next(C0 = #conn{served = Served}, S, KeepAlive0) ->
    C = case falco_http1_stream:held(S) of
            none -> C0;
            Held -> C0#conn{held = Held}
        end,
    case falco_http1_stream:body_finish(S) of
        {ok, Buf} ->
            ok = drop_strays(C),
            ok = keep_alive_buffer(C),
            wait(C#conn{served = Served + 1, first = undefined}, Buf);
        %% The client asked to close and sent nothing more (§9.6).
        {close, true} when not KeepAlive0 -> quick_close(C);
        {close, _} -> close(C)
    end.

%% The 101 of a WebSocket handshake is out: the connection is the
%% session's, with the bytes that followed the request.
switch(C, S, Upgrade) ->
    case falco_http1_stream:body_finish(S) of
        {ok, Buf} ->
            ok = drop_strays(C),
            ok = forget_busy(),
            {upgrade, websocket, Upgrade, Buf};
        {close, _} -> close(C)
    end.

%% The connection speaks another protocol now.
forget_busy() ->
    _ = erase(?BUSY_KEY),
    _ = erase(?SERVED_KEY),
    ok.

%% An error status, then close: framing is in doubt (RFC 9112 §11.2). The
%% reply is the pipeline's, as for every protocol; `Request' is what is
%% known of the request (its method: no content in a reply to HEAD).
reject(C = #conn{socket = Sock, transport = T, conf = Conf, held = Held}, Reason, Request) ->
    S = falco_http1_stream:hold_over(Held, falco_http1_stream:new(Sock, T, {1, 1}, false, Conf)),
    _ = falco_pipeline:error_reply(Reason, with_connection(Request, C), falco_http1_stream, S),
    close(C#conn{held = none}).

%% Lingering close (RFC 9112 §9.6), the one rule of falco_transport; what
%% is held goes first.
close(#conn{socket = Sock, transport = T, held = Held}) ->
    _ = falco_http1_stream:send_held(T, Sock, Held),
    ok = falco_transport:linger_close(T, Sock),
    closed.

%% The connection's record is not copied per request when nothing is held
%% (every request that is not pipelined).
forget_held(C = #conn{held = none}) -> C;
forget_held(C) -> C#conn{held = none}.

%% Sends the responses held back (pipelining, see falco_http1_stream:held/1).
flush(C = #conn{socket = Sock, transport = T, held = Held}) ->
    case falco_http1_stream:send_held(T, Sock, Held) of
        ok -> {ok, C#conn{held = none}};
        {error, _} -> quick_close(C#conn{held = none})
    end.

%% The client asked to close (`Connection: close', or 1.0 without
%% keep-alive), its request was read to the end and nothing follows it: it
%% sends nothing more (RFC 9112 §9.6), so there is nothing to drain and a
%% plain close is safe. This halves the work of a connection-per-request
%% client.
quick_close(#conn{socket = Sock, transport = T, held = Held}) ->
    _ = falco_http1_stream:send_held(T, Sock, Held),
    ok = falco_transport:close_socket(T, Sock),
    closed.

%% Messages the handler left in this process's mailbox are dropped before
%% the next request is read (100 requests that each left 1000 messages held
%% 100,000 messages and 127 MB); sys messages and the parent's exit are
%% kept, in order, for the wait that handles them.
drop_strays(#conn{parent = Parent}) ->
    case process_info(self(), message_queue_len) of
        {message_queue_len, 0} -> ok;
        _ -> keep(drop(Parent, []))
    end.

drop(Parent, Kept) ->
    receive
        {system, _, _} = M -> drop(Parent, [M | Kept]);
        {'EXIT', Parent, _} = M -> drop(Parent, [M | Kept]);
        _ -> drop(Parent, Kept)
    after 0 ->
        lists:reverse(Kept)
    end.

keep(Messages) ->
    _ = [self() ! M || M <- Messages],
    ok.

%% What every request of this connection carries (and its PROXY header's
%% information when it came with one).
with_connection(Request, #conn{ctx = #{peer := Peer, scheme := Scheme, listener := Listener,
                                       proxy := Proxy}}) ->
    Request#{peer => Peer, scheme => Scheme, listener => Listener, proxy => Proxy};
with_connection(Request, #conn{ctx = #{peer := Peer, scheme := Scheme, listener := Listener}}) ->
    Request#{peer => Peer, scheme => Scheme, listener => Listener}.

%% -- waiting for the next request ---------------------------------------------

%% Between requests. A busy keep-alive connection gets its next request
%% within moments: it is read with a passive `recv' of at most 100 ms
%% (after a look for `sys' messages and its parent's exit), the path it
%% had before it answered `sys'. A connection idle for longer waits for
%% the rest of idle_timeout with the socket in `{active, once}' mode, in
%% `receive', where it answers `sys' (and its parent) at once; the message
%% that brings the next bytes leaves the socket passive again for the rest
%% of the request. The heap is collected when the connection goes idle. So a `sys' request waits at most 100 ms, and the cost of
%% being sys-aware is paid only by connections that are idle anyway: with
%% `{active, once}' between every two requests, keep-alive hello cost
%% 13 -> 17 us of server CPU per request and echo 16 -> 21 us (bench,
%% falco vs elli vs cowboy in one run, medians of 3, 2026-11-24; elli and
%% cowboy unchanged between the runs).
idle(C = #conn{first = undefined, drain = Drain}) ->
    %% A listener that drains closes an idle keep-alive connection at once
    %% (told by a {falco_drain, _} message, or seen here after a response).
    %% A new connection's first request is still served (and closes): it
    %% may be on its way already.
    case falco_drain:draining(Drain) of
        true -> quick_close(C);
        false -> idle_busy(C)
    end;
idle(C) ->
    idle_busy(C).

idle_busy(C = #conn{socket = Sock, transport = T, parent = Parent}) ->
    Deadline = idle_deadline(C),
    receive
        {falco_drain, _} when C#conn.first =:= undefined ->
            quick_close(C);
        {system, From, Request} ->
            sys:handle_system_msg(Request, From, Parent, ?MODULE, C#conn.debug, {idle, Deadline, C});
        {'EXIT', Parent, Reason} ->
            _ = quick_close(C),
            exit(Reason)
    after 0 ->
        %% Others first: under load the next request is usually on its way
        %% when the response has just gone out, and a read that finds the
        %% socket empty costs a wait registration and a wake-up, more than
        %% the requests of the connections that get to run meanwhile. With
        %% nothing else runnable the yield returns at once. Keep-alive
        %% hello on the inet backend 24 -> 13 us of CPU per request, echo
        %% 30 -> 18, headers_heavy 52 -> 33 (bench/run, 2 runs per build
        %% alternated, 2026-11-25; docs/internals/http1.md).
        erlang:yield(),
        case T:recv(Sock, 0, min(?BUSY_WAIT, falco_transport:remaining(Deadline))) of
            {ok, Data} ->
                case only_crlf(Data) of
                    true -> go_idle(C, Deadline);
                    false -> wait(C, Data)
                end;
            {error, timeout} ->
                go_idle(C, Deadline);
            {error, _} ->
                quick_close(C)
        end
    end.

%% The connection is idle for longer than a moment: what the last request
%% left on the heap (a large body, say) is collected now, not whenever the
%% next request comes, which may be never while the client keeps the
%% connection (an idle connection after a 10 MB upload held 0.75-2.1 MB).
go_idle(C, Deadline) ->
    _ = erlang:garbage_collect(),
    idle_again(C, Deadline).

%% @private The wait in `{active, once}' mode, also the entry after
%% hibernation. After `hibernate_after' with nothing received the process
%% hibernates (its heap collected and shrunk to its live data) and wakes
%% on the next message; `Deadline' is absolute, so the wait for the next
%% request keeps its idle_timeout whether or not it hibernated.
-spec idle(#conn{}, integer() | infinity) ->
          closed | {upgrade, h2c, falco_http2_frame:settings(), map(), binary()}
        | {upgrade, websocket, map(), binary()}.
idle(C = #conn{socket = Sock, tags = {DataTag, ClosedTag, ErrorTag, _}, parent = Parent},
     Deadline) ->
    receive
        {DataTag, Sock, Data} ->
            case only_crlf(Data) of
                %% Empty lines do not start a request, nor restart the wait.
                true -> idle_again(C, Deadline);
                false -> wait(C, Data)
            end;
        {ClosedTag, Sock} ->
            quick_close(C);
        {ErrorTag, Sock, _} ->
            quick_close(C);
        {falco_drain, _} when C#conn.first =:= undefined ->
            %% the listener drains: nothing is owed, close now
            quick_close(C);
        {system, From, Request} ->
            sys:handle_system_msg(Request, From, Parent, ?MODULE, C#conn.debug, {idle, Deadline, C});
        {'EXIT', Parent, Reason} ->
            _ = quick_close(C),
            exit(Reason);
        _ ->
            idle(C, Deadline)
    after min(falco_transport:remaining(Deadline), C#conn.hibernate_after) ->
        case falco_transport:remaining(Deadline) of
            %% Nothing was asked, nothing is owed: a plain close.
            0 -> quick_close(C);
            _ -> falco_hibernate:sleep(?MODULE, idle, [C, Deadline], Deadline)
        end
    end.

idle_again(C = #conn{socket = Sock, transport = T}, Deadline) ->
    case falco_transport:setopts(T, Sock, [{active, once}]) of
        ok -> idle(C, Deadline);
        {error, _} -> quick_close(C)
    end.

%% @private
-spec system_continue(pid(), [sys:dbg_opt()], {idle, integer() | infinity, #conn{}}) ->
          closed | {upgrade, h2c, falco_http2_frame:settings(), map(), binary()}
        | {upgrade, websocket, map(), binary()}.
system_continue(_Parent, Debug, {idle, Deadline, C}) ->
    %% The socket may not be in {active, once} mode yet (a sys message seen
    %% before the passive read): setting it again is harmless.
    idle_again(C#conn{debug = Debug}, Deadline).

%% @private
-spec system_terminate(term(), pid(), [sys:dbg_opt()], {idle, integer() | infinity, #conn{}}) ->
          no_return().
system_terminate(Reason, _Parent, _Debug, {idle, _, C}) ->
    _ = quick_close(C),
    exit(Reason).

%% @private
-spec system_code_change(term(), module(), term(), term()) -> {ok, term()}.
system_code_change(State, _Module, _OldVsn, _Extra) ->
    {ok, State}.

%% @doc What a connection busy with a request says of itself, from its
%% process dictionary `Dict' (see falco:connection_list/1): as
%% system_get_state/1 would, `undefined' for a process that is not an
%% HTTP/1.1 connection.
-spec busy_state([{term(), term()}]) -> map() | undefined.
busy_state(Dict) ->
    case {lists:keyfind(?BUSY_KEY, 1, Dict), lists:keyfind(?SERVED_KEY, 1, Dict)} of
        {{_, Info}, {_, Served}} -> Info#{protocol => http1, phase => request, requests => Served};
        _ -> undefined
    end.

%% @private
-spec system_get_state({idle, integer() | infinity, #conn{}}) -> {ok, map()}.
system_get_state({idle, _, #conn{ctx = Ctx, served = Served}}) ->
    {ok, (maps:with([listener, peer, scheme, proxy], Ctx))#{protocol => http1, phase => idle,
                                                       requests => Served}}.
