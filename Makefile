# proofdiff: two entry points (README.md).
#   make demo   set up, build the reference prover image, run bench vs prod, print the verdict
#               (installs only what the demo needs: no PostgreSQL, no Chromium)
#   make test   the tests' Debian packages too, set up, check the docs, build, run the Rust unit
#               tests and every harness test (incl. Docker e2e) except the slow PoRep tier,
#               printing the ten slowest (--durations=10); `make test-slow` runs that tier
#   make demo ARGS=--full   the demo over every workload, the slow PoRep ones included
#   make docs   write the generated pages (docs/reference/, docs/measurements.md)
# Heavy builds are cached outside the clone under $(PROOFDIFF_CACHE) (default ~/.cache/proofdiff).

PY       ?= python3.11
VENV     := .venv
BIN      := $(VENV)/bin
CACHE    ?= $(or $(PROOFDIFF_CACHE),$(HOME)/.cache/proofdiff)
CRATE    := targets/refprover
ARGS     ?=
# pytest marker expression of `make test`: the slow tier (PoRep C2, minutes per proof) is out
MARK     ?= not slow
# two pytest-xdist workers: one runs the tiers that start daemons, in order; the other the unit
# tier beside it (tests/conftest.py pytest_xdist_make_scheduler). XDIST= runs everything in one.
XDIST    ?= -n 2

.PHONY: demo test test-slow typecheck setup sysdeps test-sysdeps image image-full rust-test reap \
        clean docs docs-check

demo: setup
	$(BIN)/proofdiff run $(ARGS)

test: test-sysdeps setup docs-check image rust-test
	$(BIN)/pytest tests -q -p no:cacheprovider --durations=10 -m "$(MARK)" $(XDIST) $(ARGS)

# mypy --strict over the library, the plugin and the suites (pyproject.toml [tool.mypy]), by
# their installed names: .typecheck/ links each name to its folder (harness/ is proofdiff).
# Its incremental cache lives in the build cache, so a fresh clone reuses it: mypy checks each
# cached module against its source's hash, so a stale entry is never believed.
typecheck: setup
	@mkdir -p .typecheck && ln -sfn ../harness .typecheck/proofdiff && \
	  ln -sfn ../fixtures .typecheck/proofdiff_pytest && ln -sfn ../suites .typecheck/proofdiff_suites
	MYPYPATH=.typecheck $(BIN)/mypy --cache-dir $(CACHE)/mypy -p proofdiff -p proofdiff_pytest \
	  -p proofdiff_suites

# The generated documentation: docs/reference/*.md from the code (the parsers, the run options'
# table, PROFILE_KEYS, the exit codes, the report schemas) and docs/measurements.md from the
# records under benchmarks/results/ (docs/tools/README.md).
docs: setup
	$(BIN)/python docs/tools/build_docs.py

# The docs against the code: generated pages up to date, every `proofdiff` command line in the
# Markdown pages accepted by proofdiff's parser, links inside the repository reaching their
# file and heading, no date or commit id in a comment or docstring (known offenders listed in
# docs/tools/docs-check.baseline are warnings). A few seconds; `make test` runs it first.
docs-check: setup
	$(BIN)/python docs/tools/docs_check.py

# The slow tier alone: PoRep differential runs and the PoRep bench-cli run (params ~1.7 GB,
# ~20 min to generate cold; about a minute or more per proof on 2 cores).
test-slow: setup image-full
	$(BIN)/pytest tests -q -p no:cacheprovider -m slow $(ARGS)

# The Python environment, pinned by requirements.lock; reinstalled when the lock changes.
# uv installs the lock (its wheel cache, ~/.cache/uv, is outside the clone): seconds from a
# warm cache, where pip would take most of a fresh clone's set-up.
# Bytecode is compiled here, once, as pip would at install (uv does not unless asked): where
# PYTHONDONTWRITEBYTECODE is set (CI machines often set it), no import ever writes a .pyc, so
# every Python process would compile matplotlib, scipy, grpc, dask and proofdiff from source
# again, in each `proofdiff` a test starts, at a multiple of the compiled import time. Our own
# sources are compiled on every `make setup` (only what changed: compileall compares mtimes).
UV_VERSION := 0.13.9
setup: $(VENV)/.installed
	@$(BIN)/python -m compileall -q -j 0 harness fixtures suites tests benchmarks docs/tools >/dev/null

$(VENV)/.installed: requirements.lock pyproject.toml | sysdeps
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q uv==$(UV_VERSION)
	$(BIN)/uv pip install -q --compile-bytecode --python $(BIN)/python -r requirements.lock
	$(BIN)/uv pip install -q --python $(BIN)/python --no-deps -e .
	touch $@

# Debian packages the build needs (protoc for tonic-build, debootstrap for the base image): the
# demo's, and so everyone's.
sysdeps:
	@command -v protoc >/dev/null && command -v debootstrap >/dev/null || \
	  { apt-get update -qq && apt-get install -y -qq protobuf-compiler debootstrap; }

# Debian packages only the tests need (postgresql: the history's PostgreSQL tests start a server
# of their own from its binaries; no cluster of the package's is used; chromium and its driver:
# the report's headless browser test). `make demo` installs none of them.
test-sysdeps:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || \
	  { apt-get update -qq && apt-get install -y -qq postgresql; }
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  { apt-get update -qq && apt-get install -y -qq chromium chromium-driver; }

image: setup
	$(BIN)/proofdiff build --workload wpost-2k

image-full: setup
	$(BIN)/proofdiff build --workload wpost-2k --workload porep-2k --workload porep-2k-2p

# refprover's own tests, on a copy of the crate at one path under the cache (cargo fingerprints
# a crate by its path: in each fresh clone it compiled the crate again, a minute here)
rust-test: setup
	$(BIN)/python -m proofdiff.artifacts.crate_tests $(CRATE) $(CACHE)

reap: setup
	$(BIN)/proofdiff reap

clean:
	rm -rf $(VENV) reports/*/
