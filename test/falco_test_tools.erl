%% The one check the Common Test suites make for the external programs
%% their black-box cases drive (curl, nghttp, h2load, h2spec, prlimit,
%% Python 3 and its modules). A missing tool skips what needs it, so a
%% developer without them can still run the rest; with
%% FALCO_REQUIRE_TOOLS=1 (as `make test' sets, after scripts/bootstrap
%% installed them all) it fails instead, so nothing is skipped silently.
%%
%% Tools are named as:
%%   "curl"                   an executable on the PATH;
%%   {file, "/usr/bin/python3"}   that file exists;
%%   {python3_module, "h2"}   /usr/bin/python3 exists and imports the module
%%                            (Debian's python3-* packages are seen by it);
%%   {python_module, Python, "aioquic"}   that Python (a venv's, say)
%%                            exists and imports the module;
%%   {found, "h2spec", Path | false}   a tool the suite looked for itself.
%%
%% find/1 looks for a program where scripts/bootstrap puts what it builds
%% or installs itself (_build/tools of the checkout), then on the PATH.
-module(falco_test_tools).

-include_lib("kernel/include/file.hrl").

-export([check/1, require/1, require/2, required/0, find/1]).

-type tool() :: string() | {file, string()} | {python3_module, string()}
              | {python_module, string(), string()}
              | {found, string(), string() | false}.
-export_type([tool/0]).

-define(PYTHON3, "/usr/bin/python3").

%% @doc ok when every tool is there; otherwise `{skip, Reason}', or
%% `{fail, Reason}' when tools are required (both are what CT's
%% init_per_suite/1, init_per_group/2 and init_per_testcase/2 may return).
-spec check([tool()]) -> ok | {skip, term()} | {fail, term()}.
check(Tools) ->
    case missing(Tools) of
        [] -> ok;
        Missing -> not_there(Missing)
    end.

%% @doc check/1 for an init function that has nothing else to do: Config
%% when every tool is there.
-spec require([tool()], list()) -> list() | {skip, term()} | {fail, term()}.
require(Tools, Config) ->
    case check(Tools) of
        ok -> Config;
        NotThere -> NotThere
    end.

%% @doc Inside a test case: ok when every tool is there; otherwise the case
%% is skipped, or fails when tools are required.
-spec require([tool()]) -> ok.
require(Tools) ->
    case check(Tools) of
        ok -> ok;
        {skip, Reason} -> throw({skip, Reason});
        {fail, Reason} -> ct:fail(Reason)
    end.

%% @doc Whether a missing tool is a failure (FALCO_REQUIRE_TOOLS=1).
-spec required() -> boolean().
required() ->
    os:getenv("FALCO_REQUIRE_TOOLS") =:= "1".

%% @doc The path of `Rel' under the checkout's _build/tools when that is an
%% executable file (`"h3load"', `"h3py/bin/python"'), else the first
%% executable of Rel's base name on the PATH, else false.
-spec find(string()) -> string() | false.
find(Rel) ->
    Path = filename:join([falco_test_run:checkout(), "_build", "tools", Rel]),
    case filelib:is_regular(Path) andalso is_executable(Path) of
        true -> Path;
        false -> os:find_executable(filename:basename(Rel))
    end.

is_executable(Path) ->
    case file:read_file_info(Path) of
        {ok, #file_info{mode = Mode}} -> Mode band 8#111 =/= 0;
        _ -> false
    end.

not_there(Missing) ->
    Reason = {missing_tools, Missing, "scripts/bootstrap installs them"},
    case required() of
        true -> {fail, Reason};
        false -> {skip, Reason}
    end.

missing(Tools) ->
    [name(T) || T <- Tools, not present(T)].

present({file, Path}) ->
    filelib:is_regular(Path);
present({python3_module, Module}) ->
    present({file, ?PYTHON3}) andalso
        falco_test_run:cmd(?PYTHON3 ++ " -c 'import " ++ Module ++ "; print(1)' 2>/dev/null",
                           30000) =:= "1\n";
present({python_module, Python, Module}) ->
    present({file, Python}) andalso
        falco_test_run:cmd("'" ++ Python ++ "' -c 'import " ++ Module ++ "; print(1)' 2>/dev/null",
                           30000) =:= "1\n";
present({found, _Name, Found}) ->
    Found =/= false;
present(Exe) ->
    os:find_executable(Exe) =/= false.

name({file, Path}) -> Path;
name({python3_module, Module}) -> "python3 module " ++ Module;
name({python_module, Python, Module}) -> Python ++ " module " ++ Module;
name({found, Name, _}) -> Name;
name(Exe) -> Exe.
