%% @doc The static table of QPACK (RFC 9204 §3.1, Appendix A): 99 field
%% lines, indexed from 0 (HPACK's starts at 1, and its entries differ).
%% {@link entry/1} for a decoder, {@link index/2} for an encoder: the
%% first entry with the field, else the first with its name.
%%
%% The table is a tuple literal and the encoder's lookup a function of
%% clauses on the name and value, both constants of the module: nothing
%% is built at run time.
%%
%% @private internal to falco
-module(falco_qpack_static).

-export([entry/1, index/2, size/0]).

-define(COUNT, 99).

%% RFC 9204 Appendix A, index 0 first.
-define(TABLE, {
    {<<":authority">>, <<>>}, {<<":path">>, <<"/">>}, {<<"age">>, <<"0">>},
    {<<"content-disposition">>, <<>>}, {<<"content-length">>, <<"0">>},
    {<<"cookie">>, <<>>}, {<<"date">>, <<>>}, {<<"etag">>, <<>>},
    {<<"if-modified-since">>, <<>>}, {<<"if-none-match">>, <<>>},
    {<<"last-modified">>, <<>>}, {<<"link">>, <<>>}, {<<"location">>, <<>>},
    {<<"referer">>, <<>>}, {<<"set-cookie">>, <<>>}, {<<":method">>, <<"CONNECT">>},
    {<<":method">>, <<"DELETE">>}, {<<":method">>, <<"GET">>}, {<<":method">>, <<"HEAD">>},
    {<<":method">>, <<"OPTIONS">>}, {<<":method">>, <<"POST">>},
    {<<":method">>, <<"PUT">>}, {<<":scheme">>, <<"http">>}, {<<":scheme">>, <<"https">>},
    {<<":status">>, <<"103">>}, {<<":status">>, <<"200">>}, {<<":status">>, <<"304">>},
    {<<":status">>, <<"404">>}, {<<":status">>, <<"503">>}, {<<"accept">>, <<"*/*">>},
    {<<"accept">>, <<"application/dns-message">>},
    {<<"accept-encoding">>, <<"gzip, deflate, br">>}, {<<"accept-ranges">>, <<"bytes">>},
    {<<"access-control-allow-headers">>, <<"cache-control">>},
    {<<"access-control-allow-headers">>, <<"content-type">>},
    {<<"access-control-allow-origin">>, <<"*">>}, {<<"cache-control">>, <<"max-age=0">>},
    {<<"cache-control">>, <<"max-age=2592000">>},
    {<<"cache-control">>, <<"max-age=604800">>}, {<<"cache-control">>, <<"no-cache">>},
    {<<"cache-control">>, <<"no-store">>},
    {<<"cache-control">>, <<"public, max-age=31536000">>},
    {<<"content-encoding">>, <<"br">>}, {<<"content-encoding">>, <<"gzip">>},
    {<<"content-type">>, <<"application/dns-message">>},
    {<<"content-type">>, <<"application/javascript">>},
    {<<"content-type">>, <<"application/json">>},
    {<<"content-type">>, <<"application/x-www-form-urlencoded">>},
    {<<"content-type">>, <<"image/gif">>}, {<<"content-type">>, <<"image/jpeg">>},
    {<<"content-type">>, <<"image/png">>}, {<<"content-type">>, <<"text/css">>},
    {<<"content-type">>, <<"text/html; charset=utf-8">>},
    {<<"content-type">>, <<"text/plain">>},
    {<<"content-type">>, <<"text/plain;charset=utf-8">>}, {<<"range">>, <<"bytes=0-">>},
    {<<"strict-transport-security">>, <<"max-age=31536000">>},
    {<<"strict-transport-security">>, <<"max-age=31536000; includesubdomains">>},
    {<<"strict-transport-security">>, <<"max-age=31536000; includesubdomains; preload">>},
    {<<"vary">>, <<"accept-encoding">>}, {<<"vary">>, <<"origin">>},
    {<<"x-content-type-options">>, <<"nosniff">>},
    {<<"x-xss-protection">>, <<"1; mode=block">>}, {<<":status">>, <<"100">>},
    {<<":status">>, <<"204">>}, {<<":status">>, <<"206">>}, {<<":status">>, <<"302">>},
    {<<":status">>, <<"400">>}, {<<":status">>, <<"403">>}, {<<":status">>, <<"421">>},
    {<<":status">>, <<"425">>}, {<<":status">>, <<"500">>},
    {<<"accept-language">>, <<>>}, {<<"access-control-allow-credentials">>, <<"FALSE">>},
    {<<"access-control-allow-credentials">>, <<"TRUE">>},
    {<<"access-control-allow-headers">>, <<"*">>},
    {<<"access-control-allow-methods">>, <<"get">>},
    {<<"access-control-allow-methods">>, <<"get, post, options">>},
    {<<"access-control-allow-methods">>, <<"options">>},
    {<<"access-control-expose-headers">>, <<"content-length">>},
    {<<"access-control-request-headers">>, <<"content-type">>},
    {<<"access-control-request-method">>, <<"get">>},
    {<<"access-control-request-method">>, <<"post">>}, {<<"alt-svc">>, <<"clear">>},
    {<<"authorization">>, <<>>},
    {<<"content-security-policy">>, <<"script-src 'none'; object-src 'none'; base-uri 'none'">>},
    {<<"early-data">>, <<"1">>}, {<<"expect-ct">>, <<>>}, {<<"forwarded">>, <<>>},
    {<<"if-range">>, <<>>}, {<<"origin">>, <<>>}, {<<"purpose">>, <<"prefetch">>},
    {<<"server">>, <<>>}, {<<"timing-allow-origin">>, <<"*">>},
    {<<"upgrade-insecure-requests">>, <<"1">>}, {<<"user-agent">>, <<>>},
    {<<"x-forwarded-for">>, <<>>}, {<<"x-frame-options">>, <<"deny">>},
    {<<"x-frame-options">>, <<"sameorigin">>}}).

%% @doc The number of entries, 99.
-spec size() -> 99.
size() -> ?COUNT.

%% @doc The entry at `Index', or `error' past the table (RFC 9204 §2.2.3:
%% a decoder treats that as QPACK_DECOMPRESSION_FAILED).
-spec entry(non_neg_integer()) -> {binary(), binary()} | error.
entry(Index) when is_integer(Index), Index >= 0, Index < ?COUNT -> element(Index + 1, ?TABLE);
entry(_) -> error.

