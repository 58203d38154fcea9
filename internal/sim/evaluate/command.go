package evaluate

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hetsev/hetsev/internal/sim/trace"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
	"github.com/hetsev/hetsev/pkg/interference"
	"github.com/hetsev/hetsev/pkg/scaler"
)

// Options are `make evaluate`'s flags: the replays of the three shipped
// traces and the Azure Functions fleet replay by default, or the what-if
// mode for a user's trace with --trace or a user's per-function trace with
// --functions.
type Options struct {
	Out          string // directory for evaluation.json and the plots
	NodesPerType int    // servers per GPU type, 2 GPUs each
	Policies     string // comma-separated PolicyNames
	Seed         uint64
	// Seeds is how many arrival seeds each replay runs, Seed first
	// (seeds.go); the peers' settings are chosen on Seed.
	Seeds int
	// InterferenceTruth are scales of the replayed co-location slowdown's
	// excess (Config.InterferenceTruth), comma-separated; each replays
	// hetsev-exact and every peer at its chosen setting once more.
	InterferenceTruth string
	TwitterPeak       float64 // requests/s
	AzurePeak         float64 // requests/s
	// GPUSharing is the simulated GPUs' sharing mode (time-slicing or mps)
	// and InterferenceModel a co-location model file (empty: the fitted
	// model).
	GPUSharing        string
	InterferenceModel string
	// GPUMode is the simulated cluster's GPU accounting: annotations or
	// dra (Config.GPUMode).
	GPUMode string
	// Flavors are the hetsev policies' instance flavors, comma-separated
	// busy shares (Config.Flavors; "" or "1": whole GPUs only), by default
	// hetsev-scaler's.
	Flavors string

	// SweepThresholds and SweepPolicies are the Pareto sweep (pareto.go):
	// comma-separated saturation thresholds ("" for no sweep) and the
	// policies replayed at each (those of Policies among them).
	SweepThresholds string
	SweepPolicies   string
	// TuneTargets ("LOW,ANCHOR,HIGH"), TuneSteps and TunePolicies are
	// each peer's search for its best setting (tuning.go); TunePolicies
	// "" tunes none.
	TuneTargets  string
	TuneSteps    int
	TunePolicies string
	// Ablation reruns every replay with hetsev-exact and each of its rules
	// off in turn (ablation.go).
	Ablation bool
	// Seasonal, ModelThresholds and Flavors are the rules hetsev-scaler
	// ships on (scaler.DefaultDefaults), and by default the hetsev
	// policies replay with them: hetsev is scored as installed.
	// Replacement and Consolidation are hetsev-scaler's non-default
	// flags: either set adds hetsev-exact+flags (PolicyExactFlags),
	// hetsev-exact with them, as a labelled row and view, never the
	// headline.
	//
	// Seasonal is the seasonal forecast (Knobs.SeasonalForecast).
	Seasonal bool
	// Replacement turns the hetsev policies' make-before-break
	// replacement on (Knobs.Replacement).
	Replacement bool
	// Consolidation turns the hetsev policies' consolidation moves on
	// (Knobs.Consolidation).
	Consolidation bool
	// ModelThresholds gives the hetsev policies the saturation thresholds
	// derived from the SLO latency model (Knobs.ModelThresholds).
	ModelThresholds bool

	// Replays are the shipped replays to run, comma-separated Config
	// names (ReplayNames; "": all of them).
	Replays string

	// Functions configures the AzureFunctions replay and --functions.
	Functions FunctionWorkload

	// What-if mode.
	Trace         string
	FunctionsFile string // a per-function, per-minute trace
	// Fleet is the user's own cluster for the what-if modes, TYPE=COUNT,...
	// GPUs per catalog type (ParseFleet); empty: the mode's own cluster.
	Fleet                        string
	Services                     []Service
	Preparation                  Preparation
	Catalog, Profiles, Estimates string // CSV files; empty: data/profiles
	// InstanceSKUs is the what-if modes' instance SKU CSV (empty: the
	// repo's with the repo's catalog, none with --gpu-catalog).
	InstanceSKUs string
}

