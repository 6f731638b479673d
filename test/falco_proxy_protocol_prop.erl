%% PropEr properties for falco_proxy_protocol: what a test encoder writes
%% (version 1 lines, version 2 headers with TLVs and maybe a CRC32C) parses
%% back to the same information, with what follows left alone; arbitrary,
%% mutated and cut input never makes the parser raise, always gives one of
%% its documented results, and a prefix of any input either asks for more
%% (never for more than the header has left) or gives the same answer as
%% the whole. Run from EUnit, 500 cases each (the fuzz property 1000;
%% `make fuzz' runs it 100,000 times, see falco_fuzz_prop).
-module(falco_proxy_protocol_prop).
-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-export([prop_round_trip/0, prop_fuzz/0, prop_prefixes/0]).

-define(NUMTESTS, 500).
-define(SIG, "\r\n\r\n\0\r\nQUIT\n").
-define(MAX, 4096).

properties_test_() ->
    [{atom_to_list(P),
      {timeout, 120,
       ?_assert(proper:quickcheck(?MODULE:P(), [{numtests, falco_fuzz_prop:numtests(?MODULE, P, ?NUMTESTS)},
                                                {to_file, user}]))}}
     || P <- [prop_round_trip, prop_fuzz, prop_prefixes]].

%% -- the encoder ---------------------------------------------------------------

encode(#{version := 1, family := unspec}) ->
    <<"PROXY UNKNOWN\r\n">>;
encode(#{version := 1, family := F, source := {S, SP}, destination := {D, DP}}) ->
    iolist_to_binary(["PROXY ", case F of inet -> "TCP4"; inet6 -> "TCP6" end, " ",
                      inet:ntoa(S), " ", inet:ntoa(D), " ", integer_to_list(SP), " ",
                      integer_to_list(DP), "\r\n"]);
encode(Info = #{version := 2}) ->
    encode_v2(Info, maps:get(crc, Info, false)).

encode_v2(Info = #{command := Cmd, family := F, transport := T}, Crc) ->
    VerCmd = 16#20 bor (case Cmd of local -> 0; proxy -> 1 end),
    Fam = (index(F, [unspec, inet, inet6, unix]) bsl 4) bor index(T, [unspec, stream, dgram]),
    Addr = case Info of
               #{source := {S, SP}, destination := {D, DP}} ->
                   [ip(S), ip(D), <<SP:16, DP:16>>];
               #{source := S, destination := D} ->
                   [pad(S), pad(D)];
               _ ->
                   []
           end,
    Tlvs = [tlv(16#01, V) || #{alpn := V} <- [Info]]
        ++ [tlv(16#02, V) || #{authority := V} <- [Info]]
        ++ [tlv(16#04, <<0, 0, 0>>)]
        ++ [tlv(16#05, V) || #{unique_id := V} <- [Info]]
        ++ [tlv(16#20, ssl(V)) || #{ssl := V} <- [Info]]
        ++ [tlv(16#30, V) || #{netns := V} <- [Info]]
        ++ [tlv(Ty, V) || #{tlvs := L} <- [Info], {Ty, V} <- L],
    Body = iolist_to_binary([Addr, Tlvs, [tlv(16#03, <<0:32>>) || Crc]]),
    Header = <<?SIG, VerCmd, Fam, (byte_size(Body)):16, Body/binary>>,
    case Crc of
        true ->
            Len = byte_size(Header) - 4,
            <<Start:Len/binary, _:32>> = Header,
            <<Start/binary, (falco_proxy_protocol:crc32c(Header)):32>>;
        false ->
            Header
    end.

index(X, L) -> length(lists:takewhile(fun(Y) -> Y =/= X end, L)).

ip({A, B, C, D}) -> <<A, B, C, D>>;
ip(T) -> << <<X:16>> || X <- tuple_to_list(T) >>.

pad(P) -> <<P/binary, 0:((108 - byte_size(P)) * 8)>>.

tlv(Type, V) -> <<Type, (byte_size(V)):16, V/binary>>.

ssl(S = #{client := Flags, verify := Verify}) ->
    Client = lists:sum([Bit || {Bit, F} <- [{1, ssl}, {2, cert_conn}, {4, cert_sess}],
                               lists:member(F, Flags)]),
    Subs = [tlv(Ty, maps:get(K, S)) || {Ty, K} <- [{16#21, version}, {16#22, cn}, {16#23, cipher},
                                                   {16#24, sig_alg}, {16#25, key_alg}],
                                       maps:is_key(K, S)],
    iolist_to_binary([Client, <<Verify:32>>, Subs]).

%% -- generators ----------------------------------------------------------------

%% Small numbers too: the shortest lines test the `{more, N}' bounds.
ipv4() -> oneof([{byte(), byte(), byte(), byte()}, {digit(), digit(), digit(), digit()}]).
ipv6() -> oneof([{word(), word(), word(), word(), word(), word(), word(), word()},
                 {0, 0, 0, 0, 0, 0, 0, digit()}]).
word() -> range(0, 65535).
port() -> oneof([range(0, 65535), digit()]).
digit() -> range(0, 9).
text() -> ?LET(B, binary(), binary:part(B, 0, min(byte_size(B), 40))).
path() -> ?LET(Cs, list(range(1, 255)), list_to_binary(lists:sublist(Cs, 107))).

info() ->
    oneof([v1_info(), v2_info()]).

v1_info() ->
    oneof([#{version => 1, command => proxy, family => unspec, transport => unspec},
           ?LET({S, D, SP, DP}, {ipv4(), ipv4(), port(), port()},
                #{version => 1, command => proxy, family => inet, transport => stream,
                  source => {S, SP}, destination => {D, DP}}),
           ?LET({S, D, SP, DP}, {ipv6(), ipv6(), port(), port()},
                #{version => 1, command => proxy, family => inet6, transport => stream,
                  source => {S, SP}, destination => {D, DP}})]).

