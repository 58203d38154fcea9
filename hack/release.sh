#!/usr/bin/env bash
# make release: every artifact of a hetsev release under
# $RELEASE_DIR/v<VERSION> (default _output/release), all of one version, the
# VERSION file's (not hack/version.sh's git suffix: the chart, the
# manifests and the images must name the same tag):
#
#   images/<program>-<VERSION>.oci.tar   multi-arch OCI archives (make images)
#   <program>-<VERSION>.spdx.json        an SPDX 2.3 SBOM per image (hack/sbom)
#   hetsev-<VERSION>.tgz                 the Helm chart (helm package)
#   hetsev-<VERSION>.yaml                kustomize build manifests/ (annotation mode)
#   hetsev-dra-<VERSION>.yaml            kustomize build overlays/dra (DRA mode)
#   kubectl-hetsev_<os>_<arch>.tar.gz    the kubectl plugin per $PLUGIN_PLATFORMS
#   kubectl-hetsev.krew.yaml             its krew manifest (URLs under $PLUGIN_URL)
#   RELEASE-NOTES.md                     what is in it, image digests, how to install
#   SHA256SUMS                           the checksum of every file above
#
# With REGISTRY set it also pushes the images to $REGISTRY/<program>:v<VERSION>
# and the chart to oci://$REGISTRY/charts (helm push; REGISTRY_PLAIN_HTTP=1
# for a registry without TLS, such as one on 127.0.0.1). A work tree with
# changes to tracked files is refused (RELEASE_ALLOW_DIRTY=1 allows it, for
# tests); RELEASE_IMAGES=0 leaves out the images (about 25 minutes cold on
# two cores) and their digests. Needs bin/helm and bin/kubectl (make build).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
BIN=${BIN:-$PWD/bin}

