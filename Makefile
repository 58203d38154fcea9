# hetsev: `make demo` runs the main job, `make test` the tests.
# Binaries that import k8s.io/kubernetes take ~5 min to build cold on 2 cores;
# the Go build cache keeps later builds to seconds, and `go build -o` leaves
# an up-to-date binary alone.
GO      ?= go
BIN     := $(CURDIR)/bin
export GOFLAGS := -buildvcs=false
export HETSEV_BIN := $(BIN)

PROGRAMS := hetsev-scheduler hetsev-metrics-adapter hetsev-scaler hetsev-demo kwok

# hetsev's version: the VERSION file, plus git's suffix when HEAD is not the
# tag v<VERSION> or the tree is dirty (hack/version.sh). Linked into every
# program (pkg/version; --version and the start-up log print it) and the
# images' tag v$(VERSION).
VERSION := $(shell hack/version.sh)
VERSION_LDFLAGS := -X github.com/hetsev/hetsev/pkg/version.Version=$(VERSION)
# Every timestamp in the images: the last commit's time (0 outside git).
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)

.PHONY: all build demo evaluate test unit integration prometheus bench-scaler bench-scheduler bench-adapter fuzz kind-e2e images push release vet generate verify clean interference-check serving-check interference-fit e2e-binaries e2e e2e-clean

all: build

build:
	@mkdir -p $(BIN)
	$(GO) build -ldflags "$(VERSION_LDFLAGS)" -o $(BIN)/hetsev-scheduler ./cmd/scheduler
	$(GO) build -ldflags "$(VERSION_LDFLAGS)" -o $(BIN)/hetsev-metrics-adapter ./cmd/metrics-adapter
	$(GO) build -ldflags "$(VERSION_LDFLAGS)" -o $(BIN)/hetsev-scaler ./cmd/scaler
	$(GO) build -ldflags "$(VERSION_LDFLAGS)" -o $(BIN)/hetsev-demo ./cmd/demo
	@# The kubectl plugin (`kubectl hetsev`): copy it onto PATH.
	$(GO) build -ldflags "$(VERSION_LDFLAGS)" -o $(BIN)/kubectl-hetsev ./cmd/kubectl-hetsev
	$(GO) build -o $(BIN)/kwok sigs.k8s.io/kwok/cmd/kwok
	@# kubectl for the install guide (docs/install.md), run by test/integration;
	@# its version is the k8s.io/kubernetes module's (kubectl version).
	$(GO) build -ldflags "-X k8s.io/component-base/version.gitVersion=$$($(GO) list -m -f '{{.Version}}' k8s.io/kubernetes)" -o $(BIN)/kubectl k8s.io/kubernetes/cmd/kubectl
	@# The helm CLI of the helm.sh/helm/v4 module the chart tests render
	@# with, for test/integration's install, upgrade, rollback and uninstall.
	$(GO) build -o $(BIN)/helm helm.sh/helm/v4/cmd/helm
	@# Istio's own CRDs, from the istio.io/api module the scaler is built with,
	@# installed on the local API server by the demo and the tests.
	cp -f "$$($(GO) list -m -f '{{.Dir}}' istio.io/api)/kubernetes/customresourcedefinitions.gen.yaml" $(BIN)/istio-crds.yaml
	@chmod u+w $(BIN)/istio-crds.yaml

# The main job: local control plane, HetSev's GPU testbed, the three programs
# and a trace replay; prints one line per interval and a summary, and writes
# demo-summary.json. DEMO_ARGS passes flags, e.g. --gpu-mode=dra (GPU access
# through ResourceClaims allocated by hetsev-scheduler, with a claim audit in
# the summary) or --solver=exact.
DEMO_ARGS ?=
demo: build
	$(BIN)/hetsev-demo --summary demo-summary.json $(DEMO_ARGS)

