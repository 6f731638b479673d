%% @doc Routing as data, compiled once into a trie (RFC 9110 §9 for the
%% method rules: 405 with Allow (§15.5.6), HEAD served by GET routes
%% (§9.3.2), OPTIONS answered automatically (§9.3.7); RFC 3986 §2.1 for
%% the percent-decoding of path segments).
%%
%% ```
%% Routes = [{<<"/">>, home_handler},
%%           {<<"/hello/:name">>, fun hello/1, #{methods => [<<"GET">>]}},
%%           {<<"/files/*path">>, {files_handler, Dir}, #{middleware => [fun auth/2]}},
%%           {<<"api.example.com">>, [{<<"/v1/items/:id">>, items_handler}]}],
%% {ok, _} = falco:start_listener(web, #{port => 8080, routes => Routes}).
%% '''
%% A route is `{Path, Handler}' or `{Path, Handler, Opts}' (`methods',
%% `middleware'); `{Host, Routes}' groups routes for one host (`*.example.com'
%% matches every subdomain); routes outside a group serve every host that
%% has no group of its own. Path segments are literal, `:name' (one
%% non-empty segment) or `*name' (the rest of the path, one or more
%% segments, last only). Bindings are percent-decoded per segment, so an
%% encoded `/' stays inside its segment; a `*name' binding is the list of
%% the remaining decoded segments.
%%
%% Dispatch walks one trie level per path segment with a map lookup, so its
%% cost depends on the depth of the path, not on the number of routes.
%% Literal segments win over `:name', which wins over `*name'; when the
%% preferred branch has no route for the rest of the path the next one is
%% tried. The same path with no route for the method is a 405 with `Allow';
%% OPTIONS is answered 204 with `Allow' unless a route takes OPTIONS itself.
%%
%% {@link install/2} stores a compiled router in `persistent_term' under a
%% listener's name: connections read it per request without copying it,
%% and installing again swaps the routes without touching a connection.
%% Each swap costs a global scan of every process (persistent_term's rule
%% for updated terms), so it suits rare changes, not per-request ones.
-module(falco_router).
-behaviour(falco_handler).

-export([compile/1, compile/2, handle/2, describe/2, dispatch/2, match/4,
         install/2, install/3, install_start/2, set_routes/2, uninstall/1, installed/1]).
-export_type([router/0, route/0, routes/0, opts/0]).

-type handler() :: falco_handler:handler().
-type next() :: falco_middleware:next().
-type route_opts() :: #{methods => [binary() | string()],
                        middleware => [falco_middleware:middleware()]}.
-type route() :: {binary() | string(), handler()}
               | {binary() | string(), handler(), route_opts()}.
-type routes() :: [route() | {binary() | string(), [route()]}].
-type opts() :: #{trailing_slash => strict | redirect, not_found => handler()}.

%% What a matched route runs: its binding names (reversed, the order values
%% are collected in), the composed handler, and the route's path pattern
%% (or the Allow list of an automatic OPTIONS reply).
-type target() :: {[atom()], next(), binary() | {options, [binary()]}}.

-record(ep, {calls = #{} :: #{binary() => target()},
             any :: target() | undefined,
             options :: target() | undefined,
             allow = [] :: [binary()]}).
-record(node, {lit = #{} :: #{binary() => #node{}},
               param :: #node{} | undefined,
               wild :: #ep{} | undefined,
               ep :: #ep{} | undefined}).
-record(router, {default :: #node{},
                 exact = #{} :: #{binary() => #node{}},
                 suffixes = [] :: [{binary(), #node{}}],
                 hosts = false :: boolean(),
                 trailing_slash = strict :: strict | redirect,
                 not_found :: next() | undefined,
                 opts = #{} :: opts()}).
-opaque router() :: #router{}.

-define(KEY(Name), {?MODULE, Name}).
%% the router a listener started with, to tell its restart from a new start
-define(START_KEY(Name), {?MODULE, start, Name}).

%% -- compiling ----------------------------------------------------------------

%% @doc Compiles routes with the default options.
-spec compile(routes()) -> {ok, router()} | {error, term()}.
compile(Routes) ->
    compile(Routes, #{}).

%% @doc Compiles routes. Options: `trailing_slash' (`strict', the default:
%% `/a/' and `/a' are different paths; `redirect': a path that only matches
%% with the slash added or removed gets a 308 to that path) and `not_found'
%% (a handler for paths no route matches; the default answers 404).
-spec compile(routes(), opts()) -> {ok, router()} | {error, term()}.
compile(Routes, Opts) when is_list(Routes), is_map(Opts) ->
    try
        ok = check_opts(Opts),
        {Default, Groups} = split_groups(Routes),
        {Exact, Suffixes} = host_tables(Groups),
        NotFound = case maps:find(not_found, Opts) of
                       {ok, H} -> handler_fun(H);
                       error -> undefined
                   end,
        {ok, #router{default = table(Default), exact = Exact, suffixes = Suffixes,
                     hosts = Groups =/= [],
                     trailing_slash = maps:get(trailing_slash, Opts, strict),
                     not_found = NotFound, opts = Opts}}
    catch
        throw:{?MODULE, Reason} -> {error, Reason}
    end;
compile(Routes, Opts) when is_map(Opts) ->
    {error, {invalid_routes, Routes}};
compile(_Routes, Opts) ->
    {error, {invalid_router_opts, Opts}}.

check_opts(Opts) ->
    lists:foreach(fun({trailing_slash, V}) when V =:= strict; V =:= redirect -> ok;
                     ({not_found, _}) -> ok;
                     (KV) -> fail({invalid_router_option, KV})
                  end, maps:to_list(Opts)).

-spec fail(term()) -> no_return().
fail(Reason) ->
    throw({?MODULE, Reason}).

%% Top-level routes serve any host; `{Host, Routes}' entries are groups.
split_groups(Routes) ->
    lists:foldr(fun(Entry = {Host, Group}, {Default, Groups}) when is_list(Group) ->
                        case is_path(Host) of
                            true -> fail({invalid_route, Entry});
                            false -> {Default, [{host_pattern(Host), Group} | Groups]}
                        end;
                   (Route, {Default, Groups}) ->
                        {[Route | Default], Groups}
                end, {[], []}, Routes).

