%% bench_load: the in-tree closed-loop load generator, for the scenarios no
%% external tool fits: HEAD (wrk and h2load both wait for a body after a
%% HEAD reply's Content-Length, so they hang). It runs in its own BEAM,
%% pinned to the load core like wrk, and prints the same BENCH_RESULT line
%% as bench/lua/report.lua, so the driver reads both alike.
%%
%%   erl -noshell -pa EBIN -eval "bench_load:main()" -extra PORT CLIENTS SECONDS METHOD PATH
%%
%% One process per connection: send the request, read the reply's head
%% (and its Content-Length body unless the method is HEAD), record the
%% latency, repeat until the deadline. Being Erlang on one core, it tops out
%% lower than wrk: compare servers within this scenario only.
-module(bench_load).

-export([main/0, run/5]).

-spec main() -> no_return().
main() ->
    [PortS, ClientsS, SecondsS, Method, Path] = init:get_plain_arguments(),
    R = run(list_to_integer(PortS), list_to_integer(ClientsS), list_to_integer(SecondsS),
            list_to_binary(Method), list_to_binary(Path)),
    io:format("BENCH_RESULT requests=~b duration_us=~b bytes=~b connect=~b read=~b write=0 "
              "status=~b timeout=~b p50=~b p90=~b p99=~b p999=~b max=~b mean=~.1f~n",
              [maps:get(K, R) || K <- [requests, duration_us, bytes, connect, read, status,
                                       timeout, p50, p90, p99, p999, max]] ++ [maps:get(mean, R)]),
    halt(0).

%% @doc Runs the load and returns the counts and latency percentiles (us).
-spec run(inet:port_number(), pos_integer(), pos_integer(), binary(), binary()) -> map().
run(Port, Clients, Seconds, Method, Path) ->
    Req = [Method, " ", Path, " HTTP/1.1\r\nHost: 127.0.0.1:", integer_to_list(Port),
           "\r\nUser-Agent: bench_load\r\n\r\n"],
    Head = Method =:= <<"HEAD">>,
    Parent = self(),
    T0 = erlang:monotonic_time(microsecond),
    Deadline = T0 + Seconds * 1000000,
    Pids = [spawn_link(fun() -> Parent ! {done, self(), worker(Port, Req, Head, Deadline)} end)
            || _ <- lists:seq(1, Clients)],
    Accs = [receive {done, P, Acc} -> Acc end || P <- Pids],
    Elapsed = erlang:monotonic_time(microsecond) - T0,
    Lat = lists:sort(lists:append([L || #{lat := L} <- Accs])),
    N = length(Lat),
    Sum = fun(K) -> lists:sum([maps:get(K, A) || A <- Accs]) end,
    Pct = fun(_) when N =:= 0 -> 0;
             (Q) -> lists:nth(max(1, min(N, round(Q * N))), Lat)
          end,
    #{requests => N, duration_us => Elapsed, bytes => Sum(bytes), connect => Sum(connect),
      read => Sum(read), status => Sum(status), timeout => Sum(timeout),
      p50 => Pct(0.5), p90 => Pct(0.9), p99 => Pct(0.99), p999 => Pct(0.999),
      max => case Lat of [] -> 0; _ -> lists:last(Lat) end,
      mean => case N of 0 -> 0.0; _ -> lists:sum(Lat) / N end}.

worker(Port, Req, Head, Deadline) ->
    Acc = #{lat => [], bytes => 0, connect => 0, read => 0, status => 0, timeout => 0},
    case gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {active, false}, {nodelay, true}], 5000) of
        {ok, S} -> loop(S, Port, Req, Head, Deadline, Acc);
        {error, _} -> Acc#{connect := 1}
    end.

loop(S, Port, Req, Head, Deadline, Acc) ->
    T0 = erlang:monotonic_time(microsecond),
    case T0 >= Deadline of
        true ->
            gen_tcp:close(S),
            Acc;
        false ->
            ok = gen_tcp:send(S, Req),
            case response(S, <<>>, Head) of
                {ok, Status, Bytes} ->
                    T1 = erlang:monotonic_time(microsecond),
                    Bad = case Status >= 400 of true -> 1; false -> 0 end,
                    loop(S, Port, Req, Head, Deadline,
                         Acc#{lat := [T1 - T0 | maps:get(lat, Acc)],
                              bytes := maps:get(bytes, Acc) + Bytes,
                              status := maps:get(status, Acc) + Bad});
                {error, timeout} ->
                    gen_tcp:close(S),
                    Acc#{timeout := maps:get(timeout, Acc) + 1};
                {error, _} ->
                    gen_tcp:close(S),
                    Acc#{read := maps:get(read, Acc) + 1}
            end
    end.

%% Reads one reply: the head, then Content-Length bytes unless HEAD.
response(S, Buf, Head) ->
    case binary:match(Buf, <<"\r\n\r\n">>) of
        {Pos, 4} ->
            HeadBin = binary:part(Buf, 0, Pos + 4),
            Rest = binary:part(Buf, Pos + 4, byte_size(Buf) - Pos - 4),
            {Status, Len} = parse_head(HeadBin),
            BodyLen = case Head orelse Status =:= 304 orelse Status =:= 204 of
                          true -> 0;
                          false -> Len
                      end,
            case skip(S, BodyLen - byte_size(Rest)) of
                ok -> {ok, Status, byte_size(Buf) + max(0, BodyLen - byte_size(Rest))};
                Error -> Error
            end;
        nomatch ->
            case gen_tcp:recv(S, 0, 5000) of
                {ok, More} -> response(S, <<Buf/binary, More/binary>>, Head);
                Error -> Error
            end
    end.

skip(_, N) when N =< 0 -> ok;
skip(S, N) ->
    case gen_tcp:recv(S, 0, 5000) of
        {ok, B} -> skip(S, N - byte_size(B));
        Error -> Error
    end.

parse_head(<<"HTTP/1.", _, " ", C1, C2, C3, Rest/binary>>) ->
    Status = list_to_integer([C1, C2, C3]),
    Len = case re:run(Rest, "\r\ncontent-length:[ \t]*([0-9]+)", [caseless, {capture, all_but_first, binary}]) of
              {match, [L]} -> binary_to_integer(L);
              nomatch -> 0
          end,
    {Status, Len}.
