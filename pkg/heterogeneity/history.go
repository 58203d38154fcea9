package heterogeneity

import (
	"math"
	"time"
)

// History is the arrival-rate history an Autoscaler's rules read (the
// launch-time forecast and the stabilized scale-in, burst.go; the seasonal
// forecast, seasonal.go), for callers that persist it across restarts so
// that a new controller decides as its predecessor would have.
type History struct {
	// Rates are the observed rates the rules can still read, oldest first
	// (History leaves out the others).
	Rates []RateSample
	// MinutesFrom is the start of the minute of MinutePeaks[0].
	MinutesFrom time.Time
	// MinutePeaks is the highest rate of each minute from MinutesFrom,
	// requests/s; NaN for a minute without an observation. Empty unless
	// Policy.SeasonalForecast is on.
	MinutePeaks []float64
}

// RateSample is one observed arrival rate.
type RateSample struct {
	At time.Time
	// W is the arrival rate, requests/s.
	W float64
	// LowerBound says W was only a lower bound (ArrivalRateIsLowerBound).
	LowerBound bool
}

// MaxHistoryRates is the most rates History returns: with decisions every
// second and a 300 s stabilization window on a rate that only falls, every
// rate of the window is still read; beyond this many the oldest go (the
// stabilization then reads a lower peak).
const MaxHistoryRates = 512

// History returns the rate history. Of the observed rates it keeps those
// the forecast reads (within Policy.ForecastSpan and one decision
// interval of the latest) and those that can still be the highest of the
// stabilization window: a rate that a later one at least as high follows
// is never the window's peak, since the later one stays in every window
// the earlier one is in. Restoring the result with SetHistory therefore
// gives the same decisions as the full history.
func (a *Autoscaler) History() History {
	var h History
	n := len(a.rates.samples)
	if n > 0 {
		last := a.rates.samples[n-1]
		span := a.Policy.forecastSpan() + a.Policy.DecisionInterval
		later := math.Inf(-1) // the highest rate after the one looked at
		for i := n - 1; i >= 0; i-- {
			s := a.rates.samples[i]
			if i == n-1 || last.at.Sub(s.at) <= span || s.w > later {
				h.Rates = append(h.Rates, RateSample{At: s.at, W: s.w, LowerBound: s.lowerBound})
			}
			later = max(later, s.w)
		}
		for i, j := 0, len(h.Rates)-1; i < j; i, j = i+1, j-1 {
			h.Rates[i], h.Rates[j] = h.Rates[j], h.Rates[i]
		}
		if len(h.Rates) > MaxHistoryRates {
			h.Rates = h.Rates[len(h.Rates)-MaxHistoryRates:]
		}
	}
	if a.Policy.SeasonalForecast && len(a.seasonal.minutes) > 0 {
		h.MinutesFrom = a.seasonal.origin
		h.MinutePeaks = append([]float64(nil), a.seasonal.minutes...)
	}
	return h
}

// SetHistory restores a history returned by History, replacing what the
// Autoscaler remembers. Rates out of time order are ignored, as are minute
// peaks without a start or beyond the seasonal history's length (the
// latest are kept).
func (a *Autoscaler) SetHistory(h History) {
	a.rates.samples = a.rates.samples[:0]
	for _, s := range h.Rates {
		if n := len(a.rates.samples); n > 0 && s.At.Before(a.rates.samples[n-1].at) {
			continue
		}
		a.rates.samples = append(a.rates.samples, rateSample{at: s.At, w: s.W, lowerBound: s.LowerBound})
	}
	a.seasonal.reset()
	if h.MinutesFrom.IsZero() || len(h.MinutePeaks) == 0 {
		return
	}
	peaks := h.MinutePeaks
	from := h.MinutesFrom.Truncate(time.Minute)
	if drop := len(peaks) - seasonalHistoryMinutes; drop > 0 {
		peaks = peaks[drop:]
		from = from.Add(time.Duration(drop) * time.Minute)
	}
	a.seasonal.origin = from
	a.seasonal.minutes = append(a.seasonal.minutes[:0], peaks...)
	// The latest observation: the last rate's time when it falls in the
	// minutes, else the start of the last minute.
	a.seasonal.last = from.Add(time.Duration(len(peaks)-1) * time.Minute)
	if n := len(a.rates.samples); n > 0 {
		if at := a.rates.samples[n-1].at; !at.Before(a.seasonal.last) && at.Before(a.seasonal.last.Add(time.Minute)) {
			a.seasonal.last = at
		}
	}
}
