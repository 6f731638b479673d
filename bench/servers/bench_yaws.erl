%% bench_yaws: the yaws fixture of the benchmark (Debian's erlang-yaws, or
%% --peer-libs). Starts yaws embedded on 127.0.0.1:Port with this module as
%% the appmod of "/", answering the paths of bench_fx with the same bytes
%% as every other fixture; no keep-alive request limit, no access log,
%% whole POST bodies delivered at once (partial_post_size nolimit). Uses
%% yaws_api accessors instead of its records so it compiles without yaws.
-module(bench_yaws).

-export([start/2, version/0, out/1]).

-spec start(inet:port_number(), atom()) -> ok | {error, term()}.
start(Port, _Scenario) ->
    Dir = filename:basedir(user_cache, "falco-bench-yaws"),
    ok = filelib:ensure_dir(filename:join(Dir, "x")),
    GConf = [{id, "bench"}, {logdir, Dir}, {ebin_dir, []}, {include_dir, []},
             {keepalive_maxuses, nolimit}, {max_connections, nolimit}],
    SConf = [{port, Port}, {listen, {127, 0, 0, 1}}, {servername, "bench"},
             {docroot, Dir}, {appmods, [{"/", ?MODULE}]}, {access_log, false},
             {partial_post_size, nolimit}],
    yaws:start_embedded(Dir, SConf, GConf, "bench").

-spec version() -> string().
version() ->
    _ = application:load(yaws),
    case application:get_key(yaws, vsn) of
        {ok, V} -> V;
        undefined -> "?"
    end.

-spec out(term()) -> list().
out(Arg) ->
    Method = yaws_api:http_request_method(yaws_api:arg_req(Arg)),
    Path = list_to_binary(yaws_api:arg_server_path(Arg)),
    route(Method, Path, Arg).

route(M, <<"/hello">>, _) when M =:= 'GET'; M =:= 'HEAD' ->
    reply(200, "text/plain", [], bench_fx:hello());
route('GET', <<"/json">>, _) ->
    reply(200, "application/json", [], bench_fx:json_body());
route('POST', <<"/echo">>, Arg) ->
    reply(200, "application/octet-stream", [], body(Arg));
route('GET', <<"/headers">>, Arg) ->
    reply(200, "text/plain", [], value(header("x-bench-20", Arg)));
route('GET', <<"/cookies">>, Arg) ->
    Cookie = case yaws_api:headers_cookie(yaws_api:arg_headers(Arg)) of
                 [] -> undefined;
                 Cs -> list_to_binary(lists:join("; ", Cs))
             end,
    reply(200, "text/plain", [], value(bench_fx:cookie(<<"c20">>, Cookie)));
route('GET', <<"/qs">>, Arg) ->
    Qs = case yaws_api:arg_querydata(Arg) of
             undefined -> <<>>;
             Q -> list_to_binary(Q)
         end,
    reply(200, "text/xml", [], bench_fx:qs_xml(Qs));
route('GET', <<"/large">>, _) ->
    reply(200, "application/octet-stream", [], bench_fx:large());
route('POST', P, Arg) when P =:= <<"/upload">>; P =:= <<"/upload_stream">> ->
    reply(200, "text/plain", [], bench_fx:upload_reply(byte_size(body(Arg))));
route('GET', <<"/gzip">>, _) ->
    reply(200, "text/plain", [{"Content-Encoding", "gzip"}], bench_fx:gzip_body());
route('GET', <<"/stream">>, Arg) ->
    Pid = yaws_api:arg_pid(Arg),
    _ = spawn(fun() ->
                      lists:foreach(fun(C) -> yaws_api:stream_chunk_deliver(Pid, C) end,
                                    bench_fx:stream_chunks()),
                      yaws_api:stream_chunk_end(Pid)
              end),
    [{status, 200}, {streamcontent, "application/octet-stream", <<>>}];
route('GET', <<"/etag">>, Arg) ->
    ETag = binary_to_list(bench_fx:etag()),
    INM = case yaws_api:headers_if_none_match(yaws_api:arg_headers(Arg)) of
              undefined -> undefined;
              V -> list_to_binary(V)
          end,
    case bench_fx:etag_matches(INM) of
        true -> [{status, 304}, {header, {"ETag", ETag}}];
        false -> reply(200, "text/plain", [{"ETag", ETag}], bench_fx:hello())
    end;
route('GET', <<"/slow">>, _) ->
    timer:sleep(bench_fx:slow_ms()),
    reply(200, "text/plain", [], bench_fx:hello());
route('GET', <<"/survey">>, _) ->
    timer:sleep(bench_fx:slow_ms()),
    reply(200, "text/plain", [], bench_fx:survey_body());
route('GET', Path, _) ->
    case bench_fx:route_body(Path) of
        undefined -> reply(404, "text/plain", [], <<"Not Found">>);
        Body -> reply(200, "text/plain", [], Body)
    end;
route(_, _, _) ->
    reply(404, "text/plain", [], <<"Not Found">>).

reply(Status, Type, Extra, Body) ->
    [{status, Status} | [{header, H} || H <- Extra]] ++ [{content, Type, Body}].

body(Arg) ->
    case yaws_api:arg_clidata(Arg) of
        B when is_binary(B) -> B;
        undefined -> <<>>;
        L -> iolist_to_binary(L)
    end.

%% Headers yaws has no field for are in headers_other as
%% {http_header, _, Name, _, Value}, Name as sent.
header(Name, Arg) ->
    Other = yaws_api:headers_other(yaws_api:arg_headers(Arg)),
    case [V || {http_header, _, K, _, V} <- Other, string:lowercase(to_list(K)) =:= Name] of
        [V | _] -> list_to_binary(V);
        [] -> undefined
    end.

to_list(A) when is_atom(A) -> atom_to_list(A);
to_list(L) -> L.

value(undefined) -> <<>>;
value(V) -> V.
