%% @doc The falco application: starts {@link falco_sup}.
-module(falco_app).
-behaviour(application).

-export([start/2, stop/1]).

%% @private
-spec start(application:start_type(), term()) -> {ok, pid()} | {error, term()}.
start(_Type, _Args) ->
    case falco_sup:start_link() of
        {ok, Pid} -> {ok, Pid};
        ignore -> {error, ignore};
        {error, _} = Error -> Error
    end.

%% @private
-spec stop(term()) -> ok.
stop(_State) ->
    ok.
