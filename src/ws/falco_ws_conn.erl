%% @doc One WebSocket session (RFC 6455): the process that ran the
%% upgrading request goes on as the session, reading frames
%% ({@link falco_ws_frame}), turning them into messages
%% ({@link falco_ws_session}) and running the handler's callbacks
%% ({@link falco_ws_handler}) in the same process.
%%
%% The bytes come and go through a carrier ({@link falco_ws_carrier}): the
%% socket after the HTTP/1.1 101 ({@link falco_ws_socket}, entered here by
%% {@link enter/3}), or a stream tunnel that a protocol layer above makes
%% and hands to {@link run/4} (RFC 8441, RFC 9220). The loop is the same
%% for every carrier: after a message is handled the mailbox is looked at,
%% then the carrier is polled for bytes already there, and only then armed
%% (asked for the next input) and waited for in `receive', with the
%% handler's own messages (`handle_info') and `sys' messages served
%% between reads. A carrier's end of input (a tunnel's end of stream) is
%% the peer's TCP close; its end by a reset or a lost connection ends the
%% session with `{error, Reason}'; the listener's stop, with 1001 and
%% `shutdown'.
%% Limits: a frame or message past its size limit is refused from its
%% header (1009); `idle_timeout' runs from the last byte received, with an
%% optional ping after `ping_interval' of silence; writes are bounded by
%% the carrier's backpressure (the listener's `send_timeout' on a socket),
%% so a peer that does not read makes the session end rather than buffer
%% (the process blocks in `send' until then: that is the backpressure on
%% a handler that sends faster than the peer reads). After a close frame
%% is sent, data frames are dropped and the peer's close frame is awaited
%% for `close_timeout', then the carrier closes (the server closes TCP
%% first, §7.1.1). When the listener stops (the parent exits), the peer
%% gets 1001 and the handler `terminate(shutdown, ...)'; when it drains,
%% the same 1001 starts a close handshake.
%%
%% @private internal to falco
-module(falco_ws_conn).

-export([enter/3, run/4]).
-export([loop/1]).
-export([system_continue/3, system_terminate/4, system_code_change/4, system_get_state/1]).

-type upgrade() :: #{handler := module(), state := term(), opts := map(),
                     deflate := undefined | falco_ws_deflate:params(), req := map(),
                     hibernate_after => timeout()}.
-export_type([upgrade/0]).

%% Frames whose payload still lacks at least this many bytes are unmasked
%% read by read rather than parsed whole (gathering/3).
-define(GATHER, 16384).

%% The length of a gathered frame's key stream: the largest read the
%% carriers make while a large frame arrives (mask/3 repeats it for more).
-define(KEY_STREAM, 65536).

-record(ws, {carrier :: falco_ws_carrier:carrier(),
             %% the carrier's input ended (a tunnel's end of stream): no
             %% more bytes will come
             eof = false :: boolean(),
             parent :: pid(),
             req :: map(),
             handler :: module(),
             hstate :: term(),
             session :: falco_ws_session:session(),
             deflate :: undefined | falco_ws_deflate:state(),
             parse :: falco_ws_frame:parse_opts(),
             buf = <<>> :: binary(),
             %% of the frame being received: how many payload bytes were
             %% checked as UTF-8 already, and the state after them (`none':
             %% not checkable text; `unknown': not looked at yet)
             peek = {0, unknown} :: {non_neg_integer(), falco_ws_utf8:state() | none | unknown},
             %% a large frame being gathered (see gather/2): its opcode, FIN
             %% and RSV1, the payload bytes still to come, the payload so
             %% far (unmasked), its size, the frame's key stream
             more = none :: none | {{falco_ws_frame:opcode(), falco_ws_frame:fin(), boolean()},
                                    pos_integer(), binary(), non_neg_integer(), binary()},
             idle_timeout :: timeout(),
             ping_interval :: timeout(),
             close_timeout :: timeout(),
             %% the listener's: how long the session waits with nothing
             %% received before it hibernates
             hibernate_after = infinity :: timeout(),
             %% the monotonic ms of the last byte from the peer
             last_in :: integer(),
             ping_sent = false :: boolean(),
             %% the deadline of the close handshake once our close frame is out
             closing = false :: false | integer() | infinity,
             %% what terminate/2 is told when the close handshake ends
             stop_reason = normal :: falco_ws_handler:terminate_reason(),
             debug = [] :: [sys:dbg_opt()]}).

