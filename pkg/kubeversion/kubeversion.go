// Package kubeversion refuses a kube-apiserver older than the oldest
// Kubernetes release hetsev supports. hetsev-scheduler, hetsev-scaler and
// hetsev-metrics-adapter call Check once at start, where they build their
// API clients, so that an unsupported cluster stops them with one clear
// error instead of watches that fail on APIs the server does not serve.
package kubeversion

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
)

// Minimum is the oldest kube-apiserver minor release hetsev supports:
// 1.36. hetsev-scheduler is kube-scheduler 1.36 (k8s.io/kubernetes
// v1.36) with two plugins, and Kubernetes' version-skew policy does not
// allow a kube-scheduler newer than the kube-apiserver it talks to
// (https://kubernetes.io/releases/version-skew-policy/). That rule is
// stricter than the APIs alone: kube-scheduler 1.36 always watches
// resource.k8s.io/v1 (as the scaler and the adapter do in DRA mode),
// GA and served since 1.34, so anything older than 1.34 cannot work at
// all. hetsev-scaler and
// hetsev-metrics-adapter are built on the same client libraries (client-go
// v0.36) and released with the scheduler, so they share its minimum.
var Minimum = version.MajorMinor(1, 36)

// Check asks the API server its version (GET /version) and returns an
// error when it is older than Minimum, e.g. "kube-apiserver v1.30.2 is
// older than v1.36, the oldest hetsev supports". The version compared is
// the major and minor the server reports (a trailing "+", as managed
// clusters write "36+", is ignored), else its gitVersion; a server
// emulating an older version (--emulated-version) is judged by the
// version it emulates, whose APIs are the ones it serves. Errors: the
// request fails, or the server reports no version that parses.
func Check(d discovery.ServerVersionInterface) error {
	info, err := d.ServerVersion()
	if err != nil {
		return fmt.Errorf("asking the kube-apiserver its version: %w", err)
	}
	return check(info)
}

func check(info *apimachineryversion.Info) error {
	served, err := servedVersion(info)
	if err != nil {
		return err
	}
	if served.AtLeast(Minimum) {
		return nil
	}
	return fmt.Errorf("kube-apiserver %s is older than v%d.%d, the oldest hetsev supports", describe(info), Minimum.Major(), Minimum.Minor())
}

// servedVersion is the major and minor release whose APIs the server
// serves.
func servedVersion(info *apimachineryversion.Info) (*version.Version, error) {
	if info == nil {
		return nil, fmt.Errorf("kube-apiserver reported no version")
	}
	if v, ok := majorMinor(info.EmulationMajor, info.EmulationMinor); ok {
		return v, nil
	}
	if v, ok := majorMinor(info.Major, info.Minor); ok {
		return v, nil
	}
	v, err := version.ParseGeneric(info.GitVersion)
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver version major=%q minor=%q gitVersion=%q: %w", quote(info.Major), quote(info.Minor), quote(info.GitVersion), err)
	}
	return version.MajorMinor(v.Major(), v.Minor()), nil
}

// majorMinor parses the Info fields "1" and "36" (or "36+").
func majorMinor(major, minor string) (*version.Version, bool) {
	if major == "" || minor == "" {
		return nil, false
	}
	v, err := version.ParseGeneric(major + "." + strings.TrimSuffix(minor, "+"))
	if err != nil {
		return nil, false
	}
	return v, true
}

// describe names the server's version for an error: its gitVersion when
// that agrees with the major and minor it reports (a server built without
// release metadata reports "v0.0.0-master+..."), and the version it
// emulates when that differs.
func describe(info *apimachineryversion.Info) string {
	s := quote(info.GitVersion)
	binary, ok := majorMinor(info.Major, info.Minor)
	if git, err := version.ParseGeneric(info.GitVersion); ok && (err != nil || !version.MajorMinor(git.Major(), git.Minor()).EqualTo(binary)) {
		s = fmt.Sprintf("v%d.%d (gitVersion %q)", binary.Major(), binary.Minor(), quote(info.GitVersion))
	}
	if emulated, ok := majorMinor(info.EmulationMajor, info.EmulationMinor); ok && (binary == nil || !emulated.EqualTo(binary)) {
		s += fmt.Sprintf(" emulating v%d.%d", emulated.Major(), emulated.Minor())
	}
	return s
}

// quote bounds what a server reports to 40 characters in an error.
func quote(s string) string {
	const max = 40
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}
