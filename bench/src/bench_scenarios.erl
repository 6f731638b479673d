%% bench_scenarios: the catalogue of scenarios: what each one sends (the
%% request wrk repeats, or a Lua script under bench/lua/ for shapes wrk
%% cannot express statically; for the WebSocket scenarios, what bench/wsload
%% sends), what every server must answer (checked before each measured
%% run), and which servers cannot serve it and why.
-module(bench_scenarios).

-export([all/1, find/1, names/1, unsupported/2, ws/1]).

-define(MB, 1048576).
%% The idle connections ws_idle wants (bench_ws:idle_conns/1 caps them to
%% the file descriptor limit).
-define(IDLE_CONNS, 10000).

%% @doc Every scenario of a protocol, in report order.
-spec all(h1 | h2) -> [map()].
all(h1) ->
    [find(N) || N <- names(h1)];
all(h2) ->
    [find(N) || N <- names(h2)].

-spec names(h1 | h2) -> [atom()].
names(h1) ->
    [hello, json, echo, headers_heavy, cookies_heavy, qs_xml, large_response,
     upload_1mb, upload_20mb, pipelined, varied_paths_router, gzip_response,
     streaming_response, head, etag_304, connection_storm, short_sessions, slow_handler,
     ws_echo, ws_echo_h2, ws_large, ws_idle, idle_h1, idle_h2, idle_tls];
names(h2) ->
    [hello, json, echo, headers_heavy, multi_stream, large_response, upload_1mb, upload_20mb,
     upload_1mb_h1, upload_20mb_h1, tls_handshake].

