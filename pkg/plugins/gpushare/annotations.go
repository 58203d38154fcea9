package gpushare

import (
	"context"
	"fmt"
	"sync"
	"unique"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/placement"
)

var (
	_ fwk.PreFilterPlugin   = &AnnotationGPUShare{}
	_ fwk.FilterPlugin      = &AnnotationGPUShare{}
	_ fwk.ScorePlugin       = &AnnotationGPUShare{}
	_ fwk.ReservePlugin     = &AnnotationGPUShare{}
	_ fwk.BindPlugin        = &AnnotationGPUShare{}
	_ fwk.EnqueueExtensions = &AnnotationGPUShare{}
	_ fwk.SignPlugin        = &AnnotationGPUShare{}
)

// AnnotationGPUShare is HetsevGPUShare in GPU mode annotations: a node's
// GPUs are its GPU Feature Discovery labels, a pod's demand its
// hetsev.io/gpu-memory, hetsev.io/model, hetsev.io/busy-share and
// hetsev.io/max-inflation annotations, and the GPU it holds its
// hetsev.io/gpu-index or, until the pod carries it, the reservation this
// plugin made in Reserve. Its extension points are PreFilter, Filter,
// Score, Reserve and Bind (manifests/scheduler-config.yaml).
type AnnotationGPUShare struct {
	// gpuShare's reserved is also the accounting's: it keeps two pods
	// scheduled back to back from picking the same GPU before the API
	// server has seen the first one's hetsev.io/gpu-index.
	gpuShare

	// badNodes remembers nodes already logged for malformed GPU labels, so
	// each is logged once.
	badNodes sync.Map
	// nodeCache holds each node's accounting by name (accounting.go).
	cacheMu   sync.RWMutex
	nodeCache map[string]*cachedNode
}

func newAnnotationGPUShare(h fwk.Handle, pl placement.Placer) *AnnotationGPUShare {
	return &AnnotationGPUShare{gpuShare: newGPUShare(h, pl)}
}

// forgetNode drops a deleted node's cached accounting and its
// malformed-labels mark.
func (p *AnnotationGPUShare) forgetNode(name string) {
	p.cacheMu.Lock()
	delete(p.nodeCache, name)
	p.cacheMu.Unlock()
	p.badNodes.Delete(name)
}

// demandState is the cycle's state: the pod's demand, which PreFilter
// parses, and the nodes Filter saw with nominated pods.
type demandState struct {
	demand gpuinventory.Demand
	model  unique.Handle[string] // demand.Identity(), compared by pointer in pickOn
	// nominated holds, by node, the accounting Filter built with the pods
	// nominated to it, for Score and Reserve (nominatedViews).
	nominated nominatedViews
	// reasons are Filter's refusal messages, built once (noGPUReasons).
	reasons noGPUReasons
}

// Clone implements fwk.StateData. The demand does not change within a
// cycle; a clone shares the nominated views, which are by node and, when
// the framework's preemption filters a node, are not read again in the
// cycle (no Score or Reserve follows a PostFilter).
func (s *demandState) Clone() fwk.StateData { return s }

func demandStateFrom(state fwk.CycleState) (*demandState, bool) {
	v, err := state.Read(stateKey)
	if err != nil {
		return nil, false
	}
	ds, ok := v.(*demandState)
	return ds, ok
}

