%% A WebSocket carrier over HTTP/2 for the Common Test suites: an RFC 8441
%% tunnel (an extended CONNECT, `:protocol' websocket, on h2c with prior
%% knowledge or on h2 over TLS with ALPN), owned by a process of its own
%% that holds the HTTP/2 connection (falco_test_h2_client for the preface,
%% SETTINGS and HPACK). What goes in is sent unchanged as DATA frames on
%% the tunnel's stream: one DATA frame per send of up to 16 KB (the
%% server's SETTINGS_MAX_FRAME_SIZE), so a caller's pieces are the DATA
%% frames' boundaries; sends wait for the stream's and the connection's
%% flow-control windows (RFC 9113 §5.2). What comes out of DATA frames goes
%% to the owner as `{tunnel_data, T, Bytes}' messages; the server is given
%% its window back at once while the owner holds less than `rcvbuf' bytes
%% it has not marked consumed (consumed/2), and then only as it consumes
%% them, so an owner that does not read stops the server as a TCP peer
%% that does not read would. The stream's end is one
%% `{tunnel_closed, T, Why}' message, Why `end_stream' (the server's
%% END_STREAM), `{reset, Code}' (RST_STREAM) or `closed' (the connection).
%%
%% Used by falco_test_ws_client (the same case bodies over ws, wss, h2c
%% and h2) and by autobahn_SUITE's RFC 8441 relay. The process ends with
%% its owner, at close/1, or when the connection closes.
-module(falco_test_ws_tunnel).

-export([open/5, send/2, send_async/2, end_stream/1, consumed/2, close/1, pid/1]).
-export_type([tunnel/0]).

-opaque tunnel() :: {?MODULE, pid()}.

-define(TIMEOUT, 5000).
-define(SEND_TIMEOUT, 10000).
-define(RCVBUF, 1048576).
-define(ID, 1).

%% @doc Opens a tunnel on a new connection to 127.0.0.1:Port (`h2c' or
%% `h2'): an extended CONNECT to Path with the extra request fields
%% Fields (names lowercase). Returns `{T, Resp}': Resp is
%% `#{status, headers, body}' like falco_test_client's responses. A
%% status other than 2xx ends the stream (and the tunnel's process);
%% `body' is the refusal's content then. Opts: rcvbuf (bytes, default 1 MB).
-spec open(h2c | h2 | h3, inet:port_number(), binary(), [{binary(), iodata()}], map()) ->
          {tunnel(), map()}.
open(h3, Port, Path, Fields, Opts) ->
    %% RFC 9220, by aioquic (falco_test_ws_tunnel_h3): the same handle
    falco_test_ws_tunnel_h3:open(Port, Path, Fields, Opts);
open(Carrier, Port, Path, Fields, Opts) ->
    Owner = self(),
    Ref = make_ref(),
    Pid = spawn(fun() -> init(Owner, Ref, Carrier, Port, Path, Fields, Opts) end),
    Mon = monitor(process, Pid),
    receive
        {Ref, Resp} ->
            demonitor(Mon, [flush]),
            {{?MODULE, Pid}, Resp};
        {'DOWN', Mon, process, Pid, Why} ->
            error({tunnel_failed, Why})
    after 2 * ?TIMEOUT ->
        exit(Pid, kill),
        error(tunnel_open_timeout)
    end.

-spec pid(tunnel()) -> pid().
pid({?MODULE, Pid}) -> Pid.

%% @doc Sends Bytes on the stream, as DATA frames of at most 16 KB (one
%% when it fits); returns once they are written, `{error, closed}' when
%% the stream or the connection is gone, `{error, timeout}' when the
%% windows stayed shut for 10 s.
-spec send(tunnel(), iodata()) -> ok | {error, term()}.
send({?MODULE, Pid}, Bytes) ->
    Mon = monitor(process, Pid),
    Ref = make_ref(),
    Pid ! {send, {self(), Ref}, iolist_to_binary(Bytes)},
    receive
        {Ref, Result} -> demonitor(Mon, [flush]), Result;
        {'DOWN', Mon, process, Pid, _} -> {error, closed}
    after ?SEND_TIMEOUT ->
        demonitor(Mon, [flush]),
        {error, timeout}
    end.

%% @doc send/2 without waiting (the tunnel queues what the windows do not
%% let out yet).
-spec send_async(tunnel(), iodata()) -> ok.
send_async({?MODULE, Pid}, Bytes) ->
    Pid ! {send, none, iolist_to_binary(Bytes)},
    ok.

%% @doc END_STREAM after what was sent (the TCP half-close of HTTP/1.1).
-spec end_stream(tunnel()) -> ok.
end_stream({?MODULE, Pid}) ->
    Pid ! end_stream,
    ok.

%% @doc The owner has taken N bytes of `tunnel_data' out of its hands.
-spec consumed(tunnel(), non_neg_integer()) -> ok.
consumed({?MODULE, Pid}, N) ->
    Pid ! {consumed, N},
    ok.

%% @doc Closes the connection (the stream with it) and ends the process.
-spec close(tunnel()) -> ok.
close({?MODULE, Pid}) ->
    Mon = monitor(process, Pid),
    Pid ! close,
    receive {'DOWN', Mon, process, Pid, _} -> ok
    after ?TIMEOUT -> exit(Pid, kill), ok
    end.

%% -- the tunnel's process -------------------------------------------------------

init(Owner, Ref, Carrier, Port, Path, Fields, Opts) ->
    _ = monitor(process, Owner),
    Transport = case Carrier of h2c -> tcp; h2 -> tls end,
    C0 = falco_test_h2_client:connect(Port, #{transport => Transport}),
    #{scheme := Scheme, server_settings := SS} = C0,
    true = maps:get(enable_connect_protocol, SS, false),
    Head = [{<<":method">>, <<"CONNECT">>}, {<<":protocol">>, <<"websocket">>},
            {<<":scheme">>, Scheme}, {<<":path">>, Path}, {<<":authority">>, <<"localhost">>}],
    Version = [{<<"sec-websocket-version">>, <<"13">>}
               || not lists:keymember(<<"sec-websocket-version">>, 1, Fields)],
    C1 = falco_test_h2_client:headers_frame(C0, ?ID, Head ++ Version ++ Fields, nofin),
    S0 = #{c => C1, owner => Owner, tunnel => {?MODULE, self()},
           swin => maps:get(initial_window_size, SS, 65535), cwin => 65535,
           max_frame => min(16384, maps:get(max_frame_size, SS, 16384)),
           queue => queue:new(), goaway => false, ended => false, gone => false,
           held => 0, owed => 0, rcvbuf => maps:get(rcvbuf, Opts, ?RCVBUF)},
    case response(S0, erlang:monotonic_time(millisecond) + ?TIMEOUT) of
        {ok, Resp = #{status := St}, S} when St >= 200, St < 300 ->
            Owner ! {Ref, Resp},
            active(S);
        {ok, Resp, S} ->
            Body = body(S, [], erlang:monotonic_time(millisecond) + ?TIMEOUT),
            Owner ! {Ref, Resp#{body => Body}},
            falco_test_h2_client:close(maps:get(c, S));
        {error, Why, S} ->
            Owner ! {Ref, #{status => {error, Why}, headers => [], body => <<>>}},
            falco_test_h2_client:close(maps:get(c, S))
    end.

left(Deadline) -> max(0, Deadline - erlang:monotonic_time(millisecond)).

%% The response's field block (passive reads, before the session).
response(S = #{c := C0}, Deadline) ->
    case falco_test_h2_client:recv_frame(C0, left(Deadline)) of
        {ok, {fields, ?ID, Fin, [{<<":status">>, Status} | Headers]}, C} ->
            S1 = S#{c => C, ended => Fin =:= fin},
            {ok, #{status => binary_to_integer(Status), headers => Headers, body => <<>>},
             S1};
        {ok, {rst_stream, ?ID, Code}, C} ->
            {error, {reset, Code}, S#{c => C}};
        {ok, F, C} ->
            response(control(F, S#{c => C}), Deadline);
        {error, Why, C} ->
            {error, Why, S#{c => C}}
    end.

%% A refusal's content, to its END_STREAM.
body(S = #{ended := true}, Acc, _) ->
    _ = S,
    iolist_to_binary(lists:reverse(Acc));
body(S = #{c := C0}, Acc, Deadline) ->
    case falco_test_h2_client:recv_frame(C0, left(Deadline)) of
        {ok, {data, ?ID, Fin, Data, _}, C} ->
            body(S#{c => C, ended => Fin =:= fin}, [Data | Acc], Deadline);
        {ok, {fields, ?ID, fin, _}, C} ->
            body(S#{c => C, ended => true}, Acc, Deadline);
        {ok, {rst_stream, ?ID, _}, _} ->
            iolist_to_binary(lists:reverse(Acc));
        {ok, F, C} ->
            body(control(F, S#{c => C}), Acc, Deadline);
        {error, _, _} ->
            iolist_to_binary(lists:reverse(Acc))
    end.

%% Frames that are not the stream's data.
control({settings, New}, S = #{c := C, swin := W}) ->
    _ = falco_test_h2_client:send(C, falco_http2_frame:settings_ack()),
    #{server_settings := Old} = C,
    Init0 = maps:get(initial_window_size, Old, 65535),
    Init = maps:get(initial_window_size, New, Init0),
    S#{c => C#{server_settings => maps:merge(Old, New)}, swin => W + Init - Init0,
       max_frame => min(16384, maps:get(max_frame_size, New, 16384))};
control({ping, Opaque}, S = #{c := C}) ->
    _ = falco_test_h2_client:send(C, falco_http2_frame:ping_ack(Opaque)),
    S;
control({goaway, _, _, _}, S) ->
    S#{goaway => true};
control({window_update, 0, Inc}, S = #{cwin := W}) ->
    S#{cwin => W + Inc};
control({window_update, ?ID, Inc}, S = #{swin := W}) ->
    S#{swin => W + Inc};
control(_, S) ->
    S.

%% The session: the socket in active-once mode, the owner's messages.
active(S = #{c := #{t := T, sock := Sock}}) ->
    ok = setopts(T, Sock),
    loop(S).

setopts(gen_tcp, Sock) -> inet:setopts(Sock, [{active, once}]);
setopts(ssl, Sock) -> ssl:setopts(Sock, [{active, once}]).

loop(S = #{c := C = #{sock := Sock, buf := Buf}, owner := Owner}) ->
    receive
        {Tag, Sock, Data} when Tag =:= tcp; Tag =:= ssl ->
            frames(S#{c => C#{buf => <<Buf/binary, Data/binary>>}});
        {Tag, Sock} when Tag =:= tcp_closed; Tag =:= ssl_closed ->
            gone(S);
        {Tag, Sock, _} when Tag =:= tcp_error; Tag =:= ssl_error ->
            gone(S);
        {send, From, Bytes} ->
            loop(flush(S#{queue => queue:in({From, Bytes}, maps:get(queue, S))}));
        end_stream ->
            loop(flush(S#{queue => queue:in(end_stream, maps:get(queue, S))}));
        {consumed, N} ->
            loop(consume(N, S));
        close ->
            falco_test_h2_client:close(C);
        {'DOWN', _, process, Owner, _} ->
            falco_test_h2_client:close(C)
    end.

%% Every whole frame in the buffer, then the next read.
frames(S = #{c := C0 = #{buf := Buf}}) ->
    case falco_http2_frame:parse(Buf, 16777215) of
        {more, _} ->
            active(S);
        _ ->
            case falco_test_h2_client:recv_frame(C0, 0) of
                {ok, F, C} -> next(frame(F, S#{c => C}));
                {error, timeout, C} -> active(S#{c => C});
                {error, _, C} -> gone(S#{c => C})
            end
    end.

%% After a GOAWAY (a listener stopping or draining), the connection is
%% closed once the stream has ended, as a client with nothing more to ask
%% closes it.
next(S = #{goaway := true, ended := true}) ->
    gone(S);
next(S) ->
    frames(S).

frame({data, ?ID, Fin, Data, Size}, S = #{c := C, held := Held, owed := Owed}) ->
    Bin = iolist_to_binary(Data),
    _ = byte_size(Bin) > 0 andalso notify({tunnel_data, tunnel(S), Bin}, S),
    %% padding and empty frames are given back at once
    Pad = Size - byte_size(Bin),
    ok = give_back(Pad, C),
    S1 = S#{held => Held + byte_size(Bin), owed => Owed + byte_size(Bin)},
    S2 = settle(S1),
    case Fin of
        fin -> server_ended(S2);
        nofin -> S2
    end;
frame({fields, ?ID, fin, _Trailers}, S) ->
    server_ended(S);
frame({rst_stream, ?ID, Code}, S) ->
    flush(ended({reset, Code}, S#{gone => true}));
frame(F, S) ->
    flush(control(F, S)).

tunnel(#{tunnel := T}) -> T.

%% The server's END_STREAM: as a TCP peer that closes, it takes nothing
%% more. Ours follows what is queued, and the stream is closed both ways
%% (the server no longer waits for our half, a drain included).
server_ended(S = #{gone := true}) ->
    ended(end_stream, S);
server_ended(S = #{queue := Q}) ->
    flush(ended(end_stream, S#{queue => queue:in(end_stream, Q)})).

notify(Msg, #{owner := Owner}) ->
    Owner ! Msg,
    true.

ended(_, S = #{ended := true}) ->
    S;
ended(Why, S) ->
    true = notify({tunnel_closed, tunnel(S), Why}, S),
    S#{ended => true}.

gone(S = #{c := C}) ->
    _ = ended(closed, S),
    reply_all(S),
    falco_test_h2_client:close(C).

reply_all(#{queue := Q}) ->
    [reply(From, {error, closed}) || {From, _} <- queue:to_list(Q)],
    ok.

reply(none, _) -> ok;
reply({Pid, Ref}, Result) -> Pid ! {Ref, Result}, ok.

%% The window the server may use is given back while the owner holds less
%% than rcvbuf.
settle(S = #{held := Held, owed := Owed, rcvbuf := Max, c := C}) when Owed > 0, Held =< Max ->
    ok = give_back(Owed, C),
    S#{owed => 0};
settle(S) ->
    S.

consume(N, S = #{held := Held}) ->
    settle(S#{held => max(0, Held - N)}).

give_back(0, _) ->
    ok;
give_back(N, C) ->
    %% a connection already gone is seen by the next read
    _ = falco_test_h2_client:send(C, [falco_http2_frame:window_update(0, N),
                                      falco_http2_frame:window_update(?ID, N)]),
    ok.

%% Sends what the windows let out, in order; each send is answered once
%% all of it is written.
flush(S = #{gone := true}) ->
    reply_all(S),
    S#{queue => queue:new()};
flush(S = #{queue := Q0}) ->
    case queue:out(Q0) of
        {empty, _} ->
            S;
        {{value, end_stream}, Q} ->
            _ = falco_test_h2_client:send(maps:get(c, S), falco_http2_frame:data(?ID, fin, <<>>)),
            S#{queue => Q, gone => true};
        {{value, {From, Bytes}}, Q} ->
            case out(Bytes, S, []) of
                {done, S1, Frames} ->
                    ok = write(Frames, S1),
                    reply(From, ok),
                    flush(S1#{queue => Q});
                {blocked, S1, Frames, Rest} ->
                    ok = write(Frames, S1),
                    S1#{queue => queue:in_r({From, Rest}, Q)}
            end
    end.

write([], _) -> ok;
write(Frames, #{c := C}) ->
    case falco_test_h2_client:send(C, lists:reverse(Frames)) of
        ok -> ok;
        {error, _} -> ok
    end.

out(<<>>, S, Acc) ->
    {done, S, Acc};
out(Bytes, S = #{swin := SW, cwin := CW, max_frame := Max}, Acc) ->
    case min(min(SW, CW), min(Max, byte_size(Bytes))) of
        N when N =< 0 ->
            {blocked, S, Acc, Bytes};
        N ->
            <<Part:N/binary, Rest/binary>> = Bytes,
            out(Rest, S#{swin => SW - N, cwin => CW - N},
                [falco_http2_frame:data(?ID, nofin, Part) | Acc])
    end.
