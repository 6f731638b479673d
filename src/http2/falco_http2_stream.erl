%% @doc One HTTP/2 stream: a process per request (streams are concurrent,
%% DESIGN principle 3) running the shared pipeline ({@link falco_pipeline})
%% through the {@link falco_stream} behaviour, so handlers see the same
%% request map and give the same responses as over HTTP/1.1.
%%
%% The connection process ({@link falco_http2_conn}) owns the socket and the
%% protocol state; this process talks to it with messages:
%% <ul>
%% <li>in: `{h2_data, Data, Fin}' and `{h2_trailers, Fields}' (the request
%%     body, one message per `{read, Want}'; a tunnel's as they come, within
%%     its `{read, {grant, N}}' credit), `{h2_reply, Ref, Result}' (a
%%     send finished), `{h2_reset, Reason}' (a WebSocket session's stream
%%     was reset);</li>
%% <li>out: `{h2_stream, Id, Command}' with `{response, ...}', `{headers, ...}',
%%     `{tunnel, 200, Fields}' (the answer to an extended CONNECT),
%%     `{data, Data, Fin, Tag}', `{trailers, Fields, Tag}', `{read, Want}',
%%     `{inform, 100}'.</li>
%% </ul>
%% After the 200 of an extended CONNECT (RFC 8441) the process runs the
%% WebSocket session ({@link falco_ws_conn}), which reads and writes the
%% stream through its carrier, {@link falco_http2_tunnel}.
%% Request body: the connection holds it ({@link falco_http2_machine}) until
%% this process asks for it with `{read, Want}', and answers with one
%% message of at most `Want' bytes, whatever frames carried them; handing
%% it over gives the flow-control window back, so a handler that does not
%% read stops the client (RFC 9113 §5.2), and what a handler asks for lets
%% the window grow. `read_body(all)' asks for what `max_body' still allows
%% (413 beyond it) and gathers the body in one binary. `Expect:
%% 100-continue' is honoured on the first read that has to wait (RFC 9110
%% §10.1.1).
%%
%% Responses: full replies up to `send_buffer' (`h2_send_buffer', 64 KB)
%% are sent without waiting; larger ones, streamed pieces (`Send(Data)') and
%% file chunks go in pieces of at most `send_buffer', each waiting until the
%% connection has written it, which is the backpressure and the bound on
%% what a stream queues in the connection: a client that does not read
%% stalls the handler, and one that reads slower than `h2_send_min_rate'
%% gets the stream reset, the handler's send returning
%% `{error, send_timeout}'. Files are read in `send_buffer' chunks into
%% DATA frames (there is no sendfile through HTTP/2 framing).
%% Connection-specific fields never leave (§8.2.2).
%%
%% @private internal to falco
-module(falco_http2_stream).
-behaviour(falco_stream).

-export([init/4]).
-export([send_response/4, send_headers/3, send_data/2, send_end/2, send_file/6,
         read_body/2, trailers/1, switch_protocols/4]).
-export([endpoint/1]).

%% The request body as received so far: it is part of the stream state the
%% request carries (a read returns the new state), never in the process
%% dictionary.
-record(body, {buf = [] :: [falco_http2_buffer:pieces()],
               buf_size = 0 :: non_neg_integer(),
               fin = false :: boolean(),
               read = 0 :: non_neg_integer(),
               continue = false :: boolean(),
               trailers = [] :: [{binary(), binary()}]}).

-record(h2s, {conn :: pid(),
              id :: non_neg_integer(),
              %% the most response bytes one send puts in the connection's queue
              send_buffer :: pos_integer(),
              max_body :: non_neg_integer(),
              body_timeout :: timeout(),
              %% min_body_rate's rule, and its clock from the first wait
              min_body_rate = none :: falco_body_deadline:rule(),
              clock :: falco_body_deadline:clock() | undefined,
              body = #body{fin = true} :: #body{},
              %% reads so far (shared by every state of this stream), and
              %% how many there were when this state was made
              reads :: falco_stream:reads(),
              read_no = 0 :: non_neg_integer(),
              %% the stream's process: the body arrives in its mailbox
              owner :: pid(),
              %% the WebSocket session this stream runs once the pipeline
              %% returns (switch_protocols/4)
              switched :: undefined | falco_ws_conn:upgrade()}).
-opaque state() :: #h2s{}.
-export_type([state/0]).

%% @doc Runs stream `Id''s request through the pipeline, in the stream's
%% process ({@link falco_http2_worker}). `Ctx' has `handler', `listener',
%% `peer', `scheme', `max_body', `body_timeout' and `send_buffer', and may
%% have `min_body_rate', `handler_timeout', `proxy' (the connection's
%% PROXY header) and `body' (the whole request body, when it came with the
%% request). `{websocket, S, Upgrade}' when the handler upgraded the
%% stream (RFC 8441): the process goes on as the session.
-spec init(pid(), non_neg_integer(), map() | {error, falco_errors:reason(), binary() | undefined}, map()) ->
          ok | {error, term()} | {websocket, state(), falco_ws_conn:upgrade()}.
init(Conn, Id, Req0, Ctx = #{max_body := MaxBody, body_timeout := BodyTimeout,
                             send_buffer := SendBuffer}) ->
    S = #h2s{conn = Conn, id = Id, max_body = MaxBody, body_timeout = BodyTimeout,
             send_buffer = SendBuffer,
             min_body_rate = maps:get(min_body_rate, Ctx, none),
             reads = falco_stream:reads(), owner = self()},
    case Req0 of
        {error, Reason, Method} ->
            result(falco_pipeline:error_reply(Reason, #{method => Method,
                                                        listener => maps:get(listener, Ctx)},
                                              ?MODULE, S));
        _ ->
            run(Req0, Ctx, S)
    end.

