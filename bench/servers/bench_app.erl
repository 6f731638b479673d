%% bench_app: loads a fixture's applications the way a release's boot
%% script does, before the fixture starts its server.
%%
%% In a release the boot script hands each application's specification to
%% application:load/1 as a term. An interactive node instead has the
%% application controller read the `.app' file itself when an application
%% is first loaded or started: it loads `epp' to read the file's encoding
%% (101 KB of code) and parses the file on its own heap, which then stays
%% grown for the node's life because the controller is idle afterwards
%% (41 -> 172-257 KB for falco's 2.3 KB `.app', 41 -> 53 KB for elli's
%% 0.8 KB one, 41 -> 192 KB for cowboy with cowlib and ranch). The bench
%% measures the BEAM's memory, so every server's BEAM loads its
%% applications here first: the file is read and parsed in a short-lived
%% process, the controller gets the term, and the fixture's own
%% application:ensure_all_started/1 or application:load/1 then finds them
%% loaded. Applications are loaded dependencies first; one whose `.app' is
%% not in the code path is left for the fixture to report.
-module(bench_app).

-export([load/1]).

-spec load([atom()]) -> ok.
load(Apps) ->
    lists:foreach(fun load_one/1, Apps).

load_one(App) ->
    Loaded = [A || {A, _, _} <- application:loaded_applications()],
    case lists:member(App, Loaded) of
        true ->
            ok;
        false ->
            case spec(App) of
                {application, App, Keys} = Spec ->
                    load(proplists:get_value(applications, Keys, [])
                         ++ proplists:get_value(included_applications, Keys, [])),
                    case application:load(Spec) of
                        ok -> ok;
                        {error, {already_loaded, App}} -> ok
                    end;
                none ->
                    ok
            end
    end.

%% Reads and parses App's `.app' in a process of its own, so that the
%% garbage goes with it.
spec(App) ->
    {Pid, Ref} = spawn_monitor(fun() -> exit({spec, read_spec(App)}) end),
    receive
        {'DOWN', Ref, process, Pid, {spec, Spec}} -> Spec;
        {'DOWN', Ref, process, Pid, _} -> none
    end.

read_spec(App) ->
    case code:where_is_file(atom_to_list(App) ++ ".app") of
        non_existing ->
            none;
        File ->
            {ok, Bin} = file:read_file(File),
            {ok, Tokens, _} = erl_scan:string(unicode:characters_to_list(Bin)),
            {ok, Spec} = erl_parse:parse_term(Tokens),
            Spec
    end.
