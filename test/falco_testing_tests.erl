%% falco_testing, the test helper shipped in src/: requests built in one
%% line, run through falco's pipeline on its in-memory stream, for every
%% kind of response (full, streamed with trailers, file, SSE, upgrade,
%% errors), with the bounds (timeout, max_bytes, events) that stop a
%% handler that never ends.
-module(falco_testing_tests).

-include_lib("eunit/include/eunit.hrl").

-define(T, falco_testing).

echo(Req) ->
    {ok, Body, _} = falco_req:read_body(Req),
    {200, [{<<"content-type">>, <<"text/plain">>}],
     [falco_req:method(Req), " ", falco_req:path(Req), "?", falco_req:qs(Req), " ",
      falco_req:header(<<"x-a">>, Req, <<"-">>), " ", Body]}.

req_in_one_line_test() ->
    Req = ?T:req(post, "/p/q?x=1", #{headers => [{"X-A", "b"}, {<<"Host">>, <<"Example.COM:81">>}],
                                     body => <<"body">>, peer => {{10, 0, 0, 1}, 4000}}),
    ?assertEqual(<<"POST">>, falco_req:method(Req)),
    ?assertEqual(<<"/p/q">>, falco_req:path(Req)),
    ?assertEqual(<<"x=1">>, falco_req:qs(Req)),
    ?assertEqual(<<"b">>, falco_req:header(<<"x-a">>, Req)),
    ?assertEqual(<<"example.com">>, falco_req:host(Req)),
    ?assertEqual(81, falco_req:port(Req)),
    ?assertEqual({{10, 0, 0, 1}, 4000}, falco_req:peer(Req)),
    ?assert(falco_req:has_body(Req)),
    ?assertNot(falco_req:has_body(?T:req(<<"GET">>, <<"/">>))),
    %% the host as a connection reads it (falco_grammar:authority/1)
    V6 = ?T:req(get, "/", #{headers => [{"host", "[::1]"}]}),
    ?assertEqual({<<"[::1]">>, undefined}, {falco_req:host(V6), falco_req:port(V6)}),
    ?assertEqual(<<"localhost">>, falco_req:host(?T:req(get, "/"))).

full_reply_through_the_pipeline_test() ->
    {200, Headers, Body} = ?T:request(fun echo/1, post, "/a?b=c",
                                      #{headers => [{"x-a", "1"}], body => <<"xyz">>}),
    ?assertEqual(<<"POST /a?b=c 1 xyz">>, Body),
    %% the pipeline's own fields: Content-Length computed, Date added
    ?assertEqual({<<"content-length">>, <<"17">>}, lists:keyfind(<<"content-length">>, 1, Headers)),
    ?assertMatch({<<"date">>, _}, lists:keyfind(<<"date">>, 1, Headers)),
    %% HEAD: the fields ("HEAD /a? - "), no body
    {200, HeadFields, <<>>} = ?T:request(fun echo/1, head, "/a"),
    ?assertMatch({_, <<"11">>}, lists:keyfind(<<"content-length">>, 1, HeadFields)).

body_read_in_pieces_test() ->
    Handler = fun(Req) -> {200, [], pieces(Req, [])} end,
    {200, _, Body} = ?T:request(Handler, put, "/", #{body => <<"abcdefg">>, piece => 3}),
    ?assertEqual(<<"abc|def|g|">>, Body).

pieces(Req0, Acc) ->
    case falco_req:read_body(Req0, #{length => 100}) of
        {more, D, Req} -> pieces(Req, [Acc, D, "|"]);
        {ok, D, _} -> iolist_to_binary([Acc, D, "|"])
    end.

request_trailers_test() ->
    Handler = fun(Req0) ->
                      {ok, _, Req} = falco_req:read_body(Req0),
                      {200, [], [V || {_, V} <- falco_req:trailers(Req)]}
              end,
    ?assertMatch({200, _, <<"v">>},
                 ?T:request(Handler, post, "/", #{body => <<"x">>,
                                                   trailers => [{<<"t">>, <<"v">>}]})).

routes_and_middleware_test() ->
    Routes = [{<<"/hello/:name">>, fun(Req) ->
                                           falco_resp:text(200, [<<"hi ">>,
                                                                 falco_req:binding(name, Req)])
                                   end, #{methods => [<<"GET">>]}}],
    ?assertMatch({200, _, <<"hi joe">>}, ?T:request(Routes, get, "/hello/joe")),
    ?assertMatch({404, _, _}, ?T:request(Routes, get, "/nope")),
    {405, Fields, _} = ?T:request(Routes, post, "/hello/joe"),
    ?assertMatch({_, <<"GET, HEAD, OPTIONS">>}, lists:keyfind(<<"allow">>, 1, Fields)),
    Tag = fun(Req, Next) -> falco_middleware:add_headers(Next(Req), [{<<"x-mw">>, <<"1">>}]) end,
    {200, Fields2, _} = ?T:request(#{routes => Routes, middleware => [Tag]}, get, "/hello/x"),
    ?assertEqual({<<"x-mw">>, <<"1">>}, lists:keyfind(<<"x-mw">>, 1, Fields2)).

bindings_without_a_router_test() ->
    H = fun(Req) -> {200, [], falco_req:binding(id, Req)} end,
    ?assertMatch({200, _, <<"7">>}, ?T:request(H, get, "/x", #{bindings => #{id => <<"7">>}})).

module_handler_test() ->
    %% falco_router is itself a {Module, State} handler
    {ok, Router} = falco_router:compile([{<<"/">>, fun(_) -> {204, [], <<>>} end}]),
    ?assertMatch({204, _, <<>>}, ?T:request({falco_router, Router}, get, "/")).

streamed_reply_with_trailers_test() ->
    H = fun(_) -> {stream, 200, [{<<"content-type">>, <<"text/plain">>}],
                   fun(Send) -> ok = Send(<<"a">>), ok = Send(<<"bc">>),
                                {trailers, [{<<"x-sum">>, <<"3">>}]}
                   end}
        end,
    R = ?T:run(H, ?T:req(get, "/"), #{}),
    ?assertMatch(#{status := 200, kind := stream, chunks := [<<"a">>, <<"bc">>], body := <<"abc">>,
                   trailers := [{<<"x-sum">>, <<"3">>}], complete := true}, R),
    ?assertNot(lists:keymember(<<"content-length">>, 1, maps:get(headers, R))).

crashed_stream_is_incomplete_test() ->
    H = fun(_) -> {stream, 200, [], fun(Send) -> ok = Send(<<"a">>), error(boom) end} end,
    ?assertMatch(#{status := 200, body := <<"a">>, complete := false},
                 ?T:run(H, ?T:req(get, "/"), #{})).

endless_stream_bounded_test() ->
    Self = self(),
    H = fun(_) -> {stream, 200, [], fun(Send) -> forever(Send, Self) end} end,
    %% max_bytes: the handler's next send is refused, as if the client had gone
    R = ?T:run(H, ?T:req(get, "/"), #{max_bytes => 10}),
    ?assertMatch(#{complete := false, chunks := [_, _, _, _, _]}, R),
    ?assertEqual(<<"0123456789">>, binary:part(maps:get(body, R), 0, 10)),
    receive {refused, {error, closed}} -> ok after 2000 -> error(not_refused) end,
    %% timeout: whatever came by then
    T0 = erlang:monotonic_time(millisecond),
    R2 = ?T:run(fun(_) -> {stream, 200, [], fun(Send) -> ok = Send(<<"x">>),
                                                      receive after infinity -> ok end
                                            end}
                end, ?T:req(get, "/"), #{timeout => 300}),
    ?assertMatch(#{body := <<"x">>, complete := false}, R2),
    ?assert(erlang:monotonic_time(millisecond) - T0 < 5000),
    no_messages_left().

forever(Send, Test) ->
    forever(Send, Test, 0).
forever(Send, Test, N) ->
    case Send([integer_to_binary(N rem 10), integer_to_binary((N + 1) rem 10)]) of
        ok -> forever(Send, Test, N + 2);
        Error -> Test ! {refused, Error}, ok
    end.

no_messages_left() ->
    timer:sleep(50),
    ?assertEqual({messages, []}, process_info(self(), messages)).

file_reply_gives_the_bytes_test() ->
    File = filename:join(tmp_dir(), "falco_testing_file.txt"),
    ok = file:write_file(File, <<"0123456789">>),
    R = ?T:run(fun(_) -> {200, [], {file, File, 2, 5}} end, ?T:req(get, "/"), #{}),
    ?assertMatch(#{kind := file, body := <<"23456">>, complete := true}, R),
    ?assertEqual({<<"content-length">>, <<"5">>},
                 lists:keyfind(<<"content-length">>, 1, maps:get(headers, R))),
    ?assertMatch({404, _, _}, ?T:request(fun(_) -> {200, [], {file, File ++ ".none"}} end,
                                          get, "/")),
    ok = file:delete(File).

tmp_dir() ->
    case os:getenv("TMPDIR") of
        false -> "/tmp";
        D -> D
    end.

sse_events_bounded_test() ->
    H = fun(_) ->
                falco_sse:loop(fun() -> self() ! tick, {ok, [#{comment => <<"not an event">>}], 0} end,
                               fun(tick, N) -> self() ! tick,
                                               {ok, [#{event => <<"t">>, id => integer_to_binary(N),
                                                       data => <<"a\nb">>}], N + 1}
                               end, #{})
        end,
    {200, Headers, Events} = ?T:sse(H, ?T:req(get, "/events"), #{events => 3}),
    ?assertMatch({_, <<"text/event-stream", _/binary>>}, lists:keyfind(<<"content-type">>, 1, Headers)),
    ?assertMatch([#{event := <<"t">>, id := <<"0">>, data := <<"a\nb">>},
                  #{event := <<"t">>, id := <<"1">>},
                  #{event := <<"t">>, id := <<"2">>}], Events),
    no_messages_left().

errors_and_limits_test() ->
    ?assertMatch({500, _, _}, ?T:request(fun(_) -> error(crash) end, get, "/")),
    ?assertMatch({500, _, _}, ?T:request(fun(_) -> not_a_response end, get, "/")),
    ?assertMatch({413, _, _}, ?T:request(#{handler => fun echo/1, max_body => 3}, post, "/",
                                         #{body => <<"toolong">>})),
    %% handler_timeout: falco's own 503
    ?assertMatch({503, _, _}, ?T:request(#{handler => fun(_) -> receive after infinity -> ok end end,
                                           handler_timeout => 100}, get, "/")),
    ?assertError({falco_testing, invalid_app, {unknown_option, nope}},
                 ?T:request(#{handler => fun echo/1, nope => 1}, get, "/")),
    %% no response at all by the deadline
    ?assertError({falco_testing, no_response, 200},
                 ?T:run(fun(_) -> receive after infinity -> ok end end, ?T:req(get, "/"),
                        #{timeout => 200})),
    no_messages_left().

websocket_upgrade_test() ->
    Req = ?T:req(get, "/ws", #{headers => [{"connection", "Upgrade"}, {"upgrade", "websocket"},
                                           {"sec-websocket-version", "13"},
                                           {"sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="}]}),
    R = ?T:run(fun(_) -> {websocket, falco_testing_tests, st} end, Req, #{}),
    ?assertMatch(#{status := 101, kind := upgrade,
                   upgrade := #{handler := falco_testing_tests, state := st}}, R),
    ?assertEqual({<<"sec-websocket-accept">>, <<"s3pPLMBiTxaQ9kYGzzhZRbK+xOo=">>},
                 lists:keyfind(<<"sec-websocket-accept">>, 1, maps:get(headers, R))),
    ?assertMatch({426, _, _}, ?T:request(fun(_) -> {websocket, falco_testing_tests, st} end,
                                         get, "/ws")).

handler_runs_in_its_own_process_test() ->
    Self = self(),
    {200, _, Pid} = ?T:request(fun(_) -> {200, [], pid_to_list(self())} end, get, "/"),
    ?assertNotEqual(pid_to_list(Self), binary_to_list(Pid)).
