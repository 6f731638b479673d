%% PropEr properties for the pure HTTP/2 modules: falco_http2_frame
%% (what the builders write parses back to the same frame; a frame fed in
%% pieces parses as it does whole; arbitrary and mutated frames never make
%% the parser raise and give the same frames fed whole or in pieces, run
%% 100,000 times by `make fuzz', see falco_fuzz_prop) and
%% falco_http2_machine (random frame sequences from a client never make the
%% machine raise, and its output always parses). Run from EUnit, 500 cases
%% each (the fuzz property 1000).
-module(falco_http2_prop).
-include_lib("proper/include/proper.hrl").
-include_lib("eunit/include/eunit.hrl").

-define(NUMTESTS, 500).
-define(F, falco_http2_frame).

properties_test_() ->
    [{atom_to_list(P),
      {timeout, 120,
       ?_assert(proper:quickcheck(?MODULE:P(), [{numtests, falco_fuzz_prop:numtests(?MODULE, P, ?NUMTESTS)},
                                                {to_file, user}]))}}
     || P <- [prop_frame_round_trip, prop_frame_in_pieces, prop_parse_fuzz,
              prop_machine_total]].

%% -- generators ---------------------------------------------------------------

stream_id() -> range(1, 16#7fffffff).
fin() -> elements([fin, nofin]).
payload() -> binary().
code() -> elements([no_error, protocol_error, internal_error, flow_control_error,
                    settings_timeout, stream_closed, frame_size_error, refused_stream, cancel,
                    compression_error, connect_error, enhance_your_calm, inadequate_security,
                    http_1_1_required]).

settings() ->
    ?LET(L, list(oneof([{header_table_size, range(0, 16#ffffffff)},
                        {enable_push, boolean()},
                        {max_concurrent_streams, range(0, 16#ffffffff)},
                        {initial_window_size, range(0, 16#7fffffff)},
                        {max_frame_size, range(16384, 16777215)},
                        {max_header_list_size, range(0, 16#ffffffff)},
                        {enable_connect_protocol, boolean()},
                        {no_rfc7540_priorities, boolean()}])),
         maps:from_list(L)).

%% {Frame as the parser returns it, its bytes}
frame() ->
    oneof([?LET({Id, Fin, D}, {stream_id(), fin(), payload()},
                {{data, Id, Fin, D, byte_size(D)}, ?F:data(Id, Fin, D)}),
           ?LET({Id, Fin, E, B}, {stream_id(), fin(), fin(), payload()},
                {{headers, Id, Fin, E, undefined, B}, ?F:headers(Id, Fin, E, B)}),
           ?LET({Id, X, Dep, W}, {stream_id(), boolean(), range(0, 16#7fffffff), range(1, 256)},
                {{priority, Id, X, Dep, W}, ?F:priority(Id, X, Dep, W)}),
           ?LET({Id, C}, {stream_id(), code()}, {{rst_stream, Id, C}, ?F:rst_stream(Id, C)}),
           ?LET(S, settings(), {{settings, S}, ?F:settings(S)}),
           {settings_ack, ?F:settings_ack()},
           ?LET({Id, E, P, B}, {stream_id(), fin(), range(0, 16#7fffffff), payload()},
                {{push_promise, Id, E, P, B}, ?F:push_promise(Id, E, P, B)}),
           ?LET(O, binary(8), {{ping, O}, ?F:ping(O)}),
           ?LET(O, binary(8), {{ping_ack, O}, ?F:ping_ack(O)}),
           ?LET({L, C, D}, {range(0, 16#7fffffff), code(), payload()},
                {{goaway, L, C, D}, ?F:goaway(L, C, D)}),
           ?LET({Id, I}, {range(0, 16#7fffffff), range(1, 16#7fffffff)},
                {{window_update, Id, I}, ?F:window_update(Id, I)}),
           ?LET({Id, E, B}, {stream_id(), fin(), payload()},
                {{continuation, Id, E, B}, ?F:continuation(Id, E, B)})]).

%% -- properties ---------------------------------------------------------------

prop_frame_round_trip() ->
    ?FORALL({Frame, Bytes}, frame(),
            ?F:parse(iolist_to_binary(Bytes), 16777215) =:= {ok, Frame, <<>>}).

%% The parser asks for more until the frame is complete, then gives it.
prop_frame_in_pieces() ->
    ?FORALL({{Frame, Bytes}, Cut}, {frame(), nat()},
            begin
                Bin = iolist_to_binary(Bytes),
                N = Cut rem byte_size(Bin),
                <<Head:N/binary, _/binary>> = Bin,
                {more, Need} = ?F:parse(Head, 16777215),
                Need > 0 andalso N + Need =< byte_size(Bin)
                    andalso ?F:parse(<<Bin/binary, "next">>, 16777215) =:= {ok, Frame, <<"next">>}
            end).

%% Random or mutated frame sequences: every frame parses to one of the
%% documented results, never an exception, and reading them as a
%% connection does (buffer the pieces, take frames while there are) gives
%% the same frames and the same end, whatever the cut points.
prop_parse_fuzz() ->
    ?FORALL({Bin, Max, Points},
            {falco_fuzz_prop:input(?LET(Fs, ?LET(N, range(1, 3), vector(N, frame())),
                                        iolist_to_binary([B || {_, B} <- Fs])),
                                   binary()),
             oneof([16384, 16777215]), list(nat())},
            falco_fuzz_prop:safe(
              fun() ->
                      Whole = frames([Bin], Max),
                      Split = frames(falco_fuzz_prop:split(Bin, Points), Max),
                      Whole =:= Split
                          orelse begin
                                     io:format(user, "whole ~p~nsplit ~p~n", [Whole, Split]),
                                     false
                                 end
              end)).

%% The frames (and stream errors) read from Pieces, then how reading ended.
frames(Pieces, Max) ->
    frames(<<>>, Pieces, Max, []).

frames(Buf, Pieces, Max, Acc) ->
    case ?F:parse(Buf, Max) of
        {ok, Frame, Rest} when is_tuple(Frame); Frame =:= settings_ack ->
            true = is_binary(Rest) andalso byte_size(Rest) < byte_size(Buf),
            frames(Rest, Pieces, Max, [Frame | Acc]);
        {error, {stream_error, Id, Code, Why}, Rest} when is_integer(Id), is_atom(Code), is_atom(Why) ->
            true = is_binary(Rest) andalso byte_size(Rest) < byte_size(Buf),
            frames(Rest, Pieces, Max, [{stream_error, Id, Code, Why} | Acc]);
        {error, {connection_error, Code, Why}} when is_atom(Code), is_atom(Why) ->
            {lists:reverse(Acc), {connection_error, Code, Why}};
        {more, N} when is_integer(N), N > 0 ->
            case Pieces of
                [P | More] -> frames(<<Buf/binary, P/binary>>, More, Max, Acc);
                [] -> {lists:reverse(Acc), {more, N}}
            end
    end.

%% Client frame sequences (after a valid preface SETTINGS): whatever they
%% are, the machine answers with actions whose bytes are valid frames.
prop_machine_total() ->
    ?FORALL(Frames, list(oneof([?LET({F, _}, frame(), F), small_frame()])),
            begin
                {M0, A0} = falco_http2_machine:new(#{}),
                {M1, A1} = falco_http2_machine:frame({settings, #{}}, M0),
                {_, Acts} = lists:foldl(fun(F, {M, Acc}) ->
                                                {M2, A} = falco_http2_machine:frame(F, M),
                                                {M2, Acc ++ A}
                                        end, {M1, A0 ++ A1}, Frames),
                parses(iolist_to_binary([D || {send, D} <- Acts]))
            end).

%% Frames on low stream numbers, so streams actually open, close and collide.
small_frame() ->
    Id = range(1, 7),
    oneof([?LET({I, Fin, D}, {Id, fin(), binary()}, {data, I, Fin, D, byte_size(D)}),
           ?LET({I, Fin}, {Id, fin()}, {headers, I, Fin, fin, undefined, request_block()}),
           ?LET({I, C}, {Id, code()}, {rst_stream, I, C}),
           ?LET({I, N}, {range(0, 7), range(1, 100000)}, {window_update, I, N}),
           ?LET(O, binary(8), {ping, O})]).

request_block() ->
    %% ":method GET", ":scheme http", ":path /" from the static table.
    <<16#82, 16#86, 16#84>>.

parses(<<>>) -> true;
parses(Bin) ->
    case ?F:parse(Bin, 16777215) of
        {ok, _, Rest} -> parses(Rest);
        _ -> false
    end.
