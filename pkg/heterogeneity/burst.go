package heterogeneity

import (
	"fmt"
	"time"
)

// Bursts: what the Autoscaler remembers of the arrival rate, and the two
// rules it derives from it. Each can be turned off for an ablation
// (Policy.DisableForecast, Policy.DisableStabilizedScaleIn); both are on by
// default.
//
// Why. HetSev 4.1 decides on the arrival rate W measured now, and a new
// instance serves only O_i (Observation.Types[i].LaunchSeconds) later. On a
// bursty trace that loses requests twice (make evaluate, the Azure LLM
// code trace for BERT-large on T4: O_i = 40 s, T_i = 69.3 requests/s,
// decisions every 15 s on a 30 s rate window; 11,399 of 321,345 requests,
// all rejected by the servers' deadline-aware queues, none slow):
//
//   - scale-out covers the load of the past, not of the time the instances
//     are ready: at t = 240 s the measured W was 84 requests/s and one
//     instance was added; by the time it served (280 s) the rate was
//     186 requests/s. Each later decision again added one instance for the
//     W of its moment: 5,602 requests lost in that burst alone;
//   - the exact solver's scale-in removes every instance the current W does
//     not need at once: at t = 1065 s, 15 s into a lull (W 39 requests/s
//     over the last 30 s), it went from 5 instances to 1, and the load was
//     back at 130 requests/s within 75 s (2,679 lost); at t = 2190 s the
//     same with -2 (2,193 lost).
//
// The two rules:
//
//  1. Launch-time forecast (scale-out). The trigger and the amount of a
//     scale-out use W_f = W + g * O instead of W, where g is the rise of W
//     per second since the previous observation (0 when W did not rise, or
//     when either value is only a lower bound; "previous": the latest at
//     least half a Policy.DecisionInterval old) and O the longest launch time
//     of the GPU types that pass the SLO check: a linear extrapolation of W
//     to the moment new instances serve. Monitored autoscalers that provision
//     on a predicted rate so that capacity is ready when the load is (Swayam,
//     Middleware 2017, and MArk/Zhang et al., IEEE TCC 2020: HetSev's refs
//     [5] and [6]) motivate it; HetSev 2 rejects prediction as expensive,
//     which a two-point slope is not. A falling W is never extrapolated: the
//     rule only brings scale-outs forward.
//  2. Stabilized scale-in. Of the instances the solver would remove on the
//     current rate (W_f), one scale-in removes only those its removal at the
//     highest W of the last Policy.ScaleInStabilization (0: the
//     ScaleInCoolDown) also takes (per type, the smaller of the two
//     removals), the rule of the Kubernetes HPA's
//     scale-down stabilization window
//     (behavior.scaleDown.stabilizationWindowSeconds, default 300 s, the
//     default of ScaleInCoolDown for that reason). When the peak allows
//     none of them, one instance of the most expensive type among them
//     goes: below the peak the service scales in one instance per
//     Policy.ScaleInInterval, the pace of HetSev 4.1's scaling-in algorithm
//     ("whether the incoming inference workload can be accommodated by
//     removing a running instance"). Every removal is part of the one the
//     unstabilized decision would make, so the service heads for the same
//     mix of types (removing, say, T4s because the peak still needs
//     capacity, and then being left with a V100 the remaining T4s cannot
//     replace, would be a detour no unstabilized decision takes). The
//     heuristic solver, which removes one instance at a time anyway,
//     behaves exactly as before; the exact solver keeps its multi-instance
//     scale-in for load that has stayed low for a whole window.
//
// With both, the Azure trace loses 597 requests (99.81 % within RT_max) for
// both solvers, at 34 % more GPU cost (1.71 -> 2.30 USD); the Twitter trace,
// already within its SLO, costs 4.5 % (exact) and 1.6 % (heuristic) more.
//
// The history lives in memory, as the HPA keeps its recommendations: an
// autoscaler created anew (a new hetsev-scaler leader) starts without it,
// so its first scale-ins are as unstabilized as before the rule.

// rateSample is one observation's arrival rate.
type rateSample struct {
	at         time.Time
	w          float64 // requests/s
	lowerBound bool    // w is only a lower bound of W
}

// rates is the Autoscaler's memory of the arrival rate: the observations
// of the last max(stabilization window, Policy.DecisionInterval), oldest
// first, the current one last.
type rates struct {
	samples []rateSample
}

// observe records obs and forgets the samples older than keep; samples
// after obs.Now (a clock that went back) are forgotten too.
func (r *rates) observe(obs Observation, keep time.Duration) {
	kept := r.samples[:0]
	for _, s := range r.samples {
		if age := obs.Now.Sub(s.at); age >= 0 && age < keep {
			kept = append(kept, s)
		}
	}
	r.samples = append(kept, rateSample{at: obs.Now, w: obs.ArrivalRate, lowerBound: obs.ArrivalRateIsLowerBound})
}

