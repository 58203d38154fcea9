package heterogeneity

import (
	"fmt"
	"strings"
	"time"
)

// ActionKind says what a decision does.
type ActionKind string

// Kinds of Action.
const (
	// ActionNone leaves the service as it is.
	ActionNone ActionKind = "None"
	// ActionScaleOut adds instances: every Delta entry is >= 0.
	ActionScaleOut ActionKind = "ScaleOut"
	// ActionScaleIn removes instances: every Delta entry is <= 0. The
	// heuristic removes exactly one instance (one entry is -1); the exact
	// solver (Policy.Solver = SolverExact) removes one or more.
	ActionScaleIn ActionKind = "ScaleIn"
	// ActionReplace is a step of a make-before-break replacement
	// (Policy.Replacement, replace.go): its start adds the new instances
	// (Delta >= 0), its later steps remove the old instances they replace
	// or, after a timeout, the new ones not ready (Delta <= 0).
	ActionReplace ActionKind = "Replace"
	// ActionNoFeasibleType means a scale-out is needed but no GPU type meets
	// the latency SLO and fits the free resources; Delta is all zero.
	ActionNoFeasibleType ActionKind = "NoFeasibleType"
)

// Action is the outcome of one decision.
type Action struct {
	Kind ActionKind
	// Delta holds X_i, instances to add (> 0) or remove (< 0) per type,
	// aligned with Observation.Types. Positive and negative entries never
	// mix: a running instance never changes type; a replacement
	// (ActionReplace) adds the new instances in one action and removes
	// the old in later ones.
	Delta []int
	// Saturation is W / sum T_i N_i before the action (+Inf when W > 0 and
	// nothing runs).
	Saturation float64
	// Objective is the HetSev 4.1 objective of Delta, in USD/h (negative
	// for a scale-in: the cost saved).
	Objective float64
	// Reason explains the decision for humans and names the solver that
	// computed the amount, e.g. "saturation 2.75 > 0.80 for 30s: +3 T4
	// (objective 1.89 USD/h); solver heuristic".
	Reason string
	// Replacement is the replacement this decision started or continued
	// (its state after the decision, or at its end), nil when none is in
	// flight; ReplacementPhase says what the decision did to it, "" when
	// it only waited.
	Replacement      *Replacement
	ReplacementPhase ReplacementPhase
	// Alternative is, for a scale-out, the best mix the solver considered
	// and did not choose (see alternativeOf), nil when it had none.
	Alternative *Alternative

	// at is the observation's time, which Autoscaler.Commit records.
	at time.Time
}

// objective is the objective of HetSev 4.1 for the action x over types, in
// USD/h: what Action.Objective reports. It is ilp.Objective, summed over
// ilp.Type.Cost without converting the slice.
func objective(types []TypeState, x []int, lambda float64) float64 {
	var sum float64
	for i := range min(len(types), len(x)) {
		sum += types[i].ilpType().Cost(x[i], lambda)
	}
	return sum
}

// formatDelta writes non-zero entries as "+3 T4, -1 V100-32GB".
func formatDelta(types []TypeState, x []int) string {
	var parts []string
	for i, v := range x {
		if v != 0 && i < len(types) {
			parts = append(parts, fmt.Sprintf("%+d %s", v, types[i].GPUType))
		}
	}
	return strings.Join(parts, ", ")
}

func sum(x []int) int {
	n := 0
	for _, v := range x {
		n += v
	}
	return n
}

func isZero(x []int) bool {
	for _, v := range x {
		if v != 0 {
			return false
		}
	}
	return true
}
