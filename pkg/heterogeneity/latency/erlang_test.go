package latency

import (
	"math"
	"testing"
)

// TestErlangQuantile checks the quantile against the CDF for n <= 256 and
// the Wilson-Hilferty branch against a log-space bisection above.
func TestErlangQuantile(t *testing.T) {
	for _, n := range []int{1, 2, 7, 31, 100, 256} {
		for _, q := range []float64{0.01, 0.5, 0.9, 0.98, 0.999999} {
			x := erlangQuantile(n, q)
			if cdf, _ := erlangCDF(n, x); math.Abs(cdf-q) > 1e-9 {
				t.Errorf("n=%d q=%v: CDF(%v) = %v", n, q, x, cdf)
			}
		}
	}
	// Exponential: the q-quantile of Erlang(1) is -ln(1-q).
	if got := erlangQuantile(1, 0.98); !within(got, -math.Log(0.02), 1e-12) {
		t.Errorf("Erlang(1) 0.98-quantile = %v", got)
	}
	logCDF := func(n int, x float64) float64 { // 1 - sum_{j<n} exp(-x + j ln x - ln j!)
		s := 0.0
		for j := range n {
			lg, _ := math.Lgamma(float64(j + 1))
			s += math.Exp(-x + float64(j)*math.Log(x) - lg)
		}
		return 1 - s
	}
	for _, n := range []int{257, 1000, 5000} {
		for _, q := range []float64{0.5, 0.98} {
			lo, hi := 0.0, 2*float64(n)+100
			for range 200 {
				mid := (lo + hi) / 2
				if logCDF(n, mid) < q {
					lo = mid
				} else {
					hi = mid
				}
			}
			if got := erlangQuantile(n, q); !within(got, hi, 1e-4) {
				t.Errorf("n=%d q=%v: Wilson-Hilferty %v, bisection %v", n, q, got, hi)
			}
		}
	}
}

// TestMeanCappedBatch checks E[min(b, 1 + Poisson(m))] at its limits and
// against a direct sum.
func TestMeanCappedBatch(t *testing.T) {
	if got := meanCappedBatch(1, 5); got != 1 {
		t.Errorf("b=1: %v", got)
	}
	if got := meanCappedBatch(8, 0); got != 1 {
		t.Errorf("m=0: %v", got)
	}
	if got := meanCappedBatch(8, 1e6); got != 8 {
		t.Errorf("m huge: %v", got)
	}
	if got := meanCappedBatch(100000, 3); !within(got, 4, 1e-12) {
		t.Errorf("b huge: %v", got)
	}
	// b=3, m=1: 1 + P(P>0) + P(P>1) = 1 + (1-e^-1) + (1-2e^-1).
	if got, want := meanCappedBatch(3, 1), 3-3*math.Exp(-1); !within(got, want, 1e-12) {
		t.Errorf("b=3 m=1: %v, want %v", got, want)
	}
	// Large m near b, where e^-m underflows: must stay within [1, b].
	if got := meanCappedBatch(2000, 1900); !(got > 1800 && got <= 2000) {
		t.Errorf("b=2000 m=1900: %v", got)
	}
}
