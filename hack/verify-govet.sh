#!/usr/bin/env bash
# Fails when go vet finds a problem in any package of the module.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! go vet ./... || ! go vet -tags e2e ./test/e2e/; then
	echo "verify-govet: go vet ./... failed (above)" >&2
	exit 1
fi
echo "verify-govet: go vet ./... passed"
