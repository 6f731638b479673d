%% falco_quic_socket, the UDP socket holder of a QUIC listener, with
%% stand-in connections (falco_test_quic_conn) and a client on 127.0.0.1:
%% a v1 Initial starts one connection and what follows with its CIDs is
%% routed to it, whichever holder of the port reads it; Version
%% Negotiation is answered; what may not start a connection starts none;
%% handshakes in progress are capped per holder and per address (an
%% Initial flood from many ports costs at most the cap in processes), and
%% a finished handshake frees its place; a connection's routes go with
%% it, and the holder's end takes its connections with it.
-module(quic_socket_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, init_per_testcase/2, end_per_testcase/2]).
-export([initial_starts_one_connection/1, routed_by_issued_cid/1, version_negotiation/1,
         not_a_connection/1, handshakes_capped/1, routes_go_with_the_connection/1,
         two_holders_one_port/1, holder_end_takes_connections/1, draining_takes_none/1]).

all() ->
    [initial_starts_one_connection, routed_by_issued_cid, version_negotiation,
     not_a_connection, handshakes_capped, routes_go_with_the_connection, two_holders_one_port,
     holder_end_takes_connections, draining_takes_none].

init_per_testcase(_Case, Config) ->
    Routes = ets:new(routes, [set, public]),
    [{routes, Routes} | Config].

end_per_testcase(_Case, Config) ->
    ets:delete(?config(routes, Config)),
    ok.

holder(Config) -> holder(Config, #{}).

holder(Config, Opts) ->
    process_flag(trap_exit, true),
    {ok, H} = falco_quic_socket:start_link(
                maps:merge(#{ip => {127, 0, 0, 1}, port => 0, routes => ?config(routes, Config),
                             conn => {falco_test_quic_conn, self()}}, Opts)),
    #{port := Port} = falco_quic_socket:info(H),
    {H, Port}.

client() ->
    {ok, S} = gen_udp:open(0, [binary, {active, true}, {ip, {127, 0, 0, 1}}]),
    S.

initial(Dcid, Size) ->
    {Client, _} = falco_quic_keys:initial(Dcid),
    iolist_to_binary(falco_quic_packet:protect(#{type => initial, dcid => Dcid, scid => <<"cli">>},
                                               0, none, falco_quic_frame:crypto(0, <<1, 0, 0, 0>>),
                                               Client, Size)).

send(S, Port, D) -> ok = gen_udp:send(S, {127, 0, 0, 1}, Port, D).

started() ->
    receive {conn_started, Pid, Info} -> {Pid, Info} after 2000 -> ct:fail(no_connection) end.

none_started() ->
    receive {conn_started, _, _} = M -> ct:fail({unexpected, M}) after 300 -> ok end.

got(Pid) ->
    receive {conn_datagram, Pid, _, D} -> D after 2000 -> ct:fail(nothing_routed) end.

%% Wait until the holder has handled what was sent (its counters).
settled(H, Key, N) ->
    settled(H, Key, N, 40).

settled(H, Key, N, 0) -> ?assertEqual(N, maps:get(Key, falco_quic_socket:info(H)));
settled(H, Key, N, Tries) ->
    case maps:get(Key, falco_quic_socket:info(H)) of
        N -> ok;
        _ -> timer:sleep(50), settled(H, Key, N, Tries - 1)
    end.

