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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
)

// notStartingFixture is a resnet ModelService (T4 launchSeconds 20: a
// grace of 2 x 20 + 30 = 70 s) whose Deployments exist, on a T4 node
// with 8 GPUs and a V100 node with 4, with the T4 Deployment at replicas
// T4 replicas and t4RPS requests/s on it. now is the reconciler's clock.
type notStartingFixture struct {
	r     *Reconciler
	c     client.Client
	req   reconcile.Request
	t4    *appsv1.Deployment
	v100  string
	now   *time.Time
	start time.Time
}

func newNotStartingFixture(t *testing.T, name string, replicas int32, t4RPS float64) *notStartingFixture {
	t.Helper()
	ctx := context.Background()
	ms := resnet()
	ms.Name, ms.Generation = name, 2
	ms.Spec.Scaling.ScaleOutPeriodSeconds = ptr(0.0)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	r, c := newFakeReconciler(t, ms, &now)
	t4Name, v100Name := DeploymentName(ms.Name, "T4"), DeploymentName(ms.Name, "V100-32GB")
	r.Metrics = deploymentMetrics{t4Name: t4RPS}
	v100Node := node("v100-node", 4, 32768, "64")
	g, _ := r.Catalog.ByName("V100-32GB")
	v100Node.Labels[gpuinventory.LabelGPUProduct] = g.ProductLabel
	for _, n := range []*v1.Node{node("t4-node", 8, 16384, "64"), v100Node} {
		if err := c.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ms.Namespace, Name: ms.Name}}
	if _, err := r.Reconcile(ctx, req); err != nil { // creates the Deployments
		t.Fatal(err)
	}
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ms.Namespace, Name: t4Name}, d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Replicas = ptr(replicas)
	if err := c.Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	v := &appsv1.Deployment{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ms.Namespace, Name: v100Name}, v); err != nil {
		t.Fatal(err)
	}
	v.Spec.Replicas = ptr[int32](0)
	if err := c.Update(ctx, v); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour) // past the cool-down of the first decision
	return &notStartingFixture{r: r, c: c, req: req, t4: d, v100: v100Name, now: &now, start: now}
}

// boundPod creates T4 pod i bound to t4-node, scheduled at scheduled,
// Ready when ready, with waiting (if set) as its container's state.
func (f *notStartingFixture) boundPod(t *testing.T, i int, scheduled time.Time, ready bool, waiting *v1.ContainerStateWaiting) string {
	t.Helper()
	p := pod(fmt.Sprintf("%s-%d", f.t4.Name, i), "t4-node", "resnet50", "2Gi", fmt.Sprint(i), "2")
	p.Namespace, p.Labels = f.t4.Namespace, f.t4.Spec.Selector.MatchLabels
	p.Status.Phase = v1.PodRunning
	p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(scheduled)}}
	if ready {
		p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue})
	} else {
		p.Status.Phase = v1.PodPending
		p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: "ContainersNotReady"})
	}
	if waiting != nil {
		p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "server", State: v1.ContainerState{Waiting: waiting}}}
	}
	if err := f.c.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return p.Name
}

// decide runs a decision at the fixture's clock and returns the
// ModelService and the replicas of T4 and V100 after it.
func (f *notStartingFixture) decide(t *testing.T) (*v1alpha1.ModelService, int32, int32) {
	t.Helper()
	ctx := context.Background()
	if _, err := f.r.Reconcile(ctx, f.req); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.ModelService{}
	if err := f.c.Get(ctx, f.req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	replicas := func(name string) int32 {
		d := &appsv1.Deployment{}
		if err := f.c.Get(ctx, types.NamespacedName{Namespace: f.t4.Namespace, Name: name}, d); err != nil {
			t.Fatal(err)
		}
		return replicasOf(d)
	}
	return got, replicas(f.t4.Name), replicas(f.v100)
}

// TestImageNeverPullIsNotCapacity: the T4 Deployment wants 2 replicas;
// one is Ready and carries 300 requests/s, the other is bound to t4-node
// with its container waiting in ErrImageNeverPull (it was scheduled just
// now, well within its launch time). Counted, the two would run at
// saturation 0.41 of their 726 requests/s and no scale-out would come;
// left out of N_T4, the one instance runs at 0.83 and the decision scales
// out, on the T4 (the cheaper type, whose free slots stay). NotStarting
// is True with reason ErrImageNeverPull, naming T4, the
// pod, its node and the kubelet's message, at the ModelService's
// generation, with a Warning event.
func TestImageNeverPullIsNotCapacity(t *testing.T) {
	f := newNotStartingFixture(t, "never-pull", 2, 300)
	f.boundPod(t, 0, f.start.Add(-time.Hour), true, nil)
	const why = `Container image "registry.local/resnet50:v1" is not present with pull policy of Never`
	stuck := f.boundPod(t, 1, f.start, false, &v1.ContainerStateWaiting{Reason: "ErrImageNeverPull", Message: why})

	got, t4, v100 := f.decide(t)
	if t4 != 3 || v100 != 0 {
		t.Errorf("replicas T4 %d, V100 %d, want a scale-out to 3 on the T4, whose node keeps free slots (last decision %+v)", t4, v100, got.Status.LastDecision)
	}
	want := fmt.Sprintf("T4: 1 of 2 replicas not starting (pod %s on t4-node: ErrImageNeverPull: %s)", stuck, why)
	cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionNotStarting)
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != "ErrImageNeverPull" || cond.Message != want || cond.ObservedGeneration != 2 {
		t.Errorf("NotStarting %+v, want True, reason ErrImageNeverPull, message %q, at generation 2", cond, want)
	}
	if e := drainEvents(f.r); !strings.Contains(e, "Warning NotStarting "+want) {
		t.Errorf("events %q, want a Warning NotStarting with the condition's message", e)
	}
}

