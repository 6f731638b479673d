%% The module graph of falco has no cycle (docs/internals/architecture.md,
%% "Modules and layers"): checked on the compiled modules with xref, so a
%% call added in either direction between two modules that already depend
%% on each other fails here, with the modules named.
-module(falco_layers_tests).
-include_lib("eunit/include/eunit.hrl").

no_module_cycle_test() ->
    Ebin = code:lib_dir(falco, ebin),
    {ok, X} = xref:start([{xref_mode, modules}]),
    try
        ok = xref:set_default(X, [{warnings, false}, {verbose, false}]),
        {ok, Mods} = xref:add_directory(X, Ebin),
        ?assert(length(Mods) > 40),
        {ok, Components} = xref:q(X, "components ME"),
        ?assertEqual([], [lists:sort(C) || C <- Components, length(C) > 1])
    after
        xref:stop(X)
    end.
