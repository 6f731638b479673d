%% A raw QUIC v1 and HTTP/3 client for the tests, written on falco's own
%% codecs (falco_quic_packet, falco_quic_frame, falco_quic_tparams,
%% falco_http3_frame, falco_qpack) and the test TLS client's pieces
%% (falco_test_tls13's ClientHello, falco_tls13_keys' schedule): one GET
%% over one connection on 127.0.0.1, every wait bounded. It is not a
%% conformant client (no loss recovery: a lost datagram fails the request
%% by its deadline; ACKs only so the server is not held back); its use is
%% to speak QUIC where no real client will: checked first against another
%% stack's server (aioquic's), then driving falco's, and later sending what
%% real clients never send.
%%
%% Besides get/3, a session API for the conformance suites: connect/2
%% starts a process that owns one connection's socket, ACKs what comes
%% and records the server's CONNECTION_CLOSE, RESET_STREAM and
%% STOP_SENDING; the test then sends frames at any level, raw datagrams,
%% requests, and waits (always bounded) for what it expects.
-module(falco_test_quic_client).

-export([get/3]).
-export([connect/2, send_frames/3, send_datagram/2, packet/3, packet/4, request/5, send_stream/4,
         recv_until/3, await_close/2, stream_resets/1, view/1, close/1, first_initial/2,
         info/1, silence/1]).

-define(K, falco_tls13_keys).
-define(CID_LEN, 8).

-record(c, {sock :: gen_udp:socket(), port :: inet:port_number(),
            dcid :: binary(), scid :: binary(), odcid :: binary(),
            keys = #{} :: #{{atom(), read | write} => term()},
            pn = #{initial => 0, handshake => 0, one_rtt => 0} :: map(),
            largest = #{initial => none, handshake => none, one_rtt => none} :: map(),
            %% received packet numbers per space, to acknowledge
            %% what was received per space: falco_quic_ack's record of it
            %% (ranges kept incrementally, the newest 64 acknowledged)
            recvd = #{initial => falco_quic_ack:new(initial), handshake => falco_quic_ack:new(handshake),
                      one_rtt => falco_quic_ack:new(application)} :: map(),
            %% spaces with packets not yet acknowledged
            fresh = [] :: [atom()],
            crypto = #{} :: map(),
            ch :: binary(), priv :: binary(), suite :: atom(),
            hs_secret :: {binary(), binary()} | undefined,
            transcript = [] :: [binary()],
            flight_done = false :: boolean(),
            streams = #{} :: map(),
            events = [] :: list(),
            %% the session's: the server's CONNECTION_CLOSE, its
            %% RESET_STREAM and STOP_SENDING frames, our send offsets
            close = undefined :: undefined | tuple(),
            resets = [] :: [{non_neg_integer(), reset_stream | stop_sending, non_neg_integer()}],
            offsets = #{} :: #{non_neg_integer() => non_neg_integer()},
            datagrams = 0 :: non_neg_integer(),
            %% the largest datagram received, and the bytes of all
            largest_datagram = 0 :: non_neg_integer(),
            received_bytes = 0 :: non_neg_integer(),
            max_streams = #{} :: #{bidi | uni => non_neg_integer()},
            opts = #{} :: map()}).

%% @doc GET Path from an HTTP/3 server on 127.0.0.1:Port. Opts: timeout
%% (ms, default 5000), authority, suites (the TLS cipher suite codes
%% offered, default all three). Returns {ok, #{status, headers, body,
%% alpn, suite}} or {error, Why}.
-spec get(inet:port_number(), binary(), map()) -> {ok, map()} | {error, term()}.
get(Port, Path, Opts) ->
    Deadline = erlang:monotonic_time(millisecond) + maps:get(timeout, Opts, 5000),
    {ok, Sock} = gen_udp:open(0, [binary, {active, false}, {ip, {127, 0, 0, 1}},
                                     {recbuf, 4194304}]),
    try
        C0 = start(Sock, Port, Opts),
        case handshake(C0, Deadline) of
            {ok, C1} -> request(C1, Path, maps:get(authority, Opts, <<"localhost">>), Deadline);
            Error -> Error
        end
    after
        gen_udp:close(Sock)
    end.

%% -- the handshake ------------------------------------------------------------

