%% @doc Range requests (RFC 9110 §14, §13.1.5).
%%
%% {@link parse/1} reads a Range field (`bytes=' ranges only, §14.1.2:
%% `first-last', `first-' and suffix `-n'); {@link resolve/3} turns the
%% ranges into byte spans of a representation of known size: unsatisfiable
%% ones are dropped (§14.1.1), overlapping and adjacent ones coalesced and
%% sorted (§14.2 allows it, and it defeats the many-overlapping-ranges
%% amplification), and more than `max_ranges' (default 16) makes the field
%% ignored, as does a second Range field. {@link reply/4} builds the response for a handler: 200 with
%% `Accept-Ranges: bytes' when there is no usable Range, 206 with
%% Content-Range for one span, 206 `multipart/byteranges' (§14.6) for
%% several, 416 with `Content-Range: bytes */Size' (§15.5.17) when none is
%% satisfiable. Only GET requests are ranged (§14.2), and an If-Range
%% (§13.1.5) that does not match (strongly, for an entity tag; exactly, for
%% a date) makes the reply the full representation.
-module(falco_range).

-export([parse/1, resolve/3, if_range/2, reply/4, content_range/3]).

-export_type([spec/0, span/0, content/0]).

-type spec() :: {non_neg_integer(), non_neg_integer() | infinity} | {suffix, non_neg_integer()}.
-type span() :: {Offset :: non_neg_integer(), Length :: pos_integer()}.
-type content() :: {data, iodata()} | {file, file:filename_all(), non_neg_integer()}.

-define(MAX_RANGES, 16).
-define(MAX_DIGITS, 15).
-define(READ_CHUNK, 65536).

%% @doc Parses a Range value. `{error, unsupported_unit}' for a unit other
%% than bytes, `{error, bad_range}' for a malformed one; either way the
%% field is to be ignored (§14.2).
-spec parse(binary()) -> {ok, [spec()]} | {error, bad_range | unsupported_unit}.
parse(Bin) ->
    case binary:split(Bin, <<"=">>) of
        [Unit, Set] ->
            case falco_grammar:lower(Unit) of
                <<"bytes">> -> specs(binary:split(Set, <<",">>, [global]), []);
                _ -> {error, unsupported_unit}
            end;
        [_] ->
            {error, bad_range}
    end.

specs([Item | T], Acc) ->
    case falco_grammar:trim(Item) of
        <<>> -> specs(T, Acc);
        Spec ->
            case spec(Spec) of
                {ok, S} -> specs(T, [S | Acc]);
                error -> {error, bad_range}
            end
    end;
specs([], []) ->
    {error, bad_range};
specs([], Acc) ->
    {ok, lists:reverse(Acc)}.

spec(<<"-", Suffix/binary>>) ->
    case int(Suffix) of
        {ok, N} -> {ok, {suffix, N}};
        error -> error
    end;
spec(Spec) ->
    case binary:split(Spec, <<"-">>) of
        [F, <<>>] ->
            case int(F) of
                {ok, First} -> {ok, {First, infinity}};
                error -> error
            end;
        [F, L] ->
            case {int(F), int(L)} of
                {{ok, First}, {ok, Last}} when First =< Last -> {ok, {First, Last}};
                _ -> error
            end;
        _ ->
            error
    end.

int(B) when byte_size(B) >= 1, byte_size(B) =< ?MAX_DIGITS ->
    case lists:all(fun(C) -> C >= $0 andalso C =< $9 end, binary_to_list(B)) of
        true -> {ok, binary_to_integer(B)};
        false -> error
    end;
int(_) ->
    error.

%% @doc The spans of a representation of `Size' bytes that the ranges ask
%% for, coalesced and in ascending order.
-spec resolve([spec()], non_neg_integer(), #{max_ranges => pos_integer()}) ->
          {ok, [span()]} | unsatisfiable | ignore.
resolve(Specs, Size, Opts) ->
    case length(Specs) > maps:get(max_ranges, Opts, ?MAX_RANGES) of
        true -> ignore;
        false when Size =:= 0 -> ignore;
        false ->
            case lists:filtermap(fun(S) -> span(S, Size) end, Specs) of
                [] -> unsatisfiable;
                Spans -> {ok, coalesce(lists:sort(Spans), [])}
            end
    end.

span({suffix, 0}, _Size) -> false;
span({suffix, N}, Size) -> {true, {max(Size - N, 0), min(N, Size)}};
span({First, _}, Size) when First >= Size -> false;
span({First, infinity}, Size) -> {true, {First, Size - First}};
span({First, Last}, Size) -> {true, {First, min(Last, Size - 1) - First + 1}}.

coalesce([{O1, L1}, {O2, L2} | T], Acc) when O2 =< O1 + L1 ->
    coalesce([{O1, max(O1 + L1, O2 + L2) - O1} | T], Acc);
coalesce([S | T], Acc) ->
    coalesce(T, [S | Acc]);
coalesce([], Acc) ->
    lists:reverse(Acc).

%% @doc Whether the If-Range of the request (if any) lets a Range apply,
%% given the response's ETag and Last-Modified fields (§13.1.5): an entity
%% tag must match strongly, a date must equal Last-Modified exactly.
-spec if_range(falco_req:req(), [{binary(), iodata()}]) -> boolean().
if_range(Req, Headers) ->
    case falco_req:header(<<"if-range">>, Req) of
        undefined -> true;
        <<"W/", _/binary>> -> false;
        <<$", _/binary>> = Value ->
            case {falco_cond:parse_etag(Value), field(<<"etag">>, Headers)} of
                {{ok, Tag}, Current} when is_binary(Current) ->
                    case falco_cond:parse_etag(Current) of
                        {ok, CurrentTag} -> falco_cond:strong_match(Tag, CurrentTag);
                        {error, _} -> false
                    end;
                _ -> false
            end;
        Value ->
            case {falco_cond:parse_date(Value), field(<<"last-modified">>, Headers)} of
                {{ok, Date}, LM} when is_binary(LM) -> falco_cond:parse_date(LM) =:= {ok, Date};
                _ -> false
            end
    end.

%% @doc The response to `Req' for content of 200 status with `Headers'
%% (which should carry Content-Type, and ETag / Last-Modified for If-Range):
%% `{data, Iodata}' is sliced in memory, `{file, Path, Size}' is sent with
%% sendfile (one span) or streamed from the file (several).
-spec reply(falco_req:req(), [{binary(), iodata()}], content(), #{max_ranges => pos_integer()}) ->
          falco_handler:response().
reply(Req, Headers0, Content, Opts) ->
    Headers = [{<<"accept-ranges">>, <<"bytes">>} | Headers0],
    Size = content_size(Content),
    case ranges(Req, Headers0, Size, Opts) of
        ignore ->
            {200, Headers, full(Content)};
        unsatisfiable ->
            falco_errors:response({range_not_satisfiable, Size});
        {ok, [{Off, Len}]} ->
            {206, [{<<"content-range">>, content_range(Off, Len, Size)} | Headers],
             slice(Content, Off, Len)};
        {ok, Spans} ->
            multipart(Headers, Content, Size, Spans)
    end.

%% A Range field given twice is ignored, like a malformed one (§14.2 lets a
%% server ignore Range): which of the two was meant cannot be told, and an
%% intermediary may have acted on the other one.
ranges(Req, Headers, Size, Opts) ->
    case {falco_req:method(Req), [V || {<<"range">>, V} <- falco_req:headers(Req)]} of
        {<<"GET">>, [Range]} ->
            case if_range(Req, Headers) of
                true ->
                    case parse(Range) of
                        {ok, Specs} -> resolve(Specs, Size, Opts);
                        {error, _} -> ignore
                    end;
                false ->
                    ignore
            end;
        _ ->
            ignore
    end.

%% @doc A Content-Range value: `bytes First-Last/Size'.
-spec content_range(non_neg_integer(), pos_integer(), non_neg_integer()) -> binary().
content_range(Off, Len, Size) ->
    <<"bytes ", (integer_to_binary(Off))/binary, "-", (integer_to_binary(Off + Len - 1))/binary,
      "/", (integer_to_binary(Size))/binary>>.

content_size({data, Data}) -> iolist_size(Data);
content_size({file, _, Size}) -> Size.

full({data, Data}) -> Data;
full({file, Path, _}) -> {file, Path}.

slice({data, Data}, Off, Len) -> binary:part(iolist_to_binary(Data), Off, Len);
slice({file, Path, _}, Off, Len) -> {file, Path, Off, Len}.

%% RFC 9110 §14.6: each part has its own Content-Type and Content-Range.
multipart(Headers, Content, Size, Spans) ->
    Boundary = binary:encode_hex(rand:bytes(12)),
    Type = case field(<<"content-type">>, Headers) of
               undefined -> [];
               T -> [<<"content-type: ">>, T, <<"\r\n">>]
           end,
    Parts = [{[<<"\r\n--">>, Boundary, <<"\r\n">>, Type, <<"content-range: ">>,
               content_range(Off, Len, Size), <<"\r\n\r\n">>], Off, Len}
             || {Off, Len} <- Spans],
    Close = [<<"\r\n--">>, Boundary, <<"--\r\n">>],
    Length = lists:sum([iolist_size(H) + Len || {H, _, Len} <- Parts]) + iolist_size(Close),
    Fields = [{<<"content-type">>, <<"multipart/byteranges; boundary=", Boundary/binary>>}
              | [F || F = {N, _} <- Headers, N =/= <<"content-type">>]],
    case Content of
        {data, Data} ->
            Bin = iolist_to_binary(Data),
            {206, Fields, [[[H, binary:part(Bin, Off, Len)] || {H, Off, Len} <- Parts], Close]};
        {file, Path, _} ->
            {stream, 206, [{<<"content-length">>, integer_to_binary(Length)} | Fields],
             fun(Send) -> send_parts(Path, Parts, Close, Send) end}
    end.

%% A peer that went away ends the stream quietly (Send returned an error);
%% the protocol sees the broken connection on its own.
send_parts(Path, Parts, Close, Send) ->
    {ok, Fd} = file:open(Path, [read, raw, binary]),
    try
        lists:foreach(fun({H, Off, Len}) ->
                              send(Send, H),
                              send_file(Fd, Off, Len, Send)
                      end, Parts),
        send(Send, Close)
    catch
        throw:{?MODULE, closed} -> ok
    after
        _ = file:close(Fd)
    end.

send(Send, Data) ->
    case Send(Data) of
        ok -> ok;
        _ -> throw({?MODULE, closed})
    end.

send_file(_Fd, _Off, 0, _Send) ->
    ok;
send_file(Fd, Off, Len, Send) ->
    case file:pread(Fd, Off, min(Len, ?READ_CHUNK)) of
        {ok, Data} ->
            send(Send, Data),
            send_file(Fd, Off + byte_size(Data), Len - byte_size(Data), Send);
        Other ->
            %% The file shrank after its size was taken: the promised length
            %% cannot be met, so fail the stream (the connection is cut).
            error({file_changed, Other})
    end.

field(Name, Headers) ->
    case [V || {N, V} <- Headers, falco_grammar:lower(N) =:= Name] of
        [V | _] -> iolist_to_binary(V);
        [] -> undefined
    end.
