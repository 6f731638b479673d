%% EUnit tests for falco_quic_streams: client streams opened implicitly,
%% in-order delivery once per byte, the FIN, every error of RFC 9000
%% §19.4-19.10 with its code, credit given back (MAX_STREAM_DATA,
%% MAX_DATA, MAX_STREAMS), STOP_SENDING and RESET_STREAM both ways, lost
%% data and control frames sent again, round-robin sending within the
%% peer's credit, and a 10 MB send drained through take/2, timed.
-module(falco_quic_streams_tests).
-include_lib("eunit/include/eunit.hrl").

-define(M, falco_quic_streams).

ours() ->
    #{initial_max_data => 100000, initial_max_stream_data_bidi_remote => 10000,
      initial_max_stream_data_uni => 10000, initial_max_streams_bidi => 4,
      initial_max_streams_uni => 4}.

peers() ->
    #{initial_max_data => 100000, initial_max_stream_data_bidi_local => 10000,
      initial_max_stream_data_uni => 10000, initial_max_streams_uni => 3}.

new() ->
    ?M:new(ours(), peers(), #{}).

frame(Id, Off, Fin, Data, S) ->
    ?M:stream_frame(Id, Off, Fin, Data, 0, S).

ok({ok, Events, S}) -> {Events, S}.

%% The frames take/2 gave, parsed back.
parsed(Taken) ->
    lists:append([begin {ok, Fs} = falco_quic_frame:parse(iolist_to_binary(Io), #{peer => server}), Fs end
                  || {Io, _} <- Taken]).

frames(Control) ->
    [F || {F, _} <- Control].

%% -- receiving ----------------------------------------------------------------

implicit_open_test() ->
    {Events, S1} = ok(frame(8, 0, nofin, <<"abc">>, new())),
    ?assertEqual([{stream_open, 0, bidi}, {stream_open, 4, bidi}, {stream_open, 8, bidi},
                  {stream_data, 8, <<"abc">>, nofin}], Events),
    %% a lower stream is open already
    {Events2, S2} = ok(frame(4, 0, nofin, <<"x">>, S1)),
    ?assertEqual([{stream_data, 4, <<"x">>, nofin}], Events2),
    %% uni streams count apart
    {Events3, _} = ok(frame(6, 0, nofin, <<>>, S2)),
    ?assertEqual([{stream_open, 2, uni}, {stream_open, 6, uni}], Events3),
    ?assertEqual(3, ?M:active(S2)).

%% MAX_STREAM_DATA and STOP_SENDING open client bidi streams too
opened_by_send_frames_test() ->
    {ok, S1} = ?M:max_stream_data(4, 50000, new()),
    ?assertEqual(2, ?M:active(S1)),
    {Events, S2} = ok(frame(0, 0, nofin, <<"a">>, S1)),
    ?assertEqual([{stream_open, 0, bidi}, {stream_open, 4, bidi}, {stream_data, 0, <<"a">>, nofin}],
                 Events),
    {ok, S3} = ?M:send(4, binary:copy(<<0>>, 20000), nofin, S2),
    ?assertMatch({[_ | _], _, _}, ?M:take(1200, S3)),
    {Events2, _} = ok(?M:stop_sending(8, 3, S2)),
    ?assertEqual([{stream_open, 8, bidi}, {stop_sending, 8, 3}], Events2).

shuffled_test() ->
    Data = list_to_binary(lists:seq(0, 199)),
    Pieces = [{Off, binary:part(Data, Off, 20)} || Off <- lists:seq(0, 180, 20)],
    Shuffled = [lists:nth(I, Pieces) || I <- [5, 3, 10, 1, 2, 9, 4, 6, 8, 7]],
    {Delivered, _} = lists:foldl(fun({Off, Bin}, {Acc, S}) ->
                                         {Evs, S1} = ok(frame(0, Off, nofin, Bin, S)),
                                         {Acc ++ [D || {stream_data, 0, D, nofin} <- Evs], S1}
                                 end, {[], new()}, Shuffled),
    ?assertEqual(Data, iolist_to_binary(Delivered)).

duplicates_test() ->
    {_, S1} = ok(frame(0, 0, nofin, <<"abcd">>, new())),
    ?assertEqual({[], S1}, ok(frame(0, 0, nofin, <<"abcd">>, S1))),
    ?assertEqual({[], S1}, ok(frame(0, 1, nofin, <<"bc">>, S1))),
    {Evs, S2} = ok(frame(0, 2, nofin, <<"cdefg">>, S1)),
    ?assertEqual([{stream_data, 0, <<"efg">>, nofin}], Evs),
    %% held out of order, overlapped, then filled
    {[], S3} = ok(frame(0, 10, nofin, <<"klm">>, S2)),
    {[], S4} = ok(frame(0, 9, nofin, <<"jklmn">>, S3)),
    {Evs2, _} = ok(frame(0, 7, nofin, <<"hij">>, S4)),
    ?assertEqual([{stream_data, 0, <<"hijklmn">>, nofin}], Evs2).

fin_test() ->
    {_, S1} = ok(frame(0, 0, nofin, <<"abc">>, new())),
    %% a FIN alone, all delivered before it
    {Evs, S2} = ok(frame(0, 3, fin, <<>>, S1)),
    ?assertEqual([{stream_data, 0, <<>>, fin}], Evs),
    %% repeated: nothing more
    ?assertMatch({ok, [], _}, frame(0, 3, fin, <<>>, S2)),
    %% FIN before the data it ends
    {[{stream_open, 0, bidi}, {stream_open, 4, bidi}], S3} = ok(frame(4, 2, fin, <<"yz">>, new())),
    {Evs3, _} = ok(frame(4, 0, nofin, <<"wx">>, S3)),
    ?assertEqual([{stream_data, 4, <<"wxyz">>, fin}], Evs3),
    %% with data
    {Evs4, _} = ok(frame(0, 0, fin, <<"all">>, new())),
    ?assertEqual([{stream_open, 0, bidi}, {stream_data, 0, <<"all">>, fin}], Evs4).

errors_test() ->
    S = new(),
    {ok, 3, S1} = ?M:open_uni(S),
    %% STREAM, RESET_STREAM on a stream of ours, or a server bidi stream
    ?assertMatch({error, stream_state_error, _}, frame(3, 0, nofin, <<"a">>, S1)),
    ?assertMatch({error, stream_state_error, _}, frame(7, 0, nofin, <<"a">>, S1)),
    ?assertMatch({error, stream_state_error, _}, frame(1, 0, nofin, <<"a">>, S1)),
    ?assertMatch({error, stream_state_error, _}, ?M:reset_stream(3, 0, 0, S1)),
    ?assertMatch({error, stream_state_error, _}, ?M:reset_stream(1, 0, 0, S1)),
    %% STOP_SENDING, MAX_STREAM_DATA on a receive-only stream, a stream of
    %% ours not opened, a server bidi stream
    ?assertMatch({error, stream_state_error, _}, ?M:stop_sending(2, 0, S1)),
    ?assertMatch({error, stream_state_error, _}, ?M:stop_sending(7, 0, S1)),
    ?assertMatch({error, stream_state_error, _}, ?M:stop_sending(1, 0, S1)),
    ?assertMatch({error, stream_state_error, _}, ?M:max_stream_data(2, 100, S1)),
    ?assertMatch({error, stream_state_error, _}, ?M:max_stream_data(7, 100, S1)),
    ?assertMatch({error, stream_state_error, _}, ?M:max_stream_data(1, 100, S1)),
    ?assertMatch({ok, _}, ?M:max_stream_data(3, 100, S1)),
    ?assertMatch({ok, [], _}, ?M:stop_sending(3, 0, new_uni_reset())),
    %% past our stream limits (4 each)
    ?assertMatch({error, stream_limit_error, _}, frame(16, 0, nofin, <<"a">>, S)),
    ?assertMatch({error, stream_limit_error, _}, frame(18, 0, nofin, <<"a">>, S)),
    ?assertMatch({error, stream_limit_error, _}, ?M:reset_stream(16, 0, 0, S)),
    ?assertMatch({error, stream_limit_error, _}, ?M:stop_sending(16, 0, S)),
    ?assertMatch({ok, [_, _, _, _, _], _}, frame(12, 0, nofin, <<"a">>, S)),
    %% past the flow limit, the stream's and the connection's
    ?assertMatch({error, flow_control_error, _}, frame(0, 0, nofin, binary:copy(<<0>>, 10001), S)),
    ?assertMatch({error, flow_control_error, _}, frame(0, 10000, nofin, <<0>>, S)),
    Small = ?M:new(maps:put(initial_max_data, 15000, ours()), peers(), #{}),
    {_, Small1} = ok(frame(0, 0, nofin, binary:copy(<<0>>, 10000), Small)),
    ?assertMatch({error, flow_control_error, _}, frame(4, 0, nofin, binary:copy(<<0>>, 5001), Small1)),
    %% final size
    {_, F1} = ok(frame(0, 0, fin, <<"abc">>, S)),
    ?assertMatch({error, final_size_error, _}, frame(0, 0, fin, <<"ab">>, F1)),
    ?assertMatch({error, final_size_error, _}, frame(0, 3, nofin, <<"d">>, F1)),
    ?assertMatch({error, final_size_error, _}, ?M:reset_stream(0, 0, 4, F1)),
    {_, F2} = ok(frame(0, 0, nofin, <<"abc">>, S)),
    ?assertMatch({error, final_size_error, _}, ?M:reset_stream(0, 0, 2, F2)),
    %% MAX_STREAMS past 2^60
    ?assertMatch({error, frame_encoding_error, _}, ?M:max_streams(uni, (1 bsl 60) + 1, S)),
    ?assertMatch({ok, _}, ?M:max_streams(uni, 10, S)).

%% A uni stream of ours, reset and the reset acknowledged: forgotten.
new_uni_reset() ->
    {ok, 3, S1} = ?M:open_uni(new()),
    S2 = ?M:reset(3, 5, S1),
    {[{{reset_stream, 3, 5, 0}, Info}], S3} = ?M:control(0, 0, S2),
    {[], S4} = ?M:acked(Info, S3),
    0 = ?M:active(S4),
    S4.

reassembly_limit_test() ->
    S = ?M:new(ours(), peers(), #{max_buffered => 100}),
    ?assertMatch({ok, _, _}, frame(0, 50, nofin, binary:copy(<<0>>, 50), S)),
    ?assertMatch({error, flow_control_error, _}, frame(0, 50, nofin, binary:copy(<<0>>, 51), S)),
    %% one byte here and one there
    Frag = lists:foldl(fun(I, Acc) -> element(3, frame(0, 2 * I + 1, nofin, <<0>>, Acc)) end,
                       new(), lists:seq(0, 255)),
    ?assertMatch({error, internal_error, _}, frame(0, 1001, nofin, <<0>>, Frag)).

closed_streams_ignored_test() ->
    %% a request stream: FIN received and consumed, FIN sent and acked
    {_, S1} = ok(frame(0, 0, fin, <<"GET">>, new())),
    S2 = ?M:consumed(0, 3, 0, S1),
    {ok, S3} = ?M:send(0, <<"200">>, fin, S2),
    {[{_, Info}], _, S4} = ?M:take(1200, S3),
    ?assertEqual(1, ?M:active(S4)),
    {[], S5} = ?M:acked(Info, S4),
    ?assertEqual(0, ?M:active(S5)),
    ?assertMatch({ok, [], _}, frame(0, 0, fin, <<"GET">>, S5)),
    ?assertMatch({ok, [], _}, ?M:reset_stream(0, 1, 3, S5)),
    ?assertMatch({ok, [], _}, ?M:stop_sending(0, 1, S5)),
    ?assertMatch({ok, _}, ?M:max_stream_data(0, 100000, S5)),
    ?assertEqual({error, closed}, ?M:send(0, <<"x">>, nofin, S5)),
    ?assertEqual(closed, ?M:unsent(0, S5)),
    %% the next stream is new
    ?assertMatch({ok, [{stream_open, 4, bidi}, _], _}, frame(4, 0, nofin, <<"a">>, S5)),
    %% a client uni stream has no send half
    {_, U1} = ok(frame(2, 0, fin, <<"x">>, new())),
    ?assertEqual(0, ?M:active(?M:consumed(2, 1, 0, U1))),
    ?assertEqual({error, closed}, ?M:send(2, <<"x">>, nofin, U1)).

%% -- credit -------------------------------------------------------------------

max_stream_data_test() ->
    {_, S1} = ok(frame(0, 0, nofin, binary:copy(<<1>>, 6000), new())),
    ?assertEqual({[], S1}, ?M:control(0, 0, S1)),
    ?assertNot(?M:pending(S1)),
    S2 = ?M:consumed(0, 4000, 0, S1),
    ?assertNot(?M:pending(S2)),
    S3 = ?M:consumed(0, 2000, 0, S2),
    ?assert(?M:pending(S3)),
    {[{{max_stream_data, 0, 16000}, Info}], S4} = ?M:control(0, 0, S3),
    ?assertEqual({[], S4}, ?M:control(0, 0, S4)),
    %% lost: sent again with the current value
    S5 = ?M:lost(Info, S4),
    ?assertMatch({[{{max_stream_data, 0, 16000}, _}], _}, ?M:control(0, 0, S5)),
    %% consuming past what was delivered counts what was delivered
    S6 = ?M:consumed(0, 100000, 0, S4),
    ?assertEqual({[], S6}, ?M:control(0, 0, S6)).

max_data_test() ->
    S0 = ?M:new(maps:put(initial_max_data, 20000, ours()), peers(), #{}),
    {_, S1} = ok(frame(0, 0, nofin, binary:copy(<<1>>, 6000), S0)),
    {_, S2} = ok(frame(4, 0, nofin, binary:copy(<<1>>, 6000), S1)),
    S3 = ?M:consumed(4, 6000, 0, ?M:consumed(0, 6000, 0, S2)),
    {Frames, S4} = ?M:control(0, 0, S3),
    ?assertEqual([{max_data, 32000}, {max_stream_data, 0, 16000}, {max_stream_data, 4, 16000}],
                 frames(Frames)),
    {_, MaxDataInfo} = hd(Frames),
    ?assertMatch({[{{max_data, 32000}, _}], _}, ?M:control(0, 0, ?M:lost(MaxDataInfo, S4))),
    %% a reset gives the abandoned bytes back to the connection
    {_, R1} = ok(frame(0, 0, nofin, binary:copy(<<1>>, 6000), S0)),
    {Evs, R2} = ok(?M:reset_stream(0, 9, 10000, R1)),
    ?assertEqual([{stream_reset, 0, 9}], Evs),
    ?assertEqual([{max_data, 30000}], frames(element(1, ?M:control(0, 0, R2)))),
    %% no more data events; the stream is done receiving
    ?assertMatch({ok, [], _}, frame(0, 6000, nofin, <<"late">>, R2)).

max_streams_test() ->
    %% four streams open (the limit), two of them done
    {_, S1} = ok(frame(12, 0, fin, <<>>, new())),
    Done = fun(Id, S) ->
                   {ok, Sa} = ?M:send(Id, <<>>, fin, S),
                   {[{_, Info}], _, Sb} = ?M:take(1200, Sa),
                   element(2, ?M:acked(Info, Sb))
           end,
    S2 = Done(0, ?M:consumed(0, 0, 0, element(2, ok(frame(0, 0, fin, <<>>, S1))))),
    ?assertEqual({[], S2}, ?M:control(0, 0, S2)),
    S3 = Done(4, element(2, ok(frame(4, 0, fin, <<>>, S2)))),
    ?assertEqual(2, ?M:active(S3)),
    {[{{max_streams, bidi, 6}, Info}], S4} = ?M:control(0, 0, S3),
    ?assertMatch({ok, [{stream_open, 16, bidi}, {stream_open, 20, bidi}, _], _},
                 frame(20, 0, nofin, <<"a">>, S4)),
    ?assertMatch({error, stream_limit_error, _}, frame(24, 0, nofin, <<"a">>, S4)),
    ?assertMatch({[{{max_streams, bidi, 6}, _}], _}, ?M:control(0, 0, ?M:lost(Info, S4))).

%% client uni streams closed: MAX_STREAMS for uni
max_streams_uni_test() ->
    S = lists:foldl(fun(Id, Acc) ->
                            {_, Acc1} = ok(frame(Id, 0, fin, <<"x">>, Acc)),
                            ?M:consumed(Id, 1, 0, Acc1)
                    end, new(), [2, 6]),
    ?assertEqual(0, ?M:active(S)),
    ?assertMatch({[{{max_streams, uni, 6}, _}], _}, ?M:control(0, 0, S)).

%% -- stopping and resetting ---------------------------------------------------

stop_sending_test() ->
    {_, S1} = ok(frame(0, 0, nofin, <<"GET">>, new())),
    {ok, S2} = ?M:send(0, binary:copy(<<7>>, 5000), nofin, S1),
    {_, Used, S3} = ?M:take(1200, S2),
    ?assert(Used =< 1200),
    Sent = 5000 - ?M:unsent(0, S3),
    {Evs, S4} = ok(?M:stop_sending(0, 42, S3)),
    ?assertEqual([{stop_sending, 0, 42}], Evs),
    {[{{reset_stream, 0, 42, Sent}, Info}], S5} = ?M:control(0, 0, S4),
    ?assertEqual(closed, ?M:unsent(0, S5)),
    ?assertEqual({error, closed}, ?M:send(0, <<"x">>, nofin, S5)),
    ?assertMatch({[], 0, _}, ?M:take(1200, S5)),
    ?assertNot(?M:pending(S5)),
    %% repeated STOP_SENDING: nothing more; lost RESET_STREAM: again
    ?assertMatch({ok, [], _}, ?M:stop_sending(0, 42, S5)),
    ?assertMatch({[{{reset_stream, 0, 42, Sent}, _}], _}, ?M:control(0, 0, ?M:lost(Info, S5))).

reset_test() ->
    {ok, Id, S1} = ?M:open_uni(new()),
    {ok, S2} = ?M:send(Id, binary:copy(<<7>>, 3000), nofin, S1),
    {[{_, Lost} | _], _, S3} = ?M:take(1200, S2),
    S4 = ?M:reset(Id, 3, S3),
    {[{{reset_stream, Id, 3, 1200 - 4}, _}], S5} = ?M:control(0, 0, S4),
    %% lost data of a reset stream is not sent again
    ?assertMatch({[], 0, _}, ?M:take(1200, ?M:lost(Lost, S5))),
    ?assertEqual(S5, ?M:reset(Id, 3, S5)).

stop_test() ->
    {_, S1} = ok(frame(0, 0, nofin, binary:copy(<<1>>, 3000), new())),
    {[], S2} = ok(frame(0, 4000, nofin, binary:copy(<<1>>, 2000), S1)),
    S3 = ?M:stop(0, 8, S2),
    {Frames, S4} = ?M:control(0, 0, S3),
    %% what arrived is credited
    ?assertEqual([{stop_sending, 0, 8}], frames(Frames)),
    %% later data is credited and never delivered
    {[], S5} = ok(frame(0, 3000, nofin, binary:copy(<<1>>, 1000), S4)),
    ?assertEqual(0, maps:get(recv_buffered, ?M:info(S5))),
    %% credited: with a connection window of 12000, 9000 bytes arrived and
    %% none read give a MAX_DATA of 21000
    W0 = ?M:new(maps:put(initial_max_data, 12000, ours()), peers(), #{}),
    {_, W1} = ok(frame(0, 0, nofin, binary:copy(<<1>>, 3000), W0)),
    W2 = ?M:stop(0, 8, W1),
    {[], W3} = ok(frame(0, 3000, nofin, binary:copy(<<1>>, 6000), W2)),
    ?assertEqual([{max_data, 21000}, {stop_sending, 0, 8}], frames(element(1, ?M:control(0, 0, W3)))),
    %% the peer's RESET_STREAM ends the receive half without an event
    {[], S6} = ok(?M:reset_stream(0, 8, 6000, S5)),
    {ok, S7} = ?M:send(0, <<>>, fin, S6),
    {[{_, Info}], _, S8} = ?M:take(1200, S7),
    {[], S9} = ?M:acked(Info, S8),
    ?assertEqual(0, ?M:active(S9)).

%% -- sending ------------------------------------------------------------------

fin_only_send_test() ->
    {ok, Id, S1} = ?M:open_uni(new()),
    {ok, S2} = ?M:send(Id, <<"abc">>, nofin, S1),
    {T1, _, S3} = ?M:take(1200, S2),
    ?assertEqual([{stream, Id, 0, nofin, <<"abc">>}], parsed(T1)),
    ?assertNot(?M:pending(S3)),
    {ok, S4} = ?M:send(Id, [], fin, S3),
    ?assert(?M:pending(S4)),
    {T2, Used, S5} = ?M:take(1200, S4),
    ?assertEqual([{stream, Id, 3, fin, <<>>}], parsed(T2)),
    ?assertEqual(iolist_size([Io || {Io, _} <- T2]), Used),
    ?assertEqual({error, closed}, ?M:send(Id, <<"x">>, nofin, S5)),
    ?assertMatch({[], 0, _}, ?M:take(1200, S5)),
    %% the FIN alone lost: sent again; acknowledged with the data: done
    [{_, FinInfo}] = T2,
    {T3, _, S6} = ?M:take(1200, ?M:lost(FinInfo, S5)),
    ?assertEqual([{stream, Id, 3, fin, <<>>}], parsed(T3)),
    S7 = lists:foldl(fun({_, I}, S) -> element(2, ?M:acked(I, S)) end, S6, T1 ++ T3),
    ?assertEqual(0, ?M:active(S7)).

lost_resent_test() ->
    {ok, Id, S1} = ?M:open_uni(new()),
    Data = crypto:strong_rand_bytes(3000),
    {ok, S2} = ?M:send(Id, Data, fin, S1),
    {T1, _, S3} = ?M:take(1200, S2),
    {T2, _, S4} = ?M:take(1200, S3),
    [{_, I1}] = T1,
    S5 = ?M:lost(I1, S4),
    ?assertEqual(parsed(T1), parsed(element(1, ?M:take(1200, S5)))),
    %% resent in two smaller pieces: same offsets and bytes
    {T3, _, S6} = ?M:take(700, S5),
    {T4, _, S7} = ?M:take(700, S6),
    [{stream, Id, 0, nofin, A}] = parsed(T3),
    [{stream, Id, Off, nofin, B} | _] = parsed(T4),
    ?assertEqual(byte_size(A), Off),
    [{stream, Id, 0, nofin, Orig}] = parsed(T1),
    ?assertEqual(Orig, binary:part(<<A/binary, B/binary>>, 0, byte_size(Orig))),
    %% all acked: the stream is done
    {T5, _, S8} = ?M:take(1200, S7),
    Infos = [I || {_, I} <- T2 ++ T3 ++ T4 ++ T5],
    Sent = parsed(T1) ++ parsed(T2) ++ parsed(T5),
    ?assertMatch([{stream, Id, _, fin, _} | _], lists:reverse(Sent)),
    S9 = lists:foldl(fun(I, S) -> element(2, ?M:acked(I, S)) end, S8, Infos),
    ?assertEqual(0, ?M:active(S9)).

round_robin_test() ->
    {_, S1} = ok(frame(0, 0, nofin, <<"a">>, new())),
    {_, S2} = ok(frame(4, 0, nofin, <<"b">>, S1)),
    {ok, S3} = ?M:send(0, binary:copy(<<0>>, 6000), fin, S2),
    {ok, S4} = ?M:send(4, binary:copy(<<4>>, 6000), fin, S3),
    {Ids, _} = lists:mapfoldl(fun(_, S) ->
                                      {T, _, Sn} = ?M:take(1200, S),
                                      {[Id || {stream, Id, _, _, _} <- parsed(T)], Sn}
                              end, S4, lists:seq(1, 8)),
    ?assertEqual([[0], [4], [0], [4], [0], [4], [0], [4]], Ids),
    %% a larger room: frames of both
    {ok, S5} = ?M:send(8, <<"short">>, fin, element(2, ok(frame(8, 0, nofin, <<"c">>, S2)))),
    {ok, S6} = ?M:send(4, binary:copy(<<4>>, 6000), fin, S5),
    {T, _, _} = ?M:take(3000, S6),
    ?assertEqual([8, 4], [Id || {stream, Id, _, _, _} <- parsed(T)]).

flow_allowance_test() ->
    Peers = maps:merge(peers(), #{initial_max_data => 15000, initial_max_stream_data_uni => 4000}),
    S0 = ?M:new(ours(), Peers, #{}),
    {ok, A, S1} = ?M:open_uni(S0),
    {ok, B, S2} = ?M:open_uni(S1),
    {ok, S3} = ?M:send(A, binary:copy(<<1>>, 20000), nofin, S2),
    {ok, S4} = ?M:send(B, binary:copy(<<2>>, 20000), nofin, S3),
    {Sent, S5} = drain(S4),
    ?assertEqual(#{A => 4000, B => 4000}, Sent),
    ?assertNot(?M:pending(S5) andalso element(1, ?M:control(0, 0, S5)) =:= []),
    {Blocked, S6} = ?M:control(0, 0, S5),
    ?assertEqual([{stream_data_blocked, A, 4000}, {stream_data_blocked, B, 4000}],
                 lists:sort(frames(Blocked))),
    ?assertEqual({[], S6}, ?M:control(0, 0, S6)),
    ?assertNot(?M:pending(S6)),
    %% a BLOCKED frame lost is not sent again
    ?assertEqual({[], S6}, ?M:control(0, 0, ?M:lost(element(2, hd(Blocked)), S6))),
    %% more for A; then the connection limit (15000) stops it
    {ok, S7} = ?M:max_stream_data(A, 100000, S6),
    ?assert(?M:pending(S7)),
    {Sent2, S8} = drain(S7),
    ?assertEqual(#{A => 7000}, Sent2),
    {Blocked2, S9} = ?M:control(0, 0, S8),
    ?assertEqual([{data_blocked, 15000}], frames(Blocked2)),
    ?assertNot(?M:pending(S9)),
    {ok, S10} = ?M:max_stream_data(B, 100000, S9),
    ?assertMatch({[], 0, _}, ?M:take(1200, S10)),
    S11 = ?M:max_data(21000, S10),
    {Sent3, _} = drain(S11),
    ?assertEqual(6000, lists:sum(maps:values(Sent3))).

%% The new bytes take/2 gives per stream until it gives nothing.
drain(S) ->
    drain(S, #{}).

drain(S0, Acc) ->
    case ?M:take(1200, S0) of
        {[], 0, S} ->
            {Acc, S};
        {T, _, S} ->
            drain(S, lists:foldl(fun({stream, Id, _, _, D}, A) ->
                                         maps:update_with(Id, fun(N) -> N + byte_size(D) end,
                                                          byte_size(D), A)
                                 end, Acc, parsed(T)))
    end.

%% -- a 10 MB send, timed ------------------------------------------------------

ten_megabytes_test_() ->
    {timeout, 60, fun ten_megabytes/0}.

ten_megabytes() ->
    Size = 10 * 1024 * 1024,
    Big = #{initial_max_data => 1 bsl 40, initial_max_stream_data_bidi_local => 1 bsl 40,
            initial_max_stream_data_uni => 1 bsl 40, initial_max_streams_uni => 3},
    {_, S1} = ok(frame(0, 0, fin, <<"GET">>, ?M:new(ours(), Big, #{}))),
    S2 = ?M:consumed(0, 3, 0, S1),
    Body = crypto:strong_rand_bytes(Size),
    {ok, S3} = ?M:send(0, Body, fin, S2),
    T0 = erlang:monotonic_time(microsecond),
    {Calls, Bytes, S4} = send_loop(S3, 0, 0),
    Us = erlang:monotonic_time(microsecond) - T0,
    io:format(user, "~nfalco_quic_streams: 10 MB in ~b take/2 calls, ~.2f us per call (with acks)~n",
              [Calls, Us / Calls]),
    ?assertEqual(Size, Bytes),
    ?assertEqual(0, ?M:active(S4)),
    %% cover-compiled (rebar3 eunit) it is several times slower
    case cover:is_compiled(?M) of
        false -> ?assert(Us / Calls < 10);
        _ -> ?assert(Us / Calls < 50)
    end.

send_loop(S0, Calls, Bytes) ->
    case ?M:take(1200, S0) of
        {[], 0, S} ->
            {Calls, Bytes, S};
        {Taken, _, S1} ->
            S = lists:foldl(fun({_, Info}, S) -> element(2, ?M:acked(Info, S)) end, S1, Taken),
            N = lists:sum([byte_size(B) || {_, {stream, _, _, B, _}} <- Taken]),
            send_loop(S, Calls + 1, Bytes + N)
    end.

info_test() ->
    {_, S1} = ok(frame(0, 10, nofin, <<"abc">>, new())),
    {ok, 3, S2} = ?M:open_uni(S1),
    {ok, S3} = ?M:send(3, <<"hello">>, nofin, S2),
    ?assertMatch(#{streams := 2, recv_buffered := 3, send_queued := 5, client_bidi_opened := 1,
                   server_uni_opened := 1}, ?M:info(S3)),
    ?assertEqual(5, ?M:unsent(3, S3)),
    ?assertEqual({error, closed}, ?M:send(99, <<"x">>, nofin, S3)),
    %% three uni streams at most (the peer's limit)
    {ok, 7, S4} = ?M:open_uni(S3),
    {ok, 11, S5} = ?M:open_uni(S4),
    ?assertEqual(blocked, ?M:open_uni(S5)),
    {ok, S6} = ?M:max_streams(uni, 4, S5),
    ?assertMatch({ok, 15, _}, ?M:open_uni(S6)).