// DefaultOptions are the flags' defaults.
func DefaultOptions() Options {
	return Options{
		Out: "evaluation", NodesPerType: 16, Policies: strings.Join(PolicyNames, ","), Seed: 1, Seeds: 1,
		TwitterPeak: 1000, AzurePeak: 300, GPUSharing: string(interference.SharingTimeSlicing), GPUMode: GPUModeAnnotations,
		Preparation:     Preparation{SmoothWindow: 120, SmoothStep: 15},
		SweepThresholds: "0.6,0.7,0.8,0.9", SweepPolicies: strings.Join(DefaultSweepPolicies, ","),
		TuneTargets: "0.5,0.8,0.97", TuneSteps: DefaultTuning().Steps, TunePolicies: strings.Join(TunedPeers, ","),
		Seasonal: scaler.DefaultDefaults.SeasonalForecast, ModelThresholds: scaler.DefaultDefaults.ModelThresholds,
		Flavors: scaler.DefaultDefaults.Flavors.String(),
	}
}

type serviceFlags struct{ s *[]Service }

func (f serviceFlags) String() string {
	if f.s == nil {
		return ""
	}
	return fmt.Sprint(*f.s)
}
func (f serviceFlags) Set(v string) error {
	svc, err := ParseService(v)
	if err == nil {
		*f.s = append(*f.s, svc)
	}
	return err
}