%% @doc Runs the session on the connection of `Ctx' ({@link falco_conn}),
%% whose 101 has been sent; `Buf' holds bytes already read after the
%% request. Returns when the connection is closed.
-spec enter(falco_conn:ctx(), binary(), upgrade()) -> closed.
enter(#{socket := Sock, transport := T, parent := Parent, conf := Conf = #{stats := Stats},
        cell := Cell}, Buf, Upgrade) ->
    ok = falco_stats:protocol(Stats, Cell, websocket),
    run({falco_ws_socket, falco_ws_socket:new(T, Sock)}, Parent, Buf,
        Upgrade#{hibernate_after => maps:get(hibernate_after, Conf)}).

%% @doc Runs the session on `Carrier' ({@link falco_ws_carrier}), whose
%% opening handshake is done, in the calling process; `Parent' is the
%% process whose exit stops it (see the carrier's `parent_exit/2') and
%% `Buf' the bytes already received. Returns when the session is over.
-spec run(falco_ws_carrier:carrier(), pid(), binary(), upgrade()) -> closed.
run(Carrier, Parent, Buf, Upgrade = #{handler := Mod, state := HState, opts := Opts,
                                       deflate := Params, req := Req}) ->
    O = Opts,
    %% the optional callbacks are looked up with function_exported/3, which
    %% is false for a module not loaded yet
    _ = code:ensure_loaded(Mod),
    %% the listener's stop reaches the session as a message: the peer gets
    %% 1001 and the handler terminate(shutdown, ...); other exits of linked
    %% processes are the handler's, through handle_info
    _ = process_flag(trap_exit, true),
    Deflate = case Params of
                  undefined -> undefined;
                  _ -> falco_ws_deflate:init(Params, compress_config(maps:get(compress, O)))
              end,
    S = #ws{carrier = Carrier, parent = Parent,
            req = about(Req), handler = Mod, hstate = HState,
            session = falco_ws_session:new((maps:with([max_message_size, max_fragments,
                                                        max_empty_fragments], O))#{deflate => Deflate}),
            deflate = Deflate,
            parse = #{max_frame_size => maps:get(max_frame_size, O),
                      rsv1 => Deflate =/= undefined},
            idle_timeout = maps:get(idle_timeout, O),
            ping_interval = maps:get(ping_interval, O),
            close_timeout = maps:get(close_timeout, O),
            hibernate_after = maps:get(hibernate_after, Upgrade, infinity),
            last_in = now_ms()},
    case erlang:function_exported(Mod, init, 1) of
        true -> callback(fun() -> Mod:init(HState) end, S, fun(S1) -> frames(Buf, S1) end);
        false -> frames(Buf, S)
    end.

%% What the session keeps of the upgrading request, for its reports and
%% sys:get_state: copied, so that an idle session does not hold the read
%% buffer the request's binaries point into (8 KB per idle connection
%% with the listener's read buffer, ws_idle in the bench).
about(Req) ->
    maps:map(fun(_, V) when is_binary(V) -> binary:copy(V);
                (_, V) -> V
             end, maps:with([method, path, peer, listener, version], Req)).

compress_config(Config) when is_map(Config) -> Config;
compress_config(_) -> #{}.

now_ms() -> erlang:monotonic_time(millisecond).

%% -- reading -----------------------------------------------------------------

%% Parses what is buffered, then waits for more.
frames(Bin, S = #ws{parse = P}) ->
    case falco_ws_frame:parse(Bin, P) of
        {ok, Frame, Rest} ->
            parsed(Frame, Rest, S);
        {more, N} when S#ws.closing =:= false ->
            partial(Bin, N, S);
        {more, _} ->
            wait(S#ws{buf = Bin});
        {error, _} when S#ws.closing =/= false ->
            finish(S#ws.stop_reason, S);
        {error, Why} ->
            fail(falco_ws_frame:close_code(Why), Why, S)
    end.

%% A whole frame, `Rest' the bytes after it. The payload bytes checked as
%% UTF-8 while the frame arrived are not checked again (1 MB text frames
%% echoed on 8 connections, 5 alternated pairs of 4 s: 367-530 -> 543-806
%% messages, 2026-11-30).
parsed(Frame, Rest, S = #ws{peek = Peek}) ->
    S1 = S#ws{peek = {0, unknown}},
    case S#ws.closing of
        false -> frame(Frame, checked(Peek), Rest, S1);
        _ -> closing_frame(Frame, Rest, S1)
    end.

checked({Done, U}) when Done > 0, U =/= none, U =/= unknown -> {Done, U};
checked(_) -> none.

%% A text frame arriving in pieces is checked as it comes: invalid UTF-8
%% fails the connection at once, not when the frame is complete (RFC 6455
%% §8.1; Autobahn 6.4.3, 6.4.4). Only the new bytes are unmasked and
%% checked each time.
partial(Bin, Need, S = #ws{peek = {Done, U0}, session = Session}) ->
    case falco_ws_frame:peek(Bin) of
        {Op, _, Rsv1, Key, Part} when byte_size(Part) > Done, U0 =/= none ->
            case U0 of
                unknown -> partial_check(Bin, Need, Key, Part, Done, falco_ws_session:partial_text(Op, Rsv1, Session), S);
                _ -> partial_check(Bin, Need, Key, Part, Done, {ok, U0}, S)
            end;
        {_, _, _, _, _} when U0 =:= none ->
            wait(gathering(Bin, Need, S));
        _ ->
            %% only the header so far, or a control frame
            wait(S#ws{buf = Bin})
    end.

partial_check(Bin, Need, _Key, _Part, _Done, none, S) ->
    wait(gathering(Bin, Need, S#ws{peek = {0, none}}));
partial_check(Bin, Need, Key, Part, Done, {ok, U0}, S) ->
    New = binary:part(Part, Done, byte_size(Part) - Done),
    Plain = falco_ws_frame:mask(New, falco_ws_frame:key_stream(Key, byte_size(New)), Done),
    case falco_ws_utf8:validate(Plain, U0) of
        {ok, U} -> wait(gathering(Bin, Need, S#ws{peek = {byte_size(Part), U}}));
        {error, invalid_utf8} -> fail(1007, invalid_utf8, S)
    end.

%% A data frame whose header is in and whose payload still lacks `Need'
%% bytes: below ?GATHER they are appended to the buffer as they come and
%% the frame is parsed whole. A larger one is unmasked read by read into
%% one binary that grows in place (gather/2), the frame's key stream made
%% once: joining the masked reads and then unmasking the whole held three
%% copies of the payload and a key as long as it (ws_large: 3.1 MB of
%% binaries per connection at the peak, 2026-11-30); appending each read
%% to the parse buffer copied what came before it every time (ws_large
%% 11 MB/s against cowboy's 164).
gathering(Bin, Need, S) when Need < ?GATHER ->
    S#ws{buf = Bin};
gathering(Bin, Need, S0) ->
    {Op, Fin, Rsv1, Key, Part} = falco_ws_frame:peek(Bin),
    S = carrier_gather(true, S0),
    Stream = falco_ws_frame:key_stream(Key, ?KEY_STREAM),
    S#ws{buf = <<>>, more = {{Op, Fin, Rsv1}, Need, falco_ws_frame:mask(Part, Stream, 0),
                             byte_size(Part), Stream}}.

%% New bytes of a frame being gathered: unmasked and appended; checked as
%% UTF-8 as they come if the frame is checkable text (the bytes before it
%% were); the frame goes on with the bytes after it once it is whole.
gather(Data, S = #ws{more = {Head, Need, Payload, Size, Stream}, peek = {_, U0}})
  when byte_size(Data) < Need ->
    Plain = falco_ws_frame:mask(Data, Stream, Size),
    More = {Head, Need - byte_size(Data), <<Payload/binary, Plain/binary>>,
            Size + byte_size(Data), Stream},
    case U0 of
        none ->
            wait(S#ws{more = More});
        _ ->
            case falco_ws_utf8:validate(Plain, U0) of
                {ok, U} -> wait(S#ws{more = More, peek = {Size + byte_size(Data), U}});
                {error, invalid_utf8} -> fail(1007, invalid_utf8, S)
            end
    end;
gather(Data, S = #ws{more = {{Op, Fin, Rsv1}, Need, Payload, Size, Stream}}) ->
    <<Last:Need/binary, Rest/binary>> = Data,
    Plain = falco_ws_frame:mask(Last, Stream, Size),
    parsed({frame, Op, Fin, Rsv1, <<Payload/binary, Plain/binary>>}, Rest,
           carrier_gather(false, S#ws{more = none})).

%% Our close frame is out: what is buffered is parsed for the peer's close;
%% a frame being gathered is gathered to its end first, its bytes no longer
%% checked as UTF-8 (a 1007 now would be a second close frame).
close_sent(Reason, S = #ws{close_timeout = T}) ->
    S1 = S#ws{closing = at(now_ms(), T), stop_reason = Reason},
    case S1 of
        #ws{more = none, buf = Buf} -> frames(Buf, S1#ws{buf = <<>>});
        _ -> wait(S1#ws{peek = {0, none}})
    end.

frame(Frame, Checked, Rest, S = #ws{session = Session}) ->
    case falco_ws_session:frame(Frame, Checked, Session) of
        {ok, Events, Session1} ->
            events(Events, Rest, S#ws{session = Session1});
        {error, Code, Why} ->
            fail(Code, Why, S)
    end.

%% Our close frame is out: only the peer's close matters now (§7.1.2).
closing_frame({frame, close, _, _, _}, _Rest, S) ->
    finish(S#ws.stop_reason, S);
closing_frame(_, Rest, S) ->
    frames(Rest, S).

events([], Rest, S) ->
    frames(Rest, S);
events([{ping, Payload} | More], Rest, S) ->
    next(send_frames([{pong, Payload}], S), More, Rest);
events([{pong, _} | More], Rest, S) ->
    events(More, Rest, S);
events([{close, Close} | _], _Rest, S) ->
    Reply = case Close of
                none -> falco_ws_frame:encode(close, <<>>);
                {Code, _} -> falco_ws_frame:encode(close, <<Code:16>>)
            end,
    Reason = case Close of
                 none -> {remote, none};
                 {Code1, Text} -> {remote, Code1, Text}
             end,
    finish(Reason, S, {close, Reply});
events([{_Type, _Data} = Message | More], Rest, S = #ws{handler = Mod, hstate = HState}) ->
    callback(fun() -> Mod:handle_in(Message, HState) end, S,
             fun(S1) -> events(More, Rest, S1) end).

next({ok, S}, More, Rest) -> events(More, Rest, S);
next({error, Reason, S}, _, _) -> finish({error, Reason}, S).

%% Waits for bytes, the handler's messages, sys messages, the parent's
%% exit or a deadline: a message already in the mailbox comes first, then
%% bytes the carrier has without waiting (after a yield, on a socket);
%% only then is the carrier armed. Input after the carrier's end of input
%% is its close.
wait(S = #ws{eof = true}) ->
    finish({error, closed}, S);
wait(S = #ws{carrier = {Mod, CS}}) ->
    receive
        Msg -> message(Msg, S)
    after 0 ->
        case Mod:poll(CS) of
            {data, Data, CS1} -> data(Data, nofin, S#ws{carrier = {Mod, CS1}});
            none -> wait_armed(S);
            {error, Reason} -> finish({error, Reason}, S)
        end
    end.

wait_armed(S) ->
    case arm(S) of
        {ok, S1} -> loop(S1);
        {error, Reason} -> finish({error, Reason}, S)
    end.

%% @private The receive loop, also the entry after hibernation. With
%% nothing received for `hibernate_after' (and no deadline before it) the
%% session hibernates; its deadlines count from the last byte in, so
%% hibernating moves none of them.
-spec loop(#ws{}) -> closed.
loop(S = #ws{hibernate_after = Hib}) ->
    case timeout(S) of
        T when Hib < T ->
            receive
                Msg -> message(Msg, S)
            after Hib ->
                sleep(S)
            end;
        T ->
            receive
                Msg -> message(Msg, S)
            after T ->
                deadline(S)
            end
    end.

message(Msg, S = #ws{carrier = {Mod, CS}, parent = Parent}) ->
    case Mod:input(Msg, CS) of
        {data, Data, Fin, CS1} ->
            data(Data, Fin, S#ws{carrier = {Mod, CS1}});
        {closed, Reason} ->
            finish({error, Reason}, S);
        none ->
            case Msg of
                {system, From, Request} ->
                    sys:handle_system_msg(Request, From, Parent, ?MODULE, S#ws.debug, S);
                {'EXIT', Parent, Reason} ->
                    parent_exit(Reason, S);
                {timeout, _, falco_hibernate} ->
                    %% the wake-up of a hibernation that ended before it
                    loop(S);
                {falco_drain, _} when S#ws.closing =:= false ->
                    %% The listener drains: the close handshake with 1001
                    %% (going away), within close_timeout.
                    close(1001, <<>>, shutdown, S);
                _ when S#ws.closing =:= false ->
                    info(Msg, S);
                _ ->
                    loop(S)
            end
    end.

%% Bytes from the carrier, `fin' when its input has ended.
data(Data, Fin, S0) ->
    S = S0#ws{last_in = now_ms(), ping_sent = false, eof = Fin =:= fin},
    case S of
        #ws{more = none} -> frames(append(S#ws.buf, Data), S#ws{buf = <<>>});
        _ -> gather(Data, S)
    end.

%% The listener stops (a connection that carries the session passes its
%% parent's exit on): the peer gets 1001 and the handler
%% terminate(shutdown, ...). The carrier tells when the exit is its own
%% end instead (a tunnel's connection gone).
parent_exit(Reason, S = #ws{carrier = {Mod, CS}}) ->
    case Mod:parent_exit(Reason, CS) of
        closed ->
            finish({error, closed}, S);
        shutdown ->
            Frame = falco_ws_frame:encode(close, falco_ws_frame:close_payload(1001, <<>>)),
            _ = finish(shutdown, S, {close, Frame}),
            exit(Reason)
    end.

append(<<>>, Data) -> Data;
append(Buf, Data) -> <<Buf/binary, Data/binary>>.

info(Msg, S = #ws{handler = Mod, hstate = HState}) ->
    case erlang:function_exported(Mod, handle_info, 2) of
        true -> callback(fun() -> Mod:handle_info(Msg, HState) end, S, fun loop/1);
        false -> loop(S)
    end.

%% The time to the next deadline: the close handshake's, or the ping's and
%% the idle timeout's, both counted from the last byte in.
timeout(#ws{closing = false, last_in = Last, ping_sent = Pinged,
            ping_interval = Ping, idle_timeout = Idle}) ->
    Next = case {Pinged, Ping} of
               {false, P} when is_integer(P) -> min_deadline(Last + P, at(Last, Idle));
               _ -> at(Last, Idle)
           end,
    falco_transport:remaining(Next);
timeout(#ws{closing = Deadline}) ->
    falco_transport:remaining(Deadline).

at(_, infinity) -> infinity;
at(Last, Ms) -> Last + Ms.

min_deadline(A, infinity) -> A;
min_deadline(A, B) -> min(A, B).

deadline(S = #ws{closing = false, last_in = Last, idle_timeout = Idle}) ->
    case Idle =/= infinity andalso now_ms() >= Last + Idle of
        true ->
            close(1000, <<"idle timeout">>, timeout, S);
        false ->
            %% the ping is due
            case send_frames([{ping, <<>>}], S) of
                {ok, S1} -> loop(S1#ws{ping_sent = true});
                {error, Reason, S1} -> finish({error, Reason}, S1)
            end
    end;
deadline(S) ->
    %% the peer did not answer our close frame in time
    finish(S#ws.stop_reason, S).

%% -- the handler ---------------------------------------------------------------

%% Runs a callback and acts on its result, then `Then(S)' unless the
%% session ends.
callback(Fun, S = #ws{req = Req}, Then) ->
    try Fun() of
        Result -> result(Result, S, Then)
    catch
        Class:Reason:Stack ->
            falco_report:log_crash(Req, Class, Reason, Stack),
            fail(1011, {crash, Class, Reason}, S)
    end.

result({ok, HState}, S, Then) ->
    Then(S#ws{hstate = HState});
result({ok, HState, hibernate}, S, _Then) ->
    hibernate(S#ws{hstate = HState});
result({reply, Frames, HState}, S, Then) ->
    reply(Frames, S#ws{hstate = HState}, Then);
result({reply, Frames, HState, hibernate}, S, _Then) ->
    reply(Frames, S#ws{hstate = HState}, fun hibernate/1);
result({stop, HState}, S, _Then) ->
    close(1000, <<>>, normal, S#ws{hstate = HState});
result(Other, S = #ws{req = Req}, _Then) ->
    falco_report:log_crash(Req, error, {bad_websocket_result, Other}, []),
    fail(1011, {crash, error, {bad_websocket_result, Other}}, S).

reply(Frame, S, Then) when not is_list(Frame) ->
    reply([Frame], S, Then);
reply(Frames, S, Then) ->
    case check_frames(Frames) of
        {ok, Out, Close} ->
            case send_frames(Out, S) of
                {ok, S1} when Close =:= none -> Then(S1);
                {ok, S1} -> close_sent(normal, S1);
                {error, Reason, S1} -> finish({error, Reason}, S1)
            end;
        {error, Bad} ->
            falco_report:log_crash(S#ws.req, error, {bad_websocket_frame, Bad}, []),
            fail(1011, {crash, error, {bad_websocket_frame, Bad}}, S)
    end.

%% The frames to send, up to and including a close (nothing is sent after
%% a close frame, §5.5.1).
check_frames(Frames) -> check_frames(Frames, []).

check_frames([], Acc) ->
    {ok, lists:reverse(Acc), none};
check_frames([close | _], Acc) ->
    {ok, lists:reverse(Acc, [{close, 1000, <<>>}]), close};
check_frames([{close, Code, Reason} = F | _], Acc) when is_integer(Code) ->
    case falco_ws_frame:valid_close_code(Code) andalso is_iodata(Reason) of
        true -> {ok, lists:reverse(Acc, [F]), close};
        false -> {error, F}
    end;
check_frames([{Type, Data} = F | More], Acc) when Type =:= text; Type =:= binary ->
    case is_iodata(Data) of
        true -> check_frames(More, [F | Acc]);
        false -> {error, F}
    end;
check_frames([{ping, Data} = F | More], Acc) ->
    case is_iodata(Data) andalso iolist_size(Data) =< 125 of
        true -> check_frames(More, [F | Acc]);
        false -> {error, F}
    end;
check_frames([Bad | _], _) ->
    {error, Bad}.

is_iodata(Data) ->
    try iolist_size(Data) of
        _ -> true
    catch
        error:badarg -> false
    end.

hibernate(S = #ws{eof = true}) ->
    finish({error, closed}, S);
hibernate(S) ->
    case arm(S) of
        {ok, S1} -> sleep(S1);
        {error, Reason} -> finish({error, Reason}, S)
    end.

%% Hibernates until the next message or the next deadline (timeout/1),
%% whichever comes first; a partial frame left by the last read is copied
%% out of it first.
sleep(S = #ws{buf = Buf}) ->
    Deadline = case timeout(S) of
                   infinity -> infinity;
                   T -> now_ms() + T
               end,
    falco_hibernate:sleep(?MODULE, loop, [S#ws{buf = binary:copy(Buf)}], Deadline).

%% -- writing -----------------------------------------------------------------

send_frames(Frames, S = #ws{carrier = {Mod, CS}}) ->
    Data = [encode(F, S) || F <- Frames],
    case Mod:send(Data, CS) of
        {ok, CS1} -> {ok, S#ws{carrier = {Mod, CS1}}};
        {error, Reason} -> {error, Reason, S}
    end.

encode({Type, Data}, #ws{deflate = D}) when D =/= undefined, (Type =:= text orelse Type =:= binary) ->
    falco_ws_frame:encode(Type, falco_ws_deflate:deflate(Data, D), fin, true);
encode({close, Code, Reason}, _) ->
    falco_ws_frame:encode(close, falco_ws_frame:close_payload(Code, Reason));
encode({Type, Data}, _) ->
    falco_ws_frame:encode(Type, Data).

%% -- the carrier -------------------------------------------------------------------

%% Asks for the next bytes, once.
arm(S = #ws{carrier = {Mod, CS}}) ->
    case Mod:arm(CS) of
        {ok, CS1} -> {ok, S#ws{carrier = {Mod, CS1}}};
        {error, _} = Error -> Error
    end.

carrier_gather(Large, S = #ws{carrier = {Mod, CS}}) ->
    S#ws{carrier = {Mod, Mod:gather(Large, CS)}}.

%% Ends the carrier, after the bytes `Last' if any: `close' when the peer
%% is done, `linger' when it may still send (§7.1.1).
close_io(close, S) ->
    close_io({close, <<>>}, S);
close_io({How, Last}, #ws{carrier = {Mod, CS}}) ->
    Mod:close(How, Last, CS).

%% -- ending ----------------------------------------------------------------------

%% We start the close handshake.
close(Code, Text, Reason, S) ->
    case send_frames([{close, Code, Text}], S) of
        {ok, S1} -> close_sent(Reason, S1);
        {error, Why, S1} -> finish({error, Why}, S1)
    end.

%% The peer broke the protocol: it gets `Code', the connection closes
%% without waiting for its answer (§7.1.7: fail the connection).
fail(Code, Why, S) ->
    Reason = case Why of
                 {crash, _, _} -> Why;
                 _ -> {protocol_error, Code, Why}
             end,
    Frame = falco_ws_frame:encode(close, falco_ws_frame:close_payload(Code, <<>>)),
    finish(Reason, S, {linger, Frame}).

finish(Reason, S) ->
    finish(Reason, S, close).

finish(Reason, S = #ws{handler = Mod, hstate = HState, deflate = D, req = Req}, How) ->
    _ = close_io(How, S),
    case D of
        undefined -> ok;
        _ -> falco_ws_deflate:close(D)
    end,
    _ = case erlang:function_exported(Mod, terminate, 2) of
            true ->
                try Mod:terminate(Reason, HState)
                catch Class:Crash:Stack -> falco_report:log_crash(Req, Class, Crash, Stack)
                end;
            false ->
                ok
        end,
    closed.

%% -- sys -------------------------------------------------------------------------

%% @private
-spec system_continue(pid(), [sys:dbg_opt()], #ws{}) -> closed.
system_continue(_Parent, Debug, S) ->
    wait(S#ws{debug = Debug}).

%% @private
-spec system_terminate(term(), pid(), [sys:dbg_opt()], #ws{}) -> no_return().
system_terminate(Reason, _Parent, _Debug, S) ->
    _ = finish(shutdown, S),
    exit(Reason).

%% @private
-spec system_code_change(#ws{}, module(), term(), term()) -> {ok, #ws{}}.
system_code_change(S, _Module, _OldVsn, _Extra) ->
    {ok, S}.

%% @private
-spec system_get_state(#ws{}) -> {ok, map()}.
system_get_state(#ws{req = Req, handler = Mod, hstate = HState, closing = Closing}) ->
    {ok, #{protocol => websocket, peer => maps:get(peer, Req, undefined),
           path => maps:get(path, Req, undefined), handler => Mod, handler_state => HState,
           closing => Closing =/= false}}.
