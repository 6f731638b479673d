%% bench_check: the parity check. Before a server is measured on a
%% scenario, one request of the scenario goes through OTP's httpc and the
%% answer must have the scenario's status, content type and body bytes
%% (gunzipped for gzip_response), so every server is timed doing the same
%% work. A server that answers differently is not measured. Each check runs
%% in an httpc profile of its own, stopped afterwards, so no pooled
%% connection to an earlier server on the same port is ever reused.
-module(bench_check).

-export([check/2]).

-spec check(map(), inet:port_number()) -> ok | {error, string()}.
check(#{method := Method, path := Path, headers := Headers, body := Body0, expect := Expect},
      Port) ->
    _ = application:ensure_all_started(inets),
    {ok, Pid} = inets:start(httpc, [{profile, bench_check}], stand_alone),
    try request(Method, Path, Headers, Body0, Expect, Port, Pid)
    after
        inets:stop(stand_alone, Pid)
    end.

request(Method, Path, Headers, Body0, Expect, Port, Httpc) ->
    Url = "http://127.0.0.1:" ++ integer_to_list(Port) ++ Path,
    Hs = [{binary_to_list(K), binary_to_list(V)} || {K, V} <- Headers,
                                                     string:lowercase(K) =/= <<"connection">>],
    Request = case Method of
                  post ->
                      {Url, Hs, "application/octet-stream", body(Body0)};
                  _ ->
                      {Url, Hs}
              end,
    case httpc:request(Method, Request, [{timeout, 30000}], [{body_format, binary}], Httpc) of
        {ok, {{_, Status, _}, RespHeaders, RespBody}} ->
            compare(Expect, Status, RespHeaders, RespBody);
        {error, Reason} ->
            {error, io_lib:format("request failed: ~0p", [Reason])}
    end.

body({rep, Line, N}) -> binary:copy(Line, N);
body(B) -> B.

compare(#{status := S} = E, Status, Headers, Body0) ->
    Type = list_to_binary(proplists:get_value("content-type", Headers, "")),
    Body = case maps:get(encoding, E, identity) of
               gzip ->
                   try zlib:gunzip(Body0) catch _:_ -> {not_gzip, Body0} end;
               identity ->
                   Body0
           end,
    WantType = maps:get(type, E),
    TypeOk = WantType =:= any orelse string:prefix(Type, WantType) =/= nomatch,
    if
        Status =/= S ->
            {error, io_lib:format("status ~b, expected ~b", [Status, S])};
        not TypeOk ->
            {error, io_lib:format("content-type ~s, expected ~s", [Type, WantType])};
        Body =/= map_get(body, E) ->
            {error, io_lib:format("body differs (~s)", [describe(Body)])};
        true ->
            ok
    end.

describe(B) when is_binary(B), byte_size(B) > 60 ->
    io_lib:format("~b bytes: ~p...", [byte_size(B), binary:part(B, 0, 60)]);
describe(B) ->
    io_lib:format("~p", [B]).
