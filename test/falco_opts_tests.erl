%% EUnit tests for listener options (falco_opts) and the error-reason to
%% status mapping (falco_errors): every option's default and bounds, the
%% errors a user sees for a typo or a bad value, and the status of every
%% reason a codec or the connection can report (RFC 9110 §15.5, §15.6).
-module(falco_opts_tests).
-include_lib("eunit/include/eunit.hrl").

%% a handler module, for handler_forms_test
-export([handle/2]).

h(_Req) -> {200, [], <<>>}.

valid(Opts) -> falco_config:validate(Opts#{handler => fun h/1}).

defaults_test() ->
    D = falco_opts:defaults(),
    ?assertNot(maps:is_key(handler, D)),
    ?assertMatch(#{port := 8080, ip := {0, 0, 0, 0}, num_acceptors := 10, max_connections := 16384,
                   backlog := 1024, nodelay := true, send_timeout := 30000, idle_timeout := 60000,
                   request_timeout := 10000, body_timeout := 30000,
                   max_keep_alive_requests := 1000, max_request_line := 8192,
                   max_header_line := 8192, max_header_block := 16384, max_header_count := 100,
                   max_body := 10485760}, D).

%% The validated configuration has every default, the user's values, and
%% the parser limits gathered in one map.
full_config_test() ->
    {ok, C} = valid(#{port => 0, max_header_count => 7}),
    ?assertMatch(#{port := 0, max_header_count := 7, max_body := 10485760}, C),
    ?assertEqual(#{max_request_line => 8192, max_header_line => 8192, max_header_block => 16384,
                   max_header_count => 7, max_empty_lines => 8}, maps:get(limits, C)),
    ?assertEqual(maps:get(limits, C), maps:merge(falco_http1:default_limits(), maps:get(limits, C))).

handler_forms_test() ->
    ?assertMatch({ok, _}, falco_config:validate(#{handler => ?MODULE})),
    ?assertMatch({ok, _}, falco_config:validate(#{handler => {?MODULE, #{state => 1}}})),
    ?assertMatch({ok, _}, falco_config:validate(#{handler => fun h/1})),
    ?assertEqual({error, {invalid_option, handler, fun falco_opts:defaults/0}},
                 falco_config:validate(#{handler => fun falco_opts:defaults/0})),
    ?assertEqual({error, {invalid_option, handler, "mod"}}, falco_config:validate(#{handler => "mod"})),
    ?assertEqual({error, {invalid_option, handler, {"m", s}}}, falco_config:validate(#{handler => {"m", s}})).

errors_test() ->
    ?assertEqual({error, {missing_option, handler}}, falco_config:validate(#{port => 0})),
    ?assertEqual({error, {unknown_option, prot}}, valid(#{prot => 80})),
    ?assertEqual({error, {options_not_a_map, [{port, 80}]}}, falco_config:validate([{port, 80}])).

accepted_values_test_() ->
    [?_assertMatch({ok, #{K := V}}, valid(#{K => V}))
     || {K, V} <- [{port, 0}, {port, 65535}, {ip, {127, 0, 0, 1}}, {ip, {0, 0, 0, 0, 0, 0, 0, 1}},
                   {nodelay, false}, {max_connections, infinity}, {max_connections, 1},
                   {max_keep_alive_requests, infinity}, {send_timeout, 0},
                   {idle_timeout, infinity}, {request_timeout, 1}, {body_timeout, infinity},
                   {max_header_count, 0}, {max_body, 0}, {num_acceptors, 1}, {backlog, 1},
                   {max_request_line, 1}, {max_header_line, 1}, {max_header_block, 1},
                   {h2_send_min_rate, 0}, {h2_send_min_rate, 100000}, {h2_send_buffer, 1024},
                   {min_body_rate, none}, {min_body_rate, #{grace => 0, bytes_per_second => 1}},
                   {h2_max_receive_buffer, 1}, {h2_flood_limits, #{frames => 0}},
                   {h2_enable_connect_protocol, false}, {reuseport, true}, {reuseport, false},
                   {drain_notice, 0}, {drain_notice, 5000}]].

rejected_values_test_() ->
    [?_assertEqual({error, {invalid_option, K, V}}, valid(#{K => V}))
     || {K, V} <- [{port, -1}, {port, 65536}, {port, "80"}, {ip, "127.0.0.1"}, {ip, {127, 0, 0}},
                   {ip, {300, 0, 0, 1}}, {ip, {a, b, c, d}}, {nodelay, 1},
                   {max_connections, 0}, {max_keep_alive_requests, -1}, {send_timeout, -1},
                   {idle_timeout, 1.5}, {request_timeout, forever}, {max_header_count, -1},
                   {max_body, -1}, {num_acceptors, 0}, {backlog, 0}, {max_request_line, 0},
                   {max_header_line, infinity}, {max_header_block, 0},
                   {h2_send_min_rate, -1}, {h2_send_min_rate, infinity}, {h2_send_buffer, 1023},
                   {h2_send_buffer, 65536.0}, {h2_enable_connect_protocol, 1},
                   {reuseport, 1}, {drain_notice, -1}, {drain_notice, infinity},
                   {min_body_rate, 500}, {min_body_rate, #{grace => 1000}},
                   {min_body_rate, #{grace => -1, bytes_per_second => 500}},
                   {min_body_rate, #{grace => 1000, bytes_per_second => 0}},
                   {min_body_rate, #{grace => 1000, bytes_per_second => 500, x => 1}},
                   {h2_max_receive_buffer, 0}, {h2_max_receive_buffer, infinity},
                   {h2_flood_limits, #{frames => -1}}]].

%% With several bad values, the first in key order is reported, so the
%% error is stable.
first_bad_value_test() ->
    ?assertEqual({error, {invalid_option, backlog, 0}}, valid(#{port => -1, backlog => 0})).

%% The HTTP/2 machine's budgets come from one place: the listener's
%% defaults, with a listener's own keys merged over them.
http2_defaults_test() ->
    #{flood_limits := Limits, max_receive_buffer := Buffer} = falco_http2_machine:default_opts(),
    ?assertEqual(#{frames => 10000, rst_stream => 500, stream_errors => 10},
                 maps:with([frames, rst_stream, stream_errors], Limits)),
    ?assertEqual(8388608, Buffer).

%% -- falco_errors ---------------------------------------------------------------

statuses_test_() ->
    [?_assertEqual(S, falco_errors:status(R))
     || {R, S} <- [{{bad_request, bare_lf}, 400}, {{bad_request, anything}, 400},
                   {request_timeout, 408}, {body_timeout, 408}, {content_too_large, 413},
                   {uri_too_long, 414}, {expectation_failed, 417},
                   {{header_too_large, line}, 431}, {{header_too_large, block}, 431},
                   {{header_too_large, count}, 431}, {internal_error, 500},
                   {{not_implemented, connect}, 501}, {{not_implemented, transfer_coding}, 501},
                   {version_not_supported, 505}]].

%% The body names the status with its RFC 9110 phrase.
bodies_test_() ->
    [?_assertEqual(B, falco_errors:body(R))
     || {R, B} <- [{{bad_request, x}, <<"Bad Request\n">>}, {request_timeout, <<"Request Timeout\n">>},
                   {content_too_large, <<"Content Too Large\n">>}, {uri_too_long, <<"URI Too Long\n">>},
                   {expectation_failed, <<"Expectation Failed\n">>},
                   {{header_too_large, count}, <<"Request Header Fields Too Large\n">>},
                   {internal_error, <<"Internal Server Error\n">>},
                   {{not_implemented, connect}, <<"Not Implemented\n">>},
                   {version_not_supported, <<"HTTP Version Not Supported\n">>}]].

%% An unknown reason is a bug in falco, not a status: it raises.
unknown_reason_test() ->
    ?assertError(function_clause, falco_errors:status(made_up)).

%% PROXY protocol: off by default; optional cannot be taken over TLS (it
%% would take the handshake's first bytes from ssl).
proxy_protocol_test() ->
    ?assertMatch(#{proxy_protocol := off, proxy_header_timeout := 5000,
                   proxy_header_max_size := 4096}, falco_opts:defaults()),
    [?assertMatch({ok, #{proxy_protocol := M}}, valid(#{proxy_protocol => M}))
     || M <- [off, optional, required]],
    ?assertEqual({error, {invalid_option, proxy_protocol, on}}, valid(#{proxy_protocol => on})),
    ?assertEqual({error, {invalid_option, proxy_header_timeout, 0}},
                 valid(#{proxy_header_timeout => 0})),
    ?assertEqual({error, {invalid_option, proxy_header_timeout, infinity}},
                 valid(#{proxy_header_timeout => infinity})),
    ?assertEqual({error, {invalid_option, proxy_header_max_size, 106}},
                 valid(#{proxy_header_max_size => 106})),
    ?assertEqual({error, {invalid_option, proxy_header_max_size, 65552}},
                 valid(#{proxy_header_max_size => 65552})),
    {ok, _} = valid(#{proxy_header_max_size => 65551}),
    Tls = #{transport => tls, tls_opts => falco_test_tls:server_opts()},
    ?assertEqual({error, {conflicting_options, proxy_protocol, transport}},
                 valid(Tls#{proxy_protocol => optional})),
    ?assertMatch({ok, _}, valid(Tls#{proxy_protocol => required})).

%% falco_handler callback (exported above)
handle(_Req, _State) ->
    {200, [], <<>>}.

%% Wrong targets are refused when the listener starts, naming the handler,
%% route or middleware entry and why (issue 41): a handler module that
%% does not exist or has no handle/2, a falco_static root that does not
%% exist (with its absolute path), a middleware without call/3 or with bad
%% options.
wrong_targets_test_() ->
    Abs = filename:absname("no/such/www_xyz"),
    Static = {falco_static, #{root => "no/such/www_xyz"}},
    [?_assertEqual({error, {invalid_option, handler, {no_such_module, no_such_handler_xyz}}},
                   falco_config:validate(#{handler => no_such_handler_xyz})),
     ?_assertEqual({error, {invalid_option, handler, {not_exported, lists, {handle, 2}}}},
                   falco_config:validate(#{handler => lists})),
     ?_assertEqual({error, {invalid_option, handler,
                            {invalid_state, falco_static, {root, enoent, Abs}}}},
                   falco_config:validate(#{handler => Static})),
     ?_assertEqual({error, {invalid_option, routes,
                            {invalid_handler, <<"/x">>, {no_such_module, no_such_handler_xyz}}}},
                   falco_config:validate(#{routes => [{<<"/x">>, no_such_handler_xyz}]})),
     ?_assertEqual({error, {invalid_option, routes,
                            {invalid_handler, <<"/s/*path">>,
                             {invalid_state, falco_static, {root, enoent, Abs}}}}},
                   falco_config:validate(#{routes => [{<<"/s/*path">>, Static}]})),
     ?_assertEqual({error, {invalid_option, middleware,
                            {invalid_middleware, {lists, #{}}, {not_exported, lists, {call, 3}}}}},
                   valid(#{middleware => [falco_request_id, {lists, #{}}]})),
     ?_assertEqual({error, {invalid_option, middleware,
                            {invalid_middleware, {falco_cors, #{origins => 42}},
                             {invalid_options, {invalid_option, falco_cors, origins}}}}},
                   valid(#{middleware => [{falco_cors, #{origins => 42}}]})),
     ?_assertEqual({error, {invalid_option, routes,
                            {invalid_middleware, <<"/x">>, 42, not_a_middleware}}},
                   falco_config:validate(#{routes => [{<<"/x">>, fun h/1, #{middleware => [42]}}]}))].
