%% EUnit tests for the shared request pipeline (falco_pipeline), through a
%% fake protocol: this module implements the falco_stream callbacks and
%% records every call, so each test sees exactly what the pipeline asked
%% the protocol to send (RFC 9110 semantics, no wire format involved).
-module(falco_pipeline_tests).
-behaviour(falco_stream).
-include_lib("eunit/include/eunit.hrl").

%% the fake stream
-export([send_response/4, send_headers/3, send_data/2, send_end/2, send_file/6,
         read_body/2, trailers/1, switch_protocols/4]).
%% a handler module, and a logger handler that forwards events
-export([handle/2, log/2]).

%% -- the fake stream -------------------------------------------------------------

rec(Call) ->
    put(calls, [Call | get_calls()]),
    ok.

get_calls() ->
    case get(calls) of
        undefined -> [];
        L -> L
    end.

calls() ->
    lists:reverse(erase_calls()).

erase_calls() ->
    case erase(calls) of
        undefined -> [];
        L -> L
    end.

send_response(Status, Headers, Body, S) ->
    rec({response, Status, Headers, iolist_to_binary(Body)}),
    {ok, S}.

send_headers(Status, Headers, #{fail_headers := true}) ->
    rec({headers, Status, Headers}),
    {error, closed};
send_headers(Status, Headers, S) ->
    rec({headers, Status, Headers}),
    {ok, S}.

send_data(Data, _S) ->
    rec({data, iolist_to_binary(Data)}),
    ok.

send_end(Trailers, S) ->
    rec({'end', Trailers}),
    {ok, S}.

send_file(Status, Headers, Fd, Offset, Length, S) ->
    Data = case file:pread(Fd, Offset, Length) of
               {ok, D} -> D;
               eof -> <<>>
           end,
    rec({file, Status, Headers, Offset, Length, Data}),
    {ok, S}.

read_body(_, S) ->
    {ok, <<>>, S}.

switch_protocols(Status, Headers, Upgrade, S) ->
    rec({switch, Status, Headers, maps:without([req], Upgrade)}),
    {ok, S}.

trailers(_S) ->
    [].

%% -- helpers ---------------------------------------------------------------------

req() -> req(<<"GET">>).

req(Method) ->
    #{method => Method, path => <<"/p">>, qs => <<>>, version => {1, 1}, headers => [],
      host => <<"h">>, port => undefined, peer => {{127, 0, 0, 1}, 4321}, scheme => http,
      body => none, listener => test}.

%% Runs Handler for a request and returns the calls the stream saw.
run(Handler) -> run(Handler, req()).

