%% Fuzzing the pure codecs: the shared mutator and the `make fuzz' runner.
%%
%% Each codec's robustness property lives with the codec's other
%% properties (its generators are there); this module gives them their
%% inputs and runs them at a large count:
%%
%% - `input/2': arbitrary bytes, bytes biased towards what the codec
%%   treats specially, or (most often) a valid encoding mutated by one to
%%   four of: a bit flipped, a byte set to a delimiter or an extreme
%%   value, bytes inserted, a span deleted or duplicated, a cut.
%% - `split/2' and `bytes_of/1': the same input cut at random points or
%%   into single bytes, for the codecs that take input in pieces.
%% - `codecs/0': the fuzz properties, per codec; `main/0' runs each of
%%   them FUZZ_N times (default 100,000) and prints, per codec, the inputs
%%   run and the time taken (wall clock, and the CPU time the VM used,
%%   which a loaded machine affects less). `make fuzz' calls it; EUnit runs
%%   the same properties 1000 times each from their own modules
%%   (`numtests/3').
-module(falco_fuzz_prop).
-include_lib("proper/include/proper.hrl").

-export([input/2, mutated/1, split/2, bytes_of/1, safe/1]).
-export([codecs/0, numtests/3, main/0, run/1]).

-define(DEFAULT_N, 100000).
-define(EUNIT_N, 1000).

%% -- inputs -------------------------------------------------------------------

%% Fuzz input for a codec: its valid encodings (Valid, a generator of
%% binaries) mutated, its Tricky bytes, or arbitrary bytes.
input(Valid, Tricky) ->
    frequency([{1, binary()}, {2, Tricky}, {5, mutated(Valid)}]).

mutated(Valid) ->
    ?LET({Bin, Ops}, {Valid, ?LET(N, range(1, 4), vector(N, op()))},
         lists:foldl(fun mutate/2, Bin, Ops)).

op() ->
    oneof([{flip, nat(), range(0, 7)},
           {set, nat(), special_byte()},
           {insert, nat(), oneof([?LET(B, special_byte(), <<B>>), binary()])},
           {delete, nat(), range(1, 8)},
           {duplicate, nat(), range(1, 32)},
           {cut, nat()}]).

