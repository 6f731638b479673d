%% @doc The example server that `make run' starts: one handler module
%% showing each kind of response falco offers.
%%
%%   GET  /        200 text/plain "Hello from falco!"
%%   POST /echo    the request body, byte for byte
%%   GET  /json    a small JSON document
%%   GET  /stream  a chunked reply sent in pieces
%%   GET  /file    examples/priv/hello.txt, sent with sendfile
%%   GET  /static/ POST /upload  GET /events   see falco_example_files
%%
%% Responses are compressed (gzip/deflate) when the client accepts it.
-module(falco_example).
-behaviour(falco_handler).

-export([start/0, start/1, main/0, handle/2]).

%% @doc Starts the example on 127.0.0.1:8080.
-spec start() -> {ok, pid()} | {error, term()}.
start() ->
    start(#{}).

%% @doc Starts the example with extra listener options (tests use port 0).
-spec start(map()) -> {ok, pid()} | {error, term()}.
start(Opts) ->
    falco:start_listener(falco_example,
                         maps:merge(#{ip => {127, 0, 0, 1}, port => 8080,
                                      handler => {?MODULE, file_path()}}, Opts)).

%% @doc Entry point of `make run': start, print the URL, run until Ctrl-C.
-spec main() -> no_return().
main() ->
    case start() of
        {ok, _} ->
            {ok, Port} = falco:port(falco_example),
            io:format("falco example listening on http://127.0.0.1:~b/ (Ctrl-C to stop)~n", [Port]),
            receive after infinity -> ok end;
        {error, Reason} ->
            io:format(standard_error, "falco example failed to start: ~p~n", [Reason]),
            erlang:halt(1)
    end.

%% @private
-spec handle(falco_req:req(), file:filename()) -> falco_handler:response().
handle(Req, File) ->
    %% HEAD is GET without the body; falco drops the body for us.
    Method = case falco_req:method(Req) of
                 <<"HEAD">> -> <<"GET">>;
                 M -> M
             end,
    falco_compress:call(Req, fun(R) -> route(Method, falco_req:path(R), R, File) end, #{}).

route(<<"GET">>, <<"/">>, _Req, _) ->
    {200, [{<<"content-type">>, <<"text/plain">>}], <<"Hello from falco!\n">>};
route(<<"POST">>, <<"/echo">>, Req, _) ->
    {ok, Body, _} = falco_req:read_body(Req),
    Type = falco_req:header(<<"content-type">>, Req, <<"application/octet-stream">>),
    {200, [{<<"content-type">>, Type}], Body};
route(<<"GET">>, <<"/json">>, _Req, _) ->
    {200, [{<<"content-type">>, <<"application/json">>}],
     <<"{\"server\":\"falco\",\"message\":\"Hello, World!\"}">>};
route(<<"GET">>, <<"/stream">>, _Req, _) ->
    {stream, 200, [{<<"content-type">>, <<"text/plain">>}],
     fun(Send) ->
             lists:foreach(fun(I) -> Send([<<"chunk ">>, integer_to_binary(I), <<"\n">>]) end,
                           lists:seq(1, 5))
     end};
route(_, <<"/static", _/binary>>, Req, _) ->
    falco_example_files:static(Req);
route(<<"POST">>, <<"/upload">>, Req, _) ->
    falco_example_files:upload(Req);
route(<<"GET">>, <<"/events">>, Req, _) ->
    falco_example_files:events(Req);
route(<<"GET">>, <<"/file">>, _Req, File) ->
    {200, [{<<"content-type">>, <<"text/plain">>}], {file, File}};
route(Method, Path, _Req, _) when Path =:= <<"/">>; Path =:= <<"/echo">>; Path =:= <<"/json">>;
                                  Path =:= <<"/stream">>; Path =:= <<"/file">> ->
    _ = Method,
    {405, [{<<"allow">>, allow(Path)}], <<"Method Not Allowed\n">>};
route(_, _, _, _) ->
    {404, [{<<"content-type">>, <<"text/plain">>}], <<"Not Found\n">>}.

allow(<<"/echo">>) -> <<"POST">>;
allow(_) -> <<"GET, HEAD">>.

file_path() ->
    Dir = filename:dirname(code:which(?MODULE)),
    Candidates = [filename:join([Dir, "..", "examples", "priv", "hello.txt"]),
                  filename:join([Dir, "..", "..", "..", "..", "examples", "priv", "hello.txt"]),
                  filename:join(["examples", "priv", "hello.txt"])],
    case [F || F <- Candidates, filelib:is_regular(F)] of
        [F | _] -> filename:absname(F);
        [] -> filename:absname(lists:last(Candidates))
    end.
