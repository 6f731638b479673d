%% @doc Holds a listener's listen socket and closes it when the listener
%% stops.
%%
%% The listener supervisor opens the socket in its own init (so a port in
%% use fails the start) and starts this process first, so that on shutdown
%% the acceptors go before it. Closing explicitly matters on gen_tcp's
%% socket backend: there the socket is not closed with its owner but a
%% moment later by its own server process, and a listener restarted on the
%% same port at once would find it still in use.
-module(falco_listen_socket).
-behaviour(gen_server).

-export([start_link/1]).
-export([init/1, handle_call/3, handle_cast/2, terminate/2]).

%% @doc Starts the holder of `LSock'.
-spec start_link(inet:socket()) -> {ok, pid()} | ignore | {error, term()}.
start_link(LSock) ->
    gen_server:start_link(?MODULE, LSock, []).

%% @private
-spec init(inet:socket()) -> {ok, inet:socket()}.
init(LSock) ->
    process_flag(trap_exit, true),
    {ok, LSock}.

%% @private
-spec handle_call(term(), gen_server:from(), inet:socket()) -> {reply, ok, inet:socket()}.
handle_call(_Request, _From, LSock) ->
    {reply, ok, LSock}.

%% @private
-spec handle_cast(term(), inet:socket()) -> {noreply, inet:socket()}.
handle_cast(_Msg, LSock) ->
    {noreply, LSock}.

%% @private
-spec terminate(term(), inet:socket()) -> ok.
terminate(_Reason, LSock) ->
    _ = gen_tcp:close(LSock),
    ok.
