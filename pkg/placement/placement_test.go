package placement

import (
	"math"
	"testing"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/interference"
)

// sumInflation is Σ (I - 1) of busy CUDA-graph instances of the given
// solo occupancies (ReferenceBatchLatency) under mode, by
// interference.FittedSharing directly.
func sumInflation(t *testing.T, mode interference.SharingMode, occ ...float64) float64 {
	t.Helper()
	ins := make([]interference.Instance, len(occ))
	for i, o := range occ {
		ins[i] = interference.Instance{BusyShare: 1, BatchLatency: ReferenceBatchLatency, Occupancy: o}
	}
	f, err := interference.FittedSharing().Inflations(mode, ins)
	if err != nil {
		t.Fatal(err)
	}
	var s float64
	for _, v := range f {
		s += v - 1
	}
	return s
}

// TestInterferenceAwareRating: on T4 GPUs (16384 MiB), a 2 GiB inception
// instance; GPU 0 hosts resnet50 (4 GiB): fit 0.625; GPU 1 hosts a and b
// (1 GiB each): fit 0.75. Under time-slicing every production profile is a
// busy CUDA-graph instance (occupancy 1), so ΔI is the fitted model's added
// inflation of one more busy instance: beside one (about 2.1: a busy pair
// doubles each other's latency) or two. Worst fit alone (w = 0) takes GPU 1;
// with w = 0.5 the GPU with fewer neighbours wins.
func TestInterferenceAwareRating(t *testing.T) {
	gpus := []gpuinventory.GPU{
		{Index: 0, TotalMiB: 16384, UsedMiB: 4096, Instances: 1, Models: map[string]int{"resnet50": 1}},
		{Index: 1, TotalMiB: 16384, UsedMiB: 2048, Instances: 2, Models: map[string]int{"a": 1, "b": 1}},
	}
	d := gpuinventory.Demand{Model: "inception", MemoryMiB: 2048}
	ts := interference.SharingTimeSlicing
	d0 := sumInflation(t, ts, 1, 1)
	d1 := sumInflation(t, ts, 1, 1, 1) - sumInflation(t, ts, 1, 1)
	if d0 < 2 || d0 > 2.5 || d1 <= d0 {
		t.Fatalf("fitted ΔI beside one busy instance %.3f, beside two %.3f: want about 2.1 and more", d0, d1)
	}
	fitted := interference.FittedColocation()
	for _, c := range []struct {
		name    string
		pl      Placer
		wantIdx int
		want    float64
	}{
		{"worst fit only", Placer{InterferenceWeight: 0, Colocation: fitted}, 1, 0.75},
		{"weight 0.5", Placer{InterferenceWeight: 0.5, Colocation: fitted}, 0, 0.5*0.625 + 0.5/(1+d0)},
		{"interference only", Placer{InterferenceWeight: 1, Colocation: fitted}, 0, 1 / (1 + d0)},
	} {
		idx, rating, clash, ok := c.pl.Pick(gpus, d)
		if !ok || clash || idx != c.wantIdx || math.Abs(rating-c.want) > 1e-9 {
			t.Errorf("%s: GPU %d rating %.5f (ok %v clash %v), want GPU %d rating %.5f", c.name, idx, rating, ok, clash, c.wantIdx, c.want)
		}
	}
	if r := (Placer{InterferenceWeight: 0.5, Colocation: fitted}).Rate(gpus[1], d); math.Abs(r-(0.375+0.5/(1+d1))) > 1e-9 {
		t.Errorf("GPU 1 rating %.5f, want %.5f", r, 0.375+0.5/(1+d1))
	}
}

