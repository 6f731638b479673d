%% Every guide example is a test (issue 41): the ```erlang blocks of the
%% README and docs/guide/*.md are read from the markdown and checked by
%% their shape, one rule each, so an example that does not compile fails
%% `make test':
%%
%% - a block starting with `-module(...)' is compiled as a module;
%% - a block of terms only (`{deps, [...]}.', a sys.config, a response
%%   tuple) is parsed with erl_parse:parse_term/1;
%% - any other block is split into forms: function definitions are
%%   compiled in a generated module, and each run of expressions becomes
%%   a function whose parameters are its unbound variables (erl_lint's
%%   `unbound_var' errors on a first compile), so it must scan, parse and
%%   compile;
%% - in every compiled block, each remote call or `fun M:F/A' of a falco
%%   module must name a function that module exports;
%% - a block the suite cannot check (a fragment with `...', a shell
%%   transcript) says so in the markdown, in an HTML comment on the line
%%   before it: `<!-- guide: not compiled, a fragment -->'; the marked
%%   blocks are counted and logged, and a block neither checkable nor
%%   marked fails;
%% - `<!-- guide: part of Module -->' before a block appends its
%%   functions to the module block of that name in the same file.
%%
%% The other cases run the main example of each guide, as compiled from
%% the markdown, against a real listener or falco_testing, and check what
%% the guide's text says it returns.
-module(guide_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([suite/0, all/0, init_per_suite/1, end_per_suite/1, init_per_testcase/2,
         end_per_testcase/2]).
-export([every_block_checks/1, bad_blocks_fail/1, readme_hello/1, getting_started/1, handlers/1, routing/1,
         middleware/1, websocket/1, streaming/1, static_files/1, multipart/1,
         testing/1, releases/1]).
%% the logger handler that catches error reports during a run
-export([log/2]).

-define(NOT_COMPILED, "<!-- guide: not compiled, ").
-define(PART_OF, "<!-- guide: part of ").

suite() ->
    [{timetrap, {seconds, 120}}].

all() ->
    [every_block_checks, bad_blocks_fail, readme_hello, getting_started, handlers, routing, middleware,
     websocket, streaming, static_files, multipart, testing, releases].

init_per_suite(Config) ->
    ok = falco_test_listener:start_app(),
    Root = falco_test_run:checkout(),
    Files = ["README.md" | lists:sort(filelib:wildcard("docs/guide/*.md", Root))],
    [{root, Root}, {files, Files} | Config].

end_per_suite(Config) ->
    Config.

init_per_testcase(_, Config) ->
    Config.

end_per_testcase(_, Config) ->
    ok = falco_test_listener:ensure_stopped([hello, my_http, web, my_app_https]),
    Config.

%% -- the check of every block ------------------------------------------------

every_block_checks(Config) ->
    Root = ?config(root, Config),
    Blocks = [B || F <- ?config(files, Config), #{lang := "erlang"} = B <- blocks(Root, F)],
    Results = [{B, check(B, Blocks)} || B <- Blocks],
    Count = fun(Kind) -> length([R || {_, {K, _}} = R <- Results, K =:= Kind]) end,
    [ct:log("~ts:~b: not compiled, ~ts", [F, L, Why])
     || {#{file := F, line := L}, {marked, Why}} <- Results],
    [ct:log("~ts:~b: ~p", [F, L, W])
     || {#{file := F, line := L}, {_, #{warnings := Ws}}} <- Results, W <- Ws],
    Failed = [{F, L, Why} || {#{file := F, line := L}, {failed, Why}} <- Results],
    Summary = io_lib:format("~b blocks: ~b modules, ~b of functions and expressions, "
                            "~b of terms, ~b parts of a module, ~b marked not compiled",
                            [length(Blocks), Count(module), Count(generated), Count(terms),
                             Count(part), Count(marked)]),
    ct:log("~ts", [Summary]),
    case Failed of
        [] -> {comment, lists:flatten(Summary)};
        _ -> ct:fail({blocks_failed, Failed})
    end.

%% The checker itself: each block below must fail, for its reason (the
%% first is multipart.md's first example before it was made a module).
bad_blocks_fail(_Config) ->
    Bad = [{"handle(Req0, _State) ->\n"
            "    case falco_multipart:read_part(Req0, #{max_parts => 10}) of\n"
            "        {ok, Headers, Req1} -> ...;\n"
            "        {done, _Req} -> {200, [], <<\"no more parts\">>}\n"
            "    end.\n", parse},
           {"{ok, B, _} = falco_req:read_whole_body(Req).\n", no_such_falco_function},
           {"Routes = [{<<\"/ws\">>, fun(_) -> {200, [], <<>>} end}].\n", local_fun_in_route},
           {"h(Req) -> helper(Req).\n", compile},
           {"{ok, _, #{name => N}} = falco_router:match(R, <<\"GET\">>, H, P).\n", compile},
           {"-module(m).\n-export([f/0]).\nf() -> X.\n", compile}],
    [begin
         B = #{root => ".", file => "bad.md", line => 1, lang => "erlang", text => Text,
               mark => none},
         {failed, Why} = check(B, []),
         ct:log("~ts~n-> ~p", [Text, Why]),
         ?assertEqual(Reason, element(1, Why))
     end || {Text, Reason} <- Bad],
    ok.

check(#{mark := {not_compiled, Why}}, _) ->
    {marked, Why};
check(#{mark := {part_of, _}}, _) ->
    {part, #{warnings => []}};
check(B, Blocks) ->
    try compile_block(B, Blocks) of
        {Kind, #{} = Info} -> {Kind, Info}
    catch
        throw:{block, Why} -> {failed, Why}
    end.

%% -- runs of the main examples -----------------------------------------------

%% The README's hello app, on a free port: GET /hello/world.
readme_hello(Config) ->
    B = block(Config, "README.md", "-module(hello)."),
    load(B, [{"port => 8080", "port => 0"}]),
    {ok, _} = hello:start(),
    Port = falco_test_listener:port(hello),
    #{status := 200, body := <<"{\"hello\":\"world\"}">>} = get(Port, <<"/hello/world">>),
    #{status := 200, body := <<"Hello!\n">>} = get(Port, <<"/">>),
    #{status := 405} = fetch(Port, <<"POST">>, <<"/">>, <<>>).

%% The first module and the three lines that start, ask and stop its
%% listener, with the port made a free one; a request while it runs.
getting_started(Config) ->
    load(block(Config, "getting-started.md", "-module(my_handler)."), []),
    Port = free_port(),
    P = integer_to_list(Port),
    [Start, Ask, Stop] = forms(block(Config, "getting-started.md", "{ok, _Pid} = falco:start"),
                               [{"8080", P}]),
    Bs = eval(Start, []),
    _ = eval(Ask, Bs),
    #{status := 200, body := <<"Hello, world!\n">>} = get(Port, <<"/">>),
    _ = eval(Stop, Bs),
    {error, not_found} = falco:port(my_http).

%% handlers.md's first handler answers "hi".
handlers(Config) ->
    load(block(Config, "handlers.md", "-module(my_handler)."), []),
    {200, Headers, <<"hi">>} = falco_testing:request(my_handler, get, "/"),
    <<"text/plain">> = proplists:get_value(<<"content-type">>, Headers).

%% routing.md's route table, its handler modules stubbed: a binding, a
%% 405 with Allow, a host group.
routing(Config) ->
    [stub(M) || M <- [home_handler, users_handler, files_handler, items_handler]],
    load(block(Config, "routing.md", "-module(my_routes)."), []),
    Routes = my_routes:routes(),
    {200, _, <<"Hello, joe!">>} = falco_testing:request(Routes, get, "/hello/joe"),
    {405, H405, _} = falco_testing:request(Routes, post, "/hello/joe"),
    <<"GET, HEAD, OPTIONS">> = proplists:get_value(<<"allow">>, H405),
    {200, _, <<"users_handler">>} = falco_testing:request(Routes, put, "/users/7"),
    {200, _, <<"items_handler">>} =
        falco_testing:request(Routes, get, "/v1/items/1",
                              #{headers => [{"host", "api.example.com"}]}),
    {404, _, _} = falco_testing:request(Routes, get, "/v1/items/1").

%% middleware.md's two funs and its module: a 401 without a token, the
%% Server-Timing field, the module's field.
middleware(Config) ->
    Bs = eval_all(block(Config, "middleware.md", "Timing = fun(Req, Next)"), []),
    Timing = binding('Timing', Bs),
    Auth = binding('Auth', Bs),
    Ok = fun(_) -> {200, [], <<"ok">>} end,
    {401, H401, <<>>} = falco_testing:request(#{handler => Ok, middleware => [Timing, Auth]},
                                              get, "/"),
    <<"Bearer">> = proplists:get_value(<<"www-authenticate">>, H401),
    {200, HT, <<"ok">>} = falco_testing:request(#{handler => Ok, middleware => [Timing]},
                                                get, "/"),
    <<"app;dur=", _/binary>> = proplists:get_value(<<"server-timing">>, HT),
    load(block(Config, "middleware.md", "-module(my_mw)."), []),
    {200, HM, <<"ok">>} =
        falco_testing:request(#{handler => Ok,
                                middleware => [{my_mw, #{header => <<"x-checked">>}}]},
                              get, "/"),
    <<"yes">> = proplists:get_value(<<"x-checked">>, HM).

%% websocket.md's echo endpoint on a listener: a text message comes back.
websocket(Config) ->
    load(block(Config, "websocket.md", "-module(echo_ws)."), [{"port => 8080", "port => 0"}]),
    {ok, _} = echo_ws:start(),
    Port = falco_test_listener:port(my_http),
    {Sock, Resp} = falco_test_ws_client:connect(Port, <<"/ws">>),
    ct:log("handshake: ~p", [Resp]),
    ok = falco_test_ws_client:send(Sock, text, <<"hello">>),
    {text, <<"hello">>} = falco_test_ws_client:recv(Sock),
    #{status := 426} = get(Port, <<"/ws">>).

%% streaming.md's event stream and NDJSON stream; a client that takes only
%% the first event crashes nothing.
streaming(Config) ->
    Sse = load(block(Config, "streaming.md", "falco_sse:stream(fun(Emit)"), []),
    {200, _, [#{event := <<"hello">>, data := <<"hi">>}, #{data := <<"a">>}, #{data := <<"b">>}]} =
        no_error_logged(fun() -> falco_testing:sse(Sse, falco_testing:req(get, "/"), #{}) end),
    {200, _, [#{event := <<"hello">>}]} =
        no_error_logged(fun() ->
                                falco_testing:sse(Sse, falco_testing:req(get, "/"),
                                                  #{events => 1})
                        end),
    Nd = load(block(Config, "streaming.md", "falco_ndjson:stream(fun(Emit)"), []),
    {200, _, <<"{\"n\":1}\n\"two\"\nnull\n">>} = falco_testing:request(Nd, get, "/").

%% static-files.md's first example, my_app's priv/www made in the case's
%% directory: a file under /static/.
static_files(Config) ->
    App = filename:join(?config(priv_dir, Config), "my_app"),
    ok = filelib:ensure_dir(filename:join([App, "ebin", "x"])),
    ok = filelib:ensure_dir(filename:join([App, "priv", "www", "x"])),
    ok = file:write_file(filename:join([App, "priv", "www", "hi.txt"]), <<"hi there\n">>),
    true = code:add_patha(filename:join(App, "ebin")),
    try
        stub(my_app_home),
        _ = eval_all(block(Config, "static-files.md", "{falco_static, #{root => Www}}"),
                      [{"port => 8080", "port => 0"}]),
        Port = falco_test_listener:port(web),
        #{status := 200, body := <<"hi there\n">>, headers := H} = get(Port, <<"/static/hi.txt">>),
        <<"text/plain", _/binary>> = proplists:get_value(<<"content-type">>, H),
        #{status := 400} = get(Port, <<"/static/%2e%2e/x">>)
    after
        code:del_path(filename:join(App, "ebin"))
    end.

%% multipart.md's upload handler on a two-part form read in small pieces.
multipart(Config) ->
    load(block(Config, "multipart.md", "-module(my_upload)."), []),
    Body = <<"--XyZ\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nhello\r\n"
             "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n"
             "Content-Type: text/plain\r\n\r\n0123456789\r\n--XyZ--\r\n">>,
    {200, _, Sizes} =
        falco_testing:request(my_upload, post, "/upload",
                              #{headers => [{"content-type",
                                             "multipart/form-data; boundary=XyZ"}],
                                body => Body, piece => 7}),
    <<"title: 5 bytes\nfile: 10 bytes\n">> = iolist_to_binary(Sizes),
    {415, _, _} = falco_testing:request(my_upload, post, "/upload", #{body => <<"x">>}).

%% testing.md's application and its EUnit module, with the parts the
%% guide adds to it: every test passes, and nothing is logged.
testing(Config) ->
    load(block(Config, "testing.md", "-module(my_app)."), []),
    load(block(Config, "testing.md", "-module(my_app_tests)."), []),
    ok = no_error_logged(fun() -> eunit:test(my_app_tests, [verbose]) end).

%% releases.md's supervisor, with my_app's priv/ made in the case's
%% directory (a test certificate, a static file): a file over TLS; its
%% .app.src lists ssl.
releases(Config) ->
    App = block(Config, "releases.md", "{application, my_app,"),
    {match, _} = re:run(maps:get(text, App), "\\{applications, \\[[^]]*\\bssl\\b"),
    load(block(Config, "releases.md", "-module(my_app_sup)."), []),
    Dir = filename:join(?config(priv_dir, Config), "my_app"),
    [ok = filelib:ensure_dir(filename:join([Dir, D, "x"])) || D <- ["ebin", "priv/www", "priv/tls"]],
    ok = file:write_file(filename:join([Dir, "priv", "www", "index.html"]), <<"<h1>hi</h1>">>),
    Opts = falco_test_tls:server_opts(),
    {cert, Cert} = lists:keyfind(cert, 1, Opts),
    {key, {Type, Key}} = lists:keyfind(key, 1, Opts),
    ok = file:write_file(filename:join([Dir, "priv", "tls", "cert.pem"]),
                         public_key:pem_encode([{'Certificate', Cert, not_encrypted}])),
    ok = file:write_file(filename:join([Dir, "priv", "tls", "key.pem"]),
                         public_key:pem_encode([{Type, Key, not_encrypted}])),
    true = code:add_patha(filename:join(Dir, "ebin")),
    ok = application:set_env(my_app, https_port, 0),
    try
        {ok, Sup} = my_app_sup:start_link(),
        unlink(Sup),
        Port = falco_test_listener:port(my_app_https),
        #{status := 200, body := <<"<h1>hi</h1>">>} =
            falco_test_http:fetch(https, Port, <<"GET">>, <<"/static/index.html">>, [], <<>>),
        exit(Sup, shutdown)
    after
        code:del_path(filename:join(Dir, "ebin")),
        application:unset_env(my_app, https_port)
    end.

%% -- markdown ----------------------------------------------------------------

%% The fenced blocks of a markdown file: #{file, line, lang, text, mark}.
blocks(Root, File) ->
    {ok, Bin} = file:read_file(filename:join(Root, File)),
    Lines = string:split(unicode:characters_to_list(Bin), "\n", all),
    fences(lists:zip(lists:seq(1, length(Lines)), Lines), {Root, File}, none, []).

fences([], _File, _Prev, Acc) ->
    lists:reverse(Acc);
fences([{N, Line} | Rest], {Root, File} = RF, Prev, Acc) ->
    case string:trim(Line, leading) of
        "```" ++ Lang ->
            Indent = length(Line) - length(string:trim(Line, leading)),
            {Body, After} = lists:splitwith(fun({_, L}) ->
                                                    string:trim(L, leading) =/= "```"
                                            end, Rest),
            Text = lists:append([strip(L, Indent) ++ "\n" || {_, L} <- Body]),
            B = #{root => Root, file => File, line => N + 1, lang => string:trim(Lang), text => Text,
                  mark => mark(Prev)},
            fences(tl(After), RF, none, [B | Acc]);
        "" ->
            fences(Rest, RF, Prev, Acc);
        Trimmed ->
            fences(Rest, RF, Trimmed, Acc)
    end.

strip(Line, Indent) ->
    case lists:split(min(Indent, length(Line)), Line) of
        {Spaces, Text} -> case string:trim(Spaces) of "" -> Text; _ -> Line end
    end.

mark(?NOT_COMPILED ++ Rest) -> {not_compiled, string:trim(Rest, trailing, " ->")};
mark(?PART_OF ++ Rest) -> {part_of, list_to_atom(string:trim(Rest, trailing, " ->"))};
mark(_) -> none.

%% The erlang block of `File' that contains `Marker'.
block(Config, File, Marker) ->
    Path = case File of "README.md" -> File; _ -> "docs/guide/" ++ File end,
    case [B || #{lang := "erlang", text := T} = B <- blocks(?config(root, Config), Path),
               string:find(T, Marker) =/= nomatch] of
        [B] -> B;
        Other -> ct:fail({no_single_block, Path, Marker, length(Other)})
    end.

%% -- compiling a block -------------------------------------------------------

compile_block(#{lang := "erlang"} = B, Blocks) ->
    Forms = parse(B),
    case Forms of
        [{attribute, _, module, Mod} | _] ->
            compile_forms(B, Mod, Forms ++ parts(B, Mod, Blocks), module);
        _ ->
            case lists:all(fun is_term/1, Forms) of
                true -> {terms, #{warnings => []}};
                false -> generated(B, Forms)
            end
    end;
compile_block(#{lang := Lang}, _) ->
    throw({block, {not_an_erlang_block, Lang}}).

%% The forms of a block: {attribute, ...}, {function, ...} or
%% {exprs, Line, Exprs, Tokens}. A last form without its full stop gets one.
parse(#{line := Line, text := Text} = B) ->
    Toks = case erl_scan:string(Text, Line) of
               {ok, T, _} -> T;
               {error, E, _} -> throw({block, {scan, E}})
           end,
    Mod = module_name(B),
    Subst = macros(Toks, Mod),
    [form(F) || F <- split_dots(Subst, [], [])].

macros([{'?', _}, {var, L, 'MODULE'} | T], Mod) -> [{atom, L, Mod} | macros(T, Mod)];
macros([{'?', _}, {_, L, Name} | _], _) -> throw({block, {macro, L, Name}});
macros([Tok | T], Mod) -> [Tok | macros(T, Mod)];
macros([], _) -> [].

split_dots([], [], Acc) -> lists:reverse(Acc);
split_dots([], Cur, Acc) -> split_dots([{dot, element(2, hd(Cur))}], Cur, Acc);
split_dots([{dot, _} = D | T], Cur, Acc) -> split_dots(T, [], [lists:reverse([D | Cur]) | Acc]);
split_dots([Tok | T], Cur, Acc) -> split_dots(T, [Tok | Cur], Acc).

form(Toks) ->
    case erl_parse:parse_form(Toks) of
        {ok, {attribute, _, include_lib, _}} -> {include, Toks};
        {ok, {attribute, _, include, _}} -> {include, Toks};
        {ok, F} -> F;
        {error, _} = FormErr ->
            case erl_parse:parse_exprs(Toks) of
                {ok, Es} -> {exprs, erl_anno:line(element(2, hd(Toks))), Es, Toks};
                {error, ExprErr} ->
                    {L, M, E} = case Toks of
                                    [{atom, _, _}, {'(', _} | _] -> element(2, FormErr);
                                    _ -> ExprErr
                                end,
                    throw({block, {parse, L, lists:flatten(M:format_error(E))}})
            end
    end.

is_term({exprs, _, Es, _}) ->
    lists:all(fun(E) ->
                      try erl_parse:normalise(E) of _ -> true catch _:_ -> false end
              end, Es);
is_term(_) ->
    false.

%% The module name of a generated module: the file and the line.
module_name(#{file := File, line := Line, text := Text}) ->
    case re:run(Text, "^-module\\(([a-z_0-9]+)\\)", [{capture, all_but_first, list}]) of
        {match, [M]} -> list_to_atom(M);
        nomatch ->
            list_to_atom("guide_" ++ re:replace(filename:basename(File, ".md"), "[^a-z]", "_",
                                                [global, {return, list}])
                         ++ "_" ++ integer_to_list(Line))
    end.

%% Functions of other blocks marked `part of Mod', in the same file.
parts(#{file := File}, Mod, Blocks) ->
    lists:append([[F || F <- parse(B), element(1, F) =:= function]
                  || #{file := F0, mark := {part_of, M}} = B <- Blocks, F0 =:= File, M =:= Mod]).

%% Functions as they are, expressions as functions of their unbound
%% variables.
generated(B, Forms) ->
    Mod = module_name(B),
    Head = [{attribute, 1, module, Mod}, {attribute, 1, compile, [export_all, nowarn_export_all]}],
    {Fs, _} = lists:mapfoldl(fun({exprs, L, Es, _}, N) ->
                                     {{function, L, expr_name(N), 0, [{clause, L, [], [], Es}]},
                                      N + 1};
                                (F, N) -> {F, N}
                             end, 0, Forms),
    Unbound = case compile:forms(Head ++ Fs, [return_errors, binary, strong_validation]) of
                  {ok, _} -> [];
                  {error, Errors, _} ->
                      [{L, V} || {_, Es} <- Errors, {Loc, erl_lint, {unbound_var, V}} <- Es,
                                 L <- [erl_anno:line(Loc)]]
              end,
    Fs2 = [params(F, Unbound) || F <- Fs],
    compile_forms(B, Mod, Head ++ Fs2, generated).

expr_name(N) -> list_to_atom("expr_" ++ integer_to_list(N)).

%% An expression function takes the variables unbound in its lines.
params({function, L, Name, 0, [{clause, L, [], [], Es}]} = F, Unbound) ->
    case atom_to_list(Name) of
        "expr_" ++ _ ->
            Last = last_line(Es),
            Vs = lists:usort([V || {VL, V} <- Unbound, VL >= L, VL =< Last]),
            {function, L, Name, length(Vs), [{clause, L, [{var, L, V} || V <- Vs], [], Es}]};
        _ -> F
    end;
params(F, _) ->
    F.

last_line(Term) ->
    lists:max([0 | [erl_anno:line(A) || A <- annos(Term)]]).

annos(T) when is_tuple(T), tuple_size(T) >= 2 ->
    A = element(2, T),
    Own = case erl_anno:is_anno(A) of true -> [A]; false -> [] end,
    Own ++ lists:append([annos(E) || E <- tl(tl(tuple_to_list(T)))]);
annos(L) when is_list(L) -> lists:append([annos(E) || E <- L]);
annos(_) -> [].

compile_forms(#{file := File} = B, Mod, Forms0, Kind) ->
    Forms = includes(B, Forms0),
    FileAttr = {attribute, 1, file, {File, 1}},
    case compile:forms([FileAttr | Forms], [return_errors, return_warnings, binary,
                                            strong_validation, nowarn_unused_function]) of
        {ok, Mod, Ws} ->
            case {[C || C <- remote_calls(Forms), not exported(C)], local_fun_routes(Forms)} of
                {[], []} -> {Kind, #{module => Mod, forms => Forms, warnings => Ws}};
                {[], Lines} -> throw({block, {local_fun_in_route, Lines}});
                {Missing, _} -> throw({block, {no_such_falco_function, Missing}})
            end;
        {ok, _, _, Ws} ->
            {Kind, #{module => Mod, forms => Forms, warnings => Ws}};
        {error, Errors, _} ->
            throw({block, {compile, [{erl_anno:line(L), lists:flatten(M:format_error(E))}
                                     || {_, Es} <- Errors, {L, M, E} <- Es]}})
    end.

%% -include_lib forms go through epp: the block is preprocessed as a file.
includes(B, Forms) ->
    case [I || {include, _} = I <- Forms] of
        [] -> Forms;
        _ ->
            Dir = filename:join(filename:basedir(user_cache, "falco_guide"), "x"),
            ok = filelib:ensure_dir(Dir),
            Tmp = filename:join(filename:dirname(Dir),
                                atom_to_list(module_name(B)) ++ ".erl"),
            ok = file:write_file(Tmp, maps:get(text, B)),
            {ok, Pp} = epp:parse_file(Tmp, []),
            ok = file:delete(Tmp),
            Funs = [F || F <- Forms, element(1, F) =:= function],
            Own = [F || F <- Pp, element(1, F) =:= function],
            OwnNames = [{N, A} || {function, _, N, A, _} <- Own],
            [F || F <- Pp, element(1, F) =/= eof]
                ++ [F || {function, _, N, A, _} = F <- Funs, not lists:member({N, A}, OwnNames)]
    end.

%% The lines of the routes, `{<<"/path">>, Fun ...}', whose handler is a
%% local fun (`fun(Req) -> ... end', `fun f/1'): a hot upgrade never
%% reaches it (hot-upgrade.md), so no example shows one.
local_fun_routes({tuple, L, [{bin, _, [{bin_element, _, {string, _, "/" ++ _}, _, _}]},
                             {'fun', _, Local} | _]} = T)
  when element(1, Local) =:= clauses; tuple_size(Local) =:= 3 ->
    [erl_anno:line(L) | local_fun_routes(tuple_to_list(T))];
local_fun_routes(T) when is_tuple(T) -> local_fun_routes(tuple_to_list(T));
local_fun_routes(L) when is_list(L) -> lists:append([local_fun_routes(E) || E <- L]);
local_fun_routes(_) -> [].

%% {M, F, Arity} of every call to a falco module.
remote_calls({call, _, {remote, _, {atom, _, M}, {atom, _, F}}, As} = C) ->
    falco_call(M, F, length(As)) ++ remote_calls(tuple_to_list(C));
remote_calls({'fun', _, {function, {atom, _, M}, {atom, _, F}, {integer, _, A}}}) ->
    falco_call(M, F, A);
remote_calls(T) when is_tuple(T) -> remote_calls(tuple_to_list(T));
remote_calls(L) when is_list(L) -> lists:append([remote_calls(E) || E <- L]);
remote_calls(_) -> [].

falco_call(M, F, A) ->
    case atom_to_list(M) of
        "falco" ++ _ -> [{M, F, A}];
        _ -> []
    end.

exported({M, F, A}) ->
    _ = code:ensure_loaded(M),
    erlang:function_exported(M, F, A).

%% -- running -----------------------------------------------------------------

%% Compiles a block (its text edited by `Subst', pairs of strings) and
%% loads it; returns the module's name.
load(B, Subst) ->
    B2 = B#{text := subst(maps:get(text, B), Subst)},
    #{root := Root, file := File} = B,
    {_, #{module := Mod, forms := Forms}} = compile_block(B2, blocks(Root, File)),
    {ok, Mod, Bin} = compile:forms(Forms, [binary]),
    _ = code:purge(Mod),
    {module, Mod} = code:load_binary(Mod, atom_to_list(Mod) ++ ".erl", Bin),
    Mod.

subst(Text, Subst) ->
    lists:foldl(fun({From, To}, T) -> lists:flatten(string:replace(T, From, To, all)) end,
                Text, Subst).

%% The expression forms of a block, each a list of expressions.
forms(B, Subst) ->
    [Es || {exprs, _, Es, _} <- parse(B#{text := lists:flatten(subst(maps:get(text, B),
                                                                        Subst))})].

eval(Es, Bs) ->
    {value, _, Bs2} = erl_eval:exprs(Es, Bs),
    Bs2.

eval_all(B, Subst) ->
    lists:foldl(fun eval/2, erl_eval:new_bindings(), forms(B, Subst)).

binding(Name, Bs) ->
    {value, V} = erl_eval:binding(Name, Bs),
    V.

%% A module whose handle/2 answers its name.
stub(Mod) ->
    Forms = [{attribute, 1, module, Mod}, {attribute, 1, export, [{handle, 2}]},
             {function, 1, handle, 2,
              [{clause, 1, [{var, 1, '_'}, {var, 1, '_'}], [],
                [{tuple, 1, [{integer, 1, 200}, {nil, 1},
                             {bin, 1, [{bin_element, 1, {string, 1, atom_to_list(Mod)},
                                        default, default}]}]}]}]}],
    {ok, Mod, Bin} = compile:forms(Forms, [binary]),
    {module, Mod} = code:load_binary(Mod, atom_to_list(Mod) ++ ".erl", Bin),
    Mod.

free_port() ->
    {ok, S} = gen_tcp:listen(0, [{ip, {127, 0, 0, 1}}]),
    {ok, Port} = inet:port(S),
    ok = gen_tcp:close(S),
    Port.

get(Port, Path) ->
    fetch(Port, <<"GET">>, Path, <<>>).

fetch(Port, Method, Path, Body) ->
    falco_test_http:fetch(http, Port, Method, Path, [], Body).

%% Runs `Fun' with a logger handler that keeps error events; fails if
%% any came.
no_error_logged(Fun) ->
    Id = guide_suite_errors,
    ok = logger:add_handler(Id, ?MODULE, #{level => error, config => #{pid => self()}}),
    try
        Result = Fun(),
        timer:sleep(300),
        receive
            {?MODULE, Event} -> ct:fail({logged, Event})
        after 0 -> Result
        end
    after
        ok = logger:remove_handler(Id)
    end.

%% logger handler callback
log(#{msg := Msg, level := Level}, #{config := #{pid := Pid}}) ->
    Pid ! {?MODULE, {Level, Msg}}.
