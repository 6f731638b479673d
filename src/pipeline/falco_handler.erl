%% @doc The handler behaviour: the one callback users write.
%%
%% `handle(Req, State)' gets the request (see {@link falco_req}) and the
%% state given with the listener's `handler' option, and returns one of:
%% <ul>
%% <li>`{Status, Headers, Body}': a full reply; Content-Length and Date are added;</li>
%% <li>`{Status, Headers, {file, Path}}' or `{Status, Headers, {file, Path, Offset, Length}}':
%%     the file is read and sent in pieces, each send bounded by `send_timeout';</li>
%% <li>`{stream, Status, Headers, Fun}': `Fun(Send)' is called and may call
%%     `Send(Data)' any number of times; it returns `ok' or `{trailers, Fields}'.
%%     Over HTTP/1.1 the body is chunked unless a content-length is given.</li>
%% </ul>
%% Headers are `{Name, Value}' pairs, Name a binary (lowercased for you),
%% Value iodata. A `{<<"connection">>, <<"close">>}' field closes the
%% connection after the reply. The same handler serves every protocol.
%%
%% ```
%% -module(my_handler).
%% -behaviour(falco_handler).
%% -export([handle/2]).
%%
%% handle(Req, #{greeting := Greeting}) ->
%%     {200, [{<<"content-type">>, <<"text/plain">>}],
%%      [Greeting, <<", ">>, falco_req:path(Req), <<"\n">>]}.
%% '''
%% served by `falco:start_listener(my_http, #{port => 8080, handler =>
%% {my_handler, #{greeting => <<"Hello">>}}})'.
%%
%% A handler module is checked when the listener starts (or its routes are
%% set): one that cannot be loaded or does not export `handle/2' fails the
%% start (`{error, {invalid_option, handler, {no_such_module, M}}}', `{...,
%% {not_exported, M, {handle, 2}}}'; in routes `{error, {invalid_option,
%% routes, {invalid_handler, Path, Why}}}'), and a module that exports the
%% optional `prepare_state/1' has its state prepared then.
-module(falco_handler).

-type status() :: 100..999.
-type headers() :: [{binary(), iodata()}].
-type response() :: {status(), headers(), iodata()}
                  | {status(), headers(), {file, file:filename_all()}}
                  | {status(), headers(), {file, file:filename_all(), non_neg_integer(), non_neg_integer()}}
                  | {stream, status(), headers(), fun((fun((iodata()) -> ok | {error, term()})) ->
                                                          ok | {trailers, headers()})}.
-type handler() :: module() | {module(), term()} | fun((falco_req:req()) -> response()).
-export_type([status/0, headers/0, response/0, handler/0]).

-callback handle(falco_req:req(), State :: term()) -> response().
%% Optional: called once with the handler's state when the listener starts
%% or its routes are set (`{Module, State}' handlers only); the result is
%% the state every request gets. Raise (`error(Reason)') for a bad state:
%% the start fails with `{invalid_option, handler, {invalid_state, Module,
%% Reason}}' (or `{invalid_handler, Path, ...}' in routes).
-callback prepare_state(State :: term()) -> term().
%% Optional: what falco's reports call the handler of `Req' (a bad
%% response's line); falco_router names the route that matched.
-callback describe(falco_req:req(), State :: term()) -> iodata().
-optional_callbacks([prepare_state/1, describe/2]).

-export([call/2]).

%% @doc Calls a handler on a request: the one dispatch (the pipeline's,
%% and the handler at the end of a middleware chain). A module alone gets
%% `undefined' as its state.
-spec call(handler(), falco_req:req()) -> response().
call(Fun, Req) when is_function(Fun, 1) -> Fun(Req);
call({Mod, State}, Req) -> Mod:handle(Req, State);
call(Mod, Req) -> Mod:handle(Req, undefined).
