%% @doc What became of a request, as the client sees it: the one rule that
%% the access log ({@link falco_access_log}) and the request events
%% ({@link falco_telemetry}) both report.
%%
%% {@link watch/3} runs the rest of a handler chain and calls `Report'
%% once, when the response is complete, with the status sent, the body
%% bytes (`undefined' when unknown), the monotonic times (native units) of
%% the call and of the end, and the exception if the chain raised one
%% (which is passed on to the pipeline). The status is the one the client
%% gets: the response is checked with the pipeline's own rule
%% ({@link falco_pipeline:check_response/1}), and one the pipeline will
%% refuse is reported as the 500 sent in its place; a `{falco_error, _}'
%% raised by the chain is reported with that error's status.
%%
%% Bytes are the body's size for full replies (0 for HEAD, 204 and 304,
%% RFC 9110 §9.3.2, §6.4.1), the length for a file range, and for a stream
%% the bytes its function sent; a streamed reply is complete when its
%% function returns. A whole-file reply's size is not looked up. A
%% WebSocket upgrade is complete at the handshake, with the status of a
%% successful one: 101, or 200 over HTTP/2 and HTTP/3.
%%
%% @private internal to falco
-module(falco_outcome).

-export([watch/3]).
-export_type([outcome/0]).

-type outcome() :: #{status := 100..599,
                     bytes := non_neg_integer() | undefined,
                     start := integer(),
                     stop := integer(),
                     exception := undefined | {error | exit | throw, term(), list()}}.

%% @doc Runs `Next(Req)' and reports its outcome with `Report(Req, Outcome)'.
-spec watch(falco_req:req(), falco_middleware:next(),
            fun((falco_req:req(), outcome()) -> term())) -> falco_handler:response().
watch(Req, Next, Report) ->
    Start = erlang:monotonic_time(),
    try Next(Req) of
        Resp -> complete(Resp, Req, Start, Report)
    catch
        throw:{falco_error, Reason} = Error:Stack ->
            report(Report, Req, error_status(Reason), undefined, Start, {throw, Error, Stack}),
            erlang:raise(throw, Error, Stack);
        Class:Reason:Stack ->
            report(Report, Req, 500, undefined, Start, {Class, Reason, Stack}),
            erlang:raise(Class, Reason, Stack)
    end.

error_status(Reason) ->
    try falco_errors:status(Reason)
    catch error:function_clause -> 500
    end.

complete(Resp, Req, Start, Report) ->
    case falco_pipeline:check_response(Resp) of
        {ok, {stream, Status, _, _, _}} ->
            stream(Resp, Status, Req, Start, Report);
        {ok, {full, Status, _, _, Body}} ->
            report(Report, Req, Status, bytes(Body, Req), Start, undefined),
            Resp;
        {ok, {websocket, _, _, _}} ->
            %% the session may last for hours: complete at the handshake
            report(Report, Req, upgrade_status(Req), 0, Start, undefined),
            Resp;
        {error, _} ->
            report(Report, Req, 500, error_bytes(Req), Start, undefined),
            Resp
    end.

stream(Resp, Status, Req = #{method := Method}, Start, Report)
  when Method =:= <<"HEAD">>; Status =:= 204; Status =:= 304 ->
    %% The pipeline will not run this body function.
    report(Report, Req, Status, 0, Start, undefined),
    Resp;
stream(Resp, Status, Req, Start, Report) ->
    falco_middleware:map_stream(Resp, fun(Fun) -> counted(Fun, Req, Status, Start, Report) end).

counted(Fun, Req, Status, Start, Report) ->
    fun(Send) ->
            Count = counters:new(1, []),
            Counting = fun(Data) ->
                               ok = counters:add(Count, 1, iolist_size(Data)),
                               Send(Data)
                       end,
            try Fun(Counting) of
                Result ->
                    report(Report, Req, Status, counters:get(Count, 1), Start, undefined),
                    Result
            catch
                Class:Reason:Stack ->
                    report(Report, Req, Status, counters:get(Count, 1), Start,
                           {Class, Reason, Stack}),
                    erlang:raise(Class, Reason, Stack)
            end
    end.

upgrade_status(#{version := {2, 0}}) -> 200;
%% RFC 9220: an extended CONNECT over HTTP/3 is answered as over HTTP/2
upgrade_status(#{version := {3, 0}}) -> 200;
upgrade_status(_) -> 101.

bytes(none, _Req) -> 0;
bytes(_Body, #{method := <<"HEAD">>}) -> 0;
bytes({iodata, _, Size}, _Req) -> Size;
bytes({file, _, _, all}, _Req) -> undefined;
bytes({file, _, _, Length}, _Req) -> Length.

%% The pipeline's 500 carries falco_errors' text, none for HEAD.
error_bytes(#{method := <<"HEAD">>}) -> 0;
error_bytes(_Req) -> byte_size(falco_errors:body(internal_error)).

report(Report, Req, Status, Bytes, Start, Exception) ->
    _ = Report(Req, #{status => Status, bytes => Bytes, start => Start,
                      stop => erlang:monotonic_time(), exception => Exception}),
    ok.
