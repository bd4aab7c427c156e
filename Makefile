# probegate — `make run` is the tour, `make test` is everything CI runs.
GO       ?= go
BINARY   := probegate
PKG      := github.com/probegate/probegate
# The release version is the VERSION file; `make release VERSION=...` on the
# command line overrides it, a VERSION in the environment does not.
VERSION  := $(shell cat VERSION)
LDFLAGS  := -X github.com/prometheus/common/version.Version=$(VERSION) \
            -X github.com/prometheus/common/version.Revision=$(shell git rev-parse HEAD 2>/dev/null) \
            -X github.com/prometheus/common/version.Branch=$(shell git rev-parse --abbrev-ref HEAD 2>/dev/null) \
            -X github.com/prometheus/common/version.BuildUser=$(shell id -un 2>/dev/null || echo unknown)@$(shell hostname 2>/dev/null || echo unknown) \
            -X github.com/prometheus/common/version.BuildDate=$(shell date -u +%Y%m%d-%H:%M:%S)
JSONNET  := $(GO) tool jsonnet
# The Debian packages the tests use: promtool and the Prometheus server,
# HAProxy, wrk, kubectl (Debian's kubernetes-client, for `kubectl kustomize`),
# systemd-analyze (systemd), Chromium for the status page, etcd, and ip
# (iproute2) for the shared probing tests' network namespaces. Installed
# once when missing, with sudo when not root; a missing tool is an error,
# never a skipped test.
DEB_TOOLS := promtool:prometheus prometheus:prometheus haproxy:haproxy wrk:wrk \
             kubectl:kubernetes-client systemd-analyze:systemd chromium:chromium \
             etcd:etcd-server ip:iproute2

.PHONY: all build run test unit lint deps check-example rules dashboards prometheusrule mixin-check rules-test e2e bench bench-state bench-probe bench-metrics bench-ready bench-metrics-flood bench-fanout bench-stragglers bench-groups bench-fleet bench-replicas bench-churn bench-record fuzz clean release

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BINARY) ./cmd/probegate

run: build
	./$(BINARY) demo

# deps installs the Debian packages the tests need, idempotently: as root
# directly, otherwise through sudo; when neither works it prints the
# command to run and fails.
deps:
	@missing=""; for pair in $(DEB_TOOLS); do \
	  tool=$${pair%%:*}; pkg=$${pair##*:}; \
	  command -v $$tool >/dev/null 2>&1 || case " $$missing " in *" $$pkg "*) ;; *) missing="$$missing $$pkg";; esac; \
	done; \
	if [ -n "$$missing" ]; then \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  echo "installing:$$missing"; \
	  if ! { { [ -z "$$sudo" ] || command -v sudo >/dev/null 2>&1; } && \
	         $$sudo apt-get update -qq && \
	         $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; }; then \
	    echo "make deps: could not install$$missing. Install them, then run make again:"; \
	    echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends$$missing"; \
	    exit 1; \
	  fi; \
	fi
	@for pair in $(DEB_TOOLS); do tool=$${pair%%:*}; command -v $$tool >/dev/null || { echo "missing $$tool"; exit 1; }; done

test: deps lint unit rules-test mixin-check check-example e2e

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go') $$(git ls-files --others --exclude-standard '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags faultinject ./cmd/probegate/

# unit runs every package's tests under the race detector; the fuzz
# targets' seed corpora run as ordinary tests here. cmd/probegate runs
# twice: as released, and with the faultinject tag that builds its
# --testing.* hooks in. Each package's tests
# run under UNIT_TIMEOUT, long enough for a 2-core machine shared with
# other work, so that a hung test fails its package with a stack trace.
UNIT_TIMEOUT ?= 10m
unit:
	$(GO) test -race -count=1 -timeout $(UNIT_TIMEOUT) $$($(GO) list ./... | grep -v /e2e)
	$(GO) test -race -count=1 -timeout $(UNIT_TIMEOUT) -tags faultinject ./cmd/probegate/

