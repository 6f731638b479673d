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
-module(falco_test_quic_client).

-export([get/3]).

-define(K, falco_tls13_keys).
-define(CID_LEN, 8).

-record(c, {sock :: gen_udp:socket(), port :: inet:port_number(),
            dcid :: binary(), scid :: binary(), odcid :: binary(),
            keys = #{} :: #{{atom(), read | write} => term()},
            pn = #{initial => 0, handshake => 0, one_rtt => 0} :: map(),
            largest = #{initial => none, handshake => none, one_rtt => none} :: map(),
            %% received packet numbers per space, to acknowledge
            recvd = #{initial => [], handshake => [], one_rtt => []} :: map(),
            %% spaces with packets not yet acknowledged
            fresh = [] :: [atom()],
            crypto = #{} :: map(),
            ch :: binary(), priv :: binary(), suite :: atom(),
            hs_secret :: {binary(), binary()} | undefined,
            transcript = [] :: [binary()],
            flight_done = false :: boolean(),
            streams = #{} :: map(),
            events = [] :: list()}).

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
        C0 = start(Sock, Port, maps:get(suites, Opts, [16#1301, 16#1302, 16#1303])),
        case handshake(C0, Deadline) of
            {ok, C1} -> request(C1, Path, maps:get(authority, Opts, <<"localhost">>), Deadline);
            Error -> Error
        end
    after
        gen_udp:close(Sock)
    end.

%% -- the handshake ------------------------------------------------------------

start(Sock, Port, Suites) ->
    Dcid = crypto:strong_rand_bytes(?CID_LEN),
    Scid = crypto:strong_rand_bytes(?CID_LEN),
    {Client, Server} = falco_quic_keys:initial(Dcid),
    {Pub, Priv} = crypto:generate_key(ecdh, x25519),
    Params = iolist_to_binary(falco_quic_tparams:encode(
                                #{initial_source_connection_id => Scid,
                                  initial_max_data => 1 bsl 24,
                                  initial_max_stream_data_bidi_local => 1 bsl 22,
                                  initial_max_stream_data_bidi_remote => 1 bsl 22,
                                  initial_max_stream_data_uni => 1 bsl 20,
                                  initial_max_streams_bidi => 16,
                                  initial_max_streams_uni => 16,
                                  max_idle_timeout => 10000})),
    CH = falco_test_tls13:client_hello(#{shares => [{29, Pub}], groups => [29],
                                         transport_params => Params, alpn => [<<"h3">>],
                                         suites => Suites,
                                         random => crypto:strong_rand_bytes(32)}),
    C = #c{sock = Sock, port = Port, dcid = Dcid, scid = Scid, odcid = Dcid, ch = CH,
           priv = Priv, keys = #{{initial, write} => Client, {initial, read} => Server}},
    send(initial, [falco_quic_frame:crypto(0, CH)], C).

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
    close(C),
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

close(C) ->
    _ = send(one_rtt, [falco_quic_frame:application_close(16#100, <<>>)], C),
    ok.

%% -- receiving ----------------------------------------------------------------

recv(C = #c{sock = Sock}, Deadline) ->
    Left = Deadline - erlang:monotonic_time(millisecond),
    case Left > 0 andalso gen_udp:recv(Sock, 65536, Left) of
        {ok, {_, _, Datagram}} ->
            {Packets, _} = falco_quic_packet:split(Datagram, ?CID_LEN),
            C1 = lists:foldl(fun packet/2, C, Packets),
            {ok, acks(C1)};
        false -> {error, timeout};
        {error, timeout} -> {error, timeout}
    end.

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
                              recvd = maps:update_with(Type, fun(L) -> [Pn | L] end, C1#c.recvd),
                              fresh = lists:usort([Type | C1#c.fresh])},
                    {ok, Frames} = falco_quic_frame:parse(Payload, #{packet => Type, peer => server}),
                    lists:foldl(fun(F, Acc) -> frame(Type, F, Acc) end, C2, Frames);
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
frame(one_rtt, {stream, Id, Off, Fin, Data}, C = #c{streams = S}) ->
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
    C1 = send(handshake, [ack_frame(handshake, C), falco_quic_frame:crypto(0, Fin)], C),
    Keys = (C1#c.keys)#{{one_rtt, write} => falco_quic_keys:from_secret(Suite, CAp),
                        {one_rtt, read} => falco_quic_keys:from_secret(Suite, SAp)},
    C1#c{keys = Keys, flight_done = true}.

%% -- sending ------------------------------------------------------------------

%% ACKs for what came, in every space with something new.
acks(C = #c{fresh = Fresh}) ->
    lists:foldl(fun(Space, Acc) -> send(Space, [ack_frame(Space, Acc)], Acc) end,
                C#c{fresh = []}, Fresh).

ack_frame(Space, #c{recvd = R}) ->
    Pns = lists:usort(maps:get(Space, R)),
    falco_quic_frame:ack(0, ranges(lists:reverse(Pns), []), undefined).

%% Highest first: [{Smallest, Largest}].
ranges([], Acc) -> lists:reverse(Acc);
ranges([P | Rest], [{Lo, Hi} | Acc]) when P =:= Lo - 1 -> ranges(Rest, [{P, Hi} | Acc]);
ranges([P | Rest], Acc) -> ranges(Rest, [{P, P} | Acc]).

send(Space, Frames, C = #c{sock = Sock, port = Port, pn = Pns, keys = Keys}) ->
    case Keys of
        #{{Space, write} := K} ->
            Pn = maps:get(Space, Pns),
            Header = case Space of
                         one_rtt -> #{type => one_rtt, dcid => C#c.dcid};
                         _ -> #{type => Space, dcid => C#c.dcid, scid => C#c.scid}
                     end,
            Min = case Space of initial -> 1200; _ -> 0 end,
            Packet = falco_quic_packet:protect(Header, Pn, none, Frames, K, Min),
            ok = gen_udp:send(Sock, {127, 0, 0, 1}, Port, Packet),
            C#c{pn = Pns#{Space := Pn + 1}};
        #{} ->
            C
    end.
