#!/usr/bin/env bash
# `make verify` (run by .ci/run before `make test`): every hack/verify-*.sh
# check, each timed; all run even when one fails, and the summary names the
# failures. Run one alone with hack/verify-<name>.sh.
set -uo pipefail
cd "$(dirname "$0")/.."

CHECKS=(gofmt govet codegen imports)

failed=()
total_start=$SECONDS
for c in "${CHECKS[@]}"; do
	start=$SECONDS
	echo "=== verify-$c"
	if hack/verify-"$c".sh; then
		echo "--- verify-$c: ok ($((SECONDS - start)) s)"
	else
		echo "--- verify-$c: FAILED ($((SECONDS - start)) s)"
		failed+=("$c")
	fi
done
if ((${#failed[@]})); then
	echo "verify: FAILED: ${failed[*]} ($((SECONDS - total_start)) s; see the output above)" >&2
	exit 1
fi
echo "verify: all checks passed ($((SECONDS - total_start)) s)"
