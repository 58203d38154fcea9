package scaler

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
)

// unschedulable is what keeps a Deployment's replicas from being placed:
// pods the scheduler found no room for or is not scheduling, and pods the
// ReplicaSet could not create.
type unschedulable struct {
	// pods counts the Deployment's pods that are not bound to a node and
	// are not being placed (podNotScheduled): the scheduler found no room
	// (PodScheduled False, Unschedulable) or failed (SchedulerError), a
	// scheduling gate holds them, or no scheduler has tried them within
	// notScheduledGrace.
	pods int
	// message says why for one of them, e.g. the scheduler's "0/4 nodes
	// are available: ...".
	message string
	// missing counts the replicas the ReplicaSet could not create (the
	// Deployment's ReplicaFailure condition, e.g. a quota exceeded), with
	// the condition's message.
	missing        int
	missingMessage string
	// notStarting is what its pods bound to a node that cannot start say
	// (notStartingOf); N_i leaves them out too.
	notStarting notStarting
}

// absent is how many of the Deployment's replicas add no capacity: those
// not being placed, not created, or bound but not starting.
func (u unschedulable) absent() int { return u.pods + u.missing + u.notStarting.pods }

// notScheduledGrace is how long a pod may wait for a scheduler's first
// attempt before it counts as not being scheduled: hetsev-scheduler tries
// a new pod within seconds, so a minute without PodScheduled means no
// scheduler of that name runs (or it is stuck).
const notScheduledGrace = time.Minute

// podNotScheduled says whether unbound pod p is not being placed at now,
// and why: gated (spec.schedulingGates), refused by the scheduler
// (PodScheduled False with reason Unschedulable or SchedulerError), or
// not tried for notScheduledGrace since its creation. Bound, terminating
// and finished pods, and pods the scheduler is still to try, are not.
func podNotScheduled(p *v1.Pod, now time.Time) (string, bool) {
	if p.Spec.NodeName != "" || p.DeletionTimestamp != nil || gpuinventory.Terminal(p) {
		return "", false
	}
	if len(p.Spec.SchedulingGates) > 0 {
		gates := make([]string, len(p.Spec.SchedulingGates))
		for i, g := range p.Spec.SchedulingGates {
			gates[i] = g.Name
		}
		return "held by scheduling gate(s) " + strings.Join(gates, ", "), true
	}
	for _, c := range p.Status.Conditions {
		if c.Type != v1.PodScheduled {
			continue
		}
		switch {
		case c.Status != v1.ConditionFalse:
			return "", false
		case c.Reason == v1.PodReasonUnschedulable:
			return c.Message, true
		case c.Reason == v1.PodReasonSchedulerError:
			return "scheduler error: " + c.Message, true
		}
		return "", false
	}
	if age := now.Sub(p.CreationTimestamp.Time); !p.CreationTimestamp.IsZero() && age >= notScheduledGrace {
		return fmt.Sprintf("not tried by scheduler %q for %v: is it running?", p.Spec.SchedulerName, age.Truncate(time.Second)), true
	}
	return "", false
}

