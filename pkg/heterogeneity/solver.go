package heterogeneity

import (
	"fmt"
	"strings"
)

// Solver computes the amount of a scaling action once the Autoscaler's
// triggers have fixed its direction: how many instances of each GPU type to
// add in a scale-out, or to remove in a scale-in. The triggers, the timers
// and the checks that come first (MaxReplicas reached, no GPU type that
// passes the SLO check and has room, cool-down, interval, MinReplicas) are
// the Autoscaler's and the same for every Solver.
//
// Policy.Solver selects the Solver by its Name (see LookupSolver):
// SolverHeuristic, the greedy instance selection of HetSev 4.1, and
// SolverExact, the exact solution of its ILP.
type Solver interface {
	// Name is the value of Policy.Solver that selects the solver; the
	// reasons of its actions end with "solver <Name>".
	Name() string
	// ScaleOut returns the instances to add (all Delta entries >= 0). It is
	// called when a scale-out is due, MaxReplicas leaves room for at least
	// one more instance and at least one GPU type passes the SLO check
	// (Policy.MeetsSLO) and has MaxAdditional > 0. Request.Reason is what
	// triggered it.
	ScaleOut(r Request) Amount
	// ScaleIn returns the instances to remove (all Delta entries <= 0),
	// leaving at least MinReplicas and keeping W / capacity <=
	// SaturationThreshold - ScaleInHysteresis. It is called when no
	// scale-out is due, cool-down and interval have passed and one instance
	// may go without breaking MinReplicas. Request.Reason states the
	// saturation within the threshold.
	ScaleIn(r Request) Amount
}

// Request is a decision whose direction the triggers have fixed, handed to
// a Solver for its amount.
type Request struct {
	// Observation and Policy are the decision's; both are valid
	// (Observation.Validate, Policy.Validate).
	Observation Observation
	Policy      Policy
	// Reason is how Action.Reason begins: for a scale-out, what triggered
	// it, e.g. "saturation 2.75 > 0.80 for 30s"; for a scale-in, the
	// saturation within the threshold, e.g. "saturation 0.21 within
	// threshold 0.80".
	Reason string
}

// Amount is a Solver's answer to a Request.
type Amount struct {
	// Delta holds X_i, the instances to add (> 0) or remove (< 0) per type,
	// aligned with Observation.Types. Nil or all zero means no action: the
	// Autoscaler then reports ActionNone and keeps its timers.
	Delta []int
	// Reason is the whole Action.Reason: Request.Reason, then the action
	// and its objective (or why there is none) and the solver's name.
	Reason string
}

// solvers are the Solvers Policy.Solver may name, in the order that
// messages list them.
var solvers = []Solver{heuristicSolver{}, exactSolver{}}

// LookupSolver returns the Solver named name (SolverHeuristic or
// SolverExact), or false when none is. "" is not a name here; in a Policy it
// stands for SolverHeuristic.
func LookupSolver(name string) (Solver, bool) {
	for _, s := range solvers {
		if s.Name() == name {
			return s, true
		}
	}
	return nil, false
}

// SolverNames returns the names of the Solvers, the values Policy.Solver
// takes besides "": "heuristic", "exact".
func SolverNames() []string {
	names := make([]string, len(solvers))
	for i, s := range solvers {
		names[i] = s.Name()
	}
	return names
}

// solver returns the Solver that p.Solver names ("" is SolverHeuristic), or
// false for an unknown name.
func (p Policy) solver() (Solver, bool) {
	if p.Solver == "" {
		return LookupSolver(SolverHeuristic)
	}
	return LookupSolver(p.Solver)
}

// quotedOr lists names quoted and joined with " or ", e.g. `"heuristic" or
// "exact"`.
func quotedOr(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, " or ")
}
