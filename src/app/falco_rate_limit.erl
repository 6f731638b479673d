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
%% `falco_rate_tables', one per limiter name; a request moves its
%% row on in one `ets:update_counter/3' (atomic: two requests can never
%% both take the last token), and gives the token back when it was one too
%% many.
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
-export([bucket/4, advance/3, verdict/3, ops/2, retry_after/1, params/2, take/3]).
-export_type([limiter/0]).

-record(rl, {name :: term(),
             interval :: pos_integer(),
             capacity :: pos_integer(),
             key :: peer | fun((falco_req:req()) -> term()),
             max_keys :: pos_integer()}).
-opaque limiter() :: #rl{}.

-define(KEYS, [rate, burst, key, max_keys, name]).
-define(MAX_KEYS, 100000).
%% The key of the shared bucket; user keys are stored as integers,
%% addresses, short binaries, `{t, Binary}' or `{h, Hash}' (stored/1),
%% never as this atom.
-define(OVERFLOW, overflow).
%% The longest key stored as it is.
-define(SHORT, 32).

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
%% there, else `{wait, Native}', the time until one is: {@link advance/3}
%% then {@link verdict/3}.
-spec bucket(integer(), integer() | undefined, pos_integer(), pos_integer()) ->
          {ok, integer()} | {wait, pos_integer()}.
bucket(Now, undefined, Interval, Capacity) ->
    bucket(Now, Now, Interval, Capacity);
bucket(Now, Tat, Interval, Capacity) ->
    New = advance(Now, Tat, Interval),
    case verdict(Now, New, Capacity) of
        ok -> {ok, New};
        Wait -> Wait
    end.

%% @doc The bucket after one token is taken: it is full again at `Tat',
%% and a token moves that on by `Interval'; a `Tat' in the past counts as
%% now (a full bucket holds no more than its burst). Times are
%% `erlang:monotonic_time()', which never goes back. The table does this
%% in one `ets:update_counter/3' ({@link ops/2}).
-spec advance(integer(), integer(), pos_integer()) -> integer().
advance(Now, Tat, Interval) when is_integer(Now), is_integer(Tat), is_integer(Interval) ->
    max(Tat, Now) + Interval.

%% @doc Whether the token could be taken: the bucket may run at most
%% `Capacity' (burst tokens) ahead of now; else `{wait, Native}', how long
%% until it could.
-spec verdict(integer(), integer(), pos_integer()) -> ok | {wait, pos_integer()}.
verdict(Now, New, Capacity) ->
    case New - Now of
        Ahead when Ahead =< Capacity -> ok;
        Ahead -> {wait, Ahead - Capacity}
    end.

%% @doc {@link advance/3} as `ets:update_counter/3' operations on a row
%% `{Key, Tat}': `Tat - 1' set to `Now - 1' when it is below, then
%% `+ Interval + 1'.
-spec ops(integer(), pos_integer()) -> [{2, integer()} | {2, -1, integer(), integer()}].
ops(Now, Interval) ->
    [{2, -1, Now - 1, Now - 1}, {2, Interval + 1}].

%% @doc `Retry-After' for a wait in native units: whole seconds, rounded up.
-spec retry_after(pos_integer()) -> pos_integer().
retry_after(Wait) ->
    Second = erlang:convert_time_unit(1, second, native),
    max(1, (Wait + Second - 1) div Second).

%% -- the table -------------------------------------------------------------------

%% @doc Takes a token for `Key' at `Now' from the limiter's table:
%% `ok' or `{wait, Native}'. The row is advanced in one atomic update;
%% when that leaves it too far ahead the token is given back (a request
%% running at that moment may see one token fewer: a refusal near the
%% limit, never a token taken twice).
-spec take(limiter(), term(), integer()) -> ok | {wait, pos_integer()}.
take(L = #rl{name = Name, interval = Interval, capacity = Capacity}, Key0, Now) ->
    T = {Tid, _} = falco_rate_tables:lookup(Name),
    Ops = ops(Now, Interval),
    Key1 = stored(Key0),
    {Key, New} = try ets:update_counter(Tid, Key1, Ops) of
                     [_, N] -> {Key1, N}
                 catch
                     error:badarg -> fresh(T, L, Key1, Ops, Now)
                 end,
    case verdict(Now, New, Capacity) of
        ok ->
            ok;
        Wait ->
            _ = try ets:update_counter(Tid, Key, {2, -Interval})
                catch error:badarg -> ok  % evicted meanwhile: nothing to give back
                end,
            Wait
    end.

%% A key without a row: a new full bucket, or the shared one when the table
%% holds `max_keys' rows.
fresh({Tid, Flag}, #rl{max_keys = MaxKeys}, Key1, Ops, Now) ->
    Key = case Key1 =/= ?OVERFLOW andalso ets:info(Tid, size) >= MaxKeys of
              true ->
                  ok = falco_rate_tables:full(Tid, Flag),
                  ?OVERFLOW;
              false ->
                  Key1
          end,
    [_, New] = ets:update_counter(Tid, Key, Ops, {Key, Now}),
    {Key, New}.

%% A key as stored: never the overflow key, and small whatever the key fun
%% returns (a row stays near 100 bytes, so `max_keys' bounds the memory).
%% Integers and addresses as they are, a binary of up to 32 bytes as it
%% is, anything else as its external term format, hashed when longer.
stored(K) when is_integer(K) -> K;
stored(K = {A, B, C, D}) when is_integer(A), is_integer(B), is_integer(C), is_integer(D) -> K;
stored(K = {A, B, C, D, E, F, G, H})
  when is_integer(A), is_integer(B), is_integer(C), is_integer(D),
       is_integer(E), is_integer(F), is_integer(G), is_integer(H) -> K;
stored(K) when is_binary(K), byte_size(K) =< ?SHORT -> K;
stored(K) when is_binary(K) -> {h, crypto:hash(sha256, K)};
stored(K) ->
    case term_to_binary(K) of
        B when byte_size(B) =< ?SHORT -> {t, B};
        B -> {h, crypto:hash(sha256, B)}
    end.
