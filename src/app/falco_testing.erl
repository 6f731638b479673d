%% @doc Testing handlers, route tables and middleware stacks without a
%% socket (like Plug.Test or elli_test).
%%
%% ```
%% {200, Headers, <<"Hello, joe!\n">>} =
%%     falco_testing:request(my_app:routes(), get, "/hello/joe"),
%% {201, _, Body} = falco_testing:request(#{routes => my_app:routes(),
%%                                          middleware => my_app:middleware()},
%%                                        post, "/items?draft=1",
%%                                        #{headers => [{"content-type", "application/json"}],
%%                                          body => <<"{\"name\":\"x\"}">>}).
%% '''
%% The request goes through falco's own pipeline (`falco_pipeline':
%% the `max_body' precheck, the handler or route table with its
%% middleware, the checks of the response, Date, Content-Length, HEAD,
%% 204/304, file replies, error replies, `handler_timeout') on a stream
%% (a `falco_stream' module) that hands each piece of the response to the
%% calling process instead of a socket, so what a test sees is what a
%% client would get, before the protocol's framing (no chunk sizes).
%%
%% What is tested (`App') is a handler (module, `{Module, State}' or fun),
%% a route table (a list, compiled as a listener compiles it) or a map of
%% listener options (`handler' or `routes', with `middleware',
%% `router_opts', `max_body', `handler_timeout'... checked by the same
%% `falco_config:validate/1' as {@link falco:start_listener/2}; the
%% options that concern sockets are accepted and ignored).
%%
%% The handler runs in a process of its own, as on a connection: a test
%% can use `self()' in it, and a handler that blocks or streams forever is
%% stopped at the call's deadline (`timeout', default 5000 ms: every wait
%% here has one). Results:
%% <ul>
%% <li>{@link request/3}, {@link request/4} and {@link call/2}: `{Status, Headers, Body}',
%%     a streamed body joined, a file reply's body read from the file (the
%%     bytes the client gets, not the `{file, ...}' term: call the handler
%%     directly for that);</li>
%% <li>{@link run/3}: the whole story as a map: `status', `headers',
%%     `body', `chunks' (the pieces of a streamed reply as the handler sent
%%     them, i.e. the chunks of a chunked HTTP/1.1 reply), `trailers',
%%     `kind' (`full', `stream', `file' or `upgrade'), `upgrade' (the
%%     WebSocket handler and state of an accepted upgrade) and `complete'
%%     (false when the reply was cut: a stream that crashed, or one stopped
%%     by the deadline or by `max_bytes');</li>
%% <li>{@link sse/3}: the events of a `text/event-stream' reply, parsed by
%%     {@link falco_sse:parse/2}, up to `events' of them or until the
%%     deadline, whichever comes first.</li>
%% </ul>
%% When a bound is reached the handler's next send gets
%% `{error, closed}', as if the client had gone, and its process is
%% stopped.
-module(falco_testing).
%% falco_stream is internal: its page is not in the reference, so edoc
%% (which defines EDOC, rebar.config) must not link to it.
-ifndef(EDOC).
-behaviour(falco_stream).
-endif.

-export([req/2, req/3, request/3, request/4, call/2, run/3, sse/3]).
-export([send_response/4, send_headers/3, send_data/2, send_end/2, send_file/6,
         read_body/2, trailers/1, switch_protocols/4]).
-export_type([app/0, req_opts/0, run_opts/0, result/0]).

-type app() :: falco_handler:handler() | falco_router:routes() | map().
-type name() :: binary() | string() | atom().
-type req_opts() :: #{headers => [{name(), iodata()}],
                      body => iodata(),
                      trailers => [{binary(), binary()}],
                      peer => {inet:ip_address(), inet:port_number()},
                      bindings => #{atom() => binary() | [binary()]},
                      scheme => http | https,
                      version => {1, 0} | {1, 1} | {2, 0} | {3, 0},
                      listener => atom(),
                      piece => pos_integer(),
                      atom() => term()}.
