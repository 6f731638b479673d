%% @doc permessage-deflate (RFC 7692): the negotiation, a pure function of
%% the client's offers and the server's configuration, and the per-message
%% compression contexts.
%%
%% Negotiation (§5, §7.1): the offers of `Sec-WebSocket-Extensions' are
%% tried in order and the first acceptable one is answered. An offer is
%% declined if it repeats a parameter, has one this extension does not
%% define, or a value out of range (§7.1); also if it asks for
%% `server_max_window_bits=8', which zlib cannot produce with a raw
%% deflate stream (zlib 1.2.9 and later refuse a 256-byte window; RFC 7692
%% §7.1.2.1 lets a server decline it). A bare `client_max_window_bits'
%% lets the server pick the client's window; the server's own window and
%% both context-takeover choices come from its configuration.
%%
%% Compression contexts are zlib streams (OTP's `zlib', a NIF resource):
%% mutable, owned by the connection process that created them. Inflating
%% is bounded: output is produced in slices (`zlib:safeInflate/2') and the
%% caller's limit is checked after each, so a small frame can never
%% inflate past the message size limit ("zip bomb": the session answers
%% 1009).
%%
%% @private internal to falco
-module(falco_ws_deflate).

-export([negotiate/2, init/2, inflate/4, deflate/2, close/1, default_config/0]).
-export_type([config/0, params/0, state/0]).

-type bits() :: 9..15.
%% The server's side: compression level and memory, the largest windows it
%% uses, and whether it resets its contexts after every message.
-type config() :: #{level => 0..9, mem_level => 1..9,
                    server_max_window_bits => bits(), client_max_window_bits => bits(),
                    server_no_context_takeover => boolean(),
                    client_no_context_takeover => boolean()}.
%% What was agreed for one connection.
-type params() :: #{server_bits := bits(), client_bits := 8..15,
                    server_no_context_takeover := boolean(),
                    client_no_context_takeover := boolean()}.

-record(deflate, {inflate :: zlib:zstream(),
                  deflate :: zlib:zstream(),
                  reset_inflate :: boolean(),
                  reset_deflate :: boolean()}).
-opaque state() :: #deflate{}.

-define(TAIL, <<0, 0, 255, 255>>).

%% @doc The configuration used where a listener gives none.
-spec default_config() -> config().
default_config() ->
    #{level => 1, mem_level => 8, server_max_window_bits => 15, client_max_window_bits => 15,
      server_no_context_takeover => false, client_no_context_takeover => false}.

%% @doc Answers the `Sec-WebSocket-Extensions' field values of a handshake:
%% `none' (no acceptable permessage-deflate offer) or the response value
%% and the agreed parameters.
-spec negotiate([binary()], config()) -> none | {ok, binary(), params()}.
negotiate(Values, Config) ->
    C = maps:merge(default_config(), Config),
    Offers = [parse_extension(E) || V <- Values, E <- falco_grammar:elements(V)],
    first([P || {ok, <<"permessage-deflate">>, P} <- Offers], C).

first([], _) ->
    none;
first([Params | More], C) ->
    case accept(Params, C) of
        {ok, _, _} = Ok -> Ok;
        decline -> first(More, C)
    end.

%% `name *( ";" param )', `param = token [ "=" (token / quoted-string) ]'.
parse_extension(Element) ->
    [Name | Params] = binary:split(Element, <<";">>, [global]),
    case falco_grammar:lower_token(falco_grammar:trim(Name)) of
        {ok, N} -> {ok, N, [param(falco_grammar:trim(P)) || P <- Params]};
        error -> error
    end.

param(P) ->
    case binary:split(P, <<"=">>) of
        [K] -> {falco_grammar:lower(falco_grammar:trim(K)), true};
        [K, V] -> {falco_grammar:lower(falco_grammar:trim(K)), value(falco_grammar:trim(V))}
    end.

value(<<$", _/binary>> = Quoted) ->
    case falco_grammar:quoted_string(Quoted) of
        {ok, V, <<>>} -> V;
        _ -> invalid
    end;
value(V) ->
    V.

accept(Params, C) ->
    Keys = [K || {K, _} <- Params],
    case length(lists:usort(Keys)) =:= length(Keys) of
        false -> decline;
        true -> accept(Params, C, #{})
    end.

accept([], C, Offer) ->
    answer(Offer, C);
accept([{<<"server_no_context_takeover">>, true} | Ps], C, O) ->
    accept(Ps, C, O#{server_no_context_takeover => true});
accept([{<<"client_no_context_takeover">>, true} | Ps], C, O) ->
    accept(Ps, C, O#{client_no_context_takeover => true});
accept([{<<"server_max_window_bits">>, V} | Ps], C, O) ->
    case bits(V) of
        {ok, B} when B >= 9 -> accept(Ps, C, O#{server_max_window_bits => B});
        _ -> decline
    end;
accept([{<<"client_max_window_bits">>, true} | Ps], C, O) ->
    accept(Ps, C, O#{client_max_window_bits => any});
accept([{<<"client_max_window_bits">>, V} | Ps], C, O) ->
    case bits(V) of
        {ok, B} -> accept(Ps, C, O#{client_max_window_bits => B});
        error -> decline
    end;
accept([_ | _], _, _) ->
    decline.

bits(V) when is_binary(V), byte_size(V) =< 2 ->
    case falco_grammar:is_digits(V) of
        true when V =/= <<>> ->
            case binary_to_integer(V) of
                B when B >= 8, B =< 15 -> {ok, B};
                _ -> error
            end;
        _ -> error
    end;
bits(_) ->
    error.

answer(Offer, C) ->
    SNoCtx = maps:get(server_no_context_takeover, Offer, false)
        orelse maps:get(server_no_context_takeover, C),
    CNoCtx = maps:get(client_no_context_takeover, Offer, false)
        orelse maps:get(client_no_context_takeover, C),
    SBits = min(maps:get(server_max_window_bits, Offer, 15), maps:get(server_max_window_bits, C)),
    {CBits, CParam} =
        case maps:get(client_max_window_bits, Offer, absent) of
            %% the client did not say it can limit its window: it uses 15
            absent -> {15, []};
            any ->
                B = maps:get(client_max_window_bits, C),
                {B, [[<<"; client_max_window_bits=">>, integer_to_binary(B)]]};
            Offered ->
                B = min(Offered, maps:get(client_max_window_bits, C)),
                {B, [[<<"; client_max_window_bits=">>, integer_to_binary(B)]]}
        end,
    Response = iolist_to_binary(
                 [<<"permessage-deflate">>,
                  [<<"; server_no_context_takeover">> || SNoCtx],
                  [<<"; client_no_context_takeover">> || CNoCtx],
                  %% §7.1.2.1: once offered, the answer carries it, even at 15
                  [[<<"; server_max_window_bits=">>, integer_to_binary(SBits)]
                   || SBits < 15 orelse is_map_key(server_max_window_bits, Offer)],
                  CParam]),
    {ok, Response, #{server_bits => SBits, client_bits => CBits,
                     server_no_context_takeover => SNoCtx,
                     client_no_context_takeover => CNoCtx}}.

%% @doc Opens the two zlib streams of a connection.
-spec init(params(), config()) -> state().
init(#{server_bits := SBits, client_bits := CBits, server_no_context_takeover := SNoCtx,
       client_no_context_takeover := CNoCtx}, Config) ->
    C = maps:merge(default_config(), Config),
    Inflate = zlib:open(),
    %% a window at least as large as the client's inflates its stream; zlib
    %% does not take 8 for a raw stream, so 9. A client may end a message
    %% with a final block (§7.2.3.4) and start a new stream with the next:
    %% `reset' goes on with the bytes after the end of a stream as a new
    %% one (the default, `cut', drops them: the messages after it inflated
    %% to nothing)
    ok = zlib:inflateInit(Inflate, -max(CBits, 9), reset),
    Deflate = zlib:open(),
    ok = zlib:deflateInit(Deflate, maps:get(level, C), deflated, -SBits,
                          maps:get(mem_level, C), default),
    #deflate{inflate = Inflate, deflate = Deflate,
             reset_inflate = CNoCtx, reset_deflate = SNoCtx}.

%% @doc Inflates the next frame of a compressed message; `fin' for its last
%% frame. At most `Limit' bytes of output, else `{error, too_big}' (the
%% stream is then unusable: the connection is being closed).
-spec inflate(binary(), falco_ws_frame:fin(), non_neg_integer() | infinity, state()) ->
          {ok, iodata()} | {error, too_big | corrupt}.
inflate(Data, Fin, Limit, #deflate{inflate = Z, reset_inflate = Reset}) ->
    In = case Fin of
             fin -> [Data, ?TAIL];
             nofin -> Data
         end,
    try inflate_loop(Z, zlib:safeInflate(Z, In), Limit, 0, []) of
        {ok, _} = Ok when Fin =:= fin, Reset ->
            ok = zlib:inflateReset(Z),
            Ok;
        Result ->
            Result
    catch
        error:_ -> {error, corrupt}
    end.

inflate_loop(Z, {Status, Out}, Limit, Size, Acc) ->
    Size1 = Size + iolist_size(Out),
    if Limit =/= infinity, Size1 > Limit ->
           {error, too_big};
       Status =:= finished ->
           {ok, lists:reverse(Acc, [Out])};
       true ->
           inflate_loop(Z, zlib:safeInflate(Z, []), Limit, Size1, [Out | Acc])
    end;
inflate_loop(_, {need_dictionary, _, _}, _, _, _) ->
    {error, corrupt}.

%% @doc Compresses a whole message (§7.2.1: the trailing empty stored
%% block of the sync flush is removed). An empty message on a stream that
%% is already flushed makes zlib write nothing at all: it is sent as
%% 0x00, the empty stored block of §7.2.3.6.
-spec deflate(iodata(), state()) -> binary().
deflate(Data, #deflate{deflate = Z, reset_deflate = Reset}) ->
    Out = iolist_to_binary(zlib:deflate(Z, Data, sync)),
    case Reset of
        true -> ok = zlib:deflateReset(Z);
        false -> ok
    end,
    case Out of
        <<>> -> <<0>>;
        _ -> binary:part(Out, 0, byte_size(Out) - 4)
    end.

%% @doc Closes both zlib streams.
-spec close(state()) -> ok.
close(#deflate{inflate = I, deflate = D}) ->
    _ = (catch zlib:close(I)),
    _ = (catch zlib:close(D)),
    ok.
