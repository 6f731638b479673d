%% EUnit tests for the cached Date (falco_clock): the IMF-fixdate format of
%% RFC 9110 §5.6.7, the once-a-second refresh, and the fallback when the
%% clock is not running.
-module(falco_clock_tests).
-include_lib("eunit/include/eunit.hrl").

%% RFC 9110 §5.6.7: the example, and zero padding of day and time.
format_test_() ->
    [?_assertEqual(<<"Sun, 06 Nov 1994 08:49:37 GMT">>, falco_clock:format({{1994, 11, 6}, {8, 49, 37}})),
     ?_assertEqual(<<"Sat, 01 Jan 2000 00:00:00 GMT">>, falco_clock:format({{2000, 1, 1}, {0, 0, 0}})),
     ?_assertEqual(<<"Tue, 29 Feb 2000 23:59:59 GMT">>, falco_clock:format({{2000, 2, 29}, {23, 59, 59}})),
     ?_assertEqual(<<"Thu, 31 Dec 2026 12:05:09 GMT">>, falco_clock:format({{2026, 12, 31}, {12, 5, 9}}))].

%% Every weekday and month name (a week in March 2021 and the first of each
%% month of 2021), checked against calendar's own arithmetic.
names_test() ->
    Days = [<<"Mon">>, <<"Tue">>, <<"Wed">>, <<"Thu">>, <<"Fri">>, <<"Sat">>, <<"Sun">>],
    [?assertEqual(lists:nth(N, Days), binary:part(falco_clock:format({{2021, 3, D}, {0, 0, 0}}), 0, 3))
     || D <- lists:seq(1, 7), N <- [calendar:day_of_the_week({2021, 3, D})]],
    Months = [<<"Jan">>, <<"Feb">>, <<"Mar">>, <<"Apr">>, <<"May">>, <<"Jun">>, <<"Jul">>,
              <<"Aug">>, <<"Sep">>, <<"Oct">>, <<"Nov">>, <<"Dec">>],
    [?assertEqual(lists:nth(M, Months), binary:part(falco_clock:format({{2021, M, 1}, {0, 0, 0}}), 8, 3))
     || M <- lists:seq(1, 12)].

%% The weekday of every day from 1600 to 2400, checked against calendar.
weekdays_test() ->
    Days = {<<"Mon">>, <<"Tue">>, <<"Wed">>, <<"Thu">>, <<"Fri">>, <<"Sat">>, <<"Sun">>},
    First = calendar:date_to_gregorian_days(1600, 1, 1),
    Last = calendar:date_to_gregorian_days(2400, 12, 31),
    Wrong = [Date || N <- lists:seq(First, Last),
                     Date <- [calendar:gregorian_days_to_date(N)],
                     binary:part(falco_clock:format({Date, {0, 0, 0}}), 0, 3)
                         =/= element(calendar:day_of_the_week(Date), Days)],
    ?assertEqual([], Wrong).

%% Seconds since 1970 to a UTC datetime, as calendar does: each day's
%% first and last second from 1970 to 2200, and random times in between.
universal_time_test() ->
    Days = lists:seq(0, calendar:date_to_gregorian_days(2200, 1, 1)
                        - calendar:date_to_gregorian_days(1970, 1, 1)),
    Secs = lists:append([[D * 86400, D * 86400 + 86399] || D <- Days])
        ++ [rand:uniform(7258118400) || _ <- lists:seq(1, 10000)],
    Wrong = [S || S <- Secs, falco_clock:universal_time(S)
                                 =/= calendar:system_time_to_universal_time(S, second)],
    ?assertEqual([], Wrong).

%% A date within a second of Now (the cache is at most a second old).
recent(Date) ->
    Now = erlang:system_time(second),
    lists:member(Date, [falco_clock:format(calendar:system_time_to_universal_time(Now + D, second))
                        || D <- [-2, -1, 0, 1]]).

clock_test_() ->
    {setup,
     fun() -> {ok, Apps} = application:ensure_all_started(falco), Apps end,
     fun(_) -> ok end,
     [{"served from the table, and current", fun cached/0},
      {"refreshed every second", {timeout, 10, fun refreshed/0}},
      {"unknown calls, casts and messages are ignored", fun robust/0}]}.

cached() ->
    D = falco_clock:date(),
    ?assertEqual(D, ets:lookup_element(falco_clock, date, 2)),
    ?assert(recent(D)),
    ?assertMatch(<<_:3/binary, ", ", _:2/binary, " ", _:3/binary, " ", _:4/binary, " ",
                   _:2/binary, ":", _:2/binary, ":", _:2/binary, " GMT">>, D).

refreshed() ->
    D0 = falco_clock:date(),
    timer:sleep(1100),
    D1 = falco_clock:date(),
    ?assertNotEqual(D0, D1),
    ?assert(recent(D1)).

robust() ->
    Pid = whereis(falco_clock),
    ?assertEqual({error, unknown_call}, gen_server:call(falco_clock, what_time)),
    gen_server:cast(falco_clock, nonsense),
    Pid ! stray_message,
    ?assertEqual({error, unknown_call}, gen_server:call(falco_clock, again)),
    ?assertEqual(Pid, whereis(falco_clock)),
    ?assert(recent(falco_clock:date())).

%% Without the clock (falco not started) date/0 formats the time itself.
fallback_test() ->
    Running = lists:keymember(falco, 1, application:which_applications()),
    ok = case Running of
             true -> application:stop(falco);
             false -> ok
         end,
    try
        ?assertEqual(undefined, ets:info(falco_clock)),
        ?assert(recent(falco_clock:date()))
    after
        case Running of
            true -> {ok, _} = application:ensure_all_started(falco);
            false -> ok
        end
    end.
