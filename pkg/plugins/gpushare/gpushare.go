// Package gpushare is hetsev-scheduler's placement plugin (HetSev 4.2,
// Algorithm 1 step 3): it accounts GPU memory per GPU from GPU Feature
// Discovery labels and pods' hetsev.io/gpu-memory, keeps two instances of the
// same model (hetsev.io/model) off one GPU, prefers nodes whose best GPU has
// the most free memory (worst fit, weighed against predicted interference),
// reserves that GPU and binds the pod with its index as hetsev.io/gpu-index.
package gpushare

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"unique"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	// Registers kube-scheduler's feature gates (DRA ones included) in
	// utilfeature.DefaultFeatureGate, which --feature-gates sets.
	_ "k8s.io/kubernetes/pkg/features"

	"github.com/hetsev/hetsev/pkg/dra"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/placement"
)

// Name is the plugin's name in KubeSchedulerConfiguration.
const Name = "HetsevGPUShare"

const stateKey fwk.StateKey = Name

var (
	_ fwk.PreFilterPlugin = &GPUShare{}
	_ fwk.FilterPlugin    = &GPUShare{}
	_ fwk.ScorePlugin     = &GPUShare{}
	_ fwk.ReservePlugin   = &GPUShare{}
	_ fwk.BindPlugin      = &GPUShare{}
	_ fwk.PreBindPlugin   = &GPUShare{}
)

// GPUShare places model instances on individual GPUs.
type GPUShare struct {
	handle fwk.Handle
	placer placement.Placer // from Args: fit, anti-affinity, interference weight

	mu sync.RWMutex
	// reserved holds the GPU chosen for pods between Reserve and the moment
	// the pod object carries hetsev.io/gpu-index; it is what keeps two pods
	// scheduled back to back from picking the same GPU before the API server
	// has seen the first annotation.
	reserved map[types.UID]reservation
	// badNodes remembers nodes already logged for malformed GPU labels, so
	// each is logged once.
	badNodes sync.Map
	// nodeCache holds each node's accounting by name.
	cacheMu   sync.RWMutex
	nodeCache map[string]*cachedNode

	// DRA mode (gpuMode: dra; dra.go). draManager is the scheduler's
	// SharedDRAManager, shared by all its profiles.
	draMode    bool
	draManager fwk.SharedDRAManager
	podLister  corelisters.PodLister
	celCache   *cel.Cache
	// draFeatures are the structured allocator's features under the
	// scheduler's feature gates (dra.AllocatorFeatures).
	draFeatures structured.Features
	draReserved map[types.UID]*draReservation // by pod, guarded by mu
	// inFlight is the pod each claim is being allocated for, between
	// Reserve and the moment its reservedFor names the pod; guarded by mu.
	inFlight map[types.UID]*v1.Pod
	// reportedIssues remembers the safe-side counts already logged.
	reportedIssues sync.Map
}

type reservation struct {
	node  string
	index int
}

// New is the plugin factory registered with the scheduler command.
// Invalid arguments are an error naming the field, so the scheduler does not
// start.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, err := ParseArgs(obj)
	if err != nil {
		return nil, err
	}
	p := &GPUShare{handle: h, placer: args.placer(), reserved: map[types.UID]reservation{},
		draReserved: map[types.UID]*draReservation{}, inFlight: map[types.UID]*v1.Pod{}}
	if args.GPUMode == v1alpha1.GPUModeDRA {
		p.draMode = true
		p.draManager = h.SharedDRAManager()
		if p.draManager == nil {
			return nil, fmt.Errorf("%s: gpuMode %s needs the scheduler's DRA manager (feature DynamicResourceAllocation)", Name, v1alpha1.GPUModeDRA)
		}
		// The scheduler's feature gates decide what the allocator supports,
		// as for the upstream DynamicResources plugin: with DRADeviceTaints
		// a tainted GPU gets no share unless the claim tolerates it.
		p.draFeatures = dra.AllocatorFeatures(utilfeature.DefaultFeatureGate)
		if !p.draFeatures.ConsumableCapacity {
			return nil, fmt.Errorf("%s: gpuMode %s needs feature gate %s (one GPU shared by several claims), which --feature-gates turns off", Name, v1alpha1.GPUModeDRA, dra.GateDRAConsumableCapacity)
		}
		p.celCache = dra.NewCELCache(utilfeature.DefaultFeatureGate)
	}
	if f := h.SharedInformerFactory(); f != nil {
		p.podLister = f.Core().V1().Pods().Lister()
		_, err := f.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			DeleteFunc: func(obj interface{}) {
				if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = tomb.Obj
				}
				if pod, ok := obj.(*v1.Pod); ok {
					p.forget(pod.UID)
				}
			},
		})
		if err != nil {
			return nil, fmt.Errorf("%s: watching pods: %w", Name, err)
		}
	}
	klog.FromContext(ctx).V(2).Info("plugin initialised", "plugin", Name, "gpuMode", args.GPUMode, "fit", args.Fit, "antiAffinity", args.AntiAffinity, "interferenceWeight", *args.InterferenceWeight, "interferenceModel", args.Colocation.Source)
	return p, nil
}

