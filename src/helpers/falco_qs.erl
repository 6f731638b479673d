%% @doc Pure query-string and `application/x-www-form-urlencoded' codec
%% (WHATWG URL Standard §5 "application/x-www-form-urlencoded", with the
%% percent-encoding rules of RFC 3986 §2.1).
%%
%% {@link parse/2} is the WHATWG parser (§5.1): split on `&', skip empty
%% sequences, split each on its first `=' (a missing `=' gives an empty
%% value), turn `+' into a space, then percent-decode. Pairs are returned in
%% order and repeated keys are kept, so `a=1&a=2' gives both.
%%
%% Two choices, both options:
%% <ul>
%% <li>`percent': a `%' not followed by two hex digits is left as is, as the
%%     WHATWG percent-decoder says (`lenient', the default), or makes the whole
%%     parse fail with `{error, bad_percent}' (`strict').</li>
%% <li>`utf8': WHATWG decodes the bytes as UTF-8, replacing invalid sequences
%%     with U+FFFD. falco returns the bytes untouched by default (`keep'), as
%%     forms may declare another charset and a handler should see what was
%%     sent; `replace' gives the WHATWG result exactly (one U+FFFD per maximal
%%     ill-formed subpart, Unicode §3.9), `reject' gives `{error, bad_utf8}'.</li>
%% </ul>
%% `max_pairs' (default 1000) bounds the result: hostile input such as
%% `a&a&a&...' cannot make the parser allocate without limit, and the input
%% is never split all at once. Beyond it the parse is `{error, too_many_pairs}'.
%%
%% {@link encode/1} is the WHATWG serializer (§5.2): everything but ASCII
%% alphanumerics and `*-._' is percent-encoded, and a space becomes `+'.
%%
%% ```
%% {ok, [{<<"q">>, <<"erlang otp">>}, {<<"page">>, <<"2">>}]} =
%%     falco_qs:parse(<<"q=erlang+otp&page=2">>).
%% '''
-module(falco_qs).

-export([parse/1, parse/2, encode/1]).

-export_type([pairs/0, opts/0, reason/0]).

-type pairs() :: [{binary(), binary()}].
-type opts() :: #{max_pairs => non_neg_integer(),
                  percent => lenient | strict,
                  utf8 => keep | replace | reject}.
-type reason() :: too_many_pairs | bad_percent | bad_utf8.

-record(o, {max :: non_neg_integer(),
            strict :: boolean(),
            utf8 :: keep | replace | reject}).

-include("../core/falco_grammar.hrl").

%% Left alone by the urlencoded serializer (WHATWG URL §5.2, the
%% application/x-www-form-urlencoded percent-encode set's complement).
-define(IS_FORM_SAFE(C), (?IS_ALPHA(C) orelse ?IS_DIGIT(C) orelse C =:= $*
                          orelse C =:= $- orelse C =:= $. orelse C =:= $_)).

%% @doc Parses with the default options.
-spec parse(binary()) -> {ok, pairs()} | {error, reason()}.
parse(Bin) ->
    parse(Bin, #{}).

%% @doc Parses a query string (without the `?') or a urlencoded body.
-spec parse(binary(), opts()) -> {ok, pairs()} | {error, reason()}.
parse(Bin, Opts) ->
    O = #o{max = maps:get(max_pairs, Opts, 1000),
           strict = maps:get(percent, Opts, lenient) =:= strict,
           utf8 = maps:get(utf8, Opts, keep)},
    try pairs(Bin, O, 0, []) of
        Pairs -> {ok, Pairs}
    catch
        throw:{?MODULE, Reason} -> {error, Reason}
    end.

%% One `&'-separated sequence at a time, in a single pass of binary matching
%% (binary:match/2 compiles its pattern on every call, which costs more than
%% scanning a short query string): the work done before the bound is reached
%% is proportional to the bound, not to the input. Names and values without
%% `%' or `+' are returned as sub-binaries of the input, undecoded.
pairs(<<>>, _O, _N, Acc) ->
    lists:reverse(Acc);
pairs(<<$&, Rest/binary>>, O, N, Acc) ->
    pairs(Rest, O, N, Acc);
