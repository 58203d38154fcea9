// Package fairqueue is hetsev-scheduler's QueueSort plugin: HetSev's
// Algorithm 1 steps 1-2 (section 4.2). Pending pods are grouped into k
// classes by k-means over GPU memory and model, and taken by weighted fair
// queueing where a class's weight is its queue length times its median wait,
// so a burst of one model does not starve another. See queue for the tags
// that keep the scheduler's heap consistent.
package fairqueue

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// Name is the plugin's name in KubeSchedulerConfiguration. Enable it at
// queueSort (replacing PrioritySort) and at preFilter, where it learns that
// a pod left the queue.
const Name = "HetsevFairQueue"

var (
	_ fwk.QueueSortPlugin   = &FairQueue{}
	_ fwk.PreFilterPlugin   = &FairQueue{}
	_ fwk.EnqueueExtensions = &FairQueue{}
	_ fwk.SignPlugin        = &FairQueue{}
)

// FairQueue orders the scheduling queue by priority, then fair-queueing tag.
type FairQueue struct {
	q *queue
	// pods is the scheduler's pod cache (nil without an informer factory,
	// in tests): a pod it no longer holds unbound is not tagged.
	pods corelisters.PodLister
}

// The scheduler has one queue, sorted by the first profile's QueueSort
// plugin, while every profile runs its own PreFilter instance: all instances
// of one process with the same arguments share one state.
var (
	sharedMu sync.Mutex
	shared   = map[queueKey]*queue{}
)

// queueKey is what makes a queue: the arguments and the informer factory
// whose pod handler forgets pods for it (one per scheduler process; a
// factory of its own, as a test has, gets a queue of its own).
type queueKey struct {
	k, beta int32
	pods    informers.SharedInformerFactory
}

// New is the plugin factory registered with the scheduler command. Invalid
// arguments are an error naming the field, so the scheduler does not start.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, err := ParseArgs(obj)
	if err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx).WithValues("plugin", Name)
	f := h.SharedInformerFactory()
	sharedMu.Lock()
	key := queueKey{args.K, args.Beta, f}
	q, ok := shared[key]
	if !ok {
		q = newQueue(int(args.K), int(args.Beta), time.Now)
		q.onRounds = roundLogger(logger)
		shared[key] = q
	}
	sharedMu.Unlock()
	if f != nil && !ok {
		_, err := f.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			// A pod that leaves the queue without an attempt here (deleted,
			// bound elsewhere) must not keep weighing on its class.
			UpdateFunc: func(_, obj interface{}) {
				if pod, ok := obj.(*v1.Pod); ok && pod.Spec.NodeName != "" {
					q.forget(pod.UID)
				}
			},
			DeleteFunc: func(obj interface{}) {
				if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = tomb.Obj
				}
				if pod, ok := obj.(*v1.Pod); ok {
					q.forget(pod.UID)
				}
			},
		})
		if err != nil {
			return nil, fmt.Errorf("%s: watching pods: %w", Name, err)
		}
	}
	logger.V(2).Info("plugin initialised", "k", args.K, "beta", args.Beta)
	fq := &FairQueue{q: q}
	if f != nil {
		fq.pods = f.Core().V1().Pods().Lister()
	}
	return fq, nil
}

// roundLogger logs the classes at V(2) when their shapes change and every
// round at V(4).
func roundLogger(logger klog.Logger) func(int, []ClassStats) {
	var last string
	return func(round int, classes []ClassStats) {
		var b strings.Builder
		for i, c := range classes {
			if i > 0 {
				b.WriteString("; ")
			}
			for j, s := range c.Shapes {
				if j > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, "%s/%dMiB", s.Model, s.MemoryMiB)
			}
		}
		desc := b.String()
		v := 4
		if desc != last {
			v, last = 2, desc
		}
		if logger.V(v).Enabled() {
			pending, waits := make([]int, len(classes)), make([]string, len(classes))
			for i, c := range classes {
				pending[i], waits[i] = c.Pending, c.MedianWait.Round(time.Millisecond).String()
			}
			logger.V(v).Info("fair-queueing round", "round", round, "classes", desc, "pending", pending, "medianWait", waits)
		}
	}
}

