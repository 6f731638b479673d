%% A middleware module without the optional prepare/1, for
%% falco_middleware_tests: call/3 receives the options as given.
-module(falco_mw_plain).
-behaviour(falco_middleware).

-export([call/3]).

call(Req, Next, Header) ->
    falco_middleware:add_headers(Next(Req), [{Header, <<"yes">>}]).
