%% @doc Which protocol a connection speaks: the one decision table.
%%
%% A listener allows `protocols => [http1, h2]' (the default), `[http1]' or
%% `[h2]', over `transport => tcp | tls'. {@link select/3} is consulted at
%% each point where the answer can be known, with what was learnt there:
%%
%% ```
%%  transport  event                         allowed        result
%%  ---------  ----------------------------  -------------  ---------------------
%%  tls        {alpn, <<"h2">>}              h2             h2
%%  tls        {alpn, <<"http/1.1">>}        http1          http1
%%  tls        {alpn, undefined} (no ALPN)   http1          http1
%%  tls        {alpn, _} otherwise                          close
%%  tcp        connect                       http1 and h2   detect (read first bytes)
%%  tcp        connect                       http1 only     http1
%%  tcp        connect                       h2 only        h2 (prior knowledge)
%%  tcp        preface (first bytes are the  h2             h2
%%             HTTP/2 connection preface)
%%  tcp        no_preface                    http1          http1
%%  tcp        h2c_upgrade (HTTP/1.1 request h2             h2c_upgrade (101, then
%%             with Upgrade: h2c and                        h2; the request is
%%             HTTP2-Settings, no body)                     answered on stream 1)
%%  tcp        h2c_upgrade                   no h2          http1 (Upgrade ignored)
%% '''
%%
%% Why these rows: RFC 9113 §3.2 uses ALPN "h2" over TLS and forbids the
%% h2c upgrade there (so a TLS request with `Upgrade: h2c' is plain
%% HTTP/1.1); §3.3 defines prior knowledge over cleartext; RFC 7540 §3.2
%% defines the upgrade (RFC 9113 deprecates it but clients still use it).
%% A TLS client without ALPN gets HTTP/1.1 when it is allowed, since h2 over
%% TLS requires ALPN. An upgrade request with a body stays HTTP/1.1: the
%% body would have to be read under HTTP/1.1 framing before switching, and
%% RFC 7540 §3.2 lets a server ignore the upgrade.
%%
%% @private internal to falco
-module(falco_protocol).

-export([select/3, client_preface/0, preface/1, h2c_settings/1]).

-type event() :: {alpn, binary() | undefined} | connect | preface | no_preface | h2c_upgrade.
-type result() :: http1 | h2 | detect | h2c_upgrade | close.
-export_type([event/0, result/0]).

%% @doc The decision table above.
-spec select(tcp | tls, event(), [http1 | h2]) -> result().
select(Transport, Event, Protocols) ->
    H1 = lists:member(http1, Protocols),
    H2 = lists:member(h2, Protocols),
    case {Transport, Event} of
        {tls, {alpn, <<"h2">>}} when H2 -> h2;
        {tls, {alpn, <<"http/1.1">>}} when H1 -> http1;
        {tls, {alpn, undefined}} when H1 -> http1;
        {tls, {alpn, _}} -> close;
        {tcp, connect} when H1, H2 -> detect;
        {tcp, connect} when H1 -> http1;
        {tcp, connect} when H2 -> h2;
        {tcp, preface} when H2 -> h2;
        {tcp, h2c_upgrade} when H2 -> h2c_upgrade;
        {tcp, _} when H1 -> http1;
        _ -> close
    end.

%% @doc The client connection preface of HTTP/2 (RFC 9113 §3.4). Here,
%% with its detection, rather than in falco_http2_frame: an HTTP/1.1
%% connection then never loads the frame codec (29 KB of code).
-spec client_preface() -> binary().
client_preface() -> <<"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n">>.

%% @doc Whether the first bytes of a cleartext connection are the HTTP/2
%% preface (`more': too few bytes to tell yet).
-spec preface(binary()) -> preface | no_preface | more.
preface(Buf) ->
    Preface = client_preface(),
    case Buf of
        <<Preface:24/binary, _/binary>> -> preface;
        _ when byte_size(Buf) < 24 ->
            case binary:longest_common_prefix([Buf, Preface]) =:= byte_size(Buf) of
                true -> more;
                false -> no_preface
            end;
        _ -> no_preface
    end.

%% @doc The client's settings if an HTTP/1.1 request asks to upgrade to
%% h2c as RFC 7540 §3.2 says: `Upgrade' lists h2c, `Connection' lists
%% Upgrade and HTTP2-Settings, exactly one HTTP2-Settings field holds a
%% base64url SETTINGS payload (§3.2.1), and the request has no body.
-spec h2c_settings(map()) -> {ok, falco_http2_frame:settings()} | no.
h2c_settings(#{version := {1, 1}, body := Body, headers := Headers})
  when Body =:= none; Body =:= {length, 0} ->
    case lists:keymember(<<"upgrade">>, 1, Headers) of
        true -> h2c_upgrade(Headers);
        false -> no
    end;
h2c_settings(_) ->
    no.

h2c_upgrade(Headers) ->
    Upgrade = tokens(<<"upgrade">>, Headers),
    Connection = tokens(<<"connection">>, Headers),
    case lists:member(<<"h2c">>, Upgrade) andalso lists:member(<<"upgrade">>, Connection)
        andalso lists:member(<<"http2-settings">>, Connection)
        andalso [V || {<<"http2-settings">>, V} <- Headers] of
        [Value] -> settings_payload(Value);
        _ -> no
    end.

tokens(Name, Headers) ->
    lists:append([falco_grammar:lower_elements(V) || {N, V} <- Headers, N =:= Name]).

settings_payload(Value) ->
    try base64:decode(base64url(Value)) of
        Payload ->
            Frame = <<(byte_size(Payload)):24, 4:8, 0:8, 0:32, Payload/binary>>,
            case falco_http2_frame:parse(Frame, 16384) of
                {ok, {settings, Settings}, <<>>} -> {ok, Settings};
                _ -> no
            end
    catch
        error:_ -> no
    end.

%% RFC 4648 §5 to §4, padding restored (OTP 25's base64 has no url mode).
base64url(V) ->
    B = << <<(case C of $- -> $+; $_ -> $/; _ -> C end)>> || <<C>> <= V >>,
    case byte_size(B) rem 4 of
        0 -> B;
        2 -> <<B/binary, "==">>;
        3 -> <<B/binary, "=">>;
        1 -> <<B/binary, "!">>
    end.
