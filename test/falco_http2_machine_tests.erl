%% EUnit tests for falco_http2_machine: events in, actions out, no sockets.
%% Frames the machine sends are parsed back with falco_http2_frame so each
%% test asserts on what a client would see. Every flood defence has a test
%% that goes one past its limit (and one that stays at it).
-module(falco_http2_machine_tests).

-include_lib("eunit/include/eunit.hrl").

-define(M, falco_http2_machine).
-define(F, falco_http2_frame).

%% -- harness ------------------------------------------------------------------

-record(t, {m :: term(), enc :: term(), dec :: term(), acts = [] :: list()}).

start() -> start(#{}).

start(Opts) ->
    {M, Acts} = ?M:new(Opts),
    T0 = #t{m = M, enc = falco_hpack:new(), dec = falco_hpack:new(), acts = Acts},
    T1 = feed({settings, #{}}, T0),
    feed(settings_ack, T1).

feed(Frame, T = #t{m = M0}) ->
    {M, Acts} = ?M:frame(Frame, M0),
    T#t{m = M, acts = Acts}.

call(Fun, T = #t{m = M0}) ->
    {M, Acts} = Fun(M0),
    T#t{m = M, acts = Acts}.

%% The stream's process asks for up to Want bytes of body.
read(Id, Want, T) ->
    call(fun(M) -> ?M:read(Id, Want, M) end, T).

frames(#t{acts = Acts}) -> frames_of(Acts).

frames_of(Acts) ->
    Bin = iolist_to_binary([D || {send, D} <- Acts]),
    parse_all(Bin).

parse_all(<<>>) -> [];
parse_all(Bin) ->
    {ok, F, Rest} = ?F:parse(Bin, 16777215),
    [F | parse_all(Rest)].

others(#t{acts = Acts}) -> [A || A <- Acts, element(1, A) =/= send].

block(Fields, T = #t{enc = E0}) ->
    {Block, E} = falco_hpack:encode(Fields, E0),
    {iolist_to_binary(Block), T#t{enc = E}}.

req_get(Id) -> req_get(Id, <<"/">>).

req_get(_Id, Path) ->
    [{<<":method">>, <<"GET">>}, {<<":scheme">>, <<"http">>}, {<<":path">>, Path},
     {<<":authority">>, <<"example.com">>}].

post(Len) ->
    [{<<":method">>, <<"POST">>}, {<<":scheme">>, <<"http">>}, {<<":path">>, <<"/up">>},
     {<<":authority">>, <<"example.com">>}, {<<"content-length">>, integer_to_binary(Len)}].

headers(Id, Fields, Fin, T0) ->
    {Block, T} = block(Fields, T0),
    feed({headers, Id, Fin, fin, undefined, Block}, T).

goaway_code(T) ->
    [Code] = [C || {goaway, _, C, _} <- frames(T)],
    Code.

closed(T) -> [R || {close, R} <- others(T)].

rst(T) -> [{Id, C} || {rst_stream, Id, C} <- frames(T)].

%% -- connection start, SETTINGS -------------------------------------------------

new_sends_settings_test() ->
    {_, Acts} = ?M:new(#{max_concurrent_streams => 7, initial_window_size => 1000,
                         connection_window_size => 165535, max_frame_size => 20000}),
    [{settings, S}, {window_update, 0, 100000}] = frames_of(Acts),
    ?assertEqual(#{max_concurrent_streams => 7, initial_window_size => 1000,
                   max_frame_size => 20000, max_header_list_size => 32768,
                   enable_connect_protocol => true}, S),
    Timers = [N || {timer, N, _} <- Acts],
    ?assertEqual([flood, idle, settings], lists:sort(Timers)).

%% RFC 8441 §3, §4: SETTINGS_ENABLE_CONNECT_PROTOCOL goes out with our
%% first SETTINGS (when enabled), and only then is `:protocol' accepted.
extended_connect_test() ->
    Connect = [{<<":method">>, <<"CONNECT">>}, {<<":protocol">>, <<"websocket">>},
               {<<":scheme">>, <<"http">>}, {<<":path">>, <<"/ws">>},
               {<<":authority">>, <<"example.com">>}],
    {_, Off} = ?M:new(#{enable_connect_protocol => false}),
    [{settings, S} | _] = frames_of(Off),
    ?assertNot(maps:is_key(enable_connect_protocol, S)),
    On = headers(1, Connect, nofin, start()),
    ?assertEqual([], rst(On)),
    ?assertMatch([{request, 1, #{method := <<"GET">>, protocol := <<"websocket">>}}],
                 [A || A = {request, _, _} <- others(On)]),
    ?assertEqual([{1, protocol_error}],
                 rst(headers(1, Connect, nofin, start(#{enable_connect_protocol => false})))).

defaults_test() ->
    ?assertMatch(#{max_concurrent_streams := 100, flood_limits := #{rst_stream := 500}},
                 ?M:default_opts()),
    {M, _} = ?M:new(#{max_frame_size => 32768}),
    ?assertEqual(32768, ?M:max_frame_size(M)),
    ?assertEqual(0, ?M:active_streams(M)).

%% §3.4: the preface must be followed by SETTINGS.
first_frame_not_settings_test() ->
    {M0, _} = ?M:new(#{}),
    {_, Acts} = ?M:frame({ping, <<0:64>>}, M0),
    ?assertMatch([{goaway, 0, protocol_error, <<"settings_expected">>}], frames_of(Acts)),
    ?assertMatch([{close, {protocol_error, settings_expected}}],
                 [A || A = {close, _} <- Acts]),
    {M1, _} = ?M:frame({ping, <<0:64>>}, M0),
    ?assertEqual({M1, []}, ?M:frame({ping, <<0:64>>}, M1)).

settings_ack_and_timeout_test() ->
    {M0, _} = ?M:new(#{}),
    {M1, A1} = ?M:frame({settings, #{}}, M0),
    ?assertEqual([settings_ack], frames_of(A1)),
    {M2, A2} = ?M:frame(settings_ack, M1),
    ?assertEqual([{cancel_timer, settings}], A2),
    %% A second ACK with nothing pending is ignored.
    ?assertMatch({_, []}, ?M:frame(settings_ack, M2)),
    %% §6.5.3: no ACK in time is SETTINGS_TIMEOUT.
    {_, A3} = ?M:timeout(settings, M1),
    ?assertMatch([{goaway, 0, settings_timeout, _}], frames_of(A3)).

ping_test() ->
    T = feed({ping, <<"12345678">>}, start()),
    ?assertEqual([{ping_ack, <<"12345678">>}], frames(T)),
    ?assertEqual([], frames(feed({ping_ack, <<"12345678">>}, T))).

unknown_frame_ignored_test() ->
    T = feed({unknown, 16#42, 0}, start()),
    ?assertEqual([], T#t.acts).

%% -- requests ------------------------------------------------------------------------

request_test() ->
    T = headers(1, req_get(1), fin, start()),
    [{request, 1, Req}, {cancel_timer, idle}] = others(T),
    ?assertMatch(#{method := <<"GET">>, path := <<"/">>, host := <<"example.com">>,
                   version := {2, 0}, body := none}, Req),
    ?assertEqual(1, ?M:active_streams(T#t.m)).

response_test() ->
    T1 = headers(1, req_get(1), fin, start()),
    T2 = call(fun(M) -> ?M:send_headers(1, 200, [{<<"x-a">>, <<"b">>}], nofin, M) end, T1),
    [{headers, 1, nofin, fin, undefined, Block}] = frames(T2),
    {ok, Fields, _} = falco_hpack:decode(Block, falco_hpack:new()),
    ?assertEqual([{<<":status">>, <<"200">>}, {<<"x-a">>, <<"b">>}], Fields),
    T3 = call(fun(M) -> ?M:send_data(1, <<"body">>, fin, tag, M) end, T2),
    ?assertEqual([{data, 1, fin, <<"body">>, 4}], frames(T3)),
    ?assertEqual([{reply, tag, ok}, {timer, idle, 60000}], others(T3)),
    ?assertEqual(0, ?M:active_streams(T3#t.m)),
    %% Sends on a closed stream fail, and say so.
    T4 = call(fun(M) -> ?M:send_data(1, <<"x">>, fin, tag2, M) end, T3),
    ?assertEqual([{reply, tag2, {error, closed}}], others(T4)),
    T5 = call(fun(M) -> ?M:send_trailers(1, [], tag3, M) end, T3),
    ?assertEqual([{reply, tag3, {error, closed}}], others(T5)),
    ?assertEqual([], (call(fun(M) -> ?M:send_headers(1, 200, [], fin, M) end, T3))#t.acts),
    ?assertEqual([], (call(fun(M) -> ?M:send_inform(1, 100, M) end, T3))#t.acts).

%% A whole response in one call: its head and its body ending the stream,
%% or the head alone ending it when the body is empty; the stream closes
%% and the idle timer is armed in the same actions.
send_response_test() ->
    T1 = headers(1, req_get(1), fin, start()),
    T2 = call(fun(M) -> ?M:send_response(1, 200, [{<<"x-a">>, <<"b">>}], [<<"bo">>, "dy"], M) end,
              T1),
    [{headers, 1, nofin, fin, undefined, Block}, {data, 1, fin, <<"body">>, 4}] = frames(T2),
    {ok, Fields, _} = falco_hpack:decode(Block, falco_hpack:new()),
    ?assertEqual([{<<":status">>, <<"200">>}, {<<"x-a">>, <<"b">>}], Fields),
    ?assertEqual([{timer, idle, 60000}], others(T2)),
    ?assertEqual(0, ?M:active_streams(T2#t.m)),
    T3 = headers(3, req_get(3), fin, T2),
    T4 = call(fun(M) -> ?M:send_response(3, 204, [], <<>>, M) end, T3),
    [{headers, 3, fin, fin, undefined, _}] = frames(T4),
    ?assertEqual([{timer, idle, 60000}], others(T4)),
    ?assertEqual(0, ?M:active_streams(T4#t.m)),
    %% a stream already closed gets nothing
    ?assertEqual([], (call(fun(M) -> ?M:send_response(3, 200, [], <<"x">>, M) end, T4))#t.acts).

inform_test() ->
    T1 = headers(1, req_get(1), fin, start()),
    T2 = call(fun(M) -> ?M:send_inform(1, 100, M) end, T1),
    [{headers, 1, nofin, fin, undefined, Block}] = frames(T2),
    ?assertMatch({ok, [{<<":status">>, <<"100">>}], _}, falco_hpack:decode(Block, falco_hpack:new())),
    T3 = call(fun(M) -> ?M:send_headers(1, 204, [], fin, M) end, T2),
    ?assertMatch([{headers, 1, fin, fin, _, _}], frames(T3)).

%% Response fields are one HEADERS frame, or HEADERS + CONTINUATION.
large_response_headers_test() ->
    T1 = headers(1, req_get(1), fin, start()),
    Big = [{<<"x-", (integer_to_binary(I))/binary>>, binary:copy(<<"v">>, 1000)}
           || I <- lists:seq(1, 40)],
    T2 = call(fun(M) -> ?M:send_headers(1, 200, Big, fin, M) end, T1),
    [{headers, 1, fin, nofin, _, _} | Rest] = frames(T2),
    ?assertMatch([{continuation, 1, _, _} | _], Rest).

malformed_request_test() ->
    T = headers(1, [{<<":method">>, <<"GET">>}, {<<":path">>, <<"/">>}], fin, start()),
    ?assertEqual([{1, protocol_error}], rst(T)),
    ?assertEqual([], [R || R = {request, _, _} <- others(T)]).

reply_error_request_test() ->
    T = headers(1, [{<<":method">>, <<"CONNECT">>}, {<<":authority">>, <<"a:1">>}], fin, start()),
    ?assertMatch([{request, 1, {error, {not_implemented, connect}, <<"CONNECT">>}}],
                 [R || R = {request, _, _} <- others(T)]).

%% §5.1.1
stream_ids_test() ->
    T1 = headers(2, req_get(2), fin, start()),
    ?assertEqual(protocol_error, goaway_code(T1)),
    T2 = headers(5, req_get(5), fin, start()),
    T3 = headers(3, req_get(3), fin, T2),
    ?assertEqual(protocol_error, goaway_code(T3)).

%% §5.1: frames on idle streams.
idle_stream_frames_test_() ->
    [?_assertEqual(protocol_error, goaway_code(feed(F, start())))
     || F <- [{data, 1, fin, <<"x">>, 1}, {rst_stream, 1, cancel}, {window_update, 1, 10},
              {continuation, 1, fin, <<>>}, {priority, 1, false, 1, 16},
              {push_promise, 1, fin, 2, <<>>}]].

idle_stream_codec_error_test() ->
    {M0, _} = ?M:new(#{}),
    {M1, _} = ?M:frame({settings, #{}}, M0),
    {_, A} = ?M:frame_error({stream_error, 3, frame_size_error, bad_priority_length}, M1),
    ?assertMatch([{goaway, 0, frame_size_error, _}], frames_of(A)),
    {_, A2} = ?M:frame_error({stream_error, 3, frame_size_error, x}, M0),
    ?assertMatch([{goaway, 0, frame_size_error, _}], frames_of(A2)),
    {_, A3} = ?M:frame_error({connection_error, protocol_error, bad_padding}, M1),
    ?assertMatch([{goaway, 0, protocol_error, <<"bad_padding">>}], frames_of(A3)).

stream_codec_error_test() ->
    T1 = headers(1, req_get(1), nofin, start()),
    T2 = call(fun(M) -> ?M:frame_error({stream_error, 1, protocol_error, zero_window_increment}, M) end,
              T1),
    ?assertEqual([{1, protocol_error}], rst(T2)),
    ?assertMatch([{reset, 1, protocol_error} | _], others(T2)).

%% §5.1: half-closed (remote) and closed streams.
closed_stream_frames_test() ->
    T1 = headers(1, req_get(1), fin, start()),
    %% half-closed (remote): DATA and HEADERS are STREAM_CLOSED
    ?assertEqual([{1, stream_closed}], rst(feed({data, 1, fin, <<"x">>, 1}, T1))),
    {B, T1b} = block([{<<"x">>, <<"y">>}], T1),
    ?assertEqual([{1, stream_closed}], rst(feed({headers, 1, fin, fin, undefined, B}, T1b))),
    %% closed normally: DATA is STREAM_CLOSED, HEADERS a connection error
    T2 = call(fun(M) -> ?M:send_headers(1, 200, [], fin, M) end, T1),
    ?assertEqual([{1, stream_closed}], rst(feed({data, 1, fin, <<"x">>, 1}, T2))),
    ?assertEqual(stream_closed, goaway_code(headers(1, req_get(1), fin, T2))),
    %% WINDOW_UPDATE, RST_STREAM and PRIORITY on closed streams are ignored
    ?assertEqual([], frames(feed({window_update, 1, 5}, T2))),
    ?assertEqual([], frames(feed({rst_stream, 1, cancel}, T2))),
    ?assertEqual([], frames(feed({priority, 1, false, 0, 16}, T2))).

%% Streams that ended normally are remembered as bits over the last 512
%% ids: HEADERS on one is STREAM_CLOSED, on an id skipped (never opened)
%% PROTOCOL_ERROR, as far back as 256 streams; older ones are forgotten, as
%% before. A connection that served 1,000 streams keeps its state small (a
%% map and a queue of 256 closed ids took about 12 KB).
closed_window_test() ->
    Serve = fun(Id, T0) ->
                    T1 = headers(Id, req_get(Id), fin, T0),
                    call(fun(M) -> ?M:send_headers(Id, 200, [], fin, M) end, T1)
            end,
    %% streams 1, 3, ... 1999, except 1001 (skipped)
    T = lists:foldl(Serve, start(), [Id || Id <- lists:seq(1, 1999, 2), Id =/= 1001]),
    ?assertEqual(0, ?M:active_streams(T#t.m)),
    ?assertEqual(stream_closed, goaway_code(headers(1999, req_get(1999), fin, T))),
    %% the oldest stream still in the window, and the first one out of it
    ?assertEqual(stream_closed, goaway_code(headers(1489, req_get(1489), fin, T))),
    ?assertEqual(protocol_error, goaway_code(headers(1487, req_get(1487), fin, T))),
    ?assertEqual([{1999, stream_closed}], rst(feed({data, 1999, fin, <<"x">>, 1}, T))),
    %% a skipped id was never open: PROTOCOL_ERROR (§5.1.1), as a forgotten one
    T2 = lists:foldl(Serve, start(), [1, 3, 7]),
    ?assertEqual(protocol_error, goaway_code(headers(5, req_get(5), fin, T2))),
    ?assertEqual(stream_closed, goaway_code(headers(3, req_get(3), fin, T2))),
    %% a client's RST_STREAM on a closed stream is noted, not an error
    ?assertEqual([], frames(feed({rst_stream, 1999, cancel}, T))),
    ?assert(erts_debug:flat_size(T#t.m) < erts_debug:flat_size(T2#t.m) + 100).

reset_stream_frames_ignored_test() ->
    T1 = headers(1, post(10), nofin, start()),
    T2 = call(fun(M) -> ?M:reset_stream(1, cancel, M) end, T1),
    ?assertEqual([{1, cancel}], rst(T2)),
    ?assertEqual([], rst(feed({data, 1, fin, <<"x">>, 1}, T2))),
    ?assertEqual([], frames(headers(1, [{<<"x">>, <<"y">>}], fin, T2))),
    ?assertEqual([], (call(fun(M) -> ?M:reset_stream(1, cancel, M) end, T2))#t.acts),
    %% after the client's own RST_STREAM, late DATA is an error again
    T3 = feed({rst_stream, 1, cancel}, T2),
    ?assertEqual([{1, stream_closed}], rst(feed({data, 1, fin, <<"x">>, 1}, T3))).

client_reset_test() ->
    T1 = headers(1, req_get(1), fin, start()),
    T2 = feed({rst_stream, 1, cancel}, T1),
    ?assertMatch([{reset, 1, {peer_reset, cancel}} | _], others(T2)),
    ?assertEqual(0, ?M:active_streams(T2#t.m)).

%% §5.3.1
self_dependency_test() ->
    T0 = start(),
    {B, T1} = block(req_get(1), T0),
    T2 = feed({headers, 1, fin, fin, {false, 1, 16}, B}, T1),
    ?assertEqual([{1, protocol_error}], rst(T2)),
    T3 = headers(3, req_get(3), nofin, T0),
    ?assertEqual([{3, protocol_error}], rst(feed({priority, 3, false, 3, 16}, T3))),
    ?assertEqual([], frames(feed({priority, 3, true, 0, 16}, T3))),
    {B2, T4} = block([{<<"x">>, <<"y">>}], T3),
    ?assertEqual([{3, protocol_error}], rst(feed({headers, 3, fin, fin, {false, 3, 1}, B2}, T4))).

push_promise_test() ->
    T = feed({push_promise, 1, fin, 2, <<>>}, headers(1, req_get(1), nofin, start())),
    ?assertEqual(protocol_error, goaway_code(T)).

compression_error_test() ->
    T = feed({headers, 1, fin, fin, undefined, <<16#ff, 16#ff, 16#ff, 16#ff, 16#ff, 16#7f>>},
             start()),
    ?assertEqual(compression_error, goaway_code(T)).

%% §8.1: trailers end the stream; without END_STREAM they are malformed.
trailers_test() ->
    T1 = headers(1, post(3), nofin, start()),
    T2 = feed({data, 1, nofin, <<"abc">>, 3}, T1),
    %% the body waits until the stream's process asks for it
    ?assertEqual([], others(T2)),
    ?assertEqual([{data, 1, <<"abc">>, nofin}], others(read(1, 100, T2))),
    T3 = headers(1, [{<<"x-sum">>, <<"1">>}], fin, T2),
    ?assertEqual([], others(T3)),
    T4 = read(1, 100, T3),
    ?assertEqual([{data, 1, <<"abc">>, nofin}], others(T4)),
    ?assertEqual([{trailers, 1, [{<<"x-sum">>, <<"1">>}]}], others(read(1, 100, T4))),
    ?assertEqual([{1, protocol_error}], rst(headers(1, [{<<"x-sum">>, <<"1">>}], nofin, T2))),
    ?assertEqual([{1, protocol_error}], rst(headers(1, [{<<":path">>, <<"/">>}], fin, T2))),
    %% trailers before the announced length is complete
    ?assertEqual([{1, protocol_error}], rst(headers(1, [{<<"x">>, <<"1">>}], fin, T1))).

%% §8.1.1: Content-Length must match the DATA.
content_length_test() ->
    T1 = headers(1, post(3), nofin, start()),
    ?assertEqual([{1, protocol_error}], rst(feed({data, 1, nofin, <<"abcd">>, 4}, T1))),
    ?assertEqual([{1, protocol_error}], rst(feed({data, 1, fin, <<"ab">>, 2}, T1))),
    T2 = feed({data, 1, fin, <<"abc">>, 3}, T1),
    ?assertEqual([{data, 1, <<"abc">>, fin}], others(read(1, 10, T2))).

%% -- CONTINUATION (§6.10, CVE-2024-27316) ------------------------------------------------

continuation_test() ->
    {B, T1} = block(req_get(1), start()),
    <<B1:3/binary, B2:3/binary, B3/binary>> = B,
    T2 = feed({headers, 1, fin, nofin, undefined, B1}, T1),
    ?assertEqual([], T2#t.acts),
    T3 = feed({continuation, 1, nofin, B2}, T2),
    T4 = feed({continuation, 1, fin, B3}, T3),
    ?assertMatch([{request, 1, #{path := <<"/">>}}, _], others(T4)).

continuation_interrupted_test_() ->
    {B, T1} = block(req_get(1), start()),
    T2 = feed({headers, 1, fin, nofin, undefined, B}, T1),
    [?_assertEqual(protocol_error, goaway_code(feed(F, T2)))
     || F <- [{data, 1, fin, <<>>, 0}, {continuation, 3, fin, <<>>}, {priority, 1, false, 0, 1},
              {unknown, 16#42, 1}, {ping, <<0:64>>}]] ++
    [?_assertEqual(protocol_error,
                   goaway_code(call(fun(M) -> ?M:frame_error({stream_error, 1, protocol_error, x}, M) end,
                                    T2)))].

continuation_flood_test() ->
    {B, T1} = block(req_get(1), start(#{max_continuations => 5})),
    T2 = feed({headers, 1, fin, nofin, undefined, <<>>}, T1),
    Four = lists:foldl(fun(_, T) -> feed({continuation, 1, nofin, <<>>}, T) end, T2,
                       lists:seq(1, 4)),
    ?assertEqual([], Four#t.acts),
    Five = feed({continuation, 1, nofin, <<>>}, Four),
    ?assertEqual(enhance_your_calm, goaway_code(feed({continuation, 1, nofin, <<>>}, Five))),
    ?assertEqual(enhance_your_calm, goaway_code(feed({continuation, 1, fin, B}, Five))),
    T6 = feed({continuation, 1, fin, B}, Four),
    ?assertMatch([{request, 1, #{}}], [R || R = {request, _, _} <- others(T6)]).

field_block_too_large_test() ->
    T1 = start(#{max_header_block => 100}),
    ?assertEqual(enhance_your_calm,
                 goaway_code(feed({headers, 1, fin, nofin, undefined, binary:copy(<<0>>, 101)}, T1))),
    T2 = feed({headers, 1, fin, nofin, undefined, binary:copy(<<0>>, 60)}, T1),
    ?assertEqual(enhance_your_calm,
                 goaway_code(feed({continuation, 1, nofin, binary:copy(<<0>>, 41)}, T2))).

%% HPACK bomb: one small dynamic entry referenced many times decodes to a
%% large list; it is refused (431) once over max_header_list_size.
hpack_bomb_test() ->
    T0 = start(#{max_header_list_size => 8000}),
    Big = binary:copy(<<"a">>, 3000),
    {B0, T2} = block(req_get(1) ++ [{<<"x-big">>, Big}], T0),
    %% the first reference inserts the entry; the others are one byte each
    {ok, [_, _, _, _, {<<"x-big">>, _}], _} = falco_hpack:decode(B0, falco_hpack:new()),
    Refs = binary:copy(<<16#be>>, 10),
    T3 = feed({headers, 1, fin, fin, undefined, <<B0/binary, Refs/binary>>}, T2),
    ?assertMatch([{request, 1, {error, {header_too_large, block}, undefined}}],
                 [R || R = {request, _, _} <- others(T3)]),
    %% the HPACK context is still in step: the next request decodes
    T4 = headers(3, req_get(3), fin, T3),
    ?assertMatch([{request, 3, #{}}], [R || R = {request, _, _} <- others(T4)]),
    %% as trailers it is a stream error
    T5 = headers(5, post(0), nofin, T4),
    T6 = feed({headers, 5, fin, fin, undefined, <<B0/binary, Refs/binary>>}, T5),
    ?assertEqual([{5, protocol_error}], rst(T6)).

%% -- flow control (§6.9) ----------------------------------------------------------------

recv_window_test() ->
    T1 = headers(1, post(100000), nofin, start(#{initial_window_size => 65535})),
    T2 = feed({data, 1, nofin, binary:copy(<<"a">>, 16384), 16384}, T1),
    ?assertEqual([], frames(T2)),
    %% the first read, however small, lets the client send ahead of the
    %% reader (falco_http2_recv's READ_AHEAD): here the rest of the
    %% declared length, at once
    T3 = read(1, 16384, T2),
    ?assertEqual([{window_update, 1, 100000 - 65535}], frames(T3)),
    %% what is handed over afterwards is not given back: the window covers
    %% the rest of the body
    T4 = read(1, 16384, feed({data, 1, nofin, binary:copy(<<"a">>, 16384), 16384}, T3)),
    ?assertEqual([], frames(T4)),
    %% a stream that is gone gets the end of its body
    ?assertEqual([{data, 99, <<>>, fin}], others(read(99, 10, T4))).

%% However the client cuts the body into frames, the stream's process gets
%% one piece per read, at most what it asked for, as one binary.
body_coalesced_test() ->
    T1 = headers(1, post(1000), nofin, start()),
    T2 = lists:foldl(fun(_, T) -> feed({data, 1, nofin, <<"a">>, 1}, T) end, T1,
                     lists:seq(1, 300)),
    ?assertEqual([], others(T2)),
    T3 = read(1, 200, T2),
    ?assertEqual([{data, 1, binary:copy(<<"a">>, 200), nofin}], others(T3)),
    T4 = read(1, 1000, T3),
    ?assertEqual([{data, 1, binary:copy(<<"a">>, 100), nofin}], others(T4)),
    %% nothing buffered: the read waits for the next DATA
    T5 = read(1, 1000, T4),
    ?assertEqual([], others(T5)),
    %% ...and the answer goes once the frames of the socket read are all in
    T6 = feed({data, 1, nofin, binary:copy(<<"b">>, 300), 300}, T5),
    ?assertEqual([], others(T6)),
    T7 = feed({data, 1, fin, binary:copy(<<"b">>, 400), 400}, T6),
    ?assertEqual([], others(T7)),
    T8 = call(fun ?M:deliver_ready/1, T7),
    ?assertEqual([{data, 1, binary:copy(<<"b">>, 700), fin}], others(T8)),
    ?assertEqual(none, ?M:deliver_ready(T8#t.m)).

%% A read larger than the window grows the stream window (to what is left
%% of a declared length) and the connection window, within
%% max_receive_buffer for all the streams together.
window_grows_with_reads_test() ->
    T0 = start(#{max_receive_buffer => 4000000, connection_window_size => 1048576}),
    T1 = headers(1, post(3000000), nofin, T0),
    T2 = read(1, 10000000, T1),
    ?assertEqual([{window_update, 1, 3000000 - 65535}, {window_update, 0, 3000000 - 1048576}],
                 frames(T2)),
    %% a second stream gets what is left of the buffer (its initial window
    %% included), and the connection window follows
    T3 = headers(3, post(3000000), nofin, T2),
    T4 = read(3, 10000000, T3),
    ?assertEqual([{window_update, 3, 4000000 - 3000000 - 65535}, {window_update, 0, 1000000}],
                 frames(T4)),
    %% a third gets nothing beyond its initial window
    T5 = headers(5, post(3000000), nofin, T4),
    ?assertEqual([], frames(read(5, 10000000, T5))),
    %% a small read grows the stream window to the read-ahead, 1 MB
    %% (falco_http2_recv's READ_AHEAD), not to what it asked
    T6 = headers(7, post(3000000), nofin, start()),
    ?assertEqual([{window_update, 7, 1048576 - 65535}], frames(read(7, 1000, T6))),
    %% and no further while the reader is that far behind
    T7 = read(7, 1000, feed({data, 7, nofin, binary:copy(<<"r">>, 16384), 16384},
                            read(7, 1000, T6))),
    ?assertEqual([], [U || U = {window_update, 7, _} <- frames(T7)]).

%% The read-ahead is granted within max_receive_buffer like any window
%% beyond the initial ones: streams whose handlers each read a little
%% cannot make the connection hold more than the buffer.
read_ahead_within_buffer_test() ->
    T0 = start(#{max_receive_buffer => 1500000}),
    Read = fun(Id, T) ->
                   T1 = read(Id, 1000, headers(Id, post(10000000), nofin, T)),
                   {[I || {window_update, S, I} <- frames(T1), S =:= Id], T1}
           end,
    {G1, T1} = Read(1, T0),
    ?assertEqual([1048576 - 65535], G1),
    %% the second: what is left of the buffer (its own initial window
    %% included): the two windows are the whole buffer
    {G3, T3} = Read(3, T1),
    ?assertEqual([1500000 - 1048576 - 65535], G3),
    %% the third: its initial window only
    {G5, _} = Read(5, T3),
    ?assertEqual([], G5).

%% An upload read whole costs one stream WINDOW_UPDATE, whatever came
%% before the read: the window grows at once to the rest of the declared
%% length, and what is handed over afterwards is not given back, since
%% the window already covers it (it took four updates, 2026-11-28).
upload_one_stream_update_test() ->
    Len = 1048576,
    T1 = headers(1, post(Len), nofin, start()),
    Frame = binary:copy(<<"u">>, 16384),
    T2 = lists:foldl(fun(_, T) -> feed({data, 1, nofin, Frame, 16384}, T) end, T1,
                     lists:seq(1, 3)),
    T3 = feed({data, 1, nofin, binary:part(Frame, 0, 16383), 16383}, T2),
    T4 = read(1, 100000000, T3),
    ?assertEqual([{window_update, 1, Len - 65535}], frames(T4)),
    ?assertEqual([{data, 1, 65535}], [{data, Id, iolist_size(D)} || {data, Id, D, _} <- others(T4)]),
    %% the rest, read as it comes: no more updates for the stream
    {T5, Updates} = lists:foldl(
                      fun(_, {T, Acc}) ->
                              Tf = feed({data, 1, nofin, Frame, 16384}, T),
                              Tr = read(1, 100000000, Tf),
                              {Tr, Acc ++ frames(Tf) ++ frames(Tr)}
                      end, {T4, []}, lists:seq(1, (Len - 65535) div 16384)),
    ?assertEqual([], [U || U = {window_update, 1, _} <- Updates]),
    ?assertMatch([_ | _], [U || U = {window_update, 0, _} <- Updates]),
    T6 = read(1, 100000000, feed({data, 1, fin, <<"u">>, 1}, T5)),
    ?assertEqual([{data, 1, 1, fin}], [{data, Id, iolist_size(D), F} || {data, Id, D, F} <- others(T6)]),
    ?assertEqual([], [U || U = {window_update, 1, _} <- frames(T6)]).

%% A body the client sent whole (END_STREAM) is taken out of the machine
%% for the stream's process to start with; a read afterwards gets the end,
%% and no window update goes out for it.
prefetch_whole_body_test() ->
    T1 = feed({data, 1, fin, <<"hello">>, 5}, headers(1, post(5), nofin, start())),
    {Body, M} = ?M:prefetch(1, 1000, T1#t.m),
    ?assertEqual(<<"hello">>, Body),
    T2 = read(1, 100, T1#t{m = M}),
    ?assertEqual([{data, 1, <<>>, fin}], others(T2)),
    ?assertEqual([], frames(T2)).

%% Nothing is taken while more may come (no END_STREAM, or trailers), when
%% it is over the limit, or when there is no body.
prefetch_none_test_() ->
    Open = feed({data, 1, nofin, <<"hel">>, 3}, headers(1, post(5), nofin, start())),
    Whole = feed({data, 1, fin, <<"hello">>, 5}, headers(1, post(5), nofin, start())),
    Trailed = headers(1, [{<<"x-t">>, <<"1">>}], fin,
                      feed({data, 1, nofin, <<"hello">>, 5}, headers(1, post(5), nofin, start()))),
    NoBody = headers(1, req_get(1), fin, start()),
    [?_assertMatch({none, _}, ?M:prefetch(1, 1000, Open#t.m)),
     ?_assertMatch({none, _}, ?M:prefetch(1, 4, Whole#t.m)),
     ?_assertMatch({<<"hello">>, _}, ?M:prefetch(1, 5, Whole#t.m)),
     ?_assertMatch({none, _}, ?M:prefetch(1, 1000, Trailed#t.m)),
     ?_assertMatch({none, _}, ?M:prefetch(1, 1000, NoBody#t.m))].

%% A stream reset before its process starts is gone: none is started.
prefetch_reset_stream_gone_test() ->
    T1 = feed({rst_stream, 1, cancel}, headers(1, req_get(1), fin, start())),
    ?assertEqual(gone, ?M:prefetch(1, 1000, T1#t.m)).

%% Padding eats into a window that covered the rest of a declared length:
%% the client is never left without window while body remains (it gets
%% the padding back), so a padded upload read whole still completes.
padded_upload_never_stalls_test() ->
    Len = 100000,
    T1 = read(1, 100000000, headers(1, post(Len), nofin, start())),
    W0 = 65535 + lists:sum([I || {window_update, 1, I} <- frames(T1)]),
    ?assert(padded_send(T1, W0, Len, 200)).

%% Sends up to 1000 bytes of body per frame, padded to 16 KB where the
%% window allows, reading after each frame; false if the client's window
%% runs out with body left, or it takes more than Rounds frames.
padded_send(_, _, 0, _) ->
    true;
padded_send(_, _, _, 0) ->
    false;
padded_send(_, Window, _, _) when Window =< 0 ->
    false;
padded_send(T0, Window, Left, Rounds) ->
    D = lists:min([1000, Left, Window]),
    Flow = min(16384, Window),
    Fin = case D =:= Left of
              true -> fin;
              false -> nofin
          end,
    Tf = feed({data, 1, Fin, binary:copy(<<"p">>, D), Flow}, T0),
    Tr = read(1, 100000000, Tf),
    ?assertEqual([], rst(Tf)),
    Inc = lists:sum([I || {window_update, 1, I} <- frames(Tf) ++ frames(Tr)]),
    padded_send(Tr, Window - Flow + Inc, Left - D, Rounds - 1).

%% Without a declared length the bytes handed over are still given back.
upload_unknown_length_gives_back_test() ->
    Fields = lists:keydelete(<<"content-length">>, 1, post(0)),
    T1 = headers(1, Fields, nofin, start(#{max_receive_buffer => 200000})),
    Frame = binary:copy(<<"u">>, 16384),
    T2 = read(1, 100000000, T1),
    ?assertMatch([{window_update, 1, _} | _], frames(T2)),
    {_, Updates} = lists:foldl(
                     fun(_, {T, Acc}) ->
                             Tf = feed({data, 1, nofin, Frame, 16384}, T),
                             Tr = read(1, 100000000, Tf),
                             {Tr, Acc ++ frames(Tf) ++ frames(Tr)}
                     end, {T2, []}, lists:seq(1, 40)),
    ?assertMatch([_ | _], [U || U = {window_update, 1, _} <- Updates]).

%% What a stream holds is bounded by its window when nobody reads; a
%% stream whose process ended drops its body.
unread_body_dropped_test() ->
    T1 = headers(1, post(100000), nofin, start()),
    T2 = call(fun(M) -> ?M:send_headers(1, 200, [], fin, M) end,
              feed({data, 1, nofin, binary:copy(<<"a">>, 1000), 1000}, T1)),
    T3 = call(fun(M) -> ?M:stream_exited(1, M) end, T2),
    T4 = feed({data, 1, nofin, binary:copy(<<"a">>, 1000), 1000}, T3),
    %% nothing is held for it: a read (were one to come) finds no body
    ?assertEqual([], others(read(1, 10, T4))).

stream_window_exceeded_test() ->
    T0 = start(#{initial_window_size => 65535}),
    T1 = headers(1, post(100000), nofin, T0),
    F = fun(T) -> feed({data, 1, nofin, binary:copy(<<"a">>, 16384), 16384}, T) end,
    T2 = F(F(F(T1))),
    T3 = feed({data, 1, nofin, binary:copy(<<"a">>, 16383), 16383}, T2),
    ?assertEqual([], rst(T3)),
    ?assertEqual([{1, flow_control_error}], rst(feed({data, 1, nofin, <<"a">>, 1}, T3))).

connection_window_test() ->
    T0 = start(#{connection_window_size => 65535, initial_window_size => 65535}),
    T1 = headers(1, post(200000), nofin, T0),
    T2 = feed({data, 1, nofin, binary:copy(<<"a">>, 16384), 16384}, T1),
    ?assertEqual([], frames(T2)),
    T3 = feed({data, 1, nofin, binary:copy(<<"a">>, 16385), 16385}, T2),
    ?assertEqual([{window_update, 0, 32769}], frames(T3)).

connection_window_exceeded_test() ->
    {M0, _} = ?M:new(#{connection_window_size => 65535}),
    {M1, _} = ?M:frame({settings, #{}}, M0),
    {B, _} = falco_hpack:encode(post(100000), falco_hpack:new()),
    {M2, _} = ?M:frame({headers, 1, nofin, fin, undefined, iolist_to_binary(B)}, M1),
    {_, A} = ?M:frame({data, 1, nofin, <<>>, 70000}, M2),
    ?assertMatch([{goaway, 1, flow_control_error, _}], frames_of(A)).

padding_given_back_test() ->
    T1 = headers(1, post(100000), nofin, start(#{initial_window_size => 100})),
    T2 = feed({data, 1, nofin, <<"ab">>, 60}, T1),
    %% 58 bytes of padding are returned at once (over half of 100)
    ?assertEqual([{window_update, 1, 58}], frames(T2)).

local_window_applies_after_ack_test() ->
    {M0, _} = ?M:new(#{initial_window_size => 100}),
    {M1, _} = ?M:frame({settings, #{}}, M0),
    {B, _} = falco_hpack:encode(post(100000), falco_hpack:new()),
    {M2, _} = ?M:frame({headers, 1, nofin, fin, undefined, iolist_to_binary(B)}, M1),
    %% before our SETTINGS are acknowledged the default window holds
    {M3, A3} = ?M:frame({data, 1, nofin, binary:copy(<<"a">>, 1000), 1000}, M2),
    ?assertEqual([], [F || F = {rst_stream, _, _} <- frames_of(A3)]),
    {M4, _} = ?M:frame(settings_ack, M3),
    %% now the window is 100 - 1000 below zero: more data is too much
    {_, A5} = ?M:frame({data, 1, nofin, <<"a">>, 1}, M4),
    ?assertEqual([{rst_stream, 1, flow_control_error}], frames_of(A5)).

send_window_test() ->
    T0 = start(),
    T1 = feed({settings, #{initial_window_size => 10, max_frame_size => 16384}}, T0),
    T2 = headers(1, req_get(1), fin, T1),
    T3 = call(fun(M) -> ?M:send_headers(1, 200, [], nofin, M) end, T2),
    T4 = call(fun(M) -> ?M:send_data(1, <<"0123456789abcdef">>, fin, tag, M) end, T3),
    ?assertEqual([{data, 1, nofin, <<"0123456789">>, 10}], frames(T4)),
    ?assertEqual([{timer, {stall, 1}, 30000}], others(T4)),
    T5 = feed({window_update, 1, 100}, T4),
    ?assertEqual([{data, 1, fin, <<"abcdef">>, 6}], frames(T5)),
    ?assertMatch([{reply, tag, ok}, {cancel_timer, {stall, 1}} | _], others(T5)).

connection_send_window_test() ->
    T0 = start(),
    T1 = headers(3, req_get(3), fin, headers(1, req_get(1), fin, T0)),
    Big = binary:copy(<<"x">>, 40000),
    T2 = call(fun(M) -> ?M:send_headers(1, 200, [], nofin, M) end, T1),
    T3 = call(fun(M) -> ?M:send_headers(3, 200, [], nofin, M) end, T2),
    T4 = call(fun(M) -> ?M:send_data(1, Big, fin, t1, M) end, T3),
    ?assertEqual([16384, 16384, 7232], [byte_size(D) || {data, 1, _, D, _} <- frames(T4)]),
    T5 = call(fun(M) -> ?M:send_data(3, Big, fin, t3, M) end, T4),
    %% 65535 - 40000 = 25535 left for stream 3: one 16 KB frame, and the
    %% 9151 bytes after it are not cut into a smaller one
    ?assertEqual([16384], [byte_size(D) || {data, 3, _, D, _} <- frames(T5)]),
    T6 = feed({window_update, 0, 100000}, T5),
    ?assertEqual(40000 - 16384, lists:sum([byte_size(D) || {data, 3, _, D, _} <- frames(T6)])),
    ?assertMatch([{reply, t3, ok} | _], others(T6)).

window_overflow_test() ->
    T1 = headers(1, req_get(1), nofin, start()),
    ?assertEqual([{1, flow_control_error}],
                 rst(feed({window_update, 1, 16#7fffffff}, T1))),
    ?assertEqual(flow_control_error, goaway_code(feed({window_update, 0, 16#7fffffff}, T1))),
    T2 = feed({window_update, 1, 16#7fffffff - 65535}, T1),
    ?assertEqual(flow_control_error,
                 goaway_code(feed({settings, #{initial_window_size => 65536}}, T2))).

%% §6.9.2: a new SETTINGS_INITIAL_WINDOW_SIZE moves every stream's window.
initial_window_change_test() ->
    T0 = feed({settings, #{initial_window_size => 0}}, start()),
    T1 = headers(1, req_get(1), fin, T0),
    T2 = call(fun(M) -> ?M:send_headers(1, 200, [], nofin, M) end, T1),
    T3 = call(fun(M) -> ?M:send_data(1, <<"hello">>, fin, tag, M) end, T2),
    ?assertEqual([], frames(T3)),
    T4 = feed({settings, #{initial_window_size => 1}}, T3),
    ?assertEqual([settings_ack, {data, 1, nofin, <<"h">>, 1}], frames(T4)).

max_frame_size_test() ->
    T0 = feed({settings, #{max_frame_size => 20000}}, start()),
    T1 = call(fun(M) -> ?M:send_headers(1, 200, [], nofin, M) end, headers(1, req_get(1), fin, T0)),
    T2 = call(fun(M) -> ?M:send_data(1, binary:copy(<<"x">>, 30000), fin, none, M) end, T1),
    ?assertEqual([20000, 10000], [byte_size(D) || {data, 1, _, D, _} <- frames(T2)]).

header_table_size_test() ->
    T0 = feed({settings, #{header_table_size => 0}}, start()),
    T1 = call(fun(M) -> ?M:send_headers(1, 200, [], fin, M) end, headers(1, req_get(1), fin, T0)),
    [{headers, 1, fin, fin, _, <<2#001:3, 0:5, _/binary>>}] = frames(T1).

zero_window_stall_test() ->
    T0 = feed({settings, #{initial_window_size => 0}}, start(#{send_timeout => 5000})),
    T1 = call(fun(M) -> ?M:send_headers(1, 200, [], nofin, M) end, headers(1, req_get(1), fin, T0)),
    T2 = call(fun(M) -> ?M:send_data(1, <<"stuck">>, nofin, tag, M) end, T1),
    ?assertEqual([{timer, {stall, 1}, 5000}], others(T2)),
    T3 = call(fun(M) -> ?M:timeout({stall, 1}, M) end, T2),
    ?assertEqual([{1, cancel}], rst(T3)),
    Others = others(T3),
    ?assert(lists:member({reset, 1, send_timeout}, Others)),
    %% the handler's send fails with send_timeout
    ?assert(lists:member({reply, tag, {error, send_timeout}}, Others)),
    %% a stale stall timer does nothing
    ?assertEqual([], (call(fun(M) -> ?M:timeout({stall, 1}, M) end, T3))#t.acts).

%% Window dribbling: a piece is not cut into DATA frames under 16 KB
%% because the window is short; the end of a piece goes out once it fits.
min_send_size_test() ->
    T0 = start(),
    T1 = call(fun(M) -> ?M:send_headers(1, 200, [], nofin, M) end, headers(1, req_get(1), fin, T0)),
    T2 = call(fun(M) -> ?M:send_data(1, binary:copy(<<"x">>, 70000), fin, tag, M) end, T1),
    %% 65535 = 3 x 16384 + 16383: the last 16383 bytes of window are not used
    ?assertEqual([16384, 16384, 16384], [byte_size(D) || {data, 1, _, D, _} <- frames(T2)]),
    T3 = feed({window_update, 1, 1}, feed({window_update, 0, 100000}, T2)),
    ?assertEqual([16384], [byte_size(D) || {data, 1, _, D, _} <- frames(T3)]),
    %% 4464 bytes are left: the window of 0 + 1000 does not take them, 5000 does
    T4 = feed({window_update, 1, 1000}, T3),
    ?assertEqual([], frames(T4)),
    T5 = feed({window_update, 1, 4000}, T4),
    ?assertEqual([{data, 1, fin, binary:copy(<<"x">>, 4464), 4464}], frames(T5)),
    ?assert(lists:member({reply, tag, ok}, others(T5))).

%% A small piece (an SSE event) goes out whole as soon as it fits.
small_piece_not_held_test() ->
    T0 = feed({settings, #{initial_window_size => 100000}}, start()),
    T1 = call(fun(M) -> ?M:send_headers(1, 200, [], nofin, M) end, headers(1, req_get(1), fin, T0)),
    T2 = call(fun(M) -> ?M:send_data(1, <<"data: 1\n\n">>, nofin, tag, M) end, T1),
    ?assertEqual([{data, 1, nofin, <<"data: 1\n\n">>, 9}], frames(T2)),
    ?assertEqual([{reply, tag, ok}], others(T2)).

%% The stall timer is not restarted by progress: at each send_timeout the
%% stream must have sent send_min_rate bytes per second since the last.
min_rate_test() ->
    T0 = feed({settings, #{initial_window_size => 0}},
              start(#{send_timeout => 1000, send_min_rate => 100})),
    T1 = call(fun(M) -> ?M:send_headers(1, 200, [], nofin, M) end, headers(1, req_get(1), fin, T0)),
    T2 = call(fun(M) -> ?M:send_data(1, binary:copy(<<"x">>, 1000), nofin, tag, M) end, T1),
    ?assertEqual([{timer, {stall, 1}, 1000}], others(T2)),
    %% 150 bytes in the first second: enough, the timer runs again
    T3 = feed({window_update, 1, 150}, T2),
    ?assertEqual([150], [byte_size(D) || {data, 1, _, D, _} <- frames(T3)]),
    ?assertEqual([], others(T3)),
    T4 = call(fun(M) -> ?M:timeout({stall, 1}, M) end, T3),
    ?assertEqual({[], [{timer, {stall, 1}, 1000}]}, {rst(T4), others(T4)}),
    %% 50 bytes in the next: too slow, reset, the send fails
    T5 = call(fun(M) -> ?M:timeout({stall, 1}, M) end, feed({window_update, 1, 50}, T4)),
    ?assertEqual([{1, cancel}], rst(T5)),
    ?assert(lists:member({reply, tag, {error, send_timeout}}, others(T5))).

%% A client that lets a small piece through now and then, just before the
%% handler queues the next, does not restart the clock: the stall timer
%% runs on while the queue is briefly empty.
min_rate_small_pieces_test() ->
    T0 = feed({settings, #{initial_window_size => 0}},
              start(#{send_timeout => 1000, send_min_rate => 1000})),
    T1 = call(fun(M) -> ?M:send_headers(1, 200, [], nofin, M) end, headers(1, req_get(1), fin, T0)),
    T2 = call(fun(M) -> ?M:send_data(1, <<"row 1\n">>, nofin, t1, M) end, T1),
    ?assertEqual([{timer, {stall, 1}, 1000}], others(T2)),
    T3 = feed({window_update, 1, 6}, T2),
    ?assertEqual([{reply, t1, ok}], others(T3)),
    T4 = call(fun(M) -> ?M:send_data(1, <<"row 2\n">>, nofin, t2, M) end, T3),
    ?assertEqual([], others(T4)),
    T5 = call(fun(M) -> ?M:timeout({stall, 1}, M) end, T4),
    ?assertEqual([{1, cancel}], rst(T5)),
    ?assert(lists:member({reply, t2, {error, send_timeout}}, others(T5))).

%% With nothing queued when the timer fires, the stream waits for its
%% handler (an SSE stream between events): the timer stops, nothing is
%% reset, and the next block starts a new one.
stall_timer_stops_when_drained_test() ->
    T0 = feed({settings, #{initial_window_size => 0}},
              start(#{send_timeout => 1000, send_min_rate => 1000})),
    T1 = call(fun(M) -> ?M:send_headers(1, 200, [], nofin, M) end, headers(1, req_get(1), fin, T0)),
    T2 = call(fun(M) -> ?M:send_data(1, <<"event\n">>, nofin, t1, M) end, T1),
    T3 = call(fun(M) -> ?M:timeout({stall, 1}, M) end, feed({window_update, 1, 100}, T2)),
    ?assertEqual({[], []}, {rst(T3), others(T3)}),
    T4 = call(fun(M) -> ?M:send_data(1, binary:copy(<<"x">>, 200), nofin, t2, M) end, T3),
    ?assertEqual([{timer, {stall, 1}, 1000}], others(T4)).

trailers_after_queued_data_test() ->
    T0 = feed({settings, #{initial_window_size => 2}}, start()),
    T1 = call(fun(M) -> ?M:send_headers(1, 200, [], nofin, M) end, headers(1, req_get(1), fin, T0)),
    T2 = call(fun(M) -> ?M:send_data(1, <<"abcd">>, nofin, none, M) end, T1),
    T3 = call(fun(M) -> ?M:send_trailers(1, [{<<"x-t">>, <<"1">>}], tr, M) end, T2),
    ?assertEqual([], frames(T3)),
    T4 = feed({window_update, 1, 10}, T3),
    ?assertMatch([{data, 1, nofin, <<"cd">>, 2}, {headers, 1, fin, fin, _, _}], frames(T4)),
    ?assertEqual(0, ?M:active_streams(T4#t.m)).

empty_data_fin_test() ->
    T1 = call(fun(M) -> ?M:send_headers(1, 200, [], nofin, M) end, headers(1, req_get(1), fin, start())),
    T2 = call(fun(M) -> ?M:send_data(1, [], fin, none, M) end, T1),
    ?assertEqual([{data, 1, fin, <<>>, 0}], frames(T2)),
    T3 = call(fun(M) -> ?M:send_data(1, <<>>, nofin, t, M) end, T1),
    ?assertEqual([], frames(T3)),
    ?assertEqual([{reply, t, ok}], others(T3)).

%% -- stream lifecycle ---------------------------------------------------------------------

%% §8.1: a complete response while the client still sends: the stream
%% lingers, then is reset with NO_ERROR.
linger_test() ->
    T1 = headers(1, post(10), nofin, start()),
    T2 = call(fun(M) -> ?M:send_headers(1, 200, [], fin, M) end, T1),
    ?assertEqual([{timer, {linger, 1}, 1000}], others(T2)),
    %% its frames are still checked meanwhile
    ?assertEqual([{1, protocol_error}], rst(headers(1, [{<<"x">>, <<"1">>}], nofin, T2))),
    T3 = call(fun(M) -> ?M:timeout({linger, 1}, M) end, T2),
    ?assertEqual([{1, no_error}], rst(T3)),
    ?assertEqual(0, ?M:active_streams(T3#t.m)),
    %% the client ending the stream in time closes it normally
    T4 = feed({data, 1, fin, <<"0123456789">>, 10}, T2),
    ?assertEqual([], rst(T4)),
    ?assert(lists:member({cancel_timer, {linger, 1}}, others(T4))),
    ?assertEqual([], (call(fun(M) -> ?M:timeout({linger, 1}, M) end, T4))#t.acts).

stream_exited_test() ->
    T1 = headers(1, req_get(1), fin, start()),
    T2 = call(fun(M) -> ?M:stream_exited(1, M) end, T1),
    ?assertEqual([{1, internal_error}], rst(T2)),
    ?assertEqual([], (call(fun(M) -> ?M:stream_exited(1, M) end, T2))#t.acts),
    T3 = call(fun(M) -> ?M:send_headers(1, 200, [], nofin, M) end, T1),
    T4 = call(fun(M) -> ?M:send_data(1, <<"x">>, fin, none, M) end, T3),
    ?assertEqual([], (call(fun(M) -> ?M:stream_exited(1, M) end, T4))#t.acts),
    %% finished but queued: nothing to do either
    T5 = feed({settings, #{initial_window_size => 0}}, T3),
    T6 = call(fun(M) -> ?M:send_data(1, <<"x">>, fin, none, M) end, T5),
    ?assertEqual([], (call(fun(M) -> ?M:stream_exited(1, M) end, T6))#t.acts).

%% §5.1.2: over our limit, REFUSED_STREAM.
max_concurrent_streams_test() ->
    T1 = headers(1, req_get(1), fin, start(#{max_concurrent_streams => 2})),
    T2 = headers(3, req_get(3), fin, T1),
    ?assertEqual([], rst(T2)),
    T3 = headers(5, req_get(5), fin, T2),
    ?assertEqual([{5, refused_stream}], rst(T3)),
    ?assertEqual(2, ?M:active_streams(T3#t.m)),
    %% the refused stream counts as used: a lower number is an error
    ?assertEqual([{7, refused_stream}], rst(headers(7, req_get(7), fin, T3))).

upgrade_test() ->
    {M0, _} = ?M:new(#{}),
    {M1, A1} = ?M:upgrade(#{max_frame_size => 20000, initial_window_size => 100}, M0),
    ?assertEqual([{cancel_timer, idle}], A1),
    ?assertEqual(1, ?M:active_streams(M1)),
    {M2, _} = ?M:frame({settings, #{}}, M1),
    {M3, _} = ?M:send_headers(1, 200, [], nofin, M2),
    {_, A4} = ?M:send_data(1, binary:copy(<<"x">>, 300), fin, none, M3),
    ?assertEqual([100], [byte_size(D) || {data, 1, _, D, _} <- frames_of(A4)]).

%% -- GOAWAY, idle ---------------------------------------------------------------------------

peer_goaway_test() ->
    T1 = headers(1, req_get(1), fin, start()),
    T2 = feed({goaway, 1, no_error, <<>>}, T1),
    ?assertEqual([], closed(T2)),
    T3 = call(fun(M) -> ?M:send_headers(1, 200, [], fin, M) end, T2),
    ?assertEqual([peer_goaway], closed(T3)),
    ?assertEqual([peer_goaway], closed(feed({goaway, 0, no_error, <<>>}, start()))).

idle_timeout_test() ->
    T1 = call(fun(M) -> ?M:timeout(idle, M) end, start(#{idle_timeout => 5})),
    ?assertEqual(no_error, goaway_code(T1)),
    ?assertEqual([idle_timeout], closed(T1)),
    %% timers after closing do nothing
    ?assertEqual([], (call(fun(M) -> ?M:timeout(flood, M) end, T1))#t.acts),
    ?assertEqual([], (call(fun(M) -> ?M:goaway(M) end, T1))#t.acts),
    %% an idle timer racing with a new stream does nothing
    T2 = headers(1, req_get(1), fin, start()),
    ?assertEqual([], (call(fun(M) -> ?M:timeout(idle, M) end, T2))#t.acts),
    ?assertEqual([], (call(fun(M) -> ?M:timeout(other, M) end, T2))#t.acts).

goaway_test() ->
    T1 = call(fun(M) -> ?M:goaway(M) end, headers(1, req_get(1), fin, start())),
    ?assertMatch([{goaway, 1, no_error, <<>>}], frames(T1)),
    %% new streams after our GOAWAY are ignored; sends are refused
    {M, A} = ?M:frame({ping, <<0:64>>}, T1#t.m),
    ?assertEqual([], A),
    ?assertEqual({M, []}, ?M:frame_error({connection_error, protocol_error, x}, M)),
    ?assertMatch({_, [{reply, t, {error, closed}}]}, ?M:send_data(1, <<"x">>, fin, t, M)),
    ?assertMatch({_, [{reply, t, {error, closed}}]}, ?M:send_trailers(1, [], t, M)),
    ?assertEqual({M, []}, ?M:send_headers(1, 200, [], fin, M)),
    ?assertEqual({M, []}, ?M:send_inform(1, 100, M)),
    ?assertEqual({M, []}, ?M:read(1, 10, M)),
    ?assertEqual({M, []}, ?M:reset_stream(1, cancel, M)),
    ?assertEqual({M, []}, ?M:stream_exited(1, M)).

%% -- floods ----------------------------------------------------------------------------------

flood(Opts, Make, N) ->
    T0 = start(Opts),
    lists:foldl(fun(I, T) -> feed(Make(I), T) end, T0, lists:seq(1, N)).

ping_flood_test() ->
    Opts = #{flood_limits => #{ping => 10}},
    Ping = fun(_) -> {ping, <<0:64>>} end,
    ?assertEqual([], closed(flood(Opts, Ping, 10))),
    T = flood(Opts, Ping, 11),
    ?assertEqual(enhance_your_calm, goaway_code(T)),
    ?assertEqual([{enhance_your_calm, {flood, ping}}], closed(T)),
    %% the GOAWAY's debug data names the budget
    ?assertEqual([<<"flood: ping">>], [D || {goaway, _, _, D} <- frames(T)]),
    %% the window resets the count
    T2 = call(fun(M) -> ?M:timeout(flood, M) end, flood(Opts, Ping, 10)),
    ?assertEqual([{timer, flood, 10000}], T2#t.acts),
    ?assertEqual([], closed(feed({ping, <<0:64>>}, T2))).

settings_flood_test() ->
    %% start/1 already sent one SETTINGS
    Opts = #{flood_limits => #{settings => 5}},
    S = fun(_) -> {settings, #{}} end,
    ?assertEqual([], closed(flood(Opts, S, 4))),
    ?assertEqual(enhance_your_calm, goaway_code(flood(Opts, S, 5))).

window_update_flood_test() ->
    Opts = #{flood_limits => #{window_update => 10}},
    W = fun(_) -> {window_update, 0, 1} end,
    ?assertEqual([], closed(flood(Opts, W, 10))),
    ?assertEqual(enhance_your_calm, goaway_code(flood(Opts, W, 11))).

%% A client that gives back the credit of every DATA frame we send, with a
%% WINDOW_UPDATE for the stream and one for the connection (python-h2
%% apps, relays, the RFC 8441 relay of autobahn_SUITE), sends two frames
%% for each of ours: they are counted in no budget, or a download of 700
%% messages of 64 KB in 10 s would end in `flood: frames'.
window_update_credit_test() ->
    Opts = #{flood_limits => #{frames => 10, window_update => 10}},
    T1 = call(fun(M) -> ?M:send_headers(1, 200, [], nofin, M) end,
              headers(1, req_get(1), fin, start(Opts))),
    Round = fun(Size) ->
                    fun(_, T) ->
                            Sent = call(fun(M) -> ?M:send_data(1, binary:copy(<<"x">>, Size),
                                                               nofin, none, M) end, T),
                            [{data, 1, nofin, _, Size}] = frames(Sent),
                            feed({window_update, 1, Size}, feed({window_update, 0, Size}, Sent))
                    end
            end,
    %% 16 KB frames, and 10-byte ones (each update refills all that is owed)
    T2 = lists:foldl(Round(16384), T1, lists:seq(1, 200)),
    T3 = lists:foldl(Round(10), T2, lists:seq(1, 200)),
    ?assertEqual([], closed(T3)),
    %% a full window refilled a byte at a time is counted
    Byte = fun(Id) -> fun(_, T) -> feed({window_update, Id, 1}, T) end end,
    ?assertEqual([{enhance_your_calm, {flood, frames}}],
                 closed(lists:foldl(Byte(0), T3, lists:seq(1, 9)))),
    %% as is less than 1 KB given back while more is owed
    T4 = call(fun(M) -> ?M:send_data(1, binary:copy(<<"x">>, 16384), nofin, none, M) end, T3),
    ?assertEqual([{enhance_your_calm, {flood, frames}}],
                 closed(lists:foldl(Byte(1), T4, lists:seq(1, 9)))),
    %% and an update for a stream that is gone
    T5 = call(fun(M) -> ?M:send_data(1, <<>>, fin, none, M) end, T3),
    ?assertEqual([], closed(T5)),
    T6 = lists:foldl(fun(_, T) -> feed({window_update, 1, 5000}, T) end, T5, lists:seq(1, 8)),
    ?assertEqual([], closed(T6)),
    ?assertEqual([{enhance_your_calm, {flood, frames}}], closed(feed({window_update, 1, 5000}, T6))),
    %% the connection's mark is the largest window it has had
    T7 = feed({window_update, 0, 1000000}, T3),
    T8 = call(fun(M) -> ?M:send_data(1, binary:copy(<<"x">>, 16384), nofin, none, M) end, T7),
    ?assertEqual([], closed(lists:foldl(fun(_, T) -> feed({window_update, 0, 1024}, T) end,
                                        T8, lists:seq(1, 16)))).

%% The boundary: less than all that is owed (and under 1 KB) is counted.
window_update_credit_boundary_test() ->
    T1 = call(fun(M) -> ?M:send_headers(1, 200, [], nofin, M) end,
              headers(1, req_get(1), fin, start(#{flood_limits => #{window_update => 0}}))),
    T2 = call(fun(M) -> ?M:send_data(1, <<"0123456789">>, nofin, none, M) end, T1),
    [?assertEqual([], closed(feed({window_update, Id, 10}, T2))) || Id <- [0, 1]],
    [?assertEqual([{enhance_your_calm, {flood, window_update}}],
                  closed(feed({window_update, Id, 9}, T2))) || Id <- [0, 1]].

priority_flood_test() ->
    Opts = #{flood_limits => #{priority => 10}},
    P = fun(I) -> {priority, 2 * I + 1, false, 0, 16} end,
    %% PRIORITY on idle streams is allowed (it does not open them)
    ?assertEqual([], frames(flood(Opts, P, 10))),
    ?assertEqual(enhance_your_calm, goaway_code(flood(Opts, P, 11))).

empty_data_flood_test() ->
    T0 = headers(1, post(10), nofin, start(#{flood_limits => #{empty_data => 10}})),
    E = fun(T) -> feed({data, 1, nofin, <<>>, 0}, T) end,
    T10 = lists:foldl(fun(_, T) -> E(T) end, T0, lists:seq(1, 10)),
    ?assertEqual([], closed(T10)),
    ?assertEqual(enhance_your_calm, goaway_code(E(T10))).

%% CVE-2023-44487: HEADERS then RST_STREAM, over and over.
rapid_reset_test() ->
    Opts = #{flood_limits => #{rst_stream => 20}},
    Cycle = fun(I, T) ->
                    Id = 2 * I - 1,
                    feed({rst_stream, Id, cancel}, headers(Id, req_get(Id), fin, T))
            end,
    T20 = lists:foldl(Cycle, start(Opts), lists:seq(1, 20)),
    ?assertEqual([], closed(T20)),
    T21 = Cycle(21, T20),
    ?assertEqual(enhance_your_calm, goaway_code(T21)),
    ?assertEqual([{enhance_your_calm, {flood, rst_stream}}], closed(T21)).

%% Client cancels count only for streams still open: resetting streams
%% that are already closed is a cheap frame, counted as one.
rapid_reset_live_only_test() ->
    Opts = #{flood_limits => #{rst_stream => 5, frames => 100}},
    T1 = call(fun(M) -> ?M:send_headers(1, 200, [], fin, M) end,
              headers(1, req_get(1), fin, start(Opts))),
    T50 = lists:foldl(fun(_, T) -> feed({rst_stream, 1, cancel}, T) end, T1, lists:seq(1, 50)),
    ?assertEqual([], closed(T50)),
    %% start/1 fed two frames: 98 RSTs fill the frame budget
    T98 = lists:foldl(fun(_, T) -> feed({rst_stream, 1, cancel}, T) end, T50, lists:seq(1, 48)),
    ?assertEqual([], closed(T98)),
    ?assertEqual([{enhance_your_calm, {flood, frames}}],
                 closed(feed({rst_stream, 1, cancel}, T98))).

%% One budget over every received frame: unknown types, PING ACKs,
%% SETTINGS ACKs included; HEADERS opening streams and DATA carrying a
%% request's body forward are not counted.
frame_flood_test() ->
    %% start/1 feeds two frames (SETTINGS, its ACK)
    Opts = #{flood_limits => #{frames => 12}},
    Kinds = [fun(_) -> {unknown, 16#fa, <<"x">>} end,
             fun(_) -> {ping_ack, <<0:64>>} end,
             fun(_) -> settings_ack end],
    [begin
         ?assertEqual([], closed(flood(Opts, K, 10))),
         T = flood(Opts, K, 11),
         ?assertEqual(enhance_your_calm, goaway_code(T)),
         ?assertEqual([<<"flood: frames">>], [D || {goaway, _, _, D} <- frames(T)])
     end || K <- Kinds],
    Open = fun(I, T) -> Id = 2 * I - 1, headers(Id, post(5000), nofin, T) end,
    T20 = lists:foldl(Open, start(Opts), lists:seq(1, 20)),
    ?assertEqual([], closed(T20)),
    Full = fun(_, T) -> feed({data, 1, nofin, binary:copy(<<"a">>, 1024), 1024}, T) end,
    ?assertEqual([], closed(lists:foldl(Full, T20, lists:seq(1, 4)))),
    Small = fun(_, T) -> feed({data, 1, nofin, <<"a">>, 1}, T) end,
    ?assertEqual([], closed(lists:foldl(Small, T20, lists:seq(1, 10)))),
    ?assertEqual([{enhance_your_calm, {flood, frames}}],
                 closed(lists:foldl(Small, T20, lists:seq(1, 11)))).

%% A WebSocket tunnel's small DATA frames (its messages) are not counted
%% in `frames' (a chat may send many, as it may over HTTP/1.1) but in a
%% budget of their own, `tunnel_data'; the same frames on a request stream
%% count in `frames', and empty DATA on a tunnel still counts in
%% `empty_data'.
tunnel_data_budget_test() ->
    Opts = #{flood_limits => #{frames => 12, empty_data => 5, tunnel_data => 300}},
    Connect = [{<<":method">>, <<"CONNECT">>}, {<<":protocol">>, <<"websocket">>},
               {<<":scheme">>, <<"http">>}, {<<":path">>, <<"/ws">>},
               {<<":authority">>, <<"example.com">>}],
    T1 = call(fun(M) -> ?M:send_headers(1, 200, [], nofin, M) end,
              headers(1, Connect, nofin, start(Opts))),
    %% every close any of the frames caused (once closing, the machine
    %% answers nothing more)
    Closes = fun(Frame, N, T) ->
                     lists:foldl(fun(_, {Acc, Ti}) ->
                                         Tj = feed(Frame, Ti),
                                         {Acc ++ closed(Tj), Tj}
                                 end, {[], T}, lists:seq(1, N))
             end,
    ?assertMatch({[], _}, Closes({data, 1, nofin, <<16#81, 1, "a">>, 3}, 300, T1)),
    ?assertMatch({[{enhance_your_calm, {flood, tunnel_data}}], _},
                 Closes({data, 1, nofin, <<16#81, 1, "a">>, 3}, 301, T1)),
    %% a tunnel's large DATA frames are not counted at all
    T2 = call(fun(M) -> ?M:send_headers(1, 200, [], nofin, M) end,
              headers(1, Connect, nofin, start(#{flood_limits => #{tunnel_data => 5}}))),
    Big = <<16#82, 126, 2000:16, 0:16000>>,
    ?assertMatch({[], _}, Closes({data, 1, nofin, Big, byte_size(Big)}, 20, T2)),
    ?assertMatch({[{enhance_your_calm, {flood, tunnel_data}}], _},
                 Closes({data, 1, nofin, <<16#81, 1, "a">>, 3}, 6, T2)),
    ?assertMatch({[{enhance_your_calm, {flood, empty_data}}], _},
                 Closes({data, 1, nofin, <<>>, 0}, 6, T1)),
    T3 = headers(3, post(5000), nofin, T1),
    ?assertMatch({[{enhance_your_calm, {flood, frames}}], _},
                 Closes({data, 3, nofin, <<"a">>, 1}, 11, T3)).

%% Streams we are made to reset (malformed requests, refused streams...).
stream_error_flood_test() ->
    Opts = #{flood_limits => #{stream_errors => 5}},
    Bad = fun(I, T) -> Id = 2 * I - 1, headers(Id, [{<<":method">>, <<"GET">>}], fin, T) end,
    T5 = lists:foldl(Bad, start(Opts), lists:seq(1, 5)),
    ?assertEqual([], closed(T5)),
    ?assertEqual(enhance_your_calm, goaway_code(Bad(6, T5))).

%% -- drain (§6.8) -------------------------------------------------------------------

%% GOAWAY 2^31-1 and a PING; a stream opened before the PING's answer is
%% still taken; the answer brings the GOAWAY with the last stream; streams
%% after it are ignored; the connection closes when the last one ends.
drain_two_step_test() ->
    T1 = headers(1, req_get(1), fin, start()),
    T2 = call(fun ?M:drain/1, T1),
    [{goaway, 16#7fffffff, no_error, <<>>}, {ping, Opaque}] = frames(T2),
    ?assertEqual([{timer, drain, 1000}], others(T2)),
    T3 = headers(3, req_get(3), fin, T2),
    ?assertMatch([{request, 3, _}], others(T3)),
    T4 = feed({ping_ack, Opaque}, T3),
    ?assertEqual([{goaway, 3, no_error, <<>>}], frames(T4)),
    ?assertEqual([{cancel_timer, drain}], others(T4)),
    %% §6.8: after the final GOAWAY new streams are ignored
    T5 = headers(5, req_get(5), fin, T4),
    ?assertEqual([], T5#t.acts),
    T6 = call(fun(M) -> ?M:send_headers(1, 200, [], fin, M) end, T5),
    ?assertEqual([], closed(T6)),
    T7 = call(fun(M) -> ?M:send_headers(3, 200, [], fin, M) end, T6),
    ?assertEqual([drained], closed(T7)),
    %% a second drain does nothing
    ?assertEqual([], (call(fun ?M:drain/1, T4))#t.acts).

%% A client that never answers the PING gets the final GOAWAY at the timer;
%% with no stream open the connection closes at once.
drain_timer_test() ->
    T1 = call(fun ?M:drain/1, start()),
    T2 = call(fun(M) -> ?M:timeout(drain, M) end, T1),
    ?assertEqual([{goaway, 0, no_error, <<>>}], frames(T2)),
    ?assertEqual([drained], closed(T2)).