// AddFlags registers o's flags on fs, with o's values as defaults.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Out, "out", o.Out, "directory for evaluation.json and the plots")
	fs.IntVar(&o.NodesPerType, "nodes-per-type", o.NodesPerType, "servers per GPU type, each with 2 GPUs, 40 CPUs and 62 GiB (the demo's testbed has 4)")
	fs.StringVar(&o.Replays, "replays", o.Replays, "the shipped replays to run, comma-separated, of "+strings.Join(ReplayNames, ", ")+" (empty: all; the what-if modes replay the user's trace instead)")
	fs.StringVar(&o.Policies, "policies", o.Policies, "policies to compare")
	fs.Uint64Var(&o.Seed, "seed", o.Seed, "seed of arrivals, routing and default Kubernetes' GPU types")
	fs.StringVar(&o.InterferenceTruth, "interference-truth", o.InterferenceTruth, "interference the scheduler does not define: comma-separated scales k in (1, 4]; for each, hetsev-exact and every peer at its chosen setting are replayed with each co-located instance slowed by 1 + k (f - 1) where the co-location model decisions read predicts f, and a RESULT line printed (empty: none)")
	fs.IntVar(&o.Seeds, "seeds", o.Seeds, "arrival seeds per replay, --seed first: the peers' settings are searched on the first, then hetsev-exact and each peer at its chosen setting are replayed at the others, for the cost ratio's mean and 95 % interval and qualification per seed (1 to 50)")
	fs.Float64Var(&o.TwitterPeak, "twitter-peak", o.TwitterPeak, "peak arrival rate the Twitter trace is scaled to, requests/s (the demo's)")
	fs.Float64Var(&o.AzurePeak, "azure-peak", o.AzurePeak, "peak arrival rate the Azure code trace is scaled to, requests/s")
	fs.StringVar(&o.GPUSharing, "gpu-sharing", o.GPUSharing, "how co-located instances share a simulated GPU: time-slicing (CUDA's default) or mps (the fitted co-location model's modes)")
	fs.StringVar(&o.GPUMode, "gpu-mode", o.GPUMode, "how the simulated cluster accounts GPU shares, as hetsev-scheduler's gpuMode: annotations (each instance's declared GPU memory on its GPU) or dra (a ResourceSlice per node with each GPU's memory capacity and an allocated ResourceClaim per instance, counted by pkg/dra as the scheduler and scaler do in DRA mode)")
	fs.StringVar(&o.Flavors, "flavors", o.Flavors, "instance flavors of hetsev-exact and hetsev-heuristic, as hetsev-scaler's --flavors and by default its default: busy shares in (0, 1], comma-separated and ascending (e.g. 0.1,0.25,0.5,1); each GPU type is offered in each, a light flavor f counted at f x T_i requests/s (a batch taking L_i / f, offered where 3 L_i / f <= RT_max, at the profile's batch or a measured smaller one) for f times the GPU's price; 1 (or empty): whole GPUs only")
	fs.StringVar(&o.InterferenceModel, "interference-model", o.InterferenceModel, "co-location model file (YAML/JSON, pkg/interference ColocationFile; default: the model fitted to the H100 measurements)")
	fs.StringVar(&o.Trace, "trace", o.Trace, "what-if mode: a trace file, per-second counts or one timestamp per request (RFC 3339 or the Azure traces' format)")
	fs.StringVar(&o.FunctionsFile, "functions", o.FunctionsFile, "what-if mode: a per-function, per-minute trace, one service per function by the AzureFunctions replay's rules (models, SLOs, scale, cluster); CSV with a header naming its columns in any order: HashFunction (required), HashOwner, HashApp, Trigger (optional; absent: every function's trigger is \"others\", the model's base RT_max and SL_min 0.98) and consecutive minute columns N or minute_N (the Azure Functions trace's format is HashOwner,HashApp,HashFunction,Trigger,<minute>,...)")
	fs.StringVar(&o.Fleet, "fleet", o.Fleet, "what-if mode: the cluster as TYPE=COUNT,..., COUNT GPUs of each catalog GPU type TYPE (e.g. T4=8,V100-32GB=4) in servers of 2 GPUs, 40 CPUs and 62 GiB (one of 1 GPU for an odd COUNT), in place of --nodes-per-type servers of each type (--trace) or the cluster that holds every function's peak in the history (--functions)")
	fs.IntVar(&o.Functions.Services, "function-services", o.Functions.Services, "services of the Azure Functions replay and --functions: the busiest this many functions (0: 64)")
	fs.StringVar(&o.SweepThresholds, "sweep-thresholds", o.SweepThresholds, "the Pareto sweep: saturation thresholds every swept policy is replayed at, comma-separated, each in (0, 1] (empty: no sweep)")
	fs.BoolVar(&o.Ablation, "ablation", o.Ablation, "rerun every replay with hetsev-exact and one change at a time (a 0.1 scale-in hysteresis, no stabilized scale-in, no light overflow, no launch-time forecast, no scale-in cool-down, decisions every 15 s instead of hetsev-scaler's default 5 s, a 60 s forecast span, and each of the seasonal forecast, model thresholds, replacement, consolidation and the instance flavors turned off where the replay has it and on where it does not), and print its cost and excess missed requests per variant")
	fs.BoolVar(&o.Consolidation, "consolidation", o.Consolidation, "turn consolidation on in the labelled hetsev-exact+flags row (pkg/heterogeneity replace.go: an instance alone on its GPU that the scheduler admits on a GPU in use moves there, the old removed once the new one is past its launch time)")
	fs.BoolVar(&o.Replacement, "replacement", o.Replacement, "turn make-before-break replacement on in the labelled hetsev-exact+flags row (pkg/heterogeneity replace.go: instances moved to a cheaper GPU type or flavor with at least their capacity, the old removed once the new are past their launch time)")
	fs.BoolVar(&o.ModelThresholds, "model-thresholds", o.ModelThresholds, "give hetsev-exact and hetsev-heuristic the saturation threshold hetsev-scaler derives from the SLO latency model at SL_min (its --model-thresholds, on by default as there) in place of each service's own, which the peers keep; =false: the service's own")
	fs.BoolVar(&o.Seasonal, "seasonal", o.Seasonal, "the seasonal forecast of hetsev-exact and hetsev-heuristic (hetsev-scaler's --seasonal-forecast, on by default as there; pkg/heterogeneity seasonal.go: a period of 5 to 60 min detected in each service's own per-minute arrival rate provisions for a recurring burst before it starts); =false: none")
	fs.StringVar(&o.SweepPolicies, "sweep-policies", o.SweepPolicies, "the policies of the Pareto sweep (those also in --policies)")
	fs.StringVar(&o.TuneTargets, "tune-targets", o.TuneTargets, "each peer's search for its best setting: LOW,ANCHOR,HIGH, the range of targets (shares of an instance's throughput) searched and the first tried, 0 < LOW <= ANCHOR <= HIGH <= 1")
	fs.IntVar(&o.TuneSteps, "tune-steps", o.TuneSteps, "bisection steps of each peer's target search after the anchor and the end of the range it points to, 0 to 8")
	fs.StringVar(&o.TunePolicies, "tune-policies", o.TunePolicies, "the peers searched for their best setting (target, and the HPA's sync period 15 or 5 s or Knative's stable window 60 or 30 s), comma-separated; empty: every peer at its default configuration only")
	fs.IntVar(&o.Functions.HistoryMinutes, "function-history", o.Functions.HistoryMinutes, "minutes at the start of the Azure Functions trace and --functions that are history, not replayed: the busy shares an operator declares and the peers' capacity plans come from them (0: 120; the trace needs at least 10 minutes more)")
	fs.Float64Var(&o.Functions.Scale, "function-scale", o.Functions.Scale, "factor on every function's rate in the Azure Functions replay and --functions (0: so the history's total mean load needs as many GPUs as half the services; 1: as recorded)")
	fs.Var(serviceFlags{&o.Services}, "service", "what-if mode: NAME=MODEL,SHARE,RT_MAX_MS[,SATURATION_THRESHOLD], repeatable (default: the demo's resnet50 and ssd)")
	fs.Float64Var(&o.Preparation.PeakRPS, "peak", o.Preparation.PeakRPS, "what-if mode: scale the trace to this peak, requests/s (0: as recorded)")
	fs.BoolVar(&o.Preparation.FillGaps, "fill-gaps", o.Preparation.FillGaps, "what-if mode: treat runs of zero seconds as data gaps and hold the last rate")
	fs.IntVar(&o.Preparation.SmoothWindow, "smooth-window", o.Preparation.SmoothWindow, "what-if mode: average the rate over this many seconds (HetSev 6; 0: raw)")
	fs.IntVar(&o.Preparation.SmoothStep, "smooth-step", o.Preparation.SmoothStep, "what-if mode: recompute the average every this many seconds")
	fs.StringVar(&o.Catalog, "gpu-catalog", o.Catalog, "what-if mode: GPU catalog CSV (default: data/profiles/gpu_catalog.csv)")
	fs.StringVar(&o.InstanceSKUs, "instance-skus", o.InstanceSKUs, "what-if mode: cloud instance types CSV (instance_type,gpu_type,gpus,vcpus,memory_gib,usd_per_hour; default: data/profiles/instance_skus.csv with the repo's catalog, none with --gpu-catalog): a GPU in use is billed as the cheapest share of one that holds its pods' CPU and memory, a type without one at its catalog price")
	fs.StringVar(&o.Profiles, "profiles", o.Profiles, "what-if mode: model profiles CSV (with --estimates; default: data/profiles, with its small_batches.csv; own profiles have no smaller batches, so no flavor runs below the profile's batch)")
	fs.StringVar(&o.Estimates, "estimates", o.Estimates, "what-if mode: instance estimates CSV (with --profiles)")
}

