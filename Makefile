# The two commands a user needs are `make run` and `make test` (README.md).
GO      ?= go
BIN     := $(CURDIR)/bin
PKGS    := ./...
# Tests that need a real API server find the binaries here.
export KUBETEST_BIN_DIR := $(BIN)

.PHONY: all build test test-e2e test-race test-race-rest test-pure test-sim test-modules lint bench fuzz sim apiserver generate streams run otelcol image deploy

all: build

build:
	$(GO) build $(PKGS)

## test: everything CI runs, from nothing: modules, kube-apiserver and etcd, the collector distribution, lint, then
## five jobs side by side: the end-to-end tests, the long race tests, the demo's and the other race tests, the pure
## packages' tests and the other Go modules' tests.
## The API server and etcd build beside lint, the distribution after them (test-deps); the tests start once all
## of it is there.
## The other Go modules: recorder, tools/image, tools/helm and tools/operator have tests, run in test-modules;
## tools/mdatagen and tools/kube only pin tools (no package, no test): lint's go generate builds and runs mdatagen
## through tools/mdatagen/go.mod, apiserver builds kube-apiserver and etcd through tools/kube
## (internal/harness TestEveryModuleIsCoveredByMakeTest).
## The jobs run under kubepool (internal/harness/kubepool): POOL_SERVERS API servers that tests asking for a default
## one lease in turn, each reset to its first state, instead of starting their own: a start costs more CPU than a reset.
## One more runs with --watch-cache=false, for the receiver's relist tests, which run one after the other. A free
## server is paused (SIGSTOP): it costs no CPU until a test leases it.
POOL_SERVERS ?= 12
test: test-deps kubepool
	$(BIN)/kubepool -servers $(POOL_SERVERS) -server-with-flags --watch-cache=false -- $(MAKE) --no-print-directory -j5 test-e2e test-race test-race-rest test-pure test-modules

## test-e2e: the end-to-end package, the longest one, in a job of its own so that it starts first. The package runs
## five of its tests at a time, the longest first (e2e/slots_test.go); -parallel lets all of them ask for a slot at
## once, which that order needs.
## Without the race detector: what e2e tests runs in the collector binary (ocb's build, which no -race flag
## reaches) and in API servers; -race would instrument only the test's own clients, storms and count readers, at
## several times their CPU. The harness packages they use have race-tested tests of their own (test-race-rest).
## CGO_ENABLED=0 -trimpath: the flags of ocb's build, so that from empty caches the dependencies the two share
## compile once; that holds while go.mod requires the versions ocb's build resolves for them (go list -m all in
## otelcol-k8sevents/ after make otelcol).
NORACE := CGO_ENABLED=0 $(GO) test -trimpath -vet=off -ldflags=-w
test-e2e:
	$(NORACE) -parallel 64 -count=1 -timeout 30m ./e2e

## test-race: the long packages that start goroutines, under the race detector. -vet=off: lint, which runs first,
## vets the same packages with every analyzer and the same -race build; -ldflags=-w: test binaries without DWARF
## link about a quarter faster. -p 2 -parallel 3: two packages, and three parallel tests of each, at a time: most of
## them wait on API servers and faults, not on a core, and beside the other jobs the machine has no core to spare
## for a third package. go test starts packages in the order given: the longest first, so that none of them starts
## last and becomes the tail.
MODULE := github.com/k8sevents/otel-k8sevents
SLOW_PKGS := exporter/k8seventexporter receiver/k8seventsreceiver extension/k8stokenauthextension \
	internal/harness/kubetest receiver/k8seventsotlpreceiver
test-race:
	$(GO) test -race -vet=off -ldflags=-w -p 2 -parallel 3 -count=1 -timeout 30m $(addprefix ./,$(SLOW_PKGS))

