package heterogeneity

import (
	"fmt"
	"math"

	"github.com/hetsev/hetsev/pkg/heterogeneity/ilp"
)

// heuristicSolver is SolverHeuristic: the instance selection of HetSev 4.1.
type heuristicSolver struct{}

func (heuristicSolver) Name() string { return SolverHeuristic }

// ScaleOut is the greedy selection of HetSev 4.1 (ilp.SolveGreedy) on the
// decision's ILP restricted to X_i >= 0 (ilp.ScaleOutOnly): a single eligible
// type that covers the deficit at the least objective if any, else the
// cheapest per request/s up to its cap, then the next. When the free
// resources or MaxReplicas cannot cover the deficit, the action is reported
// as partial.
func (heuristicSolver) ScaleOut(r Request) Amount {
	obs, p := r.Observation, r.Policy
	types := obs.Types
	pr, err := buildProblem(obs, p, ilp.ScaleOutOnly)
	if err != nil { // unreachable: the direction is known
		return Amount{Reason: r.Reason + ": " + oneLine(err) + "; solver heuristic"}
	}
	g := ilp.SolveGreedy(pr)
	x := g.X
	if isZero(x) {
		// An eligible type has room and MaxReplicas leaves a budget, so this
		// is reached only when no instance is needed: the saturation is above
		// the threshold by less than the rounding tolerance.
		return Amount{Reason: r.Reason + ": nothing to add"}
	}
	reason := fmt.Sprintf("%s: %s (objective %.2f USD/h)", r.Reason, formatDelta(types, x), objective(types, x, p.Lambda))
	if g.UncoveredRPS > 0 || g.ShortReplicas > 0 {
		why := "no free GPU fits more instances of the eligible types"
		if p.MaxReplicas > 0 && totalRunning(types)+sum(x) >= p.MaxReplicas {
			why = fmt.Sprintf("max replicas %d reached", p.MaxReplicas)
		}
		reason += fmt.Sprintf("; partial: %.4g requests/s of the deficit uncovered, %s", g.UncoveredRPS, why)
	}
	return Amount{Delta: x, Reason: reason + "; solver heuristic"}
}

// ScaleIn removes one instance of the most expensive running type (ties: the
// lower throughput) whose removal keeps W / (capacity - T_i) <=
// SaturationThreshold - ScaleInHysteresis, as HetSev 4.1 scales in one
// instance at a time.
func (heuristicSolver) ScaleIn(r Request) Amount {
	obs, p := r.Observation, r.Policy
	types := obs.Types
	w := obs.ArrivalRate
	capNow := Capacity(types, nil)
	best, bestSat := -1, 0.0
	lowestSat := math.Inf(1)
	for i, t := range types {
		if t.Running <= 0 {
			continue
		}
		after := saturationAt(w, capNow-t.ThroughputRPS)
		lowestSat = min(lowestSat, after)
		if !(after <= (p.SaturationThreshold-p.ScaleInHysteresis)*(1+ilp.Tolerance)) {
			continue
		}
		if best < 0 || t.PriceUSDPerHour > types[best].PriceUSDPerHour ||
			(t.PriceUSDPerHour == types[best].PriceUSDPerHour && t.ThroughputRPS < types[best].ThroughputRPS) {
			best, bestSat = i, after
		}
	}
	if best < 0 {
		return Amount{Reason: fmt.Sprintf("%s; without any one instance it would be %.2f > %.2f; solver heuristic",
			r.Reason, lowestSat, p.SaturationThreshold-p.ScaleInHysteresis)}
	}
	x := make([]int, len(types))
	x[best] = -1
	return Amount{Delta: x, Reason: fmt.Sprintf("%s, %.2f without one %s: %s (objective %.2f USD/h); solver heuristic",
		r.Reason, bestSat, types[best].GPUType, formatDelta(types, x), objective(types, x, p.Lambda))}
}