// TestNotReadyAfterLaunchIsNotCapacity: three T4 replicas, one Ready, one
// bound and not Ready for 71 s (past 2 x 20 s + 30 s) and one bound and
// not Ready for 69 s, none with a waiting reason. Only the 71 s one is
// left out of N_T4 (2 of 3 count), the decision's surplus (100
// requests/s) takes one replica, and NotStarting says so with reason
// NotReadyAfterLaunch.
func TestNotReadyAfterLaunchIsNotCapacity(t *testing.T) {
	f := newNotStartingFixture(t, "slow-start", 3, 100)
	f.boundPod(t, 0, f.start.Add(-time.Hour), true, nil)
	late := f.boundPod(t, 1, f.start.Add(-71*time.Second), false, nil)
	f.boundPod(t, 2, f.start.Add(-69*time.Second), false, nil)

	ns, err := f.r.notStartingOf(context.Background(), f.t4, *f.now, 20)
	if err != nil {
		t.Fatal(err)
	}
	if n := runningOf(f.t4, unschedulable{notStarting: ns}); n != 2 {
		t.Errorf("N_T4 = %d, want 2 (the replica not Ready 71 s after scheduling left out, the 69 s one counted)", n)
	}
	got, t4, _ := f.decide(t)
	if d := got.Status.LastDecision; d == nil || t4 != 2 {
		t.Errorf("T4 replicas %d, last decision %+v; want 2: one replica fewer on the surplus (100 requests/s), which the ReplicaSet takes from the pods not Ready", t4, d)
	}
	want := fmt.Sprintf("T4: 1 of 3 replicas not starting (pod %s on t4-node: NotReadyAfterLaunch: not Ready 71s after it was scheduled on t4-node)", late)
	cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionNotStarting)
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != ReasonNotReadyAfterLaunch || cond.Message != want {
		t.Errorf("NotStarting %+v, want True, reason NotReadyAfterLaunch, message %q", cond, want)
	}
}

// TestNotStartingFalseWhenReady: two T4 replicas Ready and one bound 10 s
// ago, not yet Ready (within its launch time): none is left out and
// NotStarting is False, reason Starting.
func TestNotStartingFalseWhenReady(t *testing.T) {
	f := newNotStartingFixture(t, "all-ready", 3, 100)
	f.boundPod(t, 0, f.start.Add(-time.Hour), true, nil)
	f.boundPod(t, 1, f.start.Add(-time.Hour), true, nil)
	f.boundPod(t, 2, f.start.Add(-10*time.Second), false, &v1.ContainerStateWaiting{Reason: "ContainerCreating"})

	ns, err := f.r.notStartingOf(context.Background(), f.t4, *f.now, 20)
	if err != nil {
		t.Fatal(err)
	}
	if n := runningOf(f.t4, unschedulable{notStarting: ns}); n != 3 {
		t.Errorf("N_T4 = %d, want all 3", n)
	}
	got, _, _ := f.decide(t)
	cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionNotStarting)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != "Starting" ||
		cond.Message != "every bound replica is Ready or within its launch time" || cond.ObservedGeneration != 2 {
		t.Errorf("NotStarting %+v, want False, reason Starting, at generation 2", cond)
	}
}

