# kvod: the two commands of the README contract (`make run`, `make test`) and a few helpers (among them the
# reliability checks CI also runs: `make fuzz`, `make sanitizers`).
# Every target installs what is missing first (.ci/deps.sh), so they work on a fresh machine.
SWIFT ?= swift
HOST ?= 127.0.0.1
PORT ?= 7070
FUZZ_SECONDS ?= 60
SANITIZERS ?= asan tsan valgrind

.PHONY: deps build release run test dist cluster-test bench lint-docker container-test fuzz sanitizers clean

deps:
	@bash .ci/deps.sh

## A build after a new commit starts afresh (.ci/fresh-build-dir.sh: Swift 6.3's incremental build can miss a
## layout change); rebuilding the same commit stays incremental.
build: deps
	@bash .ci/fresh-build-dir.sh debug
	$(SWIFT) build

release: deps
	@bash .ci/fresh-build-dir.sh release
	$(SWIFT) build -c release --product kvod
	$(SWIFT) build -c release --product kvoctl

## run: build and start kvod in the foreground on $(HOST):$(PORT) with its embedded default graph.
run: release
	.build/release/kvod --host $(HOST) --port $(PORT)

## test: build everything with no warnings allowed in our code, then run every test suite, then every example of the
## documentation and the help texts (docs/EXAMPLES.md); the last suite, the web inspector's in headless Chromium,
## installs chromium, chromium-driver and selenium when they are missing.
test:
	@bash .ci/deps.sh --test
	@bash .ci/fresh-build-dir.sh debug
	@bash .ci/build-no-warnings.sh
	$(SWIFT) test
	KVOD_BIN=.build/debug/kvod bash Tests/python/run.sh
	KVOD_BIN=.build/debug/kvod bash clients/python/run-tests.sh
	KVOD_BIN=.build/debug/kvod bash clients/typescript/test.sh
	KVOD_BIN=.build/debug/kvod KVOCTL_BIN=.build/debug/kvoctl bash Tests/examples/run.sh
	KVOD_BIN=.build/debug/kvod KVOCTL_BIN=.build/debug/kvoctl bash Tests/browser/run.sh

## dist: the release tarball that runs on Debian 12 without a toolchain or libuv (the Swift runtime and libuv linked
## statically): dist/kvod-VERSION-linux-ARCH.tar.gz (.ci/dist.sh; about 2.5 minutes the first time).
dist:
	bash .ci/dist.sh

## cluster-test: a 3-member etcd and kvods on loopback: every Tests/cluster/*_test.py (roles and failover,
## --sync-replicas 1 under kills, stops and an etcd member down, the double failure no stale member may win, the
## clients following the leader, snapshot bootstrap and metrics; docs/SCALING.md#tests; installs etcd-server when missing; each file bounded at 240 s).
cluster-test:
	@bash .ci/deps.sh
	@bash .ci/fresh-build-dir.sh debug
	$(SWIFT) build --product kvod
	$(SWIFT) build --product kvoctl
	KVOD_BIN=.build/debug/kvod KVOCTL_BIN=.build/debug/kvoctl bash Tests/cluster/run.sh

## bench: a quick kvod vs Redis run of every issue-10 figure, then WebSocket vs TCP, then issue 23's worst cases
## (PASS/FAIL per row), then kvod beside Redis, NATS and etcd in tiers and 10,000 connections on each, then live
## queries at small sizes (about twenty-five minutes once built; not part of CI; Benchmarks/README.md).
bench: deps
	bash Benchmarks/compare.sh --quick
	bash Benchmarks/websocket.sh --quick --no-build
	python3 Benchmarks/worst-case.py --kvod "$${KVOD_BENCH_SCRATCH:-.build-bench}/release/kvod"
	bash Benchmarks/peers.sh --quick --no-build
	python3 Benchmarks/connections.py --quick
	python3 Benchmarks/queries.py --quick --kvod "$${KVOD_BENCH_SCRATCH:-.build-bench}/release/kvod"

## lint-docker: hadolint on docker/Dockerfile.
lint-docker:
	bash .ci/lint-dockerfile.sh

## container-test: build the image with podman, run it, restart it on its volume, check the data; then run the
## tarball (make dist) on a bare Debian 12.
container-test:
	bash .ci/container-test.sh --install

## fuzz: the six libFuzzer targets, FUZZ_SECONDS (60) each, in .build-fuzz (docs/RELIABILITY.md#fuzzing).
fuzz:
	bash .ci/fuzz.sh $(FUZZ_SECONDS)

## sanitizers: the suite under ASan and TSan, kvod under valgrind (SANITIZERS="asan tsan valgrind"; 13 min cold).
sanitizers:
	bash .ci/sanitizers.sh $(SANITIZERS)

clean:
	rm -rf .build
