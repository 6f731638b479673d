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
%%   {found, "h2spec", Path | false}   a tool the suite looked for itself.
-module(falco_test_tools).

-export([check/1, require/1, require/2, required/0]).

-type tool() :: string() | {file, string()} | {python3_module, string()}
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
present({found, _Name, Found}) ->
    Found =/= false;
present(Exe) ->
    os:find_executable(Exe) =/= false.

name({file, Path}) -> Path;
name({python3_module, Module}) -> "python3 module " ++ Module;
name({found, Name, _}) -> Name;
name(Exe) -> Exe.
