package evaluate

import (
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestBatchCountByHand: window w = 0.5 s, cap b = 3, measured from 10 s,
// fed one trace second at a time as the replay's Offered callback is.
//
//	main:  9.0 | 10.0 10.25 10.5 10.5 | 11.0 11.000001 | 12.0
//	       9.0 is before MeasureFrom: not counted. Batch 1 opens at 10.0
//	       and takes 10.25 and 10.5 (exactly w apart: shares); the
//	       second 10.5 finds it full (b = 3) and opens batch 2; 11.0 is
//	       exactly w after 10.5: shares across the seconds; 11.000001 is
//	       w + 1 µs after: batch 3; 12.0: batch 4. 4 batches of 7.
//	edge:  10.5 | 11.0               one batch: exactly w apart
//	apart: 10.5 | 11.000001          two: w + 1 µs apart
//	early: 9.75 | 10.0 10.5          one: 9.75 would open a batch that
//	                                 ends before 10.5, but is not measured
func TestBatchCountByHand(t *testing.T) {
	for _, c := range []struct {
		name              string
		secs              [][]float64
		batches, arrivals int64
	}{
		{"main", [][]float64{{9.0}, {10.0, 10.25, 10.5, 10.5}, {11.0, 11.000001}, {12.0}, {}}, 4, 7},
		{"edge", [][]float64{{10.5}, {11.0}}, 1, 2},
		{"apart", [][]float64{{10.5}, {11.000001}}, 2, 2},
		{"early", [][]float64{{9.75}, {10.0, 10.5}}, 1, 2},
	} {
		bc := newBatchCounter(0.5, 3, 10)
		for _, sec := range c.secs {
			bc.add(sec)
		}
		if bc.batches != c.batches || bc.arrivals != c.arrivals || bc.unsorted {
			t.Errorf("%s: %d batches of %d arrivals (unsorted %v); want %d of %d", c.name, bc.batches, bc.arrivals, bc.unsorted, c.batches, c.arrivals)
		}
	}
	var off batchCounter
	off.add([]float64{1, 2})
	if off.batches != 0 || off.arrivals != 0 {
		t.Errorf("the zero counter counted %d batches of %d", off.batches, off.arrivals)
	}
	u := newBatchCounter(0.5, 3, 0)
	u.add([]float64{2, 1})
	if !u.unsorted {
		t.Error("arrivals out of order not flagged")
	}
}

// TestBatchCountIsFewest: on 400 random small sets of arrivals the greedy
// count equals the fewest batches found by search over every partition
// (each batch at most b requests within w of each other), the optimality
// bound.go proves.
func TestBatchCountIsFewest(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := range 400 {
		n := 1 + rng.IntN(9)
		at := make([]float64, n)
		for i := range at {
			at[i] = float64(rng.IntN(12)) / 4 // ties and exact window edges
		}
		slices.Sort(at)
		w, b := float64(rng.IntN(5))/4, 1+rng.IntN(4)
		c := newBatchCounter(w, b, 0)
		c.add(at)
		if opt := fewestBatches(at, w, b); c.batches != int64(opt) {
			t.Fatalf("trial %d: arrivals %v, w %v, b %d: greedy %d batches, fewest %d", trial, at, w, b, c.batches, opt)
		}
	}
}

// fewestBatches is the fewest groups of at most b of the arrivals at, each
// spanning at most w, by search over subsets (len(at) <= 12).
func fewestBatches(at []float64, w float64, b int) int {
	n := len(at)
	best := make([]int, 1<<n)
	for mask := 1; mask < 1<<n; mask++ {
		best[mask] = n + 1
		low := bits.TrailingZeros(uint(mask))
		rest := mask &^ (1 << low)
		// Every group of mask that holds its lowest member.
		for sub := rest; ; sub = (sub - 1) & rest {
			g := sub | 1<<low
			if bits.OnesCount(uint(g)) <= b && span(at, g) <= w {
				best[mask] = min(best[mask], 1+best[mask&^g])
			}
			if sub == 0 {
				break
			}
		}
	}
	return best[1<<n-1]
}

func span(at []float64, g int) float64 {
	lo, hi := 0.0, 0.0
	first := true
	for i := range at {
		if g&(1<<i) == 0 {
			continue
		}
		if first {
			lo, hi, first = at[i], at[i], false
		}
		lo, hi = min(lo, at[i]), max(hi, at[i])
	}
	return hi - lo
}