// configs are the replays o asks for.
func (o Options) configs() ([]Config, error) {
	if o.Trace != "" && o.FunctionsFile != "" {
		return nil, fmt.Errorf("--trace and --functions: give one trace")
	}
	if o.Replays != "" && (o.Trace != "" || o.FunctionsFile != "") {
		return nil, fmt.Errorf("--replays selects among the shipped replays; --trace and --functions replay the user's own")
	}
	if o.Fleet != "" && o.Trace == "" && o.FunctionsFile == "" {
		return nil, fmt.Errorf("--fleet applies to --trace and --functions (the shipped replays have their own clusters)")
	}
	if o.InstanceSKUs != "" && o.Trace == "" && o.FunctionsFile == "" {
		return nil, fmt.Errorf("--instance-skus applies to --trace and --functions (the shipped replays bill the repo's)")
	}
	var fleet []FleetGPUs
	if o.Fleet != "" {
		var err error
		if fleet, err = ParseFleet(o.Fleet); err != nil {
			return nil, err
		}
	}
	if o.FunctionsFile != "" {
		if len(o.Services) > 0 {
			return nil, fmt.Errorf("--service does not apply to --functions: each function is a service")
		}
		c, err := WhatIfFunctions(o.FunctionsFile, o.Functions, o.Catalog, o.Profiles, o.Estimates)
		if err != nil {
			return nil, err
		}
		if o.InstanceSKUs != "" {
			if err := c.loadSKUs(o.InstanceSKUs); err != nil {
				return nil, err
			}
		}
		return withFleet(c, fleet)
	}
	if o.Trace != "" {
		services := o.Services
		if len(services) == 0 {
			services = DemoServices()
		}
		c, err := WhatIf(o.Trace, o.Preparation, HetSevNodes(o.NodesPerType), services, o.Catalog, o.Profiles, o.Estimates)
		if err != nil {
			return nil, err
		}
		if o.InstanceSKUs != "" {
			if err := c.loadSKUs(o.InstanceSKUs); err != nil {
				return nil, err
			}
		}
		return withFleet(c, fleet)
	}
	want, err := parseReplays(o.Replays)
	if err != nil {
		return nil, err
	}
	tw, err := Twitter(o.TwitterPeak, o.NodesPerType)
	if err != nil {
		return nil, err
	}
	az, err := AzureCode(o.AzurePeak, o.NodesPerType)
	if err != nil {
		return nil, err
	}
	fn, err := AzureFunctions(o.Functions)
	if err != nil {
		return nil, err
	}
	fl, err := FunctionsFleet(fn)
	if err != nil {
		return nil, err
	}
	var out []Config
	for _, c := range []Config{tw, az, fn, fl} {
		if want == nil || slices.Contains(want, c.Name) {
			out = append(out, c)
		}
	}
	return out, nil
}

