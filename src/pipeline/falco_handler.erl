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
