%% PropEr properties for QUIC's recovery modules: falco_quic_reasm
%% (pieces of a stream in any order, overlapping and repeated, deliver the
%% whole stream once), falco_quic_ack (the ranges are the set of packet
%% numbers fed in, duplicates are the repeats, and ranges survive a round
%% trip through the ACK frame's fields), falco_quic_loss (random sends,
%% ACKs, timers and key discards never make it raise; no packet is both
%% acknowledged and lost, or reported twice; bytes in flight are what is
%% outstanding; the congestion window never drops below the minimum) and
%% falco_quic_cc (the window stays at or above the minimum whatever it is
%% told). Run from EUnit, 500 cases each.
-module(falco_quic_recovery_prop).
-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-define(NUMTESTS, 500).

properties_test_() ->
    [{atom_to_list(P),
      {timeout, 120,
       ?_assert(proper:quickcheck(?MODULE:P(), [{numtests, falco_fuzz_prop:numtests(?MODULE, P, ?NUMTESTS)},
                                                {to_file, user}]))}}
     || P <- [prop_reasm_any_order, prop_ack_ranges, prop_ack_wire_round_trip,
              prop_loss_total, prop_cc_min_window]].

%% -- reassembly ---------------------------------------------------------------

%% A stream, pieces that cover it (cut at random points, plus random
%% overlapping pieces and repeats), in a random order.
pieces() ->
    ?LET({Whole, Cuts, Extra}, {non_empty(binary()), list(nat()), list({nat(), nat()})},
         begin
             Size = byte_size(Whole),
             Points = lists:usort([0, Size | [C rem Size || C <- Cuts]]),
             Cover = [{A, B - A} || {A, B} <- lists:zip(lists:droplast(Points), tl(Points))],
             Overlaps = [{O rem Size, erlang:min(L, Size - O rem Size)} || {O, L} <- Extra],
             ?LET(Order, shuffle(Cover ++ Overlaps),
                  {Whole, [{O, binary:part(Whole, O, L)} || {O, L} <- Order]})
         end).

shuffle(L) ->
    ?LET(Keys, vector(length(L), nat()), [X || {_, X} <- lists:sort(lists:zip(Keys, L))]).

