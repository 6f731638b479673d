%% @doc The example server that `make run' starts: a route table showing
%% each kind of response falco offers, behind the access log, request id
%% and security headers middleware.
%%
%%   GET  /              an HTML index page linking every demo
%%   POST /echo          the request body, byte for byte
%%   GET  /json          a small JSON document
%%   GET  /stream        a chunked reply sent in pieces
%%   GET  /file          examples/priv/hello.txt, a file reply
%%   GET  /hello/:name   a greeting for the (percent-decoded) name
%%   GET  /search?q=...  the query string, parsed; 400 without q
%%   GET  /static/...    examples/priv/static (falco_static: ranges, ETags, .gz)
%%   POST /upload        multipart; each part's name and size
%%   GET  /events        Server-Sent Events
%%
%% Responses are compressed (gzip/deflate) when the client accepts it.
%%
%% `make run' serves it over HTTP/1.1 and h2c on 8080, and over TLS on 8443
%% (ALPN h2 and http/1.1) with a self-signed certificate made on first run
%% in _build/examples; `make run PORT=9080 TLS_PORT=9443' moves them (the
%% environment variables PORT and TLS_PORT, read by main/0).
-module(falco_example).

-export([start/0, start/1, start_tls/1, start_tls/2, main/0, routes/0, middleware/0]).

%% public_key.hrl's records and OIDs, written out: its records have untyped
%% fields (warn_untyped_record)
-define(CN, {2, 5, 4, 3}).
-define(ECDSA_SHA256, {1, 2, 840, 10045, 4, 3, 2}).
-define(EC_PUBLIC_KEY, {1, 2, 840, 10045, 2, 1}).
-define(SECP256R1, {1, 2, 840, 10045, 3, 1, 7}).
-define(SUBJECT_ALT_NAME, {2, 5, 29, 17}).
-define(KEY_USAGE, {2, 5, 29, 15}).
-define(BASIC_CONSTRAINTS, {2, 5, 29, 19}).

-define(TEXT, {<<"content-type">>, <<"text/plain">>}).
-define(GET, #{methods => [<<"GET">>]}).
-define(INDEX, <<"<!DOCTYPE html>
<html lang=\"en\">
<head>
  <meta charset=\"utf-8\">
  <title>falco example</title>
  <link rel=\"stylesheet\" href=\"/static/style.css\">
</head>
<body>
  <h1>falco example</h1>
  <p>Each demo below is served by a route of <code>examples/falco_example.erl</code>.</p>
  <h2>In the browser</h2>
  <ul>
    <li><a href=\"/static/\">The demo page</a>: all of the below on one page</li>
    <li><a href=\"/static/#upload\">Upload form</a> (multipart/form-data, <code>POST /upload</code>)</li>
    <li><a href=\"/static/#events\">Server-Sent Events panel</a> (<code>GET /events</code>)</li>
    <li><a href=\"/static/#websocket\">WebSocket echo</a> (<code>/ws</code>)</li>
  </ul>
  <h2>Plain responses</h2>
  <ul>
    <li><a href=\"/json\">JSON</a></li>
    <li><a href=\"/static/hello.txt\">A static file</a>, with ranges
        (<code>curl -r 0-4</code>), ETags and conditional requests</li>
    <li><a href=\"/file\">A file reply</a></li>
    <li><a href=\"/stream\">A streamed (chunked) reply</a></li>
    <li><a href=\"/hello/falco\">A route binding</a> (<code>/hello/:name</code>)</li>
    <li><a href=\"/search?q=falco\">A query string</a></li>
    <li><a href=\"/events?count=3&amp;interval=500\">The raw event stream</a></li>
  </ul>
  <p><code>POST /echo</code> sends the request body back.</p>
</body>
</html>
">>).

%% @doc Starts the example on 127.0.0.1:8080.
-spec start() -> {ok, pid()} | {error, term()}.
start() ->
    start(#{}).

%% @doc Starts the example with extra listener options (tests use port 0).
-spec start(map()) -> {ok, pid()} | {error, term()}.
start(Opts) ->
    falco:start_listener(falco_example,
                         maps:merge(#{ip => {127, 0, 0, 1}, port => 8080,
                                      routes => routes(),
                                      middleware => middleware()}, Opts)).

%% @doc The example over TLS (HTTP/2 and HTTP/1.1 by ALPN), with a
%% self-signed certificate kept in `Dir' (made there if missing).
-spec start_tls(file:filename()) -> {ok, pid()} | {error, term()}.
start_tls(Dir) ->
    start_tls(Dir, #{}).

%% @doc {@link start_tls/1} with extra listener options (tests use port 0).
-spec start_tls(file:filename(), map()) -> {ok, pid()} | {error, term()}.
start_tls(Dir, Opts) ->
    {Cert, Key} = self_signed(Dir),
    falco:start_listener(falco_example_tls,
                         maps:merge(#{ip => {127, 0, 0, 1}, port => 8443,
                                      routes => routes(), middleware => middleware(),
                                      transport => tls,
                                      tls_opts => [{certfile, Cert}, {keyfile, Key}],
                                      %% HTTP/3 on UDP, same port (docs/guide/http3.md)
                                      http3 => true}, Opts)).

