package heterogeneity

import (
	"errors"
	"fmt"
	"github.com/hetsev/hetsev/pkg/catalog"
	"github.com/hetsev/hetsev/pkg/heterogeneity/latency"
	"math"
	"strings"
	"time"
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

	// The fields below feed the latency model of the SLO check
	// Policy.SLOCheck = SLOCheckModel; the paper's check ignores them.

	// BatchSize is b, the requests per batch the server forms, normally the
	// profile's batch size (Profile.BatchSize); 0 counts as 1 (no batching).
	BatchSize int
	// LatencyInflation is the co-location latency factor (>= 1) expected on
	// the GPUs new instances of this type would share, e.g.
	// interference.Model.Factor for the current neighbours (HetSev 3.2); 0
	// means 1 (no inflation).
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
		if t.Running < 0 || t.Running > maxInstancesPerStep {
			bad("%s: Running must be in [0, %d], got %d", name(), maxInstancesPerStep, t.Running)
		}
		if t.MaxAdditional < 0 || t.MaxAdditional > maxInstancesPerStep {
			bad("%s: MaxAdditional must be in [0, %d], got %d", name(), maxInstancesPerStep, t.MaxAdditional)
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

// ActionKind says what a decision does.
type ActionKind string

// Kinds of Action.
const (
	// ActionNone leaves the service as it is.
	ActionNone ActionKind = "None"
	// ActionScaleOut adds instances: every Delta entry is >= 0.
	ActionScaleOut ActionKind = "ScaleOut"
	// ActionScaleIn removes instances: every Delta entry is <= 0. The
	// heuristic removes exactly one instance (one entry is -1); the exact
	// solver (Policy.Solver = SolverExact) removes one or more.
	ActionScaleIn ActionKind = "ScaleIn"
	// ActionNoFeasibleType means a scale-out is needed but no GPU type meets
	// the latency SLO and fits the free resources; Delta is all zero.
	ActionNoFeasibleType ActionKind = "NoFeasibleType"
)

// Action is the outcome of one decision.
type Action struct {
	Kind ActionKind
	// Delta holds X_i, instances to add (> 0) or remove (< 0) per type,
	// aligned with Observation.Types. Positive and negative entries never
	// mix: a running instance never changes type.
	Delta []int
	// Saturation is W / sum T_i N_i before the action (+Inf when W > 0 and
	// nothing runs).
	Saturation float64
	// Objective is the HetSev 4.1 objective of Delta, in USD/h (negative
	// for a scale-in: the cost saved).
	Objective float64
	// Reason explains the decision for humans and names the solver that
	// computed the amount, e.g. "saturation 2.75 > 0.80 for 30s: +3 T4
	// (objective 1.89 USD/h); solver heuristic".
	Reason string
}

// Autoscaler decides scaling actions for one service with the heuristic of
// HetSev 4.1 or, with Policy.Solver = SolverExact, with the exact solution of
// its ILP (SolveExact). It keeps the timing state of the triggers between
// calls.
// It is not safe for concurrent use: use one per service, from one goroutine.
type Autoscaler struct {
	Policy Policy

	above        bool      // saturation was above the threshold at the last observation
	aboveSince   time.Time // first observation of the current run above the threshold
	lastScaleOut time.Time // zero: never
	lastScaleIn  time.Time // zero: never
}

// NewAutoscaler returns an Autoscaler with policy p and no history. Decide
// reports an invalid policy (see Policy.Validate) in its Reason and does
// nothing.
func NewAutoscaler(p Policy) *Autoscaler {
	return &Autoscaler{Policy: p}
}

// State is the timing state of an Autoscaler, for callers that persist it
// (e.g. in a status field) across restarts. Zero times mean never.
type State struct {
	// AboveThresholdSince is when the saturation went above the threshold,
	// zero when it is not above now.
	AboveThresholdSince time.Time
	LastScaleOut        time.Time
	LastScaleIn         time.Time
}

// State returns the timing state.
func (a *Autoscaler) State() State {
	return State{AboveThresholdSince: a.aboveSince, LastScaleOut: a.lastScaleOut, LastScaleIn: a.lastScaleIn}
}

// SetState restores a timing state returned by State.
func (a *Autoscaler) SetState(s State) {
	a.above = !s.AboveThresholdSince.IsZero()
	a.aboveSince = s.AboveThresholdSince
	a.lastScaleOut = s.LastScaleOut
	a.lastScaleIn = s.LastScaleIn
}

// Decide returns the scaling action for obs and updates the timing state.
//
// Scale out (HetSev 4.1, "scaling-out algorithm") when the saturation s = W /
// sum T_i N_i has stayed above Policy.SaturationThreshold for at least
// Policy.ScaleOutPeriod, or at once when fewer than Policy.MinReplicas run or
// requests arrive and nothing runs. The eligible types are those that pass
// the SLO check (Policy.MeetsSLO: L_i <= RT_max by default) and have
// MaxAdditional > 0. The amount covers the deficit W/threshold - sum T_i N_i
// (and the shortfall to MinReplicas), with the total after a scale-out capped
// at Policy.MaxReplicas:
//
//   - SolverHeuristic: with the eligible types that minimise the objective: a
//     single type that covers it if any, else greedily the cheapest per
//     request/s up to its cap, then the next;
//   - SolverExact: with the optimum of the ILP restricted to X_i >= 0
//     (DecisionProblem with ScaleOutOnly, solved by SolveExactResult). When
//     the free resources or MaxReplicas cannot cover the deficit, the
//     largest reachable capacity (and replica count) is the target instead
//     and the action is reported as partial, as the heuristic's is.
//
// Otherwise scale in (HetSev 4.1, "scaling-in algorithm") at most once per
// Policy.ScaleInInterval and not within Policy.ScaleInCoolDown of the last
// scale-out, leaving at least MinReplicas:
//
//   - SolverHeuristic: remove one instance of the most expensive type (ties:
//     the lower throughput) whose removal keeps W / (capacity - T_i) <=
//     threshold - ScaleInHysteresis;
//   - SolverExact: remove the set of running instances that saves the most
//     while the rest keeps W / capacity <= threshold - ScaleInHysteresis: the
//     optimum of the ILP restricted to X_i <= 0 (DecisionProblem with
//     ScaleInOnly), possibly more than one instance and of several types.
//
// Neither solver switches the type of a running instance: an action only
// adds or only removes.
//
// Decide never panics on input: an invalid policy or observation yields
// ActionNone with the problem in Reason and leaves the state untouched.
func (a *Autoscaler) Decide(obs Observation) Action {
	act := Action{Kind: ActionNone, Delta: make([]int, len(obs.Types))}
	if a == nil {
		act.Reason = "no autoscaler (nil)"
		return act
	}
	if err := a.Policy.Validate(); err != nil {
		act.Reason = "invalid " + oneLine(err)
		return act
	}
	if err := obs.Validate(); err != nil {
		act.Reason = "invalid " + oneLine(err)
		return act
	}
	p := a.Policy
	types := obs.Types
	w := obs.ArrivalRate
	s := Saturation(w, types)
	act.Saturation = s
	total := totalRunning(types)
	capNow := Capacity(types, nil)

	if s > p.SaturationThreshold {
		if !a.above {
			a.above, a.aboveSince = true, obs.Now
		}
	} else {
		a.above, a.aboveSince = false, time.Time{}
	}

	var triggers []string
	if total < p.MinReplicas {
		triggers = append(triggers, fmt.Sprintf("%d running < min replicas %d", total, p.MinReplicas))
	}
	if w > 0 && capNow <= 0 {
		triggers = append(triggers, fmt.Sprintf("no running capacity for %.4g requests/s", w))
	}
	if len(triggers) == 0 && a.above {
		held := obs.Now.Sub(a.aboveSince)
		if held < p.ScaleOutPeriod {
			act.Reason = fmt.Sprintf("saturation %.2f > %.2f for %v of %v: waiting before scaling out",
				s, p.SaturationThreshold, held, p.ScaleOutPeriod)
			return act
		}
		triggers = append(triggers, fmt.Sprintf("saturation %.2f > %.2f for %v", s, p.SaturationThreshold, held))
	}
	if len(triggers) > 0 {
		return a.scaleOut(obs, act, strings.Join(triggers, "; "), total, capNow)
	}
	return a.scaleIn(obs, act, total, capNow)
}

// scaleOut fills act with a scale-out (or NoFeasibleType, or None at
// MaxReplicas) for the given trigger.
func (a *Autoscaler) scaleOut(obs Observation, act Action, trigger string, total int, capNow float64) Action {
	p := a.Policy
	types := obs.Types
	budget := -1 // instances that may still be added; -1: no cap
	if p.MaxReplicas > 0 {
		budget = p.MaxReplicas - total
		if budget <= 0 {
			act.Reason = fmt.Sprintf("%s, but %d running >= max replicas %d", trigger, total, p.MaxReplicas)
			return act
		}
	}

	var meetsRT, eligible []int
	for i, t := range types {
		if p.MeetsSLO(t) {
			meetsRT = append(meetsRT, i)
			if t.MaxAdditional > 0 {
				eligible = append(eligible, i)
			}
		}
	}
	switch {
	case len(types) == 0:
		act.Kind = ActionNoFeasibleType
		act.Reason = trigger + ", but the observation lists no GPU types"
		return act
	case len(meetsRT) == 0:
		fastest, fastestMs := types[0], p.SLOLatencyMs(types[0])
		for _, t := range types[1:] {
			if ms := p.SLOLatencyMs(t); ms < fastestMs {
				fastest, fastestMs = t, ms
			}
		}
		act.Kind = ActionNoFeasibleType
		if p.sloCheck() == SLOCheckModel {
			act.Reason = fmt.Sprintf("%s, but no GPU type meets RT_max %g ms for %g%% of requests at saturation %.2f (latency model; fastest: %s %.4g ms)",
				trigger, p.RTMaxMs, 100*p.serviceLevel(), p.SaturationThreshold, fastest.GPUType, fastestMs)
		} else {
			act.Reason = fmt.Sprintf("%s, but no GPU type meets RT_max %g ms (fastest: %s %g ms)",
				trigger, p.RTMaxMs, fastest.GPUType, fastestMs)
		}
		return act
	case len(eligible) == 0:
		names := make([]string, len(meetsRT))
		for k, i := range meetsRT {
			names[k] = types[i].GPUType
		}
		act.Kind = ActionNoFeasibleType
		act.Reason = fmt.Sprintf("%s, but no free GPU fits another instance (%s meet RT_max %g ms, MaxAdditional 0)",
			trigger, strings.Join(names, ", "), p.RTMaxMs)
		return act
	}

	if p.solver() == SolverExact {
		return a.scaleOutExact(obs, act, trigger)
	}
	deficit := max(obs.ArrivalRate/p.SaturationThreshold-capNow, 0)
	short := max(p.MinReplicas-total, 0)
	x, leftRPS, leftCount := planScaleOut(types, eligible, deficit, short, budget, p.Lambda)
	if isZero(x) {
		// Unreachable: a trigger implies a deficit or a shortfall, and an
		// eligible type has room. Kept so that no zero-delta ScaleOut escapes.
		act.Reason = trigger + ": nothing to add"
		return act
	}
	act.Kind = ActionScaleOut
	act.Delta = x
	act.Objective = Objective(types, x, p.Lambda)
	act.Reason = fmt.Sprintf("%s: %s (objective %.2f USD/h)", trigger, formatDelta(types, x), act.Objective)
	if leftRPS > 0 || leftCount > 0 {
		why := "no free GPU fits more instances of the eligible types"
		if budget >= 0 && sum(x) >= budget {
			why = fmt.Sprintf("max replicas %d reached", p.MaxReplicas)
		}
		act.Reason += fmt.Sprintf("; partial: %.4g requests/s of the deficit uncovered, %s", leftRPS, why)
	}
	act.Reason += "; solver heuristic"
	a.lastScaleOut = obs.Now
	// Launching instances raise capacity only later: make the next scale-out
	// wait a full period again.
	a.above, a.aboveSince = false, time.Time{}
	return act
}

// scaleIn fills act with a scale-in of one instance, or None with the reason
// none is due.
func (a *Autoscaler) scaleIn(obs Observation, act Action, total int, capNow float64) Action {
	p := a.Policy
	types := obs.Types
	w := obs.ArrivalRate
	within := fmt.Sprintf("saturation %.2f within threshold %.2f", act.Saturation, p.SaturationThreshold)
	if !a.lastScaleOut.IsZero() {
		if since := obs.Now.Sub(a.lastScaleOut); since < p.ScaleInCoolDown {
			act.Reason = fmt.Sprintf("%s; scale-in cool-down: %v since last scale-out, %v required", within, since, p.ScaleInCoolDown)
			return act
		}
	}
	if !a.lastScaleIn.IsZero() {
		if since := obs.Now.Sub(a.lastScaleIn); since < p.ScaleInInterval {
			act.Reason = fmt.Sprintf("%s; scale-in interval: %v since last scale-in, %v required", within, since, p.ScaleInInterval)
			return act
		}
	}
	if total-1 < p.MinReplicas {
		act.Reason = fmt.Sprintf("%s; %d running, at min replicas %d", within, total, p.MinReplicas)
		return act
	}
	if p.solver() == SolverExact {
		return a.scaleInExact(obs, act, within, capNow)
	}
	best, bestSat := -1, 0.0
	lowestSat := math.Inf(1)
	for i, t := range types {
		if t.Running <= 0 {
			continue
		}
		after := saturationAt(w, capNow-t.ThroughputRPS)
		lowestSat = min(lowestSat, after)
		if !(after <= (p.SaturationThreshold-p.ScaleInHysteresis)*(1+tolerance)) {
			continue
		}
		if best < 0 || t.PriceUSDPerHour > types[best].PriceUSDPerHour ||
			(t.PriceUSDPerHour == types[best].PriceUSDPerHour && t.ThroughputRPS < types[best].ThroughputRPS) {
			best, bestSat = i, after
		}
	}
	if best < 0 {
		act.Reason = fmt.Sprintf("%s; without any one instance it would be %.2f > %.2f; solver heuristic", within, lowestSat, p.SaturationThreshold-p.ScaleInHysteresis)
		return act
	}
	act.Kind = ActionScaleIn
	act.Delta[best] = -1
	act.Objective = Objective(types, act.Delta, p.Lambda)
	act.Reason = fmt.Sprintf("%s, %.2f without one %s: %s (objective %.2f USD/h); solver heuristic",
		within, bestSat, types[best].GPUType, formatDelta(types, act.Delta), act.Objective)
	a.lastScaleIn = obs.Now
	return act
}

// tolerance absorbs floating-point rounding in comparisons of rates.
const tolerance = 1e-9

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

func sum(x []int) int {
	n := 0
	for _, v := range x {
		n += v
	}
	return n
}

func isZero(x []int) bool {
	for _, v := range x {
		if v != 0 {
			return false
		}
	}
	return true
}

// formatDelta writes non-zero entries as "+3 T4, -1 V100-32GB".
func formatDelta(types []TypeState, x []int) string {
	var parts []string
	for i, v := range x {
		if v != 0 && i < len(types) {
			parts = append(parts, fmt.Sprintf("%+d %s", v, types[i].GPUType))
		}
	}
	return strings.Join(parts, ", ")
}

// oneLine joins the lines of a joined error with "; ".
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}
