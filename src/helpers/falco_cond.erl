%% @doc Validators and conditional requests (RFC 9110 §8.8, §13).
%%
%% A handler describes the selected representation by its validators, an
%% entity tag and/or a modification time, and asks {@link check/3} whether
%% the request's preconditions let it proceed. The evaluation follows the
%% precedence of RFC 9110 §13.2.2: If-Match (strong comparison, §13.1.1),
%% else If-Unmodified-Since (§13.1.4) decide 412; then If-None-Match (weak
%% comparison, §13.1.2), else If-Modified-Since for GET and HEAD (§13.1.3)
%% decide 304 (412 for other methods). Dates that are not valid HTTP-dates,
%% have several members or lie in the future are ignored, as §13.1.3 and
%% §13.1.4 ask; an If-Match that cannot be parsed fails (it guards a
%% change, so it must not be taken as absent). A 304 carries only the
%% fields §15.4.5 lists (Cache-Control, Content-Location, ETag, Expires,
%% Vary, and Last-Modified when there is no ETag).
%%
%% The module also parses and formats entity tags (§8.8.3) and HTTP-dates
%% (§5.6.7: IMF-fixdate, and the obsolete RFC 850 and asctime forms on
%% input), and is a middleware ({@link call/3}) that gives full 200 replies
%% to GET and HEAD a strong ETag computed from their content and answers
%% their conditional requests.
-module(falco_cond).

-export([check/2, check/3, evaluate/2, headers/1, etag/1, etag/2, etag_of/1,
         parse_etag/1, parse_etags/1, strong_match/2, weak_match/2,
         http_date/1, parse_date/1, to_seconds/1]).
-export([call/3]).

-export_type([validators/0, time/0, etag/0, result/0]).

-type time() :: non_neg_integer() | calendar:datetime() | binary().
-type validators() :: #{etag => binary() | undefined, last_modified => time() | undefined}.
-type etag() :: {strong | weak, binary()}.
-type result() :: ok | not_modified | precondition_failed.

-define(EPOCH, 62167219200).

%% -- evaluation ----------------------------------------------------------------

%% @doc Evaluates the request's preconditions against `Validators' (the ETag
%% as sent in the ETag field, e.g. `<<"\"v1\"">>' or `<<"W/\"v1\"">>', and
%% the modification time as Unix seconds, a UTC datetime or an HTTP-date).
%% Call it only for a representation that exists and would get a 2xx.
-spec evaluate(falco_req:req(), validators()) -> result().
evaluate(Req, V) ->
    case falco_req:method(Req) of
        M when M =:= <<"CONNECT">>; M =:= <<"OPTIONS">>; M =:= <<"TRACE">> -> ok;
        M -> evaluate(M, Req, etag_value(V), time_value(V))
    end.

evaluate(Method, Req, ETag, LastMod) ->
    Get = Method =:= <<"GET">> orelse Method =:= <<"HEAD">>,
    Step1 = case falco_req:header(<<"if-match">>, Req) of
                undefined ->
                    case date_header(<<"if-unmodified-since">>, Req) of
                        {ok, Unmodified} when LastMod =/= undefined, LastMod > Unmodified -> false;
                        _ -> true
                    end;
                IfMatch ->
                    case parse_etags(IfMatch) of
                        {ok, any} -> true;
                        {ok, MatchTags} ->
                            ETag =/= undefined andalso
                                lists:any(fun(T) -> strong_match(T, ETag) end, MatchTags);
                        {error, _} -> false
                    end
            end,
    case Step1 of
        false ->
            precondition_failed;
        true ->
            case falco_req:header(<<"if-none-match">>, Req) of
                undefined when Get ->
                    case date_header(<<"if-modified-since">>, Req) of
                        {ok, Date} when LastMod =/= undefined, LastMod =< Date -> not_modified;
                        _ -> ok
                    end;
                undefined ->
                    ok;
                IfNoneMatch ->
                    Matches = case parse_etags(IfNoneMatch) of
                                  {ok, any} -> true;
                                  {ok, Tags} -> ETag =/= undefined andalso
                                                    lists:any(fun(T) -> weak_match(T, ETag) end, Tags);
                                  {error, _} -> false
                              end,
                    case Matches of
                        true when Get -> not_modified;
                        true -> precondition_failed;
                        false -> ok
                    end
            end
    end.

