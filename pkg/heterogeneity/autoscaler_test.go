package heterogeneity

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hetsev/hetsev/pkg/catalog"
)

var t0 = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// testPolicy is the policy the decision tests start from: threshold 0.8,
// lambda 0.01/s, scale out on the first observation above the threshold,
// scale in at most once a minute and not within 5 minutes of a scale-out,
// 1 to unlimited replicas, RT_max 400 ms.
func testPolicy(change ...func(*Policy)) Policy {
	p := Policy{
		SaturationThreshold: 0.8,
		Lambda:              defaultLambdaPS,
		ScaleOutPeriod:      0,
		ScaleInInterval:     time.Minute,
		ScaleInCoolDown:     5 * time.Minute,
		MinReplicas:         1,
		MaxReplicas:         0,
		RTMaxMs:             resnetRTMaxMs,
	}
	for _, c := range change {
		c(&p)
	}
	return p
}

// step is one observation fed to the autoscaler and what must come back.
type step struct {
	at        time.Duration // since t0
	w         float64       // arrival rate, requests/s
	types     []TypeState
	kind      ActionKind
	delta     []int
	objective float64 // USD/h; checked for every step (0 for None)
	reason    string  // substring of Action.Reason
	// lowerBound: w is only a lower bound of W
	// (Observation.ArrivalRateIsLowerBound).
	lowerBound bool
}

type decisionCase struct {
	name   string
	policy Policy
	steps  []step
}

func runDecisionCases(t *testing.T, cases []decisionCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAutoscaler(tc.policy)
			for k, s := range tc.steps {
				got := a.Decide(Observation{Now: t0.Add(s.at), ArrivalRate: s.w, Types: s.types, ArrivalRateIsLowerBound: s.lowerBound})
				if got.Kind != s.kind || !slices.Equal(got.Delta, s.delta) {
					t.Fatalf("step %d (t0+%v): got %s %v (%q), want %s %v", k, s.at, got.Kind, got.Delta, got.Reason, s.kind, s.delta)
				}
				if !near(got.Objective, s.objective) {
					t.Errorf("step %d: objective %v, want %v", k, got.Objective, s.objective)
				}
				if !strings.Contains(got.Reason, s.reason) {
					t.Errorf("step %d: reason %q does not contain %q", k, got.Reason, s.reason)
				}
				if want := Saturation(s.w, s.types); !near(got.Saturation, want) {
					t.Errorf("step %d: saturation %v, want %v", k, got.Saturation, want)
				}
			}
		})
	}
}