v2_info() ->
    ?LET({Base, Tlvs, Crc}, {v2_base(), tlvs(), boolean()},
         (maps:merge(Base, Tlvs))#{crc => Crc}).

v2_base() ->
    oneof([#{version => 2, command => local, family => unspec, transport => unspec},
           #{version => 2, command => proxy, family => unspec, transport => unspec},
           ?LET({T, S, D, SP, DP}, {elements([stream, dgram]), ipv4(), ipv4(), port(), port()},
                #{version => 2, command => proxy, family => inet, transport => T,
                  source => {S, SP}, destination => {D, DP}}),
           ?LET({T, S, D, SP, DP}, {elements([stream, dgram]), ipv6(), ipv6(), port(), port()},
                #{version => 2, command => proxy, family => inet6, transport => T,
                  source => {S, SP}, destination => {D, DP}}),
           ?LET({T, S, D}, {elements([stream, dgram]), path(), path()},
                #{version => 2, command => proxy, family => unix, transport => T,
                  source => S, destination => D})]).

tlvs() ->
    ?LET(L, list(oneof([{alpn, text()}, {authority, text()}, {unique_id, text()},
                        {netns, text()}, {ssl, ssl_info()},
                        {tlvs, list({elements([16#e0, 16#ef, 16#f0, 16#ff, 16#06]), text()})}])),
         maps:from_list([KV || KV = {K, V} <- L, K =/= tlvs orelse V =/= []])).

ssl_info() ->
    ?LET({Flags, Verify, Subs},
         {list(elements([ssl, cert_conn, cert_sess])), oneof([0, range(0, 16#ffffffff)]),
          list({elements([version, cn, cipher, sig_alg, key_alg]), text()})},
         maps:merge(maps:from_list(Subs),
                    #{client => [F || F <- [ssl, cert_conn, cert_sess], lists:member(F, Flags)],
                      verify => Verify})).

%% What the parser gives back for an Info: LOCAL and UNSPEC carry nothing
%% but the command, and TLVs are read only with an address block.
expected(#{version := 2, command := local}) ->
    #{version => 2, command => local, family => unspec, transport => unspec};
expected(#{version := 2, family := unspec}) ->
    #{version => 2, command => proxy, family => unspec, transport => unspec};
expected(Info) ->
    maps:remove(crc, Info).

%% -- properties ------------------------------------------------------------------

prop_round_trip() ->
    ?FORALL({Info, Rest}, {info(), binary()},
            falco_fuzz_prop:safe(
              fun() ->
                      Header = encode(Info),
                      {ok, expected(Info), Rest} =:= falco_proxy_protocol:parse(<<Header/binary, Rest/binary>>, 65551)
                          andalso exact_reads(Header) =:= {ok, expected(Info), <<>>}
              end)).

exact_reads(Header) ->
    exact_reads(Header, <<>>).

exact_reads(Stream, Buf) ->
    case falco_proxy_protocol:parse(Buf, 65551) of
        {more, N} when N =< byte_size(Stream) ->
            <<Read:N/binary, Left/binary>> = Stream,
            exact_reads(Left, <<Buf/binary, Read/binary>>);
        Other ->
            Other
    end.

%% Valid headers (with something after them) mutated, or arbitrary bytes.
input() ->
    falco_fuzz_prop:input(?LET({I, R}, {info(), binary()}, <<(encode(I))/binary, R/binary>>),
                          ?LET(Parts, list(oneof([binary(),
                                                  elements([<<"PROXY ">>, <<"TCP4 ">>, <<"TCP6 ">>,
                                                            <<"UNKNOWN">>, <<"\r\n">>, <<" ">>,
                                                            <<?SIG>>, <<16#21, 16#11>>,
                                                            <<"255.255.255.255">>, <<"::">>,
                                                            <<"65535">>])])),
                               iolist_to_binary(Parts))).

prop_fuzz() ->
    ?FORALL(Bin, input(),
            falco_fuzz_prop:safe(fun() -> valid_result(falco_proxy_protocol:parse(Bin, ?MAX), Bin) end)).

valid_result({ok, Info, Rest}, Bin) ->
    is_map(Info) andalso is_binary(Rest) andalso byte_size(Rest) < byte_size(Bin);
valid_result({more, N}, _) ->
    is_integer(N) andalso N >= 1;
valid_result({error, Reason}, _) ->
    is_atom(Reason);
valid_result(_, _) ->
    false.

%% A prefix: `more' (and the header, if the whole is one, has at least N
%% bytes left), or the whole's answer (an error; or the header with less
%% after it).
prop_prefixes() ->
    ?FORALL({Bin, Cut}, {input(), nat()},
            falco_fuzz_prop:safe(
              fun() ->
                      K = Cut rem (byte_size(Bin) + 1),
                      Whole = falco_proxy_protocol:parse(Bin, ?MAX),
                      case {falco_proxy_protocol:parse(binary:part(Bin, 0, K), ?MAX), Whole} of
                          {{more, N}, {ok, _, Rest}} -> K + N =< byte_size(Bin) - byte_size(Rest);
                          {{more, _}, _} -> true;
                          {{ok, I, R}, {ok, I, Rest}} -> binary:longest_common_prefix([R, Rest])
                                                             =:= byte_size(R);
                          {Same, Same} -> true;
                          _ -> false
                      end
              end)).
