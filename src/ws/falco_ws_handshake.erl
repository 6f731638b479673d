%% @doc The WebSocket opening handshake, server side, as a pure function of
%% the request: RFC 6455 §4.2 over HTTP/1.1 (GET + Upgrade, answered 101)
%% and RFC 8441 §4-5 over HTTP/2 (extended CONNECT with `:protocol
%% websocket', answered 200), with the subprotocol (§1.9, §11.3.4) and
%% permessage-deflate (RFC 7692) chosen here.
%%
%% A request that is not a valid handshake gets the reason it is refused
%% for, `{websocket_handshake, Why}': `unsupported_version' for another
%% version (§4.4), `not_a_websocket_request' for a request that does not
%% ask to upgrade at all, `bad_key', `method_not_get' or `http_1_0' for a
%% malformed one (§4.2.1). Its status (426 or 400), fields and body are
%% falco_errors', like every error falco answers.
-module(falco_ws_handshake).

-export([accept/2, accept_key/1, protocol/2, default_opts/0, check_opts/1]).
-export_type([opts/0, result/0]).

-define(GUID, <<"258EAFA5-E914-47DA-95CA-C5AB0DC85B11">>).

%% `protocols': the subprotocols the server speaks, in its order of
%% preference; `compress': whether to accept permessage-deflate, and with
%% what configuration.
-type opts() :: #{protocols => [binary()],
                  compress => boolean() | falco_ws_deflate:config()}.
-type result() ::
        {ok, Status :: 101 | 200, [{binary(), iodata()}],
         #{protocol := binary() | undefined,
           deflate := undefined | falco_ws_deflate:params()}}
      | {error, {websocket_handshake, falco_errors:websocket_refusal()}}.

%% @doc Checks the handshake in `Req' (a request map: method, version,
%% headers and, over HTTP/2, `protocol' from the `:protocol' pseudo-header)
%% and gives the response status and fields, or the reason to answer
%% (falco_errors).
-spec accept(falco_req:req(), opts()) -> result().
accept(Req, Opts) ->
    case check(Req) of
        {ok, Status, Fields} -> negotiate(Req, Status, Fields, Opts);
        {error, _} = Error -> Error
    end.

check(Req = #{version := V}) when V =:= {2, 0}; V =:= {3, 0} ->
    %% falco_http2_request sets `protocol' only for an extended CONNECT
    %% with `:protocol websocket' (RFC 8441 §4, over HTTP/3 RFC 9220),
    %% presented as a GET.
    case maps:get(protocol, Req, undefined) of
        <<"websocket">> -> version(Req, {ok, 200, []});
        _ -> upgrade_required()
    end;
check(Req) ->
    Upgrade = has_element(<<"upgrade">>, <<"websocket">>, Req),
    Connection = has_element(<<"connection">>, <<"upgrade">>, Req),
    if not Upgrade; not Connection -> upgrade_required();
       true -> version(Req, key(Req))
    end.

upgrade_required() ->
    refused(not_a_websocket_request).

%% The version is checked first: §4.4 wants 426 for any other version.
version(Req, Next) ->
    case values(<<"sec-websocket-version">>, Req) of
        [<<"13">>] -> Next;
        _ -> refused(unsupported_version)
    end.

refused(Why) ->
    {error, {websocket_handshake, Why}}.

key(#{method := Method}) when Method =/= <<"GET">> ->
    refused(method_not_get);
key(#{version := {1, 0}}) ->
    refused(http_1_0);
key(Req) ->
    case values(<<"sec-websocket-key">>, Req) of
        [Key] ->
            case valid_key(Key) of
                true -> {ok, 101, [{<<"upgrade">>, <<"websocket">>},
                                   {<<"connection">>, <<"Upgrade">>},
                                   {<<"sec-websocket-accept">>, accept_key(Key)}]};
                false -> refused(bad_key)
            end;
        _ ->
            refused(bad_key)
    end.

%% §4.1: a base64-encoded 16-byte value, so 24 characters ending "==".
valid_key(Key) when byte_size(Key) =:= 24 ->
    try base64:decode(Key) of
        Raw -> byte_size(Raw) =:= 16 andalso base64:encode(Raw) =:= Key
    catch
        error:_ -> false
    end;
valid_key(_) ->
    false.

%% @doc `Sec-WebSocket-Accept' for a key (§4.2.2 item 5.4).
-spec accept_key(binary()) -> binary().
accept_key(Key) ->
    base64:encode(crypto:hash(sha, [Key, ?GUID])).

negotiate(Req, Status, Fields, Opts) ->
    Protocol = protocol(Req, maps:get(protocols, Opts, [])),
    Deflate = case maps:get(compress, Opts, false) of
                  false -> none;
                  true -> falco_ws_deflate:negotiate(values(<<"sec-websocket-extensions">>, Req), #{});
                  Config -> falco_ws_deflate:negotiate(values(<<"sec-websocket-extensions">>, Req),
                                                       Config)
              end,
    ProtocolField = [{<<"sec-websocket-protocol">>, Protocol} || Protocol =/= undefined],
    {DeflateField, Params} = case Deflate of
                                 none -> {[], undefined};
                                 {ok, Value, P} -> {[{<<"sec-websocket-extensions">>, Value}], P}
                             end,
    {ok, Status, Fields ++ ProtocolField ++ DeflateField,
     #{protocol => Protocol, deflate => Params}}.

%% @doc The subprotocol the handshake selects (`Sec-WebSocket-Protocol',
%% RFC 6455 §4.2.2): the first of `Ours' (the handler's `protocols'
%% option, in its order of preference) that the client offered, or
%% `undefined' (the client then decides whether to go on, §4.1). A route
%% handler that needs to know it calls this with the same list.
-spec protocol(falco_req:req(), [binary()]) -> binary() | undefined.
protocol(Req, Ours) ->
    Offered = [E || V <- values(<<"sec-websocket-protocol">>, Req), E <- falco_grammar:elements(V)],
    case [P || P <- Ours, lists:member(P, Offered)] of
        [First | _] -> First;
        [] -> undefined
    end.

%% The values of every field line named `Name', in order.
values(Name, Req) ->
    [V || {N, V} <- falco_req:headers(Req), N =:= Name].

%% Whether the #list of the field lines named `Name' holds `Token'
%% (case-insensitive, RFC 9110 §5.3: the lines are one list).
has_element(Name, Token, Req) ->
    lists:any(fun(V) -> falco_grammar:has_element(V, Token) end, values(Name, Req)).

%% -- the handler's options ------------------------------------------------------

%% @doc The options a handler may leave out (falco_opts has every default).
-spec default_opts() -> #{atom() => term()}.
default_opts() ->
    falco_opts:websocket_defaults().

%% @doc The handler's options (see {@link falco_ws_handler}) with the
%% defaults, or the first bad one. The pipeline checks them before it
%% answers the handshake, so a bad option is a 500, not a broken session.
-spec check_opts(term()) -> {ok, map()} | {error, {bad_websocket_option, term()}}.
check_opts(Opts) when is_map(Opts) ->
    All = maps:merge(default_opts(), Opts),
    case [{K, V} || {K, V} <- maps:to_list(All), not valid(K, V)] of
        [] -> {ok, All};
        [Bad | _] -> {error, {bad_websocket_option, Bad}}
    end;
check_opts(Other) ->
    {error, {bad_websocket_option, Other}}.

valid(K, V) when K =:= max_frame_size; K =:= max_message_size ->
    V =:= infinity orelse (is_integer(V) andalso V >= 0);
valid(max_fragments, V) -> V =:= infinity orelse (is_integer(V) andalso V > 0);
valid(max_empty_fragments, V) -> V =:= infinity orelse (is_integer(V) andalso V >= 0);
valid(K, V) when K =:= idle_timeout; K =:= ping_interval; K =:= close_timeout ->
    V =:= infinity orelse (is_integer(V) andalso V > 0);
valid(compress, V) -> is_boolean(V) orelse is_map(V);
valid(protocols, V) -> is_list(V) andalso lists:all(fun is_binary/1, V);
valid(_, _) -> false.

