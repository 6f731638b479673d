%% @doc The example's WebSocket endpoint, `/ws': every message comes back
%% as it went (text as text, binary as binary), with permessage-deflate
%% offered and 16 MB messages allowed (what Autobahn's test cases send).
-module(falco_example_ws).
-behaviour(falco_ws_handler).

-export([upgrade/1, handle_in/2]).

%% @doc The route's handler: upgrade, whatever the path's other routes do.
-spec upgrade(falco_req:req()) -> {websocket, module(), undefined, falco_ws_handler:opts()}.
upgrade(_Req) ->
    {websocket, ?MODULE, undefined, #{compress => true}}.

%% @private
-spec handle_in({text | binary, binary()}, State) -> {reply, {text | binary, binary()}, State}.
handle_in(Message, State) ->
    {reply, Message, State}.
