package scaler

import (
	"context"
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// noMetrics is a metrics source with nothing to report.
type noMetrics struct{}

func (noMetrics) DeploymentMetric(ns, name, metric string) (float64, error) {
	return 0, errors.New("no metrics")
}

// newFakeReconciler returns a reconciler on controller-runtime's fake
// client holding ms, with a clock the test moves.
func newFakeReconciler(t *testing.T, ms *v1alpha1.ModelService, now *time.Time) (*Reconciler, client.Client) {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(ms).WithStatusSubresource(&v1alpha1.ModelService{}).Build()
	return &Reconciler{
		Client: c, Metrics: noMetrics{}, Catalog: defaultCatalog(t), Recorder: record.NewFakeRecorder(100),
		Now: func() time.Time { return *now },
	}, c
}

// A new ModelService's first reconcile creates one Deployment per GPU type,
// owned by the ModelService and pinned to the type's nodes, records the
// decision with status.observedGeneration, and comes back after the
// decision interval.
func TestReconcileCreatesDeploymentsOfNewModelService(t *testing.T) {
	ctx := context.Background()
	ms := resnet()
	ms.Generation = 3
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	r, c := newFakeReconciler(t, ms, &now)
	key := types.NamespacedName{Namespace: ms.Namespace, Name: ms.Name}

	res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key})
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != DefaultIntervalSeconds*time.Second {
		t.Errorf("RequeueAfter = %v, want the decision interval %ds", res.RequeueAfter, DefaultIntervalSeconds)
	}
	for _, want := range []struct{ name, gpuType string }{{"resnet50-t4", "T4"}, {"resnet50-v100-32gb", "V100-32GB"}} {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: "default", Name: want.name}, d); err != nil {
			t.Errorf("deployment %s: %v", want.name, err)
			continue
		}
		if ref := metav1.GetControllerOf(d); ref == nil || ref.Kind != v1alpha1.Kind || ref.Name != ms.Name || ref.UID != ms.UID {
			t.Errorf("deployment %s: controller reference %+v, want ModelService %s", d.Name, ref, ms.Name)
		}
		if d.Spec.Template.Labels[v1alpha1.LabelModelService] != ms.Name || d.Spec.Template.Spec.SchedulerName != v1alpha1.SchedulerName {
			t.Errorf("deployment %s: pod labels %v, scheduler %q", d.Name, d.Spec.Template.Labels, d.Spec.Template.Spec.SchedulerName)
		}
		g, _ := r.Catalog.ByName(want.gpuType)
		if got := d.Spec.Template.Spec.NodeSelector[gpuinventory.LabelGPUProduct]; got != g.ProductLabel || got == "" {
			t.Errorf("deployment %s: node selector %s=%q, want %q", d.Name, gpuinventory.LabelGPUProduct, got, g.ProductLabel)
		}
		if d.Annotations[v1alpha1.AnnotationTemplateHash] == "" {
			t.Errorf("deployment %s: no template hash", d.Name)
		}
	}
	got := &v1alpha1.ModelService{}
	if err := c.Get(ctx, key, got); err != nil {
		t.Fatal(err)
	}
	if got.Status.ObservedGeneration != 3 {
		t.Errorf("status.observedGeneration = %d, want 3", got.Status.ObservedGeneration)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != 3 {
		t.Errorf("Ready condition %+v", c)
	}
	if got.Status.LastDecision == nil || len(got.Status.Replicas) != 2 {
		t.Errorf("status %+v: want a decision and replicas of both GPU types", got.Status)
	}
}

// Between decisions a reconcile (a Deployment changed) recreates a deleted
// Deployment but does not decide: the decision keeps its interval.
func TestReconcileBetweenDecisionsKeepsDeploymentsWithoutDeciding(t *testing.T) {
	ctx := context.Background()
	ms := resnet()
	ms.Generation = 1
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	r, c := newFakeReconciler(t, ms, &now)
	key := types.NamespacedName{Namespace: ms.Namespace, Name: ms.Name}
	req := reconcile.Request{NamespacedName: key}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	first := &v1alpha1.ModelService{}
	if err := c.Get(ctx, key, first); err != nil {
		t.Fatal(err)
	}
	t4 := &appsv1.Deployment{}
	t4.Namespace, t4.Name = "default", "resnet50-t4"
	if err := c.Delete(ctx, t4); err != nil {
		t.Fatal(err)
	}

	now = now.Add(5 * time.Second)
	res, err := r.Reconcile(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != 10*time.Second {
		t.Errorf("RequeueAfter = %v, want the 10s left of the interval", res.RequeueAfter)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(t4), t4); err != nil {
		t.Errorf("deleted deployment not recreated: %v", err)
	}
	between := &v1alpha1.ModelService{}
	if err := c.Get(ctx, key, between); err != nil {
		t.Fatal(err)
	}
	if !between.Status.LastDecision.Time.Equal(&first.Status.LastDecision.Time) {
		t.Errorf("decided between intervals: last decision at %v, first at %v", between.Status.LastDecision.Time, first.Status.LastDecision.Time)
	}

	now = now.Add(10 * time.Second)
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, key, between); err != nil {
		t.Fatal(err)
	}
	if !between.Status.LastDecision.Time.Time.Equal(now) {
		t.Errorf("no decision at the interval: last decision at %v, want %v", between.Status.LastDecision.Time, now)
	}
}

// A deleted ModelService is forgotten.
func TestReconcileDeletedModelServiceForgetsIt(t *testing.T) {
	ms := resnet()
	now := time.Now()
	r, c := newFakeReconciler(t, ms, &now)
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ms.Namespace, Name: ms.Name}}
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(context.Background(), ms); err != nil {
		t.Fatal(err)
	}
	if res, err := r.Reconcile(context.Background(), req); err != nil || res.RequeueAfter != 0 {
		t.Fatalf("reconcile of a deleted ModelService: %+v, %v", res, err)
	}
	if len(r.state) != 0 {
		t.Errorf("state kept for a deleted ModelService: %v", r.state)
	}
}
