%% Hot code upgrade of handlers (docs/guide/hot-upgrade.md): a handler
%% module compiled at run time serves version 1, version 2 is loaded with
%% code:load_binary/3, and the next request, on the same kept-alive
%% connection, shows which kind of handler runs which version: a module
%% handler and a `fun M:F/1' route run the new code; a local fun (a
%% `fun(Req) -> ... end' made by the old code) goes on running the old code,
%% and once that old code is purged, the route holding it fails with a 500
%% while the connection, and the other routes, go on.
-module(hot_upgrade_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1]).
-export([module_and_external_funs_upgrade/1]).

-define(C, falco_test_client).
-define(MOD, falco_hot_upgrade_h).

all() ->
    [module_and_external_funs_upgrade].

init_per_suite(Config) ->
    ok = falco_test_listener:start_app(),
    Config.

end_per_suite(Config) ->
    Config.

%% Version Vsn of the handler module: handle/2 (a module handler),
%% reply/1 (routed as `fun M:reply/1') and local/0, which returns a local
%% fun; each answers "<kind> v<Vsn>".
load(Vsn) ->
    Src = io_lib:format(
            "-module(~s).~n"
            "-export([handle/2, reply/1, local/0]).~n"
            "handle(Req, _State) ->~n"
            "    case falco_req:qs(Req) of~n"
            "        <<\"wait\">> -> receive never -> ok end;~n"
            "        _ -> ok~n"
            "    end,~n"
            "    {200, [], <<\"module v~b\">>}.~n"
            "reply(_Req) -> {200, [], <<\"external v~b\">>}.~n"
            "local() -> fun(_Req) -> {200, [], <<\"local v~b\">>} end.~n",
            [?MOD, Vsn, Vsn, Vsn]),
    Forms = forms(lists:flatten(Src)),
    {ok, ?MOD, Bin} = compile:forms(Forms, [nowarn_unused_vars]),
    {module, ?MOD} = code:load_binary(?MOD, "falco_hot_upgrade_h.erl", Bin),
    ok.

forms(Src) ->
    {ok, Tokens, _} = erl_scan:string(Src),
    split(Tokens, [], []).

split([], [], Acc) ->
    lists:reverse(Acc);
split([{dot, _} = Dot | Rest], Cur, Acc) ->
    {ok, Form} = erl_parse:parse_form(lists:reverse([Dot | Cur])),
    split(Rest, [], [Form | Acc]);
split([T | Rest], Cur, Acc) ->
    split(Rest, [T | Cur], Acc).

get(Sock, Path) ->
    ok = ?C:send(Sock, [<<"GET ">>, Path, <<" HTTP/1.1\r\nHost: example.com\r\n\r\n">>]),
    {ok, #{status := Status, body := Body}} = ?C:recv_response(Sock),
    {Status, Body}.

module_and_external_funs_upgrade(_Config) ->
    ok = load(1),
    Routes = [{<<"/module">>, ?MOD},
              {<<"/external">>, fun ?MOD:reply/1},
              {<<"/local">>, ?MOD:local()}],
    {_, Port} = falco_test_listener:start(hot, #{routes => Routes}),
    try
        Sock = ?C:connect(Port),
        ?assertEqual({200, <<"module v1">>}, get(Sock, <<"/module">>)),
        ?assertEqual({200, <<"external v1">>}, get(Sock, <<"/external">>)),
        ?assertEqual({200, <<"local v1">>}, get(Sock, <<"/local">>)),
        [Conn] = conns(),
        %% version 2: version 1 becomes the module's old code
        ok = load(2),
        ?assertEqual({200, <<"module v2">>}, get(Sock, <<"/module">>)),
        ?assertEqual({200, <<"external v2">>}, get(Sock, <<"/external">>)),
        %% the local fun was made by version 1 and runs version 1
        ?assertEqual({200, <<"local v1">>}, get(Sock, <<"/local">>)),
        %% on a new connection too: the fun is in the route table
        Sock2 = ?C:connect(Port),
        ?assertEqual({200, <<"local v1">>}, get(Sock2, <<"/local">>)),
        ?C:close(Sock2),
        %% Purging version 1 (which loading a version 3 needs first): no
        %% process was running it, so none is killed; the fun in the route
        %% table now points at code that is gone, and calling it raises
        %% badfun: that route answers 500 (and, as after any handler crash,
        %% closes its connection); the other routes run version 3.
        ok = capture(),
        %% (purge/1 says whether it killed a process)
        ?assertNot(code:purge(?MOD)),
        ok = load(3),
        ?assert(is_process_alive(Conn)),
        ?assertEqual({200, <<"module v3">>}, get(Sock, <<"/module">>)),
        ?assertEqual({200, <<"external v3">>}, get(Sock, <<"/external">>)),
        ?assertEqual({500, <<"Internal Server Error\n">>}, get(Sock, <<"/local">>)),
        %% the crash is reported after the 500 is sent: wait for it
        ?assertMatch(#{level := error}, await_error_log()),
        ?C:close(Sock),
        Sock3 = ?C:connect(Port),
        ?assertEqual({200, <<"external v3">>}, get(Sock3, <<"/external">>)),
        %% A request running code that is purged is killed with its
        %% connection: version 3's /module handler is in a receive when
        %% version 4 is loaded and version 3 purged.
        ok = ?C:send(Sock3, <<"GET /module?wait HTTP/1.1\r\nHost: example.com\r\n\r\n">>),
        ok = ?C:wait_until(fun() -> [C || C <- conns(), waiting(C)] =/= [] end, 5000),
        [Conn3] = [C || C <- conns(), waiting(C)],
        ok = load(4),
        ?assert(code:purge(?MOD)),
        ?assertMatch({error, _}, ?C:recv_response(Sock3)),
        ?assertNot(is_process_alive(Conn3)),
        Sock4 = ?C:connect(Port),
        ?assertEqual({200, <<"module v4">>}, get(Sock4, <<"/module">>)),
        ?C:close(Sock4)
    after
        _ = logger:remove_handler(hot_upgrade_log),
        ok = falco_test_listener:stop(hot),
        _ = code:purge(?MOD),
        _ = code:delete(?MOD),
        _ = code:purge(?MOD)
    end.

%% Conn is in the handler's receive (the version running then).
waiting(Conn) ->
    case process_info(Conn, current_function) of
        {current_function, {?MOD, handle, 2}} -> true;
        _ -> false
    end.

capture() ->
    falco_test_tree:capture_log(hot_upgrade_log, error).

await_error_log() ->
    receive {log, #{level := error} = E} -> E after 5000 -> error(no_error_log) end.

conns() ->
    [Sup] = [P || {{falco_listener, hot}, P, _, _} <- supervisor:which_children(falco_sup)],
    falco_test_tree:conns(Sup).