## test-race-rest: every other package that starts goroutines, under the race detector, beside make run's demo.
## The demo's tests wait on storms paced in real time (minutes, little CPU) and hold one lane; the other lane runs the
## rest (each seconds to a minute) meanwhile, so that none of them is left for the end of make test.
## The simulator's kept schedules run here too, under the race detector: its own goroutines (apps, requests, the
## world's steps) are checked there; its generated schedules run without it in test-sim.
DEMO_PKG := cmd/k8sevents-demo
REST_PKGS = $(shell $(GO) list $(PKGS) | grep -vx $(foreach p,e2e $(DEMO_PKG) $(SLOW_PKGS) $(PURE_PKGS) $(SIM_PKG),-e '$(MODULE)/$(p)'))
test-race-rest:
	$(GO) test -race -vet=off -ldflags=-w -p 2 -parallel 3 -count=1 -timeout 30m -skip '^($(REPLAY_TESTS))$$' \
		$(MODULE)/$(DEMO_PKG) $(REST_PKGS)
	$(GO) test -race -vet=off -ldflags=-w -count=1 -timeout 10m -run '^TestSimKept$$' ./$(SIM_PKG)

## test-pure: the pure decision code (the engine, the record codec) and the storm generators, which start no
## goroutine in their code or their tests (internal/harness TestPurePackagesStartNoGoroutine): the race detector
## has nothing to find there and would only make their random-stream, client-go differential and scenario tests
## several times slower.
## The processor's storm replays (REPLAY_TESTS) run here too: they feed whole recorded storms, one batch at a time,
## through the same harness and code paths as the processor's other tests, which run under the race detector and
## would find there what it could find here. A renamed replay runs under the race detector (no longer skipped).
PURE_PKGS := processor/eventseriesprocessor/internal/engine internal/k8sevent internal/harness/storm
REPLAY_TESTS := TestSpamFilterReport|TestWriteCountReport|TestStreamsGolden|TestLegacyWritesBeyondClientGoAreLastCounts
test-pure:
	$(NORACE) -count=1 -timeout 30m $(addprefix ./,$(PURE_PKGS))
	$(NORACE) -count=1 -timeout 30m -run '^($(REPLAY_TESTS))$$' ./processor/eventseriesprocessor
	$(MAKE) --no-print-directory test-sim

## test-sim: the fault simulator (docs/simulator.md): every kept schedule, and SIM_SCHEDULES generated ones, a third
## of them per shape. Without the race detector: it runs whole pipelines on virtual time, which the race detector would
## make several times slower, and the components it runs are race-tested in their own packages (make sim RACE=1 runs
## it with it).
SIM_PKG := internal/harness/sim
SIM_SCHEDULES ?= 1002
test-sim:
	$(NORACE) -count=1 -timeout 10m -run '^TestSim(Kept|Schedules)$$' ./$(SIM_PKG) -args -rapid.checks=$$(( $(SIM_SCHEDULES) / 3 ))

## test-modules: the other Go modules' tests, under the race detector; -vet=off and -ldflags=-w as in test-race
## (lint vets every module with every analyzer).
test-modules:
	cd recorder && $(GO) test -race -vet=off -ldflags=-w -count=1 -timeout 10m .  # ./example has no tests: vet and e2e/recorder_test.go build it
	cd tools/image && GOWORK=off $(GO) test -race -vet=off -ldflags=-w -count=1 -timeout 5m .  # make image's builder; e2e/image_test.go checks its image
	cd tools/helm && GOWORK=off $(GO) test -race -vet=off -ldflags=-w -count=1 -timeout 10m .  # the Helm chart: deploy/ is its output; installed on a real API server
	cd tools/operator && GOWORK=off $(GO) test -race -vet=off -ldflags=-w -count=1 -timeout 5m .  # deploy/operator against the Operator's API types and the built distribution

# test-deps: what make test needs before its tests, two jobs at a time. The API server and the distribution
# share most of their packages (tools/kube requires the distribution's versions, docs/versions.md), so the
# distribution compiles after the API server and finds them built; its sources and modules are fetched while
# the API server compiles, and lint runs beside both.
.PHONY: test-deps otelcol-sources image-after-apiserver lint-after-sources node-example
test-deps:
	$(MAKE) --no-print-directory -j2 image-after-apiserver lint-after-sources node-example
