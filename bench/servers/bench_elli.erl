%% bench_elli: the elli 3.x fixture of the benchmark (elli comes from
%% --peer-libs). Starts elli on 127.0.0.1:Port answering the paths of
%% bench_fx with the same bytes as every other fixture. elli has no
%% keep-alive request limit; its body limit is raised for the uploads.
%% elli always buffers request bodies, so /upload_stream is buffered too.
-module(bench_elli).

-export([start/2, version/0, handle/2, handle_event/3]).

-spec start(inet:port_number(), atom()) -> ok | {error, term()}.
start(Port, Scenario) ->
    case elli:start_link([{callback, ?MODULE}, {callback_args, Scenario},
                          {ip, {127, 0, 0, 1}}, {port, Port},
                          {max_body_size, 64 * 1024 * 1024},
                          {request_timeout, 60000}]) of
        {ok, Pid} -> unlink(Pid), ok;
        Error -> Error
    end.

-spec version() -> string().
version() ->
    _ = application:load(elli),
    case application:get_key(elli, vsn) of
        {ok, V} -> V;
        undefined -> "?"
    end.

-spec handle(term(), atom()) -> term().
handle(Req, _Scenario) ->
    [Path | _] = binary:split(elli_request:raw_path(Req), <<"?">>),
    route(elli_request:method(Req), Path, Req).

-spec handle_event(atom(), term(), term()) -> ok.
handle_event(_Event, _Data, _Args) -> ok.

route(M, <<"/hello">>, _) when M =:= 'GET'; M =:= 'HEAD' ->
    text(bench_fx:hello());
route('GET', <<"/json">>, _) ->
    {200, [{<<"Content-Type">>, <<"application/json">>}], bench_fx:json_body()};
route('POST', <<"/echo">>, Req) ->
    {200, [{<<"Content-Type">>, <<"application/octet-stream">>}], elli_request:body(Req)};
route('GET', <<"/headers">>, Req) ->
    text(value(header(<<"x-bench-20">>, Req)));
route('GET', <<"/cookies">>, Req) ->
    text(value(bench_fx:cookie(<<"c20">>, header(<<"cookie">>, Req))));
route('GET', <<"/qs">>, Req) ->
    {200, [{<<"Content-Type">>, <<"text/xml">>}], bench_fx:qs_xml(elli_request:query_str(Req))};
route('GET', <<"/large">>, _) ->
    {200, [{<<"Content-Type">>, <<"application/octet-stream">>}], bench_fx:large()};
route('POST', P, Req) when P =:= <<"/upload">>; P =:= <<"/upload_stream">> ->
    text(bench_fx:upload_reply(byte_size(elli_request:body(Req))));
route('GET', <<"/gzip">>, _) ->
    {200, [{<<"Content-Type">>, <<"text/plain">>}, {<<"Content-Encoding">>, <<"gzip">>}],
     bench_fx:gzip_body()};
route('GET', <<"/stream">>, Req) ->
    %% elli streams from another process through the connection's chunk ref.
    Ref = elli_request:chunk_ref(Req),
    _ = spawn(fun() ->
                      lists:foreach(fun(C) -> elli_request:send_chunk(Ref, C) end,
                                    bench_fx:stream_chunks()),
                      elli_request:close_chunk(Ref)
              end),
    {chunk, [{<<"Content-Type">>, <<"application/octet-stream">>}]};
route('GET', <<"/etag">>, Req) ->
    case bench_fx:etag_matches(header(<<"if-none-match">>, Req)) of
        true -> {304, [{<<"ETag">>, bench_fx:etag()}], <<>>};
        false -> {200, [{<<"Content-Type">>, <<"text/plain">>}, {<<"ETag">>, bench_fx:etag()}],
                  bench_fx:hello()}
    end;
route('GET', <<"/slow">>, _) ->
    timer:sleep(bench_fx:slow_ms()),
    text(bench_fx:hello());
route('GET', <<"/survey">>, _) ->
    timer:sleep(bench_fx:slow_ms()),
    text(bench_fx:survey_body());
route('GET', Path, _) ->
    case bench_fx:route_body(Path) of
        undefined -> not_found();
        Body -> text(Body)
    end;
route(_, _, _) ->
    not_found().

%% elli keeps header names as sent (Erlang's packet parser only
%% canonicalises well-known ones), so look up without regard to case.
header(Name, Req) ->
    find(Name, elli_request:headers(Req)).

find(_, []) -> undefined;
find(Name, [{K, V} | T]) ->
    case string:lowercase(K) of
        Name -> V;
        _ -> find(Name, T)
    end.

text(Body) ->
    {200, [{<<"Content-Type">>, <<"text/plain">>}], Body}.

value(undefined) -> <<>>;
value(V) -> V.

not_found() ->
    {404, [{<<"Content-Type">>, <<"text/plain">>}], <<"Not Found">>}.