is_path(<<"/", _/binary>>) -> true;
is_path([$/ | _]) -> true;
is_path(_) -> false.

host_pattern(Host0) ->
    Host = string:lowercase(to_bin(Host0, {invalid_host, Host0})),
    Valid = Host =/= <<>> andalso binary:match(Host, [<<"/">>, <<" ">>, <<"\t">>]) =:= nomatch,
    case Host of
        <<"*.", Suffix/binary>> when Valid, Suffix =/= <<>> ->
            case binary:match(Suffix, <<"*">>) of
                nomatch -> {suffix, <<".", Suffix/binary>>};
                _ -> fail({invalid_host, Host0})
            end;
        _ when Valid ->
            case binary:match(Host, <<"*">>) of
                nomatch -> {exact, Host};
                _ -> fail({invalid_host, Host0})
            end;
        _ ->
            fail({invalid_host, Host0})
    end.

%% Groups for the same host are merged in order. Wildcard hosts are tried
%% longest suffix first, so `*.a.example.com' beats `*.example.com'.
host_tables(Groups) ->
    Merged = lists:foldl(fun({Pattern, Routes}, Acc) ->
                                 orddict:append_list(Pattern, Routes, Acc)
                         end, orddict:new(), Groups),
    Exact = maps:from_list([{H, table(Rs)} || {{exact, H}, Rs} <- Merged]),
    Suffixes = lists:sort(fun({A, _}, {B, _}) -> byte_size(A) >= byte_size(B) end,
                          [{S, table(Rs)} || {{suffix, S}, Rs} <- Merged]),
    {Exact, Suffixes}.

