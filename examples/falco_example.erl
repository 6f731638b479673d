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
%%
%% `make run' serves it over HTTP/1.1 and h2c on 8080, and over TLS on 8443
%% (ALPN h2 and http/1.1) with a self-signed certificate made on first run
%% in _build/examples.
-module(falco_example).
-behaviour(falco_handler).

-export([start/0, start/1, start_tls/1, main/0, handle/2]).

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

%% @doc The example over TLS (HTTP/2 and HTTP/1.1 by ALPN), with a
%% self-signed certificate kept in `Dir' (made there if missing).
-spec start_tls(file:filename()) -> {ok, pid()} | {error, term()}.
start_tls(Dir) ->
    {Cert, Key} = self_signed(Dir),
    falco:start_listener(falco_example_tls,
                         #{ip => {127, 0, 0, 1}, port => 8443, handler => {?MODULE, file_path()},
                           transport => tls, tls_opts => [{certfile, Cert}, {keyfile, Key}]}).

self_signed(Dir) ->
    Cert = filename:join(Dir, "example-cert.pem"),
    Key = filename:join(Dir, "example-key.pem"),
    case filelib:is_regular(Cert) andalso filelib:is_regular(Key) of
        true ->
            ok;
        false ->
            {ok, _} = application:ensure_all_started(ssl),
            Opts = [{key, {namedCurve, secp256r1}}, {digest, sha256}],
            #{server_config := Conf} = public_key:pkix_test_data(
                                         #{server_chain => #{root => Opts, intermediates => [],
                                                             peer => Opts},
                                           client_chain => #{root => Opts, intermediates => [],
                                                             peer => Opts}}),
            {_, {Type, KeyDer}} = lists:keyfind(key, 1, Conf),
            {_, CertDer} = lists:keyfind(cert, 1, Conf),
            ok = file:write_file(Cert, public_key:pem_encode([{'Certificate', CertDer, not_encrypted}])),
            ok = file:write_file(Key, public_key:pem_encode([{Type, KeyDer, not_encrypted}]))
    end,
    {Cert, Key}.

%% @doc Entry point of `make run': start, print the URLs, run until Ctrl-C.
-spec main() -> no_return().
main() ->
    case {start(), start_tls(filename:dirname(code:which(?MODULE)))} of
        {{ok, _}, {ok, _}} ->
            {ok, Port} = falco:port(falco_example),
            {ok, TlsPort} = falco:port(falco_example_tls),
            io:format("falco example listening on http://127.0.0.1:~b/ (HTTP/1.1, h2c) and~n"
                      "https://127.0.0.1:~b/ (HTTP/2 and HTTP/1.1, self-signed: curl -k)"
                      " (Ctrl-C to stop)~n", [Port, TlsPort]),
            receive after infinity -> ok end;
        Failed ->
            io:format(standard_error, "falco example failed to start: ~p~n", [Failed]),
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
