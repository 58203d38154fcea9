package ilp

import (
	"cmp"
	"math"
	"slices"
)

// ExactResult is the outcome of SolveExactResult.
type ExactResult struct {
	// X is the action (aligned with Problem.Types), nil when no feasible
	// action was found.
	X []int
	// Feasible is true when X satisfies every constraint of the problem.
	Feasible bool
	// Optimal is true when the search finished: X is an optimum, or, with
	// Feasible false, the problem has no feasible action. It is false only
	// when the node budget ran out first; X is then the best action found.
	Optimal bool
	// Cost is Problem.Cost(X) in USD/h (0 when X is nil).
	Cost float64
	// Nodes counts the search nodes visited.
	Nodes int
}

// ExactNodeBudget bounds the nodes SolveExactResult visits so that no input
// makes a decision hang. Every instance of the bench (up to 8 GPU types)
// finishes far below it.
const ExactNodeBudget = 200_000

// SolveExact returns an optimal action for the ILP p and true, or nil and
// false when p has no feasible action or is invalid (see Problem.Validate).
// See SolveExactResult for the method; in the rare case that the node budget
// runs out, the best action found is returned (use SolveExactResult to tell).
func SolveExact(p Problem) (x []int, ok bool) {
	r := SolveExactResult(p)
	return r.X, r.Feasible
}

// SolveExactResult solves the ILP p (HetSev 4.1, see Problem) exactly by
// depth-first branch and bound over the GPU types.
//
// Method. Substitute Y_i = N_i + X_i and z_i = Y_i - ylo_i, with ylo_i =
// N_i + max(Lower_i, -N_i), so that z_i ranges over [0, u_i]. The objective
// is then a constant plus sum_i h_i(z_i), where h_i is convex, piecewise
// linear and non-decreasing: slope C_i while X_i < 0 (an instance kept
// instead of removed) and C_i (1 + lambda O_i) while X_i >= 0 (an instance
// added). Constraint (1) becomes sum_i T_i z_i >= R, the replica bounds
// M <= sum_i z_i <= K. Types are branched on in the order of their cheapest
// cost per request/s (slope / T_i), best first; types with u_i = 0 are fixed.
//
// At a node (types 0..d-1 fixed) the values of z_d that are explored are
// those for which the rest can still be completed (an interval: the count
// conditions are linear in z_d and the largest capacity reachable with the
// remaining instance budget is concave in z_d) and whose lower bound
//
//	h_d(z_d) + max(LPcap(R - T_d z_d), LPcount(M - z_d))
//
// is below the incumbent. LPcap is the linear relaxation of covering the
// remaining capacity with the later types (a fractional knapsack, solved
// exactly by taking the linear pieces in order of cost per request/s) and
// LPcount that of reaching the remaining replica count (pieces in order of
// cost per instance); each is a lower bound on the cost of any integer
// completion, so their maximum is one too. The bound is convex in z_d, so the
// search starts at its minimiser and walks outwards in both directions until
// the bound reaches the incumbent; nothing beyond can be cheaper. z_d never
// needs to exceed max(M, ceil(R / T_d)): that much covers the rest on its own
// and more only costs more. The last type is set in closed form to the least
// value that meets (1) and the replica minimum.
//
// Why it is exact: every feasible action is either visited or lies in a part
// of the tree whose lower bound is at least the cost of an action already
// found (ties within a relative 1e-12 are not explored), so the incumbent at
// the end is optimal. The tests check this against brute-force enumeration
// on thousands of random instances. The search is exponential in the number
// of types in the worst case; with up to 8 types the bench's p99 is in the
// tens of microseconds, and ExactNodeBudget stops pathological inputs
// (Optimal is then false).
//
// Ties between optima are broken deterministically by the search order,
// which favours the types with the best cost per request/s. It never panics:
// an invalid problem yields an empty, infeasible result.
func SolveExactResult(p Problem) ExactResult {
	if p.Validate() != nil {
		return ExactResult{Optimal: true}
	}
	s, ok := newSearch(p)
	if !ok {
		return ExactResult{Optimal: true}
	}
	s.dfs(0, s.baseCost, s.r, s.m, s.k)
	res := ExactResult{Optimal: !s.aborted, Nodes: s.nodes}
	if s.best == nil {
		return res
	}
	x := make([]int, len(p.Types))
	for i := range x {
		x[i] = s.lo[i]
	}
	for pos, bt := range s.types {
		x[bt.idx] += s.best[pos]
	}
	res.X, res.Cost = x, p.Cost(x)
	res.Feasible = p.Feasible(x)
	return res
}

// bbType is one branched-on type of the search.
type bbType struct {
	idx  int     // index in Problem.Types
	t    float64 // T_i, requests/s
	u    int     // z ranges over [0, u]
	k    int     // the first k units of z cost slope a, the rest slope b
	a, b float64 // USD/h per instance
}

