%% The README's dependency lines work as written (issue 41): a scratch
%% rebar3 project and a scratch Mix project are built from the README's
%% own code blocks, the placeholder address replaced by a bare clone of
%% this checkout (whose `main' is the commit under test), offline. The
%% rebar3 project is the README's hello app (its `port => 8080' made
%% `port => 0', the one other change), started with falco listed in its
%% `applications' and asked GET /hello/world; the Mix project compiles
%% falco with the rebar3 on the PATH (MIX_REBAR3) and starts a listener.
%%
%% A third case builds and boots docs/guide/releases.md's release.
%%
%% Needs git, rebar3, and elixir with mix for the second case (skipped
%% without them, failed under FALCO_REQUIRE_TOOLS=1, falco_test_tools).
-module(readme_deps_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([suite/0, all/0, init_per_suite/1, end_per_suite/1, init_per_testcase/2]).
-export([rebar3_project/1, mix_project/1, guide_release/1]).

-define(PLACEHOLDER, "https://github.com/OWNER/falco.git").
-define(BUILD_TIMEOUT, 240000).

suite() ->
    [{timetrap, {seconds, 600}}].

all() ->
    [rebar3_project, mix_project, guide_release].

init_per_suite(Config) ->
    case falco_test_tools:check(["git", "rebar3"]) of
        ok ->
            Root = falco_test_run:checkout(),
            {ok, Readme} = file:read_file(filename:join(Root, "README.md")),
            Bare = filename:join(?config(priv_dir, Config), "falco.git"),
            Git = os:find_executable("git"),
            {0, _} = falco_test_run:run(Git, ["clone", "--quiet", "--bare", Root, Bare],
                                        #{cd => Root, timeout => 60000}),
            %% `main' there is the commit checked out here, whatever branch
            %% or detached head this checkout is on
            {0, Head} = falco_test_run:run(Git, ["rev-parse", "HEAD"],
                                           #{cd => Root, timeout => 10000}),
            {0, _} = falco_test_run:run(Git, ["--git-dir", Bare, "branch", "-f", "main",
                                              string:trim(binary_to_list(Head))],
                                        #{cd => Root, timeout => 10000}),
            [{readme, Readme}, {url, "file://" ++ Bare}, {git, Git} | Config];
        NotThere ->
            NotThere
    end.

end_per_suite(Config) ->
    Config.

init_per_testcase(mix_project, Config) ->
    Mix = os:find_executable("mix"),
    case falco_test_tools:check(["elixir", {found, "mix", Mix}]) of
        ok -> [{mix, Mix} | Config];
        NotThere -> NotThere
    end;
init_per_testcase(_, Config) ->
    Config.

%% -- cases -------------------------------------------------------------------------

rebar3_project(Config) ->
    Readme = ?config(readme, Config),
    Deps = block(Readme, <<"erlang">>, <<"{deps, [{falco, {git,">>),
    Hello = block(Readme, <<"erlang">>, <<"-module(hello).">>),
    Dir = filename:join(?config(priv_dir, Config), "hello"),
    ok = write(filename:join(Dir, "rebar.config"), url(Deps, Config)),
    ok = write(filename:join([Dir, "src", "hello.app.src"]),
               <<"{application, hello, [{description, \"the README's hello app\"}, "
                 "{vsn, \"0.1.0\"}, {registered, []}, "
                 "{applications, [kernel, stdlib, falco]}, {env, []}]}.\n">>),
    ok = write(filename:join([Dir, "src", "hello.erl"]),
               binary:replace(Hello, <<"port => 8080">>, <<"port => 0">>)),
    %% (not REBAR_OFFLINE: it refuses git fetches too, local ones included)
    Env = [{"REBAR_CACHE_DIR", filename:join(?config(priv_dir, Config), "rebar3_cache")}],
    {Status, Out} = falco_test_run:run(os:find_executable("rebar3"), ["compile"],
                                       #{cd => Dir, env => Env, timeout => ?BUILD_TIMEOUT}),
    ct:log("rebar3 compile (~p):~n~ts", [Status, Out]),
    0 = Status,
    %% the app started as a release would start it: falco first, from its
    %% `applications'
    Eval = "{ok, _} = application:ensure_all_started(hello), {ok, _} = hello:start(), "
           "{ok, P} = falco:port(hello), {ok, _} = application:ensure_all_started(inets), "
           "{ok, {{_, S, _}, _, B}} = httpc:request(\"http://127.0.0.1:\" ++ "
           "integer_to_list(P) ++ \"/hello/world\"), io:format(\"~p ~s~n\", [S, B]), halt().",
    Ebins = filelib:wildcard(filename:join([Dir, "_build", "default", "lib", "*", "ebin"])),
    {0, Served} = falco_test_run:run(os:find_executable("erl"),
                                     ["-noshell" | lists:append([["-pa", E] || E <- Ebins])]
                                     ++ ["-eval", Eval],
                                     #{cd => Dir, env => [{"ERL_EPMD_ADDRESS", "127.0.0.1"}],
                                       timeout => 60000}),
    ct:log("the README's hello app: ~ts", [Served]),
    ?assertNotEqual(nomatch, binary:match(Served, <<"200 {\"hello\":\"world\"}">>)).

mix_project(Config) ->
    Deps = block(?config(readme, Config), <<"elixir">>, <<"defp deps do">>),
    Dir = filename:join(?config(priv_dir, Config), "scratch"),
    ok = write(filename:join(Dir, "mix.exs"),
               [<<"defmodule Scratch.MixProject do\n  use Mix.Project\n\n"
                  "  def project, do: [app: :scratch, version: \"0.1.0\", deps: deps()]\n\n"
                  "  def application, do: [extra_applications: [:logger]]\n\n">>,
                url(Deps, Config), <<"end\n">>]),
    Env = [{"MIX_REBAR3", os:find_executable("rebar3")},
           {"MIX_HOME", filename:join(?config(priv_dir, Config), "mix_home")},
           {"REBAR_CACHE_DIR", filename:join(?config(priv_dir, Config), "rebar3_cache")},
           {"HEX_OFFLINE", "1"}, {"MIX_ENV", "dev"}, {"ERL_EPMD_ADDRESS", "127.0.0.1"}],
    Mix = ?config(mix, Config),
    {S1, Got} = falco_test_run:run(Mix, ["deps.get"],
                                   #{cd => Dir, env => Env, timeout => ?BUILD_TIMEOUT}),
    ct:log("mix deps.get (~p):~n~ts", [S1, Got]),
    0 = S1,
    Run = "{:ok, _} = Application.ensure_all_started(:falco); "
          "{:ok, _} = :falco.start_listener(:scratch, %{port: 0, ip: {127, 0, 0, 1}, "
          "handler: fn _ -> {200, [], \"ok\"} end}); "
          "{:ok, port} = :falco.port(:scratch); IO.puts(\"listening #{port}\")",
    {S2, Ran} = falco_test_run:run(Mix, ["run", "-e", Run],
                                   #{cd => Dir, env => Env, timeout => ?BUILD_TIMEOUT}),
    ct:log("mix run (~p):~n~ts", [S2, Ran]),
    0 = S2,
    ?assertMatch({match, _}, re:run(Ran, <<"listening [0-9]+">>)).

%% docs/guide/releases.md as written: its .app.src, supervisor (the
%% listener put on 127.0.0.1), relx configuration and sys.config (the port
%% made a free one), with the two
%% files the guide names without showing (my_app_app, config/vm.args) and
%% my_app's priv/ (a test certificate, a static file); `rebar3 release',
%% then bin/my_app foreground serves the static file over TLS, and
%% bin/my_app stop stops it.
guide_release(Config) ->
    {ok, Guide} = file:read_file(filename:join(falco_test_run:checkout(),
                                               "docs/guide/releases.md")),
    Dir = filename:join(?config(priv_dir, Config), "my_app"),
    Port = free_port(),
    Deps = iolist_to_binary(["{deps, [{falco, {git, \"", ?config(url, Config),
                             "\", {branch, \"main\"}}}]}.\n"]),
    ok = write(filename:join(Dir, "rebar.config"),
               [Deps, block(Guide, <<"erlang">>, <<"{relx, [">>)]),
    ok = write(filename:join([Dir, "src", "my_app.app.src"]),
               block(Guide, <<"erlang">>, <<"{application, my_app,">>)),
    %% on loopback only, as every test server
    Sup = block(Guide, <<"erlang">>, <<"-module(my_app_sup).">>),
    Loopback = binary:replace(Sup, <<"#{port => Port,">>, <<"#{port => Port, ip => {127, 0, 0, 1},">>),
    ?assertNotEqual(Sup, Loopback),
    ok = write(filename:join([Dir, "src", "my_app_sup.erl"]), Loopback),
    ok = write(filename:join([Dir, "src", "my_app_app.erl"]),
               <<"-module(my_app_app).\n-behaviour(application).\n-export([start/2, stop/1]).\n"
                 "start(_Type, _Args) -> my_app_sup:start_link().\nstop(_State) -> ok.\n">>),
    SysConfig = block(Guide, <<"erlang">>, <<"[{my_app, [{https_port,">>),
    ok = write(filename:join([Dir, "config", "sys.config"]),
               binary:replace(SysConfig, <<"443">>, integer_to_binary(Port))),
    Node = "falco_guide_release_" ++ integer_to_list(erlang:unique_integer([positive])),
    ok = write(filename:join([Dir, "config", "vm.args"]),
               ["-sname ", Node, "\n-setcookie falco_guide\n"]),
    ok = write(filename:join([Dir, "priv", "www", "index.html"]), <<"<h1>released</h1>">>),
    Opts = falco_test_tls:server_opts(),
    {cert, Cert} = lists:keyfind(cert, 1, Opts),
    {key, {Type, Key}} = lists:keyfind(key, 1, Opts),
    ok = write(filename:join([Dir, "priv", "tls", "cert.pem"]),
               public_key:pem_encode([{'Certificate', Cert, not_encrypted}])),
    ok = write(filename:join([Dir, "priv", "tls", "key.pem"]),
               public_key:pem_encode([{Type, Key, not_encrypted}])),
    Env = [{"REBAR_CACHE_DIR", filename:join(?config(priv_dir, Config), "rebar3_cache")},
           {"ERL_EPMD_ADDRESS", "127.0.0.1"}],
    {S1, Built} = falco_test_run:run(os:find_executable("rebar3"), ["release"],
                                     #{cd => Dir, env => Env, timeout => ?BUILD_TIMEOUT}),
    ct:log("rebar3 release (~p):~n~ts", [S1, Built]),
    0 = S1,
    Bin = filename:join([Dir, "_build", "default", "rel", "my_app", "bin", "my_app"]),
    Release = falco_test_run:start(Bin, ["foreground"], #{cd => Dir, env => Env}),
    try
        ok = falco_test_client:wait_until(
               fun() -> case gen_tcp:connect({127, 0, 0, 1}, Port, [], 200) of
                            {ok, S} -> gen_tcp:close(S), true;
                            _ -> false
                        end
               end, 60000),
        {ok, _} = application:ensure_all_started(ssl),
        #{status := 200, body := <<"<h1>released</h1>">>} =
            falco_test_http:fetch(https, Port, <<"GET">>, <<"/static/index.html">>, [], <<>>)
    after
        {Stopped, Said} = falco_test_run:run(Bin, ["stop"],
                                             #{cd => Dir, env => Env, timeout => 30000}),
        ct:log("bin/my_app stop (~p): ~ts", [Stopped, Said]),
        {Exit, Out} = falco_test_run:wait_exit(Release, 20000),
        ct:log("the release exited (~p):~n~ts", [Exit, Out])
    end.

free_port() ->
    {ok, L} = gen_tcp:listen(0, [{ip, {127, 0, 0, 1}}]),
    {ok, Port} = inet:port(L),
    ok = gen_tcp:close(L),
    Port.

%% -- helpers -----------------------------------------------------------------------

%% The fenced code block of `Lang' in `Text' whose text contains `Marker'.
block(Text, Lang, Marker) ->
    Parts = binary:split(Text, <<"```">>, [global]),
    %% the odd parts are the blocks' insides: "erlang\n..."
    Blocks = [B || {I, B} <- lists:zip(lists:seq(1, length(Parts)), Parts), I rem 2 =:= 0],
    Prefix = <<Lang/binary, "\n">>,
    [Block] = [binary:part(B, byte_size(Prefix), byte_size(B) - byte_size(Prefix))
               || B <- Blocks, binary:longest_common_prefix([B, Prefix]) =:= byte_size(Prefix),
                  binary:match(B, Marker) =/= nomatch],
    Block.

%% The README's lines with the bare clone for the placeholder address.
url(Lines, Config) ->
    Replaced = binary:replace(Lines, <<?PLACEHOLDER>>, list_to_binary(?config(url, Config))),
    ?assertNotEqual(Lines, Replaced),
    Replaced.

write(File, Data) ->
    ok = filelib:ensure_dir(File),
    file:write_file(File, Data).
