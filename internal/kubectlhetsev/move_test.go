package kubectlhetsev

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/scaler"
)

// A decision's replacement is shown with its phase and floor; a
// consolidation move (From equal to To) reads as a move onto a GPU in
// use, not as a replacement of a column by itself.
func TestExplainModelServiceShowsMovesAndReplacements(t *testing.T) {
	for _, tc := range []struct {
		rp   v1alpha1.Replacement
		want string
	}{
		{v1alpha1.Replacement{From: "T4-busy0.25", To: "T4-busy0.25", Add: 1, Remove: 1, Phase: "ReplacementStarted", FloorRPS: "12.5"},
			"  move:    1 of T4-busy0.25 onto a GPU in use (consolidation): ReplacementStarted, floor 12.5 requests/s, 0 of 1 old removed\n"},
		{v1alpha1.Replacement{From: "V100-32GB", To: "T4", Add: 3, Remove: 2, Removed: 1, Phase: "ReplacementProgressed", FloorRPS: "300"},
			"  replacement: 2 of V100-32GB by 3 of T4: ReplacementProgressed, floor 300 requests/s, 1 of 2 old removed\n"},
		{v1alpha1.Replacement{From: "V100-32GB", To: "T4", Add: 1, Remove: 1},
			"  replacement: 1 of V100-32GB by 1 of T4: waiting, 0 of 1 old removed\n"},
	} {
		rp := tc.rp
		ms := &v1alpha1.ModelService{
			ObjectMeta: metav1.ObjectMeta{Name: "fn", Namespace: "default", UID: "ms-uid"},
			Spec:       v1alpha1.ModelServiceSpec{SLO: v1alpha1.SLO{ResponseTimeMs: 400, ServiceLevel: 0.98}},
			Status: v1alpha1.ModelServiceStatus{LastDecision: &v1alpha1.Decision{Time: metav1.NewTime(time.Unix(60, 0)),
				Action: "Replace", Reason: "consolidation", Replacement: &rp}},
		}
		out, errOut, code := runWith(newFake(nil, ms), "explain", "modelservice", "fn")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if !strings.Contains(out, tc.want) {
			t.Errorf("%s -> %s: explanation lacks %q:\n%s", rp.From, rp.To, tc.want, out)
		}
	}
}

// A pod hetsev-scaler marked for a consolidation move is shown as moving
// among its GPU's tenants (table and JSON), and explain pod says what
// the mark does; a pod with another deletion cost is not.
func TestMovingPodIsShown(t *testing.T) {
	objs := annotationCluster()
	for _, o := range objs {
		p, ok := o.(*v1.Pod)
		if !ok {
			continue
		}
		switch p.Name {
		case "r0":
			p.Labels = map[string]string{v1alpha1.LabelModelService: "resnet"}
			p.Annotations[v1.PodDeletionCost] = scaler.MovedPodDeletionCost
		case "s0":
			p.Labels = map[string]string{v1alpha1.LabelModelService: "ssd"}
			p.Annotations[v1.PodDeletionCost] = "5"
		}
	}
	c := newFake(nil, objs...)
	out, errOut, code := runWith(c, "gpus")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "default/r0 (moving)") || strings.Contains(out, "default/s0 (moving)") {
		t.Errorf("table marks r0 moving and s0 not?\n%s", out)
	}
	out, _, code = runWith(c, "gpus", "-o", "json")
	var r GPUReport
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || len(r.GPUs) == 0 || len(r.GPUs[0].Tenants) != 2 ||
		!r.GPUs[0].Tenants[0].Moving || r.GPUs[0].Tenants[1].Moving {
		t.Errorf("-o json: exit %d, %v, %+v, want r0 moving, s0 not", code, err, r)
	}
	out, _, _ = runWith(c, "explain", "pod", "r0")
	if want := "note: hetsev-scaler marked this pod (controller.kubernetes.io/pod-deletion-cost -1000) for a consolidation move of ModelService resnet"; !strings.Contains(out, want) {
		t.Errorf("explain pod r0 lacks %q:\n%s", want, out)
	}
	if out, _, _ = runWith(c, "explain", "pod", "s0"); strings.Contains(out, "consolidation move") {
		t.Errorf("explain pod s0 (deletion cost 5) mentions a move:\n%s", out)
	}
}
