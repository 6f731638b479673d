%% @doc The PROXY protocol header, versions 1 and 2 (haproxy's
%% "proxy-protocol.txt"): a pure parser. A load balancer that relays a
%% connection sends this header first, so the server learns the original
%% client's address (and, in version 2, TLVs about the client's TLS
%% session, its SNI, a unique id...).
%%
%% {@link parse/2} takes the bytes read so far and returns `{ok, Info,
%% Rest}' (`Rest' is what follows the header: TLS or HTTP),
%% `{more, N}' or `{error, Reason}'. `N' is a number of bytes the header
%% certainly still has, so a caller that must not read past the header
%% (over TLS the bytes after it belong to ssl) can `recv' exactly `N' and
%% never take a byte of what follows. `{error, no_header}' says the bytes
%% are not a PROXY header at all (decided at the first byte that differs
%% from both signatures), which a listener that takes the header as
%% optional treats as "no header".
%%
%% Version 1 (§2.1) is one US-ASCII line of at most 107 bytes, CRLF
%% included: `PROXY TCP4|TCP6 Src Dst SrcPort DstPort\r\n', exactly one
%% space between fields, IPv4 as four decimal numbers without leading
%% zeroes, IPv6 in its text form, ports 0..65535 without leading zeroes;
%% `PROXY UNKNOWN' followed by anything up to the CRLF, which is ignored.
%% Version 2 (§2.2) is binary: the 12-byte signature, version 2 and the
%% command (LOCAL or PROXY), family and transport, a length, the
%% addresses, then TLVs (§2.2.1-2.2.7). A CRC32C TLV is verified
%% (§2.2.3); a TLV that overruns the header is an error; TLVs of other
%% types are kept, in order, under `tlvs'. A LOCAL header (a health check
%% from the proxy itself) and an UNSPEC family carry no address the
%% receiver may use: their address block is skipped.
%%
%% `MaxSize' bounds a version 2 header (the format allows 16 + 65535
%% bytes): a longer one is `{error, too_large}' as soon as its length is
%% known.
%%
%% @private internal to falco
-module(falco_proxy_protocol).

-export([parse/2, crc32c/1]).

-define(V2_SIG, "\r\n\r\n\0\r\nQUIT\n").
-define(V1_MAX, 107).
%% The shortest complete headers: "PROXY UNKNOWN\r\n" and a version 2
%% header with no address (§2.1, §2.2).
-define(V1_MIN, 15).
-define(V2_MIN, 16).

-type address() :: {inet:ip_address(), inet:port_number()} | binary().
-type ssl_info() :: #{client := [ssl | cert_conn | cert_sess],
                      verify := non_neg_integer(),
                      version => binary(), cn => binary(), cipher => binary(),
                      sig_alg => binary(), key_alg => binary(),
                      tlvs => [{byte(), binary()}]}.
-type info() :: #{version := 1 | 2,
                  command := proxy | local,
                  family := inet | inet6 | unix | unspec,
                  transport := stream | dgram | unspec,
                  source => address(),
                  destination => address(),
                  alpn => binary(),
                  authority => binary(),
                  unique_id => binary(),
                  netns => binary(),
                  ssl => ssl_info(),
                  tlvs => [{byte(), binary()}]}.
-type reason() :: no_header | too_large | line_too_long | bad_line_end | bad_protocol
                | bad_address | bad_port | bad_syntax | bad_version | bad_command
                | bad_family | address_too_short | tlv_overrun | bad_crc32c | bad_tlv
                | duplicate_tlv.
-export_type([info/0, ssl_info/0, address/0, reason/0]).

%% @doc Parses the header at the start of `Buf'; `MaxSize' is the largest
%% version 2 header accepted (version 1 has its own bound, 107 bytes).
-spec parse(binary(), pos_integer()) ->
          {ok, info(), binary()} | {more, pos_integer()} | {error, reason()}.
parse(<<?V2_SIG, _/binary>> = Buf, MaxSize) ->
    v2(Buf, MaxSize);
parse(<<"PROXY ", _/binary>> = Buf, _) ->
    v1(Buf);
parse(Buf, _) ->
    case {prefix_of(Buf, <<?V2_SIG>>), prefix_of(Buf, <<"PROXY ">>)} of
        {true, true} -> {more, ?V1_MIN};
        {true, _} -> {more, ?V2_MIN - byte_size(Buf)};
        {_, true} -> {more, ?V1_MIN - byte_size(Buf)};
        _ -> {error, no_header}
    end.

%% Whether Buf is the start of Sig (both signatures are longer than Buf
%% here: the clauses above took the complete ones).
prefix_of(Buf, Sig) ->
    binary:longest_common_prefix([Buf, Sig]) =:= byte_size(Buf)
        andalso byte_size(Buf) < byte_size(Sig).

