package evaluate

import (
	"testing"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// TestHAMiCoresSizing: ResNet-50 on a T4 (363 requests/s, 2,048 of 16,384
// MiB). A history peaking at 72.6 requests/s gives gpucores 20 (72.6 / 363
// = 0.2), one peaking at 73 gives 21 (0.2011 rounded up to a whole
// percent), one at 10 the memory floor 13 (0.125 rounded up); no history
// gives 100. The pod asks for the model's 2,048 MiB and carries its cores
// as the busy share the GPU's accounting sums; the HPA's target is
// cores x 0.8 x 363 per pod: at 700 requests/s on one pod with cores 20,
// ceil(700 / 58.08) = 13 wanted, at most 4 more in the HPA's first step.
func TestHAMiCoresSizing(t *testing.T) {
	for _, c := range []struct {
		peak  float64
		cores float64
		delta int
	}{{72.6, 0.2, 4}, {73, 0.21, 4}, {10, 0.13, 4}, {0, 1, 2}} {
		svc := resnetService
		if c.peak > 0 {
			svc.History = constant(c.peak, 60)
		}
		cfg := peerConfig(t, svc)
		p, err := newHAMiCoresPolicy(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if p.serviceType(0) != "T4" {
			t.Fatalf("type %q, want T4", p.serviceType(0))
		}
		base := gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048}
		want := gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048, BusyShare: c.cores}
		if got := p.demand(0, "T4", base); got != want || p.computeShare(0) != c.cores {
			t.Errorf("peak %v: demand %+v, cap %v; want %+v, cap %v", c.peak, got, p.computeShare(0), want, c.cores)
		}
		if got := p.decide(0, view{now: 0, arrival: 700, types: repoTypes(t, cfg, "resnet50", 0, 1)}); got[1] != c.delta {
			t.Errorf("peak %v: delta %v, want %d more T4 pods", c.peak, got, c.delta)
		}
	}
}

// TestHAMiCoresPlacement: four T4 nodes of 2 GPUs. Node 1 GPU 0 hosts a
// pod of 4,096 MiB with gpucores 50, node 2 GPU 0 one of 2,048 MiB with
// gpucores 80. HAMi binpacks nodes and spreads GPUs:
//   - a pod of 2,048 MiB and gpucores 30 goes to node 1 (the most memory
//     in use), on its emptier GPU 1;
//   - the next such pod: node 1 still has the most in use (6,144 MiB); GPU
//     0 has 50 + 30 = 80 cores left to use and 4,096 MiB in use, GPU 1
//     2,048 MiB: GPU 1 again;
//   - a pod of gpucores 60: node 1's GPUs hold 50 and 60 cores, none takes
//     60 more; node 2 GPU 0 holds 80, its GPU 1 none: node 2 GPU 1.
func TestHAMiCoresPlacement(t *testing.T) {
	c, t4 := peerCluster(t, PolicyHAMiCores)
	c.add(&instance{demand: gpuinventory.Demand{Model: "b", MemoryMiB: 4096, BusyShare: 0.5}}, t4[1], 0)
	c.add(&instance{demand: gpuinventory.Demand{Model: "d", MemoryMiB: 2048, BusyShare: 0.8}}, t4[2], 0)
	small := gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048, BusyShare: 0.3}
	for _, name := range []string{"A", "B"} {
		in := &instance{demand: small}
		if !c.place(in, "T4") || in.node != t4[1] || in.gpu != 1 {
			t.Errorf("pod %s on node %d GPU %d, want node %d GPU 1", name, in.node, in.gpu, t4[1])
		}
	}
	wide := &instance{demand: gpuinventory.Demand{Model: "c", MemoryMiB: 2048, BusyShare: 0.6}}
	if !c.place(wide, "T4") || wide.node != t4[2] || wide.gpu != 1 {
		t.Errorf("gpucores-60 pod on node %d GPU %d, want node %d GPU 1", wide.node, wide.gpu, t4[2])
	}
	// Now: node 1 GPU 0 50 cores, GPU 1 60; node 2 GPU 0 80, GPU 1 60;
	// nodes 0 and 3 empty. A gpucores-30 pod fits once on node 1 GPU 0,
	// once on GPU 1, once on node 2 GPU 1, and 3 times on each of the four
	// empty GPUs (100 / 30, below 8 by memory and 10 by count): 15.
	if got := c.slots("T4", small, 0, 0); got != 15 {
		t.Errorf("slots %d, want 15", got)
	}
}

// TestHAMiCoresCapsTheServers: every server of the service runs under
// its gpucores as HAMi-core enforces it (modelserver.Config.ComputeShare).
func TestHAMiCoresCapsTheServers(t *testing.T) {
	svc := resnetService
	svc.History = constant(72.6, 60)
	cfg := peerConfig(t, svc)
	r, err := newPolicyRun(cfg, PolicyHAMiCores)
	if err != nil {
		t.Fatal(err)
	}
	s := r.svcs[0]
	if err := r.start(s, r.firstType(s), 0); err != nil {
		t.Fatal(err)
	}
	if got := s.insts[0].run.Server.Config().ComputeShare; got != 0.2 {
		t.Errorf("server's compute share %v, want 0.2 (gpucores 20)", got)
	}
}
