package evaluate

import (
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
)

// PolicyNames lists the policies in report order: the baseline, the
// peers (policy_*.go), hetsev and the bound.
var PolicyNames = []string{PolicyDefault, PolicyHPABestType, PolicyKnativeKPA, PolicyMelange, PolicyINFaaS,
	PolicyHeuristic, PolicyExact, PolicyBound}

func knownPolicy(name string) bool { return slices.Contains(PolicyNames, name) }

// typeView is what a policy sees of one GPU type for one service.
type typeView struct {
	prof    catalog.Profile
	gpu     catalog.GPUType
	running int       // instances, launching ones included
	ready   int       // of them, those that serve (launched)
	starts  []float64 // creation time of each, trace seconds, oldest first
	slots   int       // MaxAdditional: more instances that fit now
	// slotsEmpty is how many instances of the model the type's GPUs hold
	// (one per GPU, anti-affinity): the bound's MaxAdditional.
	slotsEmpty int
	// inflation is the mean co-location latency inflation of the
	// running instances where they run (1 for none).
	inflation float64
}

// view is what a policy sees of one service at a decision.
type view struct {
	now     float64 // trace seconds
	arrival float64 // W: requests/s over the rate window, as the metrics adapter reports it
	peak    float64 // the peak rate of the next interval (perfect knowledge), requests/s
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
	// Config.Knobs.Interval.
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
	// singleTypePolicy runs each service on one GPU type, its first
	// instance included.
	singleTypePolicy interface {
		// serviceType is the GPU type (catalog name) of service svc.
		serviceType(svc int) string
	}
)

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
// fastest (least L_i); -1 for no offers.
func cheapestSuitable(offers []typeOffer, rtMaxMs float64) int {
	best := -1
	for i, o := range offers {
		if o.latencyMs > rtMaxMs || !(o.throughputRPS > 0) {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		b := offers[best]
		perReq, bestPerReq := o.priceUSDPerHour/o.throughputRPS, b.priceUSDPerHour/b.throughputRPS
		if perReq < bestPerReq || (perReq == bestPerReq && o.priceUSDPerHour < b.priceUSDPerHour) {
			best = i
		}
	}
	if best >= 0 {
		return best
	}
	for i, o := range offers {
		if best < 0 || o.latencyMs < offers[best].latencyMs {
			best = i
		}
	}
	return best
}

// singleType is the GPU type a single-type peer runs service s on
// (cheapestSuitable over the cluster's types with a profile for its
// model), that type's T_i in requests/s, and how many GPUs of it the
// cluster has.
func singleType(cfg *Config, s Service) (gpuType string, throughputRPS float64, gpus int, err error) {
	var offers []typeOffer
	for _, name := range cfg.gpuTypes() {
		g, ok := cfg.Catalog.ByName(name)
		prof, okp := cfg.Profiles.Get(s.Model, name)
		if !ok || !okp {
			continue
		}
		offers = append(offers, typeOffer{gpuType: name, priceUSDPerHour: g.PriceUSDPerHour, throughputRPS: prof.ThroughputRPS, latencyMs: prof.LatencyMs})
	}
	i := cheapestSuitable(offers, s.RTMaxMs)
	if i < 0 {
		return "", 0, 0, fmt.Errorf("service %s: no GPU type of the cluster has a profile for %s", s.Name, s.Model)
	}
	for _, g := range cfg.Cluster {
		if g.GPUType == offers[i].gpuType {
			gpus += g.Nodes * g.GPUsPerNode
		}
	}
	return offers[i].gpuType, offers[i].throughputRPS, gpus, nil
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
// Observation hetsev-scaler builds (pkg/scaler reconcile).
type hetsevPolicy struct {
	svc []*scaler.Resolved
	as  []*heterogeneity.Autoscaler
	// colocation and mode give the capacity factor as hetsev-scaler does.
	colocation interference.Colocation
	mode       interference.SharingMode
	pl         placement.Placer
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
		r, err := cfg.resolve(s, solver)
		if err != nil {
			return nil, err
		}
		p.svc = append(p.svc, r)
		p.as = append(p.as, heterogeneity.NewAutoscaler(r.Policy()))
	}
	return p, nil
}

func (p *hetsevPolicy) decide(svc int, v view) []int {
	obs := heterogeneity.Observation{Now: at(v.now), ArrivalRate: v.arrival}
	for _, t := range v.types {
		inflat, _ := p.svc[svc].CapacityInflation(t.gpu.Name, p.colocation, p.mode)
		ts, _ := p.svc[svc].TypeState(t.gpu.Name, t.running, t.slots, inflat, t.inflation)
		obs.Types = append(obs.Types, ts)
	}
	return p.as[svc].Decide(obs).Delta
}

// demand is what hetsev-scaler's pods declare (scaler.Resolved.Demand).
func (p *hetsevPolicy) demand(svc int, gpuType string, base gpuinventory.Demand) gpuinventory.Demand {
	if d, ok := p.svc[svc].Demand(gpuType); ok {
		return d
	}
	return base
}

func (p *hetsevPolicy) wholeGPU() bool           { return false }
func (p *hetsevPolicy) instant() bool            { return false }
func (p *hetsevPolicy) placer() placement.Placer { return p.pl }

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
	default:
		return nil, fmt.Errorf("policy %q is not replayed", name)
	}
}
