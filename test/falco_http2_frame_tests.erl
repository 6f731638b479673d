%% EUnit tests for falco_http2_frame: RFC 9113 §4 and §6, one frame type at
%% a time, builders checked against hand-written bytes and parsed back.
-module(falco_http2_frame_tests).

-include_lib("eunit/include/eunit.hrl").

-define(F, falco_http2_frame).
-define(MAX, 16384).

parse(Bin) -> ?F:parse(iolist_to_binary(Bin), ?MAX).

raw(Type, Flags, Id, Payload) ->
    <<(byte_size(Payload)):24, Type:8, Flags:8, 0:1, Id:31, Payload/binary>>.

%% §4.1: a frame needs its 9-byte header, then Length bytes.
more_test_() ->
    [?_assertEqual({more, 9}, parse(<<>>)),
     ?_assertEqual({more, 12}, parse(<<0, 0, 8, 6, 0>>)),
     ?_assertEqual({more, 7}, parse(<<0, 0>>)),
     ?_assertEqual({more, 8}, parse(<<0, 0, 8, 6, 0, 0, 0, 0, 0>>)),
     ?_assertEqual({more, 1}, parse(<<0, 0, 8, 6, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7>>))].

byte_by_byte_test() ->
    Frame = iolist_to_binary(?F:data(3, fin, <<"hello">>)),
    Sizes = [begin
                 <<Part:N/binary, _/binary>> = Frame,
                 {more, Need} = ?F:parse(Part, ?MAX),
                 N + Need
             end || N <- lists:seq(0, byte_size(Frame) - 1)],
    %% Each answer names a length that the whole frame satisfies.
    ?assert(lists:all(fun(S) -> S =< byte_size(Frame) end, Sizes)),
    ?assertMatch({ok, {data, 3, fin, <<"hello">>, 5}, <<>>}, ?F:parse(Frame, ?MAX)).

%% §4.2: a frame over SETTINGS_MAX_FRAME_SIZE is refused from its header.
frame_size_test_() ->
    [?_assertEqual({error, {connection_error, frame_size_error, frame_too_large}},
                   parse(<<16385:24, 0, 0, 0:1, 1:31>>)),
     ?_assertMatch({ok, {data, 1, nofin, _, 16384}, <<>>},
                   parse(raw(0, 0, 1, binary:copy(<<"a">>, 16384)))),
     ?_assertMatch({ok, {data, 1, nofin, _, 20000}, <<>>},
                   ?F:parse(raw(0, 0, 1, binary:copy(<<"a">>, 20000)), 32768))].

rest_kept_test() ->
    Bin = iolist_to_binary([?F:ping(<<1:64>>), <<"extra">>]),
    ?assertEqual({ok, {ping, <<1:64>>}, <<"extra">>}, ?F:parse(Bin, ?MAX)).

reserved_bit_ignored_test() ->
    ?assertMatch({ok, {data, 1, nofin, <<"x">>, 1}, <<>>},
                 parse(<<1:24, 0, 0, 1:1, 1:31, "x">>)).

