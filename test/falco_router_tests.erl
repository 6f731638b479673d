%% EUnit tests for falco_router: matching (literal, `:name', `*name'),
%% precedence and backtracking, the trailing-slash policy, percent-decoding
%% (RFC 3986 §2.1), host groups, the method rules of RFC 9110 (405 with
%% Allow §15.5.6, HEAD §9.3.2, OPTIONS §9.3.7), per-route middleware,
%% compile errors, installed routers, and the dispatch cost with 10 vs
%% 1000 routes.
-module(falco_router_tests).
-include_lib("eunit/include/eunit.hrl").

-export([bench/0, handle/2, bad_headers/1]).

req(Method, Path) ->
    req(Method, Path, <<"example.com">>).

req(Method, Path, Host) ->
    #{method => Method, path => Path, qs => <<>>, host => Host, headers => [],
      scheme => http, version => {1, 1}}.

%% A handler that answers with its tag and the bindings it saw.
tag(Tag) ->
    fun(Req) -> {200, [], {Tag, falco_req:bindings(Req)}} end.

compile(Routes) ->
    {ok, R} = falco_router:compile(Routes),
    R.

get(R, Path) ->
    falco_router:dispatch(req(<<"GET">>, Path), R).

body(R, Path) ->
    {200, [], Body} = get(R, Path),
    Body.

status({Status, _, _}) -> Status.

%% -- matching ----------------------------------------------------------------------

