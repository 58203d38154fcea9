package heterogeneity

import (
	"math"
	"testing"
)

// TestModelThresholdIsTheHighestThatMeetsTheSLO: the threshold meets
// RT_max at SL_min by the latency model and the next step up does not; a
// tighter RT_max gives a lower threshold; a type that misses at every
// threshold gets 0 and the service takes the least threshold of the
// types that have one.
func TestModelThresholdIsTheHighestThatMeetsTheSLO(t *testing.T) {
	p := DefaultPolicy()
	p.RTMaxMs = 400
	t4 := TypeState{GPUType: "T4", ThroughputRPS: 363, LatencyMs: 22.41, BatchSize: 8, LatencyInflation: 1}
	th := ModelThreshold(p, t4)
	if !(th >= MinModelThreshold && th < MaxModelThreshold) {
		t.Fatalf("threshold %v, want one in [%v, %v)", th, MinModelThreshold, MaxModelThreshold)
	}
	m := LatencyModelOf(t4)
	if got := m.Percentile(0.98, th*t4.ThroughputRPS); !(got <= p.RTMaxMs) {
		t.Errorf("at threshold %v the p98 is %.1f ms, over RT_max %v", th, got, p.RTMaxMs)
	}
	if got := m.Percentile(0.98, (th+0.01)*t4.ThroughputRPS); got <= p.RTMaxMs {
		t.Errorf("at threshold %v the p98 is %.1f ms, within RT_max %v: %v is not the highest", th+0.01, got, p.RTMaxMs, th)
	}
	tight := p
	tight.RTMaxMs = m.Percentile(0.98, 0.6*t4.ThroughputRPS)
	if got := ModelThreshold(tight, t4); !(got < th && got >= 0.59) {
		t.Errorf("RT_max %.1f ms: threshold %v, want about 0.6, below %v", tight.RTMaxMs, got, th)
	}
	slow := TypeState{GPUType: "slow", ThroughputRPS: 10, LatencyMs: 500, BatchSize: 8, LatencyInflation: 1}
	if got := ModelThreshold(p, slow); got != 0 {
		t.Errorf("a type whose batch alone exceeds RT_max: threshold %v, want 0", got)
	}
	v100 := TypeState{GPUType: "V100", ThroughputRPS: 709, LatencyMs: 11.5, BatchSize: 8, LatencyInflation: 1}
	want := math.Min(th, ModelThreshold(p, v100))
	if got := ServiceModelThreshold(p, []TypeState{slow, t4, v100}); got != want {
		t.Errorf("service threshold %v, want the least of the types that meet the SLO, %v", got, want)
	}
	if got := ServiceModelThreshold(p, []TypeState{slow}); got != 0 {
		t.Errorf("no type meets the SLO: service threshold %v, want 0", got)
	}
}
