%% h2spec (github.com/summerwind/h2spec) in strict mode against falco, over
%% h2c (prior knowledge) and over TLS (ALPN h2). A case fails listing the
%% h2spec cases that failed. scripts/bootstrap installs h2spec into
%% _build/tools; without it these cases are skipped, unless
%% FALCO_REQUIRE_TOOLS=1 (as `make test' sets) makes that a failure
%% (falco_test_tools).
-module(h2spec_SUITE).

-include_lib("common_test/include/ct.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1]).
-export([h2c_strict/1, tls_strict/1, h2c_on_dual_listener/1]).

all() ->
    [h2c_strict, tls_strict, h2c_on_dual_listener].

init_per_suite(Config) ->
    H2spec = find_h2spec(),
    case falco_test_tools:check([{found, "h2spec", H2spec}]) of
        ok ->
            ok = falco_test_listener:start_tls_app(),
            H = fun handle/1,
            _ = falco_test_listener:start(h2spec_h2c, H, #{protocols => [h2]}),
            _ = falco_test_listener:start(h2spec_tls, H, falco_test_listener:tls(#{})),
            _ = falco_test_listener:start(h2spec_dual, H, #{}),
            [{h2spec, H2spec} | Config];
        NotThere ->
            NotThere
    end.

end_per_suite(Config) ->
    ok = falco_test_listener:ensure_stopped([h2spec_h2c, h2spec_tls, h2spec_dual]),
    Config.

%% h2spec needs a response with a body (its flow-control cases wait for
%% DATA frames).
handle(_Req) ->
    {200, [{<<"content-type">>, <<"text/plain">>}], <<"h2spec says hello\n">>}.

find_h2spec() ->
    Root = filename:absname(filename:join([code:lib_dir(falco), "..", "..", "..", ".."])),
    Candidates = [filename:join([Root, "_build", "tools", "h2spec"]),
                  filename:join([os:getenv("GOBIN", ""), "h2spec"]),
                  filename:join([os:getenv("HOME", ""), "go", "bin", "h2spec"])],
    case [F || F <- Candidates, filelib:is_regular(F)] of
        [F | _] -> F;
        [] -> case os:find_executable("h2spec") of
                  false -> false;
                  F -> F
              end
    end.

h2c_strict(Config) ->
    Port = falco_test_listener:port(h2spec_h2c),
    expect_failures([], run(Config, Port, [])).

tls_strict(Config) ->
    Port = falco_test_listener:port(h2spec_tls),
    expect_failures([], run(Config, Port, ["-t", "-k"])).

%% A cleartext listener that also serves HTTP/1.1 answers bytes that are
%% neither an HTTP/2 preface nor a valid request line with HTTP/1.1's 400
%% (falco_protocol's decision table); h2spec's "invalid connection preface"
%% case wants a silent close, so it is the one expected failure there.
h2c_on_dual_listener(Config) ->
    Port = falco_test_listener:port(h2spec_dual),
    expect_failures(["2: Sends invalid connection preface"], run(Config, Port, [])).

run(Config, Port, Extra) ->
    Args = ["--strict", "-h", "127.0.0.1", "-p", integer_to_list(Port), "-o", "5" | Extra],
    {_Status, Output} = falco_test_run:run(?config(h2spec, Config), Args, #{timeout => 300000}),
    ct:log("~ts", [Output]),
    Output.

%% The "Failures:" section lists each failed case on a line with "×".
expect_failures(Expected, Output) ->
    {match, [Total, Passed, Failed]} =
        re:run(Output, "([0-9]+) tests, ([0-9]+) passed, [0-9]+ skipped, ([0-9]+) failed",
               [{capture, all_but_first, list}]),
    Failures = case binary:split(Output, <<"Failures:">>) of
                   [_, Section] ->
                       [string:trim(L) || L <- string:split(unicode:characters_to_list(Section),
                                                            "\n", all),
                                          string:find(L, "×") =/= nomatch];
                   [_] ->
                       []
               end,
    Names = [string:trim(tl(L)) || L <- Failures],
    ct:pal("h2spec: ~s/~s passed, ~s failed~n~p", [Passed, Total, Failed, Names]),
    case lists:sort(Names) =:= lists:sort(Expected) of
        true -> ok;
        false -> ct:fail({h2spec_failures, Names})
    end.
