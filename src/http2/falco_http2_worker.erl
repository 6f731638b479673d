%% @doc The process of one HTTP/2 stream (DESIGN principle 3: streams are
%% concurrent), linked to its connection: it runs the request
%% ({@link falco_http2_stream:init/4}) and, when the handler upgraded the
%% stream to WebSocket (RFC 8441), goes on as the session
%% ({@link falco_ws_conn:run/4}) on the stream's tunnel
%% ({@link falco_http2_tunnel}, its carrier). Kept apart from
%% falco_http2_stream so that the module graph has no cycle: the tunnel
%% sends through falco_http2_stream.
%%
%% @private internal to falco
-module(falco_http2_worker).

-export([start/4, start_counted/6, init/4]).

%% A stream's first heap, in words. A stream process's data is all live
%% until it ends, so with the default 233 words its first collection
%% freed nothing and was followed at once by a major one to grow the heap,
%% each copying the request: traced under h2load -c50 -m1 (2026-11-29),
%% hello and the bench's echo (a 256-byte POST) made 1 minor and 1 major
%% collection per stream at 233 words, none at 610 (hello none at 376;
%% json 3 at 233, 2 at 610). 3 KB more per stream in flight, about what
%% the collections grew it to anyway.
-define(MIN_HEAP, 610).

%% @doc Starts the process for stream `Id' of connection `Conn'.
-spec start(pid(), non_neg_integer(), map() | {error, falco_errors:reason(), binary() | undefined},
            map()) -> pid().
start(Conn, Id, Req, Ctx) ->
    %% (a pid: no monitor is asked for)
    case spawn_opt(?MODULE, init, [Conn, Id, Req, Ctx], [link, {min_heap_size, ?MIN_HEAP}]) of
        Pid when is_pid(Pid) -> Pid
    end.

%% @doc Starts stream `Id''s process for a request counted in flight
%% ({@link falco_stats:request_start/4}) in the connection's map of them,
%% `Counted', or, over `max_requests_in_flight', for the 503 it gets
%% instead; an error to answer is not counted. The pid and the map. One
%% rule for HTTP/2's and HTTP/3's connections.
-spec start_counted(pid(), non_neg_integer(),
                    map() | {error, falco_errors:reason(), binary() | undefined}, map(),
                    {falco_stats:stats(), falco_stats:cell(), pos_integer() | infinity,
                     pos_integer()}, #{pid() => true}) -> {pid(), #{pid() => true}}.
start_counted(Conn, Id, Req = #{method := Method}, Ctx, {Stats, Cell, Max, RA}, Counted) ->
    case falco_stats:request_start(Stats, Cell, Max, RA) of
        ok ->
            Pid = start(Conn, Id, Req, Ctx),
            {Pid, Counted#{Pid => true}};
        {shed, Reason} ->
            {start(Conn, Id, {error, Reason, Method}, Ctx), Counted}
    end;
start_counted(Conn, Id, Error, Ctx, _, Counted) ->
    {start(Conn, Id, Error, Ctx), Counted}.

%% @private
-spec init(pid(), non_neg_integer(), map() | {error, falco_errors:reason(), binary() | undefined},
           map()) -> ok | {error, term()}.
init(Conn, Id, Req, Ctx) ->
    %% Ctx is not kept for later: it may hold the request's whole body
    %% (falco_http2_stream:init/4), which the handler may be done with.
    Hibernate = maps:get(hibernate_after, Ctx, infinity),
    case falco_http2_stream:init(Conn, Id, Req, Ctx) of
        {websocket, S, Upgrade} ->
            Tunnel = {falco_http2_tunnel, falco_http2_tunnel:new(S)},
            closed = falco_ws_conn:run(Tunnel, Conn, <<>>, Upgrade#{hibernate_after => Hibernate}),
            ok;
        Result ->
            Result
    end.