// The shipped replays' Config names, as reports, file names and
// --replays spell them.
const (
	ReplayTwitter        = "twitter"
	ReplayAzureCode      = "azure-code"
	ReplayAzureFunctions = "azure-functions"
	ReplayFunctionsFleet = "azure-functions-fleet"
)

// ReplayNames are the shipped replays, in the order Run replays them.
var ReplayNames = []string{ReplayTwitter, ReplayAzureCode, ReplayAzureFunctions, ReplayFunctionsFleet}

// parseReplays reads --replays: nil for "" (all), else the names, each
// one of ReplayNames and none twice.
func parseReplays(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		if !slices.Contains(ReplayNames, n) {
			return nil, fmt.Errorf("--replays: %s is not a shipped replay (%s)", trace.Quote(n), strings.Join(ReplayNames, ", "))
		}
		if slices.Contains(out, n) {
			return nil, fmt.Errorf("--replays: %s named twice", n)
		}
		out = append(out, n)
	}
	return out, nil
}

// withFleet is the what-if replay c on the user's fleet (FleetNodes over
// c's catalog), owned (Config.Owned), c as it is when fleet is empty.
func withFleet(c Config, fleet []FleetGPUs) ([]Config, error) {
	if len(fleet) > 0 {
		cl, err := FleetNodes(fleet, c.Catalog)
		if err != nil {
			return nil, err
		}
		c.Cluster, c.Owned = cl, true
	}
	return []Config{c}, nil
}

// tuning is o's search of each peer's best setting; errors name the flag.
func (o Options) tuning() (Tuning, error) {
	t := DefaultTuning()
	t.Steps = o.TuneSteps
	t.Policies = nil
	for _, name := range strings.Split(o.TunePolicies, ",") {
		if name = strings.TrimSpace(name); name != "" {
			t.Policies = append(t.Policies, name)
		}
	}
	f := strings.Split(o.TuneTargets, ",")
	if len(f) != 3 {
		return Tuning{}, fmt.Errorf("--tune-targets: %s: want LOW,ANCHOR,HIGH", trace.Quote(o.TuneTargets))
	}
	for i, p := range []*float64{&t.Low, &t.Anchor, &t.High} {
		v, err := strconv.ParseFloat(strings.TrimSpace(f[i]), 64)
		if err != nil {
			return Tuning{}, fmt.Errorf("--tune-targets: %s is not a number", trace.Quote(f[i]))
		}
		*p = v
	}
	return t, t.Validate()
}

