package scaler

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

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
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
)

// deploymentMetrics is a metrics source with requests/s per Deployment;
// pods have no values.
type deploymentMetrics map[string]float64

func (m deploymentMetrics) DeploymentMetric(_ context.Context, ns, name, metric string) (float64, error) {
	if v, ok := m[name]; ok && metric == adapter.MetricRequestsPerSecond {
		return v, nil
	}
	return 0, fmt.Errorf("no %s for %s/%s", metric, ns, name)
}

func (m deploymentMetrics) PodMetrics(_ context.Context, ns string, sel labels.Selector, metric string) (map[string]float64, error) {
	return nil, fmt.Errorf("no %s for pods %s", metric, sel)
}

// noRoomBed is resnet50 on a T4 node and a V100 node with room, an hour
// after its first decision, its T4 Deployment at 3 replicas of which one
// runs and is Ready at 300 requests/s (status edits the Deployment's
// status further). pending shapes the two other pods; with pending nil
// they are not created.
type noRoomBed struct {
	r        *Reconciler
	c        client.Client
	req      reconcile.Request
	t4, v100 string
	ms       *v1alpha1.ModelService
}

func newNoRoomBed(t *testing.T, name string, gen int64, status func(*appsv1.DeploymentStatus), pending func(p *v1.Pod, now time.Time)) *noRoomBed {
	t.Helper()
	ctx := context.Background()
	ms := resnet()
	ms.Name, ms.Generation = name, gen
	ms.Spec.Scaling.ScaleOutPeriodSeconds = ptr(0.0)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	r, c := newFakeReconciler(t, ms, &now)
	b := &noRoomBed{r: r, c: c, ms: ms, t4: DeploymentName(ms.Name, "T4"), v100: DeploymentName(ms.Name, "V100-32GB"),
		req: reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ms.Namespace, Name: ms.Name}}}
	r.Metrics = deploymentMetrics{b.t4: 300}
	v100Node := node("v100-node", 4, 32768, "64")
	g, _ := r.Catalog.ByName("V100-32GB")
	v100Node.Labels[gpuinventory.LabelGPUProduct] = g.ProductLabel
	for _, n := range []*v1.Node{node("t4-node", 8, 16384, "64"), v100Node} {
		if err := c.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Reconcile(ctx, b.req); err != nil { // creates the Deployments
		t.Fatal(err)
	}
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ms.Namespace, Name: b.t4}, d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Replicas = ptr[int32](3)
	if err := c.Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	d.Status.Replicas, d.Status.ReadyReplicas = 3, 1
	if status != nil {
		status(&d.Status)
	}
	if err := c.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour) // past the cool-down of the first decision's scale-out
	for i := range 3 {
		if i > 0 && pending == nil {
			break
		}
		p := pod(fmt.Sprintf("%s-%d", b.t4, i), "t4-node", "resnet50", "2Gi", "0", "2")
		p.Namespace, p.Labels = ms.Namespace, d.Spec.Selector.MatchLabels
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
		if i > 0 {
			p.Spec.NodeName, p.Spec.SchedulerName = "", v1alpha1.SchedulerName
			delete(p.Annotations, v1alpha1.AnnotationGPUIndex)
			p.Status.Phase, p.Status.Conditions = v1.PodPending, nil
			pending(p, now)
		}
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// decide runs the decision and returns the ModelService and the replicas
// of the T4 and V100 Deployments after it.
func (b *noRoomBed) decide(t *testing.T) (*v1alpha1.ModelService, int32, int32) {
	t.Helper()
	ctx := context.Background()
	if _, err := b.r.Reconcile(ctx, b.req); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.ModelService{}
	if err := b.c.Get(ctx, b.req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	replicas := func(name string) int32 {
		d := &appsv1.Deployment{}
		if err := b.c.Get(ctx, types.NamespacedName{Namespace: b.ms.Namespace, Name: name}, d); err != nil {
			t.Fatal(err)
		}
		return replicasOf(d)
	}
	return got, replicas(b.t4), replicas(b.v100)
}

// TestUnschedulableReplicasAreNoCapacity: the T4 Deployment wants 3
// replicas, but the scheduler found room for one; the other two are
// Pending with PodScheduled False, reason Unschedulable. The one running
// T4 instance carries 300 requests/s (saturation 0.83 of its 363, 0.28 if
// all three counted). The decision must count N_T4 = 1, scale out on the
// V100 (where there is room) and not on the T4, and report NoCapacity
// naming T4 and the scheduler's reason at the ModelService's generation.
func TestUnschedulableReplicasAreNoCapacity(t *testing.T) {
	const why = "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 no GPU with 2Gi free"
	b := newNoRoomBed(t, "no-room", 2, nil, func(p *v1.Pod, _ time.Time) {
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable, Message: why}}
	})
	got, t4, v100 := b.decide(t)
	if t4 != 3 || v100 < 1 {
		t.Errorf("replicas T4 %d, V100 %d, want T4 3 and a V100 scale-out (last decision %+v)", t4, v100, got.Status.LastDecision)
	}
	cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionNoCapacity)
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != v1.PodReasonUnschedulable || cond.ObservedGeneration != 2 ||
		!strings.Contains(cond.Message, "T4: 2 of 3 replicas unschedulable") || !strings.Contains(cond.Message, why) {
		t.Errorf("NoCapacity %+v, want True, reason Unschedulable, naming T4's 2 of 3 replicas and the scheduler's message, at generation 2", cond)
	}
}

