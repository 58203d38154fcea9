package gpushare

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"unique"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// picked is placement.Placer.Pick's answer for one demand on one node.
type picked struct {
	idx    int
	rating float64
	clash  bool
	ok     bool
}

// pickOn is placement.Placer.Pick on the node's accounting, cached with it: Filter,
// Score and Reserve of one pod ask the same question, and so do the next
// pods of the same shape on every node that did not change in between.
func (p *GPUShare) pickOn(ctx context.Context, nodeInfo fwk.NodeInfo, ds *demandState) ([]gpuinventory.GPU, picked, error) {
	c, err := p.cached(ctx, nodeInfo)
	if err != nil {
		return nil, picked{}, err
	}
	if c.err != nil {
		return nil, picked{}, c.err
	}
	d := ds.demand
	old := c.picks.Load()
	if old != nil {
		// A few demand shapes per node: a scan beats hashing the model name.
		for _, e := range *old {
			if e.memoryMiB == d.MemoryMiB && e.model == ds.model {
				return c.gpus, e.picked, nil
			}
		}
	}
	var r picked
	r.idx, r.rating, r.clash, r.ok = p.placer.Pick(c.gpus, d)
	// Copy on write: readers in parallel Filter and Score calls take no
	// lock; an insert lost to a concurrent one is only recomputed later.
	var next []demandPick
	if old != nil && len(*old) < maxPicksPerNode {
		next = append(next, *old...)
	}
	next = append(next, demandPick{model: ds.model, memoryMiB: d.MemoryMiB, picked: r})
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
//
// The result is cached per node and NodeInfo generation, which the
// scheduler bumps on every change to the node or its pods (an assumed,
// bound, forgotten or deleted pod; a label change), so Filter and Score on
// hundreds of nodes per pod parse each node's pods only after it changed.
// Callers must not modify the accounting.
func (p *GPUShare) cached(ctx context.Context, nodeInfo fwk.NodeInfo) (*cachedNode, error) {
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
	gpus, err := p.accountNode(ctx, node, nodeInfo)
	c = &cachedNode{generation: gen, gpus: gpus, err: err}
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

	picks atomic.Pointer[[]demandPick]
}

type demandPick struct {
	model     unique.Handle[string]
	memoryMiB int64
	picked
}

// maxPicksPerNode bounds a node's cached answers; past it they start over.
const maxPicksPerNode = 16

// accountNode builds the accounting, uncached: gpuinventory's occupancy of
// the node's pods, with the reservations of this plugin.
func (p *GPUShare) accountNode(ctx context.Context, node *v1.Node, nodeInfo fwk.NodeInfo) ([]gpuinventory.GPU, error) {
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
	occ := gpuinventory.NewOccupancy(node.Name, inv)
	for _, pi := range nodeInfo.GetPods() {
		occ.AddPod(pi.GetPod(), p.reservedGPU)
	}
	for _, is := range occ.Issues {
		klog.FromContext(ctx).Info("pod whose GPU annotations are malformed or name no GPU of the node", "plugin", Name, "node", node.Name, "pod", klog.KObj(is.Pod), "counted", is.Counted, "err", is.Err)
	}
	return occ.GPUs, nil
}

// reservedGPU is the plugin's reservations as gpuinventory.Reservations:
// the node and GPU reserved for a pod between Reserve and the moment it
// carries hetsev.io/gpu-index.
func (p *GPUShare) reservedGPU(uid types.UID) (node string, index int, ok bool) {
	r, ok := p.reservationOf(uid)
	return r.node, r.index, ok
}
