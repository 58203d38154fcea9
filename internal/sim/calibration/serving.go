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
	"github.com/hetsev/hetsev/internal/sim/replay"
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
func (m ServingMember) Model() string { return modelOf(m.Server) }

// Mode is the file's sharing mode and execution.
func (f *ServingFile) Mode() (interference.SharingMode, interference.Execution) {
	return modeOf(*f.MPS, *f.Graph)
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
	Scenario, Server string
	// CoLocated is true when the scenario runs more than one server on
	// the GPU: its error is the co-location model's on top of the
	// server's own; a solo member's error is the server's alone.
	CoLocated                   bool
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
	// StepS is the length, in seconds of trace time, of the replay
	// engine's steps (replay.Engine.Step): the evaluator's 1 s by
	// default. The demo's steps are its tick times its time compression,
	// usually shorter. Interference is set once per step from the one
	// before, so a coarse step is the worse case.
	StepS float64
}

// DefaultSimOptions: 20 runs, 1 s steps.
var DefaultSimOptions = SimOptions{Runs: 20, Seed: 1, StepS: 1}

func (opt SimOptions) validate() error {
	if opt.Runs < 1 {
		return fmt.Errorf("serving simulation: Runs %d must be >= 1", opt.Runs)
	}
	if !(opt.StepS > 0) || math.IsInf(opt.StepS, 0) {
		return fmt.Errorf("serving simulation: StepS %g s must be finite and > 0", opt.StepS)
	}
	return nil
}

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

// servingConfig is the simulated server of member m of f: the file's
// batch latency per batch size, dynamic batching without delay (whenever
// the server is idle and requests wait, one batch of all waiting requests
// up to max_batch), as serving.py's servers batch.
func (f *ServingFile) servingConfig(m ServingMember) modelserver.Config {
	lat := f.Servers[m.Server].BatchLatencies()
	return modelserver.Config{Name: m.Server, Model: m.Model(), BatchSize: len(lat), BatchLatency: lat[len(lat)-1], BatchLatencies: lat}
}

// checkServable refuses files the simulated servers do not model.
func (f *ServingFile) checkServable() error {
	if _, exec := f.Mode(); exec != interference.ExecutionCUDAGraph {
		return fmt.Errorf("%s: field graph is false: the simulated servers model CUDA-graph/TensorRT execution only", f.Path)
	}
	return nil
}

// memberStats accumulates one member's percentiles and busy share over
// the runs.
type memberStats struct{ p50, p98, busy float64 }

// addRun adds one run's latencies (ms, any order; sorted in place) and
// busy share, each weighted 1/runs.
func (ms *memberStats) addRun(lats []float64, busy float64, runs int) {
	sort.Float64s(lats)
	ms.p50 += percentile(lats, 0.5) / float64(runs)
	ms.p98 += percentile(lats, 0.98) / float64(runs)
	ms.busy += busy / float64(runs)
}

// predictions returns the members of s not overloaded with their
// simulated stats.
func predictions(s ServingScenario, stats []memberStats) []ServingPrediction {
	var out []ServingPrediction
	for i, m := range s.Members {
		if *m.OverrunS >= OverrunLimit {
			continue
		}
		out = append(out, ServingPrediction{Scenario: s.Label, Server: m.Server, CoLocated: len(s.Members) > 1, RateRPS: *m.RateRPS,
			MeasuredBusy: *m.BusyShare, PredictedBusy: stats[i].busy,
			MeasuredP50: *m.LatMsP50, PredictedP50: stats[i].p50,
			MeasuredP98: *m.LatMsP98, PredictedP98: stats[i].p98})
	}
	return out
}

// memberSeed is the seed stream of member i of scenario si in run r.
func memberSeed(si, i, r int) uint64 { return uint64(si)<<32 | uint64(i)<<16 | uint64(r) }

// PredictServing simulates every scenario of f as the demo and the
// evaluator simulate model servers: a replay.Engine with the co-location
// model col and the file's sharing mode, one replay.Service per member at
// its rate_rps (each with its own arrivals and router), every member's
// modelserver.Server (servingConfig) on one replay.GPU, stepped over the
// file's dur_s in steps of opt.StepS, then drained; opt.Runs runs. The
// engine sets each server's latency factor every step from the members'
// busy shares in the step before (replay.Engine.Step). Members at or above
// OverrunLimit are left out of the result but still run (they load the
// GPU).
func PredictServing(f *ServingFile, col interference.Colocation, opt SimOptions) ([]ServingPrediction, error) {
	return predictServing(f, col, opt, func(int) bool { return true })
}

