package evaluate

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A GPU is billed as the cheapest instance share that holds its pods' CPU
// and memory requests: three idle services sharing one T4 (2 vCPU each, 16
// GiB of host memory together) need 6 vCPUs, more than a g4dn.xlarge's 4,
// so the hour costs a g4dn.2xlarge's 0.752 USD, not the catalog's 0.526;
// without SKUs it costs the catalog's price.
func TestGPUBilledAsTheInstanceItsPodsNeed(t *testing.T) {
	svcs := []Service{
		{Name: "a", Model: "resnet50", Share: 0.3, RTMaxMs: 400, BusyShare: 0.2},
		{Name: "b", Model: "ssd-resnet50", Share: 0.3, RTMaxMs: 900, BusyShare: 0.2},
		{Name: "c", Model: "bert-large", Share: 0.3, RTMaxMs: 1200, BusyShare: 0.2},
	}
	cfg, err := Base("test", "test", constant(0, 3600), t4Only(1), svcs...)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Policies = []string{PolicyExact}
	r, err := Evaluate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := r.Policies[0]
	if !near(p.CostUSD, 0.752) || !near(p.SKUHours["g4dn.2xlarge"], 1) || !near(p.NodeCostUSD, t4Price) {
		t.Errorf("three pods on one T4 for an hour: billed %v USD as %v, node cost %v; want 0.752 as 1 GPU-h of g4dn.2xlarge, node cost 0.526", p.CostUSD, p.SKUHours, p.NodeCostUSD)
	}
	cfg.SKUs = nil
	if r, err = Evaluate(cfg); err != nil {
		t.Fatal(err)
	}
	if p := r.Policies[0]; !near(p.CostUSD, t4Price) || !near(p.SKUHours[""], 1) {
		t.Errorf("without SKUs: billed %v USD as %v; want the catalog's 0.526", p.CostUSD, p.SKUHours)
	}
}

// The billing rule over the repo's SKUs: one pod on a T4 fits a
// g4dn.xlarge; pods needing 10 vCPUs take a quarter of a g4dn.12xlarge
// (4 T4s, 48 vCPUs: 0.978 USD/h), cheaper than a g4dn.4xlarge (1.204);
// a V100-32GB (only in the 8-GPU p3dn.24xlarge, 96 vCPUs) whose pods
// need 14 vCPUs takes 14/96 of it; pods beyond any one instance (100
// vCPUs on one T4) are billed in shares over instances, the cheapest per
// vCPU (g4dn.8xlarge: 100/32 of 2.176 USD/h).
func TestBillingRule(t *testing.T) {
	cfg, err := Base("test", "test", constant(0, 1), t4Only(1))
	if err != nil {
		t.Fatal(err)
	}
	b := newBilling(cfg.SKUs)
	t4, _ := cfg.Catalog.ByName("T4")
	v100, _ := cfg.Catalog.ByName("V100-32GB")
	for _, c := range []struct {
		name      string
		got, want billed
	}{
		{"T4, 2 vCPU", b.gpu(t4, 2000, 4096), billed{0.526, "g4dn.xlarge"}},
		{"T4, 10 vCPU", b.gpu(t4, 10000, 20480), billed{3.912 / 4, "g4dn.12xlarge"}},
		{"T4, 100 vCPU", b.gpu(t4, 100000, 4096), billed{2.176 * 100 / 32, "g4dn.8xlarge"}},
		{"V100-32GB, 2 vCPU", b.gpu(v100, 2000, 8192), billed{31.212 / 8, "p3dn.24xlarge"}},
		{"V100-32GB, 14 vCPU", b.gpu(v100, 14000, 8192), billed{31.212 * 14 / 96, "p3dn.24xlarge"}},
	} {
		if !near(c.got.usdPerHour, c.want.usdPerHour) || c.got.sku != c.want.sku {
			t.Errorf("%s: %+v, want %+v", c.name, c.got, c.want)
		}
	}
}

// An owned fleet bills every policy the whole cluster: two idle services
// on 4 T4s use 2 for the hour and are billed all 4 (2.104 USD); their
// services' costs are what their GPUs would bill in a cloud (1.052). The
// scoreboard gives no cost ratio there and says why.
func TestOwnedFleetIsBilledWhole(t *testing.T) {
	cfg, err := Base("owned", "owned", constant(0, 3600), t4Only(4), DemoServices()...)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Owned = true
	cfg.Policies = []string{PolicyExact, PolicyHPABestType}
	r, err := Evaluate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.Policies {
		if !near(p.CostUSD, 4*t4Price) || !near(usageCostUSD(p), 2*t4Price) || !p.Owned {
			t.Errorf("%s: billed %v USD, its GPUs in use %v; want the fleet's 2.104 and 1.052 in use", p.Policy, p.CostUSD, usageCostUSD(p))
		}
	}
	s := Summarize([]RunResult{r})
	h := s.Replays[0]
	if !math.IsNaN(h.CostRatio) || !strings.Contains(h.Note, "owned fleet") || s.BothQualify != 0 || !math.IsNaN(s.CostRatioGeomean) {
		t.Errorf("owned fleet: ratio %v, note %q, both qualify %d, geomean %v; want none, a note, 0, none", h.CostRatio, h.Note, s.BothQualify, s.CostRatioGeomean)
	}
}

// The what-if modes read --instance-skus and refuse a bad one naming the
// flag and the file; --fleet makes the cluster an owned fleet.
func TestInstanceSKUsFlag(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "counts.txt")
	good := filepath.Join(dir, "skus.csv")
	bad := filepath.Join(dir, "bad.csv")
	for f, body := range map[string]string{
		tr:   "5\n6\n7\n",
		good: "instance_type,gpu_type,gpus,vcpus,memory_gib,usd_per_hour\nbig.t4,T4,1,64,256,0.9\n",
		bad:  "instance_type,gpu_type,gpus,vcpus,memory_gib,usd_per_hour\nold.k80,K80,1,4,61,0.9\n",
	} {
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o := DefaultOptions()
	o.Trace, o.InstanceSKUs, o.Fleet, o.Preparation = tr, good, "T4=2", Preparation{}
	cfgs, err := o.configs()
	if err != nil {
		t.Fatal(err)
	}
	if c := cfgs[0]; len(c.SKUs) != 1 || c.SKUs[0].Name != "big.t4" || !c.Owned {
		t.Errorf("--instance-skus %s --fleet T4=2: SKUs %+v, owned %v; want big.t4 alone, owned", good, c.SKUs, c.Owned)
	}
	o.InstanceSKUs = bad
	if _, err := o.configs(); err == nil || !strings.Contains(err.Error(), "--instance-skus") || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "K80") {
		t.Errorf("a SKU of an unknown GPU type: %v; want an error naming the flag, the file and the type", err)
	}
	o.Trace, o.Fleet = "", ""
	if _, err := o.configs(); err == nil || !strings.Contains(err.Error(), "--instance-skus") {
		t.Errorf("--instance-skus without a what-if trace: %v; want an error naming the flag", err)
	}
}