// PreFilter parses the pod's hetsev annotations once per cycle. Pods that ask
// for no GPU share are skipped; a malformed annotation (hetsev.io/gpu-memory,
// hetsev.io/busy-share, ...) makes the pod unschedulable with a message
// naming the annotation, so it stays Pending with a FailedScheduling event
// that says why.
func (p *AnnotationGPUShare) PreFilter(_ context.Context, state fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	d, ok, err := gpuinventory.DemandOf(pod)
	if !ok {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	state.Write(stateKey, &demandState{demand: d, model: unique.Make(d.Identity())})
	return nil, nil
}

// PreFilterExtensions implements fwk.PreFilterPlugin.
func (p *AnnotationGPUShare) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter keeps nodes with at least one GPU that has the pod's GPU memory
// free, room for its busy share under maxBusyShare, no instance of the
// pod's model, and where no instance's predicted latency inflation would
// exceed its hetsev.io/max-inflation (placement.Placer.Admits); with the
// arg gpuPool on, only nodes in the GPU pool (outsidePool).
func (p *AnnotationGPUShare) Filter(ctx context.Context, state fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	ds, ok := demandStateFrom(state)
	if !ok {
		return nil
	}
	if st := p.outsidePool(nodeInfo.Node()); st != nil {
		return st
	}
	_, r, err := p.pickOn(ctx, nodeInfo, ds)
	if err != nil {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	if !r.ok {
		return fwk.NewStatus(fwk.Unschedulable, p.noGPUMessage(&ds.reasons, r.noGPU, ds.demand))
	}
	return nil
}

// Score rates the GPU the plugin would pick on the node (placement.Placer.Pick): its
// rating in [0, 1] (fit against predicted interference) times ratingScale.
// Pods nominated to the node of equal or higher priority hold their GPU:
// Score picks on the accounting Filter built with them (nominatedViews).
// A GPU that already hosts the pod's model (soft anti-affinity only) gives a
// negative score. NormalizeScore maps it to the framework's range.
func (p *AnnotationGPUShare) Score(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	ds, ok := demandStateFrom(state)
	if !ok {
		return 0, nil
	}
	c, err := p.scoreAccounting(ctx, nodeInfo, ds)
	if err != nil {
		return 0, nil
	}
	_, r, err := p.pickWith(nodeInfo, c, ds)
	if err != nil {
		return 0, nil
	}
	return r.score(), nil
}

// Reserve picks the GPU on the chosen node, the one Score rated (counting
// the same nominated pods, nominatedViews), and remembers it with what Bind
// writes beside its index: the pod's predicted inflation there and its
// neighbours (placedNote).
func (p *AnnotationGPUShare) Reserve(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	ds, ok := demandStateFrom(state)
	if !ok {
		return nil
	}
	nodeInfo, err := p.handle.SnapshotSharedLister().NodeInfos().Get(nodeName)
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("getting node %q: %w", nodeName, err))
	}
	c, err := p.scoreAccounting(ctx, nodeInfo, ds)
	if err != nil {
		return fwk.NewStatus(fwk.Unschedulable, err.Error())
	}
	gpus, r, err := p.pickWith(nodeInfo, c, ds)
	if err != nil {
		return fwk.NewStatus(fwk.Unschedulable, err.Error())
	}
	if !r.ok {
		return fwk.NewStatus(fwk.Unschedulable, p.noGPUMessage(&ds.reasons, r.noGPU, ds.demand))
	}
	pl := p.placer.OnNode(nodeInfo.Node().GetLabels())
	note := noteFor(pl, gpus[r.idx], ds.demand, pod.Namespace, p.podsOnGPU(nodeInfo.GetPods(), nodeName, r.idx, pod.UID))
	p.reserve(pod.UID, reservation{node: nodeName, index: r.idx, note: note})
	klog.FromContext(ctx).V(4).Info("reserved GPU", "plugin", Name, "pod", klog.KObj(pod), "node", nodeName, "gpuIndex", r.idx, "freeMiB", gpus[r.idx].FreeMiB())
	return nil
}

// Unreserve releases the GPU when binding fails.
func (p *AnnotationGPUShare) Unreserve(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) {
	p.forget(pod.UID)
}

// forget drops the pod's reservation (Unreserve, or the pod was deleted).
func (p *AnnotationGPUShare) forget(uid types.UID) {
	p.mu.Lock()
	delete(p.reserved, uid)
	p.mu.Unlock()
}

// Bind binds the pod with its reserved GPU's index as hetsev.io/gpu-index
// (gpuShare.bindWithGPUIndex). Pods this plugin reserved no GPU for are
// left to the DefaultBinder (Skip).
func (p *AnnotationGPUShare) Bind(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	if _, ok := demandStateFrom(state); !ok {
		return fwk.NewStatus(fwk.Skip)
	}
	return p.bindWithGPUIndex(ctx, pod, nodeName)
}
