%% @doc Content codings: gzip and deflate responses negotiated per
%% Accept-Encoding, and optionally decoded request bodies (RFC 9110 §8.4,
%% §12.5.3).
%%
%% As a middleware (`{falco_compress, Opts}', or {@link call/3} by hand) it
%% compresses the handler's response when the client accepts a coding we
%% have (q-values honoured, `x-gzip' taken as gzip per §8.4.1.3, `*'
%% standing for any coding not named, `identity;q=0' and `*;q=0' ruling the
%% uncompressed form out), the status may carry content (not 1xx, 204, 206,
%% 304), no Content-Encoding or Content-Range is set (no double
%% compression, no re-coding of a range), `Cache-Control: no-transform' is
%% absent, the media type is compressible and a full body has at least
%% `min_size' bytes. A compressed reply gets Content-Encoding, its ETag
%% weakened (§8.8.3: a strong tag names exact bytes; If-None-Match still
%% matches weakly), Accept-Ranges dropped and Content-Length recomputed by
%% the pipeline; every reply whose type is compressible gets `Vary:
%% Accept-Encoding' (§12.5.5), so caches keep the variants apart. When
%% nothing the client accepts can be sent a 2xx becomes 406 (§15.5.7).
%% Streamed replies are compressed as they go, with a sync flush after
%% each piece so event streams stay live; HEAD gets the same fields as GET.
%% File replies are sent as they are (sendfile); {@link falco_static}
%% serves precompressed siblings instead.
%%
%% With `decode_request => true' a request body in gzip or deflate is
%% inflated as the handler reads it: the request seen by the handler has no
%% Content-Encoding, inflation is incremental (`zlib:safeInflate/2'), and
%% more than `max_inflated' bytes of output is a 413, so a small bomb cannot
%% take memory; corrupt or truncated data is a 400 and an unknown coding
%% a 415 with Accept-Encoding (§15.5.16). A gzip body may hold several
%% members (RFC 1952 §2.2): each is inflated, in turn, under the one
%% `max_inflated' bound; bytes after the last member that do not start
%% another one, or any bytes after a deflate stream, are a 400, never
%% silently dropped.
-module(falco_compress).

-export([call/3, negotiate/2, parse_accept_encoding/1, compressible/2, compress/3,
         decode_request/2]).
%% request-body stream wrapper (see falco_stream: read_body/2, trailers/1)
-export([read_body/2, trailers/1]).

-export_type([opts/0, coding/0]).

-type coding() :: binary().
-type opts() :: #{min_size => non_neg_integer(),
                  level => 0..9,
                  codings => [coding()],
                  types => [binary()] | fun((binary()) -> boolean()),
                  flush => sync | none,
                  decode_request => boolean(),
                  max_inflated => non_neg_integer()}.
-type next() :: fun((falco_req:req()) -> falco_handler:response()).

%% The inflating body stream: its state is carried by the request like
%% any stream state (a read returns the new one).
-record(inflate, {z :: zlib:zstream(),
                  inner :: {module(), falco_stream:state()},
                  pending = [] :: iodata(),
                  queued = false :: boolean(),
                  input_done = false :: boolean(),
                  out = 0 :: non_neg_integer(),
                  max :: non_neg_integer(),
                  reads :: falco_stream:reads(),
                  read_no = 0 :: non_neg_integer()}).
-opaque state() :: #inflate{}.
-export_type([state/0]).

-define(MIN_SIZE, 1024).
-define(MAX_INFLATED, 10485760).
-define(READ, 65536).
-define(TYPES, [<<"text/*">>, <<"application/json">>, <<"application/javascript">>,
                <<"application/x-javascript">>, <<"application/ecmascript">>,
                <<"application/xml">>, <<"application/xhtml+xml">>, <<"application/rss+xml">>,
                <<"application/atom+xml">>, <<"application/x-ndjson">>,
                <<"application/wasm">>, <<"application/manifest+json">>,
                <<"application/ld+json">>, <<"application/problem+json">>,
                <<"application/vnd.ms-fontobject">>, <<"font/ttf">>, <<"font/otf">>,
                <<"image/svg+xml">>, <<"image/x-icon">>, <<"image/vnd.microsoft.icon">>,
                <<"image/bmp">>]).

%% -- the middleware ------------------------------------------------------------

%% @doc Runs `Next' and codes its response as the request asks. Options:
%% `min_size' (1024), `level' (zlib level, 6), `codings' (in our order of
%% preference, `[<<"gzip">>, <<"deflate">>]'), `types' (media types, `type/*'
%% wildcards allowed, or a predicate), `flush' (`sync' after each streamed
%% piece, or `none'), `decode_request' (false) and `max_inflated' (10 MiB).
-spec call(falco_req:req(), next(), opts()) -> falco_handler:response().
call(Req0, Next, Opts) ->
    case decode_request(Req0, Opts) of
        {ok, Req} ->
            Resp = try Next(Req)
                   after
                       ok = inflate_done(Req)
                   end,
            encode(Resp, Req, Opts);
        {error, Resp} ->
            Resp
    end.

encode({Status, Headers, Body} = Resp, Req, Opts) when is_integer(Status), is_list(Headers) ->
    %% File replies are sent as they are (sendfile), so they never vary.
    case (is_binary(Body) orelse is_list(Body)) andalso eligible(Status, Headers, Opts) of
        true -> full(Resp, Req, Opts);
        false -> Resp
    end;
encode({stream, Status, Headers, _Fun} = Resp, Req, Opts) when is_integer(Status), is_list(Headers) ->
    case eligible(Status, Headers, Opts) of
        true -> stream(Resp, Req, Opts);
        false -> Resp
    end;
encode(Resp, _Req, _Opts) ->
    Resp.

eligible(Status, Headers, Opts) ->
    Status >= 200 andalso Status =/= 204 andalso Status =/= 206 andalso Status =/= 304
        andalso field(<<"content-encoding">>, Headers) =:= undefined
        andalso field(<<"content-range">>, Headers) =:= undefined
        andalso not no_transform(field(<<"cache-control">>, Headers))
        andalso compressible(field(<<"content-type">>, Headers), Opts).

no_transform(undefined) -> false;
no_transform(CC) -> lists:member(<<"no-transform">>, falco_grammar:lower_elements(CC)).

full({Status, Headers, Body}, Req, Opts) ->
    case falco_pipeline:body_size(Body) of
        error ->
            %% Not iodata: left for the pipeline to refuse.
            {Status, Headers, Body};
        {ok, Size} ->
            Codings = acceptable(Req, Opts),
            case choose(Codings, Size >= maps:get(min_size, Opts, ?MIN_SIZE)) of
                identity ->
                    {Status, vary(Headers), Body};
                none when Status >= 300 ->
                    {Status, vary(Headers), Body};
                none ->
                    not_acceptable(Opts);
                Coding ->
                    Coded = compress(Coding, Body, Opts),
                    %% Not worth it when coding does not shrink the body.
                    case iolist_size(Coded) < Size orelse not lists:member(identity, Codings) of
                        true -> {Status, coded_headers(Coding, Headers), Coded};
                        false -> {Status, vary(Headers), Body}
                    end
            end
    end.

%% The coding to use: the client's first choice if it is worth compressing,
%% else the uncompressed form if acceptable, else any coding it accepts.
choose([], _Big) -> none;
choose([identity | _], _Big) -> identity;
choose([C | _], true) -> C;
choose(Codings, false) ->
    case lists:member(identity, Codings) of
        true -> identity;
        false -> hd(Codings)
    end.

stream({stream, Status, Headers, Fun}, Req, Opts) ->
    Codings = acceptable(Req, Opts),
    Big = case field(<<"content-length">>, Headers) of
              undefined -> true;
              Len -> binary_to_integer(Len) >= maps:get(min_size, Opts, ?MIN_SIZE)
          end,
    case choose(Codings, Big) of
        identity -> {stream, Status, vary(Headers), Fun};
        none when Status >= 300 -> {stream, Status, vary(Headers), Fun};
        none -> not_acceptable(Opts);
        Coding ->
            {stream, Status, coded_headers(Coding, Headers),
             fun(Send) -> deflate_stream(Coding, Fun, Send, Opts) end}
    end.

deflate_stream(Coding, Fun, Send, Opts) ->
    Z = zlib:open(),
    try
        ok = zlib:deflateInit(Z, maps:get(level, Opts, 6), deflated, wbits(Coding), 8, default),
        Flush = maps:get(flush, Opts, sync),
        Result = Fun(fun(Data) ->
                             case iolist_size(Data) of
                                 0 -> ok;
                                 _ -> Send(zlib:deflate(Z, Data, Flush))
                             end
                     end),
        _ = Send(zlib:deflate(Z, [], finish)),
        Result
    after
        zlib:close(Z)
    end.

not_acceptable(Opts) ->
    falco_errors:response({coding_not_acceptable, [<<"identity">> | codings(Opts)]}).

coded_headers(Coding, Headers) ->
    [{<<"content-encoding">>, Coding}
     | vary([weaken(F) || F = {N, _} <- Headers,
                          not is_field(N, [<<"content-length">>, <<"accept-ranges">>])])].

weaken({N, V} = F) ->
    case is_field(N, [<<"etag">>]) of
        true ->
            case iolist_to_binary(V) of
                <<$", _/binary>> = Strong -> {N, <<"W/", Strong/binary>>};
                _ -> F
            end;
        false -> F
    end.

%% Adds accept-encoding to Vary unless it is there (or Vary is "*").
vary(Headers) ->
    case [V || {N, V} <- Headers, is_field(N, [<<"vary">>])] of
        [] ->
            Headers ++ [{<<"vary">>, <<"accept-encoding">>}];
        Values ->
            Tokens = lists:append([falco_grammar:lower_elements(V) || V <- Values]),
            case lists:member(<<"accept-encoding">>, Tokens) orelse lists:member(<<"*">>, Tokens) of
                true -> Headers;
                false -> Headers ++ [{<<"vary">>, <<"accept-encoding">>}]
            end
    end.

%% -- negotiation (RFC 9110 §12.5.3) --------------------------------------------

acceptable(Req, Opts) ->
    negotiate(falco_req:header(<<"accept-encoding">>, Req), codings(Opts)).

codings(Opts) ->
    maps:get(codings, Opts, [<<"gzip">>, <<"deflate">>]).

%% @doc The forms of the content the client accepts, best first: coding
%% names from `Available' and `identity'. Codings with equal weight keep the
%% order of `Available', and come before `identity'. `[]' means nothing is
%% acceptable. No Accept-Encoding field means only `identity' is offered (it
%% is always acceptable then, §12.5.3, and compressing unasked is not done).
-spec negotiate(binary() | undefined, [coding()]) -> [coding() | identity].
negotiate(undefined, _Available) ->
    [identity];
negotiate(Header, Available) ->
    Prefs = parse_accept_encoding(Header),
    Star = proplists:get_value(<<"*">>, Prefs),
    Weighted = [{q(C, Prefs, Star, 0), C} || C <- Available]
        ++ [{q(<<"identity">>, Prefs, Star, 1000), identity}],
    Indexed = lists:zip(lists:seq(1, length(Weighted)), Weighted),
    Sorted = lists:sort(fun({I, {Q1, _}}, {J, {Q2, _}}) -> Q1 > Q2 orelse (Q1 =:= Q2 andalso I =< J) end,
                        Indexed),
    [C || {_, {Q, C}} <- Sorted, Q > 0].

%% An explicit entry wins; then "*" (§12.5.3: any coding not listed); else
%% the default (identity is acceptable unless excluded).
q(C, Prefs, Star, Default) ->
    case proplists:get_value(C, Prefs) of
        undefined when C =:= <<"gzip">> ->
            case proplists:get_value(<<"x-gzip">>, Prefs) of
                undefined -> star(Star, Default);
                Q -> Q
            end;
        undefined -> star(Star, Default);
        Q -> Q
    end.

star(undefined, Default) -> Default;
star(Q, _Default) -> Q.

%% @doc Parses Accept-Encoding into `[{Coding, Q}]', codings lowercased and
%% weights in thousandths (RFC 9110 §12.4.2 qvalue). Malformed members are
%% skipped; for a repeated coding the first member counts.
-spec parse_accept_encoding(binary()) -> [{binary(), 0..1000}].
parse_accept_encoding(Header) ->
    Members = [member(M) || M <- binary:split(Header, <<",">>, [global])],
    dedup([M || {_, _} = M <- Members], []).

dedup([{C, Q} | T], Acc) ->
    case lists:keymember(C, 1, Acc) of
        true -> dedup(T, Acc);
        false -> dedup(T, [{C, Q} | Acc])
    end;
dedup([], Acc) ->
    lists:reverse(Acc).

member(M) ->
    [Coding | Params] = [falco_grammar:trim(P) || P <- binary:split(M, <<";">>, [global])],
    case falco_grammar:is_token(Coding) of
        true ->
            case weight(Params) of
                {ok, Q} -> {falco_grammar:lower(Coding), Q};
                error -> skip
            end;
        false ->
            skip
    end.

weight([]) -> {ok, 1000};
weight([<<Q, "=", V/binary>> | _]) when Q =:= $q; Q =:= $Q -> qvalue(V);
weight([_ | T]) -> weight(T).

qvalue(<<"1">>) -> {ok, 1000};
qvalue(<<"1.", Z/binary>>) when byte_size(Z) =< 3 ->
    case Z =:= binary:copy(<<"0">>, byte_size(Z)) of
        true -> {ok, 1000};
        false -> error
    end;
qvalue(<<"0">>) -> {ok, 0};
qvalue(<<"0.", D/binary>>) when byte_size(D) =< 3 ->
    case falco_grammar:is_digits(D) of
        true -> {ok, binary_to_integer(D) * pow10(3 - byte_size(D))};
        false when D =:= <<>> -> {ok, 0};
        false -> error
    end;
qvalue(_) -> error.

pow10(0) -> 1;
pow10(1) -> 10;
pow10(2) -> 100.

%% @doc Whether a Content-Type value names a compressible media type.
-spec compressible(binary() | undefined, opts()) -> boolean().
compressible(undefined, _Opts) ->
    false;
compressible(ContentType, Opts) ->
    [Type0 | _] = binary:split(ContentType, <<";">>),
    Type = falco_grammar:lower(falco_grammar:trim(Type0)),
    case maps:get(types, Opts, ?TYPES) of
        Pred when is_function(Pred, 1) -> Pred(Type);
        Types -> lists:any(fun(T) -> type_match(T, Type) end, Types)
    end.

type_match(Pattern, Type) ->
    case binary:split(Pattern, <<"/*">>) of
        [Main, <<>>] -> binary:longest_common_prefix([<<Main/binary, "/">>, Type]) =:= byte_size(Main) + 1;
        _ -> Pattern =:= Type
    end.

%% @doc Compresses a whole body with `Coding' (`gzip' or `deflate', the
%% latter being the zlib format, RFC 9110 §8.4.1.2).
-spec compress(coding(), iodata(), opts()) -> iodata().
compress(Coding, Data, Opts) ->
    Z = zlib:open(),
    try
        ok = zlib:deflateInit(Z, maps:get(level, Opts, 6), deflated, wbits(Coding), 8, default),
        zlib:deflate(Z, Data, finish)
    after
        zlib:close(Z)
    end.

