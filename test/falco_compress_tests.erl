%% Unit tests for falco_compress: Accept-Encoding negotiation (RFC 9110
%% §12.5.3), response coding rules, streamed coding, request-body decoding
%% with a cap.
-module(falco_compress_tests).
-include_lib("eunit/include/eunit.hrl").

-define(Z, falco_compress).
-define(R, falco_test_req).

-define(TEXT, binary:copy(<<"falco compresses text. ">>, 200)).

req(AE) -> req(<<"GET">>, AE).
req(Method, undefined) -> ?R:new(Method, <<"/r">>, []);
req(Method, AE) -> ?R:new(Method, <<"/r">>, [{<<"accept-encoding">>, AE}]).

call(Req, Resp) -> call(Req, Resp, #{}).
call(Req, Resp, Opts) -> ?Z:call(Req, fun(_) -> Resp end, Opts).

text(Body) -> {200, [{<<"content-type">>, <<"text/plain">>}], Body}.

h(Name, Headers) -> proplists:get_value(Name, Headers).

%% -- negotiation --------------------------------------------------------------------

parse_accept_encoding_test() ->
    ?assertEqual([{<<"gzip">>, 1000}, {<<"deflate">>, 500}, {<<"*">>, 0}],
                 ?Z:parse_accept_encoding(<<"GZIP, deflate;q=0.5, *;Q=0">>)),
    ?assertEqual([{<<"br">>, 1000}, {<<"gzip">>, 123}],
                 ?Z:parse_accept_encoding(<<"br;level=1, gzip;q=0.123, gzip;q=1">>)),
    ?assertEqual([{<<"a">>, 1000}, {<<"b">>, 0}, {<<"c">>, 1000}],
                 ?Z:parse_accept_encoding(<<"a;q=1.000,b;q=0.,c;q=1.0">>)),
    %% Malformed members are skipped.
    ?assertEqual([{<<"ok">>, 1000}],
                 ?Z:parse_accept_encoding(<<"x;q=2, y;q=0.1234, z;q=1.5, ok, (bad), w;q=0.x, ;q=1">>)),
    ?assertEqual([], ?Z:parse_accept_encoding(<<>>)).

negotiate_test() ->
    Av = [<<"gzip">>, <<"deflate">>],
    ?assertEqual([identity], ?Z:negotiate(undefined, Av)),
    ?assertEqual([identity], ?Z:negotiate(<<>>, Av)),
    ?assertEqual([<<"gzip">>, identity], ?Z:negotiate(<<"gzip">>, Av)),
    ?assertEqual([<<"gzip">>, identity], ?Z:negotiate(<<"x-gzip">>, Av)),
    ?assertEqual([<<"gzip">>, <<"deflate">>, identity], ?Z:negotiate(<<"deflate, gzip">>, Av)),
    ?assertEqual([<<"deflate">>, identity, <<"gzip">>], ?Z:negotiate(<<"deflate, gzip;q=0.5">>, Av)),
    ?assertEqual([<<"deflate">>, <<"gzip">>, identity],
                 ?Z:negotiate(<<"deflate, gzip;q=0.5, identity;q=0.2">>, Av)),
    ?assertEqual([identity, <<"gzip">>], ?Z:negotiate(<<"gzip;q=0.5, identity">>, Av)),
    ?assertEqual([<<"gzip">>, <<"deflate">>, identity], ?Z:negotiate(<<"*">>, Av)),
    ?assertEqual([<<"deflate">>, identity], ?Z:negotiate(<<"gzip;q=0, *">>, Av)),
    ?assertEqual([identity], ?Z:negotiate(<<"br, zstd">>, Av)),
    %% identity;q=0 and *;q=0 rule the uncompressed form out.
    ?assertEqual([<<"gzip">>], ?Z:negotiate(<<"gzip, identity;q=0">>, Av)),
    ?assertEqual([<<"deflate">>], ?Z:negotiate(<<"deflate, *;q=0">>, Av)),
    ?assertEqual([identity], ?Z:negotiate(<<"identity, *;q=0">>, Av)),
    ?assertEqual([], ?Z:negotiate(<<"*;q=0">>, Av)),
    ?assertEqual([], ?Z:negotiate(<<"br, identity;q=0">>, Av)),
    ?assertEqual([], ?Z:negotiate(<<"gzip;q=0, deflate;q=0, identity;q=0">>, Av)).

compressible_test() ->
    [?assert(?Z:compressible(T, #{}))
     || T <- [<<"text/html; charset=utf-8">>, <<"Text/CSS">>, <<"application/json">>,
              <<"image/svg+xml">>, <<"text/event-stream">>, <<"application/x-ndjson">>]],
    [?assertNot(?Z:compressible(T, #{}))
     || T <- [undefined, <<"image/png">>, <<"application/zip">>, <<"video/mp4">>,
              <<"textual/x">>, <<"application/jsonx">>]],
    ?assert(?Z:compressible(<<"image/png">>, #{types => [<<"image/*">>]})),
    ?assertNot(?Z:compressible(<<"text/plain">>, #{types => [<<"image/*">>]})),
    ?assert(?Z:compressible(<<"x/y">>, #{types => fun(T) -> T =:= <<"x/y">> end})).

%% -- full replies --------------------------------------------------------------------

gzip_reply_test() ->
    {200, H, Body} = call(req(<<"gzip">>),
                          {200, [{<<"Content-Type">>, <<"text/plain">>}, {<<"ETag">>, <<"\"abc\"">>},
                                 {<<"content-length">>, <<"4600">>},
                                 {<<"accept-ranges">>, <<"bytes">>}], ?TEXT}),
    ?assertEqual(?TEXT, zlib:gunzip(iolist_to_binary(Body))),
    ?assertEqual(<<"gzip">>, h(<<"content-encoding">>, H)),
    ?assertEqual(<<"accept-encoding">>, h(<<"vary">>, H)),
    ?assertEqual(<<"W/\"abc\"">>, h(<<"ETag">>, H)),
    ?assertEqual(undefined, h(<<"content-length">>, H)),
    ?assertEqual(undefined, h(<<"accept-ranges">>, H)).

deflate_reply_test() ->
    {200, H, Body} = call(req(<<"deflate">>), text(?TEXT)),
    ?assertEqual(<<"deflate">>, h(<<"content-encoding">>, H)),
    %% "deflate" is the zlib format (RFC 9110 §8.4.1.2).
    ?assertEqual(?TEXT, zlib:uncompress(iolist_to_binary(Body))).

level_option_test() ->
    {200, _, Fast} = call(req(<<"gzip">>), text(?TEXT), #{level => 1}),
    {200, _, Best} = call(req(<<"gzip">>), text(?TEXT), #{level => 9}),
    ?assertEqual(?TEXT, zlib:gunzip(iolist_to_binary(Fast))),
    ?assertEqual(?TEXT, zlib:gunzip(iolist_to_binary(Best))).

identity_cases_test() ->
    Small = <<"tiny">>,
    %% No Accept-Encoding: identity, but Vary still says it depends.
    ?assertEqual({200, [{<<"content-type">>, <<"text/plain">>}, {<<"vary">>, <<"accept-encoding">>}], ?TEXT},
                 call(req(undefined), text(?TEXT))),
    %% Below the threshold.
    ?assertMatch({200, [_, {<<"vary">>, _}], Small}, call(req(<<"gzip">>), text(Small))),
    A100 = binary:copy(<<"a">>, 100),
    ?assertEqual({200, [{<<"content-type">>, <<"text/plain">>}, {<<"vary">>, <<"accept-encoding">>}], A100},
                 call(req(<<"gzip">>), text(A100))),
    {200, HA, BA} = call(req(<<"gzip">>), text(A100), #{min_size => 100}),
    ?assertEqual(<<"gzip">>, h(<<"content-encoding">>, HA)),
    ?assertEqual(A100, zlib:gunzip(iolist_to_binary(BA))),
    %% Not compressible.
    Png = {200, [{<<"content-type">>, <<"image/png">>}], ?TEXT},
    ?assertEqual(Png, call(req(<<"gzip">>), Png)),
    %% Already coded: never twice.
    Coded = {200, [{<<"content-type">>, <<"text/plain">>}, {<<"Content-Encoding">>, <<"br">>}], ?TEXT},
    ?assertEqual(Coded, call(req(<<"gzip">>), Coded)),
    %% A range, 204, 304, and no-transform are left alone.
    Ranged = {206, [{<<"content-type">>, <<"text/plain">>}, {<<"content-range">>, <<"bytes 0-1/2">>}], ?TEXT},
    ?assertEqual(Ranged, call(req(<<"gzip">>), Ranged)),
    RangedOk = setelement(1, Ranged, 200),
    ?assertEqual(RangedOk, call(req(<<"gzip">>), RangedOk)),
    NT = {200, [{<<"content-type">>, <<"text/plain">>}, {<<"cache-control">>, <<"public, No-Transform">>}], ?TEXT},
    ?assertEqual(NT, call(req(<<"gzip">>), NT)),
    NC = {304, [{<<"content-type">>, <<"text/plain">>}], <<>>},
    ?assertEqual(NC, call(req(<<"gzip">>), NC)),
    %% File replies go out as they are.
    File = {200, [{<<"content-type">>, <<"text/plain">>}], {file, "x"}},
    ?assertEqual(File, call(req(<<"gzip">>), File)),
    %% Bad bodies are left for the pipeline to refuse.
    Bad = {200, [{<<"content-type">>, <<"text/plain">>}], [bad]},
    ?assertEqual(Bad, call(req(<<"gzip">>), Bad)),
    ?assertEqual(not_a_response, call(req(<<"gzip">>), not_a_response)).

small_body_forced_test() ->
    %% Below the threshold but identity is refused: compress anyway.
    {200, H, Body} = call(req(<<"gzip, identity;q=0">>), text(<<"tiny">>)),
    ?assertEqual(<<"gzip">>, h(<<"content-encoding">>, H)),
    ?assertEqual(<<"tiny">>, zlib:gunzip(iolist_to_binary(Body))),
    %% Incompressible data stays identity when identity is fine.
    Random = crypto:strong_rand_bytes(4096),
    ?assertMatch({200, [_, {<<"vary">>, _}], Random}, call(req(<<"gzip">>), text(Random))).

preferring_identity_test() ->
    ?assertMatch({200, [_, {<<"vary">>, _}], _}, call(req(<<"gzip;q=0.5, identity">>), text(?TEXT))).

not_acceptable_test() ->
    {406, H, Body} = call(req(<<"br, identity;q=0">>), text(?TEXT)),
    ?assertEqual(<<"accept-encoding">>, h(<<"vary">>, H)),
    ?assertMatch({match, _}, re:run(iolist_to_binary(Body), <<"gzip, deflate">>)),
    ?assertMatch({406, _, _}, call(req(<<"*;q=0">>), text(<<"x">>))),
    %% Errors are not turned into 406: they go out uncoded.
    ?assertMatch({404, _, <<"x">>}, call(req(<<"*;q=0">>), {404, [{<<"content-type">>, <<"text/plain">>}], <<"x">>})),
    ?assertMatch({406, _, _}, call(req(<<"*;q=0">>), {stream, 200, [{<<"content-type">>, <<"text/plain">>}],
                                                     fun(_) -> ok end})),
    ?assertMatch({stream, 500, _, _}, call(req(<<"*;q=0">>), {stream, 500, [{<<"content-type">>, <<"text/plain">>}],
                                                             fun(_) -> ok end})).

vary_merge_test() ->
    {200, H, _} = call(req(<<"gzip">>), {200, [{<<"content-type">>, <<"text/plain">>},
                                               {<<"Vary">>, <<"Accept-Encoding, Origin">>}], ?TEXT}),
    ?assertEqual([<<"Accept-Encoding, Origin">>], [V || {N, V} <- H, string:lowercase(N) =:= <<"vary">>]),
    {200, H2, _} = call(req(<<"gzip">>), {200, [{<<"content-type">>, <<"text/plain">>},
                                                {<<"vary">>, <<"origin">>}], ?TEXT}),
    ?assertEqual([<<"origin">>, <<"accept-encoding">>], [V || {<<"vary">>, V} <- H2]),
    {200, H3, _} = call(req(<<"gzip">>), {200, [{<<"content-type">>, <<"text/plain">>},
                                                {<<"vary">>, <<"*">>}], ?TEXT}),
    ?assertEqual([<<"*">>], [V || {<<"vary">>, V} <- H3]),
    %% A weak ETag stays as it is.
    {200, H4, _} = call(req(<<"gzip">>), {200, [{<<"content-type">>, <<"text/plain">>},
                                                {<<"etag">>, <<"W/\"x\"">>}], ?TEXT}),
    ?assertEqual(<<"W/\"x\"">>, h(<<"etag">>, H4)).

head_test() ->
    %% HEAD: same fields as GET, Content-Length of the coded body.
    Handler = fun(R) -> call(R, text(?TEXT)) end,
    {200, HGet, BodyGet} = ?R:run(req(<<"GET">>, <<"gzip">>), Handler),
    {200, HHead, <<>>} = ?R:run(req(<<"HEAD">>, <<"gzip">>), Handler),
    ?assertEqual(integer_to_binary(byte_size(BodyGet)), h(<<"content-length">>, HHead)),
    ?assertEqual(lists:sort(HGet), lists:sort(HHead)).

%% -- streamed replies -------------------------------------------------------------------

stream_resp(Pieces) ->
    {stream, 200, [{<<"content-type">>, <<"text/event-stream">>}, {<<"content-length">>, <<"9999">>}],
     fun(Send) -> lists:foreach(fun(P) -> ok = Send(P) end, Pieces), {trailers, [{<<"x-t">>, <<"1">>}]} end}.

stream_test() ->
    Pieces = [<<"data: one\n\n">>, <<>>, [<<"data: ">>, "two", <<"\n\n">>]],
    {stream, 200, H, Fun} = call(req(<<"gzip">>), stream_resp(Pieces)),
    ?assertEqual(<<"gzip">>, h(<<"content-encoding">>, H)),
    ?assertEqual(undefined, h(<<"content-length">>, H)),
    Self = self(),
    ?assertEqual({trailers, [{<<"x-t">>, <<"1">>}]}, Fun(fun(D) -> Self ! {piece, iolist_to_binary(D)}, ok end)),
    Sent = collect(),
    %% One coded piece per non-empty piece, plus the end of the stream.
    ?assertEqual(3, length(Sent)),
    ?assertEqual(<<"data: one\n\ndata: two\n\n">>, zlib:gunzip(iolist_to_binary(Sent))),
    %% Each piece is flushed: the first one alone inflates to the first event.
    Z = zlib:open(), ok = zlib:inflateInit(Z, 31),
    ?assertEqual(<<"data: one\n\n">>, iolist_to_binary(zlib:inflate(Z, hd(Sent)))),
    zlib:close(Z).

stream_deflate_no_flush_test() ->
    {stream, 200, _, Fun} = call(req(<<"deflate">>), stream_resp([?TEXT, ?TEXT]), #{flush => none}),
    Self = self(),
    _ = Fun(fun(D) -> Self ! {piece, iolist_to_binary(D)}, ok end),
    ?assertEqual(<<(?TEXT)/binary, (?TEXT)/binary>>, zlib:uncompress(iolist_to_binary(collect()))).

stream_identity_test() ->
    {stream, 200, H, _} = call(req(undefined), stream_resp([])),
    ?assertEqual(<<"9999">>, h(<<"content-length">>, H)),
    ?assertEqual(<<"accept-encoding">>, h(<<"vary">>, H)),
    %% A declared length under the threshold stays identity.
    {stream, 200, H2, _} = call(req(<<"gzip">>),
                               {stream, 200, [{<<"content-type">>, <<"text/plain">>},
                                              {<<"content-length">>, <<"10">>}], fun(_) -> ok end}),
    ?assertEqual(undefined, h(<<"content-encoding">>, H2)),
    Png = {stream, 200, [{<<"content-type">>, <<"image/png">>}], fun(_) -> ok end},
    ?assertEqual(Png, call(req(<<"gzip">>), Png)).

stream_through_pipeline_test() ->
    Handler = fun(R) -> call(R, stream_resp([<<"a">>, <<"b">>])) end,
    {200, H, Body} = ?R:run(req(<<"GET">>, <<"gzip">>), Handler),
    ?assertEqual(<<"gzip">>, h(<<"content-encoding">>, H)),
    ?assertEqual(<<"ab">>, zlib:gunzip(Body)),
    {200, HH, <<>>} = ?R:run(req(<<"HEAD">>, <<"gzip">>), Handler),
    ?assertEqual(<<"gzip">>, h(<<"content-encoding">>, HH)).

stream_crash_closes_zlib_test() ->
    {stream, 200, _, Fun} = call(req(<<"gzip">>), {stream, 200, [{<<"content-type">>, <<"text/plain">>}],
                                                  fun(_) -> error(boom) end}),
    ?assertError(boom, Fun(fun(_) -> ok end)).

collect() ->
    receive {piece, P} -> [P | collect()]
    after 0 -> []
    end.

%% -- request bodies -----------------------------------------------------------------------

post(Coding, Body) ->
    Headers = case Coding of
                  undefined -> [];
                  _ -> [{<<"content-encoding">>, Coding}]
              end,
    ?R:new(<<"POST">>, <<"/r">>, [{<<"content-length">>, integer_to_binary(byte_size(Body))} | Headers],
           Body).

echo(Req) ->
    {ok, Body, _} = falco_req:read_body(Req),
    {200, [{<<"x-ce">>, falco_req:header(<<"content-encoding">>, Req, <<"none">>)},
           {<<"x-cl">>, falco_req:header(<<"content-length">>, Req, <<"none">>)}], Body}.

decode(Req, Opts) -> ?Z:call(Req, fun echo/1, Opts#{decode_request => true}).

decode_request_test() ->
    Text = ?TEXT,
    ?assertEqual({200, [{<<"x-ce">>, <<"none">>}, {<<"x-cl">>, <<"none">>}], Text},
                 decode(post(<<"gzip">>, zlib:gzip(Text)), #{})),
    ?assertMatch({200, _, Text}, decode(post(<<"x-gzip">>, zlib:gzip(Text)), #{})),
    ?assertMatch({200, _, Text}, decode(post(<<"Deflate">>, zlib:compress(Text)), #{})),
    ?assertMatch({200, _, Text}, decode(post(<<"identity">>, Text), #{})),
    ?assertMatch({200, [{<<"x-ce">>, <<"none">>}, _], Text}, decode(post(undefined, Text), #{})),
    %% Off by default: the handler sees the coded body.
    Gz = zlib:gzip(Text),
    ?assertMatch({200, [{<<"x-ce">>, <<"gzip">>}, _], Gz},
                 ?Z:call(post(<<"gzip">>, Gz), fun echo/1, #{})).

decode_no_body_test() ->
    %% A coded request without a body: nothing to inflate, an empty body.
    Req = ?R:new(<<"POST">>, <<"/r">>, [{<<"content-encoding">>, <<"gzip">>}]),
    ?assertMatch({200, [{<<"x-ce">>, <<"none">>}, _], <<>>}, decode(Req, #{})).

decode_unsupported_test() ->
    {415, H, _} = decode(post(<<"br">>, <<"x">>), #{}),
    ?assertEqual(<<"gzip, deflate">>, h(<<"accept-encoding">>, H)),
    ?assertMatch({415, _, _}, decode(post(<<"gzip, gzip">>, <<"x">>), #{})).

decode_in_pieces_test() ->
    %% Read with read_body/2 in small pieces: same bytes.
    Text = ?TEXT,
    Read = fun R(Req, Acc) ->
                   case falco_req:read_body(Req, #{length => 100}) of
                       {more, D, Req1} -> ?assert(byte_size(D) =< 100), R(Req1, [Acc, D]);
                       {ok, D, _} -> iolist_to_binary([Acc, D])
                   end
           end,
    Handler = fun(Req) -> {200, [], Read(Req, [])} end,
    ?assertMatch({200, _, Text},
                 ?Z:call(post(<<"gzip">>, zlib:gzip(Text)), Handler, #{decode_request => true})).

zip_bomb_test() ->
    %% 10 MB of zeros gzip to about 10 KB; the cap stops inflation early.
    Bomb = zlib:gzip(binary:copy(<<0>>, 10000000)),
    ?assert(byte_size(Bomb) < 20000),
    ?assertThrow({falco_error, content_too_large},
                 decode(post(<<"gzip">>, Bomb), #{max_inflated => 100000})),
    %% Under the cap it is fine.
    ?assertMatch({200, _, _}, decode(post(<<"gzip">>, zlib:gzip(binary:copy(<<0>>, 1000))),
                                     #{max_inflated => 1000})),
    %% Through the pipeline the cap is a 413.
    ?assertMatch({413, _, _}, ?R:run(post(<<"gzip">>, Bomb),
                                     fun(R) -> decode(R, #{max_inflated => 100000}) end)).

corrupt_body_test() ->
    ?assertThrow({falco_error, {bad_request, bad_content_encoding}},
                 decode(post(<<"gzip">>, <<"this is not gzip at all">>), #{})),
    %% Truncated: the stream never ends.
    Gz = zlib:gzip(?TEXT),
    ?assertThrow({falco_error, {bad_request, bad_content_encoding}},
                 decode(post(<<"gzip">>, binary:part(Gz, 0, byte_size(Gz) - 12)), #{})),
    ?assertMatch({400, _, _}, ?R:run(post(<<"deflate">>, <<"junk">>), fun(R) -> decode(R, #{}) end)).

%% RFC 1952 §2.2: a gzip body is a series of members; every one is
%% inflated (before, only the first was, the rest dropped without a word).
multi_member_test() ->
    Two = <<(zlib:gzip(<<"hello ">>))/binary, (zlib:gzip(<<"world">>))/binary>>,
    ?assertMatch({200, _, <<"hello world">>}, decode(post(<<"gzip">>, Two), #{})),
    %% in 3-byte reads of the coded body, so members end mid-read
    ?assertMatch({200, _, <<"hello world">>},
                 decode(?R:body(post(<<"gzip">>, Two), Two, 3), #{})),
    %% the bound holds across members: two of 600 KB each against 1 MB
    Big = zlib:gzip(binary:copy(<<0>>, 600000)),
    ?assertThrow({falco_error, content_too_large},
                 decode(post(<<"gzip">>, <<Big/binary, Big/binary>>), #{max_inflated => 1000000})),
    ?assertMatch({200, _, _}, decode(post(<<"gzip">>, <<Big/binary, Big/binary>>),
                                     #{max_inflated => 1200000})).

%% Bytes after the last gzip member, or after a deflate stream, are a 400.
trailing_garbage_test() ->
    Bad = {falco_error, {bad_request, bad_content_encoding}},
    Gz = zlib:gzip(<<"hello">>),
    ?assertThrow(Bad, decode(post(<<"gzip">>, <<Gz/binary, "garbage">>), #{})),
    ?assertThrow(Bad, decode(post(<<"gzip">>, <<Gz/binary, 0, 0, 0, 0>>), #{})),
    %% a second member cut short
    ?assertThrow(Bad, decode(post(<<"gzip">>, <<Gz/binary, (binary:part(Gz, 0, 12))/binary>>), #{})),
    ?assertThrow(Bad, decode(post(<<"deflate">>, <<(zlib:compress(<<"hello">>))/binary, "x">>), #{})),
    ?assertMatch({400, _, _}, ?R:run(post(<<"gzip">>, <<Gz/binary, "garbage">>),
                                     fun(R) -> decode(R, #{}) end)).

decode_trailers_test() ->
    Handler = fun(Req) ->
                      {ok, _, Req1} = falco_req:read_body(Req),
                      {200, [], lists:flatten(io_lib:format("~p", [falco_req:trailers(Req1)]))}
              end,
    ?assertMatch({200, _, "[]"}, ?Z:call(post(<<"gzip">>, zlib:gzip(<<"x">>)), Handler,
                                         #{decode_request => true})).

%% The zlib port is closed when the handler returns, and nothing is left
%% in the process dictionary.
decode_cleans_up_test() ->
    Ports = erlang:ports(),
    Dict = get(),
    _ = decode(post(<<"gzip">>, zlib:gzip(<<"x">>)), #{}),
    catch decode(post(<<"gzip">>, <<"bad">>), #{}),
    ?assertEqual(Ports, erlang:ports()),
    ?assertEqual(Dict, get()).
