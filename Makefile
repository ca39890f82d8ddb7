# The README's two commands: `make lessons` runs the course, `make test` runs every test and check.
# Both create .venv (from pyproject.toml) when it is missing or older than pyproject.toml.
# For the docs site: `make docs` serves it for authors, `make docs-check` checks it in a browser.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

# mermaid.min.js from mermaid's npm package, into the site (the theme would fetch it from a CDN)
MERMAID_VERSION := 11.17.2
MERMAID := docs/generated/vendor/mermaid.min.js
CHROMIUM := /usr/bin/chromium
# the course (lessons/) runs from the repository, not installed: the docs hook and the browser
# check import it from here
export PYTHONPATH := $(CURDIR)
# mkdocs-material prints a banner about its successor on every build; once is enough
export NO_MKDOCS_2_WARNING := 1

.PHONY: lessons test checks lint dupcheck typecheck pytest postgres-server docs-build docs docs-check phoenix-check clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,docs,bench,agents,processes,ray,otel,timeline,postgres]'
	touch $@

lessons: $(BIN)/.installed
	$(BIN)/python -m lessons all

# pytest beside the checks that run on one core (lint, dupcheck, typecheck, docs-build, one after
# the other): on 2 cores they fill the gaps pytest's workers leave (a test waiting on a child
# process, the last tests' tail) instead of each leaving a core idle; each part's output is
# printed whole when it ends, and make fails if any part failed
test: $(BIN)/.installed
	@$(MAKE) --no-print-directory --jobs=2 --output-sync=target pytest checks

# The test run caches bytecode, as Python does unless told not to: its hundreds of Python
# processes (pytest's workers, each step run as a module, each check's child) import the same
# modules, and where the environment sets PYTHONDONTWRITEBYTECODE (some containers do) each
# compiled them all again, pytest's rewritten test modules included. On 2 cores, a fresh
# clone's make test took 186-205 s with it set and 174 s without.
test pytest checks: export PYTHONDONTWRITEBYTECODE =

checks: $(BIN)/.installed
	@$(MAKE) --no-print-directory lint
	@$(MAKE) --no-print-directory dupcheck
	@$(MAKE) --no-print-directory typecheck
	@$(MAKE) --no-print-directory docs-build

lint: $(BIN)/.installed
	$(BIN)/ruff check src lessons tests tools benchmarks docs/examples
	$(BIN)/ruff format --check src lessons tests tools benchmarks docs/examples

# no copied block of 6+ similar lines in the library (settings: [tool.pylint.*] in pyproject.toml)
dupcheck: $(BIN)/.installed
	$(BIN)/pylint --disable=all --enable=duplicate-code src/trio_supervisor

typecheck: $(BIN)/.installed
	$(BIN)/mypy

# on every core (pytest-xdist): a worker takes the next test as it is free, except the tests of
# one xdist_group (one Ray cluster at a time), which one worker runs in turn. One worker more
# than the cores, so that a worker waiting on real time (a process killed and started again, a
# cluster starting, a child's exit) leaves no core idle: on 2 cores `make test` took 196 s with
# 2 workers, 177 s with 3 and 207 s with 4 (each worker imports and collects every test); it
# ends with the 20 slowest tests, where a test that grew slow shows
WORKERS := $(shell echo $$(( $$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1) + 1 )))
pytest: $(BIN)/.installed postgres-server
	$(BIN)/pytest -n $(WORKERS) --dist loadgroup --durations=20

# PostgreSQL's server binaries (initdb, postgres), which the Postgres journal's tests and
# benchmarks start on loopback in a temporary folder (trio_supervisor.testing.postgres):
# Debian's package when they are missing, told not to make (and start) a cluster of its own
postgres-server:
	@ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || { \
		mkdir -p /etc/postgresql-common && \
		echo 'create_main_cluster = false' >> /etc/postgresql-common/createcluster.conf && \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y \
			-o Dpkg::Options::=--force-confold postgresql; }

$(MERMAID): Makefile
	@command -v npm >/dev/null || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y npm; }
	rm -rf build/vendor && mkdir -p build/vendor $(dir $@)
	cd build/vendor && npm pack --silent mermaid@$(MERMAID_VERSION) >/dev/null
	tar -xzf build/vendor/mermaid-$(MERMAID_VERSION).tgz -C build/vendor package/dist/mermaid.min.js
	cp build/vendor/package/dist/mermaid.min.js $@

# the site, strictly: a warning (a broken link, a missing snippet, a step without a page) fails
docs-build: $(BIN)/.installed $(MERMAID)
	$(BIN)/mkdocs build --strict --clean

docs: $(BIN)/.installed $(MERMAID)
	$(BIN)/mkdocs serve --dev-addr 127.0.0.1:8000

$(CHROMIUM):
	apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium

# every page loaded in headless Chromium; screenshots in build/screenshots/
docs-check: docs-build $(CHROMIUM)
	$(BIN)/python tools/docs_check.py --site site --screenshots build/screenshots --chromium $(CHROMIUM)

# Arize Phoenix, a real OpenTelemetry receiver, in a virtual environment of its own (its pins are
# its own); the check starts it on loopback, exports a run to it, compares the spans it holds,
# and saves a screenshot of its page of the trace
PHOENIX_VENV := build/phoenix-venv
PHOENIX_VERSION := 20.26.1

$(PHOENIX_VENV)/.installed: Makefile
	$(PYTHON) -m venv $(PHOENIX_VENV)
	$(PHOENIX_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PHOENIX_VENV)/bin/python -m pip install --quiet 'arize-phoenix==$(PHOENIX_VERSION)'
	touch $@

phoenix-check: $(BIN)/.installed $(PHOENIX_VENV)/.installed $(CHROMIUM)
	$(BIN)/python tools/phoenix_check.py --phoenix $(PHOENIX_VENV)/bin/phoenix \
		--chromium $(CHROMIUM) --screenshot build/screenshots/phoenix.png

clean:
	rm -rf $(VENV) build site docs/generated .mypy_cache .ruff_cache .pytest_cache .hypothesis