## kubepool: built with ocb's flags, as test-e2e is, so that its client-go is the distribution's build.
.PHONY: kubepool
kubepool:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags=-w -o $(BIN)/kubepool ./internal/harness/kubepool/run
image-after-apiserver: apiserver otelcol-sources
	$(MAKE) --no-print-directory image IMAGE_PLATFORMS=$(HOST_PLATFORM)
lint-after-sources: otelcol-sources
	$(MAKE) --no-print-directory lint
otelcol-sources: $(BIN)/builder
	$(BIN)/builder --config builder-config.yaml --skip-compilation

## node-example: examples/node's npm packages, as its package-lock.json pins them (npm ci, seconds from npm's cache),
## for e2e/nodeapp_test.go. Without npm it says so and goes on: that test then skips, or fails under CI=true.
node-example:
	@if command -v npm >/dev/null 2>&1; then cd examples/node && npm ci --prefer-offline --no-audit --no-fund --loglevel=error; \
	else echo "npm not found: examples/node not installed, TestNodeAppWritesTheGoRecordersEvents skips (fails under CI=true)"; fi

## lint: gofmt; mdatagen's output matches metadata.yaml (regenerated in a temp copy by tools/check-generated.sh,
## the working tree is never written); go vet. vet runs with -race, so the packages it compiles are the ones
## make test's race tests use (without it a cold make test compiled every dependency twice), for every module with
## tests: tools/helm's Helm and Kubernetes libraries then compile before the tests start, not beside them.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	GO=$(GO) tools/check-generated.sh
	$(GO) vet -race $(PKGS)
	cd recorder && $(GO) vet -race ./...
	cd tools/image && GOWORK=off $(GO) vet -race ./...
	cd tools/helm && GOWORK=off $(GO) vet -race ./...
	cd tools/operator && GOWORK=off $(GO) vet -race ./...

## bench: every measurement the docs refer to, each step's output also written to $(BENCH_DIR)/<step>.txt (bench/README.md
## says what each file holds): the processor's budget table (ratios to client-go's EventCorrelator in the same run,
## allocations, retained heap), the engine, the write-count and spam-filter reports per storm, the write-ahead log's
## cost, the receiver's memory, the Go recorder, the exporter's writes, fairness and freshness, peak RSS under hostile
## input on the built collector, what authentication and authorization cost and how one client's flood delays
## another's first Event, make run's comparison with client-go's recorders, the end-to-end fault, hand-over and
## scale-out runs (their logged measurements), and what building the distribution costs.
BENCH_DIR ?= bench
BENCH_OUT = $(abspath $(BENCH_DIR))
BENCH_E2E := ^(TestFault.*|TestExactDestinationStartingAnswers403|TestHandOver(Mirror|Tier2).*|TestMirror|TestScaleOut|TestExactMetrics|TestRecorderStorm|TestRecorderFallback|TestAuthIngestion|TestHostileNestedPayload|TestHostileClientFlood)$$
bench: SHELL := /bin/bash
bench: .SHELLFLAGS := -o pipefail -c
bench: apiserver otelcol
	mkdir -p $(BENCH_OUT)
	$(GO) test -run XXX -bench Budget -benchtime 1s -timeout 60m ./processor/eventseriesprocessor/ | tee $(BENCH_OUT)/processor-budget.txt
	$(GO) test -run XXX -bench BenchmarkEngine -benchtime 1s -count 3 ./processor/eventseriesprocessor/internal/engine/ | tee $(BENCH_OUT)/engine.txt
	$(GO) test -run 'TestWriteCountReport|TestSpamFilterReport' -count=1 -v ./processor/eventseriesprocessor/ | grep '^ *|' | tee $(BENCH_OUT)/processor-writes.txt
	$(GO) test -run XXX -bench BenchmarkWriteAheadLog -benchtime 2s -count 2 ./processor/eventseriesprocessor/ | tee $(BENCH_OUT)/processor-wal.txt
	$(GO) test -run XXX -bench BenchmarkReceiverMemoryVsStoredEvents -benchtime 1x -timeout 20m ./receiver/k8seventsreceiver/ | tee $(BENCH_OUT)/receiver-memory.txt
	cd recorder && $(GO) test -run XXX -bench 'Eventf' -benchtime 100000x -count 3 . | tee $(BENCH_OUT)/recorder.txt
	cd recorder && $(GO) test -run XXX -bench Storm100k -benchtime 1x -count 3 . | tee -a $(BENCH_OUT)/recorder.txt
	$(GO) test -run XXX -bench 'BenchmarkWrites$$|BenchmarkWritesInterleaved' -benchtime 2000x -count 2 ./exporter/k8seventexporter/ | tee $(BENCH_OUT)/exporter-writes.txt
	$(GO) test -run XXX -bench BenchmarkFairnessFloodDelay -benchtime 1x -timeout 20m ./exporter/k8seventexporter/ | tee $(BENCH_OUT)/exporter-fairness.txt
	$(GO) test -run XXX -bench 'BenchmarkFreshness|BenchmarkHostileFieldsPeakRSS|BenchmarkAuthFairness' -benchtime 1x -timeout 20m ./e2e/ | tee $(BENCH_OUT)/e2e-benchmarks.txt
	$(GO) test -run XXX -bench BenchmarkAuthCost -benchtime 1x -count 2 ./receiver/k8seventsotlpreceiver/ | tee $(BENCH_OUT)/auth-cost.txt
	$(GO) run ./cmd/k8sevents-demo -bin $(BIN) -quiet | tee $(BENCH_OUT)/demo.txt
	$(GO) test -run '$(BENCH_E2E)' -count=1 -v -timeout 90m ./e2e/ | grep -E '^(=== (RUN|NAME|CONT)|--- |\s+[a-z_]+_test\.go:[0-9]+:)' | tee $(BENCH_OUT)/e2e-runs.txt
	tools/buildcost.sh | tee $(BENCH_OUT)/build.txt

