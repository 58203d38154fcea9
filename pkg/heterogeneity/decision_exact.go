package heterogeneity

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/hetsev/hetsev/pkg/heterogeneity/ilp"
)

// scaleOutExact fills act with the scale-out that solves the ILP of HetSev
// 4.1 restricted to X_i >= 0 (see Decide). The caller has checked the
// trigger, MaxReplicas and that some type is eligible and has room.
func (a *Autoscaler) scaleOutExact(obs Observation, act Action, trigger string) Action {
	p := a.Policy
	types := obs.Types
	pr, err := buildProblem(obs, p, ilp.ScaleOutOnly)
	if err != nil { // unreachable: the direction is known
		act.Reason = trigger + ": " + oneLine(err) + "; solver exact"
		return act
	}
	res := ilp.SolveExactResult(pr)
	partial := false
	if !res.Feasible {
		// The deficit cannot be covered: aim at what can be reached.
		res = ilp.SolveExactResult(pr.Relaxed())
		partial = true
	}
	if !res.Feasible || isZero(res.X) {
		// The fallback adds at least one instance (an eligible type has room
		// and MaxReplicas leaves a budget), so this is reached only when no
		// instance is needed: the saturation is above the threshold by less
		// than the rounding tolerance.
		act.Reason = trigger + ": nothing to add; solver exact"
		return act
	}
	x := res.X
	act.Kind = ActionScaleOut
	act.Delta = x
	act.Objective = objective(types, x, p.Lambda)
	act.Reason = fmt.Sprintf("%s: %s (objective %.2f USD/h)", trigger, formatDelta(types, x), act.Objective)
	if partial {
		var why []string
		if left := pr.Uncovered(x); left > 0 {
			why = append(why, fmt.Sprintf("%.4g requests/s of the deficit uncovered", left))
		}
		if short := pr.MinReplicas - (totalRunning(types) + sum(x)); short > 0 {
			why = append(why, fmt.Sprintf("%d replicas short of min replicas %d", short, pr.MinReplicas))
		}
		limit := "no free GPU fits more instances of the eligible types"
		if pr.MaxReplicas > 0 && totalRunning(types)+sum(x) >= pr.MaxReplicas {
			limit = fmt.Sprintf("max replicas %d reached", pr.MaxReplicas)
		}
		act.Reason += fmt.Sprintf("; partial: %s, %s", joinOr(why, "target unreachable"), limit)
	}
	act.Reason += "; solver exact" + exactNote(res)
	a.lastScaleOut = obs.Now
	a.above, a.aboveSince = false, time.Time{}
	return act
}

// scaleInExact fills act with the scale-in that solves the ILP of HetSev 4.1
// restricted to X_i <= 0 (see Decide). The caller has checked cool-down,
// interval and that one instance may go without breaking MinReplicas.
func (a *Autoscaler) scaleInExact(obs Observation, act Action, within string, capNow float64) Action {
	p := a.Policy
	types := obs.Types
	bar := p.SaturationThreshold - p.ScaleInHysteresis
	pr, err := buildProblem(obs, p, ilp.ScaleInOnly)
	if err != nil { // unreachable: the direction is known
		act.Reason = within + "; " + oneLine(err) + "; solver exact"
		return act
	}
	res := ilp.SolveExactResult(pr)
	if !res.Feasible || isZero(res.X) {
		lowest := math.Inf(1)
		for _, t := range types {
			if t.Running > 0 {
				lowest = min(lowest, saturationAt(obs.ArrivalRate, capNow-t.ThroughputRPS))
			}
		}
		act.Reason = fmt.Sprintf("%s; without any one instance it would be %.2f > %.2f; solver exact", within, lowest, bar)
		return act
	}
	x := res.X
	act.Kind = ActionScaleIn
	act.Delta = x
	act.Objective = objective(types, x, p.Lambda)
	act.Reason = fmt.Sprintf("%s, %.2f after the action (bar %.2f): %s (objective %.2f USD/h); solver exact%s",
		within, saturationAt(obs.ArrivalRate, pr.Capacity(x)), bar, formatDelta(types, x), act.Objective, exactNote(res))
	a.lastScaleIn = obs.Now
	return act
}

// exactNote flags an action the exact solver could not prove optimal.
func exactNote(r ilp.ExactResult) string {
	if r.Optimal {
		return ""
	}
	return fmt.Sprintf(" (node budget of %d reached: best action found, optimality not proven)", ilp.ExactNodeBudget)
}

func joinOr(parts []string, empty string) string {
	if len(parts) == 0 {
		return empty
	}
	return strings.Join(parts, " and ")
}
