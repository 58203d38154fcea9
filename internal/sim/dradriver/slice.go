// Package dradriver is what NVIDIA's DRA driver for GPUs would publish for
// a simulated GPU server: one ResourceSlice per node, the node's GPUs as
// shareable devices with GPU memory as consumable capacity. The demo
// publishes it on the local API server (GPU mode dra), the evaluator
// accounts on it in memory; both read it through pkg/dra as
// hetsev-scheduler and hetsev-scaler do.
package dradriver

import (
	"maps"
	"strconv"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/catalog"
	"github.com/hetsev/hetsev/pkg/dra"
)

// ProductName is the productName attribute of a GPU of type t: the NVML
// device name, which is GFD's product label with "-" read as spaces
// ("Tesla-T4" -> "Tesla T4"), so that dra.ProductLabel maps it back.
func ProductName(t catalog.GPUType) string { return strings.ReplaceAll(t.ProductLabel, "-", " ") }

// Slice is the ResourceSlice of node's count GPUs of type t, pool named
// for the node (generation 1, one slice): devices gpu-0.. with
// productName, uuid (UUID) and type "gpu" attributes,
// allowMultipleAllocations, and memory capacity t.MemoryMiB MiB with the
// request policy of NVIDIA's driver with gate ConsumableShares and
// --consumable-shares=memory (a claim that asks for no memory takes all
// of it; requests from 1 MiB to all of it in steps of 1 MiB, so hetsev's
// whole-MiB requests are consumed as they are), as
// pkg/dra/testdata/drivers/nvidia-consumable-memory.yaml has it. Like
// the driver it publishes no index attribute: hetsev takes the GPU's
// position among the node's devices, which is i, and the simulated
// dcgm-exporter labels series with UUID(node, i) as well. Unlike the
// driver it publishes the catalog's memory rather than what NVML reports
// (a T4's 16384 MiB, not 15360): the catalog has no NVML sizes for every
// type, and both GPU modes must account the same GPUs.
func Slice(node string, t catalog.GPUType, count int) *resourcev1.ResourceSlice {
	return standIn(v1alpha1.DRADriver, "gpu-", dra.TypeGPU, node, t, count, nil)
}

// standIn is the slice of driver for node's count GPUs of type t, named
// prefix0.., with productName, uuid and type typ, shareable, with the
// whole-GPU memory capacity of consumable mode and the extra capacities
// (each built per device, so that no two share a quantity).
func standIn(driver, prefix, typ, node string, t catalog.GPUType, count int, extra func() map[resourcev1.QualifiedName]resourcev1.DeviceCapacity) *resourcev1.ResourceSlice {
	product := ProductName(t)
	s := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + driver},
		Spec: resourcev1.ResourceSliceSpec{Driver: driver, NodeName: &node,
			Pool: resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1}},
	}
	for i := range count {
		capacity := map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
			v1alpha1.DRAMemoryCapacity: wholeByDefault(*resource.NewQuantity(t.MemoryMiB<<20, resource.BinarySI), resource.MustParse("1Mi"), resource.MustParse("1Mi")),
		}
		if extra != nil {
			maps.Copy(capacity, extra())
		}
		shared := true
		uuid, kind := UUID(node, i), typ
		s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{
			Name: prefix + strconv.Itoa(i), AllowMultipleAllocations: &shared,
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				dra.AttributeProductName: {StringValue: &product},
				dra.AttributeUUID:        {StringValue: &uuid}, dra.AttributeType: {StringValue: &kind},
			},
			Capacity: capacity,
		})
	}
	return s
}

// wholeByDefault is a capacity of value that a claim asking for none takes
// whole, and that claims request from min to all of it in steps of step.
func wholeByDefault(value, min, step resource.Quantity) resourcev1.DeviceCapacity {
	def, maxReq := value.DeepCopy(), value.DeepCopy()
	return resourcev1.DeviceCapacity{Value: value, RequestPolicy: &resourcev1.CapacityRequestPolicy{
		Default: &def, ValidRange: &resourcev1.CapacityRequestPolicyRange{Min: &min, Max: &maxReq, Step: &step}}}
}

// UUID is the simulated UUID of GPU i of node, as the simulated
// dcgm-exporter labels its series and Slice publishes it.
func UUID(node string, i int) string { return "GPU-" + node + "-" + strconv.Itoa(i) }
