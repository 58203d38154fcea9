package heterogeneity

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/hetsev/hetsev/pkg/heterogeneity/ilp"
)

func exactPolicy(change ...func(*Policy)) Policy {
	return testPolicy(append([]func(*Policy){func(p *Policy) { p.Solver = SolverExact }}, change...)...)
}

// abTypes are two synthetic types with lambda-free prices: A T=100 C=1.0,
// B T=150 C=1.4, nothing running, room 5 each.
func abTypes() []TypeState {
	return ts(
		TypeState{GPUType: "A", ThroughputRPS: 100, LatencyMs: 10, PriceUSDPerHour: 1.0, MaxAdditional: 5},
		TypeState{GPUType: "B", ThroughputRPS: 150, LatencyMs: 10, PriceUSDPerHour: 1.4, MaxAdditional: 5},
	)
}

func TestDecideExactScaleOut(t *testing.T) {
	runDecisionCases(t, []decisionCase{
		{
			// W=200 on nothing: target 250. Heuristic: a single covering type,
			// 3 A = 3.0 or 2 B = 2.8 -> +2 B. Exact: 1 A + 1 B = 250 at 2.4.
			name:   "heuristic: single covering type",
			policy: testPolicy(func(p *Policy) { p.Lambda = 0 }),
			steps: []step{{w: 200, types: abTypes(), kind: ActionScaleOut, delta: []int{0, 2}, objective: 2.8,
				reason: "+2 B (objective 2.80 USD/h); solver heuristic"}},
		},
		{
			name:   "exact: the cheaper mix",
			policy: exactPolicy(func(p *Policy) { p.Lambda = 0 }),
			steps: []step{{w: 200, types: abTypes(), kind: ActionScaleOut, delta: []int{1, 1}, objective: 2.4,
				reason: "no running capacity for 200 requests/s: +1 A, +1 B (objective 2.40 USD/h); solver exact"}},
		},
		{
			// resnet50 W=1000 on one T4: both pick +3 T4 at 1.8936 (see
			// TestDecideScaleOut).
			name:   "exact agrees with the heuristic when it is optimal",
			policy: exactPolicy(),
			steps: []step{{w: 1000, types: ts(resnetT4(1, 10), resnetV100(0, 10)),
				kind: ActionScaleOut, delta: []int{3, 0}, objective: 1.8936, reason: "+3 T4 (objective 1.89 USD/h); solver exact"}},
		},
		{
			// MaxReplicas 3, deficit 887: the heuristic takes +2 V100
			// (9.3636); the exact optimum is +1 T4 +1 V100 = 1072 at 0.6312 +
			// 4.6818 = 5.313.
			name:   "exact under MaxReplicas",
			policy: exactPolicy(func(p *Policy) { p.MaxReplicas = 3 }),
			steps: []step{{w: 1000, types: ts(resnetT4(1, 10), resnetV100(0, 10)),
				kind: ActionScaleOut, delta: []int{1, 1}, objective: 5.313}},
		},
		{
			// W=2000, deficit 2137, room for 2 T4 and 1 V100 (1435): the most
			// that can be reached, objective 1.2624 + 4.6818 = 5.9442, 702
			// requests/s short.
			name:   "exact partial scale-out: not enough free GPUs",
			policy: exactPolicy(),
			steps: []step{{w: 2000, types: ts(resnetT4(1, 2), resnetV100(0, 1)),
				kind: ActionScaleOut, delta: []int{2, 1}, objective: 5.9442,
				reason: "partial: 702 requests/s of the deficit uncovered, no free GPU fits more instances of the eligible types; solver exact"}},
		},
		{
			// Same deficit with MaxReplicas 3: two more at most; the most
			// capacity is 2 V100 (1418), 719 short, objective 9.3636.
			name:   "exact partial scale-out: MaxReplicas",
			policy: exactPolicy(func(p *Policy) { p.MaxReplicas = 3 }),
			steps: []step{{w: 2000, types: ts(resnetT4(1, 10), resnetV100(0, 10)),
				kind: ActionScaleOut, delta: []int{0, 2}, objective: 9.3636,
				reason: "partial: 719 requests/s of the deficit uncovered, max replicas 3 reached; solver exact"}},
		},
		{
			// MinReplicas 5 on one T4 at W=0 with room for 2 T4 and 1 V100:
			// short of 4, 3 reachable: +2 T4 +1 V100.
			name:   "exact partial scale-out: min replicas out of reach",
			policy: exactPolicy(func(p *Policy) { p.MinReplicas = 5 }),
			steps: []step{{w: 0, types: ts(resnetT4(1, 2), resnetV100(0, 1)),
				kind: ActionScaleOut, delta: []int{2, 1}, objective: 5.9442, reason: "1 replicas short of min replicas 5"}},
		},
		{
			// The period still applies to the exact solver.
			name:   "exact waits for the scale-out period",
			policy: exactPolicy(func(p *Policy) { p.ScaleOutPeriod = 30 * time.Second }),
			steps: []step{
				{at: 0, w: 1000, types: ts(resnetT4(1, 10)), kind: ActionNone, delta: []int{0}, reason: "waiting before scaling out"},
				{at: 30 * time.Second, w: 1000, types: ts(resnetT4(1, 10)), kind: ActionScaleOut, delta: []int{3}, objective: 1.8936},
			},
		},
	})
}

