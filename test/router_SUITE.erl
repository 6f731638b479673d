%% The router and middleware over real HTTP/1.1 connections: routes as a
%% listener option, bindings, hosts, the method rules of RFC 9110 (405 with
%% Allow §15.5.6, HEAD §9.3.2, OPTIONS §9.3.7), redirects (§15.4),
%% listener and per-route middleware on every kind of response, CORS
%% preflights, option validation, swapping routes at run time while a
%% keep-alive connection stays open, and the example application.
-module(router_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([init/1, all/0, groups/0, init_per_suite/1, end_per_suite/1,
         init_per_testcase/2, end_per_testcase/2]).
-export([routes_and_bindings/1, methods_head_options/1, hosts/1, trailing_slash_redirect/1,
         redirect_builder/1, listener_middleware_every_response/1,
         middleware_around_handler/1, route_middleware/1, cors_preflight/1,
         option_validation/1, swap_keeps_connection/1, swap_during_request/1,
         set_routes_errors/1, stop_uninstalls/1, routes_survive_restart/1, example_app/1]).

-define(C, falco_test_client).

all() ->
    [{group, routing}, {group, middleware}, {group, runtime}, example_app].

groups() ->
    [{routing, [], [routes_and_bindings, methods_head_options, hosts, trailing_slash_redirect,
                    redirect_builder]},
     {middleware, [], [listener_middleware_every_response, middleware_around_handler,
                       route_middleware, cors_preflight, option_validation]},
     {runtime, [], [swap_keeps_connection, swap_during_request, set_routes_errors, routes_survive_restart,
                    stop_uninstalls]}].

init_per_suite(Config) ->
    ok = falco_test_listener:start_app(),
    Config.

end_per_suite(Config) ->
    Config.

init_per_testcase(_Case, Config) ->
    Config.

end_per_testcase(example_app, Config) ->
    ok = falco_test_listener:ensure_stopped(falco_example),
    Config;
end_per_testcase(Case, Config) ->
    ok = falco_test_listener:ensure_stopped(Case),
    Config.

%% -- helpers -------------------------------------------------------------------------

start(Name, Opts) ->
    {_, Port} = falco_test_listener:start(Name, Opts),
    Port.

get(Port, Path) ->
    get(Port, Path, []).

get(Port, Path, Headers) ->
    request(Port, <<"GET">>, Path, Headers).

%% One request on a new HTTP/1.1 connection (host: localhost unless
%% Headers name one); the whole response.
request(Port, Method, Path, Headers) ->
    falco_test_http:fetch(http, Port, Method, Path, Headers, <<>>).

text(Body) ->
    fun(_Req) -> {200, [{<<"content-type">>, <<"text/plain">>}], Body} end.

%% -- routing -------------------------------------------------------------------------

routes_and_bindings(_Config) ->
    Port = start(routes_and_bindings,
                 #{routes => [{<<"/">>, text(<<"root">>)},
                              {<<"/hello/:name">>,
                               fun(Req) -> falco_resp:text(200, falco_req:binding(name, Req)) end},
                              {<<"/files/*path">>,
                               fun(Req) ->
                                       falco_resp:text(200, lists:join(<<"|">>,
                                                                       falco_req:binding(path, Req)))
                               end}]}),
    ?assertMatch(#{status := 200, body := <<"root">>}, get(Port, <<"/">>)),
    ?assertMatch(#{status := 200, body := <<"joe">>}, get(Port, <<"/hello/joe">>)),
    %% percent-decoded; an encoded "/" stays inside its binding
    ?assertMatch(#{status := 200, body := <<"a b/c">>}, get(Port, <<"/hello/a%20b%2Fc">>)),
    ?assertMatch(#{status := 200, body := <<"a|b c|">>}, get(Port, <<"/files/a/b%20c/">>)),
    %% the query string is not part of the path
    ?assertMatch(#{status := 200, body := <<"joe">>}, get(Port, <<"/hello/joe?x=/y">>)),
    #{status := 404, body := <<"Not Found\n">>} = get(Port, <<"/nope">>),
    #{status := 404} = get(Port, <<"/hello/">>),
    %% an absolute-form target is routed by its path
    ?assertMatch(#{status := 200, body := <<"joe">>},
                 get(Port, <<"http://example.com/hello/joe">>)).

methods_head_options(_Config) ->
    Port = start(methods_head_options,
                 #{routes => [{<<"/r">>, text(<<"got">>), #{methods => [<<"GET">>]}},
                              {<<"/r">>, text(<<"posted">>), #{methods => [<<"POST">>]}}]}),
    #{status := 200, body := <<"got">>} = get(Port, <<"/r">>),
    Post = request(Port, <<"POST">>, <<"/r">>, [{<<"content-length">>, <<"0">>}]),
    #{status := 200, body := <<"posted">>} = Post,
    %% RFC 9110 §9.3.2: HEAD gets GET's fields and no body
    Head = request(Port, <<"HEAD">>, <<"/r">>, []),
    ?assertMatch(#{status := 200, body := <<>>}, Head),
    ?assertEqual(<<"3">>, ?C:header(<<"content-length">>, Head)),
    %% §15.5.6: 405 with Allow
    Put = request(Port, <<"PUT">>, <<"/r">>, [{<<"content-length">>, <<"0">>}]),
    ?assertMatch(#{status := 405}, Put),
    ?assertEqual(<<"GET, HEAD, OPTIONS, POST">>, ?C:header(<<"allow">>, Put)),
    %% §9.3.7: OPTIONS answered with Allow
    Options = request(Port, <<"OPTIONS">>, <<"/r">>, []),
    ?assertMatch(#{status := 204, body := <<>>}, Options),
    ?assertEqual(<<"GET, HEAD, OPTIONS, POST">>, ?C:header(<<"allow">>, Options)),
    ?assertMatch(#{status := 204}, request(Port, <<"OPTIONS">>, <<"*">>, [])),
    ?assertMatch(#{status := 404}, request(Port, <<"OPTIONS">>, <<"/nope">>, [])).

hosts(_Config) ->
    Port = start(hosts, #{routes => [{<<"/">>, text(<<"default">>)},
                                     {<<"api.example.com">>, [{<<"/">>, text(<<"api">>)}]},
                                     {<<"*.users.example.com">>, [{<<"/">>, text(<<"user">>)}]}]}),
    Host = fun(H) -> maps:get(body, get(Port, <<"/">>, [{<<"host">>, H}])) end,
    ?assertEqual(<<"api">>, Host(<<"api.example.com">>)),
    %% Host is case-insensitive and its port is not part of the name
    ?assertEqual(<<"api">>, Host(<<"API.Example.com:8080">>)),
    ?assertEqual(<<"user">>, Host(<<"joe.users.example.com">>)),
    ?assertEqual(<<"default">>, Host(<<"users.example.com">>)),
    ?assertEqual(<<"default">>, Host(<<"other.example">>)).

trailing_slash_redirect(_Config) ->
    Port = start(trailing_slash_redirect,
                 #{routes => [{<<"/dir/">>, text(<<"dir">>)}, {<<"/file">>, text(<<"file">>)}],
                   router_opts => #{trailing_slash => redirect}}),
    R1 = get(Port, <<"/dir?x=1">>),
    ?assertMatch(#{status := 308}, R1),
    ?assertEqual(<<"/dir/?x=1">>, ?C:header(<<"location">>, R1)),
    R2 = get(Port, <<"/file/">>),
    ?assertMatch(#{status := 308}, R2),
    ?assertEqual(<<"/file">>, ?C:header(<<"location">>, R2)),
    ?assertMatch(#{status := 404}, get(Port, <<"/other/">>)),
    %% never a redirect to "//host"
    ?assertMatch(#{status := 404}, get(Port, <<"//evil.example/">>)).

redirect_builder(_Config) ->
    Port = start(redirect_builder,
                 #{routes => [{<<"/old">>, fun(_) -> falco_resp:redirect(301, <<"/new">>) end},
                              {<<"/bad">>, fun(Req) ->
                                                   %% a Location built from request data
                                                   falco_resp:redirect(302, [<<"/x">>, falco_req:qs(Req),
                                                                             <<"\r\nx: y">>])
                                           end}]}),
    R = get(Port, <<"/old">>),
    ?assertMatch(#{status := 301, body := <<>>}, R),
    ?assertEqual(<<"/new">>, ?C:header(<<"location">>, R)),
    %% CR/LF in a Location never reaches the wire: a 500 instead
    Bad = get(Port, <<"/bad">>),
    ?assertMatch(#{status := 500}, Bad),
    ?assertEqual(undefined, ?C:header(<<"x">>, Bad)),
    ?assertEqual(undefined, ?C:header(<<"location">>, Bad)).

%% -- middleware ----------------------------------------------------------------------

listener_middleware_every_response(Config) ->
    File = filename:join(?config(priv_dir, Config), "f.txt"),
    ok = file:write_file(File, <<"file body">>),
    Port = start(listener_middleware_every_response,
                 #{routes => [{<<"/full">>, text(<<"full">>)},
                              {<<"/file">>, fun(_) -> {200, [], {file, File}} end},
                              {<<"/stream">>, fun(_) ->
                                                      {stream, 200, [], fun(Send) -> Send(<<"s">>) end}
                                              end},
                              {<<"/get">>, text(<<"g">>), #{methods => [<<"GET">>]}}],
                   middleware => [falco_request_id, falco_security_headers]}),
    Responses = [get(Port, <<"/full">>), get(Port, <<"/file">>), get(Port, <<"/stream">>),
                 get(Port, <<"/nope">>), request(Port, <<"DELETE">>, <<"/get">>, []),
                 request(Port, <<"OPTIONS">>, <<"/get">>, [])],
    [begin
         ?assertEqual(<<"nosniff">>, ?C:header(<<"x-content-type-options">>, R)),
         ?assertEqual(<<"SAMEORIGIN">>, ?C:header(<<"x-frame-options">>, R)),
         ?assertEqual(undefined, ?C:header(<<"strict-transport-security">>, R)),
         ?assertMatch(<<_:32/binary>>, ?C:header(<<"x-request-id">>, R))
     end || R <- Responses],
    ?assertEqual([200, 200, 200, 404, 405, 204], [maps:get(status, R) || R <- Responses]),
    ?assertEqual(<<"file body">>, maps:get(body, lists:nth(2, Responses))),
    ?assertEqual(chunked, maps:get(framing, lists:nth(3, Responses))),
    %% an incoming id is kept
    ?assertEqual(<<"abc-123">>,
                 ?C:header(<<"x-request-id">>,
                           get(Port, <<"/full">>, [{<<"x-request-id">>, <<"abc-123">>}]))).

middleware_around_handler(_Config) ->
    %% listener middleware works with a plain handler too, outermost first
    Mw = fun(Tag) ->
                 fun(Req, Next) ->
                         falco_middleware:add_headers(Next(Req), [{<<"x-order">>, Tag}])
                 end
         end,
    Port = start(middleware_around_handler,
                 #{handler => fun(_) -> {200, [], <<"h">>} end,
                   middleware => [Mw(<<"outer">>), Mw(<<"inner">>)]}),
    R = get(Port, <<"/anything">>),
    ?assertEqual([<<"inner">>, <<"outer">>], ?C:header_values(<<"x-order">>, R)).

route_middleware(_Config) ->
    Auth = fun(Req, Next) ->
                   case falco_req:header(<<"authorization">>, Req) of
                       <<"Bearer ok">> -> Next(Req);
                       _ -> {401, [{<<"www-authenticate">>, <<"Bearer">>}], <<>>}
                   end
           end,
    Port = start(route_middleware,
                 #{routes => [{<<"/public">>, text(<<"public">>)},
                              {<<"/admin/:page">>,
                               fun(Req) -> falco_resp:text(200, falco_req:binding(page, Req)) end,
                               #{middleware => [Auth]}}]}),
    ?assertMatch(#{status := 200}, get(Port, <<"/public">>)),
    ?assertMatch(#{status := 401}, get(Port, <<"/admin/users">>)),
    ?assertMatch(#{status := 200, body := <<"users">>},
                 get(Port, <<"/admin/users">>, [{<<"authorization">>, <<"Bearer ok">>}])).

cors_preflight(_Config) ->
    Port = start(cors_preflight,
                 #{routes => [{<<"/api">>, text(<<"data">>), #{methods => [<<"GET">>, <<"PUT">>]}}],
                   middleware => [{falco_cors, #{origins => [<<"https://app.example">>],
                                                 max_age => 60}}]}),
    Pre = request(Port, <<"OPTIONS">>, <<"/api">>,
                  [{<<"origin">>, <<"https://app.example">>},
                   {<<"access-control-request-method">>, <<"PUT">>},
                   {<<"access-control-request-headers">>, <<"content-type">>}]),
    ?assertMatch(#{status := 204}, Pre),
    ?assertEqual(<<"https://app.example">>, ?C:header(<<"access-control-allow-origin">>, Pre)),
    ?assertEqual(<<"content-type">>, ?C:header(<<"access-control-allow-headers">>, Pre)),
    ?assertEqual(<<"60">>, ?C:header(<<"access-control-max-age">>, Pre)),
    Actual = get(Port, <<"/api">>, [{<<"origin">>, <<"https://app.example">>}]),
    ?assertMatch(#{status := 200, body := <<"data">>}, Actual),
    ?assertEqual(<<"https://app.example">>, ?C:header(<<"access-control-allow-origin">>, Actual)),
    ?assert(?C:has_token(<<"vary">>, <<"origin">>, Actual)),
    Other = get(Port, <<"/api">>, [{<<"origin">>, <<"https://evil.example">>}]),
    ?assertEqual(undefined, ?C:header(<<"access-control-allow-origin">>, Other)),
    %% a preflight from elsewhere falls through to the router's OPTIONS reply
    OtherPre = request(Port, <<"OPTIONS">>, <<"/api">>,
                       [{<<"origin">>, <<"https://evil.example">>},
                        {<<"access-control-request-method">>, <<"PUT">>}]),
    ?assertMatch(#{status := 204}, OtherPre),
    ?assertEqual(undefined, ?C:header(<<"access-control-allow-origin">>, OtherPre)),
    ?assertEqual(<<"GET, HEAD, OPTIONS, PUT">>, ?C:header(<<"allow">>, OtherPre)).

option_validation(_Config) ->
    H = fun(_) -> {200, [], <<>>} end,
    Base = #{port => 0, ip => {127, 0, 0, 1}},
    ?assertEqual({error, {conflicting_options, handler, routes}},
                 falco:start_listener(option_validation, Base#{handler => H, routes => []})),
    ?assertEqual({error, {missing_option, handler}}, falco:start_listener(option_validation, Base)),
    ?assertEqual({error, {invalid_option, routes, {invalid_path, <<"x">>}}},
                 falco:start_listener(option_validation, Base#{routes => [{<<"x">>, H}]})),
    ?assertEqual({error, {invalid_option, routes, nope}},
                 falco:start_listener(option_validation, Base#{routes => nope})),
    ?assertEqual({error, {invalid_option, router_opts, #{trailing_slash => sometimes}}},
                 falco:start_listener(option_validation,
                                      Base#{routes => [], router_opts => #{trailing_slash => sometimes}})),
    ?assertEqual({error, {invalid_option, router_opts, nope}},
                 falco:start_listener(option_validation, Base#{routes => [], router_opts => nope})),
    %% the entry named, and why
    ?assertEqual({error, {invalid_option, middleware, {invalid_middleware, 42, not_a_middleware}}},
                 falco:start_listener(option_validation, Base#{handler => H, middleware => [42]})),
    ?assertEqual({error, {invalid_option, middleware,
                          {invalid_middleware, {falco_cors, #{origins => 1}},
                           {invalid_options, {invalid_option, falco_cors, origins}}}}},
                 falco:start_listener(option_validation,
                                      Base#{handler => H, middleware => [{falco_cors, #{origins => 1}}]})),
    ?assertEqual({error, not_found}, falco:port(option_validation)).

%% -- swapping routes at run time ------------------------------------------------------

swap_keeps_connection(_Config) ->
    Port = start(swap_keeps_connection, #{routes => [{<<"/v">>, text(<<"one">>)}]}),
    Sock = ?C:connect(Port),
    Get = fun(Path) ->
                  ?C:send(Sock, [<<"GET ">>, Path, <<" HTTP/1.1\r\nhost: example.com\r\n\r\n">>]),
                  {ok, R} = ?C:recv_response(Sock),
                  R
          end,
    ?assertMatch(#{status := 200, body := <<"one">>}, Get(<<"/v">>)),
    ?assertMatch(#{status := 404}, Get(<<"/w">>)),
    ok = falco:set_routes(swap_keeps_connection,
                          [{<<"/v">>, text(<<"two">>)}, {<<"/w">>, text(<<"new">>)}]),
    %% same socket, new routes, no close in between
    ?assertMatch(#{status := 200, body := <<"two">>}, Get(<<"/v">>)),
    ?assertMatch(#{status := 200, body := <<"new">>}, Get(<<"/w">>)),
    %% one connection (counted once its acceptor has heard of it)
    ?assertEqual(ok, ?C:wait_until(fun() -> falco:connections(swap_keeps_connection) =:= {ok, 1} end,
                                   3000)),
    ok = falco:set_routes(swap_keeps_connection, []),
    ?assertMatch(#{status := 404}, Get(<<"/v">>)),
    ?C:close(Sock).

swap_during_request(_Config) ->
    Self = self(),
    Slow = fun(_) ->
                   Self ! {in_handler, self()},
                   receive go -> ok after 5000 -> ok end,
                   {200, [], <<"old">>}
           end,
    Port = start(swap_during_request, #{routes => [{<<"/slow">>, Slow}]}),
    Sock = ?C:connect(Port),
    ?C:send(Sock, <<"GET /slow HTTP/1.1\r\nhost: example.com\r\n\r\n">>),
    Conn = receive {in_handler, Pid} -> Pid after 5000 -> ct:fail(no_request) end,
    ok = falco:set_routes(swap_during_request, [{<<"/slow">>, text(<<"new">>)}]),
    Conn ! go,
    %% the request in flight finishes on the routes it started with
    ?assertMatch({ok, #{status := 200, body := <<"old">>}}, ?C:recv_response(Sock)),
    ?C:send(Sock, <<"GET /slow HTTP/1.1\r\nhost: example.com\r\n\r\n">>),
    ?assertMatch({ok, #{status := 200, body := <<"new">>}}, ?C:recv_response(Sock)),
    ?C:close(Sock).

set_routes_errors(_Config) ->
    _ = start(set_routes_errors, #{handler => fun(_) -> {200, [], <<>>} end}),
    %% a listener with a handler has no routes to swap
    ?assertEqual({error, not_found}, falco:set_routes(set_routes_errors, [])),
    ?assertEqual({error, not_found}, falco:set_routes(no_such_listener, [])),
    ok = falco:stop_listener(set_routes_errors),
    Port = start(set_routes_errors, #{routes => [{<<"/">>, text(<<"kept">>)}]}),
    ?assertMatch({error, {invalid_path, _}}, falco:set_routes(set_routes_errors, [{<<"x">>, text(<<>>)}])),
    %% a bad table is refused and the old one keeps serving
    ?assertMatch(#{status := 200, body := <<"kept">>}, get(Port, <<"/">>)).

stop_uninstalls(_Config) ->
    _ = start(stop_uninstalls, #{routes => [{<<"/">>, text(<<"first">>)}]}),
    ok = falco:stop_listener(stop_uninstalls),
    ?assertEqual({error, not_found}, falco:set_routes(stop_uninstalls, [])),
    %% the same name again, with other routes
    Port = start(stop_uninstalls, #{routes => [{<<"/">>, text(<<"second">>)}]}),
    ?assertMatch(#{status := 200, body := <<"second">>}, get(Port, <<"/">>)).

%% A listener in the user's own tree (child_spec/2) that its supervisor
%% restarts keeps the routes set at run time; a start with other routes
%% installs those (issue: they reverted to the start options).
routes_survive_restart(_Config) ->
    Name = routes_survive_restart,
    Opts = #{port => 0, ip => {127, 0, 0, 1}, routes => [{<<"/">>, text(<<"start">>)}]},
    {ok, Sup} = supervisor:start_link(?MODULE, {user_sup, falco:child_spec(Name, Opts)}),
    unlink(Sup),
    try
        Port1 = falco_test_listener:port(Name),
        ?assertMatch(#{status := 200, body := <<"start">>}, get(Port1, <<"/">>)),
        ok = falco:set_routes(Name, [{<<"/">>, text(<<"swapped">>)}]),
        [{_, Listener, _, _}] = supervisor:which_children(Sup),
        Ref = monitor(process, Listener),
        exit(Listener, kill),
        receive {'DOWN', Ref, _, _, _} -> ok after 5000 -> ct:fail(listener_alive) end,
        Port2 = wait_port(Name, Listener, 50),
        ?assertMatch(#{status := 200, body := <<"swapped">>}, get(Port2, <<"/">>)),
        %% the same name started anew with other routes gets those
        ok = supervisor:terminate_child(Sup, {falco_listener, Name}),
        ok = supervisor:delete_child(Sup, {falco_listener, Name}),
        Other = Opts#{routes => [{<<"/">>, text(<<"other">>)}]},
        {ok, _} = supervisor:start_child(Sup, falco:child_spec(Name, Other)),
        Port3 = falco_test_listener:port(Name),
        ?assertMatch(#{status := 200, body := <<"other">>}, get(Port3, <<"/">>))
    after
        exit(Sup, shutdown)
    end.

%% @private the user's supervisor of routes_survive_restart
init({user_sup, Spec}) ->
    {ok, {#{strategy => one_for_one, intensity => 5, period => 10}, [Spec]}}.

%% The port of listener `Name' once a process other than `Old' serves it.
wait_port(Name, Old, 0) ->
    ct:fail({not_restarted, Name, Old});
wait_port(Name, Old, N) ->
    case falco:port(Name) of
        {ok, Port} -> Port;
        {error, not_found} -> timer:sleep(100), wait_port(Name, Old, N - 1)
    end.

%% -- the example application ------------------------------------------------------------

example_app(_Config) ->
    {ok, _} = falco_example:start(#{port => 0}),
    Port = falco_test_listener:port(falco_example),
    Root = get(Port, <<"/">>),
    ?assertMatch(#{status := 200, body := <<"<!DOCTYPE html>", _/binary>>}, Root),
    ?assertEqual(<<"text/html; charset=utf-8">>, ?C:header(<<"content-type">>, Root)),
    %% the default middleware
    ?assertEqual(<<"nosniff">>, ?C:header(<<"x-content-type-options">>, Root)),
    ?assertMatch(<<_:32/binary>>, ?C:header(<<"x-request-id">>, Root)),
    Echo = request(Port, <<"POST">>, <<"/echo">>, [{<<"content-type">>, <<"text/x-test">>},
                                                  {<<"content-length">>, <<"0">>}]),
    ?assertMatch(#{status := 200, body := <<>>}, Echo),
    {Sock, {ok, Echoed}} = ?C:request(Port, <<"POST /echo HTTP/1.1\r\nhost: x\r\n"
                                             "content-length: 5\r\n\r\nhello">>),
    ?C:close(Sock),
    ?assertMatch(#{status := 200, body := <<"hello">>}, Echoed),
    ?assertEqual(<<"application/octet-stream">>, ?C:header(<<"content-type">>, Echoed)),
    ?assertMatch(#{status := 200, body := <<"{\"server\":\"falco\",\"message\":\"Hello, World!\"}">>},
                 get(Port, <<"/json">>)),
    Stream = get(Port, <<"/stream">>),
    ?assertMatch(#{status := 200, framing := chunked,
                   body := <<"chunk 1\nchunk 2\nchunk 3\nchunk 4\nchunk 5\n">>}, Stream),
    File = get(Port, <<"/file">>),
    ?assertMatch(#{status := 200}, File),
    {ok, Hello} = file:read_file(filename:join([code:lib_dir(falco), "..", "..", "..", "..",
                                                "examples", "priv", "hello.txt"])),
    ?assertEqual(Hello, maps:get(body, File)),
    ?assertMatch(#{status := 200, body := <<"Hello, Joe Armstrong!\n">>},
                 get(Port, <<"/hello/Joe%20Armstrong">>)),
    Search = get(Port, <<"/search?q=erlang+http&page=2">>),
    ?assertMatch(#{status := 200}, Search),
    ?assertEqual({ok, #{<<"q">> => <<"erlang http">>,
                        <<"params">> => [[<<"q">>, <<"erlang http">>], [<<"page">>, <<"2">>]]}},
                 falco_json:decode(maps:get(body, Search))),
    Missing = get(Port, <<"/search">>),
    ?assertMatch(#{status := 400, body := <<"missing query parameter q", _/binary>>}, Missing),
    ?assertMatch(#{status := 400}, get(Port, <<"/search?q=">>)),
    %% bytes that are not UTF-8 are replaced, not a crash
    ?assertMatch(#{status := 200}, get(Port, <<"/search?q=%FF">>)),
    NotAllowed = get(Port, <<"/echo">>),
    ?assertMatch(#{status := 405}, NotAllowed),
    ?assertEqual(<<"OPTIONS, POST">>, ?C:header(<<"allow">>, NotAllowed)),
    ?assertMatch(#{status := 200, body := <<>>}, request(Port, <<"HEAD">>, <<"/json">>, [])),
    ?assertMatch(#{status := 404}, get(Port, <<"/missing">>)).
