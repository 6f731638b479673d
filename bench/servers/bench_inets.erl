%% bench_inets: the OTP inets httpd fixture of the benchmark (always
%% available, so it is the peer of `make bench-smoke'). Starts httpd on
%% 127.0.0.1:Port with nodelay, keep-alive without a request limit, and
%% this module as its only request module (httpd's `do/1' API), answering
%% the paths of bench_fx with the same bytes as every other fixture.
%% httpd hands the body over as a string, buffered, for both uploads.
-module(bench_inets).

-include_lib("inets/include/httpd.hrl").

-export([start/2, version/0, do/1]).

-spec start(inet:port_number(), atom()) -> ok | {error, term()}.
start(Port, _Scenario) ->
    %% OTP 25's httpd crashes on {socket_type, {ip_comm, Opts}} (no such
    %% clause in http_transport:listen/4), so nodelay comes from the
    %% kernel's default listen options, which accepted sockets inherit.
    ok = application:set_env(kernel, inet_default_listen_options, [{nodelay, true}]),
    ok = inets:start(),
    Root = filename:basedir(user_cache, "falco-bench-inets"),
    ok = filelib:ensure_dir(filename:join(Root, "x")),
    case inets:start(httpd, [{port, Port}, {bind_address, {127, 0, 0, 1}},
                             {server_name, "bench"}, {server_root, Root},
                             {document_root, Root}, {modules, [?MODULE]},
                             {keep_alive, true}, {keep_alive_timeout, 60},
                             {max_clients, 100000},
                             {max_body_size, 64 * 1024 * 1024},
                             {max_header_size, 65536},
                             {socket_type, ip_comm}]) of
        {ok, _} -> ok;
        Error -> Error
    end.

-spec version() -> string().
version() ->
    {ok, V} = application:get_key(inets, vsn),
    V.

-spec do(#mod{}) -> {proceed, list()}.
do(Mod = #mod{method = Method, request_uri = Uri}) ->
    {Path, Qs} = case string:split(Uri, "?") of
                     [P, Q] -> {list_to_binary(P), list_to_binary(Q)};
                     [P] -> {list_to_binary(P), <<>>}
                 end,
    route(Method, Path, Qs, Mod).

route(M, <<"/hello">>, _, Mod) when M =:= "GET"; M =:= "HEAD" ->
    reply(Mod, 200, "text/plain", [], bench_fx:hello());
route("GET", <<"/json">>, _, Mod) ->
    reply(Mod, 200, "application/json", [], bench_fx:json_body());
route("POST", <<"/echo">>, _, Mod) ->
    reply(Mod, 200, "application/octet-stream", [], list_to_binary(Mod#mod.entity_body));
route("GET", <<"/headers">>, _, Mod) ->
    reply(Mod, 200, "text/plain", [], value(header("x-bench-20", Mod)));
route("GET", <<"/cookies">>, _, Mod) ->
    reply(Mod, 200, "text/plain", [], value(bench_fx:cookie(<<"c20">>, header("cookie", Mod))));
route("GET", <<"/qs">>, Qs, Mod) ->
    reply(Mod, 200, "text/xml", [], bench_fx:qs_xml(Qs));
route("GET", <<"/large">>, _, Mod) ->
    reply(Mod, 200, "application/octet-stream", [], bench_fx:large());
route("POST", P, _, Mod) when P =:= <<"/upload">>; P =:= <<"/upload_stream">> ->
    reply(Mod, 200, "text/plain", [], bench_fx:upload_reply(length(Mod#mod.entity_body)));
route("GET", <<"/gzip">>, _, Mod) ->
    reply(Mod, 200, "text/plain", [{content_encoding, "gzip"}], bench_fx:gzip_body());
route("GET", <<"/stream">>, _, Mod) ->
    ok = httpd_response:send_header(Mod, 200, [{content_type, "application/octet-stream"},
                                               {transfer_encoding, "chunked"}]),
    lists:foreach(fun(C) -> httpd_response:send_chunk(Mod, C, false) end,
                  bench_fx:stream_chunks()),
    httpd_response:send_final_chunk(Mod, false),
    {proceed, [{response, {already_sent, 200, 0}}]};
route("GET", <<"/etag">>, _, Mod) ->
    ETag = binary_to_list(bench_fx:etag()),
    case bench_fx:etag_matches(header("if-none-match", Mod)) of
        true ->
            {proceed, [{response, {response, [{code, 304}, {etag, ETag}], <<>>}}]};
        false ->
            reply(Mod, 200, "text/plain", [{etag, ETag}], bench_fx:hello())
    end;
route("GET", <<"/slow">>, _, Mod) ->
    timer:sleep(bench_fx:slow_ms()),
    reply(Mod, 200, "text/plain", [], bench_fx:hello());
route("GET", <<"/survey">>, _, Mod) ->
    timer:sleep(bench_fx:slow_ms()),
    reply(Mod, 200, "text/plain", [], bench_fx:survey_body());
route("GET", Path, _, Mod) ->
    case bench_fx:route_body(Path) of
        undefined -> reply(Mod, 404, "text/plain", [], <<"Not Found">>);
        Body -> reply(Mod, 200, "text/plain", [], Body)
    end;
route(_, _, _, Mod) ->
    reply(Mod, 404, "text/plain", [], <<"Not Found">>).

%% httpd's "new way" response: we give the Content-Length, and drop the
%% body of a HEAD reply ourselves (httpd would send it).
reply(#mod{method = Method}, Status, Type, Extra, Body) ->
    Head = [{code, Status}, {content_type, Type},
            {content_length, integer_to_list(iolist_size(Body))} | Extra],
    Sent = case Method of
               "HEAD" -> <<>>;
               _ -> Body
           end,
    {proceed, [{response, {response, Head, Sent}}]}.

header(Name, #mod{parsed_header = H}) ->
    case lists:keyfind(Name, 1, H) of
        {_, V} -> list_to_binary(V);
        false -> undefined
    end.

value(undefined) -> <<>>;
value(V) -> V.
