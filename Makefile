# faultline — the two commands that matter: `make run` and `make test`.
SHELL   := /bin/bash
GO      ?= go
BIN     ?= bin/faultline
# Arguments for `make run`; override with `make run ARGS='…'`, e.g.
# ARGS='--headless --records 100000' for JSON events and a report.
ARGS    ?=

.PHONY: bench-flink test-flink docs build run test test-e2e-race test-short test-kafka kafka-jars flink-jars test-release test-tours soak bench lint clean deps

# The commit goes into the binary (faultline version) when the checkout
# has one; a machine's GOFLAGS=-buildvcs=false does not keep it out.
build:
	$(GO) build -buildvcs=auto -o $(BIN) .

# The terminal UI on the embedded broker and the default job; the state
# (checkpoints, the broker's log) stays in ~/.local/share/faultline, so a
# second `make run` goes on where the first stopped.
run: build
	./$(BIN) run $(ARGS)

# The tests drive kcat against the embedded broker and the TUI in tmux;
# both come from Debian's packages.
deps:
	@if command -v kcat >/dev/null && command -v tmux >/dev/null; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat tmux >/dev/null; \
	else \
		echo "make test needs kcat and tmux: sudo apt-get install kcat tmux"; exit 1; \
	fi

# go test's own output, then the ten slowest tests (internal/testreport).
# The end-to-end tests share two builds of the program: with the race
# detector for runs and tours, without it for the kills, faults, state dirs
# and the UI in tmux (internal/e2e: Main, MainPlain).
test: deps
	$(GO) vet ./...
	$(GO) build -race -o build/faultline-race .
	$(GO) build -o build/faultline-plain .
	set -o pipefail; FAULTLINE_E2E_BINARY=$(CURDIR)/build/faultline-race \
		FAULTLINE_E2E_PLAIN_BINARY=$(CURDIR)/build/faultline-plain GORACE=atexit_sleep_ms=0 \
		$(GO) test -race -count=1 -timeout 10m -json $(SLOWEST_FIRST) ./... | $(GO) run ./internal/testreport

# go test starts the packages in the order named: the longest first, so
# that no long one starts last and runs on alone while a core waits. The
# test binaries end without the race detector's second of grace for
# goroutines still running (GORACE=atexit_sleep_ms=0), as the program's
# runs in the end-to-end tests do.
SLOWEST_FIRST := ./runtime/ ./backend/ ./checkpoint/badgerstore/ ./checkpoint/ ./internal/e2e/runs/ ./internal/e2e/statedir/ \
	./runtime/kafka/sink/ ./runtime/kafka/broker/ ./runtime/kafka/live/ ./runtime/kafka/source/ ./runtime/kafka/ \
	./runtime/kafka/fill/ ./internal/e2e/faults/ ./internal/e2e/tour/ ./internal/e2e/soak/ ./internal/e2e/tui/ \
	./internal/e2e/crash/

# Every end-to-end package with the race-built program, those that make
# test runs on a plain build too: slower (about three times the CPU).
test-e2e-race: deps
	$(GO) build -race -o build/faultline-race .
	FAULTLINE_E2E_BINARY=$(CURDIR)/build/faultline-race FAULTLINE_E2E_ALL_RACE=1 \
		$(GO) test -race -count=1 -timeout 30m ./internal/e2e/...

# The edit-compile loop: vet and the unit tests, without the race detector
# and without the end-to-end tests (which need the built program).
test-short:
	$(GO) vet ./...
	$(GO) test -short -count=1 ./...

