%% @doc The one rule that bounds the time a request body may take, for
%% every protocol (HTTP/1.1 in {@link falco_http1_stream}, HTTP/2 in
%% {@link falco_http2_stream}). Pure: the caller passes the clock.
%%
%% `body_timeout' bounds each wait for body bytes, so alone it lets a slow
%% POST (1 byte every 5 s) hold a connection and a handler forever. The
%% listener option `min_body_rate' (`#{grace => Ms, bytes_per_second => N}',
%% or `none') adds a deadline that grows with what arrived: the body may
%% take `grace' ms, plus 1 s for every N bytes received, counted from the
%% first wait for body bytes (so time a handler spends before it reads
%% does not count). A wait past it ends as `body_timeout' does (408 and
%% close over HTTP/1.1, 408 on the stream over HTTP/2). The default,
%% 20 s plus 1 s per 500 bytes, is Apache httpd's mod_reqtimeout default
%% (`RequestReadTimeout body=20,MinRate=500'); nginx (`client_body_timeout',
%% 60 s) and cowboy (`read_body' period, 15 s) bound only each read, like
%% `body_timeout'.
%%
%% @private internal to falco
-module(falco_body_deadline).

-export([start/2, timeout/4]).

-type rule() :: #{grace := non_neg_integer(), bytes_per_second := pos_integer()} | none.
%% A started clock: the rule and when the body's first wait began (ms).
-opaque clock() :: {rule(), integer()}.
-export_type([rule/0, clock/0]).

%% @doc A clock for one body, started at `Now' (monotonic ms).
-spec start(rule(), integer()) -> clock().
start(Rule, Now) ->
    {Rule, Now}.

%% @doc How long the next wait for body bytes may last: `Wait' (the
%% listener's body_timeout), or less if the rule's deadline comes first
%% for a body that has `Received' bytes so far (0 once it has passed).
-spec timeout(clock(), non_neg_integer(), timeout(), integer()) -> timeout().
timeout({none, _}, _Received, Wait, _Now) ->
    Wait;
timeout({#{grace := Grace, bytes_per_second := Rate}, Start}, Received, Wait, Now) ->
    Left = max(0, Start + Grace + Received * 1000 div Rate - Now),
    min(Wait, Left).
