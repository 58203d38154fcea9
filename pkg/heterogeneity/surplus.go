package heterogeneity

import (
	"fmt"
	"time"
)

// SurplusHeld says why the scale-in brakes keep, at obs, a replica that
// adds no capacity (one the scheduler found no room for, or one bound to a
// node that does not start), or "" when one such replica may go. Call it
// after Propose of the same obs, whose rates it reads.
//
// Such a replica goes as a scale-in of one instance would: not on an
// arrival rate that is only a lower bound, not within Policy.ScaleInCoolDown
// of the last scale-out nor Policy.ScaleInInterval of the last scale-in,
// and only while the running instances (obs.Types' Running) carry the
// highest arrival rate of the stabilization window within
// Policy.SaturationThreshold (the current rate when the stabilized
// scale-in is off). A replica counted as not starting may be a serving one
// that restarts slowly (a registry outage crash-looping it); the brakes
// give it the time they give a running instance.
func (a *Autoscaler) SurplusHeld(obs Observation) string {
	if a == nil {
		return "no autoscaler (nil)"
	}
	p := a.Policy
	if obs.ArrivalRateIsLowerBound {
		return fmt.Sprintf("the arrival rate %.4g requests/s is only a lower bound", obs.ArrivalRate)
	}
	if !a.lastScaleOut.IsZero() {
		if since := obs.Now.Sub(a.lastScaleOut); since < p.ScaleInCoolDown {
			return fmt.Sprintf("scale-in cool-down: %v since last scale-out, %v required", since, p.ScaleInCoolDown)
		}
	}
	if !a.lastScaleIn.IsZero() {
		if since := obs.Now.Sub(a.lastScaleIn); since < p.ScaleInInterval {
			return fmt.Sprintf("scale-in interval: %v since last scale-in, %v required", since, p.ScaleInInterval)
		}
	}
	w := obs.ArrivalRate
	if !p.DisableStabilizedScaleIn {
		w = max(w, a.rates.peak(p.stabilizationWindow()))
	}
	if s := Saturation(w, obs.Types); !(s <= p.SaturationThreshold) {
		return fmt.Sprintf("the running instances would carry %.4g requests/s at saturation %.2f, above threshold %.2f", w, s, p.SaturationThreshold)
	}
	return ""
}

// RecordSurplusRemoval records that a replica that added no capacity was
// removed at t: the next one, and the next scale-in, wait
// Policy.ScaleInInterval from t, as after a scale-in.
func (a *Autoscaler) RecordSurplusRemoval(t time.Time) {
	if a != nil {
		a.lastScaleIn = t
	}
}
