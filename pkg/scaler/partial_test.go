package scaler

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// podMetrics is a metrics source as the adapter serves it: requests/s per
// pod; a Deployment has a value only when every serving pod it selects
// has one (else NotFound, as the adapter withholds it), and pods/* lists
// only the pods with data.
type podMetrics struct {
	c   client.Client
	rps map[string]float64 // by pod name
}

func (m *podMetrics) DeploymentMetric(_ context.Context, ns, name, metric string) (float64, error) {
	if metric != adapter.MetricRequestsPerSecond {
		return 0, fmt.Errorf("no %s", metric)
	}
	d := &appsv1.Deployment{}
	if err := m.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, d); err != nil {
		return 0, err
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return 0, err
	}
	var pods v1.PodList
	if err := m.c.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return 0, err
	}
	sum := 0.0
	for _, p := range pods.Items {
		v, ok := m.rps[p.Name]
		if !ok {
			return 0, fmt.Errorf("deployment %s/%s: pod %s serves but has no %s: NotFound", ns, name, p.Name, metric)
		}
		sum += v
	}
	return sum, nil
}

func (m *podMetrics) PodMetrics(_ context.Context, ns string, sel labels.Selector, metric string) (map[string]float64, error) {
	var pods v1.PodList
	if err := m.c.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, p := range pods.Items {
		if v, ok := m.rps[p.Name]; ok && metric == adapter.MetricRequestsPerSecond {
			out[p.Name] = v
		}
	}
	return out, nil
}

// partialBed is a ModelService resnet50 whose T4 Deployment runs three
// Ready pods on a T4 node with room for more, past any cool-down, with a
// clock the test moves; the test sets the pods' requests/s.
func partialBed(t *testing.T) (*Reconciler, client.Client, *podMetrics, reconcile.Request, *time.Time) {
	t.Helper()
	ctx := context.Background()
	ms := resnet()
	ms.Name = "partial-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	ms.Spec.Scaling.ScaleOutPeriodSeconds = ptr(0.0)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	r, c := newFakeReconciler(t, ms, &now)
	m := &podMetrics{c: c, rps: map[string]float64{}}
	r.Metrics = m
	if err := c.Create(ctx, node("t4-node", 8, 16384, "64")); err != nil {
		t.Fatal(err)
	}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ms.Namespace, Name: ms.Name}}
	if _, err := r.Reconcile(ctx, req); err != nil { // creates the Deployments
		t.Fatal(err)
	}
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ms.Namespace, Name: DeploymentName(ms.Name, "T4")}, d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Replicas = ptr[int32](3)
	if err := c.Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	d.Status.Replicas, d.Status.ReadyReplicas = 3, 3
	if err := c.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		p := pod(fmt.Sprintf("%s-t4-%d", ms.Name, i), "t4-node", "resnet50", "2Gi", fmt.Sprint(i), "2")
		p.Namespace = ms.Namespace
		p.Labels = d.Spec.Selector.MatchLabels
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// Past the cool-down of the first decision's scale-out to min replicas
	// and any scale-in interval.
	now = now.Add(time.Hour)
	return r, c, m, req, &now
}

// t4Replicas reads the T4 Deployment's replicas of the ModelService of req.
func t4Replicas(t *testing.T, c client.Client, req reconcile.Request) int32 {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: req.Namespace, Name: DeploymentName(req.Name, "T4")}, d); err != nil {
		t.Fatal(err)
	}
	return replicasOf(d)
}

// TestScalerScalesOutOnPartialMetrics: one of three serving T4 pods has no
// data yet (as a new instance has until traffic reaches it and two scrapes
// fall in the rate window), so the Deployment's value is withheld. The two
// measured pods alone carry 1000 requests/s, saturation 0.92 of the three
// instances' 1089: a lower bound of W that already exceeds the threshold
// 0.8. The scaler must scale out on it (it used to hold), and say that W
// is a lower bound from 2 of 3 pods.
func TestScalerScalesOutOnPartialMetrics(t *testing.T) {
	r, c, m, req, _ := partialBed(t)
	m.rps[req.Name+"-t4-0"], m.rps[req.Name+"-t4-1"] = 500, 500
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	ms := &v1alpha1.ModelService{}
	if err := c.Get(context.Background(), req.NamespacedName, ms); err != nil {
		t.Fatal(err)
	}
	if got := t4Replicas(t, c, req); got <= 3 {
		t.Fatalf("T4 replicas %d after a lower bound of W above the threshold, want > 3 (last decision %+v)", got, ms.Status.LastDecision)
	}
	if d := ms.Status.LastDecision; d == nil || d.Action != "ScaleOut" || !strings.Contains(d.Reason, "from 2 of 3 pods") {
		t.Errorf("last decision %+v, want ScaleOut saying W is measured on 2 of 3 pods", d)
	}
	c2 := meta.FindStatusCondition(ms.Status.Conditions, v1alpha1.ConditionMetricsUnavailable)
	if c2 == nil || c2.Status != metav1.ConditionTrue || !strings.Contains(c2.Message, "W >= 1000.00 req/s from 2 of 3 pods") || !strings.Contains(c2.Message, req.Name+"-t4-2") {
		t.Errorf("MetricsUnavailable %+v, want True with the lower bound, coverage and the unmeasured pod", c2)
	}
}

