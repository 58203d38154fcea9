package interference

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestLoadColocationEmptyPathIsFitted(t *testing.T) {
	c, err := LoadColocation("")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, FittedColocation()) {
		t.Fatalf("LoadColocation(\"\") = %+v, want FittedColocation", c)
	}
}

// The fitted model written as a file loads back as the same model.
func TestColocationFileRoundTrip(t *testing.T) {
	data, err := yaml.Marshal(FittedColocation().File())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "fitted.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadColocation(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, FittedColocation()) {
		t.Fatalf("loaded %+v\nwant %+v", c, FittedColocation())
	}
}

func TestParseColocationRefusesBadFilesNamingFileAndField(t *testing.T) {
	good := `version: hetsev.io/interference/v1
timeSlicing: {sliceSeconds: 0.002, switchSeconds: 0.0002, backToBackExponent: 8}
eagerTimeSlicing: {sliceSeconds: 0.003, switchSeconds: 0.0003, backToBackExponent: 8}
mps: {contention: 0.7, occupancyExponent: 0.9}
occupancy:
  mps: {cuda-graph: {resnet50: 0.3}}
`
	if c, err := ParseColocation("m.yaml", []byte(good)); err != nil || c.Sharing.MPS.Contention != 0.7 || c.Occupancy[SharingMPS][ExecutionCUDAGraph]["resnet50"] != 0.3 {
		t.Fatalf("good file: %+v, %v", c, err)
	}
	for _, c := range []struct{ name, edit, from, want string }{
		{"version", "version: v0", "version: hetsev.io/interference/v1", `version: "v0"`},
		{"missing slice", "timeSlicing: {switchSeconds: 0.0002, backToBackExponent: 8}", "timeSlicing: {sliceSeconds: 0.002, switchSeconds: 0.0002, backToBackExponent: 8}", "timeSlicing.sliceSeconds: required"},
		{"zero slice", "eagerTimeSlicing: {sliceSeconds: 0, switchSeconds: 0.0003, backToBackExponent: 8}", "eagerTimeSlicing: {sliceSeconds: 0.003, switchSeconds: 0.0003, backToBackExponent: 8}", "eagerTimeSlicing.sliceSeconds: 0 must be > 0"},
		{"negative contention", "mps: {contention: -0.7, occupancyExponent: 0.9}", "mps: {contention: 0.7, occupancyExponent: 0.9}", "mps.contention: -0.7 must be >= 0"},
		{"missing mps", "", "mps: {contention: 0.7, occupancyExponent: 0.9}", "mps: required"},
		{"occupancy out of range", "  mps: {cuda-graph: {resnet50: 1.3}}", "  mps: {cuda-graph: {resnet50: 0.3}}", "occupancy.mps.cuda-graph.resnet50: 1.3 must be in (0,1]"},
		{"unknown mode", "  exclusive: {cuda-graph: {resnet50: 0.3}}", "  mps: {cuda-graph: {resnet50: 0.3}}", "occupancy.exclusive: sharing mode"},
		{"unknown field", "mps: {contention: 0.7, occupancyExponent: 0.9, gamma: 1}", "mps: {contention: 0.7, occupancyExponent: 0.9}", `unknown field "gamma"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseColocation("m.yaml", []byte(strings.Replace(good, c.from, c.edit, 1)))
			if err == nil || !strings.Contains(err.Error(), "m.yaml") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one naming m.yaml and %q", err, c.want)
			}
		})
	}
	if _, err := LoadColocation(filepath.Join(t.TempDir(), "absent.yaml")); err == nil || !strings.Contains(err.Error(), "absent.yaml") {
		t.Fatalf("absent file: %v", err)
	}
}

// Production profiles are TensorRT/Triton (CUDA-graph) servers: occupancy 1
// under time-slicing; under MPS the fitted value for a measured model of the
// same name, else 1.
func TestProfileOccupancy(t *testing.T) {
	c := FittedColocation()
	for _, x := range []struct {
		mode  SharingMode
		model string
		want  float64
	}{
		{SharingTimeSlicing, "resnet50", 1}, {SharingNone, "resnet50", 1},
		{SharingMPS, "resnet50", H100MPSOccupancyResNet50}, {SharingMPS, "ssd-resnet50", 1}, {SharingMPS, "bert-large", 1},
	} {
		if got := c.ProfileOccupancy(x.mode, x.model); got != x.want {
			t.Errorf("ProfileOccupancy(%s, %s) = %g, want %g", x.mode, x.model, got, x.want)
		}
	}
}

// A busy neighbour of the same kind doubles a CUDA-graph instance's
// latency under time-slicing (measured: 2.14x for two ResNet-50), one busy
// half the time inflates it by about 1.5; under MPS it is 1 + busy·γ.
func TestColocationPairInflation(t *testing.T) {
	c := FittedColocation()
	if f := c.PairInflation(SharingTimeSlicing, "resnet50", 1, 0.0224); f < 2 || f > 2.3 {
		t.Errorf("time-slicing, busy 1: %.3f, want about 2.1", f)
	}
	if f := c.PairInflation(SharingTimeSlicing, "resnet50", 0.5, 0.0224); f < 1.4 || f > 1.7 {
		t.Errorf("time-slicing, busy 0.5: %.3f, want about 1.5", f)
	}
	if f, want := c.PairInflation(SharingMPS, "resnet50", 0.8, 0.0224), 1+0.8*FittedMPSContention; math.Abs(f-want) > 1e-12 {
		t.Errorf("mps, busy 0.8: %.4f, want %.4f", f, want)
	}
	if f := c.PairInflation(SharingTimeSlicing, "resnet50", 1, 0); f != 1 {
		t.Errorf("invalid latency: %g, want 1", f)
	}
}
