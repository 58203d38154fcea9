#!/usr/bin/env bash
# Prints hetsev's version: the VERSION file at the repository root, plus a
# suffix from git when HEAD is not the tag v<VERSION> or the work tree has
# changes to tracked files:
#   at the tag v0.1.0, clean       0.1.0
#   at the tag, dirty              0.1.0-dirty
#   3 commits past the tag         0.1.0-3-g<sha>          (git describe)
#   no tag v<VERSION>              0.1.0-g<sha>[-dirty]
# Outside a git checkout (a source tarball) it prints VERSION as it is.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

base=$(tr -d '[:space:]' < VERSION)
if [[ ! "$base" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  echo "VERSION: '$base' is not MAJOR.MINOR.PATCH" >&2
  exit 1
fi
if ! git rev-parse --verify -q HEAD >/dev/null 2>&1; then
  echo "$base"
  exit 0
fi
tag="v$base"
if git rev-parse -q --verify "refs/tags/$tag" >/dev/null &&
   git merge-base --is-ancestor "$tag" HEAD; then
  # "v0.1.0", "v0.1.0-dirty" or "v0.1.0-3-g<sha>[-dirty]".
  desc=$(git describe --tags --match "$tag" --dirty --abbrev=12)
  echo "$base${desc#"$tag"}"
else
  echo "$base-g$(git describe --always --dirty --abbrev=12)"
fi