%% One host's routes: a trie built with maps, then frozen into records.
table(Routes) ->
    freeze(lists:foldl(fun add_route/2, #{}, Routes)).

add_route({Path, Handler}, Trie) ->
    add_route({Path, Handler, #{}}, Trie);
add_route({Path0, Handler, Opts}, Trie) when is_map(Opts) ->
    Path = to_bin(Path0, {invalid_path, Path0}),
    Pattern = pattern(Path),
    lists:foreach(fun(K) when K =:= methods; K =:= middleware -> ok;
                     (K) -> fail({invalid_route_option, Path, K})
                  end, maps:keys(Opts)),
    Middleware = maps:get(middleware, Opts, []),
    Leaf = #{pattern => Path,
             names => lists:reverse([N || {B, N} <- Pattern, B =/= lit]),
             methods => methods(Path, maps:get(methods, Opts, all)),
             call => compose(Path, Middleware, Handler),
             middleware => Middleware},
    insert(Pattern, Leaf, Trie);
add_route(Other, _Trie) ->
    fail({invalid_route, Other}).

to_bin(B, _Why) when is_binary(B) -> B;
to_bin(L, Why) when is_list(L) ->
    case unicode:characters_to_binary(L) of
        B when is_binary(B) -> B;
        _ -> fail(Why)
    end;
to_bin(_, Why) -> fail(Why).

compose(Path, Middleware, Handler) ->
    try
        falco_middleware:compose(Middleware, Handler)
    catch
        error:{invalid_handler, Why} -> fail({invalid_handler, Path, Why});
        error:{invalid_middleware, Entry, Why} -> fail({invalid_middleware, Path, Entry, Why})
    end.

%% The `not_found' handler.
handler_fun(H) ->
    try
        falco_middleware:handler_fun(H)
    catch
        error:{invalid_handler, Why} -> fail({invalid_handler, not_found, Why})
    end.

pattern(<<"/", Rest/binary>> = Path) ->
    Segs = binary:split(Rest, <<"/">>, [global]),
    Pattern = segments_pattern(Path, Segs),
    Names = [N || {B, N} <- Pattern, B =/= lit],
    case length(lists:usort(Names)) =:= length(Names) of
        true -> Pattern;
        false -> fail({duplicate_binding, Path})
    end;
pattern(Path) ->
    fail({invalid_path, Path}).

segments_pattern(Path, [<<":", Name/binary>> | T]) when Name =/= <<>> ->
    [{param, binary_to_atom(Name, utf8)} | segments_pattern(Path, T)];
segments_pattern(_Path, [<<"*", Name/binary>>]) when Name =/= <<>> ->
    [{wild, binary_to_atom(Name, utf8)}];
segments_pattern(Path, [<<C, _/binary>> | _]) when C =:= $:; C =:= $* ->
    fail({invalid_path, Path});
segments_pattern(Path, [Lit | T]) ->
    case falco_uri:decode(Lit) of
        {ok, Seg} -> [{lit, Seg} | segments_pattern(Path, T)];
        {error, _} -> fail({invalid_path, Path})
    end;
segments_pattern(_Path, []) ->
    [].

methods(_Path, all) ->
    all;
methods(Path, Ms) when is_list(Ms), Ms =/= [] ->
    [method(Path, M) || M <- Ms];
methods(Path, Other) ->
    fail({invalid_methods, Path, Other}).

method(Path, M0) ->
    M = to_bin(M0, {invalid_methods, Path, M0}),
    %% RFC 9110 §9.1: a method is a token.
    case falco_grammar:is_token(M) of
        true -> M;
        false -> fail({invalid_methods, Path, M0})
    end.

insert([], Leaf, Node) ->
    Node#{leaves => [Leaf | maps:get(leaves, Node, [])]};
insert([{lit, Seg} | Rest], Leaf, Node) ->
    Lits = maps:get(lit, Node, #{}),
    Node#{lit => Lits#{Seg => insert(Rest, Leaf, maps:get(Seg, Lits, #{}))}};
insert([{param, _} | Rest], Leaf, Node) ->
    Node#{param => insert(Rest, Leaf, maps:get(param, Node, #{}))};
insert([{wild, _}], Leaf, Node) ->
    Node#{wild => [Leaf | maps:get(wild, Node, [])]}.

freeze(Node) ->
    #node{lit = maps:map(fun(_, Child) -> freeze(Child) end, maps:get(lit, Node, #{})),
          param = case Node of
                      #{param := P} -> freeze(P);
                      _ -> undefined
                  end,
          wild = endpoint(maps:get(wild, Node, [])),
          ep = endpoint(maps:get(leaves, Node, []))}.

%% The routes ending at one trie node, in declaration order. Explicit
%% methods win over a route that takes every method; the same method twice
%% is a mistake worth refusing.
endpoint([]) ->
    undefined;
endpoint(Reversed) ->
    Leaves = [First | _] = lists:reverse(Reversed),
    Ep0 = lists:foldl(fun add_leaf/2, #ep{}, Leaves),
    Ms = maps:keys(Ep0#ep.calls),
    Allow = lists:usort([<<"OPTIONS">> | Ms] ++ [<<"HEAD">> || lists:member(<<"GET">>, Ms)]),
    Options = case maps:is_key(<<"OPTIONS">>, Ep0#ep.calls) orelse Ep0#ep.any =/= undefined of
                  true -> undefined;
                  false -> auto_options(First, Allow)
              end,
    Ep0#ep{allow = Allow, options = Options}.

add_leaf(#{pattern := P, names := Names, methods := all, call := Call}, Ep = #ep{any = undefined}) ->
    Ep#ep{any = {Names, Call, P}};
add_leaf(#{pattern := P, methods := all}, _Ep) ->
    fail({duplicate_route, P, any});
add_leaf(#{pattern := P, names := Names, methods := Ms, call := Call}, Ep) ->
    Ep#ep{calls = lists:foldl(fun(M, Calls) when is_map_key(M, Calls) ->
                                      fail({duplicate_route, P, M});
                                 (M, Calls) ->
                                      Calls#{M => {Names, Call, P}}
                              end, Ep#ep.calls, Ms)}.

%% The automatic OPTIONS answer runs through the first route's middleware,
%% so a per-route CORS middleware sees its preflights.
auto_options(#{pattern := P, names := Names, middleware := Middleware}, Allow) ->
    Reply = {204, [{<<"allow">>, join(Allow)}], <<>>},
    {Names, compose(P, Middleware, fun(_) -> Reply end), {options, Allow}}.

join([M]) -> M;
join([M | T]) -> <<M/binary, ", ", (join(T))/binary>>.

%% -- dispatching --------------------------------------------------------------

%% @doc The handler callback: dispatches with a compiled router, or with
%% the one installed under a name (`{installed, Name}').
-spec handle(falco_req:req(), router() | {installed, term()}) -> falco_handler:response().
handle(Req, {installed, Name}) ->
    dispatch(Req, persistent_term:get(?KEY(Name)));
handle(Req, Router) ->
    dispatch(Req, Router).

%% @doc The handler's `describe' ({@link falco_handler}): the route that
%% matches `Req', for falco's report of a bad response.
-spec describe(falco_req:req(), router() | {installed, term()}) -> iodata().
describe(Req, {installed, Name}) ->
    describe(Req, persistent_term:get(?KEY(Name)));
describe(Req = #{method := Method, path := Path}, R = #router{}) ->
    case match(R, Method, maps:get(host, Req, <<>>), Path) of
        {ok, Pattern, _} -> ["the handler of route ", Pattern];
        _ -> "the router"
    end.

%% @doc Finds the route for `Req' and runs it with `bindings' set in the
%% request; answers 404, 405, 400 (a path with a bad escape) or the
%% automatic OPTIONS reply itself.
-spec dispatch(falco_req:req(), router()) -> falco_handler:response().
dispatch(Req = #{method := Method, path := Path}, R = #router{}) ->
    case split(Path) of
        {ok, Segs} ->
            case lookup(host_table(R, Req), Segs, Method, []) of
                {ok, {Names, Call, _}, Values} ->
                    Call(Req#{bindings => bind(Names, Values)});
                {not_allowed, Allow} ->
                    falco_errors:response({method_not_allowed, Allow});
                not_found ->
                    not_found(Req, Segs, R)
            end;
        star when Method =:= <<"OPTIONS">> ->
            %% RFC 9110 §9.3.7: "OPTIONS *" asks about the server itself.
            {204, [], <<>>};
        _ ->
            falco_errors:response({bad_request, bad_path})
    end.

%% @doc Matches a method, host and path without running anything: the
%% route's path pattern and bindings, the Allow list of an automatic
%% OPTIONS reply, or why nothing matches.
-spec match(router(), binary(), binary(), binary()) ->
          {ok, binary(), #{atom() => binary() | [binary()]}}
        | {options, [binary()]}
        | {error, not_found | bad_path | {method_not_allowed, [binary()]}}.
match(R = #router{}, Method, Host, Path) ->
    case split(Path) of
        {ok, Segs} ->
            case lookup(host_table(R, #{host => Host}), Segs, Method, []) of
                {ok, {_, _, {options, Allow}}, _} ->
                    {options, Allow};
                {ok, {Names, _, Pattern}, Values} ->
                    {ok, Pattern, bind(Names, Values)};
                {not_allowed, Allow} ->
                    {error, {method_not_allowed, Allow}};
                not_found ->
                    {error, not_found}
            end;
        _ ->
            {error, bad_path}
    end.

host_table(#router{hosts = false, default = T}, _Req) ->
    T;
host_table(#router{exact = Exact, suffixes = Suffixes, default = T}, Req) ->
    Host = maps:get(host, Req, <<>>),
    case Exact of
        #{Host := Table} -> Table;
        _ -> suffix_table(Suffixes, Host, T)
    end.

suffix_table([{S, Table} | Rest], Host, Default) ->
    Size = byte_size(S),
    case byte_size(Host) > Size andalso binary:part(Host, byte_size(Host), -Size) =:= S of
        true -> Table;
        false -> suffix_table(Rest, Host, Default)
    end;
suffix_table([], _Host, Default) ->
    Default.

%% Segments of a request path, each percent-decoded on its own (an encoded
%% "/" stays inside its segment). "/" is one empty segment and a trailing
%% slash gives an empty last segment, as in route patterns.
%% One pass over the path; only a segment holding a `%' is decoded (twice
%% as fast as binary:split/3 and a decode of every segment, 2026-11-22).
split(<<"/", Rest/binary>>) ->
    split(Rest, Rest, 0, false, []);
split(<<"*">>) ->
    star;
split(_) ->
    error.

split(<<$/, R/binary>>, Orig, Len, Pct, Acc) ->
    case piece(Orig, Len, Pct) of
        error -> error;
        Seg -> split(R, R, 0, false, [Seg | Acc])
    end;
split(<<$%, R/binary>>, Orig, Len, _Pct, Acc) ->
    split(R, Orig, Len + 1, true, Acc);
split(<<_, R/binary>>, Orig, Len, Pct, Acc) ->
    split(R, Orig, Len + 1, Pct, Acc);
split(<<>>, Orig, Len, Pct, Acc) ->
    case piece(Orig, Len, Pct) of
        error -> error;
        Seg -> {ok, lists:reverse(Acc, [Seg])}
    end.

piece(Orig, Len, false) ->
    binary:part(Orig, 0, Len);
piece(Orig, Len, true) ->
    case falco_uri:decode(binary:part(Orig, 0, Len)) of
        {ok, Seg} -> Seg;
        {error, _} -> error
    end.

%% Depth-first: literal, then `:name' (never an empty segment), then
%% `*name'. The first full match wins; otherwise a 405 (the path exists)
%% beats a 404, and the Allow lists of several 405s are merged.
lookup(#node{ep = Ep}, [], Method, Values) ->
    at(Ep, Method, Values);
lookup(#node{lit = Lits, param = Param, wild = Wild}, Segs = [Seg | Rest], Method, Values) ->
    R1 = case Lits of
             #{Seg := Child} -> lookup(Child, Rest, Method, Values);
             _ -> not_found
         end,
    case R1 of
        {ok, _, _} ->
            R1;
        _ ->
            R2 = case Param of
                     #node{} when Seg =/= <<>> -> lookup(Param, Rest, Method, [Seg | Values]);
                     _ -> not_found
                 end,
            case R2 of
                {ok, _, _} ->
                    R2;
                _ ->
                    case at(Wild, Method, [Segs | Values]) of
                        {ok, _, _} = R3 -> R3;
                        R3 -> merge(R1, merge(R2, R3))
                    end
            end
    end.

at(undefined, _Method, _Values) ->
    not_found;
at(#ep{calls = Calls} = Ep, Method, Values) ->
    case Calls of
        #{Method := Target} -> {ok, Target, Values};
        _ -> fallback(Ep, Method, Values)
    end.

%% HEAD goes where GET goes (RFC 9110 §9.3.2), even with a catch-all route
%% beside the GET one; then the catch-all; then OPTIONS and 405.
fallback(#ep{calls = #{<<"GET">> := Target}}, <<"HEAD">>, Values) ->
    {ok, Target, Values};
fallback(#ep{any = Any}, _Method, Values) when Any =/= undefined ->
    {ok, Any, Values};
fallback(#ep{options = Target}, <<"OPTIONS">>, Values) when Target =/= undefined ->
    {ok, Target, Values};
fallback(#ep{allow = Allow}, _Method, _Values) ->
    {not_allowed, Allow}.

merge({not_allowed, A}, {not_allowed, B}) -> {not_allowed, lists:usort(A ++ B)};
merge({not_allowed, _} = A, not_found) -> A;
merge(not_found, B) -> B.

bind([], []) ->
    #{};
bind(Names, Values) ->
    maps:from_list(lists:zip(Names, Values)).

not_found(Req, Segs, R = #router{trailing_slash = redirect}) ->
    case toggle_slash(Req, Segs) of
        {Path, Segs1} ->
            case lookup(host_table(R, Req), Segs1, maps:get(method, Req), []) of
                not_found -> no_route(Req, R);
                _ -> falco_resp:redirect(308, with_qs(Path, Req))
            end;
        none ->
            no_route(Req, R)
    end;
not_found(Req, _Segs, R) ->
    no_route(Req, R).

%% "/a/" <-> "/a". Never towards a path starting with "//", which a
%% browser would read as another host (an open redirect).
toggle_slash(#{path := Path}, Segs) ->
    Size = byte_size(Path),
    case lists:last(Segs) of
        <<>> when Size > 1 ->
            case binary:part(Path, 0, Size - 1) of
                <<"//", _/binary>> -> none;
                Shorter -> {Shorter, lists:droplast(Segs)}
            end;
        <<>> ->
            none;
        _ ->
            case Path of
                <<"//", _/binary>> -> none;
                _ -> {<<Path/binary, "/">>, Segs ++ [<<>>]}
            end
    end.

with_qs(Path, #{qs := Qs}) when Qs =/= <<>> -> <<Path/binary, "?", Qs/binary>>;
with_qs(Path, _Req) -> Path.

no_route(Req, #router{not_found = undefined}) ->
    _ = Req,
    falco_errors:response(not_found);
no_route(Req, #router{not_found = Call}) ->
    Call(Req).

%% -- installed routers ---------------------------------------------------------

%% @doc Makes `Routes' (a route list, compiled with default options, or a
%% compiled router) the live routes named `Name' (a listener's name when
%% the listener was started with `routes'). Connections pick the new routes
%% up at their next request.
-spec install(term(), routes() | router()) -> ok | {error, term()}.
install(Name, R = #router{}) ->
    persistent_term:put(?KEY(Name), R);
install(Name, Routes) ->
    install(Name, Routes, #{}).

%% @doc As {@link install/2}, compiling `Routes' with `Opts'.
-spec install(term(), routes(), opts()) -> ok | {error, term()}.
install(Name, Routes, Opts) ->
    case compile(Routes, Opts) of
        {ok, R} -> install(Name, R);
        Error -> Error
    end.

%% @doc Installs `Router', compiled from the routes a listener named
%% `Name' starts with, unless this is a restart of that listener (its
%% supervisor starting it again with the same routes): then the routes live
%% now, perhaps replaced by {@link set_routes/2}, stay. A start with other
%% routes, or after {@link uninstall/1}, installs `Router'.
-spec install_start(term(), router()) -> ok.
install_start(Name, Router = #router{}) ->
    case {persistent_term:get(?START_KEY(Name), undefined),
          persistent_term:get(?KEY(Name), undefined)} of
        {Router, #router{}} ->
            ok;
        _ ->
            persistent_term:put(?START_KEY(Name), Router),
            persistent_term:put(?KEY(Name), Router)
    end.

%% @doc Replaces the routes installed under `Name', keeping the options
%% they were compiled with. `{error, not_found}' if none are installed.
-spec set_routes(term(), routes()) -> ok | {error, term()}.
set_routes(Name, Routes) ->
    case persistent_term:get(?KEY(Name), undefined) of
        #router{opts = Opts} -> install(Name, Routes, Opts);
        undefined -> {error, not_found}
    end.

%% @doc Removes the routes installed under `Name' (if any).
-spec uninstall(term()) -> ok.
uninstall(Name) ->
    _ = persistent_term:erase(?KEY(Name)),
    _ = persistent_term:erase(?START_KEY(Name)),
    ok.

%% @doc The handler that dispatches with the routes installed under `Name'.
-spec installed(term()) -> {module(), {installed, term()}}.
installed(Name) ->
    {?MODULE, {installed, Name}}.
