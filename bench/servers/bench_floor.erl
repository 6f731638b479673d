%% bench_floor: what GET /hello costs an Erlang server with no HTTP work;
%% not a server.
%%
%% One process per connection on gen_tcp (inet driver, passive mode), as
%% falco and every peer of the matrix run: it yields, reads with
%% `gen_tcp:recv(S, 0, T)', finds the end of each head with
%% `binary:match/2', writes one fixed response per head (those of one read
%% in one write) and closes after a head that says `Connection: close'
%% (matched in the two spellings the bench's clients send; that response
%% says `connection: close' too). No parsing, no request, no handler, no
%% limits: what is left of a request's cost is the runtime's and the
%% kernel's, which every such server pays on the host of the run
%% (docs/internals/http1.md). It answers only the scenarios of GET /hello
%% (bench_scenarios:unsupported/2), with the bytes every fixture sends;
%% its `date' field is the time it started, not the time of the response.
%%
%% A connection that opens with HTTP/2's preface (`--protocol h2', h2c with
%% prior knowledge) gets the same floor for HTTP/2: an empty SETTINGS, an
%% ACK for each of the client's, and for each HEADERS frame a fixed
%% response (HEADERS with the same fields, HPACK literals of static names,
%% then DATA with END_STREAM) made by a process of its own, as falco and
%% cowboy run one per stream. The streams of one read start together and
%% their responses leave in one write. No HPACK decoding, no frame or
%% request checks, no flow control (13-byte bodies fit any window the
%% client opens), no body (GET only) (docs/internals/http2.md).
-module(bench_floor).

-export([start/2, version/0]).

-define(ACCEPTORS, 10).
-define(IDLE_MS, 60000).
-define(PREFACE, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").

-spec start(inet:port_number(), atom()) -> ok | {error, term()}.
start(Port, _Scenario) ->
    Self = self(),
    Owner = spawn(fun() -> own(Self, Port) end),
    receive
        {Owner, Result} -> Result
    after 10000 ->
        {error, timeout}
    end.

-spec version() -> string().
version() ->
    "OTP " ++ erlang:system_info(otp_release).

%% The listen socket's owner: it lives as long as the BEAM.
own(Parent, Port) ->
    case gen_tcp:listen(Port, [binary, {ip, {127, 0, 0, 1}}, {active, false}, {reuseaddr, true},
                               {nodelay, true}, {backlog, 1024}]) of
        {ok, L} ->
            Responses = {response(<<>>), response(<<"connection: close\r\n">>)},
            _ = [spawn(fun() -> accept(L, Responses) end) || _ <- lists:seq(1, ?ACCEPTORS)],
            Parent ! {self(), ok},
            receive after infinity -> ok end;
        {error, _} = Error ->
            Parent ! {self(), Error}
    end.

%% Each connection's process took it from the listen socket; another
%% takes its place in accept.
accept(L, Responses) ->
    case gen_tcp:accept(L) of
        {ok, S} ->
            _ = spawn(fun() -> accept(L, Responses) end),
            first(S, <<>>, Responses);
        {error, closed} ->
            ok;
        {error, _} ->
            %% out of descriptors, say: try again in a moment
            receive after 10 -> ok end,
            accept(L, Responses)
    end.

%% The connection's first bytes: HTTP/2's preface, or an HTTP/1.1 head.
first(S, Buf, Responses) ->
    case gen_tcp:recv(S, 0, ?IDLE_MS) of
        {ok, Data} ->
            case <<Buf/binary, Data/binary>> of
                <<?PREFACE, Rest/binary>> ->
                    h2(S, Rest);
                Short when byte_size(Short) < byte_size(<<?PREFACE>>) ->
                    case binary:longest_common_prefix([Short, <<?PREFACE>>]) of
                        N when N =:= byte_size(Short) -> first(S, Short, Responses);
                        _ -> answer(S, Short, Responses)
                    end;
                Head ->
                    answer(S, Head, Responses)
            end;
        {error, _} ->
            gen_tcp:close(S)
    end.

read(S, Buf, Responses) ->
    erlang:yield(),
    case gen_tcp:recv(S, 0, ?IDLE_MS) of
        {ok, Data} -> answer(S, <<Buf/binary, Data/binary>>, Responses);
        {error, _} -> gen_tcp:close(S)
    end.

%% One response per complete head in the buffer, all of them in one
%% write (pipelining).
answer(S, Buf, Responses) ->
    answer(S, Buf, Responses, 0).

answer(S, Buf, Responses = {KeepAlive, Closing}, N) ->
    case binary:match(Buf, <<"\r\n\r\n">>) of
        nomatch when N =:= 0 ->
            read(S, Buf, Responses);
        nomatch ->
            case gen_tcp:send(S, lists:duplicate(N, KeepAlive)) of
                ok -> read(S, Buf, Responses);
                {error, _} -> gen_tcp:close(S)
            end;
        {At, 4} ->
            <<Head:At/binary, _:4/binary, Rest/binary>> = Buf,
            case binary:match(Head, [<<"Connection: close">>, <<"connection: close">>]) of
                nomatch ->
                    answer(S, Rest, Responses, N + 1);
                _ ->
                    _ = gen_tcp:send(S, [lists:duplicate(N, KeepAlive), Closing]),
                    gen_tcp:close(S)
            end
    end.

%% -- HTTP/2 ----------------------------------------------------------------

h2(S, Buf) ->
    Block = h2_block(),
    case gen_tcp:send(S, frame(4, 0, 0, <<>>)) of
        ok -> frames(S, Buf, Block, [], []);
        {error, _} -> gen_tcp:close(S)
    end.

h2_read(S, Buf, Block) ->
    erlang:yield(),
    case gen_tcp:recv(S, 0, ?IDLE_MS) of
        {ok, Data} -> frames(S, <<Buf/binary, Data/binary>>, Block, [], []);
        {error, _} -> gen_tcp:close(S)
    end.

%% The whole frames of a read: each HEADERS starts its stream's process;
%% then the answers, in the order of the frames, in one write.
frames(S, <<Len:24, Type, Flags, _:1, Id:31, Payload:Len/binary, Rest/binary>>, Block, Acks,
       Streams) ->
    case Type of
        1 ->
            Self = self(),
            Stream = spawn_monitor(fun() -> Self ! {self(), stream(Id, Block)} end),
            frames(S, Rest, Block, Acks, [Stream | Streams]);
        4 when Flags band 1 =:= 0 ->
            frames(S, Rest, Block, [frame(4, 1, 0, <<>>) | Acks], Streams);
        6 when Flags band 1 =:= 0 ->
            frames(S, Rest, Block, [frame(6, 1, 0, Payload) | Acks], Streams);
        7 ->
            gen_tcp:close(S);
        _ ->
            frames(S, Rest, Block, Acks, Streams)
    end;
frames(S, Buf, Block, [], []) ->
    h2_read(S, Buf, Block);
frames(S, Buf, Block, Acks, Streams) ->
    Out = [lists:reverse(Acks) | [collect(Stream) || Stream <- lists:reverse(Streams)]],
    case gen_tcp:send(S, Out) of
        ok -> h2_read(S, Buf, Block);
        {error, _} -> gen_tcp:close(S)
    end.

%% A stream's answer comes before its exit (the same sender's messages
%% keep their order); a stream that ended without one answers nothing.
collect({Pid, Ref}) ->
    receive
        {Pid, Response} ->
            receive {'DOWN', Ref, process, Pid, _} -> Response end;
        {'DOWN', Ref, process, Pid, _} ->
            []
    end.

