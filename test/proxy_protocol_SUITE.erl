%% The PROXY protocol over the wire (listener option `proxy_protocol',
%% haproxy's proxy-protocol.txt): version 1 and 2 headers from a raw
%% client before HTTP/1.1, h2c and TLS (the header, then the handshake on
%% the same connection, with both socket backends); `optional',
%% `required' and `off'; malformed, slow and oversized headers (closed,
%% no response, nothing logged above debug, the handler never called: it
%% records every call); and haproxy itself in front (`send-proxy',
%% `send-proxy-v2', `send-proxy-v2-ssl-cn'), curl through it, the handler
%% seeing curl's own address and port.
-module(proxy_protocol_SUITE).
-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, init_per_suite/1, end_per_suite/1, init_per_group/2, end_per_group/2,
         init_per_testcase/2, end_per_testcase/2]).
-export([v1_http1/1, v2_tlvs_http1/1, v1_h2c/1, v2_h2c_upgrade_peer/1, tls_header_then_handshake/1,
         optional/1, required_without_header/1, off_is_bad_request/1, malformed/1,
         slow_header/1, over_the_cap/1, local_and_unknown/1, sys_state/1, access_log_and_websocket/1,
         haproxy_send_proxy/1, haproxy_send_proxy_v2/1, haproxy_send_proxy_v2_h2c/1,
         haproxy_send_proxy_v2_ssl/1]).

-define(SIG, "\r\n\r\n\0\r\nQUIT\n").
-define(GET, <<"GET /who HTTP/1.1\r\nhost: x\r\n\r\n">>).

all() ->
    [v1_http1, v2_tlvs_http1, v1_h2c, v2_h2c_upgrade_peer, tls_header_then_handshake, optional,
     required_without_header, off_is_bad_request, malformed, slow_header, over_the_cap,
     local_and_unknown, sys_state, access_log_and_websocket, {group, haproxy}].

groups() ->
    [{haproxy, [], [haproxy_send_proxy, haproxy_send_proxy_v2, haproxy_send_proxy_v2_h2c,
                    haproxy_send_proxy_v2_ssl]}].

init_per_suite(Config) ->
    ok = falco_test_listener:start_tls_app(),
    [{tls_opts, falco_test_tls:server_opts()} | Config].

end_per_suite(_Config) ->
    ok.

