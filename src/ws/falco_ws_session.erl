%% @doc The receiving side of a WebSocket connection as a pure state
%% machine (RFC 6455 §5.4 fragmentation, §5.5 control frames, §5.6 data
%% frames, §7 closing; RFC 7692 §6 compressed messages): frames in, from
%% {@link falco_ws_frame:parse/2}, events out, or the close code that ends
%% the connection.
%%
%% <ul>
%% <li>A message is one text or binary frame and its continuations; a
%%     continuation with no message started, or a new message before the
%%     last one ended, is 1002. Control frames may come between fragments.</li>
%% <li>A compressed message (RSV1 on its first frame; RSV1 on a
%%     continuation is 1002) is inflated frame by frame, so the size limit
%%     and UTF-8 apply to what it inflates to, as it inflates.</li>
%% <li>`max_message_size' bounds the message (inflated): past it, 1009.</li>
%% <li>A message holds what its payload costs, whatever its fragment
%%     count: the fragments are appended to one binary that grows in place
%%     (a list of fragments cost about 100 bytes each, a million empty
%%     ones 40 MB). `max_fragments' bounds the data frames of a message
%%     (past it, 1009) and `max_empty_fragments' those of them with no
%%     payload (past it, 1008): a flood of tiny or empty continuations
%%     ends at the bound, not at the peer's leisure.</li>
%% <li>Text is validated as it arrives ({@link falco_ws_utf8}): the first
%%     invalid byte is 1007, even mid-message.</li>
%% <li>A close frame's payload is checked (§5.5.1, §7.4): a bad code or
%%     length is 1002, a reason that is not UTF-8 1007.</li>
%% </ul>
%% Pings are reported; answering them (and the close handshake) is the
%% connection's business.
%%
%% @private internal to falco
-module(falco_ws_session).

-export([new/1, frame/2, frame/3, partial_text/3]).
-export_type([session/0, event/0, opts/0]).

-type opts() :: #{max_message_size := non_neg_integer() | infinity,
                  max_fragments := pos_integer() | infinity,
                  max_empty_fragments := non_neg_integer() | infinity,
                  deflate := undefined | falco_ws_deflate:state()}.
-type event() :: {text | binary | ping | pong, binary()}
               | {close, none | {1000..4999, binary()}}.

-record(msg, {type :: text | binary,
              compressed :: boolean(),
              acc = <<>> :: binary(),
              size = 0 :: non_neg_integer(),
              frags = 0 :: non_neg_integer(),
              empties = 0 :: non_neg_integer(),
              utf8 :: falco_ws_utf8:state() | binary}).

-record(session, {max :: non_neg_integer() | infinity,
                  max_frags :: pos_integer() | infinity,
                  max_empties :: non_neg_integer() | infinity,
                  deflate :: undefined | falco_ws_deflate:state(),
                  msg :: undefined | #msg{}}).
-opaque session() :: #session{}.

-type close_error() :: {error, 1002 | 1007 | 1008 | 1009, atom()}.

%% @doc A session before the first frame.
-spec new(opts()) -> session().
new(#{max_message_size := Max, max_fragments := Frags, max_empty_fragments := Empties,
      deflate := Deflate}) ->
    #session{max = Max, max_frags = Frags, max_empties = Empties, deflate = Deflate}.

%% @doc The next frame: the events it completes (none for a fragment that
%% does not end its message), or the close code and reason that end the
%% connection.
-spec frame(falco_ws_frame:frame(), session()) ->
          {ok, [event()], session()} | close_error().
frame(Frame, S) ->
    frame(Frame, none, S).

%% @doc {@link frame/2} for a frame whose first `Done' payload bytes were
%% checked as UTF-8 as they arrived, from the state {@link partial_text/3}
%% gave, to state `U': only the bytes after them are checked again.
-spec frame(falco_ws_frame:frame(), none | {non_neg_integer(), falco_ws_utf8:state()},
            session()) -> {ok, [event()], session()} | close_error().
frame({frame, Op, _, _, Payload}, _, S) when Op =:= ping; Op =:= pong ->
    {ok, [{Op, Payload}], S};
frame({frame, close, _, _, Payload}, _, S) ->
    case falco_ws_frame:close_payload(Payload) of
        {ok, none} -> {ok, [{close, none}], S};
        {ok, Code, Reason} -> {ok, [{close, {Code, Reason}}], S};
        {error, invalid_utf8} -> {error, 1007, invalid_utf8};
        {error, Why} -> {error, 1002, Why}
    end;
frame({frame, continuation, _, _, _}, _, #session{msg = undefined}) ->
    {error, 1002, unexpected_continuation};
frame({frame, continuation, _, true, _}, _, _) ->
    {error, 1002, rsv1_on_continuation};
frame({frame, continuation, Fin, false, Payload}, Checked, S = #session{msg = M}) ->
    counted(Payload, Fin, M, Checked, S);
frame({frame, _, _, _, _}, _, #session{msg = #msg{}}) ->
    {error, 1002, expected_continuation};
frame({frame, Type, Fin, Rsv1, Payload}, Checked, S) ->
    Utf8 = case Type of
               text -> falco_ws_utf8:new();
               binary -> binary
           end,
    counted(Payload, Fin, #msg{type = Type, compressed = Rsv1, utf8 = Utf8}, Checked, S).

%% @doc The UTF-8 state a frame being received with `Op' and `Rsv1' would
%% continue from, if its payload is text that can be checked before the
%% frame is complete (not compressed), else `none'.
-spec partial_text(falco_ws_frame:opcode(), boolean(), session()) ->
          {ok, falco_ws_utf8:state()} | none.
partial_text(text, false, #session{msg = undefined}) ->
    {ok, falco_ws_utf8:new()};
partial_text(continuation, false, #session{msg = #msg{type = text, compressed = false, utf8 = U}}) ->
    {ok, U};
partial_text(_, _, _) ->
    none.

%% The fragment and empty fragment bounds, then the payload.
counted(Payload, Fin, M = #msg{frags = Frags, empties = Empties}, Checked,
        S = #session{max_frags = MaxFrags, max_empties = MaxEmpties}) ->
    Empties1 = case Payload of
                   <<>> -> Empties + 1;
                   _ -> Empties
               end,
    if
        Frags >= MaxFrags -> {error, 1009, too_many_fragments};
        Empties1 > MaxEmpties -> {error, 1008, too_many_empty_fragments};
        true -> data(Payload, Fin, M#msg{frags = Frags + 1, empties = Empties1}, Checked, S)
    end.

data(Payload, Fin, M = #msg{compressed = true}, _, S = #session{max = Max, deflate = D}) ->
    case falco_ws_deflate:inflate(Payload, Fin, room(Max, M), D) of
        {ok, Plain} -> append(iolist_to_binary(Plain), Fin, M, none, S);
        {error, too_big} -> {error, 1009, message_too_big};
        {error, corrupt} -> {error, 1007, bad_deflate_data}
    end;
data(Payload, Fin, M, Checked, S = #session{max = Max}) ->
    case room(Max, M) of
        Room when Room =/= infinity, byte_size(Payload) > Room ->
            {error, 1009, message_too_big};
        _ ->
            append(Payload, Fin, M, Checked, S)
    end.

room(infinity, _) -> infinity;
room(Max, #msg{size = Size}) -> Max - Size.

append(Data, Fin, M = #msg{utf8 = binary}, _, S) ->
    next(Data, Fin, M, S);
append(Data, Fin, M = #msg{utf8 = U}, none, S) ->
    text(Data, Data, U, Fin, M, S);
append(Data, Fin, M, {Done, U}, S) ->
    text(Data, binary:part(Data, Done, byte_size(Data) - Done), U, Fin, M, S).

%% `New', the end of `Data' not checked yet, checked from state `U'.
text(Data, New, U, Fin, M, S) ->
    case falco_ws_utf8:validate(New, U) of
        {ok, U1} ->
            case Fin =:= fin andalso not falco_ws_utf8:complete(U1) of
                true -> {error, 1007, invalid_utf8};
                false -> next(Data, Fin, M#msg{utf8 = U1}, S)
            end;
        {error, invalid_utf8} ->
            {error, 1007, invalid_utf8}
    end.

%% The message so far is one binary, appended to in place (the runtime
%% keeps room after a binary that is only ever appended to), so that it
%% costs its payload and nothing per fragment; a sub-binary of the read
%% buffer is copied out of it as it is appended.
next(Data, nofin, M = #msg{acc = Acc, size = Size}, S) ->
    {ok, [], S#session{msg = M#msg{acc = <<Acc/binary, Data/binary>>,
                                   size = Size + byte_size(Data)}}};
next(Data, fin, #msg{type = Type, size = 0}, S) ->
    {ok, [{Type, Data}], S#session{msg = undefined}};
next(Data, fin, #msg{type = Type, acc = Acc}, S) ->
    {ok, [{Type, <<Acc/binary, Data/binary>>}], S#session{msg = undefined}}.
