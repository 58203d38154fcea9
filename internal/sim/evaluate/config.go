package evaluate

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/hetsev/hetsev/internal/sim/modelservice"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/scaler"

	"github.com/hetsev/hetsev/pkg/catalog"

	"github.com/hetsev/hetsev/internal/sim/trace"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
	"github.com/hetsev/hetsev/pkg/interference"
)

// Service is one inference service of a replay.
type Service struct {
	Name  string
	Model string // profiles' model name, e.g. "resnet50"
	// Share is the fraction of the trace's requests (Config.Rates) that
	// go to this service, in (0, 1]; 0 when the service has Rates of its
	// own.
	Share float64
	// Rates, when not nil, is the service's own arrival rate per trace
	// second, requests/s (as long as Config.Rates), in place of a Share
	// of the trace's: each function of a per-function trace drives one
	// service (AzureFunctions). Not written to evaluation.json.
	Rates trace.Rates `json:"-"`
	// History is the service's arrival rates, requests/s per second,
	// before the replayed window: what an operator plans from (the busy
	// share it declares, a peer's capacity plan); nil when the replay has
	// none. Policies never see the replayed window's rates in advance.
	History trace.Rates `json:"-"`
	// RTMaxMs is the SLO's response-time threshold RT_max, ms.
	RTMaxMs float64
	// SLMin is the SLO's least share of requests within RT_max, in (0, 1]
	// (0: DefaultSLMin).
	SLMin float64 `json:",omitempty"`
	// Identity is the model identity its pods declare (hetsev.io/model:
	// no two instances of one identity on a GPU); empty: Model. Different
	// tenants' models of one architecture are different weights, so the
	// multi-function workload gives each service its own.
	Identity string `json:",omitempty"`
	// Trigger is the trigger group of the function behind the service
	// (per-function traces only), which set its RT_max and SL_min.
	Trigger string `json:",omitempty"`
	// SaturationThreshold overrides heterogeneity.DefaultPolicy's 0.8 when
	// > 0 (HetSev 4.1 calls it tunable per service).
	SaturationThreshold float64
	// BusyShare is the ModelService's spec.scaling.busyShare, in (0, 1]
	// (0: unset): the share of its GPU's time each hetsev instance may
	// keep busy.
	BusyShare float64
}

// DefaultSLMin is a service's SL_min when it names none: 98 % of requests
// within RT_max, HetSev 6's and the demo's ModelServices' SLO.
const DefaultSLMin = heterogeneity.DefaultServiceLevel

// SLMinOrDefault is s's SL_min: SLMin, or DefaultSLMin when unset.
func (s Service) SLMinOrDefault() float64 {
	if s.SLMin == 0 {
		return DefaultSLMin
	}
	return s.SLMin
}

// identity is the model identity s's pods declare: Identity, else Model.
func (s Service) identity() string {
	if s.Identity != "" {
		return s.Identity
	}
	return s.Model
}

// rate is service s's arrival rate in trace second sec of c, requests/s:
// its own Rates, or its Share of the trace's. Every use of a service's
// rate outside the replay engine goes through it.
func (c *Config) rate(s *Service, sec int) float64 {
	if s.Rates != nil {
		return s.Rates[sec]
	}
	return c.Rates[sec] * s.Share
}

// startRate is the arrival rate a policy sees at the replay's first
// decision, before any second is measured, requests/s: the mean of the
// last window seconds of the service's history, or with none, its rate in
// the first trace second (the prepared traces' rates are averages of the
// seconds before, HetSev 6).
func (c *Config) startRate(s *Service, window int) float64 {
	if n := len(s.History); n > 0 {
		return s.History[max(0, n-window):].Mean()
	}
	return c.rate(s, 0)
}

// NodeGroup is Nodes identical GPU servers.
type NodeGroup struct {
	GPUType     string // catalog name, e.g. "T4"
	Nodes       int
	GPUsPerNode int
	CPUMilli    int64 // allocatable CPU per node, millicores
	MemoryMiB   int64 // allocatable host memory per node, MiB
}

