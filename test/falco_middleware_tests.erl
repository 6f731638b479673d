%% EUnit tests for falco_middleware (composition order, short circuits,
%% module middleware with prepare/1, the response editing helpers on every
%% kind of response) and the built-in middleware: falco_access_log,
%% falco_request_id, falco_cors (Fetch §3.2) and falco_security_headers
%% (RFC 6797 §7.2 for HSTS over https only).
-module(falco_middleware_tests).
-include_lib("eunit/include/eunit.hrl").

%% middleware callbacks (this module is a middleware too) and a logger handler
-export([prepare/1, call/3, log/2, handle/2, quiet/2]).

req() ->
    req(<<"GET">>, []).

req(Method, Headers) ->
    #{method => Method, path => <<"/p">>, qs => <<>>, host => <<"example.com">>,
      headers => Headers, scheme => http, version => {1, 1},
      peer => {{127, 0, 0, 1}, 5555}}.

ok_handler() ->
    fun(_Req) -> {200, [{<<"content-type">>, <<"text/plain">>}], <<"hello">>} end.

%% -- composition ---------------------------------------------------------------------

%% A middleware recording its name on the way in (in the request) and out
%% (as a response field).
tracer(Name) ->
    fun(Req, Next) ->
            Resp = Next(Req#{trace => maps:get(trace, Req, []) ++ [Name]}),
            falco_middleware:add_headers(Resp, [{<<"x-out">>, atom_to_binary(Name)}])
    end.

%% middleware behaviour: prepare/1 runs once per composition
prepare(Opts = #{tag := Tag}) ->
    self() ! {prepared, Tag},
    Opts;
prepare(bad) ->
    erlang:error(bad_opts).

call(Req, Next, #{tag := Tag}) ->
    Trace = tracer(Tag),
    Trace(Req, Next).

order_test() ->
    Handler = fun(Req) -> {200, [], maps:get(trace, Req)} end,
    F = falco_middleware:compose([tracer(a), {?MODULE, #{tag => b}}, tracer(c)], Handler),
    ?assertEqual({200, [{<<"x-out">>, <<"c">>}, {<<"x-out">>, <<"b">>}, {<<"x-out">>, <<"a">>}],
                  [a, b, c]},
                 F(req())),
    %% composed once: prepare/1 ran once, calls don't run it again
    ?assertEqual([b], flush_prepared()),
    _ = F(req()),
    ?assertEqual([], flush_prepared()).

flush_prepared() ->
    receive {prepared, T} -> [T | flush_prepared()] after 0 -> [] end.

%% A middleware module without prepare/1 gets its options as they are.
no_prepare_test() ->
    F = falco_middleware:compose([{falco_mw_plain, <<"x-plain">>}], ok_handler()),
    ?assertMatch({200, [_, {<<"x-plain">>, <<"yes">>}], <<"hello">>}, F(req())).

empty_chain_test() ->
    F = falco_middleware:compose([], ok_handler()),
    ?assertEqual((ok_handler())(req()), F(req())).

short_circuit_test() ->
    Deny = fun(_Req, _Next) -> {403, [], <<"no">>} end,
    Handler = fun(_) -> erlang:error(must_not_run) end,
    F = falco_middleware:compose([tracer(a), Deny], Handler),
    ?assertEqual({403, [{<<"x-out">>, <<"a">>}], <<"no">>}, F(req())).

handler_forms_test() ->
    ?assertEqual({200, [], {handled, undefined}},
                 (falco_middleware:compose([], ?MODULE))(req())),
    ?assertEqual({200, [], {handled, st}},
                 (falco_middleware:compose([], {?MODULE, st}))(req())),
    ?assertError({invalid_handler, {not_a_handler, 42}}, falco_middleware:compose([], 42)).

%% A handler module is checked when the chain is composed: one that does
%% not exist or does not export handle/2 is refused, naming it; a module
%% exporting prepare_state/1 gets its state prepared once.
handler_checked_test_() ->
    [?_assertEqual({error, {no_such_module, no_such_handler_xyz}},
                   falco_middleware:prepare_handler(no_such_handler_xyz)),
     ?_assertEqual({error, {no_such_module, no_such_handler_xyz}},
                   falco_middleware:prepare_handler({no_such_handler_xyz, st})),
     ?_assertEqual({error, {not_exported, lists, {handle, 2}}},
                   falco_middleware:prepare_handler(lists)),
     ?_assertEqual({error, {not_a_handler, "mod"}}, falco_middleware:prepare_handler("mod")),
     ?_assertMatch({ok, {falco_static, #{real_root := _}}},
                   falco_middleware:prepare_handler({falco_static, #{root => "."}})),
     ?_assertEqual({error, {invalid_state, falco_static,
                            {root, enoent, filename:absname("no/such/dir_xyz")}}},
                   falco_middleware:prepare_handler({falco_static, #{root => "no/such/dir_xyz"}})),
     ?_assertError({invalid_handler, {no_such_module, no_such_handler_xyz}},
                   falco_middleware:compose([], no_such_handler_xyz))].

%% falco_handler callback used by handler_forms_test
handle(_Req, State) ->
    {200, [], {handled, State}}.

module_shorthand_test() ->
    %% a bare module is {Module, #{}}
    F = falco_middleware:compose([falco_security_headers], ok_handler()),
    {200, Headers, _} = F(req()),
    ?assertEqual(<<"nosniff">>, proplists:get_value(<<"x-content-type-options">>, Headers)).

invalid_middleware_test_() ->
    H = ok_handler(),
    [?_assertError({invalid_middleware, 42, not_a_middleware}, falco_middleware:compose([42], H)),
     ?_assertError({invalid_middleware, nope, not_a_list}, falco_middleware:compose(nope, H)),
     ?_assertError({invalid_middleware, {no_such_mod_xyz, #{}}, {no_such_module, no_such_mod_xyz}},
                   falco_middleware:compose([{no_such_mod_xyz, #{}}], H)),
     %% a module without call/3 is not a middleware
     ?_assertError({invalid_middleware, {lists, #{}}, {not_exported, lists, {call, 3}}},
                   falco_middleware:compose([lists], H)),
     ?_assertEqual(ok, falco_middleware:check([])),
     ?_assertEqual(ok, falco_middleware:check([fun(R, N) -> N(R) end, falco_request_id])),
     ?_assertEqual({error, {invalid_middleware, 42, not_a_middleware}}, falco_middleware:check([42])),
     ?_assertEqual({error, {invalid_middleware, x, not_a_list}}, falco_middleware:check(x)),
     %% the entry, and what its prepare/1 raised for its options
     ?_assertEqual({error, {invalid_middleware, {?MODULE, bad}, {invalid_options, bad_opts}}},
                   falco_middleware:check([{?MODULE, bad}]))].

%% -- editing responses ------------------------------------------------------------------

responses() ->
    Fun = fun(_Send) -> ok end,
    [{{200, [{<<"a">>, <<"1">>}], <<"body">>}, fun(H) -> {200, H, <<"body">>} end},
     {{200, [{<<"a">>, <<"1">>}], {file, "/x"}}, fun(H) -> {200, H, {file, "/x"}} end},
     {{206, [{<<"a">>, <<"1">>}], {file, "/x", 1, 2}}, fun(H) -> {206, H, {file, "/x", 1, 2}} end},
     {{stream, 200, [{<<"a">>, <<"1">>}], Fun}, fun(H) -> {stream, 200, H, Fun} end}].

add_headers_test_() ->
    [?_assertEqual(Make([{<<"a">>, <<"1">>}, {<<"b">>, <<"2">>}]),
                   falco_middleware:add_headers(Resp, [{<<"b">>, <<"2">>}]))
     || {Resp, Make} <- responses()]
        ++ [?_assertEqual(not_a_response, falco_middleware:add_headers(not_a_response, [{<<"b">>, <<"2">>}])),
            ?_assertEqual({200, [], <<>>}, falco_middleware:add_headers({200, [], <<>>}, []))].

set_headers_test_() ->
    [?_assertEqual(Make([{<<"A">>, <<"old">>}, {<<"b">>, <<"new">>}]),
                   falco_middleware:set_headers(Make([{<<"A">>, <<"old">>}, {<<"B">>, <<"old">>},
                                                      {<<"b">>, <<"old">>}]),
                                                [{<<"b">>, <<"new">>}]))
     || {_, Make} <- responses()]
        ++ [?_assertEqual(oops, falco_middleware:set_headers(oops, [{<<"b">>, <<"2">>}])),
            %% a field that is not a binary is left for the pipeline to refuse
            ?_assertEqual({200, [{"b", <<"1">>}, {<<"b">>, <<"2">>}], <<>>},
                          falco_middleware:set_headers({200, [{"b", <<"1">>}], <<>>},
                                                       [{<<"b">>, <<"2">>}]))].

default_headers_test_() ->
    [?_assertEqual(Make([{<<"X-Frame-Options">>, <<"DENY">>}, {<<"c">>, <<"3">>}]),
                   falco_middleware:default_headers(Make([{<<"X-Frame-Options">>, <<"DENY">>}]),
                                                    [{<<"x-frame-options">>, <<"SAMEORIGIN">>},
                                                     {<<"c">>, <<"3">>}]))
     || {_, Make} <- responses()]
        ++ [?_assertEqual({200, [{<<"ab">>, <<"x">>}, {<<"a">>, <<"1">>}], <<>>},
                          falco_middleware:default_headers({200, [{<<"ab">>, <<"x">>}], <<>>},
                                                           [{<<"a">>, <<"1">>}])),
            ?_assertEqual({200, [bad, {<<"a">>, <<"1">>}], <<>>},
                          falco_middleware:default_headers({200, [bad], <<>>},
                                                           [{<<"a">>, <<"1">>}])),
            ?_assertEqual({1, 2}, falco_middleware:default_headers({1, 2}, [{<<"a">>, <<"1">>}]))].

status_and_map_stream_test() ->
    Fun = fun(Send) -> Send(<<"x">>) end,
    ?assertEqual(200, falco_middleware:status({200, [], <<>>})),
    ?assertEqual(201, falco_middleware:status({stream, 201, [], Fun})),
    ?assertEqual(undefined, falco_middleware:status(nope)),
    Resp = falco_middleware:map_stream({stream, 200, [], Fun},
                                       fun(F) -> fun(Send) -> F(fun(D) -> Send([D, D]) end) end end),
    {stream, 200, [], Wrapped} = Resp,
    ?assertEqual(<<"xx">>, iolist_to_binary(Wrapped(fun(D) -> D end))),
    ?assertEqual({200, [], <<>>}, falco_middleware:map_stream({200, [], <<>>}, fun(F) -> F end)).

%% -- access log --------------------------------------------------------------------------

%% logger handler callback: forwards the events of the test process
log(#{meta := #{pid := Pid}} = Event, #{config := #{pid := Pid}}) ->
    Pid ! {logged, Event};
log(_Event, _Config) ->
    ok.

with_log(Test) ->
    {setup,
     fun() ->
             ok = logger:set_module_level(falco_access_log, all),
             %% keep the lines off the console while capturing them
             _ = logger:add_handler_filter(default, falco_mw_test, {fun ?MODULE:quiet/2, []}),
             ok
     end,
     fun(_) ->
             _ = logger:remove_handler_filter(default, falco_mw_test),
             ok = logger:unset_module_level(falco_access_log)
     end,
     fun(_) -> Test end}.

quiet(#{meta := #{mfa := {falco_access_log, _, _}}}, _) -> stop;
quiet(_Event, _) -> ignore.

capture(Fun) ->
    Id = list_to_atom("falco_mw_test_" ++ integer_to_list(erlang:unique_integer([positive]))),
    ok = logger:add_handler(Id, ?MODULE, #{config => #{pid => self()}, level => all,
                                           filter_default => log, filters => []}),
    try
        Result = Fun(),
        {Result, events()}
    after
        ok = logger:remove_handler(Id)
    end.

events() ->
    receive {logged, E} -> [E | events()] after 50 -> [] end.

message(#{msg := {Format, Args}}) -> iolist_to_binary(io_lib:format(Format, Args)).

access_log_test_() ->
    with_log(
      [{"full reply: one line, metadata",
        fun() ->
                F = falco_middleware:compose([{falco_access_log, #{level => notice}}], ok_handler()),
                {Resp, [E]} = capture(fun() -> F(req()) end),
                ?assertEqual((ok_handler())(req()), Resp),
                #{level := notice, meta := Meta} = E,
                ?assertMatch(#{method := <<"GET">>, path := <<"/p">>, status := 200, bytes := 5,
                               peer := <<"127.0.0.1:5555">>}, Meta),
                ?assert(is_integer(maps:get(duration_us, Meta))),
                ?assertNot(maps:is_key(domain, Meta)),
                ?assertMatch(<<"GET /p 200 5 B ", _/binary>>, message(E))
        end},
       {"no peer",
        fun() ->
                F = falco_middleware:compose([falco_access_log], ok_handler()),
                {_, [#{meta := #{peer := undefined}}]} =
                    capture(fun() -> F(maps:remove(peer, req())) end)
        end},
       {"request id and domain in the metadata",
        fun() ->
                F = falco_middleware:compose([falco_request_id,
                                              {falco_access_log, #{domain => [falco, access]}}],
                                             ok_handler()),
                {{200, H, _}, [E]} = capture(fun() -> F(req()) end),
                #{level := info, meta := #{request_id := Id, domain := [falco, access]}} = E,
                ?assertEqual(list_to_binary(Id), proplists:get_value(<<"x-request-id">>, H))
        end},
       {"HEAD, 204, 304 and files",
        fun() ->
                Cases = [{req(<<"HEAD">>, []), {200, [], <<"body">>}, 0},
                         {req(), {204, [], <<"ignored">>}, 0},
                         {req(), {304, [], <<>>}, 0},
                         {req(), {206, [], {file, "/x", 10, 20}}, 20},
                         {req(), {200, [], {file, "/x"}}, undefined},
                         {req(<<"HEAD">>, []), {stream, 200, [], fun(_) -> erlang:error(never) end}, 0},
                         {req(), {stream, 204, [], fun(_) -> erlang:error(never) end}, 0}],
                [begin
                     F = falco_middleware:compose([falco_access_log], fun(_) -> Resp end),
                     {Resp, [#{meta := #{bytes := Bytes}} = E]} = capture(fun() -> F(Req) end),
                     case Bytes of
                         undefined -> ?assertMatch(<<"GET /p 200 - ", _/binary>>, message(E));
                         _ -> ok
                     end
                 end || {Req, Resp, Bytes} <- Cases]
        end},
       {"invalid response is logged as the 500 it becomes",
        fun() ->
                F = falco_middleware:compose([falco_access_log], fun(_) -> nonsense end),
                {nonsense, [#{meta := #{status := 500}}]} = capture(fun() -> F(req()) end)
        end},
       %% RFC 9110 §15 (a handler's status is final, 200..599), §5.5 (no CR,
       %% LF or NUL in a field value): the pipeline answers such a response
       %% with 500 after the middleware saw it; the log says 500 too, with
       %% the size of the 500's body (none for HEAD), never the handler's
       %% status.
       {"a response the pipeline refuses is logged as the 500 it sends",
        fun() ->
                Never = fun(_) -> erlang:error(never) end,
                Bad = [{99, [], <<"hi">>},
                       {1000, [], <<"hi">>},
                       {101, [], <<>>},
                       {200, [{<<"x-a">>, <<"a\r\nset-cookie: x=1">>}], <<"hi">>},
                       {200, [{<<"x-a">>, [<<"a">>, <<"\n">>]}], <<"hi">>},
                       {200, [{<<"bad name">>, <<"v">>}], <<"hi">>},
                       {200, [{<<"x-a">>, <<"b\0">>}], <<"hi">>},
                       {200, not_a_list, <<"hi">>},
                       {200, [], not_iodata},
                       {200, [], {file, "/x", -1, 3}},
                       {stream, 99, [], Never},
                       {stream, 200, [{<<"x-a">>, <<"\r\n">>}], Never},
                       {stream, 200, [], not_a_fun}],
                [begin
                     F = falco_middleware:compose([falco_access_log], fun(_) -> Resp end),
                     {Resp, [#{meta := #{status := 500, bytes := 22}} = E]} =
                         capture(fun() -> F(req()) end),
                     ?assertMatch(<<"GET /p 500 22 B ", _/binary>>, message(E)),
                     {Resp, [#{meta := #{status := 500, bytes := 0}}]} =
                         capture(fun() -> F(req(<<"HEAD">>, [])) end),
                     ?assertMatch({error, _}, falco_pipeline:check_response(Resp))
                 end || Resp <- Bad],
                %% Valid ones keep their status (lowercased names, integer
                %% and iolist values are fine).
                [begin
                     F = falco_middleware:compose([falco_access_log], fun(_) -> Resp end),
                     {Resp, [#{meta := #{status := Status}}]} = capture(fun() -> F(req()) end)
                 end || {Status, Resp} <- [{200, {200, [{<<"X-A">>, 5}], <<"hi">>}},
                                           {599, {599, [{<<"x-a">>, [<<"a">>, $b]}], <<>>}},
                                           {204, {204, [], not_iodata}}]]
        end},
       {"streams are logged when their function returns, with the bytes sent",
        fun() ->
                Stream = {stream, 200, [], fun(Send) -> Send(<<"abc">>), Send([<<"de">>]), ok end},
                F = falco_middleware:compose([falco_access_log], fun(_) -> Stream end),
                {{stream, 200, [], Fun}, []} = capture(fun() -> F(req()) end),
                {ok, [#{meta := #{bytes := 5, status := 200}}]} =
                    capture(fun() -> Fun(fun(_) -> ok end) end),
                Crash = {stream, 200, [], fun(Send) -> Send(<<"ab">>), erlang:error(boom) end},
                G = falco_middleware:compose([falco_access_log], fun(_) -> Crash end),
                {{stream, 200, [], CrashFun}, []} = capture(fun() -> G(req()) end),
                {caught, [#{meta := #{bytes := 2}}]} =
                    capture(fun() ->
                                    try CrashFun(fun(_) -> ok end)
                                    catch error:boom -> caught
                                    end
                            end)
        end},
       {"a crash is logged as 500 and passed on",
        fun() ->
                F = falco_middleware:compose([falco_access_log], fun(_) -> erlang:error(boom) end),
                {caught, [#{meta := #{status := 500, bytes := undefined}}]} =
                    capture(fun() -> try F(req()) catch error:boom -> caught end end),
                G = falco_middleware:compose([falco_access_log],
                                             fun(_) -> throw({falco_error, content_too_large}) end),
                {caught, [#{meta := #{status := 413}}]} =
                    capture(fun() ->
                                    try G(req()) catch throw:{falco_error, content_too_large} -> caught end
                            end),
                U = falco_middleware:compose([falco_access_log],
                                             fun(_) -> throw({falco_error, strange}) end),
                {caught, [#{meta := #{status := 500}}]} =
                    capture(fun() -> try U(req()) catch throw:{falco_error, strange} -> caught end end)
        end},
       {"options are checked",
        fun() ->
                [?assertError({invalid_middleware, _, {invalid_options, {invalid_option, falco_access_log, _}}},
                              falco_middleware:compose([{falco_access_log, O}], ok_handler()))
                 || O <- [#{level => loud}, #{colour => red}, #{domain => x}, #{domain => ["x"]},
                          not_a_map]]
        end}]).

%% -- request id --------------------------------------------------------------------------

request_id_test_() ->
    Echo = fun(Req) ->
                   {200, [{<<"x-request-id">>, <<"handler's">>}],
                    {falco_req:request_id(Req), logger:get_process_metadata()}}
           end,
    Run = fun(Opts, Headers) ->
                  (falco_middleware:compose([{falco_request_id, Opts}], Echo))(req(<<"GET">>, Headers))
          end,
    [{"generated: 32 hex digits, in the request, the response and the metadata",
      fun() ->
              undefined = logger:get_process_metadata(),
              {200, [{<<"x-request-id">>, Id}], {Id, #{request_id := IdString}}} = Run(#{}, []),
              ?assertEqual(binary_to_list(Id), IdString),
              ?assertMatch(<<_:32/binary>>, Id),
              ?assert(lists:all(fun(C) -> lists:member(C, "0123456789abcdef") end,
                                binary_to_list(Id))),
              %% metadata restored afterwards
              ?assertEqual(undefined, logger:get_process_metadata()),
              {200, [{_, Id2}], _} = Run(#{}, []),
              ?assertNotEqual(Id, Id2)
      end},
     {"existing metadata is kept and restored",
      fun() ->
              logger:set_process_metadata(#{mine => 1}),
              try
                  {200, _, {Id, #{mine := 1, request_id := IdString}}} = Run(#{}, []),
                  ?assertEqual(binary_to_list(Id), IdString),
                  ?assertEqual(#{mine => 1}, logger:get_process_metadata())
              after
                  logger:unset_process_metadata()
              end
      end},
     {"a valid incoming id is used",
      fun() ->
              In = <<"abc-DEF_1.2:3+4/5=6@7">>,
              ?assertMatch({200, [{<<"x-request-id">>, In}], {In, _}},
                           Run(#{}, [{<<"x-request-id">>, In}]))
      end},
     {"an invalid incoming id is replaced",
      fun() ->
              [begin
                   {200, [{_, Id}], _} = Run(#{}, [{<<"x-request-id">>, Bad}]),
                   ?assertNotEqual(Bad, Id),
                   ?assertEqual(32, byte_size(Id))
               end || Bad <- [<<>>, <<"a b">>, <<"a\"b">>, <<"<script>">>, binary:copy(<<"a">>, 129),
                              <<"é"/utf8>>]],
              ?assert(falco_request_id:is_valid(binary:copy(<<"a">>, 128))),
              ?assertNot(falco_request_id:is_valid(not_a_binary))
      end},
     {"trust_incoming => false and a custom header",
      fun() ->
              {200, [{<<"x-request-id">>, <<"handler's">>}, {<<"x-trace">>, Id}], _} =
                  Run(#{trust_incoming => false, header => <<"x-trace">>},
                      [{<<"x-trace">>, <<"given">>}]),
              ?assertNotEqual(<<"given">>, Id)
      end},
     {"streams run with the id in the metadata",
      fun() ->
              Stream = fun(_Req) ->
                               {stream, 200, [], fun(Send) -> Send(logger:get_process_metadata()) end}
                       end,
              F = falco_middleware:compose([falco_request_id], Stream),
              {stream, 200, [{<<"x-request-id">>, Id}], Fun} = F(req()),
              ?assertEqual(#{request_id => binary_to_list(Id)}, Fun(fun(Data) -> Data end)),
              ?assertEqual(undefined, logger:get_process_metadata())
      end},
     {"metadata restored after a crash",
      fun() ->
              F = falco_middleware:compose([falco_request_id], fun(_) -> erlang:error(boom) end),
              ?assertError(boom, F(req())),
              ?assertEqual(undefined, logger:get_process_metadata())
      end},
     {"options are checked",
      fun() ->
              [?assertError({invalid_middleware, _, {invalid_options, {invalid_option, falco_request_id, _}}},
                            falco_middleware:compose([{falco_request_id, O}], Echo))
               || O <- [#{header => <<"X-Upper">>}, #{header => <<>>}, #{header => "x"},
                        #{trust_incoming => yes}, #{colour => red}, []]]
      end}].

%% -- CORS --------------------------------------------------------------------------------

cors(Opts, Method, Headers) ->
    Handler = fun(_) -> {200, [{<<"content-type">>, <<"text/plain">>}], <<"handled">>} end,
    (falco_middleware:compose([{falco_cors, Opts}], Handler))(req(Method, Headers)).

origin(O) -> {<<"origin">>, O}.

preflight_headers(O, Method) ->
    [origin(O), {<<"access-control-request-method">>, Method}].

cors_test_() ->
    Plain = {200, [{<<"content-type">>, <<"text/plain">>}], <<"handled">>},
    [{"no Origin: untouched",
      ?_assertEqual(Plain, cors(#{}, <<"GET">>, []))},
     {"any origin",
      ?_assertEqual({200, [{<<"content-type">>, <<"text/plain">>},
                           {<<"access-control-allow-origin">>, <<"*">>}], <<"handled">>},
                    cors(#{}, <<"GET">>, [origin(<<"https://a.example">>)]))},
     {"listed origin: echoed, with Vary and credentials",
      ?_assertEqual({200, [{<<"content-type">>, <<"text/plain">>},
                           {<<"access-control-allow-origin">>, <<"https://A.example">>},
                           {<<"access-control-allow-credentials">>, <<"true">>},
                           {<<"access-control-expose-headers">>, <<"x-total, x-page">>},
                           {<<"vary">>, <<"Origin">>}], <<"handled">>},
                    cors(#{origins => [<<"https://a.example">>], credentials => true,
                           expose => [<<"x-total">>, <<"x-page">>]},
                         <<"GET">>, [origin(<<"https://A.example">>)]))},
     {"origin not listed: untouched, and its preflight reaches the handler",
      [?_assertEqual(Plain, cors(#{origins => [<<"https://a.example">>]}, <<"GET">>,
                                 [origin(<<"https://evil.example">>)])),
       ?_assertEqual(Plain, cors(#{origins => [<<"https://a.example">>]}, <<"OPTIONS">>,
                                 preflight_headers(<<"https://evil.example">>, <<"PUT">>)))]},
     %% RFC 9110 §5.5: a field value may hold obs-text, bytes that are not
     %% UTF-8; such an Origin is compared as bytes and is not listed
     {"origin with bytes that are not UTF-8: untouched, no crash",
      [?_assertEqual(Plain, cors(#{origins => [<<"https://a.example">>]}, <<"GET">>,
                                 [origin(<<"https://A.example", 16#FF>>)])),
       ?_assertEqual(Plain, cors(#{origins => [<<"https://a.example">>]}, <<"GET">>,
                                 [origin(<<"https://", 16#C3, ".example">>)]))]},
     {"fun origins",
      [?_assertMatch({200, [_, {<<"access-control-allow-origin">>, <<"https://ok.example">>},
                            {<<"vary">>, <<"Origin">>}], _},
                     cors(#{origins => fun(O) -> O =:= <<"https://ok.example">> end}, <<"GET">>,
                          [origin(<<"https://ok.example">>)])),
       ?_assertEqual(Plain, cors(#{origins => fun(_) -> false end}, <<"GET">>,
                                 [origin(<<"https://ok.example">>)]))]},
     {"any origin with credentials echoes the origin",
      ?_assertMatch({200, [_, {<<"access-control-allow-origin">>, <<"null">>},
                           {<<"access-control-allow-credentials">>, <<"true">>},
                           {<<"vary">>, <<"Origin">>}], _},
                    cors(#{credentials => true}, <<"GET">>, [origin(<<"null">>)]))},
     {"the handler's own field wins",
      ?_assertMatch({200, [{<<"Access-Control-Allow-Origin">>, <<"x">>}], _},
                    (falco_middleware:compose(
                       [falco_cors],
                       fun(_) -> {200, [{<<"Access-Control-Allow-Origin">>, <<"x">>}], <<>>} end))(
                      req(<<"GET">>, [origin(<<"https://a.example">>)])))},
     {"preflight answered without the handler, reflecting requested headers",
      ?_assertEqual({204, [{<<"access-control-allow-origin">>, <<"*">>},
                           {<<"access-control-allow-methods">>,
                            <<"GET, HEAD, POST, PUT, PATCH, DELETE">>},
                           {<<"access-control-allow-headers">>, <<"content-type, x-a">>},
                           {<<"vary">>, <<"Access-Control-Request-Headers">>}], <<>>},
                    cors(#{}, <<"OPTIONS">>,
                         preflight_headers(<<"https://a.example">>, <<"PUT">>)
                         ++ [{<<"access-control-request-headers">>, <<"content-type, x-a">>}]))},
     {"preflight with configured lists and max age",
      ?_assertEqual({204, [{<<"access-control-allow-origin">>, <<"https://a.example">>},
                           {<<"access-control-allow-methods">>, <<"GET, PUT">>},
                           {<<"access-control-allow-headers">>, <<"content-type">>},
                           {<<"access-control-max-age">>, <<"600">>},
                           {<<"vary">>, <<"Origin">>}], <<>>},
                    cors(#{origins => [<<"https://a.example">>], methods => [<<"GET">>, <<"PUT">>],
                           headers => [<<"content-type">>], max_age => 600},
                         <<"OPTIONS">>, preflight_headers(<<"https://a.example">>, <<"PUT">>)))},
     {"preflight: reflect with nothing requested, no headers allowed, listed origins",
      [?_assertEqual({204, [{<<"access-control-allow-origin">>, <<"*">>},
                            {<<"access-control-allow-methods">>, <<"GET">>},
                            {<<"vary">>, <<"Access-Control-Request-Headers">>}], <<>>},
                     cors(#{methods => [<<"GET">>]}, <<"OPTIONS">>,
                          preflight_headers(<<"https://a.example">>, <<"GET">>))),
       ?_assertEqual({204, [{<<"access-control-allow-origin">>, <<"*">>},
                            {<<"access-control-allow-methods">>, <<"GET">>}], <<>>},
                     cors(#{methods => [<<"GET">>], headers => []}, <<"OPTIONS">>,
                          preflight_headers(<<"https://a.example">>, <<"GET">>))),
       ?_assertEqual({204, [{<<"access-control-allow-origin">>, <<"https://a.example">>},
                            {<<"access-control-allow-methods">>, <<"GET">>},
                            {<<"access-control-allow-headers">>, <<"x-b">>},
                            {<<"vary">>, <<"Origin, Access-Control-Request-Headers">>}], <<>>},
                     cors(#{methods => [<<"GET">>], origins => [<<"https://a.example">>]},
                          <<"OPTIONS">>,
                          preflight_headers(<<"https://a.example">>, <<"GET">>)
                          ++ [{<<"access-control-request-headers">>, <<"x-b">>}]))]},
     {"OPTIONS without Access-Control-Request-Method is not a preflight",
      ?_assertMatch({200, _, <<"handled">>},
                    cors(#{}, <<"OPTIONS">>, [origin(<<"https://a.example">>)]))},
     {"options are checked",
      [?_assertError({invalid_middleware, _, {invalid_options, {invalid_option, falco_cors, _}}},
                     falco_middleware:compose([{falco_cors, O}], ok_handler()))
       || O <- [#{origins => 42}, #{origins => [<<>>]}, #{origins => [42]},
                #{methods => []}, #{methods => [<<"G T">>]}, #{methods => nope},
                #{headers => [<<>>]}, #{expose => [42]}, #{credentials => yes},
                #{max_age => -1}, #{colour => red}, not_a_map]]}].

%% -- security headers ------------------------------------------------------------------------

secure(Opts, Scheme, Handler) ->
    F = falco_middleware:compose([{falco_security_headers, Opts}], Handler),
    F((req())#{scheme => Scheme}).

security_headers_test_() ->
    Defaults = [{<<"x-content-type-options">>, <<"nosniff">>},
                {<<"x-frame-options">>, <<"SAMEORIGIN">>},
                {<<"referrer-policy">>, <<"strict-origin-when-cross-origin">>}],
    Hsts = {<<"strict-transport-security">>, <<"max-age=31536000; includeSubDomains">>},
    Empty = fun(_) -> {200, [], <<>>} end,
    [{"defaults over http: no HSTS",
      ?_assertEqual({200, Defaults, <<>>}, secure(#{}, http, Empty))},
     {"defaults over https: HSTS",
      ?_assertEqual({200, Defaults ++ [Hsts], <<>>}, secure(#{}, https, Empty))},
     {"handler's own values win (any case)",
      ?_assertEqual({200, [{<<"X-Frame-Options">>, <<"DENY">>}]
                          ++ lists:keydelete(<<"x-frame-options">>, 1, Defaults), <<>>},
                    secure(#{}, http, fun(_) -> {200, [{<<"X-Frame-Options">>, <<"DENY">>}], <<>>} end))},
     {"streams get them too",
      ?_assertMatch({stream, 200, Defaults, _},
                    secure(#{}, http, fun(_) -> {stream, 200, [], fun(_) -> ok end} end))},
     {"configured: CSP, disabled fields, extra, custom HSTS",
      ?_assertEqual({200, [{<<"x-frame-options">>, <<"DENY">>},
                           {<<"content-security-policy">>, <<"default-src 'self'">>},
                           {<<"permissions-policy">>, <<"geolocation=()">>},
                           {<<"strict-transport-security">>, <<"max-age=60">>}], <<>>},
                    secure(#{csp => "default-src 'self'", frame_options => <<"DENY">>,
                             content_type_options => false, referrer_policy => false,
                             hsts => [<<"max-age=">>, <<"60">>],
                             extra => [{<<"Permissions-Policy">>, <<"geolocation=()">>}]},
                           https, Empty))},
     {"HSTS off",
      ?_assertEqual({200, Defaults, <<>>}, secure(#{hsts => false}, https, Empty))},
     {"options are checked",
      [?_assertError({invalid_middleware, _, {invalid_options, {invalid_option, falco_security_headers, _}}},
                     falco_middleware:compose([{falco_security_headers, O}], Empty))
       || O <- [#{csp => <<"a\r\nb">>}, #{csp => <<>>}, #{csp => 42}, #{extra => nope},
                #{extra => [{<<>>, <<"v">>}]}, #{extra => [x]}, #{colour => red}, nope]]}].
