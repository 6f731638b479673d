%% @doc The cached Date header (RFC 9110 §5.6.7, IMF-fixdate).
%%
%% Formatting a date costs more than the rest of a small response, so one
%% process formats it once a second into a protected ETS table and every
%% connection reads it from there. `persistent_term' is not used on purpose:
%% updating it every second would trigger a global GC scan.
%%
%% @private internal to falco
-module(falco_clock).
-behaviour(gen_server).

-export([start_link/0, date/0, format/1, universal_time/1]).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2]).

-define(TABLE, falco_clock).

%% @doc Starts the clock (done by falco's application supervisor).
-spec start_link() -> {ok, pid()} | ignore | {error, term()}.
start_link() ->
    gen_server:start_link({local, ?MODULE}, ?MODULE, [], []).

%% @doc The current date as an IMF-fixdate binary, at most a second old.
-spec date() -> binary().
date() ->
    try
        ets:lookup_element(?TABLE, date, 2)
    catch
        error:badarg -> format(erlang:universaltime())
    end.

%% @doc Formats a UTC datetime as IMF-fixdate, e.g.
%% `<<"Sun, 06 Nov 1994 08:49:37 GMT">>'.
-spec format(calendar:datetime()) -> binary().
format({{Y, Mo, D}, {H, Mi, S}}) ->
    Day = element(weekday(Y, Mo, D),
                  {<<"Sun">>, <<"Mon">>, <<"Tue">>, <<"Wed">>, <<"Thu">>, <<"Fri">>, <<"Sat">>}),
    Month = element(Mo, {<<"Jan">>, <<"Feb">>, <<"Mar">>, <<"Apr">>, <<"May">>, <<"Jun">>,
                         <<"Jul">>, <<"Aug">>, <<"Sep">>, <<"Oct">>, <<"Nov">>, <<"Dec">>}),
    <<Day/binary, ", ", (pad(D))/binary, " ", Month/binary, " ", (integer_to_binary(Y))/binary,
      " ", (pad(H))/binary, ":", (pad(Mi))/binary, ":", (pad(S))/binary, " GMT">>.

%% @doc The UTC date and time of `Secs' since 1970 (Hinnant's days-to-civil
%% algorithm; what calendar:system_time_to_universal_time/2 gives, for
%% times after 1970).
-spec universal_time(non_neg_integer()) -> calendar:datetime().
universal_time(Secs) ->
    Days = Secs div 86400,
    T = Secs rem 86400,
    Z = Days + 719468,
    Era = Z div 146097,
    DoE = Z - Era * 146097,
    YoE = (DoE - DoE div 1460 + DoE div 36524 - DoE div 146096) div 365,
    DoY = DoE - (365 * YoE + YoE div 4 - YoE div 100),
    MP = (5 * DoY + 2) div 153,
    D = DoY - (153 * MP + 2) div 5 + 1,
    Mo = case MP < 10 of
             true -> MP + 3;
             false -> MP - 9
         end,
    Y = YoE + Era * 400 + case Mo =< 2 of
                              true -> 1;
                              false -> 0
                          end,
    {{Y, Mo, D}, {T div 3600, T rem 3600 div 60, T rem 60}}.

%% The day of the week, 1 for Sunday (Sakamoto's method for the Gregorian
%% calendar): computed here rather than by `calendar', a 31 KB module a
%% server would otherwise load for this alone.
weekday(Y0, Mo, D) ->
    Y = case Mo < 3 of
            true -> Y0 - 1;
            false -> Y0
        end,
    Shift = element(Mo, {0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4}),
    1 + (Y + Y div 4 - Y div 100 + Y div 400 + Shift + D) rem 7.

pad(N) when N < 10 -> <<$0, ($0 + N)>>;
pad(N) -> integer_to_binary(N).

%% @private
-spec init([]) -> {ok, undefined}.
init([]) ->
    _ = ets:new(?TABLE, [named_table, protected, {read_concurrency, true}]),
    tick(),
    {ok, undefined}.

%% @private
-spec handle_call(term(), gen_server:from(), undefined) -> {reply, {error, unknown_call}, undefined}.
handle_call(_Request, _From, State) ->
    {reply, {error, unknown_call}, State}.

%% @private
-spec handle_cast(term(), undefined) -> {noreply, undefined}.
handle_cast(_Msg, State) ->
    {noreply, State}.

%% @private
-spec handle_info(term(), undefined) -> {noreply, undefined}.
handle_info(tick, State) ->
    tick(),
    {noreply, State};
handle_info(_Msg, State) ->
    {noreply, State}.

%% Refresh just after each second boundary.
tick() ->
    Now = erlang:system_time(millisecond),
    true = ets:insert(?TABLE, {date, format(universal_time(Now div 1000))}),
    _ = erlang:send_after(1000 - Now rem 1000 + 1, self(), tick),
    ok.