%% -- version 1 -------------------------------------------------------------

v1(Buf) ->
    Scope = binary:part(Buf, 0, min(byte_size(Buf), ?V1_MAX)),
    case binary:match(Scope, <<"\n">>) of
        {Lf, 1} when Lf > 0 ->
            case binary:at(Scope, Lf - 1) of
                $\r ->
                    <<Line:(Lf - 1)/binary, "\r\n", Rest/binary>> = Buf,
                    case v1_line(Line) of
                        {ok, Info} -> {ok, Info, Rest};
                        Error -> Error
                    end;
                _ ->
                    {error, bad_line_end}
            end;
        nomatch when byte_size(Buf) >= ?V1_MAX ->
            {error, line_too_long};
        nomatch ->
            {more, max(v1_min(Buf) - byte_size(Buf), v1_crlf(Buf))}
    end.

%% The shortest complete line Buf can still become (§2.1): the family
%% decides; "PROXY TCP6 :: :: 0 0\r\n" is 22 bytes,
%% "PROXY TCP4 0.0.0.0 0.0.0.0 0 0\r\n" 32.
v1_min(<<"PROXY TCP4", _/binary>>) -> 32;
v1_min(<<"PROXY T", _/binary>>) -> 22;
v1_min(_) -> ?V1_MIN.

%% Without its LF a line still needs CRLF, or just LF after a CR.
v1_crlf(Buf) ->
    case binary:last(Buf) of
        $\r -> 1;
        _ -> 2
    end.

v1_line(<<"PROXY UNKNOWN">>) ->
    {ok, v1_unknown()};
v1_line(<<"PROXY UNKNOWN ", _/binary>>) ->
    %% §2.1: the receiver must ignore anything before the CRLF.
    {ok, v1_unknown()};
v1_line(<<"PROXY TCP4 ", Fields/binary>>) ->
    v1_fields(inet, Fields);
v1_line(<<"PROXY TCP6 ", Fields/binary>>) ->
    v1_fields(inet6, Fields);
v1_line(_) ->
    {error, bad_protocol}.

v1_unknown() ->
    #{version => 1, command => proxy, family => unspec, transport => unspec}.

v1_fields(Family, Fields) ->
    case binary:split(Fields, <<" ">>, [global]) of
        [Src, Dst, SrcPort, DstPort] ->
            case {v1_address(Family, Src), v1_address(Family, Dst),
                  v1_port(SrcPort), v1_port(DstPort)} of
                {{ok, S}, {ok, D}, {ok, SP}, {ok, DP}} ->
                    {ok, #{version => 1, command => proxy, family => Family,
                           transport => stream, source => {S, SP}, destination => {D, DP}}};
                {{ok, _}, {ok, _}, _, _} ->
                    {error, bad_port};
                _ ->
                    {error, bad_address}
            end;
        _ ->
            {error, bad_syntax}
    end.

%% IPv4: exactly four decimal numbers 0..255, no leading zeroes (§2.1).
v1_address(inet, Text) ->
    case binary:split(Text, <<".">>, [global]) of
        [_, _, _, _] = Parts ->
            case [N || P <- Parts, {ok, N} <- [decimal(P, 255)]] of
                [A, B, C, D] -> {ok, {A, B, C, D}};
                _ -> error
            end;
        _ ->
            error
    end;
%% IPv6: groups of hex digits with at most one "::" (§2.1); OTP's strict
%% parser also takes the dotted tail a sender's inet_ntop writes for an
%% IPv4-mapped address. Zone ids ("%eth0") are not addresses here.
v1_address(inet6, Text) ->
    Hex = fun(C) -> (C >= $0 andalso C =< $9) orelse (C >= $a andalso C =< $f)
                        orelse (C >= $A andalso C =< $F) orelse C =:= $: orelse C =:= $.
          end,
    case byte_size(Text) =< 45 andalso lists:all(Hex, binary_to_list(Text)) of
        true ->
            case inet:parse_ipv6strict_address(binary_to_list(Text)) of
                {ok, Ip} -> {ok, Ip};
                {error, _} -> error
            end;
        false ->
            error
    end.

v1_port(Text) ->
    decimal(Text, 65535).

%% A decimal number of at most Max without leading zeroes ("0" itself is
%% fine).
decimal(<<"0">>, _) ->
    {ok, 0};
decimal(<<D, _/binary>> = Text, Max) when D >= $1, D =< $9, byte_size(Text) =< 5 ->
    case lists:all(fun(C) -> C >= $0 andalso C =< $9 end, binary_to_list(Text)) of
        true ->
            case binary_to_integer(Text) of
                N when N =< Max -> {ok, N};
                _ -> error
            end;
        false ->
            error
    end;
