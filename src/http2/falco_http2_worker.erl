%% @doc The process of one HTTP/2 stream (DESIGN principle 3: streams are
%% concurrent), linked to its connection: it runs the request
%% ({@link falco_http2_stream:init/4}) and, when the handler upgraded the
%% stream to WebSocket (RFC 8441), goes on as the session
%% ({@link falco_ws_conn:enter_stream/3}). Kept apart from
%% falco_http2_stream so that the module graph has no cycle: the session
%% reads and writes through falco_http2_stream's tunnel functions.
%%
%% @private internal to falco
-module(falco_http2_worker).

-export([start/4, init/4]).

%% @doc Starts the process for stream `Id' of connection `Conn'.
-spec start(pid(), pos_integer(), map() | {error, falco_errors:reason(), binary() | undefined},
            map()) -> pid().
start(Conn, Id, Req, Ctx) ->
    spawn_link(?MODULE, init, [Conn, Id, Req, Ctx]).

%% @private
-spec init(pid(), pos_integer(), map() | {error, falco_errors:reason(), binary() | undefined},
           map()) -> ok | {error, term()}.
init(Conn, Id, Req, Ctx) ->
    %% Ctx is not kept for later: it may hold the request's whole body
    %% (falco_http2_stream:init/4), which the handler may be done with.
    Hibernate = maps:get(hibernate_after, Ctx, infinity),
    case falco_http2_stream:init(Conn, Id, Req, Ctx) of
        {websocket, S, Upgrade} ->
            closed = falco_ws_conn:enter_stream(Conn, S, Upgrade#{hibernate_after => Hibernate}),
            ok;
        Result ->
            Result
    end.