-type run_opts() :: #{timeout => pos_integer(),
                      max_bytes => non_neg_integer() | infinity,
                      events => pos_integer() | infinity}.
-type result() :: #{status := 100..599,
                    headers := [{binary(), binary()}],
                    body := binary(),
                    chunks := [binary()],
                    trailers := [{binary(), binary()}],
                    kind := full | stream | file | upgrade,
                    upgrade := map() | undefined,
                    complete := boolean()}.

-define(TIMEOUT, 5000).
-define(PIECE, 65536).
-define(GRACE, 200).

%% The stream state: where the pieces go, and the request body left.
-record(ts, {to :: pid() | undefined,
             ref :: reference() | undefined,
             timeout = ?TIMEOUT :: pos_integer(),
             body :: binary(),
             piece :: pos_integer(),
             trailers :: [{binary(), binary()}],
             reads :: falco_stream:reads(),
             read_no = 0 :: non_neg_integer()}).

%% -- building requests ---------------------------------------------------------

%% @doc {@link req/3} with no options: a request with no body.
-spec req(name(), iodata()) -> falco_req:req().
req(Method, Target) ->
    req(Method, Target, #{}).

%% @doc A request as a connection would build it. `Method' is a binary, a
%% string or an atom (`get' is `<<"GET">>'); `Target' is the path with an
%% optional query string (`"/search?q=x"'), percent-encoded as on the
%% wire. Options: `headers' (names in any case, lowercased here; `host'
%% gives the request's host and port, default `localhost'), `body' (then
%% framed by its length, read back in pieces of at most `piece' bytes,
%% default 65536), `trailers' (what {@link falco_req:trailers/1} gives after
%% the body), `peer' (default `{{127,0,0,1}, 50000}'), `bindings' (as if a
%% route had matched: for a handler tested without its route table),
%% `scheme' (`http'), `version' (`{1,1}'), `listener' (`falco_testing');
%% any other key is put in the request map as it is.
-spec req(name(), iodata(), req_opts()) -> falco_req:req().
req(Method, Target, Opts) when is_map(Opts) ->
    {Path, Qs} = case binary:split(iolist_to_binary(Target), <<"?">>) of
                     [P, Q] -> {P, Q};
                     [P] -> {P, <<>>}
                 end,
    Headers = [{string:lowercase(bin(N)), iolist_to_binary(V)}
               || {N, V} <- maps:get(headers, Opts, [])],
    {Host, Port} = host(lists:keyfind(<<"host">>, 1, Headers)),
    Body = iolist_to_binary(maps:get(body, Opts, <<>>)),
    Framing = case maps:is_key(body, Opts) of
                  true -> {length, byte_size(Body)};
                  false -> none
              end,
    Req = #{method => method(Method), path => Path, qs => Qs,
            version => maps:get(version, Opts, {1, 1}), headers => Headers,
            host => Host, port => Port, peer => maps:get(peer, Opts, {{127, 0, 0, 1}, 50000}),
            scheme => maps:get(scheme, Opts, http), body => Framing,
            listener => maps:get(listener, Opts, ?MODULE),
            %% where the pieces go is set when the request runs
            stream => {?MODULE, state(Body, maps:get(piece, Opts, ?PIECE),
                                      maps:get(trailers, Opts, []))}},
    Extra = maps:without([headers, body, trailers, peer, scheme, version, listener, piece,
                          bindings], Opts),
    maps:merge(maps:merge(Req, Extra), bindings(Opts)).

state(Body, Piece, Trailers) ->
    #ts{body = Body, piece = Piece, trailers = Trailers, reads = falco_stream:reads()}.

bindings(#{bindings := B}) when is_map(B) -> #{bindings => B};
bindings(_) -> #{}.

method(M) when is_atom(M) -> string:uppercase(atom_to_binary(M));
method(M) -> bin(M).

bin(B) when is_binary(B) -> B;
bin(L) when is_list(L) -> unicode:characters_to_binary(L);
bin(A) when is_atom(A) -> atom_to_binary(A).

host({_, Value}) ->
    case falco_grammar:authority(Value) of
        {ok, Host, Port} -> {Host, Port};
        %% what a connection would refuse with 400: kept as given
        error -> {Value, undefined}
    end;
host(false) ->
    {<<"localhost">>, undefined}.

%% -- running them ---------------------------------------------------------------

%% @doc {@link request/4} with no options.
-spec request(app(), name(), iodata()) ->
          {100..599, [{binary(), binary()}], binary()}.
request(App, Method, Target) ->
    request(App, Method, Target, #{}).

%% @doc Builds the request ({@link req/3}) and runs it ({@link call/2}).
-spec request(app(), name(), iodata(), req_opts()) ->
          {100..599, [{binary(), binary()}], binary()}.
request(App, Method, Target, Opts) ->
    call(App, req(Method, Target, Opts)).

%% @doc Runs `Req' through `App' and returns the status, the response
%% fields (lowercase names, in the order sent) and the body.
-spec call(app(), falco_req:req()) -> {100..599, [{binary(), binary()}], binary()}.
call(App, Req) ->
    #{status := Status, headers := Headers, body := Body} = run(App, Req, #{}),
    {Status, Headers, Body}.

%% @doc Runs `Req' through `App'; see the module's documentation for the
%% result. Options: `timeout' (ms, default 5000: the handler's process is
%% stopped then), `max_bytes' (stop a streamed reply once that many body
%% bytes have come, default `infinity'). Raises
%% `error({falco_testing, no_response, Timeout})' if no response head came
%% before the deadline, and `error({falco_testing, invalid_app, Reason})'
%% for options a listener would refuse.
-spec run(app(), falco_req:req(), run_opts()) -> result().
run(App, Req, Opts) ->
    run(App, Req, Opts, fun(_Chunks) -> false end).

%% @doc Runs `Req' through `App' and collects the Server-Sent Events of
%% its reply: `{Status, Headers, Events}'. Options: `events' (stop after
%% that many events (comments are not events); default `infinity'), `timeout'
%% (ms, default 5000: what came by then is returned).
-spec sse(app(), falco_req:req(), run_opts()) ->
          {100..599, [{binary(), binary()}], [falco_sse:event()]}.
sse(App, Req, Opts) ->
    Wanted = maps:get(events, Opts, infinity),
    Enough = fun(Chunks) -> Wanted =/= infinity andalso length(events(Chunks)) >= Wanted end,
    #{status := Status, headers := Headers, chunks := Chunks} = run(App, Req, Opts, Enough),
    Events = events(Chunks),
    {Status, Headers, case Wanted of
                          infinity -> Events;
                          _ -> lists:sublist(Events, Wanted)
                      end}.

events(Chunks) ->
    {ok, Events, _} = falco_sse:parse(iolist_to_binary(Chunks), falco_sse:init_parser()),
    Events.

run(App, Req0, Opts, Enough0) ->
    Conf = conf(App),
    Handler = chain(Conf),
    Timeout = maps:get(timeout, Opts, ?TIMEOUT),
    MaxBytes = maps:get(max_bytes, Opts, infinity),
    Enough = fun(Chunks) ->
                     (MaxBytes =/= infinity andalso iolist_size(Chunks) >= MaxBytes)
                         orelse Enough0(Chunks)
             end,
    Ref = make_ref(),
    Caller = self(),
    S0 = case Req0 of
             #{stream := {?MODULE, State}} -> State;
             _ -> state(<<>>, ?PIECE, [])
         end,
    S = S0#ts{to = Caller, ref = Ref, timeout = Timeout},
    Req = Req0#{stream => {?MODULE, S}},
    {Pid, MRef} = spawn_monitor(fun() -> serve(Req, Handler, Conf, S) end),
    Deadline = erlang:monotonic_time(millisecond) + Timeout,
    collect(#{pid => Pid, mref => MRef, ref => Ref, deadline => Deadline, enough => Enough,
              timeout => Timeout},
            #{status => undefined, headers => [], chunks => [], trailers => [], kind => full,
              upgrade => undefined, complete => false}).