// predictServing is PredictServing of the scenarios si for which which(si)
// holds; a scenario's arrivals do not depend on the others simulated.
func predictServing(f *ServingFile, col interference.Colocation, opt SimOptions, which func(si int) bool) ([]ServingPrediction, error) {
	if err := f.checkServable(); err != nil {
		return nil, err
	}
	if err := opt.validate(); err != nil {
		return nil, err
	}
	mode, _ := f.Mode()
	dur := *f.DurS
	var out []ServingPrediction
	for si, s := range f.Scenarios {
		if !which(si) {
			continue
		}
		n := len(s.Members)
		// The engine's trace is the scenario's summed rate in every second;
		// each member's service is its share of it.
		total := 0.0
		for _, m := range s.Members {
			total += *m.RateRPS
		}
		rates := make([]float64, int(math.Ceil(dur)))
		for i := range rates {
			rates[i] = total
		}
		stats := make([]memberStats, n)
		for r := 0; r < opt.Runs; r++ {
			eng := replay.New(rates, col, mode)
			gpu := new(replay.GPU)
			lats := make([][]float64, n)
			insts := make([]*replay.Instance, n)
			for i, m := range s.Members {
				srv, err := modelserver.NewServer(f.servingConfig(m))
				if err != nil {
					return nil, fmt.Errorf("%s: scenario %q: %w", f.Path, s.Label, err)
				}
				seed := memberSeed(si, i, r)
				share := 0.0
				if total > 0 {
					share = *m.RateRPS / total
				}
				svc := eng.AddService(&replay.Service{Share: share, Arrivals: rand.New(rand.NewPCG(opt.Seed, seed)), Router: modelserver.NewRouter(opt.Seed ^ seed)})
				insts[i] = eng.Add(svc, gpu, srv, func(cs []modelserver.Completion) {
					for _, c := range cs {
						lats[i] = append(lats[i], (c.Done-c.Arrival)*1000)
					}
				})
			}
			busy := make([]float64, n)
			for k := 0; float64(k)*opt.StepS < dur; k++ {
				eng.Step(float64(k)*opt.StepS, math.Min(float64(k+1)*opt.StepS, dur))
				for i, in := range insts {
					busy[i] += in.Busy()
				}
			}
			eng.Drain()
			for i := range s.Members {
				if len(lats[i]) == 0 {
					return nil, fmt.Errorf("%s: scenario %q: %s served no request in run %d", f.Path, s.Label, s.Members[i].Server, r)
				}
				stats[i].addRun(lats[i], busy[i]/dur, opt.Runs)
			}
		}
		out = append(out, predictions(s, stats)...)
	}
	return out, nil
}

