package evaluate

import (
	"math"
	"strings"
	"testing"
)

// t4ResNetLatency is the ResNet-50 batch latency on a T4, s, and its
// batch size and throughput (data/profiles).
const (
	t4ResNetLatency = 0.02241
	t4ResNetBatch   = 8
	t4ResNetTput    = 363.0
)

// boundConfig is one ResNet-50 service on T4s whose RT_max leaves a batch
// window w = RT_max - network (1 ms) - L = 0.5 s, at SL_min 0.8.
func boundConfig(t *testing.T) *Config {
	t.Helper()
	svc := Service{Name: "r", Model: "resnet50", Share: 1, RTMaxMs: 1 + 1000*t4ResNetLatency + 500, SLMin: 0.8}
	cfg, err := Base("test", "test", constant(0, 400), t4Only(4), svc)
	if err != nil {
		t.Fatal(err)
	}
	cfg.defaultSharing()
	return &cfg
}

// TestBoundCountsBatches: 10 requests each 1 s apart, window w = 0.5 s:
// no two share a batch, 10 batches. SL_min 0.8 lets a policy fail
// floor(0.2 x 10) = 2, each saving at most one batch: 8 batches, each at
// least one T4 batch, 0.526 USD/h / 3600 x 0.02241 s (G = 1 under
// time-slicing) = 3.274e-6 USD: 2.619e-5 USD and 8 x 0.02241 / 3600
// T4-hours. The fluid bound charges the 8 answered requests a full
// batch's share, 8 x 0.526 / 3600 / 363 = 3.22e-6 USD: 8.1 times less.
func TestBoundCountsBatches(t *testing.T) {
	cfg := boundConfig(t)
	w, b, ok := batchLimits(cfg, cfg.Services[0])
	if !ok || math.Abs(w-0.5) > 1e-12 || b != t4ResNetBatch {
		t.Fatalf("window %v s, cap %d (ok %v); want 0.5 s, 8", w, b, ok)
	}
	c := newBatchCounter(w, b, float64(cfg.MeasureFrom))
	for k := range 10 {
		c.add([]float64{float64(cfg.MeasureFrom + k)})
	}
	if c.batches != 10 || c.arrivals != 10 {
		t.Fatalf("%d batches of %d arrivals, want 10 of 10", c.batches, c.arrivals)
	}
	got, _, err := lowerBound(cfg, []int64{c.arrivals}, []int64{c.batches})
	if err != nil {
		t.Fatal(err)
	}
	perBatch := t4Price / 3600 * t4ResNetLatency
	fluid := 8 * t4Price / 3600 / t4ResNetTput
	if want := 8 * perBatch; !near(got.CostUSD, want) || !near(got.GPUHours["T4"], 8*t4ResNetLatency/3600) || got.SharingGain != 1 {
		t.Errorf("bound %v USD, %v T4-hours, G %v; want 8 batches: %v USD, %v T4-hours, G 1", got.CostUSD, got.GPUHours["T4"], got.SharingGain, want, 8*t4ResNetLatency/3600)
	}
	if got.CostUSD < 8*fluid {
		t.Errorf("bound %v USD, not above the fluid bound's %v", got.CostUSD, fluid)
	}
	if d := allowedDrops(0.98, 1000); d != 20 {
		t.Errorf("SL_min 0.98 of 1000 requests allows %d drops, want 20", d)
	}
}

// TestBoundCheckCountsBatches: the service of TestBoundCountsBatches, 10
// batches, under a policy that answered 9 of its 10 requests: at least
// 10 - 1 = 9 batches, 9 x 3.274e-6 = 2.947e-5 USD. One billed 2.9e-5 USD
// is refused (the fluid argument alone asks 9 x 4.03e-7 = 3.6e-6 USD of
// it); one billed 3.0e-5 USD passes.
func TestBoundCheckCountsBatches(t *testing.T) {
	cfg := boundConfig(t)
	bound, terms, err := lowerBound(cfg, []int64{10}, []int64{10})
	if err != nil {
		t.Fatal(err)
	}
	svc := []ServiceResult{{Service: "r", Requests: 10, WithinSLO: 9}}
	least := 9 * t4Price / 3600 * t4ResNetLatency
	fair := PolicyResult{Policy: "fair", CostUSD: 3.0e-5, Services: svc}
	if err := checkBound(RunResult{Name: "x", Policies: []PolicyResult{bound, fair}}, bound, terms); err != nil {
		t.Errorf("a policy above its %v USD refused: %v", least, err)
	}
	cheat := PolicyResult{Policy: "too-cheap", CostUSD: 2.9e-5, Services: svc}
	err = checkBound(RunResult{Name: "x", Policies: []PolicyResult{bound, cheat}}, bound, terms)
	if err == nil || !strings.Contains(err.Error(), "too-cheap") || !strings.Contains(err.Error(), "2.9e-05 USD, below the 2.94692e-05 USD") {
		t.Errorf("a policy billed 2.9e-5 USD for %v USD of batches: err %v, want one naming too-cheap", least, err)
	}
}

// TestBoundLightService: ResNet-50 at 2 requests/s on T4s for 900 s, R
// about 1,800 requests, RT_max 400 ms: w = 400 - 1 - 22.41 ms = 0.377 s.
// A Poisson arrival finds the next within w with chance 1 - e^(-2 x
// 0.377) = 0.53, so the greedy batches hold about 1.5 requests: the
// batch term (about R / 1.5 batches less 0.02 R drops, each a 22.41 ms
// T4 batch) is about 5 times the fluid one (0.98 R / 363 T4-seconds).
// hetsev-exact, replayed on the same arrivals, costs more than the bound
// (Evaluate's checkBound would fail the run otherwise), and the bound's
// T4-hours are its batches x L.
func TestBoundLightService(t *testing.T) {
	svc := Service{Name: "r", Model: "resnet50", Share: 1, RTMaxMs: 400}
	cfg, err := Base("test", "test", constant(2, 900), t4Only(4), svc)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Policies = []string{PolicyExact, PolicyBound}
	r, err := Evaluate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ex, _ := r.Policy(PolicyExact)
	b, _ := r.Policy(PolicyBound)
	req := float64(b.Services[0].Requests)
	fluid := 0.98 * req * t4Price / 3600 / t4ResNetTput
	batches := b.GPUHours["T4"] * 3600 / t4ResNetLatency
	if math.Abs(req-1800) > 150 || b.CostUSD < 4*fluid || math.Abs(batches-math.Round(batches)) > 1e-6 || batches > req {
		t.Errorf("bound %v USD for %v requests (%v batches); want about 1800 requests, at least 4 x the fluid %v USD, a whole number of batches", b.CostUSD, req, batches, fluid)
	}
	if ex.CostUSD < b.CostUSD {
		t.Errorf("hetsev-exact %v USD, below the bound's %v", ex.CostUSD, b.CostUSD)
	}
}
