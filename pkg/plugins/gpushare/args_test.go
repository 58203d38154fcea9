package gpushare

import (
	"testing"

	"github.com/hetsev/hetsev/pkg/apis/config"
	configv1 "github.com/hetsev/hetsev/pkg/apis/config/v1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/placement"
)

// TestConfigDefaultsEqualDomainDefaults: the config API writes the
// defaults and fit names of HetsevGPUShareArgs as constants of its own (it
// imports no domain package); they must stay those of pkg/gpuinventory and
// pkg/placement, which the plugin hands them to.
func TestConfigDefaultsEqualDomainDefaults(t *testing.T) {
	for _, c := range []struct {
		what      string
		cfg, want any
	}{
		{"fit WorstFit", config.FitWorst, string(gpuinventory.FitWorst)},
		{"fit BestFit", config.FitBest, string(gpuinventory.FitBest)},
		{"default fit", configv1.DefaultGPUShareFit, string(gpuinventory.FitWorst)},
		{"default interference weight", float64(configv1.DefaultGPUShareInterferenceWeight), float64(placement.DefaultInterferenceWeight)},
		{"default max busy share", float64(configv1.DefaultGPUShareMaxBusyShare), float64(gpuinventory.DefaultMaxBusyShare)},
	} {
		if c.cfg != c.want {
			t.Errorf("%s: config API %v, domain %v", c.what, c.cfg, c.want)
		}
	}
	// Defaulted arguments choose as the domain's zero choice would.
	a, err := ParseArgs(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Choice(); got.Fit != gpuinventory.FitWorst || got.MaxBusyShare != gpuinventory.DefaultMaxBusyShare {
		t.Errorf("default choice %+v, want fit %s, max busy share %g", got, gpuinventory.FitWorst, gpuinventory.DefaultMaxBusyShare)
	}
}
