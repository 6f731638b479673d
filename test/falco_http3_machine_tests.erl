%% EUnit tests for falco_http3_machine: QUIC stream events and the
%% application's sends in, actions out, no sockets. What the machine
%% writes is read back with falco_http3_frame and falco_qpack, so each test
%% asserts on what a client would see. Each rule of the machine's header
%% has a test citing its section; h3spec's HTTP/3 and QPACK checks (the
%% study's §7) assert their exact codes.
-module(falco_http3_machine_tests).
-include_lib("eunit/include/eunit.hrl").

-define(M, falco_http3_machine).
-define(F, falco_http3_frame).

%% -- harness --------------------------------------------------------------------

bin(IoData) -> iolist_to_binary(IoData).

%% A machine whose client has opened its control stream (2) with SETTINGS.
ready() -> ready(#{}).

ready(Opts) ->
    {M0, _} = ?M:new(Opts),
    {M, []} = ev({stream_data, 2, control(), nofin}, M0),
    M.

control() -> bin([?F:stream_header(control), ?F:settings(#{})]).

ev(Event, M) -> ?M:event(Event, M).

%% Events in order; the state after and every action.
evs(Events, M0) ->
    lists:foldl(fun(E, {M, Acc}) -> {M1, A} = ev(E, M), {M1, Acc ++ A} end, {M0, []}, Events).

section(Fields) -> bin(?F:headers(falco_qpack:encode(Fields))).

req_get(Path) ->
    [{<<":method">>, <<"GET">>}, {<<":scheme">>, <<"https">>},
     {<<":authority">>, <<"example.com">>}, {<<":path">>, Path}].

post(Len) ->
    [{<<":method">>, <<"POST">>}, {<<":scheme">>, <<"https">>},
     {<<":authority">>, <<"example.com">>}, {<<":path">>, <<"/up">>},
     {<<"content-length">>, integer_to_binary(Len)}].

%% The connection error of Actions, if any.
close(Acts) ->
    case [C || {close, {C, _}} <- Acts] of
        [Code] -> Code;
        [] -> none
    end.

%% Feeds Bytes on the client's control stream after its SETTINGS.
on_control(Bytes) ->
    {_, Acts} = ev({stream_data, 2, Bytes, nofin}, ready()),
    Acts.

%% Feeds a request stream's bytes (stream 0) at once.
on_request(Bytes, Fin) ->
    {_, Acts} = ev({stream_data, 0, Bytes, Fin}, ready()),
    Acts.

stream_error(Id, Code, Acts) ->
    lists:member({reset_stream, Id, Code}, Acts) andalso lists:member({stop_sending, Id, Code}, Acts)
        andalso close(Acts) =:= none.

%% -- our control stream (§6.2.1, §7.2.4) ---------------------------------------------

our_settings_test() ->
    {_, [{send, 3, Bytes, nofin}]} = ?M:new(#{max_field_section_size => 8000, grease => 1}),
    {control, Rest} = ?F:stream_type(bin(Bytes)),
    ?assertEqual({ok, {settings, #{qpack_max_table_capacity => 0, qpack_blocked_streams => 0,
                                   max_field_section_size => 8000,
                                   enable_connect_protocol => true}}, <<>>},
                 ?F:parse(Rest, 1000)),
    %% RFC 9220 §3: without it, no SETTINGS_ENABLE_CONNECT_PROTOCOL at all
    {_, [{send, 3, Off, nofin}]} = ?M:new(#{enable_connect_protocol => false}),
    {control, Rest1} = ?F:stream_type(bin(Off)),
    {ok, {settings, S1}, _} = ?F:parse(Rest1, 1000),
    ?assertNot(is_map_key(enable_connect_protocol, S1)),
    %% §7.2.4.1: one reserved setting (0x1f * 1 + 0x21 = 0x40, two bytes)
    ?assertNotEqual(nomatch, binary:match(Rest, <<16#40, 16#40, 0>>)).

control_stream_option_test() ->
    ?assertMatch({_, [{send, 7, _, nofin}]}, ?M:new(#{control_stream => 7})).

%% -- the client's control stream -------------------------------------------------------

%% h3spec: H3_MISSING_SETTINGS (§6.2.1), whatever the first frame is.
missing_settings_test_() ->
    [?_assertEqual(h3_missing_settings,
                   close(element(2, ev({stream_data, 2, bin([<<0>>, F]), nofin},
                                       element(1, ?M:new(#{}))))))
     || F <- [?F:goaway(0), ?F:frame(16#21, <<>>), ?F:data(<<"x">>), ?F:max_push_id(1)]].

%% the type byte and SETTINGS in pieces
control_in_pieces_test() ->
    {M0, _} = ?M:new(#{}),
    {M, Acts} = evs([{stream_open, 2, uni}] ++
                        [{stream_data, 2, <<B>>, nofin} || <<B>> <= control()], M0),
    ?assertEqual([], Acts),
    ?assertEqual(#{}, ?M:peer_settings(M)).

peer_settings_test() ->
    {M0, _} = ?M:new(#{}),
    Bytes = bin([?F:stream_header(control),
                 ?F:settings(#{max_field_section_size => 1000, h3_datagram => true},
                             [{16#21, 7}])]),
    {M, []} = ev({stream_data, 6, Bytes, nofin}, M0),
    ?assertEqual(#{max_field_section_size => 1000, h3_datagram => true}, ?M:peer_settings(M)).

%% h3spec: H3_FRAME_UNEXPECTED for a second SETTINGS, DATA or HEADERS on
%% the control stream (§7.2.4, §7.2.1, §7.2.2); PUSH_PROMISE from a client
%% (§7.2.5).
control_frame_unexpected_test_() ->
    [?_assertEqual(h3_frame_unexpected, close(on_control(bin(F))))
     || F <- [?F:settings(#{}), ?F:data(<<"x">>), ?F:headers(<<0, 0>>),
              ?F:push_promise(0, <<0, 0>>)]].

%% §7.2.3: CANCEL_PUSH for a push never promised; §5.2 and §7.2.7: ids going
%% backwards.
control_id_error_test_() ->
    [?_assertEqual(h3_id_error, close(on_control(bin(?F:cancel_push(0))))),
     ?_assertEqual(h3_id_error, close(on_control(bin([?F:goaway(4), ?F:goaway(8)])))),
     ?_assertEqual(none, close(on_control(bin([?F:goaway(8), ?F:goaway(4)])))),
     ?_assertEqual(h3_id_error, close(on_control(bin([?F:max_push_id(8), ?F:max_push_id(4)])))),
     ?_assertEqual(none, close(on_control(bin([?F:max_push_id(4), ?F:max_push_id(8)]))))].

%% h3spec: H3_SETTINGS_ERROR for duplicate or HTTP/2 settings (§7.2.4,
%% §7.2.4.1).
settings_error_test_() ->
    {M0, _} = ?M:new(#{}),
    [?_assertEqual(h3_settings_error,
                   close(element(2, ev({stream_data, 2, <<0, 4, 4, 6, 1, 6, 1>>, nofin}, M0)))),
     ?_assertEqual(h3_settings_error,
                   close(element(2, ev({stream_data, 2, <<0, 4, 2, 4, 10>>, nofin}, M0))))].

%% §7.1: a payload longer than its fields
control_frame_error_test() ->
    ?assertEqual(h3_frame_error, close(on_control(<<7, 2, 0, 0>>))).

%% §7.2.8: HTTP/2's frame types
http2_frame_test() ->
    ?assertEqual(h3_frame_unexpected, close(on_control(<<6, 0>>))).

%% PRIORITY_UPDATE (RFC 9218) and reserved frames are skipped, up to the
%% bound; past it, H3_EXCESSIVE_LOAD.
ignored_frames_test() ->
    Prio = bin(?F:frame(16#f0700, <<0, "u=0, i">>)),
    Grease = bin(?F:frame(?F:reserved(3), binary:copy(<<7>>, 3000))),
    M = ready(#{max_ignored_frames => 3}),
    {M1, Acts} = ev({stream_data, 2, <<Prio/binary, Grease/binary, Prio/binary>>, nofin}, M),
    ?assertEqual([], Acts),
    {_, Acts2} = ev({stream_data, 2, Prio, nofin}, M1),
    ?assertEqual(h3_excessive_load, close(Acts2)),
    %% each request stream opened adds to the bound
    {M2, []} = ev({stream_open, 0, bidi}, M1),
    ?assertEqual({[], none}, begin {_, A} = ev({stream_data, 2, Prio, nofin}, M2), {A, close(A)} end).

%% control frames are held up to max_control_frame bytes
control_frame_bound_test() ->
    M = ready(#{max_control_frame => 10}),
    {_, Acts} = ev({stream_data, 2, <<7, 11, 0:88>>, nofin}, M),
    ?assertEqual(h3_excessive_load, close(Acts)),
    {M0, _} = ?M:new(#{max_control_frame => 10}),
    {_, Acts2} = ev({stream_data, 2, <<0, 4, 12, 0:96>>, nofin}, M0),
    ?assertEqual(h3_excessive_load, close(Acts2)).

%% -- critical streams (§6.2.1, RFC 9204 §4.2) ---------------------------------------------

%% h3spec: H3_CLOSED_CRITICAL_STREAM
closed_critical_stream_test_() ->
    M = ready(),
    {MEnc, []} = ev({stream_data, 6, <<2>>, nofin}, M),
    {MDec, []} = ev({stream_data, 10, <<3>>, nofin}, M),
    [?_assertEqual(h3_closed_critical_stream, close(element(2, ev(E, S))))
     || {E, S} <- [{{stream_data, 2, <<>>, fin}, M},
                   {{stream_reset, 2, 16#100}, M},
                   {{stop_sending, 3, 16#100}, M},
                   {{stream_data, 6, <<>>, fin}, MEnc},
                   {{stream_reset, 6, 0}, MEnc},
                   {{stream_data, 10, <<>>, fin}, MDec},
                   {{stream_reset, 10, 0}, MDec}]] ++
    %% the control stream's SETTINGS and its end in one piece
    [?_assertEqual(h3_closed_critical_stream,
                   close(element(2, ev({stream_data, 2, control(), fin},
                                       element(1, ?M:new(#{}))))))].

%% §6.2.1, §6.2.2, RFC 9204 §4.2: H3_STREAM_CREATION_ERROR
stream_creation_error_test_() ->
    M = ready(),
    {MEnc, []} = ev({stream_data, 6, <<2>>, nofin}, M),
    {MDec, []} = ev({stream_data, 10, <<3>>, nofin}, M),
    [?_assertEqual(h3_stream_creation_error, close(element(2, ev({stream_data, 14, <<0>>, nofin}, M)))),
     ?_assertEqual(h3_stream_creation_error, close(element(2, ev({stream_data, 14, <<1, 0>>, nofin}, M)))),
     ?_assertEqual(h3_stream_creation_error, close(element(2, ev({stream_data, 14, <<2>>, nofin}, MEnc)))),
     ?_assertEqual(h3_stream_creation_error, close(element(2, ev({stream_data, 14, <<3>>, nofin}, MDec))))].

%% §6.2: an unknown stream type is stopped, not a connection error; a
%% stream reset or ended before its type is tolerated.
unknown_stream_type_test() ->
    M = ready(),
    {M1, Acts} = ev({stream_data, 6, <<16#40, 16#21, "junk">>, nofin}, M),
    ?assertEqual([{stop_sending, 6, h3_stream_creation_error}], Acts),
    ?assertEqual({M1, []}, ev({stream_data, 6, <<"more">>, nofin}, M1)),
    {_, []} = ev({stream_data, 6, <<>>, fin}, M1),
    {M2, []} = ev({stream_data, 10, <<16#40>>, nofin}, M),
    ?assertMatch({_, []}, ev({stream_reset, 10, 0}, M2)),
    ?assertMatch({_, []}, ev({stream_data, 10, <<16#40>>, fin}, M)).

%% -- the client's QPACK streams (RFC 9204 §4.2 to §4.4) ------------------------------------

%% h3spec: ENCODER_STREAM_ERROR for a capacity over the limit, DECODER_STREAM_ERROR
%% for an Insert Count Increment of 0.
qpack_streams_test_() ->
    M = ready(),
    [?_assertEqual(qpack_encoder_stream_error,
                   close(element(2, ev({stream_data, 6, <<2, 16#3f, 16#bd, 16#01>>, nofin}, M)))),
     ?_assertEqual(qpack_encoder_stream_error,
                   close(element(2, evs([{stream_data, 6, <<2, 16#3f>>, nofin},
                                         {stream_data, 6, <<16#bd, 16#01>>, nofin}], M)))),
     ?_assertEqual(none, close(element(2, ev({stream_data, 6, <<2, 16#20>>, nofin}, M)))),
     ?_assertEqual(qpack_decoder_stream_error,
                   close(element(2, ev({stream_data, 6, <<3, 0>>, nofin}, M)))),
     ?_assertEqual(none, close(element(2, ev({stream_data, 6, <<3, 16#48>>, nofin}, M))))].

%% h3spec: QPACK_DECOMPRESSION_FAILED for a bad static index (RFC 9204 §2.2.3)
decompression_failed_test() ->
    ?assertEqual(qpack_decompression_failed, close(on_request(bin(?F:headers(<<0, 0, 16#ff, 36>>)), fin))).

%% -- request streams (§4.1) -----------------------------------------------------------------

get_test() ->
    {M, Acts} = ev({stream_data, 0, section(req_get(<<"/a?b=c">>)), fin}, ready()),
    ?assertMatch([{request, 0, #{method := <<"GET">>, path := <<"/a">>, qs := <<"b=c">>,
                                version := {3, 0}, body := none, host := <<"example.com">>,
                                headers := [{<<"host">>, <<"example.com">>}]}}], Acts),
    ?assertEqual(1, ?M:active_streams(M)),
    {M1, Resp} = ?M:send_response(0, 200, [{<<"content-type">>, <<"text/plain">>},
                                           {<<"connection">>, <<"close">>}], nofin, M),
    [{send, 0, Head, nofin}] = Resp,
    {ok, {headers, Block}, <<>>} = ?F:parse(bin(Head), 1000),
    %% RFC 9114 §4.2: no connection-specific fields go out
    ?assertEqual({ok, [{<<":status">>, <<"200">>}, {<<"content-type">>, <<"text/plain">>}]},
                 falco_qpack:decode(Block, #{})),
    {M2, [{send, 0, Body, fin}]} = ?M:send_data(0, <<"hi">>, fin, M1),
    ?assertEqual({ok, {data, <<"hi">>}, <<>>}, ?F:parse(bin(Body), 1000)),
    ?assertEqual(0, ?M:active_streams(M2)),
    %% a stream no longer there sends nothing
    ?assertEqual({M2, []}, ?M:send_data(0, <<"late">>, fin, M2)).

%% The request's bytes cut anywhere: the same request, then its end.
request_in_pieces_test() ->
    Events = [{stream_data, 0, <<B>>, nofin} || <<B>> <= section(req_get(<<"/">>))]
        ++ [{stream_data, 0, <<>>, fin}],
    {_, Acts} = evs(Events, ready()),
    ?assertMatch([{request, 0, #{body := chunked, version := {3, 0}}}, {data, 0, <<>>, fin}], Acts).

%% RFC 9000 §3.2: stream 8 opens 0 and 4, whose bytes may come after its.
out_of_order_streams_test() ->
    {M, Acts} = evs([{stream_data, 8, section(req_get(<<"/8">>)), fin},
                     {stream_data, 0, section(req_get(<<"/0">>)), fin},
                     {stream_data, 4, section(req_get(<<"/4">>)), fin}], ready()),
    ?assertEqual([8, 0, 4], [Id || {request, Id, _} <- Acts]),
    ?assertEqual(3, ?M:active_streams(M)),
    %% an id below the highest one seen, once closed, stays closed
    {M1, _} = ?M:send_response(0, 204, [], fin, M),
    ?assertEqual({M1, []}, ev({stream_data, 0, section(req_get(<<"/again">>)), fin}, M1)).

post_body_test() ->
    M = ready(),
    {M1, A1} = ev({stream_data, 0, bin([section(post(10)), ?F:data(<<"hello">>),
                                        ?F:frame(16#21, <<"grease">>), ?F:data(<<"wor">>)]),
                   nofin}, M),
    ?assertMatch([{request, 0, #{body := {length, 10}}}, {data, 0, [<<"hello">>, <<"wor">>], nofin}],
                 A1),
    {_, A2} = evs([{stream_data, 0, bin(?F:data(<<"ld">>)), nofin}, {stream_data, 0, <<>>, fin}], M1),
    ?assertEqual([{data, 0, <<"ld">>, nofin}, {data, 0, <<>>, fin}], A2).

%% §4.1.2: Content-Length must equal the DATA received: H3_MESSAGE_ERROR.
content_length_test_() ->
    Over = bin([section(post(3)), ?F:data(<<"four">>)]),
    Under = bin([section(post(5)), ?F:data(<<"four">>)]),
    [?_assert(stream_error(0, h3_message_error, on_request(Over, nofin))),
     ?_assert(lists:member({reset, 0, h3_message_error}, on_request(Over, nofin))),
     ?_assert(stream_error(0, h3_message_error, on_request(Under, fin))),
     ?_assertMatch([{request, _, _}, {data, 0, <<"four">>, nofin}], on_request(Under, nofin)),
     %% a length with no content to come
     ?_assert(stream_error(0, h3_message_error, on_request(section(post(3)), fin)))].

trailers_test() ->
    Trailers = bin(?F:headers(falco_qpack:encode([{<<"x-sum">>, <<"1">>}]))),
    Acts = on_request(bin([section(post(2)), ?F:data(<<"ab">>), Trailers]), fin),
    ?assertMatch([{request, 0, _}, {data, 0, <<"ab">>, nofin},
                  {trailers, 0, [{<<"x-sum">>, <<"1">>}]}], Acts),
    %% §4.1: nothing but unknown frames after the trailers
    ?assertEqual(h3_frame_unexpected,
                 close(on_request(bin([section(post(2)), ?F:data(<<"ab">>), Trailers,
                                       ?F:data(<<"x">>)]), nofin))),
    ?assertEqual(h3_frame_unexpected,
                 close(on_request(bin([section(req_get(<<"/">>)), Trailers, Trailers]), nofin))),
    %% trailers with pseudo-fields, or before all the declared content
    Bad = bin(?F:headers(falco_qpack:encode([{<<":path">>, <<"/">>}]))),
    ?assert(stream_error(0, h3_message_error, on_request(bin([section(post(0)), Bad]), nofin))),
    ?assert(stream_error(0, h3_message_error,
                         on_request(bin([section(post(3)), ?F:data(<<"ab">>), Trailers]), nofin))).

%% h3spec: H3_FRAME_UNEXPECTED for DATA before HEADERS (§4.1), even empty.
data_before_headers_test_() ->
    [?_assertEqual(h3_frame_unexpected, close(on_request(bin(?F:data(D)), nofin)))
     || D <- [<<"x">>, <<>>]].

%% h3spec: CANCEL_PUSH on a request stream; the control stream's other
%% frames and PUSH_PROMISE there too (§7.2).
request_frame_unexpected_test_() ->
    [?_assertEqual(h3_frame_unexpected, close(on_request(bin([section(req_get(<<"/">>)), F]), nofin)))
     || F <- [?F:cancel_push(0), ?F:settings(#{}), ?F:goaway(0), ?F:max_push_id(0),
              ?F:push_promise(0, <<0, 0>>)]] ++
    [?_assertEqual(h3_frame_unexpected, close(on_request(bin(?F:cancel_push(0)), nofin)))].

%% h3spec: H3_MESSAGE_ERROR for duplicated, missing or prohibited
%% pseudo-fields, or ones after regular fields (§4.1.2, §4.3).
malformed_test_() ->
    Get = req_get(<<"/">>),
    Cases = [[{<<":method">>, <<"GET">>} | Get],
             tl(Get),
             Get ++ [{<<":status">>, <<"200">>}],
             Get ++ [{<<":foo">>, <<"x">>}],
             [{<<"x-a">>, <<"b">>} | Get],
             Get ++ [{<<"connection">>, <<"close">>}],
             Get ++ [{<<"transfer-encoding">>, <<"chunked">>}],
             Get ++ [{<<"te">>, <<"gzip">>}],
             Get ++ [{<<"X-Upper">>, <<"x">>}],
             Get ++ [{<<"x-a">>, <<"b\r\nc">>}],
             lists:keyreplace(<<":path">>, 1, Get, {<<":path">>, <<>>})],
    [?_assertEqual([{reset_stream, 0, h3_message_error}, {stop_sending, 0, h3_message_error}],
                   on_request(section(Fields), fin))
     || Fields <- Cases].

%% a request falco answers with an error status, as HTTP/2 does
reply_error_test() ->
    Connect = [{<<":method">>, <<"CONNECT">>}, {<<":authority">>, <<"example.com:443">>}],
    ?assertEqual([{request, 0, {error, {not_implemented, connect}, <<"CONNECT">>}}],
                 on_request(section(Connect), nofin)).

%% RFC 9220 §3 (RFC 8441 §4): an extended CONNECT with `:protocol
%% websocket' is a request once we sent SETTINGS_ENABLE_CONNECT_PROTOCOL;
%% without the setting, `:protocol' makes the request malformed.
extended_connect_test() ->
    Fields = [{<<":method">>, <<"CONNECT">>}, {<<":protocol">>, <<"websocket">>},
              {<<":scheme">>, <<"https">>}, {<<":path">>, <<"/chat">>},
              {<<":authority">>, <<"example.com">>}, {<<"sec-websocket-version">>, <<"13">>}],
    %% routed as the GET of an HTTP/1.1 upgrade (falco_http2_request's rule)
    ?assertMatch([{request, 0, #{method := <<"GET">>, protocol := <<"websocket">>,
                                 path := <<"/chat">>, version := {3, 0}}}],
                 on_request(section(Fields), nofin)),
    {M0, _} = ?M:new(#{enable_connect_protocol => false}),
    {M, []} = ev({stream_data, 2, control(), nofin}, M0),
    {_, Acts} = ev({stream_data, 0, section(Fields), nofin}, M),
    ?assertEqual([{reset_stream, 0, h3_message_error}, {stop_sending, 0, h3_message_error}],
                 Acts),
    %% the tunnel's bytes are the stream's DATA, delivered as a body's
    {M1, [{request, 0, _}]} = ev({stream_data, 0, section(Fields), nofin}, ready()),
    {_, Data} = ev({stream_data, 0, bin(?F:data(<<"ws bytes">>)), nofin}, M1),
    ?assertEqual([<<"ws bytes">>], iolist_to_binary_data(Data)).

%% HTTP/2's flood budgets of small DATA frames (falco_http2_budget): past
%% `max_empty_data' empty DATA frames, or `max_tunnel_data' of a tunnel's
%% DATA frames under 1 KB, in a window, H3_EXCESSIVE_LOAD; larger frames
%% and an ordinary body's small ones are not counted; a new window starts
%% the count again.
small_data_budget_test() ->
    Connect = [{<<":method">>, <<"CONNECT">>}, {<<":protocol">>, <<"websocket">>},
               {<<":scheme">>, <<"https">>}, {<<":path">>, <<"/chat">>},
               {<<":authority">>, <<"example.com">>}, {<<"sec-websocket-version">>, <<"13">>}],
    Post = lists:keydelete(<<"content-length">>, 1, post(0)),
    Feed = fun(Fields, Opts, Frames) ->
                   {M1, [{request, 0, _}]} = ev({stream_data, 0, section(Fields), nofin},
                                                ready(Opts)),
                   ev({stream_data, 0, bin(Frames), nofin}, M1)
           end,
    Small = ?F:data(<<"x">>),
    Big = ?F:data(binary:copy(<<"y">>, 1024)),
    Empty = ?F:data(<<>>),
    Budget = #{max_tunnel_data => 3, max_empty_data => 2},
    %% a tunnel: 3 small frames pass, the 4th closes; 1 KB frames are free
    {_, A1} = Feed(Connect, Budget, lists:duplicate(3, Small)),
    ?assertEqual(none, close(A1)),
    ?assertMatch([{timer, reset_window, _}], [T || T = {timer, _, _} <- A1]),
    {_, A2} = Feed(Connect, Budget, lists:duplicate(4, Small)),
    ?assertEqual(h3_excessive_load, close(A2)),
    {_, A3} = Feed(Connect, Budget, lists:duplicate(20, Big)),
    ?assertEqual(none, close(A3)),
    %% an ordinary body's small frames are flow control's business
    {_, A4} = Feed(Post, Budget, lists:duplicate(20, Small)),
    ?assertEqual(none, close(A4)),
    %% empty DATA frames on any request stream
    {_, A5} = Feed(Post, Budget, lists:duplicate(3, Empty)),
    ?assertEqual(h3_excessive_load, close(A5)),
    %% a new window
    {M6, A6} = Feed(Connect, Budget, lists:duplicate(3, Small)),
    ?assertEqual(none, close(A6)),
    {_, A7} = ev({stream_data, 0, bin(lists:duplicate(3, Small)), nofin}, ?M:reset_window(M6)),
    ?assertEqual(none, close(A7)).

iolist_to_binary_data(Acts) ->
    [iolist_to_binary(D) || {data, 0, D, nofin} <- Acts].

%% §4.2.2: over max_field_section_size, decoded or encoded: 431.
field_section_too_large_test_() ->
    Fields = req_get(<<"/">>) ++ [{<<"x-long">>, binary:copy(<<"a">>, 200)}],
    {M0, _} = ?M:new(#{max_field_section_size => 300}),
    {M, []} = ev({stream_data, 2, control(), nofin}, M0),
    Raw = bin(?F:headers([<<0, 0, 16#d1, 16#d7, 16#50, 11, "example.com", 16#c1>>,
                          <<16#26, "x-long", 16#7f, 16#91, 2>>, binary:copy(<<"a">>, 400)])),
    [?_assertEqual([{request, 0, {error, {header_too_large, block}, undefined}}],
                   element(2, ev({stream_data, 0, section(Fields), fin}, M))),
     ?_assertEqual([{request, 0, {error, {header_too_large, block}, undefined}}, {data, 0, <<>>, fin}],
                   element(2, evs([{stream_data, 0, Raw, nofin}, {stream_data, 0, <<>>, fin}], M))),
     ?_assertMatch([{request, 0, #{}}], element(2, ev({stream_data, 0, section(req_get(<<"/">>)), fin}, M)))].

%% §4.1: a stream ended before its request is reset H3_REQUEST_INCOMPLETE;
%% §7.1: one ended inside a frame is H3_FRAME_ERROR.
incomplete_test_() ->
    [?_assertEqual([{reset_stream, 0, h3_request_incomplete}], on_request(<<>>, fin)),
     ?_assertEqual([{reset_stream, 0, h3_request_incomplete}],
                   on_request(bin(?F:frame(16#21, <<>>)), fin)),
     ?_assertEqual(h3_frame_error, close(on_request(binary:part(section(req_get(<<"/">>)), 0, 5), fin)))].

%% §4.1.1: a client's reset cancels the request.
peer_reset_test_() ->
    {M, _} = ev({stream_data, 0, section(post(5)), nofin}, ready()),
    {M0, []} = ev({stream_open, 0, bidi}, ready()),
    %% (the first reset of a window also asks for the window's timer)
    [?_assertEqual([{timer, reset_window, 10000}, {reset, 0, {peer_reset, 16#10c}},
                    {reset_stream, 0, h3_request_cancelled}],
                   element(2, ev({stream_reset, 0, 16#10c}, M))),
     ?_assertEqual([{timer, reset_window, 10000}, {reset_stream, 0, h3_request_rejected}],
                   element(2, ev({stream_reset, 0, 16#10c}, M0))),
     ?_assertEqual([{reset, 0, {peer_stop, 16#10c}}, {reset_stream, 0, h3_request_cancelled},
                    {stop_sending, 0, h3_request_cancelled}],
                   element(2, ev({stop_sending, 0, 16#10c}, M))),
     ?_assertEqual(0, ?M:active_streams(element(1, ev({stream_reset, 0, 0}, M))))].

%% §4.1: a complete response while the client still sends stops its stream.
early_response_test() ->
    {M, _} = ev({stream_data, 0, section(post(5)), nofin}, ready()),
    {M1, Acts} = ?M:send_response(0, 413, [], fin, M),
    ?assertMatch([{send, 0, _, fin}, {stop_sending, 0, h3_no_error}], Acts),
    ?assertEqual(0, ?M:active_streams(M1)),
    %% what was on its way is dropped
    ?assertEqual({M1, []}, ev({stream_data, 0, bin(?F:data(<<"abc">>)), nofin}, M1)).

interim_and_trailers_test() ->
    {M, _} = ev({stream_data, 0, section(req_get(<<"/">>)), fin}, ready()),
    {M1, [{send, 0, H1, nofin}]} = ?M:send_response(0, 103, [{<<"link">>, <<"</a>">>}], nofin, M),
    {ok, {headers, B1}, <<>>} = ?F:parse(bin(H1), 1000),
    ?assertEqual({ok, [{<<":status">>, <<"103">>}, {<<"link">>, <<"</a>">>}]},
                 falco_qpack:decode(B1, #{})),
    {M2, [{send, 0, _, nofin}]} = ?M:send_response(0, 200, [], nofin, M1),
    {M3, [{send, 0, T, fin}]} = ?M:send_trailers(0, [{<<"x-t">>, [<<"a">>, <<"b">>]}], M2),
    {ok, {headers, B2}, <<>>} = ?F:parse(bin(T), 1000),
    ?assertEqual({ok, [{<<"x-t">>, <<"ab">>}]}, falco_qpack:decode(B2, #{})),
    ?assertEqual(0, ?M:active_streams(M3)),
    %% an empty send without fin writes nothing; with fin, the end
    {M4, _} = ev({stream_data, 4, section(req_get(<<"/">>)), fin}, M3),
    ?assertEqual({M4, []}, ?M:send_data(4, <<>>, nofin, M4)),
    ?assertMatch({_, [{send, 4, <<>>, fin}]}, ?M:send_data(4, [], fin, M4)).

reset_stream_test() ->
    {M, _} = ev({stream_data, 0, section(post(5)), nofin}, ready()),
    {M1, Acts} = ?M:reset_stream(0, h3_internal_error, M),
    ?assertEqual([{reset_stream, 0, h3_internal_error}, {stop_sending, 0, h3_internal_error}], Acts),
    ?assertEqual(0, ?M:active_streams(M1)),
    ?assertEqual({M1, []}, ?M:reset_stream(0, h3_internal_error, M1)).

%% -- GOAWAY (§5.2) ------------------------------------------------------------------------------

goaway_test() ->
    {M, _} = evs([{stream_data, 0, section(req_get(<<"/">>)), fin},
                  {stream_data, 4, section(req_get(<<"/">>)), fin}], ready()),
    {M1, [{send, 3, G, nofin}]} = ?M:goaway(M),
    ?assertEqual({ok, {goaway, 8}, <<>>}, ?F:parse(bin(G), 100)),
    %% a request from the id sent on is rejected
    {M2, Rejected} = ev({stream_data, 8, section(req_get(<<"/">>)), fin}, M1),
    ?assertEqual([{reset_stream, 8, h3_request_rejected}, {stop_sending, 8, h3_request_rejected}],
                 Rejected),
    {M3, [{send, 0, _, fin}]} = ?M:send_response(0, 204, [], fin, M2),
    %% the last stream done: the connection closes
    {M4, Last} = ?M:send_response(4, 204, [], fin, M3),
    ?assertMatch([{send, 4, _, fin}, {close, {h3_no_error, goaway}}], Last),
    ?assertEqual({M4, []}, ev({stream_data, 12, section(req_get(<<"/">>)), fin}, M4)).

goaway_idle_test() ->
    {_, Acts} = ?M:goaway(ready()),
    ?assertMatch([{send, 3, _, nofin}, {close, {h3_no_error, goaway}}], Acts).

drain_test() ->
    {M, [{send, 3, G, nofin}]} = ?M:drain(ready()),
    ?assertEqual({ok, {goaway, 16#3ffffffffffffffc}, <<>>}, ?F:parse(bin(G), 100)),
    %% requests are still taken, then the final GOAWAY names the next id
    {M1, [{request, 0, _}]} = ev({stream_data, 0, section(req_get(<<"/">>)), fin}, M),
    {_, [{send, 3, G2, nofin}]} = ?M:goaway(M1),
    ?assertEqual({ok, {goaway, 4}, <<>>}, ?F:parse(bin(G2), 100)).

%% -- after a connection error ----------------------------------------------------------------------

closed_test() ->
    {M, Acts} = ev({stream_data, 2, <<6, 0>>, nofin}, ready()),
    ?assertEqual(h3_frame_unexpected, close(Acts)),
    ?assertEqual({M, []}, ev({stream_data, 0, section(req_get(<<"/">>)), fin}, M)),
    ?assertEqual({M, []}, ?M:send_data(0, <<"x">>, fin, M)),
    ?assertEqual({M, []}, ?M:goaway(M)).

%% §7.2.8 and §7.1 on a request stream; unknown frames there count in the
%% same bound as the control stream's.
request_stream_errors_test_() ->
    Head = section(req_get(<<"/">>)),
    Grease = bin(?F:frame(16#21, <<>>)),
    [?_assertEqual(h3_frame_unexpected, close(on_request(<<Head/binary, 8, 0>>, nofin))),
     ?_assertEqual(h3_frame_error, close(on_request(<<Head/binary, 7, 2, 0, 0>>, nofin))),
     ?_assertEqual(h3_excessive_load,
                   close(element(2, ev({stream_data, 0, binary:copy(Grease, 20), nofin},
                                       ready(#{max_ignored_frames => 3}))))),
     ?_assertEqual(none,
                   close(element(2, ev({stream_data, 0, binary:copy(Grease, 19), nofin},
                                       ready(#{max_ignored_frames => 3})))))].

%% empty DATA frames carry nothing; a trailer section over the bound is a
%% malformed message (no 431 can follow a request already handed over).
request_body_edges_test_() ->
    {M0, _} = ?M:new(#{max_field_section_size => 100}),
    {M, []} = ev({stream_data, 2, control(), nofin}, M0),
    Big = bin(?F:headers(binary:copy(<<0>>, 101))),
    [?_assertMatch([{request, 0, _}, {data, 0, <<"a">>, nofin}],
                   [A || A <- on_request(bin([section(post(1)), ?F:data(<<>>), ?F:data(<<"a">>),
                                              ?F:data(<<>>)]), nofin),
                         element(1, A) =/= timer]),
     ?_assert(stream_error(0, h3_message_error,
                           element(2, ev({stream_data, 0, <<(section(post(0)))/binary, Big/binary>>,
                                          nofin}, M))))].

%% a client cannot open server-initiated streams
server_stream_data_test() ->
    ?assertEqual(h3_stream_creation_error,
                 close(element(2, ev({stream_data, 3, <<"x">>, nofin}, ready())))).


server_stream_id_test() ->
    ?assertEqual(h3_stream_creation_error, close(element(2, ev({stream_open, 1, bidi}, ready())))).

%% Rapid reset (CVE-2023-44487): past max_resets client resets of request
%% streams in a window, H3_EXCESSIVE_LOAD; the window's timer starts with
%% its first reset, and a new window counts from 0.
rapid_reset_test() ->
    M0 = ready(#{max_resets => 3, reset_window => 1000}),
    Reset = fun(Id, M) ->
                    {M1, _} = ev({stream_data, Id, section(req_get(<<"/">>)), nofin}, M),
                    ev({stream_reset, Id, 16#10c}, M1)
            end,
    {M1, A1} = Reset(0, M0),
    ?assertEqual([{timer, reset_window, 1000}], [T || T = {timer, _, _} <- A1]),
    {M2, A2} = Reset(4, M1),
    {M3, A3} = Reset(8, M2),
    ?assertEqual({none, none, []}, {close(A2), close(A3), [T || T = {timer, _, _} <- A2 ++ A3]}),
    {_, A4} = Reset(12, M3),
    ?assertEqual(h3_excessive_load, close(A4)),
    %% after the window, three more are allowed again
    {M5, _} = Reset(12, ?M:reset_window(M3)),
    {M6, _} = Reset(16, M5),
    {_, A7} = Reset(20, M6),
    ?assertEqual(none, close(A7)).

%% RFC 9114 §4.2.2: a response head or trailers larger than the client's
%% SETTINGS_MAX_FIELD_SECTION_SIZE are not sent; the stream is reset.
peer_field_section_limit_test() ->
    {M0, _} = ?M:new(#{}),
    Control = bin([?F:stream_header(control), ?F:settings(#{max_field_section_size => 100})]),
    {M1, []} = ev({stream_data, 2, Control, nofin}, M0),
    {M2, _} = ev({stream_data, 0, section(req_get(<<"/">>)), fin}, M1),
    {M3, _} = ev({stream_data, 4, section(req_get(<<"/">>)), fin}, M2),
    %% 50 + 32 for the status: fits; a field of 40 bytes more does not
    {_, Fits} = ?M:send_response(0, 200, [{<<"x">>, binary:copy(<<"a">>, 10)}], fin, M3),
    ?assertMatch([{send, 0, _, fin}], Fits),
    {_, Over} = ?M:send_response(4, 200, [{<<"x">>, binary:copy(<<"a">>, 60)}], fin, M3),
    ?assertEqual([], [S || S = {send, 4, _, _} <- Over]),
    ?assertMatch([{reset_stream, 4, h3_internal_error} | _], [R || R = {reset_stream, _, _} <- Over]).
