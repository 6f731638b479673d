%% @doc Pure URI path and component helpers (RFC 3986).
%%
%% Percent-decoding here is strict: a `%' that is not followed by two hex
%% digits is `{error, bad_percent}' (RFC 3986 §2.1), and `+' is a plus sign,
%% not a space (that rule belongs to forms, see {@link falco_qs}).
%% Percent-encoding uses upper-case hex (§2.1) and leaves only characters
%% that are safe in the component being built: `pchar' for a path segment
%% (§3.3), and for a query component the unreserved set (§2.3) plus the
%% sub-delims and gen-delims that neither RFC 3986 nor the WHATWG form parser
%% treat as separators (`&', `=', `+', `;', `,' and `#' are always encoded).
%%
%% {@link remove_dot_segments/1} is the algorithm of §5.2.4 and
%% {@link normalize/1} the syntax-based normalisation of §6.2.2 (hex case,
%% decoding of encoded unreserved characters, then dot segments).
%%
%% {@link split_path/1} is the primitive to map a request path onto a file
%% system or a route table without opening a traversal: it splits the
%% still-encoded path on `/', decodes each segment on its own, and refuses a
%% segment that decodes to `..', or that contains `/', `\' or NUL, so none of
%% `/a/../b', `/a/%2e%2e/b', `/%2e%2e%2fetc', `/..%5c..' or `/a%00.txt' gets
%% through. Empty and `.' segments are dropped; a caller that cares about a
%% trailing slash looks at the raw path.
-module(falco_uri).

-export([decode/1, encode_path_segment/1, encode_query/1, encode_path/1,
         remove_dot_segments/1, normalize/1, split_path/1]).

-export_type([split_error/0]).

-type split_error() :: not_absolute | bad_percent | dot_dot | encoded_slash
                     | backslash | nul.

%% unreserved (RFC 3986 §2.3) and pchar minus pct-encoded (§3.3)
-include("../core/falco_grammar.hrl").

%% What stays literal in a query key or value (see the module comment). The
%% set is also a subset of RFC 6265 cookie-octet, so the output is a valid
%% cookie value too.
-define(IS_QCHAR(C), (?IS_UNRESERVED(C) orelse C =:= $! orelse C =:= $$
                      orelse C =:= $' orelse C =:= $( orelse C =:= $) orelse C =:= $*
                      orelse C =:= $: orelse C =:= $@ orelse C =:= $/ orelse C =:= $?)).

%% -- percent-decoding (RFC 3986 §2.1) ----------------------------------------

%% @doc Decodes every `%XX' in `Bin'. Anything else is copied as is.
-spec decode(binary()) -> {ok, binary()} | {error, bad_percent}.
decode(Bin) ->
    plain(Bin, Bin, 0).

%% The common case, nothing encoded, returns the input itself. Binary
%% matching is used throughout rather than binary:match/2, which compiles its
%% pattern on every call and costs more than scanning a short path.
plain(<<$%, _/binary>> = Rest, Orig, Len) -> decode(Rest, binary:part(Orig, 0, Len));
plain(<<_, Rest/binary>>, Orig, Len) -> plain(Rest, Orig, Len + 1);
plain(<<>>, Orig, _Len) -> {ok, Orig}.

decode(<<$%, H, L, Rest/binary>>, Acc) ->
    case hex2(H, L) of
        error -> {error, bad_percent};
        Byte -> decode(Rest, <<Acc/binary, Byte>>)
    end;
decode(<<$%, _/binary>>, _Acc) ->
    {error, bad_percent};
decode(<<C, Rest/binary>>, Acc) ->
    decode(Rest, <<Acc/binary, C>>);
decode(<<>>, Acc) ->
    {ok, Acc}.

hex2(H, L) when ?IS_HEX(H), ?IS_HEX(L) -> ?HEX_VALUE(H) * 16 + ?HEX_VALUE(L);
hex2(_, _) -> error.

%% -- percent-encoding (RFC 3986 §2.1, §3.3, §3.4) ----------------------------

