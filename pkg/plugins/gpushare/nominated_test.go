package gpushare

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	tf "k8s.io/kubernetes/pkg/scheduler/testing/framework"
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