%% @doc One scenario. Keys: name, what, method, path, headers, body
%% (binary or {rep, Line, Count}), lua (extra script or none), clients
%% (undefined = the --clients value), expect (status, body, content-type
%% prefix, content-encoding) and note; optionally tls (served over TLS,
%% see bench_tls), only (h2: no HTTP/1.1 form; h1: no HTTP/2 form), h1
%% (an --protocol h2 scenario that h2load sends over HTTP/1.1, `--h1') and
%% baseline_of (the h2 scenario an h1 one is the baseline of).
%% The WebSocket scenarios (driver wsload, see bench_ws) have ws: the
%% generator's mode, message size and kind; their expect is unused (the
%% generator checks every echo).
-spec find(atom()) -> map() | undefined.
find(hello) ->
    s(hello, "GET /hello, 13-byte text/plain body", get, "/hello", #{},
      ok(<<"text/plain">>, bench_fx:hello()));
find(json) ->
    s(json, "GET /json, a small map encoded to JSON per request (tiny own encoder)",
      get, "/json", #{}, ok(<<"application/json">>, bench_fx:json_body()));
find(echo) ->
    P = bench_fx:echo_payload(),
    s(echo, "POST /echo with a 256-byte body, echoed", post, "/echo",
      #{headers => [{<<"Content-Type">>, <<"application/octet-stream">>}], body => P},
      ok(<<"application/octet-stream">>, P));
find(headers_heavy) ->
    s(headers_heavy, "GET /headers with 20 extra request headers; answers one of them",
      get, "/headers", #{headers => [{cap(K), V} || {K, V} <- bench_fx:bench_headers()]},
      ok(<<"text/plain">>, bench_fx:header_value()));
find(cookies_heavy) ->
    s(cookies_heavy, "GET /cookies with 20 cookies; the shared parser finds one",
      get, "/cookies", #{headers => [{<<"Cookie">>, bench_fx:cookie_header()}]},
      ok(<<"text/plain">>, bench_fx:cookie(<<"c20">>, bench_fx:cookie_header())));
find(qs_xml) ->
    s(qs_xml, "GET /qs?value=..., the value echoed inside XML (seed 003's workload)",
      get, "/qs?value=falco-bench", #{},
      ok(<<"text/xml">>, bench_fx:qs_xml(<<"value=falco-bench">>)));
find(large_response) ->
    s(large_response, "GET /large, a 64 KB body", get, "/large", #{},
      ok(<<"application/octet-stream">>, bench_fx:large()));
find(upload_1mb) ->
    s(upload_1mb, "POST /upload with 1 MB, read whole (buffered); answers the byte count",
      post, "/upload", #{body => {rep, line64(), ?MB div 64}, clients => 8},
      ok(<<"text/plain">>, bench_fx:upload_reply(?MB)));
find(upload_20mb) ->
    s(upload_20mb, "POST /upload_stream with 20 MB, read in 64 KB pieces where the server can",
      post, "/upload_stream", #{body => {rep, line64(), 20 * ?MB div 64}, clients => 8},
      ok(<<"text/plain">>, bench_fx:upload_reply(20 * ?MB)));
find(pipelined) ->
    (s(pipelined, "GET /hello, 16 requests per write (pipelining)", get, "/hello",
       #{lua => "pipelined.lua"}, ok(<<"text/plain">>, bench_fx:hello())))
        #{note => "wrk times each batch of 16 from its write, and its high percentiles can "
                  "come back empty for pipelined runs (shown as ?)"};
find(varied_paths_router) ->
    (s(varied_paths_router, "GET /route/1 .. /route/100 in turn (100 routes)", get, "/route/42",
       #{lua => "routes.lua"}, ok(<<"text/plain">>, <<"route 42">>)))
        #{note => "cowboy routes with cowboy_router and falco with falco_router (100 routes); "
                  "servers without a router look the path up in a shared table"};
find(gzip_response) ->
    (s(gzip_response, "GET /gzip, 16 KB text gzip-compressed per request", get, "/gzip",
       #{headers => [{<<"Accept-Encoding">>, <<"gzip">>}]},
       (ok(<<"text/plain">>, bench_fx:gzip_plain()))#{encoding => gzip}))
        #{note => "every handler compresses with zlib:gzip/1 itself (same work for all)"};
find(streaming_response) ->
    s(streaming_response, "GET /stream, a chunked reply of 8 x 1 KB", get, "/stream", #{},
      ok(<<"application/octet-stream">>, iolist_to_binary(bench_fx:stream_chunks())));
find(head) ->
    (s(head, "HEAD /hello (headers of the hello reply, no body)", head, "/hello",
       #{driver => erlang}, ok(<<"text/plain">>, <<>>)))
        #{note => "driven by the in-tree generator (bench/src/bench_load.erl): wrk and h2load "
                  "hang on HEAD replies; its numbers compare servers within this row only"};
find(etag_304) ->
    s(etag_304, "GET /etag with a matching If-None-Match: 304, no body", get, "/etag",
      #{headers => [{<<"If-None-Match">>, bench_fx:etag()}]},
      #{status => 304, body => <<>>, type => any});
find(connection_storm) ->
    s(connection_storm, "GET /hello with Connection: close (a new connection per request)",
      get, "/hello", #{headers => [{<<"Connection">>, <<"close">>}]},
      ok(<<"text/plain">>, bench_fx:hello()));
find(short_sessions) ->
    (s(short_sessions, "GET /hello, every 10th request says Connection: close (seed 003's num-calls)",
       get, "/hello", #{lua => "short_sessions.lua"}, ok(<<"text/plain">>, bench_fx:hello())))
        #{note => "wrk closes one of its connections on every 10th request, so a "
                  "connection carries 10 requests on average"};
find(survey) ->
    %% Not in the matrix: bench_survey drives it (--survey).
    (s(survey, "GET /survey: the handler sleeps 100 ms and answers 1 KB; about one request "
       "per second per connection, the rate ramped past saturation (seeds 001 and 002)",
       get, "/survey", #{only => h1}, ok(<<"text/plain">>, bench_fx:survey_body())))
        #{note => "bench/run --survey; see bench/README.md"};
find(slow_handler) ->
    s(slow_handler, "GET /slow, the handler sleeps 100 ms; 1000 connections (seed 001's shape)",
      get, "/slow", #{clients => 1000}, ok(<<"text/plain">>, bench_fx:hello()));
find(upload_1mb_h1) ->
    over_h1(upload_1mb);
find(upload_20mb_h1) ->
    over_h1(upload_20mb);
find(multi_stream) ->
    (s(multi_stream, "HTTP/2 only: GET /hello, 10 connections x 100 concurrent streams",
       get, "/hello", #{streams => 100, clients => 10}, ok(<<"text/plain">>, bench_fx:hello())))
        #{note => "h2load -c 10 -m 100"};
find(tls_handshake) ->
    (s(tls_handshake, "HTTP/2 only: GET /hello over TLS 1.3, a new connection (full handshake) "
       "per request", get, "/hello", #{tls => true, only => h2}, ok(<<"text/plain">>, bench_fx:hello())))
        #{note => "h2load runs back to back, each --clients connections with one request each "
                  "(-c C -n C); TLS 1.3, TLS_AES_128_GCM_SHA256, x25519, ECDSA P-256 "
                  "certificate, no session tickets, for every server (bench_tls); req/s = "
                  "handshakes/s; latency: max time to first byte, percentiles unknown"};
find(ws_echo) ->
    ws(ws_echo, "WebSocket GET /ws: 64-byte text messages echoed, each connection waits for "
       "its echo (closed loop)", #{mode => echo, size => 64, kind => text}, undefined,
       "latency: each message's round trip, timed by the generator");
find(ws_echo_h2) ->
    ws(ws_echo_h2, "WebSocket over h2c (RFC 8441 extended CONNECT, prior knowledge, a "
       "connection each): ws_echo's 64-byte text messages echoed (closed loop)",
       #{mode => echo, size => 64, kind => text, proto => wsh2c}, undefined,
       "latency: each message's round trip, timed by the generator");
find(ws_large) ->
    ws(ws_large, "WebSocket GET /ws: 1 MB (1,048,576-byte) binary messages echoed, "
       "8 connections (closed loop)", #{mode => echo, size => ?MB, kind => binary}, 8,
       "MB/s: echoed payload bytes per second, one direction");
find(ws_idle) ->
    ws(ws_idle, "WebSocket GET /ws: 10,000 idle connections (fewer if the fd limit is lower); "
       "memory per connection", #{mode => idle, size => 64, kind => text}, ?IDLE_CONNS,
       "after a forced GC and 2 s of rest; then every connection must still echo");
find(idle_h1) ->
    idle(idle_h1, "HTTP/1.1 keep-alive: 10,000 connections idle after one GET /hello each "
         "(fewer if the fd limit is lower); memory per connection", h1);
find(idle_h2) ->
    idle(idle_h2, "h2c (prior knowledge): 10,000 connections idle after one GET /hello each "
         "(fewer if the fd limit is lower); memory per connection", h2c);
find(idle_tls) ->
    (idle(idle_tls, "HTTP/1.1 keep-alive over TLS 1.3 (ALPN http/1.1): 10,000 connections idle "
          "after one GET /hello each (fewer if the fd limit is lower); memory per connection",
          h1tls))#{tls => true};
find(_) ->
    undefined.

%% @doc Whether a scenario is a WebSocket one (driven by bench/wsload).
-spec ws(atom()) -> boolean().
ws(Name) ->
    case find(Name) of
        #{driver := wsload} -> true;
        _ -> false
    end.

%% @doc `false' when the server can serve the scenario, else the reason.
-spec unsupported(atom(), atom()) -> false | string().
unsupported(floor, S) ->
    case lists:member(S, [hello, pipelined, connection_storm, short_sessions, multi_stream]) of
        true -> false;
        false -> "the floor answers GET /hello only"
    end;
unsupported(S, idle_h2) ->
    case lists:member(S, [falco, falco_socket, cowboy]) of
        true -> false;
        false -> "no cleartext HTTP/2 (prior knowledge) in the bench's fixture"
    end;
unsupported(S, idle_tls) ->
    case S of
        falco -> false;
        cowboy -> false;
        _ -> "no TLS fixture for idle_tls in the bench (falco and cowboy only)"
    end;
unsupported(S, ws_echo_h2) ->
    case lists:member(S, [falco, falco_socket]) of
        true -> false;
        false -> "no WebSocket over HTTP/2 (RFC 8441) in the bench's fixture"
    end;
unsupported(S, Name) when Name =:= ws_echo; Name =:= ws_large; Name =:= ws_idle ->
    case S of
        falco -> false;
        falco_socket -> false;
        cowboy -> false;
        elli -> "elli has no WebSocket";
        inets -> "httpd has no WebSocket";
        nginx -> "nginx is set up for static files only";
        _ -> "no WebSocket fixture in the bench"
    end;
unsupported(nginx, S) ->
    case lists:member(S, [hello, pipelined, head, large_response, connection_storm,
                          short_sessions]) of
        true -> false;
        false -> "nginx serves static bytes only"
    end;
unsupported(inets, upload_20mb) ->
    "httpd hands bodies over as strings; 20 MB requests time out";
unsupported(_, _) ->
    false.

s(Name, What, Method, Path, Extra, Expect) ->
    maps:merge(#{name => Name, what => What, method => Method, path => Path,
                 headers => [], body => <<>>, lua => none, clients => undefined, driver => wrk,
                 expect => Expect, note => ""}, Extra).

