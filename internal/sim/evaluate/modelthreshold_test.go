package evaluate

import (
	"slices"
	"testing"

	"github.com/hetsev/hetsev/pkg/heterogeneity"
)

// TestModelThresholdsReachHetsevOnly: with Knobs.ModelThresholds the
// hetsev policies resolve a service with the threshold the SLO latency
// model gives it, in place of its own (0.7 here), while the peers keep
// the service's; the ablation switches it on or off as the baseline
// lacks or has it.
func TestModelThresholdsReachHetsevOnly(t *testing.T) {
	cfg, err := Base("model-thresholds", "ramp", ramp(20, 500, 240), t4Only(12), Service{Name: "r", Model: "resnet50", Share: 1, RTMaxMs: 400, SaturationThreshold: 0.7})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Knobs.ModelThresholds = true
	hetsev, err := cfg.resolveHetsev(cfg.Services[0], heterogeneity.SolverExact)
	if err != nil {
		t.Fatal(err)
	}
	peer, err := cfg.resolve(cfg.Services[0], heterogeneity.SolverExact)
	if err != nil {
		t.Fatal(err)
	}
	ts, ok := hetsev.TypeState("T4", 0, 0, 1, 1)
	if !ok {
		t.Fatal("no T4 column")
	}
	want := heterogeneity.ModelThreshold(hetsev.Policy(), ts)
	if th := hetsev.Policy().SaturationThreshold; th != want || want == 0.7 || want == 0.8 || want == 0 {
		t.Errorf("hetsev's threshold %v, want the model's %v, not the service's 0.7 or the default 0.8", th, want)
	}
	if th := peer.Policy().SaturationThreshold; th != 0.7 {
		t.Errorf("peer's threshold %v, want the service's 0.7", th)
	}
	cfg.Knobs.ModelThresholds = false
	if r, err := cfg.resolveHetsev(cfg.Services[0], heterogeneity.SolverExact); err != nil || r.Policy().SaturationThreshold != 0.7 {
		t.Errorf("without the knob hetsev's threshold %v (%v), want the service's 0.7", r.Policy().SaturationThreshold, err)
	}
	if k, err := ablatedKnobs(cfg.Knobs, AblationModelThresholds); err != nil || !k.ModelThresholds {
		t.Errorf("%s: %+v, %v", AblationModelThresholds, k, err)
	}
	if v := ablationVariants(false, true, false, false, false); slices.Contains(v, AblationModelThresholds) || !slices.Contains(v, AblationNoModelThresholds) {
		t.Errorf("variants of a baseline with model thresholds: %v, want %s instead of %s", v, AblationNoModelThresholds, AblationModelThresholds)
	}
}
