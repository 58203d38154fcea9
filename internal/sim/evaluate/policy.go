package evaluate

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/hetsev/hetsev/pkg/scaler"

	"github.com/hetsev/hetsev/pkg/catalog"

	"github.com/hetsev/hetsev/internal/sim/hpa"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
	"github.com/hetsev/hetsev/pkg/interference"
	"github.com/hetsev/hetsev/pkg/placement"
)

// Names of the policies a replay compares.
const (
	// PolicyDefault is default Kubernetes: one instance per whole GPU
	// (nvidia.com/gpu: 1) of a type chosen at random, replicas by the HPA
	// rule (internal/sim/hpa) on requests/s per pod.
	PolicyDefault = "default-k8s-random"
	// PolicyHeuristic is hetsev-scaler with the paper's heuristic and
	// hetsev-scheduler with the paper's worst fit (interference weight 0).
	PolicyHeuristic = "hetsev-heuristic"
	// PolicyExact is hetsev-scaler with the exact ILP solver and
	// hetsev-scheduler's interference-aware placement (its default weight).
	PolicyExact = "hetsev-exact"
	// PolicyBound is the lower bound of bound.go: the least billed cost any
	// policy can have on the same arrivals at the same SLOs. It is computed,
	// not replayed.
	PolicyBound = "lower-bound"
	// PolicyExactFlags is hetsev-exact replayed with the evaluator's
	// non-default flags (--seasonal, --model-thresholds, --flavors,
	// --replacement, --consolidation): a labelled second view, never the
	// headline's hetsev, which runs hetsev-scaler's shipped defaults. Not
	// in PolicyNames: Run adds it when any of those flags is set.
	PolicyExactFlags = "hetsev-exact+flags"
)

// PolicyNames lists the policies in report order: the baseline, the
// peers (policy_*.go), hetsev and the bound.
var PolicyNames = []string{PolicyDefault, PolicyHPABestType, PolicyKnativeKPA, PolicyMelange, PolicyMelangeAIBrix,
	PolicyINFaaS, PolicyKAIFraction, PolicyHAMiCores, PolicyHeuristic, PolicyExact, PolicyBound}

func knownPolicy(name string) bool { return slices.Contains(PolicyNames, name) }

// typeView is what a policy sees of one GPU type for one service.
type typeView struct {
	prof catalog.Profile
	gpu  catalog.GPUType
	// column names the column of the decision (serviceType.column); ""
	// is the GPU type's own.
	column  string
	running int       // instances, launching ones included
	ready   int       // of them, those that serve (launched)
	starts  []float64 // creation time of each, trace seconds, oldest first
	slots   int       // MaxAdditional: more instances that fit now
	// movable is how many of them are ready and alone on their GPU where
	// the scheduler admits such an instance on another GPU in use
	// (heterogeneity.TypeState.Movable); counted only for a policy that
	// moves instances (moverPolicy).
	movable int
	// inflation is the mean co-location latency inflation of the
	// running instances where they run (1 for none).
	inflation float64
}

// columnName is t's column, or its GPU type's name (the type's own
// column) when the view names none.
func (t typeView) columnName() string {
	if t.column == "" {
		return t.gpu.Name
	}
	return t.column
}

// view is what a policy sees of one service at a decision.
type view struct {
	now     float64 // trace seconds
	arrival float64 // W: requests/s over the rate window, as the metrics adapter reports it
	// offered is the requests offered in each of the last seconds,
	// oldest first, for a historyPolicy: as many as it asks for, fewer
	// at the start of the trace; nil for other policies.
	offered []int64
	types   []typeView
}

// meanRate is the mean of the last n seconds of v.offered, requests/s,
// over the seconds there are (fewer than n at the start of the trace, as
// a window average over the buckets it holds); 0 when there are none.
func (v view) meanRate(n int) float64 {
	k := min(n, len(v.offered))
	if k <= 0 {
		return 0
	}
	var sum int64
	for _, c := range v.offered[len(v.offered)-k:] {
		sum += c
	}
	return float64(sum) / float64(k)
}

