package scaler

import (
	"context"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/hetsev/hetsev/internal/sim/dradriver"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// draT4Slice publishes node's T4s for NVIDIA's DRA driver: one shareable
// device per entry of memory (its memory capacity; "" publishes none).
func draT4Slice(node string, memory ...string) *resourcev1.ResourceSlice {
	s := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-gpus"},
		Spec: resourcev1.ResourceSliceSpec{Driver: v1alpha1.DRADriver, NodeName: &node,
			Pool: resourcev1.ResourcePool{Name: node, ResourceSliceCount: 1}},
	}
	for i, m := range memory {
		idx, product := int64(i), "Tesla T4"
		d := resourcev1.Device{Name: "gpu-" + itoa(i), AllowMultipleAllocations: new(true),
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"index": {IntValue: &idx}, "productName": {StringValue: &product}}}
		if m != "" {
			d.Capacity = map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{v1alpha1.DRAMemoryCapacity: {Value: resource.MustParse(m)}}
		}
		s.Spec.Devices = append(s.Spec.Devices, d)
	}
	return s
}

// draClaim is a claim of hetsev's class for mem, allocated on device of
// node's pool (consuming mem) and reserved for pods.
func draClaim(name, node, device, mem string, pods ...*v1.Pod) *resourcev1.ResourceClaim {
	q := resource.MustParse(mem)
	c := &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpu",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: v1alpha1.DeviceClassName, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1,
				Capacity: &resourcev1.CapacityRequirements{Requests: map[resourcev1.QualifiedName]resource.Quantity{v1alpha1.DRAMemoryCapacity: q}}}}}}},
		Status: resourcev1.ResourceClaimStatus{Allocation: &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
			Request: "gpu", Driver: v1alpha1.DRADriver, Pool: node, Device: device,
			ConsumedCapacity: map[resourcev1.QualifiedName]resource.Quantity{v1alpha1.DRAMemoryCapacity: q}}}}}},
	}
	for _, p := range pods {
		c.Status.ReservedFor = append(c.Status.ReservedFor, resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: p.Name, UID: p.UID})
	}
	return c
}

// draPod is a running hetsev pod on node "a" of model, using claim (no
// hetsev.io/gpu-index: its GPU is its claim's device).
func draPod(name, ms, model, claim string) *v1.Pod {
	p := pod(name, "a", model, "2Gi", "", "2")
	p.Namespace, p.UID = "default", types.UID(name)
	p.Labels = map[string]string{v1alpha1.LabelModelService: ms}
	tpl := "t"
	p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: v1alpha1.PodClaimName, ResourceClaimTemplateName: &tpl}}
	p.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: v1alpha1.PodClaimName, ResourceClaimName: &claim}}
	return p
}