func TestDecideScaleOut(t *testing.T) {
	runDecisionCases(t, []decisionCase{
		{
			// W=1000, N_T4=1 (T=363), threshold 0.8: need 1000/0.8 = 1250,
			// deficit 1250-363 = 887.
			// T4:   ceil(887/363)=ceil(2.44)=3, objective 0.526*(3+0.01*20*3) = 1.8936
			// V100: ceil(887/709)=ceil(1.25)=2, objective 3.9015*(2+0.01*20*2) = 9.3636
			// Both cover the deficit: the cheaper objective wins, +3 T4.
			name:   "chooses the type with the lower objective",
			policy: testPolicy(),
			steps: []step{{w: 1000, types: ts(resnetT4(1, 10), resnetV100(0, 10)),
				kind: ActionScaleOut, delta: []int{3, 0}, objective: 1.8936,
				reason: "saturation 2.75 > 0.80 for 0s: +3 T4 (objective 1.89 USD/h)"}},
		},
		{
			// Synthetic types to isolate the launch term: both T=100, L=10.
			// "slow-start" C=1.0 O=100 s, "fast-start" C=1.5 O=10 s.
			// W=160, N_slow=1: need 200, deficit 100 -> 1 of either.
			// lambda 0.001: slow 1.0*(1+0.001*100)=1.1, fast 1.5*(1+0.001*10)=1.515 -> slow.
			name:   "small lambda keeps the cheap slow-launching type",
			policy: testPolicy(func(p *Policy) { p.Lambda = 0.001 }),
			steps: []step{{w: 160, types: launchTypes(),
				kind: ActionScaleOut, delta: []int{1, 0}, objective: 1.1, reason: "+1 slow-start"}},
		},
		{
			// Same as above with lambda 0.01:
			// slow 1.0*(1+0.01*100)=2.0, fast 1.5*(1+0.01*10)=1.65 -> fast.
			name:   "large lambda prefers the fast-launching type",
			policy: testPolicy(func(p *Policy) { p.Lambda = 0.01 }),
			steps: []step{{w: 160, types: launchTypes(),
				kind: ActionScaleOut, delta: []int{0, 1}, objective: 1.65, reason: "+1 fast-start"}},
		},
		{
			// bert-large, W=300, N_V100=1 (T=208): need 375, deficit 167.
			// T4 (L=114.5 ms <= 400): ceil(167/69.3)=ceil(2.41)=3, 0.526*3*(1+0.01*40) = 2.2092
			// V100:                   ceil(167/208)=1,              3.9015*1*1.4     = 5.4621
			// -> +3 T4.
			name:   "RT_max 400 ms admits T4 for bert-large",
			policy: testPolicy(),
			steps: []step{{w: 300, types: ts(bertT4(0, 10), bertV100(1, 10)),
				kind: ActionScaleOut, delta: []int{3, 0}, objective: 2.2092}},
		},
		{
			// Same with RT_max 100 ms: T4 (114.5 ms) is excluded by
			// constraint 4, so +1 V100 at 5.4621 although T4 is cheaper.
			name:   "type over RT_max is excluded",
			policy: testPolicy(func(p *Policy) { p.RTMaxMs = 100 }),
			steps: []step{{w: 300, types: ts(bertT4(0, 10), bertV100(1, 10)),
				kind: ActionScaleOut, delta: []int{0, 1}, objective: 5.4621}},
		},
		{
			// W=2000, N_T4=1: need 2500, deficit 2137.
			// T4 needs ceil(2137/363)=6 but only 2 fit: does not cover.
			// V100 needs ceil(2137/709)=ceil(3.01)=4 and 10 fit: covers,
			// objective 3.9015*4*1.2 = 18.7272. A covering type is preferred.
			name:   "MaxAdditional caps the cheap type, a covering type wins",
			policy: testPolicy(),
			steps: []step{{w: 2000, types: ts(resnetT4(1, 2), resnetV100(0, 10)),
				kind: ActionScaleOut, delta: []int{0, 4}, objective: 18.7272}},
		},
		{
			// As above with V100 capped at 2: no single type covers 2137.
			// Cost per request/s: T4 0.526*1.2/363 = 0.00174, V100 3.9015*1.2/709 = 0.00660
			// -> +2 T4 (726 requests/s), deficit left 2137-726 = 1411.
			// V100: ceil(1411/709)=ceil(1.99)=2 <= 2 covers -> +2 V100.
			// Objective 0.526*2*1.2 + 3.9015*2*1.2 = 1.2624 + 9.3636 = 10.626.
			name:   "MaxAdditional caps both, spills to the second type",
			policy: testPolicy(),
			steps: []step{{w: 2000, types: ts(resnetT4(1, 2), resnetV100(0, 2)),
				kind: ActionScaleOut, delta: []int{2, 2}, objective: 10.626, reason: "+2 T4, +2 V100-32GB"}},
		},
		{
			// As above with V100 capped at 1: +2 T4, +1 V100 (709 of the
			// 1411 left), 702 requests/s uncovered: a partial scale-out.
			// Objective 1.2624 + 3.9015*1.2 = 1.2624 + 4.6818 = 5.9442.
			name:   "not enough free resources: partial scale-out",
			policy: testPolicy(),
			steps: []step{{w: 2000, types: ts(resnetT4(1, 2), resnetV100(0, 1)),
				kind: ActionScaleOut, delta: []int{2, 1}, objective: 5.9442,
				reason: "partial: 702 requests/s of the deficit uncovered, no free GPU"}},
		},
		{
			// W=1000, N_T4=1, deficit 887 (first case), MaxReplicas 3: at
			// most 2 more. T4 needs 3 -> 2 (726 < 887, no cover); V100 needs
			// 2 -> covers at 9.3636 -> +2 V100.
			name:   "MaxReplicas caps the total and changes the choice",
			policy: testPolicy(func(p *Policy) { p.MaxReplicas = 3 }),
			steps: []step{{w: 1000, types: ts(resnetT4(1, 10), resnetV100(0, 10)),
				kind: ActionScaleOut, delta: []int{0, 2}, objective: 9.3636}},
		},
		{
			name:   "at MaxReplicas nothing is added",
			policy: testPolicy(func(p *Policy) { p.MaxReplicas = 1 }),
			steps: []step{{w: 1000, types: ts(resnetT4(1, 10), resnetV100(0, 10)),
				kind: ActionNone, delta: []int{0, 0}, reason: "1 running >= max replicas 1"}},
		},
		{
			// ScaleOutPeriod 30 s. W=1000 on one T4 (s=2.75) must hold 30 s.
			name:   "scale-out waits for the period",
			policy: testPolicy(func(p *Policy) { p.ScaleOutPeriod = 30 * time.Second }),
			steps: []step{
				{at: 0, w: 1000, types: ts(resnetT4(1, 10)), kind: ActionNone, delta: []int{0},
					reason: "for 0s of 30s: waiting"},
				{at: 20 * time.Second, w: 1000, types: ts(resnetT4(1, 10)), kind: ActionNone, delta: []int{0},
					reason: "for 20s of 30s"},
				// 200/363 = 0.55: back under the threshold resets the timer
				// (1 running = MinReplicas, so no scale-in either).
				{at: 25 * time.Second, w: 200, types: ts(resnetT4(1, 10)), kind: ActionNone, delta: []int{0},
					reason: "saturation 0.55 within threshold 0.80"},
				{at: 40 * time.Second, w: 1000, types: ts(resnetT4(1, 10)), kind: ActionNone, delta: []int{0},
					reason: "for 0s of 30s"},
				{at: 69 * time.Second, w: 1000, types: ts(resnetT4(1, 10)), kind: ActionNone, delta: []int{0},
					reason: "for 29s of 30s"},
				// Above since 40 s, now 70 s: deficit 887 -> +3 T4 (first case).
				{at: 70 * time.Second, w: 1000, types: ts(resnetT4(1, 10)), kind: ActionScaleOut, delta: []int{3},
					objective: 1.8936, reason: "for 30s: +3 T4"},
				// Still above (the new instances are counted only once the
				// caller reports them): the period starts again.
				{at: 75 * time.Second, w: 1000, types: ts(resnetT4(1, 10)), kind: ActionNone, delta: []int{0},
					reason: "for 0s of 30s"},
			},
		},
	})
}

