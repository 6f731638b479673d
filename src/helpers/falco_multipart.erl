%% @doc Streaming `multipart/form-data' (RFC 7578) over the multipart
%% framing of RFC 2046 §5.1.
%%
%% The parser is pure and incremental: {@link init/2} takes the boundary
%% and limits, {@link parse/2} takes the next piece of the body (any size,
%% a delimiter may be split anywhere) and returns the events it completed:
%% `{headers, Fields}' when a part's header section is read, `{data, Bin}'
%% for pieces of its body (never buffered beyond what a delimiter split
%% across pieces needs) and `part_end'. The preamble and epilogue are
%% ignored (§5.1.1); transport padding after a delimiter is accepted; a
%% line that starts with the delimiter but does not end it is an error,
%% since the boundary must not occur in the content (§5.1.1). Limits:
%% `max_parts' parts, `max_header_size' bytes of header section per part,
%% `max_part_size' bytes of body per part; exceeding one is an error, never
%% unbounded memory.
%%
%% {@link content_disposition/1} parses the field RFC 7578 §4.2 requires on
%% each part (RFC 6266 syntax, `filename*' decoded per RFC 8187 and
%% preferred to `filename'), and {@link form_data/1} gives a part's name,
%% file name and content type.
%%
%% On top of the parser, {@link read_part/2}, {@link read_part_body/2},
%% {@link fold/4} and {@link read_all/2} read the parts of a request body
%% incrementally through {@link falco_req:read_body/2}; the parser state is
%% kept in the request map, so thread the returned request through.
-module(falco_multipart).

-export([boundary/1, init/1, init/2, parse/2, content_disposition/1, form_data/1,
         read_part/1, read_part/2, read_part_body/1, read_part_body/2,
         fold/4, read_all/1, read_all/2, status/1]).
%% shared with other helpers (falco_sse, falco_static)
-export([params/1]).

-export_type([state/0, limits/0, event/0, reason/0, opts/0]).

-type limits() :: #{max_parts => pos_integer(),
                    max_header_size => pos_integer(),
                    max_part_size => non_neg_integer() | infinity}.
-type opts() :: #{max_parts => pos_integer(),
                  max_header_size => pos_integer(),
                  max_part_size => non_neg_integer() | infinity,
                  read_length => pos_integer(),
                  length => pos_integer()}.
-type headers() :: [{binary(), binary()}].
-type event() :: {headers, headers()} | {data, binary()} | part_end.
-type reason() :: not_multipart | bad_boundary | too_many_parts | header_too_large
                | part_too_large | {bad_header, binary()} | bad_delimiter | truncated
                | bad_content_disposition | no_name.

-record(mp, {delim :: binary(),
             phase = preamble :: preamble | delimiter | headers | body,
             buf = <<>> :: binary(),
             parts = 0 :: non_neg_integer(),
             size = 0 :: non_neg_integer(),
             max_parts :: pos_integer(),
             max_header :: pos_integer(),
             max_part :: non_neg_integer() | infinity}).
-opaque state() :: #mp{}.

-define(KEY, falco_multipart).
-define(READ_LENGTH, 65536).

-include("../core/falco_grammar.hrl").

%% -- the parser --------------------------------------------------------------

%% @doc The boundary parameter of a `multipart/*' Content-Type value,
%% validated against RFC 2046 §5.1.1 (1 to 70 `bchars', not ending in a
%% space).
-spec boundary(binary() | undefined) -> {ok, binary()} | {error, not_multipart | bad_boundary}.
boundary(undefined) ->
    {error, not_multipart};
boundary(ContentType) ->
    case binary:split(ContentType, <<";">>) of
        [Type, Params] ->
            case is_multipart(falco_grammar:lower(falco_grammar:trim(Type))) of
                true ->
                    case params(Params) of
                        {ok, Ps} ->
                            case lists:keyfind(<<"boundary">>, 1, Ps) of
                                {_, B} -> check_boundary(B);
                                false -> {error, bad_boundary}
                            end;
                        error ->
                            {error, bad_boundary}
                    end;
                false ->
                    {error, not_multipart}
            end;
        [Type] ->
            case is_multipart(falco_grammar:lower(falco_grammar:trim(Type))) of
                true -> {error, bad_boundary};
                false -> {error, not_multipart}
            end
    end.

is_multipart(<<"multipart/", Sub/binary>>) -> Sub =/= <<>>;
is_multipart(_) -> false.

check_boundary(B) when byte_size(B) >= 1, byte_size(B) =< 70 ->
    case binary:last(B) =/= $\s andalso lists:all(fun bchar/1, binary_to_list(B)) of
        true -> {ok, B};
        false -> {error, bad_boundary}
    end;
check_boundary(_) ->
    {error, bad_boundary}.

bchar(C) when C >= $0, C =< $9; C >= $a, C =< $z; C >= $A, C =< $Z -> true;
bchar(C) -> lists:member(C, "'()+_,-./:=? ").

%% @doc A parser for `Boundary' with the default limits.
-spec init(binary()) -> state().
init(Boundary) ->
    init(Boundary, #{}).

%% @doc A parser for `Boundary'. Limits (defaults): `max_parts' (100),
%% `max_header_size' per part (8192 bytes), `max_part_size' (`infinity':
%% the listener's `max_body' still bounds the whole body).
-spec init(binary(), limits() | opts()) -> state().
init(Boundary, Limits) ->
    %% The body is read as if preceded by CRLF, so the first delimiter
    %% (allowed at the very start, §5.1.1) is found like every other one.
    #mp{delim = <<"\r\n--", Boundary/binary>>, buf = <<"\r\n">>,
        max_parts = maps:get(max_parts, Limits, 100),
        max_header = maps:get(max_header_size, Limits, 8192),
        max_part = maps:get(max_part_size, Limits, infinity)}.

%% @doc Feeds the next piece of the body. `{more, Events, State}' asks for
%% more input; `{done, Events, Epilogue}' means the close delimiter was
%% read (what follows it is returned, to be ignored).
-spec parse(binary(), state()) ->
          {more, [event()], state()} | {done, [event()], binary()} | {error, reason()}.
parse(Data, S = #mp{buf = Buf}) ->
    step(S#mp{buf = <<Buf/binary, Data/binary>>}, []).

step(S = #mp{phase = preamble, buf = Buf, delim = D}, Acc) ->
    case binary:match(Buf, D) of
        {Pos, Len} ->
            step(S#mp{phase = delimiter, buf = rest(Buf, Pos + Len)}, Acc);
        nomatch ->
            {more, lists:reverse(Acc), S#mp{buf = rest(Buf, byte_size(Buf) - partial(Buf, D))}}
    end;
step(S = #mp{phase = delimiter, buf = Buf}, Acc) ->
    delimiter(Buf, S, Acc);
step(S = #mp{phase = headers, buf = Buf, max_header = Max}, Acc) ->
    case Buf of
        <<"\r\n", Rest/binary>> ->
            step(S#mp{phase = body, buf = Rest, size = 0}, [{headers, []} | Acc]);
        _ ->
            case binary:match(Buf, <<"\r\n\r\n">>) of
                {Pos, _} when Pos + 2 > Max ->
                    {error, header_too_large};
                {Pos, _} ->
                    case headers(binary:part(Buf, 0, Pos + 2), []) of
                        {ok, Fields} ->
                            step(S#mp{phase = body, buf = rest(Buf, Pos + 4), size = 0},
                                 [{headers, Fields} | Acc]);
                        Error ->
                            Error
                    end;
                nomatch when byte_size(Buf) > Max + 2 ->
                    {error, header_too_large};
                nomatch ->
                    {more, lists:reverse(Acc), S}
            end
    end;
step(S = #mp{phase = body, buf = Buf, delim = D}, Acc) ->
    case binary:match(Buf, D) of
        {Pos, Len} ->
            case data(binary:part(Buf, 0, Pos), S, Acc) of
                {ok, S1, Acc1} ->
                    step(S1#mp{phase = delimiter, buf = rest(Buf, Pos + Len)}, [part_end | Acc1]);
                Error ->
                    Error
            end;
        nomatch ->
            Keep = partial(Buf, D),
            Emit = byte_size(Buf) - Keep,
            case data(binary:part(Buf, 0, Emit), S, Acc) of
                {ok, S1, Acc1} -> {more, lists:reverse(Acc1), S1#mp{buf = rest(Buf, Emit)}};
                Error -> Error
            end
    end.

data(<<>>, S, Acc) ->
    {ok, S, Acc};
data(Data, S = #mp{size = Size0, max_part = Max}, Acc) ->
    case Size0 + byte_size(Data) of
        Size when Max =/= infinity, Size > Max -> {error, part_too_large};
        Size -> {ok, S#mp{size = Size}, [{data, Data} | Acc]}
    end.

%% After "CRLF--boundary": "--" closes (§5.1.1 close-delimiter), padding
%% then CRLF opens the next part; anything else means the boundary
%% occurred inside the content.
delimiter(<<"--", Rest/binary>>, _S, Acc) ->
    {done, lists:reverse(Acc), Rest};
delimiter(<<"\r\n", Rest/binary>>, S = #mp{parts = N, max_parts = Max}, Acc) ->
    case N + 1 of
        N1 when N1 > Max -> {error, too_many_parts};
        N1 -> step(S#mp{phase = headers, buf = Rest, parts = N1}, Acc)
    end;
delimiter(<<C, Rest/binary>>, S, Acc) when ?IS_WS(C) ->
    delimiter(Rest, S, Acc);
delimiter(Buf, S, Acc) when Buf =:= <<>>; Buf =:= <<"-">>; Buf =:= <<"\r">> ->
    {more, lists:reverse(Acc), S#mp{buf = Buf}};
delimiter(_Buf, _S, _Acc) ->
    {error, bad_delimiter}.

%% How many bytes at the end of Buf could be the start of the delimiter
%% (they are kept for the next piece; the rest is safe to hand out).
partial(Buf, D) ->
    Size = byte_size(Buf),
    From = max(0, Size - byte_size(D) + 1),
    partial(Buf, D, From, Size).

partial(_Buf, _D, Pos, Size) when Pos >= Size ->
    0;
partial(Buf, D, Pos, Size) ->
    case binary:match(Buf, <<"\r">>, [{scope, {Pos, Size - Pos}}]) of
        {CR, 1} ->
            Tail = binary:part(Buf, CR, Size - CR),
            case binary:longest_common_prefix([Tail, D]) of
                N when N =:= Size - CR -> N;
                _ -> partial(Buf, D, CR + 1, Size)
            end;
        nomatch ->
            0
    end.

rest(Buf, Pos) ->
    binary:part(Buf, Pos, byte_size(Buf) - Pos).

%% Header fields of a part (RFC 2046 §5.1.1, RFC 5322 syntax without
%% obsolete folding), names lowercased, values trimmed.
headers(<<>>, Acc) ->
    {ok, lists:reverse(Acc)};
headers(Block, Acc) ->
    [Line, Rest] = binary:split(Block, <<"\r\n">>),
    case binary:split(Line, <<":">>) of
        [Name, Value] when Name =/= <<>> ->
            case falco_grammar:is_token(Name) andalso no_ctl(Value) of
                true ->
                    Field = {falco_grammar:lower(Name), falco_grammar:trim(Value)},
                    headers(Rest, [Field | Acc]);
                false -> {error, {bad_header, Line}}
            end;
        _ ->
            {error, {bad_header, Line}}
    end.

no_ctl(<<C, _/binary>>) when C < 32, C =/= $\t; C =:= 127 -> false;
no_ctl(<<_, R/binary>>) -> no_ctl(R);
no_ctl(<<>>) -> true.

%% -- Content-Disposition (RFC 6266 §4.1, RFC 7578 §4.2, RFC 8187) ---------------

%% @doc Parses a Content-Disposition value into its type (lowercased) and
%% parameters (names lowercased, quoted strings unquoted, `name*'
%% extended values decoded from RFC 8187 `charset'lang'%XX' form; UTF-8
%% and ISO-8859-1 are accepted, the result is UTF-8).
-spec content_disposition(binary()) ->
          {ok, binary(), [{binary(), binary()}]} | {error, bad_content_disposition}.
content_disposition(Value) ->
    {Type, Params} = case binary:split(Value, <<";">>) of
                         [T, P] -> {falco_grammar:trim(T), P};
                         [T] -> {falco_grammar:trim(T), <<>>}
                     end,
    case falco_grammar:is_token(Type) of
        true ->
            case params(Params) of
                {ok, Ps} ->
                    case ext_values(Ps, []) of
                        {ok, Decoded} -> {ok, falco_grammar:lower(Type), Decoded};
                        error -> {error, bad_content_disposition}
                    end;
                error ->
                    {error, bad_content_disposition}
            end;
        false ->
            {error, bad_content_disposition}
    end.

ext_values([{Name, V} | T], Acc) ->
    case binary:last(Name) of
        $* ->
            case ext_value(V) of
                {ok, D} -> ext_values(T, [{Name, D} | Acc]);
                error -> error
            end;
        _ ->
            ext_values(T, [{Name, V} | Acc])
    end;
ext_values([], Acc) ->
    {ok, lists:reverse(Acc)}.

%% ext-value = charset "'" [ language ] "'" value-chars (RFC 8187 §3.2.1)
ext_value(V) ->
    case binary:split(V, <<"'">>, [global]) of
        [Charset, _Lang, Encoded] ->
            case falco_uri:decode(Encoded) of
                {ok, Raw} ->
                    case falco_grammar:lower(Charset) of
                        <<"utf-8">> ->
                            case unicode:characters_to_binary(Raw, utf8, utf8) of
                                B when is_binary(B) -> {ok, B};
                                _ -> error
                            end;
                        <<"iso-8859-1">> ->
                            {ok, unicode:characters_to_binary(Raw, latin1, utf8)};
                        _ ->
                            error
                    end;
                {error, _} ->
                    error
            end;
        _ ->
            error
    end.

%% @doc Parses `*( ";" name "=" ( token / quoted-string ) )' (RFC 9110
%% §5.6.6): names lowercased, a repeated name keeps its first value. In
%% quoted strings `\"' and `\\' are unescaped and any other backslash is
%% kept as is, because browsers send Windows paths unescaped (WHATWG HTML
%% form submission escapes only `"', CR and LF, as `%22', `%0D', `%0A').
-spec params(binary()) -> {ok, [{binary(), binary()}]} | error.
params(Bin) ->
    case skip_ws(Bin) of
        <<>> -> {ok, []};
        B -> param(B, [])
    end.

param(Bin, Acc) ->
    case binary:split(Bin, <<"=">>) of
        [Name0, Rest0] ->
            Name = falco_grammar:trim(Name0),
            case falco_grammar:is_token(Name) of
                true ->
                    case value(skip_ws(Rest0)) of
                        {ok, V, Rest} ->
                            Lower = falco_grammar:lower(Name),
                            Acc1 = case lists:keymember(Lower, 1, Acc) of
                                       true -> Acc;
                                       false -> [{Lower, V} | Acc]
                                   end,
                            case skip_ws(Rest) of
                                <<>> -> {ok, lists:reverse(Acc1)};
                                <<$;, R/binary>> -> param_next(skip_ws(R), Acc1);
                                _ -> error
                            end;
                        error -> error
                    end;
                false ->
                    error
            end;
        [_] ->
            error
    end.

%% Tolerate a trailing ";" (sent by some clients).
param_next(<<>>, Acc) -> {ok, lists:reverse(Acc)};
param_next(Bin, Acc) -> param(Bin, Acc).

value(<<$", Rest/binary>>) -> quoted(Rest, <<>>);
value(Bin) -> token_value(Bin, 0, Bin).

token_value(<<C, R/binary>>, N, Orig) when ?IS_TCHAR(C) -> token_value(R, N + 1, Orig);
token_value(_, 0, _) -> error;
token_value(<<C, _/binary>> = R, N, Orig) when C =:= $;; ?IS_WS(C); C =:= $" ->
    {ok, binary:part(Orig, 0, N), R};
token_value(<<>>, N, Orig) -> {ok, binary:part(Orig, 0, N), <<>>};
token_value(_, _, _) -> error.

%% Not falco_grammar:quoted_string/1, on purpose: a backslash before
%% anything but `"' or `\' is kept (see params/1).
quoted(<<$", R/binary>>, Acc) -> {ok, Acc, R};
quoted(<<$\\, C, R/binary>>, Acc) when C =:= $"; C =:= $\\ -> quoted(R, <<Acc/binary, C>>);
quoted(<<C, R/binary>>, Acc) when C >= 32, C =/= 127; C =:= $\t ->
    quoted(R, <<Acc/binary, C>>);
quoted(_, _) -> error.

skip_ws(Bin) -> falco_grammar:trim_leading(Bin).

%% @doc A `multipart/form-data' part's name, file name (`filename*'
%% preferred, RFC 6266 §4.3) and content type (RFC 7578 §4.4: default
%% `text/plain'). The file name is the client's: never use it as a path.
-spec form_data(headers()) ->
          {ok, #{name := binary(), filename => binary(), content_type := binary()}}
          | {error, bad_content_disposition | no_name}.
form_data(Headers) ->
    case lists:keyfind(<<"content-disposition">>, 1, Headers) of
        {_, CD} ->
            case content_disposition(CD) of
                {ok, _Type, Params} ->
                    CT = case lists:keyfind(<<"content-type">>, 1, Headers) of
                             {_, T} -> T;
                             false -> <<"text/plain">>
                         end,
                    case lists:keyfind(<<"name">>, 1, Params) of
                        {_, Name} ->
                            M = #{name => Name, content_type => CT},
                            case filename(Params) of
                                undefined -> {ok, M};
                                F -> {ok, M#{filename => F}}
                            end;
                        false ->
                            {error, no_name}
                    end;
                Error ->
                    Error
            end;
        false ->
            {error, bad_content_disposition}
    end.

filename(Params) ->
    case lists:keyfind(<<"filename*">>, 1, Params) of
        {_, F} -> F;
        false ->
            case lists:keyfind(<<"filename">>, 1, Params) of
                {_, F} -> F;
                false -> undefined
            end
    end.

%% -- reading a request ---------------------------------------------------------

-record(rd, {parser :: state() | done,
             events = [] :: [event()],
             in_part = false :: boolean(),
             read_length :: pos_integer()}).

%% @doc Same as `read_part(Req, #{})'.
-spec read_part(falco_req:req()) ->
          {ok, headers(), falco_req:req()} | {done, falco_req:req()} | {error, reason()}.
read_part(Req) ->
    read_part(Req, #{}).

%% @doc Reads up to the next part's header section; what is left of the
%% current part's body is skipped. `{done, Req}' after the last part.
%% The first call reads the boundary from Content-Type and takes the
%% limits of {@link init/2} and `read_length' (bytes per body read,
%% default 65536).
-spec read_part(falco_req:req(), opts()) ->
          {ok, headers(), falco_req:req()} | {done, falco_req:req()} | {error, reason()}.
read_part(Req, Opts) ->
    case reader(Req, Opts) of
        {ok, Rd} -> next_part(Rd, Req);
        Error -> Error
    end.

next_part(Rd = #rd{events = [{headers, H} | Es]}, Req) ->
    {ok, H, store(Rd#rd{events = Es, in_part = true}, Req)};
next_part(Rd = #rd{events = [_ | Es]}, Req) ->
    next_part(Rd#rd{events = Es}, Req);
next_part(Rd = #rd{events = [], parser = done}, Req) ->
    {done, store(Rd, Req)};
next_part(Rd = #rd{events = []}, Req) ->
    case pull(Rd, Req) of
        {ok, Rd1, Req1} -> next_part(Rd1, Req1);
        Error -> Error
    end.

%% @doc Same as `read_part_body(Req, #{})'.
-spec read_part_body(falco_req:req()) ->
          {ok | more, binary(), falco_req:req()} | {error, reason()}.
read_part_body(Req) ->
    read_part_body(Req, #{}).

%% @doc Reads the current part's body: `{more, Data, Req}' once at least
%% `length' bytes (default 65536) are gathered, `{ok, Data, Req}' with the
%% last piece. Called outside a part it gives `{ok, <<>>, Req}'.
-spec read_part_body(falco_req:req(), opts()) ->
          {ok | more, binary(), falco_req:req()} | {error, reason()}.
read_part_body(Req, Opts) ->
    case reader(Req, Opts) of
        {ok, Rd} -> part_body(Rd, Req, maps:get(length, Opts, ?READ_LENGTH), 0, []);
        Error -> Error
    end.

part_body(Rd = #rd{in_part = false}, Req, _Want, _Got, Acc) ->
    {ok, iolist_to_binary(lists:reverse(Acc)), store(Rd, Req)};
part_body(Rd, Req, Want, Got, Acc) when Got >= Want ->
    {more, iolist_to_binary(lists:reverse(Acc)), store(Rd, Req)};
part_body(Rd = #rd{events = [{data, D} | Es]}, Req, Want, Got, Acc) ->
    part_body(Rd#rd{events = Es}, Req, Want, Got + byte_size(D), [D | Acc]);
part_body(Rd = #rd{events = [part_end | Es]}, Req, Want, Got, Acc) ->
    part_body(Rd#rd{events = Es, in_part = false}, Req, Want, Got, Acc);
part_body(Rd = #rd{events = [], parser = done}, Req, Want, Got, Acc) ->
    part_body(Rd#rd{in_part = false}, Req, Want, Got, Acc);
part_body(Rd = #rd{events = []}, Req, Want, Got, Acc) ->
    case pull(Rd, Req) of
        {ok, Rd1, Req1} -> part_body(Rd1, Req1, Want, Got, Acc);
        Error -> Error
    end.

%% @doc Folds `Fun' over every event of the body, in order:
%% `{headers, Fields}', `{data, Bin}' (any number), `part_end', for each part.
-spec fold(falco_req:req(), fun((event(), Acc) -> Acc), Acc, opts()) ->
          {ok, Acc, falco_req:req()} | {error, reason()}.
fold(Req, Fun, Acc, Opts) ->
    case reader(Req, Opts) of
        {ok, Rd} -> fold_events(Rd, Req, Fun, Acc);
        Error -> Error
    end.

fold_events(Rd = #rd{events = [E | Es]}, Req, Fun, Acc) ->
    fold_events(Rd#rd{events = Es}, Req, Fun, Fun(E, Acc));
fold_events(Rd = #rd{parser = done}, Req, _Fun, Acc) ->
    {ok, Acc, store(Rd#rd{in_part = false}, Req)};
fold_events(Rd, Req, Fun, Acc) ->
    case pull(Rd, Req) of
        {ok, Rd1, Req1} -> fold_events(Rd1, Req1, Fun, Acc);
        Error -> Error
    end.

%% @doc Same as `read_all(Req, #{})'.
-spec read_all(falco_req:req()) -> {ok, [{headers(), binary()}], falco_req:req()} | {error, reason()}.
read_all(Req) ->
    read_all(Req, #{}).

%% @doc Reads every part into memory: `[{Headers, Body}]'. Bounded by the
%% limits and the listener's `max_body'; use {@link fold/4} or
%% {@link read_part_body/2} to stream large uploads instead.
-spec read_all(falco_req:req(), opts()) ->
          {ok, [{headers(), binary()}], falco_req:req()} | {error, reason()}.
read_all(Req, Opts) ->
    Fun = fun({headers, H}, Acc) -> [{H, []} | Acc];
             ({data, D}, [{H, Ds} | Acc]) -> [{H, [D | Ds]} | Acc];
             (part_end, [{H, Ds} | Acc]) -> [{H, iolist_to_binary(lists:reverse(Ds))} | Acc]
          end,
    case fold(Req, Fun, [], Opts) of
        {ok, Parts, Req1} -> {ok, lists:reverse(Parts), Req1};
        Error -> Error
    end.

%% @doc The status to answer a parse error with: 415 for a body that is not
%% multipart, 413 for a limit, 400 otherwise.
%% (falco_errors has the rule.)
-spec status(reason()) -> 400..599.
status(Reason) ->
    falco_errors:status({multipart, Reason}).

reader(Req, Opts) ->
    case maps:find(?KEY, Req) of
        {ok, Rd} ->
            {ok, Rd};
        error ->
            case boundary(falco_req:header(<<"content-type">>, Req)) of
                {ok, B} ->
                    {ok, #rd{parser = init(B, Opts),
                             read_length = maps:get(read_length, Opts, ?READ_LENGTH)}};
                Error ->
                    Error
            end
    end.

store(Rd, Req) ->
    Req#{?KEY => Rd}.

%% Reads one piece of the body and parses it.
pull(Rd = #rd{parser = P, read_length = Len}, Req0) ->
    {Tag, Data, Req} = falco_req:read_body(Req0, #{length => Len}),
    case parse(Data, P) of
        {more, Events, P1} when Tag =:= more ->
            {ok, Rd#rd{parser = P1, events = Events}, Req};
        {more, _Events, _P1} ->
            {error, truncated};
        {done, Events, _Epilogue} ->
            {ok, Rd#rd{parser = done, events = Events}, Req};
        {error, _} = Error ->
            Error
    end.