etag_value(V) ->
    case maps:get(etag, V, undefined) of
        undefined -> undefined;
        Bin ->
            case parse_etag(Bin) of
                {ok, T} -> T;
                {error, _} -> undefined
            end
    end.

time_value(V) ->
    case maps:get(last_modified, V, undefined) of
        undefined -> undefined;
        T ->
            case to_seconds(T) of
                {ok, S} -> S;
                error -> undefined
            end
    end.

%% A date precondition: one valid HTTP-date, not in the future.
date_header(Name, Req) ->
    case [V || {N, V} <- falco_req:headers(Req), N =:= Name] of
        [Value] ->
            case parse_date(Value) of
                {ok, D} ->
                    case D =< erlang:system_time(second) of
                        true -> {ok, D};
                        false -> error
                    end;
                error -> error
            end;
        _ ->
            error
    end.

%% @doc Same as `check(Req, Validators, [])'.
-spec check(falco_req:req(), validators()) -> ok | falco_handler:response().
check(Req, V) ->
    check(Req, V, []).

%% @doc `ok' when the request may proceed, else the response to send: 304
%% with the validators and those of `Headers' that a 304 keeps, or 412.
-spec check(falco_req:req(), validators(), falco_handler:headers()) ->
          ok | falco_handler:response().
check(Req, V, Headers) ->
    case evaluate(Req, V) of
        ok -> ok;
        not_modified -> {304, not_modified_headers(headers(V) ++ Headers), <<>>};
        precondition_failed -> falco_errors:response(precondition_failed)
    end.

%% RFC 9110 §15.4.5
not_modified_headers(Headers) ->
    Keep = [<<"cache-control">>, <<"content-location">>, <<"etag">>, <<"expires">>, <<"vary">>],
    Lower = [{falco_grammar:lower(N), V} || {N, V} <- Headers],
    HasETag = lists:keymember(<<"etag">>, 1, Lower),
    dedup([F || F = {N, _} <- Lower,
                lists:member(N, Keep) orelse (N =:= <<"last-modified">> andalso not HasETag)], []).

dedup([{N, V} | T], Acc) ->
    case lists:keymember(N, 1, Acc) of
        true -> dedup(T, Acc);
        false -> dedup(T, [{N, V} | Acc])
    end;
dedup([], Acc) ->
    lists:reverse(Acc).

%% @doc The ETag and Last-Modified fields for `Validators'.
-spec headers(validators()) -> [{binary(), binary()}].
headers(V) ->
    E = case maps:get(etag, V, undefined) of
            undefined -> [];
            Tag -> [{<<"etag">>, Tag}]
        end,
    case time_value(V) of
        undefined -> E;
        S -> E ++ [{<<"last-modified">>, http_date(S)}]
    end.

%% -- entity tags (RFC 9110 §8.8.3) ---------------------------------------------

%% @doc A strong entity tag for `Opaque' (which must hold only `etagc'
%% characters: no `"', no controls).
-spec etag(binary()) -> binary().
etag(Opaque) ->
    etag(strong, Opaque).

%% @doc A strong or weak entity tag for `Opaque'.
-spec etag(strong | weak, binary()) -> binary().
etag(strong, Opaque) -> <<$", Opaque/binary, $">>;
etag(weak, Opaque) -> <<"W/\"", Opaque/binary, $">>.

%% @doc A strong ETag computed from content (MD5, base64url): equal
%% content, equal tag.
-spec etag_of(iodata()) -> binary().
etag_of(Data) ->
    B64 = base64:encode(erlang:md5(Data)),
    etag(<< <<(url(C))>> || <<C>> <= B64, C =/= $= >>).

url($+) -> $-;
url($/) -> $_;
url(C) -> C.

%% @doc Parses one entity tag.
-spec parse_etag(binary()) -> {ok, etag()} | {error, bad_etag}.
parse_etag(Bin) ->
    case etag_item(skip_ows(Bin)) of
        {ok, T, Rest} ->
            case skip_ows(Rest) of
                <<>> -> {ok, T};
                _ -> {error, bad_etag}
            end;
        error ->
            {error, bad_etag}
    end.

