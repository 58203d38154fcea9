package scaler

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
)

// DefaultDecisionHistory is --decision-history's default: the decisions
// status.decisions keeps.
const DefaultDecisionHistory = 10

// MaxDecisionHistory is the most --decision-history accepts: the CRD's
// maxItems of status.decisions.
const MaxDecisionHistory = 100

// columnSeen is what a decision saw of one column (svc.types[i]): the
// free slots capacityFor counted, the GPUs it looked on, and whether
// unschedulable replicas made the decision offer the column no room.
type columnSeen struct {
	slots, gpus int
	noRoom      bool
	// idle: a light flavor's column on a type with no GPU in use by another
	// model, offered no slots.
	idle bool
}

// typeDecisions is status' per-column account of a decision: the
// replicas of deps after it, the capacity it plans with, T_i (N_i + X_i)
// in requests/s from obs and act, the free slots seen, and the price per
// request/s over the lowest of the columns.
func typeDecisions(svc *service, deps []*appsv1.Deployment, obs heterogeneity.Observation, act heterogeneity.Action, seen []columnSeen) []v1alpha1.TypeDecision {
	cheapest := math.Inf(1)
	for _, t := range obs.Types {
		if t.ThroughputRPS > 0 {
			cheapest = min(cheapest, t.PriceUSDPerHour/t.ThroughputRPS)
		}
	}
	out := make([]v1alpha1.TypeDecision, 0, len(svc.types))
	for i, p := range svc.types {
		td := v1alpha1.TypeDecision{GPUType: p.column(), Replicas: replicasOf(deps[i])}
		if i < len(seen) {
			td.FreeSlots = int32(seen[i].slots)
		}
		if i < len(obs.Types) {
			t := obs.Types[i]
			x := 0
			if i < len(act.Delta) {
				x = act.Delta[i]
			}
			td.CapacityRPS = strconv.FormatFloat(t.ThroughputRPS*float64(max(t.Running+x, 0)), 'f', 2, 64)
			if t.ThroughputRPS > 0 && cheapest > 0 && !math.IsInf(cheapest, 0) {
				td.CostRatio = strconv.FormatFloat(t.PriceUSDPerHour/t.ThroughputRPS/cheapest, 'f', 2, 64)
			}
		}
		out = append(out, td)
	}
	return out
}

// decisionAlternative is act's rejected alternative as status keeps it,
// with columns named as in svc; nil when it has none.
func decisionAlternative(svc *service, act heterogeneity.Action) *v1alpha1.DecisionAlternative {
	alt := act.Alternative
	if alt == nil {
		return nil
	}
	out := &v1alpha1.DecisionAlternative{Delta: map[string]int32{}, Objective: formatObjective(alt.Objective), Why: alt.Why}
	for i, x := range alt.Delta {
		if x != 0 && i < len(svc.types) {
			out.Delta[svc.types[i].column()] = int32(x)
		}
	}
	return out
}

// formatObjective writes an objective in USD/h as status keeps it.
func formatObjective(v float64) string {
	return strconv.FormatFloat(v, 'f', 4, 64)
}

// roomWords says, for a scale-out or a NoFeasibleType, how much room each
// column had: the free slots a scale-out takes of a column, and each
// column with none, e.g. "T4: 2 of 5 free slots taken; V100-32GB full: 0
// free slots on 8 GPUs". Empty for other actions.
func roomWords(svc *service, act heterogeneity.Action, seen []columnSeen) string {
	if act.Kind != heterogeneity.ActionScaleOut && act.Kind != heterogeneity.ActionNoFeasibleType {
		return ""
	}
	var parts []string
	for i, p := range svc.types {
		if i >= len(seen) {
			break
		}
		s, x := seen[i], 0
		if i < len(act.Delta) {
			x = act.Delta[i]
		}
		switch {
		case s.noRoom:
			parts = append(parts, fmt.Sprintf("%s full: replicas unschedulable (%d free slots counted on %d GPUs)", p.column(), s.slots, s.gpus))
		case s.idle:
			parts = append(parts, fmt.Sprintf("%s: no %s GPU in use to share", p.column(), p.gpuType.Name))
		case s.slots == 0:
			parts = append(parts, fmt.Sprintf("%s full: 0 free slots on %d GPUs", p.column(), s.gpus))
		case x > 0:
			parts = append(parts, fmt.Sprintf("%s: %d of %d free slots taken", p.column(), x, s.slots))
		}
	}
	return strings.Join(parts, "; ")
}

// recordDecision makes d status' last decision, and the newest of
// status.decisions (oldest first, at most history of them; none when
// history <= 0), unless it repeats the last one's action without changing
// replicas (then only the decision counter records it, and status is not
// rewritten for it).
func recordDecision(st *v1alpha1.ModelServiceStatus, d v1alpha1.Decision, history int) {
	if p := st.LastDecision; p != nil && p.Action == d.Action && len(p.Delta) == 0 && len(d.Delta) == 0 && equality.Semantic.DeepEqual(p.Replacement, d.Replacement) {
		return
	}
	st.LastDecision = &d
	if history <= 0 {
		st.Decisions = nil
		return
	}
	kept := append(st.Decisions, *d.DeepCopy())
	st.Decisions = append([]v1alpha1.Decision(nil), kept[max(len(kept)-history, 0):]...)
}

// isNoChange is whether delta adds and removes no instance.
func isNoChange(delta []int) bool {
	for _, x := range delta {
		if x != 0 {
			return false
		}
	}
	return true
}
