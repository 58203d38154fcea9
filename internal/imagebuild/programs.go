// Package imagebuild builds hetsev's container images without a container
// engine or a base image: static Go binaries for linux/amd64 and
// linux/arm64, laid into tar layers written here (binary, /etc/passwd and
// /etc/group for the user nonroot 65532, CA certificates where a program
// makes TLS client calls), one OCI image per platform and an OCI image
// index per program, written as an OCI image layout tarball or pushed to a
// registry with go-containerregistry. Everything that goes into a digest is
// fixed (timestamps from SOURCE_DATE_EPOCH, sorted tar entries, uid, gid and
// modes), so building twice gives the same digests.
//
// Build tooling: hack/images (`make images`, `make push`) is its only
// user; no production package imports it (hack/verify-imports.sh).
package imagebuild

// Program is one image: the program's name (the image's repository name
// and the binary's file name) and the main package it is built from.
type Program struct {
	// Name is the binary and image name, e.g. "hetsev-scheduler".
	Name string
	// Package is the main package, relative to the module root, e.g.
	// "./cmd/scheduler".
	Package string
	// CACerts adds the build machine's CA bundle at
	// /etc/ssl/certs/ca-certificates.crt: for programs that make TLS client
	// calls verified against the system roots (the metrics adapter's
	// --prometheus-url may be https). Calls to the kube-apiserver verify
	// against the service account's ca.crt and need no bundle.
	CACerts bool
}

// Programs are the images `make images` builds: the three programs a
// cluster runs. The simulated model server (internal/sim/modelserver) is a
// library run inside the demo and the evaluator, with no main of its own,
// so it has no image.
var Programs = []Program{
	{Name: "hetsev-scheduler", Package: "./cmd/scheduler"},
	{Name: "hetsev-metrics-adapter", Package: "./cmd/metrics-adapter", CACerts: true},
	{Name: "hetsev-scaler", Package: "./cmd/scaler"},
}

// NodePrograms are images the e2e nodes need besides hetsev's own, built
// only when named (hack/images --programs, hack/e2e/build-node.sh), never
// by a plain `make images`: pause, the CRI sandbox image containerd is
// pinned to, so that no node pulls registry.k8s.io/pause, and the model
// server the e2e pods run.
var NodePrograms = []Program{
	{Name: "pause", Package: "./hack/e2e/pause"},
	{Name: "e2e-modelserver", Package: "./hack/e2e/modelserver"},
}

// Platforms are the platforms of every image index, as GOOS/GOARCH.
var Platforms = []string{"linux/amd64", "linux/arm64"}

const (
	// Registry is the registry and namespace the manifests name the images
	// in (ghcr.io/hetsev/hetsev-scheduler:v0.1.0).
	Registry = "ghcr.io/hetsev"
	// Source is the org.opencontainers.image.source label.
	Source = "https://github.com/hetsev/hetsev"
	// License is the org.opencontainers.image.licenses label (SPDX), the
	// licence of LICENSE at the repository root.
	License = "Apache-2.0"

	// NonRoot is the uid and gid the programs run as (the manifests'
	// runAsUser and runAsGroup).
	NonRoot = 65532
	// BinDir is where the binary lies in the image; the Entrypoint is
	// BinDir/<name>.
	BinDir = "/usr/local/bin"
	// CABundle is the CA bundle's path in the image (where Go's
	// crypto/x509 looks first on Linux).
	CABundle = "/etc/ssl/certs/ca-certificates.crt"
)
