package scaler

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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

func (noMetrics) DeploymentMetric(_ context.Context, ns, name, metric string) (float64, error) {
	return 0, errors.New("no metrics")
}

func (noMetrics) PodMetrics(_ context.Context, ns string, sel labels.Selector, metric string) (map[string]float64, error) {
	return nil, errors.New("no metrics")
}

// newFakeReconciler returns a reconciler on controller-runtime's fake
// client holding ms, with a clock the test moves.
func newFakeReconciler(t *testing.T, ms *v1alpha1.ModelService, now *time.Time) (*Reconciler, client.Client) {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(ms).WithStatusSubresource(&v1alpha1.ModelService{}).Build()
	return &Reconciler{
		Client: c, Metrics: noMetrics{}, Catalog: defaultCatalog(t), Recorder: record.NewFakeRecorder(100),
		Now: func() time.Time { return *now }, Defaults: wholeGPUDefaults(),
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

	interval := DefaultIntervalSeconds * time.Second
	now = now.Add(interval / 3)
	res, err := r.Reconcile(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if left := interval - interval/3; res.RequeueAfter != left {
		t.Errorf("RequeueAfter = %v, want the %v left of the interval", res.RequeueAfter, left)
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

	decided := decisions(ms)
	now = now.Add(interval - interval/3)
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if got := decisions(ms); got != decided+1 {
		t.Errorf("decisions at the interval: %v, want %v", got-decided, 1)
	}
}

// decisions is how many decisions the scaler counted for ms.
func decisions(ms *v1alpha1.ModelService) float64 {
	n := 0.0
	for _, a := range []string{"None", "ScaleOut", "ScaleIn", "NoFeasibleType", "Hold"} {
		n += testutil.ToFloat64(decisionsTotal.WithLabelValues(ms.Namespace, ms.Name, a))
	}
	return n
}

// Every decision path records the generation it saw: status and every
// condition it sets carry observedGeneration, the invalid-spec and
// metrics-hold paths included.
func TestModelServiceStatusObservedGeneration(t *testing.T) {
	ctx := context.Background()
	ms := resnet()
	ms.Name = "observed-generation"
	ms.Generation = 1
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	r, c := newFakeReconciler(t, ms, &now)
	key := types.NamespacedName{Namespace: ms.Namespace, Name: ms.Name}
	req := reconcile.Request{NamespacedName: key}
	respec := func(gen int64, edit func(*v1alpha1.ModelService)) *v1alpha1.ModelService {
		t.Helper()
		cur := &v1alpha1.ModelService{}
		if err := c.Get(ctx, key, cur); err != nil {
			t.Fatal(err)
		}
		edit(cur)
		cur.Generation = gen
		if err := c.Update(ctx, cur); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Second)
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(ctx, key, cur); err != nil {
			t.Fatal(err)
		}
		return cur
	}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}

	// Invalid spec (a GPU type not in the catalog).
	got := respec(2, func(m *v1alpha1.ModelService) { m.Spec.Profiles[1].GPUType = "H100" })
	if got.Status.ObservedGeneration != 2 {
		t.Errorf("invalid spec: status.observedGeneration = %d, want 2", got.Status.ObservedGeneration)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Reason != "InvalidSpec" || c.ObservedGeneration != 2 {
		t.Errorf("invalid spec: Ready condition %+v, want InvalidSpec at generation 2", c)
	}

	// Valid again, with a serving instance that has no metric: hold.
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "default", Name: DeploymentName(ms.Name, "T4")}, d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Replicas = ptr[int32](1)
	if err := c.Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	d.Status.Replicas, d.Status.ReadyReplicas = 1, 1
	if err := c.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	got = respec(3, func(m *v1alpha1.ModelService) { m.Spec.Profiles[1].GPUType = "V100-32GB" })
	if got.Status.LastDecision == nil || got.Status.LastDecision.Action != "Hold" {
		t.Fatalf("last decision %+v, want Hold (no metric for a ready instance)", got.Status.LastDecision)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue || c.Reason != "ReplicasHeld" {
		t.Errorf("hold: Ready condition %+v, want True, ReplicasHeld (serving, not scaling)", c)
	}
	if got.Status.ObservedGeneration != 3 {
		t.Errorf("hold: status.observedGeneration = %d, want 3", got.Status.ObservedGeneration)
	}
	for _, typ := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionMetricsUnavailable} {
		if c := meta.FindStatusCondition(got.Status.Conditions, typ); c == nil || c.ObservedGeneration != 3 {
			t.Errorf("hold: %s condition %+v, want one at generation 3", typ, c)
		}
	}
}

// Decisions that change nothing but the measured fields (arrival rate,
// saturation, rate history) write no status within the status refresh:
// the ModelService's resourceVersion stays while the decision counter
// advances. Once the refresh has passed, one write brings them up to date.
func TestReconcileWritesStatusOnlyWhenChanged(t *testing.T) {
	ctx := context.Background()
	ms := resnet()
	ms.Name = "quiet"
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	r, c := newFakeReconciler(t, ms, &now)
	key := types.NamespacedName{Namespace: ms.Namespace, Name: ms.Name}
	req := reconcile.Request{NamespacedName: key}
	decideFor := func(d time.Duration) {
		t.Helper()
		for end := now.Add(d); now.Before(end); now = now.Add(DefaultIntervalSeconds * time.Second) {
			if _, err := r.Reconcile(ctx, req); err != nil {
				t.Fatal(err)
			}
		}
	}
	get := func() *v1alpha1.ModelService {
		t.Helper()
		got := &v1alpha1.ModelService{}
		if err := c.Get(ctx, key, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	// The first decisions scale out to min replicas, then find the service
	// at rest.
	decideFor(2 * DefaultIntervalSeconds * time.Second)
	rest := get()
	if rest.Status.MeasuredAt == nil || rest.Status.RateHistory == nil {
		t.Fatalf("status without measuredAt or rateHistory: %+v", rest.Status)
	}
	decided := decisions(ms)
	decideFor(rest.Status.MeasuredAt.Add(DefaultStatusRefresh).Sub(now))
	n := decisions(ms) - decided
	if n < 4 {
		t.Fatalf("%v decisions within the status refresh, want at least 4", n)
	}
	if got := get(); got.ResourceVersion != rest.ResourceVersion {
		t.Errorf("resourceVersion %s -> %s over %v decisions that changed only measured fields within %v (last decision %+v)",
			rest.ResourceVersion, got.ResourceVersion, n, DefaultStatusRefresh, got.Status.LastDecision)
	}
	decideFor(2 * DefaultIntervalSeconds * time.Second)
	refreshed := get()
	if refreshed.ResourceVersion == rest.ResourceVersion || !refreshed.Status.MeasuredAt.After(rest.Status.MeasuredAt.Time) ||
		len(refreshed.Status.RateHistory.Rates) <= len(rest.Status.RateHistory.Rates) {
		t.Errorf("after the status refresh: resourceVersion %s, measuredAt %v, %d rates; want a write newer than %v with more than %d rates",
			refreshed.ResourceVersion, refreshed.Status.MeasuredAt, len(refreshed.Status.RateHistory.Rates), rest.Status.MeasuredAt, len(rest.Status.RateHistory.Rates))
	}
}

// A deleted ModelService's series leave /metrics.
func TestReconcileDeletedModelServiceDropsItsMetrics(t *testing.T) {
	ctx := context.Background()
	ms := resnet()
	ms.Name = "gone"
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	r, c := newFakeReconciler(t, ms, &now)
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ms.Namespace, Name: ms.Name}}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if n := seriesOf(t, ms.Name); n == 0 {
		t.Fatalf("no series for ModelService %s after a decision", ms.Name)
	}
	if err := c.Delete(ctx, ms); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if n := seriesOf(t, ms.Name); n != 0 {
		t.Errorf("%d series left for deleted ModelService %s", n, ms.Name)
	}
}

// scalerMetrics gathers the scaler's metrics as /metrics serves them.
func scalerMetrics(t *testing.T) []*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	Register(reg)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// seriesOf counts the scaler's series labelled modelservice=name.
func seriesOf(t *testing.T, name string) int {
	t.Helper()
	n := 0
	for _, mf := range scalerMetrics(t) {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "modelservice" && l.GetValue() == name {
					n++
				}
			}
		}
	}
	return n
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
