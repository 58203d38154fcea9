package evaluate

import (
	"slices"
	"testing"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// TestKAIFractionHPA: ResNet-50 (RT_max 400 ms) runs on T4, the cheapest
// per request (as TestHPABestTypeScalesOnItsType). With no history to size
// a fraction from, its pods get whole GPUs (fraction 1, all 16,384 MiB of
// a T4) and the HPA's target is 0.8 x 363 = 290.4 requests/s per pod: at
// W = 700 requests/s on one pod, ceil(700 / 290.4) = ceil(2.41) = 3 pods,
// 2 more T4 pods.
//
// With a history peaking at 72.6 requests/s, the fraction is 72.6 / 363 =
// 0.2 (above the model's 2,048 / 16,384 = 0.125 of the GPU's memory): a
// pod asks for ceil(0.2 x 16,384) = 3,277 MiB and the target is 0.2 x
// 290.4 = 58.08 requests/s per pod, so W = 700 on one pod asks
// ceil(700 / 58.08) = 13 pods; the HPA's first step adds at most
// max(4, 100 %) = 4, so 4 more. With a history peaking at 10 requests/s
// the memory floor holds: fraction 0.125, 2,048 MiB.
func TestKAIFractionHPA(t *testing.T) {
	cfg := peerConfig(t, resnetService)
	p, err := newKAIFractionPolicy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.serviceType(0); got != "T4" {
		t.Fatalf("type %q, want T4", got)
	}
	if got := p.decide(0, view{now: 0, arrival: 700, types: repoTypes(t, cfg, "resnet50", 0, 1)}); !slices.Equal(got, []int{0, 2}) {
		t.Errorf("delta (V100-32GB, T4) %v, want [0 2]", got)
	}
	base := gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048}
	if got, want := p.demand(0, "T4", base), (gpuinventory.Demand{Model: "resnet50", MemoryMiB: 16384}); got != want {
		t.Errorf("no history: demand %+v, want %+v (a whole GPU's memory)", got, want)
	}

	for _, c := range []struct {
		peak  float64
		mem   int64
		delta int
	}{{72.6, 3277, 4}, {10, 2048, 4}} {
		svc := resnetService
		svc.History = constant(c.peak, 60)
		cfg := peerConfig(t, svc)
		p, err := newKAIFractionPolicy(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.demand(0, "T4", base); got.MemoryMiB != c.mem {
			t.Errorf("peak %v: demand %d MiB, want %d", c.peak, got.MemoryMiB, c.mem)
		}
		if got := p.decide(0, view{now: 0, arrival: 700, types: repoTypes(t, cfg, "resnet50", 0, 1)}); !slices.Equal(got, []int{0, c.delta}) {
			t.Errorf("peak %v: delta (V100-32GB, T4) %v, want [0 %d]", c.peak, got, c.delta)
		}
	}
}

// TestKAIFractionBinpacks: four T4 nodes (2 GPUs of 16,384 MiB each);
// node 1 GPU 0 hosts a 4,096 MiB instance of another model, node 2 GPU 0 a
// 2,048 MiB one, every other GPU is empty. KAI's binpack puts each pod on
// the GPU with the most GPU memory in use that still fits, and nothing
// keeps two pods of one service apart:
//   - ResNet-50 pod A (2,048 MiB): node 1 GPU 0 (6,144 MiB in use), not
//     node 2 GPU 0 (the emptier GPU in use), not an empty GPU;
//   - ResNet-50 pod B: node 1 GPU 0 again (8,192 MiB in use);
//   - a 14,500 MiB pod: 8,192 MiB free on node 1 GPU 0 and 14,336 on node
//     2 GPU 0, too little; an empty GPU on a node in use, node 1 GPU 1
//     (the first such node).
//
// Slots for ResNet-50 (2,048 MiB, 2,000 millicores, 4,096 MiB of host
// memory; the hand-placed pods ask none): node 1 holds 8,192 / 2,048 = 4
// more on GPU 0 and none in the 1,884 MiB left on GPU 1; node 2 holds
// 14,336 / 2,048 = 7 + 16,384 / 2,048 = 8 = 15 by GPU memory and 63,488 /
// 4,096 = 15 by host memory; each empty node 16 by GPU memory, 15 by host
// memory. In all 4 + 15 + 2 x 15 = 49, where one per GPU without
// ResNet-50 would be 6.
func TestKAIFractionBinpacks(t *testing.T) {
	c, t4 := peerCluster(t, PolicyKAIFraction)
	c.add(&instance{demand: gpuinventory.Demand{Model: "b", MemoryMiB: 4096}}, t4[1], 0)
	c.add(&instance{demand: gpuinventory.Demand{Model: "d", MemoryMiB: 2048}}, t4[2], 0)
	resnet := gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048}
	for _, name := range []string{"A", "B"} {
		in := &instance{demand: resnet}
		if !c.place(in, "T4") || in.node != t4[1] || in.gpu != 0 {
			t.Errorf("pod %s on node %d GPU %d, want node %d GPU 0 (binpack)", name, in.node, in.gpu, t4[1])
		}
	}
	big := &instance{demand: gpuinventory.Demand{Model: "c", MemoryMiB: 14500}}
	if !c.place(big, "T4") || big.node != t4[1] || big.gpu != 1 {
		t.Errorf("14,500 MiB pod on node %d GPU %d, want node %d GPU 1", big.node, big.gpu, t4[1])
	}
	if got := c.slots("T4", resnet, 2000, 4096); got != 49 {
		t.Errorf("slots %d, want 49", got)
	}
}

// TestKAIFractionReplay: ResNet-50 at 200 requests/s on one T4 for 600 s,
// with a history peaking at 100 requests/s. Its fraction is 100 / 363 =
// 0.2755, 4,514 MiB of GPU memory, and the HPA's target 0.2755 x 290.4 =
// 80 requests/s per pod: ceil(200 / 80) = 3 pods, all on the one T4 (3 x
// 4,514 MiB): one T4 for the 600 s, none unplaced, 3 instances for most
// of the time, and billed as a g4dn.2xlarge while it holds the three (6
// vCPUs), a g4dn.xlarge before. Sized as a whole GPU (no history) it
// would run one.
func TestKAIFractionReplay(t *testing.T) {
	svc := resnetService
	svc.History = constant(100, 60)
	r := run(t, constant(200, 600), t4Only(1), PolicyKAIFraction, svc)
	s := r.Services[0]
	small, large := r.SKUHours["g4dn.xlarge"], r.SKUHours["g4dn.2xlarge"]
	if r.PeakGPUs["T4"] != 1 || !near(small+large, 1.0/6) || !(large > small) || !near(r.CostUSD, t4Price*small+0.752*large) || s.Unplaced != 0 {
		t.Errorf("%d T4s billed %v GPU-h, %v USD, %d unplaced; want 1 T4 for 600 s, mostly as a g4dn.2xlarge, 0 unplaced", r.PeakGPUs["T4"], r.SKUHours, r.CostUSD, s.Unplaced)
	}
	if h := s.InstanceHours["T4"]; !(h > 2.5/6) {
		t.Errorf("%v instance-hours on T4, want more than 2.5 x 600 s (three pods for most of it)", h)
	}
}
