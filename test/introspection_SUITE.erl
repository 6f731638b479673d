%% falco:info/1 and falco:connection_list/1: what a running listener and
%% its connections are doing, over HTTP/1.1, HTTP/2 and WebSocket.
-module(introspection_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1, end_per_testcase/2]).
-export([listener_info/1, connection_list/1]).

-define(C, falco_test_client).
-define(H2, falco_test_h2_client).
-define(WS, falco_test_ws_client).

all() ->
    [listener_info, connection_list].

init_per_suite(Config) ->
    ok = falco_test_listener:start_app(),
    Config.

end_per_suite(_Config) ->
    ok.

end_per_testcase(Case, _Config) ->
    ok = falco_test_listener:ensure_stopped(Case, immediate),
    ok.

handler(Test) ->
    fun(Req) ->
            case falco_req:path(Req) of
                <<"/slow">> -> Test ! {in_handler, self()}, timer:sleep(1500), {200, [], <<"slow">>};
                <<"/ws">> -> {websocket, falco_test_ws_handler, #{test => Test}, #{}};
                _ -> {200, [], <<"ok">>}
            end
    end.

get_ok(Sock) ->
    ?C:send(Sock, <<"GET / HTTP/1.1\r\nhost: x\r\n\r\n">>),
    {ok, #{status := 200}} = ?C:recv_response(Sock).

listener_info(_Config) ->
    Name = listener_info,
    {_, Port} = falco_test_listener:start(Name, handler(self()),
                                          #{num_acceptors => 2, max_connections => 50}),
    Socks = [?C:connect(Port) || _ <- lists:seq(1, 3)],
    _ = [get_ok(S) || S <- Socks],
    {ok, Info} = falco:info(Name),
    ct:log("~p", [Info]),
    ?assertMatch(#{port := Port, state := running, connections := 3, max_connections := 50,
                   acceptors := 2}, Info),
    ?assertEqual(3, lists:sum(maps:get(per_acceptor, Info))),
    %% while it drains (a request in flight holds the drain)
    Slow = ?C:connect(Port),
    ?C:send(Slow, <<"GET /slow HTTP/1.1\r\nhost: x\r\n\r\n">>),
    receive {in_handler, _} -> ok after 5000 -> ct:fail(no_request) end,
    Test = self(),
    spawn_link(fun() -> Test ! {drained, falco:drain(Name, 5000)} end),
    ok = ?C:wait_until(fun() ->
                               case falco:info(Name) of
                                   {ok, #{state := draining}} -> true;
                                   _ -> false
                               end
                       end, 5000),
    receive {drained, {ok, _}} -> ok after 10000 -> ct:fail(drain_never_returned) end,
    ?assertEqual({error, not_found}, falco:info(Name)),
    ?assertEqual({error, not_found}, falco:connection_list(Name)).

connection_list(_Config) ->
    Name = connection_list,
    {_, Port} = falco_test_listener:start(Name, handler(self()), #{}),
    H1 = ?C:connect(Port),
    get_ok(H1),
    get_ok(H1),
    {ok, H1Port} = inet:port(H1),
    H2c0 = ?H2:connect(Port, #{}),
    {Id, H2c1} = ?H2:request(H2c0, <<"GET">>, <<"/">>),
    {ok, #{status := 200}, H2c2} = ?H2:response(H2c1, Id),
    {Ws, #{status := 101}} = ?WS:connect(Port, <<"/ws">>),
    receive {ws_init, _, _} -> ok after 5000 -> ct:fail(no_ws) end,
    Busy = ?C:connect(Port),
    ?C:send(Busy, <<"GET /slow HTTP/1.1\r\nhost: x\r\n\r\n">>),
    receive {in_handler, _} -> ok after 5000 -> ct:fail(no_request) end,
    %% the idle HTTP/1.1 connection answers sys within 100 ms once idle
    timer:sleep(300),
    {ok, List} = falco:connection_list(Name),
    ct:log("~p", [List]),
    ?assertEqual(4, length(List)),
    Ages = [A || #{age_ms := A} <- List],
    ?assertEqual(lists:reverse(lists:sort(Ages)), Ages),
    [Idle] = [C || C = #{protocol := http1, peer := {_, P}} <- List, P =:= H1Port],
    ?assertMatch(#{requests := 2, phase := idle, scheme := http}, Idle),
    ?assertMatch([#{streams := 0}], [C || C = #{protocol := h2} <- List]),
    ?assertMatch([#{path := <<"/ws">>}], [C || C = #{protocol := websocket} <- List]),
    ?assertMatch([#{busy := true}], [C || C = #{busy := true} <- List]),
    ?C:close(H1),
    ?H2:close(H2c2),
    ?C:close(Ws),
    ?C:close(Busy).