run(Req0, Ctx, S0) ->
    #{body := Body, expect_continue := Continue} = Req0,
    S = S0#h2s{body = case Ctx of
                          #{body := Whole} ->
                              %% the whole body came with the request
                              %% (falco_http2_machine:prefetch/3): nothing
                              %% to ask for, no 100 (Continue) to send
                              Size = byte_size(Whole),
                              #body{buf = [Whole], buf_size = Size, fin = true, read = Size};
                          #{} ->
                              #body{fin = Body =:= none, continue = Continue}
                      end},
    Req1 = Req0#{peer => maps:get(peer, Ctx), scheme => maps:get(scheme, Ctx),
                 listener => maps:get(listener, Ctx), stream => {?MODULE, S}},
    Req = case Ctx of
              #{proxy := Proxy} -> Req1#{proxy => Proxy};
              _ -> Req1
          end,
    result(falco_pipeline:serve(Req, maps:get(handler, Ctx), ?MODULE, S, Ctx)).

%% When the pipeline could not finish the response (a streamed reply
%% crashed), the process ends and the connection resets the stream. After
%% the 200 of an extended CONNECT the process goes on as the WebSocket
%% session, outside the pipeline (and its handler_timeout), as over
%% HTTP/1.1.
result({ok, S = #h2s{switched = Upgrade}}) when Upgrade =/= undefined ->
    {websocket, S, Upgrade};
result({ok, _}) -> ok;
result(Error) -> Error.

%% -- responses -------------------------------------------------------------------

%% @private
-spec send_response(100..999, falco_stream:headers(), iodata(), state()) ->
          {ok, state()} | {error, term()}.
send_response(Status, Fields, Body, S = #h2s{conn = Conn, id = Id, send_buffer = Max}) ->
    case iolist_size(Body) of
        Size when Size =< Max ->
            %% Within the stream's share of the connection's queue: sent
            %% without waiting.
            Conn ! {h2_stream, Id, {response, Status, falco_http2_request:response_fields(Fields),
                                    Body}},
            {ok, S};
        Size ->
            {ok, S} = send_headers(Status, Fields, S),
            case pieces(iolist_to_binary(Body), Size, fin, S) of
                ok -> {ok, S};
                Error -> Error
            end
    end.

%% @private
-spec send_headers(100..999, falco_stream:headers(), state()) -> {ok, state()}.
send_headers(Status, Fields, S = #h2s{conn = Conn, id = Id}) ->
    Conn ! {h2_stream, Id, {headers, Status, falco_http2_request:response_fields(Fields)}},
    {ok, S}.

%% @private
-spec send_data(iodata(), state()) -> ok | {error, term()}.
send_data(Data, S) ->
    case iolist_size(Data) of
        0 -> ok;
        Size -> pieces(Data, Size, nofin, S)
    end.

%% @private
-spec send_end(falco_stream:headers(), state()) -> {ok, state()}.
send_end([], S = #h2s{conn = Conn, id = Id}) ->
    Conn ! {h2_stream, Id, {data, <<>>, fin, none}},
    {ok, S};
send_end(Trailers, S = #h2s{conn = Conn, id = Id}) ->
    Conn ! {h2_stream, Id, {trailers, falco_http2_request:response_fields(Trailers), none}},
    {ok, S}.

%% @private
-spec send_file(100..999, falco_stream:headers(), file:fd(), non_neg_integer(),
                non_neg_integer(), state()) -> {ok, state()} | {error, term()}.
send_file(Status, Fields, _Fd, _Offset, 0, S) ->
    send_response(Status, Fields, <<>>, S);
send_file(Status, Fields, Fd, Offset, Length, S) ->
    {ok, S} = send_headers(Status, Fields, S),
    file_body(Fd, Offset, Length, S).

file_body(Fd, Offset, Length, S = #h2s{send_buffer = Max}) ->
    case file:pread(Fd, Offset, min(Length, Max)) of
        {ok, Data} when byte_size(Data) >= Length ->
            case call(Data, fin, S) of
                ok -> {ok, S};
                Error -> Error
            end;
        {ok, Data} ->
            case call(Data, nofin, S) of
                ok -> file_body(Fd, Offset + byte_size(Data), Length - byte_size(Data), S);
                Error -> Error
            end;
        eof ->
            {error, file_truncated};
        {error, _} = Error ->
            Error
    end.

%% Data larger than send_buffer goes in pieces of that size, each sent
%% once the previous one is written: what a stream has queued in the
%% connection is bounded by send_buffer, and the connection's queue by
%% send_buffer times its streams.
pieces(Data, Size, Fin, S = #h2s{send_buffer = Max}) when Size =< Max ->
    call(Data, Fin, S);
pieces(Data, _Size, Fin, S = #h2s{send_buffer = Max}) ->
    <<Piece:Max/binary, Rest/binary>> = iolist_to_binary(Data),
    case call(Piece, nofin, S) of
        ok -> pieces(Rest, byte_size(Rest), Fin, S);
        Error -> Error
    end.

%% A send that waits until the connection wrote it (backpressure). If the
%% stream is reset by the client meanwhile this process is killed; if the
%% client reads too slowly the reply is {error, send_timeout}.
call(Data, Fin, #h2s{conn = Conn, id = Id}) ->
    Ref = make_ref(),
    Conn ! {h2_stream, Id, {data, Data, Fin, {self(), Ref}}},
    receive
        {h2_reply, Ref, Result} -> Result;
        %% only a WebSocket session traps exits (falco_ws_conn): the
        %% connection is gone, or ends the tunnel
        {'EXIT', Conn, _} -> {error, closed}
    end.

%% -- request body --------------------------------------------------------------------

%% @private
-spec read_body(all | pos_integer(), state()) -> falco_stream:body_result().
read_body(_Want, #h2s{owner = Owner}) when Owner =/= self() ->
    %% The body arrives as messages to the stream's process: another
    %% process would wait for them in vain until body_timeout.
    error({not_stream_process, "an HTTP/2 request body is read by the process that runs "
                               "the handler"});
read_body(Want, S = #h2s{reads = Reads, read_no = No0}) ->
    No = falco_stream:next_read(Reads, No0),
    {Tag, Data, S1} = read(Want, S),
    {Tag, Data, S1#h2s{read_no = No}}.

read(all, S) ->
    read_all(S, falco_http2_buffer:new());
read(Want, S = #h2s{body = B}) ->
    case B of
        #body{buf_size = 0, fin = true} ->
            {ok, <<>>, S};
        #body{buf_size = 0} ->
            S1 = clock(S),
            read(Want, S1#h2s{body = wait(B, Want, S1)});
        #body{buf = Buf, buf_size = Size, fin = Fin} ->
            Data = iolist_to_binary(lists:reverse(Buf)),
            {Give, Keep} = case Size > Want of
                               true -> split_binary(Data, Want);
                               false -> {Data, <<>>}
                           end,
            S1 = S#h2s{body = B#body{buf = [Keep || Keep =/= <<>>], buf_size = byte_size(Keep)}},
            case Keep =:= <<>> andalso Fin of
                true -> {ok, Give, S1};
                false -> {more, Give, S1}
            end
    end.

%% The body is gathered in a falco_http2_buffer: a few bytes of memory
%% per body byte, however small the pieces (a list of pieces cost 62-73
%% bytes per byte when they were 1 byte each, 2026-11-24).
read_all(S = #h2s{body = B = #body{buf = Buf, fin = Fin, read = Read}, max_body = Max}, Acc0) ->
    Acc = lists:foldl(fun falco_http2_buffer:add/2, Acc0, lists:reverse(Buf)),
    Emptied = B#body{buf = [], buf_size = 0},
    case Fin of
        true ->
            {ok, falco_http2_buffer:to_binary(Acc), S#h2s{body = Emptied}};
        false ->
            S1 = clock(S),
            read_all(S1#h2s{body = wait(Emptied, max(1, Max - Read + 1), S1)}, Acc)
    end.

%% The first wait for body bytes starts min_body_rate's clock.
clock(S = #h2s{clock = undefined, min_body_rate = Rule}) ->
    S#h2s{clock = falco_body_deadline:start(Rule, erlang:monotonic_time(millisecond))};
clock(S) ->
    S.

%% Asks the connection for up to `Want' bytes and waits for them (or the
%% end of the body), for body_timeout or less when min_body_rate's deadline
%% comes first ({@link falco_body_deadline}); enforces max_body on
%% everything received.
wait(B0, Want, #h2s{conn = Conn, id = Id, body_timeout = Wait, max_body = Max, clock = Clock}) ->
    Timeout = falco_body_deadline:timeout(Clock, B0#body.read, Wait,
                                          erlang:monotonic_time(millisecond)),
    B = case B0#body.continue of
            true -> Conn ! {h2_stream, Id, {inform, 100}}, B0#body{continue = false};
            false -> B0
        end,
    Conn ! {h2_stream, Id, {read, Want}},
    receive
        {h2_data, Data, Fin} ->
            Size = iolist_size(Data),
            Read = B#body.read + Size,
            ok = falco_stream:check_body(Read, Max),
            B#body{buf = [Data | B#body.buf], buf_size = B#body.buf_size + Size,
                   fin = Fin =:= fin, read = Read};
        {h2_trailers, Fields} ->
            B#body{fin = true, trailers = Fields}
    after Timeout ->
        throw({falco_error, body_timeout})
    end.

%% @private
%% The 200 of an extended CONNECT (RFC 8441 §5): a HEADERS frame without
%% END_STREAM, after which DATA carries the WebSocket frames both ways.
%% The connection marks the stream as a tunnel: a reset is then told to
%% this process (`{h2_reset, Reason}') instead of killing it, so the
%% session ends through the handler's terminate.
-spec switch_protocols(101 | 200, falco_stream:headers(), map(), state()) ->
          {ok, state()} | {error, not_http2_status}.
switch_protocols(200, Fields, Upgrade, S = #h2s{conn = Conn, id = Id}) ->
    Conn ! {h2_stream, Id, {tunnel, 200, falco_http2_request:response_fields(Fields)}},
    {ok, S#h2s{switched = Upgrade}};
switch_protocols(_Status, _Fields, _Upgrade, _S) ->
    {error, not_http2_status}.

%% @doc The connection, the stream's id and `h2_send_buffer': what the
%% stream's tunnel ({@link falco_http2_tunnel}) sends its commands with.
-spec endpoint(state()) -> {pid(), non_neg_integer(), pos_integer()}.
endpoint(#h2s{conn = Conn, id = Id, send_buffer = Max}) ->
    {Conn, Id, Max}.

%% @private
-spec trailers(state()) -> [{binary(), binary()}].
trailers(#h2s{body = #body{trailers = T}}) ->
    T.
