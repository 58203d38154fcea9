package interference

import (
	"math"
	"strings"
	"testing"
)

// Solo mean batch latencies (s) of timeslice-cudagraph.json.
const (
	resnetL = 1.7666e-3
	bertL   = 18.350e-3
)

func within(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want)/want > tol {
		t.Errorf("%s = %.3f, want %.3f within %.0f %%", what, got, want, 100*tol)
	}
}

func TestFittedTimeSlicingMatchesMeasuredPairs(t *testing.T) {
	m := FittedSharing()
	busy := func(l float64) Instance { return Instance{BusyShare: 1, BatchLatency: l, Occupancy: 1} }
	// timeslice-cudagraph.json: 2 busy ResNet-50 2.14x; 4 busy 4.26x;
	// ResNet-50 + BERT-large 2.36x / 2.04x.
	f, err := m.Inflations(SharingTimeSlicing, []Instance{busy(resnetL), busy(resnetL)})
	if err != nil {
		t.Fatal(err)
	}
	within(t, "2x ResNet-50", f[0], 2.14, 0.10)
	f, _ = m.Inflations(SharingTimeSlicing, []Instance{busy(resnetL), busy(resnetL), busy(resnetL), busy(resnetL)})
	within(t, "4x ResNet-50", f[0], 4.26, 0.10)
	f, _ = m.Inflations(SharingTimeSlicing, []Instance{busy(resnetL), busy(bertL)})
	within(t, "ResNet-50 beside BERT-large", f[0], 2.36, 0.10)
	within(t, "BERT-large beside ResNet-50", f[1], 2.04, 0.10)
	// A neighbour busy half the time: about 1 + d (measured 1.55x at d = 0.49).
	f, _ = m.Inflations(SharingTimeSlicing, []Instance{busy(resnetL), {BusyShare: 0.49, BatchLatency: resnetL, Occupancy: 1}})
	within(t, "ResNet-50 beside a half-busy ResNet-50", f[0], 1.55, 0.10)
	// "none" is CUDA's default time-slicing.
	g, _ := m.Inflations(SharingNone, []Instance{busy(resnetL), busy(resnetL)})
	h, _ := m.Inflations(SharingTimeSlicing, []Instance{busy(resnetL), busy(resnetL)})
	if g[0] != h[0] {
		t.Errorf("none = %v, time-slicing = %v; want equal", g[0], h[0])
	}
}

func TestFittedMPSBigKernelsTakeTheGPU(t *testing.T) {
	m := FittedSharing()
	r := Instance{BusyShare: 1, BatchLatency: 1.977e-3, Occupancy: H100MPSOccupancyResNet50}
	b := Instance{BusyShare: 1, BatchLatency: 19.10e-3, Occupancy: 1}
	f, err := m.Inflations(SharingMPS, []Instance{r, b})
	if err != nil {
		t.Fatal(err)
	}
	// mps-cudagraph.json: ResNet-50 3.50x, BERT-large 1.25x.
	within(t, "ResNet-50 beside BERT-large under MPS", f[0], 3.50, 0.15)
	within(t, "BERT-large beside ResNet-50 under MPS", f[1], 1.25, 0.15)
	f, _ = m.Inflations(SharingMPS, []Instance{r, r})
	within(t, "2x ResNet-50 under MPS", f[0], 1.68, 0.10)
}

func TestInflationAloneIsOne(t *testing.T) {
	for _, mode := range []SharingMode{SharingNone, SharingTimeSlicing, SharingMPS} {
		f, err := FittedSharing().Inflation(mode, Instance{BusyShare: 1, BatchLatency: 0.01}, nil)
		if err != nil || f != 1 {
			t.Errorf("%s alone = %v, %v; want 1", mode, f, err)
		}
	}
}

func TestInflationsRefusesBadInput(t *testing.T) {
	m := FittedSharing()
	for _, c := range []struct {
		mode  SharingMode
		in    Instance
		field string
	}{
		{SharingTimeSlicing, Instance{Model: "r", BatchLatency: 0}, "BatchLatency"},
		{SharingTimeSlicing, Instance{Model: "r", BatchLatency: math.NaN()}, "BatchLatency"},
		{SharingMPS, Instance{Model: "r", BatchLatency: 1, Occupancy: 1.5}, "Occupancy"},
		{SharingMPS, Instance{Model: "r", BatchLatency: 1, FullBatchLatency: -1}, "FullBatchLatency"},
		{"exclusive", Instance{Model: "r", BatchLatency: 1}, "exclusive"},
	} {
		_, err := m.Inflations(c.mode, []Instance{c.in})
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("Inflations(%s, %+v) = %v, want an error naming %s", c.mode, c.in, err, c.field)
		}
	}
	bad := FittedSharing()
	bad.TimeSlicing.Slice = 0
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "TimeSlicing.Slice") {
		t.Errorf("Validate with Slice 0 = %v", err)
	}
	if err := FittedSharing().Validate(); err != nil {
		t.Errorf("FittedSharing().Validate() = %v", err)
	}
}

func TestParseSharingMode(t *testing.T) {
	for v, want := range map[string]SharingMode{"": SharingNone, "none": SharingNone, "time-slicing": SharingTimeSlicing, "mps": SharingMPS} {
		if got, err := ParseSharingMode(v); err != nil || got != want {
			t.Errorf("ParseSharingMode(%q) = %q, %v; want %q", v, got, err, want)
		}
	}
	if _, err := ParseSharingMode("timeslicing"); err == nil || !strings.Contains(err.Error(), SharingStrategyLabel) {
		t.Errorf("ParseSharingMode(timeslicing) = %v, want an error naming the label", err)
	}
}

// Eager instances are computed with EagerTimeSlicing, CUDA-graph ones with
// TimeSlicing; an unknown execution is refused naming the field.
func TestEagerInstancesUseTheirOwnSliceAndSwitch(t *testing.T) {
	m := FittedSharing()
	pair := func(exec Execution) []Instance {
		in := Instance{Model: "resnet50", BusyShare: 1, BatchLatency: 4.74e-3, Occupancy: H100EagerOccupancyResNet50, Execution: exec}
		return []Instance{in, in}
	}
	eager, err := m.Inflations(SharingTimeSlicing, pair(ExecutionEager))
	if err != nil {
		t.Fatal(err)
	}
	graph, _ := m.Inflations(SharingTimeSlicing, pair(ExecutionCUDAGraph))
	// The eager pair waits slices and switches of EagerTimeSlicing's
	// length, the graph pair TimeSlicing's.
	if eager[0] == graph[0] {
		t.Errorf("eager and CUDA-graph pair both inflate by %.4f; want EagerTimeSlicing to apply to eager instances", eager[0])
	}
	m.EagerTimeSlicing = m.TimeSlicing
	same, _ := m.Inflations(SharingTimeSlicing, pair(ExecutionEager))
	if math.Abs(same[0]-graph[0]) > 1e-12 {
		t.Errorf("with EagerTimeSlicing = TimeSlicing the eager pair inflates by %.4f, the graph pair by %.4f; want equal", same[0], graph[0])
	}
	_, err = m.Inflations(SharingTimeSlicing, []Instance{{Model: "r", BatchLatency: 0.01, Execution: "jit"}})
	if err == nil || !strings.Contains(err.Error(), "Execution") {
		t.Errorf("unknown execution: err = %v, want one naming Execution", err)
	}
}