// TestUnschedulableReplicasOfAnIdleTypeGo: the T4 Deployment has 2
// replicas, both Pending with PodScheduled False (reason Unschedulable),
// so N_T4 = 0; one V100 instance carries the load (10 requests/s, well
// within the saturation threshold), and MinReplicas 1 keeps it. The
// decision removes no running instance, but the T4 replicas add no
// capacity and the load does not need them: they go one per decision,
// the scale-in interval apart, until T4 has 0 replicas; V100 stays at 1.
func TestUnschedulableReplicasOfAnIdleTypeGo(t *testing.T) {
	ctx := context.Background()
	ms := resnet()
	ms.Name, ms.Generation = "idle-type", 1
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	r, c := newFakeReconciler(t, ms, &now)
	t4Name, v100Name := DeploymentName(ms.Name, "T4"), DeploymentName(ms.Name, "V100-32GB")
	r.Metrics = deploymentMetrics{v100Name: 10}
	v100Node := node("v100-node", 4, 32768, "64")
	g, _ := r.Catalog.ByName("V100-32GB")
	v100Node.Labels[gpuinventory.LabelGPUProduct] = g.ProductLabel
	for _, n := range []*v1.Node{node("t4-node", 1, 16384, "64"), v100Node} {
		if err := c.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ms.Namespace, Name: ms.Name}}
	if _, err := r.Reconcile(ctx, req); err != nil { // creates the Deployments
		t.Fatal(err)
	}
	setReplicas := func(name string, replicas, ready int32) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ms.Namespace, Name: name}, d); err != nil {
			t.Fatal(err)
		}
		d.Spec.Replicas = ptr(replicas)
		if err := c.Update(ctx, d); err != nil {
			t.Fatal(err)
		}
		d.Status.Replicas, d.Status.ReadyReplicas = replicas, ready
		if err := c.Status().Update(ctx, d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	t4, v100 := setReplicas(t4Name, 2, 0), setReplicas(v100Name, 1, 1)
	running := pod(v100Name+"-0", "v100-node", "resnet50", "2Gi", "0", "2")
	running.Namespace, running.Labels = ms.Namespace, v100.Spec.Selector.MatchLabels
	running.Spec.NodeSelector[gpuinventory.LabelGPUProduct] = g.ProductLabel
	running.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
	if err := c.Create(ctx, running); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		p := pod(fmt.Sprintf("%s-%d", t4Name, i), "", "resnet50", "2Gi", "", "2")
		p.Namespace, p.Labels = ms.Namespace, t4.Spec.Selector.MatchLabels
		p.Status.Phase = v1.PodPending
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable, Message: "0/2 nodes are available"}}
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(time.Hour)

	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.ModelService{}
	if err := c.Get(ctx, req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	replicas := func(name string) int32 {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ms.Namespace, Name: name}, d); err != nil {
			t.Fatal(err)
		}
		return replicasOf(d)
	}
	if t4, v100 := replicas(t4Name), replicas(v100Name); t4 != 1 || v100 != 1 {
		t.Errorf("replicas T4 %d, V100 %d, want 1 (one per decision) and 1 (last decision %+v)", t4, v100, got.Status.LastDecision)
	}
	// The ReplicaSet removes the unbound pod; the next decision within the
	// scale-in interval keeps the other, the one after it removes it.
	if err := c.Delete(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ms.Namespace, Name: t4Name + "-1"}}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(5 * time.Second)
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if t4 := replicas(t4Name); t4 != 1 {
		t.Errorf("within the scale-in interval: T4 %d, want 1 kept", t4)
	}
	now = now.Add(heterogeneity.DefaultPolicy().ScaleInInterval)
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	if t4, v100 := replicas(t4Name), replicas(v100Name); t4 != 0 || v100 != 1 {
		t.Errorf("an interval later: replicas T4 %d, V100 %d, want 0 and 1 (last decision %+v)", t4, v100, got.Status.LastDecision)
	}
}

