%% Unit tests for falco_multipart: RFC 2046 §5.1 framing, RFC 7578
%% form-data, RFC 6266 / 8187 Content-Disposition, limits, and reading the
%% parts of a request body.
-module(falco_multipart_tests).
-include_lib("eunit/include/eunit.hrl").

-define(M, falco_multipart).
-define(R, falco_test_req).

%% The example of RFC 7578 §4.2-style form with a text field and a file.
form() ->
    <<"--AaB03x\r\n"
      "Content-Disposition: form-data; name=\"submit-name\"\r\n"
      "\r\n"
      "Larry\r\n"
      "--AaB03x\r\n"
      "Content-Disposition: form-data; name=\"files\"; filename=\"file1.txt\"\r\n"
      "Content-Type: text/plain\r\n"
      "\r\n"
      "... contents of file1.txt ...\r\n"
      "--AaB03x--\r\n">>.

%% Parses Bin fed in pieces of N bytes; returns {Parts, Epilogue} with each
%% part's data joined.
parse_in(Bin, Boundary, N, Limits) ->
    feed(pieces(Bin, N), ?M:init(Boundary, Limits), []).

pieces(<<>>, _) -> [];
pieces(Bin, N) when byte_size(Bin) =< N -> [Bin];
pieces(Bin, N) -> <<P:N/binary, R/binary>> = Bin, [P | pieces(R, N)].

feed([P | T], S, Acc) ->
    case ?M:parse(P, S) of
        {more, Es, S1} -> feed(T, S1, Acc ++ Es);
        {done, Es, Rest} -> {ok, collect(Acc ++ Es), iolist_to_binary([Rest | T])};
        {error, _} = E -> E
    end;
feed([], _S, _Acc) ->
    {error, truncated}.

collect(Events) -> collect(Events, []).
collect([{headers, H} | T], Acc) -> collect(T, [{H, <<>>} | Acc]);
collect([{data, D} | T], [{H, B} | Acc]) -> collect(T, [{H, <<B/binary, D/binary>>} | Acc]);
collect([part_end | T], Acc) -> collect(T, Acc);
collect([], Acc) -> lists:reverse(Acc).

