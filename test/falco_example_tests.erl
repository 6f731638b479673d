%% The example's routes (examples/falco_example.erl, what `make run'
%% serves) behind its middleware, through falco_testing: no socket, the
%% same pipeline. example_SUITE and browser_SUITE check them on the wire.
-module(falco_example_tests).

-include_lib("eunit/include/eunit.hrl").

-define(T, falco_testing).

app() ->
    #{routes => falco_example:routes(), middleware => falco_example:middleware()}.

field(Name, Headers) ->
    proplists:get_value(Name, Headers).

index_links_every_demo_test() ->
    {200, Headers, Body} = ?T:request(app(), get, "/"),
    ?assertMatch(<<"text/html", _/binary>>, field(<<"content-type">>, Headers)),
    [?assertNotEqual(nomatch, binary:match(Body, Link), Link)
     || Link <- [<<"href=\"/static/\"">>, <<"href=\"/static/#upload\"">>,
                 <<"href=\"/static/#events\"">>, <<"href=\"/static/#websocket\"">>,
                 <<"href=\"/json\"">>, <<"href=\"/static/hello.txt\"">>]].

hello_binding_test() ->
    ?assertMatch({200, _, <<"Hello, jo e!\n">>}, ?T:request(app(), get, "/hello/jo%20e")).

json_test() ->
    {200, Headers, Body} = ?T:request(app(), get, "/json"),
    ?assertEqual(<<"application/json">>, field(<<"content-type">>, Headers)),
    ?assertEqual({ok, #{<<"server">> => <<"falco">>, <<"message">> => <<"Hello, World!">>}},
                 falco_json:decode(Body)).

search_test() ->
    {200, _, Body} = ?T:request(app(), get, "/search?q=falco&x=1"),
    ?assertMatch({ok, #{<<"q">> := <<"falco">>}}, falco_json:decode(Body)),
    ?assertMatch({400, _, _}, ?T:request(app(), get, "/search")).

stream_test() ->
    R = ?T:run(app(), ?T:req(get, "/stream"), #{}),
    ?assertMatch(#{kind := stream, complete := true,
                   chunks := [<<"chunk 1\n">>, _, _, _, <<"chunk 5\n">>]}, R).

file_test() ->
    {200, Headers, Body} = ?T:request(app(), get, "/file"),
    ?assertEqual(integer_to_binary(byte_size(Body)), field(<<"content-length">>, Headers)),
    ?assertMatch(<<"Hello from a file", _/binary>>, Body).

static_range_test() ->
    {206, Headers, Body} = ?T:request(app(), get, "/static/hello.txt",
                                      #{headers => [{"range", "bytes=0-4"}]}),
    ?assertEqual(5, byte_size(Body)),
    ?assertMatch(<<"bytes 0-4/", _/binary>>, field(<<"content-range">>, Headers)).

echo_test() ->
    ?assertMatch({200, _, <<"ping">>}, ?T:request(app(), post, "/echo", #{body => <<"ping">>})).

upload_test() ->
    Body = <<"--XyZ\r\ncontent-disposition: form-data; name=\"title\"\r\n\r\nhello\r\n"
             "--XyZ\r\ncontent-disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n"
             "content-type: text/plain\r\n\r\n0123456789\r\n--XyZ--\r\n">>,
    {200, _, Reply} = ?T:request(app(), post, "/upload",
                                 #{headers => [{"content-type", "multipart/form-data; boundary=XyZ"}],
                                   body => Body, piece => 7}),
    ?assertEqual({ok, #{<<"parts">> => [#{<<"name">> => <<"title">>, <<"size">> => 5},
                                        #{<<"name">> => <<"file">>, <<"filename">> => <<"a.txt">>,
                                          <<"size">> => 10}]}},
                 falco_json:decode(Reply)).

events_test() ->
    {200, _, Events} = ?T:sse(app(), ?T:req(get, "/events?count=2&interval=10"),
                              #{events => 3}),
    ?assertMatch([#{event := <<"tick">>, id := <<"1">>}, #{event := <<"tick">>, id := <<"2">>},
                  #{event := <<"bye">>}], Events).

unknown_path_and_method_test() ->
    ?assertMatch({404, _, _}, ?T:request(app(), get, "/nope")),
    ?assertMatch({405, _, _}, ?T:request(app(), delete, "/json")).
