package interference

import (
	"math"
	"testing"
)

// TestInflationsAtLoadAreTheBusyShareFixedPoint: three CUDA-graph ResNet-50
// instances whose solo loads sum to 1 (0.5, 0.25, 0.25). At those loads
// each batch waits for the others, so the busy share the model reads is
// b = min(1, u I): the inflations InflationsAtLoad returns are the model's
// (Inflations) at those busy shares, and larger than the model's with the
// solo loads read as busy shares, in every mode. A member busy all the
// time alone is busy all the time beside others: loads of 1 give
// Inflations' answer.
func TestInflationsAtLoadAreTheBusyShareFixedPoint(t *testing.T) {
	m := FittedSharing()
	loads := []float64{0.5, 0.25, 0.25}
	members := func(busy []float64) []Instance {
		out := make([]Instance, len(busy))
		for i, b := range busy {
			out[i] = Instance{Model: "resnet50", BusyShare: b, BatchLatency: resnetL}
		}
		return out
	}
	for _, mode := range []SharingMode{SharingTimeSlicing, SharingMPS} {
		atLoad, err := m.InflationsAtLoad(mode, members(loads))
		if err != nil {
			t.Fatal(err)
		}
		plain, err := m.Inflations(mode, members(loads))
		if err != nil {
			t.Fatal(err)
		}
		busy := make([]float64, len(loads))
		for i, u := range loads {
			busy[i] = math.Min(1, u*atLoad[i])
		}
		again, err := m.Inflations(mode, members(busy))
		if err != nil {
			t.Fatal(err)
		}
		for i := range loads {
			if math.Abs(again[i]-atLoad[i]) > 1e-6 {
				t.Errorf("%s: member %d (load %.2f): %.4f at load, but %.4f at its busy share %.3f; want equal", mode, i, loads[i], atLoad[i], again[i], busy[i])
			}
			if !(atLoad[i] > plain[i]+0.05) {
				t.Errorf("%s: member %d (load %.2f): %.4f at load, %.4f with the load read as busy share; want clearly more", mode, i, loads[i], atLoad[i], plain[i])
			}
		}
		full := []float64{1, 1, 1}
		a, _ := m.InflationsAtLoad(mode, members(full))
		b, _ := m.Inflations(mode, members(full))
		for i := range a {
			if math.Abs(a[i]-b[i]) > 1e-9 {
				t.Errorf("%s: busy all the time: %.6f at load, %.6f; want equal", mode, a[i], b[i])
			}
		}
	}
	if _, err := m.InflationsAtLoad("exclusive", members(loads)); err == nil {
		t.Error("InflationsAtLoad with an unknown mode: no error")
	}
}
