%% A small TLS 1.3 record layer (RFC 8446 §5) for the tests that run
%% falco_tls13_server over TCP against OTP's ssl client: 5-byte record
%% headers, plaintext records until the keys are known, then AEAD per
%% record with the sequence-number nonce (§5.3) and the inner content
%% type (§5.2). No padding sent, no fragmentation limits checked.
-module(falco_test_tls13_records).

-export([new_keys/2, next/1, plain/2, seal/3, open/3]).

-define(HANDSHAKE, 22).
-define(APP, 23).

%% A direction's protection from a traffic secret.
new_keys(Suite, Secret) ->
    {Key, IV} = falco_tls13_keys:traffic_keys(Suite, Secret),
    #{aead => falco_tls13_keys:suite_aead(Suite), key => Key, iv => IV, seq => 0}.

%% The next whole record of a buffer: {ok, Type, Header, Body, Rest} or more.
next(<<Type, 3, _, Len:16, Body:Len/binary, Rest/binary>>) ->
    {ok, Type, <<Type, 3, 3, Len:16>>, Body, Rest};
next(_) ->
    more.

%% A plaintext record.
plain(Type, Payload) ->
    <<Type, 3, 3, (byte_size(Payload)):16, Payload/binary>>.

%% A protected record of content type Type: {Record, Keys}.
seal(Keys = #{aead := Aead, key := Key, seq := Seq}, Type, Payload) ->
    Inner = <<Payload/binary, Type>>,
    Header = <<?APP, 3, 3, (byte_size(Inner) + 16):16>>,
    {Cipher, Tag} = crypto:crypto_one_time_aead(Aead, Key, nonce(Keys), Inner, Header, 16, true),
    {<<Header/binary, Cipher/binary, Tag/binary>>, Keys#{seq := Seq + 1}}.

%% A protected record opened: {ok, Type, Payload, Keys} or error.
open(Keys = #{aead := Aead, key := Key, seq := Seq}, Header, Body) when byte_size(Body) > 16 ->
    Len = byte_size(Body) - 16,
    <<Cipher:Len/binary, Tag/binary>> = Body,
    case crypto:crypto_one_time_aead(Aead, Key, nonce(Keys), Cipher, Header, Tag, false) of
        error -> error;
        Inner -> inner(strip(Inner), Keys#{seq := Seq + 1})
    end;
open(_, _, _) ->
    error.

inner(<<>>, _) -> error;
inner(Inner, Keys) ->
    Len = byte_size(Inner) - 1,
    <<Payload:Len/binary, Type>> = Inner,
    {ok, Type, Payload, Keys}.

strip(Bin) ->
    case binary:last(Bin) of
        0 when byte_size(Bin) > 1 -> strip(binary:part(Bin, 0, byte_size(Bin) - 1));
        _ -> Bin
    end.

nonce(#{iv := IV, seq := Seq}) ->
    crypto:exor(IV, <<Seq:96>>).
