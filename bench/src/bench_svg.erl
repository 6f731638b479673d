%% bench_svg: the charts of the report, written as plain SVG by hand.
%%
%%   throughput.svg  req/s per scenario and server: one bar per server,
%%                   scaled to the fastest server of its scenario (the
%%                   scenarios differ by orders of magnitude), with the
%%                   min-max of the runs as a whisker and the median printed.
%%   latency.svg     p50 (dark) and p99 (light) per scenario and server on
%%                   one logarithmic axis, 10 us to 10 s.
%%   openloop.svg    with --open-loop: for each scenario, every server's
%%                   corrected p99 against the rate it achieved (linear
%%                   rate axis, logarithmic p99 axis, 100 us to 10 s).
-module(bench_svg).

-export([write/4, open_loop/4]).

-define(W, 900).
-define(LABEL, 190).
-define(BAR, 14).
-define(GAP, 3).
-define(VALUE_W, 150).

-spec write(map(), file:filename(), string(), fun((binary()) -> binary())) -> [file:filename()].
write(Report, Out, Suffix, Clean) ->
    T = filename:join(Out, "throughput" ++ Suffix ++ ".svg"),
    L = filename:join(Out, "latency" ++ Suffix ++ ".svg"),
    ok = file:write_file(T, Clean(unicode:characters_to_binary(throughput(Report)))),
    ok = file:write_file(L, Clean(unicode:characters_to_binary(latency(Report)))),
    [T, L].

color(falco) -> "#e8590c";
color(elli) -> "#1c7ed6";
color(cowboy) -> "#37b24d";
color(inets) -> "#7048e8";
color(mochiweb) -> "#d6336c";
color(yaws) -> "#868e96";
color(nginx) -> "#343a40";
color(floor) -> "#adb5bd";
color(_) -> "#495057".

