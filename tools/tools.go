//go:build tools

// Package tools pins the binaries the demo and tests build from this module's
// dependency graph (kwok, kubectl), so they compile with the same Kubernetes
// versions.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