# The soaks at full length: 20 kills of the whole process on the embedded
# broker and 20 with the broker in a process of its own, each resumed with
# --resume, and the chaos run of 100 faults; `make test` runs them short.
# Each prints its seed; SOAK_SEED=N replays the same schedules. Then a
# minute of fuzzing each for the job-spec parser, the oracle's record reader
# and the checkpoint store's
# decoders (`make test` runs their seed corpora).
SOAK_SEED ?= 0
FUZZTIME ?= 60s
soak: deps
	$(GO) test -count=1 -timeout 90m -p 1 -run 'Soak' -v ./internal/e2e/... -args -soak -soak.seed=$(SOAK_SEED)
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./runtime/spec/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeCheckpoint$$' -fuzztime $(FUZZTIME) ./checkpoint/badgerstore/
	$(GO) test -run '^$$' -fuzz '^FuzzOrderIDOfAgreesWithEncodingJSON$$' -fuzztime $(FUZZTIME) ./runtime/flatjson/

# The Kafka lane: faultline's Kafka tests against a real Apache Kafka
# broker (KRaft, one node) started from the published jars, counted with
# Kafka's own console tools (internal/kafkalane). Needs Java 17 and Maven,
# which fetches the jars once into build/kafka/<version>/lib; `make test`
# and `make run` never need them. KAFKA_VERSION=4.1.1 picks another 4.x.
KAFKA_VERSION ?= 4.4.0
KAFKA_LIB     := $(CURDIR)/build/kafka/$(KAFKA_VERSION)/lib
# The two packages run side by side: the broker in kafkalane's own test
# starts while the runs' brokers do. KAFKA_TESTS picks some (.ci/run runs
# two: the whole lane costs about five minutes of CPU, its JVMs mostly,
# which CI's ten minutes with one core busy have no room for).
KAFKA_TESTS ?= RealKafka|BrokerWithEveryListener
# What the lane fetches and builds first: Kafka's jars, and faultline's
# Flink module for the tests that run Flink's Kafka connector (.ci/run,
# which runs none of those, asks for the Kafka jars alone).
KAFKA_DEPS ?= kafka-jars flink-jars
test-kafka: $(KAFKA_DEPS)
	FAULTLINE_KAFKA_LIB=$(KAFKA_LIB) FAULTLINE_FLINK_LIB=$(FLINK_LIB) $(GO) test -tags kafka -count=1 -timeout 20m -p 2 -parallel 4 \
		-run '$(KAFKA_TESTS)' -v ./internal/kafkalane/ ./internal/e2e/runs/

# The Kafka jars, fetched once (.ci/run fetches them while make test runs).
kafka-jars:
	@if [ ! -d $(KAFKA_LIB) ]; then \
		echo "fetching Apache Kafka $(KAFKA_VERSION) into $(KAFKA_LIB)"; \
		rm -rf $(KAFKA_LIB).partial && mvn -q -f .ci/kafka/pom.xml dependency:copy-dependencies -Dkafka.version=$(KAFKA_VERSION) \
			-DoutputDirectory=$(KAFKA_LIB).partial && mv $(KAFKA_LIB).partial $(KAFKA_LIB); \
	fi

# faultline's Flink module (bench/flink: Apache Flink $(FLINK_VERSION) and its
# Kafka connector, Java 17), built with Maven and copied with its
# dependencies into build/flink/<version>/lib; the dependencies are fetched
# once, the module is built again when its sources change.
FLINK_VERSION ?= 2.2.0
FLINK_LIB     := $(CURDIR)/build/flink/$(FLINK_VERSION)/lib
flink-jars:
	@if [ ! -d $(FLINK_LIB) ]; then \
		echo "fetching Apache Flink $(FLINK_VERSION) and its Kafka connector into $(FLINK_LIB)"; \
		rm -rf $(FLINK_LIB).partial && mvn -B -q -f bench/flink/pom.xml dependency:copy-dependencies -Dflink.version=$(FLINK_VERSION) \
			-DincludeScope=runtime -DoutputDirectory=$(FLINK_LIB).partial && mv $(FLINK_LIB).partial $(FLINK_LIB); \
	fi
	@if [ -z "$$(find bench/flink/src bench/flink/pom.xml -newer $(FLINK_LIB)/faultline-flink.jar 2>/dev/null)" ] && [ -f $(FLINK_LIB)/faultline-flink.jar ]; then :; else \
		mvn -B -q -f bench/flink/pom.xml package -Dflink.version=$(FLINK_VERSION) && cp bench/flink/target/faultline-flink-1.jar $(FLINK_LIB)/faultline-flink.jar; \
	fi