literal_test() ->
    R = compile([{<<"/">>, tag(root)}, {<<"/a">>, tag(a)}, {<<"/a/b">>, tag(ab)},
                 {"/c", tag(c)}]),
    ?assertEqual({root, #{}}, body(R, <<"/">>)),
    ?assertEqual({a, #{}}, body(R, <<"/a">>)),
    ?assertEqual({ab, #{}}, body(R, <<"/a/b">>)),
    ?assertEqual({c, #{}}, body(R, <<"/c">>)),
    ?assertEqual({404, [{<<"content-type">>, <<"text/plain">>}], <<"Not Found\n">>},
                 get(R, <<"/a/b/c">>)),
    ?assertEqual(404, status(get(R, <<"/b">>))),
    ?assertEqual(404, status(get(R, <<"/a//b">>))),
    %% paths are case-sensitive (RFC 3986 §6.2.2.1 only folds scheme and host)
    ?assertEqual(404, status(get(R, <<"/A">>))).

bindings_test() ->
    R = compile([{<<"/hello/:name">>, tag(hello)},
                 {<<"/u/:user/posts/:post">>, tag(post)}]),
    ?assertEqual({hello, #{name => <<"joe">>}}, body(R, <<"/hello/joe">>)),
    ?assertEqual({post, #{user => <<"1">>, post => <<"2">>}}, body(R, <<"/u/1/posts/2">>)),
    %% `:name' never matches an empty segment
    ?assertEqual(404, status(get(R, <<"/hello/">>))),
    ?assertEqual(404, status(get(R, <<"/hello">>))).

percent_decoding_test() ->
    R = compile([{<<"/hello/:name">>, tag(hello)}, {<<"/caf%C3%A9">>, tag(cafe)},
                 {<<"/files/*path">>, tag(files)}]),
    ?assertEqual({hello, #{name => <<"a b">>}}, body(R, <<"/hello/a%20b">>)),
    %% an encoded "/" stays inside its segment
    ?assertEqual({hello, #{name => <<"a/b">>}}, body(R, <<"/hello/a%2Fb">>)),
    ?assertEqual({hello, #{name => <<"é"/utf8>>}}, body(R, <<"/hello/%C3%A9">>)),
    %% route literals are decoded too, and compared with decoded segments
    ?assertEqual({cafe, #{}}, body(R, <<"/caf%c3%a9">>)),
    ?assertEqual({cafe, #{}}, body(R, <<"/café"/utf8>>)),
    ?assertEqual({files, #{path => [<<"a/b">>, <<"c">>]}}, body(R, <<"/files/a%2fb/c">>)),
    ?assertEqual({400, [{<<"content-type">>, <<"text/plain">>}], <<"Bad Request\n">>},
                 get(R, <<"/hello/%zz">>)),
    ?assertEqual({error, bad_path}, falco_router:match(R, <<"GET">>, <<>>, <<"/%">>)),
    ?assertEqual(400, status(get(R, <<"/hello/%zz/x">>))).

wildcard_test() ->
    R = compile([{<<"/files/*path">>, tag(files)}, {<<"/*all">>, tag(all)}]),
    ?assertEqual({files, #{path => [<<"a">>]}}, body(R, <<"/files/a">>)),
    ?assertEqual({files, #{path => [<<"a">>, <<"b">>, <<>>]}}, body(R, <<"/files/a/b/">>)),
    ?assertEqual({files, #{path => [<<>>]}}, body(R, <<"/files/">>)),
    %% `*name' needs at least one segment: "/files" is caught by "/*all"
    ?assertEqual({all, #{all => [<<"files">>]}}, body(R, <<"/files">>)),
    ?assertEqual({all, #{all => [<<>>]}}, body(R, <<"/">>)),
    ?assertEqual({all, #{all => [<<"x">>, <<"y">>]}}, body(R, <<"/x/y">>)).

precedence_test() ->
    %% declared in the "wrong" order on purpose: precedence is structural
    R = compile([{<<"/u/*rest">>, tag(wild)}, {<<"/u/:id">>, tag(param)},
                 {<<"/u/new">>, tag(literal)}, {<<"/u/:id/edit">>, tag(edit)}]),
    ?assertEqual({literal, #{}}, body(R, <<"/u/new">>)),
    ?assertEqual({param, #{id => <<"7">>}}, body(R, <<"/u/7">>)),
    ?assertEqual({edit, #{id => <<"new">>}}, body(R, <<"/u/new/edit">>)),
    ?assertEqual({wild, #{rest => [<<"7">>, <<"x">>]}}, body(R, <<"/u/7/x">>)),
    ?assertEqual({wild, #{rest => [<<>>]}}, body(R, <<"/u/">>)).

backtracking_test() ->
    %% the literal branch "b" has no route for ".../d", so ":x" is tried
    R = compile([{<<"/a/b/c">>, tag(abc)}, {<<"/a/:x/d">>, tag(axd)},
                 {<<"/a/:x/:y/z">>, tag(axyz)}, {<<"/a/*r">>, tag(ar)}]),
    ?assertEqual({abc, #{}}, body(R, <<"/a/b/c">>)),
    ?assertEqual({axd, #{x => <<"b">>}}, body(R, <<"/a/b/d">>)),
    ?assertEqual({axyz, #{x => <<"b">>, y => <<"c">>}}, body(R, <<"/a/b/c/z">>)),
    ?assertEqual({ar, #{r => [<<"b">>, <<"e">>]}}, body(R, <<"/a/b/e">>)).

same_shape_different_names_test() ->
    R = compile([{<<"/u/:id">>, tag(get), #{methods => [<<"GET">>]}},
                 {<<"/u/:name">>, tag(put), #{methods => [<<"PUT">>]}}]),
    ?assertEqual({200, [], {get, #{id => <<"1">>}}},
                 falco_router:dispatch(req(<<"GET">>, <<"/u/1">>), R)),
    ?assertEqual({200, [], {put, #{name => <<"1">>}}},
                 falco_router:dispatch(req(<<"PUT">>, <<"/u/1">>), R)).

handler_forms_test() ->
    R = compile([{<<"/mod">>, ?MODULE}, {<<"/state">>, {?MODULE, s}}, {<<"/fun">>, tag(f)}]),
    ?assertEqual({mod, undefined}, body(R, <<"/mod">>)),
    ?assertEqual({mod, s}, body(R, <<"/state">>)),
    ?assertEqual({f, #{}}, body(R, <<"/fun">>)).

%% falco_handler callback for handler_forms_test
handle(_Req, State) ->
    {200, [], {mod, State}}.

req_accessors_test() ->
    R = compile([{<<"/a/:x">>, fun(Req) ->
                                       {200, [], {falco_req:binding(x, Req),
                                                  falco_req:binding(y, Req),
                                                  falco_req:binding(y, Req, dflt)}}
                               end}]),
    ?assertEqual({<<"1">>, undefined, dflt}, body(R, <<"/a/1">>)),
    ?assertEqual(#{}, falco_req:bindings(req(<<"GET">>, <<"/">>))),
    ?assertEqual(undefined, falco_req:binding(x, req(<<"GET">>, <<"/">>))).

%% A binding read by its name as a binary (Elixir's "id") finds the same
%% value as the atom; a binary that names no binding, or no atom at all,
%% gives the default.
binding_by_binary_name_test() ->
    R = compile([{<<"/items/:item_id/*rest">>,
                  fun(Req) ->
                          {200, [], {falco_req:binding(<<"item_id">>, Req),
                                     falco_req:binding(<<"rest">>, Req),
                                     falco_req:binding(<<"y">>, Req, dflt),
                                     falco_req:binding(<<"no atom is named so 8f3e2a">>, Req),
                                     falco_req:binding(item_id, Req)}}
                  end}]),
    ?assertEqual({<<"7">>, [<<"a">>, <<"b">>], dflt, undefined, <<"7">>},
                 body(R, <<"/items/7/a/b">>)).

%% -- trailing slash ----------------------------------------------------------------

trailing_slash_strict_test() ->
    R = compile([{<<"/a">>, tag(a)}, {<<"/b/">>, tag(b)}]),
    ?assertEqual({a, #{}}, body(R, <<"/a">>)),
    ?assertEqual(404, status(get(R, <<"/a/">>))),
    ?assertEqual({b, #{}}, body(R, <<"/b/">>)),
    ?assertEqual(404, status(get(R, <<"/b">>))).

trailing_slash_redirect_test() ->
    {ok, R} = falco_router:compile([{<<"/a">>, tag(a)}, {<<"/b/">>, tag(b)},
                                    {<<"/p">>, tag(p), #{methods => [<<"POST">>]}}],
                                   #{trailing_slash => redirect}),
    ?assertEqual({a, #{}}, body(R, <<"/a">>)),
    ?assertEqual({308, [{<<"location">>, <<"/a">>}], <<>>}, get(R, <<"/a/">>)),
    ?assertEqual({308, [{<<"location">>, <<"/b/">>}], <<>>}, get(R, <<"/b">>)),
    ?assertEqual({308, [{<<"location">>, <<"/b/?x=1&y">>}], <<>>},
                 falco_router:dispatch((req(<<"GET">>, <<"/b">>))#{qs => <<"x=1&y">>}, R)),
    %% a 405 on the other form still redirects (308 keeps the method)
    ?assertEqual({308, [{<<"location">>, <<"/p">>}], <<>>}, get(R, <<"/p/">>)),
    ?assertEqual(404, status(get(R, <<"/c/">>))),
    ?assertEqual(404, status(get(R, <<"/c">>))),
    ?assertEqual(404, status(get(R, <<"/">>))),
    %% never a Location starting with "//" (another host for a browser)
    {ok, R2} = falco_router:compile([{<<"//evil.example">>, tag(e)}, {<<"//x/">>, tag(x)}],
                                    #{trailing_slash => redirect}),
    ?assertEqual(404, status(get(R2, <<"//evil.example/">>))),
    ?assertEqual(404, status(get(R2, <<"//x">>))).

not_found_handler_test() ->
    {ok, R} = falco_router:compile([{<<"/a">>, tag(a)}],
                                   #{not_found => fun(Req) ->
                                                          {404, [], {custom, falco_req:path(Req)}}
                                                  end}),
    ?assertEqual({404, [], {custom, <<"/zz">>}}, get(R, <<"/zz">>)).

%% -- hosts --------------------------------------------------------------------------

hosts_test() ->
    R = compile([{<<"/">>, tag(default)},
                 {<<"api.example.com">>, [{<<"/">>, tag(api)}, {<<"/v1/:x">>, tag(v1)}]},
                 {<<"*.example.com">>, [{<<"/">>, tag(sub)}]},
                 {<<"*.eu.example.com">>, [{<<"/">>, tag(eu)}]},
                 {"API.example.com", [{<<"/more">>, tag(more)}]}]),
    Get = fun(Host, Path) -> falco_router:dispatch(req(<<"GET">>, Path, Host), R) end,
    ?assertEqual({200, [], {api, #{}}}, Get(<<"api.example.com">>, <<"/">>)),
    ?assertEqual({200, [], {v1, #{x => <<"y">>}}}, Get(<<"api.example.com">>, <<"/v1/y">>)),
    %% groups for the same host are merged; host patterns are lowercased
    ?assertEqual({200, [], {more, #{}}}, Get(<<"api.example.com">>, <<"/more">>)),
    ?assertEqual({200, [], {sub, #{}}}, Get(<<"www.example.com">>, <<"/">>)),
    ?assertEqual({200, [], {sub, #{}}}, Get(<<"a.b.example.com">>, <<"/">>)),
    %% the longest wildcard wins
    ?assertEqual({200, [], {eu, #{}}}, Get(<<"x.eu.example.com">>, <<"/">>)),
    %% "*.example.com" does not match "example.com" itself
    ?assertEqual({200, [], {default, #{}}}, Get(<<"example.com">>, <<"/">>)),
    ?assertEqual({200, [], {default, #{}}}, Get(<<"other.org">>, <<"/">>)),
    ?assertEqual({200, [], {default, #{}}}, Get(<<"xexample.com">>, <<"/">>)),
    %% a host with a group of its own does not fall back to the default routes
    ?assertEqual(404, status(Get(<<"www.example.com">>, <<"/v1/y">>))),
    ?assertEqual({ok, <<"/v1/:x">>, #{x => <<"1">>}},
                 falco_router:match(R, <<"GET">>, <<"api.example.com">>, <<"/v1/1">>)).

%% -- methods -------------------------------------------------------------------------

methods_test() ->
    R = compile([{<<"/r">>, tag(get), #{methods => [<<"GET">>]}},
                 {<<"/r">>, tag(post), #{methods => ["POST"]}},
                 {<<"/any">>, tag(any)},
                 {<<"/mixed">>, tag(mixed_get), #{methods => [<<"GET">>]}},
                 {<<"/mixed">>, tag(mixed_any)},
                 {<<"/opt">>, tag(opt), #{methods => [<<"OPTIONS">>, <<"PUT">>]}}]),
    D = fun(M, P) -> falco_router:dispatch(req(M, P), R) end,
    ?assertEqual({200, [], {get, #{}}}, D(<<"GET">>, <<"/r">>)),
    ?assertEqual({200, [], {post, #{}}}, D(<<"POST">>, <<"/r">>)),
    %% RFC 9110 §9.3.2: HEAD wherever GET is
    ?assertEqual({200, [], {get, #{}}}, D(<<"HEAD">>, <<"/r">>)),
    %% §15.5.6: 405 with Allow
    ?assertEqual({405, [{<<"allow">>, <<"GET, HEAD, OPTIONS, POST">>},
                        {<<"content-type">>, <<"text/plain">>}], <<"Method Not Allowed\n">>},
                 D(<<"DELETE">>, <<"/r">>)),
    %% §9.3.7: OPTIONS answered with Allow
    ?assertEqual({204, [{<<"allow">>, <<"GET, HEAD, OPTIONS, POST">>}], <<>>},
                 D(<<"OPTIONS">>, <<"/r">>)),
    ?assertEqual({options, [<<"GET">>, <<"HEAD">>, <<"OPTIONS">>, <<"POST">>]},
                 falco_router:match(R, <<"OPTIONS">>, <<>>, <<"/r">>)),
    ?assertEqual({error, {method_not_allowed, [<<"GET">>, <<"HEAD">>, <<"OPTIONS">>, <<"POST">>]}},
                 falco_router:match(R, <<"PATCH">>, <<>>, <<"/r">>)),
    %% a route without methods takes every method, OPTIONS included
    [?assertEqual({200, [], {any, #{}}}, D(M, <<"/any">>))
     || M <- [<<"GET">>, <<"HEAD">>, <<"DELETE">>, <<"OPTIONS">>, <<"BREW">>]],
    %% explicit methods win over the catch-all route at the same path
    ?assertEqual({200, [], {mixed_get, #{}}}, D(<<"GET">>, <<"/mixed">>)),
    ?assertEqual({200, [], {mixed_get, #{}}}, D(<<"HEAD">>, <<"/mixed">>)),
    ?assertEqual({200, [], {mixed_any, #{}}}, D(<<"POST">>, <<"/mixed">>)),
    %% a route that lists OPTIONS gets it; no HEAD without GET
    ?assertEqual({200, [], {opt, #{}}}, D(<<"OPTIONS">>, <<"/opt">>)),
    ?assertEqual({405, [{<<"allow">>, <<"OPTIONS, PUT">>}, {<<"content-type">>, <<"text/plain">>}],
                  <<"Method Not Allowed\n">>}, D(<<"HEAD">>, <<"/opt">>)),
    ?assertEqual(404, status(D(<<"OPTIONS">>, <<"/nope">>))).

method_merge_across_branches_test() ->
    R = compile([{<<"/a/b">>, tag(lit), #{methods => [<<"POST">>]}},
                 {<<"/a/:x">>, tag(param), #{methods => [<<"GET">>]}},
                 {<<"/a/*r">>, tag(wild), #{methods => [<<"PUT">>]}}]),
    D = fun(M, P) -> falco_router:dispatch(req(M, P), R) end,
    ?assertEqual({200, [], {lit, #{}}}, D(<<"POST">>, <<"/a/b">>)),
    %% the literal route has no GET, the `:x' route does
    ?assertEqual({200, [], {param, #{x => <<"b">>}}}, D(<<"GET">>, <<"/a/b">>)),
    ?assertEqual({200, [], {wild, #{r => [<<"b">>]}}}, D(<<"PUT">>, <<"/a/b">>)),
    %% nobody takes DELETE: one 405 whose Allow lists every branch
    ?assertEqual({405, [{<<"allow">>, <<"GET, HEAD, OPTIONS, POST, PUT">>},
                        {<<"content-type">>, <<"text/plain">>}], <<"Method Not Allowed\n">>},
                 D(<<"DELETE">>, <<"/a/b">>)),
    %% a 405 beats a 404 from another branch
    ?assertEqual(405, status(D(<<"DELETE">>, <<"/a/c">>))).

star_test() ->
    R = compile([{<<"/">>, tag(root)}]),
    ?assertEqual({204, [], <<>>}, falco_router:dispatch(req(<<"OPTIONS">>, <<"*">>), R)),
    ?assertEqual(400, status(falco_router:dispatch(req(<<"GET">>, <<"*">>), R))),
    ?assertEqual(400, status(falco_router:dispatch(req(<<"GET">>, <<"x">>), R))).

%% -- middleware ----------------------------------------------------------------------

route_middleware_test() ->
    Trace = fun(Name) ->
                    fun(Req, Next) ->
                            {S, H, B} = Next(Req#{trace => [Name | maps:get(trace, Req, [])]}),
                            {S, H ++ [{<<"x-mw">>, atom_to_binary(Name)}], B}
                    end
            end,
    Handler = fun(Req) -> {200, [], {lists:reverse(maps:get(trace, Req)), falco_req:bindings(Req)}} end,
    R = compile([{<<"/m/:x">>, Handler, #{middleware => [Trace(one), Trace(two)],
                                          methods => [<<"GET">>]}},
                 {<<"/plain">>, tag(plain)}]),
    ?assertEqual({200, [{<<"x-mw">>, <<"two">>}, {<<"x-mw">>, <<"one">>}],
                  {[one, two], #{x => <<"1">>}}},
                 get(R, <<"/m/1">>)),
    ?assertEqual({plain, #{}}, body(R, <<"/plain">>)),
    %% the automatic OPTIONS reply runs through the route's middleware
    ?assertEqual({204, [{<<"allow">>, <<"GET, HEAD, OPTIONS">>},
                        {<<"x-mw">>, <<"two">>}, {<<"x-mw">>, <<"one">>}], <<>>},
                 falco_router:dispatch(req(<<"OPTIONS">>, <<"/m/1">>), R)),
    %% a 405 does not
    ?assertEqual(405, status(falco_router:dispatch(req(<<"PUT">>, <<"/m/1">>), R))).

%% -- compile errors ------------------------------------------------------------------

compile_errors_test_() ->
    H = tag(h),
    Bad = [{not_a_list, {invalid_routes, not_a_list}},
           {[{<<"a">>, H}], {invalid_path, <<"a">>}},
           {[{<<>>, H}], {invalid_path, <<>>}},
           {[{42, H}], {invalid_path, 42}},
           {[{<<"/a/*r/b">>, H}], {invalid_path, <<"/a/*r/b">>}},
           {[{<<"/a/:">>, H}], {invalid_path, <<"/a/:">>}},
           {[{<<"/a/*">>, H}], {invalid_path, <<"/a/*">>}},
           {[{<<"/a/%zz">>, H}], {invalid_path, <<"/a/%zz">>}},
           {[{<<"/:x/:x">>, H}], {duplicate_binding, <<"/:x/:x">>}},
           {[{<<"/a">>, 42}], {invalid_handler, <<"/a">>, {not_a_handler, 42}}},
           {[{<<"/a">>, H, #{methods => []}}], {invalid_methods, <<"/a">>, []}},
           {[{<<"/a">>, H, #{methods => get}}], {invalid_methods, <<"/a">>, get}},
           {[{<<"/a">>, H, #{methods => [<<"G T">>]}}], {invalid_methods, <<"/a">>, <<"G T">>}},
           {[{<<"/a">>, H, #{methods => [42]}}], {invalid_methods, <<"/a">>, 42}},
           {[{<<"/a">>, H, #{methods => [<<>>]}}], {invalid_methods, <<"/a">>, <<>>}},
           {[{<<"/a">>, H, #{colour => red}}], {invalid_route_option, <<"/a">>, colour}},
           {[{<<"/a">>, H, #{middleware => [42]}}], {invalid_middleware, <<"/a">>, 42, not_a_middleware}},
           {[{<<"/a">>, H, #{middleware => [{no_such_module_xyz, #{}}]}}],
            {invalid_middleware, <<"/a">>, {no_such_module_xyz, #{}},
             {no_such_module, no_such_module_xyz}}},
           {[{<<"/a">>, H, #{middleware => [{falco_cors, #{origins => 42}}]}}],
            {invalid_middleware, <<"/a">>, {falco_cors, #{origins => 42}},
             {invalid_options, {invalid_option, falco_cors, origins}}}},
           {[{<<"/a">>, H}, {<<"/a">>, H}], {duplicate_route, <<"/a">>, any}},
           {[{<<"/a">>, H, #{methods => [<<"GET">>]}}, {<<"/a">>, H, #{methods => [<<"GET">>]}}],
            {duplicate_route, <<"/a">>, <<"GET">>}},
           {[{<<"/a">>, H, #{methods => [<<"GET">>, <<"GET">>]}}],
            {duplicate_route, <<"/a">>, <<"GET">>}},
           {[{<<"/x">>, [{<<"/a">>, H}]}], {invalid_route, {<<"/x">>, [{<<"/a">>, H}]}}},
           {[{"/x", [{<<"/a">>, H}]}], {invalid_route, {"/x", [{<<"/a">>, H}]}}},
           {[{<<"a b">>, [{<<"/a">>, H}]}], {invalid_host, <<"a b">>}},
           {[{<<>>, [{<<"/a">>, H}]}], {invalid_host, <<>>}},
           {[{<<"a*.com">>, [{<<"/a">>, H}]}], {invalid_host, <<"a*.com">>}},
           {[{<<"*.a*.com">>, [{<<"/a">>, H}]}], {invalid_host, <<"*.a*.com">>}},
           {[{42, [{<<"/a">>, H}]}], {invalid_host, 42}},
           {[{[16#110000], [{<<"/a">>, H}]}], {invalid_host, [16#110000]}},
           {[{<<"h">>, [{<<"a">>, H}]}], {invalid_path, <<"a">>}},
           {[oops], {invalid_route, oops}}],
    [?_assertEqual({error, Why}, falco_router:compile(Routes)) || {Routes, Why} <- Bad]
        ++ [?_assertEqual({error, {invalid_router_option, {trailing_slash, maybe}}},
                          falco_router:compile([], #{trailing_slash => maybe})),
            ?_assertEqual({error, {invalid_router_option, {colour, red}}},
                          falco_router:compile([], #{colour => red})),
            ?_assertEqual({error, {invalid_router_opts, nope}}, falco_router:compile([], nope)),
            ?_assertEqual({error, {invalid_handler, not_found, {not_a_handler, 42}}},
                          falco_router:compile([], #{not_found => 42}))].

%% -- installed routers ---------------------------------------------------------------

installed_test() ->
    Name = {?MODULE, installed_test},
    ?assertEqual({error, not_found}, falco_router:set_routes(Name, [])),
    ok = falco_router:install(Name, [{<<"/">>, tag(one)}], #{trailing_slash => redirect}),
    Handler = {falco_router, {installed, Name}} = falco_router:installed(Name),
    Call = fun(Path) -> falco_router:handle(req(<<"GET">>, Path), {installed, Name}) end,
    ?assertEqual({200, [], {one, #{}}}, Call(<<"/">>)),
    ok = falco_router:set_routes(Name, [{<<"/two">>, tag(two)}]),
    ?assertEqual({200, [], {two, #{}}}, Call(<<"/two">>)),
    %% the options were kept
    ?assertEqual({308, [{<<"location">>, <<"/two">>}], <<>>}, Call(<<"/two/">>)),
    ?assertMatch({error, {invalid_path, _}}, falco_router:set_routes(Name, [{<<"x">>, tag(x)}])),
    ?assertEqual({200, [], {two, #{}}}, Call(<<"/two">>)),
    {ok, Compiled} = falco_router:compile([{<<"/three">>, tag(three)}]),
    ok = falco_router:install(Name, Compiled),
    ?assertEqual({200, [], {three, #{}}}, falco_router:handle(req(<<"GET">>, <<"/three">>), Compiled)),
    ?assertEqual({200, [], {three, #{}}}, Call(<<"/three">>)),
    ok = falco_router:install(Name, [{<<"/four">>, tag(four)}]),
    ?assertEqual({200, [], {four, #{}}}, Call(<<"/four">>)),
    ?assertEqual({error, {invalid_routes, x}}, falco_router:install(Name, x)),
    ok = falco_router:uninstall(Name),
    ok = falco_router:uninstall(Name),
    ?assertError(badarg, Call(<<"/four">>)),
    _ = Handler.

%% -- cost: 10 vs 1000 routes -----------------------------------------------------------

%% N routes of three shapes, as an application would have them.
many_routes(N) ->
    [case I rem 3 of
         0 -> {<<"/api/r", (integer_to_binary(I))/binary>>, tag(I), #{methods => [<<"GET">>]}};
         1 -> {<<"/api/r", (integer_to_binary(I))/binary, "/:id">>, tag(I)};
         2 -> {<<"/api/r", (integer_to_binary(I))/binary, "/files/*path">>, tag(I)}
     end || I <- lists:seq(1, N)].

%% Paths for the last routes declared (the worst case for a linear scan).
probe_paths(N) ->
    [case I rem 3 of
         0 -> <<"/api/r", (integer_to_binary(I))/binary>>;
         1 -> <<"/api/r", (integer_to_binary(I))/binary, "/42">>;
         2 -> <<"/api/r", (integer_to_binary(I))/binary, "/files/a/b.txt">>
     end || I <- lists:seq(N - 8, N)].

%% Best of 5 rounds, nanoseconds per dispatch.
ns_per_dispatch(N, Rounds) ->
    R = compile(many_routes(N)),
    Reqs = [req(<<"GET">>, P) || P <- probe_paths(N)],
    [{200, [], _} = falco_router:dispatch(Q, R) || Q <- Reqs],
    Times = [begin
                 T0 = erlang:monotonic_time(nanosecond),
                 loop(Rounds, Reqs, R),
                 (erlang:monotonic_time(nanosecond) - T0) / (Rounds * length(Reqs))
             end || _ <- lists:seq(1, 5)],
    lists:min(Times).

loop(0, _Reqs, _R) -> ok;
loop(K, Reqs, R) ->
    lists:foreach(fun(Q) -> falco_router:dispatch(Q, R) end, Reqs),
    loop(K - 1, Reqs, R).

dispatch_cost_does_not_grow_test_() ->
    {timeout, 60,
     fun() ->
             T10 = ns_per_dispatch(10, 2000),
             T1000 = ns_per_dispatch(1000, 2000),
             ?debugFmt("dispatch: ~.1f ns with 10 routes, ~.1f ns with 1000 routes", [T10, T1000]),
             %% A linear scan would be ~100 times slower; the trie stays flat
             %% (a map of 1000 keys costs a little more than one of 10).
             ?assert(T1000 < 2.5 * T10)
     end}.

%% @doc Prints the 10 vs 1000 route numbers (from a shell).
-spec bench() -> ok.
bench() ->
    [io:format("~5b routes: ~7.1f ns per dispatch~n", [N, ns_per_dispatch(N, 20000)])
     || N <- [10, 100, 1000, 10000]],
    ok.

%% A bad response is logged once, naming the route that matched (the
%% router's describe/2) and saying what was expected.
bad_response_names_route_test() ->
    ok = falco_test_tree:capture_log(bad_response_names_route, error),
    try
        Routes = [{<<"/users/:id">>, fun ?MODULE:bad_headers/1}],
        {500, _, _} = falco_testing:request(Routes, get, "/users/7"),
        timer:sleep(50),
        Lines = [iolist_to_binary(M) || #{msg := {"~ts", [M]}} <- falco_test_tree:logged()],
        ?assertMatch([_], Lines),
        [Line] = Lines,
        ?assertNotEqual(nomatch, binary:match(Line, <<"the handler of route /users/:id">>)),
        ?assertNotEqual(nomatch, binary:match(Line, <<"headers are a list of {Name, Value} pairs">>))
    after
        logger:remove_handler(bad_response_names_route)
    end.

bad_headers(_Req) ->
    {200, #{<<"content-type">> => <<"text/plain">>}, <<"x">>}.
