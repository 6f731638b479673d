%% A WebSocket carrier over HTTP/3 for the Common Test suites: an RFC 9220
%% tunnel (an extended CONNECT, `:protocol' websocket, on a QUIC
%% connection of its own), opened by aioquic in a Python port program
%% (falco_test_ws_tunnel_data/h3_ws_tunnel.py, in the venv
%% scripts/bootstrap makes) so that loss recovery, flow and congestion
%% control are a real stack's. Its process speaks falco_test_ws_tunnel's
%% protocol with the owner, and its handle is one of falco_test_ws_tunnel's
%% (`{falco_test_ws_tunnel, Pid}'), so falco_test_ws_client's case bodies
%% and the autobahn relay run over HTTP/3 unchanged: what goes in is sent
%% as one DATA frame per send; the stream's DATA comes out as
%% `{tunnel_data, T, Bytes}'; the stream's end is one
%% `{tunnel_closed, T, Why}', Why `end_stream' (the server's FIN),
%% `{reset, Code}' (RESET_STREAM, an HTTP/3 error code),
%% `{connection_closed, Code}' (the server's CONNECTION_CLOSE, its code) or
%% `closed' (the port program gone).
%%
%% A send returns once aioquic holds less than 1 MB of the stream
%% unacknowledged, so a server that stops reading stops the sender. The
%% receiving side is aioquic's: it gives the server credit as it reads,
%% whatever the owner does (consumed/2 is a no-op here), so this carrier
%% does not model an owner that stops reading.
-module(falco_test_ws_tunnel_h3).

-export([open/4, tools/0, init/6, send_each/3]).

-define(TIMEOUT, 5000).

%% @doc The carrier's tools, for falco_test_tools:require/2: the venv's
%% Python with aioquic (scripts/bootstrap).
-spec tools() -> [falco_test_tools:tool()].
tools() ->
    [{python_module, python(), "aioquic"}].

python() ->
    case falco_test_tools:find("h3py/bin/python") of
        false -> filename:join([falco_test_run:checkout(), "_build", "tools", "h3py", "bin",
                                "python"]);
        Py -> Py
    end.

script() ->
    filename:join([falco_test_run:checkout(), "test", "falco_test_ws_tunnel_data",
                   "h3_ws_tunnel.py"]).

%% @doc Opens a tunnel to 127.0.0.1:Port (UDP) with an extended CONNECT to
%% Path and the extra request fields Fields. Returns `{T, Resp}' as
%% falco_test_ws_tunnel:open/5 does.
-spec open(inet:port_number(), binary(), [{binary(), iodata()}], map()) -> {term(), map()}.
open(Port, Path, Fields, _Opts) ->
    Owner = self(),
    Ref = make_ref(),
    Pid = proc_lib:spawn(?MODULE, init, [Owner, Ref, Port, Path, Fields, #{}]),
    Mon = monitor(process, Pid),
    receive
        {Ref, Resp} ->
            demonitor(Mon, [flush]),
            {{falco_test_ws_tunnel, Pid}, Resp};
        {'DOWN', Mon, process, Pid, Why} ->
            error({tunnel_failed, Why})
    after 4 * ?TIMEOUT ->
        exit(Pid, kill),
        error(tunnel_open_timeout)
    end.

%% @doc Sends Bytes as Count DATA frames of their own (a flood of tiny
%% frames), returning as send does; `{error, timeout}' after 60 s.
-spec send_each(term(), pos_integer(), binary()) -> ok | {error, term()}.
send_each({falco_test_ws_tunnel, Pid}, Count, Bytes) ->
    Mon = monitor(process, Pid),
    Ref = make_ref(),
    Pid ! {send_each, {self(), Ref}, Count, Bytes},
    receive
        {Ref, Result} -> demonitor(Mon, [flush]), Result;
        {'DOWN', Mon, process, Pid, _} -> {error, closed}
    after 60000 ->
        demonitor(Mon, [flush]),
        {error, timeout}
    end.

%% @private
-spec init(pid(), reference(), inet:port_number(), binary(), [{binary(), iodata()}], map()) ->
          ok.
init(Owner, Ref, Port, Path, Fields, _Opts) ->
    _ = monitor(process, Owner),
    P = open_port({spawn_executable, python()},
                  [{args, [script()]}, {packet, 4}, binary, exit_status, use_stdio]),
    Version = [{<<"sec-websocket-version">>, <<"13">>}
               || not lists:keymember(<<"sec-websocket-version">>, 1, Fields)],
    Spec = #{port => Port, path => Path, timeout => ?TIMEOUT div 1000,
             fields => [[N, iolist_to_binary(V)] || {N, V} <- Version ++ Fields]},
    true = port_command(P, falco_json:encode_to_binary(Spec)),
    T = {falco_test_ws_tunnel, self()},
    S = #{port => P, owner => Owner, tunnel => T, waiting => queue:new(), ended => false},
    case response(P, erlang:monotonic_time(millisecond) + 3 * ?TIMEOUT) of
        {ok, Resp = #{status := St}} when St >= 200, St < 300 ->
            Owner ! {Ref, Resp},
            loop(S);
        {ok, Resp} ->
            Body = body(P, [], erlang:monotonic_time(millisecond) + ?TIMEOUT),
            Owner ! {Ref, Resp#{body => Body}},
            quit(S);
        {error, Why} ->
            Owner ! {Ref, #{status => {error, Why}, headers => [], body => <<>>}},
            quit(S)
    end.

left(Deadline) -> max(0, Deadline - erlang:monotonic_time(millisecond)).

response(P, Deadline) ->
    receive
        {P, {data, <<"R", J/binary>>}} ->
            {ok, #{<<"status">> := St, <<"headers">> := H}} = falco_json:decode(J),
            {ok, #{status => St, headers => [{N, V} || [N, V] <- H], body => <<>>}};
        {P, {data, <<"F", J/binary>>}} ->
            {error, {refused, J}};
        {P, {data, <<"C", J/binary>>}} ->
            {error, {closed, J}};
        {P, {data, <<"X", J/binary>>}} ->
            {error, {reset, J}};
        {P, {exit_status, N}} ->
            {error, {exit_status, N}}
    after left(Deadline) ->
        {error, timeout}
    end.

%% A refusal's content, to the stream's end.
body(P, Acc, Deadline) ->
    receive
        {P, {data, <<"D", Data/binary>>}} -> body(P, [Data | Acc], Deadline);
        {P, {data, <<"E">>}} -> iolist_to_binary(lists:reverse(Acc));
        {P, {data, _}} -> iolist_to_binary(lists:reverse(Acc));
        {P, {exit_status, _}} -> iolist_to_binary(lists:reverse(Acc))
    after left(Deadline) ->
        iolist_to_binary(lists:reverse(Acc))
    end.

loop(S = #{port := P, owner := Owner, tunnel := T, waiting := W}) ->
    receive
        {P, {data, <<"D", Data/binary>>}} ->
            Owner ! {tunnel_data, T, Data},
            loop(S);
        {P, {data, <<"K">>}} ->
            {{value, From}, W1} = queue:out(W),
            reply(From, ok),
            loop(S#{waiting => W1});
        {P, {data, <<"E">>}} ->
            %% as a TCP peer that closes: our side ends too
            true = port_command(P, <<"E">>),
            loop(ended(end_stream, S));
        {P, {data, <<"X", J/binary>>}} ->
            {ok, #{<<"code">> := Code}} = falco_json:decode(J),
            loop(ended({reset, Code}, S));
        {P, {data, <<"C", J/binary>>}} ->
            {ok, #{<<"code">> := Code}} = falco_json:decode(J),
            gone({connection_closed, Code}, S);
        {P, {exit_status, _}} ->
            gone(closed, S);
        {send, From, Bytes} ->
            true = port_command(P, [<<"D">>, Bytes]),
            loop(S#{waiting => queue:in(From, W)});
        {send_each, From, Count, Bytes} ->
            true = port_command(P, [<<"M">>, <<Count:32>>, Bytes]),
            loop(S#{waiting => queue:in(From, W)});
        end_stream ->
            true = port_command(P, <<"E">>),
            loop(S);
        {consumed, _} ->
            loop(S);
        close ->
            quit(S);
        {'DOWN', _, process, Owner, _} ->
            quit(S)
    end.

ended(_, S = #{ended := true}) ->
    S;
ended(Why, S = #{owner := Owner, tunnel := T}) ->
    Owner ! {tunnel_closed, T, Why},
    S#{ended => true}.

gone(Why, S = #{waiting := W}) ->
    _ = ended(Why, S),
    [reply(From, {error, closed}) || From <- queue:to_list(W)],
    ok.

reply(none, _) -> ok;
reply({Pid, Ref}, Result) -> Pid ! {Ref, Result}, ok.

%% The connection closed (H3_NO_ERROR) and the port program gone.
quit(#{port := P}) ->
    _ = (catch port_command(P, <<"Q">>)),
    receive {P, {exit_status, _}} -> ok
    after ?TIMEOUT -> catch port_close(P), ok
    end.
