package scaler

import (
	"context"
	"fmt"
	"math"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
)

// readyRouted is heterogeneity.TypeState.Ready for the Deployment of
// column: its ready replicas while traffic reaches them, 0 otherwise.
// With the traffic split, traffic reaches a column when the split was
// written (TrafficSplit True) and gives it weight, or when Istio is not
// installed (the Service then sends traffic to every ready pod). st is
// the status stored before the current reconcile, so a column counts one
// decision after a split that gives it weight was written, not in the
// reconcile that writes it, before the proxies can have it. Without the
// split, the Service routes.
// A make-before-break replacement removes old replicas only as far as
// this count covers them.
func (r *Reconciler) readyRouted(d *appsv1.Deployment, column string, st *v1alpha1.ModelServiceStatus) int {
	ready := int(min(d.Status.ReadyReplicas, replicasOf(d)))
	if !r.TrafficSplit {
		return ready
	}
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionTrafficSplit)
	switch {
	case c == nil:
		return 0
	case c.Status == metav1.ConditionFalse && c.Reason == "IstioNotInstalled":
		return ready
	case c.Status != metav1.ConditionTrue || st.TrafficWeights[column] <= 0:
		return 0
	}
	return ready
}

// reportReplacement records a step of a replacement (act.ReplacementPhase):
// an event named for the phase (Normal, Warning for a timeout or an
// abandoned one), the Replacement condition, True while it is in
// flight, False with the phase as reason once it ended, and a count of
// hetsev_scaler_replacements_total by kind (move or swap) and phase.
func (r *Reconciler) reportReplacement(ms *v1alpha1.ModelService, st *v1alpha1.ModelServiceStatus, act heterogeneity.Action) {
	phase := string(act.ReplacementPhase)
	kind := replacementKindSwap
	if act.Replacement.IsMove() {
		kind = replacementKindMove
	}
	replacementsTotal.WithLabelValues(ms.Namespace, ms.Name, kind, phase).Inc()
	switch act.ReplacementPhase {
	case heterogeneity.ReplacementStarted, heterogeneity.ReplacementProgressed:
		r.Recorder.Eventf(ms, v1.EventTypeNormal, phase, "%s", act.Reason)
		setCondition(st, v1alpha1.ConditionReplacement, metav1.ConditionTrue, phase, act.Reason, ms.Generation)
	case heterogeneity.ReplacementCompleted:
		r.Recorder.Eventf(ms, v1.EventTypeNormal, phase, "%s", act.Reason)
		setCondition(st, v1alpha1.ConditionReplacement, metav1.ConditionFalse, phase, act.Reason, ms.Generation)
	default:
		r.Recorder.Eventf(ms, v1.EventTypeWarning, phase, "%s", act.Reason)
		setCondition(st, v1alpha1.ConditionReplacement, metav1.ConditionFalse, phase, act.Reason, ms.Generation)
	}
}

// replacementStatus is rp as status.lastDecision keeps it, with the phase
// of the decision; nil for none.
func replacementStatus(rp *heterogeneity.Replacement, phase heterogeneity.ReplacementPhase) *v1alpha1.Replacement {
	if rp == nil {
		return nil
	}
	return &v1alpha1.Replacement{From: rp.From, To: rp.To, Add: int32(rp.Add), Remove: int32(rp.Remove), Removed: int32(rp.Removed),
		ToBefore: int32(rp.ToBefore), Started: metav1.NewTime(rp.Started.Truncate(0)), Phase: string(phase),
		FloorRPS: floorString(rp.FloorRPS)}
}

// floorString is a replacement's floor as the API's decimal string
// (pattern ^[0-9]+(\.[0-9]+)?$): fixed-point to 1/1000 request/s, never
// an exponent, which the API server would refuse and with it every status
// write. A floor that is not finite is "" (replacementInFlight reads it as
// +Inf, as it was); a negative one is 0.
func floorString(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	return strconv.FormatFloat(max(v, 0), 'f', 3, 64)
}