version=$(tr -d '[:space:]' < VERSION)
if [[ ! $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
	echo "release: VERSION '$version' is not MAJOR.MINOR.PATCH" >&2
	exit 1
fi
if [[ -z ${RELEASE_ALLOW_DIRTY:-} ]] && git rev-parse -q HEAD >/dev/null 2>&1 &&
	[[ -n $(git status --porcelain --untracked-files=no) ]]; then
	echo "release: the work tree has changes to tracked files; commit them first" >&2
	exit 1
fi
out=${RELEASE_DIR:-_output/release}/v$version
rm -rf "$out"
mkdir -p "$out"
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
export SOURCE_DATE_EPOCH=$epoch

# The chart, versioned as the release (its Chart.yaml already says VERSION;
# internal/helmchart's tests keep them equal).
"$BIN/helm" package charts/hetsev --version "$version" --app-version "$version" -d "$out" >/dev/null
# The manifests, as kubectl apply -f takes them.
"$BIN/kubectl" kustomize manifests >"$out/hetsev-$version.yaml"
"$BIN/kubectl" kustomize overlays/dra >"$out/hetsev-dra-$version.yaml"
"$GO" run ./hack/sbom --version "$version" --out "$out" >/dev/null

# kubectl hetsev per platform, a static binary with the licence in a
# reproducible archive (sorted, owner 0, the commit's time, gzip without a
# name or time), and the krew manifest that installs it from $PLUGIN_URL.
plugin_platforms=${PLUGIN_PLATFORMS-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
plugin_url=${PLUGIN_URL:-https://github.com/hetsev/hetsev/releases/download/v$version}
plugin_tmp=$(mktemp -d)
trap 'rm -rf "$plugin_tmp"' EXIT
krew_platforms=""
for platform in $plugin_platforms; do
	os=${platform%/*} arch=${platform#*/}
	dir=$plugin_tmp/${os}_$arch
	mkdir -p "$dir"
	# shellcheck disable=SC2086 # PLUGIN_BUILDFLAGS is a list of flags
	CGO_ENABLED=${PLUGIN_CGO_ENABLED:-0} GOOS=$os GOARCH=$arch "$GO" build ${PLUGIN_BUILDFLAGS--trimpath -buildvcs=false} \
		-ldflags "-s -w -X github.com/hetsev/hetsev/pkg/version.Version=v$version" -o "$dir/kubectl-hetsev" ./cmd/kubectl-hetsev
	cp LICENSE "$dir/LICENSE"
	touch -d "@$epoch" "$dir/kubectl-hetsev" "$dir/LICENSE"
	archive=kubectl-hetsev_${os}_$arch.tar.gz
	tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner -C "$dir" -cf - LICENSE kubectl-hetsev | gzip -n -9 >"$out/$archive"
	krew_platforms+="  - selector:
      matchLabels:
        os: $os
        arch: $arch
    uri: $plugin_url/$archive
    sha256: $(sha256sum "$out/$archive" | cut -d' ' -f1)
    bin: kubectl-hetsev
"
done
if [[ -n $krew_platforms ]]; then
	cat >"$out/kubectl-hetsev.krew.yaml" <<KREW
apiVersion: krew.googlecontainers.github.com/v1alpha2
kind: Plugin
metadata:
  name: hetsev
spec:
  version: v$version
  homepage: https://github.com/hetsev/hetsev
  shortDescription: Inspect hetsev's GPU sharing and scaling; profile model servers
  description: |
    kubectl hetsev answers day-two questions about hetsev, the GPU
    inference scheduler and autoscaler: who shares which GPU and how much
    it slows them (gpus), where a pod runs and why (explain pod), the
    scaler's last decision (explain modelservice), what a trace would cost
    (what-if), and measures a running model server for a ModelService's
    GPU profile (profile).
  platforms:
$krew_platforms
KREW
fi

digests=""
if [[ ${RELEASE_IMAGES:-1} != 0 ]]; then
	digests=$("$GO" run ./hack/images --version "$version" --out "$out/images")
fi

notes=$out/RELEASE-NOTES.md
{
	echo "# hetsev v$version"
	echo
	echo "Built from commit $(git rev-parse HEAD 2>/dev/null || echo unknown); every artifact carries version $version."
	echo
	echo "## Install"
	echo
	echo '```sh'
	echo "helm install hetsev oci://REGISTRY/charts/hetsev --version $version   # or: helm install hetsev hetsev-$version.tgz"
	echo "kubectl apply --server-side -f hetsev-$version.yaml                   # or the DRA mode: hetsev-dra-$version.yaml"
	echo '```'
	echo
	echo "Images (linux/amd64 and linux/arm64), each with an SPDX SBOM:"
	echo
	for p in hetsev-scheduler hetsev-metrics-adapter hetsev-scaler; do
		echo "- ghcr.io/hetsev/$p:v$version ($p-$version.spdx.json)"
	done
	if [[ -n $krew_platforms ]]; then
		echo
		echo "The kubectl plugin, \`kubectl hetsev\`, per platform (kubectl-hetsev_<os>_<arch>.tar.gz): \`kubectl krew install --manifest=kubectl-hetsev.krew.yaml\`."
	fi
	if [[ -n $digests ]]; then
		echo
		echo "Index digests (make images):"
		echo
		echo '```'
		echo "$digests"
		echo '```'
	fi
	prev=$(git describe --tags --abbrev=0 --match 'v*' HEAD^ 2>/dev/null || true)
	if [[ -n $prev ]]; then
		echo
		echo "## Changes since $prev"
		echo
		git log --no-merges --format='- %s' "$prev..HEAD"
	fi
	echo
	echo "Verify the files with \`sha256sum -c SHA256SUMS\`."
} >"$notes"

(cd "$out" && find . -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort | xargs sha256sum >SHA256SUMS)

if [[ -n ${REGISTRY:-} ]]; then
	if [[ ${RELEASE_IMAGES:-1} != 0 ]]; then
		"$GO" run ./hack/images --version "$version" --out "$out/images" --push "$REGISTRY"
	fi
	"$BIN/helm" push ${REGISTRY_PLAIN_HTTP:+--plain-http} "$out/hetsev-$version.tgz" "oci://$REGISTRY/charts"
fi
echo "release: v$version in $out"
