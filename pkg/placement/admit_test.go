package placement

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/interference"
)

// Admit names the first rule a GPU breaks, in the order memory, busy
// share, anti-affinity, inflation limits.
func TestAdmitSaysWhy(t *testing.T) {
	pl := Placer{Choice: gpuinventory.Choice{MaxBusyShare: 1}, Colocation: interference.FittedColocation()}
	gpus, _ := gpuinventory.Account(gpuinventory.NodeGPUs{Count: 5, MemoryMiB: 16384}, []gpuinventory.Placement{
		{Index: 0, Demand: gpuinventory.Demand{Model: "ssd", MemoryMiB: 15000, BusyShare: 0.1}},
		{Index: 1, Demand: gpuinventory.Demand{Model: "ssd", MemoryMiB: 1024, BusyShare: 0.8}},
		{Index: 2, Demand: gpuinventory.Demand{Model: "bert", MemoryMiB: 1024, BusyShare: 0.1}},
		{Index: 3, Demand: gpuinventory.Demand{Model: "ssd", MemoryMiB: 1024, BusyShare: 0.6, MaxInflation: 1.05}},
	})
	d := gpuinventory.Demand{Model: "bert", MemoryMiB: 2048, BusyShare: 0.3}
	for i, want := range []string{RefusedGPUMemory, RefusedBusyShare, RefusedAntiAffinity, RefusedInflationLimit, ""} {
		got := ""
		if r := pl.Admit(gpus[i], d); r != nil {
			got = r.Reason
			if r.Message == "" {
				t.Errorf("GPU %d: refusal %s without a message", i, r.Reason)
			}
		}
		if got != want {
			t.Errorf("GPU %d: refused for %q, want %q", i, got, want)
		}
	}
}

// Slots places instances one after another, each counted before the
// next: on one empty 16 GiB GPU under soft anti-affinity, 6 GiB instances
// of busy share 0.3 fit twice (memory), of busy share 0.6 once (busy share
// cap 1); under hard anti-affinity once. The GPUs passed in are left as
// they were.
func TestSlotsCountsEachInstanceAgainstTheNext(t *testing.T) {
	gpus, _ := gpuinventory.Account(gpuinventory.NodeGPUs{Count: 1, MemoryMiB: 16384}, nil)
	soft := Placer{Choice: gpuinventory.Choice{MaxBusyShare: 1, SoftAntiAffinity: true}, Colocation: interference.FittedColocation()}
	hard := soft
	hard.Choice.SoftAntiAffinity = false
	for _, c := range []struct {
		pl   Placer
		busy float64
		want int
	}{{soft, 0.3, 2}, {soft, 0.6, 1}, {hard, 0.3, 1}} {
		d := gpuinventory.Demand{Model: "bert", MemoryMiB: 6144, BusyShare: c.busy}
		if got := c.pl.Slots(gpus, d, 0, 0, 0, 0); got != c.want {
			t.Errorf("soft %v, busy share %g: %d slots, want %d", c.pl.Choice.SoftAntiAffinity, c.busy, got, c.want)
		}
	}
	if gpus[0].Instances != 0 || gpus[0].UsedMiB != 0 || len(gpus[0].Models) != 0 {
		t.Errorf("Slots changed its input: %+v", gpus[0])
	}
	// Bounded by CPU: 5 free cores, 2 per instance.
	if got := soft.Slots(gpus, gpuinventory.Demand{MemoryMiB: 1024, BusyShare: 0.1}, 5000, 2000, 0, 0); got != 2 {
		t.Errorf("CPU-bound slots = %d, want 2", got)
	}
}

// An anti-affinity refusal names the model's identity: two teams'
// "resnet50" are two identities, so the bare name would not say whose
// instance holds the GPU.
func TestAntiAffinityRefusalNamesTheIdentity(t *testing.T) {
	d := gpuinventory.Demand{Model: "resnet50", Scope: "team-a", MemoryMiB: 2048, BusyShare: 0.1}
	gpus, _ := gpuinventory.Account(gpuinventory.NodeGPUs{Count: 1, MemoryMiB: 16384}, []gpuinventory.Placement{
		{Index: 0, Demand: gpuinventory.Demand{Model: "resnet50", Scope: "team-a", MemoryMiB: 2048, BusyShare: 0.1}},
	})
	r := Placer{Choice: gpuinventory.Choice{MaxBusyShare: 1}}.Admit(gpus[0], d)
	if r == nil || r.Reason != RefusedAntiAffinity {
		t.Fatalf("refusal %v, want %s", r, RefusedAntiAffinity)
	}
	if !strings.Contains(r.Message, `"team-a/resnet50"`) {
		t.Errorf("message %q does not name team-a/resnet50", r.Message)
	}
}

// Pick solves the co-location model once per GPU for both the inflation
// limits and the rating; what it decides must be what Admit and Rate say
// one by one, over random GPUs with and without limits.
func TestPickAgreesWithAdmitAndRate(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	models := []string{"resnet50", "ssd-resnet50", "bert-large"}
	for trial := range 500 {
		pl := Placer{Choice: gpuinventory.Choice{MaxBusyShare: 1 + rng.Float64()}, Colocation: interference.FittedColocation(), InterferenceWeight: 0.5 * float64(rng.IntN(2))}
		var ps []gpuinventory.Placement
		for range rng.IntN(8) {
			ps = append(ps, gpuinventory.Placement{Index: rng.IntN(3), Demand: gpuinventory.Demand{
				Model: models[rng.IntN(3)], MemoryMiB: 512 + int64(rng.IntN(4096)), BusyShare: 0.05 + 0.5*rng.Float64(),
				MaxInflation: []float64{0, 1.1, 1.5}[rng.IntN(3)]}})
		}
		gpus, _ := gpuinventory.Account(gpuinventory.NodeGPUs{Count: 3, MemoryMiB: 16384}, ps)
		d := gpuinventory.Demand{Model: models[rng.IntN(3)], MemoryMiB: 1024, BusyShare: 0.05 + 0.5*rng.Float64(), MaxInflation: []float64{0, 1.2}[rng.IntN(2)]}
		wantIdx, wantOK, best := 0, false, 0.0
		for _, g := range gpus {
			if pl.Admit(g, d) != nil {
				continue
			}
			if r := pl.Rate(g, d); !wantOK || r > best {
				wantIdx, best, wantOK = g.Index, r, true
			}
		}
		idx, rating, _, ok := pl.Pick(gpus, d)
		if ok != wantOK || ok && (idx != wantIdx || rating != best) {
			t.Fatalf("trial %d: Pick gives GPU %d rated %v (ok %v); Admit and Rate give GPU %d rated %v (ok %v)", trial, idx, rating, ok, wantIdx, best, wantOK)
		}
	}
}
