#!/usr/bin/env bash
# Runs `go test "$@"` with its output kept in a log, and on failure repeats
# the failing tests' names, their messages and any panic at the end: the
# integration tests' control planes log thousands of lines, and the end of
# a CI log is what gets read.
set -uo pipefail
log=$(mktemp -t hetsev-go-test.XXXXXX)
trap 'rm -f "$log"' EXIT
"${GO:-go}" test "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
	echo
	echo "=== go test failed (exit $rc); failing tests and their messages:"
	grep -E -- '^[[:space:]]*--- FAIL|^FAIL|^panic:|^[[:space:]]+[A-Za-z0-9_./-]+_test\.go:[0-9]+:|^[[:space:]]*Error Trace:|^[[:space:]]*Error:' "$log" | tail -n 80
fi
exit "$rc"