// launchTypes are two synthetic types that differ only in price and launch
// time: slow-start (1 running) and fast-start.
func launchTypes() []TypeState {
	return ts(
		TypeState{GPUType: "slow-start", Running: 1, ThroughputRPS: 100, LatencyMs: 10, PriceUSDPerHour: 1.0, LaunchSeconds: 100, MaxAdditional: 5},
		TypeState{GPUType: "fast-start", Running: 0, ThroughputRPS: 100, LatencyMs: 10, PriceUSDPerHour: 1.5, LaunchSeconds: 10, MaxAdditional: 5},
	)
}

func TestDecideScaleIn(t *testing.T) {
	runDecisionCases(t, []decisionCase{
		{
			name:   "scale-in after cool-down and interval, most expensive first",
			policy: testPolicy(),
			steps: []step{
				// N_T4=1, N_V100=1: capacity 1072, W=1000 -> s=0.93; need 1250,
				// deficit 178: T4 ceil(0.49)=1 at 0.526*1.2 = 0.6312,
				// V100 1 at 3.9015*1.2 = 4.6818 -> +1 T4.
				{at: 0, w: 1000, types: ts(resnetT4(1, 10), resnetV100(1, 10)),
					kind: ActionScaleOut, delta: []int{1, 0}, objective: 0.6312},
				// Capacity 2*363+709 = 1435, W=300 -> s=0.21, but only 4 min
				// since the scale-out (cool-down 5 min).
				{at: 4 * time.Minute, w: 300, types: ts(resnetT4(2, 10), resnetV100(1, 10)),
					kind: ActionNone, delta: []int{0, 0}, reason: "scale-in cool-down: 4m0s since last scale-out, 5m0s required"},
				// 5 min: without a V100 300/726 = 0.41 <= 0.8, without a T4
				// 300/1072 = 0.28 <= 0.8; the V100 is pricier -> -1 V100,
				// objective 3.9015*(-1) = -3.9015.
				{at: 5 * time.Minute, w: 300, types: ts(resnetT4(2, 10), resnetV100(1, 10)),
					kind: ActionScaleIn, delta: []int{0, -1}, objective: -3.9015,
					reason: "saturation 0.21 within threshold 0.80, 0.41 without one V100-32GB: -1 V100-32GB (objective -3.90 USD/h)"},
				// 30 s later, W=100 on 2 T4 would fit on one (100/363 = 0.28)
				// but the interval is 1 min.
				{at: 5*time.Minute + 30*time.Second, w: 100, types: ts(resnetT4(2, 10), resnetV100(0, 10)),
					kind: ActionNone, delta: []int{0, 0}, reason: "scale-in interval: 30s since last scale-in, 1m0s required"},
				// 6 min: -1 T4, objective -0.526.
				{at: 6 * time.Minute, w: 100, types: ts(resnetT4(2, 10), resnetV100(0, 10)),
					kind: ActionScaleIn, delta: []int{-1, 0}, objective: -0.526},
				// One T4 left and MinReplicas 1: never to zero, even at W=0.
				{at: 8 * time.Minute, w: 0, types: ts(resnetT4(1, 10), resnetV100(0, 10)),
					kind: ActionNone, delta: []int{0, 0}, reason: "1 running, at min replicas 1"},
			},
		},
		{
			// N_T4=2 (726), W=300 -> s=0.41; without one T4 300/363 = 0.83 > 0.8.
			name:   "scale-in blocked when the load would not fit",
			policy: testPolicy(),
			steps: []step{{w: 300, types: ts(resnetT4(2, 10)),
				kind: ActionNone, delta: []int{0}, reason: "without any one instance it would be 0.83 > 0.80"}},
		},
		{
			// Boundary: 2 instances of T=100, W=80: without one 80/100 = 0.8,
			// which is not above the threshold -> -1.
			name:   "scale-in when the load exactly fits the threshold",
			policy: testPolicy(),
			steps: []step{{w: 80, types: ts(TypeState{GPUType: "X", Running: 2, ThroughputRPS: 100, LatencyMs: 1, PriceUSDPerHour: 1}),
				kind: ActionScaleIn, delta: []int{-1}, objective: -1}},
		},
		{
			// Equal prices: the lower-throughput instance goes first.
			name:   "scale-in price tie removes the lower throughput",
			policy: testPolicy(),
			steps: []step{{w: 0, types: ts(
				TypeState{GPUType: "big", Running: 1, ThroughputRPS: 200, LatencyMs: 1, PriceUSDPerHour: 1},
				TypeState{GPUType: "small", Running: 1, ThroughputRPS: 100, LatencyMs: 1, PriceUSDPerHour: 1}),
				kind: ActionScaleIn, delta: []int{0, -1}, objective: -1}},
		},
		{
			// MinReplicas 2 with 2 running: no scale-in at W=0.
			name:   "scale-in respects MinReplicas",
			policy: testPolicy(func(p *Policy) { p.MinReplicas = 2 }),
			steps: []step{{w: 0, types: ts(resnetT4(1, 10), resnetV100(1, 10)),
				kind: ActionNone, delta: []int{0, 0}, reason: "at min replicas 2"}},
		},
	})
}

