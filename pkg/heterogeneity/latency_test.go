package heterogeneity

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func within(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Abs(want)
}

// TestLatencyModelHandWorked checks the model against numbers worked out by
// hand (Python, float64) for the repo's profiles at saturation 0.8 and SL_min
// 98 %.
func TestLatencyModelHandWorked(t *testing.T) {
	resnet := LatencyModel{BatchSize: 8, BatchLatencyMs: resnetT4Ms}
	// ResNet-50 on T4: lambda = 0.8 * 363 = 290.4 requests/s.
	//   formation: Erlang(7) 0.98-quantile 13.43638 / 290.4 s = 46.2685 ms
	//              (FA2's (b-1)/lambda = 7/290.4 s = 24.1047 ms)
	//   rho = 290.4 * 0.02241 / 8 = 0.813483
	//   queue: 22.41 / (2*8*(1-0.813483)) * ln(0.813483/0.02) = 7.50937 * 3.70559 = 27.8267 ms
	//   total: 46.2685 + 27.8267 + 22.41 = 96.5052 ms
	b := resnet.Breakdown(0.98, 290.4)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"formation", b.FormationMs, 46.26853},
		{"FA2 formation", b.FA2FormationMs, 24.10468},
		{"utilization", b.Utilization, 0.813483},
		{"queue", b.QueueMs, 27.82666},
		{"service", b.ServiceMs, 22.41},
		{"total", b.TotalMs, 96.50520},
		{"effective batch", b.EffectiveBatch, 8},
	} {
		if !within(c.got, c.want, 1e-5) {
			t.Errorf("resnet50 T4 %s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if got := resnet.Percentile(0.98, 290.4); got != b.TotalMs {
		t.Errorf("Percentile = %v, Breakdown.TotalMs = %v", got, b.TotalMs)
	}
	if !resnet.MeetsSLO(290.4, 0.98, 400) || resnet.MeetsSLO(290.4, 0.98, 96) {
		t.Error("MeetsSLO disagrees with 96.5 ms")
	}

	tests := []struct {
		name string
		m    LatencyModel
		q    float64
		rps  float64
		want float64
	}{
		// Co-location +18 % (HetSev 3.2): S = 26.4438 ms, rho = 0.959910,
		// queue 159.5888 ms, total 46.2685 + 159.5888 + 26.4438 = 232.3011.
		{"resnet50 T4, inflation 1.18", LatencyModel{BatchSize: 8, BatchLatencyMs: resnetT4Ms, Inflation: 1.18}, 0.98, 290.4, 232.30112},
		// +40 %: rho = 1.1389 >= 1, the instance cannot keep up.
		{"resnet50 T4, inflation 1.4", LatencyModel{BatchSize: 8, BatchLatencyMs: resnetT4Ms, Inflation: 1.4}, 0.98, 290.4, math.Inf(1)},
		// bert-large on T4, lambda = 55.44: formation 242.359, rho 0.793485,
		// queue 127.545, total 484.404 ms: over HetSev's 400 ms although L_i
		// = 114.5 ms passes the paper's check.
		{"bert-large T4", LatencyModel{BatchSize: 8, BatchLatencyMs: bertT4Ms}, 0.98, 0.8 * bertT4RPS, 484.40433},
		// bert-large on V100, lambda = 166.4: 80.747 + 43.372 + 38.3.
		{"bert-large V100", LatencyModel{BatchSize: 8, BatchLatencyMs: bertV100Ms}, 0.98, 0.8 * bertV100RPS, 162.41974},
		// No batching, L = 10 ms, 50 requests/s: M/D/1 with rho = 0.5,
		// queue 10/(2*0.5) * ln(0.5/0.02) = 32.1888, total 42.1888.
		{"no batching", LatencyModel{BatchSize: 1, BatchLatencyMs: 10}, 0.98, 50, 42.18876},
		{"batch size 0 counts as 1", LatencyModel{BatchLatencyMs: 10}, 0.98, 50, 42.18876},
		// Light load, rho = 0.005 <= 1-q: no queueing, no formation.
		{"idle", LatencyModel{BatchSize: 1, BatchLatencyMs: 10}, 0.98, 0.5, 10},
		// ResNet-50 on T4 at saturation 0.1 (36.3 requests/s) with a 50 ms
		// timeout: formation capped at 50 ms; mean batch 1 + E[min(7,
		// Poisson(1.815))] = 2.81427; rho = 36.3*0.02241/2.81427 = 0.289057;
		// queue 22.41/(2*2.81427*0.710943) * ln(0.289057/0.02) = 14.9578;
		// total 50 + 14.9578 + 22.41 = 87.3678.
		{"timeout caps formation", LatencyModel{BatchSize: 8, BatchLatencyMs: resnetT4Ms, MaxBatchDelayMs: 50}, 0.98, 36.3, 87.36781},
		// A 100 ms timeout at saturation 0.8 almost never fires: as without.
		{"timeout that does not bind", LatencyModel{BatchSize: 8, BatchLatencyMs: resnetT4Ms, MaxBatchDelayMs: 100}, 0.98, 290.4, 96.50520},
		// A 10 ms timeout at saturation 0.8 dispatches batches of 3.89 on
		// average, each charged the full 22.41 ms: rho = 1.673, overloaded.
		{"short timeout overloads", LatencyModel{BatchSize: 8, BatchLatencyMs: resnetT4Ms, MaxBatchDelayMs: 10}, 0.98, 290.4, math.Inf(1)},
		// No load: a full batch never forms without a timeout...
		{"no load, no timeout", LatencyModel{BatchSize: 8, BatchLatencyMs: resnetT4Ms}, 0.98, 0, math.Inf(1)},
		// ...with one, a lone request waits for the timeout.
		{"no load, timeout", LatencyModel{BatchSize: 8, BatchLatencyMs: resnetT4Ms, MaxBatchDelayMs: 50}, 0.98, 0, 72.41},
		{"q = 1", resnet, 1, 290.4, math.Inf(1)},
		{"q = 0", resnet, 0, 290.4, math.Inf(1)},
		{"q NaN", resnet, math.NaN(), 290.4, math.Inf(1)},
		{"negative latency", LatencyModel{BatchSize: 8, BatchLatencyMs: -1}, 0.98, 290.4, math.Inf(1)},
		{"infinite rate", resnet, 0.98, math.Inf(1), math.Inf(1)},
		{"absurd batch size", LatencyModel{BatchSize: 1 << 40, BatchLatencyMs: 10, MaxBatchDelayMs: 1}, 0.98, 1e15, math.Inf(1)},
	}
	for _, tc := range tests {
		got := tc.m.Percentile(tc.q, tc.rps)
		if math.IsInf(tc.want, 1) {
			if !math.IsInf(got, 1) {
				t.Errorf("%s: %v, want +Inf", tc.name, got)
			}
			continue
		}
		if !within(got, tc.want, 1e-5) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestLatencyModelMonotone: the percentile grows with the quantile, the
// inflation and, once queueing dominates, the load.
func TestLatencyModelMonotone(t *testing.T) {
	m := LatencyModel{BatchSize: 8, BatchLatencyMs: resnetT4Ms}
	prev := 0.0
	for _, q := range []float64{0.5, 0.9, 0.95, 0.98, 0.99, 0.999} {
		got := m.Percentile(q, 290.4)
		if !(got > prev) {
			t.Errorf("q=%v: %v not above %v", q, got, prev)
		}
		prev = got
	}
	prev = 0
	for _, f := range []float64{1, 1.05, 1.1, 1.18} {
		m.Inflation = f
		got := m.Percentile(0.98, 290.4)
		if !(got > prev) {
			t.Errorf("inflation %v: %v not above %v", f, got, prev)
		}
		prev = got
	}
}

// simulateBatching runs a batching server: Poisson arrivals at lambda
// requests/s, a batch dispatched when b requests wait or maxDelay ms after
// its first request (0: never), batches served FIFO one at a time in s ms. It
// returns the response times (arrival to completion) of n requests, in ms.
func simulateBatching(rng *rand.Rand, lambda float64, b int, s, maxDelay float64, n int) []float64 {
	meanGap := 1000 / lambda
	var resp, batch []float64
	now, free := 0.0, 0.0
	next := rng.ExpFloat64() * meanGap
	for len(resp) < n {
		now = next
		next = now + rng.ExpFloat64()*meanGap
		batch = append(batch, now)
		dispatch := -1.0
		switch {
		case len(batch) == b:
			dispatch = now
		case maxDelay > 0 && next > batch[0]+maxDelay:
			dispatch = batch[0] + maxDelay
		}
		if dispatch >= 0 {
			free = math.Max(dispatch, free) + s
			for _, a := range batch {
				resp = append(resp, free-a)
			}
			batch = batch[:0]
		}
	}
	return resp
}

// quantile is the q-quantile of sorted samples.
func quantile(sorted []float64, q float64) float64 {
	return sorted[int(q*float64(len(sorted)))]
}

// TestLatencyModelConservative compares the model with a seeded simulation
// of the batching server it describes: the model must not fall below the
// simulated percentile by more than the simulation's noise (3 %), and must
// not exceed it more than threefold.
func TestLatencyModelConservative(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	cases := []struct {
		b         int
		l, tput   float64
		maxDelay  float64
		loads     []float64
		quantiles []float64
	}{
		{8, resnetT4Ms, resnetT4RPS, 0, []float64{0.1, 0.3, 0.5, 0.8, 0.9}, []float64{0.95, 0.98, 0.99}},
		{8, bertT4Ms, bertT4RPS, 0, []float64{0.1, 0.5, 0.8}, []float64{0.98}},
		{4, 72.19, 55.41, 0, []float64{0.1, 0.5, 0.9}, []float64{0.98}}, // ssd-resnet50 on V100
		{1, 10, 100, 0, []float64{0.3, 0.5, 0.8, 0.9}, []float64{0.95, 0.98, 0.99}},
		{2, 12, 166, 0, []float64{0.1, 0.5, 0.9}, []float64{0.98}},
		{16, 40, 400, 0, []float64{0.1, 0.5, 0.9}, []float64{0.98}},
		{32, 50, 640, 0, []float64{0.1, 0.5, 0.9}, []float64{0.98}},
		{8, resnetT4Ms, resnetT4RPS, 20, []float64{0.05, 0.1, 0.3, 0.5}, []float64{0.95, 0.99}},
		{8, resnetT4Ms, resnetT4RPS, 100, []float64{0.05, 0.3, 0.8, 0.9}, []float64{0.95, 0.99}},
		{32, 50, 640, 100, []float64{0.05, 0.5, 0.9}, []float64{0.98}},
	}
	for _, c := range cases {
		m := LatencyModel{BatchSize: c.b, BatchLatencyMs: c.l, MaxBatchDelayMs: c.maxDelay}
		for _, s := range c.loads {
			lambda := s * c.tput
			resp := simulateBatching(rng, lambda, c.b, c.l, c.maxDelay, 150_000)
			slices.Sort(resp)
			for _, q := range c.quantiles {
				sim := quantile(resp, q)
				got := m.Percentile(q, lambda)
				if got < 0.97*sim || got > 3*sim {
					t.Errorf("b=%d L=%v timeout=%v load %.2f q=%v: model %.1f ms, simulated %.1f ms", c.b, c.l, c.maxDelay, s, q, got, sim)
				}
			}
		}
	}
}

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

// TestPolicySLOCheck checks the eligibility of constraint (4) under both
// checks.
func TestPolicySLOCheck(t *testing.T) {
	p := DefaultPolicy() // RT_max 400 ms, threshold 0.8, SL_min 0.98
	bt4 := bertT4(0, 1)
	if !p.MeetsSLO(bt4) || p.SLOLatencyMs(bt4) != bertT4Ms {
		t.Errorf("paper check: bert-large T4 L=114.5 ms should pass RT_max 400")
	}
	p.SLOCheck = SLOCheckModel
	// Modelled 98th percentile 484.4 ms at 0.8 * 69.3 requests/s.
	if got := p.SLOLatencyMs(bt4); !within(got, 484.40433, 1e-5) || p.MeetsSLO(bt4) {
		t.Errorf("model check: bert-large T4 %v ms, meets %v; want 484.4 ms, fails", got, p.MeetsSLO(bt4))
	}
	if !p.MeetsSLO(bertV100(0, 1)) {
		t.Error("model check: bert-large V100 (162.4 ms) should pass")
	}
	p.RTMaxMs = 1200 // HetSev's RT_max for the Transformer
	if !p.MeetsSLO(bt4) {
		t.Error("model check: bert-large T4 should pass RT_max 1200 ms")
	}
	// Co-location inflation makes ResNet-50 on T4 fail 200 ms (232.3 ms).
	p.RTMaxMs = 200
	rt4 := resnetT4(0, 1)
	if !p.MeetsSLO(rt4) {
		t.Error("resnet50 T4 without inflation (96.5 ms) should pass 200 ms")
	}
	rt4.LatencyInflation = 1.18
	if p.MeetsSLO(rt4) {
		t.Error("resnet50 T4 with inflation 1.18 (232.3 ms) should fail 200 ms")
	}
	// A lower service level is easier: 95th percentile.
	p.ServiceLevel = 0.95
	if got := p.SLOLatencyMs(rt4); !(got < 232.3) {
		t.Errorf("p95 %v not below p98", got)
	}
}
