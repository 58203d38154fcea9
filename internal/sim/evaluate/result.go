package evaluate

import (
	"fmt"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
	"math"
	"slices"
	"sync"
	"time"
)

// ServiceResult is one service's outcome under one policy, over the
// measured seconds.
type ServiceResult struct {
	Service string `json:"service"`
	// Requests counts the requests that arrived; WithinSLO those answered
	// within RT_max; Unserved those that found no ready instance or were
	// rejected by the deadline-aware queue (both are SLO violations).
	Requests  int64 `json:"requests"`
	WithinSLO int64 `json:"within_slo"`
	Unserved  int64 `json:"unserved"`
	// SLOAttainment is WithinSLO / Requests; ServiceLevel is the
	// service's SL_min and MeetsSLO says SLOAttainment >= ServiceLevel.
	SLOAttainment float64 `json:"slo_attainment"`
	ServiceLevel  float64 `json:"service_level"`
	MeetsSLO      bool    `json:"meets_slo"`
	// P99Ms is the 99th percentile of response time, ms (network
	// included; to 1 %); P99Shed says it falls on a request that was not
	// answered (unserved or rejected), P99Ms then 0.
	P99Ms   float64 `json:"p99_ms"`
	P99Shed bool    `json:"p99_shed,omitempty"`
	// CostUSD is the service's part of the billed cost: every second a GPU
	// hosts instances its price is split over them in proportion to their
	// GPU memory. USD.
	CostUSD float64 `json:"cost_usd"`
	// MemoryCostUSD is HetSev 6.3's resource cost: each instance pays its
	// GPU memory's share of the GPU's price for as long as it exists (a
	// whole-GPU instance pays the whole price). USD.
	MemoryCostUSD float64 `json:"memory_cost"`
	// GPUUtilization is the mean busy share of the service's instances (the
	// share of time their GPU runs their batches).
	GPUUtilization float64 `json:"gpu_utilization"`
	// InstanceHours per GPU type.
	InstanceHours map[string]float64 `json:"instance_hours"`
	// ScalingActions counts decisions that changed the instances;
	// DecisionTimeUs is the mean wall time of one decision, µs.
	ScalingActions int     `json:"scaling_actions"`
	Decisions      int     `json:"decisions"`
	DecisionTimeUs float64 `json:"decision_time_us"`
	// Unplaced counts instances a decision asked for that did not fit the
	// cluster.
	Unplaced int `json:"unplaced"`
}

