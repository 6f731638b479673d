%% Raw-socket HTTP/1.1 client for the Common Test suites.
%%
%% Tests must be able to send bytes no real client would (bare LF, NUL,
%% obfuscated Transfer-Encoding, half-written chunks) and to look at exactly
%% what comes back, so this client does no normalisation at all: requests
%% are raw iodata, responses are parsed strictly (RFC 9112 §4 status line,
%% §5 fields, §6.3 body length: HEAD / 1xx / 204 / 304 have no body, then
%% Transfer-Encoding chunked, then Content-Length, else read until close).
%% Bytes received after one response are kept per socket in the process
%% dictionary, so pipelined responses are read one at a time. A socket is
%% a gen_tcp one (connect/1,2) or a TLS one (connect_tls/2); every other
%% function takes either.
%%
%% It also holds a small call recorder (an ETS table owned by a process of
%% its own) that suites' handlers write to, so a test can prove a handler
%% was, or never was, reached.
-module(falco_test_client).

-export([connect/1, connect/2, connect_tls/2, send/2, try_send/2, close/1,
         recv_response/1, recv_response/2, recv_final/1, recv_final/2,
         request/2, request/3, exchange/2, exchange/3, exchange/4,
         recv_until_closed/2, expect_closed/2, expect_silence/2,
         parse_responses/1, parse_responses/2,
         header/2, header_values/2, has_token/3,
         wait_until/2, wait_until/3, take_buffer/1]).
-export([recorder_start/0, recorder_stop/1, record/2, recorded/1, recorder_reset/1]).

-define(TIMEOUT, 5000).

-type response() :: #{version := binary(),
                      status := non_neg_integer(),
                      reason := binary(),
                      headers := [{binary(), binary()}],
                      body := binary(),
                      chunks := [non_neg_integer()],
                      trailers := [{binary(), binary()}],
                      framing := none | chunked | length | close,
                      raw_head := binary()}.
-export_type([response/0]).

%% -- sockets ---------------------------------------------------------------

connect(Port) ->
    connect(Port, []).

connect(Port, Extra) ->
    {ok, Sock} = gen_tcp:connect({127, 0, 0, 1}, Port,
                                 [binary, {active, false}, {packet, raw}, {nodelay, true}
                                  | Extra], ?TIMEOUT),
    put_buf(Sock, <<>>),
    Sock.

%% HTTP/1.1 over TLS: ALPN offers Alpn (a list of protocol names, [] for
%% no ALPN extension at all); the test certificate is not verified.
connect_tls(Port, Alpn) ->
    AlpnOpt = [{alpn_advertised_protocols, Alpn} || Alpn =/= []],
    {ok, Sock} = ssl:connect({127, 0, 0, 1}, Port,
                             [binary, {active, false}, {packet, raw}, {nodelay, true},
                              {verify, verify_none} | AlpnOpt], ?TIMEOUT),
    put_buf(Sock, <<>>),
    Sock.

send(Sock, Data) ->
    ok = (transport(Sock)):send(Sock, Data).

%% A send that may fail (the server may have answered and closed already).
try_send(Sock, Data) ->
    (transport(Sock)):send(Sock, Data).

close(Sock) ->
    erase({?MODULE, Sock}),
    _ = (transport(Sock)):close(Sock),
    ok.

%% -- responses -------------------------------------------------------------

%% Reads one response (an interim 1xx is a response of its own).
%% Opts: timeout (ms), head (true: the request was HEAD, so no body).
recv_response(Sock) ->
    recv_response(Sock, #{}).

recv_response(Sock, Opts) ->
    Timeout = maps:get(timeout, Opts, ?TIMEOUT),
    Deadline = erlang:monotonic_time(millisecond) + Timeout,
    try
        {Head, Rest0} = read_until(Sock, get_buf(Sock), <<"\r\n\r\n">>, Deadline),
        {Version, Status, Reason, Headers} = parse_head(Head),
        Framing = framing(Status, Headers, maps:get(head, Opts, false)),
        {Body, Chunks, Trailers, Rest} = read_body(Sock, Framing, Rest0, Deadline),
        put_buf(Sock, Rest),
        {ok, #{version => Version, status => Status, reason => Reason, headers => Headers,
               body => Body, chunks => Chunks, trailers => Trailers,
               framing => element(1, framing_tag(Framing)), raw_head => Head}}
    catch
        throw:{client_error, Why, Buf} ->
            put_buf(Sock, Buf),
            {error, Why}
    end.

