%% EUnit tests of falco_quic_token (address validation and stateless reset
%% tokens) and falco_quic_retry (the holder's Retry, INVALID_TOKEN and
%% stateless reset answers), hostile tokens included.
-module(falco_quic_token_tests).

-include_lib("eunit/include/eunit.hrl").

-define(T, falco_quic_token).
-define(R, falco_quic_retry).
-define(PEER, {{127, 0, 0, 1}, 40000}).
-define(NOW, 1_800_000_000_000).
-define(HOUR, 3_600_000).

retry_token_test() ->
    S = ?T:new(),
    Odcid = crypto:strong_rand_bytes(8),
    Token = ?T:retry(S, ?PEER, Odcid, ?NOW),
    ?assertEqual({retry, Odcid}, ?T:check(S, Token, ?PEER, ?NOW + 5000)),
    %% another port, another address, expired, another listener's
    ?assertEqual({invalid, retry}, ?T:check(S, Token, {{127, 0, 0, 1}, 40001}, ?NOW)),
    ?assertEqual({invalid, retry}, ?T:check(S, Token, {{127, 0, 0, 2}, 40000}, ?NOW)),
    ?assertEqual({invalid, retry}, ?T:check(S, Token, ?PEER, ?NOW + 10001)),
    ?assertEqual({invalid, retry}, ?T:check(?T:new(), Token, ?PEER, ?NOW)),
    %% every single bit flipped is refused
    Bits = bit_size(Token),
    [?assertMatch({invalid, _}, ?T:check(S, flip(Token, I), ?PEER, ?NOW)) || I <- lists:seq(0, Bits - 1)],
    %% two tokens for the same client differ (a random nonce each)
    ?assertNotEqual(Token, ?T:retry(S, ?PEER, Odcid, ?NOW)).

new_token_test() ->
    S = ?T:new(),
    Token = ?T:new_token(S, {127, 0, 0, 1}, ?NOW),
    %% any port of the address, for an hour
    ?assertEqual(new_token, ?T:check(S, Token, {{127, 0, 0, 1}, 5555}, ?NOW + ?HOUR - 1)),
    ?assertEqual({invalid, new_token}, ?T:check(S, Token, {{127, 0, 0, 1}, 5555}, ?NOW + ?HOUR + 1)),
    ?assertEqual({invalid, new_token}, ?T:check(S, Token, {{10, 0, 0, 1}, 5555}, ?NOW)),
    ?assertEqual({invalid, new_token},
                 ?T:check(S, Token, {{0, 0, 0, 0, 0, 0, 0, 1}, 5555}, ?NOW)),
    %% the kinds cannot be swapped: a NEW_TOKEN token's kind byte set to
    %% Retry's no longer authenticates
    <<K:7, P:1, Rest/binary>> = Token,
    ?assertEqual(2, K),
    ?assertEqual({invalid, retry}, ?T:check(S, <<1:7, P:1, Rest/binary>>, ?PEER, ?NOW)).

%% The key rotates every hour; the previous hour's still opens, older
%% ones do not (the age limits aside: a NEW_TOKEN made in the last
%% millisecond of an hour is valid in the next).
rotation_test() ->
    S = ?T:new(),
    Start = (?NOW div ?HOUR) * ?HOUR,
    Token = ?T:new_token(S, {127, 0, 0, 1}, Start + ?HOUR - 1),
    ?assertEqual(new_token, ?T:check(S, Token, ?PEER, Start + ?HOUR + 1000)),
    Old = ?T:new_token(S, {127, 0, 0, 1}, Start - ?HOUR),
    ?assertEqual({invalid, new_token}, ?T:check(S, Old, ?PEER, Start + ?HOUR)).

garbage_test() ->
    S = ?T:new(),
    [?assertEqual({invalid, unknown}, ?T:check(S, B, ?PEER, ?NOW))
     || B <- [<<>>, <<0>>, <<1:7, 0:1, 1:96>>, crypto:strong_rand_bytes(7),
              <<7:7, 0:1, 0:800>>]],
    ?assertMatch({invalid, _}, ?T:check(S, <<1:7, 0:1, (crypto:strong_rand_bytes(60))/binary>>,
                                        ?PEER, ?NOW)).

reset_token_test() ->
    S = ?T:new(),
    A = ?T:reset_token(S, <<1:64>>),
    ?assertEqual(16, byte_size(A)),
    ?assertEqual(A, ?T:reset_token(S, <<1:64>>)),
    ?assertNotEqual(A, ?T:reset_token(S, <<2:64>>)),
    ?assertNotEqual(A, ?T:reset_token(?T:new(), <<1:64>>)).

flip(Bin, I) ->
    <<A:I/bits, B:1, C/bits>> = Bin,
    <<A:I/bits, (1 - B):1, C/bits>>.

%% -- falco_quic_retry --------------------------------------------------------

info(Token) ->
    #{dcid => <<"origdcid">>, scid => <<"clientci">>, token => Token}.

