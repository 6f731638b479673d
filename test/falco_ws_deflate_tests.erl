%% EUnit: permessage-deflate (falco_ws_deflate): the negotiation of every
%% parameter (RFC 7692 §7.1), the §7.2.3 examples, context takeover and
%% the inflate limit.
-module(falco_ws_deflate_tests).

-include_lib("eunit/include/eunit.hrl").

neg(Value) -> neg(Value, #{}).
neg(Value, Config) ->
    case falco_ws_deflate:negotiate([Value], Config) of
        {ok, Response, _} -> Response;
        none -> none
    end.

negotiate_test_() ->
    [?_assertEqual(<<"permessage-deflate">>, neg(<<"permessage-deflate">>)),
     ?_assertEqual(<<"permessage-deflate">>, neg(<<"Permessage-Deflate">>)),
     ?_assertEqual(none, neg(<<"x-webkit-deflate-frame">>)),
     ?_assertEqual(<<"permessage-deflate; client_max_window_bits=15">>,
                   neg(<<"permessage-deflate; client_max_window_bits">>)),
     ?_assertEqual(<<"permessage-deflate; client_max_window_bits=10">>,
                   neg(<<"permessage-deflate; client_max_window_bits">>,
                       #{client_max_window_bits => 10})),
     ?_assertEqual(<<"permessage-deflate; client_max_window_bits=9">>,
                   neg(<<"permessage-deflate; client_max_window_bits=9">>)),
     ?_assertEqual(<<"permessage-deflate; client_max_window_bits=8">>,
                   neg(<<"permessage-deflate; client_max_window_bits=\"8\"">>)),
     ?_assertEqual(<<"permessage-deflate; server_max_window_bits=10">>,
                   neg(<<"permessage-deflate; server_max_window_bits=10">>)),
     ?_assertEqual(<<"permessage-deflate; server_max_window_bits=12">>,
                   neg(<<"permessage-deflate">>, #{server_max_window_bits => 12})),
     %% §7.1.2.1: an offered server_max_window_bits is answered, 15 too
     ?_assertEqual(<<"permessage-deflate; server_max_window_bits=15">>,
                   neg(<<"permessage-deflate; server_max_window_bits=15">>)),
     ?_assertEqual(<<"permessage-deflate; server_max_window_bits=12">>,
                   neg(<<"permessage-deflate; server_max_window_bits=14">>,
                       #{server_max_window_bits => 12})),
     ?_assertEqual(<<"permessage-deflate; server_no_context_takeover; client_no_context_takeover">>,
                   neg(<<"permessage-deflate; client_no_context_takeover; "
                         "server_no_context_takeover">>)),
     ?_assertEqual(<<"permessage-deflate; server_no_context_takeover">>,
                   neg(<<"permessage-deflate">>, #{server_no_context_takeover => true})),
     %% declined: unknown, repeated, valueless or out-of-range parameters
     ?_assertEqual(none, neg(<<"permessage-deflate; foo">>)),
     ?_assertEqual(none, neg(<<"permessage-deflate; server_no_context_takeover=1">>)),
     ?_assertEqual(none, neg(<<"permessage-deflate; server_max_window_bits">>)),
     ?_assertEqual(none, neg(<<"permessage-deflate; server_max_window_bits=16">>)),
     ?_assertEqual(none, neg(<<"permessage-deflate; server_max_window_bits=08">>)),
     ?_assertEqual(none, neg(<<"permessage-deflate; client_max_window_bits=7">>)),
     ?_assertEqual(none, neg(<<"permessage-deflate; client_max_window_bits=abc">>)),
     ?_assertEqual(none, neg(<<"permessage-deflate; client_no_context_takeover; "
                               "client_no_context_takeover">>)),
     %% zlib cannot deflate a raw stream with a 256-byte window
     ?_assertEqual(none, neg(<<"permessage-deflate; server_max_window_bits=8">>)),
     %% the first acceptable offer wins
     ?_assertEqual(<<"permessage-deflate; server_max_window_bits=9">>,
                   neg(<<"permessage-deflate; server_max_window_bits=8, "
                         "permessage-deflate; server_max_window_bits=9, permessage-deflate">>))].

state(Params) ->
    {ok, _, P} = falco_ws_deflate:negotiate([Params], #{}),
    falco_ws_deflate:init(P, #{}).

inflate(Data, Fin, St) ->
    {ok, Out} = falco_ws_deflate:inflate(Data, Fin, infinity, St),
    iolist_to_binary(Out).

%% RFC 7692 §7.2.3.1, §7.2.3.2: "Hello", then again with the context kept.
rfc_examples_test() ->
    St = state(<<"permessage-deflate">>),
    ?assertEqual(<<"Hello">>, inflate(<<16#f2, 16#48, 16#cd, 16#c9, 16#c9, 16#07, 16#00>>, fin, St)),
    ?assertEqual(<<"Hello">>, inflate(<<16#f2, 16#00, 16#11, 16#00, 16#00>>, fin, St)),
    falco_ws_deflate:close(St),
    %% §7.2.3.1, fragmented: the first fragment need not inflate whole
    St2 = state(<<"permessage-deflate">>),
    A = inflate(<<16#f2, 16#48, 16#cd>>, nofin, St2),
    ?assertEqual(<<"Hello">>, <<A/binary, (inflate(<<16#c9, 16#c9, 16#07, 16#00>>, fin, St2))/binary>>),
    falco_ws_deflate:close(St2).

%% §7.2.3.4: a message ending in a final block (BFINAL); the client's next
%% message starts a new stream, and is not lost (it inflated to nothing).
bfinal_test() ->
    St = state(<<"permessage-deflate">>),
    ?assertEqual(<<"Hello">>, inflate(<<16#f3, 16#48, 16#cd, 16#c9, 16#c9, 16#07, 16#00, 16#00>>, fin, St)),
    ?assertEqual(<<"Hello">>, inflate(<<16#f2, 16#48, 16#cd, 16#c9, 16#c9, 16#07, 16#00>>, fin, St)),
    ?assertEqual(<<"Hello">>, inflate(<<16#f2, 16#00, 16#11, 16#00, 16#00>>, fin, St)),
    ?assertEqual(<<"Hello">>, inflate(<<16#f3, 16#48, 16#cd, 16#c9, 16#c9, 16#07, 16#00, 16#00>>, fin, St)),
    ?assertEqual(<<"Hello">>, inflate(<<16#f2, 16#48, 16#cd, 16#c9, 16#c9, 16#07, 16#00>>, fin, St)),
    falco_ws_deflate:close(St).

round_trip_test_() ->
    [fun() ->
             St = state(Offer),
             [?assertEqual(M, inflate(falco_ws_deflate:deflate(M, St), fin, St))
              || M <- [<<>>, <<"a">>, binary:copy(<<"hello ">>, 1000), crypto:strong_rand_bytes(5000),
                       <<"a">>, binary:copy(<<"hello ">>, 1000)]],
             falco_ws_deflate:close(St)
     end || Offer <- [<<"permessage-deflate">>,
                      <<"permessage-deflate; server_no_context_takeover; client_no_context_takeover">>,
                      <<"permessage-deflate; server_max_window_bits=9; client_max_window_bits=9">>]].

%% An empty message after another (zlib has nothing to flush then and
%% writes nothing) is the empty stored block of §7.2.3.6, 0x00: it used
%% to crash the connection (found by falco_ws_prop:prop_deflate_round_trip).
empty_after_message_test() ->
    St = state(<<"permessage-deflate">>),
    ?assertEqual(<<"a">>, inflate(falco_ws_deflate:deflate(<<"a">>, St), fin, St)),
    ?assertEqual(<<0>>, falco_ws_deflate:deflate(<<>>, St)),
    ?assertEqual(<<0>>, falco_ws_deflate:deflate(<<>>, St)),
    ?assertEqual(<<>>, inflate(<<0>>, fin, St)),
    ?assertEqual(<<"b">>, inflate(falco_ws_deflate:deflate(<<"b">>, St), fin, St)),
    falco_ws_deflate:close(St).

%% Without context takeover every message stands alone.
no_context_takeover_test() ->
    St = state(<<"permessage-deflate; server_no_context_takeover">>),
    A = falco_ws_deflate:deflate(<<"hello hello hello">>, St),
    ?assertEqual(A, falco_ws_deflate:deflate(<<"hello hello hello">>, St)),
    falco_ws_deflate:close(St).

%% 10 MB of zeros deflate to under 100 KB; inflating stops at the limit.
bomb_test() ->
    St = state(<<"permessage-deflate">>),
    Bomb = falco_ws_deflate:deflate(binary:copy(<<0>>, 10000000), St),
    ?assert(byte_size(Bomb) < 100000),
    ?assertEqual({error, too_big}, falco_ws_deflate:inflate(Bomb, fin, 1000000, St)),
    falco_ws_deflate:close(St).

corrupt_test() ->
    St = state(<<"permessage-deflate">>),
    ?assertEqual({error, corrupt}, falco_ws_deflate:inflate(<<255, 255, 255, 255>>, fin, 1000, St)),
    falco_ws_deflate:close(St).
