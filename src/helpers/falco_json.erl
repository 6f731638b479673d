%% @doc Pure JSON encoder and decoder (RFC 8259), for OTP releases without
%% the `json' module (it arrived in OTP 27).
%%
%% Encoding maps Erlang to JSON as:
%% <ul>
%% <li>maps to objects, keys atoms or binaries (RFC 8259 §4); a map whose
%%     atom and binary keys would give the same name twice is refused, as
%%     names should be unique;</li>
%% <li>lists to arrays (§5), binaries to strings (§7): `"', `\' and the
%%     controls U+0000..U+001F are escaped, valid UTF-8 is kept as is, invalid
%%     UTF-8 is refused (§8.1 requires UTF-8);</li>
%% <li>integers as they are, floats in the shortest form that reads back to
%%     the same float (§6), `true', `false' and `null' as literals (§3);</li>
%% <li>`nil' as `null' too: it is Elixir's `nil', so a map built in Elixir
%%     encodes as Elixir users expect (`%{"a" => nil}' gives `{"a":null}').</li>
%% </ul>
%% Anything else (other atoms, tuples, pids, improper lists) is
%% `{error, {invalid, Term}}' naming the offending term. The output is
%% iodata; object members come in `maps:to_list/1' order.
%%
%% Decoding is the reverse: objects become maps with binary keys, arrays
%% lists, strings binaries, numbers integers (no fraction or exponent) or
%% floats, `null' the atom `null' (or `nil' with the option `null => nil',
%% for Elixir). It takes only what RFC 8259 §2 allows: no BOM (§8.1 permits
%% ignoring one, falco refuses it), no comments, no trailing commas, no
%% leading zeros, no raw control characters in strings, no lone surrogates
%% in `\u' escapes, valid UTF-8 only. A repeated object name is an error
%% (§4 leaves the behaviour open; refusing it rules out two components
%% reading different values from one document). Limits bound the work:
%% `max_size' bytes of input (default 8 MiB), `max_depth' nested
%% arrays/objects (default 128, so recursion stays shallow), and number
%% literals of at most 1024 bytes (binary_to_integer is superlinear).
%%
%% ```
%% <<"{\"name\":\"falco\",\"tags\":[1,2.5,null]}">> =
%%     falco_json:encode_to_binary(#{name => <<"falco">>, tags => [1, 2.5, null]}),
%% {ok, #{<<"a">> := [1, true]}} = falco_json:decode(<<"{\"a\":[1,true]}">>).
%% '''
-module(falco_json).

-export([encode/1, encode_to_binary/1, decode/1, decode/2]).

-export_type([json/0, decode_opts/0, decode_error/0]).

-type json() :: null | nil | boolean() | number() | binary() | [json()] | #{binary() => json()}.
-type decode_opts() :: #{max_size => non_neg_integer(), max_depth => non_neg_integer(),
                         null => null | nil}.
-type decode_error() :: too_large
                      | {syntax, non_neg_integer()}
                      | {too_deep, non_neg_integer()}
                      | {number_out_of_range, non_neg_integer()}
                      | {duplicate_key, binary()}.

-include("../core/falco_grammar.hrl").
%% JSON whitespace (RFC 8259 §2), not HTTP's OWS (?IS_WS)
-define(IS_JSON_WS(C), (C =:= $\s orelse C =:= $\t orelse C =:= $\n orelse C =:= $\r)).
-define(MAX_NUMBER, 1024).

%% -- encoding ----------------------------------------------------------------

%% @doc Encodes a term as JSON text.
-spec encode(term()) -> {ok, iodata()} | {error, {invalid, term()}}.
encode(Term) ->
    try
        {ok, value(Term)}
    catch
        throw:{?MODULE, Bad} -> {error, {invalid, Bad}}
    end.

%% @doc Encodes a term as a JSON binary; raises `badarg' if it cannot.
-spec encode_to_binary(term()) -> binary().
encode_to_binary(Term) ->
    case encode(Term) of
        {ok, Json} -> iolist_to_binary(Json);
        {error, _} -> erlang:error(badarg, [Term])
    end.

-spec invalid(term()) -> no_return().
invalid(Term) ->
    throw({?MODULE, Term}).