# Replay the repo's 7-day Twitter trace (ResNet-50 and SSD), the Azure
# LLM code trace (BERT-large) and the Azure Functions workloads under
# every peer and hetsev: each peer searched for its best setting (target,
# HPA sync period, Knative's stable window), hetsev-exact as hetsev-scaler
# ships (its defaults), five arrival seeds, the headline again with each
# co-location slowdown's excess over 1 at 1.25x and 1.5x what the model the
# decisions read predicts (--interference-truth), a table per trace,
# evaluation/evaluation.json, PNGs and RESULT lines. hetsev's policies
# replay with hetsev-scaler's defaults (model thresholds, the seasonal
# forecast, the instance flavors); its non-default flags (--replacement,
# --consolidation) add a labelled hetsev-exact+flags row, never the
# headline.
# EVALUATE_ARGS passes flags, e.g. --seeds=1 --replays=azure-code for a
# quick iteration, or the what-if mode's --trace.
EVALUATE_ARGS ?=
evaluate:
	$(GO) run ./cmd/evaluate --out evaluation --seeds 5 --interference-truth 1.25,1.5 $(EVALUATE_ARGS)

# The co-location model (pkg/interference) against a measurement file of
# data/measurements/gpu-colocation-h100: predicted against measured latency
# inflation per co-located member, and a RESULT line.
MEASUREMENTS ?= data/measurements/gpu-colocation-h100/timeslice-cudagraph.json
interference-check:
	$(GO) run ./cmd/interference-check $(MEASUREMENTS)

# The simulated model servers with the co-location model, run by the replay
# engine as the demo and the evaluator run them, against an open-loop file
# of data/measurements/gpu-serving-h100 (pass it as MEASUREMENTS): the SLO
# latency model's p98 for the members that ran alone, p50 and p98 per
# member, the SharedGPU co-simulation's MAPE for comparison, and the
# engine's RESULT line.
serving-check:
	$(GO) run ./cmd/serving-check $(MEASUREMENTS)

