#!/usr/bin/env bash
# Fails when a Go file (tracked, or untracked and not ignored) is not gofmt'ed.
set -euo pipefail
cd "$(dirname "$0")/.."
files=()
while IFS= read -r -d '' f; do
	[[ -e $f ]] && files+=("$f")
done < <(git ls-files -z --cached --others --exclude-standard -- '*.go')
bad=$(gofmt -l "${files[@]}")
if [[ -n $bad ]]; then
	echo "$bad"
	echo "verify-gofmt: the files above are not formatted; run: gofmt -w <file>" >&2
	exit 1
fi
echo "verify-gofmt: ${#files[@]} files formatted"
