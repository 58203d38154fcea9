package evaluate

import (
	"fmt"
	"math"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/interference"
	"github.com/hetsev/hetsev/pkg/placement"
)

// The lower bound (PolicyBound) is a cost no policy can beat on the same
// arrivals at the same SLOs, on the evaluator's simulated servers and
// cluster. It is not a policy: nothing is replayed for it.
//
// Claim. Let R_s be the requests of service s that arrive in the measured
// seconds, SL_min,s its service level, and for each GPU type i of the
// cluster that s has a profile for, C_i the price of one GPU in USD/s, b_i
// the batch size, L_i the batch latency (s) and T_i the profiled
// throughput (requests/s). Let U_i = max(T_i, b_i / L_i) and G >= 1 the
// most a GPU's summed throughput grows by sharing (below). Then every
// policy's billed cost over the measured seconds is at least
//
//	B = Σ_s SL_min,s · R_s · min_{i : L_i + network <= RT_max,s} C_i / (G · U_i).
//
// Proof. A policy that meets service s's SLO answers at least SL_min,s ·
// R_s of its requests within RT_max,s. A request answered within RT_max,s
// ran in a batch on a GPU of a type whose solo batch latency plus the
// network delay is at most RT_max,s (co-location only lengthens a batch:
// the model's inflation is >= 1), so the min ranges over every type that
// can have served it. The simulated server runs at most b_i requests per
// batch and a batch alone takes L_i, so an instance alone serves at most
// b_i / L_i <= U_i requests per second of GPU time. On a shared GPU the
// engine stretches instance k's batches by its inflation f_k, so in a
// second in which k keeps a batch running a share d_k of the time it
// serves at most d_k U_k / f_k requests. Weighting each request served by
// k with 1 / U_k, a GPU serves a weight of at most Σ_k d_k / f_k <= G per
// second it is billed, at C_i per second. So every request served on type
// i costs at least C_i / (G · U_i), at least the min over the feasible
// types; summed over the SL_min,s · R_s requests each service must answer,
// the cost is at least B. Everything else a policy pays for (idle GPUs,
// partial batches, the saturation threshold's headroom, launch times, GPUs
// billed whole while partly used) only adds to its cost. Node billing (a
// node hosting an instance bills all its GPUs) is at least GPU billing, so
// B bounds it too.
//
// G is a property of the co-location model (sharingGain): the largest
// Σ_k d_k / f_k it predicts on one GPU. The measurements say time-slicing
// does not raise summed throughput (two busy ResNet-50: 0.94x), and the
// fitted time-slicing model agrees (its largest value over the grid
// sharingGain searches is 0.997, so G = 1); MPS does (1.19x measured), and
// the fitted MPS model gives n identical busy instances n / (1 + (n-1)γ),
// which tends to 1/γ. G is taken as the larger of 1, 1/γ under MPS, and
// the grid's largest value, so the bound stays below every policy's cost
// on the model the replay runs. The grid is a search, not a proof of the
// supremum, and the replay engine sets f_k from the busy shares of the
// step before (a share that jumps within a step is priced a step late).
// So the evaluator checks, every run, that no policy's billed cost is
// below B, and fails if one is: the premise would then be broken.
//
// What B leaves out, in the bound's favour: whole GPUs (it is fluid), any
// minimum of one instance per service, the time requests can wait, the
// SLO's network delay beyond the type's feasibility, and which requests
// are dropped (the cheapest SL_min share counts). It is far below what a
// reactive policy can reach: a policy holds instances for the load it will
// see, not the load it saw.

// sharingGain is G of the bound: the largest summed throughput share
// Σ_k d_k / f_k the co-location model c predicts for instances of the
// given models (with their solo batch latencies in seconds) sharing one
// GPU in mode, over 2 to 3 instances and busy shares 0.25, 0.5, 0.75 and 1,
// and at least 1; under MPS at least 1/γ (the limit for many identical
// busy instances).
func sharingGain(c interference.Colocation, mode interference.SharingMode, latency map[string]float64) float64 {
	g := 1.0
	if mode == interference.SharingMPS && c.Sharing.MPS.Contention > 0 {
		g = math.Max(g, 1/c.Sharing.MPS.Contention)
	}
	var pool []interference.Instance
	for m, l := range latency {
		for _, d := range []float64{0.25, 0.5, 0.75, 1} {
			pool = append(pool, c.ProfileInstance(mode, m, d, l))
		}
	}
	var members []interference.Instance
	var search func(from int)
	search = func(from int) {
		if len(members) >= 2 {
			if f, err := c.Sharing.Inflations(mode, members); err == nil {
				sum := 0.0
				for k, in := range members {
					sum += in.BusyShare / f[k]
				}
				g = math.Max(g, sum)
			}
		}
		if len(members) == 3 {
			return
		}
		for i := from; i < len(pool); i++ {
			members = append(members, pool[i])
			search(i)
			members = members[:len(members)-1]
		}
	}
	search(0)
	return g
}

