%% The module graph of falco has no cycle, and its folders are layers
%% (docs/internals/architecture.md, "Modules and layers"): a module calls
%% only modules of its own folder or of a folder below it in layers/0.
%% Checked on the compiled modules with xref, each module's folder read
%% from its compile info, so a call that points up, a module in a folder
%% the order does not name, or a call added in either direction between
%% two modules that already depend on each other fails here, naming them.
-module(falco_layers_tests).
-include_lib("eunit/include/eunit.hrl").

%% Bottom first. `src' is the public API at the top of src/ (falco,
%% falco_app, falco_sup). http2 is below http1 because an HTTP/1.1
%% connection may become HTTP/2 (h2c, falco_protocol), never the reverse.
layers() ->
    [tls, core, quic, ws, pipeline, helpers, app, http2, http3, http1, listener, src].

%% Calls up that a change under way removes (none is the rule).
pending() ->
    [].

no_module_cycle_test() ->
    with_xref(fun(X) ->
                      {ok, Components} = xref:q(X, "components ME"),
                      ?assertEqual([], [lists:sort(C) || C <- Components, length(C) > 1])
              end).

every_module_in_a_layer_test() ->
    ?assertEqual([], [{M, F} || M <- modules(), F <- [folder(M)],
                                not lists:member(F, layers())]).

no_call_points_up_test() ->
    with_xref(fun(X) ->
                      {ok, Edges} = xref:q(X, "ME"),
                      Up = [{{From, folder(From)}, {To, folder(To)}}
                            || {From, To} <- Edges, From =/= To,
                               lists:member(To, modules()),
                               rank(folder(From)) < rank(folder(To)),
                               not lists:member({From, To}, pending())],
                      ?assertEqual([], lists:usort(Up))
              end).

%% The checks above would pass on an empty graph: they must see falco,
%% every layer with its modules.
layers_are_populated_test() ->
    Folders = lists:usort([folder(M) || M <- modules()]),
    ?assertEqual(lists:sort(layers()), Folders).

with_xref(Fun) ->
    {ok, X} = xref:start([{xref_mode, modules}]),
    try
        ok = xref:set_default(X, [{warnings, false}, {verbose, false}]),
        {ok, Mods} = xref:add_directory(X, code:lib_dir(falco, ebin)),
        ?assert(length(Mods) > 40),
        Fun(X)
    after
        xref:stop(X)
    end.

modules() ->
    _ = application:load(falco),
    {ok, Mods} = application:get_key(falco, modules),
    Mods.

folder(M) ->
    {source, Source} = lists:keyfind(source, 1, M:module_info(compile)),
    list_to_atom(filename:basename(filename:dirname(Source))).

rank(Folder) ->
    length(lists:takewhile(fun(F) -> F =/= Folder end, layers())).
