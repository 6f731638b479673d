%% Requests for unit tests of handlers and helpers, without a socket.
%%
%% new/3 builds a request map like the HTTP/1.1 connection does; body/3
%% gives it a body that its stream hands out in pieces of at most Piece
%% bytes (the protocol's own piece size, whatever the reader asks for), so
%% readers are exercised across arbitrary piece boundaries. The body state
%% is the stream state the request carries, as on the real protocols (each
%% read returns the new state). The stream also records every response
%% callback, so run/2 can push a handler's return through the real
%% falco_pipeline and show what a client gets.
-module(falco_test_req).
-behaviour(falco_stream).

-export([new/3, new/4, body/3, run/2]).
-export([send_response/4, send_headers/3, send_data/2, send_end/2, send_file/6,
         read_body/2, trailers/1, switch_protocols/4]).

-define(OUT, {?MODULE, out}).

new(Method, Path, Headers) ->
    new(Method, Path, Headers, <<>>).

new(Method, Path0, Headers, Body) ->
    {Path, Qs} = case binary:split(Path0, <<"?">>) of
                     [P, Q] -> {P, Q};
                     [P] -> {P, <<>>}
                 end,
    Req = #{method => Method, path => Path, qs => Qs, version => {1, 1},
            headers => [{string:lowercase(N), V} || {N, V} <- Headers],
            host => <<"localhost">>, port => 8080, peer => {{127, 0, 0, 1}, 40000},
            scheme => http, body => {length, byte_size(Body)}, listener => test},
    body(Req, Body, 7).

body(Req, Body, Piece) ->
    Req#{body => {length, byte_size(Body)}, stream => {?MODULE, {Body, Piece}}}.

%% Runs a handler's response through falco_pipeline; returns
%% {Status, Headers, BodyBinary} as the client would see it (a streamed
%% body joined, trailers dropped).
run(Req, Handler) ->
    put(?OUT, []),
    {ok, _} = falco_pipeline:run(Req, Handler, ?MODULE, {<<>>, 1}),
    Out = lists:reverse(erase(?OUT)),
    case Out of
        [{response, S, H, B}] -> {S, H, iolist_to_binary(B)};
        [{file, S, H, B}] -> {S, H, B};
        [{switch, S, H, Upgrade}] -> {S, H, {websocket, Upgrade}};
        [{headers, S, H} | Rest] ->
            {S, H, iolist_to_binary([D || {data, D} <- Rest])}
    end.

record(What) ->
    put(?OUT, [What | get(?OUT)]).

send_response(Status, Headers, Body, S) ->
    record({response, Status, Headers, Body}),
    {ok, S}.

switch_protocols(Status, Headers, Upgrade, S) ->
    record({switch, Status, Headers, Upgrade}),
    {ok, S}.

send_headers(Status, Headers, S) ->
    record({headers, Status, Headers}),
    {ok, S}.

send_data(Data, _S) ->
    record({data, Data}),
    ok.

send_end(_Trailers, S) ->
    record('end'),
    {ok, S}.

send_file(Status, Headers, Fd, Offset, Length, S) ->
    {ok, Data} = case Length of
                     0 -> {ok, <<>>};
                     _ -> file:pread(Fd, Offset, Length)
                 end,
    record({file, Status, Headers, Data}),
    {ok, S}.

read_body(all, {Body, Piece}) ->
    {ok, Body, {<<>>, Piece}};
read_body(Want, {Body, Piece}) ->
    N = lists:min([Want, Piece, byte_size(Body)]),
    <<Data:N/binary, Rest/binary>> = Body,
    case Rest of
        <<>> -> {ok, Data, {Rest, Piece}};
        _ -> {more, Data, {Rest, Piece}}
    end.

trailers(_S) ->
    [].
