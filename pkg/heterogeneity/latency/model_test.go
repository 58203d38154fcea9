package latency

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func within(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Abs(want)
}

// TestModelHandWorked checks the model against numbers worked out by
// hand (Python, float64) for the repo's profiles at saturation 0.8 and SL_min
// 98 %.
func TestModelHandWorked(t *testing.T) {
	resnet := Model{BatchSize: 8, BatchLatencyMs: resnetT4Ms}
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
		m    Model
		q    float64
		rps  float64
		want float64
	}{
		// Co-location +18 % (HetSev 3.2): S = 26.4438 ms, rho = 0.959910,
		// queue 159.5888 ms, total 46.2685 + 159.5888 + 26.4438 = 232.3011.
		{"resnet50 T4, inflation 1.18", Model{BatchSize: 8, BatchLatencyMs: resnetT4Ms, Inflation: 1.18}, 0.98, 290.4, 232.30112},
		// +40 %: rho = 1.1389 >= 1, the instance cannot keep up.
		{"resnet50 T4, inflation 1.4", Model{BatchSize: 8, BatchLatencyMs: resnetT4Ms, Inflation: 1.4}, 0.98, 290.4, math.Inf(1)},
		// bert-large on T4, lambda = 55.44: formation 242.359, rho 0.793485,
		// queue 127.545, total 484.404 ms: over HetSev's 400 ms although L_i
		// = 114.5 ms passes the paper's check.
		{"bert-large T4", Model{BatchSize: 8, BatchLatencyMs: bertT4Ms}, 0.98, 0.8 * bertT4RPS, 484.40433},
		// bert-large on V100, lambda = 166.4: 80.747 + 43.372 + 38.3.
		{"bert-large V100", Model{BatchSize: 8, BatchLatencyMs: bertV100Ms}, 0.98, 0.8 * bertV100RPS, 162.41974},
		// No batching, L = 10 ms, 50 requests/s: M/D/1 with rho = 0.5,
		// queue 10/(2*0.5) * ln(0.5/0.02) = 32.1888, total 42.1888.
		{"no batching", Model{BatchSize: 1, BatchLatencyMs: 10}, 0.98, 50, 42.18876},
		{"batch size 0 counts as 1", Model{BatchLatencyMs: 10}, 0.98, 50, 42.18876},
		// Light load, rho = 0.005 <= 1-q: no queueing, no formation.
		{"idle", Model{BatchSize: 1, BatchLatencyMs: 10}, 0.98, 0.5, 10},
		// ResNet-50 on T4 at saturation 0.1 (36.3 requests/s) with a 50 ms
		// timeout: formation capped at 50 ms; mean batch 1 + E[min(7,
		// Poisson(1.815))] = 2.81427; rho = 36.3*0.02241/2.81427 = 0.289057;
		// queue 22.41/(2*2.81427*0.710943) * ln(0.289057/0.02) = 14.9578;
		// total 50 + 14.9578 + 22.41 = 87.3678.
		{"timeout caps formation", Model{BatchSize: 8, BatchLatencyMs: resnetT4Ms, MaxBatchDelayMs: 50}, 0.98, 36.3, 87.36781},
		// A 100 ms timeout at saturation 0.8 almost never fires: as without.
		{"timeout that does not bind", Model{BatchSize: 8, BatchLatencyMs: resnetT4Ms, MaxBatchDelayMs: 100}, 0.98, 290.4, 96.50520},
		// A 10 ms timeout at saturation 0.8 dispatches batches of 3.89 on
		// average, each charged the full 22.41 ms: rho = 1.673, overloaded.
		{"short timeout overloads", Model{BatchSize: 8, BatchLatencyMs: resnetT4Ms, MaxBatchDelayMs: 10}, 0.98, 290.4, math.Inf(1)},
		// No load: a full batch never forms without a timeout...
		{"no load, no timeout", Model{BatchSize: 8, BatchLatencyMs: resnetT4Ms}, 0.98, 0, math.Inf(1)},
		// ...with one, a lone request waits for the timeout.
		{"no load, timeout", Model{BatchSize: 8, BatchLatencyMs: resnetT4Ms, MaxBatchDelayMs: 50}, 0.98, 0, 72.41},
		{"q = 1", resnet, 1, 290.4, math.Inf(1)},
		{"q = 0", resnet, 0, 290.4, math.Inf(1)},
		{"q NaN", resnet, math.NaN(), 290.4, math.Inf(1)},
		{"negative latency", Model{BatchSize: 8, BatchLatencyMs: -1}, 0.98, 290.4, math.Inf(1)},
		{"infinite rate", resnet, 0.98, math.Inf(1), math.Inf(1)},
		{"absurd batch size", Model{BatchSize: 1 << 40, BatchLatencyMs: 10, MaxBatchDelayMs: 1}, 0.98, 1e15, math.Inf(1)},
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

// TestModelMonotone: the percentile grows with the quantile, the
// inflation and, once queueing dominates, the load.
func TestModelMonotone(t *testing.T) {
	m := Model{BatchSize: 8, BatchLatencyMs: resnetT4Ms}
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

// TestModelConservative compares the model with a seeded simulation
// of the batching server it describes: the model must not fall below the
// simulated percentile by more than the simulation's noise (3 %), and must
// not exceed it more than threefold.
func TestModelConservative(t *testing.T) {
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
		m := Model{BatchSize: c.b, BatchLatencyMs: c.l, MaxBatchDelayMs: c.maxDelay}
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