// TestRatingFollowsNodeSharingMode: on an MPS node (GFD label
// nvidia.com/gpu.sharing-strategy=mps) a new resnet50 instance (fitted MPS
// occupancy 0.30) takes less from, and loses less to, an ssd300-vgg16
// (fitted 0.43) than a bert-large (occupancy 1, assumed): it prefers the GPU
// with the light neighbour, by the ΔI interference.FittedSharing predicts. On a node
// without the label (time-slicing) both neighbours weigh the same and worst
// fit decides (GPU 1, more free memory).
func TestRatingFollowsNodeSharingMode(t *testing.T) {
	gpus := []gpuinventory.GPU{
		{Index: 0, TotalMiB: 16384, UsedMiB: 3072, Instances: 1, Models: map[string]int{"ssd300-vgg16": 1}},
		{Index: 1, TotalMiB: 16384, UsedMiB: 2048, Instances: 1, Models: map[string]int{"bert-large": 1}},
	}
	d := gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048}
	pl := Placer{InterferenceWeight: 0.5, Colocation: interference.FittedColocation()}
	mps := pl.OnNode(map[string]string{interference.SharingStrategyLabel: "mps"})
	if mps.Mode != interference.SharingMPS {
		t.Fatalf("mode %q, want mps", mps.Mode)
	}
	r := interference.H100MPSOccupancyResNet50
	light, heavy := sumInflation(t, interference.SharingMPS, r, interference.H100MPSOccupancySSD300), sumInflation(t, interference.SharingMPS, r, 1)
	idx, rating, _, ok := mps.Pick(gpus, d)
	if want := 0.5*(16384-3072-2048)/16384.0 + 0.5/(1+light); !ok || idx != 0 || math.Abs(rating-want) > 1e-9 || light >= heavy {
		t.Errorf("mps: GPU %d rating %.5f, want GPU 0 rating %.5f (ΔI %.3f beside ssd300-vgg16 < %.3f beside bert-large)", idx, rating, want, light, heavy)
	}
	ts := pl.OnNode(nil)
	if idx, _, _, ok := ts.Pick(gpus, d); !ok || idx != 1 || ts.Mode != interference.SharingTimeSlicing {
		t.Errorf("time-slicing (%q): GPU %d, want 1", ts.Mode, idx)
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

// TestRatingUsesBusyShares: the rating predicts inflation with the
// neighbours' recorded busy shares (hetsev.io/busy-share), not with every
// neighbour busy all the time. GPU 0 hosts a resnet50 busy 90 % of the time,
// GPU 1 one busy 20 % (same memory): a new ssd (busy 0.5) is predicted to
// add less beside the light one and goes there; worst fit alone would take
// GPU 0 (the lower index of a tie).
func TestRatingUsesBusyShares(t *testing.T) {
	node := gpuinventory.NodeGPUs{Count: 2, MemoryMiB: 16384}
	gpus, _ := gpuinventory.Account(node, []gpuinventory.Placement{
		{Index: 0, Demand: gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048, BusyShare: 0.9}},
		{Index: 1, Demand: gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048, BusyShare: 0.2}},
	})
	d := gpuinventory.Demand{Model: "ssd", MemoryMiB: 2048, BusyShare: 0.5}
	pl := Placer{InterferenceWeight: 1, Colocation: interference.FittedColocation()}
	heavy, light := pl.AddedInflation(gpus[0], d), pl.AddedInflation(gpus[1], d)
	if !(light < heavy) {
		t.Errorf("ΔI beside a neighbour busy 0.2: %.4f, beside one busy 0.9: %.4f; want the first smaller", light, heavy)
	}
	if idx, _, _, ok := pl.Pick(gpus, d); !ok || idx != 1 {
		t.Errorf("picked GPU %d (ok %v), want 1 (the lighter neighbour)", idx, ok)
	}
	// The prediction is the model's at those shares as solo loads
	// (InflationsAtLoad): the declared share is what an instance keeps
	// the GPU busy alone.
	ins := func(busy ...float64) float64 {
		var s float64
		members := make([]interference.Instance, len(busy))
		for i, b := range busy {
			members[i] = interference.Instance{BusyShare: b, BatchLatency: ReferenceBatchLatency, Occupancy: 1, Execution: interference.ExecutionCUDAGraph}
		}
		f, err := interference.FittedSharing().InflationsAtLoad(interference.SharingTimeSlicing, members)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range f {
			s += v - 1
		}
		return s
	}
	if want := ins(0.2, 0.5) - ins(0.2); math.Abs(light-want) > 1e-6 {
		t.Errorf("ΔI beside a neighbour busy 0.2: %.6f, want %.6f", light, want)
	}
}