// PolicyResult is one policy's outcome over all services.
type PolicyResult struct {
	Policy string `json:"policy"`
	// CostUSD is the billed cost: every GPU hosting at least one instance,
	// for its hours, at the price of the cheapest instance share that holds
	// its pods' CPU and memory (billing); an owned fleet's (Owned) is the
	// whole cluster's. MemoryCostUSD is HetSev 6.3's memory-proportional
	// cost. USD.
	CostUSD       float64 `json:"cost_usd"`
	MemoryCostUSD float64 `json:"memory_cost"`
	// NodeCostUSD bills every node hosting at least one instance for all
	// its GPUs at their catalog price, as a cloud bills a multi-GPU
	// instance. USD.
	NodeCostUSD float64 `json:"node_cost_usd"`
	// SKUHours is, per instance type, the GPU-hours billed as a share of
	// it (billing); "" for GPUs billed at their catalog price.
	SKUHours map[string]float64 `json:"sku_gpu_hours"`
	// Owned marks an owned fleet's bill: CostUSD is the whole cluster's,
	// the same for every policy; the services' CostUSD are what their
	// GPUs would have been billed in a cloud.
	Owned bool `json:"owned,omitempty"`
	// ILPCostUSD is what the policy's decisions assumed its instances
	// cost: the sum over instances of the price the decision counts one
	// at (hetsev: busy share x GPU price with flavors, the GPU's price
	// without) times its measured time, USD. Against CostUSD it shows
	// whether the packing bills what the ILP assumed.
	ILPCostUSD float64 `json:"ilp_cost_usd"`
	// DeclaredBusyShare is, per GPU type, the mean over billed GPU-seconds
	// of the GPU's summed declared busy share (hetsev.io/busy-share, 1 for
	// an instance that declares none; capped at 1): how much of each
	// billed GPU the packing filled by the shares the scheduler packs by.
	// Where the ILP prices instances at their busy share, ILPCostUSD /
	// CostUSD is its mean over types weighted by their billed cost.
	DeclaredBusyShare map[string]float64 `json:"declared_busy_share"`
	// GoodputPerGPU is the requests answered within RT_max per second of
	// billed GPU time, requests/s per GPU.
	GoodputPerGPU float64 `json:"goodput_per_gpu"`
	// SLOsMet counts the services whose attainment reached their SL_min;
	// MeetsSLOs says all did.
	SLOsMet   int  `json:"slos_met"`
	MeetsSLOs bool `json:"meets_slos"`
	// Qualifies says every service reached its target τ_s (headline.go),
	// and ExcessMissed is E, the requests missed beyond the targets: the
	// scoreboard compares the costs of qualifying policies.
	Qualifies    bool    `json:"qualifies"`
	ExcessMissed float64 `json:"excess_missed"`
	// SLOAttainment is over all requests of all services;
	// LowestSLOAttainment is the lowest service's.
	SLOAttainment       float64 `json:"slo_attainment"`
	LowestSLOAttainment float64 `json:"lowest_slo_attainment"`
	// GPUUtilization is the busy share of billed GPU time (a GPU is busy
	// while any of its instances runs a batch).
	GPUUtilization float64            `json:"gpu_utilization"`
	GPUHours       map[string]float64 `json:"gpu_hours"`
	PeakGPUs       map[string]int     `json:"peak_gpus"`
	ScalingActions int                `json:"scaling_actions"`
	DecisionTimeUs float64            `json:"decision_time_us"`
	Services       []ServiceResult    `json:"services"`
	// InflationPrediction is the co-location check (prediction.go); nil
	// for the peers and for a hetsev policy that never shared a GPU.
	InflationPrediction *InflationPrediction `json:"inflation_prediction,omitempty"`
	// Bound marks the lower bound (bound.go): not a replayed policy; only
	// its cost, GPU-hours, requests and SharingGain (G) are meaningful.
	Bound       bool    `json:"bound,omitempty"`
	SharingGain float64 `json:"sharing_gain,omitempty"`
	// Series is sampled over the whole trace, warm-up included.
	Series Series `json:"-"`
}

// Series is a policy's replay over time, one point per Config.SeriesStep.
type Series struct {
	Hours     []float64            // trace time, h
	LoadRPS   []float64            // total arrival rate, requests/s
	Instances map[string][]float64 // instances per GPU type
	CostUSD   []float64            // billed cost so far, USD
	// InstancesPerGPU is instances over GPUs hosting one (packing; 0 when
	// none runs).
	InstancesPerGPU []float64
}

// RunResult is one replay of every policy.
type RunResult struct {
	Name            string      `json:"name"`
	Trace           string      `json:"trace"`
	Seed            uint64      `json:"seed"`
	Seconds         int         `json:"trace_seconds"`
	MeasuredSeconds int         `json:"measured_seconds"`
	Services        []Service   `json:"services"`
	Cluster         []NodeGroup `json:"cluster"`
	// GPUMode is how the simulated cluster accounted GPU shares
	// (Config.GPUMode; "" is annotations).
	GPUMode string `json:"gpu_mode,omitempty"`
	// Flavors are hetsev's instance flavors (Config.Flavors), e.g.
	// "0.1,0.25,0.5,1"; "" for whole GPUs only.
	Flavors string `json:"flavors,omitempty"`
	// Owned says the cluster is an owned fleet (Config.Owned): every
	// policy is billed all of it, and the scoreboard judges excess missed
	// requests at that cost.
	Owned          bool           `json:"owned,omitempty"`
	Policies       []PolicyResult `json:"policies"`
	Recommendation Recommendation `json:"recommendation"`
	// ReactiveCeilings is each service's reactive ceiling (ceiling.go),
	// aligned with Services: the most of its requests any policy that
	// provisions for the rates it has measured can answer within RT_max.
	ReactiveCeilings []float64 `json:"reactive_ceilings"`
	// Targets is each service's target τ_s (headline.go), aligned with
	// Services.
	Targets []float64 `json:"targets"`
	// SeasonalForecast says the hetsev policies ran with their seasonal
	// forecast (Knobs.SeasonalForecast).
	SeasonalForecast bool `json:"seasonal_forecast,omitempty"`
	// Pareto is every setting replayed: each peer's search for its best
	// (tuning.go) and the saturation-threshold sweep (pareto.go), when run.
	Pareto []ParetoPoint `json:"pareto,omitempty"`
	// Seeds are the replay at more arrival seeds (seeds.go), when run.
	Seeds []SeedResult `json:"seeds,omitempty"`
	// Truths are the replay under interference truths other than the
	// decision model (Config.InterferenceTruth), when run.
	Truths      []SeedResult `json:"interference_truths,omitempty"`
	WallSeconds float64      `json:"wall_seconds"`
	// Ablation is hetsev-exact with each rule off in turn (ablation.go),
	// when run.
	Ablation []AblationPoint `json:"ablation,omitempty"`
}

