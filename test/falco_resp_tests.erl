%% EUnit tests for falco_resp: redirects (RFC 9110 §15.4, Location §10.2.2,
%% no CR/LF injection), JSON (RFC 8259), text and HTML builders.
-module(falco_resp_tests).
-include_lib("eunit/include/eunit.hrl").

redirect_statuses_test_() ->
    [?_assertEqual({S, [{<<"location">>, <<"/next">>}], <<>>}, falco_resp:redirect(S, <<"/next">>))
     || S <- [301, 302, 303, 307, 308]].

redirect_forms_test_() ->
    [?_assertEqual({302, [{<<"location">>, <<"https://example.com/a?b=c#d">>}], <<>>},
                   falco_resp:redirect(302, [<<"https://">>, "example.com", <<"/a?b=c#d">>])),
     ?_assertEqual({303, [{<<"location">>, <<"../up">>}, {<<"cache-control">>, <<"no-store">>}], <<>>},
                   falco_resp:redirect(303, <<"../up">>, [{<<"cache-control">>, <<"no-store">>}])),
     %% bytes above 127 are let through (a header value may carry obs-text)
     ?_assertEqual({301, [{<<"location">>, <<"/café"/utf8>>}], <<>>},
                   falco_resp:redirect(301, <<"/café"/utf8>>))].

redirect_rejects_test_() ->
    [?_assertError({invalid_location, L}, falco_resp:redirect(302, L))
     || L <- [<<"/a\r\nSet-Cookie: x=1">>, <<"/a\nb">>, <<"/a\rb">>, <<"/a", 0, "b">>,
              <<"/a b">>, <<"/a\tb">>, <<"/a", 127>>, <<>>, [<<"/a">>, <<"\r\n">>], not_iodata, [1024]]]
        ++ [?_assertError({invalid_redirect_status, S}, falco_resp:redirect(S, <<"/">>))
            || S <- [200, 300, 304, 305, 306, 309, 404]].

json_test_() ->
    [?_assertEqual({200, [{<<"content-type">>, <<"application/json">>}], <<"{\"a\":[1,true,null]}">>},
                   json_bin(falco_resp:json(200, #{<<"a">> => [1, true, null]}))),
     ?_assertEqual({201, [{<<"content-type">>, <<"application/json">>}, {<<"location">>, <<"/x/1">>}],
                    <<"\"é\""/utf8>>},
                   json_bin(falco_resp:json(201, <<"é"/utf8>>, [{<<"location">>, <<"/x/1">>}]))),
     ?_assertError({invalid_json, {1, 2}}, falco_resp:json(200, #{<<"a">> => {1, 2}}))].

json_bin({S, H, Body}) -> {S, H, iolist_to_binary(Body)}.

text_html_test_() ->
    [?_assertEqual({200, [{<<"content-type">>, <<"text/plain; charset=utf-8">>}], <<"hi">>},
                   falco_resp:text(200, <<"hi">>)),
     ?_assertEqual({404, [{<<"content-type">>, <<"text/plain; charset=utf-8">>}, {<<"x">>, <<"y">>}],
                    ["not ", <<"found">>]},
                   falco_resp:text(404, ["not ", <<"found">>], [{<<"x">>, <<"y">>}])),
     ?_assertEqual({200, [{<<"content-type">>, <<"text/html; charset=utf-8">>}], <<"<p>hi</p>">>},
                   falco_resp:html(200, <<"<p>hi</p>">>)),
     ?_assertEqual({500, [{<<"content-type">>, <<"text/html; charset=utf-8">>}, {<<"x">>, <<"y">>}],
                    <<"<p>oops</p>">>},
                   falco_resp:html(500, <<"<p>oops</p>">>, [{<<"x">>, <<"y">>}]))].
