%% Request state lives in the request (the architecture issue, point 4),
%% over HTTP/1.1 and HTTP/2 (h2c): each read_body returns a new request
%% that must be used; reading from a replaced one is a 500 on both
%% protocols; the body may be read from another process; nothing a
%% request's reads leave behind is seen by the next request on the same
%% connection (no process-dictionary entries, no stray messages).
-module(request_state_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, groups/0, init_per_suite/1, end_per_suite/1,
         init_per_group/2, end_per_group/2]).
-export([threaded_reads/1, stale_read_is_500/1, read_in_other_process/1,
         nothing_left_for_next_request/1, trailers_from_returned_request/1]).

-define(C, falco_test_client).
-define(H2, falco_test_h2_client).

all() ->
    [{group, http}, {group, h2c}].

groups() ->
    Cases = [threaded_reads, stale_read_is_500, read_in_other_process,
             nothing_left_for_next_request, trailers_from_returned_request],
    [{http, [], Cases}, {h2c, [], Cases}].

init_per_suite(Config) ->
    ok = falco_test_listener:start_app(),
    Config.

end_per_suite(_Config) ->
    ok.

init_per_group(Proto, Config) ->
    Name = list_to_atom("request_state_" ++ atom_to_list(Proto)),
    {_, Port} = falco_test_listener:start(Name, fun handle/1, #{}),
    [{proto, Proto}, {port, Port}, {name, Name} | Config].

end_per_group(_Proto, Config) ->
    ok = falco_test_listener:stop(?config(name, Config)).

%% -- the handler -----------------------------------------------------------

handle(Req) ->
    handle(falco_req:path(Req), Req).

%% Reads in pieces of 3, threading the request.
handle(<<"/pieces">>, Req) ->
    {200, [], term_to_binary(pieces(Req, []))};
%% Reads a piece, then reads again from the first request.
handle(<<"/stale">>, Req) ->
    {_, _, _Req1} = falco_req:read_body(Req, #{length => 3}),
    {_, _, _} = falco_req:read_body(Req, #{length => 3}),
    {200, [], <<"unreachable">>};
%% Another process reads the body and hands the request back (HTTP/1.1);
%% over HTTP/2 it gets a clear error at once.
handle(<<"/other">>, Req) ->
    Self = self(),
    Pid = spawn(fun() ->
                        Self ! try falco_req:read_body(Req) of
                                   {ok, Body, Req1} -> {read, self(), Body, Req1}
                               catch
                                   error:{Why, _} -> {failed, self(), Why}
                               end
                end),
    receive
        {read, Pid, Body, Req1} ->
            {200, [{<<"x-trailers">>, integer_to_binary(length(falco_req:trailers(Req1)))}],
             Body};
        {failed, Pid, Why} ->
            {501, [], atom_to_binary(Why)}
    after 5000 ->
        {500, [], <<"reader did not answer">>}
    end;
%% What the process holds for the next request: dictionary keys beyond
%% proc_lib's, and messages.
handle(<<"/leftovers">>, _Req) ->
    %% falco's own marks (falco_stats: the connection and the request in
    %% progress, for falco:connection_list/1) are not leftovers
    Keys = [K || {K, _} <- get(), K =/= '$ancestors', K =/= '$initial_call',
                 not (is_atom(K) andalso lists:prefix("$falco_", atom_to_list(K)))],
    {message_queue_len, Queue} = process_info(self(), message_queue_len),
    {200, [], term_to_binary({Keys, Queue})};
handle(<<"/trailers">>, Req) ->
    {ok, Body, Req1} = falco_req:read_body(Req),
    {200, [], term_to_binary({Body, falco_req:trailers(Req1)})};
handle(_, _Req) ->
    {200, [], <<"ok">>}.

pieces(Req, Acc) ->
    case falco_req:read_body(Req, #{length => 3}) of
        {more, Data, Req1} -> pieces(Req1, [Data | Acc]);
        {ok, Data, _} -> lists:reverse([Data | Acc])
    end.

%% -- one client for both protocols ----------------------------------------------

%% Requests on one connection, in turn: [{Method, Path, Headers, Body}] ->
%% [{Status, Headers, Body}].
requests(Config, Reqs) ->
    requests(?config(proto, Config), ?config(port, Config), Reqs).

requests(http, Port, Reqs) ->
    Sock = ?C:connect(Port),
    Out = [begin
               Framing = case Headers of
                             [{<<"transfer-encoding">>, _} | _] -> [];
                             _ -> [<<"content-length: ">>, integer_to_binary(iolist_size(Body)),
                                   <<"\r\n">>]
                         end,
               ?C:send(Sock, [Method, " ", Path, " HTTP/1.1\r\nhost: example.com\r\n",
                              [[N, ": ", V, "\r\n"] || {N, V} <- Headers], Framing, "\r\n",
                              Body]),
               case ?C:recv_response(Sock) of
                   {ok, #{status := S, headers := H, body := B}} -> {S, H, B};
                   {error, Why} -> {error, Why}
               end
           end || {Method, Path, Headers, Body} <- Reqs],
    ?C:close(Sock),
    Out;
requests(h2c, Port, Reqs) ->
    C0 = ?H2:connect(Port, #{}),
    {Out, C} = lists:mapfoldl(
                 fun({Method, Path, Headers, Body}, C1) ->
                         {Id, C2} = ?H2:request(C1, Method, Path,
                                                [H || H = {N, _} <- Headers,
                                                      N =/= <<"transfer-encoding">>],
                                                iolist_to_binary(Body)),
                         case ?H2:response(C2, Id) of
                             {ok, #{status := S, headers := H, body := B}, C3} -> {{S, H, B}, C3};
                             {error, Why, C3} -> {{error, Why}, C3}
                         end
                 end, C0, Reqs),
    ?H2:close(C),
    Out.

%% -- cases -----------------------------------------------------------------

%% Each read returns the request to read on with.
threaded_reads(Config) ->
    [{200, _, Bin}] = requests(Config, [{<<"POST">>, <<"/pieces">>, [], <<"abcdefgh">>}]),
    Pieces = binary_to_term(Bin),
    ?assertEqual(<<"abcdefgh">>, iolist_to_binary(Pieces)),
    ?assert(lists:all(fun(P) -> byte_size(P) =< 3 end, Pieces)).

%% Reading from a replaced request raises: 500, the same on both protocols;
%% over HTTP/1.1 the connection then closes (its framing is in doubt).
stale_read_is_500(Config) ->
    Results = requests(Config, [{<<"POST">>, <<"/stale">>, [], <<"abcdefgh">>},
                                {<<"GET">>, <<"/">>, [], <<>>}]),
    ct:log("~p", [Results]),
    [{500, _, _}, Second] = Results,
    case ?config(proto, Config) of
        http -> ?assertMatch({error, _}, Second);
        h2c -> ?assertMatch({200, _, <<"ok">>}, Second)
    end.

%% The body read by another process; the connection goes on with the next
%% request (HTTP/1.1: the read's report reached the connection process).
%% Over HTTP/2 the body arrives in the stream process's mailbox: another
%% process is told so at once rather than waiting for body_timeout.
read_in_other_process(Config) ->
    Big = binary:copy(<<"0123456789">>, 20000),
    [First, {200, _, <<"ok">>}] =
        requests(Config, [{<<"POST">>, <<"/other">>, [], Big}, {<<"GET">>, <<"/">>, [], <<>>}]),
    case ?config(proto, Config) of
        http -> ?assertMatch({200, _, Big}, First);
        h2c -> ?assertMatch({501, _, <<"not_stream_process">>}, First)
    end.

%% After requests that read bodies (whole, in pieces, from another process
%% over HTTP/1.1) the process serving the next one has no dictionary entries and no
%% messages left by them. Over h2 each request has its own process.
nothing_left_for_next_request(Config) ->
    Big = binary:copy(<<"x">>, 100000),
    Results = requests(Config, [{<<"POST">>, <<"/pieces">>, [], <<"abcdefgh">>},
                                {<<"POST">>, <<"/other">>, [], Big},
                                {<<"POST">>, <<"/trailers">>, [], Big},
                                {<<"GET">>, <<"/leftovers">>, [], <<>>}]),
    {200, _, Bin} = lists:last(Results),
    ?assertEqual({[], 0}, binary_to_term(Bin)).

%% Trailers come from the request the last read returned.
trailers_from_returned_request(Config) ->
    case ?config(proto, Config) of
        http ->
            Port = ?config(port, Config),
            {Sock, {ok, #{status := 200, body := Bin}}} =
                ?C:request(Port, <<"POST /trailers HTTP/1.1\r\nhost: example.com\r\n"
                                   "transfer-encoding: chunked\r\n\r\n"
                                   "3\r\nabc\r\n0\r\nx-sum: 7\r\n\r\n">>),
            ?C:close(Sock),
            ?assertEqual({<<"abc">>, [{<<"x-sum">>, <<"7">>}]}, binary_to_term(Bin));
        h2c ->
            [{200, _, Bin}] = requests(Config, [{<<"POST">>, <<"/trailers">>, [], <<"abc">>}]),
            ?assertEqual({<<"abc">>, []}, binary_to_term(Bin))
    end.
