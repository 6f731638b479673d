%% EUnit tests for the chunked transfer coding (falco_http1_chunked), by
%% RFC 9112 section: §7.1 chunk sizes and data, §7.1.1 extensions, §7.1.2
%% trailer fields (with the header limits), and the encoder.
-module(falco_http1_chunked_tests).
-include_lib("eunit/include/eunit.hrl").

limits() -> falco_http1:default_limits().

init() -> falco_http1_chunked:init(limits()).

%% Decodes Bin in one call: {done, Data, Trailers, Rest} | {more, Data} | {error, R}.
decode(Bin) -> decode(Bin, limits()).

decode(Bin, Limits) ->
    case falco_http1_chunked:decode(Bin, falco_http1_chunked:init(Limits)) of
        {done, Data, Trailers, Rest} -> {done, iolist_to_binary(Data), Trailers, Rest};
        {more, Data, _} -> {more, iolist_to_binary(Data)};
        {error, _} = Error -> Error
    end.

err(Bin) ->
    {error, Reason} = decode(Bin),
    Reason.

%% -- §7.1 chunks ---------------------------------------------------------------

%% RFC 9112 §7.1 example shape: sizes in hex, last-chunk, empty trailer
%% section; what follows the body is left for the next request.
simple_test() ->
    ?assertEqual({done, <<"Wikipedia in\r\n\r\nchunks.">>, [], <<"GET / HTTP/1.1\r\n">>},
                 decode(<<"4\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\n\r\n"
                          "GET / HTTP/1.1\r\n">>)),
    ?assertEqual({done, <<>>, [], <<>>}, decode(<<"0\r\n\r\n">>)).

%% chunk-size = 1*HEXDIG: either case, leading zeros, up to 15 significant
%% digits.
sizes_test() ->
    ?assertEqual({done, <<"0123456789">>, [], <<>>}, decode(<<"a\r\n0123456789\r\n0\r\n\r\n">>)),
    ?assertEqual({done, <<"0123456789">>, [], <<>>}, decode(<<"A\r\n0123456789\r\n0\r\n\r\n">>)),
    ?assertEqual({done, <<"abc">>, [], <<>>}, decode(<<"0003\r\nabc\r\n000\r\n\r\n">>)),
    %% 15 hex digits are accepted (and then wait for their data)...
    ?assertEqual({more, <<"x">>}, decode(<<"fffffffffffffff\r\nx">>)),
    ?assertEqual({more, <<"x">>}, decode(<<"000000000000001\r\nx">>)),
    %% ...16 are refused before any arithmetic can overflow, with the reason
    %% of a Content-Length too large to represent (falco_http1).
    ?assertEqual({bad_request, length_overflow}, err(<<"1000000000000000\r\n">>)),
    ?assertEqual({bad_request, length_overflow}, err(<<"0001000000000000000\r\n">>)).

%% RFC 9112 §7.1: leading zeros are part of 1*HEXDIG and carry no value, so
%% any number of them is accepted; only significant digits are bounded.
leading_zeros_test() ->
    ?assertEqual({more, <<"x">>}, decode(<<"0000000000000001\r\nx">>)),
    ?assertEqual({done, <<"hello">>, [], <<>>},
                 decode(<<"000000000000000000000000005\r\nhello\r\n0\r\n\r\n">>)),
    ?assertEqual({done, <<"hello">>, [], <<>>},
                 decode(<<"5\r\nhello\r\n", (binary:copy(<<"0">>, 100))/binary, ";x\r\n\r\n">>)),
    ?assertEqual({more, <<"x">>}, decode(<<"00000000fffffffffffffff\r\nx">>)),
    %% A zero after a significant digit is significant.
    ?assertEqual({bad_request, length_overflow}, err(<<"01000000000000000\r\n">>)).

invalid_size_test_() ->
    [?_assertEqual({bad_request, invalid_chunk_size}, err(<<S/binary, "\r\nabc\r\n0\r\n\r\n">>))
     || S <- [<<"">>, <<"g">>, <<"-1">>, <<"+3">>, <<" 3">>, <<";a">>]] ++
    [?_assertEqual({bad_request, invalid_chunk_extension}, err(<<S/binary, "\r\nabc\r\n0\r\n\r\n">>))
     || S <- [<<"3 ">>, <<"3x">>, <<"3\r">>, <<"3 3">>, <<"0x3">>]].

