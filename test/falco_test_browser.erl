%% Test helper: headless Chromium driven over its DevTools protocol (CDP),
%% for test/browser_SUITE. The browser is started with
%% `--remote-debugging-port=0' and a throwaway profile directory; the port
%% it picked is read from the DevToolsActivePort file it writes there, and
%% the test talks CDP (JSON over a WebSocket) with falco_test_ws_client.
%% Every wait has a deadline; stop/1 closes the browser (Browser.close),
%% kills it if it does not exit in time, and kills whatever process still
%% runs with its profile directory (its zygote, renderer, GPU and network
%% processes), by pid.
%%
%% Each CDP connection belongs to the process that opened it (the client
%% keeps its receive buffer, and here the events that arrived while a
%% reply was awaited, in the process dictionary).
-module(falco_test_browser).

-export([find/0, start/2, version/1, connect/1, open/3, viewport/4, eval/3, close_page/2,
         stop/1, processes/1]).

-define(START_TIMEOUT, 20000).
-define(CALL_TIMEOUT, 20000).
-define(EXIT_TIMEOUT, 10000).
-define(WS, falco_test_ws_client).

%% @doc The Chromium executable: $CHROMIUM, else the first of the usual
%% names on the PATH; false when there is none.
find() ->
    case os:getenv("CHROMIUM") of
        Exe when is_list(Exe), Exe =/= "" -> os:find_executable(Exe);
        _ -> first(["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"])
    end.

first([]) -> false;
first([Name | Rest]) ->
    case os:find_executable(Name) of
        false -> first(Rest);
        Exe -> Exe
    end.

%% @doc Starts Chromium headless with its profile and its output log under
%% `Dir'; returns a map for the other functions once its DevTools endpoint
%% is up.
start(Exe, Dir) ->
    Profile = filename:join(Dir, "chromium-profile"),
    Log = filename:join(Dir, "chromium.log"),
    ok = filelib:ensure_dir(filename:join(Profile, "x")),
    ActivePort = filename:join(Profile, "DevToolsActivePort"),
    _ = file:delete(ActivePort),
    Args = ["--headless", "--remote-debugging-port=0", "--user-data-dir=" ++ Profile,
            %% the test's listeners have a self-signed certificate
            "--ignore-certificate-errors",
            "--no-first-run", "--no-default-browser-check", "--disable-gpu",
            "--disable-extensions", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
            "--password-store=basic", "--use-mock-keychain", "--mute-audio"]
        ++ sandbox() ++ ["about:blank"],
    Parent = self(),
    Owner = spawn(fun() -> owner(Parent, Exe, Args, Log) end),
    Ref = monitor(process, Owner),
    OsPid = receive
                {Owner, os_pid, P} -> P;
                {'DOWN', Ref, process, Owner, Why} -> error({chromium_not_started, Why})
            after ?START_TIMEOUT ->
                    error(chromium_not_started)
            end,
    demonitor(Ref, [flush]),
    B = #{owner => Owner, os_pid => OsPid, profile => Profile, log => Log},
    Deadline = deadline(?START_TIMEOUT),
    {DevPort, Path} = wait_active_port(B, ActivePort, Deadline),
    B#{port => DevPort, path => Path}.

%% Chromium's sandbox refuses to run as root ("Running as root without
%% --no-sandbox is not supported"), as CI containers and this project's
%% test machines do; it only guards against the pages the browser loads,
%% here the test's own.
sandbox() ->
    case string:trim(os:cmd("id -u")) of
        "0" -> ["--no-sandbox"];
        _ -> []
    end.

%% The port's owner, which outlives the init function that started it.
%% The shell runs Chromium with its output in the log file, says its pid,
%% and kills it when the shell's standard input (the port) closes: so the
%% browser cannot outlive the test node, even one that crashes or is
%% killed. When Chromium exits, the shell does too.
owner(Parent, Exe, Args, Log) ->
    Script = "exec 3<&0\n"
             "\"$@\" >\"$0\" 2>&1 </dev/null 3<&- &\n"
             "b=$!\n"
             "echo $b\n"
             "(read -r _ <&3; kill -KILL $b) >/dev/null 2>&1 &\n"
             "w=$!\n"
             "wait $b; s=$?\n"
             "kill $w 2>/dev/null\n"
             "exit $s\n",
    Port = open_port({spawn_executable, "/bin/sh"},
                     [{args, ["-c", Script, Log, Exe | Args]}, {line, 64}, exit_status]),
    receive
        {Port, {data, {eol, Pid}}} -> Parent ! {self(), os_pid, list_to_integer(Pid)}
    end,
    receive
        {Port, {exit_status, Status}} -> exit({chromium_exited, Status})
    end.

