package evaluate

import (
	"fmt"
	"math"

	"github.com/hetsev/hetsev/pkg/catalog"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/interference"
	"github.com/hetsev/hetsev/pkg/placement"
)

// The lower bound (PolicyBound) is a cost no policy can beat on the same
// arrivals at the same SLOs, on the evaluator's simulated servers and
// cluster. It is not a policy: nothing is replayed for it.
//
// Terms. For service s: X_s its requests that arrive in the measured
// seconds (at or after Config.MeasureFrom), R_s = |X_s|, A_s ⊆ X_s those a
// policy answers within RT_max,s (response time plus the network delay,
// tallyDone), SL_min,s its service level. For each GPU type i of the
// cluster with a profile for s's model: C_i the price of one GPU in USD/s
// and P_i the batch points its servers can run (batchPoints): the
// profile's batch and each measured smaller batch (Profile.SmallBatches,
// data/profiles/small_batches.csv). A point p has batch size b_p, solo
// batch latency L_p (s), measured throughput T_p (requests/s) and U_p =
// max(T_p, b_p / L_p). Over P_i: L_i = min L_p the least batch latency,
// τ_i = min 1 / U_p the least GPU time per request (s), and b_i = max b_p
// the largest batch (the profile's). Type i is feasible for s when L_i +
// network <= RT_max,s. G >= 1 is the most summed batch progress one GPU
// makes per second under sharing (below). Then
//
//	w_s = max over feasible i of (RT_max,s - network - L_i), seconds
//	b_s = max over feasible i of b_i
//	N_s = the greedy count of X_s with window w_s and cap b_s (below)
//	fluid_s(n)    = n · min over feasible i of C_i · τ_i / G
//	batch_s(n, R) = (N_s - (R - n))+ · min over feasible i of C_i · L_i / G
//
// Claim. A policy that answers n_s = |A_s| requests of each service within
// RT_max is billed at least Σ_s max(fluid_s(n_s), batch_s(n_s, R_s)) over
// the measured seconds. One that meets every SLO answers n_s >= SL_min,s ·
// R_s, so R_s - n_s <= D_s = floor((1 - SL_min,s) · R_s), and is billed at
// least B = Σ_s max(fluid_s(SL_min,s · R_s), batch_s(R_s - D_s, R_s)): the
// bound. checkBound applies the claim to each policy's own n_s.
//
// Premises, each a property of the simulated cluster this package
// replays (cluster.go, replay.go, internal/sim/replay and
// internal/sim/modelserver), checked there:
//
//	P1 A batch starts no earlier than its latest member's arrival: the
//	   server takes into a batch only requests queued at or before its
//	   start (modelserver.Server.process). Queueing only delays the start.
//	P2 A server on a GPU of type i runs at one point p of P_i: the
//	   profile's batch, or the measured smaller batch its column is
//	   capped at (newPolicyRun, policy.go columnOffer.batchSize). Each
//	   batch it runs takes L_p times its interference factor f >= 1,
//	   whatever its size: the evaluator's servers have no per-size
//	   latencies (modelserver.Config.BatchLatencies is empty), so a
//	   partial batch runs as long as a full one, and SetFactor treats a
//	   factor below 1 as 1. Co-location only lengthens a batch. So a
//	   batch on type i runs at least L_i and is L_p >= L_i solo-seconds
//	   of work.
//	P3 A batch holds at most b_p <= b_i requests (its server's
//	   modelserver.Config.BatchSize is b_p).
//	P4 A GPU's instances k, each busy a share d_k of a second with
//	   factor f_k, make Σ_k d_k / f_k <= G solo-seconds of batch progress
//	   in it: the co-location model's summed throughput gain, G as
//	   sharingGain finds it (see below for where this is searched, not
//	   proved).
//	P5 Every second in which a GPU runs a batch it is billed C_i: a GPU
//	   hosting an instance is billed each measured second (account), and
//	   a batch holding a measured request starts in the measured seconds.
//	   Two leaks, both at most one RT_max of one instance's batches: an
//	   instance removed by a scale-down serves its queue (Remove drains
//	   it) after it leaves the cluster's billing, and the replay's last
//	   queues are drained after the last billed second.
//
// Proof of the window. Let a batch on a feasible type i answer its
// members within RT_max: each member a finishes by a + (RT_max - network)
// in s. By P1 and P2 it ends at or after (latest arrival) + L_i, so the
// latest arrival is at most (earliest arrival) + RT_max - network - L_i
// <= earliest + w_s. By P3 it holds at most b_i <= b_s members. A member
// answered within RT_max cannot have run on an infeasible type (every
// batch there takes at least L_i > RT_max - network). So the batches that
// answer A_s, each restricted to its members in A_s, partition A_s into
// groups of at most b_s requests whose arrivals span at most w_s: A_s
// needs at least OPT(A_s) batches, OPT(Y) being the fewest such groups of
// a set Y.
//
// Greedy is optimal. Sort Y by arrival (ties by any fixed order). Greedy
// opens a group at the earliest ungrouped y_1 and puts in it every later
// request in order while it is within y_1 + w and the group has fewer
// than b: the group is B = y_1..y_e, a prefix. Take any partition P of Y
// into feasible groups; let H be the group of y_1. H lies in [y_1, y_1 +
// w] (y_1 is the earliest). While H ≠ B: if |H| < |B|, some y in B is not
// in H; move y from its group into H: H stays within [y_1, y_1 + w] and
// at most |B| <= b, the group y left only loses a member (it stays
// feasible or vanishes). Otherwise some z in H is not in B and some y in
// B is not in H; z lies within the window and is not in the prefix B, so
// z comes after y_e, hence z >= y; swap them. H keeps its size and its
// window. y's old group H' loses y >= min H' and gains z >= y, so its
// earliest member does not fall below min H' >= y_1, and its latest is
// max(max H', z) with z <= y_1 + w <= min H' + w: it stays within w.
// Each step makes H share one more member with B, and no step adds a
// group. Once B ⊆ H, H = B: a member of H beyond B would lie within the
// window after y_e, so B stopped at the cap, |B| = b >= |H|. So P becomes
// a partition as large as before (or smaller) that contains B. Removing B leaves a partition of Y \ B, on which greedy
// continues exactly as it would; by induction on |Y| greedy uses at most
// |P| groups. Greedy's groups are feasible, so its count N(Y) = OPT(Y).
//
// Drops. Removing one request from Y lowers OPT by at most one: a
// partition of Y minus r plus the group {r} (feasible: w >= 0, b >= 1)
// partitions Y. So OPT(A_s) >= OPT(X_s) - (R_s - n_s) = N_s - (R_s - n_s).
// The counter (batchcount.go) gets N_s = N(X_s) online from the
// arrivals the replay draws, the same for every policy, with w_s widened
// by 1 ns against float rounding (a wider window only lowers the count).
//
// Proof of the cost. By P2 a batch run at point p of type i is L_p
// solo-seconds of work, done at 1/f of a second per second; by P4 the
// work a GPU does for all its instances in a second is at most G
// solo-seconds, and by P5 that second is billed C_i. So batches of summed
// solo work Σ L_p on GPUs of type i need at least Σ L_p / G billed
// seconds of them, at C_i each. Let W_s be the sum, over the batches that
// answer requests of A_s, of C_i · L_p / G for the type i and point p
// each ran at; batches of different services share GPU time only within
// G, so the billed cost is at least Σ_s W_s. Those batches run on
// feasible types and are at least OPT(A_s), and each has L_p >= L_i, so
// W_s >= OPT(A_s) · min over feasible i of C_i · L_i / G >= batch_s(n_s,
// R_s). Each serves at most b_p <= U_p · L_p requests (P3), so its C_i ·
// L_p / G is at least C_i / (G · U_p) >= C_i · τ_i / G per request it
// answers, and W_s >= fluid_s(n_s). Both bound the same W_s, so W_s is at
// least their max, and the billed cost at least Σ_s max(...). Everything
// else a policy pays for (idle GPUs, the saturation threshold's headroom,
// launch times, GPUs billed whole while partly used, batches of requests
// it fails) only adds to it. Node billing (a node hosting an instance
// bills all its GPUs) is at least GPU billing, so B bounds it too.
//
// G is a property of the co-location model (sharingGain): the largest
// Σ_k d_k / f_k it predicts on one GPU, searched at each model's least
// and greatest batch latency over the cluster's types and their batch
// points (the latencies P2 lets its servers run). The measurements say
// time-slicing does not raise summed throughput (two busy ResNet-50:
// 0.94x), and the fitted time-slicing model agrees (its largest value
// over the grid sharingGain searches is 0.986 for the shipped profiles'
// models and latencies, so G = 1); MPS does (1.19x measured), and
// the fitted MPS model gives n identical busy instances n / (1 + (n-1)γ),
// which tends to 1/γ. G is taken as the larger of 1, 1/γ under MPS, and
// the grid's largest value, so the bound stays below every policy's cost
// on the model the replay runs. The grid is a search, not a proof of the
// supremum, the replay engine sets f_k from the busy shares of the step
// before (a share that jumps within a step is priced a step late), and P5
// leaks a little. So the evaluator checks, every run, that no policy's
// billed cost is below what its own answered requests must cost
// (checkBound), and fails if one is: a premise would then be broken.
//
// What B leaves out, in the bound's favour: whole GPUs (batches are
// charged their GPU time, not whole GPU-seconds), any minimum of one
// instance per service, launch times, the MaxBatchDelay the servers wait
// before a partial batch, which type and batch point serve which batch
// (w_s, b_s, L_i and τ_i are the best over the feasible types and their
// points, the price per batch the least), and which requests are dropped
// (any R_s - n_s of them, the ones that save the most batches). It is
// below what a reactive policy can reach: a policy holds instances for
// the load it will see, not the load it saw.

