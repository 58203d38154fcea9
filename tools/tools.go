//go:build tools

// Package tools pins the binaries the demo and tests build from this module's
// dependency graph (kwok, kubectl, the helm CLI, and the e2e nodes' kubelet
// and kube-proxy), so they compile with the same Kubernetes versions.
package tools

import (
	_ "helm.sh/helm/v4/cmd/helm"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