// withShipped is c with the rules o gives the hetsev policies, by default
// those hetsev-scaler ships on.
func (o Options) withShipped(c Config, flavors heterogeneity.Flavors) Config {
	c.Knobs.SeasonalForecast = o.Seasonal
	c.Knobs.ModelThresholds = o.ModelThresholds
	c.Flavors = flavors
	return c
}

// withFlags is c with o's non-default hetsev-scaler flags set, replaying
// hetsev-exact alone; nil when o sets none.
func (o Options) withFlags(c Config) *Config {
	if !o.Replacement && !o.Consolidation {
		return nil
	}
	c.Knobs.Replacement = o.Replacement
	c.Knobs.Consolidation = o.Consolidation
	c.Policies = []string{PolicyExact}
	return &c
}

// flagsResult is the replay of hetsev-exact with non-default flags.
type flagsResult struct {
	r   RunResult
	err error
}

// addFlagsRow adds rf's hetsev-exact, the replay (err its error) of
// hetsev-exact with non-default flags, to r as PolicyExactFlags, judged
// against r's targets.
func addFlagsRow(r *RunResult, rf RunResult, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", PolicyExactFlags, err)
	}
	p, ok := rf.Policy(PolicyExact)
	if !ok {
		return fmt.Errorf("%s: not replayed", PolicyExactFlags)
	}
	p.Policy = PolicyExactFlags
	r.Policies = append(r.Policies, p)
	r.score(r.Targets)
	return nil
}

