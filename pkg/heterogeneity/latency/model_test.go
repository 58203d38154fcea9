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
	resnet := Model{WaitsForFullBatch: true, BatchSize: 8, BatchLatencyMs: resnetT4Ms}
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
		{"resnet50 T4, inflation 1.18", Model{WaitsForFullBatch: true, BatchSize: 8, BatchLatencyMs: resnetT4Ms, Inflation: 1.18}, 0.98, 290.4, 232.30112},
		// +40 %: rho = 1.1389 >= 1, the instance cannot keep up.
		{"resnet50 T4, inflation 1.4", Model{WaitsForFullBatch: true, BatchSize: 8, BatchLatencyMs: resnetT4Ms, Inflation: 1.4}, 0.98, 290.4, math.Inf(1)},
		// bert-large on T4, lambda = 55.44: formation 242.359, rho 0.793485,
		// queue 127.545, total 484.404 ms: over HetSev's 400 ms although L_i
		// = 114.5 ms passes the paper's check.
		{"bert-large T4", Model{WaitsForFullBatch: true, BatchSize: 8, BatchLatencyMs: bertT4Ms}, 0.98, 0.8 * bertT4RPS, 484.40433},
		// bert-large on V100, lambda = 166.4: 80.747 + 43.372 + 38.3.
		{"bert-large V100", Model{WaitsForFullBatch: true, BatchSize: 8, BatchLatencyMs: bertV100Ms}, 0.98, 0.8 * bertV100RPS, 162.41974},
		// No batching, L = 10 ms, 50 requests/s: M/D/1 with rho = 0.5,
		// queue 10/(2*0.5) * ln(0.5/0.02) = 32.1888, total 42.1888.
		{"no batching", Model{WaitsForFullBatch: true, BatchSize: 1, BatchLatencyMs: 10}, 0.98, 50, 42.18876},
		{"batch size 0 counts as 1", Model{WaitsForFullBatch: true, BatchLatencyMs: 10}, 0.98, 50, 42.18876},
		// Light load, rho = 0.005 <= 1-q: no queueing, no formation.
		{"idle", Model{WaitsForFullBatch: true, BatchSize: 1, BatchLatencyMs: 10}, 0.98, 0.5, 10},
		// ResNet-50 on T4 at saturation 0.1 (36.3 requests/s) with a 50 ms
		// timeout: formation capped at 50 ms; mean batch 1 + E[min(7,
		// Poisson(1.815))] = 2.81427; rho = 36.3*0.02241/2.81427 = 0.289057;
		// queue 22.41/(2*2.81427*0.710943) * ln(0.289057/0.02) = 14.9578;
		// total 50 + 14.9578 + 22.41 = 87.3678.
		{"timeout caps formation", Model{WaitsForFullBatch: true, BatchSize: 8, BatchLatencyMs: resnetT4Ms, MaxBatchDelayMs: 50}, 0.98, 36.3, 87.36781},
		// A 100 ms timeout at saturation 0.8 almost never fires: as without.
		{"timeout that does not bind", Model{WaitsForFullBatch: true, BatchSize: 8, BatchLatencyMs: resnetT4Ms, MaxBatchDelayMs: 100}, 0.98, 290.4, 96.50520},
		// A 10 ms timeout at saturation 0.8 dispatches batches of 3.89 on
		// average, each charged the full 22.41 ms: rho = 1.673, overloaded.
		{"short timeout overloads", Model{WaitsForFullBatch: true, BatchSize: 8, BatchLatencyMs: resnetT4Ms, MaxBatchDelayMs: 10}, 0.98, 290.4, math.Inf(1)},
		// No load: a full batch never forms without a timeout...
		{"no load, no timeout", Model{WaitsForFullBatch: true, BatchSize: 8, BatchLatencyMs: resnetT4Ms}, 0.98, 0, math.Inf(1)},
		// ...with one, a lone request waits for the timeout.
		{"no load, timeout", Model{WaitsForFullBatch: true, BatchSize: 8, BatchLatencyMs: resnetT4Ms, MaxBatchDelayMs: 50}, 0.98, 0, 72.41},
		{"q = 1", resnet, 1, 290.4, math.Inf(1)},
		{"q = 0", resnet, 0, 290.4, math.Inf(1)},
		{"q NaN", resnet, math.NaN(), 290.4, math.Inf(1)},
		{"negative latency", Model{WaitsForFullBatch: true, BatchSize: 8, BatchLatencyMs: -1}, 0.98, 290.4, math.Inf(1)},
		{"infinite rate", resnet, 0.98, math.Inf(1), math.Inf(1)},
		{"absurd batch size", Model{WaitsForFullBatch: true, BatchSize: 1 << 40, BatchLatencyMs: 10, MaxBatchDelayMs: 1}, 0.98, 1e15, math.Inf(1)},
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
	m := Model{WaitsForFullBatch: true, BatchSize: 8, BatchLatencyMs: resnetT4Ms}
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