// Knobs are the scaling knobs the hetsev policies and the HPA run with,
// those of a ModelService (pkg/scaler) in trace seconds.
type Knobs struct {
	// Interval is the HPA's sync period (kube-controller-manager's
	// --horizontal-pod-autoscaler-sync-period, 15 s by default): the
	// decision interval of the peers without a cadence of their own
	// (pacedPolicy). The hetsev policies decide every ScalerInterval.
	Interval time.Duration
	// ScalerInterval is hetsev-scaler's decision interval, the
	// ModelServices' spec.scaling.intervalSeconds, in whole seconds; 0
	// leaves the field unset, so the hetsev policies decide at the
	// scaler's default (v1alpha1.DefaultIntervalSeconds, 5 s).
	ScalerInterval    time.Duration
	RateWindow        time.Duration // arrival rate W = requests in this window / its length
	ScaleOutPeriod    time.Duration
	ScaleInInterval   time.Duration
	ScaleInCoolDown   time.Duration
	ScaleInHysteresis float64
	Lambda            float64 // per second
	MinReplicas       int
	// KPAStableWindow is knative-kpa's stable window
	// (autoscaling.knative.dev/window; 0: Knative's default 60 s), its
	// panic window 10 % of it. Only knative-kpa reads it.
	KPAStableWindow time.Duration

	// The ablation switches of the hetsev policies (ablation.go), applied
	// to the heterogeneity.Policy the scaler resolves; the zero values keep
	// every rule. NoForecast sets Policy.DisableForecast (no launch-time
	// forecast), NoStabilizedScaleIn sets Policy.DisableStabilizedScaleIn,
	// and NoScaleInCoolDown sets Policy.ScaleInCoolDown to 0 with the
	// stabilization window (Policy.ScaleInStabilization) kept at the
	// cool-down's length, so that only the cool-down goes.
	// NoLightOverflow sets Policy.DisableLightOverflow. ForecastSpan
	// sets Policy.ForecastSpan (0 keeps its default). The other policies
	// ignore them.
	NoForecast          bool
	NoStabilizedScaleIn bool
	NoLightOverflow     bool
	NoScaleInCoolDown   bool
	ForecastSpan        time.Duration
	// SeasonalForecast sets Policy.SeasonalForecast on the hetsev
	// policies (pkg/heterogeneity seasonal.go: capacity for a burst that
	// recurs with a period in the service's own history, before it
	// starts); hetsev-scaler's default is on (scaler.DefaultDefaults),
	// and `make evaluate` replays with it.
	SeasonalForecast bool
	// ModelThresholds gives the hetsev policies the saturation thresholds
	// hetsev-scaler derives from the SLO latency model at SL_min
	// (scaler.Defaults.ModelThresholds) in place of the services' own;
	// the peers keep the services' thresholds. On by default in
	// hetsev-scaler, and in `make evaluate`.
	ModelThresholds bool
	// Replacement sets Policy.Replacement on the hetsev policies
	// (pkg/heterogeneity replace.go: make-before-break replacement of
	// instances by cheaper ones of another column, the old removed once
	// the new are past their launch time); false leaves it at the
	// scaler's default (off).
	Replacement bool
	// Consolidation sets Policy.Consolidation on the hetsev policies
	// (pkg/heterogeneity replace.go: an instance alone on its GPU that the
	// scheduler admits on a GPU in use moves there make-before-break, the
	// old one removed first by the ReplicaSet's pod-deletion-cost rule);
	// false leaves it at the scaler's default (off).
	Consolidation bool
}

// ablate applies k's ablation switches to p, a hetsev policy.
func (k Knobs) ablate(p *heterogeneity.Policy) {
	if k.NoForecast {
		p.DisableForecast = true
	}
	if k.NoStabilizedScaleIn {
		p.DisableStabilizedScaleIn = true
	}
	if k.NoLightOverflow {
		p.DisableLightOverflow = true
	}
	if k.ForecastSpan != 0 {
		p.ForecastSpan = k.ForecastSpan
	}
	if k.SeasonalForecast {
		p.SeasonalForecast = true
	}
	if k.Replacement {
		p.Replacement = true
	}
	if k.Consolidation {
		p.Consolidation = true
	}
	if k.NoScaleInCoolDown {
		if p.ScaleInStabilization == 0 {
			p.ScaleInStabilization = p.ScaleInCoolDown
		}
		p.ScaleInCoolDown = 0
	}
}

