package heterogeneity

import "time"

// Stage 5 of a decision, commit: once the action took effect, the timing
// state its brakes read next time (stage 3): the scale-in cool-down runs
// from a scale-out, the scale-in interval from a scale-in, the
// replacement interval from a replacement's end. A controller commits
// only what it wrote, so a failed write starts no cool-down.

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
