package evaluate

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hetsev/hetsev/pkg/catalog"
)

// TestAzureFunctionsScenario: the multi-tenant replay is the 64 busiest
// functions of the shipped trace, one service each with its own rates over
// the 8 hours, every model of the profiles in use, SLOs by the rule; the
// scale puts the history's total mean load at 32 T4s (half the services)
// and keeps the trace's long tail: most services need far less than one
// GPU, a few several. The cluster, sized on the history's peaks, holds the
// replayed window's highest total load on either type alone.
func TestAzureFunctionsScenario(t *testing.T) {
	c, err := AzureFunctions(FunctionWorkload{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(c.Services) < 48 || len(c.Services) != DefaultFunctionServices {
		t.Fatalf("%d services, want 64 (at least 48)", len(c.Services))
	}
	if len(c.Rates) != 6*3600 {
		t.Fatalf("%d s, want the last 6 h of the 8", len(c.Rates))
	}
	theta := 0.8 // heterogeneity.DefaultPolicy's saturation threshold
	t4 := map[string]float64{"resnet50": 363, "ssd-resnet50": 37.71, "bert-large": 69.3}
	perModel := map[string]int{}
	var far, several int
	gpus, total := 0.0, 0.0
	peakT4 := make([]float64, len(c.Rates))
	for i, s := range c.Services {
		if s.Rates == nil || s.Share != 0 || len(s.Rates) != len(c.Rates) {
			t.Fatalf("%s: share %v, %d s of own rates; want its own rates over the trace", s.Name, s.Share, len(s.Rates))
		}
		if len(s.History) != 2*3600 {
			t.Fatalf("%s: %d s of history, want the first 2 h", s.Name, len(s.History))
		}
		if want := FunctionBusyShare(s.History.Mean(), s.History.Peak(), s.Model, c.Profiles, c.Catalog); s.BusyShare != want {
			t.Errorf("%s: busy share %v, the history's rule gives %v", s.Name, s.BusyShare, want)
		}
		if i > 0 && s.History.Mean() > c.Services[i-1].History.Mean()+1e-9 {
			t.Errorf("%s busier in the history than %s before it", s.Name, c.Services[i-1].Name)
		}
		perModel[s.Model]++
		need := s.Rates.Mean() / (theta * t4[s.Model]) // T4s at the threshold
		gpus += s.History.Mean() / (theta * t4[s.Model])
		total += s.Rates.Mean()
		for k, r := range s.Rates {
			peakT4[k] += r / (theta * t4[s.Model])
		}
		if need < 0.1 {
			far++
		}
		if need >= 3 {
			several++
		}
		rt, sl := FunctionSLO(s.Model, s.Trigger, c.Profiles)
		if s.RTMaxMs != rt || s.SLMin != sl {
			t.Errorf("%s (%s, %s): RT_max %v, SL_min %v; the rule gives %v, %v", s.Name, s.Model, s.Trigger, s.RTMaxMs, s.SLMin, rt, sl)
		}
	}
	if len(perModel) != 3 || perModel["resnet50"] == 0 || perModel["ssd-resnet50"] == 0 || perModel["bert-large"] == 0 {
		t.Errorf("models %v; want all three profiled models", perModel)
	}
	if math.Abs(gpus-32) > 1e-6 {
		t.Errorf("the history's total mean load needs %.3f T4s at the threshold, want 32 (half of 64 services)", gpus)
	}
	if far < len(c.Services)/2 || several < 2 || several > 5 {
		t.Errorf("%d services need < 0.1 T4 and %d need >= 3; want most and a few", far, several)
	}
	if math.Abs(c.Rates.Mean()-total) > 1e-6*total {
		t.Errorf("trace rate %.3f, services' sum %.3f", c.Rates.Mean(), total)
	}
	// The cluster has a T4 for each service and holds the replayed
	// window's highest total load on T4s alone.
	need := 0.0
	for _, d := range peakT4 {
		need = max(need, d)
	}
	for _, g := range c.Cluster {
		if n := g.Nodes * g.GPUsPerNode; g.GPUType == "T4" && (n < len(c.Services) || float64(n) < need) {
			t.Errorf("%d T4s for %d services and a peak need of %.1f T4s", n, len(c.Services), need)
		}
	}
	// Deterministic: the same services again.
	again, err := AzureFunctions(FunctionWorkload{})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range again.Services {
		if s.Name != c.Services[i].Name || s.Model != c.Services[i].Model || s.Rates[1000] != c.Services[i].Rates[1000] {
			t.Fatalf("service %d: %s/%s, then %s/%s", i, c.Services[i].Name, c.Services[i].Model, s.Name, s.Model)
		}
	}
}

// TestFunctionModelRule: FNV-1a 32-bit of "a" is 0xe40c292c = 3826002220,
// 1 modulo 3: the second model; the busiest Azure function's hash gives
// 0xfeacc7ea = 4272736234, 1 modulo 3 too.
func TestFunctionModelRule(t *testing.T) {
	models := []string{"bert-large", "resnet50", "ssd-resnet50"}
	if got := FunctionModel("a", models); got != "resnet50" {
		t.Errorf("model of \"a\" = %s, want resnet50", got)
	}
	if got := FunctionModel("1992918c23cc92244ef4a1efabbf23ab28abe05bf37658eec9af9232d78e0939", models); got != "resnet50" {
		t.Errorf("model of the busiest function = %s, want resnet50", got)
	}
}

// TestFunctionSLORule: base RT_max per model, halved for http with SL_min
// 0.99, doubled for timer, queue and storage, kept for the rest; a model
// without a base gets 10 x its slowest batch latency rounded up to 100 ms.
func TestFunctionSLORule(t *testing.T) {
	prof, err := catalog.DefaultProfiles()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		model, trigger string
		rt, sl         float64
	}{
		{"resnet50", "http", 200, 0.99},
		{"ssd-resnet50", "timer", 1800, 0.98},
		{"bert-large", "queue", 2400, 0.98},
		{"bert-large", "event", 1200, 0.98},
		{"resnet50", "orchestration", 400, 0.98},
	} {
		rt, sl := FunctionSLO(c.model, c.trigger, prof)
		if rt != c.rt || sl != c.sl {
			t.Errorf("%s/%s: RT_max %v, SL_min %v; want %v, %v", c.model, c.trigger, rt, sl, c.rt, c.sl)
		}
	}
	// A model only in a user's profiles: 10 x 114.5 ms = 1145, up to 1200.
	p, err := catalog.LoadProfiles(strings.NewReader("model,gpu_type,batch_size,throughput_rps,latency_ms,source\nmine,T4,8,69.3,114.5,test\n"), "p.csv",
		strings.NewReader("model,gpu_memory_mib,cpu_millicores,memory_mib,launch_seconds,basis\nmine,6144,2000,8192,40,ESTIMATE\n"), "e.csv")
	if err != nil {
		t.Fatal(err)
	}
	if rt, sl := FunctionSLO("mine", "http", p); rt != 600 || sl != 0.99 {
		t.Errorf("own model over http: RT_max %v, SL_min %v; want 600, 0.99", rt, sl)
	}
}

// TestWhatIfFunctions: --functions replays a user's per-function trace by
// the scenario's rules and prints the table and the RESULT line; bad input
// is refused with file:line and the reason.
func TestWhatIfFunctions(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "mine.csv")
	// Two minutes of history, then the ten replayed.
	csv := "HashOwner,HashApp,HashFunction,Trigger,1,2,3,4,5,6,7,8,9,10,11,12\n" +
		"o,a,aaaa1111,http,60,120,600,600,1200,1200,600,600,600,600,600,600\n" +
		"o,a,bbbb2222,timer,0,60,60,60,60,60,60,60,60,60,60,60\n" +
		"o,a,cccc3333,queue,0,0,0,0,0,0,0,0,0,0,0,0\n" // never invoked: left out
	if err := os.WriteFile(good, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.FunctionsFile, o.Out, o.Policies = good, filepath.Join(dir, "out"), PolicyExact+","+PolicyDefault
	o.Functions.Scale = 1 // as recorded: 10 and 20 requests/s, 1 request/s
	o.Functions.HistoryMinutes = 2
	cfgs, err := o.configs()
	if err != nil {
		t.Fatal(err)
	}
	c := cfgs[0]
	if len(cfgs) != 1 || len(c.Services) != 2 || c.Services[0].Name != "fn-aaaa1111" || c.Services[1].Trigger != "timer" || len(c.Rates) != 600 {
		t.Fatalf("configs %d, services %+v, %d s; want one replay of aaaa1111 and bbbb2222 over 600 s", len(cfgs), c.Services, len(c.Rates))
	}
	if c.Services[0].Rates[150] != 20 || c.Services[1].Rates[599] != 1 || c.Rates[0] != 11 {
		t.Errorf("rates %v, %v, total %v; want 20, 1, 11 requests/s", c.Services[0].Rates[150], c.Services[1].Rates[599], c.Rates[0])
	}
	if h := c.Services[0].History; len(h) != 120 || h[0] != 1 || h[119] != 2 {
		t.Errorf("history of %s: %d s; want 120 s at 1 then 2 requests/s", c.Services[0].Name, len(h))
	}
	if c.Services[0].RTMaxMs != modelRTMaxMs[c.Services[0].Model]/2 || c.Services[0].SLMin != 0.99 {
		t.Errorf("http service %+v: want half its model's RT_max and SL_min 0.99", c.Services[0])
	}
	var out bytes.Buffer
	if err := Run(o, &out); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "== what-if: "+good) || !strings.Contains(s, "fn-bbbb2222") || !strings.Contains(s, "\nRESULT ") {
		t.Errorf("output lacks the replay, a service or the RESULT line:\n%s", s)
	}

	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("HashOwner,HashApp,HashFunction,Trigger,1,2\no,a,f,http,1,2\no,a,g,http,4,-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o.FunctionsFile = bad
	if _, err := o.configs(); err == nil || !strings.Contains(err.Error(), bad+":3: minute 2 (column 6): negative invocation count -1") {
		t.Errorf("negative count: err = %v", err)
	}
	o.FunctionsFile = good
	o.Functions.HistoryMinutes = 3 // 12 minutes: 3 of history leave 9, one short
	if _, err := o.configs(); err == nil || !strings.Contains(err.Error(), good+": 12 minutes: the history takes the first 3 and the replay needs at least 10 more (--function-history)") {
		t.Errorf("trace shorter than history and replay: err = %v", err)
	}
	o.Trace = good
	if _, err := o.configs(); err == nil || !strings.Contains(err.Error(), "--trace and --functions") {
		t.Errorf("both traces: err = %v", err)
	}
}

// TestFunctionBusyShare works the rule by hand for ResNet-50, cheapest per
// request on a T4 (0.526 USD/h / 363 requests/s against the V100's 3.90 /
// 709), batch latency 22.41 ms: twice the mean load's share at the
// threshold 0.8 is 2 x λ x 0.02241 / 0.8 = 0.056 λ. At 0.5 requests/s that
// is 0.028: 0.05; at 1, 0.056: 0.1; at 4, 0.224: 0.3; at 10, 0.56: unset
// (0, a GPU of its own when busy).
func TestFunctionBusyShare(t *testing.T) {
	cfg, err := Base("t", "t", constant(0, 10), t4Only(1))
	if err != nil {
		t.Fatal(err)
	}
	// L = 22.41 ms on a T4: u(λ) = λ x 0.02241 / 0.8.
	for _, c := range []struct{ rps, peak, want float64 }{
		{0.5, 0.5, 0.05}, {1, 1, 0.1}, {4, 4, 0.3}, {10, 10, 0},
		// A burst one light instance cannot carry: u(30) = 0.84 > 0.5.
		{0.5, 30, 0},
		// A peak one instance carries at 0.2: u(6) = 0.168.
		{0.5, 6, 0.2},
	} {
		if got := FunctionBusyShare(c.rps, c.peak, "resnet50", cfg.Profiles, cfg.Catalog); got != c.want {
			t.Errorf("mean %g, peak %g requests/s: busy share %g, want %g", c.rps, c.peak, got, c.want)
		}
	}
}
