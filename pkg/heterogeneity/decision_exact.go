package heterogeneity

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// scaleOutExact fills act with the scale-out that solves the ILP of HetSev
// 4.1 restricted to X_i >= 0 (see Decide). The caller has checked the
// trigger, MaxReplicas and that some type is eligible and has room.
func (a *Autoscaler) scaleOutExact(obs Observation, act Action, trigger string) Action {
	p := a.Policy
	types := obs.Types
	pr, err := buildProblem(obs, p, ScaleOutOnly)
	if err != nil { // unreachable: the direction is known
		act.Reason = trigger + ": " + oneLine(err) + "; solver exact"
		return act
	}
	res := SolveExactResult(pr)
	partial := false
	if !res.Feasible {
		// The deficit cannot be covered: aim at what can be reached.
		res = SolveExactResult(pr.Relaxed())
		partial = true
	}
	if !res.Feasible || isZero(res.X) {
		// Unreachable: an eligible type has room and MaxReplicas leaves a
		// budget, so the fallback adds at least one instance.
		act.Reason = trigger + ": nothing to add; solver exact"
		return act
	}
	x := res.X
	act.Kind = ActionScaleOut
	act.Delta = x
	act.Objective = Objective(types, x, p.Lambda)
	act.Reason = fmt.Sprintf("%s: %s (objective %.2f USD/h)", trigger, formatDelta(types, x), act.Objective)
	if partial {
		var why []string
		if left := pr.Target - pr.Capacity(x); left > capacityTolerance(pr.Target) {
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
	pr, err := buildProblem(obs, p, ScaleInOnly)
	if err != nil { // unreachable: the direction is known
		act.Reason = within + "; " + oneLine(err) + "; solver exact"
		return act
	}
	res := SolveExactResult(pr)
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
	act.Objective = Objective(types, x, p.Lambda)
	act.Reason = fmt.Sprintf("%s, %.2f after the action (bar %.2f): %s (objective %.2f USD/h); solver exact%s",
		within, saturationAt(obs.ArrivalRate, pr.Capacity(x)), bar, formatDelta(types, x), act.Objective, exactNote(res))
	a.lastScaleIn = obs.Now
	return act
}

// exactNote flags an action the exact solver could not prove optimal.
func exactNote(r ExactResult) string {
	if r.Optimal {
		return ""
	}
	return fmt.Sprintf(" (node budget of %d reached: best action found, optimality not proven)", ExactNodeBudget)
}

func joinOr(parts []string, empty string) string {
	if len(parts) == 0 {
		return empty
	}
	return strings.Join(parts, " and ")
}

// Relaxed returns p with Target and MinReplicas lowered to the largest
// capacity (requests/s) and replica count that an action within the bounds
// and MaxReplicas can reach, so that it has a feasible action whenever the
// bounds and MaxReplicas admit one. It is what the exact solver aims at in a
// partial scale-out: the most capacity that fits, at the least cost. A
// reachable p is returned unchanged.
//
// The largest capacity is found greedily, X_i at Lower_i and then the
// remaining room filled with the highest-throughput types first, which is
// optimal because every instance counts once against MaxReplicas.
func (p Problem) Relaxed() Problem {
	if len(p.Lower) != len(p.Types) || len(p.Upper) != len(p.Types) {
		return p
	}
	x := make([]int, len(p.Types))
	budget := bigCount
	total := 0
	for i, t := range p.Types {
		x[i] = max(p.Lower[i], -t.Running)
		total += t.Running + x[i]
	}
	if p.MaxReplicas > 0 {
		budget = max(p.MaxReplicas-total, 0)
	}
	order := make([]int, len(p.Types))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int {
		return cmp.Compare(p.Types[j].ThroughputRPS, p.Types[i].ThroughputRPS)
	})
	for _, i := range order {
		take := min(max(p.Upper[i]-x[i], 0), budget)
		x[i] += take
		budget -= take
		total += take
	}
	r := p
	r.Target = math.Min(p.Target, p.Capacity(x))
	r.MinReplicas = min(p.MinReplicas, total)
	return r
}
