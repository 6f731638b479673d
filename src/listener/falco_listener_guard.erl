%% @doc The last child of a listener's supervisor ({@link
%% falco_listener_sup}), so the first one stopped when the listener stops:
%% its `terminate' marks the listener's drain flag as stopping
%% ({@link falco_drain:stop/1}) before the acceptors' supervisor is shut
%% down. The acceptors then drain the listener's connections and close the
%% listen socket, as a stop asks. Without the mark, acceptors stopped by
%% their own supervisor (which gave up after too many acceptor deaths and
%% is started again on the same socket: a code purge kills every process
%% waiting in accept) would close the socket and set the drain flag for the
%% acceptors that follow them, leaving a listener that answers
%% `falco:port/1' and serves nobody.
%%
%% @private internal to falco
-module(falco_listener_guard).
-behaviour(gen_server).

-export([start_link/1]).
-export([init/1, handle_call/3, handle_cast/2, terminate/2]).

%% @doc Starts the guard of the listener whose drain flag is `Drain'.
-spec start_link(falco_drain:flag()) -> {ok, pid()} | ignore | {error, term()}.
start_link(Drain) ->
    gen_server:start_link(?MODULE, Drain, []).

%% @private
-spec init(falco_drain:flag()) -> {ok, falco_drain:flag()}.
init(Drain) ->
    %% so that the supervisor's shutdown runs terminate/2
    process_flag(trap_exit, true),
    {ok, Drain}.

%% @private
-spec handle_call(term(), gen_server:from(), falco_drain:flag()) ->
          {reply, ok, falco_drain:flag()}.
handle_call(_Request, _From, Drain) ->
    {reply, ok, Drain}.

%% @private
-spec handle_cast(term(), falco_drain:flag()) -> {noreply, falco_drain:flag()}.
handle_cast(_Msg, Drain) ->
    {noreply, Drain}.

%% @private
-spec terminate(term(), falco_drain:flag()) -> ok.
terminate(_Reason, Drain) ->
    falco_drain:stop(Drain).