%% The request's process: the same two steps as a connection's.
serve(Req, Handler, Conf, S) ->
    _ = erlang:monitor(process, S#ts.to),
    falco_pipeline:serve(Req, Handler, ?MODULE, S, Conf).

collect(W = #{pid := Pid, mref := MRef, ref := Ref, deadline := Deadline}, R) ->
    Left = max(Deadline - erlang:monotonic_time(millisecond), 0),
    receive
        {Ref, Piece} ->
            collect(W, add(Piece, R));
        {Ref, data, From, Data} ->
            Chunks = maps:get(chunks, R) ++ [iolist_to_binary(Data)],
            R1 = R#{chunks := Chunks},
            case (maps:get(enough, W))(Chunks) of
                false ->
                    From ! {Ref, ack, ok},
                    collect(W, R1);
                true ->
                    From ! {Ref, ack, {error, closed}},
                    closed(W, R1, min(Left, ?GRACE))
            end;
        {'DOWN', MRef, process, Pid, _} ->
            finish(W, R, take)
    after Left ->
            stop(W, R, take)
    end.

add({response, Status, Headers, Body}, R) ->
    R#{status := Status, headers := Headers, chunks := [iolist_to_binary(Body)],
       complete := true};
add({file, Status, Headers, Body}, R) ->
    R#{status := Status, headers := Headers, chunks := [Body], kind := file, complete := true};
add({headers, Status, Headers}, R) ->
    R#{status := Status, headers := Headers, kind := stream};
add({'end', Trailers}, R) ->
    R#{trailers := Trailers, complete := true};
add({upgrade, Status, Headers, Upgrade}, R) ->
    R#{status := Status, headers := Headers, kind := upgrade,
       upgrade := maps:with([handler, state, opts], Upgrade), complete := true}.