# Refit pkg/interference's coefficients to the three co-location files and
# write them to pkg/interference/fitted.go (refused when a mode's
# cross-validated bias is below calibration.MinBias).
interference-fit:
	$(GO) run ./hack/interference-fit data/measurements/gpu-colocation-h100/*.json

# Unit tests, then integration tests against a real kube-apiserver, etcd and
# kube-controller-manager with the binaries built above, and a real
# Prometheus (installed by `make prometheus` when missing).
test: build unit prometheus integration

# The unit tests run under the race detector: the scheduler plugins, the
# scaler and the adapter's scrape loop are concurrent code.
unit:
	GO=$(GO) hack/go-test.sh -race -count=1 ./pkg/... ./cmd/... ./internal/... ./data/...

# The in-process kube-apiserver reports the k8s.io/kubernetes module's
# version, as a release build does (a library build says v0.0.0-master,
# which helm install refuses against the chart's kubeVersion).
integration:
	GO=$(GO) hack/go-test.sh -count=1 -p 1 -timeout 20m \
		-ldflags "-X k8s.io/component-base/version.gitVersion=$$($(GO) list -m -f '{{.Version}}' k8s.io/kubernetes)" ./test/...

# Debian's prometheus package (2.42), for the adapter's Prometheus-backend
# tests and bench-adapter; installed only when no prometheus is on PATH, and
# never started as a service (the tests start their own on 127.0.0.1).
prometheus:
	@hack/install-prometheus.sh

# hetsev-metrics-adapter's Prometheus backend: p50/p99 of listing
# requests_per_second for 1,000 pods through the APIService, against the
# kube-apiserver listing the same pods; ends with a RESULT line.
bench-adapter: build prometheus
	$(GO) run ./cmd/bench-adapter

# Heuristic against the exact ILP solver on 10,000+ seeded decisions; ends
# with a RESULT line.
bench-scaler:
	$(GO) run ./cmd/bench-scaler

# hetsev-scheduler against the default scheduler profile on a local control
# plane: 500 nodes with 4 GPUs, 5,000 pending pods per profile, three rounds
# each; prints a table and ends with a RESULT line.
bench-scheduler: build
	$(GO) run ./cmd/bench-scheduler

# Fuzz the parsers of pod annotations and GFD node labels (their seed corpora
# in pkg/gpuinventory/testdata/fuzz run in every `make test`).
FUZZTIME ?= 20s
fuzz:
	for f in FuzzParseDemand FuzzParseNodeGPUs FuzzParseGPUIndex; do \
	  $(GO) test ./pkg/gpuinventory -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) || exit 1; \
	done

# hetsev on a real (kind) cluster: builds the images, creates the cluster of
# kind-config/cluster.yaml, applies manifests/ and checks placement and
# admission. Needs Docker, kind and kubectl; never run on CI (no Docker).
kind-e2e:
	kind-config/e2e.sh --build

# OCI images of hetsev-scheduler, hetsev-metrics-adapter and hetsev-scaler
# for linux/amd64 and linux/arm64, built without a container engine or a
# base image (hack/images, internal/imagebuild): static binaries, user
# 65532, reproducible (the same tree gives the same digests). Writes
# images/<program>-$(VERSION).oci.tar, OCI image layout tarballs naming
# ghcr.io/hetsev/<program>:v$(VERSION): `podman load -i FILE`,
# `skopeo copy oci-archive:FILE docker://...`.
images:
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) GO=$(GO) $(GO) run ./hack/images --version $(VERSION) --out images

# Push the images of `make images` to $(REGISTRY)/<program>:v$(VERSION), e.g.
# make push REGISTRY=registry.example.com/hetsev; credentials from the Docker
# config (~/.docker/config.json, as `docker login` or `crane auth login`
# write it).
REGISTRY ?=
push:
	@if [ -z "$(REGISTRY)" ]; then echo "make push: set REGISTRY, e.g. make push REGISTRY=registry.example.com/hetsev" >&2; exit 2; fi
	$(MAKE) images
	$(GO) run ./hack/images --version $(VERSION) --out images --push $(REGISTRY)

# A release under _output/release/v$(cat VERSION): images with an SPDX SBOM
# each, the chart (.tgz), the manifests as one file per GPU mode, release
# notes and SHA256SUMS, every one of the VERSION file's version
# (hack/release.sh); REGISTRY=... also pushes the images and the chart
# (oci://REGISTRY/charts).
release: build
	GO=$(GO) BIN=$(BIN) REGISTRY=$(REGISTRY) hack/release.sh

# What each real node of the coming `make e2e` runs, built at pinned
# versions into bin/ (hack/e2e/build-node.sh): kubelet (k8s.io/kubernetes
# of go.mod), containerd, containerd-shim-runc-v2 and ctr (the version of
# hack/e2e/node/go.mod), and the pause image bin/e2e-images/pause-1.oci.tar
# the CRI sandbox image is pinned to. A binary whose recorded version
# (bin/<name>.version) matches is not rebuilt. Changes nothing on the host.
e2e-binaries:
	GO=$(GO) HETSEV_BIN=$(BIN) hack/e2e/build-node.sh

# hetsev on real kubelets (test/e2e/README.md): needs root; creates a
# bridge and network namespaces, and undoes every host change when it
# ends, fails or is interrupted. e2e-clean undoes what a killed run left.
e2e: build e2e-binaries
	hack/e2e/run.sh

e2e-clean:
	hack/e2e/teardown.sh

vet:
	$(GO) vet ./...

# Regenerate generated files: the ModelService CRD (manifests/
# crd-modelservice.yaml) and its zz_generated.deepcopy.go from the kubebuilder
# markers in pkg/apis/v1alpha1 (controller-gen), and the plugins' args'
# deepcopy, conversion and defaulting code in pkg/apis/config
# (k8s.io/code-generator); both fetched through the Go module proxy.
generate:
	GO=$(GO) hack/update-codegen.sh

# Checks CI runs before `make test`: gofmt, go vet, generated files up to
# date, and no production package (cmd/scheduler, cmd/metrics-adapter,
# cmd/scaler, pkg/) importing test, simulation or benchmark code, or
# embedding the request traces (hack/verify-*.sh).
verify:
	hack/verify.sh

clean:
	rm -rf $(BIN) demo-summary.json evaluation images
