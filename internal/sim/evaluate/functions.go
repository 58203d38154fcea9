package evaluate

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"

	"github.com/hetsev/hetsev/internal/sim/trace"
	"github.com/hetsev/hetsev/pkg/catalog"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
)

// DefaultFunctionServices is how many functions of a per-function trace
// become services unless told otherwise: the 64 busiest.
const DefaultFunctionServices = 64

// FunctionWorkload is how a per-function, per-minute trace
// (trace.Functions) becomes the services of a multi-tenant replay, for the
// AzureFunctions scenario and the what-if mode's --functions alike. Every
// rule is fixed in advance and none looks at a function's load except the
// choice of functions and the one scale factor (the experiment's design,
// the same for every policy), the cluster (FunctionCluster, the same for
// every policy) and the busy share, each from the history only:
//
//   - services: the Services busiest functions by their invocations in
//     the history (ties by HashFunction), functions not invoked there left
//     out; each function's
//     arrivals drive one service, at count/60 requests/s in each second of
//     a minute (trace.Function.Rates);
//   - GPU types: those of the cluster (FunctionGPUTypes: HetSevNodes' types
//     that the catalog prices); every rule below that compares GPU types
//     compares these, so a catalog or profile row of another type changes
//     nothing;
//   - model: the profiles' models (catalog.Profiles.Models, sorted, those
//     with a profile on one of the GPU types), the one at FNV-1a
//     32-bit of HashFunction modulo their number (FunctionModel);
//   - RT_max: the model's base (resnet50 400 ms and ssd-resnet50 900 ms as
//     HetSev 6 and the demo, bert-large 1,200 ms as the AzureCode replay;
//     another model 10 x its slowest batch latency on the GPU types,
//     rounded up to 100 ms) times the trigger's factor: 0.5 for http (a caller waits),
//     2 for timer, queue and storage (background work), 1 otherwise
//     (event, orchestration, others); SL_min 0.99 for http, 0.98 otherwise
//     (FunctionSLO);
//   - identity: the service's name (hetsev.io/model; each tenant's model
//     is its own weights, so anti-affinity is per service, not per
//     architecture);
//   - history: the first HistoryMinutes of the trace are not replayed;
//     they are what an operator knew before the replayed window
//     (Service.History), and every figure a policy takes from the
//     workload comes from them or is measured during the replay;
//   - busy share (the ModelService's spec.scaling.busyShare, hetsev's
//     policies only): what an operator declares from the service's mean
//     and highest rate in the history (FunctionBusyShare);
//   - scale: every function's rates times one factor (Scale, else
//     FunctionScale's: the total mean load of the history needs as many
//     GPUs as half the number of services);
//   - cluster: FunctionCluster's rule.
type FunctionWorkload struct {
	// Services is how many functions become services (0:
	// DefaultFunctionServices); fewer where the trace has fewer invoked.
	Services int
	// Scale multiplies every function's rate; 0 chooses it by
	// FunctionScale's rule, 1 replays the trace as recorded.
	Scale float64
	// HistoryMinutes is how many minutes at the start of the trace are
	// history, not replayed (0: DefaultFunctionHistoryMinutes). A trace
	// needs at least MinReplayMinutes more.
	HistoryMinutes int
}

// DefaultFunctionHistoryMinutes is the history a per-function replay
// keeps before its replayed window unless told otherwise: 2 hours, so the
// 8-hour Azure Functions trace replays its last 6 hours.
const DefaultFunctionHistoryMinutes = 120

// MinReplayMinutes is the shortest replayed window of a per-function
// trace after its history: the 5-minute warm-up and 5 measured minutes.
const MinReplayMinutes = 10

// historyMinutes is w.HistoryMinutes or its default.
func (w FunctionWorkload) historyMinutes() int {
	if w.HistoryMinutes == 0 {
		return DefaultFunctionHistoryMinutes
	}
	return w.HistoryMinutes
}

// modelRTMaxMs are the base RT_max, ms, of the repo's models: HetSev 6's
// (and the demo's) for ResNet-50 and SSD, the AzureCode replay's for
// BERT-large.
var modelRTMaxMs = map[string]float64{"resnet50": 400, "ssd-resnet50": 900, "bert-large": 1200}

