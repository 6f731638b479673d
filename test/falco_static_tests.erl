%% Unit tests for falco_static: mapping paths onto a root (and never out
%% of it), media types, validators, conditional and ranged replies,
%% precompressed siblings, index files. Replies go through the real
%% falco_pipeline (falco_test_req:run/2), so what is checked is what a
%% client would get.
-module(falco_static_tests).
-include_lib("eunit/include/eunit.hrl").
-include_lib("kernel/include/file.hrl").

-define(ST, falco_static).
-define(R, falco_test_req).

-define(A_TXT, <<"the file a.txt\n">>).
-define(SECRET, <<"secret outside the root\n">>).

static_test_() ->
    {setup, fun setup/0, fun cleanup/1,
     fun(Ctx) ->
             [{atom_to_list(element(2, erlang:fun_info(F, name))), fun() -> F(Ctx) end}
              || F <- [fun serves_file/1, fun content_types/1, fun head/1, fun index_and_redirect/1,
                       fun directory_without_index/1, fun not_found/1, fun methods/1,
                       fun hidden_files/1, fun traversal_raw/1, fun traversal_bindings/1,
                       fun symlinks/1, fun prefix/1, fun conditional/1, fun ranges/1,
                       fun precompressed/1, fun precompressed_off/1, fun init_root/1,
                       fun missing_root/1]]
     end}.

setup() ->
    Base = filename:absname(filename:join(["_build", "test", "tmp",
                                           "static_" ++ integer_to_list(erlang:unique_integer([positive]))])),
    Root = filename:join(Base, "root"),
    Out = filename:join(Base, "outside"),
    W = fun(P, D) -> ok = filelib:ensure_dir(P), ok = file:write_file(P, D) end,
    W(filename:join(Root, "a.txt"), ?A_TXT),
    W(filename:join(Root, "a.txt.gz"), zlib:gzip(?A_TXT)),
    W(filename:join(Root, "index.html"), <<"<h1>root</h1>">>),
    W(filename:join(Root, "b c.css"), <<"body{}">>),
    W(filename:join(Root, "data.JSON"), <<"{}">>),
    W(filename:join(Root, "noext"), <<"x">>),
    W(filename:join(Root, "only.gz"), zlib:gzip(<<"z">>)),
    W(filename:join([Root, "sub", "index.html"]), <<"<h1>sub</h1>">>),
    W(filename:join([Root, "sub", "deep.txt"]), <<"deep">>),
    ok = filelib:ensure_dir(filename:join([Root, "empty", "x"])),
    W(filename:join(Root, ".secret"), <<"hidden">>),
    W(filename:join([Root, ".git", "config"]), <<"hidden">>),
    W(filename:join(Out, "secret.txt"), ?SECRET),
    W(filename:join(Base, "rootsibling"), ?SECRET),
    ok = file:make_symlink("a.txt", filename:join(Root, "link_in")),
    ok = file:make_symlink("sub", filename:join(Root, "dirlink_in")),
    ok = file:make_symlink(filename:join(Out, "secret.txt"), filename:join(Root, "link_abs_out")),
    ok = file:make_symlink("../outside/secret.txt", filename:join(Root, "link_rel_out")),
    ok = file:make_symlink("../outside", filename:join(Root, "dirlink_out")),
    ok = file:make_symlink("sub/../../outside/secret.txt", filename:join(Root, "link_tricky")),
    ok = file:make_symlink("loop2", filename:join(Root, "loop1")),
    ok = file:make_symlink("loop1", filename:join(Root, "loop2")),
    ok = file:make_symlink("nowhere", filename:join(Root, "dangling")),
    %% A .gz sibling that is a link out of the root must not be served.
    W(filename:join(Root, "c.txt"), <<"c">>),
    ok = file:make_symlink(filename:join(Out, "secret.txt"), filename:join(Root, "c.txt.gz")),
    #{root => Root, base => Base}.