rfc_form_test() ->
    {ok, Parts, Epilogue} = parse_in(form(), <<"AaB03x">>, 1000, #{}),
    ?assertEqual([{[{<<"content-disposition">>, <<"form-data; name=\"submit-name\"">>}], <<"Larry">>},
                  {[{<<"content-disposition">>,
                     <<"form-data; name=\"files\"; filename=\"file1.txt\"">>},
                    {<<"content-type">>, <<"text/plain">>}],
                   <<"... contents of file1.txt ...">>}], Parts),
    ?assertEqual(<<"\r\n">>, Epilogue).

every_piece_size_test() ->
    {ok, Whole, _} = parse_in(form(), <<"AaB03x">>, 1000, #{}),
    [?assertMatch({ok, Whole, _}, parse_in(form(), <<"AaB03x">>, N, #{}))
     || N <- lists:seq(1, byte_size(form()))].

events_in_order_test() ->
    {done, Events, _} = ?M:parse(form(), ?M:init(<<"AaB03x">>)),
    ?assertMatch([{headers, [_]}, {data, <<"Larry">>}, part_end,
                  {headers, [_, _]}, {data, _}, part_end], Events).

preamble_epilogue_and_padding_test() ->
    Body = <<"This is the preamble.\r\n--b  \t\r\n\r\nx\r\n--b--  \r\nepilogue">>,
    ?assertMatch({done, [{headers, []}, {data, <<"x">>}, part_end], <<"  \r\nepilogue">>},
                 ?M:parse(Body, ?M:init(<<"b">>))).

boundary_look_alikes_are_data_test() ->
    %% "--b" not at the start of a line, and a CRLF-- not followed by the
    %% boundary, are content.
    Body = <<"--bnd\r\n\r\nx--bnd y\r\n--bn\r\n-\r\r\n\r\n--bnd--">>,
    ?assertMatch({ok, [{[], <<"x--bnd y\r\n--bn\r\n-\r\r\n">>}], <<>>},
                 parse_in(Body, <<"bnd">>, 1000, #{})),
    ?assertMatch({ok, [{[], <<"x--bnd y\r\n--bn\r\n-\r\r\n">>}], <<>>},
                 parse_in(Body, <<"bnd">>, 1, #{})).

empty_part_and_no_parts_test() ->
    ?assertMatch({ok, [{[{<<"content-disposition">>, _}], <<>>}], _},
                 parse_in(<<"--b\r\nContent-Disposition: form-data; name=e\r\n\r\n\r\n--b--">>,
                          <<"b">>, 3, #{})),
    ?assertEqual({done, [], <<>>}, ?M:parse(<<"--b--">>, ?M:init(<<"b">>))).

delimiter_inside_content_test() ->
    %% The boundary must not occur in the content (§5.1.1).
    ?assertEqual({error, bad_delimiter},
                 ?M:parse(<<"--b\r\n\r\nx\r\n--bogus\r\n">>, ?M:init(<<"b">>))),
    ?assertEqual({error, bad_delimiter},
                 ?M:parse(<<"--b\r\n\r\nx\r\n--b-x">>, ?M:init(<<"b">>))),
    ?assertEqual({error, bad_delimiter},
                 ?M:parse(<<"--b \rx">>, ?M:init(<<"b">>))).

partial_delimiter_waits_test() ->
    S0 = ?M:init(<<"b">>),
    {more, [{headers, []}, {data, <<"ab">>}], S1} = ?M:parse(<<"--b\r\n\r\nab\r\n-">>, S0),
    %% "\r\n-" is held back: it may start the delimiter ...
    {more, [{data, <<"\r\n-x">>}], S2} = ?M:parse(<<"x">>, S1),
    %% ... and it did not.
    ?assertMatch({done, [part_end], <<>>}, ?M:parse(<<"\r\n--b--">>, S2)).

bad_headers_test() ->
    ?assertMatch({error, {bad_header, <<"no colon">>}},
                 ?M:parse(<<"--b\r\nno colon\r\n\r\n">>, ?M:init(<<"b">>))),
    ?assertMatch({error, {bad_header, _}},
                 ?M:parse(<<"--b\r\nA: 1\r\n folded\r\n\r\n">>, ?M:init(<<"b">>))),
    ?assertMatch({error, {bad_header, _}},
                 ?M:parse(<<"--b\r\nBad Name: 1\r\n\r\n">>, ?M:init(<<"b">>))),
    ?assertMatch({error, {bad_header, _}},
                 ?M:parse(<<"--b\r\nA: 1", 0, "\r\n\r\n">>, ?M:init(<<"b">>))),
    ?assertMatch({done, [{headers, [{<<"x-a">>, <<"v  w">>}]} | _], _},
                 ?M:parse(<<"--b\r\nX-A: \tv  w \r\n\r\n\r\n--b--">>, ?M:init(<<"b">>))).

limits_test() ->
    Two = <<"--b\r\n\r\n1\r\n--b\r\n\r\n2\r\n--b--">>,
    ?assertEqual({error, too_many_parts}, ?M:parse(Two, ?M:init(<<"b">>, #{max_parts => 1}))),
    ?assertMatch({done, _, _}, ?M:parse(Two, ?M:init(<<"b">>, #{max_parts => 2}))),
    Big = <<"--b\r\n\r\n", (binary:copy(<<"x">>, 100))/binary, "\r\n--b--">>,
    ?assertEqual({error, part_too_large}, ?M:parse(Big, ?M:init(<<"b">>, #{max_part_size => 99}))),
    ?assertMatch({done, _, _}, ?M:parse(Big, ?M:init(<<"b">>, #{max_part_size => 100}))),
    %% Streamed: the limit holds even when the data comes in small pieces.
    ?assertEqual({error, part_too_large}, parse_in(Big, <<"b">>, 5, #{max_part_size => 99})),
    Hdr = <<"--b\r\nX: ", (binary:copy(<<"h">>, 50))/binary, "\r\n\r\n\r\n--b--">>,
    ?assertEqual({error, header_too_large}, ?M:parse(Hdr, ?M:init(<<"b">>, #{max_header_size => 40}))),
    ?assertEqual({error, header_too_large}, parse_in(Hdr, <<"b">>, 3, #{max_header_size => 40})),
    ?assertMatch({done, _, _}, ?M:parse(Hdr, ?M:init(<<"b">>, #{max_header_size => 55}))),
    %% A header section that never ends is refused once past the limit.
    S = ?M:init(<<"b">>, #{max_header_size => 100}),
    {more, [], S1} = ?M:parse(<<"--b\r\nX: ">>, S),
    ?assertEqual({error, header_too_large}, ?M:parse(binary:copy(<<"y">>, 200), S1)).

boundary_test() ->
    ?assertEqual({ok, <<"AaB03x">>}, ?M:boundary(<<"multipart/form-data; boundary=AaB03x">>)),
    ?assertEqual({ok, <<"a b:c">>}, ?M:boundary(<<"Multipart/Form-Data;charset=x; BOUNDARY=\"a b:c\"">>)),
    ?assertEqual({ok, <<"x">>}, ?M:boundary(<<"multipart/mixed;boundary=x;">>)),
    ?assertEqual({error, not_multipart}, ?M:boundary(<<"text/plain; boundary=x">>)),
    ?assertEqual({error, not_multipart}, ?M:boundary(<<"application/json">>)),
    ?assertEqual({error, not_multipart}, ?M:boundary(undefined)),
    ?assertEqual({error, bad_boundary}, ?M:boundary(<<"multipart/form-data">>)),
    ?assertEqual({error, bad_boundary}, ?M:boundary(<<"multipart/form-data; charset=utf-8">>)),
    ?assertEqual({error, bad_boundary}, ?M:boundary(<<"multipart/form-data; boundary=">>)),
    ?assertEqual({error, bad_boundary}, ?M:boundary(<<"multipart/form-data; boundary=\"ends \"">>)),
    ?assertEqual({error, bad_boundary},
                 ?M:boundary(<<"multipart/form-data; boundary=", (binary:copy(<<"a">>, 71))/binary>>)),
    ?assertEqual({error, bad_boundary}, ?M:boundary(<<"multipart/form-data; boundary=\"a<b\"">>)),
    ?assertEqual({error, bad_boundary}, ?M:boundary(<<"multipart/form-data; boundary=\"open">>)),
    ?assertEqual({error, bad_boundary}, ?M:boundary(<<"multipart/form-data; boundary">>)).

content_disposition_test() ->
    ?assertEqual({ok, <<"form-data">>, [{<<"name">>, <<"a">>}]},
                 ?M:content_disposition(<<"Form-Data; Name=\"a\"">>)),
    ?assertEqual({ok, <<"form-data">>, [{<<"name">>, <<"a;b">>}, {<<"filename">>, <<"x \"y\".txt">>}]},
                 ?M:content_disposition(<<"form-data; name=\"a;b\" ; filename=\"x \\\"y\\\".txt\"">>)),
    %% Windows paths as browsers send them: backslashes kept.
    ?assertEqual({ok, <<"form-data">>, [{<<"filename">>, <<"C:\\dir\\f.txt">>}]},
                 ?M:content_disposition(<<"form-data; filename=\"C:\\dir\\f.txt\"">>)),
    %% RFC 8187 extended values, UTF-8 and ISO-8859-1.
    ?assertEqual({ok, <<"attachment">>, [{<<"filename*">>, <<"€ rates.txt"/utf8>>}]},
                 ?M:content_disposition(<<"attachment; filename*=UTF-8'en'%e2%82%ac%20rates.txt">>)),
    ?assertEqual({ok, <<"attachment">>, [{<<"filename*">>, <<"£.txt"/utf8>>}]},
                 ?M:content_disposition(<<"attachment; filename*=iso-8859-1''%A3.txt">>)),
    ?assertEqual({ok, <<"inline">>, []}, ?M:content_disposition(<<"inline">>)),
    [?assertEqual({error, bad_content_disposition}, ?M:content_disposition(Bad))
     || Bad <- [<<>>, <<"form data">>, <<"form-data; name">>, <<"form-data; name=">>,
                <<"form-data; name=\"open">>, <<"form-data; name=a b">>,
                <<"form-data; =x">>, <<"form-data; name=\"a\" junk">>,
                <<"form-data; filename*=UTF-8''%ff">>, <<"form-data; filename*=koi8-r''x">>,
                <<"form-data; filename*=nocharset">>, <<"form-data; filename*=UTF-8''%zz">>,
                <<"form-data; name=\"a", 1, "\"">>]].

repeated_param_keeps_first_test() ->
    ?assertEqual({ok, <<"form-data">>, [{<<"name">>, <<"a">>}]},
                 ?M:content_disposition(<<"form-data; name=a; NAME=b">>)).

form_data_test() ->
    CD = fun(V) -> [{<<"content-disposition">>, V}] end,
    ?assertEqual({ok, #{name => <<"f">>, filename => <<"€.txt"/utf8>>, content_type => <<"image/png">>}},
                 ?M:form_data(CD(<<"form-data; name=f; filename=\"e.txt\"; filename*=UTF-8''%E2%82%AC.txt">>)
                              ++ [{<<"content-type">>, <<"image/png">>}])),
    ?assertEqual({ok, #{name => <<"t">>, content_type => <<"text/plain">>}},
                 ?M:form_data(CD(<<"form-data; name=t">>))),
    ?assertEqual({error, no_name}, ?M:form_data(CD(<<"form-data; filename=x">>))),
    ?assertEqual({error, bad_content_disposition}, ?M:form_data(CD(<<"form-data; name">>))),
    ?assertEqual({error, bad_content_disposition}, ?M:form_data([])).

status_test() ->
    ?assertEqual(415, ?M:status(not_multipart)),
    ?assertEqual(413, ?M:status(too_many_parts)),
    ?assertEqual(413, ?M:status(part_too_large)),
    ?assertEqual(413, ?M:status(header_too_large)),
    ?assertEqual(400, ?M:status(bad_delimiter)),
    ?assertEqual(400, ?M:status(truncated)).

%% -- reading from a request --------------------------------------------------------

req(Body) ->
    req(Body, <<"multipart/form-data; boundary=AaB03x">>).

req(Body, Type) ->
    ?R:new(<<"POST">>, <<"/upload">>, [{<<"content-type">>, Type}], Body).

read_part_test() ->
    Req0 = req(form()),
    {ok, H1, Req1} = ?M:read_part(Req0),
    ?assertEqual({ok, #{name => <<"submit-name">>, content_type => <<"text/plain">>}}, ?M:form_data(H1)),
    {ok, <<"Larry">>, Req2} = ?M:read_part_body(Req1),
    {ok, H2, Req3} = ?M:read_part(Req2),
    ?assertMatch({ok, #{name := <<"files">>, filename := <<"file1.txt">>}}, ?M:form_data(H2)),
    {more, <<"... contents">>, Req4} = ?M:read_part_body(Req3, #{length => 10}),
    {ok, <<" of file1.txt ...">>, Req5} = ?M:read_part_body(Req4, #{length => 1000}),
    %% Outside a part there is nothing more to read.
    {ok, <<>>, Req6} = ?M:read_part_body(Req5),
    ?assertMatch({done, _}, ?M:read_part(Req6)).

read_part_skips_unread_body_test() ->
    {ok, _, Req1} = ?M:read_part(req(form())),
    {ok, H2, Req2} = ?M:read_part(Req1),
    ?assertMatch({ok, #{name := <<"files">>}}, ?M:form_data(H2)),
    {ok, <<"... contents of file1.txt ...">>, Req3} = ?M:read_part_body(Req2),
    {done, Req4} = ?M:read_part(Req3),
    ?assertMatch({done, _}, ?M:read_part(Req4)).

read_all_test() ->
    ?assertMatch({ok, [{[_], <<"Larry">>}, {[_, _], <<"... contents of file1.txt ...">>}], _},
                 ?M:read_all(req(form()))),
    ?assertMatch({ok, [{_, <<"Larry">>}, _], _}, ?M:read_all(req(form()), #{read_length => 1})).

fold_test() ->
    Count = fun({headers, _}, {P, B}) -> {P + 1, B};
               ({data, D}, {P, B}) -> {P, B + byte_size(D)};
               (part_end, Acc) -> Acc
            end,
    ?assertMatch({ok, {2, 34}, _}, ?M:fold(req(form()), Count, {0, 0}, #{read_length => 3})).

request_errors_test() ->
    ?assertEqual({error, not_multipart}, ?M:read_part(req(form(), <<"text/plain">>))),
    ?assertEqual({error, bad_boundary}, ?M:read_part(req(form(), <<"multipart/form-data">>))),
    ?assertEqual({error, bad_boundary}, ?M:read_part_body(req(form(), <<"multipart/form-data">>))),
    ?assertEqual({error, not_multipart}, ?M:fold(req(form(), <<"a/b">>), fun(_, A) -> A end, 0, #{})),
    ?assertEqual({error, not_multipart}, ?M:read_all(req(form(), <<"a/b">>))),
    %% The body ends before the close delimiter.
    Truncated = binary:part(form(), 0, 75),
    {ok, _, Req1} = ?M:read_part(req(Truncated)),
    ?assertEqual({error, truncated}, ?M:read_part_body(Req1)),
    ?assertEqual({error, truncated}, ?M:read_part(req(<<"--AaB03x\r\n">>))),
    ?assertEqual({error, truncated}, ?M:read_all(req(Truncated))),
    ?assertEqual({error, too_many_parts}, ?M:read_all(req(form()), #{max_parts => 1})),
    {ok, _, Req2} = ?M:read_part(req(form()), #{max_part_size => 6}),
    {ok, _, Req3} = ?M:read_part(Req2),
    ?assertEqual({error, part_too_large}, ?M:read_part_body(Req3)).
