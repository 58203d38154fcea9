package gpushare

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"unique"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// pickOn is pickWith on the accounting Filter picks on: cached's for
// nodeInfo. When nodeInfo is the framework's copy with nominated pods in it
// (and so the accounting counts them), that accounting is also recorded as
// the node's view for Score and Reserve in this cycle (nominatedViews).
func (p *AnnotationGPUShare) pickOn(ctx context.Context, nodeInfo fwk.NodeInfo, ds *demandState) ([]gpuinventory.GPU, picked, error) {
	c, err := p.cached(ctx, nodeInfo)
	if err != nil {
		return nil, picked{}, err
	}
	if c.nominated {
		ds.nominated.record(nodeInfo.Node().Name, c)
	}
	return p.pickWith(nodeInfo, c, ds)
}

// scoreAccounting is the accounting Score and Reserve pick on: the view
// Filter recorded for the node in this cycle when the framework gave it
// nominated pods to count (nominatedViews), otherwise cached's for
// nodeInfo.
func (p *AnnotationGPUShare) scoreAccounting(ctx context.Context, nodeInfo fwk.NodeInfo, ds *demandState) (*cachedNode, error) {
	if node := nodeInfo.Node(); node != nil {
		if c := ds.nominated.lookup(node.Name); c != nil {
			return c, nil
		}
	}
	return p.cached(ctx, nodeInfo)
}

// pickWith is placement.Placer.Pick on the node's accounting c, cached with
// it: Filter, Score and Reserve of one pod ask the same question, and so do
// the next pods of the same shape on every node that did not change in
// between.
func (p *AnnotationGPUShare) pickWith(nodeInfo fwk.NodeInfo, c *cachedNode, ds *demandState) ([]gpuinventory.GPU, picked, error) {
	if c.err != nil {
		return nil, picked{}, c.err
	}
	d := ds.demand
	old := c.picks.Load()
	if old != nil {
		// A few demand shapes per node: a scan beats hashing the model name.
		for _, e := range *old {
			if e.memoryMiB == d.MemoryMiB && e.busyShare == d.BusyShare && e.maxInflation == d.MaxInflation && e.model == ds.model {
				return c.gpus, e.picked, nil
			}
		}
	}
	var r picked
	r.idx, r.rating, r.clash, r.ok = p.placer.OnNode(nodeInfo.Node().GetLabels()).Pick(c.gpus, d)
	if !r.ok {
		// Kept with the pick: Filter refuses a full node for every pod of
		// this shape until the node changes.
		r.noGPU = p.noGPUKind(nodeInfo, c.gpus, d)
	}
	// Copy on write: readers in parallel Filter and Score calls take no
	// lock; an insert lost to a concurrent one is only recomputed later.
	var next []demandPick
	if old != nil && len(*old) < maxPicksPerNode {
		next = append(next, *old...)
	}
	next = append(next, demandPick{model: ds.model, memoryMiB: d.MemoryMiB, busyShare: d.BusyShare, maxInflation: d.MaxInflation, picked: r})
	c.picks.Store(&next)
	return c.gpus, r, nil
}

