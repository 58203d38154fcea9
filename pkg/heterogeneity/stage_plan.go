package heterogeneity

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hetsev/hetsev/pkg/heterogeneity/ilp"
)

// Stage 4 of a decision, plan: how many instances of which column the move
// the guard allows takes, by the policy's solver on W_f (HetSev 4.1's
// heuristic or the exact solution of its ILP). Its rules, each with its
// switch and its row in make evaluate's ablation (docs/evaluation.md):
//
//   - a scale-out covers the deficit W_f / threshold - sum T_i N_i (and the
//     shortfall to MinReplicas) with the eligible types (Policy.MeetsSLO,
//     MaxAdditional > 0) that minimise the objective: SolverHeuristic a
//     single type that covers it if any, else greedily the cheapest per
//     request/s; SolverExact the optimum of the ILP restricted to
//     X_i >= 0. When free resources or MaxReplicas cannot cover it, the
//     largest reachable capacity is the target and the action is partial;
//   - light flavors (flavor.go) are offered only while the planned
//     capacity fits one instance of the largest of them, one each
//     (lightOnlyWhileQuiet); row "whole GPUs only, no instance flavors";
//   - what whole GPUs cannot cover goes to light instances on the GPUs
//     that have room (lightOverflow); row "no light overflow";
//   - a scale-in removes, of SolverHeuristic one instance of the most
//     expensive type (ties: the lower throughput), of SolverExact the set
//     that saves the most (the ILP restricted to X_i <= 0), keeping
//     W_f / capacity <= threshold - ScaleInHysteresis;
//   - stabilized scale-in (burst.go, rule 2): while the highest W of the
//     last ScaleInStabilization is above W_f, only what the removal at
//     that peak also takes; Policy.DisableStabilizedScaleIn, row "no
//     stabilized scale-in";
//   - make-before-break replacement and consolidation (replace.go): a
//     decision that would do nothing may swap instances of one column for
//     another, or move a lone instance onto a GPU in use;
//     Policy.Replacement and Policy.Consolidation, rows "+ make-before-break
//     replacement" and "+ consolidation".
//
// Neither solver switches the type of a running instance: an action only
// adds or only removes; a replacement launches first and removes later.

// plan fills act with the move m planned by solver for obs at forecast f.
func (a *Autoscaler) plan(solver Solver, obs Observation, f forecast, act Action, m move) Action {
	switch m.kind {
	case moveScaleOut:
		act = a.scaleOut(solver, obs, f, act, m.trigger)
	case moveReplacement:
		act = a.continueReplacement(obs, f, act, m.reason)
	case moveHold:
		act.Reason = m.reason
	case moveScaleIn:
		if m.reason != "" {
			act.Reason = m.reason
		} else {
			act = a.scaleIn(solver, obs, f, act, m.within)
		}
		act = a.startReplacement(obs, f, act)
	}
	if act.Replacement == nil && a.replacing != nil {
		// A scale-out during a replacement: it stays in flight.
		rp := *a.replacing
		act.Replacement = &rp
	}
	return act
}

// scaleOut fills act with the scale-out that solver computes for the given
// trigger and the forecast arrival rate f.w, or with NoFeasibleType when no
// GPU type passes the SLO check and has room.
func (a *Autoscaler) scaleOut(solver Solver, obs Observation, f forecast, act Action, trigger string) Action {
	p := a.Policy
	types := obs.Types

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

	offered, reason := lightOnlyWhileQuiet(obs, f.w/p.SaturationThreshold, trigger)
	amount := solver.ScaleOut(Request{Observation: withRate(offered, f.w), Policy: p, Reason: reason})
	amount = lightOverflow(solver, obs, offered, f.w, p, amount)
	obs = offered
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
// 2: stabilize) unless Policy.DisableStabilizedScaleIn, or None with the
// solver's reason when no instance may go; within starts the Reason.
func (a *Autoscaler) scaleIn(solver Solver, obs Observation, f forecast, act Action, within string) Action {
	p := a.Policy
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

// lightOverflow completes a scale-out that lightOnlyWhileQuiet held to
// whole GPUs (or to one light instance per flavor) and that left part of
// the deficit uncovered because no free GPU fits more: the rest is planned
// on the light columns of obs without that limit, on top of amount, and
// the reason says so. A deficit left uncovered is requests lost for
// certain until capacity frees up, while a light instance on a GPU in use
// costs its share of a GPU that is billed anyway: in a full fleet a
// service bursting from idle finds no empty GPU but room on many shared
// ones. The light columns' slots that the whole instances just took (an
// empty GPU counts a slot for each column of its type) are not offered
// again. amount is returned as it is when it covers the deficit, when
// lightOnlyWhileQuiet withheld nothing, when the policy turns the rule off
// (Policy.DisableLightOverflow) or when the light columns add nothing.
//
// obs is the observation at the forecast rate w before
// lightOnlyWhileQuiet, offered the one it returned.
func lightOverflow(solver Solver, obs, offered Observation, w float64, p Policy, amount Amount) Amount {
	if p.DisableLightOverflow {
		return amount
	}
	pr, err := buildProblem(withRate(offered, w), p, ilp.ScaleOutOnly)
	if err != nil || pr.Uncovered(amount.Delta) <= 0 {
		return amount
	}
	if pr.MaxReplicas > 0 && totalRunning(offered.Types)+sum(amount.Delta) >= pr.MaxReplicas {
		return amount
	}
	taken := map[string]int{} // whole instances added per GPU type
	withheld := false
	for i, t := range obs.Types {
		if t.Light {
			withheld = withheld || offered.Types[i].MaxAdditional < t.MaxAdditional
		} else if i < len(amount.Delta) {
			taken[t.GPUType] += amount.Delta[i]
		}
	}
	if !withheld {
		return amount
	}
	rest := obs
	rest.Types = slices.Clone(obs.Types)
	for i := range rest.Types {
		t := &rest.Types[i]
		added := 0
		if i < len(amount.Delta) {
			added = amount.Delta[i]
		}
		t.Running += added
		if t.Light {
			t.MaxAdditional = max(0, t.MaxAdditional-taken[lightColumnType(t.GPUType)])
		} else {
			t.MaxAdditional = max(0, t.MaxAdditional-added)
		}
	}
	more := solver.ScaleOut(Request{Observation: withRate(rest, w), Policy: p, Reason: "light overflow"})
	if isZero(more.Delta) {
		return amount
	}
	delta := slices.Clone(amount.Delta)
	if delta == nil {
		delta = make([]int, len(obs.Types))
	}
	for i := range delta {
		if i < len(more.Delta) {
			delta[i] += more.Delta[i]
		}
	}
	return Amount{Delta: delta, Reason: amount.Reason + "; " + more.Reason + " (whole GPUs cannot cover the deficit: light instances on GPUs with room)"}
}
