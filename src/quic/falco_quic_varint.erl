%% @doc QUIC's variable-length integers (RFC 9000 §16): 1, 2, 4 or 8
%% bytes, the two top bits giving the length, values up to 2^62 - 1. Used
%% by QUIC's packets, frames and transport parameters and by HTTP/3's
%% frames. Pure; a decode of too few bytes returns `more', never raises.
%%
%% @private internal to falco
-module(falco_quic_varint).

-export([encode/1, decode/1, size/1]).
-export_type([varint/0]).

-define(MAX, 16#3fffffffffffffff).

-type varint() :: 0..?MAX.

%% @doc The shortest encoding of N.
-spec encode(varint()) -> binary().
encode(N) when is_integer(N), N >= 0 -> enc(N).

enc(N) when N < 16#40 -> <<0:2, N:6>>;
enc(N) when N < 16#4000 -> <<1:2, N:14>>;
enc(N) when N < 16#40000000 -> <<2:2, N:30>>;
enc(N) when N =< ?MAX -> <<3:2, N:62>>.

%% @doc The integer at the start of Bin and the bytes after it, or
%% `more' when Bin ends inside it (any encoding length is accepted, as
%% §16 allows: a value need not use its shortest form).
-spec decode(binary()) -> {varint(), binary()} | more.
decode(<<0:2, N:6, Rest/binary>>) -> {N, Rest};
decode(<<1:2, N:14, Rest/binary>>) -> {N, Rest};
decode(<<2:2, N:30, Rest/binary>>) -> {N, Rest};
decode(<<3:2, N:62, Rest/binary>>) -> {N, Rest};
decode(_) -> more.

%% @doc The length in bytes of encode(N).
-spec size(varint()) -> 1 | 2 | 4 | 8.
size(N) when N >= 0, N < 16#40 -> 1;
size(N) when N < 16#4000 -> 2;
size(N) when N < 16#40000000 -> 4;
size(N) when N =< ?MAX -> 8.
