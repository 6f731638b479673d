%% EUnit tests for falco_http3_frame and falco_http3_error: each frame's
%% bytes (RFC 9114 §7.2), the reader fed whole and in pieces, the frame
%% rules a frame alone decides with their exact error codes (h3spec's
%% H3_FRAME_ERROR, H3_FRAME_UNEXPECTED and H3_SETTINGS_ERROR checks, the
%% study's §7), stream types (§6.2) and the error registries (§8.1, RFC 9204
%% §6).
-module(falco_http3_frame_tests).
-include_lib("eunit/include/eunit.hrl").

-define(F, falco_http3_frame).

bin(IoData) -> iolist_to_binary(IoData).

%% All the items of Bin fed to a fresh reader in pieces of N bytes.
read_in(Bin, N, Max) ->
    read_in(Bin, N, ?F:reader(Max), []).

read_in(<<>>, _, R, Acc) ->
    {Acc, ?F:reader_done(R)};
read_in(Bin, N, R0, Acc) ->
    {Piece, Rest} = case Bin of
                        <<P:N/binary, T/binary>> -> {P, T};
                        _ -> {Bin, <<>>}
                    end,
    case ?F:read(Piece, R0) of
        {ok, Items, R} -> read_in(Rest, N, R, Acc ++ Items);
        {error, _} = Error -> {Acc, Error}
    end.

%% DATA pieces joined, so feeds cut differently compare equal.
joined(Items) ->
    lists:reverse(lists:foldl(fun({data, B}, [{data, A} | Acc]) -> [{data, <<A/binary, B/binary>>} | Acc];
                                 (I, Acc) -> [I | Acc]
                              end, [], Items)).

%% -- frame layout (§7.1, §7.2) ------------------------------------------------