// TestReplacementKeepsItsPendingReplicas: the unschedulable replicas of
// the column a replacement in flight adds to stay while it waits (they
// are its new instances, waiting for room); once it has timed out they go.
func TestReplacementKeepsItsPendingReplicas(t *testing.T) {
	dep := func(name string, replicas int32) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.DeploymentSpec{Replicas: &replicas}}
	}
	deps := []*appsv1.Deployment{dep("r-v100", 1), dep("r-t4", 2)}
	u := []unschedulable{{}, {pods: 2}}
	obs := heterogeneity.Observation{ArrivalRate: 200, Types: []heterogeneity.TypeState{{GPUType: "V100-32GB", Running: 1}, {GPUType: "T4"}}}
	pol := heterogeneity.DefaultPolicy()
	act := heterogeneity.Action{Kind: heterogeneity.ActionNone, Delta: []int{0, 0}, Saturation: 0.3,
		Replacement: &heterogeneity.Replacement{From: "V100-32GB", To: "T4", Add: 2, Remove: 1}}
	if got, _ := targetReplicas(deps, u, act, obs, pol, ""); got[1] != 2 {
		t.Errorf("while the replacement waits: T4 replicas %d, want its 2 kept", got[1])
	}
	act.ReplacementPhase = heterogeneity.ReplacementTimedOut
	if got, removed := targetReplicas(deps, u, act, obs, pol, ""); got[1] != 1 || !removed {
		t.Errorf("after its timeout: T4 replicas %d (surplus removed %t), want one of the 2 unschedulable gone", got[1], removed)
	}
}

// TestSurplusGoesOnePerDecisionThroughTheBrakes: twenty T4 replicas of
// which eighteen restart after a registry outage and count as not
// starting; the two running carry the quiet load within the threshold,
// and the service scaled out a minute ago. The replicas that add no
// capacity go as a scale-in would: none within the cool-down after the
// scale-out, then one per decision, each starting the scale-in interval,
// and none while the stabilization window's peak rate would saturate the
// running instances. Removed all at once (as when the load is quiet and
// no brake applies), the outage would leave the service with 2 replicas.
func TestSurplusGoesOnePerDecisionThroughTheBrakes(t *testing.T) {
	replicas := int32(20)
	deps := []*appsv1.Deployment{{ObjectMeta: metav1.ObjectMeta{Name: "r-t4"}, Spec: appsv1.DeploymentSpec{Replicas: &replicas}}}
	u := []unschedulable{{notStarting: notStarting{pods: 18}}}
	pol := heterogeneity.DefaultPolicy()
	pol.MinReplicas, pol.ScaleOutPeriod = 1, 0
	as := heterogeneity.NewAutoscaler(pol)
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	obsAt := func(at time.Time, rate float64) heterogeneity.Observation {
		return heterogeneity.Observation{Now: at, ArrivalRate: rate, Types: []heterogeneity.TypeState{
			{GPUType: "T4", Running: 2, ThroughputRPS: 363, LatencyMs: 22.4, LaunchSeconds: 20, MaxAdditional: 10}}}
	}
	as.Commit(as.Propose(obsAt(t0, 700))) // a burst: scale-out
	if as.State().LastScaleOut.IsZero() {
		t.Fatal("setup: the burst did not scale out")
	}
	decide := func(at time.Time, rate float64) (int32, string) {
		obs := obsAt(at, rate)
		act := as.Propose(obs)
		act.Kind, act.Delta = heterogeneity.ActionNone, []int{0} // the test drives only the surplus
		held := as.SurplusHeld(obs)
		got, removed := targetReplicas(deps, u, act, obs, pol, held)
		if removed {
			as.RecordSurplusRemoval(at)
		}
		return got[0], held
	}
	if got, held := decide(t0.Add(time.Minute), 50); got != 20 || !strings.Contains(held, "cool-down") {
		t.Errorf("within the cool-down: T4 %d (held %q), want 20 kept by the cool-down", got, held)
	}
	decide(t0.Add(3*time.Minute), 700) // a second burst, within the cool-down
	// Past the cool-down, but the window still holds the second burst of
	// 700 requests/s, above what 2 running T4s carry at the threshold.
	if got, held := decide(t0.Add(6*time.Minute), 50); got != 20 || !strings.Contains(held, "saturation") {
		t.Errorf("burst within the stabilization window: T4 %d (held %q), want 20 kept", got, held)
	}
	at := t0.Add(8*time.Minute + 30*time.Second)
	if got, held := decide(at, 50); got != 19 {
		t.Errorf("past the brakes: T4 %d (held %q), want one replica gone (19)", got, held)
	}
	replicas = 19
	u[0].notStarting.pods = 17
	if got, held := decide(at.Add(5*time.Second), 50); got != 19 || !strings.Contains(held, "interval") {
		t.Errorf("the next decision: T4 %d (held %q), want 19 kept by the scale-in interval", got, held)
	}
	if got, _ := decide(at.Add(pol.ScaleInInterval), 50); got != 18 {
		t.Errorf("an interval later: T4 %d, want one more gone (18)", got)
	}
}

