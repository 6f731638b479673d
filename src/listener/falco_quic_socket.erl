%% @doc A QUIC listener's UDP socket holder (RFC 9000 §5.2): it owns one
%% UDP socket on the listener's address and port (SO_REUSEPORT, so that
%% several holders share the port and the kernel spreads clients over
%% them), reads it in `{active, N}', and for each datagram:
%%
%% <ul>
%% <li>looks its connection ID up in the listener's route table (an ETS
%% set of `{Cid, Pid}', public, owned by whoever made it; one table for
%% every holder of a listener, so a connection is found whichever socket
%% the kernel hands its datagram to) and sends it on as
%% `{quic_datagram, Holder, Peer, Datagram}';</li>
%% <li>on a miss, asks {@link falco_quic_admit:unknown/1}: a new
%% connection is started for a v1 Initial if the listener is not draining
%% and the handshakes in progress are under `max_handshakes' (for the
%% holder) and `max_handshakes_per_address' (for the client's address):
%% a spoofed Initial flood costs at most that many processes; the
%% client's original DCID is routed to it at once, and the connection
%% routes the CIDs it issues itself. Version Negotiation is answered, the
%% rest dropped.</li>
%% </ul>
%%
%% It is the parent of the connections it started: linked, trapping
%% exits, it removes a connection's routes and its handshake count when
%% it ends, and its own end takes them down. A connection tells it
%% `{quic_established, Pid}' once its handshake is done, which frees its
%% place among the handshakes in progress. Connections send on the socket
%% themselves (gen_udp allows a non-owner to send).
%%
%% A listener's holders share its connection slots with its TCP
%% acceptors (`slots => {Slots, Index, Max}', {@link falco_slots}: this
%% holder's own share is `Index', past the acceptors'): an admitted Initial
%% takes one ({@link falco_slots:claim_connection/3}) before its process
%% starts, none left is a refusal, and its exit gives it back. The
%% connection is counted as the listener's TCP connections are
%% (`stats', {@link falco_stats}: accepted, and open under `h3', its cell
%% given in Info as `cell') and told to telemetry as they are
%% (`[falco, connection, accepted]', `[falco, connection, closed]', with
%% `protocol => h3'). The route table outlives a holder (the listener's
%% supervisor owns it): a holder that starts drops the routes of
%% connections that are gone, or as they go.
%%
%% The connection module is given (`conn => {Module, Args}'):
%% `Module:start_link(Args, Info)' with Info `#{holder, socket, peer,
%% routes, dcid, scid, token, datagram}' returns `{ok, Pid}'.
%%
%% @private internal to falco
-module(falco_quic_socket).
-behaviour(gen_server).

-export([start_link/1, info/1]).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2, terminate/2]).

-define(CID_LEN, 8).
%% stateless resets sent per second, at most (RFC 9000 §10.3)
-define(RESETS_PER_S, 100).

%% how long a stopping holder waits for its connections to close, ms
%% (below the child's shutdown, 5000)
-define(STOP_GRACE, 2000).

-record(s, {socket :: gen_udp:socket(),
            routes :: ets:tid() | atom(),
            conn :: {module(), term()},
            active :: pos_integer(),
            max_handshakes :: non_neg_integer(),
            max_per_address :: non_neg_integer(),
            draining :: fun(() -> boolean()),
            %% connections still in their handshake, and by address
            handshaking = #{} :: #{pid() => inet:ip_address()},
            by_address = #{} :: #{inet:ip_address() => pos_integer()},
            counts = #{} :: #{atom() => non_neg_integer()},
            listener :: atom(),
            slots :: undefined | {falco_slots:slots(), pos_integer(), pos_integer() | infinity},
            stats :: undefined | falco_stats:stats(),
            events = none :: falco_telemetry:emitter(),
            %% every connection started: since when, its falco_stats cell
            conns = #{} :: #{pid() => {integer(), falco_stats:cell()}},
            %% falco:drain/2 in progress: whom to answer, with how many
            %% connections there were, and the deadline's timer
            drain = undefined :: undefined | {pid(), reference(), non_neg_integer(), reference()},
            %% (after the fields tests read by position) address validation
            %% (falco_quic_retry) and the listener's token and reset
            %% secrets (falco_quic_token)
            retry :: falco_quic_retry:mode(),
            secrets :: falco_quic_token:secrets(),
            %% the stateless resets of the current second: {Second, Count}
            resets = {0, 0} :: {integer(), non_neg_integer()}}).

-type opts() :: #{ip := inet:ip_address(), port := inet:port_number(),
                  routes := ets:tid() | atom(), conn := {module(), term()},
                  active_n => pos_integer(), max_handshakes => non_neg_integer(),
                  max_handshakes_per_address => non_neg_integer(),
                  draining => fun(() -> boolean()), listener => atom(),
                  retry => falco_quic_retry:mode(), secrets => falco_quic_token:secrets(),
                  slots => {falco_slots:slots(), pos_integer(), pos_integer() | infinity},
                  stats => falco_stats:stats(), events => falco_telemetry:emitter(),
                  recbuf => pos_integer(), sndbuf => pos_integer()}.

