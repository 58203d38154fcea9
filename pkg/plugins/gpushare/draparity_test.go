package gpushare

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/dra"
)

// TestDRARefusesWhatItCannotAllocate: where upstream's DynamicResources
// would act and hetsev's profile (which disables it) cannot, PreFilter
// says so and the pod stays Pending with the reason: a request of an
// extended resource a DeviceClass backs with DRA devices (explicit name,
// or the implicit deviceclass.resource.kubernetes.io/<class>), and a GPU
// entry for which the ResourceClaim controller generated no claim.
func TestDRARefusesWhatItCannotAllocate(t *testing.T) {
	classes := deviceClasses()
	backed := classes[1].(*resourceapi.DeviceClass).DeepCopy()
	backed.Name = "gpu-er"
	backed.Spec.ExtendedResourceName = ptr.To("example.com/gpu")
	tb := newDRATestbed(t, append(classes, backed, kubeNode("a"), gpuSlice("a", "16Gi"), gpuClaim("c", "2Gi"))...)

	withLimit := func(name v1.ResourceName) *v1.Pod {
		p := draPod("er-"+strings.ReplaceAll(string(name), "/", "-"), "resnet50", "c")
		p.Spec.Containers = []v1.Container{{Name: "server", Resources: v1.ResourceRequirements{Limits: v1.ResourceList{name: resource.MustParse("1")}}}}
		return p
	}
	unneeded := draPod("unneeded", "resnet50", "c")
	unneeded.Spec.ResourceClaims[0].ResourceClaimName = nil
	unneeded.Spec.ResourceClaims[0].ResourceClaimTemplateName = ptr.To("t")
	unneeded.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: v1alpha1.PodClaimName}}
	for _, c := range []struct {
		pod  *v1.Pod
		want string
	}{
		{withLimit("example.com/gpu"), "requests example.com/gpu, an extended resource DeviceClass gpu-er backs"},
		{withLimit(v1.ResourceName(resourceapi.ResourceDeviceClassPrefix + v1alpha1.DeviceClassName)), "DeviceClass " + v1alpha1.DeviceClassName + " backs"},
		{unneeded, "generated no claim for spec.resourceClaims entry \"gpu\""},
	} {
		_, st := tb.plugin.PreFilter(tb.ctx, framework.NewCycleState(), c.pod, nil)
		if st.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(st.Message(), c.want) {
			t.Errorf("%s: PreFilter %v, want UnschedulableAndUnresolvable saying %q", c.pod.Name, st, c.want)
		}
	}
	// An ordinary extended resource is not refused here.
	ok := withLimit("example.com/fpga")
	if _, st := tb.plugin.PreFilter(tb.ctx, framework.NewCycleState(), ok, nil); !st.IsSuccess() {
		t.Errorf("a pod with an extended resource no DeviceClass backs: %v", st)
	}
}

// TestDRASkipsDevicesWithBindingConditions: a device that needs binding
// conditions (the driver prepares it before the pod may bind) is not
// offered: hetsev-scheduler binds without waiting for them.
func TestDRASkipsDevicesWithBindingConditions(t *testing.T) {
	// Worst fit alone would pick gpu-1, the emptier.
	s := gpuSlice("a", "8Gi", "16Gi")
	s.Spec.Devices[1].BindingConditions = []string{"example.com/attached"}
	s.Spec.Devices[1].BindingFailureConditions = []string{"example.com/failed"}
	tb := newDRATestbed(t, append(deviceClasses(), []runtime.Object{kubeNode("a"), s, gpuClaim("c", "2Gi")}...)...)
	tb.schedule(t, draPod("p", "resnet50", "c"), "a")
	if got := allocatedDevice(tb.storedClaim(t, "c"), v1alpha1.DRADriver); got != "a/gpu-0" {
		t.Errorf("allocated %q, want a/gpu-0 (gpu-1 needs binding conditions)", got)
	}
	nd := dra.Inventory([]*resourceapi.ResourceSlice{s}, dra.NVIDIA)["a"]
	if len(nd.Unusable) != 1 || !strings.Contains(nd.Unusable[0].Reason, "binding conditions [example.com/attached]") {
		t.Errorf("unusable %+v, want gpu-1 for its binding conditions", nd.Unusable)
	}
}

