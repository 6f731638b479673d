%% @doc What a QUIC listener does with a datagram, pure: the rules of RFC
%% 9000 §5.2 (datagrams no connection knows), §6 (Version Negotiation),
%% §7.2 and §14.1 (what may start a connection), before any process or
%% key is spent on it. The listener's socket holder asks route/2 for the
%% connection ID to look up, and on a miss asks unknown/1 what to do:
%%
%% <ul>
%% <li>`{new, #{dcid, scid, token}}': a v1 Initial in a datagram of at
%%     least 1200 bytes with a Destination Connection ID of at least 8
%%     bytes (§7.2: the client's first DCID is that long): a new connection
%%     may start, if the listener's own limits allow (max_connections,
%%     handshakes in progress, drain; the holder's concern);</li>
%% <li>`{version_negotiation, Datagram}': a long header of another version
%%     in a datagram of at least 1200 bytes (§5.2.2, §6.1), answered with
%%     the versions falco speaks (v1), CIDs swapped (§17.2.1);</li>
%% <li>`{drop, Why}': anything else (§5.2.2: a short datagram, a 0-RTT or
%%     Handshake packet, a short header, a Version Negotiation or Retry a
%%     server must never act on, bytes that are not QUIC).</li>
%% </ul>
%%
%% A short header for a connection no route knows, whatever its size, is
%% `{drop, unknown_connection}': the holder answers it with a stateless
%% reset when falco_quic_retry:stateless_reset/3 allows one (§10.3).
%%
%% @private internal to falco
-module(falco_quic_admit).

-export([route/2, unknown/1]).

-define(V1, 1).
-define(MIN_DATAGRAM, 1200).
-define(MIN_CLIENT_DCID, 8).

%% @doc The connection ID to look a datagram up by: its first packet's
%% DCID (a short header's has CidLen bytes, falco's own length), or
%% `{drop, truncated}' for bytes too short to carry one.
-spec route(binary(), 0..20) -> {ok, binary()} | {drop, truncated}.
route(Datagram, CidLen) ->
    case falco_quic_packet:invariant(Datagram, CidLen) of
        {ok, {long, _, Dcid, _}} -> {ok, Dcid};
        {ok, {short, Dcid}} -> {ok, Dcid};
        {error, {drop, Why}} -> {drop, Why}
    end.

%% @doc What to do with a datagram whose connection ID no route knows.
-spec unknown(binary()) -> {new, #{dcid := binary(), scid := binary(), token := binary()}}
                         | {version_negotiation, binary()}
                         | {drop, atom()}.
unknown(<<0:1, _:7, _/binary>>) ->
    %% a short header of any size: the holder may answer it with a
    %% stateless reset (falco_quic_retry)
    {drop, unknown_connection};
unknown(Datagram) when byte_size(Datagram) < ?MIN_DATAGRAM ->
    {drop, short_datagram};
unknown(Datagram) ->
    case falco_quic_packet:invariant(Datagram, 0) of
        {ok, {long, 0, _, _}} ->
            {drop, version_negotiation};
        {ok, {long, ?V1, _, _}} ->
            initial(falco_quic_packet:parse(Datagram, 0));
        {ok, {long, _, Dcid, Scid}} when byte_size(Dcid) =< 255, byte_size(Scid) =< 255 ->
            {version_negotiation, falco_quic_packet:version_negotiation(Scid, Dcid, [?V1])};
        {ok, {short, _}} ->
            {drop, unknown_connection};
        {error, {drop, Why}} ->
            {drop, Why}
    end.

initial({ok, #{type := initial, dcid := Dcid}, _}) when byte_size(Dcid) < ?MIN_CLIENT_DCID ->
    {drop, short_dcid};
initial({ok, #{type := initial, dcid := Dcid, scid := Scid, token := Token}, _}) ->
    {new, #{dcid => Dcid, scid => Scid, token => Token}};
initial({ok, #{type := Type}, _}) ->
    {drop, Type};
initial({error, {drop, Why}}) ->
    {drop, Why}.
