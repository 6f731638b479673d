%% Unit tests for falco_text: byte-level helpers that accept any byte.
-module(falco_text_tests).
-include_lib("eunit/include/eunit.hrl").

lower_test() ->
    ?assertEqual(<<"gzip">>, falco_text:lower(<<"GZip">>)),
    ?assertEqual(<<"abc">>, falco_text:lower(<<"abc">>)),
    %% Not UTF-8: bytes above 127 are kept as they are (string:lowercase raises).
    ?assertEqual(<<16#C0, "x", 16#FF>>, falco_text:lower(<<16#C0, "X", 16#FF>>)).

trim_test() ->
    ?assertEqual(<<"a b">>, falco_text:trim(<<" \t a b\t ">>)),
    ?assertEqual(<<>>, falco_text:trim(<<"  ">>)),
    ?assertEqual(<<16#FF>>, falco_text:trim(<<" ", 16#FF, " ">>)),
    %% Only SP and HTAB are optional whitespace.
    ?assertEqual(<<"\r\nx\n">>, falco_text:trim(<<"\r\nx\n">>)).

list_test() ->
    ?assertEqual([<<"gzip">>, <<"br">>], falco_text:list(<<" Gzip , ,BR,">>)),
    ?assertEqual([<<"a">>, <<"b">>], falco_text:list([<<"a,">>, "b"])),
    ?assertEqual([], falco_text:list(<<" , ">>)).
