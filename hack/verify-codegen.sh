#!/usr/bin/env bash
# Fails when a generated file (see hack/update-codegen.sh) is stale: runs
# the generators in a copy of the working tree (tracked and untracked files,
# not ignored ones) and compares. The working tree is never written.
set -euo pipefail
cd "$(dirname "$0")/.."

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git ls-files -z --cached --others --exclude-standard |
	while IFS= read -r -d '' f; do [[ -e $f ]] && printf '%s\0' "$f"; done |
	tar --null -T - -cf - | tar -xf - -C "$tmp"

if ! (cd "$tmp" && hack/update-codegen.sh >/dev/null); then
	echo "verify-codegen: hack/update-codegen.sh failed" >&2
	exit 1
fi

stale=()
while IFS= read -r -d '' f; do
	f=${f#"$tmp"/}
	if ! cmp -s "$tmp/$f" "$f"; then
		stale+=("$f")
	fi
done < <(find "$tmp" -type f -print0)

if ((${#stale[@]})); then
	for f in "${stale[@]}"; do
		diff -u --label "$f (working tree)" --label "$f (generated)" "$f" "$tmp/$f" 2>/dev/null | head -40 ||
			[[ -e $f ]] || echo "$f: missing from the working tree"
	done
	echo "verify-codegen: generated files are stale: ${stale[*]}" >&2
	echo "verify-codegen: run \`make generate\` and commit the result" >&2
	exit 1
fi
echo "verify-codegen: generated files are up to date"