// shippedDeviceClass is hetsev's DeviceClass as manifests/dra ships it.
func shippedDeviceClass(t *testing.T) *resourcev1.DeviceClass {
	t.Helper()
	class, err := dradriver.ShippedDeviceClass(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return class
}

// draCapacity is the reconciler's capacity for resnet50's T4 type (2 GiB
// per instance, 2 CPUs) in GPU mode dra on a cluster of objs: node "a",
// whose GFD labels say two 16 GiB T4s and 40 CPUs, plus objs.
func draCapacity(t *testing.T, objs ...client.Object) typeCapacity {
	t.Helper()
	s, err := validate(resnet(), defaultCatalog(t), draDefaults())
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(append([]client.Object{node("a", 2, 16384, "40"), shippedDeviceClass(t)}, objs...)...).Build()
	r := &Reconciler{Client: c, Defaults: draDefaults(), Catalog: defaultCatalog(t)}
	tc, err := r.capacityFor(context.Background(), s, s.types[0], resource.MustParse("2"), resource.Quantity{})
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

// TestDRAFreeSlotsCountClaimsAllocatedUpstream: in GPU mode dra a T4 is as
// free as its ResourceSlice's memory capacity less what every allocated
// claim consumes, whoever allocated it. A claim the default scheduler's
// DynamicResources plugin allocated on GPU 0 (15 GiB, no hetsev pod behind
// it) leaves 1 GiB there, too little for a 2 GiB resnet50: one free slot,
// not the two the node's GFD labels promise.
func TestDRAFreeSlotsCountClaimsAllocatedUpstream(t *testing.T) {
	if got := draCapacity(t, draT4Slice("a", "16Gi", "16Gi")).slots; got != 2 {
		t.Errorf("two free T4s: %d free slots, want 2", got)
	}
	got := draCapacity(t, draT4Slice("a", "16Gi", "16Gi"), draClaim("upstream", "a", "gpu-0", "15Gi")).slots
	if got != 1 {
		t.Errorf("with an upstream claim of 15 GiB on GPU 0: %d free slots, want 1 (GPU 1)", got)
	}
}

// TestDRAFreeSlotsSkipDevicesWithoutMemory: a device whose slice publishes
// no memory capacity cannot be accounted, and hetsev-scheduler does not
// place on it: it offers no slot, though the node's GFD labels count it.
// A device of another product (a V100 beside the T4s) offers none to the
// T4 type either.
func TestDRAFreeSlotsSkipDevicesWithoutMemory(t *testing.T) {
	s := draT4Slice("a", "16Gi", "")
	if got := draCapacity(t, s).slots; got != 1 {
		t.Errorf("one T4 without memory capacity: %d free slots, want 1", got)
	}
	v100 := "Tesla V100-SXM2-32GB"
	s = draT4Slice("a", "16Gi", "32Gi")
	s.Spec.Devices[1].Attributes["productName"] = resourcev1.DeviceAttribute{StringValue: &v100}
	if got := draCapacity(t, s).slots; got != 1 {
		t.Errorf("one T4 and one V100: %d free T4 slots, want 1", got)
	}
}

// TestDRAInflationFromClaims: the co-location inflation of running
// instances finds each one's GPU from its claim's allocation: a resnet50
// sharing GPU 1 with an ssd instance (both known only through their
// claims) is inflated, and that GPU is out for another resnet50.
func TestDRAInflationFromClaims(t *testing.T) {
	r1, s1 := draPod("r1", "resnet50", "resnet50", "r1-gpu"), draPod("s1", "ssd", "ssd", "s1-gpu")
	tc := draCapacity(t, draT4Slice("a", "16Gi", "16Gi"), r1, s1,
		draClaim("r1-gpu", "a", "gpu-1", "2Gi", r1), draClaim("s1-gpu", "a", "gpu-1", "4Gi", s1))
	if tc.inflation <= 1 {
		t.Errorf("resnet50 beside ssd on GPU 1: mean inflation %.3f, want > 1", tc.inflation)
	}
	if tc.slots != 1 {
		t.Errorf("resnet50 on GPU 1: %d free slots, want 1 (GPU 0)", tc.slots)
	}
}

// TestDRAFreeSlotsFollowTheDeviceClassAndTaints: the scaler counts only
// the GPUs hetsev-scheduler may allocate: those hetsev's DeviceClass
// selects (not a device of another driver's attributes, here one that
// does not allow multiple allocations is already out) and without a
// NoSchedule or NoExecute taint (a driver's health taint); with no
// DeviceClass, none.
func TestDRAFreeSlotsFollowTheDeviceClassAndTaints(t *testing.T) {
	s := draT4Slice("a", "16Gi", "16Gi")
	s.Spec.Devices[1].Taints = []resourcev1.DeviceTaint{{Key: "gpu.nvidia.com/unhealthy", Value: "xid-79", Effect: resourcev1.DeviceTaintEffectNoSchedule}}
	if got := draCapacity(t, s).slots; got != 1 {
		t.Errorf("one of two T4s tainted NoSchedule: %d free slots, want 1", got)
	}
	s = draT4Slice("a", "16Gi", "16Gi")
	s.Spec.Devices[1].Taints = []resourcev1.DeviceTaint{{Key: "example.com/maintenance", Effect: resourcev1.DeviceTaintEffectNone}}
	if got := draCapacity(t, s).slots; got != 2 {
		t.Errorf("a taint of effect None: %d free slots, want 2", got)
	}
	// A class that selects only GPU 0 by its index.
	narrow := shippedDeviceClass(t)
	narrow.Spec.Selectors = append(narrow.Spec.Selectors, resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: `device.attributes["gpu.nvidia.com"].index == 0`}})
	sc, err := validate(resnet(), defaultCatalog(t), draDefaults())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		class *resourcev1.DeviceClass
		want  int
	}{{narrow, 1}, {nil, 0}} {
		objs := []client.Object{node("a", 2, 16384, "40"), draT4Slice("a", "16Gi", "16Gi")}
		if c.class != nil {
			objs = append(objs, c.class)
		}
		cl := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(objs...).Build()
		r := &Reconciler{Client: cl, Defaults: draDefaults(), Catalog: defaultCatalog(t)}
		tc, err := r.capacityFor(context.Background(), sc, sc.types[0], resource.MustParse("2"), resource.Quantity{})
		if err != nil {
			t.Fatal(err)
		}
		if tc.slots != c.want {
			t.Errorf("class %v: %d free slots, want %d", c.class != nil, tc.slots, c.want)
		}
	}
}