// FunctionModel is the model of the function with HashFunction hash:
// models[FNV-1a 32-bit(hash) mod len(models)]. It does not look at the
// function's load; models must not be empty.
func FunctionModel(hash string, models []string) string {
	h := fnv.New32a()
	h.Write([]byte(hash))
	return models[h.Sum32()%uint32(len(models))]
}

// FunctionSLO is the RT_max (ms) and SL_min of a service running model for
// a function of trigger group trigger (FunctionWorkload's rule).
func FunctionSLO(model, trigger string, prof catalog.Profiles) (rtMaxMs, slMin float64) {
	base, ok := modelRTMaxMs[model]
	if !ok {
		slowest := 0.0
		for _, p := range prof.ForModel(model) {
			slowest = max(slowest, p.LatencyMs)
		}
		base = math.Ceil(10*slowest/100) * 100
	}
	switch strings.ToLower(trigger) {
	case "http":
		return base * 0.5, 0.99
	case "timer", "queue", "storage":
		return base * 2, DefaultSLMin
	default:
		return base, DefaultSLMin
	}
}

// FunctionGPUTypes are the GPU types a per-function replay's cluster may
// offer (FunctionCluster): those of HetSevNodes that cat prices, in their
// order.
func FunctionGPUTypes(cat catalog.Catalog) []string {
	var out []string
	for _, g := range HetSevNodes(1) {
		if _, ok := cat.ByName(g.GPUType); ok {
			out = append(out, g.GPUType)
		}
	}
	return out
}

// cheapestPerRequest is the profile of model on the GPU type of
// FunctionGPUTypes(cat) with the lowest price per request (USD/h over
// throughput).
func cheapestPerRequest(model string, prof catalog.Profiles, cat catalog.Catalog) (catalog.Profile, bool) {
	var best catalog.Profile
	bestCost := math.Inf(1)
	for _, p := range prof.On(FunctionGPUTypes(cat)...).ForModel(model) {
		gt, ok := cat.ByName(p.GPUType)
		if !ok {
			continue
		}
		if c := gt.PriceUSDPerHour / p.ThroughputRPS; c < bestCost {
			best, bestCost = p, c
		}
	}
	return best, !math.IsInf(bestCost, 1)
}

// FunctionScale is the one factor every function's rates are multiplied
// by: the total mean load of the history (Service.History, before the
// factor) then needs as many GPUs as half the number of services, each
// service's at its model's throughput on the GPU type of
// FunctionGPUTypes with the lowest price per request, at the saturation threshold (0.8,
// heterogeneity.DefaultPolicy): the mean service needs half a GPU, so the
// cluster is neither idle nor saturated, while the long tail stays the
// trace's (most services need a small fraction of a GPU, the busiest
// several GPUs). The history sets it, as an experimenter choosing the
// load before the replay would: the replayed window cannot change it.
func FunctionScale(services []Service, prof catalog.Profiles, cat catalog.Catalog) (float64, error) {
	theta := heterogeneity.DefaultPolicy().SaturationThreshold
	gpus := 0.0
	for _, s := range services {
		p, ok := cheapestPerRequest(s.Model, prof, cat)
		if !ok {
			return 0, fmt.Errorf("evaluate: service %s: no GPU type of the cluster has a profile for %s", s.Name, s.Model)
		}
		gpus += s.History.Mean() / (theta * p.ThroughputRPS)
	}
	if gpus == 0 {
		return 0, fmt.Errorf("evaluate: the functions have no invocations in the history")
	}
	return float64(len(services)) / 2 / gpus, nil
}

