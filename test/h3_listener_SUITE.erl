%% A TLS listener with `http3 => true' (docs/guide/http3.md): UDP socket
%% holders on its TCP port, started with the listener's connection
%% module and its arguments (here falco_test_quic_conn, by the internal
%% option `h3_conn_module', since falco_http3_conn is not in this tree
%% yet); the route table outlives a holder; QUIC connections take the
%% listener's connection slots (max_connections shared with TCP) and are
%% counted; a draining listener starts none; HTTP/1.1 and HTTP/2
%% responses carry Alt-Svc (a handler's own wins), none without http3;
%% bad options are refused with clear errors.
-module(h3_listener_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1, init_per_testcase/2, end_per_testcase/2]).
-export([udp_on_the_tcp_port/1, several_sockets/1, routes_survive_a_holder/1,
         max_connections_shared/1, draining_refuses/1, alt_svc_h1_h2/1, alt_svc_handler_wins/1,
         no_alt_svc_without_http3/1, options_refused/1, no_connection_module/1,
         connection_start_fails/1, client_certificates/1, credentials_refused/1]).
-export([start_link/2]).

-define(L, falco_test_listener).
-define(C, falco_test_client).
-define(H2, falco_test_h2_client).
-define(NAME, h3_listener).

all() ->
    [udp_on_the_tcp_port, several_sockets, routes_survive_a_holder, max_connections_shared,
     draining_refuses, alt_svc_h1_h2, alt_svc_handler_wins, no_alt_svc_without_http3,
     options_refused, no_connection_module, connection_start_fails, client_certificates,
     credentials_refused].

init_per_suite(Config) ->
    ok = ?L:start_tls_app(),
    Config.

end_per_suite(_Config) ->
    ok.

init_per_testcase(_Case, Config) ->
    true = register(h3_listener_test, self()),
    Config.

end_per_testcase(_Case, _Config) ->
    ok = ?L:ensure_stopped([?NAME, h3_off]),
    catch unregister(h3_listener_test),
    ok.

handler(Req) ->
    case maps:get(path, Req) of
        <<"/own">> -> {200, [{<<"Alt-Svc">>, <<"clear">>}], <<"own\n">>};
        _ -> {200, [{<<"content-type">>, <<"text/plain">>}], <<"hello\n">>}
    end.

start(Opts) ->
    ?L:start(?NAME, fun handler/1,
             ?L:tls(maps:merge(#{http3 => true, h3_conn_module => falco_test_quic_conn},
                               Opts))).

holders(Name) ->
    {ok, Hs} = falco_listener_sup:http3_sockets(Name),
    Hs.

client() ->
    {ok, S} = gen_udp:open(0, [binary, {active, true}, {ip, {127, 0, 0, 1}}]),
    S.

initial(Dcid) ->
    {Client, _} = falco_quic_keys:initial(Dcid),
    iolist_to_binary(falco_quic_packet:protect(#{type => initial, dcid => Dcid, scid => <<"cli">>},
                                               0, none, falco_quic_frame:crypto(0, <<1, 0, 0, 0>>),
                                               Client, 1200)).

send(S, Port, D) -> ok = gen_udp:send(S, {127, 0, 0, 1}, Port, D).

started() ->
    receive {conn_started, Pid, Info} -> {Pid, Info} after 3000 -> ct:fail(no_connection) end.

resend_until_started(_C, _Port, _D, 0) ->
    ct:fail(no_connection);
resend_until_started(C, Port, D, Tries) ->
    send(C, Port, D),
    receive {conn_started, Pid, Info} -> {Pid, Info}
    after 500 -> resend_until_started(C, Port, D, Tries - 1)
    end.

none_started() ->
    receive {conn_started, Pid, _} -> ct:fail({started, Pid}) after 300 -> ok end.

