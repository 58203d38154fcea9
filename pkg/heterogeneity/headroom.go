package heterogeneity

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// Learned headroom: how far a service's own arrival rate rises before a
// scale-out decided now could serve, learned online from its per-minute
// history, and the scale-in it allows (Policy.DisableLearnedHeadroom turns
// it off).
//
// Why. The brakes of a scale-in (the cool-down after a scale-out and the
// stabilization window of burst.go, rule 2) keep capacity for the highest
// rate of the last 5 minutes, whatever the service: they are what keeps a
// bursty service from losing the requests of its next burst, and what a
// smooth service pays for without needing it (make evaluate, Twitter
// replay: without the cool-down hetsev-exact costs 3.5 % less at no extra
// missed requests; on the Azure code replay the same change misses 10,860
// requests beyond what its SLO allows). A service's history says which of
// the two it is.
//
// The rise. The horizon H is what a scale-in decided now takes to be
// undone: Policy.ScaleOutPeriod (the trigger's wait), the longest launch
// time O of the GPU types that pass the SLO check and one
// Policy.DecisionInterval, rounded up to m whole minutes. Over the complete
// minutes x_0..x_{n-1} of the per-minute history (seasonal.go: the highest
// W of each minute, the last 3 h), the rise at minute k is
// max(x_{k+1..k+m}) / x_k - 1 (0 when the rate does not rise; +Inf for a
// rise from a minute at zero: a burst from idle no headroom covers). The
// learned headroom h is the SL_min quantile of those rises (98 % by
// default), each weighted by the rate it rose to, max(x_{k+1..k+m}): the
// SLO counts requests, not minutes, and a burst in 1 % of the minutes can
// carry a third of the requests. In windows that carried SL_min of the
// service's requests, the rate stayed within W (1 + h) for a scale-out's
// time.
//
// The rule. With at least headroomMinRises rises and h finite, a scale-in
// whose stabilization window holds a peak above W (1 + h) plans for W (1 +
// h) instead: the cool-down after a scale-out and the stabilization are
// released, and the solver removes what leaves capacity for
// max(W_f, W (1 + h)) at the threshold. Where the window's peak is lower
// than that, the brakes already keep less and stay as they are: the rule
// only ever releases a brake, for a service whose history shows its
// rises are smaller than the brake's reserve. A bursty service (rises of
// several times its rate, or from zero) keeps its brakes; a short history
// keeps them and the decision's Reason says so.

// headroomMinRises is the fewest rises the headroom is learned from: half
// an hour of minutes, over which the SL_min quantile of 98 % is the
// highest rise seen (any fewer and one minute decides).
const headroomMinRises = 30

// headroom is the learned headroom for one decision.
type headroom struct {
	h       float64       // the SL_min quantile of the rises, a fraction of W; valid when ok
	ok      bool          // learned from enough rises and finite
	rises   int           // the rises it was learned from
	horizon time.Duration // H, rounded up to whole minutes
	note    string        // why there is none, for the decision's Reason
}

// learnedHeadroomOf is the learned headroom for obs (observed last) under
// p, read from the per-minute history h; the zero headroom (with no note)
// when p.DisableLearnedHeadroom.
func (h *seasonalHistory) learnedHeadroomOf(obs Observation, p Policy) headroom {
	if p.DisableLearnedHeadroom {
		return headroom{}
	}
	var launch float64
	for _, t := range obs.Types {
		if p.MeetsSLO(t) {
			launch = max(launch, t.LaunchSeconds)
		}
	}
	H := p.ScaleOutPeriod + time.Duration(launch*float64(time.Second)) + p.DecisionInterval
	m := max(1, int(math.Ceil(H.Minutes())))
	out := headroom{horizon: time.Duration(m) * time.Minute}
	rises := risesOver(h.complete(), m)
	out.rises = len(rises)
	if len(rises) < headroomMinRises {
		out.note = fmt.Sprintf("learned headroom: none, %d rises over %v in the history, %d needed: brakes held", len(rises), out.horizon, headroomMinRises)
		return out
	}
	out.h = weightedQuantile(rises, p.serviceLevel())
	if math.IsInf(out.h, 1) {
		out.note = fmt.Sprintf("learned headroom: none, the history's rises over %v include bursts from zero: brakes held", out.horizon)
		return out
	}
	out.ok = true
	return out
}

// rise is one minute's rise over the horizon after it, weighted by the
// rate it rose to (requests/s).
type rise struct {
	r, weight float64
}

// risesOver is the rise of each minute of x over the m minutes after it
// (see the rule above), weighted by the highest rate of those minutes;
// minutes without an observation are skipped.
func risesOver(x []float64, m int) []rise {
	var out []rise
	for k := 0; k+m < len(x); k++ {
		base := x[k]
		if math.IsNaN(base) {
			continue
		}
		peak, seen := 0.0, false
		for _, v := range x[k+1 : k+m+1] {
			if !math.IsNaN(v) {
				peak, seen = max(peak, v), true
			}
		}
		switch {
		case !seen:
		case base > 0:
			out = append(out, rise{max(0, peak/base-1), peak})
		case peak > 0:
			out = append(out, rise{math.Inf(1), peak})
		default:
			out = append(out, rise{0, 0})
		}
	}
	return out
}

// weightedQuantile is the q quantile of rises by weight: the smallest rise
// at or above which lies a share q of the total weight; 0 when no rise
// has weight (the rate was zero throughout). rises is sorted in place and
// not empty.
func weightedQuantile(rises []rise, q float64) float64 {
	slices.SortFunc(rises, func(a, b rise) int { return cmp.Compare(a.r, b.r) })
	var total float64
	for _, x := range rises {
		total += x.weight
	}
	if total <= 0 {
		return 0
	}
	var cum float64
	for _, x := range rises {
		cum += x.weight
		if cum >= q*total {
			return x.r
		}
	}
	return rises[len(rises)-1].r
}

// releases reports whether the learned headroom releases the brakes of a
// scale-in at the measured rate w with the stabilization window's peak:
// learned, and W (1 + h) below the peak.
func (hr headroom) releases(w, peak float64) bool {
	return hr.ok && w*(1+hr.h) < peak
}

// describe says the learned headroom for a decision's Reason.
func (hr headroom) describe(w float64) string {
	return fmt.Sprintf("learned headroom %.0f%% over %v (the %d-minute history's rises): %.4g requests/s planned for",
		100*hr.h, hr.horizon, hr.rises, w*(1+hr.h))
}
