%% bench_mochiweb: the mochiweb fixture of the benchmark (Debian's
%% erlang-mochiweb, or --peer-libs). Starts mochiweb_http on
%% 127.0.0.1:Port with nodelay and room for many connections, answering the
%% paths of bench_fx with the same bytes as every other fixture. mochiweb
%% has no keep-alive request limit; /upload_stream uses its stream_body.
-module(bench_mochiweb).

-export([start/2, version/0]).

-define(MAX_BODY, 64 * 1024 * 1024).
-define(PIECE, 65536).

-spec start(inet:port_number(), atom()) -> ok | {error, term()}.
start(Port, _Scenario) ->
    case mochiweb_http:start_link([{name, bench_mochiweb}, {ip, {127, 0, 0, 1}}, {port, Port},
                                   {nodelay, true}, {max, 100000}, {acceptor_pool_size, 16},
                                   {loop, fun handle/1}]) of
        {ok, Pid} -> unlink(Pid), ok;
        Error -> Error
    end.

-spec version() -> string().
version() ->
    _ = application:load(mochiweb),
    case application:get_key(mochiweb, vsn) of
        {ok, V} -> V;
        undefined -> "?"
    end.

handle(Req) ->
    {Path, Qs} = case string:split(mochiweb_request:get(raw_path, Req), "?") of
                     [P, Q] -> {list_to_binary(P), list_to_binary(Q)};
                     [P] -> {list_to_binary(P), <<>>}
                 end,
    route(mochiweb_request:get(method, Req), Path, Qs, Req).

route(M, <<"/hello">>, _, Req) when M =:= 'GET'; M =:= 'HEAD' ->
    reply(Req, 200, "text/plain", [], bench_fx:hello());
route('GET', <<"/json">>, _, Req) ->
    reply(Req, 200, "application/json", [], bench_fx:json_body());
route('POST', <<"/echo">>, _, Req) ->
    reply(Req, 200, "application/octet-stream", [], mochiweb_request:recv_body(?MAX_BODY, Req));
route('GET', <<"/headers">>, _, Req) ->
    reply(Req, 200, "text/plain", [], value(header("x-bench-20", Req)));
route('GET', <<"/cookies">>, _, Req) ->
    reply(Req, 200, "text/plain", [], value(bench_fx:cookie(<<"c20">>, header("cookie", Req))));
route('GET', <<"/qs">>, Qs, Req) ->
    reply(Req, 200, "text/xml", [], bench_fx:qs_xml(Qs));
route('GET', <<"/large">>, _, Req) ->
    reply(Req, 200, "application/octet-stream", [], bench_fx:large());
route('POST', <<"/upload">>, _, Req) ->
    Body = mochiweb_request:recv_body(?MAX_BODY, Req),
    reply(Req, 200, "text/plain", [], bench_fx:upload_reply(byte_size(Body)));
route('POST', <<"/upload_stream">>, _, Req) ->
    Count = fun({_, B}, N) when is_binary(B) -> N + byte_size(B);
               (_, N) -> N
            end,
    N = mochiweb_request:stream_body(?PIECE, Count, 0, ?MAX_BODY, Req),
    reply(Req, 200, "text/plain", [], bench_fx:upload_reply(N));
route('GET', <<"/gzip">>, _, Req) ->
    reply(Req, 200, "text/plain", [{"Content-Encoding", "gzip"}], bench_fx:gzip_body());
route('GET', <<"/stream">>, _, Req) ->
    Resp = mochiweb_request:respond({200, [{"Content-Type", "application/octet-stream"}], chunked},
                                    Req),
    lists:foreach(fun(C) -> mochiweb_response:write_chunk(C, Resp) end, bench_fx:stream_chunks()),
    mochiweb_response:write_chunk(<<>>, Resp);
route('GET', <<"/etag">>, _, Req) ->
    ETag = bench_fx:etag(),
    case bench_fx:etag_matches(header("if-none-match", Req)) of
        true -> mochiweb_request:respond({304, [{"ETag", ETag}], <<>>}, Req);
        false -> reply(Req, 200, "text/plain", [{"ETag", ETag}], bench_fx:hello())
    end;
route('GET', <<"/slow">>, _, Req) ->
    timer:sleep(bench_fx:slow_ms()),
    reply(Req, 200, "text/plain", [], bench_fx:hello());
route('GET', <<"/survey">>, _, Req) ->
    timer:sleep(bench_fx:slow_ms()),
    reply(Req, 200, "text/plain", [], bench_fx:survey_body());
route('GET', Path, _, Req) ->
    case bench_fx:route_body(Path) of
        undefined -> reply(Req, 404, "text/plain", [], <<"Not Found">>);
        Body -> reply(Req, 200, "text/plain", [], Body)
    end;
route(_, _, _, Req) ->
    reply(Req, 404, "text/plain", [], <<"Not Found">>).

reply(Req, Status, Type, Extra, Body) ->
    mochiweb_request:respond({Status, [{"Content-Type", Type} | Extra], Body}, Req).

header(Name, Req) ->
    case mochiweb_request:get_header_value(Name, Req) of
        undefined -> undefined;
        V -> list_to_binary(V)
    end.

value(undefined) -> <<>>;
value(V) -> V.
