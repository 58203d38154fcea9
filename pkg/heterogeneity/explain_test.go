package heterogeneity

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/hetsev/hetsev/pkg/heterogeneity/ilp"
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
// without one of the chosen types. No type alone covers the deficit of
// 887 requests/s (T4: room for 2 of 363; V100-32GB and a dearer type X of
// 709 requests/s: room for 1 each), so only that re-solve offers one:
// the exact solver adds one T4 and one V100-32GB, and the best mix without
// V100-32GB is one T4 and one X. The heuristic considers single types
// only, so it has none.
func TestExactAlternativeLeavesOutAChosenType(t *testing.T) {
	x := resnetV100(0, 1)
	x.GPUType, x.PriceUSDPerHour = "X", 5
	obs := Observation{Now: t0, ArrivalRate: 1000, Types: ts(resnetT4(1, 2), resnetV100(0, 1), x)}
	for _, tc := range []struct {
		solver string
		want   []int
	}{{SolverExact, []int{1, 0, 1}}, {SolverHeuristic, nil}} {
		p := testPolicy()
		p.Solver = tc.solver
		act := NewAutoscaler(p).Decide(obs)
		if act.Kind != ActionScaleOut || act.Delta[1] != 1 {
			t.Fatalf("%s: action %s %v, want a ScaleOut with one V100-32GB; reason %q", tc.solver, act.Kind, act.Delta, act.Reason)
		}
		var got []int
		if act.Alternative != nil {
			got = act.Alternative.Delta
			if act.Objective > act.Alternative.Objective {
				t.Errorf("%s: chosen objective %.4f > alternative's %.4f", tc.solver, act.Objective, act.Alternative.Objective)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: alternative %v, want %v", tc.solver, got, tc.want)
		}
	}
}

// A type with T_i <= 0 (or NaN) has no capacity: it is never offered as
// the alternative, not even where the service already has more capacity
// than its target (no gap to cover), and nothing in the answer is NaN.
// (With T_i NaN every capacity is NaN and no mix is feasible: none.)
func TestAlternativeOfTypeWithoutCapacity(t *testing.T) {
	for _, tp := range []float64{-5, 0, math.NaN()} {
		pr := ilp.Problem{
			Types: []ilp.Type{
				{Name: "A", Running: 2, ThroughputRPS: 100, PriceUSDPerHour: 1},
				{Name: "B", ThroughputRPS: tp, PriceUSDPerHour: 0.1},
			},
			Target: 100, Lower: []int{0, 0}, Upper: []int{10, 30},
		}
		types := []TypeState{{GPUType: "A", Running: 2}, {GPUType: "B"}}
		if alt := alternativeOf(pr, types, []int{0, 0}, false); alt != nil {
			t.Errorf("T_B = %v: alternative %+v, want none", tp, *alt)
		}
		if math.IsNaN(tp) {
			continue // every capacity is NaN: nothing is feasible
		}
		// A gap of 150 requests/s: A alone covers it with 2, B never.
		pr.Target = 350
		alt := alternativeOf(pr, types, []int{3, 0}, false)
		if alt == nil || !slices.Equal(alt.Delta, []int{2, 0}) || math.IsNaN(alt.Objective) || strings.Contains(alt.Why, "NaN") {
			t.Errorf("T_B = %v, gap 150: alternative %+v, want [2 0] with no NaN", tp, alt)
		}
	}
}