prop_reasm_any_order() ->
    ?FORALL({Whole, Pieces}, pieces(),
            begin
                {Out, R} = lists:foldl(fun({O, B}, {Acc, R0}) ->
                                               {ok, Ready, R1} = falco_quic_reasm:add(O, B, R0),
                                               {[Acc | Ready], R1}
                                       end, {[], falco_quic_reasm:new(#{max_pieces => 100000})},
                                       Pieces),
                iolist_to_binary(Out) =:= Whole
                    andalso falco_quic_reasm:offset(R) =:= byte_size(Whole)
                    andalso falco_quic_reasm:buffered(R) =:= 0
                    andalso falco_quic_reasm:pieces(R) =:= 0
            end).

%% -- received packet numbers ---------------------------------------------------

prop_ack_ranges() ->
    ?FORALL(Pns, list(range(0, 200)),
            begin
                {Dups, A} = lists:foldl(fun(Pn, {D, A0}) ->
                                                case falco_quic_ack:received(Pn, true, 0, A0) of
                                                    {ok, A1} -> {D, A1};
                                                    duplicate -> {D + 1, A0}
                                                end
                                        end, {0, falco_quic_ack:new(application, #{max_ranges => 1000})},
                                        Pns),
                Set = lists:usort(Pns),
                Ranges = falco_quic_ack:ranges(A),
                Dups =:= length(Pns) - length(Set)
                    andalso expand(Ranges) =:= lists:reverse(Set)
                    andalso disjoint(Ranges)
            end).

expand(Ranges) ->
    lists:append([lists:seq(Hi, Lo, -1) || {Lo, Hi} <- Ranges]).

%% highest first, with a gap between each range and the next
disjoint([{Lo, _}, R = {_, Hi2} | Rest]) -> Hi2 < Lo - 1 andalso disjoint([R | Rest]);
disjoint(_) -> true.

%% Ranges from a set of packet numbers, highest first.
ranges() ->
    ?LET(Pns, non_empty(list(range(0, 1 bsl 20))), to_ranges(lists:reverse(lists:usort(Pns)))).

to_ranges([Pn | Rest]) -> to_ranges(Rest, Pn, Pn, []).

to_ranges([Pn | Rest], Lo, Hi, Acc) when Pn =:= Lo - 1 -> to_ranges(Rest, Pn, Hi, Acc);
to_ranges([Pn | Rest], Lo, Hi, Acc) -> to_ranges(Rest, Pn, Pn, [{Lo, Hi} | Acc]);
to_ranges([], Lo, Hi, Acc) -> lists:reverse([{Lo, Hi} | Acc]).

prop_ack_wire_round_trip() ->
    ?FORALL(Ranges, ranges(),
            begin
                {Largest, First, Gaps} = falco_quic_ack:to_wire(Ranges),
                falco_quic_ack:from_wire(Largest, First, Gaps) =:= {ok, Ranges}
                    andalso lists:all(fun({G, L}) -> G >= 0 andalso L >= 0 end, Gaps)
            end).

%% -- loss detection -----------------------------------------------------------

space() -> frequency([{1, initial}, {1, handshake}, {3, application}]).

event() ->
    frequency([{10, {send, space(), elements([ack_eliciting, ack_eliciting, in_flight, ack_only]),
                    range(20, 1500), range(0, 50000)}},
               {6, {ack, space(), non_empty(list(range(0, 40))), frequency([{5, sent}, {1, any}]),
                    range(0, 100000), range(0, 50000)}},
               {2, {skip, space()}},
               {2, {timeout, range(0, 2000000)}},
               {3, fire},
               {1, {discard, elements([initial, handshake])}},
               {1, confirm},
               {1, {amplification, boolean()}}]).

-record(run, {loss :: falco_quic_loss:loss(),
              now = 0 :: integer(),
              next = #{initial => 0, handshake => 0, application => 0} :: map(),
              out = #{} :: map(),
              discarded = [] :: [atom()],
              skipped = [] :: [{atom(), non_neg_integer()}]}).

prop_loss_total() ->
    ?FORALL({Role, Events}, {elements([server, client]), ?LET(N, range(0, 120), vector(N, event()))},
            begin
                R0 = #run{loss = falco_quic_loss:new(#{role => Role})},
                try lists:foldl(fun step/2, R0, Events) of
                    #run{} -> true
                catch
                    throw:Why ->
                        io:format(user, "~p~n", [Why]),
                        false
                end
            end).

step({send, Space, Kind, Size, Dt}, R = #run{loss = L, now = Now0, next = Next, out = Out}) ->
    Now = Now0 + Dt,
    Pn = maps:get(Space, Next),
    L1 = falco_quic_loss:sent(Space, Pn, Size, Kind, {Space, Pn}, Now, L),
    Out1 = case lists:member(Space, R#run.discarded) of
               true -> Out;
               false -> Out#{{Space, Pn} => {Size, Kind}}
           end,
    check(R#run{loss = L1, now = Now, next = Next#{Space := Pn + 1}, out = Out1});
step({ack, Space, Pns0, Which, Delay, Dt}, R = #run{loss = L, now = Now0, next = Next}) ->
    Now = Now0 + Dt,
    %% mostly numbers sent, sometimes any
    Pns = case {Which, maps:get(Space, Next)} of
              {sent, N} when N > 0 -> [P rem N || P <- Pns0];
              _ -> Pns0
          end,
    Ranges = to_ranges(lists:reverse(lists:usort(Pns))),
    case falco_quic_loss:ack(Space, Ranges, Delay, Now, L) of
        {ok, Acked, Lost, L1} -> check(report(Acked ++ Lost, R#run{loss = L1, now = Now}));
        {error, protocol_violation} -> never_sent(Space, Ranges, R), R#run{now = Now}
    end;
step({skip, Space}, R = #run{loss = L, next = Next}) ->
    Pn = maps:get(Space, Next),
    R#run{loss = falco_quic_loss:skipped(Space, Pn, L), next = Next#{Space := Pn + 1},
          skipped = [{Space, Pn} | R#run.skipped]};
step({timeout, Dt}, R = #run{now = Now}) ->
    timeout(Now + Dt, R);
step(fire, R = #run{loss = L, now = Now}) ->
    case falco_quic_loss:deadline(L) of
        infinity -> R;
        T -> timeout(erlang:max(T, Now), R)
    end;
step({discard, Space}, R = #run{loss = L, out = Out, discarded = D}) ->
    check(R#run{loss = falco_quic_loss:discard(Space, L), discarded = [Space | D],
                out = maps:filter(fun({Sp, _}, _) -> Sp =/= Space end, Out)});
step(confirm, R = #run{loss = L}) ->
    R#run{loss = falco_quic_loss:peer_validated(falco_quic_loss:handshake_confirmed(L))};
step({amplification, B}, R = #run{loss = L}) ->
    R#run{loss = falco_quic_loss:amplification_limited(B, L)}.

timeout(Now, R = #run{loss = L}) ->
    case falco_quic_loss:timeout(Now, L) of
        {none, L1} -> R#run{loss = L1, now = Now};
        {{lost, Lost}, L1} -> check(report(Lost, R#run{loss = L1, now = Now}));
        {{probe, [{_, N} | _]}, L1} when N =:= 1; N =:= 2 -> R#run{loss = L1, now = Now}
    end.

%% Each reported packet was outstanding, and is no longer.
report(Infos, R = #run{out = Out}) ->
    lists:foldl(fun(Info, A = #run{out = O}) ->
                        case maps:is_key(Info, O) of
                            true -> A#run{out = maps:remove(Info, O)};
                            false -> throw({reported_twice_or_never_sent, Info, Out})
                        end
                end, R, Infos).

%% A protocol violation only for an ACK of a number beyond the largest sent
%% or one skipped, never in a discarded space.
never_sent(Space, Ranges = [{_, Largest} | _], #run{next = Next, skipped = Skipped, discarded = D}) ->
    Skip = [Pn || {Sp, Pn} <- Skipped, Sp =:= Space,
                  lists:any(fun({Lo, Hi}) -> Pn >= Lo andalso Pn =< Hi end, Ranges)],
    case not lists:member(Space, D) andalso (Largest >= maps:get(Space, Next) orelse Skip =/= []) of
        true -> ok;
        false -> throw({unjustified_violation, Space, Ranges})
    end.

%% Bytes in flight are the outstanding in-flight packets'; the window is at
%% least the minimum (2 × 1200).
check(R = #run{loss = L, out = Out}) ->
    InFlight = lists:sum([S || {S, K} <- maps:values(Out), K =/= ack_only]),
    case {falco_quic_loss:in_flight(L), falco_quic_cc:window(falco_quic_loss:cc(L))} of
        {InFlight, W} when W >= 2400 -> R;
        Got -> throw({in_flight_or_window, InFlight, Got})
    end.

%% -- congestion control -------------------------------------------------------

cc_op() ->
    oneof([{sent, range(0, 1500)}, {acked, range(0, 1500), range(0, 1000)},
           {lost, range(0, 20000), range(0, 1000), range(0, 1000)}, persistent,
           {discarded, range(0, 3000)}, {app_limited, boolean()}]).

prop_cc_min_window() ->
    ?FORALL({Mds, Ops}, {range(1200, 9000), list(cc_op())},
            begin
                C = lists:foldl(fun cc/2, falco_quic_cc:new(Mds), Ops),
                falco_quic_cc:window(C) >= 2 * Mds
                    andalso falco_quic_cc:in_flight(C) >= 0
            end).

cc({sent, N}, C) -> falco_quic_cc:sent(N, C);
cc({acked, N, T}, C) -> falco_quic_cc:acked(N, T, C);
cc({lost, N, T, Now}, C) -> falco_quic_cc:lost(N, T, Now, C);
cc(persistent, C) -> falco_quic_cc:persistent_congestion(C);
cc({discarded, N}, C) -> falco_quic_cc:discarded(N, C);
cc({app_limited, B}, C) -> falco_quic_cc:app_limited(B, C).
