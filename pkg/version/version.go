// Package version holds hetsev's release version, the one every program
// prints with --version and logs when it starts.
//
// The value comes from the VERSION file at the repository root, plus git
// describe's suffix when the tree is not at the tag v<VERSION> or is dirty
// (hack/version.sh): `make build` and `make images` link it in with
//
//	-ldflags "-X github.com/hetsev/hetsev/pkg/version.Version=<version>"
//
// A plain `go build` leaves the value Devel.
package version

// Devel is the version of a binary built without the -X flag above.
const Devel = "devel"

// Version is hetsev's version, e.g. "0.1.0", "0.1.0-dirty" or
// "0.1.0-3-g1a2b3c4d5e6f-dirty"; set at link time (see the package comment).
var Version = Devel

// ImageTag is the container image tag of this version: "v" + Version, as
// the manifests name the images (ghcr.io/hetsev/hetsev-scheduler:v0.1.0).
func ImageTag(v string) string { return "v" + v }
