# falco: the two front-door commands are `make run` and `make test`.
# Both install what is missing first (scripts/bootstrap).
REBAR ?= rebar3
EBIN := _build/default/lib/falco/ebin
export ERL_EPMD_ADDRESS := 127.0.0.1

.PHONY: all compile run test lint xref dialyzer eunit ct cover bench bench-smoke \
        bootstrap bootstrap-run clean

all: compile

bootstrap:
	@scripts/bootstrap

bootstrap-run:
	@scripts/bootstrap --run

compile: bootstrap-run
	@$(REBAR) compile

## make run: build and start the example server on http://127.0.0.1:8080
## (HTTP/1.1 and h2c) and https://127.0.0.1:8443 (TLS, ALPN h2 and http/1.1)
run: compile
	@mkdir -p _build/examples
	@erlc -o _build/examples -pa $(EBIN) examples/falco_example.erl examples/falco_example_files.erl \
		examples/falco_example_ws.erl
	@exec erl +Bd -noshell -pa $(EBIN) _build/examples -eval 'falco_example:main()'

## make test: lint (warnings as errors, xref, Dialyzer), then every test,
## then line coverage of src/ (at least 90 %), then the bench smoke run.
test: bootstrap lint tests cover bench-smoke

## make lint: compile with warnings as errors, xref, Dialyzer. The lint
## profile (rebar.config) adds warnings_as_errors: falco's own erl_opts
## leave it out for the applications that depend on falco.
lint: bootstrap-run
	@$(REBAR) as lint do compile, xref, dialyzer

xref:
	@$(REBAR) as lint xref

dialyzer:
	@$(REBAR) as lint dialyzer

## FALCO_REQUIRE_TOOLS=1: a missing h2spec, curl, nghttp... fails the run
## (bootstrap installed them) instead of skipping those cases.
tests:
	@FALCO_REQUIRE_TOOLS=1 $(REBAR) do eunit --cover, ct --cover

cover:
	@$(REBAR) cover --verbose --min_coverage 90

bench:
	@bench/run $(BENCH_ARGS)

bench-smoke:
	@bench/run --smoke

clean:
	@$(REBAR) clean
	@rm -rf _build/examples _build/test
