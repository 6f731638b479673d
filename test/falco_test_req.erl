%% Requests for unit tests of handlers and helpers, without a socket: a
%% thin layer over falco_testing (the helper falco ships), with the
%% defaults these tests were written for.
%%
%% new/3 builds a request map like the HTTP/1.1 connection does; body/3
%% gives it a body that its stream hands out in pieces of at most Piece
%% bytes (the protocol's own piece size, whatever the reader asks for), so
%% readers are exercised across arbitrary piece boundaries (7 unless told).
%% run/2 pushes a handler's return through the real falco_pipeline and
%% shows what a client gets: {Status, Headers, Body} (a streamed body
%% joined, trailers dropped, a file reply's bytes).
-module(falco_test_req).

-export([new/3, new/4, body/3, run/2]).

-define(PIECE, 7).

new(Method, Path, Headers) ->
    new(Method, Path, Headers, <<>>).

new(Method, Path, Headers, Body) ->
    Req = falco_testing:req(Method, Path, #{headers => Headers, peer => {{127, 0, 0, 1}, 40000},
                                            listener => test}),
    body(Req#{port => 8080}, Body, ?PIECE).

body(Req, Body, Piece) ->
    #{body := Framing, stream := Stream} =
        falco_testing:req(<<"GET">>, <<"/">>, #{body => Body, piece => Piece}),
    Req#{body => Framing, stream => Stream}.

run(Req, Handler) ->
    falco_testing:call(Handler, Req).
