package gpushare

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/utils/ptr"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
)

// TestGPUGauges: two models share node one's GPU and a third pod is
// reserved there but not yet bound; node cpu has no GPU. The gauges show
// one GPU with the three instances' memory, busy share and each
// instance's predicted inflation, and nothing for node cpu.
func TestGPUGauges(t *testing.T) {
	one, cpu := oneGPUNode("one"), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cpu"}}
	r0 := sharePod("r0", "one", "resnet50", "2Gi", "0", "0.25")
	s0 := sharePod("s0", "one", "ssd", "4Gi", "0", "0.5")
	b0 := sharePod("b0", "", "bert", "1Gi", "", "0.125") // reserved, not bound
	web := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "web"}, Spec: v1.PodSpec{NodeName: "one"}}
	nodes := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
	pods := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
	for _, o := range []any{one, cpu} {
		if err := nodes.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range []any{r0, s0, b0, web} {
		if err := pods.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	p := defaultPlugin(t, handle{snapshot: cache.NewSnapshot(nil, nil), client: fake.NewClientset()})
	pl := p.placer
	p.reserve(b0.UID, reservation{node: "one", index: 0})
	c := newGPUCollector(annotationStats{p: p, nodes: corelisters.NewNodeLister(nodes), pods: corelisters.NewPodLister(pods)})

	inv := gpuinventory.NodeGPUs{Product: "Tesla-T4", Count: 1, MemoryMiB: 16384}
	placed := []gpuinventory.Placement{
		{Index: 0, Demand: gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048, BusyShare: 0.25}},
		{Index: 0, Demand: gpuinventory.Demand{Model: "ssd", MemoryMiB: 4096, BusyShare: 0.5}},
		{Index: 0, Demand: gpuinventory.Demand{Model: "bert", MemoryMiB: 1024, BusyShare: 0.125}},
	}
	f := func(model string) string {
		return strconv.FormatFloat(predicted(t, pl, inv, placed, model), 'g', -1, 64)
	}
	gpu := `gpu_index="0",gpu_type="Tesla-T4",node="one"`
	inst := `gpu_index="0",gpu_type="Tesla-T4",namespace="default",node="one",pod=`
	want := fmt.Sprintf(`
# HELP hetsev_gpu_busy_share [ALPHA] Summed declared busy share (hetsev.io/busy-share) of the instances on the GPU.
# TYPE hetsev_gpu_busy_share gauge
hetsev_gpu_busy_share{%[1]s} 0.875
# HELP hetsev_gpu_instance_predicted_inflation [ALPHA] Latency inflation the co-location model predicts for the instance beside its GPU neighbours.
# TYPE hetsev_gpu_instance_predicted_inflation gauge
hetsev_gpu_instance_predicted_inflation{%[5]s"b0"} %[2]s
hetsev_gpu_instance_predicted_inflation{%[5]s"r0"} %[3]s
hetsev_gpu_instance_predicted_inflation{%[5]s"s0"} %[4]s
# HELP hetsev_gpu_instances [ALPHA] Instances hetsev-scheduler counts on the GPU.
# TYPE hetsev_gpu_instances gauge
hetsev_gpu_instances{%[1]s} 3
# HELP hetsev_gpu_memory_free_mib [ALPHA] GPU memory not declared by the instances on the GPU, MiB.
# TYPE hetsev_gpu_memory_free_mib gauge
hetsev_gpu_memory_free_mib{%[1]s} 9216
# HELP hetsev_gpu_memory_used_mib [ALPHA] GPU memory declared by the instances hetsev-scheduler counts on the GPU, MiB.
# TYPE hetsev_gpu_memory_used_mib gauge
hetsev_gpu_memory_used_mib{%[1]s} 7168
`, gpu, f("bert"), f("resnet50"), f("ssd"), inst)
	if err := testutil.CustomCollectAndCompare(c, strings.NewReader(want),
		MetricGPUMemoryUsed, MetricGPUMemoryFree, MetricGPUBusyShare, MetricGPUInstances, MetricGPUInstanceInflation); err != nil {
		t.Error(err)
	}
	for _, m := range []string{"bert", "resnet50", "ssd"} {
		if v := predicted(t, pl, inv, placed, m); !(v > 1) {
			t.Errorf("model predicts %g for %s on a GPU with two busy neighbours; the test needs inflation above 1", v, m)
		}
	}
}

