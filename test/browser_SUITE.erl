%% The example's WebSocket demo page (examples/priv/static/index.html) in
%% a real browser: headless Chromium, driven over its DevTools protocol
%% (test/falco_test_browser), loads the page from the example's routes,
%% types a message into the page's form and sends it; the page's log must
%% show the message coming back from /ws (falco_example_ws, the echo), and
%% a call trace on that handler proves the server received it (the page
%% does not echo locally). Over ws:// (the page from http://) and wss://
%% (the page from https://, ALPN h2 and http/1.1, a self-signed certificate
%% the browser is told to ignore). The listeners are the example's own
%% (falco_example:start/1 and start_tls/2) on free ports, so a `make run'
%% on 8080 and 8443 does not collide.
%%
%% From the index page (`/'), over http:// and over https:// (the pages
%% then over HTTP/2, which is checked): the index links every demo; the
%% demo page it links posts its upload form (two files put in the form's
%% file input by the page's script, one with a long name) and shows the
%% server's answer, the sizes the server read. Both pages in a 1200 px
%% wide viewport: no horizontal scrollbar (the root element's scrollWidth
%% is at most its clientWidth), on the demo page once the upload's answer
%% is shown, and none of its boxes (the <pre> logs and the state line)
%% wider inside than it is. The page's SSE panel goes through its states,
%% kept by the page in window.sseStates: "connecting", connected, each of
%% the five tick events from /events, then "stream ended" once the server
%% closed the stream after its bye event; the page has closed its
%% EventSource then (readyState CLOSED), so it does not reconnect.
%%
%% Which protocol Chromium's wss:// WebSocket used is logged and shown as
%% the case's comment, not asserted: an HTTP/1.1 upgrade on a connection
%% of its own, or RFC 8441 (extended CONNECT on the page's HTTP/2
%% connection) once the server advertises SETTINGS_ENABLE_CONNECT_PROTOCOL.
%%
%% Needs Chromium: Debian's `chromium' package (scripts/bootstrap installs
%% it for `make test'), or any Chromium or Chrome named by $CHROMIUM. Run
%% it alone with
%%
%%   rebar3 ct --suite=test/browser_SUITE
%%
%% Without a browser the suite is skipped, or fails under
%% FALCO_REQUIRE_TOOLS=1 (falco_test_tools). The last case closes the
%% browser and checks that none of its processes is left.
-module(browser_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([suite/0, all/0, init_per_suite/1, end_per_suite/1,
         init_per_testcase/2, end_per_testcase/2]).
-export([ws_round_trip/1, wss_round_trip/1, index_demos_http/1, index_demos_https/1,
         browser_exits_cleanly/1]).

-define(BROWSER, falco_test_browser).
%% How long the page may take to load, and to show the echo (ms).
-define(LOAD_TIMEOUT, 20000).
-define(ECHO_TIMEOUT, 15000).
%% The viewport the layout is checked in (CSS pixels).
-define(WIDTH, 1200).
-define(HEIGHT, 900).
%% A file name with no break opportunity, longer than the page is wide.
-define(LONG_NAME, <<"a-file-with-a-long-name-that-has-no-spaces-in-it-so-that-only-"
                     "the-page-styles-can-wrap-it-inside-its-box.txt">>).

suite() ->
    [{timetrap, {seconds, 120}}].

all() ->
    [ws_round_trip, wss_round_trip, index_demos_http, index_demos_https, browser_exits_cleanly].

init_per_suite(Config) ->
    Exe = ?BROWSER:find(),
    case falco_test_tools:check([{found, "chromium", Exe}]) of
        ok -> start(Exe, Config);
        NotThere -> NotThere
    end.

%% The browser first: when it cannot start, nothing else is left running
%% (end_per_suite does not run after a failed init_per_suite).
start(Exe, Config) ->
    Priv = ?config(priv_dir, Config),
    Browser = ?BROWSER:start(Exe, Priv),
    ct:log("~s (~s), DevTools on port ~b", [?BROWSER:version(Browser), Exe, maps:get(port, Browser)]),
    try
        ok = falco_test_listener:start_app(),
        {ok, _} = falco_example:start(#{port => 0}),
        {ok, _} = falco_example:start_tls(Priv, #{port => 0}),
        Port = falco_test_listener:port(falco_example),
        TlsPort = falco_test_listener:port(falco_example_tls),
        %% the trace that shows what the server's /ws handler received
        {module, _} = code:ensure_loaded(falco_example_ws),
        1 = erlang:trace_pattern({falco_example_ws, upgrade, 1}, true, []),
        1 = erlang:trace_pattern({falco_example_ws, handle_in, 2}, true, []),
        [{port, Port}, {tls_port, TlsPort}, {browser, Browser} | Config]
    catch
        Class:Reason:Stack ->
            _ = ?BROWSER:stop(Browser),
            ok = falco_test_listener:ensure_stopped([falco_example, falco_example_tls]),
            erlang:raise(Class, Reason, Stack)
    end.

end_per_suite(Config) ->
    %% the browser is normally closed by the last case already
    {How, Left} = ?BROWSER:stop(?config(browser, Config)),
    ct:log("browser ~p, processes left: ~p", [How, Left]),
    _ = erlang:trace_pattern({falco_example_ws, '_', '_'}, false, []),
    ok = falco_test_listener:stop([falco_example, falco_example_tls]),
    Config.

init_per_testcase(_Case, Config) ->
    Config.

end_per_testcase(_Case, Config) ->
    _ = erlang:trace(all, false, [call]),
    Config.

%% -- cases -------------------------------------------------------------------

%% The page from http://127.0.0.1:PORT/static/ opens ws://127.0.0.1:PORT/ws;
%% a message sent from its form comes back and is shown.
ws_round_trip(Config) ->
    round_trip(Config, "http", ?config(port, Config)).

%% The same from https://127.0.0.1:TLSPORT/static/ over wss://.
wss_round_trip(Config) ->
    round_trip(Config, "https", ?config(tls_port, Config)).

%% http://127.0.0.1:PORT/: the index, then the demo page it links: the
%% upload form's answer, the page's width, and the SSE panel's states
%% (HTTP/1.1: browsers do not speak h2c).
index_demos_http(Config) ->
    index_demos(Config, "http", ?config(port, Config)).

%% The same from https://127.0.0.1:TLSPORT/, every page and the upload
%% over HTTP/2.
index_demos_https(Config) ->
    index_demos(Config, "https", ?config(tls_port, Config)).

%% Browser.close ends the browser and every process it started (zygote,
%% renderers, GPU and network processes): none is left running with the
%% suite's profile directory, so none had to be killed.
browser_exits_cleanly(Config) ->
    Browser = ?config(browser, Config),
    ?assertNotEqual([], ?BROWSER:processes(Browser)),
    ?assertEqual({closed, []}, ?BROWSER:stop(Browser)),
    ?assertEqual([], ?BROWSER:processes(Browser)).

%% -- helpers -----------------------------------------------------------------

round_trip(Config, Scheme, Port) ->
    Browser = ?config(browser, Config),
    Origin = Scheme ++ "://127.0.0.1:" ++ integer_to_list(Port),
    WsUrl = list_to_binary([ws_scheme(Scheme), "://127.0.0.1:", integer_to_list(Port), "/ws"]),
    %% non-ASCII, so the text goes through UTF-8 both ways
    Message = <<"h", 16#e9/utf8, "llo falco ", 16#2713/utf8, " ", (unique())/binary>>,
    _ = erlang:trace(all, true, [call]),
    Sock = ?BROWSER:connect(Browser),
    {Target, Session} = ?BROWSER:open(Sock, list_to_binary(Origin ++ "/static/"), ?LOAD_TIMEOUT),
    Result = ?BROWSER:eval(Sock, Session, send_and_wait(Message)),
    ok = ?BROWSER:close_page(Sock, Target),
    #{<<"log">> := Log, <<"url">> := Url, <<"page">> := PageProtocol} =
        case Result of
            {ok, Value} -> Value;
            {error, Why} -> ct:fail("the ~s page failed: ~s", [Scheme, ascii(Why)])
        end,
    ct:log("the page's log:~n~ts~nits WebSocket: ~ts; the page came over ~ts", [Log, Url, PageProtocol]),
    %% the page's own log: opened, sent, and the echo received (in order)
    ?assertEqual(<<"open\nsent: ", Message/binary, "\nreceived: ", Message/binary, "\n">>, Log),
    ?assertEqual(WsUrl, Url),
    ?assertEqual(page_protocol(Scheme), PageProtocol),
    %% the server's side: the upgrade, and the message the echo handler got
    Version = receive
                  {trace, _, call, {falco_example_ws, upgrade, [Req]}} -> falco_req:version(Req)
              after 5000 -> ct:fail(no_upgrade_seen_by_the_server)
              end,
    receive
        {trace, _, call, {falco_example_ws, handle_in, [{text, Message}, _]}} -> ok
    after 5000 -> ct:fail({message_not_seen_by_the_server, Message})
    end,
    Used = case Version of
               {1, 1} -> "an HTTP/1.1 upgrade";
               {2, 0} -> "RFC 8441 over HTTP/2";
               Other -> io_lib:format("HTTP version ~p", [Other])
           end,
    ct:log("Chromium's ~s WebSocket: ~s", [ws_scheme(Scheme), Used]),
    {comment, lists:flatten(io_lib:format("~s over ~s (page over ~s)", [ws_scheme(Scheme), Used, PageProtocol]))}.

index_demos(Config, Scheme, Port) ->
    Browser = ?config(browser, Config),
    Origin = Scheme ++ "://127.0.0.1:" ++ integer_to_list(Port),
    Sock = ?BROWSER:connect(Browser),
    %% the index: every demo linked, and not wider than the window
    {Index, IndexSession} = ?BROWSER:open(Sock, list_to_binary(Origin ++ "/"), ?LOAD_TIMEOUT),
    ok = ?BROWSER:viewport(Sock, IndexSession, ?WIDTH, ?HEIGHT),
    {ok, #{<<"links">> := Links, <<"page">> := IndexProtocol, <<"layout">> := IndexLayout}} =
        ?BROWSER:eval(Sock, IndexSession,
                      <<"({links: Array.from(document.querySelectorAll('a')).map((a) => a.href),
                          page: performance.getEntriesByType('navigation')[0].nextHopProtocol,
                          layout: ", (layout())/binary, "})">>),
    ok = ?BROWSER:close_page(Sock, Index),
    ct:log("the index over ~ts links:~n~tp~nits layout: ~tp", [IndexProtocol, Links, IndexLayout]),
    ?assertEqual(page_protocol(Scheme), IndexProtocol),
    Demos = [list_to_binary(Origin ++ P) || P <- ["/static/", "/static/#upload", "/static/#events",
                                                  "/static/#websocket", "/json",
                                                  "/static/hello.txt"]],
    ?assertEqual([], Demos -- Links),
    no_horizontal_scroll(<<"the index">>, IndexLayout),
    %% the demo page, at the index's link to its upload form; with a query
    %% string of its own, or the browser takes it from its cache (the
    %% WebSocket cases loaded it, falco_static says max-age=60) and the
    %% load has no protocol to check
    Upload = list_to_binary([Origin, "/static/?", unique(), "#upload"]),
    {Target, Session} = ?BROWSER:open(Sock, Upload, ?LOAD_TIMEOUT),
    ok = ?BROWSER:viewport(Sock, Session, ?WIDTH, ?HEIGHT),
    Uploaded = ?BROWSER:eval(Sock, Session, upload()),
    Ended = ?BROWSER:eval(Sock, Session, stream_end()),
    ok = ?BROWSER:close_page(Sock, Target),
    #{<<"upload">> := Reply, <<"page">> := PageProtocol, <<"post">> := PostProtocol,
      <<"layout">> := Layout} = page_value(Scheme, Uploaded),
    ct:log("upload shown: ~ts~npage over ~ts, upload over ~ts~nlayout: ~tp",
           [Reply, PageProtocol, PostProtocol, Layout]),
    ?assertEqual(page_protocol(Scheme), PageProtocol),
    ?assertEqual(page_protocol(Scheme), PostProtocol),
    %% what the server read: the text field and the two files
    <<"200 ", Json/binary>> = Reply,
    ?assertEqual({ok, #{<<"parts">> => [#{<<"name">> => <<"title">>, <<"size">> => 5},
                                        #{<<"name">> => <<"file">>, <<"filename">> => <<"falco.txt">>,
                                          <<"size">> => 2000},
                                        #{<<"name">> => <<"file">>, <<"filename">> => ?LONG_NAME,
                                          <<"size">> => 100}]}},
                 falco_json:decode(Json)),
    %% the answer shown, the page no wider than the window
    no_horizontal_scroll(<<"the demo page">>, Layout),
    #{<<"states">> := States, <<"state">> := State, <<"events">> := Events,
      <<"readyState">> := ReadyState} = page_value(Scheme, Ended),
    ct:log("SSE states:~n~tsevents shown:~n~ts", [[[S, $\n] || S <- States], Events]),
    %% the SSE panel: connecting, connected, each event, ended
    Ticks = [<<"received 1 event">> | [<<"received ", (integer_to_binary(N))/binary, " events">>
                                       || N <- lists:seq(2, 5)]],
    EndState = <<"stream ended after 5 events: the server said bye and closed it">>,
    ?assertEqual([<<"connecting", 16#2026/utf8>>,
                  <<"connected, waiting for the first event", 16#2026/utf8>>]
                 ++ Ticks ++ [EndState], States),
    ?assertEqual(EndState, State),
    ?assertEqual(2, ReadyState),  % EventSource.CLOSED: the page closed it
    ?assertMatch([<<"tick 1: ", _/binary>>, <<"tick 2: ", _/binary>>, <<"tick 3: ", _/binary>>,
                  <<"tick 4: ", _/binary>>, <<"tick 5: ", _/binary>>, <<"bye: that is all">>],
                 binary:split(Events, <<"\n">>, [global, trim])),
    {comment, lists:flatten(io_lib:format("pages over ~s", [PageProtocol]))}.

page_value(_Scheme, {ok, Value}) -> Value;
page_value(Scheme, {error, Why}) -> ct:fail("the ~s demo page failed: ~s", [Scheme, ascii(Why)]).

%% No horizontal scrollbar at ?WIDTH px: the viewport is that wide, the
%% root element's content is no wider than its client area, and no box
%% measured by layout/0 is wider inside than it is.
no_horizontal_scroll(Page, #{<<"width">> := Width, <<"scrollWidth">> := ScrollWidth,
                             <<"clientWidth">> := ClientWidth, <<"overflowing">> := Overflowing}) ->
    ?assertEqual({Page, ?WIDTH}, {Page, Width}),
    ?assert(ScrollWidth =< ClientWidth,
            {Page, horizontal_scrollbar, #{scrollWidth => ScrollWidth, clientWidth => ClientWidth}}),
    ?assertEqual({Page, []}, {Page, Overflowing}).

%% JavaScript: the window's width, the root element's scrollWidth and
%% clientWidth, and which boxes (<pre> and state lines) have content
%% wider than themselves, as "id: scrollWidth > clientWidth".
layout() ->
    <<"({width: window.innerWidth,
         scrollWidth: document.documentElement.scrollWidth,
         clientWidth: document.documentElement.clientWidth,
         overflowing: Array.from(document.querySelectorAll('pre, .state'))
           .filter((e) => e.scrollWidth > e.clientWidth)
           .map((e) => (e.id || e.tagName) + ': ' + e.scrollWidth + ' > ' + e.clientWidth)})">>.

%% JavaScript run in the demo page: put two files in the upload form
%% (2000 bytes named falco.txt, 100 bytes with a long name), submit it,
%% wait (with a deadline) for the answer the page shows; what the page
%% shows, its layout then, the protocol of the page's load and of the
%% upload's POST.
upload() ->
    Timeout = integer_to_binary(?ECHO_TIMEOUT),
    LongName = falco_json:encode_to_binary(?LONG_NAME),
    <<"(async () => {
        const deadline = Date.now() + ", Timeout/binary, ";
        const result = document.getElementById('upload-result');
        const until = async (what, ok) => {
          while (!ok()) {
            if (Date.now() > deadline) {
              throw new Error('timed out waiting for ' + what + '; upload: ' + result.textContent);
            }
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
        };
        const files = new DataTransfer();
        files.items.add(new File(['x'.repeat(2000)], 'falco.txt', {type: 'text/plain'}));
        files.items.add(new File(['y'.repeat(100)], ", LongName/binary, ", {type: 'text/plain'}));
        document.querySelector('#upload-form input[type=file]').files = files.files;
        document.querySelector('#upload-form button').click();
        await until('the answer to the upload', () => /^[0-9]{3} /.test(result.textContent));
        const post = performance.getEntriesByType('resource').find((e) => e.name.endsWith('/upload'));
        return {upload: result.textContent, layout: ", (layout())/binary, ",
                page: performance.getEntriesByType('navigation')[0].nextHopProtocol,
                post: post ? post.nextHopProtocol : 'no resource entry for /upload'};
      })()">>.

%% JavaScript run in the demo page: wait (with a deadline) until its SSE
%% panel says the stream ended; the states it went through
%% (window.sseStates), the state line shown, the events shown and the
%% EventSource's readyState.
stream_end() ->
    Timeout = integer_to_binary(?ECHO_TIMEOUT),
    <<"(async () => {
        const deadline = Date.now() + ", Timeout/binary, ";
        const state = document.getElementById('events-state');
        const events = document.getElementById('events-log');
        const states = () => window.sseStates || [];
        while (!(states().length > 0 && states()[states().length - 1].startsWith('stream ended'))) {
          if (Date.now() > deadline) {
            throw new Error('timed out waiting for the stream to end; states: ' +
                            JSON.stringify(window.sseStates) + '; state line: ' +
                            (state ? state.textContent : 'none') + '; events: ' + events.textContent);
          }
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        return {states: window.sseStates, state: state.textContent, events: events.textContent,
                readyState: source.readyState};
      })()">>.

ws_scheme("http") -> "ws";
ws_scheme("https") -> "wss".

%% The protocol the page's own request used: ALPN picks h2 over TLS;
%% browsers do not speak h2c.
page_protocol("http") -> <<"http/1.1">>;
page_protocol("https") -> <<"h2">>.

%% UTF-8 text with everything outside ASCII escaped (\x{...}), for a
%% failure's reason: CT prints it on a console that may take only Latin-1.
ascii(Text) ->
    lists:flatten([if C < 128 -> C; true -> io_lib:format("\\x{~.16b}", [C]) end
                   || C <- unicode:characters_to_list(Text)]).

unique() ->
    integer_to_binary(erlang:unique_integer([positive])).

%% JavaScript run in the page: once its WebSocket is open, type `Message'
%% into the form and press Send, then wait (with a deadline) until the page
%% shows the echo; the page's log, its WebSocket's URL and the protocol of
%% the page's own load.
send_and_wait(Message) ->
    Json = falco_json:encode_to_binary(Message),
    Timeout = integer_to_binary(?ECHO_TIMEOUT),
    <<"(async () => {
        const deadline = Date.now() + ", Timeout/binary, ";
        const log = document.getElementById('ws-log');
        const until = async (what, ok) => {
          while (!ok()) {
            if (Date.now() > deadline) {
              throw new Error('timed out waiting for ' + what + '; page log: ' + log.textContent);
            }
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
        };
        const message = ", Json/binary, ";
        await until('the WebSocket to open', () => log.textContent.includes('open\\n'));
        document.getElementById('ws-text').value = message;
        document.querySelector('#ws-form button').click();
        await until('the echo', () => log.textContent.includes('received: ' + message + '\\n'));
        return {log: log.textContent, url: ws.url,
                page: performance.getEntriesByType('navigation')[0].nextHopProtocol};
      })()">>.
