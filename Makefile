# minisched — the two commands a fresh machine needs are `make start` and
# `make test`; everything else (etcd, kube-apiserver) is built here, once.

SHELL := /usr/bin/env bash
GO ?= go

K8S_VERSION := 1.37.1
BIN := $(CURDIR)/bin
ASSETS := $(BIN)/k8s/$(K8S_VERSION)

# Use KUBEBUILDER_ASSETS from the environment if it is set; otherwise build
# the control plane into bin/k8s/<version>.
ifeq ($(origin KUBEBUILDER_ASSETS),environment)
ENVTEST_BINS :=
else
KUBEBUILDER_ASSETS := $(ASSETS)
ENVTEST_BINS := $(ASSETS)/etcd $(ASSETS)/kube-apiserver
endif
export KUBEBUILDER_ASSETS

# Stamp the version into the control plane so `kubectl version` is honest.
VERSION_LDFLAGS := -s -w \
	-X k8s.io/component-base/version.gitVersion=v$(K8S_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=37 \
	-X k8s.io/component-base/version.gitTreeState=clean

ARGS ?=
comma := ,

KWOK_VERSION := v0.8.0
DESCHEDULER_VERSION := v0.36.0

.PHONY: start test build envtest kube-scheduler kube-controller-manager kwok descheduler prometheus chromium conformance vet bench clean

## start: build, start envtest, run every story (Go and scenarios/*.yaml); CHAPTER=3 (or 1,2) runs a chapter's, with the
## scheduler of that chapter; WEB=:8080 serves the live view of the queues there (docs/web.md) and starts once a page
## is open; STEP=1 (with WEB) stops each cycle before each extension point until Next is pressed in the page;
## ARGS="--scenario ch6-assume" picks (bin/minisched start -h lists the flags)
CHAPTER ?=
WEB ?=
STEP ?=
start: build envtest kwok kube-controller-manager descheduler
	$(BIN)/minisched start $(if $(CHAPTER),--chapter $(CHAPTER)) $(if $(WEB),--web $(WEB)) $(if $(STEP),--step) $(ARGS)

## test: go vet and every test (with the race detector) against a real apiserver; explain/'s test
## also runs the real kube-scheduler, testenv's and the storage tests kube-controller-manager, web/'s
## Chromium; then the kubelet's own eviction ranking on chapter 18's table (hack/tools/kubeletranking)
test: envtest kwok kube-scheduler kube-controller-manager descheduler chromium vet
	$(GO) test -race -count=1 ./...
	cd hack/tools && CGO_ENABLED=0 $(GO) test -count=1 ./kubeletranking/

## build: the minisched binary in bin/
build:
	$(GO) build -o $(BIN)/minisched .

## envtest: etcd and kube-apiserver, built from the Go module proxy (first time only)
envtest: $(ENVTEST_BINS)

$(ASSETS)/etcd:
	@echo "Building etcd and kube-apiserver v$(K8S_VERSION) from source into $(ASSETS) (first time only: several minutes on 2 cores)..."
	@mkdir -p $(ASSETS)
	cd hack/tools && CGO_ENABLED=0 $(GO) build -ldflags '$(VERSION_LDFLAGS)' -o $@ go.etcd.io/etcd/server/v3

$(ASSETS)/kube-apiserver:
	@mkdir -p $(ASSETS)
	cd hack/tools && CGO_ENABLED=0 $(GO) build -ldflags '$(VERSION_LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/kube-apiserver

## kwok: KWOK, which plays the kubelet for scenarios that need pods to run and terminate (first time only)
kwok: $(BIN)/kwok

# `go install pkg@version` builds it outside our go.mod; its stage files stay
# in the module cache, where testenv/kwok.go finds them.
$(BIN)/kwok:
	@mkdir -p $(BIN)
	GOBIN=$(BIN) $(GO) install sigs.k8s.io/kwok/cmd/kwok@$(KWOK_VERSION)

## descheduler: sigs.k8s.io/descheduler $(DESCHEDULER_VERSION), built from its module source against k8s.io v$(K8S_VERSION)
## (hack/descheduler; first time only), for chapter 18's descheduler story
descheduler: $(BIN)/descheduler

# hack/descheduler/go.mod pins the version (and says why `go install` can't);
# the -X stamps it so `descheduler version` is honest.
$(BIN)/descheduler:
	@mkdir -p $(BIN)
	cd hack/descheduler && CGO_ENABLED=0 $(GO) build -ldflags '-s -w -X sigs.k8s.io/descheduler/pkg/version.version=$(DESCHEDULER_VERSION)' -o $@ sigs.k8s.io/descheduler/cmd/descheduler

## prometheus: the Prometheus server that annotator/'s test queries (Debian's package; skipped if on PATH)
prometheus:
	@command -v prometheus >/dev/null || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y prometheus)