// Name implements fwk.Plugin.
func (f *FairQueue) Name() string { return Name }

// Less orders pods by priority (higher first, as PrioritySort), then by
// fair-queueing tag, then by the time they were queued.
func (f *FairQueue) Less(a, b fwk.QueuedPodInfo) bool {
	pa, pb := a.GetPodInfo().GetPod(), b.GetPodInfo().GetPod()
	if xa, xb := corev1helpers.PodPriority(pa), corev1helpers.PodPriority(pb); xa != xb {
		return xa > xb
	}
	// A pod is tagged when first compared; tagging the one queued first
	// first keeps arrival order within a class.
	var ta, tb float64
	if b.GetTimestamp().Before(a.GetTimestamp()) {
		tb, ta = f.tagOf(b), f.tagOf(a)
	} else {
		ta, tb = f.tagOf(a), f.tagOf(b)
	}
	if ta != tb {
		return ta < tb
	}
	if !a.GetTimestamp().Equal(b.GetTimestamp()) {
		return a.GetTimestamp().Before(b.GetTimestamp())
	}
	return pa.UID < pb.UID
}

func (f *FairQueue) tagOf(p fwk.QueuedPodInfo) float64 {
	pod := p.GetPodInfo().GetPod()
	if tag, ok := f.q.tagged(pod.UID, p.GetAttempts()); ok {
		return tag // the common case: Less runs O(log n) times per pod
	}
	since := p.GetTimestamp()
	if t := p.GetInitialAttemptTimestamp(); t != nil {
		since = *t
	}
	var waiting func() bool
	if f.pods != nil {
		waiting = func() bool { return stillWaiting(f.pods, pod) }
	}
	return f.q.tag(pod.UID, p.GetAttempts(), ShapeOf(pod), since, waiting)
}

// stillWaiting is whether pod, as the scheduler's queue holds it, still
// waits for a node in the informer's cache: it exists with the same UID
// and is not bound. Errors other than NotFound count as waiting.
func stillWaiting(pods corelisters.PodLister, pod *v1.Pod) bool {
	cur, err := pods.Pods(pod.Namespace).Get(pod.Name)
	if apierrors.IsNotFound(err) {
		return false
	}
	return err != nil || (cur.UID == pod.UID && cur.Spec.NodeName == "")
}

// ShapeOf is the pod's shape for clustering: model and GPU memory from its
// hetsev annotations, or the zero Shape for a pod without them. A malformed
// GPU memory counts as 0 MiB (GPUShare refuses the pod with a reason).
func ShapeOf(pod *v1.Pod) Shape {
	d, ok, err := gpuinventory.DemandOf(pod)
	if !ok {
		return Shape{}
	}
	if err != nil {
		return Shape{Model: pod.Annotations[v1alpha1.AnnotationModel]}
	}
	return Shape{Model: d.Model, MemoryMiB: d.MemoryMiB}
}

// PreFilter records that the pod left the queue for a scheduling attempt
// (the framework pops one pod per cycle) and skips this plugin otherwise.
func (f *FairQueue) PreFilter(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	f.q.popped(pod.UID)
	return nil, fwk.NewStatus(fwk.Skip)
}

// PreFilterExtensions implements fwk.PreFilterPlugin.
func (f *FairQueue) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// EventsToRegister implements fwk.EnqueueExtensions: none. The plugin
// never rejects a pod (PreFilter only records the pop and skips), so no
// event has to bring one back; without this the scheduler would register
// every cluster event on its behalf.
func (f *FairQueue) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return nil, nil
}

// SignPod implements fwk.SignPlugin with no fragment: the plugin filters
// and scores nothing, so it does not turn the scheduler's opportunistic
// batching off.
func (f *FairQueue) SignPod(context.Context, *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return nil, nil
}
