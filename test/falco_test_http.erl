%% One client for the suites that check protocol-independent semantics
%% (RFC 9110) over every protocol falco serves: `http' (HTTP/1.1 over
%% TCP), `https' (HTTP/1.1 over TLS, ALPN http/1.1), `h2c' (HTTP/2 with
%% prior knowledge over TCP) and `h2' (HTTP/2 over TLS, ALPN h2). It sits
%% on the raw HTTP/1.1 client (falco_test_client) and the HTTP/2 client
%% (falco_test_h2_client), so a case written once runs over all four.
%%
%% A connection is a map threaded through the calls and carries one
%% request at a time. Requests are given as method, path, fields and
%% content; over HTTP/1.1 a Host field is added when there is none, and a
%% Content-Length when there is content (RFC 9112 §6.2); over HTTP/2 a
%% `host' field becomes `:authority' (RFC 9113 §8.3.1). A request whose
%% content follows later (send_request/4, then send_body/3 and
%% send_trailers/2) is sent chunked over HTTP/1.1 unless its fields give a
%% Content-Length, and as DATA frames over HTTP/2 (within the stream's
%% flow-control window; content sent in several pieces must fit in the
%% server's initial window).
%%
%% Responses are maps with the same keys for every protocol:
%% status, headers (names lowercase), body, trailers, informational (the
%% 1xx statuses that came first), protocol (http1 | http2) and
%% wire_headers (fields with their names as they were on the wire). Over
%% HTTP/1.1 they also have framing and chunks (falco_test_client), over
%% HTTP/2 data_frames (how many DATA frames carried the body).
-module(falco_test_http).

-export([protocols/0, listener_opts/1, is_http1/1, is_tls/1,
         connect/2, close/1, sockname/1,
         request/6, fetch/6, request/5,
         send_request/4, send_body/3, send_trailers/2,
         informational/2, response/1, response/2,
         expect_silence/2, expect_closed/2]).

-export_type([proto/0, conn/0, response/0]).

-type proto() :: http | https | h2c | h2.
-type conn() :: #{proto := proto(), _ => _}.
-type fields() :: [{binary(), iodata()}].
-type response() :: #{status := non_neg_integer(),
                      headers := [{binary(), binary()}],
                      body := binary(),
                      trailers := [{binary(), binary()}],
                      informational := [100..199],
                      protocol := http1 | http2,
                      wire_headers := [{binary(), binary()}],
                      _ => _}.

-define(H1, falco_test_client).
-define(H2, falco_test_h2_client).
-define(TIMEOUT, 5000).

%% @doc The four protocols, in the order suites run them.
-spec protocols() -> [proto()].
protocols() ->
    [http, https, h2c, h2].

