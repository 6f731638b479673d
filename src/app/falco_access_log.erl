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
%% Bytes are the body's size for full replies (0 for HEAD, 204 and 304,
%% RFC 9110 §9.3.2, §6.4.1), the length for a file range, and for a
%% stream the bytes its function sent; a streamed reply is logged when its
%% function returns. A whole-file reply's size is not looked up (`-').
%% A handler that crashes is logged with 500 (or the status of the falco
%% error it raised) and the exception is passed on to the pipeline; so is a
%% response the pipeline refuses and answers with 500 (a status outside
%% 200..599, an invalid field, a body that is not iodata), checked by the
%% pipeline's own {@link falco_pipeline:check_response/1}.
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

%% @doc Runs the rest of the chain and logs its response.
-spec call(falco_req:req(), falco_middleware:next(), {logger:level(), logger:metadata()}) ->
          falco_handler:response().
call(Req, Next, Level) ->
    Start = erlang:monotonic_time(microsecond),
    try Next(Req) of
        Resp -> logged(Resp, Req, Start, Level)
    catch
        throw:{falco_error, Reason} = Error:Stack ->
            log(Level, Req, error_status(Reason), undefined, Start),
            erlang:raise(throw, Error, Stack);
        Class:Reason:Stack ->
            log(Level, Req, 500, undefined, Start),
            erlang:raise(Class, Reason, Stack)
    end.

error_status(Reason) ->
    try falco_errors:status(Reason)
    catch error:function_clause -> 500
    end.

%% The status logged is the one the client gets: the response is checked
%% with the pipeline's own rule (falco_pipeline:check_response/1), and one
%% that the pipeline will refuse (a status outside 200..599, a field value
%% with CR or LF, a body that is not iodata, ...) is logged as the 500
%% sent in its place.
logged(Resp, Req, Start, Level) ->
    case falco_pipeline:check_response(Resp) of
        {ok, {stream, Status, _, _, _}} ->
            logged_stream(Resp, Status, Req, Start, Level);
        {ok, {full, Status, _, _, Body}} ->
            log(Level, Req, Status, bytes(Body, Req), Start),
            Resp;
        {ok, {websocket, _, _, _}} ->
            %% logged at the upgrade (the session may last for hours), with the
            %% status of a successful handshake: 101, or 200 over HTTP/2
            log(Level, Req, upgrade_status(Req), 0, Start),
            Resp;
        {error, _} ->
            log(Level, Req, 500, error_bytes(Req), Start),
            Resp
    end.

logged_stream(Resp, Status, Req = #{method := Method}, Start, Level)
  when Method =:= <<"HEAD">>; Status =:= 204; Status =:= 304 ->
    %% The pipeline will not run this body function.
    log(Level, Req, Status, 0, Start),
    Resp;
logged_stream(Resp, Status, Req, Start, Level) ->
    falco_middleware:map_stream(Resp, fun(Fun) -> counted(Fun, Req, Status, Start, Level) end).

counted(Fun, Req, Status, Start, Level) ->
    fun(Send) ->
            Count = counters:new(1, []),
            Counting = fun(Data) ->
                               ok = counters:add(Count, 1, iolist_size(Data)),
                               Send(Data)
                       end,
            try Fun(Counting) of
                Result ->
                    log(Level, Req, Status, counters:get(Count, 1), Start),
                    Result
            catch
                Class:Reason:Stack ->
                    log(Level, Req, Status, counters:get(Count, 1), Start),
                    erlang:raise(Class, Reason, Stack)
            end
    end.

upgrade_status(#{version := {2, 0}}) -> 200;
upgrade_status(_) -> 101.

bytes(none, _Req) -> 0;
bytes(_Body, #{method := <<"HEAD">>}) -> 0;
bytes({iodata, _, Size}, _Req) -> Size;
bytes({file, _, _, all}, _Req) -> undefined;
bytes({file, _, _, Length}, _Req) -> Length.

%% The pipeline's 500 carries falco_errors' text, none for HEAD.
error_bytes(#{method := <<"HEAD">>}) -> 0;
error_bytes(_Req) -> byte_size(falco_errors:body(internal_error)).

log(Conf, Req = #{method := Method, path := Path}, Status, Bytes, Start) ->
    Duration = erlang:monotonic_time(microsecond) - Start,
    {Level, Meta00} = Conf,
    Meta = Meta00#{method => Method, path => Path, status => Status, bytes => Bytes,
                   duration_us => Duration, peer => peer(Req)},
    ?LOG(Level, "~s ~s ~w ~s ~wus", [Method, Path, Status, bytes_text(Bytes), Duration], Meta).

bytes_text(undefined) -> "-";
bytes_text(N) -> [integer_to_list(N), " B"].

peer(#{peer := {Ip, Port}}) -> iolist_to_binary([inet:ntoa(Ip), ":", integer_to_list(Port)]);
peer(_) -> undefined.
