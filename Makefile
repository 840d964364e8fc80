# Jotter — `make run` serves on 127.0.0.1:8080 with data in ./jotter-data; `make test` runs every test.
# `make bench` runs every benchmark scenario (bench/README.md); pass options with
# BENCH_ARGS, e.g. `make bench BENCH_ARGS="--rounds 3"` or BENCH_ARGS="--scenario notes".
# `make compat` replays the tutorials' iPhone clients against their original servers and
# jotter, and rewrites docs/compatibility.md (`make test` runs the same check, without writing).
# `make install` builds the release and installs jotter, jotter-server, the systemd unit, the
# manual page (share/man/man1/jotter.1) and the bash, zsh and fish completions under PREFIX
# (default /usr/local), staged under DESTDIR when given (docs/deployment.md).
SWIFT ?= swift
HOST ?= 127.0.0.1
PORT ?= 8080
DATA ?= ./jotter-data
BENCH_ARGS ?=
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
UNITDIR ?= $(PREFIX)/lib/systemd/system
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
DESTDIR ?=
CONFIGURATION ?= release

.PHONY: deps test-deps build release run test swift-tests lint format converge compat browser-test screenshots openapi bench clean install install-files uninstall

# What building and serving need; test-deps adds what only the tests need (Chromium and more).
deps:
	@scripts/install-deps

test-deps:
	@scripts/install-deps --test

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

run: release
	.build/release/jotter serve --host $(HOST) --port $(PORT) --data $(DATA)

# Suites tagged `.timing` (wall-clock bounds, heavy load): run after the others, one test at a
# time, so nothing competes with them for the 2 cores (swift test filters by name, not by tag).
TIMING_TESTS = ScaleOutTests|SyncBoundsTests|FeedScaleOutTests|ConvergenceHAProxyTests|PostgresRestartTests|ClientEventTests|PostgresDownTests|PostgresLateCommitTests|PostgresStoreRestartTests|LargeBlobTests|RetryTests|URLSessionWorkaroundTests|SuspendTests|EngineTests|NoteEventsTests|NotesDurabilityTests|LargeUploadTests|LargeUploadClientTests|SlowClientTests|EventFanOutTests|SyncEngineTests
# swift test matches --filter and --skip against "Module.Suite/test()": the names anchored, so
# that one is never another's part (EngineTests, SyncEngineTests).
TIMING_FILTER = \.($(TIMING_TESTS))/

# The swift test passes run inside scripts/test-services: a throwaway PostgreSQL cluster and SeaweedFS (S3),
# stopped and removed afterwards, their URLs and credentials in JOTTER_TEST_* variables.
test: test-deps lint
	@scripts/test-venv
	@scripts/install-peer-deps
	$(SWIFT) build --build-tests
	@# The release build too: `make run` and `make install` use it, and Swift's optimizer has
	@# crashed on code the debug build compiles.
	$(SWIFT) build -c release
	scripts/test-services $(MAKE) --no-print-directory swift-tests
	scripts/hostile-tests
	python3 bench/compat.py --jotter .build/debug/jotter
	scripts/browser-tests

# The Swift sources' formatting, as .swift-format says (`swift format` ships with the toolchain):
# `make lint` (the first step of `make test`) fails on any drift; `make format` rewrites it.
FORMATTED = Package.swift Sources Tests
lint:
	$(SWIFT) format lint --strict --parallel --recursive $(FORMATTED)

format:
	$(SWIFT) format format --in-place --parallel --recursive $(FORMATTED)

# The `swift test` passes of `make test`, after its build; expects scripts/test-services around it.
# Each has a deadline (scripts/test-deadline) several times its usual length: a hung test fails
# its pass with every thread's stack printed, in minutes.
swift-tests:
	scripts/test-deadline 1200 $(SWIFT) test --skip-build --skip '$(TIMING_FILTER)'
	@# The engine's suites again, as on a machine booted a minute ago (a time namespace whose
	@# monotonic clock reads 60 s): a time compared across two clocks fails here on any machine.
	scripts/test-deadline 300 scripts/young-machine $(SWIFT) test --skip-build --filter JotterHTTPTests --skip '$(TIMING_FILTER)'
	scripts/test-deadline 1200 $(SWIFT) test --skip-build --no-parallel --filter '$(TIMING_FILTER)'

