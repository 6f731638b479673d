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
    ok = store_tables(falco_http1:tables() ++ falco_hpack_huffman:tables()),
    case falco_sup:start_link() of
        {ok, Pid} -> {ok, Pid};
        ignore -> {error, ignore};
        {error, _} = Error -> Error
    end.

%% @private
-spec stop(term()) -> ok.
stop(_State) ->
    ok.

store_tables(Tables) ->
    lists:foreach(fun({Key, Value}) ->
                          case persistent_term:get(Key, undefined) of
                              undefined -> persistent_term:put(Key, Value);
                              _ -> ok
                          end
                  end, Tables).