// TestDecideOnALowerBoundScalesOutNeverIn: an arrival rate measured on
// part of the serving instances (Observation.ArrivalRateIsLowerBound)
// still scales out when it alone exceeds the threshold, and never scales
// in, with either solver; a refused scale-in leaves the scale-in timing
// alone, so the first complete measurement may scale in at once.
func TestDecideOnALowerBoundScalesOutNeverIn(t *testing.T) {
	// The full measurement's scale-in: the heuristic removes one T4, the
	// exact solver all it can (20/363 = 0.06 <= 0.8 on one).
	scaleIn := map[string]struct {
		delta     []int
		objective float64
	}{SolverHeuristic: {[]int{-1}, -0.526}, SolverExact: {[]int{-3}, -3 * 0.526}}
	for _, solver := range []string{SolverHeuristic, SolverExact} {
		runDecisionCases(t, []decisionCase{{
			name:   solver,
			policy: testPolicy(func(p *Policy) { p.Solver = solver }),
			steps: []step{
				// 3 T4 (1089 requests/s), W >= 1000: s >= 0.92 > 0.8; need
				// 1250, deficit 161 -> +1 T4.
				{at: 0, w: 1000, types: ts(resnetT4(3, 10)), lowerBound: true,
					kind: ActionScaleOut, delta: []int{1}, objective: 0.6312},
				// Past the cool-down, W >= 20 on 4 T4: one would do, but W
				// may be far higher.
				{at: 10 * time.Minute, w: 20, types: ts(resnetT4(4, 10)), lowerBound: true,
					kind: ActionNone, delta: []int{0}, reason: "only a lower bound: scale-in held"},
				{at: 10*time.Minute + 15*time.Second, w: 0, types: ts(resnetT4(4, 10)), lowerBound: true,
					kind: ActionNone, delta: []int{0}, reason: "scale-in held"},
				// Measured in full: scale in at once (no scale-in interval
				// was started by the refused ones).
				{at: 10*time.Minute + 30*time.Second, w: 20, types: ts(resnetT4(4, 10)),
					kind: ActionScaleIn, delta: scaleIn[solver].delta, objective: scaleIn[solver].objective},
			},
		}})
	}
}

