%% @doc Pure HTTP/2 message rules (RFC 9113 §8): turns a decoded request
%% field list into falco's request map, checks trailers, and filters
%% response fields.
%%
%% {@link request/2} returns `{ok, Req}' with the same shape HTTP/1.1 gives
%% (see {@link falco_req}: version `{2, 0}' (HTTP/3 asks for `{3, 0}',
%% RFC 9114 §4.3 making its rules the same), host and port from
%% `:authority', the target split into path and query, a `host' field added
%% when the client sent only `:authority', cookies split across fields
%% joined with "; " as §8.2.3 says), `{error, {malformed, Why}}' for a
%% malformed request (§8.1.1: the caller resets the stream with
%% PROTOCOL_ERROR), or `{error, {reply, Reason}}' for a well-formed request
%% falco answers with an error status (CONNECT: 501, bad host: 400, too many
%% fields: 431, an expectation other than 100-continue: 417), as HTTP/1.1
%% would. `expect_continue' is true when Expect asks for 100-continue
%% (RFC 9110 §10.1.1, one rule for both protocols) and content is to come.
%%
%% Malformed, after §8.2 and §8.3.1: uppercase or non-token field names,
%% NUL/CR/LF or other controls in values, leading or trailing whitespace,
%% connection-specific fields (connection, keep-alive, proxy-connection,
%% transfer-encoding, upgrade), `te' other than "trailers", unknown,
%% repeated, response or misplaced pseudo-fields, a missing `:method',
%% `:scheme' or `:path', an empty or relative `:path', `:authority' with
%% userinfo or naming another host or port than Host (compared after
%% normalisation: case-insensitive host, a missing port is the scheme's
%% default), and an invalid Content-Length.
%%
%% The host and port of `:authority' or Host (RFC 9110 §7.2), the
%% origin-form of `:path', tokens, field values (RFC 9110 §5.5) and which
%% fields are connection-specific (RFC 9110 §7.6.1, RFC 9113 §8.2.2) are
%% read by {@link falco_grammar}, with the rules HTTP/1.1 applies; this
%% module does not depend on the HTTP/1.1 codec.
%%
%% With `connect_protocol' (we sent SETTINGS_ENABLE_CONNECT_PROTOCOL), an
%% extended CONNECT (RFC 8441 §4) with `:protocol websocket' is a request
%% like the GET of an HTTP/1.1 WebSocket handshake: `method' is `GET',
%% `protocol' is `<<"websocket">>'. Another `:protocol' is answered 501;
%% `:protocol' on another method, or without our setting, is malformed.
%%
%% @private internal to falco
-module(falco_http2_request).

-export([request/2, method/1, trailers/1, response_fields/1]).

-export_type([malformed/0]).

-type malformed() :: {malformed, atom()}.
-type headers() :: [{binary(), binary()}].

-include("../core/falco_grammar.hrl").

%% What the fields said, built once the pseudo-fields are read. `headers':
%% the regular fields, the decoder's list as it came (none is rebuilt
%% unless cookie crumbs are joined); `cookie': whether there are crumbs.
-record(acc, {method :: undefined | binary(),
              scheme :: undefined | binary(),
              authority :: undefined | binary(),
              path :: undefined | binary(),
              protocol :: undefined | binary(),
              headers = [] :: headers(),
              cookie = false :: boolean(),
              host :: undefined | binary(),
              length :: undefined | binary(),
              expect = [] :: [binary()]}).

%% @doc Builds the request map from a decoded field block. `Opts':
%% `max_header_count' (fields, as for HTTP/1.1), `end_stream' (the
%% HEADERS frame ended the stream: no body), `connect_protocol' (we
%% sent SETTINGS_ENABLE_CONNECT_PROTOCOL; false if left out) and `version'
%% (the request map's, `{2, 0}' if left out; HTTP/3 gives `{3, 0}').
%%
%% The fields are read without building anything per field (2026-11-29:
%% 425 -> 243 words allocated for an h2load GET of seven fields): the
%% pseudo-fields are held in arguments, the regular fields checked where
%% they lie, and the request's `headers' is the decoder's list itself.
-spec request(headers(), #{max_header_count := non_neg_integer(), end_stream := boolean(),
                           connect_protocol => boolean(), version => {2, 0} | {3, 0}}) ->
          {ok, map()} | {error, malformed() | {reply, falco_errors:reason()}}.
