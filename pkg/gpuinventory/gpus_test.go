package gpuinventory

import "testing"

// TestSlotsOnNode: four 16 GiB GPUs, one hosting the model (anti-affinity)
// and one full: two fit; 5 free cores of 2 per instance allow 2, 3 GiB free
// of 2 GiB per instance allow 1.
func TestSlotsOnNode(t *testing.T) {
	gpus, _ := Account(NodeGPUs{Count: 4, MemoryMiB: 16384}, []Placement{
		{Index: 0, Demand: Demand{Model: "resnet50", MemoryMiB: 2048}},
		{Index: 1, Demand: Demand{Model: "big", MemoryMiB: 16000}},
	})
	d := Demand{Model: "resnet50", MemoryMiB: 2048}
	for _, c := range []struct {
		freeCPU, cpu, freeMem, mem int64
		want                       int
	}{
		{0, 0, 0, 0, 2},
		{5000, 2000, 1 << 20, 2048, 2},
		{3000, 2000, 1 << 20, 2048, 1},
		{5000, 2000, 3072, 2048, 1},
		{-100, 2000, 3072, 2048, 0},
	} {
		if got := SlotsOnNode(gpus, d, c.freeCPU, c.cpu, c.freeMem, c.mem); got != c.want {
			t.Errorf("SlotsOnNode(cpu %d/%d, mem %d/%d) = %d, want %d", c.freeCPU, c.cpu, c.freeMem, c.mem, got, c.want)
		}
	}
}
