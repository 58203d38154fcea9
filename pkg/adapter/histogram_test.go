package adapter_test

import (
	"math"
	"testing"

	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/adapter/internal/adaptertest"
)

func TestHistogramQuantileHandWorked(t *testing.T) {
	for _, tc := range []struct {
		q    float64
		want float64
	}{
		// rank 50 falls in the first bucket (0, 100]: 0 + 100*50/50.
		{0.50, 100},
		// rank 98 in (250, 500]: 250 + (500-250)*(98-90)/(100-90).
		{0.98, 450},
		// rank 99 in (250, 500]: 250 + 250*(99-90)/10.
		{0.99, 475},
		// rank 25 in (0, 100]: 100*25/50.
		{0.25, 50},
		// rank 70 in (100, 250]: 100 + 150*(70-50)/40.
		{0.70, 175},
	} {
		got, ok := adapter.HistogramQuantile(tc.q, adaptertest.HandWorked)
		if !ok || math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("q=%v: got %v (ok=%v), want %v", tc.q, got, ok, tc.want)
		}
	}
	// Order of the input does not matter.
	shuffled := []adapter.Bucket{{UpperBound: adaptertest.Inf, Count: 100}, {UpperBound: 250, Count: 90}, {UpperBound: 100, Count: 50}, {UpperBound: 500, Count: 100}}
	if got, _ := adapter.HistogramQuantile(0.98, shuffled); got != 450 {
		t.Errorf("shuffled: got %v, want 450", got)
	}
}

func TestHistogramQuantileEdges(t *testing.T) {
	// Rank in the +Inf bucket: the highest finite bound, as Prometheus does.
	if got, ok := adapter.HistogramQuantile(0.99, []adapter.Bucket{{UpperBound: 100, Count: 10}, {UpperBound: 250, Count: 20}, {UpperBound: adaptertest.Inf, Count: 100}}); !ok || got != 250 {
		t.Errorf("+Inf bucket: got %v ok=%v, want 250", got, ok)
	}
	// Non-monotonic counts (merged from pods with different layouts) are
	// fixed up: 250's count is raised to 60.
	if got, ok := adapter.HistogramQuantile(0.5, []adapter.Bucket{{UpperBound: 100, Count: 60}, {UpperBound: 250, Count: 40}, {UpperBound: 500, Count: 100}, {UpperBound: adaptertest.Inf, Count: 100}}); !ok || math.Abs(got-100*50.0/60) > 1e-9 {
		t.Errorf("monotonic fix: got %v ok=%v", got, ok)
	}
	for name, bs := range map[string][]adapter.Bucket{
		"no observations": {{UpperBound: 100, Count: 0}, {UpperBound: adaptertest.Inf, Count: 0}},
		"no +Inf bucket":  {{UpperBound: 100, Count: 5}, {UpperBound: 250, Count: 10}},
		"one bucket":      {{UpperBound: adaptertest.Inf, Count: 10}},
		"empty":           nil,
		"NaN counts":      {{UpperBound: 100, Count: math.NaN()}, {UpperBound: adaptertest.Inf, Count: math.NaN()}},
	} {
		if got, ok := adapter.HistogramQuantile(0.5, bs); ok {
			t.Errorf("%s: got %v, want undefined", name, got)
		}
	}
	for _, q := range []float64{0, -0.1, 1.1, math.NaN()} {
		if _, ok := adapter.HistogramQuantile(q, adaptertest.HandWorked); ok {
			t.Errorf("q=%v: want undefined", q)
		}
	}
}

func TestMergeHistogramsSumsByLe(t *testing.T) {
	a := []adapter.Bucket{{UpperBound: 100, Count: 100}, {UpperBound: 250, Count: 100}, {UpperBound: 500, Count: 100}, {UpperBound: adaptertest.Inf, Count: 100}}
	b := []adapter.Bucket{{UpperBound: 100, Count: 0}, {UpperBound: 250, Count: 0}, {UpperBound: 500, Count: 100}, {UpperBound: adaptertest.Inf, Count: 100}}
	got := adapter.MergeHistograms(a, b)
	want := []adapter.Bucket{{UpperBound: 100, Count: 100}, {UpperBound: 250, Count: 100}, {UpperBound: 500, Count: 200}, {UpperBound: adaptertest.Inf, Count: 200}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}
