%% RFC 9113 (HTTP/2) end to end, with falco's own client
%% (falco_test_h2_client): what only HTTP/2 has at the message level
%% (connection-specific fields, :authority, cookie crumbs, malformed
%% requests, concurrent streams) over h2c and over TLS, and the
%% connection-level defences (timeouts, floods, stalls, refused streams)
%% with the real connection and stream processes. The semantics HTTP/2
%% shares with HTTP/1.1 (HEAD, Date, Content-Length, Expect, statuses
%% without content, errors, streamed and file replies, request content and
%% trailers, limits) are checked over h2c and h2 by rfc9110_SUITE. Every
%% case names the section it checks.
-module(rfc9113_SUITE).

-include_lib("common_test/include/ct.hrl").

-export([all/0, groups/0, init_per_suite/1, end_per_suite/1,
         init_per_group/2, end_per_group/2]).
-export([
         %% HTTP/2 messages (both groups)
         no_hop_by_hop_fields/1, authority_as_host_field/1, cookies_joined/1,
         malformed_request_never_reaches_handler/1, concurrent_streams/1,
         %% connection level (h2c)
         preface_timeout/1, bad_preface_goaway/1, idle_timeout_goaway/1,
         settings_timeout/1, rapid_reset_calm/1, continuation_flood_calm/1,
         ping_flood_calm/1, zero_window_stall_reset/1, refused_stream_over_limit/1,
         window_replenished_as_handler_reads/1, listener_stop_closes/1,
         h2c_upgrade/1, h2c_upgrade_with_body_stays_http1/1, prior_knowledge_disabled/1,
         %% TLS
         tls_alpn_http11/1, tls_handshake_timeout/1, tls_bad_options/1
        ]).

-define(C, falco_test_h2_client).
%% the name the test process takes while concurrent_streams holds /gate
-define(GATE, rfc9113_gate).

all() ->
    [{group, h2c}, {group, h2}, {group, connection}, {group, tls}].

messages() ->
    [no_hop_by_hop_fields, authority_as_host_field, cookies_joined,
     malformed_request_never_reaches_handler, concurrent_streams].

groups() ->
    [{h2c, [], messages()},
     {h2, [], messages()},
     {connection, [], [preface_timeout, bad_preface_goaway, idle_timeout_goaway,
                       settings_timeout, rapid_reset_calm, continuation_flood_calm,
                       ping_flood_calm, zero_window_stall_reset, refused_stream_over_limit,
                       window_replenished_as_handler_reads, listener_stop_closes,
                       h2c_upgrade, h2c_upgrade_with_body_stays_http1,
                       prior_knowledge_disabled]},
     {tls, [], [tls_alpn_http11, tls_handshake_timeout, tls_bad_options]}].

init_per_suite(Config) ->
    ok = falco_test_listener:start_tls_app(),
    TlsOpts = falco_test_tls:server_opts(),
    [{tls_opts, TlsOpts} | Config].

end_per_suite(Config) ->
    Config.

base_opts(_Config) ->
    #{port => 0, ip => {127, 0, 0, 1}, handler => fun handle/1,
      max_body => 300000, body_timeout => 2000, max_header_count => 50}.

