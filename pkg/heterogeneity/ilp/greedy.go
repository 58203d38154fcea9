package ilp

import "math"

// instancesFor is the least number of instances of throughput t (requests/s)
// that covers deficit (requests/s): ceil(deficit / t), at least 1 for a
// positive deficit, ignoring rounding noise just above an integer.
func instancesFor(deficit, t float64) int {
	if !(deficit > 0) {
		return 0
	}
	q := deficit / t
	if q >= MaxInstances {
		return MaxInstances
	}
	n := math.Ceil(q)
	if n-q > 1-Tolerance {
		n-- // q exceeds the integer n-1 only through rounding
	}
	return max(int(n), 1)
}

// scaleOutOption is what adding n instances of type i would do.
type scaleOutOption struct {
	i      int
	n      int
	covers bool    // n covers both the remaining deficit and the replica shortfall
	obj    float64 // objective of adding n of type i, USD/h
	added  float64 // capacity added, requests/s
}

// GreedyResult is the outcome of SolveGreedy.
type GreedyResult struct {
	// X is the action, aligned with Problem.Types; never negative.
	X []int
	// UncoveredRPS is the capacity X leaves short of Target, in
	// requests/s; 0 when X covers it (within the rounding tolerance).
	UncoveredRPS float64
	// ShortReplicas is how many instances X leaves short of MinReplicas.
	ShortReplicas int
}

// SolveGreedy is the instance selection of HetSev 4.1 for a scale-out, the
// heuristic's amount: it only adds instances, X_i in [0, Upper_i], to cover
// the deficit Target - sum_i T_i N_i (requests/s) and the shortfall
// MinReplicas - sum_i N_i, adding at most MaxReplicas - sum_i N_i instances
// when MaxReplicas > 0. Lower is not consulted (a scale-out problem has
// Lower = 0), and the types with Upper_i <= 0 (no room, or failing the SLO
// check) are not used.
//
// For each usable type it computes x_i = max(ceil(deficit/T_i), shortfall),
// capped at Upper_i and at the replica budget, and the objective of adding
// x_i. A type whose x_i covers the need is preferred, the one with the least
// objective first. If none covers, the type with the least objective per
// request/s of capacity (per instance when only the replica shortfall is
// left) is taken up to its cap and the rest is planned with the remaining
// types. Ties go to more capacity added, then to the earlier type.
//
// Unlike SolveExact it may miss the optimum (a mix of types can be cheaper
// than the single covering type; `make bench-scaler` measures how often), and
// it returns a partial action when the deficit or the shortfall cannot be
// covered: the uncovered part is reported. It does not validate p; bounds not
// aligned with Types give an all-zero X.
func SolveGreedy(p Problem) GreedyResult {
	n := len(p.Types)
	total := 0
	for _, t := range p.Types {
		total += t.Running
	}
	deficit := max(p.Target-p.Capacity(nil), 0)
	short := max(p.MinReplicas-total, 0)
	budget := -1 // instances that may still be added; -1: no cap
	if p.MaxReplicas > 0 {
		budget = max(p.MaxReplicas-total, 0)
	}
	var usable []int
	if len(p.Upper) == n {
		for i := range n {
			if p.Upper[i] > 0 {
				usable = append(usable, i)
			}
		}
	}
	x, left, leftCount := planScaleOut(p.Types, p.Upper, usable, deficit, short, budget, p.Lambda)
	return GreedyResult{X: x, UncoveredRPS: left, ShortReplicas: leftCount}
}

// planScaleOut is SolveGreedy over the usable types (indices into types, in
// order), with room[i] the most instances of type i that may be added, the
// deficit in requests/s, the replica shortfall and the replica budget (-1:
// none). It returns X and what stayed uncovered.
func planScaleOut(types []Type, room []int, usable []int, deficit float64, short, budget int, lambda float64) (x []int, leftRPS float64, leftCount int) {
	x = make([]int, len(types))
	used := make([]bool, len(types))
	for deficit > Tolerance*max(1, deficit) || short > 0 {
		if budget == 0 {
			break
		}
		var best scaleOutOption
		found := false
		for _, i := range usable {
			if used[i] {
				continue
			}
			t := types[i]
			need := max(instancesFor(deficit, t.ThroughputRPS), short)
			n := min(need, room[i])
			if budget > 0 {
				n = min(n, budget)
			}
			if n <= 0 {
				continue
			}
			o := scaleOutOption{
				i:      i,
				n:      n,
				covers: n >= need,
				obj:    t.PriceUSDPerHour * float64(n) * (1 + lambda*t.LaunchSeconds),
				added:  t.ThroughputRPS * float64(n),
			}
			if !found || o.better(best, deficit > 0) {
				best, found = o, true
			}
		}
		if !found {
			break
		}
		x[best.i] += best.n
		used[best.i] = true
		deficit -= best.added
		short -= best.n
		if budget > 0 {
			budget -= best.n
		}
	}
	if deficit <= Tolerance*max(1, deficit) {
		deficit = 0
	}
	return x, deficit, max(short, 0)
}

// better orders scale-out options: covering ones first, by least objective;
// then by least objective per request/s added (byCapacity) or per instance;
// ties go to more capacity added, then to the earlier type.
func (o scaleOutOption) better(b scaleOutOption, byCapacity bool) bool {
	if o.covers != b.covers {
		return o.covers
	}
	var c int
	if o.covers {
		c = compareFloat(o.obj, b.obj)
	} else if byCapacity {
		c = compareFloat(o.obj/o.added, b.obj/b.added)
	} else {
		c = compareFloat(o.obj/float64(o.n), b.obj/float64(b.n))
	}
	if c != 0 {
		return c < 0
	}
	if c = compareFloat(o.added, b.added); c != 0 {
		return c > 0
	}
	return o.i < b.i
}

// compareFloat compares a and b, treating values within a relative tolerance
// as equal.
func compareFloat(a, b float64) int {
	if math.Abs(a-b) <= Tolerance*max(math.Abs(a), math.Abs(b)) {
		return 0
	}
	if a < b {
		return -1
	}
	return 1
}
