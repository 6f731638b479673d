%% bench_json: a small JSON decoder (OTP 25 has no json module), enough
%% for oha's report: objects become maps with binary keys, arrays lists,
%% strings binaries, numbers integers or floats, and true/false/null atoms.
-module(bench_json).

-export([decode/1]).

-spec decode(binary()) -> term().
decode(Bin) ->
    {V, Rest} = value(ws(Bin)),
    <<>> = ws(Rest),
    V.

ws(<<C, R/binary>>) when C =:= $\s; C =:= $\t; C =:= $\n; C =:= $\r -> ws(R);
ws(B) -> B.

value(<<${, R/binary>>) -> object(ws(R), #{});
value(<<$[, R/binary>>) -> array(ws(R), []);
value(<<$", R/binary>>) -> string(R, []);
value(<<"true", R/binary>>) -> {true, R};
value(<<"false", R/binary>>) -> {false, R};
value(<<"null", R/binary>>) -> {null, R};
value(B) -> number(B).

object(<<$}, R/binary>>, M) -> {M, R};
object(B, M) ->
    <<$", R0/binary>> = B,
    {K, R1} = string(R0, []),
    <<$:, R2/binary>> = ws(R1),
    {V, R3} = value(ws(R2)),
    case ws(R3) of
        <<$,, R4/binary>> -> object(ws(R4), M#{K => V});
        <<$}, R4/binary>> -> {M#{K => V}, R4}
    end.

array(<<$], R/binary>>, Acc) -> {lists:reverse(Acc), R};
array(B, Acc) ->
    {V, R1} = value(B),
    case ws(R1) of
        <<$,, R2/binary>> -> array(ws(R2), [V | Acc]);
        <<$], R2/binary>> -> {lists:reverse([V | Acc]), R2}
    end.

string(<<$", R/binary>>, Acc) -> {unicode:characters_to_binary(lists:reverse(Acc)), R};
string(<<$\\, $u, H:4/binary, R/binary>>, Acc) -> string(R, [binary_to_integer(H, 16) | Acc]);
string(<<$\\, C, R/binary>>, Acc) ->
    E = case C of
            $n -> $\n; $t -> $\t; $r -> $\r; $b -> $\b; $f -> $\f;
            Other -> Other
        end,
    string(R, [E | Acc]);
string(<<C/utf8, R/binary>>, Acc) -> string(R, [C | Acc]).

number(B) ->
    {match, [N]} = re:run(B, "^-?[0-9]+(?:\\.[0-9]+)?(?:[eE][-+]?[0-9]+)?", [{capture, first, binary}]),
    R = binary:part(B, byte_size(N), byte_size(B) - byte_size(N)),
    V = case binary:match(N, [<<".">>, <<"e">>, <<"E">>]) of
            nomatch -> binary_to_integer(N);
            _ -> float_of(N)
        end,
    {V, R}.

float_of(N) ->
    try binary_to_float(N)
    catch error:badarg ->
            %% "1e5" has no dot: Erlang wants one.
            [M, E] = binary:split(string:lowercase(N), <<"e">>),
            binary_to_float(<<M/binary, ".0e", E/binary>>)
    end.