start(Sock, Port, Opts) ->
    {C, Packets} = first_flight(Sock, Port, Opts),
    [ok = gen_udp:send(Sock, {127, 0, 0, 1}, Port, P) || P <- Packets],
    C.

%% The client's first Initial packets (one datagram each) and the state
%% they leave. Opts (all optional): dcid_len (8..20, default 8), scid_len
%% (0..20, default 8), suites, alpn (a list, or none), tparams (a map
%% merged over ours; a value `delete' removes that parameter; or none for
%% no quic_transport_parameters extension), tparams_extra (raw bytes
%% appended to the parameters), shuffle (N: the ClientHello in N CRYPTO
%% pieces sent out of order with PINGs, over two Initials and datagrams,
%% as Chromium does), initial_frames (frames added to the first Initial),
%% hs_frames (frames put before the client's Finished in its Handshake
%% packet).
first_flight(Sock, Port, Opts) ->
    Dcid = maps:get(dcid, Opts, crypto:strong_rand_bytes(maps:get(dcid_len, Opts, ?CID_LEN))),
    Scid = crypto:strong_rand_bytes(maps:get(scid_len, Opts, ?CID_LEN)),
    {Client, Server} = falco_quic_keys:initial(Dcid),
    {Pub, Priv} = crypto:generate_key(ecdh, x25519),
    Ours = #{initial_source_connection_id => Scid,
             initial_max_data => 1 bsl 24,
             initial_max_stream_data_bidi_local => 1 bsl 22,
             initial_max_stream_data_bidi_remote => 1 bsl 22,
             initial_max_stream_data_uni => 1 bsl 20,
             initial_max_streams_bidi => 16,
             initial_max_streams_uni => 16,
             max_idle_timeout => 10000},
    Params = case maps:get(tparams, Opts, #{}) of
                 none ->
                     none;
                 Over ->
                     Merged = maps:filter(fun(_, V) -> V =/= delete end, maps:merge(Ours, Over)),
                     iolist_to_binary([falco_quic_tparams:encode(Merged),
                                       maps:get(tparams_extra, Opts, <<>>)])
             end,
    CH = falco_test_tls13:client_hello(#{shares => [{29, Pub}], groups => [29],
                                         transport_params => Params,
                                         alpn => maps:get(alpn, Opts, [<<"h3">>]),
                                         suites => maps:get(suites, Opts,
                                                            [16#1301, 16#1302, 16#1303]),
                                         random => crypto:strong_rand_bytes(32)}),
    C0 = #c{sock = Sock, port = Port, dcid = Dcid, scid = Scid, odcid = Dcid, ch = CH,
            priv = Priv, opts = Opts, keys = #{{initial, write} => Client, {initial, read} => Server}},
    Extra = maps:get(initial_frames, Opts, []),
    Groups = case maps:get(shuffle, Opts, 0) of
                 0 -> [[falco_quic_frame:crypto(0, CH) | Extra]];
                 N -> shuffled(CH, N, Extra)
             end,
    {Packets, C} = lists:mapfoldl(fun(Frames, Acc) -> build(initial, Frames, Acc) end,
                                  C0, Groups),
    {C, Packets}.

%% Chromium's way (study section 6): the ClientHello in N pieces, shuffled,
%% PINGs among them, over two Initial packets.
shuffled(CH, N, Extra) ->
    Size = (byte_size(CH) + N - 1) div N,
    Pieces = [falco_quic_frame:crypto(Off, binary:part(CH, Off, min(Size, byte_size(CH) - Off)))
              || Off <- lists:seq(0, byte_size(CH) - 1, Size)],
    Frames = [F || {_, F} <- lists:sort([{rand:uniform(), F}
                                         || F <- Pieces ++ [falco_quic_frame:ping() || _ <- [1, 2, 3]]])],
    {A, B} = lists:split(length(Frames) div 2, Frames),
    [A ++ Extra, B].

handshake(C = #c{flight_done = true}, _) ->
    {ok, C};
handshake(C, Deadline) ->
    case recv(C, Deadline) of
        {ok, C1} -> handshake(C1, Deadline);
        Error -> Error
    end.

%% -- the request --------------------------------------------------------------

request(C0, Path, Authority, Deadline) ->
    Control = [falco_http3_frame:stream_header(control), falco_http3_frame:settings(#{})],
    Fields = [{<<":method">>, <<"GET">>}, {<<":scheme">>, <<"https">>},
              {<<":authority">>, Authority}, {<<":path">>, Path}],
    Headers = falco_http3_frame:headers(falco_qpack:encode(Fields)),
    C1 = send(one_rtt, [falco_quic_frame:stream(2, 0, nofin, Control),
                        falco_quic_frame:stream(0, 0, fin, Headers)], C0),
    response(C1, Deadline).

response(C = #c{streams = #{0 := {done, Items}}}, _) ->
    Alpn = proplists:get_value(alpn, C#c.events),
    close_conn(C),
    case answer(Items) of
        {ok, R} -> {ok, R#{alpn => Alpn, suite => C#c.suite}};
        Error -> Error
    end;
response(C, Deadline) ->
    case recv(C, Deadline) of
        {ok, C1} -> response(C1, Deadline);
        Error -> Error
    end.

answer(Items) ->
    case [B || {headers, B} <- Items] of
        [Block | _] ->
            {ok, Fields} = falco_qpack:decode(Block, #{}),
            Status = binary_to_integer(proplists:get_value(<<":status">>, Fields)),
            {ok, #{status => Status, headers => [F || F = {<<N, _/binary>>, _} <- Fields, N =/= $:],
                   body => iolist_to_binary([D || {data, D} <- Items])}};
        [] ->
            {error, {no_headers, Items}}
    end.

close_conn(C) ->
    _ = send(one_rtt, [falco_quic_frame:application_close(16#100, <<>>)], C),
    ok.

%% -- the session API -------------------------------------------------------------

%% @doc A connection to 127.0.0.1:Port held by a process of its own, which
%% ACKs what comes (the server's loss detection stays calm) and records
%% the server's CONNECTION_CLOSE, RESET_STREAM and STOP_SENDING. Opts:
%% those of first_flight/3 (dcid_len, scid_len, suites, alpn, tparams,
%% tparams_extra, shuffle, initial_frames, hs_frames), timeout (ms for the handshake,
%% default 5000), await (`established', the default: return once our
%% Finished is sent; `sent': once the first flight is), control (default
%% true: open our control stream, 2, with an empty SETTINGS right after
%% the handshake). `{error, {closed, Code, FrameType, Reason}}' if the
%% server closes the connection during the handshake.
-spec connect(inet:port_number(), map()) -> {ok, pid()} | {error, term()}.
connect(Port, Opts) ->
    Owner = self(),
    Ref = make_ref(),
    Timeout = maps:get(timeout, Opts, 5000),
    {Pid, MRef} = spawn_monitor(fun() -> session_init(Owner, Ref, Port, Opts, Timeout) end),
    receive
        {Ref, Result} ->
            demonitor(MRef, [flush]),
            case Result of
                ok -> {ok, Pid};
                Error -> Error
            end;
        {'DOWN', MRef, process, Pid, Why} ->
            {error, {session_down, Why}}
    after Timeout + 2000 ->
        demonitor(MRef, [flush]),
        exit(Pid, kill),
        {error, timeout}
    end.

%% @doc Frames (iodata each, falco_quic_frame's builders or raw bytes) in
%% packets of Level (initial | handshake | one_rtt), as many packets as
%% they need (about 1,100 bytes of frames each), each its own datagram.
%% `{error, no_keys}' for a level whose keys the client does not have.
-spec send_frames(pid(), initial | handshake | one_rtt, [iodata()]) -> ok | {error, no_keys}.
send_frames(S, Level, Frames) ->
    call(S, {send_frames, Level, Frames}).

%% @doc One protected packet of Level with Frames, not sent (to corrupt
%% and send_datagram/2); it takes the next packet number.
-spec packet(pid(), initial | handshake | one_rtt, [iodata()]) -> {ok, binary()} | {error, no_keys}.
packet(S, Level, Frames) ->
    packet(S, Level, Frames, #{}).

%% @doc packet/3 with header fields of falco_quic_packet:protect/6 merged
%% in (e.g. `key_phase => 6' sets a short header's reserved bits).
-spec packet(pid(), initial | handshake | one_rtt, [iodata()], map()) ->
          {ok, binary()} | {error, no_keys}.
packet(S, Level, Frames, Extra) ->
    call(S, {packet, Level, Frames, Extra}).

%% @doc Raw bytes to the server, as one datagram from the session's socket.
-spec send_datagram(pid(), iodata()) -> ok.
send_datagram(S, Bin) ->
    call(S, {datagram, Bin}).

%% @doc A request on bidirectional stream Id: HEADERS with Fields (QPACK,
%% static table and literals, in order as given), then Body as one DATA
%% frame if not empty; Fin ends the stream.
-spec request(pid(), non_neg_integer(), [{binary(), binary()}], iodata(), fin | nofin) -> ok.
request(S, Id, Fields, Body, Fin) ->
    Headers = falco_http3_frame:headers(falco_qpack:encode(Fields)),
    Data = case iolist_size(Body) of
               0 -> [];
               _ -> falco_http3_frame:data(Body)
           end,
    send_stream(S, Id, [Headers, Data], Fin).

%% @doc Raw bytes on stream Id at its next offset (cut into STREAM frames
%% that fit packets).
-spec send_stream(pid(), non_neg_integer(), iodata(), fin | nofin) -> ok.
send_stream(S, Id, Bytes, Fin) ->
    call(S, {stream, Id, iolist_to_binary(Bytes), Fin}).

%% @doc Waits until Pred(view(S)) is true: `{ok, View}', or `timeout'
%% after Timeout ms.
-spec recv_until(pid(), fun((map()) -> boolean()), timeout()) -> {ok, map()} | timeout.
recv_until(S, Pred, Timeout) ->
    call(S, {until, Pred, Timeout}, Timeout + 2000).

%% @doc The server's CONNECTION_CLOSE: `{closed, {transport, Code} |
%% {application, Code}, FrameType (undefined for 0x1d), Reason}', or
%% `timeout'.
-spec await_close(pid(), timeout()) -> {closed, term(), term(), binary()} | timeout.
await_close(S, Timeout) ->
    case recv_until(S, fun(#{close := C}) -> C =/= undefined end, Timeout) of
        {ok, #{close := Close}} -> Close;
        timeout -> timeout
    end.

%% @doc The server's RESET_STREAM and STOP_SENDING frames so far, in order:
%% `[{StreamId, reset_stream | stop_sending, Code}]'.
-spec stream_resets(pid()) -> [{non_neg_integer(), atom(), non_neg_integer()}].
stream_resets(S) ->
    maps:get(resets, view(S)).

