%% bench_falco_socket: falco on gen_tcp's socket NIF backend instead of
%% its default inet driver, so one run shows what the default buys.
-module(bench_falco_socket).

-export([start/2, version/0]).

-spec start(inet:port_number(), atom()) -> ok | {error, term()}.
start(Port, Scenario) ->
    bench_falco:start(Port, Scenario, #{inet_backend => socket}).

-spec version() -> string().
version() ->
    bench_falco:version() ++ " (inet_backend socket)".
