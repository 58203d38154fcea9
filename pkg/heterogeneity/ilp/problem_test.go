package ilp

import (
	"slices"
	"testing"
)

// TestProblemFeasibleAndCost checks the constraint and cost helpers.
func TestProblemFeasibleAndCost(t *testing.T) {
	p := Problem{Types: ts(resnetT4(1), resnetV100(1)), Target: 1250, Lambda: 0.01,
		Lower: []int{-1, -1}, Upper: []int{3, 3}, MinReplicas: 1, MaxReplicas: 4}
	tests := []struct {
		x    []int
		want bool
	}{
		{[]int{1, 0}, true},   // 726 + 709 = 1435 >= 1250
		{[]int{0, 0}, false},  // 1072 < 1250
		{[]int{4, 0}, false},  // above Upper
		{[]int{-2, 2}, false}, // below Lower
		{[]int{2, 1}, false},  // 5 replicas > 4
		{[]int{1}, false},     // wrong length
		{[]int{-1, 1}, true},  // 1418 >= 1250
	}
	for _, tc := range tests {
		if got := p.Feasible(tc.x); got != tc.want {
			t.Errorf("Feasible(%v) = %v, want %v", tc.x, got, tc.want)
		}
	}
	// Cost(+1 T4) = 0.526*1.2 = 0.6312; TotalCost adds 0.526 + 3.9015.
	if got := p.Cost([]int{1, 0}); !near(got, 0.6312) {
		t.Errorf("Cost = %v", got)
	}
	if got := p.TotalCost([]int{1, 0}); !near(got, 0.6312+0.526+3.9015) {
		t.Errorf("TotalCost = %v", got)
	}
	// Capacity exactly at the target passes; a hair below within the
	// 1e-9 tolerance passes too, beyond it fails.
	q := Problem{Types: ts(resnetT4(0)), Lower: []int{0}, Upper: []int{2}}
	q.Target = 726
	if !q.Feasible([]int{2}) {
		t.Error("capacity equal to the target rejected")
	}
	q.Target = 726 * (1 + 1e-12)
	if !q.Feasible([]int{2}) {
		t.Error("rounding noise rejected")
	}
	q.Target = 727
	if q.Feasible([]int{2}) {
		t.Error("capacity 726 < 727 accepted")
	}
}

// TestProblemRelaxed checks the target of a partial scale-out.
func TestProblemRelaxed(t *testing.T) {
	p := Problem{Types: ts(resnetT4(1), resnetV100(0)), Target: 2500, Lambda: 0.01,
		Lower: []int{0, 0}, Upper: []int{2, 1}, MinReplicas: 6}
	// Everything that fits: 3 T4 + 1 V100 = 1089 + 709 = 1798, 4 replicas.
	r := p.Relaxed()
	if !near(r.Target, 1798) || r.MinReplicas != 4 {
		t.Errorf("Relaxed = target %v, min %d; want 1798, 4", r.Target, r.MinReplicas)
	}
	if x, ok := SolveExact(r); !ok || !slices.Equal(x, []int{2, 1}) {
		t.Errorf("relaxed optimum %v %v", x, ok)
	}
	// MaxReplicas 3 leaves 2 more: the V100 first (709), then a T4: 363 +
	// 709 + 363 = 1435.
	p.MaxReplicas = 3
	if r := p.Relaxed(); !near(r.Target, 1435) || r.MinReplicas != 3 {
		t.Errorf("Relaxed with MaxReplicas = target %v, min %d; want 1435, 3", r.Target, r.MinReplicas)
	}
	// A reachable problem is unchanged.
	p.MaxReplicas, p.Target, p.MinReplicas = 0, 1000, 1
	if r := p.Relaxed(); r.Target != 1000 || r.MinReplicas != 1 {
		t.Errorf("reachable problem changed: %+v", r)
	}
}