decimal(_, _) ->
    error.

%% -- version 2 -------------------------------------------------------------

v2(<<_:12/binary, Ver:4, _:4, _/binary>>, _) when Ver =/= 2 ->
    {error, bad_version};
v2(<<_:12/binary, _:4, Cmd:4, _/binary>>, _) when Cmd > 1 ->
    {error, bad_command};
v2(<<_:12/binary, _:8, Fam:4, Proto:4, _/binary>>, _) when Fam > 3; Proto > 2 ->
    {error, bad_family};
v2(<<_:14/binary, Len:16, _/binary>>, MaxSize) when ?V2_MIN + Len > MaxSize ->
    {error, too_large};
v2(<<_:14/binary, Len:16, Block:Len/binary, Rest/binary>> = Buf, _) ->
    <<Header:(?V2_MIN + Len)/binary, _/binary>> = Buf,
    <<_:12/binary, _:4, Cmd:4, Fam:4, Proto:4, _/binary>> = Buf,
    case v2_block(Cmd, Fam, Proto, Block, Header) of
        {ok, Info} -> {ok, Info, Rest};
        Error -> Error
    end;
v2(<<_:14/binary, Len:16, _/binary>> = Buf, _) ->
    {more, ?V2_MIN + Len - byte_size(Buf)};
v2(Buf, _) ->
    {more, ?V2_MIN - byte_size(Buf)}.

