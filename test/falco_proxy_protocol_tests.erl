%% EUnit for falco_proxy_protocol: the examples of haproxy's
%% proxy-protocol.txt (§2.1's lines, §2.2's families and protocols, the
%% TLVs of §2.2.1-2.2.7), each error class, and the same input fed whole,
%% byte by byte and in the exact reads `{more, N}' asks for.
-module(falco_proxy_protocol_tests).
-include_lib("eunit/include/eunit.hrl").

-export([v2/4, tlv/2]).

-define(SIG, "\r\n\r\n\0\r\nQUIT\n").
-define(MAX, 4096).

parse(Bin) -> falco_proxy_protocol:parse(Bin, ?MAX).

%% A version 2 header: version/command byte, family byte, address block,
%% TLVs (iodata).
v2(VerCmd, Fam, Addr, Tlvs) ->
    Body = iolist_to_binary([Addr, Tlvs]),
    <<?SIG, VerCmd, Fam, (byte_size(Body)):16, Body/binary>>.

tlv(Type, Value) ->
    <<Type, (byte_size(Value)):16, Value/binary>>.

ipv4_block() -> <<192, 168, 0, 1, 192, 168, 0, 11, 56324:16, 443:16>>.

ipv6_block() ->
    <<16#20010db8:32, 0:64, 1:32, 16#20010db8:32, 0:64, 2:32, 40000:16, 8443:16>>.

%% -- §2.1 version 1 -----------------------------------------------------------

v1_spec_example_test() ->
    %% §2.1: "PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n" before GET.
    Req = <<"GET / HTTP/1.1\r\nHost: 192.168.0.11\r\n\r\n">>,
    {ok, Info, Rest} = parse(<<"PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n", Req/binary>>),
    ?assertEqual(Req, Rest),
    ?assertEqual(#{version => 1, command => proxy, family => inet, transport => stream,
                   source => {{192, 168, 0, 1}, 56324},
                   destination => {{192, 168, 0, 11}, 443}}, Info).

v1_longest_lines_test() ->
    %% §2.1's maximum lengths: 56 (TCP4), 104 (TCP6), 15 and 107 (UNKNOWN).
    Tcp4 = <<"PROXY TCP4 255.255.255.255 255.255.255.255 65535 65535\r\n">>,
    ?assertEqual(56, byte_size(Tcp4)),
    {ok, #{source := {{255, 255, 255, 255}, 65535}}, <<>>} = parse(Tcp4),
    F = <<"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff">>,
    Tcp6 = <<"PROXY TCP6 ", F/binary, " ", F/binary, " 65535 65535\r\n">>,
    ?assertEqual(104, byte_size(Tcp6)),
    {ok, #{family := inet6, source := {{65535, 65535, 65535, 65535, 65535, 65535, 65535, 65535},
                                       65535}}, <<>>} = parse(Tcp6),
    Short = <<"PROXY UNKNOWN\r\n">>,
    ?assertEqual(15, byte_size(Short)),
    {ok, #{version := 1, command := proxy, family := unspec} = U, <<"x">>} =
        parse(<<Short/binary, "x">>),
    ?assertNot(maps:is_key(source, U)),
    Worst = <<"PROXY UNKNOWN ", F/binary, " ", F/binary, " 65535 65535\r\n">>,
    ?assertEqual(107, byte_size(Worst)),
    {ok, #{family := unspec}, <<>>} = parse(Worst).

v1_unknown_ignores_the_rest_test() ->
    %% §2.1: "the receiver must ignore anything presented before the CRLF".
    {ok, #{family := unspec}, <<"GET">>} = parse(<<"PROXY UNKNOWN whatever \r\nGET">>).

v1_addresses_test() ->
    {ok, #{source := {{0, 0, 0, 0}, 0}, destination := {{10, 0, 0, 1}, 80}}, <<>>} =
        parse(<<"PROXY TCP4 0.0.0.0 10.0.0.1 0 80\r\n">>),
    {ok, #{source := {{0, 0, 0, 0, 0, 0, 0, 1}, 1}}, <<>>} = parse(<<"PROXY TCP6 ::1 :: 1 2\r\n">>),
    {ok, #{source := {{16#2001, 16#db8, 0, 0, 0, 0, 0, 16#ab}, _}}, <<>>} =
        parse(<<"PROXY TCP6 2001:DB8::AB ::1 1 2\r\n">>),
    %% what inet_ntop writes for an IPv4-mapped address
    {ok, #{source := {{0, 0, 0, 0, 0, 16#ffff, 16#c000, 16#0201}, _}}, <<>>} =
        parse(<<"PROXY TCP6 ::ffff:192.0.2.1 ::1 1 2\r\n">>).

v1_errors_test_() ->
    Cases =
        [{no_header, <<"GET / HTTP/1.1\r\n\r\n">>},
         {no_header, <<"PROXY\r\n">>},
         {no_header, <<"PROPFIND / HTTP/1.1\r\n">>},
         {no_header, <<22, 3, 1, 0, 200>>},
         {line_too_long, <<"PROXY UNKNOWN ", (binary:copy(<<"a">>, 93))/binary>>},
         {line_too_long, <<"PROXY TCP4 ", (binary:copy(<<" ">>, 200))/binary, "\r\n">>},
         {bad_line_end, <<"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n">>},
         {bad_line_end, <<"PROXY UNKNOWN\n">>},
         {bad_protocol, <<"PROXY TCP5 1.2.3.4 5.6.7.8 1 2\r\n">>},
         {bad_protocol, <<"PROXY UDP4 1.2.3.4 5.6.7.8 1 2\r\n">>},
         {bad_protocol, <<"PROXY UNKNOWNX\r\n">>},
         {bad_protocol, <<"PROXY tcp4 1.2.3.4 5.6.7.8 1 2\r\n">>},
         {bad_protocol, <<"PROXY  TCP4 1.2.3.4 5.6.7.8 1 2\r\n">>},
         {bad_protocol, <<"PROXY TCP4\r\n">>},
         {bad_address, <<"PROXY TCP4 192.168.0.01 5.6.7.8 1 2\r\n">>},
         {bad_address, <<"PROXY TCP4 256.1.1.1 5.6.7.8 1 2\r\n">>},
         {bad_address, <<"PROXY TCP4 1.2.3 5.6.7.8 1 2\r\n">>},
         {bad_address, <<"PROXY TCP4 1.2.3.4.5 5.6.7.8 1 2\r\n">>},
         {bad_address, <<"PROXY TCP4 1.2.3.4 ::1 1 2\r\n">>},
         {bad_address, <<"PROXY TCP4 +1.2.3.4 5.6.7.8 1 2\r\n">>},
         {bad_address, <<"PROXY TCP6 1.2.3.4 ::1 1 2\r\n">>},
         {bad_address, <<"PROXY TCP6 fe80::1%eth0 ::1 1 2\r\n">>},
         {bad_address, <<"PROXY TCP6 1:2:3:4:5:6:7:8:9 ::1 1 2\r\n">>},
         {bad_address, <<"PROXY TCP6 1::2::3 ::1 1 2\r\n">>},
         {bad_address, <<"PROXY TCP6 12345:: ::1 1 2\r\n">>},
         {bad_port, <<"PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n">>},
         {bad_port, <<"PROXY TCP4 1.2.3.4 5.6.7.8 1 080\r\n">>},
         {bad_port, <<"PROXY TCP4 1.2.3.4 5.6.7.8 -1 2\r\n">>},
         {bad_port, <<"PROXY TCP4 1.2.3.4 5.6.7.8 1 2a\r\n">>},
         {bad_port, <<"PROXY TCP4 1.2.3.4 5.6.7.8 100000 2\r\n">>},
         {bad_syntax, <<"PROXY TCP4 1.2.3.4  5.6.7.8 1 2\r\n">>},
         {bad_syntax, <<"PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n">>},
         {bad_syntax, <<"PROXY TCP4 1.2.3.4 5.6.7.8 1 2 \r\n">>},
         {bad_syntax, <<"PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n">>},
         {bad_port, <<"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\r\n">>}],
    [{binary_to_list(B), ?_assertEqual({error, Why}, parse(B))} || {Why, B} <- Cases].

%% -- §2.2 version 2 ----------------------------------------------------------

v2_families_test() ->
    %% §2.2's protocol bytes: \x11 TCP/IPv4, \x12 UDP/IPv4, \x21 TCP/IPv6,
    %% \x22 UDP/IPv6, \x31 UNIX stream, \x32 UNIX datagram.
    {ok, #{version := 2, command := proxy, family := inet, transport := stream,
           source := {{192, 168, 0, 1}, 56324}, destination := {{192, 168, 0, 11}, 443}},
     <<"GET">>} = parse(<<(v2(16#21, 16#11, ipv4_block(), []))/binary, "GET">>),
    {ok, #{family := inet, transport := dgram}, <<>>} = parse(v2(16#21, 16#12, ipv4_block(), [])),
    {ok, #{family := inet6, transport := stream,
           source := {{16#2001, 16#db8, 0, 0, 0, 0, 0, 1}, 40000},
           destination := {{16#2001, 16#db8, 0, 0, 0, 0, 0, 2}, 8443}}, <<>>} =
        parse(v2(16#21, 16#21, ipv6_block(), [])),
    {ok, #{family := inet6, transport := dgram}, <<>>} = parse(v2(16#21, 16#22, ipv6_block(), [])),
    Path = fun(P) -> <<P/binary, 0:((108 - byte_size(P)) * 8)>> end,
    Unix = [Path(<<"/run/client.sock">>), Path(<<"/run/falco.sock">>)],
    {ok, #{family := unix, transport := stream, source := <<"/run/client.sock">>,
           destination := <<"/run/falco.sock">>}, <<>>} = parse(v2(16#21, 16#31, Unix, [])),
    {ok, #{family := unix, transport := dgram}, <<>>} = parse(v2(16#21, 16#32, Unix, [])).

v2_local_and_unspec_test() ->
    %% LOCAL: family and block ignored (§2.2), whatever they hold.
    {ok, #{command := local} = L, <<"x">>} = parse(<<(v2(16#20, 16#00, <<>>, []))/binary, "x">>),
    ?assertNot(maps:is_key(source, L)),
    {ok, #{command := local}, <<>>} = parse(v2(16#20, 16#11, ipv4_block(), [])),
    %% PROXY with UNSPEC: accepted, the addresses (if any) ignored.
    {ok, #{command := proxy, family := unspec} = U, <<>>} = parse(v2(16#21, 16#00, <<1, 2, 3>>, [])),
    ?assertNot(maps:is_key(source, U)),
    {ok, #{family := unspec}, <<>>} = parse(v2(16#21, 16#10, <<>>, [])).

v2_tlvs_test() ->
    Ssl = <<16#07, 0:32, (tlv(16#21, <<"TLSv1.3">>))/binary, (tlv(16#22, <<"client.example">>))/binary,
            (tlv(16#23, <<"TLS_AES_256_GCM_SHA384">>))/binary, (tlv(16#24, <<"RSA-SHA256">>))/binary,
            (tlv(16#25, <<"RSA2048">>))/binary, (tlv(16#2f, <<"sub">>))/binary>>,
    Tlvs = [tlv(16#01, <<"h2">>), tlv(16#02, <<"www.example.com">>), tlv(16#04, <<0, 0, 0>>),
            tlv(16#05, <<"unique-1">>), tlv(16#20, Ssl), tlv(16#30, <<"blue">>),
            tlv(16#e0, <<"custom">>), tlv(16#f1, <<>>)],
    {ok, Info, <<>>} = parse(v2(16#21, 16#11, ipv4_block(), Tlvs)),
    ?assertMatch(#{alpn := <<"h2">>, authority := <<"www.example.com">>, unique_id := <<"unique-1">>,
                   netns := <<"blue">>, tlvs := [{16#e0, <<"custom">>}, {16#f1, <<>>}]}, Info),
    ?assertEqual(#{client => [ssl, cert_conn, cert_sess], verify => 0,
                   version => <<"TLSv1.3">>, cn => <<"client.example">>,
                   cipher => <<"TLS_AES_256_GCM_SHA384">>, sig_alg => <<"RSA-SHA256">>,
                   key_alg => <<"RSA2048">>, tlvs => [{16#2f, <<"sub">>}]}, maps:get(ssl, Info)),
    %% an SSL TLV with the client on plain TCP: no flags; verify non-zero
    {ok, #{ssl := #{client := [], verify := 1}}, <<>>} =
        parse(v2(16#21, 16#11, ipv4_block(), [tlv(16#20, <<0, 1:32>>)])).

crc32c_test() ->
    %% RFC 3720 B.4 / the usual check value of CRC-32C.
    ?assertEqual(16#E3069283, falco_proxy_protocol:crc32c(<<"123456789">>)),
    ?assertEqual(16#8A9136AA, falco_proxy_protocol:crc32c(binary:copy(<<0>>, 32))).

v2_crc32c_test() ->
    Good = with_crc(v2(16#21, 16#11, ipv4_block(), [tlv(16#01, <<"h2">>), tlv(16#03, <<0:32>>)])),
    {ok, Info, <<"GET">>} = parse(<<Good/binary, "GET">>),
    ?assertEqual(<<"h2">>, maps:get(alpn, Info)),
    ?assertNot(maps:is_key(tlvs, Info)),
    %% one bit of the address changed: the checksum no longer matches
    <<A:20/binary, B, C/binary>> = Good,
    ?assertEqual({error, bad_crc32c}, parse(<<A/binary, (B bxor 1), C/binary>>)),
    %% a CRC32C value that is not 4 bytes
    ?assertEqual({error, bad_crc32c}, parse(v2(16#21, 16#11, ipv4_block(), [tlv(16#03, <<1, 2>>)]))).

%% Fills in the CRC32C of a header whose last TLV is a zeroed CRC32C.
with_crc(Header) ->
    Sum = falco_proxy_protocol:crc32c(Header),
    Len = byte_size(Header) - 4,
    <<Start:Len/binary, _:32>> = Header,
    <<Start/binary, Sum:32>>.

v2_errors_test_() ->
    Big = binary:copy(<<"x">>, ?MAX),
    Cases =
        [{bad_version, <<?SIG, 16#11, 16#11, 12:16, (ipv4_block())/binary>>},
         {bad_version, <<?SIG, 16#31, 16#11, 12:16, (ipv4_block())/binary>>},
         {bad_command, <<?SIG, 16#22, 16#11, 12:16, (ipv4_block())/binary>>},
         {bad_command, <<?SIG, 16#2f, 16#11, 0:16>>},
         {bad_family, <<?SIG, 16#21, 16#41, 0:16>>},
         {bad_family, <<?SIG, 16#21, 16#13, 0:16>>},
         {too_large, <<?SIG, 16#21, 16#11, (?MAX - 15):16>>},
         {too_large, v2(16#21, 16#11, ipv4_block(), [tlv(16#e0, Big)])},
         {address_too_short, v2(16#21, 16#11, <<1, 2, 3, 4, 5, 6, 7, 8>>, [])},
         {address_too_short, v2(16#21, 16#21, ipv4_block(), [])},
         {address_too_short, v2(16#21, 16#31, <<0:(200 * 8)>>, [])},
         {tlv_overrun, v2(16#21, 16#11, ipv4_block(), [<<16#01, 10:16, "h2">>])},
         {tlv_overrun, v2(16#21, 16#11, ipv4_block(), [<<16#01, 0>>])},
         {tlv_overrun, v2(16#21, 16#11, ipv4_block(), [tlv(16#01, <<"h2">>), <<16#04>>])},
         {bad_tlv, v2(16#21, 16#11, ipv4_block(), [tlv(16#20, <<1, 0, 0>>)])},
         {bad_tlv, v2(16#21, 16#11, ipv4_block(), [tlv(16#20, <<1, 0:32, 16#21, 9:16, "v">>)])},
         {bad_tlv, v2(16#21, 16#11, ipv4_block(),
                      [tlv(16#20, <<1, 0:32, (tlv(16#22, <<"a">>))/binary, (tlv(16#22, <<"b">>))/binary>>)])},
         {bad_tlv, v2(16#21, 16#11, ipv4_block(), [tlv(16#05, binary:copy(<<"u">>, 129))])},
         {duplicate_tlv, v2(16#21, 16#11, ipv4_block(), [tlv(16#01, <<"h2">>), tlv(16#01, <<"h2">>)])},
         {duplicate_tlv, with_crc(v2(16#21, 16#11, ipv4_block(),
                                     [tlv(16#03, <<0:32>>), tlv(16#03, <<0:32>>)]))}],
    [{atom_to_list(Why), ?_assertEqual({error, Why}, parse(B))} || {Why, B} <- Cases].

unique_id_of_128_bytes_test() ->
    Id = binary:copy(<<"u">>, 128),
    {ok, #{unique_id := Id}, <<>>} = parse(v2(16#21, 16#11, ipv4_block(), [tlv(16#05, Id)])).

%% -- whole, byte by byte, exact reads ----------------------------------------

valid_headers() ->
    F = <<"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff">>,
    [<<"PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n">>,
     <<"PROXY TCP6 ", F/binary, " ", F/binary, " 65535 65535\r\n">>,
     <<"PROXY TCP6 :: :: 0 0\r\n">>,
     <<"PROXY TCP4 0.0.0.0 0.0.0.0 0 0\r\n">>,
     <<"PROXY UNKNOWN\r\n">>,
     <<"PROXY UNKNOWN ", F/binary, " ", F/binary, " 65535 65535\r\n">>,
     v2(16#20, 16#00, <<>>, []),
     v2(16#21, 16#11, ipv4_block(), [tlv(16#01, <<"h2">>)]),
     v2(16#21, 16#21, ipv6_block(), [tlv(16#02, <<"example.com">>), tlv(16#20, <<1, 0:32>>)]),
     with_crc(v2(16#21, 16#11, ipv4_block(), [tlv(16#03, <<0:32>>)]))].

byte_at_a_time_test_() ->
    [?_test(byte_at_a_time(H)) || H <- valid_headers()].

byte_at_a_time(Header) ->
    Whole = parse(<<Header/binary, "GET / HTTP/1.1\r\n">>),
    {ok, Info, <<"GET / HTTP/1.1\r\n">>} = Whole,
    %% every proper prefix asks for more, and never for more than is left
    lists:foreach(fun(K) ->
                          {more, N} = parse(binary:part(Header, 0, K)),
                          ?assert(N >= 1 andalso K + N =< byte_size(Header))
                  end, lists:seq(0, byte_size(Header) - 1)),
    ?assertEqual({ok, Info, <<>>}, parse(Header)),
    %% reading exactly what {more, N} asks ends on the header's last byte
    ?assertEqual({ok, Info, <<>>}, exact_reads(Header, <<>>)).

exact_reads(Stream, Buf) ->
    case parse(Buf) of
        {more, N} ->
            <<Read:N/binary, Left/binary>> = Stream,
            exact_reads(Left, <<Buf/binary, Read/binary>>);
        Done ->
            Done
    end.

error_prefixes_test() ->
    %% an error is the same fed whole or in pieces: every prefix is `more'
    %% or that error
    Bad = [<<"PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n">>, <<"PROXY TCP4 1.2.3.4\n">>,
           <<?SIG, 16#22, 16#11, 12:16>>, v2(16#21, 16#11, ipv4_block(), [<<16#01, 10:16>>])],
    lists:foreach(fun(B) ->
                          {error, _} = Whole = parse(B),
                          [?assert(element(1, parse(binary:part(B, 0, K))) =:= more
                                   orelse parse(binary:part(B, 0, K)) =:= Whole)
                           || K <- lists:seq(0, byte_size(B))]
                  end, Bad).

max_size_is_the_callers_test() ->
    H = v2(16#21, 16#11, ipv4_block(), [tlv(16#e0, binary:copy(<<"x">>, 100))]),
    ?assertEqual({error, too_large}, falco_proxy_protocol:parse(H, byte_size(H) - 1)),
    ?assertMatch({ok, _, <<>>}, falco_proxy_protocol:parse(H, byte_size(H))),
    %% version 1 keeps its own 107 bytes whatever the cap
    ?assertMatch({ok, _, <<>>}, falco_proxy_protocol:parse(<<"PROXY UNKNOWN\r\n">>, 107)).
