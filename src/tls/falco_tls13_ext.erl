%% @doc TLS 1.3 extensions (RFC 8446 §4.2) of a ClientHello, parsed, and
%% those a server sends, built: server_name (RFC 6066 §3),
%% supported_groups, signature_algorithms and signature_algorithms_cert,
%% ALPN (RFC 7301), record_size_limit (RFC 8449), pre_shared_key (parsed,
%% no resumption yet), early_data, supported_versions, cookie,
%% psk_key_exchange_modes, key_share and quic_transport_parameters (RFC
%% 9001 §8.2, kept opaque for falco's QUIC codec).
%%
%% An extension list parses into a map keyed by the extensions' names;
%% every length is checked and a body must be used up exactly (otherwise
%% decode_error); an extension twice is illegal_parameter (§4.2); unknown
%% ones, GREASE (RFC 8701) included, are skipped. The order of the types
%% is returned too: pre_shared_key must come last (§4.2.11). Pure: bad
%% input is `{error, Alert, Reason}', never an exception.
%%
%% @private internal to falco
-module(falco_tls13_ext).

-export([parse_list/1, supported_versions/0, key_share/2, selected_group/1, alpn/1,
         transport_params/1, build/1, group_code/1, group_from_code/1]).
-export_type([extensions/0, group/0]).

-type group() :: x25519 | x448 | secp256r1 | secp384r1.
-type extensions() :: #{server_name => binary(),
                        supported_versions => [0..65535],
                        supported_groups => [0..65535],
                        key_share => [{0..65535, binary()}],
                        signature_algorithms => [0..65535],
                        signature_algorithms_cert => [0..65535],
                        alpn => [binary()],
                        psk_key_exchange_modes => [0..255],
                        pre_shared_key => {[{binary(), 0..16#ffffffff}], [binary()]},
                        early_data => true,
                        cookie => binary(),
                        record_size_limit => 64..65535,
                        transport_params => binary()}.
-type error() :: {error, falco_tls13_alert:alert(), term()}.

%% @doc An extension list's body (after its two-byte length): the
%% extensions known, and every type in order of appearance.
-spec parse_list(binary()) -> {ok, extensions(), [0..65535]} | error().
parse_list(Bin) ->
    parse_list(Bin, #{}, []).

parse_list(<<>>, Exts, Types) ->
    {ok, Exts, lists:reverse(Types)};
parse_list(<<Type:16, Len:16, Body:Len/binary, Rest/binary>>, Exts, Types) ->
    case lists:member(Type, Types) of
        true -> {error, illegal_parameter, {duplicate_extension, Type}};
        false -> parse_one(Type, Body, Rest, Exts, [Type | Types])
    end;
parse_list(_, _, _) ->
    {error, decode_error, extension_length}.

parse_one(Type, Body, Rest, Exts, Types) ->
    case name(Type) of
        unknown ->
            parse_list(Rest, Exts, Types);
        Name ->
            case parse(Name, Body) of
                {ok, Value} -> parse_list(Rest, Exts#{Name => Value}, Types);
                {error, Alert} -> {error, Alert, {bad_extension, Name}}
            end
    end.

name(0) -> server_name;
name(10) -> supported_groups;
name(13) -> signature_algorithms;
name(16) -> alpn;
name(28) -> record_size_limit;
name(41) -> pre_shared_key;
name(42) -> early_data;
name(43) -> supported_versions;
name(44) -> cookie;
name(45) -> psk_key_exchange_modes;
name(50) -> signature_algorithms_cert;
name(51) -> key_share;
name(57) -> transport_params;
name(_) -> unknown.

%% Each body as a ClientHello carries it; {error, Alert} when it does not
%% parse.
parse(server_name, <<L:16, List:L/binary>>) when L > 0 ->
    server_name(List, undefined);
parse(supported_versions, <<L, List:L/binary>>) when L >= 2 ->
    uint16s(List);
parse(Name, <<L:16, List:L/binary>>) when L >= 2, Name =:= supported_groups;
                                          L >= 2, Name =:= signature_algorithms;
                                          L >= 2, Name =:= signature_algorithms_cert ->
    uint16s(List);
parse(key_share, <<L:16, List:L/binary>>) ->
    shares(List, []);
parse(alpn, <<L:16, List:L/binary>>) when L >= 2 ->
    protocols(List, []);
parse(psk_key_exchange_modes, <<L, Modes:L/binary>>) when L >= 1 ->
    {ok, binary_to_list(Modes)};
parse(pre_shared_key, <<L:16, Ids:L/binary, B:16, Binders:B/binary>>) when L >= 7, B >= 33 ->
    psk(Ids, Binders);
parse(early_data, <<>>) ->
    {ok, true};
parse(cookie, <<L:16, Cookie:L/binary>>) when L >= 1 ->
    {ok, Cookie};
parse(record_size_limit, <<Limit:16>>) when Limit >= 64 ->
    {ok, Limit};
parse(record_size_limit, <<_:16>>) ->
    {error, illegal_parameter};
parse(transport_params, Params) ->
    {ok, Params};
parse(_, _) ->
    {error, decode_error}.

%% RFC 6066 §3: one host_name (type 0), not empty; other name types are
%% skipped, but each type at most once.
server_name(<<>>, undefined) ->
    {error, decode_error};
server_name(<<>>, Host) ->
    {ok, Host};
server_name(<<0, L:16, Host:L/binary, Rest/binary>>, undefined) when L > 0 ->
    server_name(Rest, Host);
server_name(<<0, L:16, _:L/binary, _/binary>>, Host) when L > 0, Host =/= undefined ->
    {error, illegal_parameter};
server_name(<<_, L:16, _:L/binary, Rest/binary>>, Host) ->
    server_name(Rest, Host);
server_name(_, _) ->
    {error, decode_error}.

uint16s(Bin) when byte_size(Bin) rem 2 =:= 0 ->
    {ok, [V || <<V:16>> <= Bin]};
uint16s(_) ->
    {error, decode_error}.

%% §4.2.8: each group at most once.
shares(<<>>, Acc) ->
    {ok, lists:reverse(Acc)};
shares(<<Group:16, L:16, Key:L/binary, Rest/binary>>, Acc) when L > 0 ->
    case lists:keymember(Group, 1, Acc) of
        true -> {error, illegal_parameter};
        false -> shares(Rest, [{Group, Key} | Acc])
    end;
shares(_, _) ->
    {error, decode_error}.

protocols(<<>>, Acc) ->
    {ok, lists:reverse(Acc)};
protocols(<<L, P:L/binary, Rest/binary>>, Acc) when L > 0 ->
    protocols(Rest, [P | Acc]);
protocols(_, _) ->
    {error, decode_error}.

%% §4.2.11: as many binders as identities.
psk(Ids, Binders) ->
    case {identities(Ids, []), binders(Binders, [])} of
        {{ok, I}, {ok, B}} when length(I) =:= length(B) -> {ok, {I, B}};
        {{ok, _}, {ok, _}} -> {error, illegal_parameter};
        _ -> {error, decode_error}
    end.

identities(<<>>, Acc) ->
    {ok, lists:reverse(Acc)};
identities(<<L:16, Id:L/binary, Age:32, Rest/binary>>, Acc) when L > 0 ->
    identities(Rest, [{Id, Age} | Acc]);
identities(_, _) ->
    error.

binders(<<>>, Acc) ->
    {ok, lists:reverse(Acc)};
binders(<<L, B:L/binary, Rest/binary>>, Acc) when L >= 32 ->
    binders(Rest, [B | Acc]);
binders(_, _) ->
    error.

%% -- what the server sends --------------------------------------------------

%% @doc supported_versions of a ServerHello: TLS 1.3.
-spec supported_versions() -> iodata().
supported_versions() ->
    ext(43, <<16#0304:16>>).

%% @doc key_share of a ServerHello: the server's share.
-spec key_share(group(), binary()) -> iodata().
key_share(Group, Public) ->
    ext(51, <<(group_code(Group)):16, (byte_size(Public)):16, Public/binary>>).

%% @doc key_share of a HelloRetryRequest: the group the client must use.
-spec selected_group(group()) -> iodata().
selected_group(Group) ->
    ext(51, <<(group_code(Group)):16>>).

%% @doc ALPN of EncryptedExtensions: the one protocol chosen.
-spec alpn(binary()) -> iodata().
alpn(Proto) ->
    L = byte_size(Proto),
    ext(16, <<(L + 1):16, L, Proto/binary>>).

%% @doc quic_transport_parameters of EncryptedExtensions, already encoded.
-spec transport_params(binary()) -> iodata().
transport_params(Params) ->
    ext(57, Params).

%% @doc An extension list with its two-byte length.
-spec build([iodata()]) -> iodata().
build(Exts) ->
    [<<(iolist_size(Exts)):16>> | Exts].

%% @doc A group's NamedGroup code (RFC 8446 §4.2.7).
-spec group_code(group()) -> 0..65535.
group_code(secp256r1) -> 16#0017;
group_code(secp384r1) -> 16#0018;
group_code(x25519) -> 16#001d;
group_code(x448) -> 16#001e.

%% @doc The group of a code, `unknown' for those falco has no key
%% exchange for (ffdhe*, secp521r1, X25519MLKEM768, GREASE).
-spec group_from_code(0..65535) -> group() | unknown.
group_from_code(16#0017) -> secp256r1;
group_from_code(16#0018) -> secp384r1;
group_from_code(16#001d) -> x25519;
group_from_code(16#001e) -> x448;
group_from_code(_) -> unknown.

ext(Type, Body) ->
    [<<Type:16, (iolist_size(Body)):16>>, Body].