%% The CRLF after chunk-data is required.
data_crlf_test() ->
    ?assertEqual({bad_request, missing_chunk_crlf}, err(<<"3\r\nabcX\r\n0\r\n\r\n">>)),
    ?assertEqual({bad_request, missing_chunk_crlf}, err(<<"3\r\nabc\rX0\r\n\r\n">>)),
    ?assertEqual({bad_request, missing_chunk_crlf}, err(<<"3\r\nabc\n0\r\n\r\n">>)),
    %% An incomplete CRLF waits.
    ?assertEqual({more, <<"abc">>}, decode(<<"3\r\nabc\r">>)),
    ?assertEqual({more, <<"abc">>}, decode(<<"3\r\nabc">>)).

%% RFC 9112 §2.2: only CRLF ends a size line or a trailer line.
bare_lf_test_() ->
    [?_assertEqual({bad_request, bare_lf}, err(B))
     || B <- [<<"3\nabc\r\n0\r\n\r\n">>, <<"\n">>, <<"3;a=b\n">>, <<"3\r\nabc\r\n0\n\r\n">>,
              <<"3\r\nabc\r\n0\r\nX: 1\n\r\n">>, <<"3\r\nabc\r\n0\r\n\n">>,
              %% even when a CRLF follows later
              <<"3\nabc\r\n">>]].

%% A size line is bounded (4096 bytes, extensions included).
size_line_too_long_test() ->
    Ext = binary:copy(<<";a">>, 2100),
    ?assertEqual({bad_request, chunk_line_too_long}, err(<<"3", Ext/binary>>)),
    ?assertEqual({bad_request, chunk_line_too_long}, err(<<"3", Ext/binary, "\r\nabc\r\n">>)),
    %% A long but bounded extension list is fine.
    Short = binary:copy(<<";a">>, 1000),
    ?assertEqual({done, <<"abc">>, [], <<>>}, decode(<<"3", Short/binary, "\r\nabc\r\n0\r\n\r\n">>)).

%% -- §7.1.1 extensions -------------------------------------------------------------

extensions_accepted_test_() ->
    [?_assertEqual({done, <<"abc">>, [], <<>>}, decode(<<"3", E/binary, "\r\nabc\r\n0", E/binary, "\r\n\r\n">>))
     || E <- [<<";a">>, <<";a=b">>, <<" ; a = b">>, <<"\t;\ta\t=\tb">>, <<";a;b=c;d">>,
              <<";a=\"\"">>, <<";a=\"q u o t e d\"">>, <<";a=\"esc\\\"aped\\\\\"">>,
              <<";a=\"tab\there\"">>, <<";n!#$%&'*+-.^_`|~=v">>]].

extensions_rejected_test_() ->
    [?_assertEqual({bad_request, invalid_chunk_extension}, err(<<"3", E/binary, "\r\nabc\r\n0\r\n\r\n">>))
     || E <- [<<";">>, <<";=b">>, <<";a=">>, <<";a=\"open">>, <<";a=b c">>, <<";a(b)">>,
              <<";a=\"\x01\"">>, <<";a=\"\x7f\"">>, <<";a=\"bad\\\x00\"">>, <<";a=b;">>,
              <<";a=@">>, <<"z">>, <<";a=b ">>, <<";a ">>, <<";a=b;c\t">>,
              <<";a=\"q\" ">>]].

%% -- §7.1.2 trailers -------------------------------------------------------------

trailers_test() ->
    ?assertEqual({done, <<"abc">>, [{<<"x-sum">>, <<"1">>}, {<<"x-b">>, <<"two words">>}], <<"next">>},
                 decode(<<"3\r\nabc\r\n0\r\nX-Sum: 1\r\nx-b:  two words \t\r\n\r\nnext">>)),
    ?assertEqual({bad_request, obs_fold}, err(<<"0\r\nX: 1\r\n continued\r\n\r\n">>)),
    ?assertEqual({bad_request, obs_fold}, err(<<"0\r\n\tX: 1\r\n\r\n">>)),
    ?assertEqual({bad_request, header_whitespace_before_colon}, err(<<"0\r\nX : 1\r\n\r\n">>)),
    ?assertEqual({bad_request, invalid_header_value}, err(<<"0\r\nX: a\x00b\r\n\r\n">>)),
    ?assertEqual({bad_request, invalid_header_name}, err(<<"0\r\n: 1\r\n\r\n">>)),
    ?assertEqual({bad_request, invalid_header_name}, err(<<"0\r\nnocolon\r\n\r\n">>)).

