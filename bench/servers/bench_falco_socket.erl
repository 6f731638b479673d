%% bench_falco_inet: falco on gen_tcp's inet driver instead of its
%% default socket backend, so one run shows what the default buys.
-module(bench_falco_inet).

-export([start/2, version/0]).

-spec start(inet:port_number(), atom()) -> ok | {error, term()}.
start(Port, Scenario) ->
    bench_falco:start(Port, Scenario, #{inet_backend => inet}).

-spec version() -> string().
version() ->
    bench_falco:version() ++ " (inet_backend inet)".
