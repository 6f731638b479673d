%% @doc A handler serving the files under a directory.
%%
%% Give it as `{falco_static, #{root => Dir, ...}}'. The file is named by
%% the router's `*path' binding (`binding' option, default `path'), or by
%% the request path after `prefix', or by the whole request path. Replies
%% are sendfile replies (`{file, Path}' / `{file, Path, Offset, Length}'),
%% with a Content-Type from the extension ({@link mime_type/1}), a strong
%% ETag from inode, size and mtime, Last-Modified, conditional requests
%% ({@link falco_cond}: 304 / 412), ranges ({@link falco_range}: 206,
%% multipart/byteranges, 416, If-Range), and precompressed siblings: when
%% `Name.gz' exists it is sent with `Content-Encoding: gzip' to clients
%% that accept gzip (per {@link falco_compress:negotiate/2}), both variants
%% with `Vary: Accept-Encoding', each with its own ETag. A directory is
%% served through its index files (`index', default `index.html'); asked
%% for without its trailing slash it is redirected (301) so relative links
%% work, to a path that starts with one slash (`//sub' goes to `/sub/',
%% never to the host `sub'); a directory without index is 404 (nothing is
%% listed, and a 404 does not tell a directory from a missing file), and
%% so is a regular file asked for with a trailing slash (`a.txt/'). Only GET and HEAD are
%% served (405 with Allow otherwise).
%%
%% No path escapes the root. The request path is split and decoded one
%% segment at a time by {@link falco_uri:split_path/1}, which refuses `..'
%% (raw or percent-encoded), encoded slashes, backslashes and NUL (400);
%% segments from a binding are checked the same way. Hidden names (a
%% segment starting with `.') are 404 unless `dotfiles => allow'. The file
%% is then found by walking the segments from the root's real path,
%% resolving each symbolic link (at most 32) and refusing (404) any whose
%% target lies outside the root; the file is opened by that resolved path.
-module(falco_static).
-behaviour(falco_handler).

-include_lib("kernel/include/file.hrl").

-export([handle/2, init/1, prepare_state/1, mime_type/1, lookup/2, file_etag/1]).

-export_type([opts/0]).

-type opts() :: #{root := file:filename_all(),
                  binding => atom() | binary(),
                  prefix => binary(),
                  index => [binary()],
                  precompressed => boolean(),
                  dotfiles => deny | allow,
                  mime_types => #{binary() => binary()},
                  default_type => binary(),
                  cache_control => binary() | undefined,
                  max_ranges => pos_integer(),
                  real_root => binary()}.

-define(MAX_LINKS, 32).