// sharingGain is G of the bound: the largest summed throughput share
// Σ_k d_k / f_k the co-location model c predicts for instances of the
// given models (with their solo batch latencies in seconds) sharing one
// GPU in mode, over 2 to 3 instances and busy shares 0.25, 0.5, 0.75 and 1,
// and at least 1; under MPS at least 1/γ (the limit for many identical
// busy instances).
func sharingGain(c interference.Colocation, mode interference.SharingMode, latency map[string]float64) float64 {
	latencies := map[string][]float64{}
	for m, l := range latency {
		latencies[m] = []float64{l}
	}
	return sharingGainOver(c, mode, latencies)
}

// sharingGainOver is sharingGain over several batch latencies per model
// (seconds): each model's instances are tried at each of its latencies.
func sharingGainOver(c interference.Colocation, mode interference.SharingMode, latencies map[string][]float64) float64 {
	g := 1.0
	if mode == interference.SharingMPS && c.Sharing.MPS.Contention > 0 {
		g = math.Max(g, 1/c.Sharing.MPS.Contention)
	}
	var pool []interference.Instance
	for m, ls := range latencies {
		for _, l := range ls {
			for _, d := range []float64{0.25, 0.5, 0.75, 1} {
				pool = append(pool, c.ProfileInstance(mode, m, d, l))
			}
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

// batchPoints are the batch points a server of profile p can run (P2 of
// the proof): the profile's own batch and each measured smaller one
// (p.SmallBatches), at which the replay runs a column capped below the
// profile's batch.
func batchPoints(p catalog.Profile) []catalog.BatchPoint {
	return append([]catalog.BatchPoint{{BatchSize: p.BatchSize, ThroughputRPS: p.ThroughputRPS, LatencyMs: p.LatencyMs}}, p.SmallBatches...)
}

// feasibleType is a GPU type of the cluster that can answer a service's
// requests within RT_max: profiled for its model, its least batch latency
// plus the network delay at most RT_max.
type feasibleType struct {
	name string
	usd  float64 // price of one GPU, USD/s
	// latency is L_i, the least solo latency of a batch its servers can
	// run, s: min L_p over batchPoints.
	latency float64
	// perRequest is τ_i, the least GPU time per request, s: min 1 / U_p
	// over batchPoints, U_p = max(T_p, b_p / L_p).
	perRequest float64
	// batch is b_i, the largest batch its servers can run.
	batch int
}

// feasibleTypes are s's feasible types on cfg's cluster, in the cluster's
// order.
func feasibleTypes(cfg *Config, s Service) []feasibleType {
	var out []feasibleType
	for _, name := range cfg.gpuTypes() {
		prof, ok := cfg.Profiles.Get(s.Model, name)
		gt, ok2 := cfg.Catalog.ByName(name)
		if !ok || !ok2 {
			continue
		}
		ft := feasibleType{name: name, usd: gt.PriceUSDPerHour / 3600, latency: math.Inf(1), perRequest: math.Inf(1)}
		for _, pt := range batchPoints(prof) {
			l := pt.LatencyMs / 1000
			ft.latency = math.Min(ft.latency, l)
			ft.perRequest = math.Min(ft.perRequest, 1/math.Max(pt.ThroughputRPS, float64(pt.BatchSize)/l))
			ft.batch = max(ft.batch, pt.BatchSize)
		}
		if 1000*ft.latency+cfg.NetworkMs > s.RTMaxMs {
			continue
		}
		out = append(out, ft)
	}
	return out
}

// serviceBound is one service's terms of the bound (the proof above).
type serviceBound struct {
	// perRequest is the fluid term's least cost of one answered request,
	// min C_i · τ_i / G, USD, on type perRequestType at perRequestSecs
	// GPU-seconds (τ_i / G).
	perRequest, perRequestSecs float64
	perRequestType             string
	// perBatch is the least cost of one batch, min C_i · L_i / G, USD, on
	// type perBatchType at perBatchSecs GPU-seconds (L_i / G).
	perBatch, perBatchSecs float64
	perBatchType           string
	// batches is N_s, the greedy count of the measured arrivals.
	batches int64
}

// cost is the service's bound, USD, for a policy that answered n of its r
// measured requests within RT_max (n may be fractional: SL_min · R_s),
// with dropped requests that may save a batch each: max(fluid, batch);
// hours are the GPU-hours of the term that won, on its type.
func (b serviceBound) cost(n float64, dropped int64) (usd float64, typ string, hours float64) {
	fluid := n * b.perRequest
	nb := max(b.batches-dropped, 0)
	if batch := float64(nb) * b.perBatch; batch > fluid {
		return batch, b.perBatchType, float64(nb) * b.perBatchSecs / 3600
	}
	return fluid, b.perRequestType, n * b.perRequestSecs / 3600
}

// allowedDrops is D = floor((1 - sl) · r), the requests of r a policy
// meeting SL_min sl may fail; a relative 1e-12 and an absolute 1e-9 of
// slack keep float rounding from flooring a whole D to one less, which
// would overstate the bound.
func allowedDrops(sl float64, r int64) int64 {
	return int64(math.Floor((1-sl)*float64(r)*(1+1e-12) + 1e-9))
}

// lowerBound is the bound's result for cfg's services given the requests
// each received in the measured seconds and their greedy batch counts
// N_s (both aligned with cfg.Services; the same arrivals every policy
// saw): its billed cost B and, per GPU type, the GPU-hours it buys
// (fractional for a service whose fluid term wins, batches · L_i / G for
// one whose batch term wins), and each service's terms for checkBound.
// Only the cost, GPU-hours and requests are meaningful; PolicyResult.Bound
// says so. It fails for a service no GPU type of the cluster can serve
// within RT_max.
func lowerBound(cfg *Config, requests, batches []int64) (PolicyResult, []serviceBound, error) {
	// Each model's least and greatest batch latency over the cluster's
	// types and their batch points.
	latencies := map[string][]float64{}
	for _, s := range cfg.Services {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, p := range cfg.Profiles.On(cfg.gpuTypes()...).ForModel(s.Model) {
			for _, pt := range batchPoints(p) {
				lo, hi = math.Min(lo, pt.LatencyMs/1000), math.Max(hi, pt.LatencyMs/1000)
			}
		}
		switch {
		case lo > hi: // no profile
		case lo == hi:
			latencies[s.Model] = []float64{lo}
		default:
			latencies[s.Model] = []float64{lo, hi}
		}
	}
	g := sharingGainOver(cfg.Colocation, cfg.GPUSharing, latencies)
	out := PolicyResult{Policy: PolicyBound, Bound: true, SharingGain: g, GPUHours: map[string]float64{}, PeakGPUs: map[string]int{}}
	terms := make([]serviceBound, len(cfg.Services))
	var req, within float64
	for k, s := range cfg.Services {
		sl := s.SLMinOrDefault()
		t := &terms[k]
		t.perRequest, t.perBatch, t.batches = math.Inf(1), math.Inf(1), batches[k]
		for _, ft := range feasibleTypes(cfg, s) {
			if c := ft.usd * ft.perRequest / g; c < t.perRequest {
				t.perRequest, t.perRequestType, t.perRequestSecs = c, ft.name, ft.perRequest/g
			}
			if c := ft.usd * ft.latency / g; c < t.perBatch {
				t.perBatch, t.perBatchType, t.perBatchSecs = c, ft.name, ft.latency/g
			}
		}
		if t.perRequestType == "" {
			return PolicyResult{}, nil, fmt.Errorf("evaluate: lower bound: service %s: no GPU type of the cluster serves %s within RT_max %g ms", s.Name, s.Model, s.RTMaxMs)
		}
		n := float64(requests[k]) * sl
		usd, typ, hours := t.cost(n, allowedDrops(sl, requests[k]))
		sr := ServiceResult{Service: s.Name, Requests: requests[k], WithinSLO: int64(math.Ceil(n)), SLOAttainment: sl,
			CostUSD: usd, InstanceHours: map[string]float64{typ: hours}}
		out.Services = append(out.Services, sr)
		out.CostUSD += usd
		out.GPUHours[typ] += hours
		req += float64(requests[k])
		within += n
	}
	out.SLOAttainment = ratio(within, req)
	out.LowestSLOAttainment = math.Inf(1)
	for _, s := range out.Services {
		out.LowestSLOAttainment = math.Min(out.LowestSLOAttainment, s.SLOAttainment)
	}
	return out, terms, nil
}

// checkBound reports a policy whose billed cost is below what the
// requests it answered within RT_max must cost: the claim above applied to
// each service's own n_s = WithinSLO of its R_s = Requests, max(fluid,
// batch) with N_s - (R_s - n_s) batches, so it holds whether or not the
// policy met its SLOs. terms are lowerBound's, aligned with the policies'
// services. Both terms grow with n_s, so the least of a policy that
// answered at least SL_min,s · R_s requests of every service is at least
// B: a policy billed below B passes only when it answered fewer of some
// service, which B does not cover.
func checkBound(r RunResult, bound PolicyResult, terms []serviceBound) error {
	for _, p := range r.Policies {
		if p.Bound || p.Policy == policyIdle {
			continue
		}
		least := 0.0
		for k, s := range p.Services {
			usd, _, _ := terms[k].cost(float64(s.WithinSLO), s.Requests-s.WithinSLO)
			least += usd
		}
		if p.CostUSD < least*(1-1e-9) {
			return fmt.Errorf("evaluate: %s: policy %s costs %.6g USD, below the %.6g USD its within-RT_max answered requests must cost by the lower bound's argument (batches and requests, sharing gain G %.4f): the bound's premise no longer holds (see bound.go)",
				r.Name, p.Policy, p.CostUSD, least, bound.SharingGain)
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