wbits(<<"gzip">>) -> 31;
wbits(<<"deflate">>) -> 15.

%% -- request bodies ------------------------------------------------------------

%% @doc With `decode_request => true': a request whose body is in gzip or
%% deflate gets a body stream that inflates it (see the module doc), and
%% loses its Content-Encoding and Content-Length fields. An unsupported
%% coding is `{error, Response415}'. Otherwise the request is unchanged.
-spec decode_request(falco_req:req(), opts()) ->
          {ok, falco_req:req()} | {error, falco_handler:response()}.
decode_request(Req, Opts) ->
    case maps:get(decode_request, Opts, false) of
        true ->
            case lists:append([falco_grammar:lower_elements(V)
                               || {<<"content-encoding">>, V} <- falco_req:headers(Req)]) of
                [] -> {ok, Req};
                [<<"identity">>] -> {ok, strip(Req)};
                [C] when C =:= <<"gzip">>; C =:= <<"x-gzip">>; C =:= <<"deflate">> ->
                    case falco_req:has_body(Req) of
                        true -> {ok, inflating(C, Req, maps:get(max_inflated, Opts, ?MAX_INFLATED))};
                        false -> {ok, strip(Req)}
                    end;
                _ ->
                    {error, falco_errors:response({unsupported_content_coding,
                                                   [<<"gzip">>, <<"deflate">>]})}
            end;
        false ->
            {ok, Req}
    end.

