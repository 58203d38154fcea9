package gpushare

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// BenchmarkSchedulingCycle is the plugin's share of a scheduling cycle as
// in `make bench-scheduler`: 500 nodes of four 16 GiB GPUs, pods of five
// models (2 GiB) scheduled one after the other, each through PreFilter,
// Filter and Score on every node, then Reserve on the best node, where it
// is then assumed (the node's generation moves, as in the scheduler).
func BenchmarkSchedulingCycle(b *testing.B) {
	ctx := context.Background()
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
	p := newAnnotationGPUShare(handle{snapshot: snapshot}, args.placer())
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
				for _, pi := range ni.GetPods() {
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
}
