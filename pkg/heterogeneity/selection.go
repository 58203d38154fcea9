package heterogeneity

import "math"

// maxInstancesPerStep bounds instance counts (observed, and computed from
// rates) so that absurd inputs cannot overflow an int.
const maxInstancesPerStep = 1 << 30

// instancesFor is the least number of instances of throughput t (requests/s)
// that covers deficit (requests/s): ceil(deficit / t), at least 1 for a
// positive deficit, ignoring rounding noise just above an integer.
func instancesFor(deficit, t float64) int {
	if !(deficit > 0) {
		return 0
	}
	q := deficit / t
	if q >= maxInstancesPerStep {
		return maxInstancesPerStep
	}
	n := math.Ceil(q)
	if n-q > 1-tolerance {
		n-- // q exceeds the integer n-1 only through rounding
	}
	return max(int(n), 1)
}

// scaleOutOption is what adding n instances of types[i] would do.
type scaleOutOption struct {
	i      int
	n      int
	covers bool    // n covers both the remaining deficit and the replica shortfall
	obj    float64 // objective of adding n of type i, USD/h
	added  float64 // capacity added, requests/s
}

// planScaleOut is the instance selection policy of HetSev 4.1 for a scale-out.
// For each eligible type it computes x_i = max(ceil(deficit/T_i), short),
// capped at MaxAdditional and at the replica budget (-1: none), and the
// objective of adding x_i. A type whose x_i covers the need is preferred, the
// one with the least objective first. If none covers, the type with the least
// objective per request/s of capacity (per instance when only the replica
// shortfall is left) is taken up to its cap and the rest is planned with the
// remaining types. It returns X (never negative) and what stayed uncovered.
func planScaleOut(types []TypeState, eligible []int, deficit float64, short, budget int, lambda float64) (x []int, leftRPS float64, leftCount int) {
	x = make([]int, len(types))
	used := make([]bool, len(types))
	for deficit > tolerance*max(1, deficit) || short > 0 {
		if budget == 0 {
			break
		}
		var best scaleOutOption
		found := false
		for _, i := range eligible {
			if used[i] {
				continue
			}
			t := types[i]
			need := max(instancesFor(deficit, t.ThroughputRPS), short)
			n := min(need, t.MaxAdditional)
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
	if deficit <= tolerance*max(1, deficit) {
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
	if math.Abs(a-b) <= tolerance*max(math.Abs(a), math.Abs(b)) {
		return 0
	}
	if a < b {
		return -1
	}
	return 1
}
