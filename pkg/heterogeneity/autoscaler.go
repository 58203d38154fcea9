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

// Propose returns the scaling action for obs without recording it (see
// Commit). A decision runs in stages, each a file with its rules:
//
//  1. observe (stage_observe.go): refuse an invalid policy or observation
//     (ActionNone with the problem in Reason; Propose never panics on
//     input) and remember the arrival rate;
//  2. forecast (stage_forecast.go): W_f, the rate to plan for: the
//     launch-time forecast, raised by the seasonal one;
//  3. guard (stage_guard.go): which move the brakes allow: a scale-out
//     due after its period, a replacement in flight, a scale-in no brake
//     holds, or nothing, and why;
//  4. plan (stage_plan.go): how many instances of which column that move
//     takes, by the ILP (exact or heuristic), stabilized, with light
//     flavors while quiet; or a replacement or consolidation instead of
//     nothing;
//  5. commit (stage_commit.go, Commit): the timing state the brakes read
//     next time, once the action took effect.
//
// The observation's memory and the timer of the saturation above the
// threshold follow the observations whatever is done with the action.
func (a *Autoscaler) Propose(obs Observation) Action {
	act := Action{Kind: ActionNone, Delta: make([]int, len(obs.Types)), at: obs.Now}
	solver, refused := a.refuse(obs)
	if refused != "" {
		act.Reason = refused
		return act
	}
	act.Saturation = a.observe(obs)
	f, season, raised := a.forecast(obs)
	m := a.guard(obs, f, act.Saturation)
	act = a.plan(solver, obs, f, act, m)
	return season.annotate(act, raised)
}

// oneLine joins the lines of a joined error with "; ".
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}
