package gpushare

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

var _ fwk.PostFilterPlugin = &DRAGPUShare{}

// PostFilter runs when no node fits the pod. A pod whose hetsev claim is
// already allocated (an earlier attempt wrote it, and binding then failed)
// may only go to that node (PreFilter); if that node can no longer take
// it (its CPU went to another pod, the GPU share is gone), the pod would
// wait for ever. As upstream's DynamicResources does, the claim's
// allocation is then dropped when no other pod uses it, so that the next
// attempt allocates it anew, anywhere. The result is Unschedulable either
// way: the pod is retried.
func (p *DRAGPUShare) PostFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, _ fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	s, ok := draStateFrom(state)
	if !ok || s.allocatedNode == "" {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	for _, r := range s.claim.Status.ReservedFor {
		if r.UID != pod.UID {
			return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("ResourceClaim %s/%s is allocated on node %s and in use by %s", s.claim.Namespace, s.claim.Name, s.allocatedNode, r.Name))
		}
	}
	if err := p.deallocate(ctx, s.claim, pod); err != nil {
		return nil, fwk.AsStatus(fmt.Errorf("deallocating ResourceClaim %s/%s: %w", s.claim.Namespace, s.claim.Name, err))
	}
	klog.FromContext(ctx).V(2).Info("deallocated a claim whose node cannot take its pod", "plugin", Name, "pod", klog.KObj(pod), "claim", klog.KObj(s.claim), "node", s.allocatedNode)
	return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("ResourceClaim %s/%s was allocated on node %s, which cannot take the pod any more: deallocated, to be allocated anew", s.claim.Namespace, s.claim.Name, s.allocatedNode))
}

// deallocate clears the claim's allocation and reservedFor (the pod's own
// entry at most), unless another pod reserved it meanwhile.
func (p *DRAGPUShare) deallocate(ctx context.Context, read *resourceapi.ResourceClaim, pod *v1.Pod) error {
	return p.updateClaimStatus(ctx, read, func(claim *resourceapi.ResourceClaim) bool {
		if claim.Status.Allocation == nil {
			return false
		}
		for _, r := range claim.Status.ReservedFor {
			if r.UID != pod.UID {
				return false // in use: keep it
			}
		}
		claim.Status.Allocation, claim.Status.ReservedFor, claim.Status.Devices = nil, nil, nil
		return true
	})
}

// updateClaimStatus reads claim read afresh, lets change edit its status
// (false: nothing to write) and writes it, retrying on conflicts, and
// tells the claim tracker of the write. A claim that is gone, or was
// recreated under its name, is left alone.
func (p *DRAGPUShare) updateClaimStatus(ctx context.Context, read *resourceapi.ResourceClaim, change func(*resourceapi.ResourceClaim) bool) error {
	client := p.handle.ClientSet().ResourceV1().ResourceClaims(read.Namespace)
	tracker := p.draManager.ResourceClaims()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		claim, err := client.Get(ctx, read.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if claim.UID != read.UID || !change(claim) {
			return nil
		}
		got, err := client.UpdateStatus(ctx, claim, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		if err := tracker.AssumeClaimAfterAPICall(got); err != nil {
			klog.FromContext(ctx).V(5).Info("claim not assumed", "plugin", Name, "claim", klog.KObj(got), "err", err)
		}
		return nil
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
