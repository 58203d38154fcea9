package ilp

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSolveGreedyHandWorked checks the heuristic's amounts worked out by hand
// (the same cases drive Autoscaler.Decide in pkg/heterogeneity).
func TestSolveGreedyHandWorked(t *testing.T) {
	out := func(target float64, types []Type, upper ...int) Problem {
		return Problem{Types: types, Target: target, Lambda: 0.01, Lower: make([]int, len(types)), Upper: upper, MinReplicas: 1}
	}
	withReplicas := func(p Problem, minR, maxR int) Problem {
		p.MinReplicas, p.MaxReplicas = minR, maxR
		return p
	}
	ab := ts(Type{Name: "A", ThroughputRPS: 100, PriceUSDPerHour: 1.0}, Type{Name: "B", ThroughputRPS: 150, PriceUSDPerHour: 1.4})
	tests := []struct {
		name      string
		p         Problem
		want      []int
		uncovered float64
		short     int
	}{
		// Deficit 1250 - 363 = 887: 3 T4 at 0.526*3*1.2 = 1.8936, 2 V100
		// at 9.3636; both cover, the cheaper wins.
		{"covering type with the least objective", out(1250, ts(resnetT4(1), resnetV100(0)), 10, 10), []int{3, 0}, 0, 0},
		// Deficit 2137: T4 needs 6, 2 fit; V100 needs 4 and covers.
		{"a covering type beats a capped cheaper one", out(2500, ts(resnetT4(1), resnetV100(0)), 2, 10), []int{0, 4}, 0, 0},
		// Neither covers: +2 T4 (cheapest per request/s), then 1411 left
		// needs 2 V100, which fit.
		{"spills to the second type", out(2500, ts(resnetT4(1), resnetV100(0)), 2, 2), []int{2, 2}, 0, 0},
		// Room for 2 T4 and 1 V100: 1798 of 2500, 702 uncovered.
		{"partial", out(2500, ts(resnetT4(1), resnetV100(0)), 2, 1), []int{2, 1}, 702, 0},
		// MaxReplicas 3 leaves 2: T4 needs 3 (no cover), V100 2 covers.
		{"replica budget", withReplicas(out(1250, ts(resnetT4(1), resnetV100(0)), 10, 10), 1, 3), []int{0, 2}, 0, 0},
		// MinReplicas 5: the shortfall 4 exceeds the 3 T4 of the deficit.
		{"replica shortfall", withReplicas(out(1250, ts(resnetT4(1), resnetV100(0)), 10, 10), 5, 0), []int{4, 0}, 0, 0},
		// Room for 1 T4, MinReplicas 4 at no load: one short.
		{"shortfall out of reach", withReplicas(out(0, ts(resnetT4(1), resnetV100(0)), 1, 1), 4, 0), []int{1, 1}, 0, 1},
		// lambda 0, target 250: a single covering type, +2 B at 2.8, where
		// the optimum is +1 A +1 B at 2.4.
		{"single covering type, not the optimal mix", Problem{Types: ab, Target: 250, Lower: []int{0, 0}, Upper: []int{5, 5}}, []int{0, 2}, 0, 0},
		// Upper 0 (the type fails the SLO check): not used.
		{"types without room are not used", out(1250, ts(resnetT4(1), resnetV100(0)), 0, 10), []int{0, 2}, 0, 0},
		{"nothing needed", out(300, ts(resnetT4(1), resnetV100(0)), 10, 10), []int{0, 0}, 0, 0},
		{"misaligned bounds", out(1250, ts(resnetT4(1), resnetV100(0)), 10), []int{0, 0}, 887, 0},
	}
	for _, tc := range tests {
		got := SolveGreedy(tc.p)
		if !slices.Equal(got.X, tc.want) || !near(got.UncoveredRPS, tc.uncovered) || got.ShortReplicas != tc.short {
			t.Errorf("%s: %+v, want X %v, uncovered %v, short %d", tc.name, got, tc.want, tc.uncovered, tc.short)
		}
	}
}

// TestSolveGreedyAgainstExact: on seeded random scale-out problems the
// greedy action stays within the bounds and the replica cap, reports as
// uncovered exactly what it leaves short, and, when feasible, never costs less
// than the optimum.
func TestSolveGreedyAgainstExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var feasible, worse int
	for k := range 3000 {
		p := randomProblem(rng)
		clear(p.Lower)
		for i := range p.Upper {
			p.Upper[i] = max(p.Upper[i], 0)
		}
		g := SolveGreedy(p)
		total := 0
		for i, x := range g.X {
			if x < 0 || x > p.Upper[i] {
				t.Fatalf("instance %d: X %v outside [0, %v]", k, g.X, p.Upper)
			}
			total += p.Types[i].Running + x
		}
		if p.MaxReplicas > 0 && sumOf(g.X) > 0 && total > p.MaxReplicas {
			t.Fatalf("instance %d: %d replicas > max %d", k, total, p.MaxReplicas)
		}
		if math.Abs(g.UncoveredRPS-p.Uncovered(g.X)) > 1e-6*max(1, p.Target) {
			t.Fatalf("instance %d: uncovered %v, Problem.Uncovered %v", k, g.UncoveredRPS, p.Uncovered(g.X))
		}
		if !p.Feasible(g.X) {
			continue
		}
		feasible++
		opt := SolveExactResult(p)
		if !opt.Feasible || p.Cost(g.X) < opt.Cost-1e-9*max(1, -opt.Cost, opt.Cost) {
			t.Fatalf("instance %d: greedy %v (%v) beats the optimum %+v", k, g.X, p.Cost(g.X), opt)
		}
		if p.Cost(g.X) > opt.Cost+1e-9 {
			worse++
		}
	}
	if feasible < 500 || worse == 0 {
		t.Fatalf("generator skewed: %d feasible, %d worse than the optimum", feasible, worse)
	}
}

func sumOf(x []int) int {
	n := 0
	for _, v := range x {
		n += v
	}
	return n
}
