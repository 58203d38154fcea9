package dra

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
)

// Allocate allocates claim on one chosen device with
// k8s.io/dynamic-resource-allocation's structured allocator, the one the
// upstream DynamicResources plugin runs, with features (AllocatorFeatures
// of the scheduler's feature gates), offered only that device: the
// result (device, shareID, consumedCapacity rounded up by the device's
// requestPolicy, the node selector of the device's node) is what upstream
// would write for that device, and the allocator checks the DeviceClass's
// and the claim's selectors and the device's remaining capacity against
// allocated (every claim allocated or in flight, as the scheduler's
// ResourceClaimTracker gathers it) and, with features.DeviceTaints, the
// device's taints against the request's tolerations. An error says why the
// device cannot take the claim.
func Allocate(ctx context.Context, features structured.Features, allocated structured.AllocatedState, classes structured.DeviceClassLister, cache *cel.Cache, node *v1.Node, dev Device, claim *resourceapi.ResourceClaim) (*resourceapi.AllocationResult, error) {
	if dev.Slice == nil {
		return nil, fmt.Errorf("device %s has no ResourceSlice", dev.Key())
	}
	only := dev.Slice.DeepCopy()
	only.Spec.Devices = nil
	for _, d := range dev.Slice.Spec.Devices {
		if d.Name == dev.Name {
			only.Spec.Devices = append(only.Spec.Devices, *d.DeepCopy())
		}
	}
	// The chosen device's slice alone makes up the pool the allocator sees.
	only.Spec.Pool.ResourceSliceCount = 1
	a, err := structured.NewAllocator(ctx, features, allocated, classes, []*resourceapi.ResourceSlice{only}, cache)
	if err != nil {
		return nil, fmt.Errorf("DRA allocator: %w", err)
	}
	results, err := a.Allocate(ctx, node, []*resourceapi.ResourceClaim{claim})
	if err != nil {
		return nil, fmt.Errorf("allocating claim %s/%s on device %s: %w", claim.Namespace, claim.Name, dev.Key(), err)
	}
	if len(results) != 1 {
		return nil, fmt.Errorf("claim %s/%s does not fit device %s (the DeviceClass's or claim's selectors, its remaining capacity, or a taint the request does not tolerate)", claim.Namespace, claim.Name, dev.Key())
	}
	return &results[0], nil
}
