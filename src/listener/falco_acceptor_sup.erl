%% @doc The acceptors of one listener, restarted one by one: an acceptor
%% that dies takes only its own connections with it ({@link
%% falco_acceptor} is their supervisor), and a new one takes its place on
%% the same listen socket. More than 10 acceptor restarts in 10 s and this
%% supervisor gives up; the listener's supervisor then starts it again
%% (every connection of the listener ends) and counts that restart, and
%% the new one logs a warning line naming the listener.
%%
%% @private internal to falco
-module(falco_acceptor_sup).
-behaviour(supervisor).

-export([start_link/2]).
-export([init/1]).

%% @doc Starts the `num_acceptors' acceptors of listener `Name', whose
%% configuration its supervisor shared ({@link falco_acceptor:share_conf/2}):
%% the child specifications name the listener, not its configuration, so
%% that a restart's report stays a few lines.
-spec start_link(atom(), falco_slots:slots()) -> {ok, pid()} | ignore | {error, term()}.
start_link(Name, Slots) ->
    %% registered, so that its reports name the listener
    supervisor:start_link({local, list_to_atom("falco_acceptors_" ++ atom_to_list(Name))},
                          ?MODULE, {Name, Slots}).

%% @private
-spec init({atom(), falco_slots:slots()}) ->
          {ok, {supervisor:sup_flags(), [supervisor:child_spec()]}}.
init({Name, Slots}) ->
    #{num_acceptors := N, acceptor_starts := Starts} = falco_acceptor:conf(Name),
    %% Started again by the listener's supervisor: the one line that says
    %% which listener lost its acceptors and what became of it (the
    %% supervisors' reports, above it, say which deaths).
    case atomics:add_get(Starts, 1, 1) of
        1 -> ok;
        _ -> logger:warning("falco: listener ~0p: its acceptors' supervisor gave up or died "
                            "(more than 10 acceptor deaths in 10 s: a code purge kills them "
                            "all); acceptors started again on the same listen socket, their "
                            "connections closed", [Name], #{falco_listener => Name})
    end,
    %% An acceptor is the supervisor of its connections: it bounds its own
    %% shutdown (falco_acceptor), so it is given all the time it needs.
    Acceptors = [#{id => {acceptor, I},
                   start => {falco_acceptor, start_link, [Name, Slots, I]},
                   type => supervisor,
                   shutdown => infinity}
                 || I <- lists:seq(1, N)],
    {ok, {#{strategy => one_for_one, intensity => 10, period => 10}, Acceptors}}.
