package integration

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hetsev/hetsev/internal/sim/demo"
	"github.com/hetsev/hetsev/internal/sim/trace"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// TestDemoDRAStack runs `make demo DEMO_ARGS=--gpu-mode=dra` shortened:
// the 20 minutes of the demo's trace window that rise into its spike,
// scaled to the demo's peak, in 45 s (29x, the demo's 26x). hetsev-scaler
// writes ResourceClaimTemplates, hetsev-scheduler allocates the generated
// claims on the published ResourceSlices, the simulated servers serve, and
// the audit of the claims finds every running pod on its allocated device
// with no device over-committed and no two instances of a model sharing
// one.
func TestDemoDRAStack(t *testing.T) {
	rates, err := trace.Twitter()
	if err != nil {
		t.Fatal(err)
	}
	cfg := demo.DefaultDemo()
	cfg.GPUMode = v1alpha1.GPUModeDRA
	cfg.Rates = rates
	cfg.TraceStart += 3300
	cfg.TraceSeconds = 1200
	cfg.WarmupTrace = 120
	cfg.Duration = 45 * time.Second
	cfg.Report = 3 * time.Second
	cfg.Dir = t.TempDir()
	var out bytes.Buffer
	cfg.Out = &out
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := demo.RunDemo(ctx, t, cfg)
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	demo.PrintSummary(&out, s)
	defer func() { t.Logf("demo output:\n%s", out.String()) }()
	c := s.Claims
	if s.GPUMode != v1alpha1.GPUModeDRA || c == nil {
		t.Fatalf("summary of GPU mode %q with claim audit %v, want dra with an audit", s.GPUMode, c)
	}
	if c.Audits < 5 || c.PodsChecked < 2*c.Audits || c.ClaimsChecked < c.PodsChecked {
		t.Errorf("claim audit saw %d running pods and %d allocated claims in %d audits, want at least one pod of each service per audit, each with its claim", c.PodsChecked, c.ClaimsChecked, c.Audits)
	}
	if c.DeviceOvercommits+c.IdenticalModelColocations+c.RunningWithoutAllocation+c.GPUIndexMismatches != 0 {
		t.Errorf("claim audit %+v, want no device over-commit, no identical-model co-location, every running pod on its claim's device", *c)
	}
	if s.GPUMemoryOvercommits+s.IdenticalModelColocations != 0 {
		t.Errorf("simulated GPUs: %d memory over-commits, %d identical-model co-locations, want 0", s.GPUMemoryOvercommits, s.IdenticalModelColocations)
	}
	for name, svc := range s.Services {
		if svc.Requests == 0 || svc.SLOAttainment < 0.93 {
			t.Errorf("service %s: %d requests, SLO attainment %.4f, want requests served with >= 0.93 within RT_max", name, svc.Requests, svc.SLOAttainment)
		}
	}
	// The demo ends with the operator's view of the GPUs: every service's
	// running instances as tenants of the GPUs their claims hold.
	_, table, ok := strings.Cut(out.String(), "== kubectl hetsev gpus")
	if !ok {
		t.Errorf("demo output has no kubectl hetsev gpus table")
	}
	for name := range s.Services {
		if !strings.Contains(table, "default/"+name+"-") {
			t.Errorf("kubectl hetsev gpus table lists no instance of %s as a tenant:\n%s", name, table)
		}
	}
	if s.PodsScheduled <= len(s.Services) {
		t.Errorf("%d pods scheduled, want the minimum replicas and some scale-out into the spike", s.PodsScheduled)
	}
}