%% @doc Listener options that make a listener serve Proto (merged over
%% the suite's own): TLS with the test certificate for https and h2.
%% A cleartext listener serves HTTP/1.1 and h2c prior knowledge alike, a
%% TLS one both ALPN protocols, so these are falco's defaults otherwise.
-spec listener_opts(proto()) -> map().
listener_opts(Proto) ->
    case is_tls(Proto) of
        true -> falco_test_listener:tls(#{});
        false -> #{}
    end.

-spec is_http1(proto() | conn()) -> boolean().
is_http1(#{proto := Proto}) -> is_http1(Proto);
is_http1(Proto) -> Proto =:= http orelse Proto =:= https.

-spec is_tls(proto() | conn()) -> boolean().
is_tls(#{proto := Proto}) -> is_tls(Proto);
is_tls(Proto) -> Proto =:= https orelse Proto =:= h2.

%% -- connections ---------------------------------------------------------------

%% @doc A new connection to 127.0.0.1:Port speaking Proto (for h2c and
%% h2, the HTTP/2 preface and SETTINGS exchange done).
-spec connect(proto(), inet:port_number()) -> conn().
connect(http, Port) ->
    #{proto => http, sock => ?H1:connect(Port, [{send_timeout, ?TIMEOUT}]), method => undefined};
connect(https, Port) ->
    Sock = ?H1:connect_tls(Port, [<<"http/1.1">>]),
    {ok, <<"http/1.1">>} = ssl:negotiated_protocol(Sock),
    #{proto => https, sock => Sock, method => undefined};
connect(h2c, Port) ->
    #{proto => h2c, c => ?H2:connect(Port, #{transport => tcp}), id => undefined};
connect(h2, Port) ->
    #{proto => h2, c => ?H2:connect(Port, #{transport => tls}), id => undefined}.

-spec close(conn()) -> ok.
close(#{sock := Sock}) -> ?H1:close(Sock);
close(#{c := C}) -> ?H2:close(C).

%% @doc The client's own address and port.
-spec sockname(conn()) -> {inet:ip_address(), inet:port_number()}.
sockname(Conn) ->
    {ok, Name} = case Conn of
                     #{proto := http, sock := S} -> inet:sockname(S);
                     #{proto := https, sock := S} -> ssl:sockname(S);
                     #{c := #{t := T, sock := S}} -> sockname(T, S)
                 end,
    Name.

sockname(gen_tcp, S) -> inet:sockname(S);
sockname(ssl, S) -> ssl:sockname(S).

%% -- whole requests ----------------------------------------------------------------

%% @doc One request on a new connection: `{Status, Headers, Body}'.
-spec request(proto(), inet:port_number(), binary(), binary(), fields(), iodata()) ->
          {non_neg_integer(), [{binary(), binary()}], binary()}.
request(Proto, Port, Method, Path, Headers, Body) ->
    #{status := S, headers := H, body := B} = fetch(Proto, Port, Method, Path, Headers, Body),
    {S, H, B}.

%% @doc One request on a new connection: the whole response map.
-spec fetch(proto(), inet:port_number(), binary(), binary(), fields(), iodata()) -> response().
fetch(Proto, Port, Method, Path, Headers, Body) ->
    Conn0 = connect(Proto, Port),
    try request(Conn0, Method, Path, Headers, Body) of
        {ok, Resp, Conn} -> close(Conn), Resp;
        {error, Why, Conn} -> close(Conn), error({no_response, Method, Path, Why})
    catch
        Class:Reason:Stack -> close(Conn0), erlang:raise(Class, Reason, Stack)
    end.

%% @doc A request with all its content on an open connection, and its
%% final response.
-spec request(conn(), binary(), binary(), fields(), iodata()) ->
          {ok, response(), conn()} | {error, term(), conn()}.
request(Conn = #{sock := Sock}, Method, Path, Headers, Body) ->
    Size = iolist_size(Body),
    Length = [{<<"content-length">>, integer_to_binary(Size)}
              || Size > 0, not has_field(<<"content-length">>, Headers),
                 not has_field(<<"transfer-encoding">>, Headers)],
    ?H1:send(Sock, [h1_head(Method, Path, Headers ++ Length), Body]),
    response(Conn#{method => Method});
request(Conn = #{c := _}, <<"CONNECT">>, Authority, Headers, <<>>) ->
    response(send_request(Conn, <<"CONNECT">>, Authority, Headers));
request(Conn = #{c := C0}, Method, Path, Headers, Body) ->
    {Id, C} = ?H2:request(C0, Method, Path, h2_fields(Headers),
                          iolist_to_binary(Body)),
    response(Conn#{c => C, id => Id}).

%% -- requests in parts -------------------------------------------------------------------

%% @doc Sends the request head; its content follows with send_body/3.
-spec send_request(conn(), binary(), binary(), fields()) -> conn().
send_request(Conn = #{sock := Sock}, Method, Path, Headers) ->
    Framing = case has_field(<<"content-length">>, Headers) of
                  true -> length;
                  false -> chunked
              end,
    Extra = [{<<"transfer-encoding">>, <<"chunked">>} || Framing =:= chunked],
    ?H1:send(Sock, h1_head(Method, Path, Headers ++ Extra)),
    Conn#{method => Method, framing => Framing};
send_request(Conn = #{c := C0 = #{next_id := Id}}, <<"CONNECT">>, Authority, Headers) ->
    %% RFC 9113 §8.5: only :method and :authority, and no content here
    {_, Rest} = authority(Headers),
    C = ?H2:headers_frame(C0, Id, [{<<":method">>, <<"CONNECT">>}, {<<":authority">>, Authority}
                                   | Rest], fin),
    Conn#{c => C#{next_id => Id + 2}, id => Id};
send_request(Conn = #{c := C0 = #{next_id := Id, scheme := Scheme}}, Method, Path, Headers) ->
    {Authority, Rest} = authority(Headers),
    C = ?H2:headers_frame(C0, Id, [{<<":method">>, Method}, {<<":scheme">>, Scheme},
                                   {<<":path">>, Path}, {<<":authority">>, Authority} | Rest],
                          nofin),
    Conn#{c => C#{next_id => Id + 2}, id => Id}.

%% @doc A piece of the content; `fin' ends it (and the request).
-spec send_body(conn(), iodata(), fin | nofin) -> conn().
send_body(Conn = #{sock := Sock, framing := length}, Data, _Fin) ->
    h1_send(Sock, Data),
    Conn;
send_body(Conn = #{sock := Sock, framing := chunked}, Data, Fin) ->
    Chunk = case iolist_size(Data) of
                0 -> [];
                N -> [integer_to_binary(N, 16), <<"\r\n">>, Data, <<"\r\n">>]
            end,
    h1_send(Sock, [Chunk, [<<"0\r\n\r\n">> || Fin =:= fin]]),
    Conn;
send_body(Conn = #{c := C, id := Id}, Data, Fin) ->
    Conn#{c => ?H2:send_body(C, Id, iolist_to_binary(Data), Fin)}.

%% A server that has answered (413, say) may close before the content is
%% all sent; the response tells, so a failed send is not an error here
%% (as over HTTP/2, where sending stops once the server answers).
h1_send(Sock, Data) ->
    _ = ?H1:try_send(Sock, Data),
    ok.

%% @doc Ends the content with a trailer section (RFC 9110 §6.5): the last
%% chunk's fields over HTTP/1.1 (the request must be chunked), a HEADERS
%% frame with END_STREAM over HTTP/2.
-spec send_trailers(conn(), fields()) -> conn().
send_trailers(Conn = #{sock := Sock, framing := chunked}, Trailers) ->
    ?H1:send(Sock, [<<"0\r\n">>, [[N, <<": ">>, V, <<"\r\n">>] || {N, V} <- Trailers],
                    <<"\r\n">>]),
    Conn;
send_trailers(Conn = #{c := C, id := Id}, Trailers) ->
    Conn#{c => ?H2:headers_frame(C, Id, Trailers, fin)}.

%% -- responses ----------------------------------------------------------------------------

%% @doc The next interim (1xx) response: `{ok, Status, Conn}', or
%% `{error, timeout, Conn}' if none came within Timeout ms (a final
%% response that came instead is kept for response/1).
-spec informational(conn(), timeout()) -> {ok, 100..199, conn()} | {error, term(), conn()}.
informational(Conn = #{sock := Sock, method := Method}, Timeout) ->
    case ?H1:recv_response(Sock, #{head => Method =:= <<"HEAD">>, timeout => Timeout}) of
        {ok, #{status := S}} when S >= 100, S < 200 -> {ok, S, Conn};
        {ok, Final} -> {error, final_response, Conn#{early => Final}};
        {error, Why} -> {error, Why, Conn}
    end;
informational(Conn = #{c := C0, id := Id}, Timeout) ->
    case ?H2:interim(C0, Id, Timeout) of
        {ok, S, C} -> {ok, S, Conn#{c => C}};
        {error, Why, C} -> {error, Why, Conn#{c => C}}
    end.

%% @doc The final response to the request on the connection.
-spec response(conn()) -> {ok, response(), conn()} | {error, term(), conn()}.
response(Conn) ->
    response(Conn, ?TIMEOUT).

-spec response(conn(), timeout()) -> {ok, response(), conn()} | {error, term(), conn()}.
response(Conn = #{sock := _, early := Final}, _Timeout) ->
    h1_final(maps:remove(early, Conn), {ok, Final}, []);
response(Conn = #{sock := _}, Timeout) ->
    h1_final(Conn, h1_recv(Conn, Timeout), []);
response(Conn = #{c := C0, id := Id}, Timeout) ->
    case ?H2:response(C0, Id, Timeout) of
        {ok, #{status := S, headers := H, body := B, trailers := T, informational := I,
               frames := Frames}, C} when is_integer(S) ->
            {ok, #{status => S, headers => H, body => B, trailers => T, informational => I,
                   protocol => http2, wire_headers => H, data_frames => Frames},
             Conn#{c => C}};
        {ok, R, C} ->
            {error, {no_status, R}, Conn#{c => C}};
        {error, Why, C} ->
            {error, Why, Conn#{c => C}}
    end.

h1_recv(#{sock := Sock, method := Method}, Timeout) ->
    ?H1:recv_response(Sock, #{head => Method =:= <<"HEAD">>, timeout => Timeout}).

h1_final(Conn, Received, Interim) ->
    case Received of
        {ok, #{status := S}} when S >= 100, S < 200, S =/= 101 ->
            h1_final(Conn, h1_recv(Conn, ?TIMEOUT), [S | Interim]);
        {ok, R = #{raw_head := Head}} ->
            [_StatusLine | Lines] = binary:split(Head, <<"\r\n">>, [global]),
            Wire = [begin
                        [N, V] = binary:split(L, <<":">>),
                        {N, string:trim(V, both, " \t")}
                    end || L <- Lines],
            {ok, R#{informational => lists:reverse(Interim), protocol => http1,
                    wire_headers => Wire}, Conn};
        {error, Why} ->
            {error, Why, Conn}
    end.

%% @doc ok if nothing more arrives on the connection for Ms ms (and it
%% stays open). Over HTTP/2 flow-control and ping frames do not count.
-spec expect_silence(conn(), timeout()) -> ok | {error, term()}.
expect_silence(#{sock := Sock}, Ms) ->
    ?H1:expect_silence(Sock, Ms);
expect_silence(#{c := C}, Ms) ->
    Deadline = erlang:monotonic_time(millisecond) + Ms,
    h2_silence(C, Deadline).

h2_silence(C0, Deadline) ->
    Left = max(0, Deadline - erlang:monotonic_time(millisecond)),
    case ?H2:recv_frame(C0, Left) of
        {error, timeout, _} -> ok;
        {ok, {window_update, _, _}, C} -> h2_silence(C, Deadline);
        {ok, {ping, _, _}, C} -> h2_silence(C, Deadline);
        {ok, settings_ack, C} -> h2_silence(C, Deadline);
        {ok, F, _} -> {error, {unexpected_frame, F}};
        {error, Why, _} -> {error, Why}
    end.

%% @doc ok if the server closes the connection within Timeout ms without
%% sending anything more (over HTTP/2 a GOAWAY may come first).
-spec expect_closed(conn(), timeout()) -> ok | {error, term()}.
expect_closed(#{sock := Sock}, Timeout) ->
    ?H1:expect_closed(Sock, Timeout);
expect_closed(#{c := C}, Timeout) ->
    ?H2:wait_closed(C, Timeout).

%% -- internals ---------------------------------------------------------------------------

has_field(Name, Headers) ->
    lists:any(fun({N, _}) -> string:lowercase(iolist_to_binary(N)) =:= Name end, Headers).

h1_head(<<"CONNECT">>, Authority, Headers) ->
    [<<"CONNECT ">>, Authority, <<" HTTP/1.1\r\n">>, h1_fields(Headers), <<"\r\n">>];
h1_head(Method, Path, Headers) ->
    Host = [{<<"host">>, <<"localhost">>} || not has_field(<<"host">>, Headers)],
    [Method, <<" ">>, Path, <<" HTTP/1.1\r\n">>, h1_fields(Host ++ Headers), <<"\r\n">>].

h1_fields(Headers) ->
    [[N, <<": ">>, V, <<"\r\n">>] || {N, V} <- Headers].

%% A Host field is the :authority of an HTTP/2 request (RFC 9113 §8.3.1).
h2_fields(Headers) ->
    {Authority, Rest} = authority(Headers),
    [{<<":authority">>, Authority} | Rest].

authority(Headers) ->
    {Hosts, Rest} = lists:partition(fun({N, _}) -> string:lowercase(N) =:= <<"host">> end,
                                    [{iolist_to_binary(N), iolist_to_binary(V)}
                                     || {N, V} <- Headers]),
    case Hosts of
        [] -> {<<"localhost">>, Rest};
        [{_, A}] -> {A, Rest}
    end.

