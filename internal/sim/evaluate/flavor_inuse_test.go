package evaluate

import (
	"testing"

	"github.com/hetsev/hetsev/pkg/heterogeneity"
)

// A light instance opens no GPU type: BERT-large idles on a T4-busy0.1,
// then at 7.6 requests/s outgrows it and a T4-busy0.5; for the rest a
// V100-busy0.1 (0.39 USD/h in the ILP's terms) would be the cheapest
// cover, but with no V100 in use it would bill a whole V100 alone. The
// replay offers the V100's flavors no slots, as hetsev-scaler does, and
// the service grows on a whole T4 (0.53 USD/h).
func TestLightFlavorOpensNoGPUType(t *testing.T) {
	rates := constant(0, 2400)
	for i := 600; i < len(rates); i++ {
		rates[i] = 7.6
	}
	r := runFlavors(t, heterogeneity.DefaultFlavors, rates, HetSevNodes(4), Service{Name: "b", Model: "bert-large", Share: 1, RTMaxMs: 1200})
	p := r.Policies[0]
	if h := p.GPUHours["V100-32GB"]; h > 0 {
		t.Errorf("V100 GPU-hours %.3f (T4 %.3f, billed %.2f USD), want none: a light instance opened a V100", h, p.GPUHours["T4"], p.CostUSD)
	}
	if s := p.Services[0]; s.SLOAttainment < 0.98 || s.Requests == 0 {
		t.Errorf("SLO attainment %v over %d requests, want >= 0.98", s.SLOAttainment, s.Requests)
	}
}
