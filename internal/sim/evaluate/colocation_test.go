package evaluate

import (
	"reflect"
	"strings"
	"testing"

	"github.com/hetsev/hetsev/pkg/heterogeneity"
	"github.com/hetsev/hetsev/pkg/interference"
	"github.com/hetsev/hetsev/pkg/placement"
)

// TestEvaluatorUsesFittedColocation: the evaluator's scenarios carry the
// fitted co-location model; hetsev's placer rates with it in the
// configured GPU sharing mode, and its capacity factor is hetsev-scaler's
// (the fitted inflation at the saturation threshold, not 1.18); an unknown
// sharing mode is refused naming GPUSharing.
func TestEvaluatorUsesFittedColocation(t *testing.T) {
	cfg, err := Base("test", "test", constant(10, 10), t4Only(2), DemoServices()...)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.Colocation, interference.FittedColocation()) {
		t.Fatalf("Base's model %q, want the fitted one", cfg.Colocation.Source)
	}
	cfg.GPUSharing = interference.SharingMPS
	p, err := newHetsevPolicy(&cfg, heterogeneity.SolverExact, placement.DefaultInterferenceWeight)
	if err != nil {
		t.Fatal(err)
	}
	if p.pl.Mode != interference.SharingMPS || !reflect.DeepEqual(p.pl.Colocation, cfg.Colocation) {
		t.Errorf("placer mode %q model %q, want mps and the fitted model", p.pl.Mode, p.pl.Colocation.Source)
	}
	got, ok := p.svc[0].CapacityInflation("T4", p.colocation, p.mode)
	if want := 1 + 0.8*interference.FittedMPSContention; !ok || got != want {
		t.Errorf("capacity factor %.4f (%v), want %.4f", got, ok, want)
	}
	cfg.GPUSharing = "exclusive"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "GPUSharing") {
		t.Errorf("unknown sharing mode: %v", err)
	}
}
