package calibration

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/hetsev/hetsev/internal/sim/modelserver"
	"github.com/hetsev/hetsev/pkg/interference"
)

// ServingFile is an open-loop serving measurement file
// (data/measurements/gpu-serving-h100/*.json, written by serving.py).
type ServingFile struct {
	Path      string                   `json:"-"`
	DurS      *float64                 `json:"dur_s"`
	Graph     *bool                    `json:"graph"`
	MPS       *bool                    `json:"mps"`
	GPU       string                   `json:"gpu"`
	Servers   map[string]ServingServer `json:"servers"`
	Scenarios []ServingScenario        `json:"scenarios"`
}

// ServingServer is one server's solo batch latency table.
type ServingServer struct {
	// BatchLatencyMs is the solo batch latency in ms by batch size ("1".."B").
	BatchLatencyMs map[string]float64 `json:"batch_latency_ms"`
	MaxBatch       *int               `json:"max_batch"`
}

// ServingScenario is servers run together.
type ServingScenario struct {
	Label   string          `json:"label"`
	Members []ServingMember `json:"members"`
}

// ServingMember is one server's result in a scenario.
type ServingMember struct {
	Server    string   `json:"server"`
	RateRPS   *float64 `json:"rate_rps"`
	LatMsP50  *float64 `json:"lat_ms_p50"`
	LatMsP98  *float64 `json:"lat_ms_p98"`
	BusyShare *float64 `json:"busy_share"`
	OverrunS  *float64 `json:"overrun_s"`
}

// Model is the model part of Server ("resnet50#1" -> "resnet50").
func (m ServingMember) Model() string {
	name, _, _ := strings.Cut(m.Server, "#")
	return name
}

// Mode is the file's sharing mode and execution.
func (f *ServingFile) Mode() (interference.SharingMode, interference.Execution) {
	mode, exec := interference.SharingTimeSlicing, interference.ExecutionEager
	if *f.MPS {
		mode = interference.SharingMPS
	}
	if *f.Graph {
		exec = interference.ExecutionCUDAGraph
	}
	return mode, exec
}

// BatchLatencies returns a server's solo batch latencies in seconds for
// batch sizes 1..max_batch.
func (s ServingServer) BatchLatencies() []float64 {
	out := make([]float64, *s.MaxBatch)
	for b := 1; b <= *s.MaxBatch; b++ {
		out[b-1] = s.BatchLatencyMs[strconv.Itoa(b)] / 1000
	}
	return out
}

// ReadServing reads and checks a serving file: dur_s, graph, mps, every
// member's server with a batch latency table (its solo row) for every batch
// size, rate, percentiles, busy share and overrun, and a known model.
// Errors name the file and the field.
func ReadServing(path string, occupancies interference.OccupancyTable) (*ServingFile, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return ParseServing(path, fh, occupancies)
}

// ParseServing is ReadServing on an open reader; path is for messages.
func ParseServing(path string, r io.Reader, occupancies interference.OccupancyTable) (*ServingFile, error) {
	var f ServingFile
	if err := json.NewDecoder(r).Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.Path = path
	switch {
	case f.DurS == nil || !(*f.DurS > 0):
		return nil, fmt.Errorf("%s: field dur_s is missing or not > 0", path)
	case f.Graph == nil:
		return nil, fmt.Errorf("%s: field graph is missing", path)
	case f.MPS == nil:
		return nil, fmt.Errorf("%s: field mps is missing", path)
	case len(f.Scenarios) == 0:
		return nil, fmt.Errorf("%s: field scenarios is missing or empty", path)
	}
	mode, exec := f.Mode()
	for si, s := range f.Scenarios {
		for mi, m := range s.Members {
			at := fmt.Sprintf("%s: scenarios[%d] (%q) members[%d] (%s)", path, si, s.Label, mi, m.Server)
			if m.Model() == "" {
				return nil, fmt.Errorf("%s: field server is missing or empty", at)
			}
			srv, ok := f.Servers[m.Server]
			if !ok {
				return nil, fmt.Errorf("%s: no solo row for server %q: field servers.%s (its batch_latency_ms) is missing", at, m.Server, m.Server)
			}
			if srv.MaxBatch == nil || *srv.MaxBatch < 1 {
				return nil, fmt.Errorf("%s: field servers.%s.max_batch is missing or < 1", path, m.Server)
			}
			for b := 1; b <= *srv.MaxBatch; b++ {
				if v, ok := srv.BatchLatencyMs[strconv.Itoa(b)]; !ok || !(v > 0) || math.IsInf(v, 0) {
					return nil, fmt.Errorf("%s: field servers.%s.batch_latency_ms.%d is missing or not > 0", path, m.Server, b)
				}
			}
			for _, fv := range []struct {
				name string
				v    *float64
			}{{"rate_rps", m.RateRPS}, {"lat_ms_p50", m.LatMsP50}, {"lat_ms_p98", m.LatMsP98}, {"busy_share", m.BusyShare}, {"overrun_s", m.OverrunS}} {
				if fv.v == nil {
					return nil, fmt.Errorf("%s: field %s is missing", at, fv.name)
				}
				if math.IsNaN(*fv.v) || math.IsInf(*fv.v, 0) || *fv.v < 0 {
					return nil, fmt.Errorf("%s: field %s %g is not a number >= 0", at, fv.name, *fv.v)
				}
			}
			if _, ok := occupancies.Lookup(mode, exec, m.Model()); !ok {
				return nil, fmt.Errorf("%s: field server: unknown model %q (no solo occupancy for %s, %s; known: %s)", at, m.Model(), mode, exec, strings.Join(occupancies.Models(mode, exec), ", "))
			}
		}
	}
	return &f, nil
}

