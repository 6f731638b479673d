%% @doc Pure HTTP cookie helpers: the Cookie request field parser and a
%% validating Set-Cookie builder (RFC 6265, with the SameSite and cookie
%% prefix rules of draft-ietf-httpbis-rfc6265bis and CHIPS' Partitioned).
%%
%% Parsing is lenient, in the spirit of RFC 6265 §5.2 (§5.4 says what user
%% agents send, §4.2.1 what they should): split on `;', trim spaces and tabs,
%% split each piece on its first `=', drop one pair of double quotes around a
%% value (§4.1.1 allows them and they are not part of the value). A piece
%% without `=' is a cookie with an empty name (rfc6265bis §5.6, what browsers
%% do for `document.cookie = "x"'); empty pieces are skipped. Nothing is ever
%% rejected and nothing raises: a handler gets every pair, in order,
%% duplicates included (§5.4 sends the more specific path first).
%%
%% Building is strict, because a browser silently drops a cookie it does not
%% like and a header with a stray `;' or CR is an injection: the name must be
%% a token (RFC 9110 §5.6.2), the value `*cookie-octet' optionally in double
%% quotes (RFC 6265 §4.1.1), attribute values free of CTLs and `;', Domain a
%% host name (RFC 1034 §3.5, RFC 1123 §2.1), Expires an IMF-fixdate
%% (RFC 9110 §5.6.7). SameSite=None and Partitioned need Secure, and the
%% `__Secure-' and `__Host-' prefixes get their checks (rfc6265bis §4.1.3).
%% The limits agents apply are applied here too, so a cookie is refused
%% rather than silently dropped: name and value together at most 4096
%% bytes, Path at most 1024 (rfc6265bis §5.6, §5.7).
%% A value that is not cookie-octets can be made so with
%% {@link falco_uri:encode_query/1}.
%%
%% ```
%% [{<<"sid">>, <<"abc">>}, {<<"theme">>, <<"dark">>}] =
%%     falco_cookie:parse(<<"sid=abc; theme=dark">>),
%% {ok, <<"sid=abc; Path=/; Secure; HttpOnly; SameSite=Lax">>} =
%%     falco_cookie:set_cookie(<<"sid">>, <<"abc">>, #{path => <<"/">>, secure => true,
%%                                                    http_only => true, same_site => lax}).
%% '''
-module(falco_cookie).

-export([parse/1, from_headers/1, set_cookie/3, delete/2]).

-export_type([opts/0, reason/0]).

-type opts() :: #{max_age => non_neg_integer(),
                  expires => calendar:datetime(),
                  domain => binary(),
                  path => binary(),
                  secure => boolean(),
                  http_only => boolean(),
                  same_site => strict | lax | none,
                  partitioned => boolean()}.
-type reason() :: invalid_name | invalid_value | too_large
                | {invalid_attribute, atom()} | {unknown_option, term()}
                | same_site_none_requires_secure | partitioned_requires_secure
                | secure_prefix_requires_secure | host_prefix_requirements.

-include("../core/falco_grammar.hrl").

%% cookie-octet (RFC 6265 §4.1.1): visible US-ASCII but DQUOTE, comma,
%% semicolon and backslash.
-define(IS_COOKIE_OCTET(C), (C =:= 16#21 orelse (C >= 16#23 andalso C =< 16#2B)
                             orelse (C >= 16#2D andalso C =< 16#3A)
                             orelse (C >= 16#3C andalso C =< 16#5B)
                             orelse (C >= 16#5D andalso C =< 16#7E))).
%% av-octet for Path and extension attributes (RFC 6265 §4.1.1): any CHAR
%% (US-ASCII) except CTLs or ";".
-define(IS_AV_OCTET(C), (C >= 16#20 andalso C =< 16#7E andalso C =/= $;)).

%% -- parsing (RFC 6265 §5.4, §4.2.1) -----------------------------------------

%% @doc Parses one Cookie field value into `[{Name, Value}]'.
%% `<<"a=1; b=\"two\"; a=3">>' gives
%% `[{<<"a">>, <<"1">>}, {<<"b">>, <<"two">>}, {<<"a">>, <<"3">>}]'.
-spec parse(binary()) -> [{binary(), binary()}].
parse(Bin) ->
    pairs(Bin, []).

%% @doc Parses every `cookie' field of a header list (names in lower case).
%% HTTP/2 and HTTP/3 may split the cookies over several fields
%% (RFC 9113 §8.2.3); this reads them as if joined with `"; "'.
-spec from_headers([{binary(), iodata()}]) -> [{binary(), binary()}].
from_headers(Headers) ->
    lists:append([parse(iolist_to_binary(V)) || {<<"cookie">>, V} <- Headers]).

%% One pass of binary matching, no binary:match/2 (which compiles its
%% pattern on every call): names and values are sub-binaries of the input,
%% `Keep' is the length up to the last byte that is not a space or tab, so
%% trailing whitespace is trimmed without a second scan.
pairs(<<C, R/binary>>, Acc) when C =:= $\s; C =:= $\t; C =:= $; ->
    pairs(R, Acc);
pairs(<<>>, Acc) ->
    lists:reverse(Acc);
pairs(Bin, Acc) ->
    name(Bin, Bin, 0, 0, Acc).

name(<<$=, R/binary>>, Orig, _Len, Keep, Acc) ->
    V = falco_grammar:trim_leading(R),
    value(V, V, 0, 0, binary:part(Orig, 0, Keep), Acc);
name(<<$;, R/binary>>, Orig, _Len, Keep, Acc) ->
    pairs(R, [{<<>>, binary:part(Orig, 0, Keep)} | Acc]);
name(<<C, R/binary>>, Orig, Len, Keep, Acc) when C =:= $\s; C =:= $\t ->
    name(R, Orig, Len + 1, Keep, Acc);
name(<<_, R/binary>>, Orig, Len, _Keep, Acc) ->
    name(R, Orig, Len + 1, Len + 1, Acc);
name(<<>>, Orig, _Len, Keep, Acc) ->
    lists:reverse(Acc, [{<<>>, binary:part(Orig, 0, Keep)}]).

value(<<$;, R/binary>>, Orig, _Len, Keep, Name, Acc) ->
    pairs(R, [{Name, unquote(binary:part(Orig, 0, Keep))} | Acc]);
value(<<C, R/binary>>, Orig, Len, Keep, Name, Acc) when C =:= $\s; C =:= $\t ->
    value(R, Orig, Len + 1, Keep, Name, Acc);
value(<<_, R/binary>>, Orig, Len, _Keep, Name, Acc) ->
    value(R, Orig, Len + 1, Len + 1, Name, Acc);
value(<<>>, Orig, _Len, Keep, Name, Acc) ->
    lists:reverse(Acc, [{Name, unquote(binary:part(Orig, 0, Keep))}]).

%% §4.1.1: DQUOTE *cookie-octet DQUOTE; the quotes are not the value.
unquote(<<$", V/binary>>) when byte_size(V) > 0 ->
    case binary:last(V) of
        $" -> binary:part(V, 0, byte_size(V) - 1);
        _ -> <<$", V/binary>>
    end;
unquote(V) ->
    V.

%% -- building (RFC 6265 §4.1) ------------------------------------------------

%% @doc Builds a Set-Cookie field value, attributes in a fixed order:
%% `set_cookie(<<"sid">>, <<"abc">>, #{path => <<"/">>, http_only => true,
%% secure => true, same_site => lax})' gives
%% `{ok, <<"sid=abc; Path=/; Secure; HttpOnly; SameSite=Lax">>}'.
-spec set_cookie(binary(), binary(), opts()) -> {ok, binary()} | {error, reason()}.
set_cookie(Name, Value, Opts) when is_binary(Name), is_binary(Value), is_map(Opts) ->
    try
        check_name(Name),
        check_value(Value),
        byte_size(Name) + byte_size(Value) =< 4096 orelse fail(too_large),
        check_options(Opts),
        check_rules(Name, Opts),
        {ok, iolist_to_binary([Name, $=, Value | attributes(Opts)])}
    catch
        throw:{?MODULE, Reason} -> {error, Reason}
    end.

%% @doc A Set-Cookie field value that removes cookie `Name': empty value,
%% `Max-Age=0' (RFC 6265 §5.2.2) and an Expires in the past for agents that
%% ignore Max-Age. `Opts' must carry the same Domain and Path as when the
%% cookie was set, or the agent keeps it (§5.3 step 11).
-spec delete(binary(), opts()) -> {ok, binary()} | {error, reason()}.
delete(Name, Opts) ->
    set_cookie(Name, <<>>, Opts#{max_age => 0, expires => {{1970, 1, 1}, {0, 0, 0}}}).

-spec fail(reason()) -> no_return().
fail(Reason) ->
    throw({?MODULE, Reason}).

check_name(Name) -> falco_grammar:is_token(Name) orelse fail(invalid_name).

check_value(<<$", V/binary>>) when byte_size(V) > 0 ->
    case split_binary(V, byte_size(V) - 1) of
        {Inner, <<$">>} -> octets(Inner);
        _ -> fail(invalid_value)
    end;
check_value(V) ->
    octets(V).

octets(V) ->
    all(fun(C) -> ?IS_COOKIE_OCTET(C) end, V) orelse fail(invalid_value).

all(Pred, Bin) ->
    lists:all(Pred, binary_to_list(Bin)).

check_options(Opts) ->
    maps:foreach(fun check_option/2, Opts).

check_option(max_age, N) when is_integer(N), N >= 0 -> ok;
check_option(expires, {{Y, Mo, D}, {H, Mi, S}})
  when is_integer(Y), is_integer(Mo), is_integer(D),
       is_integer(H), is_integer(Mi), is_integer(S) ->
    %% Four-digit years only: §5.1.1 makes agents refuse years before 1601,
    %% and IMF-fixdate has exactly four digits.
    (Y >= 1601 andalso Y =< 9999 andalso calendar:valid_date(Y, Mo, D)
     andalso H >= 0 andalso H =< 23 andalso Mi >= 0 andalso Mi =< 59
     andalso S >= 0 andalso S =< 59) orelse fail({invalid_attribute, expires});
check_option(domain, D) when is_binary(D) ->
    domain(D) orelse fail({invalid_attribute, domain});
check_option(path, P) when is_binary(P), byte_size(P) =< 1024 ->
    all(fun(C) -> ?IS_AV_OCTET(C) end, P) orelse fail({invalid_attribute, path});
check_option(K, B) when is_boolean(B), (K =:= secure orelse K =:= http_only
                                         orelse K =:= partitioned) ->
    ok;
check_option(same_site, S) when S =:= strict; S =:= lax; S =:= none -> ok;
check_option(K, _) when K =:= max_age; K =:= expires; K =:= domain; K =:= path;
                        K =:= secure; K =:= http_only; K =:= partitioned;
                        K =:= same_site ->
    fail({invalid_attribute, K});
check_option(K, _) ->
    fail({unknown_option, K}).

%% A host name: dot-separated labels of letters, digits and hyphens, not
%% starting or ending with a hyphen, at most 63 bytes each and 253 in all
%% (RFC 1034 §3.5, RFC 1123 §2.1). A leading dot is refused: the grammar of
%% §4.1.1 has none, and §5.2.3 only tolerates it.
domain(D) when byte_size(D) > 0, byte_size(D) =< 253 ->
    lists:all(fun label/1, binary:split(D, <<".">>, [global]));
domain(_) ->
    false.

label(L) when byte_size(L) > 0, byte_size(L) =< 63 ->
    binary:first(L) =/= $- andalso binary:last(L) =/= $-
        andalso all(fun(C) -> ?IS_ALPHA(C) orelse ?IS_DIGIT(C) orelse C =:= $- end, L);
label(_) ->
    false.

check_rules(Name, Opts) ->
    Secure = maps:get(secure, Opts, false),
    _ = maps:get(same_site, Opts, undefined) =/= none orelse Secure
        orelse fail(same_site_none_requires_secure),
    _ = not maps:get(partitioned, Opts, false) orelse Secure
        orelse fail(partitioned_requires_secure),
    %% Agents match the prefixes case-insensitively (rfc6265bis §5.7 step 21).
    case prefix(Name) of
        secure ->
            Secure orelse fail(secure_prefix_requires_secure);
        host ->
            (Secure andalso maps:get(path, Opts, undefined) =:= <<"/">>
             andalso not maps:is_key(domain, Opts))
                orelse fail(host_prefix_requirements);
        none ->
            true
    end.

prefix(<<"__", _/binary>> = Name) ->
    case falco_grammar:lower(binary:part(Name, 0, min(9, byte_size(Name)))) of
        <<"__secure-">> -> secure;
        <<"__host-", _/binary>> -> host;
        _ -> none
    end;
prefix(_) ->
    none.

attributes(Opts) ->
    [attr(K, maps:get(K, Opts))
     || K <- [max_age, expires, domain, path, secure, http_only, same_site, partitioned],
        maps:is_key(K, Opts)].

attr(max_age, N) -> [<<"; Max-Age=">>, integer_to_binary(N)];
attr(expires, DT) -> [<<"; Expires=">>, falco_clock:format(DT)];
attr(domain, D) -> [<<"; Domain=">>, D];
attr(path, P) -> [<<"; Path=">>, P];
attr(secure, true) -> <<"; Secure">>;
attr(http_only, true) -> <<"; HttpOnly">>;
attr(same_site, strict) -> <<"; SameSite=Strict">>;
attr(same_site, lax) -> <<"; SameSite=Lax">>;
attr(same_site, none) -> <<"; SameSite=None">>;
attr(partitioned, true) -> <<"; Partitioned">>;
attr(_, false) -> [].
