%% The listener: starting and stopping, supervision by the user, option
%% validation, max_connections, the three timeouts, keep-alive request
%% limits and the size limits with small custom values. Each case starts
%% its own listener, named after the case, on an ephemeral port; the
%% protocol sections (RFC 9112 §9.5 timeouts, RFC 9110 §15.5 statuses) are
%% named where they apply.
-module(listener_SUITE).
-behaviour(supervisor).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, init_per_suite/1, end_per_suite/1,
         init_per_testcase/2, end_per_testcase/2]).
%% a test-owned supervisor, and a handler module
-export([init/1, handle/2]).
%% run on the peer node of emfile_backoff
-export([peer_setup/0, peer_fill/0, peer_release/0, peer_log/0, log/2]).
-export([start_stop_listener/1, already_started/1, port_zero_is_ephemeral/1,
         child_spec_own_supervisor/1, child_spec_port_not_stale/1, child_spec_falco_not_started/1,
         listener_crash_restarted/1,
         handler_module_forms/1, connections_count/1,
         unknown_option/1, invalid_option_values/1, missing_handler/1,
         not_a_map_or_bad_name/1, valid_tuning_options/1, listen_port_in_use/1,
         stop_closes_connections/1,
         max_connections_enforced/1, saturation_visible/1, request_timeout_slowloris/1,
         idle_timeout_closes/1, idle_after_extra_crlf/1, body_timeout_408/1,
         body_timeout_between_reads/1,
         send_timeout_stalled_client/1, emfile_backoff/1, ipv6_listener/1,
         max_keep_alive_requests/1, read_buffers_stay_small/1, read_buffer_sizes/1,
         idle_listener_collected/1, idle_listener_runs_nothing/1,
         accepted_socket_options/1, close_socket_sends_everything/1,
         limit_request_line_414/1, limit_header_line_431/1, limit_header_block_431/1,
         limit_header_count_431/1, limit_body_413/1, limit_body_413_while_uploading/1,
         limit_body_chunked_413/1,
         limit_trailers_431/1, limit_trailer_line_431/1, limit_trailer_block_431/1]).

-define(C, falco_test_client).
-define(HOST, "Host: example.com\r\n").
-define(CHUNKED_HEAD, <<"POST / HTTP/1.1\r\n" ?HOST "Transfer-Encoding: chunked\r\n\r\n">>).
%% a chunked body "abc" up to its trailer section
-define(CHUNKED_ABC, <<"POST / HTTP/1.1\r\n" ?HOST "Transfer-Encoding: chunked\r\n\r\n"
                       "3\r\nabc\r\n0\r\n">>).

all() ->
    [{group, lifecycle}, {group, options}, {group, connections}, {group, limits}].

groups() ->
    [{lifecycle, [], [start_stop_listener, already_started, port_zero_is_ephemeral,
                      child_spec_own_supervisor, child_spec_port_not_stale,
                      child_spec_falco_not_started,
                      listener_crash_restarted,
                      handler_module_forms, connections_count,
                      listen_port_in_use, stop_closes_connections, ipv6_listener]},
     {options, [], [unknown_option, invalid_option_values, missing_handler,
                    not_a_map_or_bad_name, valid_tuning_options]},
     {connections, [], [max_connections_enforced, saturation_visible, request_timeout_slowloris,
                        idle_timeout_closes, idle_after_extra_crlf, body_timeout_408,
                        body_timeout_between_reads,
                        send_timeout_stalled_client, emfile_backoff,
                        max_keep_alive_requests, read_buffers_stay_small,
                        read_buffer_sizes, idle_listener_collected, idle_listener_runs_nothing,
                        accepted_socket_options,
                        close_socket_sends_everything]},
     {limits, [], [limit_request_line_414, limit_header_line_431, limit_header_block_431,
                   limit_header_count_431, limit_body_413, limit_body_413_while_uploading,
                   limit_body_chunked_413,
                   limit_trailers_431, limit_trailer_line_431, limit_trailer_block_431]}].

init_per_suite(Config) ->
    ok = falco_test_listener:start_app(),
    Config.

end_per_suite(Config) ->
    Config.

init_per_testcase(emfile_backoff, Config) ->
    case falco_test_tools:check(["prlimit", "erl"]) of
        ok -> init_per_testcase(any, Config);
        NotThere -> NotThere
    end;
init_per_testcase(_Case, Config) ->
    Rec = ?C:recorder_start(),
    [{recorder, Rec} | Config].

end_per_testcase(Case, Config) ->
    ok = falco_test_listener:ensure_stopped([Case, list_to_atom(atom_to_list(Case) ++ "_2")]),
    ?C:recorder_stop(?config(recorder, Config)),
    Config.

%% -- handlers and helpers ------------------------------------------------------

%% Reads the whole body, records {Method, Path, Body}, echoes the body.
echo(Rec) ->
    fun(Req) ->
            {ok, Body, _} = falco_req:read_body(Req),
            ?C:record(Rec, {falco_req:method(Req), falco_req:path(Req), Body}),
            {200, [], Body}
    end.

%% The handler module form: `{?MODULE, State}' or just `?MODULE'.
handle(Req, State) ->
    {200, [], term_to_binary({falco_req:path(Req), State})}.