request(Fields, Opts) ->
    case pseudo(Fields, undefined, undefined, undefined, undefined, undefined) of
        {ok, Acc} -> finish(Acc, Opts);
        {error, Why} -> {error, {malformed, Why}}
    end.

%% @doc The method of a field block, if it has one: for a request falco
%% answers with an error status (a reply to HEAD carries no content, RFC
%% 9110 §9.3.2).
-spec method(headers()) -> binary() | undefined.
method(Fields) ->
    case lists:keyfind(<<":method">>, 1, Fields) of
        {_, Method} -> Method;
        false -> undefined
    end.

%% §8.3: pseudo-fields come first, each at most once.
pseudo([{<<":method">>, V} | Rest], undefined, S, A, P, Pr) ->
    case falco_grammar:is_token(V) of
        true -> pseudo(Rest, V, S, A, P, Pr);
        false -> {error, bad_method}
    end;
pseudo([{<<":scheme">>, V} | Rest], M, undefined, A, P, Pr) ->
    case scheme(V) of
        true -> pseudo(Rest, M, V, A, P, Pr);
        false -> {error, bad_scheme}
    end;
pseudo([{<<":authority">>, V} | Rest], M, S, undefined, P, Pr) ->
    pseudo(Rest, M, S, V, P, Pr);
pseudo([{<<":path">>, V} | Rest], M, S, A, undefined, Pr) ->
    pseudo(Rest, M, S, A, V, Pr);
pseudo([{<<":protocol">>, V} | Rest], M, S, A, P, undefined) ->
    pseudo(Rest, M, S, A, P, V);
pseudo([{<<":", _/binary>> = N, _} | _], _, _, _, _, _) ->
    {error, pseudo_error(N)};
pseudo(Regular, M, S, A, P, Pr) ->
    regular(Regular, #acc{method = M, scheme = S, authority = A, path = P, protocol = Pr,
                          headers = Regular}).

pseudo_error(N) when N =:= <<":method">>; N =:= <<":scheme">>; N =:= <<":authority">>;
                     N =:= <<":path">>; N =:= <<":protocol">> ->
    duplicate_pseudo_header;
pseudo_error(<<":status">>) ->
    response_pseudo_header;
pseudo_error(_) ->
    unknown_pseudo_header.

regular([{Name, Value} | Rest], Acc) ->
    case field_name(Name) of
        ok ->
            case falco_grammar:is_field_value(Value) of
                true -> regular_field(Name, Value, Rest, Acc);
                false -> {error, bad_header_value}
            end;
        pseudo -> {error, pseudo_header_after_regular};
        error -> {error, bad_header_name}
    end;
regular([], Acc) ->
    {ok, Acc}.