%% @doc Parses an If-Match / If-None-Match value: `*' or a list of tags.
-spec parse_etags(binary()) -> {ok, any | [etag()]} | {error, bad_etag}.
parse_etags(Bin) ->
    case skip_ows(Bin) of
        <<"*", Rest/binary>> ->
            case skip_ows(Rest) of
                <<>> -> {ok, any};
                _ -> {error, bad_etag}
            end;
        B ->
            etag_list(B, [])
    end.

%% #entity-tag: empty list elements are allowed (RFC 9110 §5.6.1.2).
etag_list(Bin, Acc) ->
    case skip_ows(Bin) of
        <<>> when Acc =/= [] -> {ok, lists:reverse(Acc)};
        <<$,, Rest/binary>> -> etag_list(Rest, Acc);
        B ->
            case etag_item(B) of
                {ok, T, Rest} ->
                    case skip_ows(Rest) of
                        <<>> -> {ok, lists:reverse([T | Acc])};
                        <<$,, R/binary>> -> etag_list(R, [T | Acc]);
                        _ -> {error, bad_etag}
                    end;
                error ->
                    {error, bad_etag}
            end
    end.

etag_item(<<"W/\"", Rest/binary>>) -> opaque(Rest, weak, 0, Rest);
etag_item(<<$", Rest/binary>>) -> opaque(Rest, strong, 0, Rest);
etag_item(_) -> error.

%% etagc = %x21 / %x23-7E / obs-text
opaque(<<$", Rest/binary>>, Kind, N, Orig) -> {ok, {Kind, binary:part(Orig, 0, N)}, Rest};
opaque(<<C, Rest/binary>>, Kind, N, Orig) when C =:= 16#21; C >= 16#23, C =/= 16#7F ->
    opaque(Rest, Kind, N + 1, Orig);
opaque(_, _, _, _) -> error.

skip_ows(B) -> falco_grammar:trim_leading(B).

%% @doc Strong comparison (§8.8.3.2): both strong, same opaque tag.
-spec strong_match(etag(), etag()) -> boolean().
strong_match({strong, A}, {strong, B}) -> A =:= B;
strong_match(_, _) -> false.

%% @doc Weak comparison: same opaque tag, either may be weak.
-spec weak_match(etag(), etag()) -> boolean().
weak_match({_, A}, {_, B}) -> A =:= B.

%% -- HTTP-date (RFC 9110 §5.6.7) -----------------------------------------------

%% @doc Formats Unix seconds (or a UTC datetime) as an IMF-fixdate.
-spec http_date(non_neg_integer() | calendar:datetime()) -> binary().
http_date(Secs) when is_integer(Secs) ->
    falco_clock:format(calendar:gregorian_seconds_to_datetime(Secs + ?EPOCH));
http_date(DateTime) ->
    falco_clock:format(DateTime).

%% @doc Unix seconds from any of the three HTTP-date forms. Two-digit RFC 850
%% years more than 50 years ahead are taken as the past century's.
-spec parse_date(binary()) -> {ok, integer()} | error.
parse_date(Bin) ->
    try date(Bin) of
        {{Y, Mo, D}, {H, Mi, S}} = DT ->
            case calendar:valid_date(Y, Mo, D) andalso H < 24 andalso Mi < 60 andalso S < 61 of
                true -> {ok, calendar:datetime_to_gregorian_seconds(DT) - ?EPOCH};
                false -> error
            end;
        error -> error
    catch
        error:_ -> error
    end.

%% IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
date(<<D1, D2, D3, ", ", Dd:2/binary, " ", Mon:3/binary, " ", Y:4/binary, " ",
       T:8/binary, " GMT">>) ->
    _ = day_name(<<D1, D2, D3>>),
    {{int(Y), month(Mon), int(Dd)}, time(T)};
%% asctime: Sun Nov  6 08:49:37 1994
date(<<D1, D2, D3, " ", Mon:3/binary, " ", Dd:2/binary, " ", T:8/binary, " ", Y:4/binary>>) ->
    _ = day_name(<<D1, D2, D3>>),
    Day = case Dd of
              <<" ", C>> -> int(<<C>>);
              _ -> int(Dd)
          end,
    {{int(Y), month(Mon), Day}, time(T)};
%% rfc850-date: Sunday, 06-Nov-94 08:49:37 GMT
date(Bin) ->
    case binary:split(Bin, <<", ">>) of
        [Long, <<Dd:2/binary, "-", Mon:3/binary, "-", Yy:2/binary, " ", T:8/binary, " GMT">>] ->
            true = lists:member(Long, [<<"Monday">>, <<"Tuesday">>, <<"Wednesday">>,
                                       <<"Thursday">>, <<"Friday">>, <<"Saturday">>, <<"Sunday">>]),
            {{year2(int(Yy)), month(Mon), int(Dd)}, time(T)};
        _ ->
            error
    end.

day_name(N) ->
    true = lists:member(N, [<<"Mon">>, <<"Tue">>, <<"Wed">>, <<"Thu">>, <<"Fri">>,
                            <<"Sat">>, <<"Sun">>]).

time(<<H:2/binary, ":", M:2/binary, ":", S:2/binary>>) -> {int(H), int(M), int(S)}.

int(Bin) ->
    true = lists:all(fun(C) -> C >= $0 andalso C =< $9 end, binary_to_list(Bin)),
    binary_to_integer(Bin).

year2(YY) ->
    {{Now, _, _}, _} = calendar:universal_time(),
    Y = (Now div 100) * 100 + YY,
    case Y > Now + 50 of
        true -> Y - 100;
        false -> Y
    end.

month(M) ->
    case lists:keyfind(M, 1, [{<<"Jan">>, 1}, {<<"Feb">>, 2}, {<<"Mar">>, 3}, {<<"Apr">>, 4},
                              {<<"May">>, 5}, {<<"Jun">>, 6}, {<<"Jul">>, 7}, {<<"Aug">>, 8},
                              {<<"Sep">>, 9}, {<<"Oct">>, 10}, {<<"Nov">>, 11}, {<<"Dec">>, 12}]) of
        {_, N} -> N
    end.

%% @doc Unix seconds from any accepted form of time.
-spec to_seconds(time()) -> {ok, integer()} | error.
to_seconds(S) when is_integer(S) -> {ok, S};
to_seconds(B) when is_binary(B) -> parse_date(B);
to_seconds({{_, _, _}, {_, _, _}} = DT) ->
    try {ok, calendar:datetime_to_gregorian_seconds(DT) - ?EPOCH}
    catch error:_ -> error
    end;
to_seconds(_) -> error.

%% -- middleware ------------------------------------------------------------------

%% @doc Middleware: a 200 full reply to GET or HEAD gets a strong ETag from
%% its content unless it has one (option `etag => false' turns that off),
%% then the request's preconditions are evaluated against its ETag and
%% Last-Modified: 304 or 412 replace it. Other methods, statuses and
%% streamed or file bodies pass through unchanged.
-spec call(falco_req:req(), fun((falco_req:req()) -> falco_handler:response()), map()) ->
          falco_handler:response().
