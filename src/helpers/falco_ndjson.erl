%% @doc Newline-delimited JSON (NDJSON / JSON Lines): one JSON text per
%% line, LF-terminated, `application/x-ndjson'.
%%
%% {@link encode/1} writes one line with {@link falco_json} (which escapes
%% every control character, so a value can never break its line);
%% {@link stream/2} is a streamed response whose producer emits terms, each
%% line handed to the protocol as one piece so it is sent at once; and
%% {@link parse/2} reads an NDJSON body incrementally (a CR before the LF
%% and empty lines are tolerated, a line longer than the limit is an error),
%% for uploads read with {@link falco_req:read_body/2}.
-module(falco_ndjson).

-export([encode/1, stream/2, headers/0, init_parser/0, init_parser/1, parse/2, finish/1]).

-export_type([parser/0]).

-record(nd, {buf = <<>> :: binary(),
             line = 1 :: pos_integer(),
             max_line :: pos_integer(),
             json :: falco_json:decode_opts()}).
-opaque parser() :: #nd{}.

-type emit() :: fun((term() | {many, [term()]}) -> ok | {error, term()}).

%% @doc One JSON text and its LF, or the encoder's error.
-spec encode(term()) -> {ok, iodata()} | {error, {invalid, term()}}.
encode(Term) ->
    case falco_json:encode(Term) of
        {ok, Json} -> {ok, [Json, $\n]};
        Error -> Error
    end.

%% @doc The response fields of an NDJSON stream.
-spec headers() -> falco_handler:headers().
headers() ->
    [{<<"content-type">>, <<"application/x-ndjson">>},
     {<<"cache-control">>, <<"no-cache">>}].

%% @doc A streamed response running `Fun(Emit)': `Emit(Term)' sends one
%% line, `Emit({many, Terms})' several in one piece; both return `ok' or
%% `{error, Reason}' once the client has gone. A term JSON cannot represent
%% raises `badarg' in the producer. Options: `status' (200), `headers'.
-spec stream(fun((emit()) -> term()), #{status => 100..999, headers => falco_handler:headers()}) ->
          falco_handler:response().
stream(Fun, Opts) ->
    {stream, maps:get(status, Opts, 200), headers() ++ maps:get(headers, Opts, []),
     fun(Send) ->
             _ = Fun(fun({many, Terms}) -> Send([line(T) || T <- Terms]);
                        (Term) -> Send(line(Term))
                     end),
             ok
     end}.

line(Term) ->
    case encode(Term) of
        {ok, L} -> L;
        {error, _} -> error(badarg, [Term])
    end.

%% @doc A parser with lines of at most 1 MiB and falco_json's defaults.
-spec init_parser() -> parser().
init_parser() ->
    init_parser(#{}).

%% @doc A parser; options `max_line' (bytes, default 1 MiB) and the
%% {@link falco_json:decode/2} options for each line.
-spec init_parser(#{max_line => pos_integer(), max_depth => non_neg_integer()}) -> parser().
init_parser(Opts) ->
    Max = maps:get(max_line, Opts, 1048576),
    #nd{max_line = Max, json = #{max_size => Max, max_depth => maps:get(max_depth, Opts, 128)}}.

%% @doc Feeds body bytes; returns the values of the lines completed. An
%% error names the line (1-based) and falco_json's reason.
-spec parse(binary(), parser()) ->
          {ok, [falco_json:json()], parser()}
          | {error, {pos_integer(), line_too_long | falco_json:decode_error()}}.
parse(Bin, P = #nd{buf = Buf}) ->
    split(<<Buf/binary, Bin/binary>>, P, []).

split(Bin, P = #nd{line = N, max_line = Max}, Acc) ->
    case binary:match(Bin, <<"\n">>) of
        {Pos, 1} when Pos > Max ->
            {error, {N, line_too_long}};
        {Pos, 1} ->
            Rest = binary:part(Bin, Pos + 1, byte_size(Bin) - Pos - 1),
            case value(binary:part(Bin, 0, Pos), P) of
                skip -> split(Rest, P#nd{line = N + 1}, Acc);
                {ok, V} -> split(Rest, P#nd{line = N + 1}, [V | Acc]);
                {error, Why} -> {error, {N, Why}}
            end;
        nomatch when byte_size(Bin) > Max ->
            {error, {N, line_too_long}};
        nomatch ->
            {ok, lists:reverse(Acc), P#nd{buf = Bin}}
    end.

value(Line0, #nd{json = Opts}) ->
    Line = case Line0 of
               <<L:(byte_size(Line0) - 1)/binary, "\r">> -> L;
               _ -> Line0
           end,
    case falco_grammar:trim(Line) of
        <<>> -> skip;
        _ -> falco_json:decode(Line, Opts)
    end.

%% @doc At the end of the body: the value of a last line without its LF,
%% if any.
-spec finish(parser()) ->
          {ok, [falco_json:json()]} | {error, {pos_integer(), falco_json:decode_error()}}.
finish(P = #nd{buf = Buf, line = N}) ->
    case value(Buf, P) of
        skip -> {ok, []};
        {ok, V} -> {ok, [V]};
        {error, Why} -> {error, {N, Why}}
    end.
