// Package integration runs hetsev's programs against a real kube-apiserver,
// etcd and kube-controller-manager started by internal/cluster, with kwok giving
// pods a lifecycle. The programs are the binaries `make build` puts in bin/.
package integration

import (
	"context"
	"testing"

	"github.com/hetsev/hetsev/pkg/catalog"

	"github.com/hetsev/hetsev/internal/cluster"
)

// testbed starts the control plane, kwok and HetSev's testbed nodes.
func testbed(t *testing.T) (*cluster.ControlPlane, context.Context) {
	t.Helper()
	cp, ctx := controlPlane(t)
	cat, err := catalog.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	groups, err := cluster.HetSevTestbed(cat)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.CreateNodes(ctx, cp.Client, groups); err != nil {
		t.Fatal(err)
	}
	kwok, err := cluster.StartKwok(ctx, cp, cluster.BinDir()+"/kwok")
	if err != nil {
		t.Fatalf("kwok: %v", err)
	}
	stopOnCleanup(t, kwok)
	return cp, ctx
}

// controlPlane starts etcd, kube-apiserver and kube-controller-manager only.
func controlPlane(t *testing.T) (*cluster.ControlPlane, context.Context) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cp, err := cluster.StartControlPlane(ctx, t, t.TempDir())
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