%% Delimiters, controls and the extremes, or any byte.
special_byte() ->
    oneof([range(0, 255),
           elements([0, $\r, $\n, $\s, $\t, $:, $;, $,, $=, $", $%, $-, $/, $\\, $?,
                     16#7f, 16#80, 16#ff])]).

mutate(Op, <<>>) ->
    case Op of
        {insert, _, Bytes} -> Bytes;
        {set, _, B} -> <<B>>;
        _ -> <<>>
    end;
mutate(Op, Bin) ->
    Size = byte_size(Bin),
    Pos = element(2, Op) rem Size,
    <<H:Pos/binary, C, T/binary>> = Bin,
    case Op of
        {flip, _, Bit} -> <<H/binary, (C bxor (1 bsl Bit)), T/binary>>;
        {set, _, B} -> <<H/binary, B, T/binary>>;
        {insert, _, Bytes} -> <<H/binary, Bytes/binary, C, T/binary>>;
        {delete, _, N} -> <<H/binary, (binary:part(Bin, min(Size, Pos + N), max(0, Size - Pos - N)))/binary>>;
        {duplicate, _, N} ->
            Span = binary:part(Bin, Pos, min(N, Size - Pos)),
            <<H/binary, Span/binary, Span/binary, (binary:part(Bin, Pos + byte_size(Span), Size - Pos - byte_size(Span)))/binary>>;
        {cut, _} -> H
    end.

%% Bin cut at the given points (taken modulo its size), in order.
split(Bin, Points) ->
    Size = byte_size(Bin),
    Cuts = lists:usort([P rem (Size + 1) || P <- Points] ++ [0, Size]),
    pieces(Bin, Cuts).

pieces(Bin, [A, B | T]) -> [binary:part(Bin, A, B - A) | pieces(Bin, [B | T])];
pieces(_, _) -> [].

bytes_of(Bin) -> [<<B>> || <<B>> <= Bin].

%% PropEr 1.2 (the Debian package) calls erlang:get_stacktrace/0, gone since
%% OTP 23, when a property raises: a property that calls a codec reports the
%% exception itself and fails.
safe(Fun) ->
    try Fun()
    catch Class:Reason:Stack ->
            io:format(user, "~nproperty raised ~p:~p~n~p~n", [Class, Reason, Stack]),
            false
    end.

%% -- the runner ---------------------------------------------------------------

%% The fuzz properties of each codec, {Module, Property}.
codecs() ->
    [{falco_http1, [{falco_http1_prop, prop_parse_fuzz}]},
     {falco_http1_chunked, [{falco_http1_prop, prop_chunked_fuzz}]},
     {falco_http2_frame, [{falco_http2_prop, prop_parse_fuzz}]},
     {falco_hpack, [{falco_hpack_prop, prop_decode_fuzz}]},
     {falco_http3_frame, [{falco_http3_prop, prop_frame_fuzz}]},
     {falco_qpack, [{falco_http3_prop, prop_qpack_fuzz}]},
     {falco_multipart, [{falco_app_prop, prop_multipart_fuzz}]},
     {falco_qs, [{falco_codecs_prop, prop_qs_fuzz}]},
     {falco_cookie, [{falco_codecs_prop, prop_cookie_fuzz}]},
     {falco_uri, [{falco_codecs_prop, prop_uri_fuzz}, {falco_codecs_prop, prop_split_path_safe},
                 {falco_codecs_prop, prop_remove_dot_segments}]},
     {falco_json, [{falco_codecs_prop, prop_json_fuzz}]},
     {falco_range, [{falco_app_prop, prop_range_fuzz}]},
     {falco_proxy_protocol, [{falco_proxy_protocol_prop, prop_fuzz}]},
     {falco_ws_frame, [{falco_ws_prop, prop_parse_fuzz}]},
     {falco_quic_packet, [{falco_quic_packet_prop, prop_parse_fuzz}]},
     {falco_quic_frame, [{falco_quic_frame_prop, prop_parse_fuzz}]},
     {falco_quic_tparams, [{falco_quic_frame_prop, prop_tparams_fuzz}]},
     {falco_quic_machine, [{falco_quic_machine_prop, prop_datagram_fuzz}]},
     {falco_tls13_msg, [{falco_tls13_prop, prop_client_hello_fuzz}, {falco_tls13_prop, prop_mutated_hello}]}].

%% EUnit's count for a property of Module: 1000 for a fuzz property,
%% Default for the others.
numtests(Module, Prop, Default) ->
    case lists:member({Module, Prop}, lists:append([Ps || {_, Ps} <- codecs()])) of
        true -> ?EUNIT_N;
        false -> Default
    end.

%% `make fuzz': FUZZ_N inputs per codec (default 100,000), FUZZ_CODECS a
%% comma-separated subset (default all). Halts 0 when every property holds.
main() ->
    N = case os:getenv("FUZZ_N") of
            false -> ?DEFAULT_N;
            S -> list_to_integer(S)
        end,
    Only = case os:getenv("FUZZ_CODECS") of
               false -> all;
               "" -> all;
               C -> [list_to_atom(X) || X <- string:lexemes(C, ",")]
           end,
    Codecs = [X || {Codec, _} = X <- codecs(), Only =:= all orelse lists:member(Codec, Only)],
    halt(case run(Codecs, N) of ok -> 0; error -> 1 end).

%% Runs every codec's properties N times each; prints a line per codec.
run(N) ->
    run(codecs(), N).

run(Codecs, N) ->
    io:format("fuzz: ~b inputs per property~n", [N]),
    Results = [run_codec(Codec, Props, N) || {Codec, Props} <- Codecs],
    Total = lists:sum([T || {_, T} <- Results]),
    Failed = [Codec || {{failed, Codec}, _} <- Results],
    io:format("fuzz: ~.1f s in all, ~s~n",
              [Total / 1000, case Failed of
                                 [] -> "every codec held";
                                 _ -> io_lib:format("FAILED: ~p", [Failed])
                             end]),
    case Failed of [] -> ok; _ -> error end.

run_codec(Codec, Props, N) ->
    T0 = erlang:monotonic_time(millisecond),
    {Cpu0, _} = statistics(runtime),
    Ok = lists:all(fun({M, P}) ->
                           proper:quickcheck(M:P(), [{numtests, N}, quiet])
                               orelse begin
                                          io:format("~s: ~p:~p failed on (shrunk)~n~p~n",
                                                    [Codec, M, P, proper:counterexample()]),
                                          false
                                      end
                   end, Props),
    Ms = erlang:monotonic_time(millisecond) - T0,
    {Cpu, _} = statistics(runtime),
    io:format("~-20s ~8b inputs ~8.1f s (~.1f s CPU)  ~s~n",
              [Codec, N * length(Props), Ms / 1000, (Cpu - Cpu0) / 1000,
               case Ok of true -> "ok"; false -> "FAILED" end]),
    {case Ok of true -> {ok, Codec}; false -> {failed, Codec} end, Ms}.
