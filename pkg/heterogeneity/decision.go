package heterogeneity

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/hetsev/hetsev/pkg/heterogeneity/ilp"
)

// Autoscaler decides scaling actions for one service with the heuristic of
// HetSev 4.1 or, with Policy.Solver = SolverExact, with the exact solution of
// its ILP (ilp.SolveExact). It keeps the timing state of the triggers between
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
//     request/s up to its cap, then the next (ilp.SolveGreedy on
//     DecisionProblem with ilp.ScaleOutOnly);
//   - SolverExact: with the optimum of the ILP restricted to X_i >= 0
//     (DecisionProblem with ilp.ScaleOutOnly, solved by
//     ilp.SolveExactResult). When
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
//     ilp.ScaleInOnly), possibly more than one instance and of several types.
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

	var meetsRT []int
	eligible := 0
	for i, t := range types {
		if p.MeetsSLO(t) {
			meetsRT = append(meetsRT, i)
			if t.MaxAdditional > 0 {
				eligible++
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
	case eligible == 0:
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
	pr, err := buildProblem(obs, p, ilp.ScaleOutOnly)
	if err != nil { // unreachable: the direction is known
		act.Reason = trigger + ": " + oneLine(err) + "; solver heuristic"
		return act
	}
	g := ilp.SolveGreedy(pr)
	x, leftRPS, leftCount := g.X, g.UncoveredRPS, g.ShortReplicas
	if isZero(x) {
		// An eligible type has room and MaxReplicas leaves a budget, so this
		// is reached only when no instance is needed: the saturation is above
		// the threshold by less than the rounding tolerance.
		act.Reason = trigger + ": nothing to add"
		return act
	}
	act.Kind = ActionScaleOut
	act.Delta = x
	act.Objective = objective(types, x, p.Lambda)
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
		if !(after <= (p.SaturationThreshold-p.ScaleInHysteresis)*(1+ilp.Tolerance)) {
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
	act.Objective = objective(types, act.Delta, p.Lambda)
	act.Reason = fmt.Sprintf("%s, %.2f without one %s: %s (objective %.2f USD/h); solver heuristic",
		within, bestSat, types[best].GPUType, formatDelta(types, act.Delta), act.Objective)
	a.lastScaleIn = obs.Now
	return act
}

// oneLine joins the lines of a joined error with "; ".
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}
