package heterogeneity

import (
	"strings"
	"time"
)

// Autoscaler decides scaling actions for one service: its triggers (HetSev
// 4.1) decide when to scale out or in, and the Solver that Policy.Solver
// names decides by how much (the heuristic of HetSev 4.1 or the exact
// solution of its ILP). It keeps the timing state of the triggers between
// calls.
// It is not safe for concurrent use: use one per service, from one goroutine.
type Autoscaler struct {
	Policy Policy

	above        bool            // saturation was above the threshold at the last observation
	aboveSince   time.Time       // first observation of the current run above the threshold
	lastScaleOut time.Time       // zero: never
	lastScaleIn  time.Time       // zero: never
	rates        rates           // the arrival rates observed (burst.go)
	seasonal     seasonalHistory // the highest arrival rate per minute (seasonal.go)
	// replacing is the replacement in flight (replace.go), nil when none;
	// lastReplacement is when the latest one ended (zero: never).
	replacing       *Replacement
	lastReplacement time.Time
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
	// Replacement is the replacement in flight (replace.go), nil when
	// none; LastReplacement is when the latest one ended, from which
	// Policy.ReplacementInterval runs.
	Replacement     *Replacement
	LastReplacement time.Time
}

// State returns the timing state.
func (a *Autoscaler) State() State {
	st := State{AboveThresholdSince: a.aboveSince, LastScaleOut: a.lastScaleOut, LastScaleIn: a.lastScaleIn, LastReplacement: a.lastReplacement}
	if a.replacing != nil {
		rp := *a.replacing
		st.Replacement = &rp
	}
	return st
}

// SetState restores a timing state returned by State.
func (a *Autoscaler) SetState(s State) {
	a.above = !s.AboveThresholdSince.IsZero()
	a.aboveSince = s.AboveThresholdSince
	a.lastScaleOut = s.LastScaleOut
	a.lastScaleIn = s.LastScaleIn
	a.lastReplacement = s.LastReplacement
	a.replacing = nil
	if s.Replacement != nil {
		rp := *s.Replacement
		a.replacing = &rp
	}
}

// Decide returns the scaling action for obs and records it: Propose, then
// Commit. It suits callers whose actions always take effect (a
// simulation); a controller whose write of the replicas may fail calls
// Propose and, once the write succeeded, Commit.
func (a *Autoscaler) Decide(obs Observation) Action {
	act := a.Propose(obs)
	a.Commit(act)
	return act
}

// Commit records that act, returned by Propose, took effect: a scale-out
// sets the time of the last scale-out (the start of the scale-in
// cool-down) and restarts the timer of the saturation above the threshold,
// a scale-in sets the time of the last scale-in. A step of a replacement
// (Action.ReplacementPhase) records the replacement in flight, or its end,
// from which Policy.ReplacementInterval runs; it starts no cool-down. Other
// actions record nothing. An action that did not take effect (its write failed) is not
// committed, so the next decision is not held by a cool-down it never
// started.
func (a *Autoscaler) Commit(act Action) {
	if a == nil {
		return
	}
	switch act.Kind {
	case ActionScaleOut:
		a.lastScaleOut = act.at
		// Launching instances raise capacity only later: make the next
		// scale-out wait a full period again.
		a.above, a.aboveSince = false, time.Time{}
	case ActionScaleIn:
		a.lastScaleIn = act.at
	}
	switch act.ReplacementPhase {
	case ReplacementStarted, ReplacementProgressed:
		rp := *act.Replacement
		a.replacing = &rp
	case ReplacementCompleted, ReplacementTimedOut, ReplacementAbandoned:
		a.replacing, a.lastReplacement = nil, act.at
	}
}

