package gpushare

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// A preemptor nominated to n1 (its claim of 12Gi not allocated yet) holds
// that GPU: a pod of lower priority asking 8Gi is refused there by Filter
// (on the NodeInfo with the nominated pod, as the framework's first pass
// builds it) and by Reserve; a pod of higher priority is not held back.
func TestDRANominatedPodHoldsItsGPU(t *testing.T) {
	pre := draPod("pre", "llama", "pre-gpu")
	pre.Spec.Priority = ptr.To[int32](100)
	pre.Status.NominatedNodeName = "n1"
	low := draPod("low", "mistral", "low-gpu")
	low.Spec.Priority = ptr.To[int32](0)
	high := draPod("high", "mistral", "high-gpu")
	high.Spec.Priority = ptr.To[int32](200)
	tb := newDRATestbed(t, append(deviceClasses(), kubeNode("n1"), gpuSlice("n1", "16Gi"),
		gpuClaim("pre-gpu", "12Gi"), gpuClaim("low-gpu", "8Gi"), gpuClaim("high-gpu", "8Gi"), pre, low, high)...)
	tb.h.nominated = map[string][]*v1.Pod{"n1": {pre}}

	state, filtered := tb.cycle(t, low)
	if !filtered["n1"].IsSuccess() {
		t.Fatalf("Filter of low on n1 without nominated pods: %v", filtered["n1"])
	}
	ni, err := tb.h.snapshot.NodeInfos().Get("n1")
	if err != nil {
		t.Fatal(err)
	}
	withPre := ni.Snapshot()
	pi, err := framework.NewPodInfo(pre)
	if err != nil {
		t.Fatal(err)
	}
	withPre.AddPodInfo(pi)
	if st := tb.plugin.Filter(tb.ctx, state, low, withPre); st.IsSuccess() {
		t.Errorf("Filter of low on n1 with the nominated preemptor passes; its 12Gi are held")
	}
	if st := tb.plugin.Reserve(tb.ctx, state, low, "n1"); st.IsSuccess() {
		t.Errorf("Reserve of low on n1 took the GPU held for the nominated preemptor")
		tb.plugin.Unreserve(tb.ctx, state, low, "n1")
	}
	hState, _ := tb.cycle(t, high)
	if st := tb.plugin.Reserve(tb.ctx, hState, high, "n1"); !st.IsSuccess() {
		t.Errorf("Reserve of high (above the preemptor's priority) on n1: %v", st)
	}
}

// A preemptor that fits only once its victim (a lower-priority pod whose
// claim holds 8Gi of the GPU) has left is counted on that GPU on top of
// the victim: another low-priority pod finds no room there.
func TestDRANominatedPodCountedAfterPreemption(t *testing.T) {
	victim := draPod("victim", "other", "victim-gpu")
	victim.Spec.NodeName = "n1"
	victim.Spec.Priority = ptr.To[int32](0)
	vClaim := gpuClaim("victim-gpu", "8Gi")
	vClaim.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
		{Request: v1alpha1.ClaimRequestName, Driver: v1alpha1.DRADriver, Pool: "n1", Device: "gpu-0", ShareID: ptr.To(types.UID("v-share")),
			ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{v1alpha1.DRAMemoryCapacity: resource.MustParse("8Gi")}}}}}
	vClaim.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: victim.Name, UID: victim.UID}}
	pre := draPod("pre", "llama", "pre-gpu")
	pre.Spec.Priority = ptr.To[int32](100)
	low := draPod("low", "mistral", "low-gpu")
	low.Spec.Priority = ptr.To[int32](0)
	tb := newDRATestbed(t, append(deviceClasses(), kubeNode("n1"), gpuSlice("n1", "16Gi"),
		vClaim, gpuClaim("pre-gpu", "12Gi"), gpuClaim("low-gpu", "2Gi"), victim, pre, low)...)
	tb.h.nominated = map[string][]*v1.Pod{"n1": {pre}}

	state, filtered := tb.cycle(t, low)
	if !filtered["n1"].IsSuccess() {
		t.Fatalf("Filter of low on n1 without nominated pods: %v", filtered["n1"])
	}
	if st := tb.plugin.Reserve(tb.ctx, state, low, "n1"); st.IsSuccess() {
		t.Errorf("Reserve of low on n1 took room the nominated preemptor needs once its victim has left")
	}
}
