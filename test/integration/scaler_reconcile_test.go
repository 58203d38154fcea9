package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/catalog"
	"github.com/hetsev/hetsev/pkg/scaler"
)

// The tests in this file run hetsev-scaler's reconciler in the test's
// process against a real API server (with kube-controller-manager, so
// Deployments get ReplicaSets and the garbage collector runs) and call
// Reconcile themselves with a clock they move: every decision is one the
// test asked for, and "nothing happened" is checked after a decision that
// did run, never after a sleep. HetSev's testbed nodes exist (so GPU slots
// are counted); without kwok and hetsev-scheduler pods stay pending.

// fixedMetrics is a MetricsSource with a requests/s value per Deployment
// set by the test; a Deployment without one has no data.
type fixedMetrics struct {
	mu  sync.Mutex
	rps map[string]float64
}

func (m *fixedMetrics) set(deployment string, rps float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rps == nil {
		m.rps = map[string]float64{}
	}
	m.rps[deployment] = rps
}

func (m *fixedMetrics) DeploymentMetric(_ context.Context, ns, name, metric string) (float64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.rps[name]
	if !ok || metric != adapter.MetricRequestsPerSecond {
		return 0, fmt.Errorf("no %s for %s/%s", metric, ns, name)
	}
	return v, nil
}

// PodMetrics implements scaler.MetricsSource: no pod has data (a
// Deployment without a value holds the decision).
func (m *fixedMetrics) PodMetrics(_ context.Context, ns string, sel labels.Selector, metric string) (map[string]float64, error) {
	return nil, fmt.Errorf("no %s for pods %s in %s", metric, sel, ns)
}

// reconcileBed is a control plane with the CRDs and HetSev's testbed nodes,
// a client and a clock for in-process reconcilers.
type reconcileBed struct {
	ctx     context.Context
	cp      *cluster.ControlPlane
	c       client.Client
	cat     catalog.Catalog
	metrics *fixedMetrics
	now     time.Time
}

func newReconcileBed(t *testing.T) *reconcileBed {
	t.Helper()
	cp, ctx := controlPlane(t)
	if err := cluster.InstallCRDs(ctx, cp); err != nil {
		t.Fatal(err)
	}
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
	cfg := rest.CopyConfig(cp.Config)
	cfg.ContentType = "application/json" // ModelService has no protobuf encoding
	c, err := client.New(cfg, client.Options{Scheme: scaler.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return &reconcileBed{ctx: ctx, cp: cp, c: c, cat: cat, metrics: &fixedMetrics{}, now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// reconciler is a new hetsev-scaler reconciler (a new leader: it knows only
// what the API server holds) reading the API server directly, with the
// bed's metrics and clock, and events into rec.
func (b *reconcileBed) reconciler(rec record.EventRecorder) *scaler.Reconciler {
	return &scaler.Reconciler{
		Client: b.c, APIReader: b.c, Metrics: b.metrics, Catalog: b.cat, Recorder: rec,
		Now: func() time.Time { return b.now },
	}
}

func (b *reconcileBed) reconcile(t *testing.T, r *scaler.Reconciler, name string) reconcile.Result {
	t.Helper()
	res, err := r.Reconcile(b.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: name}})
	if err != nil {
		t.Fatalf("reconcile %s at %v: %v", name, b.now, err)
	}
	return res
}

func (b *reconcileBed) modelService(t *testing.T, name string, edit func(*v1alpha1.ModelService)) *v1alpha1.ModelService {
	t.Helper()
	ms := &v1alpha1.ModelService{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1alpha1.ModelServiceSpec{
			Model: name, SLO: v1alpha1.SLO{ResponseTimeMs: 400, ServiceLevel: 0.98}, BatchSize: 8,
			Profiles: []v1alpha1.GPUProfile{{GPUType: "T4", ThroughputRPS: 363, LatencyMs: 22.41, GPUMemory: "2Gi"}},
			Scaling: v1alpha1.Scaling{IntervalSeconds: 15, ScaleOutPeriodSeconds: ptrTo(0.0), ScaleInIntervalSeconds: 30,
				ScaleInCoolDownSeconds: 300, MinReplicas: 1},
			Template: v1.PodTemplateSpec{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "server", Image: "triton:1"}}}},
		},
	}
	if edit != nil {
		edit(ms)
	}
	if err := b.c.Create(b.ctx, ms); err != nil {
		t.Fatal(err)
	}
	return ms
}

func (b *reconcileBed) get(t *testing.T, name string) *v1alpha1.ModelService {
	t.Helper()
	ms := &v1alpha1.ModelService{}
	if err := b.c.Get(b.ctx, types.NamespacedName{Namespace: "default", Name: name}, ms); err != nil {
		t.Fatal(err)
	}
	return ms
}

