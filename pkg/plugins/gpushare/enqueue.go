package gpushare

import (
	"context"
	"fmt"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/hetsev/hetsev/pkg/dra"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// EventsToRegister implements fwk.EnqueueExtensions: the cluster events
// that can make a pod this plugin rejected schedulable, each with a
// queueing hint that skips the events that cannot (a pod that holds no
// GPU, a node label unrelated to GPUs), so that the scheduler does not
// retry every GPU pod on every change in the cluster (podAndNodeEvents).
func (p *AnnotationGPUShare) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return podAndNodeEvents(), nil
}

// EventsToRegister implements fwk.EnqueueExtensions: annotation mode's
// events (podAndNodeEvents) and also: a ResourceClaim is added, changes or
// is deleted (a pod's claim was generated, a share was deallocated or
// freed), a ResourceSlice is added or changes (GPUs published, capacity
// grown), a DeviceClass is added or changes, and a pod's generated claims
// are recorded in its status.
func (p *DRAGPUShare) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return append(podAndNodeEvents(),
		fwk.ClusterEventWithHint{Event: fwk.ClusterEvent{Resource: fwk.ResourceClaim, ActionType: fwk.Add | fwk.Update | fwk.Delete}},
		fwk.ClusterEventWithHint{Event: fwk.ClusterEvent{Resource: fwk.ResourceSlice, ActionType: fwk.Add | fwk.Update}},
		fwk.ClusterEventWithHint{Event: fwk.ClusterEvent{Resource: fwk.DeviceClass, ActionType: fwk.Add | fwk.Update}},
		fwk.ClusterEventWithHint{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.UpdatePodGeneratedResourceClaim}},
	), nil
}

// podAndNodeEvents are the events both GPU modes register, with their
// queueing hints:
//
//   - a pod that held a GPU share is deleted (or becomes terminal, or its
//     binding failed and the scheduler forgot it), or a preemptor
//     nominated to a node is: its GPU memory and model slot are free;
//   - a bound pod's GPU annotations change (hetsev.io/gpu-memory,
//     hetsev.io/model, hetsev.io/gpu-index, hetsev.io/busy-share,
//     hetsev.io/max-inflation), or the
//     rejected pod's own GPU demand does (a malformed or too large
//     hetsev.io/gpu-memory or hetsev.io/busy-share fixed);
//   - a node with readable GPU labels is added, or a node's GFD labels
//     (nvidia.com/gpu.count, nvidia.com/gpu.memory) become readable or
//     grow, or a node joins the GPU pool (hetsev.io/gpu-pool=true).
func podAndNodeEvents() []fwk.ClusterEventWithHint {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}, QueueingHintFn: isSchedulableAfterPodDeleted},
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Update}, QueueingHintFn: isSchedulableAfterPodUpdated},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel}, QueueingHintFn: isSchedulableAfterNodeChange},
	}
}

// isSchedulableAfterPodDeleted queues the pod when the deleted pod held, or
// was promised, a GPU share.
func isSchedulableAfterPodDeleted(logger klog.Logger, pod *v1.Pod, oldObj, _ interface{}) (fwk.QueueingHint, error) {
	deleted, ok := oldObj.(*v1.Pod)
	if !ok {
		return fwk.Queue, fmt.Errorf("%s: pod deletion with a %T, want *v1.Pod", Name, oldObj)
	}
	if deleted.Spec.NodeName == "" && deleted.Status.NominatedNodeName == "" {
		logger.V(5).Info("deleted pod was neither bound nor nominated", "plugin", Name, "pod", klog.KObj(pod), "deleted", klog.KObj(deleted))
		return fwk.QueueSkip, nil
	}
	if !holdsGPUShare(deleted) {
		logger.V(5).Info("deleted pod held no GPU share", "plugin", Name, "pod", klog.KObj(pod), "deleted", klog.KObj(deleted))
		return fwk.QueueSkip, nil
	}
	logger.V(5).Info("a GPU share was freed", "plugin", Name, "pod", klog.KObj(pod), "deleted", klog.KObj(deleted), "node", deleted.Spec.NodeName)
	return fwk.Queue, nil
}