// FunctionCluster is the cluster of a per-function replay: servers shaped
// like the demo's HetSev testbed (2 GPUs, 40 CPUs, 62 GiB; HetSevNodes) of
// each GPU type of FunctionGPUTypes on which some service's model is profiled,
// as many as hold every service at once at its own highest rate in the
// history (Service.History), one instance per GPU at the saturation
// threshold, on that type alone: per type, sum over services of
// max(1, ceil(peak / (0.8 x throughput))) GPUs, rounded up to whole
// servers. Like a cloud quota, it is set before the replayed window, from
// what the operator has seen. The services' peaks do not coincide: on the
// shipped trace the replayed window's highest total load needs 29.4 V100s
// or 50.5 T4s against 94 and 125 by the rule on the replayed window's own
// peaks, so no policy, one instance per GPU included, runs out of GPUs,
// and costs compare policies rather than a full cluster.
func FunctionCluster(services []Service, prof catalog.Profiles, cat catalog.Catalog) []NodeGroup {
	theta := heterogeneity.DefaultPolicy().SaturationThreshold
	var out []NodeGroup
	for _, g := range HetSevNodes(1) {
		if !slices.Contains(FunctionGPUTypes(cat), g.GPUType) {
			continue
		}
		gpus := 0
		for _, s := range services {
			if p, ok := prof.Get(s.Model, g.GPUType); ok {
				gpus += max(1, int(math.Ceil(s.History.Peak()/(theta*p.ThroughputRPS))))
			}
		}
		if gpus > 0 {
			g.Nodes = (gpus + g.GPUsPerNode - 1) / g.GPUsPerNode
			out = append(out, g)
		}
	}
	return out
}

// FunctionServices turns fs into services by w's rules (FunctionWorkload)
// with models from prof that cat prices. It returns the services, their
// total rate per trace second, the scale factor used, and a description
// for reports.
func FunctionServices(fs trace.Functions, w FunctionWorkload, prof catalog.Profiles, cat catalog.Catalog) ([]Service, trace.Rates, float64, string, error) {
	prof = prof.On(FunctionGPUTypes(cat)...)
	var models []string
	for _, m := range prof.Models() {
		if _, ok := cheapestPerRequest(m, prof, cat); ok {
			models = append(models, m)
		}
	}
	if len(models) == 0 {
		return nil, nil, 0, "", fmt.Errorf("evaluate: %s: no profiled model runs on a GPU type of the cluster (%s priced by the catalog)", fs.File, strings.Join(gpuTypeNames(HetSevNodes(1)), ", "))
	}
	n := w.Services
	if n == 0 {
		n = DefaultFunctionServices
	}
	if n < 0 {
		return nil, nil, 0, "", fmt.Errorf("evaluate: %s: %d services: want at least 1", fs.File, n)
	}
	hist := w.historyMinutes()
	if hist < 0 {
		return nil, nil, 0, "", fmt.Errorf("evaluate: %s: history of %d minutes: want at least 1", fs.File, hist)
	}
	if fs.Minutes < hist+MinReplayMinutes {
		return nil, nil, 0, "", fmt.Errorf("evaluate: %s: %d minutes: the history takes the first %d and the replay needs at least %d more (--function-history)",
			fs.File, fs.Minutes, hist, MinReplayMinutes)
	}
	// The busiest functions of the history: an operator onboards the
	// services it knows, and the replayed window cannot pick them.
	known := func(f trace.Function) int64 {
		var n int64
		for _, c := range f.Counts[:hist] {
			n += c
		}
		return n
	}
	var busy []trace.Function
	for _, f := range fs.Functions {
		if known(f) > 0 {
			busy = append(busy, f)
		}
	}
	if len(busy) == 0 {
		return nil, nil, 0, "", fmt.Errorf("evaluate: %s: no function is invoked in the history (the first %d minutes)", fs.File, hist)
	}
	slices.SortStableFunc(busy, func(a, b trace.Function) int {
		return cmp.Or(cmp.Compare(known(b), known(a)), cmp.Compare(a.Hash, b.Hash))
	})
	busy = busy[:min(n, len(busy))]
	services := make([]Service, len(busy))
	perModel := map[string]int{}
	for i, f := range busy {
		m := FunctionModel(f.Hash, models)
		rt, sl := FunctionSLO(m, f.Trigger, prof)
		all := f.Rates()
		services[i] = Service{Name: "fn-" + f.Name, Identity: "fn-" + f.Name, Model: m, Rates: all[60*hist:], History: all[:60*hist],
			RTMaxMs: rt, SLMin: sl, Trigger: f.Trigger}
		perModel[m]++
	}
	scale := w.Scale
	if scale == 0 {
		var err error
		if scale, err = FunctionScale(services, prof, cat); err != nil {
			return nil, nil, 0, "", err
		}
	}
	if !(scale > 0) || math.IsInf(scale, 0) {
		return nil, nil, 0, "", fmt.Errorf("evaluate: scale %v: want a finite number > 0", scale)
	}
	total := make(trace.Rates, 60*(fs.Minutes-hist))
	for i := range services {
		for k, r := range services[i].Rates {
			services[i].Rates[k] = r * scale
			total[k] += r * scale
		}
		for k, r := range services[i].History {
			services[i].History[k] = r * scale
		}
	}
	for i := range services {
		h := services[i].History
		services[i].BusyShare = FunctionBusyShare(h.Mean(), h.Peak(), services[i].Model, prof, cat)
	}
	var mix []string
	for _, m := range models {
		mix = append(mix, fmt.Sprintf("%d %s", perModel[m], m))
	}
	desc := fmt.Sprintf("%d min from minute %d after %d min of history, the %d busiest of %d functions (%s), rates x%.3g (mean %.1f requests/s, peak %.1f)",
		fs.Minutes-hist, fs.FirstMinute+hist, hist, len(services), len(fs.Functions), strings.Join(mix, ", "), scale, total.Mean(), total.Peak())
	return services, total, scale, desc, nil
}

