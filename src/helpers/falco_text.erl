%% @doc Byte-level text helpers for field values.
%%
%% Field values may hold any byte but CR, LF and NUL (RFC 9110 §5.5 allows
%% obs-text, 0x80-0xFF), so they are not necessarily UTF-8, and the
%% `string' module raises on invalid UTF-8. These helpers work on bytes:
%% ASCII lowercasing (field names, tokens and the like are
%% case-insensitive ASCII, RFC 9110 §5.1, §5.6.2), trimming of optional
%% whitespace (SP and HTAB, §5.6.3) and splitting of comma lists (§5.6.1).
-module(falco_text).

-export([lower/1, trim/1, list/1]).

%% @doc ASCII lowercase; other bytes unchanged.
-spec lower(binary()) -> binary().
lower(Bin) ->
    case needs_lower(Bin) of
        true -> << <<(lower_char(C))>> || <<C>> <= Bin >>;
        false -> Bin
    end.

needs_lower(<<C, _/binary>>) when C >= $A, C =< $Z -> true;
needs_lower(<<_, R/binary>>) -> needs_lower(R);
needs_lower(<<>>) -> false.

lower_char(C) when C >= $A, C =< $Z -> C + 32;
lower_char(C) -> C.

%% @doc Strips leading and trailing SP and HTAB.
-spec trim(binary()) -> binary().
trim(Bin) ->
    trim_right(trim_left(Bin)).

trim_left(<<C, R/binary>>) when C =:= $\s; C =:= $\t -> trim_left(R);
trim_left(B) -> B.

trim_right(<<>>) -> <<>>;
trim_right(B) ->
    case binary:last(B) of
        C when C =:= $\s; C =:= $\t -> trim_right(binary:part(B, 0, byte_size(B) - 1));
        _ -> B
    end.

%% @doc The members of a comma-separated list, trimmed and lowercased,
%% empty members dropped: `<<"Gzip , ,br">>' gives `[<<"gzip">>, <<"br">>]'.
-spec list(iodata()) -> [binary()].
list(Value) ->
    Members = [trim(P) || P <- binary:split(iolist_to_binary(Value), <<",">>, [global])],
    [lower(M) || M <- Members, M =/= <<>>].
