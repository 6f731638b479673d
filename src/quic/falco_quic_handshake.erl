%% @doc The TLS handshake of a QUIC connection (RFC 9001 §4, §5.2, §4.9),
%% for the connection machine, pure: CRYPTO data per encryption level in,
%% reassembled (falco_quic_reasm, 16 KB beyond the read point, §7.5) and
%% fed to falco_tls13_server; its handshake bytes out as CRYPTO data per
%% level, its traffic secrets turned into packet keys (falco_quic_keys).
%%
%% Levels are TLS's and QUIC's packet-number spaces at once: `initial'
%% (Initial packets; keys from the client's original Destination
%% Connection ID, set by new/2), `handshake' (Handshake packets) and
%% `application' (1-RTT). Each level has read keys (the client's) and write
%% keys (ours) once known, the CRYPTO data received (reassembled) and the
%% CRYPTO data to send: a queue of `{Offset, Bytes}' pieces the sender cuts
%% to the room it has (take/3), to which lost pieces go back (requeue/4),
%% lowest offset first.
%%
%% crypto/4 returns what the connection must act on: `{alpn, P}',
%% `{server_name, H}', `{transport_params, Bin}' (the client's, still
%% encoded: falco_quic_tparams:from_client/2), `{keys, Level, Dir}' (a
%% level's keys in one direction, `read' the client's or `write' ours, are
%% installed: both of the handshake level after the ServerHello, the
%% application level's write keys after our Finished (RFC 9001 §4.1.1
%% lets a server send 1-RTT data then) and its read keys with
%% `handshake_complete'), `handshake_complete' (the
%% client's Finished was right: RFC 9001 §4.1.1, the handshake is
%% complete, and a server confirms it there, §4.1.2). Errors are QUIC's:
%% `{error, crypto_buffer_exceeded | {crypto_error, Alert} |
%% protocol_violation, Reason}', for CONNECTION_CLOSE.
%%
%% Discarding (§4.9): discard/2 drops a level's keys and buffers (Initial
%% once a Handshake packet is sent or received, Handshake at
%% confirmation); CRYPTO at a level discarded, or with no read keys yet, is
%% refused.
%%
%% @private internal to falco
-module(falco_quic_handshake).

-export([new/2, crypto/4, take/3, requeue/4, pending/2, keys/3, discard/2, complete/1,
         info/1]).
-export_type([state/0, level/0, event/0]).

%% CRYPTO bytes that may be held beyond a level's read point (§7.5 asks
%% for at least 4096).
-define(CRYPTO_LIMIT, 16384).

-type level() :: initial | handshake | application.
-type event() :: {alpn, binary()} | {server_name, binary()} | {transport_params, binary()}
               | {keys, level(), read | write} | handshake_complete.
-type error() :: crypto_buffer_exceeded | {crypto_error, falco_tls13_alert:alert()}
               | protocol_violation.

-record(lvl, {recv = falco_quic_reasm:new(#{limit => ?CRYPTO_LIMIT}) :: falco_quic_reasm:reasm(),
              %% the next offset of data TLS gives us to send
              next = 0 :: non_neg_integer(),
              %% CRYPTO data waiting to be sent, lowest offset first
              queue = [] :: [{non_neg_integer(), binary()}],
              read :: falco_quic_keys:keys() | undefined,
              write :: falco_quic_keys:keys() | undefined}).

-record(hs, {tls :: falco_tls13_server:state(),
             levels :: #{level() => #lvl{} | discarded},
             complete = false :: boolean(),
             info = #{} :: map()}).

-opaque state() :: #hs{}.

%% @doc A server's handshake for a connection whose client chose Dcid as
%% the original Destination Connection ID; TlsOpts as
%% falco_tls13_server:new/1 takes them (`quic' is set here).
-spec new(map(), binary()) -> state().
new(TlsOpts, Dcid) ->
    {Client, Server} = falco_quic_keys:initial(Dcid),
    #hs{tls = falco_tls13_server:new(TlsOpts#{quic => true}),
        levels = #{initial => #lvl{read = Client, write = Server},
                   handshake => #lvl{}, application => #lvl{}}}.

%% @doc CRYPTO data from a packet of Level at Offset.
-spec crypto(level(), non_neg_integer(), binary(), state()) ->
          {ok, state(), [event()]} | {error, error(), term()}.
