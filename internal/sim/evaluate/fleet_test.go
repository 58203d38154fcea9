package evaluate

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestAzureFunctionsFleetScenario: the fleet replay is the azure-functions
// services over its last 2 h, the 6 h before as History, on 13 V100-32GB
// and 13 T4 servers, sized from the history: the V100s (26 GPUs) hold the
// history's peak total demand in V100s at the threshold, the T4s (26) less
// than 70 % of the replayed window's in T4s, and both together its peak
// (T4s counted in V100s at the peak's own exchange rate);
// tight services are BERT-large chosen by the hash rule, with RT_max 114 ms
// between the V100's and the T4's batch latency; it comes after the three
// replays in `make evaluate`.
func TestAzureFunctionsFleetScenario(t *testing.T) {
	fn, err := AzureFunctions(FunctionWorkload{})
	if err != nil {
		t.Fatal(err)
	}
	rt0 := fn.Services[0].RTMaxMs
	c, err := FunctionsFleet(fn)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(fn.Services[0].History) != 2*3600 || len(fn.Services[0].Rates) != 6*3600 || fn.Services[0].RTMaxMs != rt0 {
		t.Fatalf("FunctionsFleet changed its input")
	}
	if c.Name != "azure-functions-fleet" || len(c.Rates) != 2*3600 || c.MeasureFrom != 300 || len(c.Services) != len(fn.Services) {
		t.Fatalf("%s: %d s from %d, %d services; want azure-functions-fleet, 7200 s from 300, %d", c.Name, len(c.Rates), c.MeasureFrom, len(c.Services), len(fn.Services))
	}
	theta := 0.8
	demT4 := make([]float64, len(c.Rates))
	demV := make([]float64, len(c.Rates))
	histV := make([]float64, 6*3600)
	tight := 0
	for i, s := range c.Services {
		f := fn.Services[i]
		if len(s.History) != 6*3600 || s.History[0] != f.History[0] || s.History[6*3600-1] != f.Rates[4*3600-1] || s.Rates[0] != f.Rates[4*3600] {
			t.Fatalf("%s: %d s of history; want the 6 h before the window", s.Name, len(s.History))
		}
		pt, _ := c.Profiles.Get(s.Model, "T4")
		pv, _ := c.Profiles.Get(s.Model, "V100-32GB")
		for k, r := range s.Rates {
			demT4[k] += r / (theta * pt.ThroughputRPS)
			demV[k] += r / (theta * pv.ThroughputRPS)
		}
		for k, r := range s.History {
			histV[k] += r / (theta * pv.ThroughputRPS)
		}
		if s.RTMaxMs != f.RTMaxMs {
			tight++
			if s.Model != "bert-large" || s.RTMaxMs != 114 || !TightService(s.Name) || !(pv.LatencyMs <= s.RTMaxMs && s.RTMaxMs < pt.LatencyMs) {
				t.Errorf("%s (%s): RT_max %v; tight only for BERT-large by the hash, 114 ms", s.Name, s.Model, s.RTMaxMs)
			}
		} else if s.Model == "bert-large" && TightService(s.Name) {
			t.Errorf("%s: BERT-large chosen by the hash but RT_max %v", s.Name, s.RTMaxMs)
		}
	}
	peakT4, peakV, meanT4, peakHistV := 0.0, 0.0, 0.0, 0.0
	for k := range demT4 {
		peakT4, peakV = math.Max(peakT4, demT4[k]), math.Max(peakV, demV[k])
		meanT4 += demT4[k] / float64(len(demT4))
	}
	for _, d := range histV {
		peakHistV = max(peakHistV, d)
	}
	gpus := map[string]int{}
	for _, g := range c.Cluster {
		gpus[g.GPUType] += g.Nodes * g.GPUsPerNode
		if g.Nodes != 13 || g.GPUsPerNode != 2 {
			t.Errorf("%s: %d servers of %d GPUs, want 13 of 2", g.GPUType, g.Nodes, g.GPUsPerNode)
		}
	}
	t.Logf("T4s %d, V100s %d; demand peak %.1f T4s (mean %.1f), %.1f V100s, %.1f V100s in the history; %d tight services", gpus["T4"], gpus["V100-32GB"], peakT4, meanT4, peakV, peakHistV, tight)
	if v := float64(gpus["V100-32GB"]); v < peakHistV || v-2 >= peakHistV {
		t.Errorf("V100s %d for the history's peak of %.1f V100s; want the fewest servers of 2 that hold it", gpus["V100-32GB"], peakHistV)
	}
	if float64(gpus["T4"]) > 0.7*peakT4 || float64(gpus["V100-32GB"])+float64(gpus["T4"])*peakV/peakT4 < peakV {
		t.Errorf("T4s %d for a peak of %.1f, V100s %d for %.1f; want the T4s under 70 %% and both together the peak", gpus["T4"], peakT4, gpus["V100-32GB"], peakV)
	}
	if tight < 3 {
		t.Errorf("%d tight services, want a few", tight)
	}

	cfgs, err := DefaultOptions().configs()
	if err != nil {
		t.Fatal(err)
	}
	if len(cfgs) != 4 || cfgs[2].Name != "azure-functions" || cfgs[3].Name != "azure-functions-fleet" {
		t.Errorf("make evaluate's replays: %d; want the fleet replay fourth", len(cfgs))
	}
}

