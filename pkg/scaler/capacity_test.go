package scaler

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hetsev/hetsev/pkg/interference"
)

// TestCapacityInflationIsFitted: the latency factor the scaler gives each
// GPU type (TypeState.LatencyInflation) is the fitted model's inflation
// beside one neighbour of the same kind, both busy the saturation threshold
// (0.8 by default), with the profile's batch latency on that type: about
// 1.8 under time-slicing, not the estimated 1.18; under MPS 1 + 0.8·γ with
// ResNet-50's fitted occupancy on both sides.
func TestCapacityInflationIsFitted(t *testing.T) {
	s, err := validate(resnet(), defaultCatalog(t), wholeGPUDefaults())
	if err != nil {
		t.Fatal(err)
	}
	m := interference.FittedColocation()
	for i, l := range []float64{0.02241, 0.0115} { // T4, V100-32GB
		in := interference.Instance{BusyShare: 0.8, BatchLatency: l, Occupancy: 1}
		f, err := interference.FittedSharing().Inflations(interference.SharingTimeSlicing, []interference.Instance{in, in})
		if err != nil {
			t.Fatal(err)
		}
		got := s.typeState(i, 1, 1, s.capacityInflation(i, m, interference.SharingTimeSlicing), 1).LatencyInflation
		if math.Abs(got-f[0]) > 1e-12 || got < 1.7 || got > 2 {
			t.Errorf("%s: LatencyInflation %.4f, want the fitted %.4f (about 1.8)", s.types[i].gpuType.Name, got, f[0])
		}
	}
	if got, want := s.capacityInflation(0, m, interference.SharingMPS), 1+0.8*interference.FittedMPSContention; math.Abs(got-want) > 1e-12 {
		t.Errorf("mps: %.4f, want %.4f", got, want)
	}
	// A Reconciler without a model (no --interference-model) uses the fitted one.
	var r Reconciler
	if r.colocation().Source != interference.FittedSource || r.gpuSharing() != interference.SharingTimeSlicing {
		t.Errorf("default reconciler model %q, mode %q", r.colocation().Source, r.gpuSharing())
	}
}

// TestInterferenceModelFlag: --interference-model names a model file; a
// missing or bad one is refused naming the flag, the file and its field.
func TestInterferenceModelFlag(t *testing.T) {
	o := NewOptions()
	if err := o.Validate(); err != nil {
		t.Fatalf("default options: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: hetsev.io/interference/v1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o.InterferenceModel = bad
	err := o.Validate()
	for _, w := range []string{"--interference-model", bad, "timeSlicing: required"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("bad model file: err %v does not name %s", err, w)
		}
	}
}