// TestAdmitsMaxInflation: a GPU is refused when the predicted inflation of
// the new instance exceeds its hetsev.io/max-inflation, or a neighbour's
// exceeds the neighbour's; a generous limit, or none, admits it.
func TestAdmitsMaxInflation(t *testing.T) {
	node := gpuinventory.NodeGPUs{Count: 1, MemoryMiB: 16384}
	place := func(limit float64) []gpuinventory.GPU {
		gpus, _ := gpuinventory.Account(node, []gpuinventory.Placement{
			{Index: 0, Demand: gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048, BusyShare: 0.9, MaxInflation: limit}},
		})
		return gpus
	}
	pl := Placer{Colocation: interference.FittedColocation()}
	for _, c := range []struct {
		name                string
		neighbour, newcomer float64
		want                bool
	}{
		{"no limits", 0, 0, true},
		{"newcomer's tight limit", 0, 1.01, false},
		{"newcomer's generous limit", 0, 100, true},
		{"neighbour's tight limit", 1.01, 0, false},
		{"neighbour's generous limit", 100, 0, true},
	} {
		gpus := place(c.neighbour)
		d := gpuinventory.Demand{Model: "ssd", MemoryMiB: 2048, BusyShare: 0.5, MaxInflation: c.newcomer}
		if got := pl.Admits(gpus[0], d); got != c.want {
			t.Errorf("%s: Admits %v, want %v", c.name, got, c.want)
		}
		if _, _, _, ok := pl.Pick(gpus, d); ok != c.want {
			t.Errorf("%s: Pick ok %v, want %v", c.name, ok, c.want)
		}
	}
}

// TestInflationOfPlacedInstance: the inflation of a placed instance grows
// with its neighbour's busy share and is 1 alone, or for a model not on the
// GPU.
func TestInflationOfPlacedInstance(t *testing.T) {
	node := gpuinventory.NodeGPUs{Count: 3, MemoryMiB: 16384}
	gpus, _ := gpuinventory.Account(node, []gpuinventory.Placement{
		{Index: 0, Demand: gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048, BusyShare: 0.3}},
		{Index: 0, Demand: gpuinventory.Demand{Model: "ssd", MemoryMiB: 2048, BusyShare: 0.9}},
		{Index: 1, Demand: gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048, BusyShare: 0.3}},
		{Index: 1, Demand: gpuinventory.Demand{Model: "ssd", MemoryMiB: 2048, BusyShare: 0.1}},
		{Index: 2, Demand: gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048, BusyShare: 0.3}},
	})
	pl := Placer{Colocation: interference.FittedColocation()}
	resnet50 := gpuinventory.Demand{Model: "resnet50"}
	heavy, light, alone := pl.Inflation(gpus[0], resnet50), pl.Inflation(gpus[1], resnet50), pl.Inflation(gpus[2], resnet50)
	if !(heavy > light && light > 1 && alone == 1) {
		t.Errorf("inflation beside ssd busy 0.9: %.3f, busy 0.1: %.3f, alone: %.3f; want heavy > light > 1 = alone", heavy, light, alone)
	}
	// Time-slicing: about 1 + the neighbour's busy share (the H100 measurements).
	if heavy < 1.6 || heavy > 2.2 {
		t.Errorf("inflation beside a neighbour busy 0.9: %.3f, want about 1.9", heavy)
	}
	if f := pl.Inflation(gpus[0], gpuinventory.Demand{Model: "bert"}); f != 1 {
		t.Errorf("inflation of a model not on the GPU: %.3f, want 1", f)
	}
}

