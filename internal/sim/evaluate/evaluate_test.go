package evaluate

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hetsev/hetsev/internal/sim/trace"
)

// T4 price from data/profiles/gpu_catalog.csv, USD/h.
const t4Price = 0.526

func constant(rps float64, seconds int) trace.Rates {
	r := make(trace.Rates, seconds)
	for i := range r {
		r[i] = rps
	}
	return r
}

// t4Only is one server with gpus T4 GPUs.
func t4Only(gpus int) []NodeGroup {
	return []NodeGroup{{GPUType: "T4", Nodes: 1, GPUsPerNode: gpus, CPUMilli: 64000, MemoryMiB: 256 * 1024}}
}

func run(t *testing.T, rates trace.Rates, cluster []NodeGroup, policy string, services ...Service) PolicyResult {
	t.Helper()
	cfg, err := Base("test", "test", rates, cluster, services...)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Policies = []string{policy}
	r, err := Evaluate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r.Policies[0]
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestSharedGPUCost: no load, one T4 for an hour, hetsev keeps one instance
// of each service and both share the only GPU (each may keep it busy 0.3
// of the time: spec.scaling.busyShare). Billed: 0.526 USD, split by
// GPU memory (resnet50 2048 MiB, ssd 3072 MiB): 0.2104 and 0.3156. Memory
// cost (HetSev 6.3): 0.526 x 2048/16384 = 0.06575 and 0.526 x 3072/16384 =
// 0.098625.
func TestSharedGPUCost(t *testing.T) {
	svcs := DemoServices()
	for i := range svcs {
		svcs[i].BusyShare = 0.3
	}
	p := run(t, constant(0, 3600), t4Only(1), PolicyExact, svcs...)
	if !near(p.CostUSD, t4Price) || !near(p.GPUHours["T4"], 1) || p.PeakGPUs["T4"] != 1 {
		t.Errorf("billed %v USD, %v GPU-h, peak %d GPUs; want 0.526, 1, 1", p.CostUSD, p.GPUHours["T4"], p.PeakGPUs["T4"])
	}
	want := map[string][2]float64{"resnet50": {0.2104, 0.06575}, "ssd": {0.3156, 0.098625}}
	for _, s := range p.Services {
		w := want[s.Service]
		if !near(s.CostUSD, w[0]) || !near(s.MemoryCostUSD, w[1]) || s.Requests != 0 || s.Unplaced != 0 {
			t.Errorf("%s: billed %v, memory %v, %d requests, %d unplaced; want %v, %v, 0, 0", s.Service, s.CostUSD, s.MemoryCostUSD, s.Requests, s.Unplaced, w[0], w[1])
		}
	}
	if !near(p.MemoryCostUSD, 0.06575+0.098625) {
		t.Errorf("memory cost %v, want %v", p.MemoryCostUSD, 0.06575+0.098625)
	}
}

// TestWholeGPUCost: default Kubernetes gives each of the two idle services
// a T4 of its own: 2 GPU-hours, 1.052 USD billed, and the memory cost
// equals the billed cost (a whole GPU's memory). With one GPU the second
// service's instance is unplaced.
func TestWholeGPUCost(t *testing.T) {
	p := run(t, constant(0, 3600), t4Only(2), PolicyDefault, DemoServices()...)
	if !near(p.CostUSD, 2*t4Price) || !near(p.MemoryCostUSD, 2*t4Price) || p.PeakGPUs["T4"] != 2 {
		t.Errorf("billed %v, memory %v, peak %d; want 1.052, 1.052, 2", p.CostUSD, p.MemoryCostUSD, p.PeakGPUs["T4"])
	}
	p = run(t, constant(0, 3600), t4Only(1), PolicyDefault, DemoServices()...)
	if !near(p.CostUSD, t4Price) || p.Services[1].Unplaced == 0 || p.Services[1].CostUSD != 0 {
		t.Errorf("one GPU: billed %v, ssd unplaced %d and billed %v; want 0.526, > 0, 0", p.CostUSD, p.Services[1].Unplaced, p.Services[1].CostUSD)
	}
}

// TestSLOAttainmentCounts: 10 requests/s for 100 s is exactly 1,000
// requests. A ResNet-50 batch on a T4 takes 22.41 ms, plus at most 5 ms of
// batching and 1 ms of network, so with RT_max 1000 ms every request is in
// time, and with RT_max 10 ms none is.
func TestSLOAttainmentCounts(t *testing.T) {
	for _, c := range []struct {
		rtMax  float64
		within int64
	}{{1000, 1000}, {10, 0}} {
		p := run(t, constant(10, 100), t4Only(1), PolicyHeuristic, Service{Name: "r", Model: "resnet50", Share: 1, RTMaxMs: c.rtMax})
		s := p.Services[0]
		if s.Requests != 1000 || s.WithinSLO != c.within || !near(s.SLOAttainment, float64(c.within)/1000) {
			t.Errorf("RT_max %v ms: %d requests, %d within (attainment %v); want 1000, %d", c.rtMax, s.Requests, s.WithinSLO, s.SLOAttainment, c.within)
		}
		if s.Decisions != 100/15+1 {
			t.Errorf("RT_max %v ms: %d decisions, want %d (one per 15 s)", c.rtMax, s.Decisions, 100/15+1)
		}
	}
}

// TestBoundAndHPASizing: ResNet-50 at 600 requests/s on T4s (363
// requests/s each) for an hour.
//   - lower bound: capacity 600/0.8 = 750 requests/s needs ceil(750/363) =
//     3 instances from second 0, one per GPU (anti-affinity): 3 GPU-hours,
//     1.578 USD billed, memory cost 3 x 0.526 x 2048/16384 = 0.19725 USD.
//   - default Kubernetes: the HPA's target is 0.8 x 363 = 290.4 requests/s
//     per pod; its first decision sets ceil(1 x 600/290.4) = 3 replicas,
//     then 600/3 = 200 per pod gives ceil(3 x 0.689) = 3 again: one scaling
//     action, 3 whole GPUs for the hour (billed while launching): 1.578 USD
//     billed and as memory cost.
func TestBoundAndHPASizing(t *testing.T) {
	svc := Service{Name: "r", Model: "resnet50", Share: 1, RTMaxMs: 400}
	b := run(t, constant(600, 3600), t4Only(4), PolicyBound, svc)
	if !near(b.CostUSD, 3*t4Price) || !near(b.MemoryCostUSD, 3*t4Price*2048/16384) || b.PeakGPUs["T4"] != 3 {
		t.Errorf("bound: billed %v, memory %v, peak %d GPUs; want 1.578, 0.19725, 3", b.CostUSD, b.MemoryCostUSD, b.PeakGPUs["T4"])
	}
	d := run(t, constant(600, 3600), t4Only(4), PolicyDefault, svc)
	if !near(d.CostUSD, 3*t4Price) || !near(d.MemoryCostUSD, 3*t4Price) || d.ScalingActions != 1 {
		t.Errorf("default: billed %v, memory %v, %d actions; want 1.578, 1.578, 1", d.CostUSD, d.MemoryCostUSD, d.ScalingActions)
	}
}

func TestSummarize(t *testing.T) {
	mk := func(name string, def, exact, bound, att float64) RunResult {
		return RunResult{Name: name, Policies: []PolicyResult{
			{Policy: PolicyDefault, CostUSD: def, MemoryCostUSD: def},
			{Policy: PolicyExact, CostUSD: exact, MemoryCostUSD: exact / 4, LowestSLOAttainment: att},
			{Policy: PolicyBound, CostUSD: bound},
		}}
	}
	// (30 + 6) / (10 + 2) = 3; (10 + 2) / (8 + 2) - 1 = 0.2; lowest 0.97.
	s := Summarize([]RunResult{mk("a", 30, 10, 8, 0.99), mk("b", 6, 2, 2, 0.97)})
	if !near(s.CostRatioVsDefault, 3) || !near(s.GapToBound, 0.2) || s.SLOAttainment != 0.97 || !near(s.MemoryCostRatioVsDefault, 12) {
		t.Errorf("summary %+v", s)
	}
	if got := s.ResultLine(); got != "RESULT cost_ratio_vs_default=3.000 gap_to_bound=0.200 slo_attainment=0.9700" {
		t.Errorf("result line %q", got)
	}
}

// TestSummaryWithoutPolicies: a ratio whose policies did not run is null
// in JSON, not an encoding error.
func TestSummaryWithoutPolicies(t *testing.T) {
	s := Summarize([]RunResult{{Policies: []PolicyResult{{Policy: PolicyExact, CostUSD: 1, LowestSLOAttainment: 0.99}}}})
	b, err := json.Marshal(s)
	if err != nil || !strings.Contains(string(b), `"cost_ratio_vs_default":null`) || !strings.Contains(string(b), `"slo_attainment":0.99`) {
		t.Errorf("json %s, %v", b, err)
	}
}

func TestParseService(t *testing.T) {
	s, err := ParseService("ssd=ssd-resnet50,0.4,900,0.7")
	if err != nil || s != (Service{Name: "ssd", Model: "ssd-resnet50", Share: 0.4, RTMaxMs: 900, SaturationThreshold: 0.7}) {
		t.Errorf("ParseService = %+v, %v", s, err)
	}
	for in, want := range map[string]string{
		"ssd":                      "want NAME=MODEL",
		"ssd=ssd-resnet50,x,900":   `SHARE "x" is not a number`,
		"ssd=ssd-resnet50,0.4":     "want NAME=MODEL",
		"ssd=,0.4,900":             "MODEL is empty",
		"ssd=a,0.4,900,0.7,1":      "want NAME=MODEL",
		"ssd=ssd-resnet50,1,9e9,z": `SATURATION_THRESHOLD "z"`,
	} {
		if _, err := ParseService(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseService(%q) = %v, want an error with %q", in, err, want)
		}
	}
}

// TestWhatIfRejectsBadTraces: each bad trace is refused with its line.
func TestWhatIfRejectsBadTraces(t *testing.T) {
	dir := t.TempDir()
	for body, want := range map[string]string{
		"":           "empty",
		"5\n3\n-1\n": ":3: negative request count",
		"5\nfive\n":  ":2: want a request count",
		"2024-01-01T00:00:02Z\n2024-01-01T00:00:01Z\n": ":2:",
		"hello world\n": ":1:",
	} {
		path := filepath.Join(dir, "trace.txt")
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := WhatIf(path, Preparation{}, t4Only(1), DemoServices(), "", "", "")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("trace %q: err %v, want %q", body, err, want)
		}
	}
}