%% @doc Opens the socket and starts holding it; `{error, Reason}' when the
%% port cannot be bound.
-spec start_link(opts()) -> {ok, pid()} | ignore | {error, term()}.
start_link(Opts) ->
    gen_server:start_link(?MODULE, Opts, []).

%% @doc The socket's port and what became of the datagrams so far:
%% `#{port, routed, started, version_negotiation, refused, dropped,
%% handshakes, connections}' (connections: those started still running).
-spec info(pid()) -> map().
info(Pid) ->
    gen_server:call(Pid, info).

%% @private
-spec init(opts()) -> {ok, #s{}} | {stop, term()}.
init(Opts = #{ip := Ip, port := Port, routes := Routes, conn := Conn}) ->
    process_flag(trap_exit, true),
    Active = maps:get(active_n, Opts, 100),
    Family = case tuple_size(Ip) of 4 -> inet; 8 -> inet6 end,
    SockOpts = [binary, Family, {ip, Ip}, {active, Active}, {reuseaddr, true},
                {recbuf, maps:get(recbuf, Opts, 1048576)},
                {sndbuf, maps:get(sndbuf, Opts, 1048576)}]
        ++ [R || R <- [falco_transport:reuseport()], R =/= unsupported],
    case gen_udp:open(Port, SockOpts) of
        {ok, Sock} ->
            Slots = maps:get(slots, Opts, undefined),
            ok = case Slots of
                     %% what this holder's previous life held went with it
                     {C, Index, _} -> falco_slots:reset(C, Index);
                     undefined -> ok
                 end,
            ok = sweep(Routes),
            {ok, #s{socket = Sock, routes = Routes, conn = Conn, active = Active,
                    max_handshakes = maps:get(max_handshakes, Opts, 1000),
                    max_per_address = maps:get(max_handshakes_per_address, Opts, 100),
                    draining = maps:get(draining, Opts, fun() -> false end),
                    retry = maps:get(retry, Opts, never),
                    secrets = maps:get(secrets, Opts, falco_quic_token:new()),
                    listener = maps:get(listener, Opts, undefined), slots = Slots,
                    stats = maps:get(stats, Opts, undefined),
                    events = maps:get(events, Opts, none)}};
        {error, Reason} ->
            {stop, Reason}
    end.

%% @private
-spec handle_call(info, gen_server:from(), #s{}) -> {reply, map(), #s{}}.
handle_call(info, _From, S = #s{socket = Sock, counts = Counts, handshaking = H, conns = C}) ->
    {ok, Port} = inet:port(Sock),
    Zero = maps:from_list([{K, 0} || K <- [routed, started, version_negotiation, refused,
                                            dropped, retry, invalid_token, stateless_reset]]),
    {reply, maps:merge(Zero, Counts#{port => Port, handshakes => map_size(H),
                                     connections => map_size(C)}), S}.

%% @private
-spec handle_cast(term(), #s{}) -> {noreply, #s{}}.
handle_cast(_Msg, S) ->
    {noreply, S}.

%% @private
-spec handle_info(term(), #s{}) -> {noreply, #s{}}.
handle_info({udp, Sock, Ip, Port, Datagram}, S = #s{socket = Sock}) ->
    {noreply, datagram({Ip, Port}, Datagram, S)};
handle_info({udp_passive, Sock}, S = #s{socket = Sock, active = N}) ->
    ok = inet:setopts(Sock, [{active, N}]),
    {noreply, S};
handle_info({quic_established, Pid}, S) ->
    {noreply, handshake_done(Pid, S)};
handle_info({'EXIT', Pid, Reason}, S = #s{routes = Routes}) ->
    true = ets:match_delete(Routes, {'_', Pid}),
    {noreply, drained(closed(Pid, Reason, handshake_done(Pid, S)))};
handle_info({falco_drain, From, Ref, Deadline}, S = #s{conns = Conns}) ->
    %% As an acceptor drains its connections: each is told (HTTP/3's
    %% GOAWAY, falco_http3_conn), and the answer comes once they are all
    %% gone, or at the deadline with those left stopped.
    _ = [Pid ! {falco_drain, self()} || Pid <- maps:keys(Conns)],
    Timer = erlang:start_timer(falco_transport:remaining(Deadline), self(), drain_deadline),
    {noreply, drained(S#s{drain = {From, Ref, map_size(Conns), Timer}})};
handle_info({timeout, Timer, drain_deadline}, S = #s{drain = {From, Ref, Total, Timer},
                                                     conns = Conns}) ->
    _ = [exit(Pid, kill) || Pid <- maps:keys(Conns)],
    From ! {Ref, self(), Total, map_size(Conns)},
    {noreply, S#s{drain = undefined}};
handle_info({'DOWN', _, process, Pid, _}, S = #s{routes = Routes}) ->
    true = ets:match_delete(Routes, {'_', Pid}),
    {noreply, S};
handle_info(_Other, S) ->
    {noreply, S}.

%% @private
-spec terminate(term(), #s{}) -> ok.
terminate(_Reason, #s{socket = Sock, conns = Conns}) ->
    %% The listener stops: each connection closes (CONNECTION_CLOSE, its
    %% WebSocket sessions' 1001 first) on this socket, which is closed
    %% once they are gone or after ?STOP_GRACE ms
    Mons = [begin Pid ! {falco_stop, self()}, monitor(process, Pid) end
            || Pid <- maps:keys(Conns)],
    Deadline = erlang:monotonic_time(millisecond) + ?STOP_GRACE,
    _ = [receive {'DOWN', Mon, process, _, _} -> ok
         after max(0, Deadline - erlang:monotonic_time(millisecond)) -> ok
         end || Mon <- Mons],
    _ = gen_udp:close(Sock),
    ok.

%% The routes of connections that are gone or going (those of a previous
%% holder, which takes its connections with it: their exit signals may
%% still be on their way when this one starts). Every connection in the
%% table is watched, and one that ends has its routes dropped (another
%% holder's too, which drops them as well: once at a restart, a monitor
%% per connection).
sweep(Routes) ->
    Pids = lists:usort([Pid || {_, Pid} <- ets:tab2list(Routes)]),
    lists:foreach(fun(Pid) -> _ = erlang:monitor(process, Pid) end, Pids).

%% -- datagrams ----------------------------------------------------------------

datagram(Peer, Datagram, S = #s{routes = Routes}) ->
    case falco_quic_admit:route(Datagram, ?CID_LEN) of
        {ok, Cid} ->
            case ets:lookup(Routes, Cid) of
                [{_, Pid}] ->
                    Pid ! {quic_datagram, self(), Peer, Datagram},
                    count(routed, S);
                [] ->
                    unknown(Peer, Cid, Datagram, S)
            end;
        {drop, _} ->
            count(dropped, S)
    end.

unknown(Peer = {Ip, Port}, Cid, Datagram, S = #s{socket = Sock}) ->
    case falco_quic_admit:unknown(Datagram) of
        {new, Info} ->
            validate(Peer, Datagram, Info, S);
        {version_negotiation, Reply} ->
            _ = gen_udp:send(Sock, Ip, Port, Reply),
            count(version_negotiation, S);
        {drop, unknown_connection} ->
            stateless_reset(Peer, Cid, Datagram, S);
        {drop, _} ->
            count(dropped, S)
    end.

%% RFC 9000 §8.1: a Retry (no process started), a close for a bad Retry
%% token, or the connection, validated or not (falco_quic_retry).
validate(Peer = {Ip, Port}, Datagram, Info, S = #s{socket = Sock, retry = Mode, secrets = Secrets,
                                                    handshaking = H, draining = Draining}) ->
    Now = erlang:system_time(millisecond),
    case Draining() of
        true ->
            count(refused, S);
        false ->
            case falco_quic_retry:initial(Mode, map_size(H), Secrets, Peer, Info, Now) of
                {retry, Reply} ->
                    _ = gen_udp:send(Sock, Ip, Port, Reply),
                    count(retry, S);
                {invalid_token, Reply} ->
                    _ = gen_udp:send(Sock, Ip, Port, Reply),
                    count(invalid_token, S);
                {admit, Extra} ->
                    case admissible(Ip, S) of
                        true ->
                            Token = falco_quic_token:new_token(Secrets, Ip, Now),
                            start(Peer, Datagram,
                                  maps:merge(Info, Extra#{token_secrets => Secrets,
                                                          new_token => Token}), S);
                        false ->
                            count(refused, S)
                    end
            end
    end.

%% RFC 9000 §10.3: a short header to a connection ID no route knows is
%% answered by a stateless reset, if large enough, at most ?RESETS_PER_S
%% a second.
stateless_reset({Ip, Port}, Cid, Datagram, S = #s{socket = Sock, secrets = Secrets,
                                                  resets = {Second, N}}) ->
    Now = erlang:monotonic_time(second),
    N1 = case Now of
             Second -> N;
             _ -> 0
         end,
    case N1 < ?RESETS_PER_S andalso falco_quic_retry:stateless_reset(Datagram, Cid, Secrets) of
        {reset, Reply} ->
            _ = gen_udp:send(Sock, Ip, Port, Reply),
            count(stateless_reset, S#s{resets = {Now, N1 + 1}});
        _ ->
            count(dropped, S#s{resets = {Now, N1}})
    end.

admissible(Ip, #s{handshaking = H, by_address = ByAddr, max_handshakes = Max,
                  max_per_address = MaxAddr, draining = Draining}) ->
    map_size(H) < Max andalso maps:get(Ip, ByAddr, 0) < MaxAddr andalso not Draining().

start(Peer, Datagram, Info, S) ->
    case claim(S) of
        true -> start_conn(Peer, Datagram, Info, S);
        false -> count(refused, S)
    end.

start_conn(Peer = {Ip, _}, Datagram, Info = #{dcid := Dcid},
           S = #s{socket = Sock, routes = Routes, conn = {Mod, Args}, handshaking = H,
                  by_address = ByAddr, conns = Conns}) ->
    Cell = falco_stats:cell(),
    case start_link(Mod, Args, Info#{holder => self(), socket => Sock, peer => Peer,
                                     routes => Routes, datagram => Datagram, cell => Cell}) of
        {ok, Pid} ->
            true = ets:insert(Routes, {Dcid, Pid}),
            Now = erlang:monotonic_time(),
            ok = opened(Pid, Now, Cell, S),
            count(started, S#s{handshaking = H#{Pid => Ip},
                               by_address = maps:update_with(Ip, fun(N) -> N + 1 end, 1, ByAddr),
                               conns = Conns#{Pid => {Now, Cell}}});
        _ ->
            ok = release(S),
            count(refused, S)
    end.

%% A connection module that fails to start one refuses that client; it
%% does not take the holder, and the other connections, down.
start_link(Mod, Args, Info) ->
    try Mod:start_link(Args, Info)
    catch Class:Reason -> {error, {Class, Reason}}
    end.

%% A connection slot of the listener's, shared with its TCP acceptors.
claim(#s{slots = undefined}) -> true;
claim(#s{slots = {Slots, I, Max}, listener = Name, events = E}) ->
    case falco_slots:claim_connection(Slots, I, Max) of
        true ->
            ok = falco_saturation:room(Slots, Name, E),
            true;
        false ->
            ok = falco_saturation:full(Slots, Name, E, Max),
            false
    end.

release(#s{slots = undefined}) -> ok;
release(#s{slots = {Slots, I, _}}) -> falco_slots:release(Slots, I, connection).

opened(Pid, Now, Cell, #s{stats = Stats, events = E, listener = Name}) ->
    ok = case Stats of
             undefined -> ok;
             _ -> ok = falco_stats:accepted(Stats),
                  falco_stats:protocol(Stats, Cell, h3)
         end,
    falco_telemetry:emit(E, [falco, connection, accepted],
                         fun() -> {#{monotonic_time => Now, system_time => erlang:system_time()},
                                   #{listener => Name, pid => Pid, protocol => h3}}
                         end).

%% A connection process ended: its slot, and what its cell holds, are
%% given back.
closed(Pid, Reason, S = #s{conns = Conns, stats = Stats, events = E, listener = Name}) ->
    case maps:take(Pid, Conns) of
        {{Since, Cell}, Rest} ->
            ok = release(S),
            ok = case Stats of
                     undefined -> ok;
                     _ -> falco_stats:settle(Stats, Cell)
                 end,
            ok = falco_telemetry:emit(
                   E, [falco, connection, closed],
                   fun() ->
                           Now = erlang:monotonic_time(),
                           {#{duration => Now - Since, monotonic_time => Now},
                            #{listener => Name, pid => Pid, reason => Reason, protocol => h3}}
                   end),
            S#s{conns = Rest};
        error ->
            S
    end.

%% A drain whose connections are all gone is answered.
drained(S = #s{drain = {From, Ref, Total, Timer}, conns = Conns}) when map_size(Conns) =:= 0 ->
    _ = erlang:cancel_timer(Timer, [{async, true}, {info, false}]),
    From ! {Ref, self(), Total, 0},
    S#s{drain = undefined};
drained(S) ->
    S.

%% A connection left the handshakes in progress (established, or gone).
handshake_done(Pid, S = #s{handshaking = H, by_address = ByAddr}) ->
    case maps:take(Pid, H) of
        {Ip, H1} ->
            ByAddr1 = case maps:get(Ip, ByAddr) of
                          1 -> maps:remove(Ip, ByAddr);
                          N -> ByAddr#{Ip := N - 1}
                      end,
            S#s{handshaking = H1, by_address = ByAddr1};
        error ->
            S
    end.

count(Key, S = #s{counts = C}) ->
    S#s{counts = maps:update_with(Key, fun(N) -> N + 1 end, 1, C)}.
