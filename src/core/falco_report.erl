%% @doc Bounded error reports, one rule for every place falco logs a
%% failure (a handler's crash or bad response, a connection that died, a
%% WebSocket callback): a reason, a response or the arguments in a stack
%% can hold a whole request body (a handler failing on
%% `binary_to_integer(Body)' with a 10 MB body made a 35 MB report line and
%% 5.8 GB of peak memory), so the text is formatted with a bound on its
%% size, which costs milliseconds whatever the terms hold, and a stack
%% keeps the arity of each call, not its arguments.
%%
%% @private internal to falco
-module(falco_report).

-export([format/2, format/3, without_args/1, crash/4, log_crash/4, peer/1,
         supervisor_filter/2]).

%% The bound of a report in characters, unless the caller gives one.
-define(CHARS, 16384).

%% @doc `io_lib:format/2' bounded to 16 K characters.
-spec format(io:format(), [term()]) -> io_lib:chars().
format(Format, Args) ->
    format(Format, Args, ?CHARS).

%% @doc `io_lib:format/2' bounded to `Chars' characters.
-spec format(io:format(), [term()], pos_integer()) -> io_lib:chars().
format(Format, Args, Chars) ->
    io_lib:format(Format, Args, [{chars_limit, Chars}]).

%% @doc A stack trace with each call's arguments replaced by their count.
-spec without_args([tuple()]) -> [tuple()].
without_args(Stack) ->
    [case Frame of
         {M, F, A, Loc} when is_list(A) -> {M, F, length(A), Loc};
         _ -> Frame
     end || Frame <- Stack].

%% @doc The report of a handler's crash (also a WebSocket callback's),
%% naming the request: bounded, its stack without arguments.
-spec crash(map(), error | exit | throw, term(), list()) -> io_lib:chars().
crash(Req, Class, Reason, Stack) ->
    format("falco: handler crashed on ~ts ~ts from ~ts: ~0p:~0p~n~0p",
           [maps:get(method, Req), maps:get(path, Req), peer(Req), Class, Reason,
            without_args(Stack)]).

%% @doc Logs {@link crash/4} as one error.
-spec log_crash(map(), error | exit | throw, term(), list()) -> ok.
log_crash(Req, Class, Reason, Stack) ->
    logger:error("~ts", [crash(Req, Class, Reason, Stack)]).

%% @doc A request's peer as reports print it.
-spec peer(map()) -> iodata().
peer(#{peer := {Ip, Port}}) -> [inet:ntoa(Ip), ":", integer_to_list(Port)];
peer(_) -> "unknown".

%% @doc A primary logger filter (falco_app adds it, as `falco_reports'):
%% a supervisor's report whose offender is a listener (the child
%% specification of {@link falco:child_spec/2}, in falco's supervisor or
%% the user's) prints the listener's name instead of its options, which
%% hold the TLS options (a certificate chain and keys: hundreds of lines
%% in every report). Every other event passes as it is.
-spec supervisor_filter(logger:log_event(), term()) -> logger:filter_return().
supervisor_filter(Event = #{msg := {report, R = #{label := {supervisor, _}, report := Rep}}}, _)
  when is_list(Rep) ->
    case lists:keyfind(offender, 1, Rep) of
        {offender, Offender} when is_list(Offender) ->
            case lists:keyfind(mfargs, 1, Offender) of
                {mfargs, {falco_listener_sup, start_link, [Name, _Opts]}} ->
                    Small = {falco_listener_sup, start_link, [Name, options_not_shown]},
                    Offender1 = lists:keyreplace(mfargs, 1, Offender, {mfargs, Small}),
                    Rep1 = lists:keyreplace(offender, 1, Rep, {offender, Offender1}),
                    Event#{msg => {report, R#{report => Rep1}}};
                _ ->
                    Event
            end;
        _ ->
            Event
    end;
supervisor_filter(Event, _) ->
    Event.