// TestDRAGPUGauges: in GPU mode dra, claims of models other and llama are
// allocated on gpu-0 of node n1 (gpu-1 is empty). The gauges show both
// GPUs by their index attribute, gpu-0 with the claims' memory, the pods'
// busy shares and each pod's predicted inflation.
func TestDRAGPUGauges(t *testing.T) {
	allocated := func(pod *v1.Pod, claim, mem string) *resourceapi.ResourceClaim {
		c := gpuClaim(claim, mem)
		c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
			{Request: v1alpha1.ClaimRequestName, Driver: v1alpha1.DRADriver, Pool: "n1", Device: "gpu-0", ShareID: ptr.To(types.UID(claim + "-share")),
				ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{v1alpha1.DRAMemoryCapacity: resource.MustParse(mem)}}}}}
		c.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: pod.Name, UID: pod.UID}}
		return c
	}
	c := draPod("c", "other", "c-gpu")
	c.Spec.NodeName = "n1"
	c.Annotations[v1alpha1.AnnotationBusyShare] = "0.25"
	e := draPod("e", "llama", "e-gpu")
	e.Spec.NodeName = "n1"
	e.Annotations[v1alpha1.AnnotationBusyShare] = "0.5"
	n1 := kubeNode("n1")
	tb := newDRATestbed(t, append(deviceClasses(), n1, gpuSlice("n1", "16Gi", "16Gi"),
		allocated(c, "c-gpu", "4Gi"), allocated(e, "e-gpu", "2Gi"), c, e)...)
	nodes := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
	if err := nodes.Add(n1); err != nil {
		t.Fatal(err)
	}
	col := newGPUCollector(draStats{p: tb.plugin, nodes: corelisters.NewNodeLister(nodes)})

	pl := tb.plugin.placer
	inv := gpuinventory.NodeGPUs{Count: 1, MemoryMiB: 16384}
	placed := []gpuinventory.Placement{
		{Index: 0, Demand: gpuinventory.Demand{Model: "other", MemoryMiB: 4096, BusyShare: 0.25}},
		{Index: 0, Demand: gpuinventory.Demand{Model: "llama", MemoryMiB: 2048, BusyShare: 0.5}},
	}
	f := func(model string) string {
		v := predicted(t, pl, inv, placed, model)
		if !(v > 1) {
			t.Errorf("model predicts %g for %s beside a busy neighbour; the test needs inflation above 1", v, model)
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	want := fmt.Sprintf(`
# HELP hetsev_gpu_busy_share [ALPHA] Summed declared busy share (hetsev.io/busy-share) of the instances on the GPU.
# TYPE hetsev_gpu_busy_share gauge
hetsev_gpu_busy_share{gpu_index="0",gpu_type="",node="n1"} 0.75
hetsev_gpu_busy_share{gpu_index="1",gpu_type="",node="n1"} 0
# HELP hetsev_gpu_instance_predicted_inflation [ALPHA] Latency inflation the co-location model predicts for the instance beside its GPU neighbours.
# TYPE hetsev_gpu_instance_predicted_inflation gauge
hetsev_gpu_instance_predicted_inflation{gpu_index="0",gpu_type="",namespace="default",node="n1",pod="c"} %s
hetsev_gpu_instance_predicted_inflation{gpu_index="0",gpu_type="",namespace="default",node="n1",pod="e"} %s
# HELP hetsev_gpu_instances [ALPHA] Instances hetsev-scheduler counts on the GPU.
# TYPE hetsev_gpu_instances gauge
hetsev_gpu_instances{gpu_index="0",gpu_type="",node="n1"} 2
hetsev_gpu_instances{gpu_index="1",gpu_type="",node="n1"} 0
# HELP hetsev_gpu_memory_free_mib [ALPHA] GPU memory not declared by the instances on the GPU, MiB.
# TYPE hetsev_gpu_memory_free_mib gauge
hetsev_gpu_memory_free_mib{gpu_index="0",gpu_type="",node="n1"} 10240
hetsev_gpu_memory_free_mib{gpu_index="1",gpu_type="",node="n1"} 16384
# HELP hetsev_gpu_memory_used_mib [ALPHA] GPU memory declared by the instances hetsev-scheduler counts on the GPU, MiB.
# TYPE hetsev_gpu_memory_used_mib gauge
hetsev_gpu_memory_used_mib{gpu_index="0",gpu_type="",node="n1"} 6144
hetsev_gpu_memory_used_mib{gpu_index="1",gpu_type="",node="n1"} 0
`, f("other"), f("llama"))
	if err := testutil.CustomCollectAndCompare(col, strings.NewReader(want),
		MetricGPUMemoryUsed, MetricGPUMemoryFree, MetricGPUBusyShare, MetricGPUInstances, MetricGPUInstanceInflation); err != nil {
		t.Error(err)
	}
}