// cached returns a node's per-GPU accounting, built from the pods the
// scheduler cache holds for it (bound and assumed) by gpuinventory's
// occupancy rule (Occupancy.AddPod). A pod's GPU is its
// hetsev.io/gpu-index annotation or, until that is visible, the reservation
// made in Reserve (reservedGPU). Because bound pods carry the annotation,
// the accounting is rebuilt exactly after a scheduler restart. The pod being
// scheduled is on no node of the cycle's snapshot, so it is never counted.
// Nominated pods, which the framework adds to a copy of the NodeInfo for
// Filter, hold the GPU they will take (countNominated); that copy's
// accounting is not cached by node (nominated is set): Filter keeps it for
// Score and Reserve in its cycle's nominatedViews.
//
// The result is cached per node and NodeInfo generation, which the
// scheduler bumps on every change to the node or its pods (an assumed,
// bound, forgotten or deleted pod; a label change), so Filter and Score on
// hundreds of nodes per pod parse each node's pods only after it changed.
// Callers must not modify the accounting.
func (p *AnnotationGPUShare) cached(ctx context.Context, nodeInfo fwk.NodeInfo) (*cachedNode, error) {
	node := nodeInfo.Node()
	if node == nil {
		return nil, errors.New("node not found")
	}
	gen := nodeInfo.GetGeneration()
	p.cacheMu.RLock()
	c, ok := p.nodeCache[node.Name]
	p.cacheMu.RUnlock()
	if ok && c.generation == gen {
		return c, nil
	}
	gpus, nominated, err := p.accountNode(ctx, node, nodeInfo)
	c = &cachedNode{generation: gen, gpus: gpus, err: err, nominated: nominated}
	if nominated {
		// A copy the framework made to add nominated pods: keep the
		// node's own accounting, which the next Filter asks for.
		return c, nil
	}
	p.cacheMu.Lock()
	if p.nodeCache == nil {
		p.nodeCache = map[string]*cachedNode{}
	}
	p.nodeCache[node.Name] = c
	p.cacheMu.Unlock()
	return c, nil
}

// cachedNode is a node's accounting at one NodeInfo generation, and the
// GPU picked there per demand.
type cachedNode struct {
	generation int64
	gpus       []gpuinventory.GPU
	err        error
	// nominated is whether this is the accounting of a NodeInfo copy the
	// framework made for Filter with pods nominated to the node in it
	// (accountNode).
	nominated bool

	picks atomic.Pointer[[]demandPick]
}

type demandPick struct {
	model        unique.Handle[string]
	memoryMiB    int64
	busyShare    float64
	maxInflation float64
	picked
}

// maxPicksPerNode bounds a node's cached answers; past it they start over.
const maxPicksPerNode = 16

// accountNode builds the accounting, uncached: gpuinventory's occupancy of
// the node's pods, with the reservations of this plugin and the GPUs
// promised to nominated pods (countNominated). nominated says whether the
// NodeInfo holds a pod without spec.nodeName, which only a copy the
// framework made to add nominated pods does (the scheduler's own NodeInfos
// hold bound and assumed pods, all with spec.nodeName): the caller does not
// cache that copy's accounting by node.
func (p *AnnotationGPUShare) accountNode(ctx context.Context, node *v1.Node, nodeInfo fwk.NodeInfo) (gpus []gpuinventory.GPU, nominated bool, err error) {
	inv, err := gpuinventory.NodeGPUsOf(node)
	if err != nil {
		if !errors.Is(err, gpuinventory.ErrNoGPULabels) {
			if _, seen := p.badNodes.LoadOrStore(node.Name, true); !seen {
				klog.FromContext(ctx).Info("skipping node with malformed GPU labels", "plugin", Name, "node", node.Name, "err", err)
			}
			return nil, false, fmt.Errorf("node %s has malformed GPU labels: %v", node.Name, err)
		}
		return nil, false, fmt.Errorf("node %s has no GPUs (%v)", node.Name, err)
	}
	occ := gpuinventory.NewOccupancy(node.Name, inv)
	var waiting []*v1.Pod
	for _, pi := range nodeInfo.GetPods() {
		pod := pi.GetPod()
		if pod.Spec.NodeName == "" {
			nominated = true
		}
		if p.isNominated(pod, node.Name) {
			waiting = append(waiting, pod)
			continue
		}
		occ.AddPod(pod, p.reservedGPU)
	}
	if len(waiting) > 0 {
		p.countNominated(ctx, occ, nodeInfo, waiting)
	}
	for _, is := range occ.Issues {
		klog.FromContext(ctx).Info("pod whose GPU annotations are malformed or name no GPU of the node", "plugin", Name, "node", node.Name, "pod", klog.KObj(is.Pod), "counted", is.Counted, "err", is.Err)
	}
	return occ.GPUs, nominated, nil
}

