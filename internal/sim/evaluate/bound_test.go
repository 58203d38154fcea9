package evaluate

import (
	"math"
	"strings"
	"testing"

	"github.com/hetsev/hetsev/pkg/heterogeneity"
)

// t4ResNetLatency is the least ResNet-50 batch latency on a T4, s: its
// batch of 1 (data/profiles/small_batches.csv; the profile's batch of 8
// takes 22.41 ms). t4ResNetBatch is the largest batch, the profile's, and
// t4ResNetTput the throughput that gives the least GPU time per request:
// the batch of 8's 363 requests/s (batches of 1, 2 and 4 serve 98, 186
// and 325).
const (
	t4ResNetLatency = 0.0107
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
// least one T4 batch of 1, 0.526 USD/h / 3600 x 0.0107 s (G = 1 under
// time-slicing) = 1.563e-6 USD: 1.251e-5 USD and 8 x 0.0107 / 3600
// T4-hours. The fluid bound charges the 8 answered requests a full
// batch's share, 8 x 0.526 / 3600 / 363 = 3.22e-6 USD: 3.9 times less.
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
	if got.CostUSD < fluid {
		t.Errorf("bound %v USD, not above the fluid bound's %v", got.CostUSD, fluid)
	}
	if d := allowedDrops(0.98, 1000); d != 20 {
		t.Errorf("SL_min 0.98 of 1000 requests allows %d drops, want 20", d)
	}
}

// TestBoundCheckCountsBatches: the service of TestBoundCountsBatches, 10
// batches, under a policy that answered 9 of its 10 requests: at least
// 10 - 1 = 9 batches, 9 x 1.563e-6 = 1.407e-5 USD. One billed 1.4e-5 USD
// is refused (the fluid argument alone asks 9 x 4.03e-7 = 3.6e-6 USD of
// it); one billed 1.5e-5 USD passes.
func TestBoundCheckCountsBatches(t *testing.T) {
	cfg := boundConfig(t)
	bound, terms, err := lowerBound(cfg, []int64{10}, []int64{10})
	if err != nil {
		t.Fatal(err)
	}
	svc := []ServiceResult{{Service: "r", Requests: 10, WithinSLO: 9}}
	least := 9 * t4Price / 3600 * t4ResNetLatency
	fair := PolicyResult{Policy: "fair", CostUSD: 1.5e-5, Services: svc}
	if err := checkBound(RunResult{Name: "x", Policies: []PolicyResult{bound, fair}}, bound, terms); err != nil {
		t.Errorf("a policy above its %v USD refused: %v", least, err)
	}
	cheat := PolicyResult{Policy: "too-cheap", CostUSD: 1.4e-5, Services: svc}
	err = checkBound(RunResult{Name: "x", Policies: []PolicyResult{bound, cheat}}, bound, terms)
	if err == nil || !strings.Contains(err.Error(), "too-cheap") || !strings.Contains(err.Error(), "1.4e-05 USD, below the 1.40705e-05 USD") {
		t.Errorf("a policy billed 1.4e-5 USD for %v USD of batches: err %v, want one naming too-cheap", least, err)
	}
}

// TestBoundLightService: ResNet-50 at 2 requests/s on T4s for 900 s, R
// about 1,800 requests, RT_max 400 ms: w = 400 - 1 - 10.7 ms = 0.388 s
// (the T4's batch of 1 is its fastest). A Poisson arrival finds the next
// within w with chance 1 - e^(-2 x 0.388) = 0.54, so the greedy batches
// hold about 1.5 requests: the batch term (about R / 1.5 batches less
// 0.02 R drops, each at least a 10.7 ms T4 batch) is about 2.5 times the
// fluid one (0.98 R / 363 T4-seconds).
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
	if math.Abs(req-1800) > 150 || b.CostUSD < 2*fluid || math.Abs(batches-math.Round(batches)) > 1e-6 || batches > req {
		t.Errorf("bound %v USD for %v requests (%v batches); want about 1800 requests, at least 2 x the fluid %v USD, a whole number of batches", b.CostUSD, req, batches, fluid)
	}
	if ex.CostUSD < b.CostUSD {
		t.Errorf("hetsev-exact %v USD, below the bound's %v", ex.CostUSD, b.CostUSD)
	}
}

