package heterogeneity

import (
	"slices"
	"strings"
	"testing"
)

// TestLookupSolver checks the registry behind Policy.Solver.
func TestLookupSolver(t *testing.T) {
	if got := SolverNames(); !slices.Equal(got, []string{SolverHeuristic, SolverExact}) {
		t.Errorf("SolverNames() = %q", got)
	}
	for _, name := range SolverNames() {
		s, ok := LookupSolver(name)
		if !ok || s.Name() != name {
			t.Errorf("LookupSolver(%q) = %v, %v", name, s, ok)
		}
	}
	for _, name := range []string{"", "ilp", "Exact"} {
		if s, ok := LookupSolver(name); ok {
			t.Errorf("LookupSolver(%q) = %v, want none", name, s.Name())
		}
	}
	// In a Policy, "" stands for the heuristic.
	for name, want := range map[string]string{"": SolverHeuristic, SolverHeuristic: SolverHeuristic, SolverExact: SolverExact} {
		s, ok := Policy{Solver: name}.solver()
		if !ok || s.Name() != want {
			t.Errorf("Policy{Solver: %q}.solver() = %v, %v; want %s", name, s, ok, want)
		}
	}
	if _, ok := (Policy{Solver: "ilp"}).solver(); ok {
		t.Error(`Policy{Solver: "ilp"}.solver() found a solver`)
	}
}

// TestSolverRequests calls both solvers directly with the requests the
// triggers hand them: each answers in its own direction and names itself.
func TestSolverRequests(t *testing.T) {
	out := Request{
		Observation: Observation{Now: t0, ArrivalRate: 1000, Types: ts(resnetT4(1, 10), resnetV100(0, 10))},
		Policy:      testPolicy(),
		Reason:      "saturation 2.75 > 0.80 for 0s",
	}
	in := Request{
		Observation: Observation{Now: t0, ArrivalRate: 100, Types: ts(resnetT4(4, 0))},
		Policy:      testPolicy(),
		Reason:      "saturation 0.07 within threshold 0.80",
	}
	for _, tc := range []struct {
		solver  string
		out, in []int
	}{
		{SolverHeuristic, []int{3, 0}, []int{-1}},
		{SolverExact, []int{3, 0}, []int{-3}},
	} {
		s, _ := LookupSolver(tc.solver)
		a := s.ScaleOut(out)
		if !slices.Equal(a.Delta, tc.out) || a.Reason != out.Reason+": +3 T4 (objective 1.89 USD/h); solver "+tc.solver {
			t.Errorf("%s ScaleOut = %v %q", tc.solver, a.Delta, a.Reason)
		}
		b := s.ScaleIn(in)
		if !slices.Equal(b.Delta, tc.in) || !strings.HasPrefix(b.Reason, in.Reason) || !strings.HasSuffix(b.Reason, "solver "+tc.solver) {
			t.Errorf("%s ScaleIn = %v %q", tc.solver, b.Delta, b.Reason)
		}
	}
}
