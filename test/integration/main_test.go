// Package integration runs hetsev's programs against a real kube-apiserver,
// etcd and kube-controller-manager started by test/harness, with kwok giving
// pods a lifecycle. The programs are the binaries `make build` puts in bin/.
package integration

import (
	"context"
	"testing"

	"github.com/hetsev/hetsev/pkg/heterogeneity"
	"github.com/hetsev/hetsev/test/harness"
)

// cluster starts the control plane, kwok and HetSev's testbed nodes.
func cluster(t *testing.T) (*harness.ControlPlane, context.Context) {
	t.Helper()
	cp, ctx := controlPlane(t)
	cat, err := heterogeneity.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	groups, err := harness.HetSevTestbed(cat)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := harness.CreateNodes(ctx, cp.Client, groups); err != nil {
		t.Fatal(err)
	}
	kwok, err := harness.StartKwok(ctx, cp, harness.BinDir()+"/kwok")
	if err != nil {
		t.Fatalf("kwok: %v", err)
	}
	stopOnCleanup(t, kwok)
	return cp, ctx
}

// controlPlane starts etcd, kube-apiserver and kube-controller-manager only.
func controlPlane(t *testing.T) (*harness.ControlPlane, context.Context) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cp, err := harness.StartControlPlane(ctx, t, t.TempDir())
	if err != nil {
		cancel()
		t.Fatalf("control plane: %v", err)
	}
	t.Cleanup(cp.Stop)
	// Cleanups run last-in first-out: watches end before the apiserver
	// stops, or its graceful shutdown waits for them.
	t.Cleanup(cancel)
	return cp, ctx
}
