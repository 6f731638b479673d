# falco: the two front-door commands are `make run` and `make test`.
# Both install what is missing first (scripts/bootstrap).
REBAR ?= rebar3
EBIN := _build/default/lib/falco/ebin
export ERL_EPMD_ADDRESS := 127.0.0.1

.PHONY: all compile run test lint xref dialyzer eunit ct cover bench bench-smoke bench-h3 \
        bench-h3-short \
        fuzz soak bootstrap bootstrap-run clean docs docs-check

all: compile

bootstrap:
	@scripts/bootstrap

bootstrap-run:
	@scripts/bootstrap --run

compile: bootstrap-run
	@$(REBAR) compile

## make run: build and start the example server on http://127.0.0.1:$(PORT)
## (HTTP/1.1 and h2c) and https://127.0.0.1:$(TLS_PORT) (TLS, ALPN h2 and
## http/1.1); `make run PORT=9080 TLS_PORT=9443' moves them.
PORT ?= 8080
TLS_PORT ?= 8443
run: compile
	@mkdir -p _build/examples
	@erlc -o _build/examples -pa $(EBIN) examples/falco_example.erl examples/falco_example_files.erl \
		examples/falco_example_ws.erl
	@PORT=$(PORT) TLS_PORT=$(TLS_PORT) exec erl +Bd -noshell -pa $(EBIN) _build/examples \
		-eval 'falco_example:main()'

## make test: lint (warnings as errors, xref, Dialyzer), then every test,
## then line coverage of src/ (at least 90 %), then the bench smoke run.
test: bootstrap lint tests cover bench-smoke

## make lint: compile with warnings as errors, xref, Dialyzer, and the
## reference docs (docs-check). The lint profile (rebar.config) adds
## warnings_as_errors: falco's own erl_opts leave it out for the
## applications that depend on falco.
lint: bootstrap-run
	@$(REBAR) as lint do compile, xref, dialyzer
	@$(MAKE) --no-print-directory docs-check

## make docs: the reference of the public modules (edoc, with
## docs/overview.edoc as its first page) into doc/index.html.
## edoc links the types of falco's own modules in specs to falco's pages
## on erlang.org, which do not exist: DOC_LOCAL makes them local, or text
## for an internal module's type (scripts/doc_links).
DOC_LOCAL = scripts/doc_links --local doc

docs: bootstrap-run
	@rm -rf doc
	@$(REBAR) edoc
	@$(DOC_LOCAL)

## docs-check: edoc builds the reference with no warning, every
## exported function of a public module has a @doc (scripts/doc_check),
## the index lists the public modules only and no page links to a page
## that is not there (scripts/doc_links). doc/ is built afresh: edoc
## leaves the pages of modules since made private.
docs-check:
	@rm -rf doc
	@out=$$($(REBAR) edoc 2>&1); rc=$$?; echo "$$out" | grep -v '^===>' | grep -iE 'warning|error|skipping'; \
	 if [ $$rc -ne 0 ] || echo "$$out" | grep -v '^===>' | grep -qiE 'warning|error|skipping'; then \
	   echo "docs-check: edoc failed or warned (above)"; exit 1; fi
	@$(DOC_LOCAL)
	@scripts/doc_check $$(find src -name '*.erl')
	@scripts/doc_links doc src

xref:
	@$(REBAR) as lint xref

dialyzer:
	@$(REBAR) as lint dialyzer

## FALCO_REQUIRE_TOOLS=1: a missing h2spec, curl, nghttp... fails the run
## (bootstrap installed them) instead of skipping those cases.
## On a failure, scripts/ct_failures names the failed cases last.
tests:
	@mkdir -p _build && touch _build/.tests_started
	@FALCO_REQUIRE_TOOLS=1 $(REBAR) do eunit --cover, ct --cover \
	  || { scripts/ct_failures _build/.tests_started; exit 1; }

cover:
	@$(REBAR) cover --verbose --min_coverage 90

## make fuzz: the codecs' fuzz properties (test/falco_fuzz_prop.erl lists
## them: HTTP/1.1 requests, chunked, HTTP/2 frames, HPACK, multipart, qs,
## cookies, URI, JSON, Range, PROXY protocol, WebSocket frames) on FUZZ_N random and mutated inputs each
## (default 100000; `make test` runs a few hundred), FUZZ_CODECS=falco_qs,...
## for a subset. Prints inputs and seconds per codec; fails on the first
## counterexample, which it prints shrunk.
FUZZ_N ?= 100000
FUZZ_MODS := falco_fuzz_prop falco_http1_prop falco_http2_prop falco_hpack_prop \
             falco_codecs_prop falco_app_prop falco_proxy_protocol_prop falco_ws_prop \
             falco_quic_packet_prop falco_http3_prop falco_quic_frame_prop falco_tls13_prop \
             falco_quic_machine_prop \
             falco_test_tls13
fuzz: bootstrap compile
	@mkdir -p _build/fuzz
	@erlc -o _build/fuzz $(FUZZ_MODS:%=test/%.erl)
	@FUZZ_N=$(FUZZ_N) erl -noshell -pa $(EBIN) _build/fuzz -eval 'falco_fuzz_prop:main()'

## make soak: SOAK_MINUTES (default 30) of mixed load (keep-alive,
## pipelined, uploads, h2c streams, slowloris, abrupt closes) from bounded
## client processes against a listener on a peer node; samples the server's
## memory, processes, ports and fds after a warm-up and after the load, and
## fails on growth beyond the noise bounds (scripts/soak/falco_soak.erl).
SOAK_MINUTES ?= 30
soak: bootstrap compile
	@mkdir -p _build/soak
	@erlc -o _build/soak scripts/soak/falco_soak.erl test/falco_test_client.erl \
	      test/falco_test_h2_client.erl
	@SOAK_MINUTES=$(SOAK_MINUTES) erl -noshell -pa $(EBIN) _build/soak -eval 'falco_soak:main()'

bench:
	@bench/run $(BENCH_ARGS)

bench-smoke:
	@bench/run --smoke
	@bench/run --smoke --protocol h2

## falco's HTTP/3 against its HTTP/2 over TLS (bench/README.md, "HTTP/3"):
## bench/results-h3.md and .csv. bench-h3-short: one run of 2 s per cell,
## into _build/bench/h3-short (about a minute).
bench-h3:
	@bench/run --h3 $(BENCH_ARGS)

bench-h3-short:
	@bench/run --h3 --runs 1 --duration 2 --warmup 1 --retries 0 --out _build/bench/h3-short

clean:
	@$(REBAR) clean
	@rm -rf _build/examples _build/test _build/fuzz _build/soak doc