%% Rows: for each scenario a title row, then one row per server.
rows(#{results := Results, servers := Servers, scenarios := Scs}) ->
    [{Name, [{S, bench_report:cells(Results, S, Name)} || S <- Servers]}
     || #{name := Name} <- Scs].

height(Rows, Servers) ->
    70 + length(Rows) * (22 + length(Servers) * (?BAR + ?GAP) + 8) + 30.

frame(Title, Sub, H, Servers, Body) ->
    Legend = [begin
                  X = ?LABEL + I * 110,
                  [rect(X, 40, 12, 12, color(S), ""), text(X + 16, 51, atom_to_list(S), "")]
              end || {I, S} <- lists:zip(lists:seq(0, length(Servers) - 1), Servers)],
    ["<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"", i(?W), "\" height=\"", i(H),
     "\" viewBox=\"0 0 ", i(?W), " ", i(H), "\" font-family=\"sans-serif\" font-size=\"12\">\n",
     rect(0, 0, ?W, H, "#ffffff", ""),
     text(10, 20, Title, " font-size=\"16\" font-weight=\"bold\""),
     text(10, 34, Sub, " fill=\"#555\""),
     Legend, Body, "</svg>\n"].

throughput(R = #{servers := Servers}) ->
    Rows = rows(R),
    H = height(Rows, Servers),
    Scale = ?W - ?LABEL - ?VALUE_W,
    {Body, _} = lists:mapfoldl(
        fun({Name, Cells}, Y0) ->
                Max = lists:max([0 | [maps:get(max, Rps) || {_, #{rps := Rps}} <- Cells]]),
                Title = text(10, Y0 + 14, atom_to_list(Name), " font-weight=\"bold\""),
                {Bars, Y1} = lists:mapfoldl(
                    fun({S, C}, Y) ->
                            Label = text(?LABEL - 8, Y + 11, atom_to_list(S), " text-anchor=\"end\""),
                            Bar = case C of
                                      #{rps := #{median := M, min := Lo, max := Hi}} when Max > 0 ->
                                          Wd = M / Max * Scale,
                                          [rect(?LABEL, Y, Wd, ?BAR, color(S), ""),
                                           whisker(?LABEL + Lo / Max * Scale, ?LABEL + Hi / Max * Scale,
                                                   Y + ?BAR div 2),
                                           text(?LABEL + Hi / Max * Scale + 6, Y + 11,
                                                [bench_report:fmt_rps(M), " req/s"], "")];
                                      {unsupported, Why} ->
                                          text(?LABEL, Y + 11, ["— ", Why], " fill=\"#888\"");
                                      _ ->
                                          text(?LABEL, Y + 11, "failed", " fill=\"#c92a2a\"")
                                  end,
                            {[Label, Bar], Y + ?BAR + ?GAP}
                    end, Y0 + 22, Cells),
                {[Title, Bars], Y1 + 8}
        end, 70, Rows),
    frame("Throughput, req/s (higher is better)",
          "Median of the runs; whisker = min-max; bars scaled to the fastest server of each scenario",
          H, Servers, Body).

latency(R = #{servers := Servers}) ->
    Rows = rows(R),
    H = height(Rows, Servers),
    Scale = ?W - ?LABEL - ?VALUE_W,
    X = fun(Us) -> ?LABEL + (math:log10(max(10, min(Us, 1.0e7))) - 1) / 6 * Scale end,
    Grid = [[line(X(D), 60, X(D), H - 25, "#dee2e6"),
             text(X(D), H - 10, L, " text-anchor=\"middle\" fill=\"#555\"")]
            || {D, L} <- [{10, "10 µs"}, {100, "100 µs"}, {1000, "1 ms"}, {10000, "10 ms"},
                          {100000, "100 ms"}, {1000000, "1 s"}, {10000000, "10 s"}]],
    {Body, _} = lists:mapfoldl(
        fun({Name, Cells}, Y0) ->
                Title = text(10, Y0 + 14, atom_to_list(Name), " font-weight=\"bold\""),
                {Bars, Y1} = lists:mapfoldl(
                    fun({S, C}, Y) ->
                            Label = text(?LABEL - 8, Y + 11, atom_to_list(S), " text-anchor=\"end\""),
                            Bar = case C of
                                      #{p50 := #{median := P50}, p99 := #{median := P99}} ->
                                          [rect(?LABEL, Y, X(P99) - ?LABEL, ?BAR, color(S),
                                                " fill-opacity=\"0.35\""),
                                           rect(?LABEL, Y, X(P50) - ?LABEL, ?BAR, color(S), ""),
                                           text(X(P99) + 6, Y + 11,
                                                ["p50 ", bench_report:fmt_us(P50), " · p99 ",
                                                 bench_report:fmt_us(P99)], "")];
                                      #{p50 := #{median := P50}} ->
                                          [rect(?LABEL, Y, X(P50) - ?LABEL, ?BAR, color(S), ""),
                                           text(X(P50) + 6, Y + 11,
                                                ["p50 ", bench_report:fmt_us(P50), " · p99 unknown"], "")];
                                      {unsupported, Why} ->
                                          text(?LABEL, Y + 11, ["— ", Why], " fill=\"#888\"");
                                      _ ->
                                          text(?LABEL, Y + 11, "failed", " fill=\"#c92a2a\"")
                                  end,
                            {[Label, Bar], Y + ?BAR + ?GAP}
                    end, Y0 + 22, Cells),
                {[Title, Bars], Y1 + 8}
        end, 70, Rows),
    frame("Latency p50 and p99 (lower is better)",
          "Dark: p50, light: p99 (medians of the runs, closed loop); log scale",
          H, Servers, [Grid, Body]).

%% @doc Writes openloop.svg when the report has open-loop rows; returns
%% the files written.
-spec open_loop(map(), file:filename(), string(), fun((binary()) -> binary())) ->
          [file:filename()].
open_loop(#{open_loop := {ok, Rows}, servers := Servers}, Out, Suffix, Clean) ->
    Ok = [R || R = #{status := ok, achieved := A, p99 := P} <- Rows, is_number(A), is_number(P)],
    case Ok of
        [] ->
            [];
        _ ->
            F = filename:join(Out, "openloop" ++ Suffix ++ ".svg"),
            ok = file:write_file(F, Clean(unicode:characters_to_binary(open_loop_chart(Ok, Servers)))),
            [F]
    end;
open_loop(_, _, _, _) ->
    [].

-define(PANEL, 230).

open_loop_chart(Rows, Servers) ->
    Scs = lists:usort([Sc || #{scenario := Sc} <- Rows]),
    H = 70 + length(Scs) * (?PANEL + 30) + 10,
    {Body, _} = lists:mapfoldl(fun(Sc, Y0) ->
                                       {panel(Sc, [R || R = #{scenario := S} <- Rows, S =:= Sc],
                                              Servers, Y0),
                                        Y0 + ?PANEL + 30}
                               end, 70, Scs),
    frame("Open loop: corrected p99 against the rate achieved (lower is better)",
          "oha with --latency-correction; each point one run at a fixed rate (own-peak "
          "fractions and the common rates); log p99 axis",
          H, Servers, Body).

panel(Sc, Rows, Servers, Y0) ->
    X0 = ?LABEL, X1 = ?W - 50,
    Top = Y0 + 22, Bottom = Y0 + ?PANEL,
    Max = nice(lists:max([A || #{achieved := A} <- Rows])),
    X = fun(Rps) -> X0 + Rps / Max * (X1 - X0) end,
    Y = fun(Us) -> Bottom - (math:log10(max(100, min(Us, 1.0e7))) - 2) / 5 * (Bottom - Top) end,
    YGrid = [[line(X0, Y(D), X1, Y(D), "#dee2e6"),
              text(X0 - 6, Y(D) + 4, L, " text-anchor=\"end\" fill=\"#555\"")]
             || {D, L} <- [{100, "100 µs"}, {1000, "1 ms"}, {10000, "10 ms"},
                           {100000, "100 ms"}, {1000000, "1 s"}, {10000000, "10 s"}]],
    XGrid = [[line(X(V), Top, X(V), Bottom, "#f1f3f5"),
              text(X(V), Bottom + 14, [bench_report:fmt_rps(V), " req/s"],
                   " text-anchor=\"middle\" fill=\"#555\"")]
             || V <- [Max * K / 4 || K <- lists:seq(0, 4)]],
    Lines = [begin
                 Pts = lists:sort([{A, P} || #{server := S, achieved := A, p99 := P} <- Rows,
                                             S =:= Sv]),
                 XY = [{X(A), Y(P)} || {A, P} <- Pts],
                 [polyline(XY, color(Sv)), [circle(Px, Py, color(Sv)) || {Px, Py} <- XY]]
             end || Sv <- Servers],
    [text(10, Y0 + 14, atom_to_list(Sc), " font-weight=\"bold\""),
     text(10, Y0 + 30, "p99", " fill=\"#555\""), YGrid, XGrid, Lines].

%% The axis end: the largest rate rounded up to 1, 2 or 5 times a power of 10.
nice(V) when V =< 0 -> 1;
nice(V) ->
    P = math:pow(10, floor(math:log10(V))),
    hd([M * P || M <- [1, 2, 5, 10], M * P >= V]).

polyline([], _) -> [];
polyline(XY, Stroke) ->
    ["<polyline fill=\"none\" stroke=\"", Stroke, "\" stroke-width=\"2\" points=\"",
     lists:join(" ", [[n(Px), ",", n(Py)] || {Px, Py} <- XY]), "\"/>\n"].

circle(X, Y, Fill) ->
    ["<circle cx=\"", n(X), "\" cy=\"", n(Y), "\" r=\"3\" fill=\"", Fill, "\"/>\n"].

rect(X, Y, W, H, Fill, Extra) ->
    ["<rect x=\"", n(X), "\" y=\"", n(Y), "\" width=\"", n(max(W, 0)), "\" height=\"", n(H),
     "\" fill=\"", Fill, "\"", Extra, "/>\n"].

line(X1, Y1, X2, Y2, Stroke) ->
    ["<line x1=\"", n(X1), "\" y1=\"", n(Y1), "\" x2=\"", n(X2), "\" y2=\"", n(Y2),
     "\" stroke=\"", Stroke, "\"/>\n"].

whisker(X1, X2, Y) ->
    [line(X1, Y, X2, Y, "#212529"), line(X1, Y - 4, X1, Y + 4, "#212529"),
     line(X2, Y - 4, X2, Y + 4, "#212529")].

text(X, Y, T, Extra) ->
    ["<text x=\"", n(X), "\" y=\"", n(Y), "\"", Extra, ">", esc(T), "</text>\n"].

esc(T) ->
    [case C of
         $< -> "&lt;";
         $> -> "&gt;";
         $& -> "&amp;";
         C -> C
     end || C <- unicode:characters_to_list(T)].

n(V) when is_integer(V) -> integer_to_list(V);
n(V) -> float_to_list(V * 1.0, [{decimals, 1}, compact]).

i(V) -> integer_to_list(V).