func (b *reconcileBed) deployment(t *testing.T, name string) (*appsv1.Deployment, bool) {
	t.Helper()
	d := &appsv1.Deployment{}
	err := b.c.Get(b.ctx, types.NamespacedName{Namespace: "default", Name: name}, d)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return d, true
}

func (b *reconcileBed) replicas(t *testing.T, name string) int32 {
	t.Helper()
	d, ok := b.deployment(t, name)
	if !ok {
		t.Fatalf("deployment %s does not exist", name)
	}
	return *d.Spec.Replicas
}

func ptrTo[T any](v T) *T { return &v }

// TestScalerRetiresRemovedGPUType: a GPU type removed from a running
// ModelService loses its Deployment (scaled to zero, then deleted), its
// replicas in status, and its place in the decision; the remaining type's
// Deployment stays.
func TestScalerRetiresRemovedGPUType(t *testing.T) {
	b := newReconcileBed(t)
	ms := b.modelService(t, "resnet50", func(ms *v1alpha1.ModelService) {
		ms.Spec.Profiles = append(ms.Spec.Profiles, v1alpha1.GPUProfile{GPUType: "V100-32GB", ThroughputRPS: 709, LatencyMs: 11.5, GPUMemory: "2Gi"})
	})
	r := b.reconciler(record.NewFakeRecorder(100))
	b.reconcile(t, r, ms.Name)
	t4, v100 := scaler.DeploymentName(ms.Name, "T4"), scaler.DeploymentName(ms.Name, "V100-32GB")
	// Both types serve: one instance each.
	for _, n := range []string{t4, v100} {
		if err := b.c.Patch(b.ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: n}},
			client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":1}}`))); err != nil {
			t.Fatal(err)
		}
	}
	b.metrics.set(t4, 100)
	b.metrics.set(v100, 5000)

	ms = b.get(t, ms.Name)
	ms.Spec.Profiles = ms.Spec.Profiles[:1]
	if err := b.c.Update(b.ctx, ms); err != nil {
		t.Fatal(err)
	}
	b.now = b.now.Add(time.Second)
	b.reconcile(t, r, ms.Name) // the spec changed: a decision
	got := b.get(t, ms.Name)
	if _, ok := got.Status.Replicas["V100-32GB"]; ok || got.Status.ArrivalRate != "100.00" {
		t.Errorf("status after removing V100-32GB: replicas %v, W %s; want T4 only and W 100.00 (T4's)", got.Status.Replicas, got.Status.ArrivalRate)
	}
	if d, ok := b.deployment(t, v100); ok && *d.Spec.Replicas != 0 {
		t.Errorf("deployment %s of the removed type has %d replicas after the decision, want 0", v100, *d.Spec.Replicas)
	}
	// Deleted once its pods are gone (kube-controller-manager scales the
	// ReplicaSet down; each Deployment change triggers a reconcile, which
	// this loop stands in for).
	waitFor(b.ctx, t, 30*time.Second, "deployment "+v100+" deleted", func(context.Context) (bool, error) {
		b.reconcile(t, r, ms.Name)
		_, ok := b.deployment(t, v100)
		return !ok, nil
	})
	if n := b.replicas(t, t4); n < 1 {
		t.Errorf("deployment %s has %d replicas, want the remaining type to keep serving", t4, n)
	}
}

// TestScalerRefusesForeignDeployment: a Deployment named like one of the
// ModelService's (<ms>-<type>) that the ModelService does not control is
// left exactly as it was; the ModelService's Ready condition and a Warning
// event name it.
func TestScalerRefusesForeignDeployment(t *testing.T) {
	b := newReconcileBed(t)
	name := scaler.DeploymentName("resnet50", "T4")
	// Someone's own Deployment, even with the labels the scaler's would have.
	sel := map[string]string{v1alpha1.LabelModelService: "resnet50", v1alpha1.LabelGPUType: "t4"}
	foreign := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: appsv1.DeploymentSpec{Replicas: ptrTo[int32](3), Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "mine:1"}}}}},
	}
	if err := b.c.Create(b.ctx, foreign); err != nil {
		t.Fatal(err)
	}
	before, _ := b.deployment(t, name)
	ms := b.modelService(t, "resnet50", nil)
	rec := record.NewFakeRecorder(100)
	r := b.reconciler(rec)
	b.reconcile(t, r, ms.Name)
	b.now = b.now.Add(time.Minute)
	b.reconcile(t, r, ms.Name)

	after, ok := b.deployment(t, name)
	switch {
	case !ok:
		t.Fatalf("foreign deployment %s deleted", name)
	case after.Generation != before.Generation || *after.Spec.Replicas != 3 || after.Spec.Template.Spec.Containers[0].Image != "mine:1":
		t.Errorf("foreign deployment %s changed: generation %d -> %d, replicas %d, image %s", name, before.Generation, after.Generation, *after.Spec.Replicas, after.Spec.Template.Spec.Containers[0].Image)
	case metav1.GetControllerOf(after) != nil || after.Annotations[v1alpha1.AnnotationTemplateHash] != "":
		t.Errorf("foreign deployment %s adopted: owner %v, annotations %v", name, metav1.GetControllerOf(after), after.Annotations)
	}
	c := meta.FindStatusCondition(b.get(t, ms.Name).Status.Conditions, v1alpha1.ConditionReady)
	if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, name) {
		t.Errorf("Ready condition %+v, want False naming deployment %s", c, name)
	}
	var events []string
	for len(rec.Events) > 0 {
		events = append(events, <-rec.Events)
	}
	if !strings.Contains(strings.Join(events, "\n"), name) {
		t.Errorf("events %q: none names deployment %s", events, name)
	}
}