value(true) -> <<"true">>;
value(false) -> <<"false">>;
value(null) -> <<"null">>;
value(nil) -> <<"null">>;
value(B) when is_binary(B) -> string(B);
value(I) when is_integer(I) -> integer_to_binary(I);
value(F) when is_float(F) -> float_to_binary(F, [short]);
value(M) when is_map(M) -> object(M);
value([]) -> <<"[]">>;
value([H | T] = L) -> [$[, value(H) | elements(T, L)];
value(T) -> invalid(T).

elements([], _L) -> [$]];
elements([H | T], L) -> [$,, value(H) | elements(T, L)];
elements(_, L) -> invalid(L).

object(M) when map_size(M) =:= 0 ->
    <<"{}">>;
object(M) ->
    [{K, V} | T] = maps:to_list(M),
    Names = [key(K) | [key(K1) || {K1, _} <- T]],
    check_unique(M, Names),
    [${, hd(Names), $:, value(V) | members(T, tl(Names))].

members([], []) -> [$}];
members([{_, V} | T], [Name | Names]) -> [$,, Name, $:, value(V) | members(T, Names)].

key(K) when is_binary(K) -> string(K);
key(K) when is_atom(K) -> string(atom_to_binary(K, utf8));
key(K) -> invalid(K).

%% Only a map with both atom and binary keys can repeat a name.
check_unique(M, Names) ->
    Keys = maps:keys(M),
    case lists:any(fun is_atom/1, Keys) andalso lists:any(fun is_binary/1, Keys) of
        true ->
            length(lists:usort([iolist_to_binary(N) || N <- Names])) =:= length(Names)
                orelse invalid(M);
        false ->
            true
    end.

string(Bin) ->
    [$", escape(Bin, Bin, 0, 0), $"].

%% Runs of bytes that need no escaping are emitted as sub-binaries of the
%% input; a string with nothing to escape is emitted as itself.
escape(<<C, R/binary>>, Orig, Start, Len)
  when C >= 16#20, C < 16#80, C =/= $", C =/= $\\ ->
    escape(R, Orig, Start, Len + 1);
escape(<<C, R/binary>>, Orig, Start, Len) when C < 16#80 ->
    [binary:part(Orig, Start, Len), escape_char(C), escape(R, Orig, Start + Len + 1, 0)];
escape(<<C/utf8, R/binary>>, Orig, Start, Len) ->
    escape(R, Orig, Start, Len + utf8_size(C));
escape(<<>>, Orig, 0, _Len) ->
    Orig;
escape(<<>>, Orig, Start, Len) ->
    binary:part(Orig, Start, Len);
escape(_, Orig, _, _) ->
    invalid(Orig).

utf8_size(C) when C < 16#800 -> 2;
utf8_size(C) when C < 16#10000 -> 3;
utf8_size(_) -> 4.

