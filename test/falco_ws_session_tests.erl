%% EUnit: the receiving state machine (falco_ws_session): fragmentation,
%% control frames between fragments, the message size limit (inflated
%% size included), UTF-8 across fragments, close payloads, compressed
%% messages.
-module(falco_ws_session_tests).

-include_lib("eunit/include/eunit.hrl").

new() -> new(infinity).
new(Max) -> new(Max, infinity, infinity).
new(Max, Frags, Empties) ->
    falco_ws_session:new(#{max_message_size => Max, max_fragments => Frags,
                           max_empty_fragments => Empties, deflate => undefined}).

f(Op, Fin, Payload) -> {frame, Op, Fin, false, Payload}.

%% Feeds frames; the events of all of them, or the first error.
run(Frames, S) ->
    lists:foldl(fun(_, {error, _, _} = E) -> E;
                   (F, {Evs, S0}) ->
                        case falco_ws_session:frame(F, S0) of
                            {ok, New, S1} -> {Evs ++ New, S1};
                            Error -> Error
                        end
                end, {[], S}, Frames).

events(Frames) -> events(Frames, new()).
events(Frames, S) ->
    case run(Frames, S) of
        {Evs, _} -> Evs;
        Error -> Error
    end.

messages_test_() ->
    [?_assertEqual([{text, <<"Hello">>}], events([f(text, fin, <<"Hello">>)])),
     ?_assertEqual([{binary, <<1, 2>>}], events([f(binary, fin, <<1, 2>>)])),
     ?_assertEqual([{text, <<"Hello">>}],
                   events([f(text, nofin, <<"Hel">>), f(continuation, nofin, <<>>),
                           f(continuation, fin, <<"lo">>)])),
     %% control frames between fragments (RFC 6455 §5.4)
     ?_assertEqual([{ping, <<"p">>}, {pong, <<>>}, {binary, <<"ab">>}],
                   events([f(binary, nofin, <<"a">>), f(ping, fin, <<"p">>), f(pong, fin, <<>>),
                           f(continuation, fin, <<"b">>)])),
     ?_assertEqual([{close, none}], events([f(close, fin, <<>>)])),
     ?_assertEqual([{close, {1000, <<"bye">>}}], events([f(close, fin, <<1000:16, "bye">>)]))].