// OverrunLimit is the overrun_s from which a member counts as overloaded
// and is left out of the check (seconds).
const OverrunLimit = 0.5

// ServingPrediction is one member: measured and simulated latency
// percentiles (ms) and busy shares.
type ServingPrediction struct {
	Scenario, Server            string
	RateRPS                     float64
	MeasuredBusy, PredictedBusy float64
	MeasuredP50, PredictedP50   float64
	MeasuredP98, PredictedP98   float64
}

// SimOptions are the serving simulation's knobs.
type SimOptions struct {
	// Runs is how many independent runs of the file's dur_s of Poisson
	// arrivals each scenario is simulated for. Each run starts with idle
	// servers and an idle GPU, as every measured scenario did, and the
	// prediction of a percentile is its mean over the runs: the expected
	// value of what one measured run reports. (A short run near capacity
	// reports a shorter tail than the steady state, because its queue
	// starts empty; the simulation reproduces that rather than a long
	// steady-state run.)
	Runs int
	// Seed of the arrival processes.
	Seed uint64
}

// DefaultSimOptions: 20 runs.
var DefaultSimOptions = SimOptions{Runs: 20, Seed: 1}

// poisson returns the arrival times of a Poisson process at rate in
// [0, dur).
func poisson(rng *rand.Rand, rate, dur float64) []float64 {
	var out []float64
	for t := rng.ExpFloat64() / rate; t < dur; t += rng.ExpFloat64() / rate {
		out = append(out, t)
	}
	return out
}

// percentile returns the q-quantile of sorted xs as serving.py computes it
// (nearest rank on q(n-1)).
func percentile(xs []float64, q float64) float64 {
	return xs[int(math.Min(float64(len(xs)-1), math.Floor(q*float64(len(xs)-1)+0.5)))]
}