// Name implements fwk.Plugin.
func (p *GPUShare) Name() string { return Name }

type demandState struct {
	demand gpuinventory.Demand
	model  unique.Handle[string] // demand.Model, compared by pointer in pickOn
	dra    *draState             // DRA mode only
}

func (s *demandState) Clone() fwk.StateData { return s }

// PreFilter parses the pod's hetsev annotations once per cycle. Pods that ask
// for no GPU share are skipped; a malformed annotation (hetsev.io/gpu-memory,
// hetsev.io/busy-share, ...) makes the pod unschedulable with a message
// naming the annotation, so it stays Pending with a FailedScheduling event
// that says why.
func (p *GPUShare) PreFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if p.draMode {
		return p.preFilterDRA(ctx, state, pod)
	}
	d, ok, err := gpuinventory.DemandOf(pod)
	if !ok {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	state.Write(stateKey, &demandState{demand: d, model: unique.Make(d.Model)})
	return nil, nil
}

// PreFilterExtensions implements fwk.PreFilterPlugin.
func (p *GPUShare) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

func demandFrom(state fwk.CycleState) (gpuinventory.Demand, bool) {
	ds, ok := demandStateFrom(state)
	if !ok {
		return gpuinventory.Demand{}, false
	}
	return ds.demand, true
}

func demandStateFrom(state fwk.CycleState) (*demandState, bool) {
	v, err := state.Read(stateKey)
	if err != nil {
		return nil, false
	}
	ds, ok := v.(*demandState)
	return ds, ok
}

// Filter keeps nodes with at least one GPU that has the pod's GPU memory
// free, room for its busy share under maxBusyShare, no instance of the
// pod's model, and where no instance's predicted latency inflation would
// exceed its hetsev.io/max-inflation (placement.Placer.Admits).
func (p *GPUShare) Filter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	ds, ok := demandStateFrom(state)
	if !ok {
		return nil
	}
	if ds.dra != nil {
		return p.filterDRA(ctx, ds, nodeInfo)
	}
	d := ds.demand
	gpus, r, err := p.pickOn(ctx, nodeInfo, ds)
	if err != nil {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	if !r.ok {
		return fwk.NewStatus(fwk.Unschedulable, p.reasonNoGPU(nodeInfo, gpus, d))
	}
	return nil
}

func (p *GPUShare) reasonNoGPU(nodeInfo fwk.NodeInfo, gpus []gpuinventory.GPU, d gpuinventory.Demand) string {
	pl := p.placer.OnNode(nodeInfo.Node().GetLabels())
	maxBusy := pl.Choice.MaxBusyShare
	memOK, busyOK, admitted := 0, 0, 0
	for _, g := range gpus {
		if g.FreeMiB() >= d.MemoryMiB {
			memOK++
			if g.FitsBusyShare(d, maxBusy) {
				busyOK++
				if pl.Admits(g, d) {
					admitted++
				}
			}
		}
	}
	if memOK == 0 {
		return fmt.Sprintf("no GPU with %d MiB of free GPU memory", d.MemoryMiB)
	}
	if busyOK == 0 {
		return fmt.Sprintf("every GPU with %d MiB free would exceed busy share %g with this pod's %s %g", d.MemoryMiB, maxBusy, v1alpha1.AnnotationBusyShare, d.Busy())
	}
	if admitted == 0 {
		return fmt.Sprintf("every GPU with %d MiB free and busy share to spare would inflate this pod's or a neighbour's latency past its %s", d.MemoryMiB, v1alpha1.AnnotationMaxInflation)
	}
	return fmt.Sprintf("every GPU with %d MiB free and busy share to spare already hosts model %q (anti-affinity)", d.MemoryMiB, d.Model)
}

// Score rates the GPU the plugin would pick on the node (placement.Placer.Pick): its
// rating in [0, 1] (fit against predicted interference) times ratingScale.
// Pods nominated to the node of equal or higher priority hold their GPU,
// as in Filter (withNominated).
// A GPU that already hosts the pod's model (soft anti-affinity only) gives a
// negative score. NormalizeScore maps it to the framework's range.
func (p *GPUShare) Score(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	ds, ok := demandStateFrom(state)
	if !ok {
		return 0, nil
	}
	if ds.dra != nil {
		return p.scoreDRA(ctx, ds, nodeInfo), nil
	}
	_, r, err := p.pickOn(ctx, p.withNominated(pod, nodeInfo), ds)
	if err != nil || !r.ok {
		return 0, nil
	}
	score := int64(r.rating * ratingScale)
	if r.clash {
		return -1 - score, nil // NormalizeScore puts it below every other node
	}
	return score, nil
}