func TestDecideMinReplicas(t *testing.T) {
	runDecisionCases(t, []decisionCase{
		{
			// Nothing runs, W=0, MinReplicas 1: add one instance at once
			// (even with a scale-out period). Per instance T4 0.526*1.2 =
			// 0.6312, V100 3.9015*1.2 = 4.6818 -> +1 T4.
			name:   "never zero: W=0 and nothing running",
			policy: testPolicy(func(p *Policy) { p.ScaleOutPeriod = time.Hour }),
			steps: []step{{w: 0, types: ts(resnetT4(0, 10), resnetV100(0, 10)),
				kind: ActionScaleOut, delta: []int{1, 0}, objective: 0.6312, reason: "0 running < min replicas 1: +1 T4"}},
		},
		{
			// Nothing runs, W=500: no capacity -> at once. Need 625:
			// T4 ceil(625/363)=2 at 0.526*2*1.2 = 1.2624, V100 1 at 4.6818 -> +2 T4.
			name:   "requests but no capacity",
			policy: testPolicy(func(p *Policy) { p.ScaleOutPeriod = time.Hour }),
			steps: []step{{w: 500, types: ts(resnetT4(0, 10), resnetV100(0, 10)),
				kind: ActionScaleOut, delta: []int{2, 0}, objective: 1.2624, reason: "no running capacity for 500 requests/s"}},
		},
		{
			// MinReplicas 3, one T4, W=0: short 2 -> T4 2 at 1.2624,
			// V100 2 at 9.3636 -> +2 T4.
			name:   "raise to MinReplicas",
			policy: testPolicy(func(p *Policy) { p.MinReplicas = 3 }),
			steps: []step{{w: 0, types: ts(resnetT4(1, 10), resnetV100(0, 10)),
				kind: ActionScaleOut, delta: []int{2, 0}, objective: 1.2624}},
		},
		{
			// MinReplicas 5, one T4, W=1000: deficit 887 needs 3 T4 but the
			// shortfall is 4 -> T4 max(3,4)=4 at 0.526*4*1.2 = 2.5248,
			// V100 max(2,4)=4 at 18.7272 -> +4 T4.
			name:   "MinReplicas shortfall larger than the deficit",
			policy: testPolicy(func(p *Policy) { p.MinReplicas = 5 }),
			steps: []step{{w: 1000, types: ts(resnetT4(1, 10), resnetV100(0, 10)),
				kind: ActionScaleOut, delta: []int{4, 0}, objective: 2.5248}},
		},
	})
}