%% @doc Resolves the root once (it must be a directory); handing the result
%% to the handler saves that work on every request.
-spec init(opts()) -> {ok, opts()} | {error, term()}.
init(Opts = #{root := Root}) ->
    case realpath(Root) of
        {ok, Real} ->
            case file:read_file_info(Real, [raw]) of
                {ok, #file_info{type = directory}} -> {ok, Opts#{real_root => Real}};
                {ok, _} -> {error, {not_a_directory, Root}};
                {error, Why} -> {error, {Why, Root}}
            end;
        {error, Why} ->
            {error, {Why, Root}}
    end.

%% @doc The handler's `prepare_state' ({@link falco_handler}): {@link init/1}
%% when the listener starts or its routes are set, so that a root that
%% does not exist, or is not a directory, fails the start instead of
%% answering 404 to every request. Raises `{root, Why, Absolute}', with
%% the root as the node resolves it (a relative root is relative to the
%% node's working directory: in a release, the release's root; use
%% `code:priv_dir/1').
-spec prepare_state(opts()) -> opts().
prepare_state(Opts) ->
    case init(Opts) of
        {ok, Prepared} -> Prepared;
        {error, {Why, Root}} -> erlang:error({root, Why, filename:absname(Root)})
    end.

%% @private
-spec handle(falco_req:req(), opts()) -> falco_handler:response().
handle(Req, Opts) ->
    case falco_req:method(Req) of
        M when M =:= <<"GET">>; M =:= <<"HEAD">> ->
            case lookup(Req, Opts) of
                {ok, Path, Info} -> serve(Req, Path, Info, Opts);
                {redirect, Location} ->
                    {301, [{<<"location">>, Location}, {<<"content-type">>, <<"text/plain">>}],
                     <<"Moved Permanently\n">>};
                bad_request -> falco_errors:response({bad_request, bad_path});
                not_found -> falco_errors:response(not_found)
            end;
        _ ->
            falco_errors:response({method_not_allowed, [<<"GET">>, <<"HEAD">>]})
    end.

%% @doc Maps the request onto a regular file under the root: its resolved
%% path and information, a redirect for a directory named without its
%% trailing slash, or why not.
-spec lookup(falco_req:req(), opts()) ->
          {ok, binary(), #file_info{}} | {redirect, binary()} | bad_request | not_found.
lookup(Req, Opts) ->
    case segments(Req, Opts) of
        {ok, Segs} ->
            case hidden(Segs, Opts) of
                true -> not_found;
                false -> find(Req, Segs, Opts)
            end;
        error ->
            bad_request;
        not_found ->
            not_found
    end.

segments(Req, Opts) ->
    Name = maps:get(binding, Opts, path),
    Bindings = maps:get(bindings, Req, #{}),
    case binding(Name, Bindings) of
        {ok, Value} -> binding_segments(Value);
        error ->
            Path = falco_req:path(Req),
            case maps:find(prefix, Opts) of
                {ok, Prefix} ->
                    P = byte_size(Prefix),
                    case Path of
                        <<Prefix:P/binary>> -> split(<<"/">>);
                        <<Prefix:P/binary, $/, _/binary>> -> split(binary:part(Path, P, byte_size(Path) - P));
                        _ -> not_found
                    end;
                error ->
                    split(Path)
            end
    end.

binding(Name, Bindings) when is_atom(Name) ->
    case maps:find(Name, Bindings) of
        {ok, V} -> {ok, V};
        error -> maps:find(atom_to_binary(Name), Bindings)
    end;
binding(Name, Bindings) ->
    maps:find(Name, Bindings).

split(Path) ->
    case falco_uri:split_path(Path) of
        {ok, Segs} -> {ok, Segs};
        {error, _} -> error
    end.

%% A binding holds decoded segments (a list, or a binary joined with "/"):
%% each is checked as split_path/1 checks a decoded segment.
binding_segments(V) when is_binary(V) ->
    binding_segments(binary:split(V, <<"/">>, [global]));
binding_segments(Segs) when is_list(Segs) ->
    check_segments(Segs, []);
binding_segments(_) ->
    error.

check_segments([S | T], Acc) when is_binary(S) ->
    case S of
        <<>> -> check_segments(T, Acc);
        <<".">> -> check_segments(T, Acc);
        <<"..">> -> error;
        _ ->
            case binary:match(S, [<<"/">>, <<"\\">>, <<0>>]) of
                nomatch -> check_segments(T, [S | Acc]);
                _ -> error
            end
    end;
check_segments([], Acc) ->
    {ok, lists:reverse(Acc)};
check_segments(_, _) ->
    error.

hidden(Segs, Opts) ->
    maps:get(dotfiles, Opts, deny) =:= deny
        andalso lists:any(fun(<<".", _/binary>>) -> true; (_) -> false end, Segs).

find(Req, Segs, Opts) ->
    case root(Opts) of
        {ok, Root} ->
            case inside(Root, filename:join([Root | Segs])) of
                {ok, Path, #file_info{type = regular} = Info} ->
                    %% `file/' names a directory (RFC 3986 §3.3): a
                    %% regular file is not one, whatever the OS says.
                    case binary:last(falco_req:path(Req)) of
                        $/ -> not_found;
                        _ -> {ok, Path, Info}
                    end;
                {ok, Dir, #file_info{type = directory}} ->
                    case binary:last(falco_req:path(Req)) of
                        $/ -> index(Root, Dir, maps:get(index, Opts, [<<"index.html">>]));
                        _ ->
                            case index(Root, Dir, maps:get(index, Opts, [<<"index.html">>])) of
                                {ok, _, _} -> {redirect, location(Req)};
                                NotFound -> NotFound
                            end
                    end;
                _ ->
                    not_found
            end;
        error ->
            not_found
    end.

%% The path with its trailing slash, leading slashes collapsed into one:
%% `Location: //sub/' would be a network-path reference (RFC 3986 §4.2),
%% sending the browser to the host `sub'.
location(Req) ->
    Path = <<$/, (strip_slashes(falco_req:path(Req)))/binary, $/>>,
    case falco_req:qs(Req) of
        <<>> -> Path;
        Qs -> <<Path/binary, "?", Qs/binary>>
    end.

strip_slashes(<<$/, Rest/binary>>) -> strip_slashes(Rest);
strip_slashes(Path) -> Path.

index(Root, Dir, [Name | T]) ->
    case inside(Root, filename:join(Dir, Name)) of
        {ok, Path, #file_info{type = regular} = Info} -> {ok, Path, Info};
        _ -> index(Root, Dir, T)
    end;
index(_Root, _Dir, []) ->
    not_found.

root(#{real_root := Real}) -> {ok, Real};
root(#{root := Root}) ->
    case realpath(Root) of
        {ok, Real} -> {ok, Real};
        {error, _} -> error
    end.

%% The resolved path of Path and its information, if it lies inside Root.
inside(Root, Path) ->
    case realpath(Path) of
        {ok, Real} ->
            case is_under(Root, Real) of
                true ->
                    case file:read_file_info(Real, [raw, {time, posix}]) of
                        {ok, Info} -> {ok, Real, Info};
                        {error, _} -> error
                    end;
                false ->
                    error
            end;
        {error, _} ->
            error
    end.

is_under(Root, Real) ->
    Real =:= Root orelse
        begin
            R = case binary:last(Root) of
                    $/ -> Root;
                    _ -> <<Root/binary, $/>>
                end,
            binary:longest_common_prefix([R, Real]) =:= byte_size(R)
        end.

%% -- resolving symbolic links ----------------------------------------------------

%% The absolute path of Path with every symbolic link resolved, as a binary.
realpath(Path) ->
    Abs = filename:absname(to_binary(Path)),
    [Top | Parts] = filename:split(Abs),
    walk(Top, Parts, 0).

walk(Dir, [], _Links) ->
    {ok, Dir};
walk(Dir, [<<".">> | T], Links) ->
    walk(Dir, T, Links);
walk(Dir, [<<"..">> | T], Links) ->
    walk(filename:dirname(Dir), T, Links);
walk(_Dir, _, Links) when Links > ?MAX_LINKS ->
    {error, eloop};
walk(Dir, [Name | T], Links) ->
    Path = filename:join(Dir, Name),
    case file:read_link_info(Path, [raw]) of
        {ok, #file_info{type = symlink}} ->
            case file:read_link_all(Path) of
                {ok, Target0} ->
                    Target = to_binary(Target0),
                    Abs = case filename:pathtype(Target) of
                              absolute -> Target;
                              _ -> filename:join(Dir, Target)
                          end,
                    [Top | Parts] = filename:split(Abs),
                    walk(Top, Parts ++ T, Links + 1);
                {error, _} = Error ->
                    Error
            end;
        {ok, _} ->
            walk(Path, T, Links);
        {error, _} = Error ->
            Error
    end.

to_binary(B) when is_binary(B) -> B;
to_binary(L) ->
    case unicode:characters_to_binary(L, file:native_name_encoding()) of
        B when is_binary(B) -> B;
        _ -> iolist_to_binary(L)
    end.

%% -- serving ----------------------------------------------------------------------

serve(Req, Path, Info, Opts) ->
    Type = mime_type(Path, Opts),
    {Variant, VInfo, Extra} = variant(Req, Path, Opts),
    case Variant of
        {not_acceptable, Available} ->
            falco_errors:response({coding_not_acceptable, [<<"identity">> | Available]});
        _ ->
            FInfo = case VInfo of undefined -> Info; _ -> VInfo end,
            V = #{etag => file_etag(FInfo), last_modified => FInfo#file_info.mtime},
            Headers = [{<<"content-type">>, Type} | Extra] ++ cache_control(Opts)
                ++ falco_cond:headers(V),
            case falco_cond:check(Req, V, Headers) of
                ok ->
                    falco_range:reply(Req, Headers, {file, Variant, FInfo#file_info.size},
                                      maps:with([max_ranges], Opts));
                Resp ->
                    Resp
            end
    end.

cache_control(#{cache_control := CC}) when is_binary(CC) -> [{<<"cache-control">>, CC}];
cache_control(_) -> [].

%% The form to send: the file, or its gzip sibling when that exists (inside
%% the root) and the client prefers it.
variant(Req, Path, Opts) ->
    Gz = case maps:get(precompressed, Opts, true) andalso filename:extension(Path) =/= <<".gz">> of
             true ->
                 {ok, Root} = root(Opts),
                 case inside(Root, <<Path/binary, ".gz">>) of
                     {ok, GzPath, #file_info{type = regular} = GzInfo} -> {GzPath, GzInfo};
                     _ -> none
                 end;
             false ->
                 none
         end,
    Available = case Gz of none -> []; _ -> [<<"gzip">>] end,
    Vary = case Gz of none -> []; _ -> [{<<"vary">>, <<"accept-encoding">>}] end,
    case falco_compress:negotiate(falco_req:header(<<"accept-encoding">>, Req), Available) of
        [<<"gzip">> | _] ->
            {GzPath1, GzInfo1} = Gz,
            {GzPath1, GzInfo1, [{<<"content-encoding">>, <<"gzip">>} | Vary]};
        [identity | _] -> {Path, undefined, Vary};
        [] -> {{not_acceptable, Available}, undefined, []}
    end.

%% @doc A strong ETag from a file's inode, size and modification time: it
%% changes whenever the file is replaced or rewritten (to the second).
-spec file_etag(#file_info{}) -> binary().
file_etag(#file_info{inode = Inode, size = Size, mtime = MTime}) ->
    falco_cond:etag(iolist_to_binary([hex(Inode), $-, hex(Size), $-, hex(mtime(MTime))])).

mtime(T) when is_integer(T) -> T;
mtime(DT) ->
    {ok, S} = falco_cond:to_seconds(erlang:localtime_to_universaltime(DT)),
    S.

hex(N) when is_integer(N), N >= 0 -> falco_grammar:lower(integer_to_binary(N, 16));
hex(_) -> <<"0">>.

%% -- media types ----------------------------------------------------------------------

mime_type(Path, Opts) ->
    Ext = falco_grammar:lower(ext(filename:extension(Path))),
    case maps:find(Ext, maps:get(mime_types, Opts, #{})) of
        {ok, T} -> T;
        error ->
            case mime_type(Ext) of
                undefined -> maps:get(default_type, Opts, <<"application/octet-stream">>);
                T -> T
            end
    end.

ext(<<".", E/binary>>) -> E;
ext(E) -> E.

%% @doc The media type for a file extension (without the dot, lowercase),
%% or `undefined'. Text types carry `charset=utf-8'.
-spec mime_type(binary()) -> binary() | undefined.
mime_type(<<"html">>) -> <<"text/html; charset=utf-8">>;
mime_type(<<"htm">>) -> <<"text/html; charset=utf-8">>;
mime_type(<<"css">>) -> <<"text/css; charset=utf-8">>;
mime_type(<<"js">>) -> <<"text/javascript; charset=utf-8">>;
mime_type(<<"mjs">>) -> <<"text/javascript; charset=utf-8">>;
mime_type(<<"txt">>) -> <<"text/plain; charset=utf-8">>;
mime_type(<<"text">>) -> <<"text/plain; charset=utf-8">>;
mime_type(<<"md">>) -> <<"text/markdown; charset=utf-8">>;
mime_type(<<"csv">>) -> <<"text/csv; charset=utf-8">>;
mime_type(<<"xml">>) -> <<"application/xml">>;
mime_type(<<"json">>) -> <<"application/json">>;
mime_type(<<"map">>) -> <<"application/json">>;
mime_type(<<"webmanifest">>) -> <<"application/manifest+json">>;
mime_type(<<"ndjson">>) -> <<"application/x-ndjson">>;
mime_type(<<"wasm">>) -> <<"application/wasm">>;
mime_type(<<"pdf">>) -> <<"application/pdf">>;
mime_type(<<"zip">>) -> <<"application/zip">>;
mime_type(<<"gz">>) -> <<"application/gzip">>;
mime_type(<<"tar">>) -> <<"application/x-tar">>;
mime_type(<<"br">>) -> <<"application/octet-stream">>;
mime_type(<<"bin">>) -> <<"application/octet-stream">>;
mime_type(<<"png">>) -> <<"image/png">>;
mime_type(<<"jpg">>) -> <<"image/jpeg">>;
mime_type(<<"jpeg">>) -> <<"image/jpeg">>;
mime_type(<<"gif">>) -> <<"image/gif">>;
mime_type(<<"webp">>) -> <<"image/webp">>;
mime_type(<<"avif">>) -> <<"image/avif">>;
mime_type(<<"svg">>) -> <<"image/svg+xml">>;
mime_type(<<"ico">>) -> <<"image/vnd.microsoft.icon">>;
mime_type(<<"bmp">>) -> <<"image/bmp">>;
mime_type(<<"tif">>) -> <<"image/tiff">>;
mime_type(<<"tiff">>) -> <<"image/tiff">>;
mime_type(<<"woff">>) -> <<"font/woff">>;
mime_type(<<"woff2">>) -> <<"font/woff2">>;
mime_type(<<"ttf">>) -> <<"font/ttf">>;
mime_type(<<"otf">>) -> <<"font/otf">>;
mime_type(<<"mp3">>) -> <<"audio/mpeg">>;
mime_type(<<"ogg">>) -> <<"audio/ogg">>;
mime_type(<<"wav">>) -> <<"audio/wav">>;
mime_type(<<"flac">>) -> <<"audio/flac">>;
mime_type(<<"mp4">>) -> <<"video/mp4">>;
mime_type(<<"webm">>) -> <<"video/webm">>;
mime_type(<<"ogv">>) -> <<"video/ogg">>;
mime_type(<<"mov">>) -> <<"video/quicktime">>;
mime_type(<<"vtt">>) -> <<"text/vtt; charset=utf-8">>;
mime_type(<<"ics">>) -> <<"text/calendar; charset=utf-8">>;
mime_type(<<"rss">>) -> <<"application/rss+xml">>;
mime_type(<<"atom">>) -> <<"application/atom+xml">>;
mime_type(<<"xhtml">>) -> <<"application/xhtml+xml">>;
mime_type(<<"epub">>) -> <<"application/epub+zip">>;
mime_type(_) -> undefined.