run(Handler, Req) -> run(Handler, Req, #{}).

run(Handler, Req, S) ->
    _ = erase_calls(),
    Result = falco_pipeline:run(Req, Handler, ?MODULE, S),
    {Result, calls()}.

resp(Response) -> resp(Response, req()).

resp(Response, Req) ->
    {{ok, _}, Calls} = run(fun(_) -> Response end, Req),
    Calls.

%% The headers without the Date (checked separately).
no_date(Headers) -> [H || H = {N, _} <- Headers, N =/= <<"date">>].

handle(Req, State) ->
    {200, [], term_to_binary({maps:get(path, Req), State})}.

%% A logger handler that sends each event to the test process.
log(Event, #{config := #{pid := Pid}}) ->
    Pid ! {log, Event},
    ok.

%% Runs Fun with a logger handler capturing events; returns {Result, Log}
%% with the formatted text of every event logged meanwhile.
%% The default handler is muted meanwhile: these errors are expected.
with_log(Fun) ->
    ok = logger:add_handler(falco_pipeline_tests_log, ?MODULE, #{config => #{pid => self()}}),
    Level = case logger:get_handler_config(default) of
                {ok, #{level := L}} -> ok = logger:update_handler_config(default, level, none), L;
                _ -> undefined
            end,
    try
        Result = Fun(),
        {Result, drain_log()}
    after
        _ = logger:remove_handler(falco_pipeline_tests_log),
        _ = Level =/= undefined andalso logger:update_handler_config(default, level, Level)
    end.

drain_log() ->
    receive
        {log, #{msg := {string, S}}} -> [unicode:characters_to_list(S) | drain_log()];
        {log, #{msg := {report, R}}} -> [lists:flatten(io_lib:format("~0p", [R])) | drain_log()];
        {log, #{msg := {Format, Args}}} -> [lists:flatten(io_lib:format(Format, Args)) | drain_log()]
    after 0 -> []
    end.

%% The 500 every invalid response is turned into.
assert_500(Calls) ->
    ?assertMatch([{response, 500, _, <<"Internal Server Error\n">>}], Calls),
    [{response, 500, H, _}] = Calls,
    ?assertEqual(<<"close">>, proplists:get_value(<<"connection">>, H)),
    ?assertEqual(<<"22">>, proplists:get_value(<<"content-length">>, H)).

%% -- handler forms ------------------------------------------------------------------

handler_forms_test() ->
    [{response, 200, _, B1}] = element(2, run({?MODULE, some_state})),
    ?assertEqual({<<"/p">>, some_state}, binary_to_term(B1)),
    [{response, 200, _, B2}] = element(2, run(?MODULE)),
    ?assertEqual({<<"/p">>, undefined}, binary_to_term(B2)),
    [{response, 200, _, <<"fun">>}] = element(2, run(fun(_) -> {200, [], <<"fun">>} end)).

%% -- full replies (RFC 9110 §5, §6.6.1, §8.6) ------------------------------------------

full_reply_test() ->
    [{response, 201, H, <<"hello">>}] =
        resp({201, [{<<"Content-Type">>, <<"text/plain">>}, {<<"X-Multi">>, [<<"a">>, "b"]},
                    {<<"x-n">>, 42}], [<<"hel">>, "lo"]}),
    ?assertEqual([{<<"content-length">>, <<"5">>}, {<<"content-type">>, <<"text/plain">>},
                  {<<"x-multi">>, <<"ab">>}, {<<"x-n">>, <<"42">>}], no_date(H)),
    {_, Date} = lists:keyfind(<<"date">>, 1, H),
    ?assertEqual(falco_clock:date(), Date).

%% A handler's Date is kept (and not doubled); its Content-Length and
%% Transfer-Encoding are replaced by the real length (RFC 9112 §6.1).
user_framing_fields_test() ->
    [{response, 200, H, <<"abc">>}] =
        resp({200, [{<<"date">>, <<"Sun, 06 Nov 1994 08:49:37 GMT">>},
                    {<<"Content-Length">>, <<"999">>}, {<<"transfer-encoding">>, <<"chunked">>}],
              <<"abc">>}),
    ?assertEqual([{<<"content-length">>, <<"3">>},
                  {<<"date">>, <<"Sun, 06 Nov 1994 08:49:37 GMT">>}], H).

%% RFC 9110 §9.3.2: HEAD gets the GET fields, Content-Length included, and no content.
head_reply_test() ->
    [{response, 200, H, <<>>}] = resp({200, [], <<"twelve bytes">>}, req(<<"HEAD">>)),
    ?assertEqual(<<"12">>, proplists:get_value(<<"content-length">>, H)).

%% RFC 9110 §15.3.5, §15.4.5: 204 and 304 have no content and no length.
no_content_test_() ->
    [?_assertEqual([{response, S, [{<<"x">>, <<"1">>}], <<>>}],
                   [{response, S1, no_date(H), B}
                    || {response, S1, H, B} <- resp({S, [{<<"x">>, <<"1">>}, {<<"content-length">>, <<"4">>},
                                                       {<<"transfer-encoding">>, <<"chunked">>}],
                                                     Body})])
     || S <- [204, 304], Body <- [<<"body">>, {file, "no-such-file"}]].

%% -- invalid responses become a 500 and a log line --------------------------------------

bad_responses_test_() ->
    Bad = [{999, [], <<>>}, {199, [], <<>>}, {200, [], not_iodata}, {200, [], [1, 2, -1]},
           {200, not_a_list, <<>>}, {200, [not_a_pair], <<>>}, {200, [{"x", <<"v">>}], <<>>},
           {200, [{<<>>, <<"v">>}], <<>>}, {200, [{<<"bad name">>, <<"v">>}], <<>>},
           {200, [{<<"x:">>, <<"v">>}], <<>>}, {200, [{<<"x">>, <<"a\r\nb">>}], <<>>},
           {200, [{<<"x">>, <<"a\nb">>}], <<>>}, {200, [{<<"x">>, <<0>>}], <<>>},
           {200, [{<<"x">>, [<<"a">>, -1]}], <<>>}, {200, [{<<"x">>, an_atom}], <<>>},
           {200, [{<<"x">>, [<<"a">>, "\r\n"]}], <<>>},
           {stream, 200, [{<<"bad name">>, <<"v">>}], fun(_) -> ok end},
           {stream, 600, [], fun(_) -> ok end}, {stream, 200, [], not_a_fun},
           {200, [], {file, "some-file", -1, 10}}, ok, {200, []}],
    [{lists:flatten(io_lib:format("~0p", [B])),
      fun() ->
              {Calls, Log} = with_log(fun() -> resp(B) end),
              assert_500(Calls),
              %% check_response/1 (what falco_access_log asks) refuses it too.
              ?assertMatch({error, _}, falco_pipeline:check_response(B)),
              ?assertMatch([_], [L || L <- Log, string:find(L, "GET /p from 127.0.0.1:4321") =/= nomatch])
      end} || B <- Bad].

%% check_response/1 accepts what run/4 sends, with the checked fields and
%% the body's size, and nothing of a 204 or 304 body.
check_response_test() ->
    Fun = fun(_) -> ok end,
    ?assertEqual({ok, {full, 201, [{<<"x-a">>, <<"1">>}], false, {iodata, [<<"ab">>, "c"], 3}}},
                 falco_pipeline:check_response({201, [{<<"X-A">>, 1}], [<<"ab">>, "c"]})),
    ?assertEqual({ok, {full, 204, [], false, none}}, falco_pipeline:check_response({204, [], bad})),
    ?assertEqual({ok, {full, 200, [{<<"date">>, <<"d">>}], true, {file, "f", 0, all}}},
                 falco_pipeline:check_response({200, [{<<"date">>, <<"d">>}], {file, "f"}})),
    ?assertEqual({ok, {full, 206, [], false, {file, "f", 2, 3}}},
                 falco_pipeline:check_response({206, [], {file, "f", 2, 3}})),
    ?assertEqual({ok, {stream, 599, [], false, Fun}},
                 falco_pipeline:check_response({stream, 599, [], Fun})).

%% Names may use every tchar (RFC 9110 §5.6.2); uppercase is lowercased.
field_names_test() ->
    Name = <<"X!#$%&'*+-.^_`|~09az">>,
    [{response, 200, H, _}] = resp({200, [{Name, <<"v">>}], <<>>}),
    ?assertEqual(<<"v">>, proplists:get_value(<<"x!#$%&'*+-.^_`|~09az">>, H)),
    ?assertEqual({ok, [{<<"a-b">>, <<"1">>}], false}, falco_pipeline:check_fields([{<<"A-B">>, 1}])),
    ?assertEqual({ok, [{<<"date">>, <<"d">>}], true}, falco_pipeline:check_fields([{<<"Date">>, "d"}])),
    ?assertEqual({error, {bad_headers, #{}}}, falco_pipeline:check_fields(#{})),
    ?assertEqual({error, {bad_header_value, <<"x">>}}, falco_pipeline:check_fields([{<<"x">>, 1.0}])),
    ?assertEqual({error, {bad_header_name, <<"a b">>}}, falco_pipeline:check_fields([{<<"a b">>, <<>>}])),
    ?assertEqual({error, {bad_header, {a, b, c}}}, falco_pipeline:check_fields([{a, b, c}])).

%% Values by the rule requests are read with (RFC 9110 §5.5,
%% falco_grammar:is_field_value/1): no control byte but HTAB, no DEL;
%% obs-text and inner whitespace kept, whitespace at either end trimmed
%% (RFC 9113 §8.2.1 forbids it over HTTP/2).
field_values_test_() ->
    Check = fun(V) -> falco_pipeline:check_fields([{<<"x">>, V}]) end,
    [[?_assertEqual({C, {error, {bad_header_value, <<"x">>}}}, {C, Check(<<"a", C, "b">>)})
      || C <- lists:seq(0, 8) ++ lists:seq(10, 31) ++ [127]],
     ?_assertEqual({ok, [{<<"x">>, <<"a\tb c", 16#80, 16#FF>>}], false},
                   Check(<<"a\tb c", 16#80, 16#FF>>)),
     ?_assertEqual({ok, [{<<"x">>, <<"a b">>}], false}, Check(<<" \ta b \t">>)),
     ?_assertEqual({ok, [{<<"x">>, <<"v">>}], false}, Check([" ", <<"v">>, " "])),
     ?_assertEqual({ok, [{<<"x">>, <<>>}], false}, Check(<<"  ">>)),
     ?_assertEqual({error, {bad_header_value, <<"x">>}}, Check(<<"a\r\nset-cookie: b">>))].

%% -- crashes and limits ---------------------------------------------------------------------

%% A crash is a 500 and one log line naming the request and the error.
crash_test() ->
    {{{ok, _}, Calls}, Log} = with_log(fun() -> run(fun(_) -> error(boom) end) end),
    assert_500(Calls),
    ?assertMatch([_], [L || L <- Log, string:find(L, "crashed on GET /p from 127.0.0.1:4321") =/= nomatch,
                           string:find(L, "boom") =/= nomatch]).

%% Without a peer (a protocol that has none) the log says so.
crash_unknown_peer_test() ->
    {{{ok, _}, Calls}, Log} =
        with_log(fun() -> run(fun(_) -> exit(oops) end, maps:remove(peer, req())) end),
    assert_500(Calls),
    ?assertMatch([_], [L || L <- Log, string:find(L, "GET /p from unknown") =/= nomatch]).

%% A limit hit while reading the body (falco_stream:read_body/2 raises it)
%% is answered with its own status, and asks the protocol to close.
limit_test() ->
    {{ok, _}, [{response, 413, H, <<"Content Too Large\n">>}]} =
        run(fun(_) -> throw({falco_error, content_too_large}) end),
    ?assertEqual(<<"close">>, proplists:get_value(<<"connection">>, H)),
    ?assertEqual(<<"18">>, proplists:get_value(<<"content-length">>, H)),
    %% HEAD: same fields, no content.
    {{ok, _}, [{response, 408, H2, <<>>}]} =
        run(fun(_) -> throw({falco_error, body_timeout}) end, req(<<"HEAD">>)),
    ?assertEqual(<<"16">>, proplists:get_value(<<"content-length">>, H2)).

%% error_reply/4: the protocol's own errors go out the same way; only the
%% method of the request matters (a method not known yet is no HEAD).
error_reply_test() ->
    _ = erase_calls(),
    {ok, s} = falco_pipeline:error_reply(uri_too_long, #{method => undefined}, ?MODULE, s),
    [{response, 414, H, <<"URI Too Long\n">>}] = calls(),
    ?assertEqual([{<<"content-type">>, <<"text/plain">>}, {<<"content-length">>, <<"13">>},
                  {<<"connection">>, <<"close">>}], no_date(H)),
    {ok, s} = falco_pipeline:error_reply({header_too_large, count}, #{method => <<"HEAD">>},
                                         ?MODULE, s),
    [{response, 431, H2, <<>>}] = calls(),
    ?assertNotEqual(<<"0">>, proplists:get_value(<<"content-length">>, H2)).

%% The same reply a handler gets from falco_errors:response/1, with its
%% fields: a 405 falco sends itself (a handler threw it) has its Allow.
error_reply_fields_test() ->
    _ = erase_calls(),
    {ok, s} = falco_pipeline:error_reply({method_not_allowed, [<<"GET">>, <<"HEAD">>]},
                                         #{method => <<"PUT">>}, ?MODULE, s),
    [{response, 405, H, <<"Method Not Allowed\n">>}] = calls(),
    ?assertEqual([{<<"allow">>, <<"GET, HEAD">>}, {<<"content-type">>, <<"text/plain">>},
                  {<<"content-length">>, <<"19">>}, {<<"connection">>, <<"close">>}], no_date(H)).

%% -- files -------------------------------------------------------------------------------------

with_file(Fun) ->
    with_dir(fun(Dir) ->
                     Path = filename:join(Dir, "falco_pipeline_tests.txt"),
                     ok = file:write_file(Path, <<"0123456789">>),
                     try Fun(Path) after file:delete(Path) end
             end).

%% A scratch directory in the build tree, removed afterwards.
with_dir(Fun) ->
    Dir = filename:join([code:lib_dir(falco), "tmp", "falco_pipeline_tests_" ++ os:getpid()]),
    ok = filelib:ensure_dir(filename:join(Dir, "x")),
    try Fun(Dir) after file:del_dir(Dir) end.

file_test() ->
    with_file(fun(Path) ->
        [{file, 200, H, 0, 10, <<"0123456789">>}] =
            resp({200, [{<<"content-type">>, <<"text/plain">>}, {<<"content-length">>, <<"1">>}],
                  {file, Path}}),
        ?assertEqual([{<<"content-length">>, <<"10">>}, {<<"content-type">>, <<"text/plain">>}],
                     no_date(H)),
        %% A range is clamped to the file.
        [{file, 206, H2, 3, 4, <<"3456">>}] = resp({206, [], {file, Path, 3, 4}}),
        ?assertEqual(<<"4">>, proplists:get_value(<<"content-length">>, H2)),
        [{file, 206, _, 8, 2, <<"89">>}] = resp({206, [], {file, Path, 8, 100}}),
        [{file, 206, H3, 20, 0, <<>>}] = resp({206, [], {file, Path, 20, 5}}),
        ?assertEqual(<<"0">>, proplists:get_value(<<"content-length">>, H3)),
        %% HEAD: the length, not the file.
        [{response, 200, H4, <<>>}] = resp({200, [], {file, Path}}, req(<<"HEAD">>)),
        ?assertEqual(<<"10">>, proplists:get_value(<<"content-length">>, H4))
    end).

%% A missing file or a directory is a 404 (HEAD: without content).
file_not_found_test() ->
    [{response, 404, H, <<"Not Found\n">>}] = resp({200, [], {file, "no-such-dir/no-such-file"}}),
    ?assertEqual(<<"10">>, proplists:get_value(<<"content-length">>, H)),
    ?assert(lists:keymember(<<"date">>, 1, H)),
    [{response, 404, _, <<"Not Found\n">>}] = with_dir(fun(Dir) -> resp({200, [], {file, Dir}}) end),
    [{response, 404, _, <<>>}] = resp({200, [], {file, "no-such-file"}}, req(<<"HEAD">>)).

%% Any other open error is the server's fault: 500 and a log line.
file_error_test() ->
    {Calls, Log} = with_dir(fun(Dir) ->
                                    TooLong = filename:join(Dir, lists:duplicate(300, $a)),
                                    with_log(fun() -> resp({200, [], {file, TooLong}}) end)
                            end),
    assert_500(Calls),
    ?assertMatch([_], [L || L <- Log, string:find(L, "enametoolong") =/= nomatch]).

%% -- streams (RFC 9112 §7.1 on HTTP/1.1; DATA frames on HTTP/2) ------------------------------

stream_test() ->
    {{ok, _}, Calls} =
        run(fun(_) ->
                    {stream, 200, [{<<"Content-Type">>, <<"text/plain">>},
                                   {<<"transfer-encoding">>, <<"gzip">>}],
                     fun(Send) -> ok = Send(<<"a">>), ok = Send([<<"b">>, "c"]), done end}
            end),
    [{headers, 200, H}, {data, <<"a">>}, {data, <<"bc">>}, {'end', []}] = Calls,
    %% Transfer-Encoding is the protocol's choice; Date is added.
    ?assertEqual([{<<"content-type">>, <<"text/plain">>}], no_date(H)),
    ?assert(lists:keymember(<<"date">>, 1, H)).

%% A stream may announce its length: the pipeline keeps it.
stream_with_length_test() ->
    {{ok, _}, [{headers, 200, H}, {data, <<"xy">>}, {'end', []}]} =
        run(fun(_) -> {stream, 200, [{<<"content-length">>, <<"2">>}], fun(Send) -> Send(<<"xy">>) end} end),
    ?assertEqual([{<<"content-length">>, <<"2">>}], no_date(H)).

%% The declared length is enforced (RFC 9110 §8.6): a piece beyond it is
%% refused whole and nothing of it goes out; a body that ends short, or had
%% a piece refused, is cut as a failed stream is (no end), and logged.
stream_length_enforced_test_() ->
    Self = self(),
    Stream = fun(F) -> fun(_) -> {stream, 200, [{<<"content-length">>, <<"4">>}], F} end end,
    [fun() ->
             {{Result, Calls}, Log} = with_log(fun() -> run(Stream(F)) end),
             ?assertEqual({error, content_length_mismatch}, Result),
             ?assertMatch([{headers, 200, _} | _], Calls),
             ?assertEqual(Sent, [D || {data, D} <- Calls]),
             ?assertEqual([], [E || {'end', _} = E <- Calls]),
             ?assertMatch([_], [L || L <- Log, string:find(L, "content-length 4") =/= nomatch]),
             ?assertEqual(Refused, refused())
     end || {F, Sent, Refused} <-
                [{fun(Send) -> ok = Send(<<"ab">>) end, [<<"ab">>], 0},
                 %% once refused, refused for good
                 {fun(Send) -> ok = Send(<<"ab">>), Self ! {refused, Send(<<"cde">>)},
                               Self ! {refused, Send(<<"c">>)} end, [<<"ab">>], 2},
                 {fun(Send) -> ok = Send(<<"abcd">>), Self ! {refused, Send(<<"e">>)},
                               {trailers, []} end, [<<"abcd">>], 1}]] ++
    [fun() ->
             {{ok, _}, Calls} = run(Stream(fun(Send) -> ok = Send(<<"ab">>), ok = Send([]),
                                                        ok = Send([<<"c">>, "d"]) end)),
             ?assertEqual([<<"ab">>, <<>>, <<"cd">>], [D || {data, D} <- Calls]),
             ?assertMatch({'end', []}, lists:last(Calls))
     end,
     fun() ->
             %% an invalid or conflicting declared length: a 500 before the head
             [?assertMatch({{ok, _}, [{response, 500, _, _}]},
                           element(1, with_log(fun() ->
                                                       run(fun(_) -> {stream, 200, Fs, fun(_) -> ok end} end)
                                               end)))
              || Fs <- [[{<<"content-length">>, <<"x">>}],
                        [{<<"content-length">>, <<"1">>}, {<<"content-length">>, <<"2">>}]]]
     end].

%% The number of {refused, {error, content_length_exceeded}} messages.
refused() ->
    receive {refused, {error, content_length_exceeded}} -> 1 + refused()
    after 0 -> 0
    end.

stream_trailers_test() ->
    {{ok, _}, Calls} =
        run(fun(_) ->
                    {stream, 200, [], fun(Send) -> Send(<<"d">>), {trailers, [{<<"X-Sum">>, <<"1">>}]} end}
            end),
    [{headers, 200, _}, {data, <<"d">>}, {'end', [{<<"x-sum">>, <<"1">>}]}] = Calls.

%% Once the head is out no error status can follow: a bad trailer or a
%% crash logs and tells the protocol to cut the stream (no last chunk).
stream_failures_test_() ->
    [fun() ->
             {{Result, Calls}, Log} =
                 with_log(fun() -> run(fun(_) -> {stream, 200, [], F} end) end),
             ?assertEqual({error, stream_crashed}, Result),
             ?assertMatch([{headers, 200, _}, {data, <<"partial">>}], Calls),
             ?assertMatch([_], [L || L <- Log, string:find(L, "GET /p") =/= nomatch])
     end || F <- [fun(Send) -> Send(<<"partial">>), {trailers, [{<<"bad name">>, <<"v">>}]} end,
                  fun(Send) -> Send(<<"partial">>), error(midway) end,
                  fun(Send) -> Send(<<"partial">>), throw(midway) end]].

%% If the head cannot be sent the function is not run and the error is returned.
stream_head_fails_test() ->
    Self = self(),
    {Result, Calls} = run(fun(_) -> {stream, 200, [], fun(_) -> Self ! ran end} end, req(), #{fail_headers => true}),
    ?assertEqual({error, closed}, Result),
    ?assertMatch([{headers, 200, _}], Calls),
    receive ran -> ?assert(false) after 0 -> ok end.

%% HEAD, 204 and 304 streams: the head alone, the function never runs.
stream_without_content_test_() ->
    Self = self(),
    Stream = fun(S) -> {stream, S, [{<<"content-length">>, <<"5">>}], fun(_) -> Self ! ran end} end,
    [fun() ->
             {{ok, _}, [{response, S, H, <<>>}]} = run(fun(_) -> Stream(S) end, req(M)),
             ?assertEqual(Len, proplists:get_value(<<"content-length">>, H)),
             receive ran -> ?assert(false) after 0 -> ok end
     end || {M, S, Len} <- [{<<"HEAD">>, 200, <<"5">>}, {<<"GET">>, 204, undefined},
                            {<<"GET">>, 304, undefined}]].

%% -- WebSocket upgrades ---------------------------------------------------------

ws_req(Extra) ->
    (req())#{headers => [{<<"upgrade">>, <<"websocket">>}, {<<"connection">>, <<"Upgrade">>},
                         {<<"sec-websocket-key">>, <<"dGhlIHNhbXBsZSBub25jZQ==">>},
                         {<<"sec-websocket-version">>, <<"13">>} | Extra]}.

websocket_upgrade_test() ->
    [{switch, 101, Fields, Upgrade}] = resp({websocket, my_ws, state0, #{idle_timeout => 5000}},
                                            ws_req([])),
    ?assertEqual(<<"s3pPLMBiTxaQ9kYGzzhZRbK+xOo=">>,
                 proplists:get_value(<<"sec-websocket-accept">>, Fields)),
    ?assertMatch(#{handler := my_ws, state := state0, deflate := undefined,
                   opts := #{idle_timeout := 5000, max_frame_size := _}}, Upgrade).

%% {websocket, Mod, State} is {websocket, Mod, State, #{}}
websocket_short_form_test() ->
    ?assertMatch([{switch, 101, _, #{handler := my_ws}}],
                 resp({websocket, my_ws, state0}, ws_req([]))).

%% Not a handshake: an ordinary 426 reply, the request is not switched.
websocket_refused_test() ->
    [{response, 426, Fields, Body}] = resp({websocket, my_ws, state0, #{}}, req()),
    ?assertEqual(<<"websocket">>, proplists:get_value(<<"upgrade">>, Fields)),
    %% falco_errors' reply for the reason: RFC 6455 §4.4's version, Date
    ?assertEqual(<<"13">>, proplists:get_value(<<"sec-websocket-version">>, Fields)),
    ?assert(proplists:is_defined(<<"date">>, Fields)),
    %% in words: what the resource is and what a client must send
    ?assertMatch(<<"This resource is a WebSocket endpoint: open it with a WebSocket client", _/binary>>,
                 iolist_to_binary(Body)).

%% A malformed handshake is falco_errors' 400 with the version it speaks;
%% an RFC 8441 extended CONNECT without Sec-WebSocket-Version its 426.
websocket_refused_400_test() ->
    Req = ws_req([]),
    Bad = Req#{headers := lists:keyreplace(<<"sec-websocket-key">>, 1, maps:get(headers, Req),
                                           {<<"sec-websocket-key">>, <<"c2hvcnQ=">>})},
    [{response, 400, Fields, Body}] = resp({websocket, my_ws, state0, #{}}, Bad),
    ?assertEqual(<<"13">>, proplists:get_value(<<"sec-websocket-version">>, Fields)),
    ?assertMatch(<<"WebSocket handshake refused: Sec-WebSocket-Key", _/binary>>,
                 iolist_to_binary(Body)),
    H2 = (req())#{version => {2, 0}, protocol => <<"websocket">>},
    [{response, 426, Fields2, _}] = resp({websocket, my_ws, state0, #{}}, H2),
    ?assertEqual(<<"13">>, proplists:get_value(<<"sec-websocket-version">>, Fields2)).

%% A bad option is the handler's bug: 500, logged, like any bad response.
websocket_bad_option_test() ->
    {Calls, Log} = with_log(fun() -> resp({websocket, my_ws, s, #{idle_timeout => -1}}, ws_req([])) end),
    ?assertMatch([{response, 500, _, _}], Calls),
    ?assertMatch([_], Log).