// h is the cost of z units of the type above its lower bound, USD/h.
func (bt bbType) h(z int) float64 {
	if z <= bt.k {
		return bt.a * float64(z)
	}
	return bt.a*float64(bt.k) + bt.b*float64(z-bt.k)
}

// piece is one linear piece of some type's cost, for the LP bounds.
type piece struct {
	pos   int     // position of the type in search order
	slope float64 // USD/h per instance
	t     float64 // requests/s per instance
	n     int     // instances in the piece
}

type search struct {
	p        Problem
	types    []bbType // in search order
	lo       []int    // lower bound of X per Problem type
	capOrder []piece  // pieces by cost per request/s
	cntOrder []piece  // pieces by cost per instance
	byT      []int    // positions by T, largest first
	sufU     []int    // sufU[d] = sum of u over positions >= d
	sufCap   []float64
	kInf     bool // no replica cap

	baseCost float64 // Cost at z = 0, USD/h
	r        float64 // capacity still needed at z = 0, requests/s
	m, k     int     // replicas still needed / still allowed at z = 0

	cur     []int
	best    []int
	bestVal float64
	nodes   int
	aborted bool
}

// bigCount stands for "no replica cap".
const bigCount = math.MaxInt / 4

func newSearch(p Problem) (*search, bool) {
	s := &search{p: p, lo: make([]int, len(p.Types)), bestVal: math.Inf(1)}
	tol := capacityTolerance(p.Target)
	// Half the tolerance of Feasible, so that rounding in the running sums
	// cannot produce an action Feasible rejects.
	s.r = p.Target - tol/2
	total := 0
	for i, t := range p.Types {
		lo := max(p.Lower[i], -t.Running)
		hi := p.Upper[i]
		if lo > hi {
			return nil, false
		}
		s.lo[i] = lo
		ylo := t.Running + lo
		total += ylo
		s.r -= t.ThroughputRPS * float64(ylo)
		a := t.PriceUSDPerHour
		b := t.PriceUSDPerHour * (1 + p.Lambda*t.LaunchSeconds)
		s.baseCost += a*float64(lo) + (b-a)*float64(max(lo, 0))
		if u := hi - lo; u > 0 {
			s.types = append(s.types, bbType{idx: i, t: t.ThroughputRPS, u: u, k: min(u, max(0, -lo)), a: a, b: b})
		}
	}
	s.m = p.MinReplicas - total
	s.k = bigCount
	s.kInf = true
	if p.MaxReplicas > 0 {
		s.k = p.MaxReplicas - total
		s.kInf = false
		if s.k < 0 {
			return nil, false
		}
	}
	// Search order: cheapest cost per request/s of the first piece, then
	// larger T, then index.
	first := func(bt bbType) float64 {
		if bt.k > 0 {
			return bt.a / bt.t
		}
		return bt.b / bt.t
	}
	slices.SortStableFunc(s.types, func(x, y bbType) int {
		return cmp.Or(cmp.Compare(first(x), first(y)), cmp.Compare(y.t, x.t), cmp.Compare(x.idx, y.idx))
	})
	n := len(s.types)
	s.sufU = make([]int, n+1)
	s.sufCap = make([]float64, n+1)
	for pos := n - 1; pos >= 0; pos-- {
		bt := s.types[pos]
		s.sufU[pos] = s.sufU[pos+1] + bt.u
		s.sufCap[pos] = s.sufCap[pos+1] + bt.t*float64(bt.u)
		if bt.k > 0 {
			s.capOrder = append(s.capOrder, piece{pos: pos, slope: bt.a, t: bt.t, n: bt.k})
		}
		if bt.u > bt.k {
			s.capOrder = append(s.capOrder, piece{pos: pos, slope: bt.b, t: bt.t, n: bt.u - bt.k})
		}
		s.byT = append(s.byT, pos)
	}
	s.cntOrder = slices.Clone(s.capOrder)
	slices.SortStableFunc(s.capOrder, func(x, y piece) int {
		return cmp.Or(cmp.Compare(x.slope/x.t, y.slope/y.t), cmp.Compare(y.t, x.t), cmp.Compare(x.pos, y.pos))
	})
	slices.SortStableFunc(s.cntOrder, func(x, y piece) int {
		return cmp.Or(cmp.Compare(x.slope, y.slope), cmp.Compare(y.t, x.t), cmp.Compare(x.pos, y.pos))
	})
	slices.SortStableFunc(s.byT, func(x, y int) int {
		return cmp.Or(cmp.Compare(s.types[y].t, s.types[x].t), cmp.Compare(x, y))
	})
	s.cur = make([]int, n)
	return s, true
}

// better reports whether v beats the incumbent by more than the tie
// tolerance.
func (s *search) better(v float64) bool {
	if s.best == nil {
		return v < math.Inf(1)
	}
	return v < s.bestVal-1e-12*math.Max(1, math.Abs(s.bestVal))
}

