package heterogeneity

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hetsev/hetsev/pkg/heterogeneity/ilp"
)

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

// scaleOut fills act with the scale-out that solver computes for the given
// trigger and the forecast arrival rate f.w, or with NoFeasibleType when no
// GPU type passes the SLO check and has room, or None at MaxReplicas.
func (a *Autoscaler) scaleOut(solver Solver, obs Observation, f forecast, act Action, trigger string) Action {
	p := a.Policy
	types := obs.Types
	if total := totalRunning(types); p.MaxReplicas > 0 && p.MaxReplicas-total <= 0 {
		act.Reason = fmt.Sprintf("%s, but %d running >= max replicas %d", trigger, total, p.MaxReplicas)
		return act
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

	obs, trigger = lightOnlyWhileQuiet(obs, f.w/p.SaturationThreshold, trigger)
	amount := solver.ScaleOut(Request{Observation: withRate(obs, f.w), Policy: p, Reason: trigger})
	act.Reason = amount.Reason
	if isZero(amount.Delta) {
		return act
	}
	act.Kind = ActionScaleOut
	act.Delta = amount.Delta
	act.Objective = objective(types, amount.Delta, p.Lambda)
	// The mix's runner-up, said in the reason: why not another type.
	if pr, err := buildProblem(withRate(obs, f.w), p, ilp.ScaleOutOnly); err == nil {
		if alt := alternativeOf(pr, types, amount.Delta, solver.Name() == SolverExact); alt != nil {
			act.Alternative = alt
			act.Reason += "; " + mixNames(types, alt.Delta) + " rejected: " + strings.TrimPrefix(alt.Why, mixNames(types, alt.Delta)+" ")
		}
	}
	return act // recorded by Commit
}

// withRate is obs with the arrival rate w.
func withRate(obs Observation, w float64) Observation {
	obs.ArrivalRate = w
	return obs
}

// scaleIn fills act with the scale-in that solver computes for the current
// rate f.w, stabilized by the highest rate of the window (burst.go, rule
// 2: stabilize) unless Policy.DisableStabilizedScaleIn; or None with the
// reason none is due: an arrival rate that is only a lower bound
// (Observation.ArrivalRateIsLowerBound), the cool-down after a scale-out,
// the interval since the last scale-in, MinReplicas, or no instance that
// may go.
func (a *Autoscaler) scaleIn(solver Solver, obs Observation, f forecast, act Action) Action {
	p := a.Policy
	within := fmt.Sprintf("saturation %.2f within threshold %.2f", act.Saturation, p.SaturationThreshold)
	if f.rising() {
		within += fmt.Sprintf(" (%s, saturation %.2f)", f.describe(obs.ArrivalRate), Saturation(f.w, obs.Types))
	}
	if obs.ArrivalRateIsLowerBound {
		act.Reason = fmt.Sprintf("saturation >= %.2f within threshold %.2f; the arrival rate %.4g requests/s is only a lower bound: scale-in held",
			act.Saturation, p.SaturationThreshold, obs.ArrivalRate)
		return act
	}
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
	if total := totalRunning(obs.Types); total-1 < p.MinReplicas {
		act.Reason = fmt.Sprintf("%s; %d running, at min replicas %d", within, total, p.MinReplicas)
		return act
	}

	req := Request{Observation: withRate(obs, f.w), Policy: p, Reason: within}
	amount := solver.ScaleIn(req)
	if win := p.stabilizationWindow(); !p.DisableStabilizedScaleIn {
		if peak := a.rates.peak(win); peak > f.w && !isZero(amount.Delta) {
			amount = stabilize(solver, req, amount, peak, win)
		}
	}
	act.Reason = amount.Reason
	if isZero(amount.Delta) {
		return act
	}
	act.Kind = ActionScaleIn
	act.Delta = amount.Delta
	act.Objective = objective(obs.Types, amount.Delta, p.Lambda)
	return act // recorded by Commit
}

// lightOnlyWhileQuiet offers the light flavor columns of obs (TypeState.Light)
// to a scale-out only while need, the capacity the service is planned for
// (W_f / threshold, requests/s), fits in one instance of the largest of
// them; otherwise it returns obs with their MaxAdditional 0 and says so in
// the reason. A quiet service then runs on a fraction of a GPU; a busy one
// adds whole GPUs, since each of its extra light instances would need a
// GPU of its own (anti-affinity) and bill it whole.
//
// While offered, each light column admits one instance at most (its
// MaxAdditional capped at 1 - Running): a service that outgrows its light
// instance adds the next larger flavor rather than a second of the same,
// so the GPUs a quiet service occupies are bounded by the number of light
// flavors and its capacity doubles with each one. Light instances cost
// their share of a GPU's price only while that GPU is billed for other
// tenants anyway; repeats of one flavor spread over as many GPUs and keep
// each of them billed.
func lightOnlyWhileQuiet(obs Observation, need float64, reason string) (Observation, string) {
	largest := 0.0
	for _, t := range obs.Types {
		if t.Light {
			largest = max(largest, t.ThroughputRPS)
		}
	}
	if largest == 0 {
		return obs, reason
	}
	types := slices.Clone(obs.Types)
	if need <= largest {
		for i := range types {
			if types[i].Light {
				types[i].MaxAdditional = max(0, min(types[i].MaxAdditional, 1-types[i].Running))
			}
		}
		obs.Types = types
		return obs, reason
	}
	for i := range types {
		if types[i].Light {
			types[i].MaxAdditional = 0
		}
	}
	obs.Types = types
	return obs, fmt.Sprintf("%s; light flavors not offered (%.4g requests/s planned > %.4g of the largest light instance)", reason, need, largest)
}