%% LOCAL (0): the proxy's own connection; family and block are ignored
%% (§2.2: "discard the protocol block including the family").
v2_block(0, _, _, _, _) ->
    {ok, #{version => 2, command => local, family => unspec, transport => unspec}};
v2_block(1, Fam, Proto, Block, Header) ->
    Family = element(Fam + 1, {unspec, inet, inet6, unix}),
    Transport = element(Proto + 1, {unspec, stream, dgram}),
    Base = #{version => 2, command => proxy, family => Family, transport => Transport},
    case Family =:= unspec orelse Transport =:= unspec of
        %% UNSPEC: the receiver should ignore the address information
        %% (§2.2); nothing in the block is known to be TLVs either.
        true -> {ok, Base#{family => unspec, transport => unspec}};
        false -> v2_addresses(Family, Block, Base, Header)
    end.

v2_addresses(inet, <<S:4/binary, D:4/binary, SP:16, DP:16, Tlvs/binary>>, Info, Header) ->
    v2_tlvs(Tlvs, Info#{source => {ip(S), SP}, destination => {ip(D), DP}}, Header);
v2_addresses(inet6, <<S:16/binary, D:16/binary, SP:16, DP:16, Tlvs/binary>>, Info, Header) ->
    v2_tlvs(Tlvs, Info#{source => {ip(S), SP}, destination => {ip(D), DP}}, Header);
v2_addresses(unix, <<S:108/binary, D:108/binary, Tlvs/binary>>, Info, Header) ->
    v2_tlvs(Tlvs, Info#{source => path(S), destination => path(D)}, Header);
v2_addresses(_, _, _, _) ->
    {error, address_too_short}.

ip(<<A, B, C, D>>) -> {A, B, C, D};
ip(<<A:16, B:16, C:16, D:16, E:16, F:16, G:16, H:16>>) -> {A, B, C, D, E, F, G, H}.

%% A sun_path: the bytes before the first NUL.
path(Bin) ->
    hd(binary:split(Bin, <<0>>)).

v2_tlvs(Bin, Info, Header) ->
    case tlvs(Bin, []) of
        {ok, List} -> v2_known(List, byte_size(Header) - byte_size(Bin), Info, Header, []);
        error -> {error, tlv_overrun}
    end.

%% Type-length-value vectors filling Bin exactly (§2.2).
tlvs(<<>>, Acc) ->
    {ok, lists:reverse(Acc)};
tlvs(<<Type, Len:16, Value:Len/binary, Rest/binary>>, Acc) ->
    tlvs(Rest, [{Type, Value} | Acc]);
tlvs(_, _) ->
    error.

-define(PP2_TYPE_ALPN, 16#01).
-define(PP2_TYPE_AUTHORITY, 16#02).
-define(PP2_TYPE_CRC32C, 16#03).
-define(PP2_TYPE_NOOP, 16#04).
-define(PP2_TYPE_UNIQUE_ID, 16#05).
-define(PP2_TYPE_SSL, 16#20).
-define(PP2_TYPE_NETNS, 16#30).

%% Offset: where the current TLV starts in Header (the CRC32C check needs
%% the position of its value).
v2_known([], _, Info, _, []) ->
    {ok, Info};
v2_known([], _, Info, _, Unknown) ->
    {ok, Info#{tlvs => lists:reverse(Unknown)}};
v2_known([{Type, Value} | More], Offset, Info, Header, Unknown) ->
    Next = Offset + 3 + byte_size(Value),
    case tlv_key(Type) of
        noop ->
            v2_known(More, Next, Info, Header, Unknown);
        unknown ->
            v2_known(More, Next, Info, Header, [{Type, Value} | Unknown]);
        crc32c ->
            %% Checked, then dropped from the result; a second one is refused.
            case lists:keymember(?PP2_TYPE_CRC32C, 1, More) of
                true ->
                    {error, duplicate_tlv};
                false ->
                    case crc32c_ok(Value, Offset + 3, Header) of
                        true -> v2_known(More, Next, Info, Header, Unknown);
                        false -> {error, bad_crc32c}
                    end
            end;
        Key when is_map_key(Key, Info) ->
            {error, duplicate_tlv};
        Key ->
            case tlv_value(Key, Value) of
                {ok, V} -> v2_known(More, Next, Info#{Key => V}, Header, Unknown);
                error -> {error, bad_tlv}
            end
    end.

tlv_key(?PP2_TYPE_ALPN) -> alpn;
tlv_key(?PP2_TYPE_AUTHORITY) -> authority;
tlv_key(?PP2_TYPE_UNIQUE_ID) -> unique_id;
tlv_key(?PP2_TYPE_SSL) -> ssl;
tlv_key(?PP2_TYPE_NETNS) -> netns;
tlv_key(?PP2_TYPE_CRC32C) -> crc32c;
tlv_key(?PP2_TYPE_NOOP) -> noop;
tlv_key(_) -> unknown.

%% §2.2.5: up to 128 bytes.
tlv_value(unique_id, V) when byte_size(V) > 128 -> error;
tlv_value(ssl, V) -> ssl(V);
tlv_value(_, V) -> {ok, V}.

%% §2.2.6: client flags, the verify result (0: a client certificate was
%% presented and verified), then sub-TLVs. The verify result is given as
%% sent: haproxy (2.6) sends 0 also when the client presented no
%% certificate at all, so 0 means something only with `cert_conn' or
%% `cert_sess' among the client flags.
ssl(<<Client, Verify:32, Subs/binary>>) ->
    Flags = [F || {Bit, F} <- [{1, ssl}, {2, cert_conn}, {4, cert_sess}], Client band Bit =/= 0],
    case tlvs(Subs, []) of
        {ok, List} -> ssl_subs(List, #{client => Flags, verify => Verify}, []);
        error -> error
    end;
ssl(_) ->
    error.

ssl_subs([], Info, []) ->
    {ok, Info};
ssl_subs([], Info, Unknown) ->
    {ok, Info#{tlvs => lists:reverse(Unknown)}};
ssl_subs([{Type, Value} | More], Info, Unknown) ->
    case ssl_key(Type) of
        unknown -> ssl_subs(More, Info, [{Type, Value} | Unknown]);
        Key when is_map_key(Key, Info) -> error;
        Key -> ssl_subs(More, Info#{Key => Value}, Unknown)
    end.

ssl_key(16#21) -> version;
ssl_key(16#22) -> cn;
ssl_key(16#23) -> cipher;
ssl_key(16#24) -> sig_alg;
ssl_key(16#25) -> key_alg;
ssl_key(_) -> unknown.

%% §2.2.3: the CRC32C of the whole header with the checksum's own four
%% bytes (at Pos) as zeroes.
crc32c_ok(<<Sum:32>>, Pos, Header) ->
    <<Before:Pos/binary, _:4/binary, After/binary>> = Header,
    crc32c([Before, <<0:32>>, After]) =:= Sum;
crc32c_ok(_, _, _) ->
    false.

%% @doc CRC32C (Castagnoli, RFC 4960 Appendix B; reflected polynomial
%% 16#82F63B78) of some bytes.
-spec crc32c(iodata()) -> non_neg_integer().
crc32c(Data) ->
    crc32c_bytes(iolist_to_binary(Data), 16#FFFFFFFF) bxor 16#FFFFFFFF.

crc32c_bytes(<<Byte, Rest/binary>>, Crc) ->
    crc32c_bytes(Rest, crc32c_bits(Crc bxor Byte, 8));
crc32c_bytes(<<>>, Crc) ->
    Crc.

crc32c_bits(Crc, 0) -> Crc;
crc32c_bits(Crc, N) when Crc band 1 =:= 1 -> crc32c_bits((Crc bsr 1) bxor 16#82F63B78, N - 1);
crc32c_bits(Crc, N) -> crc32c_bits(Crc bsr 1, N - 1).