%% Trailers obey the header limits: line, block, count.
trailer_limits_test() ->
    L = (limits())#{max_header_line => 20, max_header_block => 40, max_header_count => 2},
    ?assertEqual({done, <<>>, [{<<"a">>, <<"123456789012345">>}], <<>>},
                 decode(<<"0\r\na: 123456789012345\r\n\r\n">>, L)),
    ?assertEqual({error, {header_too_large, line}}, decode(<<"0\r\na: 1234567890123456789\r\n\r\n">>, L)),
    ?assertEqual({error, {header_too_large, line}}, decode(<<"0\r\na: 1234567890123456789">>, L)),
    %% Each line is 20 bytes with its CRLF: two fill the block, a third overflows it.
    ?assertEqual({error, {header_too_large, block}},
                 decode(<<"0\r\na: 123456789012345\r\nb: 123456789012345\r\nc: 1\r\n\r\n">>,
                        L#{max_header_count => 10})),
    ?assertMatch({done, _, [_, _], <<>>},
                 decode(<<"0\r\na: 123456789012345\r\nb: 123456789012345\r\n\r\n">>, L)),
    ?assertEqual({error, {header_too_large, count}}, decode(<<"0\r\na: 1\r\nb: 2\r\nc: 3\r\n\r\n">>, L)),
    ?assertMatch({done, _, [_, _], <<>>}, decode(<<"0\r\na: 1\r\nb: 2\r\n\r\n">>, L)).

%% -- incremental decoding -----------------------------------------------------------

%% Data is handed out as soon as it arrives, a chunk at a time or less, and
%% data_left/1 tells how much of the current chunk is still to come.
incremental_test() ->
    {more, D1, S1} = falco_http1_chunked:decode(<<"a\r\n0123">>, init()),
    ?assertEqual(<<"0123">>, iolist_to_binary(D1)),
    ?assertEqual(6, falco_http1_chunked:data_left(S1)),
    {more, D2, S2} = falco_http1_chunked:decode(<<"456789\r">>, S1),
    ?assertEqual(<<"456789">>, iolist_to_binary(D2)),
    ?assertEqual(0, falco_http1_chunked:data_left(S2)),
    {more, [], S3} = falco_http1_chunked:decode(<<"\n">>, S2),
    {more, [], S4} = falco_http1_chunked:decode(<<"3;ext">>, S3),
    ?assertEqual(0, falco_http1_chunked:data_left(S4)),
    {more, D5, S5} = falco_http1_chunked:decode(<<"=1\r\nxyz\r\n0\r\nT: v">>, S4),
    ?assertEqual(<<"xyz">>, iolist_to_binary(D5)),
    {done, [], [{<<"t">>, <<"v">>}], <<"rest">>} = falco_http1_chunked:decode(<<"\r\n\r\nrest">>, S5).

data_left_test() ->
    ?assertEqual(0, falco_http1_chunked:data_left(init())),
    {more, _, S} = falco_http1_chunked:decode(<<"FFFFFFFF\r\n">>, init()),
    ?assertEqual(16#FFFFFFFF, falco_http1_chunked:data_left(S)),
    {more, _, S1} = falco_http1_chunked:decode(<<"abc">>, S),
    ?assertEqual(16#FFFFFFFF - 3, falco_http1_chunked:data_left(S1)).

%% -- encoder -------------------------------------------------------------------------

encode_test() ->
    ?assertEqual(<<"5\r\nhello\r\n">>, iolist_to_binary(falco_http1_chunked:encode(<<"hello">>))),
    ?assertEqual(<<"1A\r\n", (binary:copy(<<"z">>, 26))/binary, "\r\n">>,
                 iolist_to_binary(falco_http1_chunked:encode(binary:copy(<<"z">>, 26)))),
    ?assertEqual(<<"3\r\nabc\r\n">>, iolist_to_binary(falco_http1_chunked:encode([$a, [<<"b">>], "c"]))),
    %% An empty piece would be the last chunk: it encodes to nothing.
    ?assertEqual([], falco_http1_chunked:encode(<<>>)),
    ?assertEqual([], falco_http1_chunked:encode([[], <<>>])).

last_test() ->
    ?assertEqual(<<"0\r\n\r\n">>, iolist_to_binary(falco_http1_chunked:last([]))),
    ?assertEqual(<<"0\r\nx-a: 1\r\nx-b: two\r\n\r\n">>,
                 iolist_to_binary(falco_http1_chunked:last([{<<"x-a">>, <<"1">>}, {"x-b", ["tw", $o]}]))).

round_trip_test() ->
    Pieces = [<<"a">>, binary:copy(<<"b">>, 300), <<>>, <<"\r\n0\r\n\r\n">>],
    Bin = iolist_to_binary([[falco_http1_chunked:encode(P) || P <- Pieces],
                            falco_http1_chunked:last([{<<"x-t">>, <<"v">>}])]),
    ?assertEqual({done, iolist_to_binary(Pieces), [{<<"x-t">>, <<"v">>}], <<>>}, decode(Bin)).
