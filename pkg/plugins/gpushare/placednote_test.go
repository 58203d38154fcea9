package gpushare

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/gpuinventory"
	"github.com/hetsev/hetsev/pkg/placement"
)

func sharePod(name, node, model, mem, idx, busy string) *v1.Pod {
	p := gpuPod(name, node, model, mem, idx)
	p.Annotations[v1alpha1.AnnotationBusyShare] = busy
	return p
}

// predicted is the inflation the co-location model predicts for model on
// a GPU of inv holding placed.
func predicted(t *testing.T, pl placement.Placer, inv gpuinventory.NodeGPUs, placed []gpuinventory.Placement, model string) float64 {
	t.Helper()
	gpus, stray := gpuinventory.Account(inv, placed)
	if len(stray) > 0 {
		t.Fatalf("stray placements %v", stray)
	}
	return pl.Inflation(gpus[0], gpuinventory.Demand{Model: model}) // placed cluster-wide: no scope
}

// TestBindingShowsInflationAndNeighbours: ssd joins resnet50 on a node's
// only GPU; the binding carries, beside the GPU index, ssd's predicted
// inflation there (the co-location model's, above 1 with a busy
// neighbour) and resnet50 as its neighbour.
func TestBindingShowsInflationAndNeighbours(t *testing.T) {
	ctx := context.Background()
	n := oneGPUNode("one")
	r0 := sharePod("r0", "one", "resnet50", "2Gi", "0", "0.3")
	incoming := sharePod("s0", "", "ssd", "4Gi", "", "0.4")
	client := fake.NewClientset(incoming)
	var bindings []*v1.Binding
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "binding" {
			return false, nil, nil
		}
		bindings = append(bindings, a.(k8stesting.CreateAction).GetObject().(*v1.Binding))
		return true, nil, nil
	})
	p := defaultPlugin(t, handle{snapshot: cache.NewSnapshot([]*v1.Pod{r0}, []*v1.Node{n}), client: client})
	pl := p.placer
	state := framework.NewCycleState()
	if _, st := p.PreFilter(ctx, state, incoming, nil); !st.IsSuccess() {
		t.Fatalf("PreFilter: %v", st)
	}
	if st := p.Reserve(ctx, state, incoming, "one"); !st.IsSuccess() {
		t.Fatalf("Reserve: %v", st)
	}
	if st := p.Bind(ctx, state, incoming, "one"); !st.IsSuccess() {
		t.Fatalf("Bind: %v", st)
	}
	if len(bindings) != 1 {
		t.Fatalf("%d bindings, want 1", len(bindings))
	}
	got := bindings[0].Annotations
	inv := gpuinventory.NodeGPUs{Product: "Tesla-T4", Count: 1, MemoryMiB: 16384}
	want := predicted(t, pl, inv, []gpuinventory.Placement{
		{Index: 0, Demand: gpuinventory.Demand{Model: "resnet50", MemoryMiB: 2048, BusyShare: 0.3}},
		{Index: 0, Demand: gpuinventory.Demand{Model: "ssd", MemoryMiB: 4096, BusyShare: 0.4}},
	}, "ssd")
	if !(want > 1) {
		t.Fatalf("model predicts inflation %g for ssd beside a busy resnet50; the test needs one above 1", want)
	}
	if s := got[v1alpha1.AnnotationPredictedInflation]; s != strconv.FormatFloat(want, 'f', 2, 64) {
		t.Errorf("%s = %q, want %.2f (the co-location model's)", v1alpha1.AnnotationPredictedInflation, s, want)
	}
	if s := got[v1alpha1.AnnotationGPUNeighbours]; s != "default/r0 resnet50 0.3" {
		t.Errorf("%s = %q, want %q", v1alpha1.AnnotationGPUNeighbours, s, "default/r0 resnet50 0.3")
	}
	if got[v1alpha1.AnnotationGPUIndex] != "0" {
		t.Errorf("%s = %q, want 0", v1alpha1.AnnotationGPUIndex, got[v1alpha1.AnnotationGPUIndex])
	}
}

