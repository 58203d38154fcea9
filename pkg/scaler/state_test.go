package scaler

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// TestRecreatedModelServiceStartsAfresh: a ModelService is deleted (its
// Deployments garbage-collected) and recreated under the same name, at the
// same generation, with no reconcile in between. The new object (a new
// UID) must get a decision at once, as any new ModelService does, not
// inherit the old one's decision time and cool-downs.
func TestRecreatedModelServiceStartsAfresh(t *testing.T) {
	ctx := context.Background()
	ms := resnet()
	ms.Name, ms.Generation = "recreated", 1
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	r, c := newFakeReconciler(t, ms, &now)
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ms.Namespace, Name: ms.Name}}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, ms); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteAllOf(ctx, &appsv1.Deployment{}, client.InNamespace(ms.Namespace)); err != nil {
		t.Fatal(err)
	}
	again := resnet()
	again.Name, again.Generation, again.UID = ms.Name, 1, "u2"
	if err := c.Create(ctx, again); err != nil {
		t.Fatal(err)
	}

	now = now.Add(time.Second)
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.ModelService{}
	if err := c.Get(ctx, req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	if d := got.Status.LastDecision; d == nil || !d.Time.Time.Equal(now) {
		t.Errorf("recreated ModelService: last decision %+v, want one at %v (a fresh decision)", d, now)
	}
	if len(r.state) != 1 || r.state["u2"] == nil {
		t.Errorf("state kept for UIDs %v, want only the recreated u2", keysOf(r.state))
	}
}

// TestDeletedModelServicesLeaveNoState: the reconciler's per-ModelService
// maps shrink to zero once its ModelServices are gone, whether the
// reconcile finds one deleted or being deleted (a finalizer holds it).
func TestDeletedModelServicesLeaveNoState(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	gone := resnet()
	gone.Name = "gone-now"
	r, c := newFakeReconciler(t, gone, &now)
	held := resnet()
	held.Name, held.UID, held.Finalizers = "held-by-finalizer", "u9", []string{"example.com/hold"}
	if err := c.Create(ctx, held); err != nil {
		t.Fatal(err)
	}
	reqs := []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(gone)}, {NamespacedName: client.ObjectKeyFromObject(held)}}
	for _, req := range reqs {
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if len(r.state) != 2 || len(r.uids) != 2 {
		t.Fatalf("state of %d and names of %d ModelServices, want 2 each", len(r.state), len(r.uids))
	}
	for _, obj := range []client.Object{gone, held} {
		if err := c.Delete(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	for _, req := range reqs {
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if len(r.state) != 0 || len(r.uids) != 0 {
		t.Errorf("state kept for UIDs %v and names %v after both ModelServices went", keysOf(r.state), r.uids)
	}
}

func keysOf[K comparable, V any](m map[K]V) []K {
	var out []K
	for k := range m {
		out = append(out, k)
	}
	return out
}
