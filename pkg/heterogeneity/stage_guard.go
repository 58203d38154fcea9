package heterogeneity

import (
	"fmt"
	"strings"
	"time"
)

// Stage 3 of a decision, guard: which move the brakes allow now, before
// any solver runs. Its rules, each with its switch and its row in make
// evaluate's ablation (docs/evaluation.md):
//
//   - scale out (HetSev 4.1, "scaling-out algorithm") when the saturation
//     at the forecast s_f = W_f / sum T_i N_i has stayed above
//     Policy.SaturationThreshold for Policy.ScaleOutPeriod, or at once
//     when fewer than Policy.MinReplicas run or requests arrive and
//     nothing runs; never beyond Policy.MaxReplicas. A scale-out restarts
//     the period (Commit): launching instances raise capacity only later.
//     The threshold comes from the SLO's latency model unless the service
//     sets one (threshold.go; row "hand-set thresholds, not the SLO
//     model's");
//   - a replacement in flight (replace.go) is carried on, after a
//     scale-out due;
//   - otherwise scale in (HetSev 4.1, "scaling-in algorithm"), unless W is
//     only a lower bound (Observation.ArrivalRateIsLowerBound: part of the
//     serving instances was measured), within Policy.ScaleInCoolDown of the
//     last scale-out (row "no scale-in cool-down"), within
//     Policy.ScaleInInterval of the last scale-in, or at MinReplicas. A
//     held scale-in may still start a replacement (stage 4).

// moveKind is what a decision may do, as the brakes allow it.
type moveKind int

const (
	// moveHold: nothing moves; the move's reason says why.
	moveHold moveKind = iota
	// moveScaleOut: a scale-out is due; trigger says what calls for it.
	moveScaleOut
	// moveReplacement: the replacement in flight goes on; reason is the
	// scale-out's wait, if one waits.
	moveReplacement
	// moveScaleIn: a scale-in may be planned, unless reason says which
	// brake holds it; within starts its Reason.
	moveScaleIn
)

// move is the guard's answer: a kind and what the plan's Reason says.
type move struct {
	kind    moveKind
	trigger string
	reason  string
	within  string
}

// guard returns the move the brakes allow for obs at forecast f;
// saturation is the measured one. It updates the timer of the saturation
// above the threshold (scaleOutTrigger).
func (a *Autoscaler) guard(obs Observation, f forecast, saturation float64) move {
	p := a.Policy
	trigger, wait := a.scaleOutTrigger(obs, f)
	switch {
	case wait == "" && trigger != "":
		if total := totalRunning(obs.Types); p.MaxReplicas > 0 && p.MaxReplicas-total <= 0 {
			return move{kind: moveHold, reason: fmt.Sprintf("%s, but %d running >= max replicas %d", trigger, total, p.MaxReplicas)}
		}
		return move{kind: moveScaleOut, trigger: trigger}
	case a.replacing != nil:
		return move{kind: moveReplacement, reason: wait}
	case wait != "":
		return move{kind: moveHold, reason: wait}
	}
	within := fmt.Sprintf("saturation %.2f within threshold %.2f", saturation, p.SaturationThreshold)
	if f.rising() {
		within += fmt.Sprintf(" (%s, saturation %.2f)", f.describe(obs.ArrivalRate), Saturation(f.w, obs.Types))
	}
	return move{kind: moveScaleIn, within: within, reason: a.scaleInBrake(obs, saturation, within)}
}

// scaleOutTrigger updates the timer of the saturation s_f = W_f / capacity
// (f: the launch-time forecast) above the threshold and returns what calls
// for a scale-out now (trigger), or, while the saturation has not yet stayed
// above the threshold for Policy.ScaleOutPeriod, why the decision waits
// (wait). Both are empty when no scale-out is due.
func (a *Autoscaler) scaleOutTrigger(obs Observation, f forecast) (trigger, wait string) {
	p := a.Policy
	s := Saturation(f.w, obs.Types)
	sat := fmt.Sprintf("saturation %.2f", s)
	if f.rising() {
		sat = fmt.Sprintf("saturation %.2f at the forecast (%s)", s, f.describe(obs.ArrivalRate))
	}
	if s > p.SaturationThreshold {
		if !a.above {
			a.above, a.aboveSince = true, obs.Now
		}
	} else {
		a.above, a.aboveSince = false, time.Time{}
	}

	var triggers []string
	if total := totalRunning(obs.Types); total < p.MinReplicas {
		triggers = append(triggers, fmt.Sprintf("%d running < min replicas %d", total, p.MinReplicas))
	}
	if w := obs.ArrivalRate; w > 0 && Capacity(obs.Types, nil) <= 0 {
		triggers = append(triggers, fmt.Sprintf("no running capacity for %.4g requests/s", w))
	}
	if len(triggers) == 0 && a.above {
		held := obs.Now.Sub(a.aboveSince)
		if held < p.ScaleOutPeriod {
			return "", fmt.Sprintf("%s > %.2f for %v of %v: waiting before scaling out",
				sat, p.SaturationThreshold, held, p.ScaleOutPeriod)
		}
		triggers = append(triggers, fmt.Sprintf("%s > %.2f for %v", sat, p.SaturationThreshold, held))
	}
	return strings.Join(triggers, "; "), ""
}

// scaleInBrake returns which brake holds a scale-in now, "" when none
// does: an arrival rate that is only a lower bound, the cool-down after a
// scale-out, the interval since the last scale-in, or MinReplicas.
func (a *Autoscaler) scaleInBrake(obs Observation, saturation float64, within string) string {
	p := a.Policy
	if obs.ArrivalRateIsLowerBound {
		return fmt.Sprintf("saturation >= %.2f within threshold %.2f; the arrival rate %.4g requests/s is only a lower bound: scale-in held",
			saturation, p.SaturationThreshold, obs.ArrivalRate)
	}
	if !a.lastScaleOut.IsZero() {
		if since := obs.Now.Sub(a.lastScaleOut); since < p.ScaleInCoolDown {
			return fmt.Sprintf("%s; scale-in cool-down: %v since last scale-out, %v required", within, since, p.ScaleInCoolDown)
		}
	}
	if !a.lastScaleIn.IsZero() {
		if since := obs.Now.Sub(a.lastScaleIn); since < p.ScaleInInterval {
			return fmt.Sprintf("%s; scale-in interval: %v since last scale-in, %v required", within, since, p.ScaleInInterval)
		}
	}
	if total := totalRunning(obs.Types); total-1 < p.MinReplicas {
		return fmt.Sprintf("%s; %d running, at min replicas %d", within, total, p.MinReplicas)
	}
	return ""
}
