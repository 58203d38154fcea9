package scaler

import (
	"math"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
)

// rateHistory is h as status.rateHistory keeps it: rates as decimal
// strings to 1/1000 request/s (never an exponent, which the API's pattern
// refuses), minute peaks comma-separated with an empty field for a minute
// without an observation. nil when h is empty.
func rateHistory(h heterogeneity.History) *v1alpha1.RateHistory {
	if len(h.Rates) == 0 && len(h.MinutePeaks) == 0 {
		return nil
	}
	out := &v1alpha1.RateHistory{}
	for _, s := range h.Rates {
		out.Rates = append(out.Rates, v1alpha1.RateSample{Time: metav1.NewMicroTime(s.At), RPS: decimal(s.W), LowerBound: s.LowerBound})
	}
	if len(h.MinutePeaks) > 0 {
		from := metav1.NewTime(h.MinutesFrom)
		out.MinutesFrom = &from
		fields := make([]string, len(h.MinutePeaks))
		for i, w := range h.MinutePeaks {
			if !math.IsNaN(w) {
				fields[i] = decimal(w)
			}
		}
		out.MinutePeaks = strings.Join(fields, ",")
	}
	return out
}

// historyOf reads status.rateHistory back; a rate or minute peak that does
// not parse is skipped (a rate) or read as a minute without an observation
// (a peak), so a damaged history costs only what it lost.
func historyOf(rh *v1alpha1.RateHistory) heterogeneity.History {
	var h heterogeneity.History
	if rh == nil {
		return h
	}
	for _, s := range rh.Rates {
		w, err := strconv.ParseFloat(s.RPS, 64)
		if err != nil || math.IsNaN(w) || w < 0 {
			continue
		}
		h.Rates = append(h.Rates, heterogeneity.RateSample{At: s.Time.Time, W: w, LowerBound: s.LowerBound})
	}
	if rh.MinutesFrom != nil && rh.MinutePeaks != "" {
		h.MinutesFrom = rh.MinutesFrom.Time
		for _, f := range strings.Split(rh.MinutePeaks, ",") {
			w, err := strconv.ParseFloat(f, 64)
			if err != nil || w < 0 {
				w = math.NaN()
			}
			h.MinutePeaks = append(h.MinutePeaks, w)
		}
	}
	return h
}

// decimal formats a non-negative rate as the API's decimal string:
// fixed-point to 1/1000, trailing zeros dropped.
func decimal(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		v = 0
	}
	s := strconv.FormatFloat(v, 'f', 3, 64)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}
