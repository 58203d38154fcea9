package modelserver

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

const (
	lat   = 0.0115 // ResNet50-like batch latency on a T4, seconds
	delay = 0.005  // MaxBatchDelay, seconds
	eps   = 1e-9
)

func newServer(t testing.TB, mod func(*Config)) *Server {
	t.Helper()
	cfg := Config{Name: "default/resnet50-t4-abc", Model: "resnet50", BatchSize: 8, BatchLatency: lat, MaxBatchDelay: delay}
	if mod != nil {
		mod(&cfg)
	}
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func near(a, b float64) bool { return math.Abs(a-b) < eps }

func TestNewServerValidation(t *testing.T) {
	base := Config{Name: "n", Model: "m", BatchSize: 1, BatchLatency: 0.01, MaxBatchDelay: 0}
	cases := []struct {
		mod   func(*Config)
		field string
	}{
		{func(c *Config) { c.Name = "" }, "Name"},
		{func(c *Config) { c.Model = "" }, "Model"},
		{func(c *Config) { c.BatchSize = 0 }, "BatchSize"},
		{func(c *Config) { c.BatchLatency = 0 }, "BatchLatency"},
		{func(c *Config) { c.BatchLatency = math.NaN() }, "BatchLatency"},
		{func(c *Config) { c.MaxBatchDelay = -1 }, "MaxBatchDelay"},
		{func(c *Config) { c.MaxBatchDelay = math.Inf(1) }, "MaxBatchDelay"},
		{func(c *Config) { c.ReadyAt = math.NaN() }, "ReadyAt"},
		{func(c *Config) { c.ComputeShare = 1.5 }, "ComputeShare"},
		{func(c *Config) { c.ComputeShare = -0.1 }, "ComputeShare"},
	}
	for _, c := range cases {
		cfg := base
		c.mod(&cfg)
		_, err := NewServer(cfg)
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("NewServer with bad %s: err = %v", c.field, err)
		}
	}
	if _, err := NewServer(base); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

func TestSingleRequestLowLoad(t *testing.T) {
	s := newServer(t, nil)
	s.Submit(1.0)
	if got := s.Advance(1.004); len(got) != 0 {
		t.Fatalf("batch started before MaxBatchDelay: %v", got)
	}
	if n := s.Outstanding(1.004); n != 1 {
		t.Fatalf("Outstanding = %d, want 1", n)
	}
	got := s.Advance(2)
	if len(got) != 1 {
		t.Fatalf("completions = %v", got)
	}
	// Waits MaxBatchDelay (5 ms), then runs BatchLatency (11.5 ms): 16.5 ms.
	if c := got[0]; c.Arrival != 1.0 || !near(c.Done, 1.0+delay+lat) {
		t.Fatalf("completion = %+v, want done %v", c, 1.0+delay+lat)
	}
	if n := s.Outstanding(2); n != 0 {
		t.Fatalf("Outstanding after = %d", n)
	}
}

func TestPartialBatchCollectsArrivalsWithinDelay(t *testing.T) {
	s := newServer(t, nil)
	for _, a := range []float64{0, 0.001, 0.002, 0.006} {
		s.Submit(a)
	}
	got := s.Advance(1)
	// Batch 1 at 0.005 with the three arrivals <= 0.005, done 0.0165.
	// Batch 2: server free at 0.0165, deadline 0.011 -> starts 0.0165, done 0.028.
	want := []Completion{{Arrival: 0, Done: 0.0165}, {Arrival: 0.001, Done: 0.0165}, {Arrival: 0.002, Done: 0.0165}, {Arrival: 0.006, Done: 0.028}}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i].Arrival != want[i].Arrival || !near(got[i].Done, want[i].Done) {
			t.Fatalf("completion %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestFullBatchStartsImmediately(t *testing.T) {
	s := newServer(t, nil)
	for range 8 {
		s.Submit(1.0)
	}
	got := s.Advance(1.0)
	if len(got) != 8 {
		t.Fatalf("%d completions at arrival time, want 8", len(got))
	}
	for _, c := range got {
		if !near(c.Done-c.Arrival, lat) {
			t.Fatalf("latency %v, want %v", c.Done-c.Arrival, lat)
		}
	}
	// The b-th arrival triggers the batch before the timeout.
	s2 := newServer(t, func(c *Config) { c.BatchSize = 4 })
	for _, a := range []float64{0, 0.001, 0.002, 0.003} {
		s2.Submit(a)
	}
	got = s2.Advance(0.003)
	if len(got) != 4 || !near(got[0].Done, 0.003+lat) {
		t.Fatalf("b-th arrival trigger: %v", got)
	}
}

func TestOverloadQueues(t *testing.T) {
	s := newServer(t, nil)
	for range 24 {
		s.Submit(0)
	}
	if n := s.Outstanding(0); n != 24 {
		t.Fatalf("Outstanding(0) = %d, want 24", n)
	}
	// After the first batch the second is in service and 8 remain queued.
	if n := s.Outstanding(lat + 1e-6); n != 16 {
		t.Fatalf("Outstanding(L) = %d, want 16", n)
	}
	got := append(s.Advance(lat+1e-6), s.Advance(1)...)
	if len(got) != 24 {
		t.Fatalf("%d completions", len(got))
	}
	// Latency grows by BatchLatency per b queued requests: L, 2L, 3L.
	for i, c := range got {
		want := float64(i/8+1) * lat
		if !near(c.Done-c.Arrival, want) {
			t.Fatalf("request %d latency %v, want %v", i, c.Done-c.Arrival, want)
		}
	}
}

func TestFactorStretchesBatches(t *testing.T) {
	s := newServer(t, nil)
	s.SetFactor(1.5)
	for range 16 {
		s.Submit(0)
	}
	first := s.Advance(0)
	if len(first) != 8 || !near(first[0].Done, 1.5*lat) {
		t.Fatalf("first batch %v, want done %v", first, 1.5*lat)
	}
	// The factor applies to batches starting after this point only.
	s.SetFactor(1)
	second := s.Advance(1)
	if len(second) != 8 || !near(second[0].Done, 2.5*lat) {
		t.Fatalf("second batch %v, want done %v", second, 2.5*lat)
	}
	if !near(s.BusyTime(0, 1), 2.5*lat) {
		t.Fatalf("BusyTime = %v", s.BusyTime(0, 1))
	}
	for _, f := range []float64{0.5, math.NaN(), math.Inf(1)} {
		s.SetFactor(f)
		if s.Factor() != 1 {
			t.Fatalf("SetFactor(%v) -> %v, want 1", f, s.Factor())
		}
	}
}

func TestReadyGating(t *testing.T) {
	s := newServer(t, func(c *Config) { c.ReadyAt = 10 })
	if s.Ready(9.99) || !s.Ready(10) {
		t.Fatal("Ready gating wrong")
	}
	r := NewRouter(1)
	if got := r.Pick(5, []*Server{s}); got != nil {
		t.Fatal("Pick returned a server that is not ready")
	}
	if got := r.Pick(10, []*Server{s, nil}); got != s {
		t.Fatal("Pick did not return the only ready server")
	}
	// A request submitted early waits for ReadyAt.
	s.Submit(5)
	got := s.Drain()
	if len(got) != 1 || !near(got[0].Done, 10+lat) {
		t.Fatalf("early request %v, want done %v", got, 10+lat)
	}
}

func TestBusyTime(t *testing.T) {
	s := newServer(t, nil)
	s.Submit(1.0) // batch [1.005, 1.0165)
	s.Submit(2.0) // batch [2.005, 2.0165)
	s.Advance(3)
	cases := []struct{ from, to, want float64 }{
		{0, 3, 2 * lat},
		{0, 1.005, 0},
		{1.01, 3, 1.0165 - 1.01 + lat},
		{0, 1.01, 0.005},
		{1.01, 2.01, 1.0165 - 1.01 + 0.005},
		{1.0165, 2.005, 0},
		{1.006, 1.007, 0.001},
		{3, 2, 0},
	}
	for _, c := range cases {
		if got := s.BusyTime(c.from, c.to); !near(got, c.want) {
			t.Errorf("BusyTime(%v,%v) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
}

func TestDrain(t *testing.T) {
	s := newServer(t, nil)
	for range 10 {
		s.Submit(0)
	}
	s.Submit(0.001)
	first := s.Advance(0) // full batch of 8 at 0
	if len(first) != 8 {
		t.Fatalf("first = %d", len(first))
	}
	got := s.Drain()
	// Remaining 3 start when the GPU frees at L (deadline 0.005 < L).
	if len(got) != 3 || !near(got[0].Done, 2*lat) || got[2].Arrival != 0.001 {
		t.Fatalf("drain = %v", got)
	}
	if s.Outstanding(1) != 0 || len(s.Drain()) != 0 || s.Served() != 11 || s.Submitted() != 11 {
		t.Fatal("state after drain")
	}
}

func TestRouterPrefersLessLoaded(t *testing.T) {
	busy := newServer(t, func(c *Config) { c.Name = "busy" })
	idle := newServer(t, func(c *Config) { c.Name = "idle" })
	for range 16 {
		busy.Submit(0)
	}
	r := NewRouter(42)
	for i := range 100 {
		if got := r.Pick(0, []*Server{busy, idle}); got != idle {
			t.Fatalf("pick %d chose %s", i, got.Name())
		}
	}
	// With three servers the loaded one is never picked while the others are empty.
	other := newServer(t, func(c *Config) { c.Name = "other" })
	counts := map[string]int{}
	for range 1000 {
		counts[r.Pick(0, []*Server{busy, idle, other}).Name()]++
	}
	if counts["busy"] != 0 || counts["idle"] < 400 || counts["other"] < 400 {
		t.Fatalf("counts = %v", counts)
	}
	if r.Pick(0, nil) != nil {
		t.Fatal("Pick with no servers")
	}
}

func TestRouterSendsMoreToFaster(t *testing.T) {
	fast := newServer(t, func(c *Config) { c.Name = "v100"; c.BatchLatency = 0.006 })
	slow := newServer(t, func(c *Config) { c.Name = "t4"; c.BatchLatency = 0.0115 })
	servers := []*Server{fast, slow}
	r := NewRouter(7)
	arr := PoissonArrivals(rand.New(rand.NewPCG(1, 2)), 10000, 0, 10) // 1000 req/s
	for _, a := range arr {
		r.Pick(a, servers).Submit(a)
	}
	f, s := fast.Submitted(), slow.Submitted()
	if f <= s {
		t.Fatalf("fast got %d, slow got %d", f, s)
	}
}

func TestSaturatedThroughput(t *testing.T) {
	s := newServer(t, nil) // b=8, 11.5 ms
	const n = 8000
	got := drainAll(t, s, n)
	tput := n / got[n-1].Done
	if math.Abs(tput-8/lat) > 0.01 {
		t.Fatalf("throughput %v req/s, want %v", tput, 8/lat)
	}

	// Open-loop Poisson overload (2000 req/s offered): served rate ~ 696 req/s.
	s = newServer(t, nil)
	arr := PoissonArrivals(rand.New(rand.NewPCG(3, 4)), 20000, 0, 10)
	var done []Completion
	for i, a := range arr {
		s.Submit(a)
		if i%100 == 0 {
			done = append(done, s.Advance(a)...)
		}
	}
	done = append(done, s.Advance(10)...)
	cnt := 0
	for _, c := range done {
		if c.Done >= 2 && c.Done < 10 {
			cnt++
		}
	}
	tput = float64(cnt) / 8
	if math.Abs(tput-8/lat)/(8/lat) > 0.01 {
		t.Fatalf("Poisson saturated throughput %v req/s, want ~%v", tput, 8/lat)
	}
	if s.BusyTime(2, 10) < 7.99 {
		t.Fatalf("saturated BusyTime = %v", s.BusyTime(2, 10))
	}
	t.Logf("saturated throughput %.1f req/s (b/L = %.1f)", tput, 8/lat)
}

func TestPoissonArrivals(t *testing.T) {
	a := PoissonArrivals(rand.New(rand.NewPCG(9, 9)), 10000, 5, 15)
	b := PoissonArrivals(rand.New(rand.NewPCG(9, 9)), 10000, 5, 15)
	if len(a) != 10000 {
		t.Fatalf("len %d", len(a))
	}
	sum := 0.0
	for i, x := range a {
		if x < 5 || x >= 15 || (i > 0 && x < a[i-1]) || x != b[i] {
			t.Fatalf("bad arrival %d: %v", i, x)
		}
		sum += x
	}
	if mean := sum / 10000; math.Abs(mean-10) > 0.1 {
		t.Fatalf("mean %v, want ~10", mean)
	}
	if PoissonArrivals(nil, 0, 0, 1) != nil || PoissonArrivals(nil, 3, math.NaN(), 1) != nil {
		t.Fatal("degenerate inputs")
	}
	if got := PoissonArrivals(nil, 2, 3, 3); len(got) != 2 || got[0] != 3 {
		t.Fatalf("empty interval: %v", got)
	}
	if got := PoissonArrivals(nil, 5, 0, 1); len(got) != 5 {
		t.Fatalf("nil rng: %v", got)
	}
}

func TestNonMonotonicTimeIsClamped(t *testing.T) {
	s := newServer(t, nil)
	s.Advance(5)
	s.Submit(1)          // earlier than 5: treated as arriving at 5
	s.Submit(math.NaN()) // NaN: treated as 5
	got := s.Drain()
	if len(got) != 2 || got[0].Arrival != 5 || !near(got[0].Done, 5+delay+lat) {
		t.Fatalf("got %v", got)
	}
}

func TestFIFOCompaction(t *testing.T) {
	// Keep a standing queue while many requests flow through, so the FIFO
	// head advances without the queue ever emptying.
	s := newServer(t, func(c *Config) { c.BatchSize = 1; c.BatchLatency = 0.001; c.MaxBatchDelay = 0 })
	for range 100 {
		s.Submit(0) // standing queue of ~100
	}
	total := 0
	for i := range 100000 {
		at := float64(i) * 0.001 // 1000 req/s into a 1000 req/s server
		s.Submit(at)
		total += len(s.Advance(at))
	}
	total += len(s.Drain())
	if total != 100100 {
		t.Fatalf("served %d", total)
	}
	if cap(s.q) > 1024 {
		t.Fatalf("queue capacity %d grew unboundedly", cap(s.q))
	}
}

func BenchmarkSubmitAdvance(b *testing.B) {
	s := newServer(b, nil)
	const rate = 600.0 // req/s, 86 % of capacity
	rng := rand.New(rand.NewPCG(1, 1))
	at := 0.0
	served := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		at += rng.ExpFloat64() / rate
		s.Submit(at)
		if i%16 == 0 {
			served += len(s.Advance(at))
		}
	}
	served += len(s.Drain())
	b.StopTimer()
	if served != b.N {
		b.Fatalf("served %d of %d", served, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "requests/s")
}

// TestQueueTimeoutRejects: b=1, 100 ms batches, 150 ms queue timeout. Four
// requests at t=0: #1 runs [0,0.1), #2 [0.1,0.2), #3 would start at 0.2
// after waiting 0.2 s > 0.15 s and is rejected at 0.15, and so is #4; the
// server is then idle.
func TestQueueTimeoutRejects(t *testing.T) {
	s, err := NewServer(Config{Name: "p", Model: "m", BatchSize: 1, BatchLatency: 0.1, QueueTimeout: 0.15})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		s.Submit(0)
	}
	got := s.Advance(1)
	if len(got) != 4 {
		t.Fatalf("%d completions, want 4: %+v", len(got), got)
	}
	want := []Completion{{0, 0.1, false}, {0, 0.2, false}, {0, 0.15, true}, {0, 0.15, true}}
	for i, c := range got {
		if c.Rejected != want[i].Rejected || math.Abs(c.Done-want[i].Done) > 1e-12 {
			t.Errorf("completion %d = %+v, want %+v", i, c, want[i])
		}
	}
	if s.Rejected() != 2 || s.Outstanding(1) != 0 {
		t.Errorf("rejected %d, outstanding %d; want 2, 0", s.Rejected(), s.Outstanding(1))
	}
}

// TestForgetBusyBefore: 100 batches of 10 ms, one every 100 ms. Forgetting
// the first 5 s keeps BusyTime over later windows and frees the history.
func TestForgetBusyBefore(t *testing.T) {
	s, err := NewServer(Config{Name: "p", Model: "m", BatchSize: 1, BatchLatency: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		s.Submit(float64(i) * 0.1)
	}
	s.Advance(10)
	before := s.BusyTime(5.05, 9.5)
	s.ForgetBusyBefore(5)
	if after := s.BusyTime(5.05, 9.5); !near(after, before) || !near(after, 44*0.01) {
		t.Errorf("BusyTime(5.05, 9.5) = %v after forgetting, %v before, want 0.44 (batches 5.1 to 9.4)", after, before)
	}
	if len(s.starts) != 50 || len(s.cum) != 51 {
		t.Errorf("kept %d intervals (%d sums), want 50 (51)", len(s.starts), len(s.cum))
	}
	if b := s.BusyTime(0, 4); b != 0 {
		t.Errorf("BusyTime before the forgotten time = %v, want 0", b)
	}
}

func TestBatchLatenciesBySize(t *testing.T) {
	s, err := NewServer(Config{Name: "r", Model: "resnet50", BatchSize: 3, BatchLatency: 0.003, BatchLatencies: []float64{0.001, 0.002, 0.003}})
	if err != nil {
		t.Fatal(err)
	}
	s.Submit(0) // alone: a batch of 1, 1 ms
	s.Submit(0.0005)
	s.Submit(0.0006) // both wait for the first batch: a batch of 2 at 1 ms, 2 ms
	cs := s.Drain()
	if len(cs) != 3 || cs[0].Done != 0.001 || cs[1].Done != 0.003 || cs[2].Done != 0.003 {
		t.Fatalf("completions %+v, want done at 0.001, 0.003, 0.003", cs)
	}
	if got := s.BusyTime(0, 1); math.Abs(got-0.003) > 1e-12 || s.Batches() != 2 {
		t.Fatalf("busy %g s over %d batches, want 0.003 s over 2", got, s.Batches())
	}
	for _, bad := range [][]float64{{0.001, 0.002}, {0.001, 0, 0.003}} {
		_, err := NewServer(Config{Name: "r", Model: "m", BatchSize: 3, BatchLatency: 0.003, BatchLatencies: bad})
		if err == nil || !strings.Contains(err.Error(), "BatchLatencies") {
			t.Errorf("BatchLatencies %v: %v, want an error naming BatchLatencies", bad, err)
		}
	}
}

// TestBatchFactorsBySize: SetBatchFactors stretches each batch by its
// size's factor and SetFactor goes back to one factor for all; SoloWork
// sums the batches' solo latencies before any factor. A list of the wrong
// length is refused, naming the server, and changes nothing.
func TestBatchFactorsBySize(t *testing.T) {
	s, err := NewServer(Config{Name: "r", Model: "resnet50", BatchSize: 2, BatchLatency: 0.002, BatchLatencies: []float64{0.001, 0.002}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetBatchFactors([]float64{3, 1.5}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetBatchFactors([]float64{9}); err == nil || !strings.Contains(err.Error(), "r:") {
		t.Errorf("SetBatchFactors of 1 factor for 2 sizes: %v, want an error naming server r", err)
	}
	s.Submit(0) // a batch of 1: 1 ms x 3
	s.Submit(0.001)
	s.Submit(0.001) // wait for it, then a batch of 2: 2 ms x 1.5
	cs := s.Advance(0.0031)
	if len(cs) != 3 || !near(cs[0].Done, 0.003) || !near(cs[2].Done, 0.006) {
		t.Fatalf("completions %+v, want done at 0.003 and 0.006", cs)
	}
	if s.Factor() != 1.5 || s.BatchFactor(1) != 3 {
		t.Errorf("Factor %v, BatchFactor(1) %v; want 1.5 (a full batch's) and 3", s.Factor(), s.BatchFactor(1))
	}
	s.SetFactor(2)
	s.Submit(0.01) // a batch of 1: 1 ms x 2
	if cs := s.Drain(); len(cs) != 1 || !near(cs[0].Done, 0.012) {
		t.Fatalf("after SetFactor(2): completions %+v, want one done at 0.012", cs)
	}
	if !near(s.SoloWork(), 0.004) || s.Batches() != 3 {
		t.Errorf("SoloWork %v s over %d batches, want 0.004 s over 3", s.SoloWork(), s.Batches())
	}
}

// An SLO that co-location leaves no room for still bounds the queue: a
// request that has waited longer than RT_max allows even alone is rejected,
// never served late after an unbounded backlog (SSD on a T4 at RT_max
// 450 ms: 2 x 106.21 ms solo, 2 x 234 ms inflated 2.2x).
func TestDeadlineQueueTimeoutFallsBackToSolo(t *testing.T) {
	cases := []struct {
		name                         string
		rtMaxMs, soloMs, infl, netMs float64
		want                         float64
	}{
		{"room beside a neighbour", 1000, 100, 2, 10, 0.590},
		{"room only alone", 450, 106.21, 2.2, 10, 0.22758},
		{"no room even alone", 200, 100, 2, 10, 0},
	}
	for _, c := range cases {
		got := DeadlineQueueTimeout(c.rtMaxMs, c.soloMs, c.infl, c.netMs)
		if math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: timeout %.5f s, want %.5f", c.name, got, c.want)
		}
	}
}

// TestComputeShareCapsThroughput: with ComputeShare 0.25 a saturated
// server (b = 8, 11.5 ms) starts a batch every 46 ms, a quarter of its
// uncapped 695.7 requests/s, while a lone request still runs in 11.5 ms.
func TestComputeShareCapsThroughput(t *testing.T) {
	s := newServer(t, func(c *Config) { c.ComputeShare = 0.25 })
	const n = 8000
	got := drainAll(t, s, n)
	if tput, want := n/got[n-1].Done, 0.25*8/lat; math.Abs(tput-want)/want > 0.01 {
		t.Fatalf("capped throughput %v req/s, want %v", tput, want)
	}
	s = newServer(t, func(c *Config) { c.ComputeShare = 0.25; c.MaxBatchDelay = 0 })
	s.Submit(1)
	if got := s.Advance(2); len(got) != 1 || !near(got[0].Done, 1+lat) {
		t.Fatalf("lone request under the cap: %+v, want done at %v", got, 1+lat)
	}
}

// drainAll submits n requests at time 0 to s, drains it and fails the test
// unless every one completed.
func drainAll(t *testing.T, s *Server, n int) []Completion {
	t.Helper()
	for range n {
		s.Submit(0)
	}
	got := s.Drain()
	if len(got) != n {
		t.Fatalf("%d completions, want %d", len(got), n)
	}
	return got
}
