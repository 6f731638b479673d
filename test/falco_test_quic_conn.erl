%% A stand-in QUIC connection for quic_socket_SUITE, started by
%% falco_quic_socket as a real connection would be: it tells the test it
%% started (with the holder's Info) and every datagram routed to it, and
%% does what the test asks: route another CID to itself, report its
%% handshake done to the holder, answer on the socket, stop.
-module(falco_test_quic_conn).

-export([start_link/2]).

start_link(Test, Info) ->
    Pid = proc_lib:spawn_link(fun() -> init(Test, Info) end),
    {ok, Pid}.

init(Test, Info) ->
    Test ! {conn_started, self(), maps:remove(datagram, Info)},
    loop(Test, Info).

loop(Test, Info = #{holder := Holder, routes := Routes, socket := Sock}) ->
    receive
        {quic_datagram, Holder, Peer, D} ->
            Test ! {conn_datagram, self(), Peer, D},
            loop(Test, Info);
        {route, Cid} ->
            true = ets:insert(Routes, {Cid, self()}),
            Test ! {routed, self(), Cid},
            loop(Test, Info);
        established ->
            Holder ! {quic_established, self()},
            loop(Test, Info);
        {reply, {Ip, Port}, Bytes} ->
            ok = gen_udp:send(Sock, Ip, Port, Bytes),
            loop(Test, Info);
        stop ->
            ok
    after 60000 ->
        ok
    end.
