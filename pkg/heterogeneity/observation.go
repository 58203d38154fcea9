package heterogeneity

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/hetsev/hetsev/pkg/catalog"
	"github.com/hetsev/hetsev/pkg/heterogeneity/ilp"
	"github.com/hetsev/hetsev/pkg/heterogeneity/latency"
)

// TypeState is what the autoscaler knows about one GPU type for one service:
// the variables and constants of HetSev 4.1 indexed by instance type i.
type TypeState struct {
	// GPUType names the type, e.g. "T4"; unique within an Observation.
	GPUType string
	// Running is N_i, the instances of this type the service has now. Count
	// instances already requested but still launching too: otherwise the
	// same deficit is scaled out again on every decision until they are ready.
	Running int
	// Ready is how many of Running serve: ready and given traffic
	// (hetsev-scaler: the Deployment's ready replicas while the traffic
	// split routes to its column; the evaluator: instances past their
	// launch time). Only a replacement (Policy.Replacement, and a
	// consolidation move, Policy.Consolidation) reads it: an
	// old instance goes once new ready ones cover it. 0 when unknown.
	Ready int
	// ThroughputRPS is T_i, the profiled maximum throughput of one instance,
	// in requests/s (> 0).
	ThroughputRPS float64
	// LatencyMs is L_i, the profiled latency of one batch on an idle GPU, in ms.
	LatencyMs float64
	// PriceUSDPerHour is C_i, the price of one GPU of this type, in USD/h.
	PriceUSDPerHour float64
	// LaunchSeconds is O_i, the time an instance takes to launch and become
	// ready, in seconds (an estimate, see Profile.LaunchSeconds).
	LaunchSeconds float64
	// MaxAdditional is how many more instances of this type fit the free
	// resources now (constraint 2 of HetSev 4.1), computed by the caller from
	// free GPU memory, CPU and memory and the anti-affinity rule (no two
	// instances of one model on one GPU).
	MaxAdditional int
	// Movable is how many of Running are ready and alone on their GPU
	// where the scheduler would admit an instance of this column on
	// another GPU of the type that hosts other instances: moving one there
	// leaves its GPU empty, no longer billed (hetsev-scaler counts it from
	// the pods' GPUs, the evaluator from its cluster). Only consolidation
	// (Policy.Consolidation) reads it; 0 when unknown.
	Movable int
	// Light marks a light flavor's column (flavor.go: an instance of busy
	// share f < 1 that shares a GPU). A scale-out adds light instances only
	// while the service's planned capacity fits in one of them (see
	// Autoscaler.Propose): a busy service's extra light instances would
	// each open a GPU of their own, as no two instances of one model share
	// a GPU, and bill it whole.
	Light bool

	// The fields below feed the latency model of the SLO check
	// Policy.SLOCheck = SLOCheckModel; the paper's check ignores them.

	// BatchSize is b, the requests per batch the server forms, normally the
	// profile's batch size (Profile.BatchSize); 0 counts as 1 (no batching).
	BatchSize int
	// LatencyInflation is the co-location latency factor (>= 1) expected on
	// the GPUs new instances of this type would share, e.g. the fitted
	// co-location model's (interference.Colocation.PairInflation, as
	// hetsev-scaler gives it); 0 means 1 (no inflation).
	LatencyInflation float64
	// MaxBatchDelayMs is the server's batching timeout in ms (a partial
	// batch is dispatched this long after its first request); 0 means none.
	MaxBatchDelayMs float64
}

// LatencyModelOf returns the latency model of one instance of t, for the SLO
// check Policy.SLOCheck = SLOCheckModel: its BatchSize, LatencyMs,
// LatencyInflation and MaxBatchDelayMs.
func LatencyModelOf(t TypeState) latency.Model {
	return latency.Model{
		BatchSize:       t.BatchSize,
		BatchLatencyMs:  t.LatencyMs,
		Inflation:       t.LatencyInflation,
		MaxBatchDelayMs: t.MaxBatchDelayMs,
	}
}

// NewTypeState builds the TypeState of a service whose model has profile p,
// for GPU type g (which must be the profile's GPU type), with running
// instances and room for maxAdditional more.
func NewTypeState(p catalog.Profile, g catalog.GPUType, running, maxAdditional int) (TypeState, error) {
	if p.GPUType != g.Name {
		return TypeState{}, fmt.Errorf("heterogeneity: profile of %q is for GPU type %q, not %q", p.Model, p.GPUType, g.Name)
	}
	return TypeState{
		GPUType:         g.Name,
		Running:         running,
		ThroughputRPS:   p.ThroughputRPS,
		LatencyMs:       p.LatencyMs,
		PriceUSDPerHour: g.PriceUSDPerHour,
		LaunchSeconds:   p.LaunchSeconds,
		MaxAdditional:   maxAdditional,
		BatchSize:       p.BatchSize,
	}, nil
}

// Observation is the input of one decision for one service.
type Observation struct {
	Now time.Time // when the observation was made; must not be zero
	// ArrivalRate is W, the arrival rate of requests to the service, in
	// requests/s.
	ArrivalRate float64
	// ArrivalRateIsLowerBound says ArrivalRate is only a lower bound of W:
	// some instances that serve traffic have not been measured (a new
	// instance has no request rate until traffic reaches it and its
	// metrics cover a rate window), so their requests are missing from the
	// sum. The autoscaler then still scales out (a lower bound whose
	// saturation stays above the threshold justifies new instances; the
	// amount may fall short of the true deficit, and later decisions make
	// it up) but never scales in: removing capacity on an understated load
	// would drop requests. The triggers' timing state advances as usual.
	ArrivalRateIsLowerBound bool
	// Types are the GPU types the service may run on; Action.Delta is
	// aligned with it.
	Types []TypeState
}