wait_active_port(B = #{owner := Owner}, File, Deadline) ->
    case file:read_file(File) of
        {ok, Bin} ->
            case binary:split(Bin, <<"\n">>, [global, trim_all]) of
                [P, Path] -> {binary_to_integer(P), Path};
                _ -> retry_active_port(B, File, Deadline)
            end;
        {error, enoent} ->
            case is_process_alive(Owner) of
                true -> retry_active_port(B, File, Deadline);
                false -> error({chromium_exited, output(B)})
            end
    end.

retry_active_port(B, File, Deadline) ->
    case erlang:monotonic_time(millisecond) > Deadline of
        true -> error({no_devtools_port, output(B)});
        false -> timer:sleep(50), wait_active_port(B, File, Deadline)
    end.

%% The last lines Chromium wrote, for a failure's reason.
output(#{log := Log}) ->
    case file:read_file(Log) of
        {ok, Bin} -> binary:part(Bin, max(0, byte_size(Bin) - 2000), min(2000, byte_size(Bin)));
        Error -> Error
    end.

%% @doc The browser's product and version, as CDP's Browser.getVersion says.
version(B) ->
    Sock = connect(B),
    {ok, #{<<"product">> := Product}} = call(Sock, undefined, <<"Browser.getVersion">>, #{}),
    gen_tcp:close(Sock),
    Product.

%% @doc A CDP connection to the browser endpoint.
connect(#{port := Port, path := Path}) ->
    {Sock, Resp} = ?WS:connect(Port, Path),
    #{status := 101} = Resp,
    put({?MODULE, events}, []),
    Sock.

%% @doc A new page (tab) showing `Url', once its load event fired:
%% {TargetId, SessionId}.
open(Sock, Url, Timeout) ->
    {ok, #{<<"targetId">> := Target}} =
        call(Sock, undefined, <<"Target.createTarget">>, #{<<"url">> => <<"about:blank">>}),
    {ok, #{<<"sessionId">> := Session}} =
        call(Sock, undefined, <<"Target.attachToTarget">>,
             #{<<"targetId">> => Target, <<"flatten">> => true}),
    {ok, _} = call(Sock, Session, <<"Page.enable">>, #{}),
    {ok, Nav} = call(Sock, Session, <<"Page.navigate">>, #{<<"url">> => Url}),
    case Nav of
        #{<<"errorText">> := Err} -> error({navigation_failed, Url, Err});
        _ -> ok
    end,
    ok = wait_event(Sock, Session, <<"Page.loadEventFired">>, deadline(Timeout)),
    {Target, Session}.

%% @doc Sets the page's viewport to `Width' x `Height' CSS pixels (device
%% scale 1, not a mobile one), as a window of that size would have it;
%% the page lays itself out again.
viewport(Sock, Session, Width, Height) ->
    {ok, _} = call(Sock, Session, <<"Emulation.setDeviceMetricsOverride">>,
                   #{<<"width">> => Width, <<"height">> => Height,
                     <<"deviceScaleFactor">> => 1, <<"mobile">> => false}),
    ok.

%% @doc Evaluates the JavaScript expression `Js' in the page, awaiting the
%% promise it gives: {ok, Value} (returned by value) or {error, Text}, the
%% exception's description.
eval(Sock, Session, Js) ->
    {ok, Reply} = call(Sock, Session, <<"Runtime.evaluate">>,
                       #{<<"expression">> => Js, <<"awaitPromise">> => true,
                         <<"returnByValue">> => true}),
    case Reply of
        #{<<"exceptionDetails">> := #{<<"exception">> := #{<<"description">> := Text}}} ->
            {error, Text};
        #{<<"exceptionDetails">> := Details} -> {error, falco_json:encode_to_binary(Details)};
        #{<<"result">> := #{<<"value">> := Value}} -> {ok, Value}
    end.

%% @doc Closes a page opened by open/3.
close_page(Sock, Target) ->
    {ok, _} = call(Sock, undefined, <<"Target.closeTarget">>, #{<<"targetId">> => Target}),
    ok.

%% @doc Stops the browser: Browser.close, then SIGKILL if it has not exited
%% within 10 s, then SIGKILL to any process still running with its
%% profile 10 s later. Returns how it went (`closed'; `killed' when it had to be;
%% `exited' when it was not reachable but exited; `not_running' when it
%% had already stopped) and the pids of the processes that were left
%% behind (and then killed).
stop(B = #{owner := Owner, os_pid := OsPid}) ->
    Ref = monitor(process, Owner),
    How = case is_process_alive(Owner) of
              false -> not_running;
              true -> close(B, Ref, Owner, OsPid)
          end,
    Left = wait_gone(B, deadline(?EXIT_TIMEOUT)),
    [kill(P) || P <- Left],
    {How, Left}.

%% The browser's other processes exit once it has: the ones still running
%% after the deadline.
wait_gone(B, Deadline) ->
    case processes(B) of
        [] -> [];
        Left ->
            case erlang:monotonic_time(millisecond) > Deadline of
                true -> Left;
                false -> timer:sleep(100), wait_gone(B, Deadline)
            end
    end.

close(B, Ref, Owner, OsPid) ->
    Asked = try
                Sock = connect(B),
                _ = send(Sock, undefined, <<"Browser.close">>, #{}),
                ok
            catch
                _:_ -> not_reachable
            end,
    receive
        {'DOWN', Ref, process, Owner, _} when Asked =:= ok -> closed;
        {'DOWN', Ref, process, Owner, _} -> exited
    after ?EXIT_TIMEOUT ->
            kill(OsPid),
            receive {'DOWN', Ref, process, Owner, _} -> killed
            after ?EXIT_TIMEOUT -> error({chromium_still_running, OsPid})
            end
    end.

%% @doc The OS pids of the processes running with the browser's profile
%% directory on their command line.
processes(#{profile := Profile}) ->
    Out = os:cmd("pgrep -f -- '--user-data-dir=" ++ Profile ++ "'"),
    [list_to_integer(P) || P <- string:lexemes(Out, "\n")].

kill(OsPid) ->
    _ = os:cmd("kill -KILL " ++ integer_to_list(OsPid) ++ " 2>/dev/null"),
    ok.

%% -- CDP messages ----------------------------------------------------------------

%% A command and its reply: {ok, Result} or {error, Error}; events that
%% arrive meanwhile are kept for wait_event/4.
call(Sock, Session, Method, Params) ->
    Id = send(Sock, Session, Method, Params),
    Deadline = deadline(?CALL_TIMEOUT),
    try reply(Sock, Id, Method, Deadline)
    catch error:{cdp, Why} -> error({cdp, Method, Why})
    end.

send(Sock, Session, Method, Params) ->
    Id = erlang:unique_integer([positive]),
    Msg = #{<<"id">> => Id, <<"method">> => Method, <<"params">> => Params},
    Full = case Session of
               undefined -> Msg;
               _ -> Msg#{<<"sessionId">> => Session}
           end,
    ok = ?WS:send(Sock, text, falco_json:encode_to_binary(Full)),
    Id.

reply(Sock, Id, Method, Deadline) ->
    case next(Sock, Deadline) of
        #{<<"id">> := Id, <<"result">> := Result} -> {ok, Result};
        #{<<"id">> := Id, <<"error">> := Error} -> {error, {Method, Error}};
        #{<<"method">> := _} = Event ->
            put({?MODULE, events}, get({?MODULE, events}) ++ [Event]),
            reply(Sock, Id, Method, Deadline);
        _Other ->
            reply(Sock, Id, Method, Deadline)
    end.

wait_event(Sock, Session, Method, Deadline) ->
    Match = fun(#{<<"method">> := M, <<"sessionId">> := S}) -> M =:= Method andalso S =:= Session;
               (_) -> false
            end,
    {Seen, Rest} = lists:partition(Match, get({?MODULE, events})),
    put({?MODULE, events}, Rest),
    case Seen of
        [_ | _] -> ok;
        [] -> wait_event_on(Sock, Match, Method, Deadline)
    end.

wait_event_on(Sock, Match, Method, Deadline) ->
    Msg = try next(Sock, Deadline)
          catch error:{cdp, Why} -> error({cdp, Method, Why})
          end,
    case Match(Msg) of
        true -> ok;
        false -> wait_event_on(Sock, Match, Method, Deadline)
    end.

%% The next CDP message, decoded (a message may come in fragments).
next(Sock, Deadline) ->
    next(Sock, Deadline, <<>>).

next(Sock, Deadline, Acc) ->
    Left = max(0, Deadline - erlang:monotonic_time(millisecond)),
    case ?WS:recv(Sock, Left) of
        {text, Data} -> decode(Data);
        {continuation, Data} -> decode(<<Acc/binary, Data/binary>>);
        {text, Data, nofin} -> next(Sock, Deadline, Data);
        {continuation, Data, nofin} -> next(Sock, Deadline, <<Acc/binary, Data/binary>>);
        {error, timeout} -> error({cdp, timeout});
        Other -> error({cdp, Other})
    end.

decode(Bin) ->
    {ok, Msg} = falco_json:decode(Bin),
    Msg.

deadline(Timeout) ->
    erlang:monotonic_time(millisecond) + Timeout.