// functionsConfig is the replay of fs by w's rules on the catalog and
// profiles of base (a Config from Base), with FunctionCluster's cluster
// and a warm-up of 300 s (the demo's) before the measured seconds.
func functionsConfig(name string, fs trace.Functions, w FunctionWorkload, base Config) (Config, error) {
	services, total, _, desc, err := FunctionServices(fs, w, base.Profiles, base.Catalog)
	if err != nil {
		return Config{}, err
	}
	c := base
	c.Name, c.Trace, c.Rates, c.Services = name, fs.File+": "+desc, total, services
	c.Cluster = FunctionCluster(services, c.Profiles, c.Catalog)
	c.MeasureFrom = min(300, len(total)-1)
	return c, nil
}

// busyShareSteps are the busy shares FunctionBusyShare declares.
var busyShareSteps = []float64{0.05, 0.1, 0.2, 0.3, 0.5}

// FunctionBusyShare is the spec.scaling.busyShare an operator declares for
// a service of model whose mean rate is meanRPS and highest rate peakRPS,
// requests/s: one instance on the GPU type of FunctionGPUTypes with the
// lowest price per request (batch latency L) that batches dynamically without delay is busy
// about λ L at λ requests/s while λ L < 1 (pkg/scaler instanceShare); at the
// saturation threshold 0.8, a load λ needs u(λ) = λ x L / 0.8 of a GPU's
// time. The larger of u(2 x meanRPS), for the load's swings, and
// u(peakRPS), rounded up to the next of 0.05, 0.1, 0.2, 0.3 and 0.5, is the
// declared share; above 0.5, 0 (unset: the scaler's default, about 1, a GPU
// of its own when busy, where batching pays). The peak counts because the
// share caps every instance at about share / L requests/s: a burst beyond
// what one light instance carries is met by many light instances, each
// with the GPU memory of a full one, where a few busy ones would batch (make
// evaluate, fn-30824176, BERT-large declared 0.3 from its mean of 0.7
// requests/s: 57 instances launched for a burst of 93 requests/s). Both
// rates are the history's (Service.History), never the replayed window's:
// an operator declares a share before the load it will meet.
func FunctionBusyShare(meanRPS, peakRPS float64, model string, prof catalog.Profiles, cat catalog.Catalog) float64 {
	p, ok := cheapestPerRequest(model, prof, cat)
	if !ok {
		return 0
	}
	need := max(2*meanRPS, peakRPS) * p.LatencyMs / 1000 / heterogeneity.DefaultPolicy().SaturationThreshold
	for _, s := range busyShareSteps {
		if need <= s {
			return s
		}
	}
	return 0
}

// gpuTypeNames are the GPU types of groups, in their order.
func gpuTypeNames(groups []NodeGroup) []string {
	var out []string
	for _, g := range groups {
		out = append(out, g.GPUType)
	}
	return out
}
