%% bench_fx: the shared fixture data of the benchmark, so that every server
%% serves exactly the same bytes for each scenario (parity).
%%
%% Every server fixture (bench_falco, bench_elli, bench_cowboy, ...) answers
%% its paths by calling these pure functions; the driver uses the same
%% functions to check each server's answer before it measures anything.
%%
%%   GET|HEAD /hello      200 text/plain "Hello, World!"
%%   GET  /json           200 application/json, a small map encoded per request
%%   POST /echo           200 application/octet-stream, the body echoed
%%   GET  /headers        200 text/plain, the value of request header x-bench-20
%%   GET  /cookies        200 text/plain, the value of cookie c20 (parsed here)
%%   GET  /qs?value=V     200 text/xml, V inside XML (an XML error if missing)
%%   GET  /large          200 application/octet-stream, 64 KB
%%   POST /upload         200 text/plain, the number of body bytes read
%%   GET  /route/N        200 text/plain "route N" (N in 1..100)
%%   GET  /gzip           200 gzip-encoded 16 KB text, compressed per request
%%   GET  /stream         200 chunked, 8 pieces of 1 KB
%%   GET  /etag           304 when If-None-Match matches, else 200 + ETag
%%   GET  /slow           200 "Hello, World!" after sleeping 100 ms
%%   GET  /survey         200 text/plain, 1 KB, after sleeping 100 ms (the
%%                        workload of seeds 001 and 002, bench_survey)
%%   GET  /download_10mb  200 application/octet-stream, 10 MB (bench_h3's
%%                        h3_download_10mb; falco's fixture only)
%%   GET  /ws             WebSocket: every text or binary message echoed
%%                        (ws_max_frame/0 on frames and messages, no idle
%%                        timeout, no compression, idle sessions hibernate)
-module(bench_fx).

-export([hello/0, json_body/0, json/1, header_value/0, cookie_header/0, cookie/2,
         qs_xml/1, large/0, upload_reply/1, route_paths/0, route_body/1,
         gzip_plain/0, gzip_body/0, stream_chunks/0, etag/0, etag_matches/1,
         slow_ms/0, survey_body/0, bench_headers/0, echo_payload/0, ws_max_frame/0,
         download_10mb/0]).

-define(LARGE_SIZE, 65536).

%% @doc The hello body.
-spec hello() -> binary().
hello() -> <<"Hello, World!">>.

%% @doc The json scenario's body: a small map, encoded on every call.
-spec json_body() -> binary().
json_body() ->
    iolist_to_binary(json(#{<<"message">> => <<"Hello, World!">>,
                            <<"id">> => 42,
                            <<"ok">> => true,
                            <<"tags">> => [<<"fast">>, <<"erlang">>, <<"http">>],
                            <<"ratio">> => 0.25})).

%% @doc A tiny JSON encoder (OTP 25 has no json module): maps with binary
%% keys (sorted), lists, binaries, integers, floats, booleans and null.
-spec json(term()) -> iodata().
json(M) when is_map(M) ->
    Pairs = [[json(K), $:, json(V)] || {K, V} <- lists:sort(maps:to_list(M))],
    [${, lists:join($,, Pairs), $}];
json(L) when is_list(L) -> [$[, lists:join($,, [json(E) || E <- L]), $]];
json(true) -> <<"true">>;
json(false) -> <<"false">>;
json(null) -> <<"null">>;
json(I) when is_integer(I) -> integer_to_binary(I);
json(F) when is_float(F) -> float_to_binary(F, [short]);
json(B) when is_binary(B) -> [$", escape(B), $"].

escape(B) ->
    [case C of
         $" -> <<"\\\"">>;
         $\\ -> <<"\\\\">>;
         C when C < 16#20 -> io_lib:format("\\u~4.16.0b", [C]);
         C -> C
     end || <<C>> <= B].

%% @doc The 20 extra request headers of headers_heavy (name, value).
-spec bench_headers() -> [{binary(), binary()}].
bench_headers() ->
    [{iolist_to_binary(io_lib:format("x-bench-~2..0b", [I])),
      iolist_to_binary(io_lib:format("value-~2..0b-0123456789abcdef0123456789", [I]))}
     || I <- lists:seq(1, 20)].

%% @doc What /headers answers: the value of x-bench-20.
-spec header_value() -> binary().
header_value() ->
    {_, V} = lists:last(bench_headers()),
    V.

%% @doc The Cookie header of cookies_heavy: 20 cookies c1..c20.
-spec cookie_header() -> binary().
cookie_header() ->
    iolist_to_binary(lists:join(<<"; ">>,
        [io_lib:format("c~b=cookie-value-~b-abcdefghijklmnop", [I, I]) || I <- lists:seq(1, 20)])).