# The Flink lane: faultline attach and verify against Apache Flink's peer
# job (bench/flink's PeerJob) in a MiniCluster whose REST API is on a
# local port, on faultline's embedded broker (internal/flinklane): the
# screen as Flink reports the job, the keys through its REST API, a panic
# through the control topic, the sinks through failures as verify sees
# them. Needs Java 17 and Maven, as the Kafka lane does; never part of
# make test. One JVM at a time (-p 1); FLINK_TESTS picks some.
FLINK_TESTS ?= .
test-flink: flink-jars deps build
	FAULTLINE_BIN=$(CURDIR)/$(BIN) FAULTLINE_E2E_PLAIN_BINARY=$(CURDIR)/$(BIN) FAULTLINE_FLINK_LIB=$(FLINK_LIB) \
		$(GO) test -tags flink -count=1 -p 1 -timeout 30m -run '$(FLINK_TESTS)' -v ./internal/flinklane/

# The command reference (docs/reference), written from the commands by
# cobra's doc generator; a test fails when it is not what they say.
docs:
	$(GO) test -count=1 -run TestReferenceIsTheCommands ./internal/cli/ -args -update-reference

# The release lane: go install of the module at a version from a file://
# proxy that serves this checkout's HEAD (commit first), and goreleaser
# check of .goreleaser.yaml with the goreleaser the tools/ module pins.
# It builds faultline and goreleaser from source: minutes.
test-release:
	$(GO) test -tags release -count=1 -timeout 20m -v ./internal/e2e/release/

# The tours lane: every built-in tour in autoplay in tmux, at 80x24 and
# 120x40, each narration that points at something checked on a capture
# taken while it is read. A tour mostly waits for its job: six at once.
test-tours: deps
	$(GO) build -o build/faultline-plain .
	FAULTLINE_E2E_PLAIN_BINARY=$(CURDIR)/build/faultline-plain $(GO) test -tags tours -count=1 -timeout 20m -parallel 6 \
		-run TestEveryTourInAutoplayShowsWhatItPointsAt -v ./internal/e2e/tui/

# Every benchmark, three rounds each (go test runs the packages' benchmarks
# one package at a time); docs/PERFORMANCE.md says what each measures. Those
# that alternate sides (the job against the bare consumer and pipeline,
# checkpointing on and off on disk, the scaling table) print medians of the
# three. FAULTLINE_BENCH_PROFILES=dir writes a CPU profile per side of
# runtime/kafka/source's, split by operator with go tool pprof -tags.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x -timeout 60m ./...

# faultline against Apache Flink $(FLINK_VERSION) on the same job and the same
# Kafka (internal/flinkbench): the input written once, then faultline, Flink's
# peer job (bench/flink's PeerJob) as it comes and tuned, alternated over
# BENCH_ROUNDS rounds, on the embedded broker and on Apache Kafka from the
# lane's jars, each also through a failure; prints the table of ratios
# (about 22 minutes). Needs Java 17 and Maven, as the
# Kafka lane does; never part of make test. BENCH_RECORDS=200000 BENCH_KAFKA=embedded
# for a quick look.
BENCH_RECORDS ?= 2000000
BENCH_ROUNDS  ?= 3
BENCH_KAFKA   ?= embedded,apache
bench-flink: kafka-jars flink-jars build
	FAULTLINE_BIN=$(CURDIR)/$(BIN) FAULTLINE_KAFKA_LIB=$(KAFKA_LIB) FAULTLINE_FLINK_LIB=$(FLINK_LIB) \
		$(GO) test -tags flinkbench -count=1 -timeout 120m -run TestFlinkPeer -v ./internal/flinkbench/ \
		-args -records $(BENCH_RECORDS) -rounds $(BENCH_ROUNDS) -kafka $(BENCH_KAFKA)

lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

clean:
	rm -rf bin
