package dradriver

import (
	"fmt"
	"strconv"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/catalog"
	"github.com/hetsev/hetsev/pkg/dra"
)

// ProfileSlice is the ResourceSlice the driver of profile (dra.Profiles)
// publishes for node's count GPUs of type t: Slice for NVIDIA's, HAMiSlice
// for HAMi's. An unknown profile is an error naming the known ones.
func ProfileSlice(profile, node string, t catalog.GPUType, count int) (*resourcev1.ResourceSlice, error) {
	switch profile {
	case "", dra.ProfileNVIDIA:
		return Slice(node, t, count), nil
	case dra.ProfileHAMi:
		return HAMiSlice(node, t, count), nil
	}
	_, err := dra.Profile(profile)
	return nil, fmt.Errorf("stand-in slice: %w", err)
}

// HAMiSlice is what HAMi's DRA driver (dra.DriverHAMi, its default
// HAMiCoreSupport mode) publishes for node's count GPUs of type t, as
// pkg/dra/testdata/drivers/hami.yaml has it from the driver's source: one
// slice, pool named for the node; devices hami-gpu-0.. with productName,
// uuid (UUID) and type "hami-gpu"; allowMultipleAllocations; capacity
// cores 100 (a claim asking for none takes all 100; requests 0 to 100 in
// steps of 1) and memory (a claim asking for none takes all of it;
// requests from 1 MiB to all of it in steps of 1 MiB). Like Slice it
// publishes the catalog's memory, and only the attributes hetsev reads.
func HAMiSlice(node string, t catalog.GPUType, count int) *resourcev1.ResourceSlice {
	product := ProductName(t)
	s := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + dra.DriverHAMi},
		Spec: resourcev1.ResourceSliceSpec{Driver: dra.DriverHAMi, NodeName: &node,
			Pool: resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1}},
	}
	for i := range count {
		mi, all := resource.MustParse("1Mi"), *resource.NewQuantity(t.MemoryMiB<<20, resource.BinarySI)
		maxMem := all.DeepCopy()
		cores, zero, one := resource.MustParse("100"), resource.MustParse("0"), resource.MustParse("1")
		maxCores := cores.DeepCopy()
		shared := true
		uuid, typ := UUID(node, i), dra.TypeHAMiGPU
		s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{
			Name: "hami-gpu-" + strconv.Itoa(i), AllowMultipleAllocations: &shared,
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				dra.AttributeProductName: {StringValue: &product},
				dra.AttributeUUID:        {StringValue: &uuid}, dra.AttributeType: {StringValue: &typ},
			},
			Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
				"cores": {Value: cores,
					RequestPolicy: &resourcev1.CapacityRequestPolicy{Default: &cores, ValidRange: &resourcev1.CapacityRequestPolicyRange{Min: &zero, Max: &maxCores, Step: &one}}},
				v1alpha1.DRAMemoryCapacity: {Value: all,
					RequestPolicy: &resourcev1.CapacityRequestPolicy{Default: &all, ValidRange: &resourcev1.CapacityRequestPolicyRange{Min: &mi, Max: &maxMem, Step: &mi}}},
			},
		})
	}
	return s
}
