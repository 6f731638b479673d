%% @doc The example server's file, upload and event handlers.
%%
%%   GET  /static/...  files under examples/priv/static/ (falco_static:
%%                     index.html, ranges, conditional requests, and the
%%                     precompressed style.css.gz for gzip clients)
%%   POST /upload      multipart/form-data; replies with each part's name,
%%                     file name and size as JSON
%%   GET  /events      Server-Sent Events: `count' tick events (default 5)
%%                     `interval' ms apart (default 2000), with a keep-alive
%%                     comment after `keepalive' ms of silence (default
%%                     1000), then a `bye' event
-module(falco_example_files).

-export([static/1, upload/1, events/1, static_dir/0]).

%% @doc Serves /static/ from examples/priv/static/.
-spec static(falco_req:req()) -> falco_handler:response().
static(Req) ->
    falco_static:handle(Req, #{root => static_dir(), prefix => <<"/static">>,
                               cache_control => <<"public, max-age=60">>}).

%% @doc Reads a multipart upload part by part (never the whole body at
%% once) and answers with what it saw.
-spec upload(falco_req:req()) -> falco_handler:response().
upload(Req) ->
    case parts(Req, []) of
        {ok, Parts} ->
            {200, [{<<"content-type">>, <<"application/json">>}],
             [falco_json:encode_to_binary(#{<<"parts">> => Parts}), <<"\n">>]};
        {error, Reason} ->
            {falco_multipart:status(Reason), [{<<"content-type">>, <<"text/plain">>}],
             io_lib:format("bad upload: ~p~n", [Reason])}
    end.

parts(Req0, Acc) ->
    case falco_multipart:read_part(Req0, #{max_parts => 20}) of
        {ok, Headers, Req1} ->
            case size(Req1, 0) of
                {ok, Size, Req} ->
                    Info = case falco_multipart:form_data(Headers) of
                               {ok, #{name := Name} = FD} ->
                                   maps:merge(#{<<"name">> => Name, <<"size">> => Size},
                                              case FD of
                                                  #{filename := F} -> #{<<"filename">> => F};
                                                  _ -> #{}
                                              end);
                               {error, _} ->
                                   #{<<"name">> => null, <<"size">> => Size}
                           end,
                    parts(Req, [Info | Acc]);
                Error ->
                    Error
            end;
        {done, _Req} ->
            {ok, lists:reverse(Acc)};
        Error ->
            Error
    end.

size(Req0, N) ->
    case falco_multipart:read_part_body(Req0) of
        {more, Data, Req} -> size(Req, N + byte_size(Data));
        {ok, Data, Req} -> {ok, N + byte_size(Data), Req};
        Error -> Error
    end.

%% @doc An event stream driven by timer messages, with keep-alive pings.
-spec events(falco_req:req()) -> falco_handler:response().
events(Req) ->
    {ok, Qs} = falco_qs:parse(falco_req:qs(Req)),
    Count = int(<<"count">>, Qs, 5),
    Interval = int(<<"interval">>, Qs, 2000),
    KeepAlive = int(<<"keepalive">>, Qs, 1000),
    %% A reconnecting browser resumes after the last id it saw.
    Start = case falco_sse:last_event_id(Req) of
                undefined -> 1;
                Id -> int_value(Id, 0) + 1
            end,
    falco_sse:loop(
      fun() ->
              _ = erlang:send_after(Interval, self(), {tick, Start}),
              {ok, [#{retry => 3000, comment => <<"falco example event stream">>}], Count}
      end,
      fun({tick, N}, Left) when Left =< 1 ->
              {stop, [#{event => <<"tick">>, id => integer_to_binary(N), data => now_text()},
                      #{event => <<"bye">>, data => <<"that is all">>}]};
         ({tick, N}, Left) ->
              _ = erlang:send_after(Interval, self(), {tick, N + 1}),
              {ok, [#{event => <<"tick">>, id => integer_to_binary(N), data => now_text()}], Left - 1};
         (_Other, Left) ->
              {ok, [], Left}
      end,
      #{keepalive => KeepAlive}).

now_text() ->
    calendar:system_time_to_rfc3339(erlang:system_time(second), [{offset, "Z"}]).

int(Key, Qs, Default) ->
    case lists:keyfind(Key, 1, Qs) of
        {_, V} -> int_value(V, Default);
        false -> Default
    end.

int_value(V, Default) ->
    try binary_to_integer(V) of
        N when N > 0, N =< 3600000 -> N;
        _ -> Default
    catch
        error:badarg -> Default
    end.

%% @doc The directory /static/ serves.
-spec static_dir() -> file:filename().
static_dir() ->
    Dir = filename:dirname(code:which(?MODULE)),
    Candidates = [filename:join([Dir, "..", "examples", "priv", "static"]),
                  filename:join([Dir, "..", "..", "..", "..", "examples", "priv", "static"]),
                  filename:join(["examples", "priv", "static"])],
    case [D || D <- Candidates, filelib:is_dir(D)] of
        [D | _] -> filename:absname(D);
        [] -> filename:absname(lists:last(Candidates))
    end.
