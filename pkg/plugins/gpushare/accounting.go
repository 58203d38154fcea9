package gpushare

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// gpusOf rebuilds a node's per-GPU accounting from the pods the scheduler
// cache holds for it (bound and assumed). A pod's GPU is its
// hetsev.io/gpu-index annotation or, until that is visible, the reservation
// made in Reserve. Because bound pods carry the annotation, the accounting is
// rebuilt exactly after a scheduler restart. The pod being scheduled (self) is
// left out.
func (p *GPUShare) gpusOf(ctx context.Context, nodeInfo fwk.NodeInfo, self types.UID) ([]gpuinventory.GPU, error) {
	node := nodeInfo.Node()
	if node == nil {
		return nil, errors.New("node not found")
	}
	inv, err := gpuinventory.NodeGPUsOf(node)
	if err != nil {
		if !errors.Is(err, gpuinventory.ErrNoGPULabels) {
			if _, seen := p.badNodes.LoadOrStore(node.Name, true); !seen {
				klog.FromContext(ctx).Info("skipping node with malformed GPU labels", "plugin", Name, "node", node.Name, "err", err)
			}
			return nil, fmt.Errorf("node %s has malformed GPU labels: %v", node.Name, err)
		}
		return nil, fmt.Errorf("node %s has no GPUs (%v)", node.Name, err)
	}
	var placed []gpuinventory.Placement
	for _, pi := range nodeInfo.GetPods() {
		pod := pi.GetPod()
		if pod.UID == self {
			continue
		}
		d, ok, err := gpuinventory.DemandOf(pod)
		if !ok || err != nil {
			continue
		}
		idx, has, err := gpuinventory.ParseGPUIndex(pod.Annotations)
		if err != nil {
			klog.FromContext(ctx).Info("ignoring pod with malformed GPU index", "plugin", Name, "pod", klog.KObj(pod), "err", err)
			continue
		}
		if !has {
			r, ok := p.reservationOf(pod.UID)
			if !ok || r.node != node.Name {
				continue
			}
			idx = r.index
		}
		placed = append(placed, gpuinventory.Placement{Index: idx, Demand: d})
	}
	gpus, stray := gpuinventory.Account(inv, placed)
	for _, s := range stray {
		klog.FromContext(ctx).Info("pod GPU index beyond node's GPU count", "plugin", Name, "node", node.Name, "gpuIndex", s.Index)
	}
	return gpus, nil
}