// policy decides the change of instances per GPU type (aligned with
// view.types) for one service.
type policy interface {
	decide(svc int, v view) []int
	// wholeGPU: instances take a GPU of their own (nvidia.com/gpu: 1).
	wholeGPU() bool
	// instant: instances serve as soon as they are created.
	instant() bool
	placer() placement.Placer
	// demand is what a pod of service svc on gpuType declares, given base
	// (its model and the profile's GPU memory).
	demand(svc int, gpuType string, base gpuinventory.Demand) gpuinventory.Demand
}

// Optional behaviour of a policy, found by type assertion.
type (
	// pacedPolicy decides at its own interval instead of
	// Config.Knobs.Interval (the HPA's sync period).
	pacedPolicy interface {
		// decisionInterval is the seconds between two decisions, >= 1.
		decisionInterval() int
	}
	// historyPolicy needs the per-second counts of the last seconds
	// (view.offered).
	historyPolicy interface {
		// history is how many seconds view.offered should cover.
		history() int
	}
	// columnPolicy decides over columns of its own per GPU type (hetsev's
	// instance flavors) instead of one per type.
	columnPolicy interface {
		// columns are service svc's columns on gpuType (catalog name),
		// the type's own first, named for the type.
		columns(svc int, gpuType string) []columnOffer
	}
	// cappedPolicy caps the share of its GPU's time each of a service's
	// servers takes (modelserver.Config.ComputeShare).
	cappedPolicy interface {
		// computeShare is service svc's cap, in (0, 1]; 0 for none.
		computeShare(svc int) float64
	}
	// singleTypePolicy runs each service on one GPU type, its first
	// instance included.
	singleTypePolicy interface {
		// serviceType is the GPU type (catalog name) of service svc.
		serviceType(svc int) string
	}
)

// columnOffer is one column of a policy's decision on a GPU type: its
// name, what the decision counts one instance at, USD/h, and the load it
// counts one instance to carry.
type columnOffer struct {
	name            string
	priceUSDPerHour float64
	// thresholdRPS is the load one instance carries at the service's
	// saturation threshold, requests/s (0: unknown).
	thresholdRPS float64
	// light: a light flavor's column (scaler.Column.Light).
	light bool
	// batchSize caps the column's servers' batches below the profile's
	// (scaler.Column.BatchSize); 0: not capped.
	batchSize int
}

// typeOffer is what a peer that picks one GPU type per service compares:
// one GPU type's price and its profile for the service's model.
type typeOffer struct {
	gpuType         string
	priceUSDPerHour float64 // C_i, one GPU
	throughputRPS   float64 // T_i, one instance
	latencyMs       float64 // L_i, one batch
}

// cheapestSuitable is the index of the offer that serves a request most
// cheaply (least USD/h per request/s, C_i / T_i) among those whose batch
// latency meets RT_max (L_i <= rtMaxMs, HetSev's SLO check): the single
// GPU type a platform team would run a service on, by cost per request
// served rather than price per GPU (a dearer GPU that serves more than its
// price's worth more requests is the cheaper choice). Ties go to the
// cheaper GPU, then to the first. With no offer meeting RT_max, the
// fastest (least L_i); -1 for no offers. It is suitableOrder's first.
func cheapestSuitable(offers []typeOffer, rtMaxMs float64) int {
	if o := suitableOrder(offers, rtMaxMs); len(o) > 0 {
		return o[0]
	}
	return -1
}

