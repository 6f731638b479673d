%% Unit tests for falco_range (RFC 9110 §14, §13.1.5).
-module(falco_range_tests).
-include_lib("eunit/include/eunit.hrl").

-define(G, falco_range).
-define(R, falco_test_req).

parse_test() ->
    ?assertEqual({ok, [{0, 499}]}, ?G:parse(<<"bytes=0-499">>)),
    ?assertEqual({ok, [{500, 999}]}, ?G:parse(<<"bytes=500-999">>)),
    ?assertEqual({ok, [{suffix, 500}]}, ?G:parse(<<"bytes=-500">>)),
    ?assertEqual({ok, [{9500, infinity}]}, ?G:parse(<<"bytes=9500-">>)),
    ?assertEqual({ok, [{0, 0}, {suffix, 1}]}, ?G:parse(<<"BYTES=0-0, -1">>)),
    ?assertEqual({ok, [{500, 600}, {601, 999}]}, ?G:parse(<<"bytes=500-600,601-999">>)),
    ?assertEqual({ok, [{1, 2}]}, ?G:parse(<<"bytes= ,1-2,, ">>)),
    ?assertEqual({error, unsupported_unit}, ?G:parse(<<"items=0-5">>)),
    [?assertEqual({error, bad_range}, ?G:parse(B))
     || B <- [<<>>, <<"bytes">>, <<"bytes=">>, <<"bytes=,">>, <<"bytes=5-1">>, <<"bytes=a-b">>,
              <<"bytes=1-2-3">>, <<"bytes=--1">>, <<"bytes=-">>, <<"bytes=0x1-2">>,
              <<"bytes=1234567890123456-">>, <<"bytes=1 - 2">>]].

