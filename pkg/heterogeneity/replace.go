package heterogeneity

import (
	"fmt"
	"math"
	"time"
)

// Replacement is a make-before-break replacement of instances of one
// column of the decision (a GPU type, or a flavor of one) by instances of
// another (Policy.Replacement), or of one instance by one of the same
// column (a consolidation move, Policy.Consolidation: From equals To):
// Add instances of To are launched first;
// instances of From go only as instances of To become ready, so that the
// capacity of the ready instances (T_i, requests/s) never falls below
// FloorRPS nor below W_f / SaturationThreshold.
type Replacement struct {
	// From and To are columns (TypeState.GPUType).
	From, To string
	// Add is how many instances of To the replacement launched.
	Add int
	// Remove is how many instances of From they replace; Removed of them
	// are gone so far.
	Remove, Removed int
	// ToBefore is To's Running when the replacement started: the
	// replacement's instances are those of To beyond it.
	ToBefore int
	// Started is when the instances of To were asked for.
	Started time.Time
	// FloorRPS is the least capacity, in requests/s, the replacement
	// leaves while it runs: the capacity before it while a scale-in
	// brake holds (cool-down, interval), so that it removes none; else
	// the capacity after it, which the brakes' own bar allows (see
	// Autoscaler.replacementFloor); for a move, W_f / SaturationThreshold
	// (Autoscaler.move).
	FloorRPS float64
}

// IsMove reports whether r is a consolidation move (From equals To);
// false for nil.
func (r *Replacement) IsMove() bool { return r != nil && r.From == r.To }

// ReplacementPhase says what a decision did to a replacement.
type ReplacementPhase string

// Phases of a replacement, in Action.ReplacementPhase; each is also the
// reason of the event hetsev-scaler records for it.
const (
	// ReplacementStarted: the instances of To were added (Delta > 0).
	ReplacementStarted ReplacementPhase = "ReplacementStarted"
	// ReplacementProgressed: some instances of From went, covered by new
	// ready instances of To; more are to go.
	ReplacementProgressed ReplacementPhase = "ReplacementProgressed"
	// ReplacementCompleted: the last instances of From it replaces went.
	ReplacementCompleted ReplacementPhase = "ReplacementCompleted"
	// ReplacementTimedOut: instances of To were not ready within
	// Policy.ReplacementTimeout; the new ones not ready go (Delta < 0 for
	// To), the instances of From not yet replaced stay.
	ReplacementTimedOut ReplacementPhase = "ReplacementTimedOut"
	// ReplacementAbandoned: From or To is no longer a column of the
	// observation (the service's spec changed); nothing is removed.
	ReplacementAbandoned ReplacementPhase = "ReplacementAbandoned"
)

// Defaults of the replacement's knobs (Policy.ReplacementInterval,
// Policy.ReplacementTimeout). ESTIMATES: the interval is the scale-in
// cool-down's default, so a service changes its mix at most as often as
// it may shrink after a burst; the timeout is many launch times (O_i 20 to
// 40 s in data/profiles) and the time a Deployment waits by default before
// reporting no progress (progressDeadlineSeconds 600) halved.
const (
	DefaultReplacementInterval = 5 * time.Minute
	DefaultReplacementTimeout  = 5 * time.Minute
)

// replacementInterval is Policy.ReplacementInterval in effect.
func (p Policy) replacementInterval() time.Duration {
	if p.ReplacementInterval == 0 {
		return DefaultReplacementInterval
	}
	return p.ReplacementInterval
}

// replacementTimeout is Policy.ReplacementTimeout in effect.
func (p Policy) replacementTimeout() time.Duration {
	if p.ReplacementTimeout == 0 {
		return DefaultReplacementTimeout
	}
	return p.ReplacementTimeout
}

// capacityTolerance absorbs rounding in comparisons of capacities
// (requests/s).
const capacityTolerance = 1e-9

