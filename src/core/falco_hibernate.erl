%% @private Hibernation of an idle connection process, keeping its deadline.
%%
%% A hibernating process (`proc_lib:hibernate/3') wakes only on a message,
%% so a `receive ... after' deadline does not survive it: {@link sleep/4}
%% arms a timer for the deadline first (absolute, so hibernating moves no
%% deadline), and on waking cancels it and goes on in the caller's own
%% loop, which sees for itself whether its deadline has passed. The
%% timer's message, `{timeout, Ref, falco_hibernate}', is only a wake-up
%% call; one that comes late (after the cancel missed it) is stray: the
%% callers drop it. The heap is collected and shrunk to its live data by
%% the hibernation; binaries the state still refers to are the caller's
%% to copy out of larger ones before it sleeps.
-module(falco_hibernate).

-export([sleep/4, wake/4]).

%% @doc Hibernates the calling process; on the next message (or at
%% `Deadline', monotonic ms, or never with `infinity') it goes on with
%% `apply(Module, Function, Args)'.
-spec sleep(module(), atom(), [term()], integer() | infinity) -> no_return().
sleep(Module, Function, Args, infinity) ->
    proc_lib:hibernate(?MODULE, wake, [Module, Function, Args, none]);
sleep(Module, Function, Args, Deadline) ->
    TRef = erlang:start_timer(Deadline, self(), ?MODULE, [{abs, true}]),
    proc_lib:hibernate(?MODULE, wake, [Module, Function, Args, TRef]).

%% @private The entry after hibernation.
-spec wake(module(), atom(), [term()], reference() | none) -> term().
wake(Module, Function, Args, none) ->
    apply(Module, Function, Args);
wake(Module, Function, Args, TRef) ->
    _ = erlang:cancel_timer(TRef),
    receive
        {timeout, TRef, ?MODULE} -> ok
    after 0 ->
        ok
    end,
    apply(Module, Function, Args).