## chromium: the browser web/'s test drives the live view in (Debian's package; skipped if on PATH)
chromium:
	@command -v chromium >/dev/null || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium)

## kube-scheduler: the reference scheduler, built like kube-apiserver, to compare decisions with
kube-scheduler: $(ASSETS)/kube-scheduler

$(ASSETS)/kube-scheduler:
	@mkdir -p $(ASSETS)
	cd hack/tools && CGO_ENABLED=0 $(GO) build -ldflags '$(VERSION_LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/kube-scheduler

## kube-controller-manager: the real PV binder, PV/PVC protection and ephemeral-volume controllers, which
## testenv starts beside envtest for the storage stories and tests (built like kube-apiserver, first time only)
kube-controller-manager: $(ASSETS)/kube-controller-manager

$(ASSETS)/kube-controller-manager:
	@mkdir -p $(ASSETS)
	cd hack/tools && CGO_ENABLED=0 $(GO) build -ldflags '$(VERSION_LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/kube-controller-manager

## conformance: every differential case, minisched against kube-scheduler on fresh apiservers; four cases at
## a time: a case waits more than it computes (apiservers starting, a 2 s quiet window), so on 2 cores four
## take 959 s where two took 1456 s (the whole suite, 2026-11-28)
conformance: build envtest kube-scheduler kube-controller-manager
	MINISCHED=$(BIN)/minisched KUBE_SCHEDULER=$(ASSETS)/kube-scheduler \
		KUBE_CONTROLLER_MANAGER=$(ASSETS)/kube-controller-manager \
		$(GO) test -tags conformance -count=1 -timeout 60m -parallel 4 ./conformance/ $(if $(CASES),-run 'TestConformance/($(subst $(comma),|,$(CASES)))$$',)

vet:
	$(GO) vet ./...
	$(GO) vet -tags conformance ./conformance/

## bench: minisched against the real kube-scheduler on scheduler_perf-like workloads, side by side
## (hack/bench; results in bench/results and docs/performance.md). ARGS="--rounds 5 --workloads
## SchedulingBasic-500" picks; SMOKE=1 runs its unit tests and tiny sizes once, for CI (results in /tmp)
bench: build envtest kube-scheduler kube-controller-manager
	cd hack/bench && $(GO) build -o $(BIN)/bench .
ifneq ($(SMOKE),)
	cd hack/bench && $(GO) vet ./... && $(GO) test -count=1 ./...
	KUBE_CONTROLLER_MANAGER=$(ASSETS)/kube-controller-manager $(BIN)/bench --root $(CURDIR) --smoke $(ARGS)
else
	KUBE_CONTROLLER_MANAGER=$(ASSETS)/kube-controller-manager $(BIN)/bench --root $(CURDIR) --docs $(CURDIR)/docs/performance.md $(ARGS)
endif

.PHONY: chaos
## chaos: a seeded chaos run against envtest (nodes, pods, priorities, preemption, another binder, pod groups,
## volumes, device claims; scheduler kills, apiserver restarts, 409/500 answers) with invariants checked
## during, once settled and at the end; CHAOS_SEED=<n> replays a run's operations, CHAOS_OPS and CHAOS_TIME
## lengthen it (a new seed each time by default), CHAOS_ONLY=op,op draws only those operations
ifeq ($(origin CHAOS_SEED),undefined)
CHAOS_SEED := $(shell date +%s)
endif
CHAOS_OPS ?= 1000
CHAOS_TIME ?= 10m
chaos: envtest
	@echo "chaos run: CHAOS_SEED=$(CHAOS_SEED) CHAOS_OPS=$(CHAOS_OPS)"
	CHAOS_SEED=$(CHAOS_SEED) CHAOS_OPS=$(CHAOS_OPS) CHAOS_TIME=$(CHAOS_TIME) CHAOS_ONLY=$(CHAOS_ONLY) \
		$(GO) test -race -count=1 -timeout 30m -run TestChaos -v ./internal/chaos/

.PHONY: fuzz
## fuzz: the queue's and the cache's fuzzers, FUZZTIME each (go test -fuzz takes one package and one
## target per run; the first run builds everything with coverage instrumentation, which takes minutes)
FUZZTIME ?= 20s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzQueue$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./queue/
	$(GO) test -run '^$$' -fuzz '^FuzzQueuePodGroups$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./queue/
	$(GO) test -run '^$$' -fuzz '^FuzzCacheSnapshot$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./cache/

.PHONY: image
## image: the container image deploy/ runs (needs docker)
image:
	docker build -f deploy/Dockerfile -t minisched:latest .

.PHONY: bench-go
## bench-go: the in-process benchmarks of the queue, the cache and the scheduling cycle
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem ./queue/ ./cache/ ./minisched/...

clean:
	rm -rf $(BIN)
