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
		if got := SlotsOnNode(gpus, d, 0, c.freeCPU, c.cpu, c.freeMem, c.mem); got != c.want {
			t.Errorf("SlotsOnNode(cpu %d/%d, mem %d/%d) = %d, want %d", c.freeCPU, c.cpu, c.freeMem, c.mem, got, c.want)
		}
	}
}

// TestSlotsOnNodeBusyShare: of three free-memory GPUs, one busy 0.7 and
// one busy 0.2, an instance declaring 0.5 fits two under the cap 1 and
// three without a cap; one declaring nothing is outside the cap.
func TestSlotsOnNodeBusyShare(t *testing.T) {
	gpus, _ := Account(NodeGPUs{Count: 3, MemoryMiB: 16384}, []Placement{
		{Index: 0, Demand: Demand{Model: "bert", MemoryMiB: 2048, BusyShare: 0.7}},
		{Index: 1, Demand: Demand{Model: "ssd", MemoryMiB: 2048, BusyShare: 0.2}},
	})
	for _, c := range []struct {
		share, cap float64
		want       int
	}{{0.5, 1, 2}, {0.5, 0, 3}, {0.9, 1, 1}, {0, 1, 3}} {
		d := Demand{Model: "resnet50", MemoryMiB: 2048, BusyShare: c.share}
		if got := SlotsOnNode(gpus, d, c.cap, 0, 0, 0, 0); got != c.want {
			t.Errorf("SlotsOnNode(busy share %g, cap %g) = %d, want %d", c.share, c.cap, got, c.want)
		}
	}
}
