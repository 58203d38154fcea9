package gpuinventory

import (
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
)

// GPUClaimSpec is the ResourceClaimSpec of a hetsev pod in DRA mode: one
// request, v1alpha1.ClaimRequestName, for exactly one device of hetsev's
// DeviceClass (v1alpha1.DeviceClassName) consuming memoryMiB MiB of its
// capacity v1alpha1.DRAMemoryCapacity (bytes; written "<memoryMiB>Mi", as
// the pods' hetsev.io/gpu-memory annotation), with the CEL device
// selectors given, tolerating the GPU pool's device taint
// (PoolDeviceToleration), and requesting the DRA driver's other capacities
// as requests gives them (HAMi's cores; nil for none). hetsev-scaler's
// per-Deployment templates and the webhook's per-namespace ones are built
// from it.
func GPUClaimSpec(memoryMiB int64, requests map[resourcev1.QualifiedName]resource.Quantity, celSelectors ...string) resourcev1.ResourceClaimSpec {
	capacity := map[resourcev1.QualifiedName]resource.Quantity{
		v1alpha1.DRAMemoryCapacity: resource.MustParse(fmt.Sprintf("%dMi", memoryMiB)),
	}
	for name, q := range requests {
		if name != v1alpha1.DRAMemoryCapacity {
			capacity[name] = q.DeepCopy()
		}
	}
	var sel []resourcev1.DeviceSelector
	for _, e := range celSelectors {
		sel = append(sel, resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: e}})
	}
	return resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
		Name: v1alpha1.ClaimRequestName,
		Exactly: &resourcev1.ExactDeviceRequest{
			DeviceClassName: v1alpha1.DeviceClassName,
			Selectors:       sel,
			AllocationMode:  resourcev1.DeviceAllocationModeExactCount,
			Count:           1,
			Capacity:        &resourcev1.CapacityRequirements{Requests: capacity},
			// The GPU pool's device taint (DeviceTaintRules in DRA mode)
			// keeps other claims off the pool's GPUs, not hetsev's.
			Tolerations: []resourcev1.DeviceToleration{PoolDeviceToleration()},
		},
	}}}}
}

// ClaimMemoryMiB is the GPU memory, in MiB (rounded up), that spec's
// request v1alpha1.ClaimRequestName asks of v1alpha1.DeviceClassName as
// capacity v1alpha1.DRAMemoryCapacity; false when spec has no such request.
func ClaimMemoryMiB(spec resourcev1.ResourceClaimSpec) (int64, bool) {
	for _, r := range spec.Devices.Requests {
		if r.Name != v1alpha1.ClaimRequestName || r.Exactly == nil || r.Exactly.DeviceClassName != v1alpha1.DeviceClassName || r.Exactly.Capacity == nil {
			continue
		}
		q, ok := r.Exactly.Capacity.Requests[v1alpha1.DRAMemoryCapacity]
		if !ok || q.Sign() <= 0 {
			return 0, false
		}
		return (q.Value() + mib - 1) / mib, true
	}
	return 0, false
}

// ClaimRequestsMatch reports whether spec's request
// v1alpha1.ClaimRequestName asks for exactly requests besides its memory
// (each capacity, the same quantity).
func ClaimRequestsMatch(spec resourcev1.ResourceClaimSpec, requests map[resourcev1.QualifiedName]resource.Quantity) bool {
	for _, r := range spec.Devices.Requests {
		if r.Name != v1alpha1.ClaimRequestName || r.Exactly == nil || r.Exactly.Capacity == nil {
			continue
		}
		n := 0
		for name, q := range r.Exactly.Capacity.Requests {
			if name == v1alpha1.DRAMemoryCapacity {
				continue
			}
			want, ok := requests[name]
			if !ok || want.Cmp(q) != 0 {
				return false
			}
			n++
		}
		return n == len(requests)
	}
	return false
}
