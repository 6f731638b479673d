%% @doc Middleware: a continuation-passing chain around a handler, and the
%% behaviour for middleware modules.
%%
%% A middleware is one of
%% <ul>
%% <li>`fun(Req, Next) -> Response', where `Next(Req1)' runs the rest of the
%%     chain (and finally the handler) and returns its response;</li>
%% <li>`{Module, Opts}', where `Module' implements this behaviour:
%%     `Module:call(Req, Next, State)'. If the module also exports the
%%     optional `prepare(Opts) -> State', it is called once when the chain is
%%     composed (to validate the options and precompute what it can) and its
%%     result is what `call/3' receives; otherwise `call/3' gets `Opts';</li>
%% <li>`Module' alone, short for `{Module, #{}}'.</li>
%% </ul>
%% {@link compose/2} builds the chain once, at listener start or route
%% compilation, into one `fun(Req) -> Response'; nothing is looked up per
%% request. A middleware may answer without calling `Next' (a CORS
%% preflight), change the request before it (a request id), or change the
%% response after it. Responses are the handler's terms (see
%% {@link falco_handler}); {@link add_headers/2}, {@link set_headers/2} and
%% {@link default_headers/2} edit the fields of any of them, and
%% {@link map_stream/2} wraps the body function of a streamed one, so a
%% middleware never needs to know which kind of response it got. Response
%% fields are checked later by the pipeline (RFC 9110 §5.5), as for
%% handlers.
%%
%% A middleware fun that times every request:
%% ```
%% Timing = fun(Req, Next) ->
%%              T0 = erlang:monotonic_time(microsecond),
%%              Resp = Next(Req),
%%              Us = erlang:monotonic_time(microsecond) - T0,
%%              falco_middleware:add_headers(Resp, [{<<"server-timing">>,
%%                  [<<"app;dur=">>, integer_to_binary(Us div 1000)]}])
%%          end,
%% falco:start_listener(my_http, #{port => 8080, handler => my_handler,
%%                                 middleware => [falco_request_id, Timing]}).
%% '''
-module(falco_middleware).

-export([compose/2, check/1, handler_fun/1, prepare_handler/1,
         add_headers/2, set_headers/2, default_headers/2, status/1, map_stream/2]).
-export_type([middleware/0, next/0]).

-type next() :: fun((falco_req:req()) -> falco_handler:response()).
-type middleware() :: fun((falco_req:req(), next()) -> falco_handler:response())
                    | {module(), term()}
                    | module().
-type stream_fun() :: fun((fun((iodata()) -> ok | {error, term()})) ->
                              ok | {trailers, falco_handler:headers()}).

-callback call(falco_req:req(), next(), State :: term()) -> falco_handler:response().
-callback prepare(Opts :: term()) -> State :: term().
-optional_callbacks([prepare/1]).

%% @doc Composes `Middlewares' (outermost first) around `Handler' into one
%% function. Raises `error({invalid_middleware, Entry, Why})' for an entry
%% that is not a middleware, `Why' one of `not_a_middleware',
%% `{no_such_module, Module}', `{not_exported, Module, {call, 3}}' and
%% `{invalid_options, Reason}' (what the module's `prepare/1' raised for
%% its options), `error({invalid_middleware, Other, not_a_list})' when
%% `Middlewares' is no list, and `error({invalid_handler, Why})' for the
%% handler ({@link prepare_handler/1}).
-spec compose([middleware()], falco_handler:handler()) -> next().
compose(Middlewares, Handler) when is_list(Middlewares) ->
    lists:foldr(fun wrap/2, handler_fun(Handler), Middlewares);
compose(Other, _Handler) ->
    erlang:error({invalid_middleware, Other, not_a_list}).

%% @doc Checks that `Middlewares' compose (shape and options) without
%% raising: `ok' or `{error, {invalid_middleware, Entry, Why}}' (see
%% {@link compose/2}).
-spec check(term()) -> ok | {error, term()}.
check(Middlewares) ->
    try compose(Middlewares, fun(_) -> {200, [], <<>>} end) of
        _ -> ok
    catch
        error:{invalid_middleware, _, _} = Reason -> {error, Reason}
    end.

