#!/usr/bin/env bash
# Production code must not depend on the test or simulation trees.
#
# Production: the three programs deployed to a cluster and everything under
# pkg/. Forbidden (transitively, `go list -deps`; the chain is printed): the
# trees below. Paths that do not exist (yet) are fine.
#
# Edit the lists here.
set -euo pipefail
cd "$(dirname "$0")/.."

M=github.com/hetsev/hetsev

PRODUCTION=(
	./cmd/scheduler
	./cmd/metrics-adapter
	./cmd/scaler
	./pkg/...
)

# data/traces: the request traces, embedded for the demo and the evaluator
# only; production binaries embed data/profiles. internal/imagebuild and
# go-containerregistry: the image builder of `make images`, build tooling.
# internal/helmchart and Helm's SDK: the Helm chart's tests.
FORBIDDEN=(
	$M/test
	$M/internal/sim
	$M/internal/cluster
	$M/internal/bench
	$M/internal/imagebuild
	$M/internal/helmchart
	$M/data/traces
	github.com/google/go-containerregistry
	helm.sh/helm/v4
)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/importcheck" ./hack/importcheck
if ! "$tmp/importcheck" \
	-roots "${PRODUCTION[*]}" \
	-forbid "${FORBIDDEN[*]}"; then
	echo "verify-imports: production packages depend on test or simulation code (above); move the code or the import" >&2
	exit 1
fi

# The API packages (types, defaults, validation, scheme) depend on no
# domain package: their defaults and names are constants of their own,
# which a test of pkg/plugins/gpushare keeps equal to the domain's.
API_FORBIDDEN=(
	$M/pkg/adapter
	$M/pkg/catalog
	$M/pkg/dra
	$M/pkg/gpuinventory
	$M/pkg/heterogeneity
	$M/pkg/interference
	$M/pkg/placement
	$M/pkg/plugins
	$M/pkg/scaler
	$M/pkg/traffic
	$M/pkg/webhook
)
if ! "$tmp/importcheck" \
	-roots "./pkg/apis/..." \
	-forbid "${API_FORBIDDEN[*]}"; then
	echo "verify-imports: pkg/apis depends on a domain package (above); define the constant in the API package" >&2
	exit 1
fi
