%% EUnit: incremental UTF-8 validation (falco_ws_utf8): valid text split at
%% every byte, and the "fail fast" rule: an invalid sequence is refused at
%% the first byte that no continuation could make valid.
-module(falco_ws_utf8_tests).

-include_lib("eunit/include/eunit.hrl").

whole(Bin) ->
    case falco_ws_utf8:validate(Bin, falco_ws_utf8:new()) of
        {ok, S} -> falco_ws_utf8:complete(S);
        {error, invalid_utf8} -> false
    end.

%% Fed one byte at a time: `false' at the first refused byte, else
%% whether it ended complete.
bytewise(Bin) ->
    bytewise(Bin, falco_ws_utf8:new(), 0).

bytewise(<<>>, S, _) ->
    falco_ws_utf8:complete(S);
bytewise(<<B, Rest/binary>>, S, I) ->
    case falco_ws_utf8:validate(<<B>>, S) of
        {ok, S1} -> bytewise(Rest, S1, I + 1);
        {error, invalid_utf8} -> {refused_at, I}
    end.

valid_test_() ->
    Texts = [<<>>, <<"hello">>, <<"κόσμε"/utf8>>, <<"☃ 𝄞 é"/utf8>>,
             <<16#7f>>, <<16#c2, 16#80>>, <<16#df, 16#bf>>, <<16#e0, 16#a0, 16#80>>,
             <<16#ed, 16#9f, 16#bf>>, <<16#ee, 16#80, 16#80>>, <<16#ef, 16#bf, 16#bf>>,
             <<16#f0, 16#90, 16#80, 16#80>>, <<16#f4, 16#8f, 16#bf, 16#bf>>],
    [[?_assert(whole(T)), ?_assert(bytewise(T))] || T <- Texts].

%% Split anywhere, in two pieces, the result is the same.
split_test() ->
    T = <<"aé☃𝄞b"/utf8>>,
    [begin
         <<A:I/binary, B/binary>> = T,
         {ok, S1} = falco_ws_utf8:validate(A, falco_ws_utf8:new()),
         {ok, S2} = falco_ws_utf8:validate(B, S1),
         ?assert(falco_ws_utf8:complete(S2))
     end || I <- lists:seq(0, byte_size(T))].

incomplete_at_end_test_() ->
    [?_assertNot(whole(<<"a", 16#e2, 16#82>>)),
     ?_assertNot(whole(<<16#f0, 16#9d>>))].

%% Each is refused at the byte given (0-based), before the rest arrives.
fail_fast_test_() ->
    Cases = [{<<16#80>>, 0}, {<<16#bf>>, 0}, {<<16#c0, 16#80>>, 0}, {<<16#c1, 16#bf>>, 0},
             {<<16#f5, 16#80, 16#80, 16#80>>, 0}, {<<16#ff>>, 0},
             {<<16#e0, 16#80, 16#80>>, 1},             % overlong 3-byte
             {<<16#ed, 16#a0, 16#80>>, 1},             % surrogate U+D800
             {<<16#f0, 16#80, 16#80, 16#80>>, 1},      % overlong 4-byte
             {<<16#f4, 16#90, 16#80, 16#80>>, 1},      % above U+10FFFF
             {<<16#e2, 16#41>>, 1}, {<<16#f0, 16#90, 16#41>>, 2},
             {<<"abc", 16#ce, 16#ba, 16#e1, 16#bd, 16#b9, 16#cf, 16#83, 16#ce, 16#bc, 16#ce,
                16#b5, 16#ed, 16#a0, 16#80, "edited">>, 15}],
    [?_assertEqual({refused_at, I}, bytewise(Bin)) || {Bin, I} <- Cases] ++
    [?_assertNot(whole(Bin)) || {Bin, _} <- Cases].
