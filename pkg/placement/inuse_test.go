package placement

import (
	"testing"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// TestAdmitsInUseSkipsEmptyAndExceptedGPUs: of three T4s, GPU 0 hosts an
// SSD (busy 0.5), GPU 1 a ResNet-50, GPU 2 nothing. A ResNet-50 of busy
// share 0.25 is admitted beside the SSD; not when GPU 0 is the one
// excepted (GPU 1 hosts the model, GPU 2 is empty), nor under soft
// anti-affinity, whose fallback onto GPU 1 is a clash.
func TestAdmitsInUseSkipsEmptyAndExceptedGPUs(t *testing.T) {
	gpus, _ := gpuinventory.Account(gpuinventory.NodeGPUs{Count: 3, MemoryMiB: 16384}, []gpuinventory.Placement{
		{Index: 0, Demand: gpuinventory.Demand{Model: "ssd", MemoryMiB: 3072, BusyShare: 0.5}},
		{Index: 1, Demand: gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048, BusyShare: 0.25}},
	})
	d := gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048, BusyShare: 0.25}
	pl := Placer{Choice: gpuinventory.Choice{MaxBusyShare: 1, Consolidate: true}}
	if !pl.AdmitsInUse(gpus, d, -1) {
		t.Errorf("beside the SSD on GPU 0: not admitted, want admitted")
	}
	if pl.AdmitsInUse(gpus, d, 0) {
		t.Errorf("GPU 0 excepted: admitted, want not (GPU 1 hosts the model, GPU 2 is empty)")
	}
	soft := pl
	soft.Choice.SoftAntiAffinity = true
	if soft.AdmitsInUse(gpus, d, 0) {
		t.Errorf("GPU 0 excepted, soft anti-affinity: admitted, want not (a clash on GPU 1)")
	}
}