// suitableOrder is a service's choices of GPU type, best first: the
// indices of the offers whose batch latency meets RT_max (L_i <= rtMaxMs)
// and that serve requests (T_i > 0), by USD/h per request/s (C_i / T_i),
// ties by the cheaper GPU, then by offer order. With none meeting RT_max,
// only the fastest (least L_i, the first of equals); empty for no offers.
func suitableOrder(offers []typeOffer, rtMaxMs float64) []int {
	var out []int
	for i, o := range offers {
		if o.latencyMs <= rtMaxMs && o.throughputRPS > 0 {
			out = append(out, i)
		}
	}
	slices.SortStableFunc(out, func(a, b int) int {
		oa, ob := offers[a], offers[b]
		return cmp.Or(cmp.Compare(oa.perRequest(), ob.perRequest()), cmp.Compare(oa.priceUSDPerHour, ob.priceUSDPerHour))
	})
	if len(out) > 0 {
		return out
	}
	fastest := -1
	for i, o := range offers {
		if fastest < 0 || o.latencyMs < offers[fastest].latencyMs {
			fastest = i
		}
	}
	if fastest < 0 {
		return nil
	}
	return []int{fastest}
}

// perRequest is the offer's USD/h per request/s served, C_i / T_i.
func (o typeOffer) perRequest() float64 { return o.priceUSDPerHour / o.throughputRPS }

// singleType is the GPU type a single-type peer runs service s on, that
// type's T_i in requests/s, and how many GPUs of it the cluster has.
//
// The type is pinned once per Config, for all services together, by the
// rule a platform team uses when a type can run out (a fixed fleet, a
// cloud quota; pinTypes):
//
//   - each service's choices are the cluster's types with a profile for
//     its model whose batch latency meets RT_max, cheapest per request
//     first (suitableOrder; cheapestSuitable is the first);
//   - the services are taken in decreasing order of the cost penalty of
//     their second choice: USD/h per request/s of the second choice minus
//     the first's (+Inf for a service with one choice, which has nowhere
//     else to go, so it is served first; ties in the Config's order);
//   - each gets its first choice that still has room for its planned peak
//     (plannedPeakRPS, from the rates before the replayed window, never
//     the replayed ones) at the saturation threshold: ceil(peak / (threshold
//     x T_i)) GPUs, at least 1, which that type then has fewer; with room
//     on none, its first choice (its pods then wait for GPUs there);
//   - a service without a planned peak (no History) gets its first choice
//     and takes no room.
//
// At run time a peer's pods go to the pinned type while it has room, then
// to its other suitable types in order (fallbackTypes: the Deployment's
// node affinity prefers the pinned type, as a platform team writes it so
// that a full type does not leave pods Pending); those beyond every
// suitable type's free GPUs stay Pending (are not created), which shows
// in attainment.
func singleType(cfg *Config, s Service) (gpuType string, throughputRPS float64, gpus int, err error) {
	ps := cfg.pins
	if ps == nil {
		ps = pinTypes(cfg)
	}
	if ps.err != nil {
		return "", 0, 0, ps.err
	}
	p, ok := ps.byName[s.Name]
	if !ok {
		return "", 0, 0, fmt.Errorf("service %s is not one of the replay's", s.Name)
	}
	for _, g := range cfg.Cluster {
		if g.GPUType == p.gpuType {
			gpus += g.Nodes * g.GPUsPerNode
		}
	}
	return p.gpuType, p.throughputRPS, gpus, nil
}

// fallbackTypes are service s's suitable types after its pin, best first
// (pinTypes); nil when it has none or the pins failed.
func fallbackTypes(cfg *Config, s Service) []string {
	ps := cfg.pins
	if ps == nil {
		ps = pinTypes(cfg)
	}
	if ps.err != nil {
		return nil
	}
	return ps.byName[s.Name].fallback
}

// gpusOf is how many GPUs of type gpuType cfg's cluster has.
func gpusOf(cfg *Config, gpuType string) int {
	n := 0
	for _, g := range cfg.Cluster {
		if g.GPUType == gpuType {
			n += g.Nodes * g.GPUsPerNode
		}
	}
	return n
}

