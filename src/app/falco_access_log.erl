%% @doc Access log middleware: one `logger' event per request, when its
%% response is complete.
%%
%% ```
%% middleware => [falco_request_id, {falco_access_log, #{level => info}}]
%% '''
%% The message reads `GET /path 200 1234 B 87 us' (method, path as
%% received without the query string, which may hold secrets, status,
%% body bytes or `-' when unknown, microseconds from the call to the end
%% of the response), and the same facts are in the event's metadata for
%% structured handlers: `method', `path', `status', `bytes', `duration_us',
%% `peer', and `request_id' from the process metadata when
%% {@link falco_request_id} runs before this middleware.
%%
%% Status, bytes and when a response is complete follow `falco_outcome'
%% (internal): the status the client gets (500 for a handler that
%% crashed or a response the pipeline refuses; the status of a falco error
%% raised), the body's size for full replies (0 for HEAD, 204 and 304),
%% the bytes a stream's function sent (logged when it returns), `-' for a
%% whole file, whose size is not looked up.
%%
%% Options: `level' (default `info'; OTP's primary level is `notice', so
%% raise it or use `notice' to see the lines) and `domain' (a logger domain
%% such as `[falco, access]' to route the lines with domain filters; none
%% by default, because OTP's default handler drops events whose domain is
%% not OTP's own).
-module(falco_access_log).
-behaviour(falco_middleware).

-include_lib("kernel/include/logger.hrl").

-export([prepare/1, call/3]).

-define(LEVELS, [emergency, alert, critical, error, warning, notice, info, debug]).

%% @doc Validates the options; the state is the level and the metadata
%% every line starts with.
-spec prepare(map()) -> {logger:level(), logger:metadata()}.
prepare(Opts) when is_map(Opts) ->
    case maps:keys(maps:without([level, domain], Opts)) of
        [] -> ok;
        [K | _] -> erlang:error({invalid_option, ?MODULE, K})
    end,
    Level = maps:get(level, Opts, info),
    case lists:member(Level, ?LEVELS) of
        true -> ok;
        false -> erlang:error({invalid_option, ?MODULE, {level, Level}})
    end,
    case maps:find(domain, Opts) of
        error ->
            {Level, #{}};
        {ok, Domain} ->
            case is_list(Domain) andalso lists:all(fun is_atom/1, Domain) of
                true -> {Level, #{domain => Domain}};
                false -> erlang:error({invalid_option, ?MODULE, {domain, Domain}})
            end
    end;
prepare(Opts) ->
    erlang:error({invalid_option, ?MODULE, Opts}).

%% @doc Runs the rest of the chain and logs its response (see
%% `falco_outcome', the rule shared with the request events).
-spec call(falco_req:req(), falco_middleware:next(), {logger:level(), logger:metadata()}) ->
          falco_handler:response().
call(Req, Next, Level) ->
    falco_outcome:watch(Req, Next, fun(R, Outcome) -> log(Level, R, Outcome) end).

log(Conf, Req = #{method := Method, path := Path},
    #{status := Status, bytes := Bytes, start := Start, stop := Stop}) ->
    Duration = erlang:convert_time_unit(Stop - Start, native, microsecond),
    {Level, Meta00} = Conf,
    Meta = Meta00#{method => Method, path => Path, status => Status, bytes => Bytes,
                   duration_us => Duration, peer => peer(Req)},
    ?LOG(Level, "~s ~s ~w ~s ~wus", [Method, Path, Status, bytes_text(Bytes), Duration], Meta).

bytes_text(undefined) -> "-";
bytes_text(N) -> [integer_to_list(N), " B"].

peer(#{peer := {Ip, Port}}) -> iolist_to_binary([inet:ntoa(Ip), ":", integer_to_list(Port)]);
peer(_) -> undefined.
