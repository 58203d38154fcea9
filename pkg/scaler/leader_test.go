package scaler

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
)

// newLeader makes r forget every ModelService, as a hetsev-scaler that
// has just taken the lease knows nothing but what status holds.
func newLeader(r *Reconciler) {
	r.mu.Lock()
	r.state, r.uids = nil, nil
	r.mu.Unlock()
}

// TestNewLeaderFinishesTheReplacementAfterAHold: a replacement in flight
// survives a decision that held (metrics unavailable, which becomes
// lastDecision) and a change of leader: the new leader removes the V100
// once the T4 are ready, as the replacement's completion.
func TestNewLeaderFinishesTheReplacementAfterAHold(t *testing.T) {
	b := newReplaceBed(t)
	b.decide(t)
	if t4 := b.replicas(t, b.t4); t4 != 2 {
		t.Fatalf("start: T4 replicas %d, want 2", t4)
	}
	metrics := b.r.Metrics
	b.r.Metrics = noMetrics{}
	ms := b.decide(t)
	if ms.Status.LastDecision.Action != "Hold" || ms.Status.ScalingState.Replacement == nil {
		t.Fatalf("after the hold: lastDecision %+v, scalingState %+v; want a Hold and the replacement kept", ms.Status.LastDecision, ms.Status.ScalingState)
	}
	newLeader(b.r)
	b.r.Metrics = metrics
	b.setReady(t, b.t4, 2)
	ms = b.decide(t)
	d := ms.Status.LastDecision
	if v := b.replicas(t, b.v100); v != 0 || d.Replacement == nil || d.Replacement.Phase != string(heterogeneity.ReplacementCompleted) {
		t.Errorf("new leader: V100 replicas %d, last decision %s %+v; want the replacement completed", v, d.Action, d.Replacement)
	}
	if c := meta.FindStatusCondition(ms.Status.Conditions, v1alpha1.ConditionReplacement); c == nil || c.Reason != "ReplacementCompleted" {
		t.Errorf("Replacement condition %+v, want ReplacementCompleted", c)
	}
	if ms.Status.ScalingState.Replacement != nil {
		t.Errorf("scalingState.replacement %+v after the completion, want none", ms.Status.ScalingState.Replacement)
	}
}

// rateSeries is a metrics source whose Deployment named dep serves the
// rate *w.
type rateSeries struct {
	dep string
	w   *float64
}

func (m rateSeries) DeploymentMetric(ctx context.Context, ns, name, metric string) (float64, error) {
	if name == m.dep {
		return deploymentRPS{m.dep: *m.w}.DeploymentMetric(ctx, ns, name, metric)
	}
	return 0, nil
}

func (m rateSeries) PodMetrics(ctx context.Context, ns string, sel labels.Selector, metric string) (map[string]float64, error) {
	return deploymentRPS{}.PodMetrics(ctx, ns, sel, metric)
}

// TestNewLeaderRestoresTheRateHistory: the rates a leader observed are in
// status.rateHistory, and a new leader's autoscaler starts from them: its
// stabilized scale-in reads the peak its predecessor saw.
func TestNewLeaderRestoresTheRateHistory(t *testing.T) {
	ctx := context.Background()
	ms := resnet()
	ms.Name = "history"
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	r, c := newFakeReconciler(t, ms, &now)
	r.StatusRefresh = time.Second // every decision writes its measured fields
	w := 0.0
	r.Metrics = rateSeries{dep: DeploymentName(ms.Name, "T4"), w: &w}
	if err := c.Create(ctx, node("t4-node", 8, 16384, "64")); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: ms.Namespace, Name: ms.Name}
	req := reconcile.Request{NamespacedName: key}
	for _, rate := range []float64{0, 300, 900, 600, 200} {
		w = rate
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
		now = now.Add(DefaultIntervalSeconds * time.Second)
	}
	uid := ms.UID
	before := r.state[uid].autoscaler.History()
	got := &v1alpha1.ModelService{}
	if err := c.Get(ctx, key, got); err != nil {
		t.Fatal(err)
	}
	if rh := got.Status.RateHistory; rh == nil || len(rh.Rates) != len(before.Rates) {
		t.Fatalf("status.rateHistory %+v, want the %d rates of the leader's history", rh, len(before.Rates))
	}

	newLeader(r)
	w = 200
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	// The same history as the predecessor's autoscaler given the same
	// rate: the peak of 900 requests/s among them.
	cont := heterogeneity.NewAutoscaler(r.state[uid].autoscaler.Policy)
	cont.SetHistory(before)
	cont.Decide(heterogeneity.Observation{Now: now, ArrivalRate: 200})
	after := r.state[uid].autoscaler.History()
	if !sameRates(after.Rates, cont.History().Rates) || !hasRate(after.Rates, 900) {
		t.Errorf("new leader's rates\n %+v\nwant the predecessor's and the new one, the peak 900 included\n %+v", after.Rates, cont.History().Rates)
	}
}

// TestStatusWriteAgainstTheServersCopy: a status computed from a stale
// cached copy is written as computed, not merged into what the server
// holds since (a condition, a rate and the traffic weights of a later
// write the cache had not seen yet).
func TestStatusWriteAgainstTheServersCopy(t *testing.T) {
	ctx := context.Background()
	ms := resnet()
	ms.Name = "stale"
	c := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(ms).WithStatusSubresource(&v1alpha1.ModelService{}).Build()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &Reconciler{Client: c, APIReader: c, Recorder: record.NewFakeRecorder(10), Now: func() time.Time { return now }}
	stale := &v1alpha1.ModelService{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ms.Namespace, Name: ms.Name}, stale); err != nil {
		t.Fatal(err)
	}
	// A later write the cache has not seen.
	server := stale.DeepCopy()
	setCondition(&server.Status, v1alpha1.ConditionReady, metav1.ConditionTrue, "Reconciled", "Deployments reconciled", 1)
	server.Status.ArrivalRate = "7.00"
	server.Status.TrafficWeights = map[string]int32{"T4": 100}
	if err := c.Status().Update(ctx, server); err != nil {
		t.Fatal(err)
	}
	want := *stale.Status.DeepCopy()
	setCondition(&want, v1alpha1.ConditionReady, metav1.ConditionFalse, "InvalidSpec", "bad", 1)
	want.ArrivalRate = ""
	want.LatencyP98Ms = "12.0"
	if err := r.writeStatusIfChanged(ctx, stale, want); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.ModelService{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ms.Namespace, Name: ms.Name}, got); err != nil {
		t.Fatal(err)
	}
	sortConditions(&want)
	for i := range want.Conditions { // the API keeps seconds
		want.Conditions[i].LastTransitionTime = metav1.NewTime(want.Conditions[i].LastTransitionTime.Truncate(time.Second))
	}
	if !equality.Semantic.DeepEqual(got.Status, want) {
		t.Errorf("server's status\n %+v\nwant what was computed\n %+v", got.Status, want)
	}
}

func hasRate(rates []heterogeneity.RateSample, w float64) bool {
	for _, s := range rates {
		if s.W == w {
			return true
		}
	}
	return false
}

func sameRates(a, b []heterogeneity.RateSample) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].At.Equal(b[i].At) || a[i].W != b[i].W || a[i].LowerBound != b[i].LowerBound {
			return false
		}
	}
	return true
}
