package placement

import (
	"math"
	"testing"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/interference"
)

// TestInterferenceAwareRating works the rating by hand on T4 GPUs (16384
// MiB) for a 2 GiB inception instance, with the default coefficients
// (different pair +18 %):
//
//	GPU 0 hosts resnet50 (4 GiB): fit = (16384-4096-2048)/16384 = 0.625,
//	  ΔI = 0.18 + 0.18 = 0.36, rating(w=0.5) = 0.5*0.625 + 0.5/1.36 = 0.68015
//	GPU 1 hosts a and b (1 GiB each): fit = 12288/16384 = 0.75,
//	  ΔI = 4 * 0.18 = 0.72, rating(w=0.5) = 0.375 + 0.5/1.72 = 0.66570
//
// Worst fit alone (w = 0) takes GPU 1; with w = 0.5 the GPU with fewer
// neighbours wins. If resnet50 and inception interfere badly (pair
// override +100 %), GPU 0's ΔI = 2 and its rating 0.3125 + 0.5/3 = 0.47917:
// GPU 1 again.
func TestInterferenceAwareRating(t *testing.T) {
	gpus := []gpuinventory.GPU{
		{Index: 0, TotalMiB: 16384, UsedMiB: 4096, Instances: 1, Models: map[string]int{"resnet50": 1}},
		{Index: 1, TotalMiB: 16384, UsedMiB: 2048, Instances: 2, Models: map[string]int{"a": 1, "b": 1}},
	}
	d := gpuinventory.Demand{Model: "inception", MemoryMiB: 2048}
	bad := interference.Default()
	bad.Pairs = map[string]float64{interference.PairKey("resnet50", "inception"): 1.0}
	for _, c := range []struct {
		name    string
		pl      Placer
		wantIdx int
		want    float64
	}{
		{"worst fit only", Placer{InterferenceWeight: 0, Interference: interference.Default()}, 1, 0.75},
		{"weight 0.5", Placer{InterferenceWeight: 0.5, Interference: interference.Default()}, 0, 0.5*0.625 + 0.5/1.36},
		{"bad pair", Placer{InterferenceWeight: 0.5, Interference: bad}, 1, 0.375 + 0.5/1.72},
		{"interference only", Placer{InterferenceWeight: 1, Interference: interference.Default()}, 0, 1 / 1.36},
	} {
		idx, rating, clash, ok := c.pl.Pick(gpus, d)
		if !ok || clash || idx != c.wantIdx || math.Abs(rating-c.want) > 1e-9 {
			t.Errorf("%s: GPU %d rating %.5f (ok %v clash %v), want GPU %d rating %.5f", c.name, idx, rating, ok, clash, c.wantIdx, c.want)
		}
	}
	// GPU 0 with bad pair: its own rating, worked above.
	if r := (Placer{InterferenceWeight: 0.5, Interference: bad}).Rate(gpus[0], d); math.Abs(r-(0.3125+0.5/3)) > 1e-9 {
		t.Errorf("bad pair GPU 0 rating %.5f, want %.5f", r, 0.3125+0.5/3)
	}
	// An identical model on the GPU (soft anti-affinity) counts its
	// identical-pair inflation both ways: 2 * 0.40.
	soft := Placer{Choice: gpuinventory.Choice{SoftAntiAffinity: true}, InterferenceWeight: 1, Interference: interference.Default()}
	idx, rating, clash, ok := soft.Pick(gpus[:1], gpuinventory.Demand{Model: "resnet50", MemoryMiB: 1024})
	if !ok || !clash || idx != 0 || math.Abs(rating-1/1.8) > 1e-9 {
		t.Errorf("soft clash: GPU %d rating %.5f clash %v ok %v, want 0, %.5f, clash", idx, rating, clash, ok, 1/1.8)
	}
}

// TestWorstFit: with no interference weight the rating is worst fit
// (HetSev 4.2), ties to the lower index; the GPUs are
// gpuinventory.TestAccount's: GPU 0 holds resnet50 (2 GiB), GPU 1 ssd and
// bert (9 GiB).
func TestWorstFit(t *testing.T) {
	node := gpuinventory.NodeGPUs{Product: "Tesla-T4", Count: 2, MemoryMiB: 16384}
	gpus, _ := gpuinventory.Account(node, []gpuinventory.Placement{
		{Index: 0, Demand: gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048}},
		{Index: 1, Demand: gpuinventory.Demand{Model: "ssd", MemoryMiB: 3072}},
		{Index: 1, Demand: gpuinventory.Demand{Model: "bert", MemoryMiB: 6144}},
		{Index: 7, Demand: gpuinventory.Demand{Model: "ghost", MemoryMiB: 1}}, // out of range
	})
	worstFit := func(gpus []gpuinventory.GPU, d gpuinventory.Demand) (int, bool) {
		idx, _, _, ok := Placer{Choice: gpuinventory.Choice{Fit: gpuinventory.FitWorst}}.Pick(gpus, d)
		return idx, ok
	}
	// Worst fit: GPU 0 has the most free memory.
	if idx, ok := worstFit(gpus, gpuinventory.Demand{Model: "ssd", MemoryMiB: 1024}); !ok || idx != 0 {
		t.Fatalf("ssd -> %d %v, want 0", idx, ok)
	}
	// Anti-affinity: resnet50 is already on GPU 0, so it must go to GPU 1.
	if idx, ok := worstFit(gpus, gpuinventory.Demand{Model: "resnet50", MemoryMiB: 1024}); !ok || idx != 1 {
		t.Fatalf("resnet50 -> %d %v, want 1", idx, ok)
	}
	// Memory: 8 GiB fits only GPU 0; resnet50 there is forbidden, so none.
	if _, ok := worstFit(gpus, gpuinventory.Demand{Model: "resnet50", MemoryMiB: 8192}); ok {
		t.Fatal("resnet50 8GiB should not fit")
	}
	if idx, ok := worstFit(gpus, gpuinventory.Demand{Model: "", MemoryMiB: 14336}); !ok || idx != 0 {
		t.Fatalf("exact fit -> %d %v", idx, ok)
	}
}