// DemoKnobs are `make demo`'s ModelService knobs (internal/sim/demo DefaultDemo,
// with hetsev-scaler's defaults for lambda and hysteresis): a 30 s rate,
// scale out at once, scale in every 60 s after a 300 s cool-down, at least
// one instance. hetsev decides at hetsev-scaler's default interval (5 s;
// the demo's ModelServices set 15 s) and the HPA syncs every 15 s, its
// default.
func DemoKnobs() Knobs {
	return Knobs{
		Interval: 15 * time.Second, RateWindow: 30 * time.Second,
		ScaleOutPeriod: 0, ScaleInInterval: 60 * time.Second, ScaleInCoolDown: 300 * time.Second,
		ScaleInHysteresis: 0, Lambda: 0.01, MinReplicas: 1,
	}
}

// Config is one replay: a trace, the services sharing it, the cluster and
// the data the policies decide with.
type Config struct {
	Name  string      // names the run in reports and file names, e.g. "twitter"
	Trace string      // describes the trace and its preparation, for reports
	Rates trace.Rates // total arrival rate per trace second, requests/s
	// MeasureFrom is the first trace second counted in the results; the
	// seconds before it warm every policy up from one instance per service.
	MeasureFrom int
	Services    []Service
	Cluster     []NodeGroup
	Catalog     catalog.Catalog
	Profiles    catalog.Profiles
	// SKUs are the cloud instances the catalog's GPUs are billed as
	// (billing: a GPU in use costs the cheapest share of one that holds
	// its pods' CPU and memory); a GPU type without SKUs is billed at its
	// catalog price.
	SKUs []catalog.InstanceSKU `json:"-"`
	// Owned says the cluster is an owned fleet: every policy is billed
	// the whole cluster at its catalog prices over the measured seconds,
	// whatever it uses, and is judged on its excess missed requests at
	// that fixed cost (headline.go).
	Owned bool `json:",omitempty"`
	// Colocation is the co-location model that slows co-located instances
	// in the replay and feeds the placement rating (zero value:
	// interference.FittedColocation, fitted to H100 measurements).
	Colocation interference.Colocation
	// InterferenceTruth, when > 0, scales the excess over 1 of every
	// co-location slowdown the replay applies (replay.Engine
	// SetExcessScale: 1 + k (f - 1)) while decisions and placement keep
	// reading Colocation: interference the scheduler does not define.
	// 0 and 1 replay the model itself.
	InterferenceTruth float64 `json:",omitempty"`
	// GPUSharing is the GPUs' sharing mode ("" is time-slicing; or mps).
	GPUSharing interference.SharingMode
	// GPUMode is how the simulated cluster accounts GPU shares, as
	// hetsev-scheduler's gpuMode: GPUModeAnnotations ("" too: each
	// instance's declared demand on its GPU) or GPUModeDRA (a ResourceSlice
	// per node and an allocated ResourceClaim per instance, counted by
	// pkg/dra).
	GPUMode string `json:",omitempty"`
	// Flavors are the instance flavors hetsev-exact and hetsev-heuristic
	// offer every GPU type in, as hetsev-scaler's --flavors (each light
	// flavor a column of the decision, its instances declaring it as busy
	// share); empty: whole-GPU instances only.
	Flavors heterogeneity.Flavors `json:",omitempty"`
	Knobs   Knobs
	// Policies to compare, by name (PolicyNames); empty means all.
	Policies []string
	// MaxBatchDelay is the servers' batching timeout, seconds (the demo's
	// 5 ms); NetworkMs is added to every response time (the demo's 1 ms,
	// an estimate).
	MaxBatchDelay float64
	NetworkMs     float64
	Seed          uint64
	// SeriesStep is the trace seconds per point of the time series in the
	// results (0: about 2,000 points over the trace).
	SeriesStep int

	// logDecisions keeps every decision of every policy (policyRun.decisions),
	// for the no-hindsight test.
	logDecisions bool
	// pins are the single-type peers' GPU types per service (pinTypes),
	// computed once by Evaluate before the policies are built so that
	// every peer sees the same pins; nil outside Evaluate.
	pins *pinSet
}