%% The certificate and key in `Dir', made there if missing, expired or
%% made before 2026-12-02 (OTP's test chains then: valid for a week, and
%% their ECDSA signature algorithm carries a NULL that RFC 5758 forbids,
%% which aioquic and other strict parsers refuse).
self_signed(Dir) ->
    Cert = filename:join(Dir, "example-cert.pem"),
    Key = filename:join(Dir, "example-key.pem"),
    case filelib:is_regular(Key) andalso usable(Cert) of
        true -> ok;
        false -> make_self_signed(Cert, Key)
    end,
    {Cert, Key}.

usable(Cert) ->
    case file:read_file(Cert) of
        {ok, Pem} ->
            try
                [{'Certificate', Der, not_encrypted}] = public_key:pem_decode(Pem),
                %% #'OTPCertificate'{tbsCertificate, signatureAlgorithm}
                {'OTPCertificate', Tbs, {'SignatureAlgorithm', _, Params}, _} =
                    public_key:pkix_decode_cert(Der, otp),
                %% #'OTPTBSCertificate'.validity
                {'Validity', _, NotAfter} = element(6, Tbs),
                Params =:= asn1_NOVALUE andalso
                    seconds(NotAfter)
                    > calendar:datetime_to_gregorian_seconds(calendar:universal_time()) + 86400
            catch
                _:_ -> false
            end;
        {error, _} ->
            false
    end.

%% A P-256 key and a certificate for localhost and 127.0.0.1 it signs
%% itself, valid for ten years from yesterday.
make_self_signed(Cert, Key) ->
    Priv = public_key:generate_key({namedCurve, ?SECP256R1}),
    'ECPrivateKey' = element(1, Priv),
    Pub = element(5, Priv),
    Name = {rdnSequence, [[{'AttributeTypeAndValue', ?CN, {utf8String, <<"localhost">>}}]]},
    Now = calendar:datetime_to_gregorian_seconds(calendar:universal_time()),
    Alg = {'SignatureAlgorithm', ?ECDSA_SHA256, asn1_NOVALUE},
    Validity = {'Validity', {generalTime, time_str(Now - 86400)},
                {generalTime, time_str(Now + 10 * 365 * 86400)}},
    Spki = {'OTPSubjectPublicKeyInfo', {'PublicKeyAlgorithm', ?EC_PUBLIC_KEY,
                                        {namedCurve, ?SECP256R1}},
            {'ECPoint', Pub}},
    Extensions = [{'Extension', ?SUBJECT_ALT_NAME, false,
                   [{dNSName, "localhost"}, {iPAddress, <<127, 0, 0, 1>>}]},
                  {'Extension', ?KEY_USAGE, true, [digitalSignature]},
                  {'Extension', ?BASIC_CONSTRAINTS, true, {'BasicConstraints', false, asn1_NOVALUE}}],
    Tbs = {'OTPTBSCertificate', v3, rand:uniform(1 bsl 62), Alg, Name, Validity, Name, Spki,
           asn1_NOVALUE, asn1_NOVALUE, Extensions},
    Der = public_key:pkix_sign(Tbs, Priv),
    ok = file:write_file(Cert, public_key:pem_encode([{'Certificate', Der, not_encrypted}])),
    ok = file:write_file(Key, public_key:pem_encode([public_key:pem_entry_encode('ECPrivateKey',
                                                                                 Priv)])).

%% An X.509 time as Gregorian seconds (RFC 5280 §4.1.2.5: UTCTime years
%% 50-99 are 19xx).
seconds({utcTime, [Y1, Y2 | Rest]}) ->
    YY = list_to_integer([Y1, Y2]),
    seconds({generalTime, integer_to_list(if YY >= 50 -> 1900 + YY; true -> 2000 + YY end)
                          ++ Rest});
seconds({generalTime, [Y1, Y2, Y3, Y4, Mo1, Mo2, D1, D2, H1, H2, Mi1, Mi2, S1, S2, $Z]}) ->
    I = fun list_to_integer/1,
    calendar:datetime_to_gregorian_seconds({{I([Y1, Y2, Y3, Y4]), I([Mo1, Mo2]), I([D1, D2])},
                                            {I([H1, H2]), I([Mi1, Mi2]), I([S1, S2])}}).

time_str(Seconds) ->
    {{Y, Mo, D}, {H, Mi, S}} = calendar:gregorian_seconds_to_datetime(Seconds),
    lists:flatten(io_lib:format("~4..0b~2..0b~2..0b~2..0b~2..0b~2..0bZ", [Y, Mo, D, H, Mi, S])).

%% @doc Entry point of `make run': start on the ports named by the
%% environment variables PORT and TLS_PORT (default 8080 and 8443), print
%% the URLs, run until Ctrl-C.
-spec main() -> no_return().
main() ->
    Port0 = env_port("PORT", 8080),
    TlsPort0 = env_port("TLS_PORT", 8443),
    case {start(#{port => Port0}),
          start_tls(filename:dirname(code:which(?MODULE)), #{port => TlsPort0})} of
        {{ok, _}, {ok, _}} ->
            {ok, Port} = falco:port(falco_example),
            {ok, TlsPort} = falco:port(falco_example_tls),
            io:format("falco example listening on http://127.0.0.1:~b/ (HTTP/1.1, h2c) and~n"
                      "https://127.0.0.1:~b/ (HTTP/3 over UDP, HTTP/2 and HTTP/1.1, self-signed: curl -k);~n"
                      "open either in a browser: the index page links every demo~n"
                      "(Ctrl-C to stop)~n",
                      [Port, TlsPort]),
            receive after infinity -> ok end;
        Failed ->
            io:format(standard_error, "falco example failed to start: ~p~n", [Failed]),
            erlang:halt(1)
    end.

%% A port from the environment: a number from 0 (any free port) to 65535.
env_port(Name, Default) ->
    case os:getenv(Name) of
        false -> Default;
        "" -> Default;
        Value ->
            try list_to_integer(Value) of
                N when N >= 0, N =< 65535 -> N;
                _ -> bad_port(Name, Value)
            catch
                error:badarg -> bad_port(Name, Value)
            end
    end.

-spec bad_port(string(), string()) -> no_return().
bad_port(Name, Value) ->
    io:format(standard_error, "falco example: ~s=~s is not a port number (0..65535)~n",
              [Name, Value]),
    erlang:halt(2).

%% @doc The listener middleware, outermost first. The access log runs
%% inside the request id so its lines carry the id; `notice' so that OTP's
%% default logger configuration shows them. Compression is innermost: it
%% sees the handler's response before the other middleware add fields.
-spec middleware() -> [falco_middleware:middleware()].
middleware() ->
    [falco_request_id,
     {falco_access_log, #{level => notice}},
     falco_security_headers,
     falco_compress].

%% @doc The route table (HEAD is served by every GET route).
-spec routes() -> falco_router:routes().
routes() ->
    File = file_path(),
    [{<<"/">>, fun index/1, ?GET},
     {<<"/echo">>, fun echo/1, #{methods => [<<"POST">>]}},
     {<<"/json">>, fun json/1, ?GET},
     {<<"/stream">>, fun stream/1, ?GET},
     {<<"/file">>, fun(_) -> {200, [?TEXT], {file, File}} end, ?GET},
     {<<"/hello/:name">>, fun hello/1, ?GET},
     {<<"/search">>, fun search/1, ?GET},
     {<<"/static">>, fun falco_example_files:static/1, ?GET},
     {<<"/static/*path">>, fun falco_example_files:static/1, ?GET},
     {<<"/upload">>, fun falco_example_files:upload/1, #{methods => [<<"POST">>]}},
     {<<"/events">>, fun falco_example_files:events/1, ?GET},
     {<<"/ws">>, fun falco_example_ws:upgrade/1, ?GET}].

%% The index page: a link to each demo, and the protocol that carried it.
index(Req) ->
    [Head, Tail] = binary:split(?INDEX, <<"</h1>\n">>),
    {200, [{<<"content-type">>, <<"text/html; charset=utf-8">>}],
     [Head, <<"</h1>\n  <p>This page came over <strong>">>, protocol_name(falco_req:version(Req)),
      <<"</strong>.</p>\n">>, Tail]}.

protocol_name({1, 0}) -> <<"HTTP/1.0">>;
protocol_name({1, 1}) -> <<"HTTP/1.1">>;
protocol_name({2, 0}) -> <<"HTTP/2">>;
protocol_name({3, 0}) -> <<"HTTP/3">>.

echo(Req) ->
    {ok, Body, _} = falco_req:read_body(Req),
    Type = falco_req:header(<<"content-type">>, Req, <<"application/octet-stream">>),
    {200, [{<<"content-type">>, Type}], Body}.

json(_Req) ->
    {200, [{<<"content-type">>, <<"application/json">>}],
     <<"{\"server\":\"falco\",\"message\":\"Hello, World!\"}">>}.

stream(_Req) ->
    {stream, 200, [?TEXT],
     fun(Send) ->
             lists:foreach(fun(I) -> Send([<<"chunk ">>, integer_to_binary(I), <<"\n">>]) end,
                           lists:seq(1, 5))
     end}.

hello(Req) ->
    falco_resp:text(200, [<<"Hello, ">>, falco_req:binding(name, Req), <<"!\n">>]).

search(Req) ->
    case falco_qs:parse(falco_req:qs(Req), #{utf8 => replace}) of
        {ok, Pairs} ->
            case [V || {<<"q">>, V} <- Pairs] of
                [Q | _] when Q =/= <<>> ->
                    falco_resp:json(200, #{<<"q">> => Q,
                                           <<"params">> => [[K, V] || {K, V} <- Pairs]});
                _ ->
                    falco_resp:text(400, <<"missing query parameter q, try /search?q=falco\n">>)
            end;
        {error, Reason} ->
            falco_resp:text(400, io_lib:format("bad query string: ~p~n", [Reason]))
    end.

file_path() ->
    Dir = filename:dirname(code:which(?MODULE)),
    Candidates = [filename:join([Dir, "..", "examples", "priv", "hello.txt"]),
                  filename:join([Dir, "..", "..", "..", "..", "examples", "priv", "hello.txt"]),
                  filename:join(["examples", "priv", "hello.txt"])],
    case [F || F <- Candidates, filelib:is_regular(F)] of
        [F | _] -> filename:absname(F);
        [] -> filename:absname(lists:last(Candidates))
    end.
