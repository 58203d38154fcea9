package gpushare

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	tf "k8s.io/kubernetes/pkg/scheduler/testing/framework"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// nominations is the scheduler's record of preemptors waiting for the
// victims they evicted: pods nominated to a node.
type nominations map[string][]fwk.PodInfo

func (n nominations) AddNominatedPod(klog.Logger, fwk.PodInfo, *fwk.NominatingInfo) {}
func (n nominations) DeleteNominatedPodIfExists(*v1.Pod)                            {}
func (n nominations) UpdateNominatedPod(klog.Logger, *v1.Pod, fwk.PodInfo)          {}
func (n nominations) NominatedPodsForNode(node string) []fwk.PodInfo                { return n[node] }

func withPriority(p *v1.Pod, prio int32) *v1.Pod {
	p.Spec.Priority = &prio
	return p
}

// TestGPUShareCountsNominatedPods: a preemptor nominated to a node holds
// the GPU it will take there against pods of lower or equal priority, as
// the framework's filters with nominated pods hold CPU and memory
// (RunFilterPluginsWithNominatedPods), so the GPU its preemption freed is
// not taken by another pod in the meantime. Node a has two 16 GiB T4s.
func TestGPUShareCountsNominatedPods(t *testing.T) {
	ctx := context.Background()
	metrics.Register() // the framework records into the scheduler's metrics
	a := t4Node("a")
	for _, tc := range []struct {
		name   string
		onNode []*v1.Pod // bound to a
		// preemptor, priority 100, nominated to a
		preemptor *v1.Pod
		incoming  *v1.Pod
		wantFit   bool
		why       string
	}{{
		name: "victim gone: the freed GPU is the preemptor's",
		// GPU 0 is full with a pod as important as the preemptor; the
		// victim on GPU 1 is gone.
		onNode:    []*v1.Pod{withPriority(gpuPod("x", "a", "x", "16Gi", "0"), 100)},
		preemptor: withPriority(gpuPod("h", "", "h", "12Gi", ""), 100),
		incoming:  withPriority(gpuPod("l", "", "l", "8Gi", ""), 0),
		why:       "GPU 1 is the preemptor's (12 of 16 GiB): 4 GiB left for an 8 GiB pod",
	}, {
		name: "victim still terminating: the GPU it frees is the preemptor's",
		// The victim (priority 0, 10 GiB) still runs on GPU 1, which has
		// 6 GiB free: a 6 GiB pod taking them would leave the preemptor
		// 10 GiB once the victim is gone, short of its 12 GiB.
		onNode: []*v1.Pod{
			withPriority(gpuPod("x", "a", "x", "16Gi", "0"), 100),
			withPriority(gpuPod("victim", "a", "v", "10Gi", "1"), 0),
		},
		preemptor: withPriority(gpuPod("h", "", "h", "12Gi", ""), 100),
		incoming:  withPriority(gpuPod("l", "", "l", "6Gi", ""), 0),
		why:       "GPU 1 is promised to the preemptor once its victim has gone",
	}, {
		name:      "a pod of higher priority than the preemptor may take the GPU",
		onNode:    []*v1.Pod{withPriority(gpuPod("x", "a", "x", "16Gi", "0"), 100)},
		preemptor: withPriority(gpuPod("h", "", "h", "12Gi", ""), 100),
		incoming:  withPriority(gpuPod("top", "", "top", "8Gi", ""), 1000),
		wantFit:   true,
		why:       "the framework counts nominated pods only against pods of lower or equal priority",
	}, {
		name:      "room for both",
		onNode:    []*v1.Pod{withPriority(gpuPod("x", "a", "x", "8Gi", "0"), 100)},
		preemptor: withPriority(gpuPod("h", "", "h", "12Gi", ""), 100),
		incoming:  withPriority(gpuPod("l", "", "l", "8Gi", ""), 0),
		wantFit:   true,
		why:       "the preemptor takes GPU 1, the 8 GiB pod fits the 8 GiB left on GPU 0",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			snapshot := cache.NewSnapshot(tc.onNode, []*v1.Node{a})
			nominated, err := framework.NewPodInfo(tc.preemptor)
			if err != nil {
				t.Fatal(err)
			}
			fw, err := tf.NewFramework(ctx, []tf.RegisterPluginFunc{
				tf.RegisterQueueSortPlugin(queuesort.Name, queuesort.New),
				tf.RegisterBindPlugin(defaultbinder.Name, defaultbinder.New),
				tf.RegisterPluginAsExtensions(Name, New, "PreFilter", "Filter"),
			}, "hetsev-scheduler",
				frameworkruntime.WithSnapshotSharedLister(snapshot),
				frameworkruntime.WithPodNominator(nominations{"a": {nominated}}))
			if err != nil {
				t.Fatal(err)
			}
			state := framework.NewCycleState()
			if _, st, _ := fw.RunPreFilterPlugins(ctx, state, tc.incoming); !st.IsSuccess() {
				t.Fatalf("PreFilter: %v", st)
			}
			ni, err := snapshot.NodeInfos().Get("a")
			if err != nil {
				t.Fatal(err)
			}
			st := fw.RunFilterPluginsWithNominatedPods(ctx, state, tc.incoming, ni)
			if st.IsSuccess() != tc.wantFit {
				t.Errorf("%s fits with %s nominated: %v (%v), want %v: %s", tc.incoming.Name, tc.preemptor.Name, st.IsSuccess(), st.Message(), tc.wantFit, tc.why)
			}
			// Without the nomination (the node as the snapshot holds it,
			// whose accounting is cached) the pod fits in every case.
			if st := fw.RunFilterPlugins(ctx, state, tc.incoming, ni); !st.IsSuccess() {
				t.Errorf("%s without the nomination: %v, want it to fit", tc.incoming.Name, st)
			}
		})
	}
}

