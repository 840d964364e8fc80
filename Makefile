# Jotter — `make run` serves on 127.0.0.1:8080 with data in ./jotter-data; `make test` runs every test.
# `make bench` runs every benchmark scenario (bench/README.md); pass options with
# BENCH_ARGS, e.g. `make bench BENCH_ARGS="--rounds 3"` or BENCH_ARGS="--scenario notes".
SWIFT ?= swift
HOST ?= 127.0.0.1
PORT ?= 8080
DATA ?= ./jotter-data
BENCH_ARGS ?=

.PHONY: deps build release run test browser-test screenshots openapi bench clean

deps:
	@scripts/install-deps

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

run: release
	.build/release/jotter serve --host $(HOST) --port $(PORT) --data $(DATA)

# Suites tagged `.timing` (wall-clock bounds, heavy load): run after the others, one test at a
# time, so nothing competes with them for the 2 cores (swift test filters by name, not by tag).
TIMING_TESTS = RetryTests|URLSessionWorkaroundTests|SuspendTests|EngineTests|NoteEventsTests|NotesDurabilityTests|LargeUploadTests|LargeUploadClientTests

test: deps
	@scripts/test-venv
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --skip '$(TIMING_TESTS)'
	$(SWIFT) test --skip-build --no-parallel --filter '$(TIMING_TESTS)'
	scripts/browser-tests

# The web app in headless Chromium against the built server (after swift build).
browser-test: deps
	$(SWIFT) build
	scripts/browser-tests

# The web app's screenshots in docs/.
screenshots: deps
	$(SWIFT) build
	scripts/browser-tests --screenshots

# Rewrites docs/openapi.json from the document the server serves (a test fails while it is stale).
openapi: deps
	JOTTER_UPDATE_OPENAPI=1 $(SWIFT) test --filter snapshotIsCurrent

bench: release
	@scripts/install-bench-deps
	python3 bench/run.py --jotter .build/release/jotter $(BENCH_ARGS)

clean:
	rm -rf .build
