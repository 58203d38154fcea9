package heterogeneity

import (
	"slices"
	"strings"
	"testing"
)

// A scale-out onto T4 reports V100-32GB, the best mix it did not choose,
// with its objective (never below the chosen one's) and, in the reason,
// why it lost: its cost per request against T4's.
func TestScaleOutNamesRejectedAlternative(t *testing.T) {
	for _, solver := range []string{SolverHeuristic, SolverExact} {
		p := testPolicy()
		p.Solver = solver
		a := NewAutoscaler(p)
		// W 1000 req/s, target 1250: T4 adds 3 (1089 req/s, 1.89 USD/h),
		// V100-32GB alone needs 2 (1418 req/s, 9.36 USD/h): 3.8x per request.
		act := a.Decide(Observation{Now: t0, ArrivalRate: 1000, Types: ts(resnetT4(1, 10), resnetV100(0, 10))})
		if act.Kind != ActionScaleOut || !slices.Equal(act.Delta, []int{3, 0}) {
			t.Fatalf("%s: action %s %v, want ScaleOut [3 0]", solver, act.Kind, act.Delta)
		}
		alt := act.Alternative
		if alt == nil {
			t.Fatalf("%s: no alternative; reason %q", solver, act.Reason)
		}
		if !slices.Equal(alt.Delta, []int{0, 2}) || !near(alt.Objective, 2*priceV100USDh*(1+defaultLambdaPS*resnetLaunchS)) {
			t.Errorf("%s: alternative %v objective %.4f, want [0 2] at %.4f", solver, alt.Delta, alt.Objective, 2*priceV100USDh*1.2)
		}
		if act.Objective > alt.Objective {
			t.Errorf("%s: chosen objective %.4f > alternative's %.4f", solver, act.Objective, alt.Objective)
		}
		if want := "V100-32GB rejected: costs 3.8x per request (objective 9.36 > 1.89 USD/h)"; !strings.Contains(act.Reason, want) {
			t.Errorf("%s: reason %q, want it to contain %q", solver, act.Reason, want)
		}
	}
}

// With the exact solver the alternative may be a mix: the ILP's optimum
// without one of the chosen types. Here T4 alone cannot cover the target
// (room for 2), so the chosen mix is T4 and V100-32GB, and the best one
// without T4 is V100-32GB alone.
func TestExactAlternativeLeavesOutAChosenType(t *testing.T) {
	p := testPolicy()
	p.Solver = SolverExact
	act := NewAutoscaler(p).Decide(Observation{Now: t0, ArrivalRate: 1000, Types: ts(resnetT4(1, 2), resnetV100(0, 10))})
	if act.Kind != ActionScaleOut || act.Alternative == nil {
		t.Fatalf("action %s %v alternative %+v; reason %q", act.Kind, act.Delta, act.Alternative, act.Reason)
	}
	if slices.Equal(act.Alternative.Delta, act.Delta) || act.Objective > act.Alternative.Objective {
		t.Errorf("chosen %v (%.4f), alternative %v (%.4f): want a different mix no cheaper", act.Delta, act.Objective, act.Alternative.Delta, act.Alternative.Objective)
	}
}

// A partial scale-out (no action reaches the target) has no alternative.
func TestPartialScaleOutHasNoAlternative(t *testing.T) {
	act := NewAutoscaler(testPolicy()).Decide(Observation{Now: t0, ArrivalRate: 5000, Types: ts(resnetT4(1, 2), resnetV100(0, 1))})
	if act.Kind != ActionScaleOut || act.Alternative != nil {
		t.Errorf("action %s %v alternative %+v, want a partial ScaleOut without one", act.Kind, act.Delta, act.Alternative)
	}
}
