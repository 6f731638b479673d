%% @doc The HTTP/1.1 side of the stream interface ({@link falco_stream}):
%% response framing and request-body reading for one request, run inside
%% the connection process (no process per request, DESIGN principle 3).
%%
%% Response framing (RFC 9112 §6, §7, §9): full replies carry the
%% Content-Length the pipeline computed; streamed replies are chunked for
%% 1.1 peers and close-delimited for 1.0 peers; `Connection: close' is
%% added when the connection will not persist.
%%
%% Body reading (RFC 9112 §6.3, §7.1; RFC 9110 §10.1.1): the body state is
%% part of this stream state, which the request carries, so each read
%% returns a new state (and {@link falco_req:read_body/1} a new request).
%% `100 Continue' is sent on the first read that has to wait for the body.
%% Each wait for body bytes is bounded by `body_timeout' and by the
%% deadline of `min_body_rate' ({@link falco_body_deadline}), which also
%% bounds the discarding of a body the handler left unread.
%%
%% The connection must learn where the body ended to read the next
%% request, though the handler returns a response, not its last request.
%% So every read that touches the socket reports the new body state to the
%% connection process in a message, numbered by a per-connection counter
%% (the tracker); after the handler the connection takes the report whose
%% number the counter holds ({@link body_finish/1}), and a missing report
%% closes the connection: the framing of the next request is never
%% guessed. A second counter numbers every read, so a read from a state
%% that is not the latest raises instead of handing out bytes twice or
%% reading the socket from the wrong place. No process dictionary is used,
%% so nothing of one request outlives it.
%%
%% @private internal to falco
-module(falco_http1_stream).
-behaviour(falco_stream).

-export([tracker/0, new/5, template/3, new/3, with_body/5, closing/1, body_finish/1, switched/1]).
-export([hold_over/2, held/1, send_held/3]).
-export([send_response/4, send_headers/3, send_data/2, send_end/2, send_file/6,
         read_body/2, trailers/1, switch_protocols/4]).

-record(body, {framing = done :: {length, non_neg_integer()}
                                | {chunked, falco_http1_chunked:state()} | done,
               buf = <<>> :: binary(),
               pending = <<>> :: binary(),
               read = 0 :: non_neg_integer(),
               continue = none :: pending | none,
               trailers = [] :: [{binary(), binary()}],
               %% the socket's read buffer was widened for this body
               wide = false :: boolean(),
               %% the socket was read (or written, 100) since the last report
               io = false :: boolean(),
               %% min_body_rate's clock, from the first wait for body bytes
               clock :: falco_body_deadline:clock() | undefined}).

%% The connection, its reports' tag and count, and the read count.
-opaque tracker() :: {pid(), reference(), counters:counters_ref(), falco_stream:reads()}.