http3_info(Name) ->
    {ok, #{http3 := I}} = falco:info(Name),
    I.

wait(Fun) ->
    ok = ?C:wait_until(Fun, 5000).

%% -- cases ---------------------------------------------------------------------

%% One holder, on the TCP port (port 0 resolved), starting the listener's
%% connection module with the Args of falco_http3_conn's contract; the
%% connection counts as a listener's connection, under h3.
udp_on_the_tcp_port(_Config) ->
    {Sup, Port} = start(#{}),
    [H] = holders(?NAME),
    ?assertMatch(#{port := Port}, falco_quic_socket:info(H)),
    %% after the acceptors, before the guard
    Ids = [Id || {Id, _, _, _} <- lists:reverse(supervisor:which_children(Sup))],
    ?assertEqual([listen_socket, acceptors, {quic_socket, 1}, guard], Ids),
    C = client(),
    send(C, Port, initial(<<1:64>>)),
    {Pid, Info} = started(),
    #{args := Args, holder := H, cell := _} = Info,
    ?assertMatch(#{listener := ?NAME, handler := _, conf := #{stats := _, http3 := true},
                   tls := #{credentials := [_ | _], alpn := [<<"h3">>]}}, Args),
    ?assertEqual([conf, handler, listener, tls], lists:sort(maps:keys(Args))),
    ?assertNot(maps:is_key(verify, maps:get(tls, Args))),
    ?assert(is_function(maps:get(handler, Args), 1)),
    ?assertEqual({ok, 1}, falco:connections(?NAME)),
    {ok, Info1} = falco:info(?NAME),
    ?assertMatch(#{http3 := #{sockets := 1, started := 1, connections := 1, refused := 0},
                   connections_by_protocol := #{h3 := 1}, accepted := 1}, Info1),
    Pid ! stop,
    wait(fun() -> falco:connections(?NAME) =:= {ok, 0} end),
    ?assertMatch(#{connections := 0}, http3_info(?NAME)),
    {ok, #{connections_by_protocol := #{h3 := 0}}} = falco:info(?NAME).

%% h3_sockets holders share the port (SO_REUSEPORT).
several_sockets(_Config) ->
    case falco_transport:reuseport() of
        unsupported ->
            {skip, no_reuseport};
        _ ->
            {_, Port} = start(#{h3_sockets => 3}),
            Hs = holders(?NAME),
            ?assertEqual(3, length(Hs)),
            ?assertEqual([Port], lists:usort([maps:get(port, falco_quic_socket:info(H))
                                              || H <- Hs])),
            ?assertMatch(#{sockets := 3}, http3_info(?NAME))
    end.

%% The route table is the listener's: a holder killed is restarted with
%% it, the routes of the connections it took with it dropped, its slots
%% given back.
routes_survive_a_holder(_Config) ->
    {_, Port} = start(#{}),
    [H] = holders(?NAME),
    C = client(),
    send(C, Port, initial(<<7:64>>)),
    {Pid, #{routes := Routes}} = started(),
    ?assertEqual([{<<7:64>>, Pid}], ets:lookup(Routes, <<7:64>>)),
    Ref = monitor(process, Pid),
    exit(H, kill),
    receive {'DOWN', Ref, process, Pid, _} -> ok after 3000 -> ct:fail(connection_alive) end,
    wait(fun() -> case holders(?NAME) of [H2] -> H2 =/= H; _ -> false end end),
    [H2] = holders(?NAME),
    ?assertNotEqual(undefined, ets:info(Routes, size)),
    wait(fun() -> ets:lookup(Routes, <<7:64>>) =:= [] end),
    ?assertEqual({ok, 0}, falco:connections(?NAME)),
    %% the killed holder's socket may still take a datagram while the
    %% runtime closes it (both bound with SO_REUSEPORT): a client resends
    {Pid2, #{routes := Routes2, holder := H2}} = resend_until_started(C, Port, initial(<<8:64>>), 10),
    ?assertEqual(Routes, Routes2),
    ?assertEqual({ok, 1}, falco:connections(?NAME)),
    Pid2 ! stop.

%% max_connections counts TCP and QUIC connections together.
max_connections_shared(_Config) ->
    {_, Port} = start(#{max_connections => 2, num_acceptors => 1}),
    [H] = holders(?NAME),
    T1 = ?C:connect_tls(Port, [<<"http/1.1">>]),
    T2 = ?C:connect_tls(Port, [<<"http/1.1">>]),
    wait(fun() -> falco:connections(?NAME) =:= {ok, 2} end),
    C = client(),
    send(C, Port, initial(<<3:64>>)),
    none_started(),
    ?assertMatch(#{refused := 1, started := 0}, falco_quic_socket:info(H)),
    ok = ?C:close(T1),
    wait(fun() -> falco:connections(?NAME) =:= {ok, 1} end),
    send(C, Port, initial(<<4:64>>)),
    {Pid, _} = started(),
    ?assertEqual({ok, 2}, falco:connections(?NAME)),
    %% full again: the next Initial is refused
    send(C, Port, initial(<<5:64>>)),
    none_started(),
    Pid ! stop,
    wait(fun() -> falco:connections(?NAME) =:= {ok, 1} end),
    ok = ?C:close(T2).

%% A draining listener starts no QUIC connection.
draining_refuses(_Config) ->
    {_, Port} = start(#{}),
    [H] = holders(?NAME),
    {ok, Flag} = falco_listener_sup:drain_flag(?NAME),
    ok = falco_drain:set(Flag, draining),
    C = client(),
    send(C, Port, initial(<<6:64>>)),
    none_started(),
    ?assertMatch(#{refused := 1, started := 0}, falco_quic_socket:info(H)).

%% HTTP/1.1 and HTTP/2 responses advertise HTTP/3 on the listener's port.
alt_svc_h1_h2(_Config) ->
    {_, Port} = start(#{}),
    Expected = iolist_to_binary(["h3=\":", integer_to_list(Port), "\"; ma=86400"]),
    S = ?C:connect_tls(Port, [<<"http/1.1">>]),
    ok = ?C:send(S, <<"GET / HTTP/1.1\r\nhost: x\r\n\r\n">>),
    {ok, R} = ?C:recv_response(S),
    ?assertMatch(#{status := 200}, R),
    ?assertEqual(Expected, ?C:header(<<"alt-svc">>, R)),
    %% falco's own replies too
    ok = ?C:send(S, <<"GET / HTTP/1.1\r\nhost: x\r\ncontent-length: x\r\n\r\n">>),
    {ok, R400} = ?C:recv_response(S),
    ?assertMatch(#{status := 400}, R400),
    ?assertEqual(Expected, ?C:header(<<"alt-svc">>, R400)),
    ok = ?C:close(S),
    C = ?H2:connect(Port, #{transport => tls}),
    {Id, C1} = ?H2:request(C, <<"GET">>, <<"/">>),
    {ok, #{status := 200, headers := Headers}, C2} = ?H2:response(C1, Id),
    ?assertEqual([Expected], [V || {<<"alt-svc">>, V} <- Headers]),
    ok = ?H2:close(C2).

%% A handler's own Alt-Svc is sent instead, alone; ma follows the option.
alt_svc_handler_wins(_Config) ->
    {_, Port} = start(#{h3_alt_svc_max_age => 60}),
    S = ?C:connect_tls(Port, [<<"http/1.1">>]),
    ok = ?C:send(S, <<"GET /own HTTP/1.1\r\nhost: x\r\n\r\n">>),
    {ok, R} = ?C:recv_response(S),
    ?assertEqual([<<"clear">>], ?C:header_values(<<"alt-svc">>, R)),
    ok = ?C:send(S, <<"GET / HTTP/1.1\r\nhost: x\r\n\r\n">>),
    {ok, R2} = ?C:recv_response(S),
    ?assertEqual(iolist_to_binary(["h3=\":", integer_to_list(Port), "\"; ma=60"]),
                 ?C:header(<<"alt-svc">>, R2)),
    ok = ?C:close(S).

%% Without http3: no UDP socket, no Alt-Svc, no `http3' in info.
no_alt_svc_without_http3(_Config) ->
    {_, Port} = ?L:start(h3_off, fun handler/1, ?L:tls(#{})),
    ?assertEqual({ok, []}, falco_listener_sup:http3_sockets(h3_off)),
    {ok, Info} = falco:info(h3_off),
    ?assertNot(maps:is_key(http3, Info)),
    S = ?C:connect_tls(Port, [<<"http/1.1">>]),
    ok = ?C:send(S, <<"GET / HTTP/1.1\r\nhost: x\r\n\r\n">>),
    {ok, R} = ?C:recv_response(S),
    ?assertEqual(undefined, ?C:header(<<"alt-svc">>, R)),
    ok = ?C:close(S),
    C = ?H2:connect(Port, #{transport => tls}),
    {Id, C1} = ?H2:request(C, <<"GET">>, <<"/">>),
    {ok, #{status := 200, headers := Headers}, C2} = ?H2:response(C1, Id),
    ?assertEqual(false, lists:keymember(<<"alt-svc">>, 1, Headers)),
    ok = ?H2:close(C2).

%% http3 on a clear-text listener, and bad values, are refused at start.
options_refused(_Config) ->
    H = fun handler/1,
    Start = fun(Opts) -> falco:start_listener(?NAME, maps:merge(#{handler => H, port => 0,
                                                                   ip => {127, 0, 0, 1}}, Opts))
            end,
    ?assertEqual({error, {invalid_option, http3, needs_transport_tls}},
                 Start(#{http3 => true})),
    Tls = ?L:tls(#{http3 => true}),
    ?assertEqual({error, {invalid_option, http3, yes}}, Start(Tls#{http3 => yes})),
    ?assertEqual({error, {invalid_option, h3_sockets, 0}}, Start(Tls#{h3_sockets => 0})),
    ?assertEqual({error, {invalid_option, h3_max_streams_uni, 2}},
                 Start(Tls#{h3_max_streams_uni => 2})),
    ?assertEqual({error, {invalid_option, h3_idle_timeout, 0}},
                 Start(Tls#{h3_idle_timeout => 0})),
    ?assertEqual({error, {invalid_option, h3_alt_svc_max_age, -1}},
                 Start(Tls#{h3_alt_svc_max_age => -1})),
    ?assertEqual({error, {unknown_option, h3_nonsense}}, Start(Tls#{h3_nonsense => 1})),
    ?assertEqual({error, not_found}, falco:port(?NAME)).

%% Without a connection module (falco_http3_conn before it lands), the
%% listener does not start: it would admit clients nothing serves.
no_connection_module(_Config) ->
    ?assertMatch({error, {invalid_option, http3, {unavailable, no_such_conn_xyz, _}}},
                 falco:start_listener(?NAME, ?L:tls(#{handler => fun handler/1, port => 0,
                                                      ip => {127, 0, 0, 1}, http3 => true,
                                                      h3_conn_module => no_such_conn_xyz}))),
    ?assertEqual({error, not_found}, falco:port(?NAME)).

%% A connection that fails to start is a refusal; the holder goes on.
connection_start_fails(_Config) ->
    {_, Port} = start(#{h3_conn_module => ?MODULE}),
    [H] = holders(?NAME),
    C = client(),
    send(C, Port, initial(<<9:64>>)),
    wait(fun() -> maps:get(refused, falco_quic_socket:info(H)) =:= 1 end),
    ?assertEqual([H], holders(?NAME)),
    ?assertEqual({ok, 0}, falco:connections(?NAME)).

%% The connection module of connection_start_fails.
start_link(_Args, _Info) ->
    error(cannot_start).

%% A listener that asks for client certificates asks for them over QUIC
%% too: the TLS options of the connection say so, with its trust anchors.
client_certificates(_Config) ->
    Server = falco_test_tls:server_opts(),
    {cert, Der} = lists:keyfind(cert, 1, Server),
    {_, Port} = start(#{tls_opts => Server ++ [{verify, verify_peer}, {fail_if_no_peer_cert, true},
                                               {cacerts, [Der]}]}),
    C = client(),
    send(C, Port, initial(<<10:64>>)),
    {Pid, #{args := #{tls := Tls}}} = started(),
    ?assertMatch(#{verify := verify_peer, fail_if_no_peer_cert := true, trusted := [Der],
                   credentials := [_], alpn := [<<"h3">>]}, Tls),
    Pid ! stop.

%% Credentials falco's TLS 1.3 cannot load fail the listener's start.
credentials_refused(_Config) ->
    Result = falco:start_listener(?NAME, #{handler => fun handler/1, port => 0,
                                           ip => {127, 0, 0, 1}, transport => tls, http3 => true,
                                           h3_conn_module => falco_test_quic_conn,
                                           tls_opts => [{cert, <<"not a certificate">>},
                                                        {key, {'ECPrivateKey', <<"junk">>}}]}),
    ct:log("~p", [Result]),
    ?assertMatch({error, {invalid_option, tls_opts, {http3, _}}}, Result),
    ?assertEqual({error, not_found}, falco:port(?NAME)).
