%% @doc Request id middleware: every request gets an id, taken from the
%% incoming `x-request-id' field when it looks like one (so a proxy's id
%% carries through) or generated (128 random bits as 32 hex digits).
%%
%% The id is stored in the request (`falco_req:request_id(Req)', a
%% binary), set in the process's `logger' metadata as `request_id' (a
%% string, so formatter templates print it as is) while the rest of the
%% chain and a streamed body run (restored afterwards, so the next request
%% on a keep-alive connection starts clean), and returned in the response's
%% `x-request-id' field, replacing any the handler set.
%%
%% An incoming id is accepted when it is 1 to 128 characters of
%% `A-Z a-z 0-9 - _ . : + / = @'; anything else (spaces, quotes, controls,
%% which could forge log lines) is replaced by a fresh id. Options:
%% `header' (the field name, default `<<"x-request-id">>') and
%% `trust_incoming' (default `true'; `false' always generates).
-module(falco_request_id).
-behaviour(falco_middleware).

-export([prepare/1, call/3, generate/0, is_valid/1]).

-include("../core/falco_grammar.hrl").

-define(MAX, 128).

%% @doc Validates the options.
-spec prepare(map()) -> {binary(), boolean()}.
prepare(Opts) when is_map(Opts) ->
    case maps:keys(maps:without([header, trust_incoming], Opts)) of
        [] -> ok;
        [K | _] -> erlang:error({invalid_option, ?MODULE, K})
    end,
    Header = maps:get(header, Opts, <<"x-request-id">>),
    Trust = maps:get(trust_incoming, Opts, true),
    case is_binary(Header) andalso Header =/= <<>> andalso falco_grammar:lower(Header) =:= Header of
        true -> ok;
        false -> erlang:error({invalid_option, ?MODULE, {header, Header}})
    end,
    case is_boolean(Trust) of
        true -> {Header, Trust};
        false -> erlang:error({invalid_option, ?MODULE, {trust_incoming, Trust}})
    end;
prepare(Opts) ->
    erlang:error({invalid_option, ?MODULE, Opts}).

%% @doc Tags the request, runs the rest of the chain, tags the response.
-spec call(falco_req:req(), falco_middleware:next(), {binary(), boolean()}) ->
          falco_handler:response().
call(Req, Next, {Header, Trust}) ->
    Id = case Trust andalso falco_req:header(Header, Req) of
             Incoming when is_binary(Incoming) ->
                 case is_valid(Incoming) of
                     true -> Incoming;
                     false -> generate()
                 end;
             _ ->
                 generate()
         end,
    Resp = with_metadata(Id, fun() -> Next(Req#{request_id => Id}) end),
    Streamed = falco_middleware:map_stream(
                 Resp, fun(Fun) -> fun(Send) -> with_metadata(Id, fun() -> Fun(Send) end) end end),
    falco_middleware:set_headers(Streamed, [{Header, Id}]).

with_metadata(Id, Fun) ->
    Old = logger:get_process_metadata(),
    logger:update_process_metadata(#{request_id => binary_to_list(Id)}),
    try
        Fun()
    after
        case Old of
            undefined -> logger:unset_process_metadata();
            _ -> logger:set_process_metadata(Old)
        end
    end.

%% @doc A fresh id: 128 random bits as 32 lowercase hex digits.
-spec generate() -> binary().
generate() ->
    << <<(hex(N))>> || <<N:4>> <= rand:bytes(16) >>.

hex(N) when N < 10 -> $0 + N;
hex(N) -> $a + N - 10.

%% @doc Whether an incoming id is acceptable (see the module doc).
-spec is_valid(binary()) -> boolean().
is_valid(Id) when byte_size(Id) >= 1, byte_size(Id) =< ?MAX ->
    valid_chars(Id);
is_valid(_) ->
    false.

valid_chars(<<C, R/binary>>)
  when ?IS_ALPHA(C); ?IS_DIGIT(C);
       C =:= $-; C =:= $_; C =:= $.; C =:= $:; C =:= $+; C =:= $/; C =:= $=; C =:= $@ ->
    valid_chars(R);
valid_chars(<<>>) -> true;
valid_chars(_) -> false.