%% @doc Parses a Cookie header (RFC 6265 §4.2.1 shape) and returns the
%% value of cookie `Name', or `undefined'. Every server uses this parser,
%% so the scenario costs every server the same work.
-spec cookie(binary(), binary() | undefined) -> binary() | undefined.
cookie(_Name, undefined) -> undefined;
cookie(Name, Header) ->
    find_cookie(Name, binary:split(Header, <<";">>, [global])).

find_cookie(_, []) -> undefined;
find_cookie(Name, [Pair | Rest]) ->
    case binary:split(skip_space(Pair), <<"=">>) of
        [Name, V] -> V;
        _ -> find_cookie(Name, Rest)
    end.

skip_space(<<C, R/binary>>) when C =:= $\s; C =:= $\t -> skip_space(R);
skip_space(B) -> B.

%% @doc The qs_xml reply for a raw query string (seed 003's workload):
%% the `value' parameter echoed inside XML, or an XML error when missing.
-spec qs_xml(binary()) -> binary().
qs_xml(Qs) ->
    Params = try uri_string:dissect_query(Qs) of
                 L when is_list(L) -> L;
                 _ -> []
             catch _:_ -> []
             end,
    case lists:keyfind(<<"value">>, 1, Params) of
        {_, V} when is_binary(V) ->
            <<"<http_test><value>", V/binary, "</value></http_test>">>;
        _ ->
            <<"<http_test><error>no value specified</error></http_test>">>
    end.

%% @doc The 64 KB body of large_response (made once, kept in persistent_term).
-spec large() -> binary().
large() ->
    case persistent_term:get({?MODULE, large}, undefined) of
        undefined ->
            Line = <<"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_\n">>,
            B = binary:copy(Line, ?LARGE_SIZE div byte_size(Line)),
            persistent_term:put({?MODULE, large}, B),
            B;
        B ->
            B
    end.

%% @doc The 256-byte body that echo POSTs.
%% @doc The 10 MB (10,485,760-byte) body of h3_download_10mb: large/0
%% 160 times, made once per BEAM.
-spec download_10mb() -> binary().
download_10mb() ->
    case persistent_term:get({?MODULE, download_10mb}, undefined) of
        undefined ->
            B = binary:copy(large(), 160),
            persistent_term:put({?MODULE, download_10mb}, B),
            B;
        B -> B
    end.

-spec echo_payload() -> binary().
echo_payload() ->
    binary:part(large(), 0, 256).

%% @doc The upload reply: the number of bytes read.
-spec upload_reply(non_neg_integer()) -> binary().
upload_reply(N) -> integer_to_binary(N).

%% @doc The 100 paths of varied_paths_router.
-spec route_paths() -> [binary()].
route_paths() -> [<<"/route/", (integer_to_binary(I))/binary>> || I <- lists:seq(1, 100)].

%% @doc The body for a route path, or `undefined' when it is not one of the
%% 100 routes (a 404). Servers without a router use this lookup.
-spec route_body(binary()) -> binary() | undefined.
route_body(<<"/route/", N/binary>>) ->
    try binary_to_integer(N) of
        I when I >= 1, I =< 100 -> <<"route ", N/binary>>;
        _ -> undefined
    catch _:_ -> undefined
    end;
route_body(_) -> undefined.

%% @doc The 16 KB text that /gzip compresses.
-spec gzip_plain() -> binary().
gzip_plain() -> binary:part(large(), 0, 16384).

%% @doc The gzip body, compressed on every call (the same work for every server).
-spec gzip_body() -> binary().
gzip_body() -> zlib:gzip(gzip_plain()).

%% @doc The pieces /stream sends as chunks.
-spec stream_chunks() -> [binary()].
stream_chunks() ->
    Piece = binary:part(large(), 0, 1024),
    lists:duplicate(8, Piece).

%% @doc The entity tag of /etag.
-spec etag() -> binary().
etag() -> <<"\"bench-v1\"">>.

%% @doc True when an If-None-Match value matches {@link etag/0}.
-spec etag_matches(binary() | undefined) -> boolean().
etag_matches(undefined) -> false;
etag_matches(V) -> binary:match(V, etag()) =/= nomatch orelse string:trim(V) =:= <<"*">>.

%% @doc How long /slow sleeps.
-spec slow_ms() -> pos_integer().
slow_ms() -> 100.

%% @doc What /survey answers (after slow_ms/0): 1 KB of text.
-spec survey_body() -> binary().
survey_body() -> binary:copy(<<"0123456789abcdef">>, 64).

%% @doc The WebSocket limit every fixture sets on frames and messages
%% (16 MB, falco's default; above ws_large's 1 MB messages).
-spec ws_max_frame() -> pos_integer().
ws_max_frame() -> 16 * 1024 * 1024.
