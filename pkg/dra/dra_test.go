package dra

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	draCEL "k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	_ "k8s.io/kubernetes/pkg/features" // kube-scheduler's feature gates in utilfeature.DefaultFeatureGate
	"k8s.io/utils/ptr"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

func device(name string, index int64, memory string, shared bool) resourceapi.Device {
	d := resourceapi.Device{Name: name, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}}
	if index >= 0 {
		d.Attributes[AttributeIndex] = resourceapi.DeviceAttribute{IntValue: ptr.To(index)}
	}
	if memory != "" {
		d.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{v1alpha1.DRAMemoryCapacity: {Value: resource.MustParse(memory)}}
	}
	if shared {
		d.AllowMultipleAllocations = ptr.To(true)
	}
	return d
}

func slice(node string, gen int64, devs ...resourceapi.Device) *resourceapi.ResourceSlice {
	return &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-gpus"},
		Spec: resourceapi.ResourceSliceSpec{Driver: v1alpha1.DRADriver, NodeName: ptr.To(node),
			Pool: resourceapi.ResourcePool{Name: node, Generation: gen, ResourceSliceCount: 1}, Devices: devs},
	}
}

func claim(name, memory string) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid")},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: v1alpha1.ClaimRequestName,
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: v1alpha1.DeviceClassName, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
				Capacity: &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{v1alpha1.DRAMemoryCapacity: resource.MustParse(memory)}}},
		}}}},
	}
}

func allocated(c *resourceapi.ResourceClaim, node, dev, consumed string) *resourceapi.ResourceClaim {
	c = c.DeepCopy()
	r := resourceapi.DeviceRequestAllocationResult{Request: v1alpha1.ClaimRequestName, Driver: v1alpha1.DRADriver, Pool: node, Device: dev}
	if consumed != "" {
		r.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{v1alpha1.DRAMemoryCapacity: resource.MustParse(consumed)}
	}
	c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{r}}}
	return c
}

// Devices are ordered by their index attribute, only the newest pool
// generation counts, and devices hetsev cannot share are listed with why.
func TestInventory(t *testing.T) {
	nodes := Inventory([]*resourceapi.ResourceSlice{
		slice("n1", 1, device("old", 0, "8Gi", true)),
		slice("n1", 2, device("gpu-b", 0, "32Gi", true), device("gpu-a", 1, "32Gi", true), device("nomem", 2, "", true), device("excl", 3, "16Gi", false)),
		slice("n2", 1, device("gpu-1", -1, "16Gi", true), device("gpu-0", -1, "16Gi", true)),
	}, NVIDIA)
	n1 := nodes["n1"]
	if len(n1.Devices) != 2 || n1.Devices[0].Name != "gpu-b" || n1.Devices[0].Index != 0 || n1.Devices[1].Name != "gpu-a" || n1.Devices[1].MemoryMiB() != 32768 {
		t.Errorf("n1 devices %+v, want gpu-b (index 0), gpu-a (index 1), 32768 MiB", n1.Devices)
	}
	if len(n1.Unusable) != 2 || !strings.Contains(n1.Unusable[0].Reason, `no capacity "memory"`) || !strings.Contains(n1.Unusable[1].Reason, "allowMultipleAllocations") {
		t.Errorf("n1 unusable %+v, want nomem (no memory) and excl (not shared)", n1.Unusable)
	}
	n2 := nodes["n2"]
	if len(n2.Devices) != 2 || n2.Devices[0].Name != "gpu-0" || n2.Devices[0].Index != 0 || n2.Devices[1].Index != 1 {
		t.Errorf("n2 devices %+v, want gpu-0, gpu-1 by name with positions as indexes", n2.Devices)
	}
	if got := MaxMemoryBytes(nodes); got != 32<<30 {
		t.Errorf("MaxMemoryBytes %d, want 32 GiB", got)
	}
}

func TestMemoryRequest(t *testing.T) {
	if _, q, ok, err := MemoryRequest(claim("c", "10Gi"), v1alpha1.DeviceClassName); !ok || err != nil || q.Value() != 10<<30 {
		t.Errorf("10Gi claim: %v %v %v", q, ok, err)
	}
	if _, _, ok, _ := MemoryRequest(claim("c", "1Gi"), "other"); ok {
		t.Errorf("claim of another class read as hetsev's")
	}
	noMem := claim("c", "1Gi")
	noMem.Spec.Devices.Requests[0].Exactly.Capacity = nil
	if _, _, ok, err := MemoryRequest(noMem, v1alpha1.DeviceClassName); !ok || err == nil || !strings.Contains(err.Error(), "capacity.requests.memory") {
		t.Errorf("claim without memory: ok %v err %v, want an error naming capacity.requests.memory", ok, err)
	}
	all := claim("c", "1Gi")
	all.Spec.Devices.Requests[0].Exactly.AllocationMode = resourceapi.DeviceAllocationModeAll
	if _, _, _, err := MemoryRequest(all, v1alpha1.DeviceClassName); err == nil {
		t.Errorf("claim for all devices accepted")
	}
}

