package evaluate

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/hetsev/hetsev/pkg/heterogeneity"
)

// runFlavors replays hetsev-exact on rates over cluster with flavors.
func runFlavors(t *testing.T, flavors heterogeneity.Flavors, rates []float64, cluster []NodeGroup, services ...Service) RunResult {
	t.Helper()
	cfg, err := Base("test", "test", rates, cluster, services...)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Policies = []string{PolicyExact}
	cfg.Flavors = flavors
	r, err := Evaluate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Two idle services (resnet50 and ssd) for an hour on two T4s. Without
// flavors each keeps a whole T4: billed 2 GPU-hours, and the ILP counted
// the same. With flavors each runs one instance of the lightest flavor
// whose batches fit its RT_max (3 L / f <= RT_max at the profile's batch
// or a measured smaller one: ResNet-50 0.1 at batch 4, 382 ms <= 400;
// SSD 0.25 at batch 2, 792 ms <= 900), which the ILP counts at 0.35 x
// 0.526 USD/h in all; the two pack onto one T4, which bills its whole
// price: the report shows billed 2.857 times what the ILP assumed, and
// that the shares declared on the billed T4 fill 0.35 of it (each whole T4
// before: 1).
func TestFlavorsPackIdleServicesAndReportILPCost(t *testing.T) {
	rates := constant(0, 3600)
	whole := runFlavors(t, nil, rates, t4Only(2), DemoServices()...)
	h := float64(whole.MeasuredSeconds) / 3600
	p := whole.Policies[0]
	if !near(p.CostUSD, 2*t4Price*h) || !near(p.ILPCostUSD, 2*t4Price*h) {
		t.Errorf("whole GPUs: billed %v USD, ILP assumed %v USD; want both %v", p.CostUSD, p.ILPCostUSD, 2*t4Price*h)
	}
	if got := p.DeclaredBusyShare["T4"]; !near(got, 1) {
		t.Errorf("whole GPUs: declared busy share of the billed T4s %v, want 1", got)
	}
	light := runFlavors(t, heterogeneity.DefaultFlavors, rates, t4Only(2), DemoServices()...)
	p = light.Policies[0]
	if !near(p.CostUSD, t4Price*h) || !near(p.ILPCostUSD, 0.35*t4Price*h) || p.PeakGPUs["T4"] != 1 {
		t.Errorf("flavors: billed %v USD on %d T4s at peak, ILP assumed %v USD; want %v on 1 and %v", p.CostUSD, p.PeakGPUs["T4"], p.ILPCostUSD, t4Price*h, 0.35*t4Price*h)
	}
	if got := p.DeclaredBusyShare["T4"]; !near(got, 0.35) {
		t.Errorf("flavors: declared busy share of the billed T4 %v, want 0.35 (0.1 + 0.25)", got)
	}
	var out bytes.Buffer
	PrintTable(&out, light)
	for _, want := range []string{
		"hetsev-exact (flavors 0.1,0.25,0.5,1): billed 0.53 USD, its ILP assumed 0.18 USD",
		"hetsev-exact packing (mean declared busy share of a billed GPU): T4 0.350 over 1.0 GPU-h",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// Under load a service scales out of its light flavor: ResNet-50 at 100
// requests/s (its lightest flavor within RT_max 400 ms, 0.1 at batch 4,
// carries 26 at the threshold) still meets its SLO with flavors offered.
func TestFlavorsFollowTheLoad(t *testing.T) {
	rates := constant(0, 900)
	for i := 400; i < len(rates); i++ {
		rates[i] = 100
	}
	r := runFlavors(t, heterogeneity.DefaultFlavors, rates, t4Only(4), Service{Name: "r", Model: "resnet50", Share: 1, RTMaxMs: 400})
	p := r.Policies[0]
	if s := p.Services[0]; s.SLOAttainment < 0.95 || s.Requests == 0 {
		t.Errorf("flavors under load: SLO attainment %v over %d requests, want >= 0.95", s.SLOAttainment, s.Requests)
	}
	if idle := 0.1 * t4Price * float64(r.MeasuredSeconds) / 3600; p.ILPCostUSD <= idle {
		t.Errorf("flavors under load: ILP assumed %v USD, want more than one 0.1 instance's %v", p.ILPCostUSD, idle)
	}
}

func TestConfigRejectsBadFlavors(t *testing.T) {
	cfg, err := Base("test", "test", constant(0, 600), t4Only(1), DemoServices()...)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Flavors = heterogeneity.Flavors{0.5, 0.1}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "Flavors") || !strings.Contains(err.Error(), "0.1 follows 0.5") {
		t.Errorf("Validate with flavors 0.5,0.1: %v, want an error naming Flavors and 0.1", err)
	}
}

// INFaaS has no flavors: with Config.Flavors set for hetsev, infaas-packing
// still scales its whole-GPU instances with the load (a rise from 20 to 500
// requests/s of BERT-large needs several T4s), as it does without them.
func TestFlavorsLeaveINFaaSWholeGPUs(t *testing.T) {
	cfg := ablationConfig(t)
	cfg.Policies = []string{PolicyINFaaS}
	cfg.Flavors = heterogeneity.DefaultFlavors
	r, err := Evaluate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := r.Policies[0]
	if p.ScalingActions == 0 || p.PeakGPUs["T4"] < 3 {
		t.Errorf("infaas-packing with hetsev's flavors set: %d scaling actions, peak %d T4s; want it to scale out to 3 or more", p.ScalingActions, p.PeakGPUs["T4"])
	}
}

// A light column that runs below the profile's batch (its pods carry
// hetsev.io/max-batch-size) is replayed with servers at that batch and
// its measured latency: BERT-large at RT_max 600 ms gets the T4's light
// flavors at batch 1 (14.4 ms), its own column keeps batch 8 (114.5 ms).
func TestReplayRunsLightColumnsAtTheirBatch(t *testing.T) {
	cfg, err := Base("test", "test", constant(1, 60), t4Only(2), Service{Name: "b", Model: "bert-large", Share: 1, RTMaxMs: 600})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Flavors = heterogeneity.DefaultFlavors
	cfg.defaultSharing()
	r, err := newPolicyRun(&cfg, PolicyExact)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, st := range r.svcs[0].types {
		got = append(got, fmt.Sprintf("%s:%d@%g", st.column, st.prof.BatchSize, st.prof.LatencyMs))
	}
	if want := "T4:8@114.5 T4-busy0.1:1@14.4 T4-busy0.25:1@14.4 T4-busy0.5:1@14.4"; strings.Join(got, " ") != want {
		t.Errorf("replayed columns %s, want %s", strings.Join(got, " "), want)
	}
}