// lpCap is the least cost of covering r requests/s with the types at
// positions >= d, fractionally; +Inf when they cannot.
func (s *search) lpCap(d int, r float64) float64 {
	if r <= 0 {
		return 0
	}
	cost := 0.0
	for _, pc := range s.capOrder {
		if pc.pos < d {
			continue
		}
		full := pc.t * float64(pc.n)
		if full >= r {
			return cost + pc.slope*r/pc.t
		}
		cost += pc.slope * float64(pc.n)
		r -= full
	}
	return math.Inf(1)
}

// lpCount is the least cost of m more instances of the types at positions
// >= d, fractionally; +Inf when they cannot.
func (s *search) lpCount(d, m int) float64 {
	if m <= 0 {
		return 0
	}
	cost := 0.0
	for _, pc := range s.cntOrder {
		if pc.pos < d {
			continue
		}
		if pc.n >= m {
			return cost + pc.slope*float64(m)
		}
		cost += pc.slope * float64(pc.n)
		m -= pc.n
	}
	return math.Inf(1)
}

// maxCap is the largest capacity, requests/s, that at most k instances of the
// types at positions >= d add.
func (s *search) maxCap(d, k int) float64 {
	if s.kInf && k >= bigCount/2 {
		return s.sufCap[d]
	}
	c := 0.0
	for _, pos := range s.byT {
		if k <= 0 {
			break
		}
		if pos < d {
			continue
		}
		take := min(s.types[pos].u, k)
		c += s.types[pos].t * float64(take)
		k -= take
	}
	return c
}

// ceilUnits is the least z >= 0 with z*t >= r, saturated at bigCount.
func ceilUnits(r, t float64) int {
	if r <= 0 {
		return 0
	}
	q := math.Ceil(r / t)
	if !(q < bigCount) {
		return bigCount
	}
	return int(q)
}

// dfs branches on the type at position d with cost so far, capacity r and
// replicas m still needed, and k replicas still allowed.
func (s *search) dfs(d int, cost, r float64, m, k int) {
	s.nodes++
	if s.nodes > ExactNodeBudget {
		s.aborted = true
		return
	}
	if m > k {
		return
	}
	n := len(s.types)
	if d == n {
		if r <= 0 && m <= 0 && s.better(cost) {
			s.record(cost)
		}
		return
	}
	bt := s.types[d]
	if d == n-1 {
		z := max(0, m, ceilUnits(r, bt.t))
		if z > bt.u || z > k {
			return
		}
		if v := cost + bt.h(z); s.better(v) {
			s.cur[d] = z
			s.record(v)
		}
		return
	}

	// Values of z worth trying: [zl, zr].
	zr := min(bt.u, k, max(0, m, ceilUnits(r, bt.t)))
	zl := max(0, m-s.sufU[d+1])
	if zl > zr {
		return
	}
	capAt := func(z int) float64 { return bt.t*float64(z) + s.maxCap(d+1, k-z) }
	if s.kInf {
		// capAt is increasing: the least z that covers r with the rest.
		if need := ceilUnits(r-s.sufCap[d+1], bt.t); need > zl {
			zl = need
		}
	} else {
		// capAt is concave: find its peak, then where it reaches r on
		// either side.
		a, b := zl, zr
		for a < b {
			mid := a + (b-a)/2
			if capAt(mid+1) > capAt(mid) {
				a = mid + 1
			} else {
				b = mid
			}
		}
		peak := a
		if capAt(peak) < r {
			return
		}
		a, b = zl, peak
		for a < b { // least z in [zl, peak] with capAt(z) >= r
			mid := a + (b-a)/2
			if capAt(mid) >= r {
				b = mid
			} else {
				a = mid + 1
			}
		}
		lo := a
		a, b = peak, zr
		for a < b { // largest z in [peak, zr] with capAt(z) >= r
			mid := a + (b-a+1)/2
			if capAt(mid) >= r {
				a = mid
			} else {
				b = mid - 1
			}
		}
		zl, zr = lo, a
	}
	if zl > zr {
		return
	}

	bound := func(z int) float64 {
		return cost + bt.h(z) + math.Max(s.lpCap(d+1, r-bt.t*float64(z)), s.lpCount(d+1, m-z))
	}
	// Minimiser of the convex bound on [zl, zr].
	a, b := zl, zr
	for a < b {
		mid := a + (b-a)/2
		if bound(mid+1) < bound(mid) {
			a = mid + 1
		} else {
			b = mid
		}
	}
	zs := a
	child := func(z int) bool {
		if !s.better(bound(z)) {
			return false
		}
		s.cur[d] = z
		s.dfs(d+1, cost+bt.h(z), r-bt.t*float64(z), m-z, k-z)
		return !s.aborted
	}
	if !child(zs) && s.aborted {
		return
	}
	for z := zs + 1; z <= zr; z++ {
		if !child(z) {
			break
		}
	}
	for z := zs - 1; z >= zl; z-- {
		if !child(z) {
			break
		}
	}
}

func (s *search) record(v float64) {
	s.bestVal = v
	if s.best == nil {
		s.best = make([]int, len(s.cur))
	}
	copy(s.best, s.cur)
}
