%% @doc falco's top supervisor: the Date clock, the owner of the rate
%% limiter's tables ({@link falco_rate_tables}), the listener registry (an
%% ETS table this process owns) and the listeners started with
%% {@link falco:start_listener/2}.
%%
%% One for one, at most 10 restarts in 10 s, and these are the clock's and
%% the table owner's alone: listeners are `temporary' children. A listener absorbs its own
%% failures with its own supervisors' intensities and, if it gives up,
%% stops alone; were it restarted here, one listener's restart storm would
%% use up this supervisor's intensity and stop the falco application with
%% every listener.
%%
%% @private internal to falco
-module(falco_sup).
-behaviour(supervisor).

-export([start_link/0]).
-export([init/1]).

%% @private
-spec start_link() -> {ok, pid()} | ignore | {error, term()}.
start_link() ->
    supervisor:start_link({local, ?MODULE}, ?MODULE, []).

%% @private
-spec init([]) -> {ok, {supervisor:sup_flags(), [supervisor:child_spec()]}}.
init([]) ->
    _ = ets:new(falco_listeners, [named_table, public, {read_concurrency, true}]),
    Clock = #{id => falco_clock, start => {falco_clock, start_link, []}},
    RateTables = #{id => falco_rate_tables, start => {falco_rate_tables, start_link, []}},
    {ok, {#{strategy => one_for_one, intensity => 10, period => 10}, [Clock, RateTables]}}.