// Propose returns the scaling action for obs without recording it (see
// Commit); it updates the timer of the saturation above the threshold and
// the memory of arrival rates, which follow the observations whatever is
// done with the action.
//
// Scale out (HetSev 4.1, "scaling-out algorithm") when the saturation s_f =
// W_f / sum T_i N_i has stayed above Policy.SaturationThreshold for at least
// Policy.ScaleOutPeriod, or at once when fewer than Policy.MinReplicas run or
// requests arrive and nothing runs. W_f is the launch-time forecast of the
// arrival rate (burst.go, rule 1): W plus its rise per second since the
// previous observation times the launch time O_i of the eligible types, W
// itself when W did not rise. The eligible types are those that pass the
// SLO check (Policy.MeetsSLO: L_i <= RT_max by default) and have
// MaxAdditional > 0. The amount covers the deficit W_f/threshold - sum T_i
// N_i (and the shortfall to MinReplicas), with the total after a scale-out
// capped at Policy.MaxReplicas:
//
//   - SolverHeuristic: with the eligible types that minimise the objective: a
//     single type that covers it if any, else greedily the cheapest per
//     request/s up to its cap, then the next (ilp.SolveGreedy on
//     DecisionProblem with ilp.ScaleOutOnly);
//   - SolverExact: with the optimum of the ILP restricted to X_i >= 0
//     (DecisionProblem with ilp.ScaleOutOnly, solved by
//     ilp.SolveExactResult). When the free resources or MaxReplicas cannot
//     cover the deficit, the largest reachable capacity (and replica count)
//     is the target instead and the action is reported as partial, as the
//     heuristic's is.
//
// Otherwise scale in (HetSev 4.1, "scaling-in algorithm") at most once per
// Policy.ScaleInInterval and not within Policy.ScaleInCoolDown of the last
// scale-out, leaving at least MinReplicas, on the arrival rate W_f:
//
//   - SolverHeuristic: remove one instance of the most expensive type (ties:
//     the lower throughput) whose removal keeps W_f / (capacity - T_i) <=
//     threshold - ScaleInHysteresis;
//   - SolverExact: remove the set of running instances that saves the most
//     while the rest keeps W_f / capacity <= threshold - ScaleInHysteresis:
//     the optimum of the ILP restricted to X_i <= 0 (DecisionProblem with
//     ilp.ScaleInOnly), possibly more than one instance and of several types.
//
// While the highest W of the last ScaleInStabilization (0: ScaleInCoolDown)
// is above W_f, the removal is stabilized (burst.go, rule 2): of it, only
// what the solver's removal at that peak also takes, per type; when that
// is nothing, one instance of its most expensive type. The heuristic's
// single removal is kept as it is. Policy.DisableForecast makes W_f the
// measured W; Policy.DisableStabilizedScaleIn skips rule 2.
//
// With Policy.SeasonalForecast, W_f is raised to the seasonal forecast
// (seasonal.go) when the service's own per-minute history shows a period
// and the rate at this phase of its last two periods was higher: the
// trigger, the amount and the scale-in then use it; the Reason says the
// period and the rate expected, or why there is no seasonal forecast.
//
// Neither solver switches the type of a running instance: an action only
// adds or only removes.
//
// With Policy.Replacement (replace.go), a decision that would do nothing
// (no scale-out due or waited for, no scale-in, whichever brake held it,
// on a measured W) may start a make-before-break replacement instead: r
// instances of one column replaced by k of another, the swap that lowers
// the objective most, at most one in flight and one per
// Policy.ReplacementInterval. The brakes that hold a scale-in hold the
// capacity a replacement may shed, not the replacement: within the
// cool-down or interval the swap keeps at least the capacity before it;
// otherwise it keeps the scale-in bar at the highest W of the
// stabilization window (replacementFloor). It launches the k new
// instances (ActionReplace, Delta > 0); later decisions remove the old
// ones as the new become ready (TypeState.Ready), the ready capacity
// never below that floor nor W_f / SaturationThreshold, and give up after
// Policy.ReplacementTimeout, removing the new instances not ready. A
// scale-out due goes first; a scale-in waits for the replacement's end.
// With Policy.Consolidation, such a decision that starts no swap may
// start a move instead: one instance added to a column with an instance
// alone on its GPU that fits a GPU in use (TypeState.Movable), the old
// one removed once the new one is ready, at W_f / threshold (move).
//
// When obs.ArrivalRateIsLowerBound is set (W was measured on part of the
// serving instances), Decide scales out as above on that lower bound (with
// no forecast: a rise of a lower bound may be coverage, not load) but never
// scales in: the scale-in branch returns ActionNone saying so, with the
// timing state of the scale-in untouched.
//
// Propose never panics on input: an invalid policy or observation yields
// ActionNone with the problem in Reason and leaves the state untouched.
func (a *Autoscaler) Propose(obs Observation) Action {
	act := Action{Kind: ActionNone, Delta: make([]int, len(obs.Types)), at: obs.Now}
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
	solver, _ := a.Policy.solver() // known: the policy is valid
	act.Saturation = Saturation(obs.ArrivalRate, obs.Types)
	a.rates.observe(obs, max(a.Policy.stabilizationWindow(), a.Policy.forecastSpan()+a.Policy.DecisionInterval))
	a.seasonal.observe(obs.Now, obs.ArrivalRate)
	f := a.rates.forecastOf(obs, a.Policy)
	// The seasonal forecast (seasonal.go) only ever raises W_f.
	season := a.seasonal.seasonalForecastOf(obs, a.Policy)
	f, raised := season.raise(f)
	trigger, wait := a.scaleOutTrigger(obs, f)
	switch {
	case wait == "" && trigger != "":
		act = a.scaleOut(solver, obs, f, act, trigger)
	case a.replacing != nil:
		act = a.continueReplacement(obs, f, act, wait)
	case wait != "":
		act.Reason = wait
	default:
		act = a.startReplacement(obs, f, a.scaleIn(solver, obs, f, act))
	}
	if act.Replacement == nil && a.replacing != nil {
		// A scale-out during a replacement: it stays in flight.
		rp := *a.replacing
		act.Replacement = &rp
	}
	return season.annotate(act, raised)
}

// oneLine joins the lines of a joined error with "; ".
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}