// Validate reports every value of o that the autoscaler cannot use.
func (o Observation) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("observation: "+format, args...))
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	if o.Now.IsZero() {
		bad("Now is zero")
	}
	if !finite(o.ArrivalRate) || o.ArrivalRate < 0 {
		bad("ArrivalRate must be a finite number >= 0 (requests/s), got %v", o.ArrivalRate)
	}
	validateTypes(o.Types, bad)
	return errors.Join(errs...)
}

// validateTypes reports, through bad, every value of types that the
// autoscaler and the solvers cannot use.
func validateTypes(types []TypeState, bad func(format string, args ...any)) {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	seen := map[string]bool{}
	for i, t := range types {
		// name is built only for an error: this runs in every decision.
		name := func() string { return fmt.Sprintf("Types[%d] (%s)", i, t.GPUType) }
		switch {
		case t.GPUType == "":
			bad("%s: GPUType is empty", name())
		case seen[t.GPUType]:
			bad("%s: GPUType %q appears twice", name(), t.GPUType)
		}
		seen[t.GPUType] = true
		if t.Running < 0 || t.Running > ilp.MaxInstances {
			bad("%s: Running must be in [0, %d], got %d", name(), ilp.MaxInstances, t.Running)
		}
		if t.Ready < 0 || t.Ready > ilp.MaxInstances {
			bad("%s: Ready must be in [0, %d], got %d", name(), ilp.MaxInstances, t.Ready)
		}
		if t.Movable < 0 || t.Movable > t.Running {
			bad("%s: Movable must be in [0, Running %d], got %d", name(), t.Running, t.Movable)
		}
		if t.MaxAdditional < 0 || t.MaxAdditional > ilp.MaxInstances {
			bad("%s: MaxAdditional must be in [0, %d], got %d", name(), ilp.MaxInstances, t.MaxAdditional)
		}
		if !finite(t.ThroughputRPS) || t.ThroughputRPS <= 0 {
			bad("%s: ThroughputRPS must be a finite number > 0 (requests/s), got %v", name(), t.ThroughputRPS)
		}
		if !finite(t.LatencyMs) || t.LatencyMs < 0 {
			bad("%s: LatencyMs must be a finite number >= 0 (ms), got %v", name(), t.LatencyMs)
		}
		if !finite(t.PriceUSDPerHour) || t.PriceUSDPerHour < 0 {
			bad("%s: PriceUSDPerHour must be a finite number >= 0 (USD/h), got %v", name(), t.PriceUSDPerHour)
		}
		if !finite(t.LaunchSeconds) || t.LaunchSeconds < 0 {
			bad("%s: LaunchSeconds must be a finite number >= 0 (s), got %v", name(), t.LaunchSeconds)
		}
		if t.BatchSize < 0 || t.BatchSize > latency.MaxBatchSize {
			bad("%s: BatchSize must be in [0, %d] (0: unknown, counts as 1), got %d", name(), latency.MaxBatchSize, t.BatchSize)
		}
		if !finite(t.LatencyInflation) || (t.LatencyInflation != 0 && t.LatencyInflation < 1) {
			bad("%s: LatencyInflation must be 0 (none) or a finite factor >= 1, got %v", name(), t.LatencyInflation)
		}
		if !finite(t.MaxBatchDelayMs) || t.MaxBatchDelayMs < 0 {
			bad("%s: MaxBatchDelayMs must be a finite number >= 0 (ms; 0: no timeout), got %v", name(), t.MaxBatchDelayMs)
		}
	}
}

// Capacity is the throughput of all instances after the action x, in
// requests/s: sum_i T_i (N_i + X_i), the left side of constraint (1) of HetSev
// 4.1 (ilp.Capacity). A nil x gives the capacity of the running instances.
// x[i] pairs with types[i]; missing entries count as 0.
func Capacity(types []TypeState, x []int) float64 {
	var sum float64
	for i, t := range types {
		xi := 0
		if i < len(x) {
			xi = x[i]
		}
		sum += t.ilpType().Capacity(xi)
	}
	return sum
}

// Saturation is the throughput saturation of the running instances, W / sum_i
// T_i N_i, for an arrival rate w in requests/s. It is 0 when w <= 0 and +Inf
// when w > 0 and nothing runs.
func Saturation(w float64, types []TypeState) float64 {
	if !(w > 0) {
		return 0
	}
	c := Capacity(types, nil)
	if c <= 0 {
		return math.Inf(1)
	}
	return w / c
}

// saturationAt is W / capacity for a given capacity in requests/s.
func saturationAt(w, capacity float64) float64 {
	if !(w > 0) {
		return 0
	}
	if capacity <= 0 {
		return math.Inf(1)
	}
	return w / capacity
}

func totalRunning(types []TypeState) int {
	n := 0
	for _, t := range types {
		n += t.Running
	}
	return n
}

// ilpType is t's coefficients in the ILP: N_i, T_i, C_i and O_i.
func (t TypeState) ilpType() ilp.Type {
	return ilp.Type{Name: t.GPUType, Running: t.Running, ThroughputRPS: t.ThroughputRPS,
		PriceUSDPerHour: t.PriceUSDPerHour, LaunchSeconds: t.LaunchSeconds}
}

// ilpTypes are the coefficients of types in the ILP.
func ilpTypes(types []TypeState) []ilp.Type {
	out := make([]ilp.Type, len(types))
	for i, t := range types {
		out[i] = t.ilpType()
	}
	return out
}
