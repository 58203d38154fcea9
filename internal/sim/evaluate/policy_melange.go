package evaluate

import (
	"math"
	"time"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
	"github.com/hetsev/hetsev/pkg/heterogeneity/ilp"
	"github.com/hetsev/hetsev/pkg/placement"
)

// PolicyMelange is a cost-optimal GPU-type mix per decision interval,
// without packing: Mélange's allocation as AIBrix's GPU optimizer runs it
// on the measured load.
const PolicyMelange = "melange-ilp"

// melangePolicy is PolicyMelange.
//
// Sources: Mélange (T. Griggs et al., "Mélange: Cost Efficient Large
// Language Model Serving by Exploiting GPU Heterogeneity", 2024,
// arXiv:2404.14527; its solver, tyler-griggs/melange-release
// melange/solver.py: minimise sum_j C_j y_j over integer GPU counts y_j
// such that the load of the request slices assigned to each GPU type,
// each slice's rate over the type's profiled maximum throughput under the
// SLO, fits in y_j), and AIBrix's GPU optimizer, which runs that solver
// periodically on the request rate its load monitor measures and hands
// the per-type replica counts to each type's PodAutoscaler
// (vllm-project/aibrix python/aibrix/aibrix/gpu_optimizer/optimizer/optimizer.py;
// https://aibrix.readthedocs.io/latest/features/heterogeneous-gpu.html).
//
// Every decision interval of hetsev-scaler (Knobs.ScalerInterval, 5 s by
// default), for W the arrival rate over the rate window (Knobs.RateWindow, 30 s:
// what hetsev-scaler sees), it solves from no instances
//
//	minimise sum_i C_i x_i  subject to  sum_i T_i x_i >= W / SaturationThreshold,
//	x_i = 0 where L_i > RT_max,  0 <= x_i <= the type's GPUs in use by the
//	service plus its free GPUs,  sum_i x_i >= MinReplicas
//
// exactly (ilp.SolveExact; with none feasible, the most capacity that fits
// at the least cost: ilp.Problem.Relaxed), and scales towards x: the
// missing instances of a type are launched at once; surplus ones are
// removed only when no instance was launched for ScaleInCoolDown (hetsev's
// cool-down, 300 s in the demo's knobs), which stands in for the
// stabilisation of the PodAutoscaler that applies AIBrix's counts. One
// instance per whole GPU.
//
// Where it simplifies: every request of a service is one size (the
// profiles have one batch size per model), so Mélange's request-size
// buckets and slices collapse into one and its bin packing into the
// single capacity constraint above; T_i is the profiled throughput and
// the SLO check the profiled batch latency (Mélange profiles the
// throughput at which the SLO holds); the headroom 1/SaturationThreshold
// is ours, the same as hetsev's, so that both plan for the same load.
// Its cadence and window are hetsev-scaler's, not AIBrix's: the optimizer
// as AIBrix deploys it, every 10 s on a 240 s window, is
// PolicyMelangeAIBrix.
type melangePolicy struct {
	threshold []float64 // per service, SaturationThreshold
	rtMaxMs   []float64 // per service
	minRepl   int
	coolDown  float64   // seconds without a launch before surplus instances go
	lastOut   []float64 // per service, trace second of the last launch (-Inf: none)
	every     int       // seconds between decisions: hetsev-scaler's interval
}

func newMelangePolicy(cfg *Config) (*melangePolicy, error) {
	p := &melangePolicy{minRepl: cfg.Knobs.MinReplicas}
	for _, s := range cfg.Services {
		r, err := cfg.resolve(s, heterogeneity.SolverExact)
		if err != nil {
			return nil, err
		}
		pol := r.Policy()
		p.threshold = append(p.threshold, pol.SaturationThreshold)
		p.rtMaxMs = append(p.rtMaxMs, pol.RTMaxMs)
		p.coolDown = pol.ScaleInCoolDown.Seconds()
		p.lastOut = append(p.lastOut, math.Inf(-1))
		p.every = int(pol.DecisionInterval / time.Second)
	}
	return p, nil
}

// decisionInterval is hetsev-scaler's interval: the optimizer runs at
// hetsev's cadence, so that only the decision differs.
func (p *melangePolicy) decisionInterval() int { return max(1, p.every) }

// mix is the cost-optimal instance count per type of v.types for service
// svc, or nil when the problem cannot be built or solved.
func (p *melangePolicy) mix(svc int, v view) []int {
	n := len(v.types)
	pr := ilp.Problem{
		Types: make([]ilp.Type, n), ArrivalRate: v.arrival, Target: v.arrival / p.threshold[svc],
		Lower: make([]int, n), Upper: make([]int, n), MinReplicas: p.minRepl,
	}
	for i, t := range v.types {
		pr.Types[i] = ilp.Type{Name: t.gpu.Name, ThroughputRPS: t.prof.ThroughputRPS,
			PriceUSDPerHour: t.gpu.PriceUSDPerHour, LaunchSeconds: t.prof.LaunchSeconds}
		if t.prof.LatencyMs <= p.rtMaxMs[svc] {
			pr.Upper[i] = t.running + t.slots
		}
	}
	if pr.Validate() != nil {
		return nil
	}
	if x, ok := ilp.SolveExact(pr); ok {
		return x
	}
	if x, ok := ilp.SolveExact(pr.Relaxed()); ok {
		return x
	}
	return nil
}

func (p *melangePolicy) decide(svc int, v view) []int {
	delta := make([]int, len(v.types))
	x := p.mix(svc, v)
	if x == nil {
		return delta
	}
	for i, t := range v.types {
		if x[i] > t.running {
			delta[i] = x[i] - t.running
			p.lastOut[svc] = v.now
		}
	}
	if v.now-p.lastOut[svc] >= p.coolDown {
		for i, t := range v.types {
			if x[i] < t.running {
				delta[i] = x[i] - t.running
			}
		}
	}
	return delta
}

func (p *melangePolicy) wholeGPU() bool           { return true }
func (p *melangePolicy) instant() bool            { return false }
func (p *melangePolicy) placer() placement.Placer { return placement.Placer{} }
func (p *melangePolicy) demand(_ int, _ string, base gpuinventory.Demand) gpuinventory.Demand {
	return base
}