%% @doc Turns a handler (module, `{Module, State}' or fun) into a fun,
%% prepared ({@link prepare_handler/1}). Raises `error({invalid_handler,
%% Why})' for anything else, `Why' as prepare_handler/1 gives it.
-spec handler_fun(falco_handler:handler()) -> next().
handler_fun(H) ->
    case prepare_handler(H) of
        {ok, Fun} when is_function(Fun, 1) -> Fun;
        {ok, Prepared} -> fun(Req) -> falco_handler:call(Prepared, Req) end;
        {error, Why} -> erlang:error({invalid_handler, Why})
    end.

%% @doc Checks a handler when the listener starts or its routes are set,
%% so that a mistake is an error then rather than a 500 on every request:
%% a module must be loadable and export `handle/2', and a `{Module, State}'
%% whose module exports the optional `prepare_state(State) -> State1'
%% ({@link falco_handler}) is given `State1' instead (`prepare_state'
%% raises for a bad state: `falco_static' for a root that is not a
%% directory). (Not `prepare/1': a module may be a middleware too, whose
%% `prepare/1' takes the middleware's options.)
%% `{ok, Handler}' or `{error, Why}': `{not_a_handler, Term}',
%% `{no_such_module, Module}', `{not_exported, Module, {handle, 2}}' or
%% `{invalid_state, Module, Reason}'.
-spec prepare_handler(term()) -> {ok, falco_handler:handler()} | {error, term()}.
prepare_handler(Fun) when is_function(Fun, 1) ->
    {ok, Fun};
prepare_handler(Mod) when is_atom(Mod) ->
    case handler_module(Mod) of
        ok -> {ok, Mod};
        Error -> Error
    end;
prepare_handler({Mod, State}) when is_atom(Mod) ->
    case handler_module(Mod) of
        ok ->
            case erlang:function_exported(Mod, prepare_state, 1) of
                false -> {ok, {Mod, State}};
                true ->
                    try Mod:prepare_state(State) of
                        State1 -> {ok, {Mod, State1}}
                    catch
                        error:Reason -> {error, {invalid_state, Mod, Reason}}
                    end
            end;
        Error ->
            Error
    end;
prepare_handler(Other) ->
    {error, {not_a_handler, Other}}.

handler_module(Mod) ->
    case code:ensure_loaded(Mod) of
        {module, Mod} ->
            case erlang:function_exported(Mod, handle, 2) of
                true -> ok;
                false -> {error, {not_exported, Mod, {handle, 2}}}
            end;
        {error, _} ->
            {error, {no_such_module, Mod}}
    end.

wrap(Fun, Next) when is_function(Fun, 2) ->
    fun(Req) -> Fun(Req, Next) end;
wrap(Entry = {Mod, Opts}, Next) when is_atom(Mod) ->
    State = prepare(Entry, Mod, Opts),
    fun(Req) -> Mod:call(Req, Next, State) end;
wrap(Mod, Next) when is_atom(Mod) ->
    wrap({Mod, #{}}, Next);
wrap(Other, _Next) ->
    erlang:error({invalid_middleware, Other, not_a_middleware}).

prepare(Entry, Mod, Opts) ->
    case code:ensure_loaded(Mod) of
        {module, Mod} -> ok;
        {error, _} -> erlang:error({invalid_middleware, Entry, {no_such_module, Mod}})
    end,
    case erlang:function_exported(Mod, call, 3) of
        true -> ok;
        false -> erlang:error({invalid_middleware, Entry, {not_exported, Mod, {call, 3}}})
    end,
    case erlang:function_exported(Mod, prepare, 1) of
        true ->
            try Mod:prepare(Opts)
            catch error:Reason -> erlang:error({invalid_middleware, Entry, {invalid_options, Reason}})
            end;
        false ->
            Opts
    end.

%% -- editing responses ----------------------------------------------------------

%% @doc Appends fields to a response of any kind (full, file or stream). A
%% term that is not a response is returned unchanged (the pipeline answers
%% it with a 500).
-spec add_headers(Resp, falco_handler:headers()) -> Resp when Resp :: term().
add_headers(Resp, []) ->
    Resp;
add_headers({stream, Status, Headers, Fun}, New) when is_list(Headers) ->
    {stream, Status, Headers ++ New, Fun};
add_headers({Status, Headers, Body}, New) when is_integer(Status), is_list(Headers) ->
    {Status, Headers ++ New, Body};
add_headers(Other, _New) ->
    Other.

%% @doc Sets fields on a response: fields of the same names (compared
%% case-insensitively) are removed first.
-spec set_headers(Resp, falco_handler:headers()) -> Resp when Resp :: term().
set_headers(Resp, New) ->
    edit(Resp, fun(Headers) ->
                       [F || F = {Name, _} <- Headers, not lists:keymember(lower(Name), 1, New)]
                           ++ New
               end).

%% @doc Adds only the fields the response does not have yet (names
%% compared case-insensitively): the handler's own values win.
-spec default_headers(Resp, falco_handler:headers()) -> Resp when Resp :: term().
default_headers(Resp, New) ->
    edit(Resp, fun(Headers) -> Headers ++ [F || F = {Name, _} <- New, not has(Name, Headers)] end).

edit({stream, Status, Headers, Fun}, Edit) when is_list(Headers) ->
    {stream, Status, Edit(Headers), Fun};
edit({Status, Headers, Body}, Edit) when is_integer(Status), is_list(Headers) ->
    {Status, Edit(Headers), Body};
edit(Other, _Edit) ->
    Other.

%% Whether `Name' (lowercase) is among `Headers', whose names may not be.
has(Name, Headers) ->
    lists:keymember(Name, 1, Headers) orelse has_ci(Name, byte_size(Name), Headers).

has_ci(Name, Size, [{N, _} | T]) when is_binary(N), byte_size(N) =:= Size ->
    lower(N) =:= Name orelse has_ci(Name, Size, T);
has_ci(Name, Size, [_ | T]) ->
    has_ci(Name, Size, T);
has_ci(_, _, []) ->
    false.

lower(Name) when is_binary(Name) -> falco_grammar:lower(Name);
lower(Name) -> Name.

%% @doc The status of a response term, or `undefined' if it is not one.
-spec status(term()) -> falco_handler:status() | undefined.
status({stream, Status, _, _}) when is_integer(Status) -> Status;
status({Status, _, _}) when is_integer(Status) -> Status;
status(_) -> undefined.

%% @doc Wraps the body function of a streamed response: `Wrap(Fun)' must
%% return the new body function. Other responses are returned unchanged.
%% The pipeline does not run the body function of a HEAD, 204 or 304
%% reply, so a wrapper cannot rely on being called.
-spec map_stream(Resp, fun((stream_fun()) -> stream_fun())) -> Resp when Resp :: term().
map_stream({stream, Status, Headers, Fun}, Wrap) when is_function(Fun, 1) ->
    {stream, Status, Headers, Wrap(Fun)};
map_stream(Other, _Wrap) ->
    Other.