# The convergence harness (Tests/JotterClientTests/ConvergenceTests.swift, docs/architecture.md):
# CLIENTS sync engines against one `jotter serve` on SQLite, then against two instances on
# PostgreSQL + S3 behind HAProxy (under scripts/test-services, as make test), a schedule of ROUNDS
# operations drawn from SEED (a fresh seed, printed, when not given) with lost answers and kill -9s
# of client processes and server instances; a failure prints its seed and a minimal history, and
# `make converge SEED=N` replays it. `make test` runs the same suites with their fixed seed (33):
# the SQLite one in its first pass (120 rounds, ~7 s), the HAProxy one in its timing pass (40, ~6 s).
SEED ?=
ROUNDS ?= 400
CLIENTS ?= 4
converge: test-deps
	@scripts/test-venv
	$(SWIFT) build --build-tests
	@seed="$(SEED)"; seed=$${seed:-$$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}; \
	echo "converge: SEED=$$seed ROUNDS=$(ROUNDS) CLIENTS=$(CLIENTS)"; \
	JOTTER_CONVERGE_SEED=$$seed JOTTER_CONVERGE_ROUNDS=$(ROUNDS) JOTTER_CONVERGE_CLIENTS=$(CLIENTS) \
		scripts/test-services $(SWIFT) test --skip-build --no-parallel --filter 'ConvergenceTests|ConvergenceHAProxyTests'

# The tutorials' client sequences against the original servers and jotter (bench/compat.py).
compat: deps
	@scripts/install-peer-deps
	$(SWIFT) build
	python3 bench/compat.py --jotter .build/debug/jotter --write

# libFuzzer over the parsers, the HTTP/1.1 and HTTP/2 state machines and whole connections, 60 s each (scripts/fuzz; the corpus is fuzz/corpus).
# `make fuzz FUZZ_SECONDS=600 FUZZ_TARGETS="machine machine2"`: other times, some targets; each run takes a fresh seed.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
fuzz: deps
	scripts/fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# 10 minutes of mixed load against the release server: RSS and open files within ±10 %, 0 errors.
soak: release
	scripts/soak 600

# The web app in headless Chromium against the built server (after swift build).
browser-test: test-deps
	$(SWIFT) build
	scripts/browser-tests

# The web app's screenshots in docs/.
screenshots: test-deps
	$(SWIFT) build
	scripts/browser-tests --screenshots

# Rewrites docs/openapi.json from the document the server serves (a test fails while it is stale).
openapi: deps
	JOTTER_UPDATE_OPENAPI=1 $(SWIFT) test --filter snapshotIsCurrent

bench: release
	@scripts/install-bench-deps
	@scripts/install-peer-deps
	@scripts/test-venv
	python3 bench/run.py --jotter .build/release/jotter $(BENCH_ARGS)

# The release build's two programs (no test code: `swift build` builds no test target) and
# the systemd unit, its ExecStart pointing at BINDIR.
install: deps
	$(SWIFT) build -c $(CONFIGURATION)
	@$(MAKE) --no-print-directory install-files

# What `install` copies, from what `swift build -c $(CONFIGURATION)` made; builds nothing.
# The manual page and the completions are printed by the jotter just built, from the same
# declarations as its --help.
install-files:
	install -d "$(DESTDIR)$(BINDIR)" "$(DESTDIR)$(UNITDIR)" "$(DESTDIR)$(MANDIR)/man1" \
		"$(DESTDIR)$(BASHCOMPDIR)" "$(DESTDIR)$(ZSHCOMPDIR)" "$(DESTDIR)$(FISHCOMPDIR)"
	install -m 0755 .build/$(CONFIGURATION)/jotter .build/$(CONFIGURATION)/jotter-server "$(DESTDIR)$(BINDIR)/"
	sed 's#^ExecStart=/usr/local/bin/jotter-server #ExecStart=$(BINDIR)/jotter-server #' contrib/jotter.service > "$(DESTDIR)$(UNITDIR)/jotter.service"
	chmod 0644 "$(DESTDIR)$(UNITDIR)/jotter.service"
	.build/$(CONFIGURATION)/jotter help --man > "$(DESTDIR)$(MANDIR)/man1/jotter.1"
	.build/$(CONFIGURATION)/jotter completion bash > "$(DESTDIR)$(BASHCOMPDIR)/jotter"
	.build/$(CONFIGURATION)/jotter completion zsh > "$(DESTDIR)$(ZSHCOMPDIR)/_jotter"
	.build/$(CONFIGURATION)/jotter completion fish > "$(DESTDIR)$(FISHCOMPDIR)/jotter.fish"
	chmod 0644 "$(DESTDIR)$(MANDIR)/man1/jotter.1" "$(DESTDIR)$(BASHCOMPDIR)/jotter" "$(DESTDIR)$(ZSHCOMPDIR)/_jotter" "$(DESTDIR)$(FISHCOMPDIR)/jotter.fish"

uninstall:
	rm -f "$(DESTDIR)$(BINDIR)/jotter" "$(DESTDIR)$(BINDIR)/jotter-server" "$(DESTDIR)$(UNITDIR)/jotter.service" \
		"$(DESTDIR)$(MANDIR)/man1/jotter.1" "$(DESTDIR)$(BASHCOMPDIR)/jotter" "$(DESTDIR)$(ZSHCOMPDIR)/_jotter" "$(DESTDIR)$(FISHCOMPDIR)/jotter.fish"

clean:
	rm -rf .build