crypto(Level, Offset, Data, H = #hs{levels = Levels}) ->
    case maps:get(Level, Levels) of
        #lvl{read = undefined} ->
            {error, protocol_violation, {crypto_without_keys, Level}};
        L = #lvl{recv = R0} ->
            case falco_quic_reasm:add(Offset, Data, R0) of
                {ok, [], R} ->
                    {ok, H#hs{levels = Levels#{Level := L#lvl{recv = R}}}, []};
                {ok, Ready, R} ->
                    tls(Level, iolist_to_binary(Ready),
                        H#hs{levels = Levels#{Level := L#lvl{recv = R}}});
                {error, Why} ->
                    {error, crypto_buffer_exceeded, {Level, Why}}
            end;
        discarded ->
            {error, protocol_violation, {crypto_after_discard, Level}}
    end.

tls(Level, Bytes, H = #hs{tls = T0}) ->
    case falco_tls13_server:handshake_data(Level, Bytes, T0) of
        {ok, T, Actions} ->
            {H1, Events} = lists:foldl(fun action/2, {H#hs{tls = T}, []}, Actions),
            {ok, H1, lists:reverse(Events)};
        {error, illegal_parameter, legacy_session_id} ->
            %% RFC 9001 §8.4
            {error, protocol_violation, legacy_session_id};
        {error, Alert, Reason} ->
            {error, {crypto_error, Alert}, Reason}
    end.

action({send, Level, Bytes}, {H, Es}) ->
    {update(Level, fun(L = #lvl{next = Next, queue = Q}) ->
                           L#lvl{next = Next + byte_size(Bytes), queue = Q ++ [{Next, Bytes}]}
                   end, H), Es};
action({write_secret, Level, Suite, Secret}, {H, Es}) ->
    H1 = update(Level, fun(L) -> L#lvl{write = falco_quic_keys:from_secret(Suite, Secret)} end, H),
    {H1, [{keys, Level, write} | Es]};
action({read_secret, Level, Suite, Secret}, {H, Es}) ->
    H1 = update(Level, fun(L) -> L#lvl{read = falco_quic_keys:from_secret(Suite, Secret)} end, H),
    {H1, [{keys, Level, read} | Es]};
action(handshake_complete, {H, Es}) ->
    {H#hs{complete = true}, [handshake_complete | Es]};
action({Key, Value}, {H = #hs{info = I}, Es}) when Key =:= alpn; Key =:= server_name;
                                                   Key =:= transport_params ->
    {H#hs{info = I#{Key => Value}}, [{Key, Value} | Es]};
action({peer_certificates, Chain}, {H = #hs{info = I}, Es}) ->
    {H#hs{info = I#{peer_certificates => Chain}}, Es};
action(change_cipher_spec, Acc) ->
    %% not with `quic' (falco_tls13_server sends none then)
    Acc.

update(Level, Fun, H = #hs{levels = Levels}) ->
    case maps:get(Level, Levels) of
        discarded -> H;
        L -> H#hs{levels = Levels#{Level := Fun(L)}}
    end.

%% @doc CRYPTO frames of Level that fit in Room bytes, lowest offset
%% first, as `{Frames, Size, State}' (Frames are falco_quic_frame's
%% `{crypto, Offset, Bytes}' terms, built with falco_quic_frame:build/1;
%% Size their encoded size).
-spec take(level(), non_neg_integer(), state()) ->
          {[{crypto, non_neg_integer(), binary()}], non_neg_integer(), state()}.
take(Level, Room, H = #hs{levels = Levels}) ->
    case maps:get(Level, Levels) of
        L = #lvl{queue = Q} when Q =/= [] ->
            {Frames, Size, Q1} = fit(Q, Room, [], 0),
            {Frames, Size, H#hs{levels = Levels#{Level := L#lvl{queue = Q1}}}};
        _ ->
            {[], 0, H}
    end.

fit([{Offset, Bytes} | Q], Room, Acc, Size) ->
    case falco_quic_frame:crypto_fit(Offset, Bytes, Room) of
        none ->
            {lists:reverse(Acc), Size, [{Offset, Bytes} | Q]};
        {_, N, <<>>} ->
            fit(Q, Room - N, [{crypto, Offset, Bytes} | Acc], Size + N);
        {_, N, Rest} ->
            Sent = byte_size(Bytes) - byte_size(Rest),
            {lists:reverse(Acc, [{crypto, Offset, binary:part(Bytes, 0, Sent)}]), Size + N,
             [{Offset + Sent, Rest} | Q]}
    end;
fit([], _, Acc, Size) ->
    {lists:reverse(Acc), Size, []}.

%% @doc CRYPTO data of Level sent at Offset and lost: sent again, in
%% offset order (RFC 9000 §13.3).
-spec requeue(level(), non_neg_integer(), binary(), state()) -> state().
requeue(Level, Offset, Bytes, H) ->
    update(Level, fun(L = #lvl{queue = Q}) -> L#lvl{queue = lists:keymerge(1, [{Offset, Bytes}], Q)} end,
           H).

%% @doc Whether Level has CRYPTO data to send.
-spec pending(level(), state()) -> boolean().
pending(Level, #hs{levels = Levels}) ->
    case maps:get(Level, Levels) of
        #lvl{queue = [_ | _]} -> true;
        _ -> false
    end.

%% @doc Level's packet keys in one direction (`read': the client's;
%% `write': ours), or `undefined' while unknown or once discarded.
-spec keys(level(), read | write, state()) -> falco_quic_keys:keys() | undefined.
keys(Level, Dir, #hs{levels = Levels}) ->
    case {maps:get(Level, Levels), Dir} of
        {#lvl{read = K}, read} -> K;
        {#lvl{write = K}, write} -> K;
        {discarded, _} -> undefined
    end.

%% @doc Drops Level's keys and CRYPTO state (RFC 9001 §4.9).
-spec discard(initial | handshake, state()) -> state().
discard(Level, H = #hs{levels = Levels}) ->
    H#hs{levels = Levels#{Level := discarded}}.

%% @doc Whether the client's Finished has been verified.
-spec complete(state()) -> boolean().
complete(#hs{complete = C}) -> C.

%% @doc What the handshake learnt: alpn, server_name, transport_params,
%% peer_certificates (those present).
-spec info(state()) -> map().
info(#hs{info = I}) -> I.
