// Package calibration checks hetsev's models of GPU sharing against the
// measurements in data/measurements: the co-location model of
// pkg/interference against the closed-loop co-location files
// (gpu-colocation-h100) and the simulated model servers of
// internal/sim/modelserver, with that model and driven by internal/sim/
// replay as the demo and the evaluator drive them, against the open-loop
// serving files (gpu-serving-h100; the SharedGPU co-simulation is printed
// beside them for comparison). It also holds the fit of pkg/interference's
// coefficients (Fit), so that the fit and the checks read the files the
// same way.
package calibration

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/hetsev/hetsev/pkg/interference"
)

// ColocationFile is a closed-loop co-location measurement file
// (data/measurements/gpu-colocation-h100/*.json, written by colocation.py).
type ColocationFile struct {
	// Path is where the file was read from (for messages).
	Path string `json:"-"`
	// Graph: each forward ran as a captured CUDA graph (else eager).
	Graph *bool `json:"graph"`
	// MPS: the CUDA MPS control daemon ran (else default time-slicing).
	MPS       *bool                `json:"mps"`
	GPU       string               `json:"gpu"`
	Scenarios []ColocationScenario `json:"scenarios"`
}

// ColocationScenario is one scenario: members started together.
type ColocationScenario struct {
	Label   string             `json:"label"`
	Members []ColocationMember `json:"members"`
}

// ColocationMember is one instance's result in a scenario. Pointers tell a
// missing field from a zero.
type ColocationMember struct {
	// Worker is "<model>#<index>".
	Worker string `json:"worker"`
	// LatMsMean is the mean batch latency in ms.
	LatMsMean *float64 `json:"lat_ms_mean"`
	// BusyShare is the fraction of the scenario's time the instance had a
	// batch outstanding.
	BusyShare *float64 `json:"busy_share"`
}

// Model returns the model part of Worker ("resnet50#1" -> "resnet50").
func (m ColocationMember) Model() string { return modelOf(m.Worker) }

// Mode is the file's GPU sharing mode and execution.
func (f *ColocationFile) Mode() (interference.SharingMode, interference.Execution) {
	return modeOf(*f.MPS, *f.Graph)
}

// modelOf is the model part of a member's name in both measurement
// formats ("resnet50#1" -> "resnet50").
func modelOf(member string) string {
	name, _, _ := strings.Cut(member, "#")
	return name
}

// modeOf is the sharing mode and execution of a measurement file from its
// mps and graph fields.
func modeOf(mps, graph bool) (interference.SharingMode, interference.Execution) {
	mode, exec := interference.SharingTimeSlicing, interference.ExecutionEager
	if mps {
		mode = interference.SharingMPS
	}
	if graph {
		exec = interference.ExecutionCUDAGraph
	}
	return mode, exec
}

// Solo returns, per model, the solo mean batch latency in ms: the
// scenarios with a single member.
func (f *ColocationFile) Solo() map[string]float64 {
	solo := map[string]float64{}
	for _, s := range f.Scenarios {
		if len(s.Members) == 1 && s.Members[0].LatMsMean != nil {
			solo[s.Members[0].Model()] = *s.Members[0].LatMsMean
		}
	}
	return solo
}

// ReadColocation reads and checks a co-location file: the fields graph and
// mps, and for every member of a co-located scenario its worker, latency
// and busy share, a solo row of its model, and a known model (one with an
// occupancy for the file's mode in occupancies). Errors name the file and
// the field.
func ReadColocation(path string, occupancies interference.OccupancyTable) (*ColocationFile, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return ParseColocation(path, fh, occupancies)
}

// ParseColocation is ReadColocation on an open reader; path is for
// messages.
func ParseColocation(path string, r io.Reader, occupancies interference.OccupancyTable) (*ColocationFile, error) {
	var f ColocationFile
	dec := json.NewDecoder(r)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.Path = path
	if f.Graph == nil {
		return nil, fmt.Errorf("%s: field graph is missing", path)
	}
	if f.MPS == nil {
		return nil, fmt.Errorf("%s: field mps is missing", path)
	}
	if len(f.Scenarios) == 0 {
		return nil, fmt.Errorf("%s: field scenarios is missing or empty", path)
	}
	mode, exec := f.Mode()
	for si, s := range f.Scenarios {
		for mi, m := range s.Members {
			at := fmt.Sprintf("%s: scenarios[%d] (%q) members[%d]", path, si, s.Label, mi)
			if m.Model() == "" {
				return nil, fmt.Errorf("%s: field worker is missing or empty", at)
			}
			at += fmt.Sprintf(" (%s)", m.Worker)
			if m.LatMsMean == nil {
				return nil, fmt.Errorf("%s: field lat_ms_mean is missing", at)
			}
			if v := *m.LatMsMean; !(v > 0) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%s: field lat_ms_mean %g is not a positive number", at, v)
			}
			if m.BusyShare == nil {
				return nil, fmt.Errorf("%s: field busy_share is missing", at)
			}
			if v := *m.BusyShare; math.IsNaN(v) || v < 0 || v > 1.1 {
				return nil, fmt.Errorf("%s: field busy_share %g is not in [0, 1]", at, v)
			}
			if _, ok := occupancies.Lookup(mode, exec, m.Model()); !ok {
				return nil, fmt.Errorf("%s: field worker: unknown model %q (no solo occupancy for %s, %s; known: %s)", at, m.Model(), mode, exec, strings.Join(occupancies.Models(mode, exec), ", "))
			}
		}
	}
	solo := f.Solo()
	for si, s := range f.Scenarios {
		if len(s.Members) < 2 {
			continue
		}
		for mi, m := range s.Members {
			if _, ok := solo[m.Model()]; !ok {
				return nil, fmt.Errorf("%s: scenarios[%d] (%q) members[%d] (%s): no solo row for model %q (a scenario whose only member runs it), so its inflation is undefined", path, si, s.Label, mi, m.Worker, m.Model())
			}
		}
	}
	return &f, nil
}

