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

// TestPolicySLOCheck checks the eligibility of constraint (4) under both
// checks.
func TestPolicySLOCheck(t *testing.T) {
	p := DefaultPolicy() // RT_max 400 ms, threshold 0.8, SL_min 0.98
	bt4 := bertT4(0, 1)
	if !p.MeetsSLO(bt4) || p.SLOLatencyMs(bt4) != bertT4Ms {
		t.Errorf("paper check: bert-large T4 L=114.5 ms should pass RT_max 400")
	}
	p.SLOCheck = SLOCheckModel
	// Modelled 98th percentile 242.0 ms at 0.8 * 69.3 requests/s (queue
	// 127.5 + service 114.5; a dynamic batcher has no formation wait).
	if got := p.SLOLatencyMs(bt4); !within(got, 242.04534, 1e-5) || !p.MeetsSLO(bt4) {
		t.Errorf("model check: bert-large T4 %v ms, meets %v; want 242.0 ms, passes 400", got, p.MeetsSLO(bt4))
	}
	p.RTMaxMs = 200
	if p.MeetsSLO(bt4) {
		t.Error("model check: bert-large T4 (242.0 ms) should fail RT_max 200 ms")
	}
	if !p.MeetsSLO(bertV100(0, 1)) {
		t.Error("model check: bert-large V100 (81.7 ms) should pass 200 ms")
	}
	// Co-location inflation makes ResNet-50 on T4 fail 150 ms (186.0 ms).
	p.RTMaxMs = 150
	rt4 := resnetT4(0, 1)
	if !p.MeetsSLO(rt4) {
		t.Error("resnet50 T4 without inflation (50.2 ms) should pass 150 ms")
	}
	rt4.LatencyInflation = 1.18
	if p.MeetsSLO(rt4) {
		t.Error("resnet50 T4 with inflation 1.18 (186.0 ms) should fail 150 ms")
	}
	// A lower service level is easier: 95th percentile.
	p.ServiceLevel = 0.95
	if got := p.SLOLatencyMs(rt4); !(got < 186.0) {
		t.Errorf("p95 %v not below p98", got)
	}
}