%% RFC 9000 §7.2: a v1 Initial of 1200 bytes with an 8-byte DCID starts a
%% connection, told its peer, CIDs and token; the client's next datagram
%% with the same DCID goes to it, and starts no second one.
initial_starts_one_connection(Config) ->
    {H, Port} = holder(Config),
    C = client(),
    D = initial(<<1:64>>, 1200),
    send(C, Port, D),
    {Pid, Info} = started(),
    ?assertMatch(#{dcid := <<1:64>>, scid := <<"cli">>, token := <<>>, holder := H,
                   peer := {{127, 0, 0, 1}, _}}, Info),
    send(C, Port, D),
    ?assertEqual(D, got(Pid)),
    none_started(),
    ?assertMatch(#{started := 1, routed := 1}, falco_quic_socket:info(H)).

%% A short header carrying a CID the connection issued reaches it.
routed_by_issued_cid(Config) ->
    {_H, Port} = holder(Config),
    C = client(),
    send(C, Port, initial(<<2:64>>, 1200)),
    {Pid, _} = started(),
    Pid ! {route, <<"ourcid08">>},
    receive {routed, Pid, _} -> ok after 2000 -> ct:fail(not_routed) end,
    Short = <<16#40, "ourcid08", (binary:copy(<<0>>, 40))/binary>>,
    send(C, Port, Short),
    ?assertEqual(Short, got(Pid)),
    %% and the connection answers on the holder's socket
    {ok, {_, CPort}} = inet:sockname(C),
    Pid ! {reply, {{127, 0, 0, 1}, CPort}, <<"pong">>},
    receive {udp, C, _, Port, <<"pong">>} -> ok after 2000 -> ct:fail(no_reply) end.

%% §6.1: another version gets Version Negotiation, no connection.
version_negotiation(Config) ->
    {H, Port} = holder(Config),
    C = client(),
    D = <<16#c0, 16#1a2a3a4a:32, 8, 3:64, 3, "abc", (binary:copy(<<0>>, 1200))/binary>>,
    send(C, Port, D),
    receive
        {udp, C, _, Port, VN} ->
            ?assertMatch({ok, #{type := version_negotiation, dcid := <<"abc">>, scid := <<3:64>>,
                                versions := [1, _]}, _}, falco_quic_packet:parse(VN, 0))
    after 2000 -> ct:fail(no_version_negotiation)
    end,
    none_started(),
    ?assertMatch(#{version_negotiation := 1, started := 0}, falco_quic_socket:info(H)).

%% §14.1, §7.2, §5.2.2: a short Initial, a short DCID, a Handshake packet,
%% a short header nobody routes: nothing starts, nothing is answered.
not_a_connection(Config) ->
    {H, Port} = holder(Config),
    C = client(),
    [send(C, Port, D) || D <- [initial(<<4:64>>, 1199), initial(<<4:56>>, 1200),
                               <<16#40, 9:64>>, <<1, 2, 3>>]],
    settled(H, dropped, 4),
    none_started(),
    receive {udp, C, _, _, _} = M -> ct:fail({answered, M}) after 100 -> ok end,
    %% a short header large enough is answered by a stateless reset (RFC
    %% 9000 §10.3), shorter than it, and starts nothing
    send(C, Port, <<16#40, 9:64, 0:800>>),
    receive {udp, C, _, _, Reset} -> ?assertMatch(<<0:1, 1:1, _:342>>, Reset)
    after 2000 -> ct:fail(no_stateless_reset)
    end,
    settled(H, stateless_reset, 1),
    none_started().

%% An Initial flood from 50 source ports of one address: at most
%% max_handshakes_per_address connections; one finishing its handshake
%% frees a place; the holder's own cap holds too.
handshakes_capped(Config) ->
    {H, Port} = holder(Config, #{max_handshakes_per_address => 5, max_handshakes => 8}),
    Clients = [client() || _ <- lists:seq(1, 50)],
    [send(C, Port, initial(<<I:64>>, 1200)) || {I, C} <- lists:zip(lists:seq(100, 149), Clients)],
    settled(H, refused, 45),
    Pids = [element(1, started()) || _ <- lists:seq(1, 5)],
    none_started(),
    ?assertMatch(#{started := 5, refused := 45, handshakes := 5}, falco_quic_socket:info(H)),
    hd(Pids) ! established,
    settled(H, handshakes, 4),
    send(hd(Clients), Port, initial(<<200:64>>, 1200)),
    _ = started(),
    ?assertMatch(#{started := 6, handshakes := 5}, falco_quic_socket:info(H)).

%% A connection that ends takes its routes and its handshake place.
routes_go_with_the_connection(Config) ->
    Routes = ?config(routes, Config),
    {H, Port} = holder(Config),
    C = client(),
    send(C, Port, initial(<<5:64>>, 1200)),
    {Pid, _} = started(),
    Pid ! {route, <<"issued01">>},
    receive {routed, Pid, _} -> ok after 2000 -> ct:fail(not_routed) end,
    ?assertEqual(2, length(ets:match_object(Routes, {'_', Pid}))),
    Pid ! stop,
    settled(H, handshakes, 0),
    ?assertEqual([], ets:match_object(Routes, {'_', Pid})),
    %% its DCID starts a new connection now
    send(C, Port, initial(<<5:64>>, 1200)),
    {Pid2, _} = started(),
    ?assertNotEqual(Pid, Pid2).

%% Two holders on one port (SO_REUSEPORT) with one route table: a
%% connection is found whichever socket the kernel gives its datagram.
two_holders_one_port(Config) ->
    {H1, Port} = holder(Config),
    {ok, H2} = falco_quic_socket:start_link(#{ip => {127, 0, 0, 1}, port => Port,
                                              routes => ?config(routes, Config),
                                              conn => {falco_test_quic_conn, self()}}),
    ?assertMatch(#{port := Port}, falco_quic_socket:info(H2)),
    Clients = [client() || _ <- lists:seq(1, 20)],
    [send(C, Port, initial(<<I:64>>, 1200)) || {I, C} <- lists:zip(lists:seq(300, 319), Clients)],
    Conns = [started() || _ <- lists:seq(1, 20)],
    Holders = lists:usort([maps:get(holder, Info) || {_, Info} <- Conns]),
    ct:pal("20 clients over ~b holders", [length(Holders)]),
    %% every client's second datagram reaches its connection
    [begin
         send(C, Port, <<(initial(<<I:64>>, 1200))/binary>>),
         {Pid, _} = lists:keyfind(<<I:64>>, 2, [{P, maps:get(dcid, Inf)} || {P, Inf} <- Conns]),
         ?assertMatch(<<_, _/binary>>, got(Pid))
     end || {I, C} <- lists:zip(lists:seq(300, 319), Clients)],
    #{routed := R1} = falco_quic_socket:info(H1),
    #{routed := R2} = falco_quic_socket:info(H2),
    ?assertEqual(20, R1 + R2).

%% The holder's end (its listener stopping) ends its connections.
holder_end_takes_connections(Config) ->
    {H, Port} = holder(Config),
    C = client(),
    send(C, Port, initial(<<6:64>>, 1200)),
    {Pid, _} = started(),
    Ref = monitor(process, Pid),
    unlink(H),
    exit(H, shutdown),
    %% told first, so that it can close (falco_http3_conn sends its
    %% CONNECTION_CLOSE on the holder's socket before it is closed)
    receive {conn_stopped, Pid} -> ok after 2000 -> ct:fail(not_told) end,
    receive {'DOWN', Ref, process, Pid, _} -> ok after 2000 -> ct:fail(connection_left) end.

%% A draining listener starts no connection, and still routes.
draining_takes_none(Config) ->
    Flag = atomics:new(1, []),
    {H, Port} = holder(Config, #{draining => fun() -> atomics:get(Flag, 1) =:= 1 end}),
    C = client(),
    send(C, Port, initial(<<7:64>>, 1200)),
    {Pid, _} = started(),
    atomics:put(Flag, 1, 1),
    send(C, Port, initial(<<8:64>>, 1200)),
    settled(H, refused, 1),
    none_started(),
    send(C, Port, initial(<<7:64>>, 1200)),
    ?assertMatch(<<_, _/binary>>, got(Pid)).
