package calibration

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hetsev/hetsev/pkg/interference"
)

const colocationOK = `{"graph": true, "mps": false, "gpu": "test", "scenarios": [
 {"label": "solo resnet50", "members": [{"worker": "resnet50#0", "lat_ms_mean": 1.0, "busy_share": 1.0}]},
 {"label": "pair", "members": [{"worker": "resnet50#0", "lat_ms_mean": 2.1, "busy_share": 1.0},
                               {"worker": "resnet50#1", "lat_ms_mean": 2.1, "busy_share": 1.0}]}]}`

func TestParseColocationRefusesBadInput(t *testing.T) {
	occ := interference.H100Occupancy()
	for _, c := range []struct {
		name, doc string
		want      []string
	}{
		{"missing solo row", strings.Replace(colocationOK, `"solo resnet50", "members": [{"worker": "resnet50#0"`, `"solo other", "members": [{"worker": "ssd300-vgg16#0"`, 1),
			[]string{"bad.json", "no solo row", `"resnet50"`}},
		{"member without busy share", strings.Replace(colocationOK, `"lat_ms_mean": 2.1, "busy_share": 1.0}]`, `"lat_ms_mean": 2.1}]`, 1),
			[]string{"bad.json", "resnet50#1", "busy_share is missing"}},
		{"unknown model", strings.ReplaceAll(colocationOK, "resnet50#1", "vgg19#0"),
			[]string{"bad.json", "field worker", `unknown model "vgg19"`}},
		{"no mode", strings.Replace(colocationOK, `"mps": false,`, "", 1), []string{"bad.json", "field mps"}},
	} {
		_, err := ParseColocation("bad.json", strings.NewReader(c.doc), occ)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not name %s", c.name, err, w)
			}
		}
	}
	f, err := ParseColocation("ok.json", strings.NewReader(colocationOK), occ)
	if err != nil {
		t.Fatalf("valid file refused: %v", err)
	}
	ps, err := PredictColocation(f, interference.FittedSharing(), occ)
	if err != nil || len(ps) != 2 || ps[0].Measured != 2.1 {
		t.Fatalf("PredictColocation = %+v, %v; want 2 members measured 2.1", ps, err)
	}
}

const servingOK = `{"dur_s": 1, "graph": true, "mps": false, "gpu": "test",
 "servers": {"resnet50#0": {"batch_latency_ms": {"1": 1.0, "2": 1.2}, "max_batch": 2}},
 "scenarios": [{"label": "solo", "members": [{"server": "resnet50#0", "rate_rps": 300, "lat_ms_p50": 1.1,
   "lat_ms_p98": 2.0, "busy_share": 0.3, "overrun_s": 0}]}]}`

func TestParseServingRefusesBadInput(t *testing.T) {
	occ := interference.H100Occupancy()
	for _, c := range []struct {
		name, doc string
		want      []string
	}{
		{"missing solo row", strings.Replace(servingOK, `"servers": {"resnet50#0"`, `"servers": {"resnet50#9"`, 1),
			[]string{"bad.json", "no solo row", "servers.resnet50#0"}},
		{"missing batch size", strings.Replace(servingOK, `"2": 1.2`, `"3": 1.2`, 1),
			[]string{"bad.json", "servers.resnet50#0.batch_latency_ms.2"}},
		{"member without busy share", strings.Replace(servingOK, `"busy_share": 0.3, `, "", 1),
			[]string{"bad.json", "resnet50#0", "busy_share is missing"}},
		{"unknown model", strings.ReplaceAll(servingOK, "resnet50#0", "vgg19#0"),
			[]string{"bad.json", "field server", `unknown model "vgg19"`}},
	} {
		_, err := ParseServing("bad.json", strings.NewReader(c.doc), occ)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not name %s", c.name, err, w)
			}
		}
	}
	if _, err := ParseServing("ok.json", strings.NewReader(servingOK), occ); err != nil {
		t.Fatalf("valid file refused: %v", err)
	}
}

