%% A small HTTP/2 client for the Common Test suites, built on falco's own
%% frame codec and HPACK. It speaks h2c (prior knowledge) or h2 over TLS
%% (ALPN), can send any frame (or raw bytes) a test needs, and reads
%% responses: HEADERS + CONTINUATION, DATA, trailers, RST_STREAM, GOAWAY.
%% Received DATA is acknowledged with WINDOW_UPDATEs unless the connection
%% was opened with `#{auto_window => false}' (to test a stalled reader).
%%
%% The connection is a map threaded through the calls; frames received
%% while waiting for one stream are kept for the others. Field blocks are
%% decoded as they arrive (HPACK state follows the server's sending order),
%% so HEADERS (+ CONTINUATION) come out as `{fields, StreamId, Fin, Fields}'.
-module(falco_test_h2_client).

-export([connect/2, connect_raw/2, handshake/2, close/1, send/2, send_frame/2,
         request/5, request/3, headers_frame/4, send_body/4, send_data/4, recv_frame/2, response/2,
         response/3, interim/3, until/3, wait_closed/2, goaway/2]).

-define(MAX_FRAME, 16777215).
-define(TIMEOUT, 5000).

%% @doc Connects, sends the preface and SETTINGS, and waits for the
%% server's SETTINGS (which it acknowledges). Opts: transport (tcp | tls),
%% settings (ours), auto_window (default true).
connect(Port, Opts) ->
    C0 = connect_raw(Port, Opts),
    handshake(C0, Opts).