// Recommendation is the GPU mix to provision for the trace: the most GPUs
// of each type that hetsev-exact (else the first hetsev policy run) held
// at once, with its cost and attainment.
type Recommendation struct {
	Policy        string         `json:"policy"`
	GPUs          map[string]int `json:"gpus"`
	CostUSD       float64        `json:"cost_usd"`
	SLOAttainment float64        `json:"slo_attainment"`
}

// Policy returns the named policy's result, if it ran.
func (r RunResult) Policy(name string) (PolicyResult, bool) {
	for _, p := range r.Policies {
		if p.Policy == name {
			return p, true
		}
	}
	return PolicyResult{}, false
}

// Evaluate replays cfg's trace under each policy, in parallel, on the same
// arrivals, and computes the lower bound (bound.go) from those arrivals. It
// returns an error for an invalid Config, and when a policy's billed cost
// is below the bound's (the bound's premise would be broken).
func Evaluate(cfg Config) (RunResult, error) {
	cfg.defaultSharing()
	if err := cfg.Validate(); err != nil {
		return RunResult{}, err
	}
	cfg.pins = pinTypes(&cfg) // once, before the policies are built in parallel
	names := cfg.Policies
	if len(names) == 0 {
		names = PolicyNames
	}
	var replayed []string
	for _, n := range names {
		if n != PolicyBound {
			replayed = append(replayed, n)
		}
	}
	wantBound := len(replayed) < len(names)
	arrivalsOnly := wantBound && len(replayed) == 0
	if arrivalsOnly {
		replayed = []string{policyIdle} // the bound needs the arrivals
	}
	start := time.Now()
	out := RunResult{Name: cfg.Name, Trace: cfg.Trace, Seed: cfg.Seed, Seconds: len(cfg.Rates), MeasuredSeconds: len(cfg.Rates) - cfg.MeasureFrom, Owned: cfg.Owned,
		Services: cfg.Services, Cluster: cfg.Cluster, GPUMode: cfg.GPUMode, Flavors: cfg.Flavors.String(), Policies: make([]PolicyResult, len(replayed)),
		SeasonalForecast: cfg.Knobs.SeasonalForecast}
	for k := range cfg.Services {
		s := &cfg.Services[k]
		th := s.SaturationThreshold
		if th == 0 {
			th = heterogeneity.DefaultPolicy().SaturationThreshold
		}
		out.ReactiveCeilings = append(out.ReactiveCeilings, reactiveCeiling(&cfg, s, th))
	}
	errs := make([]error, len(replayed))
	counts := make([][]batchCount, len(replayed))
	var wg sync.WaitGroup
	for i, name := range replayed {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := newPolicyRun(&cfg, name)
			if err == nil {
				out.Policies[i] = r.run()
				counts[i], err = r.batchCounts()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return RunResult{}, fmt.Errorf("evaluate: %s: %w", replayed[i], err)
		}
	}
	if wantBound {
		// Every policy saw the same arrivals; the fewest counted keeps the
		// bound valid for all of them should that ever change.
		// The greedy batch counts agree across policies too; the fewest
		// keeps the bound valid. Each count is over the arrivals its
		// replay tallied as requests: the drops R_s - n_s are counted
		// against it.
		requests := make([]int64, len(cfg.Services))
		batches := make([]int64, len(cfg.Services))
		for k := range requests {
			requests[k], batches[k] = math.MaxInt64, math.MaxInt64
			for i, p := range out.Policies {
				requests[k] = min(requests[k], p.Services[k].Requests)
				batches[k] = min(batches[k], counts[i][k].Batches)
				if a := counts[i][k].Arrivals; a != p.Services[k].Requests && counts[i][k].Batches > 0 {
					return RunResult{}, fmt.Errorf("evaluate: %s: service %s: %d measured arrivals counted for the bound's batches, %d requests tallied; the bound needs the same requests", replayed[i], cfg.Services[k].Name, a, p.Services[k].Requests)
				}
			}
		}
		b, terms, err := lowerBound(&cfg, requests, batches)
		if err != nil {
			return RunResult{}, err
		}
		if err := checkBound(out, b, terms); err != nil {
			return RunResult{}, err
		}
		if arrivalsOnly {
			out.Policies = nil
		}
		// In the order asked for.
		at := slices.Index(names, PolicyBound)
		if at > len(out.Policies) {
			at = len(out.Policies)
		}
		out.Policies = slices.Insert(out.Policies, at, b)
	}
	out.judge()
	out.Recommendation = recommend(out)
	out.WallSeconds = time.Since(start).Seconds()
	return out, nil
}

