package gpushare

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/placement"
)

// poolArgs parses gpuPool as hetsev-scheduler does and fails the test on an
// error.
func poolArgs(t *testing.T, raw string) Args {
	t.Helper()
	a, err := parseArgs(raw)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func inPool(n *v1.Node) *v1.Node {
	n.Labels[v1alpha1.LabelGPUPool] = v1alpha1.GPUPoolValue
	return n
}

// TestGPUPoolAnnotationFilter: with gpuPool on, a node with free GPUs but
// without the pool label is refused, unresolvably and with a reason naming
// the label, and a labelled one passes; with gpuPool off (the default)
// both pass.
func TestGPUPoolAnnotationFilter(t *testing.T) {
	outside, pool := t4Node("outside"), inPool(t4Node("pool"))
	pod := gpuPod("x", "", "m", "1Gi", "")
	for _, c := range []struct {
		args        string
		wantOutside bool // outside passes Filter
	}{
		{args: "gpuPool: true", wantOutside: false},
		{args: "{}", wantOutside: true},
	} {
		t.Run(c.args, func(t *testing.T) {
			p := newAnnotationGPUShare(nil, placement.Placer{})
			p.pool = poolArgs(t, c.args).pool()
			state := framework.NewCycleState()
			if _, st := p.PreFilter(t.Context(), state, pod, nil); !st.IsSuccess() {
				t.Fatalf("PreFilter: %v", st)
			}
			if st := p.Filter(t.Context(), state, pod, nodeInfo(pool)); !st.IsSuccess() {
				t.Errorf("pool node: %v, want success", st)
			}
			st := p.Filter(t.Context(), state, pod, nodeInfo(outside))
			if c.wantOutside {
				if !st.IsSuccess() {
					t.Errorf("node outside the pool with gpuPool off: %v, want success", st)
				}
				return
			}
			if st.Code() != fwk.UnschedulableAndUnresolvable || !contains(st.Message(), v1alpha1.LabelGPUPool+"="+v1alpha1.GPUPoolValue) {
				t.Errorf("node outside the pool: %v, want UnschedulableAndUnresolvable naming %s", st, v1alpha1.LabelGPUPool)
			}
		})
	}
}

// TestGPUPoolDRAFilter: in GPU mode dra with gpuPool on, of two nodes with
// the same free GPU only the labelled one passes Filter, and a claim
// already allocated on a node outside the pool does not bring its pod
// there either.
func TestGPUPoolDRAFilter(t *testing.T) {
	pool := kubeNode("pool")
	pool.Labels[v1alpha1.LabelGPUPool] = v1alpha1.GPUPoolValue
	pod := draPod("a", "llama", "a-gpu")
	tb := newDRATestbed(t, append(deviceClasses(), pool, kubeNode("outside"), gpuSlice("pool", "16Gi"), gpuSlice("outside", "16Gi"),
		gpuClaim("a-gpu", "4Gi"), pod)...)
	tb.plugin.pool = poolArgs(t, "gpuPool: true").pool()
	_, filtered := tb.cycle(t, pod)
	if !filtered["pool"].IsSuccess() {
		t.Errorf("pool node: %v, want success", filtered["pool"])
	}
	if st := filtered["outside"]; st.Code() != fwk.UnschedulableAndUnresolvable || !contains(st.Message(), v1alpha1.LabelGPUPool) {
		t.Errorf("node outside the pool: %v, want UnschedulableAndUnresolvable naming %s", st, v1alpha1.LabelGPUPool)
	}

	b := draPod("b", "llama", "b-gpu")
	claim := gpuClaim("b-gpu", "4Gi")
	claim.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
		{Request: v1alpha1.ClaimRequestName, Driver: v1alpha1.DRADriver, Pool: "outside", Device: "gpu-0", ShareID: ptr.To(types.UID("b-share")),
			ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{v1alpha1.DRAMemoryCapacity: resource.MustParse("4Gi")}}}}}
	claim.Status.Allocation.NodeSelector = nodeSelectorFor("outside")
	tb = newDRATestbed(t, append(deviceClasses(), pool, kubeNode("outside"), gpuSlice("pool", "16Gi"), gpuSlice("outside", "16Gi"), claim, b)...)
	tb.plugin.pool = true
	_, filtered = tb.cycle(t, b)
	if st := filtered["outside"]; st.IsSuccess() {
		t.Errorf("node outside the pool with the claim allocated on it: %v, want refused", st)
	}
}