%% §6.1 DATA
data_test_() ->
    [?_assertEqual(<<0, 0, 3, 0, 1, 0, 0, 0, 5, "abc">>,
                   iolist_to_binary(?F:data(5, fin, [<<"a">>, "bc"]))),
     ?_assertEqual({ok, {data, 5, nofin, <<"abc">>, 3}, <<>>}, parse(?F:data(5, nofin, <<"abc">>))),
     ?_assertEqual({error, {connection_error, protocol_error, data_on_stream_0}},
                   parse(raw(0, 0, 0, <<"x">>))),
     %% padded: pad length 2, data "ab", two zero bytes; flow size counts all 5
     ?_assertEqual({ok, {data, 1, fin, <<"ab">>, 5}, <<>>},
                   parse(raw(0, 16#9, 1, <<2, "ab", 0, 0>>))),
     ?_assertEqual({ok, {data, 1, nofin, <<>>, 3}, <<>>}, parse(raw(0, 16#8, 1, <<2, 0, 0>>))),
     %% §6.1: padding as long as the payload (or longer) is PROTOCOL_ERROR
     ?_assertEqual({error, {connection_error, protocol_error, bad_padding}},
                   parse(raw(0, 16#8, 1, <<6, "Test">>))),
     ?_assertEqual({error, {connection_error, protocol_error, bad_padding}},
                   parse(raw(0, 16#8, 1, <<>>))),
     ?_assertEqual({error, {connection_error, protocol_error, nonzero_padding}},
                   parse(raw(0, 16#8, 1, <<1, "a", 7>>))),
     ?_assertEqual({error, {connection_error, protocol_error, nonzero_padding}},
                   parse(raw(0, 16#8, 1, <<9, "a", 0:64, 7>>)))].

%% §6.2 HEADERS
headers_test_() ->
    [?_assertEqual({ok, {headers, 1, fin, fin, undefined, <<"blk">>}, <<>>},
                   parse(?F:headers(1, fin, fin, <<"blk">>))),
     ?_assertEqual({ok, {headers, 3, nofin, nofin, undefined, <<"blk">>}, <<>>},
                   parse(?F:headers(3, nofin, nofin, <<"blk">>))),
     ?_assertEqual({ok, {headers, 1, nofin, fin, {true, 3, 256}, <<"blk">>}, <<>>},
                   parse(raw(1, 16#24, 1, <<1:1, 3:31, 255, "blk">>))),
     ?_assertEqual({ok, {headers, 1, nofin, fin, {false, 0, 16}, <<"b">>}, <<>>},
                   parse(raw(1, 16#2c, 1, <<1, 0:1, 0:31, 15, "b", 0>>))),
     ?_assertEqual({error, {connection_error, frame_size_error, headers_priority_truncated}},
                   parse(raw(1, 16#24, 1, <<0, 0, 0>>))),
     ?_assertEqual({error, {connection_error, protocol_error, bad_padding}},
                   parse(raw(1, 16#c, 1, <<5, "ab">>))),
     ?_assertEqual({error, {connection_error, protocol_error, headers_on_stream_0}},
                   parse(raw(1, 4, 0, <<"x">>)))].

header_block_split_test() ->
    Block = binary:copy(<<"z">>, 40000),
    Bin = iolist_to_binary(?F:header_block(7, fin, Block, ?MAX)),
    {ok, {headers, 7, fin, nofin, undefined, P1}, R1} = ?F:parse(Bin, ?MAX),
    {ok, {continuation, 7, nofin, P2}, R2} = ?F:parse(R1, ?MAX),
    {ok, {continuation, 7, fin, P3}, <<>>} = ?F:parse(R2, ?MAX),
    ?assertEqual([16384, 16384, 40000 - 32768], [byte_size(P) || P <- [P1, P2, P3]]),
    ?assertEqual(Block, <<P1/binary, P2/binary, P3/binary>>),
    ?assertEqual({ok, {headers, 7, nofin, fin, undefined, <<"s">>}, <<>>},
                 parse(?F:header_block(7, nofin, [<<"s">>], ?MAX))),
    Exact = binary:copy(<<"y">>, 2 * ?MAX),
    B2 = iolist_to_binary(?F:header_block(9, nofin, Exact, ?MAX)),
    {ok, {headers, 9, nofin, nofin, undefined, _}, R3} = ?F:parse(B2, ?MAX),
    ?assertMatch({ok, {continuation, 9, fin, _}, <<>>}, ?F:parse(R3, ?MAX)).

%% §6.3 PRIORITY
priority_test_() ->
    [?_assertEqual({ok, {priority, 3, true, 1, 256}, <<>>}, parse(?F:priority(3, true, 1, 256))),
     ?_assertEqual({ok, {priority, 3, false, 0, 1}, <<>>}, parse(?F:priority(3, false, 0, 1))),
     ?_assertEqual({error, {connection_error, protocol_error, priority_on_stream_0}},
                   parse(raw(2, 0, 0, <<0:40>>))),
     ?_assertEqual({error, {stream_error, 5, frame_size_error, bad_priority_length}, <<"r">>},
                   ?F:parse(<<(raw(2, 0, 5, <<0:32>>))/binary, "r">>, ?MAX))].

%% §6.4 RST_STREAM
rst_stream_test_() ->
    [?_assertEqual(<<0, 0, 4, 3, 0, 0, 0, 0, 1, 0, 0, 0, 8>>,
                   iolist_to_binary(?F:rst_stream(1, cancel))),
     ?_assertEqual({ok, {rst_stream, 1, cancel}, <<>>}, parse(?F:rst_stream(1, cancel))),
     ?_assertEqual({ok, {rst_stream, 1, {unknown, 99}}, <<>>}, parse(raw(3, 0, 1, <<99:32>>))),
     ?_assertEqual({error, {connection_error, protocol_error, rst_stream_on_stream_0}},
                   parse(raw(3, 0, 0, <<0:32>>))),
     ?_assertEqual({error, {connection_error, frame_size_error, bad_rst_stream_length}},
                   parse(raw(3, 0, 1, <<0:24>>)))].

%% §6.5 SETTINGS
settings_test_() ->
    All = #{header_table_size => 100, enable_push => false, max_concurrent_streams => 10,
            initial_window_size => 1000, max_frame_size => 20000, max_header_list_size => 500,
            enable_connect_protocol => true, no_rfc7540_priorities => true},
    [?_assertEqual({ok, {settings, All}, <<>>}, parse(?F:settings(All))),
     ?_assertEqual({ok, {settings, #{}}, <<>>}, parse(?F:settings(#{}))),
     ?_assertEqual({ok, settings_ack, <<>>}, parse(?F:settings_ack())),
     ?_assertEqual({ok, {settings, #{enable_push => true, enable_connect_protocol => false,
                                     no_rfc7540_priorities => false}}, <<>>},
                   parse(raw(4, 0, 0, <<2:16, 1:32, 8:16, 0:32, 9:16, 0:32>>))),
     %% unknown parameters are ignored; a repeated one: the last wins
     ?_assertEqual({ok, {settings, #{max_concurrent_streams => 2}}, <<>>},
                   parse(raw(4, 0, 0, <<3:16, 1:32, 77:16, 5:32, 3:16, 2:32>>))),
     ?_assertEqual({error, {connection_error, protocol_error, settings_on_stream}},
                   parse(raw(4, 0, 1, <<>>))),
     ?_assertEqual({error, {connection_error, frame_size_error, settings_ack_with_payload}},
                   parse(raw(4, 1, 0, <<1:16, 1:32>>))),
     ?_assertEqual({error, {connection_error, frame_size_error, bad_settings_length}},
                   parse(raw(4, 0, 0, <<1:16, 1:24>>))),
     ?_assertEqual({error, {connection_error, protocol_error, bad_enable_push}},
                   parse(raw(4, 0, 0, <<2:16, 2:32>>))),
     ?_assertEqual({error, {connection_error, flow_control_error, bad_initial_window_size}},
                   parse(raw(4, 0, 0, <<4:16, 16#80000000:32>>))),
     ?_assertEqual({ok, {settings, #{initial_window_size => 16#7fffffff}}, <<>>},
                   parse(raw(4, 0, 0, <<4:16, 16#7fffffff:32>>))),
     ?_assertEqual({error, {connection_error, protocol_error, bad_max_frame_size}},
                   parse(raw(4, 0, 0, <<5:16, 16383:32>>))),
     ?_assertEqual({error, {connection_error, protocol_error, bad_max_frame_size}},
                   parse(raw(4, 0, 0, <<5:16, 16777216:32>>))),
     ?_assertEqual({error, {connection_error, protocol_error, bad_enable_connect_protocol}},
                   parse(raw(4, 0, 0, <<8:16, 3:32>>))),
     ?_assertEqual({error, {connection_error, protocol_error, bad_no_rfc7540_priorities}},
                   parse(raw(4, 0, 0, <<9:16, 3:32>>))),
     ?_assertEqual(65535, maps:get(initial_window_size, ?F:default_settings()))].

%% §6.6 PUSH_PROMISE
push_promise_test_() ->
    [?_assertEqual({ok, {push_promise, 1, fin, 2, <<"blk">>}, <<>>},
                   parse(?F:push_promise(1, fin, 2, <<"blk">>))),
     ?_assertEqual({ok, {push_promise, 1, nofin, 2, <<"b">>}, <<>>},
                   parse(raw(5, 16#8, 1, <<1, 0:1, 2:31, "b", 0>>))),
     ?_assertEqual({error, {connection_error, frame_size_error, push_promise_truncated}},
                   parse(raw(5, 4, 1, <<0, 0>>))),
     ?_assertEqual({error, {connection_error, protocol_error, bad_padding}},
                   parse(raw(5, 16#c, 1, <<9, 0, 0, 0, 2>>))),
     ?_assertEqual({error, {connection_error, protocol_error, push_promise_on_stream_0}},
                   parse(raw(5, 4, 0, <<0:32>>)))].

%% §6.7 PING
ping_test_() ->
    [?_assertEqual({ok, {ping, <<"12345678">>}, <<>>}, parse(?F:ping(<<"12345678">>))),
     ?_assertEqual({ok, {ping_ack, <<"12345678">>}, <<>>}, parse(?F:ping_ack(<<"12345678">>))),
     ?_assertEqual({error, {connection_error, protocol_error, ping_on_stream}},
                   parse(raw(6, 0, 1, <<0:64>>))),
     ?_assertEqual({error, {connection_error, frame_size_error, bad_ping_length}},
                   parse(raw(6, 0, 0, <<0:48>>)))].

%% §6.8 GOAWAY
goaway_test_() ->
    [?_assertEqual({ok, {goaway, 7, enhance_your_calm, <<"calm">>}, <<>>},
                   parse(?F:goaway(7, enhance_your_calm, <<"calm">>))),
     ?_assertEqual({ok, {goaway, 0, no_error, <<>>}, <<>>}, parse(?F:goaway(0, no_error, []))),
     ?_assertEqual({error, {connection_error, protocol_error, goaway_on_stream}},
                   parse(raw(7, 0, 3, <<0:64>>))),
     ?_assertEqual({error, {connection_error, frame_size_error, bad_goaway_length}},
                   parse(raw(7, 0, 0, <<0:32>>)))].

%% §6.9 WINDOW_UPDATE
window_update_test_() ->
    [?_assertEqual({ok, {window_update, 0, 1000}, <<>>}, parse(?F:window_update(0, 1000))),
     ?_assertEqual({ok, {window_update, 3, 16#7fffffff}, <<>>},
                   parse(?F:window_update(3, 16#7fffffff))),
     ?_assertEqual({error, {connection_error, protocol_error, zero_window_increment}},
                   parse(raw(8, 0, 0, <<0:32>>))),
     ?_assertEqual({error, {stream_error, 3, protocol_error, zero_window_increment}, <<>>},
                   parse(raw(8, 0, 3, <<0:32>>))),
     ?_assertEqual({error, {connection_error, frame_size_error, bad_window_update_length}},
                   parse(raw(8, 0, 3, <<1:24>>)))].

%% §6.10 CONTINUATION
continuation_test_() ->
    [?_assertEqual({ok, {continuation, 1, fin, <<"x">>}, <<>>},
                   parse(?F:continuation(1, fin, <<"x">>))),
     ?_assertEqual({ok, {continuation, 1, nofin, <<>>}, <<>>},
                   parse(?F:continuation(1, nofin, <<>>))),
     ?_assertEqual({error, {connection_error, protocol_error, continuation_on_stream_0}},
                   parse(raw(9, 4, 0, <<"x">>)))].

%% §5.5: unknown frame types are returned for the machine to ignore.
unknown_test() ->
    ?assertEqual({ok, {unknown, 16#42, 1}, <<>>}, parse(raw(16#42, 16#ff, 1, <<"whatever">>))).

%% §7: every defined code round-trips; unknown codes are kept as numbers.
error_codes_test() ->
    Names = [no_error, protocol_error, internal_error, flow_control_error, settings_timeout,
             stream_closed, frame_size_error, refused_stream, cancel, compression_error,
             connect_error, enhance_your_calm, inadequate_security, http_1_1_required],
    ?assertEqual(lists:seq(0, 13), [?F:error_code(N) || N <- Names]),
    ?assertEqual(Names, [?F:error_name(C) || C <- lists:seq(0, 13)]),
    ?assertEqual({unknown, 14}, ?F:error_name(14)),
    ?assertEqual(14, ?F:error_code({unknown, 14})).

%% parse_run/2: consecutive large DATA frames of one stream come out as one
%% frame (payloads in order, flow sizes summed, the last may end the
%% stream); anything else stops the run and is parsed on the next call.
parse_run_test() ->
    Big = fun(C) -> binary:copy(<<C>>, 5000) end,
    Padded = raw(0, 16#8, 1, <<3, (Big($c))/binary, 0, 0, 0>>),
    Bytes = iolist_to_binary([?F:data(1, nofin, Big($a)), ?F:data(1, nofin, Big($b)), Padded,
                              ?F:data(1, fin, <<"end">>), ?F:ping(<<"12345678">>)]),
    {ok, Run, Rest} = ?F:parse_run(Bytes, ?MAX),
    ?assertMatch({data, 1, fin, [_, _, _, _], 15007}, Run),
    {data, 1, fin, Pieces, _} = Run,
    ?assertEqual(<<(Big($a))/binary, (Big($b))/binary, (Big($c))/binary, "end">>,
                 iolist_to_binary(Pieces)),
    ?assertMatch({ok, {ping, <<"12345678">>}, <<>>}, ?F:parse_run(Rest, ?MAX)).

parse_run_stops_test_() ->
    Big = binary:copy(<<"x">>, 5000),
    Run = fun(Frames) -> ?F:parse_run(iolist_to_binary(Frames), ?MAX) end,
    Two = fun(Next) ->
                  {ok, F, Rest} = Run([?F:data(1, nofin, Big), ?F:data(1, nofin, Big), Next]),
                  {F, ?F:parse(Rest, ?MAX)}
          end,
    [%% another stream's DATA
     ?_assertMatch({{data, 1, nofin, [_, _], 10000}, {ok, {data, 3, nofin, _, 5000}, <<>>}},
                   Two(?F:data(3, nofin, Big))),
     %% a small DATA frame that does not end the stream (counted one by one)
     ?_assertMatch({{data, 1, nofin, [_, _], 10000}, {ok, {data, 1, nofin, <<"x">>, 1}, <<>>}},
                   Two(?F:data(1, nofin, <<"x">>))),
     %% an incomplete frame
     ?_assertMatch({{data, 1, nofin, [_, _], 10000}, {more, _}},
                   Two(binary:part(iolist_to_binary(?F:data(1, nofin, Big)), 0, 100))),
     %% a frame in error
     ?_assertMatch({{data, 1, nofin, [_, _], 10000},
                    {error, {connection_error, frame_size_error, frame_too_large}}},
                   Two(<<16#ffffff:24, 0:8, 0:8, 1:32>>)),
     %% a lone large frame stays a binary; a small one is not a run's start
     ?_assertMatch({ok, {data, 1, nofin, <<_:5000/binary>>, 5000}, <<>>},
                   Run([?F:data(1, nofin, Big)])),
     ?_assertMatch({ok, {data, 1, nofin, <<"x">>, 1}, <<_/binary>>},
                   Run([?F:data(1, nofin, <<"x">>), ?F:data(1, nofin, Big)])),
     %% a run ends with the frame that ends the stream
     ?_assertMatch({ok, {data, 1, fin, [_, _], 10000}, <<_/binary>>},
                   Run([?F:data(1, nofin, Big), ?F:data(1, fin, Big), ?F:data(1, nofin, Big)]))].
