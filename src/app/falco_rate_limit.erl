%% @doc Rate limit middleware: a token bucket per client key; a request
%% finding its bucket empty is answered 429 with `Retry-After' and does not
%% reach the rest of the chain.
%%
%% ```
%% {falco_rate_limit, #{rate => 10, burst => 20}}
%% {falco_rate_limit, #{rate => 100, key => fun(Req) -> falco_req:header(<<"x-api-key">>, Req) end}}
%% '''
%% Options:
%% <ul>
%% <li>`rate' (required): tokens added per second, a positive number;</li>
%% <li>`burst': the bucket's size, the requests a client may send at once
%%     after a pause (default: one second of `rate', at least 1);</li>
%% <li>`key': `peer' (default: the client's address without the port, the
%%     PROXY protocol header's source when the listener takes one) or a
%%     `fun(Req) -> term()' (a header, a route binding, a user);</li>
%% <li>`max_keys': the most buckets kept (default 100000);</li>
%% <li>`name': limiters of the same name share their buckets (default: the
%%     other options, so one limiter composed again, at a route change or
%%     a listener restart, keeps its buckets).</li>
%% </ul>
%%
%% The bucket is kept as one integer, the time at which it would be full
%% again if nothing else came (the "theoretical arrival time" of the GCRA,
%% which behaves as a token bucket refilling continuously): {@link bucket/4}
%% is that arithmetic, pure. Buckets live in a public ETS table owned by
%% {@link falco_rate_tables}, one per limiter name; a request reads its row,
%% computes, and writes the new time back only if the row is still the one
%% it read (`ets:select_replace/2' as a compare-and-swap; a fresh key with
%% `ets:insert_new/2'), else starts over: two requests can never both take
%% the last token.
%%
%% Bounded under a spray of addresses: a bucket that has refilled
%% completely is worth what a missing row is worth and is evicted (every
%% second, sooner when the table is full); when `max_keys' buckets exist,
%% keys without one share a single overflow bucket with the same rate until
%% an eviction makes room. So an attacker with many addresses gets, at
%% most, one bucket per address it keeps busy plus the shared one, never
%% more memory than `max_keys' rows, and cannot take the buckets of
%% clients already tracked.
%%
%% A rejection emits `[falco, request, rejected]' with reason `rate_limit'
%% and status 429, as the listener's own limits do.
-module(falco_rate_limit).
-behaviour(falco_middleware).

-export([prepare/1, call/3]).
-export([bucket/4, retry_after/1, params/2, take/3]).
-export_type([limiter/0]).

-record(rl, {name :: term(),
             interval :: pos_integer(),
             capacity :: pos_integer(),
             key :: peer | fun((falco_req:req()) -> term()),
             max_keys :: pos_integer()}).
-opaque limiter() :: #rl{}.

-define(KEYS, [rate, burst, key, max_keys, name]).
-define(MAX_KEYS, 100000).
%% Compare-and-swap attempts before a request is refused as if the bucket
%% were empty (each failure means another request on the same key won).
-define(TRIES, 100).
%% The key of the shared bucket; user keys are stored as binaries, integers,
%% addresses or `{t, Binary}', never as this atom.
-define(OVERFLOW, overflow).

%% @doc Validates the options and gets the limiter's table. Raises
%% `error({invalid_option, falco_rate_limit, Key})'.
-spec prepare(map()) -> limiter().
prepare(Opts) when is_map(Opts) ->
    case maps:keys(maps:without(?KEYS, Opts)) of
        [] -> ok;
        [K | _] -> bad(K)
    end,
    Rate = case maps:find(rate, Opts) of
               {ok, R} when is_number(R), R > 0 -> R;
               _ -> bad(rate)
           end,
    Burst = case maps:get(burst, Opts, max(1, ceil(Rate))) of
                B when is_integer(B), B >= 1 -> B;
                _ -> bad(burst)
            end,
    Key = case maps:get(key, Opts, peer) of
              peer -> peer;
              F when is_function(F, 1) -> F;
              _ -> bad(key)
          end,
    MaxKeys = case maps:get(max_keys, Opts, ?MAX_KEYS) of
                  M when is_integer(M), M >= 1 -> M;
                  _ -> bad(max_keys)
              end,
    {Interval, Capacity} = params(Rate, Burst),
    Name = maps:get(name, Opts, {Rate, Burst, Key, MaxKeys}),
    ok = falco_rate_tables:table(Name),
    #rl{name = Name, interval = Interval, capacity = Capacity, key = Key,
        max_keys = MaxKeys};
prepare(_Opts) ->
    bad(options).

-spec bad(term()) -> no_return().
bad(Key) ->
    erlang:error({invalid_option, ?MODULE, Key}).

%% @doc Takes a token for the request's key, or answers 429.
-spec call(falco_req:req(), falco_middleware:next(), limiter()) -> falco_handler:response().
call(Req, Next, L) ->
    case take(L, key(L, Req), erlang:monotonic_time()) of
        ok ->
            Next(Req);
        {wait, Wait} ->
            Reason = {too_many_requests, retry_after(Wait)},
            ok = falco_pipeline:rejected(rate_limit, falco_errors:status(Reason), Req),
            falco_errors:response(Reason)
    end.

key(#rl{key = peer}, Req) ->
    case falco_req:peer(Req) of
        {Ip, _Port} -> Ip;
        undefined -> undefined
    end;
key(#rl{key = Fun}, Req) ->
    Fun(Req).

%% -- the bucket ------------------------------------------------------------------

%% @doc The time between two tokens and the bucket's size, both in native
%% time units, for `Rate' tokens a second and a bucket of `Burst'.
-spec params(number(), pos_integer()) -> {pos_integer(), pos_integer()}.
params(Rate, Burst) ->
    Interval = max(1, round(erlang:convert_time_unit(1, second, native) / Rate)),
    {Interval, Burst * Interval}.

%% @doc One request at `Now' on a bucket whose theoretical arrival time is
%% `Tat' (`undefined': a full bucket): `{ok, NewTat}' when a token is
%% there, else `{wait, Native}', the time until one is. The bucket is full
%% again at `Tat'; each token moves it on by `Interval'; a request passes
%% if that leaves it at most `Capacity' (burst tokens) ahead of now.
%% Times are `erlang:monotonic_time()', which never goes back; a `Tat' in
%% the past counts as now (a full bucket holds no more than its burst).
-spec bucket(integer(), integer() | undefined, pos_integer(), pos_integer()) ->
          {ok, integer()} | {wait, pos_integer()}.
bucket(Now, undefined, Interval, Capacity) ->
    bucket(Now, Now, Interval, Capacity);
bucket(Now, Tat, Interval, Capacity) ->
    New = max(Tat, Now) + Interval,
    case New - Now of
        Ahead when Ahead =< Capacity -> {ok, New};
        Ahead -> {wait, Ahead - Capacity}
    end.

%% @doc `Retry-After' for a wait in native units: whole seconds, rounded up.
-spec retry_after(pos_integer()) -> pos_integer().
retry_after(Wait) ->
    Second = erlang:convert_time_unit(1, second, native),
    max(1, (Wait + Second - 1) div Second).

%% -- the table -------------------------------------------------------------------

%% @doc Takes a token for `Key' at `Now' from the limiter's table:
%% `ok' or `{wait, Native}'.
-spec take(limiter(), term(), integer()) -> ok | {wait, pos_integer()}.
take(L = #rl{name = Name}, Key, Now) ->
    take(falco_rate_tables:lookup(Name), L, stored(Key), Now, ?TRIES).

take(_T, #rl{interval = Interval}, _Key, _Now, 0) ->
    {wait, Interval};
take(T = {Tid, _}, L = #rl{interval = Interval, capacity = Capacity}, Key, Now, Tries) ->
    case ets:lookup(Tid, Key) of
        [] ->
            new(T, L, Key, Now, Tries);
        [{_, Tat}] ->
            case bucket(Now, Tat, Interval, Capacity) of
                {ok, New} ->
                    %% Key and Tat are safe in a match pattern (see stored/1).
                    case ets:select_replace(Tid, [{{Key, Tat}, [], [{const, {Key, New}}]}]) of
                        1 -> ok;
                        0 -> take(T, L, Key, Now, Tries - 1)
                    end;
                Wait ->
                    Wait
            end
    end.

new(T = {Tid, Flag}, L = #rl{interval = Interval, capacity = Capacity, max_keys = MaxKeys},
    Key, Now, Tries) ->
    case Key =/= ?OVERFLOW andalso ets:info(Tid, size) >= MaxKeys of
        true ->
            ok = falco_rate_tables:full(Tid, Flag),
            take(T, L, ?OVERFLOW, Now, Tries);
        false ->
            {ok, New} = bucket(Now, undefined, Interval, Capacity),
            case ets:insert_new(Tid, {Key, New}) of
                true -> ok;
                false -> take(T, L, Key, Now, Tries - 1)
            end
    end.

%% A key as stored: one that cannot be read as a match pattern variable
%% (`'_'', `'$1'') nor be the overflow key. Binaries, integers and
%% addresses as they are, anything else as its external term format.
stored(K) when is_binary(K); is_integer(K) -> K;
stored(K = {A, B, C, D}) when is_integer(A), is_integer(B), is_integer(C), is_integer(D) -> K;
stored(K = {A, B, C, D, E, F, G, H})
  when is_integer(A), is_integer(B), is_integer(C), is_integer(D),
       is_integer(E), is_integer(F), is_integer(G), is_integer(H) -> K;
stored(K) -> {t, term_to_binary(K)}.
