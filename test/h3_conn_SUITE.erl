%% falco serving HTTP/3: a TLS listener with `http3 => true' driven by the
%% raw client of the tests (falco_test_quic_client, checked first against
%% aioquic's server in quic_interop_SUITE): the handshake with each
%% cipher suite, bodies from empty to 200 KB over many packets, statuses
%% and fields through QPACK, connections in a row, the request's version
%% as a handler sees it, and the connection's process gone after its
%% client.
-module(h3_conn_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1]).
-export([handle/1]).
-export([get_each_suite/1, get_sizes/1, connections_in_a_row/1, not_found/1,
         version_seen/1, connection_ends/1, idle_timeout_negotiated/1,
         drain_finishes_request/1]).

all() ->
    [get_each_suite, get_sizes, connections_in_a_row, not_found, version_seen, connection_ends,
     idle_timeout_negotiated, drain_finishes_request].

init_per_suite(Config) ->
    {ok, _} = application:ensure_all_started(falco),
    {ok, _} = falco:start_listener(h3_conn, #{ip => {127, 0, 0, 1}, port => 0,
                                             transport => tls,
                                             tls_opts => falco_test_tls:server_opts(),
                                             http3 => true, h3_idle_timeout => 2000,
                                             handler => fun ?MODULE:handle/1}),
    {ok, Port} = falco:port(h3_conn),
    [{port, Port} | Config].

end_per_suite(_Config) ->
    ok = falco:stop_listener(h3_conn),
    ok.

handle(#{path := <<"/size/", N/binary>>}) ->
    Size = binary_to_integer(N),
    {200, [], binary:part(binary:copy(<<"0123456789">>, Size div 10 + 1), 0, Size)};
handle(#{path := <<"/version">>, version := {Major, Minor}}) ->
    {200, [], iolist_to_binary(io_lib:format("~b.~b", [Major, Minor]))};
handle(#{path := <<"/slow">>}) ->
    timer:sleep(500),
    {200, [], <<"slow done">>};
handle(#{path := <<"/echo-path">>, path := Path}) ->
    {200, [], Path};
handle(_) ->
    {404, [], <<"not found">>}.

get(Config, Path, Opts) ->
    falco_test_quic_client:get(?config(port, Config), Path, Opts).

%% RFC 9001 §5, RFC 8446: each of the three suites, ALPN h3.
get_each_suite(Config) ->
    [begin
         {ok, R} = get(Config, <<"/echo-path">>, #{suites => [Code]}),
         ?assertMatch(#{status := 200, body := <<"/echo-path">>, alpn := <<"h3">>,
                        suite := Suite}, R)
     end || {Code, Suite} <- [{16#1301, aes_128_gcm_sha256}, {16#1302, aes_256_gcm_sha384},
                              {16#1303, chacha20_poly1305_sha256}]].

%% Bodies over many packets, the STREAM frames in order.
get_sizes(Config) ->
    [begin
         {ok, #{status := 200, body := Body}} =
             get(Config, <<"/size/", (integer_to_binary(N))/binary>>, #{timeout => 10000}),
         ?assertEqual(N, byte_size(Body)),
         ?assertEqual(binary:part(binary:copy(<<"0123456789">>, N div 10 + 1), 0, N), Body)
     end || N <- [0, 1, 1199, 5000, 65536, 200000]].

connections_in_a_row(Config) ->
    [{ok, #{status := 200}} = get(Config, <<"/echo-path">>, #{}) || _ <- lists:seq(1, 10)].

not_found(Config) ->
    {ok, #{status := 404, headers := Fields, body := <<"not found">>}} =
        get(Config, <<"/nope">>, #{}),
    ?assertEqual(<<"9">>, proplists:get_value(<<"content-length">>, Fields)).

%% A handler sees {3, 0}.
version_seen(Config) ->
    ?assertMatch({ok, #{status := 200, body := <<"3.0">>}}, get(Config, <<"/version">>, #{})).

%% The test client leaves without closing: the connection ends at its
%% idle timeout (2 s here) and takes its routes with it.
connection_ends(Config) ->
    Before = length(quic_conns()),
    {ok, #{status := 200}} = get(Config, <<"/echo-path">>, #{}),
    ?assert(length(quic_conns()) >= 1),
    %% the SNI the client's ClientHello carries (falco_test_tls13's), and
    %% the ALPN
    States = [S || P <- quic_conns(), S <- [catch sys:get_state(P, 1000)], is_map(S)],
    ?assert(lists:any(fun(#{quic := #{server_name := N, alpn := A}}) ->
                              {N, A} =:= {<<"localhost">>, <<"h3">>};
                         (_) -> false
                      end, States)),
    timer:sleep(3500),
    ?assertEqual(0, length(quic_conns())),
    ct:pal("connections before ~b, after the idle timeout 0", [Before]).

%% RFC 9000 §10.1: the idle timeout is the smaller of both sides': a
%% client that asks for 500 ms gets its connection ended after about
%% that, not after the listener's 2 s.
idle_timeout_negotiated(Config) ->
    Before = quic_conns(),
    {ok, S} = falco_test_quic_client:connect(?config(port, Config),
                                             #{tparams => #{max_idle_timeout => 500}}),
    [Conn] = quic_conns() -- Before,
    Ref = monitor(process, Conn),
    T0 = erlang:monotonic_time(millisecond),
    Gone = receive {'DOWN', Ref, process, Conn, _} -> erlang:monotonic_time(millisecond) - T0
           after 1900 -> still_there
           end,
    falco_test_quic_client:close(S),
    ct:pal("the connection ended ~p ms after the handshake (client 500 ms, server 2000 ms)", [Gone]),
    ?assert(is_integer(Gone) andalso Gone >= 400 andalso Gone < 1500).

quic_conns() ->
    [P || P <- processes(),
          {dictionary, D} <- [erlang:process_info(P, dictionary)],
          {'$initial_call', {falco_http3_conn, init, 3}} <- [lists:keyfind('$initial_call', 1, D)]].

%% falco:drain/2 (RFC 9114 §5.2): a request in progress on an HTTP/3
%% connection finishes, the connection is counted and goes (GOAWAY, then
%% CONNECTION_CLOSE once its request is done), and the drain returns
%% before its deadline.
drain_finishes_request(_Config) ->
    {ok, _} = falco:start_listener(h3_drain, #{ip => {127, 0, 0, 1}, port => 0,
                                              transport => tls,
                                              tls_opts => falco_test_tls:server_opts(),
                                              http3 => true, handler => fun ?MODULE:handle/1}),
    {ok, Port} = falco:port(h3_drain),
    Self = self(),
    spawn_link(fun() -> Self ! {got, falco_test_quic_client:get(Port, <<"/slow">>, #{})} end),
    timer:sleep(200),
    T0 = erlang:monotonic_time(millisecond),
    {ok, Drained} = falco:drain(h3_drain, 5000),
    Took = erlang:monotonic_time(millisecond) - T0,
    ct:pal("drain: ~p in ~b ms", [Drained, Took]),
    receive {got, R} -> ?assertMatch({ok, #{status := 200, body := <<"slow done">>}}, R)
    after 5000 -> ct:fail(no_response)
    end,
    ?assertMatch(#{connections := 1, completed := 1, stopped := 0}, Drained),
    ?assert(Took < 5000),
    ?assertEqual({error, not_found}, falco:port(h3_drain)).
