package heterogeneity

import (
	"slices"
	"testing"

	"github.com/hetsev/hetsev/pkg/heterogeneity/ilp"
)

// TestDecisionProblem checks the bounds and targets a decision solves.
func TestDecisionProblem(t *testing.T) {
	pol := testPolicy(func(p *Policy) { p.RTMaxMs = 20; p.ScaleInHysteresis = 0.1; p.MaxReplicas = 9 })
	obs := Observation{Now: t0, ArrivalRate: 800, Types: ts(resnetT4(2, 3), resnetV100(1, 4))}
	// T4 (22.41 ms) fails RT_max 20 ms: constraint (4) pins X_T4 <= 0.
	full, err := NewProblem(obs, pol)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(full.Lower, []int{-2, -1}) || !slices.Equal(full.Upper, []int{0, 4}) || !near(full.Target, 1000) || full.MaxReplicas != 9 {
		t.Errorf("full ILP: %+v", full)
	}
	out, _ := DecisionProblem(obs, pol, ilp.ScaleOutOnly)
	if !slices.Equal(out.Lower, []int{0, 0}) || !slices.Equal(out.Upper, []int{0, 4}) || !near(out.Target, 1000) {
		t.Errorf("scale-out: %+v", out)
	}
	in, _ := DecisionProblem(obs, pol, ilp.ScaleInOnly)
	// 800 / (0.8 - 0.1) = 1142.857...
	if !slices.Equal(in.Lower, []int{-2, -1}) || !slices.Equal(in.Upper, []int{0, 0}) || !near(in.Target, 800/0.7) || in.MaxReplicas != 0 {
		t.Errorf("scale-in: %+v", in)
	}
	if _, err := DecisionProblem(obs, pol, ilp.Direction(7)); err == nil {
		t.Error("unknown direction accepted")
	}
	if _, err := DecisionProblem(Observation{}, pol, ilp.ScaleOutOnly); err == nil {
		t.Error("invalid observation accepted")
	}
}