// TestNeighboursListIsBounded: a GPU with ten neighbours lists the first
// eight by name and counts the rest.
func TestNeighboursListIsBounded(t *testing.T) {
	var pods []*v1.Pod
	for i := 9; i >= 0; i-- {
		pods = append(pods, gpuPod(fmt.Sprintf("p%d", i), "a", "", "1Gi", "0"))
	}
	got := formatNeighbours(pods, "default")
	if !strings.HasPrefix(got, "default/p0 - 1, default/p1 - 1,") || !strings.HasSuffix(got, "default/p7 - 1, +2 more") {
		t.Errorf("neighbours %q, want p0..p7 then +2 more", got)
	}
}

// TestNeighboursOfOtherNamespacesAreOnlyCounted: a tenant's pod sees its
// own namespace's neighbours by name and another tenant's only as a count.
func TestNeighboursOfOtherNamespacesAreOnlyCounted(t *testing.T) {
	own := gpuPod("mine", "a", "resnet50", "1Gi", "0")
	theirs := gpuPod("secret-llm", "a", "their-model", "1Gi", "0")
	theirs.Namespace = "team-b"
	other := gpuPod("x", "a", "m", "1Gi", "0")
	other.Namespace = "team-c"
	if got, want := formatNeighbours([]*v1.Pod{theirs, own, other}, "default"), "default/mine resnet50 1, +2 in other namespaces"; got != want {
		t.Errorf("neighbours %q, want %q", got, want)
	}
	if got, want := formatNeighbours([]*v1.Pod{theirs}, "default"), "+1 in other namespaces"; got != want {
		t.Errorf("neighbours %q, want %q", got, want)
	}
}

// TestDRABindingShowsInflationAndNeighbours: in GPU mode dra, llama's claim
// is allocated on the GPU whose claim c (model other) already holds; the
// binding names c, found through its claim's reservedFor (c carries no
// hetsev.io/gpu-index), and llama's predicted inflation beside it.
func TestDRABindingShowsInflationAndNeighbours(t *testing.T) {
	d := draPod("d", "llama", "d-gpu")
	c := draPod("c", "other", "c-gpu")
	c.Spec.NodeName = "n1"
	cClaim := gpuClaim("c-gpu", "4Gi")
	cClaim.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
		{Request: v1alpha1.ClaimRequestName, Driver: v1alpha1.DRADriver, Pool: "n1", Device: "gpu-0", ShareID: ptr.To(types.UID("c-share")),
			ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{v1alpha1.DRAMemoryCapacity: resource.MustParse("4Gi")}}}}}
	cClaim.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: c.Name, UID: c.UID}}
	tb := newDRATestbed(t, append(deviceClasses(), kubeNode("n1"), gpuSlice("n1", "16Gi"), gpuClaim("d-gpu", "4Gi"), cClaim, c, d)...)
	bindings := tb.captureBindings()
	state, _ := tb.cycle(t, d)
	if st := tb.plugin.Reserve(tb.ctx, state, d, "n1"); !st.IsSuccess() {
		t.Fatalf("Reserve: %v", st)
	}
	if st := tb.plugin.PreBind(tb.ctx, state, d, "n1"); !st.IsSuccess() {
		t.Fatalf("PreBind: %v", st)
	}
	if st := tb.plugin.Bind(tb.ctx, state, d, "n1"); !st.IsSuccess() {
		t.Fatalf("Bind: %v", st)
	}
	if len(*bindings) != 1 {
		t.Fatalf("%d bindings, want 1", len(*bindings))
	}
	got := (*bindings)[0].Annotations
	want := predicted(t, tb.plugin.placer, gpuinventory.NodeGPUs{Count: 1, MemoryMiB: 16384}, []gpuinventory.Placement{
		{Index: 0, Demand: gpuinventory.Demand{Model: "other", MemoryMiB: 4096}},
		{Index: 0, Demand: gpuinventory.Demand{Model: "llama", MemoryMiB: 4096}},
	}, "llama")
	if !(want > 1) {
		t.Fatalf("model predicts inflation %g beside a neighbour busy all the time; the test needs one above 1", want)
	}
	if s := got[v1alpha1.AnnotationPredictedInflation]; s != strconv.FormatFloat(want, 'f', 2, 64) {
		t.Errorf("%s = %q, want %.2f", v1alpha1.AnnotationPredictedInflation, s, want)
	}
	if s := got[v1alpha1.AnnotationGPUNeighbours]; s != "default/c other 1" {
		t.Errorf("%s = %q, want %q", v1alpha1.AnnotationGPUNeighbours, s, "default/c other 1")
	}
}