%% Reads responses until a final (non-1xx) one; returns it.
recv_final(Sock) ->
    recv_final(Sock, #{}).

recv_final(Sock, Opts) ->
    case recv_response(Sock, Opts) of
        {ok, #{status := S}} when S >= 100, S < 200 -> recv_final(Sock, Opts);
        Other -> Other
    end.

%% One connection, one raw request, one final response; the socket stays open.
request(Port, Raw) ->
    request(Port, Raw, #{}).

request(Port, Raw, Opts) ->
    Sock = connect(Port),
    send(Sock, Raw),
    {Sock, recv_final(Sock, Opts)}.

%% Sends Raw on a new connection and reads until the server closes it (or
%% Timeout passes); returns every response found, what followed them, and
%% whether the server closed.
exchange(Port, Raw) ->
    exchange(Port, Raw, ?TIMEOUT).

exchange(Port, Raw, Timeout) ->
    exchange(Port, Raw, Timeout, #{}).

%% Opts: `half_close => true' shuts the client's write side after Raw, so
%% a server that answered everything closes at once instead of at its
%% idle timeout.
exchange(Port, Raw, Timeout, Opts) ->
    Sock = connect(Port),
    send(Sock, Raw),
    case maps:get(half_close, Opts, false) of
        true -> ok = (transport(Sock)):shutdown(Sock, write);
        false -> ok
    end,
    {Closed, Bin} = case recv_until_closed(Sock, Timeout) of
                        {ok, B} -> {closed, B};
                        {timeout, B} -> {open, B}
                    end,
    close(Sock),
    {Responses, Rest} = parse_responses(Bin),
    #{responses => Responses, rest => Rest, closed => Closed, raw => Bin}.

%% Everything the server sends until it closes: {ok, Bin}, or
%% {timeout, Bin} if it was still open after Timeout ms.
recv_until_closed(Sock, Timeout) ->
    Deadline = erlang:monotonic_time(millisecond) + Timeout,
    Buf = get_buf(Sock),
    put_buf(Sock, <<>>),
    until_closed(Sock, Deadline, [Buf]).

until_closed(Sock, Deadline, Acc) ->
    case recv(Sock, remaining(Deadline)) of
        {ok, Data} -> until_closed(Sock, Deadline, [Data | Acc]);
        {error, timeout} -> {timeout, iolist_to_binary(lists:reverse(Acc))};
        {error, _} -> {ok, iolist_to_binary(lists:reverse(Acc))}
    end.

%% ok if the server closes within Timeout ms without sending anything more.
expect_closed(Sock, Timeout) ->
    case recv_until_closed(Sock, Timeout) of
        {ok, <<>>} -> ok;
        {ok, Bin} -> {error, {unexpected_data, Bin}};
        {timeout, Bin} -> {error, {still_open, Bin}}
    end.

%% ok if nothing arrives for Ms ms and the connection is still open.
expect_silence(Sock, Ms) ->
    case get_buf(Sock) of
        <<>> ->
            case recv(Sock, Ms) of
                {error, timeout} -> ok;
                {ok, Data} -> put_buf(Sock, Data), {error, {unexpected_data, Data}};
                {error, Why} -> {error, Why}
            end;
        Buf ->
            {error, {unexpected_data, Buf}}
    end.

%% Parses as many complete responses as Bin holds (used after the server
%% closed, so a response without length runs to the end of Bin).
parse_responses(Bin) ->
    parse_responses(Bin, #{}).

parse_responses(Bin, Opts) ->
    parse_all(Bin, Opts, []).

parse_all(<<>>, _Opts, Acc) ->
    {lists:reverse(Acc), <<>>};
parse_all(Bin, Opts, Acc) ->
    case binary:split(Bin, <<"\r\n\r\n">>) of
        [Head, Rest0] ->
            try parse_head(Head) of
                {Version, Status, Reason, Headers} ->
                    Framing = framing(Status, Headers, maps:get(head, Opts, false)),
                    case body_from(Framing, Rest0) of
                        {ok, Body, Chunks, Trailers, Rest} ->
                            R = #{version => Version, status => Status, reason => Reason,
                                  headers => Headers, body => Body, chunks => Chunks,
                                  trailers => Trailers,
                                  framing => element(1, framing_tag(Framing)),
                                  raw_head => Head},
                            parse_all(Rest, Opts, [R | Acc]);
                        incomplete ->
                            {lists:reverse(Acc), Bin}
                    end
            catch
                throw:{client_error, _, _} -> {lists:reverse(Acc), Bin}
            end;
        [_] ->
            {lists:reverse(Acc), Bin}
    end.

%% -- header helpers ----------------------------------------------------------

%% The single value of a response header (lowercase name), or undefined.
header(Name, #{headers := Hs}) ->
    case [V || {N, V} <- Hs, N =:= Name] of
        [] -> undefined;
        [V | _] -> V
    end.

header_values(Name, #{headers := Hs}) ->
    [V || {N, V} <- Hs, N =:= Name].

%% Whether header Name of Resp lists Token (case-insensitive).
has_token(Name, Token, Resp) ->
    Tokens = lists:append([[string:lowercase(string:trim(T))
                            || T <- binary:split(V, <<",">>, [global])]
                           || V <- header_values(Name, Resp)]),
    lists:member(string:lowercase(Token), Tokens).

%% Polls Fun() until it returns true (every 10 ms) or Timeout ms pass.
wait_until(Fun, Timeout) ->
    wait_until(Fun, Timeout, 10).

wait_until(Fun, Timeout, Step) ->
    Deadline = erlang:monotonic_time(millisecond) + Timeout,
    poll(Fun, Deadline, Step).

poll(Fun, Deadline, Step) ->
    case Fun() of
        true -> ok;
        false ->
            case erlang:monotonic_time(millisecond) >= Deadline of
                true -> {error, timeout};
                false -> timer:sleep(Step), poll(Fun, Deadline, Step)
            end
    end.

%% -- call recorder -----------------------------------------------------------

%% A public ETS table owned by a process of its own, so it outlives the CT
%% process that created it; handlers (running in connection processes)
%% write to it.
recorder_start() ->
    Self = self(),
    Pid = spawn(fun() ->
                        Tab = ets:new(falco_test_calls, [public, ordered_set]),
                        Self ! {recorder, self(), Tab},
                        receive stop -> ok end
                end),
    receive {recorder, Pid, Tab} -> {Pid, Tab} end.

recorder_stop({Pid, _Tab}) ->
    Pid ! stop,
    ok.

record({_, Tab}, What) ->
    true = ets:insert(Tab, {erlang:unique_integer([monotonic]), What}),
    ok.

recorded({_, Tab}) ->
    [What || {_, What} <- ets:tab2list(Tab)].

recorder_reset({_, Tab}) ->
    true = ets:delete_all_objects(Tab),
    ok.

%% The bytes received after the last response read, handed over (to a
%% client of the protocol the connection switched to).
take_buffer(Sock) ->
    Buf = get_buf(Sock),
    put_buf(Sock, <<>>),
    Buf.

%% -- internals ---------------------------------------------------------------

get_buf(Sock) ->
    case get({?MODULE, Sock}) of
        undefined -> <<>>;
        B -> B
    end.

put_buf(Sock, Buf) ->
    put({?MODULE, Sock}, Buf).

%% gen_tcp for a plain socket, ssl for a TLS one (an sslsocket record).
transport(Sock) when is_tuple(Sock), element(1, Sock) =:= sslsocket -> ssl;
transport(_Sock) -> gen_tcp.

recv(Sock, Timeout) ->
    (transport(Sock)):recv(Sock, 0, Timeout).

remaining(Deadline) ->
    max(0, Deadline - erlang:monotonic_time(millisecond)).

recv_more(no_socket, Buf, _Deadline) ->
    throw({client_error, incomplete, Buf});
recv_more(Sock, Buf, Deadline) ->
    case recv(Sock, remaining(Deadline)) of
        {ok, Data} -> <<Buf/binary, Data/binary>>;
        {error, timeout} -> throw({client_error, timeout, Buf});
        {error, closed} -> throw({client_error, closed, Buf});
        {error, Why} -> throw({client_error, Why, Buf})
    end.

read_until(Sock, Buf, Sep, Deadline) ->
    case binary:split(Buf, Sep) of
        [Before, After] -> {Before, After};
        [_] -> read_until(Sock, recv_more(Sock, Buf, Deadline), Sep, Deadline)
    end.

read_exact(_Sock, Buf, N, _Deadline) when byte_size(Buf) >= N ->
    <<Data:N/binary, Rest/binary>> = Buf,
    {Data, Rest};
read_exact(Sock, Buf, N, Deadline) ->
    read_exact(Sock, recv_more(Sock, Buf, Deadline), N, Deadline).

%% status-line = HTTP-version SP status-code SP [ reason-phrase ] (RFC 9112 §4)
parse_head(Head) ->
    [StatusLine | Lines] = binary:split(Head, <<"\r\n">>, [global]),
    case StatusLine of
        <<"HTTP/", Maj, ".", Min, " ", A, B, C, " ", Reason/binary>>
          when A >= $0, A =< $9, B >= $0, B =< $9, C >= $0, C =< $9 ->
            Status = (A - $0) * 100 + (B - $0) * 10 + (C - $0),
            {<<"HTTP/", Maj, ".", Min>>, Status, Reason, [field(L) || L <- Lines]};
        _ ->
            throw({client_error, {bad_status_line, StatusLine}, Head})
    end.

field(Line) ->
    case binary:split(Line, <<":">>) of
        [Name, Value] -> {string:lowercase(Name), string:trim(Value, both, " \t")};
        _ -> throw({client_error, {bad_field_line, Line}, Line})
    end.

%% RFC 9112 §6.3, in order.
framing(Status, _Headers, _Head) when Status < 200; Status =:= 204; Status =:= 304 ->
    none;
framing(_Status, _Headers, true) ->
    none;
framing(_Status, Headers, false) ->
    case [V || {<<"transfer-encoding">>, V} <- Headers] of
        [_ | _] ->
            chunked;
        [] ->
            case [V || {<<"content-length">>, V} <- Headers] of
                [V] -> {length, binary_to_integer(V)};
                [] -> close;
                Many -> throw({client_error, {many_content_lengths, Many}, <<>>})
            end
    end.

framing_tag({length, _}) -> {length};
framing_tag(F) -> {F}.

read_body(_Sock, none, Buf, _Deadline) ->
    {<<>>, [], [], Buf};
read_body(Sock, {length, N}, Buf, Deadline) ->
    {Body, Rest} = read_exact(Sock, Buf, N, Deadline),
    {Body, [], [], Rest};
read_body(Sock, close, Buf, Deadline) ->
    case until_closed(Sock, Deadline, [Buf]) of
        {ok, Body} -> {Body, [], [], <<>>};
        {timeout, Body} -> throw({client_error, timeout, Body})
    end;
read_body(Sock, chunked, Buf, Deadline) ->
    read_chunks(Sock, Buf, Deadline, [], []).

read_chunks(Sock, Buf0, Deadline, Acc, Sizes) ->
    {Line, Buf1} = read_until(Sock, Buf0, <<"\r\n">>, Deadline),
    [SizeHex | _] = binary:split(Line, <<";">>),
    case binary_to_integer(string:trim(SizeHex), 16) of
        0 ->
            {Trailers, Rest} = read_trailers(Sock, Buf1, Deadline, []),
            {iolist_to_binary(lists:reverse(Acc)), lists:reverse(Sizes), Trailers, Rest};
        Size ->
            {Data, Buf2} = read_exact(Sock, Buf1, Size + 2, Deadline),
            <<Chunk:Size/binary, "\r\n">> = Data,
            read_chunks(Sock, Buf2, Deadline, [Chunk | Acc], [Size | Sizes])
    end.

read_trailers(Sock, Buf0, Deadline, Acc) ->
    case read_until(Sock, Buf0, <<"\r\n">>, Deadline) of
        {<<>>, Rest} -> {lists:reverse(Acc), Rest};
        {Line, Rest} -> read_trailers(Sock, Rest, Deadline, [field(Line) | Acc])
    end.

%% The same body rules over a complete binary (no socket).
body_from(none, Bin) ->
    {ok, <<>>, [], [], Bin};
body_from({length, N}, Bin) ->
    case Bin of
        <<Body:N/binary, Rest/binary>> -> {ok, Body, [], [], Rest};
        _ -> incomplete
    end;
body_from(close, Bin) ->
    {ok, Bin, [], [], <<>>};
body_from(chunked, Bin) ->
    try read_chunks(no_socket, Bin, 0, [], []) of
        {Body, Sizes, Trailers, Rest} -> {ok, Body, Sizes, Trailers, Rest}
    catch
        throw:{client_error, _, _} -> incomplete
    end.
