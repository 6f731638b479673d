%% bench_servers: the servers the bench can compare, where their code
%% comes from, and the life of one server process: start it pinned to the
%% server core (one BEAM per server, the same emulator flags for all, or
%% nginx as a single native process), wait until it accepts connections,
%% send it commands, stop it.
%%
%% BEAM servers run bench/servers/bench_serve.erl; falco comes from the
%% repository's build, cowboy/cowlib/ranch/elli only from --peer-libs (the
%% bench never downloads or builds them), inets from OTP, mochiweb and yaws
%% from Debian's packages (or --peer-libs).
-module(bench_servers).

-export([available/2, start/4, command/2, beam_stats/1, stop/1, default_erl_flags/0, h2_capable/2,
         no_h2_tls/1]).

%% Emulator flags of every server BEAM (see bench/README.md for why).
-spec default_erl_flags() -> string().
default_erl_flags() ->
    "+S 1:1 +SDcpu 1:1 +SDio 1 +A 1 +sbwt none +sbwtdcpu none +sbwtdio none".

%% @doc Whether a server speaks cleartext HTTP/2 with prior knowledge:
%% cowboy and the floor do; falco once its build has an HTTP/2 module.
-spec h2_capable(atom(), map()) -> boolean().
h2_capable(cowboy, _) -> true;
h2_capable(floor, _) -> true;
h2_capable(falco_socket, Ctx) -> h2_capable(falco, Ctx);
h2_capable(falco, Ctx) -> filelib:wildcard(filename:join(maps:get(falco_ebin, Ctx), "falco_http2*.beam")) =/= [];
h2_capable(_, _) -> false.

%% @doc Why a server without HTTP/2 in the bench cannot serve the HTTP/2
%% TLS scenarios (tls_handshake): shown in its "—" cells.
-spec no_h2_tls(atom()) -> string().
no_h2_tls(inets) -> "httpd has no HTTP/2";
no_h2_tls(elli) -> "elli has no HTTP/2";
no_h2_tls(mochiweb) -> "mochiweb has no HTTP/2";
no_h2_tls(yaws) -> "yaws has no HTTP/2";
no_h2_tls(nginx) -> "nginx is set up for cleartext static files only";
no_h2_tls(_) -> "no HTTP/2 over TLS".

%% @doc `{ok, Version, CodePaths}' when the server can run, else `{skip, Why}'.
-spec available(atom(), map()) -> {ok, string(), [file:filename()]} | {skip, string()}.
available(falco, Ctx) ->
    Ebin = maps:get(falco_ebin, Ctx),
    case app_vsn(Ebin, falco) of
        undefined -> {skip, "falco is not compiled (rebar3 compile)"};
        V -> {ok, V, [Ebin]}
    end;
available(falco_socket, Ctx) ->
    %% falco on gen_tcp's socket NIF: the comparison behind its
    %% default inet_backend (inet).
    available(falco, Ctx);
available(inets, _) ->
    {ok, vsn_of(inets), []};
available(floor, _) ->
    %% Not a server: the runtime's floor for GET /hello (bench_floor).
    {ok, "OTP " ++ erlang:system_info(otp_release), []};
available(cowboy, Ctx) ->
    peer_apps([cowboy, cowlib, ranch], Ctx);
available(elli, Ctx) ->
    peer_apps([elli], Ctx);
available(mochiweb, Ctx) ->
    peer_apps([mochiweb], Ctx);
available(yaws, Ctx) ->
    peer_apps([yaws], Ctx);
available(nginx, _) ->
    case os:find_executable("nginx", "/usr/sbin:/usr/local/sbin:" ++ os:getenv("PATH", "")) of
        false -> {skip, "nginx is not installed (apt-get install nginx)"};
        Exe ->
            {_, Out} = bench_proc:exec([Exe, "-v"], 5000),
            V = case string:split(string:trim(Out), "/") of
                    [_, Ver] -> Ver;
                    _ -> "?"
                end,
            {ok, V, [Exe]}
    end;
available(Other, _) ->
    {skip, io_lib:format("unknown server ~s", [Other])}.