// TestDRAPostFilterDeallocatesAClaimPinnedToAFullNode: a pod whose claim
// an earlier attempt allocated on n1 (reserved for it, binding failed) can
// only go to n1; when n1 cannot take it, PostFilter drops the allocation
// so that the next attempt allocates anew. A claim another pod uses keeps
// its allocation.
func TestDRAPostFilterDeallocatesAClaimPinnedToAFullNode(t *testing.T) {
	allocated := func(name string, users ...*v1.Pod) *resourceapi.ResourceClaim {
		c := gpuClaim(name, "4Gi")
		c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
			{Request: v1alpha1.ClaimRequestName, Driver: v1alpha1.DRADriver, Pool: "n1", Device: "gpu-0",
				ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{v1alpha1.DRAMemoryCapacity: resource.MustParse("4Gi")}}}}}
		for _, u := range users {
			c.Status.ReservedFor = append(c.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: u.Name, UID: u.UID})
		}
		return c
	}
	pod := draPod("p", "llama", "p-gpu")
	other := draPod("q", "llama", "q-gpu")
	tb := newDRATestbed(t, append(deviceClasses(), kubeNode("n1"), kubeNode("n2"), gpuSlice("n1", "16Gi"), gpuSlice("n2", "16Gi"),
		allocated("p-gpu", pod), allocated("q-gpu", other), pod)...)

	state, _ := tb.cycle(t, pod)
	_, st := tb.plugin.PostFilter(tb.ctx, state, pod, nil)
	if st.Code() != fwk.Unschedulable || !strings.Contains(st.Message(), "deallocated") {
		t.Errorf("PostFilter: %v, want Unschedulable saying it deallocated the claim", st)
	}
	if got := tb.storedClaim(t, "p-gpu"); got.Status.Allocation != nil || len(got.Status.ReservedFor) != 0 {
		t.Errorf("claim after PostFilter: allocation %v, reservedFor %v; want neither", got.Status.Allocation, got.Status.ReservedFor)
	}

	// Another pod took q-gpu into use between q's PreFilter and its
	// PostFilter: the allocation stays.
	state, _ = tb.cycle(t, other)
	c := tb.storedClaim(t, "q-gpu")
	c.Status.ReservedFor = append(c.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: "r", UID: "r-uid"})
	if _, err := tb.client.ResourceV1().ResourceClaims("default").UpdateStatus(tb.ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, st := tb.plugin.PostFilter(tb.ctx, state, other, nil); st.Code() != fwk.Unschedulable {
		t.Errorf("PostFilter on a claim taken into use meanwhile: %v, want Unschedulable", st)
	}
	if got := tb.storedClaim(t, "q-gpu"); got.Status.Allocation == nil || len(got.Status.ReservedFor) != 2 {
		t.Errorf("a claim in use by r: allocation %v, reservedFor %v; want both kept", got.Status.Allocation, got.Status.ReservedFor)
	}
}

// TestDRABindingNamesTheGPUByUUID: the binding of a pod in GPU mode dra
// carries the allocated device's uuid as hetsev.io/gpu-uuid beside its
// index, when the driver publishes one (the name DCGM's series carry).
func TestDRABindingNamesTheGPUByUUID(t *testing.T) {
	s := gpuSlice("n1", "8Gi", "16Gi")
	for i := range s.Spec.Devices {
		s.Spec.Devices[i].Attributes[dra.AttributeUUID] = resourceapi.DeviceAttribute{StringValue: ptr.To(fmt.Sprintf("GPU-uuid-%d", i))}
	}
	d := draPod("d", "llama", "d-gpu")
	tb := newDRATestbed(t, append(deviceClasses(), kubeNode("n1"), s, gpuClaim("d-gpu", "4Gi"), d)...)
	bindings := tb.captureBindings()
	state := tb.schedule(t, d, "n1")
	if st := tb.plugin.Bind(tb.ctx, state, d, "n1"); !st.IsSuccess() {
		t.Fatalf("Bind: %v", st)
	}
	if len(*bindings) != 1 {
		t.Fatalf("%d bindings, want 1", len(*bindings))
	}
	a := (*bindings)[0].Annotations
	if a[v1alpha1.AnnotationGPUIndex] != "1" || a[v1alpha1.AnnotationGPUUUID] != "GPU-uuid-1" {
		t.Errorf("binding annotations %v, want GPU 1 (the emptier) with its uuid GPU-uuid-1", a)
	}
}

// TestDRACountsTheSharesEveryClaimIsCharged: NVIDIA's integer-shares mode
// charges every claim one of the GPU's shares. With 2 shares, two pods'
// claims go on the one GPU, whose memory would hold more; Filter refuses
// the third with the reason instead of passing it to a Reserve whose
// allocation the allocator refuses.
func TestDRACountsTheSharesEveryClaimIsCharged(t *testing.T) {
	s := gpuSlice("a", "16Gi")
	s.Spec.Devices[0].Capacity["shares"] = resourceapi.DeviceCapacity{Value: resource.MustParse("2"),
		RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: ptr.To(resource.MustParse("1")),
			ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: ptr.To(resource.MustParse("1")), Max: ptr.To(resource.MustParse("2")), Step: ptr.To(resource.MustParse("1"))}}}
	tb := newDRATestbed(t, append(deviceClasses(), kubeNode("a"), s, gpuClaim("c1", "2Gi"), gpuClaim("c2", "2Gi"), gpuClaim("c3", "2Gi"))...)
	tb.schedule(t, draPod("p1", "resnet50", "c1"), "a")
	tb.schedule(t, draPod("p2", "bert", "c2"), "a")
	for _, c := range []string{"c1", "c2"} {
		q := tb.storedClaim(t, c).Status.Allocation.Devices.Results[0].ConsumedCapacity["shares"]
		if q.Value() != 1 {
			t.Errorf("claim %s consumed %s shares, want 1", c, q.String())
		}
	}
	_, filtered := tb.cycle(t, draPod("p3", "ssd", "c3"))
	if st := filtered["a"]; st.Code() != fwk.Unschedulable || !strings.Contains(st.Message(), "room for another claim") {
		t.Errorf("third claim on a GPU of 2 shares: Filter %v, want Unschedulable for want of a share", st)
	}
}
