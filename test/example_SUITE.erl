%% The example application (examples/falco_example.erl, what `make run'
%% starts) on an ephemeral port: each route it documents, over the raw
%% test client, checked byte for byte.
-module(example_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1]).
-export([root_hello/1, root_head/1, echo_small/1, echo_1mb/1, echo_chunked_upload/1,
         json_route/1, stream_route/1, file_route/1, keep_alive_across_routes/1,
         wrong_method_and_unknown_path/1]).

-define(C, falco_test_client).
-define(HOST, "Host: localhost\r\n").

all() ->
    [root_hello, root_head, echo_small, echo_1mb, echo_chunked_upload, json_route, stream_route,
     file_route, keep_alive_across_routes, wrong_method_and_unknown_path].

init_per_suite(Config) ->
    ok = falco_test_listener:start_app(),
    {ok, _} = falco_example:start(#{port => 0}),
    [{port, falco_test_listener:port(falco_example)} | Config].

end_per_suite(Config) ->
    ok = falco_test_listener:stop(falco_example),
    Config.

%% -- helpers -----------------------------------------------------------------

port(Config) -> ?config(port, Config).

%% One request on a new connection; the final response.
ask(Config, Raw) ->
    ask(Config, Raw, #{}).

ask(Config, Raw, Opts) ->
    {Sock, {ok, Resp}} = ?C:request(port(Config), Raw, Opts),
    ?C:close(Sock),
    Resp.

get_path(Config, Path) ->
    falco_test_http:fetch(http, port(Config), <<"GET">>, Path, [], <<>>).

post(Body) ->
    [<<"POST /echo HTTP/1.1\r\n" ?HOST "Content-Length: ">>, integer_to_binary(byte_size(Body)),
     <<"\r\n\r\n">>, Body].

%% The file the example serves, as shipped next to its compiled module.
hello_file() ->
    Dir = filename:dirname(code:which(falco_example)),
    {ok, Bin} = file:read_file(filename:join([Dir, "priv", "hello.txt"])),
    Bin.

%% -- routes ------------------------------------------------------------------

%% GET /: 200, the HTML index page, linking the demo page.
root_hello(Config) ->
    R = get_path(Config, <<"/">>),
    #{status := 200, body := <<"<!DOCTYPE html>", _/binary>> = Body, framing := length} = R,
    ?assertEqual(<<"text/html; charset=utf-8">>, ?C:header(<<"content-type">>, R)),
    ?assertEqual(integer_to_binary(byte_size(Body)), ?C:header(<<"content-length">>, R)),
    ?assertNotEqual(nomatch, binary:match(Body, <<"href=\"/static/\"">>)),
    %% the protocol that carried it
    ?assertNotEqual(nomatch, binary:match(Body, <<"came over <strong>HTTP/1.1</strong>">>)),
    ?assertNotEqual(undefined, ?C:header(<<"date">>, R)).

%% HEAD /: the same fields, no body (RFC 9110 §9.3.2).
root_head(Config) ->
    #{body := Body} = get_path(Config, <<"/">>),
    R = ask(Config, <<"HEAD / HTTP/1.1\r\n" ?HOST "\r\n">>, #{head => true}),
    #{status := 200, body := <<>>} = R,
    ?assertEqual(integer_to_binary(byte_size(Body)), ?C:header(<<"content-length">>, R)).

%% POST /echo: the body back, byte for byte, with the request's content type.
echo_small(Config) ->
    Body = <<"any bytes: ", 0, 1, 2, 255, "\r\n\r\n">>,
    R = ask(Config, [<<"POST /echo HTTP/1.1\r\n" ?HOST "Content-Type: application/x-test\r\n"
                       "Content-Length: ">>, integer_to_binary(byte_size(Body)), <<"\r\n\r\n">>, Body]),
    #{status := 200, body := Body} = R,
    ?assertEqual(<<"application/x-test">>, ?C:header(<<"content-type">>, R)),
    %% Without a content type the echo is application/octet-stream.
    R2 = ask(Config, post(<<"x">>)),
    #{status := 200, body := <<"x">>} = R2,
    ?assertEqual(<<"application/octet-stream">>, ?C:header(<<"content-type">>, R2)).

%% POST /echo with 1 MB of random bytes.
echo_1mb(Config) ->
    Body = crypto:strong_rand_bytes(1024 * 1024),
    R = ask(Config, post(Body), #{timeout => 20000}),
    #{status := 200} = R,
    ?assertEqual(<<"1048576">>, ?C:header(<<"content-length">>, R)),
    ?assert(maps:get(body, R) =:= Body).

%% POST /echo with a chunked body (RFC 9112 §7.1), sent in pieces.
echo_chunked_upload(Config) ->
    Sock = ?C:connect(port(Config)),
    ?C:send(Sock, <<"POST /echo HTTP/1.1\r\n" ?HOST "Transfer-Encoding: chunked\r\n\r\n">>),
    Pieces = [<<"first ">>, crypto:strong_rand_bytes(70000), <<" last">>],
    [begin
         ?C:send(Sock, [integer_to_binary(byte_size(P), 16), <<"\r\n">>, P, <<"\r\n">>]),
         timer:sleep(5)
     end || P <- Pieces],
    ?C:send(Sock, <<"0\r\n\r\n">>),
    {ok, R} = ?C:recv_response(Sock, #{timeout => 10000}),
    ?C:close(Sock),
    #{status := 200} = R,
    ?assert(maps:get(body, R) =:= iolist_to_binary(Pieces)).

%% GET /json: valid JSON, served as application/json.
json_route(Config) ->
    R = get_path(Config, <<"/json">>),
    #{status := 200, body := Body} = R,
    ?assertEqual(<<"application/json">>, ?C:header(<<"content-type">>, R)),
    {ok, Doc} = falco_json:decode(Body),
    ?assert(is_map(Doc)),
    ?assertEqual(<<"falco">>, maps:get(<<"server">>, Doc)).

%% GET /stream: chunked (RFC 9112 §7.1), several chunks, the whole body
%% once reassembled.
stream_route(Config) ->
    R = get_path(Config, <<"/stream">>),
    #{status := 200, framing := chunked, chunks := Chunks, body := Body} = R,
    ?assertEqual(<<"chunked">>, ?C:header(<<"transfer-encoding">>, R)),
    ?assertEqual(undefined, ?C:header(<<"content-length">>, R)),
    ?assertEqual(<<"chunk 1\nchunk 2\nchunk 3\nchunk 4\nchunk 5\n">>, Body),
    ?assertEqual([8, 8, 8, 8, 8], Chunks),
    ?assertEqual(<<"text/plain">>, ?C:header(<<"content-type">>, R)).

%% GET /file: examples/priv/hello.txt byte for byte, with its length.
file_route(Config) ->
    Expected = hello_file(),
    R = get_path(Config, <<"/file">>),
    #{status := 200, framing := length, body := Body} = R,
    ?assertEqual(Expected, Body),
    ?assertEqual(integer_to_binary(byte_size(Expected)), ?C:header(<<"content-length">>, R)),
    %% HEAD: the length, not the file.
    RH = ask(Config, <<"HEAD /file HTTP/1.1\r\n" ?HOST "\r\n">>, #{head => true}),
    #{status := 200, body := <<>>} = RH,
    ?assertEqual(integer_to_binary(byte_size(Expected)), ?C:header(<<"content-length">>, RH)).

%% Every route, one after another on one keep-alive connection.
keep_alive_across_routes(Config) ->
    Sock = ?C:connect(port(Config)),
    ?C:send(Sock, [<<"GET / HTTP/1.1\r\n" ?HOST "\r\n">>, post(<<"ping">>),
                   <<"GET /json HTTP/1.1\r\n" ?HOST "\r\n">>,
                   <<"GET /stream HTTP/1.1\r\n" ?HOST "\r\n">>,
                   <<"GET /file HTTP/1.1\r\n" ?HOST "\r\n">>]),
    Rs = [begin {ok, R} = ?C:recv_response(Sock), R end || _ <- lists:seq(1, 5)],
    ?C:close(Sock),
    [#{status := 200, body := <<"<!DOCTYPE html>", _/binary>>}, #{status := 200, body := <<"ping">>},
     #{status := 200}, #{status := 200, framing := chunked}, #{status := 200, body := File}] = Rs,
    ?assertEqual(hello_file(), File).

%% Other methods on a known route are 405 with Allow; unknown paths 404.
wrong_method_and_unknown_path(Config) ->
    R1 = ask(Config, <<"DELETE / HTTP/1.1\r\n" ?HOST "\r\n">>),
    #{status := 405} = R1,
    ?assertEqual(<<"GET, HEAD, OPTIONS">>, ?C:header(<<"allow">>, R1)),
    R2 = get_path(Config, <<"/echo">>),
    #{status := 405} = R2,
    ?assertEqual(<<"OPTIONS, POST">>, ?C:header(<<"allow">>, R2)),
    #{status := 404} = get_path(Config, <<"/no/such/page">>).
