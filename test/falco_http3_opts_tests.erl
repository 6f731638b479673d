%% EUnit tests for what a listener needs of HTTP/3 outside the connection:
%% the `http3' and `h3_*' options (defaults, bounds, TLS only), the maps
%% falco_opts makes of them (falco_opts:quic/1, falco_opts:http3_machine/1,
%% the one place of falco_http3_machine's defaults), a QUIC connection's
%% slot (falco_slots:claim_connection/3), and HTTP/3 requests (`{3, 0}')
%% treated as HTTP/2 ones are (request events, WebSocket handshakes,
%% falco_testing).
-module(falco_http3_opts_tests).
-include_lib("eunit/include/eunit.hrl").

h(_Req) -> {200, [], <<>>}.

valid(Opts) -> falco_config:validate(Opts#{handler => fun h/1}).

tls(Opts) -> Opts#{transport => tls, tls_opts => [{cert, <<"der">>}, {key, {'ECPrivateKey', <<>>}}]}.

defaults_test() ->
    ?assertMatch(#{http3 := false, h3_idle_timeout := 30000, h3_handshake_timeout := 10000,
                   h3_max_handshakes := 1000, h3_max_handshakes_per_address := 100,
                   h3_sockets := 1, h3_initial_max_data := 1048576,
                   h3_initial_max_stream_data := 262144, h3_max_streams_bidi := 100,
                   h3_max_streams_uni := 8, h3_alt_svc_max_age := 86400,
                   h3_conn_module := falco_http3_conn},
                 falco_opts:defaults()).

tls_only_test() ->
    ?assertEqual({error, {invalid_option, http3, needs_transport_tls}}, valid(#{http3 => true})),
    %% off, it is fine anywhere
    ?assertMatch({ok, #{http3 := false}}, valid(#{http3 => false})),
    ?assertMatch({ok, #{http3 := true}}, valid(tls(#{http3 => true}))),
    %% the TLS checks still apply
    ?assertEqual({error, {invalid_option, tls_opts, missing_certificate_or_key}},
                 valid(#{http3 => true, transport => tls})).

bounds_test_() ->
    Bad = fun(K, V) -> ?_assertEqual({error, {invalid_option, K, V}}, valid(tls(#{K => V}))) end,
    Good = fun(K, V) -> ?_assertMatch({ok, #{K := V}}, valid(tls(#{K => V}))) end,
    [Bad(http3, 1), Bad(h3_idle_timeout, 0), Bad(h3_idle_timeout, infinity),
     Bad(h3_handshake_timeout, -5), Bad(h3_max_handshakes, 0),
     Bad(h3_max_handshakes_per_address, x), Bad(h3_sockets, 0), Bad(h3_sockets, 1025),
     Bad(h3_initial_max_data, 0), Bad(h3_initial_max_data, 1 bsl 62),
     Bad(h3_initial_max_stream_data, 1.5), Bad(h3_max_streams_bidi, -1),
     Bad(h3_max_streams_bidi, (1 bsl 60) + 1), Bad(h3_max_streams_uni, 2),
     Bad(h3_alt_svc_max_age, -1), Bad(h3_conn_module, "mod"),
     Good(h3_max_streams_bidi, 0), Good(h3_max_streams_uni, 3), Good(h3_alt_svc_max_age, 0),
     Good(h3_initial_max_data, (1 bsl 62) - 1), Good(h3_idle_timeout, 1)].

quic_test() ->
    ?assertEqual(#{idle_timeout => 30000, handshake_timeout => 10000, max_handshakes => 1000,
                   max_handshakes_per_address => 100, initial_max_data => 1048576,
                   initial_max_stream_data => 262144, max_streams_bidi => 100,
                   max_streams_uni => 8, key_update_packets => auto,
                   aead_integrity_limit => auto},
                 falco_opts:quic(falco_opts:defaults())),
    {ok, K} = valid(tls(#{h3_key_update_packets => 1000, h3_aead_integrity_limit => 5})),
    ?assertMatch(#{key_update_packets := 1000, aead_integrity_limit := 5}, falco_opts:quic(K)),
    ?assertMatch({error, {invalid_option, h3_key_update_packets, 0}},
                 valid(tls(#{h3_key_update_packets => 0}))),
    ?assertMatch({error, {invalid_option, h3_aead_integrity_limit, never}},
                 valid(tls(#{h3_aead_integrity_limit => never}))),
    {ok, C} = valid(tls(#{h3_idle_timeout => 5000, h3_max_streams_uni => 3})),
    ?assertMatch(#{idle_timeout := 5000, max_streams_uni := 3}, falco_opts:quic(C)).

http3_machine_test() ->
    D = falco_opts:http3_machine(falco_opts:defaults()),
    ?assertEqual(D, falco_http3_machine:default_opts()),
    ?assertEqual(#{max_field_section_size => 16384, max_header_count => 100,
                   max_control_frame => 16384, max_ignored_frames => 1000, max_resets => 500,
                   reset_window => 10000, control_stream => 3, grease => 0,
                   enable_connect_protocol => true, max_empty_data => 1000,
                   max_tunnel_data => 100000}, D),
    %% a partial h2_flood_limits: the other budgets keep their defaults
    {ok, Partial} = valid(#{h2_flood_limits => #{tunnel_data => 7}}),
    ?assertMatch(#{max_tunnel_data := 7, max_empty_data := 1000, max_resets := 500},
                 falco_opts:http3_machine(Partial)),
    %% RFC 9220 follows RFC 8441's option
    {ok, NoConnect} = valid(#{h2_enable_connect_protocol => false}),
    ?assertMatch(#{enable_connect_protocol := false}, falco_opts:http3_machine(NoConnect)),
    {ok, C} = valid(#{max_header_block => 4096, max_header_count => 20}),
    ?assertMatch(#{max_field_section_size := 4096, max_header_count := 20},
                 falco_opts:http3_machine(C)),
    %% the machine takes it as it is
    {_M, [_ | _]} = falco_http3_machine:new(falco_opts:http3_machine(C)).

%% A QUIC connection's slot: counted as a connection at once; the waiting
%% acceptors' slots do not keep it out.
claim_connection_test() ->
    S = falco_slots:new(2),
    ?assert(falco_slots:claim(S, 1, 2)),
    ?assert(falco_slots:claim_connection(S, 2, 2)),
    ?assertEqual(1, falco_slots:connections(S)),
    ?assert(falco_slots:claim_connection(S, 2, 2)),
    ?assertNot(falco_slots:claim_connection(S, 2, 2)),
    ?assertNot(falco_slots:claim(S, 1, 2)),
    ?assertEqual(2, falco_slots:connections(S)),
    ok = falco_slots:release(S, 2, connection),
    ?assertEqual(1, falco_slots:connections(S)),
    ?assert(falco_slots:claim_connection(S, 2, 2)),
    %% a holder that starts again gives back what its predecessor held
    ok = falco_slots:reset(S, 2),
    ?assertEqual(0, falco_slots:connections(S)),
    ?assertEqual(1, falco_slots:waiting(S)),
    ?assert(falco_slots:claim_connection(S, 2, infinity)).

%% The request events name HTTP/3 `h3'.
request_events_protocol_test() ->
    Self = self(),
    E = {fun(Event, _, Meta) -> Self ! {event, Event, Meta} end},
    H = falco_request_events:wrap(E, fun h/1),
    _ = H(falco_testing:req(get, "/", #{version => {3, 0}})),
    receive {event, [falco, request, start], Meta} -> ?assertMatch(#{protocol := h3}, Meta)
    after 1000 -> error(no_event)
    end.

%% An HTTP/3 WebSocket (RFC 9220) is an extended CONNECT, as over HTTP/2.
websocket_over_h3_test() ->
    Req = #{method => <<"GET">>, version => {3, 0},
            headers => [{<<"sec-websocket-version">>, <<"13">>}]},
    ?assertMatch({ok, 200, [], _}, falco_ws_handshake:accept(Req#{protocol => <<"websocket">>}, #{})),
    ?assertEqual({error, {websocket_handshake, not_a_websocket_request}},
                 falco_ws_handshake:accept(Req, #{})).

%% falco_testing runs a {3, 0} request as any other.
testing_h3_test() ->
    Handler = fun(Req) -> {200, [], io_lib:format("~p", [falco_req:version(Req)])} end,
    ?assertMatch({200, _, <<"{3,0}">>}, falco_testing:request(Handler, get, "/", #{version => {3, 0}})).

%% The listener's Alt-Svc (falco_pipeline:alt_svc/2) is added to every
%% response of that listener, falco's error replies too, unless the
%% handler gives its own; other listeners get none.
alt_svc_test() ->
    ok = falco_pipeline:alt_svc(h3_opts_tests, <<"h3=\":4433\"; ma=60">>),
    try
        Plain = fun(_) -> {200, [], <<"x">>} end,
        Own = fun(_) -> {200, [{<<"Alt-Svc">>, <<"clear">>}], <<"x">>} end,
        Opts = #{listener => h3_opts_tests},
        {200, F1, _} = falco_testing:request(Plain, get, "/", Opts),
        ?assertEqual([<<"h3=\":4433\"; ma=60">>], [V || {<<"alt-svc">>, V} <- F1]),
        {200, F2, _} = falco_testing:request(Own, get, "/", Opts),
        ?assertEqual([<<"clear">>], [V || {<<"alt-svc">>, V} <- F2]),
        {200, F3, _} = falco_testing:request(Plain, get, "/", #{listener => other_listener}),
        ?assertEqual([], [V || {<<"alt-svc">>, V} <- F3]),
        %% a streamed reply too
        Stream = fun(_) -> {stream, 200, [], fun(Send) -> Send(<<"s">>) end} end,
        {200, F4, _} = falco_testing:request(Stream, get, "/", Opts),
        ?assertEqual([<<"h3=\":4433\"; ma=60">>], [V || {<<"alt-svc">>, V} <- F4])
    after
        ok = falco_pipeline:alt_svc(h3_opts_tests, undefined)
    end,
    {200, F5, _} = falco_testing:request(fun(_) -> {200, [], <<"x">>} end, get, "/",
                                         #{listener => h3_opts_tests}),
    ?assertEqual([], [V || {<<"alt-svc">>, V} <- F5]).