%% @doc Only the transport connection (TLS with ALPN h2). Opts may have
%% `prefix': bytes sent on the TCP connection first, before TLS or the
%% preface (a PROXY protocol header).
connect_raw(Port, Opts) ->
    {ok, Tcp} = gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {active, false}, {nodelay, true}],
                                ?TIMEOUT),
    ok = gen_tcp:send(Tcp, maps:get(prefix, Opts, <<>>)),
    {T, Sock} = case maps:get(transport, Opts, tcp) of
                    tcp ->
                        {gen_tcp, Tcp};
                    tls ->
                        {ok, S} = ssl:connect(Tcp, [binary, {active, false}, {verify, verify_none},
                                                    {alpn_advertised_protocols, [<<"h2">>]}],
                                              ?TIMEOUT),
                        {ok, <<"h2">>} = ssl:negotiated_protocol(S),
                        {ssl, S}
                end,
    Scheme = case T of gen_tcp -> <<"http">>; ssl -> <<"https">> end,
    #{t => T, sock => Sock, scheme => Scheme,
      enc => falco_hpack:new(), dec => falco_hpack:new(), buf => <<>>,
      next_id => 1, pending => [], auto_window => maps:get(auto_window, Opts, true),
      server_settings => #{}}.

%% @doc Client preface, our SETTINGS, then the server's SETTINGS.
handshake(C0, Opts) ->
    ok = send(C0, [falco_protocol:client_preface(),
                   falco_http2_frame:settings(maps:get(settings, Opts, #{}))]),
    {ok, {settings, S}, C1} = recv_frame(C0, ?TIMEOUT),
    ok = send(C1, falco_http2_frame:settings_ack()),
    C1#{server_settings => S}.

close(#{t := T, sock := Sock}) ->
    _ = T:close(Sock),
    ok.

send(#{t := T, sock := Sock}, Data) ->
    T:send(Sock, Data).

send_frame(C, Frame) ->
    ok = send(C, Frame),
    C.

%% @doc Sends a request on the next stream id: `{StreamId, C}'. The
%% scheme is https over TLS, http otherwise; the authority is localhost
%% unless Headers has an `:authority'.
request(C, Method, Path) ->
    request(C, Method, Path, [], <<>>).

request(C0 = #{next_id := Id, scheme := Scheme}, Method, Path, Headers0, Body) ->
    {Authority, Headers} = case lists:keytake(<<":authority">>, 1, Headers0) of
                               {value, {_, A}, Rest} -> {A, Rest};
                               false -> {<<"localhost">>, Headers0}
                           end,
    Fields = [{<<":method">>, Method}, {<<":scheme">>, Scheme}, {<<":path">>, Path},
              {<<":authority">>, Authority} | Headers],
    Fin = case Body of <<>> -> fin; _ -> nofin end,
    C1 = headers_frame(C0, Id, Fields, Fin),
    C2 = case Body of
             <<>> -> C1;
             _ -> send_body(C1, Id, Body, fin)
         end,
    {Id, C2#{next_id => Id + 2}}.

%% @doc Sends `Body' on stream `Id' within the stream's flow-control
%% window, waiting for WINDOW_UPDATEs; `Fin' ends the stream with the last
%% frame. The window is taken to be the server's whole initial window, so
%% a body sent in several calls must fit in it. Stops early if the server
%% answers or resets first (those frames are kept for response/2).
send_body(C = #{server_settings := S}, Id, Body, Fin) ->
    send_body(C, Id, Body, Fin, maps:get(initial_window_size, S, 65535), []).

send_body(C0, Id, <<>>, fin, _Window, Kept) ->
    requeue(send_frame(C0, falco_http2_frame:data(Id, fin, <<>>)), Kept);
send_body(C, _Id, <<>>, nofin, _Window, Kept) ->
    requeue(C, Kept);
send_body(C0, Id, Body, Fin, Window, Kept) when Window > 0 ->
    N = lists:min([byte_size(Body), Window, 16384]),
    <<Part:N/binary, Rest/binary>> = Body,
    case {Rest, Fin} of
        {<<>>, fin} -> requeue(send_frame(C0, falco_http2_frame:data(Id, fin, Part)), Kept);
        _ -> send_body(send_frame(C0, falco_http2_frame:data(Id, nofin, Part)), Id, Rest, Fin,
                       Window - N, Kept)
    end;
send_body(C0, Id, Body, Fin, Window, Kept) ->
    case recv_frame(C0, ?TIMEOUT) of
        {ok, {window_update, Id, Inc}, C} -> send_body(C, Id, Body, Fin, Window + Inc, Kept);
        {ok, {window_update, 0, _}, C} -> send_body(C, Id, Body, Fin, Window, Kept);
        {ok, F = {fields, Id, _, _}, C} -> requeue(C, [F | Kept]);
        {ok, F = {rst_stream, Id, _}, C} -> requeue(C, [F | Kept]);
        {ok, F, C} -> send_body(C, Id, Body, Fin, Window, [F | Kept]);
        {error, _, C} -> requeue(C, Kept)
    end.

%% @doc HEADERS (with CONTINUATION if the block is large) on stream `Id'.
headers_frame(C = #{enc := E0}, Id, Fields, Fin) ->
    {Block, E} = falco_hpack:encode(Fields, E0),
    ok = send(C, falco_http2_frame:header_block(Id, Fin, Block, 16384)),
    C#{enc => E}.

%% @doc DATA frames of at most 16 KB.
send_data(C, Id, Data, Fin) when byte_size(Data) > 16384 ->
    <<Part:16384/binary, Rest/binary>> = Data,
    send_data(send_frame(C, falco_http2_frame:data(Id, nofin, Part)), Id, Rest, Fin);
send_data(C, Id, Data, Fin) ->
    send_frame(C, falco_http2_frame:data(Id, Fin, Data)).

%% @doc The next frame from the server (pending ones first); a field block
%% is returned decoded, as `{fields, StreamId, Fin, Fields}'.
recv_frame(C = #{pending := [F | Rest]}, _Timeout) ->
    {ok, F, C#{pending => Rest}};
recv_frame(C0, Timeout) ->
    case raw_frame(C0, Timeout) of
        {ok, {headers, Id, Fin, fin, _, Block}, C} -> decode(C, Id, Fin, Block);
        {ok, {headers, Id, Fin, nofin, _, Frag}, C} -> continuations(C, Id, Fin, [Frag], Timeout);
        Other -> Other
    end.

continuations(C0, Id, Fin, Acc, Timeout) ->
    case raw_frame(C0, Timeout) of
        {ok, {continuation, Id, fin, Frag}, C} ->
            decode(C, Id, Fin, iolist_to_binary(lists:reverse([Frag | Acc])));
        {ok, {continuation, Id, nofin, Frag}, C} ->
            continuations(C, Id, Fin, [Frag | Acc], Timeout);
        {ok, Other, C} ->
            {error, {unexpected_in_field_block, Other}, C};
        Error ->
            Error
    end.

decode(C = #{dec := D0}, Id, Fin, Block) ->
    {ok, Fields, D} = falco_hpack:decode(Block, D0),
    {ok, {fields, Id, Fin, Fields}, C#{dec => D}}.

raw_frame(C = #{buf := Buf, t := T, sock := Sock}, Timeout) ->
    case falco_http2_frame:parse(Buf, ?MAX_FRAME) of
        {ok, Frame, Rest} ->
            {ok, Frame, C#{buf => Rest}};
        {more, _} ->
            case T:recv(Sock, 0, Timeout) of
                {ok, Data} -> raw_frame(C#{buf => <<Buf/binary, Data/binary>>}, Timeout);
                {error, Why} -> {error, Why, C}
            end;
        {error, Why} ->
            {error, {bad_frame, Why}, C}
    end.

%% @doc Reads frames until `Pred(Frame)' is true: `{ok, Frame, C}'. Other
%% frames are dropped (DATA still acknowledged).
until(C0, Pred, Timeout) ->
    case recv_frame(C0, Timeout) of
        {ok, F, C1} ->
            C = ack_data(F, C1),
            case Pred(F) of
                true -> {ok, F, C};
                false -> until(C, Pred, Timeout)
            end;
        Error ->
            Error
    end.

%% @doc The GOAWAY the server sends next: `{ok, Code, C}'.
goaway(C0, Timeout) ->
    case until(C0, fun({goaway, _, _, _}) -> true; (_) -> false end, Timeout) of
        {ok, {goaway, _, Code, _}, C} -> {ok, Code, C};
        Error -> Error
    end.

%% @doc Waits until the server closes the connection.
wait_closed(C0, Timeout) ->
    case recv_frame(C0, Timeout) of
        {ok, _, C} -> wait_closed(C, Timeout);
        {error, closed, _} -> ok;
        {error, Why, _} -> {error, Why}
    end.

%% @doc The response on stream `Id': `{ok, Resp, C}' with status, headers,
%% body, trailers, informational (1xx statuses seen), or
%% `{error, {reset, Code}, C}', `{error, {goaway, Code}, C}'.
response(C, Id) ->
    response(C, Id, ?TIMEOUT).

response(C, Id, Timeout) ->
    collect(C, Id, Timeout, #{status => undefined, headers => [], body => [], trailers => [],
                              informational => [], frames => 0}, []).