// spill applies a single-type peer's change d of service instances, the
// pinned type at index i of v.types and its fallback types at fb (a
// preferred node affinity: the scheduler puts a pod on the pinned type
// while it has room, else on the first fallback that has): a rise fills
// i's free slots, then each fallback's in order, the rest staying
// Pending (not created); a fall removes fallback instances first, last
// fallback first, then i's (they are the newer pods, which a ReplicaSet
// removes first).
func spill(v view, i int, fb []int, d int) []int {
	delta := make([]int, len(v.types))
	if i < 0 {
		return delta
	}
	order := append([]int{i}, fb...)
	if d > 0 {
		for _, k := range order {
			n := min(d, v.types[k].slots)
			delta[k] += n
			d -= n
		}
		return delta
	}
	for j := len(order) - 1; j >= 0 && d < 0; j-- {
		k := order[j]
		n := min(-d, v.types[k].running)
		delta[k] -= n
		d += n
	}
	return delta
}

// fallbackIndices are fb's types' indices in v.types (absent ones left out).
func fallbackIndices(v view, fb []string) []int {
	var out []int
	for _, t := range fb {
		if k := typeIndexOf(v, t); k >= 0 {
			out = append(out, k)
		}
	}
	return out
}

// singleTypeTarget is singleType's type and GPU count for service s, and
// the per-pod target of a single-type peer: hetsev's saturation threshold
// for s (its resolved policy) times that type's T_i, requests/s.
func singleTypeTarget(cfg *Config, s Service) (gpuType string, targetRPS float64, gpus int, err error) {
	r, err := cfg.resolve(s, heterogeneity.SolverHeuristic)
	if err != nil {
		return "", 0, 0, err
	}
	name, tput, gpus, err := singleType(cfg, s)
	if err != nil {
		return "", 0, 0, err
	}
	return name, r.Policy().SaturationThreshold * tput, gpus, nil
}

// typeIndexOf is the index of gpuType in v.types, -1 if absent.
func typeIndexOf(v view, gpuType string) int {
	for i, t := range v.types {
		if t.gpu.Name == gpuType {
			return i
		}
	}
	return -1
}

// epoch anchors trace seconds for the time-based decision code.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(sec float64) time.Time { return epoch.Add(time.Duration(sec * float64(time.Second))) }

// hetsevPolicy runs heterogeneity.Autoscaler.Decide per service, on the
// Observation hetsev-scaler builds (pkg/scaler reconcile), every
// hetsev-scaler decision interval (pacedPolicy).
type hetsevPolicy struct {
	svc []*scaler.Resolved
	as  []*heterogeneity.Autoscaler
	// every is the seconds between two decisions: the resolved
	// spec.scaling.intervalSeconds (Knobs.ScalerInterval, or the
	// scaler's default), the same for every service since they share
	// Knobs.
	every int
	// colocation and mode give the capacity factor as hetsev-scaler does.
	colocation interference.Colocation
	mode       interference.SharingMode
	pl         placement.Placer
	// moved is, per service, the consolidation move its last decision
	// started or timed out (moverPolicy).
	moved []moveStep
}

// moveStep is what a decision did to a consolidation move: the column
// index (into view.types) and the phase; column -1 for no step.
type moveStep struct {
	column int
	phase  heterogeneity.ReplacementPhase
}

// moverPolicy is a policy whose decisions may start a consolidation move
// (Policy.Consolidation): the caller counts typeView.movable for it and,
// as hetsev-scaler sets pod-deletion-cost, marks the instance a move
// starting replaces (so that a removal of the column takes it first) and
// unmarks the column when a move times out.
type moverPolicy interface {
	// moves is whether the policy moves instances at all.
	moves() bool
	// moveStep is the column index (into view.types) of the move the last
	// decision for service svc started or timed out, and which; ok false
	// when it did neither.
	moveStep(svc int) (column int, phase heterogeneity.ReplacementPhase, ok bool)
}

func (p *hetsevPolicy) moves() bool { return len(p.as) > 0 && p.as[0].Policy.Consolidation }

func (p *hetsevPolicy) moveStep(svc int) (int, heterogeneity.ReplacementPhase, bool) {
	if svc >= len(p.moved) || p.moved[svc].column < 0 {
		return 0, "", false
	}
	return p.moved[svc].column, p.moved[svc].phase, true
}

