%% bench_proc: what the bench reads from the operating system: running a
%% command and collecting its output, a process's CPU time, resident
%% memory and peak (/proc/PID/stat and status), the kernel's count of
%% accepted TCP connections (/proc/net/snmp), and the machine description
%% for the results header.
-module(bench_proc).

-export([exec/2, exec_cpu/2, cpu_ticks/1, clk_tck/0, rss_kb/1, peak_rss_kb/1, reset_peak/1,
         passive_opens/0, machine/0, pin/1, core_ticks/1]).

%% @doc Runs a command (no shell) and returns its exit status and output
%% (stdout and stderr), or {timeout, Output} after TimeoutMs.
-spec exec([string()], pos_integer()) -> {integer() | timeout, string()}.
exec(Cmd, TimeoutMs) ->
    {Status, Out, _} = exec_cpu(Cmd, TimeoutMs),
    {Status, Out}.

%% @doc Like exec/2, and also the CPU time (clock ticks) the command used,
%% its children that it waited for included (a shell loop of short
%% h2load runs), sampled from /proc every 100 ms while it runs (so it
%% misses at most its last 100 ms).
-spec exec_cpu([string()], pos_integer()) -> {integer() | timeout, string(), non_neg_integer()}.
exec_cpu([Cmd | Args], TimeoutMs) ->
    Port = open_port({spawn_executable, Cmd},
                     [{args, Args}, exit_status, stderr_to_stdout, binary, hide]),
    {os_pid, Pid} = erlang:port_info(Port, os_pid),
    Deadline = erlang:monotonic_time(millisecond) + TimeoutMs,
    collect(Port, integer_to_list(Pid), [], 0, Deadline).

collect(Port, Pid, Acc, Ticks, Deadline) ->
    Left = Deadline - erlang:monotonic_time(millisecond),
    receive
        {Port, {data, D}} -> collect(Port, Pid, [D | Acc], Ticks, Deadline);
        {Port, {exit_status, S}} -> {S, unicode:characters_to_list(lists:reverse(Acc)), Ticks}
    after max(0, min(Left, 100)) ->
        case Left =< 0 of
            true ->
                _ = os:cmd("kill -9 " ++ Pid),
                catch port_close(Port),
                {timeout, unicode:characters_to_list(lists:reverse(Acc)), Ticks};
            false ->
                T = case cpu_ticks(Pid, children) of
                        undefined -> Ticks;
                        N -> max(N, Ticks)
                    end,
                collect(Port, Pid, Acc, T, Deadline)
        end
    end.