ok(Type, Body) -> #{status => 200, type => Type, body => Body}.

ws(Name, What, Ws, Clients, Note) ->
    (s(Name, What, get, "/ws", #{driver => wsload, ws => Ws, clients => Clients, only => h1},
       #{status => 101, type => any, body => <<>>}))#{note => Note}.

%% An idle-connections scenario over HTTP (bench/wsload -proto h1 | h1tls |
%% h2c), measured as ws_idle is (bench_ws:idle/5).
idle(Name, What, Proto) ->
    (s(Name, What, get, "/hello", #{driver => wsload, clients => ?IDLE_CONNS, only => h1,
                                    ws => #{mode => idle, size => 64, kind => text,
                                            proto => Proto}},
       ok(<<"text/plain">>, bench_fx:hello())))
        #{note => "after a forced GC and 2 s of rest; then every connection must answer "
                  "one more GET"}.

%% The HTTP/1.1 baseline of an h2 upload scenario, from the same client:
%% h2load with --h1 sends the same request over HTTP/1.1. wrk and h2load
%% differ by more than the protocols do (h2load writes each 16 KB DATA
%% frame with a write of its own), so the h2 run compares h2 with HTTP/1.1
%% through h2load alone (docs/internals/http2.md).
over_h1(Name) ->
    Sc = #{what := What} = find(Name),
    Sc#{name => list_to_atom(atom_to_list(Name) ++ "_h1"), h1 => true, baseline_of => Name,
        only => h2,
        what => "HTTP/1.1 through h2load --h1, the baseline of " ++ atom_to_list(Name)
                ++ " over h2: " ++ What,
        note => "h2load --h1"}.

line64() -> <<"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-\n">>.

%% X-Bench-01 style names, as a browser would send them.
cap(Name) ->
    iolist_to_binary(lists:join(<<"-">>, [string:titlecase(P) || P <- string:split(Name, "-", all)])).
