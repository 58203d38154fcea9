#!/usr/bin/env bash
# Builds what each real node of `make e2e` runs, at pinned versions, into
# bin/ (make e2e-binaries):
#   bin/kubelet                   k8s.io/kubernetes/cmd/kubelet at the
#                                 main module's k8s.io/kubernetes version
#                                 (go.mod, with its replace directives)
#   bin/containerd, bin/ctr,      github.com/containerd/containerd/v2 at the
#   bin/containerd-shim-runc-v2   version of hack/e2e/node/go.mod, a tools
#                                 module of its own so the main module
#                                 does not carry containerd's dependencies;
#                                 CGO_ENABLED=0 and tag no_btrfs (no btrfs
#                                 headers needed; the nodes use overlayfs)
#   bin/kube-proxy                k8s.io/kubernetes/cmd/kube-proxy, as the
#                                 kubelet: each node runs one in its
#                                 namespace, so pods reach Services
#   bin/hetsev-e2e-draplugin      the simulated NVIDIA DRA kubelet plugin
#                                 each node runs (hack/e2e/draplugin)
#   bin/e2e-images/pause-1.oci.tar
#                                 the CRI sandbox image, localhost:5000/hetsev-e2e/pause:v1
#                                 (hack/e2e/pause through hack/images)
#   bin/e2e-images/hetsev-*-<VERSION>.oci.tar
#                                 hetsev's three images as `make images`
#                                 builds them, for the nodes' platform, at
#                                 the VERSION file's version: the tag the
#                                 Helm chart installs by default
# A binary is rebuilt only when its stamp, bin/<name>.version (version, Go
# toolchain, build flags), differs from what this run would build, so a
# second run costs seconds; the Go build cache keeps a rebuild after a
# toolchain change short too. Builds run under nice (E2E_NICE, default 19)
# so they yield to whatever else the machine runs. Prints each build's
# wall time.
#
# Environment: GO (go command), HETSEV_BIN (output directory, default
# bin/), E2E_NICE.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
root=$PWD

GO=${GO:-go}
BIN=${HETSEV_BIN:-$root/bin}
NICE=(nice -n "${E2E_NICE:-19}")
export GOFLAGS=-buildvcs=false
mkdir -p "$BIN"

goversion=$("$GO" env GOVERSION)

# build NAME STAMP CMD...: runs CMD unless bin/NAME and its stamp exist and
# the stamp reads STAMP; records STAMP after a successful build.
build() {
	local name=$1 stamp=$2
	shift 2
	local file="$BIN/$name.version"
	if [[ -x $BIN/$name && -f $file && "$(<"$file")" == "$stamp" ]]; then
		echo "build-node: $name up to date ($stamp)"
		return 0
	fi
	rm -f "$file"
	local start=$SECONDS
	"${NICE[@]}" "$@"
	echo "$stamp" >"$file"
	echo "build-node: built $name in $((SECONDS - start)) s ($stamp)"
}

# kubelet and kube-proxy: their version linked in as the Kubernetes release
# scripts do, so the Node's status.nodeInfo (kubeletVersion) and --version
# name the release instead of v0.0.0-master.
kube=$("$GO" list -m -f '{{.Version}}' k8s.io/kubernetes)
if [[ ! $kube =~ ^v([0-9]+)\.([0-9]+)\.[0-9]+$ ]]; then
	echo "build-node: k8s.io/kubernetes $kube in go.mod is not a release vX.Y.Z" >&2
	exit 1
fi
cb=k8s.io/component-base/version
kube_ldflags="-X $cb.gitVersion=$kube -X $cb.gitMajor=${BASH_REMATCH[1]} -X $cb.gitMinor=${BASH_REMATCH[2]} -X $cb.gitTreeState=clean"
for cmd in kubelet kube-proxy; do
	build "$cmd" "$cmd $kube $goversion" \
		"$GO" build -ldflags "$kube_ldflags" -o "$BIN/$cmd" "k8s.io/kubernetes/cmd/$cmd"
done

# containerd, its ctr client (`ctr -n k8s.io images import`) and the runc
# shim containerd starts per pod sandbox, from one pinned module version.
node=$root/hack/e2e/node
ctrd=$("$GO" -C "$node" list -m -f '{{.Version}}' github.com/containerd/containerd/v2)
cv=github.com/containerd/containerd/v2/version
ctrd_ldflags="-X $cv.Version=$ctrd "
for cmd in containerd containerd-shim-runc-v2 ctr; do
	build "$cmd" "$cmd $ctrd $goversion cgo=0 tags=no_btrfs" \
		env CGO_ENABLED=0 "$GO" -C "$node" build -tags no_btrfs -ldflags "$ctrd_ldflags" \
		-o "$BIN/$cmd" "github.com/containerd/containerd/v2/cmd/$cmd"
done

# The simulated DRA kubelet plugin, built from this repository: its stamp
# hashes go.mod, go.sum and the main module's Go and embedded files the
# program is built from, so an edit to any of them rebuilds it.
draplugin=./hack/e2e/draplugin
srcs=$("$GO" list -deps -f '{{if and .Module .Module.Main}}{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}{{range .EmbedFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}{{end}}' "$draplugin")
src_hash=$(sort <<<"$srcs" | xargs -d '\n' sha256sum go.mod go.sum | sed "s|  $root/|  |" | sha256sum | cut -c1-16)
build hetsev-e2e-draplugin "hetsev-e2e-draplugin src=$src_hash $goversion" \
	"$GO" build -o "$BIN/hetsev-e2e-draplugin" "$draplugin"

# The pause and model-server images for the nodes' platform only.
# Deterministic (fixed version and timestamps), so rebuilding them each run
# gives the same digests.
start=$SECONDS
SOURCE_DATE_EPOCH=0 "${NICE[@]}" "$GO" run ./hack/images --programs pause,e2e-modelserver \
	--version 1 --registry localhost:5000/hetsev-e2e \
	--platforms "linux/$("$GO" env GOARCH)" --out "$BIN/e2e-images"
echo "build-node: built the pause and model-server images in $((SECONDS - start)) s"

# hetsev's images, as `make images` builds them (ghcr.io/hetsev/<program>,
# tag v<VERSION>), for the nodes' platform only.
start=$SECONDS
version=$(tr -d '[:space:]' <VERSION)
rm -f "$BIN"/e2e-images/hetsev-*.oci.tar
SOURCE_DATE_EPOCH=0 "${NICE[@]}" "$GO" run ./hack/images --version "$version" \
	--platforms "linux/$("$GO" env GOARCH)" --out "$BIN/e2e-images"
echo "build-node: built hetsev's images in $((SECONDS - start)) s"
