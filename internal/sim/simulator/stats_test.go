package simulator

import (
	"math"
	"testing"
)

// The demo's p98 is a nearest-rank percentile: the smallest latency with
// at least 98 % of the window at or below it, never an interpolation.
func TestPercentileIsNearestRank(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[99-i] = float64(i + 1) // unsorted: percentile sorts a copy
	}
	cases := []struct {
		name string
		v    []float64
		q    float64
		want float64
	}{
		{"p98 of 1..100", hundred, 0.98, 98},
		{"p50 of 1..100", hundred, 0.5, 50},
		{"p98 of three", []float64{30, 10, 20}, 0.98, 30},
		{"median of three", []float64{30, 10, 20}, 0.5, 20},
		{"a missed request counts as +Inf", []float64{10, 20, math.Inf(1)}, 0.98, math.Inf(1)},
		{"none", nil, 0.98, 0},
	}
	for _, c := range cases {
		if got := percentile(c.v, c.q); got != c.want {
			t.Errorf("%s: percentile(%v) = %v, want %v", c.name, c.q, got, c.want)
		}
	}
	if hundred[0] != 100 {
		t.Errorf("percentile sorted its input in place: first value %v, want 100", hundred[0])
	}
}
