%% @doc Response builders: small functions that return the handler response
%% terms of {@link falco_handler}, with the right fields set.
%%
%% Redirects follow RFC 9110 §15.4: 301 and 302 (a client may turn a POST
%% into a GET), 303 (always followed with GET), 307 and 308 (method and
%% body kept), with the target in `Location' (§10.2.2), which may be a
%% relative reference. The target is checked here so no request data can
%% split the response: CR, LF, NUL, other control characters, space and
%% DEL are refused with `error({invalid_location, Location})', before
%% anything is sent. Building an open redirect from user input (a
%% `Location' of `//evil.example') is still the caller's to avoid.
%%
%% `json/2' encodes with {@link falco_json} (RFC 8259) and labels the body
%% `application/json'; `text/2' and `html/2' label theirs as UTF-8.
%%
%% ```
%% handle(Req, _State) ->
%%     case falco_req:binding(id, Req) of
%%         undefined -> falco_resp:text(404, <<"no such user\n">>);
%%         Id -> falco_resp:json(200, #{id => Id})
%%     end.
%% '''
%% and `falco_resp:redirect(303, <<"/done">>)' is
%% `{303, [{<<"location">>, <<"/done">>}], <<>>}'.
-module(falco_resp).

-export([redirect/2, redirect/3, json/2, json/3, text/2, text/3, html/2, html/3]).

-type redirect_status() :: 301 | 302 | 303 | 307 | 308.
-export_type([redirect_status/0]).

%% @doc A redirect to `Location' with an empty body.
-spec redirect(redirect_status(), iodata()) -> falco_handler:response().
redirect(Status, Location) ->
    redirect(Status, Location, []).

%% @doc A redirect with extra fields.
-spec redirect(redirect_status(), iodata(), falco_handler:headers()) -> falco_handler:response().
redirect(Status, Location0, Headers)
  when Status =:= 301; Status =:= 302; Status =:= 303; Status =:= 307; Status =:= 308 ->
    Location = location(Location0),
    {Status, [{<<"location">>, Location} | Headers], <<>>};
redirect(Status, _Location, _Headers) ->
    erlang:error({invalid_redirect_status, Status}).

location(L0) ->
    L = try iolist_to_binary(L0)
        catch error:badarg -> erlang:error({invalid_location, L0})
        end,
    case L =/= <<>> andalso location_ok(L) of
        true -> L;
        false -> erlang:error({invalid_location, L0})
    end.

%% A URI reference has no controls, spaces or DEL (RFC 3986 §2); bytes
%% above 127 are let through for targets users type in their own script.
location_ok(<<C, _/binary>>) when C =< 32; C =:= 127 -> false;
location_ok(<<_, R/binary>>) -> location_ok(R);
location_ok(<<>>) -> true.

%% @doc A JSON reply; raises `error({invalid_json, Term})' if `Term' has
%% no JSON form (see {@link falco_json:encode/1}).
-spec json(falco_handler:status(), term()) -> falco_handler:response().
json(Status, Term) ->
    json(Status, Term, []).

%% @doc A JSON reply with extra fields.
-spec json(falco_handler:status(), term(), falco_handler:headers()) -> falco_handler:response().
json(Status, Term, Headers) ->
    case falco_json:encode(Term) of
        {ok, Body} -> {Status, [{<<"content-type">>, <<"application/json">>} | Headers], Body};
        {error, {invalid, Bad}} -> erlang:error({invalid_json, Bad})
    end.

%% @doc A `text/plain; charset=utf-8' reply.
-spec text(falco_handler:status(), iodata()) -> falco_handler:response().
text(Status, Text) ->
    text(Status, Text, []).

%% @doc A plain text reply with extra fields.
-spec text(falco_handler:status(), iodata(), falco_handler:headers()) -> falco_handler:response().
text(Status, Text, Headers) ->
    {Status, [{<<"content-type">>, <<"text/plain; charset=utf-8">>} | Headers], Text}.

%% @doc A `text/html; charset=utf-8' reply.
-spec html(falco_handler:status(), iodata()) -> falco_handler:response().
html(Status, Html) ->
    html(Status, Html, []).

%% @doc An HTML reply with extra fields.
-spec html(falco_handler:status(), iodata(), falco_handler:headers()) -> falco_handler:response().
html(Status, Html, Headers) ->
    {Status, [{<<"content-type">>, <<"text/html; charset=utf-8">>} | Headers], Html}.
