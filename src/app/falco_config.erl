%% @doc A listener's whole configuration: its options checked by
%% falco_opts (the base layer, which knows every default), then its
%% application, here where the router and middleware are: the middleware
%% composed once to check it, the handler checked and prepared, or the
%% routes compiled (a bad route is an `{invalid_option, routes, Reason}'
%% at start; the compiled router is returned under `router').
%%
%% @private internal to falco
-module(falco_config).

-export([validate/1]).

%% @doc Validates `Opts' and returns the listener's configuration.
-spec validate(term()) -> {ok, map()} | {error, term()}.
validate(Opts) ->
    case falco_opts:validate(Opts) of
        {ok, Conf} -> handler(Conf);
        Error -> Error
    end.

%% The listener's middleware is composed once to check it (an error names
%% the entry and why: falco_middleware:compose/2), its handler checked and
%% prepared (falco_middleware:prepare_handler/1); routes are compiled,
%% and checked, in router/1.
handler(Conf = #{middleware := Ms}) ->
    case {falco_middleware:check(Ms), Conf} of
        {{error, Why}, _} ->
            {error, {invalid_option, middleware, Why}};
        {ok, #{handler := H}} ->
            case falco_middleware:prepare_handler(H) of
                {ok, H1} -> {ok, Conf#{handler => H1}};
                {error, Why} -> {error, {invalid_option, handler, Why}}
            end;
        {ok, _} ->
            router(Conf)
    end.

router(Conf = #{routes := Routes, router_opts := RouterOpts}) ->
    case falco_router:compile(Routes, RouterOpts) of
        {ok, Router} -> {ok, Conf#{router => Router}};
        {error, {invalid_router_option, _}} -> {error, {invalid_option, router_opts, RouterOpts}};
        {error, Reason} -> {error, {invalid_option, routes, Reason}}
    end;
router(Conf) ->
    {ok, Conf}.

