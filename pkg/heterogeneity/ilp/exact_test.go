package ilp

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// bruteForce enumerates every X in [Lower, Upper] (clipped at -N) and returns
// the cheapest feasible one, or ok=false.
func bruteForce(p Problem) (best []int, bestCost float64, ok bool) {
	n := len(p.Types)
	lo := make([]int, n)
	for i, t := range p.Types {
		lo[i] = max(p.Lower[i], -t.Running)
		if lo[i] > p.Upper[i] {
			return nil, 0, false
		}
	}
	x := slices.Clone(lo)
	bestCost = math.Inf(1)
	for {
		if p.Feasible(x) {
			if c := p.Cost(x); c < bestCost {
				best, bestCost, ok = slices.Clone(x), c, true
			}
		}
		i := 0
		for ; i < n; i++ {
			if x[i] < p.Upper[i] {
				x[i]++
				break
			}
			x[i] = lo[i]
		}
		if i == n {
			return best, bestCost, ok
		}
	}
}

// randomProblem draws a small ILP: 1-3 types (sometimes 4), N_i 0..4, bounds
// around them in a random direction, integer or fractional throughputs,
// prices with ties and zeros, replica bounds that sometimes bind.
func randomProblem(rng *rand.Rand) Problem {
	n := 1 + rng.IntN(3)
	if rng.IntN(10) == 0 {
		n = 4
	}
	p := Problem{Lambda: []float64{0, 0.01, 0.05, 0.5}[rng.IntN(4)]}
	prices := []float64{0, 0.526, 1, 1.5, 2, 3.9015}
	for i := range n {
		t := Type{
			Name:            string(rune('a' + i)),
			Running:         rng.IntN(5),
			ThroughputRPS:   float64(50 + 50*rng.IntN(8)),
			PriceUSDPerHour: prices[rng.IntN(len(prices))],
			LaunchSeconds:   float64(rng.IntN(4) * 20),
		}
		if rng.IntN(2) == 0 {
			t.ThroughputRPS = 10 + rng.Float64()*700
			t.PriceUSDPerHour = rng.Float64() * 4
		}
		p.Types = append(p.Types, t)
		room := rng.IntN(5)
		switch rng.IntN(4) {
		case 0: // full ILP
			p.Lower = append(p.Lower, -t.Running)
			p.Upper = append(p.Upper, room)
		case 1: // scale-out
			p.Lower = append(p.Lower, 0)
			p.Upper = append(p.Upper, room)
		case 2: // scale-in
			p.Lower = append(p.Lower, -t.Running)
			p.Upper = append(p.Upper, 0)
		default: // arbitrary, even below -N or empty
			l := rng.IntN(9) - 6
			p.Lower = append(p.Lower, l)
			p.Upper = append(p.Upper, l+rng.IntN(6)-1)
		}
	}
	p.Target = rng.Float64() * 2500
	switch rng.IntN(6) {
	case 0:
		p.Target = 0
	case 1:
		p.Target = -10
	case 2: // exactly reachable: capacity of a random X
		x := make([]int, n)
		for i := range x {
			x[i] = rng.IntN(4)
		}
		p.Target = Capacity(p.Types, x)
	}
	p.MinReplicas = rng.IntN(6)
	if rng.IntN(3) == 0 {
		p.MaxReplicas = 1 + rng.IntN(10)
	}
	return p
}

func costsAgree(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// TestSolveExactAgainstBruteForce: on thousands of seeded random small
// instances SolveExact's answer is feasible, no feasible action is cheaper,
// and it reports infeasible exactly when enumeration finds nothing.
func TestSolveExactAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 2))
	var feasible, infeasible int
	for k := range 5000 {
		p := randomProblem(rng)
		want, wantCost, wantOK := bruteForce(p)
		res := SolveExactResult(p)
		if !res.Optimal {
			t.Fatalf("instance %d: search did not finish (%d nodes): %+v", k, res.Nodes, p)
		}
		if res.Feasible != wantOK {
			t.Fatalf("instance %d: SolveExact feasible=%v (x=%v), brute force %v (x=%v)\n%+v", k, res.Feasible, res.X, wantOK, want, p)
		}
		if !wantOK {
			infeasible++
			if res.X != nil {
				t.Fatalf("instance %d: infeasible but x=%v", k, res.X)
			}
			continue
		}
		feasible++
		if !p.Feasible(res.X) {
			t.Fatalf("instance %d: x=%v is not feasible\n%+v", k, res.X, p)
		}
		if got := p.Cost(res.X); !costsAgree(got, wantCost) || got > wantCost+1e-9 {
			t.Fatalf("instance %d: cost %v (x=%v), brute force %v (x=%v)\n%+v", k, got, res.X, wantCost, want, p)
		}
		if !costsAgree(res.Cost, p.Cost(res.X)) {
			t.Fatalf("instance %d: reported cost %v, Cost(x) %v", k, res.Cost, p.Cost(res.X))
		}
		x, ok := SolveExact(p)
		if !ok || !slices.Equal(x, res.X) {
			t.Fatalf("instance %d: SolveExact = %v %v, SolveExactResult %v", k, x, ok, res.X)
		}
	}
	// The generator must exercise both outcomes.
	if feasible < 1000 || infeasible < 500 {
		t.Fatalf("generator skewed: %d feasible, %d infeasible", feasible, infeasible)
	}
}

