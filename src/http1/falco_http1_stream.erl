%% @doc The HTTP/1.1 side of the stream interface ({@link falco_stream}):
%% response framing and request-body reading for one request, run inside
%% the connection process (no process per request, DESIGN principle 3).
%%
%% Response framing (RFC 9112 §6, §7, §9): full replies carry the
%% Content-Length the pipeline computed; streamed replies are chunked for
%% 1.1 peers and close-delimited for 1.0 peers; `Connection: close' is
%% added when the connection will not persist.
%%
%% Body reading (RFC 9112 §6.3, §7.1; RFC 9110 §10.1.1): the body state
%% lives in this process's dictionary, not in the request map, so a handler
%% that reads the body and then returns without the updated request can
%% never desynchronise the framing of the next request. `100 Continue' is
%% sent on the first read that has to wait for the body.
-module(falco_http1_stream).
-behaviour(falco_stream).

-export([new/5, closing/1, body_init/4, body_finish/1]).
-export([send_response/4, send_headers/3, send_data/2, send_end/2, send_file/6,
         read_body/2, trailers/1]).

-record(h1s, {socket :: inet:socket() | ssl:sslsocket(),
              transport :: gen_tcp | ssl,
              version :: {1, 0} | {1, 1},
              keep_alive :: boolean(),
              max_body :: non_neg_integer(),
              body_timeout :: timeout(),
              limits :: falco_http1:limits(),
              mode = full :: full | chunked | raw,
              close = false :: boolean()}).
-opaque state() :: #h1s{}.
-export_type([state/0]).

-record(body, {framing :: {length, non_neg_integer()} | {chunked, falco_http1_chunked:state()} | done,
               buf :: binary(),
               pending = <<>> :: binary(),
               read = 0 :: non_neg_integer(),
               continue :: pending | none,
               trailers = [] :: [{binary(), binary()}]}).

-define(BODY, falco_http1_body).
-define(WIDE, falco_http1_wide_buffer).
-define(BUFFER, 8192).
-define(WIDEN_ABOVE, 65536).
-define(WIDE_BUFFER, 262144).
%% An unread body up to this size is read and dropped to keep the
%% connection; a larger one closes it (RFC 9112 §9.3: a server may close
%% instead of discarding content).
-define(MAX_DISCARD, 1048576).
%% A body whose missing part is at most this big is read with one
%% exact-length recv (one allocation). body_timeout then bounds that whole
%% read, which is harmless at this size; a larger remainder is read piece by
%% piece so body_timeout stays a wait between bytes (a slow but steady
%% upload of a large body is not cut off).
-define(MAX_EXACT_READ, 65536).

%% @doc The stream state for one request.
-spec new(inet:socket() | ssl:sslsocket(), gen_tcp | ssl, {1, 0} | {1, 1}, boolean(), map()) -> state().
new(Socket, Transport, Version, KeepAlive, #{max_body := MaxBody, body_timeout := BodyTimeout,
                                             limits := Limits}) ->
    #h1s{socket = Socket, transport = Transport, version = Version, keep_alive = KeepAlive,
         max_body = MaxBody, body_timeout = BodyTimeout, limits = Limits}.

