%% @doc Holds a listener's listen socket (`gen_tcp' or `ssl') and closes it
%% when the listener stops.
%%
%% The listener supervisor opens the socket in its own init (so a port in
%% use fails the start) and starts this process first, so that on shutdown
%% the acceptors go before it. Closing explicitly matters on gen_tcp's
%% socket backend: there the socket is not closed with its owner but a
%% moment later by its own server process, and a listener restarted on the
%% same port at once would find it still in use.
%%
%% @private internal to falco
-module(falco_listen_socket).
-behaviour(gen_server).

-export([start_link/2]).
-export([init/1, handle_call/3, handle_cast/2, terminate/2]).

-type state() :: {falco_transport:kind(), falco_transport:socket()}.

%% @doc Starts the holder of `LSock', a `tcp' or `tls' listen socket.
-spec start_link(falco_transport:kind(), falco_transport:socket()) ->
          {ok, pid()} | ignore | {error, term()}.
start_link(Kind, LSock) ->
    gen_server:start_link(?MODULE, {Kind, LSock}, []).

%% @private
-spec init(state()) -> {ok, state()}.
init(State) ->
    process_flag(trap_exit, true),
    {ok, State}.

%% @private
-spec handle_call(term(), gen_server:from(), state()) -> {reply, ok, state()}.
handle_call(_Request, _From, State) ->
    {reply, ok, State}.

%% @private
-spec handle_cast(term(), state()) -> {noreply, state()}.
handle_cast(_Msg, State) ->
    {noreply, State}.

%% @private
-spec terminate(term(), state()) -> ok.
terminate(_Reason, {Kind, LSock}) ->
    _ = falco_transport:close(Kind, LSock),
    ok.
