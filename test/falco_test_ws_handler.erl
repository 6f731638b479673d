%% A WebSocket handler for the Common Test suites (falco_ws_handler): it
%% echoes, and reports init and terminate to the test process; a few text
%% commands make it stop, crash, close with a code, hibernate or flood.
%% With it, what the WebSocket suites share: a listener whose routes
%% upgrade to it, waiting for a session's init and terminate, and a
%% session's peak memory.
-module(falco_test_ws_handler).
-behaviour(falco_ws_handler).

-export([init/1, handle_in/2, handle_info/2, terminate/2]).
-export([listen/3, await_init/0, terminated/1, watch_memory/2]).

%% A listener `Name' whose /ws and /ws/:room upgrade with `WsOpts' (the
%% calling process gets the handler's init and terminate), /deny refuses
%% with 403 and /plain is an ordinary route; returns its port.
listen(Name, WsOpts, ListenerOpts) ->
    Test = self(),
    Routes = [{<<"/ws">>, fun(Req) -> upgrade(Req, Test, WsOpts) end},
              {<<"/ws/:room">>, fun(Req) -> upgrade(Req, Test, WsOpts) end},
              {<<"/deny">>, fun(_) -> {403, [], <<"no">>} end},
              {<<"/plain">>, fun(_) -> {200, [], <<"plain">>} end}],
    {_, Port} = falco_test_listener:start(Name, maps:merge(#{routes => Routes}, ListenerOpts)),
    Port.

upgrade(Req, Test, WsOpts) ->
    Protocol = falco_ws_handshake:protocol(Req, maps:get(protocols, WsOpts, [])),
    {websocket, ?MODULE,
     #{test => Test, protocol => Protocol, room => falco_req:binding(room, Req)}, WsOpts}.

%% The pid of the next session that starts.
await_init() ->
    receive {ws_init, P, _} -> P after 5000 -> error(no_init) end.

%% The reason session `Pid' ended with.
terminated(Pid) ->
    receive {ws_terminate, Pid, Reason} -> Reason after 5000 -> error(no_terminate) end.

%% The most memory process `Pid' held over `Ms' (or until it ended),
%% sampled every 20 ms: its own (heap, stack, messages) and, apart, the
%% off-heap binaries it referred to, `{memory, Own, Binaries}'.
watch_memory(Pid, Ms) ->
    watch_memory(Pid, erlang:monotonic_time(millisecond) + Ms, 0, 0).

watch_memory(Pid, Deadline, Peak, BinPeak) ->
    case process_info(Pid, [memory, binary]) of
        [{memory, M}, {binary, Bins}] ->
            B = lists:sum([Size || {_, Size, _} <- Bins]),
            case erlang:monotonic_time(millisecond) < Deadline of
                true -> timer:sleep(20), watch_memory(Pid, Deadline, max(M, Peak), max(B, BinPeak));
                false -> {memory, max(M, Peak), max(B, BinPeak)}
            end;
        undefined ->
            {memory, Peak, BinPeak}
    end.

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
