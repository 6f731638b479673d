%% @doc The shared rules of the HTTP and URI grammars, written once for
%% HTTP/1.1, HTTP/2 and the helpers (pure: binaries in, values out, no
%% exceptions for bad input).
%%
%% <ul>
%% <li>tokens (RFC 9110 §5.6.2), case-insensitive ASCII (§5.1: names,
%%     tokens, codings), optional whitespace (§5.6.3) and the elements of a
%%     #list (§5.6.1), quoted-string (§5.6.4), hex digits;</li>
%% <li>the authority of Host and `:authority' (RFC 9110 §7.2, RFC 3986
%%     §3.2.2, §3.2.3) and the origin-form of a request target (RFC 9112
%%     §3.2.1, RFC 9113 §8.3.1), read the same way by both protocols;</li>
%% <li>the Expect field (RFC 9110 §10.1.1), answered the same way by
%%     both;</li>
%% <li>what a field value may hold (RFC 9110 §5.5) and which fields are
%%     connection-specific (RFC 9110 §7.6.1, RFC 9113 §8.2.2, RFC 9114
%%     §4.2), one rule each for HTTP/1.1, HTTP/2 and HTTP/3.</li>
%% </ul>
%% Field values may hold any byte but CR, LF and NUL (obs-text, 0x80-0xFF,
%% included), so they are not necessarily UTF-8 and the `string' module,
%% which raises on invalid UTF-8, is not used: everything here works on
%% bytes. The character classes are guard macros in falco_grammar.hrl, for
%% the modules that match bytes in function heads.
%%
%% @private internal to falco
-module(falco_grammar).

-include("falco_grammar.hrl").

-export([is_token/1, is_lower_token/1, lower_token/1, lower/1, is_digits/1, length_value/1,
         trim/1, trim_leading/1, trim_trailing/1,
         elements/1, lower_elements/1, has_element/2,
         hex_value/1, quoted_string/1,
         authority/1, origin_form/1, origin_form_prefix/1,
         expect/1,
         is_field_value/1, field_value_stops/0, is_connection_specific/2, tables/0]).

