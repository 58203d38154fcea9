package evaluate

import (
	"testing"

	"github.com/hetsev/hetsev/pkg/heterogeneity"
)

// A light instance opens no GPU type. ResNet-50 at 200 requests/s holds
// the cluster's one T4 whole; a quiet BERT-large service (RT_max 2,400
// ms, so a V100's 0.1 flavor fits: 3 x 38.3 ms / 0.1 = 1,149 ms) finds no
// room on it. A V100-busy0.1 would then be the ILP's cheapest cover (0.39
// USD/h in its terms) but would bill a whole V100 alone; with no V100 in
// use the replay offers the V100's light columns no slots, as
// hetsev-scaler does, and the service runs a whole V100, which the ILP
// counts at what it bills.
func TestLightFlavorOpensNoGPUType(t *testing.T) {
	const secs = 1800
	busy, quiet := make([]float64, secs), make([]float64, secs)
	for i := range busy {
		busy[i], quiet[i] = 200, 0.5
	}
	cluster := []NodeGroup{
		{GPUType: "T4", Nodes: 1, GPUsPerNode: 1, CPUMilli: 64000, MemoryMiB: 256 * 1024},
		{GPUType: "V100-32GB", Nodes: 1, GPUsPerNode: 2, CPUMilli: 64000, MemoryMiB: 256 * 1024},
	}
	r := runFlavors(t, heterogeneity.DefaultFlavors, constant(0, secs), cluster,
		Service{Name: "r", Model: "resnet50", Rates: busy, RTMaxMs: 400},
		Service{Name: "b", Model: "bert-large", Rates: quiet, RTMaxMs: 2400})
	p := r.Policies[0]
	if p.GPUHours["V100-32GB"] == 0 || !near(p.ILPCostUSD, p.CostUSD) {
		t.Errorf("billed %.3f USD (V100 %.3f GPU-hours), ILP assumed %.3f USD; want the ILP to count the whole V100 the quiet service opens",
			p.CostUSD, p.GPUHours["V100-32GB"], p.ILPCostUSD)
	}
	for _, s := range p.Services {
		if s.SLOAttainment < 0.98 || s.Requests == 0 {
			t.Errorf("%s: SLO attainment %v over %d requests, want >= 0.98", s.Service, s.SLOAttainment, s.Requests)
		}
	}
}

// A light instance shares no GPU with its own service: on the Azure code
// replay (one bursty BERT-large service, RT_max 1,200 ms, so the T4's 0.5
// flavor is offered) the only T4s in use are the service's own, which
// anti-affinity closes to its light instances; a light instance would
// bill a T4 of its own. The replay offers the light columns no slots and
// hetsev-exact costs what it does with whole GPUs only.
func TestLightFlavorNeedsAnotherTenant(t *testing.T) {
	cfg, err := AzureCode(300, 16)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Policies = []string{PolicyExact}
	cfg.Knobs.ModelThresholds = true
	whole, err := Evaluate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Flavors = heterogeneity.DefaultFlavors
	light, err := Evaluate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w, l := whole.Policies[0], light.Policies[0]
	if !near(l.CostUSD, w.CostUSD) || l.Services[0].WithinSLO != w.Services[0].WithinSLO {
		t.Errorf("flavors: %.3f USD, %d requests within RT_max; whole GPUs only: %.3f USD, %d; want the same",
			l.CostUSD, l.Services[0].WithinSLO, w.CostUSD, w.Services[0].WithinSLO)
	}
}
