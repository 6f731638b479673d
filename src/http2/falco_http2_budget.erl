%% @doc The flood budgets of an HTTP/2 connection, for falco_http2_machine,
%% on its record (pure). Each budget is a counter per `flood_window' (10 s)
%% with a limit (`h2_flood_limits'); going over it is a GOAWAY
%% ENHANCE_YOUR_CALM whose debug data names the budget (the machine sends
%% it). The budgets: every received frame (`frames'), client RST_STREAMs on
%% live streams (rapid reset, CVE-2023-44487), PING, SETTINGS, PRIORITY,
%% WINDOW_UPDATE, empty DATA frames, a WebSocket tunnel's DATA frames under
%% 1 KB (`tunnel_data'), and the RST_STREAMs we are made to send
%% (`stream_errors', CVE-2019-9514).
%%
%% A frame that carries the connection forward counts in no budget, since
%% counting it would cap what a legitimate peer may do and something else
%% already bounds it: a HEADERS that opens a stream (the stream budgets),
%% DATA that ends its stream or carries at least 1 KB (flow control), and
%% a WINDOW_UPDATE that gives back credit for data we sent (our own sends
%% bound those: see credit/3). A peer that acknowledges every DATA frame
%% with a WINDOW_UPDATE for the stream and one for the connection, as many
%% clients and relays do, sends two frames for each one we send; counted,
%% a download or a WebSocket echo of about 700 messages of 64 KB in 10 s
%% ended in `flood: frames' (Autobahn 12.2.10 over RFC 8441, 2026-12-02).
%%
%% @private internal to falco
-module(falco_http2_budget).

-export([budget/2, credit/3, count/2]).

-define(FALCO_H2_RECORDS_ONLY, true).
-include("falco_http2_machine.hrl").

%% DATA frames carrying at least this much (or ending their stream) are not
%% counted in the `frames' budget: counting them would cap an upload's
%% speed, and flow control already bounds their bytes. A WINDOW_UPDATE
%% giving back at least this much credit, or all that is owed, is free.
-define(FULL_DATA, 1024).

%% @doc The budget a received frame counts in before it is handled, or
%% `none'. A tunnel's small DATA (each a WebSocket message or part of one)
%% has `tunnel_data' of its own: a chat sends many, a flood of tiny
%% fragments must still end (the machine counts empty DATA in `empty_data'
%% too, and every WINDOW_UPDATE that is not credit/3 in `window_update').
-spec budget(falco_http2_frame:frame(), #m{}) -> none | atom().
budget({headers, Id, _, _, _, _}, #m{last_id = Last}) when Id > Last -> none;
budget({data, _, fin, _, _}, _) -> none;
%% A run of DATA frames (falco_http2_frame:parse_run/2) is made of large ones.
budget({data, _, nofin, Data, _}, _) when is_list(Data) -> none;
budget({data, _, nofin, Data, _}, _) when byte_size(Data) >= ?FULL_DATA -> none;
budget({data, Id, nofin, _, _}, #m{streams = Streams}) ->
    case Streams of
        #{Id := #stream{tunnel = true}} -> tunnel_data;
        #{} -> frames
    end;
budget({window_update, Id, Inc}, M) ->
    case credit(Id, Inc, M) of
        true -> none;
        false -> frames
    end;
budget(_, _) -> frames.

%% @doc Whether a WINDOW_UPDATE gives back credit for data we sent: the
%% window it grows is below the most it has been (the connection's, seen
%% in every update; a stream's, the client's SETTINGS_INITIAL_WINDOW_SIZE),
%% so we sent into it, and it gives back at least ?FULL_DATA or all that is
%% missing. For each window a peer gets at most as many of these as we
%% sent DATA frames into it, plus one per ?FULL_DATA bytes sent, whatever
%% it does (each either refills the window, which then waits for our next
%% DATA, or gives back ?FULL_DATA of what is owed): refilling a full window
%% with 1-byte updates is counted, as is an update for a stream that is
%% gone.
-spec credit(non_neg_integer(), pos_integer(), #m{}) -> boolean().
credit(0, Inc, #m{conn_send = W, rare = #rare{conn_send_high = High}}) ->
    refills(W, Inc, High);
credit(Id, Inc, #m{streams = Streams, rare = #rare{remote_window = Initial}}) ->
    case Streams of
        #{Id := #stream{send_window = W}} -> refills(W, Inc, Initial);
        #{} -> false
    end.

refills(W, Inc, Full) ->
    W < Full andalso (Inc >= ?FULL_DATA orelse W + Inc >= Full).

%% @doc Counts one event in budget `Key': `over' past its limit.
-spec count(atom(), #m{}) -> {ok, #m{}} | over.
count(Key, M = #m{rare = R = #rare{counts = Counts, opts = #{flood_limits := Limits}}}) ->
    N = maps:get(Key, Counts, 0) + 1,
    case N > maps:get(Key, Limits) of
        true -> over;
        false -> {ok, M#m{rare = R#rare{counts = Counts#{Key => N}}}}
    end.
