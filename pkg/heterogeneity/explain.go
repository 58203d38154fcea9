package heterogeneity

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/hetsev/hetsev/pkg/heterogeneity/ilp"
)

// Alternative is the best scale-out a solver considered and did not
// choose, so that a decision can say why it chose its mix.
type Alternative struct {
	// Delta holds the instances the alternative would add per type, aligned
	// with Observation.Types (all >= 0).
	Delta []int
	// Objective is its HetSev 4.1 objective, USD/h; never below the chosen
	// action's Objective (within rounding).
	Objective float64
	// Why says why it lost, e.g. "V100-32GB costs 7.4x per request
	// (objective 3.10 > 0.42 USD/h)".
	Why string
}

// alternativeOf is the best feasible scale-out of pr other than the chosen
// x, or nil when there is none: the cheapest (by objective) of
//
//   - each single type j that passes the SLO check and has room, with the
//     fewest instances of j alone that meet pr (Target, MinReplicas,
//     MaxReplicas, Upper_j): the heuristic's own candidates;
//   - with exact set (SolverExact), for each type the chosen x uses, the
//     ILP's optimum without that type (its Upper set to 0), solved exactly:
//     the cheapest mix that leaves out one of the chosen types.
//
// Only alternatives that satisfy every constraint of pr (ilp.Problem.
// Feasible) count, so a partial scale-out, whose target no action
// reaches, has none.
func alternativeOf(pr ilp.Problem, types []TypeState, x []int, exact bool) *Alternative {
	if !pr.Feasible(x) {
		return nil
	}
	var cands [][]int
	gap := pr.Target - pr.Capacity(nil)
	for j, t := range pr.Types {
		if pr.Upper[j] <= 0 {
			continue
		}
		// A type with T_j <= 0 (or NaN) has no capacity: no number of its
		// instances alone covers a gap, and it adds none beyond it.
		need := 0
		if t.ThroughputRPS > 0 {
			n := math.Ceil(gap/t.ThroughputRPS - ilp.Tolerance)
			if n > float64(pr.Upper[j]) {
				continue // also keeps the conversion to int in range
			}
			need = max(int(n), 0)
		} else if gap > 0 {
			continue
		}
		need = max(need, pr.MinReplicas-totalRunning(types))
		if need <= 0 || need > pr.Upper[j] {
			continue
		}
		y := make([]int, len(x))
		y[j] = need
		cands = append(cands, y)
	}
	if exact {
		for i, v := range x {
			if v <= 0 {
				continue
			}
			q := pr
			q.Upper = slices.Clone(pr.Upper)
			q.Upper[i] = 0
			if res := ilp.SolveExactResult(q); res.Feasible && !isZero(res.X) {
				cands = append(cands, res.X)
			}
		}
	}
	var best []int
	bestObj := math.Inf(1)
	for _, y := range cands {
		if slices.Equal(y, x) || !pr.Feasible(y) {
			continue
		}
		if o := pr.Cost(y); o < bestObj {
			best, bestObj = y, o
		}
	}
	if best == nil {
		return nil
	}
	chosen := pr.Cost(x)
	why := fmt.Sprintf("%s has objective %.2f > %.2f USD/h", mixNames(types, best), bestObj, chosen)
	if r := perRequest(pr, best) / perRequest(pr, x); r > 0 && !math.IsInf(r, 0) && !math.IsNaN(r) {
		why = fmt.Sprintf("%s costs %.1fx per request (objective %.2f > %.2f USD/h)", mixNames(types, best), r, bestObj, chosen)
	}
	return &Alternative{Delta: best, Objective: bestObj, Why: why}
}

// perRequest is x's objective per request/s it adds, USD/h per
// requests/s.
func perRequest(pr ilp.Problem, x []int) float64 {
	added := pr.Capacity(x) - pr.Capacity(nil)
	if added <= 0 {
		return math.NaN()
	}
	return pr.Cost(x) / added
}

// mixNames joins the names of the types x adds to, e.g. "V100-32GB" or
// "T4+V100-32GB".
func mixNames(types []TypeState, x []int) string {
	var names []string
	for i, v := range x {
		if v != 0 && i < len(types) {
			names = append(names, types[i].GPUType)
		}
	}
	return strings.Join(names, "+")
}
