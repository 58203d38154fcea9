package dradriver

import (
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

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
	return standIn(dra.DriverHAMi, "hami-gpu-", dra.TypeHAMiGPU, node, t, count, func() map[resourcev1.QualifiedName]resourcev1.DeviceCapacity {
		return map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
			"cores": wholeByDefault(resource.MustParse("100"), resource.MustParse("0"), resource.MustParse("1")),
		}
	})
}