// tightBERT is BERT-large at RT_max 114 ms on 4 T4s and 4 V100s with
// hetsev's flavors: the T4's batch of 8 (114.5 ms) does not fit RT_max,
// its measured batch of 1 (14.4 ms, data/profiles/small_batches.csv)
// does, and the T4's light columns run at it.
func tightBERT(t *testing.T, rps float64) *Config {
	t.Helper()
	cluster := []NodeGroup{{GPUType: "T4", Nodes: 1, GPUsPerNode: 4, CPUMilli: 64000, MemoryMiB: 256 * 1024},
		{GPUType: "V100-32GB", Nodes: 1, GPUsPerNode: 4, CPUMilli: 64000, MemoryMiB: 256 * 1024}}
	cfg, err := Base("test", "test", constant(rps, 600), cluster, Service{Name: "b", Model: "bert-large", Share: 1, RTMaxMs: 114})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Flavors = heterogeneity.DefaultFlavors
	cfg.defaultSharing()
	return &cfg
}

// TestBoundTermsUseSmallBatches: the bound's terms take each type's least
// latency and least GPU time per request over the batches its servers can
// run. For tightBERT the T4 is feasible (1 + 14.4 <= 114 ms); the window
// is 114 - 1 - 8 ms = 105 ms (the V100's batch of 1 takes 8 ms), the cap
// the batch of 8; the least cost of a batch is a T4 batch of 1, 0.526
// USD/h x 14.4 ms (G = 1), 4 times less than the V100's batch of 1,
// 3.9015 USD/h x 8 ms, and 20 times less than its batch of 8, 3.9015
// USD/h x 38.3 ms; the least per request is
// the T4's batch of 8, 114.5 ms / 8 (T 69.3 < 8 / 0.1145 = 69.9
// requests/s), below its batch of 1's 1 / 69.4 s.
func TestBoundTermsUseSmallBatches(t *testing.T) {
	cfg := tightBERT(t, 1)
	w, b, ok := batchLimits(cfg, cfg.Services[0])
	if !ok || math.Abs(w-(0.113-0.008)) > 1e-12 || b != 8 {
		t.Errorf("window %v s, cap %d (ok %v); want 0.105 s, 8", w, b, ok)
	}
	_, terms, err := lowerBound(cfg, []int64{100}, []int64{100})
	if err != nil {
		t.Fatal(err)
	}
	tm := terms[0]
	if want := t4Price / 3600 * 0.0144; tm.perBatchType != "T4" || !near(tm.perBatch, want) || !near(tm.perBatchSecs, 0.0144) {
		t.Errorf("per batch %v USD on %s (%v s); want %v USD on T4, its batch of 1 (0.0144 s)", tm.perBatch, tm.perBatchType, tm.perBatchSecs, want)
	}
	if want := t4Price / 3600 * 0.1145 / 8; tm.perRequestType != "T4" || !near(tm.perRequest, want) || !near(tm.perRequestSecs, 0.1145/8) {
		t.Errorf("per request %v USD on %s (%v s); want %v USD on T4 (0.1145 / 8 s)", tm.perRequest, tm.perRequestType, tm.perRequestSecs, want)
	}
}

// TestBoundBelowSmallBatchSchedule: tightBERT at 10 requests/s for 600 s.
// hetsev-exact serves it on a light T4 column at batch 1 within every
// SLO, billed one T4 for the 600 s (0.0877 USD). Taking every batch at
// the profile's batch of 8 would exclude the T4 and price each batch as a
// V100's 38.3 ms: about 0.15 USD, above that feasible schedule. The bound
// is below it, and Evaluate's checkBound passes it.
func TestBoundBelowSmallBatchSchedule(t *testing.T) {
	cfg := tightBERT(t, 10)
	cfg.Policies = []string{PolicyExact, PolicyBound}
	r, err := Evaluate(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	ex, _ := r.Policy(PolicyExact)
	b, _ := r.Policy(PolicyBound)
	s := ex.Services[0]
	if float64(s.WithinSLO) < 0.98*float64(s.Requests) || ex.GPUHours["T4"] == 0 {
		t.Fatalf("hetsev-exact answered %d of %d within RT_max on %v GPU-hours; want 98 %% on T4s", s.WithinSLO, s.Requests, ex.GPUHours)
	}
	if ex.CostUSD < b.CostUSD || b.GPUHours["T4"] == 0 {
		t.Errorf("hetsev-exact %v USD, bound %v USD on %v GPU-hours; want the bound below, on T4s", ex.CostUSD, b.CostUSD, b.GPUHours)
	}
}
