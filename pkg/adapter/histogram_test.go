package adapter

import (
	"math"
	"testing"
)

var inf = math.Inf(+1)

// The hand-worked example: bucket increments over the window
// {le=100: 50, le=250: 90, le=500: 100, +Inf: 100}.
var handWorked = []Bucket{{100, 50}, {250, 90}, {500, 100}, {inf, 100}}

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
		got, ok := HistogramQuantile(tc.q, handWorked)
		if !ok || math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("q=%v: got %v (ok=%v), want %v", tc.q, got, ok, tc.want)
		}
	}
	// Order of the input does not matter.
	shuffled := []Bucket{{inf, 100}, {250, 90}, {100, 50}, {500, 100}}
	if got, _ := HistogramQuantile(0.98, shuffled); got != 450 {
		t.Errorf("shuffled: got %v, want 450", got)
	}
}

func TestHistogramQuantileEdges(t *testing.T) {
	// Rank in the +Inf bucket: the highest finite bound, as Prometheus does.
	if got, ok := HistogramQuantile(0.99, []Bucket{{100, 10}, {250, 20}, {inf, 100}}); !ok || got != 250 {
		t.Errorf("+Inf bucket: got %v ok=%v, want 250", got, ok)
	}
	// Non-monotonic counts (merged from pods with different layouts) are
	// fixed up: 250's count is raised to 60.
	if got, ok := HistogramQuantile(0.5, []Bucket{{100, 60}, {250, 40}, {500, 100}, {inf, 100}}); !ok || math.Abs(got-100*50.0/60) > 1e-9 {
		t.Errorf("monotonic fix: got %v ok=%v", got, ok)
	}
	for name, bs := range map[string][]Bucket{
		"no observations": {{100, 0}, {inf, 0}},
		"no +Inf bucket":  {{100, 5}, {250, 10}},
		"one bucket":      {{inf, 10}},
		"empty":           nil,
		"NaN counts":      {{100, math.NaN()}, {inf, math.NaN()}},
	} {
		if got, ok := HistogramQuantile(0.5, bs); ok {
			t.Errorf("%s: got %v, want undefined", name, got)
		}
	}
	for _, q := range []float64{0, -0.1, 1.1, math.NaN()} {
		if _, ok := HistogramQuantile(q, handWorked); ok {
			t.Errorf("q=%v: want undefined", q)
		}
	}
}

func TestMergeHistogramsSumsByLe(t *testing.T) {
	a := []Bucket{{100, 100}, {250, 100}, {500, 100}, {inf, 100}}
	b := []Bucket{{100, 0}, {250, 0}, {500, 100}, {inf, 100}}
	got := MergeHistograms(a, b)
	want := []Bucket{{100, 100}, {250, 100}, {500, 200}, {inf, 200}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}