modes_test() ->
    S = ?T:new(),
    ?assertMatch({admit, #{}}, ?R:initial(never, 5000, S, ?PEER, info(<<>>), ?NOW)),
    ?assertMatch({admit, #{}}, ?R:initial({threshold, 10}, 9, S, ?PEER, info(<<>>), ?NOW)),
    ?assertMatch({retry, _}, ?R:initial({threshold, 10}, 10, S, ?PEER, info(<<>>), ?NOW)),
    ?assertMatch({retry, _}, ?R:initial(always, 0, S, ?PEER, info(<<>>), ?NOW)),
    %% the modes are h3_retry's values (falco_opts validates them)
    Valid = fun(M) -> element(1, falco_opts:validate(#{handler => fun(_) -> ok end,
                                                         h3_retry => M})) =:= ok end,
    ?assert(Valid({threshold, 0})),
    [?assertNot(Valid(M)) || M <- [{threshold, -1}, sometimes, {threshold, x}]].

%% RFC 9000 §17.2.5, RFC 9001 §5.8: the Retry goes to the client's SCID,
%% has a fresh SCID of 8 bytes, a token, and the integrity tag of the
%% original DCID; the Initial that comes back with its token is admitted
%% with the parameters of §7.3 and its address validated.
retry_round_trip_test() ->
    S = ?T:new(),
    {retry, Retry} = ?R:initial(always, 0, S, ?PEER, info(<<>>), ?NOW),
    ?assert(byte_size(Retry) < 1200),
    {ok, P = #{type := retry, dcid := <<"clientci">>, scid := RetryScid, token := Token}, <<>>} =
        falco_quic_packet:parse(Retry, 0),
    ?assertEqual(8, byte_size(RetryScid)),
    ?assert(falco_quic_packet:retry_valid(P, <<"origdcid">>)),
    Back = #{dcid => RetryScid, scid => <<"clientci">>, token => Token},
    ?assertEqual({admit, #{odcid => <<"origdcid">>, retry_scid => RetryScid, validated => true}},
                 ?R:initial(always, 0, S, ?PEER, Back, ?NOW + 100)),
    %% from another port, or too late: INVALID_TOKEN (RFC 9000 §8.1.3)
    {invalid_token, Close} = ?R:initial(always, 0, S, {{127, 0, 0, 1}, 1}, Back, ?NOW),
    ?assertMatch({invalid_token, _}, ?R:initial(never, 0, S, ?PEER, Back, ?NOW + 60000)),
    ?assertEqual([{connection_close, invalid_token, 0, <<>>}], close_frames(RetryScid, Close)).

%% A NEW_TOKEN token skips the Retry; a bad one is as no token.
new_token_skips_retry_test() ->
    S = ?T:new(),
    Token = ?T:new_token(S, {127, 0, 0, 1}, ?NOW),
    ?assertEqual({admit, #{validated => true}},
                 ?R:initial(always, 0, S, {{127, 0, 0, 1}, 9}, info(Token), ?NOW)),
    ?assertMatch({retry, _}, ?R:initial(always, 0, S, ?PEER, info(Token), ?NOW + 2 * ?HOUR)),
    ?assertMatch({admit, #{}}, ?R:initial(never, 0, S, ?PEER, info(<<"garbage">>), ?NOW)),
    ?assertMatch({retry, _}, ?R:initial(always, 0, S, ?PEER, info(<<"garbage">>), ?NOW)).

close_frames(Dcid, Datagram) ->
    {Client, _} = falco_quic_keys:initial(Dcid),
    {_, Server} = {Client, element(2, falco_quic_keys:initial(Dcid))},
    {[P], _} = falco_quic_packet:split(Datagram, 8),
    {ok, _, Payload} = falco_quic_packet:unprotect(P, Server, none),
    {ok, Frames} = falco_quic_frame:parse(Payload, #{peer => server}),
    Frames.

%% RFC 9000 §10.3: a reset is a short header, shorter than what it
%% answers (at most 43 bytes), at least 21 bytes, ending with the
%% connection ID's token; none for 21 bytes or fewer, none for our own
%% reset coming back.
stateless_reset_test() ->
    S = ?T:new(),
    Cid = <<"unknown1">>,
    Token = ?T:reset_token(S, Cid),
    [?assertEqual({drop, too_small}, ?R:stateless_reset(<<16#40, 0:(8 * (N - 1))>>, Cid, S))
     || N <- [1, 10, 21]],
    [begin
         {reset, R} = ?R:stateless_reset(<<16#40, Cid/binary, 0:(8 * (N - 9))>>, Cid, S),
         ?assertEqual(erlang:min(N - 1, 43), byte_size(R)),
         ?assert(byte_size(R) >= 21),
         ?assertMatch(<<0:1, 1:1, _/bits>>, R),
         ?assertEqual(Token, binary:part(R, byte_size(R), -16))
     end || N <- [22, 30, 43, 44, 1200]],
    ?assertEqual({drop, reset_loop},
                 ?R:stateless_reset(<<16#40, Cid/binary, 0:80, Token/binary>>, Cid, S)).