builders_test_() ->
    [%% §7.2.1 DATA: type 0x00, length, content
     ?_assertEqual(<<0, 3, "abc">>, bin(?F:data(<<"abc">>))),
     %% §7.2.2 HEADERS: type 0x01
     ?_assertEqual(<<1, 2, 0, 0>>, bin(?F:headers(<<0, 0>>))),
     %% §7.2.3 CANCEL_PUSH 0x03, §7.2.6 GOAWAY 0x07, §7.2.7 MAX_PUSH_ID 0x0d
     ?_assertEqual(<<3, 1, 5>>, bin(?F:cancel_push(5))),
     ?_assertEqual(<<7, 2, 16#40, 16#64>>, bin(?F:goaway(100))),
     ?_assertEqual(<<16#0d, 1, 7>>, bin(?F:max_push_id(7))),
     %% §7.2.5 PUSH_PROMISE 0x05: push id, then the section
     ?_assertEqual(<<5, 3, 1, 0, 0>>, bin(?F:push_promise(1, <<0, 0>>))),
     %% §7.2.4 SETTINGS 0x04: identifier and value varints
     ?_assertEqual(<<4, 5, 6, 16#40, 100, 1, 0>>,
                   bin(?F:settings(#{qpack_max_table_capacity => 0,
                                     max_field_section_size => 100}))),
     ?_assertEqual(<<4, 2, 16#21, 9>>, bin(?F:settings(#{}, [{16#21, 9}]))),
     %% a type of two bytes
     ?_assertEqual(<<16#40, 16#40, 1, $x>>, bin(?F:frame(16#40, <<"x">>))),
     ?_assertEqual(<<0>>, ?F:stream_header(control)),
     ?_assertEqual(<<3>>, ?F:stream_header(decoder))].

parse_test_() ->
    [?_assertEqual({ok, {data, <<"abc">>}, <<"next">>}, ?F:parse(<<0, 3, "abcnext">>, 100)),
     ?_assertEqual({ok, {goaway, 100}, <<>>}, ?F:parse(bin(?F:goaway(100)), 100)),
     ?_assertEqual({ok, {push_promise, 1, <<0, 0>>}, <<>>}, ?F:parse(<<5, 3, 1, 0, 0>>, 100)),
     ?_assertEqual({ok, {settings, #{h3_datagram => true, enable_connect_protocol => false}},
                    <<>>},
                   ?F:parse(<<4, 4, 16#33, 1, 8, 0>>, 100)),
     ?_assertEqual(more, ?F:parse(<<0, 3, "ab">>, 100)),
     ?_assertEqual(more, ?F:parse(<<16#40>>, 100)),
     ?_assertEqual(more, ?F:parse(<<>>, 100)),
     %% §7.2.8: reserved types are skipped as unknown
     ?_assertEqual({ok, {unknown, 16#21}, <<>>}, ?F:parse(<<16#21, 2, "xx">>, 100)),
     ?_assertEqual({error, {h3_excessive_load, frame_too_large}}, ?F:parse(<<1, 10, 0:80>>, 9))].

%% RFC 9114 §7.1 and §10.8: a payload holds exactly its fields; h3spec
%% sends these and expects H3_FRAME_ERROR.
frame_error_test_() ->
    [?_assertEqual({error, {h3_frame_error, bad_goaway}}, ?F:parse(<<7, 2, 1, 2>>, 100)),
     ?_assertEqual({error, {h3_frame_error, bad_goaway}}, ?F:parse(<<7, 0>>, 100)),
     ?_assertEqual({error, {h3_frame_error, bad_cancel_push}}, ?F:parse(<<3, 2, 1, 1>>, 100)),
     ?_assertEqual({error, {h3_frame_error, bad_max_push_id}}, ?F:parse(<<13, 2, 1, 1>>, 100)),
     ?_assertEqual({error, {h3_frame_error, bad_push_promise}}, ?F:parse(<<5, 0>>, 100)),
     %% a setting without its value
     ?_assertEqual({error, {h3_frame_error, bad_settings}}, ?F:parse(<<4, 1, 6>>, 100)),
     ?_assertEqual({error, {h3_frame_error, bad_settings}}, ?F:parse(<<4, 2, 6, 16#40>>, 100)),
     %% §7.1: a stream ending cleanly inside a frame
     ?_assertEqual({[], {error, {h3_frame_error, truncated_frame}}},
                   read_in(<<1, 5, 0, 0>>, 10, 100)),
     ?_assertEqual({[{data, <<"ab">>}], {error, {h3_frame_error, truncated_frame}}},
                   read_in(<<0, 5, "ab">>, 10, 100)),
     ?_assertEqual({[{unknown, 16#21}], {error, {h3_frame_error, truncated_frame}}},
                   read_in(<<16#21, 5, "ab">>, 10, 100)),
     ?_assertEqual({[], {error, {h3_frame_error, truncated_frame}}}, read_in(<<16#40>>, 10, 100))].

%% RFC 9114 §7.2.8: HTTP/2's PRIORITY, PING, WINDOW_UPDATE and CONTINUATION
%% are H3_FRAME_UNEXPECTED wherever they come.
http2_frames_test_() ->
    [?_assertEqual({error, {h3_frame_unexpected, http2_frame}}, ?F:read(<<T, 0>>, ?F:reader(100)))
     || T <- [2, 6, 8, 9]] ++
    [?_assertEqual({error, {h3_frame_unexpected, http2_frame}}, ?F:parse(<<8, 0>>, 100))].

%% RFC 9114 §7.2.4, §7.2.4.1 (h3spec: H3_SETTINGS_ERROR for duplicate or
%% HTTP/2 settings).
settings_error_test_() ->
    [?_assertEqual({error, {h3_settings_error, duplicate_setting}},
                   ?F:parse(<<4, 4, 6, 1, 6, 2>>, 100)),
     %% an unknown identifier twice is a duplicate too
     ?_assertEqual({error, {h3_settings_error, duplicate_setting}},
                   ?F:parse(<<4, 4, 16#21, 1, 16#21, 1>>, 100))] ++
    [?_assertEqual({error, {h3_settings_error, http2_setting}}, ?F:parse(<<4, 2, Id, 0>>, 100))
     || Id <- [2, 3, 4, 5]] ++
    [%% RFC 9220 §3, RFC 9297 §2.1.1: 0 or 1 only
     ?_assertEqual({error, {h3_settings_error, bad_boolean_setting}},
                   ?F:parse(<<4, 2, 8, 2>>, 100)),
     ?_assertEqual({error, {h3_settings_error, bad_boolean_setting}},
                   ?F:parse(<<4, 2, 16#33, 2>>, 100)),
     %% §7.2.4: unknown identifiers are ignored; 0x00 is not HTTP/2's
     ?_assertEqual({ok, {settings, #{max_field_section_size => 5}}, <<>>},
                   ?F:parse(<<4, 9, 0, 1, 16#21, 3, 16#40, 16#ff, 7, 6, 5>>, 100)),
     ?_assertEqual({ok, {settings, #{qpack_blocked_streams => 100}}, <<>>},
                   ?F:parse(<<4, 3, 7, 16#40, 100>>, 100))].

%% -- the reader -----------------------------------------------------------------

stream() ->
    bin([?F:headers(<<0, 0, 16#d1>>), ?F:frame(16#21, <<"grease">>), ?F:data(<<"hello">>),
         ?F:frame(16#f0700, <<"prio">>), ?F:data(<<>>), ?F:data(<<"world">>),
         ?F:headers(<<0, 0>>)]).

reader_whole_test() ->
    ?assertEqual({[{headers, <<0, 0, 16#d1>>}, {unknown, 16#21}, {data, <<"hello">>},
                   {unknown, 16#f0700}, {data, <<>>}, {data, <<"world">>}, {headers, <<0, 0>>}],
                  ok},
                 read_in(stream(), 1000, 100)).

%% Cut anywhere: the same items (DATA in more pieces), and DATA never held.
reader_pieces_test_() ->
    {Whole, ok} = read_in(stream(), 1000, 100),
    [?_assertEqual({joined(Whole), ok}, begin
                                            {Items, Done} = read_in(stream(), N, 100),
                                            {joined(Items), Done}
                                        end)
     || N <- [1, 2, 3, 5, 7]].

data_is_not_held_test() ->
    %% a DATA frame of 1024 bytes (length 0x4400 is the varint 1024), on a
    %% reader that holds no frame over 10 bytes
    {ok, Items, R} = ?F:read(<<0, 16#44, 0, "abc">>, ?F:reader(10)),
    ?assertEqual([{data, <<"abc">>}], Items),
    ?assertMatch({error, _}, ?F:reader_done(R)),
    {ok, Items2, R2} = ?F:read(binary:copy(<<"x">>, 1020), R),
    ?assertEqual([{data, binary:copy(<<"x">>, 1020)}], Items2),
    {ok, Items3, R3} = ?F:read(<<"y", 7, 1, 0>>, R2),
    ?assertEqual([{data, <<"y">>}, {goaway, 0}], Items3),
    ?assertEqual(ok, ?F:reader_done(R3)).

%% A frame held whole longer than the bound is skipped, not held.
too_large_test() ->
    Big = bin(?F:headers(binary:copy(<<0>>, 50))),
    ?assertEqual({[{too_large, headers, 50}, {goaway, 3}], ok},
                 read_in(<<Big/binary, 7, 1, 3>>, 7, 49)),
    ?assertEqual({[{headers, binary:copy(<<0>>, 50)}], ok}, read_in(Big, 7, 50)),
    %% unknown frames are skipped whatever their length
    ?assertEqual({[{unknown, 16#21}], ok},
                 read_in(bin(?F:frame(16#21, binary:copy(<<1>>, 5000))), 100, 10)).

%% -- stream types (§6.2) and reserved values -------------------------------------------

stream_type_test_() ->
    [?_assertEqual({control, <<"x">>}, ?F:stream_type(<<0, "x">>)),
     ?_assertEqual({push, <<>>}, ?F:stream_type(<<1>>)),
     ?_assertEqual({encoder, <<>>}, ?F:stream_type(<<2>>)),
     ?_assertEqual({decoder, <<>>}, ?F:stream_type(<<3>>)),
     ?_assertEqual({{unknown, 16#21}, <<>>}, ?F:stream_type(<<16#21>>)),
     ?_assertEqual({{unknown, 16#54}, <<>>}, ?F:stream_type(<<16#40, 16#54>>)),
     ?_assertEqual(more, ?F:stream_type(<<16#40>>)),
     ?_assertEqual(more, ?F:stream_type(<<>>))].

reserved_test_() ->
    [?_assert(?F:is_reserved(16#21)), ?_assert(?F:is_reserved(16#40)),
     ?_assert(?F:is_reserved(16#3ffffffffffffffe)), ?_assertNot(?F:is_reserved(16#22)),
     ?_assertNot(?F:is_reserved(0)), ?_assertEqual(16#5f, ?F:reserved(2))].

%% -- error codes (RFC 9114 §8.1, RFC 9204 §6) ----------------------------------------

error_codes_test_() ->
    Codes = [{h3_no_error, 16#100}, {h3_general_protocol_error, 16#101},
             {h3_internal_error, 16#102}, {h3_stream_creation_error, 16#103},
             {h3_closed_critical_stream, 16#104}, {h3_frame_unexpected, 16#105},
             {h3_frame_error, 16#106}, {h3_excessive_load, 16#107}, {h3_id_error, 16#108},
             {h3_settings_error, 16#109}, {h3_missing_settings, 16#10a},
             {h3_request_rejected, 16#10b}, {h3_request_cancelled, 16#10c},
             {h3_request_incomplete, 16#10d}, {h3_message_error, 16#10e},
             {h3_connect_error, 16#10f}, {h3_version_fallback, 16#110},
             {qpack_decompression_failed, 16#200}, {qpack_encoder_stream_error, 16#201},
             {qpack_decoder_stream_error, 16#202}],
    [?_assertEqual(N, falco_http3_error:code(A)) || {A, N} <- Codes] ++
    [?_assertEqual(A, falco_http3_error:name(N)) || {A, N} <- Codes] ++
    [?_assertEqual({unknown, 16#21}, falco_http3_error:name(16#21)),
     ?_assertEqual({unknown, 16#111}, falco_http3_error:name(16#111)),
     ?_assertEqual({unknown, 0}, falco_http3_error:name(0))].