// Run replays what o asks for, prints a table per replay and the RESULT line
// to w, and writes a PNG per replay and evaluation.json under o.Out.
func Run(o Options, w io.Writer) error {
	cfgs, err := o.configs()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return err
	}
	mode, err := interference.ParseSharingMode(o.GPUSharing)
	if err != nil {
		return fmt.Errorf("--gpu-sharing: %w", err)
	}
	if o.GPUMode != "" && !v1alpha1.IsGPUMode(o.GPUMode) {
		return fmt.Errorf("--gpu-mode=%q: want %s or %s", o.GPUMode, GPUModeAnnotations, GPUModeDRA)
	}
	flavors, err := heterogeneity.ParseFlavors(o.Flavors)
	if err != nil {
		return fmt.Errorf("--flavors: %w", err)
	}
	model, err := interference.LoadColocation(o.InterferenceModel)
	if err != nil {
		return fmt.Errorf("--interference-model: %w", err)
	}
	thresholds, err := ParseThresholds(o.SweepThresholds)
	if err != nil {
		return err
	}
	var swept []string
	for _, name := range strings.Split(o.SweepPolicies, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		if !knownPolicy(name) || name == PolicyBound {
			return fmt.Errorf("--sweep-policies: %s is not a replayed policy (%s)", trace.Quote(name), strings.Join(PolicyNames, ", "))
		}
		if slices.Contains(strings.Split(o.Policies, ","), name) {
			swept = append(swept, name)
		}
	}
	tuning, err := o.tuning()
	if err != nil {
		return err
	}
	seeds, err := ParseSeeds(o.Seeds, o.Seed)
	if err != nil {
		return err
	}
	truths, err := ParseTruths(o.InterferenceTruth)
	if err != nil {
		return err
	}
	start := time.Now()
	rep := Report{}
	for _, c := range cfgs {
		c.Policies = strings.Split(o.Policies, ",")
		c.Seed = o.Seed
		c.Colocation, c.GPUSharing = model, mode
		c.GPUMode = o.GPUMode
		c = o.withShipped(c, flavors)
		// The flags row replays beside the policies: it is the longest
		// single replay, and the policies leave a core idle at their end.
		var flagsRun chan flagsResult
		if flags := o.withFlags(c); flags != nil {
			flagsRun = make(chan flagsResult, 1)
			go func() {
				rf, err := Evaluate(*flags)
				flagsRun <- flagsResult{rf, err}
			}()
			fmt.Fprintf(w, "evaluate: %s: replaying %d policies and %s (%.0f s so far)\n", c.Name, len(c.Policies), PolicyExactFlags, time.Since(start).Seconds())
		} else {
			fmt.Fprintf(w, "evaluate: %s: replaying %d policies (%.0f s so far)\n", c.Name, len(c.Policies), time.Since(start).Seconds())
		}
		r, err := Evaluate(c)
		if flagsRun != nil {
			f := <-flagsRun
			if err == nil {
				err = addFlagsRow(&r, f.r, f.err)
			}
		}
		if err != nil {
			return err
		}
		PrintTable(w, r)
		plot := filepath.Join(o.Out, "evaluation-"+r.Name+".png")
		if err := WritePlot(plot, r); err != nil {
			return err
		}
		slo := filepath.Join(o.Out, "evaluation-"+r.Name+"-slo.png")
		if err := WriteSLOPlot(slo, r); err != nil {
			return err
		}
		plots := []string{plot, slo}
		if len(tuning.Policies) > 0 {
			fmt.Fprintf(w, "evaluate: %s: searching %d peers' settings (%.0f s so far)\n", c.Name, len(tuning.Policies), time.Since(start).Seconds())
			pts, err := tune(c, r, tuning)
			if err != nil {
				return err
			}
			r.Pareto = append(r.Pareto, pts...)
		}
		if len(thresholds) > 0 && len(swept) > 0 {
			fmt.Fprintf(w, "evaluate: %s: Pareto sweep of %s (%.0f s so far)\n", c.Name, strings.Join(swept, ", "), time.Since(start).Seconds())
			pts, err := sweep(c, r, thresholds, swept)
			if err != nil {
				return err
			}
			r.Pareto = append(r.Pareto, pts...)
		}
		if len(r.Pareto) > 0 {
			sortPoints(r.Pareto)
			PrintTuning(w, r)
			PrintPareto(w, r)
			pareto := filepath.Join(o.Out, "evaluation-"+r.Name+"-pareto.png")
			if err := WriteParetoPlot(pareto, r); err != nil {
				return err
			}
			plots = append(plots, pareto)
		}
		if len(seeds) > 1 {
			fmt.Fprintf(w, "evaluate: %s: replaying seeds %d..%d (%.0f s so far)\n", c.Name, seeds[1], seeds[len(seeds)-1], time.Since(start).Seconds())
			if r.Seeds, err = replaySeeds(c, r, seeds[1:]); err != nil {
				return err
			}
		}
		if len(truths) > 0 {
			fmt.Fprintf(w, "evaluate: %s: replaying interference truths %s (%.0f s so far)\n", c.Name, o.InterferenceTruth, time.Since(start).Seconds())
			if r.Truths, err = replayTruths(c, r, truths); err != nil {
				return err
			}
		}
		if o.Ablation {
			if r.Ablation, err = ablation(c, r, ablationVariants(c.Knobs.SeasonalForecast, c.Knobs.ModelThresholds, c.Knobs.Replacement, c.Knobs.Consolidation, c.Flavors.HasLight())); err != nil {
				return err
			}
			PrintAblation(w, r)
		}
		fmt.Fprintf(w, "plots: %s\n", strings.Join(plots, ", "))
		h := headline(r)
		fmt.Fprintln(w, h.ResultLine())
		rep.Runs = append(rep.Runs, r)
	}
	rep.Result = Summarize(rep.Runs)
	path := filepath.Join(o.Out, "evaluation.json")
	if err := rep.WriteJSON(path); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nwrote %s; %d replays in %.1f s\n", path, len(rep.Runs), time.Since(start).Seconds())
	rep.Result.PrintResults(w)
	return nil
}
