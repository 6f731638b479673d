%% @doc Security headers middleware: adds the response fields browsers use
%% to harden a site, unless the handler set them itself.
%%
%% Defaults:
%% <ul>
%% <li>`x-content-type-options: nosniff' (no MIME sniffing);</li>
%% <li>`x-frame-options: SAMEORIGIN' (RFC 7034: no framing by other sites);</li>
%% <li>`referrer-policy: strict-origin-when-cross-origin';</li>
%% <li>`strict-transport-security: max-age=31536000; includeSubDomains'
%%     (RFC 6797), on https requests only: §7.2 says a server must not send
%%     it over plain HTTP;</li>
%% <li>`content-security-policy': not sent unless configured (a policy
%%     has to fit the site).</li>
%% </ul>
%% Options, each a value (iodata) or `false' to leave the field out:
%% `content_type_options', `frame_options', `referrer_policy', `hsts',
%% `csp'; and `extra', a list of further `{Name, Value}' fields.
%% ```
%% {falco_security_headers, #{csp => <<"default-src 'self'">>, frame_options => <<"DENY">>}}
%% '''
-module(falco_security_headers).
-behaviour(falco_middleware).

-export([prepare/1, call/3]).

-define(DEFAULTS, [{content_type_options, <<"x-content-type-options">>, <<"nosniff">>},
                   {frame_options, <<"x-frame-options">>, <<"SAMEORIGIN">>},
                   {referrer_policy, <<"referrer-policy">>, <<"strict-origin-when-cross-origin">>},
                   {csp, <<"content-security-policy">>, false}]).
-define(HSTS, <<"max-age=31536000; includeSubDomains">>).

%% @doc Validates the options and builds the two field lists (http, https).
-spec prepare(map()) -> {falco_handler:headers(), falco_handler:headers()}.
prepare(Opts) when is_map(Opts) ->
    Known = [extra, hsts | [K || {K, _, _} <- ?DEFAULTS]],
    case maps:keys(maps:without(Known, Opts)) of
        [] -> ok;
        [K | _] -> erlang:error({invalid_option, ?MODULE, K})
    end,
    Plain = [{Name, value(K, V)} || {K, Name, Default} <- ?DEFAULTS,
                                    V <- [maps:get(K, Opts, Default)], V =/= false]
        ++ extra(maps:get(extra, Opts, [])),
    Secure = case maps:get(hsts, Opts, ?HSTS) of
                 false -> Plain;
                 Hsts -> Plain ++ [{<<"strict-transport-security">>, value(hsts, Hsts)}]
             end,
    {Plain, Secure};
prepare(Opts) ->
    erlang:error({invalid_option, ?MODULE, Opts}).

value(K, V) ->
    try iolist_to_binary(V) of
        B ->
            case binary:match(B, [<<"\r">>, <<"\n">>, <<0>>]) of
                nomatch when B =/= <<>> -> B;
                _ -> erlang:error({invalid_option, ?MODULE, K})
            end
    catch
        error:badarg -> erlang:error({invalid_option, ?MODULE, K})
    end.

extra(List) when is_list(List) ->
    [case F of
         {Name, V} when is_binary(Name), Name =/= <<>> ->
             {falco_grammar:lower(Name), value(extra, V)};
         _ -> erlang:error({invalid_option, ?MODULE, extra})
     end || F <- List];
extra(_) ->
    erlang:error({invalid_option, ?MODULE, extra}).

%% @doc Runs the rest of the chain and adds the fields it lacks.
-spec call(falco_req:req(), falco_middleware:next(),
           {falco_handler:headers(), falco_handler:headers()}) -> falco_handler:response().
call(Req = #{scheme := https}, Next, {_Plain, Secure}) ->
    falco_middleware:default_headers(Next(Req), Secure);
call(Req, Next, {Plain, _Secure}) ->
    falco_middleware:default_headers(Next(Req), Plain).