%% A test-owned supervisor holding whatever child specs it is given.
init(Specs) ->
    {ok, {#{strategy => one_for_one, intensity => 1, period => 5}, Specs}}.

start(Name, Config, Opts) ->
    {Pid, Port} = falco_test_listener:start(Name, echo(?config(recorder, Config)), Opts),
    true = is_pid(Pid),
    Port.

calls(Config) -> ?C:recorded(?config(recorder, Config)).

%% The response to one raw request on a new connection.
served(Port, Raw) ->
    {Sock, {ok, R}} = ?C:request(Port, Raw),
    ?C:close(Sock),
    R.

hello(Port) ->
    served(Port, <<"POST /hello HTTP/1.1\r\n" ?HOST "Content-Length: 5\r\n\r\nhello">>).

%% One raw request on a new connection that must be rejected with Status,
%% then closed, without reaching the handler.
rejected(Config, Port, Raw, Status) ->
    Before = calls(Config),
    #{responses := [R], closed := closed} = ?C:exchange(Port, Raw),
    ?assertEqual(Status, maps:get(status, R)),
    ?assert(?C:has_token(<<"connection">>, <<"close">>, R)),
    ?assertEqual(Before, calls(Config)),
    R.

connections(Name) ->
    {ok, N} = falco:connections(Name),
    N.

%% Waits for the count to be `N': a connection counts once its acceptor
%% has heard of it, which can be a moment after it has answered.
await_connections(Name, N) ->
    ok = ?C:wait_until(fun() -> connections(Name) =:= N end, 3000).

now_ms() -> erlang:monotonic_time(millisecond).

%% The acceptors of a listener: listener_sup > acceptor_sup > acceptor.
acceptors(Sup) -> falco_test_tree:acceptors(Sup).

%% -- lifecycle -----------------------------------------------------------------

%% start_listener/2 + port/1 + stop_listener/1: after the stop the port
%% refuses connections and the name is unknown.
start_stop_listener(Config) ->
    Port = start(start_stop_listener, Config, #{}),
    ?assert(Port > 0),
    #{status := 200, body := <<"hello">>} = hello(Port),
    ok = falco:stop_listener(start_stop_listener),
    ?assertEqual({error, not_found}, falco:port(start_stop_listener)),
    ?assertEqual({error, not_found}, falco:connections(start_stop_listener)),
    %% (a connect racing the asynchronous close of the listen socket may be
    %% reset rather than refused; either way it is not served)
    ?assertMatch({error, E} when E =:= econnrefused; E =:= econnreset,
                 gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {active, false}], 2000)),
    ?assertEqual({error, not_found}, falco:stop_listener(start_stop_listener)),
    %% the name can be used again
    Port2 = start(start_stop_listener, Config, #{}),
    #{status := 200} = hello(Port2).

%% A name is one listener: a second start says which process has it, as
%% OTP's start functions do.
already_started(Config) ->
    _ = start(already_started, Config, #{}),
    [Pid] = [P || {{falco_listener, already_started}, P, _, _} <- supervisor:which_children(falco_sup)],
    Opts = #{port => 0, ip => {127, 0, 0, 1}, handler => echo(?config(recorder, Config))},
    ?assertEqual({error, {already_started, Pid}}, falco:start_listener(already_started, Opts)).

%% port => 0 binds an ephemeral port; two listeners get two ports and each
%% serves its own handler.
port_zero_is_ephemeral(Config) ->
    P1 = start(port_zero_is_ephemeral, Config, #{}),
    P2 = start(port_zero_is_ephemeral_2, Config, #{handler => {?MODULE, second}}),
    ?assertNotEqual(P1, P2),
    #{body := <<"hello">>} = hello(P1),
    {<<"/hello">>, second} = binary_to_term(maps:get(body, hello(P2))).

%% child_spec/2 runs a listener under the user's own supervisor; stopping
%% that supervisor stops the listener.
child_spec_own_supervisor(Config) ->
    Spec = falco:child_spec(my_listener, #{port => 0, ip => {127, 0, 0, 1},
                                           handler => echo(?config(recorder, Config))}),
    {ok, Sup} = supervisor:start_link(?MODULE, [Spec]),
    unlink(Sup),
    try
        [{{falco_listener, my_listener}, Child, supervisor, _}] = supervisor:which_children(Sup),
        true = is_pid(Child),
        {ok, Port} = falco:port(my_listener),
        #{status := 200, body := <<"hello">>} = hello(Port),
        Ref = monitor(process, Sup),
        exit(Sup, shutdown),
        receive {'DOWN', Ref, process, Sup, _} -> ok after 5000 -> ct:fail(sup_not_down) end,
        ?assertMatch({error, _}, gen_tcp:connect({127, 0, 0, 1}, Port, [binary], 2000))
    after
        exit(Sup, kill)
    end.

%% A listener in the user's supervisor while the falco application is not
%% running fails to start with a reason that says what to do, not with a
%% badarg from deep inside; once falco is started the same spec works.
child_spec_falco_not_started(Config) ->
    Spec = falco:child_spec(no_falco, #{port => 0, ip => {127, 0, 0, 1},
                                        handler => echo(?config(recorder, Config))}),
    ok = application:stop(falco),
    Trap = process_flag(trap_exit, true),
    try
        ?assertMatch({error, {shutdown, {failed_to_start_child, {falco_listener, no_falco},
                                         {falco_not_started, "start the falco application" ++ _}}}},
                     supervisor:start_link(?MODULE, [Spec])),
        {ok, _} = application:ensure_all_started(falco),
        {ok, Sup} = supervisor:start_link(?MODULE, [Spec]),
        {ok, Port} = falco:port(no_falco),
        #{status := 200} = hello(Port),
        ok = proc_lib:stop(Sup)
    after
        _ = application:ensure_all_started(falco),
        process_flag(trap_exit, Trap)
    end.

%% Once the user's supervisor has stopped a listener started from
%% child_spec/2, port/1 and connections/1 say not_found instead of the old
%% port (another program may own that port by now); a listener started
%% again under the same name reports its new port.
child_spec_port_not_stale(Config) ->
    Spec = falco:child_spec(stale_listener, #{port => 0, ip => {127, 0, 0, 1},
                                              handler => echo(?config(recorder, Config))}),
    {ok, Sup} = supervisor:start_link(?MODULE, [Spec]),
    unlink(Sup),
    try
        {ok, Port} = falco:port(stale_listener),
        {ok, 0} = falco:connections(stale_listener),
        #{status := 200} = hello(Port),
        Ref = monitor(process, Sup),
        exit(Sup, shutdown),
        receive {'DOWN', Ref, process, Sup, _} -> ok after 5000 -> ct:fail(sup_not_down) end,
        ?assertEqual({error, not_found}, falco:port(stale_listener)),
        ?assertEqual({error, not_found}, falco:connections(stale_listener)),
        %% The name is free again for falco's own supervisor.
        Port2 = start(stale_listener, Config, #{}),
        #{status := 200} = hello(Port2),
        ok = falco:stop_listener(stale_listener),
        ?assertEqual({error, not_found}, falco:port(stale_listener))
    after
        exit(Sup, kill)
    end.

%% A listener whose supervisor is killed takes its acceptors and their
%% connections with it, whatever each acceptor was doing (one blocked in
%% accept, one waiting for a free slot at max_connections). falco's
%% supervisor does not restart it (a listener is a temporary child there:
%% restarts on a fixed port can fail with eaddrinuse while the old socket
%% closes, and would use up falco_sup's intensity); it can be started
%% again, and it serves.
listener_crash_restarted(Config) ->
    Name = listener_crash_restarted,
    {Sup, Port} = falco_test_listener:start(Name, echo(?config(recorder, Config)),
                                            #{num_acceptors => 2, max_connections => 1}),
    Acceptors = acceptors(Sup),
    ?assertEqual(2, length(Acceptors)),
    A = ?C:connect(Port),
    ?C:send(A, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, #{status := 200}} = ?C:recv_response(A),
    Mons = [monitor(process, P) || P <- [Sup | Acceptors]],
    exit(Sup, kill),
    [receive {'DOWN', M, process, _, _} -> ok after 5000 -> ct:fail(still_alive) end || M <- Mons],
    ok = ?C:expect_closed(A, 3000),
    ?C:close(A),
    ok = ?C:wait_until(fun() -> [] =:= [C || {{falco_listener, N}, _, _, _} = C
                                                 <- supervisor:which_children(falco_sup),
                                             N =:= Name]
                       end, 3000),
    ?assertEqual({error, not_found}, falco:port(Name)),
    Port2 = start(Name, Config, #{}),
    #{status := 200, body := <<"hello">>} = hello(Port2).

%% The handler option: a fun, {Module, State} or a bare Module (State =
%% undefined).
handler_module_forms(Config) ->
    P1 = start(handler_module_forms, Config, #{handler => {?MODULE, #{some => state}}}),
    {<<"/hello">>, #{some := state}} = binary_to_term(maps:get(body, hello(P1))),
    P2 = start(handler_module_forms_2, Config, #{handler => ?MODULE}),
    {<<"/hello">>, undefined} = binary_to_term(maps:get(body, hello(P2))).

%% connections/1 counts open connections, and drops as they close.
connections_count(Config) ->
    Port = start(connections_count, Config, #{}),
    ?assertEqual(0, connections(connections_count)),
    Socks = [begin
                 S = ?C:connect(Port),
                 ?C:send(S, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
                 {ok, #{status := 200}} = ?C:recv_response(S),
                 S
             end || _ <- lists:seq(1, 3)],
    await_connections(connections_count, 3),
    [?C:close(S) || S <- Socks],
    ok = ?C:wait_until(fun() -> connections(connections_count) =:= 0 end, 3000).

%% A port already in use is `{error, eaddrinuse}' from start_listener, as
%% from gen_tcp:listen/2, not a crash: nothing is logged; falco keeps
%% running and the name stays free.
listen_port_in_use(Config) ->
    {ok, Busy} = gen_tcp:listen(0, [{ip, {127, 0, 0, 1}}]),
    {ok, BusyPort} = inet:port(Busy),
    ok = falco_test_tree:capture_log(listen_port_in_use_log),
    try
        ?assertEqual({error, {eaddrinuse, #{ip => {127, 0, 0, 1}, port => BusyPort}}},
                     falco:start_listener(listen_port_in_use,
                                          #{port => BusyPort, ip => {127, 0, 0, 1},
                                            handler => echo(?config(recorder, Config))})),
        ?assertEqual({error, not_found}, falco:port(listen_port_in_use)),
        ?assert(is_pid(whereis(falco_sup))),
        %% a crash report would be logged by now (proc_lib logs it before
        %% the start returns); a moment more for anything asynchronous
        timer:sleep(200),
        ?assertEqual([], falco_test_tree:logged()),
        Port = start(listen_port_in_use, Config, #{}),
        #{status := 200} = hello(Port)
    after
        _ = logger:remove_handler(listen_port_in_use_log),
        gen_tcp:close(Busy)
    end.

%% An IPv6 address works like an IPv4 one (skipped where the host has no ::1).
ipv6_listener(Config) ->
    case gen_tcp:listen(0, [inet6, {ip, {0, 0, 0, 0, 0, 0, 0, 1}}]) of
        {ok, Probe} ->
            gen_tcp:close(Probe),
            Port = start(ipv6_listener, Config, #{ip => {0, 0, 0, 0, 0, 0, 0, 1}}),
            {ok, Sock} = gen_tcp:connect({0, 0, 0, 0, 0, 0, 0, 1}, Port,
                                         [binary, {active, false}], 2000),
            ok = gen_tcp:send(Sock, <<"GET / HTTP/1.1\r\nHost: [::1]\r\n\r\n">>),
            {ok, <<"HTTP/1.1 200 OK\r\n", _/binary>>} = gen_tcp:recv(Sock, 0, 5000),
            gen_tcp:close(Sock);
        {error, _} ->
            {skip, no_ipv6_loopback}
    end.

%% Stopping a listener closes its open connections.
stop_closes_connections(Config) ->
    Port = start(stop_closes_connections, Config, #{}),
    Sock = ?C:connect(Port),
    ?C:send(Sock, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, #{status := 200}} = ?C:recv_response(Sock),
    ok = falco:stop_listener(stop_closes_connections),
    ok = ?C:expect_closed(Sock, 5000),
    ?C:close(Sock).

%% -- option validation -----------------------------------------------------------

%% An unknown key is {error, {unknown_option, Key}}.
unknown_option(Config) ->
    H = echo(?config(recorder, Config)),
    ?assertEqual({error, {unknown_option, max_conections}},
                 falco:start_listener(unknown_option, #{handler => H, port => 0,
                                                        max_conections => 10})),
    ?assertEqual({error, not_found}, falco:port(unknown_option)).

%% A bad value is {error, {invalid_option, Key, Value}}, found before any
%% socket is opened.
invalid_option_values(Config) ->
    H = echo(?config(recorder, Config)),
    Bad = [{port, -1}, {port, 65536}, {port, "80"}, {ip, "127.0.0.1"}, {ip, {1, 2, 3}},
           {ip, {256, 0, 0, 1}}, {handler, 42}, {handler, fun(_, _) -> ok end},
           {num_acceptors, 0}, {max_connections, 0}, {max_connections, -5},
           {backlog, 0}, {nodelay, yes}, {send_timeout, -1}, {idle_timeout, soon},
           {request_timeout, -1}, {body_timeout, 1.5}, {max_keep_alive_requests, 0},
           {max_request_line, 0}, {max_header_line, -1}, {max_header_block, 0},
           {max_header_count, -1}, {max_body, -1}],
    [?assertEqual({error, {invalid_option, K, V}},
                  falco:start_listener(invalid_option_values,
                                       maps:merge(#{handler => H, port => 0}, #{K => V})))
     || {K, V} <- Bad],
    ?assertEqual({error, not_found}, falco:port(invalid_option_values)),
    %% and the same name starts once the options are right
    _ = start(invalid_option_values, Config, #{}).

%% handler has no default.
missing_handler(_Config) ->
    ?assertEqual({error, {missing_option, handler}},
                 falco:start_listener(missing_handler, #{port => 0})),
    ?assertEqual({error, {missing_option, handler}}, falco:start_listener(missing_handler, #{})).

%% Options must be a map and the name an atom.
not_a_map_or_bad_name(Config) ->
    H = echo(?config(recorder, Config)),
    ?assertMatch({error, {options_not_a_map, _}},
                 falco:start_listener(not_a_map_or_bad_name, [{handler, H}, {port, 0}])),
    ?assertEqual({error, {invalid_name, "name"}}, falco:start_listener("name", #{handler => H})).

%% Every tuning option takes a valid value (infinity where it makes sense),
%% and a listener so configured serves.
valid_tuning_options(Config) ->
    Port = start(valid_tuning_options, Config,
                 #{num_acceptors => 1, max_connections => infinity, backlog => 16,
                   nodelay => false, send_timeout => infinity, idle_timeout => infinity,
                   request_timeout => infinity, body_timeout => infinity,
                   max_keep_alive_requests => infinity, max_request_line => 100,
                   max_header_line => 100, max_header_block => 1000, max_header_count => 10,
                   max_body => 0}),
    #{status := 200, body := <<>>} = served(Port, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>).

%% -- connections -------------------------------------------------------------------

%% max_connections: a connection over the limit is accepted by the kernel
%% but not served until another closes (all 10 acceptors were blocked in
%% accept when the limit was reached).
max_connections_enforced(Config) ->
    Port = start(max_connections_enforced, Config, #{max_connections => 2,
                                                    idle_timeout => 60000}),
    A = ?C:connect(Port),
    B = ?C:connect(Port),
    [begin
         ?C:send(S, <<"GET /ab HTTP/1.1\r\n" ?HOST "\r\n">>),
         {ok, #{status := 200}} = ?C:recv_response(S)
     end || S <- [A, B]],
    X = ?C:connect(Port),
    ?C:send(X, <<"POST /x HTTP/1.1\r\n" ?HOST "Content-Length: 1\r\n\r\nx">>),
    ok = ?C:expect_silence(X, 300),
    ?assertEqual(2, connections(max_connections_enforced)),
    ?assertEqual([{<<"GET">>, <<"/ab">>, <<>>}, {<<"GET">>, <<"/ab">>, <<>>}], calls(Config)),
    %% served once A closes (well before any timeout could free a slot:
    %% idle_timeout is 60 s here)
    ?C:close(A),
    {ok, #{status := 200, body := <<"x">>}} = ?C:recv_response(X, #{timeout => 10000}),
    await_connections(max_connections_enforced, 2),
    [?C:close(S) || S <- [B, X]].

%% A listener at max_connections says so (docs/guide/operations.md): one
%% `saturated' event each time it reaches the limit and one `unsaturated'
%% when a slot is free again (with how long it lasted), `saturated' and
%% `saturations' in falco:info/1, and one warning line per 10 s however
%% often the limit is reached, with a notice when the logged time ends.
saturation_visible(Config) ->
    Test = self(),
    Events = fun([falco, listener, _] = Ev, M, Md) -> Test ! {event, Ev, M, Md};
                (_, _, _) -> ok
             end,
    Port = start(saturation_visible, Config, #{max_connections => 2, num_acceptors => 1,
                                               idle_timeout => 60000,
                                               event_handler => Events}),
    ok = falco_test_tree:capture_log(saturation_log, notice),
    try
        {ok, #{saturated := false, saturations := 0}} = falco:info(saturation_visible),
        A = ?C:connect(Port),
        B = ?C:connect(Port),
        [begin
             ?C:send(S, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
             {ok, #{status := 200}} = ?C:recv_response(S)
         end || S <- [A, B]],
        {M1, Md1} = saturation_event(saturated),
        ?assertEqual(#{listener => saturation_visible, max_connections => 2}, Md1),
        ?assertEqual(2, maps:get(connections, M1)),
        {ok, #{saturated := true, saturations := 1}} = falco:info(saturation_visible),
        X = ?C:connect(Port),
        ?C:send(X, <<"GET /x HTTP/1.1\r\n" ?HOST "\r\n">>),
        ok = ?C:expect_silence(X, 200),
        %% A's slot goes to X; with X served the limit is reached again
        ?C:close(A),
        {ok, #{status := 200}} = ?C:recv_response(X, #{timeout => 10000}),
        {M2, #{listener := saturation_visible}} = saturation_event(unsaturated),
        ?assert(erlang:convert_time_unit(maps:get(duration, M2), native, millisecond) >= 200),
        {_, _} = saturation_event(saturated),
        {ok, #{saturated := true, saturations := 2}} = falco:info(saturation_visible),
        [?C:close(S) || S <- [B, X]],
        {_, _} = saturation_event(unsaturated),
        {ok, #{saturated := false, saturations := 2}} = falco:info(saturation_visible),
        timer:sleep(100),
        ?assertEqual([], flush_events()),
        Lines = [iolist_to_binary(io_lib:format(F, As))
                 || #{msg := {F, As}} <- falco_test_tree:logged()],
        Mine = [L || L <- Lines, binary:match(L, <<"saturation_visible">>) =/= nomatch],
        %% the first reach logged with its count, its end noticed; the
        %% second reach within the interval not logged, nor its end
        ?assertMatch([<<"falco: listener saturation_visible reached max_connections (2; 2 "
                        "connections open)", _/binary>>,
                      <<"falco: listener saturation_visible below max_connections again after ",
                        _/binary>>], Mine),
        ?assertNotEqual(nomatch, binary:match(hd(Mine), <<"reached 1 times">>))
    after
        logger:remove_handler(saturation_log)
    end.

saturation_event(Kind) ->
    receive
        {event, [falco, listener, Kind], M, Md} -> {M, Md}
    after 5000 ->
        error({no_event, Kind, flush_events()})
    end.

flush_events() ->
    receive {event, _, _, _} = E -> [E | flush_events()] after 0 -> [] end.

%% request_timeout (RFC 9112 §9.5, RFC 9110 §15.5.9): a slowloris client
%% that keeps trickling header bytes still gets 408 once the head is
%% request_timeout (2 s) late, and is closed: not before (less a margin for
%% clock granularity), and long before idle_timeout (60 s) or the end of
%% the trickle (about 20 s).
request_timeout_slowloris(Config) ->
    Port = start(request_timeout_slowloris, Config,
                 #{request_timeout => 2000, idle_timeout => 60000}),
    Sock = ?C:connect(Port),
    Trickle = <<"GET / HTTP/1.1\r\n" ?HOST, (binary:copy(<<"X-Slow: 1\r\n">>, 100))/binary>>,
    T0 = now_ms(),
    Trickler = spawn(fun() -> [begin _ = gen_tcp:send(Sock, <<B>>), timer:sleep(20) end
                               || <<B>> <= Trickle] end),
    try
        {ok, R} = ?C:recv_response(Sock, #{timeout => 15000}),
        Elapsed = now_ms() - T0,
        #{status := 408} = R,
        ?assert(?C:has_token(<<"connection">>, <<"close">>, R)),
        ?assert(Elapsed >= 1900),
        ?assert(is_process_alive(Trickler)),
        ok = ?C:expect_closed(Sock, 5000),
        ?assertEqual([], calls(Config))
    after
        exit(Trickler, kill),
        ?C:close(Sock)
    end.

%% idle_timeout (RFC 9112 §9.5): an idle keep-alive connection, and one
%% that never sends a byte, are closed without a response, after
%% idle_timeout (2 s; less a margin for clock granularity) and long before
%% request_timeout (60 s).
idle_timeout_closes(Config) ->
    Port = start(idle_timeout_closes, Config, #{idle_timeout => 2000, request_timeout => 60000}),
    Sock = ?C:connect(Port),
    ?C:send(Sock, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, #{status := 200}} = ?C:recv_response(Sock),
    %% still open a while into the idle time
    timer:sleep(500),
    ?C:send(Sock, <<"GET /again HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, #{status := 200}} = ?C:recv_response(Sock),
    T0 = now_ms(),
    ok = ?C:expect_closed(Sock, 15000),
    ?assert(now_ms() - T0 >= 1900),
    ?C:close(Sock),
    Silent = ?C:connect(Port),
    T1 = now_ms(),
    ok = ?C:expect_closed(Silent, 15000),
    ?assert(now_ms() - T1 >= 1900),
    ?C:close(Silent).

%% idle_timeout, not request_timeout, governs a connection that only got
%% the extra CRLF clients may send after a body (RFC 9112 §2.2): it is still
%% open and usable well after request_timeout (500 ms: the connection is
%% watched for three times that, with idle_timeout far away at 60 s).
idle_after_extra_crlf(Config) ->
    Port = start(idle_after_extra_crlf, Config, #{request_timeout => 500, idle_timeout => 60000}),
    Sock = ?C:connect(Port),
    ?C:send(Sock, <<"POST / HTTP/1.1\r\n" ?HOST "Content-Length: 2\r\n\r\nhi\r\n">>),
    {ok, #{status := 200, body := <<"hi">>}} = ?C:recv_response(Sock),
    ok = ?C:expect_silence(Sock, 1500),
    ?C:send(Sock, <<"\r\n">>),
    ok = ?C:expect_silence(Sock, 1500),
    ?C:send(Sock, <<"POST / HTTP/1.1\r\n" ?HOST "Content-Length: 5\r\n\r\nagain">>),
    {ok, #{status := 200, body := <<"again">>}} = ?C:recv_response(Sock),
    ?C:close(Sock).

%% body_timeout (RFC 9110 §15.5.9): a body that stops arriving gets 408
%% and close, not before body_timeout (2 s, less a margin for clock
%% granularity); the handler never completes.
body_timeout_408(Config) ->
    Port = start(body_timeout_408, Config, #{body_timeout => 2000, idle_timeout => 60000}),
    Sock = ?C:connect(Port),
    T0 = now_ms(),
    ?C:send(Sock, <<"POST / HTTP/1.1\r\n" ?HOST "Content-Length: 100\r\n\r\nonly some">>),
    {ok, R} = ?C:recv_response(Sock, #{timeout => 15000}),
    #{status := 408} = R,
    ?assert(?C:has_token(<<"connection">>, <<"close">>, R)),
    ?assert(now_ms() - T0 >= 1900),
    ok = ?C:expect_closed(Sock, 5000),
    ?assertEqual([], calls(Config)),
    ?C:close(Sock).

%% body_timeout bounds each wait for body bytes, not the whole upload: a
%% large body that keeps arriving (every 250 ms, for 3 s) is read in full
%% with body_timeout = 2 s.
body_timeout_between_reads(Config) ->
    Port = start(body_timeout_between_reads, Config, #{body_timeout => 2000}),
    Piece = binary:copy(<<"p">>, 25000),
    Sock = ?C:connect(Port),
    ?C:send(Sock, <<"POST /slow HTTP/1.1\r\n" ?HOST "Content-Length: 300000\r\n\r\n">>),
    T0 = now_ms(),
    [begin timer:sleep(250), ?C:send(Sock, Piece) end || _ <- lists:seq(1, 12)],
    {ok, R} = ?C:recv_response(Sock, #{timeout => 10000}),
    ?assert(now_ms() - T0 >= 2500),
    #{status := 200} = R,
    ?assertEqual(300000, byte_size(maps:get(body, R))),
    ?C:close(Sock).

%% send_timeout: a client that stops reading cannot pin a connection: the
%% blocked send fails after send_timeout and the connection goes away.
%% Out of file descriptors, an acceptor logs a warning and backs off
%% instead of spinning or dying; the client waits in the backlog and is
%% served once descriptors are free again. Run on a peer node whose
%% descriptor limit is 128 (prlimit), where the test uses them all up.
emfile_backoff(_Config) ->
    Prlimit = os:find_executable("prlimit"),
    Erl = os:find_executable("erl"),
    Paths = [code:lib_dir(falco, ebin), filename:dirname(code:which(?MODULE))],
    {ok, Peer, _} = peer:start_link(#{connection => standard_io,
                                      exec => {Prlimit, ["--nofile=128:128", Erl]},
                                      args => lists:append([["-pa", P] || P <- Paths])}),
    try
        Port = peer:call(Peer, ?MODULE, peer_setup, []),
        #{status := 200} = hello(Port),
        Filled = peer:call(Peer, ?MODULE, peer_fill, []),
        ct:log("the peer now holds ~p more descriptors", [Filled]),
        ?assert(Filled > 0),
        Sock = ?C:connect(Port),
        ?C:send(Sock, <<"POST /late HTTP/1.1\r\n" ?HOST "Content-Length: 2\r\n\r\nok">>),
        ok = ?C:expect_silence(Sock, 400),
        Warnings = fun() ->
                           [E || E = #{level := warning, msg := {Format, Args}}
                                     <- peer:call(Peer, ?MODULE, peer_log, []),
                                 string:find(io_lib:format(Format, Args),
                                             "out of file descriptors (emfile)") =/= nomatch]
                   end,
        ok = ?C:wait_until(fun() -> Warnings() =/= [] end, 10000),
        timer:sleep(300),
        %% Backing off, not spinning: at most one warning per 100 ms.
        Count = length(Warnings()),
        ok = peer:call(Peer, ?MODULE, peer_release, []),
        T0 = now_ms(),
        {ok, #{status := 200, body := Body}} = ?C:recv_response(Sock, #{timeout => 10000}),
        ?assertEqual({<<"/late">>, undefined}, binary_to_term(Body)),
        ct:log("served ~p ms after release; ~p warnings before", [now_ms() - T0, Count]),
        ?assert(Count =< 10),
        ?C:close(Sock),
        #{status := 200} = hello(Port)
    after
        peer:stop(Peer)
    end.

%% On the peer: falco with a listener (one acceptor) and a logger handler
%% that keeps every event for peer_log/0.
peer_setup() ->
    ok = falco_test_listener:start_app(),
    %% The peer's stdio is the control channel: its own log output is not
    %% wanted (and could not load its modules once descriptors run out).
    ok = logger:remove_handler(default),
    Log = spawn(fun() -> log_loop([]) end),
    true = register(emfile_log, Log),
    ok = logger:add_handler(emfile_log, ?MODULE, #{config => #{pid => Log}}),
    {_, Port} = falco_test_listener:start(emfile_peer, ?MODULE, #{num_acceptors => 1}),
    Port.

log(Event, #{config := #{pid := Pid}}) ->
    Pid ! {log, Event},
    ok.

log_loop(Events) ->
    receive
        {log, E} -> log_loop([E | Events]);
        {get, From} -> From ! {events, lists:reverse(Events)}, log_loop(Events)
    end.

peer_log() ->
    emfile_log ! {get, self()},
    receive {events, Es} -> Es after 5000 -> timeout end.

%% Opens /dev/null until the descriptors run out; a holder process keeps them.
peer_fill() ->
    Self = self(),
    Holder = spawn(fun() -> Fds = fill([]), Self ! {filled, length(Fds)}, hold(Fds) end),
    true = register(emfile_holder, Holder),
    receive {filled, N} -> N end.

fill(Fds) ->
    case file:open("/dev/null", [read, raw]) of
        {ok, Fd} -> fill([Fd | Fds]);
        {error, emfile} -> Fds
    end.

hold(Fds) ->
    receive
        {release, From} ->
            [ok = file:close(F) || F <- Fds],
            From ! released
    end.

peer_release() ->
    emfile_holder ! {release, self()},
    receive released -> ok end.

send_timeout_stalled_client(Config) ->
    Rec = ?config(recorder, Config),
    Chunk = binary:copy(<<"z">>, 65536),
    Flood = fun Loop(Send, N) ->
                    case Send(Chunk) of
                        ok -> Loop(Send, N + 1);
                        {error, Why} -> ?C:record(Rec, {send_failed, Why, N}), ok
                    end
            end,
    Handler = fun(_Req) -> {stream, 200, [], fun(Send) -> Flood(Send, 0) end} end,
    Port = start(send_timeout_stalled_client, Config, #{send_timeout => 200, handler => Handler}),
    Sock = ?C:connect(Port, [{recbuf, 4096}]),
    ?C:send(Sock, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
    ok = ?C:wait_until(fun() -> calls(Config) =/= [] end, 10000),
    [{send_failed, _, N}] = calls(Config),
    ?assert(N > 0),
    ok = ?C:wait_until(fun() -> connections(send_timeout_stalled_client) =:= 0 end, 5000),
    ?C:close(Sock).

%% max_keep_alive_requests (RFC 9112 §9.6): the last allowed response says
%% "connection: close" and the server closes after it.
max_keep_alive_requests(Config) ->
    Port = start(max_keep_alive_requests, Config, #{max_keep_alive_requests => 3}),
    Sock = ?C:connect(Port),
    Rs = [begin
              ?C:send(Sock, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
              {ok, R} = ?C:recv_response(Sock),
              ?C:has_token(<<"connection">>, <<"close">>, R)
          end || _ <- lists:seq(1, 3)],
    ?assertEqual([false, false, true], Rs),
    ok = ?C:expect_closed(Sock, 5000),
    ?C:close(Sock).

%% Small requests on kept-alive connections do not pin large read buffers:
%% on gen_tcp's socket backend each recv allocates the whole socket buffer,
%% so the listener's buffer is kept small (8 KB) and only a large body
%% widens it. With a 64 KB buffer a connection held megabytes of mostly
%% empty buffers between its garbage collections.
read_buffers_stay_small(Config) ->
    Port = start(read_buffers_stay_small, Config, #{}),
    Socks = [?C:connect(Port) || _ <- lists:seq(1, 4)],
    Batch = binary:copy(<<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>, 16),
    Peak = lists:max(
             [begin
                  [?C:send(S, Batch) || S <- Socks],
                  [{ok, #{status := 200}} = ?C:recv_response(S) || S <- Socks,
                                                                   _ <- lists:seq(1, 16)],
                  lists:max([0 | [conn_binary(P) || P <- processes()]])
              end || _ <- lists:seq(1, 60)]),
    ct:log("peak binary bytes referenced by a connection process: ~p", [Peak]),
    ?assert(Peak < 1024 * 1024),
    [?C:close(S) || S <- Socks],
    ok.

%% falco_transport:accept/3 takes a connection without gen_tcp:accept's
%% copy of options from the listen socket (36 system calls): the accepted
%% socket must have every option gen_tcp:accept would give it, for a
%% listen socket opened as a listener opens it (IPv4 and IPv6, both
%% backends, listener options changed from their defaults too).
accepted_socket_options(_Config) ->
    Keys = [active, mode, packet, packet_size, header, deliver, exit_on_close,
            show_econnreset, nodelay, keepalive, delay_send, priority, linger, tos, ttl,
            recvtos, recvttl, buffer, recbuf, sndbuf, send_timeout, send_timeout_close,
            high_watermark, low_watermark, reuseaddr],
    Confs = [#{ip => Ip, inet_backend => Backend, nodelay => NoDelay, send_timeout => T}
             || Ip <- [{127, 0, 0, 1}, {0, 0, 0, 0, 0, 0, 0, 1}], Backend <- [inet, socket],
                {NoDelay, T} <- [{true, 30000}, {false, 1234}]],
    Checked = [accepted_options(C, Keys) || C <- Confs],
    ct:log("compared: ~p", [Checked]),
    ?assert(lists:member(inet, Checked)).

accepted_options(Extra = #{ip := Ip, inet_backend := Backend}, Keys) ->
    {ok, Conf} = falco_opts:validate(Extra#{port => 0, handler => fun(_) -> {200, [], <<>>} end}),
    case gen_tcp:listen(0, falco_listener_sup:socket_options(Conf)) of
        {ok, L} ->
            {ok, Port} = inet:port(L),
            Connect = fun() -> {ok, C} = gen_tcp:connect(Ip, Port, [{active, false}]), C end,
            C1 = Connect(),
            {ok, Theirs} = gen_tcp:accept(L, 5000),
            C2 = Connect(),
            {ok, Ours} = falco_transport:accept(tcp, L, 5000),
            ?assertEqual(inet:getopts(Theirs, Keys), inet:getopts(Ours, Keys)),
            %% and it works as a gen_tcp socket, both ways
            ok = gen_tcp:send(C2, <<"ping">>),
            ?assertEqual({ok, <<"ping">>}, gen_tcp:recv(Ours, 4, 5000)),
            ok = gen_tcp:send(Ours, <<"pong">>),
            ?assertEqual({ok, "pong"}, gen_tcp:recv(C2, 4, 5000)),
            ?assertEqual(inet:peername(C2), inet:sockname(Ours)),
            %% nothing to accept: a timeout, as gen_tcp:accept/2 says it
            ?assertEqual({error, timeout}, falco_transport:accept(tcp, L, 50)),
            [gen_tcp:close(S) || S <- [C1, C2, Theirs, Ours, L]],
            Backend;
        {error, Why} when tuple_size(Ip) =:= 8 ->
            %% a machine without IPv6 on loopback
            ct:log("no IPv6 listen socket: ~p", [Why]),
            none
    end.

%% falco_transport:close_socket/2 closes the port at once when nothing is
%% queued, else as gen_tcp:close/1 (which waits for the queue): either way
%% the peer gets every byte sent before the close, then the end of the
%% stream, and nothing about the socket is left in the closer's mailbox.
close_socket_sends_everything(_Config) ->
    {ok, Conf} = falco_opts:validate(#{port => 0, ip => {127, 0, 0, 1},
                                       handler => fun(_) -> {200, [], <<>>} end}),
    {ok, L} = gen_tcp:listen(0, falco_listener_sup:socket_options(Conf)),
    {ok, Port} = inet:port(L),
    Small = <<"last words">>,
    Big = binary:copy(<<"0123456789abcdef">>, 4 * 65536),
    [begin
         Self = self(),
         Reader = spawn_link(fun() ->
                                     {ok, C} = gen_tcp:connect({127, 0, 0, 1}, Port,
                                                               [binary, {active, false}]),
                                     %% a slow start: the big send queues first
                                     timer:sleep(300),
                                     Self ! {got, read_all(C, <<>>)}
                             end),
         {ok, S} = falco_transport:accept(tcp, L, 5000),
         %% gen_tcp:send/2 returns once the driver has queued it all
         ok = gen_tcp:send(S, Data),
         {queue_size, Queued} = erlang:port_info(S, queue_size),
         ?assertEqual(Data =:= Big, Queued > 0),
         ok = falco_transport:close_socket(gen_tcp, S),
         ct:log("~b bytes, queue at the close: ~p", [byte_size(Data), Queued]),
         receive {got, Got} -> ?assertEqual({byte_size(Data), closed}, Got) end,
         ?assertEqual(undefined, erlang:port_info(S)),
         unlink(Reader)
     end || Data <- [Small, Big]],
    ?assertEqual({messages, []}, process_info(self(), messages)),
    gen_tcp:close(L).

read_all(C, Acc) ->
    case gen_tcp:recv(C, 0, 5000) of
        {ok, D} -> read_all(C, <<Acc/binary, D/binary>>);
        {error, Why} -> {byte_size(Acc), Why}
    end.

%% The inet driver keeps a read buffer of the size of the last allocation
%% in every idle connection (docs/internals/idle-memory.md): a new
%% connection reads with 512 bytes (what a WebSocket session upgraded by
%% its first request keeps), a keep-alive one with 1460 after its first
%% response, and one whose head did not fit with 2048; every head is
%% served whole whatever the buffer.
read_buffer_sizes(Config) ->
    Port = start(read_buffer_sizes, Config, #{}),
    Short = ?C:connect(Port),
    ?assertEqual(512, server_buffer(Short)),
    ok = ?C:send(Short, <<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>),
    {ok, #{status := 200}} = ?C:recv_response(Short),
    ?assertEqual(1460, server_buffer(Short)),
    Long = ?C:connect(Port),
    Fields = [[<<"x-field-">>, integer_to_binary(I), <<": ">>, binary:copy(<<"v">>, 80), <<"\r\n">>]
              || I <- lists:seq(1, 30)],
    Head = iolist_to_binary([<<"GET /long HTTP/1.1\r\n" ?HOST>>, Fields, <<"\r\n">>]),
    ?assert(byte_size(Head) > 2048),
    [begin
         ok = ?C:send(Long, Head),
         {ok, #{status := 200}} = ?C:recv_response(Long)
     end || _ <- [1, 2]],
    ?assertEqual(2048, server_buffer(Long)),
    [?C:close(S) || S <- [Short, Long]],
    ok.

%% An idle listener does not keep what a burst of connections left on its
%% processes' heaps (docs/internals/idle-memory.md): an acceptor collects
%% its heap after 100 ms without a message, and a process waiting in
%% accept after each 100 ms round that brought no connection, so neither
%% holds an old heap of promoted garbage (before, 10.7 KB per acceptor
%% after a burst against 2.8-3.9 KB collected, and 5.8 KB per waiting
%% process after 1.5 s against 2.8 KB).
idle_listener_collected(Config) ->
    Sup = two_acceptors(idle_listener_collected, 200, Config),
    Acceptors = acceptors(Sup),
    ?assertEqual(2, length(Acceptors)),
    timer:sleep(1500),
    Waiting = waiting(Acceptors),
    ?assertEqual(2, length(Waiting)),
    ?assertEqual([{P, 0} || P <- Acceptors ++ Waiting],
                 [{P, old_heap(P)} || P <- Acceptors ++ Waiting]).

%% An idle TCP listener runs none of its processes: the processes waiting
%% in accept wait without a timeout (a drain closes the listen socket
%% under them) and the acceptors once collected wait for messages only.
%% They were scheduled 20 times a second each while they waited in
%% rounds of 100 ms (2026-11-29).
idle_listener_runs_nothing(Config) ->
    case os:type() of
        {unix, linux} ->
            Name = idle_listener_runs_nothing,
            Sup = two_acceptors(Name, 20, Config),
            Port = falco_test_listener:port(Name),
            timer:sleep(300),
            Acceptors = acceptors(Sup),
            Procs = Acceptors ++ waiting(Acceptors),
            ?assertEqual(4, length(Procs)),
            Self = self(),
            Tracer = spawn_link(fun() -> count_ins(Self, 0) end),
            _ = [1 = erlang:trace(P, true, [running, {tracer, Tracer}]) || P <- Procs],
            timer:sleep(1000),
            _ = [1 = erlang:trace(P, false, [running]) || P <- Procs],
            Ref = erlang:trace_delivered(all),
            receive {trace_delivered, all, Ref} -> ok end,
            Tracer ! count,
            receive {ins, N} -> ?assertEqual(0, N) end,
            %% and the drain still ends the waits and closes the socket
            ok = falco:stop_listener(Name),
            ?assertMatch({error, _}, gen_tcp:connect({127, 0, 0, 1}, Port, [], 1000));
        _ ->
            {skip, "the wait without a timeout is Linux's inet driver's"}
    end.

%% A listener `Name' with two acceptors, after `Requests' requests.
two_acceptors(Name, Requests, Config) ->
    {Sup, Port} = falco_test_listener:start(Name, echo(?config(recorder, Config)),
                                            #{num_acceptors => 2}),
    [#{status := 200} = hello(Port) || _ <- lists:seq(1, Requests)],
    Sup.

count_ins(Parent, N) ->
    receive
        {trace, _, in, _} -> count_ins(Parent, N + 1);
        {trace, _, _, _} -> count_ins(Parent, N);
        count -> Parent ! {ins, N}
    end.

%% The processes of `Acceptors' waiting in accept.
waiting(Acceptors) ->
    [P || P <- processes(),
          {current_function, {falco_conn, wait_accept, 2}} <- [process_info(P, current_function)],
          {dictionary, D} <- [process_info(P, dictionary)],
          lists:any(fun(A) -> lists:member(A, proplists:get_value('$ancestors', D, [])) end,
                    Acceptors)].

old_heap(P) ->
    {garbage_collection_info, Info} = process_info(P, garbage_collection_info),
    proplists:get_value(old_heap_block_size, Info).

%% The read buffer of the server's end of client socket `Sock'.
server_buffer(Sock) ->
    {ok, Local} = inet:port(Sock),
    [Buffer] = [B || P <- processes(), {falco_conn, init, _} <- [proc_lib:initial_call(P)],
                     {links, Links} <- [process_info(P, links)], Port <- Links, is_port(Port),
                     {ok, {_, Peer}} <- [inet:peername(Port)], Peer =:= Local,
                     {ok, [{buffer, B}]} <- [inet:getopts(Port, [buffer])]],
    Buffer.

conn_binary(P) ->
    case {proc_lib:initial_call(P), process_info(P, binary)} of
        {{falco_conn, init, _}, {binary, Bins}} -> lists:sum([Size || {_, Size, _} <- Bins]);
        _ -> 0
    end.

%% -- limits --------------------------------------------------------------------------

%% max_request_line (RFC 9112 §3, RFC 9110 §15.5.15): 414 over the limit,
%% served under it.
limit_request_line_414(Config) ->
    Port = start(limit_request_line_414, Config, #{max_request_line => 64}),
    Fits = binary:copy(<<"a">>, 40),
    TooLong = binary:copy(<<"a">>, 100),
    #{status := 200} = served(Port, <<"GET /", Fits/binary, " HTTP/1.1\r\n" ?HOST "\r\n">>),
    rejected(Config, Port, <<"GET /", TooLong/binary, " HTTP/1.1\r\n" ?HOST "\r\n">>, 414),
    %% a long line without its end yet is refused as soon as it is too long
    Sock = ?C:connect(Port),
    ?C:send(Sock, <<"GET /", TooLong/binary>>),
    {ok, #{status := 414}} = ?C:recv_response(Sock, #{timeout => 5000}),
    ?C:close(Sock).

%% max_header_line (RFC 6585 §5, RFC 9110 §15.5): 431 for a field line
%% over the limit.
limit_header_line_431(Config) ->
    Port = start(limit_header_line_431, Config, #{max_header_line => 64}),
    Fits = binary:copy(<<"v">>, 50),
    TooLong = binary:copy(<<"v">>, 100),
    #{status := 200} = served(Port, <<"GET / HTTP/1.1\r\n" ?HOST "X-A: ", Fits/binary, "\r\n"
                                                                                       "\r\n">>),
    rejected(Config, Port, <<"GET / HTTP/1.1\r\n" ?HOST "X-A: ", TooLong/binary, "\r\n\r\n">>, 431).

%% max_header_block (RFC 6585 §5): 431 when the fields together are too
%% large although each line is short.
limit_header_block_431(Config) ->
    Port = start(limit_header_block_431, Config, #{max_header_block => 256}),
    Fields = fun(N) -> [[<<"X-F">>, integer_to_binary(I), <<": ">>, binary:copy(<<"v">>, 30),
                         <<"\r\n">>] || I <- lists:seq(1, N)] end,
    #{status := 200} = served(Port, [<<"GET / HTTP/1.1\r\n" ?HOST>>, Fields(4), <<"\r\n">>]),
    rejected(Config, Port, [<<"GET / HTTP/1.1\r\n" ?HOST>>, Fields(10), <<"\r\n">>], 431).

%% max_header_count (RFC 6585 §5): 431 for too many fields.
limit_header_count_431(Config) ->
    Port = start(limit_header_count_431, Config, #{max_header_count => 5}),
    Fields = fun(N) -> [[<<"X-F">>, integer_to_binary(I), <<": v\r\n">>]
                        || I <- lists:seq(1, N)] end,
    #{status := 200} = served(Port, [<<"GET / HTTP/1.1\r\n" ?HOST>>, Fields(4), <<"\r\n">>]),
    rejected(Config, Port, [<<"GET / HTTP/1.1\r\n" ?HOST>>, Fields(5), <<"\r\n">>], 431).

%% max_body (RFC 9110 §15.5.14): a Content-Length over the limit is 413
%% before the handler runs; at the limit the body is served.
limit_body_413(Config) ->
    Port = start(limit_body_413, Config, #{max_body => 100}),
    Body = binary:copy(<<"b">>, 100),
    #{status := 200, body := Body} =
        served(Port, [<<"POST / HTTP/1.1\r\n" ?HOST "Content-Length: 100\r\n\r\n">>, Body]),
    rejected(Config, Port, [<<"POST / HTTP/1.1\r\n" ?HOST "Content-Length: 101\r\n\r\n">>,
                            Body, <<"b">>], 413).

%% max_body (RFC 9110 §15.5.14, RFC 9112 §9.6): a client still uploading a
%% body far over the limit, and reading as it goes, receives the 413 before
%% the connection closes (falco half-closes and lingers instead of resetting
%% the connection under the response).
limit_body_413_while_uploading(Config) ->
    Port = start(limit_body_413_while_uploading, Config, #{max_body => 1000}),
    Sock = ?C:connect(Port),
    Size = 8000000,
    Head = [<<"POST / HTTP/1.1\r\n" ?HOST "Content-Length: ">>, integer_to_binary(Size),
            <<"\r\n\r\n">>],
    Uploader = spawn(fun() -> _ = gen_tcp:send(Sock, [Head, binary:copy(<<"u">>, Size)]) end),
    try
        {ok, R} = ?C:recv_response(Sock, #{timeout => 3000}),
        #{status := 413} = R,
        ?assert(?C:has_token(<<"connection">>, <<"close">>, R)),
        ?assertEqual([], calls(Config))
    after
        exit(Uploader, kill),
        ?C:close(Sock)
    end.

%% max_body (RFC 9110 §15.5.14): a chunked body that grows past the limit
%% is 413 when the handler reads it.
limit_body_chunked_413(Config) ->
    Port = start(limit_body_chunked_413, Config, #{max_body => 100}),
    Chunk = [<<"32\r\n">>, binary:copy(<<"c">>, 50), <<"\r\n">>],
    #{status := 200} = served(Port, [?CHUNKED_HEAD, Chunk, Chunk, <<"0\r\n\r\n">>]),
    rejected(Config, Port, [?CHUNKED_HEAD, Chunk, Chunk, Chunk, <<"0\r\n\r\n">>], 413).

%% RFC 9112 §7.1.2: the trailer section has the header section's limits:
%% max_header_count ...
limit_trailers_431(Config) ->
    Port = start(limit_trailers_431, Config, #{max_header_count => 5}),
    Trailers = [[<<"X-T">>, integer_to_binary(I), <<": v\r\n">>] || I <- lists:seq(1, 6)],
    rejected(Config, Port, [?CHUNKED_ABC, Trailers, <<"\r\n">>], 431).

%% ... max_header_line (also when the long line has not ended yet) ...
limit_trailer_line_431(Config) ->
    Port = start(limit_trailer_line_431, Config, #{max_header_line => 64}),
    #{status := 200} = served(Port, [?CHUNKED_ABC, <<"X-T: short\r\n\r\n">>]),
    rejected(Config, Port, [?CHUNKED_ABC, <<"X-T: ">>, binary:copy(<<"t">>, 100), <<"\r\n\r\n">>],
             431),
    Sock = ?C:connect(Port),
    ?C:send(Sock, [?CHUNKED_ABC, <<"X-T: ">>, binary:copy(<<"t">>, 100)]),
    {ok, #{status := 431}} = ?C:recv_response(Sock, #{timeout => 5000}),
    ?C:close(Sock).

%% ... and max_header_block.
limit_trailer_block_431(Config) ->
    Port = start(limit_trailer_block_431, Config, #{max_header_block => 200}),
    Trailers = [[<<"X-T">>, integer_to_binary(I), <<": ">>, binary:copy(<<"t">>, 30), <<"\r\n">>]
                || I <- lists:seq(1, 8)],
    rejected(Config, Port, [?CHUNKED_ABC, Trailers, <<"\r\n">>], 431).