// isSchedulableAfterPodUpdated queues the pod when its own GPU demand
// changed, or when a bound pod's GPU annotations changed or it finished.
func isSchedulableAfterPodUpdated(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	oldPod, okOld := oldObj.(*v1.Pod)
	newPod, okNew := newObj.(*v1.Pod)
	if !okOld || !okNew {
		return fwk.Queue, fmt.Errorf("%s: pod update from %T to %T, want *v1.Pod", Name, oldObj, newObj)
	}
	if newPod.UID == pod.UID {
		if gpuAnnotationsDiffer(oldPod, newPod, v1alpha1.AnnotationGPUMemory, v1alpha1.AnnotationModel, v1alpha1.AnnotationBusyShare, v1alpha1.AnnotationMaxInflation) {
			logger.V(5).Info("the pod's GPU demand changed", "plugin", Name, "pod", klog.KObj(pod))
			return fwk.Queue, nil
		}
		return fwk.QueueSkip, nil
	}
	if newPod.Spec.NodeName == "" || !holdsGPUShare(oldPod) {
		return fwk.QueueSkip, nil
	}
	if gpuinventory.Terminal(newPod) && !gpuinventory.Terminal(oldPod) {
		logger.V(5).Info("a pod holding a GPU share finished", "plugin", Name, "pod", klog.KObj(pod), "finished", klog.KObj(newPod))
		return fwk.Queue, nil
	}
	if gpuAnnotationsDiffer(oldPod, newPod, v1alpha1.AnnotationGPUMemory, v1alpha1.AnnotationModel, v1alpha1.AnnotationGPUIndex, v1alpha1.AnnotationBusyShare, v1alpha1.AnnotationMaxInflation) {
		logger.V(5).Info("a bound pod's GPU annotations changed", "plugin", Name, "pod", klog.KObj(pod), "updated", klog.KObj(newPod))
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

// isSchedulableAfterNodeChange queues the pod when a node with readable GPU
// labels appears, or a node's GPU labels become readable or grow (more
// GPUs, more memory per GPU). Fewer or smaller GPUs, or labels unrelated
// to GPUs, make no rejected pod fit.
func isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	newNode, ok := newObj.(*v1.Node)
	if !ok {
		return fwk.Queue, fmt.Errorf("%s: node event with a %T, want *v1.Node", Name, newObj)
	}
	oldNode, _ := oldObj.(*v1.Node) // nil for an added node
	if oldNode != nil && gpuinventory.InGPUPool(newNode) && !gpuinventory.InGPUPool(oldNode) {
		// With gpuPool on, Filter refuses nodes outside the pool; in DRA
		// mode the node's GPUs are in ResourceSlices, not its labels.
		logger.V(5).Info("a node joined the GPU pool", "plugin", Name, "pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return fwk.Queue, nil
	}
	now, err := gpuinventory.NodeGPUsOf(newNode)
	if err != nil {
		return fwk.QueueSkip, nil
	}
	if oldNode == nil {
		logger.V(5).Info("a node with GPUs was added", "plugin", Name, "pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return fwk.Queue, nil
	}
	before, err := gpuinventory.NodeGPUsOf(oldNode)
	if err != nil || now.Count > before.Count || now.MemoryMiB > before.MemoryMiB {
		logger.V(5).Info("a node's GPU labels became readable or grew", "plugin", Name, "pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

// holdsGPUShare is whether the pod carries any of hetsev's GPU annotations,
// which is what makes gpuinventory's occupancy rule count it.
func holdsGPUShare(pod *v1.Pod) bool {
	if gpuinventory.Terminal(pod) {
		return false
	}
	for _, k := range []string{v1alpha1.AnnotationGPUMemory, v1alpha1.AnnotationModel, v1alpha1.AnnotationGPUIndex} {
		if _, ok := pod.Annotations[k]; ok {
			return true
		}
	}
	return false
}

func gpuAnnotationsDiffer(a, b *v1.Pod, keys ...string) bool {
	for _, k := range keys {
		va, oka := a.Annotations[k]
		vb, okb := b.Annotations[k]
		if oka != okb || va != vb {
			return true
		}
	}
	return false
}

// signKey names this plugin's part of a pod's signature: the GPU demand
// that Filter and Score depend on (the rest of the pod is theirs only
// through the node).
const signKey = "v1.Pod.Annotations[hetsev.io/model,hetsev.io/gpu-memory,hetsev.io/busy-share,hetsev.io/max-inflation].Demand()"

// SignPod implements fwk.SignPlugin, which keeps the scheduler's
// opportunistic batching on (KEP-5598): two pods with the same GPU demand
// (model, GPU memory in MiB, busy share, inflation limit) are filtered and scored alike on every node.
// Pods without a GPU share sign as such; a pod with malformed annotations
// is not signed (PreFilter rejects it anyway).
func (p *AnnotationGPUShare) SignPod(_ context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return signDemand(pod)
}

// SignPod implements fwk.SignPlugin: pods with a hetsev claim are not
// signed, their GPU memory is in the claim; others sign as in annotation
// mode.
func (p *DRAGPUShare) SignPod(_ context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	if dra.HasHetsevClaim(pod) {
		return nil, fwk.NewStatus(fwk.Unschedulable, errUnsigned.Error())
	}
	return signDemand(pod)
}

// signDemand is a pod's signature fragment: its GPU demand from its
// annotations.
func signDemand(pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	d, ok, err := gpuinventory.DemandOf(pod)
	if err != nil {
		return nil, fwk.NewStatus(fwk.Unschedulable, err.Error())
	}
	if !ok {
		return []fwk.SignFragment{{Key: signKey, Value: nil}}, nil
	}
	return []fwk.SignFragment{{Key: signKey, Value: [4]any{d.Identity(), d.MemoryMiB, d.BusyShare, d.MaxInflation}}}, nil
}
