package heterogeneity

import (
	"fmt"
	"math"
	"time"
)

// Seasonal forecast (Policy.SeasonalForecast, off by default): capacity for
// a burst that recurs on a schedule, before it starts.
//
// Why. Every rule of burst.go reacts to a rate it has measured: a service
// that jumps from near nothing to hundreds of requests/s at the start of a
// minute loses its first O_i seconds (the launch time) to any of them, the
// service's reactive ceiling (make evaluate, internal/sim/evaluate
// ceiling.go). Some of those jumps come from timers: in the Azure Functions
// trace one function bursts every 30 minutes. A service whose own history
// shows such a period can be provisioned for the burst O_i ahead of it.
//
// What the Autoscaler keeps: the highest arrival rate W it observed in
// each wall-clock minute, for the last seasonalHistoryMinutes minutes (3 h;
// older minutes are forgotten, a clock that goes back or a gap longer than
// the history starts it anew). It learns online from its own observations
// only: an autoscaler created anew starts without it.
//
// The period. Over the complete minutes x_0..x_{n-1} of that history, the
// correlation r(L) of the pairs (x_k, x_{k-L}) is computed for every lag L
// of 1 to 60 minutes with at least seasonalMinPairs pairs. A candidate
// period P of seasonalMinPeriod to seasonalMaxPeriod whole minutes (5 to
// 60) with n >= 2P is detected when
//
//   - r(P) >= seasonalMinCorrelation (0.7): the minutes one period apart
//     rise and fall together, and
//   - r(P) exceeds the lowest r(L) at the shorter lags L < P by at least
//     seasonalMinContrast (0.5): between two recurrences the series
//     differs from itself. A trend or a slowly drifting rate, which is
//     alike at every lag, is no period; random noise, alike at none, is
//     no period either.
//
// Of the detected candidates the one with the highest r(P) is the period;
// a shorter one within 0.05 of it is preferred (the fundamental, not a
// multiple of it).
//
// The forecast. With a period P, the seasonal forecast for the decision
// at now is, of the two periods before, the higher of the highest
// per-minute W in the minutes of [now - jP, now - jP + O + I) (j = 1, 2;
// O: the longest launch time of the GPU types that pass the SLO check, as
// in rule 1; I: Policy.DecisionInterval, the time to the next decision):
// the rate the service had at this phase, in the time a scale-out now or
// at the next decision would serve, in either of its last two periods.
// The higher of the two, because a timer's bursts differ in height from
// one period to the next and the SLO counts the requests of the higher
// ones: provisioning for the lower loses the first launch time of every
// burst above it, while the capacity held for the higher costs only the
// O + I before the phase (a burst that does not come is scaled in as
// usual). A one-off burst does not make a period (the correlation over
// the whole history decides that), so it is repeated only where the
// service bursts on a schedule anyway (docs/evaluation.md has the
// replays' figures for both). The trigger
// and the amount of a scale-out use max(W_f, seasonal forecast), and so
// does the scale-in: the forecast never lowers W_f and can only hold
// capacity, never remove it.

// Bounds of the seasonal forecast, in minutes.
const (
	seasonalHistoryMinutes = 180 // the most minutes of history kept
	seasonalMinPeriod      = 5   // the shortest candidate period
	seasonalMaxPeriod      = 60  // the longest candidate period
	seasonalMinPairs       = 20  // the fewest minute pairs a lag's correlation is computed on
)

// Detection thresholds (see above).
const (
	seasonalMinCorrelation = 0.7
	seasonalMinContrast    = 0.5
	seasonalPreferShorter  = 0.05
)

// seasonalHistory is the Autoscaler's per-minute history of the arrival
// rate for the seasonal forecast, with its last period detection.
type seasonalHistory struct {
	origin  time.Time // start of the minute of minutes[0]
	minutes []float64 // highest W per minute, requests/s; NaN: no observation in that minute
	last    time.Time // the latest observation

	// The detection over the complete minutes, cached for the history of
	// detectedOrigin and detectedN complete minutes (a complete minute does
	// not change).
	detectedOrigin time.Time
	detectedN      int
	detected       period
}

// period is the outcome of a period detection.
type period struct {
	minutes int     // P; 0: none detected
	r       float64 // r(P); for none, the best r of the candidates (NaN: none computed)
	bestLag int     // for none, the candidate lag of r (0: none)
}