// TestConfigErrors: invalid configurations name the field.
func TestConfigErrors(t *testing.T) {
	cfg, err := Base("x", "x", constant(1, 10), t4Only(1), Service{Name: "a", Model: "nope", Share: 2, RTMaxMs: 0})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Policies = []string{"magic"}
	_, err = Evaluate(cfg)
	for _, want := range []string{`no profile for model "nope"`, "Share 2 must be in (0, 1]", "RTMaxMs 0", `unknown policy "magic"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

// TestBusyInstancesGetAGPUOfTheirOwn: with the default busy share (1 for
// both demo services: a batching server at the saturation threshold keeps
// its GPU busy) the two hetsev instances cannot share the only T4 under
// the cap of 1 (issue 17: summed throughput does not grow on a
// time-sliced GPU), so the second stays unplaced; memory alone would have
// let them share.
func TestBusyInstancesGetAGPUOfTheirOwn(t *testing.T) {
	p := run(t, constant(0, 600), t4Only(1), PolicyExact, DemoServices()...)
	placed := 0
	for _, s := range p.Services {
		if s.CostUSD > 0 {
			placed++
		}
	}
	if placed != 1 || p.PeakGPUs["T4"] != 1 {
		t.Errorf("%d services placed on %d T4s, want 1 on 1 (the other unplaced)", placed, p.PeakGPUs["T4"])
	}
	p = run(t, constant(0, 600), t4Only(2), PolicyExact, DemoServices()...)
	if p.PeakGPUs["T4"] != 2 {
		t.Errorf("two T4s: %d used, want 2 (one each)", p.PeakGPUs["T4"])
	}
}

// TestAzureCodeBurstsMeetSLO: make evaluate's Azure code trace (BERT-large,
// RT_max 1200 ms, bursts from near idle to 150-300 requests/s within a
// minute, 40 s launch time) is served within RT_max for at least 99.5 % of
// requests by both hetsev policies: the launch-time forecast scales out for
// the load at the time new instances serve, and the stabilized scale-in
// keeps capacity through the lulls between bursts (pkg/heterogeneity
// burst.go). Before them hetsev-exact served 96.45 %, hetsev-heuristic
// 97.87 %, every miss a request rejected by an overloaded server's
// deadline-aware queue.
func TestAzureCodeBurstsMeetSLO(t *testing.T) {
	cfg, err := AzureCode(DefaultOptions().AzurePeak, DefaultOptions().NodesPerType)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Policies = []string{PolicyExact, PolicyHeuristic}
	r, err := Evaluate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.Policies {
		for _, s := range p.Services {
			if s.Requests == 0 || s.SLOAttainment < 0.995 {
				t.Errorf("%s %s: %.4f of %d requests within RT_max, want >= 0.995", p.Policy, s.Service, s.SLOAttainment, s.Requests)
			}
		}
	}
}
