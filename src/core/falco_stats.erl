%% @private A listener's counters (issue 15 introspection and load shedding):
%% connections accepted, requests refused (by kind), requests in flight,
%% and open connections by protocol. One `counters' array per listener,
%% created with it and kept in its configuration (`stats'); read by
%% {@link falco:info/1}.
%%
%% Requests in flight must never leak a count, whatever way a request
%% ends, `kill' included, and a process killed in the middle of a request
%% runs no `after'. So the count is kept by the process that outlives the
%% request, never by the one that runs the handler alone:
%% <ul>
%% <li>each connection has a cell ({@link cell/0}, made by its acceptor)
%%     holding how many of the listener's in-flight requests and which
%%     protocol count it holds; only the connection process writes it;</li>
%% <li>an HTTP/1.1 connection counts its request around the pipeline
%%     ({@link request_start/4}, {@link request_end/2}); an HTTP/2
%%     connection counts each stream from its process's start to its exit
%%     (or until it becomes a WebSocket tunnel), seeing the exit even of a
%%     stream process killed by a reset;</li>
%% <li>when a connection process ends, however (killed too), its acceptor
%%     gives back what its cell still holds ({@link settle/2}): no one
%%     writes the cell any more then, so nothing is counted twice.</li>
%% </ul>
%% Load shedding (`max_requests_in_flight') is decided in the same call
%% that counts a request in ({@link request_start/4}): add first, then
%% look, as {@link falco_slots} does. The cost per request is two atomic
%% adds on the listener's array and two on the connection's cell, and a
%% read when a limit is set.
-module(falco_stats).

-export([new/0, register/2, forget/1, for/1, cell/0, accepted/1, protocol/3,
         request_start/4, request_end/2, request_done/4, settle/2, rejected/2, info/1,
         mark/1, unmark/0, in_progress/1]).

-opaque stats() :: counters:counters_ref().
-opaque cell() :: atomics:atomics_ref().
-type rejection() :: shed | rate_limit | limits | flood.
-export_type([stats/0, cell/0, rejection/0]).

-define(ACCEPTED, 1).
-define(IN_FLIGHT, 2).
-define(HTTP1, 3).
-define(H2, 4).
-define(WEBSOCKET, 5).
-define(SHED, 6).
-define(LIMITS, 7).
-define(FLOOD, 8).
-define(RATE_LIMIT, 9).
-define(H3, 10).
-define(SIZE, 10).

%% in a cell
-define(CELL_IN_FLIGHT, 1).
-define(CELL_PROTOCOL, 2).

-define(KEY(Name), {?MODULE, Name}).
%% the request a process is running, in its process dictionary
-define(MARK, '$falco_request').

%% @doc The counters of a new listener.
-spec new() -> stats().
new() ->
    counters:new(?SIZE, [write_concurrency]).

%% @doc Makes `Stats' the counters of listener `Name' for {@link for/1}
%% (read where only the listener's name is at hand: a rejected request,
%% {@link falco:info/1}).
-spec register(atom(), stats()) -> ok.
register(Name, Stats) ->
    persistent_term:put(?KEY(Name), Stats).

%% @doc Forgets the counters of a listener that stopped.
-spec forget(atom()) -> ok.
forget(Name) ->
    _ = persistent_term:erase(?KEY(Name)),
    ok.

%% @doc The counters of listener `Name', if it runs.
-spec for(atom() | undefined) -> stats() | undefined.
for(Name) ->
    persistent_term:get(?KEY(Name), undefined).

%% @doc A connection's cell (see the module's doc).
-spec cell() -> cell().
cell() ->
    atomics:new(2, [{signed, true}]).

%% @doc A connection was accepted.
-spec accepted(stats()) -> ok.
accepted(Stats) ->
    counters:add(Stats, ?ACCEPTED, 1).

%% @doc The connection of `Cell' speaks `Protocol' now (it counted under
%% its former protocol until now, if any).
-spec protocol(stats(), cell(), http1 | h2 | h3 | websocket) -> ok.
protocol(Stats, Cell, Protocol) ->
    Ix = protocol_index(Protocol),
    case atomics:exchange(Cell, ?CELL_PROTOCOL, Ix) of
        0 -> ok;
        Old -> counters:sub(Stats, Old, 1)
    end,
    counters:add(Stats, Ix, 1).

protocol_index(http1) -> ?HTTP1;
protocol_index(h2) -> ?H2;
protocol_index(h3) -> ?H3;
protocol_index(websocket) -> ?WEBSOCKET.

%% @doc Counts a request in on the connection of `Cell', unless that makes
%% more than `Max' in flight on the listener: then it is not counted and
%% the caller answers 503 (the reason `{max_requests_in_flight, Seconds}'
%% of {@link falco_errors}, `RetryAfter' seconds).
-spec request_start(stats(), cell(), pos_integer() | infinity, pos_integer()) ->
          ok | {shed, {max_requests_in_flight, pos_integer()}}.
request_start(Stats, Cell, infinity, _RetryAfter) ->
    ok = atomics:add(Cell, ?CELL_IN_FLIGHT, 1),
    counters:add(Stats, ?IN_FLIGHT, 1);
request_start(Stats, Cell, Max, RetryAfter) ->
    ok = counters:add(Stats, ?IN_FLIGHT, 1),
    case counters:get(Stats, ?IN_FLIGHT) > Max of
        true ->
            ok = counters:sub(Stats, ?IN_FLIGHT, 1),
            {shed, {max_requests_in_flight, RetryAfter}};
        false ->
            atomics:add(Cell, ?CELL_IN_FLIGHT, 1)
    end.

%% @doc A request counted by {@link request_start/4} ended.
-spec request_end(stats(), cell()) -> ok.
request_end(Stats, Cell) ->
    ok = atomics:sub(Cell, ?CELL_IN_FLIGHT, 1),
    counters:sub(Stats, ?IN_FLIGHT, 1).

%% @doc A connection's map of its stream processes counted in flight by
%% {@link request_start/4}: process `Pid' ended, or no longer runs a
%% request (a WebSocket tunnel); its request ends if it was counted. The
%% map without it. One rule for HTTP/2's and HTTP/3's connections.
-spec request_done(pid(), #{pid() => true}, stats(), cell()) -> #{pid() => true}.
request_done(Pid, Counted, Stats, Cell) ->
    case maps:take(Pid, Counted) of
        {true, Rest} ->
            ok = request_end(Stats, Cell),
            Rest;
        error ->
            Counted
    end.

%% @doc The connection of `Cell' ended (its acceptor saw its exit): what
%% it still held is given back.
-spec settle(stats(), cell()) -> ok.
settle(Stats, Cell) ->
    case atomics:exchange(Cell, ?CELL_IN_FLIGHT, 0) of
        0 -> ok;
        N -> counters:sub(Stats, ?IN_FLIGHT, N)
    end,
    case atomics:exchange(Cell, ?CELL_PROTOCOL, 0) of
        0 -> ok;
        Ix -> counters:sub(Stats, Ix, 1)
    end.

%% @doc A request or connection was refused: `shed' (over
%% `max_requests_in_flight'), `rate_limit' (a 429 of
%% {@link falco_rate_limit}), `limits' (a request over a limit or
%% malformed, answered with its 4xx/5xx by the pipeline), `flood' (an
%% HTTP/2 connection closed for a flood). A listener that is gone
%% (`undefined') counts nothing.
-spec rejected(stats() | undefined, rejection()) -> ok.
rejected(undefined, _) -> ok;
rejected(Stats, shed) -> counters:add(Stats, ?SHED, 1);
rejected(Stats, rate_limit) -> counters:add(Stats, ?RATE_LIMIT, 1);
rejected(Stats, limits) -> counters:add(Stats, ?LIMITS, 1);
rejected(Stats, flood) -> counters:add(Stats, ?FLOOD, 1).

%% @doc What the counters say now.
-spec info(stats()) -> #{accepted := non_neg_integer(),
                         requests_in_flight := non_neg_integer(),
                         connections_by_protocol := #{http1 | h2 | h3 | websocket => non_neg_integer()},
                         rejected := #{rejection() => non_neg_integer()}}.
info(Stats) ->
    G = fun(Ix) -> max(0, counters:get(Stats, Ix)) end,
    #{accepted => G(?ACCEPTED),
      requests_in_flight => G(?IN_FLIGHT),
      connections_by_protocol => #{http1 => G(?HTTP1), h2 => G(?H2), h3 => G(?H3),
                                  websocket => G(?WEBSOCKET)},
      rejected => #{shed => G(?SHED), rate_limit => G(?RATE_LIMIT), limits => G(?LIMITS), flood => G(?FLOOD)}}.

%% -- the request in progress -------------------------------------------------

%% A process inside a handler cannot answer `sys:get_state': the pipeline
%% marks the request it runs in the process's dictionary (a `put' and an
%% `erase' per request), where {@link in_progress/1} reads it from outside
%% with `process_info/2'. A process killed in the middle takes its mark
%% with it.

%% @doc Marks `Req' as the request in progress of this process.
-spec mark(map()) -> ok.
mark(Req) ->
    _ = put(?MARK, {maps:get(method, Req, undefined), maps:get(path, Req, undefined),
                    erlang:monotonic_time()}),
    ok.

%% @doc The request of this process is answered.
-spec unmark() -> ok.
unmark() ->
    _ = erase(?MARK),
    ok.

%% @doc The request process `Pid' is running (method, path and how long
%% it has run), `undefined' if none, and the rest of its dictionary for
%% the caller's other keys.
-spec in_progress(pid()) -> {#{method := binary(), path := binary(), duration_ms := integer()}
                             | undefined, [{term(), term()}]}.
in_progress(Pid) ->
    case erlang:process_info(Pid, dictionary) of
        {dictionary, Dict} ->
            case lists:keyfind(?MARK, 1, Dict) of
                {_, {Method, Path, Since}} ->
                    {#{method => Method, path => Path,
                       duration_ms => erlang:convert_time_unit(erlang:monotonic_time() - Since,
                                                               native, millisecond)},
                     Dict};
                false ->
                    {undefined, Dict}
            end;
        undefined ->
            {undefined, []}
    end.
