package gpushare

import (
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/dra"
)

// A claim updated between Reserve and PreBind (here: labelled) makes
// PreBind's status write conflict; PreBind reads the claim again and
// writes the allocation and reservedFor on the new version, keeping the
// update.
func TestDRAPreBindRetriesOnConflict(t *testing.T) {
	pod := draPod("p", "llama", "p-gpu")
	tb := newDRATestbed(t, append(deviceClasses(), kubeNode("n1"), gpuSlice("n1", "16Gi"), gpuClaim("p-gpu", "4Gi"), pod)...)
	state, _ := tb.cycle(t, pod)
	if st := tb.plugin.Reserve(tb.ctx, state, pod, "n1"); !st.IsSuccess() {
		t.Fatalf("Reserve: %v", st)
	}
	c := tb.storedClaim(t, "p-gpu")
	c.Labels = map[string]string{"touched": "yes"}
	if _, err := tb.client.ResourceV1().ResourceClaims("default").Update(tb.ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if st := tb.plugin.PreBind(tb.ctx, state, pod, "n1"); !st.IsSuccess() {
		t.Fatalf("PreBind after a concurrent update: %v", st)
	}
	got := tb.storedClaim(t, "p-gpu")
	if allocatedDevice(got, v1alpha1.DRADriver) != "n1/gpu-0" || !dra.ReservedFor(got, pod.UID) || got.Labels["touched"] != "yes" {
		t.Errorf("claim after PreBind: allocation %v, reservedFor %v, labels %v; want gpu-0, the pod, the concurrent label", got.Status.Allocation, got.Status.ReservedFor, got.Labels)
	}
}

// A claim allocated elsewhere between Reserve and PreBind makes PreBind
// fail without overwriting that allocation, and Unreserve then drops the
// pending allocation.
func TestDRAPreBindFailsOnClaimAllocatedElsewhere(t *testing.T) {
	pod := draPod("p", "llama", "p-gpu")
	tb := newDRATestbed(t, append(deviceClasses(), kubeNode("n1"), gpuSlice("n1", "16Gi", "16Gi"), gpuClaim("p-gpu", "4Gi"), pod)...)
	state, _ := tb.cycle(t, pod)
	if st := tb.plugin.Reserve(tb.ctx, state, pod, "n1"); !st.IsSuccess() {
		t.Fatalf("Reserve: %v", st)
	}
	c := tb.storedClaim(t, "p-gpu")
	c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
		{Request: v1alpha1.ClaimRequestName, Driver: v1alpha1.DRADriver, Pool: "n1", Device: "gpu-1"}}}}
	if _, err := tb.client.ResourceV1().ResourceClaims("default").UpdateStatus(tb.ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	st := tb.plugin.PreBind(tb.ctx, state, pod, "n1")
	if st.IsSuccess() || !strings.Contains(st.Message(), "allocated elsewhere") {
		t.Errorf("PreBind on a claim allocated elsewhere: %v, want an error saying so", st)
	}
	if got := tb.storedClaim(t, "p-gpu"); allocatedDevice(got, v1alpha1.DRADriver) != "n1/gpu-1" || dra.ReservedFor(got, pod.UID) {
		t.Errorf("claim after the failed PreBind: allocation %v, reservedFor %v; want the other allocation (gpu-1) untouched", got.Status.Allocation, got.Status.ReservedFor)
	}
	tb.plugin.Unreserve(tb.ctx, state, pod, "n1")
	if tb.manager.ResourceClaims().GetPendingAllocation(uidOf("p-gpu-uid")) != nil {
		t.Errorf("pending allocation of p-gpu kept after Unreserve")
	}
}

