package heterogeneity

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestDefaultPolicy(t *testing.T) {
	p := DefaultPolicy()
	if err := p.Validate(); err != nil {
		t.Fatalf("DefaultPolicy invalid: %v", err)
	}
	if p.SaturationThreshold != 0.8 || p.Lambda != 0.01 || p.MinReplicas != 1 || p.MaxReplicas != 0 || p.RTMaxMs != 400 {
		t.Errorf("DefaultPolicy = %+v", p)
	}
}

func TestPolicyValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Policy)
		want   string
	}{
		{"threshold zero", func(p *Policy) { p.SaturationThreshold = 0 }, "SaturationThreshold"},
		{"threshold above one", func(p *Policy) { p.SaturationThreshold = 1.2 }, "SaturationThreshold"},
		{"threshold NaN", func(p *Policy) { p.SaturationThreshold = math.NaN() }, "SaturationThreshold"},
		{"negative lambda", func(p *Policy) { p.Lambda = -1 }, "Lambda"},
		{"infinite lambda", func(p *Policy) { p.Lambda = math.Inf(1) }, "Lambda"},
		{"negative period", func(p *Policy) { p.ScaleOutPeriod = -time.Second }, "ScaleOutPeriod"},
		{"negative interval", func(p *Policy) { p.ScaleInInterval = -time.Second }, "ScaleInInterval"},
		{"negative cool-down", func(p *Policy) { p.ScaleInCoolDown = -time.Second }, "ScaleInCoolDown"},
		{"scale to zero", func(p *Policy) { p.MinReplicas = 0 }, "never scale to zero"},
		{"negative max", func(p *Policy) { p.MaxReplicas = -1 }, "MaxReplicas"},
		{"max below min", func(p *Policy) { p.MinReplicas, p.MaxReplicas = 3, 2 }, "MaxReplicas 2 is below MinReplicas 3"},
		{"no RT_max", func(p *Policy) { p.RTMaxMs = 0 }, "RTMaxMs"},
	}
	for _, tc := range tests {
		p := DefaultPolicy()
		tc.change(&p)
		err := p.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	p := DefaultPolicy()
	p.MaxReplicas = 1
	if err := p.Validate(); err != nil {
		t.Errorf("MaxReplicas = MinReplicas: %v", err)
	}
}
