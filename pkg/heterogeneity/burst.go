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
//  1. Launch-time forecast (scale-out). W_f = W + g * O, where g is the
//     slope of a least-squares line through the rates observed over the
//     last Policy.ForecastSpan (default 15 s) and one decision interval
//     (none when they span less than ForecastSpan, when any is only a
//     lower bound, or when the slope is not positive) and O the longest launch time of the GPU
//     types that pass the SLO check: a linear extrapolation of W to the
//     moment new instances serve. The saturation threshold already leaves
//     room for a rise during a launch (it provisions W / threshold), so
//     the forecast counts only when W_f exceeds that headroom; the
//     triggers and solvers then use threshold * W_f, which provisions W_f
//     at saturation 1 rather than the threshold's margin on top of the
//     forecast's. Monitored autoscalers that provision on a predicted rate
//     so that capacity is ready when the load is (Swayam, Middleware 2017,
//     and MArk/Zhang et al., IEEE TCC 2020: HetSev's refs [5] and [6])
//     motivate it; HetSev 2 rejects prediction as expensive, which a
//     regression over a minute of rates is not. A falling W is never
//     extrapolated: the rule only brings scale-outs forward. Two points
//     15 s apart are not a trend on traces that move in steps (the Azure
//     Functions replay's per-minute counts): a step would be extrapolated
//     over the whole launch time.
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
// An autoscaler created anew starts without the history unless its caller
// restores one (Autoscaler.SetHistory; hetsev-scaler keeps it in the
// ModelService's status for a new leader).

// rateSample is one observation's arrival rate.
type rateSample struct {
	at         time.Time
	w          float64 // requests/s
	lowerBound bool    // w is only a lower bound of W
}

// rates is the Autoscaler's memory of the arrival rate: the observations
// of the last max(stabilization window, Policy.ForecastSpan +
// Policy.DecisionInterval), oldest first, the current one last.
type rates struct {
	samples []rateSample
}

// observe records obs and forgets the samples more than keep old; samples
// after obs.Now (a clock that went back) are forgotten too.
func (r *rates) observe(obs Observation, keep time.Duration) {
	kept := r.samples[:0]
	for _, s := range r.samples {
		if age := obs.Now.Sub(s.at); age >= 0 && age <= keep {
			kept = append(kept, s)
		}
	}
	r.samples = append(kept, rateSample{at: obs.Now, w: obs.ArrivalRate, lowerBound: obs.ArrivalRateIsLowerBound})
}

// DefaultForecastSpan is the least time the regression of rule 1 spans
// by default (Policy.ForecastSpan); with decisions every 5 s
// (hetsev-scaler's default interval) it fits the five latest rates, every
// 15 s the three latest. A longer span does not take a step of a trace
// for a trend, but reacts too late to a burst: on the Azure code replay
// of make evaluate (BERT-large, near idle to 150-300 requests/s within a
// minute, 40 s launch, decisions every 15 s) a 60 s span serves 97.76 % of requests within RT_max, 15 s
// 99.34 %, against an SL_min of 98 %.
const DefaultForecastSpan = 15 * time.Second

// forecast is the launch-time forecast of rule 1 for the observation last
// recorded.
type forecast struct {
	w        float64       // the rate the triggers and solvers use, requests/s: max(W, threshold x at)
	at       float64       // W_f = W + g * O, requests/s; W when not rising
	rise     float64       // g, requests/s per second; 0 when not rising
	span     time.Duration // the time the regression of g spans
	horizon  time.Duration // O
	headroom float64       // W / threshold, requests/s: what the threshold provisions for
}

// rising reports whether the forecast exceeds the threshold's headroom, so
// that it, not the measured rate, decides.
func (f forecast) rising() bool { return f.at > f.headroom && f.horizon > 0 }

// describe describes a rising forecast for a decision's Reason, e.g. "W
// 102.3 requests/s rising 1/s over 1m0s: 142.3 requests/s forecast in 40s,
// beyond the threshold's headroom 127.9".
func (f forecast) describe(w float64) string {
	return fmt.Sprintf("W %.4g requests/s rising %.3g/s over %v: %.4g requests/s forecast in %v, beyond the threshold's headroom %.4g",
		w, f.rise, f.span, f.at, f.horizon, f.headroom)
}

// forecastOf is rule 1 for obs (recorded last) under p. g is the slope of
// a least-squares line through the rates of the last p.ForecastSpan +
// p.DecisionInterval (the current one included), when they span at least
// p.ForecastSpan, none is a lower bound and the slope is positive; W_f =
// W + g * O. The threshold already provisions W / threshold, room for a
// rise of W (1/threshold - 1) during a launch, so the forecast decides only
// when W_f exceeds that headroom: the triggers and solvers then use
// threshold * W_f, which provisions W_f at saturation 1 (one margin, not
// the threshold's on top of the forecast's).
func (r *rates) forecastOf(obs Observation, p Policy) forecast {
	f := forecast{w: obs.ArrivalRate, at: obs.ArrivalRate, headroom: obs.ArrivalRate / p.SaturationThreshold}
	n := len(r.samples)
	if n < 2 || p.DisableForecast {
		return f
	}
	cur, span := r.samples[n-1], p.forecastSpan()
	var pts []rateSample
	for _, s := range r.samples {
		if cur.at.Sub(s.at) <= span+p.DecisionInterval {
			if s.lowerBound {
				return f // a rise to or from a lower bound may be coverage, not load
			}
			pts = append(pts, s)
		}
	}
	if len(pts) < 2 || cur.at.Sub(pts[0].at) < span {
		return f
	}
	g := slope(pts)
	if !(g > 0) {
		return f
	}
	var launch float64
	for _, t := range obs.Types {
		if p.MeetsSLO(t) {
			launch = max(launch, t.LaunchSeconds)
		}
	}
	f.rise, f.span = g, cur.at.Sub(pts[0].at)
	f.horizon = time.Duration(launch * float64(time.Second))
	f.at = obs.ArrivalRate + g*launch
	if f.rising() {
		f.w = p.SaturationThreshold * f.at
	}
	return f
}

// slope is the least-squares slope of the rates in pts over their times,
// in requests/s per second; 0 when the times do not differ.
func slope(pts []rateSample) float64 {
	t0 := pts[0].at
	var mx, my float64
	for _, s := range pts {
		mx += s.at.Sub(t0).Seconds()
		my += s.w
	}
	k := float64(len(pts))
	mx, my = mx/k, my/k
	var sxy, sxx float64
	for _, s := range pts {
		dx := s.at.Sub(t0).Seconds() - mx
		sxy += dx * (s.w - my)
		sxx += dx * dx
	}
	if sxx == 0 {
		return 0
	}
	return sxy / sxx
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
