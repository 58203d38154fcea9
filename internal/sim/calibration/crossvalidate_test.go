package calibration

import (
	"math"
	"strings"
	"testing"

	"github.com/hetsev/hetsev/pkg/interference"
)

// Two MPS pairs of busy ResNet-50 instances: under MPS a pair of identical
// busy instances inflates by 1 + γ, so "mild" (1.5x) pins γ at 0.5 and
// "harsh" (3x) at 2, whatever the occupancies.
const mpsTwoPairs = `{"graph": true, "mps": true, "gpu": "test", "scenarios": [
 {"label": "solo resnet50", "members": [{"worker": "resnet50#0", "lat_ms_mean": 1.0, "busy_share": 1.0}]},
 {"label": "mild", "members": [{"worker": "resnet50#0", "lat_ms_mean": 1.5, "busy_share": 1.0},
                               {"worker": "resnet50#1", "lat_ms_mean": 1.5, "busy_share": 1.0}]},
 {"label": "harsh", "members": [{"worker": "resnet50#0", "lat_ms_mean": 3.0, "busy_share": 1.0},
                                {"worker": "resnet50#1", "lat_ms_mean": 3.0, "busy_share": 1.0}]}]}`

// TestCrossValidateHoldsTheScenarioOut: each scenario is predicted by the
// model refitted to the other one alone: "mild" at 3x (γ = 2, from
// "harsh"), "harsh" at 1.5x (γ = 0.5, from "mild"). Were the held-out
// scenario in its own fit, both would be predicted at 1.5x (the MAPE of the
// two together is least at γ = 0.5), and "mild" at 3x tells the fit ran.
func TestCrossValidateHoldsTheScenarioOut(t *testing.T) {
	occ := interference.H100Occupancy()
	f, err := ParseColocation("two-pairs.json", strings.NewReader(mpsTwoPairs), occ)
	if err != nil {
		t.Fatal(err)
	}
	start := FitStart()
	start.Sharing.MPS.Contention = 1
	m, err := CrossValidate(f, interference.FittedSharing(), occ, start)
	if err != nil {
		t.Fatal(err)
	}
	if m.Mode != "mps/cuda-graph" || m.Scenarios != 2 || m.Members != 4 || len(m.Held) != 4 {
		t.Fatalf("mode %q, %d scenarios, %d members, %d held out; want mps/cuda-graph, 2, 4, 4", m.Mode, m.Scenarios, m.Members, len(m.Held))
	}
	want := map[string]float64{"mild": 3, "harsh": 1.5}
	for _, p := range m.Held {
		if math.Abs(p.Predicted-want[p.Scenario]) > 1e-3 {
			t.Errorf("%s %s held out: predicted %.4f, want %.4f (the model fitted to the other scenario only)", p.Scenario, p.Worker, p.Predicted, want[p.Scenario])
		}
	}
	// Held-out errors: mild +100 %, harsh −50 %, two members each.
	if math.Abs(m.CVMAPE-0.75) > 1e-3 || math.Abs(m.CVBias-0.25) > 1e-3 {
		t.Errorf("cv_mape %.4f bias %+.4f, want 0.7500 +0.2500", m.CVMAPE, m.CVBias)
	}
}

// A file with one co-located scenario cannot be cross-validated: an error
// naming the file, the mode and why, not a NaN.
func TestCrossValidateNeedsTwoScenarios(t *testing.T) {
	occ := interference.H100Occupancy()
	one := strings.Replace(mpsTwoPairs, `"harsh", "members": [{"worker": "resnet50#0", "lat_ms_mean": 3.0, "busy_share": 1.0},
                                {"worker": "resnet50#1", "lat_ms_mean": 3.0, "busy_share": 1.0}]`,
		`"solo again", "members": [{"worker": "resnet50#0", "lat_ms_mean": 1.0, "busy_share": 1.0}]`, 1)
	f, err := ParseColocation("one-pair.json", strings.NewReader(one), occ)
	if err != nil {
		t.Fatal(err)
	}
	m, err := CrossValidate(f, interference.FittedSharing(), occ, FitStart())
	if err == nil {
		t.Fatalf("one co-located scenario: cross-validated to %+v, want an error", m)
	}
	for _, w := range []string{"one-pair.json", "mps/cuda-graph", "1 co-located scenario", "needs at least 2"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

// TestShippedModelDoesNotUnderPredict: on every co-location file the
// shipped model's signed bias is at least MinBias, in sample and
// leave-one-scenario-out cross-validated, and the shipped values are what
// Fit gives from FitStart (so that the cross-validation, which refits from
// FitStart, speaks for them).
func TestShippedModelDoesNotUnderPredict(t *testing.T) {
	occ := interference.H100Occupancy()
	var files []*ColocationFile
	for _, file := range []string{"timeslice-cudagraph.json", "mps-cudagraph.json", "timeslice-eager.json"} {
		f, err := ReadColocation("../../../data/measurements/gpu-colocation-h100/"+file, occ)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	refit, err := Fit(files, FitStart())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		m, err := CrossValidate(f, interference.FittedSharing(), occ, FitStart())
		if err != nil {
			t.Fatal(err)
		}
		if err := m.CheckBias(); err != nil {
			t.Error(err)
		}
		if math.Abs(m.MAPE-refit.MAPE[f.Path]) > 5e-4 {
			t.Errorf("%s: the shipped model's MAPE %.4f, Fit from FitStart %.4f: pkg/interference/fitted.go is not what make interference-fit writes", f.Path, m.MAPE, refit.MAPE[f.Path])
		}
	}
}