// replacementInFlight is a replacement status records as in flight
// (status.scalingState.replacement: started or progressed, or waiting),
// for a new leader; nil when none or when rp records its end.
func replacementInFlight(rp *v1alpha1.Replacement) *heterogeneity.Replacement {
	if rp == nil {
		return nil
	}
	switch heterogeneity.ReplacementPhase(rp.Phase) {
	case heterogeneity.ReplacementCompleted, heterogeneity.ReplacementTimedOut, heterogeneity.ReplacementAbandoned:
		return nil
	}
	// A floor that does not parse counts as +Inf: no old replica goes,
	// and the replacement times out.
	floor, err := strconv.ParseFloat(rp.FloorRPS, 64)
	if err != nil {
		floor = math.Inf(1)
	}
	return &heterogeneity.Replacement{From: rp.From, To: rp.To, Add: int(rp.Add), Remove: int(rp.Remove), Removed: int(rp.Removed),
		ToBefore: int(rp.ToBefore), Started: rp.Started.Time, FloorRPS: floor}
}

// MovedPodDeletionCost is the controller.kubernetes.io/pod-deletion-cost
// a consolidation move gives the pod it moves: below the default 0, so
// that of the Ready replicas of its Deployment the ReplicaSet removes it
// first when the move removes one.
const MovedPodDeletionCost = "-1000"

// MarkedForMove reports whether p is a ModelService's pod a consolidation
// move marked (MovedPodDeletionCost): the pod the move empties a GPU of.
func MarkedForMove(p *v1.Pod) bool {
	return p.Labels[v1alpha1.LabelModelService] != "" && p.Annotations[v1.PodDeletionCost] == MovedPodDeletionCost
}

// markMoved gives the pod a consolidation move starting in act moves
// (the first of movable for its column, by name) MovedPodDeletionCost,
// and takes the mark off the column's other marked pods (marked), left
// by a move whose replica write failed: with two marked pods the
// ReplicaSet could remove the one that shares its GPU. Nothing for any
// other decision.
func (r *Reconciler) markMoved(ctx context.Context, svc *service, act heterogeneity.Action, movable, marked [][]string) error {
	i := moveColumn(svc, act, heterogeneity.ReplacementStarted)
	if i < 0 || len(movable[i]) == 0 {
		return nil
	}
	for _, name := range marked[i] {
		if name != movable[i][0] {
			if err := r.setDeletionCost(ctx, svc.obj.Namespace, name, nil); err != nil {
				return err
			}
		}
	}
	cost := MovedPodDeletionCost
	return r.setDeletionCost(ctx, svc.obj.Namespace, movable[i][0], &cost)
}

// unmarkTimedOut takes MovedPodDeletionCost off the marked pods of the
// column of a consolidation move that act ended by its timeout; nothing
// for any other decision.
func (r *Reconciler) unmarkTimedOut(ctx context.Context, svc *service, act heterogeneity.Action, marked [][]string) error {
	i := moveColumn(svc, act, heterogeneity.ReplacementTimedOut)
	if i < 0 {
		return nil
	}
	for _, name := range marked[i] {
		if err := r.setDeletionCost(ctx, svc.obj.Namespace, name, nil); err != nil {
			return err
		}
	}
	return nil
}

// moveColumn is the index into svc.types of the column of the
// consolidation move act reports in phase; -1 when act is no such step.
func moveColumn(svc *service, act heterogeneity.Action, phase heterogeneity.ReplacementPhase) int {
	if act.ReplacementPhase != phase || !act.Replacement.IsMove() {
		return -1
	}
	for i, p := range svc.types {
		if p.column() == act.Replacement.From {
			return i
		}
	}
	return -1
}

// setDeletionCost sets pod's controller.kubernetes.io/pod-deletion-cost
// to cost, or removes it when cost is nil.
func (r *Reconciler) setDeletionCost(ctx context.Context, namespace, name string, cost *string) error {
	value := "null"
	if cost != nil {
		value = strconv.Quote(*cost)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, v1.PodDeletionCost, value)))
	if err := r.Client.Patch(ctx, pod, patch); err != nil {
		return fmt.Errorf("setting the pod-deletion-cost of pod %s/%s for a consolidation move: %w", namespace, name, err)
	}
	return nil
}