call(Req, Next, Opts) ->
    Resp = Next(Req),
    case falco_req:method(Req) of
        M when M =:= <<"GET">>; M =:= <<"HEAD">> -> conditional(Resp, Req, Opts);
        _ -> Resp
    end.

conditional({200, Headers0, Body} = Resp, Req, Opts) when is_list(Headers0) ->
    %% Only a body in memory can be hashed; the pipeline's rule says which.
    case falco_pipeline:body_size(Body) of
        {ok, _} ->
            Lower = [{lower(N), V} || {N, V} <- Headers0],
            Headers = case lists:keymember(<<"etag">>, 1, Lower)
                          orelse not maps:get(etag, Opts, true) of
                          true -> Lower;
                          false -> [{<<"etag">>, etag_of(Body)} | Lower]
                      end,
            V = #{etag => field(<<"etag">>, Headers), last_modified => field(<<"last-modified">>, Headers)},
            case check(Req, V, Headers) of
                ok -> {200, Headers, Body};
                Other -> Other
            end;
        error ->
            Resp
    end;
conditional(Resp, _Req, _Opts) ->
    Resp.

field(Name, Headers) ->
    case lists:keyfind(Name, 1, Headers) of
        {_, V} -> iolist_to_binary(V);
        false -> undefined
    end.

lower(N) when is_binary(N) -> falco_grammar:lower(N).
