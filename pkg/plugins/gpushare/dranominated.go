package gpushare

import (
	"cmp"
	"context"
	"slices"

	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/dra"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// Nominated pods in DRA mode, by annotation mode's rule (accounting.go's
// countNominated): a preemptor nominated to a node holds the GPU it will
// take there, so that a pod of lower priority does not take what its
// preemption freed.

// nominatedOn are the pods among the node's that the framework
// (RunFilterPluginsWithNominatedPods) or withNominated added because they
// are nominated to it: not bound or assumed (no spec.nodeName), not
// terminal, with a hetsev claim, and not reserved on this node by this
// plugin.
func (p *DRAGPUShare) nominatedOn(nodeInfo fwk.NodeInfo, node string) []*v1.Pod {
	var out []*v1.Pod
	for _, pi := range nodeInfo.GetPods() {
		pod := pi.GetPod()
		if pod.Spec.NodeName != "" || gpuinventory.Terminal(pod) || !dra.HasHetsevClaim(pod) {
			continue
		}
		if r, ok := p.reservationOf(pod.UID); ok && r.node == node {
			continue
		}
		out = append(out, pod)
	}
	return out
}

// nominatedDemand is a nominated pod's GPU demand when its hetsev claim is
// known and not allocated: the claim's GPU memory request with the pod's
// model, busy share and inflation limit (dra.PodShare). A claim already
// allocated holds its device through its allocation (the claims'
// usages), so the pod adds nothing; a claim not created or not found yet
// leaves the pod's hetsev.io/gpu-memory annotation, if any, as its memory.
func (p *DRAGPUShare) nominatedDemand(pod *v1.Pod) (gpuinventory.Demand, bool) {
	d, _ := dra.PodShare(pod)
	c := p.hetsevClaimOf(pod)
	if c == nil {
		if a, ok, err := gpuinventory.DemandOf(pod); ok && err == nil && a.MemoryMiB > 0 {
			d.MemoryMiB = a.MemoryMiB
			return d, true
		}
		return d, false
	}
	if c.Status.Allocation != nil {
		return d, false
	}
	_, q, ok, err := dra.MemoryRequest(c, v1alpha1.DeviceClassName)
	if !ok || err != nil {
		return d, false
	}
	d.MemoryMiB = dra.ToMiB(q.Value())
	return d, true
}

// countNominatedDRA counts each nominated pod, highest priority first, on
// occ: on the GPU placement picks for it now, when one fits; otherwise on
// the GPU placement picks once the pods it may preempt (lower priority)
// are gone, counted on top of them (that GPU then fits nothing until they
// have left); otherwise not at all (the nomination is stale).
func (p *DRAGPUShare) countNominatedDRA(ctx context.Context, s *draState, nodeInfo fwk.NodeInfo, occ *gpuinventory.Occupancy, waiting []*v1.Pod) {
	slices.SortStableFunc(waiting, func(a, b *v1.Pod) int {
		return cmp.Compare(corev1helpers.PodPriority(b), corev1helpers.PodPriority(a))
	})
	pl := p.placer.OnNode(nodeInfo.Node().GetLabels())
	var counted []gpuinventory.Placement
	for _, pod := range waiting {
		d, ok := p.nominatedDemand(pod)
		if !ok {
			continue
		}
		idx, _, _, ok := pl.Pick(occ.GPUs, d)
		if !ok {
			prio := corev1helpers.PodPriority(pod)
			_, after := p.accountDRANode(ctx, s, nodeInfo, &prio)
			if after != nil {
				for _, c := range counted {
					after.Place(c)
				}
				idx, _, _, ok = pl.Pick(after.GPUs, d)
			}
		}
		if !ok {
			klog.FromContext(ctx).V(4).Info("nominated pod fits no GPU of the node even without the pods it may preempt; not counted", "plugin", Name, "node", occ.NodeName, "pod", klog.KObj(pod))
			continue
		}
		occ.Place(gpuinventory.Placement{Index: idx, Demand: d})
		counted = append(counted, gpuinventory.Placement{Index: idx, Demand: d})
	}
}
