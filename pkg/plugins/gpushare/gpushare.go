// Package gpushare is hetsev-scheduler's placement plugin (HetSev 4.2,
// Algorithm 1 step 3): it accounts GPU memory per GPU, keeps two instances
// of the same model (hetsev.io/model) off one GPU, prefers nodes whose best
// GPU has the most free memory (worst fit, weighed against predicted
// interference), reserves that GPU and binds the pod with its index as
// hetsev.io/gpu-index.
//
// The plugin is registered once, as HetsevGPUShare, and its factory New
// builds one of two plugin types by the argument gpuMode:
//
//   - AnnotationGPUShare (gpuMode: annotations, annotations.go): the GPUs
//     are GPU Feature Discovery's node labels, a pod's demand and GPU are
//     its hetsev.io annotations, and the plugin holds reservations until
//     the pod carries hetsev.io/gpu-index;
//   - DRAGPUShare (gpuMode: dra, dra.go): the GPUs are a DRA driver's
//     ResourceSlices, a pod's demand is its ResourceClaim, and the plugin
//     allocates the claim (Reserve) and writes it (PreBind).
//
// One registered name keeps the scheduler configurations stable across
// modes; each type carries only its own mode's state and extension points.
// Both share the GPU accounting and the rating (pkg/gpuinventory,
// pkg/placement, pkg/dra) and gpuShare, this file's common part: the
// placer, the GPU reserved per pod for Bind, NormalizeScore and Bind.
package gpushare

import (
	"context"
	"fmt"
	"k8s.io/client-go/informers"
	"strconv"
	"sync"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	// Registers kube-scheduler's feature gates (DRA ones included) in
	// utilfeature.DefaultFeatureGate, which --feature-gates sets.
	_ "k8s.io/kubernetes/pkg/features"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/placement"
	"github.com/hetsev/hetsev/pkg/schedulerconfig"
)

// Name is the plugin's name in KubeSchedulerConfiguration, whichever GPU
// mode New builds.
const Name = schedulerconfig.GPUShareName

const stateKey fwk.StateKey = Name

// New is the plugin factory registered with the scheduler command: an
// *AnnotationGPUShare for gpuMode annotations, a *DRAGPUShare for gpuMode
// dra. Invalid arguments (or a DRA mode the scheduler's feature gates do
// not allow) are an error naming the field, so the scheduler does not
// start.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, err := ParseArgs(obj)
	if err != nil {
		return nil, err
	}
	if err := oneProfile(h); err != nil {
		return nil, err
	}
	var (
		p          fwk.Plugin
		forget     func(types.UID)
		forgetNode func(string)
	)
	if args.GPUMode == v1alpha1.GPUModeDRA {
		d, err := newDRAGPUShare(h, args.placer(), args.Driver)
		if err != nil {
			return nil, err
		}
		d.pool = args.pool()
		p, forget, forgetNode = d, d.forget, d.forgetNode
		if f := h.SharedInformerFactory(); f != nil {
			registerGPUStats(draStats{p: d, nodes: f.Core().V1().Nodes().Lister()})
		}
	} else {
		a := newAnnotationGPUShare(h, args.placer())
		a.pool = args.pool()
		p, forget, forgetNode = a, a.forget, a.forgetNode
		if f := h.SharedInformerFactory(); f != nil {
			registerGPUStats(annotationStats{p: a, nodes: f.Core().V1().Nodes().Lister(), pods: f.Core().V1().Pods().Lister()})
		}
	}
	if err := forgetDeleted(h, forget, forgetNode); err != nil {
		return nil, err
	}
	klog.FromContext(ctx).V(2).Info("plugin initialised", "plugin", Name, "gpuMode", args.GPUMode, "fit", args.Fit, "antiAffinity", args.AntiAffinity, "interferenceWeight", *args.InterferenceWeight, "interferenceModel", args.Colocation.Source, "gpuPool", args.pool(), "draDriver", args.Driver.WithDefault().String())
	return p, nil
}

// scheduler instances that enabled the plugin, by the informer factory
// every profile of one kube-scheduler shares.
var (
	profilesMu sync.Mutex
	profiles   = map[informers.SharedInformerFactory]bool{}
)

// oneProfile refuses a second instance of the plugin in one scheduler (a
// second profile that enables it): each instance keeps its own
// reservations, so two profiles could each reserve the same GPU for a pod
// and place two instances where one fits. A handle without an informer
// factory (unit tests) is not checked.
func oneProfile(h fwk.Handle) error {
	f := h.SharedInformerFactory()
	if f == nil {
		return nil
	}
	profilesMu.Lock()
	defer profilesMu.Unlock()
	if profiles[f] {
		return fmt.Errorf("%s is enabled in more than one profile of this scheduler: each profile would keep its own GPU reservations and could place two pods on one GPU; enable it in one profile (schedulerName %s)", Name, v1alpha1.SchedulerName)
	}
	profiles[f] = true
	return nil
}