%% @doc Encodes `Bin' for use as one path segment: everything but `pchar' is
%% percent-encoded, including `/', `?', `#' and `%'. A segment that is
%% exactly `.' or `..' cannot be expressed in a URI at all (encoded dots
%% are still dots after §6.2.2.2), so do not name resources that way.
-spec encode_path_segment(binary()) -> binary().
encode_path_segment(Bin) ->
    << <<(if ?IS_PCHAR(C) -> <<C>>; true -> pct(C) end)/binary>> || <<C>> <= Bin >>.

%% @doc Encodes `Bin' for use as a query key or value. A space becomes `%20'
%% (both RFC 3986 and the form parser read it back as a space).
-spec encode_query(binary()) -> binary().
encode_query(Bin) ->
    << <<(if ?IS_QCHAR(C) -> <<C>>; true -> pct(C) end)/binary>> || <<C>> <= Bin >>.

%% @doc Builds an absolute path from raw segments, encoding each one:
%% `[<<"a b">>, <<"c/d">>]' gives `<<"/a%20b/c%2Fd">>', and `[]' gives `<<"/">>'.
-spec encode_path([binary()]) -> binary().
encode_path([]) ->
    <<"/">>;
encode_path(Segments) ->
    iolist_to_binary([[$/, encode_path_segment(S)] || S <- Segments]).

pct(C) ->
    <<$%, (hex(C bsr 4)), (hex(C band 15))>>.

hex(N) when N < 10 -> $0 + N;
hex(N) -> $A + N - 10.

%% -- dot segments (RFC 3986 §5.2.4) ------------------------------------------

%% @doc Removes `.' and `..' segments from a path, exactly as RFC 3986
%% §5.2.4 does: `<<"/a/b/c/./../../g">>' gives `<<"/a/g">>'. A `..' at the
%% root is dropped, never allowed to climb. Percent-encoded dots are not
%% dots here; use {@link normalize/1} to decode them first.
-spec remove_dot_segments(binary()) -> binary().
remove_dot_segments(Path) ->
    iolist_to_binary(lists:reverse(rds(Path, []))).

%% The output buffer is kept as a reversed list of segments, each with its
%% leading "/" if it had one, so rule C's "remove the last segment" is a pop.
rds(<<"../", R/binary>>, Out) -> rds(R, Out);                 % A
rds(<<"./", R/binary>>, Out) -> rds(R, Out);                  % A
rds(<<"/./", R/binary>>, Out) -> rds(<<$/, R/binary>>, Out);  % B
rds(<<"/.">>, Out) -> rds(<<"/">>, Out);                      % B
rds(<<"/../", R/binary>>, Out) -> rds(<<$/, R/binary>>, pop(Out)); % C
rds(<<"/..">>, Out) -> rds(<<"/">>, pop(Out));                % C
rds(<<".">>, Out) -> Out;                                     % D
rds(<<"..">>, Out) -> Out;                                    % D
rds(<<>>, Out) -> Out;
rds(<<$/, R/binary>>, Out) ->                                 % E
    {Seg, Rest} = segment(R),
    rds(Rest, [[$/, Seg] | Out]);
rds(Bin, Out) ->                                              % E
    {Seg, Rest} = segment(Bin),
    rds(Rest, [Seg | Out]).

pop([]) -> [];
pop([_ | T]) -> T.

segment(Bin) ->
    segment(Bin, 0).

segment(Bin, N) ->
    case Bin of
        <<_:N/binary, $/, _/binary>> -> split_binary(Bin, N);
        <<_:N/binary, _, _/binary>> -> segment(Bin, N + 1);
        _ -> {Bin, <<>>}
    end.

%% -- normalisation (RFC 3986 §6.2.2) -----------------------------------------

%% @doc Syntax-based normalisation of a path: percent-encoded unreserved
%% characters are decoded (§6.2.2.2), other escapes get upper-case hex
%% (§6.2.2.1), then dot segments are removed (§6.2.2.3). So
%% `<<"/a/%2e%2E/%7euser/%3f">>' gives `<<"/~user/%3F">>'.
-spec normalize(binary()) -> {ok, binary()} | {error, bad_percent}.
normalize(Path) ->
    case norm_pct(Path, <<>>) of
        {ok, P} -> {ok, remove_dot_segments(P)};
        Error -> Error
    end.