// Validate reports every field the replay cannot use, naming it.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("evaluate: "+format, args...)) }
	if c.Name == "" {
		bad("Name is empty")
	}
	if len(c.Rates) == 0 {
		bad("the trace is empty")
	}
	for i, r := range c.Rates {
		if !(r >= 0) || math.IsInf(r, 0) {
			bad("trace second %d: rate %v is not a finite number >= 0", i, r)
			break
		}
	}
	if c.MeasureFrom < 0 || c.MeasureFrom >= len(c.Rates) {
		bad("MeasureFrom %d is outside the trace's %d s", c.MeasureFrom, len(c.Rates))
	}
	if len(c.Services) == 0 {
		bad("no services")
	}
	share := 0.0
	names := map[string]bool{}
	for i, s := range c.Services {
		f := fmt.Sprintf("Services[%d] (%s)", i, s.Name)
		if s.Name == "" || names[s.Name] {
			bad("%s: name empty or repeated", f)
		}
		names[s.Name] = true
		if len(c.Profiles.On(c.gpuTypes()...).ForModel(s.Model)) == 0 {
			bad("%s: no profile for model %q on a GPU type of the cluster", f, s.Model)
		}
		if s.Rates != nil {
			if s.Share != 0 {
				bad("%s: Share %v with rates of its own (want 0: the rates replace a share)", f, s.Share)
			}
			if len(s.Rates) != len(c.Rates) {
				bad("%s: %d s of rates of its own, the trace has %d", f, len(s.Rates), len(c.Rates))
			}
			for i, r := range s.Rates {
				if !(r >= 0) || math.IsInf(r, 0) {
					bad("%s: trace second %d: rate %v is not a finite number >= 0", f, i, r)
					break
				}
			}
		} else if !(s.Share > 0 && s.Share <= 1) {
			bad("%s: Share %v must be in (0, 1]", f, s.Share)
		}
		share += s.Share
		if !(s.SLMin >= 0 && s.SLMin <= 1) {
			bad("%s: SLMin %v must be in (0, 1] (0: %v)", f, s.SLMin, DefaultSLMin)
		}
		if !(s.RTMaxMs > 0) || math.IsInf(s.RTMaxMs, 0) {
			bad("%s: RTMaxMs %v must be a finite number > 0", f, s.RTMaxMs)
		}
		if s.SaturationThreshold < 0 || s.SaturationThreshold > 1 {
			bad("%s: SaturationThreshold %v must be in (0, 1] (0: default)", f, s.SaturationThreshold)
		}
		if !(s.BusyShare >= 0 && s.BusyShare <= 1) {
			bad("%s: BusyShare %v must be in (0, 1] (0: unset)", f, s.BusyShare)
		}
	}
	if share > 1+1e-9 {
		bad("service shares add up to %v > 1", share)
	}
	if len(c.Cluster) == 0 {
		bad("no node groups")
	}
	for i, g := range c.Cluster {
		f := fmt.Sprintf("Cluster[%d] (%s)", i, g.GPUType)
		if _, ok := c.Catalog.ByName(g.GPUType); !ok {
			bad("%s: GPU type not in the catalog", f)
		}
		if g.Nodes < 0 || g.GPUsPerNode < 1 || g.CPUMilli <= 0 || g.MemoryMiB <= 0 {
			bad("%s: want Nodes >= 0, GPUsPerNode >= 1 and positive CPU and memory", f)
		}
	}
	for _, p := range c.Policies {
		if !knownPolicy(p) {
			bad("unknown policy %q (want one of %v)", p, PolicyNames)
		}
	}
	k := c.Knobs
	if k.Interval < time.Second || k.RateWindow < time.Second {
		bad("Knobs.Interval and Knobs.RateWindow must be at least 1 s")
	}
	if k.ScalerInterval != 0 && (k.ScalerInterval < time.Second || k.ScalerInterval%time.Second != 0) {
		bad("Knobs.ScalerInterval %v must be 0 (hetsev-scaler's default) or whole seconds >= 1 s", k.ScalerInterval)
	}
	if k.MinReplicas < 1 {
		bad("Knobs.MinReplicas must be >= 1")
	}
	if k.KPAStableWindow != 0 && (k.KPAStableWindow < 6*time.Second || k.KPAStableWindow > time.Hour || k.KPAStableWindow%time.Second != 0) {
		// Knative's own range for autoscaling.knative.dev/window.
		bad("Knobs.KPAStableWindow %v must be 0 (Knative's default 60 s) or whole seconds in [6 s, 1 h]", k.KPAStableWindow)
	}
	if !(c.MaxBatchDelay >= 0) || !(c.NetworkMs >= 0) {
		bad("MaxBatchDelay and NetworkMs must be >= 0")
	}
	if c.SeriesStep < 0 {
		bad("SeriesStep must be >= 0")
	}
	c.defaultSharing()
	if _, err := interference.ParseSharingMode(string(c.GPUSharing)); err != nil {
		bad("GPUSharing: %v", err)
	}
	if c.GPUMode != "" && !v1alpha1.IsGPUMode(c.GPUMode) {
		bad("GPUMode %q: want %s or %s", c.GPUMode, GPUModeAnnotations, GPUModeDRA)
	}
	if c.InterferenceTruth != 0 && !(c.InterferenceTruth >= 1 && c.InterferenceTruth <= 4) {
		bad("InterferenceTruth %v must be 0 (the model) or in [1, 4]", c.InterferenceTruth)
	}
	if err := c.Colocation.Validate(); err != nil {
		bad("Colocation: %v", err)
	}
	if len(c.Flavors) > 0 {
		if err := c.Flavors.Validate(); err != nil {
			bad("Flavors: %v", err)
		}
	}
	return errors.Join(errs...)
}