// MemberPrediction is one co-located member: its measured and predicted
// latency inflation.
type MemberPrediction struct {
	Scenario  string
	Worker    string
	BusyShare float64
	Measured  float64 // lat_ms_mean over the model's solo lat_ms_mean
	Predicted float64
}

// AbsPctError is |Predicted-Measured|/Measured.
func (p MemberPrediction) AbsPctError() float64 {
	return math.Abs(p.Predicted-p.Measured) / p.Measured
}

// PredictColocation predicts every co-located member's latency inflation
// in f from the members' models (solo batch latency from the file's solo
// rows, occupancy from occupancies) and measured busy shares.
func PredictColocation(f *ColocationFile, model interference.Sharing, occupancies interference.OccupancyTable) ([]MemberPrediction, error) {
	mode, exec := f.Mode()
	solo := f.Solo()
	var out []MemberPrediction
	for _, s := range f.Scenarios {
		if len(s.Members) < 2 {
			continue
		}
		ins := make([]interference.Instance, len(s.Members))
		for i, m := range s.Members {
			o, _ := occupancies.Lookup(mode, exec, m.Model())
			ins[i] = interference.Instance{Model: m.Model(), BusyShare: *m.BusyShare, BatchLatency: solo[m.Model()] / 1000, Occupancy: o, Execution: exec}
		}
		inf, err := model.Inflations(mode, ins)
		if err != nil {
			return nil, fmt.Errorf("%s: scenario %q: %w", f.Path, s.Label, err)
		}
		for i, m := range s.Members {
			out = append(out, MemberPrediction{Scenario: s.Label, Worker: m.Worker, BusyShare: *m.BusyShare,
				Measured: *m.LatMsMean / solo[m.Model()], Predicted: inf[i]})
		}
	}
	return out, nil
}

// MAPE is the mean absolute percentage error (a fraction) of ps.
func MAPE(ps []MemberPrediction) float64 {
	if len(ps) == 0 {
		return math.NaN()
	}
	sum := 0.0
	for _, p := range ps {
		sum += p.AbsPctError()
	}
	return sum / float64(len(ps))
}

// WriteColocationReport prints m's table (per co-located member: busy
// share, measured inflation, the in-sample prediction and its error, the
// held-out prediction and its error), the in-sample and cross-validated
// MAPE and bias, and last the RESULT line, which quotes the
// cross-validated figures:
//
//	RESULT mode=<mode>/<execution> cv_mape=<fraction> bias=<signed fraction> members=<n> scenarios=<n>
func WriteColocationReport(w io.Writer, f *ColocationFile, m ModeFit) {
	fmt.Fprintf(w, "%s: %s, %s\n", f.Path, f.GPU, m.Mode)
	fmt.Fprintf(w, "%-62s %-22s %6s %9s %9s %7s %9s %7s\n", "scenario", "member", "busy", "measured", "predicted", "error", "held-out", "error")
	for i, p := range m.InSample {
		h := m.Held[i]
		fmt.Fprintf(w, "%-62s %-22s %6.3f %9.3f %9.3f %+6.1f%% %9.3f %+6.1f%%\n", p.Scenario, p.Worker, p.BusyShare, p.Measured, p.Predicted, 100*(p.Predicted-p.Measured)/p.Measured,
			h.Predicted, 100*(h.Predicted-h.Measured)/h.Measured)
	}
	fmt.Fprintf(w, "in sample (the shipped model): interference_mape=%.4f bias=%+.4f\n", m.MAPE, m.Bias)
	fmt.Fprintf(w, "held out (leave-one-scenario-out: refitted from calibration.FitStart without each of the %d scenarios): cv_mape=%.4f bias=%+.4f\n", m.Scenarios, m.CVMAPE, m.CVBias)
	fmt.Fprintf(w, "RESULT mode=%s cv_mape=%.4f bias=%+.4f members=%d scenarios=%d\n", m.Mode, m.CVMAPE, m.CVBias, m.Members, m.Scenarios)
}

// RunColocationCheck reads the co-location file at path, predicts its
// co-located members with model and occupancies and, leaving one scenario
// out at a time, with the model refitted from FitStart (CrossValidate),
// and writes the report (WriteColocationReport) to w.
func RunColocationCheck(w io.Writer, path string, model interference.Sharing, occupancies interference.OccupancyTable) error {
	f, err := ReadColocation(path, occupancies)
	if err != nil {
		return err
	}
	m, err := CrossValidate(f, model, occupancies, FitStart())
	if err != nil {
		return err
	}
	WriteColocationReport(w, f, m)
	return nil
}
