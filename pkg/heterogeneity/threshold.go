package heterogeneity

import "math"

// Bounds of the saturation thresholds ModelThreshold derives, and the step
// of its search. Below MinModelThreshold an instance carries too little
// load for a threshold to be a useful plan (the type is better left to the
// SLO check); at 1 the latency model's queue grows without bound.
const (
	MinModelThreshold  = 0.3
	MaxModelThreshold  = 0.99
	modelThresholdStep = 0.01
)

// ModelThreshold returns the highest saturation threshold θ, a multiple of
// 0.01 in [MinModelThreshold, MaxModelThreshold], at which one instance of
// t loaded θ·T_i requests/s answers SL_min of its requests within RT_max
// by the latency model (LatencyModelOf: a dynamic batcher's queueing and
// t.LatencyInflation, the same model as the SLOCheckModel check of
// constraint (4), HetSev 4.1). It returns 0 when the instance misses the
// SLO even at MinModelThreshold, or when p or t is unusable.
//
// The latency percentile grows with the load, so the search walks down
// from MaxModelThreshold and stops at the first θ that meets RT_max.
func ModelThreshold(p Policy, t TypeState) float64 {
	if !(t.ThroughputRPS > 0) || !(p.RTMaxMs > 0) {
		return 0
	}
	m := LatencyModelOf(t)
	q := p.serviceLevel()
	for i := int(math.Round(MaxModelThreshold / modelThresholdStep)); i >= int(math.Round(MinModelThreshold/modelThresholdStep)); i-- {
		th := math.Round(float64(i)*modelThresholdStep*100) / 100
		if m.Percentile(q, th*t.ThroughputRPS) <= p.RTMaxMs {
			return th
		}
	}
	return 0
}

// ServiceModelThreshold is the saturation threshold of a service whose
// GPU types are types: the least ModelThreshold over the types that meet
// the SLO at some threshold, since the policy has one threshold and each
// type's instances must meet the SLO at it (a type that meets it at none
// is left to the SLO check, which keeps new instances off it). It
// returns 0 when no type has a threshold.
func ServiceModelThreshold(p Policy, types []TypeState) float64 {
	out := 0.0
	for _, t := range types {
		if th := ModelThreshold(p, t); th > 0 && (out == 0 || th < out) {
			out = th
		}
	}
	return out
}
