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
-module(bench_floor).

-export([start/2, version/0]).

-define(ACCEPTORS, 10).
-define(IDLE_MS, 60000).

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
            read(S, <<>>, Responses);
        {error, closed} ->
            ok;
        {error, _} ->
            %% out of descriptors, say: try again in a moment
            receive after 10 -> ok end,
            accept(L, Responses)
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
