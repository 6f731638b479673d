%% EUnit tests for the URI helpers (falco_uri): RFC 3986 percent-encoding
%% (§2.1), dot-segment removal (§5.2.4, with the paths of the §5.4
%% examples), normalisation (§6.2.2), and the traversal-proof split.
-module(falco_uri_tests).
-include_lib("eunit/include/eunit.hrl").

%% RFC 3986 §2.1: strict decoding.
decode_test_() ->
    [?_assertEqual({ok, <<>>}, falco_uri:decode(<<>>)),
     ?_assertEqual({ok, <<"plain">>}, falco_uri:decode(<<"plain">>)),
     ?_assertEqual({ok, <<"a b/c">>}, falco_uri:decode(<<"a%20b%2Fc">>)),
     ?_assertEqual({ok, <<"a+b">>}, falco_uri:decode(<<"a+b">>)),
     ?_assertEqual({ok, <<"é"/utf8>>}, falco_uri:decode(<<"%c3%A9">>)),
     ?_assertEqual({ok, <<0, 255>>}, falco_uri:decode(<<"%00%ff">>)),
     ?_assertEqual({error, bad_percent}, falco_uri:decode(<<"%">>)),
     ?_assertEqual({error, bad_percent}, falco_uri:decode(<<"a%2">>)),
     ?_assertEqual({error, bad_percent}, falco_uri:decode(<<"%zz">>)),
     ?_assertEqual({error, bad_percent}, falco_uri:decode(<<"%2g">>)),
     ?_assertEqual({error, bad_percent}, falco_uri:decode(<<"ok%20then%">>))].