// forgetDeleted calls forget with the UID of every pod, and forgetNode
// with the name of every node, deleted from the scheduler's informers, so
// that a plugin drops what it held for them and its caches follow the
// cluster rather than grow with every node it ever saw.
func forgetDeleted(h fwk.Handle, forget func(types.UID), forgetNode func(string)) error {
	f := h.SharedInformerFactory()
	if f == nil {
		return nil
	}
	_, err := f.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj interface{}) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if pod, ok := obj.(*v1.Pod); ok {
				forget(pod.UID)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("%s: watching pods: %w", Name, err)
	}
	_, err = f.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj interface{}) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if node, ok := obj.(*v1.Node); ok {
				forgetNode(node.Name)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("%s: watching nodes: %w", Name, err)
	}
	return nil
}

// gpuShare is what both GPU modes' plugins share: the handle, the placer
// built from the arguments, and the GPU reserved for each pod, which Bind
// writes as hetsev.io/gpu-index.
type gpuShare struct {
	handle fwk.Handle
	placer placement.Placer // from Args: fit, anti-affinity, interference weight
	// pool is the arg gpuPool: Filter refuses nodes outside the GPU pool
	// (outsidePool).
	pool bool

	mu sync.RWMutex
	// reserved holds the node and GPU chosen for a pod in Reserve, until
	// the pod is deleted or Unreserve releases it; guarded by mu.
	reserved map[types.UID]reservation
}

type reservation struct {
	node  string
	index int
	// uuid is the GPU's UUID in GPU mode dra, when its driver publishes
	// one; Bind writes it beside the index.
	uuid string
	// note is what Bind writes beside the index (placednote.go).
	note placedNote
}

func newGPUShare(h fwk.Handle, pl placement.Placer) gpuShare {
	return gpuShare{handle: h, placer: pl, reserved: map[types.UID]reservation{}}
}

// Name implements fwk.Plugin.
func (p *gpuShare) Name() string { return Name }

func (p *gpuShare) reserve(uid types.UID, r reservation) {
	p.mu.Lock()
	p.reserved[uid] = r
	p.mu.Unlock()
}

func (p *gpuShare) reservationOf(uid types.UID) (reservation, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	r, ok := p.reserved[uid]
	return r, ok
}

// outsidePool is Filter's refusal of a node that is not in the GPU pool
// (gpuinventory.InGPUPool) when the arg gpuPool is on, nil otherwise. The
// refusal is UnschedulableAndUnresolvable: preempting pods frees no pool
// label, so the scheduler does not try.
func (p *gpuShare) outsidePool(node *v1.Node) *fwk.Status {
	if !p.pool || gpuinventory.InGPUPool(node) {
		return nil
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msgOutsidePool)
}

// msgOutsidePool is outsidePool's reason, shown in FailedScheduling events.
const msgOutsidePool = "node is outside hetsev's GPU pool: no label " + v1alpha1.LabelGPUPool + "=" + v1alpha1.GPUPoolValue + " (HetsevGPUShare arg gpuPool is on)"

func (p *gpuShare) reasonNoGPU(memo *noGPUReasons, nodeInfo fwk.NodeInfo, gpus []gpuinventory.GPU, d gpuinventory.Demand) string {
	return p.noGPUMessage(memo, p.noGPUKind(nodeInfo, gpus, d), d)
}

// noGPUKind is which of reasonNoGPU's messages fits a node where no GPU
// admits d.
func (p *gpuShare) noGPUKind(nodeInfo fwk.NodeInfo, gpus []gpuinventory.GPU, d gpuinventory.Demand) int {
	pl := p.placer.OnNode(nodeInfo.Node().GetLabels())
	// placement.Placer.Refusal checks the cheap rules first, so a GPU that
	// hosts the model is refused before its inflation is predicted.
	var memory, capacity, busy, anti, inflation int
	for _, g := range gpus {
		switch pl.Refusal(g, d) {
		case placement.RefusedGPUMemory:
			memory++
		case placement.RefusedCapacity:
			capacity++
		case placement.RefusedBusyShare:
			busy++
		case placement.RefusedAntiAffinity:
			anti++
		case placement.RefusedInflationLimit:
			inflation++
		}
	}
	switch {
	case memory == len(gpus):
		return reasonMemory
	case memory+capacity == len(gpus):
		return reasonCapacity
	case memory+capacity+busy == len(gpus):
		return reasonBusyShare
	case anti == 0:
		return reasonInflation
	case inflation == 0:
		return reasonAntiAffinity
	}
	return reasonAntiAffinityOrInflation
}

