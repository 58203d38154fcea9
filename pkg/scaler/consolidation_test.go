package scaler

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
)

// TestMoveMarksOnePodAndATimeoutClearsIt: a move starting marks the
// first movable pod and takes the mark off a pod an earlier move left
// marked (its replica write failed), so that the ReplicaSet has one pod
// to remove first; a move that times out takes its mark off, so that its
// old replica, kept, ranks as any other at a later scale-in.
func TestMoveMarksOnePodAndATimeoutClearsIt(t *testing.T) {
	ctx := context.Background()
	ms := resnet()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	r, c := newFakeReconciler(t, ms, &now)
	svc, err := validate(ms, r.Catalog, DefaultDefaults)
	if err != nil {
		t.Fatal(err)
	}
	col := svc.types[0].column()
	for _, name := range []string{"stale", "lone"} {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ms.Namespace, Name: name}}
		if name == "stale" {
			p.Annotations = map[string]string{v1.PodDeletionCost: MovedPodDeletionCost}
		}
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	cost := func(name string) string {
		p := &v1.Pod{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ms.Namespace, Name: name}, p); err != nil {
			t.Fatal(err)
		}
		return p.Annotations[v1.PodDeletionCost]
	}
	move := func(phase heterogeneity.ReplacementPhase) heterogeneity.Action {
		return heterogeneity.Action{ReplacementPhase: phase, Replacement: &heterogeneity.Replacement{From: col, To: col, Add: 1, Remove: 1}}
	}
	movable, marked := make([][]string, len(svc.types)), make([][]string, len(svc.types))
	movable[0], marked[0] = []string{"lone"}, []string{"stale"}
	if err := r.markMoved(ctx, svc, move(heterogeneity.ReplacementStarted), movable, marked); err != nil {
		t.Fatal(err)
	}
	if got, stale := cost("lone"), cost("stale"); got != MovedPodDeletionCost || stale != "" {
		t.Fatalf("move started: lone %q, stale %q; want %s and no mark", got, stale, MovedPodDeletionCost)
	}
	marked[0] = []string{"lone"}
	if err := r.unmarkTimedOut(ctx, svc, move(heterogeneity.ReplacementCompleted), marked); err != nil || cost("lone") != MovedPodDeletionCost {
		t.Fatalf("move completed: lone %q (%v), want the mark kept for the ReplicaSet", cost("lone"), err)
	}
	if err := r.unmarkTimedOut(ctx, svc, move(heterogeneity.ReplacementTimedOut), marked); err != nil || cost("lone") != "" {
		t.Fatalf("move timed out: lone %q (%v), want no mark", cost("lone"), err)
	}
}

// Each replacement step is counted on /metrics by kind and phase: a
// column replaced by itself is a move, by another column a swap.
func TestReplacementStepsAreCountedByKind(t *testing.T) {
	ms := resnet()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	r, _ := newFakeReconciler(t, ms, &now)
	count := func(kind string, phase heterogeneity.ReplacementPhase) float64 {
		return testutil.ToFloat64(replacementsTotal.WithLabelValues(ms.Namespace, ms.Name, kind, string(phase)))
	}
	deleteMetrics(ms.Namespace, ms.Name)
	var st v1alpha1.ModelServiceStatus
	for _, step := range []struct {
		from, to string
		phase    heterogeneity.ReplacementPhase
	}{
		{"T4-busy0.25", "T4-busy0.25", heterogeneity.ReplacementStarted},
		{"T4-busy0.25", "T4-busy0.25", heterogeneity.ReplacementTimedOut},
		{"V100-32GB", "T4", heterogeneity.ReplacementStarted},
		{"V100-32GB", "T4", heterogeneity.ReplacementProgressed},
		{"V100-32GB", "T4", heterogeneity.ReplacementProgressed},
	} {
		r.reportReplacement(ms, &st, heterogeneity.Action{ReplacementPhase: step.phase, Replacement: &heterogeneity.Replacement{From: step.from, To: step.to, Add: 1, Remove: 1}})
	}
	for _, c := range []struct {
		kind  string
		phase heterogeneity.ReplacementPhase
		want  float64
	}{
		{"move", heterogeneity.ReplacementStarted, 1}, {"move", heterogeneity.ReplacementTimedOut, 1},
		{"swap", heterogeneity.ReplacementStarted, 1}, {"swap", heterogeneity.ReplacementProgressed, 2},
		{"swap", heterogeneity.ReplacementTimedOut, 0}, {"move", heterogeneity.ReplacementProgressed, 0},
	} {
		if got := count(c.kind, c.phase); got != c.want {
			t.Errorf("%s %s: %v counted, want %v", c.kind, c.phase, got, c.want)
		}
	}
}

// TestReplacementTimeoutSeriesStartAtZero: a decision creates the
// timed-out replacement series of its ModelService at 0 for both kinds,
// before any replacement, so that the chart's alert sees the first
// timeout as a rise (increase() counts none into a series' first sample).
func TestReplacementTimeoutSeriesStartAtZero(t *testing.T) {
	ctx := context.Background()
	ms := resnet()
	ms.Name = "replacement-series"
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	r, _ := newFakeReconciler(t, ms, &now)
	deleteMetrics(ms.Namespace, ms.Name)
	if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ms.Namespace, Name: ms.Name}}); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range scalerMetrics(t) {
		if mf.GetName() != "hetsev_scaler_replacements_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["namespace"] == ms.Namespace && l["modelservice"] == ms.Name {
				got[l["kind"]+" "+l["phase"]] = m.GetCounter().GetValue()
			}
		}
	}
	want := map[string]float64{"move ReplacementTimedOut": 0, "swap ReplacementTimedOut": 0}
	if !maps.Equal(got, want) {
		t.Errorf("replacement series after a decision: %v, want %v", got, want)
	}
}