// TestGPUShareScoreReserveCountNominatedPods: Score and Reserve count a
// preemptor nominated to the node as Filter does, so worst fit does not
// send a pod of lower priority to the GPU the preemption freed. Node a has
// two 16 GiB T4s: GPU 0 holds x (8 GiB, as important as the preemptor),
// GPU 1 is empty (its victim gone) and promised to the preemptor h (12 GiB,
// nominated to a), the only GPU h fits. Node b is a as Filter sees it: h
// bound on GPU 1.
func TestGPUShareScoreReserveCountNominatedPods(t *testing.T) {
	ctx := context.Background()
	metrics.Register()
	a, b := t4Node("a"), t4Node("b")
	onNodes := []*v1.Pod{
		withPriority(gpuPod("x", "a", "x", "8Gi", "0"), 100),
		withPriority(gpuPod("bx", "b", "x", "8Gi", "0"), 100),
		withPriority(gpuPod("bh", "b", "h", "12Gi", "1"), 100),
	}
	preemptor := withPriority(gpuPod("h", "", "h", "12Gi", ""), 100)
	for _, tc := range []struct {
		name     string
		incoming *v1.Pod
		counted  bool // whether h counts against incoming
		wantGPU  int
	}{{
		name:     "lower priority: the freed GPU is the preemptor's",
		incoming: withPriority(gpuPod("l", "", "l", "4Gi", ""), 0),
		counted:  true,
		wantGPU:  0,
	}, {
		name:     "higher priority: the framework does not count the preemptor",
		incoming: withPriority(gpuPod("top", "", "top", "4Gi", ""), 1000),
		wantGPU:  1, // worst fit: the empty GPU
	}} {
		t.Run(tc.name, func(t *testing.T) {
			snapshot := cache.NewSnapshot(onNodes, []*v1.Node{a, b})
			nominated, err := framework.NewPodInfo(preemptor)
			if err != nil {
				t.Fatal(err)
			}
			var p *AnnotationGPUShare
			factory := func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
				pl, err := New(ctx, obj, h)
				p, _ = pl.(*AnnotationGPUShare)
				return pl, err
			}
			fw, err := tf.NewFramework(ctx, []tf.RegisterPluginFunc{
				tf.RegisterQueueSortPlugin(queuesort.Name, queuesort.New),
				tf.RegisterBindPlugin(defaultbinder.Name, defaultbinder.New),
				tf.RegisterPluginAsExtensions(Name, factory, "PreFilter", "Filter", "Score", "Reserve"),
			}, "hetsev-scheduler",
				frameworkruntime.WithSnapshotSharedLister(snapshot),
				frameworkruntime.WithPodNominator(nominations{"a": {nominated}}))
			if err != nil {
				t.Fatal(err)
			}
			state := framework.NewCycleState()
			if _, st, _ := fw.RunPreFilterPlugins(ctx, state, tc.incoming); !st.IsSuccess() {
				t.Fatalf("PreFilter: %v", st)
			}
			niA, err := snapshot.NodeInfos().Get("a")
			if err != nil {
				t.Fatal(err)
			}
			niB, err := snapshot.NodeInfos().Get("b")
			if err != nil {
				t.Fatal(err)
			}
			if st := fw.RunFilterPluginsWithNominatedPods(ctx, state, tc.incoming, niA); !st.IsSuccess() {
				t.Fatalf("Filter(a): %v, want it to fit", st)
			}
			sa, st := p.Score(ctx, state, tc.incoming, niA)
			if !st.IsSuccess() {
				t.Fatalf("Score(a): %v", st)
			}
			sb, _ := p.Score(ctx, state, tc.incoming, niB)
			if tc.counted && sa != sb {
				t.Errorf("Score(a) = %d, want %d: node a with %s nominated, as Filter sees it (h on GPU 1, as on node b)", sa, sb, preemptor.Name)
			}
			if !tc.counted && sa == sb {
				t.Errorf("Score(a) = Score(b) = %d, want a's empty GPU 1 to rate higher: %s does not count against a pod of higher priority", sa, preemptor.Name)
			}
			if st := p.Reserve(ctx, state, tc.incoming, "a"); !st.IsSuccess() {
				t.Fatalf("Reserve(a): %v", st)
			}
			r, ok := p.reservationOf(tc.incoming.UID)
			if !ok || r.node != "a" || r.index != tc.wantGPU {
				t.Errorf("%s reserved %+v (ok %v), want GPU %d on a (%s=%d at Bind)", tc.incoming.Name, r, ok, tc.wantGPU, v1alpha1.AnnotationGPUIndex, tc.wantGPU)
			}
		})
	}
}