-record(h1s, {socket :: inet:socket() | ssl:sslsocket(),
              transport :: gen_tcp | ssl,
              %% the listener's read buffer, restored after a wide body
              buffer = 8192 :: pos_integer(),
              version :: {1, 0} | {1, 1},
              keep_alive :: boolean(),
              %% the listener's drain flag: a response while it drains closes
              drain :: falco_drain:flag() | undefined,
              max_body :: non_neg_integer(),
              body_timeout :: timeout(),
              min_body_rate :: falco_body_deadline:rule(),
              limits :: falco_http1:limits(),
              mode = full :: full | chunked | raw,
              close = false :: boolean(),
              body = #body{} :: #body{},
              tracker :: tracker() | undefined,
              %% the WebSocket session the connection becomes after this response
              switched :: map() | undefined,
              %% responses held back to go out with a later one (see respond/2)
              held = {[], 0} :: held(),
              %% the counters when this state was made; `none': the
              %% request has no body, so no read touches the socket and
              %% no report can come (nothing to look up or flush)
              read_no = 0 :: non_neg_integer(),
              report_no = 0 :: non_neg_integer() | none}).
-opaque state() :: #h1s{}.
%% Responses not sent yet, in order, and their size in bytes.
-opaque held() :: {iodata(), non_neg_integer()}.
-export_type([state/0, tracker/0, held/0]).

-define(WIDEN_ABOVE, 65536).
-define(WIDE_BUFFER, 262144).
%% An unread body up to this size is read and dropped to keep the
%% connection; a larger one closes it (RFC 9112 §9.3: a server may close
%% instead of discarding content).
-define(MAX_DISCARD, 1048576).
%% ... and read for at most this long (ms), whatever body_timeout and
%% min_body_rate allow: keeping the connection is not worth more. A
%% client trickling a chunked body the handler ignored held the discard
%% for as long as each piece came within body_timeout.
-define(MAX_DISCARD_MS, 2000).
%% `read_body(all)' reads a body of known length with exact-length reads:
%% the first of at most ?MAX_EXACT_READ, each later one of at most
%% ?EXACT_FACTOR times what the client has sent so far (a 1 MB body: 256 KB,
%% then the rest), so that few reads, each filling one binary, make the
%% body. On the inet backend an exact read allocates its whole length
%% before any byte comes: what a client can make falco reserve without
%% sending it stays one wide read buffer (256 KB, as a piecewise read's),
%% and beyond that it has to send a quarter of it first. An exact read not
%% done within body_timeout (or min_body_rate's deadline) takes what has
%% come (it stays in the socket) and goes on, so body_timeout stays a wait
%% between bytes: a silent client is answered 408 at it, a slow but
%% steady upload is not cut off.
-define(MAX_EXACT_READ, 262144).
%% A body larger than this is collected when its request is done (release/1).
-define(RELEASE_ABOVE, 262144).
-define(EXACT_FACTOR, 4).
%% The pieces a file body is sent in (see file_body/4).
-define(FILE_CHUNK, 262144).
%% At most this many bytes of responses are held back (see respond/2).
-define(HOLD_MAX, 16384).

%% @doc A connection's tracker of body reads (see the module doc); made
%% once per connection, in the connection process.
-spec tracker() -> tracker().
tracker() ->
    {self(), make_ref(), counters:new(1, [atomics]), falco_stream:reads()}.

%% @doc The stream state for one request, without a body.
-spec new(inet:socket() | ssl:sslsocket(), gen_tcp | ssl, {1, 0} | {1, 1}, boolean(), map()) -> state().
new(Socket, Transport, Version, KeepAlive, Conf) ->
    new(template(Socket, Transport, Conf), Version, KeepAlive).

%% @doc What the stream states of one connection share, read from the
%% listener's configuration once per connection rather than per request:
%% that map has over 32 keys, so each read is a hash lookup (six of them
%% and a read-buffer lookup were about 150 ns a request, 2026-11-28).
-spec template(inet:socket() | ssl:sslsocket(), gen_tcp | ssl, map()) -> state().
template(Socket, Transport, Conf = #{max_body := MaxBody, body_timeout := BodyTimeout,
                                     limits := Limits}) ->
    #h1s{socket = Socket, transport = Transport, version = {1, 1}, keep_alive = false,
         buffer = falco_transport:read_buffer(Transport, maps:get(inet_backend, Conf, inet)),
         drain = maps:get(drain, Conf, undefined), max_body = MaxBody, body_timeout = BodyTimeout,
         min_body_rate = maps:get(min_body_rate, Conf, none), limits = Limits}.

%% @doc The stream state for one request, without a body, from the
%% connection's {@link template/3}.
-spec new(state(), {1, 0} | {1, 1}, boolean()) -> state().
new(Template, Version, KeepAlive) ->
    Template#h1s{version = Version, keep_alive = KeepAlive}.

%% @doc The request body: its framing, the bytes already received after the
%% head, whether the client waits for `100 Continue', and the connection's
%% tracker.
-spec with_body(falco_http1:body_framing(), binary(), boolean(), tracker(), state()) -> state().
with_body(Framing0, Buf, Continue, Tracker = {_, _, Reports, Reads}, S = #h1s{limits = Limits}) ->
    Framing = case Framing0 of
                  none -> done;
                  {length, 0} -> done;
                  {length, N} -> {length, N};
                  chunked -> {chunked, falco_http1_chunked:init(Limits)}
              end,
    C = case Continue andalso Framing =/= done of
            true -> pending;
            false -> none
        end,
    S#h1s{body = #body{framing = Framing, buf = Buf, continue = C}, tracker = Tracker,
          read_no = falco_stream:read_count(Reads), report_no = report_no(Framing, Reports)}.

%% A request without a body is never reported (see the field): one
%% counters read and two mailbox looks fewer per request (a counters read
%% was the top user-space symbol of a hello profile, 2026-11-25).
report_no(done, _Reports) -> none;
report_no(_, Reports) -> counters:get(Reports, 1).

%% @doc Gives this request's stream the responses earlier requests of the
%% connection held back (see {@link held/1}): they go out first, with this
%% request's response or anything else this stream sends.
-spec hold_over(held() | none, state()) -> state().
hold_over(none, S) ->
    S;
hold_over(Held, S) ->
    S#h1s{held = Held}.

%% @doc The responses still held back after this request, if any: the
%% connection sends them ({@link send_held/3}) before it waits for bytes
%% or closes, or hands them to the next request's stream
%% ({@link hold_over/2}).
-spec held(state()) -> held() | none.
held(#h1s{held = {[], 0}}) ->
    none;
held(#h1s{held = Held}) ->
    Held.

%% @doc Sends responses held back.
-spec send_held(gen_tcp | ssl, inet:socket() | ssl:sslsocket(), held() | none) ->
          ok | {error, term()}.
send_held(_T, _Sock, none) ->
    ok;
send_held(T, Sock, {Out, _}) ->
    falco_transport:send(T, Sock, Out).

%% @doc The WebSocket session the connection switches to after this
%% response (see {@link switch_protocols/4}), if any.
-spec switched(state()) -> map() | undefined.
switched(#h1s{switched = Upgrade}) -> Upgrade.

%% @doc Whether the connection must close after this response.
-spec closing(state()) -> boolean().
closing(#h1s{close = Close}) -> Close.

%% @doc After the response (`S' is the state the pipeline returned), from
%% the body state the handler's last read reported: `{ok, Rest}' with the
%% bytes that follow the body (the next pipelined request), having read and
%% dropped what the handler left unread (up to 1 MB, for at most 2 s); or
%% `{close, Ended}' when the connection closes (the response said so, the
%% rest of the body is too large, too slow or in doubt), `Ended' telling
%% whether the request was read
%% to its end with nothing after it. A closing connection does not drain
%% the body first (RFC 9112 §9.6): the lingering close does what is needed.
-spec body_finish(state()) -> {ok, binary()} | {close, boolean()}.
body_finish(S = #h1s{close = Close}) ->
    case latest(S) of
        {ok, B} ->
            case B of
                _ when Close -> {close, ended(B)};
                #body{framing = done, buf = Buf} -> ok = narrow(B, S), ok = release(B), {ok, Buf};
                _ ->
                    case undiscardable(B) of
                        true -> {close, false};
                        false -> discard(B, S#h1s{max_body = B#body.read + ?MAX_DISCARD},
                                         falco_transport:deadline(?MAX_DISCARD_MS))
                    end
            end;
        lost ->
            {close, false}
    end.

%% After a body of more than ?RELEASE_ABOVE bytes the connection process
%% is collected at once: the body's binaries (the handler's, and the
%% driver's buffers they came in) are freed now rather than at the
%% process's next collection, which a lean keep-alive loop reaches late.
%% The next large read then gets the memory just freed, still in the
%% cache. upload_1mb: see docs/internals/http1.md.
release(#body{read = Read}) when Read > ?RELEASE_ABOVE ->
    _ = erlang:garbage_collect(),
    ok;
release(_) ->
    ok.

%% Whether the rest of an unread body is not worth reading to keep the
%% connection: the client still waits for `100 Continue' (it may never
%% send the body), or more than MAX_DISCARD bytes are announced.
undiscardable(#body{continue = pending}) -> true;
undiscardable(#body{framing = {length, Left}}) -> Left > ?MAX_DISCARD;
undiscardable(_) -> false.

%% Whether the bytes received end the body exactly (reads that took no
%% bytes from the socket are not reported, so the body may be done only in
%% the handler's state: the received bytes tell).
ended(#body{framing = done, buf = Buf}) -> Buf =:= <<>>;
ended(#body{framing = {length, N}, buf = Buf}) -> byte_size(Buf) =:= N;
ended(#body{framing = {chunked, C}, buf = Buf}) ->
    chunked_ended(falco_http1_chunked:decode(Buf, C)).

chunked_ended({done, _, _, Rest}) -> Rest =:= <<>>;
chunked_ended({more, Data, C}) ->
    case iolist_size(Data) of
        0 -> false;
        _ -> chunked_ended(falco_http1_chunked:decode(<<>>, C))
    end;
chunked_ended({error, _}) -> false.

%% The latest body state as far as the socket goes: this one if no read
%% touched the socket since it was made, else the last report (reads that
%% only took bytes already received change nothing the connection needs);
%% all reports are taken out of the mailbox.
latest(#h1s{tracker = undefined, body = B}) ->
    {ok, B};
latest(#h1s{report_no = none, body = B}) ->
    {ok, B};
latest(#h1s{tracker = {_, Ref, Reports, _}, report_no = No0, body = B0}) ->
    Result = case counters:get(Reports, 1) of
                 No0 ->
                     {ok, B0};
                 No ->
                     receive
                         {falco_http1_body, Ref, No, B} -> {ok, B}
                     after 0 ->
                         lost
                     end
             end,
    ok = flush_reports(Ref),
    Result.

flush_reports(Ref) ->
    receive
        {falco_http1_body, Ref, _, _} -> flush_reports(Ref)
    after 0 ->
        ok
    end.

%% Drops the rest of an unread body, at most max_body (set by the caller
%% to what was read plus 1 MB) in all, until `Deadline' (each wait is
%% shortened to it; past it the connection closes).
discard(B0, S = #h1s{body_timeout = Wait}, Deadline) ->
    Left = falco_transport:remaining(Deadline),
    try pull(B0#body{pending = <<>>}, S#h1s{body_timeout = min(Wait, Left)}) of
        #body{framing = done, buf = Buf} = B -> ok = narrow(B, S), {ok, Buf};
        _ when Left =:= 0 -> {close, false};
        B -> discard(B, S, Deadline)
    catch
        throw:{falco_error, _} -> {close, false}
    end.

%% -- responses ------------------------------------------------------------

%% @doc Sends the 101 of a WebSocket handshake (RFC 6455 §4.2.2): the
%% connection is the session's once the pipeline returns. A request with a
%% body cannot switch: the bytes after its head are not the session's.
-spec switch_protocols(101 | 200, falco_stream:headers(), map(), state()) ->
          {ok, state()} | {error, term()}.
switch_protocols(101, Fields, Upgrade, S = #h1s{body = #body{framing = done}}) ->
    case send(S, falco_http1_encode:head(101, Fields)) of
        {ok, S1} -> {ok, S1#h1s{switched = Upgrade}};
        Error -> Error
    end;
switch_protocols(_, _, _, _) ->
    {error, body_before_switch}.

%% @private
-spec send_response(100..999, falco_stream:headers(), iodata(), state()) ->
          {ok, state()} | {error, term()}.
send_response(Status, Fields0, Body, S0) ->
    {Fields, S} = connection_fields(Fields0, S0),
    respond(S, [falco_http1_encode:head(Status, Fields), Body]).

%% A full response whose client has sent more already (pipelining: bytes
%% follow the request in the buffer) is held back, up to HOLD_MAX bytes
%% in all, and goes out with the next one: one write for a batch of
%% pipelined requests instead of one per response (the write was a third
%% of a pipelined profile, 2026-11-25). The connection sends what is held
%% before it reads from the socket again or closes (falco_http1_conn), so
%% no response waits for the client; it may wait for the handlers of the
%% requests that came with it, as with a server that writes once per read.
%% A response that closes, or with a body still to be read, goes at once.
%% Each is held as one binary: the iolists of heads kept from request to
%% request outlived minor collections and grew the heaps (pipelined bench,
%% processes' peak 7.6-9.4 MB held as iolists, 6.3 MB as binaries;
%% elli 5.5).
respond(S = #h1s{close = false, body = #body{framing = done, buf = Next},
                 held = {Out, Size0}}, Data) when Next =/= <<>> ->
    case Size0 + iolist_size(Data) of
        Size when Size =< ?HOLD_MAX -> {ok, S#h1s{held = {[Out, iolist_to_binary(Data)], Size}}};
        _ -> send(S, Data)
    end;
respond(S, Data) ->
    send(S, Data).

%% @private
-spec send_headers(100..999, falco_stream:headers(), state()) -> {ok, state()} | {error, term()}.
send_headers(Status, Fields0, S0 = #h1s{version = Version}) ->
    {Fields1, Mode, S1} =
        case lists:keymember(<<"content-length">>, 1, Fields0) of
            true -> {Fields0, raw, S0};
            false when Version =:= {1, 1} ->
                {[{<<"transfer-encoding">>, <<"chunked">>} | Fields0], chunked, S0};
            false ->
                %% RFC 9112 §6.3: a 1.0 peer reads until the connection closes.
                {Fields0, raw, S0#h1s{keep_alive = false}}
        end,
    {Fields, S} = connection_fields(Fields1, S1#h1s{mode = Mode}),
    send(S, falco_http1_encode:head(Status, Fields)).

%% @private
-spec send_data(iodata(), state()) -> ok | {error, term()}.
send_data(Data, #h1s{mode = chunked, transport = T, socket = Sock}) ->
    case falco_http1_chunked:encode(Data) of
        [] -> ok;
        Chunk -> falco_transport:send(T, Sock, Chunk)
    end;
send_data(Data, #h1s{transport = T, socket = Sock}) ->
    falco_transport:send(T, Sock, Data).

%% @private
-spec send_end(falco_stream:headers(), state()) -> {ok, state()} | {error, term()}.
send_end(Trailers, S = #h1s{mode = chunked}) ->
    %% RFC 9110 §6.5.1: a trailer section carries only fields defined for
    %% trailers, and no connection-specific one is (§7.6.1): dropped, by
    %% the rule HTTP/2 drops them from every response section with.
    send(S, falco_http1_chunked:last(
              [F || {N, V} = F <- Trailers,
                    not falco_grammar:is_connection_specific(N, iolist_to_binary(V))]));
send_end(_Trailers, S) ->
    {ok, S}.

%% @private
-spec send_file(100..999, falco_stream:headers(), file:fd(), non_neg_integer(),
                non_neg_integer(), state()) -> {ok, state()} | {error, term()}.
send_file(Status, Fields0, Fd, Offset, Length, S0) ->
    {Fields, S} = connection_fields(Fields0, S0),
    case send(S, falco_http1_encode:head(Status, Fields)) of
        {ok, S1} when Length =:= 0 -> {ok, S1};
        {ok, S1} -> file_body(Fd, Offset, Length, S1);
        Error -> Error
    end.

%% A file body is read and sent in pieces of FILE_CHUNK, never with
%% file:sendfile/5: sendfile ignores send_timeout (OTP 25's socket backend
%% calls socket:sendfile/5 with `infinity'), so a client that stopped
%% reading pinned the connection, its process and the file forever (20
%% downloads of 20, still stuck at 150 s). Each send here blocks at most
%% send_timeout, after which the socket is closed (send_timeout_close).
%% Throughput of a 1 GB download with curl on loopback, 5 runs each,
%% medians, 2026-11-24, a shared and noisy 2-core machine: sendfile 850-870
%% MB/s, 64 KB pieces 680-705 MB/s, 256 KB pieces 820-1050 MB/s; server
%% CPU (utime + stime of the VM) per GB, medians of 5, two rounds: sendfile
%% 460 and 520 ms, 256 KB pieces 510 and 540 ms.
file_body(Fd, Offset, Length, S = #h1s{transport = T, socket = Sock}) ->
    Chunk = min(Length, ?FILE_CHUNK),
    case file:pread(Fd, Offset, Chunk) of
        {ok, Data} ->
            case falco_transport:send(T, Sock, Data) of
                ok when byte_size(Data) >= Length -> {ok, S};
                ok -> file_body(Fd, Offset + byte_size(Data), Length - byte_size(Data), S);
                Error -> Error
            end;
        eof -> {error, file_truncated};
        {error, _} = Error -> Error
    end.

%% RFC 9112 §9.3, §9.6: say when we will close; 1.0 peers are told
%% keep-alive. A listener that drains closes after this response.
connection_fields(Fields, S0) ->
    S = #h1s{keep_alive = KeepAlive0, version = Version, drain = Drain} = unread(S0),
    KeepAlive = KeepAlive0 andalso not falco_drain:draining(Drain),
    case lists:keyfind(<<"connection">>, 1, Fields) of
        {_, V} when not KeepAlive ->
            %% We close whatever the handler said, so say so (§9.6).
            case has_close(V) of
                true -> {Fields, S#h1s{close = true}};
                false -> {[{<<"connection">>, <<"close">>}
                           | [F || F = {N, _} <- Fields, N =/= <<"connection">>]],
                          S#h1s{close = true}}
            end;
        {_, V} ->
            {Fields, S#h1s{close = has_close(V)}};
        false when not KeepAlive ->
            {[{<<"connection">>, <<"close">>} | Fields], S#h1s{close = true}};
        false when Version =:= {1, 0} ->
            {[{<<"connection">>, <<"keep-alive">>} | Fields], S};
        false ->
            {Fields, S}
    end.

has_close(V) ->
    falco_grammar:has_element(V, <<"close">>).

%% Before the head: if the body the handler left unread is one that
%% body_finish/1 will not discard (or its state was lost), the connection
%% closes after this response, and the head says so (RFC 9112 §9.6). The
%% latest body state is taken now and kept in the state returned, which
%% is the one body_finish/1 gets.
unread(S = #h1s{tracker = undefined}) ->
    S;
unread(S = #h1s{report_no = none}) ->
    S;
unread(S = #h1s{keep_alive = false}) ->
    S;
unread(S = #h1s{tracker = {_, _, Reports, _}}) ->
    case latest(S) of
        {ok, B = #body{framing = done}} ->
            S#h1s{body = B, report_no = counters:get(Reports, 1)};
        {ok, B} ->
            S#h1s{body = B, report_no = counters:get(Reports, 1),
                  keep_alive = not undiscardable(B)};
        lost ->
            S#h1s{keep_alive = false}
    end.

%% Every write of a response part goes here: what is held goes first.
send(S = #h1s{transport = T, socket = Sock, held = {[], 0}}, Data) ->
    case falco_transport:send(T, Sock, Data) of
        ok -> {ok, S};
        {error, _} = Error -> Error
    end;
send(S = #h1s{transport = T, socket = Sock, held = {Out, _}}, Data) ->
    case falco_transport:send(T, Sock, [Out, Data]) of
        ok -> {ok, S#h1s{held = {[], 0}}};
        {error, _} = Error -> Error
    end.

%% -- request body -----------------------------------------------------------

%% @private
-spec read_body(all | pos_integer(), state()) -> falco_stream:body_result().
read_body(Want, S = #h1s{tracker = undefined, body = B0}) ->
    %% A state without a body (error replies, tests).
    {Tag, Data, B} = read(Want, B0, S),
    {Tag, Data, S#h1s{body = B}};
read_body(Want, S = #h1s{tracker = {_, _, _, Reads}, read_no = No0, body = B0}) ->
    No = falco_stream:next_read(Reads, No0),
    {Tag, Data, B} = read(Want, B0, S),
    {Tag, Data, report(B, S#h1s{read_no = No})}.

%% After a read that touched the socket the connection is told the new body
%% state (see the module doc).
report(B = #body{io = false}, S) ->
    S#h1s{body = B};
report(B0, S = #h1s{tracker = {Conn, Ref, Reports, _}}) ->
    B = B0#body{io = false},
    ok = counters:add(Reports, 1, 1),
    No = counters:get(Reports, 1),
    Conn ! {falco_http1_body, Ref, No, B#body{pending = <<>>}},
    S#h1s{body = B, report_no = No}.

read(all, B = #body{framing = {length, Left}, pending = <<>>, read = Read}, S) ->
    ok = falco_stream:check_body(Read + Left, S#h1s.max_body),
    read_all(B, S, []);
read(all, B, S) ->
    read_all(B, S, []);
read(_Want, B = #body{pending = <<>>, framing = done}, _S) ->
    {ok, <<>>, B};
read(Want, B = #body{pending = <<>>}, S) ->
    read(Want, pull(B, S), S);
read(Want, B = #body{pending = P, framing = F}, _S) ->
    case P of
        <<Data:Want/binary, Rest/binary>> when Rest =/= <<>> ->
            {more, Data, B#body{pending = Rest}};
        _ when F =:= done ->
            {ok, P, B#body{pending = <<>>}};
        _ ->
            {more, P, B#body{pending = <<>>}}
    end.

read_all(B = #body{pending = P, framing = done}, _S, Acc) ->
    {ok, join(Acc, P), B#body{pending = <<>>}};
read_all(B0 = #body{pending = P, framing = {length, Left}, buf = <<>>, read = Read}, S, Acc)
  when Left > 0 ->
    ok = falco_stream:check_body(Read + Left, S#h1s.max_body),
    Want = min(Left, max(?MAX_EXACT_READ, ?EXACT_FACTOR * Read)),
    B = clock(continue(B0, S), S),
    {Back, Acc1} = put_back(P, Acc, S),
    %% The rule allows this read the time the whole of it earns.
    case exact_recv(S, B#body{read = Read + Want}, Back + Want) of
        {ok, Data} when Want =:= Left ->
            {ok, join(Acc1, Data),
             B#body{framing = done, pending = <<>>, read = Read + Left, io = true}};
        {ok, Data} ->
            read_all(B#body{framing = {length, Left - Want}, pending = Data, read = Read + Want,
                            io = true}, S, Acc1);
        {partial, <<_:Back/binary>>} ->
            %% only the bytes put back: nothing came
            throw({falco_error, body_timeout});
        {partial, <<Got:Back/binary, Data/binary>>} ->
            %% what had come, perhaps with bytes past this body: pull/2 cuts it
            read_all(B#body{buf = Data, pending = <<>>, io = true}, S, piece(Got, Acc1))
    end;
read_all(B = #body{pending = P}, S, Acc) ->
    read_all(pull(B#body{pending = <<>>}, S), S, piece(P, Acc)).

%% The bytes of the body held so far go back in front of the socket's
%% (falco_transport:unrecv/3) when they are all there is, so that the next
%% exact read returns them and the new bytes as one binary, filled by the
%% driver: a 1 MB body is then read as 256 KB, put back, and read whole,
%% and the join/2 that copied the whole body again (a fifth of the CPU of
%% an upload_1mb request, perf 2026-11-28) copies nothing. Returns how
%% many bytes went back, and the pieces still to join.
put_back(<<>>, Acc, _S) ->
    {0, Acc};
put_back(P, [], #h1s{transport = T, socket = Sock}) ->
    case falco_transport:unrecv(T, Sock, P) of
        ok -> {byte_size(P), []};
        {error, _} -> {0, [P]}
    end;
put_back(P, Acc, _S) ->
    {0, piece(P, Acc)}.

%% The pieces read, reversed; none is empty.
piece(<<>>, Acc) -> Acc;
piece(P, Acc) -> [P | Acc].

%% The pieces read (reversed) and the last one, as one binary; a lone
%% piece is not copied.
join([], Last) -> Last;
join(Acc, Last) -> iolist_to_binary(lists:reverse(Acc, [Last])).

%% @private
-spec trailers(state()) -> [{binary(), binary()}].
trailers(#h1s{body = #body{trailers = T}}) ->
    T.

%% Moves at least some body bytes (or the end) into `pending', with at
%% most one recv. Enforces max_body on everything read.
pull(B = #body{framing = {length, Left}, buf = <<>>}, S) ->
    B1 = clock(widen(Left, continue(B, S), S), S),
    Data = recv(S, B1, 0),
    pull(B1#body{buf = Data, io = true}, S);
pull(B = #body{framing = {length, Left}, buf = Buf, read = Read}, S) ->
    case Buf of
        <<Data:Left/binary, Rest/binary>> ->
            add(B#body{framing = done, buf = Rest}, Data, Read, S);
        _ ->
            add(B#body{framing = {length, Left - byte_size(Buf)}, buf = <<>>}, Buf, Read, S)
    end;
pull(B = #body{framing = {chunked, C0}, buf = Buf, read = Read}, S = #h1s{max_body = Max}) ->
    case falco_http1_chunked:decode(Buf, C0) of
        {more, Data, C} ->
            Size = iolist_size(Data),
            %% A chunk announced larger than what max_body still allows is
            %% refused now, not after waiting for its data.
            ok = falco_stream:check_body(Read + Size + falco_http1_chunked:data_left(C), Max),
            case Size of
                0 ->
                    B1 = clock(widen(infinity, continue(B, S), S), S),
                    More = recv(S, B1, 0),
                    pull(B1#body{framing = {chunked, C}, buf = More, io = true}, S);
                _ ->
                    add(B#body{framing = {chunked, C}, buf = <<>>}, iolist_to_binary(Data), Read, S)
            end;
        {done, Data, Trailers, Rest} ->
            add(B#body{framing = done, buf = Rest, trailers = Trailers},
                iolist_to_binary(Data), Read, S);
        {error, Reason} ->
            throw({falco_error, Reason})
    end;
pull(B = #body{framing = done}, _S) ->
    B.

%% recv(S, 0) returns at most one socket buffer, and on gen_tcp's socket
%% backend it allocates the whole buffer whatever arrived. The listener's
%% is 8 KB there (falco_transport:read_buffer/2): with 64 KB, 50 keep-alive connections held
%% 57 -> 350 MB of mostly empty read buffers until their next GC
%% (pipelined bench, 2026-11-23). A body of more than 64 KB widens the
%% buffer to 256 KB until the request is done: 7.7 -> 3.1 ms of CPU per
%% streamed 20 MB upload, 2026-11-22. Reads stay recv(0), so body_timeout
%% remains a bound on each wait, never on the whole body.
widen(Left, B = #body{wide = false}, #h1s{transport = T, socket = Sock})
  when Left > ?WIDEN_ABOVE ->
    _ = setopts(T, Sock, [{buffer, ?WIDE_BUFFER}]),
    B#body{wide = true, io = true};
widen(_Left, B, _S) ->
    B.

narrow(#body{wide = true}, #h1s{transport = T, socket = Sock, buffer = Buffer}) ->
    _ = setopts(T, Sock, [{buffer, Buffer}]),
    ok;
narrow(#body{wide = false}, _S) ->
    ok.

%% gen_tcp sockets take inet:setopts/2; ssl (and a test's transport
%% module) its own.
setopts(gen_tcp, Sock, Opts) -> inet:setopts(Sock, Opts);
setopts(T, Sock, Opts) -> T:setopts(Sock, Opts).

add(B, Data, Read, #h1s{max_body = Max}) ->
    N = Read + byte_size(Data),
    ok = falco_stream:check_body(N, Max),
    B#body{pending = Data, read = N}.

continue(B = #body{continue = pending}, #h1s{transport = T, socket = Sock}) ->
    _ = T:send(Sock, falco_http1_encode:continue()),
    B#body{continue = none, io = true};
continue(B, _S) ->
    B.

%% The first wait for body bytes starts min_body_rate's clock.
clock(B = #body{clock = undefined}, #h1s{min_body_rate = Rule}) ->
    B#body{clock = falco_body_deadline:start(Rule, erlang:monotonic_time(millisecond))};
clock(B, _S) ->
    B.

%% One exact-length read (see ?MAX_EXACT_READ): `{partial, Data}' when its
%% wait ended first but some bytes had come (they stay in the socket).
exact_recv(S = #h1s{transport = T, socket = Sock}, B, Len) ->
    case recv_within(S, B, Len) of
        {ok, Data} ->
            {ok, Data};
        {error, timeout} ->
            case T:recv(Sock, 0, 0) of
                {ok, Data} -> {partial, Data};
                {error, timeout} -> throw({falco_error, body_timeout});
                {error, _} -> throw({falco_error, {bad_request, body_incomplete}})
            end;
        {error, _} ->
            throw({falco_error, {bad_request, body_incomplete}})
    end.

%% A wait for body bytes: body_timeout, or less when min_body_rate's
%% deadline for the bytes received so far comes first.
recv(S, B, Len) ->
    case recv_within(S, B, Len) of
        {ok, Data} -> Data;
        {error, timeout} -> throw({falco_error, body_timeout});
        {error, _} -> throw({falco_error, {bad_request, body_incomplete}})
    end.

recv_within(#h1s{transport = T, socket = Sock, body_timeout = Wait}, #body{clock = Clock, read = Read},
            Len) ->
    Timeout = falco_body_deadline:timeout(Clock, Read, Wait, erlang:monotonic_time(millisecond)),
    T:recv(Sock, Len, Timeout).