// The shipped measurements meet the calibration targets: interference MAPE
// <= 0.10 on every co-location file, serving p98 MAPE <= 0.25 on every
// serving file, both through the replay engine (what the demo and the
// evaluator run, serving-check's RESULT) and through the SharedGPU
// co-simulation it prints for comparison.
func TestShippedMeasurementsMeetTargets(t *testing.T) {
	occ := interference.H100Occupancy()
	for file, limit := range map[string]float64{
		"timeslice-cudagraph.json": 0.10, "mps-cudagraph.json": 0.10, "timeslice-eager.json": 0.10,
	} {
		f, err := ReadColocation("../../../data/measurements/gpu-colocation-h100/"+file, occ)
		if err != nil {
			t.Fatal(err)
		}
		ps, err := PredictColocation(f, interference.FittedSharing(), occ)
		if err != nil {
			t.Fatal(err)
		}
		if m := MAPE(ps); m > limit || len(ps) != 40 {
			t.Errorf("%s: interference MAPE %.4f over %d members, want <= %.2f over 40", file, m, len(ps), limit)
		}
	}
	if testing.Short() {
		return
	}
	col := interference.FittedColocation()
	for _, file := range []string{"timeslice-cudagraph-openloop.json", "mps-cudagraph-openloop.json"} {
		f, err := ReadServing("../../../data/measurements/gpu-serving-h100/"+file, occ)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []struct {
			name    string
			predict func(*ServingFile, interference.Colocation, SimOptions) ([]ServingPrediction, error)
		}{{"replay engine", PredictServing}, {"co-simulation (SharedGPU)", PredictServingCoSim}} {
			ps, err := p.predict(f, col, DefaultSimOptions)
			if err != nil {
				t.Fatal(err)
			}
			if m := P98MAPE(ps); m > 0.25 || len(ps) != 18 {
				t.Errorf("%s: %s: serving p98 MAPE %.4f over %d members, want <= 0.25 over 18", file, p.name, m, len(ps))
			}
		}
	}
}

// TestServingReport: the report has a row per member (with its held-out
// p98 where there is one), the co-simulation's MAPE, the in-sample and
// held-out p98 MAPE and bias on lines of their own, and ends with the
// replay engine's RESULT, of the held-out figures where there are; a step
// that is not > 0 is refused.
func TestServingReport(t *testing.T) {
	col := interference.FittedColocation()
	f, err := ParseServing("ok.json", strings.NewReader(servingOK), col.Occupancy)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := PredictServing(f, col, DefaultSimOptions)
	if err != nil || len(ps) != 1 || !(ps[0].PredictedP50 > 0) {
		t.Fatalf("PredictServing = %+v, %v; want 1 member with a p50", ps, err)
	}
	cosim, err := PredictServingCoSim(f, col, DefaultSimOptions)
	if err != nil || len(cosim) != 1 {
		t.Fatalf("PredictServingCoSim = %+v, %v; want 1 member", cosim, err)
	}
	cosim[0].PredictedP98 = 2 * cosim[0].MeasuredP98 // MAPE 1: tells the lines apart
	held := append([]ServingPrediction(nil), ps...)
	held[0].PredictedP98 = 0.5 * held[0].MeasuredP98 // MAPE 0.5, bias -0.5
	for _, c := range []struct {
		held       []ServingPrediction
		result, cv string
	}{
		{held, "RESULT mode=time-slicing/cuda-graph cv_p98_mape=0.5000 bias=-0.5000 members=1", "held out (co-location model refitted"},
		{nil, fmt.Sprintf("RESULT mode=time-slicing/cuda-graph p98_mape=%.4f bias=%+.4f members=1", P98MAPE(ps), P98Bias(ps)), "held out: not run"},
	} {
		var b strings.Builder
		WriteServingReport(&b, f, ps, c.held, cosim, DefaultSimOptions)
		lines := strings.Split(strings.TrimSpace(b.String()), "\n")
		n := len(lines)
		if lines[n-1] != c.result {
			t.Errorf("last line %q, want %q", lines[n-1], c.result)
		}
		if c.held != nil {
			// The held-out bias split by source: the one member is solo.
			if want := "held-out bias by source: co-located members (co-location model and server) none, solo members (server alone) -0.5000 over 1"; lines[n-2] != want {
				t.Errorf("line before RESULT %q, want %q", lines[n-2], want)
			}
			n--
		}
		if !strings.HasPrefix(lines[n-2], c.cv) {
			t.Errorf("line before RESULT %q, want one starting %q", lines[n-2], c.cv)
		}
		if want := fmt.Sprintf("in sample (the model as configured): serving_p98_mape=%.4f bias=%+.4f", P98MAPE(ps), P98Bias(ps)); lines[n-3] != want {
			t.Errorf("line %q, want %q", lines[n-3], want)
		}
		if !strings.HasPrefix(lines[n-4], "co-simulation (SharedGPU") || !strings.HasSuffix(lines[n-4], "serving_p98_mape=1.0000 members=1") {
			t.Errorf("line %q, want the co-simulation's MAPE 1.0000", lines[n-4])
		}
		if !strings.HasPrefix(lines[n-5], "solo ") || (c.held != nil) != strings.HasSuffix(lines[n-5], "-50.0%") {
			t.Errorf("line %q, want the member's row, with its held-out p98 error -50.0%% where held out", lines[n-5])
		}
	}
	bad := DefaultSimOptions
	bad.StepS = 0
	if _, err := PredictServing(f, col, bad); err == nil || !strings.Contains(err.Error(), "StepS") {
		t.Errorf("StepS 0: %v, want an error naming StepS", err)
	}
}
