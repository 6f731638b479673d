%% @doc The falco application: stores the codecs' tables (HTTP/1.1
%% patterns, the HPACK Huffman decoding table) in `persistent_term' once,
%% then starts {@link falco_sup}. Building them here, not on first use in
%% a connection, keeps the first requests fast and keeps the codecs free
%% of writes (a key already stored, after a restart, is left as it is:
%% replacing one would force a global GC).
%%
%% @private internal to falco
-module(falco_app).
-behaviour(application).

-export([start/2, stop/1]).

%% @private
-spec start(application:start_type(), term()) -> {ok, pid()} | {error, term()}.
start(_Type, _Args) ->
    ok = build(fun() -> store_tables(falco_http1:tables() ++ falco_hpack_huffman:tables()) end),
    case falco_sup:start_link() of
        {ok, Pid} -> {ok, Pid};
        ignore -> {error, ignore};
        {error, _} = Error -> Error
    end.

%% @private
-spec stop(term()) -> ok.
stop(_State) ->
    ok.

%% Runs `Fun' in a process of its own: building the Huffman table grows a
%% heap to about 2.7 MB, which the application master's process calling
%% start/2 would keep for the node's life (it stays idle, never collected):
%% a node with falco idle held 16.1 MB against 13.5 MB once built apart
%% (erlang:memory(total), 2026-11-25).
build(Fun) ->
    Self = self(),
    Ref = make_ref(),
    {Pid, Mon} = spawn_monitor(fun() -> Self ! {Ref, Fun()} end),
    receive
        {Ref, Result} ->
            demonitor(Mon, [flush]),
            Result;
        {'DOWN', Mon, process, Pid, Reason} ->
            {error, {tables, Reason}}
    end.

store_tables(Tables) ->
    lists:foreach(fun({Key, Value}) ->
                          case persistent_term:get(Key, undefined) of
                              undefined -> persistent_term:put(Key, Value);
                              _ -> ok
                          end
                  end, Tables).
