package scaler

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// explainBed is a ModelService resnet50 (T4 and V100-32GB) whose T4
// Deployment runs three Ready pods, one per GPU, on a T4 node of t4GPUs
// GPUs, beside a V100 node of 4 free GPUs; past any cool-down, no
// scale-out period, status.decisions kept to history; each pod serves
// 1000/3 requests/s (saturation 0.92 of the three instances' 1089). The
// recorder's events so far are drained.
func explainBed(t *testing.T, t4GPUs, history int) (*Reconciler, client.Client, *podMetrics, reconcile.Request, *time.Time) {
	t.Helper()
	ctx := context.Background()
	ms := resnet()
	ms.Name = "explain-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	ms.Spec.Scaling.ScaleOutPeriodSeconds = ptr(0.0)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	r, c := newFakeReconciler(t, ms, &now)
	r.DecisionHistory = history
	m := &podMetrics{c: c, rps: map[string]float64{}}
	r.Metrics = m
	v100 := node("v100-node", 4, 32768, "64")
	v100.Labels[gpuinventory.LabelGPUProduct] = "Tesla-V100-SXM2-32GB"
	for _, n := range []*v1.Node{node("t4-node", t4GPUs, 16384, "64"), v100} {
		if err := c.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
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
		m.rps[p.Name] = 1000.0 / 3
	}
	drainEvents(r)
	now = now.Add(time.Hour)
	return r, c, m, req, &now
}

// getMS reads the ModelService of req.
func getMS(t *testing.T, c client.Client, req reconcile.Request) *v1alpha1.ModelService {
	t.Helper()
	ms := &v1alpha1.ModelService{}
	if err := c.Get(context.Background(), req.NamespacedName, ms); err != nil {
		t.Fatal(err)
	}
	return ms
}

// typeOf is the column gpuType of d, or nil.
func typeOf(d *v1alpha1.Decision, gpuType string) *v1alpha1.TypeDecision {
	for i := range d.Types {
		if d.Types[i].GPUType == gpuType {
			return &d.Types[i]
		}
	}
	return nil
}

// A scale-out of 1000 requests/s on three T4 instances (target 1250 at
// threshold 0.8) adds one T4: status.lastDecision says, per type, the
// replicas after it, the capacity planned (4 x 363 requests/s on T4), the
// free slots (T4: 8 GPUs less the 3 in use; V100-32GB: 4), the chosen
// and the rejected V100-32GB objective, and in words why V100-32GB lost.
func TestDecisionExplainsScaleOutOntoT4(t *testing.T) {
	r, c, _, req, _ := explainBed(t, 8, DefaultDecisionHistory)
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	d := getMS(t, c, req).Status.LastDecision
	if d == nil || d.Action != "ScaleOut" || d.Delta["T4"] != 1 {
		t.Fatalf("last decision %+v, want ScaleOut +1 T4", d)
	}
	t4, v100 := typeOf(d, "T4"), typeOf(d, "V100-32GB")
	if t4 == nil || v100 == nil || len(d.Types) != 2 {
		t.Fatalf("types %+v, want T4 and V100-32GB", d.Types)
	}
	if t4.Replicas != 4 || t4.CapacityRPS != "1452.00" || t4.FreeSlots != 5 || t4.CostRatio != "1.00" {
		t.Errorf("T4 %+v, want replicas 4, capacityRPS 1452.00, freeSlots 5, costRatio 1.00", *t4)
	}
	if v100.Replicas != 0 || v100.CapacityRPS != "0.00" || v100.FreeSlots != 4 || v100.CostRatio != "3.80" {
		t.Errorf("V100-32GB %+v, want replicas 0, capacityRPS 0.00, freeSlots 4, costRatio 3.80", *v100)
	}
	alt := d.Alternative
	if alt == nil || alt.Delta["V100-32GB"] != 1 || len(alt.Delta) != 1 {
		t.Fatalf("alternative %+v, want +1 V100-32GB", alt)
	}
	if d.Objective == "" || alt.Objective == "" || !(parseF(t, d.Objective) <= parseF(t, alt.Objective)) {
		t.Errorf("objective %q, alternative's %q: want chosen <= alternative", d.Objective, alt.Objective)
	}
	for _, want := range []string{"+1 T4", "T4: 1 of 5 free slots taken", "V100-32GB rejected: costs"} {
		if !strings.Contains(d.Reason, want) {
			t.Errorf("reason %q, want it to say %q", d.Reason, want)
		}
	}
}