// ratingScale keeps four digits of a rating in an integer score.
const ratingScale = 10000

// ScoreExtensions implements fwk.ScorePlugin.
func (p *GPUShare) ScoreExtensions() fwk.ScoreExtensions { return p }

// NormalizeScore scales scores to [1, MaxNodeScore] relative to the best
// node, and puts nodes whose GPU would host the pod's model twice at 0.
func (p *GPUShare) NormalizeScore(_ context.Context, _ fwk.CycleState, _ *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	var best int64
	for _, s := range scores {
		best = max(best, s.Score)
	}
	for i := range scores {
		switch {
		case scores[i].Score < 0:
			scores[i].Score = 0
		case best > 0:
			scores[i].Score = max(1, scores[i].Score*fwk.MaxNodeScore/best)
		default:
			scores[i].Score = 1
		}
	}
	return nil
}

// Reserve picks the GPU on the chosen node, the one Score rated (counting
// the same nominated pods, withNominated), and remembers it.
func (p *GPUShare) Reserve(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	ds, ok := demandStateFrom(state)
	if !ok {
		return nil
	}
	if ds.dra != nil {
		return p.reserveDRA(ctx, ds, pod, nodeName)
	}
	d := ds.demand
	nodeInfo, err := p.handle.SnapshotSharedLister().NodeInfos().Get(nodeName)
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("getting node %q: %w", nodeName, err))
	}
	nodeInfo = p.withNominated(pod, nodeInfo)
	gpus, r, err := p.pickOn(ctx, nodeInfo, ds)
	if err != nil {
		return fwk.NewStatus(fwk.Unschedulable, err.Error())
	}
	if !r.ok {
		return fwk.NewStatus(fwk.Unschedulable, p.reasonNoGPU(nodeInfo, gpus, d))
	}
	idx := r.idx
	p.mu.Lock()
	p.reserved[pod.UID] = reservation{node: nodeName, index: idx}
	p.mu.Unlock()
	klog.FromContext(ctx).V(4).Info("reserved GPU", "plugin", Name, "pod", klog.KObj(pod), "node", nodeName, "gpuIndex", idx, "freeMiB", gpus[idx].FreeMiB())
	return nil
}

// Unreserve releases the GPU when binding fails.
func (p *GPUShare) Unreserve(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) {
	if p.draMode {
		p.unreserveDRA(ctx, pod)
	}
	p.forget(pod.UID)
}

func (p *GPUShare) forget(uid types.UID) {
	p.mu.Lock()
	delete(p.reserved, uid)
	if res, ok := p.draReserved[uid]; ok {
		delete(p.inFlight, res.claim.UID)
		delete(p.draReserved, uid)
	}
	p.mu.Unlock()
}

func (p *GPUShare) reservationOf(uid types.UID) (reservation, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	r, ok := p.reserved[uid]
	return r, ok
}

// Bind binds the pod to the node and writes hetsev.io/gpu-index in the same
// call (in DRA mode too, where it is the allocated GPU's index attribute:
// the metrics adapter joins DCGM's per-GPU series to pods with it): the API server's binding subresource merges the Binding's
// annotations into the pod as it sets spec.nodeName. The pod is therefore
// never bound without its GPU (the container's NVIDIA_VISIBLE_DEVICES comes
// from the annotation through the downward API), nor left Pending with an
// index from an attempt that failed, and a pod costs one API call, as with
// the DefaultBinder. Pods this plugin reserved no GPU for are left to the
// DefaultBinder (Skip).
func (p *GPUShare) Bind(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	if _, ok := demandFrom(state); !ok {
		return fwk.NewStatus(fwk.Skip)
	}
	r, ok := p.reservationOf(pod.UID)
	if !ok || r.node != nodeName {
		return fwk.AsStatus(fmt.Errorf("no GPU reserved for pod %s on node %s", klog.KObj(pod), nodeName))
	}
	binding := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
			Annotations: map[string]string{v1alpha1.AnnotationGPUIndex: strconv.Itoa(r.index)},
		},
		Target: v1.ObjectReference{Kind: "Node", Name: nodeName},
	}
	if c := p.handle.APICacher(); c != nil {
		onFinish, err := c.BindPod(binding)
		if err == nil {
			err = c.WaitOnFinish(ctx, onFinish)
		}
		if err != nil {
			return fwk.AsStatus(fmt.Errorf("binding pod %s with %s=%d: %w", klog.KObj(pod), v1alpha1.AnnotationGPUIndex, r.index, err))
		}
		return nil
	}
	if err := p.handle.ClientSet().CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fwk.AsStatus(fmt.Errorf("binding pod %s with %s=%d: %w", klog.KObj(pod), v1alpha1.AnnotationGPUIndex, r.index, err))
	}
	klog.FromContext(ctx).V(4).Info("bound with GPU", "plugin", Name, "pod", klog.KObj(pod), "node", nodeName, "gpuIndex", r.index)
	return nil
}
