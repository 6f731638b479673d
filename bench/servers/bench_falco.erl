%% bench_falco: the falco fixture of the benchmark. Starts one falco
%% listener on 127.0.0.1:Port answering the paths of bench_fx with the
%% same bytes as every other fixture. Keep-alive is unlimited and the body
%% limit raised so no run is cut short by a default. varied_paths_router
%% goes through falco's router (falco_router) with the 100 routes, as
%% cowboy's fixture goes through cowboy_router; every other scenario uses
%% one handler. tls_handshake and idle_tls run a TLS listener with
%% bench_tls's options (and falco's defaults for the rest: ssl's processes
%% hibernate after the listener's hibernate_after). The h3_* scenarios
%% (bench_h3) run that TLS listener with `http3 => true': HTTP/3 over UDP
%% and HTTP/2 over TLS on the same port, the QUIC idle timeout raised to
%% 10 minutes so that the idle measurement is not cut.
%% GET /ws upgrades to a WebSocket echo (this module is also its
%% falco_ws_handler): no compression, bench_fx:ws_max_frame/0 on frames and
%% messages, no idle timeout, and the session hibernates from init/1 until
%% its first message (falco's way to keep an idle session small).
-module(bench_falco).

-export([start/2, start/3, version/0, handle/2]).
-export([init/1, handle_in/2]).

-define(MAX_BODY, 64 * 1024 * 1024).
-define(PIECE, 65536).

-spec start(inet:port_number(), atom()) -> ok | {error, term()}.
start(Port, Scenario) ->
    start(Port, Scenario, #{}).

%% @doc Like start/2 with extra listener options (bench_falco_socket).
-spec start(inet:port_number(), atom(), map()) -> ok | {error, term()}.
start(Port, Scenario, Extra) ->
    Dispatch = case Scenario of
                   varied_paths_router ->
                       #{routes => [{P, {?MODULE, {route, bench_fx:route_body(P)}},
                                     #{methods => [<<"GET">>]}}
                                    || P <- bench_fx:route_paths()]};
                   _ ->
                       #{handler => {?MODULE, Scenario}}
               end,
    Tls = case {bench_tls:scenario(Scenario), bench_tls:h3(Scenario)} of
              {true, true} -> #{transport => tls, tls_opts => bench_tls:server_opts(),
                                http3 => true, h3_idle_timeout => 600000};
              {true, false} -> #{transport => tls, tls_opts => bench_tls:server_opts()};
              {false, _} -> #{}
          end,
    Opts = maps:merge(maps:merge(Extra, Tls),
                      Dispatch#{port => Port, ip => {127, 0, 0, 1},
                                max_keep_alive_requests => infinity,
                                max_connections => 100000,
                                max_body => ?MAX_BODY}),
    case falco:start_listener(bench, Opts) of
        {ok, _} -> ok;
        Error -> Error
    end.

-spec version() -> string().
version() ->
    _ = application:load(falco),
    case application:get_key(falco, vsn) of
        {ok, V} -> V;
        undefined -> "?"
    end.

-spec handle(map(), atom() | {route, binary()}) -> tuple().
handle(_Req, {route, Body}) ->
    text(Body);
handle(Req, _Scenario) ->
    route(falco_req:method(Req), falco_req:path(Req), Req).

route(M, <<"/hello">>, _) when M =:= <<"GET">>; M =:= <<"HEAD">> ->
    text(bench_fx:hello());
route(<<"GET">>, <<"/json">>, _) ->
    {200, [{<<"content-type">>, <<"application/json">>}], bench_fx:json_body()};
route(<<"POST">>, <<"/echo">>, Req) ->
    {ok, Body, _} = falco_req:read_body(Req),
    {200, [{<<"content-type">>, <<"application/octet-stream">>}], Body};
route(<<"GET">>, <<"/headers">>, Req) ->
    text(falco_req:header(<<"x-bench-20">>, Req, <<>>));
route(<<"GET">>, <<"/cookies">>, Req) ->
    text(value(bench_fx:cookie(<<"c20">>, falco_req:header(<<"cookie">>, Req))));
route(<<"GET">>, <<"/qs">>, Req) ->
    {200, [{<<"content-type">>, <<"text/xml">>}], bench_fx:qs_xml(falco_req:qs(Req))};
route(<<"GET">>, <<"/download_10mb">>, _) ->
    {200, [{<<"content-type">>, <<"application/octet-stream">>}], bench_fx:download_10mb()};
route(<<"GET">>, <<"/large">>, _) ->
    {200, [{<<"content-type">>, <<"application/octet-stream">>}], bench_fx:large()};
route(<<"POST">>, <<"/upload">>, Req) ->
    {ok, Body, _} = falco_req:read_body(Req),
    text(bench_fx:upload_reply(byte_size(Body)));
route(<<"POST">>, <<"/upload_stream">>, Req) ->
    text(bench_fx:upload_reply(count_body(Req, 0)));
route(<<"GET">>, <<"/gzip">>, _) ->
    {200, [{<<"content-type">>, <<"text/plain">>}, {<<"content-encoding">>, <<"gzip">>}],
     bench_fx:gzip_body()};
route(<<"GET">>, <<"/stream">>, _) ->
    {stream, 200, [{<<"content-type">>, <<"application/octet-stream">>}],
     fun(Send) -> lists:foreach(Send, bench_fx:stream_chunks()) end};
route(<<"GET">>, <<"/etag">>, Req) ->
    case bench_fx:etag_matches(falco_req:header(<<"if-none-match">>, Req)) of
        true -> {304, [{<<"etag">>, bench_fx:etag()}], <<>>};
        false -> {200, [{<<"content-type">>, <<"text/plain">>}, {<<"etag">>, bench_fx:etag()}],
                  bench_fx:hello()}
    end;
route(<<"GET">>, <<"/slow">>, _) ->
    timer:sleep(bench_fx:slow_ms()),
    text(bench_fx:hello());
route(<<"GET">>, <<"/survey">>, _) ->
    timer:sleep(bench_fx:slow_ms()),
    text(bench_fx:survey_body());
route(<<"GET">>, <<"/ws">>, _) ->
    Max = bench_fx:ws_max_frame(),
    {websocket, ?MODULE, echo, #{compress => false, idle_timeout => infinity,
                                 max_frame_size => Max, max_message_size => Max}};
route(<<"GET">>, Path, _) ->
    case bench_fx:route_body(Path) of
        undefined -> not_found();
        Body -> text(Body)
    end;
route(_, _, _) ->
    not_found().

%% @doc WebSocket: the session sleeps until its first message.
-spec init(echo) -> {ok, echo, hibernate}.
init(State) ->
    {ok, State, hibernate}.

%% @doc WebSocket: every message comes back as it came.
-spec handle_in({text | binary, binary()}, echo) -> {reply, {text | binary, binary()}, echo}.
handle_in(Message, State) ->
    {reply, Message, State}.

count_body(Req, N) ->
    case falco_req:read_body(Req, #{length => ?PIECE}) of
        {more, Data, Req1} -> count_body(Req1, N + byte_size(Data));
        {ok, Data, _} -> N + byte_size(Data)
    end.

text(Body) ->
    {200, [{<<"content-type">>, <<"text/plain">>}], Body}.

value(undefined) -> <<>>;
value(V) -> V.

not_found() ->
    {404, [{<<"content-type">>, <<"text/plain">>}], <<"Not Found">>}.