// PredictServing simulates every scenario of f with the servers of the
// scenario sharing one GPU (modelserver.SharedGPU: each server's batch
// latency table, Poisson arrivals at its rate, the GPU's sharing mode with
// model's coefficients and the servers' solo occupancies), opt.Runs runs of
// dur_s each. Members at or above OverrunLimit are left out of the result
// but still run (they load the GPU).
func PredictServing(f *ServingFile, model interference.Sharing, occupancies interference.OccupancyTable, opt SimOptions) ([]ServingPrediction, error) {
	mode, exec := f.Mode()
	if exec != interference.ExecutionCUDAGraph {
		return nil, fmt.Errorf("%s: field graph is false: the simulated servers model CUDA-graph/TensorRT execution only", f.Path)
	}
	if opt.Runs < 1 {
		return nil, fmt.Errorf("serving simulation: Runs %d must be >= 1", opt.Runs)
	}
	dur := *f.DurS
	var out []ServingPrediction
	for si, s := range f.Scenarios {
		n := len(s.Members)
		servers := make([]modelserver.SharedServer, n)
		for i, m := range s.Members {
			lat := f.Servers[m.Server].BatchLatencies()
			o, _ := occupancies.Lookup(mode, exec, m.Model())
			servers[i] = modelserver.SharedServer{Config: modelserver.Config{Name: m.Server, Model: m.Model(), BatchSize: len(lat), BatchLatency: lat[len(lat)-1], BatchLatencies: lat}, Occupancy: o}
		}
		gpu, err := modelserver.NewSharedGPU(mode, model, servers)
		if err != nil {
			return nil, fmt.Errorf("%s: scenario %q: %w", f.Path, s.Label, err)
		}
		p50, p98, busy := make([]float64, n), make([]float64, n), make([]float64, n)
		for r := 0; r < opt.Runs; r++ {
			arrivals := make([][]float64, n)
			for i, m := range s.Members {
				rng := rand.New(rand.NewPCG(opt.Seed, uint64(si)<<32|uint64(i)<<16|uint64(r)))
				arrivals[i] = poisson(rng, *m.RateRPS, dur)
			}
			res, err := gpu.Run(arrivals)
			if err != nil {
				return nil, fmt.Errorf("%s: scenario %q: %w", f.Path, s.Label, err)
			}
			for i, rs := range res {
				if len(rs.Completions) == 0 {
					return nil, fmt.Errorf("%s: scenario %q: %s served no request in run %d", f.Path, s.Label, s.Members[i].Server, r)
				}
				lats := make([]float64, len(rs.Completions))
				for k, c := range rs.Completions {
					lats[k] = (c.Done - c.Arrival) * 1000
				}
				sort.Float64s(lats)
				p50[i] += percentile(lats, 0.5) / float64(opt.Runs)
				p98[i] += percentile(lats, 0.98) / float64(opt.Runs)
				busy[i] += rs.Busy / math.Max(dur, rs.End) / float64(opt.Runs)
			}
		}
		for i, m := range s.Members {
			if *m.OverrunS >= OverrunLimit {
				continue
			}
			out = append(out, ServingPrediction{Scenario: s.Label, Server: m.Server, RateRPS: *m.RateRPS,
				MeasuredBusy: *m.BusyShare, PredictedBusy: busy[i],
				MeasuredP50: *m.LatMsP50, PredictedP50: p50[i],
				MeasuredP98: *m.LatMsP98, PredictedP98: p98[i]})
		}
	}
	return out, nil
}

// P98MAPE is the mean absolute percentage error (a fraction) of the
// predicted p98 latencies.
func P98MAPE(ps []ServingPrediction) float64 {
	if len(ps) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, p := range ps {
		s += math.Abs(p.PredictedP98-p.MeasuredP98) / p.MeasuredP98
	}
	return s / float64(len(ps))
}

// WriteServingReport prints the table and the RESULT line.
func WriteServingReport(w io.Writer, f *ServingFile, ps []ServingPrediction, opt SimOptions) {
	mode, exec := f.Mode()
	fmt.Fprintf(w, "%s: %s, %s, %s; simulated servers: internal/sim/modelserver SharedGPU, dynamic batching without delay, %d runs of %gs\n", f.Path, f.GPU, mode, exec, opt.Runs, *f.DurS)
	fmt.Fprintf(w, "%-32s %-20s %7s %11s %15s %15s %7s\n", "scenario", "server", "rate", "busy m/p", "p50 ms m/p", "p98 ms m/p", "p98 err")
	for _, p := range ps {
		fmt.Fprintf(w, "%-32s %-20s %7.0f %5.2f/%5.2f %7.2f/%7.2f %7.2f/%7.2f %+6.1f%%\n", p.Scenario, p.Server, p.RateRPS,
			p.MeasuredBusy, p.PredictedBusy, p.MeasuredP50, p.PredictedP50, p.MeasuredP98, p.PredictedP98, 100*(p.PredictedP98-p.MeasuredP98)/p.MeasuredP98)
	}
	fmt.Fprintf(w, "RESULT serving_p98_mape=%.4f members=%d\n", P98MAPE(ps), len(ps))
}

// RunServingCheck reads the serving file at path, simulates it and writes
// the report to w.
func RunServingCheck(w io.Writer, path string, model interference.Sharing, occupancies interference.OccupancyTable, opt SimOptions) error {
	f, err := ReadServing(path, occupancies)
	if err != nil {
		return err
	}
	ps, err := PredictServing(f, model, occupancies, opt)
	if err != nil {
		return err
	}
	WriteServingReport(w, f, ps, opt)
	return nil
}
