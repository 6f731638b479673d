%% @doc The owner of the rate limiter's tables ({@link falco_rate_limit}),
%% started under falco's top supervisor.
%%
%% One public ETS table per limiter name, created on the first
%% {@link table/1} for that name and kept while falco runs (a chain composed
%% again, at a route change or a listener restart, finds the same table and
%% so keeps its buckets). A limiter finds its table with {@link lookup/1},
%% a `persistent_term' read; should this process die, its successor makes
%% new (empty) tables for the names it finds there, so limiters go on.
%% Requests read and update the rows themselves; this process only owns
%% the tables and evicts idle buckets: every second, and at once (at most
%% every 100 ms) when a limiter finds its table at its `max_keys' and
%% raises the table's flag. A bucket is idle when it has refilled
%% completely (its theoretical arrival time is in the past): it is then
%% worth exactly what a missing row is worth, so evicting it loses nothing.
%%
%% @private internal to falco
-module(falco_rate_tables).
-behaviour(gen_server).

-export([start_link/0, table/1, lookup/1, full/2]).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2]).
-export_type([table/0]).

%% The table and its "full" flag (an atomics array of one: 1 while an
%% eviction is asked for and not done).
-type table() :: {ets:tid(), atomics:atomics_ref()}.

-define(SWEEP_MS, 1000).
-define(MIN_SWEEP_MS, 100).

-define(KEY(Name), {?MODULE, Name}).

-record(st, {tables = #{} :: #{term() => table()},
             %% last eviction of each table (native monotonic time)
             swept = #{} :: #{ets:tid() => integer()}}).

-spec start_link() -> {ok, pid()} | ignore | {error, term()}.
start_link() ->
    gen_server:start_link({local, ?MODULE}, ?MODULE, [], []).

%% @doc Makes sure limiter `Name' has a table. Raises `exit' when falco
%% is not running.
-spec table(term()) -> ok.
table(Name) ->
    gen_server:call(?MODULE, {table, Name}).

%% @doc The table of limiter `Name' (made by {@link table/1}).
-spec lookup(term()) -> table().
lookup(Name) ->
    persistent_term:get(?KEY(Name)).

%% @doc Asks for an eviction in a full table; only the first caller after
%% an eviction sends a message, so a flood of requests sends one.
-spec full(ets:tid(), atomics:atomics_ref()) -> ok.
full(Tid, Flag) ->
    case atomics:compare_exchange(Flag, 1, 0, 1) of
        ok -> gen_server:cast(?MODULE, {full, Tid, Flag});
        _ -> ok
    end.

%% @private
-spec init([]) -> {ok, #st{}}.
init([]) ->
    _ = erlang:send_after(?SWEEP_MS, self(), sweep),
    %% A predecessor's tables died with it: new ones for the same names.
    Names = [Name || {?KEY(Name), _} <- persistent_term:get()],
    {ok, lists:foldl(fun new/2, #st{}, Names)}.

%% @private
-spec handle_call(term(), gen_server:from(), #st{}) -> {reply, term(), #st{}}.
handle_call({table, Name}, _From, S = #st{tables = Tables}) ->
    case Tables of
        #{Name := _} -> {reply, ok, S};
        #{} -> {reply, ok, new(Name, S)}
    end;
handle_call(_Request, _From, S) ->
    {reply, {error, unknown_call}, S}.

%% @private
-spec handle_cast(term(), #st{}) -> {noreply, #st{}}.
handle_cast({full, Tid, Flag}, S = #st{swept = Swept}) ->
    Now = erlang:monotonic_time(),
    Min = erlang:convert_time_unit(?MIN_SWEEP_MS, millisecond, native),
    S1 = case Swept of
             #{Tid := Last} when Now - Last < Min -> S;
             #{} -> evict(Tid, Now, S)
         end,
    ok = atomics:put(Flag, 1, 0),
    {noreply, S1};
handle_cast(_Msg, S) ->
    {noreply, S}.

%% @private
-spec handle_info(term(), #st{}) -> {noreply, #st{}}.
handle_info(sweep, S = #st{tables = Tables}) ->
    _ = erlang:send_after(?SWEEP_MS, self(), sweep),
    Now = erlang:monotonic_time(),
    {noreply, maps:fold(fun(_Name, {Tid, _}, Acc) -> evict(Tid, Now, Acc) end, S, Tables)};
handle_info(_Msg, S) ->
    {noreply, S}.

new(Name, S = #st{tables = Tables}) ->
    %% No read_concurrency: every read is followed by a write.
    Tid = ets:new(?MODULE, [set, public, {write_concurrency, true},
                            {decentralized_counters, true}]),
    T = {Tid, atomics:new(1, [])},
    ok = persistent_term:put(?KEY(Name), T),
    S#st{tables = Tables#{Name => T}}.

%% Deletes the rows whose bucket is full again: `{Key, Tat}' with
%% `Tat =< Now', the guard tested on each row as it is deleted.
evict(Tid, Now, S = #st{swept = Swept}) ->
    _ = ets:select_delete(Tid, [{{'_', '$1'}, [{'=<', '$1', Now}], [true]}]),
    S#st{swept = Swept#{Tid => Now}}.