// unschedulableOf counts d's pods (from the cache) that are not being
// placed at now (podNotScheduled) and the replicas its ReplicaSet could
// not create.
func (r *Reconciler) unschedulableOf(ctx context.Context, d *appsv1.Deployment, now time.Time) (unschedulable, error) {
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return unschedulable{}, fmt.Errorf("selector of deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	var pods v1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(d.Namespace), client.MatchingLabelsSelector{Selector: sel}, client.UnsafeDisableDeepCopy); err != nil {
		return unschedulable{}, fmt.Errorf("pods of deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	var u unschedulable
	for i := range pods.Items {
		if why, ok := podNotScheduled(&pods.Items[i], now); ok {
			u.pods++
			if u.message == "" {
				u.message = why
			}
		}
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentReplicaFailure && c.Status == v1.ConditionTrue {
			u.missing = max(int(replicasOf(d))-int(d.Status.Replicas), 0)
			u.missingMessage = c.Message
		}
	}
	return u, nil
}

// runningOf is N_i of Deployment d, the instances that are capacity now or
// soon: its desired replicas less those not being placed or not created
// and those bound to a node that cannot start (u.absent). Pods bound to a
// node and still within their launch time count, and so do replicas whose
// pods are not yet created or, within notScheduledGrace, not yet tried by
// the scheduler: the ReplicaSet and the scheduler act seconds after a
// scale-out, and counting those as absent would scale out twice.
func runningOf(d *appsv1.Deployment, u unschedulable) int {
	return max(int(replicasOf(d))-u.absent(), 0)
}

// targetReplicas is each Deployment's replicas after act, and whether it
// removes a replica that adds no capacity as a surplus (the caller records
// that as a scale-in: heterogeneity.Autoscaler.RecordSurplusRemoval). It
// is each Deployment's replicas plus act's Delta, except for the replicas
// the scheduler found no room for and those bound but not starting
// (u.absent), which add no capacity (N_i leaves them out):
//   - one of them goes per decision when the running instances carry the
//     load and the scale-in brakes allow it (held, from
//     heterogeneity.Autoscaler.SurplusHeld, is ""): act is no action, with
//     at least MinReplicas running after it. The autoscaler removes only
//     running instances, so a type with none running (N_i = 0) would
//     otherwise keep them for ever; one at a time, through the brakes,
//     because a replica that does not start may be a serving one that
//     restarts, and a blip in its readiness must not empty a type;
//   - a scale-out keeps at most as many of a type's not-starting replicas
//     as it adds to that type, and never lowers a type's replicas;
//   - beyond the policy's MaxReplicas they go whatever the load
//     (capAbsent).
//
// Otherwise, while the load needs more (a scale-out due or waiting for
// its cool-down), they stay: room may come (a node added, a pod gone), a
// node may recover; and so do those of the column a replacement in flight
// adds to. The ReplicaSet deletes unbound, then Pending, then not-Ready
// pods first (newest first among equals), so removing them takes those
// before any Ready instance.
func targetReplicas(deps []*appsv1.Deployment, u []unschedulable, act heterogeneity.Action, obs heterogeneity.Observation, pol heterogeneity.Policy, held string) ([]int32, bool) {
	running := 0
	for i := range deps {
		running += runningOf(deps[i], u[i]) + act.Delta[i]
	}
	surplus := act.Kind == heterogeneity.ActionNone && held == "" && running >= pol.MinReplicas
	removed := false
	out := make([]int32, len(deps))
	for i, d := range deps {
		base := int(replicasOf(d))
		switch {
		case surplus && !removed && u[i].absent() > 0 && !replacing(act, obs, i):
			base--
			removed = true
		case act.Kind == heterogeneity.ActionScaleOut && u[i].notStarting.pods > 0 && !replacing(act, obs, i):
			// A scale-out keeps at most as many replicas that cannot
			// start as it adds to the type: the new pods may land on a
			// node that works, and the stuck ones may yet start; kept
			// all, they would grow the service at every decision for as
			// long as the cause (an image no node has) lasts.
			stuck := u[i].notStarting.pods
			base = max(base-stuck, 0) + min(stuck, max(act.Delta[i], 0))
		}
		out[i] = int32(max(base+act.Delta[i], 0))
		if act.Kind == heterogeneity.ActionScaleOut {
			// A scale-out never lowers a type: its not-starting replicas
			// may be serving ones that restart (a registry outage
			// crash-looping them), which a scale-out must not delete.
			out[i] = max(out[i], replicasOf(d))
		}
	}
	capAbsent(out, u, pol.MaxReplicas)
	return out, removed
}

// capAbsent lowers target so that the replicas of all types stay within
// maxReplicas (0: no cap), taking only replicas that add no capacity
// (u.absent), in type order. The policy caps the instances it counts
// (N_i); without this, replicas that never start (an image no node has)
// would stay beside each scale-out, and the service would grow at every
// decision. The ReplicaSet removes unbound and not-Ready pods first.
func capAbsent(target []int32, u []unschedulable, maxReplicas int) {
	if maxReplicas <= 0 {
		return
	}
	total := 0
	for _, n := range target {
		total += int(n)
	}
	for i := range target {
		if total <= maxReplicas {
			return
		}
		drop := min(total-maxReplicas, u[i].absent(), int(target[i]))
		target[i] -= int32(drop)
		total -= drop
	}
}

// replacing reports whether column i receives the instances of a
// replacement in flight: its Pending replicas are the replacement's own,
// waiting for room, and go only at its timeout.
func replacing(act heterogeneity.Action, obs heterogeneity.Observation, i int) bool {
	rp := act.Replacement
	if rp == nil || i >= len(obs.Types) || obs.Types[i].GPUType != rp.To {
		return false
	}
	switch act.ReplacementPhase {
	case heterogeneity.ReplacementCompleted, heterogeneity.ReplacementTimedOut, heterogeneity.ReplacementAbandoned:
		return false
	}
	return true
}

// removedUnschedulable names, for act's reason, the unschedulable or not
// starting replicas target drops beyond act's Delta ("2 of
// T4-deployment"), "" if none.
func removedUnschedulable(deps []*appsv1.Deployment, u []unschedulable, act heterogeneity.Action, target []int32) string {
	var parts []string
	for i, d := range deps {
		if n := int(replicasOf(d)) + act.Delta[i] - int(target[i]); n > 0 && u[i].absent() > 0 {
			parts = append(parts, fmt.Sprintf("%d of %s", n, d.Name))
		}
	}
	return strings.Join(parts, ", ")
}

// sumAbsent is the replicas of all types that add no capacity (absent).
func sumAbsent(u []unschedulable) int {
	n := 0
	for _, x := range u {
		n += x.absent()
	}
	return n
}

// sumReplicas is the desired replicas of deps together.
func sumReplicas(deps []*appsv1.Deployment) int {
	n := 0
	for _, d := range deps {
		n += int(replicasOf(d))
	}
	return n
}

// sumDelta is act's change of replicas over all types.
func sumDelta(act heterogeneity.Action) int {
	n := 0
	for _, d := range act.Delta {
		n += d
	}
	return n
}
