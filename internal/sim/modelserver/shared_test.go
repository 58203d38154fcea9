package modelserver

import (
	"math"
	"testing"

	"github.com/hetsev/hetsev/pkg/interference"
)

func sharedPair(t *testing.T, mode interference.SharingMode) *SharedGPU {
	t.Helper()
	cfg := func(name string) SharedServer {
		return SharedServer{Config: Config{Name: name, Model: "resnet50", BatchSize: 2, BatchLatency: 2e-3, BatchLatencies: []float64{1e-3, 2e-3}}, Occupancy: 0.5}
	}
	g, err := NewSharedGPU(mode, interference.FittedSharing(), []SharedServer{cfg("a"), cfg("b")})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// A server whose neighbour is idle runs at solo speed; two servers with
// work at the same time alternate on the GPU under time-slicing (each batch
// waits for the other's and two changes of context) and run concurrently,
// slowed, under MPS.
func TestSharedGPUSharesTheGPUOnlyWhileBothHaveWork(t *testing.T) {
	s := interference.FittedSharing().TimeSlicing.Switch
	g := sharedPair(t, interference.SharingTimeSlicing)
	res, err := g.Run([][]float64{{0, 0}, {0.1}})
	if err != nil {
		t.Fatal(err)
	}
	if d := res[0].Completions[0].Done; math.Abs(d-2e-3) > 1e-9 {
		t.Errorf("time-slicing, neighbour idle: batch of 2 done at %g s, want its solo 0.002 s", d)
	}
	if d := res[1].Completions[0].Done; math.Abs(d-(0.1+1e-3+s/2)) > 1e-9 {
		t.Errorf("time-slicing, later alone: batch of 1 done at %g s, want 0.101 s plus one change of context %g s", d, s/2)
	}
	res, _ = g.Run([][]float64{{0, 0, 1e-6, 1e-6}, {0, 0, 1e-6, 1e-6}})
	// a runs [0,2ms], b [2ms+s/2, 4ms+s/2], a's second batch [4ms+s, 6ms+s].
	if d := res[0].Completions[2].Done; math.Abs(d-(6e-3+s)) > 1e-9 {
		t.Errorf("time-slicing, both busy: a's second batch done at %g s, want %g", d, 6e-3+s)
	}
	if b := res[0].Busy; math.Abs(b-(2e-3+6e-3+s-2e-3)) > 1e-9 {
		t.Errorf("time-slicing, both busy: a busy %g s, want %g (its batches outstanding)", b, 6e-3+s)
	}
	m := sharedPair(t, interference.SharingMPS)
	res, _ = m.Run([][]float64{{0, 0}, {0, 0}})
	want := 2e-3 * (1 + interference.FittedMPSContention)
	if d := res[0].Completions[0].Done; math.Abs(d-want) > 1e-9 {
		t.Errorf("MPS, both busy: batch done at %g s, want 0.002 s x (1+γ) = %g", d, want)
	}
}