// Every allocated claim counts, at the larger of consumed and requested;
// an allocation without memory consumed holds the whole device; the
// memory of a shared claim counts once, its pods' models each.
func TestOccupancy(t *testing.T) {
	nodes := Inventory([]*resourceapi.ResourceSlice{slice("n1", 1, device("gpu-0", 0, "32Gi", true), device("gpu-1", 1, "32Gi", true))}, NVIDIA)
	podA := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default", UID: "a", Annotations: map[string]string{v1alpha1.AnnotationModel: "m", v1alpha1.AnnotationBusyShare: "0.4"}}}
	podB := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "default", UID: "b", Annotations: map[string]string{v1alpha1.AnnotationModel: "n", v1alpha1.AnnotationBusyShare: "x"}}}
	shared := allocated(claim("shared", "4Gi"), "n1", "gpu-0", "4Gi")
	under := allocated(claim("under", "10Gi"), "n1", "gpu-0", "1Gi")
	whole := allocated(claim("whole", "1Gi"), "n1", "gpu-1", "")
	usages := Usages([]*resourceapi.ResourceClaim{shared, under, whole, claim("pending", "8Gi")}, v1alpha1.DRADriver)
	occ, counted, issues := nodes["n1"].Occupancy(usages, func(c *resourceapi.ResourceClaim) []*v1.Pod {
		if c.Name == "shared" {
			return []*v1.Pod{podA, podB}
		}
		return nil
	})
	g0, g1 := occ.GPUs[0], occ.GPUs[1]
	if g0.UsedMiB != 4096+10240 || g0.Models["default/m"] != 1 || g0.Models["default/n"] != 1 || g0.Instances != 3 {
		t.Errorf("gpu-0 %+v, want 14336 MiB (4 GiB once, 10 GiB at the request), models m and n, 3 instances", g0)
	}
	if g0.BusyShare != 1.4 {
		t.Errorf("gpu-0 busy share %g, want 0.4 + 1 (b's unreadable busy share)", g0.BusyShare)
	}
	if g1.UsedMiB != 32768 {
		t.Errorf("gpu-1 used %d MiB, want the whole device", g1.UsedMiB)
	}
	if !counted["a"] || !counted["b"] {
		t.Errorf("counted %v, want a and b", counted)
	}
	var notes []string
	for _, is := range issues {
		notes = append(notes, is.String())
	}
	if j := strings.Join(notes, "\n"); !strings.Contains(j, "claim default/under: allocation consumed 1Gi") || !strings.Contains(j, "pod default/b") {
		t.Errorf("issues %q, want under's consumption and b's busy share", j)
	}

	// A bound pod whose claim holds nothing here counts on its gpu-index.
	orphan := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "o", Namespace: "default", Annotations: map[string]string{v1alpha1.AnnotationModel: "o", v1alpha1.AnnotationGPUIndex: "1"}}}
	if what := AddUnclaimedPod(occ, nodes["n1"], orphan, 2048); what == "" || occ.GPUs[1].Models["default/o"] != 1 || occ.GPUs[1].UsedMiB != 32768+2048 {
		t.Errorf("orphan: %q, gpu-1 %+v", what, occ.GPUs[1])
	}
}

// Allocate writes what upstream's allocator writes for the device: the
// consumed capacity, a share ID, the node selector; and refuses a device
// whose remaining capacity is too small.
func TestAllocate(t *testing.T) {
	ctx := context.Background()
	nodes := Inventory([]*resourceapi.ResourceSlice{slice("n1", 1, device("gpu-0", 0, "16Gi", true), device("gpu-1", 1, "16Gi", true))}, NVIDIA)
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	classes := classList{&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.DeviceClassName}}}
	empty := structured.AllocatedState{AllocatedDevices: sets.New[structured.DeviceID](), AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](), AggregatedCapacity: structured.NewConsumedCapacityCollection()}
	dev := nodes["n1"].Devices[1]
	a, err := Allocate(ctx, AllocatorFeatures(utilfeature.DefaultFeatureGate), empty, classes, NewCELCache(utilfeature.DefaultFeatureGate), node, dev, claim("c", "10Gi"))
	if err != nil {
		t.Fatal(err)
	}
	r := a.Devices.Results[0]
	q := r.ConsumedCapacity[v1alpha1.DRAMemoryCapacity]
	if r.Device != "gpu-1" || r.Pool != "n1" || r.ShareID == nil || q.Value() != 10<<30 || a.NodeSelector == nil {
		t.Errorf("allocation %+v, want gpu-1 of n1, a share ID, 10Gi consumed, a node selector", a)
	}
	full := empty
	full.AggregatedCapacity = structured.NewConsumedCapacityCollection()
	full.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(structured.MakeDeviceID(v1alpha1.DRADriver, "n1", "gpu-1"),
		map[resourceapi.QualifiedName]resource.Quantity{v1alpha1.DRAMemoryCapacity: resource.MustParse("8Gi")}))
	if _, err := Allocate(ctx, AllocatorFeatures(utilfeature.DefaultFeatureGate), full, classes, NewCELCache(utilfeature.DefaultFeatureGate), node, dev, claim("c", "10Gi")); err == nil {
		t.Errorf("10Gi allocated on a 16Gi device with 8Gi consumed")
	}
}