%% @doc The `taskset -c CORE' prefix that pins a command to one core, or
%% nothing when the machine has fewer than 2 cores or no taskset.
-spec pin(non_neg_integer()) -> [string()].
pin(Core) ->
    case {erlang:system_info(logical_processors), os:find_executable("taskset")} of
        {N, T} when is_integer(N), N >= 2, T =/= false -> [T, "-c", integer_to_list(Core)];
        _ -> []
    end.

%% @doc utime + stime of a process (all its threads), in clock ticks.
-spec cpu_ticks(string()) -> non_neg_integer() | undefined.
cpu_ticks(Pid) ->
    cpu_ticks(Pid, self_only).

cpu_ticks(Pid, Which) ->
    case file:read_file("/proc/" ++ Pid ++ "/stat") of
        {ok, B} ->
            %% Fields after the ")" closing the command name start at field 3:
            %% utime, stime, then cutime, cstime (children waited for).
            [_, After] = string:split(B, ")", trailing),
            Fields = string:lexemes(After, " "),
            N = case Which of
                    self_only -> [12, 13];
                    children -> [12, 13, 14, 15]
                end,
            lists:sum([binary_to_integer(lists:nth(I, Fields)) || I <- N]);
        _ ->
            undefined
    end.

%% @doc Busy and total clock ticks of one core so far (/proc/stat cpuN),
%% to see how much else ran on the server's core during a run.
-spec core_ticks(non_neg_integer()) -> {non_neg_integer(), non_neg_integer()} | undefined.
core_ticks(Core) ->
    Key = iolist_to_binary(["cpu", integer_to_list(Core), " "]),
    case file:read_file("/proc/stat") of
        {ok, B} ->
            case [L || L <- binary:split(B, <<"\n">>, [global]), string:prefix(L, Key) =/= nomatch] of
                [L | _] ->
                    [User, Nice, Sys, Idle, IoWait, Irq, SoftIrq, Steal | _] =
                        [binary_to_integer(F) || F <- tl(string:lexemes(L, " "))],
                    Busy = User + Nice + Sys + Irq + SoftIrq + Steal,
                    {Busy, Busy + Idle + IoWait};
                [] ->
                    undefined
            end;
        _ ->
            undefined
    end.

%% @doc Clock ticks per second (for cpu_ticks/1).
-spec clk_tck() -> pos_integer().
clk_tck() ->
    case string:to_integer(string:trim(os:cmd("getconf CLK_TCK"))) of
        {N, _} when is_integer(N), N > 0 -> N;
        _ -> 100
    end.

-spec rss_kb(string()) -> non_neg_integer() | undefined.
rss_kb(Pid) -> status_kb(Pid, <<"VmRSS:">>).

%% @doc The peak resident set size (VmHWM) of a process, in KB.
-spec peak_rss_kb(string()) -> non_neg_integer() | undefined.
peak_rss_kb(Pid) -> status_kb(Pid, <<"VmHWM:">>).

status_kb(Pid, Key) ->
    case file:read_file("/proc/" ++ Pid ++ "/status") of
        {ok, B} ->
            case [L || L <- binary:split(B, <<"\n">>, [global]), string:prefix(L, Key) =/= nomatch] of
                [L | _] -> binary_to_integer(hd(string:lexemes(string:prefix(L, Key), " \t")));
                [] -> undefined
            end;
        _ ->
            undefined
    end.

%% @doc Resets a process's peak RSS to its current RSS (Linux clear_refs 5).
-spec reset_peak(string()) -> ok | {error, term()}.
reset_peak(Pid) ->
    file:write_file("/proc/" ++ Pid ++ "/clear_refs", <<"5">>).

%% @doc TCP connections accepted by the kernel so far (Tcp: PassiveOpens).
-spec passive_opens() -> non_neg_integer() | undefined.
passive_opens() ->
    case file:read_file("/proc/net/snmp") of
        {ok, B} ->
            Tcp = [string:lexemes(L, " ") || L <- binary:split(B, <<"\n">>, [global]),
                                              string:prefix(L, <<"Tcp:">>) =/= nomatch],
            case Tcp of
                [Names, Values | _] ->
                    Map = maps:from_list(lists:zip(Names, Values)),
                    binary_to_integer(maps:get(<<"PassiveOpens">>, Map));
                _ ->
                    undefined
            end;
        _ ->
            undefined
    end.

%% @doc The machine description: CPU model, cores, memory, kernel, OTP.
-spec machine() -> map().
machine() ->
    Cpu = case file:read_file("/proc/cpuinfo") of
              {ok, B} ->
                  case [L || L <- binary:split(B, <<"\n">>, [global]),
                             string:prefix(L, <<"model name">>) =/= nomatch] of
                      [L | _] -> string:trim(lists:last(string:split(L, ":")));
                      [] -> <<"?">>
                  end;
              _ -> <<"?">>
          end,
    Mem = case file:read_file("/proc/meminfo") of
              {ok, <<"MemTotal:", M/binary>>} ->
                  {Kb, _} = string:to_integer(string:trim(M)),
                  io_lib:format("~.1f GiB", [Kb / 1048576]);
              _ -> "?"
          end,
    #{cpu => Cpu, cores => erlang:system_info(logical_processors),
      memory => Mem, kernel => string:trim(os:cmd("uname -sr")),
      otp => erlang:system_info(otp_release), erts => erlang:system_info(version)}.