// simCase is a server to simulate: batch size b, full-batch latency l ms,
// throughput tput requests/s, batching delay maxDelay ms, at loads (shares
// of tput) and quantiles.
type simCase struct {
	b         int
	l, tput   float64
	maxDelay  float64
	loads     []float64
	quantiles []float64
}

// checkAgainstSimulation runs sim (150,000 response times in ms at lambda
// requests/s) for every case and load and requires the model of m(c) to be
// within [lo, hi] times each simulated quantile.
func checkAgainstSimulation(t *testing.T, cases []simCase, m func(simCase) Model, sim func(c simCase, lambda float64) []float64, lo, hi float64) {
	t.Helper()
	for _, c := range cases {
		for _, s := range c.loads {
			lambda := s * c.tput
			resp := sim(c, lambda)
			slices.Sort(resp)
			for _, q := range c.quantiles {
				want := quantile(resp, q)
				if got := m(c).Percentile(q, lambda); got < lo*want || got > hi*want {
					t.Errorf("b=%d L=%v delay=%v load %.2f q=%v: model %.1f ms, simulated %.1f ms", c.b, c.l, c.maxDelay, s, q, got, want)
				}
			}
		}
	}
}

// TestModelConservative compares the model with a seeded simulation
// of the batching server it describes: the model must not fall below the
// simulated percentile by more than the simulation's noise (3 %), and must
// not exceed it more than threefold.
func TestModelConservative(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	cases := []simCase{
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
	checkAgainstSimulation(t, cases,
		func(c simCase) Model {
			return Model{WaitsForFullBatch: true, BatchSize: c.b, BatchLatencyMs: c.l, MaxBatchDelayMs: c.maxDelay}
		},
		func(c simCase, lambda float64) []float64 {
			return simulateBatching(rng, lambda, c.b, c.l, c.maxDelay, 150_000)
		}, 0.97, 3)
}

// TestModelDynamicBatcher checks the default server, a dynamic batcher, by
// hand: no formation wait without a batching delay (a batch forms while the
// one before it runs), the delay as the formation cap, and full batches in
// the queueing term whatever the delay.
func TestModelDynamicBatcher(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Model
		rps  float64
		want float64
	}{
		// ResNet-50 on T4 at 290.4 requests/s: rho 0.813483, queue 27.8267
		// (as with full batches), no formation: 27.8267 + 22.41.
		{"resnet50 T4", Model{BatchSize: 8, BatchLatencyMs: resnetT4Ms}, 290.4, 50.23666},
		// bert-large on T4 at 55.44 requests/s: queue 127.545 + 114.5.
		{"bert-large T4", Model{BatchSize: 8, BatchLatencyMs: bertT4Ms}, 0.8 * bertT4RPS, 242.04534},
		// A 10 ms delay adds at most 10 ms and does not shrink the batches
		// the queue sees (the full-batch server is overloaded here).
		{"short delay", Model{BatchSize: 8, BatchLatencyMs: resnetT4Ms, MaxBatchDelayMs: 10}, 290.4, 60.23666},
		// At 36.3 requests/s a 50 ms delay binds: 50 + queue 2.53545 + 22.41.
		{"delay caps formation", Model{BatchSize: 8, BatchLatencyMs: resnetT4Ms, MaxBatchDelayMs: 50}, 36.3, 74.94545},
		// No load: a lone request runs at once.
		{"no load", Model{BatchSize: 8, BatchLatencyMs: resnetT4Ms}, 0, resnetT4Ms},
	} {
		if got := tc.m.Percentile(0.98, tc.rps); !within(got, tc.want, 1e-5) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// simulateDynamic runs a dynamic batcher: Poisson arrivals at lambda
// requests/s; whenever the GPU is free and requests wait, it runs up to b of
// them, after waiting up to maxDelay ms from the first one's arrival for b
// to gather (never past the moment the GPU frees when that is later); a
// batch of k takes lat(k) ms. It returns the response times of n requests.
func simulateDynamic(rng *rand.Rand, lambda float64, b int, lat func(k int) float64, maxDelay float64, n int) []float64 {
	meanGap := 1000 / lambda
	arr := make([]float64, n)
	now := 0.0
	for i := range arr {
		now += rng.ExpFloat64() * meanGap
		arr[i] = now
	}
	resp := make([]float64, 0, n)
	free := 0.0
	for i := 0; i < n; {
		start := math.Max(free, arr[i])
		if maxDelay > 0 && start < arr[i]+maxDelay {
			start = arr[i] + maxDelay
			if i+b-1 < n && arr[i+b-1] < start {
				start = math.Max(arr[i+b-1], math.Max(free, arr[i]))
			}
		}
		k := 0
		for i+k < n && k < b && arr[i+k] <= start {
			k++
		}
		free = start + lat(k)
		for j := i; j < i+k; j++ {
			resp = append(resp, free-arr[j])
		}
		i += k
	}
	return resp
}

// TestModelDynamicConservative compares the model with a seeded simulation
// of a dynamic batcher whose batch latency grows linearly from half the
// full-batch latency at one request to L at b (the measured servers of
// data/measurements/gpu-serving-h100 run one request in 0.20-0.53 of a full
// batch's time, so charging half is the slower case). This batcher is
// slower than the measured ones at high load (ResNet-50's shape at load 0.8:
// 9 % above the model here, 3 % below it measured, see
// internal/sim/calibration's TestSLOModelMeetsMeasuredServing), so the
// model may fall below it by up to 25 %, and must not exceed it more than
// threefold.
func TestModelDynamicConservative(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	cases := []simCase{
		{8, resnetT4Ms, resnetT4RPS, 0, []float64{0.1, 0.3, 0.5, 0.8, 0.9}, []float64{0.95, 0.98, 0.99}},
		{8, bertT4Ms, bertT4RPS, 0, []float64{0.1, 0.5, 0.8, 0.9}, []float64{0.98}},
		{4, 106.21, 37.71, 0, []float64{0.1, 0.5, 0.9, 0.95}, []float64{0.98}}, // ssd-resnet50 on T4
		{1, 10, 100, 0, []float64{0.3, 0.5, 0.8, 0.9}, []float64{0.95, 0.98, 0.99}},
		{16, 40, 400, 0, []float64{0.1, 0.5, 0.9}, []float64{0.98}},
		{8, resnetT4Ms, resnetT4RPS, 5, []float64{0.1, 0.5, 0.9}, []float64{0.98}},
		{8, resnetT4Ms, resnetT4RPS, 50, []float64{0.05, 0.3, 0.8}, []float64{0.95, 0.99}},
	}
	checkAgainstSimulation(t, cases,
		func(c simCase) Model {
			return Model{BatchSize: c.b, BatchLatencyMs: c.l, MaxBatchDelayMs: c.maxDelay}
		},
		func(c simCase, lambda float64) []float64 {
			lat := func(k int) float64 {
				if c.b == 1 {
					return c.l
				}
				return c.l * (0.5 + 0.5*float64(k-1)/float64(c.b-1))
			}
			return simulateDynamic(rng, lambda, c.b, lat, c.maxDelay, 150_000)
		}, 0.75, 3)
}