func TestDecideNoFeasibleType(t *testing.T) {
	runDecisionCases(t, []decisionCase{
		{
			// resnet50: T4 22.41 ms, V100 11.5 ms, both over RT_max 10 ms.
			name:   "no type meets RT_max",
			policy: testPolicy(func(p *Policy) { p.RTMaxMs = 10 }),
			steps: []step{{w: 1000, types: ts(resnetT4(1, 10), resnetV100(0, 10)),
				kind: ActionNoFeasibleType, delta: []int{0, 0}, reason: "no GPU type meets RT_max 10 ms (fastest: V100-32GB 11.5 ms)"}},
		},
		{
			name:   "no free GPU",
			policy: testPolicy(),
			steps: []step{{w: 1000, types: ts(resnetT4(1, 0), resnetV100(0, 0)),
				kind: ActionNoFeasibleType, delta: []int{0, 0}, reason: "no free GPU fits another instance"}},
		},
		{
			// RT_max 20 ms: T4 (22.41) excluded; V100 (11.5) meets it but
			// has no room.
			name:   "the only type meeting RT_max has no room",
			policy: testPolicy(func(p *Policy) { p.RTMaxMs = 20 }),
			steps: []step{{w: 1000, types: ts(resnetT4(1, 10), resnetV100(0, 0)),
				kind: ActionNoFeasibleType, delta: []int{0, 0}, reason: "no free GPU fits another instance (V100-32GB meet RT_max 20 ms"}},
		},
		{
			name:   "no types at all",
			policy: testPolicy(),
			steps: []step{{w: 10, types: nil,
				kind: ActionNoFeasibleType, delta: []int{}, reason: "lists no GPU types"}},
		},
	})
}

func TestDecideInvalidInput(t *testing.T) {
	good := ts(resnetT4(1, 1))
	tests := []struct {
		name   string
		policy Policy
		obs    Observation
		reason string
	}{
		{"bad threshold", testPolicy(func(p *Policy) { p.SaturationThreshold = 0 }), Observation{Now: t0, Types: good}, "SaturationThreshold"},
		{"zero min replicas", testPolicy(func(p *Policy) { p.MinReplicas = 0 }), Observation{Now: t0, Types: good}, "MinReplicas"},
		{"NaN arrival rate", testPolicy(), Observation{Now: t0, ArrivalRate: math.NaN(), Types: good}, "ArrivalRate"},
		{"negative arrival rate", testPolicy(), Observation{Now: t0, ArrivalRate: -1, Types: good}, "ArrivalRate"},
		{"zero time", testPolicy(), Observation{ArrivalRate: 1, Types: good}, "Now is zero"},
		{"zero throughput", testPolicy(), Observation{Now: t0, Types: ts(TypeState{GPUType: "T4", Running: 1})}, "ThroughputRPS"},
		{"negative running", testPolicy(), Observation{Now: t0, Types: ts(resnetT4(-1, 1))}, "Running"},
		{"negative room", testPolicy(), Observation{Now: t0, Types: ts(resnetT4(1, -1))}, "MaxAdditional"},
		{"duplicate type", testPolicy(), Observation{Now: t0, Types: ts(resnetT4(1, 1), resnetT4(1, 1))}, "appears twice"},
		{"infinite price", testPolicy(), Observation{Now: t0, Types: ts(TypeState{GPUType: "T4", Running: 1, ThroughputRPS: 1, PriceUSDPerHour: math.Inf(1)})}, "PriceUSDPerHour"},
	}
	for _, tc := range tests {
		a := NewAutoscaler(tc.policy)
		got := a.Decide(tc.obs)
		if got.Kind != ActionNone || !isZero(got.Delta) || len(got.Delta) != len(tc.obs.Types) {
			t.Errorf("%s: got %s %v, want None with zero delta", tc.name, got.Kind, got.Delta)
		}
		if !strings.HasPrefix(got.Reason, "invalid ") || !strings.Contains(got.Reason, tc.reason) {
			t.Errorf("%s: reason %q, want invalid ... %q", tc.name, got.Reason, tc.reason)
		}
		if a.State() != (State{}) {
			t.Errorf("%s: state changed on invalid input: %+v", tc.name, a.State())
		}
	}
	var nilScaler *Autoscaler
	if got := nilScaler.Decide(Observation{Now: t0, Types: good}); got.Kind != ActionNone {
		t.Errorf("nil autoscaler: got %s", got.Kind)
	}
}