func TestDecideExactScaleIn(t *testing.T) {
	runDecisionCases(t, []decisionCase{
		{
			// 4 T4 (1452) at W=100: target 125 needs one T4; the exact
			// solver removes 3 at once (-1.578), the heuristic one per
			// interval.
			name:   "exact removes several instances",
			policy: exactPolicy(),
			steps: []step{
				{at: 0, w: 100, types: ts(resnetT4(4, 0)), kind: ActionScaleIn, delta: []int{-3}, objective: -1.578,
					reason: "saturation 0.07 within threshold 0.80, 0.28 after the action (bar 0.80): -3 T4 (objective -1.58 USD/h); solver exact"},
				// The interval applies as before.
				{at: 30 * time.Second, w: 0, types: ts(resnetT4(2, 0)), kind: ActionNone, delta: []int{0}, reason: "scale-in interval: 30s since last scale-in"},
			},
		},
		{
			name:   "heuristic removes one",
			policy: testPolicy(),
			steps:  []step{{w: 100, types: ts(resnetT4(4, 0)), kind: ActionScaleIn, delta: []int{-1}, objective: -0.526, reason: "solver heuristic"}},
		},
		{
			// 3 T4 + 1 V100 (1798) at W=500, target 625: remove the V100 and
			// one T4 (726 left), saving 4.4275.
			name:   "exact scale-in across types",
			policy: exactPolicy(),
			steps: []step{{w: 500, types: ts(resnetT4(3, 0), resnetV100(1, 0)),
				kind: ActionScaleIn, delta: []int{-1, -1}, objective: -4.4275}},
		},
		{
			// Cool-down after a scale-out holds for the exact solver too.
			name:   "exact scale-in waits for the cool-down",
			policy: exactPolicy(),
			steps: []step{
				{at: 0, w: 1000, types: ts(resnetT4(1, 10)), kind: ActionScaleOut, delta: []int{3}, objective: 1.8936},
				{at: 4 * time.Minute, w: 100, types: ts(resnetT4(4, 10)), kind: ActionNone, delta: []int{0}, reason: "scale-in cool-down"},
				{at: 5 * time.Minute, w: 100, types: ts(resnetT4(4, 10)), kind: ActionScaleIn, delta: []int{-3}, objective: -1.578},
			},
		},
		{
			// 2 T4, W=260: with hysteresis 0.1 the bar is 0.7 and one T4
			// alone would be at 0.716: nothing goes (TestScaleInHysteresis).
			name:   "exact scale-in respects the hysteresis",
			policy: exactPolicy(func(p *Policy) { p.ScaleInHysteresis = 0.1 }),
			steps: []step{{w: 260, types: ts(resnetT4(2, 0)), kind: ActionNone, delta: []int{0},
				reason: "without any one instance it would be 0.72 > 0.70; solver exact"}},
		},
		{
			name:   "exact scale-in without hysteresis",
			policy: exactPolicy(),
			steps:  []step{{w: 260, types: ts(resnetT4(2, 0)), kind: ActionScaleIn, delta: []int{-1}, objective: -0.526}},
		},
		{
			// Saturation 0.75 is within the threshold but above the bar 0.7:
			// the running instances do not meet the scale-in target at all.
			name:   "exact scale-in between bar and threshold",
			policy: exactPolicy(func(p *Policy) { p.ScaleInHysteresis = 0.1 }),
			steps: []step{{w: 0.75 * 726, types: ts(resnetT4(2, 0)), kind: ActionNone, delta: []int{0},
				reason: "solver exact"}},
		},
		{
			// MinReplicas 2 with 3 running at W=0: one may go, not two: the
			// V100 (-3.9015).
			name:   "exact scale-in keeps MinReplicas",
			policy: exactPolicy(func(p *Policy) { p.MinReplicas = 2 }),
			steps:  []step{{w: 0, types: ts(resnetT4(2, 0), resnetV100(1, 0)), kind: ActionScaleIn, delta: []int{0, -1}, objective: -3.9015}},
		},
	})
}

