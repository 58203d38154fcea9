package scrape

import (
	"math"
	"time"
)

// point is one sample: a time in the samples' clock and a value.
type point struct {
	t time.Time
	v float64
}

// counterIncrease is the increase of a counter from prev to cur, handling a
// reset (cur < prev) as Prometheus' rate() does: the counter restarted from
// zero, so the increase is cur.
func counterIncrease(prev, cur float64) float64 {
	if cur < prev {
		return cur
	}
	return cur - prev
}

// windowRate returns the per-second rate of a reset-corrected, monotonic
// running total over pts (sorted by time, already limited to the window):
// (last - first) / (t_last - t_first). It needs two samples at different
// times. Unlike Prometheus' rate() it does not extrapolate to the window's
// edges; for a window covered by samples both agree.
func windowRate(pts []point) (float64, bool) {
	if len(pts) < 2 {
		return 0, false
	}
	first, last := pts[0], pts[len(pts)-1]
	dt := last.t.Sub(first.t).Seconds()
	if dt <= 0 {
		return 0, false
	}
	r := (last.v - first.v) / dt
	if math.IsNaN(r) || math.IsInf(r, 0) || r < 0 {
		return 0, false
	}
	return r, true
}
