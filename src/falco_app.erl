%% @doc The falco application: stores the compiled patterns of the
%% HTTP/1.1 codec and of the field grammar (falco_grammar) in
%% `persistent_term' once, adds the logger filter
%% that keeps listeners' options out of supervisor reports
%% ({@link falco_report:supervisor_filter/2}), then starts
%% {@link falco_sup}. Storing them here, not on first use in a connection,
%% keeps the codec free of writes; a key already stored (after a restart)
%% is left as it is, since replacing one would force a global GC. The
%% HPACK Huffman decoding table (0.53 MB) is not built here but when a
%% coded string is first decoded (falco_hpack_huffman): a node that only
%% speaks HTTP/1.1 never holds it.
%%
%% @private internal to falco
-module(falco_app).
-behaviour(application).

-export([start/2, stop/1]).

%% @private
-spec start(application:start_type(), term()) -> {ok, pid()} | {error, term()}.
start(_Type, _Args) ->
    ok = store_tables(falco_grammar:tables() ++ falco_http1:tables()),
    %% supervisor reports of a listener without its options (falco_report)
    _ = logger:add_primary_filter(falco_reports, {fun falco_report:supervisor_filter/2, []}),
    case falco_sup:start_link() of
        {ok, Pid} -> {ok, Pid};
        ignore -> {error, ignore};
        {error, _} = Error -> Error
    end.

%% @private
-spec stop(term()) -> ok.
stop(_State) ->
    _ = logger:remove_primary_filter(falco_reports),
    ok.

store_tables(Tables) ->
    lists:foreach(fun({Key, Value}) ->
                          case persistent_term:get(Key, undefined) of
                              undefined -> persistent_term:put(Key, Value);
                              _ -> ok
                          end
                  end, Tables).