type classList []*resourceapi.DeviceClass

func (l classList) List() ([]*resourceapi.DeviceClass, error) { return l, nil }
func (l classList) Get(name string) (*resourceapi.DeviceClass, error) {
	for _, c := range l {
		if c.Name == name {
			return c, nil
		}
	}
	return nil, fmt.Errorf("DeviceClass %s not found", name)
}

// SelectByClass drops the devices the DeviceClass does not select, with
// the selector as the reason, and a selector that does not compile
// selects nothing.
func TestSelectByClass(t *testing.T) {
	ctx := context.Background()
	s := slice("n1", 1, device("gpu-0", 0, "16Gi", true), device("gpu-1", 1, "32Gi", true))
	s.Spec.Devices[1].Attributes[AttributeProductName] = resourceapi.DeviceAttribute{StringValue: ptr.To("Tesla V100")}
	class := func(expr string) *resourceapi.DeviceClass {
		return &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: expr}}}}}
	}
	nodes := Inventory([]*resourceapi.ResourceSlice{s}, NVIDIA)
	SelectByClass(ctx, nodes, class(`device.driver == "gpu.nvidia.com" && device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("20Gi")) >= 0`), NewCELCache(utilfeature.DefaultFeatureGate))
	if n := nodes["n1"]; len(n.Devices) != 1 || n.Devices[0].Name != "gpu-1" || len(n.Unusable) != 1 || !strings.Contains(n.Unusable[0].Reason, "not selected by DeviceClass c") {
		t.Errorf("devices %+v unusable %+v, want gpu-1 kept, gpu-0 not selected", n.Devices, n.Unusable)
	}
	nodes = Inventory([]*resourceapi.ResourceSlice{s}, NVIDIA)
	SelectByClass(ctx, nodes, class(`device.nonsense(`), NewCELCache(utilfeature.DefaultFeatureGate))
	if n := nodes["n1"]; len(n.Devices) != 0 || len(n.Unusable) != 2 || !strings.Contains(n.Unusable[0].Reason, "selector") {
		t.Errorf("bad selector: devices %+v unusable %+v, want none kept", n.Devices, n.Unusable)
	}
}

// TestProductLabelMatchesSelector: the Go mapping from a device's
// productName to the catalog's product label (ProductLabel, hetsev's
// accounting) and the CEL selector the claim templates carry
// (ProductSelector, the allocator's) select the same devices.
func TestProductLabelMatchesSelector(t *testing.T) {
	cache := NewCELCache(utilfeature.DefaultFeatureGate)
	for _, label := range []string{"Tesla-T4", "Tesla-V100-SXM2-32GB"} {
		expr := cache.GetOrCompile(ProductSelector(v1alpha1.DRADriver, label))
		if expr.Error != nil {
			t.Fatalf("ProductSelector(%q) does not compile: %v", label, expr.Error)
		}
		for _, name := range []string{"Tesla T4", "Tesla V100-SXM2-32GB", "Tesla-T4", "NVIDIA H100 80GB HBM3", ""} {
			attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}
			if name != "" {
				attrs[AttributeProductName] = resourceapi.DeviceAttribute{StringValue: &name}
			}
			got, _, err := expr.DeviceMatches(context.Background(), draCEL.Device{Driver: v1alpha1.DRADriver, Attributes: attrs})
			if err != nil || got != (name != "" && ProductLabel(name) == label) {
				t.Errorf("productName %q, label %q: selector %v (%v), ProductLabel %q", name, label, got, err, ProductLabel(name))
			}
		}
	}
}

// TestPodShareModelWithSlash: a hetsev.io/model holding "/" is an error
// naming the annotation (DRAGPUShare's PreFilter keeps the pod Pending
// with it); a plain model is none.
func TestPodShareModelWithSlash(t *testing.T) {
	pod := func(model string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "a", Annotations: map[string]string{v1alpha1.AnnotationModel: model}}}
	}
	if _, err := PodShare(pod("a/resnet50")); err == nil || !strings.Contains(err.Error(), v1alpha1.AnnotationModel) {
		t.Errorf("model a/resnet50: err %v, want one naming %s", err, v1alpha1.AnnotationModel)
	}
	if d, err := PodShare(pod("resnet50")); err != nil || d.Identity() != "a/resnet50" {
		t.Errorf("model resnet50 in namespace a: %+v, %v; want identity a/resnet50, no error", d, err)
	}
}
