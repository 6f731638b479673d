%% @doc Pure, incremental HTTP/1.1 request-head parser (RFC 9112, RFC 9110).
%%
%% Bytes in, `{ok, Request, Rest} | {more, Cont} | {error, Reason}' out: no
%% sockets, no processes, no exceptions for bad input. Feed more bytes to a
%% `{more, Cont}' with {@link parse_more/2}; the work already done is kept in the
%% continuation, so a head that arrives one byte at a time is never re-scanned.
%%
%% It is strict on purpose, because every leniency is a request-smuggling
%% vector when falco sits behind a proxy:
%% <ul>
%% <li>lines end in CRLF only; a bare LF or bare CR is an error (RFC 9112 §2.2);</li>
%% <li>up to `max_empty_lines' leading empty lines are skipped (RFC 9112 §2.2);</li>
%% <li>request-line is `method SP request-target SP HTTP-version' with single
%%     spaces (§3); the method is a token (RFC 9110 §9.1); origin, absolute
%%     and asterisk forms are accepted (§3.2), authority form (CONNECT) is 501;
%%     a line over `max_request_line' is 414, or 501 when the method alone
%%     fills it (§3);</li>
%% <li>HTTP/1.0 and HTTP/1.1 are served, and HTTP/1.2 to 1.9 as 1.1 (RFC 9110
%%     §6.2); other major versions get 505 and malformed ones 400 (§2.3);</li>
%% <li>field names are tokens; whitespace before the colon (§5.1), obs-fold
%%     (§5.2), NUL, CR, LF and other controls in values (RFC 9110 §5.5) are 400;
%%     so are `Content_Length' and `Transfer_Encoding', which proxies that
%%     read "_" as "-" would take for framing fields (§11.2);</li>
%% <li>Host: missing on 1.1 (whatever the target form), repeated or invalid
%%     is 400 (§3.2); empty is 400 unless the target is in absolute-form,
%%     whose authority is used (§3.2.2, §3.3);</li>
%% <li>Content-Length is digits only; differing repeats are 400 (§6.3);
%%     Transfer-Encoding with Content-Length, on HTTP/1.0, or without chunked
%%     last is 400; other codings are 501 (§6.1, §6.3).</li>
%% </ul>
%% Framing errors are reported as `{bad_request, Why}' and friends; the
%% status each maps to lives in {@link falco_errors}.
%%
%% @private internal to falco
-module(falco_http1).

-export([tables/0]).
-export([parse/2, parse_more/2, default_limits/0, method/1, field_line/1]).

-export_type([request/0, limits/0, cont/0, reason/0, headers/0, body_framing/0]).

-type headers() :: [{binary(), binary()}].
-type body_framing() :: none | {length, non_neg_integer()} | chunked.
-type request() :: #{method := binary(),
                     target := binary(),
                     path := binary(),
                     qs := binary(),
                     version := {1, 0} | {1, 1},
                     headers := headers(),
                     host := binary(),
                     port := inet:port_number() | undefined,
                     body := body_framing(),
                     keep_alive := boolean(),
                     expect_continue := boolean()}.
-type limits() :: #{max_request_line := pos_integer(),
                    max_header_line := pos_integer(),
                    max_header_block := pos_integer(),
                    max_header_count := non_neg_integer(),
                    max_empty_lines := non_neg_integer()}.
-type reason() :: {bad_request, atom()}
                | uri_too_long
                | {header_too_large, line | block | count}
                | version_not_supported
                | {not_implemented, atom()}
                | expectation_failed.
-opaque cont() :: {request_line, binary(), non_neg_integer(), limits()}
                | {headers, binary(), head(), limits()}.

%% What is known of a request while its fields are being read.
-record(head, {method = <<>> :: binary(),
               target = <<>> :: binary(),
               path = <<>> :: binary(),
               qs = <<>> :: binary(),
               version = {1, 1} :: {1, 0} | {1, 1},
               abs_authority = undefined :: undefined | {binary(), inet:port_number() | undefined},
               headers = [] :: headers(),
               count = 0 :: non_neg_integer(),
               block = 0 :: non_neg_integer(),
               host = undefined :: undefined | binary(),
               content_length = undefined :: undefined | binary(),
               transfer_encoding = undefined :: undefined | binary(),
               connection = <<>> :: binary(),
               expect = [] :: [binary()]}).
-type head() :: #head{}.

-include("../core/falco_grammar.hrl").

%% @doc The default limits (bytes and counts): falco_opts has them.
-spec default_limits() -> limits().
default_limits() ->
    falco_opts:http1_limits(falco_opts:defaults()).

%% @doc Starts parsing a request head from `Bin'.
-spec parse(binary(), limits()) -> {ok, request(), binary()} | {more, cont()} | {error, reason()}.
parse(Bin, Limits) ->
    request_line(Bin, 0, Limits).