%% The test has what it wanted: the handler's sends get `{error, closed}'
%% as if the client had gone, and it has `Grace' ms to end on its own (a
%% stream that ends when its client goes, as falco_sse's do, runs its
%% cleanup) before it is stopped. What it sends meanwhile is not taken.
closed(W = #{pid := Pid, mref := MRef, ref := Ref}, R, Grace) ->
    receive
        {Ref, data, From, _Data} ->
            From ! {Ref, ack, {error, closed}},
            closed(W, R, Grace);
        {Ref, _Piece} ->
            closed(W, R, Grace);
        {'DOWN', MRef, process, Pid, _} ->
            finish(W, R, drop)
    after Grace ->
            stop(W, R, drop)
    end.

%% A bound was reached: the request's process is stopped and its 'DOWN'
%% awaited, so no message of it arrives after the call; the pieces it sent
%% before are taken (`take') or dropped.
stop(W = #{pid := Pid, mref := MRef, timeout := Timeout}, R, Take) ->
    exit(Pid, kill),
    receive
        {'DOWN', MRef, process, Pid, _} -> finish(W, R, Take)
    after Timeout ->
            error({falco_testing, not_stopped, Pid})
    end.

finish(#{ref := Ref, timeout := Timeout}, R0, Take) ->
    case flush(Ref, R0, Take) of
        #{status := undefined} ->
            error({falco_testing, no_response, Timeout});
        R = #{chunks := Chunks, headers := Headers} ->
            R#{body => iolist_to_binary(Chunks),
               headers := [{N, iolist_to_binary(V)} || {N, V} <- Headers]}
    end.

flush(Ref, R, Take) ->
    receive
        {Ref, data, _From, Data} when Take =:= take ->
            flush(Ref, R#{chunks := maps:get(chunks, R) ++ [iolist_to_binary(Data)]}, Take);
        {Ref, Piece} when Take =:= take ->
            flush(Ref, add(Piece, R), Take);
        {Ref, data, _From, _Data} ->
            flush(Ref, R, Take);
        {Ref, _Piece} ->
            flush(Ref, R, Take)
    after 0 ->
            R
    end.

%% The configuration a listener would have, and its handler chain: the
%% handler or the compiled router, inside the middleware.
conf(App) ->
    Opts = if
               is_map(App) -> App;
               is_list(App) -> #{routes => App};
               true -> #{handler => App}
           end,
    case falco_config:validate(Opts) of
        {ok, Conf} -> Conf;
        {error, Reason} -> error({falco_testing, invalid_app, Reason})
    end.

chain(Conf) ->
    Base = case Conf of
               #{router := Router} -> {falco_router, Router};
               #{handler := Handler} -> Handler
           end,
    %% as falco_listener_sup: no chain without middleware, so that the
    %% reports name the handler (and the router, the route)
    case maps:get(middleware, Conf) of
        [] -> Base;
        Middleware -> falco_middleware:compose(Middleware, Base)
    end.

%% -- the stream: each piece goes to the test's process -------------------------

%% @private
-spec send_response(100..999, falco_stream:headers(), iodata(), #ts{}) -> {ok, #ts{}}.
send_response(Status, Headers, Body, S) ->
    tell(S, {response, Status, Headers, Body}),
    {ok, S}.

%% @private
-spec send_headers(100..999, falco_stream:headers(), #ts{}) -> {ok, #ts{}}.
send_headers(Status, Headers, S) ->
    tell(S, {headers, Status, Headers}),
    {ok, S}.

%% @private A piece waits for the test's process to take it (so a stream
%% that never ends does not fill its mailbox): `ok', or `{error, closed}'
%% once the test has what it wanted.
-spec send_data(iodata(), #ts{}) -> ok | {error, term()}.
send_data(Data, #ts{to = To, ref = Ref, timeout = Timeout}) ->
    To ! {Ref, data, self(), Data},
    receive
        {Ref, ack, Answer} -> Answer;
        {'DOWN', _, process, To, _} -> {error, closed}
    after Timeout ->
            {error, timeout}
    end.

%% @private
-spec send_end(falco_stream:headers(), #ts{}) -> {ok, #ts{}}.
send_end(Trailers, S) ->
    tell(S, {'end', Trailers}),
    {ok, S}.

%% @private The file's bytes, read as the protocol would send them.
-spec send_file(100..999, falco_stream:headers(), file:fd(), non_neg_integer(),
                non_neg_integer(), #ts{}) -> {ok, #ts{}} | {error, term()}.
send_file(Status, Headers, Fd, Offset, Length, S) ->
    Read = case Length of
               0 -> {ok, <<>>};
               _ -> file:pread(Fd, Offset, Length)
           end,
    case Read of
        {ok, Bytes} ->
            tell(S, {file, Status, Headers, Bytes}),
            {ok, S};
        eof ->
            tell(S, {file, Status, Headers, <<>>}),
            {ok, S};
        {error, _} = Error ->
            Error
    end.

%% @private
-spec switch_protocols(101 | 200, falco_stream:headers(), map(), #ts{}) -> {ok, #ts{}}.
switch_protocols(Status, Headers, Upgrade, S) ->
    tell(S, {upgrade, Status, Headers, Upgrade}),
    {ok, S}.

%% @private The request body, in pieces of at most `piece' bytes.
-spec read_body(all | pos_integer(), #ts{}) -> falco_stream:body_result().
read_body(Want, S = #ts{body = Body, piece = Piece, reads = Reads, read_no = No0}) ->
    No = falco_stream:next_read(Reads, No0),
    N = case Want of
            all -> byte_size(Body);
            _ -> lists:min([Want, Piece, byte_size(Body)])
        end,
    <<Data:N/binary, Rest/binary>> = Body,
    Tag = case Rest of
              <<>> -> ok;
              _ -> more
          end,
    {Tag, Data, S#ts{body = Rest, read_no = No}}.

%% @private
-spec trailers(#ts{}) -> [{binary(), binary()}].
trailers(#ts{body = <<>>, trailers = Trailers}) -> Trailers;
trailers(_) -> [].

tell(#ts{to = To, ref = Ref}, Piece) ->
    To ! {Ref, Piece},
    ok.