init_per_group(haproxy, Config) ->
    case falco_test_tools:check(["haproxy", "curl"]) of
        ok ->
            Rec = falco_test_client:recorder_start(),
            {_, Http} = falco_test_listener:start(pp_haproxy, handler(Rec),
                                                  #{proxy_protocol => required}),
            haproxy_start([{recorder, Rec}, {falco_port, Http} | Config]);
        NotThere ->
            NotThere
    end.

end_per_group(haproxy, Config) ->
    haproxy_stop(Config),
    ok = falco_test_listener:stop(pp_haproxy),
    falco_test_client:recorder_stop(?config(recorder, Config)).

init_per_testcase(_, Config) ->
    [{rec, falco_test_client:recorder_start()} | Config].

end_per_testcase(_Case, Config) ->
    ok = falco_test_listener:ensure_stopped([pp, pp_tls]),
    case ?config(rec, Config) of
        undefined -> ok;
        Rec -> falco_test_client:recorder_stop(Rec)
    end.

%% Every call is recorded; the body says the peer the handler saw.
handler(Rec) ->
    fun(Req) ->
            Peer = falco_req:peer(Req),
            falco_test_client:record(Rec, {Peer, falco_req:proxy(Req), falco_req:version(Req)}),
            falco_resp:text(200, peer_text(Peer))
    end.

peer_text({Ip, Port}) -> [inet:ntoa(Ip), ":", integer_to_list(Port)].

listener(Config, Opts) ->
    falco_test_listener:start(pp, handler(?config(rec, Config)), Opts).

%% One request on a connection of its own: the response.
req(Port, Raw) ->
    {S, {ok, Resp}} = falco_test_client:request(Port, Raw),
    falco_test_client:close(S),
    Resp.

v2(VerCmd, Fam, Addr, Tlvs) ->
    falco_proxy_protocol_tests:v2(VerCmd, Fam, Addr, Tlvs).

tlv(T, V) ->
    falco_proxy_protocol_tests:tlv(T, V).

ipv4(Src, SrcPort) ->
    <<(list_to_binary(tuple_to_list(Src)))/binary, 192, 0, 2, 1, SrcPort:16, 80:16>>.

%% -- headers from a raw client ------------------------------------------------

%% §2.1's example line before an HTTP/1.1 request, with the request in the
%% same packet: the rest of the packet is the request.
v1_http1(Config) ->
    {_, Port} = listener(Config, #{proxy_protocol => required}),
    #{status := 200, body := <<"203.0.113.7:40000">>} =
        req(Port, <<"PROXY TCP4 203.0.113.7 192.0.2.1 40000 80\r\n",
                                          (?GET)/binary>>),
    [{{{203, 0, 113, 7}, 40000}, #{version := 1, destination := {{192, 0, 2, 1}, 80}}, {1, 1}}] =
        falco_test_client:recorded(?config(rec, Config)),
    %% IPv6, header and request in two packets
    S = falco_test_client:connect(Port),
    ok = falco_test_client:send(S, <<"PROXY TCP6 2001:db8::7 2001:db8::1 1 443\r\n">>),
    timer:sleep(50),
    ok = falco_test_client:send(S, ?GET),
    {ok, #{status := 200, body := <<"2001:db8::7:1">>}} = falco_test_client:recv_response(S).

%% Version 2 with the TLVs a TLS-terminating proxy sends: the request map's
%% `proxy' has them.
v2_tlvs_http1(Config) ->
    {_, Port} = listener(Config, #{proxy_protocol => required}),
    Ssl = <<1, 0:32, (tlv(16#21, <<"TLSv1.3">>))/binary, (tlv(16#23, <<"TLS_AES_128_GCM_SHA256">>))/binary>>,
    Header = v2(16#21, 16#11, ipv4({198, 51, 100, 9}, 55555),
                [tlv(16#01, <<"http/1.1">>), tlv(16#02, <<"www.example.com">>),
                 tlv(16#05, <<"id-42">>), tlv(16#20, Ssl), tlv(16#e1, <<"mine">>)]),
    #{status := 200, body := <<"198.51.100.9:55555">>} =
        req(Port, <<Header/binary, (?GET)/binary>>),
    [{_, Proxy, _}] = falco_test_client:recorded(?config(rec, Config)),
    #{version := 2, command := proxy, alpn := <<"http/1.1">>, authority := <<"www.example.com">>,
      unique_id := <<"id-42">>, tlvs := [{16#e1, <<"mine">>}],
      ssl := #{client := [ssl], verify := 0, version := <<"TLSv1.3">>,
               cipher := <<"TLS_AES_128_GCM_SHA256">>}} = Proxy.

%% The header, then the HTTP/2 preface (prior knowledge; the listener
%% detects h2 from the bytes after the header): streams see the peer.
v1_h2c(Config) ->
    {_, Port} = listener(Config, #{proxy_protocol => required}),
    C0 = falco_test_h2_client:connect(Port, #{prefix => <<"PROXY TCP4 203.0.113.8 192.0.2.1 1234 80\r\n">>}),
    {Id, C1} = falco_test_h2_client:request(C0, <<"GET">>, <<"/who">>),
    {ok, #{status := 200, body := <<"203.0.113.8:1234">>}, C2} = falco_test_h2_client:response(C1, Id),
    {Id2, C3} = falco_test_h2_client:request(C2, <<"GET">>, <<"/who">>),
    {ok, #{status := 200}, C4} = falco_test_h2_client:response(C3, Id2),
    falco_test_h2_client:close(C4),
    [{{{203, 0, 113, 8}, 1234}, #{version := 1}, {2, 0}},
     {{{203, 0, 113, 8}, 1234}, #{version := 1}, {2, 0}}] =
        falco_test_client:recorded(?config(rec, Config)).

%% An HTTP/1.1 request upgraded to h2c keeps the peer of the header on
%% stream 1 (the loop that takes over gets the same connection context).
v2_h2c_upgrade_peer(Config) ->
    {_, Port} = listener(Config, #{proxy_protocol => required}),
    %% SETTINGS_MAX_CONCURRENT_STREAMS 100, SETTINGS_INITIAL_WINDOW_SIZE 65535
    Upgrade = <<"GET /who HTTP/1.1\r\nhost: x\r\nconnection: Upgrade, HTTP2-Settings\r\n"
                "upgrade: h2c\r\nhttp2-settings: AAMAAABkAAQAAP__\r\n\r\n">>,
    S = falco_test_client:connect(Port),
    ok = falco_test_client:send(S, <<(v2(16#21, 16#11, ipv4({198, 51, 100, 1}, 7), []))/binary,
                                     Upgrade/binary>>),
    {ok, #{status := 101}} = falco_test_client:recv_response(S),
    ok = falco_test_client:send(S, [falco_protocol:client_preface(), falco_http2_frame:settings(#{})]),
    ok = falco_test_client:wait_until(
           fun() -> falco_test_client:recorded(?config(rec, Config)) =/= [] end, 5000),
    [{{{198, 51, 100, 1}, 7}, #{version := 2}, {1, 1}}] =
        falco_test_client:recorded(?config(rec, Config)),
    falco_test_client:close(S).

%% Over TLS the header precedes the handshake; only its bytes are read
%% before ssl takes the connection (both socket backends, HTTP/1.1 and h2
%% by ALPN).
tls_header_then_handshake(Config) ->
    lists:foreach(
      fun(Backend) ->
              falco_test_client:recorder_reset(?config(rec, Config)),
              {_, Port} = falco_test_listener:start(
                            pp_tls, handler(?config(rec, Config)),
                            falco_test_listener:tls(#{proxy_protocol => required,
                                                      tls_opts => ?config(tls_opts, Config),
                                                      inet_backend => Backend})),
              %% v1, HTTP/1.1 (the line and the ClientHello in one packet
              %% would do too: ssl sends the hello at once after it)
              {ok, Tcp} = gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {active, false}]),
              ok = gen_tcp:send(Tcp, <<"PROXY TCP4 203.0.113.9 192.0.2.1 4433 443\r\n">>),
              {ok, Tls} = ssl:connect(Tcp, [{verify, verify_none}, {alpn_advertised_protocols,
                                                                    [<<"http/1.1">>]}], 5000),
              ok = ssl:send(Tls, ?GET),
              {ok, Resp} = recv_tls(Tls, <<>>),
              {match, _} = re:run(Resp, "\r\n\r\n203\\.0\\.113\\.9:4433$"),
              _ = ssl:close(Tls),
              %% v2 with TLVs, h2 by ALPN
              C0 = falco_test_h2_client:connect(Port, #{transport => tls,
                                                        prefix => v2(16#21, 16#11, ipv4({192, 0, 2, 77}, 9),
                                                                     [tlv(16#02, <<"sni.example">>)])}),
              {Id, C1} = falco_test_h2_client:request(C0, <<"GET">>, <<"/who">>),
              {ok, #{status := 200, body := <<"192.0.2.77:9">>}, C2} =
                  falco_test_h2_client:response(C1, Id),
              falco_test_h2_client:close(C2),
              [{{{203, 0, 113, 9}, 4433}, #{version := 1}, {1, 1}},
               {{{192, 0, 2, 77}, 9}, #{version := 2, authority := <<"sni.example">>}, {2, 0}}] =
                  falco_test_client:recorded(?config(rec, Config)),
              %% a TLS client without the header: closed, no handshake
              {error, _} = ssl:connect({127, 0, 0, 1}, Port, [{verify, verify_none}], 5000),
              ok = falco_test_listener:stop(pp_tls)
      end, [socket, inet]).

recv_tls(Tls, Acc) ->
    case ssl:recv(Tls, 0, 5000) of
        {ok, Data} ->
            Got = <<Acc/binary, Data/binary>>,
            case binary:match(Got, <<"\r\n\r\n">>) of
                {P, 4} ->
                    <<Head:P/binary, _/binary>> = Got,
                    {match, [Len]} = re:run(Head, "content-length: ([0-9]+)",
                                            [caseless, {capture, all_but_first, list}]),
                    case byte_size(Got) - P - 4 >= list_to_integer(Len) of
                        true -> {ok, Got};
                        false -> recv_tls(Tls, Got)
                    end;
                nomatch ->
                    recv_tls(Tls, Got)
            end;
        Error ->
            Error
    end.

%% `optional': with a header the peer is the header's; without, the
%% socket's (the client's own port), and the request is served as usual.
optional(Config) ->
    {_, Port} = listener(Config, #{proxy_protocol => optional}),
    #{status := 200, body := <<"203.0.113.10:5">>} =
        req(Port, <<"PROXY TCP4 203.0.113.10 192.0.2.1 5 80\r\n", (?GET)/binary>>),
    S = falco_test_client:connect(Port),
    {ok, {_, Local}} = inet:sockname(S),
    ok = falco_test_client:send(S, ?GET),
    Expect = iolist_to_binary(["127.0.0.1:", integer_to_list(Local)]),
    {ok, #{status := 200, body := Expect}} = falco_test_client:recv_response(S),
    falco_test_client:close(S),
    %% without a header and h2c (the preface's first byte is no signature's)
    C0 = falco_test_h2_client:connect(Port, #{}),
    {Id, C1} = falco_test_h2_client:request(C0, <<"GET">>, <<"/who">>),
    {ok, #{status := 200, body := <<"127.0.0.1:", _/binary>>}, C2} = falco_test_h2_client:response(C1, Id),
    falco_test_h2_client:close(C2),
    [{_, #{version := 1}, _}, {_, undefined, {1, 1}}, {_, undefined, {2, 0}}] =
        falco_test_client:recorded(?config(rec, Config)).

%% `required': a request without a header is closed unanswered.
required_without_header(Config) ->
    {_, Port} = listener(Config, #{proxy_protocol => required}),
    S = falco_test_client:connect(Port),
    ok = falco_test_client:send(S, ?GET),
    ok = falco_test_client:expect_closed(S, 5000),
    [] = falco_test_client:recorded(?config(rec, Config)).

%% `off' (the default): a PROXY line is what it was before, a bad request.
off_is_bad_request(Config) ->
    {_, Port} = listener(Config, #{}),
    #{status := 400} = req(Port, <<"PROXY TCP4 203.0.113.7 192.0.2.1 1 80\r\n",
                                                         (?GET)/binary>>),
    [] = falco_test_client:recorded(?config(rec, Config)).

%% Malformed headers: closed with nothing sent, no handler call, nothing
%% logged at notice or above (a debug line only).
malformed(Config) ->
    {_, Port} = listener(Config, #{proxy_protocol => required}),
    ok = falco_test_tree:capture_log(pp_log, notice),
    try
        Bad = [<<"PROXY TCP4 203.0.113.7 192.0.2.1 65536 80\r\n">>,
               <<"PROXY TCP4 203.0.113.07 192.0.2.1 1 80\r\n">>,
               <<"PROXY TCP4 203.0.113.7  192.0.2.1 1 80\r\n">>,
               <<"PROXY TCP4 203.0.113.7 192.0.2.1 1 80\n">>,
               <<"PROXY TCP6 203.0.113.7 192.0.2.1 1 80\r\n">>,
               <<"PROXY ", (binary:copy(<<"A">>, 120))/binary>>,
               <<?SIG, 16#11, 16#11, 12:16, (ipv4({1, 2, 3, 4}, 5))/binary>>,
               <<?SIG, 16#23, 16#11, 12:16, (ipv4({1, 2, 3, 4}, 5))/binary>>,
               <<?SIG, 16#21, 16#51, 12:16, (ipv4({1, 2, 3, 4}, 5))/binary>>,
               <<?SIG, 16#21, 16#11, 8:16, 1, 2, 3, 4, 5, 6, 7, 8>>,
               v2(16#21, 16#11, ipv4({1, 2, 3, 4}, 5), [<<16#01, 99:16, "h2">>]),
               v2(16#21, 16#11, ipv4({1, 2, 3, 4}, 5), [tlv(16#03, <<1, 2, 3, 4>>)])],
        lists:foreach(fun(B) ->
                              S = falco_test_client:connect(Port),
                              ok = falco_test_client:send(S, <<B/binary, (?GET)/binary>>),
                              ?assertEqual(ok, falco_test_client:expect_closed(S, 5000), B)
                      end, Bad),
        [] = falco_test_client:recorded(?config(rec, Config)),
        timer:sleep(100),
        [] = falco_test_tree:logged()
    after
        logger:remove_handler(pp_log)
    end.

%% A header trickled byte by byte is cut at `proxy_header_timeout' (here
%% 400 ms), however much of it is still to come.
slow_header(Config) ->
    {_, Port} = listener(Config, #{proxy_protocol => required, proxy_header_timeout => 400}),
    S = falco_test_client:connect(Port),
    T0 = erlang:monotonic_time(millisecond),
    Line = <<"PROXY TCP4 203.0.113.7 192.0.2.1 1 80\r\n">>,
    Sent = trickle(S, Line, 100),
    Closed = erlang:monotonic_time(millisecond) - T0,
    ct:pal("closed after ~b ms, ~b of ~b header bytes sent", [Closed, Sent, byte_size(Line)]),
    true = Sent < byte_size(Line),
    true = Closed >= 350 andalso Closed < 3000,
    [] = falco_test_client:recorded(?config(rec, Config)).

%% Sends a byte every Ms ms until the server closes; the bytes sent.
trickle(S, <<B, Rest/binary>>, Ms) ->
    case gen_tcp:send(S, <<B>>) of
        ok ->
            case gen_tcp:recv(S, 0, Ms) of
                {error, timeout} -> 1 + trickle(S, Rest, Ms);
                _ -> 1
            end;
        {error, _} ->
            0
    end;
trickle(_, <<>>, _) ->
    0.

%% A version 2 header longer than `proxy_header_max_size' is refused as
%% soon as its length is read, before its body arrives.
over_the_cap(Config) ->
    {_, Port} = listener(Config, #{proxy_protocol => required, proxy_header_max_size => 512}),
    S = falco_test_client:connect(Port),
    ok = falco_test_client:send(S, <<?SIG, 16#21, 16#11, 1000:16>>),
    ok = falco_test_client:expect_closed(S, 2000),
    %% at the cap it is fine
    Header = v2(16#21, 16#11, ipv4({203, 0, 113, 5}, 6), [tlv(16#e0, binary:copy(<<"p">>, 512 - 31))]),
    512 = byte_size(Header),
    #{status := 200, body := <<"203.0.113.5:6">>} =
        req(Port, <<Header/binary, (?GET)/binary>>),
    [_] = falco_test_client:recorded(?config(rec, Config)).

%% LOCAL (a proxy's health check) and UNKNOWN keep the socket's peer.
local_and_unknown(Config) ->
    {_, Port} = listener(Config, #{proxy_protocol => required}),
    lists:foreach(fun(Header) ->
                          S = falco_test_client:connect(Port),
                          {ok, {_, Local}} = inet:sockname(S),
                          ok = falco_test_client:send(S, <<Header/binary, (?GET)/binary>>),
                          Expect = iolist_to_binary(["127.0.0.1:", integer_to_list(Local)]),
                          {ok, #{status := 200, body := Expect}} = falco_test_client:recv_response(S),
                          falco_test_client:close(S)
                  end, [v2(16#20, 16#00, <<>>, []), v2(16#20, 16#11, ipv4({9, 9, 9, 9}, 9), []),
                        <<"PROXY UNKNOWN\r\n">>, <<"PROXY UNKNOWN 1.2.3.4 5.6.7.8 1 2\r\n">>]),
    [{_, #{command := local}, _}, {_, #{command := local}, _}, {_, #{family := unspec}, _},
     {_, #{family := unspec}, _}] = falco_test_client:recorded(?config(rec, Config)).

%% The connection's sys state shows the proxied peer and the header.
sys_state(Config) ->
    {Sup, Port} = listener(Config, #{proxy_protocol => required}),
    S = falco_test_client:connect(Port),
    ok = falco_test_client:send(S, <<"PROXY TCP4 203.0.113.11 192.0.2.1 99 80\r\n", (?GET)/binary>>),
    {ok, #{status := 200}} = falco_test_client:recv_response(S),
    Conn = falco_test_tree:one_conn(Sup),
    #{peer := {{203, 0, 113, 11}, 99}, proxy := #{version := 1}} = sys:get_state(Conn),
    falco_test_client:close(S).

%% The access log line and a WebSocket session (its sys state) show the
%% proxied peer too.
access_log_and_websocket(Config) ->
    Self = self(),
    Handler = fun(#{path := <<"/ws">>}) -> {websocket, falco_test_ws_handler, #{test => Self}, #{}};
                 (Req) -> (handler(?config(rec, Config)))(Req)
              end,
    {_, Port} = falco_test_listener:start(pp, Handler, #{proxy_protocol => required,
                                                         middleware => [{falco_access_log,
                                                                         #{level => notice}}]}),
    ok = falco_test_tree:capture_log(pp_log, notice),
    try
        #{status := 200} = req(Port, <<"PROXY TCP4 203.0.113.12 192.0.2.1 12 80\r\n", (?GET)/binary>>),
        ok = falco_test_client:wait_until(fun() -> access_lines() =/= [] end, 5000),
        [#{peer := <<"203.0.113.12:12">>, status := 200}] = access_lines()
    after
        logger:remove_handler(pp_log)
    end,
    S = falco_test_client:connect(Port),
    ok = falco_test_client:send(S, <<"PROXY TCP6 2001:db8::12 2001:db8::1 13 80\r\n"
                                     "GET /ws HTTP/1.1\r\nhost: x\r\nupgrade: websocket\r\n"
                                     "connection: upgrade\r\nsec-websocket-version: 13\r\n"
                                     "sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n">>),
    {ok, #{status := 101}} = falco_test_client:recv_response(S),
    Ws = receive {ws_init, Pid, _} -> Pid after 5000 -> ct:fail(no_ws_init) end,
    #{protocol := websocket, peer := {{16#2001, 16#db8, 0, 0, 0, 0, 0, 16#12}, 13}} = sys:get_state(Ws),
    falco_test_client:close(S).

access_lines() ->
    [Meta || #{meta := Meta = #{status := _, peer := _}} <- put_back(falco_test_tree:logged())].

%% logged/0 takes the events out of the mailbox: keep them for the next look.
put_back(Events) ->
    _ = [self() ! {log, E} || E <- Events],
    Events.

%% -- haproxy in front -----------------------------------------------------------

%% One haproxy (foreground, under a port the suite closes) with a frontend
%% per way of sending the header, all to the falco listener.
haproxy_start(Config) ->
    Priv = ?config(priv_dir, Config),
    [P1, P2, P3] = falco_test_haproxy:free_ports(3),
    Pem = filename:join(Priv, "haproxy.pem"),
    Opts = ?config(tls_opts, Config),
    {key, {KeyType, KeyDer}} = lists:keyfind(key, 1, Opts),
    {cert, CertDer} = lists:keyfind(cert, 1, Opts),
    ok = file:write_file(Pem, public_key:pem_encode([{'Certificate', CertDer, not_encrypted},
                                                     {KeyType, KeyDer, not_encrypted}])),
    Falco = "127.0.0.1:" ++ integer_to_list(?config(falco_port, Config)),
    Cfg = filename:join(Priv, "haproxy.cfg"),
    ok = file:write_file(Cfg, io_lib:format(
        "global\n  maxconn 100\n"
        "defaults\n  mode tcp\n  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n"
        "frontend v1\n  bind 127.0.0.1:~b\n  default_backend v1\n"
        "backend v1\n  server falco ~s send-proxy\n"
        "frontend v2\n  bind 127.0.0.1:~b\n  default_backend v2\n"
        "backend v2\n  server falco ~s send-proxy-v2\n"
        "frontend v2ssl\n  bind 127.0.0.1:~b ssl crt ~s alpn http/1.1\n  default_backend v2ssl\n"
        "  unique-id-format pp-%ci-%cp\n"
        "backend v2ssl\n  server falco ~s send-proxy-v2-ssl-cn "
        "proxy-v2-options ssl,cert-sig,cert-key,ssl-cipher,authority,unique-id,crc32c\n",
        [P1, Falco, P2, Falco, P3, Pem, Falco])),
    Keeper = falco_test_haproxy:start(Cfg),
    ok = falco_test_client:wait_until(fun() -> falco_test_haproxy:listening(P3) end, 5000),
    [{haproxy, Keeper}, {haproxy_cfg, Cfg},
     {v1_port, P1}, {v2_port, P2}, {v2ssl_port, P3} | Config].

haproxy_stop(Config) ->
    falco_test_haproxy:stop(?config(haproxy, Config), ?config(haproxy_cfg, Config)).

%% curl through haproxy: the handler sees curl's own address and port
%% (what curl reports as %{local_port}).
curl_through(Config, Key, Args) ->
    Rec = ?config(recorder, Config),
    falco_test_client:recorder_reset(Rec),
    Port = ?config(Key, Config),
    %% over TLS a name, so that curl sends it as SNI (haproxy's authority TLV)
    Url = case Key of
              v2ssl_port -> io_lib:format("--resolve pp.test:~b:127.0.0.1 https://pp.test:~b/who",
                                          [Port, Port]);
              _ -> io_lib:format("http://127.0.0.1:~b/who", [Port])
          end,
    Out = falco_test_run:cmd(lists:flatten(["curl -sk --max-time 10 ", Args,
                                            " -w '|%{local_port}' ", Url]), 20000),
    [Body, LocalPort] = string:split(Out, "|", trailing),
    Body = "127.0.0.1:" ++ LocalPort,
    Peer = {{127, 0, 0, 1}, list_to_integer(LocalPort)},
    [{Peer, Proxy, Version}] = falco_test_client:recorded(Rec),
    {Proxy, Version, LocalPort}.

haproxy_send_proxy(Config) ->
    {#{version := 1, family := inet, destination := {{127, 0, 0, 1}, _}}, {1, 1}, _} =
        curl_through(Config, v1_port, "--http1.1").

haproxy_send_proxy_v2(Config) ->
    {#{version := 2, command := proxy, family := inet, transport := stream}, {1, 1}, _} =
        curl_through(Config, v2_port, "--http1.1").

haproxy_send_proxy_v2_h2c(Config) ->
    {#{version := 2}, {2, 0}, _} = curl_through(Config, v2_port, "--http2-prior-knowledge").

%% haproxy terminates TLS and says so in the SSL TLV (version, cipher,
%% the server certificate's algorithms; no client certificate, so no CN),
%% with the client's SNI as authority, a unique id and a CRC32C (checked).
haproxy_send_proxy_v2_ssl(Config) ->
    {Proxy, {1, 1}, LocalPort} = curl_through(Config, v2ssl_port, "--http1.1"),
    ct:pal("haproxy's header: ~p", [Proxy]),
    UniqueId = list_to_binary("pp-127.0.0.1-" ++ LocalPort),
    #{version := 2, ssl := Ssl, authority := <<"pp.test">>, unique_id := UniqueId,
      alpn := <<"http/1.1">>} = Proxy,
    #{client := [ssl | _], version := <<"TLSv1.", _/binary>>, cipher := Cipher,
      sig_alg := SigAlg, key_alg := KeyAlg} = Ssl,
    true = byte_size(Cipher) > 0 andalso byte_size(SigAlg) > 0 andalso byte_size(KeyAlg) > 0,
    false = maps:is_key(cn, Ssl).