func newHetsevPolicy(cfg *Config, solver string, weight float64) (*hetsevPolicy, error) {
	p := &hetsevPolicy{
		// hetsev-scaler's LatencyInflation (Resolved.CapacityInflation).
		colocation: cfg.Colocation, mode: cfg.GPUSharing,
		pl: placement.Placer{InterferenceWeight: weight, Colocation: cfg.Colocation, Mode: cfg.GPUSharing,
			// hetsev-scheduler's defaults (configv1): the busy-share cap, and
			// GPUs in use first for instances that declare a busy share.
			Choice: gpuinventory.Choice{MaxBusyShare: gpuinventory.DefaultMaxBusyShare, Consolidate: true}},
	}
	for _, s := range cfg.Services {
		r, err := cfg.resolveHetsev(s, solver)
		if err != nil {
			return nil, err
		}
		p.svc = append(p.svc, r)
		pol := r.Policy()
		p.every = max(1, int(pol.DecisionInterval/time.Second))
		cfg.Knobs.ablate(&pol)
		a := heterogeneity.NewAutoscaler(pol)
		if pol.SeasonalForecast {
			recordHistory(a, cfg, s)
		}
		p.as = append(p.as, a)
	}
	return p, nil
}

func (p *hetsevPolicy) decide(svc int, v view) []int {
	obs := heterogeneity.Observation{Now: at(v.now), ArrivalRate: v.arrival}
	for _, t := range v.types {
		inflat, _ := p.svc[svc].CapacityInflation(t.columnName(), p.colocation, p.mode)
		ts, _ := p.svc[svc].TypeState(t.columnName(), t.running, t.slots, inflat, t.inflation)
		// Ready: launched instances, the only ones the router sends
		// requests to; a replacement (Policy.Replacement) removes an old
		// instance only once new ones are past their launch time.
		ts.Ready = t.ready
		ts.Movable = min(t.movable, t.running)
		obs.Types = append(obs.Types, ts)
	}
	act := p.as[svc].Decide(obs)
	if p.moved == nil {
		p.moved = make([]moveStep, len(p.as))
	}
	p.moved[svc] = moveStep{column: -1}
	rp := act.Replacement
	if (act.ReplacementPhase == heterogeneity.ReplacementStarted || act.ReplacementPhase == heterogeneity.ReplacementTimedOut) && rp.IsMove() {
		for i, t := range obs.Types {
			if t.GPUType == rp.From {
				p.moved[svc] = moveStep{column: i, phase: act.ReplacementPhase}
			}
		}
	}
	return act.Delta
}

// columns are hetsev-scaler's columns of service svc on gpuType
// (scaler.Resolved.Columns): the type's own, then its light flavors
// when Config.Flavors has any.
func (p *hetsevPolicy) columns(svc int, gpuType string) []columnOffer {
	var out []columnOffer
	thr := p.svc[svc].Policy().SaturationThreshold
	for _, c := range p.svc[svc].Columns() {
		if c.GPUType == gpuType {
			ts, _ := p.svc[svc].TypeState(c.Name, 0, 0, 0, 1)
			out = append(out, columnOffer{name: c.Name, priceUSDPerHour: c.PriceUSDPerHour, thresholdRPS: thr * ts.ThroughputRPS, light: c.Light, batchSize: c.BatchSize})
		}
	}
	return out
}

// demand is what hetsev-scaler's pods of a column declare
// (scaler.Resolved.Demand).
func (p *hetsevPolicy) demand(svc int, column string, base gpuinventory.Demand) gpuinventory.Demand {
	if d, ok := p.svc[svc].Demand(column); ok {
		return d
	}
	return base
}

func (p *hetsevPolicy) wholeGPU() bool           { return false }
func (p *hetsevPolicy) instant() bool            { return false }
func (p *hetsevPolicy) placer() placement.Placer { return p.pl }
func (p *hetsevPolicy) decisionInterval() int    { return max(1, p.every) }

