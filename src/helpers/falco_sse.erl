%% @doc Server-Sent Events (WHATWG HTML Living Standard §9.2, the
%% `text/event-stream' format) over a streamed response.
%%
%% {@link encode/1} writes one event: comment lines, `event', `id',
%% `retry' and `data' fields, data split on every line break (CRLF, LF or
%% CR) into one `data:' line each so a multi-line payload arrives intact,
%% and the blank line that dispatches it. Values of `event' and `id' cannot
%% hold line breaks (nor `id' a NUL, which makes browsers ignore it), so
%% those raise `badarg': they come from the program, not from the peer.
%% {@link parse/2} is the reverse, an incremental parser following the
%% standard's interpretation rules, for clients and tests.
%%
%% Two ways to produce a stream:
%% <ul>
%% <li>{@link stream/2}: `Fun(Emit)' runs in the request's process and calls
%%     `Emit(Event | [Event])' as it likes; `Emit' returns `ok' or
%%     `{error, Reason}' once the client has gone.</li>
%% <li>{@link loop/3}: an `Init' fun (subscribe the request process to
%%     something, arm timers) then a `Handle(Message, State)' fun for each
%%     Erlang message the process receives, each returning events to send.
%%     While no event has gone out for `keepalive' milliseconds (default
%%     15000) a comment line is sent: it keeps proxies from timing the
%%     connection out and is how a vanished client is noticed, at which
%%     point the loop ends.</li>
%% </ul>
%% Each event is handed to the protocol as one piece, so it goes out at
%% once (and {@link falco_compress} flushes after each piece).
%%
%% ```
%% handle(_Req, _State) ->
%%     falco_sse:stream(fun(Emit) ->
%%                              ok = Emit(#{event => <<"tick">>, data => <<"1">>}),
%%                              ok = Emit(#{event => <<"tick">>, data => <<"2">>})
%%                      end, #{}).
%% '''
%% The client receives `event: tick\ndata: 1\n\n' then the second event.
-module(falco_sse).

-export([encode/1, stream/2, loop/3, headers/0, last_event_id/1, parse/2, init_parser/0]).

-export_type([event/0, parser/0, handle_result/0]).

-type event() :: #{data => iodata(),
                   event => iodata(),
                   id => iodata(),
                   retry => non_neg_integer(),
                   comment => iodata()}.
-type emit() :: fun((event() | [event()]) -> ok | {error, term()}).
-type handle_result() :: {ok, [event()], term()} | {stop, [event()]}.
-type opts() :: #{status => 100..999, headers => falco_handler:headers(),
                  keepalive => pos_integer() | infinity}.

-define(KEEPALIVE, 15000).

%% -- encoding ------------------------------------------------------------------

%% @doc Encodes one event. A map with only `comment' is a comment (ignored
%% by clients, useful as a ping); an event with no `data' is still sent
%% (it can set `retry' or `id'), but a browser dispatches nothing for it.
-spec encode(event()) -> iodata().
encode(Event) when is_map(Event) ->
    [comment(maps:get(comment, Event, undefined)),
     field(<<"event">>, maps:get(event, Event, undefined)),
     id(maps:get(id, Event, undefined)),
     retry(maps:get(retry, Event, undefined)),
     data(maps:get(data, Event, undefined)),
     $\n];
encode(Other) ->
    error(badarg, [Other]).

comment(undefined) -> [];
comment(C) -> [[<<": ">>, L, $\n] || L <- lines(C)].

field(_, undefined) -> [];
field(Name, V) ->
    Bin = iolist_to_binary(V),
    case binary:match(Bin, [<<"\r">>, <<"\n">>]) of
        nomatch -> [Name, <<": ">>, Bin, $\n];
        _ -> error(badarg, [Name, V])
    end.

id(undefined) -> [];
id(V) ->
    case binary:match(iolist_to_binary(V), <<0>>) of
        nomatch -> field(<<"id">>, V);
        _ -> error(badarg, [id, V])
    end.

retry(undefined) -> [];
retry(N) when is_integer(N), N >= 0 -> [<<"retry: ">>, integer_to_binary(N), $\n];
retry(N) -> error(badarg, [retry, N]).

data(undefined) -> [];
data(D) -> [[<<"data: ">>, L, $\n] || L <- lines(D)].

%% Splits on CRLF, LF or CR, the three line endings of the format.
lines(Data) ->
    binary:split(iolist_to_binary(Data), [<<"\r\n">>, <<"\n">>, <<"\r">>], [global]).

%% -- responses -------------------------------------------------------------------

%% @doc The response fields of an event stream: the media type, and no
%% caching or buffering by intermediaries.
-spec headers() -> falco_handler:headers().
headers() ->
    [{<<"content-type">>, <<"text/event-stream">>},
     {<<"cache-control">>, <<"no-cache">>},
     {<<"x-accel-buffering">>, <<"no">>}].

%% @doc The Last-Event-ID a reconnecting browser sends, or `undefined'.
-spec last_event_id(falco_req:req()) -> binary() | undefined.
last_event_id(Req) ->
    falco_req:header(<<"last-event-id">>, Req).

%% @doc A streamed response running `Fun(Emit)'. Options: `status' (200),
%% `headers' (added to {@link headers/0}).
-spec stream(fun((emit()) -> term()), opts()) -> falco_handler:response().
stream(Fun, Opts) ->
    {stream, maps:get(status, Opts, 200), headers() ++ maps:get(headers, Opts, []),
     fun(Send) ->
             _ = Fun(emitter(Send)),
             ok
     end}.

emitter(Send) ->
    fun(Events) when is_list(Events) -> Send([encode(E) || E <- Events]);
       (Event) -> Send(encode(Event))
    end.

%% @doc A streamed response driven by messages. `Init()' runs first, in
%% the process that will receive the messages, and returns `{ok, State}',
%% `{ok, Events, State}' or `{stop, Events}'; then each message `Msg' is
%% given to `Handle(Msg, State)', which returns `{ok, Events, State}' or
%% `{stop, Events}'. Options: `status', `headers', `keepalive' (ms or
%% `infinity').
-spec loop(fun(() -> {ok, term()} | handle_result()),
           fun((term(), term()) -> handle_result()), opts()) -> falco_handler:response().
loop(Init, Handle, Opts) ->
    KeepAlive = maps:get(keepalive, Opts, ?KEEPALIVE),
    {stream, maps:get(status, Opts, 200), headers() ++ maps:get(headers, Opts, []),
     fun(Send) ->
             case Init() of
                 {ok, State} -> run(Send, Handle, State, KeepAlive, now_ms());
                 {ok, Events, State} ->
                     case send(Send, Events) of
                         ok -> run(Send, Handle, State, KeepAlive, now_ms());
                         closed -> ok
                     end;
                 {stop, Events} ->
                     _ = send(Send, Events),
                     ok
             end
     end}.

run(Send, Handle, State, KeepAlive, Last) ->
    Wait = case KeepAlive of
               infinity -> infinity;
               _ -> max(0, Last + KeepAlive - now_ms())
           end,
    receive
        Msg ->
            case Handle(Msg, State) of
                {ok, [], State1} ->
                    run(Send, Handle, State1, KeepAlive, Last);
                {ok, Events, State1} ->
                    case send(Send, Events) of
                        ok -> run(Send, Handle, State1, KeepAlive, now_ms());
                        closed -> ok
                    end;
                {stop, Events} ->
                    _ = send(Send, Events),
                    ok
            end
    after Wait ->
            case Send(<<":\n\n">>) of
                ok -> run(Send, Handle, State, KeepAlive, now_ms());
                _ -> ok
            end
    end.

send(_Send, []) ->
    ok;
send(Send, Events) ->
    case Send([encode(E) || E <- Events]) of
        ok -> ok;
        _ -> closed
    end.

now_ms() ->
    erlang:monotonic_time(millisecond).

%% -- parsing ---------------------------------------------------------------------

-record(sse, {buf = <<>> :: binary(),
              cr = false :: boolean(),
              data = [] :: [binary()],
              event = <<>> :: binary(),
              id = undefined :: binary() | undefined,
              retry = undefined :: non_neg_integer() | undefined,
              has_data = false :: boolean(),
              max_line :: pos_integer()}).
-opaque parser() :: #sse{}.

%% @doc A parser with a line limit of 1 MiB.
-spec init_parser() -> parser().
init_parser() ->
    #sse{max_line = 1048576}.

%% @doc Feeds stream bytes; returns the events completed, as maps with
%% `data' (lines joined by LF), `event' (if set), `id' and `retry' (when
%% the event set them). A longer line than the limit is an error.
-spec parse(binary(), parser()) -> {ok, [event()], parser()} | {error, line_too_long}.
parse(Bin, P = #sse{buf = Buf}) ->
    lines(<<Buf/binary, Bin/binary>>, P#sse{buf = <<>>}, []).

lines(Bin0, P = #sse{cr = CR}, Acc) ->
    %% A CR ending the previous piece may be the first half of a CRLF.
    Bin = case {CR, Bin0} of
              {true, <<"\n", R/binary>>} -> R;
              _ -> Bin0
          end,
    case Bin of
        <<>> -> {ok, lists:reverse(Acc), P};
        _ ->
            case binary:match(Bin, [<<"\r\n">>, <<"\n">>, <<"\r">>]) of
                {Pos, Len} ->
                    Line = binary:part(Bin, 0, Pos),
                    Rest = binary:part(Bin, Pos + Len, byte_size(Bin) - Pos - Len),
                    %% A lone CR at the very end: it may still be followed by LF.
                    EndsCR = Len =:= 1 andalso Rest =:= <<>> andalso binary:at(Bin, Pos) =:= $\r,
                    {P1, Acc1} = line(Line, P#sse{cr = false}, Acc),
                    case EndsCR of
                        true -> {ok, lists:reverse(Acc1), P1#sse{cr = true}};
                        false -> lines(Rest, P1, Acc1)
                    end;
                nomatch when byte_size(Bin) > P#sse.max_line ->
                    {error, line_too_long};
                nomatch ->
                    {ok, lists:reverse(Acc), P#sse{buf = Bin, cr = false}}
            end
    end.

line(<<>>, P = #sse{has_data = false}, Acc) ->
    {P#sse{event = <<>>, retry = undefined}, Acc};
line(<<>>, P = #sse{data = Data, event = E, id = Id, retry = R}, Acc) ->
    case iolist_to_binary(lists:join(<<"\n">>, lists:reverse(Data))) of
        <<>> ->
            %% An empty data buffer dispatches nothing.
            {P#sse{data = [], event = <<>>, retry = undefined, has_data = false}, Acc};
        Joined ->
            dispatch(Joined, E, Id, R, P, Acc)
    end;
line(<<$:, _/binary>>, P, Acc) ->
    {P, Acc};
line(Line, P, Acc) ->
    {Name, Value} = case binary:split(Line, <<":">>) of
                        [N, <<" ", V/binary>>] -> {N, V};
                        [N, V] -> {N, V};
                        [N] -> {N, <<>>}
                    end,
    {field(Name, Value, P), Acc}.

dispatch(Joined, E, Id, R, P, Acc) ->
    Ev0 = #{data => Joined},
    Ev1 = case E of <<>> -> Ev0; _ -> Ev0#{event => E} end,
    Ev2 = case Id of undefined -> Ev1; _ -> Ev1#{id => Id} end,
    Ev = case R of undefined -> Ev2; _ -> Ev2#{retry => R} end,
    {P#sse{data = [], event = <<>>, retry = undefined, has_data = false}, [Ev | Acc]}.

field(<<"data">>, V, P = #sse{data = D}) -> P#sse{data = [V | D], has_data = true};
field(<<"event">>, V, P) -> P#sse{event = V};
field(<<"id">>, V, P) ->
    case binary:match(V, <<0>>) of
        nomatch -> P#sse{id = V};
        _ -> P
    end;
field(<<"retry">>, V, P) ->
    case V =/= <<>> andalso lists:all(fun(C) -> C >= $0 andalso C =< $9 end, binary_to_list(V)) of
        true -> P#sse{retry = binary_to_integer(V)};
        false -> P
    end;
field(_, _, P) -> P.