init_per_group(h2c, Config) ->
    start(h2c_listener, (base_opts(Config))#{protocols => [h2]}, tcp, Config);
init_per_group(h2, Config) ->
    Opts = (base_opts(Config))#{tls_opts => ?config(tls_opts, Config)},
    start(h2_listener, falco_test_listener:tls(Opts), tls, Config);
init_per_group(_, Config) ->
    Config.

start(Name, Opts, Transport, Config) ->
    {_, Port} = falco_test_listener:start(Name, Opts),
    [{listener, Name}, {port, Port}, {transport, Transport} | Config].

end_per_group(Group, Config) when Group =:= h2c; Group =:= h2 ->
    ok = falco_test_listener:stop(?config(listener, Config)),
    Config;
end_per_group(_, Config) ->
    Config.

connect(Config) ->
    ?C:connect(?config(port, Config), #{transport => ?config(transport, Config)}).

%% -- the handler ------------------------------------------------------------------

handle(Req) ->
    route(falco_req:path(Req), Req).

route(<<"/hello">>, _Req) ->
    {200, [{<<"content-type">>, <<"text/plain">>}], [<<"hello">>, " world"]};
route(<<"/hop">>, _Req) ->
    {200, [{<<"connection">>, <<"close">>}, {<<"keep-alive">>, <<"timeout=5">>},
           {<<"upgrade">>, <<"h2c">>}, {<<"proxy-connection">>, <<"x">>}, {<<"x-kept">>, <<"1">>}],
     <<"hop">>};
route(<<"/stream">>, _Req) ->
    {stream, 200, [{<<"content-type">>, <<"text/plain">>}],
     fun(Send) ->
             ok = Send(<<"alpha ">>), ok = Send(<<>>), ok = Send([<<"be">>, "ta"]),
             {trailers, [{<<"X-Checksum">>, <<"abc">>}, {<<"connection">>, <<"close">>}]}
     end};
route(<<"/stream-large">>, _Req) ->
    {stream, 200, [],
     fun(Send) -> [ok = Send(binary:copy(<<I>>, 50000)) || I <- lists:seq(1, 10)], ok end};
route(<<"/echo">>, Req) ->
    {ok, Body, _} = falco_req:read_body(Req),
    {200, [], Body};
route(<<"/crash">>, _Req) ->
    error(deliberate_crash);
route(<<"/info">>, Req) ->
    Info = #{version => falco_req:version(Req), scheme => falco_req:scheme(Req),
             host => falco_req:host(Req),
             port => falco_req:port(Req), headers => falco_req:headers(Req)},
    {200, [], term_to_binary(Info)};
route(<<"/gate">>, _Req) ->
    %% held until the test releases it: a stream that cannot finish first
    ?GATE ! {held, self()},
    receive release -> ok after 60000 -> ok end,
    {200, [], <<"released">>};
route(<<"/slow">>, _Req) ->
    receive after 3000 -> ok end,
    {200, [], <<"slow">>};
route(<<"/never">>, Req) ->
    %% reads nothing: the client's window must run out
    _ = Req,
    receive after 5000 -> ok end,
    {200, [], <<"never">>};
route(<<"/read-slowly">>, Req) ->
    {Total, Reads} = read_slowly(Req, 0, 0),
    {200, [], term_to_binary({Total, Reads})};
route(_, _Req) ->
    {404, [], <<"not found">>}.

read_slowly(Req, Total, Reads) ->
    receive after 5 -> ok end,
    case falco_req:read_body(Req, #{length => 8192}) of
        {more, Data, Req1} -> read_slowly(Req1, Total + byte_size(Data), Reads + 1);
        {ok, Data, _} -> {Total + byte_size(Data), Reads + 1}
    end.

get(Config, Path) ->
    C0 = connect(Config),
    {Id, C1} = ?C:request(C0, <<"GET">>, Path),
    Result = ?C:response(C1, Id),
    ?C:close(C1),
    Result.

%% -- HTTP/2 messages ----------------------------------------------------------------------

%% RFC 9113 §8.2.2: connection-specific fields are never sent, in the
%% header section or in trailers.
no_hop_by_hop_fields(Config) ->
    {ok, #{status := 200, headers := H}, _} = get(Config, <<"/hop">>),
    [] = [N || {N, _} <- H, lists:member(N, [<<"connection">>, <<"keep-alive">>, <<"upgrade">>,
                                            <<"proxy-connection">>, <<"transfer-encoding">>])],
    <<"1">> = proplists:get_value(<<"x-kept">>, H),
    %% and the stream's trailers lose theirs too
    {ok, #{trailers := T}, _} = get(Config, <<"/stream">>),
    [{<<"x-checksum">>, <<"abc">>}] = T.

%% RFC 9113 §8.3.1: a request with only :authority (no Host field) gives
%% the handler the same request map as HTTP/1.1 would: a host field made
%% from :authority, the host, and no port when :authority names none.
authority_as_host_field(Config) ->
    C0 = connect(Config),
    {Id, C1} = ?C:request(C0, <<"GET">>, <<"/info">>, [{<<"x-a">>, <<"1">>}], <<>>),
    {ok, #{status := 200, body := B}, _} = ?C:response(C1, Id),
    #{version := {2, 0}, host := <<"localhost">>, port := undefined,
      headers := [{<<"host">>, <<"localhost">>}, {<<"x-a">>, <<"1">>}]} = binary_to_term(B).

%% RFC 9113 §8.2.3: cookie crumbs in several fields reach the handler as
%% one field joined with "; ".
cookies_joined(Config) ->
    C0 = connect(Config),
    {Id, C1} = ?C:request(C0, <<"GET">>, <<"/info">>, [{<<"cookie">>, <<"a=1">>},
                                                       {<<"cookie">>, <<"b=2">>}], <<>>),
    {ok, #{body := B}, _} = ?C:response(C1, Id),
    #{headers := H} = binary_to_term(B),
    <<"a=1; b=2">> = proplists:get_value(<<"cookie">>, H).

%% RFC 9113 §8.1.1: malformed, so PROTOCOL_ERROR, and no handler call.
malformed_request_never_reaches_handler(Config) ->
    C0 = connect(Config),
    C1 = ?C:headers_frame(C0, 1, [{<<":method">>, <<"GET">>}, {<<":scheme">>, <<"http">>},
                                  {<<":path">>, <<"/crash">>}, {<<"Upper">>, <<"x">>}], fin),
    {error, {reset, protocol_error}, C2} = ?C:response(C1, 1),
    {Id, C3} = ?C:request(C2#{next_id => 3}, <<"GET">>, <<"/hello">>),
    {ok, #{status := 200}, _} = ?C:response(C3, Id).

%% RFC 9113 §5: streams are concurrent: one held in its handler (until the
%% test releases it) does not hold the 20 others on the connection.
concurrent_streams(Config) ->
    true = register(?GATE, self()),
    try
        C0 = connect(Config),
        {Held, C1} = ?C:request(C0, <<"GET">>, <<"/gate">>),
        Handler = receive {held, Pid} -> Pid after 5000 -> ct:fail(gate_not_reached) end,
        {Ids, C2} = lists:foldl(fun(_, {Acc, C}) ->
                                        {Id, Cn} = ?C:request(C, <<"GET">>, <<"/hello">>),
                                        {[Id | Acc], Cn}
                                end, {[], C1}, lists:seq(1, 20)),
        C3 = lists:foldl(fun(Id, C) ->
                                 {ok, #{status := 200, body := <<"hello world">>}, Cn} =
                                     ?C:response(C, Id),
                                 Cn
                         end, C2, lists:reverse(Ids)),
        %% all answered while the held one still waits in its handler
        true = is_process_alive(Handler),
        Handler ! release,
        {ok, #{status := 200, body := <<"released">>}, _} = ?C:response(C3, Held)
    after
        unregister(?GATE)
    end.

%% -- connection level --------------------------------------------------------------------

conn_listener(Name, Extra, Config) ->
    {_, Port} = falco_test_listener:start(Name, maps:merge((base_opts(Config))#{protocols => [h2]},
                                                           Extra)),
    Port.

%% RFC 9113 §3.4: a client that never sends the preface is dropped.
preface_timeout(Config) ->
    Port = conn_listener(preface_l, #{h2_preface_timeout => 200}, Config),
    C = ?C:connect_raw(Port, #{}),
    %% the server's SETTINGS come at once, then the close
    {ok, {settings, _}, C1} = ?C:recv_frame(C, 5000),
    ok = ?C:wait_closed(C1, 5000),
    ok = falco_test_listener:stop(preface_l).

%% RFC 9113 §3.4: an invalid preface is a PROTOCOL_ERROR.
bad_preface_goaway(Config) ->
    Port = conn_listener(badpreface_l, #{}, Config),
    C = ?C:connect_raw(Port, #{}),
    ok = ?C:send(C, <<"GET / HTTP/1.1\r\nhost: a\r\n\r\n">>),
    {ok, protocol_error, C1} = ?C:goaway(C, 2000),
    ok = ?C:wait_closed(C1, 2000),
    ok = falco_test_listener:stop(badpreface_l).

%% An idle connection gets GOAWAY NO_ERROR after idle_timeout.
idle_timeout_goaway(Config) ->
    Port = conn_listener(idle_l, #{idle_timeout => 200}, Config),
    C = ?C:connect(Port, #{}),
    {ok, no_error, C1} = ?C:goaway(C, 2000),
    ok = ?C:wait_closed(C1, 2000),
    ok = falco_test_listener:stop(idle_l).

%% RFC 9113 §6.5.3: our SETTINGS must be acknowledged in time.
settings_timeout(Config) ->
    Port = conn_listener(settings_l, #{h2_settings_timeout => 200}, Config),
    C = ?C:connect_raw(Port, #{}),
    ok = ?C:send(C, [falco_protocol:client_preface(), falco_http2_frame:settings(#{})]),
    {ok, settings_timeout, _} = ?C:goaway(C, 2000),
    ok = falco_test_listener:stop(settings_l).

%% CVE-2023-44487: open and reset streams in a loop.
rapid_reset_calm(Config) ->
    Port = conn_listener(reset_l, #{h2_flood_limits => #{rst_stream => 50}}, Config),
    C0 = ?C:connect(Port, #{}),
    C = lists:foldl(fun(I, C) ->
                            Id = 2 * I - 1,
                            C1 = ?C:headers_frame(C, Id, [{<<":method">>, <<"GET">>},
                                                          {<<":scheme">>, <<"http">>},
                                                          {<<":path">>, <<"/slow">>},
                                                          {<<":authority">>, <<"a">>}], fin),
                            ?C:send_frame(C1, falco_http2_frame:rst_stream(Id, cancel))
                    end, C0, lists:seq(1, 60)),
    {ok, enhance_your_calm, _} = ?C:goaway(C, 5000),
    ok = falco_test_listener:stop(reset_l).

%% CVE-2024-27316: CONTINUATION frames without end.
continuation_flood_calm(Config) ->
    Port = conn_listener(cont_l, #{}, Config),
    C0 = ?C:connect(Port, #{}),
    C1 = ?C:send_frame(C0, falco_http2_frame:headers(1, fin, nofin, <<>>)),
    C2 = lists:foldl(fun(_, C) ->
                             ?C:send_frame(C, falco_http2_frame:continuation(1, nofin, <<>>))
                     end, C1, lists:seq(1, 40)),
    {ok, enhance_your_calm, _} = ?C:goaway(C2, 5000),
    ok = falco_test_listener:stop(cont_l).

ping_flood_calm(Config) ->
    Port = conn_listener(ping_l, #{h2_flood_limits => #{ping => 100}}, Config),
    C0 = ?C:connect(Port, #{}),
    ok = ?C:send(C0, [falco_http2_frame:ping(<<I:64>>) || I <- lists:seq(1, 101)]),
    {ok, enhance_your_calm, _} = ?C:goaway(C0, 5000),
    ok = falco_test_listener:stop(ping_l).

%% A client that stops reading: the stream is reset after send_timeout.
zero_window_stall_reset(Config) ->
    Port = conn_listener(stall_l, #{send_timeout => 300}, Config),
    C0 = ?C:connect(Port, #{settings => #{initial_window_size => 0}}),
    {Id, C1} = ?C:request(C0, <<"GET">>, <<"/stream-large">>),
    {error, {reset, cancel}, C2} = ?C:response(C1, Id, 3000),
    %% and the connection still serves (the body is held until the window opens)
    C3 = ?C:send_frame(C2, falco_http2_frame:settings(#{initial_window_size => 65535})),
    {Id2, C4} = ?C:request(C3, <<"GET">>, <<"/hello">>),
    {ok, #{status := 200}, _} = ?C:response(C4, Id2),
    ok = falco_test_listener:stop(stall_l).

%% RFC 9113 §5.1.2: beyond SETTINGS_MAX_CONCURRENT_STREAMS, REFUSED_STREAM.
refused_stream_over_limit(Config) ->
    Port = conn_listener(refused_l, #{h2_max_concurrent_streams => 2}, Config),
    C0 = ?C:connect(Port, #{}),
    #{server_settings := #{max_concurrent_streams := 2}} = C0,
    {S1, C1} = ?C:request(C0, <<"GET">>, <<"/slow">>),
    {S2, C2} = ?C:request(C1, <<"GET">>, <<"/slow">>),
    {S3, C3} = ?C:request(C2, <<"GET">>, <<"/hello">>),
    {error, {reset, refused_stream}, C4} = ?C:response(C3, S3),
    {ok, #{status := 200}, C5} = ?C:response(C4, S1),
    {ok, #{status := 200}, _} = ?C:response(C5, S2),
    ok = falco_test_listener:stop(refused_l).

%% RFC 9113 §5.2: the stream window is given back only as the handler
%% reads: a handler that reads nothing leaves the client stuck at the
%% initial window; one that reads gets the whole body.
window_replenished_as_handler_reads(Config) ->
    Port = conn_listener(window_l, #{h2_initial_window_size => 16384}, Config),
    C0 = ?C:connect(Port, #{}),
    C1 = ?C:headers_frame(C0, 1, [{<<":method">>, <<"POST">>}, {<<":scheme">>, <<"http">>},
                                  {<<":path">>, <<"/never">>}, {<<":authority">>, <<"a">>}], nofin),
    C2 = ?C:send_data(C1, 1, binary:copy(<<"a">>, 16384), nofin),
    %% nothing reads, so no WINDOW_UPDATE for stream 1 comes
    {error, timeout, C3} = ?C:until(C2, fun({window_update, 1, _}) -> true; (_) -> false end, 500),
    %% one byte more than the window is a FLOW_CONTROL_ERROR
    C4 = ?C:send_data(C3, 1, <<"b">>, nofin),
    {error, {reset, flow_control_error}, C5} = ?C:response(C4, 1),
    %% a reader gets WINDOW_UPDATEs and the whole body through
    C6 = ?C:headers_frame(C5, 3, [{<<":method">>, <<"POST">>}, {<<":scheme">>, <<"http">>},
                                  {<<":path">>, <<"/read-slowly">>}, {<<":authority">>, <<"a">>}],
                          nofin),
    C7 = send_flow_controlled(C6, 3, 100000, 16384),
    {ok, #{status := 200, body := B}, _} = ?C:response(C7, 3, 10000),
    {100000, Reads} = binary_to_term(B),
    true = Reads > 1,
    ok = falco_test_listener:stop(window_l).

%% Sends Total bytes on stream Id, never beyond the window the server gave.
send_flow_controlled(C, _Id, 0, _Window) ->
    C;
send_flow_controlled(C0, Id, Total, 0) ->
    {ok, {window_update, Id, Inc}, C} =
        ?C:until(C0, fun({window_update, I, _}) -> I =:= Id; (_) -> false end, 5000),
    send_flow_controlled(C, Id, Total, Inc);
send_flow_controlled(C0, Id, Total, Window) ->
    N = lists:min([Total, Window, 8192]),
    Fin = case N =:= Total of true -> fin; false -> nofin end,
    C = ?C:send_data(C0, Id, binary:copy(<<"d">>, N), Fin),
    send_flow_controlled(C, Id, Total - N, Window - N).

listener_stop_closes(Config) ->
    Port = conn_listener(stop_l, #{}, Config),
    C0 = ?C:connect(Port, #{}),
    {_, C1} = ?C:request(C0, <<"GET">>, <<"/slow">>),
    ok = falco:stop_listener(stop_l),
    ok = ?C:wait_closed(C1, 2000).

%% RFC 7540 §3.2: HTTP/1.1 Upgrade to h2c, the request answered on stream 1.
h2c_upgrade(Config) ->
    {_, Port} = falco_test_listener:start(upgrade_l, base_opts(Config)),
    C0 = ?C:connect_raw(Port, #{}),
    ok = ?C:send(C0, <<"GET /info HTTP/1.1\r\nhost: up.example\r\n"
                       "connection: Upgrade, HTTP2-Settings\r\nupgrade: h2c\r\n"
                       "http2-settings: AAMAAABkAAQAAP__\r\n\r\n">>),
    #{sock := Sock} = C0,
    {ok, Resp} = read_head(Sock, <<>>),
    {match, _} = re:run(Resp, "^HTTP/1.1 101 Switching Protocols\r\n"),
    {match, _} = re:run(Resp, "\r\nupgrade: h2c\r\n", [caseless]),
    [_, After] = binary:split(Resp, <<"\r\n\r\n">>),
    C1 = ?C:handshake(C0#{buf => After}, #{}),
    {ok, #{status := 200, body := B}, C2} = ?C:response(C1, 1),
    #{version := {1, 1}, host := <<"up.example">>} = binary_to_term(B),
    {Id, C3} = ?C:request(C2#{next_id => 3}, <<"GET">>, <<"/hello">>),
    {ok, #{status := 200, body := <<"hello world">>}, _} = ?C:response(C3, Id),
    ok = falco_test_listener:stop(upgrade_l).

read_head(Sock, Acc) ->
    case binary:match(Acc, <<"\r\n\r\n">>) of
        nomatch ->
            {ok, Data} = gen_tcp:recv(Sock, 0, 5000),
            read_head(Sock, <<Acc/binary, Data/binary>>);
        _ ->
            {ok, Acc}
    end.

%% RFC 9113 §3.1 (RFC 7540 §3.2): an upgrade request with a body is served
%% over HTTP/1.1 (the upgrade ignored), body and all.
h2c_upgrade_with_body_stays_http1(Config) ->
    {_, Port} = falco_test_listener:start(upgrade2_l, base_opts(Config)),
    {Sock, {ok, R}} =
        falco_test_client:request(Port, <<"POST /echo HTTP/1.1\r\nhost: a\r\n"
                                          "connection: Upgrade, HTTP2-Settings\r\nupgrade: h2c\r\n"
                                          "http2-settings: AAMAAABkAAQAAP__\r\n"
                                          "content-length: 3\r\n\r\nabc">>),
    #{version := <<"HTTP/1.1">>, status := 200, body := <<"abc">>} = R,
    falco_test_client:close(Sock),
    ok = falco_test_listener:stop(upgrade2_l).

%% RFC 9113 §3.3: with protocols => [http1] there is no prior knowledge:
%% the preface is just a bad HTTP/1.1 request.
prior_knowledge_disabled(Config) ->
    {_, Port} = falco_test_listener:start(h1only_l, (base_opts(Config))#{protocols => [http1]}),
    #{responses := [#{version := <<"HTTP/1.1">>, status := 400}], closed := closed} =
        falco_test_client:exchange(Port, falco_protocol:client_preface()),
    ok = falco_test_listener:stop(h1only_l).

%% -- TLS --------------------------------------------------------------------------------------

tls_listener(Name, Extra, Config) ->
    Opts = falco_test_listener:tls((base_opts(Config))#{tls_opts => ?config(tls_opts, Config)}),
    {_, Port} = falco_test_listener:start(Name, maps:merge(Opts, Extra)),
    Port.

%% RFC 9113 §3.2, RFC 7301: over TLS, ALPN http/1.1 or no ALPN at all
%% is HTTP/1.1, with scheme https.
tls_alpn_http11(Config) ->
    Port = tls_listener(tls11_l, #{}, Config),
    S = falco_test_client:connect_tls(Port, [<<"http/1.1">>]),
    {ok, <<"http/1.1">>} = ssl:negotiated_protocol(S),
    falco_test_client:send(S, <<"GET /info HTTP/1.1\r\nhost: a\r\n\r\n">>),
    {ok, #{status := 200, body := Body}} = falco_test_client:recv_response(S),
    #{scheme := https, version := {1, 1}} = binary_to_term(Body),
    falco_test_client:close(S),
    S2 = falco_test_client:connect_tls(Port, []),
    {error, protocol_not_negotiated} = ssl:negotiated_protocol(S2),
    falco_test_client:send(S2, <<"GET /hello HTTP/1.1\r\nhost: a\r\n\r\n">>),
    {ok, #{version := <<"HTTP/1.1">>, status := 200, body := <<"hello world">>}} =
        falco_test_client:recv_response(S2),
    falco_test_client:close(S2),
    ok = falco_test_listener:stop(tls11_l).

%% The handshake runs in the connection process with a timeout: a client
%% that connects and says nothing is dropped, and the acceptors keep going.
tls_handshake_timeout(Config) ->
    %% 1 s: the other client's own handshake must fit in it on a loaded machine
    Port = tls_listener(tlsto_l, #{handshake_timeout => 1000, num_acceptors => 1}, Config),
    {ok, Silent} = gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {active, false}]),
    %% meanwhile the single acceptor still serves others
    C0 = ?C:connect(Port, #{transport => tls}),
    {Id, C1} = ?C:request(C0, <<"GET">>, <<"/hello">>),
    {ok, #{status := 200}, _} = ?C:response(C1, Id),
    {error, closed} = gen_tcp:recv(Silent, 0, 6000),
    ok = falco_test_listener:stop(tlsto_l).

%% Options are checked when the listener starts; options ssl refuses are
%% an error for the caller, not a logged crash.
tls_bad_options(Config) ->
    ok = falco_test_tree:capture_log(tls_bad_options_log),
    try
        {error, {invalid_option, tls_opts, missing_certificate_or_key}} =
            falco:start_listener(bad1, (base_opts(Config))#{transport => tls}),
        {error, {invalid_option, tls_opts, {file_not_found, {certfile, "/nonexistent.pem"}}}} =
            falco:start_listener(bad2, (base_opts(Config))#{transport => tls,
                                                            tls_opts => [{certfile, "/nonexistent.pem"},
                                                                         {keyfile, "/nonexistent.pem"}]}),
        %% one that only ssl:listen/2 refuses, in the listener's init
        {error, {invalid_option, tls_opts, _}} =
            falco:start_listener(bad10, (base_opts(Config))#{transport => tls,
                                                             tls_opts => ?config(tls_opts, Config)
                                                                 ++ [{versions, ['tlsv9.9']}]}),
        timer:sleep(200),
        [] = [E || #{level := L} = E <- falco_test_tree:logged(), L =/= debug, L =/= info]
    after
        logger:remove_handler(tls_bad_options_log)
    end,
    {error, {invalid_option, transport, udp}} =
        falco:start_listener(bad3, (base_opts(Config))#{transport => udp}),
    {error, {invalid_option, protocols, [h3]}} =
        falco:start_listener(bad4, (base_opts(Config))#{protocols => [h3]}),
    {error, {invalid_option, protocols, []}} =
        falco:start_listener(bad5, (base_opts(Config))#{protocols => []}),
    {error, {invalid_option, h2_max_frame_size, 100}} =
        falco:start_listener(bad6, (base_opts(Config))#{h2_max_frame_size => 100}),
    {error, {invalid_option, h2_flood_limits, Bad}} =
        falco:start_listener(bad7, (base_opts(Config))#{h2_flood_limits => #{pings => 1}}),
    #{pings := 1} = Bad,
    {error, {unknown_option, h2_nonsense}} =
        falco:start_listener(bad8, (base_opts(Config))#{h2_nonsense => 1}),
    {error, {invalid_option, tls_opts, not_a_list}} =
        falco:start_listener(bad9, (base_opts(Config))#{tls_opts => not_a_list}).