## sim: a long run of the simulator: SEEDS generated schedules per shape and every kept one (RACE=1: under the race
## detector). SCHEDULE=file replays one schedule, REPEAT times, with every component's log.
SEEDS ?= 2000
sim:
ifdef SCHEDULE
	SIM_SCHEDULE=$(abspath $(SCHEDULE)) SIM_REPEAT=$(REPEAT) SIM_LOG=1 $(GO) test -count=1 -v -run '^TestSimReplay$$' ./$(SIM_PKG)
else
	$(GO) test $(if $(RACE),-race) -count=1 -timeout 0 -run '^TestSim(Kept|Schedules)$$' ./$(SIM_PKG) -args -rapid.checks=$(SEEDS)
endif

## fuzz: a short coverage-guided run of every fuzz target (the seed corpora run in `make test`); FuzzSimSchedules drives
## the simulator's schedule generator from the fuzzer's bytes, keeping the inputs that reach new code.
fuzz:
	$(GO) test -run XXX -fuzz FuzzDecode -fuzztime 60s ./internal/k8sevent/
	$(GO) test -run XXX -fuzz FuzzConsumeLogs -fuzztime 60s ./processor/eventseriesprocessor/
	$(GO) test -run XXX -fuzz FuzzRestore -fuzztime 60s ./processor/eventseriesprocessor/internal/engine/
	$(GO) test -run XXX -fuzz FuzzSimSchedules -fuzztime 120s ./$(SIM_PKG)/

## apiserver: bin/kube-apiserver and bin/etcd built from the Go module proxy (skipped when present).
apiserver:
	tools/kube/build.sh $(BIN)

## otelcol: bin/otelcol-k8sevents, the distribution of builder-config.yaml (ocb installed into bin/ when missing).
## Always rebuilt (seconds when nothing changed): it compiles this module's components.
OCB_VERSION := v0.161.0
otelcol: $(BIN)/builder
	$(BIN)/builder --config builder-config.yaml
	cp otelcol-k8sevents/otelcol-k8sevents $(BIN)/otelcol-k8sevents