%% Peers: found in --peer-libs (DIR/*/ebin), in OTP's lib dir, or where
%% Debian's erlang-yaws puts yaws.
peer_apps([Main | _] = Apps, Ctx) ->
    Dirs = [{A, find_ebin(A, Ctx)} || A <- Apps],
    case [A || {A, undefined} <- Dirs] of
        [] ->
            {Main, MainDir} = lists:keyfind(Main, 1, Dirs),
            {ok, app_vsn(MainDir, Main), [D || {_, D} <- Dirs]};
        Missing ->
            Hint = case maps:get(peer_libs, Ctx) of
                       undefined -> "no --peer-libs given";
                       Dir -> "not found in --peer-libs " ++ Dir
                   end,
            {skip, io_lib:format("~s: ~s", [lists:join(", ", [atom_to_list(M) || M <- Missing]),
                                           Hint])}
    end.

find_ebin(App, Ctx) ->
    Name = atom_to_list(App) ++ ".app",
    FromPeers = case maps:get(peer_libs, Ctx) of
                    undefined -> [];
                    Dir -> filelib:wildcard(filename:join([Dir, "*", "ebin", Name]))
                end,
    FromOtp = case code:lib_dir(App) of
                  {error, _} -> [];
                  D -> filelib:wildcard(filename:join([D, "ebin", Name]))
              end,
    Debian = filelib:wildcard(filename:join(["/usr/lib", atom_to_list(App) ++ "-*", "ebin", Name])),
    case FromPeers ++ FromOtp ++ Debian of
        [File | _] -> filename:dirname(File);
        [] -> undefined
    end.

app_vsn(Ebin, App) ->
    case file:consult(filename:join(Ebin, atom_to_list(App) ++ ".app")) of
        {ok, [{application, App, Props}]} -> proplists:get_value(vsn, Props, "?");
        _ -> undefined
    end.

vsn_of(App) ->
    _ = application:load(App),
    case application:get_key(App, vsn) of
        {ok, V} -> V;
        undefined -> "?"
    end.

%% @doc Starts Server for Scenario on Port. Returns a handle map with the
%% server's OS pid, or `{error, Reason}'.
-spec start(atom(), atom(), inet:port_number(), map()) -> {ok, map()} | {error, term()}.
start(nginx, Scenario, Port, Ctx = #{paths := #{nginx := [Exe]}}) ->
    Prefix = filename:absname(filename:join([maps:get(work, Ctx), "nginx", integer_to_list(Port)])),
    ok = filelib:ensure_dir(filename:join(Prefix, "x")),
    Conf = filename:join(Prefix, "nginx.conf"),
    {ok, Tpl} = file:read_file(filename:join(maps:get(bench_dir, Ctx), "nginx/nginx.conf.in")),
    Body = bench_fx:large(),
    ok = file:write_file(filename:join(Prefix, "large"), Body),
    Text = lists:foldl(fun({K, V}, Acc) -> string:replace(Acc, K, V, all) end, Tpl,
                       [{"@PORT@", integer_to_list(Port)}, {"@PREFIX@", Prefix},
                        {"@HELLO@", bench_fx:hello()}]),
    ok = file:write_file(Conf, Text),
    Log = log_file(nginx, Scenario, Ctx),
    Args = maps:get(pin, Ctx) ++ [Exe, "-p", Prefix, "-c", Conf, "-g", "daemon off;"],
    P = open_port({spawn_executable, hd(Args)},
                  [{args, tl(Args)}, {line, 16384}, binary, exit_status, stderr_to_stdout, use_stdio]),
    {os_pid, OsPid} = erlang:port_info(P, os_pid),
    H = #{server => nginx, port => P, tcp_port => Port, os_pid => integer_to_list(OsPid),
          log => Log, version => maps:get(version, Ctx, "?")},
    wait_listening(H, 10000);
start(Server, Scenario, Port, Ctx) ->
    #{paths := Paths, bench_ebin := BenchEbin} = Ctx,
    Erl = os:find_executable("erl"),
    Flags = string:lexemes(maps:get(erl_flags, Ctx), " "),
    Pa = lists:append([["-pa", D] || D <- [BenchEbin | maps:get(Server, Paths, [])]]),
    Args = maps:get(pin, Ctx) ++ [Erl | Flags] ++ ["-noshell" | Pa] ++
           ["-eval", "bench_serve:main()", "-extra",
            atom_to_list(Server), atom_to_list(Scenario), integer_to_list(Port)],
    Log = log_file(Server, Scenario, Ctx),
    %% BENCH_TLS_DIR: the test certificate of the TLS scenarios (bench_tls).
    P = open_port({spawn_executable, hd(Args)},
                  [{args, tl(Args)}, {line, 16384}, binary, exit_status, stderr_to_stdout, use_stdio,
                   {env, [{bench_tls:env(), maps:get(tls_dir, Ctx)}]}]),
    H = #{server => Server, port => P, tcp_port => Port, log => Log},
    case await(H, 30000) of
        {ok, <<"ready ", Rest/binary>>} ->
            [OsPid | Vsn] = string:lexemes(Rest, " "),
            wait_listening(H#{os_pid => binary_to_list(OsPid),
                              version => binary_to_list(iolist_to_binary(Vsn))}, 10000);
        {ok, <<"failed ", Why/binary>>} ->
            stop(H),
            {error, {start_failed, binary_to_list(Why)}};
        {error, Why} ->
            stop(H),
            {error, Why}
    end.

log_file(Server, Scenario, Ctx) ->
    F = filename:join([maps:get(work, Ctx), "logs",
                       atom_to_list(Server) ++ "-" ++ atom_to_list(Scenario) ++ ".log"]),
    ok = filelib:ensure_dir(F),
    F.

%% Waits for the next `BENCH ...' line; other lines go to the log file.
await(H = #{port := P, log := Log}, Timeout) ->
    receive
        {P, {data, {eol, <<"BENCH ", Msg/binary>>}}} -> {ok, Msg};
        {P, {data, {_, Line}}} ->
            ok = file:write_file(Log, [Line, "\n"], [append]),
            await(H, Timeout);
        {P, {exit_status, S}} -> {error, {exited, S, tail(Log)}}
    after Timeout ->
        {error, timeout}
    end.

tail(Log) ->
    case file:read_file(Log) of
        {ok, B} when byte_size(B) > 800 -> binary_to_list(binary:part(B, byte_size(B), -800));
        {ok, B} -> binary_to_list(B);
        _ -> ""
    end.

wait_listening(H = #{tcp_port := Port}, Left) when Left > 0 ->
    case gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {active, false}], 1000) of
        {ok, S} ->
            gen_tcp:close(S),
            {ok, H};
        {error, _} ->
            timer:sleep(50),
            drain(H),
            wait_listening(H, Left - 50)
    end;
wait_listening(H, _) ->
    stop(H),
    {error, not_listening}.

%% Moves pending output lines to the log (nginx prints nothing when fine).
drain(H = #{port := P, log := Log}) ->
    receive
        {P, {data, {_, Line}}} ->
            ok = file:write_file(Log, [Line, "\n"], [append]),
            drain(H)
    after 0 -> ok
    end.

%% @doc Sends a command line to a BEAM server and returns its answer.
-spec command(map(), iodata()) -> {ok, binary()} | {error, term()}.
command(#{server := nginx}, _) ->
    {error, not_a_beam};
command(H = #{port := P}, Cmd) ->
    drain(H),
    true = port_command(P, [Cmd, "\n"]),
    await(H, 120000).

%% @doc The server BEAM's memory: erlang:memory(total) now and its peak
%% since the last `reset' command (`undefined' for nginx or when it does
%% not answer).
-spec beam_stats(map()) -> #{beam_total := integer() | undefined,
                             beam_peak := integer() | undefined}.
beam_stats(H) ->
    case command(H, "stats") of
        {ok, <<"stats ", Rest/binary>>} ->
            KVs = [list_to_tuple(string:split(KV, "=")) || KV <- string:lexemes(Rest, " ")],
            M = maps:from_list([{binary_to_atom(K), binary_to_integer(V)} || {K, V} <- KVs]),
            #{beam_total => maps:get(total, M), beam_peak => maps:get(peak, M)};
        _ ->
            #{beam_total => undefined, beam_peak => undefined}
    end.

%% @doc Stops a server: `stop' on stdin for a BEAM, then (or for nginx
%% at once) SIGKILL to the process this bench started.
-spec stop(map()) -> ok.
stop(H = #{port := P}) ->
    case H of
        #{server := nginx, os_pid := NginxPid} -> _ = os:cmd("kill -TERM " ++ NginxPid), ok;
        _ -> catch port_command(P, "stop\n")
    end,
    receive
        {P, {exit_status, _}} -> ok
    after 3000 ->
        case erlang:port_info(P, os_pid) of
            {os_pid, Pid} -> _ = os:cmd("kill -9 " ++ integer_to_list(Pid)), ok;
            undefined -> ok
        end,
        catch port_close(P),
        ok
    end,
    flush(P).

flush(P) ->
    receive {P, _} -> flush(P) after 0 -> ok end.