// replacementFloor is the least capacity, in requests/s, a replacement
// starting at obs may leave, and why. The brakes that protect capacity
// from a scale-in hold it at the capacity now: within ScaleInCoolDown of
// the last scale-out or ScaleInInterval of the last scale-in it removes
// none, the swap trades capacity for capacity. Otherwise it is the bar of
// a scale-in, W / (SaturationThreshold - ScaleInHysteresis), at the
// higher of W_f and (unless DisableStabilizedScaleIn) the highest W of
// the stabilization window, and at most the capacity now: a replacement
// never adds capacity for a load the scale-out has not asked for.
func (a *Autoscaler) replacementFloor(obs Observation, f forecast) (float64, string) {
	p := a.Policy
	now := Capacity(obs.Types, nil)
	if !a.lastScaleOut.IsZero() && obs.Now.Sub(a.lastScaleOut) < p.ScaleInCoolDown {
		return now, "capacity kept within the scale-in cool-down"
	}
	if !a.lastScaleIn.IsZero() && obs.Now.Sub(a.lastScaleIn) < p.ScaleInInterval {
		return now, "capacity kept within the scale-in interval"
	}
	w := f.w
	if !p.DisableStabilizedScaleIn {
		w = max(w, a.rates.peak(p.stabilizationWindow()))
	}
	bar := w / (p.SaturationThreshold - p.ScaleInHysteresis)
	if bar >= now {
		return now, "capacity kept"
	}
	return bar, fmt.Sprintf("capacity >= %.4g requests/s, the scale-in bar at %.4g requests/s", bar, w)
}

// startReplacement returns act (a decision that does nothing) or, when
// the rate limit (ReplacementInterval) allows one, the start of a
// replacement: with Policy.Replacement, the swap of swap; else, with
// Policy.Consolidation, the move of move.
func (a *Autoscaler) startReplacement(obs Observation, f forecast, act Action) Action {
	p := a.Policy
	if !(p.Replacement || p.Consolidation) || obs.ArrivalRateIsLowerBound || act.Kind != ActionNone {
		return act
	}
	if !a.lastReplacement.IsZero() {
		if since := obs.Now.Sub(a.lastReplacement); since < p.replacementInterval() {
			return act
		}
	}
	if p.Replacement {
		if started, ok := a.swap(obs, f, act); ok {
			return started
		}
	}
	if p.Consolidation {
		return a.move(obs, f, act)
	}
	return act
}

// swap is the start of a replacement when a swap of instances between
// two columns lowers the objective of HetSev 4.1: its instances of To
// added. The swap is the cheapest, by objective (launch penalty lambda
// O_i included, so a saving must pay for the launch), over every pair of
// columns (From running, To passing the SLO check with free slots; light
// flavors only while the service is quiet, as for a scale-out) and every
// count r of From's instances: r of From for the fewest k >= 1 of To that
// keep the mix after it at or above the floor (replacementFloor).
// MinReplicas and MaxReplicas hold for the mix after it. ok is false when
// no swap lowers the objective.
func (a *Autoscaler) swap(obs Observation, f forecast, act Action) (Action, bool) {
	p := a.Policy
	floor, why := a.replacementFloor(obs, f)
	offer, _ := lightOnlyWhileQuiet(obs, f.w/p.SaturationThreshold, "")
	types := obs.Types
	total := totalRunning(types)
	capNow := Capacity(types, nil)
	best, bestObj := []int(nil), -capacityTolerance
	for from, tf := range types {
		for to, tt := range offer.Types {
			if to == from || tt.MaxAdditional == 0 || !p.MeetsSLO(tt) {
				continue
			}
			for r := 1; r <= tf.Running; r++ {
				short := floor - (capNow - float64(r)*tf.ThroughputRPS)
				k := max(1, int(math.Ceil(short/tt.ThroughputRPS-capacityTolerance)))
				if k > tt.MaxAdditional {
					break
				}
				after := total - r + k
				if after < p.MinReplicas || (p.MaxReplicas > 0 && after > p.MaxReplicas) {
					continue
				}
				x := make([]int, len(types))
				x[from], x[to] = -r, k
				if obj := objective(types, x, p.Lambda); obj < bestObj {
					best, bestObj = x, obj
				}
			}
		}
	}
	if best == nil {
		return act, false
	}
	var from, to int
	for i, v := range best {
		if v < 0 {
			from = i
		} else if v > 0 {
			to = i
		}
	}
	rp := Replacement{From: types[from].GPUType, To: types[to].GPUType, Add: best[to], Remove: -best[from],
		ToBefore: types[to].Running, Started: obs.Now, FloorRPS: floor}
	add := make([]int, len(types))
	add[to] = best[to]
	act.Kind = ActionReplace
	act.Delta = add
	act.Objective = bestObj
	act.Replacement, act.ReplacementPhase = &rp, ReplacementStarted
	act.Reason = fmt.Sprintf("%s; replacement: +%d %s for %d %s (capacity %.4g -> %.4g requests/s, %s; objective %.4g USD/h), %s removed once the new instances are ready and routed",
		act.Reason, rp.Add, rp.To, rp.Remove, rp.From, capNow, Capacity(types, best), why, bestObj, rp.From)
	return act, true
}