// defaultPolicy is default Kubernetes with an HPA per service on the Pods
// metric requests/s, target SaturationThreshold x the T_i of the slowest
// GPU type of the cluster (a pod may land on any of them, so the target
// must hold on the slowest; our choice). New pods get a GPU type at random among those with a free
// GPU; scale-in removes the newest pods, as the ReplicaSet controller does
// among ready pods.
type defaultPolicy struct {
	hpa []*hpa.Autoscaler
	rng *rand.Rand
}

func newDefaultPolicy(cfg *Config, seed uint64) (*defaultPolicy, error) {
	p := &defaultPolicy{rng: rand.New(rand.NewPCG(seed, 0xdefa))}
	total := 0
	for _, g := range cfg.Cluster {
		total += g.Nodes * g.GPUsPerNode
	}
	for _, s := range cfg.Services {
		r, err := cfg.resolve(s, heterogeneity.SolverHeuristic)
		if err != nil {
			return nil, err
		}
		pol := r.Policy()
		slowest := math.Inf(1)
		for _, pr := range cfg.Profiles.On(cfg.gpuTypes()...).ForModel(s.Model) {
			slowest = min(slowest, pr.ThroughputRPS)
		}
		a, err := hpa.New(int32(cfg.Knobs.MinReplicas), int32(max(total, cfg.Knobs.MinReplicas)), pol.SaturationThreshold*slowest)
		if err != nil {
			return nil, err
		}
		p.hpa = append(p.hpa, a)
	}
	return p, nil
}

func (p *defaultPolicy) decide(svc int, v view) []int {
	current := 0
	for _, t := range v.types {
		current += t.running
	}
	// The HPA averages the metric over the pods; each pod's requests/s is
	// its share of W.
	metric := v.arrival / float64(max(current, 1))
	want := int(p.hpa[svc].Desired(at(v.now), int32(max(current, 1)), metric))
	delta := make([]int, len(v.types))
	for ; want > current; want-- {
		var free []int
		for i, t := range v.types {
			if t.slots-delta[i] > 0 {
				free = append(free, i)
			}
		}
		if len(free) == 0 {
			break // no free GPU: the pods would stay Pending
		}
		delta[free[p.rng.IntN(len(free))]]++
	}
	// Remove the newest pods first.
	next := make([]int, len(v.types)) // per type, how many of its newest are already removed
	for ; want < current; want++ {
		best := -1
		for i, t := range v.types {
			k := len(t.starts) - 1 - next[i]
			if k >= 0 && (best < 0 || t.starts[k] > v.types[best].starts[len(v.types[best].starts)-1-next[best]]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		next[best]++
		delta[best]--
	}
	return delta
}

func (p *defaultPolicy) wholeGPU() bool           { return true }
func (p *defaultPolicy) instant() bool            { return false }
func (p *defaultPolicy) placer() placement.Placer { return placement.Placer{} }
func (p *defaultPolicy) demand(_ int, _ string, base gpuinventory.Demand) gpuinventory.Demand {
	return base
}

// newPolicy builds the named policy for cfg.
func newPolicy(cfg *Config, name string) (policy, error) {
	switch name {
	case PolicyDefault:
		return newDefaultPolicy(cfg, cfg.Seed)
	case PolicyHeuristic:
		return newHetsevPolicy(cfg, heterogeneity.SolverHeuristic, 0)
	case PolicyExact:
		return newHetsevPolicy(cfg, heterogeneity.SolverExact, placement.DefaultInterferenceWeight)
	case policyIdle:
		return idlePolicy{}, nil
	case PolicyHPABestType:
		return newHPABestTypePolicy(cfg)
	case PolicyKnativeKPA:
		return newKnativeKPAPolicy(cfg)
	case PolicyMelange:
		return newMelangePolicy(cfg)
	case PolicyINFaaS:
		return newINFaaSPolicy(cfg)
	case PolicyMelangeAIBrix:
		return newMelangeAIBrixPolicy(cfg)
	case PolicyKAIFraction:
		return newKAIFractionPolicy(cfg)
	case PolicyHAMiCores:
		return newHAMiCoresPolicy(cfg)
	default:
		return nil, fmt.Errorf("policy %q is not replayed", name)
	}
}
