%% @doc CORS middleware (the CORS protocol of the WHATWG Fetch standard,
%% §3.2): answers preflight requests and adds the `Access-Control-*'
%% fields to the responses of allowed origins.
%%
%% ```
%% {falco_cors, #{origins => [<<"https://app.example">>], credentials => true,
%%                headers => [<<"content-type">>, <<"authorization">>], max_age => 600}}
%% '''
%% Options:
%% <ul>
%% <li>`origins': `` '*' '' (default, any origin), a list of origins
%%     (`<<"https://app.example">>', compared case-insensitively) or a
%%     `fun(Origin) -> boolean()';</li>
%% <li>`methods': allowed methods for preflights (default GET, HEAD, POST,
%%     PUT, PATCH, DELETE);</li>
%% <li>`headers': allowed request fields, a list, or `reflect' (default:
%%     allow whatever the preflight asks for);</li>
%% <li>`expose': response fields scripts may read (default none);</li>
%% <li>`credentials': send `Access-Control-Allow-Credentials: true'
%%     (default `false'); with `` '*' '' origins the request's origin is
%%     echoed instead of `*', which credentials forbid;</li>
%% <li>`max_age': seconds a preflight may be cached (default: not sent).</li>
%% </ul>
%% A request without `Origin', or from an origin not allowed, passes
%% through untouched (the browser then refuses the response to the
%% script). A preflight (OPTIONS with `Origin' and
%% `Access-Control-Request-Method') from an allowed origin is answered 204
%% here without reaching the handler. Whenever the answer depends on the
%% origin, `Vary: Origin' is added so caches keep the answers apart.
-module(falco_cors).
-behaviour(falco_middleware).

-export([prepare/1, call/3]).

-record(cors, {origins :: any | #{binary() => true} | fun((binary()) -> boolean()),
               methods :: binary(),
               headers :: reflect | binary() | undefined,
               expose :: binary() | undefined,
               credentials :: boolean(),
               max_age :: binary() | undefined}).

-define(KEYS, [origins, methods, headers, expose, credentials, max_age]).

%% @doc Validates the options and prebuilds the field values.
-spec prepare(map()) -> #cors{}.
prepare(Opts) when is_map(Opts) ->
    case maps:keys(maps:without(?KEYS, Opts)) of
        [] -> ok;
        [K | _] -> bad(K)
    end,
    #cors{origins = origins(maps:get(origins, Opts, '*')),
          methods = list_value(methods, maps:get(methods, Opts, [<<"GET">>, <<"HEAD">>, <<"POST">>,
                                                                <<"PUT">>, <<"PATCH">>,
                                                                <<"DELETE">>])),
          headers = case maps:get(headers, Opts, reflect) of
                        reflect -> reflect;
                        [] -> undefined;
                        Hs -> list_value(headers, Hs)
                    end,
          expose = case maps:get(expose, Opts, []) of
                       [] -> undefined;
                       Ex -> list_value(expose, Ex)
                   end,
          credentials = case maps:get(credentials, Opts, false) of
                            B when is_boolean(B) -> B;
                            _ -> bad(credentials)
                        end,
          max_age = case maps:get(max_age, Opts, undefined) of
                        undefined -> undefined;
                        N when is_integer(N), N >= 0 -> integer_to_binary(N);
                        _ -> bad(max_age)
                    end};
prepare(_Opts) ->
    bad(options).

-spec bad(term()) -> no_return().
bad(Key) ->
    erlang:error({invalid_option, ?MODULE, Key}).

origins('*') ->
    any;
origins(Fun) when is_function(Fun, 1) ->
    Fun;
origins(List) when is_list(List) ->
    maps:from_list([{falco_grammar:lower(origin(O)), true} || O <- List]);
origins(_) ->
    bad(origins).

origin(O) when is_binary(O), O =/= <<>> -> O;
origin(_) -> bad(origins).

list_value(Key, List) when is_list(List), List =/= [] ->
    %% RFC 9110 §5.6.2: methods and field names are tokens.
    case lists:all(fun(V) -> is_binary(V) andalso falco_grammar:is_token(V) end, List) of
        true -> iolist_to_binary(lists:join(<<", ">>, List));
        false -> bad(Key)
    end;
list_value(Key, _) ->
    bad(Key).

%% @doc Answers preflights, or runs the rest of the chain and adds the
%% CORS fields to its response.
-spec call(falco_req:req(), falco_middleware:next(), #cors{}) -> falco_handler:response().
call(Req, Next, C) ->
    case falco_req:header(<<"origin">>, Req) of
        undefined ->
            Next(Req);
        Origin ->
            case allowed(Origin, C) of
                false ->
                    Next(Req);
                true ->
                    case preflight(Req) of
                        {true, Requested} ->
                            {204, allow_origin(Origin, C) ++ preflight_fields(Requested, C), <<>>};
                        false ->
                            Resp = falco_middleware:default_headers(
                                     Next(Req), allow_origin(Origin, C) ++ expose(C)),
                            falco_middleware:add_headers(Resp, vary(C))
                    end
            end
    end.

allowed(_Origin, #cors{origins = any}) -> true;
allowed(Origin, #cors{origins = Fun}) when is_function(Fun, 1) -> Fun(Origin) =:= true;
%% An origin's scheme and host are case-insensitive ASCII (RFC 6454 §6.1);
%% bytes are compared as they are, so one that is not UTF-8 cannot crash.
allowed(Origin, #cors{origins = Map}) -> maps:is_key(falco_grammar:lower(Origin), Map).

%% Fetch §3.2.2: a CORS-preflight request is an OPTIONS request with
%% Access-Control-Request-Method.
preflight(Req = #{method := <<"OPTIONS">>}) ->
    case falco_req:header(<<"access-control-request-method">>, Req) of
        undefined -> false;
        _ -> {true, falco_req:header(<<"access-control-request-headers">>, Req)}
    end;
preflight(_Req) ->
    false.

allow_origin(_Origin, #cors{origins = any, credentials = false}) ->
    [{<<"access-control-allow-origin">>, <<"*">>}];
allow_origin(Origin, #cors{credentials = Credentials}) ->
    [{<<"access-control-allow-origin">>, Origin}
     | [{<<"access-control-allow-credentials">>, <<"true">>} || Credentials]].

vary(#cors{origins = any, credentials = false}) -> [];
vary(_) -> [{<<"vary">>, <<"Origin">>}].

expose(#cors{expose = undefined}) -> [];
expose(#cors{expose = Expose}) -> [{<<"access-control-expose-headers">>, Expose}].

preflight_fields(Requested, C = #cors{methods = Methods, headers = Headers, max_age = MaxAge}) ->
    [{<<"access-control-allow-methods">>, Methods}]
        ++ case {Headers, Requested} of
               {reflect, undefined} -> [];
               {reflect, _} -> [{<<"access-control-allow-headers">>, Requested}];
               {undefined, _} -> [];
               {List, _} -> [{<<"access-control-allow-headers">>, List}]
           end
        ++ [{<<"access-control-max-age">>, MaxAge} || MaxAge =/= undefined]
        ++ case {vary(C), Headers} of
               {[], reflect} -> [{<<"vary">>, <<"Access-Control-Request-Headers">>}];
               {[], _} -> [];
               {_, reflect} -> [{<<"vary">>, <<"Origin, Access-Control-Request-Headers">>}];
               {Vary, _} -> Vary
           end.
