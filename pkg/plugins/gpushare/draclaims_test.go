package gpushare

import (
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/dra"
)

// A pod with the hetsev claim and a claim of another DeviceClass on
// another driver gets both allocated: Filter keeps only the node with a
// NIC and says why the other is refused, and after Reserve and PreBind
// both claims carry an allocation on that node and reservedFor the pod.
func TestDRAAllocatesOtherClaims(t *testing.T) {
	pod := draPod("p", "llama", "p-gpu", "p-nic")
	objs := append(deviceClasses(), kubeNode("n1"), kubeNode("n2"),
		gpuSlice("n1", "16Gi"), gpuSlice("n2", "16Gi"), nicSlice("n1"),
		gpuClaim("p-gpu", "4Gi"), nicClaim("p-nic"), pod)
	tb := newDRATestbed(t, objs...)

	_, filtered := tb.cycle(t, pod)
	if st := filtered["n2"]; st.IsSuccess() || !strings.Contains(st.Message(), "p-nic") {
		t.Errorf("Filter on n2 (no NIC): %v, want a refusal naming claim p-nic", st)
	}
	tb.schedule(t, pod, "n1")
	for _, tc := range []struct{ claim, driver, want string }{
		{"p-gpu", v1alpha1.DRADriver, "n1/gpu-0"},
		{"p-nic", nicDriver, "n1/nic-0"},
	} {
		c := tb.storedClaim(t, tc.claim)
		if got := allocatedDevice(c, tc.driver); got != tc.want || !dra.ReservedFor(c, pod.UID) {
			t.Errorf("claim %s: allocated on %q, reservedFor %v; want %s and the pod", tc.claim, got, c.Status.ReservedFor, tc.want)
		}
	}
}

// A second pod whose NIC claim finds the node's only NIC in flight for the
// first (reserved, not written yet) is refused there; once the first pod
// is unreserved, its NIC is free again.
func TestDRAOtherClaimInFlightAndRolledBack(t *testing.T) {
	a := draPod("a", "llama", "a-gpu", "a-nic")
	b := draPod("b", "mistral", "b-gpu", "b-nic")
	objs := append(deviceClasses(), kubeNode("n1"), gpuSlice("n1", "16Gi", "16Gi"), nicSlice("n1"),
		gpuClaim("a-gpu", "4Gi"), nicClaim("a-nic"), gpuClaim("b-gpu", "4Gi"), nicClaim("b-nic"), a, b)
	tb := newDRATestbed(t, objs...)

	state, _ := tb.cycle(t, a)
	if st := tb.plugin.Reserve(tb.ctx, state, a, "n1"); !st.IsSuccess() {
		t.Fatalf("Reserve of a: %v", st)
	}
	if _, filtered := tb.cycle(t, b); filtered["n1"].IsSuccess() {
		t.Errorf("Filter of b on n1 passes while a's NIC allocation is in flight")
	}
	tb.plugin.Unreserve(tb.ctx, state, a, "n1")
	for _, c := range []string{"a-gpu-uid", "a-nic-uid"} {
		if got := tb.manager.ResourceClaims().GetPendingAllocation(uidOf(c)); got != nil {
			t.Errorf("claim %s still has a pending allocation after Unreserve", c)
		}
	}
	if _, filtered := tb.cycle(t, b); !filtered["n1"].IsSuccess() {
		t.Errorf("Filter of b on n1 after a's Unreserve: %v", filtered["n1"])
	}
}

// An other claim allocated before, on devices of node n1, sends the pod to
// n1 only, and PreBind adds the pod to its reservedFor without touching
// its allocation.
func TestDRAAllocatedOtherClaim(t *testing.T) {
	pod := draPod("p", "llama", "p-gpu", "p-nic")
	nic := nicClaim("p-nic")
	nic.Status.Allocation = &resourceapi.AllocationResult{
		Devices:      resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{Request: "nic", Driver: nicDriver, Pool: "n1", Device: "nic-0"}}},
		NodeSelector: nodeSelectorFor("n1"),
	}
	objs := append(deviceClasses(), kubeNode("n1"), kubeNode("n2"),
		gpuSlice("n1", "16Gi"), gpuSlice("n2", "32Gi"), nicSlice("n1"),
		gpuClaim("p-gpu", "4Gi"), nic, pod)
	tb := newDRATestbed(t, objs...)

	_, filtered := tb.cycle(t, pod)
	if st := filtered["n2"]; st.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(st.Message(), "p-nic") {
		t.Errorf("Filter on n2: %v, want UnschedulableAndUnresolvable naming p-nic", st)
	}
	tb.schedule(t, pod, "n1")
	c := tb.storedClaim(t, "p-nic")
	if got := allocatedDevice(c, nicDriver); got != "n1/nic-0" || !dra.ReservedFor(c, pod.UID) {
		t.Errorf("claim p-nic: allocated on %q, reservedFor %v; want n1/nic-0 and the pod", got, c.Status.ReservedFor)
	}
}

// A pod with claims but not hetsev's is refused with the reason, not
// skipped: nothing in this profile would allocate its claims.
func TestDRAPodWithoutGPUClaimIsRefused(t *testing.T) {
	pod := draPod("p", "", "unused", "p-nic")
	pod.Annotations = nil
	pod.Spec.ResourceClaims = pod.Spec.ResourceClaims[1:]
	objs := append(deviceClasses(), kubeNode("n1"), nicSlice("n1"), nicClaim("p-nic"), pod)
	tb := newDRATestbed(t, objs...)
	_, st := tb.plugin.PreFilter(tb.ctx, framework.NewCycleState(), pod, nil)
	if st.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(st.Message(), `entry "p-nic"`) {
		t.Errorf("PreFilter of a pod with only a NIC claim: %v, want UnschedulableAndUnresolvable naming entry p-nic", st)
	}
}