// PredictServingCoSim simulates every scenario of f with the servers of
// the scenario sharing one GPU in modelserver.SharedGPU, a co-simulation
// in virtual time that the demo and the evaluator do not run (each
// server's batch latency table, Poisson arrivals at its rate, the GPU's
// sharing mode with col's coefficients and the servers' solo occupancies,
// moment by moment rather than a factor per step), opt.Runs runs of dur_s
// each. serving-check prints it for comparison with PredictServing.
// Members at or above OverrunLimit are left out of the result but still
// run (they load the GPU).
func PredictServingCoSim(f *ServingFile, col interference.Colocation, opt SimOptions) ([]ServingPrediction, error) {
	if err := f.checkServable(); err != nil {
		return nil, err
	}
	if err := opt.validate(); err != nil {
		return nil, err
	}
	mode, exec := f.Mode()
	dur := *f.DurS
	var out []ServingPrediction
	for si, s := range f.Scenarios {
		n := len(s.Members)
		servers := make([]modelserver.SharedServer, n)
		for i, m := range s.Members {
			o, _ := col.Occupancy.Lookup(mode, exec, m.Model())
			servers[i] = modelserver.SharedServer{Config: f.servingConfig(m), Occupancy: o}
		}
		gpu, err := modelserver.NewSharedGPU(mode, col.Sharing, servers)
		if err != nil {
			return nil, fmt.Errorf("%s: scenario %q: %w", f.Path, s.Label, err)
		}
		stats := make([]memberStats, n)
		for r := 0; r < opt.Runs; r++ {
			arrivals := make([][]float64, n)
			for i, m := range s.Members {
				rng := rand.New(rand.NewPCG(opt.Seed, memberSeed(si, i, r)))
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
				stats[i].addRun(lats, rs.Busy/math.Max(dur, rs.End), opt.Runs)
			}
		}
		out = append(out, predictions(s, stats)...)
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

// WriteServingReport prints the replay engine's predictions per member
// (ps, from PredictServing; held, from CrossValidateServing, beside them
// when not nil), the co-simulation's MAPE (cosim, from
// PredictServingCoSim) on a line of its own, the p98 MAPE and signed bias
// (P98Bias) in sample and held out, and last the RESULT line, of what the
// demo and the evaluator run, which quotes the held-out figures:
//
//	RESULT mode=<mode>/<execution> cv_p98_mape=<fraction> bias=<signed fraction> members=<n>
//
// Without held (a model file, not fitted here) it quotes the in-sample
// ones as p98_mape and bias.
func WriteServingReport(w io.Writer, f *ServingFile, ps, held, cosim []ServingPrediction, opt SimOptions) {
	mode, exec := f.Mode()
	fmt.Fprintf(w, "%s: %s, %s, %s; %d runs of %gs\n", f.Path, f.GPU, mode, exec, opt.Runs, *f.DurS)
	fmt.Fprintf(w, "simulated servers: internal/sim/replay Engine with internal/sim/modelserver Server, as the demo and the evaluator run them (%gs steps, interference from the step before), dynamic batching without delay\n", opt.StepS)
	fmt.Fprintf(w, "%-33s %-20s %7s %11s %15s %15s %7s", "scenario", "server", "rate", "busy m/p", "p50 ms m/p", "p98 ms m/p", "p98 err")
	if held != nil {
		fmt.Fprintf(w, " %8s %7s", "held p98", "err")
	}
	fmt.Fprintln(w)
	for i, p := range ps {
		fmt.Fprintf(w, "%-33s %-20s %7.0f %5.2f/%5.2f %7.2f/%7.2f %7.2f/%7.2f %+6.1f%%", p.Scenario, p.Server, p.RateRPS,
			p.MeasuredBusy, p.PredictedBusy, p.MeasuredP50, p.PredictedP50, p.MeasuredP98, p.PredictedP98, 100*(p.PredictedP98-p.MeasuredP98)/p.MeasuredP98)
		if held != nil {
			h := held[i]
			fmt.Fprintf(w, " %8.2f %+6.1f%%", h.PredictedP98, 100*(h.PredictedP98-h.MeasuredP98)/h.MeasuredP98)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "co-simulation (SharedGPU, virtual time; for comparison, not what the demo runs): serving_p98_mape=%.4f members=%d\n", P98MAPE(cosim), len(cosim))
	fmt.Fprintf(w, "in sample (the model as configured): serving_p98_mape=%.4f bias=%+.4f\n", P98MAPE(ps), P98Bias(ps))
	name := ModeName(mode, exec)
	if held == nil {
		fmt.Fprintf(w, "held out: not run (the co-location model is not the one fitted here)\n")
		fmt.Fprintf(w, "RESULT mode=%s p98_mape=%.4f bias=%+.4f members=%d\n", name, P98MAPE(ps), P98Bias(ps), len(ps))
		return
	}
	fmt.Fprintf(w, "held out (co-location model refitted from calibration.FitStart without the co-location scenarios of each co-located scenario's models): cv_p98_mape=%.4f bias=%+.4f\n", P98MAPE(held), P98Bias(held))
	solo, shared := SplitCoLocated(held)
	fmt.Fprintf(w, "held-out bias by source: co-located members (co-location model and server) %s, solo members (server alone) %s\n", biasOver(shared), biasOver(solo))
	fmt.Fprintf(w, "RESULT mode=%s cv_p98_mape=%.4f bias=%+.4f members=%d\n", name, P98MAPE(held), P98Bias(held), len(held))
}

// biasOver is P98Bias of ps and how many members it is over, or "none".
func biasOver(ps []ServingPrediction) string {
	if len(ps) == 0 {
		return "none"
	}
	return fmt.Sprintf("%+.4f over %d", P98Bias(ps), len(ps))
}

// RunServingCheck reads the serving file at path, simulates it through
// the replay engine and, for comparison, the co-simulation, and writes
// the report to w. With colocationDir (the co-location files' folder,
// e.g. data/measurements/gpu-colocation-h100) it also simulates it held
// out (CrossValidateServing, refitting from FitStart against the file of
// the serving file's mode there); "" skips that, for a model that is not
// the one Fit gives.
func RunServingCheck(w io.Writer, path string, col interference.Colocation, opt SimOptions, colocationDir string) error {
	f, err := ReadServing(path, col.Occupancy)
	if err != nil {
		return err
	}
	ps, err := PredictServing(f, col, opt)
	if err != nil {
		return err
	}
	cosim, err := PredictServingCoSim(f, col, opt)
	if err != nil {
		return err
	}
	var held []ServingPrediction
	if colocationDir != "" {
		mode, exec := f.Mode()
		c, err := FindColocation(colocationDir, mode, exec, interference.H100Occupancy())
		if err != nil {
			return err
		}
		if held, err = CrossValidateServing(f, c, col, opt, FitStart()); err != nil {
			return err
		}
	}
	WriteSLOModelReport(w, SLOModelSolo(f))
	WriteServingReport(w, f, ps, held, cosim, opt)
	return nil
}
