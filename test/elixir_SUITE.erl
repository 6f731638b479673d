%% The Elixir guide's example (docs/guide/elixir.md), built and run as an
%% Elixir user would: the Mix project in docs/guide/elixir/hello/ (a
%% handler module, a router, a WebSocket handler, falco as a supervisor
%% child) is copied to the
%% case's directory and compiled with `mix compile', falco being a path
%% dependency on this checkout, offline: Mix builds falco with the rebar3
%% on the PATH (MIX_REBAR3) and needs no Hex. Then `mix run --no-halt'
%% serves it on a free port, and real HTTP requests check its answers:
%% a binding read by its name as a string, JSON with nil encoded as null,
%% JSON null decoded as nil, a WebSocket session of an Elixir module
%% echoing messages. The guide shows these very files: a case
%% checks each appears in it verbatim.
%%
%% Needs elixir and mix (Debian's `elixir' package; scripts/bootstrap
%% installs it for `make test'); without them the suite is skipped, or
%% fails under FALCO_REQUIRE_TOOLS=1 (falco_test_tools).
-module(elixir_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([suite/0, all/0, init_per_suite/1, end_per_suite/1]).
-export([guide_shows_the_files/1, mix_project_serves/1, guide_testing_line/1]).

-define(PROJECT, "docs/guide/elixir/hello").
-define(GUIDE, "docs/guide/elixir.md").
%% deadlines (ms): Mix compiles falco and the project; the app starts
-define(COMPILE_TIMEOUT, 180000).
-define(START_TIMEOUT, 60000).
-define(STOP_TIMEOUT, 20000).

suite() ->
    [{timetrap, {seconds, 300}}].

all() ->
    [guide_shows_the_files, mix_project_serves, guide_testing_line].

init_per_suite(Config) ->
    Mix = os:find_executable("mix"),
    case falco_test_tools:check(["elixir", {found, "mix", Mix}, "rebar3"]) of
        ok -> [{mix, Mix}, {root, root()} | Config];
        NotThere -> NotThere
    end.

end_per_suite(Config) ->
    Config.

%% The checkout: the directory above falco's lib dir that holds this
%% guide (rebar3 links _build/test/lib/falco's src to the checkout's).
root() ->
    Dir = falco_test_run:checkout(),
    true = filelib:is_regular(filename:join(Dir, ?GUIDE)),
    Dir.

%% -- cases -------------------------------------------------------------------

%% Each file of the project appears whole in the guide, so what the guide
%% shows is what the next case builds and runs.
guide_shows_the_files(Config) ->
    Root = ?config(root, Config),
    {ok, Guide} = file:read_file(filename:join(Root, ?GUIDE)),
    Files = files(filename:join(Root, ?PROJECT)),
    ?assertEqual(["lib/hello/application.ex", "lib/hello/echo_socket.ex",
                  "lib/hello/router.ex", "lib/hello/user_handler.ex", "mix.exs"],
                 lists:sort(Files)),
    [begin
         {ok, Text} = file:read_file(filename:join([Root, ?PROJECT, F])),
         ?assertNotEqual(nomatch, binary:match(Guide, Text), F)
     end || F <- Files],
    ok.

%% mix compile, mix run --no-halt, then requests over HTTP/1.1.
mix_project_serves(Config) ->
    Root = ?config(root, Config),
    Dir = filename:join(?config(priv_dir, Config), "hello"),
    [ok = copy(filename:join([Root, ?PROJECT, F]), filename:join(Dir, F))
     || F <- files(filename:join(Root, ?PROJECT))],
    Env = [{"FALCO_PATH", Root}, {"MIX_REBAR3", os:find_executable("rebar3")},
           {"MIX_HOME", filename:join(?config(priv_dir, Config), "mix_home")},
           {"HEX_OFFLINE", "1"}, {"MIX_ENV", "dev"}, {"PORT", "0"}],
    T0 = erlang:monotonic_time(millisecond),
    {0, Compiled} = falco_test_run:run(?config(mix, Config), ["compile"],
                                       #{cd => Dir, env => Env, timeout => ?COMPILE_TIMEOUT}),
    T1 = erlang:monotonic_time(millisecond),
    ct:log("mix compile (~b ms):~n~ts", [T1 - T0, Compiled]),
    Server = falco_test_run:start(?config(mix, Config),
                                  ["run", "--no-halt", "--no-compile", "--no-deps-check"],
                                  #{cd => Dir, env => Env}),
    try
        Port = falco_test_run:await(Server, fun listening/1, ?START_TIMEOUT),
        ct:log("the app is up after ~b ms, on port ~b",
               [erlang:monotonic_time(millisecond) - T1, Port]),
        requests(Port)
    after
        stop(Server)
    end,
    {comment, lists:flatten(io_lib:format("mix compile ~.1f s", [(T1 - T0) / 1000]))}.

%% The guide's Testing line, as written, run in the project the case
%% before compiled (mix run -e): :falco_testing answers 200 with user 1.
guide_testing_line(Config) ->
    {ok, Guide} = file:read_file(filename:join(?config(root, Config), ?GUIDE)),
    [_, AfterTesting] = binary:split(Guide, <<"## Testing">>),
    [_, Block | _] = binary:split(AfterTesting, [<<"```elixir\n">>, <<"```">>], [global]),
    ?assertNotEqual(nomatch, binary:match(Block, <<":falco_testing.request(">>)),
    Dir = filename:join(?config(priv_dir, Config), "hello"),
    Env = [{"FALCO_PATH", ?config(root, Config)}, {"MIX_REBAR3", os:find_executable("rebar3")},
           {"MIX_HOME", filename:join(?config(priv_dir, Config), "mix_home")},
           {"HEX_OFFLINE", "1"}, {"MIX_ENV", "dev"}, {"PORT", "0"}],
    Code = [Block, <<"IO.puts(\"status 200, \" <> body)\n">>],
    {Status, Out} = falco_test_run:run(?config(mix, Config),
                                       ["run", "--no-compile", "--no-deps-check", "-e",
                                        binary_to_list(iolist_to_binary(Code))],
                                       #{cd => Dir, env => Env, timeout => ?COMPILE_TIMEOUT}),
    ct:log("the guide's testing line (~p):~n~ts", [Status, Out]),
    0 = Status,
    ?assertNotEqual(nomatch, binary:match(Out, <<"status 200, ">>)),
    ?assertNotEqual(nomatch, binary:match(Out, <<"joe@example.com">>)).

requests(Port) ->
    Get = fun(Path) -> falco_test_http:fetch(http, Port, <<"GET">>, Path, [], <<>>) end,
    #{status := 200, body := <<"Hello from Elixir!\n">>} = Get(<<"/">>),
    %% the binding read by its name as a string; nil in the map is null
    #{status := 200, body := Joe} = Get(<<"/users/1">>),
    ?assertMatch({ok, #{<<"id">> := <<"1">>, <<"email">> := <<"joe@example.com">>}},
                 falco_json:decode(Joe)),
    #{status := 200, body := Other} = Get(<<"/users/2">>),
    ?assertNotEqual(nomatch, binary:match(Other, <<"\"email\":null">>)),
    ?assertMatch({ok, #{<<"id">> := <<"2">>, <<"email">> := null, <<"agent">> := null}},
                 falco_json:decode(Other)),
    %% JSON null decoded as nil on the Elixir side (is_nil), and sent back
    %% as null
    #{status := 200, body := Echo} =
        falco_test_http:fetch(http, Port, <<"POST">>, <<"/echo">>,
                              [{<<"content-type">>, <<"application/json">>}],
                              <<"{\"name\":null,\"tags\":[null,\"a\"]}">>),
    ?assertEqual({ok, #{<<"got">> => #{<<"name">> => null, <<"tags">> => [null, <<"a">>]},
                        <<"name_is_nil">> => true}}, falco_json:decode(Echo)),
    #{status := 200, body := Echo2} =
        falco_test_http:fetch(http, Port, <<"POST">>, <<"/echo">>, [], <<"{\"name\":\"x\"}">>),
    ?assertMatch({ok, #{<<"name_is_nil">> := false}}, falco_json:decode(Echo2)),
    #{status := 405} = falco_test_http:fetch(http, Port, <<"DELETE">>, <<"/">>, [], <<>>),
    websocket(Port).

%% Hello.EchoSocket: a 101, then each text message back numbered, a
%% binary one as it is; a GET without the handshake fields gets 426.
websocket(Port) ->
    {Sock, Resp} = falco_test_ws_client:connect(Port, <<"/ws">>),
    ct:log("handshake: ~p", [Resp]),
    ok = falco_test_ws_client:send(Sock, text, <<"hi">>),
    {text, <<"echo 1: hi">>} = falco_test_ws_client:recv(Sock),
    ok = falco_test_ws_client:send(Sock, text, <<"again">>),
    {text, <<"echo 2: again">>} = falco_test_ws_client:recv(Sock),
    ok = falco_test_ws_client:send(Sock, binary, <<1, 2, 3>>),
    {binary, <<1, 2, 3>>} = falco_test_ws_client:recv(Sock),
    #{status := 426} = falco_test_http:fetch(http, Port, <<"GET">>, <<"/ws">>, [], <<>>),
    ok.

%% -- helpers -----------------------------------------------------------------

files(Dir) ->
    filelib:fold_files(Dir, ".*", true,
                       fun(F, Acc) -> [relative(F, Dir) | Acc] end, []).

relative(File, Dir) ->
    lists:nthtail(length(Dir) + 1, File).

copy(From, To) ->
    ok = filelib:ensure_dir(To),
    {ok, _} = file:copy(From, To),
    ok.

%% The port the app printed it listens on, once it has.
listening(Output) ->
    case re:run(Output, "^hello: listening on http://127\\.0\\.0\\.1:([0-9]+)/\r?$",
                [multiline, {capture, all_but_first, binary}]) of
        {match, [Port]} -> {true, binary_to_integer(Port)};
        nomatch -> false
    end.

%% SIGTERM: the VM stops its applications and exits; SIGKILL if it has
%% not within the deadline.
stop(Server) ->
    case falco_test_run:stop(Server, ?STOP_TIMEOUT) of
        {killed, Out} ->
            ct:log("the app:~n~ts", [Out]),
            ct:fail(app_did_not_stop);
        {S, Out} ->
            ct:log("the app exited (~p):~n~ts", [S, Out])
    end.
