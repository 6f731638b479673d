%% PropEr properties for falco_quic_frame and falco_quic_tparams: what the
%% builders write parses back to the same frames (runs of PADDING joined);
%% ACK ranges round-trip, and the bound keeps the newest; stream_fit/5
%% builds the largest frame its budget allows; arbitrary and mutated
%% payloads never make the parser raise, and every frame it returns builds
%% and parses back to itself; the packet-type check made while parsing
%% agrees with check/3; transport parameters round-trip, and
%% arbitrary and mutated blobs never make decode/1 or from_client/2 raise.
%% Run from EUnit, 500 cases each (the fuzz properties the count
%% falco_fuzz_prop:numtests/3 gives them).
-module(falco_quic_frame_prop).
-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-define(NUMTESTS, 500).
-define(F, falco_quic_frame).
-define(T, falco_quic_tparams).
-define(MAX, 16#3fffffffffffffff).
%% Everything any frame needs to parse: sent by a server, DATAGRAM on, no
%% ACK range dropped.
-define(ANY, #{peer => server, max_datagram_frame_size => ?MAX, max_ack_ranges => 1000000}).

properties_test_() ->
    [{atom_to_list(P),
      {timeout, 120,
       ?_assert(proper:quickcheck(?MODULE:P(), [{numtests, falco_fuzz_prop:numtests(?MODULE, P, ?NUMTESTS)},
                                                {to_file, user}]))}}
     || P <- [prop_frames_round_trip, prop_ack_round_trip, prop_ack_bound, prop_stream_fit,
              prop_parse_fuzz, prop_check_agrees, prop_tparams_round_trip, prop_tparams_fuzz]].

%% -- generators ---------------------------------------------------------------

%% Varints of every encoding length.
varint() ->
    oneof([range(0, 63), range(64, 16383), range(16384, 16#3fffffff), range(0, ?MAX)]).

dir() -> elements([bidi, uni]).
fin() -> elements([fin, nofin]).
cid() -> ?LET(N, range(1, 20), binary(N)).

error_code() ->
    oneof([elements([no_error, internal_error, flow_control_error, frame_encoding_error,
                     transport_parameter_error, protocol_violation, crypto_buffer_exceeded,
                     version_negotiation_error]),
           {crypto_error, elements([handshake_failure, no_application_protocol, 200])},
           {unknown, range(16#12, 16#ff)}, {unknown, range(16#200, ?MAX)}]).

%% Non-overlapping, non-adjacent intervals, newest first.
ack_ranges() ->
    ?LET({Low0, Len0, More}, {varint(), range(0, 100), list({range(0, 100), range(0, 100)})},
         ranges(Low0 + Len0 + 1000 * (length(More) + 1), Len0, More)).

ranges(Largest, Len, More) ->
    Low = Largest - Len,
    [{Low, Largest} | case More of
                          [{Gap, Len1} | Rest] when Low - Gap - 2 - Len1 >= 0 ->
                              ranges(Low - Gap - 2, Len1, Rest);
                          _ ->
                              []
                      end].

ecn() -> oneof([undefined, {varint(), varint(), varint()}]).

frame() ->
    oneof([?LET(N, range(1, 50), {padding, N}),
           ping,
           ?LET({D, R, E}, {varint(), ack_ranges(), ecn()}, {ack, D, R, E}),
           ?LET({I, C, S}, {varint(), varint(), varint()}, {reset_stream, I, C, S}),
           ?LET({I, C}, {varint(), varint()}, {stop_sending, I, C}),
           ?LET({O, D}, {range(0, 1 bsl 40), binary()}, {crypto, O, D}),
           ?LET(T, non_empty(binary()), {new_token, T}),
           ?LET({I, O, F, D}, {varint(), range(0, 1 bsl 40), fin(), binary()}, {stream, I, O, F, D}),
           ?LET(M, varint(), {max_data, M}),
           ?LET({I, M}, {varint(), varint()}, {max_stream_data, I, M}),
           ?LET({D, M}, {dir(), range(0, 1 bsl 60)}, {max_streams, D, M}),
           ?LET(M, varint(), {data_blocked, M}),
           ?LET({I, M}, {varint(), varint()}, {stream_data_blocked, I, M}),
           ?LET({D, M}, {dir(), range(0, 1 bsl 60)}, {streams_blocked, D, M}),
           ?LET({Seq, Back, C, T}, {varint(), varint(), cid(), binary(16)},
                {new_connection_id, Seq, max(0, Seq - Back), C, T}),
           ?LET(S, varint(), {retire_connection_id, S}),
           ?LET(D, binary(8), {path_challenge, D}),
           ?LET(D, binary(8), {path_response, D}),
           ?LET({E, T, R}, {error_code(), varint(), binary()}, {connection_close, E, T, R}),
           ?LET({C, R}, {varint(), binary()}, {application_close, C, R}),
           handshake_done,
           ?LET(D, binary(), {datagram, D})]).

frames() -> non_empty(list(frame())).

payload(Frames) -> iolist_to_binary([?F:build(F) || F <- Frames]).

%% Adjacent PADDING frames parse as one.
joined([{padding, A}, {padding, B} | Rest]) -> joined([{padding, A + B} | Rest]);
joined([F | Rest]) -> [F | joined(Rest)];
joined([]) -> [].

opts() ->
    ?LET({P, Peer, Ranges, Dgram},
         {elements([any, initial, handshake, zero_rtt, one_rtt]), elements([client, server]),
          range(1, 100), oneof([0, range(1, 2000)])},
         #{packet => P, peer => Peer, max_ack_ranges => Ranges, max_datagram_frame_size => Dgram}).

%% -- frame properties ---------------------------------------------------------

prop_frames_round_trip() ->
    ?FORALL(Frames, frames(),
            ?F:parse(payload(Frames), ?ANY) =:= {ok, joined(Frames)}).

prop_ack_round_trip() ->
    ?FORALL({Delay, Ranges, Ecn}, {varint(), ack_ranges(), ecn()},
            ?F:parse(iolist_to_binary(?F:ack(Delay, Ranges, Ecn)),
                     #{max_ack_ranges => length(Ranges)})
            =:= {ok, [{ack, Delay, Ranges, Ecn}]}).

%% With a bound of K ranges, the K newest come out.
prop_ack_bound() ->
    ?FORALL({Ranges, K}, {ack_ranges(), range(1, 10)},
            ?F:parse(iolist_to_binary(?F:ack(0, Ranges, undefined)), #{max_ack_ranges => K})
            =:= {ok, [{ack, 0, lists:sublist(Ranges, K), undefined}]}).

%% The frame fits, parses back to the data's first bytes (FIN only with the
%% last), and one byte more would not have fitted.
prop_stream_fit() ->
    ?FORALL({Id, Offset, Fin, Data, Budget},
            {varint(), range(0, 1 bsl 40), fin(), oneof([binary(), binary(20000)]),
             oneof([range(0, 100), range(0, 20000)])},
            case ?F:stream_fit(Id, Offset, Fin, Data, Budget) of
                none ->
                    Data =:= <<>> andalso Fin =:= nofin
                        orelse frame_size(Id, Offset, min(1, byte_size(Data))) > Budget;
                {Frame, Size, Rest, Sent} ->
                    Bin = iolist_to_binary(Frame),
                    N = byte_size(Data) - byte_size(Rest),
                    <<Part:N/binary, Rest/binary>> = Data,
                    Size =:= byte_size(Bin) andalso Size =< Budget
                        andalso ?F:parse(Bin) =:= {ok, [{stream, Id, Offset, Sent, Part}]}
                        andalso Sent =:= (case Rest of <<>> -> Fin; _ -> nofin end)
                        andalso (Rest =:= <<>> orelse frame_size(Id, Offset, N + 1) > Budget)
            end).

frame_size(Id, Offset, N) ->
    iolist_size(?F:stream(Id, Offset, nofin, <<0:(N * 8)>>)).

%% Random or mutated payloads, under random options: a documented result,
%% never an exception; each frame returned builds and parses back to itself.
prop_parse_fuzz() ->
    ?FORALL({Bin, Opts},
            {falco_fuzz_prop:input(?LET(Fs, frames(), payload(Fs)), tricky()), opts()},
            falco_fuzz_prop:safe(
              fun() ->
                      case ?F:parse(Bin, Opts) of
                          {ok, [_ | _] = Frames} ->
                              lists:all(fun(F) -> rebuilds(F) end, Frames);
                          {error, Code, Type, Why} ->
                              is_binary(falco_quic_error:text(Code)) andalso is_integer(Type)
                                  andalso Type >= 0 andalso is_atom(Why)
                      end
              end)).

%% The §12.4 check made while parsing gives what check/3 gives on the
%% frames parsed without it.
prop_check_agrees() ->
    ?FORALL({Frames, Opts}, {frames(), opts()},
            begin
                #{packet := P, peer := Peer} = Opts,
                Bin = payload(Frames),
                case ?F:parse(Bin, Opts#{packet => any, peer => server}) of
                    {ok, Fs} ->
                        Expected = case ?F:check(P, Peer, Fs) of
                                       ok -> {ok, Fs};
                                       Error -> Error
                                   end,
                        ?F:parse(Bin, Opts) =:= Expected;
                    {error, _, _, _} ->
                        true
                end
            end).

rebuilds(F) ->
    is_integer(?F:frame_type(F))
        andalso ?F:parse(iolist_to_binary(?F:build(F)), ?ANY) =:= {ok, [F]}.

%% Bytes the parser treats specially: frame types, varint prefixes, zeros.
tricky() ->
    ?LET(L, list(oneof([range(0, 16#1f), elements([16#30, 16#31, 16#40, 16#80, 16#c0, 16#ff]),
                        binary()])),
         iolist_to_binary([case X of B when is_binary(B) -> B; N -> <<N>> end || X <- L])).

%% -- transport parameter properties ------------------------------------------------

params() ->
    ?LET(L, list(oneof([{original_destination_connection_id, binary(8)},
                        {max_idle_timeout, varint()},
                        {stateless_reset_token, binary(16)},
                        {max_udp_payload_size, range(1200, 65527)},
                        {initial_max_data, varint()},
                        {initial_max_stream_data_bidi_local, varint()},
                        {initial_max_stream_data_bidi_remote, varint()},
                        {initial_max_stream_data_uni, varint()},
                        {initial_max_streams_bidi, range(0, 1 bsl 60)},
                        {initial_max_streams_uni, range(0, 1 bsl 60)},
                        {ack_delay_exponent, range(0, 20)},
                        {max_ack_delay, range(0, 16383)},
                        {disable_active_migration, true},
                        {preferred_address, preferred_address()},
                        {active_connection_id_limit, range(2, 1000)},
                        {initial_source_connection_id, oneof([<<>>, cid()])},
                        {retry_source_connection_id, cid()},
                        {max_datagram_frame_size, varint()}])),
         maps:from_list(L)).

preferred_address() ->
    ?LET({V4, P4, V6, P6, C, T},
         {vector(4, range(0, 255)), range(0, 65535), vector(8, range(0, 65535)), range(0, 65535),
          cid(), binary(16)},
         #{ipv4 => {list_to_tuple(V4), P4}, ipv6 => {list_to_tuple(V6), P6},
           connection_id => C, stateless_reset_token => T}).

prop_tparams_round_trip() ->
    ?FORALL(P, params(), ?T:decode(iolist_to_binary(?T:encode(P))) =:= {ok, P}).

prop_tparams_fuzz() ->
    ?FORALL({Bin, Scid},
            {falco_fuzz_prop:input(?LET(P, params(), iolist_to_binary(?T:encode(P))), tricky()),
             oneof([<<>>, cid()])},
            falco_fuzz_prop:safe(
              fun() ->
                      valid_tparams(?T:decode(Bin)) andalso valid_tparams(?T:from_client(Bin, Scid))
              end)).

valid_tparams({ok, P}) -> is_map(P);
valid_tparams({error, transport_parameter_error, _}) -> true.