// move is act or the start of a consolidation move: one instance added
// to a column with an instance alone on its GPU that fits a GPU in use
// (TypeState.Movable > 0) and a free slot, as a replacement of one
// instance of the column by one of the same column. The caller makes the
// old instance the one removed (hetsev-scaler: the pod's
// controller.kubernetes.io/pod-deletion-cost) and the scheduler places
// the new one on a GPU in use, which it prefers to an empty one. Only
// while every instance of the column is ready, so that the new one is
// the one ready beyond ToBefore (continueReplacement), and within
// MaxReplicas counting the new one. Of several such columns, the one of
// the highest PriceUSDPerHour (the instance's own share of a GPU's
// price): a larger share more often leaves a GPU mostly unfilled.
// The old instance goes only once the new one is ready and routed, and
// only while the capacity left stays at or above FloorRPS, W_f /
// SaturationThreshold: what the SLO needs now. Not the capacity before
// the move, as for a swap within the cool-down: the new instance shares
// a GPU, so its co-location inflation (TypeState.ThroughputRPS is T_i
// over the instances' inflation) lowers the capacity counted after the
// move though no instance is shed. When even that floor holds the old
// instance (the column needs the extra instance at the inflation its
// GPUs now give), the timeout ends the move with both kept, as a
// scale-out would have added it.
func (a *Autoscaler) move(obs Observation, f forecast, act Action) Action {
	p := a.Policy
	types := obs.Types
	total := totalRunning(types)
	col := -1
	for i, t := range types {
		if t.Movable == 0 || t.MaxAdditional == 0 || t.Ready < t.Running {
			continue
		}
		if p.MaxReplicas > 0 && total+1 > p.MaxReplicas {
			continue
		}
		if col < 0 || t.PriceUSDPerHour > types[col].PriceUSDPerHour {
			col = i
		}
	}
	if col < 0 {
		return act
	}
	t := types[col]
	capNow := Capacity(types, nil)
	floor := min(f.w/p.SaturationThreshold, capNow)
	rp := Replacement{From: t.GPUType, To: t.GPUType, Add: 1, Remove: 1, ToBefore: t.Running, Started: obs.Now, FloorRPS: floor}
	act.Kind = ActionReplace
	act.Delta = make([]int, len(types))
	act.Delta[col] = 1
	act.Objective = objective(types, act.Delta, p.Lambda)
	act.Replacement, act.ReplacementPhase = &rp, ReplacementStarted
	act.Reason = fmt.Sprintf("%s; consolidation: +1 %s to move one of its %d instances alone on a GPU onto a GPU in use, the old one removed once the new one is ready and routed (capacity %.4g requests/s kept at or above %.4g, W_f over the threshold)",
		act.Reason, t.GPUType, t.Movable, capNow, floor)
	return act
}

