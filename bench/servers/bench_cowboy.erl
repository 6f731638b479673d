%% bench_cowboy: the cowboy 2.x fixture of the benchmark (cowboy, cowlib
%% and ranch come from --peer-libs). Starts a clear-text cowboy listener on
%% 127.0.0.1:Port answering the paths of bench_fx with the same bytes as
%% every other fixture, with cowboy's default stream handler (what users
%% get). Keep-alive is effectively unlimited. varied_paths_router goes
%% through cowboy's own router with the 100 routes; every other scenario
%% uses one catch-all route. tls_handshake, idle_tls: cowboy:start_tls/3
%% with bench_tls's options (cowboy adds ALPN h2 and http/1.1; nothing
%% else, so ssl's processes never hibernate, as cowboy's users get them).
%% GET /ws upgrades to a cowboy_websocket echo (this module is also its
%% handler), set as falco's: no compression, bench_fx:ws_max_frame/0 on
%% frames, no idle timeout, and websocket_init/1 hibernates until the first
%% frame (cowboy's way to keep an idle connection small).
-module(bench_cowboy).

-export([start/2, version/0, init/2]).
-export([websocket_init/1, websocket_handle/2, websocket_info/2]).

-define(MAX_BODY, 64 * 1024 * 1024).
-define(PIECE, 65536).

-spec start(inet:port_number(), atom()) -> ok | {error, term()}.
start(Port, Scenario) ->
    {ok, _} = application:ensure_all_started(cowboy),
    Routes = case Scenario of
                 varied_paths_router -> [{binary_to_list(P), ?MODULE, route}
                                         || P <- bench_fx:route_paths()];
                 _ -> [{'_', ?MODULE, Scenario}]
             end,
    Dispatch = cowboy_router:compile([{'_', Routes}]),
    Trans = #{socket_opts => [{ip, {127, 0, 0, 1}}, {port, Port}],
              num_acceptors => 10, max_connections => infinity},
    Proto = #{env => #{dispatch => Dispatch},
              max_keepalive => 1000000000,
              idle_timeout => 60000,
              request_timeout => 60000},
    Started = case bench_tls:scenario(Scenario) of
                  true ->
                      {ok, _} = application:ensure_all_started(ssl),
                      cowboy:start_tls(bench, Trans#{socket_opts => maps:get(socket_opts, Trans)
                                                         ++ bench_tls:server_opts()}, Proto);
                  false ->
                      cowboy:start_clear(bench, Trans, Proto)
              end,
    case Started of
        {ok, _} -> ok;
        Error -> Error
    end.

-spec version() -> string().
version() ->
    case application:get_key(cowboy, vsn) of
        {ok, V} -> V;
        undefined -> "?"
    end.

-spec init(term(), atom()) -> {ok, term(), atom()} | {cowboy_websocket, term(), echo, map()}.
init(Req, route) ->
    {ok, text(route_body(cowboy_req:path(Req)), Req), route};
init(Req, State) ->
    case {cowboy_req:method(Req), cowboy_req:path(Req)} of
        {<<"GET">>, <<"/ws">>} ->
            {cowboy_websocket, Req, echo, #{compress => false, idle_timeout => infinity,
                                            max_frame_size => bench_fx:ws_max_frame()}};
        {Method, Path} ->
            {ok, route(Method, Path, Req), State}
    end.

%% @doc WebSocket: the connection sleeps until its first frame.
-spec websocket_init(echo) -> {[], echo, hibernate}.
websocket_init(State) ->
    {[], State, hibernate}.

%% @doc WebSocket: text and binary messages come back as they came.
-spec websocket_handle(term(), echo) -> {[{text | binary, binary()}], echo}.
websocket_handle({Kind, Data}, State) when Kind =:= text; Kind =:= binary ->
    {[{Kind, Data}], State};
websocket_handle(_Frame, State) ->
    {[], State}.

-spec websocket_info(term(), echo) -> {[], echo}.
websocket_info(_Msg, State) ->
    {[], State}.

route_body(Path) ->
    case bench_fx:route_body(Path) of
        undefined -> <<>>;
        B -> B
    end.

route(M, <<"/hello">>, Req) when M =:= <<"GET">>; M =:= <<"HEAD">> ->
    text(bench_fx:hello(), Req);
