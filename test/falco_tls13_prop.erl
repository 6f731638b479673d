%% PropEr properties for falco's TLS 1.3 handshake: arbitrary bytes and
%% mutated ClientHellos (valid ones from random options, then bytes
%% flipped, cut, inserted or a length field changed) never make
%% falco_tls13_msg or falco_tls13_server raise, and every refusal names an
%% alert with a code; a valid ClientHello fed in random pieces gives what
%% it gives whole; random events after a good ClientHello never make the
%% machine raise. Run from EUnit, 300 cases each.
-module(falco_tls13_prop).
-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-define(NUMTESTS, 300).
-define(S, falco_tls13_server).
-define(T, falco_test_tls13).

properties_test_() ->
    [{atom_to_list(P),
      {timeout, 120,
       ?_assert(proper:quickcheck(?MODULE:P(), [{numtests, falco_fuzz_prop:numtests(?MODULE, P, ?NUMTESTS)},
                                                {to_file, user}]))}}
     || P <- [prop_client_hello_fuzz, prop_mutated_hello, prop_pieces, prop_machine_total]].

%% -- generators ---------------------------------------------------------------

server_opts() ->
    #{credentials => creds(), quic => true, alpn => [<<"h3">>], transport_params => <<1>>,
      random => fun(N) -> <<0:(N * 8)>> end,
      keygen => fun(G) -> crypto:generate_key(ecdh, G, <<5:256>>) end}.

creds() ->
    ?T:creds(ecdsa).

group() -> elements([16#1d, 16#17, 16#18, 16#1e, 16#11ec, 16#0a0a]).

share(16#1d) -> element(1, crypto:generate_key(ecdh, x25519, <<3:256>>));
share(16#17) -> element(1, crypto:generate_key(ecdh, secp256r1, <<3:256>>));
share(16#18) -> element(1, crypto:generate_key(ecdh, secp384r1, <<3:384>>));
share(_) -> <<1, 2, 3, 4>>.

hello_opts() ->
    ?LET({Groups, NShares, Suites, Sigs, Alpn, Sid, Tp, Extra},
         {non_empty(list(group())), range(0, 3),
          non_empty(list(elements([16#1301, 16#1302, 16#1303, 16#1304, 16#c02b, 16#0a0a]))),
          list(elements([16#0403, 16#0503, 16#0804, 16#0807, 16#0401])),
          elements([none, [<<"h3">>], [<<"h2">>, <<"h3">>], [<<"x">>]]),
          elements([<<>>, <<1:256>>]), elements([none, <<1, 2>>]),
          list({range(0, 70), binary(4)})},
         begin
             Gs = lists:usort(Groups),
             #{groups => Gs, shares => [{G, share(G)} || G <- lists:sublist(Gs, NShares)],
               suites => Suites, sig_algs => Sigs, alpn => Alpn, session_id => Sid,
               transport_params => Tp,
               extra => [?T:ext(T, B) || {T, B} <- lists:ukeysort(1, Extra),
                                         not lists:member(T, [0, 10, 13, 16, 43, 45, 51, 57])]}
         end).

hello() ->
    ?LET(Opts, hello_opts(), ?T:client_hello(Opts)).

mutation() ->
    oneof([{flip, nat(), range(1, 255)}, {cut, nat()}, {insert, nat(), binary()},
           {delete, nat(), range(1, 8)}]).

mutate(Bin, []) ->
    Bin;
mutate(Bin, [M | Ms]) when byte_size(Bin) > 0 ->
    mutate(apply_mutation(Bin, M), Ms);
mutate(Bin, _) ->
    Bin.

apply_mutation(Bin, {flip, At, X}) ->
    P = At rem byte_size(Bin),
    <<A:P/binary, B, C/binary>> = Bin,
    <<A/binary, (B bxor X), C/binary>>;
apply_mutation(Bin, {cut, At}) ->
    binary:part(Bin, 0, At rem byte_size(Bin));
apply_mutation(Bin, {insert, At, Ins}) ->
    P = At rem byte_size(Bin),
    <<A:P/binary, C/binary>> = Bin,
    <<A/binary, Ins/binary, C/binary>>;
apply_mutation(Bin, {delete, At, N}) ->
    P = At rem byte_size(Bin),
    Len = min(N, byte_size(Bin) - P),
    <<A:P/binary, _:Len/binary, C/binary>> = Bin,
    <<A/binary, C/binary>>.

%% A mutated hello, with its message length made right again half the time
%% so the mutation reaches the parser rather than the framing.
mutated_hello() ->
    ?LET({H, Ms, Fix}, {hello(), list(mutation()), boolean()},
         begin
             M = mutate(H, Ms),
             case {Fix, M} of
                 {true, <<T, _:24, Body/binary>>} -> <<T, (byte_size(Body)):24, Body/binary>>;
                 _ -> M
             end
         end).

%% -- properties ---------------------------------------------------------------

refusal({error, Alert, _}) ->
    is_integer(falco_tls13_alert:code(Alert));
refusal(_) ->
    false.

prop_client_hello_fuzz() ->
    ?FORALL(Bin, oneof([binary(), ?LET(H, hello(), begin <<1, _:24, B/binary>> = H, B end)]),
            case falco_tls13_msg:client_hello(Bin) of
                {ok, #{}} -> true;
                Other -> refusal(Other)
            end).

prop_mutated_hello() ->
    ?FORALL(Bin, mutated_hello(),
            case ?S:handshake_data(initial, Bin, ?S:new(server_opts())) of
                {ok, _, Actions} -> is_list(Actions);
                Other -> refusal(Other)
            end).

%% ECDSA signatures are random: compared up to the encrypted flight.
prop_pieces() ->
    ?FORALL({H, Cuts}, {hello(), list(nat())},
            begin
                Whole = ?S:handshake_data(initial, H, ?S:new(server_opts())),
                Pieces = in_pieces(H, lists:usort([C rem (byte_size(H) + 1) || C <- Cuts])),
                Split = feed(Pieces, ?S:new(server_opts()), []),
                comparable(Whole) =:= comparable(Split)
            end).

in_pieces(Bin, Cuts) ->
    {Pieces, Last, _} = lists:foldl(fun(C, {Acc, Rest, At}) ->
                                            <<P:(C - At)/binary, R/binary>> = Rest,
                                            {[P | Acc], R, C}
                                    end, {[], Bin, 0}, Cuts),
    lists:reverse([Last | Pieces]).

feed([], S, Acc) ->
    {ok, S, Acc};
feed([P | Ps], S, Acc) ->
    case ?S:handshake_data(initial, P, S) of
        {ok, S1, A} -> feed(Ps, S1, Acc ++ A);
        Error -> Error
    end.

comparable({ok, S, Actions}) ->
    {ok, maps:without([phase], ?S:info(S)),
     lists:takewhile(fun({send, handshake, _}) -> false; (_) -> true end, Actions)};
comparable(Error) ->
    Error.

prop_machine_total() ->
    Event = oneof([{elements([initial, handshake, application]), binary()},
                   {handshake, ?LET(B, binary(32), <<20, 0, 0, 32, B/binary>>)},
                   {initial, mutated_hello()}]),
    ?FORALL({H, Events}, {hello(), list(Event)},
            total(?S:handshake_data(initial, H, ?S:new(server_opts())), Events)).

total({ok, S, _}, [{Level, Bin} | More]) ->
    total(?S:handshake_data(Level, Bin, S), More);
total({ok, _, Actions}, []) ->
    is_list(Actions);
total(Other, _) ->
    refusal(Other).