// TestFleetClusterRule works FleetCluster's rule on small cases: 10
// ResNet-50 services whose history runs at 100 requests/s each need
// 1,000 / (0.8 x 709) = 1.76 V100s at once: n = ceil(1.76 / 2) = 1, not a
// GPU per service, whatever the replayed window brings (here 1,000
// requests/s each). With a history at 1,000 requests/s each, 17.6 V100s:
// n = ceil(17.6 / 2) = 9. Services without a history are refused.
func TestFleetClusterRule(t *testing.T) {
	for _, c := range []struct {
		hist, rps float64
		nodes     int
	}{{100, 100, 1}, {100, 1000, 1}, {1000, 1000, 9}, {0, 1000, 0}} {
		var svcs []Service
		for i := range 10 {
			s := Service{Name: string(rune('a' + i)), Model: "resnet50", Rates: constant(c.rps, 60), RTMaxMs: 400}
			if c.hist > 0 {
				s.History = constant(c.hist, 120)
			}
			svcs = append(svcs, s)
		}
		cfg, err := Base("f", "f", constant(10*c.rps, 60), nil, svcs...)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := FleetCluster(&cfg)
		if c.nodes == 0 {
			if err == nil || !strings.Contains(err.Error(), "history") {
				t.Errorf("no history: %+v, %v; want an error naming the history", cl, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(cl) != 2 || cl[0].GPUType != "V100-32GB" || cl[1].GPUType != "T4" || cl[0].Nodes != c.nodes || cl[1].Nodes != c.nodes {
			t.Errorf("history at %v, replay at %v requests/s each: %+v; want %d V100-32GB and %d T4 servers", c.hist, c.rps, cl, c.nodes, c.nodes)
		}
	}
}

// TestParseFleetFlag: --fleet T4=3,V100-32GB=4 is 3 T4 (a server of 2 and
// one of 1) and 4 V100 (2 servers of 2) and replaces the what-if cluster;
// bad values are refused with the flag, the entry at fault (at most 80
// characters quoted) and the reason.
func TestParseFleetFlag(t *testing.T) {
	fleet, err := ParseFleet(" T4=3, V100-32GB=4")
	if err != nil || !reflect.DeepEqual(fleet, []FleetGPUs{{"T4", 3}, {"V100-32GB", 4}}) {
		t.Fatalf("ParseFleet = %+v, %v", fleet, err)
	}
	dir := t.TempDir()
	tr := filepath.Join(dir, "counts.txt")
	if err := os.WriteFile(tr, []byte("5\n6\n7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.Trace, o.Fleet, o.Preparation = tr, "T4=3,V100-32GB=4", Preparation{}
	cfgs, err := o.configs()
	if err != nil {
		t.Fatal(err)
	}
	gpus := map[string]int{}
	for _, g := range cfgs[0].Cluster {
		gpus[g.GPUType] += g.Nodes * g.GPUsPerNode
		if g.CPUMilli != 40000 || g.MemoryMiB != 62*1024 || g.GPUsPerNode > 2 {
			t.Errorf("server %+v; want HetSevNodes' shape", g)
		}
	}
	if len(cfgs[0].Cluster) != 3 || gpus["T4"] != 3 || gpus["V100-32GB"] != 4 {
		t.Errorf("cluster %+v; want 3 T4 (2 + 1) and 4 V100-32GB", cfgs[0].Cluster)
	}

	long := strings.Repeat("x", 100) + "=1"
	for in, want := range map[string]string{
		"":                      `--fleet "": empty`,
		"T4=2,":                 `--fleet: entry "": want TYPE=COUNT`,
		"T4":                    `--fleet: entry "T4": want TYPE=COUNT`,
		"=2":                    `--fleet: entry "=2": want TYPE=COUNT`,
		"T4=two":                `--fleet: entry "T4=two": count is not an integer`,
		"T4=1.5":                `--fleet: entry "T4=1.5": count is not an integer`,
		"T4=-1":                 `--fleet: entry "T4=-1": count -1; want at least 1 GPU`,
		"T4=0":                  `count 0; want at least 1 GPU`,
		"T4=2,V100-32GB=1,T4=1": `--fleet: type "T4" given twice`,
		"H100=2":                `--fleet: unknown GPU type "H100" (the catalog has `,
		long:                    `--fleet: unknown GPU type "` + strings.Repeat("x", 80) + `"... (100 bytes)`,
	} {
		o.Fleet = in
		if in == "" {
			_, err = ParseFleet(in)
		} else {
			_, err = o.configs()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--fleet %q: err %v, want %q", in, err, want)
		}
	}
	o.Trace, o.Fleet = "", "T4=2"
	if _, err := o.configs(); err == nil || !strings.Contains(err.Error(), "--fleet applies to --trace and --functions") {
		t.Errorf("--fleet without a what-if trace: err %v", err)
	}
}