route(<<"GET">>, <<"/json">>, Req) ->
    cowboy_req:reply(200, #{<<"content-type">> => <<"application/json">>},
                     bench_fx:json_body(), Req);
route(<<"POST">>, <<"/echo">>, Req) ->
    {Body, Req1} = read_all(Req, <<>>),
    cowboy_req:reply(200, #{<<"content-type">> => <<"application/octet-stream">>}, Body, Req1);
route(<<"GET">>, <<"/headers">>, Req) ->
    text(cowboy_req:header(<<"x-bench-20">>, Req, <<>>), Req);
route(<<"GET">>, <<"/cookies">>, Req) ->
    text(value(bench_fx:cookie(<<"c20">>, cowboy_req:header(<<"cookie">>, Req))), Req);
route(<<"GET">>, <<"/qs">>, Req) ->
    cowboy_req:reply(200, #{<<"content-type">> => <<"text/xml">>},
                     bench_fx:qs_xml(cowboy_req:qs(Req)), Req);
route(<<"GET">>, <<"/large">>, Req) ->
    cowboy_req:reply(200, #{<<"content-type">> => <<"application/octet-stream">>},
                     bench_fx:large(), Req);
route(<<"POST">>, <<"/upload">>, Req) ->
    {Body, Req1} = read_all(Req, <<>>),
    text(bench_fx:upload_reply(byte_size(Body)), Req1);
route(<<"POST">>, <<"/upload_stream">>, Req) ->
    {N, Req1} = count_body(Req, 0),
    text(bench_fx:upload_reply(N), Req1);
route(<<"GET">>, <<"/gzip">>, Req) ->
    cowboy_req:reply(200, #{<<"content-type">> => <<"text/plain">>,
                            <<"content-encoding">> => <<"gzip">>},
                     bench_fx:gzip_body(), Req);
route(<<"GET">>, <<"/stream">>, Req) ->
    Req1 = cowboy_req:stream_reply(200, #{<<"content-type">> => <<"application/octet-stream">>}, Req),
    lists:foreach(fun(C) -> cowboy_req:stream_body(C, nofin, Req1) end, bench_fx:stream_chunks()),
    ok = cowboy_req:stream_body(<<>>, fin, Req1),
    Req1;
route(<<"GET">>, <<"/etag">>, Req) ->
    case bench_fx:etag_matches(cowboy_req:header(<<"if-none-match">>, Req)) of
        true -> cowboy_req:reply(304, #{<<"etag">> => bench_fx:etag()}, Req);
        false -> cowboy_req:reply(200, #{<<"content-type">> => <<"text/plain">>,
                                         <<"etag">> => bench_fx:etag()},
                                  bench_fx:hello(), Req)
    end;
route(<<"GET">>, <<"/slow">>, Req) ->
    timer:sleep(bench_fx:slow_ms()),
    text(bench_fx:hello(), Req);
route(<<"GET">>, <<"/survey">>, Req) ->
    timer:sleep(bench_fx:slow_ms()),
    text(bench_fx:survey_body(), Req);
route(<<"GET">>, Path, Req) ->
    case bench_fx:route_body(Path) of
        undefined -> not_found(Req);
        Body -> text(Body, Req)
    end;
route(_, _, Req) ->
    not_found(Req).

read_all(Req, Acc) ->
    case cowboy_req:read_body(Req, #{length => ?MAX_BODY}) of
        {ok, Data, Req1} -> {<<Acc/binary, Data/binary>>, Req1};
        {more, Data, Req1} -> read_all(Req1, <<Acc/binary, Data/binary>>)
    end.

count_body(Req, N) ->
    case cowboy_req:read_body(Req, #{length => ?PIECE}) of
        {ok, Data, Req1} -> {N + byte_size(Data), Req1};
        {more, Data, Req1} -> count_body(Req1, N + byte_size(Data))
    end.

text(Body, Req) ->
    cowboy_req:reply(200, #{<<"content-type">> => <<"text/plain">>}, Body, Req).

value(undefined) -> <<>>;
value(V) -> V.

not_found(Req) ->
    cowboy_req:reply(404, #{<<"content-type">> => <<"text/plain">>}, <<"Not Found">>, Req).
