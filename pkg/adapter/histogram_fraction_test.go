package adapter_test

import (
	"math"
	"testing"

	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/adapter/internal/adaptertest"
)

// HandWorked is {100: 50, 250: 90, 500: 100, +Inf: 100} requests.
func TestHistogramFractionAtMostHandWorked(t *testing.T) {
	for _, tc := range []struct {
		ms   float64
		want float64
	}{
		// At a bucket bound: exact, that bucket's count over the total.
		{100, 0.50},
		{250, 0.90},
		{500, 1},
		// Between bounds: interpolated inside the bucket,
		// (50 + 40*(175-100)/(250-100)) / 100.
		{175, 0.70},
		// (90 + 10*(400-250)/250) / 100.
		{400, 0.96},
		// Inside the first bucket, from 0: 50*(40/100) / 100.
		{40, 0.20},
	} {
		got, ok := adapter.HistogramFractionAtMost(tc.ms, adaptertest.HandWorked)
		if !ok || math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("le=%v: got %v (ok=%v), want %v", tc.ms, got, ok, tc.want)
		}
	}
	// It inverts HistogramQuantile inside a bucket.
	for _, q := range []float64{0.25, 0.70, 0.98, 0.999} {
		ms, _ := adapter.HistogramQuantile(q, adaptertest.HandWorked)
		if got, _ := adapter.HistogramFractionAtMost(ms, adaptertest.HandWorked); math.Abs(got-q) > 1e-12 {
			t.Errorf("fraction at the %v-quantile (%v ms) = %v", q, ms, got)
		}
	}
}

func TestHistogramFractionAtMostEdges(t *testing.T) {
	tail := []adapter.Bucket{{UpperBound: 100, Count: 50}, {UpperBound: 500, Count: 95}, {UpperBound: adaptertest.Inf, Count: 100}}
	// Above the highest finite bound: that bound's count, a lower bound.
	if got, ok := adapter.HistogramFractionAtMost(1000, tail); !ok || got != 0.95 {
		t.Errorf("above the last finite bound: got %v ok=%v, want 0.95", got, ok)
	}
	for name, bs := range map[string][]adapter.Bucket{
		"no observations": {{UpperBound: 100, Count: 0}, {UpperBound: adaptertest.Inf, Count: 0}},
		"no +Inf bucket":  {{UpperBound: 100, Count: 5}, {UpperBound: 250, Count: 10}},
		"empty":           nil,
	} {
		if got, ok := adapter.HistogramFractionAtMost(100, bs); ok {
			t.Errorf("%s: got %v, want undefined", name, got)
		}
	}
	if _, ok := adapter.HistogramFractionAtMost(math.NaN(), tail); ok {
		t.Error("NaN bound: want undefined")
	}
}

// The 0.999-quantile of HandWorked: rank 99.9 in (250, 500],
// 250 + 250*(99.9-90)/10.
func TestHistogramQuantile999(t *testing.T) {
	if got, ok := adapter.HistogramQuantile(0.999, adaptertest.HandWorked); !ok || math.Abs(got-497.5) > 1e-9 {
		t.Errorf("q=0.999: got %v ok=%v, want 497.5", got, ok)
	}
}