%% A stream's answer: the response's HEADERS and its DATA.
stream(Id, Block) ->
    [frame(1, 4, Id, Block), frame(0, 1, Id, bench_fx:hello())].

frame(Type, Flags, Id, Payload) ->
    [<<(iolist_size(Payload)):24, Type, Flags, 0:1, Id:31>>, Payload].

%% The fields of the HTTP/1.1 response: `:status' 200 from the static
%% table, the others literals (not indexed) of static table names:
%% content-type (31), content-length (28) and date (33).
h2_block() ->
    Body = bench_fx:hello(),
    iolist_to_binary([16#88, literal(31, <<"text/plain">>),
                      literal(28, integer_to_binary(byte_size(Body))),
                      literal(33, iolist_to_binary(imf_date()))]).

literal(Index, Value) when Index >= 15, byte_size(Value) < 127 ->
    [16#0f, Index - 15, byte_size(Value), Value].

%% -- HTTP/1.1 ----------------------------------------------------------------

response(Connection) ->
    Body = bench_fx:hello(),
    iolist_to_binary(["HTTP/1.1 200 OK\r\n", Connection, "date: ", imf_date(),
                      "\r\ncontent-type: text/plain\r\ncontent-length: ",
                      integer_to_list(byte_size(Body)), "\r\n\r\n", Body]).

%% An IMF-fixdate (RFC 9110 §5.6.7) of now.
imf_date() ->
    {{Y, Mo, D} = Day, {H, Mi, Se}} = calendar:universal_time(),
    Wd = element(calendar:day_of_the_week(Day), {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}),
    Mon = element(Mo, {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov",
                       "Dec"}),
    io_lib:format("~s, ~2..0b ~s ~4b ~2..0b:~2..0b:~2..0b GMT", [Wd, D, Mon, Y, H, Mi, Se]).
