package heterogeneity

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Policy holds the tunable knobs of the autoscaler for one service.
type Policy struct {
	// SaturationThreshold is the saturation W / sum T_i N_i above which the
	// service scales out, in (0, 1]. HetSev 4.1 uses 0.8 "based on
	// experience, leaving room to absorb sudden load spikes".
	SaturationThreshold float64
	// Lambda weighs launch latency against hardware cost in the objective,
	// per second, >= 0. The default 0.01 is an ESTIMATE: HetSev 4.1 calls it
	// tunable and gives no value.
	Lambda float64
	// ScaleOutPeriod is how long the saturation must stay above the threshold
	// before scaling out ("for a period of time", HetSev 4.1). 0 acts on the
	// first observation above the threshold.
	ScaleOutPeriod time.Duration
	// ScaleInInterval is the least time between two scale-ins ("at regular
	// intervals", HetSev 4.1).
	ScaleInInterval time.Duration
	// ScaleInCoolDown is the least time from the last scale-out to the next
	// scale-in ("a predefined cool-down period", HetSev 4.1).
	ScaleInCoolDown time.Duration
	// DecisionInterval is how often the caller decides (hetsev-scaler:
	// spec.scaling.intervalSeconds). The launch-time forecast (burst.go)
	// measures the rise of W since the latest observation at least half of
	// it old, so that an extra decision soon after another (a spec edit, a
	// retry) does not extrapolate a rise measured over seconds; 0 measures
	// it since the previous observation. It decides nothing else.
	DecisionInterval time.Duration
	// ScaleInHysteresis lowers the bar for scale-in: an instance is removed
	// only if the load then fits under SaturationThreshold minus this
	// margin. 0 is the paper's rule; a margin stops a scale-in that lands
	// just under the threshold from triggering the next scale-out.
	ScaleInHysteresis float64
	// ScaleInStabilization is the window of the stabilized scale-in
	// (burst.go, rule 2): a scale-in removes only what its removal at the
	// highest W of the last ScaleInStabilization also takes, else one
	// instance. 0 means ScaleInCoolDown (default 5 min, the Kubernetes
	// HPA's behavior.scaleDown.stabilizationWindowSeconds), so that the
	// window and the cool-down can be measured apart.
	ScaleInStabilization time.Duration
	// DisableStabilizedScaleIn turns rule 2 of burst.go off: a scale-in
	// removes what the solver computes on the current rate alone, as in
	// HetSev 4.1. The zero value (false) keeps the rule.
	DisableStabilizedScaleIn bool
	// DisableLightOverflow turns the light overflow off (stage_plan.go,
	// lightOverflow): a scale-out that whole GPUs cannot cover stays
	// partial. The zero value (false) keeps the rule.
	DisableLightOverflow bool
	// DisableForecast turns rule 1 of burst.go (the launch-time forecast)
	// off: the scale-out trigger and amount and the scale-in use the
	// measured W, as in HetSev 4.1. The zero value (false) keeps the
	// forecast.
	DisableForecast bool
	// ForecastSpan is the least time the regression of the launch-time
	// forecast (burst.go, rule 1) spans, and with DecisionInterval the
	// window of rates it fits; 0 means DefaultForecastSpan (15 s). A
	// longer span does not take a step in a trace for a trend; a shorter
	// one reacts sooner to a burst.
	ForecastSpan time.Duration
	// SeasonalForecast turns the seasonal forecast (seasonal.go) on: when
	// the service's own arrival rate, kept per minute for the last 3 h,
	// recurs with a period of 5 to 60 whole minutes over at least two
	// periods, the scale-out trigger and amount (and the scale-in) use
	// max(W_f, the lower of the highest rates at this phase one and two
	// periods ago, over the launch time plus DecisionInterval), so that
	// instances are ready when a scheduled burst starts. It never lowers
	// W_f. The zero value (false) leaves W_f to burst.go's rules.
	SeasonalForecast bool
	// MinReplicas is the least number of instances over all types, >= 1: a
	// service never scales to zero.
	MinReplicas int
	// MaxReplicas caps the number of instances over all types after a
	// scale-out; 0 means no cap.
	MaxReplicas int
	// RTMaxMs is the response-time threshold of the service's SLO, in ms. A
	// GPU type is eligible for new instances only if its profiled batch
	// latency L_i <= RTMaxMs (constraint 4 of HetSev 4.1). Set it per
	// service; the default 400 ms is HetSev's RT_max for ResNet-50 (section 6).
	// With SLOCheck "model" the modelled SL_min percentile is compared
	// instead of L_i.
	RTMaxMs float64
	// Solver names the Solver that computes the amount of a scaling action
	// (see LookupSolver): SolverHeuristic (the zero value "" means the same)
	// is the greedy instance selection of HetSev 4.1; SolverExact solves the
	// ILP of HetSev 4.1 exactly with ilp.SolveExact (see Autoscaler.Decide).
	// The triggers (threshold, period, cool-down, interval) are the same for
	// both.
	Solver string
	// SLOCheck picks the SLO check of constraint (4) of HetSev 4.1, which
	// decides the GPU types that may receive new instances: SLOCheckPaper
	// (the zero value "" means the same) admits a type when its profiled
	// batch latency L_i <= RTMaxMs, as the paper does; SLOCheckModel admits
	// it when the ServiceLevel percentile of the response time under the
	// latency model (LatencyModelOf, package latency: a dynamic batcher's
	// queueing and co-location inflation included) at the per-instance load
	// of the saturation threshold is <= RTMaxMs (see Policy.SLOLatencyMs).
	SLOCheck string
	// ServiceLevel is SL_min, the share of requests that must finish within
	// RTMaxMs, in (0, 1); used by SLOCheckModel. 0 means
	// DefaultServiceLevel (0.98, HetSev section 6).
	ServiceLevel float64
	// Replacement turns make-before-break replacement on (replace.go): a
	// decision that would do nothing may swap instances of one column for
	// instances of another when that lowers the objective, launching the
	// new ones first and removing the old ones only as new ones are ready
	// and routed; it sheds capacity only as far as a scale-in could (none
	// within the cool-down). The zero value (false) never changes a
	// running instance's column, as in HetSev 4.1.
	Replacement bool
	// Consolidation turns consolidation on (replace.go): a decision that
	// would do nothing and starts no replacement may move one instance
	// alone on its GPU (TypeState.Movable) onto a GPU that hosts other
	// instances, make-before-break: a replacement of one instance of a
	// column by one of the same column (From equals To), whose new
	// instance the scheduler places on a GPU in use, and whose old one
	// goes once the new one is ready and routed. Its GPU is then empty and
	// no longer billed. It shares ReplacementInterval and
	// ReplacementTimeout with the replacement; one of either is in flight
	// at a time.
	Consolidation bool
	// ReplacementInterval is the least time from the end of one
	// replacement to the start of the next; 0 means
	// DefaultReplacementInterval. At most one is in flight.
	ReplacementInterval time.Duration
	// ReplacementTimeout is how long a replacement waits for its new
	// instances to be ready before it removes those not ready and keeps
	// the old ones; 0 means DefaultReplacementTimeout.
	ReplacementTimeout time.Duration
}

