%% Character classes of the HTTP and URI grammars as guard macros, for the
%% modules that match bytes in function heads and guards (the HTTP/1.1
%% parser among them, where a function call per byte would cost). The
%% functions built on them (tokens, lowercase, trimming, #list elements,
%% quoted-string, authority, origin-form) are in falco_grammar.erl.
%%
%% Private to falco. A module in another directory of src/ includes it with
%%   -include("../core/falco_grammar.hrl").
%% The compiler looks for a relative include next to the source file, which
%% every build tool that compiles falco has, as the top-level app or a
%% dependency. `include_lib("falco/...")' did not: Mix compiles a rebar3
%% dependency in deps/falco while code:lib_dir(falco) is its
%% _build/ENV/lib/falco, which has no src/. It is not in include/, which
%% would make these macros part of falco's public interface.

-ifndef(FALCO_GRAMMAR_HRL).
-define(FALCO_GRAMMAR_HRL, true).

%% DIGIT, ALPHA (RFC 5234 B.1)
-define(IS_DIGIT(C), (C >= $0 andalso C =< $9)).
-define(IS_UPPER(C), (C >= $A andalso C =< $Z)).
-define(IS_LOWER(C), (C >= $a andalso C =< $z)).
-define(IS_ALPHA(C), (?IS_LOWER(C) orelse ?IS_UPPER(C))).
%% HEXDIG, case-insensitive (RFC 5234 B.1, RFC 3986 §2.1)
-define(IS_HEX(C), (?IS_DIGIT(C) orelse (C >= $a andalso C =< $f)
                    orelse (C >= $A andalso C =< $F))).
%% The value of a hex digit C (valid only when ?IS_HEX(C)): the low nibble,
%% plus 9 for the letters, whose codes have bit 6 set and digits' do not.
-define(HEX_VALUE(C), ((C band 15) + 9 * (C bsr 6))).
%% SP / HTAB: the whitespace of OWS, RWS and BWS (RFC 9110 §5.6.3)
-define(IS_WS(C), (C =:= $\s orelse C =:= $\t)).
%% VCHAR (RFC 5234 B.1): visible US-ASCII
-define(IS_VCHAR(C), (C >= 16#21 andalso C =< 16#7E)).
%% A byte a field value may hold (RFC 9110 §5.5): field-vchar (VCHAR and
%% obs-text, 16#80-16#FF), SP and HTAB; no other control byte (CR, LF and
%% NUL among them) and no DEL. C is a byte, 0..255. The one definition:
%% falco_grammar:is_field_value/1 and the pattern the HTTP/1.1 parser
%% scans a field line with are built from it.
-define(IS_FIELD_BYTE(C), (C =:= $\t orelse (C >= 16#20 andalso C =/= 16#7F))).
%% tchar without the letters (RFC 9110 §5.6.2)
-define(IS_TCHAR_MARK(C), (C =:= $! orelse C =:= $# orelse C =:= $$ orelse C =:= $%
                           orelse C =:= $& orelse C =:= $' orelse C =:= $* orelse C =:= $+
                           orelse C =:= $- orelse C =:= $. orelse C =:= $^ orelse C =:= $_
                           orelse C =:= $` orelse C =:= $| orelse C =:= $~)).
%% tchar (RFC 9110 §5.6.2): token = 1*tchar
-define(IS_TCHAR(C), (?IS_ALPHA(C) orelse ?IS_DIGIT(C) orelse ?IS_TCHAR_MARK(C))).
%% tchar but uppercase letters: the field names HTTP/2 allows (RFC 9113 §8.2.1)
-define(IS_LOWER_TCHAR(C), (?IS_LOWER(C) orelse ?IS_DIGIT(C) orelse ?IS_TCHAR_MARK(C))).
%% unreserved (RFC 3986 §2.3)
-define(IS_UNRESERVED(C), (?IS_ALPHA(C) orelse ?IS_DIGIT(C) orelse C =:= $- orelse C =:= $.
                           orelse C =:= $_ orelse C =:= $~)).
%% sub-delims (RFC 3986 §2.2)
-define(IS_SUB_DELIM(C), (C =:= $! orelse C =:= $$ orelse C =:= $& orelse C =:= $'
                          orelse C =:= $( orelse C =:= $) orelse C =:= $* orelse C =:= $+
                          orelse C =:= $, orelse C =:= $; orelse C =:= $=)).
%% pchar without pct-encoded (RFC 3986 §3.3): unreserved / sub-delims / ":" / "@"
-define(IS_PCHAR(C), (?IS_UNRESERVED(C) orelse ?IS_SUB_DELIM(C) orelse C =:= $:
                      orelse C =:= $@)).

-endif.