escape_char($") -> <<"\\\"">>;
escape_char($\\) -> <<"\\\\">>;
escape_char($\b) -> <<"\\b">>;
escape_char($\f) -> <<"\\f">>;
escape_char($\n) -> <<"\\n">>;
escape_char($\r) -> <<"\\r">>;
escape_char($\t) -> <<"\\t">>;
escape_char(C) -> <<"\\u00", (hex(C bsr 4)), (hex(C band 15))>>.

hex(N) when N < 10 -> $0 + N;
hex(N) -> $a + N - 10.

%% -- decoding ----------------------------------------------------------------

%% @doc Decodes JSON text with the default limits.
-spec decode(binary()) -> {ok, json()} | {error, decode_error()}.
decode(Bin) ->
    decode(Bin, #{}).

%% @doc Decodes JSON text. Error offsets are in bytes from the start.
%% Options: `max_size' (bytes, default 8 MiB), `max_depth' (default 128),
%% `null' (the term `null' decodes to: `null', the default, or `nil').
-spec decode(binary(), decode_opts()) -> {ok, json()} | {error, decode_error()}.
decode(Bin, Opts) ->
    case byte_size(Bin) > maps:get(max_size, Opts, 8 * 1024 * 1024) of
        true ->
            {error, too_large};
        false ->
            D = {Bin, maps:get(max_depth, Opts, 128), null_term(maps:get(null, Opts, null))},
            try value(ws(Bin), D, 0) of
                {Value, Rest} ->
                    case ws(Rest) of
                        <<>> -> {ok, Value};
                        Trailing -> {error, {syntax, offset(Trailing, D)}}
                    end
            catch
                throw:{?MODULE, {duplicate_key, _} = Reason} -> {error, Reason};
                throw:{?MODULE, Why, Rest} -> {error, {Why, offset(Rest, D)}}
            end
    end.

null_term(null) -> null;
null_term(nil) -> nil;
null_term(Other) -> erlang:error({invalid_option, null, Other}).

offset(Rest, {Orig, _, _}) ->
    byte_size(Orig) - byte_size(Rest).

-spec fail(atom(), binary()) -> no_return().
fail(Why, Rest) ->
    throw({?MODULE, Why, Rest}).

ws(<<C, R/binary>>) when ?IS_JSON_WS(C) -> ws(R);
ws(Bin) -> Bin.

value(<<${, R/binary>> = Bin, D, Depth) ->
    object(ws(R), D, deeper(Bin, D, Depth), #{});
value(<<$[, R/binary>> = Bin, D, Depth) ->
    array(ws(R), D, deeper(Bin, D, Depth));
value(<<$", R/binary>>, _D, _Depth) ->
    str(R, R, 0, []);
value(<<"true", R/binary>>, _D, _Depth) ->
    {true, R};
value(<<"false", R/binary>>, _D, _Depth) ->
    {false, R};
value(<<"null", R/binary>>, {_, _, Null}, _Depth) ->
    {Null, R};
value(<<C, _/binary>> = Bin, _D, _Depth) when C =:= $-; ?IS_DIGIT(C) ->
    number(Bin);
value(Bin, _D, _Depth) ->
    fail(syntax, Bin).

deeper(Bin, {_, Max, _}, Depth) when Depth >= Max -> fail(too_deep, Bin);
deeper(_Bin, _D, Depth) -> Depth + 1.

object(<<$}, R/binary>>, _D, _Depth, Acc) when map_size(Acc) =:= 0 ->
    {Acc, R};
object(<<$", R/binary>>, D, Depth, Acc) ->
    {Key, R1} = str(R, R, 0, []),
    case ws(R1) of
        <<$:, R2/binary>> ->
            {Value, R3} = value(ws(R2), D, Depth),
            _ = maps:is_key(Key, Acc) andalso throw({?MODULE, {duplicate_key, Key}}),
            Acc1 = Acc#{Key => Value},
            case ws(R3) of
                <<$,, R4/binary>> -> object(ws(R4), D, Depth, Acc1);
                <<$}, R4/binary>> -> {Acc1, R4};
                Other -> fail(syntax, Other)
            end;
        Other ->
            fail(syntax, Other)
    end;
object(Bin, _D, _Depth, _Acc) ->
    fail(syntax, Bin).

array(<<$], R/binary>>, _D, _Depth) ->
    {[], R};
array(Bin, D, Depth) ->
    elements(Bin, D, Depth, []).

elements(Bin, D, Depth, Acc) ->
    {Value, R} = value(Bin, D, Depth),
    case ws(R) of
        <<$,, R1/binary>> -> elements(ws(R1), D, Depth, [Value | Acc]);
        <<$], R1/binary>> -> {lists:reverse(Acc, [Value]), R1};
        Other -> fail(syntax, Other)
    end.

%% Strings (§7): `Start' is where the current unescaped run began, `Len' its
%% length so far; escapes flush the run into `Acc'.
str(<<$", R/binary>>, Start, Len, Acc) ->
    Run = binary:part(Start, 0, Len),
    case Acc of
        [] -> {Run, R};
        _ -> {iolist_to_binary(lists:reverse(Acc, [Run])), R}
    end;
str(<<$\\, R/binary>> = Bin, Start, Len, Acc) ->
    {Char, R1} = unescape(R, Bin),
    str(R1, R1, 0, [Char, binary:part(Start, 0, Len) | Acc]);
str(<<C, R/binary>>, Start, Len, Acc) when C >= 16#20, C < 16#80 ->
    str(R, Start, Len + 1, Acc);
str(<<C/utf8, R/binary>>, Start, Len, Acc) when C >= 16#80 ->
    str(R, Start, Len + utf8_size(C), Acc);
str(Bin, _Start, _Len, _Acc) ->
    fail(syntax, Bin).

unescape(<<$", R/binary>>, _) -> {$", R};
unescape(<<$\\, R/binary>>, _) -> {$\\, R};
unescape(<<$/, R/binary>>, _) -> {$/, R};
unescape(<<$b, R/binary>>, _) -> {$\b, R};
unescape(<<$f, R/binary>>, _) -> {$\f, R};
unescape(<<$n, R/binary>>, _) -> {$\n, R};
unescape(<<$r, R/binary>>, _) -> {$\r, R};
unescape(<<$t, R/binary>>, _) -> {$\t, R};
unescape(<<$u, R/binary>>, Bin) ->
    case hex4(R, Bin) of
        {Hi, <<"\\u", R1/binary>>} when Hi >= 16#D800, Hi =< 16#DBFF ->
            case hex4(R1, Bin) of
                {Lo, R2} when Lo >= 16#DC00, Lo =< 16#DFFF ->
                    {<<(16#10000 + ((Hi - 16#D800) bsl 10) + (Lo - 16#DC00))/utf8>>, R2};
                _ ->
                    fail(syntax, Bin)
            end;
        {C, _} when C >= 16#D800, C =< 16#DFFF ->
            fail(syntax, Bin);
        {C, R1} ->
            {<<C/utf8>>, R1}
    end;
unescape(_, Bin) ->
    fail(syntax, Bin).

hex4(<<A, B, C, D, R/binary>>, Bin) ->
    {(unhex(A, Bin) bsl 12) bor (unhex(B, Bin) bsl 8) bor (unhex(C, Bin) bsl 4)
         bor unhex(D, Bin), R};
hex4(_, Bin) ->
    fail(syntax, Bin).

unhex(C, _) when ?IS_HEX(C) -> ?HEX_VALUE(C);
unhex(_, Bin) -> fail(syntax, Bin).

%% Numbers (§6): `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?'.
%% The scan returns the literal's length and, for a float without a
%% fraction, where its exponent starts: binary_to_float needs a fraction,
%% so `1e5' is read as `1.0e5'.
number(Bin) ->
    {Len, Kind} = scan_number(Bin),
    Len =< ?MAX_NUMBER orelse fail(number_out_of_range, Bin),
    <<Lit:Len/binary, Rest/binary>> = Bin,
    case Kind of
        integer ->
            {binary_to_integer(Lit), Rest};
        _ ->
            Text = case Kind of
                       fraction -> Lit;
                       {no_fraction, ExpAt} ->
                           <<Mant:ExpAt/binary, Exp/binary>> = Lit,
                           <<Mant/binary, ".0", Exp/binary>>
                   end,
            try binary_to_float(Text) of
                F -> {F, Rest}
            catch
                error:badarg -> fail(number_out_of_range, Bin)
            end
    end.

scan_number(Bin) ->
    I0 = case Bin of
             <<$-, _/binary>> -> 1;
             _ -> 0
         end,
    I1 = case Bin of
             <<_:I0/binary, $0, _/binary>> -> I0 + 1;
             <<_:I0/binary, C, _/binary>> when C >= $1, C =< $9 -> digits(Bin, I0 + 1);
             _ -> fail(syntax, from(Bin, I0))
         end,
    {I2, Fraction} = case Bin of
                         <<_:I1/binary, $., C1, _/binary>> when ?IS_DIGIT(C1) ->
                             {digits(Bin, I1 + 2), true};
                         <<_:I1/binary, $., _/binary>> ->
                             fail(syntax, from(Bin, I1 + 1));
                         _ ->
                             {I1, false}
                     end,
    case Bin of
        <<_:I2/binary, E, _/binary>> when E =:= $e; E =:= $E ->
            I3 = case Bin of
                     <<_:I2/binary, _, S, _/binary>> when S =:= $+; S =:= $- -> I2 + 2;
                     _ -> I2 + 1
                 end,
            case Bin of
                <<_:I3/binary, C2, _/binary>> when ?IS_DIGIT(C2), Fraction ->
                    {digits(Bin, I3 + 1), fraction};
                <<_:I3/binary, C2, _/binary>> when ?IS_DIGIT(C2) ->
                    {digits(Bin, I3 + 1), {no_fraction, I2}};
                _ ->
                    fail(syntax, from(Bin, I3))
            end;
        _ when Fraction ->
            {I2, fraction};
        _ ->
            {I2, integer}
    end.

%% The index of the first non-digit at or after `I'.
digits(Bin, I) ->
    case Bin of
        <<_:I/binary, C, _/binary>> when ?IS_DIGIT(C) -> digits(Bin, I + 1);
        _ -> I
    end.

from(Bin, I) ->
    binary:part(Bin, I, byte_size(Bin) - I).