// observe records the rate w observed at now.
func (h *seasonalHistory) observe(now time.Time, w float64) {
	if !h.last.IsZero() && now.Before(h.last) {
		h.reset() // the clock went back: the minutes no longer line up
	}
	h.last = now
	if len(h.minutes) == 0 {
		h.origin = now.Truncate(time.Minute)
	}
	k := int(now.Sub(h.origin) / time.Minute)
	if k >= len(h.minutes)+seasonalHistoryMinutes {
		// A gap longer than the history: nothing of it would be kept.
		h.minutes = h.minutes[:0]
		h.origin = now.Truncate(time.Minute)
		k = 0
	}
	for len(h.minutes) <= k {
		h.minutes = append(h.minutes, math.NaN())
	}
	if m := h.minutes[k]; math.IsNaN(m) || w > m {
		h.minutes[k] = w
	}
	if drop := len(h.minutes) - seasonalHistoryMinutes; drop > 0 {
		n := copy(h.minutes, h.minutes[drop:])
		h.minutes = h.minutes[:n]
		h.origin = h.origin.Add(time.Duration(drop) * time.Minute)
	}
}

// reset forgets the history.
func (h *seasonalHistory) reset() {
	*h = seasonalHistory{minutes: h.minutes[:0]}
}

// complete is the history's complete minutes: all but the current one.
func (h *seasonalHistory) complete() []float64 {
	if len(h.minutes) == 0 {
		return nil
	}
	return h.minutes[:len(h.minutes)-1]
}

// detect returns the period of the complete minutes (see the rule above).
func (h *seasonalHistory) detect() period {
	x := h.complete()
	if len(x) == h.detectedN && h.origin.Equal(h.detectedOrigin) {
		return h.detected
	}
	h.detectedOrigin, h.detectedN = h.origin, len(x)
	h.detected = detectPeriod(x)
	return h.detected
}

// detectPeriod is the period detection over the per-minute series x.
func detectPeriod(x []float64) period {
	n := len(x)
	maxLag := min(seasonalMaxPeriod, n/2)
	r := make([]float64, maxLag+1) // r[L], NaN where not computed
	for L := range r {
		r[L] = math.NaN()
		if L > 0 {
			r[L] = lagCorrelation(x, L)
		}
	}
	// The candidates that pass both tests, and the best r among them.
	var passing []int
	bestR := math.Inf(-1)
	none := period{r: math.NaN()} // the best candidate when none passes
	lowest := math.Inf(1)         // the lowest r(L) over the lags below L
	for L := 1; L <= maxLag; L++ {
		if L >= seasonalMinPeriod && !math.IsNaN(r[L]) {
			if r[L] >= seasonalMinCorrelation && r[L]-lowest >= seasonalMinContrast {
				passing = append(passing, L)
				bestR = max(bestR, r[L])
			}
			if math.IsNaN(none.r) || r[L] > none.r {
				none = period{r: r[L], bestLag: L}
			}
		}
		if !math.IsNaN(r[L]) {
			lowest = min(lowest, r[L])
		}
	}
	for _, L := range passing { // shortest first
		if r[L] >= bestR-seasonalPreferShorter {
			return period{minutes: L, r: r[L]}
		}
	}
	return none
}

// lagCorrelation is the correlation of the pairs (x[k], x[k-lag]) with
// both values known; NaN with fewer than seasonalMinPairs of them or when
// either side does not vary.
func lagCorrelation(x []float64, lag int) float64 {
	var n, sa, sb float64
	for k := lag; k < len(x); k++ {
		if a, b := x[k], x[k-lag]; !math.IsNaN(a) && !math.IsNaN(b) {
			n++
			sa += a
			sb += b
		}
	}
	if n < seasonalMinPairs {
		return math.NaN()
	}
	ma, mb := sa/n, sb/n
	var cov, va, vb float64
	for k := lag; k < len(x); k++ {
		if a, b := x[k], x[k-lag]; !math.IsNaN(a) && !math.IsNaN(b) {
			cov += (a - ma) * (b - mb)
			va += (a - ma) * (a - ma)
			vb += (b - mb) * (b - mb)
		}
	}
	// A side that varies by less than a millionth of its mean is constant
	// up to rounding.
	if va <= 1e-12*n*ma*ma || vb <= 1e-12*n*mb*mb || va == 0 || vb == 0 {
		return math.NaN()
	}
	return cov / math.Sqrt(va*vb)
}