// TestPendingReplicasNotBeingPlacedAreNoCapacity: as
// TestUnschedulableReplicasAreNoCapacity (3 T4 replicas, one running at
// 300 requests/s), but the two others are not placed for other reasons:
// a scheduler error, a scheduling gate, no scheduler trying them for two
// minutes, or not created at all (the Deployment's ReplicaFailure). Each
// time N_T4 = 1, the scale-out goes to the V100, and NoCapacity names the
// cause. A pod created 10 s ago that no scheduler has tried yet still
// counts: the scheduler has not had its turn.
func TestPendingReplicasNotBeingPlacedAreNoCapacity(t *testing.T) {
	for _, c := range []struct {
		name    string
		pending func(p *v1.Pod, created time.Time) // nil: the pods are not created
		want    string                             // in NoCapacity's message; "" wants no scale-out
	}{
		{"scheduler-error", func(p *v1.Pod, _ time.Time) {
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonSchedulerError, Message: "binding rejected"}}
		}, "T4: 2 of 3 replicas unschedulable (scheduler error: binding rejected)"},
		{"gated", func(p *v1.Pod, _ time.Time) {
			p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/quota"}}
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonSchedulingGated}}
		}, "held by scheduling gate(s) example.com/quota"},
		{"never-tried", func(p *v1.Pod, created time.Time) {
			p.CreationTimestamp = metav1.NewTime(created.Add(-2 * time.Minute))
		}, `not tried by scheduler "hetsev-scheduler" for 2m0s`},
		{"not-created", nil, "T4: 2 of 3 replicas not created (ReplicaFailure: pods \"x\" is forbidden: exceeded quota)"},
		{"just-created", func(p *v1.Pod, created time.Time) {
			p.CreationTimestamp = metav1.NewTime(created.Add(-10 * time.Second))
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var status func(*appsv1.DeploymentStatus)
			if c.pending == nil {
				status = func(st *appsv1.DeploymentStatus) {
					st.Replicas = 1
					st.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentReplicaFailure, Status: v1.ConditionTrue, Reason: "FailedCreate",
						Message: `pods "x" is forbidden: exceeded quota`}}
				}
			}
			got, _, v100 := newNoRoomBed(t, "pending-"+c.name, 1, status, c.pending).decide(t)
			cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionNoCapacity)
			if c.want == "" {
				if v100 != 0 || cond == nil || cond.Status != metav1.ConditionFalse {
					t.Errorf("V100 replicas %d, NoCapacity %+v: want no scale-out and no NoCapacity while the scheduler has its turn", v100, cond)
				}
				return
			}
			if v100 < 1 {
				t.Errorf("V100 replicas %d, want a scale-out (last decision %+v)", v100, got.Status.LastDecision)
			}
			if cond == nil || cond.Status != metav1.ConditionTrue || !strings.Contains(cond.Message, c.want) {
				t.Errorf("NoCapacity %+v, want True saying %q", cond, c.want)
			}
		})
	}
}