%% §8.2.3: cookie crumbs are joined into one field (headers/1).
regular_field(<<"cookie">>, _, Rest, Acc = #acc{cookie = false}) ->
    regular(Rest, Acc#acc{cookie = true});
regular_field(<<"host">>, V, Rest, Acc = #acc{host = undefined}) ->
    regular(Rest, Acc#acc{host = V});
regular_field(<<"host">>, _, _, _) ->
    {error, duplicate_host};
regular_field(<<"expect">>, V, Rest, Acc = #acc{expect = E}) ->
    regular(Rest, Acc#acc{expect = [V | E]});
regular_field(<<"content-length">>, V, Rest, Acc = #acc{length = L}) when L =:= undefined; L =:= V ->
    regular(Rest, Acc#acc{length = V});
regular_field(<<"content-length">>, _, _, _) ->
    {error, conflicting_content_length};
regular_field(Name, Value, Rest, Acc) ->
    %% §8.2.2: a connection-specific field makes a request malformed (none
    %% of the names above is one).
    case falco_grammar:is_connection_specific(Name, Value) of
        false -> regular(Rest, Acc);
        true -> {error, connection_specific(Name)}
    end.

connection_specific(<<"te">>) -> bad_te;
connection_specific(_) -> connection_specific_header.

%% RFC 8441 §4: `:protocol' only once we sent SETTINGS_ENABLE_CONNECT_PROTOCOL,
%% only on CONNECT, and such a CONNECT carries `:scheme' and `:path'.
finish(#acc{protocol = P}, #{connect_protocol := false}) when P =/= undefined ->
    {error, {malformed, unexpected_protocol}};
finish(#acc{protocol = P, method = M}, _) when P =/= undefined, M =/= <<"CONNECT">> ->
    {error, {malformed, unexpected_protocol}};
finish(#acc{protocol = P, scheme = S, path = T}, _)
  when P =/= undefined, S =:= undefined orelse T =:= undefined ->
    {error, {malformed, bad_connect}};
finish(Acc = #acc{protocol = <<"websocket">>}, Opts) ->
    %% The one routing rule of WebSocket over HTTP/2: the extended CONNECT
    %% is presented as the GET of an HTTP/1.1 handshake (routes, middleware
    %% and handlers see `GET'), with `protocol' recording what it asks for
    %% (falco_ws_handshake answers it 200, not 101).
    case finish(Acc#acc{method = <<"GET">>, protocol = undefined}, Opts) of
        {ok, Req} -> {ok, Req#{protocol => <<"websocket">>}};
        Error -> Error
    end;
finish(#acc{protocol = P}, _) when P =/= undefined ->
    %% Other protocols (connect-udp, ...) are not served.
    {error, {reply, {not_implemented, connect_protocol}}};
finish(#acc{method = <<"CONNECT">>, scheme = undefined, path = undefined, authority = A}, _)
  when A =/= undefined ->
    {error, {reply, {not_implemented, connect}}};
finish(#acc{method = <<"CONNECT">>}, _) ->
    {error, {malformed, bad_connect}};
finish(#acc{method = undefined}, _) -> {error, {malformed, missing_method}};
finish(#acc{scheme = undefined}, _) -> {error, {malformed, missing_scheme}};
finish(#acc{path = undefined}, _) -> {error, {malformed, missing_path}};
finish(Acc = #acc{method = Method, path = Target}, Opts) ->
    case target(Target, Method) of
        {ok, Path, Qs} ->
            case content_length(Acc#acc.length, Opts) of
                {ok, Body} -> finish(Acc, Path, Qs, Body, Opts);
                Error -> Error
            end;
        error ->
            {error, {malformed, bad_path}}
    end.

finish(Acc = #acc{authority = Authority, host = Host, scheme = Scheme, headers = Regular}, Path,
       Qs, Body, Opts = #{max_header_count := MaxCount}) ->
    case authority(Authority, Host, Scheme) of
        {error, _} = Error ->
            Error;
        _ when length(Regular) > MaxCount ->
            {error, {reply, {header_too_large, count}}};
        {ok, H, Port} ->
            case falco_grammar:expect(lists:reverse(Acc#acc.expect)) of
                {error, Reason} ->
                    {error, {reply, Reason}};
                Expect ->
                    Headers0 = headers(Acc),
                    Headers = case Authority =/= undefined andalso Host =:= undefined of
                                  true -> [{<<"host">>, Authority} | Headers0];
                                  false -> Headers0
                              end,
                    %% A 100 only where content is still to come.
                    Continue = Expect =:= continue andalso Body =/= none
                        andalso Body =/= {length, 0},
                    {ok, #{method => Acc#acc.method, target => Acc#acc.path, path => Path,
                           qs => Qs, version => maps:get(version, Opts, {2, 0}),
                           headers => Headers, host => H,
                           port => Port, body => Body, keep_alive => true,
                           expect_continue => Continue}}
            end
    end.

%% The regular fields as they came, but for cookie crumbs: joined with
%% "; " into the first one's place (§8.2.3).
headers(#acc{headers = Hs, cookie = false}) ->
    Hs;
headers(#acc{headers = Hs}) ->
    Cookie = iolist_to_binary(lists:join(<<"; ">>, [V || {<<"cookie">>, V} <- Hs])),
    {Before, [_ | After]} = lists:splitwith(fun({N, _}) -> N =/= <<"cookie">> end, Hs),
    Before ++ [{<<"cookie">>, Cookie} | [F || F = {N, _} <- After, N =/= <<"cookie">>]].

%% §8.3.1: ":path" is not empty; origin-form for http(s), "*" for OPTIONS.
target(<<"*">>, <<"OPTIONS">>) ->
    {ok, <<"*">>, <<>>};
target(<<"/", _/binary>> = T, _) ->
    falco_grammar:origin_form(T);
target(_, _) ->
    error.

content_length(undefined, #{end_stream := true}) ->
    {ok, none};
content_length(undefined, _) ->
    %% Length not known in advance: the body ends with END_STREAM.
    {ok, chunked};
content_length(V, Opts) ->
    case {falco_grammar:length_value(V), Opts} of
        {{ok, 0}, _} -> {ok, {length, 0}};
        %% §8.1.1: content would have to follow, and cannot.
        {{ok, _}, #{end_stream := true}} -> {error, {malformed, content_length_mismatch}};
        {{ok, N}, _} -> {ok, {length, N}};
        %% As over HTTP/1.1: too large to represent is a 400.
        {{error, overflow}, _} -> {error, {reply, {bad_request, length_overflow}}};
        {{error, invalid}, _} -> {error, {malformed, bad_content_length}}
    end.

%% §8.3.1: ":authority" has no userinfo; Host, when both are present,
%% names the same thing. Host and port as for HTTP/1.1 (RFC 9110 §7.2),
%% read by falco_grammar, which lowercases the host (§4.2.3: it is
%% case-insensitive); the two are compared after that, a port left out
%% being the scheme's default (§4.2.3: "example.com" and "example.com:80"
%% are the same http origin).
authority(undefined, undefined, _) ->
    {ok, <<>>, undefined};
authority(undefined, Host, _) ->
    parse_authority(Host);
authority(A, Host, Scheme) ->
    case binary:match(A, <<"@">>) of
        nomatch when Host =:= undefined; Host =:= A ->
            parse_authority(A);
        nomatch ->
            case {parse_authority(A), parse_authority(Host)} of
                {{ok, H, P1} = Ok, {ok, H, P2}} ->
                    case default_port(P1, Scheme) =:= default_port(P2, Scheme) of
                        true -> Ok;
                        false -> {error, {malformed, authority_host_mismatch}}
                    end;
                {{ok, _, _}, {ok, _, _}} -> {error, {malformed, authority_host_mismatch}};
                {{ok, _, _}, Error} -> Error;
                {Error, _} -> Error
            end;
        _ ->
            {error, {malformed, authority_userinfo}}
    end.

default_port(undefined, <<"http">>) -> 80;
default_port(undefined, <<"https">>) -> 443;
default_port(Port, _) -> Port.

parse_authority(A) ->
    case falco_grammar:authority(A) of
        error -> {error, {reply, {bad_request, invalid_host}}};
        HostPort -> HostPort
    end.

%% @doc Checks a trailer field block (§8.1: no pseudo-fields, §8.2 rules).
-spec trailers(headers()) -> ok | {error, malformed()}.
trailers([{Name, Value} | Rest]) ->
    case field_name(Name) of
        ok ->
            case falco_grammar:is_field_value(Value) of
                true ->
                    case falco_grammar:is_connection_specific(Name, Value) of
                        false -> trailers(Rest);
                        true -> {error, {malformed, connection_specific(Name)}}
                    end;
                false -> {error, {malformed, bad_header_value}}
            end;
        pseudo -> {error, {malformed, pseudo_header_in_trailers}};
        error -> {error, {malformed, bad_header_name}}
    end;
trailers([]) ->
    ok.

%% @doc Response fields fit for HTTP/2: names are already lowercase (the
%% pipeline did it); values are flattened to binaries for HPACK and
%% connection-specific fields dropped (§8.2.2: never sent on HTTP/2; the
%% rule of falco_grammar, which a request is checked with too).
-spec response_fields([{binary(), iodata()}]) -> headers().
response_fields([{N, V0} | Rest]) ->
    V = iolist_to_binary(V0),
    case falco_grammar:is_connection_specific(N, V) of
        true -> response_fields(Rest);
        false -> [{N, V} | response_fields(Rest)]
    end;
response_fields([]) ->
    [].

%% -- character classes ------------------------------------------------------

%% §8.2.1: no uppercase; we also require a token (RFC 9110 §5.1).
field_name(<<":", _/binary>>) -> pseudo;
field_name(Name) ->
    case falco_grammar:is_lower_token(Name) of
        true -> ok;
        false -> error
    end.

%% scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) (RFC 3986 §3.1)
scheme(<<C, R/binary>>) when ?IS_ALPHA(C) -> scheme_rest(R);
scheme(_) -> false.

scheme_rest(<<C, R/binary>>) when ?IS_ALPHA(C); ?IS_DIGIT(C); C =:= $+; C =:= $-; C =:= $. ->
    scheme_rest(R);
scheme_rest(<<>>) -> true;
scheme_rest(_) -> false.