// TestSolveExactHandWorked checks optima worked out by hand.
func TestSolveExactHandWorked(t *testing.T) {
	// Two synthetic types, lambda 0: A T=100 C=1.0, B T=150 C=1.4.
	ab := func(nA, nB int) []Type {
		return ts(
			Type{Name: "A", Running: nA, ThroughputRPS: 100, PriceUSDPerHour: 1.0},
			Type{Name: "B", Running: nB, ThroughputRPS: 150, PriceUSDPerHour: 1.4},
		)
	}
	tests := []struct {
		name string
		p    Problem
		want []int
		cost float64
		ok   bool
	}{
		{
			// Cover 250 requests/s: 3 A = 3.0, 2 B = 2.8, 1 A + 1 B = 2.4 (250 exactly).
			name: "a mix beats every single type",
			p:    Problem{Types: ab(0, 0), Target: 250, Lower: []int{0, 0}, Upper: []int{5, 5}},
			want: []int{1, 1}, cost: 2.4, ok: true,
		},
		{
			// resnet50, target 1250, 363 running on one T4: deficit 887.
			// 3 T4 = 0.526*3*1.2 = 1.8936 (1089); 1 T4 + 1 V100 = 0.6312 +
			// 4.6818 = 5.313; 2 V100 = 9.3636. -> +3 T4.
			name: "resnet50 scale-out, T4 cheapest",
			p: Problem{Types: ts(resnetT4(1), resnetV100(0)), Target: 1250, Lambda: 0.01,
				Lower: []int{0, 0}, Upper: []int{10, 10}},
			want: []int{3, 0}, cost: 1.8936, ok: true,
		},
		{
			// Same with MaxReplicas 3 (2 more): 2 T4 = 726 < 887; 1 T4 + 1
			// V100 = 1072 at 5.313 beats 2 V100 at 9.3636.
			name: "MaxReplicas makes a mix optimal",
			p: Problem{Types: ts(resnetT4(1), resnetV100(0)), Target: 1250, Lambda: 0.01,
				Lower: []int{0, 0}, Upper: []int{10, 10}, MaxReplicas: 3},
			want: []int{1, 1}, cost: 5.313, ok: true,
		},
		{
			// Scale-in: 4 T4 (1452) for a target of 125: keep one (363),
			// remove 3: -3 * 0.526 = -1.578.
			name: "scale-in removes several instances",
			p:    Problem{Types: ts(resnetT4(4)), Target: 125, Lambda: 0.01, Lower: []int{-4}, Upper: []int{0}, MinReplicas: 1},
			want: []int{-3}, cost: -1.578, ok: true,
		},
		{
			// Scale-in with 3 T4 + 1 V100 (1798) for a target of 625:
			// removing the V100 and one T4 leaves 726 >= 625 and saves
			// 3.9015 + 0.526 = 4.4275; removing the V100 and two T4 leaves
			// 363 < 625.
			name: "scale-in across types",
			p: Problem{Types: ts(resnetT4(3), resnetV100(1)), Target: 625, Lambda: 0.01,
				Lower: []int{-3, -1}, Upper: []int{0, 0}, MinReplicas: 1},
			want: []int{-1, -1}, cost: -4.4275, ok: true,
		},
		{
			// Full ILP: 2 V100 (1418) for a target of 500. Replacing both by
			// 2 T4 (726): -2*3.9015 + 2*0.526*1.2 = -7.803 + 1.2624 = -6.5406,
			// better than removing one V100 (-3.9015).
			name: "full ILP switches types",
			p: Problem{Types: ts(resnetT4(0), resnetV100(2)), Target: 500, Lambda: 0.01,
				Lower: []int{0, -2}, Upper: []int{5, 5}, MinReplicas: 1},
			want: []int{2, -2}, cost: -6.5406, ok: true,
		},
		{
			// MinReplicas 3 with nothing needed: the two cheapest instances
			// per unit. Both A: 2.0; A and B: 2.4 -> +2 A (room 2).
			name: "min replicas only",
			p:    Problem{Types: ab(1, 0), Target: 0, Lower: []int{0, 0}, Upper: []int{2, 2}, MinReplicas: 3},
			want: []int{2, 0}, cost: 2.0, ok: true,
		},
		{
			name: "capacity out of reach",
			p:    Problem{Types: ab(0, 0), Target: 251, Lower: []int{0, 0}, Upper: []int{1, 1}},
			ok:   false,
		},
		{
			name: "max replicas below what runs",
			p:    Problem{Types: ab(3, 0), Target: 0, Lower: []int{0, 0}, Upper: []int{1, 1}, MaxReplicas: 2},
			ok:   false,
		},
		{
			name: "no types, nothing needed",
			p:    Problem{Target: 0},
			want: []int{}, cost: 0, ok: true,
		},
		{
			name: "no types, load",
			p:    Problem{Target: 10},
			ok:   false,
		},
		{
			name: "misaligned bounds are invalid",
			p:    Problem{Types: ab(0, 0), Target: 10, Lower: []int{0}, Upper: []int{1, 1}},
			ok:   false,
		},
	}
	for _, tc := range tests {
		x, ok := SolveExact(tc.p)
		if ok != tc.ok {
			t.Errorf("%s: ok=%v (x=%v), want %v", tc.name, ok, x, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		if !slices.Equal(x, tc.want) || !near(tc.p.Cost(x), tc.cost) {
			t.Errorf("%s: x=%v cost %v, want %v cost %v", tc.name, x, tc.p.Cost(x), tc.want, tc.cost)
		}
	}
}

// TestSolveExactLargeRanges: huge bounds and tiny throughputs must neither
// hang nor overflow; 8 types with 2^30 room each stop within the node
// budget with a feasible action.
func TestSolveExactLargeRanges(t *testing.T) {
	var p Problem
	for i := range 8 {
		p.Types = append(p.Types, Type{Name: string(rune('a' + i)), Running: 1 << 29,
			ThroughputRPS: 1e-3 * float64(i+1), PriceUSDPerHour: 1 + float64(i%3)/7, LaunchSeconds: 30})
		p.Lower = append(p.Lower, -(1 << 29))
		p.Upper = append(p.Upper, 1<<30)
	}
	p.Target = 1e6 // reachable: 2^30 instances of up to 8e-3 requests/s give 8.6e6
	p.Lambda = 0.01
	p.MaxReplicas = 1 << 30
	res := SolveExactResult(p)
	// The node budget stops the search: the visit that exceeds it, and
	// at most one more per level on the way back up. Wall time is
	// measured by cmd/bench-scaler (exact_p99_us), not asserted here.
	if limit := ExactNodeBudget + 1 + len(p.Types); res.Nodes > limit {
		t.Fatalf("visited %d search nodes, want at most %d (ExactNodeBudget %d)", res.Nodes, limit, ExactNodeBudget)
	}
	if !res.Feasible || !p.Feasible(res.X) {
		t.Fatalf("large instance: %+v", res)
	}
}

// FuzzSolveExact checks that SolveExact never panics and that what it
// returns is feasible.
func FuzzSolveExact(f *testing.F) {
	f.Add(2, 3, 363.0, 709.0, 0.526, 3.9015, 20.0, 1250.0, 0.01, -2, 3, 0, 4, 1, 0)
	f.Add(1<<30, 1<<30, 1e-300, 1e300, 0.0, 1e308, 1e9, 1e308, 1e9, -(1 << 30), 1<<30, 0, 0, 1<<30, 1<<30)
	f.Fuzz(func(t *testing.T, n1, n2 int, t1, t2, c1, c2, o, target, lambda float64, l1, u1, l2, u2, minR, maxR int) {
		p := Problem{
			Types: ts(
				Type{Name: "a", Running: n1, ThroughputRPS: t1, PriceUSDPerHour: c1, LaunchSeconds: o},
				Type{Name: "b", Running: n2, ThroughputRPS: t2, PriceUSDPerHour: c2, LaunchSeconds: o / 2},
			),
			Target: target, Lambda: lambda,
			Lower: []int{l1, l2}, Upper: []int{u1, u2},
			MinReplicas: minR, MaxReplicas: maxR,
		}
		res := SolveExactResult(p)
		if res.Feasible && !p.Feasible(res.X) {
			t.Fatalf("infeasible x %v returned as feasible", res.X)
		}
	})
}
