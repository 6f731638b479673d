%% EUnit tests for the application callback module and supervisor
%% (falco_app, falco_sup): the tree starts once, with its clock, the rate
%% limiter's tables and its listener registry, and stops cleanly.
-module(falco_app_tests).
-include_lib("eunit/include/eunit.hrl").

app_test() ->
    {ok, _} = application:ensure_all_started(falco),
    Sup = whereis(falco_sup),
    ?assert(is_pid(Sup)),
    %% The tree holds the clock and the rate limiter's tables, and the
    %% registry table exists.
    ?assertMatch([{falco_clock, _, worker, _}, {falco_rate_tables, _, worker, _}],
                 lists:sort(supervisor:which_children(falco_sup))),
    ?assertEqual(set, ets:info(falco_listeners, type)),
    %% A second start of the callback finds the registered supervisor.
    ?assertEqual({error, {already_started, Sup}}, falco_app:start(normal, [])),
    ?assertEqual(ok, falco_app:stop(undefined)),
    ok = application:stop(falco),
    ?assertEqual(undefined, whereis(falco_sup)),
    ?assertEqual(undefined, ets:info(falco_listeners)),
    {ok, _} = application:ensure_all_started(falco),
    ?assert(is_pid(whereis(falco_clock))).

%% falco depends on kernel and stdlib only: ssl (with crypto and
%% public_key) is started by the first TLS listener, so a node serving
%% plain HTTP does not hold it, and a release built without ssl gets
%% {error, {tls_unavailable, Reason, Fix}} from that listener's start rather than
%% failed handshakes (tls_SUITE:ssl_started_by_tls_listener).
app_dependencies_test() ->
    ok = case application:load(falco) of
             ok -> ok;
             {error, {already_loaded, falco}} -> ok
         end,
    {ok, Apps} = application:get_key(falco, applications),
    ?assertEqual([kernel, stdlib], Apps).

%% The persistent terms of the HTTP/1.1 codec and of the field grammar
%% are stored when the application starts, not on first use inside a connection; a restart leaves them as
%% they are (a replaced persistent term would force a global GC).
tables_at_start_test() ->
    {ok, _} = application:ensure_all_started(falco),
    Keys = [K || {K, _} <- falco_grammar:tables() ++ falco_http1:tables()],
    ?assertEqual([falco_grammar_field_stops, falco_http1_lf], Keys),
    Stored = [persistent_term:get(K) || K <- Keys],
    ok = application:stop(falco),
    {ok, _} = application:ensure_all_started(falco),
    %% the very same terms (no put replaced them)
    ?assert(lists:all(fun({K, V}) -> persistent_term:get(K) =:= V end,
                      lists:zip(Keys, Stored))).

%% Starting the application does not build the 0.53 MB Huffman decoding
%% table (falco_hpack_huffman_tests checks that the first decode does).
no_huffman_table_at_start_test() ->
    ok = application:stop(falco),
    _ = persistent_term:erase({falco_hpack_huffman, decode_table}),
    {ok, _} = application:ensure_all_started(falco),
    ?assertEqual(undefined, persistent_term:get({falco_hpack_huffman, decode_table}, undefined)).