// forecast is the launch-time forecast of rule 1 for the observation last
// recorded.
type forecast struct {
	w       float64       // W_f, requests/s; the measured W when not rising
	rise    float64       // g, requests/s per second; 0 when not rising
	horizon time.Duration // O
}

// rising reports whether the forecast exceeds the measured rate.
func (f forecast) rising() bool { return f.rise > 0 && f.horizon > 0 }

// describe describes a rising forecast for a decision's Reason, e.g. "W
// 84.3 requests/s rising 3.01/s: 204.8 requests/s forecast in 40s".
func (f forecast) describe(w float64) string {
	return fmt.Sprintf("W %.4g requests/s rising %.3g/s: %.4g requests/s forecast in %v", w, f.rise, f.w, f.horizon)
}

// forecastOf is rule 1 for obs (recorded last) under p: W + g * O, with g
// the rise per second since the latest earlier observation at least half
// of p.DecisionInterval old (the previous regular decision; an extra one
// soon after it, for a spec edit or a retry, would extrapolate a rise
// measured over seconds).
func (r *rates) forecastOf(obs Observation, p Policy) forecast {
	f := forecast{w: obs.ArrivalRate}
	n := len(r.samples)
	if n < 2 || p.DisableForecast {
		return f
	}
	cur := r.samples[n-1]
	var ref rateSample
	for k := n - 2; k >= 0; k-- {
		if cur.at.Sub(r.samples[k].at) >= p.DecisionInterval/2 {
			ref = r.samples[k]
			break
		}
	}
	dt := cur.at.Sub(ref.at).Seconds()
	if ref.at.IsZero() || dt <= 0 || ref.lowerBound || cur.lowerBound || !(cur.w > ref.w) {
		return f
	}
	var launch float64
	for _, t := range obs.Types {
		if p.MeetsSLO(t) {
			launch = max(launch, t.LaunchSeconds)
		}
	}
	f.rise = (cur.w - ref.w) / dt
	f.horizon = time.Duration(launch * float64(time.Second))
	f.w = obs.ArrivalRate + f.rise*launch
	return f
}

// peak is the highest arrival rate observed within window of the last
// observation (that one included), in requests/s: the load rule 2 keeps
// capacity for.
func (r *rates) peak(window time.Duration) float64 {
	n := len(r.samples)
	if n == 0 {
		return 0
	}
	last := r.samples[n-1]
	m := last.w
	for _, s := range r.samples[:n-1] {
		if last.at.Sub(s.at) < window {
			m = max(m, s.w)
		}
	}
	return m
}

// stabilize is rule 2 for a scale-in: of now, the removal solver chose for
// req (the current rate), what its removal at peak (the highest W of the
// last window) also takes, per type the smaller removal; when that is
// nothing, one instance of the most expensive type now removes (ties: the
// lower throughput). Both keep the load of req within the bar: each removes
// part of now.
func stabilize(solver Solver, req Request, now Amount, peak float64, window time.Duration) Amount {
	p, types := req.Policy, req.Observation.Types
	atPeak := req
	atPeak.Observation.ArrivalRate = peak
	pk := solver.ScaleIn(atPeak).Delta
	x := make([]int, len(types))
	for i := range x {
		if i < len(now.Delta) && i < len(pk) {
			x[i] = max(now.Delta[i], pk[i]) // both <= 0: the smaller removal
		}
	}
	how := fmt.Sprintf("of which %.4g requests/s, the highest W of the last %v, allows", peak, window)
	if isZero(x) {
		best := -1
		for i, d := range now.Delta {
			if d < 0 && (best < 0 || types[i].PriceUSDPerHour > types[best].PriceUSDPerHour ||
				(types[i].PriceUSDPerHour == types[best].PriceUSDPerHour && types[i].ThroughputRPS < types[best].ThroughputRPS)) {
				best = i
			}
		}
		x[best] = -1 // now removes something: best >= 0
		how = fmt.Sprintf("of which %.4g requests/s, the highest W of the last %v, allows none: one instance at a time,", peak, window)
	}
	w := req.Observation.ArrivalRate
	return Amount{Delta: x, Reason: fmt.Sprintf("%s; on the current rate the solver removes %s, %s %s (objective %.2f USD/h), %.2f after the action; solver %s",
		req.Reason, formatDelta(types, now.Delta), how, formatDelta(types, x), objective(types, x, p.Lambda), saturationAt(w, Capacity(types, x)), solver.Name())}
}