// resolve is what hetsev-scaler decides service s with: its ModelService
// (built as the demo builds it, with c.Knobs and Knobs.ScalerInterval as
// its decision interval, listing the profiles of the cluster's GPU types
// as the demo's lists its testbed's) through the scaler's own translation
// (scaler.Resolve), with the given solver, the paper's SLO check, the
// scaler's default, and c.Flavors.
func (c Config) resolve(s Service, solver string) (*scaler.Resolved, error) {
	return c.resolveWith(s, solver, false)
}

// resolveHetsev is resolve for the hetsev policies: with
// Knobs.ModelThresholds, every service's saturation threshold is the one
// hetsev-scaler derives from the SLO latency model (its
// --model-thresholds), in place of the service's hand-set one; the peers
// keep theirs.
func (c Config) resolveHetsev(s Service, solver string) (*scaler.Resolved, error) {
	if c.Knobs.ModelThresholds {
		s.SaturationThreshold = 0
	}
	return c.resolveWith(s, solver, c.Knobs.ModelThresholds)
}

func (c Config) resolveWith(s Service, solver string, modelThresholds bool) (*scaler.Resolved, error) {
	k := c.Knobs
	lambda, hysteresis := k.Lambda, k.ScaleInHysteresis
	ms, err := modelservice.For(s.Name, "default", s.Model, s.RTMaxMs, c.Profiles.On(c.gpuTypes()...), modelservice.Knobs{
		SaturationThreshold:    s.SaturationThreshold,
		BusyShare:              s.BusyShare,
		IntervalSeconds:        k.ScalerInterval.Seconds(),
		ScaleOutPeriodSeconds:  k.ScaleOutPeriod.Seconds(),
		ScaleInIntervalSeconds: k.ScaleInInterval.Seconds(),
		ScaleInCoolDownSeconds: k.ScaleInCoolDown.Seconds(),
		MinReplicas:            k.MinReplicas,
		Lambda:                 &lambda,
		ScaleInHysteresis:      &hysteresis,
	}, 1)
	if err == nil {
		ms.Spec.Model = s.identity() // profiles are the architecture's
	}
	if err != nil {
		return nil, err
	}
	r, err := scaler.Resolve(ms, c.Catalog, scaler.Defaults{Solver: solver, SLOCheck: heterogeneity.SLOCheckPaper, Flavors: c.Flavors, ModelThresholds: modelThresholds})
	if err != nil {
		return nil, fmt.Errorf("service %s: %w", s.Name, err)
	}
	return r, nil
}

// gpuTypes lists the cluster's GPU types once each, in Cluster order.
func (c Config) gpuTypes() []string {
	var out []string
	for _, g := range c.Cluster {
		if !slices.Contains(out, g.GPUType) {
			out = append(out, g.GPUType)
		}
	}
	return out
}

// defaultSharing fills the zero Colocation with the fitted model and an
// empty GPUSharing with time-slicing.
func (c *Config) defaultSharing() {
	if c.Colocation.Source == "" && c.Colocation.Occupancy == nil {
		c.Colocation = interference.FittedColocation()
	}
	if c.GPUSharing == "" {
		c.GPUSharing = interference.SharingTimeSlicing
	}
}