# check-example: the example configuration at the top of the repository is
# one the binary accepts as it is.
check-example: build
	./$(BINARY) check-config --config.file=example.yml

e2e: build
	$(GO) test -count=1 -timeout 15m ./e2e/...

# The mixin (mixin/) generates the rule files and dashboards; they are
# committed, and mixin-check fails when they drift from the jsonnet.
# MIXIN_OUT lets mixin-check generate into a scratch directory.
MIXIN_OUT ?= .

rules:
	@mkdir -p $(MIXIN_OUT)/rules
	$(JSONNET) -S -m $(MIXIN_OUT)/rules mixin/build/rules.jsonnet >/dev/null

dashboards:
	@mkdir -p $(MIXIN_OUT)/dashboards
	$(JSONNET) -S -m $(MIXIN_OUT)/dashboards mixin/build/dashboards.jsonnet >/dev/null

# prometheusrule: the same rules as a prometheus-operator PrometheusRule
# for the Kubernetes base.
prometheusrule:
	@mkdir -p $(MIXIN_OUT)/deploy/kubernetes
	$(JSONNET) -S -m $(MIXIN_OUT)/deploy/kubernetes mixin/build/prometheusrule.jsonnet >/dev/null

rules-test:
	promtool check rules rules/probegate-alerts.yaml rules/probegate-rules.yaml
	promtool test rules rules/tests/*.yaml

# mixin-check regenerates everything into a scratch directory and compares
# it with the committed files, stale ones included (the tests and the Go
# lint next to them are not generated).
mixin-check:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	  $(MAKE) --no-print-directory -s rules dashboards prometheusrule MIXIN_OUT="$$tmp" && \
	  if ! diff -r -x tests -x '*.go' rules "$$tmp/rules" || \
	     ! diff -r -x '*.go' dashboards "$$tmp/dashboards" || \
	     ! diff deploy/kubernetes/prometheusrule.yaml "$$tmp/deploy/kubernetes/prometheusrule.yaml"; then \
	    echo "mixin-check: rules/, dashboards/ or deploy/kubernetes/prometheusrule.yaml differ from what mixin/ generates: run make rules dashboards prometheusrule"; exit 1; \
	  fi

# fuzz runs each fuzz target for FUZZTIME, one after the other; a target
# is package:FuzzName. What a run finds lands in the package's
# testdata/fuzz/FuzzName, where unit runs it from then on as an ordinary
# test. FUZZFLAGS passes more flags, such as -parallel=1 on a busy machine.
FUZZTIME  ?= 60s
FUZZFLAGS ?=
FUZZ_TARGETS := \
	config:FuzzParse \
	collector/fanout/internal/merge:FuzzMergeNDJSON \
	collector/fanout/internal/merge:FuzzMergeJSONArray \
	collector/discovery:FuzzTargetOf \
	collector/fanout:FuzzBackendTarget \
	collector/fanout/internal/straggler:FuzzRule \
	collector/health:FuzzStateMachine \
	collector/maintenance:FuzzStoreReader \
	collector/maintenance:FuzzMaintenanceRequest

fuzz:
	@set -e; for target in $(FUZZ_TARGETS); do \
	  pkg=$${target%%:*}; name=$${target##*:}; \
	  echo "fuzz $$name ($$pkg) for $(FUZZTIME)"; \
	  $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./$$pkg/; \
	done

# bench runs every performance budget (docs/design.md, "Budgets"); each part
# prints its numbers.
bench: bench-state bench-record bench-probe bench-metrics bench-ready bench-metrics-flood bench-fanout bench-stragglers bench-groups bench-fleet bench-replicas bench-churn

bench-state:
	$(GO) test -run '^$$' -bench 'BenchmarkStep' -benchmem ./collector/health/

# bench-record: recording one probe result (state machine, counters,
# latency histogram, history ring) must report 0 allocs/op.
bench-record:
	$(GO) test -run '^$$' -bench '^BenchmarkRecordProbe$$' -benchmem ./collector/pool/

# bench-probe: probegate probing 1,000, 5,000 and 20,000 loopback backends
# at 1s (keep-alive probes only, keep-alive with fan-out rounds, and
# keep_alive false) beside HAProxy's own checks of the same backends and a
# minimal net/http prober, in 3 interleaved rounds (blackbox_exporter too
# when it builds from the Go module proxy); prints min/median/max, the
# ratios and the budget table, and fails when a median is over budget. The
# backends are served by child processes of 5,000 each; a prober whose
# connections to every backend do not fit its open-file limit is measured
# at the most that fit, and the table says so. The CPU and heap profiles of
# each run and the budget tables (probe-table.txt) go to bench.out/.
# bench-metrics reports the series per backend.
BENCH_PROBE_BACKENDS ?= 1000,5000,20000
bench-probe: deps
	@mkdir -p bench.out
	PROBEGATE_BENCH_BACKENDS=$(BENCH_PROBE_BACKENDS) \
	PROBEGATE_BENCH_CPUPROFILE=$(CURDIR)/bench.out/probe-cpu.pprof \
	PROBEGATE_BENCH_HEAPPROFILE=$(CURDIR)/bench.out/probe-heap.pprof \
	PROBEGATE_BENCH_TABLE=$(CURDIR)/bench.out/probe-table.txt \
	$(GO) test -run '^$$' -bench '^BenchmarkProbing5000$$' -benchtime 1x -timeout 60m ./collector/probe/
	$(GO) test -run '^$$' -bench '^BenchmarkProbeRequest$$' -benchmem ./collector/probe/

bench-metrics:
	$(GO) test -run '^$$' -bench 'BenchmarkExporter' -benchmem ./collector/exporter/

# bench-ready: /ready of the real binary under wrk against a bare net/http
# handler, in alternating rounds; fails when the median round is below 0.8.
bench-ready: build
	$(GO) run ./e2e/readybench -binary ./$(BINARY)

# bench-metrics-flood: 16 clients scraping the metrics of 10,000 backends
# without pause; prints /ready's p99 on the health listener (budget 50 ms)
# and the peak RSS, and fails over the budget.
bench-metrics-flood: build
	$(GO) run ./e2e/metricsflood -binary ./$(BINARY)

# bench-fanout: the fan-out's added p50 latency and allocations against 3
# HAProxy backends, passive health's ring window against the
# timer-per-failure design at 10,000 outcomes per second: 300,000 records
# (one 30s window of them), then 3 s paced in real time; last the fan-out's
# requests per second under wrk -c16 against a minimal net/http fan-out
# (outlier detection on; budget 0.9).
bench-fanout:
	$(GO) test -run '^$$' -bench '^BenchmarkFanout(AddedLatency|Handler)$$' -benchmem ./collector/fanout/
	$(GO) test -run '^$$' -bench '^BenchmarkPassiveRecord' -benchtime 300000x -benchmem ./collector/pool/
	$(GO) test -run '^$$' -bench '^BenchmarkPassivePaced' -benchtime 30000x ./collector/pool/
	$(GO) test -run '^$$' -bench '^BenchmarkFanoutThroughput$$' -benchtime 1x -timeout 5m ./collector/fanout/

# bench-stragglers: round latency (p50, p99) with one backend stalled for 2s
# among four answering in 5ms: with fanout.stragglers on (budget: p99 at
# most 70ms), off, and a minimal net/http fan-out, in the same run.
bench-stragglers:
	$(GO) test -run '^$$' -bench '^BenchmarkFanoutStragglers$$' -benchtime 1x -timeout 5m ./collector/fanout/

# bench-groups: four replica groups of two loopback replicas answering in
# 5ms, one of each stalling one answer in twenty for 2s: backend requests
# per query, p50 and p99 without groups, with groups, and with groups and
# hedging (budget: at most 4.6 requests a query, p99 at most 100ms), in
# the same run.
bench-groups:
	$(GO) test -run '^$$' -bench '^BenchmarkFanoutReplicaGroups$$' -benchtime 1x -timeout 5m ./collector/fanout/

# bench-fleet: shared probing's pure logic: the vantage points of one
# backend among 5 replicas (rendezvous hashing), and the etcd
# write volume of its verdicts at 10,000 backends with 1% changing state a
# second (budget 1 MiB/s a replica); and the coordinator's judgement of
# 10,000 backends, which it makes once a second.
bench-fleet:
	$(GO) test -run '^$$' -bench . -benchmem ./collector/fleet/
	$(GO) test -run '^$$' -bench JudgeAll -benchtime 20x -benchmem ./collector/vantage/

# bench-replicas: maintenance write latency (p50, p99) and the lag until
# every replica shows a change (p99; promised under 200 ms), over three
# replicas on a three-member etcd cluster on loopback.
bench-replicas: deps
	$(GO) test -run '^$$' -bench '^BenchmarkReplicaMaintenance$$' -benchtime 200x ./e2e/

# bench-nemesis: one nemesis run (random faults and writes over three
# replicas on three etcd members, docs/faults.md) prints its operations,
# faults, grants, refusals, violations (must be 0) and the convergence
# after each heal (p99). PROBEGATE_NEMESIS_SEED replays a seed.
.PHONY: bench-nemesis chaos
bench: bench-nemesis
bench-nemesis: deps
	$(GO) test -run '^$$' -bench '^BenchmarkNemesis$$' -benchtime 1x -timeout 20m ./e2e/

# chaos: the nemesis of `make test`, for PROBEGATE_NEMESIS_DURATION
# (default here 10m).
chaos: deps
	PROBEGATE_NEMESIS_DURATION=$${PROBEGATE_NEMESIS_DURATION:-10m} $(GO) test -count=1 -run '^TestNemesis$$' -v -timeout 30m ./e2e/

# release cross-builds every platform into RELEASE_DIR, static and with
# the version, revision, branch, build user and date stamped, and writes
# their SHA-256 sums. deploy/release_test.go runs it into a scratch folder:
# in make test for this machine's platform only, in release-test for all.
PLATFORMS   := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
RELEASE_DIR ?= dist
BUILD_USER  ?= $(shell id -un 2>/dev/null)@$(shell uname -n 2>/dev/null)
BUILD_DATE  ?= $(shell date -u +%Y%m%d-%H:%M:%S)
RELEASE_LDFLAGS := $(LDFLAGS) \
            -X github.com/prometheus/common/version.BuildUser=$(BUILD_USER) \
            -X github.com/prometheus/common/version.BuildDate=$(BUILD_DATE)

release:
	@rm -rf $(RELEASE_DIR) && mkdir -p $(RELEASE_DIR)
	@set -e; for p in $(PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; ext=; [ $$os != windows ] || ext=.exe; \
	  out=$(RELEASE_DIR)/$(BINARY)-$(VERSION).$$os-$$arch$$ext; \
	  echo "build $$out"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags '$(RELEASE_LDFLAGS)' -o $$out ./cmd/probegate; \
	done
	cd $(RELEASE_DIR) && sha256sum $(BINARY)-* > sha256sums.txt

# release-test cross-builds every release platform, as make release does,
# and checks each binary; make test builds only this machine's, since six
# cross-builds take longer than a test should on a 2-core machine.
.PHONY: release-test
release-test:
	PROBEGATE_RELEASE_TEST_ALL_PLATFORMS=1 $(GO) test -count=1 -timeout 30m -run '^TestMakeRelease$$' ./deploy/

# bench-churn: 1,000 backends from a file_sd file, 10% replaced every 5 s,
# for PROBEGATE_BENCH_CHURN_DURATION (default 10m): schedule lag p99 and RSS.
bench-churn:
	$(GO) test -run '^$$' -bench '^BenchmarkDiscoveryChurn$$' -benchtime 1x -timeout 30m ./collector/probe/

clean:
	rm -f $(BINARY)
	rm -rf dist
