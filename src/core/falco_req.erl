%% @doc Request accessors, the same for every protocol.
%%
%% A request is a map; read it through these functions so handlers keep
%% working as falco grows. Header names are lowercase binaries, values are
%% binaries as received (without surrounding whitespace), in arrival order.
%% Body reads go through the protocol's stream (`falco_stream') and
%% may be done in full ({@link read_body/1}, bounded by the listener's
%% `max_body') or piece by piece ({@link read_body/2}). Each read returns a
%% new request that carries the body state: use it for the next read and
%% for {@link trailers/1}. Reading again from a request an earlier read has
%% replaced raises (the handler gets a 500 and the connection closes)
%% rather than hand out bytes twice. The router
%% ({@link falco_router}) stores the bindings of the matched route under
%% `bindings', and the request id middleware ({@link falco_request_id})
%% its id under `request_id'.
-module(falco_req).

-export([method/1, path/1, qs/1, version/1, headers/1, header/2, header/3,
         peer/1, proxy/1, scheme/1, host/1, port/1, listener/1, has_body/1,
         read_body/1, read_body/2, trailers/1,
         bindings/1, binding/2, binding/3, request_id/1]).

-type req() :: #{method := binary(),
                 path := binary(),
                 qs := binary(),
                 version := {1, 0} | {1, 1} | {2, 0} | {3, 0},
                 headers := [{binary(), binary()}],
                 host := binary(),
                 port := inet:port_number() | undefined,
                 peer := {inet:ip_address(), inet:port_number()} | undefined,
                 scheme := http | https,
                 body := falco_http1:body_framing(),
                 listener := atom(),
                 stream := {module(), falco_stream:state()},
                 atom() => term()}.
-export_type([req/0]).

%% @doc The method, e.g. `<<"GET">>' (case-sensitive, RFC 9110 §9.1).
-spec method(req()) -> binary().
method(#{method := M}) -> M.

%% @doc The path of the target, still percent-encoded.
-spec path(req()) -> binary().
path(#{path := P}) -> P.

%% @doc The raw query string (after "?"), or `<<>>'.
-spec qs(req()) -> binary().
qs(#{qs := Q}) -> Q.

%% @doc The protocol version of the request.
-spec version(req()) -> {1, 0} | {1, 1} | {2, 0} | {3, 0}.
version(#{version := V}) -> V.

%% @doc All header fields in arrival order.
-spec headers(req()) -> [{binary(), binary()}].
headers(#{headers := H}) -> H.

%% @doc The first value of a header (name in lowercase), or `undefined'.
-spec header(binary(), req()) -> binary() | undefined.
header(Name, Req) -> header(Name, Req, undefined).

%% @doc The first value of a header, or `Default'.
-spec header(binary(), req(), Default) -> binary() | Default.
header(Name, #{headers := H}, Default) ->
    case lists:keyfind(Name, 1, H) of
        {_, V} -> V;
        false -> Default
    end.

%% @doc The peer address and port.
-spec peer(req()) -> {inet:ip_address(), inet:port_number()} | undefined.
peer(#{peer := P}) -> P.

%% @doc What the connection's PROXY protocol header said (listener option
%% `proxy_protocol'), or `undefined' when it came without one: version,
%% command, family, source and destination, and the version 2 TLVs
%% (`alpn', `authority', `unique_id', `ssl', `netns', others under `tlvs').
%% {@link peer/1} is already the header's source address.
-spec proxy(req()) -> falco_proxy_protocol:info() | undefined.
proxy(#{proxy := P}) -> P;
proxy(_) -> undefined.

%% @doc `http' or `https'.
-spec scheme(req()) -> http | https.
scheme(#{scheme := S}) -> S.

%% @doc The host the request is for (Host field or absolute target),
%% lowercased, without the port.
-spec host(req()) -> binary().
host(#{host := H}) -> H.

%% @doc The port named by the Host field, if any.
-spec port(req()) -> inet:port_number() | undefined.
port(#{port := P}) -> P.

%% @doc The name of the listener that accepted the request.
-spec listener(req()) -> atom().
listener(#{listener := L}) -> L.

%% @doc Whether the request has a body to read.
-spec has_body(req()) -> boolean().
has_body(#{body := B}) -> B =/= none andalso B =/= {length, 0}.

%% @doc Reads the whole body. Raises (and falco answers 413) if it is larger
%% than the listener's `max_body'; 408 if the client is too slow.
-spec read_body(req()) -> {ok, binary(), req()}.
read_body(Req = #{stream := {Mod, S0}}) ->
    {ok, Data, S} = Mod:read_body(all, S0),
    {ok, Data, Req#{stream := {Mod, S}}}.

%% @doc Reads the next piece of the body, at most `Length' bytes:
%% `{more, Data, Req}' while more remains, `{ok, Data, Req}' at the end.
-spec read_body(req(), #{length := pos_integer()}) -> {ok | more, binary(), req()}.
read_body(Req = #{stream := {Mod, S0}}, #{length := Length})
  when is_integer(Length), Length > 0 ->
    {Tag, Data, S} = Mod:read_body(Length, S0),
    {Tag, Data, Req#{stream := {Mod, S}}}.

%% @doc Trailer fields that followed a chunked body, from the request the
%% last read returned.
-spec trailers(req()) -> [{binary(), binary()}].
trailers(#{stream := {Mod, S}}) -> Mod:trailers(S).

%% @doc The bindings of the route that matched (see {@link falco_router}):
%% `:name' segments as decoded binaries, a `*name' wildcard as the list of
%% the remaining decoded segments. `#{}' when no router is in use.
-spec bindings(req()) -> #{atom() => binary() | [binary()]}.
bindings(Req) -> maps:get(bindings, Req, #{}).

%% @doc One binding, or `undefined'.
-spec binding(atom() | binary(), req()) -> binary() | [binary()] | undefined.
binding(Name, Req) -> binding(Name, Req, undefined).

%% @doc One binding, or `Default'. `Name' is the route's name as an atom
%% (`id' for `:id') or as a binary (`<<"id">>', Elixir's `"id"'): both
%% find it.
-spec binding(atom() | binary(), req(), Default) -> binary() | [binary()] | Default.
binding(Name, Req, Default) when is_atom(Name) ->
    case Req of
        #{bindings := #{Name := Value}} -> Value;
        _ -> Default
    end;
binding(Name, Req, Default) when is_binary(Name) ->
    %% Bindings are stored under atoms made when the routes were compiled:
    %% a name with no atom is the name of no binding (and none is made).
    try binary_to_existing_atom(Name) of
        Atom -> binding(Atom, Req, Default)
    catch
        error:badarg -> Default
    end.

%% @doc The request id set by {@link falco_request_id}, or `undefined'.
-spec request_id(req()) -> binary() | undefined.
request_id(Req) -> maps:get(request_id, Req, undefined).
