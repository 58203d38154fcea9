package evaluate

import (
	"slices"
	"testing"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
)

// TestINFaaSCountsSoloCapacity: ResNet-50 at W = 500 requests/s on 2 T4
// instances whose neighbours slow them by 1.8 (the co-location inflation
// hetsev-scaler measures where they run). INFaaS counts them at their solo
// 363 requests/s: 726 in all, saturation 500 / 726 = 0.69 <= 0.8, no
// scale-out; and removing one would leave 363 < 500 / (0.8 - 0.1) = 714,
// no scale-in. hetsev-heuristic counts 363 / 1.8 = 201.7 each, 403.3 in
// all, saturation 1.24 > 0.8, and scales out.
func TestINFaaSCountsSoloCapacity(t *testing.T) {
	cfg := peerConfig(t, resnetService)
	v := view{now: 0, arrival: 500, types: repoTypes(t, cfg, "resnet50", 0, 2)}
	v.types[1].inflation = 1.8
	p, err := newINFaaSPolicy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.decide(0, v); !slices.Equal(got, []int{0, 0}) {
		t.Errorf("infaas: delta (V100-32GB, T4) %v, want [0 0]", got)
	}
	h, err := newHetsevPolicy(cfg, heterogeneity.SolverHeuristic, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.decide(0, v); got[0]+got[1] <= 0 {
		t.Errorf("hetsev-heuristic: delta (V100-32GB, T4) %v, want a scale-out", got)
	}
}

// TestINFaaSPacksByMemoryOnly: one T4 (16,384 MiB) and the demo's two
// services, idle, one instance each. INFaaS's pods declare their model and
// GPU memory only (ResNet-50 2,048 MiB, SSD 3,072 MiB: 5,120 MiB fit), so
// both share the GPU: one T4 billed for the 600 s, none unplaced, where
// hetsev's busy-share cap of 1 keeps the second one off it
// (TestBusyInstancesGetAGPUOfTheirOwn).
func TestINFaaSPacksByMemoryOnly(t *testing.T) {
	cfg := peerConfig(t, resnetService)
	p, err := newINFaaSPolicy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	base := gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048}
	if got := p.demand(0, "T4", base); got != base {
		t.Errorf("demand %+v, want %+v (no busy share, no inflation limit)", got, base)
	}
	r := run(t, constant(0, 600), t4Only(1), PolicyINFaaS, DemoServices()...)
	if r.PeakGPUs["T4"] != 1 || !near(r.CostUSD, t4Price/6) {
		t.Errorf("%d T4s, %v USD; want 1 T4 for 600 s, %v USD", r.PeakGPUs["T4"], r.CostUSD, t4Price/6)
	}
	for _, s := range r.Services {
		if s.Unplaced != 0 || !(s.CostUSD > 0) {
			t.Errorf("%s: %d unplaced, %v USD; want 0 and a share of the T4", s.Service, s.Unplaced, s.CostUSD)
		}
	}
}

// TestINFaaSPlacesOnLeastLoadedWorker: four T4 nodes (2 GPUs of 16,384
// MiB each), three GPUs in use. A worker is one GPU and its load the
// share of its GPU memory in use, as INFaaS's gpu_daemon reports it:
//   - node 0 GPU 0: a 12,288 MiB instance, load 0.75;
//   - node 1 GPU 0: a 4,096 MiB instance, load 0.25;
//   - node 2 GPU 0: a 3,072 MiB ResNet-50 instance, load 0.1875, the least
//     loaded, but it already runs ResNet-50 (one replica per worker);
//   - every other GPU empty.
//
// A ResNet-50 instance (2,048 MiB) goes to node 1 GPU 0, the least-loaded
// worker with the memory: not node 0 GPU 0 (best fit), not an empty GPU
// (worst fit). An instance of 13,500 MiB fits no GPU in use (13,312 MiB
// free at most) and opens an empty one, on a node in use: node 0 GPU 1.
func TestINFaaSPlacesOnLeastLoadedWorker(t *testing.T) {
	c, t4 := peerCluster(t, PolicyINFaaS)
	c.add(&instance{demand: gpuinventory.Demand{Model: "a", MemoryMiB: 12288}}, t4[0], 0)
	c.add(&instance{demand: gpuinventory.Demand{Model: "b", MemoryMiB: 4096}}, t4[1], 0)
	c.add(&instance{demand: gpuinventory.Demand{Model: "resnet50", MemoryMiB: 3072}}, t4[2], 0)
	in := &instance{demand: gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048}}
	if !c.place(in, "T4") || in.node != t4[1] || in.gpu != 0 {
		t.Errorf("ResNet-50 on node %d GPU %d, want node %d GPU 0 (least GPU memory in use)", in.node, in.gpu, t4[1])
	}
	big := &instance{demand: gpuinventory.Demand{Model: "c", MemoryMiB: 13500}}
	if !c.place(big, "T4") || big.node != t4[0] || big.gpu != 1 {
		t.Errorf("13,500 MiB instance on node %d GPU %d, want node %d GPU 1 (an empty GPU on a node in use)", big.node, big.gpu, t4[0])
	}
}
