%% @doc How an HTTP/2 connection ends without an error (RFC 9113 §6.8),
%% for falco_http2_machine, on its record: one GOAWAY then close (a
%% shutdown, idle_timeout, a client that sent its own GOAWAY and has no
%% stream left), or a drain in two steps: a GOAWAY with the largest stream
%% id and a PING, so that requests already on their way are still taken,
%% then, at the PING's answer or after ?DRAIN_RTT ms, a GOAWAY with the
%% last stream taken; the connection closes once no stream is left. A
%% connection with no stream arms `idle_timeout' (idle/1, after every
%% event). Connection errors (§5.4.1) stay with the machine, which
%% finds them.
%%
%% @private internal to falco
-module(falco_http2_goaway).

-export([close/3, drain/1, final/1, idle/1]).

-define(FALCO_H2_NO_PUT_STREAM, true).
-define(FALCO_H2_NO_REPLY, true).
-include("falco_http2_machine.hrl").

%% The first GOAWAY's stream id (§6.8: 2^31-1), and the most we wait for
%% the answer to the PING that measures the round trip.
-define(MAX_STREAM_ID, 16#7fffffff).
-define(DRAIN_RTT, 1000).

%% @doc A GOAWAY with the last stream taken, then close: `Why' is the
%% reason the connection gives.
-spec close(falco_http2_frame:error_code(), term(), #m{}) -> #m{}.
close(Code, Why, M = #m{last_id = Last, rare = R}) ->
    act({close, Why}, send(falco_http2_frame:goaway(Last, Code, <<>>),
                           M#m{rare = R#rare{closing = true, goaway_sent = true}})).

%% @doc The drain's first step (the machine's drain/1 checks that the
%% connection is neither closing nor draining).
-spec drain(#m{}) -> #m{}.
drain(M = #m{rare = R}) ->
    M1 = send(falco_http2_frame:goaway(?MAX_STREAM_ID, no_error, <<>>), M),
    M2 = send(falco_http2_frame:ping(?DRAIN_PING), M1),
    act({timer, drain, ?DRAIN_RTT}, M2#m{rare = R#rare{draining = first}}).

%% @doc The drain's second step: the GOAWAY with the last stream taken.
-spec final(#m{}) -> #m{}.
final(M = #m{last_id = Last, rare = R}) ->
    M1 = act({cancel_timer, drain}, M#m{rare = R#rare{draining = final, goaway_sent = true}}),
    send(falco_http2_frame:goaway(Last, no_error, <<>>), M1).

%% @doc After every event, what the streams left make of the connection:
%% with none left it closes if it is drained or the client said GOAWAY
%% (`{closed, M}'), else arms idle_timeout (`{true, Action}'); when its
%% first stream opens the timer is cancelled (`{false, Action}'); `keep'
%% otherwise. The machine writes `idle' and the action with its other
%% updates, in one copy of its record (falco_http2_machine:finish/1).
-spec idle(#m{}) -> keep | {boolean(), action()} | {closed, #m{}}.
idle(#m{rare = #rare{closing = true}}) ->
    keep;
idle(M = #m{streams = Streams, rare = R = #rare{draining = final}})
  when map_size(Streams) =:= 0 ->
    %% drained: the last GOAWAY is out and nothing is left to answer
    {closed, act({close, drained}, M#m{rare = R#rare{closing = true}})};
idle(M = #m{streams = Streams, rare = #rare{peer_goaway = true}})
  when map_size(Streams) =:= 0 ->
    %% §6.8: the client is leaving and nothing is left to answer.
    {closed, close(no_error, peer_goaway, M)};
idle(#m{streams = Streams, idle = false, rare = #rare{opts = #{idle_timeout := Idle}}})
  when map_size(Streams) =:= 0 ->
    {true, {timer, idle, Idle}};
idle(#m{streams = Streams, idle = true}) when map_size(Streams) > 0 ->
    {false, {cancel_timer, idle}};
idle(_) ->
    keep.
