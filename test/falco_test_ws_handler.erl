%% A WebSocket handler for the Common Test suites (falco_ws_handler): it
%% echoes, and reports init and terminate to the test process; a few text
%% commands make it stop, crash, close with a code, hibernate or flood.
-module(falco_test_ws_handler).
-behaviour(falco_ws_handler).

-export([init/1, handle_in/2, handle_info/2, terminate/2]).

init(St = #{test := Test}) ->
    Test ! {ws_init, self(), maps:get(protocol, St, undefined)},
    {ok, St}.

handle_in({text, <<"stop">>}, St) ->
    {stop, St};
handle_in({text, <<"crash">>}, _St) ->
    %% the reason holds a large binary: the report must stay bounded
    error({crashed_on, binary:copy(<<"x">>, 5000000)});
handle_in({text, <<"bad">>}, St) ->
    {reply, {close, 1005, <<>>}, St};
handle_in({text, <<"close:", Code/binary>>}, St) ->
    {reply, [{text, <<"closing">>}, {close, binary_to_integer(Code), <<"bye">>},
             {text, <<"never sent">>}], St};
handle_in({text, <<"block">>}, St = #{test := Test}) ->
    %% a handler busy elsewhere: nothing is read until the test releases it
    Test ! {ws_blocked, self()},
    receive release -> {ok, St} end;
handle_in({text, <<"hibernate">>}, St) ->
    {reply, {text, <<"hibernating">>}, St, hibernate};
handle_in({text, <<"flood:", N/binary>>}, St) ->
    Frame = {binary, binary:copy(<<"f">>, 65536)},
    {reply, lists:duplicate(binary_to_integer(N), Frame), St};
handle_in(Message, St) ->
    {reply, Message, St}.

handle_info({send, Frames}, St) ->
    {reply, Frames, St};
handle_info(stop, St) ->
    {stop, St};
handle_info(_, St) ->
    {ok, St}.

terminate(Reason, #{test := Test}) ->
    Test ! {ws_terminate, self(), Reason}.
