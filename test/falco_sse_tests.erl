%% Unit tests for falco_sse (the text/event-stream format of the WHATWG
%% HTML standard, §9.2) and falco_ndjson.
-module(falco_sse_tests).
-include_lib("eunit/include/eunit.hrl").

-define(S, falco_sse).
-define(N, falco_ndjson).

enc(E) -> iolist_to_binary(?S:encode(E)).

encode_test() ->
    ?assertEqual(<<"data: hello\n\n">>, enc(#{data => <<"hello">>})),
    ?assertEqual(<<"event: add\nid: 7\nretry: 1500\ndata: x\n\n">>,
                 enc(#{data => "x", event => <<"add">>, id => <<"7">>, retry => 1500})),
    %% Every kind of line break splits data into data lines.
    ?assertEqual(<<"data: a\ndata: b\ndata: c\ndata: \ndata: d\n\n">>,
                 enc(#{data => <<"a\r\nb\nc\r\rd">>})),
    ?assertEqual(<<"data: \n\n">>, enc(#{data => <<>>})),
    ?assertEqual(<<": ping\n\n">>, enc(#{comment => <<"ping">>})),
    ?assertEqual(<<": one\n: two\nid: 1\n\n">>, enc(#{comment => <<"one\ntwo">>, id => <<"1">>})),
    ?assertEqual(<<"\n">>, enc(#{})).

encode_refuses_test() ->
    ?assertError(badarg, ?S:encode(#{event => <<"a\nb">>})),
    ?assertError(badarg, ?S:encode(#{id => <<"a\rb">>})),
    ?assertError(badarg, ?S:encode(#{id => <<"a", 0, "b">>})),
    ?assertError(badarg, ?S:encode(#{retry => -1})),
    ?assertError(badarg, ?S:encode(#{retry => <<"1">>})),
    ?assertError(badarg, ?S:encode(not_a_map)).

parse_all(Bin) ->
    {ok, Events, _} = ?S:parse(Bin, ?S:init_parser()),
    Events.

parse_test() ->
    %% Examples from the standard.
    ?assertEqual([#{data => <<"YHOO\n+2\n10">>}],
                 parse_all(<<"data: YHOO\ndata: +2\ndata: 10\n\n">>)),
    ?assertEqual([#{data => <<"first event">>, id => <<"1">>},
                  #{data => <<"second event">>, id => <<>>},
                  #{data => <<" third event">>, id => <<>>}],
                 parse_all(<<": test stream\n\ndata: first event\nid: 1\n\n"
                             "data:second event\nid\n\ndata:  third event\n\n">>)),
    %% An empty data buffer dispatches nothing; two empty data lines are "\n".
    ?assertEqual([#{data => <<"\n">>}], parse_all(<<"data\n\ndata\ndata\n\ndata:\n">>)),
    ?assertEqual([#{data => <<"test">>}, #{data => <<"test">>}],
                 parse_all(<<"data:test\n\ndata: test\n\n">>)),
    %% event, retry; a bad retry or an id with NUL is ignored; unknown fields too.
    ?assertEqual([#{data => <<"x">>, event => <<"e">>, retry => 5}],
                 parse_all(<<"event: e\nretry: 5\nfoo: bar\ndata: x\n\n">>)),
    ?assertEqual([#{data => <<"x">>}], parse_all(<<"retry: 5s\nid: a", 0, "b\ndata: x\n\n">>)),
    %% CR and CRLF line endings.
    ?assertEqual([#{data => <<"a\nb">>}, #{data => <<"c">>}],
                 parse_all(<<"data: a\r\ndata: b\r\n\r\ndata: c\r\r">>)),
    %% No dispatch without data; the event name is reset.
    ?assertEqual([#{data => <<"y">>}], parse_all(<<"event: e\n\ndata: y\n\n">>)).

parse_split_crlf_test() ->
    %% A CR at the end of a piece followed by LF in the next: one line break.
    P0 = ?S:init_parser(),
    {ok, [], P1} = ?S:parse(<<"data: a\r">>, P0),
    {ok, [], P2} = ?S:parse(<<"\ndata: b\r">>, P1),
    {ok, [#{data := <<"a\nb">>}], _} = ?S:parse(<<"\n\r\n">>, P2).

parse_limit_test() ->
    ?assertEqual({error, line_too_long}, ?S:parse(binary:copy(<<"x">>, 1048577), ?S:init_parser())).

round_trip_test() ->
    Events = [#{data => <<"multi\nline">>, event => <<"up">>, id => <<"42">>},
              #{data => <<"plain">>}, #{comment => <<"ignored">>}],
    Bin = iolist_to_binary([?S:encode(E) || E <- Events]),
    ?assertEqual([#{data => <<"multi\nline">>, event => <<"up">>, id => <<"42">>},
                  #{data => <<"plain">>, id => <<"42">>}], parse_all(Bin)).

headers_test() ->
    H = ?S:headers(),
    ?assertEqual(<<"text/event-stream">>, proplists:get_value(<<"content-type">>, H)),
    ?assertEqual(<<"no-cache">>, proplists:get_value(<<"cache-control">>, H)).

last_event_id_test() ->
    ?assertEqual(<<"9">>, ?S:last_event_id(falco_test_req:new(<<"GET">>, <<"/">>,
                                                              [{<<"last-event-id">>, <<"9">>}]))),
    ?assertEqual(undefined, ?S:last_event_id(falco_test_req:new(<<"GET">>, <<"/">>, []))).

%% Runs a stream function with a Send that collects pieces (or fails after
%% N). Pieces are kept in the process dictionary, not sent as messages: the
%% loop under test receives every message of its process.
run_stream(Fun) -> run_stream(Fun, infinity).
run_stream(Fun, FailAfter) ->
    flush(),
    put(pieces, []),
    Send = fun(D) ->
                   case length(get(pieces)) >= FailAfter of
                       true -> {error, closed};
                       false -> put(pieces, [iolist_to_binary(D) | get(pieces)]), ok
                   end
           end,
    Result = Fun(Send),
    {Result, lists:reverse(erase(pieces))}.

flush() ->
    receive _ -> flush()
    after 0 -> ok
    end.

stream_test() ->
    {stream, 201, H, Fun} = ?S:stream(fun(Emit) ->
                                              ok = Emit(#{data => <<"a">>}),
                                              ok = Emit([#{data => <<"b">>}, #{data => <<"c">>}])
                                      end, #{status => 201, headers => [{<<"x-a">>, <<"1">>}]}),
    ?assertEqual(<<"1">>, proplists:get_value(<<"x-a">>, H)),
    {ok, Pieces} = run_stream(Fun),
    %% One piece per Emit call.
    ?assertEqual([<<"data: a\n\n">>, <<"data: b\n\ndata: c\n\n">>], Pieces).

loop_test() ->
    {stream, 200, _, Fun} =
        ?S:loop(fun() -> self() ! ignored, self() ! {n, 1}, {ok, [#{retry => 100}], 0} end,
                fun({n, 3}, Acc) -> {stop, [#{data => integer_to_binary(Acc + 3)}]};
                   ({n, I}, Acc) -> self() ! {n, I + 1}, {ok, [#{data => integer_to_binary(I)}], Acc + I};
                   (ignored, Acc) -> {ok, [], Acc}
                end, #{keepalive => infinity}),
    {ok, Pieces} = run_stream(Fun),
    ?assertEqual([<<"retry: 100\n\n">>, <<"data: 1\n\n">>, <<"data: 2\n\n">>, <<"data: 6\n\n">>], Pieces).

loop_stop_at_init_test() ->
    {stream, 200, _, Fun} = ?S:loop(fun() -> {stop, [#{data => <<"bye">>}]} end,
                                    fun(_, _) -> error(not_called) end, #{}),
    ?assertEqual({ok, [<<"data: bye\n\n">>]}, run_stream(Fun)),
    {stream, 200, _, Fun2} = ?S:loop(fun() -> self() ! go, {ok, []} end, fun(go, _) -> {stop, []} end, #{}),
    ?assertEqual({ok, []}, run_stream(Fun2)).

keepalive_test() ->
    %% While idle, a comment goes out every keepalive ms; a client that is
    %% gone (Send fails) ends the loop.
    {stream, 200, _, Fun} = ?S:loop(fun() -> {ok, idle} end, fun(_, S) -> {ok, [], S} end,
                                    #{keepalive => 20}),
    T0 = erlang:monotonic_time(millisecond),
    {ok, Pieces} = run_stream(Fun, 3),
    Elapsed = erlang:monotonic_time(millisecond) - T0,
    ?assertEqual([<<":\n\n">>, <<":\n\n">>, <<":\n\n">>], Pieces),
    ?assert(Elapsed >= 60),
    ?assert(Elapsed < 2000).

keepalive_not_while_busy_test() ->
    %% Events keep the stream alive: no ping while they flow faster than keepalive.
    {stream, 200, _, Fun} =
        ?S:loop(fun() -> self() ! {tick, 5}, {ok, none} end,
                fun({tick, 0}, _) -> {stop, []};
                   ({tick, N}, S) -> erlang:send_after(10, self(), {tick, N - 1}),
                                     {ok, [#{data => <<"t">>}], S}
                end, #{keepalive => 200}),
    {ok, Pieces} = run_stream(Fun),
    ?assertEqual(lists:duplicate(5, <<"data: t\n\n">>), Pieces).

loop_closed_test() ->
    %% The client is gone when events are sent: the loop ends.
    {stream, 200, _, Fun} = ?S:loop(fun() -> self() ! x, {ok, [#{data => <<"a">>}], s} end,
                                    fun(_, S) -> {ok, [#{data => <<"b">>}], S} end, #{}),
    ?assertEqual({ok, [<<"data: a\n\n">>]}, run_stream(Fun, 1)),
    {stream, 200, _, Fun2} = ?S:loop(fun() -> {ok, [#{data => <<"a">>}], s} end,
                                     fun(_, S) -> {ok, [], S} end, #{}),
    ?assertEqual({ok, []}, run_stream(Fun2, 0)).

%% -- NDJSON ------------------------------------------------------------------------------

ndjson_encode_test() ->
    {ok, L} = ?N:encode(#{<<"a">> => [1, <<"x\ny">>]}),
    ?assertEqual(<<"{\"a\":[1,\"x\\ny\"]}\n">>, iolist_to_binary(L)),
    ?assertMatch({error, {invalid, _}}, ?N:encode({tuple})).

ndjson_stream_test() ->
    {stream, 200, H, Fun} = ?N:stream(fun(Emit) ->
                                              ok = Emit(1),
                                              ok = Emit({many, [<<"a">>, null]})
                                      end, #{}),
    ?assertEqual(<<"application/x-ndjson">>, proplists:get_value(<<"content-type">>, H)),
    ?assertEqual({ok, [<<"1\n">>, <<"\"a\"\nnull\n">>]}, run_stream(Fun)),
    {stream, 200, _, Bad} = ?N:stream(fun(Emit) -> Emit(self()) end, #{status => 200}),
    ?assertError(badarg, run_stream(Bad)).

ndjson_parse_test() ->
    P0 = ?N:init_parser(),
    {ok, [1, #{<<"a">> := true}], P1} = ?N:parse(<<"1\n {\"a\":true} \r\n\n[2">>, P0),
    {ok, [[2, 3]], P2} = ?N:parse(<<",3]\n\"tail">>, P1),
    ?assertEqual({ok, [<<"tail">>]}, ?N:finish(parse_ok(<<"\"">>, P2))),
    ?assertEqual({ok, []}, ?N:finish(P0)),
    ?assertMatch({error, {2, {syntax, _}}}, ?N:parse(<<"1\n{\n">>, P0)),
    ?assertMatch({error, {1, {syntax, _}}}, ?N:finish(parse_ok(<<"[">>, P0))),
    Small = ?N:init_parser(#{max_line => 8}),
    ?assertEqual({error, {1, line_too_long}}, ?N:parse(<<"123456789\n">>, Small)),
    ?assertEqual({error, {1, line_too_long}}, ?N:parse(<<"123456789">>, Small)),
    ?assertMatch({ok, [12345678], _}, ?N:parse(<<"12345678\n">>, Small)).

parse_ok(Bin, P) ->
    {ok, _, P1} = ?N:parse(Bin, P),
    P1.