func TestAutoscalerStateRoundTrip(t *testing.T) {
	// A restored last scale-out 1 min ago blocks a scale-in for the 5 min
	// cool-down; N_T4=3, W=100 would otherwise fit on 2.
	a := NewAutoscaler(testPolicy())
	a.SetState(State{LastScaleOut: t0.Add(-time.Minute)})
	obs := Observation{Now: t0, ArrivalRate: 100, Types: ts(resnetT4(3, 10))}
	if got := a.Decide(obs); got.Kind != ActionNone || !strings.Contains(got.Reason, "cool-down") {
		t.Fatalf("restored cool-down: got %s %q", got.Kind, got.Reason)
	}
	obs.Now = t0.Add(4 * time.Minute)
	got := a.Decide(obs)
	if got.Kind != ActionScaleIn || !slices.Equal(got.Delta, []int{-1}) {
		t.Fatalf("after cool-down: got %s %v %q", got.Kind, got.Delta, got.Reason)
	}
	if s := a.State(); !s.LastScaleIn.Equal(obs.Now) || !s.LastScaleOut.Equal(t0.Add(-time.Minute)) || !s.AboveThresholdSince.IsZero() {
		t.Errorf("state after scale-in: %+v", s)
	}
	b := NewAutoscaler(testPolicy())
	b.SetState(a.State())
	if b.State() != a.State() {
		t.Errorf("SetState(State()) = %+v, want %+v", b.State(), a.State())
	}
}

func TestNewTypeState(t *testing.T) {
	cat, err := catalog.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	profs, err := catalog.DefaultProfiles()
	if err != nil {
		t.Fatal(err)
	}
	p, _ := profs.Get("resnet50", "T4")
	g, _ := cat.ByName("T4")
	got, err := NewTypeState(p, g, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := resnetT4(2, 3); got != want {
		t.Errorf("NewTypeState = %+v, want %+v", got, want)
	}
	v, _ := cat.ByName("V100-32GB")
	if _, err := NewTypeState(p, v, 0, 0); err == nil {
		t.Error("NewTypeState with a mismatched GPU type: no error")
	}
}

// TestDecideInvariants drives the autoscaler with random observations and
// checks what must hold for every action: positive and negative X_i never
// mix, a scale-out adds within MaxAdditional and MaxReplicas, a scale-in
// removes exactly one running instance and keeps MinReplicas, and
// N_i + X_i >= 0 (constraint 3).
func TestDecideInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for run := range 200 {
		p := testPolicy(func(p *Policy) {
			p.SaturationThreshold = 0.5 + rng.Float64()*0.5
			p.Lambda = rng.Float64() * 0.05
			p.ScaleOutPeriod = time.Duration(rng.IntN(3)) * 15 * time.Second
			p.ScaleInInterval = time.Duration(rng.IntN(3)) * 30 * time.Second
			p.ScaleInCoolDown = time.Duration(rng.IntN(3)) * time.Minute
			p.MinReplicas = 1 + rng.IntN(3)
			if rng.IntN(2) == 0 {
				p.MaxReplicas = p.MinReplicas + rng.IntN(10)
			}
			p.RTMaxMs = []float64{10, 20, 50, 400}[rng.IntN(4)]
		})
		a := NewAutoscaler(p)
		now := t0
		running := []int{rng.IntN(3), rng.IntN(3), rng.IntN(3)}
		for range 100 {
			now = now.Add(time.Duration(1+rng.IntN(60)) * time.Second)
			types := ts(resnetT4(running[0], rng.IntN(4)), resnetV100(running[1], rng.IntN(4)),
				TypeState{GPUType: "K80", Running: running[2], ThroughputRPS: 150, LatencyMs: 45,
					PriceUSDPerHour: 0.9, LaunchSeconds: 60, MaxAdditional: rng.IntN(4)})
			w := rng.Float64() * 3000
			if rng.IntN(10) == 0 {
				w = 0
			}
			total := running[0] + running[1] + running[2]
			act := a.Decide(Observation{Now: now, ArrivalRate: w, Types: types})
			if len(act.Delta) != len(types) {
				t.Fatalf("run %d: delta %v has the wrong length", run, act.Delta)
			}
			pos, neg, sumX := 0, 0, 0
			for i, x := range act.Delta {
				if x > 0 {
					pos++
					if x > types[i].MaxAdditional {
						t.Fatalf("run %d: +%d %s exceeds MaxAdditional %d", run, x, types[i].GPUType, types[i].MaxAdditional)
					}
					if types[i].LatencyMs > p.RTMaxMs {
						t.Fatalf("run %d: adds %s with latency %v > RT_max %v", run, types[i].GPUType, types[i].LatencyMs, p.RTMaxMs)
					}
				}
				if x < 0 {
					neg++
				}
				if running[i]+x < 0 {
					t.Fatalf("run %d: N+X < 0 for %s", run, types[i].GPUType)
				}
				sumX += x
			}
			if pos > 0 && neg > 0 {
				t.Fatalf("run %d: mixed signs %v", run, act.Delta)
			}
			switch act.Kind {
			case ActionScaleOut:
				if neg > 0 || pos == 0 {
					t.Fatalf("run %d: scale-out delta %v", run, act.Delta)
				}
				if p.MaxReplicas > 0 && total+sumX > p.MaxReplicas {
					t.Fatalf("run %d: %d+%d exceeds MaxReplicas %d", run, total, sumX, p.MaxReplicas)
				}
			case ActionScaleIn:
				if sumX != -1 || neg != 1 {
					t.Fatalf("run %d: scale-in delta %v", run, act.Delta)
				}
				if total-1 < p.MinReplicas {
					t.Fatalf("run %d: scale-in below MinReplicas", run)
				}
				if after := saturationAt(w, Capacity(types, act.Delta)); after > p.SaturationThreshold*(1+1e-9) {
					t.Fatalf("run %d: scale-in leaves saturation %v", run, after)
				}
			case ActionNone, ActionNoFeasibleType:
				if !isZero(act.Delta) {
					t.Fatalf("run %d: %s with delta %v", run, act.Kind, act.Delta)
				}
			default:
				t.Fatalf("run %d: unknown kind %q", run, act.Kind)
			}
			if act.Reason == "" {
				t.Fatalf("run %d: empty reason", run)
			}
			for i, x := range act.Delta {
				running[i] += x
			}
		}
	}
}