// TestNotStartingWithoutMetrics: of two T4 replicas one is Ready but
// unmeasured (the adapter has no arrival rate for it) and one waits in
// ErrImageNeverPull: the decision holds (MetricsUnavailable), and
// NotStarting is True all the same, with the kubelet's reason.
func TestNotStartingWithoutMetrics(t *testing.T) {
	f := newNotStartingFixture(t, "unmeasured", 2, 0)
	f.r.Metrics = deploymentMetrics{}
	f.t4.Status.Replicas, f.t4.Status.ReadyReplicas = 2, 1
	if err := f.c.Status().Update(context.Background(), f.t4); err != nil {
		t.Fatal(err)
	}
	f.boundPod(t, 0, f.start.Add(-time.Hour), true, nil)
	const why = `Container image "registry.local/resnet50:v1" is not present with pull policy of Never`
	stuck := f.boundPod(t, 1, f.start, false, &v1.ContainerStateWaiting{Reason: "ErrImageNeverPull", Message: why})

	got, t4, _ := f.decide(t)
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionMetricsUnavailable); c == nil || c.Status != metav1.ConditionTrue || t4 != 2 {
		t.Fatalf("MetricsUnavailable %+v, T4 replicas %d: want a hold on no metrics at 2 replicas", c, t4)
	}
	want := fmt.Sprintf("T4: 1 of 2 replicas not starting (pod %s on t4-node: ErrImageNeverPull: %s)", stuck, why)
	cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionNotStarting)
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != "ErrImageNeverPull" || cond.Message != want {
		t.Errorf("NotStarting %+v, want True, reason ErrImageNeverPull, message %q", cond, want)
	}
}

// TestMaxReplicasCountsStuckReplicas: MaxReplicas 2, and both T4
// replicas wait in ErrImageNeverPull (N = 0, below MinReplicas 1). The
// scale-out the minimum asks for must not take the Deployments past 2
// replicas in all: the cap bounds what the service holds, stuck or not,
// so an image no node has cannot grow the service at every decision.
func TestMaxReplicasCountsStuckReplicas(t *testing.T) {
	f := newNotStartingFixture(t, "capped", 2, 0)
	ctx := context.Background()
	ms := &v1alpha1.ModelService{}
	if err := f.c.Get(ctx, f.req.NamespacedName, ms); err != nil {
		t.Fatal(err)
	}
	ms.Spec.Scaling.MaxReplicas = 2
	if err := f.c.Update(ctx, ms); err != nil {
		t.Fatal(err)
	}
	const why = `Container image "registry.local/resnet50:v1" is not present with pull policy of Never`
	for i := 0; i < 2; i++ {
		f.boundPod(t, i, f.start, false, &v1.ContainerStateWaiting{Reason: "ErrImageNeverPull", Message: why})
	}
	for step := 0; step < 3; step++ {
		got, t4, v100 := f.decide(t)
		if t4+v100 > 2 {
			t.Fatalf("decision %d: replicas T4 %d + V100 %d > MaxReplicas 2 (last decision %+v)", step, t4, v100, got.Status.LastDecision)
		}
		if d := got.Status.LastDecision; step == 0 && (d == nil || !strings.Contains(d.Reason, "not starting (1 of "+f.t4.Name+"): max replicas 2 reached")) {
			t.Errorf("last decision %+v, want the reason to name the stuck replica dropped for max replicas 2", d)
		}
		*f.now = f.now.Add(time.Minute)
	}
}

// TestStuckReplicasDoNotGrowTheService: no maxReplicas, and every T4
// replica waits in ErrImageNeverPull (N = 0, below MinReplicas 1). Each
// decision scales out by one; were all stuck replicas kept beside each
// scale-out, the service would grow by one at every decision for as long
// as the image is missing. A scale-out keeps at most as many stuck
// replicas as it adds: the T4 Deployment settles at 2.
func TestStuckReplicasDoNotGrowTheService(t *testing.T) {
	f := newNotStartingFixture(t, "replaced", 1, 0)
	const why = `Container image "registry.local/resnet50:v1" is not present with pull policy of Never`
	f.boundPod(t, 0, f.start, false, &v1.ContainerStateWaiting{Reason: "ErrImageNeverPull", Message: why})
	for step := 0; step < 3; step++ {
		got, t4, v100 := f.decide(t)
		if d := got.Status.LastDecision; d == nil || d.Action != "ScaleOut" {
			t.Fatalf("decision %d: %+v, want a scale-out (0 running < min replicas 1)", step, d)
		}
		if t4+v100 > 2 {
			t.Fatalf("decision %d: replicas T4 %d + V100 %d, want at most 2 (none running, one added, one stuck kept): the stuck replicas grow the service", step, t4, v100)
		}
		// The ReplicaSet's new pod is stuck as well.
		f.boundPod(t, 10+step, *f.now, false, &v1.ContainerStateWaiting{Reason: "ErrImageNeverPull", Message: why})
		*f.now = f.now.Add(time.Minute)
	}
}