// isNominated is whether pod, among the node's pods, is one the framework
// added because it is nominated to the node (a preemptor waiting for its
// victims to leave; RunFilterPluginsWithNominatedPods adds those of equal
// or higher priority than the pod being scheduled): it is not bound or
// assumed (no spec.nodeName), asks for a GPU share, and has neither a GPU
// index nor a reservation here.
func (p *AnnotationGPUShare) isNominated(pod *v1.Pod, node string) bool {
	if pod.Spec.NodeName != "" || gpuinventory.Terminal(pod) {
		return false
	}
	if _, ok, err := gpuinventory.DemandOf(pod); !ok || err != nil {
		return false
	}
	if _, hasIdx, _ := gpuinventory.ParseGPUIndex(pod.Annotations); hasIdx {
		return false
	}
	r, reserved := p.reservationOf(pod.UID)
	return !reserved || r.node != node
}

// countNominated counts each nominated pod, highest priority first, on the
// GPU it will take on the node, so that a pod of lower or equal priority
// does not take the GPU its preemption freed, as the framework counts a
// nominated pod's CPU and memory:
//
//   - the GPU placement picks for it now, when one fits (its victims are
//     gone);
//   - otherwise the GPU placement picks once the pods it may preempt (lower
//     priority) are gone, counted on top of them: that GPU then fits
//     nothing until they have left;
//   - otherwise nothing (the nomination is stale: it cannot fit here).
func (p *AnnotationGPUShare) countNominated(ctx context.Context, occ *gpuinventory.Occupancy, nodeInfo fwk.NodeInfo, waiting []*v1.Pod) {
	slices.SortStableFunc(waiting, func(a, b *v1.Pod) int {
		return cmp.Compare(corev1helpers.PodPriority(b), corev1helpers.PodPriority(a))
	})
	counted := make([]gpuinventory.Placement, 0, len(waiting))
	pl := p.placer.OnNode(nodeInfo.Node().GetLabels()) // the node's GPU sharing mode
	for _, pod := range waiting {
		d, _, _ := gpuinventory.DemandOf(pod)
		idx, _, _, ok := pl.Pick(occ.GPUs, d)
		if !ok {
			after := p.afterPreemption(occ, nodeInfo, corev1helpers.PodPriority(pod), counted)
			idx, _, _, ok = pl.Pick(after, d)
		}
		if !ok {
			klog.FromContext(ctx).V(4).Info("nominated pod fits no GPU of the node even without the pods it may preempt; not counted", "plugin", Name, "node", occ.NodeName, "pod", klog.KObj(pod))
			continue
		}
		occ.Place(gpuinventory.Placement{Index: idx, Demand: d})
		counted = append(counted, gpuinventory.Placement{Index: idx, Demand: d})
	}
}

// afterPreemption is the node's GPUs as a preemptor of the given priority
// would find them once every pod it may preempt has left: the bound and
// assumed pods of that priority or higher, and the nominated pods already
// counted.
func (p *AnnotationGPUShare) afterPreemption(occ *gpuinventory.Occupancy, nodeInfo fwk.NodeInfo, priority int32, counted []gpuinventory.Placement) []gpuinventory.GPU {
	after := gpuinventory.NewOccupancy(occ.NodeName, occ.Node)
	for _, pi := range nodeInfo.GetPods() {
		pod := pi.GetPod()
		if corev1helpers.PodPriority(pod) >= priority && !p.isNominated(pod, occ.NodeName) {
			after.AddPod(pod, p.reservedGPU)
		}
	}
	for _, c := range counted {
		after.Place(c)
	}
	return after.GPUs
}

// reservedGPU is the plugin's reservations as gpuinventory.Reservations:
// the node and GPU reserved for a pod between Reserve and the moment it
// carries hetsev.io/gpu-index.
func (p *AnnotationGPUShare) reservedGPU(uid types.UID) (node string, index int, ok bool) {
	r, ok := p.reservationOf(uid)
	return r.node, r.index, ok
}