collect(C0, Id, Timeout, Resp, Other) ->
    case recv_frame(C0, Timeout) of
        {ok, F, C1} ->
            C = ack_data(F, C1),
            case F of
                {fields, Id, Fin, Fields} ->
                    fields(C, Id, Timeout, Resp, Other, Fin, Fields);
                {data, Id, Fin, Data, _} ->
                    Resp1 = Resp#{body => [Data | maps:get(body, Resp)],
                                  frames => maps:get(frames, Resp) + 1},
                    case Fin of
                        fin -> done(C, Resp1, Other);
                        nofin -> collect(C, Id, Timeout, Resp1, Other)
                    end;
                {rst_stream, Id, Code} ->
                    {error, {reset, Code}, requeue(C, Other)};
                {goaway, _, Code, _} when Code =/= no_error ->
                    {error, {goaway, Code}, requeue(C, Other)};
                {Type, _, _} when Type =:= window_update; Type =:= ping; Type =:= ping_ack ->
                    collect(C, Id, Timeout, Resp, Other);
                settings_ack ->
                    collect(C, Id, Timeout, Resp, Other);
                _ ->
                    collect(C, Id, Timeout, Resp, [F | Other])
            end;
        {error, Why, C} ->
            {error, Why, requeue(C, Other)}
    end.

%% @doc The next interim (1xx) response on stream `Id': `{ok, Status, C}'.
%% Anything else that arrives meanwhile (the final response included) is
%% kept for response/2; `{error, timeout, C}' if no 1xx came in Timeout ms.
interim(C, Id, Timeout) ->
    Deadline = erlang:monotonic_time(millisecond) + Timeout,
    interim(C, Id, Deadline, []).

interim(C0, Id, Deadline, Other) ->
    Left = max(0, Deadline - erlang:monotonic_time(millisecond)),
    case recv_frame(C0, Left) of
        {ok, {fields, Id, nofin, [{<<":status">>, <<"1", _, _>> = S} | _]}, C} ->
            {ok, binary_to_integer(S), requeue(C, Other)};
        {ok, F, C} ->
            interim(C, Id, Deadline, [F | Other]);
        {error, Why, C} ->
            {error, Why, requeue(C, Other)}
    end.

fields(C, Id, Timeout, Resp, Other, Fin, Fields) ->
    Resp1 = case {Fields, maps:get(status, Resp)} of
                {[{<<":status">>, <<"1", _, _>> = S} | _], _} ->
                    Resp#{informational => maps:get(informational, Resp) ++ [binary_to_integer(S)]};
                {[{<<":status">>, S} | Hs], undefined} ->
                    Resp#{status => binary_to_integer(S), headers => Hs};
                {Trailers, _} ->
                    Resp#{trailers => Trailers}
            end,
    case Fin of
        fin -> done(C, Resp1, Other);
        nofin -> collect(C, Id, Timeout, Resp1, Other)
    end.

done(C, Resp = #{body := Body}, Other) ->
    {ok, Resp#{body => iolist_to_binary(lists:reverse(Body))}, requeue(C, Other)}.

requeue(C = #{pending := P}, Other) ->
    C#{pending => lists:reverse(Other) ++ P}.

ack_data({data, Id, _, _, Size}, C = #{auto_window := true}) when Size > 0 ->
    ok = send(C, [falco_http2_frame:window_update(0, Size),
                  falco_http2_frame:window_update(Id, Size)]),
    C;
ack_data(_, C) ->
    C.