// continueReplacement is the decision while a replacement is in flight
// and no scale-out is due (a scale-out goes first; a scale-in waits for
// the replacement's end). Of the replacement's instances of To, those
// beyond ToBefore that are Ready (TypeState.Ready: ready and routed)
// count; instances of From go, up to Remove, as far as the capacity left,
// the new instances not ready left out, stays at or above FloorRPS and
// W_f / SaturationThreshold: with the floor at the capacity before the
// replacement, an old instance goes only once new ready ones carry as
// much. None go on a lower bound of W. After Policy.ReplacementTimeout the new
// instances not ready go and the replacement ends; the instances of From
// not replaced stay.
func (a *Autoscaler) continueReplacement(obs Observation, f forecast, act Action, wait string) Action {
	p := a.Policy
	rp := *a.replacing
	act.Replacement = &rp
	from, to := -1, -1
	for i, t := range obs.Types {
		// A consolidation move has From equal to To.
		if t.GPUType == rp.From {
			from = i
		}
		if t.GPUType == rp.To {
			to = i
		}
	}
	if from < 0 || to < 0 {
		act.ReplacementPhase = ReplacementAbandoned
		act.Reason = fmt.Sprintf("replacement of %s by %s abandoned: the service no longer has both columns", rp.From, rp.To)
		return act
	}
	tf, tt := obs.Types[from], obs.Types[to]
	added := max(tt.Running-rp.ToBefore, 0)
	ready := min(rp.Add, added, max(min(tt.Ready, tt.Running)-rp.ToBefore, 0))
	// r: instances of From replaced in all, the most the floor allows.
	r := min(rp.Remove, rp.Removed+tf.Running)
	counted := Capacity(obs.Types, nil) - float64(added-ready)*tt.ThroughputRPS
	need := f.w / p.SaturationThreshold
	floor := max(rp.FloorRPS, need)
	minLeft := totalRunning(obs.Types) - (added - ready) - p.MinReplicas
	for r > rp.Removed && (counted-float64(r-rp.Removed)*tf.ThroughputRPS < floor-capacityTolerance || r-rp.Removed > minLeft) {
		r--
	}
	if from == to {
		// A move: an old instance goes only for a new one that serves, or
		// the ReplicaSet, which removes a pod that is not ready first,
		// would remove the new one instead.
		r = min(r, ready)
	}
	if obs.ArrivalRateIsLowerBound {
		r = rp.Removed
	}
	remove := r - rp.Removed
	timedOut := obs.Now.Sub(rp.Started) >= p.replacementTimeout()
	progress := fmt.Sprintf("replacement of %d %s by %d %s: %d of %d new ready and routed, %d of %d replaced",
		rp.Remove, rp.From, rp.Add, rp.To, ready, rp.Add, r, rp.Remove)
	if remove > 0 {
		act.Kind = ActionReplace
		act.Delta[from] = -remove
		act.Objective = objective(obs.Types, act.Delta, p.Lambda)
		rp.Removed = r
		act.ReplacementPhase = ReplacementProgressed
		act.Reason = fmt.Sprintf("%s: -%d %s", progress, remove, rp.From)
		if r == rp.Remove {
			act.ReplacementPhase = ReplacementCompleted
			act.Reason += "; completed"
			return act
		}
	}
	if timedOut {
		// Only what the replacement added goes: instances of To a
		// scale-out added meanwhile stay, and so do as many of its own
		// as stand in for the instances of From already removed, ready
		// or not at this moment, so that the timeout never leaves the
		// service below the capacity it had.
		keep := ready
		if r > 0 && tt.ThroughputRPS > 0 {
			keep = max(keep, int(math.Ceil(float64(r)*tf.ThroughputRPS/tt.ThroughputRPS-capacityTolerance)))
		}
		if back := min(rp.Add, added) - keep; back > 0 {
			act.Kind = ActionReplace
			act.Delta[to] = -back
			act.Objective = objective(obs.Types, act.Delta, p.Lambda)
		}
		act.ReplacementPhase = ReplacementTimedOut
		act.Reason = fmt.Sprintf("%s; timed out after %v: %d new %s not ready removed, %d %s kept",
			progress, p.replacementTimeout(), max(min(rp.Add, added)-keep, 0), rp.To, rp.Remove-r, rp.From)
		return act
	}
	if remove == 0 {
		why := "waiting for the new instances"
		switch {
		case obs.ArrivalRateIsLowerBound:
			why = "the arrival rate is only a lower bound: nothing removed"
		case ready == rp.Add:
			why = fmt.Sprintf("capacity %.4g requests/s without more of %s is below the %.4g kept", counted-tf.ThroughputRPS, rp.From, floor)
		}
		act.Reason = fmt.Sprintf("%s; %s (%v of %v)", progress, why, obs.Now.Sub(rp.Started), p.replacementTimeout())
		if wait != "" {
			act.Reason = wait + "; " + act.Reason
		}
	}
	return act
}