norm_pct(<<$%, H, L, Rest/binary>>, Acc) ->
    case hex2(H, L) of
        error -> {error, bad_percent};
        C when ?IS_UNRESERVED(C) -> norm_pct(Rest, <<Acc/binary, C>>);
        C -> norm_pct(Rest, <<Acc/binary, (pct(C))/binary>>)
    end;
norm_pct(<<$%, _/binary>>, _Acc) ->
    {error, bad_percent};
norm_pct(<<C, Rest/binary>>, Acc) ->
    norm_pct(Rest, <<Acc/binary, C>>);
norm_pct(<<>>, Acc) ->
    {ok, Acc}.

%% -- safe splitting ----------------------------------------------------------

%% @doc Splits an absolute, still percent-encoded path into decoded segments,
%% refusing anything that could climb out of a root directory or smuggle a
%% separator: `<<"/a/b%20c/">>' gives `{ok, [<<"a">>, <<"b c">>]}', while
%% `<<"/a/%2e%2e/b">>' is `{error, dot_dot}' and `<<"/a%2fb">>' is
%% `{error, encoded_slash}'. Empty and `.' segments are dropped. `..' is
%% refused rather than resolved: a well-behaved client has already removed
%% dot segments (RFC 3986 §5.2), so one on the wire is an attack or a bug.
-spec split_path(binary()) -> {ok, [binary()]} | {error, split_error()}.
split_path(<<$/, Path/binary>>) ->
    segments(Path, Path, 0, false, []);
split_path(_) ->
    {error, not_absolute}.

%% One pass over the path: `Len' bytes of the current segment seen, `Pct'
%% once it holds a `%'. A raw `\' or NUL is refused at once; encoded ones
%% are refused while decoding.
segments(<<$/, R/binary>>, Orig, Len, Pct, Acc) ->
    case segment(Orig, Len, Pct) of
        skip -> segments(R, R, 0, false, Acc);
        {ok, Seg} -> segments(R, R, 0, false, [Seg | Acc]);
        Error -> Error
    end;
segments(<<$%, R/binary>>, Orig, Len, _Pct, Acc) ->
    segments(R, Orig, Len + 1, true, Acc);
segments(<<$\\, _/binary>>, _Orig, _Len, _Pct, _Acc) ->
    {error, backslash};
segments(<<0, _/binary>>, _Orig, _Len, _Pct, _Acc) ->
    {error, nul};
segments(<<_, R/binary>>, Orig, Len, Pct, Acc) ->
    segments(R, Orig, Len + 1, Pct, Acc);
segments(<<>>, Orig, Len, Pct, Acc) ->
    case segment(Orig, Len, Pct) of
        skip -> {ok, lists:reverse(Acc)};
        {ok, Seg} -> {ok, lists:reverse(Acc, [Seg])};
        Error -> Error
    end.

segment(Orig, Len, false) ->
    classify(binary:part(Orig, 0, Len));
segment(Orig, Len, true) ->
    case decode_segment(binary:part(Orig, 0, Len), <<>>) of
        {ok, Seg} -> classify(Seg);
        Error -> Error
    end.

classify(<<>>) -> skip;
classify(<<".">>) -> skip;
classify(<<"..">>) -> {error, dot_dot};
classify(Seg) -> {ok, Seg}.

decode_segment(<<$%, H, L, Rest/binary>>, Acc) ->
    case hex2(H, L) of
        error -> {error, bad_percent};
        $/ -> {error, encoded_slash};
        $\\ -> {error, backslash};
        0 -> {error, nul};
        Byte -> decode_segment(Rest, <<Acc/binary, Byte>>)
    end;
decode_segment(<<$%, _/binary>>, _Acc) ->
    {error, bad_percent};
decode_segment(<<C, Rest/binary>>, Acc) ->
    decode_segment(Rest, <<Acc/binary, C>>);
decode_segment(<<>>, Acc) ->
    {ok, Acc}.
