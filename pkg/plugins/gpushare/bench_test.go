package gpushare

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	internalqueue "k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
)

// queueHandle is handle with the scheduler's own scheduling queue as the
// nominator, counting the plugin's calls to NominatedPodsForNode: each
// takes the queue's locks, which the informers' event handlers take to
// write on every pod event.
type queueHandle struct {
	handle
	queue *internalqueue.PriorityQueue
	calls *atomic.Int64
}

func (h queueHandle) NominatedPodsForNode(node string) []fwk.PodInfo {
	h.calls.Add(1)
	return h.queue.NominatedPodsForNode(node)
}

func newQueueHandle(ctx context.Context, snapshot *cache.Snapshot) queueHandle {
	metrics.Register() // the queue records into the scheduler's metrics
	return queueHandle{handle: handle{snapshot: snapshot}, queue: internalqueue.NewTestQueue(ctx, nil), calls: &atomic.Int64{}}
}

// TestScoreAndReserveDoNotAskTheQueue: with no pod nominated anywhere,
// Score on every node and Reserve make no call into the scheduling queue
// (the framework has already asked it once per node for Filter); they pick
// on the accounting Filter saw (nominatedViews).
func TestScoreAndReserveDoNotAskTheQueue(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nodes := []*v1.Node{t4Node("a"), t4Node("b"), t4Node("c")}
	snapshot := cache.NewSnapshot(nil, nodes)
	h := newQueueHandle(ctx, snapshot)
	args, err := ParseArgs(nil)
	if err != nil {
		t.Fatal(err)
	}
	p := newAnnotationGPUShare(h, args.placer())
	pod := gpuPod("p", "", "resnet50", "2Gi", "")
	state := framework.NewCycleState()
	if _, st := p.PreFilter(ctx, state, pod, nil); !st.IsSuccess() {
		t.Fatal(st)
	}
	infos, err := snapshot.NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	for _, ni := range infos {
		if st := p.Filter(ctx, state, pod, ni); !st.IsSuccess() {
			t.Fatalf("Filter(%s): %v", ni.Node().Name, st)
		}
		if _, st := p.Score(ctx, state, pod, ni); !st.IsSuccess() {
			t.Fatalf("Score(%s): %v", ni.Node().Name, st)
		}
	}
	if st := p.Reserve(ctx, state, pod, "a"); !st.IsSuccess() {
		t.Fatalf("Reserve: %v", st)
	}
	if n := h.calls.Load(); n != 0 {
		t.Errorf("Score on %d nodes and Reserve called NominatedPodsForNode %d times, want 0", len(infos), n)
	}
}

// BenchmarkSchedulingCycle is the plugin's share of a scheduling cycle as
// in `make bench-scheduler`: 500 nodes of four 16 GiB GPUs, pods of five
// models (2 GiB) scheduled one after the other, each through PreFilter,
// Filter and Score on every node, then Reserve on the best node, where it
// is then assumed (the node's generation moves, as in the scheduler). The
// nominator is the scheduler's own queue (queueHandle), so a call into it
// per node shows in ns/op; calls/op counts them.
func BenchmarkSchedulingCycle(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nodes := make([]*v1.Node, 500)
	for i := range nodes {
		nodes[i] = t4Node(fmt.Sprintf("n%03d", i))
		nodes[i].Labels["nvidia.com/gpu.count"] = "4"
	}
	snapshot := cache.NewSnapshot(nil, nodes)
	infos, err := snapshot.NodeInfos().List()
	if err != nil {
		b.Fatal(err)
	}
	args, err := ParseArgs(nil)
	if err != nil {
		b.Fatal(err)
	}
	h := newQueueHandle(ctx, snapshot)
	p := newAnnotationGPUShare(h, args.placer())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pod := gpuPod(fmt.Sprintf("p%06d", i), "", fmt.Sprintf("model-%d", i%5), "2Gi", "")
		state := framework.NewCycleState()
		if _, st := p.PreFilter(ctx, state, pod, nil); !st.IsSuccess() {
			b.Fatal(st)
		}
		best, bestScore := -1, int64(-1<<62)
		for j, ni := range infos {
			if st := p.Filter(ctx, state, pod, ni); !st.IsSuccess() {
				continue
			}
			s, _ := p.Score(ctx, state, pod, ni)
			if s > bestScore {
				best, bestScore = j, s
			}
		}
		if best < 0 {
			// Full: start over on empty nodes.
			for _, ni := range infos {
				for _, pi := range slices.Clone(ni.GetPods()) { // RemovePod reorders the list
					_ = ni.(*framework.NodeInfo).RemovePod(klog.Background(), pi.GetPod())
				}
			}
			continue
		}
		node := infos[best].Node().Name
		if st := p.Reserve(ctx, state, pod, node); !st.IsSuccess() {
			b.Fatal(st)
		}
		assumed := pod.DeepCopy()
		assumed.Spec.NodeName = node
		infos[best].(*framework.NodeInfo).AddPod(assumed)
	}
	b.ReportMetric(float64(h.calls.Load())/float64(b.N), "calls/op")
}