%% @doc `{field, I}' when entry I is the field, `{name, I}' when entry I
%% has its name (the first one), `none' otherwise.
-spec index(binary(), binary()) -> {field | name, 0..98} | none.
index(Name, Value) -> static_index(Name, Value).

static_index(<<":authority">>, V) -> empty_value(V, 0);
static_index(<<":path">>, <<"/">>) -> {field, 1};
static_index(<<":path">>, _) -> {name, 1};
static_index(<<"age">>, <<"0">>) -> {field, 2};
static_index(<<"age">>, _) -> {name, 2};
static_index(<<"content-disposition">>, V) -> empty_value(V, 3);
static_index(<<"content-length">>, <<"0">>) -> {field, 4};
static_index(<<"content-length">>, _) -> {name, 4};
static_index(<<"cookie">>, V) -> empty_value(V, 5);
static_index(<<"date">>, V) -> empty_value(V, 6);
static_index(<<"etag">>, V) -> empty_value(V, 7);
static_index(<<"if-modified-since">>, V) -> empty_value(V, 8);
static_index(<<"if-none-match">>, V) -> empty_value(V, 9);
static_index(<<"last-modified">>, V) -> empty_value(V, 10);
static_index(<<"link">>, V) -> empty_value(V, 11);
static_index(<<"location">>, V) -> empty_value(V, 12);
static_index(<<"referer">>, V) -> empty_value(V, 13);
static_index(<<"set-cookie">>, V) -> empty_value(V, 14);
static_index(<<":method">>, <<"CONNECT">>) -> {field, 15};
static_index(<<":method">>, <<"DELETE">>) -> {field, 16};
static_index(<<":method">>, <<"GET">>) -> {field, 17};
static_index(<<":method">>, <<"HEAD">>) -> {field, 18};
static_index(<<":method">>, <<"OPTIONS">>) -> {field, 19};
static_index(<<":method">>, <<"POST">>) -> {field, 20};
static_index(<<":method">>, <<"PUT">>) -> {field, 21};
static_index(<<":method">>, _) -> {name, 15};
static_index(<<":scheme">>, <<"http">>) -> {field, 22};
static_index(<<":scheme">>, <<"https">>) -> {field, 23};
static_index(<<":scheme">>, _) -> {name, 22};
static_index(<<":status">>, <<"103">>) -> {field, 24};
static_index(<<":status">>, <<"200">>) -> {field, 25};
static_index(<<":status">>, <<"304">>) -> {field, 26};
static_index(<<":status">>, <<"404">>) -> {field, 27};
static_index(<<":status">>, <<"503">>) -> {field, 28};
static_index(<<":status">>, <<"100">>) -> {field, 63};
static_index(<<":status">>, <<"204">>) -> {field, 64};
static_index(<<":status">>, <<"206">>) -> {field, 65};
static_index(<<":status">>, <<"302">>) -> {field, 66};
static_index(<<":status">>, <<"400">>) -> {field, 67};
static_index(<<":status">>, <<"403">>) -> {field, 68};
static_index(<<":status">>, <<"421">>) -> {field, 69};
static_index(<<":status">>, <<"425">>) -> {field, 70};
static_index(<<":status">>, <<"500">>) -> {field, 71};
static_index(<<":status">>, _) -> {name, 24};
static_index(<<"accept">>, <<"*/*">>) -> {field, 29};
static_index(<<"accept">>, <<"application/dns-message">>) -> {field, 30};
static_index(<<"accept">>, _) -> {name, 29};
static_index(<<"accept-encoding">>, <<"gzip, deflate, br">>) -> {field, 31};
static_index(<<"accept-encoding">>, _) -> {name, 31};
static_index(<<"accept-ranges">>, <<"bytes">>) -> {field, 32};
static_index(<<"accept-ranges">>, _) -> {name, 32};
static_index(<<"access-control-allow-headers">>, <<"cache-control">>) -> {field, 33};
static_index(<<"access-control-allow-headers">>, <<"content-type">>) -> {field, 34};
static_index(<<"access-control-allow-headers">>, <<"*">>) -> {field, 75};
static_index(<<"access-control-allow-headers">>, _) -> {name, 33};
static_index(<<"access-control-allow-origin">>, <<"*">>) -> {field, 35};
static_index(<<"access-control-allow-origin">>, _) -> {name, 35};
static_index(<<"cache-control">>, <<"max-age=0">>) -> {field, 36};
static_index(<<"cache-control">>, <<"max-age=2592000">>) -> {field, 37};
static_index(<<"cache-control">>, <<"max-age=604800">>) -> {field, 38};
static_index(<<"cache-control">>, <<"no-cache">>) -> {field, 39};
static_index(<<"cache-control">>, <<"no-store">>) -> {field, 40};
static_index(<<"cache-control">>, <<"public, max-age=31536000">>) -> {field, 41};
static_index(<<"cache-control">>, _) -> {name, 36};
static_index(<<"content-encoding">>, <<"br">>) -> {field, 42};
static_index(<<"content-encoding">>, <<"gzip">>) -> {field, 43};
static_index(<<"content-encoding">>, _) -> {name, 42};
static_index(<<"content-type">>, <<"application/dns-message">>) -> {field, 44};
static_index(<<"content-type">>, <<"application/javascript">>) -> {field, 45};
static_index(<<"content-type">>, <<"application/json">>) -> {field, 46};
static_index(<<"content-type">>, <<"application/x-www-form-urlencoded">>) -> {field, 47};
static_index(<<"content-type">>, <<"image/gif">>) -> {field, 48};
static_index(<<"content-type">>, <<"image/jpeg">>) -> {field, 49};
static_index(<<"content-type">>, <<"image/png">>) -> {field, 50};
static_index(<<"content-type">>, <<"text/css">>) -> {field, 51};
static_index(<<"content-type">>, <<"text/html; charset=utf-8">>) -> {field, 52};
static_index(<<"content-type">>, <<"text/plain">>) -> {field, 53};
static_index(<<"content-type">>, <<"text/plain;charset=utf-8">>) -> {field, 54};
static_index(<<"content-type">>, _) -> {name, 44};
static_index(<<"range">>, <<"bytes=0-">>) -> {field, 55};
static_index(<<"range">>, _) -> {name, 55};
static_index(<<"strict-transport-security">>, <<"max-age=31536000">>) -> {field, 56};
static_index(<<"strict-transport-security">>, <<"max-age=31536000; includesubdomains">>) -> {field, 57};
static_index(<<"strict-transport-security">>, <<"max-age=31536000; includesubdomains; preload">>) -> {field, 58};
static_index(<<"strict-transport-security">>, _) -> {name, 56};
static_index(<<"vary">>, <<"accept-encoding">>) -> {field, 59};
static_index(<<"vary">>, <<"origin">>) -> {field, 60};
static_index(<<"vary">>, _) -> {name, 59};
static_index(<<"x-content-type-options">>, <<"nosniff">>) -> {field, 61};
static_index(<<"x-content-type-options">>, _) -> {name, 61};
static_index(<<"x-xss-protection">>, <<"1; mode=block">>) -> {field, 62};
static_index(<<"x-xss-protection">>, _) -> {name, 62};
static_index(<<"accept-language">>, V) -> empty_value(V, 72);
static_index(<<"access-control-allow-credentials">>, <<"FALSE">>) -> {field, 73};
static_index(<<"access-control-allow-credentials">>, <<"TRUE">>) -> {field, 74};
static_index(<<"access-control-allow-credentials">>, _) -> {name, 73};
static_index(<<"access-control-allow-methods">>, <<"get">>) -> {field, 76};
static_index(<<"access-control-allow-methods">>, <<"get, post, options">>) -> {field, 77};
static_index(<<"access-control-allow-methods">>, <<"options">>) -> {field, 78};
static_index(<<"access-control-allow-methods">>, _) -> {name, 76};
static_index(<<"access-control-expose-headers">>, <<"content-length">>) -> {field, 79};
static_index(<<"access-control-expose-headers">>, _) -> {name, 79};
static_index(<<"access-control-request-headers">>, <<"content-type">>) -> {field, 80};
static_index(<<"access-control-request-headers">>, _) -> {name, 80};
static_index(<<"access-control-request-method">>, <<"get">>) -> {field, 81};
static_index(<<"access-control-request-method">>, <<"post">>) -> {field, 82};
static_index(<<"access-control-request-method">>, _) -> {name, 81};
static_index(<<"alt-svc">>, <<"clear">>) -> {field, 83};
static_index(<<"alt-svc">>, _) -> {name, 83};
static_index(<<"authorization">>, V) -> empty_value(V, 84);
static_index(<<"content-security-policy">>, <<"script-src 'none'; object-src 'none'; base-uri 'none'">>) -> {field, 85};
static_index(<<"content-security-policy">>, _) -> {name, 85};
static_index(<<"early-data">>, <<"1">>) -> {field, 86};
static_index(<<"early-data">>, _) -> {name, 86};
static_index(<<"expect-ct">>, V) -> empty_value(V, 87);
static_index(<<"forwarded">>, V) -> empty_value(V, 88);
static_index(<<"if-range">>, V) -> empty_value(V, 89);
static_index(<<"origin">>, V) -> empty_value(V, 90);
static_index(<<"purpose">>, <<"prefetch">>) -> {field, 91};
static_index(<<"purpose">>, _) -> {name, 91};
static_index(<<"server">>, V) -> empty_value(V, 92);
static_index(<<"timing-allow-origin">>, <<"*">>) -> {field, 93};
static_index(<<"timing-allow-origin">>, _) -> {name, 93};
static_index(<<"upgrade-insecure-requests">>, <<"1">>) -> {field, 94};
static_index(<<"upgrade-insecure-requests">>, _) -> {name, 94};
static_index(<<"user-agent">>, V) -> empty_value(V, 95);
static_index(<<"x-forwarded-for">>, V) -> empty_value(V, 96);
static_index(<<"x-frame-options">>, <<"deny">>) -> {field, 97};
static_index(<<"x-frame-options">>, <<"sameorigin">>) -> {field, 98};
static_index(<<"x-frame-options">>, _) -> {name, 97};
static_index(_, _) -> none.

empty_value(<<>>, Index) -> {field, Index};
empty_value(_, Index) -> {name, Index}.