%% @doc Continues a parse with the next bytes from the wire.
-spec parse_more(binary(), cont()) -> {ok, request(), binary()} | {more, cont()} | {error, reason()}.
parse_more(More, {request_line, Buf, Empty, Limits}) ->
    request_line(<<Buf/binary, More/binary>>, Empty, Limits);
parse_more(More, {headers, Buf, Head, Limits}) ->
    headers(<<Buf/binary, More/binary>>, Head, Limits).

%% @doc Validates a method name (a token, RFC 9110 §9.1).
-spec method(binary()) -> boolean().
method(M) -> falco_grammar:is_token(M).

%% -- request line (RFC 9112 §3) ---------------------------------------------

request_line(<<"\r\n", Rest/binary>>, Empty, Limits = #{max_empty_lines := Max}) ->
    case Empty < Max of
        true -> request_line(Rest, Empty + 1, Limits);
        false -> {error, {bad_request, too_many_empty_lines}}
    end;
request_line(<<"\n", _/binary>>, _, _) ->
    {error, {bad_request, bare_lf}};
request_line(Bin, Empty, Limits = #{max_request_line := Max}) ->
    case binary:match(Bin, lf()) of
        nomatch when byte_size(Bin) > Max ->
            line_too_long(Bin, Max);
        nomatch ->
            {more, {request_line, Bin, Empty, Limits}};
        {Pos, 1} when Pos > Max ->
            line_too_long(Bin, Max);
        {0, 1} ->
            {error, {bad_request, bare_lf}};
        {Pos, 1} ->
            case binary:at(Bin, Pos - 1) of
                $\r ->
                    Line = binary:part(Bin, 0, Pos - 1),
                    Rest = binary:part(Bin, Pos + 1, byte_size(Bin) - Pos - 1),
                    case request_line_fields(Line) of
                        {ok, Head} -> headers(Rest, Head, Limits);
                        Error -> Error
                    end;
                _ ->
                    {error, {bad_request, bare_lf}}
            end
    end.

%% RFC 9112 §3: a method longer than any the server implements gets 501, a
%% request-target longer than it is willing to parse gets 414. The line is
%% over max_request_line; if its first Max bytes are all method (tchars,
%% no SP yet), the method is what is too long.
line_too_long(Bin, Max) ->
    case falco_grammar:is_token(binary:part(Bin, 0, Max)) of
        true -> {error, {not_implemented, method_too_long}};
        false -> {error, uri_too_long}
    end.

%% Common methods are matched whole so the method is a literal, not a
%% sub-binary of the receive buffer.
request_line_fields(<<"GET ", R/binary>>) -> target(R, <<"GET">>);
request_line_fields(<<"POST ", R/binary>>) -> target(R, <<"POST">>);
request_line_fields(<<"HEAD ", R/binary>>) -> target(R, <<"HEAD">>);
request_line_fields(<<"PUT ", R/binary>>) -> target(R, <<"PUT">>);
request_line_fields(<<"DELETE ", R/binary>>) -> target(R, <<"DELETE">>);
request_line_fields(Line) ->
    method_end(Line, 0).

method_end(Line, N) ->
    case Line of
        <<M:N/binary, " ", R/binary>> when N > 0 -> target(R, binary:copy(M));
        <<_:N/binary, C, _/binary>> when ?IS_TCHAR(C) -> method_end(Line, N + 1);
        _ -> {error, {bad_request, invalid_method}}
    end.

%% origin-form (RFC 9112 §3.2.1): the target ends at the SP before the
%% version, so its longest valid prefix must be followed by one.
target(<<"/", _/binary>> = R, Method) ->
    case falco_grammar:origin_form_prefix(R) of
        {T, Path, Qs, <<" ", Rest/binary>>} ->
            version(Rest, #head{method = Method, path = Path, qs = Qs, target = T});
        _ ->
            {error, {bad_request, invalid_target}}
    end;
target(<<"* ", Rest/binary>>, <<"OPTIONS">>) ->
    version(Rest, #head{method = <<"OPTIONS">>, path = <<"*">>, target = <<"*">>});
target(<<"* ", _/binary>>, _) ->
    {error, {bad_request, asterisk_form_not_options}};
target(R, <<"CONNECT">>) when R =/= <<>> ->
    {error, {not_implemented, connect}};
target(R, Method) ->
    absolute_form(R, Method).

%% absolute-form (RFC 9112 §3.2.2): the authority replaces Host.
absolute_form(R, Method) ->
    case R of
        <<S:4/binary, "://", Rest/binary>> ->
            absolute_form(falco_grammar:lower(S), Rest, Method, 80);
        <<S:5/binary, "://", Rest/binary>> ->
            absolute_form(falco_grammar:lower(S), Rest, Method, 443);
        _ ->
            {error, {bad_request, invalid_target}}
    end.

absolute_form(Scheme, Rest, Method, DefaultPort)
  when Scheme =:= <<"http">>; Scheme =:= <<"https">> ->
    AuthLen = authority_end(Rest, 0),
    <<Authority:AuthLen/binary, PathEtc/binary>> = Rest,
    case falco_grammar:authority(Authority) of
        {ok, Host, Port} ->
            case PathEtc of
                <<" ", Rest2/binary>> ->
                    version(Rest2, #head{method = Method, path = <<"/">>, target = <<"/">>,
                                         abs_authority = {Host, Port}});
                <<"?", _/binary>> ->
                    %% An empty path is "/" (RFC 9112 §3.2.2, RFC 9110 §4.2.3).
                    absolute_form(Scheme, <<Authority/binary, "/", PathEtc/binary>>, Method,
                                  DefaultPort);
                <<"/", _/binary>> ->
                    case falco_grammar:origin_form_prefix(PathEtc) of
                        {T, Path, Qs, <<" ", Rest2/binary>>} ->
                            version(Rest2, #head{method = Method, path = Path, qs = Qs,
                                                 target = T, abs_authority = {Host, Port}});
                        _ ->
                            {error, {bad_request, invalid_target}}
                    end;
                _ ->
                    {error, {bad_request, invalid_target}}
            end;
        error ->
            {error, {bad_request, invalid_target}}
    end;
absolute_form(_, _, _, _) ->
    {error, {bad_request, invalid_target}}.

authority_end(Bin, N) ->
    case Bin of
        <<_:N/binary, C, _/binary>> when C =/= $/, C =/= $\s, C =/= $? -> authority_end(Bin, N + 1);
        _ -> N
    end.

%% HTTP-version = "HTTP/" DIGIT "." DIGIT, case-sensitive (RFC 9112 §2.3).
%% A higher minor version of major version 1 is processed as the highest
%% minor version falco conforms to, 1.1 (RFC 9110 §6.2); 505 is for the
%% other major versions only.
version(<<"HTTP/1.1">>, Head) -> {ok, Head#head{version = {1, 1}}};
version(<<"HTTP/1.0">>, Head) -> {ok, Head#head{version = {1, 0}}};
version(<<"HTTP/1.", B>>, Head) when ?IS_DIGIT(B) -> {ok, Head#head{version = {1, 1}}};
version(<<"HTTP/", A, ".", B>>, _) when ?IS_DIGIT(A), ?IS_DIGIT(B) -> {error, version_not_supported};
version(_, _) -> {error, {bad_request, invalid_version}}.

%% -- header section (RFC 9112 §5) -------------------------------------------

%% The count and size of the field lines so far ride along as arguments
%% and go into the head only when the parse waits for more bytes: one record
%% update per field line instead of two.
headers(Bin, Head = #head{count = Count, block = Block}, Limits) ->
    lines(Bin, Head, Limits, Count, Block).

lines(<<"\r\n", Rest/binary>>, Head, _Limits, _, _) ->
    finish(Head, Rest);
lines(<<"\r">> = Buf, Head, Limits, Count, Block) ->
    {more, {headers, Buf, Head#head{count = Count, block = Block}, Limits}};
lines(<<>>, Head, Limits, Count, Block) ->
    {more, {headers, <<>>, Head#head{count = Count, block = Block}, Limits}};
lines(<<"\n", _/binary>>, _, _, _, _) ->
    {error, {bad_request, bare_lf}};
lines(<<C, _/binary>>, _, _, _, _) when ?IS_WS(C) ->
    {error, {bad_request, obs_fold}};
lines(Bin, Head, Limits = #{max_header_line := MaxLine, max_header_block := MaxBlock,
                            max_header_count := MaxCount}, Count, Block) ->
    %% One scan finds both the line's end and any forbidden byte: when the
    %% first byte no field value may hold (CTLs but HTAB, and DEL: stops())
    %% is the CR of a CRLF, the line holds none, so its value needs no
    %% check of its own.
    %% Anything else (a CTL inside the line, a bare CR or LF, a line not
    %% complete yet, a limit reached) takes the general path, line/5, which
    %% gives the same answer for every input. (Carrying the field list as
    %% an argument instead of in the head record was tried: 10-15 % slower,
    %% 2026-11-28.)
    case binary:match(Bin, stops()) of
        {Len, 1} when Len < MaxLine, Block + Len + 2 =< MaxBlock, Count < MaxCount ->
            case Bin of
                <<Line:Len/binary, "\r\n", Rest/binary>> ->
                    case field(Line, false) of
                        {error, _} = Error ->
                            Error;
                        Field ->
                            case note_field(Field, Head) of
                                #head{} = Head1 ->
                                    lines(Rest, Head1, Limits, Count + 1, Block + Len + 2);
                                Error -> Error
                            end
                    end;
                _ ->
                    line(Bin, Head, Limits, Count, Block)
            end;
        _ ->
            line(Bin, Head, Limits, Count, Block)
    end.

line(Bin, Head, Limits = #{max_header_line := MaxLine, max_header_block := MaxBlock,
                           max_header_count := MaxCount}, Count, Block) ->
    case binary:match(Bin, lf()) of
        nomatch when byte_size(Bin) > MaxLine ->
            {error, {header_too_large, line}};
        nomatch when Block + byte_size(Bin) > MaxBlock ->
            {error, {header_too_large, block}};
        nomatch ->
            {more, {headers, Bin, Head#head{count = Count, block = Block}, Limits}};
        {Pos, 1} when Pos > MaxLine ->
            {error, {header_too_large, line}};
        {Pos, 1} when Block + Pos + 1 > MaxBlock ->
            {error, {header_too_large, block}};
        {_, 1} when Count >= MaxCount ->
            {error, {header_too_large, count}};
        {Pos, 1} ->
            %% Pos > 0: a line feed first is the bare_lf clause above. The
            %% field-to-next-line step is written out here and in lines/5:
            %% a helper taking Rest as an argument made the parse about 20 %
            %% slower (2026-11-28), Rest then being made a sub-binary per
            %% line instead of the match context lines/5 goes on with.
            Len = Pos - 1,
            case Bin of
                <<Line:Len/binary, "\r\n", Rest/binary>> ->
                    case field(Line, true) of
                        {error, _} = Error ->
                            Error;
                        Field ->
                            case note_field(Field, Head) of
                                #head{} = Head1 ->
                                    lines(Rest, Head1, Limits, Count + 1, Block + Pos + 1);
                                Error -> Error
                            end
                    end;
                _ ->
                    {error, {bad_request, bare_lf}}
            end
    end.

%% @doc Parses one field line (without its CRLF); trailer sections reuse it.
-spec field_line(binary()) -> {ok, binary(), binary()} | {error, reason()}.
field_line(Line) ->
    case field(Line, true) of
        {error, _} = Error -> Error;
        {Name, Value} -> {ok, Name, Value}
    end.

%% field-line = field-name ":" OWS field-value OWS, as the pair that goes
%% into the request's field list. Scans recurse on the rest of the binary
%% (one match context for the whole line) instead of matching at an
%% offset, which re-created a match context per byte; compiled patterns and
%% name literals below (2026-11-22: a head of 20 mixed-case fields ~19 ->
%% ~12 us). The loop allocates little beyond what it keeps (no {ok, ...}
%% wrappers, one record update per line, a line cut and its CRLF checked in
%% one match) and names are lowercased seven bytes at a time
%% (falco_grammar): headers_heavy 34 -> 30 us of server CPU per request,
%% 30.0 k -> 33.3 k req/s against elli's 29.2 k (4 interleaved rounds,
%% 2026-11-25); the garbage counted for more than the instructions.
%% `Check': whether the value's bytes still need checking (false when the
%% line is known to hold no control byte).
field(Line, Check) ->
    case name_scan(Line, 0) of
        {error, _} = Error ->
            Error;
        N when N > 0 ->
            <<Name:N/binary, ":", Value/binary>> = Line,
            field_value(falco_grammar:trim_leading(Value), Name, Check);
        N ->
            Len = -N,
            <<Name:Len/binary, ":", Value/binary>> = Line,
            field_value(falco_grammar:trim_leading(Value), lower_name(Name), Check)
    end.

%% The length of the name before the colon, negated when the name has an
%% uppercase letter (to be lowercased); 0 is never returned.
name_scan(<<C, R/binary>>, N) when ?IS_LOWER(C); C =:= $-; ?IS_DIGIT(C) ->
    name_scan(R, N + 1);
name_scan(<<":", _/binary>>, N) when N > 0 ->
    N;
name_scan(<<C, R/binary>>, N) when ?IS_UPPER(C) ->
    upper_scan(R, N + 1);
name_scan(<<C, R/binary>>, N) when ?IS_TCHAR(C) ->
    name_scan(R, N + 1);
name_scan(Bin, N) ->
    name_error(Bin, N).

upper_scan(<<C, R/binary>>, N) when ?IS_TCHAR(C) ->
    upper_scan(R, N + 1);
upper_scan(<<":", _/binary>>, N) ->
    -N;
upper_scan(Bin, N) ->
    name_error(Bin, N).

name_error(<<C, _/binary>>, N) when N > 0, ?IS_WS(C) ->
    {error, {bad_request, header_whitespace_before_colon}};
name_error(_, _) ->
    {error, {bad_request, invalid_header_name}}.

%% Trims the trailing OWS (RFC 9112 §5: the leading OWS is gone already)
%% and checks what is left with the field-value rule HTTP/2 uses too
%% (falco_grammar:is_field_value/1, RFC 9110 §5.5), unless the line's scan
%% has shown it holds none of the bytes the rule refuses.
field_value(Value, Name, false) ->
    {Name, falco_grammar:trim_trailing(Value)};
field_value(Value0, Name, true) ->
    Value = falco_grammar:trim_trailing(Value0),
    case falco_grammar:is_field_value(Value) of
        true -> {Name, Value};
        false -> {error, {bad_request, invalid_header_value}}
    end.

%% Compiled patterns, stored once per node when the falco application
%% starts ({@link tables/0}, put by falco_app); atom keys, since a tuple key
%% is hashed on every get. Used without the application (a unit test), the
%% pattern is compiled for the call and not stored: this module never
%% writes a persistent term (replacing one forces a global GC, and two
%% processes storing a fresh compiled pattern at once would replace it).
lf() ->
    case persistent_term:get(falco_http1_lf, undefined) of
        undefined -> binary:compile_pattern(<<"\n">>);
        P -> P
    end.

%% The bytes no field value holds, CR and LF among them (RFC 9110 §5.5):
%% falco_grammar's pattern, the one rule of HTTP/1.1 and HTTP/2.
stops() -> falco_grammar:field_value_stops().

%% @doc The persistent terms this module reads, for falco_app to store
%% once when the application starts (falco_grammar's are its own).
-spec tables() -> [{atom(), binary:cp()}].
tables() ->
    [{falco_http1_lf, binary:compile_pattern(<<"\n">>)}].

%% Framing and routing fields are remembered as they go by.
%%
%% RFC 9110 §5.1 makes `Content_Length' a field of its own, but proxies and
%% CGI-style gateways that treat "_" like "-" turn it into a second
%% Content-Length (or Transfer-Encoding) behind falco's back: a framing
%% disagreement, i.e. request smuggling (RFC 9112 §11.2). Such a name is
%% refused, whatever its case (names are lowercased by now). Host has no
%% "-", so no spelling with "_" becomes Host.
note_field({<<"content_length">>, _}, _) ->
    {error, {bad_request, underscore_framing_field}};
note_field({<<"transfer_encoding">>, _}, _) ->
    {error, {bad_request, underscore_framing_field}};
note_field({<<"host">>, V} = F, Head = #head{host = undefined, headers = Hs}) ->
    Head#head{host = V, headers = [F | Hs]};
note_field({<<"host">>, _}, _) ->
    {error, {bad_request, duplicate_host}};
note_field({<<"content-length">>, V} = F, Head = #head{content_length = CL, headers = Hs}) ->
    Head#head{content_length = join(CL, V), headers = [F | Hs]};
note_field({<<"transfer-encoding">>, V} = F, Head = #head{transfer_encoding = TE, headers = Hs}) ->
    Head#head{transfer_encoding = join(TE, V), headers = [F | Hs]};
note_field({<<"connection">>, V} = F, Head = #head{connection = C, headers = Hs}) ->
    Head#head{connection = <<C/binary, ",", V/binary>>, headers = [F | Hs]};
note_field({<<"expect">>, V} = F, Head = #head{expect = E, headers = Hs}) ->
    Head#head{expect = [V | E], headers = [F | Hs]};
note_field(F, Head = #head{headers = Hs}) ->
    Head#head{headers = [F | Hs]}.

%% Repeated lines of a #list field are one list (RFC 9110 §5.3).
join(undefined, V) -> V;
join(Acc, V) -> <<Acc/binary, ",", V/binary>>.

%% -- message semantics once the head is complete ----------------------------

finish(Head = #head{version = Version}, Rest) ->
    case host(Head) of
        {ok, Host, Port} ->
            case framing(Head) of
                {ok, Body} ->
                    case expect(Head) of
                        {ok, Continue} ->
                            {ok, #{method => Head#head.method,
                                   target => Head#head.target,
                                   path => Head#head.path,
                                   qs => Head#head.qs,
                                   version => Version,
                                   headers => lists:reverse(Head#head.headers),
                                   host => Host,
                                   port => Port,
                                   body => Body,
                                   keep_alive => keep_alive(Version, Head#head.connection),
                                   expect_continue => Continue andalso Body =/= none},
                             Rest};
                        Error ->
                            Error
                    end;
                Error ->
                    Error
            end;
        Error ->
            Error
    end.

%% RFC 9112 §3.2: Host is required on every 1.1 request, absolute-form
%% included, and must be valid; the authority of an absolute-form target
%% wins over it (§3.2.2).
host(#head{host = undefined, version = {1, 1}}) ->
    {error, {bad_request, missing_host}};
host(#head{abs_authority = {Host, Port}, host = H}) ->
    case H =:= undefined orelse H =:= <<>> orelse falco_grammar:authority(H) =/= error of
        true -> {ok, Host, Port};
        false -> {error, {bad_request, invalid_host}}
    end;
host(#head{host = undefined}) ->
    %% A 1.0 request may lack Host (§3.2 only requires it of 1.1).
    {ok, <<>>, undefined};
host(#head{host = <<>>}) ->
    %% §3.3: with an origin- or asterisk-form target, an empty Host leaves
    %% the target URI without an authority, which an http(s) URI must have
    %% (RFC 9110 §4.2.1, §4.2.2). falco has no configured default host to
    %% put there, so the request is rejected.
    {error, {bad_request, empty_host}};
host(#head{host = H}) ->
    case falco_grammar:authority(H) of
        {ok, Host, Port} -> {ok, Host, Port};
        error -> {error, {bad_request, invalid_host}}
    end.

%% Message body length (RFC 9112 §6.1, §6.3).
framing(#head{transfer_encoding = undefined, content_length = undefined}) ->
    {ok, none};
framing(#head{transfer_encoding = undefined, content_length = CL}) ->
    content_length(binary:split(CL, <<",">>, [global]), undefined);
framing(#head{content_length = CL}) when CL =/= undefined ->
    {error, {bad_request, transfer_encoding_with_content_length}};
framing(#head{version = {1, 0}}) ->
    {error, {bad_request, transfer_encoding_in_http10}};
framing(#head{transfer_encoding = TE}) ->
    Codings = falco_grammar:lower_elements(TE),
    case lists:reverse(Codings) of
        [<<"chunked">> | Before] ->
            case Before of
                [] -> {ok, chunked};
                _ ->
                    case lists:member(<<"chunked">>, Before) of
                        true -> {error, {bad_request, chunked_twice}};
                        false -> {error, {not_implemented, transfer_coding}}
                    end
            end;
        _ ->
            {error, {bad_request, chunked_not_last}}
    end.

%% Values may repeat ("5, 5" or two lines), but must all be equal.
content_length([], Len) ->
    {ok, {length, Len}};
content_length([V0 | More], Len) ->
    case falco_grammar:length_value(falco_grammar:trim(V0)) of
        {ok, N} ->
            content_length(More, Len, N);
        {error, overflow} ->
            %% A framing fault, 400, with the reason of an overlong chunk
            %% size (falco_http1_chunked). A length that fits but is over
            %% max_body is the connection's 413.
            {error, {bad_request, length_overflow}};
        {error, invalid} ->
            {error, {bad_request, invalid_content_length}}
    end.

content_length(More, Len, N) ->
    case Len =:= undefined orelse Len =:= N of
        true -> content_length(More, N);
        false -> {error, {bad_request, conflicting_content_length}}
    end.


%% RFC 9110 §10.1.1: the rule HTTP/2 applies too (falco_grammar:expect/1:
%% 100-continue or 417); a 1.0 request's Expect is ignored.
expect(#head{version = {1, 0}}) -> {ok, false};
expect(#head{expect = Values}) ->
    case falco_grammar:expect(lists:reverse(Values)) of
        none -> {ok, false};
        continue -> {ok, true};
        {error, _} = Error -> Error
    end.

%% RFC 9112 §9.3: 1.1 persists unless "close"; 1.0 only with "keep-alive".
keep_alive({1, 1}, <<>>) ->
    true;
keep_alive(Version, Connection) ->
    Tokens = falco_grammar:lower_elements(Connection),
    case lists:member(<<"close">>, Tokens) of
        true -> false;
        false -> Version =:= {1, 1} orelse lists:member(<<"keep-alive">>, Tokens)
    end.

%% -- helpers ---------------------------------------------------------------

%% Field names as clients usually capitalise them map to literals (no
%% allocation, 10x faster than lowercasing); anything else is lowercased.
lower_name(<<"Host">>) -> <<"host">>;
lower_name(<<"User-Agent">>) -> <<"user-agent">>;
lower_name(<<"Accept">>) -> <<"accept">>;
lower_name(<<"Accept-Encoding">>) -> <<"accept-encoding">>;
lower_name(<<"Accept-Language">>) -> <<"accept-language">>;
lower_name(<<"Connection">>) -> <<"connection">>;
lower_name(<<"Content-Type">>) -> <<"content-type">>;
lower_name(<<"Content-Length">>) -> <<"content-length">>;
lower_name(<<"Cookie">>) -> <<"cookie">>;
lower_name(<<"Referer">>) -> <<"referer">>;
lower_name(<<"Origin">>) -> <<"origin">>;
lower_name(<<"Cache-Control">>) -> <<"cache-control">>;
lower_name(<<"Pragma">>) -> <<"pragma">>;
lower_name(<<"Authorization">>) -> <<"authorization">>;
lower_name(<<"If-None-Match">>) -> <<"if-none-match">>;
lower_name(<<"If-Modified-Since">>) -> <<"if-modified-since">>;
lower_name(<<"Transfer-Encoding">>) -> <<"transfer-encoding">>;
lower_name(<<"Expect">>) -> <<"expect">>;
lower_name(<<"Range">>) -> <<"range">>;
lower_name(<<"Upgrade">>) -> <<"upgrade">>;
lower_name(<<"Upgrade-Insecure-Requests">>) -> <<"upgrade-insecure-requests">>;
lower_name(<<"X-Forwarded-For">>) -> <<"x-forwarded-for">>;
lower_name(<<"X-Request-Id">>) -> <<"x-request-id">>;
lower_name(<<"X-Requested-With">>) -> <<"x-requested-with">>;
lower_name(<<"Sec-Fetch-Site">>) -> <<"sec-fetch-site">>;
lower_name(<<"Sec-Fetch-Mode">>) -> <<"sec-fetch-mode">>;
lower_name(<<"Sec-Fetch-Dest">>) -> <<"sec-fetch-dest">>;
lower_name(<<"Sec-WebSocket-Key">>) -> <<"sec-websocket-key">>;
lower_name(<<"Sec-WebSocket-Version">>) -> <<"sec-websocket-version">>;
lower_name(Name) -> falco_grammar:lower(Name).