// drainEvents returns the events r's FakeRecorder holds, one a line.
func drainEvents(r *Reconciler) string {
	rec := r.Recorder.(*record.FakeRecorder)
	var out []string
	for len(rec.Events) > 0 {
		out = append(out, <-rec.Events)
	}
	return strings.Join(out, "\n")
}

// TestRestartedReplicaIsNotStuck: a replica scheduled an hour ago that
// served and restarts is not "not starting" within the grace of its
// restart: its container started 20 s ago (a readiness blip), or its last
// run lasted two hours and it now waits in CrashLoopBackOff or
// ImagePullBackOff (the registry down). Past the grace since it last ran
// it is. A pod whose container never ran long stays stuck at once.
func TestRestartedReplicaIsNotStuck(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	grace := notStartingGrace(20) // 70 s
	bound := func(statuses ...v1.ContainerStatus) *v1.Pod {
		p := &v1.Pod{Spec: v1.PodSpec{NodeName: "n"}, Status: v1.PodStatus{Phase: v1.PodRunning,
			Conditions: []v1.PodCondition{
				{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))},
				{Type: v1.PodReady, Status: v1.ConditionFalse},
			}, ContainerStatuses: statuses}}
		return p
	}
	ranFor := func(d time.Duration, ended time.Time) v1.ContainerState {
		return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{StartedAt: metav1.NewTime(ended.Add(-d)), FinishedAt: metav1.NewTime(ended)}}
	}
	for name, c := range map[string]struct {
		pod  *v1.Pod
		want bool
	}{
		"readiness blip: restarted 20 s ago": {bound(v1.ContainerStatus{Name: "m", RestartCount: 1,
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-20 * time.Second))}}}), false},
		"restarted 5 min ago, never Ready since": {bound(v1.ContainerStatus{Name: "m", RestartCount: 1,
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-5 * time.Minute))}}}), true},
		"served 2 h, crash-looping for 30 s": {bound(v1.ContainerStatus{Name: "m", RestartCount: 2,
			State:                v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: ranFor(2*time.Hour, now.Add(-30*time.Second))}), false},
		"served 2 h, image pull failing for 10 min": {bound(v1.ContainerStatus{Name: "m", RestartCount: 1,
			State:                v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ImagePullBackOff"}},
			LastTerminationState: ranFor(2*time.Hour, now.Add(-10*time.Minute))}), true},
		"crashes within seconds of every start": {bound(v1.ContainerStatus{Name: "m", RestartCount: 5,
			State:                v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: ranFor(3*time.Second, now.Add(-10*time.Second))}), true},
	} {
		if _, _, got := podNotStarting(c.pod, now, grace); got != c.want {
			t.Errorf("%s: not starting %t, want %t", name, got, c.want)
		}
	}
}

// TestScaleOutNeverLowersAType: five T4 replicas of which three restart
// and count as not starting; a scale-out of one must not lower the
// Deployment below its five (it used to set 2 + 1 + 1 = 4).
func TestScaleOutNeverLowersAType(t *testing.T) {
	replicas := int32(5)
	deps := []*appsv1.Deployment{{ObjectMeta: metav1.ObjectMeta{Name: "r-t4"}, Spec: appsv1.DeploymentSpec{Replicas: &replicas}}}
	u := []unschedulable{{notStarting: notStarting{pods: 3}}}
	act := heterogeneity.Action{Kind: heterogeneity.ActionScaleOut, Delta: []int{1}, Saturation: 0.9}
	obs := heterogeneity.Observation{ArrivalRate: 500, Types: []heterogeneity.TypeState{{GPUType: "T4", Running: 2}}}
	if got, _ := targetReplicas(deps, u, act, obs, heterogeneity.DefaultPolicy(), ""); got[0] < 5 {
		t.Errorf("scale-out: T4 replicas %d, want at least 5", got[0])
	}
}
