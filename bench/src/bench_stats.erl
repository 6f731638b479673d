%% bench_stats: the statistics of the report: median, min and max over the
%% runs of one cell, the run-to-run spread, and the winner rule (a winner
%% is named only when its margin over the runner-up exceeds the spread).
-module(bench_stats).

-export([summary/1, winner/2]).

%% @doc Median, min, max and relative spread ((max - min) / median) of a
%% list of numbers; `undefined' for an empty list.
-spec summary([number()]) -> map() | undefined.
summary([]) -> undefined;
summary(L) ->
    S = lists:sort(L),
    N = length(S),
    Med = case N rem 2 of
              1 -> lists:nth(N div 2 + 1, S);
              0 -> (lists:nth(N div 2, S) + lists:nth(N div 2 + 1, S)) / 2
          end,
    Min = hd(S),
    Max = lists:last(S),
    Spread = case Med == 0 of
                 true -> 0.0;
                 false -> (Max - Min) / Med
             end,
    #{median => Med, min => Min, max => Max, spread => Spread, n => N}.

%% @doc The winner among `[{Server, Summary}]' for a metric where higher is
%% better (`high') or lower is better (`low'): `{Server, Margin}' when the
%% best median beats the runner-up's by more than the larger spread of the
%% two (and by at least 3 %, since one run has no spread), else `none'.
-spec winner([{atom(), map()}], high | low) -> {atom(), float()} | none.
winner(Cells, Dir) ->
    Valid = [{S, M} || {S, M = #{median := Med}} <- Cells, is_number(Med), Med > 0],
    Sorted = case Dir of
                 high -> lists:sort(fun({_, A}, {_, B}) -> med(A) >= med(B) end, Valid);
                 low -> lists:sort(fun({_, A}, {_, B}) -> med(A) =< med(B) end, Valid)
             end,
    case Sorted of
        [{W, A}, {_, B} | _] ->
            Margin = case Dir of
                         high -> med(A) / med(B) - 1;
                         low -> med(B) / med(A) - 1
                     end,
            Spread = max(maps:get(spread, A), maps:get(spread, B)),
            case Margin > Spread andalso Margin > 0.03 of
                true -> {W, Margin};
                false -> none
            end;
        _ ->
            none
    end.

med(#{median := M}) -> M.