## image: bin/otelcol-k8sevents-image.tar, the distribution as an OCI image index of IMAGE_PLATFORMS, each image with
## its SBOM (SPDX, from the binary's Go build information, attached as docker buildx attaches one), built without a
## container daemon by tools/image (go-containerregistry); also a docker-archive of this machine's platform's image:
## docker load, podman load it, or make push-image. This machine's platform is make otelcol's binary; the others are
## cross-compiled from the sources ocb generated (otelcol-k8sevents/) with ocb's flags, into bin/<os>-<arch>/ (each
## costs about what make otelcol did). The image's tag is the distribution's version (VERSION, builder-config.yaml).
## make test builds this machine's platform alone (image-after-apiserver); tools/image's tests check a two-platform
## index with small binaries.
VERSION := $(shell sed -n 's/^  version: *//p' builder-config.yaml)
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
HOST_PLATFORM := linux/$(shell $(GO) env GOARCH)
IMAGE_TAR := $(BIN)/otelcol-k8sevents-image.tar
image: otelcol
	@set -e; binaries=""; \
	for p in $(IMAGE_PLATFORMS); do \
	  if [ "$$p" = "$(HOST_PLATFORM)" ]; then binaries="-binary $(BIN)/otelcol-k8sevents $$binaries"; continue; fi; \
	  os=$${p%/*}; arch=$${p#*/}; out=$(BIN)/$$os-$$arch/otelcol-k8sevents; \
	  echo "cross-compile the distribution for $$p: $$out"; \
	  (cd otelcol-k8sevents && CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -o $$out .); \
	  binaries="$$binaries -binary $$out"; \
	done; \
	cd tools/image && GOWORK=off $(GO) run . $$binaries -tag otelcol-k8sevents:$(VERSION) -configs $(CURDIR)/testdata/config -out $(IMAGE_TAR)

## push-image: push what make image wrote (the index: every platform's image and SBOM) to IMAGE=registry/repository:tag,
## without a daemon (credentials as docker login stores them), and print the digest the registry serves for it, alone
## on standard output: pin the image by it (docs/deploy.md "Images by digest").
.PHONY: push-image
push-image:
	@if [ -z "$(IMAGE)" ]; then echo "usage: make push-image IMAGE=registry/repository:tag (after make image)" >&2; exit 2; fi
	@cd tools/image && GOWORK=off $(GO) run . push -in $(IMAGE_TAR) -image $(IMAGE)

## deploy: deploy/*.yaml rendered from the Helm chart deploy/helm/otel-k8sevents with deploy/helm/deploy-values.yaml
## (tools/helm, Helm's Go library; TestHelmDeployIsGenerated fails while deploy/ differs from it). Its image has a
## digest of zeros, which no image has; make deploy IMAGE=registry/otelcol-k8sevents:0.1.0 DIGEST=sha256:... (what
## make push-image took and printed) renders deploy/ pinned to that image, the chart checking the digest.
deploy:
	cd tools/helm && GOWORK=off $(GO) run . $(if $(IMAGE),-image $(IMAGE)) $(if $(DIGEST),-digest $(DIGEST)) $(CURDIR)

$(BIN)/builder:
	GOBIN=$(BIN) $(GO) install go.opentelemetry.io/collector/cmd/builder@$(OCB_VERSION)

## generate: mdatagen output of every component.
generate:
	$(GO) generate $(PKGS)

## streams: rewrite testdata/streams and their golden outputs.
streams:
	$(GO) run ./internal/harness/storm/gen testdata/streams
	$(GO) test -run TestStreamsGolden -count=1 ./processor/eventseriesprocessor/ -update

## run: the demo on a fresh machine: a local kube-apiserver, the collector, an event storm, before/after.
## CLUSTER=existing reads the cluster of $$KUBECONFIG instead (read-only; WRITE=1 lets the storm write there).
CLUSTER ?= local
run: apiserver otelcol
	$(GO) run ./cmd/k8sevents-demo -bin $(BIN) -cluster $(CLUSTER) $(if $(WRITE),-write) $(ARGS)