// Unreserve after Reserve drops the pending allocation, so that another
// pod of the same model gets that GPU; after PreBind it takes the pod out
// of reservedFor and removes the allocation it wrote, and of a claim
// shared with another pod it removes only the pod.
func TestDRAUnreserveRollsBack(t *testing.T) {
	a := draPod("a", "llama", "a-gpu", "shared-nic")
	b := draPod("b", "llama", "b-gpu")
	other := draPod("other", "none", "other-gpu")
	nic := nicClaim("shared-nic")
	nic.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
		{Request: "nic", Driver: nicDriver, Pool: "n1", Device: "nic-0"}}}}
	nic.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: other.Name, UID: other.UID}}
	// gpu-0 is the larger: worst fit picks it for a, and for b once a is
	// gone.
	tb := newDRATestbed(t, append(deviceClasses(), kubeNode("n1"), gpuSlice("n1", "32Gi", "16Gi"), nicSlice("n1"),
		gpuClaim("a-gpu", "4Gi"), gpuClaim("b-gpu", "4Gi"), nic, a, b)...)

	state, _ := tb.cycle(t, a)
	if st := tb.plugin.Reserve(tb.ctx, state, a, "n1"); !st.IsSuccess() {
		t.Fatalf("Reserve of a: %v", st)
	}
	if tb.manager.ResourceClaims().GetPendingAllocation(uidOf("a-gpu-uid")) == nil {
		t.Fatalf("no pending allocation after Reserve")
	}
	tb.plugin.Unreserve(tb.ctx, state, a, "n1")
	if tb.manager.ResourceClaims().GetPendingAllocation(uidOf("a-gpu-uid")) != nil {
		t.Errorf("pending allocation of a-gpu kept after Unreserve")
	}
	bState, _ := tb.cycle(t, b)
	if st := tb.plugin.Reserve(tb.ctx, bState, b, "n1"); !st.IsSuccess() {
		t.Fatalf("Reserve of b: %v", st)
	}
	if r, _ := tb.plugin.reservationOf(b.UID); r.index != 0 {
		t.Errorf("b reserved GPU %d after a's Unreserve, want 0 (a's model no longer there)", r.index)
	}
	tb.plugin.Unreserve(tb.ctx, bState, b, "n1")

	state = tb.schedule(t, a, "n1")
	tb.plugin.Unreserve(tb.ctx, state, a, "n1")
	if got := tb.storedClaim(t, "a-gpu"); got.Status.Allocation != nil || len(got.Status.ReservedFor) > 0 {
		t.Errorf("a-gpu after Unreserve: allocation %v, reservedFor %v; want neither", got.Status.Allocation, got.Status.ReservedFor)
	}
	got := tb.storedClaim(t, "shared-nic")
	if got.Status.Allocation == nil || dra.ReservedFor(got, a.UID) || !dra.ReservedFor(got, other.UID) {
		t.Errorf("shared-nic after Unreserve: allocation %v, reservedFor %v; want its allocation and the other pod only", got.Status.Allocation, got.Status.ReservedFor)
	}
}

// Two pods of the same model reserved back to back, the second before the
// first's PreBind, do not land on the same GPU: the second sees the
// first's model through its pending allocation and the pod it is in flight
// for, although worst fit alone would put it there (gpu-1 holds an
// instance of another model, so interference does not decide).
func TestDRAInFlightAllocationsKeepModelsApart(t *testing.T) {
	a := draPod("a", "llama", "a-gpu")
	b := draPod("b", "llama", "b-gpu")
	c := draPod("c", "other", "c-gpu")
	c.Spec.NodeName = "n1"
	cClaim := gpuClaim("c-gpu", "4Gi")
	cClaim.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
		{Request: v1alpha1.ClaimRequestName, Driver: v1alpha1.DRADriver, Pool: "n1", Device: "gpu-1", ShareID: ptr.To(types.UID("c-share")),
			ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{v1alpha1.DRAMemoryCapacity: resource.MustParse("4Gi")}}}}}
	cClaim.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: c.Name, UID: c.UID}}
	tb := newDRATestbed(t, append(deviceClasses(), kubeNode("n1"), gpuSlice("n1", "32Gi", "16Gi"),
		gpuClaim("a-gpu", "4Gi"), gpuClaim("b-gpu", "4Gi"), cClaim, a, b, c)...)
	aState, _ := tb.cycle(t, a)
	if st := tb.plugin.Reserve(tb.ctx, aState, a, "n1"); !st.IsSuccess() {
		t.Fatalf("Reserve of a: %v", st)
	}
	bState, _ := tb.cycle(t, b)
	if st := tb.plugin.Reserve(tb.ctx, bState, b, "n1"); !st.IsSuccess() {
		t.Fatalf("Reserve of b: %v", st)
	}
	ra, _ := tb.plugin.reservationOf(a.UID)
	rb, _ := tb.plugin.reservationOf(b.UID)
	if ra.index != 0 || rb.index != 1 {
		t.Errorf("a reserved GPU %d and b (same model) GPU %d, want 0 and 1", ra.index, rb.index)
	}
	if st := tb.plugin.PreBind(tb.ctx, aState, a, "n1"); !st.IsSuccess() {
		t.Fatalf("PreBind of a: %v", st)
	}
	if st := tb.plugin.PreBind(tb.ctx, bState, b, "n1"); !st.IsSuccess() {
		t.Fatalf("PreBind of b: %v", st)
	}
	if da, db := allocatedDevice(tb.storedClaim(t, "a-gpu"), v1alpha1.DRADriver), allocatedDevice(tb.storedClaim(t, "b-gpu"), v1alpha1.DRADriver); da == db {
		t.Errorf("claims of a and b both allocated on %s", da)
	}
}