// peakIn is the highest per-minute W in the minutes of [from, to), false
// when the history has none of them or no observation in them. Minutes
// after the current one are not known and not looked at.
func (h *seasonalHistory) peakIn(from, to time.Time) (float64, bool) {
	if len(h.minutes) == 0 || !to.After(from) {
		return 0, false
	}
	k0 := max(0, int(math.Floor(float64(from.Sub(h.origin))/float64(time.Minute))))
	// to is excluded: the minute of the last nanosecond before it.
	k1 := min(len(h.minutes)-1, int(math.Floor(float64(to.Sub(h.origin)-1)/float64(time.Minute))))
	m, ok := 0.0, false
	for k := k0; k <= k1; k++ {
		if v := h.minutes[k]; !math.IsNaN(v) && (!ok || v > m) {
			m, ok = v, true
		}
	}
	return m, ok
}

// seasonal is a seasonal forecast for one decision.
type seasonal struct {
	w       float64       // requests/s expected within horizon; valid when period > 0
	period  int           // P, minutes; 0: no forecast
	horizon time.Duration // O + I
	note    string        // for the decision's Reason
}

// seasonalForecastOf is the seasonal forecast for obs (observed last)
// under p, with the reason when there is none. It is computed only when
// p.SeasonalForecast is set (the zero seasonal otherwise).
func (h *seasonalHistory) seasonalForecastOf(obs Observation, p Policy) seasonal {
	if !p.SeasonalForecast {
		return seasonal{}
	}
	n := len(h.complete())
	if n < 2*seasonalMinPeriod {
		return seasonal{note: fmt.Sprintf("seasonal forecast: none, history %dm shorter than two periods of the shortest candidate (%dm)", n, seasonalMinPeriod)}
	}
	per := h.detect()
	if per.minutes == 0 {
		longest := min(seasonalMaxPeriod, n/2)
		best := ""
		if per.bestLag > 0 {
			best = fmt.Sprintf("; best lag %dm, correlation %.2f", per.bestLag, per.r)
		}
		more := ""
		if longest < seasonalMaxPeriod {
			more = fmt.Sprintf(" (periods up to %dm need a history of %dm)", seasonalMaxPeriod, 2*seasonalMaxPeriod)
		}
		return seasonal{note: fmt.Sprintf("seasonal forecast: none, no period of %dm to %dm recurs in the history of %dm%s%s",
			seasonalMinPeriod, longest, n, more, best)}
	}
	var launch float64
	for _, t := range obs.Types {
		if p.MeetsSLO(t) {
			launch = max(launch, t.LaunchSeconds)
		}
	}
	s := seasonal{period: per.minutes, horizon: time.Duration(launch*float64(time.Second)) + p.DecisionInterval}
	P := time.Duration(per.minutes) * time.Minute
	w := 0.0
	for j := 1; j <= 2; j++ {
		from := obs.Now.Add(-time.Duration(j) * P)
		m, ok := h.peakIn(from, from.Add(max(s.horizon, time.Nanosecond)))
		if !ok {
			return seasonal{note: fmt.Sprintf("seasonal forecast: none, period %dm (correlation %.2f) but no observation at this phase %d period(s) ago", per.minutes, per.r, j)}
		}
		w = max(w, m)
	}
	s.w = w
	s.note = fmt.Sprintf("seasonal: period %dm (correlation %.2f), %.4g requests/s expected within %v", per.minutes, per.r, w, s.horizon)
	return s
}

// raise is f with the seasonal forecast s applied: W_f becomes s.w when
// that is higher (then as a flat forecast, not a rise), and raised says
// so; f as it is otherwise.
func (s seasonal) raise(f forecast) (_ forecast, raised bool) {
	if s.period > 0 && s.w > f.w {
		return forecast{w: s.w, horizon: s.horizon}, true
	}
	return f, false
}

// annotate adds s's note to act's Reason: first when s raised W_f (it is
// why), last otherwise; act as it is when s has none (the policy does not
// ask for it).
func (s seasonal) annotate(act Action, raised bool) Action {
	switch {
	case s.note == "":
	case raised:
		act.Reason = s.note + "; " + act.Reason
	default:
		act.Reason += "; " + s.note
	}
	return act
}

// RecordRate records the arrival rate w, requests/s, observed at t into
// the history of the seasonal forecast only (no other rule sees it): for a
// caller that knows the service's rates from before this Autoscaler
// existed (a metrics backend's range query, a replay's history) and
// records them, oldest first, before its first decision. A rate that is
// not a finite number >= 0 is ignored; a time before the latest one
// recorded starts the history anew, as in Propose.
func (a *Autoscaler) RecordRate(t time.Time, w float64) {
	if a == nil || !(w >= 0) || math.IsInf(w, 0) {
		return
	}
	a.seasonal.observe(t, w)
}
