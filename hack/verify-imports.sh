#!/usr/bin/env bash
# Production code must not depend on the test or simulation trees.
#
# Production: the three programs deployed to a cluster and everything under
# pkg/. Forbidden (transitively, `go list -deps`; the chain is printed): the
# trees below. Paths that do not exist (yet) are fine.
#
# Edit the lists here. After the simulation packages move out of pkg/ into
# internal/sim, drop them from SIM_IN_PKG.
set -euo pipefail
cd "$(dirname "$0")/.."

M=github.com/hetsev/hetsev

PRODUCTION=(
	./cmd/scheduler
	./cmd/metrics-adapter
	./cmd/scaler
	./pkg/...
)

FORBIDDEN=(
	$M/test
	$M/internal/sim
	$M/internal/cluster
	$M/internal/bench
)

# Simulation packages still under pkg/ (moving to internal/sim): not
# production themselves, and forbidden to everything that is.
SIM_IN_PKG=(
	$M/pkg/simulator
	$M/pkg/modelserver
	$M/pkg/exporters
	$M/pkg/hpa
	$M/pkg/trace
	$M/pkg/evaluate
	$M/pkg/solverbench
)

# The request traces (data/embed.go embeds them in package data, which the
# scaler needs for the GPU catalog and profiles). Reported, but only fatal
# with VERIFY_EMBEDDED_TRACES=fail; set that (here or in the Makefile) once
# the traces live in a package of their own.
TRACES=(
	$M/data/traces
)
VERIFY_EMBEDDED_TRACES=${VERIFY_EMBEDDED_TRACES:-warn}

forbid=("${FORBIDDEN[@]}" "${SIM_IN_PKG[@]}")
warn=()
case $VERIFY_EMBEDDED_TRACES in
fail) forbid+=("${TRACES[@]}") ;;
warn) warn+=("${TRACES[@]}") ;;
off) ;;
*) echo "VERIFY_EMBEDDED_TRACES must be fail, warn or off, not '$VERIFY_EMBEDDED_TRACES'" >&2; exit 2 ;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/importcheck" ./hack/importcheck
if ! "$tmp/importcheck" \
	-roots "${PRODUCTION[*]}" \
	-skip "${SIM_IN_PKG[*]}" \
	-forbid "${forbid[*]}" \
	-warn "${warn[*]}"; then
	echo "verify-imports: production packages depend on test or simulation code (above); move the code or the import" >&2
	exit 1
fi