resolve_test() ->
    %% The examples of RFC 9110 §14.1.2 for a 10000-byte representation.
    ?assertEqual({ok, [{0, 500}]}, ?G:resolve([{0, 499}], 10000, #{})),
    ?assertEqual({ok, [{500, 500}]}, ?G:resolve([{500, 999}], 10000, #{})),
    ?assertEqual({ok, [{9500, 500}]}, ?G:resolve([{suffix, 500}], 10000, #{})),
    ?assertEqual({ok, [{9500, 500}]}, ?G:resolve([{9500, infinity}], 10000, #{})),
    ?assertEqual({ok, [{0, 1}, {9999, 1}]}, ?G:resolve([{0, 0}, {suffix, 1}], 10000, #{})),
    %% Clamped to the size; a suffix longer than the content is all of it.
    ?assertEqual({ok, [{5, 5}]}, ?G:resolve([{5, 100}], 10, #{})),
    ?assertEqual({ok, [{0, 10}]}, ?G:resolve([{suffix, 100}], 10, #{})),
    %% Unsatisfiable ones dropped; none left is 416.
    ?assertEqual({ok, [{0, 1}]}, ?G:resolve([{20, 30}, {0, 0}], 10, #{})),
    ?assertEqual(unsatisfiable, ?G:resolve([{10, 20}], 10, #{})),
    ?assertEqual(unsatisfiable, ?G:resolve([{suffix, 0}], 10, #{})),
    %% Coalesced and sorted: overlapping and adjacent spans merge.
    ?assertEqual({ok, [{0, 10}]}, ?G:resolve([{5, 9}, {0, 4}], 10, #{})),
    ?assertEqual({ok, [{0, 6}, {8, 2}]}, ?G:resolve([{8, 9}, {0, 3}, {2, 5}], 10, #{})),
    ?assertEqual({ok, [{0, 100}]}, ?G:resolve(lists:duplicate(10, {0, 99}), 100, #{})),
    %% Too many ranges: the field is ignored.
    ?assertEqual(ignore, ?G:resolve([{I, I} || I <- lists:seq(0, 16)], 100, #{})),
    ?assertMatch({ok, [_, _]}, ?G:resolve([{0, 0}, {2, 2}], 100, #{max_ranges => 2})),
    ?assertEqual(ignore, ?G:resolve([{0, 0}, {2, 2}, {4, 4}], 100, #{max_ranges => 2})),
    %% An empty representation has no ranges.
    ?assertEqual(ignore, ?G:resolve([{0, 0}], 0, #{})).

content_range_test() ->
    ?assertEqual(<<"bytes 21010-47021/47022">>, ?G:content_range(21010, 26012, 47022)).

req(Headers) -> req(<<"GET">>, Headers).
req(Method, Headers) -> ?R:new(Method, <<"/r">>, Headers).

-define(BODY, <<"0123456789abcdefghij">>).
headers() ->
    [{<<"content-type">>, <<"text/plain">>}, {<<"etag">>, <<"\"t1\"">>},
     {<<"last-modified">>, <<"Sun, 06 Nov 1994 08:49:37 GMT">>}].

reply(Headers) -> ?G:reply(req(Headers), headers(), {data, ?BODY}, #{}).

no_range_test() ->
    {200, H, ?BODY} = reply([]),
    ?assertEqual(<<"bytes">>, proplists:get_value(<<"accept-ranges">>, H)).

single_range_test() ->
    {206, H, <<"2345">>} = reply([{<<"range">>, <<"bytes=2-5">>}]),
    ?assertEqual(<<"bytes 2-5/20">>, proplists:get_value(<<"content-range">>, H)),
    ?assertEqual(<<"text/plain">>, proplists:get_value(<<"content-type">>, H)),
    ?assertMatch({206, _, <<"ghij">>}, reply([{<<"range">>, <<"bytes=-4">>}])),
    ?assertMatch({206, _, <<"j">>}, reply([{<<"range">>, <<"bytes=19-">>}])).

ignored_range_test() ->
    ?assertMatch({200, _, ?BODY}, reply([{<<"range">>, <<"bytes=5-1">>}])),
    ?assertMatch({200, _, ?BODY}, reply([{<<"range">>, <<"lines=1-2">>}])),
    %% Only GET is ranged.
    ?assertMatch({200, _, ?BODY}, ?G:reply(req(<<"HEAD">>, [{<<"range">>, <<"bytes=0-1">>}]),
                                          headers(), {data, ?BODY}, #{})),
    ?assertMatch({200, _, ?BODY}, ?G:reply(req(<<"POST">>, [{<<"range">>, <<"bytes=0-1">>}]),
                                          headers(), {data, ?BODY}, #{})).

%% Two Range fields: neither is used, the whole representation is sent
%% (before, the first one was served as a 206).
repeated_range_test() ->
    ?assertMatch({200, _, ?BODY}, reply([{<<"range">>, <<"bytes=0-1">>},
                                         {<<"range">>, <<"bytes=2-3">>}])),
    ?assertMatch({200, _, ?BODY}, reply([{<<"range">>, <<"bytes=0-1">>},
                                         {<<"range">>, <<"bytes=0-1">>}])).

unsatisfiable_test() ->
    {416, H, _} = reply([{<<"range">>, <<"bytes=20-30">>}]),
    ?assertEqual(<<"bytes */20">>, proplists:get_value(<<"content-range">>, H)).

multipart_test() ->
    {206, H, Body} = reply([{<<"range">>, <<"bytes=0-1, 10-11">>}]),
    <<"multipart/byteranges; boundary=", Boundary/binary>> = proplists:get_value(<<"content-type">>, H),
    ?assertEqual(undefined, proplists:get_value(<<"content-range">>, H)),
    %% Read back with our own multipart parser.
    {done, Events, _} = falco_multipart:parse(iolist_to_binary(Body), falco_multipart:init(Boundary)),
    ?assertEqual([{headers, [{<<"content-type">>, <<"text/plain">>},
                             {<<"content-range">>, <<"bytes 0-1/20">>}]},
                  {data, <<"01">>}, part_end,
                  {headers, [{<<"content-type">>, <<"text/plain">>},
                             {<<"content-range">>, <<"bytes 10-11/20">>}]},
                  {data, <<"ab">>}, part_end], Events),
    %% Overlapping ranges become one: a plain 206.
    ?assertMatch({206, _, <<"0123">>}, reply([{<<"range">>, <<"bytes=0-2,1-3">>}])).

if_range_test() ->
    Range = {<<"range">>, <<"bytes=0-1">>},
    ?assertMatch({206, _, <<"01">>}, reply([Range, {<<"if-range">>, <<"\"t1\"">>}])),
    ?assertMatch({200, _, ?BODY}, reply([Range, {<<"if-range">>, <<"\"t0\"">>}])),
    ?assertMatch({200, _, ?BODY}, reply([Range, {<<"if-range">>, <<"W/\"t1\"">>}])),
    ?assertMatch({206, _, _}, reply([Range, {<<"if-range">>, <<"Sun, 06 Nov 1994 08:49:37 GMT">>}])),
    ?assertMatch({200, _, _}, reply([Range, {<<"if-range">>, <<"Sun, 06 Nov 1994 08:49:38 GMT">>}])),
    ?assertMatch({200, _, _}, reply([Range, {<<"if-range">>, <<"garbage">>}])),
    ?assertMatch({200, _, _}, reply([Range, {<<"if-range">>, <<"\"open">>}])),
    %% A weak current ETag never satisfies If-Range.
    ?assertMatch({200, _, _}, ?G:reply(req([Range, {<<"if-range">>, <<"\"t1\"">>}]),
                                       [{<<"etag">>, <<"W/\"t1\"">>}], {data, ?BODY}, #{})),
    ?assertMatch({200, _, _}, ?G:reply(req([Range, {<<"if-range">>, <<"\"t1\"">>}]),
                                       [], {data, ?BODY}, #{})),
    ?assertMatch({200, _, _}, ?G:reply(req([Range, {<<"if-range">>, <<"\"t1\"">>}]),
                                       [{<<"etag">>, <<"bad">>}], {data, ?BODY}, #{})),
    ?assertMatch({200, _, _}, ?G:reply(req([Range, {<<"if-range">>, <<"Sun, 06 Nov 1994 08:49:37 GMT">>}]),
                                       [], {data, ?BODY}, #{})).

file_test_() ->
    {setup,
     fun() ->
             File = filename:join(tmp_dir(), "range.txt"),
             ok = file:write_file(File, ?BODY),
             File
     end,
     fun(File) -> file:delete(File) end,
     fun(File) ->
             Content = {file, File, 20},
             [?_assertEqual({200, [{<<"accept-ranges">>, <<"bytes">>}], {file, File}},
                            ?G:reply(req([]), [], Content, #{})),
              ?_assertMatch({206, _, {file, File, 3, 2}},
                            ?G:reply(req([{<<"range">>, <<"bytes=3-4">>}]), [], Content, #{})),
              ?_test(begin
                         Resp = ?G:reply(req([{<<"range">>, <<"bytes=0-0,-1">>}]), headers(), Content, #{}),
                         {stream, 206, H, _} = Resp,
                         {206, H2, Body} = ?R:run(req([]), fun(_) -> Resp end),
                         ?assertEqual(proplists:get_value(<<"content-length">>, H),
                                      integer_to_binary(byte_size(Body))),
                         <<"multipart/byteranges; boundary=", B/binary>> =
                             proplists:get_value(<<"content-type">>, H2),
                         {done, Events, _} = falco_multipart:parse(Body, falco_multipart:init(B)),
                         ?assertEqual([<<"0">>, <<"j">>], [D || {data, D} <- Events])
                     end),
              ?_test(begin
                         %% The client went away: the stream stops quietly.
                         {stream, 206, _, Fun} =
                             ?G:reply(req([{<<"range">>, <<"bytes=0-0,-1">>}]), [], Content, #{}),
                         Self = self(),
                         ?assertEqual(ok, Fun(fun(D) -> Self ! {sent, D}, {error, closed} end)),
                         receive {sent, _} -> ok end,
                         receive {sent, X} -> ?assertEqual(unexpected, X) after 0 -> ok end
                     end),
              ?_test(begin
                         %% The file shrank under us: the stream fails.
                         {stream, 206, _, Fun} =
                             ?G:reply(req([{<<"range">>, <<"bytes=0-0,-1">>}]), [], {file, File, 40}, #{}),
                         ?assertError({file_changed, eof}, Fun(fun(_) -> ok end))
                     end)]
     end}.

tmp_dir() ->
    Dir = filename:join(["_build", "test", "tmp"]),
    ok = filelib:ensure_dir(filename:join(Dir, "x")),
    Dir.
