%% The bounds of a QUIC listener under abuse (issue 43, point 7, the
%% process level), each measured and asserted on falco's own listener:
%%
%% - an Initial flood, 2,000 Initials with real ClientHellos from 200 UDP
%%   sockets on three loopback addresses in 2 s: the connection processes
%%   alive at any moment stay within h3_max_handshakes (50 here) and
%%   h3_max_handshakes_per_address (20), the CPU it costs per Initial is
%%   printed and bounded, and a real GET is served after it;
%% - a handshake that never finishes (an Initial and nothing else): the
%%   connection ends at h3_handshake_timeout, its routes and its
%%   handshake place go with it;
%% - a client that asks for 50 MB, reads and acknowledges 4 MB and then
%%   goes silent: the connection and its stream process hold a bounded
%%   amount of memory (what is in flight, within the congestion window's
%%   2 MB cap, its packets' records, and about twice h2_send_buffer
%%   queued), the stream ends at send_timeout and the connection at its
%%   idle timeout;
%% - idle connections (200, each after one GET, their clients silent but
%%   for ACKs): memory per connection with and without hibernation, and
%%   `sys' still answered by a hibernated connection.
%%
%% The clients are falco_test_quic_client's: its first Initial alone
%% (first_initial/2) for the flood and the unfinished handshake, its
%% sessions (connect/2, which keep their socket, acknowledge what comes,
%% and stop reading at silence/1) for the stalled reader and the idle
%% connections, get/3 for the GETs that must succeed.
-module(h3_bounds_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1, end_per_testcase/2]).
-export([handle/1]).
-export([initial_flood/1, handshake_never_finishes/1, stalled_reader/1, idle_memory/1]).

-define(C, falco_test_quic_client).
-define(BIG, 50 * 1024 * 1024).
-define(PIECE, 65536).
%% the bytes a stalled reader reads and acknowledges
-define(READ, 4194304).

all() ->
    [initial_flood, handshake_never_finishes, stalled_reader, idle_memory].

init_per_suite(Config) ->
    {ok, _} = application:ensure_all_started(falco),
    Config.

end_per_suite(_Config) ->
    ok.

end_per_testcase(_Case, _Config) ->
    [ok = falco:stop_listener(N) || N <- [h3_bounds, h3_bounds_hib, h3_bounds_nohib],
                                    {ok, _} <- [falco:port(N)]],
    ok.

listener(Name, Extra) ->
    {ok, _} = falco:start_listener(Name, maps:merge(
                                           #{ip => {127, 0, 0, 1}, port => 0, transport => tls,
                                             tls_opts => falco_test_tls:server_opts(),
                                             http3 => true, handler => fun ?MODULE:handle/1},
                                           Extra)),
    {ok, Port} = falco:port(Name),
    Port.

handle(#{path := <<"/big">>}) ->
    {stream, 200, [{<<"content-length">>, integer_to_binary(?BIG)}],
     fun(Send) -> big(Send, ?BIG div ?PIECE) end};
handle(_) ->
    {200, [], <<"hello">>}.

%% Distinct pieces, so that what a process holds is what it refers to.
big(_Send, 0) ->
    ok;
big(Send, N) ->
    case Send(crypto:strong_rand_bytes(?PIECE)) of
        ok -> big(Send, N - 1);
        {error, _} -> ok
    end.

%% -- the Initial flood ------------------------------------------------------------

-define(SOCKETS, 200).
-define(ROUNDS, 10).
-define(MAX_HS, 50).
-define(MAX_ADDR, 20).

initial_flood(_Config) ->
    Port = listener(h3_bounds, #{h3_max_handshakes => ?MAX_HS,
                                 h3_max_handshakes_per_address => ?MAX_ADDR,
                                 h3_handshake_timeout => 1000}),
    {ok, [Holder]} = falco_listener_sup:http3_sockets(h3_bounds),
    %% three addresses, one with three fifths of the sockets: it reaches
    %% the address's cap while the others fill the listener's
    Addrs = [{127, 0, 0, 2}, {127, 0, 0, 2}, {127, 0, 0, 2}, {127, 0, 0, 3}, {127, 0, 0, 4}],
    Socks = [begin
                 {ok, S} = gen_udp:open(0, [binary, {active, false},
                                            {ip, lists:nth(1 + I rem length(Addrs), Addrs)}]),
                 S
             end || I <- lists:seq(1, ?SOCKETS)],
    %% every Initial made first: the flood's cost is the server's
    Initials = [[flood_initial() || _ <- Socks] || _ <- lists:seq(1, ?ROUNDS)],
    Sampler = sampler(Holder),
    %% a real client tries meanwhile (from 127.0.0.1, so only the
    %% listener's cap can refuse it)
    Self = self(),
    Getter = spawn_link(fun() -> Self ! {gets, gets(Port, 0, 0)} end),
    {R0, _} = statistics(runtime),
    W0 = erlang:monotonic_time(millisecond),
    lists:foreach(fun(Round) ->
                          T = erlang:monotonic_time(millisecond),
                          [ok = gen_udp:send(S, {127, 0, 0, 1}, Port, D)
                           || {S, D} <- lists:zip(Socks, Round)],
                          timer:sleep(max(0, T + 200 - erlang:monotonic_time(millisecond)))
                  end, Initials),
    FloodMs = erlang:monotonic_time(millisecond) - W0,
    Getter ! stop,
    {Tried, Served} = receive {gets, G} -> G after 5000 -> error(getter) end,
    %% every connection the flood started ends at the handshake timeout
    ok = wait_until(fun() -> h3(h3_bounds, handshakes) =:= 0 andalso
                                 h3(h3_bounds, connections) =:= 0 end, 5000),
    RuntimeMs = element(1, statistics(runtime)) - R0,
    AllMs = erlang:monotonic_time(millisecond) - W0,
    {MaxProcs, MaxHs, MaxAddr, Samples} = stop_sampler(Sampler),
    %% nothing left behind: no route, no connection process
    Routes = element(3, sys:get_state(Holder)),
    ok = wait_until(fun() -> ets:info(Routes, size) =:= 0 end, 1000),
    ?assertEqual([], [P || P <- element(2, erlang:process_info(Holder, links)), is_conn(P)]),
    Info = h3_info(h3_bounds),
    %% what came back to the flood's sockets: the address limit, 3x
    Back = lists:sum([drain(S) || S <- Socks]),
    [gen_udp:close(S) || S <- Socks],
    Sent = ?SOCKETS * ?ROUNDS,
    Started = maps:get(started, Info),
    UsPer = RuntimeMs * 1000 / Sent,
    ct:pal("flood: ~b Initials in ~b ms from ~b sockets on ~b addresses; started ~b, refused ~b;~n"
           "at most ~b connection processes, ~b handshakes, ~b from one address (~b samples);~n"
           "CPU ~b ms until all were gone (~b ms): ~.1f us per Initial, ~b us per "
           "connection started; ~b bytes back to the flood (~.2f x what started);~n"
           "GETs from another address during the flood: ~b tried, ~b served",
           [Sent, FloodMs, ?SOCKETS, length(lists:usort(Addrs)), Started, maps:get(refused, Info), MaxProcs,
            MaxHs, MaxAddr, Samples, RuntimeMs, AllMs, UsPer, RuntimeMs * 1000 div max(1, Started),
            Back, Back / max(1, Started * 1200), Tried, Served]),
    ?assert(Samples > 20),
    %% (a GET served meanwhile has a connection of its own)
    ?assert(MaxProcs =< ?MAX_HS + Served),
    %% both caps reached, neither passed
    ?assertEqual(?MAX_HS, MaxHs),
    ?assertEqual(?MAX_ADDR, MaxAddr),
    ?assertEqual(Sent + Tried, Started + maps:get(refused, Info)),
    %% the places freed at the handshake timeout were taken again: more
    %% than one round of them, but far fewer than the Initials (the GETs
    %% served meanwhile started connections of their own)
    ?assert(Started - Served >= ?MAX_HS),
    ?assert(Started - Served =< ?MAX_HS * 4),
    ?assert(Back =< 3 * 1200 * Started),
    %% a refused Initial costs a lookup; a started one a TLS handshake
    ?assert(UsPer < 1000),
    %% and the listener serves
    {ok, #{status := 200, body := <<"hello">>}} = falco_test_quic_client:get(Port, <<"/">>, #{}).

%% GETs with a short deadline, one after another, until told to stop.
gets(Port, Tried, Served) ->
    receive
        stop -> {Tried, Served}
    after 0 ->
        case falco_test_quic_client:get(Port, <<"/">>, #{timeout => 400}) of
            {ok, #{status := 200}} -> gets(Port, Tried + 1, Served + 1);
            {error, _} -> gets(Port, Tried + 1, Served)
        end
    end.

%% A ClientHello of its own (a key share, a random DCID) in an Initial of
%% 1200 bytes.
flood_initial() ->
    ?C:first_initial(#{}, 1200).

%% Samples, every 10 ms, the connection processes alive and the holder's
%% handshakes in progress, overall and by address.
sampler(Holder) ->
    Self = self(),
    spawn_link(fun() -> sample(Self, Holder, {0, 0, 0, 0}) end).

sample(Parent, Holder, Acc = {P, H, A, N}) ->
    receive
        {stop, Parent} -> Parent ! {samples, Acc}
    after 10 ->
        S = sys:get_state(Holder),
        Hs = map_size(element(9, S)),
        ByAddr = lists:max([0 | maps:values(element(10, S))]),
        Procs = length([L || L <- element(2, erlang:process_info(Holder, links)),
                             is_conn(L)]),
        sample(Parent, Holder, {max(P, Procs), max(H, Hs), max(A, ByAddr), N + 1})
    end.

stop_sampler(Pid) ->
    Pid ! {stop, self()},
    receive {samples, Acc} -> Acc after 5000 -> error(sampler) end.

drain(S) ->
    case gen_udp:recv(S, 65536, 0) of
        {ok, {_, _, D}} -> byte_size(D) + drain(S);
        {error, timeout} -> 0
    end.

%% -- a handshake that never finishes ---------------------------------------------

handshake_never_finishes(_Config) ->
    Port = listener(h3_bounds, #{h3_handshake_timeout => 1000,
                                 h3_max_handshakes_per_address => 1}),
    {ok, [Holder]} = falco_listener_sup:http3_sockets(h3_bounds),
    Routes = element(3, sys:get_state(Holder)),
    Before = conns(),
    {ok, S} = gen_udp:open(0, [binary, {active, false}, {ip, {127, 0, 0, 1}}]),
    ok = gen_udp:send(S, {127, 0, 0, 1}, Port, flood_initial()),
    T0 = erlang:monotonic_time(millisecond),
    ok = wait_until(fun() -> length(conns() -- Before) =:= 1 end, 1000),
    [Pid] = conns() -- Before,
    Ref = erlang:monitor(process, Pid),
    ?assertEqual(1, h3(h3_bounds, handshakes)),
    ?assertMatch([_ | _], ets:match_object(Routes, {'_', Pid})),
    %% its address's one place is taken: another client from it is refused
    ?assertEqual({error, timeout}, falco_test_quic_client:get(Port, <<"/">>, #{timeout => 300})),
    Ms = receive
             {'DOWN', Ref, process, Pid, _} -> erlang:monotonic_time(millisecond) - T0
         after 3000 ->
             error(still_alive)
         end,
    Back = drain(S),
    gen_udp:close(S),
    ct:pal("a handshake left after the Initial ended after ~b ms (h3_handshake_timeout "
           "1000); ~b bytes sent to it", [Ms, Back]),
    ?assert(Ms >= 900 andalso Ms =< 1500),
    ok = wait_until(fun() -> ets:match_object(Routes, {'_', Pid}) =:= [] end, 500),
    ?assertEqual(0, h3(h3_bounds, handshakes)),
    ?assertEqual(0, h3(h3_bounds, connections)),
    ?assert(Back =< 3 * 1200),
    %% the place is free again
    {ok, #{status := 200}} = falco_test_quic_client:get(Port, <<"/">>, #{}).

%% -- a client that stops reading ---------------------------------------------------

-define(SEND_TIMEOUT, 1000).
-define(IDLE, 3000).
stalled_reader(_Config) ->
    Port = listener(h3_bounds, #{h3_idle_timeout => ?IDLE, send_timeout => ?SEND_TIMEOUT,
                                 h2_send_buffer => ?PIECE}),
    Before = conns(),
    {ok, S} = ?C:connect(Port, #{tparams => #{initial_max_data => 1 bsl 30,
                                               initial_max_stream_data_bidi_local => 1 bsl 30,
                                               max_idle_timeout => 60000}}),
    [Conn] = conns() -- Before,
    ok = ?C:request(S, 0, fields(<<"/big">>), <<>>, fin),
    %% read and acknowledge ?READ bytes, then nothing more
    {ok, #{received_bytes := Got}} =
        ?C:recv_until(S, fun(#{received_bytes := B}) -> B >= ?READ end, 5000),
    ok = ?C:silence(S),
    T0 = erlang:monotonic_time(millisecond),
    #{stream_processes := [Stream]} = sys:get_state(Conn),
    CRef = erlang:monitor(process, Conn),
    SRef = erlang:monitor(process, Stream),
    {{MaxMem, MaxBins}, MaxCwnd, StreamMs, ConnMs, N} =
        watch(Conn, Stream, CRef, SRef, T0, {{0, 0}, 0, none, none, 0}),
    %% its routes went with it
    {ok, [Holder]} = falco_listener_sup:http3_sockets(h3_bounds),
    ok = wait_until(fun() -> ets:info(element(3, sys:get_state(Holder)), size) =:= 0 end, 1000),
    ?C:close(S),
    ct:pal("a client read and acknowledged ~b bytes of ~b and went silent: the connection "
           "and its stream process held at most ~b bytes (heaps and binaries; binaries at most "
           "~b; ~b samples), the congestion window at most ~b; the stream ended after ~b ms "
           "(send_timeout ~b), the connection after ~b ms (idle timeout ~b)",
           [Got, ?BIG, MaxMem, MaxBins, N, MaxCwnd, StreamMs, ?SEND_TIMEOUT, ConnMs, ?IDLE]),
    ?assert(N > 10),
    %% falco_quic_cc's cap
    ?assert(MaxCwnd =< 2097152),
    %% what is in flight, the stream's queue (about twice h2_send_buffer)
    %% and the pieces they are cut from
    ?assert(MaxBins =< MaxCwnd + 12 * ?PIECE),
    %% and the heaps: the records of the packets in flight
    ?assert(MaxMem =< 3 * MaxCwnd + 8 * ?PIECE),
    ?assert(StreamMs >= ?SEND_TIMEOUT - 200 andalso StreamMs =< ?SEND_TIMEOUT + 300),
    ?assert(ConnMs >= ?IDLE - 100 andalso ConnMs =< ?IDLE + 1500).

%% Samples the memory of both processes every 20 ms until both are gone.
watch(_, _, _, _, _, Acc = {_, _, S, C, _}) when S =/= none, C =/= none ->
    Acc;
watch(Conn, Stream, CRef, SRef, T0, Acc = {Mem, Cwnd, S, C, N}) ->
    Now = erlang:monotonic_time(millisecond),
    receive
        {'DOWN', SRef, process, _, _} ->
            watch(Conn, Stream, CRef, SRef, T0, setelement(3, Acc, Now - T0));
        {'DOWN', CRef, process, _, _} ->
            watch(Conn, Stream, CRef, SRef, T0, setelement(4, Acc, Now - T0))
    after 20 ->
        {Heaps, Bins} = memory_parts([P || {P, none} <- [{Conn, C}, {Stream, S}]]),
        W = try sys:get_state(Conn, 100) of
                #{quic := #{cwnd := Window, in_flight := F}} ->
                    ct:log("~p ms: ~p ~p window ~b in flight ~b", [Now - T0, memory_parts([Conn]), memory_parts([Stream]), Window, F]),
                    Window
            catch exit:_ -> 0
            end,
        {Mem0, Bins0} = Mem,
        watch(Conn, Stream, CRef, SRef, T0, {{max(Mem0, Heaps + Bins), max(Bins0, Bins)},
                                             max(Cwnd, W), S, C, N + 1})
    end.

%% The processes' heaps and the binaries they refer to (each once).
memory_parts(Pids) ->
    Infos = [I || P <- Pids, I = [_, _] <- [erlang:process_info(P, [memory, binary])]],
    {lists:sum([M || [{memory, M}, _] <- Infos]),
     lists:sum([Size || {_, Size, _} <- lists:ukeysort(1, lists:append([B || [_, {binary, B}] <- Infos]))])}.

%% -- idle connections ---------------------------------------------------------------

-define(IDLE_CONNS, 200).

idle_memory(_Config) ->
    Hib = idle(h3_bounds_hib, 100),
    NoHib = idle(h3_bounds_nohib, infinity),
    ct:pal("~b idle connections after one GET each, bytes per connection (heap + binaries):~n"
           "hibernating after 100 ms: ~b (heap ~b, binaries ~b; ~b hibernated)~n"
           "not hibernating: ~b (heap ~b, binaries ~b)",
           [?IDLE_CONNS, maps:get(per_conn, Hib), maps:get(heap, Hib), maps:get(bins, Hib),
            maps:get(hibernated, Hib), maps:get(per_conn, NoHib), maps:get(heap, NoHib),
            maps:get(bins, NoHib)]),
    ?assertEqual(?IDLE_CONNS, maps:get(hibernated, Hib)),
    ?assertEqual(0, maps:get(hibernated, NoHib)),
    ?assert(maps:get(per_conn, Hib) < maps:get(per_conn, NoHib)),
    ?assert(maps:get(per_conn, Hib) < 32 * 1024).

idle(Name, HibernateAfter) ->
    Port = listener(Name, #{h3_idle_timeout => 60000, hibernate_after => HibernateAfter}),
    {ok, [Holder]} = falco_listener_sup:http3_sockets(Name),
    Clients = [keep_open(Port) || _ <- lists:seq(1, ?IDLE_CONNS)],
    Conns = [P || P <- element(2, erlang:process_info(Holder, links)), is_conn(P)],
    ?assertEqual(?IDLE_CONNS, length(Conns)),
    %% the last ACKs in, then hibernate_after
    timer:sleep(600),
    {Heaps, Bins} = memory_parts(Conns),
    PerConn = (Heaps + Bins) div ?IDLE_CONNS,
    Hibernated = length([P || P <- Conns,
                              erlang:process_info(P, current_function) =:=
                                  {current_function, {erlang, hibernate, 3}}]),
    %% sys wakes a hibernated connection and it sleeps again
    C = hd(Conns),
    #{protocol := h3, quic := #{phase := _}} = sys:get_state(C),
    ok = sys:suspend(C),
    ok = sys:resume(C),
    case HibernateAfter of
        infinity -> ok;
        _ -> ok = wait_until(fun() -> erlang:process_info(C, current_function) =:=
                                          {current_function, {erlang, hibernate, 3}} end, 1000)
    end,
    [?C:close(Cl) || Cl <- Clients],
    ok = falco:stop_listener(Name),
    #{per_conn => PerConn, heap => Heaps div ?IDLE_CONNS, bins => Bins div ?IDLE_CONNS,
      hibernated => Hibernated}.

is_conn(P) when is_port(P) ->
    false;
is_conn(P) ->
    case erlang:process_info(P, dictionary) of
        {dictionary, D} -> lists:keyfind('$initial_call', 1, D) =:=
                               {'$initial_call', {falco_http3_conn, init, 3}};
        undefined -> false
    end.

%% A client that does the handshake and a GET, then keeps its connection
%% open, acknowledging what comes and sending nothing else (a session of
%% the test client), until closed.
keep_open(Port) ->
    {ok, S} = ?C:connect(Port, #{tparams => #{max_idle_timeout => 60000}}),
    ok = ?C:request(S, 0, fields(<<"/">>), <<>>, fin),
    {ok, _} = ?C:recv_until(S, fun(#{responses := R}) -> is_map_key(0, R) end, 5000),
    S.

fields(Path) ->
    [{<<":method">>, <<"GET">>}, {<<":scheme">>, <<"https">>},
     {<<":authority">>, <<"localhost">>}, {<<":path">>, Path}].

%% -- helpers --------------------------------------------------------------------------

conns() ->
    [P || P <- processes(), is_conn(P)].

h3_info(Name) ->
    {ok, #{http3 := I}} = falco:info(Name),
    I.

h3(Name, Key) ->
    maps:get(Key, h3_info(Name)).

wait_until(Fun, Ms) ->
    Deadline = erlang:monotonic_time(millisecond) + Ms,
    wait_until_(Fun, Deadline).

wait_until_(Fun, Deadline) ->
    case Fun() of
        true -> ok;
        false ->
            case erlang:monotonic_time(millisecond) > Deadline of
                true -> timeout;
                false -> timer:sleep(10), wait_until_(Fun, Deadline)
            end
    end.
