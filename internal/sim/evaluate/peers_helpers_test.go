package evaluate

import (
	"testing"

	"github.com/hetsev/hetsev/pkg/catalog"
)

// resnetService is HetSev 6's ResNet-50 service: RT_max 400 ms, the
// default saturation threshold 0.8.
var resnetService = Service{Name: "r", Model: "resnet50", Share: 1, RTMaxMs: 400}

// peerConfig is a Config of svc on HetSevNodes(4) (8 V100-32GB and 8 T4)
// with the repo's catalog and profiles.
func peerConfig(t *testing.T, svc Service) *Config {
	t.Helper()
	cfg, err := Base("test", "test", constant(0, 10), HetSevNodes(4), svc)
	if err != nil {
		t.Fatal(err)
	}
	cfg.defaultSharing()
	return &cfg
}

// repoTypes is what a policy sees of model on V100-32GB and T4, in that
// order: the repo's profiles and prices, running[i] instances (all
// ready) and 10 free slots each.
func repoTypes(t *testing.T, cfg *Config, model string, running ...int) []typeView {
	t.Helper()
	var out []typeView
	for i, name := range []string{"V100-32GB", "T4"} {
		g, ok := cfg.Catalog.ByName(name)
		prof, okp := cfg.Profiles.Get(model, name)
		if !ok || !okp {
			t.Fatalf("no %s profile of %s", name, model)
		}
		out = append(out, typeView{prof: prof, gpu: g, running: running[i], ready: running[i], slots: 10, inflation: 1})
	}
	return out
}

// syntheticType is a GPU type with the given price (USD/h), throughput
// (requests/s) and batch latency (ms), for hand-worked cases the repo's
// two types cannot show.
func syntheticType(name string, price, tput, latencyMs float64, running int) typeView {
	return typeView{
		prof:    catalog.Profile{Model: "m", GPUType: name, BatchSize: 8, ThroughputRPS: tput, LatencyMs: latencyMs, LaunchSeconds: 20},
		gpu:     catalog.GPUType{Name: name, PriceUSDPerHour: price, MemoryMiB: 16384},
		running: running, ready: running, slots: 10, inflation: 1,
	}
}

// peerCluster is the simulated cluster of policy's replay of peerConfig's
// ResNet-50 service, with the indices of its T4 nodes, for hand-placed
// placement tests.
func peerCluster(t *testing.T, policy string) (*cluster, []int) {
	t.Helper()
	r, err := newPolicyRun(peerConfig(t, resnetService), policy)
	if err != nil {
		t.Fatal(err)
	}
	var t4 []int
	for i, nd := range r.cl.nodes {
		if nd.gpuType.Name == "T4" {
			t4 = append(t4, i)
		}
	}
	return r.cl, t4
}

// decisionLog replays cfg under policy with its decisions logged and
// returns those up to trace second until (all: a negative until).
func decisionLog(t *testing.T, cfg Config, policy string, until int) []decisionRecord {
	t.Helper()
	cfg.logDecisions = true
	cfg.defaultSharing()
	r, err := newPolicyRun(&cfg, policy)
	if err != nil {
		t.Fatal(err)
	}
	r.run()
	var out []decisionRecord
	for _, d := range r.decisions {
		if until < 0 || d.t <= until {
			out = append(out, d)
		}
	}
	return out
}
