package integration

import (
	"testing"
	"time"

	"k8s.io/client-go/tools/record"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/scaler"
)

// TestScalerDecisionsRoundTripThroughCRD: the explanation of a decision
// (status.lastDecision.types, objective, alternative) and the history
// status.decisions are kept by the API server's structural schema, which
// prunes fields the CRD does not declare: read back from the server, two
// scale-outs (min replicas, then 1000 requests/s onto T4 with V100-32GB
// rejected) are both in status.decisions, the newest being lastDecision,
// with its per-type account and the rejected alternative.
func TestScalerDecisionsRoundTripThroughCRD(t *testing.T) {
	b := newReconcileBed(t)
	ms := b.modelService(t, "resnet50", func(ms *v1alpha1.ModelService) {
		ms.Spec.Profiles = append(ms.Spec.Profiles, v1alpha1.GPUProfile{GPUType: "V100-32GB", ThroughputRPS: 709, LatencyMs: 11.5, GPUMemory: "2Gi"})
	})
	t4 := scaler.DeploymentName(ms.Name, "T4")
	r := b.reconciler(record.NewFakeRecorder(100))
	r.DecisionHistory = scaler.DefaultDecisionHistory
	b.reconcile(t, r, ms.Name) // min replicas: one T4
	b.metrics.set(t4, 1000)    // 1000 / (363 * 0.8): three more T4
	b.now = b.now.Add(15 * time.Second)
	b.reconcile(t, r, ms.Name)

	st := b.get(t, ms.Name).Status
	d := st.LastDecision
	if d == nil || d.Action != "ScaleOut" {
		t.Fatalf("lastDecision %+v, want a ScaleOut", d)
	}
	if len(st.Decisions) != 2 || st.Decisions[0].Action != "ScaleOut" || !d.Time.Equal(&st.Decisions[1].Time) || d.Reason != st.Decisions[1].Reason {
		t.Errorf("status.decisions %+v, want the two scale-outs, the newest being lastDecision", st.Decisions)
	}
	var t4d *v1alpha1.TypeDecision
	v100 := false
	for i := range d.Types {
		switch d.Types[i].GPUType {
		case "T4":
			t4d = &d.Types[i]
		case "V100-32GB":
			v100 = true
		}
	}
	if t4d == nil || !v100 {
		t.Errorf("lastDecision.types %+v, want T4 and V100-32GB among them", d.Types)
	}
	if want := b.replicas(t, t4); t4d != nil && (t4d.Replicas != want || t4d.CapacityRPS == "" || t4d.CostRatio != "1.00" || t4d.FreeSlots <= 0) {
		t.Errorf("lastDecision.types T4 %+v, want replicas %d, a capacity, cost ratio 1.00 and free slots", *t4d, want)
	}
	if d.Objective == "" || d.Alternative == nil || d.Alternative.Delta["V100-32GB"] <= 0 || d.Alternative.Objective == "" || d.Alternative.Why == "" {
		t.Errorf("lastDecision objective %q, alternative %+v: want both, the alternative on V100-32GB", d.Objective, d.Alternative)
	}
}