// Values of Policy.Solver.
const (
	// SolverHeuristic is the greedy instance selection of HetSev 4.1.
	SolverHeuristic = "heuristic"
	// SolverExact solves the ILP of HetSev 4.1 exactly (ilp.SolveExact).
	SolverExact = "exact"
)

// Values of Policy.SLOCheck.
const (
	// SLOCheckPaper admits a GPU type when L_i <= RT_max (HetSev 4.1,
	// constraint 4).
	SLOCheckPaper = "paper"
	// SLOCheckModel admits a GPU type when the latency model's SL_min
	// percentile at the threshold load is <= RT_max.
	SLOCheckModel = "model"
)

// DefaultServiceLevel is SL_min = 98 %, the service level of HetSev's
// evaluation (section 6: "We set [SL_min] to 98% for all models").
const DefaultServiceLevel = 0.98

// forecastSpan is the ForecastSpan in effect (0: DefaultForecastSpan).
func (p Policy) forecastSpan() time.Duration {
	if p.ForecastSpan == 0 {
		return DefaultForecastSpan
	}
	return p.ForecastSpan
}

// stabilizationWindow is the window of the stabilized scale-in in effect:
// ScaleInStabilization, or ScaleInCoolDown when it is 0.
func (p Policy) stabilizationWindow() time.Duration {
	if p.ScaleInStabilization == 0 {
		return p.ScaleInCoolDown
	}
	return p.ScaleInStabilization
}

// sloCheck returns the SLO check in effect ("" is SLOCheckPaper).
func (p Policy) sloCheck() string {
	if p.SLOCheck == "" {
		return SLOCheckPaper
	}
	return p.SLOCheck
}

// serviceLevel returns SL_min in effect (0 is DefaultServiceLevel).
func (p Policy) serviceLevel() float64 {
	if p.ServiceLevel == 0 {
		return DefaultServiceLevel
	}
	return p.ServiceLevel
}

// SLOLatencyMs is the latency, in ms, that constraint (4) of HetSev 4.1
// compares with RTMaxMs for new instances of t:
//
//   - SLOCheckPaper: t.LatencyMs, the profiled batch latency L_i;
//   - SLOCheckModel: LatencyModelOf(t).Percentile(SL_min, lambda_i) with
//     lambda_i = SaturationThreshold * T_i requests/s, the load of one
//     instance when the service runs at the saturation threshold and traffic
//     is split in proportion to capacity (every instance then runs at the
//     same saturation). Both solvers provision for that saturation
//     (constraint 1 with the threshold's headroom), so it is the highest
//     steady load a new instance is planned to carry. Below it the queueing
//     term shrinks and the formation term grows, bounded by
//     t.MaxBatchDelayMs when the server has a batching timeout.
//
// It returns +Inf for an unusable policy or type (the type is then not
// eligible).
func (p Policy) SLOLatencyMs(t TypeState) float64 {
	switch p.sloCheck() {
	case SLOCheckPaper:
		return t.LatencyMs
	case SLOCheckModel:
		return LatencyModelOf(t).Percentile(p.serviceLevel(), p.SaturationThreshold*t.ThroughputRPS)
	default:
		return math.Inf(1)
	}
}

