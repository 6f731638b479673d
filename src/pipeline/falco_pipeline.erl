%% @doc The request pipeline shared by every protocol (RFC 9110 semantics).
%%
%% It calls the handler, turns its return into a response and hands that to
%% the protocol's stream ({@link falco_stream}): fields checked and
%% lowercased (RFC 9110 §5.1, §5.5: no CR, LF or NUL can be injected, no
%% other control byte sent, whitespace at either end trimmed), Date
%% added (§6.6.1), Content-Length computed for full replies (§8.6), no body
%% for HEAD (§9.3.2), 1xx/204/304 (§6.4.1) while HEAD keeps the GET fields.
%% A handler that crashes gets a 500 and a log line naming the request; one
%% that hits a limit while reading the body gets that limit's status.
%%
%% @private internal to falco
-module(falco_pipeline).

-export([serve/5, run/4, run/5, precheck/2, error_reply/4, rejected/3, shed/4, check_response/1, check_fields/1,
         body_size/1, alt_svc/2]).
-export_type([checked/0, checked_body/0]).

%% The Alt-Svc field value of a listener's responses, if it serves HTTP/3.
-define(ALT_SVC(Listener), {?MODULE, alt_svc, Listener}).

%% A response term as check_response/1 accepted it: fields checked and
%% lowercased (with whether a Date was among them), the full body's size
%% computed (`none' for 204 and 304, whose body is never sent).
-type checked() :: {full, 200..599, falco_stream:headers(), boolean(), checked_body()}
                 | {stream, 200..599, falco_stream:headers(), boolean(),
                    fun((fun((iodata()) -> ok | {error, term()})) -> term())}
                 | {websocket, module(), term(), map()}.
-type checked_body() :: none
                      | {iodata, iodata(), non_neg_integer()}
                      | {file, file:filename_all(), non_neg_integer(), non_neg_integer() | all}.

%% @doc One request, the sequence of every protocol's driver: the checks
%% made before any handler runs ({@link precheck/2}), then the handler
%% under the listener's `handler_timeout' ({@link run/5}), or the error
%% reply of the check that refused the request.
-spec serve(falco_req:req(), falco_handler:handler(), module(), falco_stream:state(),
            #{max_body := non_neg_integer(), atom() => term()}) ->
          {ok, falco_stream:state()} | {error, term()}.
serve(Req, Handler, Mod, S, Conf) ->
    case precheck(Req, Conf) of
        ok -> run(Req, Handler, Mod, S, maps:get(handler_timeout, Conf, infinity));
        {error, Reason} -> error_reply(Reason, Req, Mod, S)
    end.

%% @doc The checks made before any handler runs, the same for every
%% protocol: a body announced (Content-Length) larger than `max_body' is
%% refused with 413 before a byte of it is read (RFC 9110 §15.5.14).
-spec precheck(map(), #{max_body := non_neg_integer(), atom() => term()}) ->
          ok | {error, falco_errors:reason()}.
precheck(#{body := {length, N}}, #{max_body := Max}) ->
    case falco_stream:body_fits(N, Max) of
        true -> ok;
        false -> {error, content_too_large}
    end;
precheck(_Request, _Conf) ->
    ok.

%% @doc {@link run/4} under the listener's `handler_timeout' (ms, or
%% `infinity': no deadline, no cost): see {@link falco_handler_deadline}.
-spec run(falco_req:req(), falco_handler:handler(), module(), falco_stream:state(), timeout()) ->
          {ok, falco_stream:state()} | {error, term()}.
run(Req, Handler, Mod, S, Timeout) ->
    %% The request in progress, for falco:connection_list/1 (read with
    %% process_info/2: a process inside a handler cannot answer sys).
    ok = falco_stats:mark(Req),
    Result = run_in(Req, Handler, Mod, S, Timeout),
    ok = falco_stats:unmark(),
    Result.

run_in(Req, Handler, Mod, S, infinity) ->
    run(Req, Handler, Mod, S);
run_in(Req, Handler, Mod, S, Timeout) ->
    %% The watchdog keeps only what the 503 and the log line need.
    About = maps:with([method, path, peer], Req),
    G = falco_handler_deadline:start(
          Timeout, Mod, S,
          #{reply => fun() -> error_reply(handler_timeout, About, Mod, S) end,
            log => fun(What) -> log_handler_timeout(About, Timeout, What) end}),
    falco_handler_deadline:finish(G, run(Req, Handler, falco_handler_deadline, G)).

%% @doc Runs `Handler' for `Req' and answers it on stream `Mod'/`S'.
-spec run(falco_req:req(), falco_handler:handler(), module(), falco_stream:state()) ->
          {ok, falco_stream:state()} | {error, term()}.
run(Req, Handler, Mod, S) ->
    try falco_handler:call(Handler, Req) of
        Resp -> respond(Resp, Req, Mod, S, Handler)
    catch
        throw:{falco_error, Reason} ->
            error_reply(Reason, Req, Mod, S);
        Class:Reason:Stack ->
            %% The report is formatted (bounded), the answer sent, and then
            %% the report logged: over HTTP/2 the stream's process may be
            %% stopped as soon as the client has its answer.
            Report = falco_report:crash(Req, Class, Reason, Stack),
            Result = error_reply(internal_error, Req, Mod, S),
            log(Report),
            Result
    end.


%% @doc Sends the error reply for `Reason' and asks the protocol to close:
%% falco_errors' reply (the one a handler would return for it) with
%% Content-Length, Date and `Connection: close' (HTTP/2 drops the last).
%% `Req' needs only the method (RFC 9110 §9.3.2: the reply to a HEAD
%% request has the fields, no content).
-spec error_reply(falco_errors:reason(), map(), module(), falco_stream:state()) ->
          {ok, falco_stream:state()} | {error, term()}.
error_reply(Reason, Req, Mod, S) ->
    {Status, Fields, Body} = falco_errors:response(Reason),
    ok = rejected(Reason, Status, Req),
    Mod:send_response(Status,
                      with_alt_svc(Fields ++ [{<<"content-length">>, integer_to_binary(byte_size(Body))},
                                              {<<"date">>, falco_clock:date()},
                                              {<<"connection">>, <<"close">>}], Req),
                      content(Req, Body), S).

%% @doc Sets the Alt-Svc field that every response of listener `Listener'
%% carries (`undefined': none), unless its handler gives one. Called by the
%% listener's supervisor when it starts; kept in `persistent_term', read
%% once per response (RFC 7838: a listener with HTTP/3 advertises it).
-spec alt_svc(atom(), binary() | undefined) -> ok.
alt_svc(Listener, undefined) ->
    _ = persistent_term:erase(?ALT_SVC(Listener)),
    ok;
alt_svc(Listener, Value) when is_binary(Value) ->
    case persistent_term:get(?ALT_SVC(Listener), undefined) of
        Value -> ok;
        _ -> persistent_term:put(?ALT_SVC(Listener), Value)
    end.

%% The listener's Alt-Svc, unless the handler set its own (fields are
%% lowercased by now).
with_alt_svc(Fields, #{listener := Listener}) when Listener =/= undefined ->
    case persistent_term:get(?ALT_SVC(Listener), undefined) of
        undefined -> Fields;
        Value ->
            case lists:keymember(<<"alt-svc">>, 1, Fields) of
                true -> Fields;
                false -> [{<<"alt-svc">>, Value} | Fields]
            end
    end;
with_alt_svc(Fields, _Req) ->
    Fields.

%% @doc Answers a request shed by load shedding (`{max_requests_in_flight,
%% RetryAfter}', {@link falco_stats}) with falco_errors' 503 and its
%% Retry-After, counted and reported as rejected, as an ordinary response:
%% unlike {@link error_reply/4} it does not ask to close, so over HTTP/1.1
%% a keep-alive connection goes on (a shed client that retries at once
%% does not pay for a new connection each time).
-spec shed(falco_errors:reason(), falco_req:req(), module(), falco_stream:state()) ->
          {ok, falco_stream:state()} | {error, term()}.
shed(Reason, Req, Mod, S) ->
    {Status, _, _} = Resp = falco_errors:response(Reason),
    ok = rejected(Reason, Status, Req),
    respond(Resp, Req, Mod, S).

%% @doc Emits `[falco, request, rejected]': a request refused by a limit
%% or as malformed, with the reason (the limit's name: content_too_large,
%% {header_too_large, _}, request_timeout, body_timeout, rate_limit, ...).
%% Not for a handler's crash or timeout, which the request events report.
-spec rejected(term(), 100..599, map()) -> ok.
rejected(Reason, _Status, _Req) when Reason =:= internal_error; Reason =:= handler_timeout ->
    ok;
rejected(Reason, Status, Req) ->
    Listener = maps:get(listener, Req, undefined),
    {Kind, Name} = case Reason of
                       {max_requests_in_flight, _} -> {shed, max_requests_in_flight};
                       rate_limit -> {rate_limit, rate_limit};
                       _ -> {limits, Reason}
                   end,
    ok = falco_stats:rejected(falco_stats:for(Listener), Kind),
    falco_telemetry:emit(falco_telemetry:for(Listener), [falco, request, rejected],
                         fun() -> {#{monotonic_time => erlang:monotonic_time()},
                                   (maps:with([listener, method, path, peer], Req))#{
                                     reason => Name, status => Status}}
                         end).

content(#{method := <<"HEAD">>}, _Body) -> <<>>;
content(_Req, Body) -> Body.

respond(Resp, Req, Mod, S) ->
    respond(Resp, Req, Mod, S, none).

%% `Who': the handler that returned `Resp', named in the report of a bad
%% one (`none' for falco's own replies).
respond(Resp, Req, Mod, S, Who) ->
    case not_a_tunnel(check_response(Resp), Req) of
        not_accepted ->
            error_reply({not_implemented, tunnel_not_accepted}, Req, Mod, S);
        {ok, {full, Status, Fields, HasDate, Body}} ->
            send_full(Status, with_alt_svc(with_date(Fields, HasDate), Req), Body, Req, Mod, S);
        {ok, {stream, Status, Fields, HasDate, Fun}} ->
            send_stream(Status, with_alt_svc(with_date(Fields, HasDate), Req), Fun, Req, Mod, S);
        {ok, {websocket, Handler, HState, Opts}} ->
            websocket(Handler, HState, Opts, Req, Mod, S);
        {error, Why} ->
            bad_response(Req, Why, Mod, S, Who)
    end.

%% An extended CONNECT (RFC 8441, `protocol' in the request) answered 2xx
%% without an upgrade would be taken by the client for an established
%% tunnel (RFC 9113 §8.5): the handler does not speak that protocol, and
%% the client gets 501 instead. Other statuses (a refusal) go as they are.
not_a_tunnel({ok, {_FullOrStream, Status, _, _, _}}, #{protocol := _})
  when Status >= 200, Status =< 299 ->
    not_accepted;
not_a_tunnel(Checked, _Req) ->
    Checked.

%% The handler asked to upgrade (see falco_ws_handler): a valid handshake
%% hands the connection or stream over, anything else gets falco_errors'
%% 400 or 426 for its reason as an ordinary reply (the connection goes on),
%% over HTTP/1.1 and HTTP/2 alike.
websocket(Handler, HState, Opts, Req, Mod, S) ->
    case falco_ws_handshake:accept(Req, Opts) of
        {ok, Status, Fields, #{deflate := Params}} ->
            Mod:switch_protocols(Status, Fields,
                                 #{handler => Handler, state => HState, opts => Opts,
                                   deflate => Params, req => Req}, S);
        {error, Reason} ->
            respond(falco_errors:response(Reason), Req, Mod, S)
    end.

%% @doc Checks a handler's response term as {@link run/4} does before
%% sending any of it: a final status, 200..599 (RFC 9110 §15: 1xx are
%% interim, never a handler's answer), fields that pass
%% {@link check_fields/1}, a body that is iodata or a file (any body of a
%% 204 or 304, which is never sent), a stream function of arity 1. On
%% `{error, Why}' the client gets a 500 instead: a middleware that reports
%% the status sent (falco_access_log) asks here, so the rule is written once.
-spec check_response(term()) -> {ok, checked()} | {error, term()}.
check_response({Status, Headers, Body}) when is_integer(Status), Status >= 200, Status =< 599 ->
    case check_fields(Headers) of
        {ok, Fields, HasDate} ->
            case full_body(Status, Body) of
                {ok, Checked} -> {ok, {full, Status, Fields, HasDate, Checked}};
                error -> {error, {bad_body, Body}}
            end;
        {error, _} = Error ->
            Error
    end;
check_response({stream, Status, Headers, Fun})
  when is_integer(Status), Status >= 200, Status =< 599, is_function(Fun, 1) ->
    case check_fields(Headers) of
        {ok, Fields, HasDate} -> {ok, {stream, Status, Fields, HasDate, Fun}};
        {error, _} = Error -> Error
    end;
check_response({websocket, Handler, HState, Opts}) when is_atom(Handler) ->
    case falco_ws_handshake:check_opts(Opts) of
        {ok, All} -> {ok, {websocket, Handler, HState, All}};
        {error, _} = Error -> Error
    end;
check_response({websocket, Handler, HState}) ->
    check_response({websocket, Handler, HState, #{}});
check_response(Other) ->
    {error, {bad_return, Other}}.

%% RFC 9110 §15.3.5, §15.4.5: 204 and 304 have no content, whatever body
%% (iodata or file) the handler gave.
full_body(Status, _Body) when Status =:= 204; Status =:= 304 ->
    {ok, none};
full_body(_Status, {file, Path}) ->
    {ok, {file, Path, 0, all}};
full_body(_Status, {file, Path, Offset, Length})
  when is_integer(Offset), Offset >= 0, is_integer(Length), Length >= 0 ->
    {ok, {file, Path, Offset, Length}};
full_body(_Status, Body) ->
    case body_size(Body) of
        {ok, Size} -> {ok, {iodata, Body, Size}};
        %% Not iodata: a bad return, answered like any other (500).
        error -> error
    end.

bad_response(Req, Why, Mod, S) ->
    bad_response(Req, Why, Mod, S, none).

bad_response(Req, Why, Mod, S, Who) ->
    Report = report("falco: ~ts ~ts from ~ts: invalid response from ~ts: ~0p; ~ts",
                    [maps:get(method, Req), maps:get(path, Req), peer(Req),
                     handler_name(Who, Req), Why, expected(Why)]),
    Result = error_reply(internal_error, Req, Mod, S),
    log(Report),
    Result.

%% The handler a report names: a module, a fun's module and name, or what
%% a `{Module, State}' handler's optional `describe/2' says of the request
%% (falco_router: the route that matched).
handler_name(none, _Req) ->
    "the handler";
handler_name(Fun, _Req) when is_function(Fun) ->
    case {erlang:fun_info(Fun, module), erlang:fun_info(Fun, name), erlang:fun_info(Fun, arity)} of
        %% a chain composed around the handler: the handler is inside it
        {{module, falco_middleware}, _, _} -> "the handler behind the middleware";
        {{module, M}, {name, F}, {arity, A}} -> io_lib:format("handler fun ~0p:~0p/~b", [M, F, A])
    end;
handler_name({Mod, State}, Req) when is_atom(Mod) ->
    case erlang:function_exported(Mod, describe, 2) of
        true ->
            try Mod:describe(Req, State)
            catch _:_ -> io_lib:format("handler ~0p", [Mod])
            end;
        false ->
            io_lib:format("handler ~0p", [Mod])
    end;
handler_name(Mod, _Req) ->
    io_lib:format("handler ~0p", [Mod]).

%% What a handler should have returned, for the report of a bad response.
expected({bad_headers, _}) ->
    "headers are a list of {Name, Value} pairs, not a map";
expected({bad_header, _}) ->
    "each header is {Name, Value}, Name a binary: <<\"content-type\">>, not \"content-type\"";
expected({bad_header_name, _}) ->
    "a header name is a token (letters, digits, !#$%&'*+-.^_`|~)";
expected({bad_header_value, _}) ->
    "a header value is iodata (binaries, strings of bytes) without control bytes (CR, LF, NUL, ...) "
    "or DEL";
expected({bad_body, _}) ->
    "a body is iodata (binaries, lists of bytes and binaries), {file, Path} or "
    "{file, Path, Offset, Length}";
expected(_) ->
    "a handler returns {Status, Headers, Body}, {stream, Status, Headers, Fun} or "
    "{websocket, Module, State, Opts}, Status 200..599 (falco_handler)".

with_date(Fields, true) -> Fields;
with_date(Fields, false) -> [{<<"date">>, falco_clock:date()} | Fields].

send_full(Status, Fields, none, _Req, Mod, S) ->
    Mod:send_response(Status, without_length(Fields), <<>>, S);
send_full(Status, Fields, {file, Path, Offset, Length}, Req, Mod, S) ->
    send_file(Status, Fields, Path, Offset, Length, Req, Mod, S);
send_full(Status, Fields0, {iodata, Body, Size}, Req, Mod, S) ->
    Fields = [{<<"content-length">>, integer_to_binary(Size)} | without_length(Fields0)],
    case maps:get(method, Req) of
        <<"HEAD">> -> Mod:send_response(Status, Fields, <<>>, S);
        _ -> Mod:send_response(Status, Fields, Body, S)
    end.

%% @doc The size of a full reply's body, or `error' when it is not iodata
%% (a bad handler return, answered with 500).
-spec body_size(term()) -> {ok, non_neg_integer()} | error.
body_size(Body) ->
    try iolist_size(Body) of
        Size -> {ok, Size}
    catch
        error:badarg -> error
    end.

%% Content-Length is ours to compute for full and file replies, and
%% Transfer-Encoding is the protocol's to choose (RFC 9112 §6.1: never
%% together with Content-Length; RFC 9113 §8.2.2: never in HTTP/2).
without_length(Fields) ->
    case lists:keymember(<<"content-length">>, 1, Fields)
        orelse lists:keymember(<<"transfer-encoding">>, 1, Fields) of
        true -> [F || F = {N, _} <- Fields, N =/= <<"content-length">>,
                      N =/= <<"transfer-encoding">>];
        false -> Fields
    end.

%% A stream keeps the handler's Content-Length (it then sends exactly that
%% many bytes) but never its Transfer-Encoding.
without_te(Fields) ->
    case lists:keymember(<<"transfer-encoding">>, 1, Fields) of
        true -> [F || F = {N, _} <- Fields, N =/= <<"transfer-encoding">>];
        false -> Fields
    end.

send_file(Status, Fields, Path, Offset, Length0, Req, Mod, S) ->
    case file:open(Path, [read, raw, binary]) of
        {ok, Fd} ->
            try
                {ok, Size} = file:position(Fd, eof),
                Length = case Length0 of
                             all -> max(Size - Offset, 0);
                             _ -> min(Length0, max(Size - Offset, 0))
                         end,
                Fields1 = [{<<"content-length">>, integer_to_binary(Length)} | without_length(Fields)],
                case maps:get(method, Req) of
                    <<"HEAD">> -> Mod:send_response(Status, Fields1, <<>>, S);
                    _ -> Mod:send_file(Status, Fields1, Fd, Offset, Length, S)
                end
            after
                _ = file:close(Fd)
            end;
        {error, Missing} when Missing =:= enoent; Missing =:= eisdir ->
            %% The file named is not there (any more): falco_errors' 404,
            %% sent as a full reply (HEAD: without its content).
            respond(falco_errors:response(not_found), Req, Mod, S);
        {error, Why} ->
            bad_response(Req, {file, Path, Why}, Mod, S)
    end.

%% RFC 9112 §6.1: nor may a 204 or 304 stream be chunked; its function is not run.
send_stream(Status, Fields, _Fun, _Req, Mod, S) when Status =:= 204; Status =:= 304 ->
    Mod:send_response(Status, without_length(Fields), <<>>, S);
send_stream(Status, Fields, Fun, Req = #{method := <<"HEAD">>}, Mod, S) ->
    _ = Fun, _ = Req,
    Mod:send_response(Status, Fields, <<>>, S);
send_stream(Status, Fields, Fun, Req, Mod, S0) ->
    case declared_length(Fields) of
        {ok, Declared} -> send_stream(Status, Fields, Fun, Declared, Req, Mod, S0);
        error -> bad_response(Req, {bad_content_length, Fields}, Mod, S0)
    end.

send_stream(Status, Fields, Fun, Declared, Req, Mod, S0) ->
    case Mod:send_headers(Status, without_te(Fields), S0) of
        {ok, S} ->
            {Send, Sent} = sender(Declared, Mod, S),
            try Fun(Send) of
                Result ->
                    case complete(Declared, Sent) of
                        true -> stream_end(Result, Req, Mod, S);
                        false -> length_failed(Req, Declared, Sent)
                    end
            catch
                Class:Reason:Stack -> stream_failed(Req, Class, Reason, Stack)
            end;
        Error ->
            Error
    end.

stream_end({trailers, Trailers}, Req, Mod, S) ->
    case check_fields(Trailers) of
        {ok, T, _} -> Mod:send_end(T, S);
        {error, Why} -> stream_failed(Req, error, Why, [])
    end;
stream_end(_, _Req, Mod, S) ->
    Mod:send_end([], S).

%% A stream that declares its Content-Length sends exactly that many bytes,
%% over every protocol (RFC 9110 §8.6; RFC 9113 §8.1.1 makes a mismatch a
%% malformed response): a piece that would go beyond it is refused whole
%% (the send returns `{error, content_length_exceeded}' and nothing of it
%% goes out), and a stream that ends short, or had a piece refused, is cut
%% as a failed stream is (HTTP/1.1 closes the connection, HTTP/2 resets the
%% stream with INTERNAL_ERROR), so the client never takes it for whole.
declared_length(Fields) ->
    case [V || {<<"content-length">>, V} <- Fields] of
        [] -> {ok, undefined};
        [V | Vs] ->
            case lists:all(fun(W) -> W =:= V end, Vs) andalso falco_grammar:length_value(V) of
                {ok, N} -> {ok, N};
                _ -> error
            end
    end.

sender(undefined, Mod, S) ->
    {fun(Data) -> Mod:send_data(Data, S) end, undefined};
sender(Declared, Mod, S) ->
    %% The count is shared by every call of the fun; nothing of it
    %% outlives the request.
    Sent = counters:new(1, []),
    Send = fun(Data) ->
                   Size = iolist_size(Data),
                   Before = counters:get(Sent, 1),
                   case Before + Size > Declared of
                       true ->
                           counters:put(Sent, 1, Declared + 1),
                           {error, content_length_exceeded};
                       false ->
                           ok = counters:add(Sent, 1, Size),
                           Mod:send_data(Data, S)
                   end
           end,
    {Send, Sent}.

complete(undefined, _) -> true;
complete(Declared, Sent) -> counters:get(Sent, 1) =:= Declared.

length_failed(Req, Declared, Sent) ->
    log(report("falco: ~ts ~ts from ~ts: streamed reply declared content-length ~b and sent ~ts",
               [maps:get(method, Req), maps:get(path, Req), peer(Req), Declared,
                case counters:get(Sent, 1) of
                    N when N > Declared -> "more";
                    N -> integer_to_list(N)
                end])),
    {error, content_length_mismatch}.

%% The head is out, so no error status can be sent: log and let the
%% protocol cut the stream (HTTP/1.1 closes without the last chunk).
stream_failed(Req, Class, Reason, Stack) ->
    falco_report:log_crash(Req, Class, Reason, Stack),
    {error, stream_crashed}.

%% @doc Checks and lowercases response fields. Returns whether a Date was
%% given; user Content-Length fields are kept only for streams.
-spec check_fields([{binary(), iodata()}]) ->
          {ok, [{binary(), iodata()}], boolean()} | {error, term()}.
check_fields(Headers) when is_list(Headers) ->
    check_fields(Headers, [], false);
check_fields(Other) ->
    {error, {bad_headers, Other}}.

check_fields([{Name0, Value0} | T], Acc, HasDate) when is_binary(Name0) ->
    case field_name(Name0) of
        {ok, Name} ->
            case field_value(Value0) of
                {ok, Value} -> check_fields(T, [{Name, Value} | Acc], HasDate orelse Name =:= <<"date">>);
                error -> {error, {bad_header_value, Name0}}
            end;
        error ->
            {error, {bad_header_name, Name0}}
    end;
check_fields([], Acc, HasDate) ->
    {ok, lists:reverse(Acc), HasDate};
check_fields([Bad | _], _, _) ->
    {error, {bad_header, Bad}}.

%% RFC 9110 §5.1: a field name is a token, case-insensitive; sent in
%% lowercase (HTTP/2 requires it, RFC 9113 §8.2.1).
field_name(Name) -> falco_grammar:lower_token(Name).

%% RFC 9110 §5.5, the rule requests are read with (falco_grammar): no CR,
%% LF or NUL (no field can be injected), nor another control byte or DEL.
%% Whitespace at either end is not part of a value (§5.5) and HTTP/2 may
%% not send it (RFC 9113 §8.2.1: the client would take the response for
%% malformed), so it is trimmed.
field_value(V0) when is_binary(V0) ->
    V = falco_grammar:trim(V0),
    case falco_grammar:is_field_value(V) of
        true -> {ok, V};
        false -> error
    end;
field_value(V) when is_integer(V) ->
    {ok, integer_to_binary(V)};
field_value(V) when is_list(V) ->
    try iolist_to_binary(V) of
        B -> field_value(B)
    catch
        error:badarg -> error
    end;
field_value(_) ->
    error.

%% The one log line of a handler stopped by handler_timeout (`About' has
%% the request's method, path and peer): whether it got the 503 or its
%% response was cut.
log_handler_timeout(About, Timeout, What) ->
    Outcome = case What of
                  replied -> "answered 503";
                  cut -> "its response cut"
              end,
    logger:warning("~ts", [report("falco: handler of ~ts ~ts from ~ts still running after "
                                  "handler_timeout (~b ms): stopped, ~ts",
                                  [maps:get(method, About, <<"?">>), maps:get(path, About, <<"?">>),
                                   peer(About), Timeout, Outcome])]).

%% Bounded (falco_report): formatting a 9 MB binary in a reason takes
%% about 10 ms, and the report is written after the client has its 500.
report(Format, Args) ->
    falco_report:format(Format, Args).

log(Report) ->
    logger:error("~ts", [Report]).

peer(Req) ->
    falco_report:peer(Req).