// TestScalerLeavesModelServiceBeingDeleted: once a ModelService has a
// deletion timestamp (a finalizer keeps it) the scaler does not recreate
// its Deployments.
func TestScalerLeavesModelServiceBeingDeleted(t *testing.T) {
	b := newReconcileBed(t)
	ms := b.modelService(t, "resnet50", func(ms *v1alpha1.ModelService) { ms.Finalizers = []string{"test.hetsev.io/hold"} })
	t.Cleanup(func() {
		_ = b.c.Patch(context.Background(), ms, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
	})
	r := b.reconciler(record.NewFakeRecorder(100))
	b.reconcile(t, r, ms.Name)
	t4 := scaler.DeploymentName(ms.Name, "T4")
	if _, ok := b.deployment(t, t4); !ok {
		t.Fatalf("deployment %s not created", t4)
	}
	if err := b.c.Delete(b.ctx, ms); err != nil {
		t.Fatal(err)
	}
	if err := b.c.Delete(b.ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: t4}}); err != nil {
		t.Fatal(err)
	}
	for _, dt := range []time.Duration{time.Second, time.Minute} { // between decisions, then a decision
		b.now = b.now.Add(dt)
		b.reconcile(t, r, ms.Name)
		if _, ok := b.deployment(t, t4); ok {
			t.Fatalf("deployment %s recreated for a ModelService being deleted", t4)
		}
	}
}

// TestScalerCoolDownSurvivesFailover: a scale-out by one leader starts the
// scale-in cool-down; a new leader (a new reconciler, knowing only the API
// server) seeing low load within the cool-down does not scale in, and does
// once the cool-down has passed.
func TestScalerCoolDownSurvivesFailover(t *testing.T) {
	b := newReconcileBed(t)
	ms := b.modelService(t, "resnet50", nil)
	t4 := scaler.DeploymentName(ms.Name, "T4")
	first := b.reconciler(record.NewFakeRecorder(100))
	b.reconcile(t, first, ms.Name) // min replicas: one T4
	b.metrics.set(t4, 1200)        // 1200 / (363 * 0.96, ResNet-50's threshold from the SLO model): four T4
	b.now = b.now.Add(15 * time.Second)
	b.reconcile(t, first, ms.Name)
	scaledOut := b.replicas(t, t4)
	if scaledOut < 4 {
		t.Fatalf("%d T4 replicas for 1200 requests/s, want at least 4", scaledOut)
	}
	scaleOutAt := b.now
	// The API server accepts the rate history the new leader restores.
	if rh := b.get(t, ms.Name).Status.RateHistory; rh == nil || len(rh.Rates) == 0 || rh.Rates[len(rh.Rates)-1].RPS != "1200" {
		t.Fatalf("status.rateHistory %+v, want the rates ending with 1200 requests/s", rh)
	}

	// The first leader goes away; the load drops; a new leader decides at
	// each interval within the cool-down (300 s).
	b.metrics.set(t4, 50)
	second := b.reconciler(record.NewFakeRecorder(100))
	for b.now = scaleOutAt.Add(15 * time.Second); b.now.Before(scaleOutAt.Add(285 * time.Second)); b.now = b.now.Add(15 * time.Second) {
		b.reconcile(t, second, ms.Name)
		if n := b.replicas(t, t4); n != scaledOut {
			d := b.get(t, ms.Name).Status.LastDecision
			t.Fatalf("new leader at %v after the scale-out changed T4 replicas %d -> %d within the 300s cool-down (decision %+v)", b.now.Sub(scaleOutAt), scaledOut, n, d)
		}
		if d := b.get(t, ms.Name).Status.LastDecision; d == nil || !strings.Contains(d.Reason, "cool-down") {
			t.Fatalf("new leader's decision %+v at %v: want one held by the cool-down", d, b.now.Sub(scaleOutAt))
		}
	}
	// After the cool-down it does scale in.
	b.now = scaleOutAt.Add(301 * time.Second)
	b.reconcile(t, second, ms.Name)
	if n := b.replicas(t, t4); n >= scaledOut {
		t.Errorf("T4 replicas %d after the cool-down at 50 requests/s, want fewer than %d", n, scaledOut)
	}
}