errors_test_() ->
    [?_assertEqual({error, 1002, unexpected_continuation}, events([f(continuation, fin, <<>>)])),
     ?_assertEqual({error, 1002, expected_continuation},
                   events([f(text, nofin, <<"a">>), f(text, fin, <<"b">>)])),
     ?_assertEqual({error, 1002, rsv1_on_continuation},
                   events([f(text, nofin, <<"a">>), {frame, continuation, fin, true, <<"b">>}])),
     ?_assertEqual({error, 1007, invalid_utf8}, events([f(text, fin, <<16#ff>>)])),
     %% fail fast: refused on the fragment, not at the end of the message
     ?_assertEqual({error, 1007, invalid_utf8},
                   events([f(text, nofin, <<"a">>), f(continuation, nofin, <<16#ed, 16#a0>>)])),
     ?_assertEqual({error, 1007, invalid_utf8},
                   events([f(text, nofin, <<16#e2, 16#82>>), f(continuation, fin, <<>>)])),
     ?_assertEqual([{text, <<"€"/utf8>>}],
                   events([f(text, nofin, <<16#e2, 16#82>>), f(continuation, fin, <<16#ac>>)])),
     ?_assertEqual({error, 1002, bad_close_code}, events([f(close, fin, <<1005:16>>)])),
     ?_assertEqual({error, 1002, bad_close_payload}, events([f(close, fin, <<1>>)])),
     ?_assertEqual({error, 1007, invalid_utf8}, events([f(close, fin, <<1000:16, 16#ff>>)]))].

size_limit_test_() ->
    [?_assertEqual([{binary, <<0:80>>}], events([f(binary, fin, <<0:80>>)], new(10))),
     ?_assertEqual({error, 1009, message_too_big}, events([f(binary, fin, <<0:88>>)], new(10))),
     ?_assertEqual({error, 1009, message_too_big},
                   events([f(binary, nofin, <<0:48>>), f(continuation, nofin, <<0:40>>)], new(10))),
     %% the limit is per message
     ?_assertEqual([{binary, <<0:80>>}, {binary, <<0:80>>}],
                   events([f(binary, fin, <<0:80>>), f(binary, fin, <<0:80>>)], new(10)))].

deflate_session(Max) ->
    {ok, _, P} = falco_ws_deflate:negotiate([<<"permessage-deflate">>], #{}),
    D = falco_ws_deflate:init(P, #{}),
    {D, falco_ws_session:new(#{max_message_size => Max, max_fragments => infinity,
                               max_empty_fragments => infinity, deflate => D})}.

compressed_test() ->
    {D, S} = deflate_session(infinity),
    %% RFC 7692 §7.2.3.1, fragmented, then a ping between fragments
    ?assertEqual([{ping, <<>>}, {text, <<"Hello">>}],
                 events([{frame, text, nofin, true, <<16#f2, 16#48, 16#cd>>}, f(ping, fin, <<>>),
                         f(continuation, fin, <<16#c9, 16#c9, 16#07, 16#00>>)], S)),
    falco_ws_deflate:close(D).

compressed_bomb_test() ->
    {D, S} = deflate_session(1000000),
    Bomb = falco_ws_deflate:deflate(binary:copy(<<"a">>, 5000000), D),
    ?assertEqual({error, 1009, message_too_big}, events([{frame, binary, fin, true, Bomb}], S)),
    falco_ws_deflate:close(D).

compressed_invalid_utf8_test() ->
    {D, S} = deflate_session(infinity),
    Bad = falco_ws_deflate:deflate(<<"ok", 16#ff>>, D),
    ?assertEqual({error, 1007, invalid_utf8}, events([{frame, text, fin, true, Bad}], S)),
    falco_ws_deflate:close(D).

%% frame/3: the payload bytes the connection checked as they arrived are
%% not checked again; the rest is, from the state they ended in (here the
%% checked prefix is deliberately not UTF-8, which only a check that
%% skips it accepts), and the pending code point carries over.
checked_prefix_test_() ->
    S = new(),
    {ok, U0} = falco_ws_session:partial_text(text, false, S),
    {ok, U1} = falco_ws_utf8:validate(<<"ab", 16#c3>>, U0),
    Payload = <<16#ff, 16#fe, 16#c3, 16#a9, "z">>,
    [?_assertMatch({ok, [{text, Payload}], _},
                   falco_ws_session:frame(f(text, fin, Payload), {2, U0}, S)),
     ?_assertMatch({ok, [{text, <<"ab", 16#c3, 16#a9>>}], _},
                   falco_ws_session:frame(f(text, fin, <<"ab", 16#c3, 16#a9>>), {3, U1}, S)),
     %% the unchecked rest is still checked
     ?_assertEqual({error, 1007, invalid_utf8},
                   falco_ws_session:frame(f(text, fin, <<"ab", 16#ff>>), {2, U0}, S)),
     ?_assertEqual({error, 1007, invalid_utf8},
                   falco_ws_session:frame(f(text, fin, <<"ab", 16#c3, "z">>), {3, U1}, S)),
     %% without a checked prefix the whole payload is checked
     ?_assertEqual({error, 1007, invalid_utf8},
                   falco_ws_session:frame(f(text, fin, Payload), none, S)),
     %% binary payloads are never checked
     ?_assertMatch({ok, [{binary, Payload}], _},
                   falco_ws_session:frame(f(binary, fin, Payload), none, S))].

%% A message costs its payload, not its fragment count: after 100,000
%% one-byte fragments the session is one binary of 100,000 bytes and a
%% few words (a list of the fragments was about 9 words each, 7 MB).
fragments_cost_payload_test() ->
    S0 = new(infinity),
    {ok, [], S1} = falco_ws_session:frame(f(binary, nofin, <<"a">>), S0),
    Feed = fun(_, S) -> {ok, [], S2} = falco_ws_session:frame(f(continuation, nofin, <<"b">>), S),
                        S2 end,
    S3 = lists:foldl(Feed, S1, lists:seq(1, 99998)),
    ?assert(erts_debug:flat_size(S3) < 100),
    {ok, [{binary, Msg}], _} = falco_ws_session:frame(f(continuation, fin, <<"c">>), S3),
    ?assertEqual(100000, byte_size(Msg)),
    ?assertEqual(<<"a", (binary:copy(<<"b">>, 99998))/binary, "c">>, Msg).

%% `max_fragments' counts a message's data frames (the first and its
%% continuations, control frames between them not): past it, 1009;
%% `max_empty_fragments' counts those with no payload: past it, 1008.
fragment_bounds_test_() ->
    Frags = fun(N, Last) -> [f(text, nofin, <<"a">>)]
                                ++ [f(continuation, nofin, <<"b">>) || _ <- lists:seq(1, N - 2)]
                                ++ [f(ping, fin, <<>>), f(continuation, Last, <<"c">>)] end,
    Empty = fun(N) -> [f(binary, nofin, <<>>)]
                          ++ [f(continuation, nofin, <<>>) || _ <- lists:seq(1, N - 2)]
                          ++ [f(continuation, fin, <<>>)] end,
    [?_assertMatch([{ping, <<>>}, {text, _}], events(Frags(10, fin), new(infinity, 10, 0))),
     ?_assertEqual({error, 1009, too_many_fragments},
                   events(Frags(10, nofin) ++ [f(continuation, fin, <<>>)], new(infinity, 10, 1))),
     %% the count is per message
     ?_assertMatch([{ping, <<>>}, {text, _}, {ping, <<>>}, {text, _}],
                   events(Frags(10, fin) ++ Frags(10, fin), new(infinity, 10, 0))),
     ?_assertEqual([{binary, <<>>}], events(Empty(5), new(infinity, infinity, 5))),
     ?_assertEqual({error, 1008, too_many_empty_fragments},
                   events(Empty(6), new(infinity, infinity, 5))),
     ?_assertEqual([{binary, <<>>}, {binary, <<>>}],
                   events(Empty(5) ++ Empty(5), new(infinity, infinity, 5))),
     %% compressed fragments are counted as they came, before inflating
     ?_assertEqual({error, 1009, too_many_fragments},
                   events([{frame, binary, nofin, true, <<16#f2, 16#48>>},
                           f(continuation, nofin, <<16#cd>>), f(continuation, fin, <<16#c9>>)],
                          deflate_session(infinity, 2)))].

deflate_session(Max, Frags) ->
    {ok, _, P} = falco_ws_deflate:negotiate([<<"permessage-deflate">>], #{}),
    falco_ws_session:new(#{max_message_size => Max, max_fragments => Frags,
                           max_empty_fragments => infinity,
                           deflate => falco_ws_deflate:init(P, #{})}).
