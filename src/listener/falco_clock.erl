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

-export([start_link/0, date/0, format/1]).
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
format({{Y, Mo, D} = Date, {H, Mi, S}}) ->
    Day = element(calendar:day_of_the_week(Date),
                  {<<"Mon">>, <<"Tue">>, <<"Wed">>, <<"Thu">>, <<"Fri">>, <<"Sat">>, <<"Sun">>}),
    Month = element(Mo, {<<"Jan">>, <<"Feb">>, <<"Mar">>, <<"Apr">>, <<"May">>, <<"Jun">>,
                         <<"Jul">>, <<"Aug">>, <<"Sep">>, <<"Oct">>, <<"Nov">>, <<"Dec">>}),
    <<Day/binary, ", ", (pad(D))/binary, " ", Month/binary, " ", (integer_to_binary(Y))/binary,
      " ", (pad(H))/binary, ":", (pad(Mi))/binary, ":", (pad(S))/binary, " GMT">>.

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
    true = ets:insert(?TABLE, {date, format(calendar:system_time_to_universal_time(Now div 1000, second))}),
    _ = erlang:send_after(1000 - Now rem 1000 + 1, self(), tick),
    ok.