// FuzzDecide checks that no observation makes Decide panic and that its
// actions keep their shape.
func FuzzDecide(f *testing.F) {
	f.Add(1000.0, 1, 10, 0, 10, 363.0, 709.0, 0.8, 400.0, int64(0))
	f.Add(1e308, 1<<30, 1<<30, 1<<30, 1<<30, 1e-300, 1e300, 1.0, 1e-9, int64(-1))
	f.Fuzz(func(t *testing.T, w float64, n1, m1, n2, m2 int, t1, t2, thr, rt float64, sec int64) {
		p := testPolicy(func(p *Policy) { p.SaturationThreshold, p.RTMaxMs = thr, rt })
		a := NewAutoscaler(p)
		types := ts(
			TypeState{GPUType: "a", Running: n1, ThroughputRPS: t1, LatencyMs: 1, PriceUSDPerHour: 1, LaunchSeconds: 10, MaxAdditional: m1},
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

// TestScaleInHysteresis: 2 T4 (363 requests/s each), W = 260. Without one
// T4 the saturation would be 260/363 = 0.716: under the 0.8 threshold, so
// the paper's rule removes it; with a 0.1 hysteresis the bar is 0.7 and the
// instance stays. At W = 250 (0.689) both remove it.
func TestScaleInHysteresis(t *testing.T) {
	now := time.Unix(1000, 0)
	types := func() []TypeState {
		return []TypeState{{GPUType: "T4", Running: 2, ThroughputRPS: 363, LatencyMs: 22.41, PriceUSDPerHour: 0.526, LaunchSeconds: 20, MaxAdditional: 4}}
	}
	for _, c := range []struct {
		w          float64
		hysteresis float64
		want       ActionKind
	}{
		{260, 0, ActionScaleIn},
		{260, 0.1, ActionNone},
		{250, 0.1, ActionScaleIn},
	} {
		p := DefaultPolicy()
		p.ScaleInHysteresis = c.hysteresis
		a := NewAutoscaler(p)
		got := a.Decide(Observation{Now: now, ArrivalRate: c.w, Types: types()})
		if got.Kind != c.want {
			t.Errorf("W=%v hysteresis=%v: %s (%s), want %s", c.w, c.hysteresis, got.Kind, got.Reason, c.want)
		}
	}
	bad := DefaultPolicy()
	bad.ScaleInHysteresis = 0.9
	if bad.Validate() == nil {
		t.Error("hysteresis above the threshold should be rejected")
	}
}