func TestDecideModelSLOCheck(t *testing.T) {
	runDecisionCases(t, []decisionCase{
		{
			// bert-large, W=300, one V100 (208): deficit 167. The paper's
			// check admits T4 (114.5 ms <= 200): +3 T4 at 2.2092 with either
			// solver. The model's p98 on T4 is 242.0 ms > 200: only V100
			// (81.7 ms), +1 at 3.9015*1.4 = 5.4621.
			name:   "paper check, exact",
			policy: exactPolicy(func(p *Policy) { p.RTMaxMs = 200 }),
			steps: []step{{w: 300, types: ts(bertT4(0, 10), bertV100(1, 10)),
				kind: ActionScaleOut, delta: []int{3, 0}, objective: 2.2092}},
		},
		{
			name:   "model check, heuristic",
			policy: testPolicy(func(p *Policy) { p.SLOCheck = SLOCheckModel; p.RTMaxMs = 200 }),
			steps: []step{{w: 300, types: ts(bertT4(0, 10), bertV100(1, 10)),
				kind: ActionScaleOut, delta: []int{0, 1}, objective: 5.4621}},
		},
		{
			name:   "model check, exact",
			policy: exactPolicy(func(p *Policy) { p.SLOCheck = SLOCheckModel; p.RTMaxMs = 200 }),
			steps: []step{{w: 300, types: ts(bertT4(0, 10), bertV100(1, 10)),
				kind: ActionScaleOut, delta: []int{0, 1}, objective: 5.4621}},
		},
		{
			// RT_max 75 ms: V100's p98 is 81.7 ms, T4's 242.0 ms.
			name:   "model check: no type meets the percentile SLO",
			policy: exactPolicy(func(p *Policy) { p.SLOCheck = SLOCheckModel; p.RTMaxMs = 75 }),
			steps: []step{{w: 300, types: ts(bertT4(0, 10), bertV100(1, 10)),
				kind: ActionNoFeasibleType, delta: []int{0, 0},
				reason: "no GPU type meets RT_max 75 ms for 98% of requests at saturation 0.80 (latency model; fastest: V100-32GB 81.67 ms)"}},
		},
	})
}

