%% A stand-in QUIC connection for quic_socket_SUITE, started by
%% falco_quic_socket as a real connection would be: it tells the test it
%% started (with the holder's Info) and every datagram routed to it, and
%% does what the test asks: route another CID to itself, report its
%% handshake done to the holder, answer on the socket, stop.
%% Also the stand-in of falco_http3_conn for a listener (h3_listener_SUITE).
-module(falco_test_quic_conn).

-export([start_link/2]).

%% As a listener's connection module (its hidden option `h3_conn_module',
%% h3_listener_SUITE): Args is the listener's map, given to the test
%% registered as `h3_listener_test' under `args' in Info.
start_link(Args, Info) when is_map(Args) ->
    start_link(whereis(h3_listener_test), Info#{args => Args});
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
        {falco_stop, Holder} ->
            %% the holder stops: a real connection closes, then ends
            Test ! {conn_stopped, self()},
            ok;
        stop ->
            ok
    after 60000 ->
        ok
    end.