cleanup(#{base := Base}) ->
    _ = file:del_dir_r(Base),
    ok.

get(Ctx, Path) -> get(Ctx, Path, []).
get(Ctx, Path, Headers) -> get(Ctx, Path, Headers, #{}).
get(#{root := Root}, Path, Headers, Opts) ->
    ?R:run(?R:new(<<"GET">>, Path, Headers), {?ST, maps:merge(#{root => Root}, Opts)}).

req(Ctx, Method, Path, Headers, Opts) ->
    ?R:run(?R:new(Method, Path, Headers), {?ST, maps:merge(#{root => maps:get(root, Ctx)}, Opts)}).

h(Name, Headers) -> proplists:get_value(Name, Headers).

serves_file(Ctx) ->
    {200, H, ?A_TXT} = get(Ctx, <<"/a.txt">>),
    ?assertEqual(<<"text/plain; charset=utf-8">>, h(<<"content-type">>, H)),
    ?assertEqual(integer_to_binary(byte_size(?A_TXT)), h(<<"content-length">>, H)),
    ?assertEqual(<<"bytes">>, h(<<"accept-ranges">>, H)),
    {ok, Info} = file:read_file_info(filename:join(maps:get(root, Ctx), "a.txt"), [{time, posix}]),
    ?assertEqual(?ST:file_etag(Info), h(<<"etag">>, H)),
    ?assertEqual(falco_cond:http_date(Info#file_info.mtime), h(<<"last-modified">>, H)),
    %% a.txt has a .gz sibling: the reply depends on Accept-Encoding.
    ?assertEqual(<<"accept-encoding">>, h(<<"vary">>, H)),
    ?assertMatch({200, _, <<"body{}">>}, get(Ctx, <<"/b%20c.css">>)),
    ?assertMatch({200, _, <<"deep">>}, get(Ctx, <<"/sub/deep.txt">>)),
    ?assertMatch({200, _, <<"deep">>}, get(Ctx, <<"/sub/./deep.txt">>)),
    ?assertMatch({200, _, <<"deep">>}, get(Ctx, <<"//sub//deep.txt">>)),
    %% No Vary without a sibling.
    {200, H2, _} = get(Ctx, <<"/sub/deep.txt">>),
    ?assertEqual(undefined, h(<<"vary">>, H2)),
    ?assertEqual(undefined, h(<<"cache-control">>, H2)),
    {200, H3, _} = get(Ctx, <<"/sub/deep.txt">>, [], #{cache_control => <<"max-age=10">>}),
    ?assertEqual(<<"max-age=10">>, h(<<"cache-control">>, H3)).

content_types(Ctx) ->
    Type = fun(P) -> {200, H, _} = get(Ctx, P), h(<<"content-type">>, H) end,
    ?assertEqual(<<"text/css; charset=utf-8">>, Type(<<"/b%20c.css">>)),
    ?assertEqual(<<"application/json">>, Type(<<"/data.JSON">>)),
    ?assertEqual(<<"application/octet-stream">>, Type(<<"/noext">>)),
    ?assertEqual(<<"application/gzip">>, Type(<<"/only.gz">>)),
    {200, H, _} = get(Ctx, <<"/noext">>, [], #{default_type => <<"text/x">>}),
    ?assertEqual(<<"text/x">>, h(<<"content-type">>, H)),
    {200, H2, _} = get(Ctx, <<"/a.txt">>, [], #{mime_types => #{<<"txt">> => <<"text/x-mine">>}}),
    ?assertEqual(<<"text/x-mine">>, h(<<"content-type">>, H2)),
    ?assertEqual(<<"image/png">>, ?ST:mime_type(<<"png">>)),
    ?assertEqual(<<"font/woff2">>, ?ST:mime_type(<<"woff2">>)),
    ?assertEqual(undefined, ?ST:mime_type(<<"nope">>)),
    [?assert(is_binary(?ST:mime_type(E)))
     || E <- [<<"html">>, <<"htm">>, <<"js">>, <<"mjs">>, <<"txt">>, <<"text">>, <<"md">>,
              <<"csv">>, <<"xml">>, <<"map">>, <<"webmanifest">>, <<"ndjson">>, <<"wasm">>,
              <<"pdf">>, <<"zip">>, <<"tar">>, <<"br">>, <<"bin">>, <<"jpg">>, <<"jpeg">>,
              <<"gif">>, <<"webp">>, <<"avif">>, <<"svg">>, <<"ico">>, <<"bmp">>, <<"tif">>,
              <<"tiff">>, <<"woff">>, <<"ttf">>, <<"otf">>, <<"mp3">>, <<"ogg">>, <<"wav">>,
              <<"flac">>, <<"mp4">>, <<"webm">>, <<"ogv">>, <<"mov">>, <<"vtt">>, <<"ics">>,
              <<"rss">>, <<"atom">>, <<"xhtml">>, <<"epub">>]].

head(Ctx) ->
    {200, H, <<>>} = req(Ctx, <<"HEAD">>, <<"/a.txt">>, [], #{}),
    ?assertEqual(integer_to_binary(byte_size(?A_TXT)), h(<<"content-length">>, H)).

index_and_redirect(Ctx) ->
    ?assertMatch({200, _, <<"<h1>root</h1>">>}, get(Ctx, <<"/">>)),
    ?assertMatch({200, _, <<"<h1>sub</h1>">>}, get(Ctx, <<"/sub/">>)),
    {301, H, _} = get(Ctx, <<"/sub">>),
    ?assertEqual(<<"/sub/">>, h(<<"location">>, H)),
    {301, H2, _} = get(Ctx, <<"/sub?x=1">>),
    ?assertEqual(<<"/sub/?x=1">>, h(<<"location">>, H2)),
    {200, H3, _} = get(Ctx, <<"/">>),
    ?assertEqual(<<"text/html; charset=utf-8">>, h(<<"content-type">>, H3)),
    ?assertMatch({200, _, <<"deep">>}, get(Ctx, <<"/sub/">>, [], #{index => [<<"none">>, <<"deep.txt">>]})),
    ?assertMatch({404, _, _}, get(Ctx, <<"/sub/">>, [], #{index => []})),
    ?assertMatch({404, _, _}, get(Ctx, <<"/sub">>, [], #{index => []})),
    %% Leading slashes collapse: `//sub/' would send the browser to host `sub'.
    {301, H4, _} = get(Ctx, <<"//sub">>),
    ?assertEqual(<<"/sub/">>, h(<<"location">>, H4)),
    {301, H5, _} = get(Ctx, <<"///sub?x=1">>),
    ?assertEqual(<<"/sub/?x=1">>, h(<<"location">>, H5)),
    %% A regular file is not a directory: `a.txt/' is 404.
    ?assertMatch({404, _, _}, get(Ctx, <<"/a.txt/">>)),
    ?assertMatch({404, _, _}, get(Ctx, <<"/sub/deep.txt/">>)),
    ?assertMatch({404, _, _}, get(Ctx, <<"/link_in/">>)).

directory_without_index(Ctx) ->
    ?assertMatch({404, _, _}, get(Ctx, <<"/empty/">>)),
    ?assertMatch({404, _, _}, get(Ctx, <<"/empty">>)).

not_found(Ctx) ->
    ?assertMatch({404, _, _}, get(Ctx, <<"/nope.txt">>)),
    ?assertMatch({404, _, _}, get(Ctx, <<"/a.txt/more">>)),
    ?assertMatch({404, _, _}, get(Ctx, <<"/dangling">>)),
    ?assertMatch({404, _, _}, get(Ctx, <<"/loop1">>)).

methods(Ctx) ->
    {405, H, _} = req(Ctx, <<"POST">>, <<"/a.txt">>, [], #{}),
    ?assertEqual(<<"GET, HEAD">>, h(<<"allow">>, H)),
    ?assertMatch({405, _, _}, req(Ctx, <<"DELETE">>, <<"/a.txt">>, [], #{})).

hidden_files(Ctx) ->
    ?assertMatch({404, _, _}, get(Ctx, <<"/.secret">>)),
    ?assertMatch({404, _, _}, get(Ctx, <<"/.git/config">>)),
    ?assertMatch({404, _, _}, get(Ctx, <<"/%2esecret">>)),
    ?assertMatch({200, _, <<"hidden">>}, get(Ctx, <<"/.secret">>, [], #{dotfiles => allow})).

%% Every way of naming a file outside the root fails, and never shows it.
traversal_raw(Ctx) ->
    Attempts = [<<"/../outside/secret.txt">>, <<"/sub/../../outside/secret.txt">>,
                <<"/%2e%2e/outside/secret.txt">>, <<"/%2E%2E/outside/secret.txt">>,
                <<"/.%2e/outside/secret.txt">>, <<"/sub/%2e%2e/%2e%2e/outside/secret.txt">>,
                <<"/..%2foutside%2fsecret.txt">>, <<"/%2e%2e%2foutside%2fsecret.txt">>,
                <<"/sub%2f..%2f..%2foutside/secret.txt">>,
                <<"/..\\outside\\secret.txt">>, <<"/..%5coutside%5csecret.txt">>,
                <<"/%5c..%5coutside/secret.txt">>,
                <<"/a.txt%00.html">>, <<"/a.txt", 0, ".html">>,
                <<"/%252e%252e/outside/secret.txt">>, <<"/..%252foutside/secret.txt">>,
                <<"/%c0%ae%c0%ae/outside/secret.txt">>,
                <<"/../rootsibling">>, <<"/%2e%2e/rootsibling">>, <<"/%">>, <<"/%zz">>,
                <<"//../outside/secret.txt">>, <<"/./../outside/secret.txt">>,
                %% An absolute file name as the path: still under the root.
                <<"//etc/passwd">>, <<"/", (list_to_binary(filename:join(maps:get(base, Ctx), "outside/secret.txt")))/binary>>],
    [begin
         {Status, _, Body} = get(Ctx, P),
         ?assert(Status =:= 400 orelse Status =:= 404),
         ?assertEqual(nomatch, binary:match(Body, <<"secret outside">>))
     end || P <- Attempts],
    ?assertMatch({400, _, _}, get(Ctx, <<"/%2e%2e/outside/secret.txt">>)),
    ?assertMatch({400, _, _}, get(Ctx, <<"/..%5coutside">>)),
    ?assertEqual(bad_request, ?ST:lookup(?R:new(<<"GET">>, <<"/a%2fb">>, []),
                                         #{root => maps:get(root, Ctx)})).

traversal_bindings(Ctx) ->
    B = fun(Value) ->
                Req = (?R:new(<<"GET">>, <<"/files/x">>, []))#{bindings => #{path => Value}},
                ?R:run(Req, {?ST, #{root => maps:get(root, Ctx)}})
        end,
    ?assertMatch({200, _, ?A_TXT}, B([<<"a.txt">>])),
    ?assertMatch({200, _, <<"deep">>}, B([<<"sub">>, <<"deep.txt">>])),
    ?assertMatch({200, _, <<"deep">>}, B(<<"sub/deep.txt">>)),
    ?assertMatch({200, _, <<"deep">>}, B([<<"sub">>, <<".">>, <<>>, <<"deep.txt">>])),
    [begin
         {Status, _, Body} = B(V),
         ?assert(Status =:= 400 orelse Status =:= 404),
         ?assertEqual(nomatch, binary:match(Body, <<"secret outside">>))
     end || V <- [[<<"..">>, <<"outside">>, <<"secret.txt">>], <<"../outside/secret.txt">>,
                  [<<"sub">>, <<"..">>, <<"..">>, <<"outside">>, <<"secret.txt">>],
                  [<<"../outside/secret.txt">>], [<<"..\\outside">>], [<<"a.txt", 0>>],
                  <<"/etc/passwd">>, [<<"/etc/passwd">>], [<<"link_abs_out">>], [x], 42,
                  [<<".git">>, <<"config">>]]],
    %% A binding given by name as a binary key, or another name.
    Req = (?R:new(<<"GET">>, <<"/x">>, []))#{bindings => #{<<"file">> => [<<"a.txt">>]}},
    ?assertMatch({200, _, ?A_TXT}, ?R:run(Req, {?ST, #{root => maps:get(root, Ctx), binding => file}})),
    ?assertMatch({200, _, ?A_TXT}, ?R:run(Req, {?ST, #{root => maps:get(root, Ctx), binding => <<"file">>}})).

symlinks(Ctx) ->
    %% Links that stay inside are followed; links that leave are 404.
    ?assertMatch({200, _, ?A_TXT}, get(Ctx, <<"/link_in">>)),
    ?assertMatch({200, _, <<"deep">>}, get(Ctx, <<"/dirlink_in/deep.txt">>)),
    [?assertMatch({404, _, _}, get(Ctx, P))
     || P <- [<<"/link_abs_out">>, <<"/link_rel_out">>, <<"/dirlink_out/secret.txt">>,
              <<"/link_tricky">>]],
    %% The gzip sibling of c.txt links outside: never served, even to gzip clients.
    {200, H, <<"c">>} = get(Ctx, <<"/c.txt">>, [{<<"accept-encoding">>, <<"gzip">>}]),
    ?assertEqual(undefined, h(<<"content-encoding">>, H)),
    %% A root given through a symbolic link works.
    Link = filename:join(maps:get(base, Ctx), "rootlink"),
    ok = file:make_symlink(maps:get(root, Ctx), Link),
    ?assertMatch({200, _, ?A_TXT}, get(#{root => Link}, <<"/a.txt">>)),
    ?assertMatch({404, _, _}, get(#{root => Link}, <<"/link_rel_out">>)).

prefix(Ctx) ->
    P = #{prefix => <<"/static">>},
    ?assertMatch({200, _, ?A_TXT}, get(Ctx, <<"/static/a.txt">>, [], P)),
    ?assertMatch({200, _, <<"<h1>root</h1>">>}, get(Ctx, <<"/static/">>, [], P)),
    {301, H, _} = get(Ctx, <<"/static">>, [], P),
    ?assertEqual(<<"/static/">>, h(<<"location">>, H)),
    ?assertMatch({404, _, _}, get(Ctx, <<"/staticx/a.txt">>, [], P)),
    ?assertMatch({404, _, _}, get(Ctx, <<"/other/a.txt">>, [], P)),
    ?assertMatch({400, _, _}, get(Ctx, <<"/static/../static/a.txt">>, [], P)).

conditional(Ctx) ->
    {200, H, _} = get(Ctx, <<"/sub/deep.txt">>),
    ETag = h(<<"etag">>, H),
    LM = h(<<"last-modified">>, H),
    {304, H304, <<>>} = get(Ctx, <<"/sub/deep.txt">>, [{<<"if-none-match">>, ETag}],
                           #{cache_control => <<"max-age=5">>}),
    ?assertEqual(ETag, h(<<"etag">>, H304)),
    ?assertEqual(<<"max-age=5">>, h(<<"cache-control">>, H304)),
    ?assertEqual(undefined, h(<<"content-length">>, H304)),
    ?assertMatch({304, _, _}, get(Ctx, <<"/sub/deep.txt">>, [{<<"if-modified-since">>, LM}])),
    ?assertMatch({200, _, _}, get(Ctx, <<"/sub/deep.txt">>, [{<<"if-none-match">>, <<"\"other\"">>}])),
    ?assertMatch({412, _, _}, get(Ctx, <<"/sub/deep.txt">>, [{<<"if-match">>, <<"\"other\"">>}])),
    ?assertMatch({200, _, _}, get(Ctx, <<"/sub/deep.txt">>, [{<<"if-match">>, ETag}])),
    ?assertMatch({412, _, _}, get(Ctx, <<"/sub/deep.txt">>,
                                  [{<<"if-unmodified-since">>, <<"Sun, 06 Nov 1994 08:49:37 GMT">>}])),
    %% Rewriting the file changes the ETag.
    File = filename:join([maps:get(root, Ctx), "sub", "deep.txt"]),
    ok = file:write_file(File, <<"deeper">>),
    {200, H2, <<"deeper">>} = get(Ctx, <<"/sub/deep.txt">>, [{<<"if-none-match">>, ETag}]),
    ?assertNotEqual(ETag, h(<<"etag">>, H2)),
    ok = file:write_file(File, <<"deep">>).

ranges(Ctx) ->
    {206, H, <<"file">>} = get(Ctx, <<"/a.txt">>, [{<<"range">>, <<"bytes=4-7">>}]),
    ?assertEqual(<<"bytes 4-7/15">>, h(<<"content-range">>, H)),
    ?assertEqual(<<"4">>, h(<<"content-length">>, H)),
    {206, H2, Body} = get(Ctx, <<"/a.txt">>, [{<<"range">>, <<"bytes=0-2,-3">>}]),
    <<"multipart/byteranges; boundary=", B/binary>> = h(<<"content-type">>, H2),
    ?assertEqual(integer_to_binary(byte_size(Body)), h(<<"content-length">>, H2)),
    {done, Events, _} = falco_multipart:parse(Body, falco_multipart:init(B)),
    ?assertEqual([<<"the">>, <<"xt\n">>], [D || {data, D} <- Events]),
    {416, H3, _} = get(Ctx, <<"/a.txt">>, [{<<"range">>, <<"bytes=100-">>}]),
    ?assertEqual(<<"bytes */15">>, h(<<"content-range">>, H3)),
    {200, H4, _} = get(Ctx, <<"/a.txt">>),
    ?assertMatch({206, _, <<"the">>}, get(Ctx, <<"/a.txt">>, [{<<"range">>, <<"bytes=0-2">>},
                                                             {<<"if-range">>, h(<<"etag">>, H4)}])),
    ?assertMatch({200, _, ?A_TXT}, get(Ctx, <<"/a.txt">>, [{<<"range">>, <<"bytes=0-2">>},
                                                          {<<"if-range">>, <<"\"old\"">>}])),
    ?assertMatch({206, _, <<"the">>}, get(Ctx, <<"/a.txt">>, [{<<"range">>, <<"bytes=0-2">>},
                                                             {<<"if-range">>, h(<<"last-modified">>, H4)}])),
    ?assertMatch({200, _, _}, get(Ctx, <<"/a.txt">>, [{<<"range">>, <<"bytes=0-0,2-2,4-4">>}],
                                  #{max_ranges => 2})),
    %% Range twice: the whole file, as if there were none.
    ?assertMatch({200, _, ?A_TXT}, get(Ctx, <<"/a.txt">>, [{<<"range">>, <<"bytes=0-2">>},
                                                          {<<"range">>, <<"bytes=4-7">>}])).

precompressed(Ctx) ->
    Gz = zlib:gzip(?A_TXT),
    {200, H, Gz} = get(Ctx, <<"/a.txt">>, [{<<"accept-encoding">>, <<"gzip, deflate">>}]),
    ?assertEqual(<<"gzip">>, h(<<"content-encoding">>, H)),
    ?assertEqual(<<"accept-encoding">>, h(<<"vary">>, H)),
    ?assertEqual(<<"text/plain; charset=utf-8">>, h(<<"content-type">>, H)),
    {200, HId, _} = get(Ctx, <<"/a.txt">>),
    ?assertNotEqual(h(<<"etag">>, HId), h(<<"etag">>, H)),
    %% gzip refused or outweighed: the plain file.
    ?assertMatch({200, _, ?A_TXT}, get(Ctx, <<"/a.txt">>, [{<<"accept-encoding">>, <<"gzip;q=0">>}])),
    ?assertMatch({200, _, ?A_TXT}, get(Ctx, <<"/a.txt">>, [{<<"accept-encoding">>, <<"gzip;q=0.1, identity">>}])),
    ?assertMatch({200, _, Gz}, get(Ctx, <<"/a.txt">>, [{<<"accept-encoding">>, <<"*">>}])),
    %% Nothing acceptable: 406, naming the forms there are (RFC 9110 §15.5.7).
    {406, H406, Body406} = get(Ctx, <<"/a.txt">>, [{<<"accept-encoding">>, <<"br, identity;q=0">>}]),
    ?assertEqual(<<"accept-encoding">>, h(<<"vary">>, H406)),
    ?assertEqual(<<"Not Acceptable: this resource is available as identity, gzip\n">>, Body406),
    ?assertMatch({406, _, <<"Not Acceptable: this resource is available as identity\n">>},
                 get(Ctx, <<"/sub/deep.txt">>, [{<<"accept-encoding">>, <<"gzip, identity;q=0">>}])),
    %% Conditional and ranged on the gzip variant use its own validators.
    ?assertMatch({304, _, _}, get(Ctx, <<"/a.txt">>, [{<<"accept-encoding">>, <<"gzip">>},
                                                     {<<"if-none-match">>, h(<<"etag">>, H)}])),
    ?assertMatch({200, _, ?A_TXT}, get(Ctx, <<"/a.txt">>, [{<<"if-none-match">>, h(<<"etag">>, H)}])),
    {206, HR, Part} = get(Ctx, <<"/a.txt">>, [{<<"accept-encoding">>, <<"gzip">>}, {<<"range">>, <<"bytes=0-1">>}]),
    ?assertEqual(binary:part(Gz, 0, 2), Part),
    ?assertEqual(<<"gzip">>, h(<<"content-encoding">>, HR)),
    %% HEAD gets the gzip variant's length.
    {200, HH, <<>>} = req(Ctx, <<"HEAD">>, <<"/a.txt">>, [{<<"accept-encoding">>, <<"gzip">>}], #{}),
    ?assertEqual(integer_to_binary(byte_size(Gz)), h(<<"content-length">>, HH)),
    %% Asking for the .gz file itself: served as is, no coding.
    {200, H2, _} = get(Ctx, <<"/a.txt.gz">>, [{<<"accept-encoding">>, <<"gzip">>}]),
    ?assertEqual(undefined, h(<<"content-encoding">>, H2)),
    ?assertEqual(<<"application/gzip">>, h(<<"content-type">>, H2)).

precompressed_off(Ctx) ->
    {200, H, ?A_TXT} = get(Ctx, <<"/a.txt">>, [{<<"accept-encoding">>, <<"gzip">>}], #{precompressed => false}),
    ?assertEqual(undefined, h(<<"vary">>, H)).

init_root(Ctx) ->
    {ok, Opts} = ?ST:init(#{root => maps:get(root, Ctx)}),
    ?assert(is_binary(maps:get(real_root, Opts))),
    ?assertMatch({200, _, ?A_TXT}, ?R:run(?R:new(<<"GET">>, <<"/a.txt">>, []), {?ST, Opts})),
    ?assertMatch({error, {not_a_directory, _}}, ?ST:init(#{root => filename:join(maps:get(root, Ctx), "a.txt")})),
    ?assertMatch({error, {enoent, _}}, ?ST:init(#{root => filename:join(maps:get(root, Ctx), "none")})).

%% A root that does not exist (or is a link loop) is refused when the
%% handler is prepared, at the listener's start, with its absolute path; a
%% root that goes away later is 404 on each request.
missing_root(Ctx) ->
    None = filename:join(maps:get(base, Ctx), "none"),
    Loop = filename:join(maps:get(root, Ctx), "loop1"),
    ?assertEqual({error, {invalid_state, ?ST, {root, enoent, None}}},
                 falco_middleware:prepare_handler({?ST, #{root => None}})),
    ?assertMatch({error, {invalid_state, ?ST, {root, _, Loop}}},
                 falco_middleware:prepare_handler({?ST, #{root => Loop}})),
    Gone = fun(Root) -> fun(Req) -> ?ST:handle(Req, #{root => Root}) end end,
    ?assertMatch({404, _, _}, ?R:run(?R:new(<<"GET">>, <<"/a.txt">>, []), Gone(None))),
    ?assertMatch({404, _, _}, ?R:run(?R:new(<<"GET">>, <<"/a.txt">>, []), Gone(Loop))).