// TestDecideExactInvariants drives fresh heuristic and exact autoscalers
// with the same random one-shot observations and checks: the exact action
// keeps the shape rules (no mixed signs, bounds, replica limits, SLO), a
// non-partial exact scale-out is feasible and never costs more than a
// feasible heuristic one, and an exact scale-in saves at least as much as
// the heuristic's.
func TestDecideExactInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var outs, ins, cheaper int
	for run := range 3000 {
		p := testPolicy(func(p *Policy) {
			p.SaturationThreshold = 0.5 + rng.Float64()*0.5
			p.Lambda = rng.Float64() * 0.05
			p.MinReplicas = 1 + rng.IntN(3)
			if rng.IntN(3) == 0 {
				p.MaxReplicas = p.MinReplicas + rng.IntN(10)
			}
			p.RTMaxMs = []float64{20, 50, 400}[rng.IntN(3)]
			p.ScaleInHysteresis = []float64{0, 0.1}[rng.IntN(2)]
		})
		types := ts(resnetT4(rng.IntN(6), rng.IntN(6)), resnetV100(rng.IntN(4), rng.IntN(4)),
			TypeState{GPUType: "K80", Running: rng.IntN(4), ThroughputRPS: 150, LatencyMs: 45,
				PriceUSDPerHour: 0.9, LaunchSeconds: 60, MaxAdditional: rng.IntN(6)})
		obs := Observation{Now: t0, ArrivalRate: rng.Float64() * 4000, Types: types}
		h := NewAutoscaler(p).Decide(obs)
		pe := p
		pe.Solver = SolverExact
		e := NewAutoscaler(pe).Decide(obs)
		if (h.Kind == ActionScaleOut || h.Kind == ActionNoFeasibleType) != (e.Kind == ActionScaleOut || e.Kind == ActionNoFeasibleType) {
			t.Fatalf("run %d: triggers differ: heuristic %s, exact %s", run, h.Kind, e.Kind)
		}
		if !strings.Contains(e.Reason, "solver exact") && (e.Kind == ActionScaleOut || e.Kind == ActionScaleIn) {
			t.Fatalf("run %d: reason %q does not name the solver", run, e.Reason)
		}
		pos, neg, total := 0, 0, totalRunning(types)
		for i, x := range e.Delta {
			switch {
			case x > 0:
				pos++
				if x > types[i].MaxAdditional || !pe.MeetsSLO(types[i]) {
					t.Fatalf("run %d: +%d %s breaks room or SLO", run, x, types[i].GPUType)
				}
			case x < 0:
				neg++
				if types[i].Running+x < 0 {
					t.Fatalf("run %d: removes more %s than run", run, types[i].GPUType)
				}
			}
			total += x
		}
		if pos > 0 && neg > 0 {
			t.Fatalf("run %d: mixed signs %v", run, e.Delta)
		}
		switch e.Kind {
		case ActionScaleOut:
			outs++
			if p.MaxReplicas > 0 && total > p.MaxReplicas {
				t.Fatalf("run %d: %d replicas > max %d", run, total, p.MaxReplicas)
			}
			pr, _ := DecisionProblem(obs, pe, ilp.ScaleOutOnly)
			if !strings.Contains(e.Reason, "partial") && !pr.Feasible(e.Delta) {
				t.Fatalf("run %d: exact scale-out %v not feasible: %s", run, e.Delta, e.Reason)
			}
			if h.Kind == ActionScaleOut && pr.Feasible(h.Delta) {
				if !pr.Feasible(e.Delta) || e.Objective > h.Objective+1e-9 {
					t.Fatalf("run %d: exact %v (%v) worse than heuristic %v (%v)", run, e.Delta, e.Objective, h.Delta, h.Objective)
				}
				if e.Objective < h.Objective-1e-9 {
					cheaper++
				}
			}
		case ActionScaleIn:
			ins++
			if neg == 0 || total < p.MinReplicas {
				t.Fatalf("run %d: scale-in %v", run, e.Delta)
			}
			bar := p.SaturationThreshold - p.ScaleInHysteresis
			if s := saturationAt(obs.ArrivalRate, Capacity(types, e.Delta)); s > bar*(1+1e-9) {
				t.Fatalf("run %d: scale-in leaves saturation %v > %v", run, s, bar)
			}
			if h.Kind == ActionScaleIn && e.Objective > h.Objective+1e-9 {
				t.Fatalf("run %d: exact scale-in saves %v, heuristic %v", run, -e.Objective, -h.Objective)
			}
			if h.Kind != ActionScaleIn {
				t.Fatalf("run %d: exact scales in (%v), heuristic %s: %s", run, e.Delta, h.Kind, h.Reason)
			}
		case ActionNone, ActionNoFeasibleType:
			if !isZero(e.Delta) {
				t.Fatalf("run %d: %s with delta %v", run, e.Kind, e.Delta)
			}
		}
	}
	if outs < 500 || ins < 300 || cheaper == 0 {
		t.Fatalf("generator skewed: %d scale-outs, %d scale-ins, %d strictly cheaper", outs, ins, cheaper)
	}
}