// With the T4 node's three GPUs all in use, a scale-out goes to
// V100-32GB, and the reason says T4 is full.
func TestDecisionSaysTypeIsFull(t *testing.T) {
	r, c, _, req, _ := explainBed(t, 3, DefaultDecisionHistory)
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	d := getMS(t, c, req).Status.LastDecision
	if d == nil || d.Action != "ScaleOut" || d.Delta["V100-32GB"] != 1 {
		t.Fatalf("last decision %+v, want ScaleOut +1 V100-32GB", d)
	}
	if !strings.Contains(d.Reason, "T4 full: 0 free slots on 3 GPUs") {
		t.Errorf("reason %q, want it to say T4 full: 0 free slots on 3 GPUs", d.Reason)
	}
	if t4 := typeOf(d, "T4"); t4 == nil || t4.FreeSlots != 0 {
		t.Errorf("T4 %+v, want freeSlots 0", t4)
	}
}

// status.decisions keeps the decisions that changed replicas or the
// action, oldest first, at most --decision-history of them: the bed's
// scale-out to min replicas, the scale-out, then None (cool-down), whose
// repeat is not kept; with history 2 the first goes. With 0 none are kept, and
// lastDecision still is.
func TestDecisionHistoryBoundedAndDeduplicated(t *testing.T) {
	for _, tc := range []struct {
		history int
		want    []string
	}{
		{10, []string{"ScaleOut", "ScaleOut", "None"}},
		{2, []string{"ScaleOut", "None"}},
		{0, nil},
	} {
		t.Run(fmt.Sprint(tc.history), func(t *testing.T) {
			r, c, _, req, now := explainBed(t, 8, tc.history)
			for range 3 {
				if _, err := r.Reconcile(context.Background(), req); err != nil {
					t.Fatal(err)
				}
				*now = now.Add(DefaultIntervalSeconds * time.Second)
			}
			st := getMS(t, c, req).Status
			var got []string
			for _, d := range st.Decisions {
				got = append(got, d.Action)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("decisions %v, want %v", got, tc.want)
			}
			if st.LastDecision == nil || st.LastDecision.Action != "None" {
				t.Fatalf("last decision %+v, want None", st.LastDecision)
			}
			if n := len(st.Decisions); n > 0 && st.Decisions[n-1].Time != st.LastDecision.Time {
				t.Errorf("newest of decisions at %v, lastDecision at %v: want the same decision", st.Decisions[n-1].Time, st.LastDecision.Time)
			}
		})
	}
}

// Each scaling action gets one Normal event, named for it, whose message
// is the decision's reason; a decision that changes nothing gets none.
func TestDecisionEventPerAction(t *testing.T) {
	r, c, m, req, now := explainBed(t, 8, DefaultDecisionHistory)
	step := func(want string) {
		t.Helper()
		if _, err := r.Reconcile(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		var normal []string
		for _, e := range strings.Split(drainEvents(r), "\n") {
			if strings.HasPrefix(e, v1.EventTypeNormal+" ") {
				normal = append(normal, e)
			}
		}
		if want == "" {
			if len(normal) != 0 {
				t.Errorf("events %q, want no Normal event", normal)
			}
			return
		}
		d := getMS(t, c, req).Status.LastDecision
		if len(normal) != 1 || normal[0] != v1.EventTypeNormal+" "+want+" "+d.Reason {
			t.Errorf("Normal events %q, want one %q with the reason %q", normal, want, d.Reason)
		}
	}
	step("ScaleOut")
	*now = now.Add(DefaultIntervalSeconds * time.Second)
	step("") // None: within the cool-down
	*now = now.Add(DefaultIntervalSeconds * time.Second)
	step("") // its repeat
	*now = now.Add(time.Hour)
	for p := range m.rps {
		m.rps[p] = 10
	}
	step("ScaleIn")
}

func parseF(t *testing.T, s string) float64 {
	t.Helper()
	var v float64
	if _, err := fmt.Sscan(s, &v); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return v
}
