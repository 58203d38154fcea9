package scaler

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// unschedulable is what the scheduler said of a Deployment's pods it found
// no room for.
type unschedulable struct {
	// pods counts the Deployment's pods that are not bound to a node and
	// whose PodScheduled condition is False with reason Unschedulable.
	pods int
	// message is the scheduler's message on one of them, e.g. "0/4 nodes
	// are available: ...".
	message string
}

// unschedulableOf counts d's pods (from the cache) that the scheduler
// found no room for. A pod that is bound, or not yet tried by the
// scheduler, or terminating, is not counted.
func (r *Reconciler) unschedulableOf(ctx context.Context, d *appsv1.Deployment) (unschedulable, error) {
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
		p := &pods.Items[i]
		if p.Spec.NodeName != "" || p.DeletionTimestamp != nil || gpuinventory.Terminal(p) {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
				u.pods++
				if u.message == "" {
					u.message = c.Message
				}
			}
		}
	}
	return u, nil
}

// runningOf is N_i of Deployment d, the instances that are capacity now or
// soon: its desired replicas less those the scheduler found no room for
// (u). Pods bound to a node and still starting count, and so do replicas
// whose pods are not yet created or tried by the scheduler: the
// ReplicaSet and the scheduler act seconds after a scale-out, and counting
// those as absent would scale out twice.
func runningOf(d *appsv1.Deployment, u unschedulable) int {
	return max(int(replicasOf(d))-u.pods, 0)
}