// TestScalerNeverScalesInOnPartialMetrics: the two measured pods of three
// carry 20 requests/s, a load one instance would serve; the third pod is
// unmeasured, so W may be far higher. Past every cool-down the scaler must
// not scale in on that lower bound: it holds, saying why and naming the
// unmeasured pod, and keeps holding on later decisions.
func TestScalerNeverScalesInOnPartialMetrics(t *testing.T) {
	r, c, m, req, now := partialBed(t)
	m.rps[req.Name+"-t4-0"], m.rps[req.Name+"-t4-1"] = 10, 10
	ms := &v1alpha1.ModelService{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name}}
	holds := decisionsOf(ms, "Hold")
	for i := range 3 {
		if _, err := r.Reconcile(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		if got := t4Replicas(t, c, req); got != 3 {
			t.Fatalf("decision %d: T4 replicas %d while pod %s-t4-2 is unmeasured, want 3 (no scale-in)", i, got, req.Name)
		}
		*now = now.Add(2 * time.Minute)
	}
	if got := decisionsOf(ms, "Hold") - holds; got != 3 {
		t.Errorf("%v Hold decisions, want 3", got)
	}
	if err := c.Get(context.Background(), req.NamespacedName, ms); err != nil {
		t.Fatal(err)
	}
	d := ms.Status.LastDecision
	if d == nil || d.Action != "Hold" || !strings.Contains(d.Reason, "W >= 20.00 req/s from 2 of 3 pods") ||
		!strings.Contains(d.Reason, "scale-in held") || !strings.Contains(d.Reason, req.Name+"-t4-2") {
		t.Errorf("last decision %+v, want Hold: W >= 20.00 req/s from 2 of 3 pods, scale-in held, naming %s-t4-2", d, req.Name)
	}
}

// decisionsOf is how many decisions of action the scaler counted for ms.
func decisionsOf(ms *v1alpha1.ModelService, action string) float64 {
	return testutil.ToFloat64(decisionsTotal.WithLabelValues(ms.Namespace, ms.Name, action))
}

// TestScalerHoldsWhenNoReplicaIsReadyAndMetricsFail: every T4 replica is
// restarting (none Ready) and the metrics API has no value for the
// Deployment or its pods. W is unknown, not 0: past every cool-down the
// scaler must hold the three replicas (it used to take W = 0 and scale
// in to one), with the MetricsUnavailable condition naming the Deployment.
func TestScalerHoldsWhenNoReplicaIsReadyAndMetricsFail(t *testing.T) {
	r, c, _, req, now := partialBed(t)
	ctx := context.Background()
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: req.Namespace, Name: DeploymentName(req.Name, "T4")}, d); err != nil {
		t.Fatal(err)
	}
	d.Status.ReadyReplicas = 0
	if err := c.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		p := &v1.Pod{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: req.Namespace, Name: fmt.Sprintf("%s-t4-%d", req.Name, i)}, p); err != nil {
			t.Fatal(err)
		}
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse}}
		if err := c.Status().Update(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
		if got := t4Replicas(t, c, req); got != 3 {
			t.Fatalf("decision %d: T4 replicas %d with no replica Ready and no metric, want 3 held", i, got)
		}
		*now = now.Add(10 * time.Minute)
	}
	ms := &v1alpha1.ModelService{}
	if err := c.Get(ctx, req.NamespacedName, ms); err != nil {
		t.Fatal(err)
	}
	if d := ms.Status.LastDecision; d == nil || d.Action != "Hold" {
		t.Errorf("last decision %+v, want Hold", d)
	}
	cond := meta.FindStatusCondition(ms.Status.Conditions, v1alpha1.ConditionMetricsUnavailable)
	if cond == nil || cond.Status != metav1.ConditionTrue || !strings.Contains(cond.Message, DeploymentName(req.Name, "T4")) {
		t.Errorf("MetricsUnavailable %+v, want True naming the T4 Deployment", cond)
	}
}