%% @doc Whether the connection must close after this response.
-spec closing(state()) -> boolean().
closing(#h1s{close = Close}) -> Close.

%% @doc Sets up body reading: the framing and the bytes already received.
-spec body_init(falco_http1:body_framing(), binary(), boolean(), state()) -> ok.
body_init(Framing0, Buf, Continue, #h1s{limits = Limits}) ->
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
    _ = put(?BODY, #body{framing = Framing, buf = Buf, continue = C}),
    ok.

%% @doc After the response: the bytes that follow the body (the next
%% pipelined request), reading and dropping what the handler left unread,
%% or `close' when that is unsafe or too large, or when the connection
%% closes after this response anyway.
-spec body_finish(state()) -> {ok, binary()} | close.
body_finish(S) ->
    Result = finish_body(S),
    ok = narrow(S),
    Result.

finish_body(S = #h1s{close = Close}) ->
    case erase(?BODY) of
        #body{framing = done, buf = Buf} ->
            {ok, Buf};
        #body{} when Close ->
            %% RFC 9112 §9.6: the connection closes after this response
            %% (the client asked, or we decided), so no further request
            %% is framed after this body: reading it to the end would only
            %% keep the socket open up to body_timeout per read. The
            %% lingering close reads briefly what is still in flight.
            close;
        #body{continue = pending} ->
            %% The client may be waiting for 100 before sending: never guess.
            close;
        #body{framing = {length, Left}} when Left > ?MAX_DISCARD ->
            close;
        B ->
            discard(B, S)
    end.

discard(B0, S) ->
    try pull(B0#body{pending = <<>>}, S#h1s{max_body = B0#body.read + ?MAX_DISCARD}) of
        #body{framing = done, buf = Buf} -> {ok, Buf};
        B -> discard(B, S)
    catch
        throw:{falco_error, _} -> close
    end.

%% -- responses ------------------------------------------------------------

%% @private
-spec send_response(100..999, falco_stream:headers(), iodata(), state()) ->
          {ok, state()} | {error, term()}.
send_response(Status, Fields0, Body, S0) ->
    {Fields, S} = connection_fields(Fields0, S0),
    send(S, [falco_http1_encode:head(Status, Fields), Body]).

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
        Chunk -> T:send(Sock, Chunk)
    end;
send_data(Data, #h1s{transport = T, socket = Sock}) ->
    T:send(Sock, Data).

%% @private
-spec send_end(falco_stream:headers(), state()) -> {ok, state()} | {error, term()}.
send_end(Trailers, S = #h1s{mode = chunked}) ->
    send(S, falco_http1_chunked:last(Trailers));
send_end(_Trailers, S) ->
    {ok, S}.

%% @private
-spec send_file(100..999, falco_stream:headers(), file:fd(), non_neg_integer(),
                non_neg_integer(), state()) -> {ok, state()} | {error, term()}.
send_file(Status, Fields0, Fd, Offset, Length, S0) ->
    {Fields, S} = connection_fields(Fields0, S0),
    case send(S, falco_http1_encode:head(Status, Fields)) of
        {ok, S} when Length =:= 0 -> {ok, S};
        {ok, S} -> file_body(Fd, Offset, Length, S);
        Error -> Error
    end.

file_body(Fd, Offset, Length, S = #h1s{transport = gen_tcp, socket = Sock}) ->
    case file:sendfile(Fd, Sock, Offset, Length, []) of
        {ok, _} -> {ok, S};
        {error, _} = Error -> Error
    end;
file_body(Fd, Offset, Length, S = #h1s{transport = T, socket = Sock}) ->
    Chunk = min(Length, 65536),
    case file:pread(Fd, Offset, Chunk) of
        {ok, Data} ->
            case T:send(Sock, Data) of
                ok when byte_size(Data) >= Length -> {ok, S};
                ok -> file_body(Fd, Offset + byte_size(Data), Length - byte_size(Data), S);
                Error -> Error
            end;
        eof -> {error, file_truncated};
        {error, _} = Error -> Error
    end.

%% RFC 9112 §9.3, §9.6: say when we will close; 1.0 peers are told keep-alive.
connection_fields(Fields, S = #h1s{keep_alive = KeepAlive, version = Version}) ->
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
    falco_http1:has_token(iolist_to_binary(V), <<"close">>).

send(S = #h1s{transport = T, socket = Sock}, Data) ->
    case T:send(Sock, Data) of
        ok -> {ok, S};
        {error, _} = Error -> Error
    end.

%% -- request body -----------------------------------------------------------

%% @private
-spec read_body(all | pos_integer(), state()) -> falco_stream:body_result().
read_body(all, S = #h1s{max_body = Max}) ->
    B0 = get(?BODY),
    case B0 of
        #body{framing = {length, Left}, pending = <<>>, read = Read} when Read + Left > Max ->
            throw({falco_error, content_too_large});
        #body{framing = {length, Left}, pending = <<>>, buf = Buf, read = Read}
          when byte_size(Buf) < Left, Left - byte_size(Buf) =< ?MAX_EXACT_READ ->
            %% One exact-length recv: a single allocation for the whole body.
            B = continue(B0, S),
            Data = recv(S, Left - byte_size(Buf)),
            _ = put(?BODY, B#body{framing = done, buf = <<>>, read = Read + Left}),
            {ok, <<Buf/binary, Data/binary>>};
        _ ->
            read_all(B0, S, [])
    end;
read_body(Want, S) ->
    case get(?BODY) of
        #body{pending = <<>>, framing = done} ->
            {ok, <<>>};
        B0 = #body{pending = <<>>} ->
            _ = put(?BODY, pull(B0, S)),
            read_body(Want, S);
        B = #body{pending = P, framing = F} ->
            case P of
                <<Data:Want/binary, Rest/binary>> when Rest =/= <<>> ->
                    _ = put(?BODY, B#body{pending = Rest}),
                    {more, Data};
                _ ->
                    _ = put(?BODY, B#body{pending = <<>>}),
                    case F of
                        done -> {ok, P};
                        _ -> {more, P}
                    end
            end
    end.

read_all(B = #body{pending = P, framing = done}, _S, Acc) ->
    _ = put(?BODY, B#body{pending = <<>>}),
    {ok, iolist_to_binary(lists:reverse(Acc, [P]))};
read_all(B = #body{pending = P}, S, Acc) ->
    read_all(pull(B#body{pending = <<>>}, S), S, [P | Acc]).

%% @private
-spec trailers(state()) -> [{binary(), binary()}].
trailers(_S) ->
    case get(?BODY) of
        #body{trailers = T} -> T;
        undefined -> []
    end.

%% Moves at least some body bytes (or the end) into `pending', with at
%% most one recv. Enforces max_body on everything read.
pull(B = #body{framing = {length, Left}, buf = <<>>}, S) ->
    B1 = continue(B, S),
    ok = widen(Left, S),
    Data = recv(S, 0),
    pull(B1#body{buf = Data}, S);
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
            case Read + Size + falco_http1_chunked:data_left(C) > Max of
                true -> throw({falco_error, content_too_large});
                false -> ok
            end,
            case Size of
                0 ->
                    B1 = continue(B, S),
                    ok = widen(infinity, S),
                    More = recv(S, 0),
                    pull(B1#body{framing = {chunked, C}, buf = More}, S);
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
%% is 8 KB (falco_listener_sup): with 64 KB, 50 keep-alive connections held
%% 57 -> 350 MB of mostly empty read buffers until their next GC
%% (pipelined bench, 2026-11-23). A body of more than 64 KB widens the
%% buffer to 256 KB until the request is done: 7.7 -> 3.1 ms of CPU per
%% streamed 20 MB upload, 2026-11-22. Reads stay recv(0), so body_timeout
%% remains a bound on each wait, never on the whole body.
widen(Left, #h1s{transport = T, socket = Sock}) when Left > ?WIDEN_ABOVE ->
    case get(?WIDE) of
        true -> ok;
        undefined ->
            _ = setopts(T, Sock, [{buffer, ?WIDE_BUFFER}]),
            _ = put(?WIDE, true),
            ok
    end;
widen(_Left, _S) ->
    ok.

narrow(#h1s{transport = T, socket = Sock}) ->
    case erase(?WIDE) of
        true -> _ = setopts(T, Sock, [{buffer, ?BUFFER}]), ok;
        undefined -> ok
    end.

setopts(gen_tcp, Sock, Opts) -> inet:setopts(Sock, Opts);
setopts(T, Sock, Opts) -> T:setopts(Sock, Opts).

add(B, Data, Read, #h1s{max_body = Max}) ->
    case Read + byte_size(Data) of
        N when N > Max -> throw({falco_error, content_too_large});
        N -> B#body{pending = Data, read = N}
    end.

continue(B = #body{continue = pending}, #h1s{transport = T, socket = Sock}) ->
    _ = T:send(Sock, falco_http1_encode:continue()),
    B#body{continue = none};
continue(B, _S) ->
    B.

recv(#h1s{transport = T, socket = Sock, body_timeout = Timeout}, Len) ->
    case T:recv(Sock, Len, Timeout) of
        {ok, Data} -> Data;
        {error, timeout} -> throw({falco_error, body_timeout});
        {error, _} -> throw({falco_error, {bad_request, body_incomplete}})
    end.