encode_test_() ->
    [?_assertEqual(<<"a%20b%2Fc%3F%23%25">>, falco_uri:encode_path_segment(<<"a b/c?#%">>)),
     %% pchar (§3.3) stays literal.
     ?_assertEqual(<<"AZaz09-._~!$&'()*+,;=:@">>,
                   falco_uri:encode_path_segment(<<"AZaz09-._~!$&'()*+,;=:@">>)),
     ?_assertEqual(<<"%C3%A9%00">>, falco_uri:encode_path_segment(<<"é"/utf8, 0>>)),
     %% In a query component the form separators are always encoded.
     ?_assertEqual(<<"a%20b%26c%3Dd%2Be%3Bf%2Cg%23h%25">>,
                   falco_uri:encode_query(<<"a b&c=d+e;f,g#h%">>)),
     ?_assertEqual(<<"AZaz09-._~!$'()*:@/?">>, falco_uri:encode_query(<<"AZaz09-._~!$'()*:@/?">>)),
     ?_assertEqual(<<"/">>, falco_uri:encode_path([])),
     ?_assertEqual(<<"/a%20b/c%2Fd">>, falco_uri:encode_path([<<"a b">>, <<"c/d">>])),
     %% A literal `%' is encoded, so an escape in a name cannot turn into a dot.
     ?_assertEqual(<<"/%252E%252E">>, falco_uri:encode_path([<<"%2E%2E">>]))].

%% Encoded output decodes back, and a query component survives the form parser.
encode_round_trip_test() ->
    Bin = <<"x&y=z+w %/?#;,é"/utf8, 0, 255>>,
    ?assertEqual({ok, Bin}, falco_uri:decode(falco_uri:encode_path_segment(Bin))),
    ?assertEqual({ok, Bin}, falco_uri:decode(falco_uri:encode_query(Bin))),
    Q = <<(falco_uri:encode_query(Bin))/binary, $=, (falco_uri:encode_query(Bin))/binary>>,
    ?assertEqual({ok, [{Bin, Bin}]}, falco_qs:parse(Q)).

%% RFC 3986 §5.2.4's two worked examples.
remove_dot_segments_rfc_test_() ->
    [?_assertEqual(<<"/a/g">>, falco_uri:remove_dot_segments(<<"/a/b/c/./../../g">>)),
     ?_assertEqual(<<"mid/6">>, falco_uri:remove_dot_segments(<<"mid/content=5/../6">>))].

%% The merged paths of the §5.4.1 (normal) and §5.4.2 (abnormal) examples,
%% base "http://a/b/c/d;p?q".
remove_dot_segments_examples_test_() ->
    [?_assertEqual(Out, falco_uri:remove_dot_segments(In)) || {In, Out} <- [
        {<<"/b/c/g">>, <<"/b/c/g">>},
        {<<"/b/c/./g">>, <<"/b/c/g">>},
        {<<"/b/c/g/">>, <<"/b/c/g/">>},
        {<<"/b/c/.">>, <<"/b/c/">>},
        {<<"/b/c/./">>, <<"/b/c/">>},
        {<<"/b/c/..">>, <<"/b/">>},
        {<<"/b/c/../">>, <<"/b/">>},
        {<<"/b/c/../g">>, <<"/b/g">>},
        {<<"/b/c/../..">>, <<"/">>},
        {<<"/b/c/../../">>, <<"/">>},
        {<<"/b/c/../../g">>, <<"/g">>},
        {<<"/b/c/../../../g">>, <<"/g">>},
        {<<"/b/c/../../../../g">>, <<"/g">>},
        {<<"/./g">>, <<"/g">>},
        {<<"/../g">>, <<"/g">>},
        {<<"/b/c/g.">>, <<"/b/c/g.">>},
        {<<"/b/c/.g">>, <<"/b/c/.g">>},
        {<<"/b/c/g..">>, <<"/b/c/g..">>},
        {<<"/b/c/..g">>, <<"/b/c/..g">>},
        {<<"/b/c/./../g">>, <<"/b/g">>},
        {<<"/b/c/./g/.">>, <<"/b/c/g/">>},
        {<<"/b/c/g/./h">>, <<"/b/c/g/h">>},
        {<<"/b/c/g/../h">>, <<"/b/c/h">>},
        {<<"/b/c/g;x=1/./y">>, <<"/b/c/g;x=1/y">>},
        {<<"/b/c/g;x=1/../y">>, <<"/b/c/y">>},
        {<<"/">>, <<"/">>},
        {<<>>, <<>>},
        {<<"..">>, <<>>},
        {<<"../../a">>, <<"a">>},
        {<<"/a//../b">>, <<"/a/b">>},
        %% Not dot segments until decoded (RFC 3986 §6.2.2.2 does that).
        {<<"/a/%2e%2e/b">>, <<"/a/%2e%2e/b">>}]].

%% RFC 3986 §6.2.2: hex case, unreserved decoding, then dot segments.
normalize_test_() ->
    [?_assertEqual({ok, <<"/~user/%3F">>}, falco_uri:normalize(<<"/a/%2e%2E/%7euser/%3f">>)),
     ?_assertEqual({ok, <<"/b">>}, falco_uri:normalize(<<"/a/%2e%2e/b">>)),
     ?_assertEqual({ok, <<"/a/%2F/b">>}, falco_uri:normalize(<<"/a/%2f/b">>)),
     ?_assertEqual({ok, <<"/">>}, falco_uri:normalize(<<"/%2e%2e/%2E%2E/.%2e">>)),
     ?_assertEqual({ok, <<"/ABC-._~">>}, falco_uri:normalize(<<"/%41%42%43%2D%2E%5F%7E">>)),
     ?_assertEqual({error, bad_percent}, falco_uri:normalize(<<"/a/%2">>))].

split_path_test_() ->
    [?_assertEqual({ok, []}, falco_uri:split_path(<<"/">>)),
     ?_assertEqual({ok, [<<"a">>, <<"b c">>]}, falco_uri:split_path(<<"/a/b%20c/">>)),
     ?_assertEqual({ok, [<<"a">>, <<"b">>]}, falco_uri:split_path(<<"//a/./b//">>)),
     ?_assertEqual({ok, [<<"a+b">>, <<"é"/utf8>>]}, falco_uri:split_path(<<"/a+b/%C3%A9">>)),
     ?_assertEqual({ok, [<<"...">>, <<".hidden">>, <<"a..b">>]},
                   falco_uri:split_path(<<"/.../.hidden/a..b">>)),
     ?_assertEqual({ok, [<<"a">>]}, falco_uri:split_path(<<"/%2e/a/%2E">>))].

%% Every way in: none may yield a segment that climbs or smuggles a separator.
traversal_test_() ->
    [?_assertEqual({error, Why}, falco_uri:split_path(Path)) || {Path, Why} <- [
        {<<"/../etc/passwd">>, dot_dot},
        {<<"/a/../../etc/passwd">>, dot_dot},
        {<<"/a/..">>, dot_dot},
        {<<"/a/%2e%2e/b">>, dot_dot},
        {<<"/a/%2E%2E/b">>, dot_dot},
        {<<"/a/.%2e/b">>, dot_dot},
        {<<"/a/%2e./b">>, dot_dot},
        {<<"/%2e%2e%2fetc%2fpasswd">>, encoded_slash},
        {<<"/..%2f..%2fetc">>, encoded_slash},
        {<<"/a%2Fb">>, encoded_slash},
        {<<"/..\\..\\windows">>, backslash},
        {<<"/..%5c..%5cwindows">>, backslash},
        {<<"/%5C">>, backslash},
        {<<"/a%00.txt">>, nul},
        {<<"/a/%00">>, nul},
        {<<"/%">>, bad_percent},
        {<<"/a%2">>, bad_percent},
        {<<"/%zz">>, bad_percent},
        {<<"a/b">>, not_absolute},
        {<<>>, not_absolute},
        {<<"../a">>, not_absolute}]].

%% Double encoding and overlong UTF-8 are names, not dots: decoded once,
%% they are harmless literal segments (a caller must not decode twice).
not_dots_test_() ->
    [?_assertEqual({ok, [<<"%2e%2e">>, <<"x">>]}, falco_uri:split_path(<<"/%252e%252e/x">>)),
     ?_assertEqual({ok, [<<16#C0, 16#AE, 16#C0, 16#AE>>]},
                   falco_uri:split_path(<<"/%c0%ae%c0%ae">>))].

encode_path_split_test() ->
    Segs = [<<"a b">>, <<"100%">>, <<"q?x#y">>, <<"é"/utf8>>, <<"..a">>],
    ?assertEqual({ok, Segs}, falco_uri:split_path(falco_uri:encode_path(Segs))).
