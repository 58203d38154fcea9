package heterogeneity

import (
	"fmt"
	"math"
	"strings"

	"github.com/hetsev/hetsev/pkg/heterogeneity/ilp"
)

// exactSolver is SolverExact: the amounts that solve the ILP of HetSev 4.1
// (DecisionProblem) exactly with ilp.SolveExactResult, restricted to the
// decision's direction.
type exactSolver struct{}

func (exactSolver) Name() string { return SolverExact }

// ScaleOut solves the ILP restricted to X_i >= 0 (ilp.ScaleOutOnly). When
// the free resources or MaxReplicas cannot cover the deficit, it solves
// ilp.Problem.Relaxed instead, the cheapest way to the most capacity (and
// replicas) that can be reached, and reports the action as partial.
func (exactSolver) ScaleOut(r Request) Amount {
	obs, p := r.Observation, r.Policy
	types := obs.Types
	pr, err := buildProblem(obs, p, ilp.ScaleOutOnly)
	if err != nil { // unreachable: the direction is known
		return Amount{Reason: r.Reason + ": " + oneLine(err) + "; solver exact"}
	}
	res := ilp.SolveExactResult(pr)
	partial := false
	if !res.Feasible {
		// The deficit cannot be covered: aim at what can be reached.
		res = ilp.SolveExactResult(pr.Relaxed())
		partial = true
	}
	if !res.Feasible || isZero(res.X) {
		// The fallback adds at least one instance (an eligible type has room
		// and MaxReplicas leaves a budget), so this is reached only when no
		// instance is needed: the saturation is above the threshold by less
		// than the rounding tolerance.
		return Amount{Reason: r.Reason + ": nothing to add; solver exact"}
	}
	x := res.X
	reason := fmt.Sprintf("%s: %s (objective %.2f USD/h)", r.Reason, formatDelta(types, x), objective(types, x, p.Lambda))
	if partial {
		var why []string
		if left := pr.Uncovered(x); left > 0 {
			why = append(why, fmt.Sprintf("%.4g requests/s of the deficit uncovered", left))
		}
		if short := pr.MinReplicas - (totalRunning(types) + sum(x)); short > 0 {
			why = append(why, fmt.Sprintf("%d replicas short of min replicas %d", short, pr.MinReplicas))
		}
		limit := "no free GPU fits more instances of the eligible types"
		if pr.MaxReplicas > 0 && totalRunning(types)+sum(x) >= pr.MaxReplicas {
			limit = fmt.Sprintf("max replicas %d reached", pr.MaxReplicas)
		}
		reason += fmt.Sprintf("; partial: %s, %s", joinOr(why, "target unreachable"), limit)
	}
	return Amount{Delta: x, Reason: reason + "; solver exact" + exactNote(res)}
}

// ScaleIn solves the ILP restricted to X_i <= 0 (ilp.ScaleInOnly): the set
// of running instances whose removal saves the most while the rest keeps W /
// capacity <= SaturationThreshold - ScaleInHysteresis, possibly several
// instances of several types.
func (exactSolver) ScaleIn(r Request) Amount {
	obs, p := r.Observation, r.Policy
	types := obs.Types
	bar := p.SaturationThreshold - p.ScaleInHysteresis
	pr, err := buildProblem(obs, p, ilp.ScaleInOnly)
	if err != nil { // unreachable: the direction is known
		return Amount{Reason: r.Reason + "; " + oneLine(err) + "; solver exact"}
	}
	res := ilp.SolveExactResult(pr)
	if !res.Feasible || isZero(res.X) {
		capNow := Capacity(types, nil)
		lowest := math.Inf(1)
		for _, t := range types {
			if t.Running > 0 {
				lowest = min(lowest, saturationAt(obs.ArrivalRate, capNow-t.ThroughputRPS))
			}
		}
		return Amount{Reason: fmt.Sprintf("%s; without any one instance it would be %.2f > %.2f; solver exact", r.Reason, lowest, bar)}
	}
	x := res.X
	return Amount{Delta: x, Reason: fmt.Sprintf("%s, %.2f after the action (bar %.2f): %s (objective %.2f USD/h); solver exact%s",
		r.Reason, saturationAt(obs.ArrivalRate, pr.Capacity(x)), bar, formatDelta(types, x), objective(types, x, p.Lambda), exactNote(res))}
}

// exactNote flags an action the exact solver could not prove optimal.
func exactNote(r ilp.ExactResult) string {
	if r.Optimal {
		return ""
	}
	return fmt.Sprintf(" (node budget of %d reached: best action found, optimality not proven)", ilp.ExactNodeBudget)
}

func joinOr(parts []string, empty string) string {
	if len(parts) == 0 {
		return empty
	}
	return strings.Join(parts, " and ")
}