%% @doc What the session knows: close, resets, responses (`#{Id =>
%% {ok, Response} | {error, _}}' for the streams the server ended),
%% established, alpn, datagrams (received so far), the largest of them
%% and the bytes of all (received_bytes), dcid and scid.
-spec view(pid()) -> map().
view(S) ->
    call(S, view).

%% @doc The session reads nothing more and so acknowledges nothing more
%% (a client that stops reading); the socket stays open until close/1.
-spec silence(pid()) -> ok.
silence(S) ->
    call(S, silence).

%% @doc The session's connection IDs and socket port, for raw datagrams.
-spec info(pid()) -> map().
info(S) ->
    call(S, info).

%% @doc Ends the session: our CONNECTION_CLOSE (H3_NO_ERROR) if 1-RTT keys
%% are known, the socket closed, the process gone.
-spec close(pid()) -> ok.
close(S) when is_pid(S) ->
    _ = catch call(S, close, 2000),
    ok.

%% @doc A client's first Initial, alone, padded to at least MinSize bytes
%% (to send from another socket: e.g. 1199 bytes, which a server must
%% drop, RFC 9000 §14.1). Opts may give its `dcid' and its `token'.
-spec first_initial(map(), non_neg_integer()) -> binary().
first_initial(Opts, MinSize) ->
    {#c{keys = #{{initial, write} := K}, dcid = Dcid, scid = Scid, ch = CH}, _} =
        first_flight(undefined, 0, Opts),
    iolist_to_binary(falco_quic_packet:protect(#{type => initial, dcid => Dcid, scid => Scid,
                                                 token => maps:get(token, Opts, <<>>)},
                                               0, none, [falco_quic_frame:crypto(0, CH)], K,
                                               MinSize)).

call(S, Req) ->
    call(S, Req, 5000).

call(S, Req, Timeout) ->
    MRef = monitor(process, S),
    S ! {session, self(), MRef, Req},
    receive
        {MRef, Reply} ->
            demonitor(MRef, [flush]),
            Reply;
        {'DOWN', MRef, process, S, Why} ->
            error({session_down, Why})
    after Timeout ->
        demonitor(MRef, [flush]),
        error({session_timeout, Req})
    end.

session_init(Owner, Ref, Port, Opts, Timeout) ->
    OwnerRef = monitor(process, Owner),
    {ok, Sock} = gen_udp:open(0, [binary, {active, true}, {ip, {127, 0, 0, 1}},
                                  {recbuf, 4194304}, {sndbuf, 1048576}]),
    C0 = start(Sock, Port, Opts),
    Deadline = erlang:monotonic_time(millisecond) + Timeout,
    case maps:get(await, Opts, established) of
        sent ->
            Owner ! {Ref, ok},
            session_loop(C0, OwnerRef, []);
        established ->
            case session_handshake(C0, Deadline) of
                {ok, C1} ->
                    C2 = case maps:get(control, Opts, true) of
                             true ->
                                 Control = [falco_http3_frame:stream_header(control),
                                            falco_http3_frame:settings(#{})],
                                 stream_send(2, iolist_to_binary(Control), nofin, C1);
                             false ->
                                 C1
                         end,
                    Owner ! {Ref, ok},
                    session_loop(C2, OwnerRef, []);
                Error ->
                    Owner ! {Ref, Error},
                    gen_udp:close(Sock)
            end
    end.

session_handshake(C = #c{flight_done = true}, _) ->
    {ok, C};
session_handshake(#c{close = Close}, _) when Close =/= undefined ->
    {error, Close};
session_handshake(C = #c{sock = Sock}, Deadline) ->
    Left = max(0, Deadline - erlang:monotonic_time(millisecond)),
    receive
        {udp, Sock, _, _, Datagram} -> session_handshake(datagram(Datagram, C), Deadline)
    after Left ->
        {error, timeout}
    end.

%% Waiters: [{From, MRef, Pred, TRef}].
session_loop(C = #c{sock = Sock}, OwnerRef, Waiters) ->
    receive
        {udp, Sock, _, _, Datagram} ->
            C1 = datagram(Datagram, C),
            session_loop(C1, OwnerRef, check_waiters(C1, Waiters));
        {session, From, MRef, {until, Pred, Timeout}} ->
            case safe_pred(Pred, session_view(C)) of
                true ->
                    From ! {MRef, {ok, session_view(C)}},
                    session_loop(C, OwnerRef, Waiters);
                false ->
                    TRef = erlang:send_after(Timeout, self(), {waiter_timeout, MRef}),
                    session_loop(C, OwnerRef, [{From, MRef, Pred, TRef} | Waiters])
            end;
        {session, From, MRef, close} ->
            _ = send(one_rtt, [falco_quic_frame:application_close(16#100, <<>>)], C),
            gen_udp:close(Sock),
            From ! {MRef, ok};
        {session, From, MRef, Req} ->
            {Reply, C1} = session_call(Req, C),
            From ! {MRef, Reply},
            session_loop(C1, OwnerRef, check_waiters(C1, Waiters));
        {waiter_timeout, MRef} ->
            case lists:keytake(MRef, 2, Waiters) of
                {value, {From, MRef, _, _}, Rest} ->
                    From ! {MRef, timeout},
                    session_loop(C, OwnerRef, Rest);
                false ->
                    session_loop(C, OwnerRef, Waiters)
            end;
        {'DOWN', OwnerRef, process, _, _} ->
            gen_udp:close(Sock)
    end.

check_waiters(_C, []) ->
    [];
check_waiters(C, Waiters) ->
    View = session_view(C),
    lists:filter(fun({From, MRef, Pred, TRef}) ->
                         case safe_pred(Pred, View) of
                             true ->
                                 _ = erlang:cancel_timer(TRef),
                                 From ! {MRef, {ok, View}},
                                 false;
                             false ->
                                 true
                         end
                 end, Waiters).

safe_pred(Pred, View) ->
    try Pred(View) =:= true
    catch _:_ -> false
    end.

session_call({send_frames, Level, Frames}, C = #c{keys = Keys}) ->
    case is_map_key({Level, write}, Keys) of
        true -> {ok, lists:foldl(fun(Group, Acc) -> send(Level, Group, Acc) end, C,
                                 groups(Frames, 1100))};
        false -> {{error, no_keys}, C}
    end;
session_call({packet, Level, Frames, Extra}, C) ->
    case build(Level, Frames, Extra, C) of
        {none, C1} -> {{error, no_keys}, C1};
        {Packet, C1} -> {{ok, Packet}, C1}
    end;
session_call({datagram, Bin}, C = #c{sock = Sock, port = Port}) ->
    {gen_udp:send(Sock, {127, 0, 0, 1}, Port, Bin), C};
session_call({stream, Id, Bytes, Fin}, C) ->
    {ok, stream_send(Id, Bytes, Fin, C)};
session_call(silence, C = #c{sock = Sock}) ->
    ok = inet:setopts(Sock, [{active, false}]),
    %% what the socket had already handed over is dropped unread too
    {flush_datagrams(Sock), C};
session_call(view, C) ->
    {session_view(C), C};
session_call(info, C = #c{sock = Sock}) ->
    {ok, LocalPort} = inet:port(Sock),
    {#{dcid => C#c.dcid, scid => C#c.scid, odcid => C#c.odcid, local_port => LocalPort,
       pn => C#c.pn}, C}.

flush_datagrams(Sock) ->
    receive {udp, Sock, _, _, _} -> flush_datagrams(Sock)
    after 0 -> ok
    end.

%% Frames into groups of at most Budget bytes (one packet each).
groups(Frames, Budget) ->
    {Groups, Last, _} = lists:foldl(fun(F, {Gs, Cur, Size}) ->
                                            N = iolist_size(F),
                                            case Cur =/= [] andalso Size + N > Budget of
                                                true -> {[lists:reverse(Cur) | Gs], [F], N};
                                                false -> {Gs, [F | Cur], Size + N}
                                            end
                                    end, {[], [], 0}, Frames),
    lists:reverse([lists:reverse(Last) || Last =/= []] ++ Groups).

%% Stream bytes at the stream's next offset, in STREAM frames of at most
%% 1,000 bytes of data.
stream_send(Id, Bytes, Fin, C = #c{offsets = Offs}) ->
    Off = maps:get(Id, Offs, 0),
    Frames = stream_frames(Id, Off, Bytes, Fin),
    C1 = lists:foldl(fun(Group, Acc) -> send(one_rtt, Group, Acc) end, C, groups(Frames, 1100)),
    C1#c{offsets = Offs#{Id => Off + byte_size(Bytes)}}.

stream_frames(Id, Off, Bytes, Fin) when byte_size(Bytes) =< 1000 ->
    [falco_quic_frame:stream(Id, Off, Fin, Bytes)];
stream_frames(Id, Off, <<Piece:1000/binary, Rest/binary>>, Fin) ->
    [falco_quic_frame:stream(Id, Off, nofin, Piece) | stream_frames(Id, Off + 1000, Rest, Fin)].

session_view(C = #c{streams = S}) ->
    Responses = maps:from_list([{Id, answer(Items)} || {Id, {done, Items}} <- maps:to_list(S)]),
    #{close => C#c.close, resets => C#c.resets, responses => Responses,
      established => C#c.flight_done, max_streams => C#c.max_streams, alpn => proplists:get_value(alpn, C#c.events),
      datagrams => C#c.datagrams, largest_datagram => C#c.largest_datagram,
      received_bytes => C#c.received_bytes,
      dcid => C#c.dcid, scid => C#c.scid}.

%% -- receiving ----------------------------------------------------------------

recv(C = #c{sock = Sock}, Deadline) ->
    Left = Deadline - erlang:monotonic_time(millisecond),
    case Left > 0 andalso gen_udp:recv(Sock, 65536, Left) of
        {ok, {_, _, Datagram}} ->
            {ok, datagram(Datagram, C)};
        false -> {error, timeout};
        {error, timeout} -> {error, timeout}
    end.

%% A datagram from the server: its packets read, then our ACKs.
datagram(Datagram, C = #c{scid = Scid, datagrams = N}) ->
    {Packets, _} = falco_quic_packet:split(Datagram, byte_size(Scid)),
    Largest = max(byte_size(Datagram), C#c.largest_datagram),
    acks(lists:foldl(fun packet/2, C#c{datagrams = N + 1, largest_datagram = Largest,
                                       received_bytes = C#c.received_bytes + byte_size(Datagram)},
                     Packets)).

packet(P = #{type := Type}, C = #c{keys = Keys, largest = Largest}) when Type =/= retry ->
    case Keys of
        #{{Type, read} := K} ->
            case falco_quic_packet:unprotect(P, K, maps:get(Type, Largest)) of
                {ok, Pn, Payload} ->
                    C1 = case Type of
                             initial -> C#c{dcid = maps:get(scid, P)};
                             _ -> C
                         end,
                    C2 = C1#c{largest = Largest#{Type := max_pn(Pn, maps:get(Type, Largest))},
                              recvd = maps:update_with(Type, fun(A) -> received(Pn, A) end,
                                                       C1#c.recvd),
                              fresh = lists:usort([Type | C1#c.fresh])},
                    case falco_quic_frame:parse(Payload, #{packet => Type, peer => server}) of
                        {ok, Frames} -> lists:foldl(fun(F, Acc) -> frame(Type, F, Acc) end, C2, Frames);
                        {error, _, _, _} -> C2
                    end;
                {error, _} ->
                    C
            end;
        #{} ->
            C
    end;
packet(_, C) ->
    C.

max_pn(Pn, none) -> Pn;
max_pn(Pn, L) -> max(Pn, L).

frame(Type, {crypto, Off, Data}, C = #c{crypto = Cr}) ->
    R0 = maps:get(Type, Cr, falco_quic_reasm:new()),
    {ok, Ready, R} = falco_quic_reasm:add(Off, Data, R0),
    tls(Type, iolist_to_binary(Ready), C#c{crypto = Cr#{Type => R}});
frame(one_rtt, {stream, Id, Off, Fin, Data}, C = #c{streams = S}) when Id band 2 =:= 0 ->
    {R0, Buf0} = maps:get(Id, S, {falco_quic_reasm:new(), falco_http3_frame:reader(1 bsl 20)}),
    case {R0, Buf0} of
        {done, _} -> C;
        _ ->
            {ok, Ready, R} = falco_quic_reasm:add(Off, Data, R0),
            {ok, Items, Buf} = falco_http3_frame:read(iolist_to_binary(Ready), Buf0),
            Acc = maps:get({items, Id}, S, []) ++ Items,
            %% the stream is whole once everything up to its final size is
            %% in, whichever frame came last (a lost piece is sent again
            %% after the FIN)
            Final = case Fin of
                        fin -> Off + byte_size(Data);
                        nofin -> maps:get({final, Id}, S, undefined)
                    end,
            case falco_quic_reasm:offset(R) =:= Final of
                true -> C#c{streams = S#{Id => {done, Acc}}};
                false -> C#c{streams = S#{Id => {R, Buf}, {items, Id} => Acc, {final, Id} => Final}}
            end
    end;
frame(_, {connection_close, Err, FrameType, Why}, C = #c{close = undefined}) ->
    C#c{close = {closed, {transport, falco_quic_error:code(Err)}, FrameType, Why}};
frame(_, {application_close, Code, Why}, C = #c{close = undefined}) ->
    C#c{close = {closed, {application, Code}, undefined, Why}};
frame(_, {reset_stream, Id, Code, _Final}, C = #c{resets = R}) ->
    C#c{resets = R ++ [{Id, reset_stream, Code}]};
frame(_, {stop_sending, Id, Code}, C = #c{resets = R}) ->
    C#c{resets = R ++ [{Id, stop_sending, Code}]};
frame(_, {max_streams, Dir, N}, C = #c{max_streams = M}) ->
    C#c{max_streams = M#{Dir => max(N, maps:get(Dir, M, 0))}};
frame(_, _, C) ->
    C.

%% The server's handshake messages, as they become whole.
tls(_, <<>>, C) ->
    C;
tls(one_rtt, _, C) ->
    %% NewSessionTicket and the like: no resumption here
    C;
tls(initial, Bytes, C = #c{ch = CH, priv = Priv}) ->
    #{suite := Suite, secret := HS, client := CHs, server := SHs} =
        falco_test_tls13:handshake_keys([CH, Bytes], Bytes, fun(x25519) -> Priv end),
    Keys = (C#c.keys)#{{handshake, write} => falco_quic_keys:from_secret(Suite, CHs),
                       {handshake, read} => falco_quic_keys:from_secret(Suite, SHs)},
    C#c{suite = Suite, hs_secret = {HS, CHs}, transcript = [CH, Bytes], keys = Keys};
tls(handshake, Bytes, C = #c{transcript = T0}) ->
    T = T0 ++ [Bytes],
    case finished(iolist_to_binary(tl(tl(T)))) of
        false -> C#c{transcript = T};
        {true, Alpn} -> client_finished(C#c{transcript = T, events = [{alpn, Alpn}]})
    end.

%% Whether the server's flight (EncryptedExtensions to Finished) is
%% whole, and the ALPN it chose.
finished(Flight) ->
    Types = types(Flight, []),
    case lists:member(20, Types) of
        true -> {true, alpn(Flight)};
        false -> false
    end.

types(<<Type, Len:24, _:Len/binary, Rest/binary>>, Acc) -> types(Rest, [Type | Acc]);
types(_, Acc) -> Acc.

alpn(<<8, Len:24, Body:Len/binary, _/binary>>) ->
    <<ExtLen:16, Exts:ExtLen/binary>> = Body,
    case [B || <<T:16, L:16, B:L/binary>> <= Exts, T =:= 16] of
        [<<_:16, N, P:N/binary>>] -> P;
        [] -> undefined
    end.

client_finished(C = #c{suite = Suite, hs_secret = {HS, CHs}, transcript = T}) ->
    Hash = ?K:suite_hash(Suite),
    TH = crypto:hash(Hash, T),
    {CAp, SAp} = ?K:application_traffic(Hash, ?K:master_secret(Hash, HS), TH),
    Fin = falco_tls13_msg:finished(?K:verify_data(Hash, CHs, TH)),
    Extra = maps:get(hs_frames, C#c.opts, []),
    C1 = send(handshake, [ack_frame(handshake, C)] ++ Extra ++ [falco_quic_frame:crypto(0, Fin)], C),
    Keys = (C1#c.keys)#{{one_rtt, write} => falco_quic_keys:from_secret(Suite, CAp),
                        {one_rtt, read} => falco_quic_keys:from_secret(Suite, SAp)},
    C1#c{keys = Keys, flight_done = true}.

%% -- sending ------------------------------------------------------------------

%% ACKs for what came, in every space with something new.
acks(C = #c{fresh = Fresh}) ->
    lists:foldl(fun(Space, Acc) -> send(Space, [ack_frame(Space, Acc)], Acc) end,
                C#c{fresh = []}, Fresh).

ack_frame(Space, #c{recvd = R}) ->
    {_Largest, _Delay, Ranges} = falco_quic_ack:frame(0, 3, 64, maps:get(Space, R)),
    falco_quic_frame:ack(0, Ranges, undefined).

received(Pn, A0) ->
    case falco_quic_ack:received(Pn, true, 0, A0) of
        {ok, A} -> A;
        duplicate -> A0
    end.

send(Space, Frames, C = #c{sock = Sock, port = Port}) ->
    case build(Space, Frames, C) of
        {none, C1} ->
            C1;
        {Packet, C1} ->
            ok = gen_udp:send(Sock, {127, 0, 0, 1}, Port, Packet),
            C1
    end.

%% One protected packet of Space (an Initial padded to 1200 bytes), or
%% none without keys.
build(Space, Frames, C) ->
    build(Space, Frames, #{}, C).

build(Space, Frames, Extra, C = #c{pn = Pns, keys = Keys}) ->
    case Keys of
        #{{Space, write} := K} ->
            Pn = maps:get(Space, Pns),
            Header = case Space of
                         one_rtt -> #{type => one_rtt, dcid => C#c.dcid};
                         _ -> #{type => Space, dcid => C#c.dcid, scid => C#c.scid}
                     end,
            Min = case Space of initial -> 1200; _ -> 0 end,
            Packet = falco_quic_packet:protect(maps:merge(Header, Extra), Pn, none, Frames, K, Min),
            {iolist_to_binary(Packet), C#c{pn = Pns#{Space := Pn + 1}}};
        #{} ->
            {none, C}
    end.