// lowerBound is the bound's result for cfg's services given the requests
// each received in the measured seconds (aligned with cfg.Services; the
// same arrivals every policy saw): its billed cost B and, per GPU type, the
// fractional GPU-hours it buys. Only the cost, GPU-hours and requests are
// meaningful; PolicyResult.Bound says so.
func lowerBound(cfg *Config, requests []int64) (PolicyResult, error) {
	latency := map[string]float64{}
	for _, s := range cfg.Services {
		for _, p := range cfg.Profiles.On(cfg.gpuTypes()...).ForModel(s.Model) {
			latency[s.Model] = math.Max(latency[s.Model], p.LatencyMs/1000)
		}
	}
	g := sharingGain(cfg.Colocation, cfg.GPUSharing, latency)
	out := PolicyResult{Policy: PolicyBound, Bound: true, SharingGain: g, GPUHours: map[string]float64{}, PeakGPUs: map[string]int{}}
	var req, within float64
	for k, s := range cfg.Services {
		sl := s.SLMinOrDefault()
		best, bestType, bestPerReq := math.Inf(1), "", 0.0
		for _, name := range cfg.gpuTypes() {
			prof, ok := cfg.Profiles.Get(s.Model, name)
			gt, ok2 := cfg.Catalog.ByName(name)
			if !ok || !ok2 || prof.LatencyMs+cfg.NetworkMs > s.RTMaxMs {
				continue
			}
			u := math.Max(prof.ThroughputRPS, float64(prof.BatchSize)/(prof.LatencyMs/1000))
			gpuSecs := 1 / (g * u) // GPU-seconds per request served
			if c := gt.PriceUSDPerHour / 3600 * gpuSecs; c < best {
				best, bestType, bestPerReq = c, name, gpuSecs
			}
		}
		if bestType == "" {
			return PolicyResult{}, fmt.Errorf("evaluate: lower bound: service %s: no GPU type of the cluster serves %s within RT_max %g ms", s.Name, s.Model, s.RTMaxMs)
		}
		n := float64(requests[k]) * sl
		sr := ServiceResult{Service: s.Name, Requests: requests[k], WithinSLO: int64(math.Ceil(n)), SLOAttainment: sl,
			CostUSD: n * best, InstanceHours: map[string]float64{bestType: n * bestPerReq / 3600}}
		out.Services = append(out.Services, sr)
		out.CostUSD += sr.CostUSD
		out.GPUHours[bestType] += n * bestPerReq / 3600
		req += float64(requests[k])
		within += n
	}
	out.SLOAttainment = ratio(within, req)
	out.LowestSLOAttainment = math.Inf(1)
	for _, s := range out.Services {
		out.LowestSLOAttainment = math.Min(out.LowestSLOAttainment, s.SLOAttainment)
	}
	return out, nil
}

// checkBound reports a policy whose billed cost is below what the
// requests it answered within RT_max must cost (the bound's argument
// applied to the policy's own answered requests rather than SL_min · R_s,
// so it holds whether or not the policy met its SLOs).
func checkBound(r RunResult, bound PolicyResult) error {
	for _, p := range r.Policies {
		if p.Bound || p.Policy == policyIdle {
			continue
		}
		least := 0.0
		for k, s := range p.Services {
			b := bound.Services[k]
			if b.Requests > 0 && b.SLOAttainment > 0 {
				least += float64(s.WithinSLO) * b.CostUSD / (float64(b.Requests) * b.SLOAttainment)
			}
		}
		if p.CostUSD < least*(1-1e-9) {
			return fmt.Errorf("evaluate: %s: policy %s costs %.4f USD, below the %.4f USD its %s answered requests must cost by the lower bound's argument (sharing gain G %.4f): the bound's premise no longer holds (see bound.go)",
				r.Name, p.Policy, p.CostUSD, least, "within-RT_max", bound.SharingGain)
		}
	}
	return nil
}

// policyIdle replays the arrivals without instances, for a run that asks
// only for the bound; it is not reported.
const policyIdle = "idle"

// idlePolicy never starts an instance.
type idlePolicy struct{}

func (idlePolicy) decide(_ int, v view) []int                                           { return make([]int, len(v.types)) }
func (idlePolicy) wholeGPU() bool                                                       { return false }
func (idlePolicy) instant() bool                                                        { return false }
func (idlePolicy) placer() placement.Placer                                             { return placement.Placer{} }
func (idlePolicy) demand(_ int, _ string, base gpuinventory.Demand) gpuinventory.Demand { return base }
