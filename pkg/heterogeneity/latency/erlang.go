package latency

import "math"

func finiteNonNeg(v float64) bool { return v >= 0 && !math.IsInf(v, 0) }

// meanCappedBatch is E[min(b, 1 + Poisson(m))]: the mean size of a batch that
// starts with one request and takes the arrivals of the following timeout
// window (m arrivals expected), at most b.
func meanCappedBatch(b int, m float64) float64 {
	if b <= 1 || !(m > 0) {
		return 1
	}
	bf := float64(b)
	switch {
	case m+40*math.Sqrt(m)+40 < bf-1:
		return 1 + m // P(Poisson(m) > b-1) is negligible
	case m > bf+40*math.Sqrt(bf)+40:
		return bf // the window almost surely fills the batch
	}
	// E[min(b-1, P)] = sum_{k=0}^{b-2} P(P > k), P ~ Poisson(m); the terms
	// are computed in log space so that e^-m cannot underflow.
	e, cdf := 0.0, 0.0
	logM := math.Log(m)
	logP := -m // log P(P = 0)
	for k := 0; k <= b-2; k++ {
		if k > 0 {
			logP += logM - math.Log(float64(k))
		}
		cdf += math.Exp(logP)
		if cdf >= 1 {
			break
		}
		e += 1 - cdf
	}
	return 1 + e
}

// erlangCDF is P(Erlang(n, 1) <= x) = 1 - e^-x sum_{j<n} x^j/j!, the
// regularised lower incomplete gamma function P(n, x), with the density
// x^(n-1) e^-x / (n-1)!. Callers keep x below 700 so that e^-x does not
// underflow.
func erlangCDF(n int, x float64) (cdf, pdf float64) {
	if x <= 0 {
		return 0, 0
	}
	term := math.Exp(-x)
	tail := term
	for j := 1; j < n; j++ {
		term *= x / float64(j)
		tail += term
	}
	return math.Max(0, 1-tail), term
}

// erlangQuantile is the q-quantile of Erlang(n, 1) (rate 1; divide by the
// rate for other rates), n >= 1, q in (0, 1). For n <= 256 it is solved by
// Newton's method kept inside a bisection bracket, to 1e-13 in probability;
// beyond, the Wilson-Hilferty approximation (Wilson and Hilferty 1931), whose
// relative error is below 1e-4 there, is used directly.
func erlangQuantile(n int, q float64) float64 {
	nf := float64(n)
	z := math.Sqrt2 * math.Erfinv(2*q-1)
	c := 1 / (9 * nf)
	wh := nf * math.Pow(math.Max(1-c+z*math.Sqrt(c), 0), 3)
	if n > 256 {
		return wh
	}
	// The bracket's top, n + 20 sqrt(n) + 60 <= 636 for n <= 256, lies
	// beyond the 1-1e-15 quantile.
	lo, hi := 0.0, nf+20*math.Sqrt(nf)+60
	x := wh
	if !(x > lo && x < hi) {
		x = (lo + hi) / 2
	}
	for range 200 {
		cdf, pdf := erlangCDF(n, x)
		if cdf < q {
			lo = x
		} else {
			hi = x
		}
		if math.Abs(cdf-q) <= 1e-13 || hi-lo <= 1e-12*hi {
			break
		}
		next := x - (cdf-q)/pdf
		if !(next > lo && next < hi) || !(pdf > 0) {
			next = (lo + hi) / 2
		}
		x = next
	}
	return x
}