func recommend(r RunResult) Recommendation {
	for _, name := range []string{PolicyExact, PolicyHeuristic} {
		if p, ok := r.Policy(name); ok {
			return Recommendation{Policy: name, GPUs: p.PeakGPUs, CostUSD: p.CostUSD, SLOAttainment: p.LowestSLOAttainment}
		}
	}
	return Recommendation{}
}

// result turns the replay's tallies into its PolicyResult.
func (r *policyRun) result() PolicyResult {
	out := PolicyResult{Policy: r.name, GPUHours: map[string]float64{}, PeakGPUs: r.peakGPUs, Series: r.series, LowestSLOAttainment: math.Inf(1),
		InflationPrediction: inflationPrediction(r.predicted)}
	var req, within int64
	var decisions int
	var decideTime time.Duration
	var gpuSecs, busy float64
	for _, s := range r.svcs {
		t := s.tally
		sr := ServiceResult{Service: s.Name, Requests: t.requests, WithinSLO: t.within, Unserved: t.unserved,
			SLOAttainment: ratio(float64(t.within), float64(t.requests)), ServiceLevel: s.SLMinOrDefault(),
			CostUSD: t.costUSD, MemoryCostUSD: t.memoryCostUSD,
			GPUUtilization: ratio(t.busySecs, t.instanceSecs), InstanceHours: map[string]float64{},
			ScalingActions: t.actions, Decisions: t.decisions, Unplaced: t.unplaced,
			DecisionTimeUs: ratio(float64(t.decideTime.Microseconds()), float64(t.decisions))}
		for k, v := range t.typeSecs {
			sr.InstanceHours[k] = v / 3600
		}
		sr.MeetsSLO = t.requests == 0 || sr.SLOAttainment >= sr.ServiceLevel
		if sr.MeetsSLO {
			out.SLOsMet++
		}
		p99 := t.latency.quantile(0.99)
		sr.P99Shed = math.IsInf(p99, 1)
		if !sr.P99Shed {
			sr.P99Ms = p99
		}
		out.Services = append(out.Services, sr)
		out.CostUSD += t.costUSD
		out.MemoryCostUSD += t.memoryCostUSD
		out.ILPCostUSD += t.ilpCostUSD
		out.ScalingActions += t.actions
		if t.requests > 0 { // a service without requests missed nothing
			out.LowestSLOAttainment = math.Min(out.LowestSLOAttainment, sr.SLOAttainment)
		}
		req += t.requests
		within += t.within
		decisions += t.decisions
		decideTime += t.decideTime
	}
	out.DeclaredBusyShare = map[string]float64{}
	for k, v := range r.gpuSecs {
		out.GPUHours[k] = v / 3600
		out.DeclaredBusyShare[k] = ratio(r.gpuDeclared[k], v)
		gpuSecs += v
		busy += r.gpuBusy[k]
	}
	if math.IsInf(out.LowestSLOAttainment, 1) {
		out.LowestSLOAttainment = 0
	}
	out.SLOAttainment = ratio(float64(within), float64(req))
	out.MeetsSLOs = out.SLOsMet == len(out.Services)
	out.NodeCostUSD = r.nodeCostUSD
	out.SKUHours = map[string]float64{}
	for k, v := range r.skuSecs {
		out.SKUHours[k] = v / 3600
	}
	if r.cfg.Owned {
		out.CostUSD, out.Owned = r.ownedCostUSD, true
	}
	out.GoodputPerGPU = ratio(float64(within), gpuSecs)
	out.GPUUtilization = ratio(busy, gpuSecs)
	out.DecisionTimeUs = ratio(float64(decideTime.Microseconds()), float64(decisions))
	return out
}

// ratio is a/b, or 0 when b is 0 (nothing to measure): an attainment of
// a service without requests is reported as 0 with Requests 0, never as
// a silent 1.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