// TestInflationPerNamespaceTenant: two namespaces' resnet50 share a GPU
// (two identities, anti-affinity allows it); each one's inflation is its
// own, beside the other's busy share, whether the GPU lists its instances'
// shares or only its identities (GPU.Models), and a third namespace's
// resnet50 is not on the GPU.
func TestInflationPerNamespaceTenant(t *testing.T) {
	node := gpuinventory.NodeGPUs{Count: 1, MemoryMiB: 16384}
	a := gpuinventory.Demand{Model: "resnet50", Scope: "a", MemoryMiB: 2048, BusyShare: 0.2}
	b := gpuinventory.Demand{Model: "resnet50", Scope: "b", MemoryMiB: 2048, BusyShare: 0.9}
	gpus, _ := gpuinventory.Account(node, []gpuinventory.Placement{{Index: 0, Demand: a}, {Index: 0, Demand: b}})
	pl := Placer{Colocation: interference.FittedColocation()}
	// a is busy 0.2 beside b busy 0.9: inflated more than b beside a.
	fa, fb := pl.Inflation(gpus[0], a), pl.Inflation(gpus[0], b)
	if !(fa > fb && fb > 1) {
		t.Errorf("a/resnet50 (busy 0.2 beside 0.9): %.3f, b/resnet50 (busy 0.9 beside 0.2): %.3f; want a > b > 1", fa, fb)
	}
	if f := pl.Inflation(gpus[0], gpuinventory.Demand{Model: "resnet50", Scope: "c"}); f != 1 {
		t.Errorf("c/resnet50, not on the GPU: %.3f, want 1", f)
	}
	// A GPU built from identities only: every instance busy all the
	// time, each read as its model (resnet50) by the co-location model.
	byID := gpuinventory.GPU{TotalMiB: 16384, UsedMiB: 4096, Instances: 2, Models: map[string]int{"a/resnet50": 1, "b/resnet50": 1}}
	full := gpuinventory.GPU{TotalMiB: 16384, UsedMiB: 4096, Instances: 2, Shares: []gpuinventory.InstanceShare{
		{Model: "resnet50", Scope: "a", BusyShare: 1}, {Model: "resnet50", Scope: "b", BusyShare: 1},
	}}
	for _, mode := range []interference.SharingMode{interference.SharingTimeSlicing, interference.SharingMPS} {
		pl.Mode = mode
		got, want := pl.Inflation(byID, a), pl.Inflation(full, a)
		if !(want > 1) || math.Abs(got-want) > 1e-9 {
			t.Errorf("%s: a/resnet50 on a GPU with Models only: %.3f, want %.3f as with Shares (> 1)", mode, got, want)
		}
	}
}

// TestConsolidateDeclared: with Consolidate, an instance that declares a
// busy share goes to a GPU in use where its share fits (worst fit among
// those), not to the emptier idle GPU; once the GPU in use is full under
// the cap, to an idle one. Without a declared share, or without
// Consolidate, worst fit picks the idle GPU.
func TestConsolidateDeclared(t *testing.T) {
	node := gpuinventory.NodeGPUs{Count: 2, MemoryMiB: 16384}
	gpus, _ := gpuinventory.Account(node, []gpuinventory.Placement{
		{Index: 0, Demand: gpuinventory.Demand{Model: "bert", MemoryMiB: 6144, BusyShare: 0.6}},
	})
	pl := Placer{Choice: gpuinventory.Choice{MaxBusyShare: 1, Consolidate: true}, InterferenceWeight: DefaultInterferenceWeight, Colocation: interference.FittedColocation()}
	light := gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048, BusyShare: 0.1}
	if idx, _, _, ok := pl.Pick(gpus, light); !ok || idx != 0 {
		t.Errorf("light declared instance: GPU %d (ok %v), want 0 (in use, 0.7 of 1)", idx, ok)
	}
	if idx, _, _, ok := pl.Pick(gpus, gpuinventory.Demand{Model: "ssd", MemoryMiB: 2048, BusyShare: 0.5}); !ok || idx != 1 {
		t.Errorf("instance of 0.5: GPU %d (ok %v), want 1 (0.6 + 0.5 > 1 on GPU 0)", idx, ok)
	}
	if idx, _, _, ok := pl.Pick(gpus, gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048}); !ok || idx != 1 {
		t.Errorf("undeclared instance: GPU %d (ok %v), want 1 (worst fit)", idx, ok)
	}
	pl.Choice.Consolidate = false
	if idx, _, _, ok := pl.Pick(gpus, light); !ok || idx != 1 {
		t.Errorf("without Consolidate: GPU %d (ok %v), want 1 (worst fit)", idx, ok)
	}
}