strip(Req = #{headers := Headers}) ->
    Req#{headers => [F || F = {N, _} <- Headers, N =/= <<"content-encoding">>,
                          N =/= <<"content-length">>]}.

inflating(Coding, Req = #{stream := Inner}, Max) ->
    Z = zlib:open(),
    %% What zlib does at the end of a stream with input left: `reset' reads
    %% the next gzip member (zlib:gunzip/1 does the same), `error' refuses
    %% what follows a deflate stream. The default, `cut', drops it silently.
    ok = case Coding of
             <<"deflate">> -> zlib:inflateInit(Z, 15, error);
             _ -> zlib:inflateInit(Z, 31, reset)
         end,
    I = #inflate{z = Z, inner = Inner, max = Max, reads = falco_stream:reads()},
    (strip(Req))#{stream => {?MODULE, I}}.

%% The zlib stream is the same in every state of the request: the one the
%% middleware made is the one to close.
inflate_done(#{stream := {?MODULE, #inflate{z = Z}}}) ->
    _ = zlib:close(Z),
    ok;
inflate_done(_Req) ->
    ok.

%% @private The request-body side of the stream interface, inflating.
-spec read_body(all | pos_integer(), state()) -> falco_stream:body_result().
read_body(Want, I0 = #inflate{reads = Reads, read_no = No0}) ->
    No = falco_stream:next_read(Reads, No0),
    {Tag, Data, I} = case Want of
                         all -> read_all(I0, []);
                         _ -> read_some(Want, I0)
                     end,
    {Tag, Data, I#inflate{read_no = No}}.

read_all(I0, Acc) ->
    case read_some(?READ, I0) of
        {more, Data, I} -> read_all(I, [Acc, Data]);
        {ok, Data, I} -> {ok, iolist_to_binary([Acc, Data]), I}
    end.

read_some(Want, I = #inflate{pending = P, queued = Queued, input_done = InDone}) ->
    case iolist_size(P) of
        N when N >= Want ->
            <<Data:Want/binary, Rest/binary>> = iolist_to_binary(P),
            {more, Data, I#inflate{pending = Rest}};
        _ when InDone, not Queued ->
            {ok, iolist_to_binary(P), I#inflate{pending = []}};
        N when N > 0, not Queued ->
            %% Hand out what we have before reading (and waiting) again.
            {more, iolist_to_binary(P), I#inflate{pending = []}};
        _ ->
            read_some(Want, inflate_step(I))
    end.

%% One bounded step: inflate more of the queued input, or read more input.
inflate_step(I = #inflate{z = Z, queued = true}) ->
    ended(inflated(safe_inflate(Z, []), I));
inflate_step(I0 = #inflate{z = Z, inner = {Mod, S0}}) ->
    case Mod:read_body(?READ, S0) of
        {more, In, S} ->
            inflated(safe_inflate(Z, In), I0#inflate{inner = {Mod, S}});
        {ok, In, S} ->
            ended(inflated(safe_inflate(Z, In), I0#inflate{inner = {Mod, S}, input_done = true}))
    end.

%% All input read and inflated: a stream that did not end is truncated.
ended(I = #inflate{input_done = true, queued = false, z = Z}) ->
    try zlib:inflateEnd(Z)
    catch error:_ -> bad_data()
    end,
    I;
ended(I) ->
    I.

safe_inflate(Z, In) ->
    try zlib:safeInflate(Z, In)
    catch error:_ -> bad_data()
    end.

-spec bad_data() -> no_return().
bad_data() ->
    throw({falco_error, {bad_request, bad_content_encoding}}).

inflated({Tag, Out}, I = #inflate{out = Out0, max = Max, pending = P}) ->
    Total = Out0 + iolist_size(Out),
    ok = falco_stream:check_body(Total, Max),
    I#inflate{pending = [P | Out], out = Total, queued = Tag =:= continue}.

%% @private
-spec trailers(state()) -> [{binary(), binary()}].
trailers(#inflate{inner = {Mod, S}}) ->
    Mod:trailers(S).

%% -- helpers -----------------------------------------------------------------------

field(Name, Headers) ->
    case [V || {N, V} <- Headers, is_field(N, [Name])] of
        [V | _] -> iolist_to_binary(V);
        [] -> undefined
    end.

is_field(N, Names) ->
    lists:member(N, Names) orelse lists:member(falco_grammar:lower(N), Names).