// noGPUMessage is the message of kind for demand d, built once per cycle
// in memo.
func (p *gpuShare) noGPUMessage(memo *noGPUReasons, kind int, d gpuinventory.Demand) string {
	return memo.say(kind, func() string {
		switch kind {
		case reasonMemory:
			return fmt.Sprintf("no GPU with %d MiB of free GPU memory", d.MemoryMiB)
		case reasonCapacity:
			return fmt.Sprintf("no GPU with %d MiB of free GPU memory and room for another claim in the capacities its DRA driver charges every claim (e.g. shares)", d.MemoryMiB)
		case reasonBusyShare:
			return fmt.Sprintf("every GPU with %d MiB free would exceed busy share %g with this pod's %s %g", d.MemoryMiB, p.placer.Choice.MaxBusyShare, v1alpha1.AnnotationBusyShare, d.Busy())
		case reasonInflation:
			return fmt.Sprintf("every GPU with %d MiB free and busy share to spare would inflate this pod's or a neighbour's latency past its %s", d.MemoryMiB, v1alpha1.AnnotationMaxInflation)
		case reasonAntiAffinity:
			return fmt.Sprintf("every GPU with %d MiB free and busy share to spare already hosts model %q (anti-affinity)", d.MemoryMiB, d.Identity())
		}
		return fmt.Sprintf("every GPU with %d MiB free and busy share to spare already hosts model %q (anti-affinity) or would inflate this pod's or a neighbour's latency past its %s", d.MemoryMiB, d.Identity(), v1alpha1.AnnotationMaxInflation)
	})
}

// Kinds of reasonNoGPU's message.
const (
	reasonMemory = iota
	reasonCapacity
	reasonBusyShare
	reasonInflation
	reasonAntiAffinity
	reasonAntiAffinityOrInflation
	reasonKinds
)

// noGPUReasons are a cycle's reasonNoGPU messages, built once per kind:
// they depend on the pod's demand and the plugin's arguments, not on the
// node, and Filter refuses hundreds of nodes per pod on a full cluster.
type noGPUReasons struct {
	once [reasonKinds]sync.Once
	msg  [reasonKinds]string
}

func (m *noGPUReasons) say(kind int, build func() string) string {
	m.once[kind].Do(func() { m.msg[kind] = build() })
	return m.msg[kind]
}

// picked is placement.Placer.Pick's answer for one demand on one node.
type picked struct {
	idx    int
	rating float64
	clash  bool
	ok     bool
	// noGPU is, when !ok, the kind of reasonNoGPU's message (noGPUKind).
	noGPU int
}

// score is a pick's node score: its rating in [0, 1] times ratingScale,
// or, on a GPU that already hosts the pod's model (soft anti-affinity
// only), a negative score that NormalizeScore puts below every other node.
// A node where nothing fits scores 0.
func (r picked) score() int64 {
	if !r.ok {
		return 0
	}
	s := int64(r.rating * ratingScale)
	if r.clash {
		return -1 - s
	}
	return s
}

// ratingScale keeps four digits of a rating in an integer score.
const ratingScale = 10000

// ScoreExtensions implements fwk.ScorePlugin.
func (p *gpuShare) ScoreExtensions() fwk.ScoreExtensions { return p }

// NormalizeScore scales scores to [1, MaxNodeScore] relative to the best
// node, and puts nodes whose GPU would host the pod's model twice at 0.
func (p *gpuShare) NormalizeScore(_ context.Context, _ fwk.CycleState, _ *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
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

// bindWithGPUIndex binds the pod to the node and writes the GPU reserved
// for it as hetsev.io/gpu-index, with its predicted inflation and GPU
// neighbours at placement (placedNote), in the same call (in DRA mode too, where it
// is the allocated GPU's index attribute: the metrics adapter joins
// DCGM's per-GPU series to pods with it): the API server's binding
// subresource merges the Binding's annotations into the pod as it sets
// spec.nodeName. The pod is therefore never bound without its GPU (the
// container's NVIDIA_VISIBLE_DEVICES comes from the annotation through the
// downward API), nor left Pending with an index from an attempt that
// failed, and a pod costs one API call, as with the DefaultBinder.
func (p *gpuShare) bindWithGPUIndex(ctx context.Context, pod *v1.Pod, nodeName string) *fwk.Status {
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
	if r.uuid != "" {
		binding.Annotations[v1alpha1.AnnotationGPUUUID] = r.uuid
	}
	r.note.annotate(binding.Annotations)
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