%% qdtext (RFC 9110 §5.6.4): HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text
-define(IS_QDTEXT(C), (C =:= $\t orelse (C >= 16#20 andalso C =/= $" andalso C =/= $\\
                                          andalso C =/= 16#7F))).
%% what a quoted-pair may escape: HTAB / SP / VCHAR / obs-text, the bytes
%% of a field value
-define(IS_QUOTABLE(C), ?IS_FIELD_BYTE(C)).

%% 16#01 in each byte of a 7-byte word (see lower_bytes/1)
-define(ONES7, 16#01010101010101).

%% -- tokens and case ---------------------------------------------------------

%% @doc Whether `Bin' is a token, `1*tchar' (RFC 9110 §5.6.2): methods,
%% field names, codings and parameter names are.
-spec is_token(binary()) -> boolean().
is_token(Bin) ->
    token_case(Bin) =/= error.

%% @doc Whether `Bin' is a token without uppercase letters, as an HTTP/2
%% field name must be (RFC 9113 §8.2.1).
-spec is_lower_token(binary()) -> boolean().
is_lower_token(Bin) ->
    token_case(Bin) =:= lower.

%% @doc A token in lowercase, or `error' when `Bin' is not a token. A name
%% already in lowercase is returned as it is, without a copy.
-spec lower_token(binary()) -> {ok, binary()} | error.
lower_token(Bin) ->
    case token_case(Bin) of
        lower -> {ok, Bin};
        upper -> {ok, lower_bytes(Bin)};
        error -> error
    end.

%% One scan for the three: a token, and whether it has uppercase letters.
%% Field names common in requests and responses, in lowercase, are known
%% without a scan: a literal match instead of one step a byte
%% (content-type: 96 -> about 10 ns, every response has one; 2026-11-28).
token_case(<<>>) -> error;
token_case(<<"accept">>) -> lower;
token_case(<<"accept-encoding">>) -> lower;
token_case(<<"accept-language">>) -> lower;
token_case(<<"accept-ranges">>) -> lower;
token_case(<<"access-control-allow-origin">>) -> lower;
token_case(<<"age">>) -> lower;
token_case(<<"allow">>) -> lower;
token_case(<<"authorization">>) -> lower;
token_case(<<"cache-control">>) -> lower;
token_case(<<"connection">>) -> lower;
token_case(<<"content-disposition">>) -> lower;
token_case(<<"content-encoding">>) -> lower;
token_case(<<"content-language">>) -> lower;
token_case(<<"content-length">>) -> lower;
token_case(<<"content-range">>) -> lower;
token_case(<<"content-security-policy">>) -> lower;
token_case(<<"content-type">>) -> lower;
token_case(<<"cookie">>) -> lower;
token_case(<<"date">>) -> lower;
token_case(<<"etag">>) -> lower;
token_case(<<"expires">>) -> lower;
token_case(<<"host">>) -> lower;
token_case(<<"if-modified-since">>) -> lower;
token_case(<<"if-none-match">>) -> lower;
token_case(<<"last-modified">>) -> lower;
token_case(<<"link">>) -> lower;
token_case(<<"location">>) -> lower;
token_case(<<"origin">>) -> lower;
token_case(<<"pragma">>) -> lower;
token_case(<<"priority">>) -> lower;
token_case(<<"referer">>) -> lower;
token_case(<<"referrer-policy">>) -> lower;
token_case(<<"retry-after">>) -> lower;
token_case(<<"sec-websocket-accept">>) -> lower;
token_case(<<"server">>) -> lower;
token_case(<<"set-cookie">>) -> lower;
token_case(<<"strict-transport-security">>) -> lower;
token_case(<<"te">>) -> lower;
token_case(<<"upgrade">>) -> lower;
token_case(<<"user-agent">>) -> lower;
token_case(<<"vary">>) -> lower;
token_case(<<"www-authenticate">>) -> lower;
token_case(<<"x-content-type-options">>) -> lower;
token_case(<<"x-frame-options">>) -> lower;
token_case(<<"x-request-id">>) -> lower;
token_case(Bin) -> token_case(Bin, lower).

token_case(<<C, R/binary>>, Case) when ?IS_LOWER_TCHAR(C) -> token_case(R, Case);
token_case(<<C, R/binary>>, _) when ?IS_UPPER(C) -> token_case(R, upper);
token_case(<<>>, Case) -> Case;
token_case(_, _) -> error.

%% @doc Whether `Bin' is `1*DIGIT', as a Content-Length or a port is.
-spec is_digits(binary()) -> boolean().
is_digits(<<>>) -> false;
is_digits(Bin) -> all_digits(Bin).

%% @doc One Content-Length value (RFC 9110 §8.6: `1*DIGIT'), the same for
%% HTTP/1.1 and HTTP/2: leading zeros are taken whatever their number, and
%% at most 15 significant digits are (below 2^53; a body cannot be that
%% large anyway). `overflow' is a value too large to represent, the fault
%% of an overlong chunk size too (`{bad_request, length_overflow}', 400).
-spec length_value(binary()) -> {ok, non_neg_integer()} | {error, overflow | invalid}.
length_value(V) ->
    case is_digits(V) of
        false ->
            {error, invalid};
        true ->
            case byte_size(skip_zeros(V)) > 15 of
                true -> {error, overflow};
                false -> {ok, binary_to_integer(V)}
            end
    end.

skip_zeros(<<"0", R/binary>>) -> skip_zeros(R);
skip_zeros(Bin) -> Bin.

all_digits(<<C, R/binary>>) when ?IS_DIGIT(C) -> all_digits(R);
all_digits(<<>>) -> true;
all_digits(_) -> false.

%% @doc ASCII lowercase (RFC 9110 §5.1: field names, and the tokens of
%% many field values, are case-insensitive); other bytes are unchanged.
%% Most input is lowercase already: it is then returned as it is.
-spec lower(binary()) -> binary().
lower(Bin) ->
    case has_upper(Bin) of
        true -> lower_bytes(Bin);
        false -> Bin
    end.

has_upper(<<C, _/binary>>) when ?IS_UPPER(C) -> true;
has_upper(<<_, R/binary>>) -> has_upper(R);
has_upper(<<>>) -> false.

%% Seven bytes at a time as one small integer (SWAR): per byte, the high
%% bit of (low 7 bits + 16#3F) is set from "A" up and that of (low 7 bits +
%% 16#25) from "[" up (no carry crosses a byte), so their XOR, kept where
%% the byte itself is below 16#80, marks "A".."Z"; OR-ing 16#20 there
%% lowercases. Measured for a 10-byte field name: 59 against 120 ns through
%% a list (binary_to_list, a recursion, list_to_binary), which also left
%% 44 words of garbage per name; headers_heavy (20 mixed-case names) 34 ->
%% 30 us of server CPU per request with the parser changes of 2026-11-25.
lower_bytes(Bin) when byte_size(Bin) =< 7 ->
    Bits = bit_size(Bin),
    <<X:Bits>> = Bin,
    <<(lower_word(X, ones(byte_size(Bin)))):Bits>>;
lower_bytes(Bin) when byte_size(Bin) =< 14 ->
    Bits = bit_size(Bin) - 56,
    <<X:56, Y:Bits>> = Bin,
    <<(lower_word(X, ?ONES7)):56, (lower_word(Y, ones(byte_size(Bin) - 7))):Bits>>;
lower_bytes(<<X:56, Rest/binary>>) ->
    lower_bytes(Rest, <<(lower_word(X, ?ONES7)):56>>).

lower_bytes(<<X:56, Rest/binary>>, Acc) ->
    lower_bytes(Rest, <<Acc/binary, (lower_word(X, ?ONES7)):56>>);
lower_bytes(Bin, Acc) ->
    Bits = bit_size(Bin),
    <<X:Bits>> = Bin,
    <<Acc/binary, (lower_word(X, ones(byte_size(Bin)))):Bits>>.

%% Ones is 16#01 in each of the word's bytes.
lower_word(X, Ones) ->
    Low7 = X band (Ones * 16#7F),
    Upper = (bnot X) band ((Low7 + Ones * 16#3F) bxor (Low7 + Ones * 16#25)) band (Ones * 16#80),
    X bor (Upper bsr 2).

ones(N) ->
    element(N + 1, {0, 16#01, 16#0101, 16#010101, 16#01010101, 16#0101010101,
                    16#010101010101, ?ONES7}).

%% -- whitespace and lists ----------------------------------------------------

%% @doc Strips leading and trailing OWS, SP and HTAB (RFC 9110 §5.6.3);
%% CR, LF and other bytes are kept.
-spec trim(binary()) -> binary().
trim(Bin) ->
    trim_trailing(trim_leading(Bin)).

%% @doc Strips leading SP and HTAB.
-spec trim_leading(binary()) -> binary().
trim_leading(<<C, R/binary>>) when ?IS_WS(C) -> trim_leading(R);
trim_leading(Bin) -> Bin.

%% @doc Strips trailing SP and HTAB (RFC 9110 §5.5: they are not part of
%% a field value). A value without any is returned as it is.
-spec trim_trailing(binary()) -> binary().
trim_trailing(Bin) ->
    N = byte_size(Bin) - 1,
    case Bin of
        <<_:N/binary, C>> when ?IS_WS(C) -> trim_trailing(binary:part(Bin, 0, N));
        _ -> Bin
    end.

%% @doc The elements of a #list value (RFC 9110 §5.6.1): split on commas,
%% each trimmed of OWS, the empty ones, which a recipient must ignore,
%% dropped: `<<"a, ,b,">>' gives `[<<"a">>, <<"b">>]'. Field lines of the
%% same name are one list (§5.3): append the elements of each line.
-spec elements(iodata()) -> [binary()].
elements(Value) ->
    [E || E <- [trim(E0) || E0 <- binary:split(iolist_to_binary(Value), <<",">>, [global])],
          E =/= <<>>].

%% @doc {@link elements/1} in lowercase, for lists of case-insensitive
%% tokens (Connection options, codings, expectations):
%% `<<"Gzip , ,BR">>' gives `[<<"gzip">>, <<"br">>]'.
-spec lower_elements(iodata()) -> [binary()].
lower_elements(Value) ->
    [lower(E) || E <- elements(Value)].

%% @doc Whether the #list value `Value' holds `Token' (lowercase),
%% compared case-insensitively: `has_element(<<"Keep-Alive, Close">>,
%% <<"close">>)' is true, `has_element(<<"closed">>, <<"close">>)' false.
-spec has_element(iodata(), binary()) -> boolean().
has_element(Value, Token) ->
    lists:member(Token, lower_elements(Value)).

%% -- hex digits and quoted strings ---------------------------------------------

%% @doc The value of a hex digit (either case), or `error'.
-spec hex_value(byte()) -> 0..15 | error.
hex_value(C) when ?IS_HEX(C) -> ?HEX_VALUE(C);
hex_value(_) -> error.

%% @doc Reads a quoted-string at the start of `Bin' (RFC 9110 §5.6.4):
%% its value (quoted-pairs unescaped) and the bytes after its closing
%% quote. A string without escapes is a sub-binary of `Bin', not a copy.
-spec quoted_string(binary()) -> {ok, binary(), binary()} | error.
quoted_string(<<$", R/binary>>) -> quoted_plain(R, R, 0);
quoted_string(_) -> error.

quoted_plain(<<$", Rest/binary>>, Orig, N) -> {ok, binary:part(Orig, 0, N), Rest};
quoted_plain(<<$\\, _/binary>> = Bin, Orig, N) -> quoted_escaped(Bin, binary:part(Orig, 0, N));
quoted_plain(<<C, R/binary>>, Orig, N) when ?IS_QDTEXT(C) -> quoted_plain(R, Orig, N + 1);
quoted_plain(_, _, _) -> error.

quoted_escaped(<<$", Rest/binary>>, Acc) -> {ok, Acc, Rest};
quoted_escaped(<<$\\, C, R/binary>>, Acc) when ?IS_QUOTABLE(C) -> quoted_escaped(R, <<Acc/binary, C>>);
quoted_escaped(<<C, R/binary>>, Acc) when ?IS_QDTEXT(C) -> quoted_escaped(R, <<Acc/binary, C>>);
quoted_escaped(_, _) -> error.

%% -- authority (RFC 9110 §7.2, RFC 3986 §3.2.2, §3.2.3) --------------------------

%% @doc Reads `host [ ":" port ]', the authority of a Host field or of an
%% HTTP/2 `:authority' (no userinfo: RFC 9110 §4.2.4 forbids it in http(s)
%% URIs, and the caller decides what its presence means). The host is a
%% reg-name (which includes IPv4 addresses) or an IP-literal in brackets,
%% returned in lowercase (§4.2.3: the host is case-insensitive); the port
%% is `undefined' when absent or empty (RFC 3986 §3.2.3: "host:" means
%% the default port).
-spec authority(binary()) -> {ok, binary(), inet:port_number() | undefined} | error.
authority(<<"[", _/binary>> = A) ->
    case binary:split(A, <<"]">>) of
        [<<"[", Ip/binary>>, PortPart] when Ip =/= <<>> ->
            case ip_literal(Ip) andalso port(PortPart) of
                {ok, Port} -> {ok, lower(<<"[", Ip/binary, "]">>), Port};
                _ -> error
            end;
        _ ->
            error
    end;
authority(A) ->
    {Host, PortPart} = case binary:split(A, <<":">>) of
                           [H] -> {H, <<>>};
                           [H, P] -> {H, <<":", P/binary>>}
                       end,
    case Host =/= <<>> andalso reg_name(Host) andalso port(PortPart) of
        {ok, Port} -> {ok, lower(Host), Port};
        _ -> error
    end.

%% reg-name = *( unreserved / pct-encoded / sub-delims )
reg_name(<<C, R/binary>>) when ?IS_UNRESERVED(C); ?IS_SUB_DELIM(C) -> reg_name(R);
reg_name(<<"%", A, B, R/binary>>) when ?IS_HEX(A), ?IS_HEX(B) -> reg_name(R);
reg_name(<<>>) -> true;
reg_name(_) -> false.

%% The characters of an IPv6 address (or IPv4-in-IPv6); the address
%% itself is not checked further.
ip_literal(<<C, R/binary>>) when ?IS_HEX(C); C =:= $:; C =:= $. -> ip_literal(R);
ip_literal(<<>>) -> true;
ip_literal(_) -> false.

port(<<>>) -> {ok, undefined};
port(<<":">>) -> {ok, undefined};
port(<<":", P/binary>>) when byte_size(P) =< 5 ->
    case is_digits(P) andalso binary_to_integer(P) of
        N when is_integer(N), N =< 65535 -> {ok, N};
        _ -> error
    end;
port(_) -> error.

%% -- origin-form (RFC 9112 §3.2.1, RFC 3986 §3.3, §3.4) ---------------------------

%% @doc Validates a whole origin-form target, `absolute-path [ "?" query ]'
%% (pchars, "/" and percent escapes; the query may also hold "/" and
%% "?"), and splits it into path and query. HTTP/2's `:path' is one
%% (RFC 9113 §8.3.1).
-spec origin_form(binary()) -> {ok, binary(), binary()} | error.
origin_form(Target) ->
    case origin_form_prefix(Target) of
        {_, Path, Query, <<>>} -> {ok, Path, Query};
        _ -> error
    end.

%% @doc The longest origin-form prefix of `Bin', which starts with "/":
%% `{Target, Path, Query, Rest}', Target split at its first "?" into
%% path and query, and the bytes that follow it. The HTTP/1.1 parser reads
%% a request line with it in one pass (the target must be followed by SP).
-spec origin_form_prefix(binary()) -> {binary(), binary(), binary(), binary()} | error.
origin_form_prefix(<<"/", _/binary>> = Bin) ->
    {N, QPos} = origin_scan(Bin, 0, none),
    <<Target:N/binary, Rest/binary>> = Bin,
    case QPos of
        none ->
            {Target, Target, <<>>, Rest};
        _ ->
            <<Path:QPos/binary, "?", Query/binary>> = Target,
            {Target, Path, Query, Rest}
    end;
origin_form_prefix(_) ->
    error.

%% The length of the valid prefix, and where its first "?" is.
origin_scan(<<C, R/binary>>, N, Q) when ?IS_PCHAR(C); C =:= $/ -> origin_scan(R, N + 1, Q);
origin_scan(<<"?", R/binary>>, N, none) -> origin_scan(R, N + 1, N);
origin_scan(<<"?", R/binary>>, N, Q) -> origin_scan(R, N + 1, Q);
origin_scan(<<"%", A, B, R/binary>>, N, Q) when ?IS_HEX(A), ?IS_HEX(B) -> origin_scan(R, N + 3, Q);
origin_scan(_, N, Q) -> {N, Q}.

%% -- Expect (RFC 9110 §10.1.1) ------------------------------------------------------

%% @doc What the Expect field lines of a request (their values, in order)
%% ask for: `none' (no field, or only empty list elements), `continue'
%% (every element is "100-continue", in any case: a list that repeats it,
%% or several lines, still ask for one 100 response), or
%% `{error, expectation_failed}' (417) for any other expectation, the
%% only one defined being 100-continue. The caller ignores Expect in an
%% HTTP/1.0 request (§10.1.1), which it alone can tell.
-spec expect([binary()]) -> none | continue | {error, expectation_failed}.
expect([]) ->
    none;
expect(Values) ->
    case lists:append([lower_elements(V) || V <- Values]) of
        [] -> none;
        Es ->
            case lists:all(fun(E) -> E =:= <<"100-continue">> end, Es) of
                true -> continue;
                false -> {error, expectation_failed}
            end
    end.

%% -- field values (RFC 9110 §5.5) ------------------------------------------------------

%% @doc Whether `Value' is a field value (RFC 9110 §5.5): field-vchar
%% (VCHAR and obs-text, 0x80-0xFF), SP and HTAB, with no whitespace at
%% either end (`field-content' starts and ends with a field-vchar). CR, LF
%% and NUL, which §5.5 calls dangerous, and every other control byte and
%% DEL, which its grammar leaves out, make it false. HTTP/1.1 calls it on
%% the value with the OWS around it removed (RFC 9112 §5: `field-name ":"
%% OWS field-value OWS'); HTTP/2 (RFC 9113 §8.2.1) and HTTP/3 (RFC 9114
%% §4.2, §10.3) on the value as it came, whitespace at an end making the
%% message malformed.
%%
%% The bytes are found with {@link field_value_stops/0}, a binary:match in
%% C, rather than a byte loop in Erlang (HTTP/2's before): the loop's time
%% over the pattern's, medians of 11 interleaved rounds, three runs, OTP
%% 25 with the JIT, 2026-12-01, a 2-core machine shared with other work:
%% 20-byte value 0.81-0.86 (the loop about 20 ns faster), 100 bytes
%% 1.15-1.25, 1 KB 1.42-1.65, even somewhere between 32 and 64 bytes.
%% One form for every length: the long values (cookies, user-agent,
%% accept) are where the time goes (docs/internals/http1.md).
-spec is_field_value(binary()) -> boolean().
is_field_value(<<>>) ->
    true;
is_field_value(<<C, _/binary>>) when ?IS_WS(C) ->
    false;
is_field_value(Value) ->
    case binary:last(Value) of
        C when ?IS_WS(C) -> false;
        _ -> binary:match(Value, field_value_stops()) =:= nomatch
    end.

%% @doc The bytes no field value holds (those ?IS_FIELD_BYTE in
%% falco_grammar.hrl leaves out), as a compiled pattern: CR and LF are
%% among them, so the HTTP/1.1 parser finds the end of a field line and
%% any byte that makes its value invalid in one scan. Stored once per node
%% when the application starts ({@link tables/0}); without it (a unit
%% test) it is compiled for the call and not stored: this module never
%% writes a persistent term (replacing one forces a global GC).
-spec field_value_stops() -> binary:cp().
field_value_stops() ->
    case persistent_term:get(falco_grammar_field_stops, undefined) of
        undefined -> binary:compile_pattern(stop_bytes());
        P -> P
    end.

stop_bytes() ->
    [<<C>> || C <- lists:seq(0, 255), not ?IS_FIELD_BYTE(C)].

%% @doc The persistent terms this module reads, for falco_app to store
%% once when the application starts.
-spec tables() -> [{atom(), binary:cp()}].
tables() ->
    [{falco_grammar_field_stops, binary:compile_pattern(stop_bytes())}].

%% -- connection-specific fields (RFC 9110 §7.6.1) -----------------------------------------

%% @doc Whether the field `Name' (lowercase) with value `Value' is
%% connection-specific: Connection and the fields RFC 9110 §7.6.1 names
%% (Proxy-Connection, Keep-Alive, Transfer-Encoding, Upgrade), and TE
%% unless its value is "trailers" (any case), the one exception RFC 9113
%% §8.2.2 and RFC 9114 §4.2 make. HTTP/2 and HTTP/3 treat a request or
%% trailer section with one as malformed and never send one; HTTP/1.1
%% sends none in a trailer section (RFC 9110 §6.5.1: none of them is
%% defined for trailers). The fields a Connection field names are
%% connection-specific too (§7.6.1), but only a message that may carry
%% Connection can name any, and only HTTP/1.1's may.
-spec is_connection_specific(binary(), binary()) -> boolean().
is_connection_specific(<<"connection">>, _) -> true;
is_connection_specific(<<"keep-alive">>, _) -> true;
is_connection_specific(<<"proxy-connection">>, _) -> true;
is_connection_specific(<<"transfer-encoding">>, _) -> true;
is_connection_specific(<<"upgrade">>, _) -> true;
is_connection_specific(<<"te">>, <<"trailers">>) -> false;
is_connection_specific(<<"te">>, Value) -> lower(trim(Value)) =/= <<"trailers">>;
is_connection_specific(_, _) -> false.