// MeetsSLO reports whether GPU type t passes the SLO check of constraint (4)
// of HetSev 4.1 under p: SLOLatencyMs(t) <= RTMaxMs.
func (p Policy) MeetsSLO(t TypeState) bool {
	return p.SLOLatencyMs(t) <= p.RTMaxMs
}

// DefaultPolicy returns the defaults: threshold 0.8 (HetSev 4.1), lambda
// 0.01/s (ESTIMATE), scale-out period 30 s, scale-in interval 60 s and
// cool-down 5 min (ESTIMATES, the paper gives no values; 5 min is the default
// scale-down stabilization window of the Kubernetes HPA, which HetSev's
// evaluation mirrors), MinReplicas 1, no MaxReplicas, RT_max 400 ms (HetSev 6,
// ResNet-50), the heuristic solver, the paper's SLO check (L_i <= RT_max) and
// SL_min 98 % (HetSev 6) for the model check.
func DefaultPolicy() Policy {
	return Policy{
		SaturationThreshold: 0.8,
		Lambda:              0.01,
		ScaleOutPeriod:      30 * time.Second,
		ScaleInInterval:     60 * time.Second,
		ScaleInCoolDown:     5 * time.Minute,
		MinReplicas:         1,
		MaxReplicas:         0,
		RTMaxMs:             400,
		Solver:              SolverHeuristic,
		SLOCheck:            SLOCheckPaper,
		ServiceLevel:        DefaultServiceLevel,
	}
}

// Validate reports every knob out of range.
func (p Policy) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("policy: "+format, args...))
	}
	if !(p.SaturationThreshold > 0 && p.SaturationThreshold <= 1) {
		bad("SaturationThreshold must be in (0, 1], got %v", p.SaturationThreshold)
	}
	if !(p.Lambda >= 0) || math.IsInf(p.Lambda, 0) {
		bad("Lambda must be a finite number >= 0 (per second), got %v", p.Lambda)
	}
	if !(p.ScaleInHysteresis >= 0 && p.ScaleInHysteresis < p.SaturationThreshold) {
		bad("ScaleInHysteresis must be in [0, SaturationThreshold), got %v", p.ScaleInHysteresis)
	}
	if p.ScaleOutPeriod < 0 {
		bad("ScaleOutPeriod must be >= 0, got %v", p.ScaleOutPeriod)
	}
	if p.DecisionInterval < 0 {
		bad("DecisionInterval must be >= 0, got %v", p.DecisionInterval)
	}
	if p.ScaleInInterval < 0 {
		bad("ScaleInInterval must be >= 0, got %v", p.ScaleInInterval)
	}
	if p.ScaleInCoolDown < 0 {
		bad("ScaleInCoolDown must be >= 0, got %v", p.ScaleInCoolDown)
	}
	if p.ForecastSpan < 0 {
		bad("ForecastSpan must be >= 0 (0: %v), got %v", DefaultForecastSpan, p.ForecastSpan)
	}
	if p.ScaleInStabilization < 0 {
		bad("ScaleInStabilization must be >= 0 (0: ScaleInCoolDown), got %v", p.ScaleInStabilization)
	}
	if p.ReplacementInterval < 0 {
		bad("ReplacementInterval must be >= 0 (0: %v), got %v", DefaultReplacementInterval, p.ReplacementInterval)
	}
	if p.ReplacementTimeout < 0 {
		bad("ReplacementTimeout must be >= 0 (0: %v), got %v", DefaultReplacementTimeout, p.ReplacementTimeout)
	}
	if p.MinReplicas < 1 {
		bad("MinReplicas must be >= 1 (never scale to zero), got %d", p.MinReplicas)
	}
	if p.MaxReplicas < 0 {
		bad("MaxReplicas must be >= 0 (0: no cap), got %d", p.MaxReplicas)
	} else if p.MaxReplicas > 0 && p.MaxReplicas < p.MinReplicas {
		bad("MaxReplicas %d is below MinReplicas %d", p.MaxReplicas, p.MinReplicas)
	}
	if !(p.RTMaxMs > 0) || math.IsInf(p.RTMaxMs, 0) {
		bad("RTMaxMs must be a finite number > 0 (ms), got %v", p.RTMaxMs)
	}
	if _, ok := p.solver(); !ok {
		bad("Solver must be %s, got %q", quotedOr(SolverNames()), p.Solver)
	}
	switch p.SLOCheck {
	case "", SLOCheckPaper, SLOCheckModel:
	default:
		bad("SLOCheck must be %q or %q, got %q", SLOCheckPaper, SLOCheckModel, p.SLOCheck)
	}
	if p.ServiceLevel != 0 && !(p.ServiceLevel > 0 && p.ServiceLevel < 1) {
		bad("ServiceLevel must be in (0, 1) (0: %v), got %v", DefaultServiceLevel, p.ServiceLevel)
	}
	return errors.Join(errs...)
}