func TestPolicyValidateSolverAndSLOCheck(t *testing.T) {
	for _, tc := range []struct {
		change func(*Policy)
		want   string
	}{
		{func(p *Policy) { p.Solver = "ilp" }, `Solver must be "heuristic" or "exact"`},
		{func(p *Policy) { p.SLOCheck = "p99" }, `SLOCheck must be "paper" or "model"`},
		{func(p *Policy) { p.ServiceLevel = 1 }, "ServiceLevel"},
		{func(p *Policy) { p.ServiceLevel = -0.5 }, "ServiceLevel"},
	} {
		p := DefaultPolicy()
		tc.change(&p)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want %q", err, tc.want)
		}
	}
	for _, ok := range []func(*Policy){
		func(p *Policy) { p.Solver, p.SLOCheck, p.ServiceLevel = "", "", 0 },
		func(p *Policy) { p.Solver, p.SLOCheck, p.ServiceLevel = SolverExact, SLOCheckModel, 0.95 },
	} {
		p := DefaultPolicy()
		ok(&p)
		if err := p.Validate(); err != nil {
			t.Errorf("valid policy rejected: %v", err)
		}
	}
	// An invalid solver makes Decide hold, as any invalid policy does.
	a := NewAutoscaler(testPolicy(func(p *Policy) { p.Solver = "ilp" }))
	if got := a.Decide(Observation{Now: t0, ArrivalRate: 1000, Types: ts(resnetT4(1, 3))}); got.Kind != ActionNone || !strings.Contains(got.Reason, "Solver") {
		t.Errorf("invalid solver: %s %q", got.Kind, got.Reason)
	}
}

// TestObservationValidateLatencyFields checks the latency-model fields of
// TypeState.
func TestObservationValidateLatencyFields(t *testing.T) {
	for _, tc := range []struct {
		change func(*TypeState)
		want   string
	}{
		{func(t *TypeState) { t.BatchSize = -1 }, "BatchSize"},
		{func(t *TypeState) { t.BatchSize = 1 << 20 }, "BatchSize"},
		{func(t *TypeState) { t.LatencyInflation = 0.9 }, "LatencyInflation"},
		{func(t *TypeState) { t.MaxBatchDelayMs = -1 }, "MaxBatchDelayMs"},
	} {
		ty := resnetT4(1, 1)
		tc.change(&ty)
		err := Observation{Now: t0, Types: ts(ty)}.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want %q", err, tc.want)
		}
	}
	ty := resnetT4(1, 1)
	ty.LatencyInflation, ty.MaxBatchDelayMs = 1.18, 5
	if err := (Observation{Now: t0, Types: ts(ty)}).Validate(); err != nil {
		t.Errorf("valid latency fields rejected: %v", err)
	}
}

// FuzzDecideExact checks that no observation makes Decide with the exact
// solver and the latency model panic, and that its actions keep their shape.
func FuzzDecideExact(f *testing.F) {
	f.Add(1000.0, 1, 10, 0, 10, 363.0, 709.0, 0.8, 400.0, 8, 1.18, 0.0, int64(0))
	f.Add(1e308, 1<<30, 1<<30, 1<<30, 1<<30, 1e-300, 1e300, 1.0, 1e-9, 1<<16, 1e300, 1e300, int64(-1))
	f.Fuzz(func(t *testing.T, w float64, n1, m1, n2, m2 int, t1, t2, thr, rt float64, batch int, infl, delay float64, sec int64) {
		p := exactPolicy(func(p *Policy) {
			p.SaturationThreshold, p.RTMaxMs, p.SLOCheck = thr, rt, SLOCheckModel
		})
		a := NewAutoscaler(p)
		types := ts(
			TypeState{GPUType: "a", Running: n1, ThroughputRPS: t1, LatencyMs: 1, PriceUSDPerHour: 1, LaunchSeconds: 10, MaxAdditional: m1,
				BatchSize: batch, LatencyInflation: infl, MaxBatchDelayMs: delay},
			TypeState{GPUType: "b", Running: n2, ThroughputRPS: t2, LatencyMs: 2, PriceUSDPerHour: 2, LaunchSeconds: 5, MaxAdditional: m2},
		)
		for k := range 3 {
			act := a.Decide(Observation{Now: t0.Add(time.Duration(sec) * time.Second * time.Duration(k)), ArrivalRate: w, Types: types})
			if len(act.Delta) != 2 || act.Reason == "" {
				t.Fatalf("bad action %+v", act)
			}
			if act.Delta[0] < 0 && act.Delta[1] > 0 || act.Delta[0] > 0 && act.Delta[1] < 0 {
				t.Fatalf("mixed signs %v", act.Delta)
			}
		}
	})
}