pairs(_Bin, #o{max = Max}, N, _Acc) when N >= Max ->
    throw({?MODULE, too_many_pairs});
pairs(Bin, O, N, Acc) ->
    {Name, Rest} = name(Bin, Bin, 0, false, O),
    {Value, Rest1} = case Rest of
                         <<$=, V/binary>> -> value(V, V, 0, false, O);
                         _ -> {<<>>, Rest}
                     end,
    pairs(Rest1, O, N + 1, [{Name, Value} | Acc]).

%% `Len' bytes of `Orig' so far, `Dirty' once a `%' or `+' is seen. A name
%% stops at `=' or `&' (the `=' is left for the caller), a value at `&'.
name(<<C, _/binary>> = Rest, Orig, Len, Dirty, O) when C =:= $=; C =:= $& ->
    {finish(Orig, Len, Dirty, O), Rest};
name(<<C, R/binary>>, Orig, Len, Dirty, O) ->
    name(R, Orig, Len + 1, Dirty orelse C =:= $% orelse C =:= $+, O);
name(<<>>, Orig, Len, Dirty, O) ->
    {finish(Orig, Len, Dirty, O), <<>>}.

value(<<$&, _/binary>> = Rest, Orig, Len, Dirty, O) ->
    {finish(Orig, Len, Dirty, O), Rest};
value(<<C, R/binary>>, Orig, Len, Dirty, O) ->
    value(R, Orig, Len + 1, Dirty orelse C =:= $% orelse C =:= $+, O);
value(<<>>, Orig, Len, Dirty, O) ->
    {finish(Orig, Len, Dirty, O), <<>>}.

finish(Orig, Len, false, #o{utf8 = U}) ->
    utf8(binary:part(Orig, 0, Len), U);
finish(Orig, Len, true, #o{strict = Strict, utf8 = U}) ->
    utf8(unescape(binary:part(Orig, 0, Len), Strict, <<>>), U).

unescape(<<$+, Rest/binary>>, Strict, Acc) ->
    unescape(Rest, Strict, <<Acc/binary, $\s>>);
unescape(<<$%, H, L, Rest/binary>> = Bin, Strict, Acc) ->
    case {falco_grammar:hex_value(H), falco_grammar:hex_value(L)} of
        {Hi, Lo} when is_integer(Hi), is_integer(Lo) ->
            unescape(Rest, Strict, <<Acc/binary, (Hi * 16 + Lo)>>);
        _ ->
            bad_percent(Bin, Strict, Acc)
    end;
unescape(<<$%, _/binary>> = Bin, Strict, Acc) ->
    bad_percent(Bin, Strict, Acc);
unescape(<<C, Rest/binary>>, Strict, Acc) ->
    unescape(Rest, Strict, <<Acc/binary, C>>);
unescape(<<>>, _Strict, Acc) ->
    Acc.

%% WHATWG URL §1.3 percent-decode: a `%' without two hex digits is a byte.
bad_percent(_, true, _) ->
    throw({?MODULE, bad_percent});
bad_percent(<<$%, Rest/binary>>, false, Acc) ->
    unescape(Rest, false, <<Acc/binary, $%>>).

%% -- UTF-8 (WHATWG Encoding "UTF-8 decode without BOM", Unicode §3.9) -------

utf8(Bin, keep) ->
    Bin;
utf8(Bin, reject) ->
    case valid_utf8(Bin) of
        true -> Bin;
        false -> throw({?MODULE, bad_utf8})
    end;
utf8(Bin, replace) ->
    case valid_utf8(Bin) of
        true -> Bin;
        false -> replace(Bin, <<>>)
    end.

valid_utf8(<<C, Rest/binary>>) when C < 16#80 -> valid_utf8(Rest);
valid_utf8(<<_/utf8, Rest/binary>>) -> valid_utf8(Rest);
valid_utf8(<<>>) -> true;
valid_utf8(_) -> false.

%% Each maximal subpart of an ill-formed sequence becomes one U+FFFD: the
%% lead byte and as many continuation bytes as are still valid for it
%% (Unicode Table 3-7).
replace(<<C, Rest/binary>>, Acc) when C < 16#80 ->
    replace(Rest, <<Acc/binary, C>>);
replace(<<C/utf8, Rest/binary>>, Acc) ->
    replace(Rest, <<Acc/binary, C/utf8>>);
replace(<<Lead, Rest/binary>>, Acc) ->
    Skip = case second_range(Lead) of
               none -> 0;
               {Need, Lo, Hi} -> subpart(Rest, Need, Lo, Hi, 0)
           end,
    <<_:Skip/binary, Rest1/binary>> = Rest,
    replace(Rest1, <<Acc/binary, 16#FFFD/utf8>>);
replace(<<>>, Acc) ->
    Acc.

%% How many continuation bytes a lead byte takes, and the range of the first.
second_range(C) when C >= 16#C2, C =< 16#DF -> {1, 16#80, 16#BF};
second_range(16#E0) -> {2, 16#A0, 16#BF};
second_range(16#ED) -> {2, 16#80, 16#9F};
second_range(C) when C >= 16#E1, C =< 16#EF -> {2, 16#80, 16#BF};
second_range(16#F0) -> {3, 16#90, 16#BF};
second_range(C) when C >= 16#F1, C =< 16#F3 -> {3, 16#80, 16#BF};
second_range(16#F4) -> {3, 16#80, 16#8F};
second_range(_) -> none.

subpart(<<C, Rest/binary>>, Need, Lo, Hi, N) when N < Need, C >= Lo, C =< Hi ->
    subpart(Rest, Need, 16#80, 16#BF, N + 1);
subpart(_, _, _, _, N) ->
    N.

%% -- serializer (WHATWG URL §5.2) --------------------------------------------

%% @doc Serializes pairs as `application/x-www-form-urlencoded':
%% `[{<<"a b">>, <<"x&y">>}, {<<"c">>, <<>>}]' gives `<<"a+b=x%26y&c=">>'.
-spec encode(pairs()) -> binary().
encode([]) ->
    <<>>;
encode([{K, V} | Rest]) ->
    iolist_to_binary([escape(K), $=, escape(V)
                      | [[$&, escape(K1), $=, escape(V1)] || {K1, V1} <- Rest]]).

escape(Bin) ->
    << <<(escape_byte(C))/binary>> || <<C>> <= Bin >>.

escape_byte(C) when ?IS_FORM_SAFE(C) -> <<C>>;
escape_byte($\s) -> <<$+>>;
escape_byte(C) -> <<$%, (hex(C bsr 4)), (hex(C band 15))>>.

hex(N) when N < 10 -> $0 + N;
hex(N) -> $A + N - 10.
